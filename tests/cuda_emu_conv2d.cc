/* conv2d.cu compiled by the host C++ compiler: cuda/emulate.h runs its kernels on host
 * threads (docs/RELIABILITY.md, "CUDA without a GPU").
 *
 * conv2d.cu's host side is not compiled here (it calls pk_cv_int_limits of the dispatch
 * layer, lib/conv2d.c, which the test does not link): pk_emu_cv_direct launches the kernel
 * with the geometry of pk_cuda_cv_create and pk_cv_launch - one tile per block, the PSF as a
 * parameter of capacity 128 or 1024 or else in global memory, the chunk and shared bytes of
 * pk_cv_plan_chunk.  pk_emu_cv_fft runs conv2d_fft.cu's own host code (its plan and frame
 * functions, with cuda/emulate.h's cuFFT) on device copies of the image. */
#include "emulate.h"
#include "conv2d.cu"

namespace {
template <int CAP>
void cv_launch(const pk_cv_desc *d, const float *img, float *out, const float *gpsf, int cbh,
               int cbw, int pitch, int tiles_x, int tiles, size_t smem)
{
    pk_cv_psf<CAP> cp;
    memset(&cp, 0, sizeof cp);
    if (CAP > 1) memcpy(cp.v, d->psf, (size_t)d->kh * d->kw * sizeof(float));
    pk_cuda_launch(pk_cv_kernel<CAP>, tiles, dim3(PK_CV_BX, PK_CV_BY), smem, 0, img, out, gpsf,
                   d->h, d->w, d->kh, d->kw, cbh, cbw, pitch, tiles_x, cp);
}

pk_status cv_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                  const char *what)
{
    const cudaError_t e = cudaMemcpy(dst, src, bytes, kind);
    return e == cudaSuccess ? PK_OK : pk_cuda_fail(e, "cudaMemcpy(%s)", what);
}
} // namespace

/* out = the direct kernel on image (host arrays of h x w floats); *cap gets the PSF's
 * placement (128, 1024: a kernel parameter of that capacity; 1: global memory) and *chunks
 * the PSF chunks. */
extern "C" pk_status pk_emu_cv_direct(const pk_cv_desc *d, const float *image, float *out,
                                      int *cap, int *chunks)
{
    const size_t n = (size_t)d->h * d->w, taps = (size_t)d->kh * d->kw;
    const int tiles_x = (d->w + PK_CV_TX - 1) / PK_CV_TX;
    const int tiles = tiles_x * ((d->h + PK_CV_TY - 1) / PK_CV_TY);
    int cbh, cbw, pitch;
    const size_t smem = pk_cv_plan_chunk(d->kh, d->kw, &cbh, &cbw, &pitch);
    *cap = taps <= 128 ? 128 : taps <= PK_CV_PARAM_TAPS ? PK_CV_PARAM_TAPS : 1;
    *chunks = ((d->kh + cbh - 1) / cbh) * ((d->kw + cbw - 1) / cbw);
    float *img = nullptr, *o = nullptr, *psf = nullptr;
    pk_status st = PK_OK;
    cudaError_t e;
    if ((e = cudaMalloc(&img, n * 4)) != cudaSuccess ||
        (e = cudaMalloc(&o, n * 4)) != cudaSuccess ||
        (*cap == 1 && (e = cudaMalloc(&psf, taps * 4)) != cudaSuccess) ||
        (e = cudaMemset(o, 0, n * 4)) != cudaSuccess)
        st = pk_cuda_fail(e, "conv2d test buffers");
    if (st == PK_OK) st = cv_copy(img, image, n * 4, cudaMemcpyHostToDevice, "image");
    if (st == PK_OK && psf) st = cv_copy(psf, d->psf, taps * 4, cudaMemcpyHostToDevice, "psf");
    if (st == PK_OK) {
        if (*cap == 128)
            cv_launch<128>(d, img, o, psf, cbh, cbw, pitch, tiles_x, tiles, smem);
        else if (*cap == PK_CV_PARAM_TAPS)
            cv_launch<PK_CV_PARAM_TAPS>(d, img, o, psf, cbh, cbw, pitch, tiles_x, tiles, smem);
        else
            cv_launch<1>(d, img, o, psf, cbh, cbw, pitch, tiles_x, tiles, smem);
        if ((e = cudaGetLastError()) != cudaSuccess)
            st = pk_cuda_fail(e, "conv2d kernel launch (%d blocks, %zu bytes of shared memory)",
                              tiles, smem);
    }
    if (st == PK_OK) st = cv_copy(out, o, n * 4, cudaMemcpyDeviceToHost, "output");
    cudaFree(img);
    cudaFree(o);
    cudaFree(psf);
    return st;
}

/* out = conv2d_fft.cu's plan (pk_cuda_cvfft_create) run on a device copy of image. */
extern "C" pk_status pk_emu_cv_fft(const pk_cv_desc *d, const float *image, float *out)
{
    const size_t n = (size_t)d->h * d->w;
    float *img = nullptr, *o = nullptr;
    pk_cuda_cvfft *f = nullptr;
    pk_status st = PK_OK;
    cudaError_t e;
    if ((e = cudaMalloc(&img, n * 4)) != cudaSuccess ||
        (e = cudaMalloc(&o, n * 4)) != cudaSuccess)
        st = pk_cuda_fail(e, "conv2d test buffers");
    if (st == PK_OK) st = cv_copy(img, image, n * 4, cudaMemcpyHostToDevice, "image");
    if (st == PK_OK) st = pk_cuda_cvfft_create(0, d, &f);
    if (st == PK_OK) st = pk_cuda_cvfft_run(f, img, o);
    if (st == PK_OK) st = cv_copy(out, o, n * 4, cudaMemcpyDeviceToHost, "output");
    pk_cuda_cvfft_destroy(f);
    cudaFree(img);
    cudaFree(o);
    return st;
}
