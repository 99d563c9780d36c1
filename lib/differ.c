/* differ.c - the relative-tolerance comparison of docs/KERNELS.md section 6.
 *
 * Both precisions share one pair rule evaluated in double (a float widens exactly, so the
 * float path loses nothing).  Beyond the rule of the spec the report is defined as:
 *  - a NaN pair fails and enters no error figure; norm_rel_err is then NaN;
 *  - equal infinities are ignored everywhere; unequal ones fail with infinite abs and rel
 *    errors and make norm_rel_err +inf;
 *  - pairs ignored by the element-wise rule (both |x|, |y| <= zero) still enter the norms,
 *    which know no `zero`;
 *  - the element-wise figures are filled in both modes; the mode decides only `equal`.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Euclidean norm as scale * sqrt(ssq) (LAPACK's dnrm2 scheme): never overflows or
 * underflows on the way, whatever the magnitudes of the terms. */
typedef struct norm_acc {
    double scale, ssq;
} norm_acc;

static void norm_add(norm_acc *a, double v)
{
    if (v == 0.0) return;
    if (a->scale < v) {
        double r = a->scale / v;
        a->ssq = 1.0 + a->ssq * r * r;
        a->scale = v;
    } else {
        double r = v / a->scale;
        a->ssq += r * r;
    }
}

typedef struct diff_state {
    double rtol, zero;
    pk_diff_report r;
    int has_nan, inf_mismatch;
    norm_acc d;      /* |x - y| */
    norm_acc d_half; /* |x - y| / 2 for the pairs whose difference overflows a double */
    norm_acc y;
} diff_state;

static void diff_fail(diff_state *s, size_t i)
{
    if (s->r.num_failed++ == 0) s->r.first_fail = i;
}

static void diff_pair(diff_state *s, size_t i, double x, double y)
{
    if (isnan(x) || isnan(y)) {
        s->has_nan = 1;
        diff_fail(s, i);
        return;
    }
    if (isinf(x) || isinf(y)) {
        if (x != y) {
            s->inf_mismatch = 1;
            s->r.max_abs_err = s->r.max_rel_err = INFINITY;
            diff_fail(s, i);
        }
        return;
    }
    /* Two finite doubles of opposite sign can differ by more than DBL_MAX: then work with
     * the halves, which are exact at such magnitudes. */
    double d = fabs(x - y), half = 0.0;
    if (isinf(d)) {
        half = fabs(0.5 * x - 0.5 * y);
        norm_add(&s->d_half, half);
    } else {
        norm_add(&s->d, d);
    }
    norm_add(&s->y, fabs(y));

    double ax = fabs(x), ay = fabs(y), ref;
    if (ax > s->zero)
        ref = ax;
    else if (ay > s->zero)
        ref = ay;
    else
        return; /* both ~0: ignored */
    double rel = half != 0.0 ? half / (0.5 * ref) : d / ref;
    if (d > s->r.max_abs_err) s->r.max_abs_err = d;
    if (rel > s->r.max_rel_err) s->r.max_rel_err = rel;
    if (rel > s->rtol) diff_fail(s, i);
}

static pk_status diff_begin(diff_state *s, const void *x, const void *y, size_t n, double rtol,
                            double zero, int mode, pk_diff_report *report)
{
    pk_clear_error();
    memset(s, 0, sizeof *s);
    s->rtol = rtol;
    s->zero = zero;
    s->r.count = n;
    s->r.first_fail = (size_t)-1;
    if (report) *report = s->r;
    PK_CHECK(x != NULL || n == 0, PK_ENULL, "x: must not be NULL when n = %zu", n);
    PK_CHECK(y != NULL || n == 0, PK_ENULL, "y: must not be NULL when n = %zu", n);
    PK_CHECK(isfinite(rtol), PK_ENONFINITE, "rtol: must be finite, got %g", rtol);
    PK_CHECK(rtol >= 0.0, PK_EINVAL, "rtol: must be >= 0, got %g", rtol);
    PK_CHECK(isfinite(zero), PK_ENONFINITE, "zero: must be finite, got %g", zero);
    PK_CHECK(zero >= 0.0, PK_EINVAL, "zero: must be >= 0, got %g", zero);
    PK_CHECK(mode == PK_DIFF_ELEMENTWISE || mode == PK_DIFF_NORM, PK_EINVAL,
             "mode: must be PK_DIFF_ELEMENTWISE (0) or PK_DIFF_NORM (1), got %d", mode);
    return PK_OK;
}

static pk_status diff_end(diff_state *s, int mode, pk_diff_report *report)
{
    pk_diff_report *r = &s->r;
    if (s->has_nan) {
        r->norm_rel_err = NAN;
    } else if (s->inf_mismatch) {
        r->norm_rel_err = INFINITY;
    } else if (s->y.scale == 0.0) {
        r->norm_rel_err = (s->d.scale == 0.0 && s->d_half.scale == 0.0) ? 0.0 : INFINITY;
    } else {
        /* ||d||^2 = ||d_full||^2 + 4 ||d_half||^2, each divided by ||y|| before squaring */
        double full = s->d.scale / s->y.scale * sqrt(s->d.ssq / s->y.ssq);
        double half = s->d_half.scale / s->y.scale * sqrt(s->d_half.ssq / s->y.ssq);
        r->norm_rel_err = hypot(full, 2.0 * half);
    }
    if (mode == PK_DIFF_NORM)
        r->equal = r->norm_rel_err <= s->rtol; /* false for NaN */
    else
        r->equal = r->num_failed == 0;
    if (report) *report = *r;
    if (r->equal) return PK_OK;
    if (mode == PK_DIFF_NORM)
        return pk_fail(PK_EMISMATCH, "norm-wise relative error %.6g exceeds rtol %.6g",
                       r->norm_rel_err, s->rtol);
    return pk_fail(PK_EMISMATCH,
                   "%zu of %zu elements differ beyond rtol %.6g; first at flat index %zu",
                   r->num_failed, r->count, s->rtol, r->first_fail);
}

pk_status pk_diff_f32(const float *x, const float *y, size_t n, double rtol, double zero,
                      int mode, pk_diff_report *report)
{
    diff_state s;
    PK_TRY(diff_begin(&s, x, y, n, rtol, zero, mode, report));
    for (size_t i = 0; i < n; ++i) diff_pair(&s, i, x[i], y[i]);
    return diff_end(&s, mode, report);
}

pk_status pk_diff_f64(const double *x, const double *y, size_t n, double rtol, double zero,
                      int mode, pk_diff_report *report)
{
    diff_state s;
    PK_TRY(diff_begin(&s, x, y, n, rtol, zero, mode, report));
    for (size_t i = 0; i < n; ++i) diff_pair(&s, i, x[i], y[i]);
    return diff_end(&s, mode, report);
}

void pk_format_index(size_t flat, const size_t *shape, int ndim, char *buf, size_t len)
{
    if (buf == NULL || len == 0) return;
    if (shape == NULL || ndim < 1) {
        /* no shape to split by: a 0-d array's only index is "[]" (NumPy's a[()]) */
        if (ndim == 0 && flat == 0)
            snprintf(buf, len, "[]");
        else
            snprintf(buf, len, "[%zu]", flat);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim && used < len; ++d) {
        /* stride of axis d = product of the later extents; once it passes `flat` the index
         * on this axis is 0, so stop multiplying there (no overflow).  A zero extent has no
         * valid index; counting it as 1 keeps the output defined. */
        size_t stride = 1;
        int beyond = 0;
        for (int k = d + 1; k < ndim && !beyond; ++k) {
            size_t e = shape[k] ? shape[k] : 1;
            if (e > flat / stride)
                beyond = 1;
            else
                stride *= e;
        }
        size_t idx = beyond ? 0 : flat / stride;
        if (d > 0 && shape[d] != 0) idx %= shape[d];
        int w = snprintf(buf + used, len - used, "%s%zu%s", d ? ", " : "[", idx,
                         d == ndim - 1 ? "]" : "");
        if (w < 0) return;
        used += (size_t)w;
    }
}
