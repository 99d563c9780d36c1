/* cli_laplace2d.c - the laplace2d commands of portkern: run, gen, and its part of bench
 * (README.md, "Command line"; docs/KERNELS.md section 4a).  portkern.c hands a command
 * line to these when its kernel operand is "laplace2d".
 *
 * Verification: the backends evaluate the reference's float expression (portkern.h), fused or
 * not, so after k iterations they agree with it within 2 k gamma_5 nu^k max|phi_0| per element
 * (the derivation is in tests/lp_common.h; gamma_5 = 5u / (1 - 5u), u = 2^-24, nu = (1 + 4a)
 * inv).  The verdict is that absolute bound, a property of the data; the library's relative
 * differ supplies the relative and norm-wise figures of the report.
 *
 * Byte model: 8 B per site and iteration, one float read and one written (the ideal; the four
 * neighbours come from caches).  Flops: 7 per site and iteration. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

#define MAIN_PROG "portkern"
#define LP_KERNEL "laplace2d"
#define LP_PAPER_L 2048
#define LP_DEFAULT_COUNT 10
#define LP_DEFAULT_SIGMA 0.1
#define LP_FLOPS_PER_SITE 7.0
#define LP_BYTES_PER_SITE 8.0
#define LP_FLOPS_MODEL "7 flop per site and iteration"
#define LP_BYTES_MODEL "8 B per site and iteration: one float read + one written (ideal)"
#define LP_VERIFY_RULE "|phi - phi_ref| <= 2 k gamma_5 nu^k max|phi_0| for every element"

#define SEEN_CLI 1
#define SEEN_JSON 2

static double rate(double amount, double seconds)
{
    return seconds > 0 && amount > 0 ? amount / seconds : NAN;
}

/* O(1) random data, uniform in [-1, 1), the same for a seed everywhere (splitmix64). */
static void lp_gen_phi(size_t n, unsigned long long seed, float *phi)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; ++i) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        phi[i] = (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
    }
}

/* The absolute tolerance of --verify and of the bench after `count` iterations (see the top). */
static double lp_atol(double sigma, int count, double maxabs)
{
    const double u = FLT_EPSILON / 2, gamma5 = 5 * u / (1 - 5 * u);
    const float a = (float)sigma, inv = (float)(1.0 / (1.0 + 4.0 * (double)a));
    const double nu = (1.0 + 4.0 * (double)a) * (double)inv;
    return 1.01 * 2 * count * gamma5 * pow(nu, count) * maxabs;
}

static double lp_maxabs(const float *f, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        if (fabs(f[i]) > m) m = fabs(f[i]);
    return m;
}

/* The verdict: *rep gets the differ's relative and norm-wise figures (pairs with both sides
 * <= atol left out of the relative ones) and, from the absolute rule, equal, num_failed,
 * first_fail and max_abs_err. */
static pk_status lp_check(const float *ref, const float *y, size_t n, double atol,
                          pk_diff_report *rep, double *rtol_used)
{
    const double amax = lp_maxabs(ref, n);
    const double rtol = amax > 0 && isfinite(amax) && atol > 0 ? atol / amax : 1e-5;
    *rtol_used = rtol;
    pk_status s = pk_diff_f32(ref, y, n, rtol, atol, PK_DIFF_ELEMENTWISE, rep);
    if (s != PK_OK && s != PK_EMISMATCH) return s;
    rep->num_failed = 0;
    rep->first_fail = (size_t)-1;
    rep->max_abs_err = 0;
    for (size_t i = 0; i < n; ++i) {
        if (y[i] == ref[i]) continue;
        const double d = fabs((double)y[i] - (double)ref[i]);
        if (!(d <= atol) && rep->num_failed++ == 0) rep->first_fail = i; /* NaN fails */
        if (d > rep->max_abs_err) rep->max_abs_err = d;
    }
    rep->equal = rep->num_failed == 0;
    return PK_OK;
}

/* ---- options ---------------------------------------------------------------------------- */
typedef struct lp_args {
    int l, count, nw, seed, layout;
    double sigma;
    const char *layout_name;
    int seen_l, seen_count, seen_nw, seen_seed, seen_layout, seen_sigma;
} lp_args;

static void lp_args_init(lp_args *a)
{
    memset(a, 0, sizeof *a);
    a->l = LP_PAPER_L;
    a->count = LP_DEFAULT_COUNT;
    a->sigma = LP_DEFAULT_SIGMA;
    a->seed = 1;
    a->layout = -1; /* auto */
}

static int lp_opts(cli_opt *o, int n, lp_args *a)
{
    n = cli_opt_add(o, n, "l", CLI_INT, &a->l, &a->seen_l, 1, 65536);
    n = cli_opt_add(o, n, "count", CLI_INT, &a->count, &a->seen_count, 0, INT_MAX);
    n = cli_opt_add(o, n, "sigma", CLI_DOUBLE, &a->sigma, &a->seen_sigma, FLT_MIN, FLT_MAX);
    n = cli_opt_add(o, n, "layout", CLI_STRING, &a->layout_name, &a->seen_layout, 0, 0);
    n = cli_opt_add(o, n, "nw", CLI_INT, &a->nw, &a->seen_nw, 0, 65536);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    return n;
}

static int lp_layout_arg(const char *prog, const lp_args *a, const char *name, int *layout)
{
    if (strcmp(name, "auto") == 0) {
        *layout = -1;
        return 0;
    }
    if (pk_laplace2d_layout_from_name(name, layout) != PK_OK)
        return cli_usage_error(prog, "option --layout: unknown layout '%s' (lexi, hvfo, auto)",
                               name);
    (void)a;
    return 0;
}

/* What the command line said about the layout, checked. */
static int lp_args_resolve(const char *prog, lp_args *a)
{
    if (a->seen_layout) return lp_layout_arg(prog, a, a->layout_name, &a->layout);
    return 0;
}

/* auto: hvfo when l is a multiple of the lanes, else lexi. */
static int lp_effective_layout(const lp_args *a)
{
    if (a->layout >= 0) return a->layout;
    const int nw = a->nw ? a->nw : PK_LAP_DEFAULT_NW;
    return a->l % nw == 0 ? PK_LAP_HVFO : PK_LAP_LEXI;
}

static void lp_params(const lp_args *a, pk_laplace2d_params *p)
{
    p->l = a->l;
    p->count = a->count;
    p->sigma = a->sigma;
    p->layout = lp_effective_layout(a);
    p->nw = a->nw;
}

/* ---- which kernel ----------------------------------------------------------------------- */
int cli_laplace2d_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "help", NULL};
    return cli_kernel_named(argc, argv, LP_KERNEL, flags);
}

/* ---- inputs ----------------------------------------------------------------------------- */
/* DIR/params.json values for what the command line did not set; an absent file is fine. */
static int lp_read_params(const char *prog, const char *path, lp_args *a)
{
    struct { const char *key; int *v, *seen; double min, max; } ints[4] = {
        {"l", &a->l, &a->seen_l, 1, 65536}, {"count", &a->count, &a->seen_count, 0, INT_MAX},
        {"nw", &a->nw, &a->seen_nw, 0, 65536}, {"seed", &a->seed, &a->seen_seed, 0, INT_MAX}};
    cli_jobject *obj;
    char *text;
    int rc = cli_params_load(prog, path, LP_KERNEL, &obj, &text);
    if (rc || !obj) return rc;
    const cli_jvalue *v;
    for (int k = 0; k < 4; ++k) {
        v = cli_json_get(obj, ints[k].key);
        if (!v) continue;
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < ints[k].min ||
            v->num > ints[k].max) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be an integer in [%.0f, %.0f]", path,
                                 ints[k].key, ints[k].min, ints[k].max);
            goto done;
        }
        if (!*ints[k].seen) {
            *ints[k].v = (int)v->num;
            *ints[k].seen = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "sigma");
    if (v) {
        if (v->type != CLI_JNUM || !(v->num >= FLT_MIN && v->num <= FLT_MAX)) {
            rc = cli_usage_error(prog, "%s: \"sigma\" must be a number in [%g, %g]", path,
                                 (double)FLT_MIN, (double)FLT_MAX);
            goto done;
        }
        if (!a->seen_sigma) {
            a->sigma = v->num;
            a->seen_sigma = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "layout");
    if (v) {
        int layout;
        if (v->type != CLI_JSTR || (rc = lp_layout_arg(prog, a, v->str, &layout))) {
            if (!rc)
                rc = cli_usage_error(prog, "%s: \"layout\" must be \"lexi\", \"hvfo\" or \"auto\"",
                                     path);
            goto done;
        }
        if (!a->seen_layout) {
            a->layout = layout;
            a->seen_layout = SEEN_JSON;
        }
    }
done:
    free(obj);
    free(text);
    return rc;
}

/* DIR/phi.npy: float32 [l][l]; l comes from its shape and must agree with l given elsewhere. */
static int lp_read_phi(const char *prog, const char *path, lp_args *a, pk_array *arr)
{
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    if (arr->dtype != PK_DTYPE_F32 || arr->ndim != 2 || arr->shape[0] != arr->shape[1] ||
        arr->shape[0] < 1 || arr->shape[0] > 65536) {
        const char *d = pk_dtype_descr(arr->dtype);
        char shape[96] = "[";
        for (int k = 0; k < arr->ndim && k < 4; ++k) {
            size_t len = strlen(shape);
            snprintf(shape + len, sizeof shape - len, "%s%zu", k ? ", " : "", arr->shape[k]);
        }
        strcat(shape, arr->ndim > 4 ? ", ...]" : "]");
        return cli_usage_error(prog, "%s: expected a float32 ('<f4') square array [l][l], "
                               "1 <= l <= 65536, got '%s' with shape %s", path, d ? d : "?",
                               shape);
    }
    const int l = (int)arr->shape[0];
    if (a->seen_l && a->l != l)
        return cli_usage_error(prog, "%s has shape [%d, %d], but %sl is %d", path, l, l,
                               a->seen_l == SEEN_CLI ? "--" : "params.json ", a->l);
    a->l = l;
    return 0;
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run laplace2d [options]\n"
        "Apply `count` iterations of the 2-D smoothing Laplacian (docs/KERNELS.md 4a),\n"
        "phi' = (phi + sigma (sum of the 4 neighbours)) / (1 + 4 sigma), periodic, float32,\n"
        "and print one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     a variant of the backend: serial: serial; openmp: omp-simd (default,\n"
        "                  hand-vectorised), omp (auto-vectorised), omp-tb (temporal blocking,\n"
        "                  4 iterations per pass over memory); opencl: opencl; cuda: cuda\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/phi.npy (float32 [l][l], x fastest): l comes from its\n"
        "                  shape; and DIR/params.json when present (l, count, sigma, layout,\n"
        "                  nw); options given here override params.json.  Without --in, O(1)\n"
        "                  random data (uniform in [-1, 1), reproducible by --seed) is\n"
        "                  generated as 'portkern gen laplace2d' does\n"
        "  --out DIR       write the result as DIR/phi.npy (DIR is created): float32 [l][l]\n"
        "  --l N           lattice extent (default 2048, the paper's; with --in: must match)\n"
        "  --count N       iterations (default 10)\n"
        "  --sigma S       > 0 (default 0.1), applied in float\n"
        "  --layout L      the layout the kernel runs on: hvfo (Hopping Vector-Friendly\n"
        "                  Ordering, pho[y][x'][w] = phi[y][w*l/nw + x'], needs l %% nw == 0),\n"
        "                  lexi (phi[y][x], any l) or auto (default: hvfo when l is a multiple\n"
        "                  of nw, else lexi).  Input and output are lexicographic either way;\n"
        "                  the reorder is timed apart (layout_seconds)\n"
        "  --nw N          hvfo lanes (default 0: %d, one 64-byte line)\n"
        "  --seed S        seed of the generated data (default 1)\n"
        "  --verify        also run the serial reference (pk_laplace2d_reference) and compare:\n"
        "                  pass when " LP_VERIFY_RULE "\n"
        "                  (the float error bound of the kernels, tests/lp_common.h); the\n"
        "                  library's relative differ reports the relative and norm-wise errors\n"
        "\n"
        "The JSON line: kernel, backend, device, device_index, variant, l, count, sigma,\n"
        "layout, nw, seconds (whole call), kernel_seconds, transfer_seconds, setup_seconds,\n"
        "layout_seconds, ms_per_iteration, gflop_per_s (" LP_FLOPS_MODEL "), gb_per_s\n"
        "(" LP_BYTES_MODEL "),\n"
        "flops, bytes, flops_model, bytes_model, fell_back, reason; --verify adds \"verify\":\n"
        "{equal, mode, rtol, max_rel_err, max_abs_err, norm_rel_err, num_failed, first_fail\n"
        "\"[y, x]\" or null}, verify_rule and verify_atol.  Rates use the kernel time.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file (wrong dtype or shape), l not a multiple of nw for hvfo, or unknown\n"
        "backend/variant/device.\n",
        PK_LAP_DEFAULT_NW);
}

static void run_print(const pk_laplace2d_params *p, const pk_run_info *info,
                      const pk_diff_report *rep, double rtol, double atol)
{
    cli_json j;
    const size_t shape[2] = {(size_t)p->l, (size_t)p->l};
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, LP_KERNEL, info);
    cj_int(&j, "l", p->l);
    cj_int(&j, "count", p->count);
    cj_num(&j, "sigma", p->sigma);
    cj_str(&j, "layout", pk_laplace2d_layout_name(p->layout));
    cj_int(&j, "nw", p->layout == PK_LAP_HVFO ? (p->nw ? p->nw : PK_LAP_DEFAULT_NW) : 1);
    cj_run_times(&j, info);
    cj_num(&j, "layout_seconds", info->layout_s);
    cj_num(&j, "ms_per_iteration", p->count > 0 ? rate(1e3 * info->kernel_s, p->count) : NAN);
    cj_num(&j, "gflop_per_s", rate(info->flops / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(info->bytes / 1e9, info->kernel_s));
    cj_num(&j, "flops", info->flops);
    cj_num(&j, "bytes", info->bytes);
    cj_str(&j, "flops_model", LP_FLOPS_MODEL);
    cj_str(&j, "bytes_model", LP_BYTES_MODEL);
    cj_run_tail(&j, info);
    if (rep) {
        cj_verify(&j, rep, rtol, 0, shape, 2);
        cj_str(&j, "verify_rule", LP_VERIFY_RULE);
        cj_num(&j, "verify_atol", atol);
    }
    cj_close(&j);
}

int cli_laplace2d_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    lp_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, n = 0, npos, rc = 0;
    double atol = 0, rtol = 0;
    cli_opt opts[24];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_laplace2d_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_array arr;
    float *phi = NULL, *ref = NULL;
    size_t sites;
    pk_status s;

    lp_args_init(&a);
    memset(&arr, 0, sizeof arr);
    n = lp_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = lp_args_resolve(prog, &a))) return rc;
    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = lp_read_params(prog, path, &a))) return rc;
        if (cli_join(path, sizeof path, in, "phi.npy"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = lp_read_phi(prog, path, &a, &arr))) goto done;
    }
    lp_params(&a, &p);
    sites = (size_t)p.l * (size_t)p.l;
    if (!(phi = malloc(sites * sizeof *phi))) goto nomem;
    if (in)
        memcpy(phi, arr.data, sites * sizeof *phi);
    else
        lp_gen_phi(sites, (unsigned)a.seed, phi);
    if (verify) {
        if (!(ref = malloc(sites * sizeof *ref))) goto nomem;
        memcpy(ref, phi, sites * sizeof *ref);
        atol = lp_atol(p.sigma, p.count, lp_maxabs(phi, sites));
    }

    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = pk_laplace2d(ctx, &p, variant, phi, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        s = pk_laplace2d_reference(&p, ref);
        if (s == PK_OK) s = lp_check(ref, phi, sites, atol, &rep, &rtol);
        if (s != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (out) {
        const size_t shape[2] = {(size_t)p.l, (size_t)p.l};
        if ((rc = cli_write_npy(prog, out, "phi.npy", PK_DTYPE_F32, 2, shape, phi))) goto done;
    }
    run_print(&p, &info, verify ? &rep : NULL, rtol, atol);
    rc = verify && !rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "%s: out of host memory for a %d x %d field\n", prog, a.l, a.l);
    rc = CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&arr);
    free(phi);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen laplace2d --out DIR [options]\n"
        "Write the input of a run: DIR/phi.npy (O(1) random data, uniform in [-1, 1), float32\n"
        "[l][l]) and DIR/params.json (l, count, sigma, layout, nw, seed), which 'portkern run\n"
        "laplace2d --in DIR' reads.  DIR is created when missing.\n"
        "\n"
        "  --l N           lattice extent (default 2048)\n"
        "  --count N       iterations to record (default 10)\n"
        "  --sigma S       > 0 (default 0.1)\n"
        "  --layout L      lexi, hvfo or auto (default auto) to record\n"
        "  --nw N          hvfo lanes to record (default 0: %d)\n"
        "  --seed S        seed (default 1): the same seed gives the same data\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n",
        PK_LAP_DEFAULT_NW);
}

int cli_laplace2d_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    lp_args a;
    const char *out = NULL;
    int n = 0, npos, rc;
    cli_opt opts[16];
    char *pos[1], path[4096];
    float *phi = NULL;
    FILE *pf;
    cli_json j;

    lp_args_init(&a);
    n = lp_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = lp_args_resolve(prog, &a))) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    if (a.layout == PK_LAP_HVFO && a.l % (a.nw ? a.nw : PK_LAP_DEFAULT_NW) != 0)
        return cli_usage_error(prog, "--layout hvfo needs l %% nw == 0, got l = %d, nw = %d",
                               a.l, a.nw ? a.nw : PK_LAP_DEFAULT_NW);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    const size_t sites = (size_t)a.l * (size_t)a.l, shape[2] = {(size_t)a.l, (size_t)a.l};
    if (!(phi = malloc(sites * sizeof *phi))) {
        fprintf(stderr, "%s: out of host memory for a %d x %d field\n", prog, a.l, a.l);
        return CLI_EXIT_FAIL;
    }
    lp_gen_phi(sites, (unsigned)a.seed, phi);
    if ((rc = cli_write_npy(prog, out, "phi.npy", PK_DTYPE_F32, 2, shape, phi))) goto done;
    if ((rc = cli_params_open(prog, out, LP_KERNEL, path, sizeof path, &pf, &j))) goto done;
    cj_int(&j, "l", a.l);
    cj_int(&j, "count", a.count);
    cj_num(&j, "sigma", a.sigma);
    cj_str(&j, "layout", a.layout < 0 ? "auto" : pk_laplace2d_layout_name(a.layout));
    cj_int(&j, "nw", a.nw);
    cj_int(&j, "seed", a.seed);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    printf("wrote %s/phi.npy (float32 [%d, %d]) and %s\n", out, a.l, a.l, path);
done:
    free(phi);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct lp_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int layout, nw;
    int status;
    char reason[600];
    int l, count;
    double kernel_s; /* best of the timed runs */
    int verified;
    double max_abs_err, atol;
    size_t num_failed;
} lp_row;

typedef struct lp_bw {
    int measured;
    char device[128];
    double bw; /* bytes/s (copy: read + written); 0: not measured */
} lp_bw;

struct cli_lp_bench {
    const char *size;
    int reps, threads;
    int grids[2], counts[2];
    lp_row *rows;
    int nrows, cap;
    lp_bw bw[PK_BACKEND_COUNT];
};

static lp_row *add_row(cli_lp_bench *b, pk_backend_id be)
{
    lp_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    lp_row *r = &rows[b->nrows++];
    r->backend = be;
    return r;
}

static void row_fail(lp_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

static double row_gbs(const lp_row *r)
{
    return r->status == ROW_OK
               ? rate(LP_BYTES_PER_SITE * (double)r->l * r->l * r->count / 1e9, r->kernel_s)
               : NAN;
}

/* Plan, upload, verify one run of `count` iterations against ref, then time reps runs. */
static void bench_variant(cli_lp_bench *b, pk_context *ctx, lp_row *r, const float *phi,
                          const float *ref, float *out, double maxabs)
{
    pk_laplace2d_params p = {r->l, r->count, LP_DEFAULT_SIGMA, r->layout, r->nw};
    const size_t n = (size_t)r->l * r->l;
    pk_laplace2d_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    double rtol;
    pk_status s = pk_laplace2d_plan_create(&plan, ctx, &p, r->variant, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    lp_bw *bw = &b->bw[r->backend];
    if (!bw->measured) {
        bw->measured = 1;
        snprintf(bw->device, sizeof bw->device, "%s", info.device_name);
        cli_progress(LP_KERNEL " bandwidth: %s ...", pk_backend_name(r->backend));
        s = pk_measure_bandwidth(ctx, r->backend, info.device, 0, 5, &bw->bw);
        if (s != PK_OK) {
            fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                    pk_backend_name(r->backend), info.device, pk_strerror(s), pk_last_error());
            bw->bw = 0;
        }
    }
    /* Verified run: count iterations from phi. */
    if ((s = pk_laplace2d_plan_upload(plan, phi)) != PK_OK ||
        (s = pk_laplace2d_plan_run(plan, r->count, &info)) != PK_OK ||
        (s = pk_laplace2d_plan_download(plan, out)) != PK_OK) {
        row_fail(r, "verified run", s);
        goto done;
    }
    r->atol = lp_atol(LP_DEFAULT_SIGMA, r->count, maxabs);
    if ((s = lp_check(ref, out, n, r->atol, &rep, &rtol)) != PK_OK) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = rep.equal;
    r->max_abs_err = rep.max_abs_err;
    r->num_failed = rep.num_failed;
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    /* Timed runs continue on the field (the values stay O(1): the operator averages). */
    r->kernel_s = INFINITY;
    for (int i = 0; i < b->reps; ++i) {
        if ((s = pk_laplace2d_plan_run(plan, r->count, &info)) != PK_OK) {
            row_fail(r, "timed run", s);
            goto done;
        }
        if (info.kernel_s < r->kernel_s) r->kernel_s = info.kernel_s;
    }
done:
    pk_laplace2d_plan_destroy(plan);
}

static const char *row_layout(const lp_row *r, char *buf, size_t len)
{
    if (r->layout == PK_LAP_HVFO)
        snprintf(buf, len, "hvfo/%d", r->nw);
    else
        snprintf(buf, len, "lexi");
    return buf;
}

/* The row of (backend, variant, layout) on grid l, or NULL. */
static const lp_row *find_row(const cli_lp_bench *b, pk_backend_id be, const char *v, int layout,
                              int l)
{
    for (int i = 0; i < b->nrows; ++i) {
        const lp_row *r = &b->rows[i];
        if (r->backend == be && r->layout == layout && r->l == l && r->status == ROW_OK &&
            strcmp(r->variant, v) == 0)
            return r;
    }
    return NULL;
}

static void print_rows(const cli_lp_bench *b)
{
    printf(LP_KERNEL " %s: l = %d (%d iterations per run) and l = %d (%d), sigma %g, O(1) "
           "random data (seed 1);\nbyte model: " LP_BYTES_MODEL "; " LP_FLOPS_MODEL ";\n"
           "best of %d plan runs after a verified run, field resident; verified against the "
           "serial reference: " LP_VERIFY_RULE ";\nratio = GB/s / the copy bandwidth of the "
           "backend's device measured in this run (plain stores, bytes read + written)\n",
           b->size, b->grids[0], b->counts[0], b->grids[1], b->counts[1], LP_DEFAULT_SIGMA,
           b->reps);
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const lp_bw *bw = &b->bw[be];
        if (!bw->measured) continue;
        printf("  %-7s %-40.40s  bandwidth ", pk_backend_name((pk_backend_id)be), bw->device);
        if (bw->bw > 0)
            printf("%6.1f GB/s\n", bw->bw / 1e9);
        else
            printf("not measured\n");
    }
    printf("\n%-9s  %-7s  %-24s  %-9s  %-7s  %5s  %5s  %9s  %8s  %8s  %5s  %11s  %s\n", "kernel",
           "backend", "device", "variant", "layout", "l", "count", "ms/iter", "GB/s", "GFlop/s",
           "ratio", "max abs err", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const lp_row *r = &b->rows[i];
        char lay[16];
        printf("%-9s  %-7s  %-24.24s  %-9s  %-7s  ", LP_KERNEL, pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-",
               r->l ? row_layout(r, lay, sizeof lay) : "-");
        if (r->status == ROW_OK) {
            const double gbs = row_gbs(r), bw = b->bw[r->backend].bw;
            printf("%5d  %5d  %9.3f  %8.2f  %8.2f  ", r->l, r->count, 1e3 * r->kernel_s / r->count,
                   gbs, gbs * LP_FLOPS_PER_SITE / LP_BYTES_PER_SITE);
            if (bw > 0)
                printf("%5.2f  ", gbs * 1e9 / bw);
            else
                printf("%5s  ", "-");
            printf("%11.2e  %s\n", r->max_abs_err, r->verified ? "yes" : "NO");
        } else {
            printf("%5s  %5s  %9s  %8s  %8s  %5s  %11s  %s\n", "-", "-", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const lp_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s l=%d error: %s\n", pk_backend_name(r->backend), r->variant, r->l,
                   r->reason);
        else if (!r->verified)
            printf("%s %s l=%d NOT verified: %zu elements beyond %.3g, max abs err %.3g\n",
                   pk_backend_name(r->backend), r->variant, r->l, r->num_failed, r->atol,
                   r->max_abs_err);
    }
    /* The layout comparison per backend and variant on the larger grid, and hand- against
     * auto-vectorised on the OpenMP backend. */
    const int l = b->grids[1];
    int header = 0;
    for (int i = 0; i < b->nrows; ++i) {
        const lp_row *r = &b->rows[i];
        if (r->l != l || r->layout != PK_LAP_HVFO || r->status != ROW_OK) continue;
        const lp_row *lx = find_row(b, r->backend, r->variant, PK_LAP_LEXI, l);
        if (!lx) continue;
        if (!header++) printf("layouts at l = %d (hvfo speed / lexi speed):", l);
        printf("  %s %s %.2fx", pk_backend_name(r->backend), r->variant,
               lx->kernel_s / r->kernel_s);
    }
    if (header) printf("\n");
    for (int layout = 0; layout < 2; ++layout) {
        const lp_row *hand = find_row(b, PK_BACKEND_OPENMP, "omp-simd", layout, l);
        const lp_row *autov = find_row(b, PK_BACKEND_OPENMP, "omp", layout, l);
        const lp_row *tb = find_row(b, PK_BACKEND_OPENMP, "omp-tb", layout, l);
        if (!hand || !autov) continue;
        printf("openmp %s at l = %d: hand-vectorised (omp-simd) / auto-vectorised (omp) %.2fx",
               layout ? "hvfo" : "lexi", l, autov->kernel_s / hand->kernel_s);
        if (tb) printf(", temporal blocking (omp-tb) / omp-simd %.2fx", hand->kernel_s / tb->kernel_s);
        printf("\n");
    }
}

int cli_laplace2d_bench(const char *size, int reps, int threads, const pk_backend_id *backends,
                        int nb, cli_lp_bench **out)
{
    /* small: in cache / just beyond; paper: the paper's 2048^2 (16.8 MB per field) and 4096^2;
     * large: 4096^2 and 8192^2 (268 MB per field), both far beyond the caches. */
    static const int small[2] = {256, 1024}, paper[2] = {LP_PAPER_L, 4096},
                     large[2] = {4096, 8192};
    static const int small_c[2] = {20, 10}, paper_c[2] = {10, 8}, large_c[2] = {8, 4};
    cli_lp_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    int total, done = 0, rc = 0;
    float *phi = NULL, *ref = NULL, *res = NULL;
    pk_status s;

    memset(&set, 0, sizeof set); /* the error path closes it */
    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps > 0 ? reps : 3;
    b->threads = threads;
    const int is_small = strcmp(size, "small") == 0, is_large = strcmp(size, "large") == 0;
    memcpy(b->grids, is_small ? small : is_large ? large : paper, sizeof b->grids);
    memcpy(b->counts, is_small ? small_c : is_large ? large_c : paper_c, sizeof b->counts);

    total = cli_bench_open(&set, backends, nb, threads, pk_laplace2d_variants, LP_KERNEL);
    for (int i = 0; i < nb; ++i) { /* unavailable backends: one row each */
        const pk_backend_id be = backends[i];
        if (set.nvars[be] > 0) continue;
        lp_row *r = add_row(b, be);
        if (!r) goto nomem;
        r->status = ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", set.skip[be]);
    }
    for (int g = 0; g < 2 && total > 0; ++g) {
        const int l = b->grids[g], count = b->counts[g];
        const size_t n = (size_t)l * l;
        pk_laplace2d_params p = {l, count, LP_DEFAULT_SIGMA, PK_LAP_LEXI, 0};
        free(phi);
        free(ref);
        free(res);
        phi = malloc(n * sizeof *phi);
        ref = malloc(n * sizeof *ref);
        res = malloc(n * sizeof *res);
        if (!phi || !ref || !res) goto nomem;
        lp_gen_phi(n, 1, phi);
        memcpy(ref, phi, n * sizeof *ref);
        cli_progress(LP_KERNEL " reference: serial, l = %d, %d iterations ...", l, count);
        if ((s = pk_laplace2d_reference(&p, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        const double maxabs = lp_maxabs(phi, n);
        for (int i = 0; i < nb; ++i) {
            const pk_backend_id be = backends[i];
            for (int v = 0; v < set.nvars[be]; ++v)
                for (int layout = PK_LAP_LEXI; layout <= PK_LAP_HVFO; ++layout) {
                    lp_row *r = add_row(b, be);
                    if (!r) goto nomem;
                    snprintf(r->variant, sizeof r->variant, "%s", set.vars[be][v]);
                    r->layout = layout;
                    r->nw = layout == PK_LAP_HVFO ? PK_LAP_DEFAULT_NW : 1;
                    r->l = l;
                    r->count = count;
                    cli_progress(LP_KERNEL " [%d/%d] %s %s %s l = %d ...", ++done, 4 * total,
                                 pk_backend_name(be), r->variant, layout ? "hvfo" : "lexi", l);
                    bench_variant(b, set.ctx[be], r, phi, ref, res, maxabs);
                }
        }
    }
    print_rows(b);
    for (int i = 0; i < b->nrows; ++i)
        if (b->rows[i].status == ROW_FAILED ||
            (b->rows[i].status == ROW_OK && !b->rows[i].verified))
            rc = CLI_EXIT_FAIL;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    free(phi);
    free(ref);
    free(res);
    return rc;
}

void cli_laplace2d_bench_json_rows(const cli_lp_bench *b, cli_json *j)
{
    for (int i = 0; b && i < b->nrows; ++i) {
        const lp_row *r = &b->rows[i];
        const int ok = r->status == ROW_OK;
        const double t = ok ? r->kernel_s : NAN, gbs = row_gbs(r), bw = b->bw[r->backend].bw;
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", LP_KERNEL);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        if (r->l) {
            cj_str(j, "layout", pk_laplace2d_layout_name(r->layout));
            cj_int(j, "nw", r->nw);
            cj_int(j, "l", r->l);
            cj_int(j, "count", r->count);
        }
        cj_num(j, "kernel_seconds", t);
        cj_num(j, "ms_per_iteration", ok ? 1e3 * t / r->count : NAN);
        cj_num(j, "gb_per_s", gbs);
        cj_num(j, "gflop_per_s", gbs * LP_FLOPS_PER_SITE / LP_BYTES_PER_SITE);
        cj_num(j, "bandwidth_gb_per_s", bw > 0 ? bw / 1e9 : NAN);
        cj_num(j, "ratio", bw > 0 ? gbs * 1e9 / bw : NAN);
        cj_bool(j, "verified", ok && r->verified);
        if (ok) {
            cj_num(j, "max_abs_err", r->max_abs_err);
            cj_num(j, "atol", r->atol);
            cj_int(j, "num_failed", (long long)r->num_failed);
        }
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_laplace2d_bench_json(const cli_lp_bench *b, cli_json *j)
{
    if (!b) return;
    cj_open(j, LP_KERNEL, '{');
    cj_num(j, "bytes_per_site_iteration", LP_BYTES_PER_SITE);
    cj_num(j, "flops_per_site_iteration", LP_FLOPS_PER_SITE);
    cj_str(j, "bytes_model", LP_BYTES_MODEL);
    cj_str(j, "timing", "best kernel time of reps plan runs of count iterations after a "
                        "verified run, field resident");
    cj_str(j, "verify_rule", LP_VERIFY_RULE);
    cj_str(j, "ratio", "GB/s over the device's copy bandwidth measured in this run");
    cj_open(j, "bandwidth", '[');
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const lp_bw *bw = &b->bw[be];
        if (!bw->measured) continue;
        cj_open(j, NULL, '{');
        cj_str(j, "backend", pk_backend_name((pk_backend_id)be));
        cj_str(j, "device", bw->device);
        cj_num(j, "bandwidth_gb_per_s", bw->bw > 0 ? bw->bw / 1e9 : NAN);
        cj_close(j);
    }
    cj_close(j);
    cj_close(j);
}

void cli_laplace2d_bench_free(cli_lp_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}
