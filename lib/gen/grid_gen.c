/* grid_gen.c - the data sets of `portkern gen grid` (docs/KERNELS.md 1.7 states the recipes).
 *
 * w-kernels (OSKAR's private_imager_init_wproj.c, after CASA's WPConvFunc): per plane i a
 * conv_size^2 screen, zero except the inner (conv_size/oversample)^2 samples around the
 * origin (stored with wrap-around), psi(l) psi(m) exp(i 2 pi w_i (sqrt(1-l^2-m^2) - 1)) with
 * w_i = i^2 / w_scale; its forward FFT (unnormalised, no shifts); the first quadrant kept;
 * support from the axes where |K| falls below 1e-3 of plane 0's peak; the stack scaled so
 * that plane 0 sums to 1 at grid-cell stride.
 *
 * The 2-D FFT is done as two 1-D passes that skip what is known to be zero or not needed:
 * only the inner rows of the screen are non-zero (row pass: inner FFTs, not conv_size), and
 * of the output only row 0, column 0 (for the support) and the m x m corner the gridder
 * reads are needed (column pass: m + 1 FFTs, not conv_size).  Same numbers as the full 2-D
 * transform, about 4x less work for the SKA sets.
 *
 * uv data: SKA1-LOW station layout (built-in procedural or a file), source at declination =
 * latitude (through zenith), hour angles from the elevation range, uvw by the textbook ENU ->
 * local XYZ -> (H, dec) rotation, in wavelengths at 100 MHz. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "grid_gen.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PK_HAVE_FFTW3
#include <fftw3.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define DEG (M_PI / 180.0)

static pk_status gg_fail(char *why, size_t len, pk_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static pk_status gg_fail(char *why, size_t len, pk_status s, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* ---- random numbers: splitmix64 seeds xoshiro256** (reproducible on every platform) ---- */
typedef struct gg_rng {
    uint64_t s[4];
} gg_rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void rng_seed(gg_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (int k = 0; k < 4; ++k) r->s[k] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(gg_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static double rng_uniform(gg_rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n) without modulo bias (Lemire's method would do; rejection is simpler). */
static uint64_t rng_below(gg_rng *r, uint64_t n)
{
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng_next(r);
    while (x >= limit);
    return x % n;
}

/* ---- kernels ---------------------------------------------------------------------------- */
double pk_gg_spheroidal(double nu)
{
    static const double p[2][5] = {{0.08203343, -0.3644705, 0.627866, -0.5335581, 0.2312756},
                                   {0.004028559, -0.03697768, 0.1021332, -0.1201436, 0.06412774}};
    static const double q[2][3] = {{1.0, 0.8212018, 0.2078043}, {1.0, 0.9599102, 0.2918724}};
    int row;
    double end;
    if (nu >= 0.0 && nu < 0.75) {
        row = 0;
        end = 0.75;
    } else if (nu >= 0.75 && nu <= 1.0) {
        row = 1;
        end = 1.0;
    } else {
        return 0.0;
    }
    const double d = nu * nu - end * end;
    const double num = p[row][0] + d * (p[row][1] + d * (p[row][2] + d * (p[row][3] + d * p[row][4])));
    const double den = q[row][0] + d * (q[row][1] + d * q[row][2]);
    return den == 0.0 ? 0.0 : num / den;
}

double pk_gg_w_scale(const pk_gg_kernel_params *kp)
{
    if (kp->num_w_planes <= 1 || !(kp->max_w > 0)) return 0.0;
    const double n1 = kp->num_w_planes - 1;
    return n1 * n1 / kp->max_w;
}

pk_status pk_gg_kernel_params_check(const pk_gg_kernel_params *kp, char *why, size_t len)
{
    if (!kp) return gg_fail(why, len, PK_ENULL, "kernel parameters: NULL");
    if (kp->oversample < 2 || kp->oversample % 2 || kp->oversample > 1024)
        return gg_fail(why, len, PK_EINVAL, "oversample: must be even, in [2, 1024], got %d",
                       kp->oversample);
    if (kp->conv_size < 4 * kp->oversample || kp->conv_size % kp->oversample ||
        kp->conv_size % 2 || kp->conv_size > 16384 || (kp->conv_size / kp->oversample) % 2)
        return gg_fail(why, len, PK_EINVAL,
                       "conv_size: must be in [4 * oversample, 16384], a multiple of 2 * "
                       "oversample, got %d (oversample %d)", kp->conv_size, kp->oversample);
    if (kp->grid_size < 2 || kp->grid_size % 2 || kp->image_size < 2 ||
        kp->image_size > kp->grid_size)
        return gg_fail(why, len, PK_ESIZE,
                       "grid_size (%d) must be even and >= 2, image_size (%d) in [2, grid_size]",
                       kp->grid_size, kp->image_size);
    if (!isfinite(kp->cell_size_rad) || kp->cell_size_rad <= 0 ||
        sin(kp->cell_size_rad) * kp->image_size / 2 >= 1)
        return gg_fail(why, len, PK_EINVAL,
                       "cell_size_rad: must be > 0 with sin(cell) * image_size / 2 < 1, got %g",
                       kp->cell_size_rad);
    if (kp->num_w_planes < 1 || kp->num_w_planes > 100000)
        return gg_fail(why, len, PK_ESIZE, "num_w_planes: must be in [1, 100000], got %d",
                       kp->num_w_planes);
    if (kp->num_w_planes > 1 && !(isfinite(kp->max_w) && kp->max_w > 0))
        return gg_fail(why, len, PK_EINVAL, "max_w: must be finite and > 0, got %g", kp->max_w);
    return PK_OK;
}

#ifdef PK_HAVE_FFTW3
/* FFTW's planner is not thread-safe, and two threads of the caller may generate at once:
 * plans are made and destroyed under this lock (executing them needs none). */
static pthread_mutex_t gg_planner = PTHREAD_MUTEX_INITIALIZER;

/* What every plane shares: sizes, taper, plans (made once, executed by every thread on its
 * own buffers with fftw_execute_dft, which is thread-safe). */
typedef struct gg_fft {
    int conv, inner, half, os;
    double sampling, w_scale;
    double *taper;       /* [inner] */
    fftw_plan rows;      /* inner transforms of conv points, contiguous rows */
    fftw_plan col;       /* one transform of conv points */
} gg_fft;

typedef struct gg_work {
    fftw_complex *rows;  /* [inner][conv] */
    fftw_complex *col;   /* [conv] */
} gg_work;

static void gg_work_free(gg_work *w)
{
    fftw_free(w->rows);
    fftw_free(w->col);
    w->rows = w->col = NULL;
}

static int gg_work_alloc(const gg_fft *f, gg_work *w)
{
    w->rows = fftw_malloc(sizeof(fftw_complex) * (size_t)f->inner * (size_t)f->conv);
    w->col = fftw_malloc(sizeof(fftw_complex) * (size_t)f->conv);
    if (!w->rows || !w->col) {
        gg_work_free(w);
        return -1;
    }
    return 0;
}

static void gg_fft_free(gg_fft *f)
{
    pthread_mutex_lock(&gg_planner);
    if (f->rows) fftw_destroy_plan(f->rows);
    if (f->col) fftw_destroy_plan(f->col);
    pthread_mutex_unlock(&gg_planner);
    free(f->taper);
    memset(f, 0, sizeof *f);
}

static pk_status gg_fft_init(gg_fft *f, const pk_gg_kernel_params *kp, char *why, size_t len)
{
    memset(f, 0, sizeof *f);
    f->conv = kp->conv_size;
    f->os = kp->oversample;
    f->inner = kp->conv_size / kp->oversample;
    f->half = kp->conv_size / 2 - 1;
    f->w_scale = pk_gg_w_scale(kp);
    /* OSKAR: l_max = sin(fov / 2) with fov from the cell size, sampling of the screen in l
     * such that the FFT's output spacing is grid_cell / oversample */
    const double l_max = sin(kp->cell_size_rad) * kp->image_size / 2.0;
    f->sampling = (2.0 * l_max * kp->oversample / kp->image_size) *
                  ((double)kp->grid_size / (double)kp->conv_size);
    f->taper = malloc((size_t)f->inner * sizeof *f->taper);
    gg_work w = {NULL, NULL};
    if (!f->taper || gg_work_alloc(f, &w)) {
        free(f->taper);
        f->taper = NULL;
        return gg_fail(why, len, PK_ENOMEM, "w-kernels: out of host memory");
    }
    const int ih = f->inner / 2;
    for (int i = 0; i < f->inner; ++i) f->taper[i] = pk_gg_spheroidal(fabs((i - ih) / (double)ih));
    /* plans made here, once, under the planner lock */
    const int n = f->conv;
    pthread_mutex_lock(&gg_planner);
    f->rows = fftw_plan_many_dft(1, &n, f->inner, w.rows, NULL, 1, n, w.rows, NULL, 1, n,
                                 FFTW_FORWARD, FFTW_ESTIMATE);
    f->col = fftw_plan_dft_1d(n, w.col, w.col, FFTW_FORWARD, FFTW_ESTIMATE);
    pthread_mutex_unlock(&gg_planner);
    gg_work_free(&w);
    if (!f->rows || !f->col) {
        gg_fft_free(f);
        return gg_fail(why, len, PK_EINTERNAL, "w-kernels: FFTW could not plan a %d-point "
                       "transform", n);
    }
    return PK_OK;
}

/* Column x of the quadrant: the column pass for one output column (rows pass done). */
static void gg_column(const gg_fft *f, gg_work *w, int x)
{
    const int ih = f->inner / 2;
    memset(w->col, 0, sizeof(fftw_complex) * (size_t)f->conv);
    for (int t = 0; t < f->inner; ++t) {
        const int iy = t - ih, r = iy >= 0 ? iy : iy + f->conv;
        w->col[r][0] = w->rows[(size_t)t * f->conv + x][0];
        w->col[r][1] = w->rows[(size_t)t * f->conv + x][1];
    }
    fftw_execute_dft(f->col, w->col, w->col);
}

/* One plane: screen, row pass, support (threshold > 0; for plane 0 pass threshold <= 0 and
 * get the peak back), then the m x m corner (double complex, unnormalised) when corner is
 * given (malloc'ed here).  Returns 0 or -1 (out of memory). */
static int gg_plane(const gg_fft *f, gg_work *w, int plane, double threshold, double *peak,
                    int32_t *support, double **corner, int *corner_m)
{
    const int conv = f->conv, inner = f->inner, ih = inner / 2, half = f->half, os = f->os;
    const double phase_f = f->w_scale > 0 ? 2.0 * M_PI * (double)plane * plane / f->w_scale : 0.0;
    memset(w->rows, 0, sizeof(fftw_complex) * (size_t)inner * conv);
    for (int t = 0; t < inner; ++t) {
        const double m = f->sampling * (t - ih);
        fftw_complex *row = w->rows + (size_t)t * conv;
        for (int s = 0; s < inner; ++s) {
            const int ix = s - ih;
            const double l = f->sampling * ix, rsq = 1.0 - (l * l + m * m);
            if (!(rsq > 0)) continue;
            const double phase = phase_f * (sqrt(rsq) - 1.0), a = f->taper[s] * f->taper[t];
            const int c = ix >= 0 ? ix : ix + conv;
            row[c][0] = a * cos(phase);
            row[c][1] = a * sin(phase);
        }
    }
    fftw_execute_dft(f->rows, w->rows, w->rows);

    /* support: K[0][x] (sum of the rows) and K[y][0] (column 0's transform), scanned from
     * the outside in as OSKAR does */
    double *axis = malloc(2 * (size_t)half * sizeof *axis); /* |K[0][x]|, |K[y][0]| */
    if (!axis) return -1;
    for (int x = 0; x < half; ++x) {
        double re = 0, im = 0;
        for (int t = 0; t < inner; ++t) {
            re += w->rows[(size_t)t * conv + x][0];
            im += w->rows[(size_t)t * conv + x][1];
        }
        axis[x] = hypot(re, im);
    }
    gg_column(f, w, 0);
    for (int y = 0; y < half; ++y) axis[half + y] = hypot(w->col[y][0], w->col[y][1]);
    if (threshold <= 0) {
        *peak = axis[0];
        threshold = 1e-3 * axis[0];
    }
    int s = 0, j;
    for (j = half - 1; j > 0; --j)
        if (axis[j] > threshold || axis[half + j] > threshold) break;
    free(axis);
    if (j > 0) {
        s = 1 + (int)(0.5 + (double)j / os);
        if (s * os * 2 >= conv) s = conv / 2 / os - 1;
        /* the corner the gridder reads must fit in the quadrant (oversample 2) */
        while (s > 0 && os / 2 + s * os + 1 > half) --s;
    }
    *support = s;
    if (!corner) return 0;
    const int mm = os / 2 + s * os + 1;
    double *c = malloc(2 * (size_t)mm * mm * sizeof *c);
    if (!c) return -1;
    for (int x = 0; x < mm; ++x) {
        gg_column(f, w, x);
        for (int y = 0; y < mm; ++y) {
            c[2 * ((size_t)y * mm + x)] = w->col[y][0];
            c[2 * ((size_t)y * mm + x) + 1] = w->col[y][1];
        }
    }
    *corner = c;
    *corner_m = mm;
    return 0;
}

/* Plane 0's sum at grid-cell stride over [-s0, s0]^2 (real part). */
static double gg_plane0_sum(const double *c, int m, int s0, int os)
{
    double sum = 0;
    for (int iy = -s0; iy <= s0; ++iy)
        for (int ix = -s0; ix <= s0; ++ix)
            sum += c[2 * ((size_t)abs(iy) * os * m + (size_t)abs(ix) * os)];
    return sum;
}
#endif /* PK_HAVE_FFTW3 */

void pk_gg_kernels_free(pk_gg_kernels *k)
{
    if (!k) return;
    free(k->support);
    free(k->plane_offset);
    free(k->compact);
    memset(k, 0, sizeof *k);
}

pk_status pk_gg_kernels_make(const pk_gg_kernel_params *kp, pk_gg_kernels *k, char *why,
                             size_t len)
{
    if (!k) return gg_fail(why, len, PK_ENULL, "w-kernels: NULL output");
    memset(k, 0, sizeof *k);
    pk_status st = pk_gg_kernel_params_check(kp, why, len);
    if (st != PK_OK) return st;
#ifndef PK_HAVE_FFTW3
    return gg_fail(why, len, PK_EUNSUPPORTED,
                   "w-kernels need FFTW (double precision, libfftw3): this portkern was "
                   "configured without it (install libfftw3-dev and re-run configure)");
#else
    const int P = kp->num_w_planes, os = kp->oversample;
    gg_fft f;
    if ((st = gg_fft_init(&f, kp, why, len)) != PK_OK) return st;
    k->kp = *kp;
    k->w_scale = f.w_scale;
    k->support = calloc((size_t)P, sizeof *k->support);
    k->plane_offset = calloc((size_t)P + 1, sizeof *k->plane_offset);
    float **planes = calloc((size_t)P, sizeof *planes);
    double *c0 = NULL;
    int m0 = 0, failed = 0;
    gg_work w0 = {NULL, NULL};
    if (!k->support || !k->plane_offset || !planes || gg_work_alloc(&f, &w0)) goto nomem;
    /* plane 0 first: its peak sets every plane's threshold, its sum the normalisation */
    if (gg_plane(&f, &w0, 0, 0.0, &k->peak, &k->support[0], &c0, &m0)) goto nomem;
    gg_work_free(&w0);
    k->plane0_sum = gg_plane0_sum(c0, m0, k->support[0], os);
    if (!(k->plane0_sum != 0 && isfinite(k->plane0_sum))) {
        free(c0);
        free(planes);
        gg_fft_free(&f);
        pk_gg_kernels_free(k);
        return gg_fail(why, len, PK_EINTERNAL, "w-kernels: plane 0 sums to %g", k->plane0_sum);
    }
    const double scale = 1.0 / k->plane0_sum, threshold = 1e-3 * k->peak;
    if (!(planes[0] = malloc(2 * (size_t)m0 * m0 * sizeof(float)))) goto nomem;
    for (size_t i = 0; i < 2 * (size_t)m0 * m0; ++i) planes[0][i] = (float)(c0[i] * scale);
    free(c0);
    c0 = NULL;

#pragma omp parallel
    {
        gg_work w = {NULL, NULL};
        const int ok = gg_work_alloc(&f, &w) == 0;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int i = 1; i < P; ++i) {
            double *c = NULL, pk;
            int m = 0, stop;
#pragma omp atomic read
            stop = failed;
            if (!ok || stop) continue; /* out of memory somewhere: finish the loop quickly */
            if (gg_plane(&f, &w, i, threshold, &pk, &k->support[i], &c, &m) ||
                !(planes[i] = malloc(2 * (size_t)m * m * sizeof(float)))) {
                free(c);
#pragma omp atomic write
                failed = 1;
                continue;
            }
            for (size_t t = 0; t < 2 * (size_t)m * m; ++t) planes[i][t] = (float)(c[t] * scale);
            free(c);
        }
        gg_work_free(&w);
    }
    if (failed) goto nomem;
    size_t off = 0;
    for (int i = 0; i < P; ++i) {
        const size_t m = (size_t)(os / 2 + k->support[i] * os + 1);
        k->plane_offset[i] = off;
        off += m * m;
    }
    k->plane_offset[P] = off;
    if (!(k->compact = malloc(2 * off * sizeof(float)))) goto nomem;
    for (int i = 0; i < P; ++i) {
        memcpy(k->compact + 2 * k->plane_offset[i], planes[i],
               2 * (k->plane_offset[i + 1] - k->plane_offset[i]) * sizeof(float));
        free(planes[i]);
    }
    free(planes);
    gg_fft_free(&f);
    return PK_OK;
nomem:
    gg_work_free(&w0);
    free(c0);
    if (planes)
        for (int i = 0; i < P; ++i) free(planes[i]);
    free(planes);
    gg_fft_free(&f);
    pk_gg_kernels_free(k);
    return gg_fail(why, len, PK_ENOMEM, "w-kernels: out of host memory (%d planes)", P);
#endif
}

pk_status pk_gg_kernel_supports(const pk_gg_kernel_params *kp, const int *planes, int nplanes,
                                int32_t *support, int sym_plane, double **corner, int *corner_m,
                                char *why, size_t len)
{
    pk_status st = pk_gg_kernel_params_check(kp, why, len);
    if (st != PK_OK) return st;
    if (nplanes < 0 || (nplanes > 0 && (!planes || !support)))
        return gg_fail(why, len, PK_ENULL, "supports: planes and support must not be NULL");
    for (int i = 0; i < nplanes; ++i)
        if (planes[i] < 0 || planes[i] >= kp->num_w_planes)
            return gg_fail(why, len, PK_EINVAL, "supports: plane %d out of [0, %d)", planes[i],
                           kp->num_w_planes);
    if (corner && (sym_plane < 0 || sym_plane >= kp->num_w_planes || !corner_m))
        return gg_fail(why, len, PK_EINVAL, "supports: corner plane %d out of [0, %d)",
                       sym_plane, kp->num_w_planes);
#ifndef PK_HAVE_FFTW3
    (void)sym_plane;
    return gg_fail(why, len, PK_EUNSUPPORTED,
                   "w-kernels need FFTW (double precision, libfftw3): this portkern was "
                   "configured without it");
#else
    gg_fft f;
    gg_work w = {NULL, NULL};
    double peak = 0, *c0 = NULL, *c = NULL;
    int m0 = 0, m = 0;
    int32_t s0 = 0, s;
    if ((st = gg_fft_init(&f, kp, why, len)) != PK_OK) return st;
    if (gg_work_alloc(&f, &w) || gg_plane(&f, &w, 0, 0.0, &peak, &s0, &c0, &m0)) goto nomem;
    const double sum = gg_plane0_sum(c0, m0, s0, kp->oversample);
    for (int i = 0; i < nplanes; ++i) {
        if (planes[i] == 0) {
            support[i] = s0;
            continue;
        }
        if (gg_plane(&f, &w, planes[i], 1e-3 * peak, &peak, &support[i], NULL, NULL)) goto nomem;
    }
    if (corner) {
        if (sym_plane == 0) {
            c = c0;
            c0 = NULL;
            m = m0;
        } else if (gg_plane(&f, &w, sym_plane, 1e-3 * peak, &peak, &s, &c, &m)) {
            goto nomem;
        }
        for (size_t t = 0; t < 2 * (size_t)m * m; ++t) c[t] /= sum;
        *corner = c;
        *corner_m = m;
    }
    free(c0);
    gg_work_free(&w);
    gg_fft_free(&f);
    return PK_OK;
nomem:
    free(c0);
    gg_work_free(&w);
    gg_fft_free(&f);
    return gg_fail(why, len, PK_ENOMEM, "w-kernels: out of host memory");
#endif
}

pk_status pk_gg_kernels_full(const pk_gg_kernels *k, int *half, float **full, char *why,
                             size_t len)
{
    if (!k || !k->support || !half || !full)
        return gg_fail(why, len, PK_ENULL, "full kernels: NULL argument");
    pk_grid_params p;
    pk_grid_params_init(&p);
    p.grid_size = k->kp.grid_size;
    p.oversample = k->kp.oversample;
    p.cell_size_rad = k->kp.cell_size_rad;
    p.w_scale = k->w_scale;
    p.num_w_planes = k->kp.num_w_planes;
    p.kernel_layout = PK_GRID_KERNELS_FULL;
    for (int i = 0; i < p.num_w_planes; ++i)
        if (p.oversample / 2 + k->support[i] * p.oversample + 1 > p.conv_size_half)
            p.conv_size_half = p.oversample / 2 + k->support[i] * p.oversample + 1;
    const size_t plane = (size_t)p.conv_size_half * p.conv_size_half;
    float *f = malloc(2 * plane * (size_t)p.num_w_planes * sizeof *f);
    if (!f)
        return gg_fail(why, len, PK_ENOMEM, "full kernels: out of host memory (%d x %d x %d)",
                       p.num_w_planes, p.conv_size_half, p.conv_size_half);
    const pk_status s = pk_grid_expand_kernels(&p, k->support, k->compact, f);
    if (s != PK_OK) {
        free(f);
        return gg_fail(why, len, s, "full kernels: %s", pk_last_error());
    }
    *half = p.conv_size_half;
    *full = f;
    return PK_OK;
}

/* ---- layouts ---------------------------------------------------------------------------- */
void pk_gg_layout_free(pk_gg_layout *L)
{
    if (!L) return;
    free(L->enu);
    L->enu = NULL;
    L->num_stations = 0;
}

pk_status pk_gg_layout_procedural(pk_gg_layout *L)
{
    /* stations within radius r of the centre in the SKA1-LOW v6 layout (its radial counts,
     * docs/KERNELS.md 1.7; largest radius 39.8 km) */
    static const double cdf_r[] = {0, 100, 250, 500, 1000, 2000, 5000, 10000, 20000, 39800};
    static const double cdf_n[] = {0, 13, 77, 220, 277, 313, 370, 404, 458, 512};
    const int n = 512, core = 220, nseg = (int)(sizeof cdf_r / sizeof cdf_r[0]) - 1;
    const double golden = M_PI * (3.0 - sqrt(5.0));
    L->num_stations = 0;
    L->enu = calloc(3 * (size_t)n, sizeof *L->enu);
    if (!L->enu) return PK_ENOMEM;
    for (int k = 0; k < n; ++k) {
        const double c = k + 0.5;
        int g = 0;
        while (g < nseg - 1 && c > cdf_n[g + 1]) ++g;
        const double t = (c - cdf_n[g]) / (cdf_n[g + 1] - cdf_n[g]);
        /* innermost segment: uniform in area; beyond: logarithmic in radius */
        const double r = g == 0 ? cdf_r[1] * sqrt(t) : cdf_r[g] * pow(cdf_r[g + 1] / cdf_r[g], t);
        double phi;
        if (k < core) {
            phi = k * golden; /* Vogel spiral: evenly spread, no two stations close */
        } else {
            const int arm = (k - core) % 3;
            phi = arm * 2.0 * M_PI / 3.0 + 1.1 * log(r / 500.0) + 0.35;
        }
        L->enu[3 * k] = r * cos(phi);
        L->enu[3 * k + 1] = r * sin(phi);
        L->enu[3 * k + 2] = 0.0;
    }
    L->num_stations = n;
    return PK_OK;
}

pk_status pk_gg_layout_parse(const char *text, const char *name, pk_gg_layout *L, char *why,
                             size_t len)
{
    if (!L) return gg_fail(why, len, PK_ENULL, "layout: NULL output");
    L->num_stations = 0;
    L->enu = NULL;
    if (!text) return gg_fail(why, len, PK_ENULL, "layout: NULL text");
    size_t cap = 0;
    int line = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        const size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char buf[512];
        ++line;
        if (n >= sizeof buf) {
            pk_gg_layout_free(L);
            return gg_fail(why, len, PK_EFORMAT, "%s:%d: line too long", name, line);
        }
        memcpy(buf, p, n);
        buf[n] = '\0';
        p = eol ? eol + 1 : p + n;
        char *s = buf;
        while (isspace((unsigned char)*s)) ++s;
        if (*s == '\0' || *s == '#') continue;
        double v[3] = {0, 0, 0};
        int nv = 0;
        while (*s) {
            if (nv == 3) {
                pk_gg_layout_free(L);
                return gg_fail(why, len, PK_EFORMAT, "%s:%d: more than 3 columns (expected "
                               "E N [U] in metres)", name, line);
            }
            char *end;
            /* decimal only: strtod would also take 0x10, inf and nan */
            const size_t tok = strcspn(s, " \t\r\v\f,");
            int decimal = tok > 0;
            for (size_t k = 0; k < tok; ++k) decimal &= strchr("0123456789+-.eE", s[k]) != NULL;
            errno = 0;
            v[nv] = strtod(s, &end);
            if (!decimal || end == s || errno == ERANGE || !isfinite(v[nv]) ||
                (*end && !isspace((unsigned char)*end) && *end != ',')) {
                pk_gg_layout_free(L);
                return gg_fail(why, len, PK_EFORMAT, "%s:%d: '%.40s' is not a decimal number",
                               name, line, s);
            }
            /* a station beyond 10,000 km of the centre is not on this planet's array (and
             * its baselines would overflow the float uvw) */
            if (fabs(v[nv]) > PK_GG_MAX_OFFSET_M) {
                pk_gg_layout_free(L);
                return gg_fail(why, len, PK_EFORMAT, "%s:%d: %g m is beyond +-%g m of the "
                               "centre", name, line, v[nv], PK_GG_MAX_OFFSET_M);
            }
            ++nv;
            s = end;
            while (isspace((unsigned char)*s)) ++s;
            if (*s == ',') {
                ++s;
                while (isspace((unsigned char)*s)) ++s;
                if (!*s) {
                    pk_gg_layout_free(L);
                    return gg_fail(why, len, PK_EFORMAT, "%s:%d: trailing comma", name, line);
                }
            }
        }
        if (nv < 2) {
            pk_gg_layout_free(L);
            return gg_fail(why, len, PK_EFORMAT, "%s:%d: %d column%s (expected E N [U] in "
                           "metres)", name, line, nv, nv == 1 ? "" : "s");
        }
        if (L->num_stations == PK_GG_MAX_STATIONS) {
            pk_gg_layout_free(L);
            return gg_fail(why, len, PK_EFORMAT, "%s: more than %d stations", name,
                           PK_GG_MAX_STATIONS);
        }
        if ((size_t)L->num_stations == cap) {
            cap = cap ? 2 * cap : 256;
            double *e = realloc(L->enu, 3 * cap * sizeof *e);
            if (!e) {
                pk_gg_layout_free(L);
                return gg_fail(why, len, PK_ENOMEM, "layout: out of host memory");
            }
            L->enu = e;
        }
        memcpy(L->enu + 3 * (size_t)L->num_stations, v, sizeof v);
        ++L->num_stations;
    }
    if (L->num_stations < 2) {
        const int ns = L->num_stations;
        pk_gg_layout_free(L);
        return gg_fail(why, len, PK_EFORMAT, "%s: %d station%s (a layout needs at least 2)",
                       name, ns, ns == 1 ? "" : "s");
    }
    return PK_OK;
}

pk_status pk_gg_layout_read(const char *path, pk_gg_layout *L, char *why, size_t len)
{
    if (!path || !L) return gg_fail(why, len, PK_ENULL, "layout: NULL argument");
    L->num_stations = 0;
    L->enu = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return gg_fail(why, len, PK_EIO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    for (;;) {
        if (!text) {
            fclose(f);
            return gg_fail(why, len, PK_ENOMEM, "layout: out of host memory");
        }
        n += fread(text + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        if (cap >= ((size_t)64 << 20)) {
            free(text);
            fclose(f);
            return gg_fail(why, len, PK_EFORMAT, "%s: larger than 64 MiB", path);
        }
        char *t = realloc(text, 2 * cap);
        if (!t) free(text);
        text = t;
        cap *= 2;
    }
    const int err = ferror(f);
    fclose(f);
    if (err) {
        free(text);
        return gg_fail(why, len, PK_EIO, "%s: read error", path);
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        free(text);
        return gg_fail(why, len, PK_EFORMAT, "%s: not a text file (NUL byte)", path);
    }
    pk_status st = pk_gg_layout_parse(text, path, L, why, len);
    free(text);
    return st;
}

/* ---- data sets ---------------------------------------------------------------------------- */
/* The SKA sets share the EL82-70 imaging parameters (OxfordSKA gridding challenge; adamrcampbell/
 * w-projection re-created the stack with them).  num_w_planes are the published counts; max_w
 * of EL82-70 is published, those of EL56-82 and EL30-56 are not: they are the values for which
 * OSKAR's plane rule, num_w_planes = (int)(max_w * sin(cell * image_size / 2)), gives the
 * published count and this recipe the published maximum support (72, 95), found by bisection
 * with pk_gg_kernel_supports.  synthetic: see its recipe line. */
#define SKA_CELL 6.39954059065e-6
#define EL56_MAX_W 12531.0 /* plane rule: [12526.5, 12547.4); support 72: <= 12538 */
#define EL30_MAX_W 17175.0 /* support 95: about [17100, 17280]; the plane rule would give
                              824 planes (922 needs >= 19217, where the support is 105): the
                              published set was not made with these imaging parameters */
/* synthetic (the NAG report's set: 10000^2 grid, ~3000^2 touched, a bright central halo):
 * cell chosen so that 714 planes by OSKAR's rule, max_w = (714 + 0.5) / l_max, give the
 * published maximum support 36 (4.1e-6: 35, 4.3e-6: 37) */
#define SYN_CELL 4.2e-6
#define SYN_MAX_W ((714 + 0.5) / (SYN_CELL * 4000))
#define SYN_UV_MAX (1450.0 / (10000 * SYN_CELL))
/* small: a wide field (l_max 0.128) so that 32 planes still reach support 16 */
#define SMALL_CELL 3.2e-4
#define SMALL_MAX_W ((32 + 0.5) / (SMALL_CELL * 400))
#define SMALL_UV_MAX (300.0 / (1024 * SMALL_CELL))
#define SMALL_MAX_SUPPORT 16
#define SKA_KP(planes, maxw) {SKA_CELL, 15000, 18000, 4, 2048, planes, maxw}

static const pk_gg_dataset gg_datasets[] = {
    {"synthetic", PK_GG_RANDOM_UVW, 2152800, 36,
     {SYN_CELL, 8000, 10000, 4, 2048, 714, SYN_MAX_W}, 0, 0, 0, SYN_UV_MAX, SYN_MAX_W / 1.05,
     "random uvw: 2152800 draws; 60% uniform in a halo disc |uv| <= 0.3 uv_max, 40% with "
     "density ~ 1/|uv| out to uv_max (1450 cells); w = w_max * t * sqrt(|uv| / uv_max), t "
     "uniform in [-1, 1]; w_max = max_w / 1.05 (OSKAR's margin), planes from OSKAR's rule"},
    {"el82-70", PK_GG_SKA_TRACK, 31395840, 44, SKA_KP(339, 7083.386050), 82, 70, 240, 0, 0,
     "SKA1-LOW, 130816 baselines x 240 dumps, 100 MHz, source through zenith, elevation 82 -> "
     "70 deg (setting: hour angle +8.96 .. +22.44 deg)"},
    {"el56-82", PK_GG_SKA_TRACK, 31395840, 72, SKA_KP(601, EL56_MAX_W), 56, 82, 240, 0, 0,
     "SKA1-LOW, 130816 baselines x 240 dumps, 100 MHz, source through zenith, elevation 56 -> "
     "82 deg (rising: hour angle -38.2 .. -8.96 deg)"},
    {"el30-56", PK_GG_SKA_TRACK, 31395840, 95, SKA_KP(922, EL30_MAX_W), 30, 56, 240, 0, 0,
     "SKA1-LOW, 130816 baselines x 240 dumps, 100 MHz, source through zenith, elevation 30 -> "
     "56 deg (rising: hour angle -68.2 .. -38.2 deg)"},
    {"small", PK_GG_RANDOM_UVW, 50000, SMALL_MAX_SUPPORT,
     {SMALL_CELL, 800, 1024, 4, 256, 32, SMALL_MAX_W}, 0, 0, 0, SMALL_UV_MAX, SMALL_MAX_W / 1.05,
     "the synthetic recipe scaled down for tests and the small benchmark: 50000 draws on a "
     "1024 grid, 32 planes, FFT size 256"},
};

const pk_gg_dataset *pk_gg_dataset_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof gg_datasets / sizeof gg_datasets[0]; ++i)
        if (strcmp(name, gg_datasets[i].name) == 0) return &gg_datasets[i];
    return NULL;
}

const char *pk_gg_dataset_names(void) { return "synthetic, el82-70, el56-82, el30-56, small"; }

/* Hour angle (radians) of a source at declination = latitude at elevation el; rising (before
 * transit) is negative. */
static double ha_of_elevation(double el_deg, int rising)
{
    const double phi = PK_GG_SITE_LAT_DEG * DEG, s = sin(phi), c = cos(phi);
    double ch = (sin(el_deg * DEG) - s * s) / (c * c);
    ch = ch > 1 ? 1 : ch < -1 ? -1 : ch;
    return rising ? -acos(ch) : acos(ch);
}

static int ska_times(const pk_gg_vis_options *o)
{
    long t = lround(o->scale * o->ds->num_times);
    return t < 1 ? 1 : (int)t;
}

size_t pk_gg_vis_count(const pk_gg_vis_options *o)
{
    if (!o || !o->ds || !(o->scale > 0 && o->scale <= 1)) return 0;
    if (o->ds->kind == PK_GG_RANDOM_UVW) {
        const size_t n = (size_t)llround(o->scale * (double)o->ds->num_vis);
        return n < 1 ? 1 : n;
    }
    const size_t ns = o->layout ? (size_t)o->layout->num_stations : 512;
    return ns * (ns - 1) / 2 * (size_t)ska_times(o);
}

void pk_gg_vis_free(pk_gg_vis *v)
{
    if (!v) return;
    free(v->uu);
    free(v->vv);
    free(v->ww);
    free(v->vis);
    free(v->weight);
    memset(v, 0, sizeof *v);
}

/* Point sources, (l, m) as fractions of l_max, and flux. */
static const double gg_sources[][3] = {{0.10, 0.05, 1.0}, {-0.45, 0.30, 0.5}, {0.55, -0.50, 0.7}};

/* V = sum S exp(-2 pi i (u l + v m - w (n - 1))): the convention under which the gridded data
 * images correctly with this gridder (u negated on the grid, conj for w > 0; docs/KERNELS.md
 * 1.7). */
static void gg_fill_vis(pk_gg_vis *v, double l_max, int unit)
{
    const long long n = (long long)v->num_vis;
    const int ns = (int)(sizeof gg_sources / sizeof gg_sources[0]);
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) {
        double re = 0, im = 0;
        if (unit) {
            re = 1;
        } else {
            for (int s = 0; s < ns; ++s) {
                const double l = gg_sources[s][0] * l_max, m = gg_sources[s][1] * l_max;
                const double nm1 = sqrt(1 - l * l - m * m) - 1;
                const double ph = -2 * M_PI * ((double)v->uu[i] * l + (double)v->vv[i] * m -
                                               (double)v->ww[i] * nm1);
                re += gg_sources[s][2] * cos(ph);
                im += gg_sources[s][2] * sin(ph);
            }
        }
        v->vis[2 * i] = (float)re;
        v->vis[2 * i + 1] = (float)im;
    }
}

static int gg_cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

pk_status pk_gg_uniform_weights(int grid_size, double cell_size_rad, size_t n, const float *uu,
                                const float *vv, float *weight, char *why, size_t len)
{
    if (n && (!uu || !vv || !weight)) return gg_fail(why, len, PK_ENULL, "weights: NULL array");
    if (grid_size < 2 || grid_size % 2 || !(cell_size_rad > 0))
        return gg_fail(why, len, PK_EINVAL, "weights: bad grid (%d, %g)", grid_size,
                       cell_size_rad);
    const float scale = (float)(grid_size * cell_size_rad);
    const int centre = grid_size / 2;
    /* the centre cell of each visibility, as the gridder computes it; -1: off the grid */
    int64_t *cell = malloc((n ? n : 1) * sizeof *cell);
    if (!cell) return gg_fail(why, len, PK_ENOMEM, "weights: out of host memory");
    int umin = INT_MAX, umax = INT_MIN, vmin = INT_MAX, vmax = INT_MIN;
    for (size_t i = 0; i < n; ++i) {
        const float pu = roundf(-uu[i] * scale), pv = roundf(vv[i] * scale);
        cell[i] = -1;
        if (!(fabsf(pu) < (float)grid_size && fabsf(pv) < (float)grid_size)) continue;
        const int gu = (int)pu + centre, gv = (int)pv + centre;
        if (gu < 0 || gu >= grid_size || gv < 0 || gv >= grid_size) continue;
        cell[i] = (int64_t)gv * grid_size + gu;
        if (gu < umin) umin = gu;
        if (gu > umax) umax = gu;
        if (gv < vmin) vmin = gv;
        if (gv > vmax) vmax = gv;
    }
    pk_status st = PK_OK;
    if (umin <= umax) {
        /* counts over the bounding box of the centres when it is small enough (it is for
         * every data set here: the central ~5000^2 cells); else sort the cell indices */
        const size_t bw = (size_t)(umax - umin + 1), bh = (size_t)(vmax - vmin + 1);
        uint32_t *count = bw * bh <= ((size_t)1 << 28) ? calloc(bw * bh, sizeof *count) : NULL;
        if (count) {
            for (size_t i = 0; i < n; ++i)
                if (cell[i] >= 0)
                    ++count[(size_t)(cell[i] / grid_size - vmin) * bw + (size_t)(cell[i] % grid_size - umin)];
            for (size_t i = 0; i < n; ++i)
                weight[i] = cell[i] < 0 ? 1.0f
                            : 1.0f / (float)count[(size_t)(cell[i] / grid_size - vmin) * bw +
                                                  (size_t)(cell[i] % grid_size - umin)];
            free(count);
        } else {
            uint64_t *key = malloc(n * sizeof *key); /* cell << 32 | index would overflow */
            if (!key) {
                st = gg_fail(why, len, PK_ENOMEM, "weights: out of host memory");
            } else {
                size_t k = 0;
                for (size_t i = 0; i < n; ++i)
                    if (cell[i] >= 0) key[k++] = (uint64_t)cell[i];
                qsort(key, k, sizeof *key, gg_cmp_u64);
                for (size_t i = 0; i < n; ++i) {
                    if (cell[i] < 0) {
                        weight[i] = 1.0f;
                        continue;
                    }
                    /* equal range of cell[i] by two binary searches */
                    size_t lo = 0, hi = k;
                    while (lo < hi) {
                        const size_t mid = lo + (hi - lo) / 2;
                        if (key[mid] < (uint64_t)cell[i]) lo = mid + 1; else hi = mid;
                    }
                    size_t a = lo;
                    hi = k;
                    while (lo < hi) {
                        const size_t mid = lo + (hi - lo) / 2;
                        if (key[mid] <= (uint64_t)cell[i]) lo = mid + 1; else hi = mid;
                    }
                    weight[i] = 1.0f / (float)(lo - a);
                }
                free(key);
            }
        }
    } else {
        for (size_t i = 0; i < n; ++i) weight[i] = 1.0f;
    }
    free(cell);
    return st;
}

static pk_status gg_ska_uvw(const pk_gg_vis_options *o, pk_gg_vis *v, char *why, size_t len)
{
    pk_gg_layout own = {0, NULL};
    const pk_gg_layout *L = o->layout;
    if (!L) {
        if (pk_gg_layout_procedural(&own) != PK_OK)
            return gg_fail(why, len, PK_ENOMEM, "layout: out of host memory");
        L = &own;
    }
    const int ns = L->num_stations, T = ska_times(o);
    const size_t nb = (size_t)ns * (ns - 1) / 2;
    double *xyz = malloc(3 * (size_t)ns * sizeof *xyz);
    if (!xyz) {
        pk_gg_layout_free(&own);
        return gg_fail(why, len, PK_ENOMEM, "uvw: out of host memory");
    }
    const double phi = PK_GG_SITE_LAT_DEG * DEG, sp = sin(phi), cp = cos(phi);
    for (int s = 0; s < ns; ++s) { /* ENU -> local equatorial XYZ */
        const double e = L->enu[3 * s], nn = L->enu[3 * s + 1], u = L->enu[3 * s + 2];
        xyz[3 * s] = -sp * nn + cp * u;
        xyz[3 * s + 1] = e;
        xyz[3 * s + 2] = cp * nn + sp * u;
    }
    const pk_gg_dataset *ds = o->ds;
    const int rising = ds->el0_deg < ds->el1_deg;
    const double h0 = ha_of_elevation(ds->el0_deg, rising),
                 h1 = ha_of_elevation(ds->el1_deg, rising);
    const double dec = phi, sd = sin(dec), cd = cos(dec), inv_lambda = PK_GG_FREQ_HZ / PK_GG_C;
    double wmax = 0;
    for (int t = 0; t < T; ++t) {
        const double h = T == 1 ? 0.5 * (h0 + h1) : h0 + (h1 - h0) * t / (T - 1);
        const double sh = sin(h), ch = cos(h);
        size_t k = (size_t)t * nb;
        for (int i = 0; i < ns; ++i)
            for (int j = i + 1; j < ns; ++j, ++k) {
                const double lx = xyz[3 * j] - xyz[3 * i], ly = xyz[3 * j + 1] - xyz[3 * i + 1],
                             lz = xyz[3 * j + 2] - xyz[3 * i + 2];
                const double u = sh * lx + ch * ly;
                const double vv = -sd * ch * lx + sd * sh * ly + cd * lz;
                const double w = cd * ch * lx - cd * sh * ly + sd * lz;
                v->uu[k] = (float)(u * inv_lambda);
                v->vv[k] = (float)(vv * inv_lambda);
                v->ww[k] = (float)(w * inv_lambda);
                if (fabs(w * inv_lambda) > wmax) wmax = fabs(w * inv_lambda);
            }
    }
    v->num_times = T;
    v->max_abs_w = wmax;
    free(xyz);
    pk_gg_layout_free(&own);
    return PK_OK;
}

static void gg_random_uvw(const pk_gg_vis_options *o, pk_gg_vis *v)
{
    const pk_gg_dataset *ds = o->ds;
    gg_rng r;
    rng_seed(&r, o->seed, 1);
    double wmax = 0;
    for (size_t i = 0; i < v->num_vis; ++i) {
        const double a = rng_uniform(&r), b = rng_uniform(&r), c = rng_uniform(&r),
                     t = 2 * rng_uniform(&r) - 1;
        /* 60 %: uniform in the halo disc; 40 %: uniform in radius (density ~ 1/|uv|) */
        const double rad = a < 0.6 ? 0.3 * ds->uv_max * sqrt(b) : ds->uv_max * b;
        const double ang = 2 * M_PI * c, w = ds->w_max * t * sqrt(rad / ds->uv_max);
        v->uu[i] = (float)(rad * cos(ang));
        v->vv[i] = (float)(rad * sin(ang));
        v->ww[i] = (float)w;
        if (fabs(w) > wmax) wmax = fabs(w);
    }
    v->max_abs_w = wmax;
}

pk_status pk_gg_vis_make(const pk_gg_vis_options *o, pk_gg_vis *v, char *why, size_t len)
{
    if (!v) return gg_fail(why, len, PK_ENULL, "visibilities: NULL output");
    memset(v, 0, sizeof *v);
    if (!o || !o->ds) return gg_fail(why, len, PK_ENULL, "visibilities: no data set");
    if (!(o->scale > 0 && o->scale <= 1))
        return gg_fail(why, len, PK_EINVAL, "scale: must be in (0, 1], got %g", o->scale);
    if (o->layout && (o->layout->num_stations < 2 || !o->layout->enu))
        return gg_fail(why, len, PK_EINVAL, "layout: needs at least 2 stations");
    const size_t n = pk_gg_vis_count(o);
    v->num_vis = n;
    v->uu = malloc(n * sizeof(float));
    v->vv = malloc(n * sizeof(float));
    v->ww = malloc(n * sizeof(float));
    v->vis = malloc(2 * n * sizeof(float));
    v->weight = malloc(n * sizeof(float));
    if (!v->uu || !v->vv || !v->ww || !v->vis || !v->weight) {
        pk_gg_vis_free(v);
        return gg_fail(why, len, PK_ENOMEM, "visibilities: out of host memory for %zu", n);
    }
    pk_status st = PK_OK;
    if (o->ds->kind == PK_GG_SKA_TRACK)
        st = gg_ska_uvw(o, v, why, len);
    else
        gg_random_uvw(o, v);
    if (st != PK_OK) {
        pk_gg_vis_free(v);
        return st;
    }
    /* shuffled: the gridders must not rely on the time-major order */
    gg_rng r;
    rng_seed(&r, o->seed, 2);
    for (size_t i = n - 1; i > 0; --i) {
        const size_t j = (size_t)rng_below(&r, (uint64_t)i + 1);
        float t;
#define SWAP(a, x, y) (t = (a)[x], (a)[x] = (a)[y], (a)[y] = t)
        SWAP(v->uu, i, j);
        SWAP(v->vv, i, j);
        SWAP(v->ww, i, j);
#undef SWAP
    }
    const pk_gg_kernel_params *kp = &o->ds->kp;
    gg_fill_vis(v, sin(kp->cell_size_rad) * kp->image_size / 2.0, o->unit_vis);
    size_t beyond = 0;
    for (size_t i = 0; i < n; ++i) beyond += fabsf(v->ww[i]) > kp->max_w;
    v->num_beyond_max_w = beyond;
    st = pk_gg_uniform_weights(kp->grid_size, kp->cell_size_rad, n, v->uu, v->vv, v->weight, why,
                               len);
    if (st != PK_OK) pk_gg_vis_free(v);
    return st;
}
