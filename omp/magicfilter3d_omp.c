/* magicfilter3d_omp.c - the OpenMP backend's magicfilter3d variant (docs/KERNELS.md section 2):
 *   omp  the SIMD pass kernel (lib/magicfilter3d_simd.c) on all cores.  Each pass splits
 *        its lines between the threads in contiguous ranges, cut at multiples of 8 lines
 *        from the first line on a 64-byte boundary of the output rows (wherever the
 *        caller's y lies), so that two threads never write the same 64-byte line of a
 *        transposed output row; the three passes are separated by the team's barrier. */
#include "magicfilter3d_host.h"

#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif

#define MF_LINE_GRAIN 8 /* lines per cache line of the transposed output (8 doubles) */

pk_status pk_omp_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl)
{
    pk_mf_host_plan *h;
    PK_TRY(pk_mf_host_create(desc, &h));
    pk_status s = pk_mf_simd_plan(h);
    if (s != PK_OK) {
        pk_mf_host_destroy(h);
        return s;
    }
    h->pass = pk_mf_pass_simd;
#ifdef PK_HAVE_OPENMP
    h->nt = desc->threads > 0 ? desc->threads : omp_get_max_threads();
#else
    h->nt = 1;
#endif
    h->run = pk_omp_mf_run;
    *impl = h;
    return PK_OK;
}

/* Lines [d0, d1) of thread t of nt: groups of MF_LINE_GRAIN lines counted from the first
 * line (lead) whose dst rows start a 64-byte line, thread 0 taking the lines before it, so
 * that each thread's range starts on a line of dst's rows at any dst alignment. */
static void mf_share(long ndat, long lead, int t, int nt, long *d0, long *d1)
{
    if (lead > ndat) lead = ndat;
    const long groups = (ndat - lead + MF_LINE_GRAIN - 1) / MF_LINE_GRAIN;
    const long g0 = (long)pk_share_lo((size_t)groups, t, nt);
    const long g1 = (long)pk_share_lo((size_t)groups, t + 1, nt);
    *d0 = t == 0 ? 0 : lead + g0 * MF_LINE_GRAIN;
    *d1 = lead + g1 * MF_LINE_GRAIN < ndat ? lead + g1 * MF_LINE_GRAIN : ndat;
}

void pk_omp_mf_pass(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                    pk_mf_pass_fn pass, int nt)
{
#ifdef PK_HAVE_OPENMP
#pragma omp parallel num_threads(nt)
    {
        long d0, d1;
        mf_share(p->ndat, pk_mf_line_lead(dst, 0), pk_thread_num(), pk_team_size(), &d0, &d1);
        if (d0 < d1) pass(p, g, src, dst, d0, d1);
    }
#else
    (void)nt;
    pass(p, g, src, dst, 0, p->ndat);
#endif
}

pk_status pk_omp_mf_run(void *impl, double *seconds)
{
    pk_mf_host_plan *h = impl;
    const pk_mf_desc *d = &h->d;
    const double *src[3] = {h->x, h->w1, h->w2};
    double *dst[3] = {h->w1, h->w2, h->y};
    const double t0 = pk_now();
#ifdef PK_HAVE_OPENMP
#pragma omp parallel num_threads(h->nt)
    {
        const int t = pk_thread_num(), nt = pk_team_size();
        for (int a = 0; a < 3; ++a) {
            long d0, d1;
            mf_share(d->pass[a].ndat, pk_mf_line_lead(dst[a], 0), t, nt, &d0, &d1);
            if (d0 < d1) h->pass(&d->pass[a], d->g, src[a], dst[a], d0, d1);
#pragma omp barrier
        }
    }
#else
    for (int a = 0; a < 3; ++a) h->pass(&d->pass[a], d->g, src[a], dst[a], 0, d->pass[a].ndat);
#endif
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The magicfilter3d kernel family on this backend (lib/internal.h, pk_mf_ops). */
const pk_mf_ops pk_openmp_mf_ops = {
    .variants = "omp",
    .create = pk_omp_mf_create,
    .upload = pk_mf_host_upload,
    .run = pk_omp_mf_run,
    .download = pk_mf_host_download,
    .destroy = pk_mf_host_destroy,
    .execute = pk_mf_host_execute,
};
