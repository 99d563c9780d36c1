/* degrid.cl - degridding (docs/KERNELS.md 7.3) on OpenCL devices: "opencl", one work-item per
 * visibility, a gather (each work-item writes only its visibility: no atomics).
 *
 * The host (cl/degrid_opencl.c) locates every visibility with the gridder's float geometry
 * (pk_gr_locate_inline, the reference's by construction) and uploads one int4 record each:
 * (gu - box_u0, gv - box_v0, plane, offsets and conjugation packed: (ou + os/2) | (ov +
 * os/2) << 15 | conj << 30), or plane -1 for a skipped visibility (its vis is 0), in the
 * tile order (pk_dg_tile_order: neighbouring work-items read neighbouring cells), with the
 * visibility's index in idx.  Only the bounding box of the footprints lives on the device:
 * pitch complex64 per row.
 *
 * Each work-item sums conj(c_jk) grid[gv + j][gu + k] over its footprint in the reference's
 * order (j outer, k inner), in float, without contraction into FMAs: the same operations
 * as lib/ref/degrid_ref.c, so the result equals the serial variant's up to how the host
 * compiler contracted the reference's products. */
#pragma OPENCL FP_CONTRACT OFF

__kernel void pk_dg_gather(__global const int4 *rec, __global const uint *idx,
                           __global const float2 *box, int pitch, __global const float2 *kern,
                           __global const ulong *poff, __global const int *support, int os,
                           __global float2 *vis, int n)
{
    const int t = (int)get_global_id(0);
    if (t >= n) return;
    const int4 r = rec[t];
    const uint i = idx[t];
    if (r.z < 0) {
        vis[i] = (float2)(0.0f, 0.0f);
        return;
    }
    const int s = support[r.z], m = os / 2 + s * os + 1;
    const int ou = (r.w & 0x7fff) - os / 2, ov = ((r.w >> 15) & 0x7fff) - os / 2;
    const float cj = (r.w >> 30) & 1 ? -1.0f : 1.0f;
    __global const float2 *plane = kern + poff[r.z];
    float re = 0.0f, im = 0.0f;
    for (int j = -s; j <= s; ++j) {
        __global const float2 *krow = plane + (size_t)abs(ov + j * os) * (size_t)m;
        __global const float2 *grow = box + (size_t)(r.y + j) * (size_t)pitch + r.x;
        for (int k = -s; k <= s; ++k) {
            const float2 c = krow[abs(ou + k * os)];
            const float cre = c.x, cim = c.y * cj;
            const float2 g = grow[k];
            re += cre * g.x + cim * g.y;
            im += cre * g.y - cim * g.x;
        }
    }
    vis[i] = (float2)(re, im);
}
