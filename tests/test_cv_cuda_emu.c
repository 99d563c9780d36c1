/* test_cv_cuda_emu.c - conv2d.cu and conv2d_fft.cu without a GPU, on the emulated device of
 * cuda/emulate.h (see cuda_emu_common.h):
 * 1. The direct kernel ("cuda") on every case of cv_common.h's cv_sizes, against
 *    pk_conv2d_reference element-wise (CV_RTOL, CV_ZERO), launched with the host code's
 *    geometry (the emulated host side at the end of conv2d.cu: its real host side needs the
 *    dispatch layer), the PSF as a 128-tap parameter; then the other two PSF placements (a
 *    1024-tap parameter and global memory) and a PSF whose window does not fit shared
 *    memory (chunks), larger than the image.
 * 2. "cuda-fft": conv2d_fft.cu's own plan (torus sizes, the folded PSF, the gather, multiply
 *    and scale kernels, the crop), with cuda/emulate.h's DFT in place of cuFFT, on the same
 *    cases against the reference, and on cv_common.h's FFT cases against the direct kernel
 *    (element-wise) and on signed data against the reference (its norm-wise bound) - the
 *    813 x 5271 frame left out (minutes emulated).
 * 3. The FFT plan's creation when each of its allocations fails.
 */
#include "cuda_emu_common.h"
#include "cv_common.h"

/* cuda/conv2d.cu's emulated host side (PK_CUDA_EMULATE) */
pk_status pk_emu_cv_direct(const pk_cv_desc *d, const float *image, float *out, int *cap,
                           int *chunks);
pk_status pk_emu_cv_fft(const pk_cv_desc *d, const float *image, float *out);

static pk_cv_desc cve_desc(int h, int w, int kh, int kw, const float *psf, const char *variant)
{
    pk_cv_desc d;
    memset(&d, 0, sizeof d);
    d.h = h;
    d.w = w;
    d.kh = kh;
    d.kw = kw;
    d.method = PK_CONV2D_AUTO;
    d.psf = psf;
    d.variant = variant;
    return d;
}

/* One case through the direct kernel (fft 0) or the FFT plan (fft 1) against the reference,
 * element-wise; one TAP line. */
static void cve_check(int fft, int h, int w, int kh, int kw, const char *what)
{
    pk_conv2d_params p;
    cv_params(&p, h, w, kh, kw, PK_CONV2D_AUTO);
    const size_t n = (size_t)h * w;
    float *image = cv_alloc(n), *psf = cv_alloc((size_t)kh * kw), *ref = cv_alloc(n);
    float *out = cv_alloc(n);
    /* cv_check_reference's data */
    cv_fill(image, n, (unsigned)(h * 131 + w * 7 + kh * 3 + kw), 0.5f, 1.0f);
    cv_psf(psf, kh, kw, (unsigned)(kh * 17 + kw));
    if (pk_conv2d_reference(&p, image, psf, ref) != PK_OK) {
        printf("Bail out! reference %dx%d failed\n", h, w);
        exit(1);
    }
    for (size_t i = 0; i < n; ++i) out[i] = NAN;
    const pk_cv_desc d = cve_desc(h, w, kh, kw, psf, fft ? "cuda-fft" : "cuda");
    int cap = 0, chunks = 0;
    const pk_status s = fft ? pk_emu_cv_fft(&d, image, out)
                            : pk_emu_cv_direct(&d, image, out, &cap, &chunks);
    pk_diff_report r;
    const int df = s == PK_OK ? pk_diff_f32(out, ref, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE, &r)
                              : -1;
    char at[64] = "-", place[64] = "";
    if (s == PK_OK && r.num_failed) {
        const size_t shape[2] = {(size_t)h, (size_t)w};
        pk_format_index(r.first_fail, shape, 2, at, sizeof at);
    }
    if (!fft)
        snprintf(place, sizeof place, ", psf %s, %d chunk%s",
                 cap == 1 ? "in global memory" : cap == 128 ? "a 128-tap parameter"
                                                            : "a 1024-tap parameter",
                 chunks, chunks == 1 ? "" : "s");
    ok(s == PK_OK && df == PK_OK,
       "%s %dx%d psf %dx%d%s%s: matches the reference (rtol %.0e; max rel %.2e, %zu failed, "
       "first %s; %s)",
       fft ? "cuda-fft" : "cuda", h, w, kh, kw, place, what, CV_RTOL,
       s == PK_OK ? r.max_rel_err : -1.0, s == PK_OK ? r.num_failed : (size_t)0, at, emu_why(s));
    emu_next_case();
    free(image);
    free(psf);
    free(ref);
    free(out);
}

/* cv_check_fft on the emulation: the FFT plan against the direct kernel element-wise, and on
 * signed zero-mean data against the reference by the norm-wise bound. */
static void cve_check_fft(int h, int w, int kh, int kw, unsigned c)
{
    const size_t n = (size_t)h * w;
    pk_conv2d_params p;
    cv_params(&p, h, w, kh, kw, PK_CONV2D_AUTO);
    float *image = cv_alloc(n), *psf = cv_alloc((size_t)kh * kw);
    float *a = cv_alloc(n), *b = cv_alloc(n), *ref = cv_alloc(n);
    cv_fill(image, n, c + 7, 0.5f, 1.0f);
    cv_psf(psf, kh, kw, c);
    const pk_cv_desc d = cve_desc(h, w, kh, kw, psf, "cuda-fft");
    int cap, chunks;
    pk_status s = pk_emu_cv_fft(&d, image, a);
    if (s == PK_OK) s = pk_emu_cv_direct(&d, image, b, &cap, &chunks);
    pk_diff_report r;
    const int df =
        s == PK_OK ? pk_diff_f32(a, b, n, CV_RTOL, CV_ZERO, PK_DIFF_ELEMENTWISE, &r) : -1;
    ok(s == PK_OK && df == PK_OK, "cuda-fft equals cuda on %dx%d psf %dx%d (max rel %.2e; %s)", h,
       w, kh, kw, s == PK_OK ? r.max_rel_err : -1.0, emu_why(s));
    emu_next_case();
    cv_fill(image, n, c + 70, -1.0f, 2.0f);
    cv_fill(psf, (size_t)kh * kw, c + 80, -1.0f, 2.0f);
    double xn = 0, pn = 0, en = 0;
    for (size_t i = 0; i < n; ++i) xn += (double)image[i] * image[i];
    for (size_t i = 0; i < (size_t)kh * kw; ++i) pn += fabs(psf[i]);
    pk_conv2d_reference(&p, image, psf, ref);
    s = pk_emu_cv_fft(&d, image, a);
    for (size_t i = 0; i < n && s == PK_OK; ++i)
        en += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
    const double bound = cv_fft_bound(n), err = s == PK_OK ? sqrt(en) / (sqrt(xn) * pn) : INFINITY;
    ok(s == PK_OK && err <= bound,
       "cuda-fft signed data %dx%d psf %dx%d: ||fft-ref|| / (||x|| ||psf||_1) = %.2e <= %.2e (%s)",
       h, w, kh, kw, err, bound, emu_why(s));
    emu_next_case();
    free(image);
    free(psf);
    free(a);
    free(b);
    free(ref);
}

static pk_status cve_fft_create(const void *arg, void **impl)
{
    return pk_cuda_cvfft_create(0, (const pk_cv_desc *)arg, (pk_cuda_cvfft **)impl);
}
static void cve_fft_destroy(void *impl) { pk_cuda_cvfft_destroy((pk_cuda_cvfft *)impl); }

int main(void)
{
    emu_begin("conv2d.cu and conv2d_fft.cu");
    for (int fft = 0; fft <= 1; ++fft)
        for (size_t i = 0; i < CV_NSIZES; ++i)
            cve_check(fft, cv_sizes[i][0], cv_sizes[i][1], cv_sizes[i][2], cv_sizes[i][3], "");
    /* the other PSF placements of the direct kernel, and chunks of a large PSF */
    cve_check(0, 20, 300, 13, 13, "");
    cve_check(0, 20, 300, 33, 35, "");
    cve_check(0, 12, 40, 60, 70, " (psf larger than the image)");
    cve_check(1, 12, 40, 60, 70, " (psf larger than the image)");
    for (size_t c = 1; c < CV_NFFT; ++c)
        cve_check_fft(cv_fft_cases[c][0], cv_fft_cases[c][1], cv_fft_cases[c][2],
                      cv_fft_cases[c][3], (unsigned)c);
    float psf[9] = {0.1f, 0.2f, 0.1f, 0.05f, 0.1f, 0.05f, 0.1f, 0.2f, 0.1f};
    const pk_cv_desc d = cve_desc(7, 11, 3, 3, psf, "cuda-fft");
    emu_check_alloc_failures("conv2d cuda-fft plan creation", cve_fft_create, cve_fft_destroy, &d);
    return emu_end();
}
