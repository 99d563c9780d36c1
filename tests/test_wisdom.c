/* test_wisdom.c - wisdom (lib/portkern.h, "Wisdom"; lib/wisdom.c, lib/wisdom_store.c):
 *
 *  - an entry makes auto pick its backend, device and variant (info.variant, the reason
 *    "wisdom: ..."), for diffusion3d on OpenMP, serial and OpenCL and for magicfilter3d on
 *    serial, and the result equals the serial reference; a forced backend or a named variant
 *    is not overridden; conv2d takes it only with method auto; an entry whose plan fails
 *    (OpenCL out of device memory) is followed by the auto order, fell_back 1;
 *  - stale entries (other device name, compute units, library version, an unknown variant)
 *    are ignored with the reason; the nearest size class is chosen, none beyond a factor of 8
 *    (exactly 8 still applies);
 *  - corrupt files (truncated at every byte, wrong types, deep nesting, huge strings, NUL
 *    bytes, another format version, ...) are ignored with the reason in pk_wisdom_note and in
 *    the run info, the context's entries unchanged, nothing crashes;
 *  - save then load round-trips every field; save merges with the file, replaces the same
 *    key, refuses to overwrite what is not wisdom; two processes saving different entries at
 *    once both survive in a valid file;
 *  - PORTKERN_WISDOM points at a file (loaded lazily on the first auto call), "0" and ""
 *    disable it, PK_OPT_IGNORE_ENV ignores it; the default path under XDG_CACHE_HOME or HOME
 *    (directories created); pk_wisdom_forget; adding wisdom releases the kept plans.
 */
#define _XOPEN_SOURCE 700
#include "portkern.h"
#include "wisdom_equal.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static pk_context *context(unsigned flags, pk_backend_id backend)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.flags = flags;
    o.backend = backend;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        exit(1);
    }
    return ctx;
}

/* An entry of the context's device of `backend`, as a tuner would make it. */
static pk_wisdom_entry entry(pk_context *ctx, pk_backend_id backend, const char *kernel,
                             const char *variant, const char *size_class, double size_bytes,
                             double seconds)
{
    pk_wisdom_entry e;
    if (pk_wisdom_entry_init(ctx, backend, 0, &e) != PK_OK) {
        printf("Bail out! pk_wisdom_entry_init: %s\n", pk_last_error());
        exit(1);
    }
    snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
    snprintf(e.variant, sizeof e.variant, "%s", variant);
    snprintf(e.size_class, sizeof e.size_class, "%s", size_class);
    e.size_bytes = size_bytes;
    e.seconds = seconds;
    snprintf(e.runners_up, sizeof e.runners_up, "others 1.50x");
    return e;
}

static void add(pk_context *ctx, const pk_wisdom_entry *e)
{
    if (pk_wisdom_add(ctx, e) != PK_OK) {
        printf("Bail out! pk_wisdom_add: %s\n", pk_last_error());
        exit(1);
    }
}

/* diffusion3d n^3, 2 steps, auto; 1 when the result equals the reference. */
static int run_d3(pk_context *ctx, int n, pk_run_info *info)
{
    const size_t count = (size_t)n * n * n;
    float *f = malloc(count * sizeof *f), *r = malloc(count * sizeof *r);
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, n, n, n, 2);
    pk_diffusion3d_field(n, n, n, 0, f);
    memcpy(r, f, count * sizeof *f);
    memset(info, 0, sizeof *info);
    int good = pk_diffusion3d(ctx, &p, NULL, f, info) == PK_OK &&
               pk_diffusion3d_reference(&p, r) == PK_OK;
    for (size_t i = 0; good && i < count; ++i)
        good = fabsf(f[i] - r[i]) <= 1e-5f * (fabsf(r[i]) + 1e-3f);
    if (!good && !info->reason[0]) snprintf(info->reason, sizeof info->reason, "%s", pk_last_error());
    free(f);
    free(r);
    return good;
}

static double d3_bytes(int n) { return 8.0 * n * n * n; } /* two float fields */

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        printf("Bail out! cannot write %s\n", path);
        exit(1);
    }
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        b = realloc(b, (cap *= 2) + 1);
    }
    fclose(f);
    b[n] = '\0';
    if (len) *len = n;
    return b;
}

/* ---- auto takes the entry ------------------------------------------------------------- */
static void picks(int have_omp)
{
    pk_run_info info;
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    int good = run_d3(ctx, 16, &info);
    ok(good && !strstr(info.reason, "wisdom") && info.plan_bytes == d3_bytes(16),
       "no wisdom (PK_OPT_IGNORE_ENV): auto runs %s %s, the reason does not mention wisdom, "
       "plan_bytes %.0f (%s)", pk_backend_name(info.backend), info.variant, info.plan_bytes,
       info.reason);
    const char *default_variant = have_omp ? "omp-tb" : "serial";

    if (have_omp) {
        pk_wisdom_entry e = entry(ctx, PK_BACKEND_OPENMP, "diffusion3d", "omp-tiled", "16^3",
                                  d3_bytes(16), 1e-3);
        add(ctx, &e);
        good = run_d3(ctx, 16, &info);
        ok(good && info.backend == PK_BACKEND_OPENMP && !strcmp(info.variant, "omp-tiled") &&
               strstr(info.reason, "openmp: chosen (wisdom: omp-tiled on ") &&
               strstr(info.reason, e.date) && !info.fell_back,
           "diffusion3d: an OpenMP entry makes auto run omp-tiled, right (%s)", info.reason);
    } else {
        tap_skip("OpenMP unavailable", "diffusion3d: an OpenMP entry makes auto run omp-tiled");
    }
    /* the serial device's entry at the same size, faster: the fastest applicable wins */
    pk_wisdom_entry s = entry(ctx, PK_BACKEND_SERIAL, "diffusion3d", "serial", "16^3",
                              d3_bytes(16), 0.5e-3);
    add(ctx, &s);
    good = run_d3(ctx, 16, &info);
    ok(good && info.backend == PK_BACKEND_SERIAL && !strcmp(info.variant, "serial") &&
           strstr(info.reason, "serial: chosen (wisdom: serial on "),
       "diffusion3d: a faster serial entry at the same size makes auto run serial (%s)",
       info.reason);
    ok(pk_wisdom_count(ctx) == (have_omp ? 2 : 1), "pk_wisdom_count: %d entries",
       pk_wisdom_count(ctx));

    /* a caller-forced backend and a named variant are not overridden */
    {
        pk_context *forced = context(PK_OPT_IGNORE_ENV,
                                     have_omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL);
        pk_wisdom_entry e = entry(forced, have_omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL,
                                  "diffusion3d", have_omp ? "omp" : "serial", "16^3",
                                  d3_bytes(16), 1e-4);
        add(forced, &e);
        good = run_d3(forced, 16, &info);
        ok(good && !strcmp(info.variant, default_variant) && !strstr(info.reason, "wisdom"),
           "a forced backend runs its own first variant, not wisdom's (%s: %s)", info.variant,
           info.reason);
        pk_context_destroy(forced);
        const size_t count = 16 * 16 * 16;
        float *f = calloc(count, sizeof *f);
        pk_diffusion3d_params p;
        pk_diffusion3d_params_default(&p, 16, 16, 16, 1);
        pk_status st = pk_diffusion3d(ctx, &p, default_variant, f, &info);
        ok(st == PK_OK && !strcmp(info.variant, default_variant) && !strstr(info.reason, "wisdom"),
           "a named variant is run, not wisdom's (%s: %s)", info.variant, info.reason);
        free(f);
    }

    /* magicfilter3d: the serial backend's 'unrolled', which auto never picks by itself */
    {
        pk_magicfilter3d_params p = {12, 10, 9, 0, PK_MF_PERIODIC};
        size_t in[3], out[3];
        pk_magicfilter3d_shapes(&p, in, out);
        const size_t n = in[0] * in[1] * in[2];
        double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *r = malloc(n * sizeof *r);
        for (size_t i = 0; i < n; ++i) x[i] = (double)((i * 37u) % 101u) / 101.0 - 0.5;
        pk_status st = pk_magicfilter3d(ctx, &p, NULL, x, y, &info);
        const double bytes = info.plan_bytes;
        ok(st == PK_OK && strcmp(info.variant, "unrolled") &&
               strstr(info.reason, "wisdom: none for magicfilter3d at this size"),
           "magicfilter3d without an entry of its own: %s, reason says none (%s)", info.variant,
           info.reason);
        char key[64];
        snprintf(key, sizeof key, "%s", info.wisdom_key);
        pk_wisdom_entry e = entry(ctx, PK_BACKEND_SERIAL, "magicfilter3d", "unrolled",
                                  "12x10x9", bytes, 1e-4);
        snprintf(e.params, sizeof e.params, "bc=%d,transpose=1", PK_MF_PERIODIC); /* MFT's */
        add(ctx, &e);
        st = pk_magicfilter3d(ctx, &p, NULL, x, y, &info);
        ok(st == PK_OK && !strcmp(key, "bc=0,transpose=0") && strcmp(info.variant, "unrolled") &&
               strstr(info.reason, "1 of other shapes than 'bc=0,transpose=0'"),
           "magicfilter3d: an entry measured on MFT is not taken for MF (key '%s'; %s)", key,
           info.reason);
        snprintf(e.params, sizeof e.params, "%s", key);
        add(ctx, &e);
        st = pk_magicfilter3d(ctx, &p, NULL, x, y, &info);
        pk_magicfilter3d_reference(&p, x, r);
        double err = 0;
        for (size_t i = 0; i < n; ++i) err = fmax(err, fabs(y[i] - r[i]));
        ok(st == PK_OK && info.backend == PK_BACKEND_SERIAL && !strcmp(info.variant, "unrolled") &&
               strstr(info.reason, "wisdom: unrolled on ") && err < 1e-12,
           "magicfilter3d: a serial entry makes auto run unrolled, right (max error %.1e; %s)",
           err, info.reason);
        free(x);
        free(y);
        free(r);
    }

    /* conv2d: with method auto the entry applies; a method the caller chose is not overridden */
    {
        pk_conv2d_params p = {32, 32, 5, 5, PK_CONV2D_AUTO};
        float *img = calloc(32 * 32, sizeof *img), *psf = calloc(25, sizeof *psf),
              *o = calloc(32 * 32, sizeof *o);
        psf[12] = 1;
        pk_status st = pk_conv2d(ctx, &p, NULL, img, psf, o, &info);
        pk_wisdom_entry e = entry(ctx, PK_BACKEND_SERIAL, "conv2d", "naive", "32x32/5x5",
                                  info.plan_bytes, 1e-4);
        snprintf(e.params, sizeof e.params, "%s", info.wisdom_key);
        ok(!strcmp(info.wisdom_key, "psf=5x5"), "conv2d's wisdom key is its PSF size ('%s')",
           info.wisdom_key);
        add(ctx, &e);
        st = pk_conv2d(ctx, &p, NULL, img, psf, o, &info);
        ok(st == PK_OK && !strcmp(info.variant, "naive") && strstr(info.reason, "wisdom: naive"),
           "conv2d method auto: a serial entry makes auto run naive (%s)", info.reason);
        p.method = PK_CONV2D_DIRECT;
        st = pk_conv2d(ctx, &p, NULL, img, psf, o, &info);
        ok(st == PK_OK && strcmp(info.variant, "naive") && !strstr(info.reason, "wisdom"),
           "conv2d method direct: wisdom not used (%s: %s)", info.variant, info.reason);
        free(img);
        free(psf);
        free(o);
    }
    pk_context_destroy(ctx);
}

/* ---- an entry's tuning parameters ------------------------------------------------------- */
/* magicfilter3d on ctx with the entry's tuning text; 1 when it ran right (reason in info). */
static int mf_tuned(pk_context *ctx, const char *tuning, pk_run_info *info)
{
    pk_magicfilter3d_params p = {12, 10, 9, 0, PK_MF_PERIODIC};
    size_t in[3], out[3];
    pk_magicfilter3d_shapes(&p, in, out);
    const size_t n = in[0] * in[1] * in[2];
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; ++i) x[i] = (double)((i * 37u) % 101u) / 101.0 - 0.5;
    pk_status st = pk_magicfilter3d(ctx, &p, NULL, x, y, info); /* its size and key */
    pk_wisdom_entry e = entry(ctx, PK_BACKEND_SERIAL, "magicfilter3d", "simd", "12x10x9",
                              info->plan_bytes, 1e-4);
    snprintf(e.params, sizeof e.params, "%s", info->wisdom_key);
    snprintf(e.tuning, sizeof e.tuning, "%s", tuning);
    add(ctx, &e);
    if (st == PK_OK) st = pk_magicfilter3d(ctx, &p, NULL, x, y, info);
    pk_magicfilter3d_reference(&p, x, r);
    double err = 0;
    for (size_t i = 0; i < n; ++i) err = fmax(err, fabs(y[i] - r[i]));
    free(x);
    free(y);
    free(r);
    return st == PK_OK && err < 1e-12;
}

static void tuned(int have_omp)
{
    pk_run_info info;
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    int good = mf_tuned(ctx, "magicfilter3d.isa=generic", &info);
    ok(good && !strcmp(info.variant, "simd") &&
           strstr(info.reason, "tuning from wisdom: magicfilter3d.isa=generic"),
       "an entry's tuning applies: the reason names it (%s)", info.reason);
    pk_context_destroy(ctx);

    ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_status s = pk_context_set_param(ctx, "magicfilter3d.isa", "avx2");
    good = mf_tuned(ctx, "magicfilter3d.isa=generic", &info);
    ok(s == PK_OK && good && !strcmp(info.variant, "simd") && !strstr(info.reason, "from wisdom") &&
           strstr(info.reason, "tuning kept (set by the caller or the environment): "
                               "magicfilter3d.isa"),
       "the caller's value beats the entry's (%s)", info.reason);
    pk_context_destroy(ctx);

    static const struct {
        const char *tuning, *want;
    } bad[] = {
        {"magicfilter3d.isa=sse9", "got 'sse9'"},
        {"magicfilter3d.nope=1", "unknown tuning parameter 'magicfilter3d.nope'"},
        {"su3.isa=avx2", "not a parameter of magicfilter3d"},
        {"magicfilter3d.isa", "expected NAME=VALUE"},
        {"magicfilter3d.isa=generic;;", "expected NAME=VALUE"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
        good = mf_tuned(ctx, bad[k].tuning, &info);
        ok(good && !strstr(info.reason, "chosen (wisdom") &&
               strstr(info.reason, "ignored: 1 of bad tuning") && strstr(info.reason, bad[k].want),
           "tuning '%s': the entry is ignored with the reason (%s)", bad[k].tuning, info.reason);
        pk_context_destroy(ctx);
    }

    /* conv2d.fft_taps from wisdom: the method's threshold moves, the FFT runs at 5 x 5 */
    if (have_omp) {
        ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
        pk_conv2d_params p = {32, 32, 5, 5, PK_CONV2D_AUTO};
        float *img = calloc(32 * 32, sizeof *img), *psf = calloc(25, sizeof *psf),
              *o = calloc(32 * 32, sizeof *o);
        psf[12] = 1;
        img[100] = 1;
        pk_status st = pk_conv2d(ctx, &p, NULL, img, psf, o, &info);
        pk_wisdom_entry e = entry(ctx, PK_BACKEND_OPENMP, "conv2d", "omp", "32x32/5x5",
                                  info.plan_bytes, 1e-4);
        snprintf(e.params, sizeof e.params, "%s", info.wisdom_key);
        snprintf(e.tuning, sizeof e.tuning, "conv2d.fft_taps=4");
        add(ctx, &e);
        if (st == PK_OK) st = pk_conv2d(ctx, &p, NULL, img, psf, o, &info);
        ok(st == PK_OK && !strcmp(info.variant, "fft") && fabs(o[100] - 1) < 1e-5 &&
               strstr(info.reason, "tuning from wisdom: conv2d.fft_taps=4"),
           "conv2d.fft_taps=4 from wisdom: the FFT runs at 25 taps (%s: %s)", info.variant,
           info.reason);
        free(img);
        free(psf);
        free(o);
        pk_context_destroy(ctx);
    }
}

/* ---- an entry whose plan fails: the auto order follows ----------------------------------- */
static void falls_back(void)
{
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    const char *why = "";
    if (!pk_backend_available(ctx, PK_BACKEND_OPENCL, &why) ||
        pk_device_count(ctx, PK_BACKEND_OPENCL) < 1) {
        char text[600];
        snprintf(text, sizeof text, "OpenCL unavailable: %s", why);
        tap_skip(text, "an OpenCL entry runs there");
        tap_skip(text, "an OpenCL entry whose plan fails: the auto order follows");
        pk_context_destroy(ctx);
        return;
    }
    /* the OpenCL device auto would not pick (no GPU here: OpenMP comes first) */
    char variant[32];
    snprintf(variant, sizeof variant, "%s", pk_diffusion3d_variants(PK_BACKEND_OPENCL));
    variant[strcspn(variant, ",")] = '\0';
    pk_wisdom_entry e = entry(ctx, PK_BACKEND_OPENCL, "diffusion3d", variant, "16^3",
                              d3_bytes(16), 1e-3);
    add(ctx, &e);
    pk_run_info info;
    int good = run_d3(ctx, 16, &info);
    ok(good && info.backend == PK_BACKEND_OPENCL && !strcmp(info.variant, variant) &&
           strstr(info.reason, "opencl: chosen (wisdom: ") && !info.fell_back,
       "an OpenCL entry runs there, right (%s)", info.reason);
    /* every OpenCL buffer fails now: the entry's plan cannot be made */
    pk_context_release_cache(ctx);
    setenv("PORTKERN_TEST_DEVICE_OOM", "1", 1);
    good = run_d3(ctx, 16, &info);
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    char want[96];
    snprintf(want, sizeof want, "wisdom: %s on opencl %d failed (PK_EDEVMEM", variant, e.device);
    ok(good && info.backend != PK_BACKEND_OPENCL && info.fell_back == 1 &&
           strstr(info.reason, want) && strstr(info.reason, "chosen (first usable backend"),
       "an OpenCL entry whose plan fails: the auto order follows, fell_back 1, right (%s: %s)",
       pk_backend_name(info.backend), info.reason);
    pk_context_destroy(ctx);
}

/* ---- stale entries and the nearest size ---------------------------------------------------- */
static void stale_and_sizes(int have_omp)
{
    const pk_backend_id b = have_omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL;
    const char *other = have_omp ? "omp-tiled" : "serial";
    pk_run_info info;
    struct {
        const char *what, *want;
        int field;
    } stale[] = {
        {"another device name", "1 of devices not here", 0},
        {"other compute units", "1 of devices not here", 1},
        {"another library version", "1 of library 0.0.1", 2},
        {"a variant unknown here", "1 of variants unknown here", 3},
    };
    for (int k = 0; k < 4; ++k) {
        pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
        pk_wisdom_entry e = entry(ctx, b, "diffusion3d", other, "16^3", d3_bytes(16), 1e-3);
        if (stale[k].field == 0) snprintf(e.device_name, sizeof e.device_name, "Another CPU");
        if (stale[k].field == 1) e.compute_units += 7;
        if (stale[k].field == 2) snprintf(e.version, sizeof e.version, "0.0.1");
        if (stale[k].field == 3) snprintf(e.variant, sizeof e.variant, "omp-warp");
        add(ctx, &e);
        int good = run_d3(ctx, 16, &info);
        ok(good && !info.fell_back && !strstr(info.reason, "chosen (wisdom") &&
               strstr(info.reason, "wisdom: none for diffusion3d at this size (ignored: ") &&
               strstr(info.reason, stale[k].want),
           "an entry of %s is ignored, with the reason (%s: %s)", stale[k].what, info.variant,
           info.reason);
        pk_context_destroy(ctx);
    }
    if (!have_omp) {
        tap_skip("OpenMP unavailable", "nearest size class");
        return;
    }
    /* entries at 1/4 and 2 times a 16^3 call's size */
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry a = entry(ctx, b, "diffusion3d", "omp-tiled", "quarter", d3_bytes(16) / 4, 1e-3);
    pk_wisdom_entry c = entry(ctx, b, "diffusion3d", "omp", "double", d3_bytes(16) * 2, 1e-3);
    add(ctx, &a);
    add(ctx, &c);
    int good = run_d3(ctx, 16, &info);
    ok(good && !strcmp(info.variant, "omp") && strstr(info.reason, "size double"),
       "16^3: the nearest entry in log scale (2x larger, not 4x smaller) applies (%s)", info.reason);
    good = run_d3(ctx, 8, &info); /* 1/8: quarter is 2x away, double 16x */
    ok(good && !strcmp(info.variant, "omp-tiled") && strstr(info.reason, "size quarter"),
       "8^3: the quarter entry (2x) applies, not the one 16x away (%s)", info.reason);
    good = run_d3(ctx, 32, &info); /* 8x: double is 4x away, quarter 32x */
    ok(good && !strcmp(info.variant, "omp") && strstr(info.reason, "size double"),
       "32^3: the double entry (4x) applies (%s)", info.reason);
    good = run_d3(ctx, 64, &info); /* 64x: double is 32x away */
    ok(good && !strcmp(info.variant, "omp-tb") &&
           strstr(info.reason, "wisdom: none for diffusion3d at this size (nearest 'double' 32x smaller)"),
       "64^3: no entry within a factor of 8, the reason names the nearest (%s)", info.reason);
    pk_wisdom_forget(ctx);
    pk_wisdom_entry eight = entry(ctx, b, "diffusion3d", "omp", "eight", d3_bytes(16) * 8, 1e-3);
    add(ctx, &eight);
    good = run_d3(ctx, 16, &info);
    ok(good && !strcmp(info.variant, "omp"), "an entry exactly 8x larger still applies (%s)",
       info.reason);
    eight.size_bytes = d3_bytes(16) * 8.01;
    add(ctx, &eight); /* same key: replaces */
    good = run_d3(ctx, 16, &info);
    ok(good && pk_wisdom_count(ctx) == 1 && !strcmp(info.variant, "omp-tb") &&
           strstr(info.reason, "wisdom: none"),
       "8.01x larger does not; the add replaced the entry of the same key (%d entries; %s)",
       pk_wisdom_count(ctx), info.reason);
    pk_context_destroy(ctx);
}

/* ---- corrupt files -------------------------------------------------------------------------- */
/* The valid text with one "key": value pair in its entry: replacing the value of that key
 * where the entry has it, else (an extra key, a key twice) put first in the entry. */
static void with_pair(const char *v, const char *pair, char *out, size_t len)
{
    char key[64];
    const char *colon = strchr(pair, ':');
    snprintf(key, sizeof key, "%.*s:", (int)(colon - pair), pair);
    const char *at = strstr(v, key);
    if (!at || strstr(pair + 1, key)) { /* not in the entry, or the case repeats it */
        at = strstr(v, "{\"kernel\"") + 1;
        snprintf(out, len, "%.*s%s, %s", (int)(at - v), v, pair, at);
        return;
    }
    /* the value ends at the ',' or '}' after it (the valid text's values hold neither) */
    const char *end = at + strlen(key);
    while (*end != ',' && *end != '}') ++end;
    snprintf(out, len, "%.*s%s%s", (int)(at - v), v, pair, end);
}

static const char *valid_text(void)
{
    return "{\"portkern_wisdom\": 1, \"entries\": [\n"
           "  {\"kernel\": \"diffusion3d\", \"backend\": \"serial\", \"device\": 0, "
           "\"device_name\": \"Some CPU\", \"driver\": \"serial C99 reference\", "
           "\"compute_units\": 1, \"version\": \"0.1.0\", \"size_class\": \"paper\", "
           "\"size_bytes\": 134217728, \"variant\": \"serial\", \"params\": \"\", "
           "\"seconds\": 0.25, \"runners_up\": \"omp 0.50x\", \"date\": \"2026-01-31T12:00:00Z\"}\n"
           "]}\n";
}

/* Load text as a file into a context holding one entry: PK_EFORMAT, the note set, the entry
 * still the only one. */
static int rejected(const char *text, size_t len, char *why, size_t why_len)
{
    char path[300];
    path_in(path, sizeof path, "corrupt.json");
    write_file(path, text, len);
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry e = entry(ctx, PK_BACKEND_SERIAL, "su3", "serial", "x", 1e6, 1);
    add(ctx, &e);
    pk_status s = pk_wisdom_load(ctx, path);
    snprintf(why, why_len, "%s / %s", pk_status_name(s), pk_wisdom_note(ctx));
    int good = s == PK_EFORMAT && pk_wisdom_note(ctx)[0] && pk_wisdom_count(ctx) == 1 &&
               strstr(pk_last_error(), "wisdom file ignored");
    pk_context_destroy(ctx);
    return good;
}

static void corrupt(void)
{
    char why[400];
    const char *v = valid_text();
    const size_t vlen = strlen(v);
    {
        char path[300];
        path_in(path, sizeof path, "valid.json");
        write_file(path, v, vlen);
        pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
        pk_wisdom_entry e;
        pk_status s = pk_wisdom_load(ctx, path);
        ok(s == PK_OK && pk_wisdom_count(ctx) == 1 && pk_wisdom_get(ctx, 0, &e) == PK_OK &&
               e.backend == PK_BACKEND_SERIAL && e.size_bytes == 134217728.0 &&
               e.seconds == 0.25 && !strcmp(e.runners_up, "omp 0.50x") && !e.tuning[0] &&
               !pk_wisdom_note(ctx)[0],
           "the hand-written valid file (of before the tuning field) loads, tuning '' (%s)",
           pk_last_error());
        pk_context_destroy(ctx);
    }
    /* every truncation of the valid file, from 0 bytes to one short of the closing brace */
    int all = 1, first_bad = -1;
    const size_t close_at = (size_t)(strrchr(v, '}') - v);
    for (size_t n = 0; n <= close_at; ++n)
        if (!rejected(v, n, why, sizeof why) && all) all = 0, first_bad = (int)n;
    ok(all, "every one of the %zu truncations is ignored with the reason (first failure: %d)",
       close_at + 1, first_bad);

    static const struct {
        const char *what, *text, *want;
    } cases[] = {
        {"wrong type: seconds a string", "\"seconds\": \"fast\"", "seconds: expected a number"},
        {"wrong type: device_name a number", "\"device_name\": 7", "must be a string"},
        {"wrong type: compute_units 2.5", "\"compute_units\": 2.5", "whole number"},
        {"backend auto", "\"backend\": \"auto\"", "not serial, openmp"},
        {"negative size_bytes", "\"size_bytes\": -1", "size_bytes"},
        {"number out of range", "\"size_bytes\": 1e400", "out of range"},
        {"NaN", "\"seconds\": NaN", "expected a number"},
        {"leading zero", "\"seconds\": 01", "expected ',' or '}'"},
        {"a nested object", "\"extra\": {\"a\": 1}", "unknown key's value"},
        {"a nested array", "\"extra\": [1]", "unknown key's value"},
        {"true", "\"extra\": true", "unknown key's value"},
        {"a key twice", "\"variant\": \"serial\", \"variant\": \"serial\"", "given twice"},
        {"\\u0000", "\"params\": \"a\\u0000b\"", "\\u0000"},
        {"a lone surrogate", "\"params\": \"\\udc00\"", "surrogate"},
        {"a bad escape", "\"params\": \"\\x41\"", "unknown escape"},
        {"a tab in a string", "\"params\": \"a\tb\"", "control character"},
        {"an escaped newline in a field", "\"params\": \"a\\nb\"", "control character"},
        {"an empty variant", "\"variant\": \"\"", "must not be empty"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        char text[2048];
        with_pair(v, cases[k].text, text, sizeof text);
        int good = rejected(text, strlen(text), why, sizeof why);
        ok(good && strstr(why, cases[k].want), "%s: ignored (%s)", cases[k].what, why);
    }

    static const struct {
        const char *what, *text, *want;
    } whole[] = {
        {"an empty file", "", "empty file"},
        {"white space only", " \n\t ", "not a wisdom file"},
        {"a top-level array", "[1, 2]", "not a wisdom file"},
        {"another format version", "{\"portkern_wisdom\": 2, \"entries\": []}", "format version 2"},
        {"format version a string", "{\"portkern_wisdom\": \"1\", \"entries\": []}", "expected a number"},
        {"no entries key", "{\"portkern_wisdom\": 1}", "no \"entries\""},
        {"no format key", "{\"entries\": []}", "no \"portkern_wisdom\""},
        {"entries an object", "{\"portkern_wisdom\": 1, \"entries\": {}}", "must be an array"},
        {"an entry a number", "{\"portkern_wisdom\": 1, \"entries\": [1]}", "must be an object"},
        {"a trailing comma", "{\"portkern_wisdom\": 1, \"entries\": [],}", "expected a key"},
        {"garbage after the object", "{\"portkern_wisdom\": 1, \"entries\": []} x", "after the object"},
        {"two objects", "{\"portkern_wisdom\": 1, \"entries\": []}{}", "after the object"},
        {"a missing field", "{\"portkern_wisdom\": 1, \"entries\": [{\"kernel\": \"su3\"}]}", "is missing"},
        {"a BOM", "\xef\xbb\xbf{\"portkern_wisdom\": 1, \"entries\": []}", "not a wisdom file"},
        {"single quotes", "{'portkern_wisdom': 1, 'entries': []}", "expected a key"},
    };
    for (size_t k = 0; k < sizeof whole / sizeof whole[0]; ++k) {
        int good = rejected(whole[k].text, strlen(whole[k].text), why, sizeof why);
        ok(good && strstr(why, whole[k].want), "%s: ignored (%s)", whole[k].what, why);
    }
    {
        /* NUL bytes: inside a string, and after the object */
        char text[2048];
        memcpy(text, v, vlen);
        char *at = strstr(text, "Some CPU");
        at[4] = '\0';
        int good = rejected(text, vlen, why, sizeof why);
        ok(good && strstr(why, "control character 0x00"), "a NUL byte in a string: ignored (%s)", why);
        memcpy(text, v, vlen);
        text[vlen] = '\0';
        good = rejected(text, vlen + 1, why, sizeof why);
        ok(good && strstr(why, "byte 0x00 after the object"), "a NUL byte after the object: ignored (%s)",
           why);
    }
    {
        /* deep nesting: a million brackets where an entry should be */
        const size_t depth = 1000000;
        char *text = malloc(depth + 64);
        size_t n = (size_t)sprintf(text, "{\"portkern_wisdom\": 1, \"entries\": [");
        memset(text + n, '[', depth - n);
        int good = rejected(text, depth, why, sizeof why);
        ok(good && strstr(why, "must be an object"), "a million nested brackets: ignored (%s)", why);
        n = (size_t)sprintf(text, "{\"portkern_wisdom\": 1, \"x\": ");
        memset(text + n, '{', depth - n);
        good = rejected(text, depth, why, sizeof why);
        ok(good && strstr(why, "unknown key's value"), "a million nested braces in a value: ignored (%s)",
           why);
        free(text);
    }
    {
        /* huge strings: a field longer than its array, an unknown key's value of 5000 bytes,
         * a file over the size limit */
        char text[16384];
        char name[201];
        memset(name, 'A', 200);
        name[200] = '\0';
        const char *at = strstr(v, "Some CPU");
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - v), v, name, at + 8);
        int good = rejected(text, strlen(text), why, sizeof why);
        ok(good && strstr(why, "device_name: string longer than 127 bytes"),
           "a 200-byte device name: ignored (%s)", why);
        char big[5001];
        memset(big, 'b', 5000);
        big[5000] = '\0';
        snprintf(text, sizeof text, "{\"portkern_wisdom\": 1, \"note\": \"%s\", \"entries\": []}", big);
        good = rejected(text, strlen(text), why, sizeof why);
        ok(good && strstr(why, "string longer than 1023 bytes"),
           "a 5000-byte unknown value: ignored (%s)", why);
        const size_t huge = PK_WISDOM_MAX_FILE_BYTES + 100;
        char *h = malloc(huge);
        memset(h, ' ', huge);
        memcpy(h, v, vlen);
        good = rejected(h, huge, why, sizeof why);
        ok(good && strstr(why, "larger than"), "a file over %d bytes: ignored (%s)",
           PK_WISDOM_MAX_FILE_BYTES, why);
        free(h);
    }
    {
        /* unknown keys with scalar values are allowed (later fields); an unknown escape-laden
         * but valid string too */
        char text[4096];
        const char *at = strstr(v, "{\"kernel\"") + 1;
        snprintf(text, sizeof text, "%.*s\"tile\": 32, \"note\": \"\\u00e9\\ud83d\\ude00\\\"\", %s",
                 (int)(at - v), v, at);
        char path[300];
        path_in(path, sizeof path, "extra.json");
        write_file(path, text, strlen(text));
        pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
        pk_status s = pk_wisdom_load(ctx, path);
        ok(s == PK_OK && pk_wisdom_count(ctx) == 1, "unknown keys with a number or a string "
           "value are skipped (%s)", s ? pk_last_error() : "ok");
        pk_context_destroy(ctx);
    }
    {
        /* the run info says why: PORTKERN_WISDOM at a corrupt file, the lazy load */
        char path[300];
        path_in(path, sizeof path, "corrupt-lazy.json");
        const char *cut = "{\"portkern_wisdom\": 1, \"entries\": [";
        write_file(path, cut, strlen(cut));
        setenv("PORTKERN_WISDOM", path, 1);
        pk_context *ctx = context(0, PK_BACKEND_AUTO);
        pk_run_info info;
        int good = run_d3(ctx, 16, &info);
        ok(good && !info.fell_back && strstr(info.reason, "wisdom: file ignored: ") &&
               strstr(info.reason, "corrupt-lazy.json: byte 35 (line 1)"),
           "a corrupt file at PORTKERN_WISDOM: the call runs as without it, the reason says why "
           "(%s)", info.reason);
        unsetenv("PORTKERN_WISDOM");
        pk_context_destroy(ctx);
    }
}

/* ---- files: round trip, merge, locks, the environment ------------------------------------- */
static void files(int have_omp)
{
    char path[300];
    path_in(path, sizeof path, "sub/dir/w.json");
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry e[3];
    e[0] = entry(ctx, PK_BACKEND_SERIAL, "diffusion3d", "serial", "paper", 1.3421772800000001e8,
                 0.123456789012345678);
    snprintf(e[0].params, sizeof e[0].params, "tile=\"32\" \\ path/x");
    e[1] = entry(ctx, PK_BACKEND_SERIAL, "laplace2d", "serial", "2048x2048", 3.3554432e7, 1e-300);
    snprintf(e[1].runners_up, sizeof e[1].runners_up, "caf\xc3\xa9 \xe2\x82\xac 1.07x");
    snprintf(e[1].tuning, sizeof e[1].tuning, "laplace2d.isa=avx2;laplace2d.stream=0");
    e[2] = entry(ctx, PK_BACKEND_SERIAL, "su3", "serial", "large", 1e-3, 0);
    e[2].device = 3;
    snprintf(e[2].device_name, sizeof e[2].device_name, "Elsewhere GPU \"X\"");
    for (int i = 0; i < 3; ++i) add(ctx, &e[i]);
    pk_status s = pk_wisdom_save(ctx, path);
    pk_context *back = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_status s2 = pk_wisdom_load(back, path);
    int same = pk_wisdom_count(back) == 3;
    for (int i = 0; same && i < 3; ++i) {
        pk_wisdom_entry g;
        same = pk_wisdom_get(back, i, &g) == PK_OK && pk_test_wisdom_equal(&g, &e[i]);
    }
    size_t len;
    char *text = read_all(path, &len);
    ok(s == PK_OK && s2 == PK_OK && same && text &&
           !strncmp(text, "{\"portkern_wisdom\": 1, \"entries\": [", 35),
       "save (directories created) then load gives every field back, quotes, backslashes, "
       "UTF-8 and doubles included (%s)", s ? pk_last_error() : "ok");
    free(text);
    pk_context_destroy(back);

    /* merge: a second context's entry joins the file; the same key replaces */
    pk_context *other = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry m = entry(other, PK_BACKEND_SERIAL, "dslash", "serial", "paper", 1e8, 1);
    pk_wisdom_entry r = e[0];
    snprintf(r.variant, sizeof r.variant, "renamed");
    add(other, &m);
    add(other, &r);
    s = pk_wisdom_save(other, path);
    back = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    s2 = pk_wisdom_load(back, path);
    pk_wisdom_entry g0;
    pk_wisdom_get(back, 0, &g0);
    ok(s == PK_OK && s2 == PK_OK && pk_wisdom_count(back) == 4 && !strcmp(g0.variant, "renamed"),
       "save merges with the file: its entries kept, the same key replaced (%d entries)",
       pk_wisdom_count(back));
    pk_context_destroy(back);
    pk_context_destroy(other);

    /* what is not wisdom is not overwritten */
    char notw[300];
    path_in(notw, sizeof notw, "params.json");
    write_file(notw, "{\"kernel\": \"su3\"}", 17);
    s = pk_wisdom_save(ctx, notw);
    text = read_all(notw, NULL);
    ok(s == PK_EFORMAT && text && !strcmp(text, "{\"kernel\": \"su3\"}") &&
           strstr(pk_last_error(), "not overwritten"),
       "save refuses to overwrite a file that is not wisdom (%s)", pk_last_error());
    free(text);
    s = pk_wisdom_load(ctx, "/nonexistent/wisdom.json");
    ok(s == PK_EIO && pk_wisdom_count(ctx) == 3, "a missing named file: PK_EIO (%s)", pk_last_error());
    pk_context_destroy(ctx);

    /* two processes saving at once, each its own entries, many times over */
    char shared[300];
    path_in(shared, sizeof shared, "shared.json");
    enum { PER_CHILD = 30 };
    pk_context *maker = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry base = entry(maker, PK_BACKEND_SERIAL, "diffusion3d", "serial", "-", 1e6, 1);
    pk_context_destroy(maker);
    pid_t kids[2];
    for (int k = 0; k < 2; ++k) {
        kids[k] = fork();
        if (kids[k] == 0) {
            pk_context *c = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
            int bad = 0;
            for (int i = 0; i < PER_CHILD; ++i) {
                pk_wisdom_entry x = base;
                snprintf(x.size_class, sizeof x.size_class, "child%d-%d", k, i);
                bad |= pk_wisdom_add(c, &x) != PK_OK || pk_wisdom_save(c, shared) != PK_OK;
            }
            pk_context_destroy(c);
            _exit(bad);
        }
    }
    int exits_ok = 1;
    for (int k = 0; k < 2; ++k) {
        int st = 0;
        exits_ok &= kids[k] > 0 && waitpid(kids[k], &st, 0) == kids[k] && WIFEXITED(st) &&
                    WEXITSTATUS(st) == 0;
    }
    back = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    s = pk_wisdom_load(back, shared);
    int found = 0;
    for (int i = 0; i < pk_wisdom_count(back); ++i) {
        pk_wisdom_entry g;
        pk_wisdom_get(back, i, &g);
        found += !strncmp(g.size_class, "child", 5);
    }
    ok(exits_ok && s == PK_OK && found == 2 * PER_CHILD,
       "two processes saving %d entries each at once: the file is valid and holds all %d (%d)",
       PER_CHILD, 2 * PER_CHILD, found);
    pk_context_destroy(back);

    /* PORTKERN_WISDOM: loaded lazily on the first auto call; 0 and "" disable it; contexts
     * with PK_OPT_IGNORE_ENV do not read it */
    const pk_backend_id b = have_omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL;
    const char *wanted = have_omp ? "omp" : "serial";
    const char *default_variant = have_omp ? "omp-tb" : "serial";
    char envfile[300];
    path_in(envfile, sizeof envfile, "env.json");
    ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry w = entry(ctx, b, "diffusion3d", wanted, "16^3", d3_bytes(16), 1e-3);
    add(ctx, &w);
    pk_wisdom_save(ctx, envfile);
    pk_context_destroy(ctx);
    pk_run_info info;
    setenv("PORTKERN_WISDOM", envfile, 1);
    ctx = context(0, PK_BACKEND_AUTO);
    const int before = pk_wisdom_count(ctx);
    int good = run_d3(ctx, 16, &info);
    ok(before == 0 && pk_wisdom_count(ctx) == 1 && good && !strcmp(info.variant, wanted) &&
           strstr(info.reason, "chosen (wisdom: "),
       "PORTKERN_WISDOM names a file: loaded on the first auto call, its entry runs (%s)",
       info.reason);
    pk_wisdom_forget(ctx);
    good = run_d3(ctx, 16, &info);
    ok(pk_wisdom_count(ctx) == 0 && good && !strcmp(info.variant, default_variant) &&
           strstr(info.reason, "wisdom: none for diffusion3d at this size"),
       "pk_wisdom_forget drops the entries and nothing is loaded again (%s)", info.reason);
    pk_context_destroy(ctx);
    ctx = context(0, PK_BACKEND_AUTO);
    pk_wisdom_forget(ctx);
    good = run_d3(ctx, 16, &info);
    ok(good && pk_wisdom_count(ctx) == 0 && !strcmp(info.variant, default_variant),
       "pk_wisdom_forget before the first call: the default file is not loaded (%s)", info.reason);
    pk_context_destroy(ctx);
    ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    good = run_d3(ctx, 16, &info);
    ok(good && pk_wisdom_count(ctx) == 0 && !strcmp(info.variant, default_variant) &&
           !strstr(info.reason, "wisdom"),
       "PK_OPT_IGNORE_ENV: PORTKERN_WISDOM is not read (%s)", info.reason);
    pk_context_destroy(ctx);
    const char *offs[] = {"0", ""};
    for (int k = 0; k < 2; ++k) {
        setenv("PORTKERN_WISDOM", offs[k], 1);
        ctx = context(0, PK_BACKEND_AUTO);
        good = run_d3(ctx, 16, &info);
        char p[64] = "x";
        pk_wisdom_default_path(ctx, p, sizeof p);
        ok(good && pk_wisdom_count(ctx) == 0 && !strstr(info.reason, "wisdom") && !p[0] &&
               pk_wisdom_save(ctx, NULL) == PK_EINVAL,
           "PORTKERN_WISDOM='%s' disables wisdom (no default path, save(NULL) refused; %s)",
           offs[k], info.reason);
        pk_context_destroy(ctx);
    }
    setenv("PORTKERN_WISDOM", "/nonexistent/wisdom.json", 1);
    ctx = context(0, PK_BACKEND_AUTO);
    good = run_d3(ctx, 16, &info);
    ok(good && !strcmp(info.variant, default_variant) &&
           strstr(info.reason, "wisdom: file ignored: /nonexistent/wisdom.json: cannot open"),
       "PORTKERN_WISDOM names a missing file: the reason says so (%s)", info.reason);
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_WISDOM");

    /* the default location: $XDG_CACHE_HOME/portkern, else $HOME/.cache/portkern */
    char xdg[300], home[300], want[400], got[400];
    path_in(xdg, sizeof xdg, "xdg");
    path_in(home, sizeof home, "home");
    const char *saved_home = getenv("HOME");
    char *home_copy = saved_home ? strdup(saved_home) : NULL;
    setenv("XDG_CACHE_HOME", xdg, 1);
    ctx = context(0, PK_BACKEND_AUTO);
    add(ctx, &w);
    snprintf(want, sizeof want, "%s/portkern/wisdom.json", xdg);
    s = pk_wisdom_default_path(ctx, got, sizeof got);
    s2 = pk_wisdom_save(ctx, NULL);
    struct stat st;
    ok(s == PK_OK && !strcmp(got, want) && s2 == PK_OK && stat(want, &st) == 0,
       "default path %s: saved there, directories created (%s)", got, s2 ? pk_last_error() : "ok");
    pk_context_destroy(ctx);
    ctx = context(0, PK_BACKEND_AUTO);
    good = run_d3(ctx, 16, &info);
    ok(good && pk_wisdom_count(ctx) == 1 && !strcmp(info.variant, wanted),
       "a context loads the default file on its first auto call (%s)", info.reason);
    pk_context_destroy(ctx);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", home, 1);
    snprintf(want, sizeof want, "%s/.cache/portkern/wisdom.json", home);
    s = pk_wisdom_default_path(NULL, got, sizeof got);
    ok(s == PK_OK && !strcmp(got, want), "without XDG_CACHE_HOME: %s", got);
    s = pk_wisdom_default_path(NULL, got, 8);
    ok(s == PK_ESIZE, "a default path that does not fit: PK_ESIZE (%s)", pk_last_error());
    if (home_copy)
        setenv("HOME", home_copy, 1);
    else
        unsetenv("HOME");
    free(home_copy);
}

/* ---- the rest of the API ------------------------------------------------------------------- */
static void api(int have_omp)
{
    pk_context *ctx = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    pk_wisdom_entry good = entry(ctx, PK_BACKEND_SERIAL, "diffusion3d", "serial", "s", 1e6, 1), e;
    e = good, e.kernel[0] = '\0';
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "kernel"),
       "add: an empty kernel is PK_EINVAL (%s)", pk_last_error());
    e = good, e.backend = PK_BACKEND_AUTO;
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "backend"),
       "add: backend auto is PK_EINVAL (%s)", pk_last_error());
    e = good, e.size_bytes = 0;
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "size_bytes"),
       "add: size_bytes 0 is PK_EINVAL (%s)", pk_last_error());
    e = good, e.seconds = NAN;
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "seconds"),
       "add: seconds NaN is PK_EINVAL (%s)", pk_last_error());
    e = good, memset(e.variant, 'v', sizeof e.variant);
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "not terminated"),
       "add: an unterminated variant is PK_EINVAL (%s)", pk_last_error());
    e = good, e.date[3] = '\n';
    ok(pk_wisdom_add(ctx, &e) == PK_EINVAL && strstr(pk_last_error(), "control character"),
       "add: a control character is PK_EINVAL (%s)", pk_last_error());
    ok(pk_wisdom_count(ctx) == 0, "nothing was added");
    ok(pk_wisdom_add(NULL, &good) == PK_ENULL && pk_wisdom_add(ctx, NULL) == PK_ENULL &&
           pk_wisdom_load(NULL, NULL) == PK_ENULL && pk_wisdom_save(NULL, NULL) == PK_ENULL &&
           pk_wisdom_get(ctx, 0, NULL) == PK_ENULL && pk_wisdom_count(NULL) == 0 &&
           pk_wisdom_note(NULL)[0] == '\0' && pk_wisdom_entry_init(ctx, PK_BACKEND_SERIAL, 0, NULL) == PK_ENULL,
       "NULL arguments: PK_ENULL, count 0, note \"\"");
    pk_wisdom_forget(NULL);
    ok(pk_wisdom_get(ctx, 0, &e) == PK_EINVAL && pk_wisdom_get(ctx, -1, &e) == PK_EINVAL,
       "get: an index out of range is PK_EINVAL (%s)", pk_last_error());
    ok(pk_wisdom_entry_init(ctx, PK_BACKEND_SERIAL, 5, &e) == PK_ENODEVICE &&
           pk_wisdom_entry_init(ctx, PK_BACKEND_AUTO, 0, &e) == PK_EINVAL,
       "entry_init: no such device, or backend auto, is an error (%s)", pk_last_error());
    e = good;
    ok(e.date[4] == '-' && e.date[10] == 'T' && e.date[19] == 'Z' && !e.date[20] &&
           !strcmp(e.version, pk_version()) && e.compute_units == 1,
       "entry_init fills the identity, the version and an ISO 8601 UTC date (%s)", e.date);

    /* adding wisdom releases the kept plans: the next call of the same shape takes it */
    pk_run_info info;
    run_d3(ctx, 16, &info);
    run_d3(ctx, 16, &info);
    const int was_reused = strstr(info.reason, "plan reused") != NULL;
    pk_wisdom_entry x = entry(ctx, have_omp ? PK_BACKEND_OPENMP : PK_BACKEND_SERIAL,
                              "diffusion3d", have_omp ? "omp" : "serial", "16^3", d3_bytes(16), 1);
    add(ctx, &x);
    int right = run_d3(ctx, 16, &info);
    ok(was_reused && right && !strstr(info.reason, "plan reused") &&
           !strcmp(info.variant, x.variant) && strstr(info.reason, "wisdom: "),
       "a kept plan is not reused once wisdom is added: the entry's variant runs (%s)",
       info.reason);
    pk_context_destroy(ctx);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pk-wisdom-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp %s failed\n", dir);
        return 1;
    }
    unsetenv("PORTKERN_WISDOM");
    pk_context *probe = context(PK_OPT_IGNORE_ENV, PK_BACKEND_AUTO);
    const int have_omp = pk_backend_available(probe, PK_BACKEND_OPENMP, NULL);
    pk_context_destroy(probe);
    if (!have_omp) tap_diag("OpenMP unavailable: the serial backend stands in");

    picks(have_omp);
    falls_back();
    stale_and_sizes(have_omp);
    tuned(have_omp);
    corrupt();
    files(have_omp);
    api(have_omp);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
    return tap_done();
}
