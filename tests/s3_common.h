/* s3_common.h - the su3 test every backend runs (test_s3_<backend>.c picks one).
 *
 * Every variant of the suite's backend (pk_su3_variants) x every layout (aos, short,
 * padded, vfo, hvfo with nw = 8 (default), 1, 3, 4, 16, recon12):
 * 1. Against pk_su3_reference, element-wise within the bound derived below, through the
 *    one-shot call, through a plan (create, upload, run, download) and through
 *    plan_execute (the three give the same bits: on serial and OpenMP the first and the last
 *    convert block by block, lib/su3.c's fused call, or for omp-simd vfo / hvfo in
 *    registers), for
 *    nv = 1, 2, 3, 7, 8, 9, 13, 31, 33, 1001, 4099
 *    (odd, and neither multiples of the vector widths nor of nw: hvfo pads its last block,
 *    vfo its rows).  chi is written into a NaN-filled buffer with a guard zone after it (an
 *    unwritten or overrun element fails); u and psi must come back unchanged; the run info
 *    names the backend and variant and counts 264 flops and 528 bytes per site.
 * 2. The property of docs/KERNELS.md: for SU(3) u, |chi(s,.,k)| = |psi(s,.,k)| per site and
 *    spin (bound below), against the generated links.
 * 3. Plans: u and psi uploaded once and run twice give the same bits; a second upload gives
 *    the new result; run before any upload, download before any run (also right after a new
 *    upload) are PK_ESTATE; plan_run's layout_s is 0; a NULL variant runs the backend's
 *    first one.  plan_execute on 64-byte aligned arrays: two data sets into two chi arrays
 *    each equal the reference (the first chi untouched by the second call), no copy in or
 *    out on serial and OpenMP (transfer_s 0), also one double off 64 bytes (the AoS-spinor
 *    kernels take any 8-byte alignment, the vfo / hvfo ones run on the plan's staged
 *    arrays); chi == psi (in place) right too; afterwards plan_run and plan_download without an upload are PK_ESTATE and
 *    upload, run, download work again; NULL arguments PK_ENULL.
 * 4. Serial suite only: the generators (pk_lqcd_random_su3: unitary and det 1 within 16 u,
 *    row 2 = conj(row0 x row1) within 4 u, the same seed gives the same bits, other seeds
 *    other matrices; pk_lqcd_random_complex: reproducible, seeds differ, mean 0 and
 *    variance 1 within 5 standard errors); the layout functions (names, sizes, the
 *    conversion's round trip and zero padding; threaded, for nv = 1, 7, 1001, 100003,
 *    the one-thread bits on 1, 2 and 3 threads); bad input (NULL, nv = 0, sizes whose bytes
 *    overflow, unknown layouts, nw out of range, unknown variants, the reference in place).
 * 5. omp-simd under su3.isa = avx512, avx2, generic and su3.stream = 0, 1
 *    (every hand-vectorised kernel and both store kinds run here); OpenMP on 3 and 7
 *    threads (more threads than work on the small sizes); the streamed chi of the AoS-spinor
 *    layouts 0..7 doubles past a line: the same bits, nothing outside chi written.
 * 6. CUDA suite only: plan_execute on cudaMalloc'd AoS arrays (cuda_devmem.h), every layout
 *    (s3_check_device_arrays; converted on the device but aos).  The emulated test
 *    (test_s3_cuda_emu.c) checks the conversions of su3.cu themselves.
 * A suite SKIPs as a whole when its backend is unavailable, has no su3 variant, or its
 * device lacks double precision (PK_EUNSUPPORTED).
 *
 * Error analysis.  u = 2^-53; gamma_n = n u / (1 - n u).  Each output re/im part is a sum of
 * 6 real products (3 complex products): re = sum_c' ur pr - ui pi.  In any order, with or
 * without FMA, its error is <= gamma_6 sum_c' (|ur pr| + |ui pi|) <= gamma_6 sum_c' |u_cc'|
 * sqrt(2) |p_c'| <= sqrt(2) gamma_6 |row_c| |psi(s,.,k)| (Cauchy-Schwarz), and the rows of
 * the generated links have norm 1 within 16 u (tested in 4).  The reference and the result
 * under test each carry that error:
 *     E(s, k) = (2 sqrt(2) gamma_6 + R) |psi(s,.,k)|_2      per element, = 17 u + R
 * R: the rebuilt link elements.  The generator computes row 2 as conj(row0 x row1), so the
 * stored u2k equal the exact cofactors within 4 u (tested in 4, ~2 u measured); a kernel
 * recomputes a cofactor (two complex products and a difference, 4 real terms each of
 * magnitude <= 1 in total, |u00 u11| + |u01 u10| <= 1 by Cauchy-Schwarz) with an error
 * <= sqrt(2) gamma_4 < 6 u; so |rebuilt - stored| <= 10 u per element:
 *   short:   R = 10 u (one element, u22, multiplies one psi component);
 *   recon12: R = 10 sqrt(3) u (row 2's three elements: sum_c' |d_c'| |p_c'| <= 10 u sqrt(3)
 *            |psi|);
 *   aos, padded, vfo, hvfo: R = 0 (the same 9 elements as the reference).
 * Norm property: |chi - u psi| <= sqrt(6) (sqrt(2) gamma_6 + R) |psi| (6 real parts, each
 * within half of E), | |u psi| - |psi| | <= |u^H u - I|_2 |psi| <= 3 * 16 u |psi| (entries
 * <= 16 u), and each computed 2-norm adds <= 4 u: tolerance (sqrt(6) (sqrt(2) gamma_6 + R)
 * + 56 u) |psi(s,.,k)|.
 */
#ifndef PK_TEST_S3_COMMON_H
#define PK_TEST_S3_COMMON_H
#include "cuda_devmem.h"
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S3_GUARD 48 /* doubles after chi that must stay untouched */
#define S3_SENTINEL (-12345.6789)

static pk_context *s3_ctx;
static pk_backend_id s3_backend;
static double s3_u;
static char s3_err[512];

static const size_t s3_sizes[] = {1, 2, 3, 7, 8, 9, 13, 31, 33, 1001, 4099};
#define S3_NSIZES (sizeof s3_sizes / sizeof s3_sizes[0])

/* The layouts a variant is tested on: (layout, nw). */
static const int s3_cases[][2] = {{PK_SU3_AOS, 0},  {PK_SU3_SHORT, 0}, {PK_SU3_PADDED, 0},
                                  {PK_SU3_VFO, 0},  {PK_SU3_HVFO, 0},  {PK_SU3_HVFO, 1},
                                  {PK_SU3_HVFO, 3}, {PK_SU3_HVFO, 4},  {PK_SU3_HVFO, 16},
                                  {PK_SU3_RECON12, 0}};
#define S3_NCASES (sizeof s3_cases / sizeof s3_cases[0])

static double *s3_alloc(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof(double));
    if (!p) {
        printf("Bail out! out of memory (%zu doubles)\n", n);
        exit(1);
    }
    return p;
}

/* R of the header, per layout. */
static double s3_rebuild_err(int layout)
{
    return layout == PK_SU3_SHORT ? 10 * s3_u : layout == PK_SU3_RECON12 ? 10 * sqrt(3.0) * s3_u : 0;
}

static double s3_gamma(int n) { return n * s3_u / (1 - n * s3_u); }

/* |psi(s,.,k)|_2 of AoS psi. */
static double s3_spin_norm(const double *psi, size_t s, int k)
{
    double n2 = 0;
    for (int c = 0; c < 3; ++c) {
        const double *z = psi + 24 * s + 2 * (4 * c + k);
        n2 += z[0] * z[0] + z[1] * z[1];
    }
    return sqrt(n2);
}

/* Elements of chi beyond E(s, k); *worst gets max |err| / (|psi| u) (in units of u). */
static size_t s3_compare(const double *chi, const double *ref, const double *psi, size_t nv,
                         int layout, double *worst, size_t *first)
{
    const double coef = 2 * sqrt(2.0) * s3_gamma(6) + s3_rebuild_err(layout);
    size_t bad = 0;
    *worst = 0;
    *first = (size_t)-1;
    for (size_t s = 0; s < nv; ++s)
        for (int c = 0; c < 3; ++c)
            for (int k = 0; k < 4; ++k) {
                const double np = s3_spin_norm(psi, s, k);
                for (int r = 0; r < 2; ++r) {
                    const size_t i = 24 * s + 2 * (4 * c + k) + (size_t)r;
                    double d = fabs(chi[i] - ref[i]);
                    if (d != d) d = INFINITY;
                    if (!(d <= coef * np) && bad++ == 0) *first = i;
                    if (np > 0 && d / (np * s3_u) > *worst) *worst = d / (np * s3_u);
                }
            }
    return bad;
}

typedef struct s3_data {
    size_t nv;
    double *u, *psi, *ref;
} s3_data;

static s3_data s3_make(size_t nv, uint64_t seed)
{
    s3_data d = {nv, s3_alloc(18 * nv), s3_alloc(24 * nv), s3_alloc(24 * nv)};
    if (pk_lqcd_random_su3(seed, nv, d.u) != PK_OK ||
        pk_lqcd_random_complex(seed + 1000, 12 * nv, d.psi) != PK_OK ||
        pk_su3_reference(nv, d.u, d.psi, d.ref) != PK_OK) {
        printf("Bail out! data for nv = %zu: %s\n", nv, pk_last_error());
        exit(1);
    }
    return d;
}

static void s3_free(s3_data *d)
{
    free(d->u);
    free(d->psi);
    free(d->ref);
}

/* One call (plan_mode 0: one-shot; 1: a plan: create, upload, run, download; 2: a plan's
 * plan_execute) into chi[24 nv]; checks the guard zone, unchanged inputs and the run info.
 * Returns the status (PK_EINTERNAL for an overrun, changed input or wrong info), detail in
 * s3_err. */
static int s3_exec(pk_context *ctx, const char *variant, int plan_mode, const pk_su3_params *p,
                   const s3_data *d, double *chi, pk_run_info *info)
{
    const size_t nv = d->nv;
    double *buf = s3_alloc(24 * nv + S3_GUARD), *uc = s3_alloc(18 * nv), *pc = s3_alloc(24 * nv);
    memcpy(uc, d->u, 18 * nv * sizeof(double));
    memcpy(pc, d->psi, 24 * nv * sizeof(double));
    for (size_t i = 0; i < 24 * nv; ++i) buf[i] = NAN;
    for (size_t i = 24 * nv; i < 24 * nv + S3_GUARD; ++i) buf[i] = S3_SENTINEL;
    memset(info, 0, sizeof *info);
    s3_err[0] = '\0';
    int s;
    if (!plan_mode) {
        s = pk_su3(ctx, p, variant, d->u, d->psi, buf, info);
    } else {
        pk_su3_plan *plan = NULL;
        s = pk_su3_plan_create(&plan, ctx, p, variant, NULL);
        if (plan_mode == 2) {
            if (s == PK_OK) s = pk_su3_plan_execute(plan, d->u, d->psi, buf, info);
        } else {
            if (s == PK_OK) s = pk_su3_plan_upload(plan, d->u, d->psi);
            if (s == PK_OK) s = pk_su3_plan_run(plan, info);
            if (s == PK_OK) s = pk_su3_plan_download(plan, buf);
        }
        if (s != PK_OK) snprintf(s3_err, sizeof s3_err, "%s", pk_last_error());
        pk_su3_plan_destroy(plan);
    }
    if (s != PK_OK && !s3_err[0]) snprintf(s3_err, sizeof s3_err, "%s", pk_last_error());
    if (s == PK_OK) {
        size_t over = 0;
        for (size_t i = 24 * nv; i < 24 * nv + S3_GUARD; ++i) over += buf[i] != S3_SENTINEL;
        if (over) {
            s = PK_EINTERNAL;
            snprintf(s3_err, sizeof s3_err, "%zu of the %d doubles after chi were overwritten",
                     over, S3_GUARD);
        } else if (memcmp(uc, d->u, 18 * nv * sizeof(double)) ||
                   memcmp(pc, d->psi, 24 * nv * sizeof(double))) {
            s = PK_EINTERNAL;
            snprintf(s3_err, sizeof s3_err, "u or psi was modified");
        } else if (info->backend != s3_backend || (variant && strcmp(info->variant, variant)) ||
                   info->flops != 264.0 * (double)nv || info->bytes != 528.0 * (double)nv ||
                   !(info->kernel_s >= 0) || !(info->layout_s >= 0) ||
                   (plan_mode == 1 && info->layout_s != 0)) {
            s = PK_EINTERNAL;
            snprintf(s3_err, sizeof s3_err,
                     "run info: backend %s variant %s flops %.0f bytes %.0f kernel_s %g "
                     "layout_s %g",
                     pk_backend_name(info->backend), info->variant, info->flops, info->bytes,
                     info->kernel_s, info->layout_s);
        }
    }
    memcpy(chi, buf, 24 * nv * sizeof(double));
    free(buf);
    free(uc);
    free(pc);
    return s;
}

static const char *s3_case_name(int layout, int nw, char *buf, size_t len)
{
    if (layout == PK_SU3_HVFO)
        snprintf(buf, len, "hvfo nw=%d%s", nw ? nw : PK_SU3_NW_DEFAULT, nw ? "" : " (default)");
    else
        snprintf(buf, len, "%s", pk_su3_layout_name(layout));
    return buf;
}

/* ---- 1. and 2.: every size of one (variant, layout) on ctx, one TAP line each ---------- */
static void s3_check_layout(pk_context *ctx, const char *variant, int layout, int nw,
                            const char *label)
{
    double worst = 0, nworst = 0;
    char why[1024] = "", name[48];
    int good = 1;
    const double rb = s3_rebuild_err(layout);
    const double ntol = sqrt(6.0) * (sqrt(2.0) * s3_gamma(6) + rb) + 56 * s3_u;
    for (size_t i = 0; i < S3_NSIZES; ++i) {
        const size_t nv = s3_sizes[i];
        s3_data d = s3_make(nv, 11 + nv);
        pk_su3_params p = {nv, layout, nw};
        double *chi = s3_alloc(24 * nv), *chi0 = s3_alloc(24 * nv);
        for (int m = 0; m < 3; ++m) {
            pk_run_info info;
            const int s = s3_exec(ctx, variant, m, &p, &d, chi, &info);
            double w = 0;
            size_t first = 0, bad = 0;
            if (s == PK_OK) bad = s3_compare(chi, d.ref, d.psi, nv, layout, &w, &first);
            /* the same per-site arithmetic on every path (host backends: the one-shot call
             * and plan_execute convert block by block, the plan converts whole arrays) */
            if (s == PK_OK && m == 0) memcpy(chi0, chi, 24 * nv * sizeof(double));
            if (s == PK_OK && m > 0 && memcmp(chi0, chi, 24 * nv * sizeof(double)) != 0) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, "; nv %zu %s: other bits than the one-shot "
                         "call's", nv, m == 2 ? "plan_execute" : "plan");
                good = 0;
            }
            if (w > worst) worst = w;
            /* the property, on the one-shot result */
            size_t nbad = 0;
            if (s == PK_OK && m == 0)
                for (size_t st = 0; st < nv; ++st)
                    for (int k = 0; k < 4; ++k) {
                        const double np = s3_spin_norm(d.psi, st, k);
                        const double nc = s3_spin_norm(chi, st, k);
                        const double dn = fabs(nc - np);
                        if (!(dn <= ntol * np)) ++nbad;
                        if (np > 0 && dn / (np * s3_u) > nworst) nworst = dn / (np * s3_u);
                    }
            if (s != PK_OK || bad || nbad) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, "; nv %zu %s: %s%s%s, %zu over the bound%s%s",
                         nv, m == 2 ? "plan_execute" : m ? "plan" : "one-shot",
                         pk_status_name(s), s ? " " : "",
                         s ? s3_err : "", bad, nbad ? ", norms not preserved: " : "",
                         nbad ? "yes" : "");
                good = 0;
            }
        }
        free(chi);
        free(chi0);
        s3_free(&d);
    }
    ok(good, "%s %s%s: one-shot, plan and plan_execute give the same bits, equal to the reference within (2 sqrt2 "
       "gamma_6 + %.1f u) "
       "|psi(s,.,k)| for nv = 1 .. 4099 (worst %.2f u |psi|), and |chi(s,.,k)| = |psi(s,.,k)| "
       "within %.1f u |psi| (worst %.2f u)%s",
       variant, s3_case_name(layout, nw, name, sizeof name), label, rb / s3_u, worst,
       ntol / s3_u, nworst, why);
}

static void s3_check_all_layouts(pk_context *ctx, const char *variant, const char *label)
{
    for (size_t c = 0; c < S3_NCASES; ++c)
        s3_check_layout(ctx, variant, s3_cases[c][0], s3_cases[c][1], label);
}

/* ---- 3. plans --------------------------------------------------------------------------- */
static void s3_check_plan(const char *variant, int layout)
{
    const size_t nv = 37;
    s3_data a = s3_make(nv, 501), b = s3_make(nv, 502);
    pk_su3_params p = {nv, layout, 0};
    double *x1 = s3_alloc(24 * nv), *x2 = s3_alloc(24 * nv);
    pk_su3_plan *plan = NULL;
    pk_run_info info;
    char name[48];
    int s = pk_su3_plan_create(&plan, s3_ctx, &p, variant, NULL);
    ok(s == PK_OK, "%s %s: plan_create (%s)", variant, s3_case_name(layout, 0, name, sizeof name),
       s ? pk_last_error() : "ok");
    if (s != PK_OK) goto done;
    s = pk_su3_plan_run(plan, NULL);
    const int s2 = pk_su3_plan_download(plan, x1);
    ok(s == PK_ESTATE && s2 == PK_ESTATE,
       "%s %s: run and download before any upload are PK_ESTATE (%s, %s)", variant, name,
       pk_status_name(s), pk_status_name(s2));
    s = pk_su3_plan_upload(plan, a.u, a.psi);
    const int s3 = pk_su3_plan_download(plan, x1);
    ok(s == PK_OK && s3 == PK_ESTATE, "%s %s: download after upload, before run is PK_ESTATE (%s)",
       variant, name, pk_status_name(s3));
    int r = pk_su3_plan_run(plan, &info);
    if (r == PK_OK) r = pk_su3_plan_download(plan, x1);
    if (r == PK_OK) r = pk_su3_plan_run(plan, NULL);
    if (r == PK_OK) r = pk_su3_plan_download(plan, x2);
    double w;
    size_t first;
    ok(r == PK_OK && memcmp(x1, x2, 24 * nv * sizeof(double)) == 0 &&
           s3_compare(x1, a.ref, a.psi, nv, layout, &w, &first) == 0 && info.layout_s == 0,
       "%s %s: one upload, two runs: the same bits, equal to the reference, layout_s 0 (%s)",
       variant, name, r ? pk_last_error() : "ok");
    r = pk_su3_plan_upload(plan, b.u, b.psi);
    if (r == PK_OK) r = pk_su3_plan_run(plan, NULL);
    if (r == PK_OK) r = pk_su3_plan_download(plan, x2);
    ok(r == PK_OK && s3_compare(x2, b.ref, b.psi, nv, layout, &w, &first) == 0,
       "%s %s: a second upload gives the new result (%s)", variant, name,
       r ? pk_last_error() : "ok");
done:
    pk_su3_plan_destroy(plan);
    free(x1);
    free(x2);
    s3_free(&a);
    s3_free(&b);
}

/* plan_execute on the caller's arrays (see the top, 3.): 64-byte aligned u, psi and chi
 * (offset 0), then one double off (offset 1: where malloc and numpy put large arrays). */
static double *s3_aligned(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (n + 8) * sizeof(double))) {
        printf("Bail out! out of memory (%zu doubles)\n", n);
        exit(1);
    }
    return p;
}

static void s3_check_execute(const char *variant, int layout)
{
    const size_t nv = 37;
    const int host = s3_backend == PK_BACKEND_SERIAL || s3_backend == PK_BACKEND_OPENMP;
    s3_data a[2] = {s3_make(nv, 601), s3_make(nv, 602)};
    pk_su3_params p = {nv, layout, 0};
    double *ub = s3_aligned(18 * nv), *pb = s3_aligned(24 * nv);
    double *cb[2] = {s3_aligned(24 * nv), s3_aligned(24 * nv)}, *first = s3_alloc(24 * nv);
    char name[48];
    s3_case_name(layout, 0, name, sizeof name);
    pk_su3_plan *plan = NULL;
    int s = pk_su3_plan_create(&plan, s3_ctx, &p, variant, NULL);
    if (s != PK_OK) {
        ok(0, "%s %s plan_execute: plan_create: %s", variant, name, pk_last_error());
        goto done;
    }
    for (int off = 0; off <= 1; ++off) {
        double w, transfer[2] = {-1, -1};
        size_t f;
        int good = 1;
        char why[600] = "";
        for (int k = 0; k < 2 && good; ++k) {
            /* the same u and psi buffers for both calls: the second set overwrites the first */
            double *u = ub + off, *psi = pb + off, *chi = cb[k] + off;
            memcpy(u, a[k].u, 18 * nv * sizeof(double));
            memcpy(psi, a[k].psi, 24 * nv * sizeof(double));
            for (size_t i = 0; i < 24 * nv; ++i) chi[i] = NAN;
            pk_run_info info;
            memset(&info, 0, sizeof info);
            s = pk_su3_plan_execute(plan, u, psi, chi, &info);
            const size_t bad = s == PK_OK ? s3_compare(chi, a[k].ref, a[k].psi, nv, layout, &w, &f)
                                          : 1;
            transfer[k] = info.transfer_s;
            if (k == 0) memcpy(first, chi, 24 * nv * sizeof(double));
            const int inputs = !memcmp(u, a[k].u, 18 * nv * sizeof(double)) &&
                               !memcmp(psi, a[k].psi, 24 * nv * sizeof(double));
            const int counts = s == PK_OK && info.backend == s3_backend &&
                               strcmp(info.variant, variant) == 0 &&
                               info.flops == 264.0 * (double)nv &&
                               info.bytes == 528.0 * (double)nv && info.kernel_s >= 0 &&
                               info.layout_s >= 0 && info.setup_s == 0;
            good = s == PK_OK && !bad && inputs && counts &&
                   (!host || info.transfer_s == 0);
            if (!good)
                snprintf(why, sizeof why, "; set %d: %s%s%s, %zu over the bound, inputs %s, "
                         "counts %s, transfer %.2e s", k, pk_status_name(s), s ? " " : "",
                         s ? pk_last_error() : "", bad, inputs ? "kept" : "changed",
                         counts ? "ok" : "wrong", info.transfer_s);
        }
        const int first_kept = good && !memcmp(first, cb[0] + off, 24 * nv * sizeof(double));
        ok(good && first_kept,
           "%s %s plan_execute, %s arrays: two data sets into two chi arrays equal the "
           "reference, u and psi unchanged, the first chi untouched by the second call%s "
           "(transfer %.2e, %.2e s)%s", variant, name, off ? "unaligned" : "64-byte aligned",
           host && !off ? ", no copy in or out" : "", transfer[0], transfer[1], why);
    }
    /* in place: chi == psi */
    memcpy(pb, a[0].psi, 24 * nv * sizeof(double));
    memcpy(ub, a[0].u, 18 * nv * sizeof(double));
    s = pk_su3_plan_execute(plan, ub, pb, pb, NULL);
    {
        double w;
        size_t f;
        ok(s == PK_OK && s3_compare(pb, a[0].ref, a[0].psi, nv, layout, &w, &f) == 0,
           "%s %s plan_execute in place (chi == psi) equals the reference (%s)", variant, name,
           s ? pk_last_error() : "ok");
    }
    const int sr = pk_su3_plan_run(plan, NULL), sd = pk_su3_plan_download(plan, first);
    ok(sr == PK_ESTATE && sd == PK_ESTATE,
       "%s %s after plan_execute, plan_run and plan_download without an upload -> PK_ESTATE "
       "(got %s, %s)", variant, name, pk_status_name(sr), pk_status_name(sd));
    s = pk_su3_plan_upload(plan, a[1].u, a[1].psi);
    if (s == PK_OK) s = pk_su3_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_su3_plan_download(plan, first);
    {
        double w;
        size_t f;
        ok(s == PK_OK && s3_compare(first, a[1].ref, a[1].psi, nv, layout, &w, &f) == 0,
           "%s %s after plan_execute: upload, run and download on the same plan are right (%s)",
           variant, name, s ? pk_last_error() : "ok");
    }
    ok(pk_su3_plan_execute(NULL, ub, pb, cb[0], NULL) == PK_ENULL &&
           pk_su3_plan_execute(plan, NULL, pb, cb[0], NULL) == PK_ENULL &&
           pk_su3_plan_execute(plan, ub, NULL, cb[0], NULL) == PK_ENULL &&
           pk_su3_plan_execute(plan, ub, pb, NULL, NULL) == PK_ENULL &&
           strstr(pk_last_error(), "chi"),
       "%s %s plan_execute: NULL plan, u, psi or chi -> PK_ENULL (%s)", variant, name,
       pk_last_error());
done:
    pk_su3_plan_destroy(plan);
    free(ub);
    free(pb);
    free(cb[0]);
    free(cb[1]);
    free(first);
    s3_free(&a[0]);
    s3_free(&a[1]);
}

/* ---- 4. generators, layout functions, bad input (serial suite) --------------------------- */
static void s3_check_generators(void)
{
    const size_t n = 20000;
    double *u = s3_alloc(18 * n), *v = s3_alloc(18 * n);
    pk_lqcd_random_su3(42, n, u);
    double wu = 0, wd = 0, wr = 0;
    for (size_t s = 0; s < n; ++s) {
        const double *m = u + 18 * s;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) { /* (u u^H)_ij - delta_ij, long double sums */
                long double re = 0, im = 0;
                for (int k = 0; k < 3; ++k) {
                    const long double ar = m[2 * (3 * i + k)], ai = m[2 * (3 * i + k) + 1];
                    const long double br = m[2 * (3 * j + k)], bi = m[2 * (3 * j + k) + 1];
                    re += ar * br + ai * bi;
                    im += ai * br - ar * bi;
                }
                re -= i == j;
                const double d = (double)sqrtl(re * re + im * im);
                if (d > wu) wu = d;
            }
        long double cr[3], ci[3], dr = 0, di = 0; /* cofactors of row 2: u0j u1k - u0k u1j */
        for (int i = 0; i < 3; ++i) {
            const int j = (i + 1) % 3, k = (i + 2) % 3;
#define S3R(a, b) ((long double)m[2 * (3 * (a) + (b))])
#define S3I(a, b) ((long double)m[2 * (3 * (a) + (b)) + 1])
            cr[i] = S3R(0, j) * S3R(1, k) - S3I(0, j) * S3I(1, k) -
                    (S3R(0, k) * S3R(1, j) - S3I(0, k) * S3I(1, j));
            ci[i] = S3R(0, j) * S3I(1, k) + S3I(0, j) * S3R(1, k) -
                    (S3R(0, k) * S3I(1, j) + S3I(0, k) * S3R(1, j));
            const double er = (double)(cr[i] - S3R(2, i)), ei = (double)(-ci[i] - S3I(2, i));
            if (sqrt(er * er + ei * ei) > wr) wr = sqrt(er * er + ei * ei);
            dr += S3R(2, i) * cr[i] - S3I(2, i) * ci[i];
            di += S3R(2, i) * ci[i] + S3I(2, i) * cr[i];
#undef S3R
#undef S3I
        }
        const double d = (double)sqrtl((dr - 1) * (dr - 1) + di * di);
        if (d > wd) wd = d;
    }
    ok(wu <= 16 * s3_u, "pk_lqcd_random_su3: |(u u^H - 1)_ij| <= 16 u on %zu links (worst %.2f u)",
       n, wu / s3_u);
    ok(wd <= 16 * s3_u, "pk_lqcd_random_su3: |det u - 1| <= 16 u (worst %.2f u)", wd / s3_u);
    ok(wr <= 4 * s3_u, "pk_lqcd_random_su3: row 2 = conj(row0 x row1) within 4 u (worst %.2f u)",
       wr / s3_u);
    pk_lqcd_random_su3(42, n, v);
    ok(memcmp(u, v, 18 * n * sizeof(double)) == 0, "pk_lqcd_random_su3: the same seed gives the "
       "same bits");
    pk_lqcd_random_su3(43, n, v);
    size_t same = 0;
    for (size_t s = 0; s < n; ++s) same += memcmp(u + 18 * s, v + 18 * s, 18 * sizeof(double)) == 0;
    ok(same == 0, "pk_lqcd_random_su3: seeds 42 and 43 give different matrices (%zu equal)", same);
    /* Gaussian components: mean 0, variance 1 within 5 standard errors. */
    const size_t m = 18 * n;
    double *z = s3_alloc(2 * m), *z2 = s3_alloc(2 * m);
    pk_lqcd_random_complex(7, m, z);
    pk_lqcd_random_complex(7, m, z2);
    const int rep = memcmp(z, z2, 2 * m * sizeof(double)) == 0;
    pk_lqcd_random_complex(8, m, z2);
    size_t eq = 0;
    double mean = 0, var = 0;
    for (size_t i = 0; i < 2 * m; ++i) {
        eq += z[i] == z2[i];
        mean += z[i];
    }
    mean /= (double)(2 * m);
    for (size_t i = 0; i < 2 * m; ++i) var += (z[i] - mean) * (z[i] - mean);
    var /= (double)(2 * m - 1);
    const double se = 1 / sqrt((double)(2 * m));
    ok(rep && eq == 0, "pk_lqcd_random_complex: the same seed gives the same bits, seeds 7 and 8 "
       "differ everywhere (%zu equal)", eq);
    ok(fabs(mean) <= 5 * se && fabs(var - 1) <= 5 * sqrt(2.0) * se,
       "pk_lqcd_random_complex: mean %.4f, variance %.4f of %zu numbers (0 and 1 within 5 "
       "standard errors)", mean, var, 2 * m);
    ok(pk_lqcd_random_su3(1, 1, NULL) == PK_ENULL && pk_lqcd_random_complex(1, 1, NULL) == PK_ENULL &&
           pk_lqcd_random_su3(1, SIZE_MAX / 8, u) == PK_EOVERFLOW &&
           pk_lqcd_random_complex(1, SIZE_MAX / 8, z) == PK_EOVERFLOW,
       "generators: NULL is PK_ENULL, an overflowing n is PK_EOVERFLOW");
    free(u);
    free(v);
    free(z);
    free(z2);
}

static void s3_check_layout_functions(void)
{
    int all = 1;
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
        int back = -1;
        all &= pk_su3_layout_name(l) && pk_su3_layout_from_name(pk_su3_layout_name(l), &back) ==
                                            PK_OK && back == l;
    }
    int dummy;
    ok(all && !pk_su3_layout_name(PK_SU3_LAYOUTS) && !pk_su3_layout_name(-1) &&
           pk_su3_layout_from_name("soa", &dummy) == PK_EINVAL,
       "layout names: aos short padded vfo hvfo recon12 round-trip; unknown ones rejected");
    /* sizes: nv = 13 */
    static const size_t want_u[PK_SU3_LAYOUTS] = {13 * 18, 13 * 16, 13 * 24, 16 * 18, 16 * 18,
                                                 13 * 12};
    static const size_t want_s[PK_SU3_LAYOUTS] = {13 * 24, 13 * 24, 13 * 24, 16 * 24, 16 * 24,
                                                 13 * 24};
    int sz = 1;
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
        pk_su3_params p = {13, l, 0};
        size_t ud = 0, sd = 0;
        sz &= pk_su3_layout_sizes(&p, &ud, &sd) == PK_OK && ud == want_u[l] && sd == want_s[l];
    }
    pk_su3_params p3 = {13, PK_SU3_HVFO, 3};
    size_t ud = 0, sd = 0;
    sz &= pk_su3_layout_sizes(&p3, &ud, &sd) == PK_OK && ud == 15 * 18 && sd == 15 * 24;
    ok(sz, "layout sizes for nv = 13: u 234/208/312/288/288/156 doubles, spinors 312 (aos-like) "
       "or 384 (vfo: rows of 16, hvfo: 2 blocks of 8); hvfo nw = 3: 5 blocks");
    /* round trip and zero padding */
    int rt = 1;
    for (int l = 0; l < PK_SU3_LAYOUTS; ++l)
        for (int nw = 0; nw <= 5; nw += 5) {
            pk_su3_params p = {13, l, nw};
            pk_su3_layout_sizes(&p, &ud, &sd);
            double *psi = s3_alloc(13 * 24), *back = s3_alloc(13 * 24), *u = s3_alloc(13 * 18);
            double *pl = s3_alloc(sd), *ul = s3_alloc(ud);
            pk_lqcd_random_complex(3, 13 * 12, psi);
            pk_lqcd_random_su3(3, 13, u);
            for (size_t i = 0; i < sd; ++i) pl[i] = NAN;
            for (size_t i = 0; i < ud; ++i) ul[i] = NAN;
            rt &= pk_su3_pack(&p, u, psi, ul, pl) == PK_OK &&
                  pk_su3_unpack_spinor(&p, pl, back) == PK_OK &&
                  memcmp(back, psi, 13 * 24 * sizeof(double)) == 0;
            double sp = 0, su = 0, ap = 0, au = 0; /* every entry written; sums of |.| kept */
            for (size_t i = 0; i < sd; ++i) sp += fabs(pl[i]);
            for (size_t i = 0; i < ud; ++i) su += fabs(ul[i]);
            for (size_t i = 0; i < 13 * 24; ++i) ap += fabs(psi[i]);
            for (size_t i = 0; i < 13 * 18; ++i) au += fabs(u[i]);
            rt &= sp == sp && su == su && fabs(sp - ap) <= 1e-12 * ap;
            if (l != PK_SU3_SHORT && l != PK_SU3_RECON12) /* these drop u22 / row 2 */
                rt &= fabs(su - au) <= 1e-12 * au;
            free(psi);
            free(back);
            free(u);
            free(pl);
            free(ul);
        }
    ok(rt, "pk_su3_pack / pk_su3_unpack_spinor: psi round-trips bit for bit in every layout (hvfo "
       "nw 8 and 5), every padding entry is written (zeros: the sums of |.| are kept)");
}

/* The conversions on threads (PORTKERN_TEST_PARALLEL_BYTES=0 threads every size) give the
 * one-thread bits: pk_su3_pack / pk_su3_unpack_spinor on OpenMP's default team, and pk_su3
 * (u, psi packed, chi unpacked) through serial contexts of 1, 2 and 3 threads. */
static pk_context *s3_threads_ctx(int threads)
{
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_SERIAL;
    opt.flags = PK_OPT_IGNORE_ENV;
    opt.threads = threads;
    if (pk_context_create(&ctx, &opt) != PK_OK) {
        printf("Bail out! context of %d threads: %s\n", threads, pk_last_error());
        exit(1);
    }
    return ctx;
}

static void s3_check_threaded_conversion(void)
{
    static const size_t nvs[] = {1, 7, 1001, 100003};
    pk_context *ctx[4];
    for (int t = 1; t <= 3; ++t) ctx[t] = s3_threads_ctx(t);
    for (size_t i = 0; i < sizeof nvs / sizeof nvs[0]; ++i) {
        const size_t nv = nvs[i];
        s3_data d = s3_make(nv, 11);
        int pack = 1, call = 1;
        for (size_t c = 0; c < S3_NCASES; ++c) {
            pk_su3_params p = {nv, s3_cases[c][0], s3_cases[c][1]};
            size_t ud = 0, sd = 0;
            pk_su3_layout_sizes(&p, &ud, &sd);
            double *ul[2], *pl[2], *back[2], *chi[4];
            for (int th = 0; th < 2; ++th) {
                if (th)
                    setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
                else
                    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
                ul[th] = s3_alloc(ud);
                pl[th] = s3_alloc(sd);
                back[th] = s3_alloc(24 * nv);
                for (size_t k = 0; k < ud; ++k) ul[th][k] = NAN;
                for (size_t k = 0; k < sd; ++k) pl[th][k] = NAN;
                pack &= pk_su3_pack(&p, d.u, d.psi, ul[th], pl[th]) == PK_OK &&
                        pk_su3_unpack_spinor(&p, pl[th], back[th]) == PK_OK;
            }
            pack &= memcmp(ul[0], ul[1], ud * sizeof(double)) == 0 &&
                    memcmp(pl[0], pl[1], sd * sizeof(double)) == 0 &&
                    memcmp(back[1], d.psi, 24 * nv * sizeof(double)) == 0;
            for (int t = 0; t <= 3; ++t) { /* t 0: one thread, under the default 4 MiB */
                if (t)
                    setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
                else
                    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
                chi[t] = s3_alloc(24 * nv);
                for (size_t k = 0; k < 24 * nv; ++k) chi[t][k] = NAN;
                call &= pk_su3(ctx[t ? t : 1], &p, NULL, d.u, d.psi, chi[t], NULL) == PK_OK;
                if (t) call &= memcmp(chi[0], chi[t], 24 * nv * sizeof(double)) == 0;
            }
            unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
            for (int th = 0; th < 2; ++th) {
                free(ul[th]);
                free(pl[th]);
                free(back[th]);
            }
            for (int t = 0; t <= 3; ++t) free(chi[t]);
        }
        ok(pack && call, "nv = %zu, every layout: the conversions threaded give the one-thread "
           "bits (pack, unpack round trip; pk_su3 on 1, 2, 3 threads)", nv);
        s3_free(&d);
    }
    for (int t = 1; t <= 3; ++t) pk_context_destroy(ctx[t]);
}

static void s3_check_errors(void)
{
    double a[48] = {0}, b[48] = {0}, c[48] = {0};
    pk_su3_params p = {2, PK_SU3_AOS, 0};
    pk_su3_params zero = {0, PK_SU3_AOS, 0}, badl = {2, PK_SU3_LAYOUTS, 0}, negl = {2, -1, 0};
    pk_su3_params badw = {2, PK_SU3_HVFO, PK_SU3_NW_MAX + 1}, negw = {2, PK_SU3_HVFO, -1};
    pk_su3_params huge = {SIZE_MAX / 16, PK_SU3_AOS, 0};
    ok(pk_su3(NULL, &p, NULL, a, b, c, NULL) == PK_ENULL &&
           pk_su3(s3_ctx, NULL, NULL, a, b, c, NULL) == PK_ENULL &&
           pk_su3(s3_ctx, &p, NULL, NULL, b, c, NULL) == PK_ENULL &&
           pk_su3(s3_ctx, &p, NULL, a, NULL, c, NULL) == PK_ENULL &&
           pk_su3(s3_ctx, &p, NULL, a, b, NULL, NULL) == PK_ENULL,
       "pk_su3: NULL context, params, u, psi or chi are PK_ENULL");
    ok(pk_su3(s3_ctx, &zero, NULL, a, b, c, NULL) == PK_ESIZE &&
           pk_su3(s3_ctx, &huge, NULL, a, b, c, NULL) == PK_EOVERFLOW,
       "pk_su3: nv = 0 is PK_ESIZE, nv whose bytes overflow is PK_EOVERFLOW (%s)",
       pk_last_error());
    ok(pk_su3(s3_ctx, &badl, NULL, a, b, c, NULL) == PK_EINVAL &&
           pk_su3(s3_ctx, &negl, NULL, a, b, c, NULL) == PK_EINVAL &&
           pk_su3(s3_ctx, &badw, NULL, a, b, c, NULL) == PK_EINVAL &&
           pk_su3(s3_ctx, &negw, NULL, a, b, c, NULL) == PK_EINVAL,
       "pk_su3: layout out of range and nw outside 0 .. %d are PK_EINVAL (%s)", PK_SU3_NW_MAX,
       pk_last_error());
    ok(pk_su3(s3_ctx, &p, "no-such-variant", a, b, c, NULL) == PK_ENOVARIANT,
       "pk_su3: an unknown variant is PK_ENOVARIANT");
    pk_su3_plan *plan = (pk_su3_plan *)&p;
    ok(pk_su3_plan_create(&plan, s3_ctx, &zero, NULL, NULL) == PK_ESIZE && plan == NULL &&
           pk_su3_plan_create(NULL, s3_ctx, &p, NULL, NULL) == PK_ENULL &&
           pk_su3_plan_upload(NULL, a, b) == PK_ENULL && pk_su3_plan_run(NULL, NULL) == PK_ENULL &&
           pk_su3_plan_download(NULL, c) == PK_ENULL,
       "plans: bad sizes leave *plan NULL; NULL plans are PK_ENULL");
    size_t ud;
    ok(pk_su3_reference(2, a, b, b) == PK_EINVAL && pk_su3_reference(0, a, b, c) == PK_ESIZE &&
           pk_su3_reference(2, NULL, b, c) == PK_ENULL &&
           pk_su3_pack(&p, NULL, b, a, NULL) == PK_ENULL &&
           pk_su3_layout_sizes(&badw, &ud, NULL) == PK_EINVAL &&
           pk_su3_unpack_spinor(&p, NULL, c) == PK_ENULL,
       "reference in place is PK_EINVAL, nv = 0 PK_ESIZE, NULL PK_ENULL; pack, sizes and unpack "
       "check their arguments");
    pk_su3_plan_destroy(NULL);
}

/* ---- 5. environment settings and thread counts ------------------------------------------ */
/* The variant under each value of a tuning parameter, then back at its default. */
static void s3_check_env(const char *variant, const char *name, const char *const *values, int nv)
{
    for (int k = 0; k < nv; ++k) {
        pk_context_set_param(s3_ctx, name, values[k]);
        char label[96];
        snprintf(label, sizeof label, " under %s=%s", name, values[k]);
        s3_check_all_layouts(s3_ctx, variant, label);
    }
    pk_context_set_param(s3_ctx, name, NULL);
}

static void s3_check_threads(const char *variant)
{
    static const int nts[] = {3, 7};
    for (size_t t = 0; t < sizeof nts / sizeof nts[0]; ++t) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = s3_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = nts[t];
        pk_context *ctx;
        if (pk_context_create(&ctx, &opt) != PK_OK) {
            ok(0, "context with %d threads: %s", nts[t], pk_last_error());
            continue;
        }
        char label[64];
        snprintf(label, sizeof label, " on %d threads", nts[t]);
        s3_check_all_layouts(ctx, variant, label);
        pk_context_destroy(ctx);
    }
}

/* ---- 5b. omp-simd's streamed chi at every offset from a line -------------------------------
 * su3.stream=1 on 2 and 3 threads: plan_execute with u, psi and chi 0..7 doubles past a
 * 64-byte line gives the bits of su3.stream=0, and writes nothing in the 8 doubles before
 * chi or after it: the AoS-spinor layouts (the AVX-512 kernel streams whole lines of a
 * shifted chi and stores the partial first and last lines with masks; so do vfo's and hvfo's
 * kernels in registers) and hvfo with nw not a multiple of 8 (each block's chi unpacked,
 * then streamed with an unaligned head and tail). */
static void s3_check_stream_offsets(void)
{
    static const size_t sizes[] = {1, 2, 37, 1001};
    static const int layouts[] = {PK_SU3_AOS, PK_SU3_SHORT, PK_SU3_PADDED, PK_SU3_RECON12,
                                  PK_SU3_VFO, PK_SU3_HVFO};
    for (int nt = 2; nt <= 3; ++nt) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = s3_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = nt;
        pk_context *ctx;
        if (pk_context_create(&ctx, &opt) != PK_OK) {
            ok(0, "context with %d threads: %s", nt, pk_last_error());
            continue;
        }
        for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; ++li) {
            char name[48], why[300] = "";
            int good = 1;
            s3_case_name(layouts[li], 0, name, sizeof name);
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && good; ++i) {
                const size_t nv = sizes[i];
                s3_data d = s3_make(nv, 900 + nv);
                pk_su3_params p = {nv, layouts[li], 0};
                double *ub = s3_aligned(18 * nv + 8), *pb = s3_aligned(24 * nv + 8);
                double *cb = s3_aligned(24 * nv + 16), *want = s3_alloc(24 * nv);
                /* o == -1: su3.stream=0 on aligned arrays, the bits every offset must give */
                for (int o = -1; o < 8 && good; ++o) {
                    const int off = o < 0 ? 0 : o;
                    double *u = ub + off, *psi = pb + off, *chi = cb + 8 + off;
                    memcpy(u, d.u, 18 * nv * sizeof(double));
                    memcpy(psi, d.psi, 24 * nv * sizeof(double));
                    for (size_t k = 0; k < 24 * nv + 16; ++k) cb[k] = S3_SENTINEL;
                    pk_context_set_param(ctx, "su3.stream", o < 0 ? "0" : "1");
                    pk_su3_plan *plan = NULL;
                    int s = pk_su3_plan_create(&plan, ctx, &p, "omp-simd", NULL);
                    if (s == PK_OK) s = pk_su3_plan_execute(plan, u, psi, chi, NULL);
                    pk_su3_plan_destroy(plan);
                    size_t guard = 0;
                    for (size_t k = 0; k < 8 + (size_t)off; ++k) guard += cb[k] != S3_SENTINEL;
                    for (size_t k = 8 + off + 24 * nv; k < 24 * nv + 16; ++k)
                        guard += cb[k] != S3_SENTINEL;
                    if (o < 0 && s == PK_OK) memcpy(want, chi, 24 * nv * sizeof(double));
                    if (s != PK_OK || guard ||
                        (o >= 0 && memcmp(chi, want, 24 * nv * sizeof(double)) != 0)) {
                        snprintf(why, sizeof why, "; nv %zu offset %d: %s, %zu guard doubles "
                                 "written", nv, o, s ? pk_last_error()
                                 : guard ? "ok" : "other bits than su3.stream=0", guard);
                        good = 0;
                    }
                }
                free(ub);
                free(pb);
                free(cb);
                free(want);
                s3_free(&d);
            }
            ok(good, "omp-simd %s on %d threads, su3.stream=1: plan_execute with u, psi and chi "
               "0..7 doubles past a line gives the bits of su3.stream=0, nothing written "
               "before or after chi (nv 1, 2, 37, 1001)%s", name, nt, why);
        }
        pk_context_destroy(ctx);
    }
}

/* ---- the suite -------------------------------------------------------------------------- */
/* ---- CUDA: plan_execute on device arrays (cuda_devmem.h) -------------------------------
 * u, psi and a NaN-filled chi in device memory (AoS, as the caller keeps them): every
 * layout but aos is converted on the device (lib/su3.c -> the backend's execute_canonical),
 * aos runs on the arrays themselves.  chi has the bits of plan_execute on host arrays,
 * transfer_s is 0 and the reason says "device pointers, none", u and psi are unchanged; chi
 * over psi gives the same bits (aos: PK_EINVAL, the kernel would write its own input); a
 * device u with host psi and chi is PK_EINVAL where u is converted (not aos). */
static void s3_check_device_arrays(const char *variant)
{
    const char *why = devmem_open();
    if (why) {
        tap_skip(why, "su3 %s: plan_execute on device arrays", variant);
        return;
    }
    static const size_t sizes[] = {33, 1001};
    for (size_t c = 0; c < S3_NCASES; ++c) {
        const int layout = s3_cases[c][0], nw = s3_cases[c][1];
        char name[48], err[1200] = "";
        int good = 1;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && good; ++i) {
            const size_t nv = sizes[i], ub = 18 * nv * sizeof(double), sb = 24 * nv * sizeof(double);
            s3_data d = s3_make(nv, 41 + nv);
            pk_su3_params p = {nv, layout, nw};
            double *host = s3_alloc(24 * nv), *back = s3_alloc(24 * nv), *nan = s3_alloc(24 * nv);
            for (size_t k = 0; k < 24 * nv; ++k) nan[k] = NAN;
            pk_run_info info;
            int s = s3_exec(s3_ctx, variant, 2, &p, &d, host, &info);
            if (s != PK_OK) snprintf(err, sizeof err, "host arrays: %s", s3_err);
            double *du = devmem_alloc(d.u, ub), *dp = devmem_alloc(d.psi, sb);
            double *dc = devmem_alloc(nan, sb), *dio = devmem_alloc(d.psi, sb);
            pk_su3_plan *plan = NULL;
            if (s == PK_OK && !(du && dp && dc && dio)) {
                s = PK_EDEVMEM;
                snprintf(err, sizeof err, "cudaMalloc of the test arrays failed");
            }
            if (s == PK_OK && (s = pk_su3_plan_create(&plan, s3_ctx, &p, variant, NULL)) != PK_OK)
                snprintf(err, sizeof err, "plan_create: %s", pk_last_error());
            for (int io = 0; io < 2 && s == PK_OK; ++io) { /* chi apart, chi over psi */
                double *chi = io ? dio : dc;
                memset(&info, 0, sizeof info);
                s = pk_su3_plan_execute(plan, du, io ? dio : dp, chi, &info);
                if (io && layout == PK_SU3_AOS) {
                    if (s != PK_EINVAL)
                        snprintf(err, sizeof err, "aos, chi over psi: %s, not PK_EINVAL",
                                 pk_status_name(s));
                    s = s == PK_EINVAL ? PK_OK : PK_EINTERNAL;
                    break;
                }
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
            if (s == PK_OK && (devmem_read(back, du, ub) || memcmp(back, d.u, ub) ||
                               devmem_read(back, dp, sb) || memcmp(back, d.psi, sb))) {
                s = PK_EINTERNAL;
                snprintf(err, sizeof err, "u or psi changed");
            }
            if (s == PK_OK && layout != PK_SU3_AOS) { /* a mix: the host would convert u */
                const int m = pk_su3_plan_execute(plan, du, d.psi, back, NULL);
                if (m != PK_EINVAL || !strstr(pk_last_error(), "u: device memory")) {
                    s = PK_EINTERNAL;
                    snprintf(err, sizeof err, "device u, host psi and chi: %s (%s)",
                             pk_status_name(m), pk_last_error());
                }
            }
            good = s == PK_OK;
            pk_su3_plan_destroy(plan);
            devmem_free(du);
            devmem_free(dp);
            devmem_free(dc);
            devmem_free(dio);
            free(host);
            free(back);
            free(nan);
            s3_free(&d);
        }
        ok(good, "%s %s plan_execute on device arrays (AoS; %s): the host arrays' bits, "
           "transfer_s 0, \"device pointers, none\", inputs unchanged, chi over psi %s%s (nv "
           "33, 1001)%s%s", variant, s3_case_name(layout, nw, name, sizeof name),
           layout == PK_SU3_AOS ? "the kernel on them" : "converted on the device",
           layout == PK_SU3_AOS ? "PK_EINVAL" : "the same bits",
           layout == PK_SU3_AOS ? "" : ", a device u with host psi and chi PK_EINVAL",
           err[0] ? ": " : "", err);
    }
}

static int s3_run_suite(pk_backend_id backend)
{
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = backend;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&s3_ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create(%s): %s\n", pk_backend_name(backend), pk_last_error());
        return 1;
    }
    s3_backend = backend;
    s3_u = DBL_EPSILON / 2;
    const char *why;
    char msg[600];
    if (!pk_backend_available(s3_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(s3_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_su3_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no su3 variant", pk_backend_name(backend));
        pk_context_destroy(s3_ctx);
        tap_skip_all(msg);
    }
    if (backend != PK_BACKEND_SERIAL && backend != PK_BACKEND_OPENMP) {
        s3_data d = s3_make(1, 1);
        double chi[24];
        pk_su3_params p = {1, PK_SU3_AOS, 0};
        if (pk_su3(s3_ctx, &p, NULL, d.u, d.psi, chi, NULL) == PK_EUNSUPPORTED) {
            snprintf(msg, sizeof msg, "%s: %s", pk_backend_name(backend), pk_last_error());
            s3_free(&d);
            pk_context_destroy(s3_ctx);
            tap_skip_all(msg);
        }
        s3_free(&d);
    }
    tap_diag("u = %.3e; E(s,k) = (2 sqrt2 gamma_6 + R) |psi(s,.,k)| = %.2f u |psi| + R, R: short "
             "10 u, recon12 %.2f u", s3_u, 2 * sqrt(2.0) * s3_gamma(6) / s3_u, 10 * sqrt(3.0));

    if (backend == PK_BACKEND_SERIAL) {
        s3_check_generators();
        s3_check_layout_functions();
        s3_check_threaded_conversion();
        s3_check_errors();
    }
    char list[256];
    snprintf(list, sizeof list, "%s", variants);
    for (char *v = strtok(list, ","); v; v = strtok(NULL, ",")) {
        s3_check_all_layouts(s3_ctx, v, "");
        for (int l = 0; l < PK_SU3_LAYOUTS; ++l) {
            s3_check_plan(v, l);
            s3_check_execute(v, l);
        }
        if (strcmp(v, "omp-simd") == 0) {
            static const char *const isa[] = {"avx512", "avx2", "generic"};
            static const char *const stream[] = {"0", "1"};
            s3_check_env(v, "su3.isa", isa, 3);
            s3_check_env(v, "su3.stream", stream, 2);
            s3_check_stream_offsets();
        }
        if (backend == PK_BACKEND_OPENMP) s3_check_threads(v);
        if (backend == PK_BACKEND_CUDA) s3_check_device_arrays(v);
    }

    /* No variant named: the backend's first. */
    char first[256];
    snprintf(first, sizeof first, "%s", variants);
    first[strcspn(first, ",")] = '\0';
    s3_data d = s3_make(29, 77);
    double *chi = s3_alloc(24 * 29), w;
    size_t f;
    pk_run_info info;
    pk_su3_params p = {29, PK_SU3_HVFO, 0};
    memset(&info, 0, sizeof info);
    int s = pk_su3(s3_ctx, &p, NULL, d.u, d.psi, chi, &info);
    ok(s == PK_OK && info.backend == backend && strcmp(info.variant, first) == 0 &&
           s3_compare(chi, d.ref, d.psi, 29, PK_SU3_HVFO, &w, &f) == 0,
       "variant NULL runs the backend's first variant %s (ran %s%s%s)", first, info.variant,
       s ? "; " : "", s ? pk_last_error() : "");
    free(chi);
    s3_free(&d);
    pk_context_destroy(s3_ctx);
    return tap_done();
}
#endif
