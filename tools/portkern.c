/* portkern - the command-line tool: run, gen, diff and bench (README.md, "Command line").  One function per command; what the commands share is in cli_common.c.
 *
 * Exit status of every command: 0 success; 1 verification failed, arrays differ, or a
 * valid request failed while running (device error, out of memory, program build);
 * 2 bad input: options, values, files, or a backend/variant/device that does not exist. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"

#define MAIN_PROG "portkern" /* library errors are reported as "portkern: ..." */

/* ---- diffusion3d options shared by run and gen ---------------------------------------- */

static const char *const coef_names[7] = {"cc", "cw", "ce", "cs", "cn", "cb", "ct"};
static const size_t coef_offsets[7] = {
    offsetof(pk_diffusion3d_params, cc), offsetof(pk_diffusion3d_params, cw),
    offsetof(pk_diffusion3d_params, ce), offsetof(pk_diffusion3d_params, cs),
    offsetof(pk_diffusion3d_params, cn), offsetof(pk_diffusion3d_params, cb),
    offsetof(pk_diffusion3d_params, ct)};

#define SEEN_CLI 1  /* given on the command line (wins) */
#define SEEN_JSON 2 /* read from params.json */

typedef struct d3_args {
    int nx, ny, nz, count;
    int seen_nx, seen_ny, seen_nz, seen_count;
    double coef[7];
    int seen_coef[7];
} d3_args;

static void d3_args_init(d3_args *a)
{
    memset(a, 0, sizeof *a);
    a->nx = a->ny = a->nz = 64;
    a->count = 10;
}

/* Size, count and coefficient options; returns the new number of entries. */
static int d3_opts(cli_opt *o, int n, d3_args *a)
{
    int k;
    n = cli_opt_add(o, n, "nx", CLI_INT, &a->nx, &a->seen_nx, 1, INT_MAX);
    n = cli_opt_add(o, n, "ny", CLI_INT, &a->ny, &a->seen_ny, 1, INT_MAX);
    n = cli_opt_add(o, n, "nz", CLI_INT, &a->nz, &a->seen_nz, 1, INT_MAX);
    n = cli_opt_add(o, n, "count", CLI_INT, &a->count, &a->seen_count, 0, INT_MAX);
    for (k = 0; k < 7; ++k)
        n = cli_opt_add(o, n, coef_names[k], CLI_DOUBLE, &a->coef[k], &a->seen_coef[k], -DBL_MAX,
                    DBL_MAX);
    return n;
}

/* Defaults for the sizes, then the coefficients that were given (command line or file). */
static void d3_params(const d3_args *a, pk_diffusion3d_params *p)
{
    int k;
    pk_diffusion3d_params_default(p, a->nx, a->ny, a->nz, a->count);
    for (k = 0; k < 7; ++k)
        if (a->seen_coef[k])
            *(double *)((char *)p + coef_offsets[k]) = a->coef[k];
}

/* Number of points of the field, -1 when the bytes do not fit in size_t. */
static int field_points(int nx, int ny, int nz, size_t *n)
{
    size_t x = (size_t)nx, y = (size_t)ny, z = (size_t)nz;
    if (y != 0 && x > SIZE_MAX / sizeof(float) / y)
        return -1;
    if (z != 0 && x * y > SIZE_MAX / sizeof(float) / z)
        return -1;
    *n = x * y * z;
    return 0;
}

static int check_kernel(const char *prog, int npos, char **pos)
{
    if (npos < 1)
        return cli_usage_error(prog, "missing KERNEL (known: diffusion3d, conv2d, grid, magicfilter3d, laplace2d, su3, dslash); "
                               "see '%s --help'", prog);
    if (strcmp(pos[0], "diffusion3d") != 0)
        return cli_usage_error(prog, "unknown kernel '%s' (known: diffusion3d, conv2d, "
                               "grid, magicfilter3d, laplace2d, su3, dslash)", pos[0]);
    return 0;
}

/* Values of DIR/params.json for what the command line did not set.  An absent file is
 * fine; a malformed one, or a value of the wrong type or range, is bad input. */
static int d3_read_params(const char *prog, const char *path, d3_args *a)
{
    struct { const char *key; int *v, *seen; int min; } ints[4] = {
        {"nx", &a->nx, &a->seen_nx, 1}, {"ny", &a->ny, &a->seen_ny, 1},
        {"nz", &a->nz, &a->seen_nz, 1}, {"count", &a->count, &a->seen_count, 0}};
    cli_jobject *obj;
    const cli_jvalue *v;
    char *text;
    int k, rc = cli_params_load(prog, path, "diffusion3d", &obj, &text);
    if (rc || !obj) return rc;
    for (k = 0; k < 4; ++k) {
        v = cli_json_get(obj, ints[k].key);
        if (!v)
            continue;
        if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < ints[k].min ||
            v->num > INT_MAX) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be an integer >= %d", path,
                                 ints[k].key, ints[k].min);
            goto done;
        }
        if (!*ints[k].seen) {
            *ints[k].v = (int)v->num;
            *ints[k].seen = SEEN_JSON;
        }
    }
    for (k = 0; k < 7; ++k) {
        v = cli_json_get(obj, coef_names[k]);
        if (!v)
            continue;
        if (v->type != CLI_JNUM) {
            rc = cli_usage_error(prog, "%s: \"%s\" must be a number", path, coef_names[k]);
            goto done;
        }
        if (!a->seen_coef[k]) {
            a->coef[k] = v->num;
            a->seen_coef[k] = SEEN_JSON;
        }
    }
done:
    free(obj);
    free(text);
    return rc;
}

/* DIR/f.npy: float32 [nz][ny][nx]; sizes given elsewhere must agree with its shape. */
static int d3_read_field(const char *prog, const char *path, d3_args *a, pk_array *arr)
{
    int *dims[3] = {&a->nz, &a->ny, &a->nx}, *seen[3] = {&a->seen_nz, &a->seen_ny, &a->seen_nx};
    const char *names[3] = {"nz", "ny", "nx"};
    pk_status s = pk_npy_read(path, arr);
    int k;

    if (s != PK_OK)
        return cli_lib_error(MAIN_PROG, s);
    if (arr->dtype != PK_DTYPE_F32 || arr->ndim != 3) {
        cli_usage_error(prog,
                        "%s: expected a float32 ('<f4') array with 3 dimensions [nz][ny][nx], "
                        "got '%s' with %d dimension%s",
                        path, pk_dtype_descr(arr->dtype), arr->ndim, arr->ndim == 1 ? "" : "s");
        return CLI_EXIT_USAGE;
    }
    for (k = 0; k < 3; ++k) {
        size_t d = arr->shape[k];
        if (d < 1 || d > INT_MAX)
            return cli_usage_error(prog, "%s: dimension %d has size %zu (must be 1..%d)", path,
                                   k, d, INT_MAX);
        if (*seen[k] && (size_t)*dims[k] != d)
            return cli_usage_error(prog, "%s has shape [%zu, %zu, %zu] but %s%s is %d", path,
                                   arr->shape[0], arr->shape[1], arr->shape[2],
                                   *seen[k] == SEEN_CLI ? "--" : "params.json ", names[k],
                                   *dims[k]);
        *dims[k] = (int)d;
    }
    return 0;
}

static int write_field(const char *prog, const char *dir, const d3_args *a, const float *f)
{
    const size_t shape[3] = {(size_t)a->nz, (size_t)a->ny, (size_t)a->nx};
    return cli_write_npy(prog, dir, "f.npy", PK_DTYPE_F32, 3, shape, f);
}

/* Rates from a kernel time; null (NaN) when nothing was timed. */
static double rate(double amount, double seconds)
{
    return seconds > 0 && amount > 0 ? amount / seconds : NAN;
}

/* ---- run ------------------------------------------------------------------------------ */

static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run diffusion3d [options]\n"
        "Run the 7-point diffusion stencil once and print one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     a variant of the backend (portkern bench lists them); default:\n"
        "                  the backend's best; with --backend auto it selects the backend\n"
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/f.npy (float32 [nz][ny][nx]) and DIR/params.json when\n"
        "                  present; options given here override params.json.  Without\n"
        "                  --in, the cosine initial field of docs/KERNELS.md is generated\n"
        "  --out DIR       write the result as DIR/f.npy (DIR is created)\n"
        "  --nx N --ny N --nz N   field size (default 64 each; with --in: must match)\n"
        "  --count N       steps (default 10)\n"
        "  --cc X --cw X --ce X --cs X --cn X --cb X --ct X   coefficients (default:\n"
        "                  docs/KERNELS.md: 0.1 for each neighbour, cc = 0.4)\n"
        "  --verify        also run the serial reference and compare (element-wise)\n"
        "  --rtol R        tolerance of --verify (default 1e-5; zero threshold 1e-10)\n"
        "\n"
        "The JSON line: kernel, backend, device, variant, sizes, count, seconds (whole call),\n"
        "kernel_seconds, transfer_seconds, gpts_per_s, gflop_per_s (13 flop/point/step),\n"
        "gb_per_s (8 B/point/step: 1 read + 1 write, the ideal), reason; rates use the\n"
        "kernel time and are null when nothing was timed.  --verify adds\n"
        "\"verify\": {equal, rtol, max_rel_err, num_failed, first_fail \"[z, y, x]\" or null}.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed on the device;\n"
        "2 bad option, bad input file, or unknown backend/variant/device.\n"
        "Other kernels: 'portkern run conv2d --help', 'portkern run magicfilter3d --help'.\n");
}

/* The one JSON line of a run; rep is NULL without --verify. */
static void run_print(const pk_diffusion3d_params *p, const pk_run_info *info,
                      const pk_diff_report *rep, double rtol)
{
    double pts = (double)p->nx * p->ny * p->nz * p->count;
    const size_t shape[3] = {(size_t)p->nz, (size_t)p->ny, (size_t)p->nx};
    cli_json j;
    int k;

    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, "diffusion3d", info);
    cj_int(&j, "nx", p->nx);
    cj_int(&j, "ny", p->ny);
    cj_int(&j, "nz", p->nz);
    cj_int(&j, "count", p->count);
    for (k = 0; k < 7; ++k)
        cj_num(&j, coef_names[k], *(const double *)((const char *)p + coef_offsets[k]));
    cj_run_times(&j, info);
    cj_num(&j, "gpts_per_s", rate(pts / 1e9, info->kernel_s));
    cj_num(&j, "gflop_per_s", rate(13 * pts / 1e9, info->kernel_s));
    cj_num(&j, "gb_per_s", rate(8 * pts / 1e9, info->kernel_s));
    cj_str(&j, "bytes_model", "8 B/pt (ideal: 1 read + 1 write)");
    cj_run_tail(&j, info);
    cj_verify(&j, rep, rtol, 0, shape, 3);
    cj_close(&j);
}

static int cmd_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    d3_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, n = 0, npos, rc;
    double rtol = 1e-5;
    cli_opt opts[32];
    char *pos[1], path[4096];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_diffusion3d_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_array arr;
    float *own = NULL, *f, *ref = NULL;
    size_t npts;
    pk_status s;

    d3_args_init(&a);
    memset(&arr, 0, sizeof arr);
    n = d3_opts(opts, n, &a);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = check_kernel(prog, npos, pos)))
        return rc;

    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if (cli_join(path, sizeof path, in, "params.json"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = d3_read_params(prog, path, &a)))
            return rc;
        if (cli_join(path, sizeof path, in, "f.npy"))
            return cli_usage_error(prog, "path too long: %s", in);
        if ((rc = d3_read_field(prog, path, &a, &arr)))
            goto done;
        f = arr.data;
        npts = arr.count;
    } else {
        if (field_points(a.nx, a.ny, a.nz, &npts))
            return cli_usage_error(prog, "a %d x %d x %d field does not fit in memory", a.nx,
                                   a.ny, a.nz);
        own = malloc(npts * sizeof *own);
        if (!own) {
            fprintf(stderr, "%s: out of host memory for a %d x %d x %d field\n", prog, a.nx,
                    a.ny, a.nz);
            return CLI_EXIT_FAIL;
        }
        s = pk_diffusion3d_field(a.nx, a.ny, a.nz, 0.0, own);
        if (s != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        f = own;
    }
    d3_params(&a, &p);

    if (verify) {
        ref = malloc(npts * sizeof *ref);
        if (!ref) {
            fprintf(stderr, "%s: out of host memory for the reference copy\n", prog);
            rc = CLI_EXIT_FAIL;
            goto done;
        }
        memcpy(ref, f, npts * sizeof *ref);
    }

    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK)
        s = pk_diffusion3d(ctx, &p, variant, f, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        s = pk_diffusion3d_reference(&p, ref);
        if (s == PK_OK)
            s = pk_diff_f32(ref, f, npts, rtol, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
        if (s != PK_OK && s != PK_EMISMATCH) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if (out && (rc = write_field(prog, out, &a, f)))
        goto done;

    run_print(&p, &info, verify ? &rep : NULL, rtol);
    if (verify)
        rc = rep.equal ? CLI_EXIT_OK : CLI_EXIT_FAIL;
done:
    pk_context_destroy(ctx);
    pk_array_free(&arr);
    free(own);
    free(ref);
    return rc;
}

/* ---- gen ------------------------------------------------------------------------------ */

static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen diffusion3d --out DIR [options]\n"
        "Write the inputs of a run: DIR/f.npy (the cosine initial field of docs/KERNELS.md,\n"
        "float32 [nz][ny][nx]) and DIR/params.json (sizes, count, coefficients).\n"
        "DIR is created when missing.\n"
        "\n"
        "  --dataset NAME  small: 256^3, count 20; large: 512^3, count 10 (docs/KERNELS.md)\n"
        "  --nx N --ny N --nz N   field size (default 64 each, or the dataset's)\n"
        "  --count N       steps recorded in params.json (default 10, or the dataset's)\n"
        "  --scale F       multiply each size by F (> 0; rounded, at least 1)\n"
        "  --seed S        recorded in params.json; the cosine field is deterministic\n"
        "  --cc X ... --ct X   coefficients (default: docs/KERNELS.md's)\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option or unwritable DIR.\n"
        "Other kernels: 'portkern gen conv2d --help', 'portkern gen magicfilter3d --help'.\n");
}

static int scale_size(const char *prog, const char *name, int *v, double scale)
{
    double d = floor(*v * scale + 0.5);
    if (d > INT_MAX)
        return cli_usage_error(prog, "--%s %d scaled by %g is too large", name, *v, scale);
    *v = d < 1 ? 1 : (int)d;
    return 0;
}

static int cmd_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    d3_args a;
    const char *out = NULL, *dataset = NULL;
    int seed = 0, n = 0, npos, rc, k;
    double scale = 1.0;
    cli_opt opts[32];
    char *pos[1], path[4096];
    pk_diffusion3d_params p;
    float *f = NULL;
    size_t npts;
    pk_status s;
    FILE *pf;
    cli_json j;

    d3_args_init(&a);
    n = d3_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    n = cli_opt_add(opts, n, "dataset", CLI_STRING, &dataset, NULL, 0, 0);
    n = cli_opt_add(opts, n, "seed", CLI_INT, &seed, NULL, 0, INT_MAX);
    n = cli_opt_add(opts, n, "scale", CLI_DOUBLE, &scale, NULL, 0, DBL_MAX);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc || (rc = check_kernel(prog, npos, pos)))
        return rc;
    if (!out)
        return cli_usage_error(prog, "--out DIR is required");
    if (scale <= 0)
        return cli_usage_error(prog, "option --scale: must be > 0");
    if (dataset) {
        int size, count;
        if (strcmp(dataset, "small") == 0) {
            size = 256;
            count = 20;
        } else if (strcmp(dataset, "large") == 0) {
            size = 512;
            count = 10;
        } else {
            return cli_usage_error(prog, "option --dataset: unknown dataset '%s' "
                                   "(small, large)", dataset);
        }
        if (!a.seen_nx) a.nx = size;
        if (!a.seen_ny) a.ny = size;
        if (!a.seen_nz) a.nz = size;
        if (!a.seen_count) a.count = count;
    }
    if ((rc = scale_size(prog, "nx", &a.nx, scale)) ||
        (rc = scale_size(prog, "ny", &a.ny, scale)) ||
        (rc = scale_size(prog, "nz", &a.nz, scale)))
        return rc;
    if (field_points(a.nx, a.ny, a.nz, &npts))
        return cli_usage_error(prog, "a %d x %d x %d field does not fit in memory", a.nx, a.ny,
                               a.nz);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    d3_params(&a, &p);

    f = malloc(npts * sizeof *f);
    if (!f) {
        fprintf(stderr, "%s: out of host memory for a %d x %d x %d field\n", prog, a.nx, a.ny,
                a.nz);
        return CLI_EXIT_FAIL;
    }
    s = pk_diffusion3d_field(a.nx, a.ny, a.nz, 0.0, f);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if ((rc = write_field(prog, out, &a, f)))
        goto done;

    if ((rc = cli_params_open(prog, out, "diffusion3d", path, sizeof path, &pf, &j)))
        goto done;
    cj_int(&j, "nx", p.nx);
    cj_int(&j, "ny", p.ny);
    cj_int(&j, "nz", p.nz);
    cj_int(&j, "count", p.count);
    for (k = 0; k < 7; ++k)
        cj_num(&j, coef_names[k], *(const double *)((const char *)&p + coef_offsets[k]));
    cj_str(&j, "dataset", dataset);
    cj_num(&j, "scale", scale);
    cj_int(&j, "seed", seed);
    cj_num(&j, "dt", pk_diffusion3d_dt(p.nx));
    if ((rc = cli_params_close(prog, path, pf, &j)))
        goto done;
    printf("wrote %s/f.npy (float32 [%d, %d, %d]) and %s\n", out, p.nz, p.ny, p.nx, path);
done:
    free(f);
    return rc;
}

/* ---- diff ----------------------------------------------------------------------------- */

static void diff_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern diff A.npy B.npy [--rtol R] [--zero Z] [--norm]\n"
        "Compare two arrays of the same dtype and shape (float32, float64, complex64,\n"
        "complex128; complex values are compared as interleaved real numbers) with the\n"
        "differ of docs/KERNELS.md section 6, A being x (the values errors are relative to).\n"
        "\n"
        "  --rtol R   relative tolerance (default 1e-5)\n"
        "  --zero Z   pairs with both |a| and |b| <= Z are ignored (default 1e-10)\n"
        "  --norm     pass/fail on ||a - b||_2 / ||b||_2 <= rtol instead of element-wise\n"
        "\n"
        "Prints: elements compared, failures, first failing multi-index, maximum relative\n"
        "and absolute error, norm-wise relative error, verdict.\n"
        "Exit status: 0 equal; 1 not equal; 2 bad input (unreadable or malformed file,\n"
        "unsupported dtype, dtype or shape mismatch, bad option).\n");
}

static void shape_text(const pk_array *a, char *buf, size_t len)
{
    size_t used = 0;
    int k;
    used += (size_t)snprintf(buf, len, "[");
    for (k = 0; k < a->ndim && used < len; ++k)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", k ? ", " : "", a->shape[k]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

static int cmd_diff(int argc, char **argv)
{
    const char *prog = "portkern diff";
    double rtol = 1e-5, zero = 1e-10;
    int norm = 0, npos, rc, k, cplx, mode;
    cli_opt opts[8];
    char *pos[2], sa[256], sb[256], first[200];
    pk_array A, B;
    pk_diff_report rep;
    pk_status s;
    size_t nreal;
    const char *tname;

    cli_opt_add(opts, 0, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    cli_opt_add(opts, 1, "zero", CLI_DOUBLE, &zero, NULL, 0, DBL_MAX);
    cli_opt_add(opts, 2, "norm", CLI_FLAG, &norm, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 2, &npos);
    if (rc == CLI_HELP) {
        diff_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc)
        return rc;
    if (npos != 2)
        return cli_usage_error(prog, "needs two files A.npy B.npy; see '%s --help'", prog);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    if ((s = pk_npy_read(pos[0], &A)) != PK_OK || (s = pk_npy_read(pos[1], &B)) != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    switch (A.dtype) {
    case PK_DTYPE_F32: tname = "float32"; break;
    case PK_DTYPE_F64: tname = "float64"; break;
    case PK_DTYPE_C64: tname = "complex64"; break;
    case PK_DTYPE_C128: tname = "complex128"; break;
    default:
        rc = cli_usage_error(prog, "%s: dtype '%s' is not supported (float32, float64, "
                             "complex64, complex128)", pos[0], pk_dtype_descr(A.dtype));
        goto done;
    }
    if (B.dtype != A.dtype) {
        rc = cli_usage_error(prog, "dtype mismatch: %s is '%s', %s is '%s'", pos[0],
                             pk_dtype_descr(A.dtype), pos[1], pk_dtype_descr(B.dtype));
        goto done;
    }
    shape_text(&A, sa, sizeof sa);
    shape_text(&B, sb, sizeof sb);
    for (k = 0; k < A.ndim && A.ndim == B.ndim; ++k)
        if (A.shape[k] != B.shape[k])
            break;
    if (A.ndim != B.ndim || k != A.ndim) {
        rc = cli_usage_error(prog, "shape mismatch: %s is %s, %s is %s", pos[0], sa, pos[1],
                             sb);
        goto done;
    }

    cplx = A.dtype == PK_DTYPE_C64 || A.dtype == PK_DTYPE_C128;
    nreal = A.count * (cplx ? 2 : 1);
    mode = norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE;
    if (A.dtype == PK_DTYPE_F32 || A.dtype == PK_DTYPE_C64)
        s = pk_diff_f32(A.data, B.data, nreal, rtol, zero, mode, &rep);
    else
        s = pk_diff_f64(A.data, B.data, nreal, rtol, zero, mode, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }

    printf("compared:       %zu %s elements, shape %s%s\n", A.count, tname, sa,
           cplx ? " (real and imaginary parts compared separately)" : "");
    printf("mode:           %s, rtol %g, zero %g\n", norm ? "norm-wise" : "element-wise", rtol,
           zero);
    printf("failed:         %zu of %zu%s%s\n", rep.num_failed, nreal,
           cplx ? " real and imaginary parts" : "", norm ? " (element-wise, for information)" : "");
    if (rep.num_failed > 0 && rep.first_fail != (size_t)-1) {
        size_t elem = cplx ? rep.first_fail / 2 : rep.first_fail;
        if (A.ndim > 0)
            pk_format_index(elem, A.shape, A.ndim, first, sizeof first);
        else
            snprintf(first, sizeof first, "[]");
        printf("first failure:  %s%s\n", first,
               !cplx ? "" : rep.first_fail % 2 ? " (imaginary part)" : " (real part)");
    } else {
        printf("first failure:  none\n");
    }
    printf("max rel error:  %.6g\n", rep.max_rel_err);
    printf("max abs error:  %.6g\n", rep.max_abs_err);
    printf("norm rel error: %.6g\n", rep.norm_rel_err);
    printf("result:         %s\n", rep.equal ? "equal" : "NOT equal");
    rc = rep.equal ? CLI_EXIT_OK : CLI_EXIT_FAIL;
done:
    pk_array_free(&A);
    pk_array_free(&B);
    return rc;
}

/* ---- bench ---------------------------------------------------------------------------- */

static void bench_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern bench [--kernels K,...] [--backends B,...] [--size S] [--reps N]\n"
        "                      [--threads N] [--json FILE] [--psf-sweep]\n"
        "Run every kernel x available backend x variant, verify each against the serial\n"
        "reference, and compare its rate with the device's measured copy bandwidth.\n"
        "\n"
        "  --kernels K,...   default: all (diffusion3d,conv2d,grid,magicfilter3d,laplace2d,\n"
        "                    su3,dslash)\n"
        "  --backends B,...  default: serial,openmp,opencl,cuda; unavailable ones are\n"
        "                    listed as skipped, with the reason\n"
        "  --size S          small: 128^3, count 10 (quick, default)\n"
        "                    paper: 256^3, count 20 (docs/KERNELS.md's \"small\" dataset)\n"
        "                    large: 512^3, count 10 (docs/KERNELS.md's \"large\" dataset)\n"
        "                    conv2d: small = a quarter frame, 203 x 1317; paper and large =\n"
        "                    the StrayLight frame, 813 x 5271; an 11 x 11 PSF\n"
        "                    magicfilter3d (n1 x n2 x n3): small = 32x30x34 and 64^3;\n"
        "                    paper = 128x126x130 (the paper's) and 256^3 (far beyond the\n"
        "                    caches); large = 128x126x130 and 384^3\n"
        "  --reps N          timed runs per variant (default 3); the best kernel time counts\n"
        "  --threads N       OpenMP threads (0: OpenMP's default)\n"
        "  --json FILE       also write the rows as JSON to FILE\n"
        "  --psf-sweep       conv2d: also time direct against FFT for PSFs of 3 x 3 to\n"
        "                    63 x 63 on every backend with an FFT variant: the crossover\n"
        "\n"
        "Per backend: the copy bandwidth of its device is measured before its first run\n"
        "(bytes read + written per second).  Per variant: plan, upload the cosine field, one\n"
        "untimed warm-up run (program builds), N timed runs of count steps with the field\n"
        "on the device, download, compare with the serial reference after count*(N+1) steps\n"
        "(element-wise, rtol 1e-5).  GFlop/s counts 13 flop/point/step, GB/s 8 B/point/step\n"
        "(ideal: 1 read + 1 write); ratio = GB/s / measured bandwidth, i.e. points/s over\n"
        "bandwidth/8.\n"
        "conv2d: per variant ms/frame (plan runs, image resident) and GFlop/s at 2 flop per\n"
        "PSF tap per pixel, upload and download times, verified element-wise against the\n"
        "serial reference; the StrayLight report's sequence naive -> serial -> simd -> omp.\n"
        "magicfilter3d: periodic MF, every variant (serial-direct, the 16^3-tap oracle, only\n"
        "on 32x30x34 of small), O(1) random data; per variant ms per application (best of N\n"
        "plan runs after a warm-up, data resident), GFlop/s at 96 flop/element, GB/s at\n"
        "48 B/element, verified: |y - y_ref| <= 1e-13 max|y_ref| per element (exit 1 when\n"
        "not).  The roofline is measured\n"
        "in the same run, per backend: host (serial: 1 thread, openmp: all its threads)\n"
        "roof = min(FMA peak of an FMA-throughput loop (AVX-512 or AVX2, many independent\n"
        "chains), 2 flop/B x copy bandwidth); opencl, cuda: 2 flop/B x the device's\n"
        "bandwidth; each variant's %%roof = GFlop/s / roof.  The paper's anchor (1 core on\n"
        "128x126x130: 6.52 GFlop/s, 61%% of peak) is printed beside the best serial variant.\n"
        "grid, laplace2d, su3, dslash: 'portkern run KERNEL --help' states their sizes, byte and\n"
        "flop models; each is verified against its serial reference, with GB/s as a ratio\n"
        "to the bandwidth measured in the same run.\n"
        "Exit status: 0 all verified; 1 a verification or a run failed; 2 bad option.\n");
}

enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct bench_row {
    const char *kernel;
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int status;         /* ROW_* */
    char reason[600];   /* skipped/failed: why; ok: the library's reason */
    int nx, ny, nz, count;
    double kernel_s;    /* best of the timed runs */
    double bw;          /* measured bytes/s of the device; 0 when unknown */
    int verified;
    double max_rel_err;
    size_t num_failed;
    char first_fail[64];
} bench_row;

typedef struct bench_state {
    const char *size;
    int n, count, reps, threads;
    bench_row *rows;
    int nrows, cap;
} bench_state;

static bench_row *bench_add_row(bench_state *b, pk_backend_id be)
{
    bench_row *r;
    bench_row *rows = cli_grow(b->rows, b->nrows, &b->cap, sizeof *rows);
    if (!rows) return NULL;
    b->rows = rows;
    r = &rows[b->nrows++];
    r->kernel = "diffusion3d";
    r->backend = be;
    r->nx = r->ny = r->nz = b->n;
    r->count = b->count;
    return r;
}

static void row_fail(bench_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

/* Plan, upload, warm up, time, download and verify one variant. */
static void bench_variant(bench_state *b, pk_context *ctx, bench_row *r, const float *f0,
                          const float *ref, float *out, size_t npts, double *bw)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_plan *plan = NULL;
    pk_run_info info;
    pk_diff_report rep;
    pk_status s;
    int i;

    pk_diffusion3d_params_default(&p, b->n, b->n, b->n, b->count);
    memset(&info, 0, sizeof info);
    s = pk_diffusion3d_plan_create(&plan, ctx, &p, r->variant, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    if (*bw < 0) { /* first variant of the backend that runs: measure its device */
        s = pk_measure_bandwidth(ctx, r->backend, info.device, 0, 5, bw);
        if (s != PK_OK) {
            fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                    pk_backend_name(r->backend), info.device, pk_strerror(s), pk_last_error());
            *bw = 0;
        }
    }
    r->bw = *bw;
    s = pk_diffusion3d_plan_upload(plan, f0);
    if (s != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    s = pk_diffusion3d_plan_run(plan, b->count, &info);
    if (s != PK_OK) {
        row_fail(r, "warm-up run", s);
        goto done;
    }
    if (!r->device[0])
        snprintf(r->device, sizeof r->device, "%s", info.device_name);
    r->kernel_s = INFINITY;
    for (i = 0; i < b->reps; ++i) {
        s = pk_diffusion3d_plan_run(plan, b->count, &info);
        if (s != PK_OK) {
            row_fail(r, "timed run", s);
            goto done;
        }
        if (info.kernel_s < r->kernel_s)
            r->kernel_s = info.kernel_s;
    }
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    s = pk_diffusion3d_plan_download(plan, out);
    if (s != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    s = pk_diff_f32(ref, out, npts, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = rep.equal;
    r->max_rel_err = rep.max_rel_err;
    r->num_failed = rep.num_failed;
    if (rep.num_failed > 0 && rep.first_fail != (size_t)-1) {
        size_t shape[3] = {(size_t)b->n, (size_t)b->n, (size_t)b->n};
        pk_format_index(rep.first_fail, shape, 3, r->first_fail, sizeof r->first_fail);
    }
done:
    pk_diffusion3d_plan_destroy(plan);
}

/* All variants of the requested backends for diffusion3d; rows appended to b in the order
 * of the backends, an unavailable backend as one skipped row. */
static int bench_diffusion3d(bench_state *b, const pk_backend_id *backends, int nb)
{
    cli_bench_set set;
    int total, done = 0, i, v, rc = 0;
    float *f0 = NULL, *ref = NULL, *out = NULL;
    size_t npts = (size_t)b->n * b->n * b->n;
    pk_diffusion3d_params p;
    pk_status s;

    /* Which backends can run, and their variants, before anything is timed. */
    total = cli_bench_open(&set, backends, nb, b->threads, pk_diffusion3d_variants, "diffusion3d");
    pk_context **ctx = set.ctx;
    char(*vars)[16][32] = set.vars, (*skip)[320] = set.skip;
    const int *nvars = set.nvars;

    if (total > 0) {
        f0 = malloc(npts * sizeof *f0);
        ref = malloc(npts * sizeof *ref);
        out = malloc(npts * sizeof *out);
        if (!f0 || !ref || !out)
            goto nomem;
        if ((s = pk_diffusion3d_field(b->n, b->n, b->n, 0.0, f0)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
        /* The reference covers what each variant runs: the warm-up plus the timed steps. */
        cli_progress("reference: serial, %d^3, %d steps ...", b->n, b->count * (b->reps + 1));
        memcpy(ref, f0, npts * sizeof *ref);
        pk_diffusion3d_params_default(&p, b->n, b->n, b->n, b->count * (b->reps + 1));
        if ((s = pk_diffusion3d_reference(&p, ref)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }

    for (i = 0; i < nb; ++i) {
        pk_backend_id be = backends[i];
        double bw = -1; /* not measured yet */
        if (nvars[be] == 0) {
            bench_row *r = bench_add_row(b, be);
            if (!r)
                goto nomem;
            r->status = ROW_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "%s", skip[be]);
        }
        for (v = 0; v < nvars[be]; ++v) {
            bench_row *r = bench_add_row(b, be);
            if (!r)
                goto nomem;
            snprintf(r->variant, sizeof r->variant, "%s", vars[be][v]);
            cli_progress("[%d/%d] %s %s ...", ++done, total, pk_backend_name(be), r->variant);
            bench_variant(b, ctx[be], r, f0, ref, out, npts, &bw);
        }
    }
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    free(f0);
    free(ref);
    free(out);
    return rc;
}

static double row_pts(const bench_row *r)
{
    return (double)r->nx * r->ny * r->nz * r->count;
}

/* The fastest verified variant of backend be, or NULL. */
static const bench_row *bench_best(const bench_state *b, pk_backend_id be)
{
    const bench_row *best = NULL;
    int i;
    for (i = 0; i < b->nrows; ++i) {
        const bench_row *r = &b->rows[i];
        if (r->backend == be && r->status == ROW_OK && r->verified && r->kernel_s > 0 &&
            (!best || r->kernel_s < best->kernel_s))
            best = r;
    }
    return best;
}

static void bench_print(const bench_state *b)
{
    int i, k;
    printf("diffusion3d %s: %d^3, count %d, best of %d timed runs after 1 warm-up; "
           "13 flop/pt/step; 8 B/pt/step (ideal: 1 read + 1 write)\n",
           b->size, b->n, b->count, b->reps);
    printf("bandwidth = measured copy bandwidth of the device (bytes read + written); "
           "ratio = GB/s / bandwidth\n\n");
    printf("%-11s  %-7s  %-32s  %-14s  %8s  %8s  %8s  %8s  %5s  %s\n", "kernel", "backend",
           "device", "variant", "Gpts/s", "GFlop/s", "GB/s", "bw GB/s", "ratio", "verified");
    for (i = 0; i < b->nrows; ++i) {
        const bench_row *r = &b->rows[i];
        double pts = row_pts(r), gpts = rate(pts / 1e9, r->kernel_s);
        printf("%-11s  %-7s  %-32.32s  %-14s  ", r->kernel, pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-");
        if (r->status == ROW_OK) {
            printf("%8.3f  %8.2f  %8.2f  ", gpts, 13 * gpts, 8 * gpts);
            if (r->bw > 0)
                printf("%8.2f  %5.2f  ", r->bw / 1e9, 8 * gpts * 1e9 / r->bw);
            else
                printf("%8s  %5s  ", "-", "-");
            printf("%s\n", r->verified ? "yes" : "NO");
        } else {
            printf("%8s  %8s  %8s  %8s  %5s  %s\n", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (i = 0; i < b->nrows; ++i) {
        const bench_row *r = &b->rows[i];
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s error: %s\n", pk_backend_name(r->backend), r->variant, r->reason);
        else if (!r->verified)
            printf("%s %s NOT verified: %zu of %.0f points beyond rtol 1e-5, max rel err %g, "
                   "first at %s\n", pk_backend_name(r->backend), r->variant, r->num_failed,
                   (double)r->nx * r->ny * r->nz, r->max_rel_err, r->first_fail);
    }
    for (k = PK_BACKEND_SERIAL; k < PK_BACKEND_COUNT; ++k) {
        const bench_row *best = bench_best(b, (pk_backend_id)k);
        if (!best)
            continue;
        printf("best %s: %s, %.3f Gpts/s", pk_backend_name(best->backend), best->variant,
               rate(row_pts(best) / 1e9, best->kernel_s));
        if (best->bw > 0)
            printf(", %.0f%% of the measured bandwidth",
                   100 * 8 * row_pts(best) / best->kernel_s / best->bw);
        printf("\n");
    }
}

static void bench_json(const bench_state *b, const cli_cv_bench *cv, const cli_mf_bench *mf,
                       const cli_bench_result *gr, const cli_lp_bench *lp,
                       const cli_bench_result *s3,
                       const cli_ds_bench *ds, FILE *f)
{
    cli_json j;
    int i, k;
    cj_init(&j, f, 1);
    cj_open(&j, NULL, '{');
    cj_str(&j, "portkern_version", pk_version());
    cj_str(&j, "size", b->size);
    cj_int(&j, "reps", b->reps);
    cj_str(&j, "timing", "best kernel time of reps timed runs after one untimed warm-up");
    cj_int(&j, "flops_per_point", 13);
    cj_str(&j, "bytes_model", "8 B/pt (ideal: 1 read + 1 write)");
    cj_str(&j, "bandwidth_model", "measured copy bandwidth, bytes read + written per second");
    cj_open(&j, "rows", '[');
    for (i = 0; i < b->nrows; ++i) {
        const bench_row *r = &b->rows[i];
        double pts = row_pts(r), t = r->status == ROW_OK ? r->kernel_s : NAN;
        cj_open(&j, NULL, '{');
        cj_str(&j, "kernel", r->kernel);
        cj_str(&j, "backend", pk_backend_name(r->backend));
        cj_str(&j, "status", r->status == ROW_OK ? "ok" : r->status == ROW_SKIPPED ? "skipped"
                                                                                 : "error");
        cj_str(&j, "device", r->device);
        cj_str(&j, "variant", r->variant[0] ? r->variant : NULL);
        cj_int(&j, "nx", r->nx);
        cj_int(&j, "ny", r->ny);
        cj_int(&j, "nz", r->nz);
        cj_int(&j, "count", r->count);
        cj_num(&j, "kernel_seconds", t);
        cj_num(&j, "gpts_per_s", rate(pts / 1e9, t));
        cj_num(&j, "gflop_per_s", rate(13 * pts / 1e9, t));
        cj_num(&j, "gb_per_s", rate(8 * pts / 1e9, t));
        cj_num(&j, "bandwidth_gb_per_s", r->bw > 0 ? r->bw / 1e9 : NAN);
        cj_num(&j, "ratio", r->bw > 0 ? rate(8 * pts / r->bw, t) : NAN);
        cj_bool(&j, "verified", r->status == ROW_OK && r->verified);
        if (r->status == ROW_OK) {
            cj_num(&j, "max_rel_err", r->max_rel_err);
            cj_int(&j, "num_failed", (long long)r->num_failed);
            cj_str(&j, "first_fail", r->first_fail[0] ? r->first_fail : NULL);
        }
        cj_str(&j, "reason", r->reason);
        cj_close(&j);
    }
    if (cv)
        cli_conv2d_bench_json_rows(cv, &j);
    if (mf)
        cli_magicfilter3d_bench_json_rows(mf, &j);
    if (gr)
        cli_bench_json_rows(gr, &j);
    if (lp)
        cli_laplace2d_bench_json_rows(lp, &j);
    if (s3)
        cli_bench_json_rows(s3, &j);
    if (ds)
        cli_dslash_bench_json_rows(ds, &j);
    cj_close(&j);
    cj_open(&j, "best", '{');
    for (k = PK_BACKEND_SERIAL; k < PK_BACKEND_COUNT; ++k) {
        const bench_row *best = bench_best(b, (pk_backend_id)k);
        if (best)
            cj_str(&j, pk_backend_name(best->backend), best->variant);
    }
    cj_close(&j);
    if (cv)
        cli_conv2d_bench_json(cv, &j);
    if (mf)
        cli_magicfilter3d_bench_json(mf, &j);
    if (lp)
        cli_laplace2d_bench_json(lp, &j);
    if (ds)
        cli_dslash_bench_json(ds, &j);
    cj_close(&j);
}

static int cmd_bench(int argc, char **argv)
{
    const char *prog = "portkern bench";
    const char *kernels = "diffusion3d,conv2d,grid,magicfilter3d,laplace2d,su3,dslash";
    const char *backends = "serial,openmp,opencl,cuda";
    const char *json = NULL;
    bench_state b;
    cli_cv_bench *cv = NULL;
    cli_mf_bench *mf = NULL;
    cli_bench_result *gr = NULL;
    cli_lp_bench *lp = NULL;
    cli_bench_result *s3 = NULL;
    cli_ds_bench *ds = NULL;
    int want_d3 = 0, want_cv = 0, want_gr = 0, want_mf = 0, want_lp = 0, want_s3 = 0,
        want_ds = 0;
    int psf_sweep = 0;
    cli_opt opts[10];
    char *pos[1], items[16][32];
    pk_backend_id list[PK_BACKEND_COUNT];
    int nitems, nb = 0, npos, rc, i, k, failed = 0;
    FILE *jf = NULL;

    memset(&b, 0, sizeof b);
    b.size = "small";
    b.reps = 3;
    cli_opt_add(opts, 0, "kernels", CLI_STRING, &kernels, NULL, 0, 0);
    cli_opt_add(opts, 1, "backends", CLI_STRING, &backends, NULL, 0, 0);
    cli_opt_add(opts, 2, "size", CLI_STRING, &b.size, NULL, 0, 0);
    cli_opt_add(opts, 3, "reps", CLI_INT, &b.reps, NULL, 1, 1000);
    cli_opt_add(opts, 4, "threads", CLI_INT, &b.threads, NULL, 0, INT_MAX);
    cli_opt_add(opts, 5, "json", CLI_STRING, &json, NULL, 0, 0);
    cli_opt_add(opts, 6, "psf-sweep", CLI_FLAG, &psf_sweep, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 0, &npos);
    if (rc == CLI_HELP) {
        bench_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc)
        return rc;

    if (cli_split_list(kernels, items, 16, &nitems))
        return cli_usage_error(prog, "option --kernels: bad list '%s'", kernels);
    for (i = 0; i < nitems; ++i) {
        if (strcmp(items[i], "diffusion3d") == 0)
            want_d3 = 1;
        else if (strcmp(items[i], "conv2d") == 0)
            want_cv = 1;
        else if (strcmp(items[i], "magicfilter3d") == 0)
            want_mf = 1;
        else if (strcmp(items[i], "grid") == 0)
            want_gr = 1;
        else if (strcmp(items[i], "laplace2d") == 0)
            want_lp = 1;
        else if (strcmp(items[i], "su3") == 0)
            want_s3 = 1;
        else if (strcmp(items[i], "dslash") == 0)
            want_ds = 1;
        else
            return cli_usage_error(prog, "option --kernels: unknown kernel '%s' (known: "
                                   "diffusion3d, conv2d, grid, magicfilter3d, laplace2d, su3, dslash)",
                                   items[i]);
    }
    if (psf_sweep && !want_cv)
        return cli_usage_error(prog, "option --psf-sweep: needs conv2d in --kernels");
    if (cli_split_list(backends, items, 16, &nitems))
        return cli_usage_error(prog, "option --backends: bad list '%s'", backends);
    for (i = 0; i < nitems; ++i) {
        pk_backend_id be;
        if (pk_backend_from_name(items[i], &be) != PK_OK || be == PK_BACKEND_AUTO)
            return cli_usage_error(prog, "option --backends: unknown backend '%s' "
                                   "(serial, openmp, opencl, cuda)", items[i]);
        for (k = 0; k < nb && list[k] != be; ++k)
            ;
        if (k == nb) /* a backend named twice runs once */
            list[nb++] = be;
    }
    if (strcmp(b.size, "small") == 0) {
        b.n = 128;
        b.count = 10;
    } else if (strcmp(b.size, "paper") == 0) {
        b.n = 256;
        b.count = 20;
    } else if (strcmp(b.size, "large") == 0) {
        b.n = 512;
        b.count = 10;
    } else {
        return cli_usage_error(prog, "option --size: unknown size '%s' (small, paper, large)",
                               b.size);
    }
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    /* Open the JSON file first: a bad path fails before minutes of benchmarking. */
    if (json && !(jf = fopen(json, "w")))
        return cli_usage_error(prog, "cannot write %s: %s", json, strerror(errno));

    rc = want_d3 ? bench_diffusion3d(&b, list, nb) : 0;
    if (rc == 0) {
        if (want_d3)
            bench_print(&b);
        for (i = 0; i < b.nrows; ++i)
            if (b.rows[i].status == ROW_FAILED ||
                (b.rows[i].status == ROW_OK && !b.rows[i].verified))
                failed = 1;
        if (want_cv) {
            if (want_d3)
                printf("\n");
            if (cli_conv2d_bench(b.size, b.reps, b.threads, list, nb, psf_sweep, &cv) != 0)
                failed = 1;
        }
        if (want_gr) {
            if (want_d3 || want_cv)
                printf("\n");
            cli_bench_req req = {b.size, b.reps, b.threads, psf_sweep};
            if (cli_bench_kernel(&cli_kernel_grid, &req, list, nb, &gr) != 0)
                failed = 1;
        }
        if (want_mf) {
            if (want_d3 || want_cv || want_gr)
                printf("\n");
            if (cli_magicfilter3d_bench(b.size, b.reps, b.threads, list, nb, &mf) != 0)
                failed = 1;
        }
        if (want_lp) {
            if (want_d3 || want_cv || want_gr || want_mf)
                printf("\n");
            if (cli_laplace2d_bench(b.size, b.reps, b.threads, list, nb, &lp) != 0)
                failed = 1;
        }
        if (want_s3) {
            if (want_d3 || want_cv || want_gr || want_mf || want_lp)
                printf("\n");
            cli_bench_req req = {b.size, b.reps, b.threads, psf_sweep};
            if (cli_bench_kernel(&cli_kernel_su3, &req, list, nb, &s3) != 0)
                failed = 1;
        }
        if (want_ds) {
            if (want_d3 || want_cv || want_gr || want_mf || want_lp || want_s3)
                printf("\n");
            if (cli_dslash_bench(b.size, b.reps, b.threads, list, nb, &ds) != 0)
                failed = 1;
        }
        rc = failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        if (jf) {
            bench_json(&b, cv, mf, gr, lp, s3, ds, jf);
            if (fclose(jf) != 0)
                rc = cli_usage_error(prog, "cannot write %s: %s", json, strerror(errno));
            jf = NULL;
        }
    }
    if (jf)
        fclose(jf);
    free(b.rows);
    cli_conv2d_bench_free(cv);
    cli_magicfilter3d_bench_free(mf);
    cli_bench_free(gr);
    cli_laplace2d_bench_free(lp);
    cli_bench_free(s3);
    cli_dslash_bench_free(ds);
    return rc;
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern COMMAND [options]      (portkern COMMAND --help for details)\n"
        "\n"
        "Commands:\n"
        "  run KERNEL          run a kernel once; print one JSON line (times, rates)\n"
        "  gen KERNEL --out D  write a kernel's inputs as D/<name>.npy and D/params.json\n"
        "  diff A.npy B.npy    compare two arrays with the relative-tolerance differ\n"
        "  bench               every kernel x backend x variant, verified, against the\n"
        "                      measured memory bandwidth\n"
        "Kernels: diffusion3d, conv2d, grid, magicfilter3d, laplace2d, su3, dslash.\n"
        "Devices and backends: portkern-probe.\n"
        "\n"
        "  --version           print the library version\n"
        "  --help              this text\n"
        "\n"
        "Exit status: 0 success; 1 verification failed, arrays differ, or a run failed on\n"
        "the device; 2 bad input (option, value, file, unknown backend/variant/device).\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("portkern %s\n", pk_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "gen") == 0) {
        const cli_kernel *k = cli_kernel_find(cli_kernel_operand(argc - 2, argv + 2));
        if (k)
            return strcmp(cmd, "run") == 0 ? cli_run(k, argc - 2, argv + 2)
                                           : cli_gen(k, argc - 2, argv + 2);
    }
    if ((strcmp(cmd, "run") == 0 || strcmp(cmd, "gen") == 0) &&
        cli_laplace2d_named(argc - 2, argv + 2))
        return strcmp(cmd, "run") == 0 ? cli_laplace2d_run(argc - 2, argv + 2)
                                       : cli_laplace2d_gen(argc - 2, argv + 2);
    if ((strcmp(cmd, "run") == 0 || strcmp(cmd, "gen") == 0) &&
        cli_dslash_named(argc - 2, argv + 2))
        return strcmp(cmd, "run") == 0 ? cli_dslash_run(argc - 2, argv + 2)
                                       : cli_dslash_gen(argc - 2, argv + 2);
    if ((strcmp(cmd, "run") == 0 || strcmp(cmd, "gen") == 0) &&
        cli_magicfilter3d_named(argc - 2, argv + 2))
        return strcmp(cmd, "run") == 0 ? cli_magicfilter3d_run(argc - 2, argv + 2)
                                       : cli_magicfilter3d_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cli_conv2d_named(argc - 2, argv + 2) ? cli_conv2d_run(argc - 2, argv + 2)
                                                   : cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "gen") == 0)
        return cli_conv2d_named(argc - 2, argv + 2) ? cli_conv2d_gen(argc - 2, argv + 2)
                                                   : cmd_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 2, argv + 2);
    return cli_usage_error(MAIN_PROG, "unknown command '%s' (run, gen, diff, bench); "
                           "see 'portkern --help'", cmd);
}
