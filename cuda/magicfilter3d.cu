/* magicfilter3d.cu - the BigDFT magic filter (docs/KERNELS.md section 2) on CUDA GPUs, variant
 * "cuda": the plan (x, y and the work buffers on the device; upload, run, download) and the
 * pass kernel.  A run is three launches of the same kernel, x -> w1 -> w2 -> y, each pass
 *     dst[j][d] = sum_{k<16} g[k] * src[d][j + k + off],   j < nout, d < ndat,
 * with src[d][t] wrapped modulo nin (periodic; nin may be < 16 and wrap several times), 0
 * outside [0, nin) (grow) or always inside (shrink), as pk_mf_pass_ref defines it.
 *
 * Design (why): the paper's / BigDFT's OpenCL design, as cl/magicfilter3d.cl's tile kernel.
 *  - A pass moves 16 bytes per output for 32 flops: memory-bound on any GPU, so what matters
 *    is that both the reads (src, along the line) and the writes (dst, along d after the
 *    transposition) are coalesced.  A block of 16 x 16 threads owns 16 lines (d0 ..) x 16
 *    outputs (j0 ..); it stages the 16 lines x 32 points it needs (16 outputs + 15 of halo,
 *    one spare) in a 16 x 33 double shared tile.  Thread i = 16 ty + tx loads column i % 32
 *    of rows i / 32 and i / 32 + 8, so a warp reads 32 consecutive doubles of one line and
 *    writes one shared row (no bank conflict).  Thread (tx, ty) then computes output j0 + ty
 *    of line d0 + tx from shared row tx and writes dst[j0 + ty][d0 + tx]: a half-warp stores
 *    128 contiguous bytes.  Reading down the tile, the 16 lanes of a half-warp are 33 doubles
 *    apart: 16 different 8-byte bank pairs, the two half-warps of a warp two wavefronts, the
 *    minimum for 256 bytes.  Per output: 2 loads + 1 store to global memory, 2 shared stores
 *    and 16 shared loads, 16 FMAs.  Estimate, not measured (no GPU where this was written):
 *    at 128 shared bytes per clock and SM, 16 shared loads per output are about one output
 *    per clock and SM, ~2.3e11 outputs/s on an H100 SXM, while its DRAM delivers ~2e11
 *    (16 bytes each): the shared pipe is close to being the limit, on an H200 (4.8 TB/s) it
 *    would be.  If measurements show that, 2 outputs per thread (17 shared loads for 2) is
 *    the next step.
 *  - 16 wide, not 32: the paper's tile, and 32 lines x 32 outputs would need 32 x 48 halo'd
 *    points per tile (1.5 loads per output instead of 2, but 12 KB of shared memory and 1024
 *    threads or 4 outputs per thread) for a kernel whose DRAM traffic does not change; the
 *    16 x 16 tile already writes whole 128-byte segments.
 *  - Wrap-around, zeros and bounds are handled at the load, once per thread (the two rows a
 *    thread loads share the column).  The grid is one-dimensional, j tiles fastest, so that
 *    consecutive blocks read overlapping windows of the same 16 lines (the halo comes from
 *    L2) and there is no 65535 limit on either tile count.
 *  - The 16 taps are a kernel parameter (128 bytes in the constant bank, read as FMA operands
 *    after full unrolling); not a __constant__ symbol, which every plan of the process would
 *    share.  Each output is summed in tap order k = 0 .. 15 with fma(), as the reference sums.
 *  - Indices: positions along a line are int (extents up to INT_MAX - 32 so that j0 + 31
 *    cannot overflow), lines and array offsets 64-bit; larger extents or more than INT_MAX
 *    blocks give PK_EUNSUPPORTED.
 *  - Like the host plans, w1 shares y's buffer when it fits (pass 1 writes y, pass 2 reads
 *    it, pass 3 overwrites it): periodic plans hold three arrays, not four.  x is never
 *    written, so a plan may run any number of times per upload.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_mf_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls), so that the kernel can be
 * emulated on the host (one thread per CUDA thread) to check its index arithmetic. */
/* PK_MF_KERNEL_BEGIN */
#define PK_MF_TILE 16  /* lines and outputs per block; blocks are 16 x 16 threads */
#define PK_MF_PITCH 33 /* doubles per shared row: 32 loaded + 1 against bank conflicts */
#define PK_MF_THREADS (PK_MF_TILE * PK_MF_TILE)

struct pk_mf_taps {
    double g[16];
};

/* BC: 0 periodic, 1 grow, 2 shrink (PK_MF_*). */
template <int BC>
__global__ void __launch_bounds__(PK_MF_THREADS)
pk_mf_kernel(const double *__restrict__ src, double *__restrict__ dst, int nin, int nout,
             long long ndat, int off, int tiles_j, const __grid_constant__ pk_mf_taps taps)
{
    __shared__ double tile[PK_MF_TILE * PK_MF_PITCH];
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int b = (int)blockIdx.x;
    const int j0 = (b % tiles_j) * PK_MF_TILE;
    const long long d0 = (long long)(b / tiles_j) * PK_MF_TILE;

    /* Load: thread i = 16 ty + tx fills column c of rows r and r + 8 with line point t. */
    const int i = ty * PK_MF_TILE + tx, c = i & 31, r = i >> 5;
    int t = j0 + off + c;
    bool inside = true;
    if (BC == 0) {
        if ((unsigned)t >= (unsigned)nin) { /* only near the ends: true modulo, any wraps */
            t %= nin;
            if (t < 0) t += nin;
        }
    } else {
        inside = t >= 0 && t < nin;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = r + 8 * h;
        const long long d = d0 + row;
        double v = 0.0;
        if (inside && d < ndat) v = __ldg(src + d * nin + t);
        tile[row * PK_MF_PITCH + c] = v;
    }
    __syncthreads();

    /* Output j0 + ty of line d0 + tx: taps k read shared row tx, columns ty .. ty + 15. */
    const double *p = tile + tx * PK_MF_PITCH + ty;
    double s = taps.g[0] * p[0];
#pragma unroll
    for (int k = 1; k < 16; ++k) s = fma(taps.g[k], p[k], s);

    const long long d = d0 + tx;
    const int j = j0 + ty;
    if (d < ndat && j < nout) dst[(long long)j * ndat + d] = s;
}
/* PK_MF_KERNEL_END */

/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_mf {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int bc;
    double *x, *w1, *w2, *y; /* device; w1 == y when w1 fits in y */
    size_t in_bytes, out_bytes;
    pk_mf_pass pass[3];
    int tiles_j[3], blocks[3];
    pk_mf_taps taps;
    cudaEvent_t ev[2];
} pk_cuda_mf;
PK_CUDA_XFER_FIRST(pk_cuda_mf);

extern "C" void pk_cuda_mf_destroy(void *impl)
{
    pk_cuda_mf *p = (pk_cuda_mf *)impl;
    if (p == NULL) return;
    /* Best effort: on a dead context these fail, and there is nothing left to report. */
    (void)cudaSetDevice(p->xf.device);
    if (p->ev[0]) cudaEventDestroy(p->ev[0]);
    if (p->ev[1]) cudaEventDestroy(p->ev[1]);
    if (p->x) cudaFree(p->x);
    if (p->w1 && p->w1 != p->y) cudaFree(p->w1);
    if (p->w2) cudaFree(p->w2);
    if (p->y) cudaFree(p->y);
    (void)cudaGetLastError();
    free(p);
}

/* cudaMalloc with the free/total figures in the error detail. */
static pk_status pk_mf_alloc(double **ptr, size_t bytes, const char *what, int device)
{
    cudaError_t e = cudaMalloc((void **)ptr, bytes);
    if (e == cudaSuccess) return PK_OK;
    size_t fr = 0, tot = 0;
    *ptr = NULL;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&fr, &tot);
    return pk_cuda_fail(e,
                        "cudaMalloc(magicfilter3d %s, %zu bytes, device %d; %zu of %zu bytes "
                        "free)",
                        what, bytes, device, fr, tot);
}

extern "C" pk_status pk_cuda_mf_create(void *state, int device, const pk_mf_desc *desc,
                                     void **impl)
{
    cudaError_t e;
    pk_status st;
    /* Int limits of the kernel: line positions up to the extent + 31, one grid dimension. */
    for (int a = 0; a < 3; ++a)
        PK_CHECK(desc->in[a] <= INT_MAX - 2 * PK_MF_TILE &&
                     desc->out[a] <= INT_MAX - 2 * PK_MF_TILE,
                 PK_EUNSUPPORTED,
                 "magicfilter3d: cuda indexes a line in int, extents up to %d, got %d -> %d "
                 "along axis %d",
                 INT_MAX - 2 * PK_MF_TILE, desc->in[a], desc->out[a], a + 1);
    long long tiles_j[3], blocks[3];
    for (int a = 0; a < 3; ++a) {
        const pk_mf_pass *ps = &desc->pass[a];
        tiles_j[a] = ((long long)ps->nout + PK_MF_TILE - 1) / PK_MF_TILE;
        const long long tiles_d = ((long long)ps->ndat + PK_MF_TILE - 1) / PK_MF_TILE;
        PK_CHECK(tiles_d <= INT_MAX / tiles_j[a], PK_EUNSUPPORTED,
                 "magicfilter3d: pass %d (%ld lines of %d -> %d points) needs %lld x %lld blocks, "
                 "more than a CUDA grid holds",
                 a + 1, ps->ndat, ps->nin, ps->nout, tiles_d, tiles_j[a]);
        blocks[a] = tiles_d * tiles_j[a];
    }

    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    pk_cuda_mf *p = (pk_cuda_mf *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "magicfilter3d: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->bc = desc->bc;
    p->in_bytes = desc->in_count * sizeof(double);
    p->out_bytes = desc->out_count * sizeof(double);
    for (int a = 0; a < 3; ++a) {
        p->pass[a] = desc->pass[a];
        p->tiles_j[a] = (int)tiles_j[a];
        p->blocks[a] = (int)blocks[a];
    }
    memcpy(p->taps.g, desc->g, sizeof p->taps.g);

    {
        const int w1_is_y = desc->work_count[0] <= desc->out_count;
        if ((st = pk_mf_alloc(&p->x, p->in_bytes, "x", device)) != PK_OK ||
            (st = pk_mf_alloc(&p->y, p->out_bytes, "y", device)) != PK_OK ||
            (st = pk_mf_alloc(&p->w2, desc->work_count[1] * sizeof(double), "second work array",
                              device)) != PK_OK)
            goto fail;
        if (w1_is_y)
            p->w1 = p->y;
        else if ((st = pk_mf_alloc(&p->w1, desc->work_count[0] * sizeof(double),
                                   "first work array", device)) != PK_OK)
            goto fail;
    }
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    if ((e = cudaMemset(p->x, 0, p->in_bytes)) != cudaSuccess ||
        (e = cudaMemset(p->y, 0, p->out_bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemset(magicfilter3d x and y, %zu + %zu bytes)", p->in_bytes,
                          p->out_bytes);
        goto fail;
    }
    for (int i = 0; i < 2; ++i) {
        if ((e = cudaEventCreate(&p->ev[i])) != cudaSuccess) {
            p->ev[i] = NULL;
            st = pk_cuda_fail(e, "cudaEventCreate");
            goto fail;
        }
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cuda_mf_destroy(p);
    return st;
}

extern "C" pk_status pk_cuda_mf_upload(void *impl, const double *x, double *seconds)
{
    pk_cuda_mf *p = (pk_cuda_mf *)impl;
    return pk_cuda_transfer(&p->xf, p->x, x, p->in_bytes, 1, "magicfilter3d upload", seconds);
}

template <int BC>
static void pk_mf_launch(const pk_cuda_mf *p, int a, const double *src, double *dst)
{
    const pk_mf_pass *ps = &p->pass[a];
    pk_cuda_launch(pk_mf_kernel<BC>, p->blocks[a], dim3(PK_MF_TILE, PK_MF_TILE), 0, 0, src, dst,
                   ps->nin, ps->nout, (long long)ps->ndat, ps->off, p->tiles_j[a], p->taps);
}

/* The three passes x -> w1 -> w2 -> y, timed by the plan's events.  w1 shares y's memory
 * when it fits there (the plan's y, or the caller's on device pointers: then the plan's x
 * and y are untouched). */
static pk_status pk_mf_passes(pk_cuda_mf *p, const double *x, double *y, double *kernel_seconds)
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
    double *w1 = p->w1 == p->y ? y : p->w1;
    const double *src[3] = {x, w1, p->w2};
    double *dst[3] = {w1, p->w2, y};
    for (int a = 0; a < 3; ++a) {
        if (p->bc == PK_MF_GROW)
            pk_mf_launch<PK_MF_GROW>(p, a, src[a], dst[a]);
        else if (p->bc == PK_MF_SHRINK)
            pk_mf_launch<PK_MF_SHRINK>(p, a, src[a], dst[a]);
        else
            pk_mf_launch<PK_MF_PERIODIC>(p, a, src[a], dst[a]);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return pk_cuda_fail(e, "magicfilter3d pass %d launch (%d blocks x %d threads, %ld "
                                   "lines of %d -> %d points)",
                                a + 1, p->blocks[a], PK_MF_THREADS, p->pass[a].ndat,
                                p->pass[a].nin, p->pass[a].nout);
    }
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "magicfilter3d kernel execution (cudaEventSynchronize)");
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

extern "C" pk_status pk_cuda_mf_run(void *impl, double *kernel_seconds)
{
    pk_cuda_mf *p = (pk_cuda_mf *)impl;
    return pk_mf_passes(p, p->x, p->y, kernel_seconds);
}

extern "C" pk_status pk_cuda_mf_download(void *impl, double *y, double *seconds)
{
    pk_cuda_mf *p = (pk_cuda_mf *)impl;
    return pk_cuda_transfer(&p->xf, y, p->y, p->out_bytes, 0, "magicfilter3d download",
                            seconds);
}

/* y = MF x on the caller's arrays: on them when both are device memory of the plan's device
 * (the plan's work arrays in between), else upload, run, download. */
extern "C" pk_status pk_cuda_mf_execute(void *impl, const double *x, double *y,
                                        double *kernel_seconds, double *transfer_seconds)
{
    pk_cuda_mf *p = (pk_cuda_mf *)impl;
    const pk_cuda_arg arg[2] = {{x, p->in_bytes, "x", 0}, {y, p->out_bytes, "y", 1}};
    double up = 0, down = 0;
    int direct = 0;
    *transfer_seconds = 0;
    PK_TRY(pk_cuda_direct(&p->xf, arg, 2, &direct));
    if (direct) return pk_mf_passes(p, x, y, kernel_seconds);
    PK_TRY(pk_cuda_mf_upload(p, x, &up));
    PK_TRY(pk_cuda_mf_run(p, kernel_seconds));
    PK_TRY(pk_cuda_mf_download(p, y, &down));
    *transfer_seconds = up + down;
    return PK_OK;
}

/* The magicfilter3d kernel family on this backend (lib/internal.h, pk_mf_ops). */
extern "C" const pk_mf_ops pk_cuda_mf_ops = {"cuda", pk_cuda_mf_create, pk_cuda_mf_upload, pk_cuda_mf_run, pk_cuda_mf_download, pk_cuda_mf_destroy, pk_cuda_mf_execute};
