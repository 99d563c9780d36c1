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

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The fast path of a block of pairs: plain sums of squares and maxima, no branch (a loop the
 * compiler vectorises); each pair's relative error the very quotient diff_pair forms, so the
 * element-wise figures are exact.  It takes the block (1) only where every pair is finite
 * with a finite difference (else a sum is not finite) and the block's largest |x - y| and
 * |y| are in [2^-500, 2^500] (or 0), where the squares neither overflow nor lose what
 * matters to the norm.  Otherwise 0, and the caller runs the block pair by pair: the same
 * report, bit for bit, but for the norms' rounding. */
#define DIFF_BLOCK 256

static int in_norm_range(double m) { return m == 0.0 || (m >= 0x1p-500 && m <= 0x1p500); }

static int diff_block_fast(diff_state *s, const double *x, const double *y, size_t base,
                           size_t n)
{
    const double zero = s->zero, rtol = s->rtol;
    double sd = 0.0, sy = 0.0, md = 0.0, my = 0.0, mabs = 0.0, mrel = 0.0;
    size_t fails = 0;
    /* an OpenMP simd loop: its reductions may reorder the sums, which only the norms see */
#pragma omp simd reduction(+ : sd, sy, fails) reduction(max : md, my, mabs, mrel)
    for (size_t i = 0; i < n; ++i) {
        const double ax = fabs(x[i]), ay = fabs(y[i]), d = fabs(x[i] - y[i]);
        /* both <= zero: ignored (d / inf = 0 enters no element figure) */
        const double ref = ax > zero ? ax : ay > zero ? ay : INFINITY;
        const double dc = ref < INFINITY ? d : 0.0, rel = d / ref;
        sd += d * d;
        sy += ay * ay;
        md = d > md ? d : md;
        my = ay > my ? ay : my;
        mabs = dc > mabs ? dc : mabs;
        mrel = rel > mrel ? rel : mrel;
        fails += rel > rtol;
    }
    if (!isfinite(sd) || !isfinite(sy) || !in_norm_range(md) || !in_norm_range(my)) return 0;
    if (fails && s->r.num_failed == 0)
        for (size_t i = 0; i < n; ++i) {
            const double ax = fabs(x[i]), ay = fabs(y[i]);
            const double ref = ax > zero ? ax : ay > zero ? ay : INFINITY;
            if (fabs(x[i] - y[i]) / ref > rtol) {
                s->r.first_fail = base + i;
                break;
            }
        }
    s->r.num_failed += fails;
    if (mabs > s->r.max_abs_err) s->r.max_abs_err = mabs;
    if (mrel > s->r.max_rel_err) s->r.max_rel_err = mrel;
    norm_add(&s->d, sqrt(sd));
    norm_add(&s->y, sqrt(sy));
    return 1;
}

/* Pairs [base, base + n) given as doubles (n <= DIFF_BLOCK). */
static void diff_block(diff_state *s, const double *x, const double *y, size_t base, size_t n)
{
    if (diff_block_fast(s, x, y, base, n)) return;
    for (size_t i = 0; i < n; ++i) diff_pair(s, base + i, x[i], y[i]);
}

/* Euclidean norms merged: b's terms added to a's. */
static void norm_merge(norm_acc *a, const norm_acc *b)
{
    if (b->scale == 0.0) return;
    if (a->scale < b->scale) {
        const double r = a->scale / b->scale;
        a->ssq = b->ssq + a->ssq * r * r;
        a->scale = b->scale;
    } else {
        const double r = b->scale / a->scale;
        a->ssq += b->ssq * r * r;
    }
}

/* The pairs of blocks [lo, hi), float or double, into s. */
typedef struct diff_job {
    const void *x, *y;
    size_t n;
    int f32;
    diff_state *part; /* one per thread: thread t's range follows thread t - 1's */
} diff_job;

static void diff_blocks(diff_state *s, const diff_job *j, size_t lo, size_t hi)
{
    double xd[DIFF_BLOCK], yd[DIFF_BLOCK];
    for (size_t b = lo; b < hi; ++b) {
        const size_t i = b * DIFF_BLOCK, nb = j->n - i < DIFF_BLOCK ? j->n - i : DIFF_BLOCK;
        if (!j->f32) {
            diff_block(s, (const double *)j->x + i, (const double *)j->y + i, i, nb);
            continue;
        }
        for (size_t k = 0; k < nb; ++k) { /* widened exactly */
            xd[k] = ((const float *)j->x)[i + k];
            yd[k] = ((const float *)j->y)[i + k];
        }
        diff_block(s, xd, yd, i, nb);
    }
}

static void diff_part(void *arg, size_t lo, size_t hi)
{
    const diff_job *j = arg;
    diff_blocks(&j->part[pk_thread_num()], j, lo, hi);
}

/* Every pair: on the host's threads in contiguous ranges of blocks (arrays of 4 MiB and
 * more; verification of a whole field is memory-bound), each range into a state of its
 * own, merged in order: the counts, the first failure and the maxima exactly those of one
 * pass, the norms to rounding. */
static void diff_all(diff_state *s, const void *x, const void *y, size_t n, int f32)
{
    const size_t nblocks = (n + DIFF_BLOCK - 1) / DIFF_BLOCK;
    const int nt = pk_host_threads(0);
    diff_job j = {x, y, n, f32, NULL};
    if (nt > 1 && nblocks > 1 && (j.part = calloc((size_t)nt, sizeof *j.part))) {
        for (int t = 0; t < nt; ++t) j.part[t] = *s;
        pk_parallel_range(nblocks, 1, n * (f32 ? 8 : 16), nt, diff_part, &j);
        for (int t = 0; t < nt; ++t) {
            const diff_state *p = &j.part[t];
            if (s->r.num_failed == 0 && p->r.num_failed) s->r.first_fail = p->r.first_fail;
            s->r.num_failed += p->r.num_failed;
            if (p->r.max_abs_err > s->r.max_abs_err) s->r.max_abs_err = p->r.max_abs_err;
            if (p->r.max_rel_err > s->r.max_rel_err) s->r.max_rel_err = p->r.max_rel_err;
            s->has_nan |= p->has_nan;
            s->inf_mismatch |= p->inf_mismatch;
            norm_merge(&s->d, &p->d);
            norm_merge(&s->d_half, &p->d_half);
            norm_merge(&s->y, &p->y);
        }
        free(j.part);
        return;
    }
    diff_blocks(s, &j, 0, nblocks);
}

pk_status pk_diff_f32(const float *x, const float *y, size_t n, double rtol, double zero,
                      int mode, pk_diff_report *report)
{
    diff_state s;
    PK_TRY(diff_begin(&s, x, y, n, rtol, zero, mode, report));
    diff_all(&s, x, y, n, 1);
    return diff_end(&s, mode, report);
}

pk_status pk_diff_f64(const double *x, const double *y, size_t n, double rtol, double zero,
                      int mode, pk_diff_report *report)
{
    diff_state s;
    PK_TRY(diff_begin(&s, x, y, n, rtol, zero, mode, report));
    diff_all(&s, x, y, n, 0);
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
