/* conv2d.cl - StrayLight periodic 2-D correlation (docs/KERNELS.md section 5):
 *   out[(i + kh/2) % h][(j + kw/2) % w] = sum_{k<kh, l<kw} img[(i+k) % h][(j+l) % w] psf[k][l]
 * i.e. out[y][x] = sum_{k,l} img[(y - kh/2 + k) mod h][(x - kw/2 + l) mod w] psf[k][l].
 *
 * A work-group owns a tile of ty x tx outputs; a work-item owns 8 rows of PK_CV_VW outputs
 * (each PSF value is loaded once for the 8 rows).  The PSF is walked in chunks of at most
 * cbh x cbw taps (the whole PSF when its halo fits in local memory, so one chunk for the
 * usual sizes); per chunk the group copies the wrapped input window of (ty + nk - 1) x
 * (tx + nl - 1) pixels into local memory - the only place where wrapping is handled, with
 * true modulo, so a PSF larger than the image wraps as often as it must - and every
 * work-item then accumulates its outputs from local memory with no index arithmetic beyond
 * a row pitch.  Chunking keeps local memory bounded for any PSF size.
 *
 * Summation order per output is fixed: each PSF row (of a chunk) is summed in float, then
 * added to the output's total; the two levels keep the float rounding error statistically
 * near sqrt(kw) + sqrt(kh) units instead of sqrt(kh * kw) for one running sum.
 *
 * Build options from the host:
 *   PK_CV_VW     outputs per work-item along x, as one vector (1, 4, 8 or 16);
 *   PK_CV_PSF    __constant when the PSF fits CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, else __global;
 *   PK_CV_ROWCOPY  1: each work-item copies whole tile rows (CPUs: contiguous copies),
 *                  0: work-items stride along x (GPUs: coalesced loads);
 *   PK_IDX       int, or long for images of 2^31 pixels and more.
 */
/* a * b + c may become one FMA where the device has it (mad() stays two operations on PoCL,
 * fma() would be emulated in software on devices without it). */
#pragma OPENCL FP_CONTRACT ON

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

#define PK_CAT_(a, b) a##b
#define PK_CAT(a, b) PK_CAT_(a, b)
#if PK_CV_VW == 1
typedef float pk_vec;
#define PK_VLOAD(p) (*(p))
#else
typedef PK_CAT(float, PK_CV_VW) pk_vec;
#define PK_VLOAD(p) PK_CAT(vload, PK_CV_VW)(0, (p))
#define PK_VSTORE(v, p) PK_CAT(vstore, PK_CV_VW)((v), 0, (p))
#endif

/* Non-negative a mod m for any int a (C's % truncates towards zero). */
int pk_mod(int a, int m)
{
    int r = a % m;
    return r < 0 ? r + m : r;
}

/* tile[r * pitch + c] = img[(rb + r) mod h][(cb + c) mod w] for r < th, c < tw; rb < h and
 * cb < w are already reduced. */
void pk_cv_load(__global const float *restrict img, __local float *restrict tile,
                int h, int w, int rb, int cb, int th, int tw, int pitch)
{
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int nlx = get_local_size(0), nly = get_local_size(1);
#if PK_CV_ROWCOPY
    /* Whole rows per work-item, in contiguous runs between wrap points. */
    for (int r = ly * nlx + lx; r < th; r += nlx * nly) {
        __global const float *src = img + (pk_idx)((rb + r) % h) * w;
        __local float *dst = tile + r * pitch;
        int c = 0, col = cb;
        while (c < tw) {
            const int n = min(tw - c, w - col);
            for (int i = 0; i < n; ++i) dst[c + i] = src[col + i];
            c += n;
            col = 0;
        }
    }
#else
    /* Columns across the work-items of a row: consecutive items read consecutive pixels;
     * the modulo runs only where the window wraps. */
    for (int r = ly; r < th; r += nly) {
        __global const float *src = img + (pk_idx)((rb + r) % h) * w;
        for (int c = lx; c < tw; c += nlx) {
            int col = cb + c;
            if (col >= w) col %= w;
            tile[r * pitch + c] = src[col];
        }
    }
#endif
}

/* out[y][x ..] = v, the part inside the image. */
void pk_cv_store(__global float *restrict out, pk_vec v, int h, int w, int y, int x)
{
    if (y >= h || x >= w) return;
    __global float *o = out + (pk_idx)y * w + x;
#if PK_CV_VW == 1
    *o = v;
#else
    if (x + PK_CV_VW <= w) {
        PK_VSTORE(v, o);
    } else {
        float part[PK_CV_VW];
        PK_VSTORE(v, part);
        for (int i = 0; x + i < w; ++i) o[i] = part[i];
    }
#endif
}

__kernel void pk_cv_tile(__global const float *restrict img, __global float *restrict out,
                         PK_CV_PSF const float *restrict psf, __local float *restrict tile,
                         int h, int w, int kh, int kw, int cbh, int cbw)
{
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int tx = (int)get_local_size(0) * PK_CV_VW, ty = (int)get_local_size(1) * 8;
    const int x0 = (int)get_group_id(0) * tx, y0 = (int)get_group_id(1) * ty;
    const int pitch = tx + cbw - 1;

    /* Eight rows per work-item, in named variables (PoCL keeps private arrays in memory):
     * eight independent FMA chains cover the FMA latency of two pipes. */
    pk_vec acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
    pk_vec acc4 = 0.0f, acc5 = 0.0f, acc6 = 0.0f, acc7 = 0.0f;
    for (int kb = 0; kb < kh; kb += cbh) {
        const int nk = min(cbh, kh - kb);
        for (int lb = 0; lb < kw; lb += cbw) {
            const int nl = min(cbw, kw - lb);
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous chunk's readers are done */
            pk_cv_load(img, tile, h, w, pk_mod(y0 - kh / 2 + kb, h), pk_mod(x0 - kw / 2 + lb, w),
                       ty + nk - 1, tx + nl - 1, pitch);
            barrier(CLK_LOCAL_MEM_FENCE);
            /* Output (y0 + i, x0 + j), tap (kb + k, lb + l) reads tile[i + k][j + l]. */
            __local const float *t = tile + ly * 8 * pitch + lx * PK_CV_VW;
            PK_CV_PSF const float *p = psf + kb * kw + lb;
            for (int k = 0; k < nk; ++k, t += pitch, p += kw) {
                pk_vec s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                pk_vec s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
                for (int l = 0; l < nl; ++l) {
                    const pk_vec pv = p[l];
                    __local const float *c = t + l;
                    s0 = PK_VLOAD(c) * pv + s0;
                    s1 = PK_VLOAD(c + pitch) * pv + s1;
                    s2 = PK_VLOAD(c + 2 * pitch) * pv + s2;
                    s3 = PK_VLOAD(c + 3 * pitch) * pv + s3;
                    s4 = PK_VLOAD(c + 4 * pitch) * pv + s4;
                    s5 = PK_VLOAD(c + 5 * pitch) * pv + s5;
                    s6 = PK_VLOAD(c + 6 * pitch) * pv + s6;
                    s7 = PK_VLOAD(c + 7 * pitch) * pv + s7;
                }
                acc0 += s0;
                acc1 += s1;
                acc2 += s2;
                acc3 += s3;
                acc4 += s4;
                acc5 += s5;
                acc6 += s6;
                acc7 += s7;
            }
        }
    }

    const int x = x0 + lx * PK_CV_VW, y = y0 + ly * 8;
    pk_cv_store(out, acc0, h, w, y, x);
    pk_cv_store(out, acc1, h, w, y + 1, x);
    pk_cv_store(out, acc2, h, w, y + 2, x);
    pk_cv_store(out, acc3, h, w, y + 3, x);
    pk_cv_store(out, acc4, h, w, y + 4, x);
    pk_cv_store(out, acc5, h, w, y + 5, x);
    pk_cv_store(out, acc6, h, w, y + 6, x);
    pk_cv_store(out, acc7, h, w, y + 7, x);
}
