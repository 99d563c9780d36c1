/* cli_diffusion3d.c - diffusion3d's part of the portkern command line (tools/cli_kernel.h):
 * its parameters, the field file, the cosine generator, the run, the verdict and the bench
 * (docs/KERNELS.md section 3).
 *
 * Verification: element-wise against the serial reference, rtol 1e-5 with a zero threshold
 * of 1e-10 (float32 steps, docs/KERNELS.md section 6).  Bench: each variant's plan runs
 * `count` steps per timed run on the resident field, so after the warm-up and the timed runs
 * the field has advanced count x runs steps: the reference does the same. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define D3_RTOL 1e-5
#define D3_ZERO 1e-10

typedef struct d3_args {
    int nx, ny, nz, count, seed;
    double coef[7]; /* cc cw ce cs cn cb ct; defaults from pk_diffusion3d_params_default */
    double scale;   /* gen --scale */
} d3_args;

typedef struct d3_data {
    float *f0, *f, *ref; /* the input; the run's field (stepped in place); the reference */
} d3_data;

static const cli_array d3_arrays[] = {
    {"f.npy", PK_DTYPE_F32, "nz,ny,nx", offsetof(d3_data, f0), CLI_A_IN},
    {"f.npy", PK_DTYPE_F32, "nz,ny,nx", offsetof(d3_data, f), CLI_A_OUT},
    {"reference", PK_DTYPE_F32, "nz,ny,nx", offsetof(d3_data, ref), CLI_A_REF},
    {0}};

#define D3_COEF(k, name, arg, help) \
    {name, CLI_P_DOUBLE, offsetof(d3_args, coef) + (k) * sizeof(double), -DBL_MAX, DBL_MAX, 0, \
     CLI_IN_ALL, NULL, arg, help}
static const cli_param d3_params_table[] = {
    {"nx", CLI_P_INT, offsetof(d3_args, nx), 1, INT_MAX, 64, CLI_IN_ALL, NULL, "N --ny N --nz N",
     "field size (default 64 each)"},
    {"ny", CLI_P_INT, offsetof(d3_args, ny), 1, INT_MAX, 64, CLI_IN_ALL, NULL, NULL, NULL},
    {"nz", CLI_P_INT, offsetof(d3_args, nz), 1, INT_MAX, 64, CLI_IN_ALL, NULL, NULL, NULL},
    {"count", CLI_P_INT, offsetof(d3_args, count), 0, INT_MAX, 10, CLI_IN_ALL, NULL, "N",
     "steps (default 10)"},
    D3_COEF(0, "cc", "X --cw X --ce X --cs X --cn X --cb X --ct X",
            "coefficients (default: docs/KERNELS.md's, 0.1 for each neighbour and "
            "0.4 for cc)"),
    D3_COEF(1, "cw", NULL, NULL), D3_COEF(2, "ce", NULL, NULL), D3_COEF(3, "cs", NULL, NULL),
    D3_COEF(4, "cn", NULL, NULL), D3_COEF(5, "cb", NULL, NULL), D3_COEF(6, "ct", NULL, NULL),
    {"scale", CLI_P_DOUBLE, offsetof(d3_args, scale), 0, DBL_MAX, 1, CLI_IN_GEN, NULL, "F",
     "multiply each size by F (> 0; rounded, at least 1)"},
    /* recorded by gen: the cosine field does not depend on it */
    {"seed", CLI_P_INT, offsetof(d3_args, seed), 0, INT_MAX, 0, CLI_IN_GEN | CLI_IN_PARAMS, NULL,
     "S",
     "recorded in params.json; the cosine field is deterministic"},
    {0}};

/* small, paper (the report's 256^3 data set), large: n^3 and the steps per run */
static void d3_preset(int size, void *args)
{
    static const int n[3] = {128, 256, 512}, count[3] = {10, 20, 10};
    d3_args *a = args;
    a->nx = a->ny = a->nz = n[size];
    a->count = count[size];
}

static void d3_params(const d3_args *a, pk_diffusion3d_params *p)
{
    pk_diffusion3d_params_default(p, a->nx, a->ny, a->nz, a->count);
    p->cc = a->coef[0], p->cw = a->coef[1], p->ce = a->coef[2], p->cs = a->coef[3];
    p->cn = a->coef[4], p->cb = a->coef[5], p->ct = a->coef[6];
}

static size_t d3_points(const d3_args *a) { return (size_t)a->nx * a->ny * a->nz; }

/* --scale, and the coefficients not given (the defaults of the size). */
static int d3_resolve(cli_call *c)
{
    static const char *const names[7] = {"cc", "cw", "ce", "cs", "cn", "cb", "ct"};
    d3_args *a = c->args;
    static const char *const dim_names[3] = {"nx", "ny", "nz"};
    int *dims[3] = {&a->nx, &a->ny, &a->nz};
    if (a->scale <= 0) return cli_usage_error(c->prog, "option --scale: must be > 0");
    for (int k = 0; k < 3 && a->scale != 1; ++k) {
        const double d = floor(*dims[k] * a->scale + 0.5);
        if (d > INT_MAX)
            return cli_usage_error(c->prog, "--%s %d scaled by %g is too large", dim_names[k],
                                   *dims[k], a->scale);
        *dims[k] = d < 1 ? 1 : (int)d;
    }
    a->scale = 1;
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, a->nx, a->ny, a->nz, a->count);
    const double def[7] = {p.cc, p.cw, p.ce, p.cs, p.cn, p.cb, p.ct};
    for (int k = 0; k < 7; ++k)
        if (!cli_seen(c, names[k])) a->coef[k] = def[k];
    return 0;
}

/* run --in: the defaults of the coefficients for the size of f.npy. */
static int d3_load(cli_call *c, const char *dir, void *data) { return d3_resolve(c); }

static int d3_generate(cli_call *c, void *data)
{
    const d3_args *a = c->args;
    pk_status s = pk_diffusion3d_field(a->nx, a->ny, a->nz, 0.0, ((d3_data *)data)->f0);
    return s == PK_OK ? 0 : cli_lib_error("portkern", s);
}

/* The one-shot call steps a copy of the input, which the reference needs again; each plan
 * run steps count more on the resident field, so the reference of `runs` runs takes count x
 * runs steps. */
static pk_status d3_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    d3_data *d = data;
    pk_diffusion3d_params p;
    d3_params(args, &p);
    switch (op) {
    case CLI_ONESHOT:
        memcpy(d->f, d->f0, d3_points(args) * sizeof *d->f);
        return pk_diffusion3d(ctx, &p, variant, d->f, info);
    case CLI_REFERENCE:
        if ((long long)p.count * runs > INT_MAX) return PK_ESIZE;
        p.count *= runs;
        memcpy(d->ref, d->f0, d3_points(args) * sizeof *d->ref);
        return pk_diffusion3d_reference(&p, d->ref);
    case CLI_PLAN_CREATE:
        return pk_diffusion3d_plan_create((pk_diffusion3d_plan **)plan, ctx, &p, variant, info);
    case CLI_PLAN_UPLOAD: return pk_diffusion3d_plan_upload(*plan, d->f0);
    case CLI_PLAN_RUN: return pk_diffusion3d_plan_run(*plan, p.count, info);
    case CLI_PLAN_DOWNLOAD: return pk_diffusion3d_plan_download(*plan, d->f);
    case CLI_PLAN_DESTROY: pk_diffusion3d_plan_destroy(*plan);
    }
    return PK_OK;
}

/* tune: the reference after `from` runs stepped on to after `to` (the reference steps one at
 * a time: bitwise CLI_REFERENCE's with to runs). */
static pk_status d3_ref_more(const void *args, void *data, int from, int to)
{
    d3_data *d = data;
    pk_diffusion3d_params p;
    d3_params(args, &p);
    if ((long long)p.count * to > INT_MAX) return PK_ESIZE;
    p.count *= to - from;
    return pk_diffusion3d_reference(&p, d->ref);
}

static void d3_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    static const char *const names[7] = {"cc", "cw", "ce", "cs", "cn", "cb", "ct"};
    const d3_args *a = args;
    cj_int(j, "nx", a->nx);
    cj_int(j, "ny", a->ny);
    cj_int(j, "nz", a->nz);
    cj_int(j, "count", a->count);
    for (int k = 0; k < 7; ++k) cj_num(j, names[k], a->coef[k]);
    cj_num(j, "gpts_per_s", cli_rate((double)d3_points(a) * a->count / 1e9, info->kernel_s));
}

/* ---- bench: every variant on the cosine field of the size ------------------------------ */
static void d3_describe(const cli_bench_result *res)
{
    const d3_args *a = res->args[0];
    printf("diffusion3d: %d^3, count %d steps per run, the cosine field; verified against the "
           "serial reference after the same steps (element-wise, rtol %g)\n", a->nx, a->count,
           D3_RTOL);
}

/* The fastest verified variant of each backend, in points per second. */
static void d3_report(cli_bench_result *res)
{
    const d3_args *a = res->args[0];
    const double pts = (double)d3_points(a) * a->count;
    for (int be = PK_BACKEND_SERIAL; be < PK_BACKEND_COUNT; ++be) {
        const cli_bench_row *best = NULL;
        for (int i = 0; i < res->nrows; ++i) {
            const cli_bench_row *r = &res->rows[i];
            if ((int)r->backend == be && r->status == CLI_ROW_OK && r->verified &&
                (!best || r->t_min < best->t_min))
                best = r;
        }
        if (!best) continue;
        printf("best %s: %s, %.3f Gpts/s", pk_backend_name(best->backend), best->variant,
               cli_rate(pts / 1e9, best->t_min));
        if (best->bw > 0) printf(", %.0f%% of the measured bandwidth", 100 * cli_row_gbs(best) * 1e9 / best->bw);
        printf("\n");
    }
}

const cli_kernel cli_kernel_diffusion3d = {
    .name = "diffusion3d",
    .summary = "7-point 3-D diffusion stencil, count explicit steps",
    .run_help =
        "Run count steps of the 7-point diffusion stencil (docs/KERNELS.md section 3) on a\n"
        "float32 field, in place.\n"
        "Files: --in DIR reads DIR/f.npy (float32 [nz][ny][nx]); without --in the cosine\n"
        "initial field is generated.  --out DIR writes the result as DIR/f.npy.\n"
        "\"diffusion3d\" in the JSON line: nx, ny, nz, count, the seven coefficients,\n"
        "gpts_per_s (points x steps per second of kernel time).\n",
    .gen_help =
        "Write the inputs of a run: DIR/f.npy (the cosine initial field of docs/KERNELS.md,\n"
        "float32 [nz][ny][nx]) and DIR/params.json (sizes, count, coefficients, seed).\n",
    .variants = pk_diffusion3d_variants,
    .args_size = sizeof(d3_args),
    .data_size = sizeof(d3_data),
    .params = d3_params_table,
    .preset = d3_preset,
    .resolve = d3_resolve,
    .arrays = d3_arrays,
    .load = d3_load,
    .generate = d3_generate,
    .call = d3_call,
    .rtol = D3_RTOL,
    .verify_rule = "|f - f_ref| <= rtol |f_ref| for every point (|f_ref| < 1e-10: absolute)",
    .zero = D3_ZERO,
    .run_json = d3_run_json,
    .flops_model = "13 flop per point and step",
    .bytes_model = "8 B per point and step (ideal: 1 read + 1 write)",
    .describe = d3_describe,
    .report = d3_report,
    .runs_add_up = 1, /* steps in place: bench's reference is of all its runs */
    .ref_more = d3_ref_more,
};
