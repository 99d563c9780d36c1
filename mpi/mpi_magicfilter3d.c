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
 * (tests/test_mpi.c checks each variant bitwise, docs/SCALING.md lists the outcome).
 *
 * Transposes (pk_mpi_options.transposes; BigDFT's way): the passes run apart on the host
 * (pk_magicfilter_pass), no plane computed twice.  The first two filter axes 1 and 2 of the
 * rank's own x planes, leaving w2 [D][xL] (D = n1' n2' lines along axis 3, each cut into the
 * ranks' slabs); an MPI_Alltoallw hands rank s the lines [D0_s, D1_s) whole (z [Dloc][n3 in],
 * each source's piece strided into place by its datatype); the third pass filters them (v
 * [n3 out][Dloc]); a second MPI_Alltoallw returns the output planes to their slabs (rows of
 * y, each source's columns strided into place).  Each line is computed by the same pass code
 * as in one process: bitwise for every host pass variant. */
#include "mpi_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
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
    /* the transposes (header) */
    int tr;
    char variant[32];     /* the passes' variant ("": pk_magicfilter_pass's default) */
    size_t *D0;           /* [R + 1]: rank r's third-pass lines [D0[r], D0[r + 1]) */
    double *A, *B;        /* w1 then z; w2 then v */
    MPI_Datatype *ty;     /* [4R]: forward send, forward receive, back send, back receive */
    int *cnt, *zero;      /* [4R] counts (0 or 1), [R] displacements (in the types) */
};

static void mf_free(pk_mpi_magicfilter3d_plan *pl) {
    if (pl->ty)
        for (int i = 0; i < 4 * pl->s.nranks; i++)
            if (pl->ty[i] != MPI_DATATYPE_NULL && pl->ty[i] != MPI_DOUBLE)
                MPI_Type_free(&pl->ty[i]);
    free(pl->ty);
    free(pl->cnt);
    free(pl->zero);
    free(pl->D0);
    free(pl->A);
    free(pl->B);
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

/* A variant pk_magicfilter_pass runs (NULL, "": its default). */
static int mf_pass_variant(const char *v) {
    return !v || !*v || !strcmp(v, "omp") || !strcmp(v, "simd") || !strcmp(v, "unrolled") ||
           !strcmp(v, "serial");
}

/* Whether this plan runs the transposes (agreed over the ranks): asked for (1), refused (0),
 * or by default where the local kernel would run on the host (a 1-point plan of the context
 * and variant says where) with a variant that has a pass: measured faster than the halo
 * planes on 2 ranks from 16 to 256 planes (docs/SCALING.md). */
static pk_status mf_choose(pk_mpi_magicfilter3d_plan *pl, const pk_mpi_options *opt) {
    const int want = opt ? opt->transposes : -1;
    const char *v = opt ? opt->variant : NULL;
    pk_status st = PK_OK;
    int tr = 0;
    if (want != -1 && want != 0 && want != 1) {
        pkm_set_error("transposes: must be -1 (auto), 0 or 1, got %d", want);
        st = PK_EINVAL;
    } else if (want == 1 && !mf_pass_variant(v)) {
        pkm_set_error("transposes: the passes run on the host (pk_magicfilter_pass: omp, simd, "
                      "unrolled, serial); variant '%s' has no pass", v);
        st = PK_EINVAL;
    } else if (want == 1) {
        tr = 1;
    } else if (want == -1 && mf_pass_variant(v)) {
        pk_magicfilter3d_params one = pl->p;
        one.n1 = one.n2 = one.n3 = 1;
        pk_magicfilter3d_plan *probe = NULL;
        pk_run_info pi;
        memset(&pi, 0, sizeof pi);
        if (pk_magicfilter3d_plan_create(&probe, pl->ctx, &one, v, &pi) == PK_OK)
            tr = pi.backend == PK_BACKEND_SERIAL || pi.backend == PK_BACKEND_OPENMP;
        pk_magicfilter3d_plan_destroy(probe);
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK) /* every rank's probe agrees to the transposes, or none runs them */
        MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_INT, MPI_MIN, pl->comm);
    pl->tr = tr;
    if (tr && v)
        snprintf(pl->variant, sizeof pl->variant, "%s", v);
    return st;
}

/* A datatype of doubles at element offset off: n contiguous (count 1), or count blocks of
 * blen every stride; MPI_DOUBLE with *cnt = 0 when empty. */
static pk_status mf_type(MPI_Datatype *t, int *cnt, size_t off, size_t count, size_t blen,
                         size_t stride) {
    *t = MPI_DOUBLE;
    *cnt = 0;
    if (count == 0 || blen == 0)
        return PK_OK;
    if (count > INT_MAX || blen > INT_MAX || stride > INT_MAX || off > (size_t)PTRDIFF_MAX / 8) {
        pkm_set_error("magicfilter3d transposes: a message of %zu x %zu doubles (stride %zu) "
                      "exceeds MPI's int counts", count, blen, stride);
        return PK_EOVERFLOW;
    }
    MPI_Datatype v;
    if (count == 1)
        MPI_Type_contiguous((int)blen, MPI_DOUBLE, &v);
    else
        MPI_Type_vector((int)count, (int)blen, (int)stride, MPI_DOUBLE, &v);
    int one = 1;
    MPI_Aint disp = (MPI_Aint)(off * sizeof(double));
    MPI_Type_create_hindexed(1, &one, &disp, v, t);
    MPI_Type_free(&v);
    MPI_Type_commit(t);
    *cnt = 1;
    return PK_OK;
}

/* Rank r's output planes: its slab, GROW's last rank also the 15 extra planes (its input
 * planes are pl->xs's). */
static size_t mf_out_planes(const pk_mpi_magicfilter3d_plan *pl, int r) {
    const int extra = pl->p.bc == PK_MF_GROW && r == pl->s.nranks - 1 ? 15 : 0;
    return (size_t)(pl->s.i1[r] - pl->s.i0[r] + extra);
}

/* The transposes' line split, work arrays and the 4R datatypes (header). */
static pk_status mf_transposes_make(pk_mpi_magicfilter3d_plan *pl, const size_t ins[3],
                                    const size_t outs[3]) {
    const int R = pl->s.nranks, me = pl->s.rank;
    const size_t in3 = ins[0], in2 = ins[1], out1 = outs[2], out2 = outs[1], out3 = outs[0];
    const size_t D = out1 * out2;
    pl->D0 = malloc(((size_t)R + 1) * sizeof *pl->D0);
    pl->ty = malloc(4 * (size_t)R * sizeof *pl->ty);
    pl->cnt = calloc(4 * (size_t)R, sizeof *pl->cnt);
    pl->zero = calloc((size_t)R, sizeof *pl->zero);
    if (!pl->D0 || !pl->ty || !pl->cnt || !pl->zero) {
        pkm_set_error("out of memory");
        return PK_ENOMEM;
    }
    for (int i = 0; i < 4 * R; i++)
        pl->ty[i] = MPI_DATATYPE_NULL;
    const size_t per = D / (size_t)R, more = D % (size_t)R;
    for (int r = 0; r <= R; r++) /* the block rule over the lines */
        pl->D0[r] = (size_t)r * per + ((size_t)r < more ? (size_t)r : more);
    const size_t Dme = pl->D0[me + 1] - pl->D0[me], xL = (size_t)pl->xL, yL = (size_t)pl->yL;
    const size_t a = out1 * xL * in2 > Dme * in3 ? out1 * xL * in2 : Dme * in3;
    const size_t b = out2 * out1 * xL > out3 * Dme ? out2 * out1 * xL : out3 * Dme;
    pl->A = pkm_alloc64(a * sizeof(double));
    pl->B = pkm_alloc64(b * sizeof(double));
    if (!pl->A || !pl->B) {
        pkm_set_error("out of memory for the transposes' work arrays (%zu + %zu doubles)", a, b);
        return PK_ENOMEM;
    }
    pk_status st = PK_OK;
    for (int r = 0; r < R && st == PK_OK; r++) {
        const size_t xi0 = (size_t)pl->xs.i0[r], xLr = (size_t)(pl->xs.i1[r] - pl->xs.i0[r]);
        const size_t yi0 = (size_t)pl->s.i0[r], yLr = mf_out_planes(pl, r);
        const size_t Dr = pl->D0[r + 1] - pl->D0[r];
        /* forward: my w2 lines of r to r; r's pieces of my lines into z's columns */
        st = mf_type(&pl->ty[r], &pl->cnt[r], pl->D0[r] * xL, 1, Dr * xL, 0);
        if (st == PK_OK)
            st = mf_type(&pl->ty[R + r], &pl->cnt[R + r], xi0, Dme, xLr, in3);
        /* back: my v rows of r's output slab to r; r's columns of my output rows into y */
        if (st == PK_OK)
            st = mf_type(&pl->ty[2 * R + r], &pl->cnt[2 * R + r], yi0 * Dme, 1, yLr * Dme, 0);
        if (st == PK_OK)
            st = mf_type(&pl->ty[3 * R + r], &pl->cnt[3 * R + r], pl->D0[r], yL, Dr, D);
    }
    return st;
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
    st = pkm_agree(pl->comm, pkm_context(ctx, &pl->ctx, &pl->owned), NULL, NULL);
    if (st == PK_OK)
        st = mf_choose(pl, opt);
    if (st != PK_OK || pl->tr) {
        free(lo);
        if (st == PK_OK)
            st = pkm_agree(pl->comm, mf_transposes_make(pl, ins, outs), NULL, NULL);
        if (st != PK_OK)
            goto fail;
        pl->lo = pl->hi = 0;
        if (info) {
            memset(&info->local, 0, sizeof info->local);
            pkm_info_begin(info, &pl->s, 0, 0);
            info->transposes = 1;
        }
        *plan = pl;
        return PK_OK;
    }
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
    {
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

/* The transposes' execute (header): the passes on the host, two MPI_Alltoallw.  A failing
 * pass still takes part in the collectives (its ranks' garbage is never kept: the status is
 * agreed after). */
static pk_status mf_transposes_run(pk_mpi_magicfilter3d_plan *pl, const double *x, double *y,
                                   pk_mpi_info *info) {
    const int R = pl->s.nranks, me = pl->s.rank;
    size_t ins[3], outs[3];
    pk_magicfilter3d_shapes(&pl->p, ins, outs);
    const size_t xL = (size_t)pl->xL, Dme = pl->D0[me + 1] - pl->D0[me];
    const char *v = pl->variant[0] ? pl->variant : NULL;
    pk_magicfilter_pass_params q = {pl->p.n1, xL * ins[1], pl->p.transpose, pl->p.bc};
    const double t0 = pkm_now();
    pk_status st = pk_magicfilter_pass(pl->ctx, &q, v, x, pl->A, &info->local);
    q.n = pl->p.n2;
    q.lines = outs[2] * xL;
    if (st == PK_OK)
        st = pk_magicfilter_pass(pl->ctx, &q, v, pl->A, pl->B, &info->local);
    const double t1 = pkm_now();
    /* a rank alone: w2's lines are whole already, and the third pass writes y itself */
    if (R > 1)
        MPI_Alltoallw(pl->B, pl->cnt, pl->zero, pl->ty, pl->A, pl->cnt + R, pl->zero,
                      pl->ty + R, pl->comm);
    const double t2 = pkm_now();
    q.n = pl->p.n3;
    q.lines = Dme;
    if (st == PK_OK && Dme)
        st = pk_magicfilter_pass(pl->ctx, &q, v, R > 1 ? pl->A : pl->B, R > 1 ? pl->B : y,
                                 &info->local);
    const double t3 = pkm_now();
    if (R > 1)
        MPI_Alltoallw(pl->B, pl->cnt + 2 * R, pl->zero, pl->ty + 2 * R, y, pl->cnt + 3 * R,
                      pl->zero, pl->ty + 3 * R, pl->comm);
    const double t4 = pkm_now();
    info->compute_s += (t1 - t0) + (t3 - t2);
    info->comm_s += (t2 - t1) + (t4 - t3);
    for (int r = 0; r < R; r++) {
        if (r == me)
            continue;
        const size_t Dr = pl->D0[r + 1] - pl->D0[r];
        info->halo_bytes += 8.0 * (double)(Dr * xL + mf_out_planes(pl, r) * Dme);
        info->messages += pl->cnt[r] + pl->cnt[2 * R + r];
    }
    info->exchanges += R > 1 ? 2 : 0;
    info->transposes = 1;
    if (st != PK_OK)
        pkm_set_error("local magicfilter pass: %s", pk_last_error());
    return st;
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
    if (pl->tr) {
        st = pkm_agree(pl->comm, mf_transposes_run(pl, x, y, info), NULL, &info->agree_s);
        info->wall_s = pkm_now() - t0;
        return st;
    }
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
