/* test_cv_serial.c - conv2d on the serial backend against the reference (see cv_common.h),
 * and the StrayLight data generator pk_conv2d_generate (backend-independent: once, here). */
#include "cv_common.h"

/* Reproducible by seed, either output alone equal to both together, the PSF summing to 1,
 * the frame in its documented range; bad arguments. */
static void cv_check_generate(void)
{
    const pk_conv2d_params p = {37, 53, 7, 5, PK_CONV2D_AUTO};
    const size_t n = 37 * 53, k = 7 * 5;
    float *a = cv_alloc(n), *b = cv_alloc(n), *c = cv_alloc(n);
    float pa[35], pb[35], pc[35];
    ok(pk_conv2d_generate(&p, 9, a, pa) == PK_OK && pk_conv2d_generate(&p, 9, b, NULL) == PK_OK &&
           pk_conv2d_generate(&p, 9, NULL, pb) == PK_OK &&
           memcmp(a, b, n * sizeof *a) == 0 && memcmp(pa, pb, sizeof pa) == 0,
       "pk_conv2d_generate: the same seed gives the same data, image and psf apart or together");
    ok(pk_conv2d_generate(&p, 10, c, pc) == PK_OK && memcmp(a, c, n * sizeof *a) != 0 &&
           memcmp(pa, pc, sizeof pa) != 0, "pk_conv2d_generate: another seed, other data");
    double sum = 0, lo = 1e30, hi = -1e30;
    for (size_t i = 0; i < k; ++i) sum += pa[i];
    for (size_t i = 0; i < n; ++i) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    ok(fabs(sum - 1) < 1e-6 && lo > 0 && hi < 10, "pk_conv2d_generate: psf sums to 1 (%.9f), "
       "frame positive in [%g, %g]", sum, lo, hi);
    pk_conv2d_params bad = p;
    bad.h = 0;
    const pk_status s0 = pk_conv2d_generate(&bad, 1, a, pa);
    bad = p;
    bad.kw = -2;
    ok(s0 == PK_ESIZE && pk_conv2d_generate(&bad, 1, a, pa) == PK_ESIZE &&
           strstr(pk_last_error(), "kh, kw") != NULL,
       "pk_conv2d_generate: zero or negative sizes are PK_ESIZE (%s)", pk_last_error());
    ok(pk_conv2d_generate(NULL, 1, a, pa) == PK_ENULL &&
           pk_conv2d_generate(&p, 1, NULL, NULL) == PK_ENULL,
       "pk_conv2d_generate: NULL params, or neither output, is PK_ENULL (%s)", pk_last_error());
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    cv_check_generate();
    return cv_run_suite(PK_BACKEND_SERIAL);
}
