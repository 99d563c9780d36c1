/* degrid_omp.c - degrid on the OpenMP backend (docs/KERNELS.md 7.3).
 *   omp  visibilities in parallel: contiguous shares of the list (pk_parallel_range), each
 *        thread running the reference loop (lib/ref/degrid_ref.c) on its share.  A gather:
 *        every visibility reads its footprint of the grid and writes only itself, so no
 *        atomics and no private grids, and every visibility's sum is formed exactly as the
 *        serial reference forms it (the same function, the same order): the result is the
 *        serial variant's bit for bit, whatever the thread count. */
#include "grid_host.h"

typedef struct dg_job {
    const pk_gr_host_stack *h;
    const float *grid;
    const pk_grid_data *d;
    float *vis;
    int64_t skipped;
    double updates;
} dg_job;

static void dg_range(void *arg, size_t lo, size_t hi)
{
    dg_job *j = arg;
    double upd = 0;
    const int64_t sk = pk_dg_ref_run(&j->h->p, j->h->support, j->h->plane_offset, j->h->kernels,
                                     j->d, j->grid, NULL, j->vis, NULL, lo, hi, &upd);
#pragma omp atomic
    j->skipped += sk;
#pragma omp atomic
    j->updates += upd;
}

static pk_status dg_omp_run(void *impl, const float *grid, const pk_grid_data *d, float *vis,
                            pk_dg_result *r)
{
    const pk_gr_host_stack *h = impl;
    const double t0 = pk_now();
    int smax = 0;
    for (int w = 0; w < h->p.num_w_planes; ++w)
        if (h->support[w] > smax) smax = h->support[w];
    /* what the loop reads and writes: the footprints of the grid and kernel, uvw, vis */
    const double foot = (double)(2 * smax + 1) * (2 * smax + 1);
    const double bytes = (double)d->num_vis * (28.0 + 16.0 * foot);
    dg_job j = {h, grid, d, vis, 0, 0.0};
    pk_parallel_range(d->num_vis, 64, bytes > 1e18 ? (size_t)-1 : (size_t)bytes, h->threads,
                      dg_range, &j);
    r->num_skipped = j.skipped;
    r->updates = j.updates;
    r->kernel_s = pk_now() - t0;
    return PK_OK;
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
const pk_dg_ops pk_openmp_dg_ops = {
    .variants = "omp",
    .create = pk_serial_gr_create,
    .run = dg_omp_run,
    .destroy = pk_serial_gr_destroy,
};
