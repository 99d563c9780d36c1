/* degrid_omp.c - degrid on the OpenMP backend (docs/KERNELS.md 7.3).  Both variants are gathers:
 * every visibility reads its footprint of the grid and writes only itself, so no atomics and
 * no private grids.
 *   omp-tiled  (the default) the gridder's tiling turned into an order, and its kernel layout
 *              turned into a gather: the visibilities are bucket-sorted by the 64 x 64-cell
 *              tile of their centre cell (a stable counting sort, tiles in row order:
 *              pk_dg_tile_order, lib/ref/degrid_ref.c) and the threads take contiguous shares
 *              of that order, so a thread's consecutive visibilities read neighbouring grid
 *              cells (the tile and its halo stay in cache) instead of the list's order
 *              (shuffled in the generated sets).  Each footprint row is one unit-stride dot
 *              product of a row of the OpenMP gridder's reordered kernel stack
 *              (pk_omp_gr_rows_make) with a grid row, vectorised (omp simd, per-column
 *              partial sums; where the CPU has AVX-512 and grid.isa allows, dg_sum512: 1.5-1.9x
 *              the compiler's loop at el82-70 x 0.1 on the 2-core Xeon): the
 *              reference's sum in another association, so not its bits but within its
 *              rounding bound (7.5: gamma of the footprint's length holds for any order), and
 *              the same bits whatever the thread count (one visibility, one thread).
 *   omp        the reference's own loop (lib/ref/degrid_ref.c) over the list in its own order,
 *              in contiguous shares (pk_parallel_range): the serial variant's bits.
 * The sort's order (a size_t per visibility) and the tile counters are kept in the plan
 * between runs (grown on demand); the reordered stack (~2x the compact one) is made at
 * creation. */
#include "grid_host.h"

#include <stdlib.h>
#include <string.h>

#ifdef PK_X86
#include <immintrin.h>
#endif

typedef struct dg_omp_plan {
    pk_gr_host_stack *st; /* the serial plan's copy of the stack */
    int tiled;
    int isa;              /* omp-tiled: PK_SIMD_* of the gather (grid.isa) */
    float *rows;          /* omp-tiled: the gridder's reordered stack, and its plane bases */
    size_t *row_base;
    pk_scratch order, key, count;
} dg_omp_plan;

typedef struct dg_job {
    const pk_gr_host_stack *h;
    const dg_omp_plan *plan;
    const float *grid;
    const pk_grid_data *d;
    float *vis;
    const size_t *order;
    int smax; /* the largest support: omp-tiled's partial sums */
    int64_t skipped;
    double updates;
} dg_job;

static void dg_range(void *arg, size_t lo, size_t hi)
{
    dg_job *j = arg;
    double upd = 0;
    const int64_t sk = pk_dg_ref_run(&j->h->p, j->h->support, j->h->plane_offset, j->h->kernels,
                                     j->d, j->grid, NULL, j->vis, NULL, j->order, lo, hi, &upd);
#pragma omp atomic
    j->skipped += sk;
#pragma omp atomic
    j->updates += upd;
}

/* One footprint's sum: rows j = -s..s of L = 2s + 1 samples, kernel row c(j) = blk + 2 L
 * |ov + j os| (its imaginary parts times conj), grid row g0 + 2 (gv + j) g; out = the sum of
 * conj(c) grid over the footprint.  acc: 2 L floats of partial sums. */
typedef struct dg_foot {
    const float *blk, *g0;
    size_t g;
    int s, L, os, ov, gv;
    float conj;
} dg_foot;

/* Per-column partial sums over the rows, unit stride, no reduction inside the row loop; one
 * sum over k at the end. */
PK_SIMD_CLONES
static void dg_sum(const dg_foot *f, float *restrict acc, float *out)
{
    const int L = f->L;
    for (int k = 0; k < 2 * L; ++k) acc[k] = 0.0f;
    for (int jj = -f->s; jj <= f->s; ++jj) {
        const float *restrict c = f->blk + 2 * (size_t)abs(f->ov + jj * f->os) * L;
        const float *restrict gr = f->g0 + 2 * (size_t)(f->gv + jj) * f->g;
#pragma omp simd
        for (int k = 0; k < L; ++k) {
            const float cre = c[2 * k], cim = f->conj * c[2 * k + 1];
            const float gre = gr[2 * k], gim = gr[2 * k + 1];
            acc[2 * k] += cre * gre + cim * gim; /* conj(c) grid, as the reference */
            acc[2 * k + 1] += cre * gim - cim * gre;
        }
    }
    float re = 0, im = 0;
    for (int k = 0; k < L; ++k) {
        re += acc[2 * k];
        im += acc[2 * k + 1];
    }
    out[0] = re;
    out[1] = im;
}

#ifdef PK_X86
/* dg_sum in AVX-512: 8 complex samples a vector, each row's remainder masked; two pairs of
 * accumulators (alternate rows) of c.re (g.re, g.im) and c.im (g.re, g.im), so that the FMA
 * chains of consecutive rows overlap; re = sum c.re g.re + c.im g.im, im = sum c.re g.im -
 * c.im g.re at the end.  Another association of the same terms (7.5's bound holds). */
PK_T512 static void dg_sum512(const dg_foot *f, float *acc, float *out)
{
    (void)acc;
    const int L = f->L, full = L / 8 * 16, tail = 2 * (L % 8);
    const __mmask16 mask = (__mmask16)((1u << tail) - 1);
    __m512 ar[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m512 ai[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int jj = -f->s; jj <= f->s; ++jj) {
        const float *c = f->blk + 2 * (size_t)abs(f->ov + jj * f->os) * L;
        const float *gr = f->g0 + 2 * (size_t)(f->gv + jj) * f->g;
        const int r = jj & 1;
        int t = 0;
        for (; t < full; t += 16) {
            const __m512 cv = _mm512_loadu_ps(c + t), gv = _mm512_loadu_ps(gr + t);
            ar[r] = _mm512_fmadd_ps(_mm512_moveldup_ps(cv), gv, ar[r]);
            ai[r] = _mm512_fmadd_ps(_mm512_movehdup_ps(cv), gv, ai[r]);
        }
        if (tail) {
            const __m512 cv = _mm512_maskz_loadu_ps(mask, c + t);
            const __m512 gv = _mm512_maskz_loadu_ps(mask, gr + t);
            ar[r] = _mm512_fmadd_ps(_mm512_moveldup_ps(cv), gv, ar[r]);
            ai[r] = _mm512_fmadd_ps(_mm512_movehdup_ps(cv), gv, ai[r]);
        }
    }
    /* lanes (even, odd) of ar: (c.re g.re, c.re g.im); of ai: (c.im g.re, c.im g.im), the
     * kernel's conjugation (a sign) applied once to the sums, not in the loop */
    const __m512 sr = _mm512_add_ps(ar[0], ar[1]);
    const __m512 si = _mm512_mul_ps(_mm512_add_ps(ai[0], ai[1]), _mm512_set1_ps(f->conj));
    const __m512 re = _mm512_add_ps(sr, _mm512_movehdup_ps(si));  /* even lanes: re terms */
    const __m512 im = _mm512_sub_ps(sr, _mm512_moveldup_ps(si));  /* odd lanes: im terms */
    const __mmask16 even = 0x5555;
    out[0] = _mm512_mask_reduce_add_ps(even, re);
    out[1] = _mm512_mask_reduce_add_ps((__mmask16)~even, im);
}
#endif

/* The tile order is a permutation of the list: a visibility's uvw, weight and output lie at
 * random places of their arrays, and their cache misses waited behind the previous
 * footprint's sum (the core cannot look that far ahead).  They are prefetched DG_AHEAD
 * visibilities early: the gather 1.5-1.8x faster at el82-70 x 0.1 on the 2-core EPYC
 * (2..32 ahead within the noise). */
#define DG_AHEAD 8

/* omp-tiled's gather of visibilities order[lo .. hi): the reference's geometry and skips,
 * each footprint row a vectorised dot product of a reordered kernel row (conjugated when
 * ww > 0, and conjugated again by the adjoint) with the grid row from gu - s. */
static void dg_gather(void *arg, size_t lo, size_t hi)
{
    dg_job *j = arg;
    const pk_gr_host_stack *h = j->h;
    const pk_grid_data *d = j->d;
    pk_gr_desc desc = {0};
    desc.p = h->p;
    desc.support = h->support;
    const size_t g = (size_t)h->p.grid_size;
    const int os = h->p.oversample, half = os / 2;
    int64_t skipped = 0;
    double upd = 0;
    void (*sum)(const dg_foot *, float *, float *) = dg_sum;
#ifdef PK_X86
    if (j->plan->isa == PK_SIMD_AVX512) sum = dg_sum512;
#endif
    float *acc = malloc((size_t)(2 * (2 * j->smax + 1)) * sizeof *acc);
    if (!acc) { /* no memory for 2 L floats: the reference loop, which needs none */
        dg_range(arg, lo, hi);
        return;
    }
    for (size_t t = lo; t < hi; ++t) {
        const size_t i = j->order[t];
        if (t + DG_AHEAD < hi) { /* see DG_AHEAD */
            const size_t q = j->order[t + DG_AHEAD];
            __builtin_prefetch(d->uu + q);
            __builtin_prefetch(d->vv + q);
            __builtin_prefetch(d->ww + q);
            if (d->weight) __builtin_prefetch(d->weight + q);
            __builtin_prefetch(j->vis + 2 * q, 1);
        }
        const float wt = d->weight ? d->weight[i] : 1.0f;
        int w, gu, gv, ou, ov;
        if (pk_gr_locate_inline(&desc, d->uu[i], d->vv[i], d->ww[i], 0.0f, 0.0f, wt, &w, &gu, &gv,
                                &ou, &ov)) {
            ++skipped;
            j->vis[2 * i] = j->vis[2 * i + 1] = 0.0f;
            continue;
        }
        const int s = h->support[w], L = 2 * s + 1, m = half + s * os + 1;
        const dg_foot f = {j->plan->rows + 2 * (j->plan->row_base[w] +
                                                (size_t)(ou + half) * (size_t)m * L),
                           j->grid + 2 * ((size_t)gu - (size_t)s), g, s, L, os, ov, gv,
                           d->ww[i] > 0 ? -1.0f : 1.0f};
        sum(&f, acc, j->vis + 2 * i);
        upd += (double)L * L;
    }
    free(acc);
#pragma omp atomic
    j->skipped += skipped;
#pragma omp atomic
    j->updates += upd;
}

static void dg_omp_destroy(void *impl)
{
    dg_omp_plan *h = impl;
    if (!h) return;
    pk_serial_gr_destroy(h->st);
    pk_free_aligned(h->rows);
    free(h->row_base);
    pk_scratch_free(&h->order);
    pk_scratch_free(&h->key);
    pk_scratch_free(&h->count);
    free(h);
}

static pk_status dg_omp_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    dg_omp_plan *h = calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "degrid: out of host memory");
    h->tiled = !desc->variant || !desc->variant[0] || strcmp(desc->variant, "omp-tiled") == 0;
    void *st = NULL;
    pk_status s = pk_serial_gr_create(state, device, desc, &st);
    if (s != PK_OK) {
        free(h);
        return s;
    }
    h->st = st;
    if (h->tiled) {
        s = pk_simd_level(desc->tuning, PK_PARAM_GRID_ISA, pk_cpu_simd(), &h->isa);
        if (s != PK_OK) {
            dg_omp_destroy(h);
            return s;
        }
        const pk_gr_host_stack *hs = st;
        h->row_base = malloc((size_t)hs->p.num_w_planes * sizeof *h->row_base);
        s = h->row_base ? pk_omp_gr_rows_make(&hs->p, hs->support, hs->kernels,
                                              hs->plane_offset, pk_host_threads(hs->threads),
                                              &h->rows, h->row_base)
                        : pk_fail(PK_ENOMEM, "degrid: out of host memory");
        if (s != PK_OK) {
            dg_omp_destroy(h);
            return s;
        }
    }
    *impl = h;
    return PK_OK;
}

static pk_status dg_omp_run(void *impl, const float *grid, const pk_grid_data *d, float *vis,
                            pk_dg_result *r)
{
    dg_omp_plan *p = impl;
    const pk_gr_host_stack *h = p->st;
    const double t0 = pk_now();
    const size_t n = d->num_vis;
    int smax = 0;
    for (int w = 0; w < h->p.num_w_planes; ++w)
        if (h->support[w] > smax) smax = h->support[w];
    /* what the gather reads and writes: the footprints of the grid and kernel, uvw, vis */
    const double foot = (double)(2 * smax + 1) * (2 * smax + 1);
    const double bytes = (double)n * (28.0 + 16.0 * foot);
    const size_t pbytes = bytes > 1e18 ? (size_t)-1 : (size_t)bytes;
    dg_job j = {h, p, grid, d, vis, NULL, smax, 0, 0.0};
    if (p->tiled && n > 0)
        PK_TRY(pk_dg_tile_order(&h->p, h->support, d, h->threads, &p->order, &p->key, &p->count,
                                &j.order));
    pk_parallel_range(n, 64, pbytes, h->threads, p->tiled ? dg_gather : dg_range, &j);
    r->num_skipped = j.skipped;
    r->updates = j.updates;
    r->kernel_s = pk_now() - t0;
    return PK_OK;
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
const pk_dg_ops pk_openmp_dg_ops = {
    .variants = "omp-tiled,omp",
    .create = dg_omp_create,
    .run = dg_omp_run,
    .destroy = dg_omp_destroy,
};
