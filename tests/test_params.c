/* test_params.c - the tuning parameters (lib/tuning.c, lib/portkern.h "Tuning parameters"):
 *  - the list: pk_param_count / pk_param_info, every name "<kernel>.<param>", its variable
 *    PORTKERN_<KERNEL>_<PARAM> derived from it, a default, accepted values and a doc;
 *  - set and get on a context: defaults, the caller's value, a reset (NULL); unknown names
 *    and bad values are PK_EINVAL naming the parameter, what it accepts and what was given,
 *    and leave the value as it was;
 *  - the environment: every variable (and the older names) read at context creation, a
 *    caller's value beats it, a reset goes back to it; under PK_OPT_IGNORE_ENV none is read
 *    (every parameter reads back its default), a bad value is reported by the call that
 *    reads it, naming the variable;
 *  - behaviour: conv2d.fft_taps moves auto's method (the reason says so, and a cached plan
 *    is not reused after the change); dslash.isa=generic picks the generic lanes; a bogus
 *    value in every ISA / scheme variable breaks nothing under PK_OPT_IGNORE_ENV (the
 *    backends read the context's values, not the environment), and breaks the call in a
 *    context that reads it.
 */
#include "portkern.h"
#include "tap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A valid value other than the default, per parameter: a new parameter needs a line here. */
static const struct {
    const char *name, *value;
} other[] = {
    {"conv2d.fft_taps", "7"},          {"conv2d.cl_scheme", "scalar"},
    {"conv2d.isa", "avx2"},            {"conv2d.fft_plan", "estimate"},
    {"diffusion3d.cl_scheme", "xvec"}, {"diffusion3d.tb_depth", "3"},
    {"diffusion3d.tb_rows", "17"},     {"diffusion3d.isa", "avx2"},
    {"dslash.isa", "generic"},
    {"grid.cuda_blocks", "5,6"},       {"grid.tile_size", "32"},
    {"grid.central_radius", "-1"},     {"grid.tile_factor", "0.5"},
    {"grid.isa", "avx2"},
    {"openmp.threads", "1"},           {"laplace2d.isa", "avx2"},
    {"laplace2d.stream", "0"},         {"laplace2d.cl_scheme", "item"},
    {"laplace2d.tb_depth", "5"},
    {"magicfilter3d.isa", "generic"},  {"magicfilter3d.cl_scheme", "tile"},
    {"su3.isa", "avx2"},               {"su3.stream", "1"},
};
#define NOTHER ((int)(sizeof other / sizeof other[0]))

/* The test value of a parameter; "" when other[] has none (test 2 fails naming it, and the
 * later checks fail instead of crashing). */
static const char *other_value(const char *name)
{
    for (int i = 0; i < NOTHER; ++i)
        if (!strcmp(other[i].name, name)) return other[i].value;
    return "";
}

static pk_context *make_ctx(pk_backend_id backend, int ignore_env)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = backend;
    if (ignore_env) o.flags = PK_OPT_IGNORE_ENV;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        exit(1);
    }
    return ctx;
}

/* Every parameter's variable (and older name) unset. */
static void clear_env(void)
{
    for (int i = 0; i < pk_param_count(); ++i) {
        pk_param_desc d;
        if (pk_param_info(i, &d) != PK_OK) continue;
        unsetenv(d.env);
        if (d.env_alias) unsetenv(d.env_alias);
    }
}

static int has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

static void check_list(void)
{
    const int n = pk_param_count();
    int good = n == NOTHER, named = 1;
    for (int i = 0; i < n; ++i) {
        pk_param_desc d;
        char want[96] = "PORTKERN_";
        if (pk_param_info(i, &d) != PK_OK) {
            good = 0;
            continue;
        }
        size_t k = strlen(want);
        for (const char *c = d.name; *c && k + 1 < sizeof want; ++c)
            want[k++] = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
        want[k] = '\0';
        const char *dot = strchr(d.name, '.');
        int ok1 = dot && dot > d.name && dot[1] && !strchr(dot + 1, '.') && !strcmp(d.env, want) &&
                  d.values[0] && d.def[0] && d.doc[0] && other_value(d.name)[0];
        if (!ok1) tap_diag("parameter %d (%s, %s) breaks the rules", i, d.name, d.env);
        named &= ok1;
    }
    ok(good, "pk_param_count() is %d: one test value per parameter (%d)", n, NOTHER);
    ok(named, "every parameter is '<kernel>.<param>' with PORTKERN_<KERNEL>_<PARAM>, values, "
              "a default and a doc");
    pk_param_desc d;
    ok(pk_param_info(-1, &d) == PK_EINVAL && pk_param_info(n, &d) == PK_EINVAL &&
           pk_param_info(0, NULL) == PK_ENULL,
       "pk_param_info: index out of range PK_EINVAL, NULL PK_ENULL");
}

static void check_set_get(void)
{
    pk_context *ctx = make_ctx(PK_BACKEND_SERIAL, 1);
    char buf[64];
    pk_param_source src = PK_PARAM_CALLER;
    int defaults = 1;
    for (int i = 0; i < pk_param_count(); ++i) {
        pk_param_desc d;
        pk_param_info(i, &d);
        defaults &= pk_context_get_param(ctx, d.name, buf, sizeof buf, &src) == PK_OK &&
                    !strcmp(buf, d.def) && src == PK_PARAM_DEFAULT;
    }
    ok(defaults, "a new context: every parameter at its default, source default");

    pk_status s = pk_context_set_param(ctx, "conv2d.fft_taps", "50");
    pk_status g = pk_context_get_param(ctx, "conv2d.fft_taps", buf, sizeof buf, &src);
    ok(s == PK_OK && g == PK_OK && !strcmp(buf, "50") && src == PK_PARAM_CALLER,
       "set conv2d.fft_taps=50: get gives '%s', source caller (%d)", buf, (int)src);
    s = pk_context_set_param(ctx, "grid.cuda_blocks", "8,64");
    g = pk_context_get_param(ctx, "grid.cuda_blocks", buf, sizeof buf, NULL);
    ok(s == PK_OK && g == PK_OK && !strcmp(buf, "8,64"), "set grid.cuda_blocks=8,64 (got '%s')",
       buf);
    s = pk_context_set_param(ctx, "magicfilter3d.isa", "avx512f");
    ok(s == PK_OK, "magicfilter3d.isa accepts the alias avx512f");

    /* bad names and values */
    s = pk_context_set_param(ctx, "conv2d.fft_tapz", "5");
    ok(s == PK_EINVAL && has(pk_last_error(), "conv2d.fft_tapz") &&
           has(pk_last_error(), "conv2d.fft_taps"),
       "unknown name: PK_EINVAL naming it and the known ones (%s)", pk_last_error());
    s = pk_context_get_param(ctx, "nope", buf, sizeof buf, NULL);
    ok(s == PK_EINVAL && has(pk_last_error(), "'nope'"), "get of an unknown name: PK_EINVAL (%s)",
       pk_last_error());
    static const struct {
        const char *name, *value, *accepts;
    } bad[] = {
        {"conv2d.fft_taps", "0", "integer in [1, "},
        {"conv2d.fft_taps", "12x", "integer in [1, "},
        {"conv2d.fft_taps", "", "integer in [1, "},
        {"dslash.isa", "sse9", "avx2"},
        {"conv2d.cl_scheme", "VEC", "vec or scalar"},
        {"grid.cuda_blocks", "3", "[1, 1024]"},
        {"grid.cuda_blocks", "2,2000", "[1, 1024]"},
        {"grid.cuda_blocks", "0,5", "[1, 1024]"},
        {"su3.stream", "yes", "auto, 0 or 1"},
        {"grid.tile_size", "0", "auto or an integer in [1, 4096]"},
        {"grid.tile_size", "4097", "auto or an integer in [1, 4096]"},
        {"grid.central_radius", "0", "auto, -1 (no central box)"},
        {"grid.central_radius", "-2", "auto, -1 (no central box)"},
        {"grid.tile_factor", "1.5", "auto or a number in [0, 1]"},
        {"grid.tile_factor", "nan", "auto or a number in [0, 1]"},
        {"grid.tile_factor", "0.5x", "auto or a number in [0, 1]"},
        {"openmp.threads", "0", "auto or an integer in [1, 4096]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char before[64], after[64], given[80], e[512];
        pk_context_get_param(ctx, bad[i].name, before, sizeof before, NULL);
        s = pk_context_set_param(ctx, bad[i].name, bad[i].value);
        snprintf(e, sizeof e, "%s", pk_last_error());
        snprintf(given, sizeof given, "'%s'", bad[i].value);
        int named = has(e, bad[i].name) && has(e, bad[i].accepts) && has(e, given);
        pk_context_get_param(ctx, bad[i].name, after, sizeof after, NULL);
        ok(s == PK_EINVAL && named && !strcmp(before, after),
           "%s='%s': PK_EINVAL naming it, what it accepts and the value; unchanged (%s)",
           bad[i].name, bad[i].value, e);
    }
    ok(pk_context_set_param(NULL, "su3.isa", "avx2") == PK_ENULL &&
           pk_context_set_param(ctx, NULL, "avx2") == PK_ENULL &&
           pk_context_get_param(ctx, "su3.isa", NULL, 4, NULL) == PK_ENULL &&
           pk_context_get_param(ctx, "su3.isa", buf, 0, NULL) == PK_EINVAL,
       "NULL context, name or buffer, len 0: refused");
    pk_context_get_param(ctx, "conv2d.fft_taps", buf, 3, NULL);
    ok(!strcmp(buf, "50"), "get truncates to len - 1 ('%s')", buf);

    s = pk_context_set_param(ctx, "conv2d.fft_taps", NULL);
    g = pk_context_get_param(ctx, "conv2d.fft_taps", buf, sizeof buf, &src);
    ok(s == PK_OK && g == PK_OK && !strcmp(buf, "676") && src == PK_PARAM_DEFAULT,
       "a reset (NULL) goes back to the default ('%s')", buf);
    pk_context_destroy(ctx);
}

static void check_env(void)
{
    const int n = pk_param_count();
    for (int i = 0; i < n; ++i) {
        pk_param_desc d;
        pk_param_info(i, &d);
        setenv(d.env, other_value(d.name), 1);
    }
    pk_context *env_ctx = make_ctx(PK_BACKEND_SERIAL, 0);
    pk_context *ign_ctx = make_ctx(PK_BACKEND_SERIAL, 1);
    int read = 1, ignored = 1;
    for (int i = 0; i < n; ++i) {
        pk_param_desc d;
        char buf[64];
        pk_param_source src;
        pk_param_info(i, &d);
        if (pk_context_get_param(env_ctx, d.name, buf, sizeof buf, &src) != PK_OK ||
            strcmp(buf, other_value(d.name)) || src != PK_PARAM_ENV) {
            tap_diag("%s from %s: '%s' (source %d)", d.name, d.env, buf, (int)src);
            read = 0;
        }
        if (pk_context_get_param(ign_ctx, d.name, buf, sizeof buf, &src) != PK_OK ||
            strcmp(buf, d.def) || src != PK_PARAM_DEFAULT) {
            tap_diag("%s under PK_OPT_IGNORE_ENV: '%s' (source %d)", d.name, buf, (int)src);
            ignored = 0;
        }
    }
    ok(read, "every parameter's variable set to a non-default value: the context reads it "
             "(source env)");
    ok(ignored, "PK_OPT_IGNORE_ENV: every parameter reads back its default (source default)");

    /* the caller beats the environment; a reset goes back to it */
    char buf[64];
    pk_param_source src;
    pk_status s = pk_context_set_param(env_ctx, "dslash.isa", "avx2");
    pk_context_get_param(env_ctx, "dslash.isa", buf, sizeof buf, &src);
    ok(s == PK_OK && !strcmp(buf, "avx2") && src == PK_PARAM_CALLER,
       "the caller's dslash.isa=avx2 beats PORTKERN_DSLASH_ISA=generic ('%s')", buf);
    pk_context_set_param(env_ctx, "dslash.isa", NULL);
    pk_context_get_param(env_ctx, "dslash.isa", buf, sizeof buf, &src);
    ok(!strcmp(buf, "generic") && src == PK_PARAM_ENV, "a reset goes back to the environment's "
                                                       "value ('%s')", buf);
    /* read once, at creation */
    setenv("PORTKERN_CONV2D_FFT_TAPS", "99", 1);
    pk_context_get_param(env_ctx, "conv2d.fft_taps", buf, sizeof buf, &src);
    ok(!strcmp(buf, "7"), "the environment is read at context creation, not later ('%s')", buf);
    pk_context_destroy(env_ctx);
    pk_context_destroy(ign_ctx);
    clear_env();

    /* the older names; the new one wins when both are set */
    setenv("PORTKERN_CL_CV_SCHEME", "scalar", 1);
    setenv("PORTKERN_MF_ISA", "avx2", 1);
    setenv("PORTKERN_MAGICFILTER3D_ISA", "generic", 1);
    env_ctx = make_ctx(PK_BACKEND_SERIAL, 0);
    char mf[64];
    pk_context_get_param(env_ctx, "conv2d.cl_scheme", buf, sizeof buf, &src);
    pk_context_get_param(env_ctx, "magicfilter3d.isa", mf, sizeof mf, NULL);
    ok(!strcmp(buf, "scalar") && src == PK_PARAM_ENV && !strcmp(mf, "generic"),
       "PORTKERN_CL_CV_SCHEME still sets conv2d.cl_scheme ('%s'); PORTKERN_MAGICFILTER3D_ISA "
       "beats PORTKERN_MF_ISA ('%s')", buf, mf);
    pk_context_destroy(env_ctx);
    clear_env();

    /* a bad value: the context is made, the value is reported as given */
    setenv("PORTKERN_CL_LP_SCHEME", "bogus", 1);
    setenv("PORTKERN_S3_STREAM", "yes", 1); /* as it always read: anything but 0 is on */
    env_ctx = make_ctx(PK_BACKEND_SERIAL, 0);
    s = pk_context_get_param(env_ctx, "laplace2d.cl_scheme", buf, sizeof buf, &src);
    ok(s == PK_EINVAL && !strcmp(buf, "bogus") && src == PK_PARAM_ENV &&
           has(pk_last_error(), "PORTKERN_CL_LP_SCHEME") && has(pk_last_error(), "vec or item"),
       "PORTKERN_CL_LP_SCHEME=bogus: get gives it with PK_EINVAL naming the variable (%s)",
       pk_last_error());
    s = pk_context_get_param(env_ctx, "su3.stream", buf, sizeof buf, &src);
    ok(s == PK_OK && !strcmp(buf, "yes"), "PORTKERN_S3_STREAM=yes is still taken (on)");
    s = pk_context_set_param(env_ctx, "laplace2d.cl_scheme", "vec");
    ok(s == PK_OK && pk_context_get_param(env_ctx, "laplace2d.cl_scheme", buf, sizeof buf, NULL) ==
                         PK_OK,
       "the caller's value replaces a bad environment value");
    pk_context_destroy(env_ctx);
    clear_env();
}

static void check_conv2d(void)
{
    enum { H = 20, W = 24 };
    static float image[H * W], psf[9], out[H * W];
    for (int i = 0; i < H * W; ++i) image[i] = (float)(i % 7);
    for (int i = 0; i < 9; ++i) psf[i] = 1.0f / 9;
    pk_conv2d_params p = {H, W, 3, 3, PK_CONV2D_AUTO};
    pk_context *ctx = make_ctx(PK_BACKEND_SERIAL, 1);
    pk_run_info info;
    pk_status s = pk_conv2d(ctx, &p, NULL, image, psf, out, &info);
    ok(s == PK_OK && has(info.reason, "9 taps < 676: direct"),
       "conv2d auto, 3 x 3, default: direct (reason: %s)", s ? pk_last_error() : info.reason);
    s = pk_conv2d(ctx, &p, NULL, image, psf, out, &info);
    int reused = s == PK_OK && has(info.reason, "reused");
    pk_context_set_param(ctx, "conv2d.fft_taps", "4");
    s = pk_conv2d(ctx, &p, NULL, image, psf, out, &info);
    ok(s == PK_OK && has(info.reason, "9 taps >= 4 (conv2d.fft_taps): fft") &&
           !has(info.reason, "reused"),
       "conv2d.fft_taps=4: auto's method is the FFT, a fresh plan (second call reused: %d; "
       "reason: %s)", reused, s ? pk_last_error() : info.reason);
    pk_context_destroy(ctx);

    setenv("PORTKERN_CONV2D_FFT_TAPS", "bogus", 1);
    ctx = make_ctx(PK_BACKEND_SERIAL, 1);
    s = pk_conv2d(ctx, &p, NULL, image, psf, out, &info);
    ok(s == PK_OK, "PORTKERN_CONV2D_FFT_TAPS=bogus under PK_OPT_IGNORE_ENV: conv2d runs (%s)",
       s ? pk_last_error() : "ok");
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_CONV2D_FFT_TAPS");
}

/* The host kernels that read an ISA parameter, on openmp, small. */
static double ds_u[4 * 256 * 18], ds_psi[256 * 24], ds_chi[256 * 24];
static double mf_x[16 * 16 * 16], mf_y[16 * 16 * 16];
static float lp_phi[64 * 64], d3_f[40 * 9 * 7];

static pk_status run_isa_kernel(pk_context *ctx, int k, pk_run_info *info)
{
    if (k == 0) {
        pk_magicfilter3d_params p = {16, 16, 16, 0, PK_MF_PERIODIC};
        return pk_magicfilter3d(ctx, &p, "omp", mf_x, mf_y, info);
    }
    if (k == 1) {
        pk_su3_params p = {256, PK_SU3_AOS, 0};
        return pk_su3(ctx, &p, "omp-simd", ds_u, ds_psi, ds_chi, info);
    }
    if (k == 2) {
        pk_laplace2d_params p = {64, 1, 0.1, PK_LAP_LEXI, 0};
        return pk_laplace2d(ctx, &p, "omp-simd", lp_phi, info);
    }
    if (k == 3) {
        pk_dslash_params p = {4, 4, 4, 4, 0.1, 0, 0, 0, 0, 0};
        return pk_dslash(ctx, &p, "omp-vnode", ds_u, ds_psi, ds_chi, info);
    }
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 40, 9, 7, 2);
    return pk_diffusion3d(ctx, &p, "omp-tiled", d3_f, info);
}

static void check_isa(void)
{
    static const char *const var[5] = {"PORTKERN_MAGICFILTER3D_ISA", "PORTKERN_SU3_ISA",
                                       "PORTKERN_LAPLACE2D_ISA", "PORTKERN_DSLASH_ISA",
                                       "PORTKERN_DIFFUSION3D_ISA"};
    pk_context *probe = make_ctx(PK_BACKEND_OPENMP, 1);
    if (!pk_backend_available(probe, PK_BACKEND_OPENMP, NULL)) {
        tap_skip("openmp unavailable", "ISA parameters (6 checks)");
        pk_context_destroy(probe);
        return;
    }
    pk_context_destroy(probe);
    const int nk = (int)(sizeof var / sizeof var[0]);
    for (int k = 0; k < nk; ++k) setenv(var[k], "bogus", 1);
    pk_context *ign = make_ctx(PK_BACKEND_OPENMP, 1), *env = make_ctx(PK_BACKEND_OPENMP, 0);
    int runs = 1, fails = 1;
    for (int k = 0; k < nk; ++k) {
        pk_status s = run_isa_kernel(ign, k, NULL);
        if (s != PK_OK) tap_diag("%s=bogus, PK_OPT_IGNORE_ENV: %s", var[k], pk_last_error());
        runs &= s == PK_OK;
        s = run_isa_kernel(env, k, NULL);
        if (s != PK_EINVAL || !has(pk_last_error(), var[k]))
            tap_diag("%s=bogus read: %d %s", var[k], (int)s, pk_last_error());
        fails &= s == PK_EINVAL && has(pk_last_error(), var[k]);
    }
    ok(runs, "every *.isa variable bogus: the five OpenMP kernels run under PK_OPT_IGNORE_ENV");
    ok(fails, "... and fail with PK_EINVAL naming the variable in a context that reads it");
    pk_context_destroy(ign);
    pk_context_destroy(env);
    clear_env();

    /* dslash.isa=generic: the generic kernel, 2 lanes along t on 4^4 */
    pk_context *ctx = make_ctx(PK_BACKEND_OPENMP, 1);
    pk_run_info info;
    pk_context_set_param(ctx, "dslash.isa", "generic");
    pk_status s = run_isa_kernel(ctx, 3, &info);
    ok(s == PK_OK && has(info.reason, "2 lanes along t (generic kernel)"),
       "dslash.isa=generic: omp-vnode takes 2 generic lanes (reason: %s)",
       s ? pk_last_error() : info.reason);
    s = pk_context_set_param(ctx, "laplace2d.stream", "1");
    ok(s == PK_OK && run_isa_kernel(ctx, 2, NULL) == PK_OK,
       "laplace2d.stream=1: omp-simd runs with streaming stores on a small field");
    s = pk_context_set_param(ctx, "su3.stream", "0");
    ok(s == PK_OK && run_isa_kernel(ctx, 1, NULL) == PK_OK, "su3.stream=0: omp-simd runs");
    s = pk_context_set_param(ctx, "magicfilter3d.isa", "generic");
    ok(s == PK_OK && run_isa_kernel(ctx, 0, NULL) == PK_OK,
       "magicfilter3d.isa=generic: omp runs the portable pass");
    pk_context_destroy(ctx);
}

/* The OpenCL schemes: a bogus value in every variable is not read under PK_OPT_IGNORE_ENV. */
static void check_cl(void)
{
    static const char *const var[4] = {"PORTKERN_CL_CV_SCHEME", "PORTKERN_CL_D3_SCHEME",
                                       "PORTKERN_CL_LP_SCHEME", "PORTKERN_CL_MF_SCHEME"};
    pk_context *ign = make_ctx(PK_BACKEND_OPENCL, 1);
    const char *why = "";
    if (!pk_backend_available(ign, PK_BACKEND_OPENCL, &why)) {
        char msg[600];
        snprintf(msg, sizeof msg, "opencl unavailable: %s", why);
        tap_skip(msg, "OpenCL schemes (2 checks)");
        pk_context_destroy(ign);
        return;
    }
    for (int k = 0; k < 4; ++k) setenv(var[k], "bogus", 1);
    pk_context *env = make_ctx(PK_BACKEND_OPENCL, 0);
    static float img[16 * 16], out[16 * 16], psf[9], f[8 * 8 * 8], phi[16 * 16];
    for (int i = 0; i < 9; ++i) psf[i] = 1.0f / 9;
    int runs = 1, fails = 1;
    for (int k = 0; k < 4; ++k) {
        pk_status s[2];
        for (int c = 0; c < 2; ++c) {
            pk_context *ctx = c ? env : ign;
            if (k == 0) {
                pk_conv2d_params p = {16, 16, 3, 3, PK_CONV2D_DIRECT};
                s[c] = pk_conv2d(ctx, &p, "opencl", img, psf, out, NULL);
            } else if (k == 1) {
                pk_diffusion3d_params p;
                pk_diffusion3d_params_default(&p, 8, 8, 8, 2);
                s[c] = pk_diffusion3d(ctx, &p, "opencl", f, NULL);
            } else if (k == 2) {
                pk_laplace2d_params p = {16, 1, 0.1, PK_LAP_LEXI, 0};
                s[c] = pk_laplace2d(ctx, &p, "opencl", phi, NULL);
            } else {
                pk_magicfilter3d_params p = {16, 16, 16, 0, PK_MF_PERIODIC};
                s[c] = pk_magicfilter3d(ctx, &p, "opencl", mf_x, mf_y, NULL);
            }
            if (c == 1 && (s[c] != PK_EINVAL || !has(pk_last_error(), var[k])))
                tap_diag("%s=bogus read: %d %s", var[k], (int)s[c], pk_last_error());
            if (c == 0 && s[c] != PK_OK && s[c] != PK_EUNSUPPORTED) /* no fp64: magicfilter3d */
                tap_diag("%s=bogus, PK_OPT_IGNORE_ENV: %s", var[k], pk_last_error());
        }
        runs &= s[0] == PK_OK || (k == 3 && s[0] == PK_EUNSUPPORTED);
        fails &= s[1] == PK_EINVAL || (k == 3 && s[1] == PK_EUNSUPPORTED);
    }
    ok(runs, "every OpenCL scheme variable bogus: the kernels run under PK_OPT_IGNORE_ENV");
    ok(fails, "... and fail with PK_EINVAL naming the variable in a context that reads it");
    pk_context_destroy(ign);
    pk_context_destroy(env);
    clear_env();
}

/* openmp.threads: an OpenMP plan's team where the context's count is 0 (the reason says so);
 * the context's count wins; a reset goes back to OpenMP's default. */
static void check_threads(void)
{
    pk_context *ctx = make_ctx(PK_BACKEND_OPENMP, 1);
    if (!pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL)) {
        tap_skip("openmp unavailable", "openmp.threads (3 checks)");
        pk_context_destroy(ctx);
        return;
    }
    pk_run_info info;
    pk_status s = pk_context_set_param(ctx, "openmp.threads", "1");
    if (s == PK_OK) s = run_isa_kernel(ctx, 1, &info);
    ok(s == PK_OK && has(info.reason, "1 threads (openmp.threads)"),
       "openmp.threads=1: the OpenMP plan runs 1 thread, the reason says so (%s)",
       s ? pk_last_error() : info.reason);
    pk_context_set_param(ctx, "openmp.threads", NULL);
    s = run_isa_kernel(ctx, 1, &info);
    ok(s == PK_OK && !has(info.reason, "openmp.threads"),
       "a reset: OpenMP's default team, no note (%s)", s ? pk_last_error() : info.reason);
    pk_context_destroy(ctx);
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_OPENMP;
    o.threads = 2;
    o.flags = PK_OPT_IGNORE_ENV;
    s = pk_context_create(&ctx, &o);
    if (s == PK_OK) s = pk_context_set_param(ctx, "openmp.threads", "1");
    if (s == PK_OK) s = run_isa_kernel(ctx, 1, &info);
    ok(s == PK_OK && !has(info.reason, "openmp.threads"),
       "the context's threads = 2 beats openmp.threads=1 (%s)", s ? pk_last_error() : info.reason);
    pk_context_destroy(ctx);
}

int main(void)
{
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    clear_env();
    check_list();
    check_set_get();
    check_env();
    check_conv2d();
    check_isa();
    check_threads();
    check_cl();
    return tap_done();
}
