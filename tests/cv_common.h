/* cv_common.h - the conv2d test every backend runs (test_cv_<backend>.c picks one).
 *
 * 1. Every variant against the serial reference (pk_conv2d_reference: modulo indexing,
 *    double sums) with the StrayLight differ, rtol 1e-5, zero 1e-10: odd sizes, a 1 x 1
 *    PSF, PSFs larger than the image in one and in both dimensions (wrapping more than
 *    once), even and odd PSF sizes, rows shorter and longer than the vector blocks, and the
 *    real frame once per variant (813 x 5271, 11 x 11, pk_conv2d_generate).  omp-rb again
 *    under each conv2d.isa level (AVX-512, AVX2, portable C) and on 3 and 7 threads, with
 *    prime extents, 1-row frames and frames shorter than the PSF among the sizes.  OpenMP's
 *    fft again under each conv2d.fft_plan (estimated, measured, and auto after measuring:
 *    from the wisdom).
 * 2. Plans: several frames through one plan; repeated runs; the run info's counts.
 *    plan_execute: two frames executed into two output arrays each equal the reference
 *    (the first output untouched by the second call: the call uses the arrays it is
 *    given), the image unchanged, no copy in or out on serial and OpenMP (transfer_s 0);
 *    in place (out == image) right too; afterwards plan_run and plan_download without an
 *    upload are PK_ESTATE, and upload, run, download work again; NULL arguments PK_ENULL.
 * 3. FFT variants against a direct variant, and on signed data norm-wise.
 * 4. The method: DIRECT, FFT and AUTO (its threshold moved with conv2d.fft_taps)
 *    map to the backend's variants, or say why not.
 *
 * Why the element-wise tolerance holds, and where.  Values are O(1) and positive: images
 * in [0.5, 1.5] (or the generated frame, 0.3 .. 6), PSFs positive and summing to 1, so
 * every output is >= min(image) and the zero threshold hides nothing.
 *  - Direct variants add kh*kw positive products in float, in any order, with or without
 *    FMA: the relative error of such a sum is at most gamma_n = n u / (1 - n u) with
 *    u = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2), 7.2e-6 for
 *    121 taps.  The reference cases keep n <= 144, so the bound itself is under 1e-5.
 *    Past ~160 taps (the FFT comparisons) the bound exceeds 1e-5 and the tests rely on
 *    rounding errors behaving like a random walk, ~sqrt(n/3) u (2e-6 at 1189 taps); each
 *    test line prints the maximum relative error it saw.
 *  - FFT variants: the error of an FFT-based convolution is norm-wise, spread over the
 *    whole frame: ||fft - exact||_2 <= c log2(N) u ||image||_2 ||psf||_1 (forward, product,
 *    inverse: each transform contributes ~log2(N) eta ||.||_2, Higham 24.1; c a small
 *    constant, N = transform size).  Relative to one output that is
 *    c log2(N) u * rms(image) / min(out) per element on average: with positive data of a
 *    small dynamic range (max/min <= 12 here) it is a few 1e-6 (measured <= 2e-6 at 813 x
 *    5271), so the element-wise differ applies.  For data where it does not (signed, zero
 *    mean: outputs near zero), the test is the norm-wise bound itself with c = 8:
 *    ||fft - ref||_2 / (||image||_2 ||psf||_1) <= 8 log2(N) u.
 */
#include "portkern.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CV_RTOL 1e-5
#define CV_ZERO 1e-10

static pk_context *cv_ctx;
static pk_backend_id cv_backend;

static float *cv_alloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

static unsigned cv_next(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Values in [lo, lo + span): positive O(1) data for lo = 0.5, span = 1. */
static void cv_fill(float *x, size_t n, unsigned seed, float lo, float span)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; ++i) x[i] = lo + span * (float)cv_next(&s) / (float)(1u << 24);
}

/* A positive PSF with no symmetry (a flipped or shifted kernel fails), summing to 1. */
static void cv_psf(float *psf, int kh, int kw, unsigned seed)
{
    double sum = 0;
    cv_fill(psf, (size_t)kh * kw, seed, 0.1f, 1.0f);
    for (size_t i = 0; i < (size_t)kh * kw; ++i) sum += psf[i];
    for (size_t i = 0; i < (size_t)kh * kw; ++i) psf[i] = (float)(psf[i] / sum);
}

static int cv_is_fft(const char *variant)
{
    size_t n = strlen(variant);
    return strcmp(variant, "fft") == 0 || (n > 4 && strcmp(variant + n - 4, "-fft") == 0);
}

static void cv_params(pk_conv2d_params *p, int h, int w, int kh, int kw, int method)
{
    p->h = h;
    p->w = w;
    p->kh = kh;
    p->kw = kw;
    p->method = method;
}

/* Run variant on (image, psf) and compare with ref element-wise; names the case. */
static void cv_expect(const char *variant, const pk_conv2d_params *p, const float *image,
                      const float *psf, const float *ref, const char *what)
{
    size_t n = (size_t)p->h * p->w;
    float *out = cv_alloc(n);
    pk_run_info info;
    int s = pk_conv2d(cv_ctx, p, variant, image, psf, out, &info);
    char err[512];
    snprintf(err, sizeof err, "%s", pk_last_error());
    pk_diff_report r;
    int d = s == PK_OK ? pk_diff_f32(out, ref, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE, &r) : -1;
    char at[64] = "-";
    if (s == PK_OK && r.num_failed) {
        size_t shape[2] = {(size_t)p->h, (size_t)p->w};
        pk_format_index(r.first_fail, shape, 2, at, sizeof at);
    }
    ok(s == PK_OK && d == PK_OK && info.backend == cv_backend && strcmp(info.variant, variant) == 0,
       "%s %dx%d psf %dx%d%s matches the reference (status %s%s%s, max rel %.2e, %zu failed, "
       "first %s)", variant, p->h, p->w, p->kh, p->kw, what, pk_status_name(s), s ? ": " : "",
       s ? err : "", s == PK_OK ? r.max_rel_err : -1.0, s == PK_OK ? r.num_failed : (size_t)0, at);
    free(out);
}

/* (h, w, kh, kw) against the reference: odd sizes, 1 x 1 image and PSF, PSF taller / wider /
 * larger than the image (wrapping more than once), even PSFs, rows around the 8- and 64-float
 * blocks. */
static const int cv_sizes[][4] = {
    {1, 1, 1, 1},   {1, 1, 3, 2},    {7, 13, 3, 5},   {13, 7, 1, 1},  {5, 37, 9, 3},
    {6, 4, 3, 11},  {4, 6, 11, 13},  {3, 2, 7, 8},    {17, 29, 4, 6}, {17, 29, 2, 2},
    {31, 67, 5, 7}, {9, 150, 1, 12}, {150, 9, 12, 1}, {2, 73, 12, 12}, {64, 64, 8, 8},
    {61, 203, 11, 11}, {40, 1000, 2, 65},
    /* omp-rb's blocks (4 rows x 64 columns, vectors of 4-16 with a last partial one): prime
     * extents, 1-row frames, a frame shorter than the PSF, widths around 16 and 64 */
    {53, 211, 11, 13}, {1, 97, 5, 7}, {1, 16, 11, 11}, {3, 101, 11, 13}, {7, 65, 4, 16},
    {10, 17, 9, 9},   {5, 129, 1, 3},
};
#define CV_NSIZES (sizeof cv_sizes / sizeof cv_sizes[0])

/* The FFT comparisons of cv_check_fft: (h, w, kh, kw). */
static const int cv_fft_cases[][4] = {{813, 5271, 11, 11}, {200, 300, 31, 25}, {24, 30, 29, 41},
                                      {97, 101, 20, 3}};
#define CV_NFFT (sizeof cv_fft_cases / sizeof cv_fft_cases[0])

/* The norm-wise bound of an FFT convolution on n pixels (transforms up to about 4n): see
 * the top. */
static double cv_fft_bound(size_t n) { return 8 * log2(4.0 * n) * ldexp(1.0, -24); }

/* The real frame and its reference, computed once for all variants. */
#define CV_FRAME_H 813
#define CV_FRAME_W 5271
#define CV_FRAME_K 11
static float *cv_frame, *cv_frame_psf, *cv_frame_ref;

static void cv_check_frame(const char *variant)
{
    pk_conv2d_params p;
    cv_params(&p, CV_FRAME_H, CV_FRAME_W, CV_FRAME_K, CV_FRAME_K, PK_CONV2D_AUTO);
    const size_t n = (size_t)CV_FRAME_H * CV_FRAME_W;
    if (!cv_frame) {
        cv_frame = cv_alloc(n);
        cv_frame_psf = cv_alloc(CV_FRAME_K * CV_FRAME_K);
        cv_frame_ref = cv_alloc(n);
        if (pk_conv2d_generate(&p, 1, cv_frame, cv_frame_psf) != PK_OK ||
            pk_conv2d_reference(&p, cv_frame, cv_frame_psf, cv_frame_ref) != PK_OK) {
            printf("Bail out! reference: %s\n", pk_last_error());
            exit(1);
        }
    }
    cv_expect(variant, &p, cv_frame, cv_frame_psf, cv_frame_ref, " (the StrayLight frame)");
}

/* Every reference size again on cv_ctx, the label naming the setting. */
static void cv_check_sizes(const char *variant, const char *label)
{
    for (size_t i = 0; i < CV_NSIZES; ++i) {
        pk_conv2d_params p;
        cv_params(&p, cv_sizes[i][0], cv_sizes[i][1], cv_sizes[i][2], cv_sizes[i][3],
                  PK_CONV2D_AUTO);
        const size_t n = (size_t)p.h * p.w, taps = (size_t)p.kh * p.kw;
        float *image = cv_alloc(n), *psf = cv_alloc(taps), *ref = cv_alloc(n);
        cv_fill(image, n, (unsigned)(p.h * 131 + p.w * 7 + p.kh * 3 + p.kw), 0.5f, 1.0f);
        cv_psf(psf, p.kh, p.kw, (unsigned)(p.kh * 17 + p.kw));
        if (pk_conv2d_reference(&p, image, psf, ref) != PK_OK) {
            printf("Bail out! reference: %s\n", pk_last_error());
            exit(1);
        }
        cv_expect(variant, &p, image, psf, ref, label);
        free(image);
        free(psf);
        free(ref);
    }
}

/* omp-rb's code paths: each SIMD level conv2d.isa picks at plan creation (those below the
 * CPU's best run as asked, see pk_simd_level), and odd thread counts (bands shorter than a
 * block of rows, more threads than rows). */
static void cv_check_paths(const char *variant)
{
    static const char *const isa[] = {"avx512", "avx2", "generic"};
    char label[64];
    for (size_t k = 0; k < sizeof isa / sizeof isa[0]; ++k) {
        pk_context_set_param(cv_ctx, "conv2d.isa", isa[k]);
        snprintf(label, sizeof label, " under conv2d.isa=%s", isa[k]);
        cv_check_sizes(variant, label);
    }
    pk_context_set_param(cv_ctx, "conv2d.isa", NULL);
    static const int nts[] = {3, 7};
    pk_context *keep = cv_ctx;
    for (size_t t = 0; t < sizeof nts / sizeof nts[0]; ++t) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = cv_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = nts[t];
        if (pk_context_create(&cv_ctx, &opt) != PK_OK) {
            ok(0, "context with %d threads: %s", nts[t], pk_last_error());
            cv_ctx = keep;
            continue;
        }
        snprintf(label, sizeof label, " on %d threads", nts[t]);
        cv_check_sizes(variant, label);
        pk_context_destroy(cv_ctx);
        cv_ctx = keep;
    }
}

/* Frames through one plan: each equals the reference; a second run repeats the result. */
static void cv_check_plan(const char *variant)
{
    const int h = 37, w = 91, kh = 6, kw = 9, frames = 3;
    pk_conv2d_params p;
    cv_params(&p, h, w, kh, kw, PK_CONV2D_AUTO);
    size_t n = (size_t)h * w;
    float *image = cv_alloc(n), *psf = cv_alloc((size_t)kh * kw), *ref = cv_alloc(n);
    float *out = cv_alloc(n), *again = cv_alloc(n);
    cv_psf(psf, kh, kw, 5);
    pk_conv2d_plan *plan = NULL;
    pk_run_info info;
    int s = pk_conv2d_plan_create(&plan, cv_ctx, &p, variant, psf, &info);
    int all = s == PK_OK && strcmp(info.variant, variant) == 0, counts = 0, rerun = 0;
    /* The plan keeps its own copy of the PSF. */
    float *psf_copy = cv_alloc((size_t)kh * kw);
    memcpy(psf_copy, psf, (size_t)kh * kw * sizeof(float));
    memset(psf, 0, (size_t)kh * kw * sizeof(float));
    for (int f = 0; f < frames && s == PK_OK; ++f) {
        cv_fill(image, n, 100u + (unsigned)f, 0.5f, 1.0f);
        pk_conv2d_reference(&p, image, psf_copy, ref);
        s = pk_conv2d_plan_upload(plan, image);
        if (s == PK_OK) s = pk_conv2d_plan_run(plan, &info);
        if (s == PK_OK) s = pk_conv2d_plan_download(plan, out);
        all &= s == PK_OK && pk_diff_f32(out, ref, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE,
                                         NULL) == PK_OK;
        counts = s == PK_OK && info.flops == 2.0 * kh * kw * h * w && info.bytes == 8.0 * h * w &&
                 info.kernel_s >= 0 && strcmp(info.variant, variant) == 0;
    }
    if (s == PK_OK) s = pk_conv2d_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_conv2d_plan_download(plan, again);
    rerun = s == PK_OK && memcmp(out, again, n * sizeof(float)) == 0;
    ok(all && s == PK_OK, "%s plan: %d frames through one plan equal the reference (%s)", variant,
       frames, s ? pk_last_error() : "ok");
    ok(counts, "%s plan: run info counts 2 kh kw flops and 8 B per pixel", variant);
    ok(rerun, "%s plan: running the resident frame again gives the same bits", variant);
    pk_conv2d_plan_destroy(plan);
    free(image);
    free(psf);
    free(psf_copy);
    free(ref);
    free(out);
    free(again);
}

/* plan_execute on the caller's arrays (see the top, 2.). */
static void cv_check_execute(const char *variant)
{
    const int h = 37, w = 91, kh = 6, kw = 9;
    const int host = cv_backend == PK_BACKEND_SERIAL || cv_backend == PK_BACKEND_OPENMP;
    pk_conv2d_params p;
    cv_params(&p, h, w, kh, kw, PK_CONV2D_AUTO);
    const size_t n = (size_t)h * w;
    float *img[2] = {cv_alloc(n), cv_alloc(n)}, *ref[2] = {cv_alloc(n), cv_alloc(n)};
    float *out[2] = {cv_alloc(n), cv_alloc(n)}, *keep = cv_alloc(n), *first = cv_alloc(n);
    float *psf = cv_alloc((size_t)kh * kw);
    cv_psf(psf, kh, kw, 6);
    pk_conv2d_plan *plan = NULL;
    int s = pk_conv2d_plan_create(&plan, cv_ctx, &p, variant, psf, NULL);
    if (s != PK_OK) {
        ok(0, "%s plan_execute: plan_create: %s", variant, pk_last_error());
        goto done;
    }
    for (int k = 0; k < 2; ++k) {
        cv_fill(img[k], n, 400u + (unsigned)k, 0.5f, 1.0f);
        pk_conv2d_reference(&p, img[k], psf, ref[k]);
        for (size_t i = 0; i < n; ++i) out[k][i] = NAN;
    }
    int good = 1;
    double maxrel = 0, transfer[2] = {-1, -1};
    char why[600] = "";
    for (int k = 0; k < 2 && good; ++k) {
        pk_run_info info;
        memset(&info, 0, sizeof info);
        memcpy(keep, img[k], n * sizeof(float));
        s = pk_conv2d_plan_execute(plan, img[k], out[k], &info);
        pk_diff_report r;
        memset(&r, 0, sizeof r);
        const int d = s == PK_OK ? pk_diff_f32(out[k], ref[k], n, CV_RTOL, CV_ZERO,
                                               PK_DIFF_ELEMENTWISE, &r)
                                 : -1;
        if (d == PK_OK && r.max_rel_err > maxrel) maxrel = r.max_rel_err;
        transfer[k] = info.transfer_s;
        if (k == 0) memcpy(first, out[0], n * sizeof(float));
        const int counts = s == PK_OK && info.backend == cv_backend &&
                           strcmp(info.variant, variant) == 0 &&
                           info.flops == 2.0 * kh * kw * h * w && info.bytes == 8.0 * h * w &&
                           info.kernel_s >= 0 && info.setup_s == 0;
        good = s == PK_OK && d == PK_OK && counts && !memcmp(keep, img[k], n * sizeof(float)) &&
               (!host || info.transfer_s == 0);
        if (!good)
            snprintf(why, sizeof why, "; frame %d: %s%s%s, %zu failed, counts %s, image %s, "
                     "transfer %.2e s", k, pk_status_name(s), s ? " " : "",
                     s ? pk_last_error() : "", d == PK_OK ? (size_t)0 : r.num_failed,
                     counts ? "ok" : "wrong", memcmp(keep, img[k], n * sizeof(float)) ? "changed"
                                                                                       : "kept",
                     info.transfer_s);
    }
    const int first_kept = good && !memcmp(first, out[0], n * sizeof(float));
    ok(good && first_kept,
       "%s plan_execute: two frames into two arrays equal the reference (max rel %.2e), images "
       "unchanged, the first output untouched by the second call%s (transfer %.2e, %.2e s)%s",
       variant, maxrel, host ? ", no copy in or out" : "", transfer[0], transfer[1], why);
    /* in place: out == image */
    memcpy(out[0], img[0], n * sizeof(float));
    s = pk_conv2d_plan_execute(plan, out[0], out[0], NULL);
    ok(s == PK_OK && pk_diff_f32(out[0], ref[0], n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE,
                                 NULL) == PK_OK,
       "%s plan_execute in place (out == image) equals the reference (%s)", variant,
       s ? pk_last_error() : "ok");
    const int st = pk_conv2d_plan_run(plan, NULL), sd = pk_conv2d_plan_download(plan, out[1]);
    ok(st == PK_ESTATE && sd == PK_ESTATE,
       "%s after plan_execute, plan_run and plan_download without an upload -> PK_ESTATE (got "
       "%s, %s)", variant, pk_status_name(st), pk_status_name(sd));
    s = pk_conv2d_plan_upload(plan, img[1]);
    if (s == PK_OK) s = pk_conv2d_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_conv2d_plan_download(plan, out[1]);
    ok(s == PK_OK && pk_diff_f32(out[1], ref[1], n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE,
                                 NULL) == PK_OK,
       "%s after plan_execute: upload, run and download on the same plan are right (%s)",
       variant, s ? pk_last_error() : "ok");
    ok(pk_conv2d_plan_execute(NULL, img[0], out[0], NULL) == PK_ENULL &&
           pk_conv2d_plan_execute(plan, NULL, out[0], NULL) == PK_ENULL &&
           pk_conv2d_plan_execute(plan, img[0], NULL, NULL) == PK_ENULL &&
           strstr(pk_last_error(), "out"),
       "%s plan_execute: NULL plan, image or out -> PK_ENULL (%s)", variant, pk_last_error());
done:
    pk_conv2d_plan_destroy(plan);
    for (int k = 0; k < 2; ++k) {
        free(img[k]);
        free(ref[k]);
        free(out[k]);
    }
    free(keep);
    free(first);
    free(psf);
}

/* FFT variant against the backend's first (direct) variant, element-wise, and on signed
 * zero-mean data against the reference by the norm-wise FFT bound. */
static void cv_check_fft(const char *variant, const char *direct)
{
    for (size_t c = 0; c < CV_NFFT; ++c) {
        const int h = cv_fft_cases[c][0], w = cv_fft_cases[c][1], kh = cv_fft_cases[c][2],
                  kw = cv_fft_cases[c][3];
        pk_conv2d_params p;
        cv_params(&p, h, w, kh, kw, PK_CONV2D_AUTO);
        size_t n = (size_t)h * w;
        float *image = cv_alloc(n), *psf = cv_alloc((size_t)kh * kw);
        float *a = cv_alloc(n), *b = cv_alloc(n), *ref = cv_alloc(n);
        if (c == 0) {
            if (pk_conv2d_generate(&p, 2, image, psf) != PK_OK) {
                printf("Bail out! pk_conv2d_generate: %s\n", pk_last_error());
                exit(1);
            }
        } else {
            cv_fill(image, n, (unsigned)(c + 7), 0.5f, 1.0f);
            cv_psf(psf, kh, kw, (unsigned)c);
        }
        int s = pk_conv2d(cv_ctx, &p, variant, image, psf, a, NULL);
        if (s == PK_OK) s = pk_conv2d(cv_ctx, &p, direct, image, psf, b, NULL);
        pk_diff_report r;
        int d = s == PK_OK ? pk_diff_f32(a, b, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE, &r) : -1;
        ok(s == PK_OK && d == PK_OK, "%s equals %s on %dx%d psf %dx%d (max rel %.2e, %s)", variant,
           direct, h, w, kh, kw, s == PK_OK ? r.max_rel_err : -1.0, s ? pk_last_error() : "ok");

        /* Signed, zero-mean image and PSF: outputs near zero, only the norm is meaningful. */
        cv_fill(image, n, (unsigned)(c + 70), -1.0f, 2.0f);
        cv_fill(psf, (size_t)kh * kw, (unsigned)(c + 80), -1.0f, 2.0f);
        double xn = 0, pn = 0, en = 0;
        for (size_t i = 0; i < n; ++i) xn += (double)image[i] * image[i];
        for (size_t i = 0; i < (size_t)kh * kw; ++i) pn += fabs(psf[i]);
        pk_conv2d_reference(&p, image, psf, ref);
        s = pk_conv2d(cv_ctx, &p, variant, image, psf, a, NULL);
        for (size_t i = 0; i < n && s == PK_OK; ++i) en += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        /* Transform sizes are at most about 2h x 2w. */
        const double bound = cv_fft_bound(n), err = sqrt(en) / (sqrt(xn) * pn);
        ok(s == PK_OK && err <= bound, "%s signed data %dx%d psf %dx%d: ||fft-ref|| / (||x|| ||psf||_1)"
           " = %.2e <= %.2e", variant, h, w, kh, kw, err, bound);
        free(image);
        free(psf);
        free(a);
        free(b);
        free(ref);
    }
}

/* No variant named: the method picks the backend's direct or FFT variant. */
static void cv_check_method(const char *first, const char *fft)
{
    static const struct { int method, k; const char *env; int want_fft; const char *name; } m[] = {
        {PK_CONV2D_DIRECT, 9, NULL, 0, "DIRECT"},
        {PK_CONV2D_FFT, 3, NULL, 1, "FFT"},
        {PK_CONV2D_AUTO, 3, NULL, 0, "AUTO, 9 taps"},
        {PK_CONV2D_AUTO, 7, "50", 0, "AUTO, 49 taps < conv2d.fft_taps=50"},
        {PK_CONV2D_AUTO, 8, "50", 1, "AUTO, 64 taps >= conv2d.fft_taps=50"},
    };
    const int h = 23, w = 41;
    size_t n = (size_t)h * w;
    float *image = cv_alloc(n), *psf = cv_alloc(81), *ref = cv_alloc(n), *out = cv_alloc(n);
    cv_fill(image, n, 3, 0.5f, 1.0f);
    for (size_t i = 0; i < sizeof m / sizeof m[0]; ++i) {
        pk_conv2d_params p;
        cv_params(&p, h, w, m[i].k, m[i].k, m[i].method);
        cv_psf(psf, m[i].k, m[i].k, 9);
        pk_conv2d_reference(&p, image, psf, ref);
        if (m[i].env) pk_context_set_param(cv_ctx, "conv2d.fft_taps", m[i].env);
        pk_run_info info;
        int s = pk_conv2d(cv_ctx, &p, NULL, image, psf, out, &info);
        pk_context_set_param(cv_ctx, "conv2d.fft_taps", NULL);
        const char *want = m[i].want_fft && fft ? fft : first;
        int eq = s == PK_OK && pk_diff_f32(out, ref, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE,
                                           NULL) == PK_OK;
        /* Without an FFT variant the run is direct and the reason says so. */
        int said = !m[i].want_fft || fft || strstr(info.reason, "no FFT variant");
        ok(eq && strcmp(info.variant, want) == 0 && said, "method %s runs %s (ran %s: %s)",
           m[i].name, want, s == PK_OK ? info.variant : pk_last_error(), info.reason);
    }
    pk_conv2d_params p;
    cv_params(&p, h, w, 3, 3, PK_CONV2D_FFT);
    pk_run_info info;
    int s = pk_conv2d(cv_ctx, &p, first, image, psf, out, &info);
    ok(s == PK_OK && strcmp(info.variant, first) == 0, "a named variant (%s) overrides method FFT",
       first);
    cv_params(&p, h, w, 3, 3, PK_CONV2D_AUTO);
    /* a bad value in the environment: read by a new context, reported by the call */
    setenv("PORTKERN_CONV2D_FFT_TAPS", "many", 1);
    pk_context *env_ctx = NULL;
    pk_context_options eo;
    pk_context_options_init(&eo);
    eo.backend = cv_backend;
    s = pk_context_create(&env_ctx, &eo);
    unsetenv("PORTKERN_CONV2D_FFT_TAPS");
    if (s == PK_OK) s = pk_conv2d(env_ctx, &p, NULL, image, psf, out, NULL);
    ok(s == PK_EINVAL && strstr(pk_last_error(), "PORTKERN_CONV2D_FFT_TAPS"),
       "PORTKERN_CONV2D_FFT_TAPS=many is rejected (%s)", pk_last_error());
    pk_context_destroy(env_ctx);
    free(image);
    free(psf);
    free(ref);
    free(out);
}

/* The StrayLight data generator pk_conv2d_generate (backend-independent: cv_run_suite runs
 * this on the serial backend only, before the suite).  Reproducible by seed, either output alone equal to both together, the PSF summing to 1,
 * the frame in its documented range; bad arguments. */
static void cv_check_generate(void)
{
    const pk_conv2d_params p = {37, 53, 7, 5, PK_CONV2D_AUTO};
    const size_t n = 37 * 53, k = 7 * 5;
    float *a = cv_alloc(n), *b = cv_alloc(n), *c = cv_alloc(n);
    float pa[35], pb[35], pc[35];
    ok(pk_conv2d_generate(&p, 9, a, pa) == PK_OK && pk_conv2d_generate(&p, 9, b, NULL) == PK_OK &&
           pk_conv2d_generate(&p, 9, NULL, pb) == PK_OK &&
           memcmp(a, b, n * sizeof *a) == 0 && memcmp(pa, pb, sizeof pa) == 0,
       "pk_conv2d_generate: the same seed gives the same data, image and psf apart or together");
    ok(pk_conv2d_generate(&p, 10, c, pc) == PK_OK && memcmp(a, c, n * sizeof *a) != 0 &&
           memcmp(pa, pc, sizeof pa) != 0, "pk_conv2d_generate: another seed, other data");
    double sum = 0, lo = 1e30, hi = -1e30;
    for (size_t i = 0; i < k; ++i) sum += pa[i];
    for (size_t i = 0; i < n; ++i) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    ok(fabs(sum - 1) < 1e-6 && lo > 0 && hi < 10, "pk_conv2d_generate: psf sums to 1 (%.9f), "
       "frame positive in [%g, %g]", sum, lo, hi);
    pk_conv2d_params bad = p;
    bad.h = 0;
    const pk_status s0 = pk_conv2d_generate(&bad, 1, a, pa);
    bad = p;
    bad.kw = -2;
    ok(s0 == PK_ESIZE && pk_conv2d_generate(&bad, 1, a, pa) == PK_ESIZE &&
           strstr(pk_last_error(), "kh, kw") != NULL,
       "pk_conv2d_generate: zero or negative sizes are PK_ESIZE (%s)", pk_last_error());
    ok(pk_conv2d_generate(NULL, 1, a, pa) == PK_ENULL &&
           pk_conv2d_generate(&p, 1, NULL, NULL) == PK_ENULL,
       "pk_conv2d_generate: NULL params, or neither output, is PK_ENULL (%s)", pk_last_error());
    free(a);
    free(b);
    free(c);
}

/* Run the whole suite on one backend; SKIP with the reason when it cannot run here. */
static int cv_run_suite(pk_backend_id backend)
{
    if (backend == PK_BACKEND_SERIAL) cv_check_generate();
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = backend;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&cv_ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        return 1;
    }
    cv_backend = backend;
    const char *why;
    char msg[600];
    if (!pk_backend_available(cv_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(cv_ctx);
        tap_skip_all(msg);
    }
    char variants[256], first[32] = "", fft[32] = "";
    snprintf(variants, sizeof variants, "%s", pk_conv2d_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no conv2d variant", pk_backend_name(backend));
        pk_context_destroy(cv_ctx);
        tap_skip_all(msg);
    }
    for (char *v = strtok(variants, ","); v; v = strtok(NULL, ",")) {
        if (!first[0]) snprintf(first, sizeof first, "%s", v);
        if (cv_is_fft(v) && !fft[0]) snprintf(fft, sizeof fft, "%s", v); /* the method's */
        cv_check_sizes(v, "");
        cv_check_frame(v);
        cv_check_plan(v);
        cv_check_execute(v);
        if (cv_is_fft(v)) cv_check_fft(v, first);
        if (strcmp(v, "omp-rb") == 0) cv_check_paths(v);
        if (strcmp(v, "fft") == 0 && backend == PK_BACKEND_OPENMP) { /* FFTW's planning */
            static const char *const rigor[] = {"estimate", "measure", "auto"};
            for (size_t k = 0; k < sizeof rigor / sizeof rigor[0]; ++k) {
                char label[64];
                pk_context_set_param(cv_ctx, "conv2d.fft_plan", rigor[k]);
                snprintf(label, sizeof label, " under conv2d.fft_plan=%s", rigor[k]);
                cv_check_sizes(v, label);
            }
            pk_context_set_param(cv_ctx, "conv2d.fft_plan", NULL);
        }
    }
    cv_check_method(first, fft[0] ? fft : NULL);
    free(cv_frame);
    free(cv_frame_psf);
    free(cv_frame_ref);
    pk_context_destroy(cv_ctx);
    return tap_done();
}
