/* laplace2d.cl - one iteration of the 2-D smoothing Laplacian (docs/KERNELS.md section 4a) on a
 * periodic l x l field in the lexi or hvfo layout (pho[y][x'][w] = phi[y][w*(l/nw) + x']):
 *     g = (c + a ((e + w) + (n + s))) inv
 * evaluated in that order and never contracted into FMAs, so an iteration matches the serial
 * reference bit for bit on IEEE devices.  Build options from the host: PK_IDX (int, or long for
 * fields of 2^31 sites and more); LP_VN (2, 4, 8, 16) for the hvfo vector kernel.
 *
 * Two ways to map the lanes (cl/laplace2d_opencl.c picks one per device):
 *  - item (GPUs, and any lane count): lanes as work-items.  Work-item (i, y) owns the site at
 *    row offset i = x' nw + w, so consecutive work-items touch consecutive floats (coalesced
 *    loads and stores in both layouts) and a boundary column only changes the index of one
 *    neighbour.  lexi is the case nw = 1.
 *  - vec (CPUs): lanes as a vector type.  hvfo: a work-item owns column x' of a row, one
 *    floatLP_VN, its x neighbours are the whole vectors of columns x' - 1 and x' + 1 and the
 *    two boundary columns rotate lanes with one shuffle: exactly the SIMD code of the host's
 *    omp-simd, written once for every vector width.  lexi: 16 consecutive x per work-item,
 *    x +- 1 as unaligned vload16, the chunks at a row's ends scalar (they wrap).
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

/* Works on float and floatN alike; each operation rounds on its own (FP_CONTRACT OFF). */
#define LP_SITE(c, e, w, n, s) (((c) + a * (((e) + (w)) + ((n) + (s)))) * inv)

/* Offsets of the rows north (y - 1) and south (y + 1) of row y, periodic. */
#define LP_ROWS(y, l, row, rn, rs)                                                           \
    pk_idx row = (pk_idx)(y) * (l);                                                          \
    pk_idx rn = (pk_idx)((y) == 0 ? (l) - 1 : (y) - 1) * (l);                                \
    pk_idx rs = (pk_idx)((y) == (l) - 1 ? 0 : (y) + 1) * (l)

__kernel void pk_lp_item(__global const float *restrict f, __global float *restrict g, int l,
                         int nw, float a, float inv)
{
    int i = get_global_id(0), y = get_global_id(1);
    if (i >= l || y >= l) return;
    int m = l / nw, xp = i / nw, w = i - xp * nw;
    /* east of column m-1 is column 0 one lane up; west of column 0 is column m-1 one lane down */
    int ie = xp < m - 1 ? i + nw : (w + 1 == nw ? 0 : w + 1);
    int iw = xp > 0 ? i - nw : (m - 1) * nw + (w == 0 ? nw - 1 : w - 1);
    LP_ROWS(y, l, row, rn, rs);
    g[row + i] = LP_SITE(f[row + i], f[row + ie], f[row + iw], f[rn + i], f[rs + i]);
}

__kernel void pk_lp_lexi_vec(__global const float *restrict f, __global float *restrict g,
                             int l, float a, float inv)
{
    int x0 = (int)get_global_id(0) * 16, y = get_global_id(1);
    if (x0 >= l || y >= l) return;
    LP_ROWS(y, l, row, rn, rs);
    if (x0 > 0 && x0 + 16 < l) {
        __global const float *c = f + row + x0;
        float16 r = LP_SITE(vload16(0, c), vload16(0, c + 1), vload16(0, c - 1),
                            vload16(0, f + rn + x0), vload16(0, f + rs + x0));
        vstore16(r, 0, g + row + x0);
        return;
    }
    int x1 = min(x0 + 16, l);
    for (int x = x0; x < x1; ++x) {
        int xe = x + 1 == l ? 0 : x + 1, xw = x == 0 ? l - 1 : x - 1;
        g[row + x] = LP_SITE(f[row + x], f[row + xe], f[row + xw], f[rn + x], f[rs + x]);
    }
}

#ifdef LP_VN
#define LP_CAT_(a, b) a##b
#define LP_CAT(a, b) LP_CAT_(a, b)
typedef LP_CAT(float, LP_VN) lp_vec;
typedef LP_CAT(uint, LP_VN) lp_mask;
#define LP_LOAD LP_CAT(vload, LP_VN)
#define LP_STORE LP_CAT(vstore, LP_VN)
/* DOWN: lane w <- lane w-1 (west of column 0); UP: lane w <- lane w+1 (east of column m-1). */
#if LP_VN == 16
#define LP_DOWN (lp_mask)(15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
#define LP_UP (lp_mask)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0)
#elif LP_VN == 8
#define LP_DOWN (lp_mask)(7, 0, 1, 2, 3, 4, 5, 6)
#define LP_UP (lp_mask)(1, 2, 3, 4, 5, 6, 7, 0)
#elif LP_VN == 4
#define LP_DOWN (lp_mask)(3, 0, 1, 2)
#define LP_UP (lp_mask)(1, 2, 3, 0)
#elif LP_VN == 2
#define LP_DOWN (lp_mask)(1, 0)
#define LP_UP (lp_mask)(1, 0)
#else
#error "LP_VN must be 2, 4, 8 or 16"
#endif

__kernel void pk_lp_hvfo_vec(__global const float *restrict f, __global float *restrict g,
                             int l, float a, float inv)
{
    int xp = get_global_id(0), y = get_global_id(1), m = l / LP_VN;
    if (xp >= m || y >= l) return;
    LP_ROWS(y, l, row, rn, rs);
    __global const float *c = f + row;
    lp_vec e = xp < m - 1 ? LP_LOAD(xp + 1, c) : shuffle(LP_LOAD(0, c), LP_UP);
    lp_vec w = xp > 0 ? LP_LOAD(xp - 1, c) : shuffle(LP_LOAD(m - 1, c), LP_DOWN);
    lp_vec r = LP_SITE(LP_LOAD(xp, c), e, w, LP_LOAD(xp, f + rn), LP_LOAD(xp, f + rs));
    LP_STORE(r, xp, g + row);
}
#endif
