/* conv2d.cu - StrayLight periodic 2-D correlation (docs/KERNELS.md section 5) on CUDA GPUs: the
 * conv2d plan (device buffers, upload, run, download) and the direct kernel (variant
 * "cuda"); the FFT variant "cuda-fft" lives in conv2d_fft.cu and shares this plan.
 *   out[y][x] = sum_{k<kh, l<kw} img[(y - kh/2 + k) mod h][(x - kw/2 + l) mod w] psf[k][l]
 * (the spec's out[(i + kh/2) % h][(j + kw/2) % w] = sum img[(i+k) % h][(j+l) % w] psf[k][l]
 * with y = i + kh/2, x = j + kw/2).
 *
 * Design (why):
 *  - 11 x 11 on 813 x 5271 is 0.52 G FMA against 34 MB of traffic: compute-bound, so the
 *    kernel is built around the FMA pipe.  A block of 32 x 8 threads owns a tile of 8 rows x
 *    256 columns; a warp is one output row, each thread 8 consecutive outputs.  The block
 *    copies the wrapped input window ((8 + kh - 1) x (256 + kw - 1), rounded up to whole
 *    float4s) into shared memory once - the only place where wrapping is handled, with
 *    true modulo, so a PSF larger than the image wraps as often as it must.
 *  - Each thread slides a 12-float register window along its shared row: one 16-byte shared
 *    load brings 4 new pixels, which feed 4 taps x 8 outputs = 32 FMAs.  Shared memory runs
 *    at half its peak at full FMA rate; a lane's window starts 32 bytes after its
 *    neighbour's, which would put lanes i and i+4 of a quarter-warp on the same banks, so the
 *    16-byte units of a row are XOR-swizzled (unit u is stored at u ^ ((u >> 3) & 1)): the
 *    eight lanes of a quarter-warp then hit eight distinct bank groups for every window
 *    offset.  ptxas 13.0 (sm_90): 47 registers, no local memory; the tap loop, unrolled by
 *    3, is 133 instructions for 96 FFMAs, with the PSF values in uniform registers (ULDC)
 *    and one MOV.
 *  - The PSF is a kernel parameter (__grid_constant__, read from the constant bank with a
 *    broadcast) when it has at most 1024 taps, else read from global memory with __ldg (one
 *    uniform address per warp).  A __constant__ symbol would be shared by every plan of the
 *    process: two contexts running plans on one device from two threads (allowed by
 *    portkern.h) would overwrite each other's PSF.  Parameters over 4 KB need a CUDA 12.1
 *    driver; the CUDA 13 runtime this links needs a newer one anyway.
 *  - PSFs whose window would not fit 48 KiB of shared memory are walked in chunks of rows
 *    and columns; the tile's accumulators stay in registers across chunks.
 *  - Summation order per output is fixed: each PSF row (of a chunk) is summed in float, then
 *    added to the output's float total, which keeps the rounding error statistically near
 *    sqrt(kw) + sqrt(kh) units.  Sums use fmaf.
 *  - The image and the output stay on the device: upload once, run many times.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_cv_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls): the review emulated it on the
 * host with one POSIX thread per CUDA thread to check the index arithmetic. */
/* PK_CV_KERNEL_BEGIN */
#define PK_CV_BX 32                      /* threads along x: one warp per output row */
#define PK_CV_BY 8                       /* thread rows = output rows per tile */
#define PK_CV_NX 8                       /* consecutive outputs per thread */
#define PK_CV_TX (PK_CV_BX * PK_CV_NX)   /* tile width: 256 */
#define PK_CV_TY PK_CV_BY                /* tile height: 8 */
#define PK_CV_THREADS (PK_CV_BX * PK_CV_BY)
#define PK_CV_SMEM_MAX (48 * 1024)       /* the default dynamic shared-memory limit */
#define PK_CV_PARAM_TAPS 1024            /* largest PSF passed as a kernel parameter */

/* The PSF as a kernel parameter; CAP = 1 is the placeholder of the global-memory kernel. */
template <int CAP> struct pk_cv_psf {
    float v[CAP];
};

/* Position of window column c in a shared row: 16-byte units XOR-swizzled (see above). */
__host__ __device__ __forceinline__ int pk_cv_swz(int c)
{
    return ((((c >> 2) ^ ((c >> 5) & 1))) << 2) | (c & 3);
}

/* Shared row pitch for a window of `cols` columns (a multiple of 4): the swizzle may move
 * the last unit one up, hence whole pairs of units. */
__host__ __device__ __forceinline__ int pk_cv_pitch(int cols) { return (cols + 7) & ~7; }

/* Window columns for a chunk of nl taps: the tile plus whole float4s of halo, read by the
 * last thread's final window load. */
__host__ __device__ __forceinline__ int pk_cv_cols(int nl)
{
    return PK_CV_TX + 4 * ((nl + 3) >> 2);
}

__device__ __forceinline__ int pk_cv_mod(int a, int m)
{
    const int r = a % m;
    return r < 0 ? r + m : r;
}

template <int CAP>
__device__ __forceinline__ float pk_cv_tap(const pk_cv_psf<CAP> &cp, const float *__restrict__ gp,
                                           int i)
{
    if constexpr (CAP > 1)
        return cp.v[i];
    else
        return __ldg(gp + i);
}

/* v[at..at+3] = the 4 window columns from c (a multiple of 4) of a shared row. */
__device__ __forceinline__ void pk_cv_ld4(float (&v)[12], int at, const float *row, int c)
{
    const float4 q = *reinterpret_cast<const float4 *>(row + pk_cv_swz(c));
    v[at] = q.x;
    v[at + 1] = q.y;
    v[at + 2] = q.z;
    v[at + 3] = q.w;
}

/* J taps starting at PSF index i: s[m] += v[m + j] * psf[i + j]. */
template <int J, int CAP>
__device__ __forceinline__ void pk_cv_taps(float (&s)[PK_CV_NX], const float (&v)[12],
                                           const pk_cv_psf<CAP> &cp,
                                           const float *__restrict__ gp, int i)
{
#pragma unroll
    for (int j = 0; j < J; ++j) {
        const float pj = pk_cv_tap(cp, gp, i + j);
#pragma unroll
        for (int m = 0; m < PK_CV_NX; ++m) s[m] = fmaf(v[m + j], pj, s[m]);
    }
}

/* One tile per block: blockIdx.x = tile row * tiles_x + tile column.  cbh x cbw: the PSF
 * chunk; pitch: the shared row pitch for cbw (pk_cv_pitch(pk_cv_cols(cbw))). */
template <int CAP>
__global__ void __launch_bounds__(PK_CV_THREADS)
pk_cv_kernel(const float *__restrict__ img, float *__restrict__ out,
             const float *__restrict__ gpsf, int h, int w, int kh, int kw, int cbh, int cbw,
             int pitch, int tiles_x, const __grid_constant__ pk_cv_psf<CAP> cpsf)
{
#ifdef PK_CUDA_EMULATE
    float *sm = reinterpret_cast<float *>(pk_emu_dynamic_shared<float4>());
#else
    extern __shared__ float4 pk_cv_smem[];
    float *sm = reinterpret_cast<float *>(pk_cv_smem);
#endif
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int x0 = ((int)blockIdx.x % tiles_x) * PK_CV_TX;
    const int y0 = ((int)blockIdx.x / tiles_x) * PK_CV_TY;
    const int c0 = PK_CV_NX * tx; /* this thread's first output column in the tile */

    float acc[PK_CV_NX];
#pragma unroll
    for (int m = 0; m < PK_CV_NX; ++m) acc[m] = 0.0f;

    for (int kb = 0; kb < kh; kb += cbh) {
        const int nk = min(cbh, kh - kb);
        for (int lb = 0; lb < kw; lb += cbw) {
            const int nl = min(cbw, kw - lb);
            /* Window of this chunk: row r, column c = img[(rb + r) mod h][(cb + c) mod w]. */
            const int rows = PK_CV_TY + nk - 1, cols = pk_cv_cols(nl);
            const int rb = pk_cv_mod(y0 - kh / 2 + kb, h), cb = pk_cv_mod(x0 - kw / 2 + lb, w);
            __syncthreads(); /* the previous chunk's readers are done */
            for (int r = ty; r < rows; r += PK_CV_BY) {
                int gr = rb + r;
                if (gr >= h) gr %= h;
                const float *src = img + (size_t)gr * (size_t)w;
                float *dst = sm + r * pitch;
#pragma unroll 4
                for (int c = tx; c < cols; c += PK_CV_BX) {
                    int gc = cb + c;
                    if (gc >= w) gc %= w;
                    dst[pk_cv_swz(c)] = __ldg(src + gc);
                }
            }
            __syncthreads();

            /* Output (y0 + ty, x0 + c0 + m), tap (kb + k, lb + l) reads
             * window[ty + k][c0 + m + l]. */
            const int full = nl >> 2, rem = nl & 3;
            for (int k = 0; k < nk; ++k) {
                const float *row = sm + (ty + k) * pitch;
                const int pi = (kb + k) * kw + lb;
                float v[12], s[PK_CV_NX];
#pragma unroll
                for (int m = 0; m < PK_CV_NX; ++m) s[m] = 0.0f;
                pk_cv_ld4(v, 0, row, c0);
                pk_cv_ld4(v, 4, row, c0 + 4);
                /* Unrolled by 3 so that the window's three float4s rotate by renaming. */
#pragma unroll 3
                for (int g = 0; g < full; ++g) {
                    pk_cv_ld4(v, 8, row, c0 + 8 + 4 * g);
                    pk_cv_taps<4>(s, v, cpsf, gpsf, pi + 4 * g);
#pragma unroll
                    for (int q = 0; q < 8; ++q) v[q] = v[q + 4];
                }
                if (rem) {
                    pk_cv_ld4(v, 8, row, c0 + 8 + 4 * full);
                    if (rem == 1)
                        pk_cv_taps<1>(s, v, cpsf, gpsf, pi + 4 * full);
                    else if (rem == 2)
                        pk_cv_taps<2>(s, v, cpsf, gpsf, pi + 4 * full);
                    else
                        pk_cv_taps<3>(s, v, cpsf, gpsf, pi + 4 * full);
                }
#pragma unroll
                for (int m = 0; m < PK_CV_NX; ++m) acc[m] += s[m];
            }
        }
    }

    const int y = y0 + ty;
    if (y < h) {
        float *o = out + (size_t)y * (size_t)w;
#pragma unroll
        for (int m = 0; m < PK_CV_NX; ++m)
            if (x0 + c0 + m < w) o[x0 + c0 + m] = acc[m];
    }
}

/* PSF chunk (cbh x cbw taps) whose window fits PK_CV_SMEM_MAX: the whole PSF when it fits,
 * else halve the longer side until it does.  Returns the shared bytes of the window. */
static size_t pk_cv_plan_chunk(int kh, int kw, int *cbh, int *cbw, int *pitch)
{
    int a = kh, b = kw;
    for (;;) {
        const size_t bytes = (size_t)(PK_CV_TY + a - 1) * (size_t)pk_cv_pitch(pk_cv_cols(b)) *
                             sizeof(float);
        if (bytes <= PK_CV_SMEM_MAX || (a == 1 && b == 1)) {
            *cbh = a;
            *cbw = b;
            *pitch = pk_cv_pitch(pk_cv_cols(b));
            return bytes;
        }
        if (b >= a)
            b = (b + 1) / 2;
        else
            a = (a + 1) / 2;
    }
}
/* PK_CV_KERNEL_END */

/* The emulated test (tests/test_cv_cuda_emu) launches the kernel itself with this geometry
 * (the emulated host side at the end of this file): the host side calls pk_cv_int_limits of
 * the dispatch layer, which it does not link. */
#ifndef PK_CUDA_EMULATE
/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_cv {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int h, w, kh, kw;
    size_t bytes;          /* one image */
    float *img, *out;      /* device */
    pk_cuda_cvfft *fft;    /* cuda-fft: the transform state; NULL: direct kernel */
    /* direct kernel */
    int cap;               /* PSF as a parameter of this capacity (128, 1024), or 1: global */
    float *taps;           /* host copy of the PSF (cap > 1) */
    float *psf;            /* device copy of the PSF (cap == 1) */
    int cbh, cbw, pitch, tiles_x, tiles;
    size_t smem;
    cudaEvent_t ev[2];
} pk_cuda_cv;
PK_CUDA_XFER_FIRST(pk_cuda_cv);

extern "C" void pk_cuda_cv_destroy(void *impl)
{
    pk_cuda_cv *p = (pk_cuda_cv *)impl;
    if (p == NULL) return;
    /* Best effort: on a dead context these fail, and there is nothing left to report. */
    (void)cudaSetDevice(p->xf.device);
    if (p->fft) pk_cuda_cvfft_destroy(p->fft);
    if (p->ev[0]) cudaEventDestroy(p->ev[0]);
    if (p->ev[1]) cudaEventDestroy(p->ev[1]);
    if (p->img) cudaFree(p->img);
    if (p->out) cudaFree(p->out);
    if (p->psf) cudaFree(p->psf);
    (void)cudaGetLastError();
    free(p->taps);
    free(p);
}

/* cudaMalloc with the free/total figures in the error detail. */
static pk_status pk_cv_alloc(float **ptr, size_t bytes, const char *what, int device)
{
    cudaError_t e = cudaMalloc((void **)ptr, bytes);
    if (e == cudaSuccess) return PK_OK;
    size_t fr = 0, tot = 0;
    *ptr = NULL;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&fr, &tot);
    return pk_cuda_fail(e, "cudaMalloc(conv2d %s, %zu bytes, device %d; %zu of %zu bytes free)",
                        what, bytes, device, fr, tot);
}

extern "C" pk_status pk_cuda_cv_create(void *state, int device, const pk_cv_desc *desc,
                                     void **impl)
{
    const int fft = desc->variant && !strcmp(desc->variant, "cuda-fft");
    cudaError_t e;
    pk_status st;
    const int h = desc->h, w = desc->w, kh = desc->kh, kw = desc->kw;
    size_t pixels = 0, taps = 0;
    PK_TRY(pk_cv_int_limits(desc, "cuda", &pixels, &taps));
    const long long tiles_x = (w + PK_CV_TX - 1) / PK_CV_TX;
    const long long tiles = tiles_x * ((h + PK_CV_TY - 1) / PK_CV_TY);
    PK_CHECK(tiles <= INT_MAX, PK_EUNSUPPORTED,
             "conv2d: a %d x %d image needs %lld tiles, more than a CUDA grid holds", h, w, tiles);

    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    pk_cuda_cv *p = (pk_cuda_cv *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "conv2d: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->h = h;
    p->w = w;
    p->kh = kh;
    p->kw = kw;
    p->bytes = pixels * sizeof(float);
    p->tiles_x = (int)tiles_x;
    p->tiles = (int)tiles;

    if ((st = pk_cv_alloc(&p->img, p->bytes, "image", device)) != PK_OK ||
        (st = pk_cv_alloc(&p->out, p->bytes, "output", device)) != PK_OK)
        goto fail;
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    if ((e = cudaMemset(p->img, 0, p->bytes)) != cudaSuccess ||
        (e = cudaMemset(p->out, 0, p->bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemset(conv2d buffers, %zu bytes)", p->bytes);
        goto fail;
    }
    for (int i = 0; i < 2; ++i) {
        if ((e = cudaEventCreate(&p->ev[i])) != cudaSuccess) {
            p->ev[i] = NULL;
            st = pk_cuda_fail(e, "cudaEventCreate");
            goto fail;
        }
    }

    if (fft) {
        if ((st = pk_cuda_cvfft_create(device, desc, &p->fft)) != PK_OK) goto fail;
    } else {
        p->smem = pk_cv_plan_chunk(kh, kw, &p->cbh, &p->cbw, &p->pitch);
        if (taps <= PK_CV_PARAM_TAPS) {
            p->cap = taps <= 128 ? 128 : PK_CV_PARAM_TAPS;
            p->taps = (float *)calloc((size_t)p->cap, sizeof(float));
            if (p->taps == NULL) {
                st = pk_fail(PK_ENOMEM, "conv2d: out of host memory for the PSF");
                goto fail;
            }
            memcpy(p->taps, desc->psf, taps * sizeof(float));
        } else {
            p->cap = 1;
            if ((st = pk_cv_alloc(&p->psf, taps * sizeof(float), "psf", device)) != PK_OK)
                goto fail;
            if ((e = cudaMemcpy(p->psf, desc->psf, taps * sizeof(float),
                                cudaMemcpyHostToDevice)) != cudaSuccess) {
                st = pk_cuda_fail(e, "cudaMemcpy(conv2d psf, %zu bytes)", taps * sizeof(float));
                goto fail;
            }
        }
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cuda_cv_destroy(p);
    return st;
}

extern "C" pk_status pk_cuda_cv_upload(void *impl, const float *image, double *seconds)
{
    pk_cuda_cv *p = (pk_cuda_cv *)impl;
    return pk_cuda_transfer(&p->xf, p->img, image, p->bytes, 1, "conv2d upload", seconds);
}

template <int CAP> static void pk_cv_launch(const pk_cuda_cv *p, const float *img, float *out)
{
    pk_cv_psf<CAP> cp;
    if constexpr (CAP > 1)
        memcpy(cp.v, p->taps, sizeof cp.v);
    else
        cp.v[0] = 0.0f;
    pk_cv_kernel<CAP><<<p->tiles, dim3(PK_CV_BX, PK_CV_BY), p->smem>>>(
        img, out, p->psf, p->h, p->w, p->kh, p->kw, p->cbh, p->cbw, p->pitch, p->tiles_x,
        cp);
}

/* out = img (*) psf on these device images (the plan's, or the caller's), timed. */
static pk_status pk_cv_frame(pk_cuda_cv *p, const float *img, float *out,
                             double *kernel_seconds)
{
    cudaError_t e;
    float ms = 0.0f;
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    /* Clear a stale error of an earlier unrelated call, so the checks below report only
     * this run's launches. */
    (void)cudaGetLastError();
    if ((e = cudaEventRecord(p->ev[0], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if (p->fft) {
        PK_TRY(pk_cuda_cvfft_run(p->fft, img, out));
    } else {
        if (p->cap == 128)
            pk_cv_launch<128>(p, img, out);
        else if (p->cap == PK_CV_PARAM_TAPS)
            pk_cv_launch<PK_CV_PARAM_TAPS>(p, img, out);
        else
            pk_cv_launch<1>(p, img, out);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return pk_cuda_fail(e, "conv2d kernel launch (%d blocks x %d threads, %zu bytes of "
                                   "shared memory, psf %d x %d)",
                                p->tiles, PK_CV_THREADS, p->smem, p->kh, p->kw);
    }
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "conv2d %s execution (cudaEventSynchronize)",
                            p->fft ? "cuda-fft" : "kernel");
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

extern "C" pk_status pk_cuda_cv_run(void *impl, double *kernel_seconds)
{
    pk_cuda_cv *p = (pk_cuda_cv *)impl;
    return pk_cv_frame(p, p->img, p->out, kernel_seconds);
}

extern "C" pk_status pk_cuda_cv_download(void *impl, float *out, double *seconds)
{
    pk_cuda_cv *p = (pk_cuda_cv *)impl;
    return pk_cuda_transfer(&p->xf, out, p->out, p->bytes, 0, "conv2d download", seconds);
}

/* out = image (*) psf on the caller's arrays: on them when both are device memory of the
 * plan's device (both variants read the image and write the output through pointers; the
 * FFT's padded arrays are the plan's), else upload, run, download. */
extern "C" pk_status pk_cuda_cv_execute(void *impl, const float *image, float *out,
                                        double *kernel_seconds, double *transfer_seconds)
{
    pk_cuda_cv *p = (pk_cuda_cv *)impl;
    const pk_cuda_arg arg[2] = {{image, p->bytes, "image", 0}, {out, p->bytes, "out", 1}};
    double up = 0, down = 0;
    int direct = 0;
    *transfer_seconds = 0;
    PK_TRY(pk_cuda_direct(&p->xf, arg, 2, &direct));
    if (direct) return pk_cv_frame(p, image, out, kernel_seconds);
    PK_TRY(pk_cuda_cv_upload(p, image, &up));
    PK_TRY(pk_cuda_cv_run(p, kernel_seconds));
    PK_TRY(pk_cuda_cv_download(p, out, &down));
    *transfer_seconds = up + down;
    return PK_OK;
}

/* The conv2d kernel family on this backend (lib/internal.h, pk_cv_ops). */
extern "C" const pk_cv_ops pk_cuda_cv_ops = {"cuda,cuda-fft", pk_cuda_cv_create, pk_cuda_cv_upload, pk_cuda_cv_run, pk_cuda_cv_download, pk_cuda_cv_destroy,
                                             pk_cuda_cv_execute};
#else /* PK_CUDA_EMULATE */
/* ---- emulated host side (tests/test_cv_cuda_emu, cuda/emulate.h) ------------------------
 * pk_emu_cv_direct launches the kernel with the geometry of pk_cuda_cv_create and
 * pk_cv_launch - one tile per block, the PSF as a parameter of capacity 128 or 1024 or else in
 * global memory, the chunk and shared bytes of pk_cv_plan_chunk.  pk_emu_cv_fft runs
 * conv2d_fft.cu's own host code (its plan and frame functions, with cuda/emulate.h's cuFFT) on
 * device copies of the image. */
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
#endif /* PK_CUDA_EMULATE */
