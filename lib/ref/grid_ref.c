/* grid_ref.c - serial references of grid (docs/KERNELS.md section 1): the OSKAR loop exactly
 * (float grid, double norm) and the same loop accumulating in double (the test oracle), with
 * the per-visibility geometry every backend shares (pk_gr_locate). */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void pk_gr_stage(pk_gr_result *r, const char *name, double seconds)
{
    if (r->num_stages >= 8) return;
    pk_strlcpy(r->stage_name[r->num_stages], name, sizeof r->stage_name[0]);
    r->stage_s[r->num_stages++] = seconds;
}

/* The out-of-line copy of the shared geometry (internal.h). */
int pk_gr_locate(const pk_gr_desc *d, float uu, float vv, float ww, float vre, float vim,
                 float weight, int *grid_w, int *grid_u, int *grid_v, int *off_u, int *off_v)
{
    return pk_gr_locate_inline(d, uu, vv, ww, vre, vim, weight, grid_w, grid_u, grid_v, off_u,
                               off_v);
}

/* The reference keeps no state between calls: a desc view of the caller's arrays. */
static void ref_desc(pk_gr_desc *d, const pk_grid_params *p, const int32_t *support)
{
    memset(d, 0, sizeof *d);
    d->p = *p;
    d->support = support;
}

/* Sample [iy][ix] of plane w: compact planes are [m][m], full planes [half][half]. */
static const float *ref_sample(const pk_grid_params *p, const float *kernels,
                               const size_t *plane_offset, int w, int m, int iy, int ix)
{
    if (p->kernel_layout == PK_GRID_KERNELS_COMPACT)
        return kernels + 2 * (plane_offset[w] + (size_t)iy * m + ix);
    const size_t half = (size_t)p->conv_size_half;
    return kernels + 2 * (((size_t)w * half + iy) * half + ix);
}

/* The loop of the contract over the visibilities in order, updating only the grid rows r with
 * r % nres == res: each cell then receives its terms in the serial order whatever nres, so
 * the rows of every residue together are bitwise the serial loop's grid.  Residue 0 also sums
 * the norm, the skipped count and the updates, in the serial order. */
typedef struct ref_job {
    const pk_grid_params *p;
    const int32_t *support;
    const size_t *plane_offset;
    const float *kernels;
    const pk_grid_data *dat;
    float *grid;
    double *grid64;
    int nres;
    double nrm, upd; /* residue 0's */
    int64_t skipped;
} ref_job;

static void ref_rows(ref_job *jb, int res)
{
    const pk_grid_params *p = jb->p;
    const pk_grid_data *dat = jb->dat;
    pk_gr_desc d;
    ref_desc(&d, p, jb->support);
    const int g = p->grid_size, os = p->oversample, nres = jb->nres;
    float *grid = jb->grid;
    double *grid64 = jb->grid64;
    int64_t skipped = 0;
    double nrm = 0, upd = 0;
    for (size_t i = 0; i < dat->num_vis; ++i) {
        const float vre0 = dat->vis[2 * i], vim0 = dat->vis[2 * i + 1], wt = dat->weight[i];
        int w, gu, gv, ou, ov;
        if (pk_gr_locate_inline(&d, dat->uu[i], dat->vv[i], dat->ww[i], vre0, vim0, wt, &w, &gu, &gv,
                         &ou, &ov)) {
            ++skipped;
            continue;
        }
        const int s = jb->support[w], m = os / 2 + s * os + 1;
        const float conv_conj = dat->ww[i] > 0 ? -1.0f : 1.0f;
        const float vre = vre0 * wt, vim = vim0 * wt;
        double sum = 0;
        for (int j = -s; j <= s; ++j) {
            const int own = nres == 1 || (gv + j) % nres == res;
            if (!own && res != 0) continue; /* residue 0 still sums the samples */
            const int iy = abs(ov + j * os);
            for (int k = -s; k <= s; ++k) {
                const int ix = abs(ou + k * os);
                const float *c = ref_sample(p, jb->kernels, jb->plane_offset, w, m, iy, ix);
                const float cre = c[0], cim = c[1] * conv_conj;
                const size_t cell = 2 * ((size_t)(gv + j) * g + (size_t)(gu + k));
                if (own && grid) {
                    grid[cell] += vre * cre - vim * cim;
                    grid[cell + 1] += vim * cre + vre * cim;
                } else if (own) {
                    grid64[cell] += (double)vre * cre - (double)vim * cim;
                    grid64[cell + 1] += (double)vim * cre + (double)vre * cim;
                }
                sum += cre;
            }
        }
        nrm += sum * wt;
        upd += (double)(2 * s + 1) * (2 * s + 1);
    }
    if (res == 0) {
        jb->nrm = nrm;
        jb->upd = upd;
        jb->skipped = skipped;
    }
}

static void ref_residues(void *arg, size_t lo, size_t hi)
{
    ref_job *jb = arg;
    if (lo == 0 && hi == (size_t)jb->nres && pk_team_size() == 1) { /* not threaded: one pass */
        jb->nres = 1;
        ref_rows(jb, 0);
        return;
    }
    for (size_t r = lo; r < hi; ++r) ref_rows(jb, (int)r);
}

/* threads 0: on the host's threads (one residue of the rows each; large lists only),
 * bitwise the one pass. */
void pk_gr_ref_run(const pk_grid_params *p, const int32_t *support, const size_t *plane_offset,
                   const float *kernels, const pk_grid_data *dat, float *grid, double *grid64,
                   double *norm, int64_t *num_skipped, double *updates, int threads)
{
    ref_job jb = {p, support, plane_offset, kernels, dat, grid, grid64, 1, 0, 0, 0};
    jb.nres = threads == 1 ? 1 : pk_host_threads(threads);
    if (jb.nres > 1) /* bytes: about a visibility's updates */
        pk_parallel_range((size_t)jb.nres, 1, dat->num_vis * 1024, jb.nres, ref_residues, &jb);
    else
        ref_rows(&jb, 0);
    *norm += jb.nrm;
    *num_skipped = jb.skipped;
    if (updates) *updates = jb.upd;
}
