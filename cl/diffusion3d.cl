/* diffusion3d.cl - one step of the 7-point diffusion stencil (docs/KERNELS.md section 3):
 *   g[c] = cc*f[c] + cw*f[w] + ce*f[e] + cs*f[s] + cn*f[n] + cb*f[b] + ct*f[t]
 * with a missing neighbour at a face replaced by c itself.  Terms are added in that order
 * and never contracted into FMAs, so a step matches the serial reference bit for bit on
 * IEEE devices.  Build options from the host: PK_IDX (int, or long for fields of 2^31
 * points and more), the index type; PK_XVEC_ZB, the planes per work-item of pk_d3_xvec.
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

/* For CPUs: each work-item updates 16 consecutive points of a row with explicit float16
 * arithmetic (one AVX-512 register) through a slab of zb planes, keeping below/centre/above
 * in registers.  A work-group is a band of get_local_size(1) rows; dimension 2 enumerates
 * (band, slab) with the slab fastest, so consecutive work-groups walk down z inside one
 * band and find its planes in cache.  Measured through PoCL (2 cores, AVX-512): explicit
 * float16 ~30% faster than one point per work-item left to PoCL's vectoriser, zb = 4 ~10%
 * faster than zb = 1 or 8, band order ~20% faster at 512^3.  Rows whose length is not a
 * multiple of 16 end in a scalar tail. */
__kernel void pk_d3_xvec(__global const float *restrict f, __global float *restrict g,
                         int nx, int ny, int nz, float cc, float cw, float ce, float cs,
                         float cn, float cb, float ct)
{
    const int zb = PK_XVEC_ZB; /* a constant unrolls the plane loop: ~5% */
    int nslabs = (nz + zb - 1) / zb, k = get_group_id(2);
    int band = k / nslabs, slab = k - band * nslabs;
    int x = (int)get_global_id(0) * 16;
    int y = band * (int)get_local_size(1) + (int)get_local_id(1);
    if (x >= nx || y >= ny) return;
    int z0 = slab * zb, z1 = min(z0 + zb, nz);
    pk_idx plane = (pk_idx)nx * ny;
    pk_idx c = x + (pk_idx)nx * y + plane * z0;
    pk_idx dn = y > 0 ? nx : 0, ds = y < ny - 1 ? nx : 0;
    if (x + 16 <= nx) {
        float16 vc = vload16(0, f + c);
        float16 vb = z0 > 0 ? vload16(0, f + c - plane) : vc;
        for (int z = z0; z < z1; ++z) {
            float16 vt = z < nz - 1 ? vload16(0, f + c + plane) : vc;
            /* At a face the shifted load would leave the row: shift c itself instead. */
            float16 vw = x > 0 ? vload16(0, f + c - 1)
                               : (float16)(vc.s0, vc.s0123, vc.s456789ab, vc.scde);
            float16 ve = x + 16 < nx ? vload16(0, f + c + 1)
                                     : (float16)(vc.s123, vc.s4567, vc.s89ab, vc.scdef, vc.sf);
            float16 r = cc * vc + cw * vw + ce * ve + cs * vload16(0, f + c + ds) +
                        cn * vload16(0, f + c - dn) + cb * vb + ct * vt;
            vstore16(r, 0, g + c);
            vb = vc;
            vc = vt;
            c += plane;
        }
        return;
    }
    for (int z = z0; z < z1; ++z, c += plane) {
        pk_idx db = z > 0 ? plane : 0, dt = z < nz - 1 ? plane : 0;
        for (int i = 0; x + i < nx; ++i) {
            pk_idx p = c + i;
            float vc = f[p];
            float vw = x + i > 0 ? f[p - 1] : vc;
            float ve = x + i < nx - 1 ? f[p + 1] : vc;
            g[p] = cc * vc + cw * vw + ce * ve + cs * f[p + ds] + cn * f[p - dn] +
                   cb * f[p - db] + ct * f[p + dt];
        }
    }
}

/* 2.5-D blocking, for GPUs: each work-item owns an (x, y) column and marches through zb
 * planes from z0 = zb * get_global_id(2), keeping below/centre/above in registers, so each
 * plane is read from memory once per step; the four in-plane neighbours come from caches. */
__kernel void pk_d3_zmarch(__global const float *restrict f, __global float *restrict g,
                           int nx, int ny, int nz, int zb, float cc, float cw, float ce,
                           float cs, float cn, float cb, float ct)
{
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= nx || y >= ny) return;
    int z0 = (int)get_global_id(2) * zb, z1 = min(z0 + zb, nz);
    pk_idx plane = (pk_idx)nx * ny;
    pk_idx c = x + (pk_idx)nx * y + plane * z0;
    pk_idx dw = x > 0 ? 1 : 0, de = x < nx - 1 ? 1 : 0;
    pk_idx dn = y > 0 ? nx : 0, ds = y < ny - 1 ? nx : 0;
    float vc = f[c];
    float vb = z0 > 0 ? f[c - plane] : vc;
    for (int z = z0; z < z1; ++z) {
        float vt = z < nz - 1 ? f[c + plane] : vc;
        g[c] = cc * vc + cw * f[c - dw] + ce * f[c + de] + cs * f[c + ds] + cn * f[c - dn] +
               cb * vb + ct * vt;
        vb = vc;
        vc = vt;
        c += plane;
    }
}
