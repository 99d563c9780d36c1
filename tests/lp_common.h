/* lp_common.h - the laplace2d test every backend runs (test_lp_<backend>.c picks one).
 *
 * Every variant of the suite's backend (pk_laplace2d_variants) x layout (lexi; hvfo with the
 * default nw = 16, nw = 8, the lane counts that divide odd l: l = 15 with nw = 3 and 5, l = 9
 * with nw = 3; nw = 1, nw = l (one column: both boundary columns are the same), nw = 32
 * (wider than any SIMD path), ...):
 * 1. Against pk_laplace2d_reference through the one-shot call and through a plan, on odd
 *    extents, extents that are not multiples of the SIMD width (lexi: any l), l = 1 and 2
 *    (a site is its own neighbour), count 0 (bit-exact identity), 1, 3, 10.  The one-shot
 *    works in place on a buffer with a guard zone after it, the plan downloads into a
 *    NaN-filled one (an unwritten element or an overrun fails).
 * 2. Properties, each against its own oracle:
 *    - a constant field stays exactly uniform and within the bound below of the constant;
 *    - the sum over the field is conserved within the bound below;
 *    - a plane wave cos(2 pi (kx x + ky y) / l) is an eigenvector with eigenvalue
 *      [1 + 2 sigma (cos(2 pi kx/l) + cos(2 pi ky/l))] / (1 + 4 sigma), checked after
 *      `count` iterations against lambda^count in double.
 * 3. Plans: runs of 2 and 3 iterations on one upload give the same bits as one run of 5
 *    (so temporal blocking computes exactly the same iterations); run and download before
 *    any upload are PK_ESTATE; the run info names the backend and variant, counts 8 B and
 *    7 flops per site and iteration, layout_s is 0 for plan runs and > 0 for an hvfo one-shot
 *    (0 on OpenMP, which converts rows inside its passes); plan_execute gives the bits of
 *    upload + run + download;
 *    a NULL variant runs the backend's first.
 * 4. The layout conversion (serial suite): pho[y][x'][w] = phi[y][w*(l/nw) + x'] index by
 *    index, round trips, one thread and threaded (pk_laplace2d on 1, 2, 3 threads: the
 *    one-thread bits), and bad input everywhere (NULL, sizes, overflow, sigma, layout,
 *    l % nw != 0 with a clear PK_ESIZE, unknown variants and layout names, overlap).
 * 5. CUDA suite only: plan_execute on a cudaMalloc'd lexi field (cuda_devmem.h), lexi and
 *    hvfo (lp_check_device_arrays; hvfo reordered on the device).
 * omp-simd and omp-tb also run under laplace2d.isa = avx512, avx2, generic and auto, each
 * with and without laplace2d.stream=1 (streaming stores, which the OpenMP backend uses on
 * its own only for fields beyond the last-level cache), omp with and without streaming, the
 * OpenMP variants on 3 and 7 threads (more threads than rows), omp-tb under
 * laplace2d.tb_depth = 1, 2, 3, 5, 16 (depths that divide the counts and not), opencl under
 * laplace2d.cl_scheme = vec, item and auto.
 *
 * Error analysis (float, u = 2^-24; a = (float)sigma, inv = fl(1/(1+4a)); portkern.h).
 * One iteration is y = (c + a ((e + w) + (n + s))) inv; the longest path of a value through
 * it has 5 roundings (e + w, the middle +, a *, c +, * inv), 4 when c + a(...) is one FMA.
 * With T the exact linear map of the float coefficients, T phi = (phi + a sum_nbrs phi) inv,
 * all weights are >= 0 and ||T||inf = nu = (1 + 4a) inv = 1 + d0, |d0| <= u (inv rounded
 * once; computed here in double).  So one computed iteration is T phi + r with
 * |r| <= gamma_5 nu max|phi| (Higham 3.1, gamma_k = k u / (1 - k u)), and errors already
 * present are carried with gain nu:
 *     |computed_k - T^k phi_0| <= k gamma_5 nu^k max|phi_0|        (to first order).
 * Two implementations (a backend and the reference) that evaluate that tree, fused or not,
 * differ by at most twice that:   tol_ref(k) = 2 k gamma_5 nu^k max|phi_0|
 * (k = 10: 6.0e-6 max|phi_0|).  The backends here evaluate the same tree in the same order,
 * so in practice they agree to the bit or by one FMA's rounding; the lines print the error.
 *  - Constant c: e + w = 2c and n + s = 4c - 2c are exact, so an iteration rounds 3 times
 *    (a*, c+, *inv) and every site gets the same value (the field stays exactly uniform);
 *    |c_k - c| <= k (gamma_3 nu + |d0|) |c| to first order.
 *  - Sum: sum(T phi) = nu sum(phi) (each site's value is spread with weights a inv to four
 *    neighbours and inv to itself), so |sum phi_k - sum phi_0| <= k (|d0| + gamma_5 nu)
 *    sum|phi| per the bound on r, summed over sites (sum|phi_j| <= nu^j sum|phi_0|); plus
 *    the double-precision summation here, <= 2 N 2^-53 sum|phi|.
 *  - Plane wave: phi_0 is rounded to float (<= u), T = nu A with A the exact operator with
 *    coefficient a, A phi = lambda phi; so |phi_k - lambda^k phi_exact| <=
 *    (k gamma_5 + u + k |d0|) nu^k max|phi| to first order (lambda computed in double).
 * Each bound is multiplied by 1.01 for the second-order terms (k gamma_5 < 1e-4 here).
 */
#ifndef PK_TEST_LP_COMMON_H
#define PK_TEST_LP_COMMON_H
#include "cuda_devmem.h"
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LP_GUARD 64
#define LP_SENTINEL (-12345.625f)
#define LP_SIGMA 0.2 /* a = 0.2f: nu = 1 + d0 with d0 != 0, so the bounds are exercised */
#define LP_PI 3.14159265358979323846

static pk_context *lp_ctx;
static pk_backend_id lp_backend;
static double lp_u, lp_nu, lp_d0;
static char lp_err[512];

static double lp_gamma(int k) { return k * lp_u / (1 - k * lp_u); }

static float *lp_alloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        printf("Bail out! out of memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

/* Values in [lo, lo + span). */
static void lp_fill(float *f, size_t n, unsigned seed, float lo, float span)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        f[i] = lo + span * (float)(s >> 8) / (float)(1u << 24);
    }
}

static pk_laplace2d_params lp_params(int l, int count, int layout, int nw)
{
    pk_laplace2d_params p;
    p.l = l;
    p.count = count;
    p.sigma = LP_SIGMA;
    p.layout = layout;
    p.nw = nw;
    return p;
}

static double lp_maxabs(const float *f, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        if (fabs(f[i]) > m) m = fabs(f[i]);
    return m;
}

/* Max |a - b| (Inf when either has a NaN); *nfail elements over tol, *first the first. */
static double lp_maxdiff(const float *a, const float *b, size_t n, double tol, size_t *nfail,
                         size_t *first)
{
    double m = 0;
    size_t f = 0, fi = (size_t)-1;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) d = INFINITY;
        if (!(d <= tol) && f++ == 0) fi = i;
        if (d > m) m = d;
    }
    if (nfail) *nfail = f;
    if (first) *first = fi;
    return m;
}

/* u, nu and d0 of the header for sigma = LP_SIGMA. */
static void lp_init_bounds(void)
{
    lp_u = FLT_EPSILON / 2;
    const float a = (float)LP_SIGMA;
    const float inv = (float)(1.0 / (1.0 + 4.0 * (double)a));
    lp_nu = (1.0 + 4.0 * (double)a) * (double)inv;
    lp_d0 = lp_nu - 1.0;
}

static double lp_tol_ref(int count, double maxabs)
{
    return 1.01 * 2 * count * lp_gamma(5) * pow(lp_nu, count) * maxabs;
}

static const char *lp_layout_label(const pk_laplace2d_params *p, char *buf, size_t len)
{
    if (p->layout == PK_LAP_LEXI)
        snprintf(buf, len, "lexi");
    else
        snprintf(buf, len, "hvfo nw=%d", p->nw ? p->nw : PK_LAP_DEFAULT_NW);
    return buf;
}

enum { LP_ONESHOT = 0, LP_PLAN = 1 };

/* phi (lexicographic, n = l*l) after p->count iterations through the one-shot call (in
 * place, guard zone after it) or a plan (create, upload, run, download into a NaN-filled
 * buffer with a guard zone).  Returns the status (PK_EINTERNAL for an overrun or an
 * unwritten element), the detail in lp_err. */
static int lp_exec(pk_context *ctx, const char *variant, int mode, const pk_laplace2d_params *p,
                   float *phi, pk_run_info *info)
{
    const size_t n = p->l > 0 && p->l < 65536 ? (size_t)p->l * (size_t)p->l : 0;
    float *buf = lp_alloc(n + LP_GUARD);
    int s;
    lp_err[0] = '\0';
    for (size_t i = n; i < n + LP_GUARD; ++i) buf[i] = LP_SENTINEL;
    if (mode == LP_ONESHOT) {
        memcpy(buf, phi, n * sizeof(float));
        s = pk_laplace2d(ctx, p, variant, buf, info);
    } else {
        pk_laplace2d_plan *plan = NULL;
        for (size_t i = 0; i < n; ++i) buf[i] = NAN;
        s = pk_laplace2d_plan_create(&plan, ctx, p, variant, NULL);
        if (s == PK_OK) s = pk_laplace2d_plan_upload(plan, phi);
        if (s == PK_OK) s = pk_laplace2d_plan_run(plan, p->count, info);
        if (s == PK_OK) s = pk_laplace2d_plan_download(plan, buf);
        if (s != PK_OK) snprintf(lp_err, sizeof lp_err, "%s", pk_last_error());
        pk_laplace2d_plan_destroy(plan);
    }
    if (s != PK_OK && !lp_err[0]) snprintf(lp_err, sizeof lp_err, "%s", pk_last_error());
    if (s == PK_OK) {
        size_t bad = 0, nan = 0;
        for (size_t i = n; i < n + LP_GUARD; ++i) bad += buf[i] != LP_SENTINEL;
        for (size_t i = 0; i < n; ++i) nan += buf[i] != buf[i];
        if (bad || nan) {
            s = PK_EINTERNAL;
            snprintf(lp_err, sizeof lp_err, "%zu guard floats overwritten, %zu NaN in the result",
                     bad, nan);
        }
    }
    memcpy(phi, buf, n * sizeof(float));
    free(buf);
    return s;
}

static int lp_info_ok(const pk_run_info *info, const char *variant)
{
    return info->backend == lp_backend && strcmp(info->variant, variant) == 0;
}

/* ---- 1. against the reference ----------------------------------------------------------- */
/* One (l, count, layout, nw) through both call paths; returns 1 when both pass. */
/* A case's field (signed or positive by its seed) and the reference's result of it. */
static void lp_case_field(const pk_laplace2d_params *p, float *x, float *ref)
{
    const size_t n = (size_t)p->l * p->l;
    const unsigned seed = (unsigned)(p->l * 7919 + p->count * 131 + p->nw * 17 + p->layout);
    if (seed & 1)
        lp_fill(x, n, seed, -1.0f, 2.0f);
    else
        lp_fill(x, n, seed, 0.5f, 1.0f);
    memcpy(ref, x, n * sizeof(float));
    if (pk_laplace2d_reference(p, ref) != PK_OK) {
        printf("Bail out! reference l = %d: %s\n", p->l, pk_last_error());
        exit(1);
    }
}

static int lp_case(pk_context *ctx, const char *variant, int l, int count, int layout, int nw,
                   double *maxerr, char *why, size_t whylen)
{
    pk_laplace2d_params p = lp_params(l, count, layout, nw);
    const size_t n = (size_t)l * l;
    float *x = lp_alloc(n), *ref = lp_alloc(n), *y = lp_alloc(n);
    lp_case_field(&p, x, ref);
    const double tol = lp_tol_ref(count, lp_maxabs(x, n));
    int good = 1;
    char lay[32];
    lp_layout_label(&p, lay, sizeof lay);
    for (int m = 0; m < 2; ++m) {
        pk_run_info info;
        memset(&info, 0, sizeof info);
        memcpy(y, x, n * sizeof(float));
        const int s = lp_exec(ctx, variant, m, &p, y, &info);
        size_t nfail = 0, first = (size_t)-1;
        const double e = s == PK_OK ? lp_maxdiff(y, ref, n, tol, &nfail, &first) : INFINITY;
        if (e > *maxerr) *maxerr = e;
        const int info_ok = s != PK_OK || lp_info_ok(&info, variant);
        if (s != PK_OK || nfail || !info_ok) {
            size_t len = strlen(why);
            snprintf(why + len, whylen - len, "; l=%d %s count %d %s: %s%s%s, %zu over %.2e, "
                     "first [%zu, %zu]%s", l, lay, count, m ? "plan" : "one-shot",
                     pk_status_name(s), s ? " " : "", s ? lp_err : "", nfail, tol,
                     first == (size_t)-1 ? 0 : first / l, first == (size_t)-1 ? 0 : first % l,
                     info_ok ? "" : ", wrong backend/variant in the run info");
            good = 0;
        }
    }
    free(x);
    free(ref);
    free(y);
    return good;
}

typedef struct lp_shape {
    int layout, nw;   /* nw as given (0: the default) */
    int l[8], nl;
} lp_shape;

/* Layouts and extents: lexi on odd extents and extents that are no multiple of 8 or 16;
 * hvfo with every lane count the kernels special-case (16, 8) and others that divide odd
 * extents, one column (nw = l), more lanes than a vector (32), one lane. */
static const lp_shape lp_shapes[] = {
    {PK_LAP_LEXI, 0, {1, 2, 3, 5, 15, 17, 33, 64}, 8},
    {PK_LAP_LEXI, 7, {31, 47, 100}, 3}, /* lexi ignores nw */
    {PK_LAP_HVFO, 0, {16, 32, 48, 80, 128}, 5},
    {PK_LAP_HVFO, 16, {16, 64, 144}, 3},         /* 144: two 8 x 8 blocks and a remainder */
    {PK_LAP_HVFO, 8, {8, 16, 24, 40, 72, 200}, 6},
    {PK_LAP_HVFO, 24, {408}, 1},                 /* 17 x 24: 3 block rows, 2 columns + 1 */
    {PK_LAP_HVFO, 3, {3, 9, 15, 33}, 4},
    {PK_LAP_HVFO, 5, {5, 15, 35}, 3},
    {PK_LAP_HVFO, 4, {4, 12, 20}, 3},
    {PK_LAP_HVFO, 2, {2, 6, 22}, 3},
    {PK_LAP_HVFO, 1, {1, 2, 7, 13}, 4},
    {PK_LAP_HVFO, 32, {32, 96}, 2},
    {PK_LAP_HVFO, 15, {15, 45}, 2},
};
#define LP_NSHAPES ((int)(sizeof lp_shapes / sizeof lp_shapes[0]))

static void lp_check_shape(pk_context *ctx, const char *variant, const lp_shape *sh,
                           const char *label)
{
    static const int counts[] = {0, 1, 3, 10};
    double maxerr = 0;
    char why[2048] = "", lay[32], ls[96] = "";
    int good = 1;
    pk_laplace2d_params p = lp_params(1, 0, sh->layout, sh->nw);
    for (int i = 0; i < sh->nl; ++i) {
        size_t len = strlen(ls);
        snprintf(ls + len, sizeof ls - len, "%s%d", i ? "," : "", sh->l[i]);
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
            good &= lp_case(ctx, variant, sh->l[i], counts[c], sh->layout, sh->nw, &maxerr, why,
                            sizeof why);
    }
    ok(good, "%s %s%s, l = %s, count 0/1/3/10: one-shot and plan equal the reference within "
       "2 k gamma_5 nu^k max|phi| (max abs err %.2e%s)", variant,
       lp_layout_label(&p, lay, sizeof lay), label, ls, maxerr, why);
}

static void lp_check_reference(pk_context *ctx, const char *variant, const char *label)
{
    for (int i = 0; i < LP_NSHAPES; ++i) lp_check_shape(ctx, variant, &lp_shapes[i], label);
}

/* A bigger field, long enough rows for every vector path and several threads. */
static void lp_check_big(const char *variant, int layout, int nw)
{
    double maxerr = 0;
    char why[1024] = "", lay[32];
    pk_laplace2d_params p = lp_params(256, 7, layout, nw);
    int good = lp_case(lp_ctx, variant, 256, 7, layout, nw, &maxerr, why, sizeof why);
    good &= lp_case(lp_ctx, variant, 272, 9, layout, nw, &maxerr, why, sizeof why);
    ok(good, "%s %s, l = 256 (7 iterations) and 272 (9): equal the reference (max abs err "
       "%.2e%s)", variant, lp_layout_label(&p, lay, sizeof lay), maxerr, why);
}

/* ---- 2. properties ---------------------------------------------------------------------- */
static void lp_check_constant(const char *variant, int layout, int nw, int l, float c)
{
    const int count = 12;
    pk_laplace2d_params p = lp_params(l, count, layout, nw);
    const size_t n = (size_t)l * l;
    float *f = lp_alloc(n);
    for (size_t i = 0; i < n; ++i) f[i] = c;
    const int s = lp_exec(lp_ctx, variant, LP_ONESHOT, &p, f, NULL);
    float lo = f[0], hi = f[0];
    for (size_t i = 0; i < n; ++i) {
        if (f[i] < lo) lo = f[i];
        if (f[i] > hi) hi = f[i];
    }
    const double tol = 1.01 * count * (lp_gamma(3) * lp_nu + fabs(lp_d0)) * fabs(c);
    const double dev = fabs((double)f[0] - c);
    char lay[32];
    ok(s == PK_OK && lo == hi && dev <= tol,
       "%s %s l=%d: constant %g stays exactly uniform (min %.9g, max %.9g) and within "
       "k (gamma_3 nu + |d0|) |c| = %.2e of c after %d iterations (|c_k - c| = %.2e)%s%s",
       variant, lp_layout_label(&p, lay, sizeof lay), l, (double)c, (double)lo, (double)hi, tol,
       count, dev, s ? "; " : "", s ? lp_err : "");
    free(f);
}

static void lp_sums(const float *f, size_t n, double *sum, double *asum)
{
    double s = 0, a = 0;
    for (size_t i = 0; i < n; ++i) {
        s += f[i];
        a += fabs(f[i]);
    }
    *sum = s;
    *asum = a;
}

static void lp_check_sum(const char *variant, int layout, int nw, int l, int count, int mixed)
{
    pk_laplace2d_params p = lp_params(l, count, layout, nw);
    const size_t n = (size_t)l * l;
    float *f = lp_alloc(n);
    if (mixed)
        lp_fill(f, n, 77u + (unsigned)l, -1.0f, 2.0f);
    else
        lp_fill(f, n, 78u + (unsigned)l, 0.5f, 1.0f);
    double s0, a0, s1, a1;
    lp_sums(f, n, &s0, &a0);
    const int s = lp_exec(lp_ctx, variant, LP_ONESHOT, &p, f, NULL);
    lp_sums(f, n, &s1, &a1);
    const double tol = 1.01 * (count * (fabs(lp_d0) + lp_gamma(5) * lp_nu) * pow(lp_nu, count) * a0 +
                               4.0 * n * (DBL_EPSILON / 2) * (a0 + a1));
    char lay[32];
    ok(s == PK_OK && fabs(s1 - s0) <= tol,
       "%s %s l=%d, %s data: sum conserved over %d iterations, |sum_k - sum_0| = %.3e <= "
       "k (|d0| + gamma_5 nu) nu^k sum|phi| + summation = %.3e (sum_0 = %.6g)%s%s", variant,
       lp_layout_label(&p, lay, sizeof lay), l, mixed ? "mixed-sign" : "positive", count,
       fabs(s1 - s0), tol, s0, s ? "; " : "", s ? lp_err : "");
    free(f);
}

static void lp_check_plane_wave(const char *variant, int layout, int nw, int l, int kx, int ky,
                                int count)
{
    pk_laplace2d_params p = lp_params(l, count, layout, nw);
    const size_t n = (size_t)l * l;
    float *f = lp_alloc(n);
    for (int y = 0; y < l; ++y)
        for (int x = 0; x < l; ++x)
            f[(size_t)y * l + x] = (float)cos(2 * LP_PI * ((double)kx * x + (double)ky * y) / l);
    const double a = (double)(float)LP_SIGMA;
    const double lambda =
        (1 + 2 * a * (cos(2 * LP_PI * kx / l) + cos(2 * LP_PI * ky / l))) / (1 + 4 * a);
    const double lk = pow(lambda, count);
    const int s = lp_exec(lp_ctx, variant, LP_ONESHOT, &p, f, NULL);
    double err = 0;
    for (int y = 0; y < l && s == PK_OK; ++y)
        for (int x = 0; x < l; ++x) {
            const double want = lk * cos(2 * LP_PI * ((double)kx * x + (double)ky * y) / l);
            const double d = fabs(f[(size_t)y * l + x] - want);
            if (!(d <= err)) err = d;
        }
    const double tol =
        1.01 * (count * lp_gamma(5) + lp_u + count * fabs(lp_d0)) * pow(lp_nu, count);
    char lay[32];
    ok(s == PK_OK && err <= tol,
       "%s %s l=%d: plane wave (kx, ky) = (%d, %d) is an eigenvector, lambda = %.9f; after %d "
       "iterations max |phi - lambda^k phi_0| = %.2e <= %.2e%s%s", variant,
       lp_layout_label(&p, lay, sizeof lay), l, kx, ky, lambda, count, err, tol, s ? "; " : "",
       s ? lp_err : "");
    free(f);
}

static void lp_check_properties(const char *variant)
{
    lp_check_constant(variant, PK_LAP_LEXI, 0, 17, 0.7f);
    lp_check_constant(variant, PK_LAP_HVFO, 0, 64, -3.25f);
    lp_check_constant(variant, PK_LAP_HVFO, 5, 15, 1.1f);
    lp_check_sum(variant, PK_LAP_LEXI, 0, 33, 20, 0);
    lp_check_sum(variant, PK_LAP_LEXI, 0, 33, 20, 1);
    lp_check_sum(variant, PK_LAP_HVFO, 0, 128, 20, 0);
    lp_check_sum(variant, PK_LAP_HVFO, 8, 40, 20, 1);
    lp_check_sum(variant, PK_LAP_HVFO, 3, 15, 20, 1);
    lp_check_plane_wave(variant, PK_LAP_LEXI, 0, 24, 1, 2, 25);
    lp_check_plane_wave(variant, PK_LAP_LEXI, 0, 15, 4, 0, 10);
    lp_check_plane_wave(variant, PK_LAP_HVFO, 0, 64, 3, 1, 25);
    lp_check_plane_wave(variant, PK_LAP_HVFO, 16, 32, 16, 16, 5); /* lambda = (1 - 4a)/(1 + 4a) */
    lp_check_plane_wave(variant, PK_LAP_HVFO, 5, 15, 2, 7, 10);
}

/* ---- 3. plans ---------------------------------------------------------------------------- */
/* OpenMP runs an hvfo call on a lexi field with the rows converted inside its passes (the
 * kernel's time, layout_s 0); the other backends reorder the whole field (layout_s > 0). */
static int lp_rows_converted(const pk_run_info *info) { return info->backend == PK_BACKEND_OPENMP; }

static void lp_check_plan(const char *variant, int layout, int nw, int l)
{
    pk_laplace2d_params p = lp_params(l, 5, layout, nw);
    const size_t n = (size_t)l * l;
    float *x = lp_alloc(n), *one = lp_alloc(n), *split = lp_alloc(n), *ref = lp_alloc(n);
    char lay[32];
    lp_layout_label(&p, lay, sizeof lay);
    lp_fill(x, n, 5u + (unsigned)l, -1.0f, 2.0f);
    memcpy(one, x, n * sizeof(float));
    memcpy(ref, x, n * sizeof(float));
    pk_laplace2d_reference(&p, ref);
    pk_run_info info;
    memset(&info, 0, sizeof info);
    int s = pk_laplace2d(lp_ctx, &p, variant, one, &info);
    const double sites = (double)n;
    ok(s == PK_OK && lp_info_ok(&info, variant) && info.bytes == 8 * sites * 5 &&
           info.flops == 7 * sites * 5 && info.kernel_s >= 0 && info.wall_s >= info.kernel_s &&
           (layout == PK_LAP_HVFO && !lp_rows_converted(&info) ? info.layout_s > 0
                                                                : info.layout_s == 0),
       "%s %s l=%d one-shot info: backend %s, variant %s, bytes %.0f = 8 l^2 count, flops %.0f "
       "= 7 l^2 count, kernel %.2e s, layout %.2e s (%s)", variant, lay, l,
       pk_backend_name(info.backend), info.variant, info.bytes, info.flops, info.kernel_s,
       info.layout_s,
       layout != PK_LAP_HVFO      ? "0: no reorder"
       : lp_rows_converted(&info) ? "0: rows converted inside the passes"
                                  : "> 0: reordered");

    pk_laplace2d_plan *plan = NULL;
    s = pk_laplace2d_plan_create(&plan, lp_ctx, &p, variant, NULL);
    int st = s == PK_OK ? pk_laplace2d_plan_run(plan, 1, NULL) : s;
    ok(st == PK_ESTATE, "%s %s plan_run before any upload -> PK_ESTATE (got %s: \"%s\")",
       variant, lay, pk_status_name(st), pk_last_error());
    st = s == PK_OK ? pk_laplace2d_plan_download(plan, split) : s;
    ok(st == PK_ESTATE, "%s %s plan_download before any upload -> PK_ESTATE (got %s: \"%s\")",
       variant, lay, pk_status_name(st), pk_last_error());
    if (s == PK_OK) s = pk_laplace2d_plan_upload(plan, x);
    memset(&info, 0, sizeof info);
    if (s == PK_OK) s = pk_laplace2d_plan_run(plan, 2, &info);
    ok(s == PK_OK && lp_info_ok(&info, variant) && info.bytes == 8 * sites * 2 &&
           info.flops == 7 * sites * 2 && info.layout_s == 0 && info.setup_s == 0,
       "%s %s plan_run(2) info: bytes %.0f, flops %.0f, layout_s %.1e = 0, setup_s 0%s%s",
       variant, lay, info.bytes, info.flops, info.layout_s, s ? "; " : "",
       s ? pk_last_error() : "");
    if (s == PK_OK) s = pk_laplace2d_plan_run(plan, 0, NULL);
    if (s == PK_OK) s = pk_laplace2d_plan_run(plan, 3, NULL);
    if (s == PK_OK) s = pk_laplace2d_plan_download(plan, split);
    ok(s == PK_OK && memcmp(one, split, n * sizeof(float)) == 0 &&
           lp_maxdiff(split, ref, n, lp_tol_ref(5, 1.0), NULL, NULL) <= lp_tol_ref(5, 1.0),
       "%s %s l=%d plan: runs of 2 + 0 + 3 iterations on one upload give the bits of one run of "
       "5 (max abs diff %.2e; vs the reference %.2e)%s%s", variant, lay, l,
       s == PK_OK ? lp_maxdiff(one, split, n, 0, NULL, NULL) : -1.0,
       s == PK_OK ? lp_maxdiff(split, ref, n, 0, NULL, NULL) : -1.0, s ? "; " : "",
       s ? pk_last_error() : "");
    /* A new upload restarts from the new field. */
    if (s == PK_OK) s = pk_laplace2d_plan_upload(plan, x);
    if (s == PK_OK) s = pk_laplace2d_plan_download(plan, split);
    ok(s == PK_OK && memcmp(x, split, n * sizeof(float)) == 0,
       "%s %s plan: download right after an upload returns the field bit for bit%s%s", variant,
       lay, s ? "; " : "", s ? pk_last_error() : "");
    st = s == PK_OK ? pk_laplace2d_plan_run(plan, -1, NULL) : s;
    ok(st == PK_ESIZE, "%s %s plan_run(count -1) -> PK_ESIZE (got %s)", variant, lay,
       pk_status_name(st));
    pk_laplace2d_plan_destroy(plan);
    pk_laplace2d_plan_destroy(NULL);
    free(x);
    free(one);
    free(split);
    free(ref);
}

/* plan_execute on the caller's field: right for 0, 1, 2, 4, 8 and 9 iterations in a 64-byte
 * aligned field and in one that is not, and bit for bit the plan's upload, run and download
 * (OpenMP's hvfo converts rows inside its passes instead of reordering the whole field; its
 * passes run in place, each band's edge rows saved for its neighbours, or under
 * laplace2d.stream=1 and on bands shorter than the depth into a second field, the first in
 * place when their number is odd); nothing copied, transfer_s 0: on the host backends for
 * lexi at 8 iterations (an even number of passes in every variant), on OpenMP at every
 * count, aligned or one float off (the lexi rows take any float's address; hvfo converts
 * them).  Afterwards the plan has no resident field (PK_ESTATE) until the next upload.  ctx
 * and label: OpenMP also runs it on 1, 3 and 7 threads (bands shorter than a pass's depth
 * take the work field) and under each value of laplace2d.tb_depth, .isa and .stream. */
static void lp_check_execute(pk_context *ctx, const char *label, const char *variant,
                             int layout, int nw, int l)
{
    static const int counts[6] = {0, 1, 2, 4, 8, 9};
    const size_t n = (size_t)l * l;
    float *resident = lp_alloc(n);
    pk_laplace2d_params p = lp_params(l, 1, layout, nw);
    char lay[32];
    lp_layout_label(&p, lay, sizeof lay);
    pk_laplace2d_plan *plan = NULL;
    int s = pk_laplace2d_plan_create(&plan, ctx, &p, variant, NULL);
    float *block = NULL, *ref = lp_alloc(n);
    if (s == PK_OK && posix_memalign((void **)&block, 64, (n + 16) * sizeof(float)) != 0)
        block = NULL;
    if (s != PK_OK || !block) {
        ok(0, "%s %s%s plan_execute: plan or memory: %s", variant, lay, label,
           pk_last_error());
        goto done;
    }
    const int host = lp_backend == PK_BACKEND_SERIAL || lp_backend == PK_BACKEND_OPENMP;
    for (int a = 0; a < 2; ++a) {
        float *phi = block + (a ? 1 : 0);
        for (int k = 0; k < 6; ++k) {
            lp_fill(phi, n, 11u + (unsigned)k, -1.0f, 2.0f);
            memcpy(ref, phi, n * sizeof(float));
            p.count = counts[k];
            pk_laplace2d_reference(&p, ref);
            if (s == PK_OK) s = pk_laplace2d_plan_upload(plan, phi);
            if (s == PK_OK) s = pk_laplace2d_plan_run(plan, counts[k], NULL);
            if (s == PK_OK) s = pk_laplace2d_plan_download(plan, resident);
            pk_run_info info;
            memset(&info, 0, sizeof info);
            if (s == PK_OK) s = pk_laplace2d_plan_execute(plan, phi, counts[k], &info);
            const int must_not_copy = (host && layout == PK_LAP_LEXI && counts[k] == 8) ||
                                      lp_backend == PK_BACKEND_OPENMP;
            const double tol = lp_tol_ref(counts[k] ? counts[k] : 1, 1.0);
            ok(s == PK_OK && lp_maxdiff(phi, ref, n, tol, NULL, NULL) <= tol &&
                   memcmp(phi, resident, n * sizeof(float)) == 0 &&
                   (!must_not_copy || info.transfer_s == 0),
               "%s %s l=%d%s plan_execute, %s field, %d iterations: the reference's result in "
               "the caller's field, the bits of upload + run + download, transfer %.2e s%s%s%s",
               variant, lay, l, label, a ? "unaligned" : "aligned", counts[k], info.transfer_s,
               must_not_copy ? " (must be 0)" : "", s ? "; " : "", s ? pk_last_error() : "");
        }
    }
    const int st = s == PK_OK ? pk_laplace2d_plan_run(plan, 1, NULL) : s;
    ok(st == PK_ESTATE, "%s %s%s after plan_execute, plan_run without an upload -> PK_ESTATE "
       "(got %s)", variant, lay, label, pk_status_name(st));
done:
    free(block);
    free(ref);
    free(resident);
    pk_laplace2d_plan_destroy(plan);
}

/* ---- 4. layout conversion and bad input (serial suite) ---------------------------------- */
static void lp_check_conversion(void)
{
    /* the second pass threaded (PORTKERN_TEST_PARALLEL_BYTES=0: every size, OpenMP's default
     * team), odd row counts too: the same mapping, so the one-thread bits */
    static const int cases[][2] = {{15, 5}, {15, 3}, {16, 16}, {48, 16}, {40, 8}, {7, 1}, {6, 6},
                                   {99, 9}, {1, 1}};
    for (size_t c = 0; c < 2 * (sizeof cases / sizeof cases[0]); ++c) {
        const int threaded = c >= sizeof cases / sizeof cases[0];
        if (threaded)
            setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
        else
            unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
        const int l = cases[c % (sizeof cases / sizeof cases[0])][0],
                  nw = cases[c % (sizeof cases / sizeof cases[0])][1], m = l / nw;
        const size_t n = (size_t)l * l;
        float *phi = lp_alloc(n), *pho = lp_alloc(n), *back = lp_alloc(n);
        for (size_t i = 0; i < n; ++i) phi[i] = (float)i;
        int s = pk_laplace2d_to_hvfo(l, nw, phi, pho);
        size_t bad = 0;
        for (int y = 0; y < l && s == PK_OK; ++y)
            for (int xp = 0; xp < m; ++xp)
                for (int w = 0; w < nw; ++w)
                    bad += pho[(size_t)y * l + (size_t)xp * nw + w] !=
                           phi[(size_t)y * l + (size_t)w * m + xp];
        if (s == PK_OK) s = pk_laplace2d_from_hvfo(l, nw, pho, back);
        ok(s == PK_OK && bad == 0 && memcmp(phi, back, n * sizeof(float)) == 0,
           "to_hvfo l=%d nw=%d%s: pho[y][x'][w] = phi[y][w*l/nw + x'] (%zu wrong), from_hvfo "
           "inverts it%s%s", l, nw, threaded ? " threaded" : "", bad, s ? "; " : "",
           s ? pk_last_error() : "");
        free(phi);
        free(pho);
        free(back);
    }
    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
    /* pk_laplace2d's reorders on the context's threads: 1, 2 and 3 give the one-thread bits */
    {
        const int l = 45, n = l * l;
        pk_laplace2d_params p = lp_params(l, 2, PK_LAP_HVFO, 5);
        float *f[4];
        int same = 1;
        for (int t = 0; t <= 3; ++t) { /* t 0: one thread, under the default 4 MiB */
            pk_context_options opt;
            pk_context *ctx = NULL;
            pk_context_options_init(&opt);
            opt.backend = PK_BACKEND_SERIAL;
            opt.flags = PK_OPT_IGNORE_ENV;
            opt.threads = t ? t : 1;
            f[t] = lp_alloc((size_t)n);
            lp_fill(f[t], (size_t)n, 9, -1.0f, 2.0f);
            if (t) setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
            same &= pk_context_create(&ctx, &opt) == PK_OK &&
                    pk_laplace2d(ctx, &p, NULL, f[t], NULL) == PK_OK &&
                    memcmp(f[0], f[t], (size_t)n * sizeof(float)) == 0;
            pk_context_destroy(ctx);
        }
        unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
        ok(same, "pk_laplace2d l=45 nw=5 hvfo: the reorders on 1, 2, 3 threads give the "
           "one-thread bits");
        for (int t = 0; t <= 3; ++t) free(f[t]);
    }
    static float a[1024], b[1024], c16[1024], c8[1024];
    for (int i = 0; i < 1024; ++i) a[i] = (float)i;
    int s = pk_laplace2d_to_hvfo(32, 0, a, b);
    if (s == PK_OK) s = pk_laplace2d_to_hvfo(32, 16, a, c16);
    if (s == PK_OK) s = pk_laplace2d_to_hvfo(32, 8, a, c8);
    ok(s == PK_OK && memcmp(b, c16, sizeof b) == 0 && memcmp(b, c8, sizeof b) != 0,
       "to_hvfo nw = 0 uses the default %d lanes (l = 32: as nw = 16, unlike nw = 8)",
       PK_LAP_DEFAULT_NW);
    int lay = -1;
    ok(pk_laplace2d_layout_from_name("hvfo", &lay) == PK_OK && lay == PK_LAP_HVFO &&
           pk_laplace2d_layout_from_name("lexi", &lay) == PK_OK && lay == PK_LAP_LEXI &&
           strcmp(pk_laplace2d_layout_name(PK_LAP_HVFO), "hvfo") == 0 &&
           strcmp(pk_laplace2d_layout_name(PK_LAP_LEXI), "lexi") == 0 &&
           pk_laplace2d_layout_name(2) == NULL && pk_laplace2d_layout_name(-1) == NULL,
       "layout names: lexi <-> PK_LAP_LEXI, hvfo <-> PK_LAP_HVFO, NULL for others");
}

static void lp_expect(int got, int want, const char *needle, const char *what)
{
    const char *e = pk_last_error();
    ok(got == want && e[0] && (!needle || strstr(e, needle)), "%s -> %s (got %s: \"%s\")", what,
       pk_status_name(want), pk_status_name(got), e);
}

/* p through the three validating entry points: one-shot, reference (not for layout/nw
 * errors: it ignores them), plan_create. */
static void lp_expect_all(const pk_laplace2d_params *p, int want, const char *needle,
                          const char *what, int reference_too)
{
    static float fs[64];
    char msg[3][300];
    int got[3];
    pk_laplace2d_plan *plan = (pk_laplace2d_plan *)&fs; /* must come back NULL */
    got[0] = pk_laplace2d(lp_ctx, p, NULL, fs, NULL);
    snprintf(msg[0], sizeof msg[0], "%s", pk_last_error());
    got[1] = reference_too ? pk_laplace2d_reference(p, fs) : want;
    snprintf(msg[1], sizeof msg[1], "%s", reference_too ? pk_last_error() : needle);
    got[2] = pk_laplace2d_plan_create(&plan, lp_ctx, p, NULL, NULL);
    snprintf(msg[2], sizeof msg[2], "%s", pk_last_error());
    int good = plan == NULL;
    for (int i = 0; i < 3; ++i) good &= got[i] == want && msg[i][0] && strstr(msg[i], needle);
    ok(good, "%s -> %s from pk_laplace2d%s, _plan_create (got %s %s %s%s: \"%s\")", what,
       pk_status_name(want), reference_too ? ", _reference" : "", pk_status_name(got[0]),
       pk_status_name(got[1]), pk_status_name(got[2]), plan ? ", plan not NULLed" : "", msg[0]);
    if (got[2] == PK_OK) pk_laplace2d_plan_destroy(plan);
}

static void lp_check_errors(void)
{
    static float fs[64], gs[64];
    pk_laplace2d_params p = lp_params(4, 1, PK_LAP_LEXI, 0), q;
    lp_expect(pk_laplace2d(NULL, &p, NULL, fs, NULL), PK_ENULL, "ctx", "one-shot: NULL ctx");
    lp_expect(pk_laplace2d(lp_ctx, NULL, NULL, fs, NULL), PK_ENULL, "p", "one-shot: NULL params");
    lp_expect(pk_laplace2d(lp_ctx, &p, NULL, NULL, NULL), PK_ENULL, "phi", "one-shot: NULL phi");
    lp_expect(pk_laplace2d_reference(NULL, fs), PK_ENULL, "p", "reference: NULL params");
    lp_expect(pk_laplace2d_reference(&p, NULL), PK_ENULL, "phi", "reference: NULL phi");
    pk_laplace2d_plan *plan = NULL;
    lp_expect(pk_laplace2d_plan_create(NULL, lp_ctx, &p, NULL, NULL), PK_ENULL, "plan",
              "plan_create: NULL plan pointer");
    lp_expect(pk_laplace2d_plan_create(&plan, NULL, &p, NULL, NULL), PK_ENULL, "ctx",
              "plan_create: NULL ctx");
    lp_expect(pk_laplace2d_plan_create(&plan, lp_ctx, NULL, NULL, NULL), PK_ENULL, "p",
              "plan_create: NULL params");
    lp_expect(pk_laplace2d_plan_upload(NULL, fs), PK_ENULL, "plan", "plan_upload: NULL plan");
    lp_expect(pk_laplace2d_plan_run(NULL, 1, NULL), PK_ENULL, "plan", "plan_run: NULL plan");
    lp_expect(pk_laplace2d_plan_download(NULL, fs), PK_ENULL, "plan", "plan_download: NULL plan");
    if (pk_laplace2d_plan_create(&plan, lp_ctx, &p, NULL, NULL) == PK_OK) {
        lp_expect(pk_laplace2d_plan_upload(plan, NULL), PK_ENULL, "phi", "plan_upload: NULL phi");
        pk_laplace2d_plan_upload(plan, fs);
        lp_expect(pk_laplace2d_plan_download(plan, NULL), PK_ENULL, "phi",
                  "plan_download: NULL phi");
        pk_laplace2d_plan_destroy(plan);
    } else {
        ok(0, "plan_create on a valid 4 x 4 (%s)", pk_last_error());
    }

    static const int bad_l[] = {0, -1, INT_MIN};
    for (size_t i = 0; i < sizeof bad_l / sizeof bad_l[0]; ++i) {
        char what[64];
        q = lp_params(bad_l[i], 1, (int)i % 2, 0);
        snprintf(what, sizeof what, "l = %d", bad_l[i]);
        lp_expect_all(&q, PK_ESIZE, "l", what, 1);
    }
    q = lp_params(INT_MAX, 1, PK_LAP_LEXI, 0);
    lp_expect_all(&q, sizeof(size_t) > 4 ? PK_EOVERFLOW : PK_EOVERFLOW, "overflow",
                  "l = INT_MAX (two l*l float fields overflow size_t)", 1);
    q = lp_params(4, -1, PK_LAP_LEXI, 0);
    lp_expect_all(&q, PK_ESIZE, "count", "count = -1", 1);
    static const double bad_sigma[] = {0.0, -0.5, NAN, INFINITY, -INFINITY, 1e300, 1e-60};
    static const int sigma_status[] = {PK_EINVAL, PK_EINVAL, PK_ENONFINITE, PK_ENONFINITE,
                                       PK_ENONFINITE, PK_ENONFINITE, PK_EINVAL};
    for (size_t i = 0; i < sizeof bad_sigma / sizeof bad_sigma[0]; ++i) {
        char what[64];
        q = lp_params(4, 1, PK_LAP_LEXI, 0);
        q.sigma = bad_sigma[i];
        snprintf(what, sizeof what, "sigma = %g", bad_sigma[i]);
        lp_expect_all(&q, sigma_status[i], "sigma", what, 1);
    }
    q = lp_params(4, 1, 2, 0);
    lp_expect_all(&q, PK_EINVAL, "layout", "layout = 2", 0);
    q = lp_params(4, 1, -1, 0);
    lp_expect_all(&q, PK_EINVAL, "layout", "layout = -1", 0);
    q = lp_params(16, 1, PK_LAP_HVFO, -1);
    lp_expect_all(&q, PK_ESIZE, "nw", "hvfo nw = -1", 0);
    q = lp_params(16, 1, PK_LAP_LEXI, -2);
    lp_expect_all(&q, PK_ESIZE, "nw", "lexi nw = -2", 0);
    q = lp_params(15, 1, PK_LAP_HVFO, 0);
    lp_expect_all(&q, PK_ESIZE, "l % nw == 0", "hvfo l = 15, nw = 0 (default 16)", 0);
    q = lp_params(15, 1, PK_LAP_HVFO, 4);
    lp_expect_all(&q, PK_ESIZE, "not a multiple of nw = 4", "hvfo l = 15, nw = 4", 0);
    q = lp_params(8, 1, PK_LAP_HVFO, 16);
    lp_expect_all(&q, PK_ESIZE, "nw = 16", "hvfo l = 8, nw = 16 (more lanes than sites)", 0);
    q = lp_params(15, 1, PK_LAP_LEXI, 4);
    static float f15[15 * 15];
    int s = pk_laplace2d(lp_ctx, &q, NULL, f15, NULL);
    ok(s == PK_OK, "lexi l = 15 ignores nw = 4 (%s)", pk_status_name(s));

    lp_expect(pk_laplace2d_to_hvfo(15, 4, fs, gs), PK_ESIZE, "multiple", "to_hvfo l=15 nw=4");
    lp_expect(pk_laplace2d_to_hvfo(0, 1, fs, gs), PK_ESIZE, "l", "to_hvfo l=0");
    lp_expect(pk_laplace2d_to_hvfo(4, -1, fs, gs), PK_ESIZE, "nw", "to_hvfo nw=-1");
    lp_expect(pk_laplace2d_to_hvfo(4, 2, NULL, gs), PK_ENULL, "lexi", "to_hvfo NULL lexi");
    lp_expect(pk_laplace2d_from_hvfo(4, 2, fs, NULL), PK_ENULL, "lexi", "from_hvfo NULL lexi");
    lp_expect(pk_laplace2d_to_hvfo(4, 2, fs, fs + 3), PK_EINVAL, "overlap",
              "to_hvfo: hvfo overlapping lexi");
    lp_expect(pk_laplace2d_from_hvfo(4, 2, fs, fs), PK_EINVAL, "overlap", "from_hvfo in place");
    int lay = 7;
    lp_expect(pk_laplace2d_layout_from_name("vfo", &lay), PK_EINVAL, "vfo",
              "layout_from_name('vfo')");
    lp_expect(pk_laplace2d_layout_from_name(NULL, &lay), PK_ENULL, "name",
              "layout_from_name(NULL)");

    lp_expect(pk_laplace2d(lp_ctx, &p, "warp-drive", fs, NULL), PK_ENOVARIANT, "warp-drive",
              "one-shot: unknown variant 'warp-drive'");
    plan = (pk_laplace2d_plan *)&fs;
    lp_expect(pk_laplace2d_plan_create(&plan, lp_ctx, &p, "warp-drive", NULL), PK_ENOVARIANT,
              "warp-drive", "plan_create: unknown variant 'warp-drive'");
    ok(plan == NULL, "plan_create leaves *plan NULL on failure");
    lp_expect(pk_laplace2d(lp_ctx, &p, "omp-simd", fs, NULL), PK_ENOVARIANT, "serial",
              "one-shot: variant 'omp-simd' of another backend on a context forcing serial");
    ok(pk_laplace2d_variants(PK_BACKEND_AUTO) && pk_laplace2d_variants(PK_BACKEND_COUNT) &&
           !pk_laplace2d_variants(PK_BACKEND_COUNT)[0],
       "pk_laplace2d_variants of auto / an out-of-range id: not NULL, '' for the bad id");
}

/* ---- environment settings and thread counts -------------------------------------------- */
static const lp_shape lp_env_shapes[] = {
    {PK_LAP_LEXI, 0, {1, 3, 17, 35, 70}, 5},
    {PK_LAP_HVFO, 0, {16, 48, 96}, 3},
    {PK_LAP_HVFO, 8, {8, 24, 56}, 3},
    {PK_LAP_HVFO, 5, {5, 15}, 2},
};

/* The variant under each value of a tuning parameter that selects its code path (read at
 * plan creation), and at its default. */
static void lp_check_env(const char *variant, const char *name, const char *const *values,
                         int nvalues)
{
    char stream[16] = "";
    pk_param_source src = PK_PARAM_DEFAULT;
    if (strcmp(name, "laplace2d.stream"))
        pk_context_get_param(lp_ctx, "laplace2d.stream", stream, sizeof stream, &src);
    for (int k = 0; k <= nvalues; ++k) {
        pk_context_set_param(lp_ctx, name, k < nvalues ? values[k] : NULL);
        char label[96];
        snprintf(label, sizeof label, " under %s=%s%s%s", name, k < nvalues ? values[k] : "(default)",
                 src ? ", laplace2d.stream=" : "", src ? stream : "");
        for (size_t i = 0; i < sizeof lp_env_shapes / sizeof lp_env_shapes[0]; ++i)
            lp_check_shape(lp_ctx, variant, &lp_env_shapes[i], label);
        if (lp_backend == PK_BACKEND_OPENMP) {
            lp_check_execute(lp_ctx, label, variant, PK_LAP_LEXI, 0, 48);
            lp_check_execute(lp_ctx, label, variant, PK_LAP_HVFO, 0, 64);
        }
    }
}

static void lp_check_threads(const char *variant)
{
    static const int nts[] = {1, 3, 7};
    for (size_t t = 0; t < sizeof nts / sizeof nts[0]; ++t) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = lp_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = nts[t];
        pk_context *ctx;
        if (pk_context_create(&ctx, &opt) != PK_OK) {
            ok(0, "context with %d threads: %s", nts[t], pk_last_error());
            continue;
        }
        char label[64];
        snprintf(label, sizeof label, " on %d threads", nts[t]);
        for (size_t i = 0; i < sizeof lp_env_shapes / sizeof lp_env_shapes[0]; ++i)
            lp_check_shape(ctx, variant, &lp_env_shapes[i], label);
        lp_check_execute(ctx, label, variant, PK_LAP_LEXI, 0, 48);
        lp_check_execute(ctx, label, variant, PK_LAP_HVFO, 0, 64);
        if (strcmp(variant, "omp-tb") == 0) { /* 7 threads: bands of 6 or 9 rows, depth 8 */
            pk_context_set_param(ctx, "laplace2d.tb_depth", "8");
            snprintf(label, sizeof label, " on %d threads, laplace2d.tb_depth=8", nts[t]);
            lp_check_execute(ctx, label, variant, PK_LAP_LEXI, 0, 48);
            lp_check_execute(ctx, label, variant, PK_LAP_HVFO, 0, 64);
        }
        pk_context_destroy(ctx);
    }
}

/* ---- the suite -------------------------------------------------------------------------- */
static pk_context *lp_context(pk_backend_id backend)
{
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_context_options_init(&opt);
    opt.backend = backend;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create(%s): %s\n", pk_backend_name(backend), pk_last_error());
        exit(1);
    }
    return ctx;
}

/* Run the whole suite on one backend; SKIP with the reason when it cannot run here. */
/* CUDA: plan_execute on a lexi field in device memory (cuda_devmem.h), lexi (iterated on it)
 * and hvfo (reordered on the device: lib/laplace2d.c -> the backend's execute_canonical),
 * counts 0, 1 and 4: the bits of plan_execute on a host copy, transfer_s 0 and the reason's
 * "device pointers, none"; then hvfo plan_upload of the device field: PK_EINVAL (the host
 * reorders there). */
static void lp_check_device_arrays(const char *variant)
{
    const char *why = devmem_open();
    if (why) {
        tap_skip(why, "laplace2d %s: plan_execute on device arrays", variant);
        return;
    }
    static const int shapes[][3] = {{PK_LAP_LEXI, 0, 48}, {PK_LAP_HVFO, 0, 64},
                                    {PK_LAP_HVFO, 3, 15}, {PK_LAP_HVFO, 8, 200}};
    static const int counts[] = {0, 1, 4};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
        char err[600] = "", lay[32];
        int good = 1;
        pk_laplace2d_params p = lp_params(shapes[k][2], 0, shapes[k][0], shapes[k][1]);
        const size_t n = (size_t)p.l * p.l, bytes = n * sizeof(float);
        float *x = lp_alloc(n), *host = lp_alloc(n), *back = lp_alloc(n);
        lp_fill(x, n, 17 + (unsigned)k, -1.0f, 1.0f);
        pk_laplace2d_plan *plan = NULL;
        float *dev = devmem_alloc(NULL, bytes);
        int s = dev ? PK_OK : PK_EDEVMEM;
        if (s != PK_OK) snprintf(err, sizeof err, "cudaMalloc of the test field failed");
        if (s == PK_OK && (s = pk_laplace2d_plan_create(&plan, lp_ctx, &p, variant, NULL)))
            snprintf(err, sizeof err, "plan_create: %s", pk_last_error());
        for (size_t c = 0; c < sizeof counts / sizeof counts[0] && s == PK_OK; ++c) {
            pk_run_info info;
            memcpy(host, x, bytes);
            if ((s = pk_laplace2d_plan_execute(plan, host, counts[c], NULL)) != PK_OK) {
                snprintf(err, sizeof err, "host field: %s", pk_last_error());
                break;
            }
            memset(&info, 0, sizeof info);
            devmem_free(dev); /* a fresh device copy of x for each count */
            if (!(dev = devmem_alloc(x, bytes))) {
                s = PK_EDEVMEM;
                snprintf(err, sizeof err, "cudaMalloc of the test field failed");
                break;
            }
            s = pk_laplace2d_plan_execute(plan, dev, counts[c], &info);
            if (s != PK_OK) {
                snprintf(err, sizeof err, "count %d: %s", counts[c], pk_last_error());
            } else if (devmem_read(back, dev, bytes) || memcmp(back, host, bytes)) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "count %d: the field differs from the host copy's bits",
                         counts[c]);
            } else if (info.transfer_s != 0 || !strstr(info.reason, "device pointers, none")) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "count %d: transfer_s %g, reason \"%s\"", counts[c],
                         info.transfer_s, info.reason);
            }
        }
        if (s == PK_OK && p.layout == PK_LAP_HVFO) {
            const int u = pk_laplace2d_plan_upload(plan, dev);
            if (u != PK_EINVAL || !strstr(pk_last_error(), "phi: device memory")) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "plan_upload of the device field: %s (%s)",
                         pk_status_name(u), pk_last_error());
            }
        }
        good = s == PK_OK;
        ok(good, "%s %s l=%d plan_execute on a device lexi field (%s): the host copy's bits for "
           "counts 0, 1, 4, transfer_s 0, \"device pointers, none\"%s%s%s", variant,
           lp_layout_label(&p, lay, sizeof lay), p.l,
           p.layout == PK_LAP_HVFO ? "reordered on the device" : "iterated on it",
           p.layout == PK_LAP_HVFO ? "; plan_upload of it PK_EINVAL" : "", err[0] ? ": " : "",
           err);
        pk_laplace2d_plan_destroy(plan);
        devmem_free(dev);
        free(x);
        free(host);
        free(back);
    }
}

static int lp_run_suite(pk_backend_id backend)
{
    lp_ctx = lp_context(backend);
    lp_backend = backend;
    const char *why;
    char msg[600];
    if (!pk_backend_available(lp_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(lp_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_laplace2d_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no laplace2d variant", pk_backend_name(backend));
        pk_context_destroy(lp_ctx);
        tap_skip_all(msg);
    }
    lp_init_bounds();
    tap_diag("sigma %g: nu = (1 + 4a) inv = 1 %+.3e (|d0| / u = %.3f); gamma_5 = %.3e", LP_SIGMA,
             lp_d0, fabs(lp_d0) / lp_u, lp_gamma(5));

    if (backend == PK_BACKEND_SERIAL) {
        lp_check_conversion();
        lp_check_errors();
    }
    char list[256];
    snprintf(list, sizeof list, "%s", variants);
    for (char *v = strtok(list, ","); v; v = strtok(NULL, ",")) {
        lp_check_reference(lp_ctx, v, "");
        lp_check_big(v, PK_LAP_LEXI, 0);
        lp_check_big(v, PK_LAP_HVFO, 0);
        lp_check_big(v, PK_LAP_HVFO, 8);
        lp_check_properties(v);
        lp_check_plan(v, PK_LAP_LEXI, 0, 37);
        lp_check_plan(v, PK_LAP_HVFO, 0, 64);
        lp_check_plan(v, PK_LAP_HVFO, 3, 15);
        lp_check_execute(lp_ctx, "", v, PK_LAP_LEXI, 0, 48);
        lp_check_execute(lp_ctx, "", v, PK_LAP_HVFO, 0, 64);
        if (backend == PK_BACKEND_CUDA) lp_check_device_arrays(v);
        if (strcmp(v, "omp-simd") == 0 || strcmp(v, "omp-tb") == 0) {
            static const char *const isa[] = {"avx512", "avx2", "generic"};
            lp_check_env(v, "laplace2d.isa", isa, 3);
            /* streaming stores (on their own only beyond the LLC) on every ISA path */
            pk_context_set_param(lp_ctx, "laplace2d.stream", "1");
            lp_check_env(v, "laplace2d.isa", isa, 3);
            pk_context_set_param(lp_ctx, "laplace2d.stream", NULL);
            if (strcmp(v, "omp-tb") == 0) { /* depths dividing the counts or not, 1 and 16 */
                static const char *const depth[] = {"1", "2", "3", "5", "16"};
                lp_check_env(v, "laplace2d.tb_depth", depth, 5);
            }
        } else if (strcmp(v, "omp") == 0) {
            static const char *const on[] = {"1"};
            lp_check_env(v, "laplace2d.stream", on, 1);
        }
        if (strcmp(v, "opencl") == 0) {
            static const char *const scheme[] = {"vec", "item"};
            lp_check_env(v, "laplace2d.cl_scheme", scheme, 2);
        }
        if (backend == PK_BACKEND_OPENMP) lp_check_threads(v);
    }

    /* No variant named: the backend's first. */
    char first[256];
    snprintf(first, sizeof first, "%s", variants);
    first[strcspn(first, ",")] = '\0';
    pk_laplace2d_params p = lp_params(48, 4, PK_LAP_HVFO, 0);
    const size_t n = 48 * 48;
    float *x = lp_alloc(n), *r = lp_alloc(n);
    lp_fill(x, n, 301, 0.5f, 1.0f);
    memcpy(r, x, n * sizeof(float));
    pk_laplace2d_reference(&p, r);
    pk_run_info info;
    memset(&info, 0, sizeof info);
    int s = pk_laplace2d(lp_ctx, &p, NULL, x, &info);
    double e = s == PK_OK ? lp_maxdiff(x, r, n, 0, NULL, NULL) : -1;
    ok(s == PK_OK && lp_info_ok(&info, first) && e <= lp_tol_ref(4, 1.5),
       "variant NULL runs the backend's first variant %s (ran %s; max abs %.2e%s%s)", first,
       info.variant, e, s ? "; " : "", s ? pk_last_error() : "");
    free(x);
    free(r);
    pk_context_destroy(lp_ctx);
    return tap_done();
}
#endif
