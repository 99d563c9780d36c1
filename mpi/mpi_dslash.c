/* mpi_dslash.c - distributed dslash: the lattice split along t (the slowest axis), full
 * spinors in the halo.
 *
 * chi at t-plane i reads psi on planes i - 1, i, i + 1 and the links U_mu on plane i and
 * U_t on plane i - 1 (the backward hop: U_t(x - t)^+).  A rank holding planes [i0, i1)
 * (L planes) runs the local dslash on a lattice of L + 2 t-planes: plane 0 the global plane
 * i0 - 1, planes 1 .. L its own, plane L + 1 the global plane i1 (both mod t, from the
 * neighbours; a rank alone gets its own planes).  The local call is periodic in t within that
 * lattice, so it wraps only into the two halo planes, whose outputs are dropped; an interior
 * site sees the same neighbours, links and order of terms as in one process: bitwise.
 * The links' halo planes (all four mu, both sides: real links, so recon12 rebuilds honest
 * rows there too) are exchanged once at plan creation, psi's every execute.
 *
 * Half spinors (pk_mpi_options.half): the interior uses the plane below only through
 * (1 + gamma_t) psi and the plane above through (1 - gamma_t) psi.  With DeGrand-Rossi's
 * gamma_t (spins 0 <-> 2, 1 <-> 3) both are fixed by two spin components:
 * (1 + gamma_t) psi = (a, b, a, b), a = psi0 + psi2, b = psi1 + psi3, and
 * (1 - gamma_t) psi = (a', b', -a', -b'), a' = psi0 - psi2, b' = psi1 - psi3.  A rank sends
 * its top plane's (a, b) up and its bottom plane's (a', b') down (12 doubles a site) and
 * rebuilds each halo site as (a, b, 0, 0) or (a', b', 0, 0), whose projections are the same
 * (a + 0, a' - 0: exact).  The kernel then projects the rebuilt spinor, or multiplies it
 * whole: the sums differ from one process by the order of roundings only, within
 * docs/KERNELS.md 4c (tests/test_mpi.c; docs/SCALING.md says what was seen). */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct pk_mpi_dslash_plan {
    MPI_Comm comm;
    pkm_slabs s;
    pkm_halo halo; /* psi planes: 1 below, 1 above, periodic */
    int half;      /* half spinors: up (each rank receives the plane below) and down (above) */
    pkm_halo up, down;
    double *face[4]; /* half: sent plus (top plane), sent minus (bottom), received below,
                        received above; [vol3][2][3] complex each */
    pk_context *ctx;
    int owned;
    pk_dslash_params p;
    int L;
    size_t vol3;   /* sites per t-plane */
    double *u, *psi, *chi; /* the widened lattice: u [4][L + 2][vol3][18], psi, chi
                              [L + 2][vol3][24] */
    pk_dslash_plan *local;
};

static void ds_free(pk_mpi_dslash_plan *pl) {
    pk_dslash_plan_destroy(pl->local);
    free(pl->u);
    free(pl->psi);
    free(pl->chi);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    pkm_halo_free(&pl->up);
    pkm_halo_free(&pl->down);
    for (int k = 0; k < 4; k++)
        free(pl->face[k]);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

PK_MPI_API pk_status pk_mpi_dslash_plan_create(pk_mpi_dslash_plan **plan, MPI_Comm comm,
                                               pk_context *ctx, const pk_dslash_params *p,
                                               const double *u, const pk_mpi_options *opt,
                                               pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    if (!plan || !p || !u) {
        pkm_set_error("pk_mpi_dslash_plan_create: %s must not be NULL",
                      !plan ? "plan" : !p ? "p" : "u");
        st = PK_ENULL;
    } else if (p->x < 1 || p->y < 1 || p->z < 1 || p->t < 1 ||
               (double)p->x * p->y * p->z * 24.0 * 8.0 > 2147483647.0) {
        pkm_set_error("x, y, z, t: must be >= 1, and one t-plane of psi within one MPI message "
                      "(2^31 bytes), got %d x %d x %d x %d", p->x, p->y, p->z, p->t);
        st = PK_ESIZE;
    }
    pk_mpi_dslash_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->halo.row_type = pl->up.row_type = pl->down.row_type = MPI_DATATYPE_NULL;
    pl->half = opt && opt->half;
    MPI_Comm_dup(comm, &pl->comm);
    /* field by field: the struct's padding (after recon12) holds whatever the caller's had */
    memset(&pl->p, 0, sizeof pl->p);
    pl->p.x = p->x;
    pl->p.y = p->y;
    pl->p.z = p->z;
    pl->p.t = p->t;
    pl->p.kappa = p->kappa;
    pl->p.recon12 = p->recon12;
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p,
                          "dslash parameters (x, y, z, t, kappa, recon12)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->t, opt, "t planes");
    if (st != PK_OK)
        goto fail;
    int R = pl->s.nranks, me = pl->s.rank;
    pl->L = pl->s.i1[me] - pl->s.i0[me];
    pl->vol3 = (size_t)p->x * (size_t)p->y * (size_t)p->z;
    int *one = malloc(2 * (size_t)R * sizeof *one);
    size_t W = (size_t)pl->L + 2, up = pl->vol3 * 18, sp = pl->vol3 * 24;
    pl->u = pkm_alloc64(4 * W * up * sizeof(double));
    pl->psi = pkm_alloc64(W * sp * sizeof(double));
    pl->chi = pkm_alloc64(W * sp * sizeof(double));
    if (!one || !pl->u || !pl->psi || !pl->chi) {
        pkm_set_error("out of memory for the lattice with its halo planes (%zu t-planes)", W);
        st = PK_ENOMEM;
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK) {
        free(one);
        goto fail;
    }
    for (int r = 0; r < 2 * R; r++)
        one[r] = 1;
    /* the links' halo planes, once: one exchange per direction mu */
    pkm_halo uh;
    st = pkm_halo_make(&uh, pl->comm, &pl->s, one, one + R, 1, up * sizeof(double));
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK) {
        for (int mu = 0; mu < 4; mu++) {
            const double *own = u + (size_t)mu * pl->L * up;
            double *dst = pl->u + (size_t)mu * W * up;
            memcpy(dst + up, own, (size_t)pl->L * up * sizeof(double));
            pkm_src src = {own, NULL, NULL, 0};
            pkm_halo_start(&uh, &src, dst, dst + (W - 1) * up, NULL);
            pkm_halo_finish(&uh);
        }
    }
    pkm_halo_free(&uh);
    if (st == PK_OK && !pl->half) {
        st = pkm_halo_make(&pl->halo, pl->comm, &pl->s, one, one + R, 1, sp * sizeof(double));
    } else if (st == PK_OK) { /* one plane from below (up), one from above (down) */
        int *zero = calloc((size_t)R, sizeof *zero);
        size_t hb = pl->vol3 * 12 * sizeof(double);
        st = zero ? PK_OK : PK_ENOMEM;
        if (st == PK_OK)
            st = pkm_halo_make(&pl->up, pl->comm, &pl->s, one, zero, 1, hb);
        if (st == PK_OK)
            st = pkm_halo_make(&pl->down, pl->comm, &pl->s, zero, one, 1, hb);
        for (int k = 0; st == PK_OK && k < 4; k++)
            if (!(pl->face[k] = pkm_alloc64(hb)))
                st = PK_ENOMEM;
        if (st == PK_ENOMEM)
            pkm_set_error("out of memory for the half-spinor faces");
        free(zero);
    }
    free(one);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        pk_dslash_params lp = pl->p;
        lp.t = (int)W;
        st = pk_dslash_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL, &li);
        if (st != PK_OK)
            pkm_set_error("local dslash plan (t %d): %s", lp.t, pk_last_error());
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, 1, 1);
    }
    *plan = pl;
    return PK_OK;
fail:
    ds_free(pl);
    return st;
}

/* The two spin components that fix (1 + sign gamma_t) psi on each site of a plane:
 * psi0 + sign psi2, psi1 + sign psi3, colours and re / im as they are. */
static void project(const double *psi, size_t vol3, int sign, double *half) {
    for (size_t i = 0; i < vol3; i++) {
        const double *p = psi + i * 24;
        double *h = half + i * 12;
        for (int k = 0; k < 12; k++) /* spins 0, 1 (12 reals) against spins 2, 3 */
            h[k] = sign > 0 ? p[k] + p[k + 12] : p[k] - p[k + 12];
    }
}

/* A halo plane of spinors (h0, h1, 0, 0) from the received halves. */
static void rebuild(const double *half, size_t vol3, double *psi) {
    for (size_t i = 0; i < vol3; i++) {
        memcpy(psi + i * 24, half + i * 12, 12 * sizeof(double));
        memset(psi + i * 24 + 12, 0, 12 * sizeof(double));
    }
}

PK_MPI_API pk_status pk_mpi_dslash_plan_execute(pk_mpi_dslash_plan *pl, const double *psi,
                                                double *chi, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_dslash_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, 1, 1);
    size_t sp = pl->vol3 * 24, slab = (size_t)pl->L * sp;
    pk_status st = PK_OK;
    if (!psi || !chi) {
        pkm_set_error("pk_mpi_dslash_plan_execute: %s must not be NULL", !psi ? "psi" : "chi");
        st = PK_ENULL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    double t1 = pkm_now();
    memcpy(pl->psi + sp, psi, slab * sizeof(double));
    if (!pl->half) {
        pkm_src src = {psi, NULL, NULL, 0};
        pkm_halo_start(&pl->halo, &src, pl->psi, pl->psi + ((size_t)pl->L + 1) * sp, info);
        pkm_halo_finish(&pl->halo);
    } else {
        project(pl->psi + (size_t)pl->L * sp, pl->vol3, 1, pl->face[0]); /* top plane */
        project(pl->psi + sp, pl->vol3, -1, pl->face[1]);                /* bottom plane */
        pkm_src up = {pl->face[0], NULL, pl->face[0], 1};
        pkm_src down = {pl->face[1], pl->face[1], NULL, 1};
        pkm_halo_start(&pl->up, &up, pl->face[2], NULL, info);
        pkm_halo_start(&pl->down, &down, NULL, pl->face[3], info);
        pkm_halo_finish(&pl->up);
        pkm_halo_finish(&pl->down);
        rebuild(pl->face[2], pl->vol3, pl->psi);
        rebuild(pl->face[3], pl->vol3, pl->psi + ((size_t)pl->L + 1) * sp);
    }
    double t2 = pkm_now();
    st = pk_dslash_plan_execute(pl->local, pl->u, pl->psi, pl->chi, &info->local);
    if (st != PK_OK)
        pkm_set_error("local dslash: %s", pk_last_error());
    else
        memmove(chi, pl->chi + sp, slab * sizeof(double)); /* chi may be psi */
    double t3 = pkm_now();
    info->comm_s += t2 - t1;
    info->compute_s += t3 - t2;
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API void pk_mpi_dslash_plan_destroy(pk_mpi_dslash_plan *pl) {
    if (pl)
        ds_free(pl);
}
