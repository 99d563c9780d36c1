/* dslash.cu - the Wilson hopping operator (docs/KERNELS.md 4c) on CUDA GPUs, variant "cuda":
 * the plan (u, psi, chi on the device; upload, run, download) and the kernel.
 *
 * Design (why).  Never run here: there was no GPU where this was written.  The device code
 * between the PK_DS_KERNEL markers is self-contained and __host__ __device__, so it was
 * checked by running it on the host (one call per CUDA thread, g++ with stand-ins for the
 * CUDA qualifiers and double2) against pk_dslash_reference on odd and small lattices, with
 * and without recon12; that checks the index arithmetic, the layouts and the basis change,
 * not the device behaviour (occupancy, spills, timing).
 *  - One thread per site, 128 threads per block, a 1-D grid of ceil(V / 128) blocks.  At
 *    1320 flops for ~2.9 KB per site (no reuse; ~1.1 KB with perfect cache reuse) dslash is
 *    memory-bound on every GPU, so the layout decides: fields are stored component-major
 *    ("structure of arrays" of double2: psi[12][V], u[4][rows x 3][V], chi[12][V]), so a
 *    warp's 32 loads of one component are 512 contiguous bytes (QUDA's FloatN ordering).
 *    The reorders run on the device (pk_ds_kernel_pack_psi, _pack_u, _unpack_chi; the index
 *    functions of lib/lattice_index.h): upload sends the caller's site-major u (one
 *    direction at a time) and psi up as they are, through pk_cuda_transfer's staging ring,
 *    into a device staging array of one spinor field and reorders from there (one host
 *    copy into the ring, none on the host before); download reorders chi into it and sends
 *    it down.  plan_execute on device arrays (pk_cuda_ds_execute_canonical) reorders from
 *    the caller's arrays directly (recon12: rows 0 and 1 of the full links) and chi back
 *    into the caller's: nothing crosses the link.
 *  - Half-spinor loads.  In the DeGrand-Rossi basis no projector 1 +- gamma_mu is
 *    diagonal, so every neighbour's four spins would be loaded.  The plan stores psi in the
 *    basis psi' = S psi, S = [[1, 1], [1, -1]] (2x2 spin blocks), where gamma_t' =
 *    S gamma_t S^-1 = diag(1, 1, -1, -1) and gamma_k' = -gamma_k (k = x, y, z): the t
 *    projectors keep two spins, so the two t neighbours load a half spinor (6 of 12 double2)
 *    - QUDA's non-relativistic basis trick - and the spatial terms use the DeGrand-Rossi
 *    projection with the opposite sign.  chi = S^-1 chi' (S^-1 = S / 2: exact halving) is
 *    formed in registers, so chi leaves in the DeGrand-Rossi basis.  Loads per site: 6
 *    neighbours x 12 + 2 x 6 + 12 (psi(x)) double2 and 8 links.
 *  - recon12: the links hold two rows (6 double2); the third, conj(row0 x row1), is rebuilt
 *    in registers: 33% fewer link bytes for 6 complex multiplies per link.
 *  - Registers (ptxas, sm_90, CUDA 13): unbounded, the kernel takes 172 registers, i.e. 2
 *    blocks = 8 warps per SM; __launch_bounds__(128, 4) caps it at 128 (16 warps per SM) for
 *    108 (full links) / 236 (recon12) bytes of spills per thread, which stay in L1.  For a
 *    memory-bound kernel the warps in flight weigh more: (128, 4) is the choice, unmeasured
 *    (5 blocks: 96 registers, 0.9-1.3 KB of spills).  The first thing to tune on a GPU.
 *  - Indices: sites are 64-bit (V may exceed 2^31 / 12), coordinates int.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_ds_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lattice_index.h"

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls; the layout conversions included),
 * so that it can be run on the host to check it. */
/* PK_DS_KERNEL_BEGIN */
#define PK_DS_THREADS 128
#define PK_DS_MIN_BLOCKS 4 /* resident blocks per SM asked of ptxas: <= 128 registers */

#if defined(__CUDA_ARCH__)
#define PK_DS_LDG(p) __ldg(p)
#else
#define PK_DS_LDG(p) (*(p))
#endif

__host__ __device__ __forceinline__ double2 pk_ds_c(double re, double im)
{
    double2 z;
    z.x = re;
    z.y = im;
    return z;
}
__host__ __device__ __forceinline__ double2 pk_ds_add(double2 a, double2 b)
{
    return pk_ds_c(a.x + b.x, a.y + b.y);
}
__host__ __device__ __forceinline__ double2 pk_ds_sub(double2 a, double2 b)
{
    return pk_ds_c(a.x - b.x, a.y - b.y);
}
__host__ __device__ __forceinline__ double2 pk_ds_scale(double s, double2 a)
{
    return pk_ds_c(s * a.x, s * a.y);
}
/* a b, and conj(a) b */
__host__ __device__ __forceinline__ double2 pk_ds_mul(double2 a, double2 b)
{
    return pk_ds_c(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__host__ __device__ __forceinline__ double2 pk_ds_cmul(double2 a, double2 b)
{
    return pk_ds_c(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
/* z i^k */
__host__ __device__ __forceinline__ double2 pk_ds_unit(double2 z, int k)
{
    switch (k & 3) {
    case 0: return z;
    case 1: return pk_ds_c(-z.y, z.x);
    case 2: return pk_ds_c(-z.x, -z.y);
    default: return pk_ds_c(z.y, -z.x);
    }
}

/* Link mu of `site` from u[4][rows x 3][vol]. */
template <int R12>
__host__ __device__ __forceinline__ void pk_ds_link(const double2 *__restrict__ u, long long vol,
                                                    int mu, long long site, double2 m[3][3])
{
    const int rows = R12 ? 2 : 3;
    const double2 *l = u + (long long)mu * rows * 3 * vol + site;
#pragma unroll
    for (int a = 0; a < rows; ++a)
#pragma unroll
        for (int b = 0; b < 3; ++b) m[a][b] = PK_DS_LDG(l + (3 * a + b) * vol);
    if (R12) {
#pragma unroll
        for (int j = 0; j < 3; ++j) {
            const int k = (j + 1) % 3, l2 = (j + 2) % 3;
            const double2 v = pk_ds_sub(pk_ds_mul(m[0][k], m[1][l2]), pk_ds_mul(m[0][l2], m[1][k]));
            m[2][j] = pk_ds_c(v.x, -v.y);
        }
    }
}

/* w[k] = W h[k], W = m (dagger 0) or m^+ (dagger 1). */
__host__ __device__ __forceinline__ void pk_ds_mv(const double2 m[3][3], int dagger,
                                                  const double2 h[2][3], double2 w[2][3])
{
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            double2 v = pk_ds_c(0.0, 0.0);
#pragma unroll
            for (int b = 0; b < 3; ++b)
                v = pk_ds_add(v, dagger ? pk_ds_cmul(m[b][a], h[k][b]) : pk_ds_mul(m[a][b], h[k][b]));
            w[k][a] = v;
        }
}

/* A spatial term in the primed basis: acc += (1 + s gamma_mu) W psi'(n) with the
 * DeGrand-Rossi projection (pr, a, q, b of lib/dslash_host.h), s = +1 for the forward term
 * (1 - gamma_mu' = 1 + gamma_mu) and -1 for the backward one. */
__host__ __device__ __forceinline__ void pk_ds_spatial(double2 acc[4][3],
                                                       const double2 *__restrict__ psi,
                                                       long long vol, long long n,
                                                       const double2 m[3][3], int dagger, int s,
                                                       int pr0, int pr1, int a0, int a1, int q0,
                                                       int q1, int b0, int b1)
{
    const int sh = s < 0 ? 2 : 0;
    double2 h[2][3], w[2][3];
#pragma unroll
    for (int c = 0; c < 3; ++c) {
        h[0][c] = pk_ds_add(PK_DS_LDG(psi + c * vol + n),
                            pk_ds_unit(PK_DS_LDG(psi + (3 * pr0 + c) * vol + n), a0 + sh));
        h[1][c] = pk_ds_add(PK_DS_LDG(psi + (3 + c) * vol + n),
                            pk_ds_unit(PK_DS_LDG(psi + (3 * pr1 + c) * vol + n), a1 + sh));
    }
    pk_ds_mv(m, dagger, h, w);
    const int q[2] = {q0, q1}, b[2] = {b0, b1};
#pragma unroll
    for (int c = 0; c < 3; ++c)
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            acc[k][c] = pk_ds_add(acc[k][c], w[k][c]);
            acc[2 + k][c] = pk_ds_add(acc[2 + k][c], pk_ds_unit(w[q[k]][c], b[k] + sh));
        }
}

/* A time term in the primed basis, a half spinor: forward (1 - gamma_t') = diag(0, 0, 2, 2)
 * reads spins 2, 3 only; backward (1 + gamma_t') = diag(2, 2, 0, 0) spins 0, 1. */
__host__ __device__ __forceinline__ void pk_ds_time(double2 acc[4][3],
                                                    const double2 *__restrict__ psi,
                                                    long long vol, long long n,
                                                    const double2 m[3][3], int backward)
{
    const int s0 = backward ? 0 : 2;
    double2 h[2][3], w[2][3];
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
        for (int c = 0; c < 3; ++c) h[k][c] = PK_DS_LDG(psi + (3 * (s0 + k) + c) * vol + n);
    pk_ds_mv(m, backward, h, w);
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
        for (int c = 0; c < 3; ++c)
            acc[s0 + k][c] = pk_ds_add(acc[s0 + k][c], pk_ds_scale(2.0, w[k][c]));
}

/* chi(site), written in the DeGrand-Rossi basis: chi = S^-1 (diag psi' + 1/2 H' psi'). */
template <int R12>
__host__ __device__ __forceinline__ void pk_ds_site(const double2 *__restrict__ u,
                                                    const double2 *__restrict__ psi,
                                                    double2 *__restrict__ chi, int X, int Y,
                                                    int Z, int T, long long vol, double diag,
                                                    long long site)
{
    const long long sy = X, sz = (long long)X * Y, st = sz * Z;
    const int x = (int)(site % X), y = (int)(site / sy % Y), z = (int)(site / sz % Z),
              t = (int)(site / st);
    const long long fw[4] = {x + 1 == X ? site - x : site + 1, y + 1 == Y ? site - y * sy : site + sy,
                             z + 1 == Z ? site - z * sz : site + sz,
                             t + 1 == T ? site - t * st : site + st};
    const long long bw[4] = {x == 0 ? site + (X - 1) : site - 1,
                             y == 0 ? site + (Y - 1) * sy : site - sy,
                             z == 0 ? site + (Z - 1) * sz : site - sz,
                             t == 0 ? site + (T - 1) * st : site - st};
    double2 acc[4][3];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int c = 0; c < 3; ++c) acc[k][c] = pk_ds_c(0.0, 0.0);
    double2 m[3][3];
    /* x, y, z: the table of lib/dslash_host.h (pr0 pr1 a0 a1 q0 q1 b0 b1) */
    pk_ds_link<R12>(u, vol, 0, site, m);
    pk_ds_spatial(acc, psi, vol, fw[0], m, 0, +1, 3, 2, 1, 1, 1, 0, 3, 3);
    pk_ds_link<R12>(u, vol, 0, bw[0], m);
    pk_ds_spatial(acc, psi, vol, bw[0], m, 1, -1, 3, 2, 1, 1, 1, 0, 3, 3);
    pk_ds_link<R12>(u, vol, 1, site, m);
    pk_ds_spatial(acc, psi, vol, fw[1], m, 0, +1, 3, 2, 2, 0, 1, 0, 0, 2);
    pk_ds_link<R12>(u, vol, 1, bw[1], m);
    pk_ds_spatial(acc, psi, vol, bw[1], m, 1, -1, 3, 2, 2, 0, 1, 0, 0, 2);
    pk_ds_link<R12>(u, vol, 2, site, m);
    pk_ds_spatial(acc, psi, vol, fw[2], m, 0, +1, 2, 3, 1, 3, 0, 1, 3, 1);
    pk_ds_link<R12>(u, vol, 2, bw[2], m);
    pk_ds_spatial(acc, psi, vol, bw[2], m, 1, -1, 2, 3, 1, 3, 0, 1, 3, 1);
    pk_ds_link<R12>(u, vol, 3, site, m);
    pk_ds_time(acc, psi, vol, fw[3], m, 0);
    pk_ds_link<R12>(u, vol, 3, bw[3], m);
    pk_ds_time(acc, psi, vol, bw[3], m, 1);
    /* S^-1 = S / 2 on (upper, lower): psi(x) back from psi', and the sum */
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            const double2 pu = PK_DS_LDG(psi + (3 * k + c) * vol + site);
            const double2 pl = PK_DS_LDG(psi + (3 * (k + 2) + c) * vol + site);
            const double2 up = pk_ds_add(pk_ds_scale(0.5 * diag, pk_ds_add(pu, pl)),
                                         pk_ds_scale(0.25, pk_ds_add(acc[k][c], acc[k + 2][c])));
            const double2 lo = pk_ds_add(pk_ds_scale(0.5 * diag, pk_ds_sub(pu, pl)),
                                         pk_ds_scale(0.25, pk_ds_sub(acc[k][c], acc[k + 2][c])));
            chi[(3 * k + c) * vol + site] = up;
            chi[(3 * (k + 2) + c) * vol + site] = lo;
        }
}

template <int R12>
__global__ void __launch_bounds__(PK_DS_THREADS, PK_DS_MIN_BLOCKS)
pk_ds_kernel(const double2 *__restrict__ u, const double2 *__restrict__ psi,
             double2 *__restrict__ chi, int X, int Y, int Z, int T, long long vol, double diag)
{
    const long long site = (long long)blockIdx.x * PK_DS_THREADS + threadIdx.x;
    if (site < vol) pk_ds_site<R12>(u, psi, chi, X, Y, Z, T, vol, diag, site);
}

/* The layout conversions on the device, where lib/lattice_index.h puts each complex number
 * (pk_ds_cm_index, pk_ds_link_index, pk_ds_site_link_index), grid-stride loops on at most
 * PK_DS_CONV_BLOCKS blocks, one thread per double (real or imaginary part r): any 8-byte
 * aligned array.  The caller's site-major arrays (plan_execute on device arrays) or the
 * upload's staging copy of them are read; consecutive threads write consecutive doubles of
 * a component-major row (pack) or of the site-major chi (unpack).  No arithmetic but psi's
 * basis change, one IEEE add or subtract per double (the host's was the same). */
#define PK_DS_CONV_BLOCKS 65536

/* psi [V][4][3] -> psi' [12][V]: component (k, c) = spins (k, c) + (k + 2, c), component
 * (k + 2, c) = their difference (k = 0, 1). */
__global__ void __launch_bounds__(PK_DS_THREADS)
pk_ds_kernel_pack_psi(const double *__restrict__ src, double *__restrict__ dst, long long vol)
{
    const long long total = 12 * vol, step = (long long)gridDim.x * PK_DS_THREADS;
    for (long long t = (long long)blockIdx.x * PK_DS_THREADS + threadIdx.x; t < total;
         t += step) {
        const long long q = t >> 1, j = q / vol, x = q - j * vol; /* j = 3 k + c */
        const int r = (int)(t & 1);
        const double a = PK_DS_LDG(src + 2 * (12 * x + j) + r);
        const double b = PK_DS_LDG(src + 2 * (12 * x + j + 6) + r);
        dst[2 * pk_ds_cm_index((size_t)vol, (int)j, (size_t)x) + r] = a + b;
        dst[2 * pk_ds_cm_index((size_t)vol, (int)j + 6, (size_t)x) + r] = a - b;
    }
}

/* Links mu0 .. mu0 + nmu - 1: src [nmu][V][ns] (its first link's direction at src) ->
 * dst [4][n][V], the first n <= ns elements of each link (recon12 from full links: 6 of 9). */
__global__ void __launch_bounds__(PK_DS_THREADS)
pk_ds_kernel_pack_u(const double *__restrict__ src, double *__restrict__ dst, long long vol,
                    int ns, int n, int mu0, int nmu)
{
    const long long total = 2LL * nmu * n * vol, step = (long long)gridDim.x * PK_DS_THREADS;
    for (long long t = (long long)blockIdx.x * PK_DS_THREADS + threadIdx.x; t < total;
         t += step) {
        const long long q = t >> 1, w = q / vol, x = q - w * vol;
        const int r = (int)(t & 1), mu = (int)(w / n), e = (int)(w - (long long)mu * n);
        dst[2 * pk_ds_link_index((size_t)vol, n, mu0 + mu, e, (size_t)x) + r] =
            PK_DS_LDG(src + 2 * pk_ds_site_link_index((size_t)vol, ns, mu, e, (size_t)x) + r);
    }
}

/* chi [12][V] -> [V][4][3]. */
__global__ void __launch_bounds__(PK_DS_THREADS)
pk_ds_kernel_unpack_chi(const double *__restrict__ src, double *__restrict__ dst, long long vol)
{
    const long long total = 24 * vol, step = (long long)gridDim.x * PK_DS_THREADS;
    for (long long t = (long long)blockIdx.x * PK_DS_THREADS + threadIdx.x; t < total;
         t += step) {
        const long long q = t >> 1, x = q / 12;
        dst[t] = PK_DS_LDG(src + 2 * pk_ds_cm_index((size_t)vol, (int)(q - 12 * x), (size_t)x) +
                           (t & 1));
    }
}
/* PK_DS_KERNEL_END */

/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_ds {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int recon12;
    int dims[4];
    long long vol;
    double diag;
    double2 *u, *psi, *chi; /* device, component-major */
    double2 *stage;         /* device, s_bytes: upload's site-major copies, download's chi */
    size_t u_bytes, s_bytes;
    unsigned blocks;
    cudaEvent_t ev[2];
} pk_cuda_ds;
PK_CUDA_XFER_FIRST(pk_cuda_ds);

extern "C" void pk_cuda_ds_destroy(void *impl)
{
    pk_cuda_ds *p = (pk_cuda_ds *)impl;
    if (p == NULL) return;
    /* Best effort: on a dead context these fail, and there is nothing left to report. */
    (void)cudaSetDevice(p->xf.device);
    if (p->ev[0]) cudaEventDestroy(p->ev[0]);
    if (p->ev[1]) cudaEventDestroy(p->ev[1]);
    if (p->u) cudaFree(p->u);
    if (p->psi) cudaFree(p->psi);
    if (p->chi) cudaFree(p->chi);
    if (p->stage) cudaFree(p->stage);
    (void)cudaGetLastError();
    free(p);
}

/* cudaMalloc with the free/total figures in the error detail. */
static pk_status pk_ds_alloc(double2 **ptr, size_t bytes, const char *what, int device)
{
    cudaError_t e = cudaMalloc((void **)ptr, bytes);
    if (e == cudaSuccess) return PK_OK;
    size_t fr = 0, tot = 0;
    *ptr = NULL;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&fr, &tot);
    return pk_cuda_fail(e, "cudaMalloc(dslash %s, %zu bytes, device %d; %zu of %zu bytes free)",
                        what, bytes, device, fr, tot);
}

extern "C" pk_status pk_cuda_ds_create(void *state, int device, const pk_ds_desc *desc,
                                     void **impl)
{
    cudaError_t e;
    pk_status st;
    const unsigned long long blocks =
        ((unsigned long long)desc->volume + PK_DS_THREADS - 1) / PK_DS_THREADS;
    PK_CHECK(blocks <= (unsigned long long)INT_MAX, PK_EUNSUPPORTED,
             "dslash: %zu sites need %llu blocks of %d threads, more than a CUDA grid holds",
             desc->volume, blocks, PK_DS_THREADS);
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    pk_cuda_ds *p = (pk_cuda_ds *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "dslash: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->recon12 = desc->recon12;
    memcpy(p->dims, desc->dims, sizeof p->dims);
    p->vol = (long long)desc->volume;
    p->diag = 1.0 / (2.0 * desc->kappa);
    p->u_bytes = desc->u_doubles * sizeof(double);
    p->s_bytes = desc->spinor_doubles * sizeof(double);
    p->blocks = (unsigned)blocks;
    if ((st = pk_ds_alloc(&p->u, p->u_bytes, "u", device)) != PK_OK ||
        (st = pk_ds_alloc(&p->psi, p->s_bytes, "psi", device)) != PK_OK ||
        (st = pk_ds_alloc(&p->chi, p->s_bytes, "chi", device)) != PK_OK ||
        (st = pk_ds_alloc(&p->stage, p->s_bytes, "staging", device)) != PK_OK)
        goto fail;
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    if ((e = cudaMemset(p->u, 0, p->u_bytes)) != cudaSuccess ||
        (e = cudaMemset(p->psi, 0, p->s_bytes)) != cudaSuccess ||
        (e = cudaMemset(p->chi, 0, p->s_bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemset(dslash fields, %zu + 2 x %zu bytes)", p->u_bytes,
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
    pk_cuda_ds_destroy(p);
    return st;
}

/* One conversion kernel (kind 0: psi, 1: u links mu0 .. mu0 + nmu - 1 from ns elements a
 * link, 2: chi back), waited for. */
static pk_status pk_ds_convert(pk_cuda_ds *p, int kind, const void *src, void *dst, int ns,
                               int mu0, int nmu)
{
    cudaError_t e;
    const int n = p->recon12 ? 6 : 9;
    const double *s = (const double *)src;
    double *d = (double *)dst;
    const long long total = kind == 0 ? 12 * p->vol : kind == 1 ? 2LL * nmu * n * p->vol
                                                                : 24 * p->vol;
    const long long need = (total + PK_DS_THREADS - 1) / PK_DS_THREADS;
    const unsigned g = (unsigned)(need < PK_DS_CONV_BLOCKS ? need : PK_DS_CONV_BLOCKS);
    (void)cudaGetLastError(); /* a stale error of an earlier call is not this launch's */
    if (kind == 0)
        pk_cuda_launch(pk_ds_kernel_pack_psi, g, PK_DS_THREADS, 0, 0, s, d, p->vol);
    else if (kind == 1)
        pk_cuda_launch(pk_ds_kernel_pack_u, g, PK_DS_THREADS, 0, 0, s, d, p->vol, ns, n, mu0, nmu);
    else
        pk_cuda_launch(pk_ds_kernel_unpack_chi, g, PK_DS_THREADS, 0, 0, s, d, p->vol);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "dslash layout conversion launch (%u blocks x %d threads)", g,
                            PK_DS_THREADS);
    /* waited for: the staging array it reads or writes is reused by the next copy */
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess)
        return pk_cuda_fail(e, "dslash layout conversion (cudaStreamSynchronize)");
    return PK_OK;
}

/* u (as the desc says: two rows when recon12) and psi, site-major, host memory or not: each
 * goes up as it is through pk_cuda_transfer (the staging ring for pageable memory) into the
 * device staging array - u one direction at a time (V n complex <= psi's 12 V) - and is
 * reordered from there into the plan's component-major arrays on the device. */
extern "C" pk_status pk_cuda_ds_upload(void *impl, const double *u, const double *psi,
                                       double *seconds)
{
    pk_cuda_ds *p = (pk_cuda_ds *)impl;
    const int n = p->recon12 ? 6 : 9;
    const size_t link_bytes = (size_t)p->vol * n * sizeof(double2);
    double s;
    const double t0 = pk_now();
    for (int mu = 0; u && mu < 4; ++mu) { /* u NULL: the links stay (plan_execute_psi) */
        PK_TRY(pk_cuda_transfer(&p->xf, p->stage, (const char *)u + mu * link_bytes, link_bytes,
                                1, "dslash upload of u", &s));
        PK_TRY(pk_ds_convert(p, 1, p->stage, p->u, n, mu, 1));
    }
    PK_TRY(pk_cuda_transfer(&p->xf, p->stage, psi, p->s_bytes, 1, "dslash upload of psi", &s));
    PK_TRY(pk_ds_convert(p, 0, p->stage, p->psi, 0, 0, 0));
    if (seconds) *seconds = pk_now() - t0; /* the reorderings included */
    return PK_OK;
}

extern "C" pk_status pk_cuda_ds_run(void *impl, double *kernel_seconds)
{
    pk_cuda_ds *p = (pk_cuda_ds *)impl;
    cudaError_t e;
    float ms = 0.0f;
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    (void)cudaGetLastError(); /* a stale error of an earlier call is not this run's */
    if ((e = cudaEventRecord(p->ev[0], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    const int *L = p->dims;
    if (p->recon12)
        pk_cuda_launch(pk_ds_kernel<1>, p->blocks, PK_DS_THREADS, 0, 0, p->u, p->psi, p->chi,
                       L[0], L[1], L[2], L[3], p->vol, p->diag);
    else
        pk_cuda_launch(pk_ds_kernel<0>, p->blocks, PK_DS_THREADS, 0, 0, p->u, p->psi, p->chi,
                       L[0], L[1], L[2], L[3], p->vol, p->diag);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "dslash launch (%u blocks x %d threads, %lld sites)", p->blocks,
                            PK_DS_THREADS, p->vol);
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "dslash kernel execution (cudaEventSynchronize)");
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

/* chi reordered into the device staging array, which goes down as it is. */
extern "C" pk_status pk_cuda_ds_download(void *impl, double *chi, double *seconds)
{
    pk_cuda_ds *p = (pk_cuda_ds *)impl;
    cudaError_t e;
    const double t0 = pk_now();
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    PK_TRY(pk_ds_convert(p, 2, p->chi, p->stage, 0, 0, 0));
    PK_TRY(pk_cuda_transfer(&p->xf, chi, p->stage, p->s_bytes, 0, "dslash download of chi",
                            NULL));
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* chi = M psi on the caller's site-major arrays, all three device memory of the plan's
 * device, u full links (recon12: the device keeps rows 0 and 1): reordered into the plan's
 * arrays on the device, the kernel, chi reordered back; chi may overlap u or psi (they are
 * read into the plan's arrays first).  Nothing crosses the link. */
extern "C" pk_status pk_cuda_ds_execute_canonical(void *impl, const double *u, const double *psi,
                                                  double *chi, double *kernel_seconds,
                                                  double *layout_seconds)
{
    pk_cuda_ds *p = (pk_cuda_ds *)impl;
    const size_t ub = (size_t)p->vol * 4 * 18 * sizeof(double);
    const pk_cuda_arg arg[3] = {{u, ub, "u", 0}, {psi, p->s_bytes, "psi", 0},
                                {chi, p->s_bytes, "chi", 1}};
    cudaError_t e;
    *kernel_seconds = *layout_seconds = 0;
    for (int i = 0; i < 3; ++i)
        PK_CHECK(pk_cuda_memory(&p->xf, arg[i].p, arg[i].bytes) == PK_MEM_DEVICE, PK_EINVAL,
                 "dslash %s: not device memory of device %d (%zu bytes): the device reorders "
                 "only when u, psi and chi all are",
                 arg[i].name, p->xf.device, arg[i].bytes);
    if ((e = cudaSetDevice(p->xf.device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", p->xf.device);
    double t0 = pk_now();
    PK_TRY(pk_ds_convert(p, 1, u, p->u, 9, 0, 4));
    PK_TRY(pk_ds_convert(p, 0, psi, p->psi, 0, 0, 0));
    *layout_seconds = pk_now() - t0;
    PK_TRY(pk_cuda_ds_run(p, kernel_seconds));
    t0 = pk_now();
    PK_TRY(pk_ds_convert(p, 2, p->chi, chi, 0, 0, 0));
    *layout_seconds += pk_now() - t0;
    p->xf.paths |= PK_CUDA_PATH_NONE;
    return PK_OK;
}

/* The dslash kernel family on this backend (lib/internal.h, pk_ds_ops). */
extern "C" const pk_ds_ops pk_cuda_ds_ops = {"cuda", pk_cuda_ds_create, pk_cuda_ds_upload, pk_cuda_ds_run, pk_cuda_ds_download, pk_cuda_ds_destroy,
                                             NULL /* execute: upload, run, download */,
                                             pk_cuda_ds_execute_canonical};
