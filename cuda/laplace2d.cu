/* laplace2d.cu - the 2-D smoothing Laplacian (docs/KERNELS.md section 4a) on CUDA GPUs, both
 * layouts.  Compiled here; no GPU was available to run it (the index arithmetic of the device
 * code was checked by a host emulation against the serial reference).
 *
 * Design (why):
 *  - One iteration moves 8 bytes per site (one float read, one written) for 7 flops: it is
 *    bound by DRAM (or, at 2048^2 = 16.8 MB per field, by L2) bandwidth, so the kernel reads
 *    each value from memory once and writes each output once.
 *  - Lanes as threads: thread i of a row owns the site at row offset i = x' nw + w, so a warp
 *    loads and stores 32 consecutive floats in either layout (lexi is nw = 1).  On a GPU the
 *    hvfo layout changes nothing but the index of the east neighbour of column m-1 (column 0,
 *    one lane up) and of the west neighbour of column 0 (column m-1, one lane down); the
 *    vector-register form of hvfo belongs to the CPU backends.
 *  - Each thread marches down LP_RY consecutive rows keeping north, centre and south in
 *    registers: a row is loaded from memory once per thread and step (the rows above and below
 *    the block's range are the only re-reads, 2 / LP_RY of the traffic); the x neighbours are
 *    the adjacent threads' values, served by L1.
 *  - Arithmetic with __fadd_rn / __fmul_rn: no FMA contraction, so an iteration matches the
 *    serial reference bit for bit (the cost, two more instructions per site, hides behind the
 *    memory traffic).
 *  - Iterations are launched back to back on one stream, swapping buffers; nothing is copied
 *    to the host between iterations and the only synchronisation is at the end of a run.
 *  - A caller's lexi field in device memory (plan_execute on an hvfo plan:
 *    pk_cuda_lp_execute_canonical) is reordered into the plan's buffer and back on the device
 *    (pk_lp_kernel_reorder, lib/lattice_index.h's pk_lp_hvfo_col: the host reorder's bits);
 *    nothing crosses the link.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_lp_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "lattice_index.h"

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls), so that it can be emulated on the
 * host. */
/* PK_LP_KERNEL_BEGIN */
#define PK_LP_TX 128 /* threads per block: 128 consecutive sites of a row */
#define PK_LP_RY 8   /* rows per thread */

__global__ void __launch_bounds__(PK_LP_TX)
pk_lp_kernel(const float *__restrict__ f, float *__restrict__ g, int l, int nw, float a,
             float inv)
{
    const int i = (int)(blockIdx.x * PK_LP_TX + threadIdx.x);
    if (i >= l) return;
    const int y0 = (int)blockIdx.y * PK_LP_RY;
    const int y1 = min(y0 + PK_LP_RY, l);
    const int m = l / nw, xp = i / nw, w = i - xp * nw;
    /* east of column m-1 is column 0 one lane up; west of column 0 is column m-1 one lane down */
    const int ie = xp < m - 1 ? i + nw : (w + 1 == nw ? 0 : w + 1);
    const int iw = xp > 0 ? i - nw : (m - 1) * nw + (w == 0 ? nw - 1 : w - 1);
    const size_t ls = (size_t)l;
    size_t row = (size_t)y0 * ls;
    float n = __ldg(f + (size_t)(y0 == 0 ? l - 1 : y0 - 1) * ls + i);
    float c = __ldg(f + row + i);
    for (int y = y0; y < y1; ++y) {
        const size_t rs = (size_t)(y + 1 == l ? 0 : y + 1) * ls;
        const float s = __ldg(f + rs + i);
        const float e = __ldg(f + row + ie), wv = __ldg(f + row + iw);
        const float sum = __fadd_rn(__fadd_rn(e, wv), __fadd_rn(n, s));
        g[row + i] = __fmul_rn(__fadd_rn(c, __fmul_rn(a, sum)), inv);
        n = c;
        c = s;
        row += ls;
    }
}

/* The lexi <-> hvfo reorder on the device (plan_execute on the caller's lexi field in device
 * memory): float t = y l + x of the lexi field is float y l + pk_lp_hvfo_col(l, nw, x) of
 * the hvfo one (lib/lattice_index.h, the host reorder's rule: the same bits); consecutive
 * threads read (to_hvfo) or write consecutive lexi floats.  Grid-stride over the l^2 floats,
 * at most PK_LP_CONV_BLOCKS blocks. */
#define PK_LP_CONV_BLOCKS 65536
__global__ void __launch_bounds__(PK_LP_TX)
pk_lp_kernel_reorder(const float *__restrict__ src, float *__restrict__ dst, int l, int nw,
                     int to_hvfo)
{
    const long long total = (long long)l * l, step = (long long)gridDim.x * PK_LP_TX;
    for (long long t = (long long)blockIdx.x * PK_LP_TX + threadIdx.x; t < total; t += step) {
        const long long y = t / l;
        const long long h = y * l + pk_lp_hvfo_col(l, nw, (int)(t - y * l));
        if (to_hvfo)
            dst[h] = __ldg(src + t);
        else
            dst[t] = __ldg(src + h);
    }
}
/* PK_LP_KERNEL_END */

/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_lp {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int l, nw;
    float a, inv;
    size_t bytes; /* one field */
    float *buf[2];
    int cur;      /* buffer holding the latest field */
    cudaEvent_t ev[2];
} pk_cuda_lp;
PK_CUDA_XFER_FIRST(pk_cuda_lp);

extern "C" void pk_cuda_lp_destroy(void *impl)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    if (p == NULL) return;
    /* Best effort: on a dead context these fail, and there is nothing left to report. */
    (void)cudaSetDevice(p->xf.device);
    if (p->ev[0]) cudaEventDestroy(p->ev[0]);
    if (p->ev[1]) cudaEventDestroy(p->ev[1]);
    if (p->buf[0]) cudaFree(p->buf[0]);
    if (p->buf[1]) cudaFree(p->buf[1]);
    (void)cudaGetLastError();
    free(p);
}

extern "C" pk_status pk_cuda_lp_create(void *state, int device, const pk_lp_desc *desc,
                                     void **impl)
{
    cudaError_t e;
    pk_cuda_lp *p;

    PK_CHECK(desc->l >= 1 && desc->nw >= 1 && desc->l % desc->nw == 0, PK_ESIZE,
             "laplace2d: l = %d, nw = %d: need l >= 1 and l %% nw == 0", desc->l, desc->nw);
    /* The kernel's limits: int row offsets (l <= INT_MAX - PK_LP_TX for the thread index) and
     * one grid row of blocks per PK_LP_RY rows (gridDim.y <= 65535). */
    PK_CHECK(desc->l <= INT_MAX - PK_LP_TX && (desc->l + PK_LP_RY - 1) / PK_LP_RY <= 65535,
             PK_EUNSUPPORTED, "laplace2d: cuda handles l <= %d, got %d", 65535 * PK_LP_RY,
             desc->l);
    const size_t sites = (size_t)desc->l * (size_t)desc->l;
    PK_CHECK(sites <= SIZE_MAX / sizeof(float), PK_EOVERFLOW,
             "laplace2d: %d x %d floats overflow size_t", desc->l, desc->l);

    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    p = (pk_cuda_lp *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "laplace2d: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->l = desc->l;
    p->nw = desc->nw;
    p->a = desc->sigma;
    p->inv = desc->inv;
    p->bytes = sites * sizeof(float);
    for (int i = 0; i < 2; ++i) {
        e = cudaMalloc((void **)&p->buf[i], p->bytes);
        if (e != cudaSuccess) {
            size_t fr = 0, tot = 0;
            p->buf[i] = NULL;
            (void)cudaGetLastError();
            (void)cudaMemGetInfo(&fr, &tot);
            pk_status st = pk_cuda_fail(
                e, "cudaMalloc(laplace2d field %d of 2, %zu bytes, device %d; %zu of %zu bytes "
                   "free)",
                i + 1, p->bytes, device, fr, tot);
            pk_cuda_lp_destroy(p);
            return st;
        }
        /* A download before any upload returns zeros, not stale memory. */
        if ((e = cudaMemset(p->buf[i], 0, p->bytes)) != cudaSuccess) {
            pk_status st = pk_cuda_fail(e, "cudaMemset(laplace2d field %d)", i + 1);
            pk_cuda_lp_destroy(p);
            return st;
        }
    }
    for (int i = 0; i < 2; ++i) {
        if ((e = cudaEventCreate(&p->ev[i])) != cudaSuccess) {
            p->ev[i] = NULL;
            pk_status st = pk_cuda_fail(e, "cudaEventCreate");
            pk_cuda_lp_destroy(p);
            return st;
        }
    }
    p->cur = 0;
    *impl = p;
    return PK_OK;
}

extern "C" pk_status pk_cuda_lp_upload(void *impl, const float *phi, double *seconds)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    PK_TRY(pk_cuda_transfer(&p->xf, p->buf[0], phi, p->bytes, 1, "laplace2d upload", seconds));
    p->cur = 0;
    return PK_OK;
}

/* count iterations from field a, alternating with b, timed by the plan's events.  back: an
 * odd count's result (in b) is copied to a before the closing event: kernel time, since no
 * byte crosses the link (as in diffusion3d.cu's pk_d3_steps). */
static pk_status pk_lp_steps(pk_cuda_lp *p, float *a, float *b, int count, int back,
                             double *kernel_seconds)
{
    cudaError_t e;
    float ms = 0.0f;
    if (kernel_seconds) *kernel_seconds = 0.0;
    PK_CHECK(count >= 0, PK_EINVAL, "count: must be >= 0, got %d", count);
    if (count == 0) return PK_OK;
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    /* Clear a stale error of an earlier unrelated call, so the launch checks below report
     * only our launches. */
    (void)cudaGetLastError();

    const dim3 grid((unsigned)((p->l + PK_LP_TX - 1) / PK_LP_TX),
                    (unsigned)((p->l + PK_LP_RY - 1) / PK_LP_RY));
    const dim3 block(PK_LP_TX);
    if ((e = cudaEventRecord(p->ev[0], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    for (int i = 0; i < count; ++i) {
        pk_cuda_launch(pk_lp_kernel, grid, block, 0, 0, (const float *)a, b, p->l, p->nw, p->a,
                       p->inv);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return pk_cuda_fail(e, "laplace2d kernel launch (iteration %d of %d, grid %u x %u, "
                                   "block %d)",
                                i + 1, count, grid.x, grid.y, PK_LP_TX);
        float *t = a;
        a = b;
        b = t;
    }
    if (back && (count & 1) &&
        (e = cudaMemcpyAsync(b, a, p->bytes, cudaMemcpyDeviceToDevice, 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaMemcpyAsync(laplace2d result back into the field, %zu "
                               "bytes)",
                            p->bytes);
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "laplace2d kernel execution (%d iterations; cudaEventSynchronize)",
                            count);
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

extern "C" pk_status pk_cuda_lp_run(void *impl, int count, double *kernel_seconds)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    PK_TRY(pk_lp_steps(p, p->buf[p->cur], p->buf[p->cur ^ 1], count, 0, kernel_seconds));
    p->cur ^= count & 1;
    return PK_OK;
}

extern "C" pk_status pk_cuda_lp_download(void *impl, float *phi, double *seconds)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    return pk_cuda_transfer(&p->xf, phi, p->buf[p->cur], p->bytes, 0, "laplace2d download",
                            seconds);
}

/* On the caller's field (in the plan's layout) in place.  Device memory of the plan's device:
 * the iterations run on it, the plan's other buffer (not the resident field) the work array;
 * anything else: upload, run, download. */
extern "C" pk_status pk_cuda_lp_execute(void *impl, float *phi, int count, double *kernel_seconds,
                                        double *transfer_seconds)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    const pk_cuda_arg arg = {phi, p->bytes, "phi", 1};
    double up = 0, down = 0;
    int direct = 0;
    *transfer_seconds = 0;
    PK_TRY(pk_cuda_direct(&p->xf, &arg, 1, &direct));
    if (direct) return pk_lp_steps(p, phi, p->buf[p->cur ^ 1], count, 1, kernel_seconds);
    PK_TRY(pk_cuda_lp_upload(p, phi, &up));
    PK_TRY(pk_cuda_lp_run(p, count, kernel_seconds));
    PK_TRY(pk_cuda_lp_download(p, phi, &down));
    *transfer_seconds = up + down;
    return PK_OK;
}

/* One reorder on the device, waited for; *seconds += its time. */
static pk_status pk_lp_reorder(pk_cuda_lp *p, const float *src, float *dst, int to_hvfo,
                               double *seconds)
{
    cudaError_t e;
    const long long need = ((long long)p->l * p->l + PK_LP_TX - 1) / PK_LP_TX;
    const dim3 g((unsigned)(need < PK_LP_CONV_BLOCKS ? need : PK_LP_CONV_BLOCKS)), b(PK_LP_TX);
    const double t0 = pk_now();
    (void)cudaGetLastError(); /* a stale error of an earlier call is not this launch's */
    pk_cuda_launch(pk_lp_kernel_reorder, g, b, 0, 0, src, dst, p->l, p->nw, to_hvfo);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "laplace2d reorder launch (%u blocks x %d threads)", g.x,
                            PK_LP_TX);
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess)
        return pk_cuda_fail(e, "laplace2d reorder (cudaStreamSynchronize)");
    *seconds += pk_now() - t0;
    return PK_OK;
}

/* count iterations on the caller's lexi field phi, device memory of the plan's device, in
 * place: reordered into the plan's first buffer on the device, iterated between its two
 * buffers, the result reordered back into phi (lexi: the iterations run on phi itself, as
 * execute's direct path).  Nothing crosses the link; the resident field is overwritten. */
extern "C" pk_status pk_cuda_lp_execute_canonical(void *impl, float *phi, int count,
                                                  double *kernel_seconds, double *layout_seconds)
{
    pk_cuda_lp *p = (pk_cuda_lp *)impl;
    cudaError_t e;
    *kernel_seconds = *layout_seconds = 0;
    PK_CHECK(pk_cuda_memory(&p->xf, phi, p->bytes) == PK_MEM_DEVICE, PK_EINVAL,
             "laplace2d phi: not device memory of device %d (%zu bytes)", p->xf.device,
             p->bytes);
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    if (p->nw == 1) { /* lexi is hvfo with one lane: no reorder */
        PK_TRY(pk_lp_steps(p, phi, p->buf[p->cur ^ 1], count, 1, kernel_seconds));
    } else {
        PK_TRY(pk_lp_reorder(p, phi, p->buf[0], 1, layout_seconds));
        p->cur = 0;
        PK_TRY(pk_cuda_lp_run(p, count, kernel_seconds));
        PK_TRY(pk_lp_reorder(p, p->buf[p->cur], phi, 0, layout_seconds));
    }
    p->xf.paths |= PK_CUDA_PATH_NONE;
    return PK_OK;
}

/* The laplace2d kernel family on this backend (lib/internal.h, pk_lp_ops). */
extern "C" const pk_lp_ops pk_cuda_lp_ops = {"cuda", pk_cuda_lp_create, pk_cuda_lp_upload, pk_cuda_lp_run, pk_cuda_lp_download, pk_cuda_lp_destroy, pk_cuda_lp_execute, pk_cuda_lp_execute_canonical};
