/* cli_conv2d.c - the conv2d commands of portkern: run, gen, and its part of bench
 * (README.md, "Command line"; docs/KERNELS.md section 5).  portkern.c hands a
 * command line to these when its kernel operand is "conv2d". */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "gen/conv2d_gen.h"

#define MAIN_PROG "portkern"
#define CV_FRAME_H 813 /* the PROBA-V frame of the StrayLight report */
#define CV_FRAME_W 5271
#define CV_FRAME_K 11
#define CV_BYTES_MODEL "8 B/px (image read once, output written once)"
#define CV_FLOPS_MODEL "2 flop per PSF tap per pixel"

#define SEEN_CLI 1
#define SEEN_JSON 2

typedef struct cv_args {
    int h, w, kh, kw, seed;
    int seen_h, seen_w, seen_kh, seen_kw, seen_seed, seen_method;
    const char *method_name;
} cv_args;

static void cv_args_init(cv_args *a)
{
    memset(a, 0, sizeof *a);
    a->h = CV_FRAME_H;
    a->w = CV_FRAME_W;
    a->kh = a->kw = CV_FRAME_K;
    a->seed = 1;
    a->method_name = "auto";
}

static int cv_opts(cli_opt *o, int n, cv_args *a)
{
    n = cli_opt_add(o, n, "h", CLI_INT, &a->h, &a->seen_h, 1, INT_MAX);
    n = cli_opt_add(o, n, "w", CLI_INT, &a->w, &a->seen_w, 1, INT_MAX);
    n = cli_opt_add(o, n, "kh", CLI_INT, &a->kh, &a->seen_kh, 1, INT_MAX);
    n = cli_opt_add(o, n, "kw", CLI_INT, &a->kw, &a->seen_kw, 1, INT_MAX);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    n = cli_opt_add(o, n, "method", CLI_STRING, &a->method_name, &a->seen_method, 0, 0);
    return n;
}

static int method_id(const char *name)
{
    if (strcmp(name, "auto") == 0) return PK_CONV2D_AUTO;
    if (strcmp(name, "direct") == 0) return PK_CONV2D_DIRECT;
    if (strcmp(name, "fft") == 0) return PK_CONV2D_FFT;
    return -1;
}

static const char *method_name(int id)
{
    return id == PK_CONV2D_DIRECT ? "direct" : id == PK_CONV2D_FFT ? "fft" : "auto";
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rate(double amount, double seconds)
{
    return seconds > 0 && amount > 0 ? amount / seconds : NAN;
}

/* Floats of an h x w array, -1 when its bytes do not fit in size_t. */
static int plane_size(int h, int w, size_t *n)
{
    if ((size_t)h > SIZE_MAX / sizeof(float) / (size_t)w) return -1;
    *n = (size_t)h * (size_t)w;
    return 0;
}

/* ---- which kernel ----------------------------------------------------------------------- */
int cli_conv2d_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "norm", "psf-sweep", "help", NULL};
    return cli_kernel_named(argc, argv, "conv2d", flags);
}

/* ---- inputs ----------------------------------------------------------------------------- */
/* DIR/params.json values for what the command line did not set; an absent file is fine. */
static int cv_read_params(const char *prog, const char *path, cv_args *a)
{
    struct { const char *key; int *v, *seen; int min; } ints[5] = {
        {"h", &a->h, &a->seen_h, 1}, {"w", &a->w, &a->seen_w, 1}, {"kh", &a->kh, &a->seen_kh, 1},
        {"kw", &a->kw, &a->seen_kw, 1}, {"seed", &a->seed, &a->seen_seed, 0}};
    cli_jobject *obj;
    char *text;
    int rc = cli_params_load(prog, path, "conv2d", &obj, &text);
    if (rc || !obj) return rc;
    const cli_jvalue *v;
    for (int k = 0; k < 5; ++k) {
        v = cli_json_get(obj, ints[k].key);
        if (!v) continue;
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < ints[k].min ||
            v->num > INT_MAX) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be an integer >= %d", path, ints[k].key,
                                 ints[k].min);
            goto done;
        }
        if (!*ints[k].seen) {
            *ints[k].v = (int)v->num;
            *ints[k].seen = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "method");
    if (v) {
        if (v->type != CLI_JSTR || method_id(v->str) < 0) {
            rc = cli_usage_error(prog, "%s: \"method\" must be \"direct\", \"fft\" or \"auto\"", path);
            goto done;
        }
        if (!a->seen_method) {
            a->method_name = method_name(method_id(v->str));
            a->seen_method = SEEN_JSON;
        }
    }
done:
    free(obj);
    free(text);
    return rc;
}

/* A float32 2-D array from path; its shape must agree with sizes given elsewhere. */
static int cv_read_array(const char *prog, const char *path, const char *what, int *rows,
                         int *cols, int seen_rows, int seen_cols, const char *rname,
                         const char *cname, pk_array *arr)
{
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    if (arr->dtype != PK_DTYPE_F32 || arr->ndim != 2)
        return cli_usage_error(prog, "%s: expected a float32 ('<f4') array with 2 dimensions %s, "
                               "got '%s' with %d dimension%s", path, what,
                               pk_dtype_descr(arr->dtype), arr->ndim, arr->ndim == 1 ? "" : "s");
    int *dims[2] = {rows, cols}, seen[2] = {seen_rows, seen_cols};
    const char *names[2] = {rname, cname};
    for (int k = 0; k < 2; ++k) {
        size_t d = arr->shape[k];
        if (d < 1 || d > INT_MAX)
            return cli_usage_error(prog, "%s: dimension %d has size %zu (must be 1..%d)", path, k,
                                   d, INT_MAX);
        if (seen[k] && (size_t)*dims[k] != d)
            return cli_usage_error(prog, "%s has shape [%zu, %zu] but %s%s is %d", path,
                                   arr->shape[0], arr->shape[1],
                                   seen[k] == SEEN_CLI ? "--" : "params.json ", names[k], *dims[k]);
        *dims[k] = (int)d;
    }
    return 0;
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run conv2d [options]\n"
        "Convolve one image with a PSF (StrayLight, docs/KERNELS.md section 5: correlation,\n"
        "periodic borders, output centred by kh/2, kw/2) and print one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     a variant of the backend (portkern bench lists them); it overrides\n"
        "                  --method; with --backend auto it selects the backend\n"
        "  --method M      direct, fft or auto (default): auto takes the FFT from a PSF size\n"
        "                  measured on the CPU (docs/PERFORMANCE.md); a backend without an\n"
        "                  FFT variant runs direct and says so in \"reason\"\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/image.npy (float32 [h][w]), DIR/psf.npy (float32\n"
        "                  [kh][kw]) and DIR/params.json when present; options given here\n"
        "                  override params.json.  Without --in, the StrayLight-like frame\n"
        "                  and PSF of 'portkern gen conv2d' are generated\n"
        "  --out DIR       write the result as DIR/out.npy (DIR is created)\n"
        "  --h N --w N     image size (default 813 x 5271; with --in: must match)\n"
        "  --kh N --kw N   PSF size (default 11 x 11; with --in: must match)\n"
        "  --seed S        seed of the generated data (default 1)\n"
        "  --verify        also run the serial reference (double sums) and compare\n"
        "  --rtol R        tolerance of --verify (default 1e-5; zero threshold 1e-10)\n"
        "  --norm          --verify norm-wise (||out - ref|| / ||ref|| <= rtol) instead of\n"
        "                  element-wise: for data with outputs near zero through the FFT\n"
        "\n"
        "The JSON line: kernel, backend, device, variant, method, sizes, seconds (whole\n"
        "call), kernel_seconds, transfer_seconds (image up + result down), setup_seconds,\n"
        "ms_per_frame (kernel), gflop_per_s (" CV_FLOPS_MODEL "), gb_per_s\n"
        "(" CV_BYTES_MODEL "), reason; --verify adds \"verify\": {equal, mode, rtol,\n"
        "max_rel_err, max_abs_err, norm_rel_err, num_failed, first_fail \"[y, x]\" or null}.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed on the device;\n"
        "2 bad option, bad input file, or unknown backend/variant/device.\n");
}

static void run_print(const pk_conv2d_params *p, const pk_run_info *info,
                      const pk_diff_report *rep, double rtol, int norm)
{
    const double px = (double)p->h * p->w, flops = 2.0 * p->kh * p->kw * px;
    const size_t shape[2] = {(size_t)p->h, (size_t)p->w};
    cli_json j;

    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, "conv2d", info);
    cj_str(&j, "method", method_name(p->method));
    cj_int(&j, "h", p->h);
    cj_int(&j, "w", p->w);
    cj_int(&j, "kh", p->kh);
    cj_int(&j, "kw", p->kw);
    cj_run_times(&j, info);
    cj_num(&j, "ms_per_frame", info->kernel_s > 0 ? 1e3 * info->kernel_s : NAN);
    cj_num(&j, "gflop_per_s", rate(flops / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(8 * px / 1e9, info->kernel_s));
    cj_str(&j, "flops_model", CV_FLOPS_MODEL);
    cj_str(&j, "bytes_model", CV_BYTES_MODEL);
    cj_run_tail(&j, info);
    cj_verify(&j, rep, rtol, norm, shape, 2);
    cj_close(&j);
}

int cli_conv2d_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    cv_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, norm = 0, n = 0, npos, rc = 0;
    double rtol = 1e-5;
    cli_opt opts[24];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_conv2d_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_array img_arr, psf_arr;
    float *image = NULL, *psf = NULL, *res = NULL, *ref = NULL, *own_img = NULL, *own_psf = NULL;
    size_t npx, ntaps;
    pk_status s;

    cv_args_init(&a);
    memset(&img_arr, 0, sizeof img_arr);
    memset(&psf_arr, 0, sizeof psf_arr);
    n = cv_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "norm", CLI_FLAG, &norm, NULL, 0, 0);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc) return rc;

    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = cv_read_params(prog, path, &a))) return rc;
        if (cli_join(path, sizeof path, in, "image.npy"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = cv_read_array(prog, path, "[h][w]", &a.h, &a.w, a.seen_h, a.seen_w, "h", "w",
                                &img_arr)))
            goto done;
        if (cli_join(path, sizeof path, in, "psf.npy")) {
            rc = cli_usage_error(prog, "path too long: %s", in);
            goto done;
        }
        if ((rc = cv_read_array(prog, path, "[kh][kw]", &a.kh, &a.kw, a.seen_kh, a.seen_kw, "kh",
                                "kw", &psf_arr)))
            goto done;
        image = img_arr.data;
        psf = psf_arr.data;
    }
    if (method_id(a.method_name) < 0) {
        rc = cli_usage_error(prog, "option --method: unknown method '%s' (direct, fft, auto)",
                             a.method_name);
        goto done;
    }
    if (plane_size(a.h, a.w, &npx) || plane_size(a.kh, a.kw, &ntaps)) {
        rc = cli_usage_error(prog, "a %d x %d image with a %d x %d PSF does not fit in memory",
                             a.h, a.w, a.kh, a.kw);
        goto done;
    }
    if (!in) {
        own_img = malloc(npx * sizeof *own_img);
        own_psf = malloc(ntaps * sizeof *own_psf);
        if (!own_img || !own_psf) goto nomem;
        pk_cv_gen_frame(a.h, a.w, (unsigned)a.seed, own_img);
        pk_cv_gen_psf(a.kh, a.kw, (unsigned)a.seed, own_psf);
        image = own_img;
        psf = own_psf;
    }
    p.h = a.h;
    p.w = a.w;
    p.kh = a.kh;
    p.kw = a.kw;
    p.method = method_id(a.method_name);
    res = malloc(npx * sizeof *res);
    if (!res) goto nomem;

    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = pk_conv2d(ctx, &p, variant, image, psf, res, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        ref = malloc(npx * sizeof *ref);
        if (!ref) goto nomem;
        s = pk_conv2d_reference(&p, image, psf, ref);
        if (s == PK_OK)
            s = pk_diff_f32(ref, res, npx, rtol, 1e-10, norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE,
                            &rep);
        if (s != PK_OK && s != PK_EMISMATCH) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (out && (rc = cli_write_npy(prog, out, "out.npy", PK_DTYPE_F32, 2, (size_t[]){(size_t)a.h, (size_t)a.w}, res))) goto done;
    run_print(&p, &info, verify ? &rep : NULL, rtol, norm);
    rc = verify && !rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "%s: out of host memory for a %d x %d image\n", prog, a.h, a.w);
    rc = CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&img_arr);
    pk_array_free(&psf_arr);
    free(own_img);
    free(own_psf);
    free(res);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen conv2d --out DIR [options]\n"
        "Write the inputs of a run: DIR/image.npy (a PROBA-V-sized StrayLight-like frame,\n"
        "float32 [h][w]: smooth background, sharp edges, texture, point sources; values\n"
        "about 0.3 .. 6), DIR/psf.npy (float32 [kh][kw]: a bright off-centre core, faint wide\n"
        "wings and a ghost, summing to 1) and DIR/params.json.  DIR is created when missing.\n"
        "\n"
        "  --h N --w N     image size (default 813 x 5271, the StrayLight frame)\n"
        "  --kh N --kw N   PSF size (default 11 x 11)\n"
        "  --seed S        seed (default 1): the same seed gives the same data\n"
        "  --method M      recorded in params.json for 'run --in' (direct, fft, auto)\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n");
}

int cli_conv2d_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    cv_args a;
    const char *out = NULL;
    int n = 0, npos, rc;
    cli_opt opts[16];
    char *pos[1], path[4096];
    float *image = NULL, *psf = NULL;
    size_t npx, ntaps;
    FILE *pf;
    cli_json j;

    cv_args_init(&a);
    n = cv_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    if (method_id(a.method_name) < 0)
        return cli_usage_error(prog, "option --method: unknown method '%s' (direct, fft, auto)",
                               a.method_name);
    if (plane_size(a.h, a.w, &npx) || plane_size(a.kh, a.kw, &ntaps))
        return cli_usage_error(prog, "a %d x %d image with a %d x %d PSF does not fit in memory",
                               a.h, a.w, a.kh, a.kw);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    image = malloc(npx * sizeof *image);
    psf = malloc(ntaps * sizeof *psf);
    if (!image || !psf) {
        fprintf(stderr, "%s: out of host memory for a %d x %d image\n", prog, a.h, a.w);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    pk_cv_gen_frame(a.h, a.w, (unsigned)a.seed, image);
    pk_cv_gen_psf(a.kh, a.kw, (unsigned)a.seed, psf);
    if ((rc = cli_write_npy(prog, out, "image.npy", PK_DTYPE_F32, 2, (size_t[]){(size_t)a.h, (size_t)a.w}, image)) ||
        (rc = cli_write_npy(prog, out, "psf.npy", PK_DTYPE_F32, 2, (size_t[]){(size_t)a.kh, (size_t)a.kw}, psf)))
        goto done;
    if ((rc = cli_params_open(prog, out, "conv2d", path, sizeof path, &pf, &j)))
        goto done;
    cj_int(&j, "h", a.h);
    cj_int(&j, "w", a.w);
    cj_int(&j, "kh", a.kh);
    cj_int(&j, "kw", a.kw);
    cj_str(&j, "method", a.method_name);
    cj_int(&j, "seed", a.seed);
    if ((rc = cli_params_close(prog, path, pf, &j)))
        goto done;
    printf("wrote %s/image.npy (float32 [%d, %d]), %s/psf.npy (float32 [%d, %d]) and %s\n", out,
           a.h, a.w, out, a.kh, a.kw, path);
done:
    free(image);
    free(psf);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct cv_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int status;
    char reason[600];
    double kernel_s, up_s, down_s; /* best of the timed runs */
    int verified;
    double max_rel_err;
    size_t num_failed;
    char first_fail[64];
} cv_row;

typedef struct cv_sweep {
    pk_backend_id backend;
    char direct[32], fft[32];
    int k;
    double direct_s, fft_s; /* best of the timed runs; 0: failed */
    int agree;              /* the two results equal within the differ */
    char error[256];
} cv_sweep;

struct cli_cv_bench {
    const char *size;
    int h, w, k, reps, threads;
    cv_row *rows;
    int nrows, cap;
    cv_sweep *sweep;
    int nsweep;
};

static cv_row *add_row(cli_cv_bench *b, pk_backend_id be)
{
    cv_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    cv_row *r = &rows[b->nrows++];
    r->backend = be;
    return r;
}

static void row_fail(cv_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

/* Best kernel time of reps runs of a plan after one warm-up; upload and download timed
 * around the calls.  0 on success, else the failing status (plan destroyed by the caller). */
static pk_status time_plan(pk_conv2d_plan *plan, const float *image, float *out, int reps,
                           double *kern, double *up, double *down, pk_run_info *info)
{
    pk_status s;
    double t0, t1, t2;
    *kern = *up = *down = INFINITY;
    for (int i = 0; i <= reps; ++i) { /* i = 0: the warm-up */
        t0 = now_s();
        if ((s = pk_conv2d_plan_upload(plan, image)) != PK_OK) return s;
        t1 = now_s();
        if ((s = pk_conv2d_plan_run(plan, info)) != PK_OK) return s;
        t2 = now_s();
        if ((s = pk_conv2d_plan_download(plan, out)) != PK_OK) return s;
        if (i == 0) continue;
        if (t1 - t0 < *up) *up = t1 - t0;
        if (info->kernel_s < *kern) *kern = info->kernel_s;
        if (now_s() - t2 < *down) *down = now_s() - t2;
    }
    return PK_OK;
}

static void bench_variant(cli_cv_bench *b, pk_context *ctx, cv_row *r, const float *image,
                          const float *psf, const float *ref, float *out)
{
    pk_conv2d_params p = {b->h, b->w, b->k, b->k, PK_CONV2D_AUTO};
    pk_conv2d_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    size_t npx = (size_t)b->h * b->w;
    pk_status s = pk_conv2d_plan_create(&plan, ctx, &p, r->variant, psf, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    s = time_plan(plan, image, out, b->reps, &r->kernel_s, &r->up_s, &r->down_s, &info);
    pk_conv2d_plan_destroy(plan);
    if (s != PK_OK) {
        row_fail(r, "run", s);
        return;
    }
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    s = pk_diff_f32(ref, out, npx, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) {
        row_fail(r, "verify", s);
        return;
    }
    r->verified = rep.equal;
    r->max_rel_err = rep.max_rel_err;
    r->num_failed = rep.num_failed;
    if (rep.num_failed > 0 && rep.first_fail != (size_t)-1) {
        size_t shape[2] = {(size_t)b->h, (size_t)b->w};
        pk_format_index(rep.first_fail, shape, 2, r->first_fail, sizeof r->first_fail);
    }
}

static int is_fft(const char *v)
{
    size_t n = strlen(v);
    return strcmp(v, "fft") == 0 || (n > 4 && strcmp(v + n - 4, "-fft") == 0);
}

/* PSF sizes of the sweep: around the crossover densely, then up to 63. */
static const int sweep_k[] = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 31, 41, 63};
#define N_SWEEP ((int)(sizeof sweep_k / sizeof sweep_k[0]))

/* Direct (the backend's first variant) against FFT for every K, same frame; the FFT result
 * is checked against the direct one (element-wise, rtol 1e-5). */
static int bench_sweep(cli_cv_bench *b, pk_context *ctx, pk_backend_id be, const char *direct,
                       const char *fft, const float *image, float *o1, float *o2)
{
    const size_t npx = (size_t)b->h * b->w;
    float *psf = malloc((size_t)sweep_k[N_SWEEP - 1] * sweep_k[N_SWEEP - 1] * sizeof *psf);
    cv_sweep *more = realloc(b->sweep, (size_t)(b->nsweep + N_SWEEP) * sizeof *more);
    if (!psf || !more) {
        free(psf);
        return -1;
    }
    b->sweep = more;
    for (int i = 0; i < N_SWEEP; ++i) {
        cv_sweep *sw = &b->sweep[b->nsweep++];
        pk_conv2d_params p = {b->h, b->w, sweep_k[i], sweep_k[i], PK_CONV2D_AUTO};
        double up, down;
        pk_run_info info;
        memset(sw, 0, sizeof *sw);
        sw->backend = be;
        sw->k = sweep_k[i];
        snprintf(sw->direct, sizeof sw->direct, "%s", direct);
        snprintf(sw->fft, sizeof sw->fft, "%s", fft);
        pk_cv_gen_psf(sw->k, sw->k, 1, psf);
        cli_progress("psf sweep: %s %dx%d ...", pk_backend_name(be), sw->k, sw->k);
        for (int v = 0; v < 2; ++v) {
            pk_conv2d_plan *plan = NULL;
            double *t = v ? &sw->fft_s : &sw->direct_s;
            pk_status s = pk_conv2d_plan_create(&plan, ctx, &p, v ? fft : direct, psf, &info);
            if (s == PK_OK) s = time_plan(plan, image, v ? o2 : o1, b->reps, t, &up, &down, &info);
            pk_conv2d_plan_destroy(plan);
            if (s != PK_OK) {
                *t = 0;
                snprintf(sw->error, sizeof sw->error, "%s: %s: %s", v ? fft : direct,
                         pk_strerror(s), pk_last_error());
                break;
            }
        }
        sw->agree = !sw->error[0] &&
                    pk_diff_f32(o1, o2, npx, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    }
    free(psf);
    return 0;
}

static void print_rows(const cli_cv_bench *b)
{
    const double px = (double)b->h * b->w, flops = 2.0 * b->k * b->k * px;
    printf("conv2d %s: %d x %d image, %d x %d PSF (generated StrayLight frame, seed 1); best of "
           "%d timed runs after 1 warm-up, image resident; " CV_FLOPS_MODEL "\n\n",
           b->size, b->h, b->w, b->k, b->k, b->reps);
    printf("%-7s  %-7s  %-32s  %-10s  %9s  %8s  %9s  %9s  %s\n", "kernel", "backend", "device",
           "variant", "ms/frame", "GFlop/s", "up ms", "down ms", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const cv_row *r = &b->rows[i];
        printf("%-7s  %-7s  %-32.32s  %-10s  ", "conv2d", pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-");
        if (r->status == ROW_OK)
            printf("%9.2f  %8.1f  %9.2f  %9.2f  %s\n", 1e3 * r->kernel_s,
                   rate(flops / 1e9, r->kernel_s), 1e3 * r->up_s, 1e3 * r->down_s,
                   r->verified ? "yes" : "NO");
        else
            printf("%9s  %8s  %9s  %9s  %s\n", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const cv_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s error: %s\n", pk_backend_name(r->backend), r->variant, r->reason);
        else if (!r->verified)
            printf("%s %s NOT verified: %zu of %.0f pixels beyond rtol 1e-5, max rel err %g, "
                   "first at %s\n", pk_backend_name(r->backend), r->variant, r->num_failed, px,
                   r->max_rel_err, r->first_fail);
    }
    /* The StrayLight report's sequence, as far as the rows have it. */
    static const char *const seq[] = {"naive", "serial", "simd", "omp"};
    double t0 = 0;
    int shown = 0;
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < b->nrows; ++i) {
            const cv_row *r = &b->rows[i];
            if (r->status != ROW_OK || strcmp(r->variant, seq[k]) != 0) continue;
            if (!shown++) {
                t0 = r->kernel_s;
                printf("StrayLight sequence:");
            }
            printf("%s %s %.2f ms (x%.1f)", shown > 1 ? " ->" : "", seq[k], 1e3 * r->kernel_s,
                   t0 / r->kernel_s);
        }
    if (shown) printf("\n");
}

static void print_sweep(const cli_cv_bench *b)
{
    if (!b->nsweep) return;
    printf("\nPSF sweep on the %d x %d frame (square PSFs; direct = the backend's first variant; "
           "fft checked against it):\n", b->h, b->w);
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

int cli_conv2d_bench(const char *size, int reps, int threads, const pk_backend_id *backends,
                     int nb, int psf_sweep, cli_cv_bench **out)
{
    cli_cv_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    int total = 0, done = 0, rc = 0;
    memset(&set, 0, sizeof set); /* the error path closes it */
    float *image = NULL, *psf = NULL, *ref = NULL, *res = NULL, *res2 = NULL;
    pk_status s;

    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps;
    b->threads = threads;
    /* small: a quarter of the frame (CI's bootstrap runs it); paper and large: the frame. */
    b->h = strcmp(size, "small") == 0 ? CV_FRAME_H / 4 : CV_FRAME_H;
    b->w = strcmp(size, "small") == 0 ? CV_FRAME_W / 4 : CV_FRAME_W;
    b->k = CV_FRAME_K;
    const size_t npx = (size_t)b->h * b->w;

    total = cli_bench_open(&set, backends, nb, threads, pk_conv2d_variants, "conv2d");
    pk_context **ctx = set.ctx;
    char(*vars)[16][32] = set.vars, (*skip)[320] = set.skip;
    const int *nvars = set.nvars;
    if (total > 0) {
        image = malloc(npx * sizeof *image);
        psf = malloc((size_t)b->k * b->k * sizeof *psf);
        ref = malloc(npx * sizeof *ref);
        res = malloc(npx * sizeof *res);
        res2 = malloc(npx * sizeof *res2);
        if (!image || !psf || !ref || !res || !res2) goto nomem;
        pk_cv_gen_frame(b->h, b->w, 1, image);
        pk_cv_gen_psf(b->k, b->k, 1, psf);
        cli_progress("conv2d reference: serial, %d x %d, %d x %d ...", b->h, b->w, b->k, b->k);
        pk_conv2d_params p = {b->h, b->w, b->k, b->k, PK_CONV2D_AUTO};
        if ((s = pk_conv2d_reference(&p, image, psf, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    for (int i = 0; i < nb; ++i) {
        pk_backend_id be = backends[i];
        if (nvars[be] == 0) {
            cv_row *r = add_row(b, be);
            if (!r) goto nomem;
            r->status = ROW_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "%s", skip[be]);
        }
        for (int v = 0; v < nvars[be]; ++v) {
            cv_row *r = add_row(b, be);
            if (!r) goto nomem;
            snprintf(r->variant, sizeof r->variant, "%s", vars[be][v]);
            cli_progress("conv2d [%d/%d] %s %s ...", ++done, total, pk_backend_name(be), r->variant);
            bench_variant(b, ctx[be], r, image, psf, ref, res);
        }
    }
    if (psf_sweep)
        for (int i = 0; i < nb; ++i) {
            pk_backend_id be = backends[i];
            for (int v = 1; v < nvars[be]; ++v)
                if (is_fft(vars[be][v]) &&
                    bench_sweep(b, ctx[be], be, vars[be][0], vars[be][v], image, res, res2))
                    goto nomem;
        }
    print_rows(b);
    print_sweep(b);
    rc = cli_conv2d_bench_failed(b) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    free(image);
    free(psf);
    free(ref);
    free(res);
    free(res2);
    return rc;
}

int cli_conv2d_bench_failed(const cli_cv_bench *b)
{
    for (int i = 0; b && i < b->nrows; ++i)
        if (b->rows[i].status == ROW_FAILED || (b->rows[i].status == ROW_OK && !b->rows[i].verified))
            return 1;
    for (int i = 0; b && i < b->nsweep; ++i)
        if (b->sweep[i].error[0] || !b->sweep[i].agree) return 1;
    return 0;
}

void cli_conv2d_bench_json_rows(const cli_cv_bench *b, cli_json *j)
{
    const double px = (double)b->h * b->w, flops = 2.0 * b->k * b->k * px;
    for (int i = 0; i < b->nrows; ++i) {
        const cv_row *r = &b->rows[i];
        const double t = r->status == ROW_OK ? r->kernel_s : NAN;
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", "conv2d");
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", r->status == ROW_OK ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        cj_int(j, "h", b->h);
        cj_int(j, "w", b->w);
        cj_int(j, "kh", b->k);
        cj_int(j, "kw", b->k);
        cj_num(j, "kernel_seconds", t);
        cj_num(j, "ms_per_frame", 1e3 * t);
        cj_num(j, "gflop_per_s", rate(flops / 1e9, t));
        cj_num(j, "gb_per_s", rate(8 * px / 1e9, t));
        cj_num(j, "upload_seconds", r->status == ROW_OK ? r->up_s : NAN);
        cj_num(j, "download_seconds", r->status == ROW_OK ? r->down_s : NAN);
        cj_bool(j, "verified", r->status == ROW_OK && r->verified);
        if (r->status == ROW_OK) {
            cj_num(j, "max_rel_err", r->max_rel_err);
            cj_int(j, "num_failed", (long long)r->num_failed);
            cj_str(j, "first_fail", r->first_fail[0] ? r->first_fail : NULL);
        }
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_conv2d_bench_json(const cli_cv_bench *b, cli_json *j)
{
    cj_open(j, "conv2d", '{');
    cj_str(j, "flops_model", CV_FLOPS_MODEL);
    cj_str(j, "bytes_model", CV_BYTES_MODEL);
    cj_str(j, "timing", "best kernel time of reps plan runs after one warm-up, image resident");
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
    cj_close(j);
}

void cli_conv2d_bench_free(cli_cv_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b->sweep);
    free(b);
}
