/* su3_ref.c - serial reference of su3 (docs/KERNELS.md section 4b): chi = u psi per site on AoS
 * data, written for clarity (the oracle of the tests).  Each output is the 3-term complex
 * dot product in the order c' = 0, 1, 2, real and imaginary parts as in the definition of
 * the complex product. */
#include "internal.h"

#include <stdint.h>

static int s3_overlap(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return !(a0 + abytes <= b0 || b0 + bbytes <= a0);
}

pk_status pk_su3_reference(size_t nv, const double *u, const double *psi, double *chi)
{
    pk_clear_error();
    PK_CHECK(nv >= 1, PK_ESIZE, "nv: must be >= 1, got %zu", nv);
    PK_CHECK(nv <= SIZE_MAX / (24 * sizeof(double)), PK_EOVERFLOW,
             "nv: %zu sites overflow the arrays' bytes", nv);
    PK_CHECK_NULL(u);
    PK_CHECK_NULL(psi);
    PK_CHECK_NULL(chi);
    const size_t sbytes = nv * 24 * sizeof(double), ubytes = nv * 18 * sizeof(double);
    PK_CHECK(!s3_overlap(chi, sbytes, psi, sbytes) && !s3_overlap(chi, sbytes, u, ubytes),
             PK_EINVAL, "chi: must not overlap u or psi (the reference does not work in place)");
    for (size_t s = 0; s < nv; ++s) {
        const double *us = u + 18 * s, *ps = psi + 24 * s;
        double *xs = chi + 24 * s;
        for (int c = 0; c < 3; ++c)
            for (int k = 0; k < 4; ++k) {
                double re = 0.0, im = 0.0;
                for (int cp = 0; cp < 3; ++cp) {
                    const double ur = us[2 * (3 * c + cp)], ui = us[2 * (3 * c + cp) + 1];
                    const double pr = ps[2 * (4 * cp + k)], pi = ps[2 * (4 * cp + k) + 1];
                    re += ur * pr - ui * pi;
                    im += ur * pi + ui * pr;
                }
                xs[2 * (4 * c + k)] = re;
                xs[2 * (4 * c + k) + 1] = im;
            }
    }
    return PK_OK;
}
