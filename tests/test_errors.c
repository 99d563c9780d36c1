/* test_errors.c - every validation path of the public API returns its own status code and
 * a detail naming what was wrong; status tables; environment handling. */
#include "portkern.h"
#include "tap.h"

#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static pk_context *ctx;

static void expect(int got, int want, const char *needle, const char *what)
{
    ok(got == want && (!needle || strstr(pk_last_error(), needle)),
       "%s -> %s (got %s: \"%s\")", what, pk_status_name(want), pk_status_name(got), pk_last_error());
}

static pk_diffusion3d_params small(void)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 4, 4, 4, 1);
    return p;
}

int main(void)
{
    float f[64] = {0};
    pk_diffusion3d_params p;
    pk_context_options opt;

    /* status tables */
    int codes_ok = 1;
#define CHECK_CODE_(name, code, text)                                                          \
    codes_ok &= strcmp(pk_strerror(code), text) == 0 && strcmp(pk_status_name(code), "PK_" #name) == 0;
    PK_STATUS_MAP(CHECK_CODE_)
#undef CHECK_CODE_
    ok(codes_ok, "pk_strerror and pk_status_name cover every code of PK_STATUS_MAP");
    ok(strcmp(pk_strerror(-12345), "unknown status code") == 0 &&
           strcmp(pk_status_name(999), "PK_UNKNOWN") == 0, "unknown codes have a text");
    ok(strcmp(pk_version(), PORTKERN_VERSION_STRING) == 0, "pk_version matches the header");

    /* contexts */
    expect(pk_context_create(NULL, NULL), PK_ENULL, "ctx", "pk_context_create(NULL)");
    pk_context_options_init(&opt);
    opt.backend = (pk_backend_id)42;
    expect(pk_context_create(&ctx, &opt), PK_EINVAL, "backend", "backend id 42");
    pk_context_options_init(&opt);
    opt.device = -2;
    expect(pk_context_create(&ctx, &opt), PK_EINVAL, "device", "device -2");
    pk_context_options_init(&opt);
    opt.threads = -1;
    expect(pk_context_create(&ctx, &opt), PK_EINVAL, "threads", "threads -1");
    setenv("PORTKERN_BACKEND", "bogus", 1);
    expect(pk_context_create(&ctx, NULL), PK_EINVAL, "PORTKERN_BACKEND", "PORTKERN_BACKEND=bogus");
    unsetenv("PORTKERN_BACKEND");
    setenv("PORTKERN_DEVICE", "x1", 1);
    expect(pk_context_create(&ctx, NULL), PK_EINVAL, "PORTKERN_DEVICE", "PORTKERN_DEVICE=x1");
    unsetenv("PORTKERN_DEVICE");
    pk_context_destroy(NULL);
    ok(1, "pk_context_destroy(NULL) is a no-op");

    pk_backend_id id;
    expect(pk_backend_from_name("nope", &id), PK_EINVAL, "nope", "backend name 'nope'");
    ok(pk_backend_from_name("OpenMP", &id) == PK_OK && id == PK_BACKEND_OPENMP,
       "backend names are case-insensitive");
    ok(pk_backend_name((pk_backend_id)77) == NULL, "pk_backend_name of a bad id is NULL");

    if (pk_context_create(&ctx, NULL) != PK_OK) {
        printf("Bail out! %s\n", pk_last_error());
        return 1;
    }

    /* diffusion3d arguments */
    p = small();
    expect(pk_diffusion3d(NULL, &p, NULL, f, NULL), PK_ENULL, "ctx", "NULL context");
    expect(pk_diffusion3d(ctx, NULL, NULL, f, NULL), PK_ENULL, "p", "NULL params");
    expect(pk_diffusion3d(ctx, &p, NULL, NULL, NULL), PK_ENULL, "f", "NULL field");
    p = small(); p.nx = 0;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ESIZE, "nx", "nx = 0");
    p = small(); p.ny = -3;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ESIZE, "ny", "ny = -3");
    p = small(); p.nz = INT_MIN;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ESIZE, "nz", "nz = INT_MIN");
    p = small(); p.count = -1;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ESIZE, "count", "count = -1");
    p = small(); p.nx = p.ny = p.nz = INT_MAX;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_EOVERFLOW, "overflow", "INT_MAX^3 field");
    p = small(); p.cc = NAN;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ENONFINITE, "cc", "cc = NaN");
    p = small(); p.ct = -INFINITY;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ENONFINITE, "ct", "ct = -Inf");
    p = small(); p.cw = 1e300;
    expect(pk_diffusion3d(ctx, &p, NULL, f, NULL), PK_ENONFINITE, "cw", "cw = 1e300 (not a float)");
    p = small();
    expect(pk_diffusion3d(ctx, &p, "warp-drive", f, NULL), PK_ENOVARIANT, "warp-drive",
           "unknown variant");
    expect(pk_diffusion3d_reference(NULL, f), PK_ENULL, "p", "reference: NULL params");
    expect(pk_diffusion3d_reference(&p, NULL), PK_ENULL, "f", "reference: NULL field");
    expect(pk_diffusion3d_field(0, 2, 2, 0.0, f), PK_ESIZE, "size", "field: nx = 0");
    expect(pk_diffusion3d_field(2, 2, 2, NAN, f), PK_ENONFINITE, "t", "field: t = NaN");
    expect(pk_diffusion3d_field(2, 2, 2, 0.0, NULL), PK_ENULL, "f", "field: NULL");

    /* a forced backend is strict */
    pk_context *serial_ctx;
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_SERIAL;
    pk_context_create(&serial_ctx, &opt);
    expect(pk_diffusion3d(serial_ctx, &p, "omp-tiled", f, NULL), PK_ENOVARIANT, "serial",
           "variant of another backend on a forced backend");
    pk_context_destroy(serial_ctx);
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_SERIAL;
    opt.device = 3;
    pk_context_create(&serial_ctx, &opt);
    expect(pk_diffusion3d(serial_ctx, &p, NULL, f, NULL), PK_ENODEVICE, "device 3",
           "device index beyond the backend's devices");
    pk_context_destroy(serial_ctx);

    /* A forced backend that cannot run fails cleanly; from the environment it falls back. */
    pk_context *c2;
    const char *why = NULL;
    pk_backend_id absent = PK_BACKEND_COUNT;
    for (int b = PK_BACKEND_CUDA; b >= PK_BACKEND_SERIAL; --b)
        if (!pk_backend_available(ctx, (pk_backend_id)b, &why)) { absent = (pk_backend_id)b; break; }
    if (absent != PK_BACKEND_COUNT) {
        pk_context_options_init(&opt);
        opt.backend = absent;
        pk_context_create(&c2, &opt);
        expect(pk_diffusion3d(c2, &p, NULL, f, NULL), PK_ENOBACKEND, pk_backend_name(absent),
               "forced absent backend");
        pk_context_destroy(c2);
        setenv("PORTKERN_BACKEND", pk_backend_name(absent), 1);
        pk_context_create(&c2, NULL);
        pk_run_info info;
        int s = pk_diffusion3d(c2, &p, NULL, f, &info);
        ok(s == PK_OK && info.backend != absent && strstr(info.reason, "PORTKERN_BACKEND"),
           "PORTKERN_BACKEND=%s (absent) falls back: ran %s (%s)", pk_backend_name(absent),
           pk_backend_name(info.backend), info.reason);
        unsetenv("PORTKERN_BACKEND");
        pk_context_destroy(c2);
        ok(why && *why, "unavailable backend %s says why: %s", pk_backend_name(absent), why);
    } else {
        tap_skip("every backend is available here", "forced absent backend");
        tap_skip("every backend is available here", "environment fallback");
        tap_skip("every backend is available here", "reason of an absent backend");
    }

    /* The run info says what auto tried: every candidate before the chosen one, skipped with
     * why (an absent backend by its reason), then the one chosen. */
    {
        pk_run_info info;
        int s = pk_diffusion3d(ctx, &p, NULL, f, &info);
        char want[64] = "";
        if (absent == PK_BACKEND_CUDA) /* first in auto order */
            snprintf(want, sizeof want, "%s: skipped (", pk_backend_name(absent));
        /* "<backend>: chosen (...)", or "<backend> gpu|cpu: chosen" for OpenCL's two turns */
        int chosen = 0;
        static const char *const kind[3] = {"", " gpu", " cpu"};
        for (int k = 0; k < 3; ++k) {
            char want_chosen[64];
            snprintf(want_chosen, sizeof want_chosen, "%s%s: chosen (",
                     pk_backend_name(info.backend), kind[k]);
            chosen |= s == PK_OK && strstr(info.reason, want_chosen) != NULL;
        }
        ok(chosen && (!want[0] || strstr(info.reason, want)),
           "auto's reason lists the skipped candidates and the chosen one: %s", info.reason);
    }
    /* A device index is honoured or refused, never replaced by device 0: under auto no
     * backend has a device 57, so the call fails naming each candidate; forced, the same. */
    pk_context_options_init(&opt);
    opt.device = 57;
    pk_context_create(&c2, &opt);
    {
        float keep[sizeof f / sizeof f[0]];
        memcpy(keep, f, sizeof keep);
        expect(pk_diffusion3d(c2, &p, NULL, f, NULL), PK_ENODEVICE, "device 57",
               "auto with device 57: PK_ENODEVICE");
        ok(strstr(pk_last_error(), "serial: skipped") && memcmp(keep, f, sizeof keep) == 0,
           "auto with device 57: every candidate named, the field untouched (%s)",
           pk_last_error());
        expect(pk_diffusion3d(c2, &p, "serial", f, NULL), PK_ENODEVICE, "serial device 57",
               "variant serial with device 57: PK_ENODEVICE");
    }
    pk_context_destroy(c2);
    opt.backend = PK_BACKEND_SERIAL;
    pk_context_create(&c2, &opt);
    expect(pk_diffusion3d(c2, &p, NULL, f, NULL), PK_ENODEVICE, "serial device 57",
           "forced serial with device 57: PK_ENODEVICE");
    pk_context_destroy(c2);

    /* plans */
    pk_diffusion3d_plan *plan = NULL;
    expect(pk_diffusion3d_plan_create(NULL, ctx, &p, NULL, NULL), PK_ENULL, "plan", "plan: NULL out");
    p = small(); p.nx = -1;
    expect(pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, NULL), PK_ESIZE, "nx", "plan: nx = -1");
    ok(plan == NULL, "a failed plan_create leaves *plan NULL");
    p = small();
    ok(pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, NULL) == PK_OK, "plan created");
    expect(pk_diffusion3d_plan_run(plan, 1, NULL), PK_ESTATE, "upload", "plan_run before upload");
    expect(pk_diffusion3d_plan_download(plan, f), PK_ESTATE, "upload", "download before upload");
    expect(pk_diffusion3d_plan_upload(plan, NULL), PK_ENULL, "f", "upload NULL");
    expect(pk_diffusion3d_plan_run(NULL, 1, NULL), PK_ENULL, "plan", "plan_run NULL");
    pk_diffusion3d_plan_upload(plan, f);
    expect(pk_diffusion3d_plan_run(plan, -5, NULL), PK_ESIZE, "count", "plan_run count -5");
    pk_diffusion3d_plan_destroy(plan);
    pk_diffusion3d_plan_destroy(NULL);

    /* device queries */
    pk_device_info di;
    double bw;
    expect(pk_device_get_info(ctx, PK_BACKEND_SERIAL, 0, NULL), PK_ENULL, "info", "info NULL");
    expect(pk_device_get_info(ctx, PK_BACKEND_SERIAL, 5, &di), PK_ENODEVICE, "device 5",
           "info of device 5");
    expect(pk_device_get_info(ctx, PK_BACKEND_AUTO, 0, &di), PK_EINVAL, "backend",
           "info of the auto backend");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, 0, 0, -1, &bw), PK_EINVAL, "reps",
           "bandwidth reps -1");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, 0, 100, 1, &bw), PK_ESIZE, "bytes",
           "bandwidth over 100 bytes");
    expect(pk_measure_bandwidth(ctx, PK_BACKEND_SERIAL, 0, 0, 1, NULL), PK_ENULL, "bytes_per_second",
           "bandwidth NULL out");

    /* conv2d arguments */
    {
        float img[12], psf9[9], out[12];
        pk_conv2d_params cp = {3, 4, 3, 3, PK_CONV2D_AUTO}, q;
        pk_conv2d_plan *cplan = NULL;
        for (int i = 0; i < 12; ++i) img[i] = 1.0f + (float)i;
        for (int i = 0; i < 9; ++i) psf9[i] = 1.0f / 9;
        expect(pk_conv2d(NULL, &cp, NULL, img, psf9, out, NULL), PK_ENULL, "ctx", "conv2d: NULL context");
        expect(pk_conv2d(ctx, NULL, NULL, img, psf9, out, NULL), PK_ENULL, "p", "conv2d: NULL params");
        expect(pk_conv2d(ctx, &cp, NULL, NULL, psf9, out, NULL), PK_ENULL, "image", "conv2d: NULL image");
        expect(pk_conv2d(ctx, &cp, NULL, img, NULL, out, NULL), PK_ENULL, "psf", "conv2d: NULL psf");
        expect(pk_conv2d(ctx, &cp, NULL, img, psf9, NULL, NULL), PK_ENULL, "out", "conv2d: NULL out");
        q = cp; q.h = 0;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_ESIZE, "h:", "conv2d: h = 0");
        q = cp; q.w = -1;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_ESIZE, "w:", "conv2d: w = -1");
        q = cp; q.kh = 0;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_ESIZE, "kh", "conv2d: kh = 0");
        q = cp; q.kw = INT_MIN;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_ESIZE, "kw", "conv2d: kw = INT_MIN");
        q = cp; q.h = q.w = INT_MAX;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_EOVERFLOW, "overflow",
               "conv2d: INT_MAX^2 image");
        q = cp; q.w = 2; q.kw = INT_MAX;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_EOVERFLOW, "overflows int",
               "conv2d: w + kw - 1 beyond INT_MAX");
        q = cp; q.method = 3;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_EINVAL, "method", "conv2d: method 3");
        q = cp; q.method = -1;
        expect(pk_conv2d(ctx, &q, NULL, img, psf9, out, NULL), PK_EINVAL, "method", "conv2d: method -1");
        psf9[4] = NAN;
        expect(pk_conv2d(ctx, &cp, NULL, img, psf9, out, NULL), PK_ENONFINITE, "psf[1][1]",
               "conv2d: NaN in the psf");
        psf9[4] = -INFINITY;
        expect(pk_conv2d_reference(&cp, img, psf9, out), PK_ENONFINITE, "psf[1][1]",
               "conv2d reference: -Inf in the psf");
        psf9[4] = 1.0f / 9;
        expect(pk_conv2d(ctx, &cp, "warp-drive", img, psf9, out, NULL), PK_ENOVARIANT, "warp-drive",
               "conv2d: unknown variant");
        /* The image may hold anything: a NaN reaches exactly the outputs whose window sees it. */
        pk_conv2d_params wide = {3, 7, 1, 3, PK_CONV2D_DIRECT};
        float im21[21], p3[3] = {0.25f, 0.5f, 0.25f}, o21[21];
        for (int i = 0; i < 21; ++i) im21[i] = 1.0f;
        im21[7 + 3] = NAN; /* row 1, column 3 */
        int nan_ok = pk_conv2d(ctx, &wide, NULL, im21, p3, o21, NULL) == PK_OK;
        for (int i = 0; i < 21; ++i)
            nan_ok &= (i >= 9 && i <= 11) ? isnan(o21[i]) : o21[i] == 1.0f;
        ok(nan_ok, "conv2d: a NaN pixel of the image reaches only the outputs that see it");
        expect(pk_conv2d_reference(NULL, img, psf9, out), PK_ENULL, "p", "conv2d reference: NULL params");
        expect(pk_conv2d_reference(&cp, img, psf9, NULL), PK_ENULL, "out", "conv2d reference: NULL out");
        expect(pk_conv2d_reference(&cp, img, psf9, img + 2), PK_EINVAL, "overlap",
               "conv2d reference: out overlapping image");

        expect(pk_conv2d_plan_create(NULL, ctx, &cp, NULL, psf9, NULL), PK_ENULL, "plan",
               "conv2d plan: NULL out");
        expect(pk_conv2d_plan_create(&cplan, ctx, &cp, NULL, NULL, NULL), PK_ENULL, "psf",
               "conv2d plan: NULL psf");
        ok(cplan == NULL, "conv2d: a failed plan_create leaves *plan NULL");
        ok(pk_conv2d_plan_create(&cplan, ctx, &cp, NULL, psf9, NULL) == PK_OK, "conv2d plan created");
        expect(pk_conv2d_plan_run(cplan, NULL), PK_ESTATE, "upload", "conv2d plan_run before upload");
        expect(pk_conv2d_plan_upload(cplan, NULL), PK_ENULL, "image", "conv2d upload NULL");
        pk_conv2d_plan_upload(cplan, img);
        expect(pk_conv2d_plan_download(cplan, out), PK_ESTATE, "plan_run",
               "conv2d download of an uploaded frame not yet convolved");
        expect(pk_conv2d_plan_run(NULL, NULL), PK_ENULL, "plan", "conv2d plan_run NULL");
        pk_conv2d_plan_destroy(cplan);
        pk_conv2d_plan_destroy(NULL);

        pk_context *sctx;
        pk_context_options_init(&opt);
        opt.backend = PK_BACKEND_SERIAL;
        pk_context_create(&sctx, &opt);
        expect(pk_conv2d(sctx, &cp, "omp", img, psf9, out, NULL), PK_ENOVARIANT, "serial",
               "conv2d: variant of another backend on a forced backend");
        pk_context_destroy(sctx);
    }

    /* pk_malloc: 64-byte aligned (a valid block for 0 bytes), 2 MiB aligned from 4 MiB on
     * (the huge-page advice's unit), writable end to end; pk_free(NULL) is a no-op */
    {
        void *z = pk_malloc(0), *small = pk_malloc(100), *big = pk_malloc((size_t)5 << 20);
        int fine = z && small && big && (uintptr_t)z % 64 == 0 && (uintptr_t)small % 64 == 0 &&
                   (uintptr_t)big % ((uintptr_t)2 << 20) == 0;
        if (big) memset(big, 1, (size_t)5 << 20);
        if (small) memset(small, 1, 100);
        pk_free(z);
        pk_free(small);
        pk_free(big);
        pk_free(NULL);
        ok(fine, "pk_malloc: 0, 100 and 5 MiB bytes: 64-byte aligned, the large one 2 MiB aligned");
    }

    pk_context_destroy(ctx);
    return tap_done();
}
