/* degrid_omp.c - degrid on the OpenMP backend (docs/KERNELS.md 7.3).  Both variants are gathers:
 * every visibility reads its footprint of the grid and writes only itself, so no atomics and
 * no private grids, and every visibility's sum is formed exactly as the serial reference
 * forms it (the same function, lib/ref/degrid_ref.c, the same order of its terms): the result
 * is the serial variant's bit for bit, whatever the thread count.
 *   omp-tiled  (the default) the gridder's tiling turned into an order: the visibilities are
 *              bucket-sorted by the 64 x 64-cell tile of their centre cell (a stable counting
 *              sort, tiles in row order), and the threads take contiguous shares of that
 *              order (pk_dg_tile_order, lib/ref/degrid_ref.c), so a thread's consecutive
 *              visibilities read neighbouring grid cells
 *              (the tile and its halo stay in cache) instead of the list's order (shuffled in
 *              the generated sets: a random footprint per visibility).
 *   omp        the list in its own order, in contiguous shares (pk_parallel_range).
 * The sort's order (a size_t per visibility) and the tile counters are kept in the plan
 * between runs (grown on demand). */
#include "grid_host.h"

#include <stdlib.h>
#include <string.h>

typedef struct dg_omp_plan {
    pk_gr_host_stack *st; /* the serial plan's copy of the stack */
    int tiled;
    pk_scratch order, key, count;
} dg_omp_plan;

typedef struct dg_job {
    const pk_gr_host_stack *h;
    const float *grid;
    const pk_grid_data *d;
    float *vis;
    const size_t *order;
    int64_t skipped;
    double updates;
} dg_job;

static void dg_range(void *arg, size_t lo, size_t hi)
{
    dg_job *j = arg;
    double upd = 0;
    const int64_t sk = pk_dg_ref_run(&j->h->p, j->h->support, j->h->plane_offset, j->h->kernels,
                                     j->d, j->grid, NULL, j->vis, NULL, j->order, lo, hi, &upd);
#pragma omp atomic
    j->skipped += sk;
#pragma omp atomic
    j->updates += upd;
}

static void dg_omp_destroy(void *impl)
{
    dg_omp_plan *h = impl;
    if (!h) return;
    pk_serial_gr_destroy(h->st);
    pk_scratch_free(&h->order);
    pk_scratch_free(&h->key);
    pk_scratch_free(&h->count);
    free(h);
}

static pk_status dg_omp_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    dg_omp_plan *h = calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "degrid: out of host memory");
    h->tiled = !desc->variant || !desc->variant[0] || strcmp(desc->variant, "omp-tiled") == 0;
    void *st = NULL;
    pk_status s = pk_serial_gr_create(state, device, desc, &st);
    if (s != PK_OK) {
        free(h);
        return s;
    }
    h->st = st;
    *impl = h;
    return PK_OK;
}

static pk_status dg_omp_run(void *impl, const float *grid, const pk_grid_data *d, float *vis,
                            pk_dg_result *r)
{
    dg_omp_plan *p = impl;
    const pk_gr_host_stack *h = p->st;
    const double t0 = pk_now();
    const size_t n = d->num_vis;
    int smax = 0;
    for (int w = 0; w < h->p.num_w_planes; ++w)
        if (h->support[w] > smax) smax = h->support[w];
    /* what the gather reads and writes: the footprints of the grid and kernel, uvw, vis */
    const double foot = (double)(2 * smax + 1) * (2 * smax + 1);
    const double bytes = (double)n * (28.0 + 16.0 * foot);
    const size_t pbytes = bytes > 1e18 ? (size_t)-1 : (size_t)bytes;
    dg_job j = {h, grid, d, vis, NULL, 0, 0.0};
    if (p->tiled && n > 0)
        PK_TRY(pk_dg_tile_order(&h->p, h->support, d, h->threads, &p->order, &p->key, &p->count,
                                &j.order));
    pk_parallel_range(n, 64, pbytes, h->threads, dg_range, &j);
    r->num_skipped = j.skipped;
    r->updates = j.updates;
    r->kernel_s = pk_now() - t0;
    return PK_OK;
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
const pk_dg_ops pk_openmp_dg_ops = {
    .variants = "omp-tiled,omp",
    .create = dg_omp_create,
    .run = dg_omp_run,
    .destroy = dg_omp_destroy,
};
