/* conv2d_rb.h - the omp-rb block kernel, included once per SIMD level by omp/conv2d_omp.c with
 *   CV_RB_NAME(x)  the level's name for x        CV_RB_TARGET  its target attribute (or empty)
 *   CV_RB_VT       an unaligned float vector     CV_RB_W       its lanes
 *   CV_RB_R        output rows per block          CV_RB_V       vectors per row and block
 * R output rows x V vectors of them stay in registers while the block's R + kh - 1 halo rows
 * stream past: each image vector loaded at (source row s, tap l) feeds every output row r of
 * the block with kernel row s - r in [0, kh), so one load serves up to R FMAs (the omp
 * variant: one).  Each output is written once, from registers (no zeroing, no read-back). */

/* An image vector stays in a register for the R FMAs that use it (GCC would otherwise fold
 * the load into each FMA: R loads where one does). */
#ifndef CV_RB_KEEP
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) /* "v": an x86 vector reg */
#define CV_RB_KEEP(x) __asm__("" : "+v"(x))
#else
#define CV_RB_KEEP(x) (void)0
#endif
#endif

/* The kw taps of source row s (p: its column j) into the rows [r_lo, r_hi] of acc.  Called
 * twice, with 0 and r_n - 1 for a row that feeds the whole block: there the row test folds
 * away and the unrolled r loop has no branch. */
CV_RB_TARGET static inline __attribute__((always_inline)) void
CV_RB_NAME(taps)(const float *p, const float *restrict psf, int kw, int s,
                 CV_RB_VT acc[CV_RB_R][CV_RB_V], const int r_n, const int nv, int r_lo, int r_hi)
{
    for (int l = 0; l < kw; ++l) {
        CV_RB_VT x[CV_RB_V];
        for (int v = 0; v < nv; ++v) {
            x[v] = *(const CV_RB_VT *)(p + v * CV_RB_W + l);
            CV_RB_KEEP(x[v]);
        }
        for (int r = 0; r < r_n; ++r) {
            if (r < r_lo || r > r_hi) continue;
            const float c = psf[(size_t)(s - r) * kw + l];
            for (int v = 0; v < nv; ++v) acc[r][v] += x[v] * c;
        }
    }
}

/* The block at columns [j, j + CV_RB_V * CV_RB_W), or one vector (nv = 1) at j whose lanes
 * from w on are dropped (its loads read the ring's zeroed pad).  r_n <= CV_RB_R rows. */
CV_RB_TARGET static inline __attribute__((always_inline)) void
CV_RB_NAME(tile)(const float *const *src, const float *restrict psf, int kh, int kw,
                 float *const *out, const int r_n, const int nv, int j, int w)
{
    CV_RB_VT acc[CV_RB_R][CV_RB_V];
    for (int r = 0; r < r_n; ++r)
        for (int v = 0; v < nv; ++v) acc[r][v] = (CV_RB_VT){0};
    for (int s = 0; s < r_n + kh - 1; ++s) {
        const float *p = src[s] + j;
        /* rows r with kernel row s - r in [0, kh): all of them inside, fewer at the ends */
        const int r_lo = s - kh + 1 > 0 ? s - kh + 1 : 0, r_hi = s < r_n - 1 ? s : r_n - 1;
        if (r_lo == 0 && r_hi == r_n - 1)
            CV_RB_NAME(taps)(p, psf, kw, s, acc, r_n, nv, 0, r_n - 1);
        else
            CV_RB_NAME(taps)(p, psf, kw, s, acc, r_n, nv, r_lo, r_hi);
    }
    if (j + nv * CV_RB_W <= w) {
        for (int r = 0; r < r_n; ++r)
            for (int v = 0; v < nv; ++v) *(CV_RB_VT *)(out[r] + j + v * CV_RB_W) = acc[r][v];
    } else { /* the row's last, partial vector */
        for (int r = 0; r < r_n; ++r) {
            float lanes[CV_RB_W];
            memcpy(lanes, &acc[r][0], sizeof lanes);
            memcpy(out[r] + j, lanes, (size_t)(w - j) * sizeof(float));
        }
    }
}

/* One block row: r_n (constant after inlining) output rows over the whole width. */
CV_RB_TARGET static inline __attribute__((always_inline)) void
CV_RB_NAME(rows_n)(const float *const *src, const float *restrict psf, int kh, int kw,
                   float *const *out, const int r_n, int w)
{
    int j = 0;
    for (; j + CV_RB_V * CV_RB_W <= w; j += CV_RB_V * CV_RB_W)
        CV_RB_NAME(tile)(src, psf, kh, kw, out, r_n, CV_RB_V, j, w);
    for (; j < w; j += CV_RB_W) CV_RB_NAME(tile)(src, psf, kh, kw, out, r_n, 1, j, w);
}

/* src[0 .. r_n + kh - 2]: the halo rows of output rows out[0 .. r_n - 1], r_n <= CV_RB_R. */
CV_RB_TARGET static void CV_RB_NAME(rows)(const float *const *src, const float *restrict psf,
                                          int kh, int kw, float *const *out, int r_n, int w)
{
    switch (r_n) {
#if CV_RB_R >= 4
    case 4: CV_RB_NAME(rows_n)(src, psf, kh, kw, out, 4, w); break;
#endif
#if CV_RB_R >= 3
    case 3: CV_RB_NAME(rows_n)(src, psf, kh, kw, out, 3, w); break;
#endif
    case 2: CV_RB_NAME(rows_n)(src, psf, kh, kw, out, 2, w); break;
    default: CV_RB_NAME(rows_n)(src, psf, kh, kw, out, 1, w); break;
    }
}
