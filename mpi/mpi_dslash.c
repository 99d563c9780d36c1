/* mpi_dslash.c - distributed dslash: the lattice split along t, then z (QUDA's order), full
 * or spin-projected half spinors in the halo.
 *
 * The ranks form a grid of pt x pz (pz = pk_mpi_options.ranks_z, 1 by default): rank r has
 * t-coordinate r / pz and z-coordinate r % pz, holds the t-planes [t0, t1) of its t-coordinate
 * (the block rule over pt, or the caller's slab, the same along a row of the grid) and the
 * z-planes [z0, z1) of its z-coordinate (the block rule over pz).  chi at (t, z) reads psi at
 * t +- 1 and z +- 1 (and x, y +- 1, all local), the links U_mu at the site and U_t, U_z one
 * plane below (the backward hops: U_mu(n - mu)^+).  A rank runs the local dslash on a
 * widened block: along an axis split over several ranks its L planes with one halo plane on
 * each side (from the neighbours, periodic), along an axis it holds whole the L planes alone
 * (the local call's periodic wrap is then the global one).  The local call wraps only into
 * the halo planes, whose outputs are dropped; corners (a halo in t and in z at once) are never
 * read by an own site (no hop is diagonal) and stay zero.  An own site sees the same
 * neighbours, links and order of terms as in one process: bitwise.  The links' halos (all
 * four mu, both sides: real links, so recon12 rebuilds honest rows there too) are exchanged
 * once at plan creation, psi's every execute.
 *
 * Overlapped (t or z split over several ranks; pk_mpi_options.overlap not 0): along each
 * split axis the block is laid out with its own planes first, then the halo plane above
 * (from the rank above), then the one below (the local call's periodic wrap makes them the
 * own planes' neighbours).  An execute copies the caller's psi into the own planes, posts
 * the receives into the halo planes and the sends of its face planes (t and z at once),
 * computes the interior sites (own t-planes [1, Lt - 1) x own z-planes [1, Lz - 1) along
 * the split axes; all planes along a whole one), which read no halo, while the faces
 * travel, waits, then the boundary: the t-planes 0 and Lt - 1 (all own z), and the z-planes
 * 0 and Lz - 1 of the interior t-planes.  Up to five local plans on boxes of the block
 * (pk_dslash_params t_begin, t_end, z_begin, z_end); no halo site computed.  t-slabs (z
 * whole): chi written straight into the caller's chi, nothing copied back; with a z split
 * chi is copied out of the widened block.  With overlap 0, or a backend that refuses ranges
 * (OpenCL, CUDA), the block is laid out with the halo planes on both sides of the own ones
 * and run whole (all halo planes computed and dropped, chi copied out).
 *
 * Half spinors (pk_mpi_options.half): an own site uses the plane below along mu only through
 * (1 + gamma_mu) psi and the plane above through (1 - gamma_mu) psi, each fixed by two spin
 * components (docs/KERNELS.md 4c, DeGrand-Rossi):
 *   t: (1 +- gamma_t) psi = (a, b, +-a, +-b),      a = psi0 +- psi2,   b = psi1 +- psi3;
 *   z: (1 +- gamma_z) psi = (a, b, -+i a, +-i b),  a = psi0 +- i psi2, b = psi1 -+ i psi3.
 * A rank sends (a, b) of its top planes up and of its bottom planes down (12 doubles a site)
 * and rebuilds each halo site as (a, b, 0, 0), whose projection is the same (a + 0: exact).
 * The kernel then projects the rebuilt spinor, or multiplies it whole: the sums differ from
 * one process by the order of roundings only, within docs/KERNELS.md 4c (tests/test_mpi.c;
 * docs/SCALING.md says what was seen). */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_T_UP = 1, TAG_T_DOWN, TAG_Z_UP, TAG_Z_DOWN };

struct pk_mpi_dslash_plan {
    MPI_Comm comm;         /* the caller's, duplicated */
    MPI_Comm tcomm, zcomm; /* a column of the grid (same z-coordinate), a row (same t) */
    pkm_slabs s, sz;       /* t-slabs along tcomm, z-slabs along zcomm */
    int rank, nranks, pz;
    int half;
    int lt, lz;            /* own t- and z-planes */
    int wt, wz, ot, oz;    /* the widened block's extents, the own planes' offset in it */
    int wlo, whi;          /* t-index of the halo plane below and above in the block */
    int zlo, zhi;          /* z-index of the halo plane below and above in the block */
    int ovl;               /* the overlapped path (header): part[] runs, local is NULL */
    int t_lo, t_hi, z_lo, z_hi; /* neighbours in tcomm / zcomm (-1: the axis is whole) */
    size_t vol2;           /* sites per (z, t) plane: x y */
    double *face[8];       /* half: t sent up, sent down, received below, above; z the same */
    pk_context *ctx;
    int owned;
    pk_dslash_params p;
    double *u, *psi, *chi; /* the widened block: u [4][wt][wz][vol2][18], psi, chi
                              [wt][wz][vol2][24]; NULL on a rank alone (the caller's psi
                              and chi are used, the links kept in u) */
    pk_dslash_plan *local;
    pk_dslash_plan *part[5]; /* overlapped: the interior, then the boundary: t-planes 0 and
                                lt - 1, z-planes 0 and lz - 1 of the interior t-planes (NULL
                                where empty) */
};

enum { NPART = 5 };

static void ds_free(pk_mpi_dslash_plan *pl) {
    pk_dslash_plan_destroy(pl->local);
    for (int k = 0; k < NPART; k++)
        pk_dslash_plan_destroy(pl->part[k]);
    free(pl->u);
    free(pl->psi);
    free(pl->chi);
    if (pl->owned)
        pk_context_destroy(pl->ctx);
    for (int k = 0; k < 8; k++)
        free(pl->face[k]);
    pkm_slabs_free(&pl->s);
    pkm_slabs_free(&pl->sz);
    if (pl->tcomm != MPI_COMM_NULL)
        MPI_Comm_free(&pl->tcomm);
    if (pl->zcomm != MPI_COMM_NULL)
        MPI_Comm_free(&pl->zcomm);
    MPI_Comm_free(&pl->comm);
    free(pl);
}

/* Offset (in sites) of plane (t, z) of the widened block. */
static size_t wsite(const pk_mpi_dslash_plan *pl, int t, int z) {
    return ((size_t)t * (size_t)pl->wz + (size_t)z) * pl->vol2;
}

/* The two spin components (12 reals) that fix (1 + sign gamma_mu) psi, for `sites` sites
 * of psi at stride 24 (mu: 't' or 'z'; the header's formulas). */
static void project(const double *psi, size_t sites, char mu, int sign, double *half) {
    const double s = sign;
    for (size_t i = 0; i < sites; i++) {
        const double *p = psi + i * 24;
        double *h = half + i * 12;
        if (mu == 't') {
            for (int k = 0; k < 12; k++) /* spins 0, 1 against spins 2, 3 */
                h[k] = sign > 0 ? p[k] + p[k + 12] : p[k] - p[k + 12];
        } else {
            for (int c = 0; c < 3; c++) { /* a = psi0 + s i psi2, b = psi1 - s i psi3 */
                const double *p0 = p + 2 * c, *p1 = p + 6 + 2 * c, *p2 = p + 12 + 2 * c,
                             *p3 = p + 18 + 2 * c;
                h[2 * c] = p0[0] - s * p2[1];
                h[2 * c + 1] = p0[1] + s * p2[0];
                h[6 + 2 * c] = p1[0] + s * p3[1];
                h[6 + 2 * c + 1] = p1[1] - s * p3[0];
            }
        }
    }
}

/* Halo spinors (h0, h1, 0, 0) of `sites` sites from the received halves. */
static void rebuild(const double *half, size_t sites, double *psi) {
    for (size_t i = 0; i < sites; i++) {
        memcpy(psi + i * 24, half + i * 12, 12 * sizeof(double));
        memset(psi + i * 24 + 12, 0, 12 * sizeof(double));
    }
}

/* The t-faces of a rank's planes posted (4 requests appended to req): bot and top are its
 * first and last own t-planes (ts sites of nd doubles), lo and hi the halo planes they come
 * into (full only).  Full: the planes themselves.  Half (psi, nd 24): the projected faces,
 * sent from face[0] and face[1], received into face[2] and face[3] (finish_t rebuilds them
 * after the wait). */
static void post_t(const pk_mpi_dslash_plan *pl, const double *bot, const double *top,
                   double *lo, double *hi, size_t ts, int nd, int half, MPI_Request *req,
                   int *n) {
    double *const *f = pl->face;
    const int count = (int)(ts * (size_t)(half ? 12 : nd));
    if (half) {
        project(top, ts, 't', 1, f[0]); /* top: up */
        project(bot, ts, 't', -1, f[1]); /* bottom: down */
    }
    MPI_Irecv(half ? f[2] : lo, count, MPI_DOUBLE, pl->t_lo, TAG_T_UP, pl->tcomm, &req[(*n)++]);
    MPI_Irecv(half ? f[3] : hi, count, MPI_DOUBLE, pl->t_hi, TAG_T_DOWN, pl->tcomm,
              &req[(*n)++]);
    MPI_Isend(half ? f[1] : bot, count, MPI_DOUBLE, pl->t_lo, TAG_T_DOWN, pl->tcomm,
              &req[(*n)++]);
    MPI_Isend(half ? f[0] : top, count, MPI_DOUBLE, pl->t_hi, TAG_T_UP, pl->tcomm,
              &req[(*n)++]);
}

/* After post_t's requests completed: half faces rebuilt into the halo planes. */
static void finish_t(const pk_mpi_dslash_plan *pl, double *lo, double *hi, size_t ts,
                     int half) {
    if (!half)
        return;
    rebuild(pl->face[2], ts, lo);
    rebuild(pl->face[3], ts, hi);
}

/* The rank's own block src [lt][lz][vol2][nd] into the own planes of the widened w. */
static void copy_in(const pk_mpi_dslash_plan *pl, const double *src, double *w, int nd) {
    const size_t tp = (size_t)pl->lz * pl->vol2 * (size_t)nd; /* doubles of an own t-plane */
    for (int t = 0; t < pl->lt; t++)
        memcpy(w + wsite(pl, t + pl->ot, pl->oz) * nd, src + (size_t)t * tp, tp * sizeof *w);
}

/* The z-faces of every own t-plane of src [lt][lz][vol2][nd] posted (4 requests appended to
 * req; no-op without a z split): full, one strided message a side straight into w's z-halo
 * planes (ty[2]: its datatypes, freed by finish_z); half (psi, nd 24), the projected faces
 * from face[4] and face[5] into face[6] and face[7]. */
static void post_z(const pk_mpi_dslash_plan *pl, const double *src, double *w, int nd,
                   int half, MPI_Request *req, int *n, MPI_Datatype ty[2]) {
    ty[0] = ty[1] = MPI_DATATYPE_NULL;
    if (pl->z_lo < 0)
        return;
    const size_t zs = pl->vol2, zp = zs * (size_t)nd, tp = (size_t)pl->lz * zp;
    if (half) {
        double *const *f = pl->face;
        const int count = (int)((size_t)pl->lt * zs * 12); /* one z-plane per own t */
        for (int t = 0; t < pl->lt; t++) {
            const double *plane = src + (size_t)t * tp;
            project(plane + (size_t)(pl->lz - 1) * zp, zs, 'z', 1, f[4] + t * zs * 12);
            project(plane, zs, 'z', -1, f[5] + t * zs * 12);
        }
        MPI_Irecv(f[6], count, MPI_DOUBLE, pl->z_lo, TAG_Z_UP, pl->zcomm, &req[(*n)++]);
        MPI_Irecv(f[7], count, MPI_DOUBLE, pl->z_hi, TAG_Z_DOWN, pl->zcomm, &req[(*n)++]);
        MPI_Isend(f[4], count, MPI_DOUBLE, pl->z_hi, TAG_Z_UP, pl->zcomm, &req[(*n)++]);
        MPI_Isend(f[5], count, MPI_DOUBLE, pl->z_lo, TAG_Z_DOWN, pl->zcomm, &req[(*n)++]);
        return;
    }
    MPI_Type_create_hvector(pl->lt, (int)zp, (MPI_Aint)(tp * sizeof(double)), MPI_DOUBLE,
                            &ty[0]);
    MPI_Type_create_hvector(pl->lt, (int)zp, (MPI_Aint)((size_t)pl->wz * zp * sizeof(double)),
                            MPI_DOUBLE, &ty[1]);
    MPI_Type_commit(&ty[0]);
    MPI_Type_commit(&ty[1]);
    MPI_Irecv(w + wsite(pl, pl->ot, pl->zlo) * nd, 1, ty[1], pl->z_lo, TAG_Z_UP, pl->zcomm,
              &req[(*n)++]);
    MPI_Irecv(w + wsite(pl, pl->ot, pl->zhi) * nd, 1, ty[1], pl->z_hi, TAG_Z_DOWN, pl->zcomm,
              &req[(*n)++]);
    MPI_Isend(src, 1, ty[0], pl->z_lo, TAG_Z_DOWN, pl->zcomm, &req[(*n)++]);
    MPI_Isend(src + (size_t)(pl->lz - 1) * zp, 1, ty[0], pl->z_hi, TAG_Z_UP, pl->zcomm,
              &req[(*n)++]);
}

/* After post_z's requests completed: half faces rebuilt into w's z-halo planes, the full
 * path's datatypes freed. */
static void finish_z(const pk_mpi_dslash_plan *pl, double *w, int half, MPI_Datatype ty[2]) {
    const size_t zs = pl->vol2;
    for (int t = 0; half && pl->z_lo >= 0 && t < pl->lt; t++) {
        rebuild(pl->face[6] + t * zs * 12, zs, w + wsite(pl, t + pl->ot, pl->zlo) * 24);
        rebuild(pl->face[7] + t * zs * 12, zs, w + wsite(pl, t + pl->ot, pl->zhi) * 24);
    }
    for (int k = 0; k < 2; k++)
        if (ty[k] != MPI_DATATYPE_NULL)
            MPI_Type_free(&ty[k]);
}

/* Halo bytes (doubles sent, in bytes) and messages of one exchange into info: t faces when t
 * is split and `with_t`, z faces when z is. */
static void count_exchange(const pk_mpi_dslash_plan *pl, int nd, int half, int with_t,
                           pk_mpi_info *info) {
    if (!info)
        return;
    const double per = half ? 12.0 : (double)nd, face_t = (double)pl->lz * (double)pl->vol2,
                 face_z = (double)pl->lt * (double)pl->vol2;
    const int t = with_t && pl->t_lo >= 0, z = pl->z_lo >= 0;
    info->halo_bytes += 2.0 * per * sizeof(double) * ((t ? face_t : 0.0) + (z ? face_z : 0.0));
    info->messages += 2 * t + 2 * z;
    info->exchanges += 1;
}

/* The rank's own block src into the widened w, then the halo planes from the neighbours'
 * own blocks: along t the neighbours' own z-range (contiguous), along z every own t-plane's;
 * full spinors (or links, nd 18) or, with half, the projected faces rebuilt.  Counts halo
 * bytes and messages in info. */
static void exchange(const pk_mpi_dslash_plan *pl, const double *src, double *w, int nd,
                     int half, pk_mpi_info *info) {
    const size_t ts = (size_t)pl->lz * pl->vol2, tp = ts * (size_t)nd;
    copy_in(pl, src, w, nd);
    MPI_Request req[8];
    MPI_Datatype ty[2];
    int n = 0;
    /* the t-halo planes (none when t is whole: the indices lie past the block then) */
    double *lo = pl->t_lo >= 0 ? w + wsite(pl, pl->wlo, pl->oz) * nd : NULL;
    double *hi = pl->t_lo >= 0 ? w + wsite(pl, pl->whi, pl->oz) * nd : NULL;
    if (pl->t_lo >= 0) /* whole own-z planes: contiguous on both sides */
        post_t(pl, src, src + (size_t)(pl->lt - 1) * tp, lo, hi, ts, nd, half, req, &n);
    post_z(pl, src, w, nd, half, req, &n, ty);
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    if (pl->t_lo >= 0)
        finish_t(pl, lo, hi, ts, half);
    finish_z(pl, w, half, ty);
    count_exchange(pl, nd, half, 1, info);
}

/* This rank's info: the t-slab's fields, then the whole grid's rank and size, the z-range. */
static pk_mpi_info *ds_info(const pk_mpi_dslash_plan *pl, pk_mpi_info *info,
                            pk_mpi_info *spare) {
    const int h = pl->t_lo >= 0;
    if (info)
        pkm_info_begin(info, &pl->s, h, h);
    else
        info = pkm_info_run(NULL, spare, &pl->s, h, h);
    info->rank = pl->rank;
    info->nranks = pl->nranks;
    info->z0 = pl->sz.i0 ? pl->sz.i0[pl->sz.rank] : -1;
    info->z1 = pl->sz.i0 ? pl->sz.i1[pl->sz.rank] : -1;
    info->overlap = pl->part[0] != NULL; /* interior planes computed while the faces travel */
    return info;
}

/* Overlapped execute (header): psi into the own planes; the z faces (every own t-plane has
 * sites on them) and the t faces posted, the interior computed while they travel, the halos
 * awaited (and rebuilt from half spinors), the boundary computed.  t-slabs: chi written by
 * the local plans on their sites only, straight into the caller's; with a z split into the
 * widened chi, copied out at the end.  Times into info. */
static pk_status execute_overlapped(pk_mpi_dslash_plan *pl, const double *psi, double *chi,
                                    pk_mpi_info *info) {
    const size_t ts = (size_t)pl->lz * pl->vol2, tp = ts * 24; /* sites, doubles of a plane */
    double *w = pl->psi, *out = pl->pz > 1 ? pl->chi : chi;
    const double t1 = pkm_now();
    /* chi may be psi: the kernels and the t sends read the block's copy, the z sends the
     * caller's psi, which no kernel writes (with a z split chi is copied out after every
     * wait) */
    copy_in(pl, psi, w, 24);
    MPI_Request req[8];
    MPI_Datatype ty[2];
    int n = 0;
    post_z(pl, psi, w, 24, pl->half, req, &n, ty);
    double *lo = pl->t_lo >= 0 ? w + wsite(pl, pl->wlo, 0) * 24 : NULL;
    double *hi = pl->t_lo >= 0 ? w + wsite(pl, pl->whi, 0) * 24 : NULL;
    if (pl->t_lo >= 0)
        post_t(pl, w, w + wsite(pl, pl->lt - 1, 0) * 24, lo, hi, ts, 24, pl->half, req, &n);
    int done = 0; /* one pass of progress: the rendezvous handshakes start before the kernel */
    MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
    const double t2 = pkm_now();
    pk_status st = PK_OK;
    if (pl->part[0]) /* the interior: reads the own planes only */
        st = pk_dslash_plan_execute_psi(pl->part[0], w, out, &info->local);
    const double t3 = pkm_now();
    if (!done)
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    if (pl->t_lo >= 0)
        finish_t(pl, lo, hi, ts, pl->half);
    finish_z(pl, w, pl->half, ty);
    const double t4 = pkm_now();
    for (int k = 1; st == PK_OK && k < NPART; k++) /* the boundary */
        if (pl->part[k])
            st = pk_dslash_plan_execute_psi(pl->part[k], w, out, &info->local);
    const double t5 = pkm_now();
    for (int t = 0; st == PK_OK && pl->pz > 1 && t < pl->lt; t++)
        memcpy(chi + (size_t)t * tp, pl->chi + wsite(pl, t, 0) * 24, tp * sizeof *chi);
    count_exchange(pl, 24, pl->half, 1, info);
    info->comm_s += (t2 - t1) + (t4 - t3) + (pkm_now() - t5);
    info->compute_s += (t3 - t2) + (t5 - t4);
    return st;
}

/* The overlapped path's local plans (header): boxes of the (lt + 2t') x (lz + 2z') block
 * (t', z': 1 along a split axis), the interior first.  PK_EUNSUPPORTED from a backend that
 * refuses ranges (none created then). */
static pk_status create_parts(pk_mpi_dslash_plan *pl, const pk_mpi_options *opt,
                              pk_run_info *li) {
    const int ts = pl->t_lo >= 0, zs = pl->z_lo >= 0, lt = pl->lt, lz = pl->lz;
    const int it0 = ts, it1 = lt - ts, iz0 = zs, iz1 = lz - zs; /* the interior */
    const int box[NPART][4] = {{it0, it1, iz0, iz1},
                               {0, ts ? 1 : 0, 0, lz},
                               {lt - 1, ts && lt > 1 ? lt : 0, 0, lz},
                               {it0, zs ? it1 : 0, 0, 1},
                               {it0, zs && lz > 1 ? it1 : 0, lz - 1, lz}};
    pk_dslash_params lp = pl->p;
    lp.t = pl->wt;
    lp.z = pl->wz;
    pk_status st = PK_OK;
    for (int k = 0; st == PK_OK && k < NPART; k++) {
        if (box[k][1] <= box[k][0] || box[k][3] <= box[k][2])
            continue; /* empty: no interior (2 planes or fewer), one plane both boundaries */
        lp.t_begin = box[k][0];
        lp.t_end = box[k][1];
        lp.z_begin = box[k][2];
        lp.z_end = box[k][3];
        st = pk_dslash_plan_create(&pl->part[k], pl->ctx, &lp, opt ? opt->variant : NULL, li);
    }
    if (st != PK_OK) {
        for (int k = 0; k < NPART; k++) {
            pk_dslash_plan_destroy(pl->part[k]);
            pl->part[k] = NULL;
        }
    }
    return st;
}

PK_MPI_API pk_status pk_mpi_dslash_plan_create(pk_mpi_dslash_plan **plan, MPI_Comm comm,
                                               pk_context *ctx, const pk_dslash_params *p,
                                               const double *u, const pk_mpi_options *opt,
                                               pk_mpi_info *info) {
    pk_status st = PK_OK;
    int nranks = 1;
    MPI_Comm_size(comm, &nranks);
    const int pz = opt && opt->ranks_z > 1 ? opt->ranks_z : 1;
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
    } else if (p->t_begin != 0 || p->t_end != 0 || p->z_begin != 0 || p->z_end != 0) {
        pkm_set_error("t_begin, t_end, z_begin, z_end: a distributed dslash computes every "
                      "rank's planes (all must be 0), got %d, %d, %d, %d", p->t_begin,
                      p->t_end, p->z_begin, p->z_end);
        st = PK_EINVAL;
    } else if (opt && (opt->overlap < -1 || opt->overlap > 1)) {
        pkm_set_error("overlap: must be -1 (the default), 0 or 1, got %d", opt->overlap);
        st = PK_EINVAL;
    } else if (opt && opt->ranks_z < 0) {
        pkm_set_error("ranks_z: must be >= 0, got %d", opt->ranks_z);
        st = PK_EINVAL;
    } else if (nranks % pz != 0) {
        pkm_set_error("ranks_z: %d does not divide the %d ranks (a grid of t x z ranks)", pz,
                      nranks);
        st = PK_EINVAL;
    }
    pk_mpi_dslash_plan *pl = pkm_plan_new(comm, st, sizeof *pl, &st);
    if (!pl)
        return st;
    pl->tcomm = pl->zcomm = MPI_COMM_NULL;
    pl->half = opt && opt->half;
    pl->pz = pz;
    MPI_Comm_dup(comm, &pl->comm);
    MPI_Comm_rank(pl->comm, &pl->rank);
    pl->nranks = nranks;
    /* field by field: the struct's padding (after recon12) holds whatever the caller's had */
    memset(&pl->p, 0, sizeof pl->p);
    pl->p.x = p->x;
    pl->p.y = p->y;
    pl->p.z = p->z;
    pl->p.t = p->t;
    pl->p.kappa = p->kappa;
    pl->p.recon12 = p->recon12;
    int grid[3] = {pz, pl->half, opt ? opt->overlap : -1};
    /* both comparisons on every rank (collectives), then one agreement */
    st = pkm_same_as_root(pl->comm, &pl->p, sizeof pl->p,
                          "dslash parameters (x, y, z, t, kappa, recon12)");
    pk_status gst = pkm_same_as_root(pl->comm, grid, sizeof grid, "ranks_z, half and overlap");
    st = pkm_agree(pl->comm, st != PK_OK ? st : gst, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    /* the grid: a column (tcomm) holds one z-range and splits t, a row (zcomm) the reverse;
     * each slab rule agrees within its communicator, so with pz > 1 every step is agreed by
     * all ranks before the next one's collectives (pz = 1: tcomm is comm, in its order) */
    MPI_Comm_split(pl->comm, pl->rank % pz, pl->rank / pz, &pl->tcomm);
    MPI_Comm_split(pl->comm, pl->rank / pz, pl->rank % pz, &pl->zcomm);
    st = pkm_slabs_make(&pl->s, pl->tcomm, p->t, opt, "t planes");
    if (pz > 1)
        st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK)
        st = pkm_slabs_make(&pl->sz, pl->zcomm, p->z, NULL, "z planes");
    if (pz > 1)
        st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st == PK_OK && pz > 1) { /* a row holds one t-slab: the caller's must agree along it */
        int mine[2] = {pl->s.i0[pl->s.rank], pl->s.i1[pl->s.rank]};
        st = pkm_same_as_root(pl->zcomm, mine, sizeof mine,
                              "t-slabs of the ranks of one t-coordinate (ranks_z apart)");
        st = pkm_agree(pl->comm, st, NULL, NULL);
    }
    if (st != PK_OK)
        goto fail;
    const int pt = pl->s.nranks, ct = pl->s.rank, cz = pl->sz.rank;
    pl->lt = pl->s.i1[ct] - pl->s.i0[ct];
    pl->lz = pl->sz.i1[cz] - pl->sz.i0[cz];
    pl->t_lo = pt > 1 ? (ct + pt - 1) % pt : -1;
    pl->t_hi = pt > 1 ? (ct + 1) % pt : -1;
    pl->z_lo = pz > 1 ? (cz + pz - 1) % pz : -1;
    pl->z_hi = pz > 1 ? (cz + 1) % pz : -1;
    pl->vol2 = (size_t)p->x * (size_t)p->y;
    pl->wt = pl->lt + 2 * (pt > 1);
    pl->wz = pl->lz + 2 * (pz > 1);
    pk_run_info li;
    memset(&li, 0, sizeof li);
    st = pkm_context(ctx, &pl->ctx, &pl->owned);
    pl->ovl = (pt > 1 || pz > 1) && (!opt || opt->overlap != 0);
    if (st == PK_OK && pl->ovl) {
        st = create_parts(pl, opt, &li);
        if (st == PK_EUNSUPPORTED) { /* a device backend: the block whole */
            pl->ovl = 0;
            st = PK_OK;
        } else if (st != PK_OK) {
            pkm_set_error("local dslash plan (a box of the %d x %d block): %s", pl->wt, pl->wz,
                          pk_last_error());
        }
    }
    /* overlapped: own planes first, then the halo above, then the one below (header);
     * otherwise the halo planes on both sides */
    pl->ot = pt > 1 && !pl->ovl;
    pl->oz = pz > 1 && !pl->ovl;
    pl->wlo = pl->ovl ? pl->lt + 1 : 0;
    pl->whi = pl->ovl ? pl->lt : pl->wt - 1;
    pl->zlo = pl->ovl ? pl->lz + 1 : 0;
    pl->zhi = pl->ovl ? pl->lz : pl->wz - 1;
    const int alone = nranks == 1;
    const size_t wsites = (size_t)pl->wt * (size_t)pl->wz * pl->vol2;
    /* calloc: the corners of the widened block are never written and must read as numbers */
    pl->u = calloc(4 * wsites * 18, sizeof(double));
    if (!alone) {
        pl->psi = calloc(wsites * 24, sizeof(double));
        if (!pl->ovl || pz > 1) /* overlapped t-slabs: chi straight into the caller's */
            pl->chi = calloc(wsites * 24, sizeof(double));
    }
    int ok = st != PK_OK ||
             (pl->u && (alone || (pl->psi && ((pl->ovl && pz == 1) || pl->chi))));
    if (pl->half) {
        const size_t ts = (size_t)pl->lz * pl->vol2, zf = (size_t)pl->lt * pl->vol2;
        for (int k = 0; k < 8; k++)
            if (!(pl->face[k] = pkm_alloc64((k < 4 ? ts : zf) * 12 * sizeof(double))))
                ok = 0;
    }
    if (!ok) {
        pkm_set_error("out of memory for the block with its halo planes (%d x %d planes)",
                      pl->wt, pl->wz);
        st = PK_ENOMEM;
    }
    if (st == PK_OK && !pl->ovl) {
        pk_dslash_params lp = pl->p;
        lp.t = pl->wt;
        lp.z = pl->wz;
        st = pk_dslash_plan_create(&pl->local, pl->ctx, &lp, opt ? opt->variant : NULL, &li);
        if (st != PK_OK)
            pkm_set_error("local dslash plan (z %d, t %d): %s", lp.z, lp.t, pk_last_error());
    }
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    /* the links' halo planes, once, one exchange per direction mu */
    const size_t own = (size_t)pl->lt * (size_t)pl->lz * pl->vol2 * 18;
    for (int mu = 0; mu < 4; mu++)
        exchange(pl, u + (size_t)mu * own, pl->u + (size_t)mu * wsites * 18, 18, 0, NULL);
    /* the local plans keep the links resident (converted once: omp-vnode's lanes, recon12's
     * rows; on OpenCL and CUDA on the device), each execute then passes psi alone
     * (plan_execute_psi: a device plan uploads psi only); the upload's psi is a placeholder
     * (the block's psi, or the links' first doubles on a rank alone: any readable numbers),
     * replaced at every execute */
    for (int k = 0; k <= NPART && st == PK_OK; k++) {
        pk_dslash_plan *lp = k < NPART ? pl->part[k] : pl->local;
        if (lp)
            st = pk_dslash_plan_upload(lp, pl->u, pl->psi ? pl->psi : pl->u);
    }
    if (st != PK_OK)
        pkm_set_error("local dslash plan upload of the links: %s", pk_last_error());
    st = pkm_agree(pl->comm, st, NULL, NULL);
    if (st != PK_OK)
        goto fail;
    if (info) {
        info->local = li;
        ds_info(pl, info, NULL);
    }
    *plan = pl;
    return PK_OK;
fail:
    ds_free(pl);
    return st;
}

PK_MPI_API pk_status pk_mpi_dslash_plan_execute(pk_mpi_dslash_plan *pl, const double *psi,
                                                double *chi, pk_mpi_info *info) {
    if (!pl) {
        pkm_set_error("pk_mpi_dslash_plan_execute: plan must not be NULL");
        return PK_ENULL;
    }
    double t0 = pkm_now();
    pk_mpi_info spare;
    info = ds_info(pl, info, &spare);
    pk_status st = PK_OK;
    if (!psi || !chi) {
        pkm_set_error("pk_mpi_dslash_plan_execute: %s must not be NULL", !psi ? "psi" : "chi");
        st = PK_ENULL;
    }
    st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
    if (st != PK_OK)
        return st;
    double t1 = pkm_now(), t2 = t1;
    if (pl->ovl) {
        st = execute_overlapped(pl, psi, chi, info);
        if (st != PK_OK)
            pkm_set_error("local dslash: %s", pk_last_error());
        st = pkm_agree(pl->comm, st, NULL, &info->agree_s);
        info->wall_s = pkm_now() - t0;
        return st;
    }
    if (!pl->psi) { /* a rank alone: the whole lattice, on the caller's arrays */
        st = pk_dslash_plan_execute_psi(pl->local, psi, chi, &info->local);
    } else {
        exchange(pl, psi, pl->psi, 24, pl->half, info);
        t2 = pkm_now();
        st = pk_dslash_plan_execute_psi(pl->local, pl->psi, pl->chi, &info->local);
        const size_t tp = (size_t)pl->lz * pl->vol2 * 24;
        for (int t = 0; st == PK_OK && t < pl->lt; t++) /* chi may be psi: psi is copied */
            memcpy(chi + (size_t)t * tp, pl->chi + wsite(pl, t + pl->ot, pl->oz) * 24,
                   tp * sizeof *chi);
    }
    if (st != PK_OK)
        pkm_set_error("local dslash: %s", pk_last_error());
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
