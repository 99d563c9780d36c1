/* cli_conv2d.c - conv2d's part of the portkern command line (tools/cli_kernel.h): its
 * parameters, files, generator, run, verdict and bench (docs/KERNELS.md section 5).
 *
 * Verification: the differ against the serial reference (double sums), element-wise with
 * rtol 1e-5 and zero threshold 1e-10 (docs/KERNELS.md sections 5 and 6); --norm compares
 * norm-wise instead, for data with outputs near zero through the FFT.
 *
 * Bench: every variant on the frame of the size, the StrayLight report's sequence naive ->
 * serial -> simd -> omp -> omp-rb, and with --psf-sweep direct against FFT over PSF sizes. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define CV_FRAME_H 813 /* the PROBA-V frame of the StrayLight report */
#define CV_FRAME_W 5271
#define CV_FRAME_K 11
#define CV_RTOL 1e-5
#define CV_ZERO 1e-10
#define CV_FLOPS_MODEL "2 flop per PSF tap per pixel"
#define CV_BYTES_MODEL "8 B/px (image read once, output written once)"
#define CV_VERIFY_RULE                                                                         \
    "|out - ref| <= rtol * |ref| for every pixel (both <= 1e-10: ignored); with --norm "     \
    "||ref - out||_2 <= rtol * ||out||_2"

typedef struct cv_args {
    int h, w, kh, kw, method, seed;
    int norm; /* --norm */
} cv_args;

typedef struct cv_data {
    float *image, *psf, *out, *ref;
} cv_data;

static const cli_array cv_arrays[] = {
    {"image.npy", PK_DTYPE_F32, "h,w", offsetof(cv_data, image), CLI_A_IN},
    {"psf.npy", PK_DTYPE_F32, "kh,kw", offsetof(cv_data, psf), CLI_A_IN},
    {"out.npy", PK_DTYPE_F32, "h,w", offsetof(cv_data, out), CLI_A_OUT},
    {"reference", PK_DTYPE_F32, "h,w", offsetof(cv_data, ref), CLI_A_REF},
    {0}};

static const char *const cv_method_names[] = {"direct", "fft", "auto", NULL};
static const int cv_method_ids[] = {PK_CONV2D_DIRECT, PK_CONV2D_FFT, PK_CONV2D_AUTO};
static const cli_names cv_methods = {cv_method_names, cv_method_ids};

static const cli_param cv_params_table[] = {
    {"h", CLI_P_INT, offsetof(cv_args, h), 1, INT_MAX, CV_FRAME_H, CLI_IN_ALL, NULL, "N --w N",
     "image size (default 813 x 5271, the StrayLight frame); --preset small: "
     "203 x 1317 (a quarter of the frame), paper and large: 813 x 5271, both "
     "with an 11 x 11 PSF"},
    {"w", CLI_P_INT, offsetof(cv_args, w), 1, INT_MAX, CV_FRAME_W, CLI_IN_ALL, NULL, NULL, NULL},
    {"kh", CLI_P_INT, offsetof(cv_args, kh), 1, INT_MAX, CV_FRAME_K, CLI_IN_ALL, NULL, "N --kw N",
     "PSF size (default 11 x 11)"},
    {"kw", CLI_P_INT, offsetof(cv_args, kw), 1, INT_MAX, CV_FRAME_K, CLI_IN_ALL, NULL, NULL, NULL},
    {"method", CLI_P_NAME, offsetof(cv_args, method), 0, 0, PK_CONV2D_AUTO, CLI_IN_ALL,
     &cv_methods, "M",
     "direct, fft or auto (default): auto takes the FFT from a PSF size "
     "measured on the CPU (docs/PERFORMANCE.md); a backend without an FFT "
     "variant runs direct and says so in \"reason\"; --variant overrides it"},
    {"seed", CLI_P_INT, offsetof(cv_args, seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S",
     CLI_SEED_HELP},
    {"norm", CLI_P_FLAG, offsetof(cv_args, norm), 0, 1, 0, CLI_IN_RUN, NULL, NULL,
     "--verify norm-wise (||ref - out||_2 <= rtol ||out||_2) instead of "
     "element-wise: for data with outputs near zero through the FFT"},
    {0}};

/* small: a quarter of the frame (CI's bootstrap runs it); paper and large: the frame. */
static void cv_preset(int size, void *args)
{
    cv_args *a = args;
    a->h = size == CLI_SMALL ? CV_FRAME_H / 4 : CV_FRAME_H;
    a->w = size == CLI_SMALL ? CV_FRAME_W / 4 : CV_FRAME_W;
    a->kh = a->kw = CV_FRAME_K;
}

static size_t cv_pixels(const cv_args *a) { return (size_t)a->h * (size_t)a->w; }

static pk_conv2d_params cv_params(const cv_args *a)
{
    const pk_conv2d_params p = {a->h, a->w, a->kh, a->kw, a->method};
    return p;
}

static int cv_generate(cli_call *c, void *data)
{
    const cv_args *a = c->args;
    cv_data *d = data;
    const pk_conv2d_params p = cv_params(a);
    const pk_status s = pk_conv2d_generate(&p, (uint32_t)a->seed, d->image, d->psf);
    return s == PK_OK ? 0 : cli_lib_error(c->prog, s);
}

static pk_status cv_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    cv_data *d = data;
    const pk_conv2d_params p = cv_params(args);
    switch (op) {
    case CLI_ONESHOT: return pk_conv2d(ctx, &p, variant, d->image, d->psf, d->out, info);
    case CLI_REFERENCE: return pk_conv2d_reference(&p, d->image, d->psf, d->ref);
    case CLI_PLAN_CREATE:
        return pk_conv2d_plan_create((pk_conv2d_plan **)plan, ctx, &p, variant, d->psf, info);
    case CLI_PLAN_UPLOAD: return pk_conv2d_plan_upload(*plan, d->image);
    case CLI_PLAN_RUN: return pk_conv2d_plan_run(*plan, info);
    case CLI_PLAN_DOWNLOAD: return pk_conv2d_plan_download(*plan, d->out);
    case CLI_PLAN_DESTROY: pk_conv2d_plan_destroy(*plan);
    }
    return PK_OK;
}

extern const cli_kernel cli_kernel_conv2d; /* defined at the end of this file */

/* The differ's verdict, norm-wise with --norm. */
static pk_status cv_check(const void *args, void *data, cli_verdict *v)
{
    return cli_check_diff(&cli_kernel_conv2d, args, data, ((const cv_args *)args)->norm, v);
}

static void cv_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const cv_args *a = args;
    cj_str(j, "method", cli_name_of(&cv_methods, a->method));
    cj_int(j, "h", a->h);
    cj_int(j, "w", a->w);
    cj_int(j, "kh", a->kh);
    cj_int(j, "kw", a->kw);
}

/* ---- bench: every variant on one frame; the PSF sweep ------------------------------------ */
static void cv_describe(const cli_bench_result *res)
{
    const cv_args *a = res->args[0];
    printf("conv2d %s: %d x %d image, %d x %d PSF (generated StrayLight frame, seed 1); verified "
           "element-wise against the serial reference, rtol %g, zero %g\n", res->req->size, a->h,
           a->w, a->kh, a->kw, CV_RTOL, CV_ZERO);
}

static int cv_is_fft(const char *v)
{
    size_t n = strlen(v);
    return strcmp(v, "fft") == 0 || (n > 4 && strcmp(v + n - 4, "-fft") == 0);
}

/* PSF sizes of the sweep: around the crossover densely, then up to 63. */
static const int cv_sweep_k[] = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 31, 41, 63};
#define CV_NSWEEP ((int)(sizeof cv_sweep_k / sizeof cv_sweep_k[0]))

typedef struct cv_sweep {
    pk_backend_id backend;
    char direct[32], fft[32];
    int k;
    double direct_s, fft_s; /* best of the timed runs; 0: failed */
    int agree;              /* the two results equal within the differ */
    char error[256];
} cv_sweep;

typedef struct cv_sweeps { /* the report's, kept for the JSON */
    int n;
    cv_sweep s[PK_BACKEND_COUNT * CV_NSWEEP];
} cv_sweeps;

/* One variant on the frame with a K x K PSF: best kernel time, result in out. */
static pk_status cv_sweep_one(const cv_args *frame, const float *image, pk_context *ctx,
                              const char *variant, int k, float *psf, float *out, int reps,
                              double *t)
{
    cv_args a = *frame;
    cv_data d = {(float *)image, psf, out, NULL};
    void *plan = NULL;
    pk_run_info info;
    double ts[3];
    a.kh = a.kw = k;
    pk_status s = cv_call(CLI_PLAN_CREATE, &plan, ctx, variant, &a, &d, 0, &info);
    if (s == PK_OK) s = cv_call(CLI_PLAN_UPLOAD, &plan, NULL, NULL, &a, &d, 0, NULL);
    if (s == PK_OK) s = cli_bench_time(&cli_kernel_conv2d, plan, &a, &d, reps, 0, 0, ts, &info, NULL, NULL);
    if (s == PK_OK) s = cv_call(CLI_PLAN_DOWNLOAD, &plan, NULL, NULL, &a, &d, 0, NULL);
    if (plan) cv_call(CLI_PLAN_DESTROY, &plan, NULL, NULL, &a, &d, 0, NULL);
    *t = s == PK_OK ? ts[0] : 0;
    return s;
}

/* Direct (the backend's first variant) against FFT for every K, same frame; the FFT result
 * is checked against the direct one (element-wise, rtol 1e-5). */
static void cv_sweep_backend(cv_sweeps *sw, const cli_bench_result *res, pk_backend_id be,
                             const char *direct, const char *fft, float *psf, float *out[2])
{
    const cv_args *a = res->args[0];
    const float *image = ((const cv_data *)res->data[0])->image;
    for (int i = 0; i < CV_NSWEEP; ++i) {
        cv_sweep *s = &sw->s[sw->n++];
        s->backend = be;
        s->k = cv_sweep_k[i];
        snprintf(s->direct, sizeof s->direct, "%s", direct);
        snprintf(s->fft, sizeof s->fft, "%s", fft);
        const pk_conv2d_params sp = {1, 1, s->k, s->k, PK_CONV2D_AUTO}; /* psf only */
        pk_conv2d_generate(&sp, 1, NULL, psf); /* cannot fail: sizes >= 1, psf given */
        cli_progress("psf sweep: %s %dx%d ...", pk_backend_name(be), s->k, s->k);
        for (int v = 0; v < 2; ++v) {
            double *t = v ? &s->fft_s : &s->direct_s;
            pk_status st = cv_sweep_one(a, image, res->set.ctx[be], v ? fft : direct, s->k, psf,
                                        out[v], res->req->reps, t);
            if (st != PK_OK) {
                *t = 0;
                snprintf(s->error, sizeof s->error, "%s: %s: %s", v ? fft : direct,
                         pk_strerror(st), pk_last_error());
                break;
            }
        }
        s->agree = !s->error[0] && pk_diff_f32(out[0], out[1], cv_pixels(a), CV_RTOL, CV_ZERO,
                                               PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    }
}

static void cv_print_sweep(const cv_sweeps *b, const cv_args *a)
{
    printf("\nPSF sweep on the %d x %d frame (square PSFs; direct = the backend's first variant; "
           "fft checked against it):\n", a->h, a->w);
    printf("%-7s  %4s  %6s  %-10s  %9s  %-10s  %9s  %-6s  %s\n", "backend", "K", "taps",
           "direct", "ms", "fft", "ms", "faster", "agree");
    for (int i = 0; i < b->n; ++i) {
        const cv_sweep *s = &b->s[i];
        if (s->error[0]) {
            printf("%-7s  %4d  %6d  error: %s\n", pk_backend_name(s->backend), s->k, s->k * s->k,
                   s->error);
            continue;
        }
        printf("%-7s  %4d  %6d  %-10s  %9.2f  %-10s  %9.2f  %-6s  %s\n",
               pk_backend_name(s->backend), s->k, s->k * s->k, s->direct, 1e3 * s->direct_s,
               s->fft, 1e3 * s->fft_s, s->fft_s < s->direct_s ? "fft" : "direct",
               s->agree ? "yes" : "NO");
    }
    /* Crossover: the smallest K from which the FFT wins at every larger K too. */
    for (int i = 0; i < b->n;) {
        const pk_backend_id be = b->s[i].backend;
        int end = i, from = -1;
        while (end < b->n && b->s[end].backend == be) ++end;
        for (int k = end - 1; k >= i && !b->s[k].error[0] &&
                              b->s[k].fft_s < b->s[k].direct_s; --k)
            from = k;
        if (from >= 0)
            printf("crossover %s: fft faster from K = %d (%d taps) on%s\n", pk_backend_name(be),
                   b->s[from].k, b->s[from].k * b->s[from].k,
                   from > i ? "" : " (at every K tried)");
        else
            printf("crossover %s: direct faster at every K tried\n", pk_backend_name(be));
        i = end;
    }
}

/* The StrayLight report's sequence, as far as the rows have it; with --psf-sweep the sweep
 * on every backend of the rows that has an FFT variant. */
static void cv_report(cli_bench_result *res)
{
    static const char *const seq[] = {"naive", "serial", "simd", "omp", "omp-rb"};
    double t0 = 0;
    int shown = 0, swept[PK_BACKEND_COUNT] = {0};
    for (int k = 0; k < 5; ++k)
        for (int i = 0; i < res->nrows; ++i) {
            const cli_bench_row *r = &res->rows[i];
            if (r->status != CLI_ROW_OK || strcmp(r->variant, seq[k]) != 0) continue;
            if (!shown++) {
                t0 = r->t_min;
                printf("StrayLight sequence:");
            }
            printf("%s %s %.2f ms (x%.1f)", shown > 1 ? " ->" : "", seq[k], 1e3 * r->t_min,
                   t0 / r->t_min);
        }
    if (shown) printf("\n");
    if (!res->req->psf_sweep) return;
    const size_t npx = cv_pixels(res->args[0]);
    cv_sweeps *b = res->extra = calloc(1, sizeof *b);
    float *psf = malloc((size_t)cv_sweep_k[CV_NSWEEP - 1] * cv_sweep_k[CV_NSWEEP - 1] * sizeof *psf);
    float *out[2] = {((cv_data *)res->data[0])->out, malloc(npx * sizeof(float))};
    if (!b || !psf || !out[1]) {
        fprintf(stderr, "portkern bench: out of host memory\n");
        res->failed = 1;
    }
    for (int i = 0; !res->failed && i < res->nrows; ++i) {
        const pk_backend_id be = res->rows[i].backend;
        const cli_bench_set *set = &res->set;
        if (swept[be]++) continue;
        for (int v = 1; v < set->nvars[be]; ++v)
            if (cv_is_fft(set->vars[be][v])) { /* the first: the one method FFT runs */
                cv_sweep_backend(b, res, be, set->vars[be][0], set->vars[be][v], psf, out);
                break;
            }
    }
    free(psf);
    free(out[1]);
    if (b && b->n) cv_print_sweep(b, res->args[0]);
    for (int i = 0; b && i < b->n; ++i)
        if (b->s[i].error[0] || !b->s[i].agree) res->failed = 1;
}

static void cv_bench_json(cli_json *j, const cli_bench_result *res)
{
    const cv_sweeps *b = res->extra;
    cj_str(j, "flops_model", CV_FLOPS_MODEL);
    cj_str(j, "bytes_model", CV_BYTES_MODEL);
    cj_open(j, "psf_sweep", '[');
    for (int i = 0; b && i < b->n; ++i) {
        const cv_sweep *s = &b->s[i];
        cj_open(j, NULL, '{');
        cj_str(j, "backend", pk_backend_name(s->backend));
        cj_int(j, "k", s->k);
        cj_int(j, "taps", (long long)s->k * s->k);
        cj_str(j, "direct", s->direct);
        cj_num(j, "direct_ms", s->direct_s > 0 ? 1e3 * s->direct_s : NAN);
        cj_str(j, "fft", s->fft);
        cj_num(j, "fft_ms", s->fft_s > 0 ? 1e3 * s->fft_s : NAN);
        cj_bool(j, "agree", s->agree);
        cj_str(j, "error", s->error[0] ? s->error : NULL);
        cj_close(j);
    }
    cj_close(j);
}

const cli_kernel cli_kernel_conv2d = {
    .name = "conv2d",
    .summary = "StrayLight periodic image convolution with a PSF, direct or by FFT",
    .run_help =
        "Convolve one image with a PSF (StrayLight, docs/KERNELS.md section 5: correlation,\n"
        "periodic borders, output centred by kh/2, kw/2).\n"
        "Files: --in DIR reads DIR/image.npy (float32 [h][w]) and DIR/psf.npy (float32\n"
        "[kh][kw]); without --in, the StrayLight-like frame and PSF of 'portkern gen conv2d'\n"
        "are generated.  --out DIR writes DIR/out.npy (float32 [h][w]).\n"
        "\"conv2d\" in the JSON line: method (as asked; variant says what ran), h, w, kh, kw.\n",
    .gen_help =
        "Write the inputs of a run: DIR/image.npy (a PROBA-V-sized StrayLight-like frame,\n"
        "float32 [h][w]: smooth background, sharp edges, texture, point sources; values\n"
        "about 0.3 .. 6), DIR/psf.npy (float32 [kh][kw]: a bright off-centre core, faint wide\n"
        "wings and a ghost, summing to 1) and DIR/params.json (h, w, kh, kw, method, seed).\n",
    .variants = pk_conv2d_variants,
    .args_size = sizeof(cv_args),
    .data_size = sizeof(cv_data),
    .params = cv_params_table,
    .preset = cv_preset,
    .arrays = cv_arrays,
    .generate = cv_generate,
    .call = cv_call,
    .rtol = CV_RTOL,
    .verify_rule = CV_VERIFY_RULE,
    .check = cv_check,
    .zero = CV_ZERO,
    .run_json = cv_run_json,
    .flops_model = CV_FLOPS_MODEL,
    .bytes_model = CV_BYTES_MODEL,
    .describe = cv_describe,
    .report = cv_report,
    .bench_json = cv_bench_json,
};
