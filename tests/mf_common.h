/* mf_common.h - the magicfilter3d test every backend runs (test_mf_<backend>.c picks one).
 *
 * Every variant of the suite's backend (pk_magicfilter3d_variants), through the one-shot
 * call and through a plan:
 * 1. Against pk_magicfilter3d_reference, <= 1e-13 absolute per element (docs/KERNELS.md), for
 *    the three boundary conditions x MF / MFT, on odd sizes, sizes below 16 (the periodic
 *    wrap goes around more than once), sizes that are not multiples of 4 or 8, mixed shapes
 *    with unit axes, lines longer than the serial pass's 4096-point padded line, and once
 *    per separable variant a bigger grid (64 x 62 x 66).  The one-shot and plan outputs
 *    are written into NaN-filled buffers with a guard zone after them (an unwritten or an
 *    overrun element fails), and x must come back unchanged.  serial-direct (4096 taps
 *    per point) gets only the cases whose output has <= 8192 points.
 * 2. Properties of docs/KERNELS.md, each against its own oracle written here from the
 *    definitions of portkern.h (not from the library's reference):
 *    - the taps are the decimal values of docs/KERNELS.md and sum to 1 in double;
 *    - MF(constant) = constant and MFT(constant) = constant (periodic);
 *    - adjointness: <MF x, y> = <x, MFT y> (periodic), <GROW_MF x, y> = <x, SHRINK_MFT y>,
 *      <GROW_MFT x, y> = <x, SHRINK_MF y>, the dot products compensated (Dot2, Ogita-Rump-
 *      Oishi 2005) so that their own error is ~u;
 *    - impulse responses: a delta in x gives, per axis, the 1-D operator's response (this
 *      file's mf_resp1d, from the header's formulas) and in 3-D their product: for
 *      periodic n >= 16 and a delta at 0, MF gives f_{-i1} f_{-i2} f_{-i3} (the reversed
 *      filter, negative indices wrapping) and MFT the filter itself; GROW of a delta on a
 *      1 x 1 x 1 grid gives all 16^3 products; also periodic n < 16 (taps summed by the
 *      wrap), deltas off the origin and SHRINK.  Run on the reference too;
 *    - separable == direct: every variant against the serial backend's serial-direct;
 *    - shift equivariance (periodic): shifting x by (s1, s2, s3) shifts y.
 * 3. Plans: x uploaded once and run twice gives the same bits; a second upload gives the
 *    new result; run before any upload, download before any run (also right after a new
 *    upload) are PK_ESTATE; the run info names the backend and variant and counts 96
 *    flops per point (periodic), 32 per output point per pass (grow, shrink); a NULL
 *    variant runs the backend's first one.  On the host backends the one-shot call runs
 *    on x and y at each of the 8 double offsets from a 64-byte line, on grids large enough
 *    for the simd pass's streaming stores: nothing copied, nothing written outside y.
 * 4. Bad input (serial suite): NULL arguments, sizes <= 0, sizes whose bytes overflow,
 *    transpose / bc out of range, unknown variants, the reference with y overlapping x.
 * The simd (serial suite) and omp (openmp suite) variants are also run under
 * magicfilter3d.isa = avx512, avx2, generic and auto, opencl under magicfilter3d.cl_scheme =
 * tile (the GPU design), vec (the CPU one) and auto, so that PoCL runs both kernels; omp
 * with 3 and 7 threads.  A suite SKIPs as a whole when its backend is unavailable, has no
 * magicfilter3d variant yet, or its device lacks double precision (PK_EUNSUPPORTED).
 *
 * Error analysis.  u = 2^-53 = 1.11e-16.  The taps' absolute sum is A = sum |f_l| =
 * 1.18950, so a 1-D pass has infinity-norm A and the 3-D operator A^3 = 1.6830; with
 * |x| <= M every intermediate value is <= A^p M and every output <= 1.683 M.
 *  - A separable variant computes each output of a pass as a sum of 16 products.  In
 *    any order, with or without FMA, its error is <= gamma_16 sum |g_k v_k| <= gamma_16 A
 *    max|v| (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1), gamma_16 =
 *    16u/(1-16u) = 1.78e-15.  Pass p's input is <= A^(p-1) M and its error is carried by
 *    the remaining passes with gain A each, so the 3-D error is
 *        <= 3 gamma_16 A^3 M = 8.97e-15 M          (E_sep, first order),
 *    1.35e-14 for the data used here (M <= 1.5: inputs in [0.5, 1.5] or [-1, 1]).  Two
 *    separable computations (a variant and the reference) differ by <= 2.7e-14: the 1e-13
 *    of docs/KERNELS.md holds with a margin of 3.7.  Wrapping (n < 16) only adds the same 16
 *    products in another grouping; grow / shrink have fewer products.
 *  - serial-direct adds 4096 products (each ((f_a f_b) f_c) x, <= 3u relative) in one
 *    accumulator.  Its worst-case bound is weak: gamma_4095 A^3 M = 7.7e-13 M, and the
 *    tighter u sum_i |S_i| over the partial sums in its loop order is still 3.6e-13 M (MF;
 *    4.1e-13 M for MFT), because after the dominant product f_0^3 x (the 2185th for MF,
 *    the 1912th for MFT) the ~2000 remaining partial sums are all ~|x|.  As in
 *    cv_common.h past 160 taps, the tolerance rests on roundings behaving like a random
 *    walk: 4096 independent roundings, each in [-u|S|, u|S|] with |S| <= A^3 M, have a
 *    sum of standard deviation <= sqrt(4096/3) u A^3 M; about 7 of those,
 *        E_dir = 4 sqrt(4096) u A^3 M = 256 u A^3 M = 4.8e-14 M,
 *    are taken as its error: 7.2e-14 at M = 1.5, plus the reference's 1.35e-14 = 8.5e-14
 *    <= 1e-13.  (Expected: ~2000 roundings of a sum ~1, standard deviation ulp/sqrt(12)
 *    = 6.4e-17 each: ~3e-15; measured up to 1.2e-14.)  Each line prints the largest error.
 *  Below, E_v is E_sep or E_dir (per unit M) for the variant under test.
 *  - Constant c (periodic): the exact image of c is c (sum f)^3; the stored taps sum to
 *    1 + 69841 * 2^-72 = 1 + 1.5e-17 exactly, so |c (sum f)^3 - c| <= 5e-17 |c|; tolerance
 *    (E_v + 1e-16) |c|.
 *  - Adjointness: with a = MF x computed as a + da, |da| <= E_v ||x||inf (likewise for
 *    b = MFT y), |<a + da, y> - <a, y>| <= E_v ||x||inf ||y||1, so the tolerance is
 *        E_v (||x||inf ||y||1 + ||y||inf ||x||1) + 4u (S1 + S2),
 *    S1 = sum |a_i y_i|, S2 = sum |x_i b_i|; the last term bounds the compensated dot
 *    products' own error (u |dot| + gamma_n^2 S).  The line also prints |D1 - D2| / S
 *    (~1e-17 measured; a wrong index or tap gives O(1e-2) or more there).
 *  - Impulses: x = 1 at one point.  For periodic n >= 16, grow and shrink every output
 *    gets at most one tap per axis, so each pass adds exact zeros to one product: the
 *    result is (f_a f_b) f_c rounded twice, in whichever association: <= 4u |e| (in
 *    practice bit-exact).  Where the periodic wrap sums several taps on one axis (n < 16)
 *    the sums are reordered too: 4u |e| + 2 E_v.  Zeros must be exact zeros.
 *  - Shift equivariance: both results carry their own error: 2 E_v M.
 *  - Separable == direct, ISA / scheme settings, thread counts: 1e-13, as item 1.
 */
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MF_TOL 1e-13 /* docs/KERNELS.md: absolute, per element, O(1) data */
#define MF_GUARD 64  /* doubles after every output buffer that must stay untouched */
#define MF_DIRECT_MAX_OUT 8192 /* serial-direct: output points per case (4096 taps each) */
#define MF_SENTINEL (-12345.6789)

enum { MF_REF = 0, MF_ONESHOT = 1, MF_PLAN = 2 };

static pk_context *mf_ctx;        /* the suite's backend, forced */
static pk_context *mf_serial_ctx; /* serial backend (the serial-direct oracle) */
static pk_backend_id mf_backend;
static double mf_u, mf_A, mf_E_sep, mf_E_dir;
static char mf_err[512];

/* f_{-8} .. f_{7} as docs/KERNELS.md prints them (the decimal strings). */
static const double mf_spec_taps[16] = {
    8.4334247333529341094733325815816e-7,  -0.1290557201342060969516786758559028e-4,
    0.8762984476210559564689161894116397e-4, -0.30158038132690463167163703826169879e-3,
    0.174723713672993903449447812749852942e-2, -0.942047030201080385922711540948195075e-2,
    0.2373821463724942397566389712597274535e-1, 0.612625895831207982195380597e-1,
    0.9940415697834003993178616713,        -0.604895289196983516002834636e-1,
    -0.2103025160930381434955489412839065067e-1, 0.1337263414854794752733423467013220997e-1,
    -0.344128144493493857280881509686821861e-2, 0.49443227688689919192282259476750972e-3,
    -0.5185986881173432922848639136911487e-4, 2.72734492911979659657715313017228e-6,
};

static const char *const mf_bc_name[3] = {"periodic", "grow", "shrink"};
static const char *const mf_tr_name[2] = {"MF", "MFT"};

static double *mf_alloc(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof(double));
    if (!p) {
        printf("Bail out! out of memory (%zu doubles)\n", n);
        exit(1);
    }
    return p;
}

static unsigned mf_next(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Values in [lo, lo + span): [0.5, 1.5) or [-1, 1). */
static void mf_fill(double *x, size_t n, unsigned seed, double lo, double span)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; ++i) x[i] = lo + span * (double)mf_next(&s) / (double)(1u << 24);
}

static pk_magicfilter3d_params mf_params(int n1, int n2, int n3, int transpose, int bc)
{
    pk_magicfilter3d_params p;
    p.n1 = n1;
    p.n2 = n2;
    p.n3 = n3;
    p.transpose = transpose;
    p.bc = bc;
    return p;
}

/* Element counts (and shapes, C order) of x and y; bails out on a valid p that fails. */
static void mf_counts(const pk_magicfilter3d_params *p, size_t *in, size_t *out,
                      size_t in_shape[3], size_t out_shape[3])
{
    size_t is[3], os[3];
    if (pk_magicfilter3d_shapes(p, is, os) != PK_OK) {
        printf("Bail out! pk_magicfilter3d_shapes: %s\n", pk_last_error());
        exit(1);
    }
    if (in) *in = is[0] * is[1] * is[2];
    if (out) *out = os[0] * os[1] * os[2];
    if (in_shape) memcpy(in_shape, is, sizeof is);
    if (out_shape) memcpy(out_shape, os, sizeof os);
}

static int mf_is_direct(const char *variant) { return strstr(variant, "direct") != NULL; }

/* The variant's error per unit of max|x| (see the header). */
static double mf_E(const char *variant) { return mf_is_direct(variant) ? mf_E_dir : mf_E_sep; }

/* Run one call into y[out] (the reference, the one-shot call or a plan: create, upload,
 * run, download).  y is written through a NaN-filled buffer with a guard zone after it;
 * x must be left unchanged.  Returns the status (PK_EINTERNAL for an overrun or a changed
 * x), with the detail in mf_err. */
static int mf_exec(pk_context *ctx, const char *variant, int mode,
                   const pk_magicfilter3d_params *p, const double *x, double *y,
                   pk_run_info *info)
{
    size_t in, out;
    mf_counts(p, &in, &out, NULL, NULL);
    double *buf = mf_alloc(out + MF_GUARD), *xcopy = mf_alloc(in);
    memcpy(xcopy, x, in * sizeof(double));
    for (size_t i = 0; i < out; ++i) buf[i] = NAN;
    for (size_t i = out; i < out + MF_GUARD; ++i) buf[i] = MF_SENTINEL;
    int s;
    mf_err[0] = '\0';
    if (mode == MF_REF) {
        s = pk_magicfilter3d_reference(p, x, buf);
    } else if (mode == MF_ONESHOT) {
        s = pk_magicfilter3d(ctx, p, variant, x, buf, info);
    } else {
        pk_magicfilter3d_plan *plan = NULL;
        s = pk_magicfilter3d_plan_create(&plan, ctx, p, variant, NULL);
        if (s == PK_OK) s = pk_magicfilter3d_plan_upload(plan, x);
        if (s == PK_OK) s = pk_magicfilter3d_plan_run(plan, info);
        if (s == PK_OK) s = pk_magicfilter3d_plan_download(plan, buf);
        if (s != PK_OK) snprintf(mf_err, sizeof mf_err, "%s", pk_last_error());
        pk_magicfilter3d_plan_destroy(plan);
    }
    if (s != PK_OK && !mf_err[0]) snprintf(mf_err, sizeof mf_err, "%s", pk_last_error());
    if (s == PK_OK) {
        size_t bad = 0;
        for (size_t i = out; i < out + MF_GUARD; ++i) bad += buf[i] != MF_SENTINEL;
        if (bad) {
            s = PK_EINTERNAL;
            snprintf(mf_err, sizeof mf_err, "%zu of the %d doubles after y were overwritten", bad,
                     MF_GUARD);
        } else if (memcmp(x, xcopy, in * sizeof(double)) != 0) {
            s = PK_EINTERNAL;
            snprintf(mf_err, sizeof mf_err, "x was modified");
        }
    }
    memcpy(y, buf, out * sizeof(double));
    free(buf);
    free(xcopy);
    return s;
}

/* Max |a - b| (Inf when either has a NaN); *nfail elements over tol, *first the first. */
static double mf_maxdiff(const double *a, const double *b, size_t n, double tol, size_t *nfail,
                         size_t *first)
{
    double m = 0;
    size_t f = 0, fi = (size_t)-1;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (d != d) d = INFINITY;
        if (!(d <= tol) && f++ == 0) fi = i;
        if (d > m) m = d;
    }
    if (nfail) *nfail = f;
    if (first) *first = fi;
    return m;
}

/* "[i3, i2, i1]" of flat index i in the output shape of p, or "-". */
static void mf_where(const pk_magicfilter3d_params *p, size_t i, char *buf, size_t len)
{
    size_t os[3];
    mf_counts(p, NULL, NULL, NULL, os);
    if (i == (size_t)-1)
        snprintf(buf, len, "-");
    else
        pk_format_index(i, os, 3, buf, len);
}

static int mf_info_ok(const pk_run_info *info, const char *variant)
{
    return info->backend == mf_backend && strcmp(info->variant, variant) == 0;
}

/* ---- 1. against the reference ----------------------------------------------------------- */
/* One case through the one-shot call and a plan on ctx, against the reference: returns 1
 * when both pass; err[2] gets their max abs errors, why (appended) what failed. */
static int mf_case(pk_context *ctx, const char *variant, int n1, int n2, int n3, int tr, int bc,
                   double err[2], char *why, size_t whylen)
{
    pk_magicfilter3d_params p = mf_params(n1, n2, n3, tr, bc);
    size_t in, out;
    mf_counts(&p, &in, &out, NULL, NULL);
    double *x = mf_alloc(in), *ref = mf_alloc(out), *y = mf_alloc(out);
    const unsigned seed = (unsigned)(n1 * 7919 + n2 * 131 + n3 * 17 + tr * 3 + bc);
    if (seed & 1)
        mf_fill(x, in, seed, -1.0, 2.0);
    else
        mf_fill(x, in, seed, 0.5, 1.0);
    if (mf_exec(NULL, NULL, MF_REF, &p, x, ref, NULL) != PK_OK) {
        printf("Bail out! reference %dx%dx%d: %s\n", n1, n2, n3, mf_err);
        exit(1);
    }
    int good = 1;
    for (int m = 0; m < 2; ++m) {
        pk_run_info info;
        memset(&info, 0, sizeof info);
        const int s = mf_exec(ctx, variant, m ? MF_PLAN : MF_ONESHOT, &p, x, y, &info);
        size_t nfail = 0, first = (size_t)-1;
        err[m] = s == PK_OK ? mf_maxdiff(y, ref, out, MF_TOL, &nfail, &first) : -1;
        const int info_ok = s != PK_OK || mf_info_ok(&info, variant);
        if (s != PK_OK || nfail || !info_ok) {
            char at[64];
            mf_where(&p, first, at, sizeof at);
            size_t l = strlen(why);
            snprintf(why + l, whylen - l, "; %dx%dx%d %s %s %s: %s%s%s, %zu over, first %s%s", n1,
                     n2, n3, mf_bc_name[bc], mf_tr_name[tr], m ? "plan" : "one-shot",
                     pk_status_name(s), s ? " " : "", s ? mf_err : "", nfail, at,
                     info_ok ? "" : ", wrong backend/variant in the run info");
            good = 0;
        }
    }
    free(x);
    free(ref);
    free(y);
    return good;
}

/* One case, one TAP line. */
static void mf_check_case(const char *variant, int n1, int n2, int n3, int tr, int bc,
                          const char *label)
{
    double err[2];
    char why[1024] = "";
    int good = mf_case(mf_ctx, variant, n1, n2, n3, tr, bc, err, why, sizeof why);
    ok(good, "%s %dx%dx%d %s %s%s: one-shot and plan equal the reference within %.0e (max abs "
       "%.2e, %.2e%s)", variant, n1, n2, n3, mf_bc_name[bc], mf_tr_name[tr], label, MF_TOL,
       err[0], err[1], why);
}

/* One size, all three bc x MF / MFT, both call paths on ctx; one TAP line. */
static void mf_check_size_all(pk_context *ctx, const char *variant, const int n[3],
                              const char *label)
{
    double maxe = 0, err[2];
    char why[1024] = "";
    int good = 1;
    for (int bc = 0; bc < 3; ++bc)
        for (int tr = 0; tr < 2; ++tr) {
            good &= mf_case(ctx, variant, n[0], n[1], n[2], tr, bc, err, why, sizeof why);
            for (int m = 0; m < 2; ++m)
                if (err[m] > maxe) maxe = err[m];
        }
    ok(good, "%s %dx%dx%d%s: periodic, grow, shrink x MF, MFT, one-shot and plan, equal the "
       "reference within %.0e (max abs %.2e%s)", variant, n[0], n[1], n[2], label, MF_TOL, maxe,
       why);
}

/* The output size of a case (for serial-direct's budget). */
static size_t mf_out_count(int n1, int n2, int n3, int tr, int bc)
{
    pk_magicfilter3d_params p = mf_params(n1, n2, n3, tr, bc);
    size_t out;
    mf_counts(&p, NULL, &out, NULL, NULL);
    return out;
}

static const int mf_sizes[][3] = {
    /* below 16 (the periodic wrap goes around more than once) */
    {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {5, 5, 5}, {7, 7, 7},
    /* not multiples of 4 or 8 */
    {9, 9, 9}, {15, 15, 15}, {17, 17, 17}, {31, 31, 31}, {33, 33, 33},
    /* mixed */
    {5, 7, 3}, {17, 16, 20}, {33, 9, 18}, {1, 40, 3}, {16, 1, 8}, {2, 1, 37},
    /* lines longer than the serial pass's padded line (4096) */
    {4100, 2, 1}, {1, 4097, 2},
};
#define MF_NSIZES ((int)(sizeof mf_sizes / sizeof mf_sizes[0]))

static void mf_check_reference(const char *variant)
{
    for (int i = 0; i < MF_NSIZES; ++i)
        for (int bc = 0; bc < 3; ++bc)
            for (int tr = 0; tr < 2; ++tr) {
                const int *n = mf_sizes[i];
                if (mf_is_direct(variant) &&
                    mf_out_count(n[0], n[1], n[2], tr, bc) > MF_DIRECT_MAX_OUT)
                    continue;
                mf_check_case(variant, n[0], n[1], n[2], tr, bc, "");
            }
    if (!mf_is_direct(variant)) {
        mf_check_case(variant, 64, 62, 66, 0, PK_MF_PERIODIC, " (big)");
        mf_check_case(variant, 64, 62, 66, 1, PK_MF_GROW, " (big)");
    }
}

/* ---- 2. properties ---------------------------------------------------------------------- */
static double mf_f(int l) { return l >= -8 && l <= 7 ? mf_spec_taps[l + 8] : 0.0; }

/* Output j of the 1-D operator of portkern.h on a delta at input position p (nin points). */
static double mf_resp1d(int bc, int tr, int nin, int p, int j)
{
    const int c = bc == PK_MF_PERIODIC ? j : bc == PK_MF_GROW ? (tr ? j - 8 : j - 7)
                                                              : (tr ? j + 7 : j + 8);
    double r = 0.0;
    for (int l = tr ? -7 : -8; l <= (tr ? 8 : 7); ++l) {
        long s = (long)c + l;
        if (bc == PK_MF_PERIODIC) s = ((s % nin) + nin) % nin;
        if (s == p) r += tr ? mf_f(-l) : mf_f(l);
    }
    return r;
}

/* The taps: the decimal values of docs/KERNELS.md, summing to 1 (serial suite). */
static void mf_check_taps(void)
{
    const double *t = pk_magicfilter_taps();
    double maxd = 0, sum = 0, asum = 0;
    int same = t != NULL;
    for (int k = 0; k < 16 && t; ++k) {
        same &= t[k] == mf_spec_taps[k];
        if (fabs(t[k] - mf_spec_taps[k]) > maxd) maxd = fabs(t[k] - mf_spec_taps[k]);
        sum += t[k];
        asum += fabs(t[k]);
    }
    ok(same, "pk_magicfilter_taps()[l+8] = f_l, the decimal values of docs/KERNELS.md to the "
       "bit (max abs diff %.2e)", maxd);
    ok(t && sum == 1.0, "the taps f_-8 .. f_7 sum to 1 in double (sum - 1 = %.2e; sum |f| = %.6f)",
       sum - 1.0, asum);
}

/* Shapes of x and y, C order, per bc (serial suite). */
static void mf_check_shapes(void)
{
    for (int bc = 0; bc < 3; ++bc) {
        pk_magicfilter3d_params p = mf_params(4, 5, 6, 1, bc);
        size_t is[3] = {0, 0, 0}, os[3] = {0, 0, 0};
        int s = pk_magicfilter3d_shapes(&p, is, os);
        const size_t gi = bc == PK_MF_SHRINK ? 15 : 0, go = bc == PK_MF_GROW ? 15 : 0;
        ok(s == PK_OK && is[0] == 6 + gi && is[1] == 5 + gi && is[2] == 4 + gi &&
               os[0] == 6 + go && os[1] == 5 + go && os[2] == 4 + go,
           "shapes of n = 4x5x6 %s: x [%zu][%zu][%zu], y [%zu][%zu][%zu] (C order, n3 first)",
           mf_bc_name[bc], is[0], is[1], is[2], os[0], os[1], os[2]);
    }
}

/* MF(c) = c and MFT(c) = c, periodic. */
static void mf_check_constant(const char *variant)
{
    static const int sz[][3] = {{19, 6, 3}, {33, 17, 16}, {1, 2, 1}};
    const double c = 0.7;
    const double tol = (mf_E(variant) + 1e-16) * fabs(c);
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; ++i)
        for (int tr = 0; tr < 2; ++tr) {
            pk_magicfilter3d_params p = mf_params(sz[i][0], sz[i][1], sz[i][2], tr, PK_MF_PERIODIC);
            size_t n;
            mf_counts(&p, &n, NULL, NULL, NULL);
            double *x = mf_alloc(n), *y = mf_alloc(n), *cc = mf_alloc(n);
            for (size_t k = 0; k < n; ++k) x[k] = cc[k] = c;
            int s = mf_exec(mf_ctx, variant, tr ? MF_PLAN : MF_ONESHOT, &p, x, y, NULL);
            size_t nfail = 0;
            double e = s == PK_OK ? mf_maxdiff(y, cc, n, tol, &nfail, NULL) : -1;
            ok(s == PK_OK && !nfail, "%s %s(%.1f) = %.1f on %dx%dx%d periodic (max abs %.2e <= %.2e%s%s)",
               variant, mf_tr_name[tr], c, c, sz[i][0], sz[i][1], sz[i][2], e, tol,
               s ? "; " : "", s ? mf_err : "");
            free(x);
            free(y);
            free(cc);
        }
}

/* Compensated dot product (Dot2 of Ogita, Rump and Oishi): error <= u|dot| + gamma_n^2 S. */
static double mf_dot2(const double *a, const double *b, size_t n, double *abs_sum)
{
    double s = 0, c = 0, as = 0;
    for (size_t i = 0; i < n; ++i) {
        const double p = a[i] * b[i], ep = fma(a[i], b[i], -p);
        const double t = s + p, z = t - s, es = (s - (t - z)) + (p - z);
        s = t;
        c += ep + es;
        as += fabs(p);
    }
    *abs_sum = as;
    return s + c;
}

static void mf_norms(const double *x, size_t n, double *inf, double *one)
{
    *inf = 0;
    *one = 0;
    for (size_t i = 0; i < n; ++i) {
        if (fabs(x[i]) > *inf) *inf = fabs(x[i]);
        *one += fabs(x[i]);
    }
}

/* <A x, y> = <x, B y> for (A, B) = (MF, MFT) periodic, (GROW MF, SHRINK MFT),
 * (GROW MFT, SHRINK MF); A and B on the same n. */
static void mf_check_adjoint(const char *variant)
{
    static const struct { int n[3], bc_a, tr_a, bc_b, tr_b; const char *name; } pair[] = {
        {{13, 17, 20}, PK_MF_PERIODIC, 0, PK_MF_PERIODIC, 1, "<MF x, y> = <x, MFT y>"},
        {{7, 3, 18}, PK_MF_PERIODIC, 0, PK_MF_PERIODIC, 1, "<MF x, y> = <x, MFT y>"},
        {{8, 6, 9}, PK_MF_GROW, 0, PK_MF_SHRINK, 1, "<GROW_MF x, y> = <x, SHRINK_MFT y>"},
        {{2, 17, 5}, PK_MF_GROW, 0, PK_MF_SHRINK, 1, "<GROW_MF x, y> = <x, SHRINK_MFT y>"},
        {{8, 6, 9}, PK_MF_GROW, 1, PK_MF_SHRINK, 0, "<GROW_MFT x, y> = <x, SHRINK_MF y>"},
        {{2, 17, 5}, PK_MF_GROW, 1, PK_MF_SHRINK, 0, "<GROW_MFT x, y> = <x, SHRINK_MF y>"},
    };
    for (size_t i = 0; i < sizeof pair / sizeof pair[0]; ++i) {
        const int *n = pair[i].n;
        pk_magicfilter3d_params pa = mf_params(n[0], n[1], n[2], pair[i].tr_a, pair[i].bc_a);
        pk_magicfilter3d_params pb = mf_params(n[0], n[1], n[2], pair[i].tr_b, pair[i].bc_b);
        size_t nx, ny;
        mf_counts(&pa, &nx, &ny, NULL, NULL); /* A: nx -> ny; B: ny -> nx */
        double *x = mf_alloc(nx), *y = mf_alloc(ny), *ax = mf_alloc(ny), *by = mf_alloc(nx);
        mf_fill(x, nx, (unsigned)(i * 2 + 1), -1.0, 2.0);
        mf_fill(y, ny, (unsigned)(i * 2 + 2), -1.0, 2.0);
        int s = mf_exec(mf_ctx, variant, MF_ONESHOT, &pa, x, ax, NULL);
        if (s == PK_OK) s = mf_exec(mf_ctx, variant, MF_PLAN, &pb, y, by, NULL);
        double s1 = 0, s2 = 0, d1 = 0, d2 = 0, xi, x1, yi, y1;
        if (s == PK_OK) {
            d1 = mf_dot2(ax, y, ny, &s1);
            d2 = mf_dot2(x, by, nx, &s2);
        }
        mf_norms(x, nx, &xi, &x1);
        mf_norms(y, ny, &yi, &y1);
        const double diff = fabs(d1 - d2), scale = s1 > s2 ? s1 : s2;
        const double tol = mf_E(variant) * (xi * y1 + yi * x1) + 4 * mf_u * (s1 + s2);
        ok(s == PK_OK && diff <= tol,
           "%s %s on %dx%dx%d: |D1 - D2| = %.2e <= %.2e (relative to sum |terms| %.2e <= %.2e; "
           "D1 = %.6f%s%s)", variant, pair[i].name, n[0], n[1], n[2], diff, tol,
           scale > 0 ? diff / scale : 0.0, scale > 0 ? tol / scale : 0.0, d1, s ? "; " : "",
           s ? mf_err : "");
        free(x);
        free(y);
        free(ax);
        free(by);
    }
}

/* A delta at (q1, q2, q3) of x gives the product of the three 1-D responses.  variant
 * "reference" checks pk_magicfilter3d_reference itself. */
static void mf_check_impulse(const char *variant)
{
    static const struct { int n[3], q[3], bc, tr; const char *what; } c[] = {
        {{16, 17, 20}, {0, 0, 0}, PK_MF_PERIODIC, 0, "MF(delta at 0) = f_-i1 f_-i2 f_-i3 (the reversed filter)"},
        {{16, 17, 20}, {0, 0, 0}, PK_MF_PERIODIC, 1, "MFT(delta at 0) = f_i1 f_i2 f_i3 (the filter)"},
        {{18, 16, 21}, {5, 15, 11}, PK_MF_PERIODIC, 0, "MF(delta off the origin), wrapping"},
        {{18, 16, 21}, {5, 15, 11}, PK_MF_PERIODIC, 1, "MFT(delta off the origin), wrapping"},
        {{3, 5, 1}, {1, 4, 0}, PK_MF_PERIODIC, 0, "MF(delta), n < 16: taps summed by the wrap"},
        {{3, 5, 1}, {1, 4, 0}, PK_MF_PERIODIC, 1, "MFT(delta), n < 16: taps summed by the wrap"},
        {{1, 1, 1}, {0, 0, 0}, PK_MF_GROW, 0, "GROW MF(delta on 1x1x1) = all 16^3 products f_7-j"},
        {{1, 1, 1}, {0, 0, 0}, PK_MF_GROW, 1, "GROW MFT(delta on 1x1x1) = all 16^3 products f_j-8"},
        {{5, 3, 4}, {2, 1, 3}, PK_MF_GROW, 0, "GROW MF(delta inside)"},
        {{5, 3, 4}, {2, 1, 3}, PK_MF_GROW, 1, "GROW MFT(delta inside)"},
        {{5, 4, 3}, {9, 10, 8}, PK_MF_SHRINK, 0, "SHRINK MF(delta)"},
        {{5, 4, 3}, {9, 10, 8}, PK_MF_SHRINK, 1, "SHRINK MFT(delta)"},
        {{5, 4, 3}, {0, 18, 0}, PK_MF_SHRINK, 0, "SHRINK MF(delta at the input's edges)"},
        {{5, 4, 3}, {0, 18, 0}, PK_MF_SHRINK, 1, "SHRINK MFT(delta at the input's edges)"},
    };
    const int ref = strcmp(variant, "reference") == 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; ++i) {
        pk_magicfilter3d_params p = mf_params(c[i].n[0], c[i].n[1], c[i].n[2], c[i].tr, c[i].bc);
        size_t nin, nout, is[3], os[3];
        mf_counts(&p, &nin, &nout, is, os);
        double *x = mf_alloc(nin), *y = mf_alloc(nout);
        memset(x, 0, nin * sizeof(double));
        x[((size_t)c[i].q[2] * is[1] + (size_t)c[i].q[1]) * is[2] + (size_t)c[i].q[0]] = 1.0;
        int s = mf_exec(mf_ctx, variant, ref ? MF_REF : (i & 1) ? MF_PLAN : MF_ONESHOT, &p, x, y,
                        NULL);
        int wrap = 0;
        for (int a = 0; a < 3; ++a) wrap |= c[i].bc == PK_MF_PERIODIC && c[i].n[a] < 16;
        double maxe = 0, maxrel = 0;
        size_t nfail = 0, first = (size_t)-1, nonzero = 0;
        for (size_t j3 = 0; j3 < os[0] && s == PK_OK; ++j3)
            for (size_t j2 = 0; j2 < os[1]; ++j2)
                for (size_t j1 = 0; j1 < os[2]; ++j1) {
                    const double r1 = mf_resp1d(c[i].bc, c[i].tr, (int)is[2], c[i].q[0], (int)j1);
                    const double r2 = mf_resp1d(c[i].bc, c[i].tr, (int)is[1], c[i].q[1], (int)j2);
                    const double r3 = mf_resp1d(c[i].bc, c[i].tr, (int)is[0], c[i].q[2], (int)j3);
                    const double e = (r1 * r2) * r3;
                    const size_t k = (j3 * os[1] + j2) * os[2] + j1;
                    const double tol = 4 * mf_u * fabs(e) + (wrap ? 2 * mf_E(variant) : 0.0);
                    double d = fabs(y[k] - e);
                    if (d != d) d = INFINITY;
                    nonzero += e != 0;
                    if (!(d <= tol) && nfail++ == 0) first = k;
                    if (d > maxe) maxe = d;
                    if (e != 0 && d / fabs(e) > maxrel) maxrel = d / fabs(e);
                }
        char at[64];
        mf_where(&p, first, at, sizeof at);
        ok(s == PK_OK && !nfail, "%s %s on %dx%dx%d, delta at (%d,%d,%d): %zu nonzero products "
           "(max abs %.2e, max rel %.2e, %zu over, first %s%s%s)", variant, c[i].what,
           c[i].n[0], c[i].n[1], c[i].n[2], c[i].q[0], c[i].q[1], c[i].q[2], nonzero, maxe, maxrel,
           nfail, at, s ? "; " : "", s ? mf_err : "");
        free(x);
        free(y);
    }
}

/* Separable == direct: the variant against the serial backend's serial-direct. */
static void mf_check_direct(const char *variant)
{
    static const int sz[][3] = {{9, 17, 5}, {3, 4, 2}, {20, 1, 6}};
    pk_context *dctx = mf_backend == PK_BACKEND_SERIAL ? mf_ctx : mf_serial_ctx;
    for (int bc = 0; bc < 3; ++bc)
        for (int tr = 0; tr < 2; ++tr)
            for (size_t i = 0; i < sizeof sz / sizeof sz[0]; ++i) {
                if (bc != PK_MF_PERIODIC && i == 0) continue; /* grown: too many direct taps */
                pk_magicfilter3d_params p = mf_params(sz[i][0], sz[i][1], sz[i][2], tr, bc);
                size_t nin, nout;
                mf_counts(&p, &nin, &nout, NULL, NULL);
                double *x = mf_alloc(nin), *yd = mf_alloc(nout), *y = mf_alloc(nout);
                mf_fill(x, nin, (unsigned)i * 6u + (unsigned)(bc * 2 + tr + 50), -1.0, 2.0);
                int s = mf_exec(dctx, "serial-direct", MF_ONESHOT, &p, x, yd, NULL);
                if (s == PK_OK) s = mf_exec(mf_ctx, variant, MF_ONESHOT, &p, x, y, NULL);
                size_t nfail = 0, first = (size_t)-1;
                double e = s == PK_OK ? mf_maxdiff(y, yd, nout, MF_TOL, &nfail, &first) : -1;
                char at[64];
                mf_where(&p, first, at, sizeof at);
                ok(s == PK_OK && !nfail, "%s equals serial-direct (the six-loop sum) on %dx%dx%d "
                   "%s %s (max abs %.2e <= %.0e, %zu over, first %s%s%s)", variant, sz[i][0],
                   sz[i][1], sz[i][2], mf_bc_name[bc], mf_tr_name[tr], e, MF_TOL, nfail, at,
                   s ? "; " : "", s ? mf_err : "");
                free(x);
                free(yd);
                free(y);
            }
}

static size_t mf_idx(const int n[3], long i1, long i2, long i3)
{
    i1 = ((i1 % n[0]) + n[0]) % n[0];
    i2 = ((i2 % n[1]) + n[1]) % n[1];
    i3 = ((i3 % n[2]) + n[2]) % n[2];
    return ((size_t)i3 * (size_t)n[1] + (size_t)i2) * (size_t)n[0] + (size_t)i1;
}

/* Periodic: y' = MF(x shifted by s) equals y = MF x shifted by s. */
static void mf_check_shift(const char *variant)
{
    static const struct { int n[3], s[3]; } c[] = {
        {{20, 17, 9}, {3, -5, 7}}, {{5, 3, 7}, {7, 1, -9}}, {{33, 2, 16}, {-1, 1, 16}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; ++i)
        for (int tr = 0; tr < 2; ++tr) {
            const int *n = c[i].n, *sh = c[i].s;
            pk_magicfilter3d_params p = mf_params(n[0], n[1], n[2], tr, PK_MF_PERIODIC);
            size_t cnt;
            mf_counts(&p, &cnt, NULL, NULL, NULL);
            double *x = mf_alloc(cnt), *xs = mf_alloc(cnt), *y = mf_alloc(cnt);
            double *ys = mf_alloc(cnt), *want = mf_alloc(cnt);
            mf_fill(x, cnt, (unsigned)i * 2u + (unsigned)(tr + 90), 0.5, 1.0);
            for (long i3 = 0; i3 < n[2]; ++i3)
                for (long i2 = 0; i2 < n[1]; ++i2)
                    for (long i1 = 0; i1 < n[0]; ++i1)
                        xs[mf_idx(n, i1, i2, i3)] = x[mf_idx(n, i1 - sh[0], i2 - sh[1], i3 - sh[2])];
            int s = mf_exec(mf_ctx, variant, MF_ONESHOT, &p, x, y, NULL);
            if (s == PK_OK) s = mf_exec(mf_ctx, variant, MF_PLAN, &p, xs, ys, NULL);
            for (long i3 = 0; i3 < n[2]; ++i3)
                for (long i2 = 0; i2 < n[1]; ++i2)
                    for (long i1 = 0; i1 < n[0]; ++i1)
                        want[mf_idx(n, i1, i2, i3)] =
                            y[mf_idx(n, i1 - sh[0], i2 - sh[1], i3 - sh[2])];
            const double tol = 2 * mf_E(variant) * 1.5;
            size_t nfail = 0, first = (size_t)-1;
            double e = s == PK_OK ? mf_maxdiff(ys, want, cnt, tol, &nfail, &first) : -1;
            char at[64];
            mf_where(&p, first, at, sizeof at);
            ok(s == PK_OK && !nfail, "%s %s shift equivariance on %dx%dx%d periodic, shift "
               "(%d,%d,%d): %s(shifted x) = shifted %s x (max abs %.2e <= %.2e, first %s%s%s)",
               variant, mf_tr_name[tr], n[0], n[1], n[2], sh[0], sh[1], sh[2], mf_tr_name[tr],
               mf_tr_name[tr], e, tol, at,
               s ? "; " : "", s ? mf_err : "");
            free(x);
            free(xs);
            free(y);
            free(ys);
            free(want);
        }
}

/* ---- 3. plans --------------------------------------------------------------------------- */
/* plan_execute on the caller's arrays, for each boundary mode (grow: y longer than x, so w1
 * is y; shrink: shorter) with x and y 64-byte aligned and with both off it: the reference's
 * y, x unchanged; on the host backends neither case copies anything (transfer_s 0: the
 * passes take any double's address).
 * Afterwards the plan has no resident x (PK_ESTATE until the next upload). */
static void mf_check_execute(const char *variant)
{
    static const int bcs[3] = {PK_MF_PERIODIC, PK_MF_GROW, PK_MF_SHRINK};
    const int host = mf_backend == PK_BACKEND_SERIAL || mf_backend == PK_BACKEND_OPENMP;
    for (int b = 0; b < 3; ++b) {
        pk_magicfilter3d_params p = mf_params(11, 10, 9, b == 1, bcs[b]);
        size_t nin, nout;
        mf_counts(&p, &nin, &nout, NULL, NULL);
        pk_magicfilter3d_plan *plan = NULL;
        int s = pk_magicfilter3d_plan_create(&plan, mf_ctx, &p, variant, NULL);
        double *xb = NULL, *yb = NULL, *r = mf_alloc(nout), *keep = mf_alloc(nin);
        if (s == PK_OK && (posix_memalign((void **)&xb, 64, (nin + 8) * sizeof(double)) ||
                           posix_memalign((void **)&yb, 64, (nout + 8) * sizeof(double))))
            s = PK_ENOMEM;
        for (int a = 0; a < 2 && s == PK_OK; ++a) {
            double *x = xb + (a ? 1 : 0), *y = yb + (a ? 1 : 0);
            mf_fill(x, nin, 300 + (unsigned)(3 * b + a), -1.0, 2.0);
            memcpy(keep, x, nin * sizeof(double));
            pk_magicfilter3d_reference(&p, x, r);
            pk_run_info info;
            memset(&info, 0, sizeof info);
            s = pk_magicfilter3d_plan_execute(plan, x, y, &info);
            const double e = s == PK_OK ? mf_maxdiff(y, r, nout, MF_TOL, NULL, NULL) : -1;
            ok(s == PK_OK && e <= MF_TOL && memcmp(x, keep, nin * sizeof(double)) == 0 &&
                   (!host || info.transfer_s == 0),
               "%s plan_execute, bc %d, %s arrays: the reference's y (max abs diff %.2e), x "
               "unchanged, transfer %.2e s%s%s%s", variant, bcs[b], a ? "unaligned" : "aligned",
               e, info.transfer_s, host ? " (must be 0)" : "", s ? "; " : "",
               s ? pk_last_error() : "");
        }
        const int st = s == PK_OK ? pk_magicfilter3d_plan_run(plan, NULL) : s;
        ok(st == PK_ESTATE, "%s bc %d: after plan_execute, plan_run without an upload -> "
           "PK_ESTATE (got %s)", variant, bcs[b], pk_status_name(st));
        pk_magicfilter3d_plan_destroy(plan);
        free(xb);
        free(yb);
        free(r);
        free(keep);
    }
}

/* x[0..n) == y[0..n) bitwise.  Not inlined: GCC 12 with -fsanitize=address inlined the
 * memcmp into mf_check_line_offsets and warned of a bound of 2^64 - 128 bytes on a path
 * that does not exist (-Wstringop-overread). */
static __attribute__((noinline)) int mf_same(const double *x, const double *y, size_t n)
{
    return memcmp(x, y, n * sizeof *x) == 0;
}

/* The one-shot call on caller arrays at every double's offset from a 64-byte line (malloc's
 * and numpy's 16 bytes among them), on grids whose passes are >= 2 MiB (the simd pass's
 * streaming stores; its line groups start where y's rows start a line, the lines before
 * that go through its scratch block) and whose output rows alternate between two
 * alignments 32 bytes apart (66 x 62 x 66: n2 n3, n3 n1 and n1 n2 are 4 mod 8) or share one
 * (64 x 64 x 66); OpenMP also on 3 threads (shares cut at odd places).  Against the
 * reference, nothing copied, no double before or after y written, x unchanged. */
static void mf_check_line_offsets(const char *variant)
{
    static const int shapes[2][4] = {{66, 62, 66, 0}, {64, 64, 66, 1}}; /* n1 n2 n3 transpose */
    const int host = mf_backend == PK_BACKEND_SERIAL || mf_backend == PK_BACKEND_OPENMP;
    if (!host || mf_is_direct(variant)) return;
    pk_context *ctx3 = NULL;
    if (mf_backend == PK_BACKEND_OPENMP) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = mf_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = 3;
        if (pk_context_create(&ctx3, &opt) != PK_OK) ctx3 = NULL;
    }
    for (int c = 0; c < 2; ++c) {
        pk_magicfilter3d_params p = mf_params(shapes[c][0], shapes[c][1], shapes[c][2],
                                              shapes[c][3], PK_MF_PERIODIC);
        size_t n;
        mf_counts(&p, &n, NULL, NULL, NULL);
        double *xb = NULL, *yb = NULL, *r = mf_alloc(n), *src = mf_alloc(n);
        mf_fill(src, n, 700 + (unsigned)c, -1.0, 2.0);
        int s = posix_memalign((void **)&xb, 64, (n + 8) * sizeof(double)) ||
                        posix_memalign((void **)&yb, 64, (n + 16) * sizeof(double))
                    ? PK_ENOMEM
                    : pk_magicfilter3d_reference(&p, src, r);
        double worst = 0;
        int good = s == PK_OK;
        char why[512] = "";
        for (int a = 0; a < 8 && s == PK_OK; ++a)
            for (int k = 0; k < (ctx3 ? 2 : 1); ++k) {
                double *x = xb + (a + 3) % 8, *y = yb + 4 + a; /* 4 guard doubles before y */
                memcpy(x, src, n * sizeof(double));
                for (size_t i = 0; i < n + 16; ++i) yb[i] = MF_SENTINEL;
                for (size_t i = 0; i < n; ++i) y[i] = NAN;
                pk_run_info info;
                memset(&info, 0, sizeof info);
                const int st = pk_magicfilter3d(k ? ctx3 : mf_ctx, &p, variant, x, y, &info);
                size_t nfail = 0, outside = 0;
                const double e = st == PK_OK ? mf_maxdiff(y, r, n, MF_TOL, &nfail, NULL) : -1;
                for (size_t i = 0; i < n + 16; ++i)
                    outside += (yb + i < y || yb + i >= y + n) && yb[i] != MF_SENTINEL;
                const int xsame = mf_same(x, src, n);
                if (st != PK_OK || nfail || outside || info.transfer_s != 0 || !xsame) {
                    size_t l = strlen(why);
                    snprintf(why + l, sizeof why - l, "; y %d doubles off a line%s: %s, %zu over, "
                             "%zu written outside, transfer %.2e%s", a, k ? ", 3 threads" : "",
                             st ? pk_last_error() : "ok", nfail, outside, info.transfer_s,
                             xsame ? "" : ", x modified");
                    good = 0;
                }
                if (e > worst) worst = e;
            }
        ok(good, "%s %dx%dx%d periodic %s, one-shot on x and y 0..7 doubles off a 64-byte line%s:"
           " the reference's y (max abs %.2e <= %.0e), nothing copied, nothing written outside "
           "y%s", variant, shapes[c][0], shapes[c][1], shapes[c][2], mf_tr_name[shapes[c][3]],
           ctx3 ? " (the default team and 3 threads)" : "", worst, MF_TOL, why);
        free(xb);
        free(yb);
        free(r);
        free(src);
    }
    pk_context_destroy(ctx3);
}

static void mf_check_plan(const char *variant)
{
    const int n1 = 13, n2 = 9, n3 = 7;
    pk_magicfilter3d_params p = mf_params(n1, n2, n3, 0, PK_MF_PERIODIC);
    size_t n;
    mf_counts(&p, &n, NULL, NULL, NULL);
    double *x1 = mf_alloc(n), *x2 = mf_alloc(n), *r1 = mf_alloc(n), *r2 = mf_alloc(n);
    double *y = mf_alloc(n), *again = mf_alloc(n);
    mf_fill(x1, n, 201, 0.5, 1.0);
    mf_fill(x2, n, 202, -1.0, 2.0);
    pk_magicfilter3d_reference(&p, x1, r1);
    pk_magicfilter3d_reference(&p, x2, r2);

    pk_magicfilter3d_plan *plan = NULL;
    pk_run_info cinfo, info;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&info, 0, sizeof info);
    int s = pk_magicfilter3d_plan_create(&plan, mf_ctx, &p, variant, &cinfo);
    ok(s == PK_OK && plan && mf_info_ok(&cinfo, variant),
       "%s plan_create: the info names backend %s and variant %s (got %s, %s on '%s'%s%s)",
       variant, pk_backend_name(mf_backend), variant, pk_backend_name(cinfo.backend),
       cinfo.variant, cinfo.device_name, s ? "; " : "", s ? pk_last_error() : "");
    if (s != PK_OK) {
        free(x1); free(x2); free(r1); free(r2); free(y); free(again);
        return;
    }
    int st = pk_magicfilter3d_plan_run(plan, NULL);
    ok(st == PK_ESTATE && pk_last_error()[0], "%s plan_run before any upload -> PK_ESTATE (got %s: "
       "\"%s\")", variant, pk_status_name(st), pk_last_error());
    st = pk_magicfilter3d_plan_download(plan, y);
    ok(st == PK_ESTATE && pk_last_error()[0], "%s plan_download before any upload -> PK_ESTATE "
       "(got %s: \"%s\")", variant, pk_status_name(st), pk_last_error());
    s = pk_magicfilter3d_plan_upload(plan, x1);
    st = s == PK_OK ? pk_magicfilter3d_plan_download(plan, y) : s;
    ok(st == PK_ESTATE && pk_last_error()[0], "%s plan_download after upload, before run -> "
       "PK_ESTATE (got %s: \"%s\")", variant, pk_status_name(st), pk_last_error());

    if (s == PK_OK) s = pk_magicfilter3d_plan_run(plan, &info);
    if (s == PK_OK) s = pk_magicfilter3d_plan_download(plan, y);
    double e1 = s == PK_OK ? mf_maxdiff(y, r1, n, MF_TOL, NULL, NULL) : -1;
    ok(s == PK_OK && e1 <= MF_TOL, "%s plan: upload, run, download equals the reference (max abs "
       "%.2e%s%s)", variant, e1, s ? "; " : "", s ? pk_last_error() : "");
    const double flops = 96.0 * n1 * n2 * n3;
    ok(s == PK_OK && mf_info_ok(&info, variant) && info.flops == flops && info.bytes > 0 &&
           info.kernel_s >= 0 && info.wall_s >= 0,
       "%s plan_run info: backend %s, variant %s, flops %.0f = 96 n1 n2 n3 = %.0f, bytes %.0f, "
       "kernel %.2e s", variant, pk_backend_name(info.backend), info.variant, info.flops, flops,
       info.bytes, info.kernel_s);
    /* Run again on the same upload: x is kept, the result repeats. */
    if (s == PK_OK) s = pk_magicfilter3d_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_magicfilter3d_plan_download(plan, again);
    ok(s == PK_OK && memcmp(y, again, n * sizeof(double)) == 0,
       "%s plan: running twice on one upload gives the same bits (max abs diff %.2e%s%s)",
       variant, s == PK_OK ? mf_maxdiff(y, again, n, 0, NULL, NULL) : -1.0, s ? "; " : "",
       s ? pk_last_error() : "");
    /* A second x: a new result; download before its run is refused. */
    if (s == PK_OK) s = pk_magicfilter3d_plan_upload(plan, x2);
    st = s == PK_OK ? pk_magicfilter3d_plan_download(plan, y) : s;
    ok(st == PK_ESTATE, "%s plan_download after a new upload, before its run -> PK_ESTATE (got "
       "%s: \"%s\")", variant, pk_status_name(st), pk_last_error());
    if (s == PK_OK) s = pk_magicfilter3d_plan_run(plan, NULL);
    if (s == PK_OK) s = pk_magicfilter3d_plan_download(plan, y);
    double e2 = s == PK_OK ? mf_maxdiff(y, r2, n, MF_TOL, NULL, NULL) : -1;
    double e21 = s == PK_OK ? mf_maxdiff(y, r1, n, 0, NULL, NULL) : -1;
    ok(s == PK_OK && e2 <= MF_TOL && e21 > 0.1,
       "%s plan: a second upload gives the new result (max abs vs its reference %.2e, vs the "
       "first result %.2e%s%s)", variant, e2, e21, s ? "; " : "", s ? pk_last_error() : "");
    pk_magicfilter3d_plan_destroy(plan);
    pk_magicfilter3d_plan_destroy(NULL);

    /* Free boundaries: 32 flops per output point and pass. */
    for (int bc = PK_MF_GROW; bc <= PK_MF_SHRINK; ++bc) {
        pk_magicfilter3d_params q = mf_params(4, 3, 2, 1, bc);
        const int g = bc == PK_MF_GROW ? 15 : -15, i1 = 4 + (bc == PK_MF_SHRINK ? 15 : 0),
                  i2 = 3 + (bc == PK_MF_SHRINK ? 15 : 0), i3 = 2 + (bc == PK_MF_SHRINK ? 15 : 0);
        const double o1 = i1 + g, o2 = i2 + g, o3 = i3 + g;
        const double want = 32.0 * (o1 * i2 * i3 + o1 * o2 * i3 + o1 * o2 * o3);
        size_t nin, nout;
        mf_counts(&q, &nin, &nout, NULL, NULL);
        double *xq = mf_alloc(nin), *yq = mf_alloc(nout);
        mf_fill(xq, nin, 7, 0.5, 1.0);
        memset(&info, 0, sizeof info);
        s = mf_exec(mf_ctx, variant, MF_ONESHOT, &q, xq, yq, &info);
        ok(s == PK_OK && info.flops == want && mf_info_ok(&info, variant),
           "%s one-shot info, 4x3x2 %s MFT: flops %.0f = 32 per output point and pass = %.0f%s%s",
           variant, mf_bc_name[bc], info.flops, want, s ? "; " : "", s ? mf_err : "");
        free(xq);
        free(yq);
    }

    free(x1);
    free(x2);
    free(r1);
    free(r2);
    free(y);
    free(again);
}

/* ---- 4. bad input (serial suite) -------------------------------------------------------- */
static void mf_expect(int got, int want, const char *needle, const char *what)
{
    const char *e = pk_last_error();
    ok(got == want && e[0] && (!needle || strstr(e, needle)), "%s -> %s (got %s: \"%s\")", what,
       pk_status_name(want), pk_status_name(got), e);
}

/* p through the four validating entry points: one-shot, reference, shapes, plan_create. */
static void mf_expect_all(const pk_magicfilter3d_params *p, int want, const char *needle,
                          const char *what)
{
    static double xs[64], ys[64];
    size_t is[3], os[3];
    char msg[4][300];
    int got[4];
    pk_magicfilter3d_plan *plan = (pk_magicfilter3d_plan *)&xs; /* must come back NULL */
    got[0] = pk_magicfilter3d(mf_ctx, p, NULL, xs, ys, NULL);
    snprintf(msg[0], sizeof msg[0], "%s", pk_last_error());
    got[1] = pk_magicfilter3d_reference(p, xs, ys);
    snprintf(msg[1], sizeof msg[1], "%s", pk_last_error());
    got[2] = pk_magicfilter3d_shapes(p, is, os);
    snprintf(msg[2], sizeof msg[2], "%s", pk_last_error());
    got[3] = pk_magicfilter3d_plan_create(&plan, mf_ctx, p, NULL, NULL);
    snprintf(msg[3], sizeof msg[3], "%s", pk_last_error());
    int good = plan == NULL;
    for (int i = 0; i < 4; ++i) good &= got[i] == want && msg[i][0] && strstr(msg[i], needle);
    ok(good, "%s -> %s from pk_magicfilter3d, _reference, _shapes, _plan_create (got %s %s %s %s"
       "%s: \"%s\")", what, pk_status_name(want), pk_status_name(got[0]), pk_status_name(got[1]),
       pk_status_name(got[2]), pk_status_name(got[3]), plan ? ", plan not NULLed" : "", msg[0]);
    if (got[3] == PK_OK) pk_magicfilter3d_plan_destroy(plan);
}

static void mf_check_errors(void)
{
    static double xs[64], ys[64];
    pk_magicfilter3d_params p = mf_params(2, 2, 2, 0, PK_MF_PERIODIC), q;
    size_t is[3], os[3];
    mf_expect(pk_magicfilter3d(NULL, &p, NULL, xs, ys, NULL), PK_ENULL, "ctx", "one-shot: NULL ctx");
    mf_expect(pk_magicfilter3d(mf_ctx, NULL, NULL, xs, ys, NULL), PK_ENULL, "p", "one-shot: NULL params");
    mf_expect(pk_magicfilter3d(mf_ctx, &p, NULL, NULL, ys, NULL), PK_ENULL, "x", "one-shot: NULL x");
    mf_expect(pk_magicfilter3d(mf_ctx, &p, NULL, xs, NULL, NULL), PK_ENULL, "y", "one-shot: NULL y");
    mf_expect(pk_magicfilter3d_reference(NULL, xs, ys), PK_ENULL, "p", "reference: NULL params");
    mf_expect(pk_magicfilter3d_reference(&p, NULL, ys), PK_ENULL, "x", "reference: NULL x");
    mf_expect(pk_magicfilter3d_reference(&p, xs, NULL), PK_ENULL, "y", "reference: NULL y");
    mf_expect(pk_magicfilter3d_shapes(NULL, is, os), PK_ENULL, "p", "shapes: NULL params");
    pk_magicfilter3d_plan *plan = NULL;
    mf_expect(pk_magicfilter3d_plan_create(NULL, mf_ctx, &p, NULL, NULL), PK_ENULL, "plan",
              "plan_create: NULL plan pointer");
    mf_expect(pk_magicfilter3d_plan_create(&plan, NULL, &p, NULL, NULL), PK_ENULL, "ctx",
              "plan_create: NULL ctx");
    mf_expect(pk_magicfilter3d_plan_create(&plan, mf_ctx, NULL, NULL, NULL), PK_ENULL, "p",
              "plan_create: NULL params");
    mf_expect(pk_magicfilter3d_plan_upload(NULL, xs), PK_ENULL, "plan", "plan_upload: NULL plan");
    mf_expect(pk_magicfilter3d_plan_run(NULL, NULL), PK_ENULL, "plan", "plan_run: NULL plan");
    mf_expect(pk_magicfilter3d_plan_download(NULL, ys), PK_ENULL, "plan",
              "plan_download: NULL plan");
    int s = pk_magicfilter3d_plan_create(&plan, mf_ctx, &p, NULL, NULL);
    if (s == PK_OK) {
        mf_expect(pk_magicfilter3d_plan_upload(plan, NULL), PK_ENULL, "x", "plan_upload: NULL x");
        s = pk_magicfilter3d_plan_upload(plan, xs);
        if (s == PK_OK) s = pk_magicfilter3d_plan_run(plan, NULL);
        mf_expect(s == PK_OK ? pk_magicfilter3d_plan_download(plan, NULL) : s, PK_ENULL, "y",
                  "plan_download: NULL y (after a run)");
        pk_magicfilter3d_plan_destroy(plan);
    } else {
        ok(0, "plan_create on a valid 2x2x2 (%s)", pk_last_error());
    }

    static const int bad[] = {0, -1, INT_MIN};
    static const char *const axis[3] = {"n1", "n2", "n3"};
    for (int a = 0; a < 3; ++a)
        for (size_t v = 0; v < sizeof bad / sizeof bad[0]; ++v) {
            char what[64];
            q = mf_params(2, 2, 2, 0, (int)v % 3);
            if (a == 0) q.n1 = bad[v];
            if (a == 1) q.n2 = bad[v];
            if (a == 2) q.n3 = bad[v];
            snprintf(what, sizeof what, "%s = %d (%s)", axis[a], bad[v], mf_bc_name[v % 3]);
            mf_expect_all(&q, PK_ESIZE, axis[a], what);
        }
    q = mf_params(2000000000, 2000000000, 2000000000, 0, PK_MF_PERIODIC);
    mf_expect_all(&q, PK_EOVERFLOW, "overflow", "2000000000^3 (bytes overflow size_t)");
    q = mf_params(1 << 20, 1 << 20, 1 << 20, 1, PK_MF_SHRINK);
    mf_expect_all(&q, PK_EOVERFLOW, "overflow", "2^20 x 2^20 x 2^20 shrink ((n+15)^3 doubles overflow)");
    q = mf_params(INT_MAX, 1, 1, 0, PK_MF_GROW);
    mf_expect_all(&q, PK_EOVERFLOW, "n1", "n1 = INT_MAX grow (n1 + 15 overflows int)");
    q = mf_params(2, 2, 2, 2, PK_MF_PERIODIC);
    mf_expect_all(&q, PK_EINVAL, "transpose", "transpose = 2");
    q = mf_params(2, 2, 2, -1, PK_MF_PERIODIC);
    mf_expect_all(&q, PK_EINVAL, "transpose", "transpose = -1");
    q = mf_params(2, 2, 2, 0, 3);
    mf_expect_all(&q, PK_EINVAL, "bc", "bc = 3");
    q = mf_params(2, 2, 2, 0, -1);
    mf_expect_all(&q, PK_EINVAL, "bc", "bc = -1");

    mf_expect(pk_magicfilter3d(mf_ctx, &p, "warp-drive", xs, ys, NULL), PK_ENOVARIANT,
              "warp-drive", "one-shot: unknown variant 'warp-drive'");
    plan = (pk_magicfilter3d_plan *)&xs;
    mf_expect(pk_magicfilter3d_plan_create(&plan, mf_ctx, &p, "warp-drive", NULL), PK_ENOVARIANT,
              "warp-drive", "plan_create: unknown variant 'warp-drive'");
    ok(plan == NULL, "plan_create leaves *plan NULL on failure");
    mf_expect(pk_magicfilter3d(mf_ctx, &p, "omp", xs, ys, NULL), PK_ENOVARIANT, "serial",
              "one-shot: variant 'omp' of another backend on a context forcing serial");

    /* The reference does not work in place: y must not overlap x. */
    mf_expect(pk_magicfilter3d_reference(&p, xs, xs), PK_EINVAL, "overlap", "reference: y == x");
    mf_expect(pk_magicfilter3d_reference(&p, xs, xs + 5), PK_EINVAL, "overlap",
              "reference: y = x + 5 (8 points: partial overlap)");
    mf_expect(pk_magicfilter3d_reference(&p, xs + 5, xs), PK_EINVAL, "overlap",
              "reference: x = y + 5 (partial overlap)");
    q = mf_params(1, 1, 1, 0, PK_MF_SHRINK); /* x 16^3, y 1 point inside it */
    double *big = mf_alloc(4096);
    memset(big, 0, 4096 * sizeof(double));
    mf_expect(pk_magicfilter3d_reference(&q, big, big + 4095), PK_EINVAL, "overlap",
              "reference: shrink, y on x's last element");
    free(big);
    for (int i = 0; i < 8; ++i) xs[i] = 1.0;
    s = pk_magicfilter3d_reference(&p, xs, xs + 8);
    ok(s == PK_OK && fabs(xs[8] - 1.0) <= 1e-15, "reference: y right after x (adjacent, no "
       "overlap) is accepted (%s, y[0] - 1 = %.2e)", pk_status_name(s), xs[8] - 1.0);

    ok(pk_magicfilter3d_variants(PK_BACKEND_AUTO) && pk_magicfilter3d_variants(PK_BACKEND_COUNT) &&
           !pk_magicfilter3d_variants(PK_BACKEND_COUNT)[0],
       "pk_magicfilter3d_variants of auto / an out-of-range id: not NULL, '' for the bad id");
}

/* ---- ISA settings and thread counts --------------------------------------------------- */
static const int mf_isa_sizes[][3] = {{1, 1, 1}, {7, 5, 3},   {9, 17, 33}, {33, 9, 18},
                                      {17, 16, 20}, {2, 1, 37}, {16, 32, 3}};

/* The variant under each value of a tuning parameter that selects its code path
 * (magicfilter3d.isa for simd / omp, magicfilter3d.cl_scheme for opencl, read at plan
 * creation), and at its default. */
static void mf_check_env(const char *variant, const char *name, const char *const *values,
                         int nvalues)
{
    pk_device_info di;
    memset(&di, 0, sizeof di);
    pk_device_get_info(mf_ctx, mf_backend, 0, &di);
    tap_diag("%s on '%s' (SIMD level %s)", variant, di.name, di.simd[0] ? di.simd : "-");
    for (int k = 0; k <= nvalues; ++k) {
        pk_context_set_param(mf_ctx, name, k < nvalues ? values[k] : NULL);
        char label[96];
        snprintf(label, sizeof label, " under %s=%s", name, k < nvalues ? values[k] : "(default)");
        for (size_t i = 0; i < sizeof mf_isa_sizes / sizeof mf_isa_sizes[0]; ++i)
            mf_check_size_all(mf_ctx, variant, mf_isa_sizes[i], label);
    }
}

/* OpenMP with more threads than lines on small grids, and an odd count. */
static void mf_check_threads(const char *variant)
{
    static const int nts[] = {3, 7};
    for (size_t t = 0; t < sizeof nts / sizeof nts[0]; ++t) {
        pk_context_options opt;
        pk_context_options_init(&opt);
        opt.backend = mf_backend;
        opt.flags = PK_OPT_IGNORE_ENV;
        opt.threads = nts[t];
        pk_context *ctx;
        if (pk_context_create(&ctx, &opt) != PK_OK) {
            ok(0, "context with %d threads: %s", nts[t], pk_last_error());
            continue;
        }
        char label[64];
        snprintf(label, sizeof label, " on %d threads", nts[t]);
        for (size_t i = 0; i < sizeof mf_isa_sizes / sizeof mf_isa_sizes[0]; ++i)
            mf_check_size_all(ctx, variant, mf_isa_sizes[i], label);
        pk_context_destroy(ctx);
    }
}

/* ---- the suite -------------------------------------------------------------------------- */
static pk_context *mf_context(pk_backend_id backend);

/* pk_magicfilter_pass: three passes, each on the previous one's output with the axes rotated,
 * equal pk_magicfilter3d of the same variant bit for bit (every bc, MF and MFT, sizes around
 * the pass's chunk and group edges, an unaligned y); the third pass alone over a part of the
 * lines equals those lines of a whole pass (libportkern-mpi's transposes run it so). */
static void mf_check_pass(const char *variant)
{
    static const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {17, 33, 9}, {40, 3, 24}, {112, 2, 21}};
    int bad = 0, runs = 0;
    char what[200] = "";
    for (int si = 0; si < 5; ++si)
        for (int c = 0; c < 6; ++c) {
            const int tr = c & 1, bc = c >> 1, *n = sizes[si];
            pk_magicfilter3d_params p = mf_params(n[0], n[1], n[2], tr, bc);
            size_t nin, nout, ins[3], outs[3];
            mf_counts(&p, &nin, &nout, NULL, NULL);
            pk_magicfilter3d_shapes(&p, ins, outs); /* [0]: the n3 side */
            const size_t w1 = outs[2] * ins[1] * ins[0], w2 = outs[2] * outs[1] * ins[0];
            double *x = mf_alloc(nin), *y = mf_alloc(nout), *a = mf_alloc(w1 + 1),
                   *b = mf_alloc(w2), *z = mf_alloc(nout + 1);
            mf_fill(x, nin, 700 + (unsigned)(si * 6 + c), -1.0, 2.0);
            int s = pk_magicfilter3d(mf_ctx, &p, variant, x, y, NULL);
            /* pass k along the axis of n[k], over the other two (input) extents' lines */
            pk_magicfilter_pass_params q = {n[0], ins[1] * ins[0], tr, bc};
            if (s == PK_OK) s = pk_magicfilter_pass(mf_ctx, &q, variant, x, a + 1, NULL);
            q.n = n[1], q.lines = ins[0] * outs[2];
            if (s == PK_OK) s = pk_magicfilter_pass(mf_ctx, &q, variant, a + 1, b, NULL);
            q.n = n[2], q.lines = outs[2] * outs[1];
            if (s == PK_OK) s = pk_magicfilter_pass(mf_ctx, &q, variant, b, z + 1, NULL);
            int same = s == PK_OK && mf_same(y, z + 1, nout);
            /* the last pass over lines [l0, l1) only: those columns of its output */
            const size_t L = q.lines, l0 = L / 3, l1 = L - L / 4;
            if (same && l1 > l0) {
                pk_magicfilter_pass_params r = q;
                r.lines = l1 - l0;
                double *part = mf_alloc(outs[0] * r.lines);
                s = pk_magicfilter_pass(mf_ctx, &r, variant, b + l0 * ins[0], part, NULL);
                for (size_t j = 0; s == PK_OK && same && j < outs[0]; ++j)
                    same = mf_same(part + j * r.lines, y + j * L + l0, r.lines);
                free(part);
            }
            ++runs;
            if (!same && !bad++)
                snprintf(what, sizeof what, "; first: %dx%dx%d %s %s%s%s", n[0], n[1], n[2],
                         mf_tr_name[tr], mf_bc_name[bc], s ? ": " : "", s ? pk_last_error() : "");
            free(x);
            free(y);
            free(a);
            free(b);
            free(z);
        }
    ok(bad == 0, "%s: three pk_magicfilter_pass calls == pk_magicfilter3d bitwise, and a pass "
       "over part of the lines == those columns (%d of %d cases differ%s)", variant, bad, runs,
       what);
}

/* pk_magicfilter_pass's bad input. */
static void mf_check_pass_errors(void)
{
    pk_context *ctx = mf_context(PK_BACKEND_SERIAL);
    double x[64] = {0}, y[64];
    const pk_magicfilter_pass_params good = {16, 2, 0, PK_MF_PERIODIC};
    struct {
        pk_magicfilter_pass_params p;
        const char *variant;
        const double *x;
        double *y;
        int want;
        const char *what;
    } cases[] = {
        {{0, 2, 0, PK_MF_PERIODIC}, NULL, x, y, PK_ESIZE, "n 0"},
        {{16, 0, 0, PK_MF_PERIODIC}, NULL, x, y, PK_ESIZE, "lines 0"},
        {{16, 2, 2, PK_MF_PERIODIC}, NULL, x, y, PK_EINVAL, "transpose 2"},
        {{16, 2, 0, 3}, NULL, x, y, PK_EINVAL, "bc 3"},
        {{2000000000, (size_t)1 << 62, 0, PK_MF_PERIODIC}, NULL, x, y, PK_EOVERFLOW,
         "bytes overflow"},
        {good, NULL, NULL, y, PK_ENULL, "x NULL"},
        {good, NULL, x, NULL, PK_ENULL, "y NULL"},
        {good, NULL, x, (double *)x + 8, PK_EINVAL, "y overlapping x"},
        {good, "serial-direct", x, y, PK_ENOVARIANT, "variant serial-direct (no pass)"},
        {good, "opencl", x, y, PK_ENOVARIANT, "variant opencl"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int s = pk_magicfilter_pass(ctx, &cases[i].p, cases[i].variant, cases[i].x,
                                          cases[i].y, NULL);
        ok(s == cases[i].want, "pk_magicfilter_pass, %s -> %s (got %s: %s)", cases[i].what,
           pk_status_name(cases[i].want), pk_status_name(s), pk_last_error());
    }
    const int s = pk_magicfilter_pass(NULL, &good, NULL, x, y, NULL);
    ok(s == PK_ENULL, "pk_magicfilter_pass, ctx NULL -> PK_ENULL (got %s)", pk_status_name(s));
    pk_context_destroy(ctx);
}

static pk_context *mf_context(pk_backend_id backend)
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
static int mf_run_suite(pk_backend_id backend)
{
    mf_ctx = mf_context(backend);
    mf_backend = backend;
    const char *why;
    char msg[600];
    if (!pk_backend_available(mf_ctx, backend, &why)) {
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(mf_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_magicfilter3d_variants(backend));
    if (!variants[0]) {
        snprintf(msg, sizeof msg, "%s backend has no magicfilter3d variant (yet)",
                 pk_backend_name(backend));
        pk_context_destroy(mf_ctx);
        tap_skip_all(msg);
    }
    if (backend != PK_BACKEND_SERIAL && backend != PK_BACKEND_OPENMP) {
        pk_magicfilter3d_params p1 = mf_params(1, 1, 1, 0, PK_MF_PERIODIC);
        double one = 1.0, out = 0.0;
        if (pk_magicfilter3d(mf_ctx, &p1, NULL, &one, &out, NULL) == PK_EUNSUPPORTED) {
            snprintf(msg, sizeof msg, "%s: %s", pk_backend_name(backend), pk_last_error());
            pk_context_destroy(mf_ctx);
            tap_skip_all(msg);
        }
    }
    mf_u = DBL_EPSILON / 2;
    mf_A = 0;
    for (int k = 0; k < 16; ++k) mf_A += fabs(mf_spec_taps[k]);
    const double gamma16 = 16 * mf_u / (1 - 16 * mf_u);
    mf_E_sep = 3 * gamma16 * mf_A * mf_A * mf_A;
    mf_E_dir = 256 * mf_u * mf_A * mf_A * mf_A;
    tap_diag("sum |f| = %.6f, E_sep = %.3e, E_dir = %.3e per unit max|x|; tolerance vs the "
             "reference %.0e", mf_A, mf_E_sep, mf_E_dir, MF_TOL);
    if (backend != PK_BACKEND_SERIAL) mf_serial_ctx = mf_context(PK_BACKEND_SERIAL);

    if (backend == PK_BACKEND_SERIAL) {
        mf_check_taps();
        mf_check_shapes();
        static const char *const want[] = {"simd", "unrolled", "serial", "serial-direct"};
        int all = 1;
        for (int i = 0; i < 4; ++i) {
            char pad[300];
            snprintf(pad, sizeof pad, ",%s,", variants);
            char w[40];
            snprintf(w, sizeof w, ",%s,", want[i]);
            all &= strstr(pad, w) != NULL;
        }
        ok(all, "serial variants include simd, unrolled, serial, serial-direct (%s)", variants);
        mf_check_impulse("reference");
        mf_check_errors();
        mf_check_pass_errors();
    }

    char list[256];
    snprintf(list, sizeof list, "%s", variants);
    for (char *v = strtok(list, ","); v; v = strtok(NULL, ",")) {
        mf_check_reference(v);
        mf_check_constant(v);
        mf_check_adjoint(v);
        mf_check_impulse(v);
        mf_check_direct(v);
        mf_check_shift(v);
        mf_check_plan(v);
        mf_check_execute(v);
        mf_check_line_offsets(v);
        if (backend == PK_BACKEND_SERIAL ? !mf_is_direct(v) : backend == PK_BACKEND_OPENMP)
            mf_check_pass(v);
        if (strcmp(v, "simd") == 0 || strcmp(v, "omp") == 0) {
            static const char *const isa[] = {"avx512", "avx2", "generic"};
            mf_check_env(v, "magicfilter3d.isa", isa, 3);
        }
        if (strcmp(v, "opencl") == 0) {
            static const char *const scheme[] = {"tile", "vec"};
            mf_check_env(v, "magicfilter3d.cl_scheme", scheme, 2);
        }
        if (backend == PK_BACKEND_OPENMP) mf_check_threads(v);
    }

    /* No variant named: the backend's first. */
    char first[256];
    snprintf(first, sizeof first, "%s", variants);
    first[strcspn(first, ",")] = '\0';
    pk_magicfilter3d_params p = mf_params(13, 9, 7, 0, PK_MF_PERIODIC);
    size_t n;
    mf_counts(&p, &n, NULL, NULL, NULL);
    double *x = mf_alloc(n), *y = mf_alloc(n), *r = mf_alloc(n);
    mf_fill(x, n, 301, 0.5, 1.0);
    pk_magicfilter3d_reference(&p, x, r);
    pk_run_info info;
    memset(&info, 0, sizeof info);
    int s = pk_magicfilter3d(mf_ctx, &p, NULL, x, y, &info);
    double e = s == PK_OK ? mf_maxdiff(y, r, n, MF_TOL, NULL, NULL) : -1;
    ok(s == PK_OK && mf_info_ok(&info, first) && e <= MF_TOL,
       "variant NULL runs the backend's first variant %s (ran %s; max abs %.2e%s%s)", first,
       info.variant, e, s ? "; " : "", s ? pk_last_error() : "");
    free(x);
    free(y);
    free(r);

    pk_context_destroy(mf_serial_ctx);
    pk_context_destroy(mf_ctx);
    return tap_done();
}
