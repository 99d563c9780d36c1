/* test_ref_threads.c - the public references that run on the host threads (diffusion3d's
 * planes, laplace2d's rows; grid's in gr_common.h) give the one-thread loop's bits: every
 * point's expression is the same whoever computes it.  Threaded at every size
 * (PORTKERN_TEST_PARALLEL_BYTES=0) against one pass (the threshold beyond any size). */
#include "portkern.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* A field of n floats stepped by ref under both settings: 1 when the two are bitwise equal. */
static int same_bits(pk_status (*ref)(const void *p, float *f), const void *p, size_t n)
{
    float *f[2];
    int good = 1;
    for (int k = 0; k < 2; ++k) {
        setenv("PORTKERN_TEST_PARALLEL_BYTES", k ? "0" : "18446744073709551615", 1);
        f[k] = malloc(n * sizeof(float));
        if (!f[k]) return 0;
        for (size_t i = 0; i < n; ++i) f[k][i] = (float)((i * 2654435761u) % 1000) / 997.0f;
        good &= ref(p, f[k]) == PK_OK;
    }
    unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
    good &= !memcmp(f[0], f[1], n * sizeof(float));
    free(f[0]);
    free(f[1]);
    return good;
}

static pk_status d3_ref(const void *p, float *f) { return pk_diffusion3d_reference(p, f); }
static pk_status lp_ref(const void *p, float *f) { return pk_laplace2d_reference(p, f); }

int main(void)
{
    pk_diffusion3d_params d;
    pk_diffusion3d_params_default(&d, 37, 23, 19, 7); /* odd planes: uneven shares */
    ok(same_bits(d3_ref, &d, 37 * 23 * 19),
       "pk_diffusion3d_reference 37x23x19, 7 steps: threaded bitwise the one pass");
    const pk_laplace2d_params l = {45, 9, 0.3, PK_LAP_LEXI, 0};
    ok(same_bits(lp_ref, &l, 45 * 45),
       "pk_laplace2d_reference 45^2, 9 iterations: threaded bitwise the one pass");
    return tap_done();
}
