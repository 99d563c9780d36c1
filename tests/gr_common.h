/* gr_common.h - the grid test suite every backend runs (test_gr_<backend>.c picks one).
 *
 * Every variant of the suite's backend (pk_grid_variants), on small generated sets (a test
 * generator here: Gaussian-envelope kernels with a w-like quadratic phase, plane 0 real, a
 * per-sample perturbation so that any index error shows; supports 0..6, 15, 70; uv in discs):
 *  1. Accuracy against pk_grid_reference_f64 (odd visibility counts throughout) on:
 *     "uniform" (2001 vis, 1% off the grid), "central" (4001 vis, 70% within 2.5 cells of
 *     the centre), "edge" (footprints exactly touching each side and corner of the grid,
 *     and one cell beyond: skipped), "nonfinite" (NaN, +Inf, -Inf in each of uu, vv, ww,
 *     vis.re, vis.im, weight; |uu|, |vv| = 1e30 and 3e38: skipped; |ww| = 1e30: clamped to
 *     the last plane, gridded; weight 0), "w0" (ww = 0 and -0), "ties" (positions k + 1/2
 *     and kernel offsets exactly on rounding ties, both signs), "os2" and "os6" (oversample
 *     2 and 6), "wide" (support 15 on a 32-cell grid), "wider" (support 70 on a 300-cell
 *     grid: footprints wider than omp-tiled's 128-cell tile, which then takes 256).
 *     Per cell, per component, |G - R| <= E (below); the relative Frobenius error is printed
 *     with the same bound's Frobenius norm; norm to 1e-9 relative (docs/KERNELS.md 1.5);
 *     num_skipped exactly, also against the count this file constructed; no write outside
 *     the grid (guard zones); cells no footprint reaches stay exactly 0.
 *  2. Coverage, exact: the same visibilities with unit kernels, vis 1 and weight 1 must give
 *     per cell exactly the number of footprints covering it (sums of ones are exact in
 *     float below 2^24), whatever the tiles, the order or the atomics; norm = updates.
 *  3. Invariants of docs/KERNELS.md: sum rule (vis = 1: sum Re grid == norm), mirror-conjugate
 *     symmetry (bit for bit on the double references and on the serial variant, whose
 *     float sums run in the same order for both), linearity (3 vis), additivity over
 *     disjoint subsets (norms add, skipped counts add), a single visibility placed on
 *     rounding ties giving the patch the spec predicts (checked on the reference bit for
 *     bit, then on the variant).
 *  4. Parameters: tile_size 1, 7, 16, 64 and 96 (= grid) x central_radius -1, 0, 1, 3, 1000
 *     (tile_factor cycling -1, 0, 0.5, 1), each checked for accuracy and exact coverage;
 *     on opencl-tiled a tile the device's local memory cannot hold (ts^2 x 8 + 1 KiB; NVIDIA
 *     has 48 KiB: 96 does not fit) must be PK_EINVAL at plan creation, and with the library's
 *     local memory capped at 48 and 32 KiB (PORTKERN_TEST_LOCAL_MEM_BYTES) the default tile
 *     must fit and grid right and the same sweep must hold;
 *     plans (run twice accumulates twice, norm accumulates, num_skipped per call; a second
 *     set on the same plan); plan_execute (the same call as plan_run under every kernel's
 *     name: two lists into two grids each equal the reference, the first grid untouched by
 *     the second call, serial and OpenMP copy nothing (transfer_s 0), plan_run before and
 *     after it right, NULL arguments PK_ENULL); run info (backend, variant, flops = 8
 *     updates, stages: for omp-tiled bbox, count, sort, outer, central, reduce); FULL and
 *     COMPACT layouts (a FULL stack whose unreadable samples are NaN,
 *     pk_grid_compact_kernels round trip);
 *     OpenMP with 1 and 3 threads; omp-tiled and serial deterministic (same bits twice);
 *     opencl-tiled's host pass on 1 and 3 threads: the same bits (tiles not split);
 *     serial bit-identical to pk_grid_reference.
 *  5. Bad input through every public function.
 *
 * Error analysis (u = 2^-24).  A variant computes the same float val = fl(vis weight) as
 * the references (docs/KERNELS.md); per cell and component it sums 2n products (a cr, -b' ci)
 * of n visibilities in some order, each product rounded at most once (none under FMA):
 * in any summation order (a binary tree of the 2n summands, including per-thread copies
 * reduced afterwards) the error is <= gamma_{2n+1} sum_i (|a_i||cr_i| + |b_i||ci_i|)
 * (Higham, ASNA, 3.1 and 4.2), gamma_k = k u / (1 - k u).  The bound
 *     E = gamma_{2n+8} A,  A = sum_i |val_i|_1 |c_i|_1   (|z|_1 = |re| + |im|)
 * is computed by the double reference itself on |.|_1 copies of the data and kernels
 * (vis' = (|re| + |im|, 0), weight' = |weight|, kernel' = (|re| + |im|, 0), so that every
 * term of A is >= the term it bounds up to the (1 + 4u) of forming the copies); n per
 * cell comes from the unit-kernel count run.  The slack of 7 in the index covers those
 * copies and the double reference's own error (2n 2^-53 A).  For k runs accumulated into
 * one grid, n and A scale by k.  Invariants combine bounds by the triangle inequality
 * through the double references, whose identities hold exactly (mirror: bit for bit, as
 * docs/KERNELS.md 1.6 states: negation is exact, roundf is odd, the kernel index uses |.|,
 * conv_conj flips with the sign of w except at w = 0, where plane 0 here is real; the
 * grids' row and column 0 have no mirror and are left empty by the data).
 */
#ifndef PK_TEST_GR_COMMON_H
#define PK_TEST_GR_COMMON_H
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GR_U 0x1p-24
#define GR_NORM_RTOL 1e-9 /* docs/KERNELS.md */
#define GR_GUARD 64       /* floats before and after every grid that must stay untouched */
#define GR_SENTINEL 12345.5f

static pk_context *gr_ctx;
static pk_backend_id gr_backend;

static void *gr_xalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        printf("Bail out! out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static void *gr_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("Bail out! out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

/* splitmix64 */
static uint64_t gr_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double gr_unif(uint64_t *s) { return (double)(gr_next(s) >> 11) * 0x1p-53; }

/* ---- data sets -------------------------------------------------------------------------- */
typedef struct gr_set {
    const char *name;
    pk_grid_params p;   /* COMPACT layout */
    int32_t *support;
    float *kern;        /* compact stack */
    size_t kcount;      /* complex samples */
    size_t n, cap;
    float *uu, *vv, *ww, *vis, *wt;
    int64_t expect_skipped; /* -1: not constructed */
    double w_max;
} gr_set;

static void gr_set_free(gr_set *s)
{
    free(s->support);
    free(s->kern);
    free(s->uu);
    free(s->vv);
    free(s->ww);
    free(s->vis);
    free(s->wt);
    memset(s, 0, sizeof *s);
}

static pk_grid_data gr_data(const gr_set *s)
{
    pk_grid_data d;
    d.num_vis = s->n;
    d.uu = s->uu;
    d.vv = s->vv;
    d.ww = s->ww;
    d.vis = s->vis;
    d.weight = s->wt;
    return d;
}

static size_t gr_cells(const gr_set *s) { return (size_t)s->p.grid_size * s->p.grid_size; }

static void gr_set_reserve(gr_set *s, size_t cap)
{
    s->cap = cap;
    s->n = 0;
    s->uu = gr_xalloc(cap * sizeof(float));
    s->vv = gr_xalloc(cap * sizeof(float));
    s->ww = gr_xalloc(cap * sizeof(float));
    s->vis = gr_xalloc(2 * cap * sizeof(float));
    s->wt = gr_xalloc(cap * sizeof(float));
}

static float gr_grid_scale(const gr_set *s) { return (float)(s->p.grid_size * s->p.cell_size_rad); }

/* Append a visibility at grid position (pos_u, pos_v) cells from the centre (so uu =
 * -pos_u / grid_scale, vv = pos_v / grid_scale). */
static void gr_push(gr_set *s, double pos_u, double pos_v, double ww, float vre, float vim,
                    float wt)
{
    if (s->n == s->cap) {
        printf("Bail out! gr_push: set %s full\n", s->name);
        exit(1);
    }
    const double gs = gr_grid_scale(s);
    s->uu[s->n] = (float)(-pos_u / gs);
    s->vv[s->n] = (float)(pos_v / gs);
    s->ww[s->n] = (float)ww;
    s->vis[2 * s->n] = vre;
    s->vis[2 * s->n + 1] = vim;
    s->wt[s->n] = wt;
    ++s->n;
}

/* ww whose plane is exactly w (the centre of its plane's sqrt-spaced w range). */
static double gr_plane_w(const gr_set *s, int w) { return (double)w * w / s->p.w_scale; }

/* Kernel stack: plane w (support sup[w]) holds, at sample (ix, iy) = offset (ix, iy) / os
 * cells, exp(-r^2 / (2 sigma^2)) (1 + 0.05 h) e^{i alpha_w r^2}, h a per-sample hash in
 * [-1/2, 1/2), alpha_0 = 0 (plane 0 real, as physical w = 0 kernels are). */
static void gr_make_kernels(gr_set *s, const int32_t *sup, int np, int os, uint64_t seed)
{
    s->p.num_w_planes = np;
    s->p.oversample = os;
    s->p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    s->support = gr_xalloc((size_t)np * sizeof *s->support);
    memcpy(s->support, sup, (size_t)np * sizeof *sup);
    size_t total = 0;
    for (int w = 0; w < np; ++w) {
        const size_t m = (size_t)(os / 2 + sup[w] * os + 1);
        total += m * m;
    }
    s->kcount = total;
    s->kern = gr_xalloc(2 * total * sizeof(float));
    float *k = s->kern;
    for (int w = 0; w < np; ++w) {
        const int m = os / 2 + sup[w] * os + 1;
        const double sigma = (sup[w] + 0.5) / 2.5, alpha = w == 0 ? 0.0 : 0.9 * w / np;
        for (int iy = 0; iy < m; ++iy)
            for (int ix = 0; ix < m; ++ix) {
                const double x = (double)ix / os, y = (double)iy / os, r2 = x * x + y * y;
                const double amp = exp(-r2 / (2 * sigma * sigma)) *
                                   (1 + 0.05 * (gr_unif(&seed) - 0.5));
                *k++ = (float)(amp * cos(alpha * r2));
                *k++ = (float)(amp * sin(alpha * r2));
            }
    }
}

static void gr_base(gr_set *s, const char *name, int g, double cell, int np, double w_max)
{
    memset(s, 0, sizeof *s);
    pk_grid_params_init(&s->p);
    s->name = name;
    s->p.grid_size = g;
    s->p.cell_size_rad = cell;
    s->w_max = w_max;
    s->p.w_scale = (double)(np - 1) * (np - 1) / w_max;
    s->expect_skipped = -1;
}

static const int32_t gr_sup8[8] = {1, 2, 0, 3, 5, 4, 6, 3};

/* n visibilities: a fraction `central` uniform in the disc of radius r_central, the rest
 * uniform in the disc of radius r_max, a fraction `far` at 200..1000 cells (off the grid);
 * |ww| up to 1.2 w_max (beyond w_max: clamped to the last plane), both signs. */
static void gr_fill_random(gr_set *s, size_t n, uint64_t seed, double r_max, double central,
                           double r_central, double far)
{
    const double pi = 3.14159265358979323846;
    for (size_t i = 0; i < n; ++i) {
        const double pick = gr_unif(&seed);
        double r = pick < central ? r_central * sqrt(gr_unif(&seed))
                                  : r_max * sqrt(gr_unif(&seed));
        if (gr_unif(&seed) < far) r = 200 + 800 * gr_unif(&seed);
        const double phi = 2 * pi * gr_unif(&seed);
        const double ww = 1.2 * s->w_max * (2 * gr_unif(&seed) - 1);
        const float vre = (float)(2 * gr_unif(&seed) - 1), vim = (float)(2 * gr_unif(&seed) - 1);
        gr_push(s, r * cos(phi), r * sin(phi), ww, vre, vim, (float)(0.25 + 1.75 * gr_unif(&seed)));
    }
}

static void gr_make_uniform(gr_set *s)
{
    gr_base(s, "uniform", 128, 1.0 / (128 * 200.0), 8, 1000);
    gr_make_kernels(s, gr_sup8, 8, 4, 11);
    gr_set_reserve(s, 2001);
    /* r_max 56: footprints (s <= 6) stay off row and column 0 (the mirror test) */
    gr_fill_random(s, 2001, 12, 56, 0, 0, 0.01);
}

static void gr_make_central(gr_set *s)
{
    gr_base(s, "central", 96, 1.0 / (96 * 150.0), 8, 800);
    gr_make_kernels(s, gr_sup8, 8, 4, 21);
    gr_set_reserve(s, 4001);
    gr_fill_random(s, 4001, 22, 40, 0.7, 2.5, 0);
}

/* Footprints exactly touching each side and corner (inside) and one cell beyond it
 * (outside: skipped), every plane, fractional positions away from rounding ties. */
static void gr_make_edge(gr_set *s)
{
    gr_base(s, "edge", 64, 0x1p-7, 8, 500);
    gr_make_kernels(s, gr_sup8, 8, 4, 31);
    gr_set_reserve(s, 8 * 16 + 1);
    static const double fr[4] = {-0.3, 0.0, 0.2, 0.45};
    const int g = 64, c = 32;
    int64_t outside = 0;
    int q = 0;
    for (int w = 0; w < 8; ++w) {
        const int sp = gr_sup8[w];
        const double ww = (w % 2 ? 1 : -1) * gr_plane_w(s, w);
        for (int out = 0; out < 2; ++out) {
            const int lo = sp - out, hi = g - 1 - sp + out; /* centre cells */
            const int mid = c + (w % 5) - 2;
            const int cu[8] = {lo, hi, mid, mid, lo, hi, lo, hi};
            const int cv[8] = {mid, mid, lo, hi, lo, lo, hi, hi};
            for (int e = 0; e < 8; ++e, ++q) {
                gr_push(s, cu[e] - c + fr[q % 4], cv[e] - c + fr[(q + 1) % 4], ww,
                        (float)(0.5 + 0.1 * e), (float)(0.3 - 0.1 * w), 1.0f + 0.125f * e);
                outside += out;
            }
        }
    }
    gr_push(s, 0.2, -0.1, 0, 1, 0, 1);
    s->expect_skipped = outside;
}

/* Non-finite values in each field, positions that overflow, |ww| beyond the planes. */
static void gr_make_nonfinite(gr_set *s)
{
    gr_base(s, "nonfinite", 64, 0x1p-7, 8, 500);
    gr_make_kernels(s, gr_sup8, 8, 4, 41);
    gr_set_reserve(s, 256);
    uint64_t seed = 42;
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    int64_t skipped = 0;
    for (int k = 0; k < 200; ++k) {
        const double r = 20 * sqrt(gr_unif(&seed)), phi = 6.283185307179586 * gr_unif(&seed);
        gr_push(s, r * cos(phi), r * sin(phi), s->w_max * (2 * gr_unif(&seed) - 1),
                (float)gr_unif(&seed), (float)-gr_unif(&seed), (float)(0.5 + gr_unif(&seed)));
        if (k % 10 == 3 && k / 10 < 18) { /* 18 non-finite: field (k/10) % 6, value (k/10) / 6 */
            const size_t i = s->n - 1;
            const int f = (k / 10) % 6, b = (k / 10) / 6;
            float *field[6] = {&s->uu[i], &s->vv[i], &s->ww[i], &s->vis[2 * i],
                               &s->vis[2 * i + 1], &s->wt[i]};
            *field[f] = bad[b];
            ++skipped;
        }
    }
    const double gs = gr_grid_scale(s);
    gr_push(s, 1e30, 0, 1, 1, 0, 1);          /* |pos| beyond int */
    gr_push(s, 0, -1e30, 1, 1, 0, 1);
    gr_push(s, 3e38 * gs, 0, 1, 1, 0, 1);     /* uu = -3e38 */
    gr_push(s, 40, 0, 1, 1, 0, 1);            /* off the grid (32 cells to the edge) */
    gr_push(s, 0, -33, 1, 1, 0, 1);
    skipped += 5;
    gr_push(s, 1, 2, 1e30, 0.5f, 0.5f, 1);    /* clamped to the last plane: gridded */
    gr_push(s, -2, 1, -3e37, 0.5f, -0.5f, 1);
    gr_push(s, 3, 3, 10, 1, 1, 0);            /* weight 0 */
    gr_push(s, -4, 5, -30, 0.25f, 1, 2);      /* an odd count: 209 */
    s->expect_skipped = skipped;
}

static void gr_make_w0(gr_set *s)
{
    gr_base(s, "w0", 64, 1.0 / (64 * 100.0), 8, 500);
    gr_make_kernels(s, gr_sup8, 8, 4, 51);
    gr_set_reserve(s, 501);
    gr_fill_random(s, 501, 52, 24, 0.3, 2, 0);
    for (size_t i = 0; i < s->n; ++i) s->ww[i] = i % 2 ? -0.0f : 0.0f;
}

/* grid_scale 0.5 (exact): uu = -2 pos exactly, so pos_u = k + 1/2 (cell ties) and the
 * fractions 1/8, 3/8, 5/8 (with oversample 4, (round(pos) - pos) 4 = +-1/2, +-3/2: offset
 * ties) are exact, with both signs. */
static void gr_make_ties(gr_set *s)
{
    gr_base(s, "ties", 64, 0x1p-7, 8, 500);
    gr_make_kernels(s, gr_sup8, 8, 4, 61);
    gr_set_reserve(s, 7 * 7 * 3);
    static const double f[7] = {0.5, -0.5, 0.125, -0.125, 0.375, 0.625, -0.375};
    int q = 0;
    for (int a = 0; a < 7; ++a)
        for (int b = 0; b < 7; ++b)
            for (int k = 0; k < 3; ++k, ++q) {
                if (q >= 7 * 7 * 3 - 2) break; /* an odd count: 145 */
                const int w = q % 8;
                gr_push(s, (k - 1) * 5 + f[a], (1 - k) * 3 + f[b],
                        (q % 3 ? 1 : -1) * gr_plane_w(s, w), (float)(0.1 * a - 0.3),
                        (float)(0.2 * b - 0.5), 1);
            }
    s->expect_skipped = 0;
}

static void gr_make_os(gr_set *s, int os)
{
    gr_base(s, os == 2 ? "os2" : "os6", 64, 1.0 / (64 * 100.0), 8, 600);
    gr_make_kernels(s, gr_sup8, 8, os, 70 + os);
    gr_set_reserve(s, 777);
    gr_fill_random(s, 777, 71 + os, 24, 0.2, 3, 0.01);
}

/* support 15 on a 32-cell grid: only centre cells 15 and 16 fit (2s + 1 = 31). */
static void gr_make_wide(gr_set *s)
{
    static const int32_t sup[2] = {15, 2};
    gr_base(s, "wide", 32, 0x1p-6, 2, 100);
    gr_make_kernels(s, sup, 2, 4, 81);
    gr_set_reserve(s, 9);
    int64_t skipped = 0;
    for (int k = 0; k < 9; ++k) {
        const int du = k % 3 - 1, dv = k / 3 - 1; /* centre cell 16 + du: 15, 16 fit */
        gr_push(s, du + 0.1 * k - 0.4, dv + 0.2, 0, 1.0f + k, 0.5f, 1);
        skipped += du > 0 || dv > 0;
    }
    s->expect_skipped = skipped;
}

/* support 70 on a 300-cell grid: footprints of 141 cells, wider than a 128-cell tile (omp-tiled
 * then picks 256 by itself, gr_auto_tile; every other tile clips them), some off the grid. */
static void gr_make_wider(gr_set *s)
{
    static const int32_t sup[2] = {3, 70};
    gr_base(s, "wider", 300, 1.0 / (300 * 100.0), 2, 500);
    gr_make_kernels(s, sup, 2, 4, 91);
    gr_set_reserve(s, 61);
    gr_fill_random(s, 61, 92, 100, 0.3, 10, 0.05);
}

/* The set with unit kernels, vis = 1 and weight = 1 (non-finite kept, so that the same
 * visibilities are skipped): the grid counts the footprints per cell. */
static void gr_derive_count(gr_set *dst, const gr_set *s)
{
    *dst = *s;
    dst->support = gr_xalloc((size_t)s->p.num_w_planes * sizeof(int32_t));
    memcpy(dst->support, s->support, (size_t)s->p.num_w_planes * sizeof(int32_t));
    dst->kern = gr_xalloc(2 * s->kcount * sizeof(float));
    for (size_t i = 0; i < s->kcount; ++i) {
        dst->kern[2 * i] = 1;
        dst->kern[2 * i + 1] = 0;
    }
    dst->uu = gr_xalloc(s->n * sizeof(float));
    dst->vv = gr_xalloc(s->n * sizeof(float));
    dst->ww = gr_xalloc(s->n * sizeof(float));
    dst->vis = gr_xalloc(2 * s->n * sizeof(float));
    dst->wt = gr_xalloc(s->n * sizeof(float));
    memcpy(dst->uu, s->uu, s->n * sizeof(float));
    memcpy(dst->vv, s->vv, s->n * sizeof(float));
    memcpy(dst->ww, s->ww, s->n * sizeof(float));
    for (size_t i = 0; i < s->n; ++i) {
        const int fin = isfinite(s->vis[2 * i]) && isfinite(s->vis[2 * i + 1]);
        dst->vis[2 * i] = fin ? 1.0f : NAN;
        dst->vis[2 * i + 1] = 0;
        dst->wt[i] = isfinite(s->wt[i]) ? 1.0f : NAN;
    }
}

/* |.|_1 copies of kernels, vis and weights (non-finite stay non-finite). */
static void gr_derive_abs(gr_set *dst, const gr_set *s)
{
    gr_derive_count(dst, s);
    for (size_t i = 0; i < s->kcount; ++i)
        dst->kern[2 * i] = fabsf(s->kern[2 * i]) + fabsf(s->kern[2 * i + 1]);
    for (size_t i = 0; i < s->n; ++i) {
        dst->vis[2 * i] = fabsf(s->vis[2 * i]) + fabsf(s->vis[2 * i + 1]);
        dst->wt[i] = fabsf(s->wt[i]);
    }
}

/* A copy of s with vis scaled by f, or mirrored ((-u, -v, -w, conj vis)). */
static void gr_derive_scaled(gr_set *dst, const gr_set *s, float f, int mirror)
{
    gr_derive_count(dst, s);
    memcpy(dst->kern, s->kern, 2 * s->kcount * sizeof(float));
    memcpy(dst->wt, s->wt, s->n * sizeof(float));
    for (size_t i = 0; i < s->n; ++i) {
        dst->vis[2 * i] = f * s->vis[2 * i];
        dst->vis[2 * i + 1] = (mirror ? -f : f) * s->vis[2 * i + 1];
        if (mirror) {
            dst->uu[i] = -s->uu[i];
            dst->vv[i] = -s->vv[i];
            dst->ww[i] = -s->ww[i];
        }
    }
}

/* ---- the oracle: double reference, bound terms, counts ---------------------------------- */
typedef struct gr_oracle {
    size_t cells;
    double *ref;       /* complex128 */
    double *A;         /* per cell: sum |val|_1 |c|_1 (real part of a complex128 grid) */
    double *N;         /* per cell: footprints (likewise) */
    double norm, updates;
    int64_t skipped;
} gr_oracle;

static void gr_oracle_free(gr_oracle *o)
{
    free(o->ref);
    free(o->A);
    free(o->N);
    memset(o, 0, sizeof *o);
}

static void gr_ref64(const gr_set *s, double *grid, double *norm, int64_t *skipped)
{
    pk_grid_data d = gr_data(s);
    *norm = 0;
    if (pk_grid_reference_f64(&s->p, s->support, s->kern, &d, grid, norm, skipped) != PK_OK) {
        printf("Bail out! pk_grid_reference_f64 (%s): %s\n", s->name, pk_last_error());
        exit(1);
    }
}

static void gr_oracle_make(gr_oracle *o, const gr_set *s)
{
    memset(o, 0, sizeof *o);
    o->cells = gr_cells(s);
    o->ref = gr_xcalloc(2 * o->cells, sizeof(double));
    double *tmp = gr_xcalloc(2 * o->cells, sizeof(double));
    o->A = gr_xalloc(o->cells * sizeof(double));
    o->N = gr_xalloc(o->cells * sizeof(double));
    gr_ref64(s, o->ref, &o->norm, &o->skipped);
    gr_set a;
    double nn;
    int64_t sk;
    gr_derive_abs(&a, s);
    gr_ref64(&a, tmp, &nn, &sk);
    for (size_t c = 0; c < o->cells; ++c) o->A[c] = tmp[2 * c];
    gr_set_free(&a);
    memset(tmp, 0, 2 * o->cells * sizeof(double));
    gr_derive_count(&a, s);
    gr_ref64(&a, tmp, &o->updates, &sk);
    for (size_t c = 0; c < o->cells; ++c) o->N[c] = tmp[2 * c];
    gr_set_free(&a);
    free(tmp);
}

static double gr_gamma(double k) { return k * GR_U / (1 - k * GR_U); }

/* Bound for cell c after k runs of the set into one grid. */
static double gr_bound(const gr_oracle *o, size_t c, int k)
{
    return gr_gamma(2.0 * k * o->N[c] + 8) * k * o->A[c];
}

/* ---- grids with guard zones ------------------------------------------------------------- */
static float *gr_grid_new(const gr_set *s)
{
    const size_t n = 2 * gr_cells(s);
    float *buf = gr_xalloc((n + 2 * GR_GUARD) * sizeof(float));
    for (size_t i = 0; i < GR_GUARD; ++i) buf[i] = buf[GR_GUARD + n + i] = GR_SENTINEL;
    memset(buf + GR_GUARD, 0, n * sizeof(float));
    return buf + GR_GUARD;
}
static void gr_grid_zero(const gr_set *s, float *g) { memset(g, 0, 2 * gr_cells(s) * sizeof(float)); }
static void gr_grid_free(float *g) { if (g) free(g - GR_GUARD); }
static int gr_guards_ok(const gr_set *s, const float *g)
{
    const size_t n = 2 * gr_cells(s);
    for (size_t i = 0; i < GR_GUARD; ++i)
        if (g[-1 - (long)i] != GR_SENTINEL || g[n + i] != GR_SENTINEL) return 0;
    return 1;
}

/* grid (k runs of the set) against k * ref, per cell and component within the bound.
 * Fills a message; returns 1 when every cell passes. */
static int gr_check_grid(const gr_set *s, const gr_oracle *o, const float *g, int k, char *msg,
                         size_t len)
{
    double e2 = 0, r2 = 0, b2 = 0, worst = 0;
    size_t bad = 0, first = (size_t)-1;
    for (size_t c = 0; c < o->cells; ++c) {
        const double bnd = gr_bound(o, c, k);
        for (int q = 0; q < 2; ++q) {
            const double r = k * o->ref[2 * c + q], err = fabs((double)g[2 * c + q] - r);
            if (!(err <= bnd)) {
                if (!bad++) first = c;
            }
            if (bnd > 0 && err / bnd > worst) worst = err / bnd;
            e2 += err * err;
            r2 += r * r;
            b2 += bnd * bnd;
        }
    }
    const int gs = s->p.grid_size;
    if (bad)
        snprintf(msg, len, "%zu components beyond the bound, first cell [%zu][%zu]: %.9g%+.9gi vs "
                 "%.9g%+.9gi (bound %.3g)", bad, first / gs, first % gs, g[2 * first],
                 g[2 * first + 1], k * o->ref[2 * first], k * o->ref[2 * first + 1],
                 gr_bound(o, first, k));
    else
        snprintf(msg, len, "rel Frobenius %.2e (bound %.2e), worst err/bound %.3f",
                 r2 > 0 ? sqrt(e2 / r2) : sqrt(e2), r2 > 0 ? sqrt(b2 / r2) : sqrt(b2), worst);
    return bad == 0 && (r2 > 0 ? sqrt(e2 / r2) : sqrt(e2)) <= (r2 > 0 ? sqrt(b2 / r2) : sqrt(b2));
}

static int gr_norm_ok(double got, double want)
{
    return fabs(got - want) <= GR_NORM_RTOL * fabs(want) || (want == 0 && got == 0);
}

/* What runs a variant in place of pk_grid when set (tests/test_gr_cuda_emu.c: the CUDA plan
 * on the emulated device); p is the set's parameters with the tuning fields applied. */
typedef pk_status (*gr_exec_fn)(const char *variant, const pk_grid_params *p, const gr_set *s,
                                float *grid, double *norm, int64_t *skipped, pk_run_info *info);
static gr_exec_fn gr_exec_hook;

/* One-shot run of a variant on a set (grid zeroed first).  p_over: tuning fields. */
static pk_status gr_exec(pk_context *ctx, const char *variant, const gr_set *s,
                         const pk_grid_params *p_over, float *grid, double *norm,
                         int64_t *skipped, pk_run_info *info)
{
    pk_grid_params p = s->p;
    if (p_over) {
        p.tile_size = p_over->tile_size;
        p.central_radius = p_over->central_radius;
        p.tile_factor = p_over->tile_factor;
    }
    pk_grid_data d = gr_data(s);
    gr_grid_zero(s, grid);
    *norm = 0;
    *skipped = -7;
    if (gr_exec_hook) return gr_exec_hook(variant, &p, s, grid, norm, skipped, info);
    return pk_grid(ctx, &p, variant, s->support, s->kern, &d, grid, norm, skipped, info);
}

/* Accuracy of one run against the oracle (and, for constructed sets, the skip count). */
static void gr_check_run(pk_context *ctx, const char *variant, const gr_set *s,
                         const gr_oracle *o, const pk_grid_params *p_over, const char *label)
{
    float *g = gr_grid_new(s);
    double norm;
    int64_t sk;
    pk_run_info info;
    char msg[400];
    pk_status st = gr_exec(ctx, variant, s, p_over, g, &norm, &sk, &info);
    if (st != PK_OK) {
        ok(0, "%s %s%s: %s: %s", variant, s->name, label, pk_status_name(st), pk_last_error());
    } else {
        const int grid_ok = gr_check_grid(s, o, g, 1, msg, sizeof msg);
        const int guards = gr_guards_ok(s, g);
        const int nrm = gr_norm_ok(norm, o->norm);
        const int skc = sk == o->skipped && (s->expect_skipped < 0 || sk == s->expect_skipped);
        ok(grid_ok && guards && nrm && skc,
           "%s %s%s: %s; norm %.15g vs %.15g; skipped %lld (reference %lld, constructed %lld)%s",
           variant, s->name, label, msg, norm, o->norm, (long long)sk, (long long)o->skipped,
           (long long)s->expect_skipped, guards ? "" : "; GUARD ZONE WRITTEN");
    }
    gr_grid_free(g);
}

/* Unit kernels, vis 1, weight 1: every cell must hold exactly its footprint count. */
static void gr_check_coverage(pk_context *ctx, const char *variant, const gr_set *s,
                              const gr_oracle *o, const pk_grid_params *p_over, const char *label)
{
    gr_set cs;
    gr_derive_count(&cs, s);
    float *g = gr_grid_new(&cs);
    double norm;
    int64_t sk;
    pk_status st = gr_exec(ctx, variant, &cs, p_over, g, &norm, &sk, NULL);
    if (st != PK_OK) {
        ok(0, "%s %s%s coverage: %s: %s", variant, s->name, label, pk_status_name(st),
           pk_last_error());
    } else {
        size_t bad = 0, first = 0;
        for (size_t c = 0; c < o->cells; ++c)
            if ((double)g[2 * c] != o->N[c] || g[2 * c + 1] != 0.0f) {
                if (!bad++) first = c;
            }
        ok(bad == 0 && norm == o->updates && sk == o->skipped && gr_guards_ok(&cs, g),
           "%s %s%s coverage: %zu cells differ from the footprint count (first [%zu][%zu]: %g "
           "vs %g); norm %.17g == updates %.17g", variant, s->name, label, bad,
           first / cs.p.grid_size, first % cs.p.grid_size, g[2 * first], o->N[first], norm,
           o->updates);
    }
    gr_grid_free(g);
    gr_set_free(&cs);
}

/* ---- invariants --------------------------------------------------------------------------- */
/* vis = 1: sum Re grid == norm.  Exactly, sum Re of the terms = sum_i w_i sum Re c = norm;
 * the float grid is within sum_c E_c of the double reference, whose own sum differs from
 * its norm by double rounding only (1e-12 relative allowed). */
static void gr_check_sum_rule(const char *variant, const gr_set *base)
{
    gr_set s;
    gr_derive_scaled(&s, base, 1, 0);
    for (size_t i = 0; i < s.n; ++i) {
        if (isfinite(s.vis[2 * i])) s.vis[2 * i] = 1;
        s.vis[2 * i + 1] = 0;
    }
    gr_oracle o;
    gr_oracle_make(&o, &s);
    float *g = gr_grid_new(&s);
    double norm;
    int64_t sk;
    pk_status st = gr_exec(gr_ctx, variant, &s, NULL, g, &norm, &sk, NULL);
    double sum = 0, sum_ref = 0, tol = 0;
    for (size_t c = 0; c < o.cells; ++c) {
        sum += g[2 * c];
        sum_ref += o.ref[2 * c];
        tol += gr_bound(&o, c, 1);
    }
    const int ref_ok = fabs(sum_ref - o.norm) <= 1e-12 * fabs(o.norm);
    ok(st == PK_OK && ref_ok && fabs(sum - norm) <= tol + 1e-12 * fabs(norm),
       "%s sum rule (vis = 1): sum Re grid %.12g, norm %.12g, |diff| %.2e <= %.2e (reference: "
       "|diff| %.2e)", variant, sum, norm, fabs(sum - norm), tol + 1e-12 * fabs(norm),
       fabs(sum_ref - o.norm));
    gr_grid_free(g);
    gr_oracle_free(&o);
    gr_set_free(&s);
}

/* (-u, -v, -w, conj vis): grid'[G-y][G-x] == conj(grid[y][x]): bit for bit on the double
 * references (docs/KERNELS.md 1.6), within E + E' on the variant. */
static void gr_check_mirror(const char *variant, const gr_set *base)
{
    gr_set m;
    gr_derive_scaled(&m, base, 1, 1);
    gr_oracle o, om;
    gr_oracle_make(&o, base);
    gr_oracle_make(&om, &m);
    const int G = base->p.grid_size;
    size_t ref_bad = 0, bad = 0;
    for (int y = 0; y < G; ++y)
        for (int x = 0; x < G; ++x) {
            const size_t c = (size_t)y * G + x;
            if (x == 0 || y == 0) { /* no mirror: must be empty */
                ref_bad += o.ref[2 * c] != 0 || o.ref[2 * c + 1] != 0;
                continue;
            }
            const size_t cm = (size_t)(G - y) * G + (G - x);
            ref_bad += om.ref[2 * cm] != o.ref[2 * c] || om.ref[2 * cm + 1] != -o.ref[2 * c + 1];
        }
    float *g = gr_grid_new(base), *gm = gr_grid_new(&m);
    double n1, n2;
    int64_t s1, s2;
    pk_status st = gr_exec(gr_ctx, variant, base, NULL, g, &n1, &s1, NULL);
    if (st == PK_OK) st = gr_exec(gr_ctx, variant, &m, NULL, gm, &n2, &s2, NULL);
    double worst = 0;
    size_t not_bitwise = 0;
    for (int y = 1; y < G && st == PK_OK; ++y)
        for (int x = 1; x < G; ++x) {
            const size_t c = (size_t)y * G + x, cm = (size_t)(G - y) * G + (G - x);
            const double tol = gr_bound(&o, c, 1) + gr_bound(&om, cm, 1);
            const double dr = fabs((double)gm[2 * cm] - g[2 * c]);
            const double di = fabs((double)gm[2 * cm + 1] + g[2 * c + 1]);
            if (!(dr <= tol && di <= tol)) ++bad;
            if (tol > 0 && fmax(dr, di) / tol > worst) worst = fmax(dr, di) / tol;
            not_bitwise += gm[2 * cm] != g[2 * c] || gm[2 * cm + 1] != -g[2 * c + 1];
        }
    /* the serial loop sums in the same order for both: bit for bit (docs/KERNELS.md 1.6) */
    const int exact = strcmp(variant, "serial") != 0 || not_bitwise == 0;
    ok(st == PK_OK && ref_bad == 0 && bad == 0 && exact && s1 == s2 && gr_norm_ok(n2, n1),
       "%s mirror-conjugate symmetry: %zu reference cells not bit-exact mirrors, %zu variant "
       "cells beyond E + E' (worst %.3f of it), %zu not bit-exact%s; norms %.15g / %.15g, "
       "skipped %lld / %lld", variant, ref_bad, bad, worst, not_bitwise,
       strcmp(variant, "serial") ? "" : " (must be 0)", n1, n2, (long long)s1, (long long)s2);
    gr_grid_free(g);
    gr_grid_free(gm);
    gr_oracle_free(&o);
    gr_oracle_free(&om);
    gr_set_free(&m);
}

/* grid(3 vis) vs 3 grid(vis): |G3 - 3 G1| <= E3 + 3 E1 + |R3 - 3 R1| (fl(3 vis) rounds). */
static void gr_check_linearity(const char *variant, const gr_set *base)
{
    gr_set t;
    gr_derive_scaled(&t, base, 3, 0);
    gr_oracle o, o3;
    gr_oracle_make(&o, base);
    gr_oracle_make(&o3, &t);
    float *g = gr_grid_new(base), *g3 = gr_grid_new(&t);
    double n1, n3;
    int64_t s1, s3;
    pk_status st = gr_exec(gr_ctx, variant, base, NULL, g, &n1, &s1, NULL);
    if (st == PK_OK) st = gr_exec(gr_ctx, variant, &t, NULL, g3, &n3, &s3, NULL);
    size_t bad = 0;
    for (size_t c = 0; c < o.cells && st == PK_OK; ++c)
        for (int q = 0; q < 2; ++q) {
            const double tol = gr_bound(&o3, c, 1) + 3 * gr_bound(&o, c, 1) +
                               fabs(o3.ref[2 * c + q] - 3 * o.ref[2 * c + q]);
            if (!(fabs((double)g3[2 * c + q] - 3.0 * g[2 * c + q]) <= tol)) ++bad;
        }
    ok(st == PK_OK && bad == 0 && gr_norm_ok(n3, n1) && s1 == s3,
       "%s linearity (3 vis): %zu components beyond the bound; norm unchanged", variant, bad);
    gr_grid_free(g);
    gr_grid_free(g3);
    gr_oracle_free(&o);
    gr_oracle_free(&o3);
    gr_set_free(&t);
}

/* Even and odd visibilities gridded one after the other into one grid (through a plan) vs
 * all at once: both are float sums of the same terms, each within E of the reference. */
static void gr_check_additivity(const char *variant, const gr_set *base)
{
    gr_set a, b;
    gr_derive_scaled(&a, base, 1, 0);
    gr_derive_scaled(&b, base, 1, 0);
    a.n = b.n = 0;
    for (size_t i = 0; i < base->n; ++i) {
        gr_set *t = i % 2 ? &b : &a;
        t->uu[t->n] = base->uu[i];
        t->vv[t->n] = base->vv[i];
        t->ww[t->n] = base->ww[i];
        t->vis[2 * t->n] = base->vis[2 * i];
        t->vis[2 * t->n + 1] = base->vis[2 * i + 1];
        t->wt[t->n++] = base->wt[i];
    }
    gr_oracle o;
    gr_oracle_make(&o, base);
    float *g = gr_grid_new(base), *gab = gr_grid_new(base);
    double n_all, n_ab = 0, na = 0, nb = 0;
    int64_t s_all, sa = -1, sb = -1;
    pk_status st = gr_exec(gr_ctx, variant, base, NULL, g, &n_all, &s_all, NULL);
    pk_grid_plan *plan = NULL;
    if (st == PK_OK)
        st = pk_grid_plan_create(&plan, gr_ctx, &base->p, variant, base->support, base->kern,
                                 NULL);
    pk_grid_data da = gr_data(&a), db = gr_data(&b);
    if (st == PK_OK) st = pk_grid_plan_run(plan, &da, gab, &na, &sa, NULL);
    n_ab = na;
    if (st == PK_OK) st = pk_grid_plan_run(plan, &db, gab, &nb, &sb, NULL);
    n_ab += nb;
    pk_grid_plan_destroy(plan);
    size_t bad = 0;
    for (size_t c = 0; c < o.cells && st == PK_OK; ++c)
        for (int q = 0; q < 2; ++q)
            if (!(fabs((double)gab[2 * c + q] - g[2 * c + q]) <= 2 * gr_bound(&o, c, 1))) ++bad;
    ok(st == PK_OK && bad == 0 && fabs(n_ab - n_all) <= 1e-12 * fabs(n_all) &&
           sa + sb == s_all,
       "%s additivity (even + odd visibilities): %zu components beyond 2E; norms %.15g + %.15g "
       "vs %.15g; skipped %lld + %lld vs %lld%s", variant, bad, na, nb, n_all, (long long)sa,
       (long long)sb, (long long)s_all, st == PK_OK ? "" : pk_last_error());
    gr_grid_free(g);
    gr_grid_free(gab);
    gr_oracle_free(&o);
    gr_set_free(&a);
    gr_set_free(&b);
}

/* One visibility on rounding ties: pos_u = 2.5 (round: 3, away from zero; off_u =
 * round(0.5 * 4) = 2), pos_v = -1.375 (round: -1; off_v = round(1.5) = 2, away from zero),
 * ww > 0 on plane 3 (conjugated kernel).  The patch is computed here from docs/KERNELS.md and
 * must equal the double reference bit for bit; the variant within its per-cell E. */
static void gr_check_single(const char *variant, const gr_set *ties)
{
    gr_set s;
    gr_derive_scaled(&s, ties, 1, 0);
    s.n = 0;
    s.name = "single";
    gr_push(&s, 2.5, -1.375, gr_plane_w(&s, 3), 0.75f, -0.5f, 1.25f);
    const int G = s.p.grid_size, os = s.p.oversample, c = G / 2, gu = c + 3, gv = c - 1;
    const int ou = 2, ov = 2, sp = s.support[3], m = os / 2 + sp * os + 1;
    size_t off = 0;
    for (int w = 0; w < 3; ++w) {
        const size_t mw = (size_t)(os / 2 + s.support[w] * os + 1);
        off += mw * mw;
    }
    const float a = 0.75f * 1.25f, b = -0.5f * 1.25f;
    double *expect = gr_xcalloc(2 * gr_cells(&s), sizeof(double));
    double ksum = 0;
    for (int j = -sp; j <= sp; ++j)
        for (int k = -sp; k <= sp; ++k) {
            const float *kc = s.kern + 2 * (off + (size_t)abs(ov + j * os) * m + abs(ou + k * os));
            const float cr = kc[0], ci = -kc[1];
            const size_t cell = (size_t)(gv + j) * G + gu + k;
            expect[2 * cell] = (double)a * cr - (double)b * ci;
            expect[2 * cell + 1] = (double)b * cr + (double)a * ci;
            ksum += cr;
        }
    gr_oracle o;
    gr_oracle_make(&o, &s);
    const int ref_ok = memcmp(expect, o.ref, 2 * o.cells * sizeof(double)) == 0 &&
                       o.norm == ksum * 1.25f && o.skipped == 0;
    float *g = gr_grid_new(&s);
    double norm;
    int64_t sk;
    char msg[400] = "";
    pk_status st = gr_exec(gr_ctx, variant, &s, NULL, g, &norm, &sk, NULL);
    const int var_ok = st == PK_OK && gr_check_grid(&s, &o, g, 1, msg, sizeof msg) &&
                       norm == o.norm && sk == 0;
    ok(ref_ok && var_ok, "%s single visibility on rounding ties: reference %s the patch of "
       "docs/KERNELS.md; variant %s", variant, ref_ok ? "is bit for bit" : "DIFFERS FROM", msg);
    free(expect);
    gr_grid_free(g);
    gr_oracle_free(&o);
    gr_set_free(&s);
}

/* ---- parameters, plans, info, layouts ---------------------------------------------------- */
/* opencl-tiled keeps a tile of ts x ts complex64 cells in local memory and leaves 1 KiB to the
 * implementation (lib/portkern.h, pk_grid_params.tile_size). */
static uint64_t gr_cl_tile_bytes(int ts) { return (uint64_t)ts * (uint64_t)ts * 8u + 1024u; }

/* The local memory of the device a default opencl-tiled run of s lands on (as the library
 * reports it, test cap included); UINT64_MAX for every other variant (no limit). */
static uint64_t gr_tile_room(pk_context *ctx, const char *variant, const gr_set *s)
{
    if (gr_backend != PK_BACKEND_OPENCL || strcmp(variant, "opencl-tiled") != 0)
        return UINT64_MAX;
    float *g = gr_grid_new(s);
    double norm;
    int64_t sk;
    pk_run_info info;
    pk_device_info di;
    pk_status st = gr_exec(ctx, variant, s, NULL, g, &norm, &sk, &info);
    gr_grid_free(g);
    if (st != PK_OK || pk_device_get_info(ctx, gr_backend, info.device, &di) != PK_OK)
        return 0; /* the default run failed: every explicit tile is then checked to fail */
    return di.local_mem_bytes;
}

/* A tile that does not fit the device: plan creation and the one-shot call refuse it with
 * PK_EINVAL, naming the bytes it needs and what the device has. */
static void gr_check_tile_too_big(pk_context *ctx, const char *variant, const gr_set *s,
                                  const pk_grid_params *po, uint64_t room, const char *label)
{
    pk_grid_plan *plan = NULL;
    char want[96];
    snprintf(want, sizeof want, "needs %llu bytes of local memory",
             (unsigned long long)gr_cl_tile_bytes(po->tile_size));
    pk_grid_params p = s->p;
    p.tile_size = po->tile_size;
    p.central_radius = po->central_radius;
    p.tile_factor = po->tile_factor;
    pk_status st = pk_grid_plan_create(&plan, ctx, &p, variant, s->support, s->kern, NULL);
    const int plan_ok = st == PK_EINVAL && plan == NULL && strstr(pk_last_error(), want);
    char plan_msg[300];
    snprintf(plan_msg, sizeof plan_msg, "%s: %s", pk_status_name(st), pk_last_error());
    pk_grid_plan_destroy(plan);
    float *g = gr_grid_new(s);
    double norm;
    int64_t sk;
    st = gr_exec(ctx, variant, s, po, g, &norm, &sk, NULL);
    gr_grid_free(g);
    ok(plan_ok && st == PK_EINVAL && strstr(pk_last_error(), want),
       "%s %s%s: needs %llu bytes, the device has %llu: PK_EINVAL at plan creation (%s) and "
       "in the call (%s)", variant, s->name, label,
       (unsigned long long)gr_cl_tile_bytes(po->tile_size), (unsigned long long)room, plan_msg,
       pk_last_error());
}

static void gr_check_params(pk_context *ctx, const char *variant, const gr_set *s,
                            const gr_oracle *o, const char *ctx_label)
{
    static const int tiles[5] = {1, 7, 16, 64, 96};
    static const int radii[5] = {-1, 0, 1, 3, 1000};
    static const double factors[4] = {-1, 0, 0.5, 1};
    const uint64_t room = gr_tile_room(ctx, variant, s);
    int q = 0;
    for (int t = 0; t < 5; ++t)
        for (int r = 0; r < 5; ++r, ++q) {
            pk_grid_params po = s->p;
            po.tile_size = tiles[t] <= s->p.grid_size ? tiles[t] : s->p.grid_size;
            po.central_radius = radii[r];
            po.tile_factor = factors[q % 4];
            char label[96];
            snprintf(label, sizeof label, "%s [tile %d, radius %d, factor %g]", ctx_label,
                     po.tile_size, po.central_radius, po.tile_factor);
            if (room != UINT64_MAX && gr_cl_tile_bytes(po.tile_size) > room) {
                gr_check_tile_too_big(ctx, variant, s, &po, room, label);
                continue;
            }
            gr_check_run(ctx, variant, s, o, &po, label);
            gr_check_coverage(ctx, variant, s, o, &po, label);
        }
}

/* The same fields as named tuning parameters (grid.tile_size, grid.central_radius,
 * grid.tile_factor on the context; the call's fields left at their defaults): every setting
 * gives the reference's grid within the analysed bound and the exact coverage.  A tile
 * larger than the grid is not applied (the default runs). */
static pk_context *gr_context(pk_backend_id backend, int threads);
/* A run and the coverage in ctx, whose parameters were set with status st (then ctx goes). */
static void gr_check_in(pk_context *ctx, pk_status st, const char *variant, const gr_set *s,
                        const gr_oracle *o, const char *label)
{
    if (st != PK_OK) {
        ok(0, "%s%s: %s", variant, label, pk_last_error());
    } else {
        gr_check_run(ctx, variant, s, o, NULL, label);
        gr_check_coverage(ctx, variant, s, o, NULL, label);
    }
    pk_context_destroy(ctx);
}

static void gr_check_named_params(const char *variant, const gr_set *s, const gr_oracle *o)
{
    static const char *const set[5][3] = {
        {"16", "-1", "0.25"}, {"32", "2", "auto"}, {"7", "1", "0"}, {"4096", "auto", "1"},
        {"auto", "1000", "0.5"},
    };
    if (gr_exec_hook) return; /* the emulated plan is made without a context */
    for (int i = 0; i < 5; ++i) {
        pk_context *ctx = gr_context(gr_backend, 0);
        const uint64_t room = gr_tile_room(ctx, variant, s);
        int tile = atoi(set[i][0]);
        if (room != UINT64_MAX && tile > 0 && tile <= s->p.grid_size &&
            gr_cl_tile_bytes(tile) > room) {
            pk_context_destroy(ctx);
            continue;
        }
        char label[128];
        snprintf(label, sizeof label, " [grid.tile_size=%s, grid.central_radius=%s, "
                 "grid.tile_factor=%s]", set[i][0], set[i][1], set[i][2]);
        pk_status st = pk_context_set_param(ctx, "grid.tile_size", set[i][0]);
        if (st == PK_OK) st = pk_context_set_param(ctx, "grid.central_radius", set[i][1]);
        if (st == PK_OK) st = pk_context_set_param(ctx, "grid.tile_factor", set[i][2]);
        gr_check_in(ctx, st, variant, s, o, label);
    }
}

/* grid.isa on OpenMP: each SIMD level of omp-tiled's gridding loop (AVX-512 with masked row
 * remainders, the compiler's AVX2 clone) within the bound and exact on unit kernels; the
 * central set's supports give rows of 1..13 samples, the wide set's 31 (3 vectors and 7), and
 * the tiles clip them further: full vectors, masked remainders and rows shorter than a vector
 * all run. */
static void gr_check_isa(const char *variant, const gr_set *s, const gr_oracle *o)
{
    static const char *const isa[3] = {"avx512", "avx2", "generic"};
    if (gr_exec_hook || gr_backend != PK_BACKEND_OPENMP) return;
    for (int i = 0; i < 3; ++i) {
        pk_context *ctx = gr_context(gr_backend, 0);
        char label[64];
        snprintf(label, sizeof label, " [grid.isa=%s]", isa[i]);
        gr_check_in(ctx, pk_context_set_param(ctx, "grid.isa", isa[i]), variant, s, o, label);
    }
}

/* opencl-tiled on a device with little local memory (PORTKERN_TEST_LOCAL_MEM_BYTES caps what
 * the library assumes): NVIDIA's 48 KiB and OpenCL 1.2's minimum of 32 KiB.  The default tile
 * must fit and give the right grid; tiles that do not fit are refused (gr_check_params). */
static void gr_check_small_local_mem(const char *variant, const gr_set *s, const gr_oracle *o)
{
    static const char *const caps[2] = {"49152", "32768"};
    for (int c = 0; c < 2; ++c) {
        setenv("PORTKERN_TEST_LOCAL_MEM_BYTES", caps[c], 1);
        pk_context *ctx = gr_context(gr_backend, 0);
        char label[64];
        snprintf(label, sizeof label, " [local memory %s]", caps[c]);
        const uint64_t room = gr_tile_room(ctx, variant, s);
        ok(room == strtoull(caps[c], NULL, 10), "%s%s: the device reports %llu bytes of local "
           "memory", variant, label, (unsigned long long)room);
        gr_check_run(ctx, variant, s, o, NULL, label);
        gr_check_coverage(ctx, variant, s, o, NULL, label);
        gr_check_params(ctx, variant, s, o, label);
        if (c == 1 && gr_cl_tile_bytes(64) > room && !gr_exec_hook) {
            /* the named tile applies where the field is 0 (refused here: it does not fit);
             * the caller's field beats it */
            pk_grid_params po = s->p;
            float *g = gr_grid_new(s);
            double nn;
            int64_t kk;
            pk_context_set_param(ctx, "grid.tile_size", "64");
            pk_status st = gr_exec(ctx, variant, s, NULL, g, &nn, &kk, NULL);
            ok(st == PK_EINVAL && strstr(pk_last_error(), "tile_size 64"),
               "%s%s: grid.tile_size=64 applies to a call with tile_size 0: refused, it does "
               "not fit (%s: %s)", variant, label, pk_status_name(st), pk_last_error());
            gr_grid_free(g);
            po.tile_size = 16;
            gr_check_run(ctx, variant, s, o, &po, " [grid.tile_size=64 named, the field's 16 wins]");
            pk_context_set_param(ctx, "grid.tile_size", NULL);
        }
        pk_context_destroy(ctx);
        unsetenv("PORTKERN_TEST_LOCAL_MEM_BYTES");
    }
}

static void gr_check_plan(const char *variant, const gr_set *s1, const gr_oracle *o1,
                          const gr_set *s2, const gr_oracle *o2)
{
    pk_grid_plan *plan = NULL;
    pk_run_info info;
    pk_status st = pk_grid_plan_create(&plan, gr_ctx, &s1->p, variant, s1->support, s1->kern,
                                       &info);
    if (st != PK_OK) {
        ok(0, "%s plan create: %s", variant, pk_last_error());
        return;
    }
    ok(strcmp(info.variant, variant) == 0 && info.backend == gr_backend,
       "%s plan create: run info names %s / %s", variant, pk_backend_name(info.backend),
       info.variant);
    float *g = gr_grid_new(s1);
    double norm = 0;
    int64_t sk = -1, sk2 = -1;
    pk_grid_data d = gr_data(s1);
    char msg[400] = "";
    st = pk_grid_plan_run(plan, &d, g, &norm, &sk, NULL);
    if (st == PK_OK) st = pk_grid_plan_run(plan, &d, g, &norm, &sk2, &info);
    const int acc_ok = st == PK_OK && gr_check_grid(s1, o1, g, 2, msg, sizeof msg);
    ok(acc_ok && gr_norm_ok(norm, 2 * o1->norm) && sk == o1->skipped && sk2 == o1->skipped &&
           gr_guards_ok(s1, g),
       "%s plan run twice accumulates: %s; norm %.15g vs 2 x %.15g; skipped %lld per call",
       variant, st == PK_OK ? msg : pk_last_error(), norm, o1->norm, (long long)sk2);
    ok(st == PK_OK && info.flops == 8 * o1->updates && strcmp(info.variant, variant) == 0,
       "%s plan run info: flops %.17g == 8 x updates %.17g", variant, info.flops, o1->updates);
    /* a second set with the same kernels on the same plan (s2 shares s1's kernels) */
    gr_grid_free(g);
    g = gr_grid_new(s2);
    norm = 0;
    d = gr_data(s2);
    st = pk_grid_plan_run(plan, &d, g, &norm, &sk, NULL);
    ok(st == PK_OK && gr_check_grid(s2, o2, g, 1, msg, sizeof msg) && gr_norm_ok(norm, o2->norm)
           && sk == o2->skipped,
       "%s plan: another visibility list: %s", variant, st == PK_OK ? msg : pk_last_error());
    gr_grid_free(g);
    pk_grid_plan_destroy(plan);
}

/* plan_execute: s1 into one grid, then s2 (same kernels) into another, on one plan. */
static void gr_check_execute(const char *variant, const gr_set *s1, const gr_oracle *o1,
                             const gr_set *s2, const gr_oracle *o2)
{
    const int host = gr_backend == PK_BACKEND_SERIAL || gr_backend == PK_BACKEND_OPENMP;
    pk_grid_plan *plan = NULL;
    pk_status st = pk_grid_plan_create(&plan, gr_ctx, &s1->p, variant, s1->support, s1->kern,
                                       NULL);
    if (st != PK_OK) {
        ok(0, "%s plan_execute: plan create: %s", variant, pk_last_error());
        return;
    }
    const gr_set *set[2] = {s1, s2};
    const gr_oracle *orc[2] = {o1, o2};
    float *g[2] = {gr_grid_new(s1), gr_grid_new(s2)};
    const size_t n1 = 2 * gr_cells(s1);
    float *first = gr_xalloc(n1 * sizeof(float));
    double transfer[2] = {-1, -1};
    char msg[2][400] = {"", ""};
    int good = 1;
    for (int k = 0; k < 2 && good; ++k) {
        pk_grid_data d = gr_data(set[k]);
        double norm = 0;
        int64_t sk = -1;
        pk_run_info info;
        memset(&info, 0, sizeof info);
        st = pk_grid_plan_execute(plan, &d, g[k], &norm, &sk, &info);
        transfer[k] = info.transfer_s;
        if (k == 0) memcpy(first, g[0], n1 * sizeof(float));
        good = st == PK_OK && gr_check_grid(set[k], orc[k], g[k], 1, msg[k], sizeof msg[k]) &&
               gr_norm_ok(norm, orc[k]->norm) && sk == orc[k]->skipped &&
               gr_guards_ok(set[k], g[k]) && info.backend == gr_backend &&
               strcmp(info.variant, variant) == 0 && info.flops == 8 * orc[k]->updates &&
               info.setup_s == 0 && (!host || info.transfer_s == 0);
        if (st != PK_OK) snprintf(msg[k], sizeof msg[k], "%s", pk_last_error());
    }
    const int first_kept = good && !memcmp(first, g[0], n1 * sizeof(float));
    ok(good && first_kept,
       "%s plan_execute: two visibility lists into two grids equal the reference (%s; %s), the "
       "first grid untouched by the second call%s (transfer %.2e, %.2e s)", variant, msg[0],
       msg[1], host ? ", no copy in or out" : "", transfer[0], transfer[1]);
    /* no resident data, no state: plan_run after execute accumulates onto the same grid */
    pk_grid_data d = gr_data(s1);
    double norm = 0;
    int64_t sk = -1;
    st = pk_grid_plan_run(plan, &d, g[0], &norm, &sk, NULL);
    if (st == PK_OK) st = pk_grid_plan_execute(plan, &d, g[0], &norm, &sk, NULL);
    char m3[400] = "";
    ok(st == PK_OK && gr_check_grid(s1, o1, g[0], 3, m3, sizeof m3) &&
           gr_norm_ok(norm, 2 * o1->norm) && sk == o1->skipped,
       "%s plan_execute, plan_run, plan_execute on one grid accumulate three times the "
       "reference (%s)", variant, st == PK_OK ? m3 : pk_last_error());
    ok(pk_grid_plan_execute(NULL, &d, g[0], &norm, &sk, NULL) == PK_ENULL &&
           pk_grid_plan_execute(plan, NULL, g[0], &norm, &sk, NULL) == PK_ENULL &&
           pk_grid_plan_execute(plan, &d, NULL, &norm, &sk, NULL) == PK_ENULL &&
           pk_grid_plan_execute(plan, &d, g[0], NULL, &sk, NULL) == PK_ENULL &&
           pk_grid_plan_execute(plan, &d, g[0], &norm, NULL, NULL) == PK_ENULL &&
           strstr(pk_last_error(), "num_skipped"),
       "%s plan_execute: NULL plan, data, grid, norm or num_skipped -> PK_ENULL (%s)", variant,
       pk_last_error());
    gr_grid_free(g[0]);
    gr_grid_free(g[1]);
    free(first);
    pk_grid_plan_destroy(plan);
}

static void gr_check_info(const char *variant, const gr_set *s, const gr_oracle *o)
{
    float *g = gr_grid_new(s);
    double norm;
    int64_t sk;
    pk_run_info info;
    memset(&info, 0x5a, sizeof info);
    pk_status st = gr_exec(gr_ctx, variant, s, NULL, g, &norm, &sk, &info);
    int stages_ok = info.num_stages >= 1 && info.num_stages <= 8;
    double sum = 0;
    char names[160] = "";
    for (int i = 0; stages_ok && i < info.num_stages; ++i) {
        stages_ok &= info.stage_s[i] >= 0 && memchr(info.stage_name[i], 0, 16) != NULL;
        sum += info.stage_s[i];
        strncat(names, info.stage_name[i], sizeof names - strlen(names) - 2);
        strncat(names, " ", sizeof names - strlen(names) - 1);
    }
    if (strcmp(variant, "omp-tiled") == 0) {
        static const char *const want[6] = {"bbox", "count", "sort", "outer", "central", "reduce"};
        stages_ok &= info.num_stages == 6;
        for (int i = 0; stages_ok && i < 6; ++i) stages_ok &= !strcmp(info.stage_name[i], want[i]);
    }
    /* Stages are time intervals inside the call.  On the host and on OpenCL's one in-order
     * queue they follow one another: their sum is at most the wall time.  cuda/grid.cu records
     * them with events on 3 streams (compute, copy, central box) that run at once; one
     * stream's intervals are disjoint and all lie inside the call (it synchronises before it
     * returns), so the sum is at most 3 walls (under racecheck, which serialises the outer and
     * central kernels, 0.126 s of stages were seen in a 0.115 s call). */
    const double streams = gr_backend == PK_BACKEND_CUDA ? 3 : 1;
    ok(st == PK_OK && info.backend == gr_backend && !strcmp(info.variant, variant) &&
           info.flops == 8 * o->updates && stages_ok &&
           sum <= streams * info.wall_s * 1.01 + 1e-4,
       "%s run info: backend %s, variant %s, flops %.17g == 8 x %.17g, stages [%s] sum %.3g s "
       "<= %g x wall %.3g s", variant, pk_backend_name(info.backend), info.variant, info.flops,
       o->updates, names, sum, streams, info.wall_s);
    gr_grid_free(g);
}

/* A FULL stack (conv_size_half = largest m + 3) whose samples no visibility may read are
 * NaN: the variant must give the COMPACT result; compacting it gives the set's stack. */
static void gr_check_layouts(const char *variant, const gr_set *s, const gr_oracle *o)
{
    const int np = s->p.num_w_planes, os = s->p.oversample;
    int mmax = 0;
    for (int w = 0; w < np; ++w)
        if (os / 2 + s->support[w] * os + 1 > mmax) mmax = os / 2 + s->support[w] * os + 1;
    pk_grid_params pf = s->p;
    pf.kernel_layout = PK_GRID_KERNELS_FULL;
    pf.conv_size_half = mmax + 3;
    const size_t half = (size_t)pf.conv_size_half, full_n = (size_t)np * half * half;
    float *full = gr_xalloc(2 * full_n * sizeof(float));
    for (size_t i = 0; i < 2 * full_n; ++i) full[i] = NAN;
    size_t off = 0;
    for (int w = 0; w < np; ++w) {
        const size_t m = (size_t)(os / 2 + s->support[w] * os + 1);
        for (size_t iy = 0; iy < m; ++iy)
            memcpy(full + 2 * (((size_t)w * half + iy) * half), s->kern + 2 * (off + iy * m),
                   2 * m * sizeof(float));
        off += m * m;
    }
    size_t count_full = 0, count_compact = 0;
    pk_status st = pk_grid_kernel_count(&pf, s->support, &count_full);
    if (st == PK_OK) st = pk_grid_kernel_count(&s->p, s->support, &count_compact);
    float *back = gr_xalloc(2 * s->kcount * sizeof(float));
    if (st == PK_OK) st = pk_grid_compact_kernels(&pf, s->support, full, back);
    const int trip = st == PK_OK && count_full == full_n && count_compact == s->kcount &&
                     memcmp(back, s->kern, 2 * s->kcount * sizeof(float)) == 0;
    float *g = gr_grid_new(s);
    double norm = 0;
    int64_t sk;
    pk_grid_data d = gr_data(s);
    char msg[400] = "";
    if (st == PK_OK)
        st = pk_grid(gr_ctx, &pf, variant, s->support, full, &d, g, &norm, &sk, NULL);
    ok(trip && st == PK_OK && gr_check_grid(s, o, g, 1, msg, sizeof msg) &&
           gr_norm_ok(norm, o->norm) && sk == o->skipped,
       "%s FULL layout (unreadable samples NaN): %s; kernel counts %zu / %zu, compact round "
       "trip %s", variant, st == PK_OK ? msg : pk_last_error(), count_full, count_compact,
       trip ? "exact" : "WRONG");
    if (gr_backend == PK_BACKEND_SERIAL && !strcmp(variant, "serial")) {
        /* the float reference reads either layout in place: the same bits */
        float *r1 = gr_grid_new(s), *r2 = gr_grid_new(s);
        double n1 = 0, n2 = 0;
        int64_t k1, k2;
        pk_status a = pk_grid_reference(&pf, s->support, full, &d, r1, &n1, &k1);
        pk_status b = pk_grid_reference(&s->p, s->support, s->kern, &d, r2, &n2, &k2);
        ok(a == PK_OK && b == PK_OK && !memcmp(r1, r2, 2 * gr_cells(s) * sizeof(float)) &&
               n1 == n2 && k1 == k2,
           "pk_grid_reference: FULL and COMPACT layouts give the same bits");
        gr_grid_free(r1);
        gr_grid_free(r2);
    }
    gr_grid_free(g);
    free(full);
    free(back);
}

/* Two runs give the same bits (serial; omp-tiled: static splits, ordered buckets), the second
 * on ctx2 when not NULL (other host threads); serial also the bits of pk_grid_reference. */
static void gr_check_bits(pk_context *ctx, pk_context *ctx2, const char *variant,
                          const gr_set *s, const pk_grid_params *p_over, const char *label)
{
    float *g1 = gr_grid_new(s), *g2 = gr_grid_new(s);
    double n1, n2;
    int64_t k1, k2;
    pk_status st = gr_exec(ctx, variant, s, p_over, g1, &n1, &k1, NULL);
    if (!strcmp(variant, "serial")) {
        pk_grid_data d = gr_data(s);
        n2 = 0;
        if (st == PK_OK) st = pk_grid_reference(&s->p, s->support, s->kern, &d, g2, &n2, &k2);
    } else if (st == PK_OK) {
        st = gr_exec(ctx2 ? ctx2 : ctx, variant, s, p_over, g2, &n2, &k2, NULL);
    }
    ok(st == PK_OK && !memcmp(g1, g2, 2 * gr_cells(s) * sizeof(float)) && n1 == n2 && k1 == k2,
       "%s %s%s: bit-identical to %s", variant, s->name, label,
       strcmp(variant, "serial") ? "a second run" : "pk_grid_reference");
    gr_grid_free(g1);
    gr_grid_free(g2);
}

/* ---- bad input ---------------------------------------------------------------------------- */
static void gr_expect(pk_status got, pk_status want, const char *what)
{
    ok(got == want && (want == PK_OK || pk_last_error()[0]), "bad input: %s -> %s (%s)", what,
       pk_status_name(got), got == PK_OK ? "" : pk_last_error());
}

static void gr_check_errors(const char *variant, const gr_set *s)
{
    pk_grid_params p = s->p;
    pk_grid_data d = gr_data(s);
    float *g = gr_grid_new(s);
    double norm = 0, *g64 = gr_xcalloc(2 * gr_cells(s), sizeof(double));
    int64_t sk;
    size_t cnt;
    pk_grid_plan *plan = NULL;
    const int32_t *sup = s->support;
    const float *k = s->kern;
/* pk_grid, the plan (data problems: the plan's run), both references */
#define GR_ALL(pp, sp, kp, dp, want, what)                                                      \
    do {                                                                                      \
        char w_[160];                                                                         \
        snprintf(w_, sizeof w_, "pk_grid %s", what);                                          \
        gr_expect(pk_grid(gr_ctx, pp, variant, sp, kp, dp, g, &norm, &sk, NULL), want, w_);   \
        pk_status s_ = pk_grid_plan_create(&plan, gr_ctx, pp, variant, sp, kp, NULL);         \
        if (s_ == PK_OK) {                                                                    \
            snprintf(w_, sizeof w_, "pk_grid_plan_run %s", what);                             \
            gr_expect(pk_grid_plan_run(plan, dp, g, &norm, &sk, NULL), want, w_);             \
            pk_grid_plan_destroy(plan);                                                       \
        } else {                                                                              \
            snprintf(w_, sizeof w_, "pk_grid_plan_create %s (plan left NULL)", what);         \
            gr_expect(s_, want, w_);                                                          \
            ok(plan == NULL, "bad input: failed plan create leaves NULL");                    \
        }                                                                                     \
        snprintf(w_, sizeof w_, "pk_grid_reference %s", what);                                \
        gr_expect(pk_grid_reference(pp, sp, kp, dp, g, &norm, &sk), want, w_);                \
        snprintf(w_, sizeof w_, "pk_grid_reference_f64 %s", what);                            \
        gr_expect(pk_grid_reference_f64(pp, sp, kp, dp, g64, &norm, &sk), want, w_);          \
    } while (0)
#define GR_PARAM(field, value, want)                                                            \
    do {                                                                                      \
        p = s->p;                                                                             \
        p.field = value;                                                                      \
        GR_ALL(&p, sup, k, &d, want, #field " = " #value);                                    \
        if (want != PK_OK)                                                                    \
            gr_expect(pk_grid_kernel_count(&p, sup, &cnt), want,                              \
                      "pk_grid_kernel_count " #field " = " #value);                           \
    } while (0)
    GR_ALL(NULL, sup, k, &d, PK_ENULL, "p = NULL");
    GR_ALL(&s->p, NULL, k, &d, PK_ENULL, "support = NULL");
    GR_ALL(&s->p, sup, NULL, &d, PK_ENULL, "kernels = NULL");
    GR_ALL(&s->p, sup, k, NULL, PK_ENULL, "data = NULL");
    pk_grid_data dn = d;
    dn.vv = NULL;
    GR_ALL(&s->p, sup, k, &dn, PK_ENULL, "data.vv = NULL");
    dn = d;
    dn.weight = NULL;
    GR_ALL(&s->p, sup, k, &dn, PK_ENULL, "data.weight = NULL");
    dn.num_vis = SIZE_MAX / 8;
    dn.weight = d.weight;
    GR_ALL(&s->p, sup, k, &dn, PK_EOVERFLOW, "num_vis = SIZE_MAX / 8");
    GR_PARAM(grid_size, 63, PK_ESIZE);
    GR_PARAM(grid_size, -64, PK_ESIZE);
    GR_PARAM(grid_size, 0, PK_ESIZE);
    GR_PARAM(grid_size, 2147483646, PK_EOVERFLOW);
    GR_PARAM(grid_size, 6, PK_EINVAL);         /* support 6: 13 cells > 6 */
    GR_PARAM(oversample, 3, PK_EINVAL);
    GR_PARAM(oversample, 0, PK_EINVAL);
    GR_PARAM(oversample, -4, PK_EINVAL);
    GR_PARAM(cell_size_rad, NAN, PK_ENONFINITE);
    GR_PARAM(cell_size_rad, INFINITY, PK_ENONFINITE);
    GR_PARAM(cell_size_rad, 0.0, PK_ENONFINITE);
    GR_PARAM(cell_size_rad, -1e-3, PK_ENONFINITE);
    GR_PARAM(cell_size_rad, 1e300, PK_ENONFINITE);
    GR_PARAM(w_scale, NAN, PK_ENONFINITE);
    GR_PARAM(w_scale, -INFINITY, PK_ENONFINITE);
    GR_PARAM(w_scale, -1.0, PK_ENONFINITE);
    GR_PARAM(w_scale, 1e300, PK_ENONFINITE);
    GR_PARAM(num_w_planes, 0, PK_ESIZE);
    GR_PARAM(num_w_planes, -3, PK_ESIZE);
    GR_PARAM(kernel_layout, 2, PK_EINVAL);
    GR_PARAM(tile_size, -1, PK_EINVAL);
    GR_PARAM(tile_size, 100000, PK_EINVAL);
    GR_PARAM(central_radius, -2, PK_EINVAL);
    GR_PARAM(tile_factor, 1.5, PK_EINVAL);
    GR_PARAM(tile_factor, NAN, PK_EINVAL);
    /* FULL layout: conv_size_half too small for the widest plane; overflow of the stack */
    p = s->p;
    p.kernel_layout = PK_GRID_KERNELS_FULL;
    p.conv_size_half = 0;
    GR_ALL(&p, sup, k, &d, PK_ESIZE, "FULL, conv_size_half = 0");
    p.conv_size_half = 26; /* support 6 needs 2 + 24 + 1 = 27 */
    GR_ALL(&p, sup, k, &d, PK_EINVAL, "FULL, support wider than the kernel");
    gr_expect(pk_grid_kernel_count(&p, sup, &cnt), PK_EINVAL,
              "pk_grid_kernel_count support wider than the kernel");
    p.conv_size_half = 2000000000;
    p.num_w_planes = 8;
    gr_expect(pk_grid_kernel_count(&p, sup, &cnt), PK_EOVERFLOW,
              "pk_grid_kernel_count FULL stack bytes overflow");
    /* every entry point refuses what pk_grid_kernel_count refuses (the reference read past
     * the caller's array with 1 plane and conv_size_half = INT_MAX) */
    GR_ALL(&p, sup, k, &d, PK_EOVERFLOW, "FULL stack bytes overflow (8 planes)");
    {
        pk_grid_params p1 = p;
        p1.num_w_planes = 1;
        p1.conv_size_half = INT_MAX;
        gr_expect(pk_grid_kernel_count(&p1, sup, &cnt), PK_EOVERFLOW,
                  "pk_grid_kernel_count FULL, 1 plane, conv_size_half INT_MAX");
        GR_ALL(&p1, sup, k, &d, PK_EOVERFLOW, "FULL, 1 plane, conv_size_half INT_MAX");
        float *c1 = gr_xalloc(2 * s->kcount * sizeof(float));
        gr_expect(pk_grid_compact_kernels(&p1, sup, k, c1), PK_EOVERFLOW,
                  "pk_grid_compact_kernels FULL, 1 plane, conv_size_half INT_MAX");
        free(c1);
    }
    /* supports */
    int32_t bad_sup[8];
    memcpy(bad_sup, sup, sizeof bad_sup);
    bad_sup[4] = -1;
    GR_ALL(&s->p, bad_sup, k, &d, PK_EINVAL, "support[4] = -1");
    bad_sup[4] = s->p.grid_size;
    GR_ALL(&s->p, bad_sup, k, &d, PK_EINVAL, "support[4] = grid_size");
    /* a non-finite kernel sample that can be read */
    float *kbad = gr_xalloc(2 * s->kcount * sizeof(float));
    memcpy(kbad, k, 2 * s->kcount * sizeof(float));
    kbad[2 * (s->kcount - 1) + 1] = NAN;
    GR_ALL(&s->p, sup, kbad, &d, PK_ENONFINITE, "kernel sample NaN");
    kbad[2 * (s->kcount - 1) + 1] = 0;
    kbad[7] = -INFINITY;
    GR_ALL(&s->p, sup, kbad, &d, PK_ENONFINITE, "kernel sample -Inf");
    free(kbad);
    /* output pointers */
    gr_expect(pk_grid(gr_ctx, &s->p, variant, sup, k, &d, NULL, &norm, &sk, NULL), PK_ENULL,
              "pk_grid grid = NULL");
    gr_expect(pk_grid(gr_ctx, &s->p, variant, sup, k, &d, g, NULL, &sk, NULL), PK_ENULL,
              "pk_grid norm = NULL");
    gr_expect(pk_grid(gr_ctx, &s->p, variant, sup, k, &d, g, &norm, NULL, NULL), PK_ENULL,
              "pk_grid num_skipped = NULL");
    gr_expect(pk_grid(NULL, &s->p, variant, sup, k, &d, g, &norm, &sk, NULL), PK_ENULL,
              "pk_grid ctx = NULL");
    gr_expect(pk_grid(gr_ctx, &s->p, "no-such-variant", sup, k, &d, g, &norm, &sk, NULL),
              PK_ENOVARIANT, "pk_grid unknown variant");
    gr_expect(pk_grid_reference(&s->p, sup, k, &d, NULL, &norm, &sk), PK_ENULL,
              "pk_grid_reference grid = NULL");
    gr_expect(pk_grid_reference_f64(&s->p, sup, k, &d, NULL, &norm, &sk), PK_ENULL,
              "pk_grid_reference_f64 grid = NULL");
    gr_expect(pk_grid_reference(&s->p, sup, k, &d, g, NULL, &sk), PK_ENULL,
              "pk_grid_reference norm = NULL");
    gr_expect(pk_grid_kernel_count(&s->p, sup, NULL), PK_ENULL,
              "pk_grid_kernel_count count = NULL");
    gr_expect(pk_grid_kernel_count(NULL, sup, &cnt), PK_ENULL, "pk_grid_kernel_count p = NULL");
    gr_expect(pk_grid_compact_kernels(&s->p, sup, k, g), PK_EINVAL,
              "pk_grid_compact_kernels from a COMPACT stack");
    p = s->p;
    p.kernel_layout = PK_GRID_KERNELS_FULL;
    p.conv_size_half = 40;
    gr_expect(pk_grid_compact_kernels(&p, sup, NULL, g), PK_ENULL,
              "pk_grid_compact_kernels full = NULL");
    gr_expect(pk_grid_compact_kernels(&p, sup, k, NULL), PK_ENULL,
              "pk_grid_compact_kernels compact = NULL");
    gr_expect(pk_grid_compact_kernels(&p, NULL, k, g), PK_ENULL,
              "pk_grid_compact_kernels support = NULL");
    gr_expect(pk_grid_plan_create(NULL, gr_ctx, &s->p, variant, sup, k, NULL), PK_ENULL,
              "pk_grid_plan_create plan = NULL");
    gr_expect(pk_grid_plan_create(&plan, NULL, &s->p, variant, sup, k, NULL), PK_ENULL,
              "pk_grid_plan_create ctx = NULL");
    gr_expect(pk_grid_plan_run(NULL, &d, g, &norm, &sk, NULL), PK_ENULL,
              "pk_grid_plan_run plan = NULL");
    pk_status st = pk_grid_plan_create(&plan, gr_ctx, &s->p, variant, sup, k, NULL);
    if (st == PK_OK) {
        gr_expect(pk_grid_plan_run(plan, NULL, g, &norm, &sk, NULL), PK_ENULL,
                  "pk_grid_plan_run data = NULL");
        gr_expect(pk_grid_plan_run(plan, &d, NULL, &norm, &sk, NULL), PK_ENULL,
                  "pk_grid_plan_run grid = NULL");
        gr_expect(pk_grid_plan_run(plan, &d, g, NULL, &sk, NULL), PK_ENULL,
                  "pk_grid_plan_run norm = NULL");
        gr_expect(pk_grid_plan_run(plan, &d, g, &norm, NULL, NULL), PK_ENULL,
                  "pk_grid_plan_run num_skipped = NULL");
        dn = d;
        dn.uu = NULL;
        gr_expect(pk_grid_plan_run(plan, &dn, g, &norm, &sk, NULL), PK_ENULL,
                  "pk_grid_plan_run data.uu = NULL");
        /* an empty list: nothing written, nothing skipped */
        dn.num_vis = 0;
        dn.uu = dn.vv = dn.ww = dn.vis = dn.weight = NULL;
        gr_grid_zero(s, g);
        norm = 0;
        sk = -1;
        st = pk_grid_plan_run(plan, &dn, g, &norm, &sk, NULL);
        int zero = 1;
        for (size_t i = 0; i < 2 * gr_cells(s); ++i) zero &= g[i] == 0;
        ok(st == PK_OK && zero && norm == 0 && sk == 0,
           "empty visibility list (NULL arrays): OK, grid untouched, norm 0, skipped 0");
        pk_grid_plan_destroy(plan);
    } else {
        ok(0, "plan for the bad-input checks: %s", pk_last_error());
    }
    pk_grid_plan_destroy(NULL);
    ok(pk_grid_variants(gr_backend) != NULL, "pk_grid_variants(%s) = \"%s\"",
       pk_backend_name(gr_backend), pk_grid_variants(gr_backend));
#undef GR_ALL
#undef GR_PARAM
    gr_grid_free(g);
    free(g64);
}

/* ---- the suite ---------------------------------------------------------------------------- */
static pk_context *gr_context(pk_backend_id backend, int threads)
{
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_context_options_init(&opt);
    opt.backend = backend;
    opt.threads = threads;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create(%s): %s\n", pk_backend_name(backend), pk_last_error());
        exit(1);
    }
    return ctx;
}

enum { GR_UNIFORM, GR_CENTRAL, GR_EDGE, GR_NONFINITE, GR_W0, GR_TIES, GR_OS2, GR_OS6, GR_WIDE,
       GR_WIDER, GR_NSETS };

/* The suite's sets and their double-precision oracles. */
static void gr_make_sets(gr_set sets[GR_NSETS], gr_oracle orc[GR_NSETS])
{
    gr_make_uniform(&sets[GR_UNIFORM]);
    gr_make_central(&sets[GR_CENTRAL]);
    gr_make_edge(&sets[GR_EDGE]);
    gr_make_nonfinite(&sets[GR_NONFINITE]);
    gr_make_w0(&sets[GR_W0]);
    gr_make_ties(&sets[GR_TIES]);
    gr_make_os(&sets[GR_OS2], 2);
    gr_make_os(&sets[GR_OS6], 6);
    gr_make_wide(&sets[GR_WIDE]);
    gr_make_wider(&sets[GR_WIDER]);
    for (int i = 0; i < GR_NSETS; ++i) gr_oracle_make(&orc[i], &sets[i]);
}

/* The double reference on the host threads at every size (one residue of the grid rows a
 * thread) is bitwise the one-pass loop: grid, norm and skipped count, on every set. */
static void gr_check_ref_threads(const gr_set sets[GR_NSETS], const gr_oracle orc[GR_NSETS])
{
    const char *was = getenv("PORTKERN_TEST_PARALLEL_BYTES");
    int same = 1;
    for (int i = 0; i < GR_NSETS; ++i) {
        double *t[2], norm[2];
        int64_t skipped[2];
        for (int k = 0; k < 2; ++k) { /* one pass, then threaded at every size */
            setenv("PORTKERN_TEST_PARALLEL_BYTES", k ? "0" : "18446744073709551615", 1);
            t[k] = gr_xcalloc(2 * orc[i].cells, sizeof(double));
            gr_ref64(&sets[i], t[k], &norm[k], &skipped[k]);
        }
        same &= !memcmp(t[0], t[1], 2 * orc[i].cells * sizeof(double)) && norm[0] == norm[1] &&
                skipped[0] == skipped[1];
        free(t[0]);
        free(t[1]);
    }
    if (was)
        setenv("PORTKERN_TEST_PARALLEL_BYTES", was, 1);
    else
        unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
    ok(same, "pk_grid_reference_f64 on the host threads: bitwise the one-pass loop on every set");
}

/* opencl-tiled's host pass (locate, bucket sort) on 3 threads, threaded at every size
 * (PORTKERN_TEST_PARALLEL_BYTES=0), gives the one-thread bits: buckets keep the record order.
 * No split tiles (central_radius -1): their atomic flushes are unordered. */
static void gr_check_host_threads(const char *variant, const gr_set *sets)
{
    pk_context *c1 = gr_context(gr_backend, 1), *c3 = gr_context(gr_backend, 3);
    pk_grid_params po = sets[GR_CENTRAL].p;
    po.central_radius = -1;
    setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
    for (int ts = 0; ts <= 7; ts += 7) {
        char label[64];
        po.tile_size = ts;
        snprintf(label, sizeof label, " [1 vs 3 host threads, tile %d, no split]", ts);
        gr_check_bits(c1, c3, variant, &sets[GR_CENTRAL], &po, label);
        gr_check_bits(c1, c3, variant, &sets[GR_UNIFORM], &po, label);
        gr_check_bits(c1, c3, variant, &sets[GR_NONFINITE], &po, label);
    }
    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
    pk_context_destroy(c1);
    pk_context_destroy(c3);
}

static int gr_run_suite(pk_backend_id backend)
{
    gr_backend = backend;
    gr_ctx = gr_context(backend, 0);
    const char *why;
    char msg[600];
    if (!pk_backend_available(gr_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(gr_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_grid_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no grid variant (yet)", pk_backend_name(backend));
        pk_context_destroy(gr_ctx);
        tap_skip_all(msg);
    }
    gr_set sets[GR_NSETS];
    gr_oracle orc[GR_NSETS];
    gr_make_sets(sets, orc);
    if (backend == PK_BACKEND_SERIAL) gr_check_ref_threads(sets, orc);
    /* the plan test's second list: the central positions with the uniform set's kernels */
    gr_set second = sets[GR_UNIFORM];
    second.name = "central-on-uniform";
    second.n = sets[GR_CENTRAL].n;
    second.uu = sets[GR_CENTRAL].uu;
    second.vv = sets[GR_CENTRAL].vv;
    second.ww = sets[GR_CENTRAL].ww;
    second.vis = sets[GR_CENTRAL].vis;
    second.wt = sets[GR_CENTRAL].wt;
    gr_oracle o2;
    gr_oracle_make(&o2, &second);
    tap_diag("grid %s: variants %s; float u = 2^-24, per-cell bound gamma_{2n+8} A (see "
             "gr_common.h)", pk_backend_name(backend), variants);

    char *save = NULL;
    for (char *variant = strtok_r(variants, ",", &save); variant;
         variant = strtok_r(NULL, ",", &save)) {
        /* a device backend that cannot run this variant here (e.g. no float atomics) */
        if (backend != PK_BACKEND_SERIAL && backend != PK_BACKEND_OPENMP) {
            float *g = gr_grid_new(&sets[GR_WIDE]);
            double nn;
            int64_t kk;
            pk_status st = gr_exec(gr_ctx, variant, &sets[GR_WIDE], NULL, g, &nn, &kk, NULL);
            gr_grid_free(g);
            if (st == PK_EUNSUPPORTED) {
                tap_skip(pk_last_error(), "%s: not supported on this device", variant);
                continue;
            }
        }
        for (int i = 0; i < GR_NSETS; ++i) {
            gr_check_run(gr_ctx, variant, &sets[i], &orc[i], NULL, "");
            gr_check_coverage(gr_ctx, variant, &sets[i], &orc[i], NULL, "");
        }
        gr_check_sum_rule(variant, &sets[GR_UNIFORM]);
        gr_check_mirror(variant, &sets[GR_UNIFORM]);
        gr_check_linearity(variant, &sets[GR_CENTRAL]);
        gr_check_additivity(variant, &sets[GR_NONFINITE]);
        gr_check_single(variant, &sets[GR_TIES]);
        gr_check_params(gr_ctx, variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL], "");
        gr_check_named_params(variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL]);
        gr_check_isa(variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL]);
        gr_check_isa(variant, &sets[GR_WIDE], &orc[GR_WIDE]);
        if (backend == PK_BACKEND_OPENCL && !strcmp(variant, "opencl-tiled")) {
            gr_check_small_local_mem(variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL]);
            gr_check_host_threads(variant, sets);
        }
        gr_check_plan(variant, &sets[GR_UNIFORM], &orc[GR_UNIFORM], &second, &o2);
        gr_check_execute(variant, &sets[GR_UNIFORM], &orc[GR_UNIFORM], &second, &o2);
        gr_check_info(variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL]);
        gr_check_layouts(variant, &sets[GR_UNIFORM], &orc[GR_UNIFORM]);
        if (!strcmp(variant, "serial") || !strcmp(variant, "omp-tiled")) {
            gr_check_bits(gr_ctx, NULL, variant, &sets[GR_CENTRAL], NULL, "");
            gr_check_bits(gr_ctx, NULL, variant, &sets[GR_UNIFORM], NULL, "");
        }
        if (backend == PK_BACKEND_OPENMP) {
            static const int nts[2] = {1, 3};
            for (int t = 0; t < 2; ++t) {
                pk_context *ctx = gr_context(backend, nts[t]);
                char label[64];
                snprintf(label, sizeof label, " [%d threads]", nts[t]);
                for (int i = GR_UNIFORM; i <= GR_EDGE; ++i) {
                    gr_check_run(ctx, variant, &sets[i], &orc[i], NULL, label);
                    gr_check_coverage(ctx, variant, &sets[i], &orc[i], NULL, label);
                }
                pk_grid_params po = sets[GR_CENTRAL].p;
                po.tile_size = 7;
                po.central_radius = 2;
                po.tile_factor = -1;
                strcat(label, " [tile 7, radius 2]");
                gr_check_run(ctx, variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL], &po, label);
                gr_check_coverage(ctx, variant, &sets[GR_CENTRAL], &orc[GR_CENTRAL], &po, label);
                if (!strcmp(variant, "omp-tiled")) {
                    snprintf(label, sizeof label, " [%d threads]", nts[t]);
                    gr_check_bits(ctx, NULL, variant, &sets[GR_CENTRAL], NULL, label);
                    /* passes of 700 visibilities (PORTKERN_TEST_GR_CHUNK): each pass's
                     * records, planes and tiles its own, the grid summed over them */
                    setenv("PORTKERN_TEST_GR_CHUNK", "700", 1);
                    snprintf(label, sizeof label, " [%d threads, passes of 700]", nts[t]);
                    for (int i = GR_UNIFORM; i <= GR_EDGE; ++i) {
                        gr_check_run(ctx, variant, &sets[i], &orc[i], NULL, label);
                        gr_check_coverage(ctx, variant, &sets[i], &orc[i], NULL, label);
                    }
                    unsetenv("PORTKERN_TEST_GR_CHUNK");
                }
                pk_context_destroy(ctx);
            }
        }
        gr_check_errors(variant, &sets[GR_UNIFORM]);
    }
    if (backend == PK_BACKEND_CUDA) { /* the default variant by device generation */
        pk_device_info di;
        pk_run_info info;
        float *g = gr_grid_new(&sets[GR_UNIFORM]);
        double nn;
        int64_t kk;
        const int s = pk_device_get_info(gr_ctx, backend, 0, &di) == PK_OK &&
                              gr_exec(gr_ctx, NULL, &sets[GR_UNIFORM], NULL, g, &nn, &kk, &info) ==
                                  PK_OK
                          ? PK_OK
                          : PK_EDEVICE;
        gr_grid_free(g);
        const char *want = di.cc_major >= 9 ? "cuda-atomic" : "cuda-tiled";
        ok(s == PK_OK && !strcmp(info.variant, want),
           "no variant named on compute capability %d.%d: %s (ran %s)", di.cc_major, di.cc_minor,
           want, s == PK_OK ? info.variant : pk_last_error());
    }
    for (int i = 0; backend == PK_BACKEND_SERIAL && i < GR_NSETS; ++i) {
        /* pk_grid_locate: its footprints add up to the oracle's updates and skips */
        const pk_grid_data d = gr_data(&sets[i]);
        double updates = 0;
        int64_t skipped = 0;
        for (size_t k = 0; k < d.num_vis; ++k) {
            int u, v;
            const int s = pk_grid_locate(&sets[i].p, sets[i].support, &d, k, &u, &v);
            if (s < 0)
                ++skipped;
            else
                updates += (2.0 * s + 1) * (2.0 * s + 1);
        }
        ok(updates == orc[i].updates && skipped == orc[i].skipped,
           "pk_grid_locate on %s: %.0f updates, %lld skipped (oracle: %.0f, %lld)", sets[i].name,
           updates, (long long)skipped, orc[i].updates, (long long)orc[i].skipped);
    }
    if (backend == PK_BACKEND_SERIAL) {
        const pk_grid_data d = gr_data(&sets[GR_UNIFORM]);
        int u, v;
        ok(pk_grid_locate(NULL, sets[GR_UNIFORM].support, &d, 0, &u, &v) == -1 &&
               pk_grid_locate(&sets[GR_UNIFORM].p, NULL, &d, 0, &u, &v) == -1 &&
               pk_grid_locate(&sets[GR_UNIFORM].p, sets[GR_UNIFORM].support, &d, d.num_vis, &u,
                              &v) == -1,
           "pk_grid_locate: NULL arguments and i >= num_vis give -1");
    }
    gr_oracle_free(&o2);
    for (int i = 0; i < GR_NSETS; ++i) {
        gr_oracle_free(&orc[i]);
        gr_set_free(&sets[i]);
    }
    pk_context_destroy(gr_ctx);
    return tap_done();
}
#endif
