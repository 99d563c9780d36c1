/* test_badinput.c - bad input on every public function of lib/portkern.h (magicfilter3d's are
 * tested in tests/mf_common.h), filling what test_errors.c, test_npy.c and test_differ.c do
 * not already cover: NULL pointers, zero, negative and out-of-range sizes and ids, sizes
 * whose bytes overflow size_t, non-finite and out-of-domain parameters, bad environment
 * values, overlong strings, unreadable paths.  Each case expects its own status code and a
 * detail naming the culprit; a failed call leaves its outputs as documented (NULL plan,
 * untouched arrays).  docs/RELIABILITY.md has the table of which test covers what.
 */
#define _XOPEN_SOURCE 700
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pk_context *ctx;
static int n_cases;

/* got must be want and the detail must contain needle (when given). */
static void expect(int got, int want, const char *needle, const char *what)
{
    ++n_cases;
    ok(got == want && (!needle || strstr(pk_last_error(), needle)), "%s -> %s (got %s: \"%s\")",
       what, pk_status_name(want), pk_status_name(got), pk_last_error());
}

static void expect_true(int cond, const char *what)
{
    ++n_cases;
    ok(cond, "%s", what);
}

static pk_diffusion3d_params d3(int nx, int ny, int nz, int count)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, count);
    return p;
}

static void status_tables(void)
{
    static const int odd[] = {INT_MIN, -20, 1, 42, INT_MAX};
    int good = 1;
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; ++i)
        good &= strcmp(pk_strerror(odd[i]), "unknown status code") == 0 &&
                strcmp(pk_status_name(odd[i]), "PK_UNKNOWN") == 0;
    expect_true(good, "pk_strerror/pk_status_name of INT_MIN, -20, 1, 42, INT_MAX: "
                      "\"unknown status code\" / PK_UNKNOWN");
    pk_backend_id id;
    pk_backend_from_name("nope", &id);
    pk_context *c = NULL;
    pk_context_create(&c, NULL);
    expect_true(pk_last_error()[0] == '\0', "a successful call clears the previous detail");
    pk_context_destroy(c);
}

static void backends_and_contexts(void)
{
    expect_true(pk_backend_name((pk_backend_id)-1) == NULL &&
                    pk_backend_name(PK_BACKEND_COUNT) == NULL &&
                    pk_backend_name((pk_backend_id)INT_MAX) == NULL,
                "pk_backend_name(-1 / PK_BACKEND_COUNT / INT_MAX) is NULL");
    pk_backend_id id = PK_BACKEND_SERIAL;
    expect(pk_backend_from_name(NULL, &id), PK_ENULL, "name", "pk_backend_from_name(NULL name)");
    expect(pk_backend_from_name("serial", NULL), PK_ENULL, "out", "pk_backend_from_name(NULL out)");
    expect(pk_backend_from_name("", &id), PK_EINVAL, "unknown backend ''",
           "pk_backend_from_name(\"\")");
    expect(pk_backend_from_name("opencl ", &id), PK_EINVAL, "'opencl '",
           "pk_backend_from_name(\"opencl \") (trailing blank)");
    static char longname[20000];
    memset(longname, 'x', sizeof longname - 1);
    expect(pk_backend_from_name(longname, &id), PK_EINVAL, "unknown backend 'xxx",
           "pk_backend_from_name(a 19999-character name): bounded detail");
    expect_true(strlen(pk_last_error()) < 1024, "the detail of an overlong name is truncated");
    expect_true(id == PK_BACKEND_SERIAL, "a failed pk_backend_from_name leaves *out alone");
    pk_context_options_init(NULL);
    expect_true(1, "pk_context_options_init(NULL) is a no-op");

    pk_context_options o;
    pk_context *c = (pk_context *)&o; /* must come back NULL */
    pk_context_options_init(&o);
    o.threads = 4097;
    expect(pk_context_create(&c, &o), PK_EINVAL, "threads", "pk_context_create(threads 4097)");
    expect_true(c == NULL, "a failed pk_context_create sets *ctx to NULL");
    pk_context_options_init(&o);
    o.device = INT_MIN;
    expect(pk_context_create(&c, &o), PK_EINVAL, "device", "pk_context_create(device INT_MIN)");
    pk_context_options_init(&o);
    o.backend = (pk_backend_id)-1;
    expect(pk_context_create(&c, &o), PK_EINVAL, "backend", "pk_context_create(backend -1)");

    static const struct { const char *var, *val; } env[] = {
        {"PORTKERN_THREADS", "abc"}, {"PORTKERN_THREADS", "-1"}, {"PORTKERN_THREADS", "99999"},
        {"PORTKERN_THREADS", "4 "}, {"PORTKERN_DEVICE", "-1"},
        {"PORTKERN_DEVICE", "99999999999999999999"}, {"PORTKERN_BACKEND", "gpu"},
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; ++i) {
        char what[128];
        setenv(env[i].var, env[i].val, 1);
        snprintf(what, sizeof what, "pk_context_create with %s='%s'", env[i].var, env[i].val);
        expect(pk_context_create(&c, NULL), PK_EINVAL, env[i].var, what);
        unsetenv(env[i].var);
    }
    setenv("PORTKERN_BACKEND", "gpu", 1);
    setenv("PORTKERN_THREADS", "abc", 1);
    pk_context_options_init(&o);
    o.flags = PK_OPT_IGNORE_ENV;
    pk_status s = pk_context_create(&c, &o);
    expect_true(s == PK_OK, "PK_OPT_IGNORE_ENV: bad PORTKERN_BACKEND/PORTKERN_THREADS ignored");
    pk_context_destroy(c);
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_THREADS");

    const char *why = NULL;
    expect_true(!pk_backend_available(NULL, PK_BACKEND_SERIAL, &why) && why && *why,
                "pk_backend_available(NULL context): 0 with a reason");
    expect_true(!pk_backend_available(ctx, PK_BACKEND_AUTO, &why) &&
                    !pk_backend_available(ctx, (pk_backend_id)99, NULL),
                "pk_backend_available(auto / 99): 0 (why may be NULL)");
    expect_true(pk_device_count(NULL, PK_BACKEND_SERIAL) == 0 &&
                    pk_device_count(ctx, (pk_backend_id)-3) == 0 &&
                    pk_device_count(ctx, PK_BACKEND_AUTO) == 0,
                "pk_device_count(NULL context / backend -3 / auto) is 0");

    pk_device_info di;
    expect(pk_device_get_info(NULL, PK_BACKEND_SERIAL, 0, &di), PK_ENULL, "ctx",
           "pk_device_get_info(NULL context)");
    expect(pk_device_get_info(ctx, PK_BACKEND_SERIAL, -1, &di), PK_ENODEVICE, "device -1",
           "pk_device_get_info(serial, index -1)");
    expect(pk_device_get_info(ctx, (pk_backend_id)99, 0, &di), PK_EINVAL, "backend",
           "pk_device_get_info(backend 99)");

    double bw = -1;
    expect(pk_measure_bandwidth(NULL, PK_BACKEND_SERIAL, 0, 0, 1, &bw), PK_ENULL, "ctx",
           "pk_measure_bandwidth(NULL context)");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, 0, 0, 1001, &bw), PK_EINVAL, "reps",
           "pk_measure_bandwidth(reps 1001)");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, -1, 0, 1, &bw), PK_ENODEVICE, "device -1",
           "pk_measure_bandwidth(device -1)");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_AUTO, 0, 0, 1, &bw), PK_EINVAL, "backend",
           "pk_measure_bandwidth(auto backend)");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, 0, SIZE_MAX, 1, &bw), PK_ESIZE,
           "host memory", "pk_measure_bandwidth(bytes SIZE_MAX): refused, not allocated");
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        if (!pk_backend_available(ctx, (pk_backend_id)b, NULL)) continue;
        char what[96];
        snprintf(what, sizeof what, "pk_measure_bandwidth(%s, bytes 1)",
                 pk_backend_name((pk_backend_id)b));
        expect(pk_measure_bandwidth(ctx, (pk_backend_id)b, 0, 1, 1, &bw), PK_ESIZE,
               "at least 4096", what);
        snprintf(what, sizeof what, "pk_measure_bandwidth(%s, bytes 1 TiB): refused, not clamped",
                 pk_backend_name((pk_backend_id)b));
        if (b != PK_BACKEND_CUDA) /* CUDA: cudaMalloc answers PK_EDEVMEM (no GPU here) */
            expect(pk_measure_bandwidth(ctx, (pk_backend_id)b, 0, (size_t)1 << 40, 1, &bw),
                   PK_ESIZE, "bytes", what);
    }
    expect_true(bw == -1, "failed bandwidth measurements leave *bytes_per_second alone");
}

/* The ISA switches of the hand-vectorised OpenMP kernels: a value naming no ISA is an error
 * at plan creation for every one of them (PORTKERN_MF_ISA, S3_ISA and LP_ISA were ignored).
 * The environment is read when a context is made: one context per variable. */
static void simd_switches(void)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_OPENMP;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK || !pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL)) {
        tap_skip("openmp unavailable", "PORTKERN_*_ISA=bogus (5 checks)");
        pk_context_destroy(ctx);
        return;
    }
    static double u[2 * 9 * 256], psi[2 * 12 * 256], chi[2 * 12 * 256], x[4096], y[4096];
    static float phi[64 * 64], cimg[16 * 16], cout[16 * 16];
    for (int k = 0; k < 5; ++k) {
        static const char *const var[5] = {"PORTKERN_MF_ISA", "PORTKERN_S3_ISA",
                                           "PORTKERN_LP_ISA", "PORTKERN_DS_ISA",
                                           "PORTKERN_CONV2D_ISA"};
        setenv(var[k], "bogus", 1);
        pk_context_destroy(ctx);
        pk_status s = pk_context_create(&ctx, &o);
        if (s == PK_OK && k == 0) {
            pk_magicfilter3d_params p = {16, 16, 16, 0, PK_MF_PERIODIC};
            s = pk_magicfilter3d(ctx, &p, NULL, x, y, NULL);
        } else if (s == PK_OK && k == 1) {
            pk_su3_params p = {256, PK_SU3_AOS, 0};
            s = pk_su3(ctx, &p, "omp-simd", u, psi, chi, NULL);
        } else if (s == PK_OK && k == 2) {
            pk_laplace2d_params p = {64, 1, 0.1, PK_LAP_LEXI, 0};
            s = pk_laplace2d(ctx, &p, "omp-simd", phi, NULL);
        } else if (s == PK_OK && k == 3) {
            pk_dslash_params p = {4, 4, 4, 4, 0.1, 0, 0, 0, 0, 0};
            s = pk_dslash(ctx, &p, "omp-vnode", u, psi, chi, NULL);
        } else if (s == PK_OK) {
            pk_conv2d_params p = {16, 16, 3, 3, PK_CONV2D_AUTO};
            static const float psf[9] = {0.1f, 0.1f, 0.1f, 0.1f, 0.2f, 0.1f, 0.1f, 0.1f, 0.1f};
            s = pk_conv2d(ctx, &p, "omp-rb", cimg, psf, cout, NULL);
        }
        char what[96];
        snprintf(what, sizeof what, "%s=bogus: the openmp call", var[k]);
        expect(s, PK_EINVAL, var[k], what);
        unsetenv(var[k]);
    }
    pk_context_destroy(ctx);
}

static void diffusion3d(void)
{
    float f[64];
    for (int i = 0; i < 64; ++i) f[i] = 1.0f;
    pk_diffusion3d_params_default(NULL, 4, 4, 4, 1);
    pk_diffusion3d_params p = d3(0, -1, INT_MIN, 1);
    expect_true(isfinite(p.cc) && isfinite(p.cw) && p.cw > 0,
                "pk_diffusion3d_params_default(NULL) is a no-op; nx <= 0 gives finite defaults");
    expect_true(isfinite(pk_diffusion3d_dt(0)) && pk_diffusion3d_dt(0) > 0 &&
                    pk_diffusion3d_dt(INT_MIN) == pk_diffusion3d_dt(1),
                "pk_diffusion3d_dt(0 / INT_MIN): finite, as for nx = 1");

    expect(pk_diffusion3d_field(2, -1, 2, 0.0, f), PK_ESIZE, "-1", "field: ny = -1");
    expect(pk_diffusion3d_field(2, 2, INT_MIN, 0.0, f), PK_ESIZE, "size", "field: nz = INT_MIN");
    expect(pk_diffusion3d_field(2, 2, 2, INFINITY, f), PK_ENONFINITE, "t", "field: t = +Inf");
    expect(pk_diffusion3d_field(2, 2, 2, -1.0, f), PK_EINVAL, "t: must be >= 0",
           "field: t = -1 (finite, out of domain)");

    p = d3(INT_MAX, INT_MAX, INT_MAX, 1);
    expect(pk_diffusion3d_reference(&p, f), PK_EOVERFLOW, "overflow",
           "reference: INT_MAX^3 field");
    p = d3(4, 4, 4, -1);
    expect(pk_diffusion3d_reference(&p, f), PK_ESIZE, "count", "reference: count = -1");
    p = d3(4, 4, 4, 1);
    p.cs = NAN;
    expect(pk_diffusion3d_reference(&p, f), PK_ENONFINITE, "cs", "reference: cs = NaN");
    p = d3(4, 4, 4, 1);
    p.cb = -FLT_MAX * 4.0;
    expect(pk_diffusion3d_reference(&p, f), PK_ENONFINITE, "cb",
           "reference: cb = -4 FLT_MAX (finite double, not a float)");
    int same = 1;
    for (int i = 0; i < 64; ++i) same &= f[i] == 1.0f;
    expect_true(same, "failed reference calls leave the field untouched");
    p = d3(4, 4, 4, 0);
    expect(pk_diffusion3d_reference(&p, f), PK_OK, NULL, "reference: count = 0 is a no-op");

    static char longvar[5000];
    memset(longvar, 'v', sizeof longvar - 1);
    p = d3(4, 4, 4, 1);
    expect(pk_diffusion3d(ctx, &p, longvar, f, NULL), PK_ENOVARIANT, "vvvv",
           "diffusion3d: a 4999-character variant name (bounded detail)");
    pk_run_info info;
    expect(pk_diffusion3d(ctx, &p, "", f, &info), PK_OK, NULL,
           "diffusion3d: variant \"\" means the backend's best");
    expect_true(pk_diffusion3d_variants((pk_backend_id)-1) != NULL &&
                    pk_diffusion3d_variants((pk_backend_id)-1)[0] == '\0' &&
                    pk_diffusion3d_variants((pk_backend_id)99)[0] == '\0' &&
                    pk_diffusion3d_variants(PK_BACKEND_AUTO)[0] == '\0',
                "pk_diffusion3d_variants(-1 / 99 / auto) is \"\" (never NULL)");

    pk_diffusion3d_plan *plan = (pk_diffusion3d_plan *)&p;
    expect(pk_diffusion3d_plan_create(&plan, NULL, &p, NULL, NULL), PK_ENULL, "ctx",
           "plan_create: NULL context");
    expect_true(plan == NULL, "plan_create with a NULL context sets *plan to NULL");
    expect(pk_diffusion3d_plan_create(&plan, ctx, NULL, NULL, NULL), PK_ENULL, "p",
           "plan_create: NULL params");
    plan = (pk_diffusion3d_plan *)&p;
    expect(pk_diffusion3d_plan_create(&plan, ctx, &p, "nope", NULL), PK_ENOVARIANT, "nope",
           "plan_create: unknown variant");
    expect_true(plan == NULL, "plan_create with an unknown variant sets *plan to NULL");
    p.ct = INFINITY;
    expect(pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, NULL), PK_ENONFINITE, "ct",
           "plan_create: ct = +Inf");
    p = d3(4, 4, 4, 1);
    expect(pk_diffusion3d_plan_upload(NULL, f), PK_ENULL, "plan", "plan_upload: NULL plan");
    expect(pk_diffusion3d_plan_download(NULL, f), PK_ENULL, "plan", "plan_download: NULL plan");
    if (pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, NULL) == PK_OK) {
        pk_diffusion3d_plan_upload(plan, f);
        expect(pk_diffusion3d_plan_download(plan, NULL), PK_ENULL, "f",
               "plan_download: NULL field");
        expect(pk_diffusion3d_plan_run(plan, INT_MIN, NULL), PK_ESIZE, "count",
               "plan_run: count = INT_MIN");
        expect(pk_diffusion3d_plan_run(plan, 0, NULL), PK_OK, NULL, "plan_run: count = 0");
        pk_diffusion3d_plan_destroy(plan);
    } else {
        ok(0, "plan_create 4^3: %s", pk_last_error());
    }
}

static void conv2d(void)
{
    float img[12], psf[9], out[12];
    for (int i = 0; i < 12; ++i) img[i] = (float)i;
    for (int i = 0; i < 9; ++i) psf[i] = 1.0f / 9;
    pk_conv2d_params cp = {3, 4, 3, 3, PK_CONV2D_AUTO}, q;
    expect(pk_conv2d_reference(&cp, NULL, psf, out), PK_ENULL, "image", "conv2d reference: NULL image");
    expect(pk_conv2d_reference(&cp, img, NULL, out), PK_ENULL, "psf", "conv2d reference: NULL psf");
    float both[12 + 9];
    memcpy(both, psf, sizeof psf);
    expect(pk_conv2d_reference(&cp, img, both, both + 4), PK_EINVAL, "overlap psf",
           "conv2d reference: out overlapping the psf");
    psf[8] = INFINITY;
    expect(pk_conv2d_reference(&cp, img, psf, out), PK_ENONFINITE, "psf[2][2]",
           "conv2d reference: +Inf in the psf");
    expect(pk_conv2d(ctx, &cp, NULL, img, psf, out, NULL), PK_ENONFINITE, "psf[2][2]",
           "conv2d: +Inf in the psf");
    psf[8] = 1.0f / 9;
    q = cp;
    q.kh = q.kw = INT_MAX;
    expect(pk_conv2d(ctx, &q, NULL, img, psf, out, NULL), PK_EOVERFLOW, "psf",
           "conv2d: INT_MAX^2 psf (its bytes overflow size_t)");
    q = cp;
    q.h = INT_MAX;
    q.w = INT_MAX / 2;
    expect(pk_conv2d_reference(&q, img, psf, out), PK_EOVERFLOW, "overflow",
           "conv2d reference: 2^61-pixel image (two buffers overflow size_t)");
    q = cp;
    q.method = INT_MIN;
    expect(pk_conv2d_reference(&q, img, psf, out), PK_EINVAL, "method",
           "conv2d reference: method INT_MIN");
    expect_true(pk_conv2d_variants((pk_backend_id)99) != NULL &&
                    pk_conv2d_variants((pk_backend_id)99)[0] == '\0' &&
                    pk_conv2d_variants(PK_BACKEND_AUTO)[0] == '\0',
                "pk_conv2d_variants(99 / auto) is \"\" (never NULL)");

    static const char *const taps[2] = {"many", "0"};
    for (int i = 0; i < 2; ++i) { /* read when a context is made */
        char what[96];
        pk_context *ectx = NULL;
        setenv("PORTKERN_CONV2D_FFT_TAPS", taps[i], 1);
        pk_status s = pk_context_create(&ectx, NULL);
        unsetenv("PORTKERN_CONV2D_FFT_TAPS");
        snprintf(what, sizeof what, "conv2d auto with PORTKERN_CONV2D_FFT_TAPS='%s'", taps[i]);
        expect(s != PK_OK ? s : pk_conv2d(ectx, &cp, NULL, img, psf, out, NULL), PK_EINVAL,
               "PORTKERN_CONV2D_FFT_TAPS", what);
        pk_context_destroy(ectx);
    }

    pk_conv2d_plan *plan = (pk_conv2d_plan *)&cp;
    expect(pk_conv2d_plan_create(&plan, NULL, &cp, NULL, psf, NULL), PK_ENULL, "ctx",
           "conv2d plan_create: NULL context");
    expect_true(plan == NULL, "conv2d plan_create with a NULL context sets *plan to NULL");
    expect(pk_conv2d_plan_create(&plan, ctx, NULL, NULL, psf, NULL), PK_ENULL, "p",
           "conv2d plan_create: NULL params");
    q = cp;
    q.w = 0;
    expect(pk_conv2d_plan_create(&plan, ctx, &q, NULL, psf, NULL), PK_ESIZE, "w:",
           "conv2d plan_create: w = 0");
    psf[0] = NAN;
    plan = (pk_conv2d_plan *)&cp;
    expect(pk_conv2d_plan_create(&plan, ctx, &cp, NULL, psf, NULL), PK_ENONFINITE, "psf[0][0]",
           "conv2d plan_create: NaN in the psf");
    expect_true(plan == NULL, "conv2d plan_create with a NaN psf sets *plan to NULL");
    psf[0] = 1.0f / 9;
    expect(pk_conv2d_plan_upload(NULL, img), PK_ENULL, "plan", "conv2d plan_upload: NULL plan");
    expect(pk_conv2d_plan_download(NULL, out), PK_ENULL, "plan", "conv2d plan_download: NULL plan");
    if (pk_conv2d_plan_create(&plan, ctx, &cp, NULL, psf, NULL) == PK_OK) {
        pk_conv2d_plan_upload(plan, img);
        pk_conv2d_plan_run(plan, NULL);
        expect(pk_conv2d_plan_download(plan, NULL), PK_ENULL, "out",
               "conv2d plan_download: NULL out");
        pk_conv2d_plan_destroy(plan);
    } else {
        ok(0, "conv2d plan_create 3x4: %s", pk_last_error());
    }
}

static void differ_npy(void)
{
    pk_diff_report r;
    expect(pk_diff_f32(NULL, NULL, 0, 1e-5, 0, PK_DIFF_NORM, &r), PK_OK, NULL,
           "pk_diff_f32 of 0 elements with NULL arrays");
    expect(pk_diff_f64(NULL, NULL, SIZE_MAX, 1e-5, 0, PK_DIFF_ELEMENTWISE, NULL), PK_ENULL, "x",
           "pk_diff_f64 of SIZE_MAX elements with NULL arrays");
    char buf[64];
    size_t shape[2] = {3, 4};
    pk_format_index(7, shape, -5, buf, sizeof buf);
    expect_true(strcmp(buf, "[7]") == 0, "pk_format_index with ndim -5: the flat index \"[7]\"");
    pk_format_index(7, shape, 2, buf, 1);
    expect_true(buf[0] == '\0', "pk_format_index into a 1-byte buffer: \"\"");
    expect_true(pk_dtype_size((pk_dtype)-1) == 0 && pk_dtype_descr((pk_dtype)0) == NULL,
                "pk_dtype_size(-1) = 0, pk_dtype_descr(0) = NULL");

    pk_array a;
    expect(pk_npy_read("", &a), PK_EIO, "cannot open", "pk_npy_read(\"\")");
    expect(pk_npy_read("/dev/null", &a), PK_EFORMAT, "bad magic",
           "pk_npy_read(/dev/null): an empty file");
    static char longpath[8192];
    memset(longpath, 'p', sizeof longpath - 1);
    longpath[0] = '/';
    expect(pk_npy_read(longpath, &a), PK_EIO, "cannot open", "pk_npy_read of an 8191-byte path");
    expect_true(a.data == NULL && a.count == 0, "a failed read leaves a zeroed array");
    pk_array_free(&a);
    expect_true(1, "pk_array_free of a zeroed array is a no-op");
    size_t one = 1;
    expect(pk_npy_write("x.npy", PK_DTYPE_F32, 0, NULL, NULL), PK_ENULL, "data",
           "pk_npy_write of a 0-d array without data");
    expect(pk_npy_write("x.npy", (pk_dtype)0, 1, &one, buf), PK_EINVAL, "dtype",
           "pk_npy_write with dtype 0");
    expect(pk_npy_write("", PK_DTYPE_F32, 1, &one, buf), PK_EINVAL, "path: must not be empty",
           "pk_npy_write(\"\") (no temporary file is created)");
    expect(pk_npy_write("/proc/self/portkern.npy", PK_DTYPE_F32, 1, &one, buf), PK_EIO,
           "portkern.npy", "pk_npy_write into /proc/self (no file can be created there)");
}

int main(void)
{
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    unsetenv("PORTKERN_THREADS");
    unsetenv("PORTKERN_CONV2D_FFT_TAPS");
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_SERIAL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        printf("Bail out! %s\n", pk_last_error());
        return 1;
    }
    status_tables();
    backends_and_contexts();
    simd_switches();
    diffusion3d();
    conv2d();
    differ_npy();
    pk_context_destroy(ctx);
    tap_diag("%d bad-input cases", n_cases);
    return tap_done();
}
