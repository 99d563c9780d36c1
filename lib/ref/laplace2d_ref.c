/* laplace2d_ref.c - serial reference of laplace2d (docs/KERNELS.md 4a): plain loops with
 * modulo indexing on lexicographic data, written for clarity; the oracle of the tests.
 *
 * The float expression below is the definition every backend follows (portkern.h):
 *     a   = (float)sigma
 *     inv = (float)(1 / (1 + 4a))          the quotient in double, rounded once to float
 *     phi'(x,y) = (c + a ((e + w) + (n + s))) inv
 * with c = phi(x,y), e/w = phi(x+-1,y), n/s = phi(x,y-+1), indices modulo l.  Multiplying by
 * the rounded reciprocal instead of dividing by 1 + 4a: one multiplication in every kernel
 * (GPUs and SIMD units divide slowly) at the price of one more rounding, which the error
 * analysis (tests/lp_common.h) counts.  Every operation is rounded on its own here (no FMA
 * contraction, even under -march flags that have FMA); backends may fuse c + a(...). */
#include "laplace2d_host.h"

#if defined(__GNUC__) && !defined(__clang__)
#define LP_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define LP_NO_CONTRACT
#endif

void pk_lp_coefficients(double sigma, float *a, float *inv)
{
    const float af = (float)sigma;
    *a = af;
    *inv = (float)(1.0 / (1.0 + 4.0 * (double)af));
}

/* Rows [y0, y1) of one step. */
typedef struct lp_ref_job {
    int l;
    float a, inv;
    const float *phi;
    float *out;
} lp_ref_job;

LP_NO_CONTRACT static void ref_rows(void *arg, size_t y0, size_t y1)
{
    const lp_ref_job *j = arg;
    const int l = j->l;
    const float a = j->a, inv = j->inv, *phi = j->phi;
    for (int y = (int)y0; y < (int)y1; ++y)
        for (int x = 0; x < l; ++x) {
            const float c = phi[(size_t)y * l + x];
            const float e = phi[(size_t)y * l + (x + 1) % l];
            const float w = phi[(size_t)y * l + (x + l - 1) % l];
            const float n = phi[(size_t)((y + l - 1) % l) * l + x];
            const float s = phi[(size_t)((y + 1) % l) * l + x];
            const float sum = (e + w) + (n + s);
            const float t = a * sum;
            const float u = c + t;
            j->out[(size_t)y * l + x] = u * inv;
        }
}

/* Each step's rows on the host's threads (large fields): every point's expression is the
 * same whoever computes it, so the result is bitwise the one-thread loop's. */
void pk_lp_ref_steps(int l, int count, float a, float inv, float *f1, float *f2, float **result)
{
    float *src = f1, *dst = f2;
    for (int it = 0; it < count; ++it) {
        lp_ref_job j = {l, a, inv, src, dst};
        pk_parallel_range((size_t)l, 1, 8 * (size_t)l * (size_t)l, 0, ref_rows, &j);
        float *t = src;
        src = dst;
        dst = t;
    }
    *result = src;
}
