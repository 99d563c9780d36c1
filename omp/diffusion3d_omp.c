/* diffusion3d_omp.c - the OpenMP variants of the 7-point diffusion stencil, after Jeffers &
 * Reinders ch. 4 and Dempsey's "Chronicles of Phi":
 *   omp          collapse(z, y) + simd x with clamped indices (the book's ompvect step);
 *   omp-tiled    y-blocked rows, x edges peeled so the interior loop is branch-free simd,
 *                streaming stores when the field does not fit in the last-level cache;
 *   omp-tb       temporal blocking: several steps per pass over memory (past the roof);
 *   omp-phalanx  the Hyper-Thread Phalanx: threads pinned per core, the SMT siblings of a
 *                core take adjacent z columns at the same y (their z neighbours are each
 *                other's rows, shared in L1/L2), work partitioned by hand, no omp for.
 * All steps of a call run inside one parallel region with a barrier per step. */
#define _GNU_SOURCE
#include "omp_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif
#ifdef PK_X86
#include <immintrin.h>
#endif

#define D3_YBLOCK 16 /* rows per y block (the book's YBF) */

static int omp_threads(const pk_d3_desc *d)
{
#ifdef PK_HAVE_OPENMP
    return d->threads > 0 ? d->threads : omp_get_max_threads();
#else
    return 1;
#endif
}

/* ---- omp: the book's vectorised loop ---------------------------------------------------- */
/* One row with the face clamps inside the simd loop, as the book's diffusion_ompvect. */
PK_SIMD_CLONES
static void row_clamped(const pk_d3_desc *d, const float *restrict f1, float *restrict f2, int y,
                        int z)
{
    const int nx = d->nx, ny = d->ny, nz = d->nz;
    const float cc = d->c[PK_D3_CC], cw = d->c[PK_D3_CW], ce = d->c[PK_D3_CE];
    const float cs = d->c[PK_D3_CS], cn = d->c[PK_D3_CN], cb = d->c[PK_D3_CB];
    const float ct = d->c[PK_D3_CT];
    const size_t sy = (size_t)nx, sz = (size_t)nx * (size_t)ny;
    const size_t row = (size_t)z * sz + (size_t)y * sy;
    const size_t dn = y == 0 ? 0 : sy, ds = y == ny - 1 ? 0 : sy;
    const size_t db = z == 0 ? 0 : sz, dt = z == nz - 1 ? 0 : sz;
#pragma omp simd
    for (int x = 0; x < nx; ++x) {
        const size_t c = row + (size_t)x;
        const size_t w = x == 0 ? c : c - 1, e = x == nx - 1 ? c : c + 1;
        f2[c] = cc * f1[c] + cw * f1[w] + ce * f1[e] + cs * f1[c + ds] + cn * f1[c - dn] +
                cb * f1[c - db] + ct * f1[c + dt];
    }
}

static void step_omp(const pk_d3_desc *d, const float *f1, float *f2, int nt)
{
    const int ny = d->ny, nz = d->nz;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
    for (int z = 0; z < nz; ++z)
        for (int y = 0; y < ny; ++y) row_clamped(d, f1, f2, y, z);
}

/* ---- one row with peeled edges (tiled, phalanx, temporal blocking) --------------------- */
/* out[0..nx) = the stencil on one row given its centre row c and the rows n, s, b, t (each
 * already clamped to c at a face); out may be a private buffer or the target row.  One
 * function per SIMD level (diffusion3d.isa, fixed at plan creation: pk_d3_host_plan.row);
 * all of a plan's variants and blockings call the same one, so they agree bit for bit. */
static inline __attribute__((always_inline)) void row_body(const pk_d3_desc *d,
                                                           const float *restrict c,
                                                           const float *restrict n,
                                                           const float *restrict s,
                                                           const float *restrict b,
                                                           const float *restrict t,
                                                           float *restrict out)
{
    const int nx = d->nx;
    const float cc = d->c[PK_D3_CC], cw = d->c[PK_D3_CW], ce = d->c[PK_D3_CE];
    const float cs = d->c[PK_D3_CS], cn = d->c[PK_D3_CN], cb = d->c[PK_D3_CB];
    const float ct = d->c[PK_D3_CT];
    if (nx == 1) {
        out[0] = cc * c[0] + cw * c[0] + ce * c[0] + cs * s[0] + cn * n[0] + cb * b[0] + ct * t[0];
        return;
    }
    out[0] = cc * c[0] + cw * c[0] + ce * c[1] + cs * s[0] + cn * n[0] + cb * b[0] + ct * t[0];
#pragma omp simd
    for (int x = 1; x < nx - 1; ++x)
        out[x] = cc * c[x] + cw * c[x - 1] + ce * c[x + 1] + cs * s[x] + cn * n[x] + cb * b[x] +
                 ct * t[x];
    const int l = nx - 1;
    out[l] = cc * c[l] + cw * c[l - 1] + ce * c[l] + cs * s[l] + cn * n[l] + cb * b[l] + ct * t[l];
}

static void row_generic(const pk_d3_desc *d, const float *c, const float *n, const float *s,
                        const float *b, const float *t, float *out)
{
    row_body(d, c, n, s, b, t, out);
}

#ifdef PK_X86
PK_T256 static void row_avx2(const pk_d3_desc *d, const float *c, const float *n,
                             const float *s, const float *b, const float *t, float *out)
{
    row_body(d, c, n, s, b, t, out);
}

/* AVX-512: the centre row is loaded once per 16 points and its x - 1 and x + 1 neighbours
 * are shifted out of the registers (valignd) instead of two unaligned loads, half of which
 * split a cache line: 5 loads per 16 points.  The faces clamp w of x = 0 (lane 15 of the
 * first `prev`) and e of x = nx - 1 (blended in).  Every point sums in the order GCC's
 * contraction gives the AVX2 loop's interior (cw w first).  Rows in L2 1.3-1.5x the AVX2
 * loop's rate (docs/PERFORMANCE.md). */
#define D3_512(W, C, E, S, N, B, T)                                                           \
    _mm512_fmadd_ps(vct, T, _mm512_fmadd_ps(vcb, B, _mm512_fmadd_ps(vcn, N, _mm512_fmadd_ps(  \
        vcs, S, _mm512_fmadd_ps(vce, E, _mm512_fmadd_ps(vcc, C, _mm512_mul_ps(vcw, W)))))))
#define D3_SHIFT(hi, lo, k)                                                                   \
    _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), k))

PK_T512 static void row_avx512(const pk_d3_desc *d, const float *c, const float *n,
                               const float *s, const float *b, const float *t, float *out)
{
    const int nx = d->nx;
    const __m512 vcc = _mm512_set1_ps(d->c[PK_D3_CC]), vcw = _mm512_set1_ps(d->c[PK_D3_CW]);
    const __m512 vce = _mm512_set1_ps(d->c[PK_D3_CE]), vcs = _mm512_set1_ps(d->c[PK_D3_CS]);
    const __m512 vcn = _mm512_set1_ps(d->c[PK_D3_CN]), vcb = _mm512_set1_ps(d->c[PK_D3_CB]);
    const __m512 vct = _mm512_set1_ps(d->c[PK_D3_CT]);
    __m512 prev = _mm512_set1_ps(c[0]);
    __m512 cur = nx >= 16 ? _mm512_loadu_ps(c)
                          : _mm512_maskz_loadu_ps((__mmask16)((1u << nx) - 1), c);
    int x = 0;
    for (; x + 32 <= nx; x += 16) { /* the next 16 centre points exist: no clamp, no mask */
        const __m512 next = _mm512_loadu_ps(c + x + 16);
        _mm512_storeu_ps(out + x, D3_512(D3_SHIFT(cur, prev, 15), cur, D3_SHIFT(next, cur, 1),
                                         _mm512_loadu_ps(s + x), _mm512_loadu_ps(n + x),
                                         _mm512_loadu_ps(b + x), _mm512_loadu_ps(t + x)));
        prev = cur;
        cur = next;
    }
    for (; x < nx; x += 16) { /* the last one or two vectors: the east face, a partial tail */
        const int rest = nx - x;
        const __mmask16 m = rest >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rest) - 1);
        const int more = rest > 16 ? (rest - 16 < 16 ? rest - 16 : 16) : 0;
        const __m512 next = more ? _mm512_maskz_loadu_ps((__mmask16)((1u << more) - 1), c + x + 16)
                                 : _mm512_setzero_ps();
        __m512 e = D3_SHIFT(next, cur, 1);
        if (rest <= 16)
            e = _mm512_mask_mov_ps(e, (__mmask16)(1u << (rest - 1)), _mm512_set1_ps(c[nx - 1]));
        const __m512 r = D3_512(D3_SHIFT(cur, prev, 15), cur, e, _mm512_maskz_loadu_ps(m, s + x),
                                _mm512_maskz_loadu_ps(m, n + x), _mm512_maskz_loadu_ps(m, b + x),
                                _mm512_maskz_loadu_ps(m, t + x));
        _mm512_mask_storeu_ps(out + x, m, r);
        prev = cur;
        cur = next;
    }
}
#endif /* PK_X86 */

/* The row kernel of a SIMD level (PK_SIMD_*). */
static pk_d3_row_fn row_of_level(int level)
{
#ifdef PK_X86
    if (level >= PK_SIMD_AVX512) return row_avx512;
    if (level >= PK_SIMD_AVX2) return row_avx2;
#else
    (void)level;
#endif
    return row_generic;
}

/* The stencil on row (y, z) of the field f1. */
static inline void row_peeled(const pk_d3_host_plan *h, const float *f1, float *out, int y, int z)
{
    const pk_d3_desc *d = &h->d;
    const size_t sy = (size_t)d->nx, sz = (size_t)d->nx * (size_t)d->ny;
    const float *c = f1 + (size_t)z * sz + (size_t)y * sy;
    h->row(d, c, y == 0 ? c : c - sy, y == d->ny - 1 ? c : c + sy, z == 0 ? c : c - sz,
           z == d->nz - 1 ? c : c + sz, out);
}

/* Ask for the row two planes ahead: a single core keeps too few misses in flight on its own
 * to saturate memory with the one new stream (the t row) that a z-march brings in. */
static inline void prefetch_row(const float *row, int nx)
{
    for (int x = 0; x < nx; x += 16) __builtin_prefetch(row + x, 0, 3);
}

/* A finished row goes to memory with streaming stores (pk_stream_copy): the target is not
 * read again in this step, so write-allocate would add a third of the traffic (12 B/pt
 * instead of 8). */
static inline void row_store(const pk_d3_host_plan *h, const float *f1, float *f2, float *buf,
                             int stream, int y, int z)
{
    const pk_d3_desc *d = &h->d;
    const size_t plane = (size_t)d->nx * (size_t)d->ny;
    float *dst = f2 + (size_t)z * plane + (size_t)y * (size_t)d->nx;
    if (z + 2 < d->nz) prefetch_row(f1 + (size_t)(z + 2) * plane + (size_t)y * (size_t)d->nx, d->nx);
    if (stream) {
        row_peeled(h, f1, buf, y, z);
        pk_stream_copy(dst, buf, (size_t)d->nx * sizeof(float));
    } else {
        row_peeled(h, f1, dst, y, z);
    }
}

static inline void stream_fence(int stream)
{
    if (stream) pk_stream_fence(); /* streamed rows must be visible before the barrier */
}

/* ---- omp-tiled ------------------------------------------------------------------------- */
static void steps_tiled(pk_d3_host_plan *h, int count, int nt)
{
    const pk_d3_desc *d = &h->d;
    const int ny = d->ny, nz = d->nz, nyb = (ny + D3_YBLOCK - 1) / D3_YBLOCK;
    const int stream = h->stream;
    float *f1 = h->cur, *f2 = h->cur == h->f1 ? h->f2 : h->f1;
#pragma omp parallel num_threads(nt)
    {
        float *buf = stream ? pk_alloc_aligned((size_t)d->nx * sizeof(float)) : NULL;
        const int use_stream = stream && buf; /* no buffer: plain stores, same result */
        for (int it = 0; it < count; ++it) {
            const float *src = (it & 1) ? f2 : f1;
            float *dst = (it & 1) ? f1 : f2;
#pragma omp for collapse(2) schedule(static)
            for (int yb = 0; yb < nyb; ++yb)
                for (int z = 0; z < nz; ++z) {
                    const int y1 = yb * D3_YBLOCK + D3_YBLOCK < ny ? yb * D3_YBLOCK + D3_YBLOCK : ny;
                    for (int y = yb * D3_YBLOCK; y < y1; ++y)
                        row_store(h, src, dst, buf, use_stream, y, z);
                }
            stream_fence(use_stream);
            /* the implicit barrier of omp for separates the steps */
        }
        pk_free_aligned(buf);
    }
    if (count & 1) h->cur = f2;
}

/* ---- omp-phalanx ----------------------------------------------------------------------- */
/* Pin the calling thread to a CPU for the duration of the call; returns 1 when pinned. */
static int pin_to(int cpu, cpu_set_t *saved)
{
    if (cpu < 0 || sched_getaffinity(0, sizeof *saved, saved) != 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}

static void steps_phalanx(pk_d3_host_plan *h, int count, int nt)
{
    const pk_d3_desc *d = &h->d;
    const int ny = d->ny, nz = d->nz;
    /* nht threads per core when the team fills whole cores with their SMT siblings;
     * otherwise one thread per core (no SMT to share): the squads become single rows. */
    int nht = h->threads_per_core;
    if (nht < 1 || nt % nht != 0) nht = 1;
    const int ncores = nt / nht;
    const long nsquads = (long)((nz + nht - 1) / nht) * ny;
    const int stream = h->stream;
    float *f1 = h->cur, *f2 = h->cur == h->f1 ? h->f2 : h->f1;
#pragma omp parallel num_threads(nt)
    {
        const int tid = pk_thread_num();
        const int core = tid / nht, ht = tid % nht;
        cpu_set_t saved;
        const int pinned = pin_to(h->cpu_of_slot ? h->cpu_of_slot[tid] : -1, &saved);
        float *buf = stream ? pk_alloc_aligned((size_t)d->nx * sizeof(float)) : NULL;
        const int use_stream = stream && buf;
        /* Contiguous squads per core; its HTs walk them together, one z column each. */
        const long s0 = (long)pk_share_lo((size_t)nsquads, core, ncores);
        const long s1 = (long)pk_share_lo((size_t)nsquads, core + 1, ncores);
        for (int it = 0; it < count; ++it) {
            const float *src = (it & 1) ? f2 : f1;
            float *dst = (it & 1) ? f1 : f2;
            for (long sq = s0; sq < s1; ++sq) {
                const int y = (int)(sq % ny), z = (int)(sq / ny) * nht + ht;
                if (z < nz) row_store(h, src, dst, buf, use_stream, y, z);
            }
            stream_fence(use_stream);
#pragma omp barrier
        }
        pk_free_aligned(buf);
        if (pinned) sched_setaffinity(0, sizeof saved, &saved);
    }
    if (count & 1) h->cur = f2;
}

/* Map team slots to CPUs: slot = core * nht + ht, the ht-th sibling of the core-th core of
 * the CPUs this process may use. Returns NULL when the topology cannot be read. */
static int *phalanx_cpu_map(int nt, int *threads_per_core)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return NULL;
    long ncpu_l = sysconf(_SC_NPROCESSORS_CONF);
    int ncpu = ncpu_l > 0 ? (int)ncpu_l : 1;
    int *core_of = malloc((size_t)ncpu * sizeof *core_of);
    int *map = malloc((size_t)nt * sizeof *map);
    if (!core_of || !map) {
        free(core_of);
        free(map);
        return NULL;
    }
    int nht = pk_cpu_topology(ncpu, core_of);
    if (nht < 1 || nt % nht != 0) nht = 1;
    *threads_per_core = nht;
    int slot = 0;
    /* Visit cores in order of their first CPU; take up to nht allowed siblings each. */
    for (int c = 0; c < ncpu && slot < nt; ++c) {
        if (core_of[c] != c) continue; /* c is not the first CPU of its core */
        int got = 0;
        for (int s = 0; s < ncpu && got < nht && slot + got < nt; ++s)
            if (core_of[s] == c && CPU_ISSET(s, &allowed)) map[slot + got++] = s;
        if (got == nht) slot += got;
    }
    free(core_of);
    if (slot < nt) { /* fewer cores than the team: let the OS place the rest */
        for (; slot < nt; ++slot) map[slot] = -1;
    }
    return map;
}

/* ---- omp-tb: temporal blocking --------------------------------------------------------- */
/* T steps per pass over memory (2.5D wavefront): a thread takes a block of Y rows and
 * marches along z; step k of the block lives in a ring of three planes (rows widened by the
 * halo the later steps need, recomputed rather than exchanged), step k at plane z is
 * computed as soon as step k-1 has planes z-1..z+1.  Only the input is read and only the
 * last step is written: 8 bytes per point per T steps (a count that T does not divide ends
 * with one pass of the remaining steps).  T and Y are the tuning parameters
 * diffusion3d.tb_depth (default 6, at most D3_TB_MAX_DEPTH) and diffusion3d.tb_rows (32),
 * read at plan creation; every point's arithmetic is the same for any T and Y, so the
 * result is too, bit for bit. */
#define D3_TB_MAX_DEPTH 16

typedef struct tb_ring {
    float *plane[3];
    int ylo, yhi; /* rows [ylo, yhi) are kept */
} tb_ring;

/* Row y of plane z of step k (k = 0: the input field). */
static inline const float *tb_row(const pk_d3_desc *d, const float *in, const tb_ring *ring,
                                  int k, int y, int z)
{
    if (k == 0) return in + ((size_t)z * (size_t)d->ny + (size_t)y) * (size_t)d->nx;
    const tb_ring *r = &ring[k];
    return r->plane[z % 3] + (size_t)(y - r->ylo) * (size_t)d->nx;
}

static void tb_block(const pk_d3_host_plan *h, int T, const float *in, float *out, tb_ring *ring,
                     float *buf, int stream, int y0, int y1)
{
    const pk_d3_desc *d = &h->d;
    const int ny = d->ny, nz = d->nz, nx = d->nx;
    const size_t plane = (size_t)nx * (size_t)ny;
    for (int k = 1; k < T; ++k) {
        ring[k].ylo = y0 - (T - k) > 0 ? y0 - (T - k) : 0;
        ring[k].yhi = y1 + (T - k) < ny ? y1 + (T - k) : ny;
    }
    for (int zz = 0; zz < nz + T - 1; ++zz) {
        if (zz + 2 < nz) {
            const int plo = y0 - (T - 1) > 0 ? y0 - (T - 1) : 0;
            const int phi = y1 + (T - 1) < ny ? y1 + (T - 1) : ny;
            for (int y = plo; y < phi; ++y)
                prefetch_row(in + (size_t)(zz + 2) * plane + (size_t)y * nx, nx);
        }
        for (int k = 1; k <= T; ++k) {
            const int z = zz - (k - 1);
            if (z < 0 || z >= nz) continue;
            const int lo = k < T ? ring[k].ylo : y0, hi = k < T ? ring[k].yhi : y1;
            for (int y = lo; y < hi; ++y) {
                const float *c = tb_row(d, in, ring, k - 1, y, z);
                const float *n = y == 0 ? c : tb_row(d, in, ring, k - 1, y - 1, z);
                const float *s = y == ny - 1 ? c : tb_row(d, in, ring, k - 1, y + 1, z);
                const float *b = z == 0 ? c : tb_row(d, in, ring, k - 1, y, z - 1);
                const float *t = z == nz - 1 ? c : tb_row(d, in, ring, k - 1, y, z + 1);
                if (k < T) {
                    h->row(d, c, n, s, b, t, (float *)tb_row(d, in, ring, k, y, z));
                } else {
                    float *dst = out + (size_t)z * plane + (size_t)y * nx;
                    if (stream) {
                        h->row(d, c, n, s, b, t, buf);
                        pk_stream_copy(dst, buf, (size_t)nx * sizeof(float));
                    } else {
                        h->row(d, c, n, s, b, t, dst);
                    }
                }
            }
        }
    }
}

/* Per-thread scratch of the temporal blocking: rings of steps 1..T-1 and one stream row. */
static size_t tb_scratch_floats(const pk_d3_desc *d, int T, int Y)
{
    const size_t ring_rows = (size_t)Y + 2 * (size_t)(T - 1);
    return ((size_t)(T - 1) * 3 * ring_rows + 1) * (size_t)d->nx + 16;
}

static void steps_tb(pk_d3_host_plan *h, int count)
{
    const pk_d3_desc *d = &h->d;
    const int T = h->tb_depth, Y = h->tb_rows, nyb = (d->ny + Y - 1) / Y;
    /* passes of T steps, the remainder (count % T) one shallower pass: same bits */
    const int passes = count / T + (count % T != 0), nt = h->nt;
    const size_t ring_rows = (size_t)Y + 2 * (size_t)(T - 1), per = tb_scratch_floats(d, T, Y);
    float *f1 = h->cur, *f2 = h->cur == h->f1 ? h->f2 : h->f1;
#pragma omp parallel num_threads(nt)
    {
        float *work = h->scratch + per * (size_t)pk_thread_num();
        tb_ring ring[D3_TB_MAX_DEPTH];
        for (int k = 1; k < T; ++k)
            for (int i = 0; i < 3; ++i)
                ring[k].plane[i] = work + ((size_t)(k - 1) * 3 + i) * ring_rows * (size_t)d->nx;
        float *buf = work + (size_t)(T - 1) * 3 * ring_rows * (size_t)d->nx;
        for (int p = 0; p < passes; ++p) {
            const float *src = (p & 1) ? f2 : f1;
            float *dst = (p & 1) ? f1 : f2;
            const int depth = (p + 1) * T <= count ? T : count - p * T;
#pragma omp for schedule(dynamic, 1)
            for (int yb = 0; yb < nyb; ++yb) {
                const int y0 = yb * Y;
                const int y1 = y0 + Y < d->ny ? y0 + Y : d->ny;
                tb_block(h, depth, src, dst, ring, buf, h->stream, y0, y1);
            }
            stream_fence(h->stream); /* before the implicit barrier of the omp for ends */
        }
    }
    if (passes & 1) h->cur = f2;
}

/* ---- the backend entry points ----------------------------------------------------------- */
static int d3_variant_id(const char *v)
{
    if (strcmp(v, "omp-tiled") == 0) return 1;
    if (strcmp(v, "omp-phalanx") == 0) return 2;
    if (strcmp(v, "omp-tb") == 0) return 3;
    return 0;
}

pk_status pk_omp_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl)
{
    pk_d3_host_plan *h;
    PK_TRY(pk_d3_host_create(desc, &h));
    const int nt = omp_threads(desc);
    /* Stream only when the pair of fields cannot stay in the last-level cache. */
    h->stream = pk_beyond_llc(2.0 * (double)h->n * sizeof(float)) && desc->nx >= 16;
    h->nt = nt;
    pk_status st = pk_simd_level(desc->tuning, PK_PARAM_DIFFUSION3D_ISA, pk_cpu_simd(), &h->isa);
    if (st != PK_OK) {
        pk_d3_host_destroy(h);
        return st;
    }
    h->row = row_of_level(h->isa);
    if (d3_variant_id(h->variant) == 3) {
        int v[2];
        (void)pk_param_get(desc->tuning, PK_PARAM_DIFFUSION3D_TB_DEPTH, v);
        h->tb_depth = v[0];
        (void)pk_param_get(desc->tuning, PK_PARAM_DIFFUSION3D_TB_ROWS, v);
        h->tb_rows = v[0];
        size_t per = tb_scratch_floats(desc, h->tb_depth, h->tb_rows), total;
        if (pk_mul3_size(per, (size_t)nt, sizeof(float), &total) != 0 ||
            !(h->scratch = pk_alloc_aligned(total))) {
            pk_d3_host_destroy(h);
            return pk_fail(PK_ENOMEM, "omp-tb: cannot allocate %d x %zu floats of ring buffers", nt,
                           per);
        }
    }
    if (d3_variant_id(h->variant) == 2) {
        h->threads_per_core = 1;
        h->cpu_of_slot = phalanx_cpu_map(nt, &h->threads_per_core);
    }
    h->run = pk_omp_d3_run;
    *impl = h;
    return PK_OK;
}

pk_status pk_omp_d3_run(void *impl, int count, double *seconds)
{
    pk_d3_host_plan *h = impl;
    const int nt = omp_threads(&h->d);
    double t0 = pk_now();
    switch (d3_variant_id(h->variant)) {
    case 1: steps_tiled(h, count, nt); break;
    case 2: steps_phalanx(h, count, nt); break;
    case 3: steps_tb(h, count); break;
    default:
        for (int it = 0; it < count; ++it) {
            float *other = h->cur == h->f1 ? h->f2 : h->f1;
            step_omp(&h->d, h->cur, other, nt);
            h->cur = other;
        }
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The diffusion3d kernel family on this backend (lib/internal.h, pk_d3_ops). */
const pk_d3_ops pk_openmp_d3_ops = {
    .variants = "omp-tb,omp-tiled,omp,omp-phalanx",
    .create = pk_omp_d3_create,
    .upload = pk_d3_host_upload,
    .run = pk_omp_d3_run,
    .download = pk_d3_host_download,
    .upload_part = pk_d3_host_upload_part,
    .download_part = pk_d3_host_download_part,
    .destroy = pk_d3_host_destroy,
    .execute = pk_d3_host_execute,
};
