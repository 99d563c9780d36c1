/* image.cu - the dirty image on CUDA (docs/KERNELS.md 7): the FFT runs where the grid is.
 * Written without a GPU: checked by the host emulation (tests/test_im_cuda_emu), never on a
 * GPU.
 *
 * lib/image.c makes this plan when the image plan's grid plan runs on CUDA (any of its
 * variants: cuda-tiled, cuda-atomic, hybrid).  A run:
 *  1. "grid": the g x g complex64 device grid (allocated once per plan) is zeroed on the
 *     legacy stream, then grid.cu's run adds the visibilities into it in place
 *     (pk_cuda_gr_run_device: no sub-grid, no bands, nothing of the grid crosses the link;
 *     the visibilities go up through the staging ring as for pk_grid);
 *  2. "fft": cuFFT's 2-D C2C inverse transform (e^{+2 pi i}, unnormalised, FFTW_BACKWARD's
 *     sign as on the host), in place, planned once per plan (cufftPlan2d, loaded at run time by
 *     cuda/conv2d_fft.cu's loader: pk_cuda_cufft_c2c_*);
 *  3. "correct": one thread per image pixel reads F[py mod g][px mod g] (px = x - N/2,
 *     py = y - N/2: the crop, no shift copies) and writes
 *         image[y][x] = Re F * ((sc[y] * (1 / norm)) * sc[x]),
 *     sc[x] = (-1)^(x - N/2) / c(x - N/2) the host path's float factors (lib/image.c's scorr,
 *     uploaded once per plan), multiplied in the host path's order with _rn intrinsics (no
 *     contraction): the image equals the host path's up to the two FFTs' float rounding;
 *  4. "transfer": only the N x N float image comes back (pk_cuda_transfer, through the ring);
 *     the stage also holds the visibilities' upload (grid.cu's "transfer").
 * cuFFT has no stream here (the loader declares no cufftSetStream): the transform, the crop
 * kernel and the zeroing run on the legacy stream, and grid.cu's non-blocking streams are
 * synchronised with it by the host (the zeroing is waited for before the grid run, which
 * returns with its kernels done).
 *
 * Memory on the device: the grid (8 g^2 bytes: 2.6 GB at g = 18000), cuFFT's work area (up to
 * as much again), the image (4 N^2) and grid.cu's visibility buffers.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_im_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code (self-contained between the markers: emulated on host threads) -------- */
/* PK_IM_DEVICE_BEGIN */
#define IM_TX 32
#define IM_TY 8

/* Grid index of crop coordinate x in [0, n): (x - n/2) mod g. */
__device__ __forceinline__ size_t im_wrap(int x, int n, int g)
{
    return (size_t)(x < n / 2 ? x - n / 2 + g : x - n / 2);
}

__global__ void __launch_bounds__(IM_TX *IM_TY)
im_crop_kernel(const float2 *grid, int g, int n, const float *sc, float scale, float *image)
{
    const int x = (int)(blockIdx.x * IM_TX + threadIdx.x);
    const int y = (int)(blockIdx.y * IM_TY + threadIdx.y);
    if (x >= n || y >= n) return;
    const float fy = __fmul_rn(sc[y], scale);
    const float re = grid[im_wrap(y, n, g) * (size_t)g + im_wrap(x, n, g)].x;
    image[(size_t)y * (size_t)n + (size_t)x] = __fmul_rn(re, __fmul_rn(fy, sc[x]));
}
/* PK_IM_DEVICE_END */

/* ---- host side ------------------------------------------------------------------------- */
enum { IM_EV_ZERO0, IM_EV_ZERO1, IM_EV_FFT0, IM_EV_FFT1, IM_EV_CROP1, IM_EV_N };

struct im_plan {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it) */
    int g, n;
    float2 *d_grid; /* g x g */
    float *d_sc;    /* n */
    float *d_img;   /* n x n */
    int fft, have_fft;
    cudaEvent_t ev[IM_EV_N];
};
PK_CUDA_XFER_FIRST(im_plan);

#define IM_CUDA(call, ...)                                                                     \
    do {                                                                                       \
        cudaError_t im_e_ = (call);                                                            \
        if (im_e_ != cudaSuccess) return pk_cuda_fail(im_e_, __VA_ARGS__);                     \
    } while (0)

extern "C" void pk_cuda_im_destroy(void *impl)
{
    im_plan *h = (im_plan *)impl;
    if (!h) return;
    (void)cudaSetDevice(h->xf.device);
    (void)cudaStreamSynchronize(0);
    if (h->have_fft) pk_cuda_cufft_destroy(h->fft);
    if (h->d_grid) cudaFree(h->d_grid);
    if (h->d_sc) cudaFree(h->d_sc);
    if (h->d_img) cudaFree(h->d_img);
    for (int i = 0; i < IM_EV_N; ++i)
        if (h->ev[i]) cudaEventDestroy(h->ev[i]);
    (void)cudaGetLastError();
    free(h);
}

static pk_status im_setup(im_plan *h, const float *scorr)
{
    const int g = h->g, n = h->n;
    const size_t gbytes = (size_t)g * (size_t)g * 8;
    IM_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    IM_CUDA(cudaMalloc((void **)&h->d_grid, gbytes), "cudaMalloc(image grid, %d x %d complex, "
            "%zu bytes, device %d)", g, g, gbytes, h->xf.device);
    IM_CUDA(cudaMalloc((void **)&h->d_sc, (size_t)n * 4), "cudaMalloc(image correction)");
    IM_CUDA(cudaMalloc((void **)&h->d_img, (size_t)n * (size_t)n * 4),
            "cudaMalloc(image, %d x %d float)", n, n);
    for (int i = 0; i < IM_EV_N; ++i)
        IM_CUDA(cudaEventCreate(&h->ev[i]), "cudaEventCreate(image timing)");
    pk_cuda_xfer xf = h->xf; /* a setup copy: not said in the runs' notes */
    PK_TRY(pk_cuda_transfer(&xf, h->d_sc, scorr, (size_t)n * 4, 1, "image correction", NULL));
    PK_TRY(pk_cuda_cufft_c2c_create(g, g, "image", &h->fft));
    h->have_fft = 1;
    return PK_OK;
}

extern "C" pk_status pk_cuda_im_create(void *gr_impl, int g, int n, const float *scorr,
                                       void **impl)
{
    PK_CHECK(g >= 2 && n >= 2 && n <= g && n % 2 == 0, PK_EINVAL,
             "image (cuda): grid %d and image %d sizes", g, n);
    im_plan *h = (im_plan *)calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "image: out of host memory for a CUDA plan");
    const pk_cuda_xfer *gx = (const pk_cuda_xfer *)gr_impl; /* grid.cu's plan: xf first */
    h->xf.s = gx->s;
    h->xf.device = gx->device;
    h->g = g;
    h->n = n;
    const pk_status s = im_setup(h, scorr);
    if (s != PK_OK) {
        pk_cuda_im_destroy(h);
        return s;
    }
    *impl = h;
    return PK_OK;
}

static pk_status im_ms(const im_plan *h, int a, int b, double *s)
{
    float ms = 0;
    IM_CUDA(cudaEventElapsedTime(&ms, h->ev[a], h->ev[b]), "cudaEventElapsedTime(image)");
    *s = 1e-3 * ms;
    return PK_OK;
}

static pk_status im_run(im_plan *h, void *gr_impl, const pk_grid_data *d, float *image,
                        pk_gr_result *gres, double *stage_s)
{
    const int g = h->g, n = h->n;
    IM_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    /* 1. grid: zeroed on the legacy stream, waited for (grid.cu's streams do not wait for it) */
    IM_CUDA(cudaEventRecord(h->ev[IM_EV_ZERO0], 0), "cudaEventRecord(image)");
    IM_CUDA(cudaMemsetAsync(h->d_grid, 0, (size_t)g * (size_t)g * 8, 0),
            "cudaMemsetAsync(image grid)");
    IM_CUDA(cudaEventRecord(h->ev[IM_EV_ZERO1], 0), "cudaEventRecord(image)");
    IM_CUDA(cudaStreamSynchronize(0), "cudaStreamSynchronize(image grid zeroed)");
    if (d->num_vis > 0) PK_TRY(pk_cuda_gr_run_device(gr_impl, d, h->d_grid, gres));
    /* 2. fft, 3. correct */
    const float scale = gres->norm != 0 ? (float)(1.0 / gres->norm) : 0.0f;
    IM_CUDA(cudaEventRecord(h->ev[IM_EV_FFT0], 0), "cudaEventRecord(image)");
    PK_TRY(pk_cuda_cufft_c2c_exec(h->fft, h->d_grid, 1, "image"));
    IM_CUDA(cudaEventRecord(h->ev[IM_EV_FFT1], 0), "cudaEventRecord(image)");
    const dim3 block(IM_TX, IM_TY);
    const dim3 grid((unsigned)((n + IM_TX - 1) / IM_TX), (unsigned)((n + IM_TY - 1) / IM_TY));
    pk_cuda_launch(im_crop_kernel, grid, block, 0, (cudaStream_t)0, (const float2 *)h->d_grid, g,
                   n, (const float *)h->d_sc, scale, h->d_img);
    IM_CUDA(cudaGetLastError(), "im_crop_kernel (%d x %d)", n, n);
    IM_CUDA(cudaEventRecord(h->ev[IM_EV_CROP1], 0), "cudaEventRecord(image)");
    IM_CUDA(cudaStreamSynchronize(0), "cudaStreamSynchronize(image)");
    /* 4. only the image comes back */
    double t = 0;
    PK_TRY(pk_cuda_transfer(&h->xf, image, h->d_img, (size_t)n * (size_t)n * 4, 0,
                            "image download", &t));
    double zero_s, fft_s, crop_s;
    PK_TRY(im_ms(h, IM_EV_ZERO0, IM_EV_ZERO1, &zero_s));
    PK_TRY(im_ms(h, IM_EV_FFT0, IM_EV_FFT1, &fft_s));
    PK_TRY(im_ms(h, IM_EV_FFT1, IM_EV_CROP1, &crop_s));
    stage_s[0] = zero_s + gres->kernel_s;
    stage_s[1] = fft_s;
    stage_s[2] = crop_s;
    stage_s[3] = gres->transfer_s + t;
    return PK_OK;
}

/* Grid d on grid.cu's plan gr_impl into the device grid, transform, crop and correct, bring
 * the n x n image back.  gres: the grid run's result (norm, skipped, timings); stage_s[4]:
 * "grid" (zeroing and grid kernels), "fft", "correct", "transfer" (visibilities and image). */
extern "C" pk_status pk_cuda_im_run(void *impl, void *gr_impl, const pk_grid_data *d,
                                    float *image, pk_gr_result *gres, double *stage_s)
{
    im_plan *h = (im_plan *)impl;
    memset(gres, 0, sizeof *gres);
    const pk_status s = im_run(h, gr_impl, d, image, gres, stage_s);
    if (s != PK_OK) { /* leave the device idle for the next call; keep the first error */
        (void)cudaStreamSynchronize(0);
        (void)cudaGetLastError();
    }
    return s;
}
