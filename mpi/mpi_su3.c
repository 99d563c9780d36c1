/* mpi_su3.c - distributed su3: sites split in blocks, no communication.  Each site's chi
 * depends on its own u and psi only, so a rank runs its sites with a local plan of the same
 * layout; the plan is there for the symmetry of the API and for the agreed errors.  The
 * result is bitwise the single-process one for the same variant. */
#include "mpi_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct pk_mpi_su3_plan {
    MPI_Comm comm;
    pkm_slabs s;
    pk_context *ctx;
    int owned;
    pk_su3_plan *local;
};

static void su3_free(pk_mpi_su3_plan *pl) {
    pk_su3_plan_destroy(pl->local);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

PK_MPI_API pk_status pk_mpi_su3_plan_create(pk_mpi_su3_plan **plan, MPI_Comm comm, pk_context *ctx,
                                            const pk_su3_params *p, const pk_mpi_options *opt,
                                            pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    if (!plan || !p) {
        pkm_set_error("pk_mpi_su3_plan_create: %s must not be NULL", !plan ? "plan" : "p");
        st = PK_ENULL;
    } else if (p->nv > (size_t)INT_MAX) {
        pkm_set_error("nv: the distributed plan splits at most %d sites, got %zu", INT_MAX, p->nv);
        st = PK_ESIZE;
    }
    pk_mpi_su3_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    MPI_Comm_dup(comm, &pl->comm);
    pk_su3_params g = *p;
    st = pkm_same_as_root(pl->comm, &g, sizeof g, "su3 parameters (nv, layout, nw)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, (int)p->nv, opt, "nv sites");
    if (st != PK_OK) {
        su3_free(pl);
        return st;
    }
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    if (st == PK_OK) {
        pk_su3_params lp = *p;
        lp.nv = (size_t)(pl->s.i1[pl->s.rank] - pl->s.i0[pl->s.rank]);
        st = pk_su3_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL, &li);
        if (st != PK_OK)
            pkm_set_error("local su3 plan (%zu sites): %s", lp.nv, pk_last_error());
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK) {
        su3_free(pl);
        return st;
    }
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, 0, 0);
    }
    *plan = pl;
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_su3_plan_execute(pk_mpi_su3_plan *pl, const double *u,
                                             const double *psi, double *chi, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_su3_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, 0, 0);
    pk_status st = pk_su3_plan_execute(pl->local, u, psi, chi, &info->local);
    if (st != PK_OK)
        pkm_set_error("local su3: %s", pk_last_error());
    info->compute_s = pkm_now() - t0;
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API void pk_mpi_su3_plan_destroy(pk_mpi_su3_plan *pl) {
    if (pl)
        su3_free(pl);
}
