/* test_faults.c - faults injected from outside, through the public API and the environment:
 *
 *  - no ICD (OCL_ICD_VENDORS / OPENCL_VENDOR_PATH naming an empty directory, in a child
 *    process since the ICD loader reads them once per process): opencl is unavailable with
 *    its reason, a forced opencl call fails with PK_ENOBACKEND, auto runs elsewhere;
 *  - out of device memory (PORTKERN_TEST_DEVICE_OOM=1: every buffer the OpenCL and CUDA
 *    backends create fails): forced, the call fails with PK_EDEVMEM and leaves the caller's
 *    arrays alone; under auto it falls back, says why in pk_run_info.reason, and the result
 *    is the reference's;
 *  - a device-to-host transfer that breaks part way (PORTKERN_TEST_DEVICE_READ_FAIL=1: every
 *    OpenCL read scribbles over half its destination, then fails): a one-shot call whose
 *    input is the destination (diffusion3d in place, conv2d with out = image) fails instead of
 *    falling back onto the damaged input; with a separate output conv2d falls back and is right;
 *  - magicfilter3d under the same two: device OOM forced and under auto, a read failing part
 *    way with y = x (an error) and with y apart (a right fallback);
 *  - out of host memory (a field whose bytes fit in size_t but not in any memory): PK_ENOMEM,
 *    nothing written;
 *  - a real out-of-memory on an OpenCL CPU device (in a child whose address space is capped
 *    with setrlimit a little above what it already uses): PoCL allocates buffers lazily and
 *    used to abort the process in its first transfer; a forced call, a plan and the
 *    bandwidth measurement must return a memory error, and auto must not crash;
 *  - PORTKERN_BACKEND naming a backend that cannot run here (cuda without a GPU): auto falls
 *    back with the reason, a forced call fails cleanly;
 *  - a conv2d OpenCL program that fails to build (PORTKERN_TEST_CL_BREAK_BUILD=1; diffusion3d's
 *    is in test_clcache.c): PK_EBUILD when forced, a fallback under auto;
 *  - kernel cache trouble beyond test_clcache.c's: PORTKERN_CACHE_DIR naming a regular file,
 *    a read-only cache directory, an entry truncated to 0 bytes, an entry replaced by a
 *    directory: correct results every time.
 * Every result that is returned is compared with the serial reference.
 */
#define _XOPEN_SOURCE 700
#include "portkern.h"
#include "tap.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under AddressSanitizer or ThreadSanitizer a failed huge malloc must return NULL (as libc
 * does), not abort: the out-of-host-memory checks need it.  Ignored without them. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "allocator_may_return_null=1"; }

static char root[512];

/* ---- problems and their references ---------------------------------------------------- */
enum { NX = 19, NY = 11, NZ = 7, COUNT = 5 };
enum { CH = 23, CW = 31, CKH = 5, CKW = 3 };
static pk_diffusion3d_params d3p;
static float d3_in[NX * NY * NZ], d3_ref[NX * NY * NZ];
static pk_conv2d_params cvp = {CH, CW, CKH, CKW, PK_CONV2D_DIRECT};
static float cv_img[CH * CW], cv_psf[CKH * CKW], cv_ref[CH * CW];

static void problems_init(void)
{
    pk_diffusion3d_params_default(&d3p, NX, NY, NZ, COUNT);
    pk_diffusion3d_field(NX, NY, NZ, 0.0, d3_in);
    memcpy(d3_ref, d3_in, sizeof d3_ref);
    pk_diffusion3d_reference(&d3p, d3_ref);
    for (int i = 0; i < CH * CW; ++i) cv_img[i] = (float)((i * 37) % 101) / 17.0f - 2.0f;
    for (int i = 0; i < CKH * CKW; ++i) cv_psf[i] = (float)(i + 1) / 120.0f;
    pk_conv2d_reference(&cvp, cv_img, cv_psf, cv_ref);
}

static int d3_matches(const float *f)
{
    return pk_diff_f32(f, d3_ref, NX * NY * NZ, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
}

static int cv_matches(const float *out)
{
    return pk_diff_f32(out, cv_ref, CH * CW, 1e-5, 1e-6, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
}

static pk_context *make_ctx(pk_backend_id backend)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = backend;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        exit(1);
    }
    return ctx;
}

/* One diffusion3d call on a new context.  Returns the status; *good says whether the field
 * is right: the reference after PK_OK, untouched after a failure. */
static pk_status run_d3(pk_backend_id backend, pk_run_info *info, int *good, char *err, size_t len)
{
    static float f[NX * NY * NZ];
    memcpy(f, d3_in, sizeof f);
    pk_context *ctx = make_ctx(backend);
    pk_status s = pk_diffusion3d(ctx, &d3p, NULL, f, info);
    snprintf(err, len, "%s", pk_last_error());
    *good = s == PK_OK ? d3_matches(f) : memcmp(f, d3_in, sizeof f) == 0;
    pk_context_destroy(ctx);
    return s;
}

static pk_status run_cv(pk_backend_id backend, pk_run_info *info, int *good, char *err, size_t len)
{
    static float out[CH * CW];
    for (int i = 0; i < CH * CW; ++i) out[i] = -7.0f;
    pk_context *ctx = make_ctx(backend);
    pk_status s = pk_conv2d(ctx, &cvp, NULL, cv_img, cv_psf, out, info);
    snprintf(err, len, "%s", pk_last_error());
    if (s == PK_OK) {
        *good = cv_matches(out);
    } else {
        *good = 1;
        for (int i = 0; i < CH * CW; ++i) *good &= out[i] == -7.0f;
    }
    pk_context_destroy(ctx);
    return s;
}

static const char *bname(pk_backend_id b)
{
    const char *n = pk_backend_name(b);
    return n ? n : "?";
}

/* ---- no ICD (child process) ------------------------------------------------------------ */
/* The child reports each check as a line "<0|1> <text>" on a pipe; the parent turns the
 * lines into TAP points and checks that the child exited cleanly. */
static FILE *child_out;

static void child_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(child_out, "%d ", cond ? 1 : 0);
    va_start(ap, fmt);
    vfprintf(child_out, fmt, ap);
    va_end(ap);
    fputc('\n', child_out);
    fflush(child_out);
}

static void no_icd_child(const char *empty)
{
    setenv("OCL_ICD_VENDORS", empty, 1);
    setenv("OPENCL_VENDOR_PATH", empty, 1);
    unsetenv("PORTKERN_BACKEND");
    pk_context *ctx = make_ctx(PK_BACKEND_AUTO);
    const char *why = NULL;
    int avail = pk_backend_available(ctx, PK_BACKEND_OPENCL, &why);
    if (why && strstr(why, "not built")) {
        child_ok(1, "SKIP no ICD: the OpenCL backend is not built (%s)", why);
        pk_context_destroy(ctx);
        return;
    }
    child_ok(!avail && why && strstr(why, "no OpenCL platform"),
             "no ICD: opencl unavailable, with the reason (%s)", why ? why : "(null)");
    child_ok(pk_device_count(ctx, PK_BACKEND_OPENCL) == 0, "no ICD: opencl has 0 devices");
    pk_device_info di;
    pk_status s = pk_device_get_info(ctx, PK_BACKEND_OPENCL, 0, &di);
    child_ok(s == PK_ENOBACKEND && strstr(pk_last_error(), "no OpenCL platform"),
             "no ICD: pk_device_get_info(opencl, 0) -> PK_ENOBACKEND (%s: %s)", pk_status_name(s),
             pk_last_error());
    double bw = 0;
    s = pk_measure_bandwidth(ctx, PK_BACKEND_OPENCL, 0, 0, 1, &bw);
    child_ok(s == PK_ENOBACKEND, "no ICD: pk_measure_bandwidth(opencl) -> PK_ENOBACKEND (%s)",
             pk_status_name(s));
    pk_context_destroy(ctx);

    pk_run_info info;
    int good;
    char err[1024];
    s = run_d3(PK_BACKEND_OPENCL, &info, &good, err, sizeof err);
    child_ok(s == PK_ENOBACKEND && good && strstr(err, "opencl") &&
                 strstr(err, "no OpenCL platform"),
             "no ICD: forced opencl diffusion3d -> PK_ENOBACKEND, field untouched (%s: %s)",
             pk_status_name(s), err);
    s = run_cv(PK_BACKEND_OPENCL, &info, &good, err, sizeof err);
    child_ok(s == PK_ENOBACKEND && good, "no ICD: forced opencl conv2d -> PK_ENOBACKEND, output "
             "untouched (%s: %s)", pk_status_name(s), err);
    setenv("PORTKERN_BACKEND", "opencl", 1);
    s = run_d3(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    child_ok(s == PK_OK && good && info.backend != PK_BACKEND_OPENCL &&
                 strstr(info.reason, "PORTKERN_BACKEND=opencl"),
             "no ICD: PORTKERN_BACKEND=opencl under auto runs %s, result = reference (%s)",
             bname(info.backend), s == PK_OK ? info.reason : err);
    s = run_cv(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    child_ok(s == PK_OK && good && info.backend != PK_BACKEND_OPENCL,
             "no ICD: conv2d under auto runs %s, result = reference (%s)", bname(info.backend),
             s == PK_OK ? info.reason : err);
    unsetenv("PORTKERN_BACKEND");
}

static void test_no_icd(void)
{
    char empty[600];
    snprintf(empty, sizeof empty, "%s/no-icd", root);
    mkdir(empty, 0700);
    int fds[2];
    if (pipe(fds) != 0) {
        tap_skip("pipe() failed", "no ICD checks");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        tap_skip("fork() failed", "no ICD checks");
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        child_out = fdopen(fds[1], "w");
        if (!child_out) _exit(3);
        no_icd_child(empty);
        fclose(child_out);
        exit(0); /* exit, not _exit: under LeakSanitizer the child is leak-checked too */
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[2048];
    int lines = 0;
    while (in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        ++lines;
        if (strncmp(line + 2, "SKIP ", 5) == 0)
            tap_skip(line + 7, "no ICD");
        else
            ok(line[0] == '1', "%s", line + 2);
    }
    if (in) fclose(in);
    int st = 0;
    waitpid(pid, &st, 0);
    ok(lines > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "no ICD: the child process ran %d checks and exited cleanly (status 0x%x)", lines, st);
}

/* ---- out of device memory --------------------------------------------------------------- */
static void test_device_oom(pk_backend_id be, const char *why_absent)
{
    const char *name = bname(be);
    if (why_absent) {
        tap_skip(why_absent, "%s out of device memory (6 checks)", name);
        return;
    }
    pk_run_info info;
    int good;
    char err[1024];
    setenv("PORTKERN_TEST_DEVICE_OOM", "1", 1);

    pk_status s = run_d3(be, &info, &good, err, sizeof err);
    ok(s == PK_EDEVMEM && good && (strstr(err, "ALLOCATION") || strstr(err, "Allocation")),
       "%s forced, device OOM: diffusion3d -> PK_EDEVMEM, field untouched (%s: %s)", name,
       pk_status_name(s), err);
    s = run_cv(be, &info, &good, err, sizeof err);
    ok(s == PK_EDEVMEM && good, "%s forced, device OOM: conv2d -> PK_EDEVMEM, output untouched "
       "(%s: %s)", name, pk_status_name(s), err);

    pk_context *ctx = make_ctx(be);
    pk_diffusion3d_plan *plan = (pk_diffusion3d_plan *)&plan; /* must come back NULL */
    s = pk_diffusion3d_plan_create(&plan, ctx, &d3p, NULL, NULL);
    ok(s == PK_EDEVMEM && plan == NULL, "%s forced, device OOM: diffusion3d plan_create -> "
       "PK_EDEVMEM, *plan NULL (%s)", name, pk_status_name(s));
    double bw = -1;
    s = pk_measure_bandwidth(ctx, be, 0, 1 << 20, 1, &bw);
    ok(s == PK_EDEVMEM, "%s, device OOM: pk_measure_bandwidth -> PK_EDEVMEM (%s: %s)", name,
       pk_status_name(s), pk_last_error());
    pk_context_destroy(ctx);

    /* auto with this backend first (PORTKERN_BACKEND): fall back, say why, right result */
    setenv("PORTKERN_BACKEND", name, 1);
    s = run_d3(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    char want[64];
    snprintf(want, sizeof want, "%s failed (PK_EDEVMEM", name);
    ok(s == PK_OK && good && info.backend != be && info.fell_back == 1 && strstr(info.reason, want),
       "%s first under auto, device OOM: diffusion3d fell back to %s, result = reference "
       "(reason: %s)", name, bname(info.backend), s == PK_OK ? info.reason : err);
    s = run_cv(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend != be && info.fell_back == 1 && strstr(info.reason, want),
       "%s first under auto, device OOM: conv2d fell back to %s, result = reference (reason: %s)",
       name, bname(info.backend), s == PK_OK ? info.reason : err);
    unsetenv("PORTKERN_BACKEND");

    /* the switch off again ("0" too): the backend itself runs and is right */
    setenv("PORTKERN_TEST_DEVICE_OOM", "0", 1);
    s = run_d3(be, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend == be,
       "%s, PORTKERN_TEST_DEVICE_OOM=0: diffusion3d runs there again, result = reference (%s)",
       name, s == PK_OK ? info.variant : err);
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    s = run_cv(be, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend == be,
       "%s, no fault: conv2d runs there, result = reference (%s)", name,
       s == PK_OK ? info.variant : err);
}

/* ---- a transfer that breaks part way ----------------------------------------------------- */
static void test_read_failure(int have_ocl)
{
    if (!have_ocl) {
        tap_skip("opencl unavailable", "device read failures (4 checks)");
        return;
    }
    pk_run_info info;
    int good;
    char err[1024];
    setenv("PORTKERN_TEST_DEVICE_READ_FAIL", "1", 1);
    setenv("PORTKERN_BACKEND", "opencl", 1);
    /* in place: the download is the only copy of the input, so no fallback may run on it */
    static float f[NX * NY * NZ];
    memcpy(f, d3_in, sizeof f);
    pk_context *ctx = make_ctx(PK_BACKEND_AUTO);
    pk_status s = pk_diffusion3d(ctx, &d3p, NULL, f, &info);
    ok(s != PK_OK && strstr(pk_last_error(), "not retried on another backend") &&
           strstr(pk_last_error(), "clEnqueueReadBuffer"),
       "read fails part way, diffusion3d (in place) under auto: an error, not a fallback onto "
       "the damaged field (%s: %s)", pk_status_name(s), pk_last_error());
    static float img[CH * CW];
    memcpy(img, cv_img, sizeof img);
    s = pk_conv2d(ctx, &cvp, NULL, img, cv_psf, img, &info);
    ok(s != PK_OK && strstr(pk_last_error(), "not retried"),
       "read fails part way, conv2d with out = image under auto: an error, not a fallback (%s)",
       pk_status_name(s));
    pk_context_destroy(ctx);
    /* a separate output: the input is intact, the fallback is safe and right */
    s = run_cv(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend != PK_BACKEND_OPENCL && info.fell_back,
       "read fails part way, conv2d with its own output under auto: fell back to %s, result = "
       "reference (%s)", bname(info.backend), s == PK_OK ? info.reason : err);
    unsetenv("PORTKERN_BACKEND");
    s = run_d3(PK_BACKEND_OPENCL, &info, &good, err, sizeof err);
    ok(s != PK_OK && strstr(err, "clEnqueueReadBuffer"),
       "read fails part way, opencl forced: diffusion3d fails with the failing call named (%s: %s)",
       pk_status_name(s), err);
    unsetenv("PORTKERN_TEST_DEVICE_READ_FAIL");
}

/* ---- magicfilter3d under the same faults ------------------------------------------------ */
/* A small periodic MF; results within the kernel's 1e-13 absolute contract of the reference. */
#define MF_N1 9
#define MF_N2 7
#define MF_N3 5
#define MF_COUNT (MF_N1 * MF_N2 * MF_N3)
static const pk_magicfilter3d_params mfp = {MF_N1, MF_N2, MF_N3, 0, PK_MF_PERIODIC};
static double mf_x[MF_COUNT], mf_ref[MF_COUNT];

static int mf_matches(const double *y)
{
    for (int i = 0; i < MF_COUNT; ++i)
        if (!(fabs(y[i] - mf_ref[i]) <= 1e-13)) return 0;
    return 1;
}

/* Device OOM (forced and under auto) and a read failing part way (y over x: no retry; y
 * apart: fallback), on a device backend that can run. */
static void test_mf_faults(pk_backend_id be, const char *why_absent)
{
    const char *name = bname(be);
    if (why_absent) {
        tap_skip(why_absent, "%s magicfilter3d faults (%d checks)", name,
                 be == PK_BACKEND_OPENCL ? 4 : 2);
        return;
    }
    for (int i = 0; i < MF_COUNT; ++i) mf_x[i] = sin(0.37 * i) + 0.25 * (i % 3);
    pk_magicfilter3d_reference(&mfp, mf_x, mf_ref);
    static double y[MF_COUNT];
    pk_run_info info;
    char want[64];
    snprintf(want, sizeof want, "%s failed (PK_EDEVMEM", name);

    setenv("PORTKERN_TEST_DEVICE_OOM", "1", 1);
    for (int i = 0; i < MF_COUNT; ++i) y[i] = -7.0;
    pk_context *ctx = make_ctx(be);
    pk_status s = pk_magicfilter3d(ctx, &mfp, NULL, mf_x, y, &info);
    int untouched = 1;
    for (int i = 0; i < MF_COUNT; ++i) untouched &= y[i] == -7.0;
    ok(s == PK_EDEVMEM && untouched, "%s forced, device OOM: magicfilter3d -> PK_EDEVMEM, y "
       "untouched (%s: %s)", name, pk_status_name(s), pk_last_error());
    pk_context_destroy(ctx);
    setenv("PORTKERN_BACKEND", name, 1);
    ctx = make_ctx(PK_BACKEND_AUTO);
    s = pk_magicfilter3d(ctx, &mfp, NULL, mf_x, y, &info);
    ok(s == PK_OK && mf_matches(y) && info.backend != be && info.fell_back == 1 &&
           strstr(info.reason, want),
       "%s first under auto, device OOM: magicfilter3d fell back to %s, result = reference "
       "(reason: %s)", name, bname(info.backend), s == PK_OK ? info.reason : pk_last_error());
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    if (be != PK_BACKEND_OPENCL) { /* the read hook is OpenCL's */
        unsetenv("PORTKERN_BACKEND");
        return;
    }

    setenv("PORTKERN_TEST_DEVICE_READ_FAIL", "1", 1);
    ctx = make_ctx(PK_BACKEND_AUTO);
    static double xy[MF_COUNT];
    memcpy(xy, mf_x, sizeof xy);
    s = pk_magicfilter3d(ctx, &mfp, NULL, xy, xy, &info);
    ok(s != PK_OK && strstr(pk_last_error(), "not retried"),
       "read fails part way, magicfilter3d with y = x under auto: an error, not a fallback onto "
       "the damaged x (%s)", pk_status_name(s));
    s = pk_magicfilter3d(ctx, &mfp, NULL, mf_x, y, &info);
    ok(s == PK_OK && mf_matches(y) && info.backend != be && info.fell_back,
       "read fails part way, magicfilter3d with its own y under auto: fell back to %s, result = "
       "reference (%s)", bname(info.backend), s == PK_OK ? info.reason : pk_last_error());
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_TEST_DEVICE_READ_FAIL");
    unsetenv("PORTKERN_BACKEND");
}

/* ---- out of host memory ----------------------------------------------------------------- */
static void test_host_oom(void)
{
    /* 2^20 x 2^20 x 2^10 points: 2 x 2^52 bytes fit in size_t, in no memory. */
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 1 << 20, 1 << 20, 1 << 10, 1);
    static float f[16];
    for (int i = 0; i < 16; ++i) f[i] = 3.0f;
    pk_status s = pk_diffusion3d_reference(&p, f);
    int untouched = 1;
    for (int i = 0; i < 16; ++i) untouched &= f[i] == 3.0f;
    ok(s == PK_ENOMEM && untouched && strstr(pk_last_error(), "allocate"),
       "host OOM: reference on a 2^50-point field -> PK_ENOMEM, nothing written (%s)",
       pk_last_error());
    static const pk_backend_id host[2] = {PK_BACKEND_SERIAL, PK_BACKEND_OPENMP};
    for (int i = 0; i < 2; ++i) {
        pk_context *ctx = make_ctx(host[i]);
        if (!pk_backend_available(ctx, host[i], NULL)) {
            tap_skip("backend unavailable", "host OOM on %s", bname(host[i]));
            pk_context_destroy(ctx);
            continue;
        }
        pk_diffusion3d_plan *plan = NULL;
        s = pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, NULL);
        ok(s == PK_ENOMEM && plan == NULL, "host OOM: %s plan on a 2^50-point field -> PK_ENOMEM "
           "(%s)", bname(host[i]), pk_last_error());
        pk_conv2d_params cp = {1 << 26, 1 << 26, 3, 3, PK_CONV2D_DIRECT};
        float psf[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
        pk_conv2d_plan *cplan = NULL;
        s = pk_conv2d_plan_create(&cplan, ctx, &cp, NULL, psf, NULL);
        ok(s == PK_ENOMEM && cplan == NULL, "host OOM: %s conv2d plan on a 2^52-pixel image -> "
           "PK_ENOMEM (%s)", bname(host[i]), pk_last_error());
        pk_context_destroy(ctx);
    }
}

/* ---- PORTKERN_BACKEND naming an absent backend ----------------------------------------- */
static void test_absent_backend(void)
{
    pk_context *ctx = make_ctx(PK_BACKEND_AUTO);
    pk_backend_id absent = PK_BACKEND_COUNT;
    const char *why = NULL;
    for (int b = PK_BACKEND_CUDA; b >= PK_BACKEND_OPENMP && absent == PK_BACKEND_COUNT; --b)
        if (!pk_backend_available(ctx, (pk_backend_id)b, &why)) absent = (pk_backend_id)b;
    char reason[600];
    snprintf(reason, sizeof reason, "%s", why ? why : "");
    pk_context_destroy(ctx);
    if (absent == PK_BACKEND_COUNT) {
        tap_skip("cuda, opencl and openmp can all run here", "absent backend (5 checks)");
        return;
    }
    const char *name = bname(absent);
    pk_run_info info;
    int good;
    char err[1024];
    pk_status s = run_d3(absent, &info, &good, err, sizeof err);
    ok(s == PK_ENOBACKEND && good && strstr(err, name) && strstr(err, reason),
       "absent %s forced: diffusion3d -> PK_ENOBACKEND with the reason, field untouched (%s)",
       name, err);
    s = run_cv(absent, &info, &good, err, sizeof err);
    ok(s == PK_ENOBACKEND && good, "absent %s forced: conv2d -> PK_ENOBACKEND (%s)", name, err);
    ctx = make_ctx(absent);
    pk_conv2d_plan *cplan = NULL;
    s = pk_conv2d_plan_create(&cplan, ctx, &cvp, NULL, cv_psf, NULL);
    ok(s == PK_ENOBACKEND && cplan == NULL, "absent %s forced: conv2d plan -> PK_ENOBACKEND (%s)",
       name, pk_last_error());
    pk_context_destroy(ctx);
    setenv("PORTKERN_BACKEND", name, 1);
    s = run_d3(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    char note[64];
    snprintf(note, sizeof note, "PORTKERN_BACKEND=%s", name);
    ok(s == PK_OK && good && info.backend != absent && strstr(info.reason, note),
       "PORTKERN_BACKEND=%s (absent): diffusion3d runs %s, result = reference (reason: %s)", name,
       bname(info.backend), s == PK_OK ? info.reason : err);
    s = run_cv(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend != absent && strstr(info.reason, note),
       "PORTKERN_BACKEND=%s (absent): conv2d runs %s, result = reference (reason: %s)", name,
       bname(info.backend), s == PK_OK ? info.reason : err);
    unsetenv("PORTKERN_BACKEND");
}

/* ---- an OpenCL build failure for conv2d ------------------------------------------------- */
static void test_cv_build_failure(int have_ocl)
{
    if (!have_ocl) {
        tap_skip("opencl unavailable", "conv2d build failure (2 checks)");
        return;
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/broken-cache", root);
    setenv("PORTKERN_CACHE_DIR", dir, 1);
    setenv("PORTKERN_TEST_CL_BREAK_BUILD", "1", 1);
    pk_run_info info;
    int good;
    char err[1024];
    pk_status s = run_cv(PK_BACKEND_OPENCL, &info, &good, err, sizeof err);
    ok(s == PK_EBUILD && good && strstr(err, "build log"),
       "broken conv2d build, opencl forced: PK_EBUILD with the build log, output untouched (%s)",
       pk_status_name(s));
    setenv("PORTKERN_BACKEND", "opencl", 1);
    s = run_cv(PK_BACKEND_AUTO, &info, &good, err, sizeof err);
    ok(s == PK_OK && good && info.backend != PK_BACKEND_OPENCL && info.fell_back &&
           strstr(info.reason, "opencl failed (PK_EBUILD"),
       "broken conv2d build, auto: fell back to %s, result = reference (reason: %s)",
       bname(info.backend), s == PK_OK ? info.reason : err);
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_TEST_CL_BREAK_BUILD");
}

/* ---- kernel cache trouble --------------------------------------------------------------- */
static int find_entry(const char *dir, const char *prefix, char *path, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && l > 6 &&
            strcmp(e->d_name + l - 6, ".clbin") == 0) {
            snprintf(path, len, "%s/%s", dir, e->d_name);
            ++n;
        }
    }
    if (d) closedir(d);
    return n;
}

static void cache_run(const char *what)
{
    pk_run_info info;
    int good;
    char err[1024];
    pk_status s = run_d3(PK_BACKEND_OPENCL, &info, &good, err, sizeof err);
    ok(s == PK_OK && good, "%s: opencl diffusion3d right (%s)", what,
       s == PK_OK ? "PK_OK" : err);
}

static void test_cache_faults(int have_ocl)
{
    if (!have_ocl) {
        tap_skip("opencl unavailable", "kernel cache faults (8 checks)");
        return;
    }
    char file[600], dir[600], path[1200];
    snprintf(file, sizeof file, "%s/cache-is-a-file", root);
    FILE *fp = fopen(file, "w");
    if (fp) fclose(fp);
    setenv("PORTKERN_CACHE_DIR", file, 1);
    cache_run("PORTKERN_CACHE_DIR is a regular file");
    struct stat sb;
    ok(stat(file, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0,
       "PORTKERN_CACHE_DIR is a regular file: the file is left alone");

    /* An existing directory where no file can be created: a mode-0500 one, or (permissions
     * do not stop root) /proc/self. */
    snprintf(dir, sizeof dir, "%s/cache-ro", root);
    mkdir(dir, 0700);
    int as_root = geteuid() == 0;
    if (as_root)
        snprintf(dir, sizeof dir, "/proc/self");
    else
        chmod(dir, 0500);
    setenv("PORTKERN_CACHE_DIR", dir, 1);
    snprintf(path, sizeof path, "unwritable cache directory %s", dir);
    cache_run(path);
    ok(find_entry(dir, "diffusion3d-", path, sizeof path) == 0,
       "unwritable cache directory %s: nothing written", dir);
    if (!as_root) chmod(dir, 0700);

    snprintf(dir, sizeof dir, "%s/cache-rw", root);
    setenv("PORTKERN_CACHE_DIR", dir, 1);
    cache_run("fresh cache directory");
    if (find_entry(dir, "diffusion3d-", path, sizeof path) != 1) {
        ok(0, "the fresh cache holds one diffusion3d entry");
        return;
    }
    fp = fopen(path, "w"); /* truncated to 0 bytes */
    if (fp) fclose(fp);
    cache_run("cache entry truncated to 0 bytes");
    ok(stat(path, &sb) == 0 && sb.st_size > 0, "the empty entry was replaced by a whole one");
    remove(path);
    mkdir(path, 0700); /* a directory where the entry should be */
    cache_run("cache entry replaced by a directory");
    DIR *d = opendir(dir);
    int leftovers = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) leftovers += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    ok(leftovers == 0, "no temporary file left beside the directory (%d)", leftovers);
    rmdir(path);
    unsetenv("PORTKERN_CACHE_DIR");
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    chmod(path, 0700);
    remove(path);
    return 0;
}

/* ---- a real out-of-memory on an OpenCL CPU device ---------------------------------------- */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PK_SANITIZED 1
#endif
#endif

#ifndef PK_SANITIZED /* the child runs only without the sanitizers (test_real_oom) */
static long vm_size_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* The child: OpenCL initialised and its kernels built, a 512 MiB field allocated, then the address space
 * capped 256 MiB above what is in use; every call must return, never abort.  Exit status:
 * the number of failed checks (details on stderr). */
static int real_oom_child(void)
{
    pk_context *cl = make_ctx(PK_BACKEND_OPENCL), *au = make_ctx(PK_BACKEND_AUTO);
    const char *why = "";
    if (!pk_backend_available(cl, PK_BACKEND_OPENCL, &why)) {
        fprintf(stderr, "%s\n", why);
        return 77;
    }
    float small[NX * NY * NZ];
    memcpy(small, d3_in, sizeof small);
    if (pk_diffusion3d(cl, &d3p, NULL, small, NULL) != PK_OK) return 100;
    if (pk_diffusion3d(au, &d3p, NULL, small, NULL) != PK_OK) return 100;
    /* the copy kernel built now: PoCL's compiler (LLVM) crashes when it runs out of memory
     * itself, which no library can turn into an error (docs/RELIABILITY.md) */
    double bw = 0;
    if (pk_measure_bandwidth(cl, PK_BACKEND_OPENCL, 0, 1 << 20, 1, &bw) != PK_OK) return 100;
    pk_diffusion3d_params big;
    pk_diffusion3d_params_default(&big, 512, 512, 512, 1);
    const size_t n = (size_t)512 * 512 * 512;
    float *f = malloc(n * sizeof *f); /* untouched: counted in VmSize, costs no RAM */
    const long used = vm_size_bytes();
    if (!f || used < 0) return 100;
    struct rlimit rl = {(rlim_t)used + ((rlim_t)256 << 20), (rlim_t)used + ((rlim_t)256 << 20)};
    if (setrlimit(RLIMIT_AS, &rl) != 0) return 100;
    int bad = 0;
    pk_status s = pk_diffusion3d(cl, &big, NULL, f, NULL);
    if (s != PK_EDEVMEM && s != PK_ENOMEM) {
        fprintf(stderr, "forced opencl diffusion3d 512^3: %s: %s\n", pk_status_name(s),
                pk_last_error());
        ++bad;
    }
    pk_diffusion3d_plan *plan = NULL;
    s = pk_diffusion3d_plan_create(&plan, cl, &big, NULL, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, f);
    pk_diffusion3d_plan_destroy(plan);
    if (s != PK_EDEVMEM && s != PK_ENOMEM) {
        fprintf(stderr, "opencl plan 512^3: %s: %s\n", pk_status_name(s), pk_last_error());
        ++bad;
    }
    s = pk_measure_bandwidth(cl, PK_BACKEND_OPENCL, 0, (size_t)400 << 20, 1, &bw);
    if (s != PK_EDEVMEM && s != PK_ENOMEM && s != PK_ESIZE) {
        fprintf(stderr, "opencl bandwidth 2 x 400 MiB: %s: %s\n", pk_status_name(s),
                pk_last_error());
        ++bad;
    }
    s = pk_diffusion3d(au, &big, NULL, f, NULL); /* may succeed in place (serial) or fail */
    if (s != PK_OK && s != PK_EDEVMEM && s != PK_ENOMEM) {
        fprintf(stderr, "auto diffusion3d 512^3: %s: %s\n", pk_status_name(s), pk_last_error());
        ++bad;
    }
    free(f);
    pk_context_destroy(cl);
    pk_context_destroy(au);
    return bad;
}
#endif /* !PK_SANITIZED */

/* Forks: call it before this process touches OpenCL (PoCL's worker threads are not in a
 * forked child). */
static void test_real_oom(void)
{
    const char *label = "a real out-of-memory on OpenCL (address space capped): forced call, "
                        "plan and bandwidth return a memory error, auto does not crash";
#ifdef PK_SANITIZED
    tap_skip("the sanitizers reserve terabytes of address space: no cap can be set",
             "%s", label);
#else
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload")) {
        tap_skip("under valgrind", "%s", label);
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(real_oom_child());
    int st = 0;
    const int waited = pid > 0 && waitpid(pid, &st, 0) == pid;
    if (waited && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        tap_skip("opencl unavailable", "%s", label);
        return;
    }
    ok(waited && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (%s %d)", label,
       !waited ? "fork/wait failed" : WIFSIGNALED(st) ? "killed by signal" : "exit status",
       !waited ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
#endif
}

int main(void)
{
    const char *top = getenv("top_builddir");
    snprintf(root, sizeof root, "%s/tests/tmp-faults-XXXXXX", top ? top : ".");
    if (!mkdtemp(root)) {
        snprintf(root, sizeof root, "/tmp/pk-faults-XXXXXX");
        if (!mkdtemp(root)) {
            printf("Bail out! cannot create a temporary directory\n");
            return 1;
        }
    }
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    unsetenv("PORTKERN_TEST_DEVICE_READ_FAIL");
    unsetenv("PORTKERN_TEST_CL_BREAK_BUILD");
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache", root);
    setenv("PORTKERN_CACHE_DIR", cache, 1);
    problems_init();

    /* First, before this process touches OpenCL: the child inherits no ICD state. */
    test_no_icd();
    test_real_oom();

    pk_context *ctx = make_ctx(PK_BACKEND_AUTO);
    static const pk_backend_id dev[2] = {PK_BACKEND_OPENCL, PK_BACKEND_CUDA};
    char why[2][600];
    int have[2];
    for (int i = 0; i < 2; ++i) {
        const char *w = NULL;
        have[i] = pk_backend_available(ctx, dev[i], &w);
        snprintf(why[i], sizeof why[i], "%s unavailable: %s", bname(dev[i]), w ? w : "?");
    }
    pk_context_destroy(ctx);

    for (int i = 0; i < 2; ++i) test_device_oom(dev[i], have[i] ? NULL : why[i]);
    test_read_failure(have[0]);
    for (int i = 0; i < 2; ++i) test_mf_faults(dev[i], have[i] ? NULL : why[i]);
    test_host_oom();
    test_absent_backend();
    test_cv_build_failure(have[0]);
    test_cache_faults(have[0]);

    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tap_done();
}
