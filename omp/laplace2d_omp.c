/* laplace2d_omp.c - the OpenMP variants of laplace2d (docs/KERNELS.md 4a), both layouts:
 *   omp-simd  hand-vectorised rows (intrinsics, ISA picked at plan creation): hvfo with 16
 *             lanes is one AVX-512 vector (two AVX2 ones) per column x', every load aligned,
 *             and the only shuffles are one lane rotation (vpermps) at each of the two
 *             boundary columns; hvfo with 8 lanes is one AVX2 vector; lexi uses unaligned
 *             loads at x-1 and x+1.  Other lane counts take the portable row.
 *   omp       the portable row (pk_lp_row, laplace2d_host.h) left to the compiler's
 *             auto-vectoriser (an AVX2 clone picked at load time): the paper's auto-vectorised
 *             Laplacian.
 *   omp-tb    temporal blocking on the omp-simd rows: up to laplace2d.tb_depth iterations
 *             per pass over memory (a tuning parameter, auto 8 beyond the last-level cache
 *             and 4 within it, at most LP_TB_MAX_DEPTH).  Each thread owns a band of rows and
 *             marches down it; iteration k of row r is computed as soon as iteration k-1 has
 *             rows r-1..r+1, kept in a ring of three rows per intermediate iteration
 *             (L2-resident), the halo rows above and below the band recomputed rather than
 *             exchanged.  Same layout, same row kernel, same iterations: the result is bit
 *             for bit that of omp-simd; a remainder of count % depth iterations runs as
 *             single sweeps.
 * Every variant runs all iterations of a call in one parallel region, threads sweeping the
 * static row partition they first touched (pk_lp_rows_of), a barrier per iteration (per pass
 * for omp-tb), each pass in place on one field, the bands' edge rows saved for their
 * neighbours first (lp_omp_steps).  Where passes write a second field instead (bands
 * shorter than the depth, or laplace2d.stream=1) beyond the last-level cache, the
 * hand-vectorised rows write it with streaming stores: the target is not read again in the
 * sweep, so write-allocate would add half the ideal traffic (12 B/site instead of 8).
 *
 * laplace2d.isa=avx512|avx2|generic lowers the ISA of omp-simd and omp-tb, and
 * laplace2d.stream=1 makes every pass write the second field with streaming stores, 0 never
 * streams (tuning parameters, read at plan creation; the tests run every path, streaming
 * included, on small fields). */
#include "laplace2d_host.h"

#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif

#ifdef PK_X86
#include <immintrin.h>
#endif

#define LP_TB_MAX_DEPTH 16 /* iterations per pass of omp-tb: laplace2d.tb_depth's range */

enum { LP_OMP_SIMD = 0, LP_OMP_AUTO = 1, LP_OMP_TB = 2 };

/* What a row kernel needs: l = m * nw floats per row. */
typedef struct lp_k {
    int l, nw, m;
    float a, inv;
} lp_k;

/* out = the operator on row c (north n, south s); stream: streaming stores (out is a row of
 * the field); buf: an aligned scratch row of l floats for kernels that stream via a copy. */
typedef void (*lp_row_fn)(const lp_k *k, const float *c, const float *n, const float *s,
                          float *out, int stream, float *buf);

/* ---- portable row (omp, and omp-simd's fallback) --------------------------------------- */
PK_SIMD_CLONES
static void row_auto(const lp_k *k, const float *c, const float *n, const float *s, float *out,
                     int stream, float *buf)
{
    if (stream && buf) { /* the compiler has no streaming stores: compute in L1, then stream */
        pk_lp_row(k->l, k->nw, k->a, k->inv, c, n, s, buf);
        pk_stream_copy(out, buf, (size_t)k->l * sizeof(float));
    } else {
        pk_lp_row(k->l, k->nw, k->a, k->inv, c, n, s, out);
    }
}

#ifdef PK_X86
/* The vector kernels fuse c + a(...) explicitly; their scalar sites (row ends, short rows) do
 * the same with fmaf, so every site of a field gets the same operations (a constant field
 * stays exactly uniform). */
#define LP_SITE_FMA(c, e, w, n, s) (fmaf(a, ((e) + (w)) + ((n) + (s)), (c)) * inv)

/* A whole lexi row with fused scalar sites (rows too short for the vector body). */
#define LP_LEXI_SCALAR_ROW()                                                                  \
    do {                                                                                      \
        for (int x = 0; x < l; ++x) {                                                         \
            const int xe = x + 1 == l ? 0 : x + 1, xw = x == 0 ? l - 1 : x - 1;               \
            out[x] = LP_SITE_FMA(c[x], c[xe], c[xw], n[x], s[x]);                             \
        }                                                                                     \
    } while (0)

/* ---- AVX-512 ---------------------------------------------------------------------------- */
/* (c + a ((e + w) + (n + s))) inv, c + a(...) fused. */
#define LP512(C, E, W, N, S)                                                                  \
    _mm512_mul_ps(_mm512_fmadd_ps(va, _mm512_add_ps(_mm512_add_ps(E, W), _mm512_add_ps(N, S)),\
                                  C),                                                         \
                  vinv)
#define LP512_STORE(p, v) (stream ? _mm512_stream_ps((p), (v)) : _mm512_store_ps((p), (v)))

/* hvfo, 16 lanes: one zmm per column, rows 64-byte aligned (l % 16 == 0). */
PK_T512 static void row_hvfo16_avx512(const lp_k *k, const float *c, const float *n,
                                      const float *s, float *out, int stream, float *buf)
{
    (void)buf;
    const int m = k->m;
    const __m512 va = _mm512_set1_ps(k->a), vinv = _mm512_set1_ps(k->inv);
    /* lane w <- lane w-1 (west of column 0), lane w <- lane w+1 (east of column m-1) */
    const __m512i down = _mm512_set_epi32(14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15);
    const __m512i up = _mm512_set_epi32(0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512 first = _mm512_load_ps(c), last = _mm512_load_ps(c + 16 * (m - 1));
    const __m512 west0 = _mm512_permutexvar_ps(down, last);
    const __m512 east_last = _mm512_permutexvar_ps(up, first);
    if (m == 1) {
        LP512_STORE(out, LP512(first, east_last, west0, _mm512_load_ps(n), _mm512_load_ps(s)));
        return;
    }
    __m512 w = west0, cc = first, e = _mm512_load_ps(c + 16);
    LP512_STORE(out, LP512(cc, e, w, _mm512_load_ps(n), _mm512_load_ps(s)));
    for (int x = 1; x < m - 1; ++x) { /* the centre vectors slide: one load of c per column */
        w = cc;
        cc = e;
        e = _mm512_load_ps(c + 16 * (x + 1));
        const int i = 16 * x;
        LP512_STORE(out + i, LP512(cc, e, w, _mm512_load_ps(n + i), _mm512_load_ps(s + i)));
    }
    const int i = 16 * (m - 1);
    LP512_STORE(out + i, LP512(last, east_last, _mm512_load_ps(c + i - 16), _mm512_load_ps(n + i),
                               _mm512_load_ps(s + i)));
}

/* lexi: x-1 and x+1 are unaligned loads; x = 0 and l-1 wrap (scalar).  With streaming stores
 * the body starts at the first 64-byte boundary of the output row. */
PK_T512 static void row_lexi_avx512(const lp_k *k, const float *c, const float *n,
                                    const float *s, float *out, int stream, float *buf)
{
    const int l = k->l;
    const float a = k->a, inv = k->inv;
    (void)buf;
    if (l < 48) {
        LP_LEXI_SCALAR_ROW();
        return;
    }
    const __m512 va = _mm512_set1_ps(a), vinv = _mm512_set1_ps(inv);
    out[0] = LP_SITE_FMA(c[0], c[1], c[l - 1], n[0], s[0]);
    int x = 1;
    if (stream)
        for (; ((uintptr_t)(out + x) & 63u) != 0; ++x)
            out[x] = LP_SITE_FMA(c[x], c[x + 1], c[x - 1], n[x], s[x]);
    for (; x + 16 <= l - 1; x += 16) {
        const __m512 r = LP512(_mm512_loadu_ps(c + x), _mm512_loadu_ps(c + x + 1),
                               _mm512_loadu_ps(c + x - 1), _mm512_loadu_ps(n + x),
                               _mm512_loadu_ps(s + x));
        if (stream)
            _mm512_stream_ps(out + x, r);
        else
            _mm512_storeu_ps(out + x, r);
    }
    for (; x < l - 1; ++x) out[x] = LP_SITE_FMA(c[x], c[x + 1], c[x - 1], n[x], s[x]);
    out[l - 1] = LP_SITE_FMA(c[l - 1], c[0], c[l - 2], n[l - 1], s[l - 1]);
}

/* ---- AVX2 ------------------------------------------------------------------------------- */
#define LP256(C, E, W, N, S)                                                                  \
    _mm256_mul_ps(_mm256_fmadd_ps(va, _mm256_add_ps(_mm256_add_ps(E, W), _mm256_add_ps(N, S)),\
                                  C),                                                         \
                  vinv)
#define LP256_STORE(p, v) (stream ? _mm256_stream_ps((p), (v)) : _mm256_store_ps((p), (v)))

/* hvfo, 8 lanes: one ymm per column, rows 32-byte aligned (l % 8 == 0). */
PK_T256 static void row_hvfo8_avx2(const lp_k *k, const float *c, const float *n,
                                   const float *s, float *out, int stream, float *buf)
{
    (void)buf;
    const int m = k->m;
    const __m256 va = _mm256_set1_ps(k->a), vinv = _mm256_set1_ps(k->inv);
    const __m256i down = _mm256_set_epi32(6, 5, 4, 3, 2, 1, 0, 7);
    const __m256i up = _mm256_set_epi32(0, 7, 6, 5, 4, 3, 2, 1);
    const __m256 first = _mm256_load_ps(c), last = _mm256_load_ps(c + 8 * (m - 1));
    const __m256 west0 = _mm256_permutevar8x32_ps(last, down);
    const __m256 east_last = _mm256_permutevar8x32_ps(first, up);
    if (m == 1) {
        LP256_STORE(out, LP256(first, east_last, west0, _mm256_load_ps(n), _mm256_load_ps(s)));
        return;
    }
    __m256 w = west0, cc = first, e = _mm256_load_ps(c + 8);
    LP256_STORE(out, LP256(cc, e, w, _mm256_load_ps(n), _mm256_load_ps(s)));
    for (int x = 1; x < m - 1; ++x) {
        w = cc;
        cc = e;
        e = _mm256_load_ps(c + 8 * (x + 1));
        const int i = 8 * x;
        LP256_STORE(out + i, LP256(cc, e, w, _mm256_load_ps(n + i), _mm256_load_ps(s + i)));
    }
    const int i = 8 * (m - 1);
    LP256_STORE(out + i, LP256(last, east_last, _mm256_load_ps(c + i - 8), _mm256_load_ps(n + i),
                               _mm256_load_ps(s + i)));
}

/* hvfo, 16 lanes as two ymm halves (lo = lanes 0-7, hi = 8-15): rotating the 16 lanes by one
 * is a rotation of each half plus an exchange of the lane that crosses between them. */
PK_T256 static inline void rot16_avx2(__m256 lo, __m256 hi, __m256i idx, int cross,
                                      __m256 *rlo, __m256 *rhi)
{
    const __m256 plo = _mm256_permutevar8x32_ps(lo, idx), phi = _mm256_permutevar8x32_ps(hi, idx);
    if (cross == 0) { /* down: lane 0 of each half comes from the other half's lane 7 */
        *rlo = _mm256_blend_ps(plo, phi, 0x01);
        *rhi = _mm256_blend_ps(phi, plo, 0x01);
    } else { /* up: lane 7 of each half comes from the other half's lane 0 */
        *rlo = _mm256_blend_ps(plo, phi, 0x80);
        *rhi = _mm256_blend_ps(phi, plo, 0x80);
    }
}

PK_T256 static void row_hvfo16_avx2(const lp_k *k, const float *c, const float *n,
                                    const float *s, float *out, int stream, float *buf)
{
    (void)buf;
    const int m = k->m;
    const __m256 va = _mm256_set1_ps(k->a), vinv = _mm256_set1_ps(k->inv);
    const __m256i down = _mm256_set_epi32(6, 5, 4, 3, 2, 1, 0, 7);
    const __m256i up = _mm256_set_epi32(0, 7, 6, 5, 4, 3, 2, 1);
    const float *lastc = c + 16 * (m - 1);
    __m256 w0lo, w0hi, elo, ehi;
    rot16_avx2(_mm256_load_ps(lastc), _mm256_load_ps(lastc + 8), down, 0, &w0lo, &w0hi);
    rot16_avx2(_mm256_load_ps(c), _mm256_load_ps(c + 8), up, 1, &elo, &ehi);
    for (int x = 0; x < m; ++x) {
        const int i = 16 * x;
        __m256 wlo, whi, east_lo, east_hi;
        if (x == 0) {
            wlo = w0lo;
            whi = w0hi;
        } else {
            wlo = _mm256_load_ps(c + i - 16);
            whi = _mm256_load_ps(c + i - 8);
        }
        if (x == m - 1) {
            east_lo = elo;
            east_hi = ehi;
        } else {
            east_lo = _mm256_load_ps(c + i + 16);
            east_hi = _mm256_load_ps(c + i + 24);
        }
        LP256_STORE(out + i, LP256(_mm256_load_ps(c + i), east_lo, wlo, _mm256_load_ps(n + i),
                                   _mm256_load_ps(s + i)));
        LP256_STORE(out + i + 8, LP256(_mm256_load_ps(c + i + 8), east_hi, whi,
                                       _mm256_load_ps(n + i + 8), _mm256_load_ps(s + i + 8)));
    }
}

PK_T256 static void row_lexi_avx2(const lp_k *k, const float *c, const float *n, const float *s,
                                  float *out, int stream, float *buf)
{
    const int l = k->l;
    const float a = k->a, inv = k->inv;
    (void)buf;
    if (l < 24) {
        LP_LEXI_SCALAR_ROW();
        return;
    }
    const __m256 va = _mm256_set1_ps(a), vinv = _mm256_set1_ps(inv);
    out[0] = LP_SITE_FMA(c[0], c[1], c[l - 1], n[0], s[0]);
    int x = 1;
    if (stream)
        for (; ((uintptr_t)(out + x) & 31u) != 0; ++x)
            out[x] = LP_SITE_FMA(c[x], c[x + 1], c[x - 1], n[x], s[x]);
    for (; x + 8 <= l - 1; x += 8) {
        const __m256 r = LP256(_mm256_loadu_ps(c + x), _mm256_loadu_ps(c + x + 1),
                               _mm256_loadu_ps(c + x - 1), _mm256_loadu_ps(n + x),
                               _mm256_loadu_ps(s + x));
        if (stream)
            _mm256_stream_ps(out + x, r);
        else
            _mm256_storeu_ps(out + x, r);
    }
    for (; x < l - 1; ++x) out[x] = LP_SITE_FMA(c[x], c[x + 1], c[x - 1], n[x], s[x]);
    out[l - 1] = LP_SITE_FMA(c[l - 1], c[0], c[l - 2], n[l - 1], s[l - 1]);
}
#endif /* PK_X86 */

/* ---- ISA choice --------------------------------------------------------------------------- */


/* The hand-vectorised row for the plan's layout and lane count, or the portable one. */
static lp_row_fn lp_simd_row(const pk_lp_desc *d, int isa)
{
#ifdef PK_X86
    if (isa >= PK_SIMD_AVX2) {
        if (d->layout == PK_LAP_LEXI)
            return isa == PK_SIMD_AVX512 ? row_lexi_avx512 : row_lexi_avx2;
        if (d->nw == 16) return isa == PK_SIMD_AVX512 ? row_hvfo16_avx512 : row_hvfo16_avx2;
        if (d->nw == 8) return row_hvfo8_avx2;
    }
#else
    (void)d;
    (void)isa;
#endif
    return row_auto;
}

/* ---- sweeps ------------------------------------------------------------------------------- */
typedef struct lp_omp {
    pk_lp_host_plan *h;
    lp_row_fn row;
    lp_k k;
} lp_omp;

static inline void stream_fence(int stream)
{
#if defined(__SSE2__)
    if (stream) _mm_sfence(); /* streamed rows must be visible before the barrier */
#else
    (void)stream;
#endif
}

static inline int mod3(int r) { return ((r % 3) + 3) % 3; }

/* A thread's rows of scratch: buf (the stream row), the rings of omp-tb's intermediate
 * iterations, three staged rows of iteration 0 (row q in slot q mod 3), one hvfo row
 * converted out to a caller's lexi field, and the band's first and last `depth` rows saved
 * before a pass in place (its neighbours read them from there). */
typedef struct lp_rows {
    float *buf;
    float *ring[LP_TB_MAX_DEPTH];
    float *in;
    float *out;
    float *top, *bottom;
    size_t stride;
} lp_rows;

/* Where one pass reads iteration 0 and writes its last iteration.  lexi_src: src is the
 * caller's lexi field of an hvfo plan, each row converted to hvfo as it is staged; lexi_dst:
 * the last iteration's rows converted into the lexi field dst.  In place (dst == src), the
 * rows outside the band come from the neighbours' saved edge rows: above, the T rows before
 * the band (the previous band's last), below, the T rows after it (the next band's first). */
typedef struct lp_pass {
    const float *src;
    float *dst;
    int lexi_src, lexi_dst;
    const float *above, *below;
} lp_pass;

static const float *lp_src_row(const lp_pass *p, int l, int T, size_t stride, int y0, int y1,
                               int q)
{
    if (p->above && q < y0) return p->above + (size_t)(q - (y0 - T)) * stride;
    if (p->below && q >= y1) return p->below + (size_t)(q - y1) * stride;
    return p->src + (size_t)(((q % l) + l) % l) * (size_t)l;
}

/* One pass over rows [y0, y1): T iterations src -> dst (T = 1: one sweep).  ring[k]
 * (k = 1 .. T-1) holds three rows of iteration k, row r in slot r mod 3; iteration 0 is src
 * (row r mod l).  At step zz iteration k computes row zz - (k - 1): its rows r-1, r, r+1 of
 * iteration k-1 were computed at steps zz-2, zz-1 and, earlier in this step, zz.
 * Iteration 0's rows are staged into w->in (row zz + 1 at step zz) when they are converted
 * (lexi_src) or when the pass is in place: row q is then read at step q - 1 and written at
 * step q + T - 1, after its last use.  The rows and the operations are those of the plan's
 * own passes: the bits are the same as reordering the whole field before and after, or as
 * a pass into a second field. */
static void tb_band(const lp_omp *o, int T, const lp_pass *p, const lp_rows *w, int y0, int y1)
{
    const int l = o->k.l, nw = o->k.nw;
    const size_t stride = w->stride;
    const int staged = p->lexi_src || p->above;
    /* in place, a row is written over lines the pass has just read (in L2): no streaming */
    const int stream = o->h->stream && p->dst != p->src;
    /* the AVX2 / AVX-512 hvfo rows store aligned vectors: a caller's lexi array holding hvfo
     * rows (an hvfo call in place on it) may not be aligned, its rows go through w->out */
    const uintptr_t align = o->h->d.layout == PK_LAP_HVFO && (nw == 8 || nw == 16)
                                ? (uintptr_t)nw * sizeof(float) : 1;
    for (int zz = y0 - T - 1; zz < y1 + (T - 1); ++zz) {
        if (staged) {
            const int q = zz + 1;
            const float *row = lp_src_row(p, l, T, stride, y0, y1, q);
            float *slot = w->in + (size_t)mod3(q) * stride;
            if (p->lexi_src) {
                /* the lexi row read in order into L1 first, then transposed there: the
                 * transpose's 8 x 8 blocks read it as 16 interleaved streams, which cost the
                 * call 1.17-1.21x the plan at 4096^2 against 1.07-1.09x this way */
                memcpy(w->buf, row, (size_t)l * sizeof(float));
                pk_lp_reorder_row(l, nw, w->buf, slot, 1);
            } else {
                memcpy(slot, row, (size_t)l * sizeof(float));
            }
        }
        if (zz < y0 - (T - 1)) continue; /* the first two steps only stage rows */
        for (int k = 1; k <= T; ++k) {
            const int r = zz - (k - 1);
            if (r < y0 - (T - k) || r >= y1 + (T - k)) continue;
            const float *rows[3];
            for (int j = 0; j < 3; ++j) {
                const int q = r - 1 + j;
                rows[j] = k > 1    ? w->ring[k - 1] + (size_t)mod3(q) * stride
                          : staged ? w->in + (size_t)mod3(q) * stride
                                   : lp_src_row(p, l, T, stride, y0, y1, q);
            }
            if (k < T) {
                o->row(&o->k, rows[1], rows[0], rows[2], w->ring[k] + (size_t)mod3(r) * stride,
                       0, w->buf);
            } else if (p->lexi_dst) {
                o->row(&o->k, rows[1], rows[0], rows[2], w->out, 0, w->buf);
                pk_lp_reorder_row(l, nw, w->out, p->dst + (size_t)r * (size_t)l, 0);
            } else if ((uintptr_t)(p->dst + (size_t)r * (size_t)l) % align) {
                o->row(&o->k, rows[1], rows[0], rows[2], w->out, 0, w->buf);
                memcpy(p->dst + (size_t)r * (size_t)l, w->out, (size_t)l * sizeof(float));
            } else {
                o->row(&o->k, rows[1], rows[0], rows[2], p->dst + (size_t)r * (size_t)l, stream,
                       w->buf);
            }
        }
    }
}

/* Per-thread scratch: the stream row, omp-tb's (T-1) rings of three rows, the three staged
 * rows and the converted-out row, and 2 T saved edge rows (T = the plan's depth; 1 without
 * temporal blocking). */
static size_t lp_row_stride(int l) { return ((size_t)l + 15) / 16 * 16; }

static size_t lp_scratch_floats(int l, int kind, int T)
{
    const int depth = kind == LP_OMP_TB ? T : 1;
    const size_t rows = 1 + 3 * (size_t)(depth - 1) + 4 + 2 * (size_t)depth;
    return rows * lp_row_stride(l);
}

/* The pass depth of a call: of the depths up to the plan's, the one with the fewest passes
 * over memory (count / t passes of t, then count % t single sweeps; count 10 at depth 8: three
 * passes, at 5: two), the deepest of those; even where the call works on the caller's field
 * without a pass in place (an odd count of passes would leave the result in the work field: a
 * copy more), when some depth makes it even.  Any depth gives the same bits. */
static int lp_call_depth(int count, int T, int even)
{
    int best = T, best_ops = INT_MAX;
    for (int pass = 0; pass < 2 && best_ops == INT_MAX; ++pass)
        for (int t = T; t >= 1; --t) {
            const int ops = count / t + count % t;
            if (pass == 0 && even && count >= 2 && ops % 2) continue;
            if (ops < best_ops) best = t, best_ops = ops;
        }
    return best;
}

/* count iterations as ops: count / T passes of T iterations (omp-tb; T = 1 otherwise), then
 * count % T single sweeps, a barrier after each.  Every op runs in place on one field: on
 * h->cur (the plan's field, or the caller's under h->in_place), or on an hvfo plan's caller's
 * lexi field, which holds hvfo rows between the first op (converting rows in) and the last
 * (converting them out).  An op in place first saves each band's first and last T rows (a
 * barrier), which its neighbours read instead of rows they may already have overwritten, so
 * it needs bands of at least T rows.  No second field, and the writes land on lines the pass
 * has just read (2-core EPYC, 2 threads, 4096^2 x 8, plans against passes into a second field
 * with streaming stores: omp-tb 9.5-9.8 -> 8.3-9.0 ms lexi, 7.7-7.9 -> 6.7-6.8 hvfo; omp-simd
 * 21.6-24.3 -> 18.8-20.8 lexi; omp 29.9-30.4 -> 23.2-23.3).
 * Bands shorter than the depth (more threads than rows), or laplace2d.stream=1, make the ops
 * ping-pong between two fields: on the caller's field the first op in place when their number
 * is odd, so that the last lands there (or an even number of ops where one exists); on a
 * lexi field one op alone in place, else the first reads it and the last writes it, the
 * plan's fields between. */
static pk_status lp_omp_steps(pk_lp_host_plan *h, const lp_omp *o, int count, float *lexi)
{
    const int tb = h->kind == LP_OMP_TB, band = h->d.l / h->nt;
    int T = tb ? lp_call_depth(count, h->tb_depth, 0) : 1;
    int ops = count / T + count % T;
    int all_in_place = !h->two_fields && band >= T, first_in_place = 0;
    if (lexi || h->in_place) {
        const int first_depth = count >= T ? T : 1; /* op 0's: a pass, or a lone sweep */
        first_in_place = (lexi ? ops == 1 : ops % 2 == 1) && band >= first_depth;
        if (!(all_in_place || first_in_place)) {
            if (tb) T = lp_call_depth(count, h->tb_depth, 1);
            ops = count / T + count % T;
            all_in_place = !h->two_fields && band >= T;
        }
    }
    const int passes = count / T;
    if (!lexi) {
        PK_TRY(pk_lp_host_ready(h, !all_in_place));
    } else if (!all_in_place && !(ops == 1 && first_in_place)) { /* the work field(s) */
        PK_TRY(pk_lp_host_field(h, &h->f2, 0));
        if (ops >= 3) PK_TRY(pk_lp_host_field(h, &h->f1, 0));
    }
    float *const first = lexi ? h->f2 : h->cur;
    float *const second = lexi ? h->f1 : h->cur == h->f1 ? h->f2 : h->f1;
    float *at = first; /* the field that holds the iterate after each op (threads agree) */
#pragma omp parallel num_threads(h->nt) firstprivate(at)
    {
        const int t = pk_thread_num(), nt = pk_team_size();
        int y0, y1;
        pk_lp_rows_of(h->d.l, t, nt, &y0, &y1);
        const int Tmax = tb ? h->tb_depth : 1;
        lp_rows w;
        w.stride = lp_row_stride(h->d.l);
        w.buf = h->scratch + (size_t)t * h->scratch_per_thread;
        for (int k = 1; k < T; ++k) w.ring[k] = w.buf + (size_t)(1 + 3 * (k - 1)) * w.stride;
        w.ring[0] = NULL;
        w.in = w.buf + (size_t)(1 + 3 * (Tmax - 1)) * w.stride;
        w.out = w.in + 3 * w.stride;
        w.top = w.out + w.stride;
        w.bottom = w.top + (size_t)Tmax * w.stride;
        for (int i = 0; i < ops; ++i) {
            const int Ti = i < passes ? T : 1;
            lp_pass p = {0};
            int in_place = 0;
            if (lexi && all_in_place) { /* the caller's array holds hvfo rows between */
                p.src = p.dst = lexi;
                p.lexi_src = i == 0;
                p.lexi_dst = i == ops - 1;
                in_place = 1;
            } else if (lexi && i == 0) {
                p.src = lexi;
                p.lexi_src = 1;
                in_place = ops == 1 && first_in_place;
                p.lexi_dst = in_place;
                p.dst = in_place ? lexi : first; /* at: first */
            } else if (lexi && i == ops - 1) {
                p.src = at;
                p.dst = lexi;
                p.lexi_dst = 1;
            } else if (all_in_place || (i == 0 && first_in_place)) {
                p.src = p.dst = at;
                in_place = 1;
            } else {
                p.src = at;
                p.dst = at = at == first ? second : first;
            }
            if (in_place && y1 > y0) {
                for (int j = 0; j < Ti; ++j) {
                    memcpy(w.top + (size_t)j * w.stride, p.src + (size_t)(y0 + j) * h->d.l,
                           (size_t)h->d.l * sizeof(float));
                    memcpy(w.bottom + (size_t)j * w.stride,
                           p.src + (size_t)(y1 - Ti + j) * h->d.l,
                           (size_t)h->d.l * sizeof(float));
                }
                const float *prev = h->scratch + (size_t)((t + nt - 1) % nt) *
                                                     h->scratch_per_thread;
                const float *next = h->scratch + (size_t)((t + 1) % nt) * h->scratch_per_thread;
                p.above = prev + (w.bottom - w.buf);
                p.below = next + (w.top - w.buf);
            }
            if (in_place) {
#pragma omp barrier
            }
            if (y1 > y0) tb_band(o, Ti, &p, &w, y0, y1);
            stream_fence(h->stream);
#pragma omp barrier
        }
        if (lexi && ops == 1 && !first_in_place && !all_in_place)
            for (int y = y0; y < y1; ++y)
                pk_lp_reorder_row(h->d.l, h->d.nw, first + (size_t)y * h->d.l,
                                  lexi + (size_t)y * h->d.l, 0);
#pragma omp single nowait
        if (!lexi) h->cur = at;
    }
    return PK_OK;
}

/* ---- the backend entry points ------------------------------------------------------------- */
static int lp_kind_of(const char *v)
{
    if (strcmp(v, "omp") == 0) return LP_OMP_AUTO;
    if (strcmp(v, "omp-tb") == 0) return LP_OMP_TB;
    return LP_OMP_SIMD;
}

pk_status pk_omp_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
#ifdef PK_HAVE_OPENMP
    const int nt = desc->threads > 0 ? desc->threads : omp_get_max_threads();
#else
    const int nt = 1;
#endif
    pk_lp_host_plan *h;
    PK_TRY(pk_lp_host_create(desc, nt, &h));
    h->kind = lp_kind_of(h->variant);
    int depth[2];
    (void)pk_param_get(desc->tuning, PK_PARAM_LAPLACE2D_TB_DEPTH, depth);
    /* auto: deeper where each pass goes to memory (2-core Zen 5, 32 MiB L3, 2 threads,
     * `portkern tune`: depth 8 against 4 at 4096^2 x 8 9.2 against 11.3 ms lexi, 7.5 against
     * 9.9 hvfo; at 2048^2 x 10 3.1 against 3.7); 4 where the fields stay in the cache (the
     * Xeon's 300 MiB L3, where 4 was measured best) */
    h->tb_depth = depth[1] ? depth[0]
                           : pk_beyond_llc(2.0 * (double)h->n * sizeof(float)) ? 8 : 4;
    h->scratch_per_thread =
        lp_scratch_floats(desc->l, h->kind, h->tb_depth);
    size_t total;
    if (pk_mul3_size(h->scratch_per_thread, (size_t)h->nt, sizeof(float), &total) != 0 ||
        !(h->scratch = pk_alloc_aligned(total))) {
        const size_t per = h->scratch_per_thread;
        pk_lp_host_destroy(h);
        return pk_fail(PK_ENOMEM, "laplace2d %s: cannot allocate %d x %zu floats of row buffers",
                       desc->variant, nt, per);
    }
    /* The ISA of the hand-vectorised rows, fixed for the plan's life. */
    h->isa = PK_SIMD_GENERIC;
    if (h->kind != LP_OMP_AUTO) {
        pk_status s = pk_simd_level(desc->tuning, PK_PARAM_LAPLACE2D_ISA, pk_cpu_simd(), &h->isa);
        if (s != PK_OK) {
            pk_lp_host_destroy(h);
            return s;
        }
    }
    /* Passes into a second field (lp_omp_steps: where they cannot run in place) stream only
     * when the pair of fields cannot stay in the last-level cache, and only from rows that
     * store their vectors themselves: the portable row (omp, and omp-simd's other
     * lane counts) would compute into a buffer and copy it out, which measured slower than
     * write-allocate (EPYC KVM, 4096^2: omp 31 ms against 22-24 plain; omp-simd 2-5% and
     * omp-tb 11-21% faster streamed). */
    const lp_row_fn row = h->kind == LP_OMP_AUTO ? row_auto : lp_simd_row(desc, h->isa);
    h->stream = pk_beyond_llc(2.0 * (double)h->n * sizeof(float)) && desc->l >= 64 &&
                row != row_auto;
    int force[2]; /* laplace2d.stream: auto, 0, 1: two fields, streamed whatever the size */
    (void)pk_param_get(desc->tuning, PK_PARAM_LAPLACE2D_STREAM, force);
    if (force[0]) h->stream = force[0] == 2;
    h->two_fields = force[0] == 2;
    h->run = pk_omp_lp_run;
    *impl = h;
    return PK_OK;
}

static void lp_omp_init(pk_lp_host_plan *h, lp_omp *o)
{
    const pk_lp_desc *d = &h->d;
    o->h = h;
    o->row = h->kind == LP_OMP_AUTO ? row_auto : lp_simd_row(d, h->isa);
    o->k.l = d->l;
    o->k.nw = d->nw;
    o->k.m = d->l / d->nw;
    o->k.a = d->sigma;
    o->k.inv = d->inv;
}

pk_status pk_omp_lp_run(void *impl, int count, double *kernel_seconds)
{
    pk_lp_host_plan *h = impl;
    lp_omp o;
    lp_omp_init(h, &o);
    const double t0 = pk_now();
    pk_status s = count > 0 ? lp_omp_steps(h, &o, count, NULL) : PK_OK;
    *kernel_seconds = pk_now() - t0;
    return s;
}

/* An hvfo plan on the caller's lexi field, in place: the first pass reads lexi rows and the
 * last writes them, each converted in a thread's scratch rows, so the call moves the bytes
 * of the resident run instead of reordering the whole field in and out (two passes more
 * over memory).  The conversions are inside the kernel's time: *layout_seconds is 0. */
static pk_status pk_omp_lp_execute_canonical(void *impl, float *phi, int count,
                                             double *kernel_seconds, double *layout_seconds)
{
    pk_lp_host_plan *h = impl;
    lp_omp o;
    lp_omp_init(h, &o);
    const double t0 = pk_now();
    pk_status s = count > 0 ? lp_omp_steps(h, &o, count, phi) : PK_OK;
    *kernel_seconds = pk_now() - t0;
    *layout_seconds = 0;
    return s;
}

/* The laplace2d kernel family on this backend (lib/internal.h, pk_lp_ops).  omp-tb first: a
 * call that names no variant and finds no wisdom runs it.  It is omp-simd's row kernel with
 * temporal blocking (plain sweeps where count < tb_depth, the same bits either way), and it
 * was the fastest OpenMP variant in every bench case, quiet, 2-core Xeon 2026-11-29: omp-simd
 * took 1.17-1.74x its time at l = 256 and 1024, 1.22-2.02x at 2048 and 4096
 * (docs/PERFORMANCE.md, "Auto without wisdom"). */
const pk_lp_ops pk_openmp_lp_ops = {
    .variants = "omp-tb,omp-simd,omp",
    .create = pk_omp_lp_create,
    .upload = pk_lp_host_upload,
    .run = pk_omp_lp_run,
    .download = pk_lp_host_download,
    .destroy = pk_lp_host_destroy,
    .execute = pk_lp_host_execute,
    .execute_canonical = pk_omp_lp_execute_canonical,
};
