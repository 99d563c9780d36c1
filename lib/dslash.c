/* dslash.c - the public dslash calls (docs/KERNELS.md 4c): validate once, compress the links to
 * two rows when recon12 (on the host, timed into info->layout_s), choose a backend (with
 * fallback under auto), call through the backend's table, fill the run info.  Also the host
 * plan the serial and OpenMP backends share.
 *
 * Counts (docs/PERFORMANCE.md, "dslash"):
 *  - flops: 1320 per site, the hopping term as QUDA, QPhiX and Grid count it (8 x (12
 *    projection + 2 x 66 colour products) + 7 x 24 accumulation); the 72 of the diagonal
 *    term and the 1/2 scaling are not counted.
 *  - bytes: no cache reuse, 8 bytes per real: 8 neighbour spinors (8 x 24) + 8 links
 *    (8 x 18, recon12 8 x 12) + psi(x) (24) + chi written (24) reals per site: 3072 B per
 *    site, 2688 B with recon12.  (QUDA's accounting has 8 x 18 + 6 x 24 + 2 x 12 + 24 reals:
 *    it counts the two time-direction neighbours as half spinors, which its non-relativistic
 *    basis allows, and psi(x) not at all.) */
#include "dslash_host.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DS_FLOPS_PER_SITE 1320.0
#define DS_REALS_FULL (8 * 24 + 8 * 18 + 24 + 24)
#define DS_REALS_RECON12 (8 * 24 + 8 * 12 + 24 + 24)

/* The spin projection of each direction (dslash_host.h). */
const pk_ds_proj pk_ds_proj_table[4] = {
    {{3, 2}, {1, 1}, {1, 0}, {3, 3}}, /* x */
    {{3, 2}, {2, 0}, {1, 0}, {0, 2}}, /* y */
    {{2, 3}, {1, 3}, {0, 1}, {3, 1}}, /* z */
    {{2, 3}, {0, 0}, {0, 1}, {0, 0}}, /* t */
};

struct pk_dslash_plan {
    pk_choice c;
    pk_ds_desc d;
    double flops, bytes;
    int state; /* DS_EMPTY, DS_UPLOADED (runnable), DS_RAN (chi downloadable) */
    int links; /* the links of the last plan_upload are resident (plan_execute_psi) */
    pk_scratch u12; /* recon12: the two-row links, kept for the next upload/execute */
};

enum { DS_EMPTY, DS_UPLOADED, DS_RAN };

/* ---- validation ----------------------------------------------------------------------- */
static pk_status ds_validate(const pk_dslash_params *p, pk_ds_desc *d)
{
    PK_CHECK_NULL(p);
    const int L[4] = {p->x, p->y, p->z, p->t};
    static const char *const name[4] = {"x", "y", "z", "t"};
    for (int mu = 0; mu < 4; ++mu)
        PK_CHECK(L[mu] >= 1, PK_ESIZE, "%s: lattice extent must be >= 1, got %d", name[mu],
                 L[mu]);
    PK_CHECK(isfinite(p->kappa), PK_ENONFINITE, "kappa: must be finite, got %g", p->kappa);
    PK_CHECK(p->kappa > 0, PK_EINVAL, "kappa: must be > 0, got %g", p->kappa);
    PK_CHECK(p->recon12 == 0 || p->recon12 == 1, PK_EINVAL,
             "recon12: must be 0 (full links) or 1 (two rows), got %d", p->recon12);
    PK_CHECK((p->t_begin == 0 && p->t_end == 0) ||
                 (p->t_begin >= 0 && p->t_begin < p->t_end && p->t_end <= L[3]),
             PK_EINVAL, "t_begin, t_end: must be 0, 0 (all t-planes) or 0 <= t_begin < t_end "
             "<= t = %d, got %d, %d", L[3], p->t_begin, p->t_end);
    PK_CHECK((p->z_begin == 0 && p->z_end == 0) ||
                 (p->z_begin >= 0 && p->z_begin < p->z_end && p->z_end <= L[2]),
             PK_EINVAL, "z_begin, z_end: must be 0, 0 (all z-planes) or 0 <= z_begin < z_end "
             "<= z = %d, got %d, %d", L[2], p->z_begin, p->z_end);
    /* The largest array is u: 4 x volume x 18 doubles. */
    size_t v;
    PK_CHECK(pk_mul3_size((size_t)L[0], (size_t)L[1], (size_t)L[2], &v) == 0 &&
                 v <= SIZE_MAX / (size_t)L[3] &&
                 v * (size_t)L[3] <= SIZE_MAX / (4 * 18 * sizeof(double)),
             PK_EOVERFLOW, "%d x %d x %d x %d: the links' bytes overflow size_t", L[0], L[1],
             L[2], L[3]);
    memset(d, 0, sizeof *d);
    memcpy(d->dims, L, sizeof L);
    d->volume = v * (size_t)L[3];
    d->kappa = p->kappa;
    d->recon12 = p->recon12;
    d->u_doubles = 4 * d->volume * (p->recon12 ? 12 : 18);
    d->u_link = p->recon12 ? 12 : 18;
    d->spinor_doubles = 24 * d->volume;
    d->t0 = p->t_end ? p->t_begin : 0;
    d->t1 = p->t_end ? p->t_end : L[3];
    d->z0 = p->z_end ? p->z_begin : 0;
    d->z1 = p->z_end ? p->z_end : L[2];
    d->sites = v / (size_t)L[2] * (size_t)(d->z1 - d->z0) * (size_t)(d->t1 - d->t0);
    return PK_OK;
}

/* Whether the call computes part of the lattice (a t- or z-range). */
static int ds_ranged(const pk_ds_desc *d)
{
    return d->t0 != 0 || d->t1 != d->dims[3] || d->z0 != 0 || d->z1 != d->dims[2];
}

static int ds_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return !(a0 + abytes <= b0 || b0 + bbytes <= a0);
}

/* The bytes of chi a call reads or writes: its first t1 planes (all of them without a
 * t-range). */
static size_t ds_chi_bytes(const pk_ds_desc *d)
{
    return d->spinor_doubles / (size_t)d->dims[3] * (size_t)d->t1 * sizeof(double);
}

pk_status pk_dslash_reference(const pk_dslash_params *p, const double *u, const double *psi,
                              double *chi)
{
    pk_clear_error();
    pk_ds_desc d;
    PK_TRY(ds_validate(p, &d));
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    const size_t sb = d.spinor_doubles * sizeof(double), cb = ds_chi_bytes(&d);
    PK_CHECK(!ds_overlap(psi, sb, chi, cb) && !ds_overlap(u, 4 * d.volume * 18 * sizeof(double),
                                                          chi, cb),
             PK_EINVAL, "chi: must not overlap psi or u (the reference does not work in place)");
    pk_ds_ref_apply(&d, u, psi, chi);
    return PK_OK;
}

/* ---- the kernel class the dispatcher uses ----------------------------------------------- */
static pk_status ds_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_ds_desc d = *(const pk_ds_desc *)desc;
    if (ds_ranged(&d) && backend->id != PK_BACKEND_SERIAL && backend->id != PK_BACKEND_OPENMP)
        return pk_fail(PK_EUNSUPPORTED, "dslash: a range of planes (t %d..%d, z %d..%d) runs "
                                        "on the serial and openmp backends only, not on %s",
                       d.t0, d.t1, d.z0, d.z1, backend->name);
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_ds_ops *)kops)->create(state, device, &d, impl);
}

static void ds_destroy_on(const void *kops, void *impl)
{
    ((const pk_ds_ops *)kops)->destroy(impl);
}

/* The host backends' plans say what they chose (omp-vnode: lanes, direction, ISA). */
static void ds_note(pk_choice *c);
/* A one-shot choice completed before the context's cache keeps it. */
static void ds_finish(pk_choice *c, const void *desc)
{
    (void)desc;
    ds_note(c);
}

static void ds_note(pk_choice *c)
{
    if (c->backend != PK_BACKEND_SERIAL && c->backend != PK_BACKEND_OPENMP) return;
    const pk_ds_host_plan *h = c->impl;
    if (h->note[0]) pk_append_note(c->reason, sizeof c->reason, "%s", h->note);
}

static double ds_plan_bytes(const void *desc)
{
    const pk_ds_desc *d = desc;
    return 8.0 * ((double)d->u_doubles + 2.0 * (double)d->spinor_doubles);
}
static void ds_wisdom_key(const void *desc, char *key, size_t len)
{
    const pk_ds_desc *d = desc;
    const int zr = d->z0 != 0 || d->z1 != d->dims[2];
    if (!ds_ranged(d))
        snprintf(key, len, "recon12=%d", d->recon12);
    else if (!zr)
        snprintf(key, len, "recon12=%d,t=%d..%d", d->recon12, d->t0, d->t1);
    else
        snprintf(key, len, "recon12=%d,t=%d..%d,z=%d..%d", d->recon12, d->t0, d->t1, d->z0,
                 d->z1);
}
static void ds_counts(const pk_ds_desc *d, double *flops, double *bytes)
{
    *flops = DS_FLOPS_PER_SITE * (double)d->sites;
    *bytes = sizeof(double) * (double)(d->recon12 ? DS_REALS_RECON12 : DS_REALS_FULL) *
             (double)d->sites;
}
static void ds_cost(const void *desc, pk_cost *c)
{
    ds_counts(desc, &c->flops, &c->bytes);
    c->link_bytes = ds_plan_bytes(desc); /* u and psi in, chi out */
}
/* A one-shot call on OpenMP: omp-vnode converts the caller's links and spinors to its layout
 * and chi back on every call, omp runs on them as they are.  Inside the last-level cache the
 * conversion is cheap and omp-vnode's kernel wins (2-core EPYC KVM, 32 MiB: 8^3x8 one call
 * 0.16 ms against omp's 0.34); beyond it the conversion's DRAM traffic costs more than the
 * vnode kernel saves (16^3x32, 126 MB: 17.0 ms against omp's 13.1; its plans 10.5 against
 * 12.1).  Plans, which convert once, keep omp-vnode. */
static const char *ds_device_variant(pk_backend_id backend, const pk_device_info *device,
                                     const void *desc, const char **why)
{
    const pk_ds_desc *d = desc;
    (void)device;
    if (backend != PK_BACKEND_OPENMP || !d->oneshot || !pk_beyond_llc(ds_plan_bytes(d)))
        return NULL;
    *why = "a one-shot call on arrays larger than the last-level cache (omp-vnode would convert "
           "them on every call)";
    return "omp";
}
static const pk_kernel_class ds_class = {
    .name = "dslash",
    .on = PK_KERNEL_ON(ds),
    .create = ds_create_on,
    .destroy = ds_destroy_on,
    .plan_bytes = ds_plan_bytes,
    .wisdom_key = ds_wisdom_key,
    .cost = ds_cost,
    .device_variant = ds_device_variant,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_ds_ops *ds_ops(const pk_choice *c) { return c->kops; }

const char *pk_dslash_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&ds_class, backend);
}

/* ---- recon12: the first two rows of every link ------------------------------------------ */
/* u [4 V][3][3] complex -> [4 V][2][3]: a new array (pk_free_aligned), NULL when out of
 * memory.  On d->threads (0: OpenMP's default), each a contiguous share of links. */
typedef struct ds_c12_job {
    const double *u;
    double *u12;
} ds_c12_job;

static void ds_c12_links(void *arg, size_t k0, size_t k1)
{
    const ds_c12_job *j = arg;
    for (size_t k = k0; k < k1; ++k) memcpy(j->u12 + 12 * k, j->u + 18 * k, 12 * sizeof(double));
}

static double *ds_compress12(const pk_ds_desc *d, const double *u, pk_scratch *stage,
                             double *seconds)
{
    const double t0 = pk_now();
    const size_t n = 4 * d->volume;
    double *u12 = pk_scratch_get(stage, n * 12 * sizeof(double));
    if (!u12) {
        pk_fail(PK_ENOMEM, "dslash: cannot allocate the %zu doubles of the two-row links",
                n * 12);
        return NULL;
    }
    ds_c12_job j = {u, u12};
    /* grain 16 links: shares start on 64-byte lines of u12 (16 x 96 B) */
    pk_parallel_range(n, 16, n * 30 * sizeof(double), d->threads, ds_c12_links, &j);
    *seconds = pk_now() - t0;
    return u12;
}

/* Upload and download (and plan_execute unless all three arrays are on the plan's device)
 * take host memory: recon12's links are compressed on the host, and a backend without
 * execute_canonical reorders on the host.  Device memory is refused, never read by the CPU.
 * NULL: not in the call. */
static pk_status ds_host_arrays(const pk_choice *c, const pk_ds_desc *d, const double *u,
                                const double *psi, const double *chi)
{
    const void *p[3] = {u, psi, chi};
    const size_t b[3] = {4 * d->volume * 18 * sizeof(double),
                         d->spinor_doubles * sizeof(double), ds_chi_bytes(d)};
    const char *const names[3] = {"u", "psi", "chi"};
    const char *step = ds_ops(c)->execute_canonical
                           ? "plan_upload and plan_download take host memory (plan_execute "
                             "takes u, psi and chi all in device memory of the plan's device)"
                           : "the plan reorders it on the host";
    for (int i = 0; i < 3; ++i)
        if (p[i]) PK_TRY(pk_choice_host_only(c, &p[i], &b[i], &names[i], 1, step));
    return PK_OK;
}

/* Whether u (full links), psi and chi all are device memory of the plan's device and its
 * backend reorders on the device (execute_canonical). */
static int ds_on_device(const pk_choice *c, const pk_ds_desc *d, const double *u,
                        const double *psi, const double *chi)
{
    const size_t ub = 4 * d->volume * 18 * sizeof(double), sb = d->spinor_doubles * sizeof(double);
    return ds_ops(c)->execute_canonical && pk_choice_memory(c, u, ub) == PK_MEM_DEVICE &&
           pk_choice_memory(c, psi, sb) == PK_MEM_DEVICE &&
           pk_choice_memory(c, chi, sb) == PK_MEM_DEVICE;
}

static pk_status ds_upload(const pk_choice *c, const pk_ds_desc *d, const double *u,
                           const double *psi, pk_scratch *stage, double *up_s, double *layout_s)
{
    *layout_s = 0;
    PK_TRY(ds_host_arrays(c, d, u, psi, NULL));
    if (!d->recon12) return ds_ops(c)->upload(c->impl, u, psi, up_s);
    double *u12 = ds_compress12(d, u, stage, layout_s);
    if (!u12) return PK_ENOMEM;
    return ds_ops(c)->upload(c->impl, u12, psi, up_s);
}

/* ---- host plans (serial, OpenMP) -------------------------------------------------------- */
pk_status pk_ds_host_create(const pk_ds_desc *desc, size_t u_len, size_t spinor_len,
                            pk_ds_host_plan **plan)
{
    pk_ds_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "dslash: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant ? desc->variant : "", sizeof h->variant);
    h->d.variant = h->variant;
    h->u_len = u_len;
    h->spinor_len = spinor_len;
    h->nt = 1;
    h->u = pk_alloc_aligned(u_len * sizeof(double));
    h->psi = pk_alloc_aligned(spinor_len * sizeof(double));
    h->chi = pk_alloc_aligned(spinor_len * sizeof(double));
    if (!h->u || !h->psi || !h->chi) {
        pk_ds_host_destroy(h);
        return pk_fail(PK_ENOMEM, "dslash: cannot allocate %zu + 2 x %zu doubles for the "
                                  "links and spinors", u_len, spinor_len);
    }
    *plan = h;
    return PK_OK;
}

pk_status pk_ds_host_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    pk_ds_host_plan *h = impl;
    if (!h->touched && h->first_touch) h->first_touch(h);
    h->touched = 1;
    const double t0 = pk_now();
    if (h->pack) { /* u NULL: psi only, the links resident */
        h->pack(h, u, psi);
    } else {
        if (u) memcpy(h->u, u, h->d.u_doubles * sizeof(double));
        memcpy(h->psi, psi, h->d.spinor_doubles * sizeof(double));
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_ds_host_download(void *impl, double *chi, double *seconds)
{
    pk_ds_host_plan *h = impl;
    const double t0 = pk_now();
    if (h->unpack) {
        h->unpack(h, chi);
    } else { /* the box's rows only: the others of chi are the caller's */
        const pk_ds_box b = pk_ds_box_of(&h->d, h->d.dims);
        const size_t n = pk_ds_box_rows(&b), row = 24 * (size_t)h->d.dims[0];
        for (size_t k = 0, r, len; k < n; k += len) {
            len = pk_ds_box_run(&b, k, n, &r);
            memcpy(chi + r * row, h->chi + r * row, len * row * sizeof(double));
        }
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The plan's run on the caller's arrays (a lexicographic plan: no copies), u's links u_link
 * doubles apart; the plan's own arrays and link stride restored after. */
static pk_status ds_host_run_on(pk_ds_host_plan *h, const double *u, int u_link,
                                const double *psi, double *chi, double *kernel_seconds)
{
    double *own_u = h->u, *own_psi = h->psi, *own_chi = h->chi;
    const int own_link = h->d.u_link;
    h->u = (double *)u; /* read only */
    h->psi = (double *)psi;
    h->chi = chi;
    h->d.u_link = u_link;
    pk_status s = h->ops->run(h, kernel_seconds);
    h->u = own_u;
    h->psi = own_psi;
    h->chi = own_chi;
    h->d.u_link = own_link;
    return s;
}

pk_status pk_ds_host_execute(void *impl, const double *u, const double *psi, double *chi,
                             double *kernel_seconds, double *transfer_seconds)
{
    pk_ds_host_plan *h = impl;
    const size_t ub = h->d.u_doubles * sizeof(double), sb = h->d.spinor_doubles * sizeof(double);
    const size_t cb = ds_chi_bytes(&h->d);
    const int resident = !u; /* plan_execute_psi: the plan's own links */
    if (resident) u = h->u;
    *kernel_seconds = 0;
    if (h->pack || h->unpack || ds_overlap(chi, cb, u, ub) || ds_overlap(chi, cb, psi, sb)) {
        double up = 0, down = 0;
        PK_TRY(pk_ds_host_upload(h, resident ? NULL : u, psi, &up));
        PK_TRY(h->ops->run(h, kernel_seconds));
        PK_TRY(pk_ds_host_download(h, chi, &down));
        *transfer_seconds = up + down;
        return PK_OK;
    }
    *transfer_seconds = 0;
    return ds_host_run_on(h, u, h->d.u_link, psi, chi, kernel_seconds);
}

int pk_ds_host_reads_full(const pk_ds_ops *ops, const void *impl)
{
    return ops->execute == pk_ds_host_execute && !((const pk_ds_host_plan *)impl)->pack;
}

pk_status pk_ds_host_execute_full(void *impl, const double *u, const double *psi, double *chi,
                                  double *kernel_seconds)
{
    return ds_host_run_on(impl, u, 18, psi, chi, kernel_seconds);
}

void pk_ds_host_destroy(void *impl)
{
    pk_ds_host_plan *h = impl;
    if (!h) return;
    pk_free_aligned(h->u);
    pk_free_aligned(h->psi);
    pk_free_aligned(h->chi);
    free(h);
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct ds_oneshot {
    const pk_ds_desc *d;
    const double *u, *psi;
    double *chi;
    pk_scratch *u12; /* recon12's staging: the context's (one-shot) or the plan's */
    double up, kern, down, layout;
} ds_oneshot;

/* The one-shot call's work on a fresh plan (and plan_execute's on the caller's plan): a
 * device failure here falls back too. */
static pk_status ds_oneshot_work(pk_choice *c, void *arg)
{
    ds_oneshot *o = arg;
    /* chi over psi or u: a failure part way leaves no intact input to retry another on */
    const size_t sb = o->d->spinor_doubles * sizeof(double), cb = ds_chi_bytes(o->d);
    const int overlaps = ds_overlap(o->chi, cb, o->psi, sb) ||
                         ds_overlap(o->chi, cb, o->u, 4 * o->d->volume * 18 * sizeof(double));
    if (ds_ops(c)->execute) { /* host memory: on the caller's arrays */
        const double *uk = o->u;
        o->layout = 0;
        if (o->d->recon12 && !overlaps && pk_ds_host_reads_full(ds_ops(c), c->impl)) {
            /* the first two rows of the caller's links read in place: the same bits as
             * compressing them first, without the pass over u */
            o->down = 0;
            return pk_ds_host_execute_full(c->impl, o->u, o->psi, o->chi, &o->kern);
        }
        if (o->d->recon12 && !(uk = ds_compress12(o->d, o->u, o->u12, &o->layout)))
            return PK_ENOMEM;
        c->no_fallback = overlaps;
        return ds_ops(c)->execute(c->impl, uk, o->psi, o->chi, &o->kern, &o->down);
    }
    PK_TRY(ds_host_arrays(c, o->d, NULL, NULL, o->chi));
    PK_TRY(ds_upload(c, o->d, o->u, o->psi, o->u12, &o->up, &o->layout));
    PK_TRY(ds_ops(c)->run(c->impl, &o->kern));
    c->no_fallback = overlaps;
    return ds_ops(c)->download(c->impl, o->chi, &o->down);
}

pk_status pk_dslash(pk_context *ctx, const pk_dslash_params *p, const char *variant,
                    const double *u, const double *psi, double *chi, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_ds_desc d;
    PK_TRY(ds_validate(p, &d));
    d.threads = ctx->opt.threads; /* recon12's team (the backend's is set at create) */
    d.oneshot = 1;
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    ds_oneshot o = {&d, u, psi, chi, &ctx->scratch[0], 0, 0, 0, 0};
    pk_choice c;
    struct { int dims[4], recon12, t0, t1, z0, z1; double kappa; } key; /* the context's cache */
    memset(&key, 0, sizeof key);
    memcpy(key.dims, d.dims, sizeof key.dims);
    key.recon12 = d.recon12, key.kappa = d.kappa;
    key.t0 = d.t0, key.t1 = d.t1, key.z0 = d.z0, key.z1 = d.z1;
    const pk_status s = pk_dispatch_oneshot(ctx, &ds_class, variant, &d, &key, sizeof key,
                                            ds_oneshot_work, &o, ds_finish, &c);
    pk_context_scratch_end(ctx);
    PK_TRY(s);
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = o.up + o.down;
        info->kernel_s = o.kern;
        info->layout_s = o.layout;
        ds_counts(&d, &info->flops, &info->bytes);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */
pk_status pk_dslash_plan_create(pk_dslash_plan **plan, pk_context *ctx, const pk_dslash_params *p,
                                const char *variant, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_ds_desc d;
    PK_TRY(ds_validate(p, &d));
    pk_dslash_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "dslash: out of host memory");
    pl->d = d;
    pl->d.threads = ctx->opt.threads; /* recon12's team */
    pk_status s = pk_dispatch(ctx, &ds_class, variant, &d, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    ds_note(&pl->c);
    ds_counts(&d, &pl->flops, &pl->bytes);
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

pk_status pk_dslash_plan_upload(pk_dslash_plan *plan, const double *u, const double *psi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    double up, layout;
    plan->state = DS_EMPTY; /* a failed upload may have left half of the new fields */
    plan->links = 0;
    PK_TRY(ds_upload(&plan->c, &plan->d, u, psi, &plan->u12, &up, &layout));
    plan->state = DS_UPLOADED;
    plan->links = 1;
    return PK_OK;
}

pk_status pk_dslash_plan_run(pk_dslash_plan *plan, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(plan->state != DS_EMPTY, PK_ESTATE,
             "plan_run: no u and psi uploaded yet (call plan_upload)");
    const double t0 = pk_now();
    double kern = 0;
    PK_TRY(ds_ops(&plan->c)->run(plan->c.impl, &kern));
    plan->state = DS_RAN;
    pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
    return PK_OK;
}

pk_status pk_dslash_plan_download(pk_dslash_plan *plan, double *chi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(chi);
    PK_CHECK(plan->state == DS_RAN, PK_ESTATE,
             "plan_download: the uploaded fields were not run yet (call plan_run)");
    PK_TRY(ds_host_arrays(&plan->c, &plan->d, NULL, NULL, chi));
    double s;
    return ds_ops(&plan->c)->download(plan->c.impl, chi, &s);
}

pk_status pk_dslash_plan_execute(pk_dslash_plan *plan, const double *u, const double *psi,
                                 double *chi, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    const double t0 = pk_now();
    ds_oneshot o = {&plan->d, u, psi, chi, &plan->u12, 0, 0, 0, 0};
    plan->state = DS_EMPTY; /* the resident u, psi and chi are undefined from here on */
    plan->links = 0;
    if (ds_on_device(&plan->c, &plan->d, u, psi, chi)) /* reordered on the device, no copy */
        PK_TRY(ds_ops(&plan->c)->execute_canonical(plan->c.impl, u, psi, chi, &o.kern,
                                                    &o.layout));
    else
        PK_TRY(ds_oneshot_work(&plan->c, &o));
    pk_choice_run_info(&plan->c, info, o.kern, plan->flops, plan->bytes, t0);
    if (info) {
        info->transfer_s = o.up + o.down;
        info->layout_s = o.layout;
    }
    return PK_OK;
}

pk_status pk_dslash_plan_execute_psi(pk_dslash_plan *plan, const double *psi, double *chi,
                                     pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    PK_CHECK(plan->links, PK_ESTATE, "plan_execute_psi: no links resident (plan_upload them "
             "first; plan_execute and a failed upload replace them)");
    const double t0 = pk_now();
    double kern = 0, transfer = 0;
    plan->state = DS_EMPTY; /* the resident psi and chi are undefined; the links stay */
    if (plan->c.backend == PK_BACKEND_SERIAL || plan->c.backend == PK_BACKEND_OPENMP) {
        PK_TRY(pk_ds_host_execute(plan->c.impl, NULL, psi, chi, &kern, &transfer));
    } else { /* a device: psi up alone (its links stay), chi down */
        const pk_ds_ops *ops = ds_ops(&plan->c);
        double up = 0, down = 0;
        PK_TRY(ds_host_arrays(&plan->c, &plan->d, NULL, psi, chi));
        PK_TRY(ops->upload(plan->c.impl, NULL, psi, &up));
        PK_TRY(ops->run(plan->c.impl, &kern));
        PK_TRY(ops->download(plan->c.impl, chi, &down));
        transfer = up + down;
    }
    pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
    if (info) {
        info->transfer_s = transfer;
        info->layout_s = 0;
    }
    return PK_OK;
}

void pk_dslash_plan_destroy(pk_dslash_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) ds_ops(&plan->c)->destroy(plan->c.impl);
    pk_scratch_free(&plan->u12);
    free(plan);
}
