/* lqcd_gen.c - reproducible random lattice-QCD data: SU(3) links and Gaussian complex
 * numbers (spinor components).
 *
 * The stream is splitmix64 (one 64-bit state, fixed by the seed), turned into Gaussians by
 * Box-Muller, so a seed gives the same numbers on every platform with an IEEE libm.  An
 * SU(3) matrix is Gram-Schmidt on two Gaussian rows (Haar-distributed on the sphere) with
 * row2 = conj(row0 x row1), which makes it unitary with det 1 to rounding. */
#include "internal.h"

#include <math.h>
#include <stdint.h>

typedef struct lq_rng {
    uint64_t s;
    int have_spare;
    double spare;
} lq_rng;

static uint64_t lq_next(lq_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: never 0, so log() below is finite. */
static double lq_uniform(lq_rng *r) { return ((double)(lq_next(r) >> 11) + 1.0) * 0x1.0p-53; }

static double lq_gauss(lq_rng *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    const double rad = sqrt(-2.0 * log(lq_uniform(r)));
    const double ang = 6.283185307179586476925286766559 * lq_uniform(r);
    r->spare = rad * sin(ang);
    r->have_spare = 1;
    return rad * cos(ang);
}

pk_status pk_lqcd_random_complex(uint64_t seed, size_t n, double *z)
{
    pk_clear_error();
    PK_CHECK_NULL(z);
    PK_CHECK(n <= SIZE_MAX / (2 * sizeof(double)), PK_EOVERFLOW,
             "n: %zu complex numbers overflow size_t bytes", n);
    lq_rng r = {seed, 0, 0};
    for (size_t i = 0; i < 2 * n; ++i) z[i] = lq_gauss(&r);
    return PK_OK;
}

/* a -= (b^H a) b for a unit vector b (complex 3-vectors, interleaved). */
static void lq_project_out(double *a, const double *b)
{
    double pr = 0, pi = 0; /* <b, a> = sum conj(b_k) a_k */
    for (int k = 0; k < 3; ++k) {
        pr += b[2 * k] * a[2 * k] + b[2 * k + 1] * a[2 * k + 1];
        pi += b[2 * k] * a[2 * k + 1] - b[2 * k + 1] * a[2 * k];
    }
    for (int k = 0; k < 3; ++k) {
        a[2 * k] -= pr * b[2 * k] - pi * b[2 * k + 1];
        a[2 * k + 1] -= pr * b[2 * k + 1] + pi * b[2 * k];
    }
}

static double lq_normalise(double *a)
{
    double n2 = 0;
    for (int k = 0; k < 6; ++k) n2 += a[k] * a[k];
    const double n = sqrt(n2);
    if (n > 0)
        for (int k = 0; k < 6; ++k) a[k] /= n;
    return n;
}

pk_status pk_lqcd_random_su3(uint64_t seed, size_t n, double *u)
{
    pk_clear_error();
    PK_CHECK_NULL(u);
    PK_CHECK(n <= SIZE_MAX / (18 * sizeof(double)), PK_EOVERFLOW,
             "n: %zu SU(3) matrices overflow size_t bytes", n);
    lq_rng r = {seed, 0, 0};
    for (size_t s = 0; s < n; ++s) {
        double *m = u + 18 * s;
        double *r0 = m, *r1 = m + 6, *r2 = m + 12;
        /* Redraw the (probability ~0) degenerate cases so every matrix is well formed. */
        do {
            for (int k = 0; k < 6; ++k) r0[k] = lq_gauss(&r);
        } while (lq_normalise(r0) < 1e-6);
        do {
            for (int k = 0; k < 6; ++k) r1[k] = lq_gauss(&r);
            lq_project_out(r1, r0);
            lq_project_out(r1, r0); /* twice: orthogonal to rounding */
        } while (lq_normalise(r1) < 1e-6);
        /* r2 = conj(r0 x r1): r2_i = conj(r0_j r1_k - r0_k r1_j), (i, j, k) cyclic */
        for (int i = 0; i < 3; ++i) {
            const int j = (i + 1) % 3, k = (i + 2) % 3;
            const double re = (r0[2 * j] * r1[2 * k] - r0[2 * j + 1] * r1[2 * k + 1]) -
                              (r0[2 * k] * r1[2 * j] - r0[2 * k + 1] * r1[2 * j + 1]);
            const double im = (r0[2 * j] * r1[2 * k + 1] + r0[2 * j + 1] * r1[2 * k]) -
                              (r0[2 * k] * r1[2 * j + 1] + r0[2 * k + 1] * r1[2 * j]);
            r2[2 * i] = re;
            r2[2 * i + 1] = -im;
        }
    }
    return PK_OK;
}
