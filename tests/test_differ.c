/* test_differ.c - every branch of the differ's rule (docs/KERNELS.md section 6), in float and
 * double, the report's figures, argument checks and pk_format_index. */
#include "portkern.h"
#include "tap.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

/* Run the float or the double differ on values given as doubles (exact in float here unless
 * a case says otherwise). */
static pk_status diff(int prec, const double *x, const double *y, size_t n, double rtol,
                      double zero, int mode, pk_diff_report *r)
{
    if (prec == 64) return pk_diff_f64(x, y, n, rtol, zero, mode, r);
    float xf[16], yf[16];
    for (size_t i = 0; i < n; ++i) {
        xf[i] = (float)x[i];
        yf[i] = (float)y[i];
    }
    return pk_diff_f32(xf, yf, n, rtol, zero, mode, r);
}

/* One element-wise case: status, failures, first failure, and the max errors (NAN: skip). */
static void check(int prec, const char *name, const double *x, const double *y, size_t n,
                  double rtol, double zero, size_t want_failed, size_t want_first,
                  double want_rel, double want_abs)
{
    pk_diff_report r;
    pk_status s = diff(prec, x, y, n, rtol, zero, PK_DIFF_ELEMENTWISE, &r);
    int good = s == (want_failed ? PK_EMISMATCH : PK_OK) && r.count == n &&
               r.num_failed == want_failed && r.first_fail == want_first &&
               r.equal == (want_failed == 0);
    if (!isnan(want_rel)) good = good && r.max_rel_err == want_rel;
    if (!isnan(want_abs)) good = good && r.max_abs_err == want_abs;
    ok(good, "f%d %s: %s, %zu failed, first %zu, rel %g, abs %g", prec, name,
       pk_status_name(s), r.num_failed, r.first_fail, r.max_rel_err, r.max_abs_err);
}

static void test_rule(int prec)
{
    const double e10 = ldexp(1.0, -10), e20 = ldexp(1.0, -20);
    {
        double x[4] = {1, -2, 0, 1e-3}, y[4] = {1, -2, 0, 1e-3};
        check(prec, "identical arrays", x, y, 4, 1e-5, 1e-10, 0, NONE, 0, 0);
    }
    {   /* |x| > zero: the error is relative to x (0.5 against x, 1.0 against y) */
        double x[1] = {2}, y[1] = {1};
        check(prec, "x above zero: |x-y|/|x| = 0.5 <= 0.75", x, y, 1, 0.75, 1e-10, 0, NONE,
              0.5, 1);
        check(prec, "x above zero: 0.5 > 0.25 fails", x, y, 1, 0.25, 1e-10, 1, 0, 0.5, 1);
        double x2[1] = {1}, y2[1] = {2};
        check(prec, "x above zero: |x-y|/|x| = 1 > 0.75 fails", x2, y2, 1, 0.75, 1e-10, 1, 0,
              1, 1);
    }
    {   /* |x| <= zero < |y|: relative to y; "above" is strict */
        double x[1] = {1.0}, y[1] = {1.5};
        check(prec, "only y above zero (|x| == zero): 1/3 <= 0.34", x, y, 1, 0.34, 1.0, 0, NONE,
              0.5 / 1.5, 0.5);
        check(prec, "only y above zero: 1/3 > 0.33 fails", x, y, 1, 0.33, 1.0, 1, 0,
              0.5 / 1.5, 0.5);
        double x2[2] = {0, 0}, y2[2] = {0, 4};
        check(prec, "x = 0, y = 4: rel 1 fails", x2, y2, 2, 0.5, 1e-10, 1, 1, 1, 4);
    }
    {   /* both at or below zero: ignored, no error figures */
        double x[3] = {1e-4, 0.5, 0}, y[3] = {-1e-4, -0.5, 0};
        check(prec, "both below zero: ignored", x, y, 3, 1e-5, 0.5, 0, NONE, 0, 0);
    }
    {   /* exactly at rtol passes, just below fails */
        double x[1] = {1}, y[1] = {1 + e20};
        check(prec, "rel == rtol passes", x, y, 1, e20, 1e-10, 0, NONE, e20, e20);
        check(prec, "rel just above rtol fails", x, y, 1, nextafter(e20, 0), 1e-10, 1, 0, e20,
              e20);
    }
    {   /* max abs (pair 2, relative to x = 4) and max rel (pair 3, relative to y) differ */
        double x[4] = {1, 2, 4, 1e-12}, y[4] = {1.5, 2, 3, 1};
        double tiny = prec == 32 ? (double)(float)1e-12 : 1e-12;
        check(prec, "max errors and first failure", x, y, 4, 0.3, 1e-10, 2, 0, 1.0 - tiny,
              1.0);
        double x2[8] = {1, 1, 1, 2, 1, 1, 1, 3}, y2[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        check(prec, "first failure at index 3 of 2 failures", x2, y2, 8, e10, 1e-10, 2, 3,
              2.0 / 3.0, 2);
    }
    {   /* NaN on either side fails and enters no error figure */
        double x[3] = {1, NAN, 1}, y[3] = {1, 1, 1};
        check(prec, "NaN in x", x, y, 3, 1e-5, 1e-10, 1, 1, 0, 0);
        check(prec, "NaN in y", y, x, 3, 1e-5, 1e-10, 1, 1, 0, 0);
        double x2[2] = {NAN, NAN}, y2[2] = {NAN, 2};
        check(prec, "NaN on both sides", x2, y2, 2, 1e-5, 1e-10, 2, 0, 0, 0);
    }
    {   /* infinities: equal ones are ignored, any other pairing fails */
        double x[3] = {INFINITY, -INFINITY, 1}, y[3] = {INFINITY, -INFINITY, 1};
        check(prec, "equal infinities pass, ignored", x, y, 3, 1e-5, 1e-10, 0, NONE, 0, 0);
        double x2[1] = {INFINITY}, y2[1] = {-INFINITY};
        check(prec, "+inf vs -inf fails", x2, y2, 1, 1e-5, 1e-10, 1, 0, INFINITY, INFINITY);
        double x3[2] = {1, INFINITY}, y3[2] = {1, 1e30};
        check(prec, "inf vs finite fails", x3, y3, 2, 1e-5, 1e-10, 1, 1, INFINITY, INFINITY);
        check(prec, "finite vs inf fails", y3, x2, 1, 1e-5, 1e-10, 1, 0, INFINITY, INFINITY);
    }
    {   /* n == 0, and NULL pointers with it */
        pk_diff_report r;
        pk_status s = prec == 32 ? pk_diff_f32(NULL, NULL, 0, 1e-5, 1e-10, 0, &r)
                                 : pk_diff_f64(NULL, NULL, 0, 1e-5, 1e-10, 0, &r);
        ok(s == PK_OK && r.count == 0 && r.num_failed == 0 && r.first_fail == NONE &&
               r.equal == 1 && r.norm_rel_err == 0 && r.max_rel_err == 0,
           "f%d n == 0 with NULL arrays: equal", prec);
        s = prec == 32 ? pk_diff_f32(NULL, NULL, 0, 1e-5, 1e-10, PK_DIFF_NORM, NULL)
                       : pk_diff_f64(NULL, NULL, 0, 1e-5, 1e-10, PK_DIFF_NORM, NULL);
        ok(s == PK_OK, "f%d n == 0 in norm mode, no report: PK_OK", prec);
    }
}

static void test_norm(int prec)
{
    pk_diff_report r;
    {   /* ||(0, 0.5)|| / ||(3, 4)|| = 0.1; element-wise the second pair fails (0.5/4.5) */
        double x[2] = {3, 4.5}, y[2] = {3, 4};
        pk_status s = diff(prec, x, y, 2, 0.1000001, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_OK && r.equal && fabs(r.norm_rel_err - 0.1) < 1e-15 && r.num_failed == 1 &&
               r.first_fail == 1,
           "f%d norm mode: 0.1 <= rtol passes, element-wise figures still filled (%.17g)",
           prec, r.norm_rel_err);
        s = diff(prec, x, y, 2, 0.0999999, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_EMISMATCH && !r.equal && pk_last_error()[0] != '\0',
           "f%d norm mode: 0.1 > rtol fails (%s)", prec, pk_last_error());
        s = diff(prec, x, y, 2, 0.2, 1e-10, PK_DIFF_ELEMENTWISE, &r);
        ok(s == PK_OK && r.equal && fabs(r.norm_rel_err - 0.1) < 1e-15,
           "f%d element-wise mode also reports the norm", prec);
    }
    {   /* a relatively large error on a small element: element-wise fails, norm passes */
        double x[2] = {1000, 1e-3}, y[2] = {1000, 2e-3};
        pk_status s = diff(prec, x, y, 2, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &r);
        ok(s == PK_EMISMATCH && r.num_failed == 1 && r.first_fail == 1,
           "f%d small element off by 100%% of x: element-wise fails", prec);
        s = diff(prec, x, y, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_OK && r.equal && r.norm_rel_err < 1.1e-6,
           "f%d ... but norm-wise it is %g: passes", prec, r.norm_rel_err);
    }
    {   /* ||y|| == 0 */
        double z[2] = {0, 0}, x[2] = {0, 1e-30};
        pk_status s = diff(prec, z, z, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_OK && r.norm_rel_err == 0, "f%d norm: x and y all zero -> 0, equal", prec);
        s = diff(prec, x, z, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_EMISMATCH && isinf(r.norm_rel_err) && r.norm_rel_err > 0,
           "f%d norm: y zero, x not -> +inf, not equal", prec);
    }
    {   /* NaN and unequal infinities fail norm mode; equal infinities are left out */
        double x[2] = {1, NAN}, y[2] = {1, 1};
        pk_status s = diff(prec, x, y, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_EMISMATCH && isnan(r.norm_rel_err), "f%d norm: NaN -> NaN, fails", prec);
        double x2[2] = {1, INFINITY}, y2[2] = {1, 1};
        s = diff(prec, x2, y2, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_EMISMATCH && isinf(r.norm_rel_err), "f%d norm: inf vs 1 -> inf, fails",
           prec);
        double x3[2] = {2, -INFINITY}, y3[2] = {2, -INFINITY};
        s = diff(prec, x3, y3, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
        ok(s == PK_OK && r.norm_rel_err == 0, "f%d norm: equal infinities left out", prec);
    }
    {   /* both-below-zero pairs are ignored element-wise but count in the norm */
        double x[2] = {1e-4, 1}, y[2] = {-1e-4, 1};
        pk_status s = diff(prec, x, y, 2, 1e-5, 0.5, PK_DIFF_NORM, &r);
        ok(s == PK_EMISMATCH && r.num_failed == 0 && r.norm_rel_err > 1e-4,
           "f%d norm: pairs below zero still count (%g)", prec, r.norm_rel_err);
    }
}

/* Magnitudes whose squares over- or underflow a double. */
static void test_norm_range(void)
{
    pk_diff_report r;
    double x[2] = {1.1e300, 1.1e300}, y[2] = {1e300, 1e300};
    pk_diff_f64(x, y, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
    ok(fabs(r.norm_rel_err - 0.1) < 1e-12, "f64 norm of 1e300 values: %g", r.norm_rel_err);
    double xs[2] = {1.1e-300, 1.1e-300}, ys[2] = {1e-300, 1e-300};
    pk_diff_f64(xs, ys, 2, 1e-5, 0, PK_DIFF_NORM, &r);
    ok(fabs(r.norm_rel_err - 0.1) < 1e-12, "f64 norm of 1e-300 values: %g", r.norm_rel_err);
    /* x - y overflows a double; the true figures are finite */
    double xo[2] = {DBL_MAX, 0}, yo[2] = {-DBL_MAX, 0};
    pk_status s = pk_diff_f64(xo, yo, 2, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &r);
    ok(s == PK_EMISMATCH && r.max_rel_err == 2 && isinf(r.max_abs_err) &&
           fabs(r.norm_rel_err - 2) < 1e-12,
       "f64 x - y beyond DBL_MAX: rel %g, abs %g, norm %g", r.max_rel_err, r.max_abs_err,
       r.norm_rel_err);
    float xf[2] = {FLT_MAX, FLT_MAX}, yf[2] = {-FLT_MAX, FLT_MAX};
    s = pk_diff_f32(xf, yf, 2, 1e-5, 1e-10, PK_DIFF_NORM, &r);
    ok(s == PK_EMISMATCH && fabs(r.norm_rel_err - sqrt(2.0)) < 1e-12 && r.max_rel_err == 2,
       "f32 near FLT_MAX: norm %g", r.norm_rel_err);
    /* float values are compared in double: a one-ulp float difference is exact */
    float a[1] = {1.0f}, b[1] = {1.0f + FLT_EPSILON};
    s = pk_diff_f32(a, b, 1, FLT_EPSILON, 0, PK_DIFF_ELEMENTWISE, &r);
    ok(s == PK_OK && r.max_rel_err == FLT_EPSILON, "f32 one ulp at rtol = FLT_EPSILON passes");
}

/* Long arrays (many of the differ's blocks): the report equals the rule applied pair by pair
 * here (the element-wise figures exactly, the norm to rounding), with rounding noise that
 * grows along the array (new maxima late), failures, ignored pairs, a NaN, an infinity and
 * tiny and huge magnitudes placed in some blocks. */
static void naive(const double *x, const double *y, size_t n, double rtol, double zero,
                  pk_diff_report *r)
{
    long double d2 = 0, y2 = 0;
    memset(r, 0, sizeof *r);
    r->first_fail = NONE;
    for (size_t i = 0; i < n; ++i) {
        const int nan = isnan(x[i]) || isnan(y[i]), inf = isinf(x[i]) || isinf(y[i]);
        if (nan || (inf && x[i] != y[i])) {
            if (!nan) r->max_abs_err = r->max_rel_err = INFINITY;
            if (r->num_failed++ == 0) r->first_fail = i;
            continue;
        }
        if (inf) continue; /* equal infinities */
        const double d = fabs(x[i] - y[i]), ax = fabs(x[i]), ay = fabs(y[i]);
        d2 += (long double)d * d;
        y2 += (long double)ay * ay;
        const double ref = ax > zero ? ax : ay > zero ? ay : 0;
        if (ref == 0) continue;
        if (d > r->max_abs_err) r->max_abs_err = d;
        if (d / ref > r->max_rel_err) r->max_rel_err = d / ref;
        if (d / ref > rtol && r->num_failed++ == 0) r->first_fail = i;
    }
    r->norm_rel_err = (double)sqrtl(d2 / y2);
}

/* The length read at run time: gcc 12.2 at -O3 miscompiles the tail of these conversion loops
 * when it knows the trip count (two elements of the widened copy keep the double values). */
static volatile size_t long_n = 100003;

static void test_long(int prec, const char *how)
{
    enum { NMAX = 100003 };
    static double x[NMAX], y[NMAX], xw[NMAX], yw[NMAX];
    static float xf[NMAX], yf[NMAX];
    const size_t N = long_n;
    unsigned long long st = 12345;
    for (size_t i = 0; i < N; ++i) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(st >> 11) * 0x1p-53, v = (double)((st >> 3) & 0xff) / 256;
        x[i] = (u - 0.5) * 8;
        y[i] = x[i] * (1 + (v - 0.5) * 1e-7 * (double)i / N); /* new maxima late */
    }
    x[1000] = y[1000] = 1e-12; /* both below zero: ignored */
    x[2000] = 1e-12;           /* ignored, yet in the norms */
    y[2000] = 3e-12;
    y[30000] = x[30000] * (1 + 1e-3); /* fails */
    y[70001] = x[70001] * (1 + 2e-3); /* fails */
    x[50000] = 0;                     /* ignored, tiny difference */
    y[50000] = 1e-20;
    for (int pass = 0; pass < 2; ++pass) {
        pk_diff_report r, w;
        if (pass) { /* a NaN and a lone infinity: failures, norm NaN */
            x[80000] = NAN;
            y[90000] = INFINITY;
        }
        if (prec == 32) { /* the rule on the floats widened */
            for (size_t i = 0; i < N; ++i) {
                xf[i] = (float)x[i];
                yf[i] = (float)y[i];
            }
            for (size_t i = 0; i < N; ++i) {
                xw[i] = xf[i];
                yw[i] = yf[i];
            }
            pk_diff_f32(xf, yf, N, 1e-4, 1e-10, PK_DIFF_ELEMENTWISE, &r);
            naive(xw, yw, N, 1e-4, 1e-10, &w);
        } else {
            pk_diff_f64(x, y, N, 1e-4, 1e-10, PK_DIFF_ELEMENTWISE, &r);
            naive(x, y, N, 1e-4, 1e-10, &w);
        }
        const int norm_ok = pass ? isnan(r.norm_rel_err)
                                 : fabs(r.norm_rel_err - w.norm_rel_err) <= 1e-12 * w.norm_rel_err;
        ok(r.num_failed == w.num_failed && r.first_fail == w.first_fail &&
               r.max_rel_err == w.max_rel_err && r.max_abs_err == w.max_abs_err && norm_ok &&
               !r.equal,
           "f%d %zu pairs%s%s: %zu failed (first %zu), max rel %.17g, abs %.17g, norm %.17g as the "
           "pair-by-pair rule (%zu, %zu, %.17g, %.17g, %.17g)", prec, N,
           pass ? " with a NaN and an infinity" : "", how, r.num_failed, r.first_fail,
           r.max_rel_err, r.max_abs_err, r.norm_rel_err, w.num_failed, w.first_fail, w.max_rel_err,
           w.max_abs_err, w.norm_rel_err);
    }
    /* every figure equal but the norm's rounding, on bitwise-equal arrays */
    pk_diff_report r;
    ok(pk_diff_f64(x, x, N, 0, 0, PK_DIFF_NORM, &r) == PK_EMISMATCH && isnan(r.norm_rel_err),
       "f%d a NaN against itself still fails", prec);
    x[80000] = 1, y[90000] = 1;
    ok(pk_diff_f64(x, x, N, 0, 0, PK_DIFF_NORM, &r) == PK_OK && r.norm_rel_err == 0 &&
           r.max_rel_err == 0, "f%d equal arrays: norm 0 at rtol 0", prec);
}

static void test_args(void)
{
    double v[2] = {1, 2};
    float f[2] = {1, 2};
    pk_diff_report r;
    pk_status s = pk_diff_f64(NULL, v, 2, 1e-5, 1e-10, 0, &r);
    ok(s == PK_ENULL && strstr(pk_last_error(), "x") && r.equal == 0 && r.first_fail == NONE,
       "f64 x NULL with n = 2: PK_ENULL (%s)", pk_last_error());
    s = pk_diff_f32(f, NULL, 2, 1e-5, 1e-10, 0, &r);
    ok(s == PK_ENULL && strstr(pk_last_error(), "y"), "f32 y NULL with n = 2: PK_ENULL (%s)",
       pk_last_error());
    static const struct { double rtol, zero; pk_status want; const char *what; } bad[] = {
        {-1e-5, 1e-10, PK_EINVAL, "rtol"},  {NAN, 1e-10, PK_ENONFINITE, "rtol"},
        {INFINITY, 1e-10, PK_ENONFINITE, "rtol"}, {1e-5, -1, PK_EINVAL, "zero"},
        {1e-5, NAN, PK_ENONFINITE, "zero"}, {1e-5, -INFINITY, PK_ENONFINITE, "zero"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        pk_status s64 = pk_diff_f64(v, v, 2, bad[i].rtol, bad[i].zero, 0, &r);
        int good = s64 == bad[i].want && strstr(pk_last_error(), bad[i].what) != NULL;
        pk_status s32 = pk_diff_f32(f, f, 2, bad[i].rtol, bad[i].zero, 0, NULL);
        ok(good && s32 == bad[i].want, "rtol %g zero %g: %s (%s)", bad[i].rtol, bad[i].zero,
           pk_status_name(s32), pk_last_error());
    }
    ok(pk_diff_f64(v, v, 2, 1e-5, 1e-10, 2, &r) == PK_EINVAL &&
           pk_diff_f32(f, f, 2, 1e-5, 1e-10, -1, &r) == PK_EINVAL,
       "unknown mode: PK_EINVAL");
    ok(pk_diff_f64(v, v, 2, 0, 0, 0, &r) == PK_OK, "rtol = zero = 0 is valid (exact compare)");
    double w[2] = {1, 2.5};
    s = pk_diff_f64(v, w, 2, 1e-5, 1e-10, 0, NULL);
    ok(s == PK_EMISMATCH && strstr(pk_last_error(), "1 of 2"),
       "mismatch without a report: PK_EMISMATCH (%s)", pk_last_error());
}

static void test_format_index(void)
{
    char buf[64];
    size_t s3[3] = {3, 4, 5};
    pk_format_index(0, s3, 3, buf, sizeof buf);
    ok(strcmp(buf, "[0, 0, 0]") == 0, "index 0 of (3, 4, 5): %s", buf);
    pk_format_index(27, s3, 3, buf, sizeof buf);
    ok(strcmp(buf, "[1, 1, 2]") == 0, "index 27 of (3, 4, 5): %s", buf);
    pk_format_index(59, s3, 3, buf, sizeof buf);
    ok(strcmp(buf, "[2, 3, 4]") == 0, "index 59 of (3, 4, 5): %s", buf);
    size_t s1[1] = {10};
    pk_format_index(7, s1, 1, buf, sizeof buf);
    ok(strcmp(buf, "[7]") == 0, "1-d: %s", buf);
    pk_format_index(0, NULL, 0, buf, sizeof buf);
    ok(strcmp(buf, "[]") == 0, "0-d: %s", buf);
    size_t huge[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
    pk_format_index(5, huge, 3, buf, sizeof buf);
    ok(strcmp(buf, "[0, 0, 5]") == 0, "extents near SIZE_MAX do not overflow: %s", buf);
    size_t zero[2] = {2, 0};
    pk_format_index(1, zero, 2, buf, sizeof buf);
    ok(strlen(buf) > 0, "a zero extent does not divide by zero: %s", buf);
    memset(buf, 'x', sizeof buf);
    pk_format_index(59, s3, 3, buf, 5);
    ok(strcmp(buf, "[2, ") == 0 && buf[5] == 'x', "truncated to the buffer: %s", buf);
    pk_format_index(59, s3, 3, NULL, 0);
    ok(1, "NULL buffer is a no-op");
}

int main(void)
{
    test_rule(32);
    test_rule(64);
    test_long(32, "");
    test_long(64, "");
    /* the same on the host's threads (ranges of blocks merged in order) */
    setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
    test_long(32, " on the threads");
    test_long(64, " on the threads");
    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
    test_norm(32);
    test_norm(64);
    test_norm_range();
    test_args();
    test_format_index();
    return tap_done();
}
