/* cli_magicfilter3d.c - the magicfilter3d commands of portkern: run, gen, and its part of
 * bench (README.md, "Command line"; docs/KERNELS.md section 2).  portkern.c hands a
 * command line to these when its kernel operand is "magicfilter3d".
 *
 * Verification: docs/KERNELS.md's bar is an absolute one (<= 1e-13 per element on O(1) data).
 * The library's differ is relative (docs/KERNELS.md section 6), so the verdict here is
 * |y - y_ref| <= rtol * max|y_ref| for every element (rtol = 1e-13: an absolute tolerance
 * scaled by the data, the bar itself on O(1) data); the differ supplies the relative and
 * norm-wise figures of the report. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MF_X86 1
#include <immintrin.h>
#endif

#include "cli_common.h"

#define MAIN_PROG "portkern"
#define MF_KERNEL "magicfilter3d"
#define MF_PAPER_N1 128 /* the paper's grid (Videau et al.) */
#define MF_PAPER_N2 126
#define MF_PAPER_N3 130
#define MF_RTOL 1e-13
#define MF_FLOPS_PER_ELEM 96.0 /* periodic: 3 passes x 16 taps x (multiply + add) */
#define MF_BYTES_PER_ELEM 48.0 /* periodic: 3 passes x (read 8 B + write 8 B) */
#define MF_FLOPS_MODEL "32 flop per output point per pass (96 per element for periodic)"
#define MF_BYTES_MODEL "each pass reads its input and writes its output once, 8 B per point " \
                       "(48 B per element for periodic)"
#define MF_VERIFY_RULE "|y - y_ref| <= rtol * max|y_ref| for every element"

#define SEEN_CLI 1
#define SEEN_JSON 2

static const char *const bc_names[3] = {"periodic", "grow", "shrink"};

static int bc_id(const char *name)
{
    for (int k = 0; k < 3; ++k)
        if (strcmp(name, bc_names[k]) == 0) return k;
    return -1;
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

static void shape_str(const size_t *shape, int ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < ndim && used < len; ++k)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", k ? ", " : "", shape[k]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

/* O(1) random data, uniform in [-1, 1), the same for a seed everywhere (splitmix64). */
static void mf_gen_x(size_t n, unsigned long long seed, double *x)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; ++i) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
}

/* The verdict (see the top of the file): *rep gets the differ's relative and norm-wise
 * figures (pairs with both sides <= atol left out of the relative ones) and, from the
 * absolute rule, equal, num_failed, first_fail and max_abs_err; *atol = rtol * max|ref|. */
static pk_status mf_check(const double *ref, const double *y, size_t n, double rtol,
                          pk_diff_report *rep, double *atol)
{
    double amax = 0;
    for (size_t i = 0; i < n; ++i)
        if (fabs(ref[i]) > amax) amax = fabs(ref[i]);
    *atol = isfinite(amax) ? rtol * amax : 0;
    pk_status s = pk_diff_f64(ref, y, n, rtol, *atol, PK_DIFF_ELEMENTWISE, rep);
    if (s != PK_OK && s != PK_EMISMATCH) return s;
    rep->num_failed = 0;
    rep->first_fail = (size_t)-1;
    rep->max_abs_err = 0;
    for (size_t i = 0; i < n; ++i) {
        if (y[i] == ref[i]) continue; /* equal infinities too */
        const double d = fabs(y[i] - ref[i]);
        if (!(d <= *atol) && rep->num_failed++ == 0) rep->first_fail = i; /* NaN fails */
        if (d > rep->max_abs_err) rep->max_abs_err = d;
    }
    rep->equal = rep->num_failed == 0;
    return PK_OK;
}

/* ---- options ---------------------------------------------------------------------------- */
typedef struct mf_args {
    int n1, n2, n3, seed, transpose, no_transpose, bc;
    int seen_n1, seen_n2, seen_n3, seen_seed, seen_size, seen_bc, seen_transpose, seen_no;
    const char *size, *bc_name;
} mf_args;

static void mf_args_init(mf_args *a)
{
    memset(a, 0, sizeof *a);
    a->n1 = MF_PAPER_N1;
    a->n2 = MF_PAPER_N2;
    a->n3 = MF_PAPER_N3;
    a->seed = 1;
    a->bc = PK_MF_PERIODIC;
}

static int mf_opts(cli_opt *o, int n, mf_args *a)
{
    n = cli_opt_add(o, n, "n1", CLI_INT, &a->n1, &a->seen_n1, 1, INT_MAX - 15);
    n = cli_opt_add(o, n, "n2", CLI_INT, &a->n2, &a->seen_n2, 1, INT_MAX - 15);
    n = cli_opt_add(o, n, "n3", CLI_INT, &a->n3, &a->seen_n3, 1, INT_MAX - 15);
    n = cli_opt_add(o, n, "size", CLI_STRING, &a->size, &a->seen_size, 0, 0);
    n = cli_opt_add(o, n, "bc", CLI_STRING, &a->bc_name, &a->seen_bc, 0, 0);
    n = cli_opt_add(o, n, "transpose", CLI_FLAG, &a->transpose, &a->seen_transpose, 0, 0);
    n = cli_opt_add(o, n, "no-transpose", CLI_FLAG, &a->no_transpose, &a->seen_no, 0, 0);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    return n;
}

/* What the command line said about sizes, bc and transpose, checked and in a->n*, a->bc,
 * a->transpose (seen_* = SEEN_CLI where given). */
static int mf_args_resolve(const char *prog, mf_args *a)
{
    if (a->seen_size) {
        int v[3], k = 0;
        char why[160], part[32];
        const char *s = a->size;
        if (a->seen_n1 || a->seen_n2 || a->seen_n3)
            return cli_usage_error(prog, "give either --size or --n1/--n2/--n3, not both");
        for (;;) {
            const char *e = strchr(s, 'x');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            if (k == 3 || len == 0 || len >= sizeof part)
                return cli_usage_error(prog, "option --size: '%s' is not N or N1xN2xN3", a->size);
            memcpy(part, s, len);
            part[len] = '\0';
            if (cli_to_int(part, 1, INT_MAX - 15, &v[k++], why, sizeof why))
                return cli_usage_error(prog, "option --size: %s", why);
            if (!e) break;
            s = e + 1;
        }
        if (k == 2)
            return cli_usage_error(prog, "option --size: '%s' is not N or N1xN2xN3", a->size);
        a->n1 = v[0];
        a->n2 = k == 3 ? v[1] : v[0];
        a->n3 = k == 3 ? v[2] : v[0];
        a->seen_n1 = a->seen_n2 = a->seen_n3 = SEEN_CLI;
    }
    if (a->seen_bc) {
        a->bc = bc_id(a->bc_name);
        if (a->bc < 0)
            return cli_usage_error(prog, "option --bc: unknown boundary condition '%s' "
                                   "(periodic, grow, shrink)", a->bc_name);
    }
    if (a->seen_transpose && a->seen_no)
        return cli_usage_error(prog, "options --transpose and --no-transpose contradict");
    if (a->seen_no) {
        a->transpose = 0;
        a->seen_transpose = SEEN_CLI;
    }
    return 0;
}

static void mf_params(const mf_args *a, pk_magicfilter3d_params *p)
{
    p->n1 = a->n1;
    p->n2 = a->n2;
    p->n3 = a->n3;
    p->transpose = a->transpose;
    p->bc = a->bc;
}

/* ---- which kernel ----------------------------------------------------------------------- */
int cli_magicfilter3d_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "transpose", "no-transpose", "help", NULL};
    return cli_kernel_named(argc, argv, MF_KERNEL, flags);
}

/* ---- inputs ----------------------------------------------------------------------------- */
/* DIR/params.json values for what the command line did not set; an absent file is fine. */
static int mf_read_params(const char *prog, const char *path, mf_args *a)
{
    struct { const char *key; int *v, *seen; int min, max; } ints[4] = {
        {"n1", &a->n1, &a->seen_n1, 1, INT_MAX - 15}, {"n2", &a->n2, &a->seen_n2, 1, INT_MAX - 15},
        {"n3", &a->n3, &a->seen_n3, 1, INT_MAX - 15},
        {"seed", &a->seed, &a->seen_seed, 0, INT_MAX}};
    cli_jobject *obj;
    char *text;
    int rc = cli_params_load(prog, path, MF_KERNEL, &obj, &text);
    if (rc || !obj) return rc;
    const cli_jvalue *v;
    /* Sizes recorded for another bc than the command line's describe another x.npy shape:
     * the file's shape decides then. */
    v = cli_json_get(obj, "bc");
    const int other_bc =
        v && v->type == CLI_JSTR && a->seen_bc == SEEN_CLI && bc_id(v->str) != a->bc;
    for (int k = 0; k < 4; ++k) {
        v = cli_json_get(obj, ints[k].key);
        if (!v || (other_bc && k < 3)) continue;
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < ints[k].min ||
            v->num > ints[k].max) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be an integer in [%d, %d]", path,
                                 ints[k].key, ints[k].min, ints[k].max);
            goto done;
        }
        if (!*ints[k].seen) {
            *ints[k].v = (int)v->num;
            *ints[k].seen = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "transpose");
    if (v) {
        if (!(v->type == CLI_JBOOL || (v->type == CLI_JNUM && (v->num == 0 || v->num == 1)))) {
            rc = cli_usage_error(prog, "%s: \"transpose\" must be true, false, 0 or 1", path);
            goto done;
        }
        if (!a->seen_transpose) {
            a->transpose = v->num != 0;
            a->seen_transpose = SEEN_JSON;
        }
    }
    v = cli_json_get(obj, "bc");
    if (v) {
        if (v->type != CLI_JSTR || bc_id(v->str) < 0) {
            rc = cli_usage_error(prog, "%s: \"bc\" must be \"periodic\", \"grow\" or \"shrink\"",
                                 path);
            goto done;
        }
        if (!a->seen_bc) {
            a->bc = bc_id(v->str);
            a->seen_bc = SEEN_JSON;
        }
    }
done:
    free(obj);
    free(text);
    return rc;
}

/* DIR/x.npy: float64 [n3][n2][n1], or [n3+15][n2+15][n1+15] for shrink; the sizes come
 * from its shape and must agree with sizes given elsewhere. */
static int mf_read_x(const char *prog, const char *path, mf_args *a, pk_array *arr)
{
    const int extra = a->bc == PK_MF_SHRINK ? 15 : 0;
    const char *expect = extra ? "[n3+15][n2+15][n1+15] (bc shrink)" : "[n3][n2][n1]";
    char shape[160];
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    shape_str(arr->shape, arr->ndim, shape, sizeof shape);
    if (arr->dtype != PK_DTYPE_F64 || arr->ndim != 3) {
        const char *d = pk_dtype_descr(arr->dtype);
        return cli_usage_error(prog, "%s: expected a float64 ('<f8') array with 3 dimensions %s, "
                               "got '%s' with shape %s", path, expect, d ? d : "?", shape);
    }
    int *dims[3] = {&a->n3, &a->n2, &a->n1}, seen[3] = {a->seen_n3, a->seen_n2, a->seen_n1};
    static const char *const names[3] = {"n3", "n2", "n1"};
    for (int k = 0; k < 3; ++k) {
        const size_t d = arr->shape[k];
        if (d < (size_t)extra + 1 || d - (size_t)extra > (size_t)INT_MAX - 15)
            return cli_usage_error(prog, "%s: shape %s: dimension %d must be %d..%d%s", path,
                                   shape, k, extra + 1, INT_MAX - 15 + extra,
                                   extra ? " for bc shrink (n + 15 points, n >= 1)" : "");
        const int n = (int)(d - (size_t)extra);
        if (seen[k] && *dims[k] != n)
            return cli_usage_error(prog, "%s has shape %s, expected %s, but %s%s is %d", path,
                                   shape, expect, seen[k] == SEEN_CLI ? "--" : "params.json ",
                                   names[k], *dims[k]);
        *dims[k] = n;
    }
    return 0;
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run magicfilter3d [options]\n"
        "Apply the BigDFT magic filter (docs/KERNELS.md section 2: 16 taps per axis, three\n"
        "passes of 1-D convolution + transposition) once and print one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     a variant of the backend: serial: simd (default), unrolled,\n"
        "                  serial, serial-direct (the 16^3-tap triple sum, a test oracle);\n"
        "                  openmp: omp; opencl: opencl; cuda: cuda (portkern bench lists\n"
        "                  them); with --backend auto it selects the backend\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/x.npy (float64 [n3][n2][n1], i1 fastest; for --bc shrink\n"
        "                  [n3+15][n2+15][n1+15]): the sizes come from its shape; and\n"
        "                  DIR/params.json when present (n1, n2, n3, transpose, bc); options\n"
        "                  given here override params.json.  Without --in, O(1) random data\n"
        "                  (uniform in [-1, 1), reproducible by --seed) is generated as\n"
        "                  'portkern gen magicfilter3d' does\n"
        "  --out DIR       write the result as DIR/y.npy (DIR is created): float64\n"
        "                  [n3][n2][n1]; for --bc grow [n3+15][n2+15][n1+15]\n"
        "  --n1 N --n2 N --n3 N   grid points per axis (default 128 x 126 x 130, the paper's;\n"
        "                  with --in: must match the file)\n"
        "  --size N1xN2xN3 the same in one option (or --size N for N^3)\n"
        "  --transpose     MFT, the transposed filter (BigDFT convrot_t; default: MF);\n"
        "                  --no-transpose forces MF over params.json\n"
        "  --bc BC         periodic (default), grow (free BC: n -> n+15 points per axis) or\n"
        "                  shrink (free BC: n+15 -> n)\n"
        "  --seed S        seed of the generated data (default 1)\n"
        "  --verify        also run the serial reference (pk_magicfilter3d_reference) and\n"
        "                  compare: pass when " MF_VERIFY_RULE ",\n"
        "                  i.e. an absolute tolerance scaled by the data (docs/KERNELS.md 2:\n"
        "                  1e-13 absolute on O(1) data); the library's relative differ reports\n"
        "                  the relative and norm-wise errors beside it\n"
        "  --rtol R        rtol of --verify (default 1e-13)\n"
        "\n"
        "The JSON line: kernel, backend, device, device_index, variant, operation (MF or\n"
        "MFT), transpose, bc, n1, n2, n3, in_shape, out_shape, seconds (whole call),\n"
        "kernel_seconds, transfer_seconds, setup_seconds, ms (kernel), gflop_per_s\n"
        "(" MF_FLOPS_MODEL "), gb_per_s\n"
        "(" MF_BYTES_MODEL "), flops,\n"
        "bytes, flops_model, bytes_model, fell_back, reason; --verify adds \"verify\":\n"
        "{equal, mode, rtol, max_rel_err, max_abs_err, norm_rel_err, num_failed (elements\n"
        "beyond the absolute rule), first_fail \"[i3, i2, i1]\" or null}, verify_rule and\n"
        "verify_atol (= rtol * max|y_ref|).  Rates use the kernel time.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file (wrong dtype or shape), or unknown backend/variant/device.\n");
}

static void cj_shape(cli_json *j, const char *key, const size_t *shape)
{
    cj_open(j, key, '[');
    for (int k = 0; k < 3; ++k) cj_int(j, NULL, (long long)shape[k]);
    cj_close(j);
}

static void run_print(const pk_magicfilter3d_params *p, const size_t *ishape,
                      const size_t *oshape, const pk_run_info *info, const pk_diff_report *rep,
                      double rtol, double atol)
{
    cli_json j;
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, MF_KERNEL, info);
    cj_str(&j, "operation", p->transpose ? "MFT" : "MF");
    cj_bool(&j, "transpose", p->transpose);
    cj_str(&j, "bc", bc_names[p->bc]);
    cj_int(&j, "n1", p->n1);
    cj_int(&j, "n2", p->n2);
    cj_int(&j, "n3", p->n3);
    cj_shape(&j, "in_shape", ishape);
    cj_shape(&j, "out_shape", oshape);
    cj_run_times(&j, info);
    cj_num(&j, "ms", info->kernel_s > 0 ? 1e3 * info->kernel_s : NAN);
    cj_num(&j, "gflop_per_s", rate(info->flops / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(info->bytes / 1e9, info->kernel_s));
    cj_num(&j, "flops", info->flops);
    cj_num(&j, "bytes", info->bytes);
    cj_str(&j, "flops_model", MF_FLOPS_MODEL);
    cj_str(&j, "bytes_model", MF_BYTES_MODEL);
    cj_run_tail(&j, info);
    if (rep) {
        cj_verify(&j, rep, rtol, 0, oshape, 3);
        cj_str(&j, "verify_rule", MF_VERIFY_RULE);
        cj_num(&j, "verify_atol", atol);
    }
    cj_close(&j);
}

int cli_magicfilter3d_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    mf_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, n = 0, npos, rc = 0;
    double rtol = MF_RTOL, atol = 0;
    cli_opt opts[24];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_magicfilter3d_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_array arr;
    double *x = NULL, *own = NULL, *y = NULL, *ref = NULL;
    size_t ishape[3], oshape[3], nin, nout;
    pk_status s;

    mf_args_init(&a);
    memset(&arr, 0, sizeof arr);
    n = mf_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = mf_args_resolve(prog, &a))) return rc;

    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = mf_read_params(prog, path, &a))) return rc;
        if (cli_join(path, sizeof path, in, "x.npy"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = mf_read_x(prog, path, &a, &arr))) goto done;
        x = arr.data;
    }
    mf_params(&a, &p);
    if ((s = pk_magicfilter3d_shapes(&p, ishape, oshape)) != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    nin = ishape[0] * ishape[1] * ishape[2];
    nout = oshape[0] * oshape[1] * oshape[2];
    if (!in) {
        if (!(own = malloc(nin * sizeof *own))) goto nomem;
        mf_gen_x(nin, (unsigned)a.seed, own);
        x = own;
    }
    if (!(y = malloc(nout * sizeof *y))) goto nomem;

    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = pk_magicfilter3d(ctx, &p, variant, x, y, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        if (!(ref = malloc(nout * sizeof *ref))) goto nomem;
        s = pk_magicfilter3d_reference(&p, x, ref);
        if (s == PK_OK) s = mf_check(ref, y, nout, rtol, &rep, &atol);
        if (s != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (out && (rc = cli_write_npy(prog, out, "y.npy", PK_DTYPE_F64, 3, oshape, y))) goto done;
    run_print(&p, ishape, oshape, &info, verify ? &rep : NULL, rtol, atol);
    rc = verify && !rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "%s: out of host memory for a %d x %d x %d grid\n", prog, a.n1, a.n2, a.n3);
    rc = CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&arr);
    free(own);
    free(y);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen magicfilter3d --out DIR [options]\n"
        "Write the input of a run: DIR/x.npy (O(1) random data, uniform in [-1, 1), float64\n"
        "[n3][n2][n1]; for --bc shrink [n3+15][n2+15][n1+15]) and DIR/params.json (n1, n2,\n"
        "n3, transpose, bc, seed), which 'portkern run magicfilter3d --in DIR' reads.  DIR is\n"
        "created when missing.\n"
        "\n"
        "  --n1 N --n2 N --n3 N   grid points per axis (default 128 x 126 x 130, the paper's)\n"
        "  --size N1xN2xN3 the same in one option (or --size N for N^3)\n"
        "  --transpose     record MFT (default MF)\n"
        "  --bc BC         periodic (default), grow or shrink\n"
        "  --seed S        seed (default 1): the same seed gives the same data\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n");
}

int cli_magicfilter3d_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    mf_args a;
    const char *out = NULL;
    int n = 0, npos, rc;
    cli_opt opts[16];
    char *pos[1], path[4096], shape[160];
    pk_magicfilter3d_params p;
    size_t ishape[3];
    double *x = NULL;
    pk_status s;
    FILE *pf;
    cli_json j;

    mf_args_init(&a);
    n = mf_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = mf_args_resolve(prog, &a))) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    mf_params(&a, &p);
    if ((s = pk_magicfilter3d_shapes(&p, ishape, NULL)) != PK_OK)
        return cli_lib_error(MAIN_PROG, s);
    const size_t nin = ishape[0] * ishape[1] * ishape[2];
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    if (!(x = malloc(nin * sizeof *x))) {
        fprintf(stderr, "%s: out of host memory for a %d x %d x %d grid\n", prog, a.n1, a.n2, a.n3);
        return CLI_EXIT_FAIL;
    }
    mf_gen_x(nin, (unsigned)a.seed, x);
    if ((rc = cli_write_npy(prog, out, "x.npy", PK_DTYPE_F64, 3, ishape, x))) goto done;
    if ((rc = cli_params_open(prog, out, MF_KERNEL, path, sizeof path, &pf, &j))) goto done;
    cj_int(&j, "n1", a.n1);
    cj_int(&j, "n2", a.n2);
    cj_int(&j, "n3", a.n3);
    cj_bool(&j, "transpose", a.transpose);
    cj_str(&j, "bc", bc_names[a.bc]);
    cj_int(&j, "seed", a.seed);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    shape_str(ishape, 3, shape, sizeof shape);
    printf("wrote %s/x.npy (float64 %s) and %s\n", out, shape, path);
done:
    free(x);
    return rc;
}

/* ---- the FMA peak of the host -------------------------------------------------------------
 * Independent chains a = a * m + c (m < 1: they converge, nothing over- or underflows), more
 * chains than FMA latency x FMA pipes on any x86 core, so the loop runs at the FMA
 * throughput.  Each ISA is a separately compiled function (target attributes), picked by
 * what the CPU supports; the best rate counts. */
static volatile double mf_sink;

#define MF_SCALAR_CHAINS 16
static double fma_loop_generic(long iters)
{
    double a[MF_SCALAR_CHAINS], s = 0;
    const double m = 0.9999999, c = 1e-7;
    for (int k = 0; k < MF_SCALAR_CHAINS; ++k) a[k] = 0.01 * k;
    for (long i = 0; i < iters; ++i)
        for (int k = 0; k < MF_SCALAR_CHAINS; ++k) a[k] = a[k] * m + c;
    for (int k = 0; k < MF_SCALAR_CHAINS; ++k) s += a[k];
    return s;
}

#ifdef MF_X86
#define MF_REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define MF_REP16(X) MF_REP12(X) X(12) X(13) X(14) X(15)

__attribute__((target("avx2,fma"))) static double fma_loop_avx2(long iters)
{
    const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
#define MF_DECL(k) __m256d a##k = _mm256_set1_pd(0.01 * k);
#define MF_STEP(k) a##k = _mm256_fmadd_pd(a##k, m, c);
#define MF_SUM(k) s = _mm256_add_pd(s, a##k);
    MF_REP12(MF_DECL)
    for (long i = 0; i < iters; ++i) {
        MF_REP12(MF_STEP)
    }
    __m256d s = _mm256_setzero_pd();
    MF_REP12(MF_SUM)
    double t[4];
    _mm256_storeu_pd(t, s);
    return t[0] + t[1] + t[2] + t[3];
#undef MF_DECL
#undef MF_STEP
#undef MF_SUM
}

__attribute__((target("avx512f"))) static double fma_loop_avx512(long iters)
{
    const __m512d m = _mm512_set1_pd(0.9999999), c = _mm512_set1_pd(1e-7);
#define MF_DECL(k) __m512d a##k = _mm512_set1_pd(0.01 * k);
#define MF_STEP(k) a##k = _mm512_fmadd_pd(a##k, m, c);
#define MF_SUM(k) s = _mm512_add_pd(s, a##k);
    MF_REP16(MF_DECL)
    for (long i = 0; i < iters; ++i) {
        MF_REP16(MF_STEP)
    }
    __m512d s = _mm512_setzero_pd();
    MF_REP16(MF_SUM)
    double t[8];
    _mm512_storeu_pd(t, s);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
#undef MF_DECL
#undef MF_STEP
#undef MF_SUM
}
#endif

typedef struct fma_kind {
    const char *isa;
    double (*loop)(long);
    double flops_per_iter;
} fma_kind;

/* Flop/s of iters iterations on `threads` threads (0: OpenMP's default; 1: this thread
 * alone): the sum of every thread's rate over its own loop time, so that a thread started
 * late or descheduled a moment costs only its own share; *t gets the longest loop time and
 * *nt the number of threads that ran. */
static double fma_rate(const fma_kind *k, long iters, int threads, double *t, int *nt)
{
    double sum = 0, flops = 0, tmax = 0;
    *nt = 1;
    (void)threads; /* without OpenMP: one thread */
#ifdef _OPENMP
    if (threads != 1) {
        int team = 1;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
        {
            const double t0 = now_s(), r = k->loop(iters), dt = now_s() - t0;
#pragma omp critical(pk_mf_fma)
            {
                sum += r;
                flops += (double)iters * k->flops_per_iter / dt;
                if (dt > tmax) tmax = dt;
            }
#pragma omp master
            team = omp_get_num_threads();
        }
        *nt = team;
    } else
#endif
    {
        const double t0 = now_s();
        sum = k->loop(iters);
        tmax = now_s() - t0;
        flops = (double)iters * k->flops_per_iter / tmax;
    }
    mf_sink = mf_sink + sum;
    *t = tmax;
    return flops;
}

/* Flop/s of the best ISA's FMA loop on `threads` threads (0: OpenMP's default), best of 5
 * runs of about 30 ms each; *isa and *nt_out say which ISA and how many threads. */
static double fma_peak(int threads, const char **isa, int *nt_out)
{
    fma_kind kinds[3];
    int nk = 0;
    double best_rate = 0;
#ifdef MF_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        kinds[nk++] = (fma_kind){"avx512f", fma_loop_avx512, 256};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        kinds[nk++] = (fma_kind){"avx2+fma", fma_loop_avx2, 96};
#endif
    if (nk == 0) kinds[nk++] = (fma_kind){"generic", fma_loop_generic, 2 * MF_SCALAR_CHAINS};
    *isa = kinds[0].isa;
    *nt_out = 1;
    for (int k = 0; k < nk; ++k) {
        long iters = 1L << 14;
        int nt;
        double t, f = fma_rate(&kinds[k], iters, threads, &t, &nt);
        while (t < 0.02 && iters < (1L << 40)) { /* calibrate: about 30 ms per run */
            iters = t > 1e-4 ? (long)(iters * (0.03 / t)) + 1 : iters * 16;
            f = fma_rate(&kinds[k], iters, threads, &t, &nt);
        }
        for (int r = 0; r < 5; ++r) {
            const double fr = fma_rate(&kinds[k], iters, threads, &t, &nt);
            if (fr > f) f = fr;
        }
        if (f > best_rate) {
            best_rate = f;
            *isa = kinds[k].isa;
            *nt_out = nt;
        }
    }
    return best_rate;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct mf_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int status;
    char reason[600];
    int n1, n2, n3;
    double kernel_s; /* best of the timed runs */
    int verified;
    double max_abs_err, atol, max_rel_err;
    size_t num_failed;
    char first_fail[64];
} mf_row;

/* The roof of one backend, measured in the bench run before its first variant. */
typedef struct mf_roof {
    int measured;
    char device[128];
    int host;        /* serial, openmp: the roof is min(FMA peak, 2 x bandwidth) */
    int threads;     /* threads of the FMA loop */
    const char *isa; /* of the FMA loop */
    double peak;     /* flop/s; 0: not measured */
    double bw;       /* bytes/s (copy: read + written); 0: not measured */
    double roof;     /* flop/s; 0: unknown */
} mf_roof;

struct cli_mf_bench {
    const char *size;
    int reps, threads;
    int grids[2][3];
    mf_row *rows;
    int nrows, cap;
    mf_roof roof[PK_BACKEND_COUNT];
};

static mf_row *add_row(cli_mf_bench *b, pk_backend_id be, const int *g)
{
    mf_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    mf_row *r = &rows[b->nrows++];
    r->backend = be;
    if (g) {
        r->n1 = g[0];
        r->n2 = g[1];
        r->n3 = g[2];
    }
    return r;
}

static void row_fail(mf_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

static double row_elems(const mf_row *r)
{
    return (double)r->n1 * r->n2 * r->n3;
}

static void measure_roof(cli_mf_bench *b, pk_context *ctx, pk_backend_id be,
                         const pk_run_info *info)
{
    mf_roof *rf = &b->roof[be];
    rf->measured = 1;
    snprintf(rf->device, sizeof rf->device, "%s", info->device_name);
    rf->host = be == PK_BACKEND_SERIAL || be == PK_BACKEND_OPENMP;
    cli_progress(MF_KERNEL " roof: %s bandwidth ...", pk_backend_name(be));
    pk_status s = pk_measure_bandwidth(ctx, be, info->device, 0, 5, &rf->bw);
    if (s != PK_OK) {
        fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                pk_backend_name(be), info->device, pk_strerror(s), pk_last_error());
        rf->bw = 0;
    }
    if (rf->host) {
        cli_progress(MF_KERNEL " roof: %s FMA peak ...", pk_backend_name(be));
        rf->peak = fma_peak(be == PK_BACKEND_SERIAL ? 1 : b->threads, &rf->isa, &rf->threads);
        rf->roof = rf->bw > 0 ? fmin(rf->peak, 2 * rf->bw) : rf->peak;
    } else {
        rf->roof = 2 * rf->bw;
    }
}

/* Plan, upload, warm up, time, download and verify one variant on one grid. */
static void bench_variant(cli_mf_bench *b, pk_context *ctx, mf_row *r, const double *x,
                          const double *ref, double *out, size_t n)
{
    pk_magicfilter3d_params p = {r->n1, r->n2, r->n3, 0, PK_MF_PERIODIC};
    pk_magicfilter3d_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    pk_status s = pk_magicfilter3d_plan_create(&plan, ctx, &p, r->variant, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    if (!b->roof[r->backend].measured) measure_roof(b, ctx, r->backend, &info);
    if ((s = pk_magicfilter3d_plan_upload(plan, x)) != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    r->kernel_s = INFINITY;
    for (int i = 0; i <= b->reps; ++i) { /* i = 0: the untimed warm-up */
        if ((s = pk_magicfilter3d_plan_run(plan, &info)) != PK_OK) {
            row_fail(r, i ? "timed run" : "warm-up run", s);
            goto done;
        }
        if (i > 0 && info.kernel_s < r->kernel_s) r->kernel_s = info.kernel_s;
    }
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    if ((s = pk_magicfilter3d_plan_download(plan, out)) != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    if ((s = mf_check(ref, out, n, MF_RTOL, &rep, &r->atol)) != PK_OK) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = rep.equal;
    r->max_abs_err = rep.max_abs_err;
    r->max_rel_err = rep.max_rel_err;
    r->num_failed = rep.num_failed;
    if (rep.num_failed > 0 && rep.first_fail != (size_t)-1) {
        size_t shape[3] = {(size_t)r->n3, (size_t)r->n2, (size_t)r->n1};
        pk_format_index(rep.first_fail, shape, 3, r->first_fail, sizeof r->first_fail);
    }
done:
    pk_magicfilter3d_plan_destroy(plan);
}

static double row_gflops(const mf_row *r)
{
    return r->status == ROW_OK ? rate(MF_FLOPS_PER_ELEM * row_elems(r) / 1e9, r->kernel_s) : NAN;
}

static void print_rows(const cli_mf_bench *b, int direct_left_out)
{
    printf(MF_KERNEL " %s: periodic MF on %dx%dx%d and %dx%dx%d (n1 x n2 x n3), O(1) random "
           "data (seed 1);\nbest of %d plan runs after 1 warm-up, data resident; %.0f flop and "
           "%.0f B per element (2 flop/B);\nverified against the serial reference: "
           MF_VERIFY_RULE ", rtol %g\n", b->size, b->grids[0][0], b->grids[0][1],
           b->grids[0][2], b->grids[1][0], b->grids[1][1], b->grids[1][2], b->reps,
           MF_FLOPS_PER_ELEM, MF_BYTES_PER_ELEM, MF_RTOL);
    printf("roofline, measured in this run: host roof = min(FMA peak, 2 flop/B x copy "
           "bandwidth), device roof = 2 flop/B x its copy bandwidth\n");
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const mf_roof *rf = &b->roof[be];
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
            printf("roof %7.1f GFlop/s%s\n", rf->roof / 1e9,
                   !rf->host ? "" : rf->bw > 0 && 2 * rf->bw < rf->peak ? " (memory-bound)"
                                                                       : " (compute-bound)");
        else
            printf("roof unknown\n");
    }
    printf("\n%-13s  %-7s  %-24s  %-13s  %-11s  %9s  %8s  %7s  %8s  %6s  %11s  %s\n", "kernel",
           "backend", "device", "variant", "grid", "ms/app", "GFlop/s", "GB/s", "roof GF", "%roof",
           "max abs err", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const mf_row *r = &b->rows[i];
        char grid[48] = "-";
        if (r->n1) snprintf(grid, sizeof grid, "%dx%dx%d", r->n1, r->n2, r->n3);
        printf("%-13s  %-7s  %-24.24s  %-13s  %-11s  ", MF_KERNEL, pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-", grid);
        if (r->status == ROW_OK) {
            const double gf = row_gflops(r), roof = b->roof[r->backend].roof;
            printf("%9.3f  %8.2f  %7.2f  ", 1e3 * r->kernel_s, gf,
                   gf * MF_BYTES_PER_ELEM / MF_FLOPS_PER_ELEM);
            if (roof > 0)
                printf("%8.1f  %5.1f%%  ", roof / 1e9, 100 * gf * 1e9 / roof);
            else
                printf("%8s  %6s  ", "-", "-");
            printf("%11.2e  %s\n", r->max_abs_err, r->verified ? "yes" : "NO");
        } else {
            printf("%9s  %8s  %7s  %8s  %6s  %11s  %s\n", "-", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const mf_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s %dx%dx%d error: %s\n", pk_backend_name(r->backend), r->variant, r->n1,
                   r->n2, r->n3, r->reason);
        else if (!r->verified)
            printf("%s %s %dx%dx%d NOT verified: %zu of %.0f elements beyond %.3g (rtol %g x "
                   "max|ref|), max abs err %.3g, first at %s\n", pk_backend_name(r->backend),
                   r->variant, r->n1, r->n2, r->n3, r->num_failed, row_elems(r), r->atol,
                   MF_RTOL, r->max_abs_err, r->first_fail);
    }
    if (direct_left_out)
        printf("serial-direct (the 16^3-tap triple sum, 4096 flop per element) runs on "
               "32x30x34 (--size small) only\n");
    /* The paper's anchor: one core on its grid. */
    const mf_row *best = NULL;
    for (int i = 0; i < b->nrows; ++i) {
        const mf_row *r = &b->rows[i];
        if (r->backend == PK_BACKEND_SERIAL && r->status == ROW_OK && r->verified &&
            r->n1 == MF_PAPER_N1 && r->n2 == MF_PAPER_N2 && r->n3 == MF_PAPER_N3 &&
            (!best || r->kernel_s < best->kernel_s))
            best = r;
    }
    if (best) {
        const mf_roof *rf = &b->roof[PK_BACKEND_SERIAL];
        printf("paper anchor (docs/KERNELS.md 2): %dx%dx%d on 1 Nehalem core (SSE): 6.52 "
               "GFlop/s, 61%% of peak; here serial %s: %.2f GFlop/s", MF_PAPER_N1, MF_PAPER_N2,
               MF_PAPER_N3, best->variant, row_gflops(best));
        if (rf->peak > 0)
            printf(", %.0f%% of the 1-thread FMA peak", 100 * row_gflops(best) * 1e9 / rf->peak);
        printf("\n");
    }
}

int cli_magicfilter3d_bench(const char *size, int reps, int threads,
                            const pk_backend_id *backends, int nb, cli_mf_bench **out)
{
    static const int small[2][3] = {{32, 30, 34}, {64, 64, 64}};
    static const int paper[2][3] = {{MF_PAPER_N1, MF_PAPER_N2, MF_PAPER_N3}, {256, 256, 256}};
    static const int large[2][3] = {{MF_PAPER_N1, MF_PAPER_N2, MF_PAPER_N3}, {384, 384, 384}};
    cli_mf_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    int total, done = 0, rc = 0, is_small, direct_left_out = 0;
    double *x = NULL, *ref = NULL, *res = NULL;
    pk_status s;

    memset(&set, 0, sizeof set); /* the error path closes it */
    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps;
    b->threads = threads;
    is_small = strcmp(size, "small") == 0;
    memcpy(b->grids, is_small ? small : strcmp(size, "large") == 0 ? large : paper,
           sizeof b->grids);

    total = cli_bench_open(&set, backends, nb, threads, pk_magicfilter3d_variants, MF_KERNEL);
    int nrun = 2 * total; /* variant x grid runs, for the progress line */
    for (int i = 0; i < nb; ++i)
        for (int v = 0; v < set.nvars[backends[i]]; ++v)
            nrun -= strcmp(set.vars[backends[i]][v], "serial-direct") == 0 ? (is_small ? 1 : 2) : 0;
    for (int i = 0; i < nb; ++i) { /* unavailable backends: one row each */
        const pk_backend_id be = backends[i];
        if (set.nvars[be] > 0) continue;
        mf_row *r = add_row(b, be, NULL);
        if (!r) goto nomem;
        r->status = ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", set.skip[be]);
    }
    for (int g = 0; g < 2 && total > 0; ++g) {
        const int *grid = b->grids[g];
        const size_t n = (size_t)grid[0] * grid[1] * grid[2];
        pk_magicfilter3d_params p = {grid[0], grid[1], grid[2], 0, PK_MF_PERIODIC};
        free(x);
        free(ref);
        free(res);
        x = malloc(n * sizeof *x);
        ref = malloc(n * sizeof *ref);
        res = malloc(n * sizeof *res);
        if (!x || !ref || !res) goto nomem;
        mf_gen_x(n, 1, x);
        cli_progress(MF_KERNEL " reference: serial, %dx%dx%d ...", grid[0], grid[1], grid[2]);
        if ((s = pk_magicfilter3d_reference(&p, x, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        for (int i = 0; i < nb; ++i) {
            const pk_backend_id be = backends[i];
            for (int v = 0; v < set.nvars[be]; ++v) {
                if ((!is_small || g > 0) && strcmp(set.vars[be][v], "serial-direct") == 0) {
                    direct_left_out = 1;
                    continue;
                }
                mf_row *r = add_row(b, be, grid);
                if (!r) goto nomem;
                snprintf(r->variant, sizeof r->variant, "%s", set.vars[be][v]);
                cli_progress(MF_KERNEL " [%d/%d] %s %s %dx%dx%d ...", ++done, nrun,
                             pk_backend_name(be), r->variant, grid[0], grid[1], grid[2]);
                bench_variant(b, set.ctx[be], r, x, ref, res, n);
            }
        }
    }
    print_rows(b, direct_left_out);
    rc = cli_magicfilter3d_bench_failed(b) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    free(x);
    free(ref);
    free(res);
    return rc;
}

int cli_magicfilter3d_bench_failed(const cli_mf_bench *b)
{
    for (int i = 0; b && i < b->nrows; ++i)
        if (b->rows[i].status == ROW_FAILED ||
            (b->rows[i].status == ROW_OK && !b->rows[i].verified))
            return 1;
    return 0;
}

void cli_magicfilter3d_bench_json_rows(const cli_mf_bench *b, cli_json *j)
{
    for (int i = 0; i < b->nrows; ++i) {
        const mf_row *r = &b->rows[i];
        const int ok = r->status == ROW_OK;
        const double t = ok ? r->kernel_s : NAN, gf = row_gflops(r);
        const double roof = b->roof[r->backend].roof;
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", MF_KERNEL);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        if (r->n1) {
            cj_int(j, "n1", r->n1);
            cj_int(j, "n2", r->n2);
            cj_int(j, "n3", r->n3);
        }
        cj_str(j, "bc", "periodic");
        cj_bool(j, "transpose", 0);
        cj_num(j, "kernel_seconds", t);
        cj_num(j, "ms_per_application", 1e3 * t);
        cj_num(j, "gflop_per_s", gf);
        cj_num(j, "gb_per_s", gf * MF_BYTES_PER_ELEM / MF_FLOPS_PER_ELEM);
        cj_num(j, "roof_gflop_per_s", roof > 0 ? roof / 1e9 : NAN);
        cj_num(j, "roof_fraction", roof > 0 ? gf * 1e9 / roof : NAN);
        cj_bool(j, "verified", ok && r->verified);
        if (ok) {
            cj_num(j, "max_abs_err", r->max_abs_err);
            cj_num(j, "atol", r->atol);
            cj_num(j, "max_rel_err", r->max_rel_err);
            cj_int(j, "num_failed", (long long)r->num_failed);
            cj_str(j, "first_fail", r->first_fail[0] ? r->first_fail : NULL);
        }
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_magicfilter3d_bench_json(const cli_mf_bench *b, cli_json *j)
{
    cj_open(j, MF_KERNEL, '{');
    cj_num(j, "flops_per_element", MF_FLOPS_PER_ELEM);
    cj_num(j, "bytes_per_element", MF_BYTES_PER_ELEM);
    cj_str(j, "timing", "best kernel time of reps plan runs after one warm-up, data resident");
    cj_str(j, "verify_rule", MF_VERIFY_RULE);
    cj_num(j, "rtol", MF_RTOL);
    cj_str(j, "roof_model", "host: min(FMA peak, 2 flop/B x copy bandwidth); device: 2 flop/B x "
                            "copy bandwidth; measured in this run");
    cj_open(j, "roofline", '[');
    for (int be = 0; be < PK_BACKEND_COUNT; ++be) {
        const mf_roof *rf = &b->roof[be];
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
        cj_str(j, "bound", !(rf->roof > 0) ? NULL
                           : rf->host && !(rf->bw > 0 && 2 * rf->bw < rf->peak) ? "compute"
                                                                                : "memory");
        cj_close(j);
    }
    cj_close(j);
    cj_close(j);
}

void cli_magicfilter3d_bench_free(cli_mf_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}
