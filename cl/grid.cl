/* grid.cl - w-projection convolution gridding (docs/KERNELS.md section 1) on OpenCL devices.
 *
 * The host (cl/grid_opencl.c) keeps on the device only the bounding box of the cells the
 * visibilities touch, or a band of its rows ("sub-grid": sub_rows x pitch complex64, cell
 * (v, u) of the grid at [(v - sub_v0) * pitch + u - sub_u0]), preloaded with the caller's
 * values; every kernel adds into it.
 *
 * Kernel samples are read from the row-reordered stack built at plan creation: per plane w
 * (support s, D = 2s + 1, m = os/2 + s os + 1) and compact row iy < m, os/2 + 1 sub-rows
 * a = |off_u|, each holding the D samples a footprint row reads, in k order:
 *     R[roff[w] + (iy (os/2 + 1) + a) D + t] = K[w][iy][|-a + (t - s) os|],  t < D.
 * For off_u <= 0 sample k in [-s, s] is t = s + k; for off_u > 0, |off_u + k os| =
 * |-off_u - k os|, so t = s - k: the same row read backwards.  Either way neighbouring
 * work-items read neighbouring samples (the NAG report's coalesced layout, section 3.5),
 * and the stack is only (os/2 + 1) D / m ~ 1.5 times the compact one.
 *
 * Kernels
 *  - pk_gr_bbox: one work-item per visibility (grid-stride loop): the geometry of
 *    pk_gr_locate, the bounding box of the footprints and the skipped count, reduced per
 *    work-group (partials summed on the host).
 *  - pk_gr_atomic ("opencl-atomic"): one work-group per visibility (a grid-stride loop over
 *    visibilities per group), its (2s+1)^2 footprint spread over the work-items, each cell
 *    added with a float atomic add emulated by atomic_cmpxchg on the bit pattern (OpenCL 1.2
 *    has no float atomics).  The norm is summed per work-item over its cells, in double
 *    where the device has cl_khr_fp64, else as a double-float pair (the exact product by
 *    fma and a 2Sum per cell: about 44 significant bits, far inside the 1e-9 the tests ask),
 *    then reduced per work-group.
 *  - pk_gr_tile ("opencl-tiled"): one work-group per entry of a work list (a tile, or a slice
 *    of a heavy tile's visibility list), built and ordered by the host (largest work first).
 *    The tile (ts x ts cells) accumulates in local memory; work-item l owns the columns
 *    l, l + L, ... of it, so work-items never write the same cell and need no barrier
 *    between visibilities.  At the end the tile is added into the sub-grid: plainly when
 *    the work-group owns the whole tile, with the atomic add when a heavy tile was split
 *    over several work-groups.
 *
 * The geometry must equal the reference's float arithmetic bit for bit (which cell, which
 * kernel sample): no contraction into FMAs, C round() (OpenCL round() also rounds halves
 * away from zero), and a correctly rounded sqrt: through double where the device has it
 * (sqrt of a float in double rounded to float is the correctly rounded float sqrt), else
 * the host builds with -cl-fp32-correctly-rounded-divide-sqrt when the device supports it.
 *
 * Build options: PK_GR_FP64 (the device has doubles).
 */
#ifdef PK_GR_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double pk_norm_t;
#else
typedef float2 pk_norm_t; /* (hi, lo) */
#endif
#pragma OPENCL FP_CONTRACT OFF

/* grid[p] += v, atomically: compare-and-swap on the bits until no other work-item got in
 * between.  The loop compares bit patterns, so a NaN cell cannot make it spin. */
inline void pk_gr_atomic_add(volatile __global float *p, float v)
{
    union {
        unsigned int u;
        float f;
    } old, upd;
    old.f = *p;
    for (;;) {
        upd.f = old.f + v;
        const unsigned int seen = atomic_cmpxchg((volatile __global unsigned int *)p, old.u, upd.u);
        if (seen == old.u) break;
        old.u = seen;
    }
}

inline float pk_gr_sqrt(float x)
{
#ifdef PK_GR_FP64
    return (float)sqrt((double)x);
#else
    return sqrt(x);
#endif
}

/* pk_gr_locate of lib/ref/grid_ref.c: 0 and the geometry, or 1 when the visibility is
 * skipped (non-finite input, position beyond the grid, footprint leaving the grid). */
inline int pk_gr_locate(float uu, float vv, float ww, float2 vis, float wt, int g, int os,
                        float grid_scale, float w_scale, int num_planes,
                        __global const int *support, int *w, int *s, int *gu, int *gv, int *ou,
                        int *ov)
{
    if (!isfinite(uu) || !isfinite(vv) || !isfinite(ww) || !isfinite(vis.x) ||
        !isfinite(vis.y) || !isfinite(wt))
        return 1;
    const float pos_u = -uu * grid_scale, pos_v = vv * grid_scale;
    const float ru = round(pos_u), rv = round(pos_v);
    if (!(fabs(ru) <= (float)g) || !(fabs(rv) <= (float)g)) return 1;
    const float wf = round(pk_gr_sqrt(fabs(ww * w_scale)));
    const int wi = wf < (float)(num_planes - 1) ? (int)wf : num_planes - 1;
    const int si = support[wi];
    const int u = (int)ru + g / 2, v = (int)rv + g / 2;
    if (u - si < 0 || u + si >= g || v - si < 0 || v + si >= g) return 1;
    *w = wi;
    *s = si;
    *gu = u;
    *gv = v;
    *ou = (int)round((ru - pos_u) * (float)os);
    *ov = (int)round((rv - pos_v) * (float)os);
    return 0;
}

/* ---- bounding box ------------------------------------------------------------------------ */
/* bbox_out[group] = (u_min, u_max, v_min, v_max) of the footprints (empty: min > max),
 * count_out[group] = (skipped visibilities, grid-point updates).  Work-groups of a power of two items. */
__kernel void pk_gr_bbox(__global const float *uu, __global const float *vv,
                         __global const float *ww, __global const float2 *vis,
                         __global const float *weight, int n, int g, int os, float grid_scale,
                         float w_scale, int num_planes, __global const int *support,
                         __global int4 *bbox_out, __global ulong2 *count_out,
                         __local int4 *box, __local ulong2 *counts)
{
    const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
    int4 b = (int4)(INT_MAX, INT_MIN, INT_MAX, INT_MIN);
    ulong2 cnt = (ulong2)(0, 0); /* (skipped, grid-point updates) */
    for (size_t i = get_global_id(0); i < (size_t)n; i += get_global_size(0)) {
        int w, s, gu, gv, ou, ov;
        if (pk_gr_locate(uu[i], vv[i], ww[i], vis[i], weight[i], g, os, grid_scale, w_scale,
                         num_planes, support, &w, &s, &gu, &gv, &ou, &ov)) {
            ++cnt.x;
            continue;
        }
        cnt.y += (ulong)(2 * s + 1) * (ulong)(2 * s + 1);
        b.x = min(b.x, gu - s);
        b.y = max(b.y, gu + s);
        b.z = min(b.z, gv - s);
        b.w = max(b.w, gv + s);
    }
    box[lid] = b;
    counts[lid] = cnt;
    for (int step = L / 2; step > 0; step /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < step) {
            const int4 o = box[lid + step];
            int4 m = box[lid];
            m.x = min(m.x, o.x);
            m.y = max(m.y, o.y);
            m.z = min(m.z, o.z);
            m.w = max(m.w, o.w);
            box[lid] = m;
            counts[lid] += counts[lid + step];
        }
    }
    if (lid == 0) {
        bbox_out[get_group_id(0)] = box[0];
        count_out[get_group_id(0)] = counts[0];
    }
}

/* ---- norm accumulation ------------------------------------------------------------------- */
inline pk_norm_t pk_gr_norm_zero(void)
{
#ifdef PK_GR_FP64
    return 0.0;
#else
    return (float2)(0.0f, 0.0f);
#endif
}

/* acc + a (double-float pairs: Knuth's 2Sum on the high parts, low parts added). */
inline pk_norm_t pk_gr_norm_add(pk_norm_t acc, pk_norm_t a)
{
#ifdef PK_GR_FP64
    return acc + a;
#else
    const float s = acc.x + a.x, bb = s - acc.x;
    const float err = (acc.x - (s - bb)) + (a.x - bb);
    const float lo = err + acc.y + a.y;
    const float hi = s + lo;
    return (float2)(hi, lo - (hi - s));
#endif
}

/* c * wt as a norm term: exact in double; else (p, fma(c, wt, -p)), the exact product. */
inline pk_norm_t pk_gr_norm_term(float c, float wt)
{
#ifdef PK_GR_FP64
    return (double)c * (double)wt;
#else
    const float p = c * wt;
    return (float2)(p, fma(c, wt, -p));
#endif
}

/* ---- opencl-atomic ------------------------------------------------------------------------ */
/* Visibilities [0, n) of the batch; footprint rows outside the band [sub_v0, sub_v0 +
 * sub_rows) are not written.  With do_norm the norm of every gridded visibility (whole
 * footprint, band or not) is summed into norm_out[group]. */
__kernel void pk_gr_atomic(__global const float *uu, __global const float *vv,
                           __global const float *ww, __global const float2 *vis,
                           __global const float *weight, int n, int g, int os,
                           float grid_scale, float w_scale, int num_planes,
                           __global const int *support, __global const uint *roff,
                           __global const float2 *kern, __global float *grid, int pitch,
                           int sub_u0, int sub_v0, int sub_rows, int do_norm,
                           __global pk_norm_t *norm_out, __local pk_norm_t *partial)
{
    const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
    pk_norm_t norm = pk_gr_norm_zero();
    for (size_t i = get_group_id(0); i < (size_t)n; i += get_num_groups(0)) {
        int w, s, gu, gv, ou, ov;
        const float2 vi = vis[i];
        const float wt = weight[i], wwi = ww[i];
        /* every work-item of the group locates the same visibility: a uniform branch */
        if (pk_gr_locate(uu[i], vv[i], wwi, vi, wt, g, os, grid_scale, w_scale, num_planes,
                         support, &w, &s, &gu, &gv, &ou, &ov))
            continue;
        const int D = 2 * s + 1;
        /* footprint rows j in [j_lo, j_hi) lie in the band */
        const int j_lo = max(0, sub_v0 - (gv - s));
        const int j_hi = min(D, sub_v0 + sub_rows - (gv - s));
        const int r0 = do_norm ? 0 : j_lo, r1 = do_norm ? D : j_hi;
        if (r0 >= r1) continue;
        const float conj = wwi > 0.0f ? -1.0f : 1.0f;
        const float vre = vi.x * wt, vim = vi.y * wt;
        const int a = abs(ou), rs = (os / 2 + 1) * D;
        __global const float2 *plane = kern + roff[w] + a * D;
        const int count = (r1 - r0) * D;
        for (int idx = lid; idx < count; idx += L) {
            const int j = r0 + idx / D, k = idx - (j - r0) * D; /* footprint row, column */
            const int iy = abs(ov + (j - s) * os);
            const int t = ou <= 0 ? k : D - 1 - k;
            const float2 c = plane[(size_t)iy * rs + t];
            const float cre = c.x, cim = c.y * conj;
            if (do_norm) norm = pk_gr_norm_add(norm, pk_gr_norm_term(cre, wt));
            if (j >= j_lo && j < j_hi) {
                __global float *cell =
                    grid + 2 * ((size_t)(gv - s + j - sub_v0) * pitch + (gu - s + k - sub_u0));
                pk_gr_atomic_add(cell, vre * cre - vim * cim);
                pk_gr_atomic_add(cell + 1, vim * cre + vre * cim);
            }
        }
    }
    partial[lid] = norm;
    for (int step = L / 2; step > 0; step /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < step) partial[lid] = pk_gr_norm_add(partial[lid], partial[lid + step]);
    }
    if (lid == 0) norm_out[get_group_id(0)] = partial[0];
}

/* ---- opencl-tiled -------------------------------------------------------------------------- */
/* Located visibilities: geo = (grid_u, grid_v, w * 2 + (ww > 0), (off_u + os/2) |
 * (off_v + os/2) << 16), val = vis * weight.  work[2 g] = (tile u0, tile v0, -, -),
 * work[2 g + 1] = (first, end of the group's slice of bucket[], split, -): bucket[] lists the
 * visibilities whose footprint meets the tile. */
__kernel void pk_gr_tile(__global const int4 *geo, __global const float2 *val,
                         __global const uint *bucket, __global const int4 *work,
                         __global const int *support, __global const uint *roff,
                         __global const float2 *kern, int os, int ts, __global float *grid,
                         int pitch, int sub_u0, int sub_v0, int sub_rows, int sub_cols,
                         __local float2 *acc)
{
    const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
    const int4 tile = work[2 * get_group_id(0)];
    const int4 slice = work[2 * get_group_id(0) + 1];
    const int tu0 = tile.x, tv0 = tile.y, half_os = os / 2;
    for (int idx = lid; idx < ts * ts; idx += L) acc[idx] = (float2)(0.0f, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int b = slice.x; b < slice.y; ++b) {
        const uint i = bucket[b];
        const int4 gi = geo[i];
        const float2 v = val[i];
        const int w = gi.z >> 1, s = support[w], D = 2 * s + 1;
        const float conj = (gi.z & 1) ? -1.0f : 1.0f;
        const int ou = (gi.w & 0xffff) - half_os, ov = (gi.w >> 16) - half_os;
        const int row_lo = max(gi.y - s, tv0), row_hi = min(gi.y + s, tv0 + ts - 1);
        const int a = abs(ou), rs = (half_os + 1) * D;
        __global const float2 *plane = kern + roff[w] + a * D;
        for (int col = lid; col < ts; col += L) {
            const int k = tu0 + col - gi.x;
            if (k < -s || k > s) continue;
            const int t = ou <= 0 ? s + k : s - k;
            for (int row = row_lo; row <= row_hi; ++row) {
                const int iy = abs(ov + (row - gi.y) * os);
                const float2 c = plane[(size_t)iy * rs + t];
                const float cre = c.x, cim = c.y * conj;
                __local float2 *cell = acc + (row - tv0) * ts + col;
                cell->x += v.x * cre - v.y * cim;
                cell->y += v.y * cre + v.x * cim;
            }
        }
    }

    barrier(CLK_LOCAL_MEM_FENCE);
    /* consecutive work-items add consecutive cells of a tile row */
    for (int idx = lid; idx < ts * ts; idx += L) {
        const int r = tv0 + idx / ts - sub_v0, c = tu0 + idx % ts - sub_u0;
        if (r < 0 || r >= sub_rows || c < 0 || c >= sub_cols) continue;
        const float2 x = acc[idx];
        if (x.x == 0.0f && x.y == 0.0f) continue; /* cells no footprint of the slice reached */
        __global float *cell = grid + 2 * ((size_t)r * pitch + c);
        if (slice.z) {
            pk_gr_atomic_add(cell, x.x);
            pk_gr_atomic_add(cell + 1, x.y);
        } else {
            cell[0] += x.x;
            cell[1] += x.y;
        }
    }
}
