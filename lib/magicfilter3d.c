/* magicfilter3d.c - the public magicfilter3d calls (docs/KERNELS.md section 2): validate once,
 * choose a backend (with fallback under auto), call through the backend's table, fill the
 * run info.  Also the host plan the serial and OpenMP backends share. */
#include "magicfilter3d_host.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 32 flops (16 multiplies, 16 adds) per output point and pass; the bytes model reads every
 * pass's input once and writes its output once (BigDFT's and the paper's convention: 96
 * flops and 48 bytes per point for periodic data, hence 2 flops/byte). */
#define MF_FLOPS_PER_OUTPUT 32.0

struct pk_magicfilter3d_plan {
    pk_choice c;
    pk_mf_desc d;
    double flops, bytes;
    int uploaded, ran;
};

/* ---- validation ----------------------------------------------------------------------- */
static pk_status mf_validate(const pk_magicfilter3d_params *p, pk_mf_desc *d)
{
    PK_CHECK_NULL(p);
    const int n[3] = {p->n1, p->n2, p->n3};
    static const char *const name[3] = {"n1", "n2", "n3"};
    for (int a = 0; a < 3; ++a) {
        PK_CHECK(n[a] >= 1, PK_ESIZE, "%s: must be >= 1, got %d", name[a], n[a]);
        PK_CHECK(n[a] <= INT_MAX - 15, PK_EOVERFLOW, "%s + 15: overflows int (%s = %d)",
                 name[a], name[a], n[a]);
    }
    PK_CHECK(p->transpose == 0 || p->transpose == 1, PK_EINVAL,
             "transpose: must be 0 (MF) or 1 (MFT), got %d", p->transpose);
    PK_CHECK(p->bc >= PK_MF_PERIODIC && p->bc <= PK_MF_SHRINK, PK_EINVAL,
             "bc: must be PK_MF_PERIODIC (0), PK_MF_GROW (1) or PK_MF_SHRINK (2), got %d", p->bc);
    /* The largest array is the grown side: (n + 15)^3 doubles, and a pass's line index
     * (ndat) is a long. */
    size_t big;
    PK_CHECK(pk_mul3_size((size_t)n[0] + 15, (size_t)n[1] + 15, (size_t)n[2] + 15, &big) == 0 &&
                 big <= SIZE_MAX / (4 * sizeof(double)) && big <= (size_t)LONG_MAX,
             PK_EOVERFLOW, "%d x %d x %d: the arrays' bytes overflow size_t", n[0], n[1], n[2]);
    pk_mf_desc_init(d, p);
    return PK_OK;
}

pk_status pk_magicfilter3d_shapes(const pk_magicfilter3d_params *p, size_t in_shape[3],
                                  size_t out_shape[3])
{
    pk_clear_error();
    pk_mf_desc d;
    PK_TRY(mf_validate(p, &d));
    for (int a = 0; a < 3; ++a) {
        if (in_shape) in_shape[2 - a] = (size_t)d.in[a];
        if (out_shape) out_shape[2 - a] = (size_t)d.out[a];
    }
    return PK_OK;
}

static int mf_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return !(a0 + abytes <= b0 || b0 + bbytes <= a0);
}

pk_status pk_magicfilter3d_reference(const pk_magicfilter3d_params *p, const double *x, double *y)
{
    pk_clear_error();
    pk_mf_desc d;
    PK_TRY(mf_validate(p, &d));
    PK_CHECK_NULL(x);
    PK_CHECK_NULL(y);
    PK_CHECK(!mf_overlap(x, d.in_count * sizeof(double), y, d.out_count * sizeof(double)),
             PK_EINVAL, "y: must not overlap x (the reference does not work in place)");
    double *w1 = malloc(d.work_count[0] * sizeof(double));
    double *w2 = malloc(d.work_count[1] * sizeof(double));
    if (!w1 || !w2) {
        free(w1);
        free(w2);
        return pk_fail(PK_ENOMEM, "magicfilter3d: cannot allocate %zu + %zu doubles of work space",
                       d.work_count[0], d.work_count[1]);
    }
    pk_mf_pass_ref(&d.pass[0], d.g, x, w1);
    pk_mf_pass_ref(&d.pass[1], d.g, w1, w2);
    pk_mf_pass_ref(&d.pass[2], d.g, w2, y);
    free(w1);
    free(w2);
    return PK_OK;
}

/* ---- the kernel class the dispatcher uses ----------------------------------------------- */
static pk_status mf_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_mf_desc d = *(const pk_mf_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_mf_ops *)kops)->create(state, device, &d, impl);
}

static void mf_destroy_on(const void *kops, void *impl)
{
    ((const pk_mf_ops *)kops)->destroy(impl);
}

static double mf_plan_bytes(const void *desc)
{
    const pk_mf_desc *d = desc;
    return 8.0 * ((double)d->in_count + (double)d->out_count + (double)d->work_count[0] +
                  (double)d->work_count[1]);
}
static void mf_wisdom_key(const void *desc, char *key, size_t len)
{
    const pk_mf_desc *d = desc;
    snprintf(key, len, "bc=%d,transpose=%d", d->bc, d->transpose);
}
static void mf_counts(const pk_mf_desc *d, double *flops, double *bytes)
{
    *flops = 0;
    *bytes = 0;
    for (int a = 0; a < 3; ++a) {
        const double lines = (double)d->pass[a].ndat;
        *flops += MF_FLOPS_PER_OUTPUT * lines * d->pass[a].nout;
        *bytes += sizeof(double) * lines * (double)(d->pass[a].nin + d->pass[a].nout);
    }
}
static void mf_cost(const void *desc, pk_cost *c)
{
    const pk_mf_desc *d = desc;
    mf_counts(d, &c->flops, &c->bytes);
    c->link_bytes = 8.0 * ((double)d->in_count + (double)d->out_count); /* x in, y out */
}
static const pk_kernel_class mf_class = {
    .name = "magicfilter3d",
    .on = PK_KERNEL_ON(mf),
    .create = mf_create_on,
    .destroy = mf_destroy_on,
    .plan_bytes = mf_plan_bytes,
    .wisdom_key = mf_wisdom_key,
    .cost = mf_cost,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_mf_ops *mf_ops(const pk_choice *c) { return c->kops; }

const char *pk_magicfilter3d_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&mf_class, backend);
}

/* ---- host plans (serial, OpenMP) -------------------------------------------------------- */
pk_status pk_mf_host_create(const pk_mf_desc *desc, pk_mf_host_plan **plan)
{
    pk_mf_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "magicfilter3d: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant ? desc->variant : "", sizeof h->variant);
    h->d.variant = h->variant;
    const int w1_is_y = desc->work_count[0] <= desc->out_count;
    h->x = pk_alloc_aligned(desc->in_count * sizeof(double));
    h->y = pk_alloc_aligned(desc->out_count * sizeof(double));
    h->w2 = pk_alloc_aligned(desc->work_count[1] * sizeof(double));
    if (!w1_is_y) h->w1_own = pk_alloc_aligned(desc->work_count[0] * sizeof(double));
    h->w1 = w1_is_y ? h->y : h->w1_own;
    if (!h->x || !h->y || !h->w1 || !h->w2) {
        pk_mf_host_destroy(h);
        return pk_fail(PK_ENOMEM, "magicfilter3d: cannot allocate %zu + %zu + %zu%s doubles",
                       desc->in_count, desc->out_count, desc->work_count[1],
                       w1_is_y ? "" : " + work");
    }
    *plan = h;
    return PK_OK;
}

pk_status pk_mf_host_upload(void *impl, const double *x, double *seconds)
{
    pk_mf_host_plan *h = impl;
    const double t0 = pk_now();
    pk_copy_threads(h->x, x, h->d.in_count * sizeof(double), h->nt);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_mf_host_download(void *impl, double *y, double *seconds)
{
    pk_mf_host_plan *h = impl;
    const double t0 = pk_now();
    pk_copy_threads(y, h->y, h->d.out_count * sizeof(double), h->nt);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_mf_host_execute(void *impl, const double *x, double *y, double *kernel_seconds,
                             double *transfer_seconds)
{
    pk_mf_host_plan *h = impl;
    const uintptr_t x0 = (uintptr_t)x, y0 = (uintptr_t)y;
    const size_t xb = h->d.in_count * sizeof(double), yb = h->d.out_count * sizeof(double);
    *kernel_seconds = 0;
    /* the passes read the input by scalar broadcasts and store rows by their alignment
     * (streaming whole 64-byte lines only): any double's address will do */
    if (!(y0 + yb <= x0 || x0 + xb <= y0) || x0 % sizeof(double) != 0 ||
        y0 % sizeof(double) != 0) {
        double up = 0, down = 0;
        PK_TRY(pk_mf_host_upload(h, x, &up));
        PK_TRY(h->run(h, kernel_seconds));
        PK_TRY(pk_mf_host_download(h, y, &down));
        *transfer_seconds = up + down;
        return PK_OK;
    }
    double *own_x = h->x, *own_w1 = h->w1, *own_y = h->y;
    h->x = (double *)x; /* never written (the passes read it once) */
    if (h->w1 == h->y) h->w1 = y;
    h->y = y;
    pk_status s = h->run(h, kernel_seconds);
    h->x = own_x;
    h->w1 = own_w1;
    h->y = own_y;
    *transfer_seconds = 0;
    return s;
}

void pk_mf_host_destroy(void *impl)
{
    pk_mf_host_plan *h = impl;
    if (!h) return;
    pk_free_aligned(h->x);
    pk_free_aligned(h->y);
    pk_free_aligned(h->w2);
    pk_free_aligned(h->w1_own);
    free(h);
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct mf_oneshot {
    const double *x;
    double *y;
    size_t xbytes, ybytes;
    double up, kern, down;
} mf_oneshot;

/* The one-shot call's work on a fresh plan: a device failure here falls back too. */
static pk_status mf_oneshot_work(pk_choice *c, void *arg)
{
    mf_oneshot *o = arg;
    const void *a[2] = {o->x, o->y};
    const size_t b[2] = {o->xbytes, o->ybytes};
    /* on the caller's arrays: host memory on a host backend, device memory on CUDA */
    if (mf_ops(c)->execute && pk_choice_direct(c, a, b, 2)) {
        c->no_fallback = 1;
        return mf_ops(c)->execute(c->impl, o->x, o->y, &o->kern, &o->down);
    }
    PK_TRY(mf_ops(c)->upload(c->impl, o->x, &o->up));
    PK_TRY(mf_ops(c)->run(c->impl, &o->kern));
    /* y over x: a download failing part way leaves no intact x to retry another backend on */
    const uintptr_t x0 = (uintptr_t)o->x, y0 = (uintptr_t)o->y;
    c->no_fallback |= !(y0 + o->ybytes <= x0 || x0 + o->xbytes <= y0);
    return mf_ops(c)->download(c->impl, o->y, &o->down);
}

pk_status pk_magicfilter3d(pk_context *ctx, const pk_magicfilter3d_params *p, const char *variant,
                           const double *x, double *y, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_mf_desc d;
    PK_TRY(mf_validate(p, &d));
    PK_CHECK_NULL(x);
    PK_CHECK_NULL(y);
    mf_oneshot o = {x, y, d.in_count * sizeof(double), d.out_count * sizeof(double), 0, 0, 0};
    pk_choice c;
    const int key[5] = {d.n[0], d.n[1], d.n[2], d.transpose, d.bc}; /* the context's cache */
    PK_TRY(pk_dispatch_oneshot(ctx, &mf_class, variant, &d, key, sizeof key, mf_oneshot_work, &o,
                               NULL, &c));
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = o.up + o.down;
        info->kernel_s = o.kern;
        mf_counts(&d, &info->flops, &info->bytes);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */
pk_status pk_magicfilter3d_plan_create(pk_magicfilter3d_plan **plan, pk_context *ctx,
                                       const pk_magicfilter3d_params *p, const char *variant,
                                       pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_mf_desc d;
    PK_TRY(mf_validate(p, &d));
    pk_magicfilter3d_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "magicfilter3d: out of host memory");
    pl->d = d;
    pk_status s = pk_dispatch(ctx, &mf_class, variant, &d, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    mf_counts(&d, &pl->flops, &pl->bytes);
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

pk_status pk_magicfilter3d_plan_upload(pk_magicfilter3d_plan *plan, const double *x)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(x);
    double s;
    PK_TRY(mf_ops(&plan->c)->upload(plan->c.impl, x, &s));
    plan->uploaded = 1;
    plan->ran = 0;
    return PK_OK;
}

pk_status pk_magicfilter3d_plan_run(pk_magicfilter3d_plan *plan, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_run: no x uploaded yet (call plan_upload)");
    const double t0 = pk_now();
    double kern = 0;
    PK_TRY(mf_ops(&plan->c)->run(plan->c.impl, &kern));
    plan->ran = 1;
    pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
    return PK_OK;
}

pk_status pk_magicfilter3d_plan_download(pk_magicfilter3d_plan *plan, double *y)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(y);
    PK_CHECK(plan->ran, PK_ESTATE,
             "plan_download: the uploaded x was not filtered yet (call plan_run)");
    double s;
    return mf_ops(&plan->c)->download(plan->c.impl, y, &s);
}

pk_status pk_magicfilter3d_plan_execute(pk_magicfilter3d_plan *plan, const double *x, double *y,
                                        pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(x);
    PK_CHECK_NULL(y);
    const double t0 = pk_now();
    mf_oneshot o = {x, y, plan->d.in_count * sizeof(double), plan->d.out_count * sizeof(double),
                    0, 0, 0};
    PK_TRY(mf_oneshot_work(&plan->c, &o));
    pk_choice_run_info(&plan->c, info, o.kern, plan->flops, plan->bytes, t0);
    if (info) info->transfer_s = o.up + o.down;
    plan->uploaded = plan->ran = 0; /* the resident x and y are undefined now */
    return PK_OK;
}

void pk_magicfilter3d_plan_destroy(pk_magicfilter3d_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) mf_ops(&plan->c)->destroy(plan->c.impl);
    free(plan);
}

/* ---- one pass alone (pk_magicfilter_pass) ---------------------------------------------- */
pk_status pk_magicfilter_pass(pk_context *ctx, const pk_magicfilter_pass_params *p,
                              const char *variant, const double *x, double *y,
                              pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    const double t0 = pk_now();
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(p);
    /* the first pass of a 3-D operator whose first axis is this one (its checks name n1) */
    const pk_magicfilter3d_params p3 = {p->n, 1, 1, p->transpose, p->bc};
    pk_mf_desc d;
    PK_TRY(mf_validate(&p3, &d));
    PK_CHECK(p->lines >= 1, PK_ESIZE, "lines: must be >= 1, got %zu", p->lines);
    pk_mf_pass pass = d.pass[0];
    const size_t longest = (size_t)(pass.nin > pass.nout ? pass.nin : pass.nout);
    PK_CHECK(p->lines <= (size_t)LONG_MAX && p->lines <= SIZE_MAX / sizeof(double) / longest,
             PK_EOVERFLOW, "%zu lines of %zu points: the arrays' bytes overflow size_t",
             p->lines, longest);
    pass.ndat = (long)p->lines;
    PK_CHECK_NULL(x);
    PK_CHECK_NULL(y);
    const size_t xb = p->lines * (size_t)pass.nin * sizeof(double);
    const size_t yb = p->lines * (size_t)pass.nout * sizeof(double);
    PK_CHECK((uintptr_t)y + yb <= (uintptr_t)x || (uintptr_t)x + xb <= (uintptr_t)y, PK_EINVAL,
             "y must not overlap x (a pass reads whole lines after writing transposed rows)");
    const char *v = variant && *variant ? variant : NULL;
#ifdef PK_HAVE_OPENMP
    if (!v) v = "omp";
#else
    if (!v) v = "simd";
    PK_CHECK(strcmp(v, "omp") != 0, PK_ENOBACKEND,
             "magicfilter pass variant 'omp': the library was built without OpenMP");
#endif
    const int omp = !strcmp(v, "omp");
    const pk_mf_pass_fn fn = omp || !strcmp(v, "simd") ? pk_mf_pass_simd
                             : !strcmp(v, "unrolled")  ? pk_mf_pass_unrolled
                             : !strcmp(v, "serial")    ? pk_mf_pass_serial
                                                       : NULL;
    PK_CHECK(fn, PK_ENOVARIANT,
             "magicfilter pass variant '%s': unknown (known: omp, simd, unrolled, serial)", v);
    if (fn == pk_mf_pass_simd) PK_TRY(pk_mf_simd_isa(&ctx->tuning, &pass.isa));
    const int nt = omp ? pk_host_threads(pk_tuning_threads(&ctx->tuning, ctx->opt.threads)) : 1;
    const double t1 = pk_now();
    if (omp)
        pk_omp_mf_pass(&pass, d.g, x, y, fn, nt);
    else
        fn(&pass, d.g, x, y, 0, pass.ndat);
    if (info) {
        info->backend = omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL;
        pk_strlcpy(info->variant, v, sizeof info->variant);
        info->kernel_s = pk_now() - t1;
        info->wall_s = pk_now() - t0;
        info->flops = MF_FLOPS_PER_OUTPUT * (double)p->lines * pass.nout;
        info->bytes = sizeof(double) * (double)p->lines * (double)(pass.nin + pass.nout);
        snprintf(info->reason, sizeof info->reason, "host pass (%d thread%s)", nt,
                 nt == 1 ? "" : "s");
    }
    return PK_OK;
}
