/* mpi_laplace2d.c - distributed laplace2d: row slabs, periodic (rank 0 and rank N-1 are
 * neighbours), `depth` halo rows every `depth` iterations.
 *
 * The core kernel is square: phi [l][l], periodic in both directions.  A rank's slab with its
 * halos is a (d + L + d) x l band, which that kernel cannot step as it is, so the band is cut
 * into square tiles: tile k covers the slab's columns x0 .. x0 + L - 1 (the last tile is moved
 * left to end at l, overlapping the one before), and the local plan, of side m = L + 2d
 * (rounded up to a multiple of the hvfo lanes), steps the tile with d halo rows above and below
 * (received) and d halo columns left and right (the band's own columns, wrapped mod l); the
 * rest of the m x m square is padding.  A value next to the square's edge is stepped with the
 * kernel's own wrap, so after c <= d iterations the wrong values have moved c rows or columns
 * inward: the tile's L x L middle is exact, and is written to the new slab.  Every kept value
 * is computed from the same four neighbours by the same tree as in one process; whether the
 * local kernel computes a column the global field has at its wrap with the same instructions
 * as an inner one is the variant's business: the tests say (tests/test_mpi.c) - bitwise for
 * every serial and OpenMP variant here.  One rank runs the l x l field directly.
 * Costs: each tile steps (L + 2d)^2 values for L^2 kept ((1 + 2d/L)^2: 1.03 at L = 1024,
 * d = 8), and per chunk the tiles are copied in and out (two copies of the slab; the new slab
 * is written beside the old one and the two swap). */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct pk_mpi_laplace2d_plan {
    MPI_Comm comm;
    pkm_slabs s;
    pkm_halo halo;
    pk_context *ctx;
    int owned;
    pk_laplace2d_params p;
    int l, L, d, m, ntiles, single, uploaded;
    float *ext;  /* (d + L + d) x l, 64-byte aligned (one rank: the l x l field) */
    float *next; /* the same shape: the tiles write the new slab into its rows d .. d + L - 1,
                    then it becomes ext (swapped, not copied) */
    float *sq;   /* m x m, 64-byte aligned: one tile with its halos */
    pk_laplace2d_plan *local;
};

static void lp_free(pk_mpi_laplace2d_plan *pl) {
    pk_laplace2d_plan_destroy(pl->local);
    free(pl->ext);
    free(pl->next);
    free(pl->sq);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

static float *own_rows(const pk_mpi_laplace2d_plan *pl) {
    return pl->ext + (size_t)(pl->single ? 0 : pl->d) * (size_t)pl->l;
}

PK_MPI_API pk_status pk_mpi_laplace2d_plan_create(pk_mpi_laplace2d_plan **plan, MPI_Comm comm,
                                                  pk_context *ctx, const pk_laplace2d_params *p,
                                                  const pk_mpi_options *opt, pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    if (!plan || !p) {
        pkm_set_error("pk_mpi_laplace2d_plan_create: %s must not be NULL", !plan ? "plan" : "p");
        st = PK_ENULL;
    } else if (opt && (opt->depth < 0 || opt->depth > 64)) {
        pkm_set_error("depth: must be 0 (the default) or 1 .. 64, got %d", opt->depth);
        st = PK_EINVAL;
    } else if (p->layout == PK_LAP_HVFO && (p->nw < 0 || p->nw > 4096)) {
        pkm_set_error("nw: must be 0 .. 4096, got %d", p->nw);
        st = PK_EINVAL;
    } else if (p->layout == PK_LAP_HVFO && p->l > 0 &&
               p->l % (p->nw ? p->nw : PK_LAP_DEFAULT_NW) != 0) {
        /* the tiles are padded to the lanes, but the problem is the global one: refused as
         * one process refuses it */
        pkm_set_error("l: hvfo needs l to be a multiple of nw = %d, got %d",
                      p->nw ? p->nw : PK_LAP_DEFAULT_NW, p->l);
        st = PK_EINVAL;
    }
    pk_mpi_laplace2d_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->halo.row_type = MPI_DATATYPE_NULL;
    MPI_Comm_dup(comm, &pl->comm);
    pl->p = *p;
    pl->p.count = 0; /* execute's, not compared */
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p, "laplace2d parameters (l, sigma, "
                                                          "layout, nw)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->l, opt, "l rows");
    if (st != PK_OK) {
        lp_free(pl);
        return st;
    }
    int R = pl->s.nranks;
    pl->l = p->l;
    pl->L = pl->s.i1[pl->s.rank] - pl->s.i0[pl->s.rank];
    pl->d = pkm_depth(&pl->s, opt ? opt->depth : 0, 8);
    pl->single = R == 1;
    pk_laplace2d_params lp = pl->p;
    if (!pl->single) {
        int nw = p->nw ? p->nw : PK_LAP_DEFAULT_NW;
        pl->m = pl->L + 2 * pl->d;
        if (p->layout == PK_LAP_HVFO)
            pl->m = (pl->m + nw - 1) / nw * nw;
        pl->ntiles = (pl->l + pl->L - 1) / pl->L;
        lp.l = pl->m;
    }
    int *lo = malloc(2 * (size_t)R * sizeof *lo);
    if (!lo)
        pkm_set_error("out of memory");
    st = pkm_agree(pl->comm, lo ? PK_OK : PK_ENOMEM, NULL, NULL);
    if (st != PK_OK) {
        lp_free(pl);
        return st;
    }
    for (int r = 0; r < 2 * R; r++)
        lo[r] = pl->single ? 0 : pl->d;
    st = pkm_halo_make(&pl->halo, pl->comm, &pl->s, lo, lo + R, 1, (size_t)pl->l * sizeof(float));
    free(lo);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK) {
        lp_free(pl);
        return st;
    }
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        st = pk_laplace2d_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL, &li);
        if (st != PK_OK)
            pkm_set_error("local laplace2d plan (l %d): %s", lp.l, pk_last_error());
    }
    if (st == PK_OK) {
        size_t rows = (size_t)(pl->single ? pl->L : pl->L + 2 * pl->d);
        pl->ext = pkm_alloc64(rows * (size_t)pl->l * sizeof(float));
        if (!pl->single) {
            pl->next = malloc(rows * (size_t)pl->l * sizeof(float));
            pl->sq = pkm_alloc64((size_t)pl->m * (size_t)pl->m * sizeof(float));
        }
        if (!pl->ext || (!pl->single && (!pl->next || !pl->sq))) {
            pkm_set_error("out of memory for the slab, its halos and a tile");
            st = PK_ENOMEM;
        }
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK) {
        lp_free(pl);
        return st;
    }
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, pl->single ? 0 : pl->d, pl->single ? 0 : pl->d);
        info->depth = pl->d;
    }
    *plan = pl;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_laplace2d_plan_upload(pk_mpi_laplace2d_plan *pl, const float *phi) {
    if (!pl || !phi) {
        pkm_set_error("pk_mpi_laplace2d_plan_upload: %s must not be NULL", !pl ? "plan" : "phi");
        return PK_ENULL;
    }
    memcpy(own_rows(pl), phi, (size_t)pl->L * (size_t)pl->l * sizeof(float));
    pl->uploaded = 1;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_laplace2d_plan_download(pk_mpi_laplace2d_plan *pl, float *phi) {
    if (!pl || !phi) {
        pkm_set_error("pk_mpi_laplace2d_plan_download: %s must not be NULL", !pl ? "plan" : "phi");
        return PK_ENULL;
    }
    if (!pl->uploaded) {
        pkm_set_error("pk_mpi_laplace2d_plan_download: no field (upload first; a failed run "
                      "leaves none)");
        return PK_ESTATE;
    }
    memcpy(phi, own_rows(pl), (size_t)pl->L * (size_t)pl->l * sizeof(float));
    return PK_OK;
}

/* dst[0 .. n) = src[(start + j) mod l], j < n (any start, any n: wraps as often as needed). */
static void copy_wrapped(float *dst, const float *src, int l, long start, int n) {
    long x = ((start % l) + l) % l;
    while (n > 0) {
        int k = (int)(l - x) < n ? (int)(l - x) : n;
        memcpy(dst, src + x, (size_t)k * sizeof(float));
        dst += k;
        n -= k;
        x = 0;
    }
}

/* c iterations of the whole slab through the tiles (the halos already in ext). */
static pk_status tiles_run(pk_mpi_laplace2d_plan *pl, int c, pk_run_info *li) {
    int l = pl->l, L = pl->L, d = pl->d, m = pl->m, w = L + 2 * d;
    size_t M = (size_t)m;
    for (int k = 0; k < pl->ntiles; k++) {
        int x0 = k * L;
        if (x0 + L > l)
            x0 = l - L;
        for (int r = 0; r < w; r++) {
            float *row = pl->sq + (size_t)r * M;
            copy_wrapped(row, pl->ext + (size_t)r * (size_t)l, l, (long)x0 - d, w);
            memset(row + w, 0, (M - (size_t)w) * sizeof(float));
        }
        memset(pl->sq + (size_t)w * M, 0, (M - (size_t)w) * M * sizeof(float));
        pk_status st = pk_laplace2d_plan_execute(pl->local, pl->sq, c, li);
        if (st != PK_OK) {
            pkm_set_error("local laplace2d (tile %d): %s", k, pk_last_error());
            return st;
        }
        for (int r = 0; r < L; r++)
            memcpy(pl->next + (size_t)(d + r) * (size_t)l + x0, pl->sq + (size_t)(d + r) * M + d,
                   (size_t)L * sizeof(float));
    }
    float *t = pl->ext; /* the new slab is next's; the halo rows are refilled before use */
    pl->ext = pl->next;
    pl->next = t;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_laplace2d_plan_run(pk_mpi_laplace2d_plan *pl, int count,
                                               pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_laplace2d_plan_run: plan must not be NULL (every rank needs its "
                      "plan: this rank cannot take part)");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    const int halo = pl->single ? 0 : pl->d;
    info = pkm_info_run(info, &spare, &pl->s, halo, halo);
    info->depth = pl->d;
    pk_status st = PK_OK;
    if (count < 0) {
        pkm_set_error("count: must be >= 0, got %d", count);
        st = PK_EINVAL;
    } else if (!pl->uploaded) {
        pkm_set_error("pk_mpi_laplace2d_plan_run: no field (upload first; a failed run leaves "
                      "none)");
        st = PK_ESTATE;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st == PK_OK && pl->single) {
        double t1 = pkm_now();
        pk_status lst = pk_laplace2d_plan_execute(pl->local, pl->ext, count, &info->local);
        if (lst != PK_OK)
            pkm_set_error("local laplace2d: %s", pk_last_error());
        info->compute_s += pkm_now() - t1;
        st = pkm_agree(pl->comm, lst, NULL, &info->agree_s);
    }
    for (int done = 0; st == PK_OK && !pl->single && done < count;) {
        int c = count - done < pl->d ? count - done : pl->d;
        double t1 = pkm_now();
        float *own = own_rows(pl);
        pkm_src src = {own, NULL, NULL, 0};
        pkm_halo_start(&pl->halo, &src, pl->ext, own + (size_t)pl->L * (size_t)pl->l, info);
        pkm_halo_finish(&pl->halo);
        double t2 = pkm_now();
        pk_status lst = tiles_run(pl, c, &info->local);
        info->comm_s += t2 - t1;
        info->compute_s += pkm_now() - t2;
        st = pkm_agree(pl->comm, lst, NULL, &info->agree_s);
        done += c;
    }
    if (st != PK_OK && count > 0)
        pl->uploaded = 0;
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API pk_status pk_mpi_laplace2d_plan_execute(pk_mpi_laplace2d_plan *pl, float *phi,
                                                   int count, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_laplace2d_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    if (!phi) { /* matches the agreement that starts the other ranks' runs */
        pkm_set_error("pk_mpi_laplace2d_plan_execute: phi must not be NULL");
        return pkm_agree(pl->comm, PK_ENULL, NULL, info ? &info->agree_s : NULL);
    }
    double t0 = pkm_now();
    pk_mpi_laplace2d_plan_upload(pl, phi);
    double t1 = pkm_now();
    pk_status st = pk_mpi_laplace2d_plan_run(pl, count, info);
    if (st != PK_OK)
        return st;
    double t2 = pkm_now();
    st = pk_mpi_laplace2d_plan_download(pl, phi);
    pl->uploaded = 0;
    if (info) {
        info->compute_s += (t1 - t0) + (pkm_now() - t2);
        info->wall_s = pkm_now() - t0;
    }
    return st;
}

PK_MPI_API void pk_mpi_laplace2d_plan_destroy(pk_mpi_laplace2d_plan *pl) {
    if (pl)
        lp_free(pl);
}
