/* diffusion3d.cl - one step of the 7-point diffusion stencil (KERNELS.md section 3):
 *   g[c] = cc*f[c] + cw*f[w] + ce*f[e] + cs*f[s] + cn*f[n] + cb*f[b] + ct*f[t]
 * with a missing neighbour at a face replaced by c itself.  Terms are added in that order
 * and never contracted into FMAs, so a step matches the serial reference bit for bit on
 * IEEE devices.  PK_IDX (int, or long for fields of 2^31 points and more) is the index type.
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

/* One point per work-item, for CPUs: PoCL turns the work-item loop along x into SIMD code.
 * The y and z offsets are uniform along x, so those loads stay contiguous; the x faces are
 * conditional loads, not clamped indices (which would become gathers). */
__kernel void pk_d3_point(__global const float *restrict f, __global float *restrict g,
                          int nx, int ny, int nz, float cc, float cw, float ce, float cs,
                          float cn, float cb, float ct)
{
    int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    if (x >= nx || y >= ny) return;
    pk_idx plane = (pk_idx)nx * ny;
    pk_idx c = x + (pk_idx)nx * y + plane * z;
    pk_idx dn = y > 0 ? nx : 0, ds = y < ny - 1 ? nx : 0;
    pk_idx db = z > 0 ? plane : 0, dt = z < nz - 1 ? plane : 0;
    float vc = f[c];
    float vw = x > 0 ? f[c - 1] : vc;
    float ve = x < nx - 1 ? f[c + 1] : vc;
    g[c] = cc * vc + cw * vw + ce * ve + cs * f[c + ds] + cn * f[c - dn] + cb * f[c - db] +
           ct * f[c + dt];
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
