/* su3.cu - su3 (docs/KERNELS.md section 4b) on CUDA GPUs, variant "cuda": the plan (u, psi and
 * chi on the device in the plan's layout; upload, run, download) and one kernel per layout
 * family, as cl/su3.cl:
 *   aos family (aos, short, padded, recon12; a template parameter picks how the link is
 *     read and its missing elements rebuilt), vfo, hvfo;
 * one thread per site over the padded sites (the padding holds zeros and yields zeros).
 *
 * Design (why), an estimate, never measured: no GPU was at hand where this was written, so
 * this file was compiled (sm_90 + PTX) and its device functions were run on the host against
 * the serial reference (the code between the markers is self-contained for that), but the
 * kernels themselves never ran.
 *  - 264 flops per 528 bytes (0.5 flop/B): far below any GPU's fp64 balance (an H100 SXM:
 *    ~34 TFlop/s fp64 over ~3.3 TB/s, ~10 flop/B), so what matters is that every byte
 *    fetched is used and that chi does not push u and psi out of L2.  Reads go through the
 *    read-only path (__ldg), chi is written with streaming stores (__stcs, evict-first:
 *    the GPU counterpart of the host's non-temporal stores).
 *  - vfo and hvfo are coalesced: consecutive threads read consecutive complex numbers (vfo)
 *    or doubles (hvfo; a warp covers 32 / nw blocks, 64-byte pieces for nw = 8).  The AoS
 *    family is not: a thread reads its own 96..192 contiguous bytes of u and 192 of psi
 *    (16-byte double2 loads), so a warp's load instruction touches 32 different segments;
 *    L1 keeps the lines between the instructions of the same thread, so DRAM traffic stays
 *    near the model but the load/store units do several times the work: the baseline the
 *    paper's layouts improve on.
 *  - Indices are 64-bit (arrays of any size); the grid is one-dimensional with 256 threads
 *    per block, up to INT_MAX blocks.
 *  - Device arrays in the public layout (plan_execute with u, psi and chi all on the plan's
 *    device: pk_cuda_s3_execute_canonical): the layout conversion runs on the device, one
 *    thread per element (pk_s3_kernel_pack / _unpack, lib/lattice_index.h's pk_s3_index, the
 *    rule of lib/su3.c's host conversion: the same bits), into and out of the plan's own u,
 *    psi and chi, so a caller keeping its fields on the GPU pays no transfer and no host
 *    pass.  Reads of the AoS side are coalesced, the vfo/hvfo side is scattered in 8-byte
 *    pieces: a conversion costs about one more pass over the arrays than the kernel
 *    (unmeasured).
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_s3_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include "lattice_index.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls; __host__ __device__ site
 * functions), so that it can be compiled for the host and run there, one call per site, to
 * check its index arithmetic against the reference. */
/* PK_S3_KERNEL_BEGIN */
#define PK_S3_THREADS 256
#define PK_S3_L_AOS 0
#define PK_S3_L_SHORT 1
#define PK_S3_L_PADDED 2
#define PK_S3_L_RECON12 5

#if defined(__CUDA_ARCH__)
#define S3_LD(p) __ldg(p)
#define S3_ST(p, v) __stcs((p), (v))
#else
#define S3_LD(p) (*(p))
#define S3_ST(p, v) (*(p) = (v))
#endif

__host__ __device__ static inline double2 s3_mul(double2 a, double2 b)
{
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__host__ __device__ static inline double2 s3_add(double2 a, double2 b)
{
    return make_double2(a.x + b.x, a.y + b.y);
}

/* conj(a b - c d) */
__host__ __device__ static inline double2 s3_conj_cross(double2 a, double2 b, double2 c, double2 d)
{
    const double2 x = s3_mul(a, b), y = s3_mul(c, d);
    return make_double2(x.x - y.x, -(x.y - y.y));
}

/* chi[c][k] = sum_c' m[3c + c'] psi[c'][k]: p[e] is psi element e = 4 c' + k. */
__host__ __device__ static inline void s3_apply(const double2 *m, const double2 *p, double2 *x)
{
#pragma unroll
    for (int c = 0; c < 3; ++c)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            double2 a = s3_mul(m[3 * c], p[k]);
            a = s3_add(a, s3_mul(m[3 * c + 1], p[4 + k]));
            a = s3_add(a, s3_mul(m[3 * c + 2], p[8 + k]));
            x[4 * c + k] = a;
        }
}

/* Site s of the AoS family: u and psi / chi as double2 (complex) arrays. */
template <int L>
__host__ __device__ static inline void s3_site_aos(const double2 *__restrict__ u,
                                                   const double2 *__restrict__ psi,
                                                   double2 *__restrict__ chi, long long s)
{
    double2 m[9], p[12], x[12];
    if (L == PK_S3_L_SHORT) { /* 8 elements; u22 = conj(u00 u11 - u01 u10) */
        const double2 *U = u + 8 * s;
#pragma unroll
        for (int e = 0; e < 8; ++e) m[e] = S3_LD(U + e);
        m[8] = s3_conj_cross(m[0], m[4], m[1], m[3]);
    } else if (L == PK_S3_L_RECON12) { /* rows 0, 1; u2i = conj(u0j u1k - u0k u1j), cyclic */
        const double2 *U = u + 6 * s;
#pragma unroll
        for (int e = 0; e < 6; ++e) m[e] = S3_LD(U + e);
        m[6] = s3_conj_cross(m[1], m[5], m[2], m[4]);
        m[7] = s3_conj_cross(m[2], m[3], m[0], m[5]);
        m[8] = s3_conj_cross(m[0], m[4], m[1], m[3]);
    } else { /* aos: 9 per site; padded: 12 (9 and 3 zeros) */
        const double2 *U = u + (L == PK_S3_L_PADDED ? 12 : 9) * s;
#pragma unroll
        for (int e = 0; e < 9; ++e) m[e] = S3_LD(U + e);
    }
    const double2 *P = psi + 12 * s;
#pragma unroll
    for (int e = 0; e < 12; ++e) p[e] = S3_LD(P + e);
    s3_apply(m, p, x);
    double2 *X = chi + 12 * s;
#pragma unroll
    for (int e = 0; e < 12; ++e) S3_ST(X + e, x[e]);
}

/* Site s of vfo: element e at complex index e * ns + s. */
__host__ __device__ static inline void s3_site_vfo(const double2 *__restrict__ u,
                                                   const double2 *__restrict__ psi,
                                                   double2 *__restrict__ chi, long long s,
                                                   long long ns)
{
    double2 m[9], p[12], x[12];
#pragma unroll
    for (int e = 0; e < 9; ++e) m[e] = S3_LD(u + e * ns + s);
#pragma unroll
    for (int e = 0; e < 12; ++e) p[e] = S3_LD(psi + e * ns + s);
    s3_apply(m, p, x);
#pragma unroll
    for (int e = 0; e < 12; ++e) S3_ST(chi + e * ns + s, x[e]);
}

/* Site s of hvfo: lane w = s % nw of block b = s / nw; element e's re at
 * (b E + e) 2 nw + w (E = 9 for u, 12 for psi / chi), its im nw later. */
__host__ __device__ static inline void s3_site_hvfo(const double *__restrict__ u,
                                                    const double *__restrict__ psi,
                                                    double *__restrict__ chi, long long s, int nw)
{
    const long long b = s / nw, w = s % nw;
    const double *U = u + 18 * nw * b + w, *P = psi + 24 * nw * b + w;
    double *X = chi + 24 * nw * b + w;
    double2 m[9], p[12], x[12];
#pragma unroll
    for (int e = 0; e < 9; ++e)
        m[e] = make_double2(S3_LD(U + 2 * e * nw), S3_LD(U + (2 * e + 1) * nw));
#pragma unroll
    for (int e = 0; e < 12; ++e)
        p[e] = make_double2(S3_LD(P + 2 * e * nw), S3_LD(P + (2 * e + 1) * nw));
    s3_apply(m, p, x);
#pragma unroll
    for (int e = 0; e < 12; ++e) {
        S3_ST(X + 2 * e * nw, x[e].x);
        S3_ST(X + (2 * e + 1) * nw, x[e].y);
    }
}

template <int L>
__global__ void __launch_bounds__(PK_S3_THREADS)
pk_s3_kernel_aos(const double2 *__restrict__ u, const double2 *__restrict__ psi,
                 double2 *__restrict__ chi, long long n)
{
    const long long s = (long long)blockIdx.x * PK_S3_THREADS + threadIdx.x;
    if (s < n) s3_site_aos<L>(u, psi, chi, s);
}

__global__ void __launch_bounds__(PK_S3_THREADS)
pk_s3_kernel_vfo(const double2 *__restrict__ u, const double2 *__restrict__ psi,
                 double2 *__restrict__ chi, long long ns)
{
    const long long s = (long long)blockIdx.x * PK_S3_THREADS + threadIdx.x;
    if (s < ns) s3_site_vfo(u, psi, chi, s, ns);
}

__global__ void __launch_bounds__(PK_S3_THREADS)
pk_s3_kernel_hvfo(const double *__restrict__ u, const double *__restrict__ psi,
                  double *__restrict__ chi, long long n, int nw)
{
    const long long s = (long long)blockIdx.x * PK_S3_THREADS + threadIdx.x;
    if (s < n) s3_site_hvfo(u, psi, chi, s, nw);
}
/* The layout conversion on the device (plan_execute on the caller's device arrays in the
 * public AoS layout), where lib/lattice_index.h's pk_s3_index puts each double, so it gives
 * pk_su3_pack's bits.  pack: element t of the layout array's total = nsites m doubles (site
 * s = t / m, double k = t % m) gets AoS double k of site s, or 0 for the padding (s >= nv,
 * or k >= n: padded's 6 after 18); consecutive threads read consecutive AoS doubles.
 * unpack: AoS double t of the nv n gets its layout element.  Grid-stride loops: any size
 * on a grid of at most PK_S3_CONV_BLOCKS blocks. */
#define PK_S3_CONV_BLOCKS 65536
__global__ void __launch_bounds__(PK_S3_THREADS)
pk_s3_kernel_pack(const double *__restrict__ aos, double *__restrict__ lay, long long total,
                  long long nv, int n, int m, int layout, long long nsites, int nw)
{
    const long long step = (long long)gridDim.x * PK_S3_THREADS;
    for (long long t = (long long)blockIdx.x * PK_S3_THREADS + threadIdx.x; t < total;
         t += step) {
        const long long s = t / m;
        const int k = (int)(t - s * m);
        lay[pk_s3_index(layout, m, (size_t)nsites, nw, (size_t)s, k)] =
            s < nv && k < n ? S3_LD(aos + s * n + k) : 0.0;
    }
}

__global__ void __launch_bounds__(PK_S3_THREADS)
pk_s3_kernel_unpack(const double *__restrict__ lay, double *__restrict__ aos, long long total,
                    int n, int layout, long long nsites, int nw)
{
    const long long step = (long long)gridDim.x * PK_S3_THREADS;
    for (long long t = (long long)blockIdx.x * PK_S3_THREADS + threadIdx.x; t < total;
         t += step) {
        const long long s = t / n;
        const int k = (int)(t - s * n);
        aos[t] = S3_LD(lay + pk_s3_index(layout, n, (size_t)nsites, nw, (size_t)s, k));
    }
}
/* PK_S3_KERNEL_END */

/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_s3 {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int layout, nw;
    long long n;  /* padded sites */
    long long nv; /* sites */
    int blocks;
    double *u, *psi, *chi;
    size_t u_bytes, s_bytes;
    cudaEvent_t ev[2];
} pk_cuda_s3;
PK_CUDA_XFER_FIRST(pk_cuda_s3);

extern "C" void pk_cuda_s3_destroy(void *impl)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    if (p == NULL) return;
    /* Best effort: on a dead context these fail, and there is nothing left to report. */
    (void)cudaSetDevice(p->xf.device);
    if (p->ev[0]) cudaEventDestroy(p->ev[0]);
    if (p->ev[1]) cudaEventDestroy(p->ev[1]);
    if (p->u) cudaFree(p->u);
    if (p->psi) cudaFree(p->psi);
    if (p->chi) cudaFree(p->chi);
    (void)cudaGetLastError();
    free(p);
}

/* cudaMalloc with the free/total figures in the error detail. */
static pk_status pk_s3_alloc(double **ptr, size_t bytes, const char *what, int device)
{
    cudaError_t e = cudaMalloc((void **)ptr, bytes);
    if (e == cudaSuccess) return PK_OK;
    size_t fr = 0, tot = 0;
    *ptr = NULL;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&fr, &tot);
    return pk_cuda_fail(e, "cudaMalloc(su3 %s, %zu bytes, device %d; %zu of %zu bytes free)", what,
                        bytes, device, fr, tot);
}

extern "C" pk_status pk_cuda_s3_create(void *state, int device, const pk_s3_desc *desc,
                                     void **impl)
{
    cudaError_t e;
    pk_status st;
    const long long blocks = ((long long)desc->nsites + PK_S3_THREADS - 1) / PK_S3_THREADS;
    PK_CHECK(blocks <= INT_MAX, PK_EUNSUPPORTED,
             "su3: %zu sites need %lld blocks of %d threads, more than a CUDA grid holds",
             desc->nsites, blocks, PK_S3_THREADS);
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    pk_cuda_s3 *p = (pk_cuda_s3 *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "su3: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->layout = desc->layout;
    p->nw = desc->nw;
    p->n = (long long)desc->nsites;
    p->nv = (long long)desc->nv;
    p->blocks = (int)blocks;
    p->u_bytes = desc->u_doubles * sizeof(double);
    p->s_bytes = desc->spinor_doubles * sizeof(double);
    if ((st = pk_s3_alloc(&p->u, p->u_bytes, "u", device)) != PK_OK ||
        (st = pk_s3_alloc(&p->psi, p->s_bytes, "psi", device)) != PK_OK ||
        (st = pk_s3_alloc(&p->chi, p->s_bytes, "chi", device)) != PK_OK)
        goto fail;
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    if ((e = cudaMemset(p->u, 0, p->u_bytes)) != cudaSuccess ||
        (e = cudaMemset(p->psi, 0, p->s_bytes)) != cudaSuccess ||
        (e = cudaMemset(p->chi, 0, p->s_bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemset(su3 u, psi and chi, %zu + 2 x %zu bytes)", p->u_bytes,
                          p->s_bytes);
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
    pk_cuda_s3_destroy(p);
    return st;
}

extern "C" pk_status pk_cuda_s3_upload(void *impl, const double *u, const double *psi,
                                       double *seconds)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    double t_u = 0, t_psi = 0;
    PK_TRY(pk_cuda_transfer(&p->xf, p->u, u, p->u_bytes, 1, "su3 upload of u", &t_u));
    PK_TRY(pk_cuda_transfer(&p->xf, p->psi, psi, p->s_bytes, 1, "su3 upload of psi", &t_psi));
    if (seconds) *seconds = t_u + t_psi;
    return PK_OK;
}

static void pk_s3_launch(const pk_cuda_s3 *p, const double *u, const double *psi, double *chi)
{
    const double2 *u2 = (const double2 *)u, *p2 = (const double2 *)psi;
    double2 *x2 = (double2 *)chi;
    const dim3 g(p->blocks), b(PK_S3_THREADS);
    switch (p->layout) {
    case PK_SU3_VFO: pk_cuda_launch(pk_s3_kernel_vfo, g, b, 0, 0, u2, p2, x2, p->n); break;
    case PK_SU3_HVFO:
        pk_cuda_launch(pk_s3_kernel_hvfo, g, b, 0, 0, u, psi, chi, p->n, p->nw);
        break;
    case PK_SU3_SHORT:
        pk_cuda_launch(pk_s3_kernel_aos<PK_S3_L_SHORT>, g, b, 0, 0, u2, p2, x2, p->n);
        break;
    case PK_SU3_PADDED:
        pk_cuda_launch(pk_s3_kernel_aos<PK_S3_L_PADDED>, g, b, 0, 0, u2, p2, x2, p->n);
        break;
    case PK_SU3_RECON12:
        pk_cuda_launch(pk_s3_kernel_aos<PK_S3_L_RECON12>, g, b, 0, 0, u2, p2, x2, p->n);
        break;
    default: pk_cuda_launch(pk_s3_kernel_aos<PK_S3_L_AOS>, g, b, 0, 0, u2, p2, x2, p->n);
    }
}

/* chi = u psi on these device arrays (the plan's, or the caller's), timed. */
static pk_status pk_s3_multiply(pk_cuda_s3 *p, const double *u, const double *psi, double *chi,
                                double *kernel_seconds)
{
    cudaError_t e;
    float ms = 0.0f;
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    /* Clear a stale error of an earlier unrelated call, so the checks below report only
     * this run's launch. */
    (void)cudaGetLastError();
    if ((e = cudaEventRecord(p->ev[0], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    pk_s3_launch(p, u, psi, chi);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "su3 launch (%d blocks x %d threads, layout %d)", p->blocks,
                            PK_S3_THREADS, p->layout);
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "su3 kernel execution (cudaEventSynchronize)");
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

extern "C" pk_status pk_cuda_s3_run(void *impl, double *kernel_seconds)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    return pk_s3_multiply(p, p->u, p->psi, p->chi, kernel_seconds);
}

extern "C" pk_status pk_cuda_s3_download(void *impl, double *chi, double *seconds)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    return pk_cuda_transfer(&p->xf, chi, p->chi, p->s_bytes, 0, "su3 download of chi",
                            seconds);
}

/* chi = u psi on the caller's arrays (in the plan's layout): on them when all three are
 * device memory of the plan's device, else upload, run, download. */
extern "C" pk_status pk_cuda_s3_execute(void *impl, const double *u, const double *psi,
                                        double *chi, double *kernel_seconds,
                                        double *transfer_seconds)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    const pk_cuda_arg arg[3] = {
        {u, p->u_bytes, "u", 0}, {psi, p->s_bytes, "psi", 0}, {chi, p->s_bytes, "chi", 1}};
    double up = 0, down = 0;
    int direct = 0;
    *transfer_seconds = 0;
    PK_TRY(pk_cuda_direct(&p->xf, arg, 3, &direct));
    if (direct) return pk_s3_multiply(p, u, psi, chi, kernel_seconds);
    PK_TRY(pk_cuda_s3_upload(p, u, psi, &up));
    PK_TRY(pk_cuda_s3_run(p, kernel_seconds));
    PK_TRY(pk_cuda_s3_download(p, chi, &down));
    *transfer_seconds = up + down;
    return PK_OK;
}

/* One layout conversion on the device (pack: AoS src, n doubles per site, into the layout
 * array dst; else the layout array src back into AoS dst), waited for; *seconds += its time. */
static pk_status pk_s3_convert(pk_cuda_s3 *p, const double *src, double *dst, int n, int pack,
                               double *seconds)
{
    cudaError_t e;
    const int m = n == 24 ? 24 : pk_s3_u_per_site(p->layout);
    const long long total = pack ? p->n * m : p->nv * n;
    const long long need = (total + PK_S3_THREADS - 1) / PK_S3_THREADS;
    const dim3 g((unsigned)(need < PK_S3_CONV_BLOCKS ? need : PK_S3_CONV_BLOCKS)),
        b(PK_S3_THREADS);
    const double t0 = pk_now();
    (void)cudaGetLastError(); /* a stale error of an earlier call is not this launch's */
    if (pack)
        pk_cuda_launch(pk_s3_kernel_pack, g, b, 0, 0, src, dst, total, p->nv, n, m, p->layout,
                       p->n, p->nw);
    else
        pk_cuda_launch(pk_s3_kernel_unpack, g, b, 0, 0, src, dst, total, n, p->layout, p->n,
                       p->nw);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "su3 layout conversion launch (%u blocks x %d threads)", g.x,
                            PK_S3_THREADS);
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess)
        return pk_cuda_fail(e, "su3 layout conversion (cudaStreamSynchronize)");
    *seconds += pk_now() - t0;
    return PK_OK;
}

static int pk_s3_apart(const void *a, size_t ab, const void *b, size_t bb)
{
    const char *x = (const char *)a, *y = (const char *)b;
    return x + ab <= y || y + bb <= x;
}

/* chi = u psi on the caller's arrays in the public layout (AoS: u 18 nv, psi and chi 24 nv
 * doubles), all three device memory of the plan's device: u converted into the plan's u on
 * the device, psi into the plan's psi (vfo, hvfo), the kernel, chi converted back from the
 * plan's chi (vfo, hvfo).  The AoS spinors of aos, short, padded and recon12 are the
 * kernel's own: used in place when 16-byte aligned and chi does not overlap them, else they
 * go through the plan's arrays too (one conversion kernel each, a copy), so chi over psi or
 * u works.  Nothing crosses the link (the transfer note says "device pointers, none"). */
extern "C" pk_status pk_cuda_s3_execute_canonical(void *impl, const double *u, const double *psi,
                                                  double *chi, double *kernel_seconds,
                                                  double *layout_seconds)
{
    pk_cuda_s3 *p = (pk_cuda_s3 *)impl;
    const size_t ub = (size_t)p->nv * 18 * sizeof(double), sb = (size_t)p->nv * 24 * sizeof(double);
    const pk_cuda_arg arg[3] = {{u, ub, "u", 0}, {psi, sb, "psi", 0}, {chi, sb, "chi", 1}};
    cudaError_t e;
    *kernel_seconds = *layout_seconds = 0;
    for (int i = 0; i < 3; ++i)
        PK_CHECK(pk_cuda_memory(&p->xf, arg[i].p, arg[i].bytes) == PK_MEM_DEVICE, PK_EINVAL,
                 "su3 %s: not device memory of device %d (%zu bytes): the device converts the "
                 "layout only when u, psi and chi all are",
                 arg[i].name, p->xf.device, arg[i].bytes);
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    const int soa = p->layout == PK_SU3_VFO || p->layout == PK_SU3_HVFO;
    const int chi_own = !soa && (uintptr_t)chi % 16 == 0; /* the kernel writes chi itself */
    const double *uk = u, *pk = psi;
    double *xk = chi_own ? chi : p->chi;
    if (p->layout != PK_SU3_AOS || (uintptr_t)u % 16 || (chi_own && !pk_s3_apart(chi, sb, u, ub))) {
        PK_TRY(pk_s3_convert(p, u, p->u, 18, 1, layout_seconds));
        uk = p->u;
    }
    if (soa || (uintptr_t)psi % 16 || (chi_own && !pk_s3_apart(chi, sb, psi, sb))) {
        PK_TRY(pk_s3_convert(p, psi, p->psi, 24, 1, layout_seconds));
        pk = p->psi;
    }
    PK_TRY(pk_s3_multiply(p, uk, pk, xk, kernel_seconds));
    if (xk != chi) PK_TRY(pk_s3_convert(p, p->chi, chi, 24, 0, layout_seconds));
    p->xf.paths |= PK_CUDA_PATH_NONE;
    return PK_OK;
}

/* The su3 kernel family on this backend (lib/internal.h, pk_s3_ops). */
extern "C" const pk_s3_ops pk_cuda_s3_ops = {"cuda", pk_cuda_s3_create, pk_cuda_s3_upload, pk_cuda_s3_run, pk_cuda_s3_download, pk_cuda_s3_destroy, pk_cuda_s3_execute, pk_cuda_s3_execute_canonical};
