/* conv2d.c - the public conv2d calls (docs/KERNELS.md section 5): validate once, resolve the
 * method (direct or FFT) into a variant, choose a backend (with fallback under auto), call
 * through the backend's table, fill the run info.  Also the host plan and halo rows the
 * serial and OpenMP backends share. */
#include "conv2d_host.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CV_BYTES_PER_PIXEL 8.0 /* the image read once and the output written once */

struct pk_conv2d_plan {
    pk_choice c;
    size_t n; /* pixels: h * w */
    double flops, bytes;
    int uploaded, ran;
};

/* ---- validation ----------------------------------------------------------------------- */
static pk_status cv_validate(const pk_conv2d_params *p, pk_cv_desc *d)
{
    PK_CHECK_NULL(p);
    PK_CHECK(p->h >= 1, PK_ESIZE, "h: must be >= 1, got %d", p->h);
    PK_CHECK(p->w >= 1, PK_ESIZE, "w: must be >= 1, got %d", p->w);
    PK_CHECK(p->kh >= 1, PK_ESIZE, "kh: must be >= 1, got %d", p->kh);
    PK_CHECK(p->kw >= 1, PK_ESIZE, "kw: must be >= 1, got %d", p->kw);
    size_t bytes;
    PK_CHECK(pk_mul3_size((size_t)p->h, (size_t)p->w, 2 * sizeof(float), &bytes) == 0,
             PK_EOVERFLOW, "image %d x %d: two float buffers overflow size_t", p->h, p->w);
    PK_CHECK(pk_mul3_size((size_t)p->kh, (size_t)p->kw, sizeof(float), &bytes) == 0,
             PK_EOVERFLOW, "psf %d x %d: its bytes overflow size_t", p->kh, p->kw);
    /* Wrapped rows are w + kw - 1 long and indices stay int. */
    PK_CHECK((long long)p->w + p->kw - 1 <= INT_MAX && (long long)p->h + p->kh - 1 <= INT_MAX,
             PK_EOVERFLOW, "image %d x %d with psf %d x %d: h + kh - 1 or w + kw - 1 overflows int",
             p->h, p->w, p->kh, p->kw);
    PK_CHECK(p->method >= PK_CONV2D_AUTO && p->method <= PK_CONV2D_FFT, PK_EINVAL,
             "method: must be PK_CONV2D_AUTO (0), _DIRECT (1) or _FFT (2), got %d", p->method);
    memset(d, 0, sizeof *d);
    d->h = p->h;
    d->w = p->w;
    d->kh = p->kh;
    d->kw = p->kw;
    d->method = p->method;
    return PK_OK;
}

/* A non-finite PSF value would poison every output pixel (all of them through the FFT):
 * rejected.  The image may hold anything; its NaN/Inf propagate to the outputs that see
 * them (docs: README, "conv2d"). */
static pk_status cv_check_psf(const pk_conv2d_params *p, const float *psf)
{
    PK_CHECK_NULL(psf);
    const size_t n = (size_t)p->kh * (size_t)p->kw;
    for (size_t i = 0; i < n; ++i)
        PK_CHECK(isfinite(psf[i]), PK_ENONFINITE, "psf[%zu][%zu]: must be finite, got %g",
                 i / (size_t)p->kw, i % (size_t)p->kw, (double)psf[i]);
    return PK_OK;
}

pk_status pk_cv_int_limits(const pk_cv_desc *d, const char *backend, size_t *pixels, size_t *taps)
{
    const int h = d->h, w = d->w, kh = d->kh, kw = d->kw;
    *pixels = (size_t)h * (size_t)w; /* both fit in size_t: cv_validate checked the bytes */
    *taps = (size_t)kh * (size_t)kw;
    PK_CHECK(h <= INT_MAX / 2 - kh && w <= INT_MAX / 2 - kw && *taps <= INT_MAX, PK_EUNSUPPORTED,
             "conv2d: %s needs h + kh and w + kw below 2^30 and at most 2^31 - 1 PSF taps, got "
             "%d + %d, %d + %d and %d x %d", backend, h, kh, w, kw, kh, kw);
    return PK_OK;
}

pk_status pk_conv2d_reference(const pk_conv2d_params *p, const float *image, const float *psf,
                              float *out)
{
    pk_clear_error();
    pk_cv_desc d;
    PK_TRY(cv_validate(p, &d));
    PK_CHECK_NULL(image);
    PK_TRY(cv_check_psf(p, psf));
    PK_CHECK_NULL(out);
    const uintptr_t bytes = (uintptr_t)d.h * (uintptr_t)d.w * sizeof(float);
    const uintptr_t i0 = (uintptr_t)image, o0 = (uintptr_t)out;
    PK_CHECK(o0 + bytes <= i0 || i0 + bytes <= o0, PK_EINVAL,
             "out: must not overlap image (the reference does not work in place)");
    const uintptr_t pbytes = (uintptr_t)d.kh * (uintptr_t)d.kw * sizeof(float), p0 = (uintptr_t)psf;
    PK_CHECK(o0 + bytes <= p0 || p0 + pbytes <= o0, PK_EINVAL,
             "out: must not overlap psf (the PSF is read while out is written)");
    pk_cv_ref(&d, image, psf, out);
    return PK_OK;
}

/* ---- method -> variant: the kernel class the dispatcher uses ---------------------------- */
/* What one create resolved; the last successful create is the one that runs. */
typedef struct cv_outcome {
    char variant[32];
    char note[160];
} cv_outcome;

typedef struct cv_request {
    pk_cv_desc d;
    int named;          /* the caller named a variant: it overrides the method */
    int use_fft;        /* the method resolved to the FFT */
    char why[96];       /* how the method resolved ("method auto: 121 taps < 676: direct") */
    cv_outcome *out;
} cv_request;

/* p->method into rq->use_fft and rq->why; auto's threshold is conv2d.fft_taps. */
static pk_status cv_resolve_method(int kh, int kw, int method, const pk_tuning *t, cv_request *rq)
{
    const double taps = (double)kh * (double)kw;
    rq->use_fft = method == PK_CONV2D_FFT;
    if (method == PK_CONV2D_FFT) snprintf(rq->why, sizeof rq->why, "method fft");
    if (method != PK_CONV2D_AUTO) return PK_OK;
    int v[2];
    PK_TRY(pk_param_get(t, PK_PARAM_CONV2D_FFT_TAPS, v));
    const double threshold = (double)v[0];
    rq->use_fft = taps >= threshold;
    snprintf(rq->why, sizeof rq->why, "method auto: %.0f taps %s %.0f%s: %s", taps,
             rq->use_fft ? ">=" : "<", threshold,
             pk_param_chosen(t, PK_PARAM_CONV2D_FFT_TAPS) ? " (conv2d.fft_taps)" : "",
             rq->use_fft ? "fft" : "direct");
    return PK_OK;
}

/* The dispatcher passes the named variant, or the backend's first (its best direct one).
 * Unnamed, an FFT method takes the backend's "fft" or "<backend>-fft" variant; a backend
 * without one runs direct and says so. */
static pk_status cv_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    /* the method again with the plan's values: a wisdom entry's conv2d.fft_taps may move it */
    cv_request again = *(const cv_request *)desc;
    const cv_request *rq = &again;
    PK_TRY(cv_resolve_method(again.d.kh, again.d.kw, again.d.method, tuning, &again));
    pk_cv_desc d = rq->d;
    char fft[32], note[160] = "";
    const char *v = variant;
    if (!rq->named && rq->use_fft) {
        snprintf(fft, sizeof fft, "%s-fft", backend->name);
        if (pk_list_find(((const pk_cv_ops *)kops)->variants, "fft") >= 0)
            v = "fft";
        else if (pk_list_find(((const pk_cv_ops *)kops)->variants, fft) >= 0)
            v = fft;
        else
            snprintf(note, sizeof note, "%s; backend %s has no FFT variant: ran %s", rq->why,
                     backend->name, variant);
    }
    if (!note[0] && !rq->named && rq->why[0]) pk_strlcpy(note, rq->why, sizeof note);
    d.variant = v;
    d.threads = threads;
    d.tuning = tuning;
    PK_TRY(((const pk_cv_ops *)kops)->create(state, device, &d, impl));
    pk_strlcpy(rq->out->variant, v, sizeof rq->out->variant);
    pk_strlcpy(rq->out->note, note, sizeof rq->out->note);
    return PK_OK;
}

static void cv_destroy_on(const void *kops, void *impl)
{
    ((const pk_cv_ops *)kops)->destroy(impl);
}

static double cv_plan_bytes(const void *desc)
{
    const pk_cv_desc *d = &((const cv_request *)desc)->d;
    return 2.0 * 4.0 * (double)d->h * (double)d->w; /* image and out */
}
/* A method the caller chose (direct or FFT) is as good as a variant named: no wisdom then. */
static int cv_accepts_wisdom(const void *desc)
{
    return ((const cv_request *)desc)->d.method == PK_CONV2D_AUTO;
}
static void cv_wisdom_key(const void *desc, char *key, size_t len)
{
    const pk_cv_desc *d = &((const cv_request *)desc)->d;
    snprintf(key, len, "psf=%dx%d", d->kh, d->kw);
}
/* Direct: 2 flops a tap and pixel.  FFT: a real forward and inverse transform of the image
 * (about 2.5 n log2 n flops each) and the spectrum product (6 flops a complex bin). */
static void cv_cost(const void *desc, pk_cost *c)
{
    const cv_request *rq = desc;
    const double n = (double)rq->d.h * (double)rq->d.w;
    c->flops = rq->use_fft ? 2.0 * 2.5 * n * log2(n > 2 ? n : 2) + 3.0 * n
                           : 2.0 * (double)rq->d.kh * (double)rq->d.kw * n;
    c->bytes = CV_BYTES_PER_PIXEL * n;
    c->link_bytes = 2.0 * 4.0 * n; /* the image in, the output out */
}
static const pk_kernel_class cv_class = {
    .name = "conv2d",
    .on = PK_KERNEL_ON(cv),
    .create = cv_create_on,
    .destroy = cv_destroy_on,
    .plan_bytes = cv_plan_bytes,
    .accepts_wisdom = cv_accepts_wisdom,
    .wisdom_key = cv_wisdom_key,
    .cost = cv_cost,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_cv_ops *cv_ops(const pk_choice *c) { return c->kops; }

const char *pk_conv2d_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&cv_class, backend);
}

/* The variant the method chose and its note, into the choice. */
static void cv_finish(pk_choice *c, const void *desc)
{
    const cv_request *rq = desc;
    pk_strlcpy(c->variant, rq->out->variant, sizeof c->variant);
    if (rq->out->note[0]) pk_append_note(c->reason, sizeof c->reason, "%s", rq->out->note);
}

/* Validate the call and dispatch; `work` runs on the plan (NULL for plans: a fresh plan the
 * caller owns; else the one-shot call's, through the context's cache). */
static pk_status cv_dispatch(pk_context *ctx, const pk_conv2d_params *p, const char *variant,
                             const float *psf, pk_choice_work work, void *arg, pk_choice *c)
{
    cv_outcome out;
    cv_request rq;
    memset(&rq, 0, sizeof rq);
    memset(&out, 0, sizeof out);
    PK_TRY(cv_validate(p, &rq.d));
    PK_TRY(cv_check_psf(p, psf));
    PK_TRY(cv_resolve_method(p->kh, p->kw, p->method, &ctx->tuning, &rq));
    rq.d.psf = psf;
    rq.named = variant && *variant;
    rq.out = &out;
    if (!work) {
        PK_TRY(pk_dispatch(ctx, &cv_class, variant, &rq, NULL, NULL, c));
        cv_finish(c, &rq);
        return PK_OK;
    }
    /* the context's cache: sizes, method and the PSF itself make a plan */
    const size_t taps = (size_t)p->kh * (size_t)p->kw;
    int *key = malloc(5 * sizeof(int) + taps * sizeof(float));
    PK_CHECK(key != NULL, PK_ENOMEM, "conv2d: out of host memory");
    key[0] = p->h, key[1] = p->w, key[2] = p->kh, key[3] = p->kw, key[4] = p->method;
    memcpy(key + 5, psf, taps * sizeof(float));
    pk_status s = pk_dispatch_oneshot(ctx, &cv_class, variant, &rq, key,
                                      5 * sizeof(int) + taps * sizeof(float), work, arg,
                                      cv_finish, c);
    free(key);
    return s;
}

static void cv_counts(pk_run_info *info, const pk_conv2d_params *p)
{
    const double pixels = (double)p->h * (double)p->w;
    info->flops = 2.0 * (double)p->kh * (double)p->kw * pixels;
    info->bytes = CV_BYTES_PER_PIXEL * pixels;
}

/* ---- host plans (serial, OpenMP) -------------------------------------------------------- */
pk_status pk_cv_host_create(const pk_cv_desc *desc, pk_cv_host_plan **plan)
{
    pk_cv_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "conv2d: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant, sizeof h->variant);
    h->d.variant = h->variant;
    h->n = (size_t)desc->h * (size_t)desc->w;
    const size_t taps = (size_t)desc->kh * (size_t)desc->kw;
    h->image = pk_alloc_aligned(h->n * sizeof(float));
    h->out = pk_alloc_aligned(h->n * sizeof(float));
    h->psf = pk_alloc_aligned(taps * sizeof(float));
    if (!h->image || !h->out || !h->psf) {
        const size_t bytes = h->n * sizeof(float);
        pk_cv_host_destroy(h);
        return pk_fail(PK_ENOMEM, "conv2d: cannot allocate 2 x %zu + %zu bytes", bytes,
                       taps * sizeof(float));
    }
    memcpy(h->psf, desc->psf, taps * sizeof(float));
    h->d.psf = h->psf;
    *plan = h;
    return PK_OK;
}

pk_status pk_cv_host_upload(void *impl, const float *image, double *seconds)
{
    pk_cv_host_plan *h = impl;
    double t0 = pk_now();
    pk_copy_threads(h->image, image, h->n * sizeof(float), h->nt);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cv_host_download(void *impl, float *out, double *seconds)
{
    pk_cv_host_plan *h = impl;
    double t0 = pk_now();
    pk_copy_threads(out, h->out, h->n * sizeof(float), h->nt);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cv_host_execute(void *impl, const float *image, float *out, double *kernel_seconds,
                             double *transfer_seconds)
{
    pk_cv_host_plan *h = impl;
    const uintptr_t i0 = (uintptr_t)image, o0 = (uintptr_t)out;
    const size_t bytes = h->n * sizeof(float);
    *kernel_seconds = 0;
    if (!(o0 + bytes <= i0 || i0 + bytes <= o0)) { /* in place: through the plan's arrays */
        double up = 0, down = 0;
        PK_TRY(pk_cv_host_upload(h, image, &up));
        PK_TRY(h->ops->run(h, kernel_seconds));
        PK_TRY(pk_cv_host_download(h, out, &down));
        *transfer_seconds = up + down;
        return PK_OK;
    }
    /* a fresh output (malloc, numpy) first-touched by the run: whole huge pages fault 512x
     * fewer times (advice on the caller's range only; its contents are not touched) */
    pk_advise_huge(out, bytes);
    float *own_image = h->image, *own_out = h->out;
    h->image = (float *)image; /* read only */
    h->out = out;
    pk_status s = h->ops->run(h, kernel_seconds);
    h->image = own_image;
    h->out = own_out;
    *transfer_seconds = 0;
    return s;
}

void pk_cv_host_destroy(void *impl)
{
    pk_cv_host_plan *h = impl;
    if (!h) return;
    if (h->priv_free) h->priv_free(h->priv);
    pk_free_aligned(h->image);
    pk_free_aligned(h->out);
    pk_free_aligned(h->psf);
    free(h);
}

void pk_cv_wrap_row(const float *row, int w, int shift, int n, float *ext)
{
    int c = (int)((((long long)-shift) % w + w) % w);
    for (int x = 0; x < n; c = 0) { /* one copy per pass over the row */
        const int len = w - c < n - x ? w - c : n - x;
        memcpy(ext + x, row + c, (size_t)len * sizeof(float));
        x += len;
    }
}

/* Slot stride: the w + kw - 1 wrapped floats, plus room for a last vector of up to 16 lanes
 * that starts below w (its loads run to roundup16(w) + kw - 2), rounded to 64 bytes. */
static size_t cv_ring_stride(const pk_cv_desc *d)
{
    return ((((size_t)d->w + 15) & ~(size_t)15) + (size_t)d->kw - 1 + 15) & ~(size_t)15;
}

static int cv_ring_slots(const pk_cv_desc *d, int rows)
{
    const long long need = (long long)d->kh + rows - 1;
    return need < d->h ? (int)need : d->h;
}

size_t pk_cv_ring_floats(const pk_cv_desc *d, int rows)
{
    return cv_ring_stride(d) * (size_t)cv_ring_slots(d, rows);
}

void pk_cv_ring_init(pk_cv_ring *r, const pk_cv_desc *d, int rows, float *buf)
{
    r->buf = buf;
    r->stride = cv_ring_stride(d);
    r->slots = cv_ring_slots(d, rows);
    /* the pad past each row's w + kw - 1 floats: zeros, so that the dropped lanes of a last
     * partial vector compute on zeros (never denormal garbage) */
    const size_t used = (size_t)d->w + (size_t)d->kw - 1;
    for (int k = 0; k < r->slots; ++k)
        memset(buf + (size_t)k * r->stride + used, 0, (r->stride - used) * sizeof(float));
}

void pk_cv_ring_advance(pk_cv_ring *r, const pk_cv_desc *d, const float *image, int oi, int first)
{
    const int a = d->kh / 2, top = oi + d->kh; /* rows v < top are needed */
    /* first: rows oi .. top - 1 (all h source rows when the ring holds one of each) */
    const int n = first ? (r->slots < d->kh ? r->slots : d->kh) : 1;
    for (int v = top - n; v < top; ++v) {
        const int src = (int)((((long long)v - a) % d->h + d->h) % d->h);
        pk_cv_wrap_row(image + (size_t)src * (size_t)d->w, d->w, d->kw / 2, d->w + d->kw - 1,
                       r->buf + (size_t)(v % r->slots) * r->stride);
    }
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct cv_oneshot {
    const float *image;
    float *out;
    double up, kern, down;
    size_t bytes; /* of the image (and of out) */
} cv_oneshot;

/* The one-shot call's work on a fresh plan (and plan_execute's on the caller's plan): a
 * device failure here falls back too. */
static pk_status cv_oneshot_work(pk_choice *c, void *arg)
{
    cv_oneshot *o = arg;
    /* out overlapping the image: a failure part way leaves no input to retry another on */
    const uintptr_t i0 = (uintptr_t)o->image, o0 = (uintptr_t)o->out;
    const int overlaps = !(o0 + o->bytes <= i0 || i0 + o->bytes <= o0);
    const void *a[2] = {o->image, o->out};
    const size_t b[2] = {o->bytes, o->bytes};
    /* on the caller's arrays: host memory on a host backend, device memory on CUDA */
    if (cv_ops(c)->execute && pk_choice_direct(c, a, b, 2)) {
        c->no_fallback |= overlaps;
        return cv_ops(c)->execute(c->impl, o->image, o->out, &o->kern, &o->down);
    }
    PK_TRY(cv_ops(c)->upload(c->impl, o->image, &o->up));
    PK_TRY(cv_ops(c)->run(c->impl, &o->kern));
    c->no_fallback |= overlaps;
    return cv_ops(c)->download(c->impl, o->out, &o->down);
}

pk_status pk_conv2d(pk_context *ctx, const pk_conv2d_params *p, const char *variant,
                    const float *image, const float *psf, float *out, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(p);
    PK_CHECK_NULL(image);
    PK_CHECK_NULL(out);
    cv_oneshot o = {image, out, 0, 0, 0, (size_t)p->h * (size_t)p->w * sizeof(float)};
    pk_choice c;
    PK_TRY(cv_dispatch(ctx, p, variant, psf, cv_oneshot_work, &o, &c));
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = o.up + o.down;
        info->kernel_s = o.kern;
        cv_counts(info, p);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */
pk_status pk_conv2d_plan_create(pk_conv2d_plan **plan, pk_context *ctx, const pk_conv2d_params *p,
                                const char *variant, const float *psf, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_conv2d_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "conv2d: out of host memory");
    pk_status s = cv_dispatch(ctx, p, variant, psf, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    pk_run_info tmp;
    cv_counts(&tmp, p);
    pl->n = (size_t)p->h * (size_t)p->w;
    pl->flops = tmp.flops;
    pl->bytes = tmp.bytes;
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

pk_status pk_conv2d_plan_upload(pk_conv2d_plan *plan, const float *image)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(image);
    double s;
    PK_TRY(cv_ops(&plan->c)->upload(plan->c.impl, image, &s));
    plan->uploaded = 1;
    plan->ran = 0;
    return PK_OK;
}

pk_status pk_conv2d_plan_run(pk_conv2d_plan *plan, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_run: no image uploaded yet (call plan_upload)");
    double t0 = pk_now(), kern = 0;
    PK_TRY(cv_ops(&plan->c)->run(plan->c.impl, &kern));
    plan->ran = 1;
    pk_choice_run_info(&plan->c, info, kern, plan->flops, plan->bytes, t0);
    return PK_OK;
}

pk_status pk_conv2d_plan_download(pk_conv2d_plan *plan, float *out)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(out);
    PK_CHECK(plan->ran, PK_ESTATE, "plan_download: the uploaded image was not convolved yet "
             "(call plan_run)");
    double s;
    return cv_ops(&plan->c)->download(plan->c.impl, out, &s);
}

pk_status pk_conv2d_plan_execute(pk_conv2d_plan *plan, const float *image, float *out,
                                 pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(image);
    PK_CHECK_NULL(out);
    const double t0 = pk_now();
    cv_oneshot o = {image, out, 0, 0, 0, plan->n * sizeof(float)};
    plan->uploaded = plan->ran = 0; /* the resident frame is undefined from here on */
    PK_TRY(cv_oneshot_work(&plan->c, &o));
    pk_choice_run_info(&plan->c, info, o.kern, plan->flops, plan->bytes, t0);
    if (info) info->transfer_s = o.up + o.down;
    return PK_OK;
}

void pk_conv2d_plan_destroy(pk_conv2d_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) cv_ops(&plan->c)->destroy(plan->c.impl);
    free(plan);
}
