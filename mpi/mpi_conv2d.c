/* mpi_conv2d.c - distributed conv2d: row slabs with periodic halo rows.
 *
 * Output row i of the frame reads image rows i - kh/2 .. i - kh/2 + kh - 1 (mod h).  A rank
 * holding rows [i0, i1) (L rows) builds ext = the kh/2 rows above, its L rows, the
 * kh - 1 - kh/2 rows below (H = L + kh - 1 rows, taken mod h from whichever rank holds them),
 * and runs the local kernel on the H x w frame ext: its output rows kh/2 .. kh/2 + L - 1 read
 * ext rows that never wrap inside ext, i.e. exactly the frame's rows, so they are the frame's
 * output rows i0 .. i1 - 1.  The columns are the whole width, periodic as in one process.
 * Direct variants sum the same products in the same order: bitwise.  The FFT variants
 * transform an H x w frame instead of h x w: another rounding, within the tolerance of
 * docs/KERNELS.md section 5.  No overlap: the halo rows arrive before the run (a frame is one
 * pass; docs/SCALING.md). */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct pk_mpi_conv2d_plan {
    MPI_Comm comm;
    pkm_slabs s;
    pkm_halo halo;
    pk_context *ctx;
    int owned;
    pk_conv2d_params p;
    int L, lo, hi, H;
    float *img, *out;
    pk_conv2d_plan *local;
};

static void conv_free(pk_mpi_conv2d_plan *pl) {
    pk_conv2d_plan_destroy(pl->local);
    free(pl->img);
    free(pl->out);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

PK_MPI_API pk_status pk_mpi_conv2d_plan_create(pk_mpi_conv2d_plan **plan, MPI_Comm comm,
                                               pk_context *ctx, const pk_conv2d_params *p,
                                               const float *psf, const pk_mpi_options *opt,
                                               pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    if (!plan || !p || !psf) {
        pkm_set_error("pk_mpi_conv2d_plan_create: %s must not be NULL",
                      !plan ? "plan" : !p ? "p" : "psf");
        st = PK_ENULL;
    } else if (p->kh < 1 || p->kw < 1 || p->kh > (1 << 20) || p->kw > (1 << 20)) {
        pkm_set_error("kh, kw: must be 1 .. 2^20, got %d x %d", p->kh, p->kw);
        st = PK_ESIZE;
    }
    pk_mpi_conv2d_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->halo.row_type = MPI_DATATYPE_NULL;
    MPI_Comm_dup(comm, &pl->comm);
    pl->p = *p;
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p, "conv2d parameters (h, w, kh, kw, "
                                                          "method)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK) { /* kh, kw are now the same everywhere: the PSFs have one length */
        st = pkm_same_as_root(pl->comm, psf, (size_t)p->kh * (size_t)p->kw * sizeof(float),
                              "PSF values");
        st = pkm_agree(pl->comm, st, NULL, NULL);
    }
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->h, opt, "h rows");
    if (st != PK_OK)
        goto fail;
    int R = pl->s.nranks;
    pl->L = pl->s.i1[pl->s.rank] - pl->s.i0[pl->s.rank];
    pl->lo = p->kh / 2;
    pl->hi = p->kh - 1 - p->kh / 2;
    pl->H = pl->L + p->kh - 1;
    int *lo = malloc(2 * (size_t)R * sizeof *lo);
    if (!lo)
        pkm_set_error("out of memory");
    st = pkm_agree(pl->comm, lo ? PK_OK : PK_ENOMEM, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    for (int r = 0; r < R; r++) {
        lo[r] = pl->lo;
        lo[R + r] = pl->hi;
    }
    st = pkm_halo_make(&pl->halo, pl->comm, &pl->s, lo, lo + R, 1,
                       (size_t)(p->w > 0 ? p->w : 1) * sizeof(float));
    free(lo);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        pk_conv2d_params lp = *p;
        lp.h = pl->H;
        st = pk_conv2d_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL, psf, &li);
        if (st != PK_OK)
            pkm_set_error("local conv2d plan (%d x %d): %s", lp.h, lp.w, pk_last_error());
    }
    if (st == PK_OK) {
        size_t n = (size_t)pl->H * (size_t)p->w;
        pl->img = malloc(n * sizeof(float));
        pl->out = malloc(n * sizeof(float));
        if (!pl->img || !pl->out) {
            pkm_set_error("out of memory for the slab with its halo rows (%zu floats)", n);
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
    conv_free(pl);
    return st;
}

PK_MPI_API pk_status pk_mpi_conv2d_plan_execute(pk_mpi_conv2d_plan *pl, const float *image,
                                                float *out, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_conv2d_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, pl->lo, pl->hi);
    size_t row = (size_t)pl->p.w, slab = (size_t)pl->L * row;
    pk_status st = PK_OK;
    if (!image || !out) {
        pkm_set_error("pk_mpi_conv2d_plan_execute: %s must not be NULL", !image ? "image" : "out");
        st = PK_ENULL;
    } else if ((const char *)out < (const char *)(image + slab) &&
               (const char *)image < (const char *)(out + slab)) {
        pkm_set_error("pk_mpi_conv2d_plan_execute: out overlaps image");
        st = PK_EINVAL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    double t1 = pkm_now();
    memcpy(pl->img + (size_t)pl->lo * row, image, slab * sizeof(float));
    pkm_src src = {image, NULL, NULL, 0};
    pkm_halo_start(&pl->halo, &src, pl->img, pl->img + (size_t)(pl->lo + pl->L) * row, info);
    pkm_halo_finish(&pl->halo);
    double t2 = pkm_now();
    st = pk_conv2d_plan_execute(pl->local, pl->img, pl->out, &info->local);
    if (st != PK_OK)
        pkm_set_error("local conv2d: %s", pk_last_error());
    else
        memcpy(out, pl->out + (size_t)pl->lo * row, slab * sizeof(float));
    double t3 = pkm_now();
    info->comm_s += t2 - t1;
    info->compute_s += t3 - t2;
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API void pk_mpi_conv2d_plan_destroy(pk_mpi_conv2d_plan *pl) {
    if (pl)
        conv_free(pl);
}
