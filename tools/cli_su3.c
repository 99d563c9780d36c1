/* cli_su3.c - su3's part of the portkern command line (tools/cli_kernel.h): its parameters,
 * files, generator, run, verdict and bench cases (docs/KERNELS.md section 4b).
 *
 * Verification: the library's bound on an output element is proportional to the 2-norm of
 * the spinor it comes from (tests/s3_common.h: <= 35 u |psi(s,.,k)| in every layout), so the
 * verdict is |chi - chi_ref| <= rtol |psi(s,.,k)|_2 for every element, rtol 1e-14 (~90 u) by
 * default; the differ supplies the relative and norm-wise figures of the report.
 *
 * Bench: every backend x variant x layout on one lattice, and the layout table of the paper
 * (each layout against aos, per backend and variant). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define S3_PAPER_NV ((size_t)3840 * 1024) /* the paper's largest lattice (docs/KERNELS.md) */
#define S3_SMALL_NV ((size_t)64 * 1024)
#define S3_LARGE_NV ((size_t)16 * 1024 * 1024)
#define S3_MAX_NV ((size_t)1 << 40)
#define S3_RTOL 1e-14
#define S3_VERIFY_RULE "|chi - chi_ref| <= rtol * |psi(s,.,k)|_2 for every element"

typedef struct s3_args {
    size_t nv;
    int layout, nw, seed;
} s3_args;

typedef struct s3_data {
    double *u, *psi, *chi, *ref;
} s3_data;

static const cli_array s3_arrays[] = {
    {"u.npy", PK_DTYPE_C128, "nv,3,3", offsetof(s3_data, u), CLI_A_IN},
    {"psi.npy", PK_DTYPE_C128, "nv,3,4", offsetof(s3_data, psi), CLI_A_IN},
    {"chi.npy", PK_DTYPE_C128, "nv,3,4", offsetof(s3_data, chi), CLI_A_OUT},
    {"reference", PK_DTYPE_C128, "nv,3,4", offsetof(s3_data, ref), CLI_A_REF},
    {0}};

/* by id: PK_SU3_AOS .. PK_SU3_RECON12 */
static const char *const s3_layout_names[] = {"aos", "short", "padded", "vfo", "hvfo", "recon12",
                                              NULL};
static const cli_names s3_layouts = {s3_layout_names, NULL};

static const cli_param s3_params[] = {
    {"nv", CLI_P_COUNT, offsetof(s3_args, nv), 1, (double)S3_MAX_NV, S3_PAPER_NV, CLI_IN_ALL, NULL,
     "N",
     "sites (default 3840*1024, the paper's)"},
    {"layout", CLI_P_NAME, offsetof(s3_args, layout), 0, 0, PK_SU3_HVFO, CLI_IN_ALL, &s3_layouts,
     "L",
     "the data layout the kernel runs on: hvfo (default), aos (the baseline), "
     "short (8 stored elements, u22 rebuilt), padded (192 B per link), vfo "
     "(u[3][3][nv]), recon12 (two rows, the third rebuilt); converted from and "
     "to AoS on the host, timed apart (layout_seconds)"},
    {"nw", CLI_P_INT, offsetof(s3_args, nw), 0, PK_SU3_NW_MAX, 0, CLI_IN_ALL, NULL, "N",
     "hvfo sites per block (default 0: one AVX-512 vector)"},
    {"seed", CLI_P_INT, offsetof(s3_args, seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S",
     CLI_SEED_HELP},
    {0}};

static void s3_preset(int size, void *args)
{
    static const size_t nv[3] = {S3_SMALL_NV, S3_PAPER_NV, S3_LARGE_NV};
    ((s3_args *)args)->nv = nv[size];
}

/* Bytes per site the layout actually stores and a run moves (u + psi + chi, the padding of
 * vfo / hvfo spread over the nv sites). */
static double s3_moved_per_site(const pk_su3_params *p)
{
    size_t ud = 0, sd = 0;
    if (pk_su3_layout_sizes(p, &ud, &sd) != PK_OK) return NAN;
    return 8.0 * (double)(ud + 2 * sd) / (double)p->nv;
}

/* The 2-norms of the spinors psi(s,.,k) that elements i0 .. i0 + n - 1 of chi (doubles,
 * [nv][3][4][2]) come from, into out: each site's four made once per block it meets. */
static void s3_psi_norms(const void *ctx, size_t i0, size_t n, double *out)
{
    const double *psi = ctx;
    for (size_t i = i0; i < i0 + n;) {
        const size_t s = i / 24, end = 24 * (s + 1) < i0 + n ? 24 * (s + 1) : i0 + n;
        const double *z = psi + 24 * s;
        double nk[4];
        for (int k = 0; k < 4; ++k) {
            double n2 = 0;
            for (int a = 0; a < 3; ++a) {
                const double re = z[8 * a + 2 * k], im = z[8 * a + 2 * k + 1];
                n2 += re * re + im * im;
            }
            nk[k] = sqrt(n2);
        }
        for (; i < end; ++i) out[i - i0] = nk[i / 2 % 4];
    }
}

/* The verdict (see the top of the file): |chi - chi_ref| <= rtol |psi(s,.,k)|_2. */
static pk_status s3_check(const void *args, void *data, cli_verdict *v)
{
    const s3_data *d = data;
    const size_t nv = ((const s3_args *)args)->nv, shape[4] = {nv, 3, 4, 2};
    memcpy(v->shape, shape, sizeof shape);
    v->ndim = 4;
    return cli_check_atol(PK_DTYPE_F64, d->ref, d->chi, 24 * nv, v->rtol, s3_psi_norms, d->psi,
                          v);
}

/* The default inputs: random SU(3) links (seed) and Gaussian spinors (seed + 1). */
static int s3_generate(cli_call *c, void *data)
{
    const s3_args *a = c->args;
    s3_data *d = data;
    pk_lqcd_random_su3((uint64_t)a->seed, a->nv, d->u);
    pk_lqcd_random_complex((uint64_t)a->seed + 1, 12 * a->nv, d->psi);
    return 0;
}

static pk_status s3_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    const s3_args *a = args;
    s3_data *d = data;
    const pk_su3_params p = {a->nv, a->layout, a->nw};
    switch (op) {
    case CLI_ONESHOT: return pk_su3(ctx, &p, variant, d->u, d->psi, d->chi, info);
    case CLI_REFERENCE: return pk_su3_reference(a->nv, d->u, d->psi, d->ref);
    case CLI_PLAN_CREATE: return pk_su3_plan_create((pk_su3_plan **)plan, ctx, &p, variant, info);
    case CLI_PLAN_UPLOAD: return pk_su3_plan_upload(*plan, d->u, d->psi);
    case CLI_PLAN_RUN: return pk_su3_plan_run(*plan, info);
    case CLI_PLAN_DOWNLOAD: return pk_su3_plan_download(*plan, d->chi);
    case CLI_PLAN_DESTROY: pk_su3_plan_destroy(*plan);
    }
    return PK_OK;
}

static void s3_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const s3_args *a = args;
    const pk_su3_params p = {a->nv, a->layout, a->nw};
    cj_str(j, "layout", pk_su3_layout_name(a->layout));
    cj_int(j, "nw", a->layout == PK_SU3_HVFO ? (a->nw ? a->nw : PK_SU3_NW_DEFAULT) : 1);
    cj_int(j, "nv", (long long)a->nv);
    cj_num(j, "layout_bytes_per_site", s3_moved_per_site(&p));
}

/* ---- bench: every layout of every variant on one lattice -------------------------------- */
static int s3_bench_case(int size, int c, void *args)
{
    if (c >= PK_SU3_LAYOUTS) return -1;
    ((s3_args *)args)->layout = c;
    return 0;
}

static void s3_case_name(const void *args, char *buf, size_t len)
{
    snprintf(buf, len, "%s", pk_su3_layout_name(((const s3_args *)args)->layout));
}

static void s3_describe(const cli_bench_result *res)
{
    printf("su3: nv = %zu sites, random SU(3) links and Gaussian spinors (seed 1); verified: "
           S3_VERIFY_RULE ", rtol %g\nlayouts store per site (u + psi + chi): aos 528 B, short "
           "512, padded 576, vfo 528 (rows padded to 4 sites), hvfo 528 (last block padded to "
           "nw sites), recon12 480; GB/s counts 528 B per site in every layout\n",
           ((const s3_args *)res->args[0])->nv, S3_RTOL);
}

/* The paper's table: each layout against aos of the same backend and variant. */
static void s3_report(cli_bench_result *res)
{
    const cli_bench_row *base = NULL, *best = NULL;
    printf("layout table (GB/s of each layout / GB/s of aos, same backend and variant; the "
           "paper, Xeon Phi 7120P: short ~1.4x, padded ~1.4x, vfo < 0.33x, hvfo ~1.8x)\n");
    printf("  %-7s  %-9s", "backend", "variant");
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l) printf("  %8s", pk_su3_layout_name(l));
    printf("\n");
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->c != PK_SU3_AOS) continue;
        printf("  %-7s  %-9s", pk_backend_name(r->backend), r->variant);
        for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
            double v = NAN;
            for (int k = 0; k < res->nrows; ++k) {
                const cli_bench_row *q = &res->rows[k];
                if (q->backend == r->backend && q->c == l && !strcmp(q->variant, r->variant))
                    v = cli_row_gbs(q) / cli_row_gbs(r);
            }
            if (isfinite(v))
                printf("  %7.2fx", v);
            else
                printf("  %8s", "-");
        }
        printf("\n");
        if (r->backend == PK_BACKEND_OPENMP && !strcmp(r->variant, "omp")) base = r;
    }
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->backend == PK_BACKEND_OPENMP && r->c == PK_SU3_HVFO &&
            !strcmp(r->variant, "omp-simd"))
            best = r;
    }
    if (base && best && best->status == CLI_ROW_OK && base->status == CLI_ROW_OK)
        printf("openmp: omp-simd hvfo / omp aos (the paper's Hopping VFO over its baseline, "
               "~1.8x on Xeon Phi): %.2fx\n", cli_row_gbs(best) / cli_row_gbs(base));
}

const cli_kernel cli_kernel_su3 = {
    .name = "su3",
    .summary = "SU(3) matrix times spinor at every lattice site, in six data layouts",
    .run_help =
        "Multiply every site's spinor by its SU(3) link (docs/KERNELS.md section 4b):\n"
        "chi[s][c][k] = sum_c' u[s][c][c'] psi[s][c'][k].\n"
        "Files: --in DIR reads DIR/u.npy (complex128 [nv][3][3]) and DIR/psi.npy (complex128\n"
        "[nv][3][4]; colour, spin); without --in they are generated as 'portkern gen su3'\n"
        "does.  --out DIR writes DIR/chi.npy (complex128 [nv][3][4]).\n"
        "\"su3\" in the JSON line: layout, nw, nv, layout_bytes_per_site (what the layout\n"
        "stores and a run moves).\n",
    .gen_help =
        "Write the inputs of a run: DIR/u.npy (random SU(3) links from the seed S: unitary,\n"
        "det 1 to rounding; complex128 [nv][3][3]), DIR/psi.npy (Gaussian spinors from S + 1,\n"
        "sigma 1 per real component; complex128 [nv][3][4]) and DIR/params.json (nv, layout,\n"
        "nw, seed).\n",
    .variants = pk_su3_variants,
    .args_size = sizeof(s3_args),
    .data_size = sizeof(s3_data),
    .params = s3_params,
    .preset = s3_preset,
    .arrays = s3_arrays,
    .generate = s3_generate,
    .call = s3_call,
    .rtol = S3_RTOL,
    .verify_rule = S3_VERIFY_RULE,
    .check = s3_check,
    .verdict_of_outputs = 2, /* chi (AoS in every layout) against the reference, scaled by
                                psi: the cases (layouts) share the data set and nv */
    .run_json = s3_run_json,
    .flops_model = "264 flop per site (12 complex 3-term dot products)",
    .bytes_model = "528 B per site in every layout: u 144 + psi 192 + chi 192",
    .bench_case = s3_bench_case,
    .case_name = s3_case_name,
    .describe = s3_describe,
    .report = s3_report,
};
