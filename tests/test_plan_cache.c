/* test_plan_cache.c - the one-shot calls' plans kept in the context (lib/dispatch.c):
 *
 *  - on every usable backend, for diffusion3d, conv2d, magicfilter3d, laplace2d, su3 and
 *    dslash: a second call of the same shape on new data reuses the first call's plan (no
 *    create: setup_s is 0 and the reason says "plan reused"), and both results equal the
 *    serial reference within the kernel's tolerance;
 *  - a call of another shape, another conv2d PSF of the same shape, or another variant makes
 *    a new plan (and is right); pk_context_release_cache drops every plan;
 *  - PORTKERN_PLAN_CACHE=0 keeps none; more shapes than slots evict the least recently used;
 *    the memory ceiling (pk_context_set_cache_limit, PORTKERN_PLAN_CACHE_MB) is never
 *    exceeded: a larger plan is not kept, the least recently used go first;
 *  - grid's one-shot plan is kept under its parameters, supports and whole kernel stack: a
 *    changed sample or other supports make a new plan; image's and degrid's under the same
 *    key and the image size (serial and OpenMP), their results bitwise a fresh plan's;
 *  - on serial and OpenMP the one-shot calls of conv2d and su3 (64-byte aligned arrays), on
 *    serial dslash's (OpenMP's default omp-vnode converts to its lanes), run on the caller's
 *    arrays through the kept plan's execute (transfer_s 0);
 *  - a second one-shot call of the same shape allocates no large buffer (posix_memalign, which
 *    the library's aligned buffers come from, counted by this program's own definition of it,
 *    for requests of 1 MiB and more) on serial and OpenMP, every kernel but grid, including
 *    the layouts staged on the host (laplace2d hvfo, dslash recon12): the staging arrays
 *    stay in the context; pk_context_release_cache frees them (the next call allocates
 *    again); su3 hvfo, converted block by block, allocates none at all.
 * Tolerances: the kernels' own (tests/<kernel>_common.h derive them); here the same data
 * runs twice, so each result is compared with the reference at the loosest of those, 1e-5
 * relative in float and 1e-12 in double (su3: 3 complex products a component,
 * element-wise; dslash: 8 hops summed, which can cancel, so norm-wise, as tests/ds_common.h
 * does).
 */
#define _GNU_SOURCE
#include "portkern.h"
#include "tap.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large aligned allocations, counted: the library's buffers (pk_alloc_aligned) come from
 * posix_memalign, which this definition takes the place of (the executable's symbol first). */
static long big_allocs;
__attribute__((visibility("default"))) /* the build hides symbols by default */
int posix_memalign(void **p, size_t align, size_t bytes)
{
    static int (*real)(void **, size_t, size_t);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "posix_memalign");
    if (bytes >= ((size_t)1 << 20)) __atomic_add_fetch(&big_allocs, 1, __ATOMIC_RELAXED);
    return real(p, align, bytes);
}

static int reused(const pk_run_info *i) { return i->setup_s == 0 && strstr(i->reason, "plan reused"); }

static void fill_f32(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; ++i) x[i] = (float)((i * 37u + seed * 101u) % 97u) / 97.0f;
}

static void fill_f64(double *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; ++i) x[i] = (double)((i * 41u + seed * 13u) % 89u) / 89.0 - 0.5;
}

static pk_context *context(pk_backend_id b)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = b;
    o.threads = b == PK_BACKEND_OPENMP ? 2 : 0;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        exit(1);
    }
    return ctx;
}

/* two calls of one kernel on one backend: first fresh, second reused, both right */
static void twice(pk_backend_id b, const char *kernel, int first_ok, const pk_run_info *i1,
                  int second_ok, const pk_run_info *i2)
{
    ok(first_ok && !reused(i1), "%s %s: first call makes a plan and is right (setup %.2e s)",
       pk_backend_name(b), kernel, i1->setup_s);
    ok(second_ok && reused(i2), "%s %s: second call of the same shape on new data reuses it "
       "and is right (setup %.2e s; %s)", pk_backend_name(b), kernel, i2->setup_s, i2->reason);
}

static void kernels_on(pk_backend_id b)
{
    pk_context *ctx = context(b);
    pk_run_info i1, i2;

    /* diffusion3d */
    {
        enum { NX = 13, NY = 9, NZ = 7, N = NX * NY * NZ };
        pk_diffusion3d_params p;
        pk_diffusion3d_params_default(&p, NX, NY, NZ, 3);
        float f[2][N], r[2][N];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        for (int k = 0; k < 2; ++k) {
            fill_f32(f[k], N, (unsigned)k + 1);
            memcpy(r[k], f[k], sizeof r[k]);
            pk_diffusion3d_reference(&p, r[k]);
            good[k] = pk_diffusion3d(ctx, &p, NULL, f[k], inf[k]) == PK_OK &&
                      pk_diff_f32(f[k], r[k], N, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
        }
        twice(b, "diffusion3d", good[0], &i1, good[1], &i2);
        pk_diffusion3d_params q;
        pk_diffusion3d_params_default(&q, NX + 1, NY, NZ, 3);
        float g[(NX + 1) * NY * NZ];
        fill_f32(g, sizeof g / sizeof g[0], 5);
        ok(pk_diffusion3d(ctx, &q, NULL, g, &i1) == PK_OK && !reused(&i1),
           "%s diffusion3d: another shape makes another plan", pk_backend_name(b));
        pk_context_release_cache(ctx);
        fill_f32(f[0], N, 1);
        ok(pk_diffusion3d(ctx, &p, NULL, f[0], &i1) == PK_OK && !reused(&i1) &&
               pk_diff_f32(f[0], r[0], N, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
           "%s diffusion3d: after pk_context_release_cache, a fresh plan, right",
           pk_backend_name(b));
    }

    /* conv2d, and another PSF of the same shape */
    {
        enum { H = 17, W = 23, KH = 5, KW = 3 };
        pk_conv2d_params p = {H, W, KH, KW, PK_CONV2D_DIRECT};
        float img[2][H * W], psf[2][KH * KW], out[H * W], ref[H * W];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        fill_f32(psf[0], KH * KW, 3);
        for (int k = 0; k < 2; ++k) {
            fill_f32(img[k], H * W, (unsigned)k + 7);
            pk_conv2d_reference(&p, img[k], psf[0], ref);
            good[k] = pk_conv2d(ctx, &p, NULL, img[k], psf[0], out, inf[k]) == PK_OK &&
                      pk_diff_f32(out, ref, H * W, 1e-5, 1e-6, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
        }
        twice(b, "conv2d", good[0], &i1, good[1], &i2);
        if (b == PK_BACKEND_SERIAL || b == PK_BACKEND_OPENMP)
            ok(i1.transfer_s == 0 && i2.transfer_s == 0, "%s conv2d: no copy in or out (transfer "
               "%.2e, %.2e s)", pk_backend_name(b), i1.transfer_s, i2.transfer_s);
        fill_f32(psf[1], KH * KW, 11);
        pk_conv2d_reference(&p, img[0], psf[1], ref);
        ok(pk_conv2d(ctx, &p, NULL, img[0], psf[1], out, &i1) == PK_OK && !reused(&i1) &&
               pk_diff_f32(out, ref, H * W, 1e-5, 1e-6, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
           "%s conv2d: another PSF of the same shape makes another plan, right",
           pk_backend_name(b));
    }

    /* magicfilter3d */
    {
        enum { N1 = 9, N2 = 8, N3 = 7, N = N1 * N2 * N3 };
        pk_magicfilter3d_params p = {N1, N2, N3, 0, PK_MF_PERIODIC};
        double x[2][N], y[N], r[N];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        for (int k = 0; k < 2; ++k) {
            fill_f64(x[k], N, (unsigned)k + 2);
            pk_magicfilter3d_reference(&p, x[k], r);
            good[k] = pk_magicfilter3d(ctx, &p, NULL, x[k], y, inf[k]) == PK_OK &&
                      pk_diff_f64(y, r, N, 1e-12, 1e-14, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
        }
        twice(b, "magicfilter3d", good[0], &i1, good[1], &i2);
    }

    /* laplace2d */
    {
        enum { L = 32, N = L * L };
        pk_laplace2d_params p = {L, 4, 0.25, PK_LAP_LEXI, 0};
        float phi[2][N], r[2][N];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        for (int k = 0; k < 2; ++k) {
            fill_f32(phi[k], N, (unsigned)k + 4);
            memcpy(r[k], phi[k], sizeof r[k]);
            pk_laplace2d_reference(&p, r[k]);
            good[k] = pk_laplace2d(ctx, &p, NULL, phi[k], inf[k]) == PK_OK &&
                      pk_diff_f32(phi[k], r[k], N, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
        }
        twice(b, "laplace2d", good[0], &i1, good[1], &i2);
    }

    /* su3: 64-byte aligned arrays, so that the host backends run on them without copies
     * (transfer_s 0) */
    {
        enum { NV = 64 };
        pk_su3_params p = {NV, PK_SU3_AOS, 0};
        static double u[2][NV * 18] __attribute__((aligned(64))),
            psi[2][NV * 24] __attribute__((aligned(64))), chi[NV * 24] __attribute__((aligned(64))),
            r[NV * 24];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        for (int k = 0; k < 2; ++k) {
            pk_lqcd_random_su3(10 + (uint64_t)k, NV, u[k]);
            pk_lqcd_random_complex(20 + (uint64_t)k, NV * 12, psi[k]);
            pk_su3_reference(NV, u[k], psi[k], r);
            good[k] = pk_su3(ctx, &p, NULL, u[k], psi[k], chi, inf[k]) == PK_OK &&
                      pk_diff_f64(chi, r, NV * 24, 1e-12, 1e-14, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
        }
        twice(b, "su3", good[0], &i1, good[1], &i2);
        if (b == PK_BACKEND_SERIAL || b == PK_BACKEND_OPENMP)
            ok(i1.transfer_s == 0 && i2.transfer_s == 0, "%s su3 on aligned arrays: no copy in "
               "or out (transfer %.2e, %.2e s)", pk_backend_name(b), i1.transfer_s, i2.transfer_s);
    }

    /* dslash */
    {
        enum { V = 4 * 4 * 4 * 4 };
        pk_dslash_params p = {4, 4, 4, 4, 0.13, 0, 0, 0, 0, 0};
        static double u[2][4 * V * 18], psi[2][V * 24], chi[V * 24], r[V * 24];
        int good[2];
        pk_run_info *inf[2] = {&i1, &i2};
        for (int k = 0; k < 2; ++k) {
            pk_lqcd_random_su3(30 + (uint64_t)k, 4 * V, u[k]);
            pk_lqcd_random_complex(40 + (uint64_t)k, V * 12, psi[k]);
            pk_dslash_reference(&p, u[k], psi[k], r);
            good[k] = pk_dslash(ctx, &p, NULL, u[k], psi[k], chi, inf[k]) == PK_OK &&
                      pk_diff_f64(chi, r, V * 24, 1e-12, 0, PK_DIFF_NORM, NULL) == PK_OK;
        }
        twice(b, "dslash", good[0], &i1, good[1], &i2);
        if (b == PK_BACKEND_SERIAL) /* openmp's first variant, omp-vnode, converts: transfer */
            ok(i1.transfer_s == 0 && i2.transfer_s == 0, "%s dslash: no copy in or out (transfer "
               "%.2e, %.2e s)", pk_backend_name(b), i1.transfer_s, i2.transfer_s);
    }
    pk_context_destroy(ctx);
}

/* More shapes than the cache has slots (8): the least recently used goes first. */
static void eviction(void)
{
    pk_context *ctx = context(PK_BACKEND_SERIAL);
    pk_run_info info;
    float f[4 * 4 * 20];
    int fresh_ok = 1;
    for (int k = 0; k < 9; ++k) { /* shapes 4 x 4 x (1 .. 9): the ninth evicts the first */
        pk_diffusion3d_params p;
        pk_diffusion3d_params_default(&p, 4, 4, k + 1, 1);
        fill_f32(f, (size_t)16 * (k + 1), 1);
        fresh_ok &= pk_diffusion3d(ctx, &p, NULL, f, &info) == PK_OK && !reused(&info);
    }
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 4, 4, 9, 1);
    const int last_kept = pk_diffusion3d(ctx, &p, NULL, f, &info) == PK_OK && reused(&info);
    pk_diffusion3d_params_default(&p, 4, 4, 1, 1);
    const int first_gone = pk_diffusion3d(ctx, &p, NULL, f, &info) == PK_OK && !reused(&info);
    ok(fresh_ok && last_kept && first_gone, "9 shapes through 8 slots: the newest is kept, the "
       "least recently used was dropped");
    pk_context_destroy(ctx);
}

/* The memory ceiling: diffusion3d 8 x 8 x 8 holds 2 x 2048 bytes, 16 x 16 x 16 2 x 16 KiB. */
static void ceiling(void)
{
    pk_context *ctx = context(PK_BACKEND_SERIAL);
    pk_run_info info;
    static float f[16 * 16 * 16];
    pk_diffusion3d_params small, big;
    pk_diffusion3d_params_default(&small, 8, 8, 8, 1);
    pk_diffusion3d_params_default(&big, 16, 16, 16, 1);
    fill_f32(f, 16 * 16 * 16, 2);
    /* 20 KiB: the small plan (4 KiB) fits, the big one (32 KiB) is never kept */
    int good = pk_context_set_cache_limit(ctx, 20 << 10) == PK_OK;
    good &= pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK;
    good &= pk_diffusion3d(ctx, &big, NULL, f, &info) == PK_OK && !reused(&info);
    good &= pk_diffusion3d(ctx, &big, NULL, f, &info) == PK_OK;
    const int big_not_kept = good && !reused(&info);
    good &= pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK;
    const int small_kept = good && reused(&info);
    ok(big_not_kept && small_kept, "a plan larger than the ceiling is not kept, a smaller one "
       "beside it is");
    /* 6 KiB: one small plan at a time; another shape of the same size evicts it */
    pk_diffusion3d_params other;
    pk_diffusion3d_params_default(&other, 8, 8, 9, 1);
    good = pk_context_set_cache_limit(ctx, 6 << 10) == PK_OK;
    good &= pk_diffusion3d(ctx, &other, NULL, f, &info) == PK_OK && !reused(&info);
    good &= pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK;
    ok(good && !reused(&info), "under a ceiling of one plan, a second shape evicts the first");
    good = pk_context_set_cache_limit(ctx, 0) == PK_OK;
    good &= pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK && !reused(&info);
    ok(good, "pk_context_set_cache_limit(0) drops every plan now and keeps none after");
    ok(pk_context_set_cache_limit(NULL, 1) == PK_ENULL, "pk_context_set_cache_limit(NULL): PK_ENULL");
    pk_context_destroy(ctx);

    setenv("PORTKERN_PLAN_CACHE_MB", "-1", 1);
    pk_context *bad = NULL;
    pk_context_options o;
    pk_context_options_init(&o);
    const pk_status s = pk_context_create(&bad, &o);
    ok(s == PK_EINVAL && !bad && strstr(pk_last_error(), "PORTKERN_PLAN_CACHE_MB"),
       "PORTKERN_PLAN_CACHE_MB=-1: refused at context creation (%s)", pk_last_error());
    setenv("PORTKERN_PLAN_CACHE_MB", "0", 1);
    ctx = context(PK_BACKEND_SERIAL);
    good = pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK &&
           pk_diffusion3d(ctx, &small, NULL, f, &info) == PK_OK && !reused(&info);
    ok(good, "PORTKERN_PLAN_CACHE_MB=0: nothing kept");
    pk_context_destroy(ctx);
    unsetenv("PORTKERN_PLAN_CACHE_MB");
}

static void switched_off(void)
{
    setenv("PORTKERN_PLAN_CACHE", "0", 1);
    pk_context *ctx = NULL;
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_SERIAL;
    pk_status s = pk_context_create(&ctx, &o);
    float f[64];
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 4, 4, 4, 1);
    pk_run_info i1, i2;
    fill_f32(f, 64, 1);
    int good = s == PK_OK && pk_diffusion3d(ctx, &p, NULL, f, &i1) == PK_OK &&
               pk_diffusion3d(ctx, &p, NULL, f, &i2) == PK_OK;
    ok(good && !reused(&i1) && !reused(&i2), "PORTKERN_PLAN_CACHE=0: no plan is reused");
    pk_context_destroy(ctx);
    setenv("PORTKERN_PLAN_CACHE", "maybe", 1);
    ctx = NULL;
    s = pk_context_create(&ctx, &o);
    ok(s == PK_EINVAL && ctx == NULL && strstr(pk_last_error(), "PORTKERN_PLAN_CACHE"),
       "PORTKERN_PLAN_CACHE=maybe: refused at context creation (%s)", pk_last_error());
    unsetenv("PORTKERN_PLAN_CACHE");
}

/* grid: the plan is its parameters, supports and kernel stack.  One visibility at a cell
 * centre (9 updates, each adding Re K = the sample value to norm): the same stack again
 * reuses the plan, a stack with one value changed (same shape) or other supports makes a new
 * one and grids with it, going back to the first stack finds its plan again. */
static void grid_cached(pk_backend_id b)
{
    pk_context *ctx = context(b);
    pk_grid_params p;
    pk_grid_params_init(&p);
    p.grid_size = 16;
    p.oversample = 2;
    p.cell_size_rad = 1e-3;
    p.w_scale = 0;
    p.num_w_planes = 1;
    p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    const int32_t sup1[1] = {1}, sup2[1] = {2};
    size_t n1 = 0, n2 = 0;
    pk_grid_kernel_count(&p, sup1, &n1);
    pk_grid_kernel_count(&p, sup2, &n2);
    float *k1 = calloc(2 * n1, sizeof *k1), *k2 = calloc(2 * n1, sizeof *k2);
    float *k3 = calloc(2 * n2, sizeof *k3);
    for (size_t i = 0; i < n1; ++i) k1[2 * i] = k2[2 * i] = 1.0f;
    for (size_t i = 0; i < n2; ++i) k3[2 * i] = 1.0f;
    k2[0] = 3.0f; /* the centre sample: the visibility's own cell */
    float uu = 0, vv = 0, ww = 0, vis[2] = {1, 0}, wt = 1;
    pk_grid_data d = {1, &uu, &vv, &ww, vis, &wt};
    float *grid = calloc(2 * 16 * 16, sizeof *grid);
    /* stacks in call order, the norm each must give, whether the plan is reused */
    const float *const stack[5] = {k1, k1, k2, k3, k1};
    const int32_t *const sup[5] = {sup1, sup1, sup1, sup2, sup1};
    const double want[5] = {9, 9, 11, 25, 9};
    const int reuse[5] = {0, 1, 0, 0, 1};
    int good = 1;
    char why[256] = "";
    for (int c = 0; c < 5; ++c) {
        double norm = 0;
        int64_t sk = -1;
        pk_run_info info;
        memset(grid, 0, 2 * 16 * 16 * sizeof *grid);
        const pk_status s = pk_grid(ctx, &p, NULL, sup[c], stack[c], &d, grid, &norm, &sk, &info);
        const float centre = grid[2 * (8 * 16 + 8)];
        if (s != PK_OK || norm != want[c] || sk != 0 || centre != (c == 2 ? 3.0f : 1.0f) ||
            reused(&info) != reuse[c]) {
            good = 0;
            snprintf(why, sizeof why, "; call %d: %s, norm %g (want %g), centre %g, %s", c + 1,
                     pk_status_name(s), norm, want[c], centre,
                     reused(&info) ? "plan reused" : "new plan");
        }
    }
    ok(good, "%s grid one-shot: the same stack reuses the plan, a changed sample or other "
       "supports make a new one and grid with it, the first stack finds its plan again%s",
       pk_backend_name(b), why);
    free(k1);
    free(k2);
    free(k3);
    free(grid);
    pk_context_destroy(ctx);
}

/* image and degrid: their one-shot plans (a grid plan, FFTW plans and a g x g grid) are kept
 * under grid's key plus the image size: calls in order with stacks a, a, b (every sample
 * scaled), a at another image size, a again (its plan found), and after
 * pk_context_release_cache a once more.  Each result must be bitwise that of a plan made for
 * the call in a fresh context (same backend, same plan type: the same arithmetic), and the
 * plan reused exactly where the key repeats; the run info's plan_bytes the grid's 8 g^2 either
 * way. */
static void image_cached(pk_backend_id b)
{
    pk_image_params p;
    pk_image_params_init(&p);
    p.grid.grid_size = 32;
    p.grid.oversample = 2;
    p.grid.cell_size_rad = 1e-3;
    p.grid.w_scale = 0;
    p.grid.num_w_planes = 1;
    p.grid.kernel_layout = PK_GRID_KERNELS_COMPACT;
    const int32_t sup[1] = {1};
    size_t nk = 0;
    pk_grid_kernel_count(&p.grid, sup, &nk);
    const int m = 1 + 1 * 2 + 1; /* os/2 + s os + 1 samples per compact axis */
    float *ka = calloc(2 * nk, sizeof *ka), *kb = calloc(2 * nk, sizeof *kb);
    for (int iy = 0; iy < m; ++iy) /* a Gaussian: its correction has no zero */
        for (int ix = 0; ix < m; ++ix)
            ka[2 * (iy * m + ix)] = (float)exp(-0.125 * (double)(ix * ix + iy * iy));
    for (size_t i = 0; i < 2 * nk; ++i) kb[i] = 1.5f * ka[i]; /* plane 0 must stay separable */
    enum { NV = 7 };
    float uu[NV], vv[NV], ww[NV], vis[2 * NV], wt[NV];
    for (int i = 0; i < NV; ++i) {
        uu[i] = (float)(1.7 * i - 5.1);
        vv[i] = (float)(4.3 - 1.3 * i);
        ww[i] = 0;
        vis[2 * i] = 1.0f + 0.1f * (float)i;
        vis[2 * i + 1] = 0.05f * (float)i;
        wt[i] = 1;
    }
    pk_grid_data d = {NV, uu, vv, ww, vis, wt};
    const float *const stack[6] = {ka, ka, kb, ka, ka, ka};
    const int size[6] = {16, 16, 16, 8, 16, 16};
    const int reuse[6] = {0, 1, 0, 0, 1, 0};
    float img[16 * 16], want[16 * 16], model[16 * 16], pv[2 * NV], pv_want[2 * NV];
    for (int i = 0; i < 16 * 16; ++i) model[i] = (float)((i * 37) % 11) / 11.0f;
    pk_context *ctx = context(b), *fresh = context(b);
    int good = 1;
    char why[512] = "";
    for (int c = 0; c < 6 && good; ++c) {
        if (c == 5) pk_context_release_cache(ctx);
        p.image_size = size[c];
        const int n = size[c];
        pk_run_info ii, di;
        double norm = 0, wnorm = 0;
        int64_t sk = -1;
        pk_status s = pk_image(ctx, &p, NULL, sup, stack[c], &d, img, &norm, &sk, &ii);
        if (s == PK_EUNSUPPORTED && c == 0) {
            tap_skip(pk_last_error(), "%s image and degrid one-shot plans kept", pk_backend_name(b));
            good = -1;
            break;
        }
        if (s == PK_OK) s = pk_degrid(ctx, &p, NULL, sup, stack[c], model, &d, pv, NULL, &di);
        pk_image_plan *ip = NULL;
        pk_degrid_plan *dp = NULL;
        pk_status f = pk_image_plan_create(&ip, fresh, &p, NULL, sup, stack[c], NULL);
        if (f == PK_OK) f = pk_image_plan_execute(ip, &d, want, &wnorm, NULL, NULL);
        if (f == PK_OK) f = pk_degrid_plan_create(&dp, fresh, &p, NULL, sup, stack[c], NULL);
        if (f == PK_OK) f = pk_degrid_plan_execute(dp, model, &d, pv_want, NULL, NULL);
        pk_image_plan_destroy(ip);
        pk_degrid_plan_destroy(dp);
        if (s != PK_OK || f != PK_OK || norm != wnorm ||
            memcmp(img, want, (size_t)n * n * sizeof *img) != 0 ||
            memcmp(pv, pv_want, sizeof pv) != 0 || reused(&ii) != reuse[c] ||
            reused(&di) != reuse[c] || ii.plan_bytes != 8.0 * 32 * 32 ||
            di.plan_bytes != 8.0 * 32 * 32) {
            good = 0;
            snprintf(why, sizeof why, "; call %d: %s / %s (%.200s), image %s, vis %s, image "
                     "plan %s, degrid plan %s", c + 1, pk_status_name(s), pk_status_name(f),
                     s == PK_OK && f == PK_OK ? "" : pk_last_error(),
                     s == PK_OK && memcmp(img, want, (size_t)n * n * sizeof *img) == 0 ? "same" : "differs",
                     s == PK_OK && memcmp(pv, pv_want, sizeof pv) == 0 ? "same" : "differs",
                     reused(&ii) ? "reused" : "new", reused(&di) ? "reused" : "new");
        }
    }
    if (good >= 0)
        ok(good, "%s image and degrid one-shot: the same stack and size reuse their plans, "
           "changed samples or image size make new ones, results bitwise a fresh plan's%s",
           pk_backend_name(b), why);
    free(ka);
    free(kb);
    pk_context_destroy(ctx);
    pk_context_destroy(fresh);
}

/* Each kernel's one-shot call twice (same shape), then once more after
 * pk_context_release_cache: large allocations in each. */
typedef int (*call_fn)(pk_context *ctx, void *arrays);
typedef struct big { float *f, *g; double *u, *psi, *chi, *x, *y; } big;

static int call_d3(pk_context *ctx, void *a)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 64, 64, 64, 3);
    return pk_diffusion3d(ctx, &p, NULL, ((big *)a)->f, NULL);
}
static int call_cv(pk_context *ctx, void *a)
{
    const pk_conv2d_params p = {512, 512, 11, 11, PK_CONV2D_AUTO};
    static float psf[121];
    for (int i = 0; i < 121; ++i) psf[i] = 1.0f / 121;
    return pk_conv2d(ctx, &p, NULL, ((big *)a)->f, psf, ((big *)a)->g, NULL);
}
static int call_mf(pk_context *ctx, void *a)
{
    const pk_magicfilter3d_params p = {64, 64, 64, 0, PK_MF_PERIODIC};
    return pk_magicfilter3d(ctx, &p, NULL, ((big *)a)->x, ((big *)a)->y, NULL);
}
static int call_lp(pk_context *ctx, void *a)
{
    const pk_laplace2d_params p = {512, 2, 0.1, PK_LAP_HVFO, 0};
    return pk_laplace2d(ctx, &p, NULL, ((big *)a)->f, NULL);
}
static int call_s3(pk_context *ctx, void *a)
{
    const pk_su3_params p = {16384, PK_SU3_HVFO, 0};
    return pk_su3(ctx, &p, NULL, ((big *)a)->u, ((big *)a)->psi, ((big *)a)->chi, NULL);
}
static int call_ds(pk_context *ctx, void *a)
{
    const pk_dslash_params p = {8, 8, 8, 8, 0.125, 1, 0, 0, 0, 0};
    return pk_dslash(ctx, &p, NULL, ((big *)a)->u, ((big *)a)->psi, ((big *)a)->chi, NULL);
}

static void no_new_buffers(pk_backend_id b)
{
    /* blocked: su3 converts block by block into the plan's small per-thread arrays (lib/
     * su3.c's fused call), so no call of it allocates a large buffer at all; 2: so does
     * OpenMP's laplace2d (omp-tb, the default, makes every pass in place on the caller's
     * field, its rows converted in per-thread rows), not serial's */
    static const struct { const char *name; call_fn fn; int blocked; } calls[] = {
        {"diffusion3d 64^3", call_d3, 0}, {"conv2d 512^2", call_cv, 0},
        {"magicfilter3d 64^3", call_mf, 0}, {"laplace2d 512^2 hvfo", call_lp, 2},
        {"su3 16384 hvfo", call_s3, 1}, {"dslash 8^4 recon12", call_ds, 0}};
    big a; /* every array 8 MiB, filled: more than any call here reads or writes */
    const size_t n = (size_t)1 << 20;
    a.f = malloc(n * sizeof(float)), a.g = malloc(n * sizeof(float));
    a.u = malloc(n * sizeof(double)), a.psi = malloc(n * sizeof(double));
    a.chi = malloc(n * sizeof(double)), a.x = malloc(n * sizeof(double));
    a.y = malloc(n * sizeof(double));
    fill_f32(a.f, n, 1);
    fill_f32(a.g, n, 2);
    fill_f64(a.u, n, 3);
    fill_f64(a.psi, n, 4);
    fill_f64(a.x, n, 5);
    pk_context *ctx = context(b);
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; ++k) {
        long n0 = big_allocs;
        int s1 = calls[k].fn(ctx, &a);
        long first = big_allocs - n0;
        n0 = big_allocs;
        int s2 = calls[k].fn(ctx, &a);
        long second = big_allocs - n0;
        pk_context_release_cache(ctx);
        n0 = big_allocs;
        int s3 = calls[k].fn(ctx, &a);
        long after = big_allocs - n0;
        /* after the release the call allocates again (not always as many as the first: a
         * staging array the kernel before left large enough served the first call) */
        const int blocked = calls[k].blocked == 1 || (calls[k].blocked == 2 &&
                                                      b == PK_BACKEND_OPENMP);
        const int counts = blocked ? first == 0 && after == 0 : first > 0 && after > 0;
        ok(s1 == PK_OK && s2 == PK_OK && s3 == PK_OK && counts && second == 0,
           "%s %s: the second one-shot call allocates no large buffer%s (first %ld, second %ld, "
           "after pk_context_release_cache %ld)", pk_backend_name(b), calls[k].name,
           blocked ? ", nor the first (converted in per-thread blocks or rows)" : "", first,
           second, after);
    }
    pk_context_destroy(ctx);
    free(a.f), free(a.g), free(a.u), free(a.psi), free(a.chi), free(a.x), free(a.y);
}

int main(void)
{
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    unsetenv("PORTKERN_PLAN_CACHE");
    pk_context *probe = context(PK_BACKEND_AUTO);
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        const char *why = "";
        if (pk_backend_available(probe, (pk_backend_id)b, &why))
            kernels_on((pk_backend_id)b);
        else
            tap_skip(why, "%s: plans kept between one-shot calls", pk_backend_name((pk_backend_id)b));
    }
    no_new_buffers(PK_BACKEND_SERIAL);
    if (pk_backend_available(probe, PK_BACKEND_OPENMP, NULL))
        no_new_buffers(PK_BACKEND_OPENMP);
    else
        for (int k = 0; k < 6; ++k) tap_skip("OpenMP unavailable", "no new buffers on openmp");
    grid_cached(PK_BACKEND_SERIAL);
    if (pk_backend_available(probe, PK_BACKEND_OPENMP, NULL))
        grid_cached(PK_BACKEND_OPENMP);
    else
        tap_skip("OpenMP unavailable", "openmp grid one-shot plans kept");
    image_cached(PK_BACKEND_SERIAL);
    if (pk_backend_available(probe, PK_BACKEND_OPENMP, NULL))
        image_cached(PK_BACKEND_OPENMP);
    else
        tap_skip("OpenMP unavailable", "openmp image and degrid one-shot plans kept");
    pk_context_destroy(probe);
    eviction();
    ceiling();
    switched_off();
    return tap_done();
}
