/* cli_magicfilter3d.c - magicfilter3d's part of the portkern command line (tools/cli_kernel.h):
 * its parameters, files, generator, run, verdict and bench cases (docs/KERNELS.md section 2).
 *
 * Verification: docs/KERNELS.md's bar is an absolute one (<= 1e-13 per element on O(1) data).
 * The library's differ is relative (docs/KERNELS.md section 6), so the verdict here is
 * |y - y_ref| <= rtol * max|y_ref| for every element (rtol = 1e-13: an absolute tolerance
 * scaled by the data, the bar itself on O(1) data); the differ supplies the relative and
 * norm-wise figures of the report.
 *
 * Bench: every variant on the two periodic MF grids of the size (serial-direct on the small
 * grid only), and the roofline measured in the same run: host roof = min(FMA peak, 2 flop/B x
 * copy bandwidth), device roof = 2 flop/B x its copy bandwidth (the library measures both:
 * pk_measure_peak_flops, pk_measure_bandwidth). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define MF_KERNEL "magicfilter3d"
#define MF_PAPER_N1 128 /* the paper's grid (Videau et al.) */
#define MF_PAPER_N2 126
#define MF_PAPER_N3 130
#define MF_NMAX (INT_MAX - 15)
#define MF_RTOL 1e-13
#define MF_VERIFY_RULE "|y - y_ref| <= rtol * max|y_ref| for every element"

/* The two grids (n1, n2, n3) bench runs per size; --preset takes one of them (MF_PRESET). */
static const int mf_grids[3][2][3] = {
    {{32, 30, 34}, {64, 64, 64}},
    {{MF_PAPER_N1, MF_PAPER_N2, MF_PAPER_N3}, {256, 256, 256}},
    {{MF_PAPER_N1, MF_PAPER_N2, MF_PAPER_N3}, {384, 384, 384}}};
static const int mf_preset_grid[3] = {0, 0, 1}; /* small, paper: the first; large: 384^3 */

/* by id: PK_MF_PERIODIC, PK_MF_GROW, PK_MF_SHRINK */
static const char *const mf_bc_names[] = {"periodic", "grow", "shrink", NULL};
static const cli_names mf_bcs = {mf_bc_names, NULL};

/* ---- run and gen ------------------------------------------------------------------------ */
typedef struct mf_args {
    int n1, n2, n3, transpose, bc, seed;
    const char *size; /* --size N1xN2xN3 or N */
} mf_args;

typedef struct mf_data {
    double *x, *y, *ref;
    double atol; /* --verify's: rtol * max|y_ref| */
} mf_data;

/* x and y are [n3][n2][n1], 15 points more per axis for x with bc shrink, for y with grow. */
static const cli_array mf_arrays[] = {
    {"x.npy", PK_DTYPE_F64, NULL, offsetof(mf_data, x), CLI_A_IN},
    {"y.npy", PK_DTYPE_F64, NULL, offsetof(mf_data, y), CLI_A_OUT},
    {"reference", PK_DTYPE_F64, NULL, offsetof(mf_data, ref), CLI_A_REF},
    {0}};

static int mf_wider(const mf_args *a, int in) { return a->bc == (in ? PK_MF_SHRINK : PK_MF_GROW); }

static const char *mf_shape(const void *args, const cli_array *a)
{
    return mf_wider(args, a->role == CLI_A_IN) ? "n3+15,n2+15,n1+15" : "n3,n2,n1";
}

/* The shape of x (in) or y, and its number of points. */
static size_t mf_extents(const mf_args *a, int in, size_t shape[3])
{
    const int e = mf_wider(a, in) ? 15 : 0;
    shape[0] = (size_t)a->n3 + e;
    shape[1] = (size_t)a->n2 + e;
    shape[2] = (size_t)a->n1 + e;
    return shape[0] * shape[1] * shape[2];
}

static const cli_param mf_params_table[] = {
    {"n1", CLI_P_INT, offsetof(mf_args, n1), 1, MF_NMAX, MF_PAPER_N1, CLI_IN_ALL, NULL,
     "N --n2 N --n3 N",
     "grid points per axis (default 128 x 126 x 130, the paper's); --preset "
     "small: 32 x 30 x 34, paper: 128 x 126 x 130, large: 384^3 (grids of the bench)"},
    {"n2", CLI_P_INT, offsetof(mf_args, n2), 1, MF_NMAX, MF_PAPER_N2, CLI_IN_ALL, NULL, NULL, NULL},
    {"n3", CLI_P_INT, offsetof(mf_args, n3), 1, MF_NMAX, MF_PAPER_N3, CLI_IN_ALL, NULL, NULL, NULL},
    {"size", CLI_P_TEXT, offsetof(mf_args, size), 0, 0, 0, CLI_IN_RUN | CLI_IN_GEN, NULL,
     "N1xN2xN3",
     "the same in one option (or --size N for N^3)"},
    {"transpose", CLI_P_BOOL, offsetof(mf_args, transpose), 0, 1, 0, CLI_IN_ALL, NULL, NULL,
     "MFT, the transposed filter (BigDFT convrot_t; default: MF); "
     "--no-transpose: MF, over params.json"},
    {"bc", CLI_P_NAME, offsetof(mf_args, bc), 0, 0, PK_MF_PERIODIC, CLI_IN_ALL, &mf_bcs, "BC",
     "periodic (default), grow (free BC: n -> n+15 points per axis) or "
     "shrink (free BC: n+15 -> n)"},
    {"seed", CLI_P_INT, offsetof(mf_args, seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S",
     CLI_SEED_HELP},
    {0}};

static void mf_preset(int size, void *args)
{
    mf_args *a = args;
    const int *g = mf_grids[size][mf_preset_grid[size]];
    a->n1 = g[0];
    a->n2 = g[1];
    a->n3 = g[2];
}

/* --size, over params.json (the command line wins). */
static int mf_resolve(cli_call *c)
{
    static const char *const names[3] = {"n1", "n2", "n3"};
    const int rc = cli_extents(c, "size", 'x', names, 3, 1);
    /* --bc given: x.npy's shape decides the sizes (params.json's are those of its own bc) */
    for (int k = 0; k < 3 && cli_seen(c, "bc") == CLI_SEEN_OPT; ++k)
        if (cli_seen(c, names[k]) == CLI_SEEN_FILE) cli_set_seen(c, names[k], 0);
    return rc;
}

static pk_magicfilter3d_params mf_params(const mf_args *a)
{
    const pk_magicfilter3d_params p = {a->n1, a->n2, a->n3, a->transpose, a->bc};
    return p;
}

static int mf_generate(cli_call *c, void *data)
{
    const mf_args *a = c->args;
    size_t shape[3];
    cli_uniform(PK_DTYPE_F64, (unsigned)a->seed, mf_extents(a, 1, shape), ((mf_data *)data)->x);
    return 0;
}

static pk_status mf_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    mf_data *d = data;
    const pk_magicfilter3d_params p = mf_params(args);
    switch (op) {
    case CLI_ONESHOT: return pk_magicfilter3d(ctx, &p, variant, d->x, d->y, info);
    case CLI_REFERENCE: return pk_magicfilter3d_reference(&p, d->x, d->ref);
    case CLI_PLAN_CREATE:
        return pk_magicfilter3d_plan_create((pk_magicfilter3d_plan **)plan, ctx, &p, variant,
                                            info);
    case CLI_PLAN_UPLOAD: return pk_magicfilter3d_plan_upload(*plan, d->x);
    case CLI_PLAN_RUN: return pk_magicfilter3d_plan_run(*plan, info);
    case CLI_PLAN_DOWNLOAD: return pk_magicfilter3d_plan_download(*plan, d->y);
    case CLI_PLAN_DESTROY: pk_magicfilter3d_plan_destroy(*plan);
    }
    return PK_OK;
}

/* The verdict (see the top of the file): atol = rtol * max|y_ref|. */
static pk_status mf_check(const void *args, void *data, cli_verdict *v)
{
    mf_data *d = data;
    const size_t n = mf_extents(args, 0, v->shape);
    const double amax = cli_max_abs(PK_DTYPE_F64, d->ref, n);
    d->atol = isfinite(amax) ? v->rtol * amax : 0;
    v->ndim = 3;
    return cli_check_atol(PK_DTYPE_F64, d->ref, d->y, n, d->atol, NULL, NULL, v);
}

static void cj_shape3(cli_json *j, const char *key, const size_t *shape)
{
    cj_open(j, key, '[');
    for (int k = 0; k < 3; ++k) cj_int(j, NULL, (long long)shape[k]);
    cj_close(j);
}

static void mf_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const mf_args *a = args;
    const mf_data *d = data;
    size_t in[3], out[3];
    mf_extents(a, 1, in);
    mf_extents(a, 0, out);
    cj_str(j, "operation", a->transpose ? "MFT" : "MF");
    cj_bool(j, "transpose", a->transpose);
    cj_str(j, "bc", cli_name_of(&mf_bcs, a->bc));
    cj_int(j, "n1", a->n1);
    cj_int(j, "n2", a->n2);
    cj_int(j, "n3", a->n3);
    cj_shape3(j, "in_shape", in);
    cj_shape3(j, "out_shape", out);
    if (d->ref) cj_num(j, "verify_atol", d->atol);
}

/* ---- bench: every variant on the two periodic MF grids of the size ---------------------- */
static int mf_bench_case(int size, int c, void *args)
{
    mf_args *a = args;
    if (c >= 2) return -1;
    const int *g = mf_grids[size][c];
    a->n1 = g[0];
    a->n2 = g[1];
    a->n3 = g[2];
    return c;
}

static void mf_case_name(const void *args, char *buf, size_t len)
{
    const mf_args *a = args;
    snprintf(buf, len, "%dx%dx%d", a->n1, a->n2, a->n3);
}

/* serial-direct (the 16^3-tap triple sum) runs on the small size's first grid only. */
static int mf_case_runs(const void *args, const char *variant)
{
    const mf_args *a = args;
    const int *g = mf_grids[0][0];
    return strcmp(variant, "serial-direct") != 0 ||
           (a->n1 == g[0] && a->n2 == g[1] && a->n3 == g[2]);
}

static void mf_describe(const cli_bench_result *res)
{
    const mf_args *g0 = res->args[0], *g1 = res->args[1];
    const int *d = mf_grids[0][0];
    printf(MF_KERNEL " %s: periodic MF on %dx%dx%d and %dx%dx%d (n1 x n2 x n3), O(1) random "
           "data (seed 1); serial-direct on %dx%dx%d (--size small) only;\nverified against the "
           "serial reference: " MF_VERIFY_RULE ", rtol %g\n", res->req->size, g0->n1, g0->n2,
           g0->n3, g1->n1, g1->n2, g1->n3, d[0], d[1], d[2], MF_RTOL);
}

/* The roof of one backend, measured in the bench run (report, after the table). */
typedef struct mf_roof {
    int measured;
    char device[128];
    int host;          /* serial, openmp: the roof is min(FMA peak, 2 x bandwidth) */
    int threads;       /* threads of the FMA loop */
    char isa[32];      /* of the FMA loop: the CPU's widest SIMD level */
    double peak;       /* flop/s; 0: not measured */
    double bw;         /* bytes/s (copy: read + written); 0: not measured */
    double roof;       /* flop/s; 0: unknown */
    const char *bound; /* "memory", "compute"; NULL: unknown */
} mf_roof;

static void mf_row_json(cli_json *j, const cli_bench_result *res, const cli_bench_row *r)
{
    const double roof = ((const mf_roof *)res->extra)[r->backend].roof, gf = cli_row_gflops(r);
    cj_num(j, "roof_gflop_per_s", roof > 0 ? roof / 1e9 : NAN);
    cj_num(j, "roof_fraction", roof > 0 ? gf * 1e9 / roof : NAN);
}

/* The roof of every backend that ran a plan: its copy bandwidth (measured by the driver) and,
 * on the host, the FMA peak (serial: 1 thread; openmp: --threads). */
static void mf_measure_roofs(mf_roof *roofs, const cli_bench_result *res)
{
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        mf_roof *rf = &roofs[r->backend];
        if (rf->measured || r->c < 0 || r->device < 0) continue;
        rf->measured = 1;
        snprintf(rf->device, sizeof rf->device, "%s", r->info.device_name);
        rf->host = r->backend == PK_BACKEND_SERIAL || r->backend == PK_BACKEND_OPENMP;
        rf->bw = r->bw;
        rf->roof = 2 * rf->bw;
        if (rf->host) {
            pk_context *ctx = res->set.ctx[r->backend];
            pk_device_info di;
            cli_progress(MF_KERNEL " roof: %s FMA peak ...", pk_backend_name(r->backend));
            if (pk_measure_peak_flops(ctx, r->backend, r->device, &rf->peak) != PK_OK) {
                fprintf(stderr, "portkern bench: %s: FMA peak not measured: %s\n",
                        pk_backend_name(r->backend), pk_last_error());
                rf->peak = 0;
            }
            rf->threads = r->backend == PK_BACKEND_SERIAL ? 1 : cli_host_threads(res->req->threads);
            snprintf(rf->isa, sizeof rf->isa, "%s",
                     pk_device_get_info(ctx, r->backend, r->device, &di) == PK_OK && di.simd[0]
                         ? di.simd : "scalar");
            if (rf->peak > 0 && !(rf->roof > 0 && rf->roof < rf->peak)) rf->roof = rf->peak;
        }
        rf->bound = !(rf->roof > 0) ? NULL : rf->host && rf->roof == rf->peak ? "compute"
                                                                             : "memory";
    }
}

static void mf_report(cli_bench_result *res)
{
    mf_roof *roofs = res->extra = calloc(PK_BACKEND_COUNT, sizeof *roofs);
    const cli_bench_row *best = NULL;
    if (!roofs) return;
    mf_measure_roofs(roofs, res);
    printf("roofline, measured in this run: host roof = min(FMA peak, 2 flop/B x copy "
           "bandwidth), device roof = 2 flop/B x its copy bandwidth\n");
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const mf_roof *rf = &roofs[be];
        if (!rf->measured) continue;
        printf("  %-7s %-32.32s  ", pk_backend_name((pk_backend_id)be), rf->device);
        if (rf->host)
            printf("FMA peak %7.1f GFlop/s (%d thread%s, %s)  ", rf->peak / 1e9, rf->threads,
                   rf->threads == 1 ? "" : "s", rf->isa);
        if (rf->bw > 0)
            printf("bandwidth %6.1f GB/s -> %7.1f GFlop/s  ", rf->bw / 1e9, 2 * rf->bw / 1e9);
        else
            printf("bandwidth not measured  ");
        if (rf->roof > 0)
            printf("roof %7.1f GFlop/s%s%s%s\n", rf->roof / 1e9, rf->host ? " (" : "",
                   rf->host ? rf->bound : "", rf->host ? "-bound)" : "");
        else
            printf("roof unknown\n");
    }
    printf("  %-7s  %-13s  %-11s  %8s  %8s  %6s  %11s\n", "backend", "variant", "grid",
           "GFlop/s", "roof GF", "%roof", "max abs err");
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        const double gf = cli_row_gflops(r), roof = roofs[r->backend].roof;
        if (r->status != CLI_ROW_OK) continue;
        printf("  %-7s  %-13s  %-11s  %8.2f  ", pk_backend_name(r->backend), r->variant,
               r->case_name, gf);
        if (roof > 0)
            printf("%8.1f  %5.1f%%  ", roof / 1e9, 100 * gf * 1e9 / roof);
        else
            printf("%8s  %6s  ", "-", "-");
        printf("%11.2e\n", r->v.rep.max_abs_err);
        /* The paper's anchor: one core on its grid. */
        const mf_args *g = res->args[r->c];
        if (r->backend == PK_BACKEND_SERIAL && r->verified && g->n1 == MF_PAPER_N1 &&
            g->n2 == MF_PAPER_N2 && g->n3 == MF_PAPER_N3 && (!best || r->t_min < best->t_min))
            best = r;
    }
    if (best) {
        const mf_roof *rf = &roofs[PK_BACKEND_SERIAL];
        printf("paper anchor (docs/KERNELS.md 2): %dx%dx%d on 1 Nehalem core (SSE): 6.52 "
               "GFlop/s, 61%% of peak; here serial %s: %.2f GFlop/s", MF_PAPER_N1, MF_PAPER_N2,
               MF_PAPER_N3, best->variant, cli_row_gflops(best));
        if (rf->peak > 0)
            printf(", %.0f%% of the 1-thread FMA peak",
                   100 * cli_row_gflops(best) * 1e9 / rf->peak);
        printf("\n");
    }
}

static void mf_bench_json(cli_json *j, const cli_bench_result *res)
{
    cj_str(j, "verify_rule", MF_VERIFY_RULE);
    cj_num(j, "rtol", MF_RTOL);
    cj_str(j, "roof_model", "host: min(FMA peak, 2 flop/B x copy bandwidth); device: 2 flop/B x "
                            "copy bandwidth; measured in this run");
    cj_open(j, "roofline", '[');
    for (int be = 0; res->extra && be < PK_BACKEND_COUNT; ++be) {
        const mf_roof *rf = &((const mf_roof *)res->extra)[be];
        if (!rf->measured) continue;
        cj_open(j, NULL, '{');
        cj_str(j, "backend", pk_backend_name((pk_backend_id)be));
        cj_str(j, "device", rf->device);
        if (rf->host) {
            cj_int(j, "fma_threads", rf->threads);
            cj_str(j, "fma_isa", rf->isa);
        }
        cj_num(j, "fma_peak_gflop_per_s", rf->peak > 0 ? rf->peak / 1e9 : NAN);
        cj_num(j, "bandwidth_gb_per_s", rf->bw > 0 ? rf->bw / 1e9 : NAN);
        cj_num(j, "bandwidth_roof_gflop_per_s", rf->bw > 0 ? 2 * rf->bw / 1e9 : NAN);
        cj_num(j, "roof_gflop_per_s", rf->roof > 0 ? rf->roof / 1e9 : NAN);
        cj_str(j, "bound", rf->bound);
        cj_close(j);
    }
    cj_close(j);
}

const cli_kernel cli_kernel_magicfilter3d = {
    .name = MF_KERNEL,
    .summary = "BigDFT magic filter: three 16-tap 1-D convolutions on a 3-D grid (MF, MFT)",
    .run_help =
        "Apply the BigDFT magic filter (docs/KERNELS.md section 2: 16 taps per axis, three\n"
        "passes of 1-D convolution + transposition) once.\n"
        "--verify runs the serial reference (pk_magicfilter3d_reference): an absolute\n"
        "tolerance scaled by the data (docs/KERNELS.md 2: 1e-13 absolute on O(1) data); the\n"
        "library's relative differ reports the relative and norm-wise errors beside it.\n"
        "Files: --in DIR reads DIR/x.npy (float64 [n3][n2][n1], i1 fastest; for --bc shrink\n"
        "[n3+15][n2+15][n1+15]): the sizes come from its shape (params.json's sizes are\n"
        "ignored when --bc is given: they are those of its own bc); without --in, O(1) random\n"
        "data (uniform in [-1, 1), reproducible by --seed) is generated as 'portkern gen\n"
        "magicfilter3d' does.  --out DIR writes DIR/y.npy (float64 [n3][n2][n1]; for --bc\n"
        "grow [n3+15][n2+15][n1+15]).\n"
        "\"magicfilter3d\" in the JSON line: operation (MF or MFT), transpose, bc, n1, n2, n3,\n"
        "in_shape, out_shape; with --verify verify_atol (= rtol * max|y_ref|).\n",
    .gen_help =
        "Write the input of a run: DIR/x.npy (O(1) random data, uniform in [-1, 1), float64\n"
        "[n3][n2][n1]; for --bc shrink [n3+15][n2+15][n1+15]) and DIR/params.json (n1, n2,\n"
        "n3, transpose, bc, seed).\n",
    .variants = pk_magicfilter3d_variants,
    .args_size = sizeof(mf_args),
    .data_size = sizeof(mf_data),
    .params = mf_params_table,
    .preset = mf_preset,
    .resolve = mf_resolve,
    .arrays = mf_arrays,
    .shape = mf_shape,
    .generate = mf_generate,
    .call = mf_call,
    .rtol = MF_RTOL,
    .verify_rule = MF_VERIFY_RULE,
    .check = mf_check,
    .run_json = mf_run_json,
    .flops_model = "32 flop per output point per pass (96 per element for periodic)",
    .bytes_model = "each pass reads its input and writes its output once, 8 B per point (48 B "
                   "per element for periodic)",
    .bench_case = mf_bench_case,
    .case_name = mf_case_name,
    .case_runs = mf_case_runs,
    .describe = mf_describe,
    .report = mf_report,
    .bench_json = mf_bench_json,
    .row_json = mf_row_json,
};
