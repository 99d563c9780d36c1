/* su3.c - the public su3 calls (docs/KERNELS.md section 4b): layout names and sizes, the layout
 * conversion (pk_su3_pack / pk_su3_unpack_spinor), validation, dispatch, the one-shot call,
 * plans, run info; also the host plan the serial and OpenMP backends share.
 *
 * The layout conversion runs on the host, outside the kernel's timing (info->layout_s):
 * backends receive u and psi already in the layout and return chi in it.  Layouts whose
 * psi and chi are AoS (aos, short, padded, recon12) hand the caller's psi and chi through
 * without a copy, and aos also u.  A call on the caller's AoS arrays (the one-shot call,
 * plan_execute) on serial or OpenMP converts block by block instead (pk_s3_host_execute_
 * canonical: each block converted, computed and converted back inside a core's L2), so it
 * moves the bytes of the AoS kernel and makes no whole-array copy; short, padded and recon12
 * convert nothing there (their kernels read the AoS links in place: pk_s3_desc.u_site).
 * Upload, run and download keep the whole arrays in the layout for a caller who iterates.
 *
 * Counting (the paper's metric): 264 flops and 528 bytes per site (u 144 + psi 192 + chi 192
 * bytes) in every layout, so that the GB/s of the layouts compare as the paper's figures
 * do; what a layout actually stores is in pk_su3_layout_sizes (short 512 B per site, padded
 * 576, recon12 480, vfo and hvfo 528 plus their padding sites).  The flops of rebuilding
 * u22 (short) or row 2 (recon12) are not counted. */
#include "su3_host.h"
#include "lattice_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S3_FLOPS_PER_SITE 264.0
#define S3_BYTES_PER_SITE 528.0

static const char *const s3_layout_names[PK_SU3_LAYOUTS] = {"aos", "short", "padded",
                                                            "vfo", "hvfo",  "recon12"};

struct pk_su3_plan {
    pk_choice c;
    pk_s3_desc d;
    pk_su3_params p;
    double flops, bytes;
    int uploaded, ran;
    pk_scratch stage[3]; /* u, psi and chi in the layout, kept for the next upload/execute */
};

const char *pk_su3_layout_name(int layout)
{
    return layout >= 0 && layout < PK_SU3_LAYOUTS ? s3_layout_names[layout] : NULL;
}

pk_status pk_su3_layout_from_name(const char *name, int *layout)
{
    pk_clear_error();
    PK_CHECK_NULL(name);
    PK_CHECK_NULL(layout);
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l)
        if (strcmp(name, s3_layout_names[l]) == 0) {
            *layout = l;
            return PK_OK;
        }
    return pk_fail(PK_EINVAL, "layout: unknown su3 layout '%s' (aos, short, padded, vfo, hvfo, "
                              "recon12)", name);
}

/* ---- validation and the layout's arithmetic (u's doubles per site: pk_s3_u_per_site) ---- */
static int s3_aos_spinor(int layout) { return layout != PK_SU3_VFO && layout != PK_SU3_HVFO; }

pk_status pk_s3_desc_init(pk_s3_desc *d, const pk_su3_params *p)
{
    memset(d, 0, sizeof *d);
    d->nv = p->nv;
    d->layout = p->layout;
    d->nw = p->layout == PK_SU3_HVFO ? (p->nw ? p->nw : PK_SU3_NW_DEFAULT) : 1;
    /* nv is checked against the widest per-site size first, so the padding (< 64 sites)
     * cannot overflow either. */
    PK_CHECK(p->nv <= SIZE_MAX / (2 * PK_S3_U_PADDED * sizeof(double)) - PK_SU3_NW_MAX,
             PK_EOVERFLOW, "nv: %zu sites overflow the arrays' bytes", p->nv);
    const size_t g = p->layout == PK_SU3_VFO ? PK_S3_VFO_ALIGN : (size_t)d->nw;
    d->nsites = (p->nv + g - 1) / g * g;
    d->u_doubles = d->nsites * (size_t)pk_s3_u_per_site(p->layout);
    d->spinor_doubles = d->nsites * PK_S3_SPINOR;
    return PK_OK;
}

static pk_status s3_validate(const pk_su3_params *p, pk_s3_desc *d)
{
    PK_CHECK_NULL(p);
    PK_CHECK(p->nv >= 1, PK_ESIZE, "nv: must be >= 1, got %zu", p->nv);
    PK_CHECK(p->layout >= 0 && p->layout < PK_SU3_LAYOUTS, PK_EINVAL,
             "layout: unknown su3 layout %d (0 .. %d: aos, short, padded, vfo, hvfo, recon12)",
             p->layout, PK_SU3_LAYOUTS - 1);
    PK_CHECK(p->nw >= 0 && p->nw <= PK_SU3_NW_MAX, PK_EINVAL,
             "nw: hvfo sites per block must be 1 .. %d (0: %d), got %d", PK_SU3_NW_MAX,
             PK_SU3_NW_DEFAULT, p->nw);
    return pk_s3_desc_init(d, p);
}

pk_status pk_su3_layout_sizes(const pk_su3_params *p, size_t *u_doubles, size_t *spinor_doubles)
{
    pk_clear_error();
    pk_s3_desc d;
    PK_TRY(s3_validate(p, &d));
    if (u_doubles) *u_doubles = d.u_doubles;
    if (spinor_doubles) *spinor_doubles = d.spinor_doubles;
    return PK_OK;
}

void pk_s3_span_of(const pk_s3_desc *d, int field, size_t s0, size_t s1, pk_s3_span *sp)
{
    const size_t per = field == 0 ? (size_t)pk_s3_u_per_site(d->layout) : PK_S3_SPINOR;
    if (d->layout == PK_SU3_VFO) { /* one row per complex element, 2 doubles per site */
        sp->rows = per / 2;
        sp->stride = 2 * d->nsites;
        sp->start = 2 * s0;
        sp->len = 2 * (s1 - s0);
    } else { /* sites (hvfo: whole blocks) are contiguous runs of per doubles each */
        sp->rows = 1;
        sp->stride = 0;
        sp->start = per * s0;
        sp->len = per * (s1 - s0);
    }
}

void pk_s3_share(const pk_s3_desc *d, int t, int nt, size_t *s0, size_t *s1)
{
    /* Granules: an hvfo block (nw x 192 B of chi), 4 vfo sites (64 B of each chi row); an
     * AoS site is 192 B of chi, 3 whole lines, already. */
    const size_t g = d->layout == PK_SU3_HVFO  ? (size_t)d->nw
                     : d->layout == PK_SU3_VFO ? PK_S3_VFO_ALIGN
                                               : 1;
    const size_t groups = d->nsites / g, q = groups / (size_t)nt, r = groups % (size_t)nt;
    const size_t ut = (size_t)t;
    *s0 = (q * ut + (ut < r ? ut : r)) * g;
    *s1 = (q * (ut + 1) + (ut + 1 < r ? ut + 1 : r)) * g;
}

/* ---- the layout conversion -------------------------------------------------------------- */
/* AoS (n doubles per site: u 18, spinors 24) to the layout or back, over the sites [s0, s1):
 * a permutation, so any split among threads gives the same bits.  Where each double goes is
 * pk_s3_index (lib/lattice_index.h), which the CUDA plan's device conversions call per
 * element; these loops walk the same offsets incrementally.  Every loop writes one
 * sequential stream and reads what it gathers from a few KiB that stay in L1 (an hvfo
 * block, a tile of vfo sites), which the prefetchers stream in order; except the packs with
 * walk_src, where the destination is itself a block in L1 (the one call's) and the source
 * comes from memory: they read the source site by site, in order (2-core EPYC, nv 3.9 M, 2
 * threads, one call, alternated: vfo 63-92 -> 52-55 ms, 1.42-1.76x -> 1.19-1.28x the plan;
 * hvfo, by single doubles instead of pk_transpose_f64's AVX2 blocks, 66-75 -> 52-54 ms,
 * 1.56-1.78x -> 1.23-1.26x; those blocks walked along the source measured no different). */
typedef struct s3_conv {
    const pk_s3_desc *d;
    const double *src; /* AoS when packing, the layout when unpacking */
    double *dst;
    int n;        /* doubles per AoS site */
    int m;        /* doubles per site in the layout (AoS-like layouts) */
    int pack;     /* AoS -> layout (padding sites and entries get zeros), else back */
    int walk_src; /* vfo and hvfo packs: read src in order (else write dst in order) */
} s3_conv;

/* vfo sites per pass over the rows: 16 (4 lines of each row) measured 1.7x faster than 64
 * or 256 (rows lie a multiple of 4 KiB apart: long runs alias) and than 4 */
#define S3_VFO_TILE 16

/* The conversions are transposes: hvfo of single doubles (packing through pk_transpose_f64's
 * AVX2 blocks: 34-38 GB/s in L2 against the scalar gather's 25, memcpy 75), vfo of complex
 * numbers, whole 16-byte moves already (2 x 2 blocks of them in AVX2, and 4 x 4 in AVX-512,
 * measured slower): dst[j ds + 2 i + v] = src[i ss + 2 j + v], in dst's order or, walk_src,
 * in src's. */
static void s3_transpose_complex(const double *src, size_t ss, double *dst, size_t ds, size_t r,
                                 size_t c, int walk_src)
{
    if (walk_src) {
        for (size_t i = 0; i < r; ++i)
            for (size_t j = 0; j < c; ++j) {
                dst[j * ds + 2 * i] = src[i * ss + 2 * j];
                dst[j * ds + 2 * i + 1] = src[i * ss + 2 * j + 1];
            }
        return;
    }
    for (size_t j = 0; j < c; ++j)
        for (size_t i = 0; i < r; ++i) {
            dst[j * ds + 2 * i] = src[i * ss + 2 * j];
            dst[j * ds + 2 * i + 1] = src[i * ss + 2 * j + 1];
        }
}

/* AoS u (18 doubles a site) to m doubles a site: the first m (short 16, recon12 12) or the 18
 * and 6 zeros (padded 24).  m a constant at each call, so the copies are whole vectors: a
 * memcpy and memset call per site packed in L2 at 1/2.2 (short), 1/2.4 (padded) and 1/1.25
 * (recon12) of this rate. */
static inline void s3_pack_u_sites(const double *src, double *dst, size_t s0, size_t s1, int m)
{
    for (size_t s = s0; s < s1; ++s) {
        const double *a = src + PK_S3_U_AOS * s;
        double *b = dst + (size_t)m * s;
        const int copied = m < PK_S3_U_AOS ? m : PK_S3_U_AOS;
        for (int k = 0; k < copied; ++k) b[k] = a[k];
        for (int k = copied; k < m; ++k) b[k] = 0.0;
    }
}

static void s3_conv_sites(void *arg, size_t s0, size_t s1)
{
    const s3_conv *c = arg;
    const pk_s3_desc *d = c->d;
    const size_t n = (size_t)c->n, m = (size_t)c->m, nv = d->nv;
    const double *src = c->src;
    double *dst = c->dst;
    if (d->layout == PK_SU3_HVFO) { /* block [n][nw] per nw sites; s0 starts one */
        const size_t nw = (size_t)d->nw;
        for (size_t base = s0; base < s1; base += nw) {
            const size_t live = nv - base < nw ? nv - base : nw; /* the rest is padding */
            if (c->pack) {
                double *blk = dst + n * base;
                if (c->walk_src) /* site by site: the source read in order */
                    for (size_t i = 0; i < live; ++i)
                        for (size_t j = 0; j < n; ++j) blk[j * nw + i] = src[n * (base + i) + j];
                else
                    pk_transpose_f64(src + n * base, n, blk, nw, live, n);
                for (size_t k = 0; k < n && live < nw; ++k)
                    memset(blk + k * nw + live, 0, (nw - live) * sizeof(double));
            } else {
                /* the AVX2 blocks: 7% faster on the one call's L1-sized blocks (the scalar
                 * loop, whose stores are sequential, had measured 20% faster in L2) */
                pk_transpose_f64(src + n * base, nw, dst + n * base, n, n, live);
            }
        }
    } else if (d->layout == PK_SU3_VFO) { /* row e: element e of every site, 2 doubles each */
        const size_t ns = d->nsites;
        for (size_t t0 = s0; t0 < s1; t0 += S3_VFO_TILE) {
            const size_t t1 = s1 - t0 < S3_VFO_TILE ? s1 : t0 + S3_VFO_TILE;
            if (c->pack) {
                const size_t live = t1 < nv ? t1 : nv; /* sites [live, t1) are padding */
                if (live > t0)
                    s3_transpose_complex(src + n * t0, n, dst + 2 * t0, 2 * ns, live - t0, n / 2,
                                         c->walk_src);
                for (size_t e = 0; e < n / 2 && live < t1; ++e) {
                    const size_t from = live > t0 ? live : t0;
                    memset(dst + 2 * e * ns + 2 * from, 0, 2 * (t1 - from) * sizeof(double));
                }
            } else {
                s3_transpose_complex(src + 2 * t0, 2 * ns, dst + n * t0, n, n / 2, t1 - t0,
                                     c->walk_src);
            }
        }
    } else if (m == n) { /* the same per-site size: one copy */
        memcpy(dst + n * s0, src + n * s0, (s1 - s0) * n * sizeof(double));
    } else if (m == 16) { /* packing u: short, recon12 (the first m doubles), padded */
        s3_pack_u_sites(src, dst, s0, s1, 16);
    } else if (m == 12) {
        s3_pack_u_sites(src, dst, s0, s1, 12);
    } else {
        s3_pack_u_sites(src, dst, s0, s1, 24);
    }
}

/* One conversion on d->threads (0: OpenMP's default).  Shares are whole hvfo blocks, vfo
 * granules (a 64-byte line of every row) or 8 AoS-like sites, so no two threads write one
 * line (but at an AoS share's ends). */
static void s3_convert(const pk_s3_desc *d, const double *src, double *dst, int n, int pack)
{
    const int m = n == PK_S3_SPINOR ? PK_S3_SPINOR : pk_s3_u_per_site(d->layout);
    const int sites_layout = d->layout == PK_SU3_VFO || d->layout == PK_SU3_HVFO;
    s3_conv c = {d, src, dst, n, m, pack, 0};
    /* packing writes the padding sites too; unpacking reads only the nv real ones */
    const size_t sites = sites_layout && pack ? d->nsites : d->nv;
    const size_t grain = d->layout == PK_SU3_HVFO  ? (size_t)d->nw
                         : d->layout == PK_SU3_VFO ? PK_S3_VFO_ALIGN
                                                   : 8;
    const size_t bytes = sizeof(double) * sites * (size_t)(n + (sites_layout ? n : m));
    pk_parallel_range(sites, grain, bytes, d->threads, s3_conv_sites, &c);
}

static void s3_pack_u(const pk_s3_desc *d, const double *u, double *ul)
{
    s3_convert(d, u, ul, PK_S3_U_AOS, 1);
}

static void s3_pack_spinor(const pk_s3_desc *d, const double *psi, double *pl)
{
    s3_convert(d, psi, pl, PK_S3_SPINOR, 1);
}

static void s3_unpack_spinor(const pk_s3_desc *d, const double *xl, double *chi)
{
    s3_convert(d, xl, chi, PK_S3_SPINOR, 0);
}

pk_status pk_su3_pack(const pk_su3_params *p, const double *u, const double *psi,
                      double *u_layout, double *psi_layout)
{
    pk_clear_error();
    pk_s3_desc d;
    PK_TRY(s3_validate(p, &d));
    PK_CHECK(u || !u_layout, PK_ENULL, "u: must not be NULL when u_layout is given");
    PK_CHECK(psi || !psi_layout, PK_ENULL, "psi: must not be NULL when psi_layout is given");
    if (u_layout) s3_pack_u(&d, u, u_layout);
    if (psi_layout) s3_pack_spinor(&d, psi, psi_layout);
    return PK_OK;
}

pk_status pk_su3_unpack_spinor(const pk_su3_params *p, const double *chi_layout, double *chi)
{
    pk_clear_error();
    pk_s3_desc d;
    PK_TRY(s3_validate(p, &d));
    PK_CHECK_NULL(chi_layout);
    PK_CHECK_NULL(chi);
    s3_unpack_spinor(&d, chi_layout, chi);
    return PK_OK;
}

/* Layout copies of the caller's arrays for a call: st->u / st->psi point to the caller's u /
 * psi when the layout stores them as they are, else to the staging arrays stage[0] / stage[1]
 * (the context's for a one-shot call, the plan's for a plan: kept between calls) holding the
 * conversion; *seconds gets its time. */
typedef struct s3_staged {
    const double *u, *psi;
    double *own_u, *own_psi;
} s3_staged;

static pk_status s3_stage(const pk_s3_desc *d, const double *u, const double *psi,
                          pk_scratch *stage, s3_staged *st, double *seconds)
{
    memset(st, 0, sizeof *st);
    st->u = u;
    st->psi = psi;
    if (d->layout != PK_SU3_AOS &&
        !(st->own_u = pk_scratch_get(&stage[0], d->u_doubles * sizeof(double))))
        return pk_fail(PK_ENOMEM, "su3: cannot allocate %zu doubles for u in layout %s",
                       d->u_doubles, s3_layout_names[d->layout]);
    if (!s3_aos_spinor(d->layout) &&
        !(st->own_psi = pk_scratch_get(&stage[1], d->spinor_doubles * sizeof(double))))
        return pk_fail(PK_ENOMEM, "su3: cannot allocate %zu doubles for psi in layout %s",
                       d->spinor_doubles, s3_layout_names[d->layout]);
    const double t0 = pk_now();
    if (st->own_u) {
        s3_pack_u(d, u, st->own_u);
        st->u = st->own_u;
    }
    if (st->own_psi) {
        s3_pack_spinor(d, psi, st->own_psi);
        st->psi = st->own_psi;
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* ---- the kernel class the dispatcher uses ----------------------------------------------- */
static pk_status s3_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_s3_desc d = *(const pk_s3_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_s3_ops *)kops)->create(state, device, &d, impl);
}

static void s3_destroy_on(const void *kops, void *impl)
{
    ((const pk_s3_ops *)kops)->destroy(impl);
}

static double s3_plan_bytes(const void *desc)
{
    const pk_s3_desc *d = desc;
    return 8.0 * ((double)d->u_doubles + 2.0 * (double)d->spinor_doubles);
}
static void s3_wisdom_key(const void *desc, char *key, size_t len)
{
    snprintf(key, len, "layout=%s", pk_su3_layout_name(((const pk_s3_desc *)desc)->layout));
}
static void s3_cost(const void *desc, pk_cost *c)
{
    const pk_s3_desc *d = desc;
    c->flops = S3_FLOPS_PER_SITE * (double)d->nv;
    c->bytes = S3_BYTES_PER_SITE * (double)d->nv;
    c->link_bytes = s3_plan_bytes(desc); /* u and psi in, chi out */
}
static const pk_kernel_class s3_class = {
    .name = "su3",
    .on = PK_KERNEL_ON(s3),
    .create = s3_create_on,
    .destroy = s3_destroy_on,
    .plan_bytes = s3_plan_bytes,
    .wisdom_key = s3_wisdom_key,
    .cost = s3_cost,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_s3_ops *s3_ops(const pk_choice *c) { return c->kops; }

const char *pk_su3_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&s3_class, backend);
}

/* ---- host plans (serial, OpenMP) -------------------------------------------------------- */
pk_status pk_s3_host_alloc(const pk_s3_desc *desc, pk_s3_host_plan **plan)
{
    pk_s3_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "su3: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant ? desc->variant : "", sizeof h->variant);
    h->d.variant = h->variant;
    *plan = h;
    return PK_OK;
}

pk_status pk_s3_host_arrays(pk_s3_host_plan *h, int *fresh)
{
    *fresh = !h->u;
    if (h->u) return PK_OK;
    h->u = pk_alloc_aligned(h->d.u_doubles * sizeof(double));
    h->psi = pk_alloc_aligned(h->d.spinor_doubles * sizeof(double));
    h->chi = pk_alloc_aligned(h->d.spinor_doubles * sizeof(double));
    if (h->u && h->psi && h->chi) return PK_OK;
    pk_free_aligned(h->u);
    pk_free_aligned(h->psi);
    pk_free_aligned(h->chi);
    h->u = h->psi = h->chi = NULL;
    return pk_fail(PK_ENOMEM, "su3: cannot allocate %zu + 2 x %zu doubles (u, psi, chi)",
                   h->d.u_doubles, h->d.spinor_doubles);
}

pk_status pk_s3_host_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    pk_s3_host_plan *h = impl;
    int fresh;
    PK_TRY(pk_s3_host_arrays(h, &fresh));
    const double t0 = pk_now();
    memcpy(h->u, u, h->d.u_doubles * sizeof(double));
    memcpy(h->psi, psi, h->d.spinor_doubles * sizeof(double));
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_s3_host_download(void *impl, double *chi, double *seconds)
{
    pk_s3_host_plan *h = impl;
    const double t0 = pk_now();
    memcpy(chi, h->chi, h->d.spinor_doubles * sizeof(double));
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_s3_host_execute(void *impl, const double *u, const double *psi, double *chi,
                             double *kernel_seconds, double *transfer_seconds)
{
    pk_s3_host_plan *h = impl;
    const uintptr_t u0 = (uintptr_t)u, p0 = (uintptr_t)psi, c0 = (uintptr_t)chi;
    const size_t ub = h->d.u_doubles * sizeof(double), sb = h->d.spinor_doubles * sizeof(double);
    const int apart = (c0 + sb <= u0 || u0 + ub <= c0) && (c0 + sb <= p0 || p0 + sb <= c0);
    const uintptr_t align = s3_aos_spinor(h->d.layout) ? sizeof(double) : 64;
    *kernel_seconds = 0;
    if (!apart || u0 % align != 0 || p0 % align != 0 || c0 % align != 0) {
        double up = 0, down = 0;
        PK_TRY(h->ops->upload(h, u, psi, &up));
        PK_TRY(h->ops->run(h, kernel_seconds));
        PK_TRY(h->ops->download(h, chi, &down));
        *transfer_seconds = up + down;
        return PK_OK;
    }
    double *own_u = h->u, *own_psi = h->psi, *own_chi = h->chi;
    h->u = (double *)u; /* read only */
    h->psi = (double *)psi;
    h->chi = chi;
    pk_status s = h->ops->run(h, kernel_seconds);
    h->u = own_u;
    h->psi = own_psi;
    h->chi = own_chi;
    *transfer_seconds = 0;
    return s;
}

/* ---- the host backends' fused call on AoS arrays ---------------------------------------- */
/* Bytes of one block's u, psi and chi in the layout.  AoS-spinor layouts (which read psi and
 * chi in place): half the 1-2 MiB L2 of current x86 cores.  vfo and hvfo, which pack u and
 * psi and unpack chi per block: a quarter of a 48 KiB L1d, so that the transposes' loads and
 * stores stay in L1; measured on the 2-core Zen 5 (one call at nv 3.9 M, 2 threads, medians
 * of 7, three rounds): 12 KiB blocks vfo 71-75 ms, hvfo 77-78 against 103-110 and 87-91 at
 * 512 KiB (64 KiB: 115-120 and 101-105; 8 KiB: 79-89). */
#define S3_FUSED_BYTES ((size_t)512 << 10)
#define S3_FUSED_PACKED_BYTES ((size_t)12 << 10)

typedef struct s3_fused {
    pk_s3_host_plan *h;
    const double *u, *psi; /* AoS, the caller's */
    double *chi;
    size_t block;          /* sites per block: a multiple of the layout's granule */
    size_t ud, sd;         /* doubles of u and of a spinor in one block's arrays */
    int stream;            /* chi streamed into the caller's array: AoS-spinor layouts by the
                              backend's kernel (its alignment decides), vfo and hvfo by the
                              unpacking (pk_stream_copy) */
    double kern_s;         /* thread 0's kernel time (one clock pair a block: vfo / hvfo
                              blocks are small) */
} s3_fused;

static size_t s3_round8(size_t n) { return (n + 7) / 8 * 8; }

static void s3_fused_range(void *arg, size_t lo, size_t hi)
{
    s3_fused *f = arg;
    const pk_s3_desc *d = &f->h->d;
    const int aos_spinor = s3_aos_spinor(d->layout), t0_times = pk_thread_num() == 0;
    double *ub = f->h->blocks + f->h->blocks_per_thread * (size_t)pk_thread_num();
    double *pb = ub + f->ud, *cb = pb + f->sd;
    const int m_u = pk_s3_u_per_site(d->layout);
    for (size_t b0 = lo; b0 < hi; b0 += f->block) {
        /* the block as a lattice of its own: the same layout and nw, its own padding */
        const pk_su3_params bp = {hi - b0 < f->block ? hi - b0 : f->block, d->layout, d->nw};
        pk_s3_desc bd;
        (void)pk_s3_desc_init(&bd, &bp); /* cannot fail: fewer sites than the plan's */
        bd.variant = d->variant;
        const size_t packed = aos_spinor ? bd.nv : bd.nsites; /* padding sites get zeros */
        /* AoS-like links are read in place (bd.u_site): packing them into the block measured
         * 1.25x the call (its own pass over u, then the kernel's over psi and chi) */
        const double *uk = f->u + PK_S3_U_AOS * b0;
        if (aos_spinor) {
            bd.u_site = PK_S3_U_AOS;
        } else {
            s3_conv cu = {&bd, uk, ub, PK_S3_U_AOS, m_u, 1, 1};
            s3_conv_sites(&cu, 0, packed);
            uk = ub;
        }
        const double *psi = f->psi + PK_S3_SPINOR * b0;
        double *chi = f->chi + PK_S3_SPINOR * b0;
        if (!aos_spinor) {
            s3_conv cp = {&bd, psi, pb, PK_S3_SPINOR, PK_S3_SPINOR, 1, 1};
            s3_conv_sites(&cp, 0, packed);
        }
        const double t = t0_times ? pk_now() : 0;
        f->h->range(f->h, &bd, uk, aos_spinor ? psi : pb, aos_spinor ? chi : cb, 0, bd.nsites,
                    aos_spinor && f->stream);
        if (t0_times) f->kern_s += pk_now() - t;
        if (!aos_spinor) {
            /* streaming: chi in AoS order into the psi block (spent), then out with
             * non-temporal stores, so that the caller's chi is not read for ownership */
            s3_conv cc = {&bd, cb, f->stream ? pb : chi, PK_S3_SPINOR, PK_S3_SPINOR, 0, 0};
            s3_conv_sites(&cc, 0, bd.nv);
            if (f->stream) pk_stream_copy(chi, pb, bd.nv * PK_S3_SPINOR * sizeof(double));
        }
    }
    if (f->stream && !aos_spinor) pk_stream_fence(); /* before the range's barrier */
}

/* The backend's aos_range on a thread's share of the sites. */
static void s3_aos_range(void *arg, size_t lo, size_t hi)
{
    const s3_fused *f = arg;
    f->h->aos_range(f->u, f->psi, f->chi, lo, hi, f->stream);
    if (f->stream) pk_stream_fence(); /* before the range's barrier */
}

pk_status pk_s3_host_execute_canonical(void *impl, const double *u, const double *psi, double *chi,
                                       double *kernel_seconds, double *layout_seconds)
{
    pk_s3_host_plan *h = impl;
    const pk_s3_desc *d = &h->d;
    if (h->aos_range) { /* conversions in registers: all of it is the kernel's time */
        const size_t site_bytes = sizeof(double) * (PK_S3_U_AOS + 2 * PK_S3_SPINOR);
        s3_fused f = {h, u, psi, chi, 0, 0, 0, h->stream, 0};
        const double t0 = pk_now();
        /* shares of whole groups (4 vfo sites, 8 hvfo) */
        pk_parallel_range(d->nv, 8, d->nv * site_bytes, h->nt, s3_aos_range, &f);
        *kernel_seconds = pk_now() - t0;
        *layout_seconds = 0;
        return PK_OK;
    }
    const size_t g = d->layout == PK_SU3_HVFO ? (size_t)d->nw
                     : d->layout == PK_SU3_VFO ? PK_S3_VFO_ALIGN
                                               : 8;
    const size_t m_u = (size_t)pk_s3_u_per_site(d->layout);
    const size_t site_bytes = sizeof(double) * (m_u + 2 * PK_S3_SPINOR);
    const size_t block_bytes = s3_aos_spinor(d->layout) ? S3_FUSED_BYTES : S3_FUSED_PACKED_BYTES;
    size_t block = block_bytes / site_bytes / g * g;
    if (block < g) block = g;
    /* AoS-like layouts read the caller's u in place: no u block */
    s3_fused f = {h, u, psi, chi, block, s3_aos_spinor(d->layout) ? 0 : s3_round8(block * m_u),
                  s3_round8(block * PK_S3_SPINOR), h->stream, 0};
    const int team = h->nt > 0 ? pk_host_threads(h->nt) : 1;
    const size_t per_thread = f.ud + 2 * f.sd;
    if (!h->blocks || h->blocks_per_thread != per_thread) {
        pk_free_aligned(h->blocks);
        h->blocks_per_thread = 0;
        h->blocks = pk_alloc_aligned((size_t)team * per_thread * sizeof(double));
        if (!h->blocks)
            return pk_fail(PK_ENOMEM, "su3: cannot allocate %d x %zu doubles of block arrays",
                           team, per_thread);
        h->blocks_per_thread = per_thread;
    }
    const double t0 = pk_now();
    pk_parallel_range(d->nv, block, d->nv * site_bytes, h->nt, s3_fused_range, &f);
    const double wall = pk_now() - t0;
    /* the wall split as thread 0's: its kernel time, the rest conversions (AoS-spinor layouts
     * convert nothing here: their links are read in place) */
    *kernel_seconds = s3_aos_spinor(d->layout) || f.kern_s > wall ? wall : f.kern_s;
    *layout_seconds = wall - *kernel_seconds;
    return PK_OK;
}

void pk_s3_host_destroy(void *impl)
{
    pk_s3_host_plan *h = impl;
    if (!h) return;
    pk_free_aligned(h->u);
    pk_free_aligned(h->psi);
    pk_free_aligned(h->chi);
    pk_free_aligned(h->blocks);
    free(h);
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct s3_oneshot {
    const double *u, *psi; /* in the layout */
    double *chi;           /* in the layout: the caller's chi or a staging array */
    int chi_overlaps;      /* the caller's chi overlaps its u or psi */
    size_t ubytes, sbytes; /* of u and of a spinor in the layout */
    double up, kern, down;
} s3_oneshot;

static pk_status s3_oneshot_work(pk_choice *c, void *arg)
{
    s3_oneshot *o = arg;
    const void *a[3] = {o->u, o->psi, o->chi};
    const size_t b[3] = {o->ubytes, o->sbytes, o->sbytes};
    /* on the arrays themselves: host memory on a host backend, device memory on CUDA */
    if (s3_ops(c)->execute && pk_choice_direct(c, a, b, 3)) {
        c->no_fallback |= o->chi_overlaps;
        return s3_ops(c)->execute(c->impl, o->u, o->psi, o->chi, &o->kern, &o->down);
    }
    PK_TRY(s3_ops(c)->upload(c->impl, o->u, o->psi, &o->up));
    PK_TRY(s3_ops(c)->run(c->impl, &o->kern));
    /* chi over u or psi: a download failing part way leaves no intact input to retry on */
    c->no_fallback |= o->chi_overlaps;
    return s3_ops(c)->download(c->impl, o->chi, &o->down);
}

static int s3_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return !(a0 + abytes <= b0 || b0 + bbytes <= a0);
}

/* Whether a call on the caller's AoS arrays goes to the backend's execute_canonical: never in
 * aos (it executes on them as they are); on a device backend when all three are device memory
 * of the plan's device (converted there); on a host backend (its fused blocks) when chi lies
 * apart from u and psi and every array is on a double's alignment.  Else the staged path. */
static int s3_canonical(const pk_choice *c, const pk_s3_desc *d, const double *u,
                        const double *psi, const double *chi)
{
    if (d->layout == PK_SU3_AOS || !s3_ops(c)->execute_canonical) return 0;
    const size_t ub = d->nv * PK_S3_U_AOS * sizeof(double);
    const size_t sb = d->nv * PK_S3_SPINOR * sizeof(double);
    if (c->ops && c->ops->memory)
        return pk_choice_memory(c, u, ub) == PK_MEM_DEVICE &&
               pk_choice_memory(c, psi, sb) == PK_MEM_DEVICE &&
               pk_choice_memory(c, chi, sb) == PK_MEM_DEVICE;
    const uintptr_t odd = ((uintptr_t)u | (uintptr_t)psi | (uintptr_t)chi) % sizeof(double);
    return !odd && !s3_overlap(chi, sb, u, ub) && !s3_overlap(chi, sb, psi, sb);
}

/* A call on the caller's AoS arrays: u and psi staged into the layout (s3_stage), chi the
 * caller's array or a staging one (vfo, hvfo), the work's arguments; then chi unpacked. */
typedef struct s3_call {
    s3_staged st;
    double *chi_l; /* chi in the layout: the caller's chi or an own array */
    double pack_s, unpack_s;
    s3_oneshot o;
} s3_call;

static pk_status s3_call_begin(const pk_s3_desc *d, const double *u, const double *psi,
                               double *chi, pk_scratch *stage, s3_call *k)
{
    memset(k, 0, sizeof *k);
    PK_TRY(s3_stage(d, u, psi, stage, &k->st, &k->pack_s));
    k->chi_l = chi;
    if (!s3_aos_spinor(d->layout) &&
        !(k->chi_l = pk_scratch_get(&stage[2], d->spinor_doubles * sizeof(double))))
        return pk_fail(PK_ENOMEM, "su3: cannot allocate %zu doubles for chi in layout %s",
                       d->spinor_doubles, s3_layout_names[d->layout]);
    const size_t sbytes = d->nv * 24 * sizeof(double);
    k->o.u = k->st.u;
    k->o.psi = k->st.psi;
    k->o.chi = k->chi_l;
    k->o.ubytes = d->u_doubles * sizeof(double);
    k->o.sbytes = d->spinor_doubles * sizeof(double);
    k->o.chi_overlaps = k->chi_l == chi &&
                        (s3_overlap(chi, sbytes, psi, sbytes) ||
                         s3_overlap(chi, sbytes, u, d->nv * 18 * sizeof(double)));
    return PK_OK;
}

/* After the work (status s): chi unpacked from the layout when s is PK_OK; returns s. */
static pk_status s3_call_end(const pk_s3_desc *d, pk_status s, double *chi, s3_call *k)
{
    if (k->chi_l != chi && s == PK_OK) {
        const double t1 = pk_now();
        s3_unpack_spinor(d, k->chi_l, chi);
        k->unpack_s = pk_now() - t1;
    }
    return s;
}

/* A one-shot call's work on the backend the dispatcher chose: the backend's execute_canonical
 * where s3_canonical says so, else staged into the layout (the context's scratch) and back. */
typedef struct s3_any_call {
    const pk_s3_desc *d;
    const double *u, *psi; /* the caller's, AoS */
    double *chi;
    pk_scratch *stage;
    s3_call k;
} s3_any_call;

static pk_status s3_any_work(pk_choice *c, void *arg)
{
    s3_any_call *a = arg;
    memset(&a->k, 0, sizeof a->k);
    if (s3_canonical(c, a->d, a->u, a->psi, a->chi))
        return s3_ops(c)->execute_canonical(c->impl, a->u, a->psi, a->chi, &a->k.o.kern,
                                            &a->k.pack_s);
    PK_TRY(s3_call_begin(a->d, a->u, a->psi, a->chi, a->stage, &a->k));
    return s3_call_end(a->d, s3_oneshot_work(c, &a->k.o), a->chi, &a->k);
}

pk_status pk_su3(pk_context *ctx, const pk_su3_params *p, const char *variant, const double *u,
                 const double *psi, double *chi, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_s3_desc d;
    PK_TRY(s3_validate(p, &d));
    d.threads = ctx->opt.threads; /* the conversions' team (the backend's is set at create) */
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    s3_any_call a = {.d = &d, .u = u, .psi = psi, .chi = chi, .stage = ctx->scratch};
    pk_choice c;
    struct { size_t nv; int layout, nw; } key; /* the context's cache */
    memset(&key, 0, sizeof key);
    key.nv = d.nv, key.layout = d.layout, key.nw = d.nw;
    pk_status s = pk_dispatch_oneshot(ctx, &s3_class, variant, &d, &key, sizeof key, s3_any_work,
                                      &a, NULL, &c);
    pk_context_scratch_end(ctx);
    PK_TRY(s);
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = a.k.o.up + a.k.o.down;
        info->kernel_s = a.k.o.kern;
        info->layout_s = a.k.pack_s + a.k.unpack_s;
        info->flops = S3_FLOPS_PER_SITE * (double)d.nv;
        info->bytes = S3_BYTES_PER_SITE * (double)d.nv;
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */
pk_status pk_su3_plan_create(pk_su3_plan **plan, pk_context *ctx, const pk_su3_params *p,
                             const char *variant, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_s3_desc d;
    PK_TRY(s3_validate(p, &d));
    pk_su3_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "su3: out of host memory");
    pl->d = d;
    pl->d.threads = ctx->opt.threads; /* the conversions' team */
    pl->p = *p;
    pk_status s = pk_dispatch(ctx, &s3_class, variant, &d, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    pl->flops = S3_FLOPS_PER_SITE * (double)d.nv;
    pl->bytes = S3_BYTES_PER_SITE * (double)d.nv;
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

/* The caller's arrays the host converts (u unless the layout is aos; psi and chi in vfo and
 * hvfo; NULL: not in the call): device memory is refused, never read by the CPU (plan_execute
 * with all three on the plan's device goes to the backend's execute_canonical first). */
static pk_status s3_host_arrays(const pk_su3_plan *plan, const double *u, const double *psi,
                                const double *chi)
{
    const pk_s3_desc *d = &plan->d;
    const void *p[3];
    size_t b[3];
    const char *names[3];
    int n = 0;
    if (u && d->layout != PK_SU3_AOS)
        p[n] = u, b[n] = d->nv * 18 * sizeof(double), names[n++] = "u";
    if (psi && !s3_aos_spinor(d->layout))
        p[n] = psi, b[n] = d->nv * 24 * sizeof(double), names[n++] = "psi";
    if (chi && !s3_aos_spinor(d->layout))
        p[n] = chi, b[n] = d->nv * 24 * sizeof(double), names[n++] = "chi";
    char step[160];
    snprintf(step, sizeof step, "the host converts it between AoS and layout %s%s",
             s3_layout_names[d->layout],
             s3_ops(&plan->c)->execute_canonical
                 ? " (plan_execute converts on the device when u, psi and chi all are device "
                   "memory of the plan's device)"
                 : "");
    return pk_choice_host_only(&plan->c, p, b, names, n, step);
}

pk_status pk_su3_plan_upload(pk_su3_plan *plan, const double *u, const double *psi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_TRY(s3_host_arrays(plan, u, psi, NULL));
    s3_staged st;
    double pack_s, up_s;
    PK_TRY(s3_stage(&plan->d, u, psi, plan->stage, &st, &pack_s));
    plan->uploaded = 0; /* a failed upload leaves the device data undefined */
    plan->ran = 0;
    PK_TRY(s3_ops(&plan->c)->upload(plan->c.impl, st.u, st.psi, &up_s));
    plan->uploaded = 1;
    return PK_OK;
}

pk_status pk_su3_plan_run(pk_su3_plan *plan, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_run: no u and psi uploaded yet (call plan_upload)");
    const double t0 = pk_now();
    double kern = 0;
    PK_TRY(s3_ops(&plan->c)->run(plan->c.impl, &kern));
    plan->ran = 1;
    pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
    return PK_OK;
}

pk_status pk_su3_plan_download(pk_su3_plan *plan, double *chi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(chi);
    PK_CHECK(plan->ran, PK_ESTATE,
             "plan_download: the uploaded u and psi were not multiplied yet (call plan_run)");
    PK_TRY(s3_host_arrays(plan, NULL, NULL, chi));
    double s;
    if (s3_aos_spinor(plan->d.layout)) return s3_ops(&plan->c)->download(plan->c.impl, chi, &s);
    double *chi_l = pk_scratch_get(&plan->stage[2], plan->d.spinor_doubles * sizeof(double));
    if (!chi_l)
        return pk_fail(PK_ENOMEM, "su3: cannot allocate %zu doubles for chi in layout %s",
                       plan->d.spinor_doubles, s3_layout_names[plan->d.layout]);
    PK_TRY(s3_ops(&plan->c)->download(plan->c.impl, chi_l, &s));
    s3_unpack_spinor(&plan->d, chi_l, chi);
    return PK_OK;
}

pk_status pk_su3_plan_execute(pk_su3_plan *plan, const double *u, const double *psi, double *chi,
                              pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    if (s3_canonical(&plan->c, &plan->d, u, psi, chi)) { /* converted by the backend */
        const double t0 = pk_now();
        double kern = 0, lay = 0;
        plan->uploaded = plan->ran = 0; /* the plan's arrays hold the conversions now */
        PK_TRY(s3_ops(&plan->c)->execute_canonical(plan->c.impl, u, psi, chi, &kern, &lay));
        pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
        if (info) {
            info->transfer_s = 0;
            info->layout_s = lay;
        }
        return PK_OK;
    }
    PK_TRY(s3_host_arrays(plan, u, psi, chi));
    const double t0 = pk_now();
    s3_call k;
    PK_TRY(s3_call_begin(&plan->d, u, psi, chi, plan->stage, &k));
    plan->uploaded = plan->ran = 0; /* the resident u, psi and chi are undefined from here on */
    PK_TRY(s3_call_end(&plan->d, s3_oneshot_work(&plan->c, &k.o), chi, &k));
    pk_choice_run_info(&plan->c, info, k.o.kern, plan->flops, plan->bytes, t0);
    if (info) {
        info->transfer_s = k.o.up + k.o.down;
        info->layout_s = k.pack_s + k.unpack_s;
    }
    return PK_OK;
}

void pk_su3_plan_destroy(pk_su3_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) s3_ops(&plan->c)->destroy(plan->c.impl);
    for (int i = 0; i < 3; ++i) pk_scratch_free(&plan->stage[i]);
    free(plan);
}
