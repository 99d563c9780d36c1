/* test_cost.c - auto's cost model (lib/cost.c): a device across a link goes first only when
 * its estimate, transfers included, beats OpenMP's.
 *
 * No GPU here: PORTKERN_TEST_COST_DEVICE=opencl lets OpenCL's GPU turn of the auto order take
 * PoCL's CPU device, with the link the OpenCL backend measures, so that the model runs.
 *  1. Without the hook (a machine without a device): the reason never mentions the model.
 *  2. With it, a tiny diffusion3d (8^3, one step): the device's fixed call cost alone (50 us)
 *     exceeds the host's estimate, so OpenMP goes first and is chosen "by the cost model"; the
 *     result equals the reference.
 *  3. Every decision is consistent: the backend chosen is the one the note puts first, and
 *     "a > b" / "a <= b" holds for the printed estimates; transfers <= the device's estimate.
 *     Cases: diffusion3d 64^3 x 50, conv2d 256^2 direct 31x31 (compute-heavy: the model does
 *     not count a device's flops, so the device may go first), su3, magicfilter3d, laplace2d,
 *     dslash.
 *  4. PORTKERN_COST_MODEL=0: the fixed order, no note. */
#include "portkern.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The note's numbers: "cost model: B ~X ms (transfers T) >|<= openmp ~H ms: F first". */
static int parse_note(const char *reason, char *dev, double *x, double *t, char *rel, double *h,
                      char *first)
{
    const char *c = strstr(reason, "cost model: ");
    if (!c) return 0;
    char r[3] = "";
    int n = sscanf(c, "cost model: %15s ~%lf ms (transfers %lf) %2s openmp ~%lf ms: %15s first",
                   dev, x, t, r, h, first);
    strcpy(rel, r);
    return n == 6;
}

/* The run info of one call: the model's decision consistent with what ran. */
static void check_consistent(const char *what, int s, const pk_run_info *info)
{
    char dev[16] = "", rel[3] = "", first[16] = "";
    double x = 0, t = 0, h = 0;
    const int parsed = s == PK_OK && parse_note(info->reason, dev, &x, &t, rel, &h, first);
    const int host_first = !strcmp(rel, ">");
    ok(parsed && isfinite(x) && isfinite(h) && x > 0 && h > 0 && t >= 0 && t <= x &&
           (host_first ? x > h : x <= h) &&
           !strcmp(first, host_first ? "openmp" : dev) &&
           !strcmp(pk_backend_name(info->backend), first) &&
           strstr(info->reason, "chosen (by the cost model)") != NULL,
       "%s: ran on %s as the model said (%s)", what, pk_backend_name(info->backend),
       s == PK_OK ? info->reason : pk_last_error());
}

static void d3_case(pk_context *ctx, int n, int count, pk_run_info *info, int *status, int *right)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, n, n, n, count);
    const size_t pts = (size_t)n * n * n;
    float *f = malloc(pts * sizeof *f), *r = malloc(pts * sizeof *r);
    pk_diffusion3d_field(n, n, n, 0.0, f);
    memcpy(r, f, pts * sizeof *f);
    *status = pk_diffusion3d(ctx, &p, NULL, f, info);
    pk_diffusion3d_reference(&p, r);
    /* tests/d3_common.h's tolerance (its derivation there) */
    *right = *status == PK_OK &&
             pk_diff_f32(f, r, pts, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    free(f);
    free(r);
}

int main(void)
{
    unsetenv("PORTKERN_COST_MODEL");
    unsetenv("PORTKERN_TEST_COST_DEVICE");
    pk_context *ctx;
    pk_run_info info;
    int s, right;
    if (pk_context_create(&ctx, NULL) != PK_OK) {
        printf("Bail out! %s\n", pk_last_error());
        return 1;
    }
    const int has_gpu = pk_backend_available(ctx, PK_BACKEND_CUDA, NULL);
    d3_case(ctx, 8, 1, &info, &s, &right);
    if (!has_gpu)
        ok(s == PK_OK && right && !strstr(info.reason, "cost model"),
           "no device across a link: the model stays out (%s)", info.reason);
    else
        tap_skip("a CUDA device is here", "no device across a link: the model stays out");
    const int has_cl = pk_backend_available(ctx, PK_BACKEND_OPENCL, NULL) &&
                       pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL);
    pk_context_destroy(ctx);

    if (!has_cl || has_gpu) {
        const char *why = has_gpu ? "a CUDA device comes first in the auto order here"
                                  : "OpenCL or OpenMP unavailable";
        for (int i = 0; i < 10; ++i) tap_skip(why, "the cost model with PoCL as the device");
        return tap_done();
    }
    setenv("PORTKERN_TEST_COST_DEVICE", "opencl", 1);
    pk_context_create(&ctx, NULL);

    d3_case(ctx, 8, 1, &info, &s, &right);
    ok(s == PK_OK && right && info.backend == PK_BACKEND_OPENMP &&
           strstr(info.reason, "openmp first") && strstr(info.reason, "by the cost model"),
       "diffusion3d 8^3 x 1: OpenMP before the device, right result (%s)",
       s == PK_OK ? info.reason : pk_last_error());
    check_consistent("diffusion3d 8^3 x 1", s, &info);
    d3_case(ctx, 64, 50, &info, &s, &right);
    ok(right, "diffusion3d 64^3 x 50: right result on %s", pk_backend_name(info.backend));
    check_consistent("diffusion3d 64^3 x 50", s, &info);

    { /* conv2d, direct 31 x 31 */
        const pk_conv2d_params p = {256, 256, 31, 31, PK_CONV2D_DIRECT};
        float *img = malloc(256 * 256 * sizeof *img), *out = malloc(256 * 256 * sizeof *out);
        float *psf = malloc(31 * 31 * sizeof *psf);
        for (int i = 0; i < 256 * 256; ++i) img[i] = (float)((i * 7919) % 1000) / 1000.0f;
        for (int i = 0; i < 31 * 31; ++i) psf[i] = 1.0f / (31 * 31);
        s = pk_conv2d(ctx, &p, NULL, img, psf, out, &info);
        check_consistent("conv2d 256^2, direct 31x31", s, &info);
        free(img);
        free(out);
        free(psf);
    }
    { /* su3, 4096 sites */
        const pk_su3_params p = {4096, PK_SU3_AOS, 0};
        double *u = calloc(4096 * 18, sizeof *u), *psi = calloc(4096 * 24, sizeof *psi);
        double *chi = calloc(4096 * 24, sizeof *chi);
        for (int i = 0; i < 4096; ++i) u[18 * i] = u[18 * i + 8] = u[18 * i + 16] = 1.0;
        s = pk_su3(ctx, &p, NULL, u, psi, chi, &info);
        check_consistent("su3 nv 4096", s, &info);
        free(u);
        free(psi);
        free(chi);
    }
    { /* magicfilter3d 32^3 */
        const pk_magicfilter3d_params p = {32, 32, 32, 0, PK_MF_PERIODIC};
        double *x = calloc(32 * 32 * 32, sizeof *x), *y = calloc(32 * 32 * 32, sizeof *y);
        s = pk_magicfilter3d(ctx, &p, NULL, x, y, &info);
        check_consistent("magicfilter3d 32^3", s, &info);
        free(x);
        free(y);
    }
    { /* laplace2d 256^2 x 10 */
        const pk_laplace2d_params p = {256, 10, 0.1, PK_LAP_LEXI, 0};
        float *phi = calloc(256 * 256, sizeof *phi);
        s = pk_laplace2d(ctx, &p, NULL, phi, &info);
        check_consistent("laplace2d 256^2 x 10", s, &info);
        free(phi);
    }
    { /* dslash 4^4 */
        const pk_dslash_params p = {4, 4, 4, 4, 0.125, 0, 0, 0, 0, 0};
        const size_t v = 256;
        double *u = calloc(4 * v * 18, sizeof *u), *psi = calloc(v * 24, sizeof *psi);
        double *chi = calloc(v * 24, sizeof *chi);
        for (size_t i = 0; i < 4 * v; ++i) u[18 * i] = u[18 * i + 8] = u[18 * i + 16] = 1.0;
        s = pk_dslash(ctx, &p, NULL, u, psi, chi, &info);
        check_consistent("dslash 4^4", s, &info);
        free(u);
        free(psi);
        free(chi);
    }
    pk_context_destroy(ctx);

    setenv("PORTKERN_COST_MODEL", "0", 1);
    pk_context_create(&ctx, NULL);
    d3_case(ctx, 8, 1, &info, &s, &right);
    ok(s == PK_OK && right && !strstr(info.reason, "cost model") &&
           strstr(info.reason, "first usable backend in auto order"),
       "PORTKERN_COST_MODEL=0: the fixed order (%s)", info.reason);
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_COST_MODEL");
    unsetenv("PORTKERN_TEST_COST_DEVICE");
    return tap_done();
}
