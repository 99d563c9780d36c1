/* cli_conv2d.c - conv2d's part of the portkern command line (tools/cli_kernel.h): its
 * parameters, files, generator, run, verdict and bench (docs/KERNELS.md section 5).
 *
 * Verification: the differ against the serial reference (double sums), element-wise with
 * rtol 1e-5 and zero threshold 1e-10 (docs/KERNELS.md sections 5 and 6); --norm compares
 * norm-wise instead, for data with outputs near zero through the FFT.
 *
 * Bench: every variant on the frame of the size, the StrayLight report's sequence naive ->
 * serial -> simd -> omp, and with --psf-sweep direct against FFT over PSF sizes. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"
#include "gen/conv2d_gen.h"

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

static pk_status cv_method_from_name(const char *name, int *id)
{
    if (strcmp(name, "auto") == 0)
        *id = PK_CONV2D_AUTO;
    else if (strcmp(name, "direct") == 0)
        *id = PK_CONV2D_DIRECT;
    else if (strcmp(name, "fft") == 0)
        *id = PK_CONV2D_FFT;
    else
        return PK_EINVAL;
    return PK_OK;
}

static const char *cv_method_name(int id)
{
    return id == PK_CONV2D_DIRECT ? "direct" : id == PK_CONV2D_FFT ? "fft" : "auto";
}

static const cli_names cv_methods = {cv_method_from_name, cv_method_name, "direct, fft, auto"};

static const cli_param cv_params[] = {
    {"h", CLI_P_INT, offsetof(cv_args, h), 1, INT_MAX, CLI_IN_ALL, NULL, "N --w N",
     "image size (default 813 x 5271, the StrayLight frame); --preset small: "
     "203 x 1317 (a quarter of the frame), paper and large: 813 x 5271, both "
     "with an 11 x 11 PSF"},
    {"w", CLI_P_INT, offsetof(cv_args, w), 1, INT_MAX, CLI_IN_ALL, NULL, NULL, NULL},
    {"kh", CLI_P_INT, offsetof(cv_args, kh), 1, INT_MAX, CLI_IN_ALL, NULL, "N --kw N",
     "PSF size (default 11 x 11)"},
    {"kw", CLI_P_INT, offsetof(cv_args, kw), 1, INT_MAX, CLI_IN_ALL, NULL, NULL, NULL},
    {"method", CLI_P_NAME, offsetof(cv_args, method), 0, 0, CLI_IN_ALL, &cv_methods, "M",
     "direct, fft or auto (default): auto takes the FFT from a PSF size "
     "measured on the CPU (docs/PERFORMANCE.md); a backend without an FFT "
     "variant runs direct and says so in \"reason\"; --variant overrides it"},
    {"seed", CLI_P_INT, offsetof(cv_args, seed), 0, INT_MAX, CLI_IN_ALL, NULL, "S", CLI_SEED_HELP},
    {"norm", CLI_P_FLAG, offsetof(cv_args, norm), 0, 1, CLI_IN_RUN, NULL, NULL,
     "--verify norm-wise (||ref - out||_2 <= rtol ||out||_2) instead of "
     "element-wise: for data with outputs near zero through the FFT"},
    {0}};

static void cv_args_init(void *args)
{
    cv_args *a = args;
    a->h = CV_FRAME_H;
    a->w = CV_FRAME_W;
    a->kh = a->kw = CV_FRAME_K;
    a->method = PK_CONV2D_AUTO;
    a->seed = 1;
    a->norm = 0;
}

/* small: a quarter of the frame (CI's bootstrap runs it); paper and large: the frame. */
static int cv_preset(const char *size, void *args)
{
    cv_args *a = args;
    const int small = strcmp(size, "small") == 0;
    if (!small && strcmp(size, "paper") != 0 && strcmp(size, "large") != 0) return -1;
    a->h = small ? CV_FRAME_H / 4 : CV_FRAME_H;
    a->w = small ? CV_FRAME_W / 4 : CV_FRAME_W;
    a->kh = a->kw = CV_FRAME_K;
    return 0;
}

static size_t cv_pixels(const cv_args *a) { return (size_t)a->h * (size_t)a->w; }

static int cv_generate(cli_call *c, void *data)
{
    const cv_args *a = c->args;
    cv_data *d = data;
    pk_cv_gen_frame(a->h, a->w, (unsigned)a->seed, d->image);
    pk_cv_gen_psf(a->kh, a->kw, (unsigned)a->seed, d->psf);
    return 0;
}

static void cv_params_of(const cv_args *a, pk_conv2d_params *p)
{
    p->h = a->h;
    p->w = a->w;
    p->kh = a->kh;
    p->kw = a->kw;
    p->method = a->method;
}

static pk_status cv_run(pk_context *ctx, const char *variant, const void *args, void *data,
                        pk_run_info *info)
{
    cv_data *d = data;
    pk_conv2d_params p;
    cv_params_of(args, &p);
    return pk_conv2d(ctx, &p, variant, d->image, d->psf, d->out, info);
}

/* The differ's verdict of out against ref (element-wise, or norm-wise with norm). */
static pk_status cv_check(const float *ref, const float *out, int h, int w, int norm,
                          cli_verdict *v)
{
    pk_status s = pk_diff_f32(ref, out, (size_t)h * (size_t)w, v->rtol, CV_ZERO,
                              norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE, &v->rep);
    v->norm = norm;
    v->shape[0] = (size_t)h;
    v->shape[1] = (size_t)w;
    v->ndim = 2;
    return s == PK_EMISMATCH ? PK_OK : s;
}

static pk_status cv_reference(const void *args, void *data, int runs)
{
    cv_data *d = data;
    pk_conv2d_params p;
    cv_params_of(args, &p);
    return pk_conv2d_reference(&p, d->image, d->psf, d->ref);
}

static pk_status cv_run_check(const void *args, void *data, cli_verdict *v)
{
    const cv_args *a = args;
    const cv_data *d = data;
    return cv_check(d->ref, d->out, a->h, a->w, a->norm, v);
}

static void cv_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const cv_args *a = args;
    cj_str(j, "method", cv_method_name(a->method));
    cj_int(j, "h", a->h);
    cj_int(j, "w", a->w);
    cj_int(j, "kh", a->kh);
    cj_int(j, "kw", a->kw);
}

/* ---- bench: every variant on one frame; the PSF sweep ------------------------------------ */
typedef struct cv_sweep {
    pk_backend_id backend;
    char direct[32], fft[32];
    int k;
    double direct_s, fft_s; /* best of the timed runs; 0: failed */
    int agree;              /* the two results equal within the differ */
    char error[256];
} cv_sweep;

typedef struct cv_bench {
    const char *size;
    cv_args a;
    float *image, *psf, *ref, *out, *out2;
    cv_sweep *sweep;
    int nsweep;
} cv_bench;

static int cv_bench_setup(const cli_bench_req *req, void **bd, int *ncases)
{
    cv_bench *b = calloc(1, sizeof *b);
    *bd = b;
    *ncases = 1;
    if (!b) goto nomem;
    b->size = req->size;
    cv_args_init(&b->a);
    cv_preset(req->size, &b->a);
    const size_t npx = cv_pixels(&b->a);
    b->image = malloc(npx * sizeof *b->image);
    b->psf = malloc((size_t)b->a.kh * b->a.kw * sizeof *b->psf);
    b->ref = malloc(npx * sizeof *b->ref);
    b->out = malloc(npx * sizeof *b->out);
    if (req->psf_sweep) b->out2 = malloc(npx * sizeof *b->out2);
    if (!b->image || !b->psf || !b->ref || !b->out || (req->psf_sweep && !b->out2)) goto nomem;
    pk_cv_gen_frame(b->a.h, b->a.w, 1, b->image);
    pk_cv_gen_psf(b->a.kh, b->a.kw, 1, b->psf);
    pk_conv2d_params p;
    cv_params_of(&b->a, &p);
    pk_status s = pk_conv2d_reference(&p, b->image, b->psf, b->ref);
    return s == PK_OK ? 0 : cli_lib_error("portkern", s);
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    return CLI_EXIT_FAIL;
}

static pk_status cv_create(void **plan, pk_context *ctx, const char *variant, void *bd, int c,
                           pk_run_info *info)
{
    const cv_bench *b = bd;
    pk_conv2d_params p;
    (void)c;
    cv_params_of(&b->a, &p);
    return pk_conv2d_plan_create((pk_conv2d_plan **)plan, ctx, &p, variant, b->psf, info);
}

static pk_status cv_upload(void *plan, void *bd, int c)
{
    (void)c;
    return pk_conv2d_plan_upload(plan, ((cv_bench *)bd)->image);
}

static pk_status cv_plan_run(void *plan, pk_run_info *info) { return pk_conv2d_plan_run(plan, info); }

static pk_status cv_download(void *plan, void *bd, int c)
{
    (void)c;
    return pk_conv2d_plan_download(plan, ((cv_bench *)bd)->out);
}

static void cv_destroy(void *plan) { pk_conv2d_plan_destroy(plan); }

static pk_status cv_bench_verify(void *bd, int c, int runs, cli_verdict *v)
{
    const cv_bench *b = bd;
    (void)c;
    (void)runs; /* every run convolves the same frame */
    v->rtol = CV_RTOL;
    return cv_check(b->ref, b->out, b->a.h, b->a.w, 0, v);
}

static void cv_describe(const void *bd)
{
    const cv_bench *b = bd;
    printf("conv2d %s: %d x %d image, %d x %d PSF (generated StrayLight frame, seed 1); verified "
           "element-wise against the serial reference, rtol %g, zero %g\n", b->size, b->a.h,
           b->a.w, b->a.kh, b->a.kw, CV_RTOL, CV_ZERO);
}

static void cv_case_json(cli_json *j, const void *bd, int c)
{
    const cv_bench *b = bd;
    (void)c;
    cj_int(j, "h", b->a.h);
    cj_int(j, "w", b->a.w);
    cj_int(j, "kh", b->a.kh);
    cj_int(j, "kw", b->a.kw);
}

static int cv_is_fft(const char *v)
{
    size_t n = strlen(v);
    return strcmp(v, "fft") == 0 || (n > 4 && strcmp(v + n - 4, "-fft") == 0);
}

/* PSF sizes of the sweep: around the crossover densely, then up to 63. */
static const int cv_sweep_k[] = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 31, 41, 63};
#define CV_NSWEEP ((int)(sizeof cv_sweep_k / sizeof cv_sweep_k[0]))

/* One variant on the frame with a K x K PSF: best kernel time, result in out. */
static pk_status cv_sweep_one(cv_bench *b, pk_context *ctx, const char *variant, int k,
                              const float *psf, int reps, float *out, double *t)
{
    pk_conv2d_params p = {b->a.h, b->a.w, k, k, PK_CONV2D_AUTO};
    pk_conv2d_plan *plan = NULL;
    pk_run_info info;
    double med, max;
    pk_status s = pk_conv2d_plan_create(&plan, ctx, &p, variant, psf, &info);
    if (s == PK_OK) s = pk_conv2d_plan_upload(plan, b->image);
    if (s == PK_OK) s = cli_bench_time(cv_plan_run, plan, reps, t, &med, &max, &info, NULL);
    if (s == PK_OK) s = pk_conv2d_plan_download(plan, out);
    pk_conv2d_plan_destroy(plan);
    return s;
}

/* Direct (the backend's first variant) against FFT for every K, same frame; the FFT result
 * is checked against the direct one (element-wise, rtol 1e-5). */
static int cv_sweep_backend(cv_bench *b, pk_context *ctx, pk_backend_id be, const char *direct,
                            const char *fft, int reps)
{
    const size_t npx = cv_pixels(&b->a);
    float *psf = malloc((size_t)cv_sweep_k[CV_NSWEEP - 1] * cv_sweep_k[CV_NSWEEP - 1] * sizeof *psf);
    cv_sweep *more = realloc(b->sweep, (size_t)(b->nsweep + CV_NSWEEP) * sizeof *more);
    if (more) b->sweep = more;
    if (!psf || !more) {
        free(psf);
        return -1;
    }
    for (int i = 0; i < CV_NSWEEP; ++i) {
        cv_sweep *sw = &b->sweep[b->nsweep++];
        memset(sw, 0, sizeof *sw);
        sw->backend = be;
        sw->k = cv_sweep_k[i];
        snprintf(sw->direct, sizeof sw->direct, "%s", direct);
        snprintf(sw->fft, sizeof sw->fft, "%s", fft);
        pk_cv_gen_psf(sw->k, sw->k, 1, psf);
        cli_progress("psf sweep: %s %dx%d ...", pk_backend_name(be), sw->k, sw->k);
        for (int v = 0; v < 2; ++v) {
            double *t = v ? &sw->fft_s : &sw->direct_s;
            pk_status s = cv_sweep_one(b, ctx, v ? fft : direct, sw->k, psf, reps,
                                       v ? b->out2 : b->out, t);
            if (s != PK_OK) {
                *t = 0;
                snprintf(sw->error, sizeof sw->error, "%s: %s: %s", v ? fft : direct,
                         pk_strerror(s), pk_last_error());
                break;
            }
        }
        sw->agree = !sw->error[0] && pk_diff_f32(b->out, b->out2, npx, CV_RTOL, CV_ZERO,
                                                 PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    }
    free(psf);
    return 0;
}

static void cv_print_sweep(const cv_bench *b)
{
    printf("\nPSF sweep on the %d x %d frame (square PSFs; direct = the backend's first variant; "
           "fft checked against it):\n", b->a.h, b->a.w);
    printf("%-7s  %4s  %6s  %-10s  %9s  %-10s  %9s  %-6s  %s\n", "backend", "K", "taps",
           "direct", "ms", "fft", "ms", "faster", "agree");
    for (int i = 0; i < b->nsweep; ++i) {
        const cv_sweep *s = &b->sweep[i];
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
    for (int i = 0; i < b->nsweep;) {
        const pk_backend_id be = b->sweep[i].backend;
        int end = i, from = -1;
        while (end < b->nsweep && b->sweep[end].backend == be) ++end;
        for (int k = end - 1; k >= i && !b->sweep[k].error[0] &&
                              b->sweep[k].fft_s < b->sweep[k].direct_s; --k)
            from = k;
        if (from >= 0)
            printf("crossover %s: fft faster from K = %d (%d taps) on%s\n", pk_backend_name(be),
                   b->sweep[from].k, b->sweep[from].k * b->sweep[from].k,
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
    static const char *const seq[] = {"naive", "serial", "simd", "omp"};
    cv_bench *b = res->bd;
    double t0 = 0;
    int shown = 0, swept[PK_BACKEND_COUNT] = {0};
    for (int k = 0; k < 4; ++k)
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
    for (int i = 0; i < res->nrows; ++i) {
        const pk_backend_id be = res->rows[i].backend;
        const cli_bench_set *set = &res->set;
        if (swept[be]++) continue;
        for (int v = 1; v < set->nvars[be]; ++v)
            if (cv_is_fft(set->vars[be][v]) &&
                cv_sweep_backend(b, set->ctx[be], be, set->vars[be][0], set->vars[be][v],
                                 res->req->reps)) {
                fprintf(stderr, "portkern bench: out of host memory\n");
                res->failed = 1;
                return;
            }
    }
    if (b->nsweep) cv_print_sweep(b);
    for (int i = 0; i < b->nsweep; ++i)
        if (b->sweep[i].error[0] || !b->sweep[i].agree) res->failed = 1;
}

static void cv_bench_json(cli_json *j, const void *bd)
{
    const cv_bench *b = bd;
    cj_str(j, "flops_model", CV_FLOPS_MODEL);
    cj_str(j, "bytes_model", CV_BYTES_MODEL);
    cj_open(j, "psf_sweep", '[');
    for (int i = 0; i < b->nsweep; ++i) {
        const cv_sweep *s = &b->sweep[i];
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

static void cv_bench_free(void *bd)
{
    cv_bench *b = bd;
    free(b->image);
    free(b->psf);
    free(b->ref);
    free(b->out);
    free(b->out2);
    free(b->sweep);
    free(b);
}

static const cli_bench_ops cv_bench_ops = {
    .setup = cv_bench_setup,
    .create = cv_create,
    .upload = cv_upload,
    .run = cv_plan_run,
    .download = cv_download,
    .destroy = cv_destroy,
    .verify = cv_bench_verify,
    .describe = cv_describe,
    .case_json = cv_case_json,
    .report = cv_report,
    .json = cv_bench_json,
    .free = cv_bench_free,
};

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
    .params = cv_params,
    .args_init = cv_args_init,
    .preset = cv_preset,
    .arrays = cv_arrays,
    .generate = cv_generate,
    .run = cv_run,
    .rtol = CV_RTOL,
    .verify_rule = CV_VERIFY_RULE,
    .reference = cv_reference,
    .check = cv_run_check,
    .run_json = cv_run_json,
    .flops_model = CV_FLOPS_MODEL,
    .bytes_model = CV_BYTES_MODEL,
    .bench = &cv_bench_ops,
};
