/* mpi_grid.c - distributed grid: the visibilities split across ranks, the grid reduced to row
 * bands (MPI_Reduce_scatter).
 *
 * Every rank grids its own visibility list (any split: uneven, or empty on some ranks) into a
 * local full grid, complex64 [G][G], with a local pk_grid_plan on its node's backend (the
 * kernel stack compacted, reordered and uploaded once, at creation).  The ranks then sum
 * their grids with one MPI_Reduce_scatter in place (MPI_IN_PLACE): the input is the local
 * full grid, and on return its first L G cells hold this rank's band of the summed grid, rows
 * [i0, i1) (L = i1 - i0; the block rule or pk_mpi_options.i0, i1; uneven bands through the
 * per-rank counts).  So a rank holds one full grid (the plan's), not a full grid to send and
 * a band to receive; what MPI itself allocates inside the call is its own (docs/SCALING.md:
 * measured).
 * The grid is complex64 (pk_grid's only dtype): the reduction runs on MPI_FLOAT, 2 G floats a
 * row, MPI_SUM elementwise: the real and imaginary parts of a cell are summed separately,
 * which is exactly the complex sum.  A cell's value is thus a sum of the same float products
 * as in one process, in another order (each rank's partial sum, then the ranks' partials in
 * MPI's order): within docs/KERNELS.md 1.5's bound, and with one rank bitwise the single-process
 * grid of the same (deterministic) variant.  norm (double) and num_skipped (int64) are summed
 * with MPI_Allreduce. */
#include "mpi_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pk_mpi_grid_plan {
    MPI_Comm comm;
    pkm_slabs s;       /* the row bands */
    pk_context *ctx;
    int owned;
    int G, L;
    int *counts;       /* [nranks]: floats of each rank's band, 2 G (i1 - i0) */
    float *grid;       /* complex64 [G][G]; after a run its first L rows are this rank's band */
    int have;          /* the last run succeeded: grid holds the band */
    pk_grid_plan *local;
};

static void grid_free(pk_mpi_grid_plan *pl) {
    pk_grid_plan_destroy(pl->local);
    free(pl->grid);
    free(pl->counts);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

/* FNV-1a, 64 bits: the kernel stack is compared through it (a stack can be ~100 MB; the
 * support and the parameters are compared whole). */
static uint64_t fnv64(const void *bytes, size_t len) {
    const unsigned char *b = bytes;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

PK_MPI_API pk_status pk_mpi_grid_plan_create(pk_mpi_grid_plan **plan, MPI_Comm comm,
                                             pk_context *ctx, const pk_grid_params *p,
                                             const int32_t *support, const float *kernels,
                                             const pk_mpi_options *opt, pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    if (!plan || !p || !support || !kernels) {
        pkm_set_error("pk_mpi_grid_plan_create: %s must not be NULL",
                      !plan ? "plan" : !p ? "p" : !support ? "support" : "kernels");
        st = PK_ENULL;
    } else if (p->grid_size < 2 || p->grid_size > 32766 || p->num_w_planes < 1 ||
               p->num_w_planes > (1 << 20)) {
        /* 2 G^2 floats (the reduction's counts) must fit an int */
        pkm_set_error("grid_size: the distributed plan takes 2 .. 32766, got %d; num_w_planes: "
                      "1 .. 2^20, got %d", p->grid_size, p->num_w_planes);
        st = PK_ESIZE;
    }
    pk_mpi_grid_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    MPI_Comm_dup(comm, &pl->comm);
    /* The parameters, field by field into a zeroed struct: the comparison sees no padding. */
    pk_grid_params g;
    memset(&g, 0, sizeof g);
    g.grid_size = p->grid_size;
    g.oversample = p->oversample;
    g.cell_size_rad = p->cell_size_rad;
    g.w_scale = p->w_scale;
    g.num_w_planes = p->num_w_planes;
    g.conv_size_half = p->conv_size_half;
    g.kernel_layout = p->kernel_layout;
    g.tile_size = p->tile_size;
    g.central_radius = p->central_radius;
    g.tile_factor = p->tile_factor;
    st = pkm_same_as_root(pl->comm, &g, sizeof g, "grid parameters");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK) { /* num_w_planes agreed: the supports have one length */
        st = pkm_same_as_root(pl->comm, support, (size_t)p->num_w_planes * sizeof *support,
                              "w-kernel supports");
        st = pkm_agree(pl->comm, st, NULL, NULL);
    }
    if (st == PK_OK) {
        size_t count = 0;
        uint64_t h = 0;
        st = pk_grid_kernel_count(p, support, &count);
        if (st != PK_OK)
            pkm_set_error("grid parameters: %s", pk_last_error());
        else
            h = fnv64(kernels, 2 * count * sizeof(float));
        st = pkm_agree(pl->comm, st, NULL, NULL);
        if (st == PK_OK) {
            st = pkm_same_as_root(pl->comm, &h, sizeof h, "w-kernel stacks (their hash)");
            st = pkm_agree(pl->comm, st, NULL, NULL);
        }
    }
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->grid_size, opt, "grid rows");
    if (st != PK_OK)
        goto fail;
    pl->G = p->grid_size;
    pl->L = pl->s.i1[pl->s.rank] - pl->s.i0[pl->s.rank];
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        st = pk_grid_plan_create(&pl->local, pl->ctx, p, opt ? opt->variant : NULL, support,
                                 kernels, &li);
        if (st != PK_OK)
            pkm_set_error("local grid plan (%d x %d): %s", pl->G, pl->G, pk_last_error());
    }
    if (st == PK_OK) {
        pl->counts = malloc((size_t)pl->s.nranks * sizeof *pl->counts);
        pl->grid = pkm_alloc64((size_t)pl->G * (size_t)pl->G * 2 * sizeof(float));
        if (!pl->counts || !pl->grid) {
            pkm_set_error("out of memory for the local grid (%d x %d complex64)", pl->G, pl->G);
            st = PK_ENOMEM;
        } else {
            for (int r = 0; r < pl->s.nranks; r++)
                pl->counts[r] = 2 * pl->G * (pl->s.i1[r] - pl->s.i0[r]);
        }
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, 0, 0);
    }
    *plan = pl;
    return PK_OK;
fail:
    grid_free(pl);
    return st;
}

PK_MPI_API pk_status pk_mpi_grid_plan_band(const pk_mpi_grid_plan *pl, int *r0, int *r1,
                                           const float **band) {
    if (!pl || !r0 || !r1) {
        pkm_set_error("pk_mpi_grid_plan_band: %s must not be NULL", !pl ? "plan" : "r0, r1");
        return PK_ENULL;
    }
    *r0 = pl->s.i0[pl->s.rank];
    *r1 = pl->s.i1[pl->s.rank];
    if (band)
        *band = pl->have ? pl->grid : NULL;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_grid_plan_run(pk_mpi_grid_plan *pl, const pk_grid_data *d,
                                          float *band, double *norm, int64_t *num_skipped,
                                          pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_grid_plan_run: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, 0, 0);
    pl->have = 0;
    pk_status st = PK_OK;
    if (!d) {
        pkm_set_error("pk_mpi_grid_plan_run: d must not be NULL");
        st = PK_ENULL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    double t1 = pkm_now();
    size_t cells = (size_t)pl->G * (size_t)pl->G;
    memset(pl->grid, 0, cells * 2 * sizeof(float));
    double lnorm = 0;
    int64_t lsk = 0;
    st = pk_grid_plan_run(pl->local, d, pl->grid, &lnorm, &lsk, &info->local);
    if (st != PK_OK)
        pkm_set_error("local grid (%zu visibilities): %s", d->num_vis, pk_last_error());
    double t2 = pkm_now();
    info->compute_s += t2 - t1;
    /* the agreement also lines the ranks up: the reduction's time below is its own, the wait
     * for the slowest rank's gridding falls in agree_s */
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK) {
        info->wall_s = pkm_now() - t0;
        return st;
    }
    double t3 = pkm_now();
    MPI_Reduce_scatter(MPI_IN_PLACE, pl->grid, pl->counts, MPI_FLOAT, MPI_SUM, pl->comm);
    double sums[1] = {lnorm}, gsums[1] = {0};
    long long sk = (long long)lsk, gsk = 0;
    MPI_Allreduce(sums, gsums, 1, MPI_DOUBLE, MPI_SUM, pl->comm);
    MPI_Allreduce(&sk, &gsk, 1, MPI_LONG_LONG, MPI_SUM, pl->comm);
    double t4 = pkm_now();
    info->comm_s += t4 - t3;
    /* the cells outside the band leave this rank: what a bandwidth-optimal reduce-scatter
     * (a ring) sends, MPI's own algorithm may send more */
    info->halo_bytes = 8.0 * (double)pl->G * (double)(pl->G - pl->L);
    info->exchanges = 1;
    pl->have = 1;
    if (band) { /* accumulated into, as pk_grid's grid */
        size_t n = (size_t)pl->L * (size_t)pl->G * 2;
        for (size_t k = 0; k < n; k++)
            band[k] += pl->grid[k];
        info->compute_s += pkm_now() - t4;
    }
    if (norm)
        *norm += gsums[0];
    if (num_skipped)
        *num_skipped = (int64_t)gsk;
    info->wall_s = pkm_now() - t0;
    return PK_OK;
}

PK_MPI_API void pk_mpi_grid_plan_destroy(pk_mpi_grid_plan *pl) {
    if (pl)
        grid_free(pl);
}
