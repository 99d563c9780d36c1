/* cli_dslash.c - dslash's part of the portkern command line (tools/cli_kernel.h): its
 * parameters, files, generator, run, verdict and bench cases (docs/KERNELS.md 4c).
 *
 * Data: u.npy complex128 [4][T][Z][Y][X][3][3] (random SU(3), pk_lqcd_random_su3 with the
 * seed), psi.npy complex128 [T][Z][Y][X][4][3] (Gaussian, pk_lqcd_random_complex with
 * seed + 1), chi.npy like psi.  Verification is norm-wise (the bar: ||chi -
 * chi_ref|| / ||chi_ref|| <= 1e-12 in double; tests/ds_common.h derives the bound, ~5e-14).
 *
 * Bench: every backend x variant with full and recon12 links on two lattices of the size. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define DS_RTOL 1e-12
#define DS_KAPPA 0.125
#define DS_VERIFY_RULE "||chi - chi_ref|| / ||chi_ref|| <= rtol"
#define DS_BYTES_MODEL "no reuse, 8 B per real: 8 neighbour spinors (24 reals) + 8 links (18, " \
                       "recon12 12) + psi(x) + chi: 3072 B per site, 2688 B with recon12"

/* The two lattices (x, y, z, t) of each bench size; --preset takes the second (paper: the
 * default 16^3 x 32). */
static const int ds_lat[3][2][4] = {{{8, 8, 8, 8}, {16, 16, 16, 8}},
                                    {{8, 8, 8, 8}, {16, 16, 16, 32}},
                                    {{16, 16, 16, 32}, {24, 24, 24, 48}}};

typedef struct ds_args {
    int dim[4]; /* x, y, z, t */
    double kappa;
    int recon12, seed;
    const char *dims; /* --dims X,Y,Z,T */
} ds_args;

typedef struct ds_data {
    double *u, *psi, *chi, *ref;
} ds_data;

/* psi.npy first: its shape sets the extents, which u.npy's must match. */
static const cli_array ds_arrays[] = {
    {"psi.npy", PK_DTYPE_C128, "t,z,y,x,4,3", offsetof(ds_data, psi), CLI_A_IN},
    {"u.npy", PK_DTYPE_C128, "4,t,z,y,x,3,3", offsetof(ds_data, u), CLI_A_IN},
    {"chi.npy", PK_DTYPE_C128, "t,z,y,x,4,3", offsetof(ds_data, chi), CLI_A_OUT},
    {"reference", PK_DTYPE_C128, "t,z,y,x,4,3", offsetof(ds_data, ref), CLI_A_REF},
    {0}};

static const char *const ds_dim_names[4] = {"x", "y", "z", "t"};

static const cli_param ds_params_table[] = {
    {"x", CLI_P_INT, offsetof(ds_args, dim[0]), 1, INT_MAX, 16, CLI_IN_ALL, NULL,
     "N --y N --z N --t N",
     "lattice extents (default 16 x 16 x 16 x 32; --preset takes "
     "the larger lattice of bench: small 16x16x16x8, paper 16x16x16x32, large "
     "24x24x24x48)"},
    {"y", CLI_P_INT, offsetof(ds_args, dim[1]), 1, INT_MAX, 16, CLI_IN_ALL, NULL, NULL, NULL},
    {"z", CLI_P_INT, offsetof(ds_args, dim[2]), 1, INT_MAX, 16, CLI_IN_ALL, NULL, NULL, NULL},
    {"t", CLI_P_INT, offsetof(ds_args, dim[3]), 1, INT_MAX, 32, CLI_IN_ALL, NULL, NULL, NULL},
    {"dims", CLI_P_TEXT, offsetof(ds_args, dims), 0, 0, 0, CLI_IN_RUN | CLI_IN_GEN, NULL, "X,Y,Z,T",
     "the same in one option (not with --x/--y/--z/--t)"},
    {"kappa", CLI_P_DOUBLE, offsetof(ds_args, kappa), DBL_MIN, DBL_MAX, DS_KAPPA, CLI_IN_ALL, NULL,
     "K",
     "hopping parameter (> 0, default 0.125)"},
    {"recon12", CLI_P_BOOL, offsetof(ds_args, recon12), 0, 1, 0, CLI_IN_ALL, NULL, NULL,
     "keep the links as two rows, the third rebuilt in the kernel (the links "
     "must be SU(3)); the conversion is timed apart (layout_seconds); "
     "--no-recon12 (the default) overrides params.json"},
    {"seed", CLI_P_INT, offsetof(ds_args, seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S",
     CLI_SEED_HELP},
    {0}};

static void ds_preset(int size, void *args)
{
    memcpy(((ds_args *)args)->dim, ds_lat[size][1], sizeof ds_lat[size][1]);
}

/* --dims X,Y,Z,T: the four extents in one option, not together with --x/--y/--z/--t. */
static int ds_resolve(cli_call *c) { return cli_extents(c, "dims", ',', ds_dim_names, 4, 0); }

static pk_dslash_params ds_params(const ds_args *a)
{
    const pk_dslash_params p = {a->dim[0], a->dim[1], a->dim[2], a->dim[3], a->kappa,
                                a->recon12, 0, 0, 0, 0};
    return p;
}

static size_t ds_volume(const ds_args *a)
{
    return (size_t)a->dim[0] * (size_t)a->dim[1] * (size_t)a->dim[2] * (size_t)a->dim[3];
}

/* u and psi from the seed, as gen writes them. */
static pk_status ds_make(unsigned seed, size_t V, double *u, double *psi)
{
    pk_status s = pk_lqcd_random_su3(seed, 4 * V, u);
    return s == PK_OK ? pk_lqcd_random_complex((uint64_t)seed + 1, 12 * V, psi) : s;
}

static int ds_generate(cli_call *c, void *data)
{
    const ds_args *a = c->args;
    ds_data *d = data;
    pk_status s = ds_make((unsigned)a->seed, ds_volume(a), d->u, d->psi);
    return s == PK_OK ? 0 : cli_lib_error("portkern", s);
}

static pk_status ds_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    ds_data *d = data;
    const pk_dslash_params p = ds_params(args);
    switch (op) {
    case CLI_ONESHOT: return pk_dslash(ctx, &p, variant, d->u, d->psi, d->chi, info);
    case CLI_REFERENCE: return pk_dslash_reference(&p, d->u, d->psi, d->ref);
    case CLI_PLAN_CREATE:
        return pk_dslash_plan_create((pk_dslash_plan **)plan, ctx, &p, variant, info);
    case CLI_PLAN_UPLOAD: return pk_dslash_plan_upload(*plan, d->u, d->psi);
    case CLI_PLAN_RUN: return pk_dslash_plan_run(*plan, info);
    case CLI_PLAN_DOWNLOAD: return pk_dslash_plan_download(*plan, d->chi);
    case CLI_PLAN_DESTROY: pk_dslash_plan_destroy(*plan);
    }
    return PK_OK;
}

static void ds_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const ds_args *a = args;
    for (int k = 0; k < 4; ++k) cj_int(j, ds_dim_names[k], a->dim[k]);
    cj_int(j, "volume", (long long)ds_volume(a));
    cj_num(j, "kappa", a->kappa);
    cj_bool(j, "recon12", a->recon12);
}

/* ---- bench: full and recon12 links of every variant on the two lattices of the size ----- */
/* Case c: lattice c / 2, recon12 c % 2 (checked against the full-link reference). */
static int ds_bench_case(int size, int c, void *args)
{
    ds_args *a = args;
    if (c >= 4) return -1;
    memcpy(a->dim, ds_lat[size][c / 2], sizeof a->dim);
    a->recon12 = c % 2;
    return c / 2;
}

static void ds_case_name(const void *args, char *buf, size_t len)
{
    const ds_args *a = args;
    const int *L = a->dim;
    const char *links = a->recon12 ? "recon12" : "full";
    if (L[0] == L[1] && L[1] == L[2])
        snprintf(buf, len, "%d^3x%d %s", L[0], L[3], links);
    else
        snprintf(buf, len, "%dx%dx%dx%d %s", L[0], L[1], L[2], L[3], links);
}

static void ds_describe(const cli_bench_result *res)
{
    const int *a = ((const ds_args *)res->args[0])->dim, *b = ((const ds_args *)res->args[2])->dim;
    printf("dslash %s: Wilson hopping operator (double) on %dx%dx%dx%d and %dx%dx%dx%d "
           "(x y z t), full and recon12 links, random SU(3) links, kappa %g;\nbyte model: %s;"
           "\nverified against the serial reference (full links), norm-wise: " DS_VERIFY_RULE
           ", rtol %g;\nx roof is the bw ratio: GB/s by the byte model over the copy bandwidth "
           "measured in this run; the byte model counts no cache reuse, so on CPUs with the "
           "neighbours in cache a bw ratio above 1 is possible (with perfect reuse a site "
           "moves 4 links + psi + chi = 1152 B, full links)\n",
           res->req->size, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], DS_KAPPA,
           DS_BYTES_MODEL, DS_RTOL);
}

const cli_kernel cli_kernel_dslash = {
    .name = "dslash",
    .summary = "the Wilson hopping operator (Wilson-Dslash) on a 4-D lattice, double",
    .run_help =
        "Apply the Wilson hopping operator once (docs/KERNELS.md 4c; DeGrand-Rossi gammas,\n"
        "periodic):\n"
        "  chi = 1/(2 kappa) psi + 1/2 sum_mu [(1 - g_mu) U_mu(x) psi(x+mu)\n"
        "                                   + (1 + g_mu) U_mu(x-mu)^+ psi(x-mu)]\n"
        "(the source paper's plus sign; the common convention has a minus).\n"
        "Files: --in DIR reads DIR/psi.npy (complex128 [T][Z][Y][X][4][3]; the extents come\n"
        "from its shape) and DIR/u.npy (complex128 [4][T][Z][Y][X][3][3]); without --in,\n"
        "random SU(3) links and a Gaussian spinor are generated as 'portkern gen dslash'\n"
        "does.  --out DIR writes DIR/chi.npy (complex128 [T][Z][Y][X][4][3]).\n"
        "--verify runs the serial reference (pk_dslash_reference: full gammas and links) and\n"
        "compares norm-wise (the verify object's first_fail indexes [T][Z][Y][X][4][3][re,im]).\n"
        "\"dslash\" in the JSON line: x, y, z, t, volume, kappa, recon12.\n",
    .gen_help =
        "Write the inputs of a run: DIR/u.npy (random SU(3) links from the seed S, complex128\n"
        "[4][T][Z][Y][X][3][3]), DIR/psi.npy (Gaussian spinor from S + 1, complex128\n"
        "[T][Z][Y][X][4][3]) and DIR/params.json (x, y, z, t, kappa, recon12, seed); the links\n"
        "are full matrices whatever --recon12 records.\n",
    .variants = pk_dslash_variants,
    .args_size = sizeof(ds_args),
    .data_size = sizeof(ds_data),
    .params = ds_params_table,
    .preset = ds_preset,
    .resolve = ds_resolve,
    .arrays = ds_arrays,
    .generate = ds_generate,
    .call = ds_call,
    .rtol = DS_RTOL,
    .verify_rule = DS_VERIFY_RULE,
    .norm = 1, /* first_fail as [T][Z][Y][X][4][3][re, im] */
    .run_json = ds_run_json,
    .flops_model = "1320 flop per site (hopping term; QUDA/QPhiX count)",
    .bytes_model = DS_BYTES_MODEL,
    .bench_case = ds_bench_case,
    .case_name = ds_case_name,
    .describe = ds_describe,
};
