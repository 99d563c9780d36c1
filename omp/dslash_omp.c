/* dslash_omp.c - the OpenMP backend's dslash variants (docs/KERNELS.md 4c):
 *
 *   omp-vnode  the virtual-node ("hopping vector-friendly") layout: the lattice split into W
 *              sub-lattices along one direction, lane w of a vector holding sub-lattice w,
 *              so that every load of the stencil is a whole aligned vector and the only
 *              shuffles are the lane rotations across the sub-lattice boundary (the kernel
 *              template in lib/dslash_host.h, GCC/Clang vector extensions).  W is the ISA's
 *              width in doubles, chosen at plan creation: AVX-512 8, AVX2 4, baseline
 *              (SSE2, non-x86) 2; PORTKERN_DS_ISA=avx512|avx2|generic lowers it.  The split
 *              direction is the first of t, z, y, x whose extent W divides (t first: its
 *              boundary is a whole time slice, so the rotate-or-not branch is per row); when
 *              none does, the largest W' = W/2, W/4, ..., 1 that divides one (an all-odd
 *              lattice runs 1 lane: the same code on scalars).  A plan of a range of
 *              t- or z-planes (pk_dslash_params t_begin, t_end, z_begin, z_end) never splits
 *              along a ranged direction, so that its rows are whole rows of the lattice: it
 *              runs the range's rows, converts only the box of rows they read (psi's t in
 *              [t_begin - 1, t_end] and z in [z_begin - 1, z_end], u's but the last of each,
 *              mod the extents) and brings back only the range's chi.  psi and u are converted into
 *              lanes on upload and chi back on download (host plan hooks): a plan runs any
 *              number of times on the converted fields.
 *   omp        site-parallel spin-projected kernel on lexicographic data (lib/dslash_serial.c,
 *              pk_ds_rows), the baseline.
 *
 * Both split rows (t, z, y) of the lattice statically in contiguous ranges, one per thread;
 * the plan's fields are first touched with the same split.
 */
#include "dslash_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif


/* ---- the kernel instantiations (template in lib/dslash_host.h) ---------------------------- */
#ifdef PK_X86
#define DS_VNODE_W 8
#define DS_VN(name) name##_w8
#define DS_VN_TARGET __attribute__((target("avx512f,avx2,fma")))
#include "dslash_host.h"
#undef DS_VNODE_W
#undef DS_VN
#undef DS_VN_TARGET

#define DS_VNODE_W 4
#define DS_VN(name) name##_w4
#define DS_VN_TARGET __attribute__((target("avx2,fma")))
#include "dslash_host.h"
#undef DS_VNODE_W
#undef DS_VN
#undef DS_VN_TARGET
#endif

#define DS_VNODE_W 2
#define DS_VN(name) name##_w2
#define DS_VN_TARGET
#include "dslash_host.h"
#undef DS_VNODE_W
#undef DS_VN
#undef DS_VN_TARGET

#define DS_VNODE_W 1
#define DS_VN(name) name##_w1
#define DS_VN_TARGET
#include "dslash_host.h"
#undef DS_VNODE_W
#undef DS_VN
#undef DS_VN_TARGET

/* ---- ISA and lanes ------------------------------------------------------------------------ */
static const char *const ds_isa_name[] = {"generic", "avx2", "avx512f"};

/* The CPU's best, lowered by dslash.isa (a bad environment value is an error). */
static pk_status ds_isa(const pk_ds_desc *d, int *isa)
{
    return pk_simd_level(d->tuning, PK_PARAM_DSLASH_ISA, pk_cpu_simd(), isa);
}

/* The kernel of `lanes` lanes (lanes <= the ISA's width, so its target is available). */
static pk_ds_vnode_fn ds_vnode_kernel(int lanes)
{
    switch (lanes) {
#ifdef PK_X86
    case 8: return ds_vnode_rows_w8;
    case 4: return ds_vnode_rows_w4;
#endif
    case 2: return ds_vnode_rows_w2;
    default: return ds_vnode_rows_w1;
    }
}

/* The ISA the kernel of `lanes` lanes is compiled for. */
static const char *ds_lanes_isa(int lanes)
{
    return ds_isa_name[lanes == 8 ? PK_SIMD_AVX512 : lanes == 4 ? PK_SIMD_AVX2 : PK_SIMD_GENERIC];
}

/* Whether the plan computes a range of t-planes (z-planes) only (pk_dslash_params). */
static int ds_t_ranged(const pk_ds_desc *d) { return d->t0 != 0 || d->t1 != d->dims[3]; }
static int ds_z_ranged(const pk_ds_desc *d) { return d->z0 != 0 || d->z1 != d->dims[2]; }

/* Lanes and split direction: the widest W' <= W dividing an extent, t preferred (never a
 * ranged direction: the range's rows must be whole rows of the lattice). */
static void ds_vnode_geometry(const pk_ds_desc *d, int width, pk_ds_vnode *g)
{
    static const int order[4] = {3, 2, 1, 0};
    memset(g, 0, sizeof *g);
    g->lanes = 1;
    g->split = 3;
    for (int w = width; w > 1 && g->lanes == 1; w /= 2)
        for (int i = 0; i < 4; ++i)
            if (d->dims[order[i]] % w == 0 && !(order[i] == 3 && ds_t_ranged(d)) &&
                !(order[i] == 2 && ds_z_ranged(d))) {
                g->lanes = w;
                g->split = order[i];
                break;
            }
    memcpy(g->lr, d->dims, sizeof g->lr);
    g->lr[g->split] /= g->lanes;
    g->vo = d->volume / (size_t)g->lanes;
    g->recon12 = d->recon12;
    g->diag = 1.0 / (2.0 * d->kappa);
}

/* ---- threads ------------------------------------------------------------------------------ */
/* Rows [*r0, *r1) of the calling thread: one split for the kernel, the packing and the
 * first touch, so each thread sweeps the pages it placed. */
static void ds_share(size_t rows, size_t *r0, size_t *r1)
{
    const int t = pk_thread_num(), nt = pk_team_size();
    *r0 = pk_share_lo(rows, t, nt);
    *r1 = pk_share_lo(rows, t + 1, nt);
}

/* Rows of the lattice the kernel walks: (t, z, y) of the reduced lattice for omp-vnode. */
static size_t ds_rows(const pk_ds_host_plan *h)
{
    const int *L = h->vnode_rows ? h->vn.lr : h->d.dims;
    return (size_t)L[1] * (size_t)L[2] * (size_t)L[3];
}

/* The rows the kernel computes (the range's box, or all), in the rows of the lattice it
 * walks (the reduced one for omp-vnode). */
static pk_ds_box ds_box(const pk_ds_host_plan *h)
{
    return pk_ds_box_of(&h->d, h->vnode_rows ? h->vn.lr : h->d.dims);
}

/* ---- the vnode layout --------------------------------------------------------------------- */
/* Lexicographic site of lane w of outer site o. */
static size_t ds_vnode_site(const pk_ds_vnode *g, const int *L, size_t o, int w)
{
    size_t c[4];
    for (int mu = 0; mu < 4; ++mu) {
        c[mu] = o % (size_t)g->lr[mu];
        o /= (size_t)g->lr[mu];
    }
    c[g->split] += (size_t)w * (size_t)g->lr[g->split];
    return ((c[3] * (size_t)L[2] + c[2]) * (size_t)L[1] + c[1]) * (size_t)L[0] + c[0];
}

/* Sites of lane w lie w * ds_lane_stride sites after lane 0's, and the outer sites of one row
 * (x) are consecutive in every lane: a row of the vnode layout ([o][k][w], n doubles per
 * site) is the transpose of W lexicographic runs of n X doubles, one per lane. */
static size_t ds_lane_stride(const pk_ds_vnode *g, const int *L)
{
    size_t s = (size_t)g->lr[g->split];
    for (int mu = 0; mu < g->split; ++mu) s *= (size_t)L[mu];
    return s;
}

static void ds_vnode_pack(pk_ds_host_plan *h, const double *u, const double *psi)
{
    const pk_ds_vnode *g = &h->vn;
    const int W = g->lanes, ld = h->d.recon12 ? 12 : 18, *L = h->d.dims;
    const size_t X = (size_t)g->lr[0], V = h->d.volume;
    const size_t lane = ds_lane_stride(g, L);
    /* A range reads psi's t-planes [t0 - 1, t1] and z-planes [z0 - 1, z1] (mod the reduced
     * extents; all of them where the range is whole or nearly), u's but the last of each
     * (the backward hops' links sit one plane below): the box of those rows. */
    const pk_ds_box b = ds_box(h);
    const int pt = b.nt + 2 < (size_t)g->lr[3], pz = b.nz + 2 < b.zr; /* part of t, z */
    const size_t T = (size_t)g->lr[3], Yr = b.yr, Zr = b.zr;
    const size_t ft = pt ? (b.t0 + T - 1) % T : 0, nt = pt ? b.nt + 2 : T;
    const size_t fz = pz ? (b.z0 + Zr - 1) % Zr : 0, nz = pz ? b.nz + 2 : Zr;
#pragma omp parallel num_threads(h->nt)
    {
        size_t k0, k1;
        ds_share(nt * nz * Yr, &k0, &k1);
        for (size_t k = k0; k < k1; ++k) {
            const size_t it = k / (nz * Yr), iz = k / Yr % nz;
            const size_t r = (((ft + it) % T) * Zr + (fz + iz) % Zr) * Yr + k % Yr;
            const size_t o = r * X, s = ds_vnode_site(g, L, o, 0);
            pk_transpose_f64(psi + 24 * s, 24 * lane, h->psi + 24 * W * o, (size_t)W, (size_t)W,
                             24 * X);
            /* u NULL: the links stay (plan_execute_psi) */
            if (!u || (pt && it == nt - 1) || (pz && iz == nz - 1)) continue;
            for (size_t mu = 0; mu < 4; ++mu)
                pk_transpose_f64(u + ld * (mu * V + s), ld * lane,
                                 h->u + (size_t)ld * W * (mu * g->vo + o), (size_t)W, (size_t)W,
                                 ld * X);
        }
    }
}

static void ds_vnode_unpack(const pk_ds_host_plan *h, double *chi)
{
    const pk_ds_vnode *g = &h->vn;
    const int W = g->lanes, *L = h->d.dims;
    const size_t X = (size_t)g->lr[0], lane = ds_lane_stride(g, L);
    const pk_ds_box b = ds_box(h);
#pragma omp parallel num_threads(h->nt)
    {
        size_t k0, k1;
        ds_share(pk_ds_box_rows(&b), &k0, &k1);
        for (size_t k = k0, r, len; k < k1; k += len) {
            len = pk_ds_box_run(&b, k, k1, &r);
            for (size_t o = r * X; o < (r + len) * X; o += X)
                pk_transpose_f64(h->chi + 24 * W * o, (size_t)W,
                                 chi + 24 * ds_vnode_site(g, L, o, 0), 24 * lane, 24 * X,
                                 (size_t)W);
        }
    }
}

/* ---- plans -------------------------------------------------------------------------------- */
/* Zero the fields with the kernel's split of rows at the first upload, so that each
 * thread's pages are first touched by that thread (NUMA placement). */
static void ds_first_touch(pk_ds_host_plan *h)
{
    const size_t rows = ds_rows(h), per_row_s = h->spinor_len / rows;
    const size_t per_row_u = h->u_len / 4 / rows;
#pragma omp parallel num_threads(h->nt)
    {
        size_t r0, r1;
        ds_share(rows, &r0, &r1);
        memset(h->psi + r0 * per_row_s, 0, (r1 - r0) * per_row_s * sizeof(double));
        memset(h->chi + r0 * per_row_s, 0, (r1 - r0) * per_row_s * sizeof(double));
        for (size_t mu = 0; mu < 4; ++mu)
            memset(h->u + (mu * rows + r0) * per_row_u, 0,
                   (r1 - r0) * per_row_u * sizeof(double));
    }
}

pk_status pk_omp_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    const int vnode = desc->variant && !strcmp(desc->variant, "omp-vnode");
    pk_ds_vnode g;
    int isa = PK_SIMD_GENERIC;
    if (vnode) {
        static const int width[] = {2, 4, 8}; /* per DS_ISA_* */
        PK_TRY(ds_isa(desc, &isa));
        ds_vnode_geometry(desc, width[isa], &g);
    }
    pk_ds_host_plan *h;
    PK_TRY(pk_ds_host_create(desc, desc->u_doubles, desc->spinor_doubles, &h));
    h->ops = &pk_openmp_ds_ops;
#ifdef PK_HAVE_OPENMP
    h->nt = desc->threads > 0 ? desc->threads : omp_get_max_threads();
#endif
    if (vnode) {
        static const char *const dir = "xyzt";
        h->vn = g;
        h->vnode_rows = ds_vnode_kernel(g.lanes);
        h->pack = ds_vnode_pack;
        h->unpack = ds_vnode_unpack;
        const int full = isa == PK_SIMD_AVX512 ? 8 : isa == PK_SIMD_AVX2 ? 4 : 2;
        snprintf(h->note, sizeof h->note, "omp-vnode: %d lane%s along %c (%s kernel)%s", g.lanes,
                 g.lanes == 1 ? "" : "s", dir[g.split], ds_lanes_isa(g.lanes),
                 g.lanes < full ? (ds_t_ranged(desc) || ds_z_ranged(desc)
                                       ? "; fewer lanes than the ISA's width: no extent but a "
                                         "ranged one is a multiple of it"
                                       : "; fewer lanes than the ISA's width: no extent is a "
                                         "multiple of it")
                                : "");
    }
    h->first_touch = ds_first_touch;
    *impl = h;
    return PK_OK;
}

pk_status pk_omp_ds_run(void *impl, double *kernel_seconds)
{
    pk_ds_host_plan *h = impl;
    const pk_ds_box b = ds_box(h);
    const double t0 = pk_now();
#pragma omp parallel num_threads(h->nt)
    {
        size_t k0, k1;
        ds_share(pk_ds_box_rows(&b), &k0, &k1);
        for (size_t k = k0, r, len; k < k1; k += len) {
            len = pk_ds_box_run(&b, k, k1, &r);
            if (h->vnode_rows)
                h->vnode_rows(&h->vn, h->u, h->psi, h->chi, r, r + len);
            else
                pk_ds_rows(&h->d, h->u, h->psi, h->chi, r, r + len);
        }
    }
    *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

/* The dslash kernel family on this backend (lib/internal.h, pk_ds_ops). */
const pk_ds_ops pk_openmp_ds_ops = {
    .variants = "omp-vnode,omp",
    .create = pk_omp_ds_create,
    .upload = pk_ds_host_upload,
    .run = pk_omp_ds_run,
    .download = pk_ds_host_download,
    .destroy = pk_ds_host_destroy,
    .execute = pk_ds_host_execute,
};
