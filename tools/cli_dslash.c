/* cli_dslash.c - the dslash commands of portkern: run, gen, and its part of bench
 * (README.md, "Command line"; docs/KERNELS.md 4c).  portkern.c hands a command line
 * to these when its kernel operand is "dslash".
 *
 * Data: u.npy complex128 [4][T][Z][Y][X][3][3] (random SU(3), pk_lqcd_random_su3 with the
 * seed), psi.npy complex128 [T][Z][Y][X][4][3] (Gaussian, pk_lqcd_random_complex with
 * seed + 1), chi.npy like psi.  Verification is norm-wise (the bar: ||chi -
 * chi_ref|| / ||chi_ref|| <= 1e-12 in double; tests/ds_common.h derives the bound, ~5e-14).
 * Counts: 1320 flops per site; bytes by the no-reuse model of lib/dslash.c (3072 B per site,
 * 2688 B with recon12). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

#define MAIN_PROG "portkern"
#define DS_KERNEL "dslash"
#define DS_RTOL 1e-12
#define DS_FLOPS_PER_SITE 1320.0
#define DS_BYTES_FULL 3072.0
#define DS_BYTES_R12 2688.0
#define DS_FLOPS_MODEL "1320 flop per site (hopping term; QUDA/QPhiX count)"
#define DS_BYTES_MODEL "no reuse, 8 B per real: 8 neighbour spinors (24 reals) + 8 links (18, " \
                       "recon12 12) + psi(x) + chi: 3072 B per site, 2688 B with recon12"

#define SEEN_CLI 1
#define SEEN_JSON 2

static double rate(double amount, double seconds)
{
    return seconds > 0 && amount > 0 ? amount / seconds : NAN;
}

/* ---- options ---------------------------------------------------------------------------- */
typedef struct ds_args {
    int dim[4]; /* x, y, z, t */
    int seen_dim[4];
    int seed, seen_seed;
    double kappa;
    int seen_kappa;
    int recon12, no_recon12, seen_recon12, seen_no;
    const char *dims;
    int seen_dims;
} ds_args;

static void ds_args_init(ds_args *a)
{
    memset(a, 0, sizeof *a);
    a->dim[0] = a->dim[1] = a->dim[2] = 16;
    a->dim[3] = 32;
    a->seed = 1;
    a->kappa = 0.125;
}

static int ds_opts(cli_opt *o, int n, ds_args *a)
{
    static const char *const names[4] = {"x", "y", "z", "t"};
    for (int k = 0; k < 4; ++k)
        n = cli_opt_add(o, n, names[k], CLI_INT, &a->dim[k], &a->seen_dim[k], 1, INT_MAX);
    n = cli_opt_add(o, n, "dims", CLI_STRING, &a->dims, &a->seen_dims, 0, 0);
    n = cli_opt_add(o, n, "kappa", CLI_DOUBLE, &a->kappa, &a->seen_kappa, DBL_MIN, DBL_MAX);
    n = cli_opt_add(o, n, "recon12", CLI_FLAG, &a->recon12, &a->seen_recon12, 0, 0);
    n = cli_opt_add(o, n, "no-recon12", CLI_FLAG, &a->no_recon12, &a->seen_no, 0, 0);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    return n;
}

/* --dims X,Y,Z,T and the recon12 flags, checked. */
static int ds_args_resolve(const char *prog, ds_args *a)
{
    if (a->seen_dims) {
        char why[160], part[32];
        const char *s = a->dims;
        if (a->seen_dim[0] || a->seen_dim[1] || a->seen_dim[2] || a->seen_dim[3])
            return cli_usage_error(prog, "give either --dims or --x/--y/--z/--t, not both");
        for (int k = 0; k < 4; ++k) {
            const char *e = strchr(s, ',');
            const size_t len = e ? (size_t)(e - s) : strlen(s);
            if ((k < 3) != (e != NULL) || len == 0 || len >= sizeof part)
                return cli_usage_error(prog, "option --dims: '%s' is not X,Y,Z,T", a->dims);
            memcpy(part, s, len);
            part[len] = '\0';
            if (cli_to_int(part, 1, INT_MAX, &a->dim[k], why, sizeof why))
                return cli_usage_error(prog, "option --dims: %s", why);
            a->seen_dim[k] = SEEN_CLI;
            s = e ? e + 1 : s;
        }
    }
    if (a->seen_recon12 && a->seen_no)
        return cli_usage_error(prog, "options --recon12 and --no-recon12 contradict");
    if (a->seen_no) {
        a->recon12 = 0;
        a->seen_recon12 = SEEN_CLI;
    }
    return 0;
}

static void ds_params(const ds_args *a, pk_dslash_params *p)
{
    p->x = a->dim[0];
    p->y = a->dim[1];
    p->z = a->dim[2];
    p->t = a->dim[3];
    p->kappa = a->kappa;
    p->recon12 = a->recon12;
}

/* Shapes (C order) of psi/chi [T][Z][Y][X][4][3] and u [4][T][Z][Y][X][3][3]. */
static void ds_shapes(const ds_args *a, size_t sshape[6], size_t ushape[7])
{
    const size_t s[6] = {(size_t)a->dim[3], (size_t)a->dim[2], (size_t)a->dim[1],
                         (size_t)a->dim[0], 4, 3};
    memcpy(sshape, s, sizeof s);
    ushape[0] = 4;
    memcpy(ushape + 1, s, 4 * sizeof(size_t));
    ushape[5] = ushape[6] = 3;
}

/* u and psi from the seed, as gen writes them. */
static pk_status ds_generate(unsigned seed, size_t V, double *u, double *psi)
{
    pk_status s = pk_lqcd_random_su3(seed, 4 * V, u);
    return s == PK_OK ? pk_lqcd_random_complex((uint64_t)seed + 1, 12 * V, psi) : s;
}

int cli_dslash_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "recon12", "no-recon12", "help", NULL};
    return cli_kernel_named(argc, argv, DS_KERNEL, flags);
}

/* ---- inputs ----------------------------------------------------------------------------- */
/* DIR/params.json values for what the command line did not set; an absent file is fine. */
static int ds_read_params(const char *prog, const char *path, ds_args *a)
{
    static const char *const names[4] = {"x", "y", "z", "t"};
    cli_jobject *obj;
    char *text;
    int rc = cli_params_load(prog, path, DS_KERNEL, &obj, &text);
    if (rc || !obj) return rc;
    const cli_jvalue *v;
    for (int k = 0; k < 5; ++k) {
        const char *key = k < 4 ? names[k] : "seed";
        int *dst = k < 4 ? &a->dim[k] : &a->seed, *seen = k < 4 ? &a->seen_dim[k] : &a->seen_seed;
        v = cli_json_get(obj, key);
        if (!v) continue;
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < (k < 4 ? 1 : 0) ||
            v->num > INT_MAX) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be an integer in [%d, %d]", path, key,
                                 k < 4 ? 1 : 0, INT_MAX);
            goto done;
        }
        if (!*seen) {
            *dst = (int)v->num;
            *seen = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "kappa");
    if (v) {
        if (v->type != CLI_JNUM || !(v->num > 0) || !isfinite(v->num)) {
            rc = cli_usage_error(prog, "%s: \"kappa\" must be a finite number > 0", path);
            goto done;
        }
        if (!a->seen_kappa) {
            a->kappa = v->num;
            a->seen_kappa = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "recon12");
    if (v) {
        if (!(v->type == CLI_JBOOL || (v->type == CLI_JNUM && (v->num == 0 || v->num == 1)))) {
            rc = cli_usage_error(prog, "%s: \"recon12\" must be true, false, 0 or 1", path);
            goto done;
        }
        if (!a->seen_recon12) {
            a->recon12 = v->num != 0;
            a->seen_recon12 = SEEN_JSON;
        }
    }
done:
    free(obj);
    free(text);
    return rc;
}

/* DIR/name: complex128 of shape want[ndim] (the lattice extents from psi decide, from the
 * command line or params.json they must agree). */
static int ds_read_array(const char *prog, const char *path, int ndim, const size_t *want,
                         const char *expect, pk_array *arr)
{
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    int good = arr->dtype == PK_DTYPE_C128 && arr->ndim == ndim;
    for (int k = 0; good && k < ndim; ++k) good = arr->shape[k] == want[k];
    if (!good) {
        char shape[160];
        size_t used = (size_t)snprintf(shape, sizeof shape, "[");
        for (int k = 0; k < arr->ndim && used < sizeof shape; ++k)
            used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%zu", k ? ", " : "",
                                     arr->shape[k]);
        if (used < sizeof shape) snprintf(shape + used, sizeof shape - used, "]");
        const char *d = pk_dtype_descr(arr->dtype);
        return cli_usage_error(prog, "%s: expected complex128 ('<c16') %s, got '%s' with shape %s",
                               path, expect, d ? d : "?", shape);
    }
    return 0;
}

/* DIR/psi.npy sets the extents (they must match what was given), then DIR/u.npy. */
static int ds_read_inputs(const char *prog, const char *dir, ds_args *a, pk_array *u,
                          pk_array *psi)
{
    char path[4096];
    if (cli_join(path, sizeof path, dir, "psi.npy"))
        return cli_usage_error(prog, "path too long: %s", dir);
    pk_status s = pk_npy_read(path, psi);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    if (psi->dtype != PK_DTYPE_C128 || psi->ndim != 6 || psi->shape[4] != 4 ||
        psi->shape[5] != 3)
        return cli_usage_error(prog, "%s: expected complex128 ('<c16') [T][Z][Y][X][4][3]", path);
    static const char *const names[4] = {"x", "y", "z", "t"};
    for (int k = 0; k < 4; ++k) {
        const size_t d = psi->shape[3 - k];
        if (d < 1 || d > INT_MAX)
            return cli_usage_error(prog, "%s: extent %s = %zu out of range", path, names[k], d);
        if (a->seen_dim[k] && (size_t)a->dim[k] != d)
            return cli_usage_error(prog, "%s has %s = %zu, but %s%s is %d", path, names[k], d,
                                   a->seen_dim[k] == SEEN_CLI ? "--" : "params.json ", names[k],
                                   a->dim[k]);
        a->dim[k] = (int)d;
    }
    size_t sshape[6], ushape[7];
    ds_shapes(a, sshape, ushape);
    if (cli_join(path, sizeof path, dir, "u.npy"))
        return cli_usage_error(prog, "path too long: %s", dir);
    return ds_read_array(prog, path, 7, ushape, "[4][T][Z][Y][X][3][3] matching psi.npy", u);
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run dslash [options]\n"
        "Apply the Wilson hopping operator once (docs/KERNELS.md 4c; DeGrand-Rossi gammas,\n"
        "periodic):\n"
        "  chi = 1/(2 kappa) psi + 1/2 sum_mu [(1 - g_mu) U_mu(x) psi(x+mu)\n"
        "                                   + (1 + g_mu) U_mu(x-mu)^+ psi(x-mu)]\n"
        "(the source paper's plus sign; the common convention has a minus) and print one JSON\n"
        "line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     serial: serial; openmp: omp-vnode (default), omp; opencl: opencl;\n"
        "                  cuda: cuda; with --backend auto it selects the backend\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/u.npy (complex128 [4][T][Z][Y][X][3][3]), DIR/psi.npy\n"
        "                  (complex128 [T][Z][Y][X][4][3]; the extents come from its shape) and\n"
        "                  DIR/params.json when present (x, y, z, t, kappa, recon12, seed);\n"
        "                  options given here override params.json.  Without --in, random\n"
        "                  SU(3) links and a Gaussian spinor (reproducible by --seed) are\n"
        "                  generated as 'portkern gen dslash' does\n"
        "  --out DIR       write DIR/chi.npy (complex128 [T][Z][Y][X][4][3]; DIR is created)\n"
        "  --x N --y N --z N --t N   lattice extents (default 16 x 16 x 16 x 32)\n"
        "  --dims X,Y,Z,T  the same in one option\n"
        "  --kappa K       hopping parameter (> 0, default 0.125)\n"
        "  --recon12       keep the links as two rows, the third rebuilt in the kernel (the\n"
        "                  links must be SU(3)); --no-recon12 overrides params.json\n"
        "  --seed S        seed of the generated data (default 1)\n"
        "  --verify        also run the serial reference (pk_dslash_reference: full gammas and\n"
        "                  links) and compare norm-wise: ||chi - chi_ref|| / ||chi_ref|| <= rtol\n"
        "  --rtol R        rtol of --verify (default 1e-12)\n"
        "\n"
        "The JSON line: kernel, backend, device, device_index, variant, x, y, z, t, volume,\n"
        "kappa, recon12, seconds (whole call), kernel_seconds, transfer_seconds,\n"
        "setup_seconds, layout_seconds (recon12 compression), ms (kernel), gflop_per_s\n"
        "(" DS_FLOPS_MODEL "), gb_per_s (" DS_BYTES_MODEL "), flops, bytes, flops_model,\n"
        "bytes_model, fell_back, reason; --verify adds \"verify\": {equal, mode \"norm\", rtol,\n"
        "max_rel_err, max_abs_err, norm_rel_err, num_failed, first_fail}.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file (wrong dtype or shape), or unknown backend/variant/device.\n");
}

static void run_print(const pk_dslash_params *p, size_t V, const pk_run_info *info,
                      const pk_diff_report *rep, double rtol, const size_t *cshape)
{
    cli_json j;
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, DS_KERNEL, info);
    cj_int(&j, "x", p->x);
    cj_int(&j, "y", p->y);
    cj_int(&j, "z", p->z);
    cj_int(&j, "t", p->t);
    cj_int(&j, "volume", (long long)V);
    cj_num(&j, "kappa", p->kappa);
    cj_bool(&j, "recon12", p->recon12);
    cj_run_times(&j, info);
    cj_num(&j, "layout_seconds", info->layout_s);
    cj_num(&j, "ms", info->kernel_s > 0 ? 1e3 * info->kernel_s : NAN);
    cj_num(&j, "gflop_per_s", rate(info->flops / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(info->bytes / 1e9, info->kernel_s));
    cj_num(&j, "flops", info->flops);
    cj_num(&j, "bytes", info->bytes);
    cj_str(&j, "flops_model", DS_FLOPS_MODEL);
    cj_str(&j, "bytes_model", DS_BYTES_MODEL);
    cj_run_tail(&j, info);
    if (rep) cj_verify(&j, rep, rtol, 1, cshape, 7);
    cj_close(&j);
}

int cli_dslash_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    ds_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, n = 0, npos, rc = 0;
    double rtol = DS_RTOL;
    cli_opt opts[24];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_dslash_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_array ua, pa;
    double *u = NULL, *psi = NULL, *chi = NULL, *ref = NULL, *own_u = NULL, *own_psi = NULL;
    size_t sshape[6], ushape[7], cshape[7], V = 0;
    pk_status s;

    ds_args_init(&a);
    memset(&ua, 0, sizeof ua);
    memset(&pa, 0, sizeof pa);
    n = ds_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = ds_args_resolve(prog, &a))) return rc;
    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = ds_read_params(prog, path, &a))) return rc;
        if ((rc = ds_read_inputs(prog, in, &a, &ua, &pa))) goto done;
        u = ua.data;
        psi = pa.data;
    }
    ds_params(&a, &p);
    /* pk_dslash_reference checks p (extents, overflow, kappa) before its arrays: so the
     * lattice is known to be allocatable-sized before anything is allocated here */
    if ((s = pk_dslash_reference(&p, NULL, NULL, NULL)) != PK_OK && s != PK_ENULL) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    V = (size_t)a.dim[0] * a.dim[1] * a.dim[2] * a.dim[3];
    ds_shapes(&a, sshape, ushape);
    memcpy(cshape, sshape, sizeof sshape);
    cshape[6] = 2; /* re, im: the differ sees doubles */
    if (!in) {
        /* apart: the validation bounds 72 V doubles, not 96 V */
        if (!(own_u = malloc(72 * V * sizeof(double))) ||
            !(own_psi = malloc(24 * V * sizeof(double))))
            goto nomem;
        u = own_u;
        psi = own_psi;
        if ((s = ds_generate((unsigned)a.seed, V, u, psi)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (!(chi = malloc(24 * V * sizeof *chi))) goto nomem;
    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = pk_dslash(ctx, &p, variant, u, psi, chi, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        if (!(ref = malloc(24 * V * sizeof *ref))) goto nomem;
        s = pk_dslash_reference(&p, u, psi, ref);
        if (s == PK_OK) s = pk_diff_f64(ref, chi, 24 * V, rtol, 0, PK_DIFF_NORM, &rep);
        if (s != PK_OK && s != PK_EMISMATCH) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (out && (rc = cli_write_npy(prog, out, "chi.npy", PK_DTYPE_C128, 6, sshape, chi))) goto done;
    run_print(&p, V, &info, verify ? &rep : NULL, rtol, cshape);
    rc = verify && !rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "%s: out of host memory for a %d x %d x %d x %d lattice\n", prog, a.dim[0],
            a.dim[1], a.dim[2], a.dim[3]);
    rc = CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&ua);
    pk_array_free(&pa);
    free(own_u);
    free(own_psi);
    free(chi);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen dslash --out DIR [options]\n"
        "Write the inputs of a run: DIR/u.npy (random SU(3) links, complex128\n"
        "[4][T][Z][Y][X][3][3]), DIR/psi.npy (Gaussian spinor, complex128 [T][Z][Y][X][4][3])\n"
        "and DIR/params.json (x, y, z, t, kappa, recon12, seed), which 'portkern run dslash\n"
        "--in DIR' reads.  DIR is created when missing.\n"
        "\n"
        "  --x N --y N --z N --t N   lattice extents (default 16 x 16 x 16 x 32)\n"
        "  --dims X,Y,Z,T  the same in one option\n"
        "  --kappa K       recorded hopping parameter (default 0.125)\n"
        "  --recon12       record recon12 (the links are full matrices either way)\n"
        "  --seed S        seed (default 1): the same seed gives the same data\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n");
}

int cli_dslash_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    ds_args a;
    const char *out = NULL;
    int n = 0, npos, rc;
    cli_opt opts[20];
    char *pos[1], path[4096];
    pk_dslash_params p;
    size_t sshape[6], ushape[7];
    double *u = NULL, *psi = NULL;
    pk_status s;
    FILE *pf;
    cli_json j;

    ds_args_init(&a);
    n = ds_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = ds_args_resolve(prog, &a))) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    ds_params(&a, &p);
    if ((s = pk_dslash_reference(&p, NULL, NULL, NULL)) != PK_OK && s != PK_ENULL)
        return cli_lib_error(MAIN_PROG, s); /* p is checked before the arrays (see run) */
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    const size_t V = (size_t)a.dim[0] * a.dim[1] * a.dim[2] * a.dim[3];
    u = malloc(72 * V * sizeof *u);
    psi = malloc(24 * V * sizeof *psi);
    if (!u || !psi) {
        fprintf(stderr, "%s: out of host memory for a %d x %d x %d x %d lattice\n", prog,
                a.dim[0], a.dim[1], a.dim[2], a.dim[3]);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    if ((s = ds_generate((unsigned)a.seed, V, u, psi)) != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    ds_shapes(&a, sshape, ushape);
    if ((rc = cli_write_npy(prog, out, "u.npy", PK_DTYPE_C128, 7, ushape, u))) goto done;
    if ((rc = cli_write_npy(prog, out, "psi.npy", PK_DTYPE_C128, 6, sshape, psi))) goto done;
    if ((rc = cli_params_open(prog, out, DS_KERNEL, path, sizeof path, &pf, &j))) goto done;
    cj_int(&j, "x", a.dim[0]);
    cj_int(&j, "y", a.dim[1]);
    cj_int(&j, "z", a.dim[2]);
    cj_int(&j, "t", a.dim[3]);
    cj_num(&j, "kappa", a.kappa);
    cj_bool(&j, "recon12", a.recon12);
    cj_int(&j, "seed", a.seed);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    printf("wrote %s/u.npy (complex128 [4, %d, %d, %d, %d, 3, 3]), %s/psi.npy (complex128 "
           "[%d, %d, %d, %d, 4, 3]) and %s\n", out, a.dim[3], a.dim[2], a.dim[1], a.dim[0], out,
           a.dim[3], a.dim[2], a.dim[1], a.dim[0], path);
done:
    free(u);
    free(psi);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct ds_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int status;
    char reason[600];
    int dim[4], recon12;
    double kernel_s; /* best of the timed runs */
    int verified;
    double rel_err;
} ds_row;

struct cli_ds_bench {
    const char *size;
    int reps;
    int lat[2][4];
    ds_row *rows;
    int nrows, cap;
    double bw[PK_BACKEND_COUNT]; /* bytes/s measured in this run; 0: not measured */
    int bw_measured[PK_BACKEND_COUNT];
};

static ds_row *add_row(cli_ds_bench *b, pk_backend_id be)
{
    ds_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    ds_row *r = &rows[b->nrows++];
    r->backend = be;
    return r;
}

static void row_fail(ds_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

static double row_sites(const ds_row *r)
{
    return (double)r->dim[0] * r->dim[1] * r->dim[2] * r->dim[3];
}

static double row_gflops(const ds_row *r)
{
    return r->status == ROW_OK ? rate(DS_FLOPS_PER_SITE * row_sites(r) / 1e9, r->kernel_s) : NAN;
}

static double row_gbs(const ds_row *r)
{
    return r->status == ROW_OK
               ? rate((r->recon12 ? DS_BYTES_R12 : DS_BYTES_FULL) * row_sites(r) / 1e9, r->kernel_s)
               : NAN;
}

/* Plan, upload, warm up, time, download and verify one variant on one lattice. */
static void bench_variant(cli_ds_bench *b, pk_context *ctx, ds_row *r, const double *u,
                          const double *psi, const double *ref, double *chi)
{
    pk_dslash_params p = {r->dim[0], r->dim[1], r->dim[2], r->dim[3], 0.125, r->recon12};
    const size_t ns = 24 * (size_t)row_sites(r);
    pk_dslash_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    pk_status s = pk_dslash_plan_create(&plan, ctx, &p, r->variant, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    if (!b->bw_measured[r->backend]) {
        b->bw_measured[r->backend] = 1;
        cli_progress(DS_KERNEL " bandwidth: %s ...", pk_backend_name(r->backend));
        if ((s = pk_measure_bandwidth(ctx, r->backend, info.device, 0, 5, &b->bw[r->backend])) !=
            PK_OK) {
            fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                    pk_backend_name(r->backend), info.device, pk_strerror(s), pk_last_error());
            b->bw[r->backend] = 0;
        }
    }
    if ((s = pk_dslash_plan_upload(plan, u, psi)) != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    r->kernel_s = INFINITY;
    for (int i = 0; i <= b->reps; ++i) { /* i = 0: the untimed warm-up */
        if ((s = pk_dslash_plan_run(plan, &info)) != PK_OK) {
            row_fail(r, i ? "timed run" : "warm-up run", s);
            goto done;
        }
        if (i > 0 && info.kernel_s < r->kernel_s) r->kernel_s = info.kernel_s;
    }
    if ((s = pk_dslash_plan_download(plan, chi)) != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    s = pk_diff_f64(ref, chi, ns, DS_RTOL, 0, PK_DIFF_NORM, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = rep.equal;
    r->rel_err = rep.norm_rel_err;
done:
    pk_dslash_plan_destroy(plan);
}

static void print_rows(const cli_ds_bench *b)
{
    printf(DS_KERNEL " %s: Wilson hopping operator (double) on %dx%dx%dx%d and %dx%dx%dx%d "
           "(x y z t), random SU(3) links, kappa 0.125;\nbest of %d plan runs after 1 warm-up, "
           "fields resident; GFlop/s at %.0f flop per site; GB/s by the byte model:\n  %s;\n"
           "verified against the serial reference, norm-wise rtol %g; 'bw ratio' = GB/s over "
           "the copy bandwidth measured in this run\n", b->size, b->lat[0][0], b->lat[0][1],
           b->lat[0][2], b->lat[0][3], b->lat[1][0], b->lat[1][1], b->lat[1][2], b->lat[1][3],
           b->reps, DS_FLOPS_PER_SITE, DS_BYTES_MODEL, DS_RTOL);
    for (int be = 0; be < PK_BACKEND_COUNT; ++be)
        if (b->bw_measured[be])
            printf("  bandwidth %-7s %7.1f GB/s\n", pk_backend_name((pk_backend_id)be),
                   b->bw[be] / 1e9);
    printf("\n%-6s  %-7s  %-24s  %-10s  %-11s  %-7s  %9s  %8s  %7s  %8s  %9s  %s\n", "kernel",
           "backend", "device", "variant", "lattice", "links", "ms/app", "GFlop/s", "GB/s",
           "bw ratio", "rel err", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const ds_row *r = &b->rows[i];
        char lat[48] = "-";
        if (r->dim[0])
            snprintf(lat, sizeof lat, "%dx%dx%dx%d", r->dim[0], r->dim[1], r->dim[2], r->dim[3]);
        printf("%-6s  %-7s  %-24.24s  %-10s  %-11s  %-7s  ", DS_KERNEL,
               pk_backend_name(r->backend), r->device[0] ? r->device : "-",
               r->variant[0] ? r->variant : "-", lat, r->dim[0] ? (r->recon12 ? "recon12" : "full") : "-");
        if (r->status == ROW_OK) {
            const double bw = b->bw[r->backend];
            printf("%9.3f  %8.2f  %7.2f  ", 1e3 * r->kernel_s, row_gflops(r), row_gbs(r));
            if (bw > 0)
                printf("%8.2f  ", row_gbs(r) * 1e9 / bw);
            else
                printf("%8s  ", "-");
            printf("%9.2e  %s\n", r->rel_err, r->verified ? "yes" : "NO");
        } else {
            printf("%9s  %8s  %7s  %8s  %9s  %s\n", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const ds_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s error: %s\n", pk_backend_name(r->backend), r->variant, r->reason);
        else if (!r->verified)
            printf("%s %s %dx%dx%dx%d NOT verified: rel err %.3g > %g\n",
                   pk_backend_name(r->backend), r->variant, r->dim[0], r->dim[1], r->dim[2],
                   r->dim[3], r->rel_err, DS_RTOL);
    }
    printf("note: the byte model counts no cache reuse, so on CPUs with the neighbours in "
           "cache a bw ratio above 1 is possible;\nwith perfect reuse a site moves 4 links + "
           "psi + chi = 1152 B (full links)\n");
}

int cli_dslash_bench(const char *size, int reps, int threads, const pk_backend_id *backends,
                     int nb, cli_ds_bench **out)
{
    static const int small[2][4] = {{8, 8, 8, 8}, {16, 16, 16, 8}};
    static const int paper[2][4] = {{8, 8, 8, 8}, {16, 16, 16, 32}};
    static const int large[2][4] = {{16, 16, 16, 32}, {24, 24, 24, 48}};
    cli_ds_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    int total, done = 0, rc = 0;
    double *u = NULL, *psi = NULL, *ref = NULL, *chi = NULL;
    pk_status s;

    memset(&set, 0, sizeof set);
    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps;
    memcpy(b->lat, !strcmp(size, "small") ? small : !strcmp(size, "large") ? large : paper,
           sizeof b->lat);
    total = cli_bench_open(&set, backends, nb, threads, pk_dslash_variants, DS_KERNEL);
    for (int i = 0; i < nb; ++i) {
        const pk_backend_id be = backends[i];
        if (set.nvars[be] > 0) continue;
        ds_row *r = add_row(b, be);
        if (!r) goto nomem;
        r->status = ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", set.skip[be]);
    }
    for (int g = 0; g < 2 && total > 0; ++g) {
        const int *L = b->lat[g];
        const size_t V = (size_t)L[0] * L[1] * L[2] * L[3];
        pk_dslash_params p = {L[0], L[1], L[2], L[3], 0.125, 0};
        free(u);
        free(ref);
        free(chi);
        u = malloc(96 * V * sizeof *u);
        ref = malloc(24 * V * sizeof *ref);
        chi = malloc(24 * V * sizeof *chi);
        if (!u || !ref || !chi) goto nomem;
        psi = u + 72 * V;
        cli_progress(DS_KERNEL " reference: serial, %dx%dx%dx%d ...", L[0], L[1], L[2], L[3]);
        if ((s = ds_generate(1, V, u, psi)) != PK_OK ||
            (s = pk_dslash_reference(&p, u, psi, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        for (int i = 0; i < nb; ++i) {
            const pk_backend_id be = backends[i];
            for (int v = 0; v < set.nvars[be]; ++v)
                for (int r12 = 0; r12 <= 1; ++r12) {
                    ds_row *r = add_row(b, be);
                    if (!r) goto nomem;
                    memcpy(r->dim, L, sizeof r->dim);
                    r->recon12 = r12;
                    snprintf(r->variant, sizeof r->variant, "%s", set.vars[be][v]);
                    cli_progress(DS_KERNEL " [%d/%d] %s %s%s %dx%dx%dx%d ...", ++done, 4 * total,
                                 pk_backend_name(be), r->variant, r12 ? " recon12" : "", L[0],
                                 L[1], L[2], L[3]);
                    bench_variant(b, set.ctx[be], r, u, psi, ref, chi);
                }
        }
    }
    print_rows(b);
    rc = 0;
    for (int i = 0; i < b->nrows; ++i)
        if (b->rows[i].status == ROW_FAILED || (b->rows[i].status == ROW_OK && !b->rows[i].verified))
            rc = CLI_EXIT_FAIL;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    free(u);
    free(ref);
    free(chi);
    return rc;
}

void cli_dslash_bench_json_rows(const cli_ds_bench *b, cli_json *j)
{
    for (int i = 0; b && i < b->nrows; ++i) {
        const ds_row *r = &b->rows[i];
        const int ok = r->status == ROW_OK;
        const double bw = b->bw[r->backend];
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", DS_KERNEL);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        if (r->dim[0]) {
            cj_int(j, "x", r->dim[0]);
            cj_int(j, "y", r->dim[1]);
            cj_int(j, "z", r->dim[2]);
            cj_int(j, "t", r->dim[3]);
            cj_bool(j, "recon12", r->recon12);
        }
        cj_num(j, "kernel_seconds", ok ? r->kernel_s : NAN);
        cj_num(j, "gflop_per_s", row_gflops(r));
        cj_num(j, "gb_per_s", row_gbs(r));
        cj_num(j, "bandwidth_gb_per_s", bw > 0 ? bw / 1e9 : NAN);
        cj_num(j, "bandwidth_ratio", bw > 0 ? row_gbs(r) * 1e9 / bw : NAN);
        cj_bool(j, "verified", ok && r->verified);
        if (ok) cj_num(j, "norm_rel_err", r->rel_err);
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_dslash_bench_json(const cli_ds_bench *b, cli_json *j)
{
    if (!b) return;
    cj_open(j, DS_KERNEL, '{');
    cj_num(j, "flops_per_site", DS_FLOPS_PER_SITE);
    cj_num(j, "bytes_per_site", DS_BYTES_FULL);
    cj_num(j, "bytes_per_site_recon12", DS_BYTES_R12);
    cj_str(j, "bytes_model", DS_BYTES_MODEL);
    cj_str(j, "timing", "best kernel time of reps plan runs after one warm-up, fields resident");
    cj_str(j, "verify_rule", "||chi - chi_ref|| / ||chi_ref|| <= rtol");
    cj_num(j, "rtol", DS_RTOL);
    cj_open(j, "bandwidth", '[');
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        if (!b->bw_measured[be]) continue;
        cj_open(j, NULL, '{');
        cj_str(j, "backend", pk_backend_name((pk_backend_id)be));
        cj_num(j, "gb_per_s", b->bw[be] > 0 ? b->bw[be] / 1e9 : NAN);
        cj_close(j);
    }
    cj_close(j);
    cj_close(j);
}

void cli_dslash_bench_free(cli_ds_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}
