/* conv2d_omp.c - the OpenMP backend's conv2d variants (docs/KERNELS.md section 5):
 *   omp-rb  register blocks (omp/conv2d_rb.h): per thread a band of output rows taken R at
 *        a time (4; 2 in portable C), each block of R rows x 2-4 vectors kept in registers
 *        while its R + kh - 1 halo rows stream past, so one loaded image vector feeds up to
 *        R FMAs (omp: 1) and each output is stored once.  AVX-512, AVX2+FMA or portable C
 *        by the CPU, lowered by conv2d.isa.  The best direct variant: the backend's first.
 *   omp  the StrayLight report's cache-optimal order: for each output row (a band of rows
 *        per thread), for each pair of kernel rows k, k + 1, their wrapped halo rows of
 *        the image (each built once per band into a per-thread ring, so no wrap test in
 *        the loops), then the x loops: 64 output pixels in 8 vector registers accumulate
 *        the 2 kw taps and are added into the output row.  One load and one FMA per tap
 *        and vector.
 *   fft  FFTW single precision, overlap-save: output tiles of vy x vx pixels, each the
 *        valid part of a circular correlation of its (vy + kh - 1) x (vx + kw - 1) window of
 *        the wrapped image (transform extents 2^a or 3 x 2^a, chosen for the least FFT work within
 *        2^18 points: a thread's tile stays in its L2), the PSF's spectrum made once per
 *        plan, the threads over tiles (one single-threaded r2c, product, c2r each); or
 *        frame-fft's path where that is cheaper (large PSFs, PSFs larger than the image).
 *   frame-fft  FFTW over the whole frame (r2c / c2r, threads): the periodic correlation as
 *        a product of spectra.  Per dimension the transform is either exact on the torus (a
 *        7-smooth extent: the PSF is folded and shifted onto it) or, for other extents, a
 *        linear correlation of the image padded with wrapped pixels to the next 7-smooth
 *        size >= n + k - 1 (5271 = 3 * 7 * 251 and 813 = 3 * 271 transform 8x slower than
 *        5292 and 840).  Plans (FFTW_ESTIMATE: MEASURE costs seconds per size and measured
 *        no faster here) and the PSF's spectrum are made once, in create.  Kept for PSFs
 *        larger than the image (folded onto the torus, where tiles would have to be
 *        PSF-sized) and as the reference point of the tiles.
 * Built without FFTW, the FFT variants are absent from the backend's list. */
#include "conv2d_host.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif
#ifdef PK_HAVE_FFTW
#include <fftw3.h>
#endif

/* pk_cv_host_plan.path: what pk_omp_cv_run runs. */
enum { CV_PATH_OMP, CV_PATH_RB, CV_PATH_TILES, CV_PATH_FRAME };

static int cv_threads(const pk_cv_desc *d)
{
#ifdef PK_HAVE_OPENMP
    return d->threads > 0 ? d->threads : omp_get_max_threads();
#else
    return 1;
#endif
}

/* ---- omp --------------------------------------------------------------------------------- */
/* Eight floats; aligned(4) and may_alias make a dereference an unaligned load of any float
 * array.  The x86-64-v3 clone maps it to one AVX register, the baseline to two SSE ones. */
typedef float cv_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define V8(p) (*(const cv_v8 *)(p))
#define V8_STORE(p, v) (*(cv_v8 *)(p) = (v))

/* acc[0..w) += sum_{r < nrows, l < kw} src[r][j + l] * pk[r * kw + l]: one or two kernel
 * rows into one output row (two per pass halve the loads and stores of the accumulators).
 * Eight independent accumulators hide the FMA latency; the tail runs one vector, then
 * scalars. */
PK_SIMD_CLONES
static void row_taps(const float *const *src, int nrows, const float *restrict pk, int kw,
                     float *restrict acc, int w)
{
    int j = 0;
    for (; j + 64 <= w; j += 64) {
        cv_v8 s0 = V8(acc + j), s1 = V8(acc + j + 8), s2 = V8(acc + j + 16);
        cv_v8 s3 = V8(acc + j + 24), s4 = V8(acc + j + 32), s5 = V8(acc + j + 40);
        cv_v8 s6 = V8(acc + j + 48), s7 = V8(acc + j + 56);
        for (int r = 0; r < nrows; ++r) {
            const float *p = src[r] + j, *c = pk + (size_t)r * kw;
            for (int l = 0; l < kw; ++l, ++p) {
                s0 += V8(p) * c[l];
                s1 += V8(p + 8) * c[l];
                s2 += V8(p + 16) * c[l];
                s3 += V8(p + 24) * c[l];
                s4 += V8(p + 32) * c[l];
                s5 += V8(p + 40) * c[l];
                s6 += V8(p + 48) * c[l];
                s7 += V8(p + 56) * c[l];
            }
        }
        V8_STORE(acc + j, s0);
        V8_STORE(acc + j + 8, s1);
        V8_STORE(acc + j + 16, s2);
        V8_STORE(acc + j + 24, s3);
        V8_STORE(acc + j + 32, s4);
        V8_STORE(acc + j + 40, s5);
        V8_STORE(acc + j + 48, s6);
        V8_STORE(acc + j + 56, s7);
    }
    for (; j + 8 <= w; j += 8) {
        cv_v8 s = V8(acc + j);
        for (int r = 0; r < nrows; ++r)
            for (int l = 0; l < kw; ++l) s += V8(src[r] + j + l) * pk[(size_t)r * kw + l];
        V8_STORE(acc + j, s);
    }
    for (; j < w; ++j) {
        float s = acc[j];
        for (int r = 0; r < nrows; ++r)
            for (int l = 0; l < kw; ++l) s += src[r][j + l] * pk[(size_t)r * kw + l];
        acc[j] = s;
    }
}

static void run_omp(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    const size_t per = pk_cv_ring_floats(d, 1);
    float *rings = h->priv;
#pragma omp parallel num_threads(h->nt)
    {
        const int nt = pk_team_size(), t = pk_thread_num();
        /* A contiguous band of output rows per thread: its ring advances one row per row. */
        const int i0 = (int)pk_share_lo((size_t)d->h, t, nt);
        const int i1 = (int)pk_share_lo((size_t)d->h, t + 1, nt);
        pk_cv_ring ring;
        pk_cv_ring_init(&ring, d, 1, rings + per * (size_t)t);
        for (int oi = i0; oi < i1; ++oi) {
            pk_cv_ring_advance(&ring, d, h->image, oi, oi == i0);
            float *acc = h->out + (size_t)oi * d->w;
            memset(acc, 0, (size_t)d->w * sizeof(float));
            for (int k = 0; k < d->kh; k += 2) {
                const float *src[2] = {pk_cv_ring_row(&ring, oi + k),
                                       k + 1 < d->kh ? pk_cv_ring_row(&ring, oi + k + 1) : NULL};
                row_taps(src, k + 1 < d->kh ? 2 : 1, h->psf + (size_t)k * d->kw, d->kw, acc,
                         d->w);
            }
        }
    }
}

/* ---- omp-rb ------------------------------------------------------------------------------ */
/* The block kernel (omp/conv2d_rb.h) per SIMD level.  AVX-512: 4 rows x 4 vectors of 16
 * (16 accumulators, 4 image vectors, 32 registers); AVX2: 4 x 2 of 8 in 16 registers;
 * portable C: 2 x 4 of 4 (SSE2's 16 registers on x86-64). */

#define CV_RB_RMAX 4 /* the most rows any level blocks: the ring holds kh + 3 rows */
typedef float cv_v4 __attribute__((vector_size(16), aligned(4), may_alias));

#define CV_RB_NAME(x) cv_rb_generic_##x
#define CV_RB_TARGET
#define CV_RB_VT cv_v4
#define CV_RB_W 4
#define CV_RB_R 2
#define CV_RB_V 4
#include "conv2d_rb.h"
#undef CV_RB_NAME
#undef CV_RB_TARGET
#undef CV_RB_VT
#undef CV_RB_W
#undef CV_RB_R
#undef CV_RB_V

#ifdef PK_X86
typedef float cv_v16 __attribute__((vector_size(64), aligned(4), may_alias));
#define CV_RB_NAME(x) cv_rb_avx2_##x
#define CV_RB_TARGET __attribute__((target("avx2,fma")))
#define CV_RB_VT cv_v8
#define CV_RB_W 8
#define CV_RB_R 4
#define CV_RB_V 2
#include "conv2d_rb.h"
#undef CV_RB_NAME
#undef CV_RB_TARGET
#undef CV_RB_VT
#undef CV_RB_W
#undef CV_RB_R
#undef CV_RB_V

#define CV_RB_NAME(x) cv_rb_avx512_##x
#define CV_RB_TARGET __attribute__((target("avx512f")))
#define CV_RB_VT cv_v16
#define CV_RB_W 16
#define CV_RB_R 4
#define CV_RB_V 4
#include "conv2d_rb.h"
#undef CV_RB_NAME
#undef CV_RB_TARGET
#undef CV_RB_VT
#undef CV_RB_W
#undef CV_RB_R
#undef CV_RB_V
#endif

typedef void (*cv_rb_fn)(const float *const *src, const float *restrict psf, int kh, int kw,
                         float *const *out, int r_n, int w);

static void cv_rb_pick(int isa, cv_rb_fn *fn, int *rows)
{
#ifdef PK_X86
    if (isa == PK_SIMD_AVX512) {
        *fn = cv_rb_avx512_rows;
        *rows = 4;
        return;
    }
    if (isa == PK_SIMD_AVX2) {
        *fn = cv_rb_avx2_rows;
        *rows = 4;
        return;
    }
#endif
    (void)isa;
    *fn = cv_rb_generic_rows;
    *rows = 2;
}

/* omp-rb's state: per thread a ring of kh + 3 halo rows and kh + 3 row pointers. */
typedef struct cv_rb {
    float *rings;
    const float **src;
    int isa;
} cv_rb;

static void rb_free(void *p)
{
    cv_rb *b = p;
    if (!b) return;
    pk_free_aligned(b->rings);
    free(b->src);
    free(b);
}

static pk_status rb_create(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    cv_rb *b = calloc(1, sizeof *b);
    if (!b) return pk_fail(PK_ENOMEM, "conv2d omp-rb: out of host memory");
    h->priv = b;
    h->priv_free = rb_free;
    PK_TRY(pk_simd_level(d->tuning, PK_PARAM_CONV2D_ISA, pk_cpu_simd(), &b->isa));
    const size_t per = pk_cv_ring_floats(d, CV_RB_RMAX), ptrs = (size_t)d->kh + CV_RB_RMAX - 1;
    size_t bytes, pbytes;
    PK_CHECK(pk_mul3_size(per, (size_t)h->nt, sizeof(float), &bytes) == 0 &&
                 pk_mul3_size(ptrs, (size_t)h->nt, sizeof *b->src, &pbytes) == 0,
             PK_EOVERFLOW, "conv2d omp-rb: %d rings of %zu floats overflow size_t", h->nt, per);
    b->rings = pk_alloc_aligned(bytes);
    b->src = malloc(pbytes);
    PK_CHECK(b->rings && b->src, PK_ENOMEM, "conv2d omp-rb: cannot allocate %d rings of %zu "
             "floats", h->nt, per);
    return PK_OK;
}

static void run_omp_rb(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    const cv_rb *b = h->priv;
    const size_t per = pk_cv_ring_floats(d, CV_RB_RMAX), ptrs = (size_t)d->kh + CV_RB_RMAX - 1;
    cv_rb_fn fn;
    int rows;
    cv_rb_pick(b->isa, &fn, &rows);
#pragma omp parallel num_threads(h->nt)
    {
        const int nt = pk_team_size(), t = pk_thread_num();
        /* A contiguous band per thread, so that its ring advances one row per output row and
         * the thread first-touches (on a fresh array) the output pages it writes. */
        const int i0 = (int)pk_share_lo((size_t)d->h, t, nt);
        const int i1 = (int)pk_share_lo((size_t)d->h, t + 1, nt);
        const float **src = b->src + ptrs * (size_t)t;
        pk_cv_ring ring;
        pk_cv_ring_init(&ring, d, CV_RB_RMAX, b->rings + per * (size_t)t);
        for (int oi = i0; oi < i1; oi += rows) {
            const int r_n = i1 - oi < rows ? i1 - oi : rows;
            float *out[CV_RB_RMAX];
            for (int r = 0; r < r_n; ++r) {
                pk_cv_ring_advance(&ring, d, h->image, oi + r, oi + r == i0);
                out[r] = h->out + (size_t)(oi + r) * d->w;
            }
            for (int s = 0; s < r_n + d->kh - 1; ++s) src[s] = pk_cv_ring_row(&ring, oi + s);
            fn(src, h->psf, d->kh, d->kw, out, r_n, d->w);
        }
    }
}

/* ---- frame-fft --------------------------------------------------------------------------- */
#ifdef PK_HAVE_FFTW
/* What both FFT methods hold: an r2c / c2r plan pair, real and complex work buffers, and
 * the PSF's conjugated spectrum (the correlation's factor), normalised by the points. */
typedef struct cv_spectra {
    float *real;         /* the padded image (or tile), then the result */
    fftwf_complex *spec; /* its spectrum */
    fftwf_complex *kern; /* conj(spectrum of the PSF) / points */
    fftwf_plan fwd, inv;
} cv_spectra;

typedef struct cv_fft {
    cv_spectra sp;         /* real ph x pw, spec and kern ph x pwc */
    int ph, pw, pwc;       /* transform extents; pwc = pw / 2 + 1 complex columns */
    int pad_y, pad_x;      /* 1: linear with wrapped-pixel padding; 0: exact on the torus */
} cv_fft;

/* The planner is not thread-safe (only fftwf_execute is): plans are made and destroyed under
 * the library's planner lock (pk_fftwf_planner, lib/fftw_planner.c). */
static void spectra_destroy_plans(void *p)
{
    cv_spectra *sp = p;
    if (sp->fwd) fftwf_destroy_plan(sp->fwd);
    if (sp->inv) fftwf_destroy_plan(sp->inv);
    sp->fwd = sp->inv = NULL;
}

static void spectra_free(cv_spectra *sp)
{
    pk_fftwf_unplan(spectra_destroy_plans, sp);
    pk_free_aligned(sp->real);
    pk_free_aligned(sp->spec);
    pk_free_aligned(sp->kern);
}

/* kern = conj(spec) over n complex points: the PSF's spectrum, just transformed. */
static void spectra_keep_psf(cv_spectra *sp, size_t n, int nt)
{
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t i = 0; i < n; ++i) {
        sp->kern[i][0] = sp->spec[i][0];
        sp->kern[i][1] = -sp->spec[i][1];
    }
}

static int smooth7(long long n)
{
    static const int primes[4] = {2, 3, 5, 7};
    for (int i = 0; i < 4; ++i)
        while (n % primes[i] == 0) n /= primes[i];
    return n == 1;
}

static void fft_free(void *p)
{
    cv_fft *f = p;
    if (!f) return;
    spectra_free(&f->sp);
    free(f);
}

static void fft_make_plans(void *p)
{
    cv_fft *f = p;
    f->sp.fwd = fftwf_plan_dft_r2c_2d(f->ph, f->pw, f->sp.real, f->sp.spec, FFTW_ESTIMATE);
    f->sp.inv = fftwf_plan_dft_c2r_2d(f->ph, f->pw, f->sp.spec, f->sp.real,
                                   FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
}

static void fft_plan(cv_fft *f, int nt) { pk_fftwf_planner(nt, fft_make_plans, f); }

/* Extent of one dimension: n itself when 7-smooth (exact torus), else the next 7-smooth
 * size >= n + kf - 1 (kf = min(k, n): a longer PSF is folded first); 0 when too large. */
static int fft_extent(int n, int k, int *pad)
{
    const int kf = k < n ? k : n;
    *pad = !smooth7(n);
    if (!*pad) return n;
    for (long long m = (long long)n + kf - 1; m <= INT_MAX; ++m)
        if (smooth7(m)) return (int)m;
    return 0;
}

/* The PSF folded onto the transform grid: G[u][v] += psf[k][l] with u = k % h on a padded
 * dimension and (k - kh/2) % h on an exact one (the image carries the shift when padded),
 * summed in double, scaled by 1 / (ph pw) (FFTW's transforms are unnormalised), then
 * transformed and conjugated (correlation, not convolution).  A PSF no larger than the image
 * puts each tap on its own cell: then the taps are written straight into the zeroed grid (the
 * same floats) without the grid-sized double array, which a one-shot call paid in page faults. */
static pk_status fft_kernel(cv_fft *f, const pk_cv_desc *d, const float *psf, int nt)
{
    const size_t np = (size_t)f->ph * (size_t)f->pw, nc = (size_t)f->ph * (size_t)f->pwc;
    const long h = d->h, w = d->w, a = d->kh / 2, b = d->kw / 2;
    const int folds = d->kh > d->h || d->kw > d->w;
    double *g = folds ? calloc(np, sizeof *g) : NULL;
    if (folds && !g) return pk_fail(PK_ENOMEM, "conv2d fft: cannot allocate %zu doubles", np);
    if (!folds) memset(f->sp.real, 0, np * sizeof *f->sp.real);
    for (long k = 0; k < d->kh; ++k) {
        const long u = f->pad_y ? k % h : ((k - a) % h + h) % h;
        for (long l = 0; l < d->kw; ++l) {
            const long v = f->pad_x ? l % w : ((l - b) % w + w) % w;
            const size_t at = (size_t)u * f->pw + (size_t)v;
            if (folds)
                g[at] += psf[k * d->kw + l];
            else
                f->sp.real[at] = (float)((double)psf[k * d->kw + l] / (double)np);
        }
    }
    if (folds)
        for (size_t i = 0; i < np; ++i) f->sp.real[i] = (float)(g[i] / (double)np);
    free(g);
    fftwf_execute(f->sp.fwd);
    spectra_keep_psf(&f->sp, nc, nt);
    return PK_OK;
}

static pk_status fft_create(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    cv_fft *f = calloc(1, sizeof *f);
    if (!f) return pk_fail(PK_ENOMEM, "conv2d fft: out of host memory");
    h->priv = f;
    h->priv_free = fft_free;
    f->ph = fft_extent(d->h, d->kh, &f->pad_y);
    f->pw = fft_extent(d->w, d->kw, &f->pad_x);
    size_t nr, nc;
    PK_CHECK(f->ph > 0 && f->pw > 0 &&
                 pk_mul3_size((size_t)f->ph, (size_t)f->pw, sizeof(float), &nr) == 0,
             PK_EOVERFLOW, "conv2d fft: no transform size for %d x %d with psf %d x %d", d->h,
             d->w, d->kh, d->kw);
    f->pwc = f->pw / 2 + 1;
    PK_CHECK(pk_mul3_size((size_t)f->ph, (size_t)f->pwc, sizeof(fftwf_complex), &nc) == 0,
             PK_EOVERFLOW, "conv2d fft: a %d x %d spectrum overflows size_t", f->ph, f->pwc);
    /* pk_alloc_aligned, not fftwf_malloc: 3 x 18 MB at the StrayLight frame, advised for huge
     * pages (a one-shot call's first touch took ~13k page faults); 64 bytes covers FFTW's SIMD. */
    f->sp.real = pk_alloc_aligned(nr);
    f->sp.spec = pk_alloc_aligned(nc);
    f->sp.kern = pk_alloc_aligned(nc);
    PK_CHECK(f->sp.real && f->sp.spec && f->sp.kern, PK_ENOMEM,
             "conv2d fft: cannot allocate %zu + 2 x %zu bytes for a %d x %d transform", nr, nc,
             f->ph, f->pw);
    fft_plan(f, h->nt);
    PK_CHECK(f->sp.fwd && f->sp.inv, PK_EINTERNAL, "conv2d fft: FFTW could not plan a %d x %d r2c/c2r",
             f->ph, f->pw);
    return fft_kernel(f, d, h->psf, h->nt);
}

static void run_fft(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    cv_fft *f = h->priv;
    const int a = d->kh / 2, b = d->kw / 2;
    /* Rows and columns needed beyond the image on padded dimensions; the rest is zero. */
    const int ey = f->pad_y ? d->h + (d->kh < d->h ? d->kh : d->h) - 1 : d->h;
    const int ex = f->pad_x ? d->w + (d->kw < d->w ? d->kw : d->w) - 1 : d->w;
    const long nc = (long)f->ph * f->pwc;
#pragma omp parallel for schedule(static) num_threads(h->nt)
    for (int y = 0; y < f->ph; ++y) {
        float *dst = f->sp.real + (size_t)y * f->pw;
        if (y < ey) {
            const int src = f->pad_y ? (int)((((long long)y - a) % d->h + d->h) % d->h) : y;
            pk_cv_wrap_row(h->image + (size_t)src * d->w, d->w, f->pad_x ? b : 0, ex, dst);
            memset(dst + ex, 0, (size_t)(f->pw - ex) * sizeof(float));
        } else {
            memset(dst, 0, (size_t)f->pw * sizeof(float));
        }
    }
    fftwf_execute(f->sp.fwd);
    fftwf_complex *restrict s = f->sp.spec;
    const fftwf_complex *restrict g = f->sp.kern;
#pragma omp parallel for schedule(static) num_threads(h->nt)
    for (long i = 0; i < nc; ++i) {
        const float re = s[i][0] * g[i][0] - s[i][1] * g[i][1];
        const float im = s[i][0] * g[i][1] + s[i][1] * g[i][0];
        s[i][0] = re;
        s[i][1] = im;
    }
    fftwf_execute(f->sp.inv);
#pragma omp parallel for schedule(static) num_threads(h->nt)
    for (int y = 0; y < d->h; ++y)
        memcpy(h->out + (size_t)y * d->w, f->sp.real + (size_t)y * f->pw, (size_t)d->w * sizeof(float));
}

/* ---- fft: overlap-save tiles ------------------------------------------------------------- */
/* Output tiles of vy x vx pixels, each the valid part of an ny x nx circular correlation
 * (ny = vy + kh - 1, nx = vx + kw - 1, 2^a or 3 x 2^a) of the wrapped image rows and columns it
 * reads: out[i][j] = sum_{k,l} in[i + k][j + l] psf[k][l] never wraps for i < vy, j < vx.
 * The PSF's spectrum is made once per plan; the threads take whole tiles, each transform
 * single-threaded on the thread's own cache-sized buffers (new-array execute of one plan
 * pair).  So no frame-sized transform buffers (frame-fft's 3 x 18 MB at 813 x 5271,
 * first-touched by a one-shot call) and no frame-sized planning. */
typedef struct cv_os {
    cv_spectra sp;   /* real nt x ny x nx, spec nt x ny x nxc (per thread), kern ny x nxc */
    int ny, nx, nxc; /* transform extents; nxc = nx / 2 + 1 */
    int vy, vx;      /* valid outputs per tile */
    int ty, tx;      /* tiles down and across */
    size_t rstride, cstride; /* per-thread buffer sizes (floats, complex), 64-byte multiples */
    int rigor;       /* conv2d.fft_plan: 0 auto, 1 estimate, 2 measure */
    double cost;     /* of the tiles, in the size choice's units */
} cv_os;

/* The largest tile transform the size choice takes, in floats (1 MiB real + 1 MiB complex
 * per thread: an L2 share), unless the PSF needs more. */
#define CV_OS_MAX_POINTS (1 << 18)

/* Next integer >= n of the form 2^a or 3 x 2^a, 0 beyond INT_MAX.  Tiles take only those:
 * FFTW (r2c + c2r, one thread, this Xeon) took per valid output of a 31 x 31 PSF 6.6 ns at
 * 256 x 512, 6.7 at 512 x 512, 6.8 at 384 x 384, but 7.9 at 432 x 384 (3^3), 8.3 at
 * 448 x 384 (7) and 11.4 at 441 x 360 (3^2 7^2 x 2^3 3^2 5), and planned them faster. */
static int pow23_up(long long n)
{
    long long p2 = 1, p3 = 3;
    while (p2 < n) p2 *= 2;
    while (p3 < n) p3 *= 2;
    const long long m = n <= 1 ? 1 : p2 < p3 ? p2 : p3;
    return m <= INT_MAX ? (int)m : 0;
}

/* Tile extents minimising the FFT work, tiles x ny nx log2(ny nx), within CV_OS_MAX_POINTS;
 * when the PSF allows none within it, the smallest (ny >= kh, nx >= kw).  Candidates per
 * dimension: the n = 2^a or 3 x 2^a from k up to the first >= extent + k - 1 (a few
 * dozen); tiles of n - k + 1 valid outputs. */
static pk_status os_choose(const pk_cv_desc *d, cv_os *o)
{
    const int top_x = pow23_up((long long)d->w + d->kw - 1);
    const int top_y = pow23_up((long long)d->h + d->kh - 1);
    PK_CHECK(top_x > 0 && top_y > 0, PK_EOVERFLOW, "conv2d fft: no transform size for %d "
             "x %d with psf %d x %d", d->h, d->w, d->kh, d->kw);
    int cx = 0, *xs = NULL;
    for (int pass = 0; pass < 2; ++pass) { /* count, then fill */
        int c = 0;
        for (int n = pow23_up(d->kw); n > 0 && n <= top_x; n = n < top_x ? pow23_up(n + 1LL) : 0)
            if (pass) xs[c++] = n;
            else ++c;
        if (!pass && !(xs = malloc((size_t)c * sizeof *xs)))
            return pk_fail(PK_ENOMEM, "conv2d fft: out of host memory");
        cx = c;
    }
    double best = -1;
    o->ny = pow23_up(d->kh);
    o->nx = xs[0];
    for (int ny = o->ny; ny > 0 && ny <= top_y; ny = ny < top_y ? pow23_up(ny + 1LL) : 0) {
        const long long ty = (d->h + (long long)(ny - d->kh)) / (ny - d->kh + 1);
        for (int i = 0; i < cx; ++i) {
            const double pts = (double)ny * xs[i];
            if (pts > CV_OS_MAX_POINTS) break;
            const long long tx = (d->w + (long long)(xs[i] - d->kw)) / (xs[i] - d->kw + 1);
            const double cost = (double)ty * (double)tx * pts * log2(pts > 2 ? pts : 2);
            if (best < 0 || cost < best) {
                best = cost;
                o->ny = ny;
                o->nx = xs[i];
            }
        }
    }
    free(xs);
    o->cost = best;
    o->vy = o->ny - d->kh + 1;
    o->vx = o->nx - d->kw + 1;
    o->ty = (d->h + o->vy - 1) / o->vy;
    o->tx = (d->w + o->vx - 1) / o->vx;
    o->nxc = o->nx / 2 + 1;
    PK_CHECK((long long)o->ty * o->tx <= INT_MAX, PK_EUNSUPPORTED, "conv2d fft: %d x %d "
             "tiles of %d x %d exceed 2^31 - 1", o->ty, o->tx, o->ny, o->nx);
    return PK_OK;
}

static void os_free(void *p)
{
    cv_os *o = p;
    if (!o) return;
    spectra_free(&o->sp);
    free(o);
}

/* One thread's plans (the threads run tiles, not transforms), on thread 0's buffers; every
 * thread's buffers have the same (64-byte) alignment, as new-array execute needs. */
static void os_plan_pair(cv_os *o, unsigned flags)
{
    o->sp.fwd = fftwf_plan_dft_r2c_2d(o->ny, o->nx, o->sp.real, o->sp.spec, flags);
    o->sp.inv = fftwf_plan_dft_c2r_2d(o->ny, o->nx, o->sp.spec, o->sp.real, flags | FFTW_DESTROY_INPUT);
    if (!o->sp.fwd || !o->sp.inv) spectra_destroy_plans(&o->sp); /* both or neither */
}

/* Measured plans (they overwrite the buffers: made before the PSF's spectrum) when asked,
 * or under auto when the wisdom has them; estimated ones otherwise. */
static void os_make_plans(void *p)
{
    cv_os *o = p;
    if (o->rigor != 1) os_plan_pair(o, FFTW_MEASURE | (o->rigor == 0 ? FFTW_WISDOM_ONLY : 0));
    if (!o->sp.fwd) os_plan_pair(o, FFTW_ESTIMATE);
}

/* The method's FFT on the whole frame instead of tiles when that is cheaper: large PSFs
 * (a tile of at most 2^18 points keeps few valid outputs: from about 250 x 250 on the
 * 813 x 5271 frame) and PSFs larger than the image (folded onto the frame's torus).  The frame's transforms ran 1.4-2.4x slower per
 * n log2 n than the tiles' (7-smooth extents with factors 5 and 7, FFTW's threads inside
 * each transform instead of one tile per thread; 813 x 5271, 11 x 11 and 31 x 31): weighed 2x. */
#define CV_FRAME_WEIGHT 2.0
static int frame_cheaper(const pk_cv_desc *d, const cv_os *tiles)
{
    int pad;
    const double ph = fft_extent(d->h, d->kh, &pad), pw = fft_extent(d->w, d->kw, &pad);
    if (ph <= 0 || pw <= 0) return 0;
    const double pts = ph * pw;
    return tiles->cost < 0 || CV_FRAME_WEIGHT * pts * log2(pts > 2 ? pts : 2) < tiles->cost;
}

static pk_status os_create(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    cv_os *o = calloc(1, sizeof *o);
    if (!o) return pk_fail(PK_ENOMEM, "conv2d fft: out of host memory");
    h->priv = o;
    h->priv_free = os_free;
    int rigor[2] = {0, 0};
    PK_TRY(pk_param_get(d->tuning, PK_PARAM_CONV2D_FFT_PLAN, rigor));
    o->rigor = rigor[0];
    PK_TRY(os_choose(d, o));
    const size_t pts = (size_t)o->ny * (size_t)o->nx, cpts = (size_t)o->ny * (size_t)o->nxc;
    o->rstride = (pts + 15) & ~(size_t)15;
    o->cstride = (cpts + 7) & ~(size_t)7;
    size_t rb, cb, kb;
    PK_CHECK(pk_mul3_size(o->rstride, (size_t)h->nt, sizeof(float), &rb) == 0 &&
                 pk_mul3_size(o->cstride, (size_t)h->nt, sizeof(fftwf_complex), &cb) == 0 &&
                 pk_mul3_size(cpts, 1, sizeof(fftwf_complex), &kb) == 0,
             PK_EOVERFLOW, "conv2d fft: %d threads' %d x %d tiles overflow size_t", h->nt,
             o->ny, o->nx);
    o->sp.real = pk_alloc_aligned(rb);
    o->sp.spec = pk_alloc_aligned(cb);
    o->sp.kern = pk_alloc_aligned(kb);
    PK_CHECK(o->sp.real && o->sp.spec && o->sp.kern, PK_ENOMEM, "conv2d fft: cannot allocate %zu + "
             "%zu + %zu bytes of %d x %d tiles", rb, cb, kb, o->ny, o->nx);
    pk_fftwf_planner(1, os_make_plans, o);
    PK_CHECK(o->sp.fwd && o->sp.inv, PK_EINTERNAL, "conv2d fft: FFTW could not plan a %d x %d "
             "r2c/c2r", o->ny, o->nx);
    /* the PSF at the tile's origin, scaled by 1 / (ny nx) (FFTW's transforms are
     * unnormalised), its spectrum conjugated: a correlation */
    memset(o->sp.real, 0, pts * sizeof(float));
    for (int k = 0; k < d->kh; ++k)
        for (int l = 0; l < d->kw; ++l)
            o->sp.real[(size_t)k * o->nx + l] = (float)((double)h->psf[(size_t)k * d->kw + l] / (double)pts);
    fftwf_execute(o->sp.fwd);
    spectra_keep_psf(&o->sp, cpts, 1);
    return PK_OK;
}

static void run_os(pk_cv_host_plan *h)
{
    const pk_cv_desc *d = &h->d;
    const cv_os *o = h->priv;
    const int a = d->kh / 2, b = d->kw / 2, tiles = o->ty * o->tx;
    const size_t cpts = (size_t)o->ny * (size_t)o->nxc;
#pragma omp parallel num_threads(h->nt)
    {
        const int t = pk_thread_num();
        float *real = o->sp.real + o->rstride * (size_t)t;
        fftwf_complex *restrict spec = o->sp.spec + o->cstride * (size_t)t;
        const fftwf_complex *restrict g = o->sp.kern;
#pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < tiles; ++k) {
            const int oi0 = k / o->tx * o->vy, oj0 = k % o->tx * o->vx;
            /* rows oi0 .. oi0 + ny - 1 of the wrapped image, columns oj0 .. oj0 + nx - 1 */
            for (int y = 0; y < o->ny; ++y) {
                const int src = (int)((((long long)oi0 + y - a) % d->h + d->h) % d->h);
                pk_cv_wrap_row(h->image + (size_t)src * d->w, d->w,
                               (int)(((long long)b - oj0) % d->w), o->nx, real + (size_t)y * o->nx);
            }
            fftwf_execute_dft_r2c(o->sp.fwd, real, spec);
            for (size_t i = 0; i < cpts; ++i) {
                const float re = spec[i][0] * g[i][0] - spec[i][1] * g[i][1];
                const float im = spec[i][0] * g[i][1] + spec[i][1] * g[i][0];
                spec[i][0] = re;
                spec[i][1] = im;
            }
            fftwf_execute_dft_c2r(o->sp.inv, spec, real);
            const int rows = d->h - oi0 < o->vy ? d->h - oi0 : o->vy;
            const int cols = d->w - oj0 < o->vx ? d->w - oj0 : o->vx;
            for (int y = 0; y < rows; ++y)
                memcpy(h->out + (size_t)(oi0 + y) * d->w + oj0, real + (size_t)y * o->nx,
                       (size_t)cols * sizeof(float));
        }
    }
}
#endif /* PK_HAVE_FFTW */

/* ---- the backend entry points -------------------------------------------------------------- */
pk_status pk_omp_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl)
{
    pk_cv_host_plan *h;
    PK_TRY(pk_cv_host_create(desc, &h));
    h->nt = cv_threads(desc);
    h->ops = &pk_openmp_cv_ops;
    pk_status s = PK_OK;
#ifdef PK_HAVE_FFTW
    cv_os probe;
    if (strcmp(h->variant, "frame-fft") == 0) {
        h->path = CV_PATH_FRAME;
        s = fft_create(h);
    } else if (strcmp(h->variant, "fft") == 0) {
        memset(&probe, 0, sizeof probe);
        s = os_choose(&h->d, &probe);
        h->path = s == PK_OK && frame_cheaper(&h->d, &probe) ? CV_PATH_FRAME : CV_PATH_TILES;
        if (s == PK_OK) s = h->path == CV_PATH_FRAME ? fft_create(h) : os_create(h);
    } else
#endif
    if (strcmp(h->variant, "omp-rb") == 0) {
        h->path = CV_PATH_RB;
        s = rb_create(h);
    } else {
        h->path = CV_PATH_OMP;
        size_t bytes;
        if (pk_mul3_size(pk_cv_ring_floats(desc, 1), (size_t)h->nt, sizeof(float), &bytes) != 0 ||
            !(h->priv = pk_alloc_aligned(bytes)))
            s = pk_fail(PK_ENOMEM, "conv2d omp: cannot allocate %d rings of %zu floats", h->nt,
                        pk_cv_ring_floats(desc, 1));
        h->priv_free = pk_free_aligned;
    }
    if (s != PK_OK) {
        pk_cv_host_destroy(h);
        return s;
    }
    *impl = h;
    return PK_OK;
}

pk_status pk_omp_cv_run(void *impl, double *seconds)
{
    pk_cv_host_plan *h = impl;
    double t0 = pk_now();
    switch (h->path) {
#ifdef PK_HAVE_FFTW
    case CV_PATH_FRAME: run_fft(h); break;
    case CV_PATH_TILES: run_os(h); break;
#endif
    case CV_PATH_RB: run_omp_rb(h); break;
    default: run_omp(h);
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The conv2d kernel family on this backend (lib/internal.h, pk_cv_ops). */
const pk_cv_ops pk_openmp_cv_ops = {
#ifdef PK_HAVE_FFTW
    .variants = "omp-rb,omp,fft,frame-fft",
#else
    .variants = "omp-rb,omp", /* no FFTW at configure time: no fft variant */
#endif
    .create = pk_omp_cv_create,
    .upload = pk_cv_host_upload,
    .run = pk_omp_cv_run,
    .download = pk_cv_host_download,
    .destroy = pk_cv_host_destroy,
    .execute = pk_cv_host_execute,
};
