/* grid_omp.c - grid on the OpenMP backend (docs/KERNELS.md 1; the NAG report's CPU code).
 *
 *   omp-tiled   the NAG tiled algorithm, in stages timed into the run info:
 *     bbox     locate every visibility (pk_gr_locate_inline: the reference's float geometry
 *              and guards; 16 at a time where grid.isa is AVX-512, gr_locate16: the same
 *              bits): bounding box of the touched cells, per-part w-plane histogram,
 *              num_skipped, norm (from the plan's per-(plane, off_v, off_u) kernel sums: the
 *              reference's double sum bit for bit, added once per visibility; the parts'
 *              sums added in part order, so runs are bit-reproducible);
 *     count    every visibility located again and its 20-byte record (cells, offsets,
 *              vis * weight, conjugation; the plane is where the record lies) stored in
 *              w-plane order (a stable counting sort), then per-part counts of the
 *              (visibility, tile) pairs and of the work per tile (the updates of each
 *              footprint clipped to the tile: the work estimate, not the count);
 *     sort     prefix sum, the pair array sized exactly, bucket sort: a record's index
 *              (4 bytes) goes into every tile its footprint touches.  Part p scatters a
 *              contiguous range of the plane-sorted records into its own slice of each
 *              bucket, so every bucket is sorted by w-plane (the plane's kernel rows stay in
 *              cache) and rises through the records, and the order does not depend on the
 *              schedule;
 *     outer    the tiles outside the central box, heaviest first, one thread per tile
 *              (dynamic schedule), each writing only its tile's cells (footprints clipped
 *              to the tile) of the caller's grid: no atomics;
 *     central  the tiles of the central box (2R x 2R tiles around the grid centre, which is
 *              a tile corner): their pairs split between the parts in equal shares of work
 *              (static and deterministic), each part gridding into a private copy of the box
 *              (clipped to the bounding box);
 *     reduce   the copies summed into the grid in part order, rows split between threads.
 *     Tiles are tile_size x tile_size cells (auto 128, 256 for footprints wider than 128:
 *     gr_auto_tile) on a lattice through the grid centre, covering the bounding box.
 *     central_radius R: 0 = auto: the smallest box outside which no tile holds more than
 *     1/(4 nt) of the work (so that the largest job of the outer queue costs at most a
 *     quarter of a thread's share), none on one thread, at most 256 MiB of private copies;
 *     -1 = none.  "Parts" are the nt logical threads of the plan (OpenMP may give a smaller
 *     team: each thread then runs several parts).
 *     Memory: records (20 B per visibility) and pairs (4 B per visibility-tile pair; per
 *     visibility 2.15 / 1.56 / 1.33 / 1.22 at tile 32 / 64 / 128 / 256 on EL82-70) are
 *     kept in the plan between runs (no page faults per run; a plan's first run faults in
 *     80 MB at the paper size; 120 MB with 32-byte records, 257 MB with records in input
 *     order copied into the buckets: a fresh huge page cost 0.2-1 ms per MB on the 2-core
 *     KVM Xeon, 1-2 ms on the EPYC VM, whose host takes freed memory back); when they,
 *     the tile counters or the central copies cannot be allocated the run fails with
 *     PK_ENOMEM before the grid is written.  Lists of more than 2^26 visibilities run in
 *     chunks (bounds that scratch, and keeps a record's index within 32 bits).
 *   omp-atomic  parallel over visibilities (dynamic chunks of 256), every grid update an
 *              OpenMP atomic float add (a compare-and-swap loop on x86), norm /
 *              num_skipped / updates by reduction.
 *
 * Kernel layout (built once per plan): per plane w (support s, L = 2s + 1, m = os/2 + s os
 * + 1 samples per compact axis), per off_u in [-os/2, os/2] and per compact row iy in [0, m),
 * one row of L complex samples rows[k + s] = K[iy][|off_u + k os|], k in [-s, s]: OSKAR's
 * "rearranged" layout with both signs of off_u stored (no reversed reads).  The update of a
 * footprint row j is rows(w, off_u, |off_v + j os|)[k0 + s ..] against grid row gv + j from
 * column gu + k0: both unit stride, no gathers; the conjugation of the kernel (ww > 0) is a
 * sign on the visibility's terms: g.re += a c.re - (sign b) c.im, g.im += b c.re + (sign a)
 * c.im.  The loop vectorises (-O3, #pragma omp simd; an AVX2+FMA clone is picked at load
 * time, PK_SIMD_CLONES: vpermilps + vfmaddsub per 4 complex); where the CPU has AVX-512
 * (grid.isa auto) a hand-written loop does 8 complex a vector with the row's remainder
 * masked (gr_grid_list512).  Storage (os + 1) m L complex
 * per plane, ~2x the compact stack (EL82-70: 36 MB).
 *
 * Choices measured on the 2-core Zen 4 KVM (GCC 12 -O3; el82-70 --scale 0.1 from lib/gen:
 * 3,139,584 visibilities, 303.4 updates each; the host shared with other jobs, best of 3-4):
 *   serial 6.09 s (0.156 G updates/s); omp-tiled 2 threads 0.387 s (2.46 G/s, 15.7x:
 *   bbox 0.037, count 0.037, sort 0.028, outer 0.283), 1 thread 0.83 s; omp-atomic 2
 *   threads 4.42 s.  Tile 32 / 64 / 128 / 256: 0.53 / 0.43 / 0.40 / 0.38 s (bigger tiles:
 *   fewer duplicated pairs and more visibilities per plane per tile; 64 kept as the NAG
 *   default, it leaves more tiles to balance on many cores).  Central radius on 2 threads:
 *   auto (none) 0.38, 1: 0.39, 2: 0.40 s.  Rejected: per-(plane, off_u, off_v) contiguous
 *   [2s+1]^2 blocks (2.5x the memory, within noise on EL82-70, 10% faster on random w);
 *   sorting by (plane, off_u, off_v) (the 8475-way scatter cost more than the reuse won);
 *   software prefetch of the next rows or visibility (no gain: the hardware prefetcher
 *   follows the rows); hand-written AVX2 (slower than GCC's); an AVX-512 clone (no faster
 *   on Zen 4 with rows of 9..89 samples).  On the 2-core Intel Xeon KVM (AVX-512), the
 *   hand-written AVX-512 loop with masked remainders against the AVX2 clone, alternating
 *   plans in one process (2026-11-29): outer stage 356-458 -> 250-262 ms, the plan run
 *   597-689 -> 461-532 ms at el82-70 x 0.1.  Against a single-plane data set (kernel always
 *   in L1) the loop runs ~2.1 G updates/s per core, so kernel reads from L2/L3 cost ~1/3.
 *   The stages before outer (2026-11-30, 2-core Zen 5 KVM, el82-70 x 0.1, 2 threads, one
 *   process per library, alternated): bbox + count + sort 103-106 -> 53-56 ms of a 285-320 ms
 *   plan run, from the tile lattice's divisions turned into shifts (T a power of two: 8
 *   integer divisions a visibility were a quarter of count and half of sort) and the
 *   locate done 16 visibilities at a time (bbox 23 -> 9.5 ms).  The default tile then 64 ->
 *   128 (the same machine, a program on the public API, tile sizes alternated, runs of 2
 *   threads): el82-70 x 0.1 218-299 -> 200-217 ms (256: 185-240), on 1 thread 436-447 ->
 *   394-398; el30-56 x 0.1 (larger w, supports) 1.19-1.25 -> 0.84-0.85 s (256: 0.70-0.74);
 *   synthetic 64-74 -> 52-68 ms.  A bigger tile holds more visibilities per plane (the
 *   kernel rows' reuse) and clips fewer footprints; 128 leaves ~1400 tiles at el82-70 for
 *   the heaviest-first queue, 256 only ~360 (the balance of many cores: not measured here;
 *   `portkern tune` tries 64 and 256).
 */
#include "grid_host.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif
#ifdef PK_X86
#include <immintrin.h>
#endif

/* The tile edge where the caller and the context leave it open: 128 (64, the NAG report's,
 * measured 10-31% slower on three data sets), 256 where the widest footprint (2 s + 1 cells)
 * is wider than 128: it then spans two tiles or more, clipped into each, and a tile holds few
 * visibilities of its plane (2-core EPYC, 2 threads, x 0.1: el56-82, s <= 72, 416-470 ->
 * 286-290 ms a run; el30-56, s <= 95, 837-861 -> 698-736; el82-70, s <= 44, a tie).  Not
 * measured on many cores, where 256 leaves fewer tiles to share. */
static int gr_auto_tile(const int *support, int planes)
{
    int smax = 0;
    for (int w = 0; w < planes; ++w)
        if (support[w] > smax) smax = support[w];
    return 2 * smax + 1 > 128 ? 256 : 128;
}
/* Visibilities per pass: bounds the scratch (PORTKERN_TEST_GR_CHUNK=N lowers it: the tests'
 * way to run several passes). */
#define GR_CHUNK_VIS ((size_t)1 << 26)
#define GR_AUTO_BOX_BYTES ((size_t)256 << 20) /* auto central box: private copies at most */
#define GR_AUTO_SHARE 4                       /* auto box: outer tiles <= work / (4 nt) */

enum { GR_TILED, GR_ATOMIC };
enum { ST_BBOX, ST_COUNT, ST_SORT, ST_OUTER, ST_CENTRAL, ST_REDUCE, ST_N };
static const char *const gr_stage_names[ST_N] = {"bbox", "count", "sort", "outer", "central",
                                                 "reduce"};

/* One located visibility (gr_record, gr_locate16). */
typedef struct gr_loc {
    int32_t gu, gv, w;
    int16_t ou, ov;
    float a, b;   /* vis * weight */
    float sign;   /* -1: kernel conjugated (ww > 0) */
} gr_loc;

/* A record of the count stage's plane-ordered array (20 bytes): its plane is where it lies
 * (plane w holds records [pstart[w], pstart[w + 1]), gr_plane_of), off_u, off_v and the
 * conjugation packed into oo.  32 bytes with the plane and the sign as fields: the 3.1 M
 * records of el82-70 x 0.1 were 100 of the 190 MB a first run faults in. */
typedef struct gr_vis {
    int32_t gu, gv;
    float a, b;  /* vis * weight */
    uint32_t oo; /* ou + os/2 | (ov + os/2) << 11 | (1: kernel conjugated) << 22 (os <= 1024) */
} gr_vis;

static inline gr_vis gr_store(const gr_loc *l, int half)
{
    gr_vis v = {l->gu, l->gv, l->a, l->b,
                (uint32_t)(l->ou + half) | (uint32_t)(l->ov + half) << 11 |
                    (uint32_t)(l->sign < 0) << 22};
    return v;
}

static inline int gr_ou(const gr_vis *v, int half) { return (int)(v->oo & 0x7ff) - half; }
static inline int gr_ov(const gr_vis *v, int half) { return (int)(v->oo >> 11 & 0x7ff) - half; }
static inline float gr_sign(const gr_vis *v) { return v->oo >> 22 ? -1.0f : 1.0f; }

/* The plane of record r: the last w in [0, np) with pstart[w] <= r (an empty plane starts
 * where the next one does). */
static inline int gr_plane_of(const size_t *pstart, int np, size_t r)
{
    int lo = 0, hi = np;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (pstart[mid] <= r) lo = mid + 1; else hi = mid;
    }
    return lo - 1;
}

/* The plane of record r from the plane w of an earlier record: a walk forward (the lists rise
 * through the records), a search where r lies before plane w. */
static inline int gr_plane_at(const size_t *pstart, int np, int w, size_t r)
{
    if (r < pstart[w]) return gr_plane_of(pstart, np, r);
    while (r >= pstart[w + 1]) ++w;
    return w;
}

typedef struct gr_omp_plan {
    pk_gr_desc d;        /* d.support -> support; no kernels (the rows replace them) */
    int variant, nt;
    int isa;             /* PK_SIMD_* of the gridding loop (grid.isa) */
    int32_t *support;
    size_t *row_base;    /* [np]: complex offset of plane w's rows */
    float *rows;         /* the reordered kernel rows (see the top) */
    double *ksum;        /* [np][os + 1][os + 1]: sum of Re K over the footprint, [ov][ou] */
    gr_vis *rec;         /* scratch kept between runs (no page faults on every run) */
    uint32_t *pairs;
    size_t rec_cap, pairs_cap;
} gr_omp_plan;

static int gr_threads(const pk_gr_desc *d)
{
#ifdef PK_HAVE_OPENMP
    return d->threads > 0 ? d->threads : omp_get_max_threads();
#else
    (void)d;
    return 1;
#endif
}

/* Logical parts of a parallel region (p = pk_thread_num(); p < nt; p += pk_team_size()): fixed
 * at nt, whatever team size OpenMP gives, so that the per-part counts of one stage match the
 * partition of the next.  Part p holds [pk_share_lo(n, p, nt), pk_share_lo(n, p + 1, nt)). */

static inline int gr_min(int a, int b) { return a < b ? a : b; }
static inline int gr_max(int a, int b) { return a > b ? a : b; }
/* floor(a / b) for b > 0 */
static inline int gr_floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* ---- plan -------------------------------------------------------------------------------- */
void pk_omp_gr_destroy(void *impl)
{
    gr_omp_plan *h = impl;
    if (!h) return;
    free(h->support);
    free(h->row_base);
    pk_free_aligned(h->rows);
    free(h->ksum);
    pk_free_aligned(h->rec);
    pk_free_aligned(h->pairs);
    free(h);
}

pk_status pk_omp_gr_rows_make(const pk_grid_params *p, const int32_t *support,
                              const float *kernels, const size_t *plane_offset, int nt,
                              float **rows_out, size_t *row_base)
{
    const int np = p->num_w_planes, os = p->oversample, half = os / 2;
    size_t total = 0;
    for (int w = 0; w < np; ++w) {
        const size_t s = (size_t)support[w], m = half + s * os + 1, L = 2 * s + 1;
        size_t n;
        row_base[w] = total;
        if (pk_mul3_size((size_t)(os + 1), m, L, &n) != 0 || n > SIZE_MAX / 8 - total)
            return pk_fail(PK_EOVERFLOW, "grid: the reordered kernel stack overflows size_t");
        total += n;
    }
    float *rows = pk_alloc_aligned(2 * total * sizeof(float) + 64);
    if (!rows)
        return pk_fail(PK_ENOMEM, "grid: cannot allocate the reordered kernel stack (%zu "
                       "complex samples)", total);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int w = 0; w < np; ++w) {
        const int s = support[w], m = half + s * os + 1, L = 2 * s + 1;
        const float *plane = kernels + 2 * plane_offset[w];
        for (int ou = -half; ou <= half; ++ou) {
            float *blk = rows + 2 * (row_base[w] + (size_t)(ou + half) * m * L);
            for (int iy = 0; iy < m; ++iy)
                for (int k = -s; k <= s; ++k) {
                    const float *c = plane + 2 * ((size_t)iy * m + abs(ou + k * os));
                    blk[2 * ((size_t)iy * L + k + s)] = c[0];
                    blk[2 * ((size_t)iy * L + k + s) + 1] = c[1];
                }
        }
    }
    *rows_out = rows;
    return PK_OK;
}

pk_status pk_omp_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    (void)state;
    (void)device;
    const int np = desc->p.num_w_planes, os = desc->p.oversample, half = os / 2;
    gr_omp_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "grid: out of host memory");
    h->d = *desc;
    h->d.kernels = NULL;
    h->d.plane_offset = NULL;
    h->variant = strcmp(desc->variant, "omp-atomic") == 0 ? GR_ATOMIC : GR_TILED;
    h->nt = gr_threads(desc);
    pk_status st = pk_simd_level(desc->tuning, PK_PARAM_GRID_ISA, pk_cpu_simd(), &h->isa);
    if (st != PK_OK) {
        free(h);
        return st;
    }
    if (h->d.p.tile_size == 0) h->d.p.tile_size = gr_auto_tile(desc->support, np);
    h->support = malloc((size_t)np * sizeof *h->support);
    h->row_base = malloc((size_t)np * sizeof *h->row_base);
    h->ksum = malloc((size_t)np * (os + 1) * (os + 1) * sizeof *h->ksum);
    if (!h->support || !h->row_base || !h->ksum) {
        pk_omp_gr_destroy(h);
        return pk_fail(PK_ENOMEM, "grid: out of host memory");
    }
    memcpy(h->support, desc->support, (size_t)np * sizeof *h->support);
    h->d.support = h->support;
    st = pk_omp_gr_rows_make(&desc->p, h->support, desc->kernels, desc->plane_offset, h->nt,
                             &h->rows, h->row_base);
    if (st != PK_OK) {
        pk_omp_gr_destroy(h);
        return st;
    }
    const float *kern = desc->kernels;
    const size_t *poff = desc->plane_offset;
#pragma omp parallel for schedule(dynamic, 1) num_threads(h->nt)
    for (int w = 0; w < np; ++w) {
        const int s = h->support[w], m = half + s * os + 1;
        const float *plane = kern + 2 * poff[w];
        /* the reference's norm term: Re K summed in double in its order (j, then k) */
        for (int ov = -half; ov <= half; ++ov)
            for (int ou = -half; ou <= half; ++ou) {
                double sum = 0;
                for (int j = -s; j <= s; ++j) {
                    const float *row = plane + 2 * (size_t)abs(ov + j * os) * m;
                    for (int k = -s; k <= s; ++k) sum += row[2 * abs(ou + k * os)];
                }
                h->ksum[((size_t)w * (os + 1) + ov + half) * (os + 1) + ou + half] = sum;
            }
    }
    *impl = h;
    return PK_OK;
}

static inline double gr_ksum(const gr_omp_plan *h, int w, int ou, int ov)
{
    const int os = h->d.p.oversample, half = os / 2;
    return h->ksum[((size_t)w * (os + 1) + ov + half) * (os + 1) + ou + half];
}

/* ---- the gridding loop ---------------------------------------------------------------- */
/* One visibility's footprint clipped to the cells [x0, x1) x [y0, y1): rows j0..j1 of cnt
 * samples from column v->gu + k0; its kernel row j at gr_krow, its grid row at gr_grow. */
typedef struct gr_foot {
    const float *blk; /* the plane's rows for v->ou, from column k0 */
    float *g0;        /* the destination's column gu + k0 of row 0 */
    size_t stride;    /* the destination's row length in cells */
    int j0, j1, cnt, L, os, ov, gv;
} gr_foot;

static inline int gr_clip(const gr_omp_plan *h, const gr_vis *v, int w, int x0, int x1, int y0,
                          int y1, float *dst, size_t stride, int dx, int dy, gr_foot *f)
{
    const int os = h->d.p.oversample, half = os / 2;
    const int s = h->support[w], L = 2 * s + 1, m = half + s * os + 1;
    const int k0 = gr_max(-s, x0 - v->gu), k1 = gr_min(s, x1 - 1 - v->gu);
    f->j0 = gr_max(-s, y0 - v->gv);
    f->j1 = gr_min(s, y1 - 1 - v->gv);
    if (k0 > k1 || f->j0 > f->j1) return 0;
    f->cnt = k1 - k0 + 1;
    f->L = L;
    f->os = os;
    f->ov = gr_ov(v, half);
    f->gv = v->gv - dy;
    f->stride = stride;
    f->blk = h->rows +
             2 * (h->row_base[w] + (size_t)(gr_ou(v, half) + half) * m * L + (size_t)(k0 + s));
    f->g0 = dst + 2 * ((size_t)(v->gu + k0 - dx));
    return 1;
}

static inline const float *gr_krow(const gr_foot *f, int j)
{
    return f->blk + 2 * (size_t)abs(f->ov + j * f->os) * f->L;
}

static inline float *gr_grow(const gr_foot *f, int j)
{
    return f->g0 + 2 * (size_t)(f->gv + j) * f->stride;
}

/* Visibilities rec[list[0 .. n)], each clipped to the cells [x0, x1) x [y0, y1), into dst:
 * cell (x, y) at dst[2 ((y - dy) stride + x - dx)].  A tile's list rises through rec (the
 * buckets keep plane order): the record a few entries ahead is prefetched, and the plane
 * follows from the last one's (pstart: the planes' first records). */
#define GR_PREFETCH 8
PK_SIMD_CLONES
static void gr_grid_list(const gr_omp_plan *h, const gr_vis *rec, const size_t *pstart,
                         const uint32_t *list, size_t n, int x0, int x1, int y0, int y1,
                         float *dst, size_t stride, int dx, int dy)
{
    const int np = h->d.p.num_w_planes;
    int w = n ? gr_plane_of(pstart, np, list[0]) : 0;
    for (size_t e = 0; e < n; ++e) {
#if defined(__GNUC__)
        if (e + GR_PREFETCH < n) __builtin_prefetch(&rec[list[e + GR_PREFETCH]], 0, 3);
#endif
        const gr_vis *v = &rec[list[e]];
        w = gr_plane_at(pstart, np, w, list[e]);
        gr_foot f;
        if (!gr_clip(h, v, w, x0, x1, y0, y1, dst, stride, dx, dy, &f)) continue;
        const int cnt = f.cnt;
        const float sign = gr_sign(v);
        const float a = v->a, b = v->b, as = sign * v->a, bs = sign * v->b;
        for (int j = f.j0; j <= f.j1; ++j) {
            const float *restrict c = gr_krow(&f, j);
            float *restrict g = gr_grow(&f, j);
#pragma omp simd
            for (int t = 0; t < cnt; ++t) {
                const float cr = c[2 * t], ci = c[2 * t + 1];
                g[2 * t] += a * cr - bs * ci;
                g[2 * t + 1] += b * cr + as * ci;
            }
        }
    }
}

#ifdef PK_X86
/* gr_grid_list in AVX-512: 8 complex samples a vector, the row's last partial vector masked
 * (rows are 2s + 1 = 9..89 samples: the AVX2 loop ran their remainder scalar).  Per sample
 * g += c.re (a, b) + c.im (-sign b, sign a), two FMAs on duplicated re / im parts. */
PK_T512 static void gr_grid_list512(const gr_omp_plan *h, const gr_vis *rec,
                                    const size_t *pstart, const uint32_t *list, size_t n,
                                    int x0, int x1, int y0, int y1, float *dst, size_t stride,
                                    int dx, int dy)
{
    const int np = h->d.p.num_w_planes;
    int w = n ? gr_plane_of(pstart, np, list[0]) : 0;
    for (size_t e = 0; e < n; ++e) {
        if (e + GR_PREFETCH < n) __builtin_prefetch(&rec[list[e + GR_PREFETCH]], 0, 3);
        const gr_vis *v = &rec[list[e]];
        w = gr_plane_at(pstart, np, w, list[e]);
        gr_foot f;
        if (!gr_clip(h, v, w, x0, x1, y0, y1, dst, stride, dx, dy, &f)) continue;
        const float sign = gr_sign(v), as = sign * v->a, bs = sign * v->b;
        const __m512 ab = _mm512_broadcast_f32x4(_mm_setr_ps(v->a, v->b, v->a, v->b));
        const __m512 ba = _mm512_broadcast_f32x4(_mm_setr_ps(-bs, as, -bs, as));
        const int full = f.cnt / 8 * 16, tail = 2 * (f.cnt % 8);
        const __mmask16 mask = (__mmask16)((1u << tail) - 1);
        for (int j = f.j0; j <= f.j1; ++j) {
            const float *c = gr_krow(&f, j);
            float *g = gr_grow(&f, j);
            int t = 0;
            for (; t < full; t += 16) {
                const __m512 cv = _mm512_loadu_ps(c + t);
                __m512 gv = _mm512_fmadd_ps(_mm512_moveldup_ps(cv), ab, _mm512_loadu_ps(g + t));
                _mm512_storeu_ps(g + t, _mm512_fmadd_ps(_mm512_movehdup_ps(cv), ba, gv));
            }
            if (tail) {
                const __m512 cv = _mm512_maskz_loadu_ps(mask, c + t);
                __m512 gv = _mm512_fmadd_ps(_mm512_moveldup_ps(cv), ab,
                                            _mm512_maskz_loadu_ps(mask, g + t));
                _mm512_mask_storeu_ps(g + t, mask, _mm512_fmadd_ps(_mm512_movehdup_ps(cv), ba, gv));
            }
        }
    }
}
#endif

/* The gridding loop of the plan's ISA (grid.isa). */
static void gr_grid(const gr_omp_plan *h, const gr_vis *rec, const size_t *pstart,
                    const uint32_t *list, size_t n, int x0, int x1, int y0, int y1, float *dst,
                    size_t stride, int dx, int dy)
{
#ifdef PK_X86
    if (h->isa == PK_SIMD_AVX512) {
        gr_grid_list512(h, rec, pstart, list, n, x0, x1, y0, y1, dst, stride, dx, dy);
        return;
    }
#endif
    gr_grid_list(h, rec, pstart, list, n, x0, x1, y0, y1, dst, stride, dx, dy);
}

/* ---- omp-atomic ------------------------------------------------------------------------- */
static void gr_run_atomic(const gr_omp_plan *h, const pk_grid_data *dat, float *grid,
                          pk_gr_result *res)
{
    const int g = h->d.p.grid_size, os = h->d.p.oversample, half = os / 2;
    double norm = 0, updates = 0;
    int64_t skipped = 0;
    const int64_t n = (int64_t)dat->num_vis;
#pragma omp parallel for schedule(dynamic, 256) num_threads(h->nt) \
    reduction(+ : norm, updates, skipped)
    for (int64_t i = 0; i < n; ++i) {
        const float vre = dat->vis[2 * i], vim = dat->vis[2 * i + 1], wt = dat->weight[i];
        int w, gu, gv, ou, ov;
        if (pk_gr_locate_inline(&h->d, dat->uu[i], dat->vv[i], dat->ww[i], vre, vim, wt, &w, &gu, &gv,
                         &ou, &ov)) {
            ++skipped;
            continue;
        }
        const int s = h->support[w], L = 2 * s + 1, m = half + s * os + 1;
        const float sign = dat->ww[i] > 0 ? -1.0f : 1.0f;
        const float a = vre * wt, b = vim * wt, as = sign * a, bs = sign * b;
        const float *blk = h->rows + 2 * (h->row_base[w] + (size_t)(ou + half) * m * L);
        for (int j = -s; j <= s; ++j) {
            const float *c = blk + 2 * (size_t)abs(ov + j * os) * L;
            float *row = grid + 2 * ((size_t)(gv + j) * g + (size_t)(gu - s));
            for (int t = 0; t < L; ++t) {
                const float re = a * c[2 * t] - bs * c[2 * t + 1];
                const float im = b * c[2 * t] + as * c[2 * t + 1];
#pragma omp atomic
                row[2 * t] += re;
#pragma omp atomic
                row[2 * t + 1] += im;
            }
        }
        norm += gr_ksum(h, w, ou, ov) * wt;
        updates += (double)L * L;
    }
    res->norm += norm;
    res->num_skipped += skipped;
    res->updates += updates;
}

/* ---- omp-tiled -------------------------------------------------------------------------- */
/* The tile lattice of one pass: tile (tx, ty) covers cells x in [c + (tmin_x + tx) T,
 * c + (tmin_x + tx + 1) T), c = grid_size / 2, clipped to the grid. */
typedef struct gr_lattice {
    int T, c, g;
    int shift; /* log2 T when T is a power of two (the automatic 128 or 256), else -1 */
    int tminx, tminy, ntx, nty;
} gr_lattice;

/* floor((x - c) / T): the tile column (row) of cell x counted from the centre.  A shift where
 * T is a power of two: the count and sort stages take it 8 times per visibility, and an
 * integer division costs ~15 cycles (GCC and Clang shift negative ints arithmetically). */
static inline int gr_tile_of(const gr_lattice *lt, int x)
{
    return lt->shift >= 0 ? (x - lt->c) >> lt->shift : gr_floordiv(x - lt->c, lt->T);
}

static inline void gr_tile_rect(const gr_lattice *lt, int tx, int ty, int *x0, int *x1,
                                int *y0, int *y1)
{
    *x0 = gr_max(0, lt->c + (lt->tminx + tx) * lt->T);
    *x1 = gr_min(lt->g, lt->c + (lt->tminx + tx + 1) * lt->T);
    *y0 = gr_max(0, lt->c + (lt->tminy + ty) * lt->T);
    *y1 = gr_min(lt->g, lt->c + (lt->tminy + ty + 1) * lt->T);
}

/* Tiles of the footprint [x0, x1] x [y0, y1] (inclusive cells). */
static inline void gr_tile_span(const gr_lattice *lt, int x0, int x1, int y0, int y1, int *tx0,
                                int *tx1, int *ty0, int *ty1)
{
    *tx0 = gr_tile_of(lt, x0) - lt->tminx;
    *tx1 = gr_tile_of(lt, x1) - lt->tminx;
    *ty0 = gr_tile_of(lt, y0) - lt->tminy;
    *ty1 = gr_tile_of(lt, y1) - lt->tminy;
}

/* Ring of tile (tx, ty) around the centre: the smallest R whose box [-R, R)^2 (in tiles
 * relative to the centre corner) holds it. */
static inline int gr_ring(const gr_lattice *lt, int tx, int ty)
{
    const int rx = lt->tminx + tx, ry = lt->tminy + ty;
    return gr_max(rx >= 0 ? rx + 1 : -rx, ry >= 0 ? ry + 1 : -ry);
}

typedef struct gr_queue_item {
    double work;
    size_t tile;
} gr_queue_item;

static int gr_queue_cmp(const void *pa, const void *pb)
{
    const gr_queue_item *a = pa, *b = pb;
    if (a->work != b->work) return a->work > b->work ? -1 : 1;
    return a->tile < b->tile ? -1 : a->tile > b->tile;
}

/* Everything one pass allocates (freed together). */
typedef struct gr_pass {
    size_t *pcount;      /* [nt][np]: plane histogram, then write cursors */
    size_t *pstart;      /* [np + 1]: the planes' first records */
    gr_vis *rec;         /* [ng] plane-sorted records (the plan's scratch) */
    size_t *tcount;      /* [nt][ntiles]: pair counts, then scatter cursors */
    double *twork;       /* [nt][ntiles] then [ntiles] (part 0 holds the sum) */
    size_t *tstart;      /* [ntiles + 1]: bucket starts */
    uint32_t *bucket;    /* [pairs]: indices into rec, by tile (the plan's scratch) */
    gr_queue_item *queue;
    size_t *central;     /* central tiles, row-major */
    double *cprefix;     /* [ncentral + 1]: work prefix */
    float *copies;       /* [nt][bh][bw] complex */
} gr_pass;

static void gr_pass_free(gr_pass *ps)
{
    free(ps->pcount);
    free(ps->pstart);
    free(ps->tcount);
    free(ps->twork);
    free(ps->tstart);
    free(ps->queue);
    free(ps->central);
    free(ps->cprefix);
    pk_free_aligned(ps->copies);
}

/* Updates of visibility v inside the cells [x0, x1) x [y0, y1). */
static inline double gr_clip_area(const gr_vis *v, int s, int x0, int x1, int y0, int y1)
{
    const int kx = gr_min(v->gu + s, x1 - 1) - gr_max(v->gu - s, x0) + 1;
    const int ky = gr_min(v->gv + s, y1 - 1) - gr_max(v->gv - s, y0) + 1;
    return kx > 0 && ky > 0 ? (double)kx * ky : 0.0;
}

/* Where part p of nt starts in the central pairs (equal shares of the work): central tile
 * *k, entry *e of its bucket.  Work before (k, e) >= p W / nt, the first such position. */
static void gr_central_start(const gr_omp_plan *h, const gr_pass *ps, const gr_lattice *lt,
                             size_t ncentral, int p, size_t *k, size_t *e)
{
    const double W = ps->cprefix[ncentral], b = W * p / h->nt;
    if (p == 0) { *k = 0; *e = 0; return; }
    if (p >= h->nt) { *k = ncentral; *e = 0; return; }
    /* the first tile whose end passes b */
    size_t lo = 0, hi = ncentral;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (ps->cprefix[mid + 1] <= b) lo = mid + 1; else hi = mid;
    }
    if (lo == ncentral) { *k = ncentral; *e = 0; return; }
    const size_t tile = ps->central[lo];
    const int tx = (int)(tile % (size_t)lt->ntx), ty = (int)(tile / (size_t)lt->ntx);
    int x0, x1, y0, y1;
    gr_tile_rect(lt, tx, ty, &x0, &x1, &y0, &y1);
    double acc = ps->cprefix[lo];
    size_t i = ps->tstart[tile];
    const size_t end = ps->tstart[tile + 1];
    for (int w = i < end ? gr_plane_of(ps->pstart, h->d.p.num_w_planes, ps->bucket[i]) : 0;
         i < end && acc < b; ++i) {
        w = gr_plane_at(ps->pstart, h->d.p.num_w_planes, w, ps->bucket[i]);
        acc += gr_clip_area(&ps->rec[ps->bucket[i]], h->support[w], x0, x1, y0, y1);
    }
    *k = lo;
    *e = i - ps->tstart[tile];
}

/* The record of visibility i (the reference's geometry, pk_gr_locate_inline); 1 when it is
 * skipped.  Made twice per run (bbox counts, count stores them in plane order): locating
 * again costs less than a record array in input order would in memory and page faults. */
static inline int gr_record(const gr_omp_plan *h, const pk_grid_data *dat, size_t i, gr_loc *v)
{
    int w, gu, gv, ou, ov;
    const float vre = dat->vis[2 * i], vim = dat->vis[2 * i + 1], wt = dat->weight[i];
    if (pk_gr_locate_inline(&h->d, dat->uu[i], dat->vv[i], dat->ww[i], vre, vim, wt, &w, &gu, &gv,
                            &ou, &ov))
        return 1;
    v->gu = gu;
    v->gv = gv;
    v->w = w;
    v->ou = (int16_t)ou;
    v->ov = (int16_t)ov;
    v->a = vre * wt;
    v->b = vim * wt;
    v->sign = dat->ww[i] > 0 ? -1.0f : 1.0f;
    return 0;
}

#ifdef PK_X86
/* pk_gr_roundf on 16 lanes: the same operations (truncation, |x - t| >= 0.5, the sign of x),
 * so the same bits. */
PK_T512 static inline __m512 gr_roundf16(__m512 x)
{
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    const __m512 ax = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(x)));
    const __mmask16 small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(8388608.0f), _CMP_LT_OQ);
    const __m512 t = _mm512_cvtepi32_ps(_mm512_cvttps_epi32(x));
    const __m512 d = _mm512_sub_round_ps(x, t, _MM_FROUND_CUR_DIRECTION);
    const __m512 ad = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(d)));
    const __mmask16 up = _mm512_cmp_ps_mask(ad, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 at = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(t)));
    const __m512 r = _mm512_mask_add_ps(at, up, at, _mm512_set1_ps(1.0f)); /* |t| + up, >= +0 */
    const __m512i rs = _mm512_or_si512(_mm512_castps_si512(r),
                                       _mm512_and_si512(sign, _mm512_castps_si512(x)));
    return _mm512_mask_blend_ps(small, x, _mm512_castsi512_ps(rs));
}

/* gr_record on the 16 visibilities [i, i + 16): pk_gr_locate_inline's float operations in its
 * order, lane by lane, so the same records bit for bit (products and differences through
 * their _round forms, which the compiler never contracts into FMAs).  Bit k of the result is
 * set when visibility i + k is gridded; v[k] is its record (unset for a skipped one).  The
 * scalar locate costs ~50 cycles a visibility, and bbox and count each locate every one. */
PK_T512 static unsigned gr_locate16(const gr_omp_plan *h, const pk_grid_data *dat, size_t i,
                                    gr_loc *v)
{
    const pk_gr_desc *d = &h->d;
    const int g = d->p.grid_size, npm = d->p.num_w_planes - 1;
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    const __m512 uu = _mm512_loadu_ps(dat->uu + i), vv = _mm512_loadu_ps(dat->vv + i);
    const __m512 ww = _mm512_loadu_ps(dat->ww + i), wt = _mm512_loadu_ps(dat->weight + i);
    const __m512 v0 = _mm512_loadu_ps(dat->vis + 2 * i);
    const __m512 v1 = _mm512_loadu_ps(dat->vis + 2 * i + 16);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512 vre = _mm512_permutex2var_ps(v0, even, v1);
    const __m512 vim = _mm512_permutex2var_ps(v0, odd, v1);
#define GR_SUB(a, b) _mm512_sub_round_ps(a, b, _MM_FROUND_CUR_DIRECTION)
#define GR_MUL(a, b) _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION)
#define GR_ABS(a) _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(a)))
    __m512 fin = _mm512_add_ps(GR_SUB(uu, uu), GR_SUB(vv, vv));
    fin = _mm512_add_ps(fin, GR_SUB(ww, ww));
    fin = _mm512_add_ps(fin, GR_SUB(vre, vre));
    fin = _mm512_add_ps(fin, GR_SUB(vim, vim));
    fin = _mm512_add_ps(fin, GR_SUB(wt, wt));
    __mmask16 ok = _mm512_cmp_ps_mask(fin, _mm512_setzero_ps(), _CMP_EQ_OQ);
    const __m512 gs = _mm512_set1_ps((float)(g * d->p.cell_size_rad));
    const __m512 neg_uu = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(uu), sign));
    const __m512 pos_u = GR_MUL(neg_uu, gs), pos_v = GR_MUL(vv, gs);
    const __m512 ru = gr_roundf16(pos_u), rv = gr_roundf16(pos_v);
    const __m512 gf = _mm512_set1_ps((float)g);
    ok &= _mm512_cmp_ps_mask(GR_ABS(ru), gf, _CMP_LE_OQ) &
          _mm512_cmp_ps_mask(GR_ABS(rv), gf, _CMP_LE_OQ);
    const __m512 wf = gr_roundf16(
        _mm512_sqrt_ps(GR_ABS(GR_MUL(ww, _mm512_set1_ps((float)d->p.w_scale)))));
    /* every lane's plane in [0, npm] (NaN and large wf compare false: npm), so the gather is
     * in bounds whatever the lane holds */
    const __mmask16 below = _mm512_cmp_ps_mask(wf, _mm512_set1_ps((float)npm), _CMP_LT_OQ);
    const __m512i w =
        _mm512_mask_blend_epi32(below, _mm512_set1_epi32(npm), _mm512_cvttps_epi32(wf));
    const __m512i sup = _mm512_i32gather_epi32(w, h->support, 4);
    const __m512i half = _mm512_set1_epi32(g / 2), gi = _mm512_set1_epi32(g);
    const __m512i gu = _mm512_add_epi32(_mm512_cvttps_epi32(ru), half);
    const __m512i gv = _mm512_add_epi32(_mm512_cvttps_epi32(rv), half);
    ok &= _mm512_cmpge_epi32_mask(_mm512_sub_epi32(gu, sup), _mm512_setzero_si512()) &
          _mm512_cmplt_epi32_mask(_mm512_add_epi32(gu, sup), gi) &
          _mm512_cmpge_epi32_mask(_mm512_sub_epi32(gv, sup), _mm512_setzero_si512()) &
          _mm512_cmplt_epi32_mask(_mm512_add_epi32(gv, sup), gi);
    const __m512 osf = _mm512_set1_ps((float)d->p.oversample);
    const __m512i ou = _mm512_cvttps_epi32(gr_roundf16(GR_MUL(GR_SUB(ru, pos_u), osf)));
    const __m512i ov = _mm512_cvttps_epi32(gr_roundf16(GR_MUL(GR_SUB(rv, pos_v), osf)));
    const __m512 a = GR_MUL(vre, wt), b = GR_MUL(vim, wt);
    const __m512 sg = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ww, _mm512_setzero_ps(), _CMP_GT_OQ),
                                           _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
#undef GR_SUB
#undef GR_MUL
#undef GR_ABS
    int32_t lw[16], lgu[16], lgv[16], lou[16], lov[16];
    float la[16], lb[16], ls[16];
    _mm512_storeu_si512(lw, w);
    _mm512_storeu_si512(lgu, gu);
    _mm512_storeu_si512(lgv, gv);
    _mm512_storeu_si512(lou, ou);
    _mm512_storeu_si512(lov, ov);
    _mm512_storeu_ps(la, a);
    _mm512_storeu_ps(lb, b);
    _mm512_storeu_ps(ls, sg);
    for (int k = 0; k < 16; ++k) {
        if (!(ok >> k & 1)) continue;
        v[k].gu = lgu[k];
        v[k].gv = lgv[k];
        v[k].w = lw[k];
        v[k].ou = (int16_t)lou[k];
        v[k].ov = (int16_t)lov[k];
        v[k].a = la[k];
        v[k].b = lb[k];
        v[k].sign = ls[k];
    }
    return ok;
}
#endif

/* Visibilities [i, i + nb), nb <= 16, located: bit k of the result set when i + k is gridded,
 * its record in v[k].  gr_locate16 on whole blocks where the plan's ISA is AVX-512. */
static inline unsigned gr_locate_block(const gr_omp_plan *h, const pk_grid_data *dat, size_t i,
                                       int nb, gr_loc *v)
{
#ifdef PK_X86
    if (nb == 16 && h->isa == PK_SIMD_AVX512) return gr_locate16(h, dat, i, v);
#endif
    unsigned ok = 0;
    for (int k = 0; k < nb; ++k)
        if (!gr_record(h, dat, i + (size_t)k, &v[k])) ok |= 1u << k;
    return ok;
}

/* One pass over at most GR_CHUNK_VIS visibilities; stage times added to st[]. */
static pk_status gr_run_tiled_pass(gr_omp_plan *h, const pk_grid_data *dat, float *grid,
                                   pk_gr_result *res, double *st)
{
    const int nt = h->nt, g = h->d.p.grid_size;
    const size_t n = dat->num_vis, np = (size_t)h->d.p.num_w_planes;
    gr_pass ps;
    memset(&ps, 0, sizeof ps);
    pk_status status = PK_OK;

    /* -- bbox: locate, bounding box, plane histogram, norm -------------------------------- */
    double t0 = pk_now();
    ps.pcount = calloc((size_t)nt * np, sizeof *ps.pcount);
    if (!ps.pcount) return pk_fail(PK_ENOMEM, "grid: out of host memory");
    int bx0 = INT_MAX, bx1 = INT_MIN, by0 = INT_MAX, by1 = INT_MIN;
    double updates = 0;
    int64_t skipped = 0;
    /* norm per part, summed in part order below: the same bits on every run (an OpenMP
     * reduction combines in the order the threads arrive) */
    double *part_norm = calloc((size_t)nt, sizeof *part_norm);
    if (!part_norm) {
        gr_pass_free(&ps);
        return pk_fail(PK_ENOMEM, "grid: out of host memory");
    }
#pragma omp parallel num_threads(nt) reduction(min : bx0, by0) reduction(max : bx1, by1) \
    reduction(+ : updates, skipped)
    for (int p = pk_thread_num(); p < nt; p += pk_team_size()) {
        size_t *cnt = ps.pcount + (size_t)p * np;
        double norm = 0;
        const size_t hi = pk_share_lo(n, p + 1, nt);
        for (size_t i = pk_share_lo(n, p, nt); i < hi; i += 16) {
            const int nb = hi - i < 16 ? (int)(hi - i) : 16;
            gr_loc vb[16];
            const unsigned ok = gr_locate_block(h, dat, i, nb, vb);
            for (int k = 0; k < nb; ++k) {
                if (!(ok >> k & 1)) {
                    ++skipped;
                    continue;
                }
                const gr_loc v = vb[k];
                const int s = h->support[v.w];
                ++cnt[v.w];
                bx0 = gr_min(bx0, v.gu - s);
                bx1 = gr_max(bx1, v.gu + s);
                by0 = gr_min(by0, v.gv - s);
                by1 = gr_max(by1, v.gv + s);
                norm += gr_ksum(h, v.w, v.ou, v.ov) * dat->weight[i + (size_t)k];
                updates += (double)(2 * s + 1) * (2 * s + 1);
            }
        }
        part_norm[p] = norm;
    }
    double norm = 0;
    for (int p = 0; p < nt; ++p) norm += part_norm[p];
    free(part_norm);
    res->norm += norm;
    res->num_skipped += skipped;
    res->updates += updates;
    const size_t ng = n - (size_t)skipped;
    st[ST_BBOX] += pk_now() - t0;
    if (ng == 0) {
        gr_pass_free(&ps);
        return PK_OK;
    }

    /* -- count: records in plane order; pairs and work per tile --------------------------- */
    t0 = pk_now();
    gr_lattice lt;
    lt.T = h->d.p.tile_size;
    lt.c = g / 2;
    lt.g = g;
    lt.shift = -1;
    for (int b = 0; b < 31; ++b)
        if (lt.T == 1 << b) lt.shift = b;
    lt.tminx = gr_tile_of(&lt, bx0);
    lt.tminy = gr_tile_of(&lt, by0);
    lt.ntx = gr_tile_of(&lt, bx1) - lt.tminx + 1;
    lt.nty = gr_tile_of(&lt, by1) - lt.tminy + 1;
    const size_t ntiles = (size_t)lt.ntx * (size_t)lt.nty;
    size_t per_part;
    if (h->rec_cap < ng) {
        pk_free_aligned(h->rec);
        h->rec = pk_alloc_aligned(ng * sizeof *h->rec);
        h->rec_cap = h->rec ? ng : 0;
    }
    ps.rec = h->rec;
    if (pk_mul3_size((size_t)nt, ntiles, sizeof(double), &per_part) == 0) {
        ps.tcount = calloc((size_t)nt * ntiles, sizeof *ps.tcount);
        ps.twork = calloc((size_t)nt * ntiles, sizeof *ps.twork);
        ps.tstart = malloc((ntiles + 1) * sizeof *ps.tstart);
    }
    if (!ps.rec || !ps.tcount || !ps.twork || !ps.tstart) {
        gr_pass_free(&ps);
        return pk_fail(PK_ENOMEM, "grid omp-tiled: cannot allocate the visibility records "
                       "(%zu) and the counters of %zu tiles of %d cells x %d threads", ng,
                       ntiles, lt.T, nt);
    }
    ps.pstart = malloc((np + 1) * sizeof *ps.pstart);
    if (!ps.pstart) {
        gr_pass_free(&ps);
        return pk_fail(PK_ENOMEM, "grid: out of host memory");
    }
    {   /* plane cursors: planes in order, parts in order within a plane */
        size_t pos = 0;
        for (size_t w = 0; w < np; ++w)
            for (int p = 0; p < nt; ++p) {
                if (p == 0) ps.pstart[w] = pos;
                const size_t c = ps.pcount[(size_t)p * np + w];
                ps.pcount[(size_t)p * np + w] = pos;
                pos += c;
            }
        ps.pstart[np] = pos;
    }
#pragma omp parallel num_threads(nt)
    {
        const int half = h->d.p.oversample / 2;
        for (int p = pk_thread_num(); p < nt; p += pk_team_size()) {
            size_t *cur = ps.pcount + (size_t)p * np;
            const size_t hi = pk_share_lo(n, p + 1, nt);
            for (size_t i = pk_share_lo(n, p, nt); i < hi; i += 16) {
                const int nb = hi - i < 16 ? (int)(hi - i) : 16;
                gr_loc vb[16];
                const unsigned ok = gr_locate_block(h, dat, i, nb, vb);
                for (int k = 0; k < nb; ++k)
                    if (ok >> k & 1) ps.rec[cur[vb[k].w]++] = gr_store(&vb[k], half);
            }
        }
#pragma omp barrier
        for (int p = pk_thread_num(); p < nt; p += pk_team_size()) {
            size_t *cnt = ps.tcount + (size_t)p * ntiles;
            double *wk = ps.twork + (size_t)p * ntiles;
            const size_t lo = pk_share_lo(ng, p, nt);
            int w = lo < ng ? gr_plane_of(ps.pstart, (int)np, lo) : 0;
            for (size_t r = lo; r < pk_share_lo(ng, p + 1, nt); ++r) {
                const gr_vis *v = &ps.rec[r];
                w = gr_plane_at(ps.pstart, (int)np, w, r);
                const int s = h->support[w];
                int tx0, tx1, ty0, ty1;
                gr_tile_span(&lt, v->gu - s, v->gu + s, v->gv - s, v->gv + s, &tx0, &tx1, &ty0,
                             &ty1);
                if (tx0 == tx1 && ty0 == ty1) { /* inside one tile (most of them): no clip */
                    const size_t tile = (size_t)ty0 * lt.ntx + tx0;
                    ++cnt[tile];
                    wk[tile] += (double)(2 * s + 1) * (2 * s + 1);
                    continue;
                }
                for (int ty = ty0; ty <= ty1; ++ty)
                    for (int tx = tx0; tx <= tx1; ++tx) {
                        const size_t tile = (size_t)ty * lt.ntx + tx;
                        int x0, x1, y0, y1;
                        gr_tile_rect(&lt, tx, ty, &x0, &x1, &y0, &y1);
                        ++cnt[tile];
                        wk[tile] += gr_clip_area(v, s, x0, x1, y0, y1);
                    }
            }
        }
    }
    st[ST_COUNT] += pk_now() - t0;

    /* -- sort: prefix sum, bucket array sized exactly, scatter ----------------------------- */
    t0 = pk_now();
    size_t pairs = 0;
    double work_total = 0;
    for (size_t tile = 0; tile < ntiles; ++tile) {
        ps.tstart[tile] = pairs;
        double wsum = 0;
        for (int p = 0; p < nt; ++p) {
            const size_t c = ps.tcount[(size_t)p * ntiles + tile];
            ps.tcount[(size_t)p * ntiles + tile] = pairs;
            pairs += c; /* <= ng (2s+1)^2: no overflow */
            wsum += ps.twork[(size_t)p * ntiles + tile];
        }
        ps.twork[tile] = wsum;
        work_total += wsum;
    }
    ps.tstart[ntiles] = pairs;
    if (h->pairs_cap < pairs) {
        pk_free_aligned(h->pairs);
        h->pairs = pairs <= SIZE_MAX / sizeof *h->pairs
                       ? pk_alloc_aligned(pairs * sizeof *h->pairs) : NULL;
        h->pairs_cap = h->pairs ? pairs : 0;
    }
    ps.bucket = h->pairs;
    if (!ps.bucket) {
        gr_pass_free(&ps);
        return pk_fail(PK_ENOMEM, "grid omp-tiled: cannot allocate the tile buckets (%zu "
                       "visibility-tile pairs of %zu bytes; tile_size %d)", pairs,
                       sizeof *h->pairs, lt.T);
    }
#pragma omp parallel num_threads(nt)
    for (int p = pk_thread_num(); p < nt; p += pk_team_size()) {
        size_t *cur = ps.tcount + (size_t)p * ntiles;
        const size_t lo = pk_share_lo(ng, p, nt);
        int w = lo < ng ? gr_plane_of(ps.pstart, (int)np, lo) : 0;
        for (size_t r = lo; r < pk_share_lo(ng, p + 1, nt); ++r) {
            const gr_vis *v = &ps.rec[r];
            w = gr_plane_at(ps.pstart, (int)np, w, r);
            const int s = h->support[w];
            int tx0, tx1, ty0, ty1;
            gr_tile_span(&lt, v->gu - s, v->gu + s, v->gv - s, v->gv + s, &tx0, &tx1, &ty0,
                         &ty1);
            for (int ty = ty0; ty <= ty1; ++ty)
                for (int tx = tx0; tx <= tx1; ++tx)
                    ps.bucket[cur[(size_t)ty * lt.ntx + tx]++] = (uint32_t)r;
        }
    }

    /* central box radius (in tiles) */
    int R = h->d.p.central_radius;
    const int rmax = gr_max(gr_max(-lt.tminx, lt.tminx + lt.ntx),
                            gr_max(-lt.tminy, lt.tminy + lt.nty));
    if (R > rmax) R = rmax;
    if (R == 0 && nt > 1) {
        /* auto: max work outside the box of radius r, for r = 0 .. rmax */
        double *outside = calloc((size_t)rmax + 2, sizeof *outside);
        if (outside) {
            for (int ty = 0; ty < lt.nty; ++ty)
                for (int tx = 0; tx < lt.ntx; ++tx) {
                    const int ring = gr_ring(&lt, tx, ty);
                    const double wk = ps.twork[(size_t)ty * lt.ntx + tx];
                    if (wk > outside[ring - 1]) outside[ring - 1] = wk; /* max over ring */
                }
            for (int r = rmax - 1; r >= 0; --r)
                if (outside[r + 1] > outside[r]) outside[r] = outside[r + 1];
            /* outside[r] now: max work of the tiles with ring > r */
            const double share = work_total / ((double)GR_AUTO_SHARE * nt);
            for (int r = 0; r <= rmax; ++r) {
                const double side = 2.0 * r * lt.T;
                if (side * side * 8.0 * nt > (double)GR_AUTO_BOX_BYTES) break;
                R = r;
                if (outside[r] <= share) break;
            }
            free(outside);
        }
    }
    if (R < 0) R = 0;

    /* the central tiles, the box's cells (tiles clipped to the bounding box), the queue */
    const int cx0 = gr_max(0, -R - lt.tminx), cx1 = gr_min(lt.ntx, R - lt.tminx);
    const int cy0 = gr_max(0, -R - lt.tminy), cy1 = gr_min(lt.nty, R - lt.tminy);
    size_t ncentral = 0, nqueue = 0;
    int box_x0 = 0, box_x1 = 0, box_y0 = 0, box_y1 = 0;
    ps.queue = malloc(ntiles * sizeof *ps.queue);
    ps.central = malloc(ntiles * sizeof *ps.central);
    ps.cprefix = malloc((ntiles + 1) * sizeof *ps.cprefix);
    if (!ps.queue || !ps.central || !ps.cprefix) {
        gr_pass_free(&ps);
        return pk_fail(PK_ENOMEM, "grid: out of host memory");
    }
    ps.cprefix[0] = 0;
    for (int ty = 0; ty < lt.nty; ++ty)
        for (int tx = 0; tx < lt.ntx; ++tx) {
            const size_t tile = (size_t)ty * lt.ntx + tx;
            if (ps.tstart[tile + 1] == ps.tstart[tile]) continue;
            if (tx >= cx0 && tx < cx1 && ty >= cy0 && ty < cy1) {
                ps.cprefix[ncentral + 1] = ps.cprefix[ncentral] + ps.twork[tile];
                ps.central[ncentral++] = tile;
            } else {
                ps.queue[nqueue].work = ps.twork[tile];
                ps.queue[nqueue++].tile = tile;
            }
        }
    qsort(ps.queue, nqueue, sizeof *ps.queue, gr_queue_cmp);
    size_t bw = 0, bh = 0;
    if (ncentral) {
        int x0, x1, y0, y1, u0, u1, v0, v1;
        gr_tile_rect(&lt, cx0, cy0, &x0, &x1, &y0, &y1);
        gr_tile_rect(&lt, cx1 - 1, cy1 - 1, &u0, &u1, &v0, &v1);
        box_x0 = gr_max(x0, bx0);
        box_x1 = gr_min(u1, bx1 + 1);
        box_y0 = gr_max(y0, by0);
        box_y1 = gr_min(v1, by1 + 1);
        bw = (size_t)(box_x1 - box_x0);
        bh = (size_t)(box_y1 - box_y0);
        size_t bytes;
        if (pk_mul3_size((size_t)nt, bw * bh, 2 * sizeof(float), &bytes) == 0)
            ps.copies = pk_alloc_aligned(bytes);
        if (!ps.copies) {
            gr_pass_free(&ps);
            return pk_fail(PK_ENOMEM, "grid omp-tiled: cannot allocate %d private copies of the "
                           "central box (%zu x %zu cells; central_radius %d)", nt, bw, bh, R);
        }
    }
    st[ST_SORT] += pk_now() - t0;

    /* -- outer tiles: one thread per tile, heaviest first ------------------------------------ */
    res->grid_touched = 1;
    t0 = pk_now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (size_t q = 0; q < nqueue; ++q) {
        const size_t tile = ps.queue[q].tile;
        int x0, x1, y0, y1;
        gr_tile_rect(&lt, (int)(tile % (size_t)lt.ntx), (int)(tile / (size_t)lt.ntx), &x0, &x1,
                     &y0, &y1);
        gr_grid(h, ps.rec, ps.pstart, ps.bucket + ps.tstart[tile],
                ps.tstart[tile + 1] - ps.tstart[tile], x0, x1, y0, y1, grid, (size_t)g, 0, 0);
    }
    st[ST_OUTER] += pk_now() - t0;

    /* -- central box: equal shares of work into private copies, then the reduction ------------ */
    if (ncentral) {
        t0 = pk_now();
#pragma omp parallel num_threads(nt)
        for (int p = pk_thread_num(); p < nt; p += pk_team_size()) {
            float *copy = ps.copies + (size_t)p * bw * bh * 2;
            memset(copy, 0, bw * bh * 2 * sizeof(float));
            size_t k, e, kend, eend;
            gr_central_start(h, &ps, &lt, ncentral, p, &k, &e);
            gr_central_start(h, &ps, &lt, ncentral, p + 1, &kend, &eend);
            for (; k < ncentral && (k < kend || (k == kend && e < eend)); ++k, e = 0) {
                const size_t tile = ps.central[k];
                const size_t len = ps.tstart[tile + 1] - ps.tstart[tile];
                const size_t stop = k == kend ? eend : len;
                int x0, x1, y0, y1;
                gr_tile_rect(&lt, (int)(tile % (size_t)lt.ntx), (int)(tile / (size_t)lt.ntx),
                             &x0, &x1, &y0, &y1);
                gr_grid(h, ps.rec, ps.pstart, ps.bucket + ps.tstart[tile] + e, stop - e, x0, x1,
                        y0, y1, copy, bw, box_x0, box_y0);
            }
        }
        st[ST_CENTRAL] += pk_now() - t0;
        t0 = pk_now();
        const size_t plane_floats = bw * bh * 2;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (size_t y = 0; y < bh; ++y) {
            float *dst = grid + 2 * ((size_t)(box_y0 + (int)y) * g + (size_t)box_x0);
            const float *src = ps.copies + y * bw * 2;
            for (size_t x = 0; x < 2 * bw; ++x) {
                float sum = src[x];
                for (int p = 1; p < nt; ++p) sum += src[(size_t)p * plane_floats + x];
                dst[x] += sum;
            }
        }
        st[ST_REDUCE] += pk_now() - t0;
    }
    gr_pass_free(&ps);
    return status;
}

pk_status pk_omp_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res)
{
    gr_omp_plan *h = impl;
    const double t0 = pk_now();
    if (h->variant == GR_ATOMIC) {
        res->grid_touched = 1;
        gr_run_atomic(h, data, grid, res);
        res->kernel_s = pk_now() - t0;
        pk_gr_stage(res, "grid", res->kernel_s);
        return PK_OK;
    }
    double st[ST_N] = {0};
    const char *test = pk_getenv("PORTKERN_TEST_GR_CHUNK");
    const unsigned long long lower = test ? strtoull(test, NULL, 10) : 0;
    const size_t chunk = lower > 0 && lower < GR_CHUNK_VIS ? (size_t)lower : GR_CHUNK_VIS;
    for (size_t first = 0; first < data->num_vis || first == 0; first += chunk) {
        pk_grid_data part = *data;
        part.num_vis = data->num_vis - first < chunk ? data->num_vis - first : chunk;
        if (part.num_vis) {
            part.uu += first;
            part.vv += first;
            part.ww += first;
            part.vis += 2 * first;
            part.weight += first;
        }
        PK_TRY(gr_run_tiled_pass(h, &part, grid, res, st));
        if (data->num_vis == 0) break;
    }
    res->kernel_s = pk_now() - t0;
    for (int s = 0; s < ST_N; ++s) pk_gr_stage(res, gr_stage_names[s], st[s]);
    return PK_OK;
}

/* The grid kernel family on this backend (lib/internal.h, pk_gr_ops). */
const pk_gr_ops pk_openmp_gr_ops = {
    .variants = "omp-tiled,omp-atomic",
    .create = pk_omp_gr_create,
    .run = pk_omp_gr_run,
    .destroy = pk_omp_gr_destroy,
};
