/* cli_laplace2d.c - laplace2d's part of the portkern command line (tools/cli_kernel.h): its
 * parameters, file, generator, run, verdict and bench cases (docs/KERNELS.md section 4a).
 *
 * Verification: the backends evaluate the reference's float expression (portkern.h), fused or
 * not, so after k iterations they agree with it within 2 k gamma_5 nu^k max|phi_0| per element
 * (the derivation is in tests/lp_common.h; gamma_5 = 5u / (1 - 5u), u = 2^-24, nu = (1 + 4a)
 * inv).  The verdict is that absolute bound, a property of the data; the library's relative
 * differ supplies the relative and norm-wise figures of the report.
 *
 * Bench: every backend x variant x layout (lexi, hvfo) on two grids of the size, and the
 * comparisons of the paper: hvfo against lexi, hand- against auto-vectorised, temporal
 * blocking against omp-simd. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define LP_MAX_L 65536
#define LP_SIGMA 0.1
#define LP_VERIFY_RULE "|phi - phi_ref| <= 2 k gamma_5 nu^k max|phi_0| for every element"
#define LP_BYTES_MODEL "8 B per site and iteration: one float read + one written (ideal)"
#if PK_LAP_DEFAULT_NW != 16
#error "the help texts say the default nw is 16"
#endif

/* The two grids (l, iterations per run) of each bench size; --preset takes the first.
 * small: in cache / just beyond; paper: the paper's 2048^2 (16.8 MB per field) and 4096^2;
 * large: 4096^2 and 8192^2 (268 MB per field), both far beyond the caches. */
#define LP_PAPER_L 2048 /* the default: the paper's grid */
#define LP_PAPER_COUNT 10
static const int lp_grid[3][2][2] = {
    {{256, 20}, {1024, 10}}, {{LP_PAPER_L, LP_PAPER_COUNT}, {4096, 8}}, {{4096, 8}, {8192, 4}}};

typedef struct lp_args {
    int l, count, layout, nw, seed; /* layout -1: auto */
    double sigma;
} lp_args;

typedef struct lp_data {
    float *phi0, *phi, *ref; /* the input, the run's result, the reference */
    double atol;             /* of --verify; 0: not verified */
} lp_data;

static const cli_array lp_arrays[] = {
    {"phi.npy", PK_DTYPE_F32, "l,l", offsetof(lp_data, phi0), CLI_A_IN},
    {"phi.npy", PK_DTYPE_F32, "l,l", offsetof(lp_data, phi), CLI_A_OUT},
    {"reference", PK_DTYPE_F32, "l,l", offsetof(lp_data, ref), CLI_A_REF},
    {0}};

/* layout: lexi, hvfo, or auto (-1) */
static const char *const lp_layout_names[] = {"lexi", "hvfo", "auto", NULL};
static const int lp_layout_ids[] = {PK_LAP_LEXI, PK_LAP_HVFO, -1};
static const cli_names lp_layouts = {lp_layout_names, lp_layout_ids};

static const cli_param lp_params_table[] = {
    {"l", CLI_P_INT, offsetof(lp_args, l), 1, LP_MAX_L, LP_PAPER_L, CLI_IN_ALL, NULL, "N",
     "lattice extent (default 2048, the paper's; --preset takes the first grid "
     "of bench: small 256, paper 2048, large 4096, with its count)"},
    {"count", CLI_P_INT, offsetof(lp_args, count), 0, INT_MAX, LP_PAPER_COUNT, CLI_IN_ALL, NULL,
     "N",
     "iterations (default 10)"},
    {"sigma", CLI_P_DOUBLE, offsetof(lp_args, sigma), FLT_MIN, FLT_MAX, LP_SIGMA, CLI_IN_ALL, NULL,
     "S",
     "> 0 (default 0.1), applied in float"},
    {"layout", CLI_P_NAME, offsetof(lp_args, layout), 0, 0, -1, CLI_IN_ALL, &lp_layouts, "L",
     "the layout the kernel runs on: hvfo (Hopping Vector-Friendly Ordering, "
     "pho[y][x'][w] = phi[y][w*l/nw + x'], needs l % nw == 0), lexi (phi[y][x], "
     "any l) or auto (default: hvfo when l is a multiple of nw, else lexi). "
     "Input and output are lexicographic either way; the reorder is timed "
     "apart (layout_seconds)"},
    {"nw", CLI_P_INT, offsetof(lp_args, nw), 0, LP_MAX_L, 0, CLI_IN_ALL, NULL, "N",
     "hvfo lanes (default 0: 16, one 64-byte line)"},
    {"seed", CLI_P_INT, offsetof(lp_args, seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S",
     CLI_SEED_HELP},
    {0}};

static void lp_preset(int size, void *args)
{
    lp_args *a = args;
    a->l = lp_grid[size][0][0];
    a->count = lp_grid[size][0][1];
}

/* auto: hvfo when l is a multiple of the lanes, else lexi. */
static pk_laplace2d_params lp_params(const lp_args *a)
{
    const int nw = a->nw ? a->nw : PK_LAP_DEFAULT_NW;
    const int layout = a->layout >= 0 ? a->layout : a->l % nw == 0 ? PK_LAP_HVFO : PK_LAP_LEXI;
    const pk_laplace2d_params p = {a->l, a->count, a->sigma, layout, a->nw};
    return p;
}

/* The absolute tolerance after `count` iterations from a field of max|phi_0| (see the top). */
static double lp_atol(double sigma, double count, double maxabs)
{
    const double u = FLT_EPSILON / 2, gamma5 = 5 * u / (1 - 5 * u);
    const float a = (float)sigma, inv = (float)(1.0 / (1.0 + 4.0 * (double)a));
    const double nu = (1.0 + 4.0 * (double)a) * (double)inv;
    return 1.01 * 2 * count * gamma5 * pow(nu, count) * maxabs;
}

/* hvfo needs l % nw == 0: checked before a field is generated (run without --in, gen); with
 * --in the library checks the l of phi.npy. */
static int lp_generate(cli_call *c, void *data)
{
    const lp_args *a = c->args;
    lp_data *d = data;
    const int nw = a->nw ? a->nw : PK_LAP_DEFAULT_NW;
    if (a->layout == PK_LAP_HVFO && a->l % nw != 0)
        return cli_usage_error(c->prog, "--layout hvfo: l = %d is not a multiple of nw = %d "
                               "(give an nw that divides l, or --layout lexi)", a->l, nw);
    cli_uniform(PK_DTYPE_F32, (unsigned)a->seed, (size_t)a->l * (size_t)a->l, d->phi0);
    return 0;
}

/* The one-shot call works in place on a copy of the input, which the reference needs again;
 * each plan run goes on from where the previous left the field (the values stay O(1): the
 * operator averages). */
static pk_status lp_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    const lp_args *a = args;
    lp_data *d = data;
    const size_t n = (size_t)a->l * (size_t)a->l;
    pk_laplace2d_params p = lp_params(a);
    switch (op) {
    case CLI_ONESHOT:
        memcpy(d->phi, d->phi0, n * sizeof *d->phi);
        return pk_laplace2d(ctx, &p, variant, d->phi, info);
    case CLI_REFERENCE: /* after runs x count iterations, with the bound of the verdict */
        if ((long long)p.count * runs > INT_MAX) return PK_ESIZE;
        p.count *= runs;
        memcpy(d->ref, d->phi0, n * sizeof *d->ref);
        d->atol = lp_atol(a->sigma, p.count, cli_max_abs(PK_DTYPE_F32, d->ref, n));
        return pk_laplace2d_reference(&p, d->ref);
    case CLI_PLAN_CREATE:
        return pk_laplace2d_plan_create((pk_laplace2d_plan **)plan, ctx, &p, variant, info);
    case CLI_PLAN_UPLOAD: return pk_laplace2d_plan_upload(*plan, d->phi0);
    case CLI_PLAN_RUN: return pk_laplace2d_plan_run(*plan, p.count, info);
    case CLI_PLAN_DOWNLOAD: return pk_laplace2d_plan_download(*plan, d->phi);
    case CLI_PLAN_DESTROY: pk_laplace2d_plan_destroy(*plan);
    }
    return PK_OK;
}

/* tune: the reference after `from` runs stepped on to after `to` (the reference iterates one
 * step at a time: bitwise CLI_REFERENCE's with to runs), and the bound of the verdict after
 * to runs, as CLI_REFERENCE sets it. */
static pk_status lp_ref_more(const void *args, void *data, int from, int to)
{
    const lp_args *a = args;
    lp_data *d = data;
    const size_t n = (size_t)a->l * (size_t)a->l;
    pk_laplace2d_params p = lp_params(a);
    if ((long long)p.count * to > INT_MAX) return PK_ESIZE;
    d->atol = lp_atol(a->sigma, (double)p.count * to, cli_max_abs(PK_DTYPE_F32, d->phi0, n));
    p.count *= to - from;
    return pk_laplace2d_reference(&p, d->ref);
}

/* The verdict (see the top): the absolute bound; v->rtol 0: atol / max|phi_ref| for the
 * differ's relative figures. */
static pk_status lp_check(const void *args, void *data, cli_verdict *v)
{
    const lp_data *d = data;
    const size_t l = (size_t)((const lp_args *)args)->l;
    if (!(v->rtol > 0)) {
        const double amax = cli_max_abs(PK_DTYPE_F32, d->ref, l * l);
        v->rtol = amax > 0 && isfinite(amax) && d->atol > 0 ? d->atol / amax : 1e-5;
    }
    v->shape[0] = v->shape[1] = l;
    v->ndim = 2;
    v->norm = 0;
    return cli_check_atol(PK_DTYPE_F32, d->ref, d->phi, l * l, d->atol, NULL, NULL, v);
}

static void lp_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const lp_args *a = args;
    const lp_data *d = data;
    const pk_laplace2d_params p = lp_params(a);
    cj_int(j, "l", p.l);
    cj_int(j, "count", p.count);
    cj_num(j, "sigma", p.sigma);
    cj_str(j, "layout", pk_laplace2d_layout_name(p.layout));
    cj_int(j, "nw", p.layout == PK_LAP_HVFO ? (p.nw ? p.nw : PK_LAP_DEFAULT_NW) : 1);
    cj_num(j, "ms_per_iteration", p.count > 0 ? cli_rate(1e3 * info->kernel_s, p.count) : NAN);
    if (d->atol > 0) cj_num(j, "verify_atol", d->atol);
}

/* ---- bench: both layouts of every variant on the two grids of the size ----------------- */
/* Case c: grid c / 2, layout c % 2 (lexi, hvfo with the default lanes); the result after
 * `runs` runs is checked against the reference after runs x count iterations. */
static int lp_bench_case(int size, int c, void *args)
{
    lp_args *a = args;
    if (c >= 4) return -1;
    a->l = lp_grid[size][c / 2][0];
    a->count = lp_grid[size][c / 2][1];
    a->layout = c % 2;
    return c / 2;
}

static void lp_case_name(const void *args, char *buf, size_t len)
{
    const lp_args *a = args;
    if (a->layout == PK_LAP_HVFO)
        snprintf(buf, len, "l=%d hvfo/%d", a->l, PK_LAP_DEFAULT_NW);
    else
        snprintf(buf, len, "l=%d lexi", a->l);
}

static void lp_describe(const cli_bench_result *res)
{
    const lp_args *a = res->args[0], *b = res->args[2];
    printf("laplace2d %s: l = %d (%d iterations per run) and l = %d (%d), sigma %g, O(1) random "
           "data (seed 1), layouts lexi and hvfo/%d;\nbyte model: " LP_BYTES_MODEL "; ms are "
           "per run of count iterations;\nverified against the serial reference after the "
           "warm-up and the timed runs: " LP_VERIFY_RULE "\n",
           res->req->size, a->l, a->count, b->l, b->count, LP_SIGMA, PK_LAP_DEFAULT_NW);
}

/* The ok row of (backend, variant, case), or NULL. */
static const cli_bench_row *lp_find(const cli_bench_result *res, pk_backend_id be, const char *v,
                                    int c)
{
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->backend == be && r->c == c && r->status == CLI_ROW_OK && !strcmp(r->variant, v))
            return r;
    }
    return NULL;
}

/* On the larger grid: hvfo against lexi per backend and variant, and on the OpenMP backend
 * hand- against auto-vectorised and temporal blocking against omp-simd. */
static void lp_report(cli_bench_result *res)
{
    const int lexi = 2 + PK_LAP_LEXI, hvfo = 2 + PK_LAP_HVFO;
    const int l = ((const lp_args *)res->args[2])->l;
    int header = 0;
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->c != hvfo || r->status != CLI_ROW_OK) continue;
        const cli_bench_row *lx = lp_find(res, r->backend, r->variant, lexi);
        if (!lx) continue;
        if (!header++) printf("layouts at l = %d (hvfo speed / lexi speed):", l);
        printf("  %s %s %.2fx", pk_backend_name(r->backend), r->variant, lx->t_min / r->t_min);
    }
    if (header) printf("\n");
    for (int c = lexi; c <= hvfo; ++c) {
        const cli_bench_row *hand = lp_find(res, PK_BACKEND_OPENMP, "omp-simd", c);
        const cli_bench_row *autov = lp_find(res, PK_BACKEND_OPENMP, "omp", c);
        const cli_bench_row *tb = lp_find(res, PK_BACKEND_OPENMP, "omp-tb", c);
        if (!hand || !autov) continue;
        printf("openmp %s at l = %d: hand-vectorised (omp-simd) / auto-vectorised (omp) %.2fx",
               c == hvfo ? "hvfo" : "lexi", l, autov->t_min / hand->t_min);
        if (tb) printf(", temporal blocking (omp-tb) / omp-simd %.2fx", hand->t_min / tb->t_min);
        printf("\n");
    }
}

const cli_kernel cli_kernel_laplace2d = {
    .name = "laplace2d",
    .summary = "count iterations of the periodic 2-D smoothing Laplacian, float32, two layouts",
    .run_help =
        "Apply `count` iterations of the 2-D smoothing Laplacian (docs/KERNELS.md 4a),\n"
        "phi' = (phi + sigma (sum of the 4 neighbours)) / (1 + 4 sigma), periodic, float32.\n"
        "Files: --in DIR reads DIR/phi.npy (float32 [l][l], x fastest; l from its shape);\n"
        "without --in, O(1) random data (uniform in [-1, 1), reproducible by --seed) is\n"
        "generated as 'portkern gen laplace2d' does.  --out DIR writes the result as\n"
        "DIR/phi.npy (float32 [l][l]).\n"
        "--verify runs the serial reference (pk_laplace2d_reference); the rule is the float\n"
        "error bound of the kernels (tests/lp_common.h).  --rtol only sets the rtol of the\n"
        "differ's relative figures (default 0: atol / max|phi_ref|).\n"
        "\"laplace2d\" in the JSON line: l, count, sigma, layout (the one run: auto resolved),\n"
        "nw (1 for lexi), ms_per_iteration, and with --verify verify_atol (the rule's bound).\n"
        "An hvfo run with l not a multiple of nw is bad input (exit 2).\n",
    .gen_help =
        "Write the input of a run: DIR/phi.npy (O(1) random data, uniform in [-1, 1), float32\n"
        "[l][l]) and DIR/params.json (l, count, sigma, layout, nw, seed).\n",
    .variants = pk_laplace2d_variants,
    .args_size = sizeof(lp_args),
    .data_size = sizeof(lp_data),
    .params = lp_params_table,
    .preset = lp_preset,
    .arrays = lp_arrays,
    .generate = lp_generate,
    .call = lp_call,
    .rtol = 0,
    .verify_rule = LP_VERIFY_RULE,
    .check = lp_check,
    .verdict_of_outputs = 2, /* phi (lexicographic in both layouts) against the data set's
                                reference and atol: lexi and hvfo share the data set and l */
    .run_json = lp_run_json,
    .flops_model = "7 flop per site and iteration",
    .bytes_model = LP_BYTES_MODEL,
    .bench_case = lp_bench_case,
    .case_name = lp_case_name,
    .describe = lp_describe,
    .report = lp_report,
    .runs_add_up = 1, /* iterates in place: bench's reference is of all its runs */
    .ref_more = lp_ref_more,
};
