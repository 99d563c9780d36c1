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
 * Only the box of cells that some rank's visibilities update is zeroed, gridded and reduced:
 * each rank locates its visibilities (pk_grid_locate, the gridder's own geometry), one
 * MPI_Allreduce agrees on the union of the boxes, and the box's H rows of W cells are packed
 * in place to the front of the grid before the reduction (W H contiguous cells; the counts
 * are each rank's rows of the box) and unpacked after it into the band, zeros around.  An SKA
 * track touches a few per cent of its grid (el82-70: a box of about 4950^2 cells of 18000^2),
 * so this cuts the bytes reduced by more than ten; the grid outside the box is never read.
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
    int *counts;       /* [nranks]: floats of each rank's rows of the box, 2 W (rows) */
    float *grid;       /* complex64 [G][G]; after a run its first L rows are this rank's band */
    int have;          /* the last run succeeded: grid holds the band */
    int box[4];        /* the last run's box of updated cells: rows [0, 1), columns [2, 3) */
    pk_grid_params p;  /* for pk_grid_locate */
    int32_t *support;
    uint64_t khash0;   /* plane 0's hash: all the image reads of the stack (its correction) */
    double norm;       /* the last run's, summed over the ranks */
    pk_grid_plan *local;
    /* pk_mpi_grid_plan_image's work arrays, kept for the next image (fresh pages cost more
     * than the transposes: the kernel zeroes them), grown as needed */
    float *im_buf[4];  /* send, columns, row chunk, strip */
    size_t im_len[4];  /* their bytes */
};

/* Work array k of the image, at least `bytes` (pk_malloc; kept in the plan), or NULL. */
static float *image_buf(pk_mpi_grid_plan *pl, int k, size_t bytes) {
    if (pl->im_len[k] < bytes) {
        pk_free(pl->im_buf[k]);
        pl->im_buf[k] = pk_malloc(bytes);
        pl->im_len[k] = pl->im_buf[k] ? bytes : 0;
    }
    return pl->im_buf[k];
}

static void grid_free(pk_mpi_grid_plan *pl) {
    pk_grid_plan_destroy(pl->local);
    for (int k = 0; k < 4; k++)
        pk_free(pl->im_buf[k]);
    free(pl->support);
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

/* The parameters, field by field into a zeroed struct: comparisons see no padding. */
static void grid_fields(const pk_grid_params *p, pk_grid_params *g) {
    memset(g, 0, sizeof *g);
    g->grid_size = p->grid_size;
    g->oversample = p->oversample;
    g->cell_size_rad = p->cell_size_rad;
    g->w_scale = p->w_scale;
    g->num_w_planes = p->num_w_planes;
    g->conv_size_half = p->conv_size_half;
    g->kernel_layout = p->kernel_layout;
    g->tile_size = p->tile_size;
    g->central_radius = p->central_radius;
    g->tile_factor = p->tile_factor;
}

/* The hash of the stack's plane 0 (the samples pk_grid_kernel_count gives for one plane). */
static uint64_t plane0_hash(const pk_grid_params *p, const int32_t *support,
                            const float *kernels) {
    pk_grid_params one = *p;
    one.num_w_planes = 1;
    size_t count = 0;
    pk_grid_kernel_count(&one, support, &count);
    return fnv64(kernels, 2 * count * sizeof(float));
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
    pk_grid_params g;
    grid_fields(p, &g);
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
        if (st == PK_OK)
            pl->khash0 = plane0_hash(p, support, kernels);
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
        pl->p = g;
        pl->support = malloc((size_t)p->num_w_planes * sizeof *pl->support);
        if (pl->support)
            memcpy(pl->support, support, (size_t)p->num_w_planes * sizeof *pl->support);
        pl->counts = malloc((size_t)pl->s.nranks * sizeof *pl->counts);
        pl->grid = pkm_alloc64((size_t)pl->G * (size_t)pl->G * 2 * sizeof(float));
        if (!pl->counts || !pl->grid || !pl->support) {
            pkm_set_error("out of memory for the local grid (%d x %d complex64)", pl->G, pl->G);
            st = PK_ENOMEM;
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

/* The box [y0, y1) x [x0, x1) of the cells this rank's visibilities update (pk_grid_locate:
 * the gridder's own geometry; empty: y0 = x0 = G, y1 = x1 = 0). */
static void local_box(const pk_mpi_grid_plan *pl, const pk_grid_data *d, int box[4]) {
    int y0 = pl->G, x0 = pl->G, y1 = 0, x1 = 0;
    for (size_t i = 0; i < d->num_vis; i++) {
        int u, v, s = pk_grid_locate(&pl->p, pl->support, d, i, &u, &v);
        if (s < 0)
            continue;
        y0 = v - s < y0 ? v - s : y0;
        y1 = v + s + 1 > y1 ? v + s + 1 : y1;
        x0 = u - s < x0 ? u - s : x0;
        x1 = u + s + 1 > x1 ? u + s + 1 : x1;
    }
    box[0] = y0;
    box[1] = x0;
    box[2] = y1;
    box[3] = x1;
}

PK_MPI_API pk_status pk_mpi_grid_plan_box(const pk_mpi_grid_plan *pl, int box[4]) {
    if (!pl || !box) {
        pkm_set_error("pk_mpi_grid_plan_box: %s must not be NULL", !pl ? "plan" : "box");
        return PK_ENULL;
    }
    if (!pl->have) {
        pkm_set_error("pk_mpi_grid_plan_box: no successful run yet");
        return PK_ESTATE;
    }
    memcpy(box, pl->box, sizeof pl->box);
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
    } else if (d->num_vis && (!d->uu || !d->vv || !d->ww || !d->vis || !d->weight)) {
        pkm_set_error("pk_mpi_grid_plan_run: d: uu, vv, ww, vis and weight must not be NULL "
                      "(num_vis = %zu)", d->num_vis);
        st = PK_ENULL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    /* the box every rank's visibilities update: only its rows and columns are zeroed,
     * gridded into and reduced (the SKA sets touch a few per cent of their grid) */
    double t1 = pkm_now();
    const size_t G = (size_t)pl->G;
    int box[4], gbox[4];
    local_box(pl, d, box);
    box[2] = -box[2];
    box[3] = -box[3];
    double t2 = pkm_now();
    MPI_Allreduce(box, gbox, 4, MPI_INT, MPI_MIN, pl->comm);
    double t3 = pkm_now();
    const int y0 = gbox[0], x0 = gbox[1], y1 = -gbox[2], x1 = -gbox[3];
    const int H = y1 > y0 ? y1 - y0 : 0, W = x1 > x0 ? x1 - x0 : 0;
    for (int y = y0; y < y1; y++)
        memset(pl->grid + 2 * ((size_t)y * G + (size_t)x0), 0, 2 * (size_t)W * sizeof(float));
    double lnorm = 0;
    int64_t lsk = 0;
    st = pk_grid_plan_run(pl->local, d, pl->grid, &lnorm, &lsk, &info->local);
    if (st != PK_OK)
        pkm_set_error("local grid (%zu visibilities): %s", d->num_vis, pk_last_error());
    double t4 = pkm_now();
    info->compute_s += (t2 - t1) + (t4 - t3);
    info->comm_s += t3 - t2;
    /* the agreement also lines the ranks up: the reduction's time below is its own, the wait
     * for the slowest rank's gridding falls in agree_s */
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK) {
        info->wall_s = pkm_now() - t0;
        return st;
    }
    /* pack the box to the front of the grid, row after row (a row's destination never lies
     * past its source: W <= G), so that the reduction runs on H W contiguous cells */
    double t5 = pkm_now();
    const int R = pl->s.nranks, i0 = pl->s.i0[pl->s.rank], i1 = pl->s.i1[pl->s.rank];
    for (int r = 0; r < R; r++) { /* each rank's rows of the box */
        int a = pl->s.i0[r] > y0 ? pl->s.i0[r] : y0, b = pl->s.i1[r] < y1 ? pl->s.i1[r] : y1;
        pl->counts[r] = b > a ? 2 * W * (b - a) : 0;
    }
    for (int y = 0; y < H; y++)
        memmove(pl->grid + 2 * (size_t)y * W, pl->grid + 2 * ((size_t)(y0 + y) * G + x0),
                2 * (size_t)W * sizeof(float));
    double t6 = pkm_now();
    if (H > 0 && W > 0)
        MPI_Reduce_scatter(MPI_IN_PLACE, pl->grid, pl->counts, MPI_FLOAT, MPI_SUM, pl->comm);
    double sums[1] = {lnorm}, gsums[1] = {0};
    long long sk = (long long)lsk, gsk = 0;
    MPI_Allreduce(sums, gsums, 1, MPI_DOUBLE, MPI_SUM, pl->comm);
    MPI_Allreduce(&sk, &gsk, 1, MPI_LONG_LONG, MPI_SUM, pl->comm);
    double t7 = pkm_now();
    /* unpack this rank's rows of the box into its band, rows i0 .. i1 - 1 of width G, last
     * row first (a row's destination never lies before its source), zeros around */
    const int a = i0 > y0 ? i0 : y0;
    for (int g = i1 - 1; g >= i0; g--) {
        float *row = pl->grid + 2 * (size_t)(g - i0) * G;
        if (g >= y0 && g < y1 && W > 0) {
            memmove(row + 2 * (size_t)x0, pl->grid + 2 * (size_t)(g - a) * W,
                    2 * (size_t)W * sizeof(float));
            memset(row, 0, 2 * (size_t)x0 * sizeof(float));
            memset(row + 2 * (size_t)x1, 0, 2 * (G - (size_t)x1) * sizeof(float));
        } else {
            memset(row, 0, 2 * G * sizeof(float));
        }
    }
    double t8 = pkm_now();
    info->compute_s += (t6 - t5) + (t8 - t7); /* the packing: local copies */
    info->comm_s += t7 - t6;
    /* the box's cells outside this rank's band leave it: what a bandwidth-optimal
     * reduce-scatter (a ring) sends, MPI's own algorithm may send more */
    info->halo_bytes = 8.0 * (double)W * (double)H - 4.0 * (double)pl->counts[pl->s.rank];
    info->exchanges = 1;
    pl->box[0] = y0;
    pl->box[1] = y1;
    pl->box[2] = x0;
    pl->box[3] = x1;
    pl->have = 1;
    pl->norm = gsums[0];
    if (band) { /* accumulated into, as pk_grid's grid */
        size_t n = (size_t)pl->L * G * 2;
        for (size_t k = 0; k < n; k++)
            band[k] += pl->grid[k];
        info->compute_s += pkm_now() - t8;
    }
    if (norm)
        *norm += gsums[0];
    if (num_skipped)
        *num_skipped = (int64_t)gsk;
    info->wall_s = pkm_now() - t0;
    return PK_OK;
}

/* Rank q's share of the image's column batches: [nb q / R, nb (q + 1) / R) (even, and empty
 * shares where there are more ranks than batches), and its crop columns [*x0, *x1). */
static void image_share(const pk_image_passes *ps, int R, int q, int *b0, int *b1, int *x0,
                        int *x1) {
    const int nb = pk_image_passes_batches(ps);
    int w = 0;
    *b0 = (int)((long long)nb * q / R);
    *b1 = (int)((long long)nb * (q + 1) / R);
    *x0 = *x1 = 0;
    if (*b1 > *b0) {
        pk_image_passes_batch(ps, *b0, x0, &w);
        pk_image_passes_batch(ps, *b1 - 1, x1, &w);
        *x1 += w;
    }
}

/* Rows per chunk of the row pass (transformed in a buffer of CHUNK grid rows, then written
 * column by column into the send buffer: CHUNK rows of a column are one contiguous run). */
enum { CHUNK = 32 };

PK_MPI_API pk_status pk_mpi_grid_plan_image(pk_mpi_grid_plan *pl, const pk_image_params *ip,
                                            const int32_t *support, const float *kernels,
                                            float *image, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_grid_plan_image: plan must not be NULL");
        return PK_ENULL;
    }
    const double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, 0, 0);
    const int R = pl->s.nranks, rank = pl->s.rank;
    pk_status st = PK_OK;
    pk_grid_params a, b;
    if (ip) { /* the geometry only: the tuning fields do not change the grid */
        grid_fields(&ip->grid, &a);
        grid_fields(&pl->p, &b);
        a.tile_size = b.tile_size = a.central_radius = b.central_radius = 0;
        a.tile_factor = b.tile_factor = 0;
    }
    if (!ip || !support || !kernels) {
        pkm_set_error("pk_mpi_grid_plan_image: %s must not be NULL",
                      !ip ? "ip" : !support ? "support" : "kernels");
        st = PK_ENULL;
    } else if (!pl->have) {
        pkm_set_error("pk_mpi_grid_plan_image: no successful run yet (the image is the last "
                      "run's grid)");
        st = PK_ESTATE;
    } else if (memcmp(&a, &b, sizeof a) != 0 ||
               memcmp(support, pl->support, (size_t)pl->p.num_w_planes * sizeof *support)) {
        pkm_set_error("ip->grid and support: must be the plan's (its grid parameters and "
                      "w-kernel supports)");
        st = PK_EINVAL;
    } else if (rank == 0 && !image) {
        pkm_set_error("image: must not be NULL on rank 0 (it receives the image)");
        st = PK_ENULL;
    }
    /* plane 0 alone: the image reads nothing else of the stack (hashing the whole stack,
     * 20 MB at el82-70 x 0.1, on every image was a few per cent of its time) */
    if (st == PK_OK && plane0_hash(&pl->p, support, kernels) != pl->khash0) {
        pkm_set_error("kernels: must be the plan's w-kernel stack (plane 0's hash differs)");
        st = PK_EINVAL;
    }
    pk_image_passes *ps = NULL;
    if (st == PK_OK) {
        st = pk_image_passes_create(&ps, pl->ctx, ip, support, kernels);
        if (st != PK_OK)
            pkm_set_error("image: %s", pk_last_error());
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK) {
        pk_image_passes_destroy(ps);
        return st;
    }
    const size_t G = (size_t)pl->G, N = (size_t)ip->image_size;
    /* rows outside the box are zero everywhere: the columns hold only its H rows */
    const int y0 = pl->box[1] > pl->box[0] ? pl->box[0] : 0, y1 = pl->box[1] > y0 ? pl->box[1] : 0;
    const size_t H = (size_t)(y1 - y0);
    int b0, b1, x0, x1;
    image_share(ps, R, rank, &b0, &b1, &x0, &x1);
    const size_t mine = (size_t)(x1 - x0);
    /* this rank's rows of the box: [ra, rb) of its band [i0, i1) */
    const int i0 = pl->s.i0[rank], i1 = pl->s.i1[rank];
    const int ra = i0 > y0 ? i0 : y0, rb = i1 < y1 ? i1 : y1;
    const size_t nr = rb > ra ? (size_t)(rb - ra) : 0;
    /* MPI's ints: the send buffer's byte displacements, a strip's floats */
    if ((double)nr * (double)N * 8.0 > 2147483647.0 || (double)mine * (double)N > 2147483647.0) {
        pkm_set_error("image: %zu rows of %zu columns exceed MPI's int counts (2^31 bytes)", nr,
                      N);
        st = PK_ESIZE;
    }
    float *send = NULL, *cols = NULL, *chunk = NULL, *strip = NULL;
    if (st == PK_OK) {
        /* written whole: huge pages (pk_malloc), kept in the plan */
        send = image_buf(pl, 0, (nr ? nr : 1) * N * 2 * sizeof(float));
        cols = image_buf(pl, 1, (mine && H ? mine * H : 1) * 2 * sizeof(float));
        chunk = image_buf(pl, 2, CHUNK * G * 2 * sizeof(float));
        strip = rank == 0 ? NULL : image_buf(pl, 3, (mine ? mine : 1) * N * sizeof(float));
        if (!send || !cols || !chunk || (rank != 0 && !strip)) {
            pkm_set_error("out of memory for the image's transposes (%zu x %zu and %zu x %zu "
                          "complex64)", nr, N, mine, H);
            st = PK_ENOMEM;
        }
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    int *sc = NULL, *sd = NULL, *rc = NULL, *rd = NULL;
    MPI_Datatype *st_ = NULL, *rt = NULL;
    if (st == PK_OK) {
        sc = calloc(4 * (size_t)R, sizeof *sc);
        st_ = calloc(2 * (size_t)R, sizeof *st_);
    }
    if (st == PK_OK && (!sc || !st_)) {
        pkm_set_error("out of memory");
        st = PK_ENOMEM;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st == PK_OK) {
        sd = sc + R;
        rc = sc + 2 * R;
        rd = sc + 3 * R;
        rt = st_ + R;
        /* row pass over the band's box rows, CHUNK at a time, each chunk written into the
         * send buffer as [column x][row]: crop column x is grid column (x - N/2) mod G */
        const double t1 = pkm_now();
        const float *band = pl->grid; /* the band's rows i0 .. i1 - 1 */
        for (size_t c0 = 0; st == PK_OK && c0 < nr; c0 += CHUNK) {
            const size_t ch = nr - c0 < CHUNK ? nr - c0 : CHUNK;
            memcpy(chunk, band + 2 * ((size_t)(ra - i0) + c0) * G, ch * G * 2 * sizeof(float));
            st = pk_image_passes_rows(ps, chunk, ch);
            for (size_t x = 0; st == PK_OK && x < N; x++) {
                const size_t gc = (x + G - N / 2) % G;
                float *dst = send + 2 * (x * nr + c0);
                for (size_t k = 0; k < ch; k++) {
                    dst[2 * k] = chunk[2 * (k * G + gc)];
                    dst[2 * k + 1] = chunk[2 * (k * G + gc) + 1];
                }
            }
        }
        const double t2 = pkm_now();
        /* to rank q: its columns of this rank's box rows, contiguous; from rank r: r's box
         * rows of this rank's columns, at their rows of every column (a vector type; the
         * columns hold the box's H rows) */
        for (int q = 0; q < R; q++) {
            int qb0, qb1, qx0, qx1;
            image_share(ps, R, q, &qb0, &qb1, &qx0, &qx1);
            sc[q] = (int)((size_t)(qx1 - qx0) * nr * 2);
            sd[q] = (int)((size_t)qx0 * nr * 2 * sizeof(float));
            st_[q] = MPI_FLOAT;
            const int qa = pl->s.i0[q] > y0 ? pl->s.i0[q] : y0;
            const int qe = pl->s.i1[q] < y1 ? pl->s.i1[q] : y1;
            rt[q] = MPI_FLOAT;
            rc[q] = 0;
            rd[q] = 0;
            if (qe > qa && mine > 0) {
                MPI_Type_vector((int)mine, 2 * (qe - qa), (int)(2 * H), MPI_FLOAT, &rt[q]);
                MPI_Type_commit(&rt[q]);
                rc[q] = 1;
                rd[q] = (int)((size_t)(qa - y0) * 2 * sizeof(float));
            }
        }
        /* this rank's own rows of its columns: copied here, not through MPI (Open MPI 4.1's
         * one-process Alltoallw crashed in its self copy with the vector type) */
        sc[rank] = rc[rank] = 0;
        for (size_t j = 0; j < mine && nr > 0; j++)
            memcpy(cols + 2 * (j * H + (size_t)(ra - y0)), send + 2 * ((size_t)x0 + j) * nr,
                   2 * nr * sizeof(float));
        MPI_Alltoallw(send, sc, sd, st_, cols, rc, rd, rt, pl->comm);
        for (int q = 0; q < R; q++)
            if (rt[q] != MPI_FLOAT)
                MPI_Type_free(&rt[q]);
        const double t3 = pkm_now();
        /* column pass: rank 0 into the image, the others into their strip */
        if (st == PK_OK && mine > 0)
            st = pk_image_passes_cols(ps, cols, y0, (int)H, b0, b1, pl->norm,
                                      rank == 0 ? image + x0 : strip, rank == 0 ? N : mine);
        if (st != PK_OK)
            pkm_set_error("image: %s", pk_last_error());
        const double t4 = pkm_now();
        st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
        const double t5 = pkm_now();
        if (st == PK_OK && rank == 0) { /* each rank's strip into its columns of the image */
            for (int q = 1; q < R; q++) {
                int qb0, qb1, qx0, qx1;
                image_share(ps, R, q, &qb0, &qb1, &qx0, &qx1);
                if (qx1 <= qx0)
                    continue;
                MPI_Datatype ty;
                MPI_Type_vector((int)N, qx1 - qx0, (int)N, MPI_FLOAT, &ty);
                MPI_Type_commit(&ty);
                MPI_Recv(image + qx0, 1, ty, q, 0, pl->comm, MPI_STATUS_IGNORE);
                MPI_Type_free(&ty);
            }
        } else if (st == PK_OK && mine > 0) {
            MPI_Send(strip, (int)(mine * N), MPI_FLOAT, 0, 0, pl->comm);
        }
        const double t6 = pkm_now();
        info->compute_s += (t2 - t1) + (t4 - t3);
        info->comm_s += (t3 - t2) + (t6 - t5);
        /* the transpose's bytes leaving this rank (its box rows of the others' columns) and
         * its strip to rank 0 */
        info->halo_bytes = 8.0 * (double)nr * (double)(N - mine) +
                           (rank == 0 ? 0.0 : 4.0 * (double)mine * (double)N);
        info->messages = 2 * (R - 1);
        info->exchanges = 2;
    }
    free(sc);
    free(st_);
    pk_image_passes_destroy(ps);
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API void pk_mpi_grid_plan_destroy(pk_mpi_grid_plan *pl) {
    if (pl)
        grid_free(pl);
}
