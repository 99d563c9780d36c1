/* ds_common.h - the dslash test every backend runs (test_ds_<backend>.c picks one).
 *
 * Every variant of the suite's backend (pk_dslash_variants), with and without recon12:
 * 1. Against pk_dslash_reference (full 4x4 gammas and 3x3 links), norm-wise, through the
 *    one-shot call, a plan (create, upload, run, download) and plan_execute, on odd
 *    lattices (3x5x2x7), extents of 1 and 2 (x+mu and x-mu are the same site, or x itself),
 *    extents that are not multiples of the SIMD widths (omp-vnode then runs fewer lanes),
 *    lattices that split 8, 4 and 2 ways along each direction, 8^4 and 16x8x8x16.  chi is
 *    written into a NaN-filled buffer with a guard zone after it (an unwritten or an overrun
 *    element fails); u and psi must come back unchanged.
 * 2. Properties (docs/KERNELS.md 4c), each checked on the backend's operator M = 1/(2 kappa) +
 *    H/2 (and, in the serial suite, on the reference):
 *    - free field: U = 1 and a constant spinor give chi = psi/(2 kappa) + 4 psi (the eight
 *      projected terms sum to 8 psi);
 *    - gamma5-hermiticity <chi, g5 M g5 phi> = <M chi, phi>, tested on the full operator:
 *      the diagonal term 1/(2 kappa) is g5-hermitian by itself (g5 commutes with it and
 *      kappa is real), so the identity for M is the one for H; at kappa = 1000 the
 *      diagonal's share of the dot products is 5e-4 / 4.5, so an error in H is not hidden
 *      under it, and at the default kappa = 0.125 as well.  No subtraction M - 1/(2 kappa)
 *      is needed (it would cancel digits);
 *    - gauge covariance M[U^g](g psi) = g M[U] psi with random SU(3) g(x),
 *      U^g_mu(x) = g(x) U_mu(x) g(x+mu)^+ (the diagonal term is covariant too).
 * 3. Plans: uploaded once and run twice gives the same bits; a second upload gives the new
 *    result; run before any upload and download before a run (also right after a new
 *    upload) are PK_ESTATE; the run info names the backend and variant, counts 1320 flops
 *    per site and 3072 (2688 with recon12) bytes per site, and layout_s > 0 exactly when
 *    recon12; a NULL variant runs the backend's first.  plan_execute, with and without
 *    recon12: two field sets into two chi arrays each within the bound (the first chi
 *    untouched by the second call), u and psi unchanged, no copy in or out on serial and
 *    omp (transfer_s 0; omp-vnode converts to its lanes: transfer), layout_s > 0 exactly
 *    when recon12 and the plan compresses the links (serial and omp read rows 0 and 1 of the
 *    caller's full links in place: 0); the same bits as upload, run and download of the same
 *    fields; in place (chi == psi) right; afterwards plan_run and plan_download
 *    without an upload are PK_ESTATE and upload, run, download work again; NULL arguments
 *    PK_ENULL.
 * 3b. Serial and OpenMP: the host layout conversions (recon12, omp-vnode) on 1, 2 and 3
 *    threads give the one-thread bits.
 * 4. Bad input (serial suite): NULL arguments, extents <= 0, sizes whose bytes overflow,
 *    kappa <= 0, NaN or Inf, recon12 not 0/1, unknown variants, the reference in place.
 * 5. CUDA suite only: plan_execute on cudaMalloc'd u, psi and chi (cuda_devmem.h), full links
 *    and recon12 (ds_check_device_arrays; reordered on the device).
 * 6. Ranges (pk_dslash_params t_begin, t_end, z_begin, z_end; ds_check_range): on serial
 *    and OpenMP every variant, with and without recon12, on 2x3x8x8, 3x5x2x7, 4x4x4x6 and
 *    2x2x2x8, the t-ranges [0, T), [0, 1), [T - 1, T), [1, T - 1) and [2, 3), the z-ranges
 *    [0, 1), [Z - 1, Z) and [1, Z - 1), and the boxes [1, T - 1) x [1, Z - 1),
 *    [0, 1) x [Z - 1, Z) and [2, 3) x [0, 1), through the one-shot call, a plan (upload,
 *    run, download), plan_execute and plan_execute_psi: the range's sites are the bits of
 *    the whole call (omp-vnode where the range took other lanes than the whole call, as a
 *    ranged direction is never laned: within the bound), chi's other sites untouched,
 *    plan_execute on a chi of only t_end planes (with the guard after it), run info's
 *    flops 1320 per site of the range; the reference's range equals its whole call's
 *    sites; empty, reversed and out-of-lattice t- and z-ranges PK_EINVAL from the one-shot
 *    call, plan_create and the reference.  OpenCL and CUDA: a t- or a z-range is
 *    PK_EUNSUPPORTED at plan_create.  plan_execute_psi (the links of
 *    plan_upload kept) gives the same, PK_ESTATE before any upload; OpenCL and CUDA:
 *    PK_EUNSUPPORTED.
 * omp-vnode also runs under dslash.isa = avx512, avx2, generic and auto (the lanes it
 * chose must match the rule under generic: 2 lanes along the first of t, z, y, x with an
 * even extent, else 1), and both OpenMP variants on 3 threads.  A suite SKIPs as a whole when
 * its backend is unavailable, has no dslash variant, or its device lacks double precision.
 *
 * Error analysis (norm-wise, ||.|| the 2-norm over all sites, spins, colours, re and im).
 * u = 2^-53.  Every real component of chi is, in the backends and in the reference alike,
 * diag psi_i + 1/2 sum over the 8 terms of sums of products link x psi: the half spinor
 * (one addition), the products and the colour sum (depth <= 7 with the multiply), the
 * recon12 third row (depth 3, its elements bounded by 1 for unitary rows), the 8-term
 * accumulation (8) and the final diag psi + acc/2 (2): depth <= 21, so each computed
 * component is within gamma_24 A_i of the exact one (Higham, Accuracy and Stability, 3.1),
 * A_i the same sum with every product replaced by its absolute value.  For one term, a
 * site's 24 leaf sums are twice (spins k and 2+k) the 12 values sum_b |W_ab|_1 |h_kb|_1 <=
 * 2 ||h_k|| (rows of W unit vectors, |z|_1 <= sqrt2 |z|), ||h_k||^2 <= 2(|psi_k|^2 +
 * |psi_pr(k)|^2): their squares sum to <= 96 |psi(y)|^2; a term maps sites one to one, so
 *     ||A|| <= (diag + 1/2 x 8 x sqrt(96)) ||psi|| = (diag + 39.2) ||psi||,
 * and the backend and the reference differ by at most
 *     2 gamma_24 (diag + 39.2) ||psi|| / ||chi_ref||         (relative, norm-wise),
 * 5e-14 for random data at kappa = 0.125 (||chi|| ~ 4.5 ||psi||): the issue's 1e-12 holds
 * with a margin of ~20, and the test uses this bound (printed per line), which must itself
 * be <= 1e-12.  The properties use the same E_M = gamma_24 (diag + 39.2) per unit ||v||
 * for each application of M, plus:
 *  - hermiticity: |D1 - D2| <= 2 E_M ||chi|| ||phi|| + the two dot products' own error,
 *    computed compensated (Dot2, Ogita-Rump-Oishi: u |D| + gamma_n^2 S, S = sum |a_i b_i|);
 *  - gauge covariance: the transformed inputs are rounded too: ||M|| <= diag + 8, g psi
 *    within 2 gamma_6 ||psi||, each U^g within 18 gamma_12 (Frobenius) so the 8 terms add
 *    8 x 18 gamma_12 ||psi||, and g (M psi) within 2 gamma_6 ||M psi||:
 *    tol = [2 E_M + (diag + 8) 2 gamma_6 + 144 gamma_12] ||psi|| + 2 gamma_6 ||M psi||;
 *  - free field: the products by 1 and 0 are exact; E_M ||psi|| bounds the rest.
 * Measured errors are ~1e-16 (printed); a wrong sign, gamma or neighbour gives O(1). */
#ifndef PK_TEST_DS_COMMON_H
#define PK_TEST_DS_COMMON_H
#include "cuda_devmem.h"
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DS_ISSUE_TOL 1e-12 /* the issue's bar: relative, norm-wise, double */
#define DS_GUARD 64        /* doubles after chi that must stay untouched */
#define DS_SENTINEL (-12345.6789)

enum { DS_REF = 0, DS_ONESHOT = 1, DS_PLAN = 2, DS_EXECUTE = 3 };

static pk_context *ds_ctx;
static pk_backend_id ds_backend;
static double ds_u;
static char ds_err[512];

static double ds_gamma(int n) { return n * ds_u / (1 - n * ds_u); }
/* E_M per unit ||v||: one application of M (see the header). */
static double ds_EM(double kappa) { return ds_gamma(24) * (1 / (2 * kappa) + 4 * sqrt(96.0)); }

static double *ds_alloc(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof(double));
    if (!p) {
        printf("Bail out! out of memory (%zu doubles)\n", n);
        exit(1);
    }
    return p;
}

static pk_dslash_params ds_params(int x, int y, int z, int t, double kappa, int recon12)
{
    pk_dslash_params p = {0}; /* t_begin, t_end 0: all planes */
    p.x = x;
    p.y = y;
    p.z = z;
    p.t = t;
    p.kappa = kappa;
    p.recon12 = recon12;
    return p;
}

static size_t ds_volume(const pk_dslash_params *p)
{
    return (size_t)p->x * (size_t)p->y * (size_t)p->z * (size_t)p->t;
}

/* Random SU(3) links and a Gaussian spinor, reproducible by seed. */
static void ds_fields(const pk_dslash_params *p, unsigned seed, double **u, double **psi)
{
    const size_t V = ds_volume(p);
    *u = ds_alloc(4 * V * 18);
    *psi = ds_alloc(24 * V);
    if (pk_lqcd_random_su3(1000 + seed, 4 * V, *u) != PK_OK ||
        pk_lqcd_random_complex(2000 + seed, 12 * V, *psi) != PK_OK) {
        printf("Bail out! generators: %s\n", pk_last_error());
        exit(1);
    }
}

static double ds_norm(const double *a, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += a[i] * a[i];
    return sqrt(s);
}

/* ||a - b|| / ||b|| (Inf for NaN). */
static double ds_relerr(const double *a, const double *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; ++i) {
        e += (a[i] - b[i]) * (a[i] - b[i]);
        r += b[i] * b[i];
    }
    e = sqrt(e) / sqrt(r);
    return e == e ? e : INFINITY;
}

/* One call into chi[24 V]: the reference, the one-shot call, a plan (create, upload, run,
 * download) or a plan's plan_execute.  chi is written through a NaN-filled buffer with a
 * guard zone; u and psi must be left unchanged.  Returns the status (PK_EINTERNAL for an
 * overrun or a changed input), detail in ds_err. */
static int ds_exec(pk_context *ctx, const char *variant, int mode, const pk_dslash_params *p,
                   const double *u, const double *psi, double *chi, pk_run_info *info)
{
    const size_t V = ds_volume(p), ns = 24 * V, nu = 72 * V;
    double *buf = ds_alloc(ns + DS_GUARD), *uc = ds_alloc(nu), *pc = ds_alloc(ns);
    memcpy(uc, u, nu * sizeof(double));
    memcpy(pc, psi, ns * sizeof(double));
    for (size_t i = 0; i < ns; ++i) buf[i] = NAN;
    for (size_t i = ns; i < ns + DS_GUARD; ++i) buf[i] = DS_SENTINEL;
    int s;
    ds_err[0] = '\0';
    if (mode == DS_REF) {
        s = pk_dslash_reference(p, u, psi, buf);
    } else if (mode == DS_ONESHOT) {
        s = pk_dslash(ctx, p, variant, u, psi, buf, info);
    } else {
        pk_dslash_plan *plan = NULL;
        s = pk_dslash_plan_create(&plan, ctx, p, variant, NULL);
        if (mode == DS_EXECUTE) {
            if (s == PK_OK) s = pk_dslash_plan_execute(plan, u, psi, buf, info);
        } else {
            if (s == PK_OK) s = pk_dslash_plan_upload(plan, u, psi);
            if (s == PK_OK) s = pk_dslash_plan_run(plan, info);
            if (s == PK_OK) s = pk_dslash_plan_download(plan, buf);
        }
        if (s != PK_OK) snprintf(ds_err, sizeof ds_err, "%s", pk_last_error());
        pk_dslash_plan_destroy(plan);
    }
    if (s != PK_OK && !ds_err[0]) snprintf(ds_err, sizeof ds_err, "%s", pk_last_error());
    if (s == PK_OK) {
        size_t bad = 0;
        for (size_t i = ns; i < ns + DS_GUARD; ++i) bad += buf[i] != DS_SENTINEL;
        if (bad) {
            s = PK_EINTERNAL;
            snprintf(ds_err, sizeof ds_err, "%zu of the %d doubles after chi were overwritten",
                     bad, DS_GUARD);
        } else if (memcmp(u, uc, nu * sizeof(double)) || memcmp(psi, pc, ns * sizeof(double))) {
            s = PK_EINTERNAL;
            snprintf(ds_err, sizeof ds_err, "u or psi was modified");
        }
    }
    memcpy(chi, buf, ns * sizeof(double));
    free(buf);
    free(uc);
    free(pc);
    return s;
}

/* The operator of a "variant" for the property tests: "reference" or a backend variant. */
static int ds_apply(const char *variant, const pk_dslash_params *p, const double *u,
                    const double *psi, double *chi)
{
    const int ref = strcmp(variant, "reference") == 0;
    return ds_exec(ds_ctx, variant, ref ? DS_REF : DS_ONESHOT, p, u, psi, chi, NULL);
}

/* ---- 1. against the reference ----------------------------------------------------------- */
static const int ds_sizes[][4] = {
    {3, 5, 2, 7}, {1, 1, 1, 1}, {2, 2, 2, 2}, {1, 2, 1, 3}, {2, 1, 2, 1}, {4, 4, 4, 4},
    {3, 3, 3, 8}, {16, 3, 1, 5}, {3, 5, 8, 1}, {5, 3, 4, 9}, {12, 1, 5, 3}, {6, 6, 6, 6},
    {3, 7, 5, 2}, {8, 8, 8, 8}};
#define DS_NSIZES (sizeof ds_sizes / sizeof ds_sizes[0])

static void ds_check_size(pk_context *ctx, const char *variant, const int *L, int recon12,
                          const char *label)
{
    pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, recon12);
    const size_t V = ds_volume(&p), ns = 24 * V;
    double *u, *psi, *ref = ds_alloc(ns), *chi = ds_alloc(ns);
    ds_fields(&p, (unsigned)(L[0] + 3 * L[1] + 7 * L[2] + 11 * L[3]), &u, &psi);
    if (ds_exec(ctx, variant, DS_REF, &p, u, psi, ref, NULL) != PK_OK) {
        ok(0, "reference %dx%dx%dx%d: %s", L[0], L[1], L[2], L[3], ds_err);
    } else {
        const double tol = 2 * ds_EM(p.kappa) * ds_norm(psi, ns) / ds_norm(ref, ns);
        for (int mode = DS_ONESHOT; mode <= DS_EXECUTE; ++mode) {
            pk_run_info info;
            memset(&info, 0, sizeof info);
            const int s = ds_exec(ctx, variant, mode, &p, u, psi, chi, &info);
            const double e = s == PK_OK ? ds_relerr(chi, ref, ns) : INFINITY;
            ok(s == PK_OK && e <= tol && tol <= DS_ISSUE_TOL,
               "%s %s%s %dx%dx%dx%d%s: rel err %.2e <= bound %.2e (<= %.0e)%s%s%s%s", variant,
               mode == DS_ONESHOT ? "one-shot" : mode == DS_PLAN ? "plan" : "plan_execute",
               recon12 ? " recon12" : "", L[0], L[1],
               L[2], L[3], label, e, tol, DS_ISSUE_TOL, s ? "; " : "", s ? ds_err : "",
               info.reason[0] && strstr(info.reason, "lane") ? "; " : "",
               info.reason[0] && strstr(info.reason, "lane") ? strstr(info.reason, "omp-vnode")
                                                             : "");
        }
    }
    free(u);
    free(psi);
    free(ref);
    free(chi);
}

static void ds_check_reference(const char *variant)
{
    /* 32768 sites: more work-items than PoCL's own choice of group size once overflowed */
    static const int big[4] = {16, 8, 8, 16};
    for (size_t i = 0; i < DS_NSIZES; ++i)
        for (int r = 0; r <= 1; ++r) ds_check_size(ds_ctx, variant, ds_sizes[i], r, "");
    ds_check_size(ds_ctx, variant, big, 0, "");
}

/* ---- 2. properties ---------------------------------------------------------------------- */
static void ds_check_free(const char *variant, int recon12)
{
    pk_dslash_params p = ds_params(3, 2, 5, 2, 0.125, recon12);
    const size_t V = ds_volume(&p), ns = 24 * V;
    double *u = ds_alloc(72 * V), *psi = ds_alloc(ns), *chi = ds_alloc(ns), *want = ds_alloc(ns);
    double c[24];
    memset(u, 0, 72 * V * sizeof(double));
    for (size_t k = 0; k < 4 * V; ++k)
        for (int a = 0; a < 3; ++a) u[18 * k + 8 * a] = 1.0; /* re of (a, a) */
    pk_lqcd_random_complex(77, 12, c);
    for (size_t x = 0; x < V; ++x) memcpy(psi + 24 * x, c, sizeof c);
    const double diag = 1 / (2 * p.kappa);
    for (size_t i = 0; i < ns; ++i) want[i] = diag * psi[i] + 4 * psi[i];
    const int s = ds_apply(variant, &p, u, psi, chi);
    const double e = s == PK_OK ? ds_relerr(chi, want, ns) : INFINITY;
    const double tol = ds_EM(p.kappa) * ds_norm(psi, ns) / ds_norm(want, ns) + 4 * ds_u;
    ok(s == PK_OK && e <= tol,
       "%s%s free field U = 1, constant psi on 3x2x5x2: chi = psi/(2 kappa) + 4 psi (hopping "
       "sum 8 psi), rel err %.2e <= %.2e%s%s", variant, recon12 ? " recon12" : "", e, tol,
       s ? "; " : "", s ? ds_err : "");
    free(u);
    free(psi);
    free(chi);
    free(want);
}

/* a*b = p + e exactly (fma), a+b = s + e exactly. */
static void ds_two_prod(double a, double b, double *p, double *e)
{
    *p = a * b;
    *e = fma(a, b, -*p);
}

static void ds_two_sum(double a, double b, double *s, double *e)
{
    *s = a + b;
    const double z = *s - a;
    *e = (a - (*s - z)) + (b - z);
}

/* <a, b> = sum conj(a_i) b_i of n complex numbers, compensated (Dot2); *S gets sum |a_i||b_i|
 * over the real products. */
static void ds_dot(const double *a, const double *b, size_t n, double *re, double *im,
                   double *S)
{
    double sr = 0, cr = 0, si = 0, ci = 0, sabs = 0;
    for (size_t i = 0; i < n; ++i) {
        const double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        const double prods[4] = {ar, ai, ar, -ai}, with[4] = {br, bi, bi, br};
        for (int k = 0; k < 4; ++k) {
            double p, ep, t, et;
            ds_two_prod(prods[k], with[k], &p, &ep);
            if (k < 2) {
                ds_two_sum(sr, p, &t, &et);
                sr = t;
                cr += et + ep;
            } else {
                ds_two_sum(si, p, &t, &et);
                si = t;
                ci += et + ep;
            }
            sabs += fabs(prods[k] * with[k]);
        }
    }
    *re = sr + cr;
    *im = si + ci;
    *S = sabs;
}

static void ds_g5(double *v, size_t V)
{
    for (size_t x = 0; x < V; ++x)
        for (int k = 12; k < 24; ++k) v[24 * x + k] = -v[24 * x + k];
}

static void ds_check_hermitian(const char *variant, int recon12, double kappa)
{
    pk_dslash_params p = ds_params(3, 5, 2, 7, kappa, recon12);
    const size_t V = ds_volume(&p), ns = 24 * V;
    double *u, *chi, *phi = ds_alloc(ns), *a = ds_alloc(ns), *b = ds_alloc(ns), *g = ds_alloc(ns);
    ds_fields(&p, 5, &u, &chi);
    pk_lqcd_random_complex(555, 12 * V, phi);
    memcpy(g, phi, ns * sizeof(double));
    ds_g5(g, V);
    int s = ds_apply(variant, &p, u, g, a); /* a = M g5 phi */
    if (s == PK_OK) {
        ds_g5(a, V);                        /* g5 M g5 phi */
        s = ds_apply(variant, &p, u, chi, b); /* b = M chi */
    }
    double d1r = 0, d1i = 0, d2r = 0, d2i = 0, S1 = 0, S2 = 0;
    ds_dot(chi, a, 12 * V, &d1r, &d1i, &S1);
    ds_dot(b, phi, 12 * V, &d2r, &d2i, &S2);
    const double n = 48.0 * V, gn = ds_gamma((int)(n > 1e6 ? 1e6 : n));
    const double diff = hypot(d1r - d2r, d1i - d2i);
    const double nc = ds_norm(chi, ns), np = ds_norm(phi, ns);
    const double tol = 2 * ds_EM(kappa) * nc * np + ds_u * (hypot(d1r, d1i) + hypot(d2r, d2i)) +
                       gn * gn * (S1 + S2);
    ok(s == PK_OK && diff <= tol,
       "%s%s gamma5-hermiticity, kappa %g, 3x5x2x7: |<chi, g5 M g5 phi> - <M chi, phi>| = %.2e "
       "<= %.2e (|<chi, g5 M g5 phi>| = %.3g, relative %.1e)%s%s", variant,
       recon12 ? " recon12" : "", kappa, diff, tol, hypot(d1r, d1i), diff / (nc * np),
       s ? "; " : "", s ? ds_err : "");
    free(u);
    free(chi);
    free(phi);
    free(a);
    free(b);
    free(g);
}

/* c = a b (3x3 complex), dagger_b: use b^+. */
static void ds_mm(const double *a, const double *b, int dagger_b, double *c)
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double re = 0, im = 0;
            for (int k = 0; k < 3; ++k) {
                const double ar = a[6 * i + 2 * k], ai = a[6 * i + 2 * k + 1];
                const double br = dagger_b ? b[6 * j + 2 * k] : b[6 * k + 2 * j];
                const double bi = dagger_b ? -b[6 * j + 2 * k + 1] : b[6 * k + 2 * j + 1];
                re += ar * br - ai * bi;
                im += ar * bi + ai * br;
            }
            c[6 * i + 2 * j] = re;
            c[6 * i + 2 * j + 1] = im;
        }
}

/* Each spin's colour vector of the site spinor v[24] multiplied by g. */
static void ds_rotate_spinor(const double *g, const double *v, double *out)
{
    for (int s = 0; s < 4; ++s)
        for (int a = 0; a < 3; ++a) {
            double re = 0, im = 0;
            for (int b = 0; b < 3; ++b) {
                const double gr = g[6 * a + 2 * b], gi = g[6 * a + 2 * b + 1];
                const double vr = v[6 * s + 2 * b], vi = v[6 * s + 2 * b + 1];
                re += gr * vr - gi * vi;
                im += gr * vi + gi * vr;
            }
            out[6 * s + 2 * a] = re;
            out[6 * s + 2 * a + 1] = im;
        }
}

static void ds_check_gauge(const char *variant, int recon12, const int *L)
{
    pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, recon12);
    const size_t V = ds_volume(&p), ns = 24 * V;
    double *u, *psi, *g = ds_alloc(18 * V), *ug = ds_alloc(72 * V), *pg = ds_alloc(ns);
    double *chi = ds_alloc(ns), *chig = ds_alloc(ns), *want = ds_alloc(ns);
    double tmp[18];
    ds_fields(&p, 9, &u, &psi);
    pk_lqcd_random_su3(999, V, g);
    for (size_t x = 0; x < V; ++x) {
        size_t c[4], r = x;
        const int dims[4] = {L[0], L[1], L[2], L[3]};
        for (int mu = 0; mu < 4; ++mu) {
            c[mu] = r % (size_t)dims[mu];
            r /= (size_t)dims[mu];
        }
        for (int mu = 0; mu < 4; ++mu) {
            size_t n[4] = {c[0], c[1], c[2], c[3]};
            n[mu] = (n[mu] + 1) % (size_t)dims[mu];
            const size_t xf = ((n[3] * L[2] + n[2]) * L[1] + n[1]) * L[0] + n[0];
            ds_mm(g + 18 * x, u + 18 * ((size_t)mu * V + x), 0, tmp);
            ds_mm(tmp, g + 18 * xf, 1, ug + 18 * ((size_t)mu * V + x));
        }
        ds_rotate_spinor(g + 18 * x, psi + 24 * x, pg + 24 * x);
    }
    int s = ds_apply(variant, &p, ug, pg, chig);
    if (s == PK_OK) s = ds_apply(variant, &p, u, psi, chi);
    for (size_t x = 0; s == PK_OK && x < V; ++x)
        ds_rotate_spinor(g + 18 * x, chi + 24 * x, want + 24 * x);
    const double e = s == PK_OK ? ds_relerr(chig, want, ns) : INFINITY;
    const double diag = 1 / (2 * p.kappa), np = ds_norm(psi, ns), nw = ds_norm(want, ns);
    const double tol = ((2 * ds_EM(p.kappa) + (diag + 8) * 2 * ds_gamma(6) + 144 * ds_gamma(12)) *
                            np +
                        2 * ds_gamma(6) * nw) /
                       nw;
    ok(s == PK_OK && e <= tol,
       "%s%s gauge covariance M[U^g](g psi) = g M[U] psi, %dx%dx%dx%d: rel err %.2e <= %.2e%s%s",
       variant, recon12 ? " recon12" : "", L[0], L[1], L[2], L[3], e, tol, s ? "; " : "",
       s ? ds_err : "");
    free(u);
    free(psi);
    free(g);
    free(ug);
    free(pg);
    free(chi);
    free(chig);
    free(want);
}

static void ds_check_properties(const char *variant)
{
    static const int gauge_sizes[][4] = {{3, 5, 2, 7}, {2, 1, 2, 3}, {4, 4, 2, 8}};
    for (int r = 0; r <= 1; ++r) {
        ds_check_free(variant, r);
        ds_check_hermitian(variant, r, 1000.0);
        ds_check_hermitian(variant, r, 0.125);
        for (int i = 0; i < 3; ++i) ds_check_gauge(variant, r, gauge_sizes[i]);
    }
}

/* ---- 3. plans and run info --------------------------------------------------------------- */
static int ds_info_ok(const pk_run_info *info, const char *variant)
{
    return info->backend == ds_backend && strcmp(info->variant, variant) == 0;
}

static void ds_check_plan(const char *variant)
{
    pk_dslash_params p = ds_params(3, 5, 2, 7, 0.125, 0);
    const size_t V = ds_volume(&p), ns = 24 * V;
    double *u1, *p1, *u2, *p2, *r1 = ds_alloc(ns), *r2 = ds_alloc(ns);
    double *y = ds_alloc(ns), *again = ds_alloc(ns);
    ds_fields(&p, 21, &u1, &p1);
    ds_fields(&p, 22, &u2, &p2);
    pk_dslash_reference(&p, u1, p1, r1);
    pk_dslash_reference(&p, u2, p2, r2);
    const double tol1 = 2 * ds_EM(p.kappa) * ds_norm(p1, ns) / ds_norm(r1, ns);
    const double tol2 = 2 * ds_EM(p.kappa) * ds_norm(p2, ns) / ds_norm(r2, ns);

    pk_dslash_plan *plan = NULL;
    pk_run_info info;
    int s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, &info);
    ok(s == PK_OK && ds_info_ok(&info, variant), "%s plan_create (%s)", variant,
       s ? pk_last_error() : info.reason);
    if (s != PK_OK) goto done;
    s = pk_dslash_plan_run(plan, NULL);
    ok(s == PK_ESTATE, "%s plan_run before any upload -> PK_ESTATE (got %s: %s)", variant,
       pk_status_name(s), pk_last_error());
    s = pk_dslash_plan_download(plan, y);
    ok(s == PK_ESTATE, "%s plan_download before any run -> PK_ESTATE (got %s)", variant,
       pk_status_name(s));
    s = pk_dslash_plan_upload(plan, u1, p1);
    if (s == PK_OK) s = pk_dslash_plan_run(plan, &info);
    if (s == PK_OK) s = pk_dslash_plan_download(plan, y);
    if (s == PK_OK) s = pk_dslash_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_dslash_plan_download(plan, again);
    ok(s == PK_OK && ds_relerr(y, r1, ns) <= tol1 && !memcmp(y, again, ns * sizeof(double)),
       "%s plan: one upload, two runs: the same bits, rel err %.2e%s%s", variant,
       s ? NAN : ds_relerr(y, r1, ns), s ? "; " : "", s ? pk_last_error() : "");
    ok(s == PK_OK && ds_info_ok(&info, variant) && info.flops == 1320.0 * V &&
           info.bytes == 3072.0 * V && info.kernel_s >= 0 && info.layout_s == 0 &&
           info.setup_s == 0,
       "%s plan_run info: backend %s variant %s, flops %.0f = 1320 V, bytes %.0f = 3072 V, "
       "kernel %.2e s, layout %.1e s", variant, pk_backend_name(info.backend), info.variant,
       info.flops, info.bytes, info.kernel_s, info.layout_s);
    s = pk_dslash_plan_upload(plan, u2, p2);
    int s2 = pk_dslash_plan_download(plan, y);
    ok(s == PK_OK && s2 == PK_ESTATE,
       "%s plan_download right after a new upload -> PK_ESTATE (got %s)", variant,
       pk_status_name(s2));
    if (s == PK_OK) s = pk_dslash_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_dslash_plan_download(plan, y);
    ok(s == PK_OK && ds_relerr(y, r2, ns) <= tol2, "%s plan: second upload gives the new "
       "result (rel err %.2e)", variant, s ? NAN : ds_relerr(y, r2, ns));
    pk_dslash_plan_destroy(plan);

    /* one-shot run info, with and without recon12 (layout_s: the compression, which serial
     * and omp skip: they read the caller's full links in place) */
    const int in_place = (ds_backend == PK_BACKEND_SERIAL || ds_backend == PK_BACKEND_OPENMP) &&
                         strcmp(variant, "omp-vnode") != 0;
    for (int r = 0; r <= 1; ++r) {
        pk_dslash_params q = ds_params(4, 4, 4, 4, 0.2, r);
        double *u, *psi, *chi = ds_alloc(24 * 256);
        ds_fields(&q, 23, &u, &psi);
        memset(&info, 0, sizeof info);
        s = pk_dslash(ds_ctx, &q, variant, u, psi, chi, &info);
        const double bytes = (r ? 2688.0 : 3072.0) * 256;
        ok(s == PK_OK && ds_info_ok(&info, variant) && info.flops == 1320.0 * 256 &&
               info.bytes == bytes &&
               (r && !in_place ? info.layout_s > 0 : info.layout_s == 0) &&
               info.wall_s >= info.kernel_s && info.device_name[0],
           "%s one-shot info%s 4^4: flops %.0f, bytes %.0f (want %.0f), layout_s %.1e, "
           "kernel %.1e <= wall %.1e, device '%s'", variant, r ? " recon12" : "", info.flops,
           info.bytes, bytes, info.layout_s, info.kernel_s, info.wall_s, info.device_name);
        free(u);
        free(psi);
        free(chi);
    }
done:
    free(u1);
    free(p1);
    free(u2);
    free(p2);
    free(r1);
    free(r2);
    free(y);
    free(again);
}

/* plan_execute on the caller's arrays (see the top, 3.). */
static void ds_check_execute(const char *variant, int recon12)
{
    pk_dslash_params p = ds_params(3, 5, 2, 7, 0.125, recon12);
    const size_t V = ds_volume(&p), ns = 24 * V, nu = 72 * V;
    const int copy_free = (ds_backend == PK_BACKEND_SERIAL || ds_backend == PK_BACKEND_OPENMP) &&
                          strcmp(variant, "omp-vnode") != 0;
    const char *r12 = recon12 ? " recon12" : "";
    double *u[2], *psi[2], *ref[2] = {ds_alloc(ns), ds_alloc(ns)};
    double *chi[2] = {ds_alloc(ns), ds_alloc(ns)}, *uc = ds_alloc(nu), *pc = ds_alloc(ns);
    double *first = ds_alloc(ns), tol[2];
    for (int k = 0; k < 2; ++k) {
        ds_fields(&p, 41 + (unsigned)k, &u[k], &psi[k]);
        pk_dslash_reference(&p, u[k], psi[k], ref[k]);
        tol[k] = 2 * ds_EM(p.kappa) * ds_norm(psi[k], ns) / ds_norm(ref[k], ns);
        for (size_t i = 0; i < ns; ++i) chi[k][i] = NAN;
    }
    pk_dslash_plan *plan = NULL;
    int s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, NULL);
    if (s != PK_OK) {
        ok(0, "%s%s plan_execute: plan_create: %s", variant, r12, pk_last_error());
        goto done;
    }
    int good = 1;
    double err[2] = {INFINITY, INFINITY}, transfer[2] = {-1, -1}, layout[2] = {-1, -1};
    char why[600] = "";
    for (int k = 0; k < 2 && good; ++k) {
        memcpy(uc, u[k], nu * sizeof(double));
        memcpy(pc, psi[k], ns * sizeof(double));
        pk_run_info info;
        memset(&info, 0, sizeof info);
        s = pk_dslash_plan_execute(plan, u[k], psi[k], chi[k], &info);
        err[k] = s == PK_OK ? ds_relerr(chi[k], ref[k], ns) : INFINITY;
        transfer[k] = info.transfer_s;
        layout[k] = info.layout_s;
        if (k == 0) memcpy(first, chi[0], ns * sizeof(double));
        const int inputs = !memcmp(uc, u[k], nu * sizeof(double)) &&
                           !memcmp(pc, psi[k], ns * sizeof(double));
        const int counts = s == PK_OK && ds_info_ok(&info, variant) &&
                           info.flops == 1320.0 * V &&
                           info.bytes == (recon12 ? 2688.0 : 3072.0) * V && info.kernel_s >= 0 &&
                           info.setup_s == 0 &&
                           (recon12 && !copy_free ? info.layout_s > 0 : info.layout_s == 0);
        good = s == PK_OK && err[k] <= tol[k] && inputs && counts &&
               (!copy_free || info.transfer_s == 0);
        if (!good)
            snprintf(why, sizeof why, "; set %d: %s%s%s, inputs %s, counts %s (flops %.0f, bytes "
                     "%.0f, layout %.1e s)", k, pk_status_name(s), s ? " " : "",
                     s ? pk_last_error() : "", inputs ? "kept" : "changed", counts ? "ok" : "wrong",
                     info.flops, info.bytes, info.layout_s);
    }
    const int first_kept = good && !memcmp(first, chi[0], ns * sizeof(double));
    ok(good && first_kept,
       "%s%s plan_execute: two field sets into two chi arrays, rel err %.2e, %.2e <= bounds "
       "%.2e, %.2e; u and psi unchanged; the first chi untouched by the second call%s "
       "(transfer %.2e, %.2e s; layout %.1e, %.1e s)%s", variant, r12, err[0], err[1], tol[0],
       tol[1], copy_free ? "; no copy in or out" : "", transfer[0], transfer[1], layout[0],
       layout[1], why);
    /* in place: chi == psi */
    memcpy(pc, psi[0], ns * sizeof(double));
    s = pk_dslash_plan_execute(plan, u[0], pc, pc, NULL);
    ok(s == PK_OK && ds_relerr(pc, ref[0], ns) <= tol[0],
       "%s%s plan_execute in place (chi == psi): rel err %.2e <= %.2e (%s)", variant, r12,
       s == PK_OK ? ds_relerr(pc, ref[0], ns) : INFINITY, tol[0], s ? pk_last_error() : "ok");
    const int sr = pk_dslash_plan_run(plan, NULL), sd = pk_dslash_plan_download(plan, first);
    ok(sr == PK_ESTATE && sd == PK_ESTATE,
       "%s%s after plan_execute, plan_run and plan_download without an upload -> PK_ESTATE "
       "(got %s, %s)", variant, r12, pk_status_name(sr), pk_status_name(sd));
    s = pk_dslash_plan_upload(plan, u[1], psi[1]);
    if (s == PK_OK) s = pk_dslash_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_dslash_plan_download(plan, first);
    ok(s == PK_OK && ds_relerr(first, ref[1], ns) <= tol[1] &&
           !memcmp(first, chi[1], ns * sizeof(double)),
       "%s%s after plan_execute: upload, run and download on the same plan are right, and "
       "bitwise plan_execute's chi of the same fields (%s)", variant, r12,
       s ? pk_last_error() : "ok");
    ok(pk_dslash_plan_execute(NULL, u[0], psi[0], chi[0], NULL) == PK_ENULL &&
           pk_dslash_plan_execute(plan, NULL, psi[0], chi[0], NULL) == PK_ENULL &&
           pk_dslash_plan_execute(plan, u[0], NULL, chi[0], NULL) == PK_ENULL &&
           pk_dslash_plan_execute(plan, u[0], psi[0], NULL, NULL) == PK_ENULL &&
           strstr(pk_last_error(), "chi"),
       "%s%s plan_execute: NULL plan, u, psi or chi -> PK_ENULL (%s)", variant, r12,
       pk_last_error());
done:
    pk_dslash_plan_destroy(plan);
    for (int k = 0; k < 2; ++k) {
        free(u[k]);
        free(psi[k]);
        free(ref[k]);
        free(chi[k]);
    }
    free(uc);
    free(pc);
    free(first);
}

/* ---- 4. bad input (serial suite) --------------------------------------------------------- */
static void ds_expect(int got, int want, const char *needle, const char *what)
{
    const char *e = pk_last_error();
    ok(got == want && e[0] && (!needle || strstr(e, needle)), "%s -> %s (got %s: \"%s\")", what,
       pk_status_name(want), pk_status_name(got), e);
}

/* p through the three validating entry points: one-shot, reference, plan_create. */
static void ds_expect_all(const pk_dslash_params *p, int want, const char *needle,
                          const char *what)
{
    static double us[72], ps[24], cs[24];
    char msg[3][300];
    int got[3];
    pk_dslash_plan *plan = (pk_dslash_plan *)&us; /* must come back NULL */
    got[0] = pk_dslash(ds_ctx, p, NULL, us, ps, cs, NULL);
    snprintf(msg[0], sizeof msg[0], "%s", pk_last_error());
    got[1] = pk_dslash_reference(p, us, ps, cs);
    snprintf(msg[1], sizeof msg[1], "%s", pk_last_error());
    got[2] = pk_dslash_plan_create(&plan, ds_ctx, p, NULL, NULL);
    snprintf(msg[2], sizeof msg[2], "%s", pk_last_error());
    int good = plan == NULL;
    for (int i = 0; i < 3; ++i) good &= got[i] == want && msg[i][0] && strstr(msg[i], needle);
    ok(good, "%s -> %s from pk_dslash, _reference, _plan_create (got %s %s %s%s: \"%s\")", what,
       pk_status_name(want), pk_status_name(got[0]), pk_status_name(got[1]),
       pk_status_name(got[2]), plan ? ", plan not NULLed" : "", msg[0]);
    if (got[2] == PK_OK) pk_dslash_plan_destroy(plan);
}

static void ds_check_errors(void)
{
    static double us[72], ps[24], cs[24];
    pk_dslash_params p = ds_params(1, 1, 1, 1, 0.125, 0), q;
    ds_expect(pk_dslash(NULL, &p, NULL, us, ps, cs, NULL), PK_ENULL, "ctx", "one-shot: NULL ctx");
    ds_expect(pk_dslash(ds_ctx, NULL, NULL, us, ps, cs, NULL), PK_ENULL, "p",
              "one-shot: NULL params");
    ds_expect(pk_dslash(ds_ctx, &p, NULL, NULL, ps, cs, NULL), PK_ENULL, "u", "one-shot: NULL u");
    ds_expect(pk_dslash(ds_ctx, &p, NULL, us, NULL, cs, NULL), PK_ENULL, "psi",
              "one-shot: NULL psi");
    ds_expect(pk_dslash(ds_ctx, &p, NULL, us, ps, NULL, NULL), PK_ENULL, "chi",
              "one-shot: NULL chi");
    ds_expect(pk_dslash_reference(NULL, us, ps, cs), PK_ENULL, "p", "reference: NULL params");
    ds_expect(pk_dslash_reference(&p, NULL, ps, cs), PK_ENULL, "u", "reference: NULL u");
    ds_expect(pk_dslash_reference(&p, us, NULL, cs), PK_ENULL, "psi", "reference: NULL psi");
    ds_expect(pk_dslash_reference(&p, us, ps, NULL), PK_ENULL, "chi", "reference: NULL chi");
    pk_dslash_plan *plan = NULL;
    ds_expect(pk_dslash_plan_create(NULL, ds_ctx, &p, NULL, NULL), PK_ENULL, "plan",
              "plan_create: NULL plan pointer");
    ds_expect(pk_dslash_plan_create(&plan, NULL, &p, NULL, NULL), PK_ENULL, "ctx",
              "plan_create: NULL ctx");
    ds_expect(pk_dslash_plan_upload(NULL, us, ps), PK_ENULL, "plan", "plan_upload: NULL plan");
    ds_expect(pk_dslash_plan_run(NULL, NULL), PK_ENULL, "plan", "plan_run: NULL plan");
    ds_expect(pk_dslash_plan_download(NULL, cs), PK_ENULL, "plan", "plan_download: NULL plan");
    int s = pk_dslash_plan_create(&plan, ds_ctx, &p, NULL, NULL);
    if (s == PK_OK) {
        ds_expect(pk_dslash_plan_upload(plan, NULL, ps), PK_ENULL, "u", "plan_upload: NULL u");
        ds_expect(pk_dslash_plan_upload(plan, us, NULL), PK_ENULL, "psi",
                  "plan_upload: NULL psi");
        s = pk_dslash_plan_upload(plan, us, ps);
        if (s == PK_OK) s = pk_dslash_plan_run(plan, NULL);
        ds_expect(s == PK_OK ? pk_dslash_plan_download(plan, NULL) : s, PK_ENULL, "chi",
                  "plan_download: NULL chi (after a run)");
        pk_dslash_plan_destroy(plan);
    } else {
        ok(0, "plan_create on a valid 1^4 (%s)", pk_last_error());
    }
    pk_dslash_plan_destroy(NULL);

    static const int bad[] = {0, -1, INT_MIN};
    static const char *const axis[4] = {"x", "y", "z", "t"};
    for (int a = 0; a < 4; ++a)
        for (size_t v = 0; v < sizeof bad / sizeof bad[0]; ++v) {
            char what[64];
            q = ds_params(2, 2, 2, 2, 0.125, (int)v % 2);
            int *dim[4] = {&q.x, &q.y, &q.z, &q.t};
            *dim[a] = bad[v];
            snprintf(what, sizeof what, "%s = %d", axis[a], bad[v]);
            char needle[8];
            snprintf(needle, sizeof needle, "%s:", axis[a]);
            ds_expect_all(&q, PK_ESIZE, needle, what);
        }
    q = ds_params(INT_MAX, INT_MAX, INT_MAX, 2, 0.125, 0);
    ds_expect_all(&q, PK_EOVERFLOW, "overflow", "INT_MAX^3 x 2 (volume overflows)");
    q = ds_params(1 << 15, 1 << 15, 1 << 15, 1 << 10, 0.125, 1);
    ds_expect_all(&q, PK_EOVERFLOW, "overflow", "2^15 x 2^15 x 2^15 x 2^10 (link bytes overflow)");
    const double kappas[] = {0.0, -0.125, NAN, INFINITY, -INFINITY};
    const int kst[] = {PK_EINVAL, PK_EINVAL, PK_ENONFINITE, PK_ENONFINITE, PK_ENONFINITE};
    for (int k = 0; k < 5; ++k) {
        char what[64];
        q = ds_params(2, 2, 2, 2, kappas[k], 0);
        snprintf(what, sizeof what, "kappa = %g", kappas[k]);
        ds_expect_all(&q, kst[k], "kappa", what);
    }
    q = ds_params(2, 2, 2, 2, 0.125, 2);
    ds_expect_all(&q, PK_EINVAL, "recon12", "recon12 = 2");
    q = ds_params(2, 2, 2, 2, 0.125, -1);
    ds_expect_all(&q, PK_EINVAL, "recon12", "recon12 = -1");

    ds_expect(pk_dslash(ds_ctx, &p, "warp-drive", us, ps, cs, NULL), PK_ENOVARIANT, "warp-drive",
              "one-shot: unknown variant 'warp-drive'");
    plan = (pk_dslash_plan *)&us;
    ds_expect(pk_dslash_plan_create(&plan, ds_ctx, &p, "warp-drive", NULL), PK_ENOVARIANT,
              "warp-drive", "plan_create: unknown variant 'warp-drive'");
    ok(plan == NULL, "plan_create leaves *plan NULL on failure");
    ds_expect(pk_dslash(ds_ctx, &p, "omp-vnode", us, ps, cs, NULL), PK_ENOVARIANT, "serial",
              "one-shot: variant 'omp-vnode' of another backend on a context forcing serial");
    ds_expect(pk_dslash_reference(&p, us, ps, ps), PK_EINVAL, "overlap", "reference: chi == psi");
    ds_expect(pk_dslash_reference(&p, us, ps, us + 10), PK_EINVAL, "overlap",
              "reference: chi inside u");
    ok(pk_dslash_variants(PK_BACKEND_AUTO) && pk_dslash_variants(PK_BACKEND_COUNT) &&
           !pk_dslash_variants(PK_BACKEND_COUNT)[0],
       "pk_dslash_variants of auto / an out-of-range id: not NULL, '' for the bad id");
}

/* ---- ISA settings and threads ----------------------------------------------------------- */
static const int ds_env_sizes[][4] = {{3, 5, 2, 7}, {8, 3, 3, 8}, {4, 1, 3, 3},
                                      {2, 2, 2, 2}, {3, 3, 3, 3}, {16, 3, 5, 1}};

/* Lanes the generic (2-wide) kernel must choose: 2 along the first of t, z, y, x that is
 * even, else 1. */
static void ds_expect_generic_lanes(const int *L, char *buf, size_t len)
{
    static const char dir[4] = {'x', 'y', 'z', 't'};
    for (int mu = 3; mu >= 0; --mu)
        if (L[mu] % 2 == 0) {
            snprintf(buf, len, "2 lanes along %c", dir[mu]);
            return;
        }
    snprintf(buf, len, "1 lane along t");
}

static void ds_check_env(const char *variant)
{
    static const char *const isa[] = {"avx512", "avx2", "generic"};
    for (int k = 0; k <= 3; ++k) {
        char label[64];
        pk_context_set_param(ds_ctx, "dslash.isa", k < 3 ? isa[k] : NULL);
        snprintf(label, sizeof label, " under dslash.isa=%s", k < 3 ? isa[k] : "(default)");
        for (size_t i = 0; i < sizeof ds_env_sizes / sizeof ds_env_sizes[0]; ++i)
            for (int r = 0; r <= 1; ++r) ds_check_size(ds_ctx, variant, ds_env_sizes[i], r, label);
        if (k == 2) { /* generic: the lane rule is known whatever the CPU */
            for (size_t i = 0; i < sizeof ds_env_sizes / sizeof ds_env_sizes[0]; ++i) {
                const int *L = ds_env_sizes[i];
                pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, 0);
                pk_dslash_plan *plan = NULL;
                pk_run_info info;
                char want[64];
                ds_expect_generic_lanes(L, want, sizeof want);
                int s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, &info);
                ok(s == PK_OK && strstr(info.reason, want),
                   "%s generic on %dx%dx%dx%d chooses '%s' (reason: %s)", variant, L[0], L[1],
                   L[2], L[3], want, s ? pk_last_error() : info.reason);
                pk_dslash_plan_destroy(plan);
            }
        }
    }
    /* a bad value in the (older) variable: read by a new context, reported at plan creation */
    const char *env = getenv("PORTKERN_DS_ISA");
    char saved[64] = "";
    if (env) snprintf(saved, sizeof saved, "%s", env);
    setenv("PORTKERN_DS_ISA", "sse9", 1);
    pk_context *ctx = NULL;
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = ds_backend;
    pk_status cs = pk_context_create(&ctx, &o);
    if (env)
        setenv("PORTKERN_DS_ISA", saved, 1);
    else
        unsetenv("PORTKERN_DS_ISA");
    pk_dslash_params p = ds_params(2, 2, 2, 2, 0.125, 0);
    pk_dslash_plan *plan = NULL;
    ds_expect(cs != PK_OK ? cs : pk_dslash_plan_create(&plan, ctx, &p, variant, NULL), PK_EINVAL,
              "PORTKERN_DS_ISA", "PORTKERN_DS_ISA=sse9");
    pk_dslash_plan_destroy(plan);
    pk_context_destroy(ctx);
}

static void ds_check_threads(const char *variant)
{
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = ds_backend;
    opt.flags = PK_OPT_IGNORE_ENV;
    opt.threads = 3;
    pk_context *ctx;
    if (pk_context_create(&ctx, &opt) != PK_OK) {
        ok(0, "context with 3 threads: %s", pk_last_error());
        return;
    }
    for (size_t i = 0; i < sizeof ds_env_sizes / sizeof ds_env_sizes[0]; ++i)
        ds_check_size(ctx, variant, ds_env_sizes[i], i % 2, " on 3 threads");
    pk_context_destroy(ctx);
}

/* The host layout conversions (recon12's two rows; omp-vnode's lanes) on 1, 2 and 3 threads,
 * threaded at every size (PORTKERN_TEST_PARALLEL_BYTES=0), give the one-thread bits. */
static void ds_check_threaded_layout(const char *variant)
{
    static const int dims[][4] = {{3, 5, 2, 7}, {4, 1, 3, 3}, {8, 3, 3, 8}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; ++i)
        for (int r = 0; r <= 1; ++r) {
            const int *L = dims[i];
            pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, r);
            const size_t ns = 24 * ds_volume(&p);
            double *u, *psi, *chi[4];
            ds_fields(&p, 7, &u, &psi);
            int same = 1;
            for (int t = 0; t <= 3; ++t) { /* t 0: one thread, under the default 4 MiB */
                pk_context_options opt;
                pk_context *ctx = NULL;
                pk_context_options_init(&opt);
                opt.backend = ds_backend;
                opt.flags = PK_OPT_IGNORE_ENV;
                opt.threads = t ? t : 1;
                chi[t] = ds_alloc(ns);
                if (t) setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
                same &= pk_context_create(&ctx, &opt) == PK_OK &&
                        pk_dslash(ctx, &p, variant, u, psi, chi[t], NULL) == PK_OK &&
                        memcmp(chi[0], chi[t], ns * sizeof(double)) == 0;
                pk_context_destroy(ctx);
            }
            unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
            ok(same, "%s%s %dx%dx%dx%d: the layout conversions on 1, 2, 3 threads give the "
               "one-thread bits", variant, r ? " recon12" : "", L[0], L[1], L[2], L[3]);
            for (int t = 0; t <= 3; ++t) free(chi[t]);
            free(u);
            free(psi);
        }
}

/* ---- the suite -------------------------------------------------------------------------- */
/* CUDA: plan_execute on u (full links), psi and chi in device memory (cuda_devmem.h),
 * reordered on the device (lib/dslash.c -> the backend's execute_canonical), full links and
 * recon12: the bits of plan_execute on the host arrays, transfer_s 0 and the reason's
 * "device pointers, none", u and psi unchanged, chi over psi the same bits; a device psi
 * with host u and chi, and plan_upload of device arrays: PK_EINVAL. */
static void ds_check_device_arrays(const char *variant)
{
    const char *why = devmem_open();
    if (why) {
        tap_skip(why, "dslash %s: plan_execute on device arrays", variant);
        return;
    }
    for (int r = 0; r <= 1; ++r) {
        pk_dslash_params p = ds_params(4, 3, 5, 6, 0.13, r);
        const size_t vol = 4 * 3 * 5 * 6, ns = 24 * vol, nu = 4 * 18 * vol;
        const size_t sb = ns * sizeof(double), ub = nu * sizeof(double);
        double *u, *psi, *host = ds_alloc(ns), *back = ds_alloc(nu);
        ds_fields(&p, 91 + (unsigned)r, &u, &psi);
        char err[600] = "";
        pk_dslash_plan *plan = NULL;
        int s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, NULL);
        if (s != PK_OK) snprintf(err, sizeof err, "plan_create: %s", pk_last_error());
        if (s == PK_OK && (s = pk_dslash_plan_execute(plan, u, psi, host, NULL)) != PK_OK)
            snprintf(err, sizeof err, "host arrays: %s", pk_last_error());
        double *du = devmem_alloc(u, ub), *dp = devmem_alloc(psi, sb);
        double *dc = devmem_alloc(NULL, sb), *dio = devmem_alloc(psi, sb);
        if (s == PK_OK && !(du && dp && dc && dio)) {
            s = PK_EDEVMEM;
            snprintf(err, sizeof err, "cudaMalloc of the test arrays failed");
        }
        for (int io = 0; io < 2 && s == PK_OK; ++io) { /* chi apart, chi over psi */
            pk_run_info info;
            double *chi = io ? dio : dc;
            memset(&info, 0, sizeof info);
            s = pk_dslash_plan_execute(plan, du, io ? dio : dp, chi, &info);
            if (s != PK_OK) {
                snprintf(err, sizeof err, "%s: %s", io ? "chi over psi" : "chi apart",
                         pk_last_error());
            } else if (devmem_read(back, chi, sb) || memcmp(back, host, sb)) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "%s: chi differs from the host arrays' bits",
                         io ? "chi over psi" : "chi apart");
            } else if (info.transfer_s != 0 || !strstr(info.reason, "device pointers, none")) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "transfer_s %g, reason \"%s\"", info.transfer_s,
                         info.reason);
            }
        }
        if (s == PK_OK && (devmem_read(back, du, ub) || memcmp(back, u, ub) ||
                           devmem_read(back, dp, sb) || memcmp(back, psi, sb))) {
            s = PK_EINTERNAL;
            snprintf(err, sizeof err, "u or psi changed");
        }
        if (s == PK_OK) {
            const int m1 = pk_dslash_plan_execute(plan, u, dp, back, NULL);
            const int m2 = pk_dslash_plan_upload(plan, du, dp);
            if (m1 != PK_EINVAL || m2 != PK_EINVAL) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "device psi with host u and chi: %s; plan_upload of "
                         "device arrays: %s (%s)", pk_status_name(m1), pk_status_name(m2),
                         pk_last_error());
            }
        }
        ok(s == PK_OK, "%s%s 4x3x5x6 plan_execute on device arrays (reordered on the device): "
           "the host arrays' bits, transfer_s 0, \"device pointers, none\", inputs unchanged, "
           "chi over psi the same bits; a mix and plan_upload of them PK_EINVAL%s%s", variant,
           r ? " recon12" : "", err[0] ? ": " : "", err);
        pk_dslash_plan_destroy(plan);
        devmem_free(du);
        devmem_free(dp);
        devmem_free(dc);
        devmem_free(dio);
        free(u);
        free(psi);
        free(host);
        free(back);
    }
}

static pk_context *ds_context(pk_backend_id backend)
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

/* The lanes an omp-vnode call names in its reason ("8 lanes along t"), "" for none. */
static void ds_lanes_note(const char *reason, char *out, size_t len)
{
    const char *a = strstr(reason, "omp-vnode: ");
    const char *b = a ? strstr(a, " (") : NULL;
    size_t n = a && b ? (size_t)(b - a) : 0;
    if (n >= len) n = len - 1;
    memcpy(out, a ? a : "", n);
    out[n] = 0;
}

/* 6. t-ranges, z-ranges and boxes (see the top). */
static void ds_check_range(const char *variant, int recon12)
{
    static const int sizes[][4] = {{2, 3, 8, 8}, {3, 5, 2, 7}, {4, 4, 4, 6}, {2, 2, 2, 8}};
    const int host = ds_backend == PK_BACKEND_SERIAL || ds_backend == PK_BACKEND_OPENMP;
    const int vnode = strcmp(variant, "omp-vnode") == 0;
    const char *r12 = recon12 ? " recon12" : "";
    if (!host) { /* plan_execute_psi: psi alone up, the links staying; ranges refused */
        pk_dslash_params p = ds_params(3, 2, 4, 5, 0.125, recon12);
        const size_t ns = 24 * ds_volume(&p);
        double *u, *psi, *u2, *psi2, *want = ds_alloc(ns), *chi = ds_alloc(ns);
        ds_fields(&p, 71, &u, &psi);
        ds_fields(&p, 72, &u2, &psi2);
        pk_dslash_plan *whole = NULL;
        int s = pk_dslash_plan_create(&whole, ds_ctx, &p, variant, NULL);
        const int early = s == PK_OK ? pk_dslash_plan_execute_psi(whole, psi2, chi, NULL) : 0;
        if (s == PK_OK) s = pk_dslash_plan_execute(whole, u, psi2, want, NULL);
        if (s == PK_OK) s = pk_dslash_plan_upload(whole, u, psi);
        int same = 1;
        for (int k = 0; k < 2 && s == PK_OK; ++k) { /* twice: the links stay */
            for (size_t i = 0; i < ns; ++i) chi[i] = DS_SENTINEL;
            s = pk_dslash_plan_execute_psi(whole, psi2, chi, NULL);
            same &= s == PK_OK && memcmp(chi, want, ns * sizeof(double)) == 0;
        }
        ok(s == PK_OK && early == PK_ESTATE && same,
           "%s%s: plan_execute_psi (twice) on the uploaded links = plan_execute, bitwise; "
           "before any upload PK_ESTATE (%s)", variant, r12, s ? pk_last_error() : "ok");
        pk_dslash_plan_destroy(whole);
        free(u);
        free(psi);
        free(u2);
        free(psi2);
        free(want);
        free(chi);
        p.t_begin = 1;
        p.t_end = 3;
        pk_dslash_plan *plan = NULL;
        s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, NULL);
        ok(s == PK_EUNSUPPORTED && strstr(pk_last_error(), "serial and openmp") && !plan,
           "%s%s: a t-range is PK_EUNSUPPORTED at plan_create (%s)", variant, r12,
           pk_last_error());
        pk_dslash_plan_destroy(plan);
        p.t_begin = p.t_end = 0;
        p.z_begin = 0;
        p.z_end = 1;
        plan = NULL;
        s = pk_dslash_plan_create(&plan, ds_ctx, &p, variant, NULL);
        ok(s == PK_EUNSUPPORTED && strstr(pk_last_error(), "serial and openmp") && !plan,
           "%s%s: a z-range is PK_EUNSUPPORTED at plan_create (%s)", variant, r12,
           pk_last_error());
        pk_dslash_plan_destroy(plan);
        return;
    }
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const int *L = sizes[k], Z = L[2], T = L[3];
        pk_dslash_params p = ds_params(L[0], L[1], Z, T, 0.125, recon12);
        const size_t V = ds_volume(&p), ns = 24 * V, plane = ns / (size_t)T;
        const size_t zplane = plane / (size_t)Z;
        double *u, *psi, *whole = ds_alloc(ns), *ref = ds_alloc(ns), *chi = ds_alloc(ns + DS_GUARD);
        double *got = ds_alloc(ns), *exp = ds_alloc(ns);
        ds_fields(&p, 41 + (unsigned)k, &u, &psi);
        pk_run_info winfo;
        memset(&winfo, 0, sizeof winfo);
        int s = pk_dslash(ds_ctx, &p, variant, u, psi, whole, &winfo);
        char wlanes[64];
        ds_lanes_note(winfo.reason, wlanes, sizeof wlanes);
        pk_dslash_reference(&p, u, psi, ref);
        /* t_begin, t_end, z_begin, z_end (0, 0: the whole direction): t-ranges, z-ranges and
         * boxes of both */
        const int ranges[][4] = {{0, T, 0, 0},         {0, 1, 0, 0},     {T - 1, T, 0, 0},
                                 {1, T - 1, 0, 0},     {2, 3, 0, 0},     {0, 0, 0, 1},
                                 {0, 0, Z - 1, Z},     {0, 0, 1, Z - 1}, {1, T - 1, 1, Z - 1},
                                 {0, 1, Z - 1, Z},     {2, 3, 0, 1}};
        int bad = s != PK_OK, inexact = 0, boxes = 0;
        double worst = 0;
        char what[480] = "";
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0] && !bad; ++r) {
            const int *R = ranges[r];
            const int tb = R[1] ? R[0] : 0, te = R[1] ? R[1] : T;
            const int zb = R[3] ? R[2] : 0, ze = R[3] ? R[3] : Z;
            if (te <= tb || te > T || ze <= zb || ze > Z) continue;
            ++boxes;
            pk_dslash_params q = p;
            q.t_begin = R[0];
            q.t_end = R[1];
            q.z_begin = R[2];
            q.z_end = R[3];
            /* mode DS_EXECUTE + 1: plan_upload (u and another psi), then plan_execute_psi */
            for (int mode = DS_REF; mode <= DS_EXECUTE + 1 && !bad; ++mode) {
                /* plan_execute(_psi): a chi of t_end planes only, the guard right after it */
                const size_t held = mode >= DS_EXECUTE ? (size_t)te * plane : ns;
                for (size_t i = 0; i < held; ++i) chi[i] = DS_SENTINEL;
                for (size_t i = held; i < held + DS_GUARD; ++i) chi[i] = -DS_SENTINEL;
                pk_run_info info;
                memset(&info, 0, sizeof info);
                if (mode == DS_REF) {
                    s = pk_dslash_reference(&q, u, psi, chi);
                } else if (mode == DS_ONESHOT) {
                    s = pk_dslash(ds_ctx, &q, variant, u, psi, chi, &info);
                } else {
                    pk_dslash_plan *plan = NULL;
                    s = pk_dslash_plan_create(&plan, ds_ctx, &q, variant, NULL);
                    if (s == PK_OK && mode == DS_EXECUTE)
                        s = pk_dslash_plan_execute(plan, u, psi, chi, &info);
                    if (s == PK_OK && mode == DS_PLAN) s = pk_dslash_plan_upload(plan, u, psi);
                    if (s == PK_OK && mode == DS_PLAN) s = pk_dslash_plan_run(plan, &info);
                    if (s == PK_OK && mode == DS_PLAN) s = pk_dslash_plan_download(plan, chi);
                    if (s == PK_OK && mode == DS_EXECUTE + 1) {
                        const int early = pk_dslash_plan_execute_psi(plan, psi, chi, NULL);
                        s = pk_dslash_plan_upload(plan, u, whole); /* another psi */
                        if (s == PK_OK) s = pk_dslash_plan_execute_psi(plan, psi, chi, &info);
                        if (s == PK_OK && early != PK_ESTATE) s = PK_EINTERNAL;
                    }
                    pk_dslash_plan_destroy(plan);
                }
                const double *want = mode == DS_REF ? ref : whole;
                size_t touched = 0, guard = 0, n = 0;
                for (size_t i = 0; i < held; ++i) {
                    const size_t t = i / plane, z = i % plane / zplane;
                    const int in = (int)t >= tb && (int)t < te && (int)z >= zb && (int)z < ze;
                    if (in) {
                        got[n] = chi[i];
                        exp[n++] = want[i];
                    } else if (chi[i] != DS_SENTINEL) {
                        ++touched;
                    }
                }
                for (size_t i = held; i < held + DS_GUARD; ++i) guard += chi[i] != -DS_SENTINEL;
                const int same = memcmp(got, exp, n * sizeof(double)) == 0;
                const double e = ds_relerr(got, exp, n);
                const double flops = 1320.0 * (double)(V / (size_t)T / (size_t)Z) *
                                     (double)(te - tb) * (double)(ze - zb);
                /* omp-vnode on other lanes than its whole call (a ranged direction is never
                 * laned): its kernels of other widths round differently, within the bound */
                char lanes[64];
                ds_lanes_note(info.reason, lanes, sizeof lanes);
                const int other = vnode && mode != DS_REF && strcmp(lanes, wlanes) != 0;
                bad = s != PK_OK || touched || guard || (!same && !(other && e <= 1e-13)) ||
                      (mode != DS_REF && info.flops != flops);
                inexact += !same;
                worst = e > worst ? e : worst;
                if (bad)
                    snprintf(what, sizeof what, "; t [%d, %d) z [%d, %d) mode %d: status %d (%s), "
                             "%zu outside written, %zu guard, bitwise %d (rel %.2g; lanes '%s', "
                             "whole call's '%s'), flops %g / %g", tb, te, zb, ze, mode, s,
                             s ? pk_last_error() : "", touched, guard, same, e, lanes, wlanes,
                             info.flops, flops);
            }
        }
        ok(!bad, "%s%s %dx%dx%dx%d: %d t-ranges, z-ranges and boxes (one-shot, plan, "
           "plan_execute(_psi) on t_end planes) are the whole call's sites bitwise (%d not: "
           "omp-vnode on other lanes, rel <= %.2g), the other sites untouched%s", variant, r12,
           L[0], L[1], Z, T, boxes, inexact, worst, what);
        free(u);
        free(psi);
        free(whole);
        free(ref);
        free(chi);
        free(got);
        free(exp);
    }
    /* refused ranges, on every entry point */
    static const int badr[][2] = {{2, 2}, {3, 1}, {-1, 2}, {0, 5}, {1, 0}, {4, 5}};
    int refused = 1;
    static double u[4 * 32 * 18], psi[32 * 24], chi[32 * 24];
    for (int zdir = 0; zdir < 2; ++zdir) /* t-ranges on 2x2x2x4, z-ranges on 2x2x4x2 */
        for (size_t k = 0; k < sizeof badr / sizeof badr[0]; ++k) {
            pk_dslash_params p = ds_params(2, 2, zdir ? 4 : 2, zdir ? 2 : 4, 0.125, recon12);
            *(zdir ? &p.z_begin : &p.t_begin) = badr[k][0];
            *(zdir ? &p.z_end : &p.t_end) = badr[k][1];
            pk_dslash_plan *plan = NULL;
            refused &= pk_dslash(ds_ctx, &p, variant, u, psi, chi, NULL) == PK_EINVAL &&
                       strstr(pk_last_error(), zdir ? "z_begin" : "t_begin") != NULL;
            refused &= pk_dslash_plan_create(&plan, ds_ctx, &p, variant, NULL) == PK_EINVAL &&
                       !plan;
            refused &= pk_dslash_reference(&p, u, psi, chi) == PK_EINVAL;
        }
    ok(refused, "%s%s: empty, reversed and out-of-lattice t- and z-ranges PK_EINVAL (one-shot, "
       "plan_create, reference)", variant, r12);
}

/* A one-shot call that names no variant on OpenMP: omp where the arrays exceed the last-level
 * cache (omp-vnode would convert them every call; lib/dslash.c), the backend's first
 * otherwise; plans always the first.  The cache size is the test hook's, in fresh contexts
 * (a one-shot plan is kept by shape, whatever chose it). */
static void ds_check_oneshot_cache(const char *first)
{
    pk_dslash_params p = ds_params(4, 4, 4, 4, 0.125, 0); /* 256 sites: 240 KiB of arrays */
    const size_t ns = 24 * ds_volume(&p);
    double *u, *psi, *ref = ds_alloc(ns), *chi = ds_alloc(ns);
    ds_fields(&p, 37, &u, &psi);
    pk_dslash_reference(&p, u, psi, ref);
    static const char *const llc[2] = {"65536", "1073741824"};
    for (int big = 0; big < 2; ++big) {
        setenv("PORTKERN_TEST_LLC_BYTES", llc[big], 1);
        pk_context *ctx = ds_context(PK_BACKEND_OPENMP);
        pk_run_info info, pinfo;
        memset(&info, 0, sizeof info);
        memset(&pinfo, 0, sizeof pinfo);
        const int s = pk_dslash(ctx, &p, NULL, u, psi, chi, &info);
        const double e = s == PK_OK ? ds_relerr(chi, ref, ns) : INFINITY;
        pk_dslash_plan *plan = NULL;
        const int ps = pk_dslash_plan_create(&plan, ctx, &p, NULL, &pinfo);
        pk_dslash_plan_destroy(plan);
        const char *want = big ? first : "omp";
        ok(s == PK_OK && strcmp(info.variant, want) == 0 && e <= DS_ISSUE_TOL &&
               (big || strstr(info.reason, "last-level cache")) && ps == PK_OK &&
               strcmp(pinfo.variant, first) == 0,
           "one-shot, last-level cache %s bytes: ran %s (want %s; rel err %.2e), a plan %s "
           "(want %s)%s%s", llc[big], info.variant, want, e, pinfo.variant, first,
           s ? "; " : "", s ? pk_last_error() : "");
        pk_context_destroy(ctx);
    }
    unsetenv("PORTKERN_TEST_LLC_BYTES");
    free(u);
    free(psi);
    free(ref);
    free(chi);
}

static int ds_run_suite(pk_backend_id backend)
{
    ds_ctx = ds_context(backend);
    ds_backend = backend;
    ds_u = DBL_EPSILON / 2;
    const char *why;
    char msg[600];
    if (!pk_backend_available(ds_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(ds_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_dslash_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no dslash variant", pk_backend_name(backend));
        pk_context_destroy(ds_ctx);
        tap_skip_all(msg);
    }
    if (backend != PK_BACKEND_SERIAL && backend != PK_BACKEND_OPENMP) {
        pk_dslash_params p1 = ds_params(1, 1, 1, 1, 0.125, 0);
        static double u[72], psi[24], chi[24];
        if (pk_dslash(ds_ctx, &p1, NULL, u, psi, chi, NULL) == PK_EUNSUPPORTED) {
            snprintf(msg, sizeof msg, "%s: %s", pk_backend_name(backend), pk_last_error());
            pk_context_destroy(ds_ctx);
            tap_skip_all(msg);
        }
    }
    tap_diag("E_M = gamma_24 (1/(2 kappa) + 39.2) = %.3e per unit ||psi|| at kappa 0.125; "
             "the issue's bar %.0e", ds_EM(0.125), DS_ISSUE_TOL);

    if (backend == PK_BACKEND_SERIAL) {
        ds_check_properties("reference");
        ds_check_errors();
    }
    char list[256];
    snprintf(list, sizeof list, "%s", variants);
    for (char *v = strtok(list, ","); v; v = strtok(NULL, ",")) {
        ds_check_reference(v);
        ds_check_properties(v);
        ds_check_plan(v);
        ds_check_execute(v, 0);
        ds_check_execute(v, 1);
        ds_check_range(v, 0);
        ds_check_range(v, 1);
        if (backend == PK_BACKEND_CUDA) ds_check_device_arrays(v);
        if (strcmp(v, "omp-vnode") == 0) ds_check_env(v);
        if (backend == PK_BACKEND_OPENMP) ds_check_threads(v);
        if (backend == PK_BACKEND_SERIAL || backend == PK_BACKEND_OPENMP)
            ds_check_threaded_layout(v);
    }

    /* No variant named: the backend's first. */
    char first[256];
    snprintf(first, sizeof first, "%s", variants);
    first[strcspn(first, ",")] = '\0';
    pk_dslash_params p = ds_params(3, 5, 2, 7, 0.125, 0);
    const size_t ns = 24 * ds_volume(&p);
    double *u, *psi, *ref = ds_alloc(ns), *chi = ds_alloc(ns);
    ds_fields(&p, 31, &u, &psi);
    pk_dslash_reference(&p, u, psi, ref);
    pk_run_info info;
    memset(&info, 0, sizeof info);
    int s = pk_dslash(ds_ctx, &p, NULL, u, psi, chi, &info);
    const double e = s == PK_OK ? ds_relerr(chi, ref, ns) : INFINITY;
    ok(s == PK_OK && ds_info_ok(&info, first) && e <= DS_ISSUE_TOL,
       "variant NULL runs the backend's first variant %s (ran %s; rel err %.2e%s%s)", first,
       info.variant, e, s ? "; " : "", s ? pk_last_error() : "");
    free(u);
    free(psi);
    free(ref);
    free(chi);
    if (backend == PK_BACKEND_OPENMP) ds_check_oneshot_cache(first);
    pk_context_destroy(ds_ctx);
    return tap_done();
}
#endif
