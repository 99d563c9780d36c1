/* mpi_diffusion3d.c - distributed diffusion3d: slabs along z, halo planes every `depth` steps.
 *
 * Each rank keeps its slab in `ext`, with room for lo halo planes below and hi above
 * (lo = min(depth, i0), hi = min(depth, nz - i1): none beyond a wall).  A chunk of c <= depth
 * steps:
 *  - no overlap: receive the halo planes into ext (sent from the neighbours' slabs), then the
 *    local kernel runs c steps on the whole ext (lo + L + hi planes).  A halo plane next to
 *    ext's edge is stepped with the wall rule, so after c steps the outer c planes of ext are
 *    wrong, and only those: ext holds depth >= c halo planes, so the slab is exact.
 *  - overlap: copy the slab's 2 depth bottom and top planes into two small buffers (bs: lo
 *    halo planes + 2 depth, ts: 2 depth + hi), post the receives (into bs and ts) and the
 *    sends (from those copies), run c steps on the slab itself (the interior plan: its planes
 *    depth .. L - depth are exact after c steps), wait, run c steps on bs and ts, and copy
 *    their exact middle planes (the slab's first and last depth) back.  Costs 2 x 3 depth
 *    planes of extra stepping per chunk and the copies; it needs every slab to hold at
 *    least 2 depth planes.
 * Every plane is computed from the same neighbours in the same order as in one process, so
 * the result is bitwise that of the same variant on the whole field.  On the host backends
 * the local plans run with pk_diffusion3d_plan_execute on host memory (the core's in-place
 * execute).  On a device backend (OpenCL, CUDA) without overlap the field stays on the
 * device from the upload to the download: a chunk downloads only the boundary planes the
 * neighbours need (pk_diffusion3d_plan_download_planes), exchanges them through host memory
 * and uploads only the received halo planes (on CUDA through the backend's pinned staging)
 * before the local plan_run; before, the whole lo + L + hi planes went up and down every
 * chunk. */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct pk_mpi_diffusion3d_plan {
    MPI_Comm comm;
    pkm_slabs s;
    pkm_halo halo;
    pk_context *ctx;
    int owned;
    pk_diffusion3d_params p; /* global */
    int L, lo, hi, depth, overlap;
    size_t plane; /* floats per plane */
    float *ext;   /* no overlap: lo + L + hi planes; overlap: L planes */
    float *bs, *ts;
    pk_diffusion3d_plan *whole, *inner, *bot, *top;
    int uploaded;
    int device;   /* the local plan runs on a device: the field stays there (header) */
    int resident; /* device: the device holds the current field (ext's own planes stale) */
    char variant[32];
};

static float *own_rows(const pk_mpi_diffusion3d_plan *pl) {
    return pl->ext + (size_t)(pl->overlap ? 0 : pl->lo) * pl->plane;
}

/* A local plan of nz planes with the global plane's shape and coefficients. */
static pk_status local_plan(pk_mpi_diffusion3d_plan *pl, int nz, const char *variant,
                            pk_diffusion3d_plan **out, pk_run_info *info) {
    pk_diffusion3d_params lp = pl->p;
    lp.nz = nz;
    lp.count = pl->depth;
    pk_status st = pk_diffusion3d_plan_create(out, pl->ctx, &lp, variant, info);
    if (st != PK_OK)
        pkm_set_error("local diffusion3d plan (nz %d): %s", nz, pk_last_error());
    return st;
}

static void free_local(pk_mpi_diffusion3d_plan *pl) {
    pk_diffusion3d_plan_destroy(pl->whole);
    pk_diffusion3d_plan_destroy(pl->inner);
    pk_diffusion3d_plan_destroy(pl->bot);
    pk_diffusion3d_plan_destroy(pl->top);
    pl->whole = pl->inner = pl->bot = pl->top = NULL;
    free(pl->ext);
    free(pl->bs);
    free(pl->ts);
    pl->ext = pl->bs = pl->ts = NULL;
}

PK_MPI_API pk_status pk_mpi_diffusion3d_plan_create(pk_mpi_diffusion3d_plan **plan, MPI_Comm comm,
                                                    pk_context *ctx,
                                                    const pk_diffusion3d_params *p,
                                                    const pk_mpi_options *opt, pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (plan)
        *plan = NULL;
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    if (opt)
        o = *opt;
    /* local argument checks, then the agreement before anything collective */
    if (!plan || !p) {
        pkm_set_error("pk_mpi_diffusion3d_plan_create: %s must not be NULL", !plan ? "plan" : "p");
        st = PK_ENULL;
    } else if (o.depth < 0 || o.depth > 64) {
        pkm_set_error("depth: must be 0 (the default) or 1 .. 64, got %d", o.depth);
        st = PK_EINVAL;
    } else if (o.overlap < -1 || o.overlap > 1) {
        pkm_set_error("overlap: must be -1 (the default), 0 or 1, got %d", o.overlap);
        st = PK_EINVAL;
    }
    pk_mpi_diffusion3d_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->halo.row_type = MPI_DATATYPE_NULL;
    MPI_Comm_dup(comm, &pl->comm);
    pl->p = *p;
    pl->p.count = 0; /* count is execute's, not the plan's: not compared */
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p, "diffusion3d parameters (nx, ny, nz, "
                                                          "coefficients)");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->s, pl->comm, p->nz, &o, "nz planes");
    if (st != PK_OK)
        goto fail;
    int R = pl->s.nranks;
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    /* the default depth: two passes of the omp-tb variant auto picks on CPUs (2 x the
     * context's diffusion3d.tb_depth, 12 at its default: an even number of passes lands in
     * place, and a pass shallower than the others is one more sweep of memory for few steps:
     * docs/SCALING.md), the smallest over the ranks, at most a quarter of the thinnest slab,
     * so that the halo planes stepped twice stay few */
    char tb[16];
    int dflt = pk_context_get_param(pl->ctx, "diffusion3d.tb_depth", tb, sizeof tb, NULL) ==
                       PK_OK
                   ? 2 * atoi(tb)
                   : 8;
    if (dflt < 2)
        dflt = 2;
    MPI_Allreduce(MPI_IN_PLACE, &dflt, 1, MPI_INT, MPI_MIN, pl->comm);
    pl->depth = pkm_depth(&pl->s, o.depth, dflt);
    pl->L = pl->s.i1[pl->s.rank] - pl->s.i0[pl->s.rank];
    pl->plane = (size_t)p->nx * (size_t)p->ny;
    int *lo = malloc(2 * (size_t)R * sizeof *lo);
    st = lo ? PK_OK : PK_ENOMEM;
    if (!lo)
        pkm_set_error("out of memory");
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    int *hi = lo + R, all_thick = 1;
    for (int r = 0; r < R; r++) {
        int i0 = pl->s.i0[r], i1 = pl->s.i1[r];
        lo[r] = i0 < pl->depth ? i0 : pl->depth;
        hi[r] = p->nz - i1 < pl->depth ? p->nz - i1 : pl->depth;
        if (i1 - i0 < 2 * pl->depth)
            all_thick = 0;
    }
    pl->lo = lo[pl->s.rank];
    pl->hi = hi[pl->s.rank];
    /* the same decision on every rank: it depends on the gathered slabs only */
    pl->overlap = o.overlap == 1 && all_thick && R > 1;
    st = pkm_halo_make(&pl->halo, pl->comm, &pl->s, lo, hi, 0, pl->plane * sizeof(float));
    free(lo);
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    /* the local plans: the first resolves the variant, the others take it, so that all of a
     * rank's planes run the same code */
    pk_run_info li;
    memset(&li, 0, sizeof li);
    size_t nplanes = (size_t)(pl->overlap ? pl->L : pl->lo + pl->L + pl->hi);
    if (st == PK_OK) {
        if (pl->overlap)
            st = local_plan(pl, pl->L, o.variant, &pl->inner, &li);
        else
            st = local_plan(pl, pl->lo + pl->L + pl->hi, o.variant, &pl->whole, &li);
    }
    if (st == PK_OK) {
        snprintf(pl->variant, sizeof pl->variant, "%s", li.variant);
        if (pl->overlap && pl->lo)
            st = local_plan(pl, pl->lo + 2 * pl->depth, pl->variant, &pl->bot, NULL);
        if (st == PK_OK && pl->overlap && pl->hi)
            st = local_plan(pl, 2 * pl->depth + pl->hi, pl->variant, &pl->top, NULL);
    }
    if (st == PK_OK) {
        pl->ext = malloc(nplanes * pl->plane * sizeof(float));
        if (pl->overlap && pl->lo)
            pl->bs = malloc((size_t)(pl->lo + 2 * pl->depth) * pl->plane * sizeof(float));
        if (pl->overlap && pl->hi)
            pl->ts = malloc((size_t)(2 * pl->depth + pl->hi) * pl->plane * sizeof(float));
        if (!pl->ext || (pl->overlap && pl->lo && !pl->bs) || (pl->overlap && pl->hi && !pl->ts)) {
            pkm_set_error("out of memory for the slab and its halos (%zu planes of %zu floats)",
                          nplanes, pl->plane);
            st = PK_ENOMEM;
        }
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    pl->device = !pl->overlap &&
                 (li.backend == PK_BACKEND_OPENCL || li.backend == PK_BACKEND_CUDA);
    if (info) {
        info->local = li;
        pkm_info_begin(info, &pl->s, pl->lo, pl->hi);
        info->depth = pl->depth;
        info->overlap = pl->overlap;
    }
    *plan = pl;
    return PK_OK;
fail:
    free_local(pl);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
    return st;
}

PK_MPI_API pk_status pk_mpi_diffusion3d_plan_upload(pk_mpi_diffusion3d_plan *pl, const float *f) {
    if (!pl || !f) {
        pkm_set_error("pk_mpi_diffusion3d_plan_upload: %s must not be NULL", !pl ? "plan" : "f");
        return PK_ENULL;
    }
    memcpy(own_rows(pl), f, (size_t)pl->L * pl->plane * sizeof(float));
    pl->uploaded = 1;
    pl->resident = 0; /* the device's copy is older now */
    return PK_OK;
}

PK_MPI_API pk_status pk_mpi_diffusion3d_plan_download(pk_mpi_diffusion3d_plan *pl, float *f) {
    if (!pl || !f) {
        pkm_set_error("pk_mpi_diffusion3d_plan_download: %s must not be NULL", !pl ? "plan" : "f");
        return PK_ENULL;
    }
    if (!pl->uploaded) {
        pkm_set_error("pk_mpi_diffusion3d_plan_download: no field (upload first; a failed run "
                      "leaves none)");
        return PK_ESTATE;
    }
    if (pl->resident) { /* the own planes straight from the device */
        pk_status st = pk_diffusion3d_plan_download_planes(pl->whole, pl->lo, pl->lo + pl->L, f);
        if (st != PK_OK)
            pkm_set_error("local diffusion3d download: %s", pk_last_error());
        return st;
    }
    memcpy(f, own_rows(pl), (size_t)pl->L * pl->plane * sizeof(float));
    return PK_OK;
}

/* c steps without overlap on a device-resident field (header): the boundary planes the
 * neighbours need down, the exchange on the host, the halo planes up, the local run. */
static pk_status chunk_device(pk_mpi_diffusion3d_plan *pl, int c, pk_mpi_info *info,
                              pk_run_info *li) {
    const size_t P = pl->plane;
    const int L = pl->L, lo = pl->lo, hi = pl->hi, d = pl->depth < L ? pl->depth : L;
    float *own = own_rows(pl);
    double t0 = pkm_now();
    pk_status st = PK_OK;
    if (!pl->resident) /* the whole ext once (its halo planes are replaced below) */
        st = pk_diffusion3d_plan_upload(pl->whole, pl->ext);
    pl->resident = st == PK_OK;
    /* the planes a neighbour reads: the first d (below one exists: lo > 0), the last d */
    if (st == PK_OK && lo > 0)
        st = pk_diffusion3d_plan_download_planes(pl->whole, lo, lo + d, own);
    if (st == PK_OK && hi > 0)
        st = pk_diffusion3d_plan_download_planes(pl->whole, lo + L - d, lo + L,
                                                 own + (size_t)(L - d) * P);
    if (st != PK_OK) { /* the exchange below still runs: its partners wait for it */
        pkm_set_error("local diffusion3d planes: %s", pk_last_error());
        pl->resident = 0;
    }
    pkm_src src = {own, NULL, NULL, 0};
    pkm_halo_start(&pl->halo, &src, pl->ext, own + (size_t)L * P, info);
    pkm_halo_finish(&pl->halo);
    if (st == PK_OK && lo > 0)
        st = pk_diffusion3d_plan_upload_planes(pl->whole, 0, lo, pl->ext);
    if (st == PK_OK && hi > 0)
        st = pk_diffusion3d_plan_upload_planes(pl->whole, lo + L, lo + L + hi,
                                               own + (size_t)L * P);
    double t1 = pkm_now();
    if (st == PK_OK)
        st = pk_diffusion3d_plan_run(pl->whole, c, li);
    if (st != PK_OK) {
        pkm_set_error("local diffusion3d: %s", pk_last_error());
        pl->resident = 0;
    }
    if (info) {
        info->comm_s += t1 - t0; /* the planes' transfers with the exchange */
        info->compute_s += pkm_now() - t1;
    }
    return st;
}

/* c steps without overlap: exchange into ext, run the whole ext. */
static pk_status chunk_plain(pk_mpi_diffusion3d_plan *pl, int c, pk_mpi_info *info,
                             pk_run_info *li) {
    double t0 = pkm_now();
    float *own = own_rows(pl);
    pkm_src src = {own, NULL, NULL, 0};
    pkm_halo_start(&pl->halo, &src, pl->ext, own + (size_t)pl->L * pl->plane, info);
    pkm_halo_finish(&pl->halo);
    double t1 = pkm_now();
    pk_status st = pk_diffusion3d_plan_execute(pl->whole, pl->ext, c, li);
    if (st != PK_OK)
        pkm_set_error("local diffusion3d: %s", pk_last_error());
    if (info) {
        info->comm_s += t1 - t0;
        info->compute_s += pkm_now() - t1;
    }
    return st;
}

/* c steps with the interior overlapping the exchange. */
static pk_status chunk_overlap(pk_mpi_diffusion3d_plan *pl, int c, pk_mpi_info *info,
                               pk_run_info *li) {
    size_t P = pl->plane;
    int d = pl->depth, L = pl->L;
    float *own = pl->ext;
    double t0 = pkm_now();
    if (pl->bs)
        memcpy(pl->bs + (size_t)pl->lo * P, own, (size_t)2 * d * P * sizeof(float));
    if (pl->ts)
        memcpy(pl->ts, own + (size_t)(L - 2 * d) * P, (size_t)2 * d * P * sizeof(float));
    pkm_src src = {own, pl->bs ? pl->bs + (size_t)pl->lo * P : NULL, pl->ts, 2 * d};
    pkm_halo_start(&pl->halo, &src, pl->bs, pl->ts ? pl->ts + (size_t)2 * d * P : NULL, info);
    double t1 = pkm_now();
    pk_status st = pk_diffusion3d_plan_execute(pl->inner, own, c, li);
    double t2 = pkm_now();
    pkm_halo_finish(&pl->halo);
    double t3 = pkm_now();
    if (st == PK_OK && pl->bot) {
        st = pk_diffusion3d_plan_execute(pl->bot, pl->bs, c, NULL);
        if (st == PK_OK)
            memcpy(own, pl->bs + (size_t)pl->lo * P, (size_t)d * P * sizeof(float));
    }
    if (st == PK_OK && pl->top) {
        st = pk_diffusion3d_plan_execute(pl->top, pl->ts, c, NULL);
        if (st == PK_OK)
            memcpy(own + (size_t)(L - d) * P, pl->ts + (size_t)d * P, (size_t)d * P * sizeof(float));
    }
    if (st != PK_OK)
        pkm_set_error("local diffusion3d: %s", pk_last_error());
    if (info) {
        info->comm_s += (t1 - t0) + (t3 - t2);
        info->compute_s += (t2 - t1) + (pkm_now() - t3);
    }
    return st;
}

PK_MPI_API pk_status pk_mpi_diffusion3d_plan_run(pk_mpi_diffusion3d_plan *pl, int count,
                                                 pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_diffusion3d_plan_run: plan must not be NULL (every rank needs its "
                      "plan: this rank cannot take part)");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = pkm_info_run(info, &spare, &pl->s, pl->lo, pl->hi);
    info->depth = pl->depth;
    info->overlap = pl->overlap;
    pk_status st = PK_OK;
    if (count < 0) {
        pkm_set_error("count: must be >= 0, got %d", count);
        st = PK_EINVAL;
    } else if (!pl->uploaded) {
        pkm_set_error("pk_mpi_diffusion3d_plan_run: no field (upload first; a failed run leaves "
                      "none)");
        st = PK_ESTATE;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    /* one rank has no halos: all the steps in one local call (the local variant's own
     * temporal blocking then spans them all) */
    int chunk = pl->s.nranks == 1 ? count : pl->depth;
    for (int done = 0; st == PK_OK && done < count;) {
        int c = count - done < chunk ? count - done : chunk;
        pk_status lst = pl->overlap  ? chunk_overlap(pl, c, info, &info->local)
                        : pl->device ? chunk_device(pl, c, info, &info->local)
                                     : chunk_plain(pl, c, info, &info->local);
        st = pkm_agree(pl->comm, lst, NULL, &info->agree_s);
        done += c;
    }
    if (st != PK_OK && count > 0)
        pl->uploaded = pl->resident = 0;
    info->wall_s = pkm_now() - t0;
    return st;
}

PK_MPI_API pk_status pk_mpi_diffusion3d_plan_execute(pk_mpi_diffusion3d_plan *pl, float *f,
                                                     int count, pk_mpi_info *info) {
    pk_status st = PK_OK;
    if (!pl) {
        pkm_set_error("pk_mpi_diffusion3d_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    if (!f) {
        pkm_set_error("pk_mpi_diffusion3d_plan_execute: f must not be NULL");
        st = PK_ENULL;
    }
    if (st != PK_OK) /* matches the agreement that starts the other ranks' runs */
        return pkm_agree(pl->comm, st, NULL, info ? &info->agree_s : NULL);
    double t0 = pkm_now();
    pk_mpi_diffusion3d_plan_upload(pl, f);
    double t1 = pkm_now();
    pk_status rs = pk_mpi_diffusion3d_plan_run(pl, count, info);
    if (rs != PK_OK)
        return rs;
    double t2 = pkm_now();
    st = pk_mpi_diffusion3d_plan_download(pl, f);
    pl->uploaded = pl->resident = 0;
    if (info) {
        info->compute_s += (t1 - t0) + (pkm_now() - t2); /* the copies in and out */
        info->wall_s = pkm_now() - t0;
    }
    return st;
}

PK_MPI_API void pk_mpi_diffusion3d_plan_destroy(pk_mpi_diffusion3d_plan *pl) {
    if (!pl)
        return;
    free_local(pl);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    pkm_halo_free(&pl->halo);
    pkm_slabs_free(&pl->s);
    MPI_Comm_free(&pl->comm);
    free(pl);
}
