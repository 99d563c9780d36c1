/* diffusion3d.cu - 7-point diffusion stencil (docs/KERNELS.md section 3) on CUDA GPUs.
 *
 * Design (why):
 *  - The stencil moves 8 bytes per point per step and does 13 flops: it is bound by DRAM
 *    bandwidth on every GPU, so the kernel is built to read each input value from DRAM once
 *    and write each output once (the 8-byte ideal), and to keep enough loads in flight.
 *  - 2.5D blocking: a block owns an (x,y) tile of TX x TY points and marches along z over a
 *    chunk of planes.  Each thread owns one x column and RY consecutive rows; its values of
 *    planes z-1, z, z+1 live in registers (a queue that shifts by one plane per step), so the
 *    z neighbours cost no memory traffic at all.  The current plane also goes to a shared
 *    memory tile with a one-point halo, from which the x neighbours (and the y neighbours at
 *    the thread's first/last row) are read; interior y neighbours come from the thread's own
 *    registers.  Rows of the tile are 64 floats = two 128-byte lines: coalesced loads and
 *    stores, and the halo costs 2 columns per 64 instead of 2 per 32.
 *  - Bytes in flight: each thread prefetches PD = 2 planes beyond the one it needs next (RY
 *    independent 4-byte loads per plane), i.e. 32 bytes per thread in flight, ~32 KB per SM at
 *    4 resident blocks of 256 threads: what H100/H200 need to saturate HBM (latency x
 *    bandwidth / SMs).  The ring of planes is unrolled with compile-time slots so it costs no
 *    register moves; ptxas (13.0, sm_90) fits it in 64 registers without spills, and the
 *    inner step is ~25 SASS instructions per point for interior tiles (branch-free stores),
 *    well under the issue rate that 4.8 TB/s needs.
 *  - Boundaries: every load is clamped to the field, F(x,y,z) = f[clamp x][clamp y][clamp z].
 *    With one-point neighbours, clamp(x-1) == x exactly at x == 0 (and likewise for every
 *    face), which is the spec's "missing neighbour replaced by c itself"; it also makes the
 *    tile cells beyond nx/ny hold the right values, so any size works (1x1x1, odd sizes,
 *    tiles hanging over the edge) with no special cases in the inner loop.  Threads outside
 *    the field load clamped values and simply do not store.
 *  - z chunks: one z march per tile would give too few blocks for 132 SMs at 256^3, so the
 *    z range is split; each chunk re-reads 2 planes (below/above), i.e. 1/zch extra traffic.
 *    The chunk length is chosen on the host from the resident-block count so that the grid
 *    fills whole waves with the fewest chunks (pk_d3_plan_chunks).
 *  - Arithmetic: the spec's order (cc*c + cw*w + ce*e + cs*s + cn*n + cb*b + ct*t) with each
 *    addition fused into its multiplication (fmaf): 7 instructions instead of 13 per point.
 *    Measured on the host with the same operation order: after 100 steps the fused results
 *    stay within 1.9e-6 relative of the unfused serial reference (256^3 cosine field; 1.4e-6
 *    on odd sizes with random data), 5x inside the spec's 1e-5.
 *  - Steps are launched back to back on one stream, swapping buffers; nothing is copied to
 *    the host between steps and the only synchronisation is at the end of a run.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_d3_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#else
/* sm is used in the kernel's generic lambdas, which GCC 12 does not count as a use. */
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include <utility>

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls): the review emulated it on the
 * host with one POSIX thread per CUDA thread to check the index arithmetic. */
/* PK_D3_KERNEL_BEGIN */
#define PK_D3_TX 64          /* tile width = threads in x (two 128-byte rows per warp pair) */
#define PK_D3_BY 4           /* thread rows per block */
#define PK_D3_RY 4           /* consecutive rows per thread */
#define PK_D3_TY (PK_D3_BY * PK_D3_RY) /* tile height: 16 */
#define PK_D3_PD 2           /* planes prefetched beyond the next one */
#define PK_D3_NQ (PK_D3_PD + 3) /* register ring: below, centre, above, PD prefetched */
#define PK_D3_HPD PK_D3_PD   /* halo planes prefetched (one register per plane, 160 threads) */
#define PK_D3_THREADS (PK_D3_TX * PK_D3_BY)
#define PK_D3_SW (PK_D3_TX + 2) /* shared row: halo + 64 + halo (66: the 16 halo-column
                                   writes of a plane fall in distinct banks) */
#define PK_D3_SH (PK_D3_TY + 2)
#define PK_D3_NHALO (2 * PK_D3_TX + 2 * PK_D3_TY)
#define PK_D3_MIN_BLOCKS 4   /* 4 x 256 threads per SM: <= 64 registers per thread */

struct pk_d3_coef {
    float cc, cw, ce, cs, cn, cb, ct;
};

/* Hide a pointer's origin from the optimiser: without it nvcc folds base + z*plane + off
 * into 64-bit integer arithmetic (4 instructions per address); with it each address is
 * one IMAD.WIDE.U32 of the 32-bit offset onto the plane's pointer. */
#ifdef __CUDA_ARCH__
#define PK_D3_OPAQUE(p) asm("" : "+l"(p))
#else
#define PK_D3_OPAQUE(p) ((void)0)
#endif

/* A plain (weak) global store: __stwb would give STG.STRONG.SM, and a store through the
 * opaque pointer would be a generic ST. */
__device__ __forceinline__ void pk_d3_store(float *p, float v)
{
#ifdef __CUDA_ARCH__
    asm volatile("st.global.f32 [%0], %1;" ::"l"(p), "f"(v));
#else
    *p = v;
#endif
}

template <int N> struct pk_d3_int {
    static constexpr int value = N;
};

/* f(phase 0), f(phase 1), ... while f returns true: the NQ steps of one turn of the
 * register ring, each with compile-time slot numbers. */
template <class F, int... I>
__device__ __forceinline__ bool pk_d3_phases(F &f, std::integer_sequence<int, I...>)
{
    return (... && f(pk_d3_int<I>()));
}

static_assert(PK_D3_NHALO <= PK_D3_THREADS, "one halo load per thread at most");

__device__ __forceinline__ int pk_d3_clamp(int v, int hi)
{
    return v < 0 ? 0 : (v > hi ? hi : v);
}

/* One step over planes [blockIdx.y*zch, +zch) of the tile blockIdx.x (tiles_x per row of
 * tiles).  fin and fout are distinct nx*ny*nz fields; nx*ny <= 2^32 (checked on the host)
 * so that in-plane offsets are 32-bit and each address is one wide multiply-add. */
__global__ void __launch_bounds__(PK_D3_THREADS, PK_D3_MIN_BLOCKS)
pk_d3_kernel(const float *__restrict__ fin, float *__restrict__ fout, int nx, int ny, int nz,
             int tiles_x, int zch, pk_d3_coef k)
{
    /* Two shared planes: writing plane z+1 while a slow warp still reads plane z needs no
     * second barrier per step. */
    __shared__ float sm[2][PK_D3_SH * PK_D3_SW];

    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int x0 = ((int)blockIdx.x % tiles_x) * PK_D3_TX;
    const int y0 = ((int)blockIdx.x / tiles_x) * PK_D3_TY;
    const int zs = (int)blockIdx.y * zch;
    const int ze = min(zs + zch, nz); /* zs < nz by the grid's construction */
    const size_t plane = (size_t)nx * (size_t)ny;

    /* This thread's column and rows (clamped offsets within a plane). */
    const int x = x0 + tx;
    const bool x_in = x < nx;
    const unsigned xc = (unsigned)min(x, nx - 1);
    const int ya = y0 + ty * PK_D3_RY; /* first row */
    unsigned off[PK_D3_RY];
#pragma unroll
    for (int r = 0; r < PK_D3_RY; ++r) off[r] = (unsigned)min(ya + r, ny - 1) * (unsigned)nx + xc;

    /* Halo: threads 0..NHALO-1 each own one halo cell of the tile: the row above (j = -1),
     * the row below (j = TY), then the left (i = -1) and right (i = TX) columns. */
    const int t = ty * PK_D3_TX + tx;
    const bool has_halo = t < PK_D3_NHALO;
    int hs = 0;        /* its shared-memory index */
    unsigned hoff = 0; /* its clamped in-plane offset */
    if (has_halo) {
        int hi, hj;
        if (t < PK_D3_TX) {
            hi = t;
            hj = -1;
        } else if (t < 2 * PK_D3_TX) {
            hi = t - PK_D3_TX;
            hj = PK_D3_TY;
        } else if (t < 2 * PK_D3_TX + PK_D3_TY) {
            hi = -1;
            hj = t - 2 * PK_D3_TX;
        } else {
            hi = PK_D3_TX;
            hj = t - 2 * PK_D3_TX - PK_D3_TY;
        }
        hs = (hj + 1) * PK_D3_SW + (hi + 1);
        hoff = (unsigned)pk_d3_clamp(y0 + hj, ny - 1) * (unsigned)nx +
               (unsigned)pk_d3_clamp(x0 + hi, nx - 1);
    }

    /* Register ring of NQ planes: at a step of phase S (S = (z - zs) mod NQ) slot S holds
     * plane z-1 (below), S+1 plane z, S+2 plane z+1 (above), the next ones planes z+2...;
     * the slot of `below` of the previous step receives plane z+PD+1.  h[] is the same ring
     * for the halo value (plane z in slot S).  The steps are unrolled NQ times with
     * compile-time slot numbers, so the ring never moves a register. */
    float v[PK_D3_NQ][PK_D3_RY];
    float h[PK_D3_NQ];
#pragma unroll
    for (int q = 0; q < PK_D3_NQ; ++q) {
        h[q] = 0.0f;
#pragma unroll
        for (int r = 0; r < PK_D3_RY; ++r) v[q][r] = 0.0f;
    }
    /* Prologue: planes zs-1 .. zs+PD that this chunk uses (plane ze is its last "above"). */
#pragma unroll
    for (int q = 0; q < PK_D3_PD + 2; ++q) {
        const int p = zs - 1 + q;
        if (p <= ze) {
            const float *src = fin + (size_t)pk_d3_clamp(p, nz - 1) * plane;
#pragma unroll
            for (int r = 0; r < PK_D3_RY; ++r) v[q][r] = __ldg(src + off[r]);
        }
    }
#pragma unroll
    for (int q = 0; q < PK_D3_HPD; ++q) {
        const int p = zs + q;
        if (has_halo && p < ze) h[q] = __ldg(fin + (size_t)p * plane + hoff);
    }

    /* full: the whole tile lies inside the field (every tile at 256^3), so the stores need
     * no bounds test; a compile-time flag gives that case its own branch-free loop. */
    auto step = [&](auto phase, auto full, int z) {
        constexpr int S = decltype(phase)::value;
        constexpr bool FULL = decltype(full)::value;
        constexpr int B = S % PK_D3_NQ, C = (S + 1) % PK_D3_NQ, A = (S + 2) % PK_D3_NQ;
        constexpr int P = (S + PK_D3_NQ - 1) % PK_D3_NQ; /* prefetch slot */
        constexpr int HP = (S + PK_D3_HPD) % PK_D3_NQ;   /* halo prefetch slot */
        /* Prefetch for later steps first, so that the loads overlap this step's work. */
        const int pv = z + PK_D3_PD + 1; /* the "above" plane of step z+PD */
        if (pv <= ze) {
            const float *src = fin + (size_t)min(pv, nz - 1) * plane;
            PK_D3_OPAQUE(src);
#pragma unroll
            for (int r = 0; r < PK_D3_RY; ++r) v[P][r] = __ldg(src + off[r]);
        }
        const int ph = z + PK_D3_HPD; /* the halo of step z+HPD */
        if (has_halo && ph < ze) {
            const float *src = fin + (size_t)ph * plane;
            PK_D3_OPAQUE(src);
            h[HP] = __ldg(src + hoff);
        }

        float *s = sm[z & 1];
#pragma unroll
        for (int r = 0; r < PK_D3_RY; ++r)
            s[(ty * PK_D3_RY + r + 1) * PK_D3_SW + tx + 1] = v[C][r];
        if (has_halo) s[hs] = h[B];
        __syncthreads();

        float *dst = fout + (size_t)z * plane;
        PK_D3_OPAQUE(dst);
#pragma unroll
        for (int r = 0; r < PK_D3_RY; ++r) {
            const int si = (ty * PK_D3_RY + r + 1) * PK_D3_SW + tx + 1;
            const float c = v[C][r];
            const float w = s[si - 1];
            const float e = s[si + 1];
            const float sn = (r == PK_D3_RY - 1) ? s[si + PK_D3_SW] : v[C][r + 1]; /* y+1 */
            const float nn = (r == 0) ? s[si - PK_D3_SW] : v[C][r - 1];            /* y-1 */
            float res = k.cc * c;
            res = fmaf(k.cw, w, res);
            res = fmaf(k.ce, e, res);
            res = fmaf(k.cs, sn, res);
            res = fmaf(k.cn, nn, res);
            res = fmaf(k.cb, v[B][r], res);
            res = fmaf(k.ct, v[A][r], res);
            if (FULL || (x_in && ya + r < ny)) pk_d3_store(dst + off[r], res);
        }
    };
    auto march = [&](auto full) {
        int z = zs;
        auto one = [&](auto phase) {
            step(phase, full, z);
            return ++z < ze;
        };
        while (pk_d3_phases(one, std::make_integer_sequence<int, PK_D3_NQ>())) {
        }
    };
    if (x0 + PK_D3_TX <= nx && y0 + PK_D3_TY <= ny)
        march(pk_d3_int<1>());
    else
        march(pk_d3_int<0>());
}

/* Choose the z chunk: blocks run in waves of `resident`; a block's time is proportional to
 * the planes it moves, zch + 1 (zch read+written, two more read).  Minimise
 * waves * (zch + 1); ties go to fewer chunks.  At 256^3 on 132 SMs x 4 blocks this gives
 * 8 chunks of 32 planes (512 blocks, one wave, 3% re-read). */
static void pk_d3_plan_chunks(long long tiles, int nz, long long resident, int *zch_out,
                              int *nch_out)
{
    int best_zch = nz, best_nch = 1;
    double best = -1.0;
    if (resident < 1) resident = 1;
    for (int nch = 1; nch <= nz && nch <= 65535; ++nch) {
        const int zch = (nz + nch - 1) / nch;
        if ((nz + zch - 1) / zch != nch) continue; /* same zch as a smaller nch */
        const long long blocks = tiles * nch;
        const long long waves = (blocks + resident - 1) / resident;
        const double cost = (double)waves * (double)(zch + 1);
        if (best < 0.0 || cost < best) {
            best = cost;
            best_zch = zch;
            best_nch = nch;
        }
    }
    *zch_out = best_zch;
    *nch_out = best_nch;
}
/* PK_D3_KERNEL_END */

/* ---- host side ---------------------------------------------------------------------------- */
typedef struct pk_cuda_d3 {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int nx, ny, nz;
    size_t bytes;     /* one field */
    pk_d3_coef k;
    float *buf[2];
    int cur;          /* buffer holding the latest field */
    int tiles_x, tiles, zch, nch;
    cudaEvent_t ev[2];
} pk_cuda_d3;
PK_CUDA_XFER_FIRST(pk_cuda_d3);

extern "C" void pk_cuda_d3_destroy(void *impl)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
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

extern "C" pk_status pk_cuda_d3_create(void *state, int device, const pk_d3_desc *desc,
                                     void **impl)
{
    cudaError_t e;
    size_t n = 0;
    int sms = 0, per_sm = 0;
    pk_cuda_d3 *p;

    PK_CHECK(desc->nx >= 1 && desc->ny >= 1 && desc->nz >= 1, PK_ESIZE,
             "diffusion3d: nx, ny, nz must be >= 1, got %d x %d x %d", desc->nx, desc->ny,
             desc->nz);
    PK_CHECK(pk_mul3_size((size_t)desc->nx, (size_t)desc->ny, (size_t)desc->nz, &n) == 0 &&
                 n <= SIZE_MAX / sizeof(float),
             PK_EOVERFLOW, "diffusion3d: %d x %d x %d floats overflow size_t", desc->nx,
             desc->ny, desc->nz);
    /* The kernel's limits: 32-bit in-plane offsets, int tile coordinates, one grid row of
     * tiles (2^31 - 1 blocks). */
    PK_CHECK((size_t)desc->nx * (size_t)desc->ny <= (size_t)UINT_MAX + 1, PK_EUNSUPPORTED,
             "diffusion3d: cuda handles planes of at most 2^32 points, got nx*ny = %d x %d",
             desc->nx, desc->ny);
    PK_CHECK(desc->nx <= INT_MAX - PK_D3_TX && desc->ny <= INT_MAX - PK_D3_TY, PK_EUNSUPPORTED,
             "diffusion3d: cuda needs nx <= %d and ny <= %d, got %d x %d", INT_MAX - PK_D3_TX,
             INT_MAX - PK_D3_TY, desc->nx, desc->ny);
    {
        const long long tx = (desc->nx + PK_D3_TX - 1) / PK_D3_TX;
        const long long ty = (desc->ny + PK_D3_TY - 1) / PK_D3_TY;
        PK_CHECK(tx * ty <= INT_MAX, PK_EUNSUPPORTED,
                 "diffusion3d: %d x %d plane needs %lld tiles, more than a CUDA grid holds",
                 desc->nx, desc->ny, tx * ty);
    }

    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaDeviceGetAttribute(MultiProcessorCount, %d)", device);
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pk_d3_kernel, PK_D3_THREADS,
                                                           0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor(diffusion3d)");
    if (per_sm < 1) per_sm = 1;

    p = (pk_cuda_d3 *)calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "diffusion3d: out of host memory for the CUDA plan");
    p->xf.s = (pk_cuda_state *)state;
    p->xf.device = device;
    p->nx = desc->nx;
    p->ny = desc->ny;
    p->nz = desc->nz;
    p->bytes = n * sizeof(float);
    p->k.cc = desc->c[PK_D3_CC];
    p->k.cw = desc->c[PK_D3_CW];
    p->k.ce = desc->c[PK_D3_CE];
    p->k.cs = desc->c[PK_D3_CS];
    p->k.cn = desc->c[PK_D3_CN];
    p->k.cb = desc->c[PK_D3_CB];
    p->k.ct = desc->c[PK_D3_CT];
    p->tiles_x = (desc->nx + PK_D3_TX - 1) / PK_D3_TX;
    p->tiles = p->tiles_x * ((desc->ny + PK_D3_TY - 1) / PK_D3_TY);
    pk_d3_plan_chunks(p->tiles, desc->nz, (long long)sms * per_sm, &p->zch, &p->nch);

    for (int i = 0; i < 2; ++i) {
        e = cudaMalloc((void **)&p->buf[i], p->bytes);
        if (e != cudaSuccess) {
            size_t fr = 0, tot = 0;
            p->buf[i] = NULL;
            (void)cudaGetLastError();
            (void)cudaMemGetInfo(&fr, &tot);
            pk_status st = pk_cuda_fail(
                e, "cudaMalloc(diffusion3d field %d of 2, %zu bytes, device %d; %zu of %zu "
                   "bytes free)",
                i + 1, p->bytes, device, fr, tot);
            pk_cuda_d3_destroy(p);
            return st;
        }
        /* A download before any upload returns zeros, not stale memory. */
        if ((e = cudaMemset(p->buf[i], 0, p->bytes)) != cudaSuccess) {
            pk_status st = pk_cuda_fail(e, "cudaMemset(diffusion3d field %d)", i + 1);
            pk_cuda_d3_destroy(p);
            return st;
        }
    }
    for (int i = 0; i < 2; ++i) {
        if ((e = cudaEventCreate(&p->ev[i])) != cudaSuccess) {
            p->ev[i] = NULL;
            pk_status st = pk_cuda_fail(e, "cudaEventCreate");
            pk_cuda_d3_destroy(p);
            return st;
        }
    }
    p->cur = 0;
    *impl = p;
    return PK_OK;
}

extern "C" pk_status pk_cuda_d3_upload(void *impl, const float *f, double *seconds)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    PK_TRY(pk_cuda_transfer(&p->xf, p->buf[0], f, p->bytes, 1, "diffusion3d upload", seconds));
    p->cur = 0;
    return PK_OK;
}

/* count steps from field a, alternating with b, timed by the plan's events.  back: an odd
 * count's result (in b) is copied to a before the closing event.  That copy is kernel time,
 * not transfer time: it is one device-to-device pass over the field, as a step's writes are,
 * and no byte crosses the link (transfer_s counts the link; an execute on device pointers
 * moves nothing over it). */
static pk_status pk_d3_steps(pk_cuda_d3 *p, float *a, float *b, int count, int back,
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

    const dim3 grid((unsigned)p->tiles, (unsigned)p->nch);
    const dim3 block(PK_D3_TX, PK_D3_BY);
    if ((e = cudaEventRecord(p->ev[0], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    for (int i = 0; i < count; ++i) {
        pk_cuda_launch(pk_d3_kernel, grid, block, 0, 0, (const float *)a, b, p->nx, p->ny, p->nz,
                       p->tiles_x, p->zch, p->k);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return pk_cuda_fail(e, "diffusion3d kernel launch (step %d of %d, grid %d x %d, "
                                   "block %d x %d)",
                                i + 1, count, p->tiles, p->nch, PK_D3_TX, PK_D3_BY);
        std::swap(a, b);
    }
    if (back && (count & 1) &&
        (e = cudaMemcpyAsync(b, a, p->bytes, cudaMemcpyDeviceToDevice, 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaMemcpyAsync(diffusion3d result back into the field, %zu "
                               "bytes)",
                            p->bytes);
    if ((e = cudaEventRecord(p->ev[1], 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventRecord");
    if ((e = cudaEventSynchronize(p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "diffusion3d kernel execution (%d steps; cudaEventSynchronize)",
                            count);
    if ((e = cudaEventElapsedTime(&ms, p->ev[0], p->ev[1])) != cudaSuccess)
        return pk_cuda_fail(e, "cudaEventElapsedTime");
    if (kernel_seconds) *kernel_seconds = (double)ms * 1e-3;
    return PK_OK;
}

extern "C" pk_status pk_cuda_d3_run(void *impl, int count, double *kernel_seconds)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    PK_TRY(pk_d3_steps(p, p->buf[p->cur], p->buf[p->cur ^ 1], count, 0, kernel_seconds));
    p->cur ^= count & 1;
    return PK_OK;
}

extern "C" pk_status pk_cuda_d3_download(void *impl, float *f, double *seconds)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    return pk_cuda_transfer(&p->xf, f, p->buf[p->cur], p->bytes, 0, "diffusion3d download",
                            seconds);
}

/* On the caller's field in place.  Device memory of the plan's device: the steps run on it,
 * the plan's other buffer (not the resident field) the work array; anything else: upload,
 * run, download. */
extern "C" pk_status pk_cuda_d3_execute(void *impl, float *f, int count, double *kernel_seconds,
                                        double *transfer_seconds)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    const pk_cuda_arg arg = {f, p->bytes, "f", 1};
    double up = 0, down = 0;
    int direct = 0;
    *transfer_seconds = 0;
    PK_TRY(pk_cuda_direct(&p->xf, &arg, 1, &direct));
    if (direct) return pk_d3_steps(p, f, p->buf[p->cur ^ 1], count, 1, kernel_seconds);
    PK_TRY(pk_cuda_d3_upload(p, f, &up));
    PK_TRY(pk_cuda_d3_run(p, count, kernel_seconds));
    PK_TRY(pk_cuda_d3_download(p, f, &down));
    *transfer_seconds = up + down;
    return PK_OK;
}

/* The diffusion3d kernel family on this backend (lib/internal.h, pk_d3_ops). */
/* Floats [first, first + n) of the resident field, through the transfer paths of the
 * uploads (pinned staging for pageable memory): a distributed plan's halo planes. */
static pk_status pk_cuda_d3_upload_part(void *impl, size_t first, size_t n, const float *f)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    return pk_cuda_transfer(&p->xf, p->buf[p->cur] + first, f, n * sizeof(float), 1,
                            "diffusion3d planes upload", NULL);
}

static pk_status pk_cuda_d3_download_part(void *impl, size_t first, size_t n, float *f)
{
    pk_cuda_d3 *p = (pk_cuda_d3 *)impl;
    return pk_cuda_transfer(&p->xf, f, p->buf[p->cur] + first, n * sizeof(float), 0,
                            "diffusion3d planes download", NULL);
}

extern "C" const pk_d3_ops pk_cuda_d3_ops = {"cuda", pk_cuda_d3_create, pk_cuda_d3_upload, pk_cuda_d3_run, pk_cuda_d3_download, pk_cuda_d3_destroy, pk_cuda_d3_execute, pk_cuda_d3_upload_part, pk_cuda_d3_download_part};
