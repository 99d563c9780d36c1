/* grid.cu - w-projection convolution gridding (docs/KERNELS.md 1) on CUDA GPUs: variants
 * "cuda-tiled" (default), "cuda-atomic" and "hybrid".  Written without a GPU: the device code
 * and the host orchestration were checked by a host emulation (each CUDA thread a host thread,
 * __syncthreads a barrier, the runtime calls on host memory), never on a GPU.
 *
 * A run (the NAG report's GPU pipeline, sections 3.1-3.6):
 *  1. Visibilities go up once, in chunks of GR_CHUNK through the context's pinned staging
 *     ring (pk_cuda_transfer: the host copies into pinned chunks overlap the DMA; pageable
 *     arrays through the driver would crawl at a fraction of the link); each chunk's locate
 *     kernel (one thread per visibility: the reference's float geometry, bit for bit) is
 *     queued on the compute stream once the chunk is in, and runs while the next chunk goes.  It writes
 *     a 24-byte record per visibility (cell, plane, conjugation, kernel offsets, vis * weight)
 *     and reduces per block the bounding box, the skipped count, the grid-point updates and
 *     the norm.  The norm of a visibility is weight * S[w][|off_v|][|off_u|], S the footprint
 *     sums of Re K tabulated at plan creation (planes x (os/2 + 1)^2 doubles); when that table
 *     would be too large (oversample in the hundreds) the thread sums its footprint instead,
 *     in the reference's order.  Only the box (16 bytes) and these sums come back.
 *  2. Only the bounding box of the touched cells is on the device ("sub-grid"), or a band of
 *     its rows when it does not fit (below).  If the caller's box is all zeros (checked on the
 *     host while the device sorts; the scan stops at the first non-zero) it is cleared on the
 *     device, else uploaded; the kernels add into it and it is copied back over the caller's
 *     cells (pk_cuda_transfer_2d: the box's rows gathered into and scattered out of the
 *     ring's chunks): the caller's grid accumulates with no other host pass over it.
 *  3. Tiles of 32 columns x 16 NW rows (NW warps per block, 2 by default: 32 x 32 tiles, the
 *     NAG optimum on the P100; p.tile_size 16, 32 or 64 picks the height) on a lattice that
 *     puts the grid centre in the middle of a tile.  Bucket sort on the device: a count kernel
 *     (one thread per visibility, one atomicAdd per tile its footprint meets), an exclusive
 *     scan (CUB), a scatter kernel (atomicAdd on the tile's cursor, the visibility's index
 *     stored; a visibility is in every tile its footprint meets).
 *  4. Tile kernel: a block owns a tile; thread (tx, ty) owns column tx and rows 16 ty .. 16 ty
 *     + 15 of it, the first 8 accumulated in registers, the other 8 in shared memory (NAG's
 *     REGSZ / SHMSZ split).  The block stages 32 NW visibilities at a time in shared memory,
 *     then every thread walks them: the row test is uniform over a warp, the column test
 *     (|k| <= s) diverges only where the footprint's edge cuts the warp.  Kernel rows are read
 *     from the row-reordered stack (layout in cl/grid.cl): the 32 lanes read 32 consecutive
 *     samples.  The outer tiles run with GR_OUTER_BLOCKS blocks per tile, the central box
 *     (p.central_radius tiles around the centre tile, default 4: 9 x 9 tiles, the NAG value
 *     for EL82-70) is launched separately, on a second stream, with GR_CENTRAL_BLOCKS blocks
 *     per tile; each block takes every P-th visibility of its tile and adds its tile into the
 *     sub-grid with atomicAdd (with one block per tile, plainly).  Both counts scale with the
 *     device's multiprocessors from the P100's (56 SMs), where they were tuned;
 *     PORTKERN_CUDA_GR_BLOCKS="outer,central" overrides both.
 *  5. Atomic kernel ("cuda-atomic", and the untiled part of "hybrid"): a warp per visibility
 *     (grid-stride over visibilities), the lanes along a footprint row (coalesced reads of the
 *     reordered stack, coalesced atomicAdd on the float components of the cells).
 *  hybrid: p.tile_factor f in [0, 1] is the fraction of the work (sum of (2s+1)^2) that is
 *     tiled, taken from the centre outwards: a visibility's radius is the Chebyshev distance,
 *     in tiles, from the centre tile to the farthest tile its footprint meets; the smallest
 *     radius R whose visibilities carry at least f of the work is tiled, the rest goes to the
 *     atomic kernel, after the tiles (stream order: a tile's plain write-back and an atomicAdd
 *     on the same cell must not overlap).  f < 0: the NAG report's per-architecture default:
 *     0 (atomics only) before compute capability 6.0 (Kepler, Maxwell: register pressure),
 *     1 (fully tiled) on Pascal and newer.  cuda-tiled is f = 1, cuda-atomic f = 0.
 *
 * Memory (chunking): the allowance is 90 % of cudaMemGetInfo's free bytes plus what the plan
 * already holds (PORTKERN_TEST_GR_DEVICE_BYTES=N replaces it, for tests).  Visibilities take
 * 48 bytes each plus 4 per tile they can meet (worst case for the largest support); they are
 * processed in batches that use at most half of the allowance, the sub-grid in bands of whole
 * tile rows in the rest.  A single batch stays on the device for every band; with several
 * batches each band re-sends them (the first pass only finds the box and the sums).
 *
 * Timings: CUDA events around every copy and kernel; kernel_s and transfer_s are the sums
 * (copies overlap kernels, so they may add up to more than the wall time); stages "locate",
 * "count", "sort" (scan + scatter), "outer", "central", "atomic", "transfer".
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_gr_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>
#endif

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code --------------------------------------------------------------------------
 * Self-contained between these markers (no library calls, no warp intrinsics), so that it can
 * be compiled for the host and emulated one host thread per CUDA thread. */
/* PK_GR_DEVICE_BEGIN */
#define GR_TW 32               /* tile width: one warp across */
#define GR_REG 8               /* rows per thread in registers */
#define GR_SHM 8               /* rows per thread in shared memory */
#define GR_WROWS (GR_REG + GR_SHM)
#define GR_LOCATE_THREADS 256
#define GR_ATOMIC_THREADS 128
#define GR_SKIPPED (-1)        /* record.z of a skipped visibility */

#include "grid_locate.cuh" /* gr_geom, gr_locate (shared with degrid.cu) */

/* The part of the tile lattice a band covers, and which visibilities are tiled. */
struct gr_band {
    int tc0, tr0, ntc, ntr; /* first tile column / row, counts */
    int v0, v1;             /* band rows (inclusive) */
    int rad_max;            /* tiled iff radius <= rad_max (-1: none) */
};

struct gr_acc {
    double norm;
    unsigned long long skipped, updates;
    int u0, u1, v0, v1;
};

/* atomicAdd on doubles is native from sm_60; older parts (--with-cuda-arch=sm_35 with an
 * older nvcc) get the CAS loop of the CUDA programming guide. */
__device__ __forceinline__ void gr_atomic_add_f64(double *p, double v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
    unsigned long long *a = (unsigned long long *)p, old = *a, seen;
    do {
        seen = old;
        old = atomicCAS(a, seen, __double_as_longlong(v + __longlong_as_double((long long)seen)));
    } while (seen != old);
#else
    atomicAdd(p, v);
#endif
}

/* Chebyshev distance in tiles from the centre tile to the farthest tile the footprint meets. */
__device__ __forceinline__ int gr_radius(const gr_geom &q, int gu, int gv, int s)
{
    const int a = abs((gu - s - q.u_origin) / GR_TW - q.ctu);
    const int b = abs((gu + s - q.u_origin) / GR_TW - q.ctu);
    const int c = abs((gv - s - q.v_origin) / q.th - q.ctv);
    const int d = abs((gv + s - q.v_origin) / q.th - q.ctv);
    return max(max(a, b), max(c, d));
}

/* Offset of sample (iy, k) in the reordered stack, from the plane's row base
 * roff[w] + |ou| D: the row for |ou| read forwards (ou <= 0) or backwards (ou > 0). */
__device__ __forceinline__ size_t gr_sample(int iy, int k, int s, int ou, int os)
{
    const int D = 2 * s + 1, t = ou <= 0 ? s + k : s - k;
    return (size_t)iy * (size_t)((os / 2 + 1) * D) + (size_t)t;
}

/* One thread per visibility: record, and (acc != NULL) the block's sums into *acc and the
 * work per radius into hist (hist != NULL). */
__global__ void __launch_bounds__(GR_LOCATE_THREADS)
gr_locate_kernel(gr_geom q, const int *support, const double *norm_table, const unsigned *roff,
                 const float2 *kern, const float *uu, const float *vv, const float *ww,
                 const float2 *vis, const float *weight, int n, int4 *geo, float2 *val,
                 gr_acc *acc, unsigned long long *hist, int hist_len)
{
    __shared__ double s_norm[GR_LOCATE_THREADS];
    __shared__ unsigned long long s_skip[GR_LOCATE_THREADS], s_upd[GR_LOCATE_THREADS];
    __shared__ int s_box[4][GR_LOCATE_THREADS];
    const int tid = (int)threadIdx.x;
    const int i = (int)blockIdx.x * GR_LOCATE_THREADS + tid;
    double norm = 0;
    unsigned long long skip = 0, upd = 0;
    int box[4] = {INT_MAX, INT_MIN, INT_MAX, INT_MIN};
    if (i < n) {
        const float2 v = vis[i];
        const float wt = weight[i], wwi = ww[i];
        int w, s, gu, gv, ou, ov;
        if (gr_locate(q, support, uu[i], vv[i], wwi, v.x, v.y, wt, w, s, gu, gv, ou, ov)) {
            geo[i] = make_int4(0, 0, GR_SKIPPED, 0);
            skip = 1;
        } else {
            const int half = q.os / 2;
            geo[i] = make_int4(gu, gv, 2 * w + (wwi > 0.0f), (ou + half) | (ov + half) << 16);
            val[i] = make_float2(__fmul_rn(v.x, wt), __fmul_rn(v.y, wt));
            if (acc) {
                const int D = 2 * s + 1;
                upd = (unsigned long long)D * (unsigned long long)D;
                box[0] = gu - s;
                box[1] = gu + s;
                box[2] = gv - s;
                box[3] = gv + s;
                double sum;
                if (norm_table) {
                    sum = norm_table[((size_t)w * (half + 1) + abs(ov)) * (half + 1) + abs(ou)];
                } else { /* the reference's order: rows j, then columns k */
                    const float2 *plane = kern + roff[w] + (size_t)abs(ou) * D;
                    sum = 0;
                    for (int j = -s; j <= s; ++j)
                        for (int k = -s; k <= s; ++k)
                            sum += plane[gr_sample(abs(ov + j * q.os), k, s, ou, q.os)].x;
                }
                norm = sum * (double)wt;
                if (hist) {
                    const int r = gr_radius(q, gu, gv, s);
                    atomicAdd(&hist[r < hist_len ? r : hist_len - 1], upd);
                }
            }
        }
    }
    if (!acc) return; /* uniform over the block */
    s_norm[tid] = norm;
    s_skip[tid] = skip;
    s_upd[tid] = upd;
    for (int c = 0; c < 4; ++c) s_box[c][tid] = box[c];
    for (int step = GR_LOCATE_THREADS / 2; step > 0; step /= 2) {
        __syncthreads();
        if (tid < step) {
            s_norm[tid] += s_norm[tid + step];
            s_skip[tid] += s_skip[tid + step];
            s_upd[tid] += s_upd[tid + step];
            s_box[0][tid] = min(s_box[0][tid], s_box[0][tid + step]);
            s_box[1][tid] = max(s_box[1][tid], s_box[1][tid + step]);
            s_box[2][tid] = min(s_box[2][tid], s_box[2][tid + step]);
            s_box[3][tid] = max(s_box[3][tid], s_box[3][tid + step]);
        }
    }
    if (tid == 0) {
        gr_atomic_add_f64(&acc->norm, s_norm[0]);
        atomicAdd(&acc->skipped, s_skip[0]);
        atomicAdd(&acc->updates, s_upd[0]);
        atomicMin(&acc->u0, s_box[0][0]);
        atomicMax(&acc->u1, s_box[1][0]);
        atomicMin(&acc->v0, s_box[2][0]);
        atomicMax(&acc->v1, s_box[3][0]);
    }
}

/* The band-relative tiles [c0, c1] x [r0, r1] that a tiled visibility's footprint meets
 * within the band; 0 when it is skipped, untiled or outside the band. */
__device__ __forceinline__ int gr_tiles_of(const gr_geom &q, const gr_band &b, const int *support,
                                           int4 rec, int &c0, int &c1, int &r0, int &r1)
{
    if (rec.z < 0) return 0;
    const int s = support[rec.z >> 1];
    if (b.rad_max < 0 || gr_radius(q, rec.x, rec.y, s) > b.rad_max) return 0;
    const int lo = max(rec.y - s, b.v0), hi = min(rec.y + s, b.v1);
    if (lo > hi) return 0;
    c0 = (rec.x - s - q.u_origin) / GR_TW - b.tc0;
    c1 = (rec.x + s - q.u_origin) / GR_TW - b.tc0;
    r0 = (lo - q.v_origin) / q.th - b.tr0;
    r1 = (hi - q.v_origin) / q.th - b.tr0;
    return 1;
}

__global__ void __launch_bounds__(GR_LOCATE_THREADS)
gr_count_kernel(gr_geom q, gr_band b, const int *support, const int4 *geo, int n,
                unsigned *count)
{
    const int i = (int)blockIdx.x * GR_LOCATE_THREADS + (int)threadIdx.x;
    int c0, c1, r0, r1;
    if (i >= n || !gr_tiles_of(q, b, support, geo[i], c0, c1, r0, r1)) return;
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) atomicAdd(&count[r * b.ntc + c], 1u);
}

/* cursor: the scan's starts, advanced to the ends. */
__global__ void __launch_bounds__(GR_LOCATE_THREADS)
gr_scatter_kernel(gr_geom q, gr_band b, const int *support, const int4 *geo, int n,
                  unsigned *cursor, unsigned *bucket)
{
    const int i = (int)blockIdx.x * GR_LOCATE_THREADS + (int)threadIdx.x;
    int c0, c1, r0, r1;
    if (i >= n || !gr_tiles_of(q, b, support, geo[i], c0, c1, r0, r1)) return;
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) bucket[atomicAdd(&cursor[r * b.ntc + c], 1u)] = (unsigned)i;
}

/* A block of 32 x NW threads grids one tile (or, with P blocks per tile, every P-th of its
 * visibilities).  central: the block index runs over the central box [cb_c0, cb_c1] x
 * [cb_r0, cb_r1] (band tile coordinates); else over all the band's tiles, the central box
 * excepted. */
template <int NW>
__global__ void __launch_bounds__(GR_TW * NW)
gr_tile_kernel(gr_geom q, gr_band b, const int *support, const unsigned *roff,
               const float2 *kern, const int4 *geo, const float2 *val, const unsigned *bucket,
               const unsigned *start, float2 *sub, int pitch, int sub_u0, int sub_v0,
               int sub_rows, int sub_cols, int P, int central, int cb_c0, int cb_c1, int cb_r0,
               int cb_r1)
{
    const int NT = GR_TW * NW;
    __shared__ float2 acc[GR_SHM * GR_TW * NW]; /* [(ty GR_SHM + r) 32 + tx] */
    __shared__ int4 r_geo[GR_TW * NW];          /* (gu, gv, 2 s + conj, packed offsets) */
    __shared__ unsigned r_base[GR_TW * NW];     /* roff[w] + |ou| D */
    __shared__ float2 r_val[GR_TW * NW];
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * GR_TW + tx;
    const int part = (int)(blockIdx.x % (unsigned)P), tile = (int)(blockIdx.x / (unsigned)P);
    int tc, tr;
    if (central) {
        const int cw = cb_c1 - cb_c0 + 1;
        tc = cb_c0 + tile % cw;
        tr = cb_r0 + tile / cw;
    } else {
        tc = tile % b.ntc;
        tr = tile / b.ntc;
        if (tc >= cb_c0 && tc <= cb_c1 && tr >= cb_r0 && tr <= cb_r1) return;
    }
    const int t = tr * b.ntc + tc;
    const unsigned first = start[t], cnt = start[t + 1] - first;
    if (cnt <= (unsigned)part) return; /* uniform over the block */

    const int os = q.os, half = os / 2;
    const int my_u = q.u_origin + (b.tc0 + tc) * GR_TW + tx;             /* my column */
    const int my_v = q.v_origin + (b.tr0 + tr) * q.th + ty * GR_WROWS;   /* my first row */
    float2 reg[GR_REG];
#pragma unroll
    for (int r = 0; r < GR_REG; ++r) reg[r] = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < GR_SHM; ++r) acc[(ty * GR_SHM + r) * GR_TW + tx] = make_float2(0.0f, 0.0f);

    for (unsigned base = (unsigned)part; base < cnt; base += (unsigned)(P * NT)) {
        __syncthreads(); /* the previous batch is consumed */
        const unsigned e = base + (unsigned)(P * tid);
        if (e < cnt) {
            const unsigned i = bucket[first + e];
            const int4 g = geo[i];
            const int w = g.z >> 1, s = support[w];
            r_geo[tid] = make_int4(g.x, g.y, 2 * s + (g.z & 1), g.w);
            r_base[tid] = roff[w] + (unsigned)abs((g.w & 0xffff) - half) * (unsigned)(2 * s + 1);
            r_val[tid] = val[i];
        }
        __syncthreads();
        const unsigned m = min((unsigned)NT, (cnt - base + (unsigned)P - 1) / (unsigned)P);
        for (unsigned v = 0; v < m; ++v) {
            const int4 r = r_geo[v];
            const int s = r.z >> 1;
            if (r.y + s < my_v || r.y - s >= my_v + GR_WROWS) continue; /* warp-uniform */
            const int k = my_u - r.x;
            if (k < -s || k > s) continue;
            const int ou = (r.w & 0xffff) - half, ov = (r.w >> 16) - half;
            const float conj = (r.z & 1) ? -1.0f : 1.0f;
            const float2 x = r_val[v];
            const float2 *col = kern + r_base[v];
#pragma unroll
            for (int rr = 0; rr < GR_WROWS; ++rr) {
                const int j = my_v + rr - r.y;
                if (j < -s || j > s) continue;
                const float2 c = col[gr_sample(abs(ov + j * os), k, s, ou, os)];
                const float cim = c.y * conj;
                float2 &a = rr < GR_REG ? reg[rr < GR_REG ? rr : 0]
                                        : acc[(ty * GR_SHM + (rr - GR_REG)) * GR_TW + tx];
                a.x += x.x * c.x - x.y * cim;
                a.y += x.y * c.x + x.x * cim;
            }
        }
    }

    /* write-back: a warp writes 32 consecutive cells of a row */
    const int col = my_u - sub_u0;
#pragma unroll
    for (int rr = 0; rr < GR_WROWS; ++rr) {
        const int row = my_v + rr - sub_v0;
        if (row < 0 || row >= sub_rows || col < 0 || col >= sub_cols) continue;
        const float2 a = rr < GR_REG ? reg[rr < GR_REG ? rr : 0]
                                     : acc[(ty * GR_SHM + (rr - GR_REG)) * GR_TW + tx];
        if (a.x == 0.0f && a.y == 0.0f) continue;
        float2 *cell = sub + (size_t)row * (size_t)pitch + (size_t)col;
        if (P > 1) {
            atomicAdd(&cell->x, a.x);
            atomicAdd(&cell->y, a.y);
        } else {
            cell->x += a.x;
            cell->y += a.y;
        }
    }
}

/* A warp per visibility (grid-stride), lanes along a footprint row; the tiled visibilities
 * (radius <= b.rad_max) and the rows outside the band are left out. */
__global__ void __launch_bounds__(GR_ATOMIC_THREADS)
gr_atomic_kernel(gr_geom q, gr_band b, const int *support, const unsigned *roff,
                 const float2 *kern, const int4 *geo, const float2 *val, int n, float2 *sub,
                 int pitch, int sub_u0, int sub_v0, int sub_rows)
{
    const int lane = (int)threadIdx.x % 32;
    const long long warps = (long long)gridDim.x * (GR_ATOMIC_THREADS / 32);
    const int os = q.os;
    for (long long i = ((long long)blockIdx.x * GR_ATOMIC_THREADS + threadIdx.x) / 32; i < n;
         i += warps) {
        const int4 r = geo[i];
        if (r.z < 0) continue;
        const int w = r.z >> 1, s = support[w], D = 2 * s + 1;
        if (b.rad_max >= 0 && gr_radius(q, r.x, r.y, s) <= b.rad_max) continue;
        const int j0 = max(-s, sub_v0 - r.y), j1 = min(s, sub_v0 + sub_rows - 1 - r.y);
        const int ou = (r.w & 0xffff) - os / 2, ov = (r.w >> 16) - os / 2;
        const float conj = (r.z & 1) ? -1.0f : 1.0f;
        const float2 x = val[i];
        const float2 *plane = kern + roff[w] + (size_t)abs(ou) * D;
        for (int j = j0; j <= j1; ++j) {
            const int iy = abs(ov + j * os);
            float2 *row = sub + (size_t)(r.y + j - sub_v0) * (size_t)pitch + (r.x - sub_u0);
            for (int k = -s + lane; k <= s; k += 32) {
                const float2 c = plane[gr_sample(iy, k, s, ou, os)];
                const float cim = c.y * conj;
                atomicAdd(&row[k].x, x.x * c.x - x.y * cim);
                atomicAdd(&row[k].y, x.y * c.x + x.x * cim);
            }
        }
    }
}
/* PK_GR_DEVICE_END */

/* ---- host side ------------------------------------------------------------------------------ */
#define GR_CHUNK (1 << 20)        /* visibilities per upload chunk */
#define GR_OUTER_BLOCKS 4         /* blocks per outer tile on a P100 (NAG: up to ~8 helps) */
#define GR_CENTRAL_BLOCKS 32      /* blocks per tile of the central box on a P100 */
#define GR_TUNED_SMS 56           /* the P100's multiprocessors, where those were tuned */
#define GR_CENTRAL_RADIUS 4       /* NAG, EL82-70 with 32 x 32 tiles: 9 x 9 tiles */
#define GR_TABLE_ENTRIES (1u << 22)
#define GR_TABLE_OPS (1.0 * (1u << 28))
#define GR_EVENTS 128          /* timing pairs held before they are read */
/* events outside the timing pool: cross-stream dependencies */
#define GR_EV_FORK (2 * GR_EVENTS)
#define GR_EV_JOIN (2 * GR_EVENTS + 1)
#define GR_EV_GRID (2 * GR_EVENTS + 2)
#define GR_EV_ALL (2 * GR_EVENTS + 4)

enum { ST_LOCATE, ST_COUNT, ST_SORT, ST_OUTER, ST_CENTRAL, ST_ATOMIC, ST_TRANSFER, ST_N };
static const char *const gr_stage_names[ST_N] = {"locate", "count",  "sort",    "outer",
                                                 "central", "atomic", "transfer"};

struct gr_dbuf {
    void *p;
    size_t cap;
};

enum { B_UU, B_VV, B_WW, B_VIS, B_WT, B_GEO, B_VAL, B_BUCKET, B_COUNT, B_START, B_SUB, B_ACC,
       B_HIST, B_CUB, B_N };

struct gr_plan {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it): state, device, transfer paths */
    int cc_major, sms, nw, th, central_radius, outer_blocks, central_blocks;
    double tile_factor; /* resolved: 0 atomics only, 1 all tiled */
    pk_grid_params p;
    int max_support, hist_len;
    gr_geom q;
    int *d_support;
    unsigned *d_roff;
    float2 *d_kern;
    double *d_table;
    size_t stack_bytes;
    long long test_bytes; /* PORTKERN_TEST_GR_DEVICE_BYTES, 0 if unset */
    cudaStream_t s_comp, s_copy, s_aux;
    cudaEvent_t ev[GR_EV_ALL];
    int ev_stage[GR_EVENTS], nev;
    double stage_s[ST_N];
    gr_dbuf buf[B_N];
    float2 *dev_grid; /* pk_cuda_gr_run_device: the g x g device grid the run adds into (the
                         kernels write it in place: no sub-grid, no bands, no copies) */
    char name[256];
};
PK_CUDA_XFER_FIRST(gr_plan);

/* Every CUDA call goes through this: on failure, record it and leave. */
#define GR_CUDA(call, ...)                                                                     \
    do {                                                                                       \
        cudaError_t gr_e_ = (call);                                                            \
        if (gr_e_ != cudaSuccess) return pk_cuda_fail(gr_e_, __VA_ARGS__);                      \
    } while (0)

template <typename... P, typename... A>
static cudaError_t gr_launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t st,
                            A... args)
{
    pk_cuda_launch(kernel, grid, block, 0, st, args...);
    return cudaGetLastError();
}

static pk_status buf_ensure(gr_plan *h, int which, size_t bytes, const char *what)
{
    gr_dbuf *b = &h->buf[which];
    if (bytes == 0) bytes = 16;
    if (b->p && b->cap >= bytes) return PK_OK;
    if (b->p) cudaFree(b->p);
    b->p = NULL;
    b->cap = 0;
    cudaError_t e = cudaMalloc(&b->p, bytes);
    if (e != cudaSuccess) {
        b->p = NULL;
        return pk_cuda_fail(e, "cudaMalloc(grid %s, %zu bytes, device %d)", what, bytes,
                            h->xf.device);
    }
    b->cap = bytes;
    return PK_OK;
}

/* ---- timing: pairs of events around copies and kernels, harvested when the pool fills and
 * at the end of a run ---- */
static pk_status ev_harvest(gr_plan *h)
{
    for (int i = 0; i < h->nev; ++i) {
        float ms = 0;
        GR_CUDA(cudaEventSynchronize(h->ev[2 * i + 1]), "cudaEventSynchronize(grid timing)");
        GR_CUDA(cudaEventElapsedTime(&ms, h->ev[2 * i], h->ev[2 * i + 1]),
                "cudaEventElapsedTime(grid timing)");
        h->stage_s[h->ev_stage[i]] += 1e-3 * ms;
    }
    h->nev = 0;
    return PK_OK;
}

static pk_status ev_begin(gr_plan *h, int stage, cudaStream_t st, int *slot)
{
    if (h->nev == GR_EVENTS) PK_TRY(ev_harvest(h));
    *slot = h->nev++;
    h->ev_stage[*slot] = stage;
    GR_CUDA(cudaEventRecord(h->ev[2 * *slot], st), "cudaEventRecord(grid timing)");
    return PK_OK;
}

static pk_status ev_end(gr_plan *h, int slot, cudaStream_t st)
{
    GR_CUDA(cudaEventRecord(h->ev[2 * slot + 1], st), "cudaEventRecord(grid timing)");
    return PK_OK;
}

/* ---- plan ------------------------------------------------------------------------------- */
extern "C" void pk_cuda_gr_destroy(void *impl)
{
    gr_plan *h = (gr_plan *)impl;
    if (!h) return;
    (void)cudaSetDevice(h->xf.device);
    if (h->s_comp) cudaStreamSynchronize(h->s_comp);
    if (h->s_aux) cudaStreamSynchronize(h->s_aux);
    if (h->s_copy) cudaStreamSynchronize(h->s_copy);
    for (int i = 0; i < B_N; ++i)
        if (h->buf[i].p) cudaFree(h->buf[i].p);
    if (h->d_support) cudaFree(h->d_support);
    if (h->d_roff) cudaFree(h->d_roff);
    if (h->d_kern) cudaFree(h->d_kern);
    if (h->d_table) cudaFree(h->d_table);
    for (int i = 0; i < GR_EV_ALL; ++i)
        if (h->ev[i]) cudaEventDestroy(h->ev[i]);
    if (h->s_comp) cudaStreamDestroy(h->s_comp);
    if (h->s_copy) cudaStreamDestroy(h->s_copy);
    if (h->s_aux) cudaStreamDestroy(h->s_aux);
    (void)cudaGetLastError();
    free(h);
}

/* The row-reordered stack (cl/grid.cl's layout) and its plane offsets. */
static float *gr_reorder(const pk_gr_desc *d, unsigned *roff, size_t *count)
{
    const int np = d->p.num_w_planes, os = d->p.oversample, A = os / 2 + 1;
    size_t total = 0;
    for (int w = 0; w < np; ++w) {
        const size_t s = (size_t)d->support[w], m = (size_t)os / 2 + s * os + 1;
        roff[w] = (unsigned)total;
        total += m * (size_t)A * (2 * s + 1);
        if (total > UINT_MAX) return NULL;
    }
    float *r = (float *)malloc(2 * (total ? total : 1) * sizeof(float));
    if (!r) return NULL;
    for (int w = 0; w < np; ++w) {
        const int s = d->support[w], D = 2 * s + 1, m = os / 2 + s * os + 1;
        const float *plane = d->kernels + 2 * d->plane_offset[w];
        float *out = r + 2 * (size_t)roff[w];
        for (int iy = 0; iy < m; ++iy)
            for (int a = 0; a < A; ++a)
                for (int t = 0; t < D; ++t) {
                    const int ix = abs(-a + (t - s) * os);
                    float *o = out + 2 * (((size_t)iy * A + a) * D + t);
                    o[0] = plane[2 * ((size_t)iy * m + ix)];
                    o[1] = plane[2 * ((size_t)iy * m + ix) + 1];
                }
    }
    *count = total;
    return r;
}

/* S[w][a_v][a_u]: footprint sums of Re K (cl/grid_opencl.c has the same table); NULL when too
 * large (module comment). */
static double *gr_norm_table(const pk_gr_desc *d, size_t *entries)
{
    const int np = d->p.num_w_planes, os = d->p.oversample, A = os / 2 + 1;
    double ops = 0;
    for (int w = 0; w < np; ++w) {
        const double s = d->support[w], m = os / 2 + s * os + 1;
        ops += A * m * (2 * s + 1) + (double)A * A * (2 * s + 1);
    }
    if ((double)np * A * A > GR_TABLE_ENTRIES || ops > GR_TABLE_OPS) return NULL;
    double *S = (double *)malloc((size_t)np * A * A * sizeof *S);
    const size_t mmax = (size_t)os / 2 + (size_t)d->max_support * os + 1;
    double *rows = (double *)malloc((size_t)A * mmax * sizeof *rows);
    if (!S || !rows) {
        free(S);
        free(rows);
        return NULL;
    }
    for (int w = 0; w < np; ++w) {
        const int s = d->support[w], m = os / 2 + s * os + 1;
        const float *plane = d->kernels + 2 * d->plane_offset[w];
        for (int a = 0; a < A; ++a)
            for (int iy = 0; iy < m; ++iy) {
                double sum = 0;
                for (int k = -s; k <= s; ++k) sum += plane[2 * ((size_t)iy * m + abs(-a + k * os))];
                rows[(size_t)a * m + iy] = sum;
            }
        for (int av = 0; av < A; ++av)
            for (int au = 0; au < A; ++au) {
                double sum = 0;
                for (int j = -s; j <= s; ++j) sum += rows[(size_t)au * m + abs(-av + j * os)];
                S[((size_t)w * A + av) * A + au] = sum;
            }
    }
    free(rows);
    *entries = (size_t)np * A * A;
    return S;
}

static int tile_origin(int g, int ts) { return ((g / 2 - ts / 2) % ts + ts) % ts - ts; }

static pk_status gr_upload_const(gr_plan *h, void **dst, const void *src, size_t bytes,
                                 const char *what)
{
    GR_CUDA(cudaMalloc(dst, bytes ? bytes : 4), "cudaMalloc(grid %s, %zu bytes, device %d)",
            what, bytes, h->xf.device);
    /* not said in the run info: a run's own copies (on its streams) are most of its traffic,
     * and these would stand for them */
    pk_cuda_xfer xf = h->xf;
    return pk_cuda_transfer(&xf, *dst, src, bytes, 1, what, NULL);
}

extern "C" pk_status pk_cuda_gr_create(void *state, int device, const pk_gr_desc *desc,
                                     void **impl)
{
    const char *variant = desc->variant && desc->variant[0] ? desc->variant : "cuda-tiled";
    double factor;
    if (!strcmp(variant, "cuda-tiled"))
        factor = 1;
    else if (!strcmp(variant, "cuda-atomic"))
        factor = 0;
    else if (!strcmp(variant, "hybrid"))
        factor = desc->p.tile_factor;
    else
        return pk_fail(PK_EINVAL, "grid: unknown CUDA variant '%s' (cuda-tiled, cuda-atomic, "
                                  "hybrid)",
                       variant);
    const int np = desc->p.num_w_planes, os = desc->p.oversample;
    PK_CHECK(os <= 2 * 0x7fff, PK_EUNSUPPORTED, "grid: cuda packs kernel offsets in 16 bits");
    PK_CHECK(np <= (INT_MAX - 1) / 2, PK_EUNSUPPORTED, "grid: too many w planes for cuda");
    GR_CUDA(cudaSetDevice(device), "cudaSetDevice(%d)", device);
    cudaDeviceProp prop;
    GR_CUDA(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties(%d)", device);

    gr_plan *h = (gr_plan *)calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "grid: out of host memory for a CUDA plan");
    pk_status s = PK_OK;
    h->xf.s = (pk_cuda_state *)state;
    h->xf.device = device;
    h->p = desc->p;
    h->max_support = desc->max_support;
    h->cc_major = prop.major;
    h->sms = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    snprintf(h->name, sizeof h->name, "%s", prop.name);
    /* NAG: atomics beat tiles before Pascal (register pressure), tiles win from Pascal on */
    h->tile_factor = factor < 0 ? (prop.major < 6 ? 0.0 : 1.0) : factor;
    /* tile height: 16, 32 (default) or 64 rows; the parameter is rounded to the nearest */
    const int ts = desc->p.tile_size;
    h->nw = ts == 0 ? 2 : ts < 24 ? 1 : ts < 48 ? 2 : 4;
    h->th = GR_WROWS * h->nw;
    h->central_radius = desc->p.central_radius == 0 ? GR_CENTRAL_RADIUS : desc->p.central_radius;
    /* The same blocks per multiprocessor as on the P100: the kernel is latency-bound with few
     * blocks (H100, 132 SMs: 4,32 took 317 ms, 32,256 127 ms and still falling; ncu: 36%
     * occupancy), so a larger device needs more blocks per tile.  Not yet measured on a GPU:
     * grid.cuda_blocks tunes it. */
    h->outer_blocks = (GR_OUTER_BLOCKS * h->sms + GR_TUNED_SMS - 1) / GR_TUNED_SMS;
    h->central_blocks = (GR_CENTRAL_BLOCKS * h->sms + GR_TUNED_SMS - 1) / GR_TUNED_SMS;
    if (h->outer_blocks < GR_OUTER_BLOCKS) h->outer_blocks = GR_OUTER_BLOCKS;
    if (h->central_blocks < GR_CENTRAL_BLOCKS) h->central_blocks = GR_CENTRAL_BLOCKS;
    if (h->central_blocks > 1024) h->central_blocks = 1024;
    if (h->outer_blocks > 1024) h->outer_blocks = 1024;
    int blocks[2]; /* grid.cuda_blocks: 0,0 is auto */
    const pk_status bs = pk_param_get(desc->tuning, PK_PARAM_GRID_CUDA_BLOCKS, blocks);
    if (bs != PK_OK) {
        free(h);
        return bs;
    }
    if (blocks[0] > 0) {
        h->outer_blocks = blocks[0];
        h->central_blocks = blocks[1];
    }
    const char *test_bytes = pk_getenv("PORTKERN_TEST_GR_DEVICE_BYTES");
    if (test_bytes) {
        char *end;
        h->test_bytes = strtoll(test_bytes, &end, 10);
        if (*end != '\0' || h->test_bytes < 1024) {
            free(h);
            return pk_fail(PK_EINVAL, "PORTKERN_TEST_GR_DEVICE_BYTES: expected a byte count >= "
                                      "1024, got '%s'",
                           test_bytes);
        }
    }

    const int g = desc->p.grid_size;
    h->q.g = g;
    h->q.os = os;
    h->q.num_planes = np;
    h->q.grid_scale = (float)(g * desc->p.cell_size_rad);
    h->q.w_scale = (float)desc->p.w_scale;
    h->q.u_origin = tile_origin(g, GR_TW);
    h->q.v_origin = tile_origin(g, h->th);
    h->q.th = h->th;
    h->q.ctu = (g / 2 - h->q.u_origin) / GR_TW;
    h->q.ctv = (g / 2 - h->q.v_origin) / h->th;
    h->hist_len = g / (GR_WROWS < GR_TW ? GR_WROWS : GR_TW) + 4;

    unsigned *roff = (unsigned *)malloc((size_t)np * sizeof *roff);
    size_t nsamples = 0, entries = 0;
    float *reordered = roff ? gr_reorder(desc, roff, &nsamples) : NULL;
    double *table = reordered ? gr_norm_table(desc, &entries) : NULL;
    if (!reordered) {
        s = pk_fail(PK_EUNSUPPORTED, "grid: the reordered kernel stack exceeds 2^32 samples or "
                                     "host memory");
        goto fail;
    }
    h->stack_bytes = nsamples * 8;
    if ((s = gr_upload_const(h, (void **)&h->d_kern, reordered, h->stack_bytes,
                             "grid kernel stack")) != PK_OK ||
        (s = gr_upload_const(h, (void **)&h->d_roff, roff, (size_t)np * 4, "grid plane offsets")) !=
            PK_OK ||
        (s = gr_upload_const(h, (void **)&h->d_support, desc->support, (size_t)np * 4,
                             "grid supports")) != PK_OK)
        goto fail;
    if (table && (s = gr_upload_const(h, (void **)&h->d_table, table, entries * 8,
                                      "grid norm table")) != PK_OK)
        goto fail;
    {
        cudaError_t e = cudaStreamCreateWithFlags(&h->s_comp, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&h->s_copy, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&h->s_aux, cudaStreamNonBlocking);
        for (int i = 0; i < GR_EV_ALL && e == cudaSuccess; ++i)
            e = cudaEventCreate(&h->ev[i]);
        if (e != cudaSuccess) {
            s = pk_cuda_fail(e, "grid streams and events on device %d", device);
            goto fail;
        }
    }
    free(roff);
    free(reordered);
    free(table);
    *impl = h;
    return PK_OK;
fail:
    free(roff);
    free(reordered);
    free(table);
    pk_cuda_gr_destroy(h);
    return s;
}

/* ---- run ------------------------------------------------------------------------------------ */
struct gr_box {
    int u0, u1, v0, v1;
};

/* Upload visibilities [first, first + cnt) in chunks, each chunk's locate kernel queued
 * behind its copy (acc: accumulate the sums of pass 0). */
static pk_status gr_upload_locate(gr_plan *h, const pk_grid_data *d, size_t first, int cnt,
                                  int accumulate)
{
    float *uu = (float *)h->buf[B_UU].p, *vv = (float *)h->buf[B_VV].p;
    float *ww = (float *)h->buf[B_WW].p, *wt = (float *)h->buf[B_WT].p;
    float2 *vis = (float2 *)h->buf[B_VIS].p;
    int4 *geo = (int4 *)h->buf[B_GEO].p;
    float2 *val = (float2 *)h->buf[B_VAL].p;
    gr_acc *acc = accumulate ? (gr_acc *)h->buf[B_ACC].p : NULL;
    unsigned long long *hist =
        accumulate && h->tile_factor > 0 && h->tile_factor < 1
            ? (unsigned long long *)h->buf[B_HIST].p
            : NULL;
    for (int c0 = 0; c0 < cnt; c0 += GR_CHUNK) {
        const int c = cnt - c0 < GR_CHUNK ? cnt - c0 : GR_CHUNK;
        const size_t i0 = first + (size_t)c0;
        /* Through the context's pinned ring (pageable arrays: the driver's own staging runs
         * at a fraction of the link), blocking: the chunk is on the device when these return,
         * while the device still locates the chunk before (queued on s_comp).  The caller
         * has s_comp idle before a batch's first chunk (gr_run), so no kernel still reads
         * the records these overwrite. */
        struct {
            void *dev;
            const void *host;
            size_t bytes;
            const char *name;
        } col[5] = {{uu + c0, d->uu + i0, (size_t)c * 4, "grid uu"},
                    {vv + c0, d->vv + i0, (size_t)c * 4, "grid vv"},
                    {ww + c0, d->ww + i0, (size_t)c * 4, "grid ww"},
                    {vis + c0, d->vis + 2 * i0, (size_t)c * 8, "grid vis"},
                    {wt + c0, d->weight + i0, (size_t)c * 4, "grid weight"}};
        for (int a = 0; a < 5; ++a) {
            double t = 0;
            PK_TRY(pk_cuda_transfer(&h->xf, col[a].dev, col[a].host, col[a].bytes, 1, col[a].name,
                                    &t));
            h->stage_s[ST_TRANSFER] += t;
        }
        int k;
        PK_TRY(ev_begin(h, ST_LOCATE, h->s_comp, &k));
        GR_CUDA(gr_launch(gr_locate_kernel, dim3((unsigned)((c + GR_LOCATE_THREADS - 1) /
                                                             GR_LOCATE_THREADS)),
                          dim3(GR_LOCATE_THREADS), h->s_comp, h->q, (const int *)h->d_support,
                          (const double *)h->d_table, (const unsigned *)h->d_roff,
                          (const float2 *)h->d_kern, (const float *)(uu + c0),
                          (const float *)(vv + c0), (const float *)(ww + c0),
                          (const float2 *)(vis + c0), (const float *)(wt + c0), c, geo + c0,
                          val + c0, acc, hist, h->hist_len),
                "gr_locate_kernel (%d visibilities)", c);
        PK_TRY(ev_end(h, k, h->s_comp));
    }
    return PK_OK;
}

static int region_is_zero(const float *grid, int g, const gr_box *b, int v0, int v1)
{
    const size_t cols = 2 * (size_t)(b->u1 - b->u0 + 1);
    for (int v = v0; v <= v1; ++v) {
        const float *row = grid + 2 * ((size_t)v * g + (size_t)b->u0);
        for (size_t c = 0; c < cols; ++c)
            if (row[c] != 0.0f) return 0;
    }
    return 1;
}

/* The band's cells on the device, on the copy stream: cleared if the caller's are all zero
 * (scanned on the host while the device sorts), else uploaded.  The compute stream waits
 * for them before its first kernel that writes the sub-grid. */
static pk_status gr_prepare_band(gr_plan *h, const gr_band *b, const gr_box *box,
                                 const float *grid)
{
    const int g = h->p.grid_size, pitch = box->u1 - box->u0 + 1, rows = b->v1 - b->v0 + 1;
    float2 *sub = (float2 *)h->buf[B_SUB].p;
    if (h->dev_grid) return PK_OK; /* the kernels add into the device grid itself */
    if (region_is_zero(grid, g, box, b->v0, b->v1)) {
        int slot;
        PK_TRY(ev_begin(h, ST_TRANSFER, h->s_copy, &slot));
        GR_CUDA(cudaMemsetAsync(sub, 0, (size_t)rows * pitch * 8, h->s_copy),
                "cudaMemsetAsync(grid sub-grid)");
        PK_TRY(ev_end(h, slot, h->s_copy));
    } else {
        /* the box's rows gathered through the ring (blocking, while the device sorts) */
        char what[64];
        snprintf(what, sizeof what, "grid rows %d..%d to device", b->v0, b->v1);
        double t = 0;
        PK_TRY(pk_cuda_transfer_2d(&h->xf, sub, grid + 2 * ((size_t)b->v0 * g + (size_t)box->u0),
                                   (size_t)g * 8, (size_t)pitch * 8, (size_t)rows, 1, what, &t));
        h->stage_s[ST_TRANSFER] += t;
    }
    GR_CUDA(cudaEventRecord(h->ev[GR_EV_GRID], h->s_copy), "cudaEventRecord(grid ready)");
    GR_CUDA(cudaStreamWaitEvent(h->s_comp, h->ev[GR_EV_GRID], 0), "cudaStreamWaitEvent(grid)");
    return PK_OK;
}

/* Grid visibilities [0, cnt) of the resident batch into the band (first: the band's first
 * batch, which brings the caller's cells up once the sort is queued). */
static pk_status gr_band_batch(gr_plan *h, const gr_band *b, const gr_box *box, int cnt,
                               const float *grid, int first)
{
    /* the sub-grid: the box's band (pitch its width), or the band's cells of the device
     * grid (pitch g) */
    const int cols = box->u1 - box->u0 + 1, sub_rows = b->v1 - b->v0 + 1;
    const int pitch = h->dev_grid ? h->p.grid_size : cols;
    const int4 *geo = (const int4 *)h->buf[B_GEO].p;
    const float2 *val = (const float2 *)h->buf[B_VAL].p;
    float2 *sub = h->dev_grid
                      ? h->dev_grid + (size_t)b->v0 * (size_t)h->p.grid_size + (size_t)box->u0
                      : (float2 *)h->buf[B_SUB].p;
    const unsigned blocks_n = (unsigned)((cnt + GR_LOCATE_THREADS - 1) / GR_LOCATE_THREADS);
    int slot;
    if (b->rad_max >= 0) {
        const int ntiles = b->ntc * b->ntr;
        unsigned *count = (unsigned *)h->buf[B_COUNT].p, *start = (unsigned *)h->buf[B_START].p;
        unsigned *bucket = (unsigned *)h->buf[B_BUCKET].p;
        PK_TRY(ev_begin(h, ST_COUNT, h->s_comp, &slot));
        GR_CUDA(cudaMemsetAsync(count, 0, ((size_t)ntiles + 1) * 4, h->s_comp),
                "cudaMemsetAsync(grid tile counts)");
        GR_CUDA(gr_launch(gr_count_kernel, dim3(blocks_n), dim3(GR_LOCATE_THREADS), h->s_comp,
                          h->q, *b, (const int *)h->d_support, geo, cnt, count),
                "gr_count_kernel");
        PK_TRY(ev_end(h, slot, h->s_comp));
        PK_TRY(ev_begin(h, ST_SORT, h->s_comp, &slot));
#ifdef PK_CUDA_EMULATE
        GR_CUDA(pk_emu_exclusive_sum(count, start, ntiles + 1, h->s_comp), "scan");
#else
        size_t tmp = 0;
        GR_CUDA(cub::DeviceScan::ExclusiveSum(NULL, tmp, count, start, ntiles + 1, h->s_comp),
                "cub::DeviceScan::ExclusiveSum (size query)");
        PK_TRY(buf_ensure(h, B_CUB, tmp, "scan workspace"));
        GR_CUDA(cub::DeviceScan::ExclusiveSum(h->buf[B_CUB].p, tmp, count, start, ntiles + 1,
                                              h->s_comp),
                "cub::DeviceScan::ExclusiveSum (%d tiles)", ntiles);
#endif
        /* count becomes the scatter's cursor: a copy of the starts */
        GR_CUDA(cudaMemcpyAsync(count, start, ((size_t)ntiles + 1) * 4, cudaMemcpyDeviceToDevice,
                                h->s_comp),
                "cudaMemcpyAsync(grid tile cursors)");
        GR_CUDA(gr_launch(gr_scatter_kernel, dim3(blocks_n), dim3(GR_LOCATE_THREADS), h->s_comp,
                          h->q, *b, (const int *)h->d_support, geo, cnt, count, bucket),
                "gr_scatter_kernel");
        PK_TRY(ev_end(h, slot, h->s_comp));
        if (first) {
            PK_TRY(gr_prepare_band(h, b, box, grid));
            first = 0;
        }

        /* the central box in band tile coordinates (empty: c0 > c1) */
        int cb_c0 = 1, cb_c1 = 0, cb_r0 = 1, cb_r1 = 0;
        const int W = h->central_radius;
        if (W >= 0) {
            cb_c0 = (h->q.ctu - W > b->tc0 ? h->q.ctu - W : b->tc0) - b->tc0;
            cb_c1 = (h->q.ctu + W < b->tc0 + b->ntc - 1 ? h->q.ctu + W : b->tc0 + b->ntc - 1) - b->tc0;
            cb_r0 = (h->q.ctv - W > b->tr0 ? h->q.ctv - W : b->tr0) - b->tr0;
            cb_r1 = (h->q.ctv + W < b->tr0 + b->ntr - 1 ? h->q.ctv + W : b->tr0 + b->ntr - 1) - b->tr0;
            if (cb_c0 > cb_c1 || cb_r0 > cb_r1) cb_c0 = cb_r0 = 1, cb_c1 = cb_r1 = 0;
        }
        const int ncentral = cb_c0 <= cb_c1 ? (cb_c1 - cb_c0 + 1) * (cb_r1 - cb_r0 + 1) : 0;
        /* central box on the second stream, concurrently with the outer tiles */
        if (ncentral > 0) {
            GR_CUDA(cudaEventRecord(h->ev[GR_EV_FORK], h->s_comp), "cudaEventRecord");
            GR_CUDA(cudaStreamWaitEvent(h->s_aux, h->ev[GR_EV_FORK], 0),
                    "cudaStreamWaitEvent(grid central box)");
        }
        const dim3 block(GR_TW, (unsigned)h->nw);
        for (int central = 0; central < 2; ++central) {
            if (central && ncentral == 0) break;
            const int P = central ? h->central_blocks : h->outer_blocks;
            const long long nblocks = (long long)(central ? ncentral : ntiles) * P;
            PK_CHECK(nblocks <= INT_MAX, PK_EUNSUPPORTED, "grid: %lld blocks of tiles", nblocks);
            cudaStream_t st = central ? h->s_aux : h->s_comp;
            PK_TRY(ev_begin(h, central ? ST_CENTRAL : ST_OUTER, st, &slot));
            cudaError_t e;
#define GR_TILE_ARGS                                                                           \
    h->q, *b, (const int *)h->d_support, (const unsigned *)h->d_roff,                           \
        (const float2 *)h->d_kern, geo, val, (const unsigned *)bucket, (const unsigned *)start, \
        sub, pitch, box->u0, b->v0, sub_rows, cols, P, central, cb_c0, cb_c1, cb_r0, cb_r1
            if (h->nw == 1)
                e = gr_launch(gr_tile_kernel<1>, dim3((unsigned)nblocks), block, st, GR_TILE_ARGS);
            else if (h->nw == 2)
                e = gr_launch(gr_tile_kernel<2>, dim3((unsigned)nblocks), block, st, GR_TILE_ARGS);
            else
                e = gr_launch(gr_tile_kernel<4>, dim3((unsigned)nblocks), block, st, GR_TILE_ARGS);
#undef GR_TILE_ARGS
            GR_CUDA(e, "gr_tile_kernel<%d> (%s, %lld blocks)", h->nw,
                    central ? "central box" : "outer tiles", nblocks);
            PK_TRY(ev_end(h, slot, st));
        }
        if (ncentral > 0) {
            GR_CUDA(cudaEventRecord(h->ev[GR_EV_JOIN], h->s_aux), "cudaEventRecord");
            GR_CUDA(cudaStreamWaitEvent(h->s_comp, h->ev[GR_EV_JOIN], 0),
                    "cudaStreamWaitEvent(grid central box done)");
        }
    }
    if (first) PK_TRY(gr_prepare_band(h, b, box, grid));
    if (h->tile_factor < 1) { /* untiled visibilities: after the tiles (module comment) */
        long long warps_blocks = ((long long)cnt * 32 + GR_ATOMIC_THREADS - 1) / GR_ATOMIC_THREADS;
        const long long cap = 64LL * h->sms;
        if (warps_blocks > cap) warps_blocks = cap;
        if (warps_blocks < 1) warps_blocks = 1;
        PK_TRY(ev_begin(h, ST_ATOMIC, h->s_comp, &slot));
        GR_CUDA(gr_launch(gr_atomic_kernel, dim3((unsigned)warps_blocks), dim3(GR_ATOMIC_THREADS),
                          h->s_comp, h->q, *b, (const int *)h->d_support,
                          (const unsigned *)h->d_roff, (const float2 *)h->d_kern, geo, val, cnt,
                          sub, pitch, box->u0, b->v0, sub_rows),
                "gr_atomic_kernel (%d visibilities)", cnt);
        PK_TRY(ev_end(h, slot, h->s_comp));
    }
    return PK_OK;
}

static pk_status gr_run(gr_plan *h, const pk_grid_data *d, float *grid, pk_gr_result *res)
{
    const size_t n = d->num_vis;
    const int g = h->p.grid_size;
    GR_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    memset(h->stage_s, 0, sizeof h->stage_s);
    h->nev = 0;

    /* allowance */
    size_t avail;
    if (h->test_bytes > 0) {
        avail = (size_t)h->test_bytes;
    } else {
        size_t free_b = 0, total_b = 0;
        GR_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo(device %d)", h->xf.device);
        avail = free_b / 10 * 9;
        for (int i = 0; i < B_N; ++i) avail += h->buf[i].cap;
    }
    const int tiling = h->tile_factor > 0;
    const size_t span_c = (size_t)(2 * h->max_support + GR_TW - 1) / GR_TW + 1;
    const size_t span_r = (size_t)(2 * h->max_support + h->th - 1) / (size_t)h->th + 1;
    const size_t copies = tiling ? span_c * span_r : 0;
    const size_t per_vis = 48 + 4 * copies;
    size_t batch = avail / 2 / per_vis;
    if (copies && batch > (size_t)INT_MAX / copies) batch = (size_t)INT_MAX / copies;
    if (batch > (size_t)INT_MAX) batch = (size_t)INT_MAX;
    if (batch > n) batch = n;
    PK_CHECK(batch >= 1, PK_EDEVMEM, "grid: no room for visibilities on device %d (%zu bytes)",
             h->xf.device, avail);
    const size_t nbatch = (n + batch - 1) / batch;
    PK_TRY(buf_ensure(h, B_UU, batch * 4, "uu"));
    PK_TRY(buf_ensure(h, B_VV, batch * 4, "vv"));
    PK_TRY(buf_ensure(h, B_WW, batch * 4, "ww"));
    PK_TRY(buf_ensure(h, B_VIS, batch * 8, "vis"));
    PK_TRY(buf_ensure(h, B_WT, batch * 4, "weight"));
    PK_TRY(buf_ensure(h, B_GEO, batch * 16, "records"));
    PK_TRY(buf_ensure(h, B_VAL, batch * 8, "values"));
    if (tiling) PK_TRY(buf_ensure(h, B_BUCKET, batch * copies * 4, "tile buckets"));
    PK_TRY(buf_ensure(h, B_ACC, sizeof(gr_acc), "sums"));
    PK_TRY(buf_ensure(h, B_HIST, (size_t)h->hist_len * 8, "work per radius"));

    /* pass 0: records, box, sums (and the work per radius for hybrid) */
    gr_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.u0 = acc.v0 = INT_MAX;
    acc.u1 = acc.v1 = INT_MIN;
    GR_CUDA(cudaMemcpyAsync(h->buf[B_ACC].p, &acc, sizeof acc, cudaMemcpyHostToDevice, h->s_comp),
            "cudaMemcpyAsync(grid sums)");
    GR_CUDA(cudaMemsetAsync(h->buf[B_HIST].p, 0, (size_t)h->hist_len * 8, h->s_comp),
            "cudaMemsetAsync(grid work per radius)");
    for (size_t bt = 0; bt < nbatch; ++bt) {
        const size_t first = bt * batch;
        const int cnt = (int)(n - first < batch ? n - first : batch);
        if (bt > 0) /* the (blocking) copies must not overwrite what the last locate reads */
            GR_CUDA(cudaStreamSynchronize(h->s_comp), "cudaStreamSynchronize(grid batch)");
        PK_TRY(gr_upload_locate(h, d, first, cnt, 1));
    }
    unsigned long long *hist = (unsigned long long *)malloc((size_t)h->hist_len * 8);
    PK_CHECK(hist != NULL, PK_ENOMEM, "grid: out of host memory");
    cudaError_t e = cudaMemcpyAsync(&acc, h->buf[B_ACC].p, sizeof acc, cudaMemcpyDeviceToHost,
                                    h->s_comp);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(hist, h->buf[B_HIST].p, (size_t)h->hist_len * 8,
                            cudaMemcpyDeviceToHost, h->s_comp);
    if (e == cudaSuccess) e = cudaStreamSynchronize(h->s_comp);
    if (e != cudaSuccess) {
        free(hist);
        return pk_cuda_fail(e, "grid: reading the bounding box and sums back from device %d",
                            h->xf.device);
    }
    res->norm = acc.norm;
    res->num_skipped = (int64_t)acc.skipped;
    res->updates = (double)acc.updates;
    /* tiled radius */
    int rad_max = -1;
    if (h->tile_factor >= 1) {
        rad_max = INT_MAX;
    } else if (h->tile_factor > 0) {
        const double want = h->tile_factor * (double)acc.updates;
        double cum = 0;
        rad_max = h->hist_len - 1;
        for (int r = 0; r < h->hist_len; ++r) {
            cum += (double)hist[r];
            if (cum >= want) {
                rad_max = r;
                break;
            }
        }
    }
    free(hist);
    if (acc.u0 > acc.u1) return PK_OK; /* nothing to grid */

    /* bands of whole tile rows, in what the batch leaves */
    const gr_box box = {acc.u0, acc.u1, acc.v0, acc.v1};
    const int pitch = box.u1 - box.u0 + 1, height = box.v1 - box.v0 + 1;
    const size_t used = batch * per_vis;
    const size_t room = avail > used ? (avail - used) / 20 * 19 : 0; /* 5 %: tile arrays, scan */
    const size_t row_bytes = (size_t)pitch * 8 + (size_t)(pitch / GR_TW + 2) * 8 / (size_t)h->th;
    size_t rows = room / row_bytes;
    if (rows >= (size_t)height || h->dev_grid) /* a device grid is one band (no sub-grid) */
        rows = (size_t)height;
    else
        rows = rows / (size_t)h->th * (size_t)h->th; /* bands of whole tile rows */
    PK_CHECK(rows >= 1, PK_EDEVMEM,
             "grid: %d rows of the %d-column bounding box do not fit device %d beside the "
             "visibilities (%zu bytes left)",
             h->th, pitch, h->xf.device, room);
    if (!h->dev_grid) PK_TRY(buf_ensure(h, B_SUB, rows * (size_t)pitch * 8, "sub-grid"));
    const int tc0 = (box.u0 - h->q.u_origin) / GR_TW, tc1 = (box.u1 - h->q.u_origin) / GR_TW;

    for (int v0 = box.v0; v0 <= box.v1;) {
        const int tile_top = h->q.v_origin + (v0 - h->q.v_origin) / h->th * h->th;
        int v1 = rows >= (size_t)height ? box.v1 : tile_top + (int)rows - 1;
        if (v1 > box.v1) v1 = box.v1;
        gr_band b;
        b.tc0 = tc0;
        b.ntc = tc1 - tc0 + 1;
        b.tr0 = (v0 - h->q.v_origin) / h->th;
        b.ntr = (v1 - h->q.v_origin) / h->th - b.tr0 + 1;
        b.v0 = v0;
        b.v1 = v1;
        b.rad_max = rad_max;
        if (rad_max >= 0) {
            const size_t ntiles = (size_t)b.ntc * (size_t)b.ntr;
            PK_CHECK(ntiles < (size_t)INT_MAX, PK_EUNSUPPORTED, "grid: %zu tiles", ntiles);
            PK_TRY(buf_ensure(h, B_COUNT, (ntiles + 1) * 4, "tile counts"));
            PK_TRY(buf_ensure(h, B_START, (ntiles + 1) * 4, "tile starts"));
        }
        const int sub_rows = v1 - v0 + 1;
        for (size_t bt = 0; bt < nbatch; ++bt) {
            const size_t first = bt * batch;
            const int cnt = (int)(n - first < batch ? n - first : batch);
            if (nbatch > 1) PK_TRY(gr_upload_locate(h, d, first, cnt, 0));
            PK_TRY(gr_band_batch(h, &b, &box, cnt, grid, bt == 0));
            /* the next batch's upload overwrites records the kernels may still read */
            if (nbatch > 1)
                GR_CUDA(cudaStreamSynchronize(h->s_comp), "cudaStreamSynchronize(grid batch)");
        }
        /* the kernels done, the band scattered back over the caller's rows through the ring */
        GR_CUDA(cudaStreamSynchronize(h->s_comp), "cudaStreamSynchronize(grid band)");
        GR_CUDA(cudaStreamSynchronize(h->s_aux), "cudaStreamSynchronize(grid band)");
        res->grid_touched = 1;
        if (h->dev_grid) { /* the cells are in place */
            v0 = v1 + 1;
            continue;
        }
        float2 *sub = (float2 *)h->buf[B_SUB].p;
        char what[64];
        snprintf(what, sizeof what, "grid rows %d..%d from device", v0, v1);
        double t = 0;
        PK_TRY(pk_cuda_transfer_2d(&h->xf, sub, grid + 2 * ((size_t)v0 * g + (size_t)box.u0),
                                   (size_t)g * 8, (size_t)pitch * 8, (size_t)sub_rows, 0, what,
                                   &t));
        h->stage_s[ST_TRANSFER] += t;
        v0 = v1 + 1;
    }
    return PK_OK;
}

extern "C" pk_status pk_cuda_gr_run(void *impl, const pk_grid_data *data, float *grid,
                                    pk_gr_result *res)
{
    gr_plan *h = (gr_plan *)impl;
    if (data->num_vis == 0) return PK_OK;
    pk_status s = gr_run(h, data, grid, res);
    if (s != PK_OK) {
        /* leave the device idle for the next call; keep the first error */
        cudaStreamSynchronize(h->s_comp);
        cudaStreamSynchronize(h->s_aux);
        cudaStreamSynchronize(h->s_copy);
        (void)cudaGetLastError();
        return s;
    }
    PK_TRY(ev_harvest(h));
    for (int st = 0; st < ST_N; ++st) {
        if (st == ST_TRANSFER)
            res->transfer_s += h->stage_s[st];
        else
            res->kernel_s += h->stage_s[st];
        pk_gr_stage(res, gr_stage_names[st], h->stage_s[st]);
    }
    return PK_OK;
}

/* The same run adding into the g x g complex64 device grid dev_grid (cuda/image.cu: the grid
 * stays where its FFT runs): the kernels write its cells in place, nothing of it crosses the
 * link; the stage "transfer" is the visibilities' upload alone.  The caller has dev_grid ready
 * (zeroed or holding an earlier run's sum) before the call; the run returns once every kernel
 * writing it is done (its streams synchronised). */
extern "C" pk_status pk_cuda_gr_run_device(void *impl, const pk_grid_data *data, void *dev_grid,
                                           pk_gr_result *res)
{
    gr_plan *h = (gr_plan *)impl;
    h->dev_grid = (float2 *)dev_grid;
    const pk_status s = pk_cuda_gr_run(impl, data, NULL, res);
    h->dev_grid = NULL;
    return s;
}

/* The grid kernel family on this backend (lib/internal.h, pk_gr_ops). */
extern "C" const pk_gr_ops pk_cuda_gr_ops = {"cuda-tiled,cuda-atomic,hybrid", pk_cuda_gr_create, pk_cuda_gr_run, pk_cuda_gr_destroy};
