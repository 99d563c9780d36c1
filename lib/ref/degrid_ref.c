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
