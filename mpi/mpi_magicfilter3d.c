/* mpi_magicfilter3d.c - distributed magicfilter3d: slabs of the slowest axis (i3) with halo
 * planes of the filter's reach, one local 3-D call per rank (docs/SCALING.md).
 *
 * Along i3 an output plane reads 16 consecutive input planes: MF periodic i - 8 .. i + 7,
 * MFT periodic i - 7 .. i + 8, GROW output j the inputs j - 15 .. j, SHRINK output i the
 * inputs i .. i + 15 (docs/KERNELS.md 2).  A rank receives the planes its outputs read
 * beyond its slab, stacks them with its own (ext, E planes) and runs the local kernel on
 * ext, with the same bc:
 *  - PERIODIC: ext = 8 (MFT: 7) planes below, the L own, 7 (8) above, taken mod n3 from any
 *    rank; the local call wraps only inside the halo planes, whose outputs are dropped; the
 *    L kept ones read ext exactly as the global call reads x.
 *  - GROW: the output (n3 + 15 planes) is split as the input plus the 15 extra planes on the
 *    last rank; ext = the min(15, i0) planes below (non-periodic: none below plane 0), the
 *    local GROW output (E + 15 planes) keeps planes lo .. lo + Lout - 1.
 *  - SHRINK: the input (n3 + 15 planes) is split that way, the output as the slabs; ext =
 *    own planes and the 15 above (the last rank holds them already); all L outputs kept.
 * Axes 1 and 2 are whole on every rank, as in one process.  A kept output plane sums the same
 * products as in one process; whether in the same order depends on the variant's code paths
 * (tests/test_mpi.c checks each variant bitwise, docs/SCALING.md lists the outcome). */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct pk_mpi_magicfilter3d_plan {
    MPI_Comm comm;
    pkm_slabs s;      /* the slabs of n3 (the smaller side) */
    pkm_slabs xs;     /* the input side's slabs (SHRINK: the last rank + 15 planes) */
    int xs_own;       /* xs has its own arrays */
    pkm_halo halo;
    pk_context *ctx;
    int owned;
    pk_magicfilter3d_params p;
    size_t in_plane, out_plane; /* doubles per plane */
    int xL, yL;       /* this rank's input and output planes */
    int lo, hi, E;    /* halo planes below, above; ext planes */
    int keep;         /* the first kept plane of the local output */
    double *ext, *yext;
    pk_magicfilter3d_plan *local;
};

static void mf_free(pk_mpi_magicfilter3d_plan *pl) {
    pk_magicfilter3d_plan_destroy(pl->local);
    free(pl->ext);
    free(pl->yext);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    if (pl->xs_own)
        pkm_slabs_free(&pl->xs);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_create(pk_mpi_magicfilter3d_plan **plan,
                                                      MPI_Comm comm, pk_context *ctx,
                                                      const pk_magicfilter3d_params *p,
                                                      const pk_mpi_options *opt,
                                                      pk_mpi_info *info) {
    pk_status st = PK_OK;
    size_t ins[3], outs[3];
    if (plan)
        *plan = NULL;
    if (!plan || !p) {
        pkm_set_error("pk_mpi_magicfilter3d_plan_create: %s must not be NULL",
                      !plan ? "plan" : "p");
        st = PK_ENULL;
    } else if ((st = pk_magicfilter3d_shapes(p, ins, outs)) != PK_OK) {
        pkm_set_error("magicfilter3d parameters: %s", pk_last_error());
    }
    pk_mpi_magicfilter3d_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->halo.row_type = MPI_DATATYPE_NULL;
    MPI_Comm_dup(comm, &pl->comm);
    pl->p = *p;
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p,
                          "magicfilter3d parameters (n1, n2, n3, transpose, bc)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->n3, opt, "n3 planes");
    if (st != PK_OK)
        goto fail;
    int R = pl->s.nranks, me = pl->s.rank, last = me == R - 1;
    int L = pl->s.i1[me] - pl->s.i0[me];
    pl->in_plane = ins[1] * ins[2];
    pl->out_plane = outs[1] * outs[2];
    int *lo = malloc(2 * (size_t)R * sizeof *lo);
    int periodic = p->bc == PK_MF_PERIODIC;
    pl->xs = pl->s;
    if (lo && p->bc == PK_MF_SHRINK) { /* the input side: the last rank holds 15 more */
        pl->xs.i0 = malloc(2 * (size_t)R * sizeof(int));
        if (pl->xs.i0) {
            pl->xs_own = 1;
            pl->xs.i1 = pl->xs.i0 + R;
            memcpy(pl->xs.i0, pl->s.i0, (size_t)R * sizeof(int));
            memcpy(pl->xs.i1, pl->s.i1, (size_t)R * sizeof(int));
            pl->xs.i1[R - 1] += 15;
            pl->xs.n = p->n3 + 15;
        } else {
            free(lo);
            lo = NULL;
        }
    }
    if (!lo)
        pkm_set_error("out of memory");
    st = pkm_agree(pl->comm, lo ? PK_OK : PK_ENOMEM, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    for (int r = 0; r < R; r++) {
        if (periodic) {
            lo[r] = p->transpose ? 7 : 8;
            lo[R + r] = p->transpose ? 8 : 7;
        } else if (p->bc == PK_MF_GROW) {
            lo[r] = pl->s.i0[r] < 15 ? pl->s.i0[r] : 15;
            lo[R + r] = 0;
        } else {
            lo[r] = 0;
            lo[R + r] = r == R - 1 ? 0 : 15;
        }
    }
    pl->lo = lo[me];
    pl->hi = lo[R + me];
    pl->xL = L + (p->bc == PK_MF_SHRINK && last ? 15 : 0);
    pl->yL = L + (p->bc == PK_MF_GROW && last ? 15 : 0);
    pl->E = pl->lo + pl->xL + pl->hi;
    st = pkm_halo_make(&pl->halo, pl->comm, &pl->xs, lo, lo + R, periodic,
                       pl->in_plane * sizeof(double));
    free(lo);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    pk_magicfilter3d_params lp = *p;
    lp.n3 = p->bc == PK_MF_SHRINK ? pl->E - 15 : pl->E;
    pl->keep = p->bc == PK_MF_SHRINK ? 0 : pl->lo;
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        st = pk_magicfilter3d_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL,
                                          &li);
        if (st != PK_OK)
            pkm_set_error("local magicfilter3d plan (n3 %d): %s", lp.n3, pk_last_error());
    }
    if (st == PK_OK) {
        size_t yE = (size_t)(p->bc == PK_MF_GROW ? pl->E + 15 : p->bc == PK_MF_SHRINK
                                                                    ? pl->E - 15 : pl->E);
        pl->ext = pkm_alloc64((size_t)pl->E * pl->in_plane * sizeof(double));
        pl->yext = pkm_alloc64(yE * pl->out_plane * sizeof(double));
        if (!pl->ext || !pl->yext) {
            pkm_set_error("out of memory for the slab with its halo planes (%d planes)", pl->E);
            st = PK_ENOMEM;
        }
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, pl->lo, pl->hi);
    }
    *plan = pl;
    return PK_OK;
fail:
    mf_free(pl);
    return st;
}

PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_slab(const pk_mpi_magicfilter3d_plan *pl,
                                                    int *x_planes, int *y_planes) {
    if (!pl) {
        pkm_set_error("pk_mpi_magicfilter3d_plan_slab: plan must not be NULL");
        return PK_ENULL;
    }
    if (x_planes)
        *x_planes = pl->xL;
    if (y_planes)
        *y_planes = pl->yL;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_execute(pk_mpi_magicfilter3d_plan *pl,
                                                       const double *x, double *y,
                                                       pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_magicfilter3d_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, pl->lo, pl->hi);
    size_t xs = (size_t)pl->xL * pl->in_plane, ys = (size_t)pl->yL * pl->out_plane;
    pk_status st = PK_OK;
    if (!x || !y) {
        pkm_set_error("pk_mpi_magicfilter3d_plan_execute: %s must not be NULL", !x ? "x" : "y");
        st = PK_ENULL;
    } else if ((const char *)y < (const char *)(x + xs) &&
               (const char *)x < (const char *)(y + ys)) {
        pkm_set_error("pk_mpi_magicfilter3d_plan_execute: y overlaps x");
        st = PK_EINVAL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    double t1 = pkm_now();
    memcpy(pl->ext + (size_t)pl->lo * pl->in_plane, x, xs * sizeof(double));
    pkm_src src = {x, NULL, NULL, 0};
    pkm_halo_start(&pl->halo, &src, pl->ext,
                   pl->ext + (size_t)(pl->lo + pl->xL) * pl->in_plane, info);
    pkm_halo_finish(&pl->halo);
    double t2 = pkm_now();
    st = pk_magicfilter3d_plan_execute(pl->local, pl->ext, pl->yext, &info->local);
    if (st != PK_OK)
        pkm_set_error("local magicfilter3d: %s", pk_last_error());
    else
        memcpy(y, pl->yext + (size_t)pl->keep * pl->out_plane, ys * sizeof(double));
    double t3 = pkm_now();
    info->comm_s += t2 - t1;
    info->compute_s += t3 - t2;
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API void pk_mpi_magicfilter3d_plan_destroy(pk_mpi_magicfilter3d_plan *pl) {
    if (pl)
        mf_free(pl);
}
