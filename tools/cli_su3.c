/* cli_su3.c - the su3 commands of portkern: run, gen, and its part of bench (README.md,
 * "Command line"; docs/KERNELS.md section 4b).  portkern.c hands a command line to these when
 * its kernel operand is "su3".
 *
 * Verification: the library's bound on an output element is proportional to the 2-norm of
 * the spinor it comes from (tests/s3_common.h: <= 35 u |psi(s,.,k)| in every layout), so the
 * verdict here is |chi - chi_ref| <= rtol |psi(s,.,k)|_2 for every element, rtol 1e-14
 * (~90 u) by default; the differ supplies the relative and norm-wise figures of the report.
 *
 * Bench: every backend x variant x layout on one lattice, the plan's kernel time (best of
 * reps runs after a warm-up, data resident), GB/s by the paper's model (528 B per site in
 * every layout) as a fraction of the copy bandwidth measured in the same run on the same
 * device, and the layout table of the paper (each layout against aos, per backend and
 * variant).  The small helpers (now_s, rate) are this file's own, as in
 * cli_magicfilter3d.c. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"

#define MAIN_PROG "portkern"
#define S3_KERNEL "su3"
#define S3_PAPER_NV ((size_t)3840 * 1024) /* the paper's largest lattice (docs/KERNELS.md) */
#define S3_SMALL_NV ((size_t)64 * 1024)
#define S3_MAX_NV ((size_t)1 << 40)
#define S3_RTOL 1e-14
#define S3_FLOPS_PER_SITE 264.0
#define S3_BYTES_PER_SITE 528.0
#define S3_FLOPS_MODEL "264 flop per site (12 complex 3-term dot products)"
#define S3_BYTES_MODEL "528 B per site in every layout: u 144 (18 doubles) + psi 192 + chi 192 " \
                       "(the paper's sustained-bandwidth model)"
#define S3_VERIFY_RULE "|chi - chi_ref| <= rtol * |psi(s,.,k)|_2 for every element"

#define SEEN_CLI 1
#define SEEN_JSON 2

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

/* Bytes per site the layout actually stores and a run moves (u + psi + chi, the padding of
 * vfo / hvfo spread over the nv sites). */
static double s3_moved_per_site(const pk_su3_params *p)
{
    size_t ud = 0, sd = 0;
    if (pk_su3_layout_sizes(p, &ud, &sd) != PK_OK) return NAN;
    return 8.0 * (double)(ud + 2 * sd) / (double)p->nv;
}

/* The verdict (see the top of the file): *rep gets the differ's figures and, from the rule,
 * equal, num_failed, first_fail and max_abs_err. */
static pk_status s3_check(const double *ref, const double *chi, const double *psi, size_t nv,
                          double rtol, pk_diff_report *rep)
{
    pk_status s = pk_diff_f64(ref, chi, 24 * nv, rtol, 0, PK_DIFF_ELEMENTWISE, rep);
    if (s != PK_OK && s != PK_EMISMATCH) return s;
    rep->num_failed = 0;
    rep->first_fail = (size_t)-1;
    rep->max_abs_err = 0;
    for (size_t st = 0; st < nv; ++st)
        for (int k = 0; k < 4; ++k) {
            double n2 = 0;
            for (int c = 0; c < 3; ++c) {
                const double *z = psi + 24 * st + 2 * (4 * c + k);
                n2 += z[0] * z[0] + z[1] * z[1];
            }
            const double tol = rtol * sqrt(n2);
            for (int c = 0; c < 3; ++c)
                for (int r = 0; r < 2; ++r) {
                    const size_t i = 24 * st + 2 * (4 * c + k) + (size_t)r;
                    if (chi[i] == ref[i]) continue;
                    const double d = fabs(chi[i] - ref[i]);
                    if (!(d <= tol) && rep->num_failed++ == 0) rep->first_fail = i;
                    if (d > rep->max_abs_err || d != d) rep->max_abs_err = d;
                }
        }
    rep->equal = rep->num_failed == 0;
    return PK_OK;
}

/* ---- options ---------------------------------------------------------------------------- */
typedef struct s3_args {
    double nv_d; /* parsed as a double: sizes past INT_MAX */
    size_t nv;
    int nw, seed, layout;
    int seen_nv, seen_nw, seen_seed, seen_layout;
    const char *layout_name;
} s3_args;

static void s3_args_init(s3_args *a)
{
    memset(a, 0, sizeof *a);
    a->nv = S3_PAPER_NV;
    a->seed = 1;
    a->layout = PK_SU3_HVFO;
}

static int s3_opts(cli_opt *o, int n, s3_args *a)
{
    n = cli_opt_add(o, n, "nv", CLI_DOUBLE, &a->nv_d, &a->seen_nv, 1, (double)S3_MAX_NV);
    n = cli_opt_add(o, n, "layout", CLI_STRING, &a->layout_name, &a->seen_layout, 0, 0);
    n = cli_opt_add(o, n, "nw", CLI_INT, &a->nw, &a->seen_nw, 0, PK_SU3_NW_MAX);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    return n;
}

static int s3_args_resolve(const char *prog, s3_args *a)
{
    if (a->seen_nv) {
        if (a->nv_d != floor(a->nv_d))
            return cli_usage_error(prog, "option --nv: %g is not a whole number of sites", a->nv_d);
        a->nv = (size_t)a->nv_d;
    }
    if (a->seen_layout && pk_su3_layout_from_name(a->layout_name, &a->layout) != PK_OK)
        return cli_usage_error(prog, "option --layout: unknown layout '%s' (aos, short, padded, "
                               "vfo, hvfo, recon12)", a->layout_name);
    return 0;
}

int cli_su3_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "help", NULL};
    return cli_kernel_named(argc, argv, S3_KERNEL, flags);
}

/* ---- inputs ----------------------------------------------------------------------------- */
/* DIR/params.json values for what the command line did not set; an absent file is fine. */
static int s3_read_params(const char *prog, const char *path, s3_args *a)
{
    cli_jobject *obj;
    char *text;
    int rc = cli_params_load(prog, path, S3_KERNEL, &obj, &text);
    if (rc || !obj) return rc;
    const cli_jvalue *v = cli_json_get(obj, "nv");
    if (v) {
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < 1 ||
            v->num > (double)S3_MAX_NV) {
            rc = cli_usage_error(prog, "%s: \"nv\" must be an integer in [1, %zu]", path,
                                 S3_MAX_NV);
            goto done;
        }
        if (!a->seen_nv) {
            a->nv = (size_t)v->num;
            a->seen_nv = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "nw");
    if (v) {
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < 0 ||
            v->num > PK_SU3_NW_MAX) {
            rc = cli_usage_error(prog, "%s: \"nw\" must be an integer in [0, %d]", path,
                                 PK_SU3_NW_MAX);
            goto done;
        }
        if (!a->seen_nw) a->nw = (int)v->num;
    }
    v = cli_json_get(obj, "layout");
    if (v) {
        int l;
        if (v->type != CLI_JSTR || pk_su3_layout_from_name(v->str, &l) != PK_OK) {
            rc = cli_usage_error(prog, "%s: \"layout\" must be one of aos, short, padded, vfo, "
                                 "hvfo, recon12", path);
            goto done;
        }
        if (!a->seen_layout) a->layout = l;
    }
    v = cli_json_get(obj, "seed");
    if (v && v->type == CLI_JNUM && v->num == floor(v->num) && v->num >= 0 && v->num <= INT_MAX &&
        !a->seen_seed)
        a->seed = (int)v->num;
done:
    free(obj);
    free(text);
    return rc;
}

/* DIR/<name>.npy: complex128 [nv][3][cols]; nv from the shape, which must agree with nv
 * given elsewhere (*seen) and with the other file. */
static int s3_read_field(const char *prog, const char *path, int cols, s3_args *a, pk_array *arr)
{
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    char shape[160];
    size_t used = (size_t)snprintf(shape, sizeof shape, "[");
    for (int k = 0; k < arr->ndim && used < sizeof shape; ++k)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%zu", k ? ", " : "",
                                 arr->shape[k]);
    if (used < sizeof shape) snprintf(shape + used, sizeof shape - used, "]");
    if (arr->dtype != PK_DTYPE_C128 || arr->ndim != 3 || arr->shape[1] != 3 ||
        arr->shape[2] != (size_t)cols || arr->shape[0] < 1 || arr->shape[0] > S3_MAX_NV) {
        const char *d = pk_dtype_descr(arr->dtype);
        return cli_usage_error(prog, "%s: expected a complex128 ('<c16') array of shape [nv][3][%d] "
                               "(1 <= nv <= %zu), got '%s' with shape %s", path, cols, S3_MAX_NV,
                               d ? d : "?", shape);
    }
    if (a->seen_nv && a->nv != arr->shape[0])
        return cli_usage_error(prog, "%s has shape %s, but %snv is %zu", path, shape,
                               a->seen_nv == SEEN_CLI ? "--" : "params.json / u.npy ", a->nv);
    if (!a->seen_nv) a->seen_nv = SEEN_JSON;
    a->nv = arr->shape[0];
    return 0;
}

/* The default inputs: random SU(3) links (seed) and Gaussian spinors (seed + 1). */
static int s3_generate(size_t nv, int seed, double **u, double **psi)
{
    *u = malloc(nv * 18 * sizeof(double));
    *psi = malloc(nv * 24 * sizeof(double));
    if (!*u || !*psi) return -1;
    pk_lqcd_random_su3((uint64_t)seed, nv, *u);
    pk_lqcd_random_complex((uint64_t)seed + 1, 12 * nv, *psi);
    return 0;
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run su3 [options]\n"
        "Multiply every site's spinor by its SU(3) link (docs/KERNELS.md section 4b):\n"
        "chi[s][c][k] = sum_c' u[s][c][c'] psi[s][c'][k], and print one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     serial: serial; openmp: omp-simd (default, hand-vectorised), omp\n"
        "                  (plain C, compiler-vectorised); opencl: opencl; cuda: cuda; with\n"
        "                  --backend auto it selects the backend\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --layout L      the data layout the kernel runs on: hvfo (default), aos (the\n"
        "                  baseline), short (8 stored elements, u22 rebuilt), padded (192 B\n"
        "                  per link), vfo (u[3][3][nv]), recon12 (two rows, the third\n"
        "                  rebuilt); converted from and to AoS on the host, timed apart\n"
        "                  (layout_seconds)\n"
        "  --nw N          hvfo sites per block, 1..%d (0: %d, one AVX-512 vector)\n"
        "  --in DIR        read DIR/u.npy (complex128 [nv][3][3]) and DIR/psi.npy (complex128\n"
        "                  [nv][3][4]; colour, spin), nv from their shape, and\n"
        "                  DIR/params.json when present (nv, layout, nw); options given here\n"
        "                  override it.  Without --in, random SU(3) links and Gaussian\n"
        "                  spinors are generated as 'portkern gen su3' does\n"
        "  --out DIR       write DIR/chi.npy (complex128 [nv][3][4]; DIR is created)\n"
        "  --nv N          sites (default 3840*1024 = %zu, the paper's; with --in: must match)\n"
        "  --seed S        seed of the generated data (default 1)\n"
        "  --verify        also run the serial reference (pk_su3_reference) and compare:\n"
        "                  pass when " S3_VERIFY_RULE "\n"
        "                  (the error bound of an element is proportional to the norm of its\n"
        "                  spinor); the relative differ's figures are reported beside it\n"
        "  --rtol R        rtol of --verify (default 1e-14)\n"
        "\n"
        "The JSON line: kernel, backend, device, device_index, variant, layout, nw, nv,\n"
        "seconds, kernel_seconds, transfer_seconds, setup_seconds, layout_seconds (AoS <->\n"
        "layout conversion), ms (kernel), gflop_per_s (" S3_FLOPS_MODEL "),\n"
        "gb_per_s (" S3_BYTES_MODEL "),\n"
        "layout_bytes_per_site (what the layout stores and a run moves), flops, bytes,\n"
        "flops_model, bytes_model, fell_back, reason; --verify adds \"verify\" {equal, mode,\n"
        "rtol, max_rel_err, max_abs_err, norm_rel_err, num_failed, first_fail \"[s, c, k,\n"
        "re/im]\" or null} and verify_rule.  Rates use the kernel time.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file (wrong dtype or shape), or unknown backend/variant/device.\n",
        PK_SU3_NW_MAX, PK_SU3_NW_DEFAULT, S3_PAPER_NV);
}

static void run_print(const pk_su3_params *p, const pk_run_info *info, const pk_diff_report *rep,
                      double rtol)
{
    cli_json j;
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, S3_KERNEL, info);
    cj_str(&j, "layout", pk_su3_layout_name(p->layout));
    cj_int(&j, "nw", p->layout == PK_SU3_HVFO ? (p->nw ? p->nw : PK_SU3_NW_DEFAULT) : 1);
    cj_int(&j, "nv", (long long)p->nv);
    cj_run_times(&j, info);
    cj_num(&j, "layout_seconds", info->layout_s);
    cj_num(&j, "ms", info->kernel_s > 0 ? 1e3 * info->kernel_s : NAN);
    cj_num(&j, "gflop_per_s", rate(info->flops / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(info->bytes / 1e9, info->kernel_s));
    cj_num(&j, "layout_bytes_per_site", s3_moved_per_site(p));
    cj_num(&j, "flops", info->flops);
    cj_num(&j, "bytes", info->bytes);
    cj_str(&j, "flops_model", S3_FLOPS_MODEL);
    cj_str(&j, "bytes_model", S3_BYTES_MODEL);
    cj_run_tail(&j, info);
    if (rep) {
        const size_t shape[4] = {p->nv, 3, 4, 2};
        cj_verify(&j, rep, rtol, 0, shape, 4);
        cj_str(&j, "verify_rule", S3_VERIFY_RULE);
    }
    cj_close(&j);
}

int cli_su3_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    s3_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, n = 0, npos, rc = 0;
    double rtol = S3_RTOL;
    cli_opt opts[24];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_run_info info;
    pk_diff_report rep;
    pk_array au, ap;
    double *u = NULL, *psi = NULL, *gu = NULL, *gpsi = NULL, *chi = NULL, *ref = NULL;
    pk_status s;

    s3_args_init(&a);
    memset(&au, 0, sizeof au);
    memset(&ap, 0, sizeof ap);
    n = s3_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = s3_args_resolve(prog, &a))) return rc;
    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = s3_read_params(prog, path, &a))) return rc;
        if (cli_join(path, sizeof path, in, "u.npy"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = s3_read_field(prog, path, 3, &a, &au))) goto done;
        if (cli_join(path, sizeof path, in, "psi.npy")) {
            rc = cli_usage_error(prog, "path too long: %s", in);
            goto done;
        }
        if ((rc = s3_read_field(prog, path, 4, &a, &ap))) goto done;
        u = au.data;
        psi = ap.data;
    } else {
        if (s3_generate(a.nv, a.seed, &gu, &gpsi)) goto nomem;
        u = gu;
        psi = gpsi;
    }
    pk_su3_params p = {a.nv, a.layout, a.nw};
    if (!(chi = malloc(a.nv * 24 * sizeof *chi))) goto nomem;
    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = pk_su3(ctx, &p, variant, u, psi, chi, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        if (!(ref = malloc(a.nv * 24 * sizeof *ref))) goto nomem;
        s = pk_su3_reference(a.nv, u, psi, ref);
        if (s == PK_OK) s = s3_check(ref, chi, psi, a.nv, rtol, &rep);
        if (s != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    const size_t shape[3] = {a.nv, 3, 4};
    if (out && (rc = cli_write_npy(prog, out, "chi.npy", PK_DTYPE_C128, 3, shape, chi))) goto done;
    run_print(&p, &info, verify ? &rep : NULL, rtol);
    rc = verify && !rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "%s: out of host memory for %zu sites\n", prog, a.nv);
    rc = CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&au);
    pk_array_free(&ap);
    free(gu);
    free(gpsi);
    free(chi);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen su3 --out DIR [options]\n"
        "Write the inputs of a run: DIR/u.npy (random SU(3) links: unitary, det 1 to rounding;\n"
        "complex128 [nv][3][3]), DIR/psi.npy (Gaussian spinors, sigma 1 per real component;\n"
        "complex128 [nv][3][4]) and DIR/params.json (nv, layout, nw, seed), which\n"
        "'portkern run su3 --in DIR' reads.  DIR is created when missing.\n"
        "\n"
        "  --nv N          sites (default 3840*1024, the paper's)\n"
        "  --layout L      layout to record for the run (default hvfo)\n"
        "  --nw N          hvfo sites per block to record (0: %d)\n"
        "  --seed S        seed (default 1): u from S, psi from S + 1; the same seed gives the\n"
        "                  same data on every machine\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n",
        PK_SU3_NW_DEFAULT);
}

int cli_su3_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    s3_args a;
    const char *out = NULL;
    int n = 0, npos, rc;
    cli_opt opts[12];
    char *pos[1], path[4096];
    double *u = NULL, *psi = NULL;
    FILE *pf;
    cli_json j;

    s3_args_init(&a);
    n = s3_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = s3_args_resolve(prog, &a))) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    if (cli_parse_only) return CLI_EXIT_OK;
    if (s3_generate(a.nv, a.seed, &u, &psi)) {
        fprintf(stderr, "%s: out of host memory for %zu sites\n", prog, a.nv);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    const size_t ushape[3] = {a.nv, 3, 3}, pshape[3] = {a.nv, 3, 4};
    if ((rc = cli_write_npy(prog, out, "u.npy", PK_DTYPE_C128, 3, ushape, u))) goto done;
    if ((rc = cli_write_npy(prog, out, "psi.npy", PK_DTYPE_C128, 3, pshape, psi))) goto done;
    if ((rc = cli_params_open(prog, out, S3_KERNEL, path, sizeof path, &pf, &j))) goto done;
    cj_int(&j, "nv", (long long)a.nv);
    cj_str(&j, "layout", pk_su3_layout_name(a.layout));
    cj_int(&j, "nw", a.nw);
    cj_int(&j, "seed", a.seed);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    printf("wrote %s/u.npy (complex128 [%zu, 3, 3]), %s/psi.npy (complex128 [%zu, 3, 4]) and %s\n",
           out, a.nv, out, a.nv, path);
done:
    free(u);
    free(psi);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct s3_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int layout;
    int status;
    char reason[600];
    double kernel_s;  /* best of the timed runs */
    double layout_s;  /* pack u and psi + unpack chi, host, one each */
    double upload_s;  /* plan_upload (conversion + copy to the device) */
    int verified;
    double max_abs_err;
    size_t num_failed;
} s3_row;

typedef struct s3_roof {
    int measured;
    char device[128];
    double bw; /* bytes/s (copy: read + written); 0: not measured */
} s3_roof;

struct cli_s3_bench {
    const char *size;
    int reps, threads;
    size_t nv;
    s3_row *rows;
    int nrows, cap;
    s3_roof roof[PK_BACKEND_COUNT];
};

static s3_row *add_row(cli_s3_bench *b, pk_backend_id be)
{
    s3_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    s3_row *r = &rows[b->nrows++];
    r->backend = be;
    r->layout = -1;
    return r;
}

static void row_fail(s3_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

static double row_gbs(const s3_row *r, size_t nv)
{
    return r->status == ROW_OK ? rate(S3_BYTES_PER_SITE * (double)nv / 1e9, r->kernel_s) : NAN;
}

/* The layout conversion alone, timed as the library does it (pack u and psi, unpack chi). */
static double s3_time_layout(const pk_su3_params *p, const double *u, const double *psi,
                             double *chi_out)
{
    size_t ud, sd;
    if (p->layout == PK_SU3_AOS || pk_su3_layout_sizes(p, &ud, &sd) != PK_OK) return 0;
    double *ul = malloc(ud * sizeof *ul), *pl = malloc(sd * sizeof *pl);
    double t = NAN;
    if (ul && pl) {
        const int spin = p->layout == PK_SU3_VFO || p->layout == PK_SU3_HVFO;
        const double t0 = now_s();
        pk_su3_pack(p, u, psi, ul, spin ? pl : NULL);
        if (spin) pk_su3_unpack_spinor(p, pl, chi_out);
        t = now_s() - t0;
    }
    free(ul);
    free(pl);
    return t;
}

static void bench_variant(cli_s3_bench *b, pk_context *ctx, s3_row *r, const double *u,
                          const double *psi, const double *ref, double *chi)
{
    pk_su3_params p = {b->nv, r->layout, 0};
    pk_su3_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    pk_status s = pk_su3_plan_create(&plan, ctx, &p, r->variant, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    s3_roof *rf = &b->roof[r->backend];
    if (!rf->measured) {
        rf->measured = 1;
        snprintf(rf->device, sizeof rf->device, "%s", info.device_name);
        cli_progress(S3_KERNEL " roof: %s bandwidth ...", pk_backend_name(r->backend));
        if ((s = pk_measure_bandwidth(ctx, r->backend, info.device, 0, 5, &rf->bw)) != PK_OK) {
            fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                    pk_backend_name(r->backend), info.device, pk_strerror(s), pk_last_error());
            rf->bw = 0;
        }
    }
    const double t0 = now_s();
    if ((s = pk_su3_plan_upload(plan, u, psi)) != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    r->upload_s = now_s() - t0;
    r->kernel_s = INFINITY;
    for (int i = 0; i <= b->reps; ++i) { /* i = 0: the untimed warm-up */
        if ((s = pk_su3_plan_run(plan, &info)) != PK_OK) {
            row_fail(r, i ? "timed run" : "warm-up run", s);
            goto done;
        }
        if (i > 0 && info.kernel_s < r->kernel_s) r->kernel_s = info.kernel_s;
    }
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    if ((s = pk_su3_plan_download(plan, chi)) != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    if ((s = s3_check(ref, chi, psi, b->nv, S3_RTOL, &rep)) != PK_OK) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = rep.equal;
    r->max_abs_err = rep.max_abs_err;
    r->num_failed = rep.num_failed;
done:
    pk_su3_plan_destroy(plan);
    /* The conversion alone, once the plan's arrays are freed (chi is scratch now). */
    if (r->status == ROW_OK) r->layout_s = s3_time_layout(&p, u, psi, chi);
}

static void print_rows(const cli_s3_bench *b)
{
    printf(S3_KERNEL " %s: nv = %zu sites (%.0f MB of arrays by the model), random SU(3) links "
           "and Gaussian spinors (seed 1);\nbest of %d plan runs after 1 warm-up, data "
           "resident; " S3_BYTES_MODEL ";\n" S3_FLOPS_MODEL "; verified against the serial "
           "reference: " S3_VERIFY_RULE ", rtol %g\n",
           b->size, b->nv, S3_BYTES_PER_SITE * (double)b->nv / 1e6, b->reps, S3_RTOL);
    printf("bandwidth roof, measured in this run (copy kernel, bytes read + written; its plain "
           "stores also pay a read-for-ownership that the model does not count, so kernels "
           "with streaming stores can exceed 1.0x):\n");
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const s3_roof *rf = &b->roof[be];
        if (!rf->measured) continue;
        printf("  %-7s %-40.40s  ", pk_backend_name((pk_backend_id)be), rf->device);
        if (rf->bw > 0)
            printf("%7.1f GB/s\n", rf->bw / 1e9);
        else
            printf("not measured\n");
    }
    printf("layouts store per site (u + psi + chi): aos 528 B, short 512, padded 576, vfo 528 "
           "(rows padded to 4 sites), hvfo 528 (last block padded to nw sites), recon12 480\n");
    printf("\n%-6s  %-7s  %-24s  %-9s  %-8s  %8s  %7s  %8s  %6s  %7s  %9s  %10s  %s\n", "kernel",
           "backend", "device", "variant", "layout", "ms/app", "GB/s", "GFlop/s", "x roof",
           "moved B", "layout ms", "max abs err", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const s3_row *r = &b->rows[i];
        printf("%-6s  %-7s  %-24.24s  %-9s  %-8s  ", S3_KERNEL, pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-",
               r->layout >= 0 ? pk_su3_layout_name(r->layout) : "-");
        if (r->status == ROW_OK) {
            const double gbs = row_gbs(r, b->nv), bw = b->roof[r->backend].bw;
            pk_su3_params p = {b->nv, r->layout, 0};
            printf("%8.3f  %7.2f  %8.2f  ", 1e3 * r->kernel_s, gbs,
                   gbs * S3_FLOPS_PER_SITE / S3_BYTES_PER_SITE);
            if (bw > 0)
                printf("%5.2fx  ", gbs * 1e9 / bw);
            else
                printf("%6s  ", "-");
            printf("%7.0f  %9.2f  %10.2e  %s\n", s3_moved_per_site(&p), 1e3 * r->layout_s,
                   r->max_abs_err, r->verified ? "yes" : "NO");
        } else {
            printf("%8s  %7s  %8s  %6s  %7s  %9s  %10s  %s\n", "-", "-", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const s3_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s %s error: %s\n", pk_backend_name(r->backend), r->variant,
                   pk_su3_layout_name(r->layout), r->reason);
        else if (!r->verified)
            printf("%s %s %s NOT verified: %zu elements beyond the rule, max abs err %.3g\n",
                   pk_backend_name(r->backend), r->variant, pk_su3_layout_name(r->layout),
                   r->num_failed, r->max_abs_err);
    }

    /* The paper's table: each layout against aos of the same backend and variant. */
    printf("layout table (GB/s of each layout / GB/s of aos, same backend and variant; the "
           "paper, Xeon Phi 7120P: short ~1.4x, padded ~1.4x, vfo < 0.33x, hvfo ~1.8x)\n");
    printf("  %-7s  %-9s", "backend", "variant");
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l) printf("  %8s", pk_su3_layout_name(l));
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const s3_row *r = &b->rows[i];
        if (r->layout != PK_SU3_AOS) continue;
        const double base = row_gbs(r, b->nv);
        printf("  %-7s  %-9s", pk_backend_name(r->backend), r->variant);
        for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
            double v = NAN;
            for (int k = 0; k < b->nrows; ++k) {
                const s3_row *q = &b->rows[k];
                if (q->backend == r->backend && q->layout == l && !strcmp(q->variant, r->variant))
                    v = row_gbs(q, b->nv) / base;
            }
            if (isfinite(v))
                printf("  %7.2fx", v);
            else
                printf("  %8s", "-");
        }
        printf("\n");
    }
    /* The paper's headline: hand-vectorised hvfo against the plain parallel aos baseline. */
    const s3_row *base = NULL, *best = NULL;
    for (int i = 0; i < b->nrows; ++i) {
        const s3_row *r = &b->rows[i];
        if (r->backend != PK_BACKEND_OPENMP || r->status != ROW_OK) continue;
        if (r->layout == PK_SU3_AOS && !strcmp(r->variant, "omp")) base = r;
        if (r->layout == PK_SU3_HVFO && !strcmp(r->variant, "omp-simd")) best = r;
    }
    if (base && best)
        printf("openmp: omp-simd hvfo / omp aos (the paper's Hopping VFO over its baseline, "
               "~1.8x on Xeon Phi): %.2fx; omp-simd hvfo at %.2fx of the measured bandwidth\n",
               row_gbs(best, b->nv) / row_gbs(base, b->nv),
               b->roof[PK_BACKEND_OPENMP].bw > 0
                   ? row_gbs(best, b->nv) * 1e9 / b->roof[PK_BACKEND_OPENMP].bw
                   : NAN);
}

int cli_su3_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                  cli_s3_bench **out)
{
    cli_s3_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    int total, done = 0, rc = 0;
    double *u = NULL, *psi = NULL, *ref = NULL, *chi = NULL;
    pk_status s;

    memset(&set, 0, sizeof set); /* the error path closes it */
    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps;
    b->threads = threads;
    b->nv = strcmp(size, "small") == 0 ? S3_SMALL_NV : S3_PAPER_NV; /* paper, large */

    total = cli_bench_open(&set, backends, nb, threads, pk_su3_variants, S3_KERNEL);
    for (int i = 0; i < nb; ++i) { /* unavailable backends: one row each */
        const pk_backend_id be = backends[i];
        if (set.nvars[be] > 0) continue;
        s3_row *r = add_row(b, be);
        if (!r) goto nomem;
        r->status = ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", set.skip[be]);
    }
    if (total > 0) {
        if (s3_generate(b->nv, 1, &u, &psi)) goto nomem;
        ref = malloc(b->nv * 24 * sizeof *ref);
        chi = malloc(b->nv * 24 * sizeof *chi);
        if (!ref || !chi) goto nomem;
        cli_progress(S3_KERNEL " reference: serial, %zu sites ...", b->nv);
        if ((s = pk_su3_reference(b->nv, u, psi, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        for (int i = 0; i < nb; ++i) {
            const pk_backend_id be = backends[i];
            for (int v = 0; v < set.nvars[be]; ++v)
                for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
                    s3_row *r = add_row(b, be);
                    if (!r) goto nomem;
                    snprintf(r->variant, sizeof r->variant, "%s", set.vars[be][v]);
                    r->layout = l;
                    cli_progress(S3_KERNEL " [%d/%d] %s %s %s ...", ++done,
                                 total * PK_SU3_LAYOUTS, pk_backend_name(be), r->variant,
                                 pk_su3_layout_name(l));
                    bench_variant(b, set.ctx[be], r, u, psi, ref, chi);
                }
        }
    }
    print_rows(b);
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
    free(psi);
    free(ref);
    free(chi);
    return rc;
}

void cli_su3_bench_json_rows(const cli_s3_bench *b, cli_json *j)
{
    for (int i = 0; b && i < b->nrows; ++i) {
        const s3_row *r = &b->rows[i];
        const int ok = r->status == ROW_OK;
        const double gbs = row_gbs(r, b->nv), bw = b->roof[r->backend].bw;
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", S3_KERNEL);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        cj_str(j, "layout", r->layout >= 0 ? pk_su3_layout_name(r->layout) : NULL);
        cj_int(j, "nv", (long long)b->nv);
        cj_num(j, "kernel_seconds", ok ? r->kernel_s : NAN);
        cj_num(j, "ms_per_application", ok ? 1e3 * r->kernel_s : NAN);
        cj_num(j, "gb_per_s", gbs);
        cj_num(j, "gflop_per_s", gbs * S3_FLOPS_PER_SITE / S3_BYTES_PER_SITE);
        cj_num(j, "bandwidth_gb_per_s", bw > 0 ? bw / 1e9 : NAN);
        cj_num(j, "roof_fraction", bw > 0 ? gbs * 1e9 / bw : NAN);
        if (r->layout >= 0) {
            pk_su3_params p = {b->nv, r->layout, 0};
            cj_num(j, "layout_bytes_per_site", s3_moved_per_site(&p));
        }
        cj_num(j, "layout_seconds", ok ? r->layout_s : NAN);
        cj_num(j, "upload_seconds", ok ? r->upload_s : NAN);
        cj_bool(j, "verified", ok && r->verified);
        if (ok) {
            cj_num(j, "max_abs_err", r->max_abs_err);
            cj_int(j, "num_failed", (long long)r->num_failed);
        }
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_su3_bench_json(const cli_s3_bench *b, cli_json *j)
{
    if (!b) return;
    cj_open(j, S3_KERNEL, '{');
    cj_int(j, "nv", (long long)b->nv);
    cj_num(j, "flops_per_site", S3_FLOPS_PER_SITE);
    cj_num(j, "bytes_per_site", S3_BYTES_PER_SITE);
    cj_str(j, "bytes_model", S3_BYTES_MODEL);
    cj_str(j, "timing", "best kernel time of reps plan runs after one warm-up, data resident");
    cj_str(j, "verify_rule", S3_VERIFY_RULE);
    cj_num(j, "rtol", S3_RTOL);
    cj_str(j, "roof_model", "copy bandwidth of the backend's device, bytes read + written, "
                            "measured in this run");
    cj_open(j, "bandwidth", '[');
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const s3_roof *rf = &b->roof[be];
        if (!rf->measured) continue;
        cj_open(j, NULL, '{');
        cj_str(j, "backend", pk_backend_name((pk_backend_id)be));
        cj_str(j, "device", rf->device);
        cj_num(j, "bandwidth_gb_per_s", rf->bw > 0 ? rf->bw / 1e9 : NAN);
        cj_close(j);
    }
    cj_close(j);
    cj_close(j);
}

void cli_su3_bench_free(cli_s3_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}
