/* degrid_ref.c - the serial reference of degridding (docs/KERNELS.md 7.3): the exact adjoint of
 * the gridder's loop (lib/ref/grid_ref.c).  Per visibility the gridder's geometry
 * (pk_gr_locate_inline: plane, centre cell, oversampled offsets, the same skips) and
 *     vis = sum_{j, k in [-s, s]} conj(c_jk) grid[gv + j][gu + k]
 * with c_jk = K[w][|off_v + j os|][|off_u + k os|], its imaginary part negated when ww > 0,
 * summed in the loop's order (j outer, k inner) in float from a complex64 grid, or in double
 * from a complex128 grid (the tests' adjoint of pk_grid_reference_f64).  The kernel stack is
 * compact (lib/grid.c's pk_gr_stack_init converts a FULL one).  The serial and OpenMP degrid
 * variants run this loop over ranges of the list (lib/degrid_serial.c, omp/degrid_omp.c). */
#include "grid_host.h"

#include <stdlib.h>
#include <string.h>

int64_t pk_dg_ref_run(const pk_grid_params *p, const int32_t *support, const size_t *plane_offset,
                      const float *kernels, const pk_grid_data *d, const float *grid,
                      const double *grid64, float *vis, double *vis64, const size_t *order,
                      size_t lo, size_t hi, double *updates)
{
    pk_gr_desc desc = {0};
    desc.p = *p;
    desc.support = support;
    const size_t g = (size_t)p->grid_size;
    const int os = p->oversample;
    int64_t skipped = 0;
    double upd = 0;
    for (size_t t = lo; t < hi; ++t) {
        const size_t i = order ? order[t] : t;
        const float wt = d->weight ? d->weight[i] : 1.0f;
        int w, gu, gv, ou, ov;
        if (pk_gr_locate_inline(&desc, d->uu[i], d->vv[i], d->ww[i], 0.0f, 0.0f, wt, &w, &gu, &gv,
                                &ou, &ov)) {
            ++skipped;
            if (vis) vis[2 * i] = vis[2 * i + 1] = 0.0f;
            if (vis64) vis64[2 * i] = vis64[2 * i + 1] = 0.0;
            continue;
        }
        const int s = support[w], m = os / 2 + s * os + 1;
        const float conj = d->ww[i] > 0 ? -1.0f : 1.0f;
        const float *plane = kernels + 2 * plane_offset[w];
        if (grid) { /* float: the backends' oracle */
            float re = 0, im = 0;
            for (int j = -s; j <= s; ++j) {
                const float *krow = plane + 2 * (size_t)abs(ov + j * os) * (size_t)m;
                const float *grow = grid + 2 * ((size_t)(gv + j) * g + (size_t)gu);
                for (int k = -s; k <= s; ++k) {
                    const float *c = krow + 2 * abs(ou + k * os);
                    const float cre = c[0], cim = c[1] * conj;
                    const float gre = grow[2 * k], gim = grow[2 * k + 1];
                    /* conj(c) * grid = (cre gre + cim gim) + i (cre gim - cim gre) */
                    re += cre * gre + cim * gim;
                    im += cre * gim - cim * gre;
                }
            }
            vis[2 * i] = re;
            vis[2 * i + 1] = im;
        } else { /* double: the tests' adjoint of pk_grid_reference_f64 */
            double re = 0, im = 0;
            for (int j = -s; j <= s; ++j) {
                const float *krow = plane + 2 * (size_t)abs(ov + j * os) * (size_t)m;
                const double *grow = grid64 + 2 * ((size_t)(gv + j) * g + (size_t)gu);
                for (int k = -s; k <= s; ++k) {
                    const float *c = krow + 2 * abs(ou + k * os);
                    const double cre = c[0], cim = (double)c[1] * conj;
                    const double gre = grow[2 * k], gim = grow[2 * k + 1];
                    re += cre * gre + cim * gim;
                    im += cre * gim - cim * gre;
                }
            }
            vis64[2 * i] = re;
            vis64[2 * i + 1] = im;
        }
        upd += (double)(2 * s + 1) * (2 * s + 1);
    }
    if (updates) *updates += upd;
    return skipped;
}

/* ---- the tile order (omp-tiled and opencl) ------------------------------------------------ */
typedef struct dg_key_job {
    pk_gr_desc desc;
    const pk_grid_data *d;
    uint32_t *key;
    int tiles_u;
    uint32_t skip_key;
} dg_key_job;

/* The tile of each visibility's centre cell (the gridder's geometry); skipped ones last. */
static void dg_keys(void *arg, size_t lo, size_t hi)
{
    const dg_key_job *j = arg;
    for (size_t i = lo; i < hi; ++i) {
        const float wt = j->d->weight ? j->d->weight[i] : 1.0f;
        int w, gu, gv, ou, ov;
        j->key[i] = pk_gr_locate_inline(&j->desc, j->d->uu[i], j->d->vv[i], j->d->ww[i], 0.0f,
                                        0.0f, wt, &w, &gu, &gv, &ou, &ov)
                        ? j->skip_key
                        : (uint32_t)(gv / PK_DG_TILE) * (uint32_t)j->tiles_u +
                              (uint32_t)(gu / PK_DG_TILE);
    }
}

pk_status pk_dg_tile_order(const pk_grid_params *p, const int32_t *support, const pk_grid_data *d,
                           int threads, pk_scratch *order_s, pk_scratch *key_s,
                           pk_scratch *count_s, const size_t **order_out)
{
    const size_t n = d->num_vis;
    const int tu = (p->grid_size + PK_DG_TILE - 1) / PK_DG_TILE;
    const size_t nkeys = (size_t)tu * (size_t)tu + 1;
    size_t *order = pk_scratch_get(order_s, (n ? n : 1) * sizeof(size_t));
    uint32_t *key = pk_scratch_get(key_s, (n ? n : 1) * sizeof(uint32_t));
    size_t *count = pk_scratch_get(count_s, nkeys * sizeof(size_t));
    PK_CHECK(order && key && count, PK_ENOMEM,
             "degrid: cannot allocate the tile order of %zu visibilities", n);
    dg_key_job kj;
    memset(&kj, 0, sizeof kj);
    kj.desc.p = *p;
    kj.desc.support = support;
    kj.d = d;
    kj.key = key;
    kj.tiles_u = tu;
    kj.skip_key = (uint32_t)(nkeys - 1);
    pk_parallel_range(n, 256, n * 24, threads, dg_keys, &kj);
    /* stable counting sort by tile */
    memset(count, 0, nkeys * sizeof(size_t));
    for (size_t i = 0; i < n; ++i) ++count[key[i]];
    size_t sum = 0;
    for (size_t k = 0; k < nkeys; ++k) {
        const size_t c = count[k];
        count[k] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; ++i) order[count[key[i]]++] = i;
    *order_out = order;
    return PK_OK;
}
