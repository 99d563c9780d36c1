/* magicfilter3d_simd.c - the "unrolled" and "simd" pass kernels of magicfilter3d
 * (docs/KERNELS.md section 2).  One pass (pk_mf_pass, internal.h): dst[j][d] = sum_k g[k] *
 * src[d][j + k + off], j < nout, for the lines d in [d0, d1).
 *
 * Boundaries: a kernel walks a line in chunks of outputs (mf_chunk_end).  The 16 outputs
 * at the start and the fewer than 24 at the end whose taps leave the line read a small
 * padded copy (wrapped for periodic, zeros for grow and for shrink's rounding tail); the
 * chunks between read the line in place.  So nin < 16, nin = 1, any nout and any [d0, d1)
 * need no special case, lines have no length limit, and nothing is allocated.
 *
 * unrolled: scalar C, 4 lines per step, the 16 taps written out; each transposed dst row
 *   gets 4 contiguous doubles per step.
 *
 * simd: the paper's two-filter SSE kernel (the filter and the filter shifted by one, so
 *   that aligned data loads give two outputs) generalised to width W: the W + 15 shifted
 *   filter copies F_s = (g[s], g[s-1], ..., g[s-W+1]) (zero outside 0..15) sit in an
 *   aligned table and the W outputs j .. j+W-1 of a line are sum_s broadcast(in[j+s]) * F_s,
 *   so every load is an aligned filter vector or a scalar broadcast, never an unaligned
 *   input vector.  Several output vectors per step, register-blocked across lines:
 *   AVX-512F (W = 8) keeps all 23 copies in zmm registers and FMAs 8 lines' output vectors
 *   together (8 independent chains, embedded broadcasts); AVX2+FMA (W = 4, 16 registers)
 *   does 4 lines x 2 output vectors with the copies read from the L1 table.  The lines'
 *   vectors are transposed in registers (8x8, 4x4), so each dst row receives 16 lines =
 *   128 contiguous bytes per visit (64-byte pieces measured ~40% slower as DRAM writes at
 *   power-of-two strides); passes of >= 2 MiB store whole 64-byte lines non-temporally
 *   (no read-for-ownership, no cache-set thrashing at the transposed stride: 1.2-1.9x
 *   faster from 80^3 to 256^3, even at 64^3) and prefetch the next group's input lines
 *   (1.3-1.5x single-thread at 128x126x130 and 256^3).  Portable C (W = 4)
 *   elsewhere.  pk_mf_pass_simd runs the pass's ISA, fixed at plan creation: the best the
 *   CPU has, lowered by magicfilter3d.isa = avx512|avx2|generic (pk_mf_simd_plan).
 *
 * Default ISA, measured on the 2-core Zen 4 KVM (GCC 12 -O3; GFlop/s = 96 n1 n2 n3 / s of
 * the periodic 3-D op, best of many runs on a busy shared host; FMA peak 58.7 per core):
 *                                 avx512f   avx2   generic  (unrolled 10.7, serial 7.0)
 *   simd, 1 thread, 128x126x130      24.0   20.2     6.2
 *   simd, 1 thread, 256^3            24.7   20.5     6.0    (unrolled 10.3, serial 4.9)
 *   omp,  2 threads, 128x126x130     46.8   34.2
 *   omp,  2 threads, 256^3           49.8   39.8
 *   one 16-line chunk in L1          37.5   33 (its FMAs alone: 45)
 * AVX-512 is the default on Zen 4 too, although Zen 4 splits 512-bit FMAs and W = 8 spends
 * more lanes on the zero ends of the copies (16/23 useful vs 16/19): its 32 registers hold
 * the whole table (one embedded-broadcast load per FMA), while AVX2 reloads a copy for every
 * FMA (1.6 loads per FMA) and loses more to its 4x4 transposes and row stores. */
#include "magicfilter3d_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef PK_X86
#include <immintrin.h>
#define MF_T512 __attribute__((target("avx512f,avx512dq")))
#endif

#if defined(__GNUC__)
#define MF_ALIGN64 __attribute__((aligned(64)))
#define MF_UNROLL(n) _Pragma(#n)
#else
#define MF_ALIGN64
#define MF_UNROLL(n)
#endif
#define MF_PRAGMA_UNROLL MF_UNROLL(GCC unroll 32)

#define MF_CH 96 /* outputs per interior chunk (a multiple of 8 and of MF256_SUB) */
#define MF_LG 16 /* lines per simd group: 128 contiguous bytes per dst row */

/* Input positions t0 .. t0 + n - 1 of one line under the pass's rule: the line itself when
 * they are all inside it, else buf filled with the wrapped values (periodic) or zeros
 * outside [0, nin) (grow; shrink only reads outside in its rounding tail). */
static const double *mf_fetch(const pk_mf_pass *p, const double *line, long t0, int n,
                              double *buf)
{
    const long nin = p->nin;
    if (t0 >= 0 && t0 + n <= nin) return line + t0;
    if (p->bc == PK_MF_PERIODIC) {
        long r = t0 < 0 && t0 >= -nin ? t0 + nin : t0 >= 0 && t0 < nin ? t0 : t0 % nin;
        if (r < 0) r += nin;
        for (int i = 0; i < n; r = 0) { /* runs of the line, wrapping */
            const int m = nin - r < n - i ? (int)(nin - r) : n - i;
            for (int c = 0; c < m; ++c) buf[i + c] = line[r + c];
            i += m;
        }
    } else {
        for (int i = 0; i < n; ++i) {
            const long t = t0 + i;
            buf[i] = t >= 0 && t < nin ? line[t] : 0.0;
        }
    }
    return buf;
}

/* The chunk after output j0 of a line: [j0, end).  The outputs at each end whose taps
 * leave the line (wrap, zeros) get chunks of their own (16 outputs at the start, fewer than
 * 24 at the end), read from a padded copy; the chunks between, at most MF_CH outputs and
 * multiples of 8, read the line in place. */
static long mf_chunk_end(const pk_mf_pass *p, long j0)
{
    const long jlo = p->off < 0 ? 16 : 0;  /* -off <= 15 */
    long jhi = (long)p->nin - 15 - p->off; /* outputs from jhi on read past the end */
    jhi = jhi <= jlo ? jlo : jhi / 8 * 8;
    long j1 = j0 < jlo ? jlo : j0 + MF_CH;
    if (j0 < jhi && j1 > jhi) j1 = jhi;
    return j1 < p->nout ? j1 : p->nout;
}

/* ---- unrolled ------------------------------------------------------------------------- */
void pk_mf_pass_unrolled(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                         long d0, long d1)
{
    double buf[4][MF_CH + 16];
    const double g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4], g5 = g[5], g6 = g[6],
                 g7 = g[7], g8 = g[8], g9 = g[9], g10 = g[10], g11 = g[11], g12 = g[12],
                 g13 = g[13], g14 = g[14], g15 = g[15];
    const size_t ndat = (size_t)p->ndat, nin = (size_t)p->nin;
    for (long d = d0; d < d1; d += 4) {
        const int nl = d1 - d < 4 ? (int)(d1 - d) : 4;
        for (long j0 = 0, j1; j0 < p->nout; j0 = j1) {
            j1 = mf_chunk_end(p, j0);
            const int nc = (int)(j1 - j0);
            const double *q[4];
            for (int l = 0; l < nl; ++l)
                q[l] = mf_fetch(p, src + (size_t)(d + l) * nin, j0 + p->off, nc + 15, buf[l]);
            for (int l = nl; l < 4; ++l) q[l] = q[0]; /* computed, never stored */
            const double *a = q[0], *b = q[1], *c = q[2], *e = q[3];
            double *o = dst + (size_t)j0 * ndat + (size_t)d;
#define MF_TAP(k)                                                                             \
    s0 += g##k * a[j + k];                                                                    \
    s1 += g##k * b[j + k];                                                                    \
    s2 += g##k * c[j + k];                                                                    \
    s3 += g##k * e[j + k];
            if (nl == 4) {
                for (int j = 0; j < nc; ++j, o += ndat) {
                    double s0 = g0 * a[j], s1 = g0 * b[j], s2 = g0 * c[j], s3 = g0 * e[j];
                    MF_TAP(1) MF_TAP(2) MF_TAP(3) MF_TAP(4) MF_TAP(5) MF_TAP(6) MF_TAP(7)
                    MF_TAP(8) MF_TAP(9) MF_TAP(10) MF_TAP(11) MF_TAP(12) MF_TAP(13)
                    MF_TAP(14) MF_TAP(15)
                    o[0] = s0;
                    o[1] = s1;
                    o[2] = s2;
                    o[3] = s3;
                }
            } else {
                for (int j = 0; j < nc; ++j, o += ndat) {
                    double s0 = g0 * a[j], s1 = g0 * b[j], s2 = g0 * c[j], s3 = g0 * e[j];
                    MF_TAP(1) MF_TAP(2) MF_TAP(3) MF_TAP(4) MF_TAP(5) MF_TAP(6) MF_TAP(7)
                    MF_TAP(8) MF_TAP(9) MF_TAP(10) MF_TAP(11) MF_TAP(12) MF_TAP(13)
                    MF_TAP(14) MF_TAP(15)
                    (void)s3; /* nl < 4 */
                    o[0] = s0;
                    if (nl > 1) o[1] = s1;
                    if (nl > 2) o[2] = s2;
                }
            }
#undef MF_TAP
        }
    }
}

/* ---- simd: the shared driver ---------------------------------------------------------- */
/* A group kernel: outputs [0, nc) of MF_LG lines (in[l][t]: input position t of the chunk
 * of line l, readable for t < roundup(nc, 8) + 15) to the dst rows o + j * ndat, lanes
 * [0, MF_LG); nt: non-temporal stores where a row allows. */
typedef void (*mf_group_fn)(const double *const *in, const double *F, double *o, size_t ndat,
                            int nc, int nt);

typedef struct mf_isa_impl {
    int w;                /* vector width (doubles): the filter table has w + 15 copies */
    mf_group_fn group;
    void (*fence)(void);  /* after non-temporal stores */
} mf_isa_impl;

/* Passes whose output (and input) is at least this large bypass the caches on store and
 * prefetch the next group's lines: measured from 64^3 (2 MiB per array) upwards. */
#ifndef MF_NT_BYTES
#define MF_NT_BYTES (2u << 20)
#endif

/* Prefetch (into L2) positions [t0, t0 + n) of a line, clipped to it. */
static void mf_prefetch(const double *line, long t0, int n, long nin)
{
#if defined(__GNUC__)
    long t1 = t0 + n;
    if (t0 < 0) t0 = 0;
    if (t1 > nin) t1 = nin;
    for (long t = t0; t < t1; t += 8) __builtin_prefetch(line + t, 0, 2);
#else
    (void)line, (void)t0, (void)n, (void)nin;
#endif
}

long pk_mf_line_lead(const double *dst, long d)
{
    const long off = (long)(((uintptr_t)(dst + d) & 63) / sizeof(double));
    return off ? 8 - off : 0;
}

/* The pass over lines [d0, d1): groups of MF_LG lines, each walked in chunks of outputs
 * (mf_chunk_end).  The groups start where dst's rows start a 64-byte line, so that each row
 * gets whole lines to stream even when dst is off a line (a caller's y at malloc's 16
 * bytes: without this every row store was a partial line, read for ownership, 2x slower at
 * 256^3); the few lines before that and a partial group at the end go through a scratch
 * block. */
static void mf_drive(const mf_isa_impl *k, const pk_mf_pass *p, const double *g,
                     const double *src, double *dst, long d0, long d1)
{
    MF_ALIGN64 double F[(8 + 15) * 8];
    MF_ALIGN64 double buf[MF_LG][MF_CH + 24];
    MF_ALIGN64 double scratch[MF_CH * MF_LG];
    const int w = k->w;
    for (int s = 0; s < w + 15; ++s)
        for (int i = 0; i < w; ++i) F[s * w + i] = s - i >= 0 && s - i < 16 ? g[s - i] : 0.0;
    const size_t ndat = (size_t)p->ndat, nin = (size_t)p->nin;
    const int nt = (double)p->nout * (double)ndat * sizeof(double) >= MF_NT_BYTES;
    const int pf = (double)p->nin * (double)ndat * sizeof(double) >= MF_NT_BYTES;
    const long lead = d0 + pk_mf_line_lead(dst, d0);
    for (long d = d0, dn; d < d1; d = dn) {
        dn = d < lead ? lead : d + MF_LG;
        if (dn > d1) dn = d1;
        const int nl = (int)(dn - d);
        for (long j0 = 0, j1; j0 < p->nout; j0 = j1) {
            j1 = mf_chunk_end(p, j0);
            const int nc = (int)(j1 - j0);
            const double *in[MF_LG];
            for (int l = 0; l < nl; ++l) {
                const double *line = src + (size_t)(d + l) * nin;
                if (pf && dn + l < d1) /* the same piece of the next group's line */
                    mf_prefetch(line + (size_t)nl * nin, j0 + p->off, nc + 15, (long)nin);
                in[l] = mf_fetch(p, line, j0 + p->off, (nc + 7) / 8 * 8 + 15, buf[l]);
            }
            for (int l = nl; l < MF_LG; ++l) in[l] = in[0]; /* computed, never stored */
            double *o = dst + (size_t)j0 * ndat + (size_t)d;
            if (nl == MF_LG) {
                k->group(in, F, o, ndat, nc, nt);
            } else {
                k->group(in, F, scratch, MF_LG, nc, 0);
                for (int j = 0; j < nc; ++j, o += ndat)
                    for (int l = 0; l < nl; ++l) o[l] = scratch[j * MF_LG + l];
            }
        }
    }
    if (nt && k->fence) k->fence();
}

/* ---- simd: portable C (W = 4) --------------------------------------------------------- */
#define MFG_W 4
static void mfg_group(const double *const *in, const double *F, double *o, size_t ndat, int nc,
                      int nt)
{
    double tl[MF_LG][MF_CH + 8];
    const int nb = (nc + 2 * MFG_W - 1) / (2 * MFG_W); /* steps of two output vectors */
    (void)nt;
    for (int l = 0; l < MF_LG; ++l) {
        for (int b = 0; b < nb; ++b) {
            const double *x = in[l] + 2 * MFG_W * b;
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
            for (int s = 0; s < MFG_W + 15; ++s) { /* x[s] into vector 0, x[s + 4] into 1 */
                const double u = x[s], v = x[s + MFG_W], *f = F + s * MFG_W;
                a0 += u * f[0], a1 += u * f[1], a2 += u * f[2], a3 += u * f[3];
                b0 += v * f[0], b1 += v * f[1], b2 += v * f[2], b3 += v * f[3];
            }
            double *t = tl[l] + 2 * MFG_W * b;
            t[0] = a0, t[1] = a1, t[2] = a2, t[3] = a3, t[4] = b0, t[5] = b1, t[6] = b2, t[7] = b3;
        }
    }
    for (int j = 0; j < nc; ++j, o += ndat) /* rows of MF_LG contiguous doubles */
        for (int l = 0; l < MF_LG; ++l) o[l] = tl[l][j];
}
static const mf_isa_impl mf_generic = {MFG_W, mfg_group, NULL};

#ifdef PK_X86
/* ---- simd: AVX-512F (W = 8) ----------------------------------------------------------- */
/* c[i] = lane i of r[0..7] (an 8x8 transpose in registers). */
MF_T512 static inline void mf512_transpose(const __m512d r[8], __m512d c[8])
{
    /* t: pairs of lines interleaved; u: lines 0-3 / 4-7 of columns (i, i+4) */
    const __m512d t0 = _mm512_unpacklo_pd(r[0], r[1]), t1 = _mm512_unpackhi_pd(r[0], r[1]),
                  t2 = _mm512_unpacklo_pd(r[2], r[3]), t3 = _mm512_unpackhi_pd(r[2], r[3]),
                  t4 = _mm512_unpacklo_pd(r[4], r[5]), t5 = _mm512_unpackhi_pd(r[4], r[5]),
                  t6 = _mm512_unpacklo_pd(r[6], r[7]), t7 = _mm512_unpackhi_pd(r[6], r[7]);
    const __m512d u0 = _mm512_shuffle_f64x2(t0, t2, 0x88), u2 = _mm512_shuffle_f64x2(t0, t2, 0xdd),
                  u1 = _mm512_shuffle_f64x2(t1, t3, 0x88), u3 = _mm512_shuffle_f64x2(t1, t3, 0xdd),
                  u4 = _mm512_shuffle_f64x2(t4, t6, 0x88), u6 = _mm512_shuffle_f64x2(t4, t6, 0xdd),
                  u5 = _mm512_shuffle_f64x2(t5, t7, 0x88), u7 = _mm512_shuffle_f64x2(t5, t7, 0xdd);
    c[0] = _mm512_shuffle_f64x2(u0, u4, 0x88);
    c[4] = _mm512_shuffle_f64x2(u0, u4, 0xdd);
    c[1] = _mm512_shuffle_f64x2(u1, u5, 0x88);
    c[5] = _mm512_shuffle_f64x2(u1, u5, 0xdd);
    c[2] = _mm512_shuffle_f64x2(u2, u6, 0x88);
    c[6] = _mm512_shuffle_f64x2(u2, u6, 0xdd);
    c[3] = _mm512_shuffle_f64x2(u3, u7, 0x88);
    c[7] = _mm512_shuffle_f64x2(u3, u7, 0xdd);
}

/* 16 doubles (lines 0-7 in lo, 8-15 in hi) to q: whole 64-byte lines non-temporal when
 * asked, the partial ones plain (masked stores measured 3x slower on Zen 4). */
MF_T512 static inline void mf512_row16(double *q, __m512d lo, __m512d hi, int nt)
{
    const uintptr_t a = (uintptr_t)q & 63;
    if (nt && a == 0) {
        _mm512_stream_pd(q, lo);
        _mm512_stream_pd(q + 8, hi);
    } else if (nt && a == 32) {
        _mm256_storeu_pd(q, _mm512_castpd512_pd256(lo));
        _mm512_stream_pd(q + 4, _mm512_shuffle_f64x2(lo, hi, 0x4e));
        _mm256_storeu_pd(q + 12, _mm512_extractf64x4_pd(hi, 1));
    } else {
        _mm512_storeu_pd(q, lo);
        _mm512_storeu_pd(q + 8, hi);
    }
}

/* Per 8 outputs (one vector per line): for each half of the lines, the 8 lines' output
 * vectors accumulate broadcast(in[l][j + s]) * F_s over the 23 filter copies (all held in
 * registers; 8 independent FMA chains), are transposed, and give 8 rows of 8 lines.  Each
 * line's input is prefetched into L1 MF512_L1_AHEAD doubles ahead of the window (the pass's
 * own prefetch brings the lines only into L2; the broadcasts that opened a new 64-byte line
 * were where the samples piled up): 4-5% on 2 threads at 128x126x130 and 256^3 on the
 * Zen 5 KVM, plans alternated in one process; 16 doubles ahead was no better, 56 and 80
 * slower. */
#define MF512_L1_AHEAD 40
MF_T512 static void mf512_group(const double *const *in, const double *F, double *o,
                                size_t ndat, int nc, int nt)
{
    MF_ALIGN64 double rb[8 * 8]; /* lines 0-7 of the current 8 rows */
    __m512d f[23];
    MF_PRAGMA_UNROLL
    for (int s = 0; s < 23; ++s) f[s] = _mm512_load_pd(F + 8 * s);
    for (int j = 0; j < nc; j += 8) {
        const int m = nc - j < 8 ? nc - j : 8;
        double *q = o + (size_t)j * ndat;
        for (int h = 0; h < 2; ++h) {
            const double *x[8];
            __m512d a[8], c[8];
            MF_PRAGMA_UNROLL
            for (int l = 0; l < 8; ++l) {
                x[l] = in[8 * h + l] + j;
                _mm_prefetch((const char *)(x[l] + MF512_L1_AHEAD), _MM_HINT_T0);
                a[l] = _mm512_mul_pd(_mm512_set1_pd(x[l][0]), f[0]);
            }
            MF_PRAGMA_UNROLL
            for (int s = 1; s < 23; ++s) {
                MF_PRAGMA_UNROLL
                for (int l = 0; l < 8; ++l)
                    a[l] = _mm512_fmadd_pd(_mm512_set1_pd(x[l][s]), f[s], a[l]);
            }
            mf512_transpose(a, c);
            if (h == 0) {
                MF_PRAGMA_UNROLL
                for (int i = 0; i < 8; ++i) _mm512_store_pd(rb + 8 * i, c[i]);
            } else if (m == 8) {
                MF_PRAGMA_UNROLL
                for (int i = 0; i < 8; ++i)
                    mf512_row16(q + (size_t)i * ndat, _mm512_load_pd(rb + 8 * i), c[i], nt);
            } else {
                for (int i = 0; i < m; ++i)
                    mf512_row16(q + (size_t)i * ndat, _mm512_load_pd(rb + 8 * i), c[i], nt);
            }
        }
    }
}
MF_T512 static void mf512_fence(void) { _mm_sfence(); }
static const mf_isa_impl mf_avx512 = {8, mf512_group, mf512_fence};

/* ---- simd: AVX2 + FMA (W = 4) --------------------------------------------------------- */
/* Four lines, outputs [j0, j0 + n) (n <= MF256_SUB), 8 at a time (two vectors per line): each
 * broadcast input element goes into the output vectors it touches (8 independent FMA
 * chains; the 19 filter copies come from the L1-resident table); two 4x4 transposes give
 * 8 rows of the 4 lines, stored into the row block rb (row stride MF_LG). */
PK_T256 static inline void mf256_quarter(const double *const *in, const double *F, double *rb,
                                         int j0, int n)
{
    for (int j = 0; j < n; j += 8) {
        __m256d a[4][2];
        MF_PRAGMA_UNROLL
        for (int l = 0; l < 4; ++l) {
            a[l][0] = _mm256_setzero_pd();
            a[l][1] = _mm256_setzero_pd();
        }
        MF_PRAGMA_UNROLL
        for (int s = 0; s < 23; ++s) {
            MF_PRAGMA_UNROLL
            for (int l = 0; l < 4; ++l) {
                const __m256d v = _mm256_broadcast_sd(in[l] + j0 + j + s);
                if (s < 19) a[l][0] = _mm256_fmadd_pd(v, _mm256_load_pd(F + 4 * s), a[l][0]);
                if (s >= 4)
                    a[l][1] = _mm256_fmadd_pd(v, _mm256_load_pd(F + 4 * (s - 4)), a[l][1]);
            }
        }
        MF_PRAGMA_UNROLL
        for (int b = 0; b < 2; ++b) {
            const __m256d t0 = _mm256_unpacklo_pd(a[0][b], a[1][b]),
                          t1 = _mm256_unpackhi_pd(a[0][b], a[1][b]),
                          t2 = _mm256_unpacklo_pd(a[2][b], a[3][b]),
                          t3 = _mm256_unpackhi_pd(a[2][b], a[3][b]);
            double *r = rb + (size_t)(j + 4 * b) * MF_LG;
            _mm256_store_pd(r, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_store_pd(r + MF_LG, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_store_pd(r + 2 * MF_LG, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_store_pd(r + 3 * MF_LG, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
    }
}

/* Rows [i0, i1) of a row block (16 lines each) to q + i * ndat. */
PK_T256 static inline void mf256_rows(const double *rb, int i0, int i1, double *q, size_t ndat,
                                      int nt)
{
    for (int i = i0; i < i1; ++i) {
        const double *r = rb + (size_t)i * MF_LG;
        double *d = q + (size_t)i * ndat;
        const __m256d v0 = _mm256_load_pd(r), v1 = _mm256_load_pd(r + 4),
                      v2 = _mm256_load_pd(r + 8), v3 = _mm256_load_pd(r + 12);
        const uintptr_t a = (uintptr_t)d & 63;
        if (nt && a == 0) {
            _mm256_stream_pd(d, v0);
            _mm256_stream_pd(d + 4, v1);
            _mm256_stream_pd(d + 8, v2);
            _mm256_stream_pd(d + 12, v3);
        } else if (nt && a == 32) { /* the middle 64-byte line non-temporal */
            _mm256_storeu_pd(d, v0);
            _mm256_stream_pd(d + 4, v1);
            _mm256_stream_pd(d + 8, v2);
            _mm256_storeu_pd(d + 12, v3);
        } else {
            _mm256_storeu_pd(d, v0);
            _mm256_storeu_pd(d + 4, v1);
            _mm256_storeu_pd(d + 8, v2);
            _mm256_storeu_pd(d + 12, v3);
        }
    }
}

/* Sub-chunks of MF256_SUB outputs: the four quarters of the lines into a row block, and
 * after each quarter a quarter of the previous sub-chunk's rows (128 bytes each) out, so
 * that the stores interleave with the FMAs (a burst of stores at the end of a chunk
 * measured 10-15% slower). */
#define MF256_SUB 48 /* a multiple of 8 dividing MF_CH; 16 and 32 measured slower */
PK_T256 static void mf256_group(const double *const *in, const double *F, double *o,
                                size_t ndat, int nc, int nt)
{
    MF_ALIGN64 double rb[2][MF256_SUB * MF_LG];
    const int nsub = (nc + MF256_SUB - 1) / MF256_SUB, rq = MF256_SUB / 4;
    for (int sc = 0; sc <= nsub; ++sc) {
        const int j0 = MF256_SUB * sc;
        const int n = nc - j0 < MF256_SUB ? nc - j0 : MF256_SUB;                /* this one */
        const int pn = sc == 0 ? 0 : nc - j0 < 0 ? nc - j0 + MF256_SUB : MF256_SUB; /* previous */
        double *const cur = rb[sc & 1];
        const double *const prev = rb[(sc + 1) & 1];
        double *const pq = o + (size_t)(j0 - MF256_SUB) * ndat; /* used only for sc > 0 */
        MF_UNROLL(GCC unroll 4)
        for (int qd = 0; qd < 4; ++qd) {
            if (sc < nsub) mf256_quarter(in + 4 * qd, F, cur + 4 * qd, j0, n);
            const int i0 = rq * qd < pn ? rq * qd : pn, i1 = rq * qd + rq < pn ? rq * qd + rq : pn;
            if (i0 < i1) mf256_rows(prev, i0, i1, pq, ndat, nt);
        }
    }
}
PK_T256 static void mf256_fence(void) { _mm_sfence(); }
static const mf_isa_impl mf_avx2 = {4, mf256_group, mf256_fence};
#endif /* PK_X86 */

/* ---- ISA choice ----------------------------------------------------------------------- */

/* What the CPU can run: the AVX-512 passes need avx512dq as well. */
static int mf_cpu_isa(void)
{
    const int level = pk_cpu_simd();
#ifdef PK_X86
    if (level == PK_SIMD_AVX512 && !__builtin_cpu_supports("avx512dq")) return PK_SIMD_AVX2;
#endif
    return level;
}

/* The widest (AVX-512 measured fastest on Zen 4 too: file header), lowered by
 * magicfilter3d.isa. */
pk_status pk_mf_simd_isa(const pk_tuning *t, int *isa)
{
    return pk_simd_level(t, PK_PARAM_MAGICFILTER3D_ISA, mf_cpu_isa(), isa);
}

pk_status pk_mf_simd_plan(pk_mf_host_plan *h)
{
    int isa;
    PK_TRY(pk_mf_simd_isa(h->d.tuning, &isa));
    for (int a = 0; a < 3; ++a) h->d.pass[a].isa = isa;
    return PK_OK;
}

void pk_mf_pass_simd(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                     long d0, long d1)
{
    const mf_isa_impl *k = &mf_generic;
#ifdef PK_X86
    const int isa = p->isa;
    if (isa == PK_SIMD_AVX512)
        k = &mf_avx512;
    else if (isa == PK_SIMD_AVX2)
        k = &mf_avx2;
#endif
    mf_drive(k, p, g, src, dst, d0, d1);
}
