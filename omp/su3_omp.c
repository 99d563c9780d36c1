/* su3_omp.c - su3 on the OpenMP backend (docs/KERNELS.md section 4b), two variants:
 *   omp-simd  hand-vectorised complex arithmetic (AVX-512F or AVX2+FMA intrinsics, chosen
 *             once from the CPU; PORTKERN_S3_ISA=avx512|avx2|generic lowers it), one kernel
 *             per layout family, chi written with non-temporal stores when the arrays are
 *             larger than the caches;
 *   omp       the plain C loops of lib/su3_serial.c, vectorised by the compiler.
 * Both split the padded sites between the threads in one contiguous static range each
 * (pk_s3_share: whole hvfo blocks, whole 64-byte lines of every vfo row), the same ranges
 * in every run; the plan's arrays, made by its first upload (a plan that only executes on
 * the caller's arrays never makes them), are first touched by that upload, and uploaded and
 * downloaded, by the threads that later compute on them, so their pages sit on those
 * threads' NUMA nodes.
 *
 * The hand-vectorised kernels (per site s, chi[c][k] = sum_c' u[c][c'] psi[c'][k]):
 *  - aos, short, padded, recon12: one site at a time.  The 4 spins of psi[c'] are 4 complex
 *    numbers = one 512-bit vector (two 256-bit ones), so chi[c][0..3] = sum_c' u[c][c'] *
 *    psi[c'][0..3] is a complex scalar times a complex vector: with q = (-im, re) of psi
 *    (one in-lane swap and a sign, once per c'), chi = sum re(u) psi + im(u) q, six FMAs with
 *    broadcast link elements per output vector and no shuffle in the sum.  short and recon12
 *    rebuild the missing elements in scalar code first (pk_s3_from_*: 8 or 24 flops).
 *  - vfo: a vector holds the same element of 4 (2) consecutive sites, complex interleaved;
 *    the link's real and imaginary parts are duplicated across each pair (movedup /
 *    permute), psi gets the same swapped-and-signed copy q, so again only FMAs in the sum,
 *    but 30 shuffles per 4 sites and 33 concurrent streams.  A call on AoS arrays runs vfo
 *    in registers (s3_vfo512_aos, s3_vfo256_aos: lib/su3_host.h aos_range): 4 x 4 (2 x 2)
 *    transposes of 16-byte lanes between the sites' AoS vectors and vfo's, the same FMAs.
 *  - hvfo: real and imaginary parts of nw sites are separate vectors: complex arithmetic is
 *    plain vertical FMAs (re = sum ur pr - ui pi, im = sum ur pi + ui pr), 144 FMAs per 8
 *    sites, no shuffles at all.  Needs nw a multiple of the vector width (8 for AVX-512, 4
 *    for AVX2); another nw runs the plain loop (the plan's reason says so).  A call on AoS
 *    arrays with nw a multiple of 8 runs it in registers (s3_hvfo512_aos): vfo's 4-site
 *    transposes, then in-lane unpacks into real and imaginary vectors of 8 sites.
 * Non-temporal stores: chi is written once and not read by the kernel, so streaming it
 * saves the read-for-ownership of every chi line (192 of the 720 bytes an ordinary store
 * moves per site) and keeps u and psi's lines in the caches.  They pay off only when the
 * arrays do not fit in the last-level cache: default on when u + psi + chi exceed
 * S3_STREAM_MIN; su3.stream=0|1 forces it.  The vfo / hvfo rows are 64-byte aligned
 * (pk_alloc_aligned, the layouts' padding), as their loads and stores need.  The AoS-spinor
 * kernels load and store unaligned, so plan_execute runs them on a caller's arrays at any
 * multiple of 8 bytes (malloc's 16, numpy's); with AVX-512 their chi is streamed from any
 * such offset (whole lines assembled from two output vectors, s3_aos512_shifted), with AVX2
 * only when it starts on a line. */
#include "su3_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif

#ifdef PK_X86
#include <immintrin.h>
#endif

/* Arrays (u + psi + chi) from this size on get non-temporal chi stores: twice the 32 MiB L3
 * of the build machine's EPYC, so a working set that the L3 still holds keeps its chi in
 * the cache. */
#define S3_STREAM_MIN ((size_t)64 << 20)


typedef void (*s3_range_fn)(const pk_s3_desc *d, const double *u, const double *psi,
                            double *chi, size_t s0, size_t s1, int stream);

static void s3_plain(const pk_s3_desc *d, const double *u, const double *psi, double *chi,
                     size_t s0, size_t s1, int stream)
{
    (void)stream;
    pk_s3_plain_range(d, u, psi, chi, s0, s1);
}

#ifdef PK_X86
/* ---- AVX-512F ----------------------------------------------------------------------------- */
PK_T512 static inline void s3_put512(double *p, __m512d v, int stream)
{
    if (stream)
        _mm512_stream_pd(p, v);
    else
        _mm512_storeu_pd(p, v);
}

/* The link of site s in an AoS-like layout as 18 doubles: in place, or rebuilt into m. */
static inline const double *s3_link(const pk_s3_desc *d, const double *u, size_t s, double *m)
{
    const size_t us = pk_s3_u_stride(d);
    switch (d->layout) {
    case PK_SU3_SHORT: pk_s3_from_short(u + us * s, m); return m;
    case PK_SU3_RECON12: pk_s3_from_recon12(u + us * s, m); return m;
    default: return u + us * s; /* aos, padded */
    }
}

/* chi's three output vectors of site s (AoS-spinor layouts), into a[3]. */
PK_T512 static inline void s3_aos512_site(const pk_s3_desc *d, const double *u,
                                          const double *psi, size_t s, __m512d a[3])
{
    const __m512d zero = _mm512_setzero_pd();
    double m[18];
    const double *U = s3_link(d, u, s, m), *P = psi + 24 * s;
    __m512d p[3], q[3];
    for (int cp = 0; cp < 3; ++cp) {
        p[cp] = _mm512_loadu_pd(P + 8 * cp); /* psi[c'][0..3]: re, im interleaved */
        const __m512d sw = _mm512_permute_pd(p[cp], 0x55);   /* (im, re) */
        q[cp] = _mm512_mask_sub_pd(sw, 0x55, zero, sw);      /* (-im, re) */
    }
    for (int c = 0; c < 3; ++c) {
        const double *r = U + 6 * c;
        __m512d x = _mm512_mul_pd(_mm512_set1_pd(r[0]), p[0]);
        x = _mm512_fmadd_pd(_mm512_set1_pd(r[1]), q[0], x);
        x = _mm512_fmadd_pd(_mm512_set1_pd(r[2]), p[1], x);
        x = _mm512_fmadd_pd(_mm512_set1_pd(r[3]), q[1], x);
        x = _mm512_fmadd_pd(_mm512_set1_pd(r[4]), p[2], x);
        a[c] = _mm512_fmadd_pd(_mm512_set1_pd(r[5]), q[2], x);
    }
}

/* Streaming chi that starts o doubles (1..7) past a 64-byte line (malloc's and numpy's 16
 * bytes): the output is one run of doubles written 8 at a time in order, so each whole line
 * of it is the last o doubles of one output vector and the first 8 - o of the next (a
 * two-source permute); the partial first and last lines, which a neighbouring thread's range
 * may share, get ordinary masked stores.  Saves the read-for-ownership of chi as the aligned
 * case does. */
typedef struct s3_shifted512 {
    double *line; /* the next line to write, 64-byte aligned */
    __m512d prev; /* the vector before: its last o doubles start the next line */
    __m512i idx;
    unsigned o;
    int first;
} s3_shifted512;

PK_T512 static inline void s3_shifted512_init(s3_shifted512 *w, double *out, unsigned o)
{
    w->line = out - o;
    w->prev = _mm512_setzero_pd();
    w->idx = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi64(8 - (long long)o));
    w->o = o;
    w->first = 1;
}

PK_T512 static inline void s3_shifted512_put(s3_shifted512 *w, __m512d v)
{
    const __m512d x = _mm512_permutex2var_pd(w->prev, w->idx, v);
    if (w->first) /* its 8 - o doubles end the first, partial line */
        _mm512_mask_storeu_pd(w->line, (__mmask8)(0xffu << w->o), x);
    else
        _mm512_stream_pd(w->line, x);
    w->first = 0;
    w->line += 8;
    w->prev = v;
}

PK_T512 static inline void s3_shifted512_end(s3_shifted512 *w)
{
    if (!w->first)
        _mm512_mask_storeu_pd(w->line, (__mmask8)((1u << w->o) - 1),
                              _mm512_permutex2var_pd(w->prev, w->idx, w->prev));
}

PK_T512 static void s3_aos512_shifted(const pk_s3_desc *d, const double *u, const double *psi,
                                      double *chi, size_t s0, size_t s1, unsigned o)
{
    s3_shifted512 w;
    s3_shifted512_init(&w, chi + 24 * s0, o);
    for (size_t s = s0; s < s1; ++s) {
        __m512d a[3];
        s3_aos512_site(d, u, psi, s, a);
        for (int c = 0; c < 3; ++c) s3_shifted512_put(&w, a[c]);
    }
    s3_shifted512_end(&w);
}

PK_T512 static void s3_aos512(const pk_s3_desc *d, const double *u, const double *psi,
                              double *chi, size_t s0, size_t s1, int stream)
{
    const unsigned o = (unsigned)((uintptr_t)(chi + 24 * s0) % 64 / sizeof(double));
    if (stream && o) {
        s3_aos512_shifted(d, u, psi, chi, s0, s1, o);
        return;
    }
    for (size_t s = s0; s < s1; ++s) {
        __m512d a[3];
        s3_aos512_site(d, u, psi, s, a);
        for (int c = 0; c < 3; ++c) s3_put512(chi + 24 * s + 8 * c, a[c], stream);
    }
}

/* vfo's chi[c][k] (4 sites): sum over c' of u[c][c'] psi[c'][k], with ur / ui the link row's
 * real / imaginary parts duplicated per site, p psi[c'][k] at p[4 c' + k] and q its (-im, re):
 * six FMAs.  The plan's kernel and the one call's in registers both sum here: the same bits. */
PK_T512 static inline __m512d s3_vfo_sum512(const __m512d ur[3], const __m512d ui[3],
                                            const __m512d *p, const __m512d *q, int k)
{
    __m512d a = _mm512_mul_pd(ur[0], p[k]);
    a = _mm512_fmadd_pd(ui[0], q[k], a);
    a = _mm512_fmadd_pd(ur[1], p[4 + k], a);
    a = _mm512_fmadd_pd(ui[1], q[4 + k], a);
    a = _mm512_fmadd_pd(ur[2], p[8 + k], a);
    return _mm512_fmadd_pd(ui[2], q[8 + k], a);
}

/* hvfo's chi[c][k] (8 sites), real and imaginary parts: r, i the link row c's, pr / pi psi's
 * [c'][k] at pr[c' step]; plain vertical FMAs.  Shared as s3_vfo_sum512 is. */
PK_T512 static inline void s3_hvfo_sum512(const __m512d *r, const __m512d *i, const __m512d *pr,
                                          const __m512d *pi, int step, __m512d *re_out,
                                          __m512d *im_out)
{
    __m512d re = _mm512_mul_pd(r[0], pr[0]), im = _mm512_mul_pd(r[0], pi[0]);
    re = _mm512_fnmadd_pd(i[0], pi[0], re);
    im = _mm512_fmadd_pd(i[0], pr[0], im);
    re = _mm512_fmadd_pd(r[1], pr[step], re);
    im = _mm512_fmadd_pd(r[1], pi[step], im);
    re = _mm512_fnmadd_pd(i[1], pi[step], re);
    im = _mm512_fmadd_pd(i[1], pr[step], im);
    re = _mm512_fmadd_pd(r[2], pr[2 * step], re);
    im = _mm512_fmadd_pd(r[2], pi[2 * step], im);
    *re_out = _mm512_fnmadd_pd(i[2], pi[2 * step], re);
    *im_out = _mm512_fmadd_pd(i[2], pr[2 * step], im);
}

PK_T512 static void s3_vfo512(const pk_s3_desc *d, const double *u, const double *psi,
                              double *chi, size_t s0, size_t s1, int stream)
{
    const size_t ns = d->nsites;
    const __m512d zero = _mm512_setzero_pd();
    for (size_t s = s0; s < s1; s += 4) { /* 4 sites: one 64-byte line of every row */
        __m512d p[12], q[12];
        for (int e = 0; e < 12; ++e) {
            p[e] = _mm512_load_pd(psi + 2 * ((size_t)e * ns + s));
            const __m512d sw = _mm512_permute_pd(p[e], 0x55);
            q[e] = _mm512_mask_sub_pd(sw, 0x55, zero, sw);
        }
        for (int c = 0; c < 3; ++c) {
            __m512d ur[3], ui[3];
            for (int cp = 0; cp < 3; ++cp) {
                const __m512d v = _mm512_load_pd(u + 2 * ((size_t)(3 * c + cp) * ns + s));
                ur[cp] = _mm512_movedup_pd(v);        /* (re, re) per site */
                ui[cp] = _mm512_permute_pd(v, 0xff);  /* (im, im) */
            }
            for (int k = 0; k < 4; ++k)
                s3_put512(chi + 2 * ((size_t)(4 * c + k) * ns + s),
                          s3_vfo_sum512(ur, ui, p, q, k), stream);
        }
    }
}

PK_T512 static void s3_hvfo512(const pk_s3_desc *d, const double *u, const double *psi,
                               double *chi, size_t s0, size_t s1, int stream)
{
    const size_t nw = (size_t)d->nw;
    for (size_t b = s0 / nw; b < s1 / nw; ++b)
        for (size_t w = 0; w < nw; w += 8) {
            const double *U = u + 18 * nw * b + w, *P = psi + 24 * nw * b + w;
            double *X = chi + 24 * nw * b + w;
            __m512d ur[9], ui[9];
            for (int e = 0; e < 9; ++e) {
                ur[e] = _mm512_load_pd(U + (size_t)(2 * e) * nw);
                ui[e] = _mm512_load_pd(U + (size_t)(2 * e + 1) * nw);
            }
            for (int k = 0; k < 4; ++k) {
                __m512d pr[3], pi[3];
                for (int cp = 0; cp < 3; ++cp) {
                    pr[cp] = _mm512_load_pd(P + (size_t)(2 * (4 * cp + k)) * nw);
                    pi[cp] = _mm512_load_pd(P + (size_t)(2 * (4 * cp + k) + 1) * nw);
                }
                for (int c = 0; c < 3; ++c) {
                    __m512d re, im;
                    s3_hvfo_sum512(ur + 3 * c, ui + 3 * c, pr, pi, 1, &re, &im);
                    s3_put512(X + (size_t)(2 * (4 * c + k)) * nw, re, stream);
                    s3_put512(X + (size_t)(2 * (4 * c + k) + 1) * nw, im, stream);
                }
            }
        }
}

/* vfo's kernel on the caller's AoS arrays (the one call's fused path): vfo's arithmetic of
 * s3_vfo512, bit for bit, with the layout only in registers.  For 4 sites, each AoS spinor
 * is three vectors of 4 complex (c' = 0, 1, 2; k = 0..3): a 4 x 4 transpose of 16-byte lanes
 * turns the 4 sites' c' vectors into vfo's element vectors psi[c'][k] (4 sites each), and
 * chi's 12 element vectors go back the same way; the link's 9 elements are four 16-byte
 * pieces each.  No block round trip through memory (the generic fused call packs, computes
 * and unpacks blocks in L1; perf had those packs as most of the one call). */
PK_T512 static inline void s3_t4x4_512(__m512d r[4])
{
    const __m512d t0 = _mm512_shuffle_f64x2(r[0], r[1], 0x44); /* r0 lanes 0 1, r1 lanes 0 1 */
    const __m512d t1 = _mm512_shuffle_f64x2(r[0], r[1], 0xee); /* r0 lanes 2 3, r1 lanes 2 3 */
    const __m512d t2 = _mm512_shuffle_f64x2(r[2], r[3], 0x44);
    const __m512d t3 = _mm512_shuffle_f64x2(r[2], r[3], 0xee);
    r[0] = _mm512_shuffle_f64x2(t0, t2, 0x88); /* lane 0 of r0, r1, r2, r3 */
    r[1] = _mm512_shuffle_f64x2(t0, t2, 0xdd);
    r[2] = _mm512_shuffle_f64x2(t1, t3, 0x88);
    r[3] = _mm512_shuffle_f64x2(t1, t3, 0xdd);
}

/* Complex element e of the links of 4 consecutive AoS sites, one per 16-byte lane. */
PK_T512 static inline __m512d s3_link4_512(const double *u, int e)
{
    const double *p = u + 2 * e;
    __m512 v = _mm512_castps128_ps512(_mm_castpd_ps(_mm_loadu_pd(p)));
    v = _mm512_insertf32x4(v, _mm_castpd_ps(_mm_loadu_pd(p + PK_S3_U_AOS)), 1);
    v = _mm512_insertf32x4(v, _mm_castpd_ps(_mm_loadu_pd(p + 2 * PK_S3_U_AOS)), 2);
    v = _mm512_insertf32x4(v, _mm_castpd_ps(_mm_loadu_pd(p + 3 * PK_S3_U_AOS)), 3);
    return _mm512_castps_pd(v);
}

/* chi of 4 sites from u, psi (AoS): out[3 s + c] = chi[c][0..3] of site s, chi's order. */
PK_T512 static inline void s3_vfo512_aos4(const double *u, const double *psi, __m512d out[12])
{
    const __m512d zero = _mm512_setzero_pd();
    __m512d p[12], q[12];
    for (int cp = 0; cp < 3; ++cp) { /* p[4 c' + k]: psi[c'][k] of the 4 sites */
        __m512d r[4];
        for (int s = 0; s < 4; ++s) r[s] = _mm512_loadu_pd(psi + PK_S3_SPINOR * s + 8 * cp);
        s3_t4x4_512(r);
        for (int k = 0; k < 4; ++k) {
            p[4 * cp + k] = r[k];
            const __m512d sw = _mm512_permute_pd(r[k], 0x55);
            q[4 * cp + k] = _mm512_mask_sub_pd(sw, 0x55, zero, sw);
        }
    }
    for (int c = 0; c < 3; ++c) {
        __m512d ur[3], ui[3], a[4];
        for (int cp = 0; cp < 3; ++cp) {
            const __m512d v = s3_link4_512(u, 3 * c + cp);
            ur[cp] = _mm512_movedup_pd(v);
            ui[cp] = _mm512_permute_pd(v, 0xff);
        }
        for (int k = 0; k < 4; ++k) a[k] = s3_vfo_sum512(ur, ui, p, q, k);
        s3_t4x4_512(a); /* a[s]: chi[c][0..3] of site s */
        for (int s = 0; s < 4; ++s) out[3 * s + c] = a[s];
    }
}

/* stream: non-temporal chi stores, from a line (aligned) or shifted (s3_shifted512). */
/* A fused kernel's groups of n sites (4: vfo, 8: hvfo) on [s0, s1): each group's chi
 * vectors written in chi's order, non-temporal where stream says (from a line, or shifted by
 * s3_shifted512); the last group of fewer sites computed on zero sites (the layouts'
 * padding) in a local copy.  prefetch: u and psi of the group after next are prefetched,
 * for hvfo, whose group of ~460 instructions fills the out-of-order window, so that its
 * loads began only as the group before ended: 2 threads at nv 3.9 M, 49.5-57.6 -> 37.5-39.0
 * ms (one thread 79-81 -> 44.6-45.4); vfo's groups are half as long (35.6 -> 38.5 ms with). */
typedef void (*s3_group512_fn)(const double *u, const double *psi, __m512d *out);

PK_T512 static inline void s3_fused512(s3_group512_fn group, size_t n, int prefetch,
                                       const double *u, const double *psi, double *chi,
                                       size_t s0, size_t s1, int stream)
{
    const unsigned o = (unsigned)((uintptr_t)(chi + PK_S3_SPINOR * s0) % 64 / sizeof(double));
    const int shifted = stream && o;
    s3_shifted512 w;
    s3_shifted512_init(&w, chi + PK_S3_SPINOR * s0, o);
    __m512d out[24];
    size_t s = s0;
    for (; s + n <= s1; s += n) {
        if (prefetch && s + 3 * n <= s1) { /* the group after next */
            const char *pu = (const char *)(u + PK_S3_U_AOS * (s + 2 * n));
            const char *pp = (const char *)(psi + PK_S3_SPINOR * (s + 2 * n));
            for (size_t l = 0; l < n * PK_S3_U_AOS / 8; ++l) /* 64-byte lines */
                _mm_prefetch(pu + 64 * l, _MM_HINT_T0);
            for (size_t l = 0; l < n * PK_S3_SPINOR / 8; ++l)
                _mm_prefetch(pp + 64 * l, _MM_HINT_T0);
        }
        group(u + PK_S3_U_AOS * s, psi + PK_S3_SPINOR * s, out);
        double *x = chi + PK_S3_SPINOR * s;
        for (size_t v = 0; v < 3 * n; ++v) {
            if (shifted)
                s3_shifted512_put(&w, out[v]);
            else
                s3_put512(x + 8 * v, out[v], stream);
        }
    }
    if (s < s1) {
        double ut[8 * PK_S3_U_AOS] = {0}, pt[8 * PK_S3_SPINOR] = {0};
        memcpy(ut, u + PK_S3_U_AOS * s, (s1 - s) * PK_S3_U_AOS * sizeof(double));
        memcpy(pt, psi + PK_S3_SPINOR * s, (s1 - s) * PK_S3_SPINOR * sizeof(double));
        group(ut, pt, out);
        for (size_t v = 0; v < 3 * (s1 - s); ++v) {
            if (shifted)
                s3_shifted512_put(&w, out[v]);
            else
                _mm512_storeu_pd(chi + PK_S3_SPINOR * s + 8 * v, out[v]);
        }
    }
    if (shifted) s3_shifted512_end(&w);
}

PK_T512 static void s3_vfo512_aos(const double *u, const double *psi, double *chi, size_t s0,
                                  size_t s1, int stream)
{
    s3_fused512(s3_vfo512_aos4, 4, 0, u, psi, chi, s0, s1, stream);
}

/* hvfo's kernel on the caller's AoS arrays (the one call's fused path, nw a multiple of 8):
 * s3_hvfo512's vertical FMAs, bit for bit, on 8 sites whose lanes are in the order 0 4 1 5
 * 2 6 3 7 (each lane is a site of its own; chi goes back to the sites it came from).  Both
 * halves of 4 sites are made as in s3_vfo512_aos4 (complex interleaved), then one in-lane
 * unpack pair splits them into real and imaginary parts: cheaper than 8 x 8 transposes of
 * doubles, which measured no faster than the L1 blocks on 2 threads. */
PK_T512 static inline void s3_hvfo512_aos8(const double *u, const double *psi, __m512d out[24])
{
    const double *u4 = u + 4 * PK_S3_U_AOS, *psi4 = psi + 4 * PK_S3_SPINOR;
    __m512d pr[12], pi[12]; /* [4 c' + k]: psi[c'][k] */
    for (int cp = 0; cp < 3; ++cp) {
        __m512d lo[4], hi[4];
        for (int s = 0; s < 4; ++s) {
            lo[s] = _mm512_loadu_pd(psi + PK_S3_SPINOR * s + 8 * cp);
            hi[s] = _mm512_loadu_pd(psi4 + PK_S3_SPINOR * s + 8 * cp);
        }
        s3_t4x4_512(lo);
        s3_t4x4_512(hi);
        for (int k = 0; k < 4; ++k) {
            pr[4 * cp + k] = _mm512_unpacklo_pd(lo[k], hi[k]);
            pi[4 * cp + k] = _mm512_unpackhi_pd(lo[k], hi[k]);
        }
    }
    for (int c = 0; c < 3; ++c) {
        __m512d r[3], i[3], lo[4], hi[4];
        for (int cp = 0; cp < 3; ++cp) {
            const __m512d a = s3_link4_512(u, 3 * c + cp), b = s3_link4_512(u4, 3 * c + cp);
            r[cp] = _mm512_unpacklo_pd(a, b);
            i[cp] = _mm512_unpackhi_pd(a, b);
        }
        for (int k = 0; k < 4; ++k) {
            __m512d re, im; /* psi[c'][k] at pr[4 c' + k] */
            s3_hvfo_sum512(r, i, pr + k, pi + k, 4, &re, &im);
            lo[k] = _mm512_unpacklo_pd(re, im); /* chi[c][k] of sites 0-3 */
            hi[k] = _mm512_unpackhi_pd(re, im); /* of sites 4-7 */
        }
        s3_t4x4_512(lo);
        s3_t4x4_512(hi);
        for (int s = 0; s < 4; ++s) {
            out[3 * s + c] = lo[s];
            out[3 * (4 + s) + c] = hi[s];
        }
    }
}

PK_T512 static void s3_hvfo512_aos(const double *u, const double *psi, double *chi, size_t s0,
                                   size_t s1, int stream)
{
    s3_fused512(s3_hvfo512_aos8, 8, 1, u, psi, chi, s0, s1, stream);
}

/* ---- AVX2 + FMA ----------------------------------------------------------------------------- */
PK_T256 static inline void s3_put256(double *p, __m256d v, int stream)
{
    if (stream)
        _mm256_stream_pd(p, v);
    else
        _mm256_storeu_pd(p, v);
}

/* (-im, re) of each complex number of v. */
PK_T256 static inline __m256d s3_swapneg256(__m256d v)
{
    const __m256d neg_re = _mm256_set_pd(0.0, -0.0, 0.0, -0.0); /* sign bits of lanes 0, 2 */
    return _mm256_xor_pd(_mm256_permute_pd(v, 0x5), neg_re);
}

PK_T256 static void s3_aos256(const pk_s3_desc *d, const double *u, const double *psi,
                              double *chi, size_t s0, size_t s1, int stream)
{
    if ((uintptr_t)(chi + 24 * s0) % 64) stream = 0; /* AVX2: streamed only from a line */
    for (size_t s = s0; s < s1; ++s) {
        double m[18];
        const double *U = s3_link(d, u, s, m), *P = psi + 24 * s;
        double *X = chi + 24 * s;
        __m256d p[6], q[6]; /* psi[c'][0..1], psi[c'][2..3] */
        for (int v = 0; v < 6; ++v) {
            p[v] = _mm256_loadu_pd(P + 4 * v);
            q[v] = s3_swapneg256(p[v]);
        }
        for (int c = 0; c < 3; ++c) {
            const double *r = U + 6 * c;
            for (int h = 0; h < 2; ++h) {
                __m256d a = _mm256_mul_pd(_mm256_set1_pd(r[0]), p[h]);
                a = _mm256_fmadd_pd(_mm256_set1_pd(r[1]), q[h], a);
                a = _mm256_fmadd_pd(_mm256_set1_pd(r[2]), p[2 + h], a);
                a = _mm256_fmadd_pd(_mm256_set1_pd(r[3]), q[2 + h], a);
                a = _mm256_fmadd_pd(_mm256_set1_pd(r[4]), p[4 + h], a);
                a = _mm256_fmadd_pd(_mm256_set1_pd(r[5]), q[4 + h], a);
                s3_put256(X + 8 * c + 4 * h, a, stream);
            }
        }
    }
}

/* s3_vfo_sum512 for 2 sites a vector. */
PK_T256 static inline __m256d s3_vfo_sum256(const __m256d ur[3], const __m256d ui[3],
                                            const __m256d *p, const __m256d *q, int k)
{
    __m256d a = _mm256_mul_pd(ur[0], p[k]);
    a = _mm256_fmadd_pd(ui[0], q[k], a);
    a = _mm256_fmadd_pd(ur[1], p[4 + k], a);
    a = _mm256_fmadd_pd(ui[1], q[4 + k], a);
    a = _mm256_fmadd_pd(ur[2], p[8 + k], a);
    return _mm256_fmadd_pd(ui[2], q[8 + k], a);
}

PK_T256 static void s3_vfo256(const pk_s3_desc *d, const double *u, const double *psi,
                              double *chi, size_t s0, size_t s1, int stream)
{
    const size_t ns = d->nsites;
    for (size_t s = s0; s < s1; s += 2) { /* 2 sites per 256-bit vector */
        __m256d p[12], q[12];
        for (int e = 0; e < 12; ++e) {
            p[e] = _mm256_load_pd(psi + 2 * ((size_t)e * ns + s));
            q[e] = s3_swapneg256(p[e]);
        }
        for (int c = 0; c < 3; ++c) {
            __m256d ur[3], ui[3];
            for (int cp = 0; cp < 3; ++cp) {
                const __m256d v = _mm256_load_pd(u + 2 * ((size_t)(3 * c + cp) * ns + s));
                ur[cp] = _mm256_movedup_pd(v);
                ui[cp] = _mm256_permute_pd(v, 0xf);
            }
            for (int k = 0; k < 4; ++k)
                s3_put256(chi + 2 * ((size_t)(4 * c + k) * ns + s),
                          s3_vfo_sum256(ur, ui, p, q, k), stream);
        }
    }
}

/* s3_vfo512_aos on AVX2: 2 sites a vector, so the transposes are 2 x 2 of 16-byte lanes. */
PK_T256 static inline void s3_vfo256_aos2(const double *u, const double *psi, double *chi,
                                          int stream)
{
    const double *u1 = u + PK_S3_U_AOS, *psi1 = psi + PK_S3_SPINOR;
    __m256d p[12], q[12];
    for (int v = 0; v < 6; ++v) { /* psi[c'][k], k = 2 (v % 2) + 0, 1, of the 2 sites */
        const __m256d r0 = _mm256_loadu_pd(psi + 4 * v), r1 = _mm256_loadu_pd(psi1 + 4 * v);
        p[2 * v] = _mm256_permute2f128_pd(r0, r1, 0x20);
        p[2 * v + 1] = _mm256_permute2f128_pd(r0, r1, 0x31);
        q[2 * v] = s3_swapneg256(p[2 * v]);
        q[2 * v + 1] = s3_swapneg256(p[2 * v + 1]);
    }
    for (int c = 0; c < 3; ++c) {
        __m256d ur[3], ui[3], a[4];
        for (int cp = 0; cp < 3; ++cp) {
            const int e = 2 * (3 * c + cp);
            const __m256d v = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(u + e)),
                                                   _mm_loadu_pd(u1 + e), 1);
            ur[cp] = _mm256_movedup_pd(v);
            ui[cp] = _mm256_permute_pd(v, 0xf);
        }
        for (int k = 0; k < 4; ++k) a[k] = s3_vfo_sum256(ur, ui, p, q, k);
        for (int h = 0; h < 2; ++h) { /* chi[c][2h], chi[c][2h + 1] of each site */
            s3_put256(chi + 8 * c + 4 * h, _mm256_permute2f128_pd(a[2 * h], a[2 * h + 1], 0x20),
                      stream);
            s3_put256(chi + PK_S3_SPINOR + 8 * c + 4 * h,
                      _mm256_permute2f128_pd(a[2 * h], a[2 * h + 1], 0x31), stream);
        }
    }
}

PK_T256 static void s3_vfo256_aos(const double *u, const double *psi, double *chi, size_t s0,
                                  size_t s1, int stream)
{
    stream = stream && (uintptr_t)(chi + PK_S3_SPINOR * s0) % 64 == 0;
    size_t s = s0;
    for (; s + 2 <= s1; s += 2)
        s3_vfo256_aos2(u + PK_S3_U_AOS * s, psi + PK_S3_SPINOR * s, chi + PK_S3_SPINOR * s,
                       stream);
    if (s < s1) { /* the last site, with a zero site as vfo's padding */
        double ut[2 * PK_S3_U_AOS] = {0}, pt[2 * PK_S3_SPINOR] = {0}, ct[2 * PK_S3_SPINOR];
        memcpy(ut, u + PK_S3_U_AOS * s, PK_S3_U_AOS * sizeof(double));
        memcpy(pt, psi + PK_S3_SPINOR * s, PK_S3_SPINOR * sizeof(double));
        s3_vfo256_aos2(ut, pt, ct, 0);
        memcpy(chi + PK_S3_SPINOR * s, ct, PK_S3_SPINOR * sizeof(double));
    }
}

PK_T256 static void s3_hvfo256(const pk_s3_desc *d, const double *u, const double *psi,
                               double *chi, size_t s0, size_t s1, int stream)
{
    const size_t nw = (size_t)d->nw;
    for (size_t b = s0 / nw; b < s1 / nw; ++b)
        for (size_t w = 0; w < nw; w += 4) {
            const double *U = u + 18 * nw * b + w, *P = psi + 24 * nw * b + w;
            double *X = chi + 24 * nw * b + w;
            for (int k = 0; k < 4; ++k) {
                __m256d pr[3], pi[3];
                for (int cp = 0; cp < 3; ++cp) {
                    pr[cp] = _mm256_load_pd(P + (size_t)(2 * (4 * cp + k)) * nw);
                    pi[cp] = _mm256_load_pd(P + (size_t)(2 * (4 * cp + k) + 1) * nw);
                }
                for (int c = 0; c < 3; ++c) { /* the link from L1: 16 registers hold no more */
                    __m256d re = _mm256_setzero_pd(), im = _mm256_setzero_pd();
                    for (int cp = 0; cp < 3; ++cp) {
                        const size_t e = (size_t)(3 * c + cp);
                        const __m256d r = _mm256_load_pd(U + 2 * e * nw);
                        const __m256d i = _mm256_load_pd(U + (2 * e + 1) * nw);
                        re = _mm256_fmadd_pd(r, pr[cp], re);
                        im = _mm256_fmadd_pd(r, pi[cp], im);
                        re = _mm256_fnmadd_pd(i, pi[cp], re);
                        im = _mm256_fmadd_pd(i, pr[cp], im);
                    }
                    s3_put256(X + (size_t)(2 * (4 * c + k)) * nw, re, stream);
                    s3_put256(X + (size_t)(2 * (4 * c + k) + 1) * nw, im, stream);
                }
            }
        }
}

PK_T256 static void s3_fence(void) { _mm_sfence(); }
#endif /* PK_X86 */

/* ---- ISA choice ----------------------------------------------------------------------- */
/* The CPU's best, lowered by su3.isa (a bad environment value is an error). */
static pk_status s3_isa_check(const pk_s3_desc *d, int *isa)
{
    return pk_simd_level(d->tuning, PK_PARAM_SU3_ISA, pk_cpu_simd(), isa);
}

/* The hand-vectorised kernel of the plan's layout on its ISA; the plain loop where the ISA
 * has none (generic, or hvfo with nw not a multiple of the vector width). */
static s3_range_fn s3_simd_kernel(const pk_s3_desc *d, int isa)
{
#ifdef PK_X86
    const int hv = d->layout == PK_SU3_HVFO, vfo = d->layout == PK_SU3_VFO;
    if (isa == PK_SIMD_AVX512)
        return hv ? (d->nw % 8 == 0 ? s3_hvfo512 : d->nw % 4 == 0 ? s3_hvfo256 : s3_plain)
               : vfo ? s3_vfo512
                     : s3_aos512;
    if (isa == PK_SIMD_AVX2)
        return hv ? (d->nw % 4 == 0 ? s3_hvfo256 : s3_plain) : vfo ? s3_vfo256 : s3_aos256;
#else
    (void)d;
    (void)isa;
#endif
    return s3_plain;
}

/* ---- the plan ----------------------------------------------------------------------------- */
static int s3_nthreads(const pk_s3_host_plan *h)
{
#ifdef PK_HAVE_OPENMP
    return h->nt;
#else
    (void)h;
    return 1;
#endif
}

/* dst[span] = src[span] (src NULL: zeros) for the sites of thread t. */
static void s3_copy_share(const pk_s3_desc *d, int field, int t, int nt, double *dst,
                          const double *src)
{
    size_t s0, s1;
    pk_s3_span sp;
    pk_s3_share(d, t, nt, &s0, &s1);
    if (s0 >= s1) return;
    pk_s3_span_of(d, field, s0, s1, &sp);
    for (size_t r = 0; r < sp.rows; ++r) {
        const size_t off = sp.start + r * sp.stride;
        if (src)
            memcpy(dst + off, src + off, sp.len * sizeof(double));
        else
            memset(dst + off, 0, sp.len * sizeof(double));
    }
}

/* The three arrays' parts, copied (or zeroed) by the threads that compute on them. */
static void s3_copy_all(pk_s3_host_plan *h, double *const dst[3], const double *const src[3])
{
    const int nt = s3_nthreads(h);
#ifdef PK_HAVE_OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        const int t = pk_thread_num(), team = pk_team_size();
        (void)nt;
        for (int f = 0; f < 3; ++f)
            if (dst[f]) s3_copy_share(&h->d, f == 0 ? 0 : 1, t, team, dst[f], src[f]);
    }
}

/* The plan's kernel on [s0, s1) of the lattice d, one thread (the fused call's blocks). */
static void s3_omp_range(const pk_s3_host_plan *h, const pk_s3_desc *d, const double *u,
                         const double *psi, double *chi, size_t s0, size_t s1, int stream)
{
    const s3_range_fn fn = h->simd ? s3_simd_kernel(d, h->isa) : s3_plain;
    stream = stream && fn != s3_plain;
    fn(d, u, psi, chi, s0, s1, stream);
#ifdef PK_X86
    if (stream) s3_fence();
#endif
}

pk_status pk_omp_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    pk_s3_host_plan *h;
    PK_TRY(pk_s3_host_alloc(desc, &h));
#ifdef PK_HAVE_OPENMP
    h->nt = desc->threads > 0 ? desc->threads : omp_get_max_threads();
#else
    h->nt = 1;
#endif
    h->simd = strcmp(h->variant, "omp-simd") == 0;
    int isa = PK_SIMD_GENERIC;
    if (h->simd) {
        pk_status s = s3_isa_check(desc, &isa);
        if (s != PK_OK) {
            pk_s3_host_destroy(h);
            return s;
        }
    }
    h->isa = isa;
    const size_t bytes = (desc->u_doubles + 2 * desc->spinor_doubles) * sizeof(double);
    int stream[2]; /* su3.stream: auto, 0, 1 (never a bad value: see lib/tuning.c) */
    (void)pk_param_get(desc->tuning, PK_PARAM_SU3_STREAM, stream);
    h->stream = h->simd && h->isa != PK_SIMD_GENERIC &&
                (stream[0] ? stream[0] == 2 : bytes >= S3_STREAM_MIN);
    h->ops = &pk_openmp_s3_ops;
    h->range = s3_omp_range;
#ifdef PK_X86
    if (h->simd && desc->layout == PK_SU3_VFO)
        h->aos_range = h->isa == PK_SIMD_AVX512 ? s3_vfo512_aos
                       : h->isa == PK_SIMD_AVX2 ? s3_vfo256_aos
                                                : NULL;
    if (h->simd && desc->layout == PK_SU3_HVFO && h->isa == PK_SIMD_AVX512 && h->d.nw % 8 == 0)
        h->aos_range = s3_hvfo512_aos; /* s3_hvfo512's bits: the plan's kernel */
#endif
    *impl = h;
    return PK_OK;
}

pk_status pk_omp_s3_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    pk_s3_host_plan *h = impl;
    int fresh;
    PK_TRY(pk_s3_host_arrays(h, &fresh));
    const double t0 = pk_now();
    /* the copies are the first touch of u and psi; chi is zeroed by the same threads */
    double *const dst[3] = {h->u, h->psi, fresh ? h->chi : NULL};
    const double *const src[3] = {u, psi, NULL};
    s3_copy_all(h, dst, src);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_omp_s3_download(void *impl, double *chi, double *seconds)
{
    pk_s3_host_plan *h = impl;
    const double t0 = pk_now();
    double *const dst[3] = {NULL, NULL, chi};
    const double *const src[3] = {NULL, NULL, h->chi};
    s3_copy_all(h, dst, src);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_omp_s3_run(void *impl, double *kernel_seconds)
{
    pk_s3_host_plan *h = impl;
    const pk_s3_desc *d = &h->d;
    const s3_range_fn fn = h->simd ? s3_simd_kernel(d, h->isa) : s3_plain;
    /* a caller's AoS chi (plan_execute) may sit at any multiple of 8 bytes: the AVX-512 AoS
     * kernels stream it from any (s3_aos512_shifted), the AVX2 ones from a line only */
    const int stream = h->stream && fn != s3_plain;
    const int nt = s3_nthreads(h);
    const double t0 = pk_now();
#ifdef PK_HAVE_OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        const int t = pk_thread_num(), team = pk_team_size();
        size_t s0, s1;
        (void)nt;
        pk_s3_share(d, t, team, &s0, &s1);
        if (s0 < s1) fn(d, h->u, h->psi, h->chi, s0, s1, stream);
#ifdef PK_X86
        if (stream) s3_fence(); /* the streamed lines are globally visible before the join */
#endif
    }
    *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

/* The su3 kernel family on this backend (lib/internal.h, pk_s3_ops). */
const pk_s3_ops pk_openmp_s3_ops = {
    .variants = "omp-simd,omp",
    .create = pk_omp_s3_create,
    .upload = pk_omp_s3_upload,
    .run = pk_omp_s3_run,
    .download = pk_omp_s3_download,
    .destroy = pk_s3_host_destroy,
    .execute = pk_s3_host_execute,
    .execute_canonical = pk_s3_host_execute_canonical,
};
