/* image.c - the dirty image and its adjoint, degridding (docs/KERNELS.md section 7): validation,
 * the grid correction from plane 0 of the kernel stack, the plans (a grid plan or a degrid
 * backend plan, the correction, one FFTW plan and the g x g grid buffer, made once), the
 * fused crop / correction / normalisation pass and its adjoint, the degrid kernel class.
 *
 * The FFT is FFTW single precision, in place, complex to complex, threaded (fftw3f_omp or
 * fftw3f_threads), planned with FFTW_ESTIMATE under the library's planner lock
 * (pk_fftwf_planner).  No fftshift copies: the grid's centre cell g/2 is the origin of u, so
 *     sum_a G[a] e^{+2 pi i (a - g/2) p / g} = (-1)^p (FFT G)[p mod g]      (g even)
 * and the shift is a sign (-1)^(px + py) on the pixels read (and, for degridding, on the
 * pixels written before the forward transform), folded into the correction factors.
 *
 * On CUDA the FFT runs where the grid is (docs/KERNELS.md 7.7): an image plan whose grid plan
 * runs on CUDA makes cuda/image.cu's plan instead of the host FFT (grid, cuFFT and crop on
 * the device), a degrid plan on the "cuda" variant predicts through cuda/degrid.cu
 * (placement, cuFFT, gather); both with the factors made here (im_scorr), both falling back
 * to the host FFT when cuFFT cannot be loaded or the device lacks the memory.  On OpenCL the
 * same (cl/image_opencl.c, VkFFT's OpenCL backend through cl/fft_opencl.c): an image plan whose
 * grid plan runs on OpenCL and a degrid plan on "opencl" keep the grid on the device; without
 * VkFFT, with PORTKERN_TEST_NO_DEVICE_FFT set, or when the device lacks the memory, the host
 * FFT, said in the reason. */
#include "grid_host.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifdef PK_HAVE_FFTW
#include <fftw3.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define IM_NO_FFTW                                                                             \
    "this portkern was configured without FFTW single precision (fftw3f with fftw3f_omp or "   \
    "fftw3f_threads, and OpenMP): install libfftw3-dev and re-run configure"

void pk_image_params_init(pk_image_params *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    pk_grid_params_init(&p->grid);
}

/* ---- validation --------------------------------------------------------------------------- */
static pk_status im_validate(const pk_image_params *p, const int32_t *support)
{
    PK_CHECK_NULL(p);
    size_t count;
    PK_TRY(pk_grid_kernel_count(&p->grid, support, &count)); /* grid params and supports */
    const int g = p->grid.grid_size, n = p->image_size;
    const double cell = p->grid.cell_size_rad;
    PK_CHECK(n >= 2 && n % 2 == 0, PK_ESIZE, "image_size: must be even and >= 2, got %d", n);
    PK_CHECK(n <= g, PK_ESIZE,
             "image_size %d: larger than the grid (grid_size %d): the image is the central "
             "crop of the grid's inverse FFT", n, g);
    PK_CHECK(isfinite(p->image_cell_rad) &&
                 (p->image_cell_rad == 0 || fabs(p->image_cell_rad - cell) <= 1e-9 * cell),
             PK_EINVAL,
             "image_cell_rad %g: inconsistent with grid.cell_size_rad %g (the FFT of %d cells "
             "of 1 / (%d cell) wavelengths has pixels of exactly cell_size_rad; 0 takes it)",
             p->image_cell_rad, cell, g, g);
    PK_CHECK(n * cell / 2 < 1, PK_EINVAL,
             "image_size * cell_size_rad / 2 = %g: the image reaches beyond the horizon "
             "(direction cosines must stay below 1)", n * cell / 2);
    return PK_OK;
}

/* The correction of docs/KERNELS.md 7.2 from plane 0 (the first m x m samples of either
 * layout: plane 0 starts at 0, rows `stride` apart).  corr[x] = c(x - N/2), x in [0, N). */
static pk_status im_correction(const pk_image_params *p, const int32_t *support,
                               const float *kernels, double *corr, double *kappa)
{
    PK_CHECK_NULL(kernels);
    const int os = p->grid.oversample, s0 = support[0], m = os / 2 + s0 * os + 1;
    const size_t stride =
        p->grid.kernel_layout == PK_GRID_KERNELS_FULL ? (size_t)p->grid.conv_size_half : (size_t)m;
#define K0(y, x, c) ((double)kernels[2 * ((size_t)(y) * stride + (size_t)(x)) + (c)])
    double peak = 0;
    for (int y = 0; y < m; ++y)
        for (int x = 0; x < m; ++x) {
            PK_CHECK(isfinite(K0(y, x, 0)) && isfinite(K0(y, x, 1)), PK_ENONFINITE,
                     "kernels: plane 0 sample [%d][%d] is not finite", y, x);
            const double a = hypot(K0(y, x, 0), K0(y, x, 1));
            if (a > peak) peak = a;
        }
    const double k00 = K0(0, 0, 0);
    PK_CHECK(k00 > 0, PK_EINVAL,
             "kernels: plane 0's centre sample is %g: the grid correction needs a real, "
             "separable plane 0 a(y) a(x) with a(0)^2 = K0[0][0] > 0", k00);
    const double tol = PK_IMAGE_SEPARABLE_TOL * peak;
    for (int y = 0; y < m; ++y)
        for (int x = 0; x < m; ++x) {
            PK_CHECK(fabs(K0(y, x, 1)) <= tol, PK_EINVAL,
                     "kernels: plane 0 sample [%d][%d] has imaginary part %g (%.3g of the "
                     "peak, tolerance %g): plane 0 must be real to be corrected", y, x,
                     K0(y, x, 1), fabs(K0(y, x, 1)) / peak, PK_IMAGE_SEPARABLE_TOL);
            const double dev = K0(y, x, 0) - K0(y, 0, 0) * K0(0, x, 0) / k00;
            PK_CHECK(fabs(dev) <= tol, PK_EINVAL,
                     "kernels: plane 0 is not separable: sample [%d][%d] departs from "
                     "K0[%d][0] K0[0][%d] / K0[0][0] by %.3g of the peak (tolerance %g)", y, x,
                     y, x, fabs(dev) / peak, PK_IMAGE_SEPARABLE_TOL);
        }
    /* S(q) = sum_j t_j K0[0][|j|] cos(2 pi j q / (os g)), j in [-(m-1), m-1], t = 1/2 at the
     * ends (they are read only by the half-cell offsets +-os/2) */
    const int n = p->image_size;
    const double g = p->grid.grid_size;
    double s_zero = 0;
    for (int j = -(m - 1); j <= m - 1; ++j)
        s_zero += (abs(j) == m - 1 && m > 1 ? 0.5 : 1.0) * K0(0, abs(j), 0);
    PK_CHECK(s_zero > 0, PK_EINVAL,
             "kernels: plane 0's row 0 sums to %g: its transform must be > 0 at the centre",
             s_zero);
    for (int q = 0; q <= n / 2; ++q) {
        double s = K0(0, 0, 0);
        for (int j = 1; j < m; ++j)
            s += 2.0 * (j == m - 1 ? 0.5 : 1.0) * K0(0, j, 0) *
                 cos(2.0 * M_PI * j * (double)q / (os * g));
        const double c = s / s_zero;
        PK_CHECK(c > PK_IMAGE_MIN_CORRECTION, PK_EINVAL,
                 "image_size %d: the grid correction falls to %.3g at %d pixels from the centre "
                 "(at most %g allowed: the kernel's taper is too narrow for this image; use a "
                 "smaller image or a larger grid)", n, c, q, PK_IMAGE_MIN_CORRECTION);
        if (corr) {
            if (q < n / 2) corr[n / 2 + q] = c;
            corr[n / 2 - q] = c;
        }
    }
    if (kappa) *kappa = s_zero * s_zero / ((double)os * os * k00);
#undef K0
    return PK_OK;
}

pk_status pk_image_correction(const pk_image_params *p, const int32_t *support,
                              const float *kernels, double *corr, double *kappa)
{
    pk_clear_error();
    PK_TRY(im_validate(p, support));
    return im_correction(p, support, kernels, corr, kappa);
}

/* ---- degrid: the kernel class the dispatcher uses (CUDA's table: cuda/degrid.cu) ---------- */

static pk_status dg_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc, const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    (void)backend;
    pk_gr_desc d = *(const pk_gr_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_dg_ops *)kops)->create(state, device, &d, impl);
}

static void dg_destroy_on(const void *kops, void *impl) { ((const pk_dg_ops *)kops)->destroy(impl); }

/* The size measure wisdom matches a call by: the grid's bytes, as the plan's run info says
 * (and as lib/grid.c measures grid and image plans). */
static double dg_plan_bytes(const void *desc)
{
    const pk_gr_desc *d = desc;
    return 8.0 * (double)d->p.grid_size * d->p.grid_size;
}

static const pk_kernel_class dg_class = {
    .name = "degrid",
    .on = PK_KERNEL_ON(dg),
    .create = dg_create_on,
    .destroy = dg_destroy_on,
    .plan_bytes = dg_plan_bytes,
};

const char *pk_degrid_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&dg_class, backend);
}

/* A list to degrid: uu, vv, ww needed; vis is not read, weight may be NULL. */
static pk_status dg_validate_data(const pk_grid_data *d)
{
    PK_CHECK_NULL(d);
    PK_CHECK(d->num_vis <= SIZE_MAX / 16, PK_EOVERFLOW, "num_vis: %zu overflows size_t bytes",
             d->num_vis);
    if (d->num_vis == 0) return PK_OK;
    PK_CHECK(d->uu && d->vv && d->ww, PK_ENULL,
             "data: uu, vv and ww must not be NULL (num_vis = %zu)", d->num_vis);
    return PK_OK;
}

static pk_status dg_reference(const pk_grid_params *p, const int32_t *support,
                              const float *kernels, const float *grid, const double *grid64,
                              const pk_grid_data *d, float *vis, double *vis64,
                              int64_t *num_skipped)
{
    PK_TRY(dg_validate_data(d));
    PK_CHECK(vis || vis64, PK_ENULL, "vis: must not be NULL");
    pk_gr_stack st;
    PK_TRY(pk_gr_stack_init(&st, p, support, kernels));
    const int64_t sk = pk_dg_ref_run(&st.d.p, st.d.support, st.d.plane_offset, st.d.kernels, d,
                                     grid, grid64, vis, vis64, NULL, 0, d->num_vis, NULL);
    pk_gr_stack_free(&st);
    if (num_skipped) *num_skipped = sk;
    return PK_OK;
}

/* dg_reference's float gather on nt threads, each a contiguous share of the visibilities:
 * the same sums in the same order per visibility as on one thread, bit for bit. */
typedef struct dg_ref_share {
    const pk_gr_stack *st;
    const pk_grid_data *d;
    const float *grid;
    float *vis;
    int64_t skipped;
} dg_ref_share;

static void dg_ref_range(void *arg, size_t lo, size_t hi)
{
    dg_ref_share *a = arg;
    const int64_t sk = pk_dg_ref_run(&a->st->d.p, a->st->d.support, a->st->d.plane_offset,
                                     a->st->d.kernels, a->d, a->grid, NULL, a->vis, NULL, NULL,
                                     lo, hi, NULL);
    __atomic_fetch_add(&a->skipped, sk, __ATOMIC_RELAXED);
}

static pk_status dg_reference_threads(const pk_grid_params *p, const int32_t *support,
                                      const float *kernels, const float *grid,
                                      const pk_grid_data *d, float *vis, int nt,
                                      int64_t *num_skipped)
{
    PK_TRY(dg_validate_data(d));
    PK_CHECK(vis || d->num_vis == 0, PK_ENULL, "vis: must not be NULL");
    pk_gr_stack st;
    PK_TRY(pk_gr_stack_init(&st, p, support, kernels));
    dg_ref_share a = {&st, d, grid, vis, 0};
    /* bytes: a reason to start the team (the grid cells each visibility reads dominate) */
    pk_parallel_range(d->num_vis, 1024, d->num_vis * 64, nt, dg_ref_range, &a);
    pk_gr_stack_free(&st);
    if (num_skipped) *num_skipped = a.skipped;
    return PK_OK;
}

pk_status pk_degrid_reference(const pk_grid_params *p, const int32_t *support,
                              const float *kernels, const float *grid, const pk_grid_data *d,
                              float *vis, int64_t *num_skipped)
{
    pk_clear_error();
    PK_CHECK_NULL(grid);
    return dg_reference(p, support, kernels, grid, NULL, d, vis, NULL, num_skipped);
}

pk_status pk_degrid_reference_f64(const pk_grid_params *p, const int32_t *support,
                                  const float *kernels, const double *grid,
                                  const pk_grid_data *d, double *vis, int64_t *num_skipped)
{
    pk_clear_error();
    PK_CHECK_NULL(grid);
    return dg_reference(p, support, kernels, NULL, grid, d, NULL, vis, num_skipped);
}

/* ---- the host FFT part both plans share ---------------------------------------------------- */
/* The 2-D transform as two passes of 1-D FFTW transforms that skip what is known to be zero
 * or not needed, threaded over rows and over batches of columns (docs/KERNELS.md 7.6):
 *  image:  rows of the grid that hold a non-zero cell (the visibilities' band; the rest stay
 *          zero), then only the N columns of the crop, each batch of IM_BATCH columns copied
 *          into a contiguous per-thread buffer, transformed there, and its N crop rows
 *          written to the image with the shift's sign, the correction and 1 / norm (the crop
 *          pass fused into the column pass);
 *  degrid: the adjoint order: the N model columns placed (sign, correction, 1 / kappa) into
 *          the buffer, transformed and scattered into the grid's columns, then every row,
 *          the other columns zeroed first.
 * Measured on the 2-core host (el82-70 at scale 0.1, g 18000, N 15000, loaded machine): the
 * 2-D FFTW plan on 2 fftw3f_omp threads 12.8-16.7 s per transform, these passes about 4.5 s
 * (4096^2: 1.7 s against 0.35 s): the strided column access of the 2-D plan is what costs. */
#ifdef PK_HAVE_FFTW
/* columns per batch (measured 8: 3.9 s, 16: 4.9 s, 32: 7.6 s at g 18000; on the 2-core Zen 4,
 * whose 1 MiB L2 holds 4 columns of 18000 but not 8, 4 was slower: image cols+crop 0.51 s
 * against 0.41, degrid place+fft cols 0.60 against 0.57) */
#define IM_BATCH 8
/* rows ahead that the image's column gather prefetches (its pass at g 18000, 2 threads,
 * noisy: none 2.0-2.2 s, 16 1.7, 32-48 1.2-1.9, 128 2.4) */
#define IM_AHEAD 48

typedef struct im_host {
    pk_image_params p;
    int nt;             /* host threads of the passes */
    float *scorr;       /* [N]: (-1)^(x - N/2) / c(x - N/2): the shift's sign and the correction */
    double kappa;
    int sign;           /* FFTW_BACKWARD (image) or FFTW_FORWARD (degrid) */
    fftwf_complex *buf; /* g x g: the grid */
    fftwf_complex *cols; /* IM_BATCH x g: the column plan's array (each thread of a pass
                            allocates its own: FFTW's aligned malloc, as the plan's) */
    fftwf_plan row, col; /* one row in place; IM_BATCH contiguous columns in place */
    unsigned char *rows; /* [2 g]: [0, g) the grid rows the passes need (image: those that may
                            hold a non-zero cell, so after an execute the only rows of buf
                            that are not zero; degrid: those the gather reads), [g, 2 g)
                            im_mark_rows's scratch */
    int smax;            /* the widest support of the w-planes */
} im_host;

static void im_make_plans(void *arg)
{
    im_host *h = arg;
    int g = h->p.grid.grid_size;
    /* rows start 8 g bytes apart: aligned as the buffer when g is a multiple of 8 */
    const unsigned flags = FFTW_ESTIMATE | (g % 8 ? FFTW_UNALIGNED : 0);
    fftwf_complex *row = h->buf ? h->buf : h->cols; /* pk_image_passes: no grid of its own */
    h->row = fftwf_plan_many_dft(1, &g, 1, row, NULL, 1, g, row, NULL, 1, g, h->sign, flags);
    h->col = fftwf_plan_many_dft(1, &g, IM_BATCH, h->cols, NULL, 1, g, h->cols, NULL, 1, g,
                                 h->sign, flags);
}

static void im_destroy_plans(void *arg)
{
    im_host *h = arg;
    if (h->row) fftwf_destroy_plan(h->row);
    if (h->col) fftwf_destroy_plan(h->col);
    h->row = h->col = NULL;
}

static void im_host_free(im_host *h)
{
    if (h->row || h->col) pk_fftwf_unplan(im_destroy_plans, h);
    pk_free_zeroed(h->buf, (size_t)h->p.grid.grid_size * (size_t)h->p.grid.grid_size *
                               sizeof(fftwf_complex));
    pk_free_aligned(h->cols);
    free(h->scorr);
    free(h->rows);
    h->buf = h->cols = NULL;
    h->scorr = NULL;
    h->rows = NULL;
}

/* scorr[x] = (-1)^(x - N/2) / c(x - N/2), x in [0, N) (allocated here), and kappa: the
 * factors of the crop and of its adjoint, on the host and on CUDA (cuda/image.cu). */
static pk_status im_scorr(const pk_image_params *p, const int32_t *support, const float *kernels,
                          float **scorr, double *kappa)
{
    const int n = p->image_size;
    double *corr = malloc((size_t)n * sizeof *corr);
    float *sc = malloc((size_t)n * sizeof *sc);
    if (!corr || !sc) {
        free(corr);
        free(sc);
        return pk_fail(PK_ENOMEM, "image: out of host memory");
    }
    pk_status s = im_correction(p, support, kernels, corr, kappa);
    if (s == PK_OK)
        for (int x = 0; x < n; ++x) sc[x] = (float)((((x - n / 2) & 1) ? -1.0 : 1.0) / corr[x]);
    free(corr);
    if (s != PK_OK) {
        free(sc);
        return s;
    }
    *scorr = sc;
    return PK_OK;
}

/* with_grid 0: no g x g buffer (pk_image_passes transforms the caller's rows and columns) */
static pk_status im_host_init(im_host *h, const pk_image_params *p, const int32_t *support,
                              const float *kernels, int sign, int nt, int with_grid)
{
    memset(h, 0, sizeof *h);
    h->p = *p;
    h->sign = sign;
    h->nt = nt;
    const int g = p->grid.grid_size;
    PK_TRY(im_scorr(p, support, kernels, &h->scorr, &h->kappa));
    size_t bytes, cbytes;
    PK_CHECK(pk_mul3_size((size_t)g, (size_t)g, sizeof(fftwf_complex), &bytes) == 0 &&
                 pk_mul3_size((size_t)g, IM_BATCH, sizeof(fftwf_complex), &cbytes) == 0,
             PK_EOVERFLOW, "grid_size %d: the grid's bytes overflow size_t", g);
    /* Not fftwf_malloc: the grid-sized buffer is advised for huge pages (512 x fewer first-touch
     * faults in a one-shot call); 64-byte alignment covers FFTW's SIMD. */
    if (with_grid) h->buf = pk_alloc_zeroed(bytes); /* zeros: an execute clears the rows it used */
    h->cols = pk_alloc_aligned(cbytes);
    h->rows = calloc(2, (size_t)g);
    for (int w = 0; w < p->grid.num_w_planes; ++w)
        if (support[w] > h->smax) h->smax = support[w];
    PK_CHECK((h->buf || !with_grid) && h->cols && h->rows, PK_ENOMEM,
             "image: cannot allocate the %d x %d grid (%zu bytes) and %d column buffers", g, g,
             bytes, nt);
    pk_fftwf_planner(1, im_make_plans, h);
    PK_CHECK(h->row && h->col, PK_EINTERNAL, "image: FFTW could not plan %d-point transforms", g);
    return PK_OK;
}

/* What the FFT says in the run info's reason. */
static void im_host_note(const im_host *h, pk_backend_id backend, char *reason, size_t len)
{
    if ((backend == PK_BACKEND_OPENCL || backend == PK_BACKEND_CUDA) && h->sign == FFTW_BACKWARD)
        pk_append_note(reason, len,
                       "grid made on the device and downloaded, FFT on the host (FFTW single "
                       "precision, %d threads)", h->nt);
    else if (backend == PK_BACKEND_OPENCL || backend == PK_BACKEND_CUDA)
        pk_append_note(reason, len,
                       "FFT on the host (FFTW single precision, %d threads), the transformed "
                       "grid's box uploaded for the gather",
                       h->nt);
    else
        pk_append_note(reason, len, "FFT on the host (FFTW single precision, %d threads)",
                       h->nt);
}

static double im_fft_flops(int g) { return 5.0 * (double)g * g * log2((double)g * g); }

/* pk_image_passes' parts of the grid (im_rows.part; NULL: the host's whole grid h->buf) */
typedef struct im_part {
    fftwf_complex *rows;         /* row pass: the caller's rows (any number, in place) */
    const fftwf_complex *cols;   /* column pass: crop column xbase + j's grid rows [row0, row0 +
                                    nrows) at cols + j nrows (the other rows zero) */
    size_t row0, nrows;
    size_t slot0, xbase, stride; /* column pass: batches from slot0 on, image[y stride + x -
                                    xbase] */
} im_part;

typedef struct im_rows {
    const im_host *h;
    const float *in;  /* model (degrid); the caller's grid (pk_image_from_grid), or NULL */
    float *out;       /* image (image) */
    float scale;      /* 1 / norm (image), 1 / kappa (degrid) */
    int nomem;        /* a thread could not allocate its column buffer */
    int marked;       /* image: h->rows holds im_mark_rows's rows (else the row pass finds
                         the non-zero rows itself) */
    const im_part *part; /* image: rows and columns of the caller's (NULL: h->buf) */
} im_rows;

/* h->rows[y] = 1 for the grid rows within the widest support of a visibility's centre row
 * (pk_gr_locate's float arithmetic and rounding), 0 elsewhere: a superset of the rows the
 * gridder writes and the degridder reads (a visibility with its centre off the grid is
 * skipped by both).  At el82-70 x 0.1 29% of the 18000 rows (the uv band), so the passes
 * skip the FFTs, reads and writes of the other 71%. */
static void im_mark_rows(const im_host *h, const pk_grid_data *d)
{
    const int g = h->p.grid.grid_size, s = h->smax;
    const float scale = (float)(g * h->p.grid.cell_size_rad);
    unsigned char *centre = h->rows + g;
    memset(centre, 0, (size_t)g);
    for (size_t i = 0; i < d->num_vis; ++i) {
        const float rv = pk_gr_roundf(d->vv[i] * scale);
        if (!(fabsf(rv) <= (float)g)) continue; /* off the grid, or not finite */
        const int gv = (int)rv + g / 2;
        if (gv >= 0 && gv < g) centre[gv] = 1;
    }
    /* dilate by s: rows[y] = any centre in [y - s, y + s] (a running count of the window) */
    int count = 0;
    for (int y = 0; y < s && y < g; ++y) count += centre[y];
    for (int y = 0; y < g; ++y) {
        if (y + s < g) count += centre[y + s];
        if (y - s - 1 >= 0) count -= centre[y - s - 1];
        h->rows[y] = count > 0;
    }
}

/* A pass's column buffer (IM_BATCH x g), or NULL (r->nomem set).  The library's 64-byte
 * aligned allocation (FFTW's malloc is not documented thread-safe): the alignment FFTW saw
 * when it planned on h->cols. */
static fftwf_complex *im_colbuf(im_rows *r)
{
    fftwf_complex *cb = pk_alloc_aligned((size_t)r->h->p.grid.grid_size * IM_BATCH * sizeof *cb);
    if (!cb) {
#pragma omp atomic write
        r->nomem = 1;
    }
    return cb;
}

/* The rows the last execute left non-zero (the grid's rows are zeros elsewhere: fresh
 * pages, never written) */
static void im_zero_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const size_t g = (size_t)r->h->p.grid.grid_size;
    for (size_t y = lo; y < hi; ++y)
        if (r->h->rows[y]) memset(r->h->buf + y * g, 0, g * sizeof(fftwf_complex));
}

/* image's row pass: the marked rows, or (r->marked 0) the rows with a non-zero cell, found
 * here and marked for the column pass (a row of zeros transforms to zeros).  With r->in (a
 * caller's grid) the rows are read there and only the non-zero ones copied into the buffer,
 * whose other rows stay untouched zero pages. */
static void im_image_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const size_t g = (size_t)r->h->p.grid.grid_size;
    for (size_t y = lo; y < hi; ++y) {
        fftwf_complex *row = (r->part ? r->part->rows : r->h->buf) + y * g;
        int used = r->part ? 0 : r->h->rows[y];
        if (!r->marked) {
            const float *f = r->in ? r->in + 2 * y * g : (const float *)row;
            size_t i = 0;
            while (i < 2 * g && f[i] == 0.0f) ++i;
            used = i < 2 * g;
            if (!r->part) r->h->rows[y] = (unsigned char)used;
            if (used && r->in) memcpy(row, f, g * sizeof(fftwf_complex));
            /* a caller's row of zeros (some -0): +0, as the whole grid's column pass reads it */
            if (!used && r->part) memset(row, 0, g * sizeof(fftwf_complex));
        }
        if (used) fftwf_execute_dft(r->h->row, row, row);
    }
}

/* Grid column of crop column x (px = x - N/2 at index px mod g). */
static size_t im_col(int x, int n, int g) { return (size_t)(x < n / 2 ? x - n / 2 + g : x - n / 2); }

/* The column passes' batches ("slots") of up to IM_BATCH crop columns, laid so that a full
 * batch is one 64-byte line of every grid row when the rows start on a line (g % 8 == 0):
 * batches start where x - N/2 is a multiple of IM_BATCH (one starts at x = N/2, where the
 * grid column wraps, so none straddles it), the first slot [0, lead) the odd ones out.
 * A misaligned batch read two lines of every grid row and wrote both back after reading
 * them for ownership. */
static size_t im_lead(int n, int g) { return g % IM_BATCH ? 0 : (size_t)(n / 2 % IM_BATCH); }

static size_t im_slots(int n, int g)
{
    const size_t lead = im_lead(n, g);
    return (lead > 0) + ((size_t)n - lead + IM_BATCH - 1) / IM_BATCH;
}

/* Slot s's first column and width. */
static void im_slot(int n, int g, size_t s, size_t *x0, int *bw)
{
    const size_t lead = im_lead(n, g);
    size_t a = lead > 0 && s == 0 ? 0 : lead + (s - (lead > 0)) * IM_BATCH;
    size_t b = lead > 0 && s == 0 ? lead : a + IM_BATCH;
    if (b > (size_t)n) b = (size_t)n;
    *x0 = a;
    *bw = (int)(b - a);
}

/* image's column pass over crop columns [lo, hi), fused with the crop:
 * image[y][x] = Re F[py mod g][px mod g] (-1)^(px + py) / (c(px) c(py)) / norm */
static void im_image_cols(void *arg, size_t lo, size_t hi)
{
    im_rows *r = arg;
    const im_host *h = r->h;
    const int n = h->p.image_size, g = h->p.grid.grid_size, h2 = n / 2;
    const size_t gs = (size_t)g;
    fftwf_complex *cb = im_colbuf(r);
    if (!cb) return;
    const float *sc = h->scorr;
    const im_part *part = r->part;
    const size_t slot0 = part ? part->slot0 : 0, xbase = part ? part->xbase : 0;
    const size_t stride = part ? part->stride : (size_t)n;
    for (size_t slot = slot0 + lo; slot < slot0 + hi; ++slot) {
        size_t x0;
        int bw;
        im_slot(n, g, slot, &x0, &bw);
        size_t col[IM_BATCH];
        for (int b = 0; b < bw; ++b) col[b] = im_col((int)x0 + b, n, g);
        if (bw < IM_BATCH) /* the batch's unused columns: zeros, not stale values */
            memset(cb + (size_t)bw * gs, 0, (size_t)(IM_BATCH - bw) * gs * sizeof(fftwf_complex));
        for (int b = 0; part && b < bw; ++b) { /* the caller's rows of the column, zeros around */
            fftwf_complex *c = cb + (size_t)b * gs;
            const size_t r1 = part->row0 + part->nrows;
            memset(c, 0, part->row0 * sizeof(fftwf_complex));
            memcpy(c + part->row0, part->cols + (x0 + (size_t)b - xbase) * part->nrows,
                   part->nrows * sizeof(fftwf_complex));
            memset(c + r1, 0, (gs - r1) * sizeof(fftwf_complex));
        }
        for (size_t y = 0; !part && y < gs; ++y) {
            const fftwf_complex *src = h->buf + y * gs;
            /* rows lie g complex apart, beyond what the hardware prefetchers follow: each
             * row's line would be a miss at memory latency (the pass took 2 s at g 18000) */
            if (y + IM_AHEAD < gs && h->rows[y + IM_AHEAD]) {
                __builtin_prefetch(src + IM_AHEAD * gs + col[0], 0, 0);
                __builtin_prefetch(src + IM_AHEAD * gs + col[bw - 1], 0, 0);
            }
            if (!h->rows[y]) { /* zeros: not read */
                for (int b = 0; b < bw; ++b)
                    cb[(size_t)b * gs + y][0] = cb[(size_t)b * gs + y][1] = 0;
                continue;
            }
            for (int b = 0; b < bw; ++b) {
                cb[(size_t)b * gs + y][0] = src[col[b]][0];
                cb[(size_t)b * gs + y][1] = src[col[b]][1];
            }
        }
        fftwf_execute_dft(h->col, cb, cb);
        for (int y = 0; y < n; ++y) {
            const size_t yy = (size_t)(y < h2 ? y - h2 + g : y - h2);
            const float fy = sc[y] * r->scale;
            float *out = r->out + (size_t)y * stride + (x0 - xbase);
            for (int b = 0; b < bw; ++b) out[b] = cb[(size_t)b * gs + yy][0] * (fy * sc[x0 + b]);
        }
    }
    pk_free_aligned(cb);
}

/* The steps after the grid step, on the grid in h->buf: the row FFTs, then the column FFTs,
 * correction and crop into image, scaled by 1 / norm.  *t_rows: when the row pass ended. */
static pk_status im_grid_to_image(im_host *h, const float *src, float *image, double norm,
                                  int marked, double *t_rows)
{
    const int g = h->p.grid.grid_size;
    const double gg = (double)g * g;
    im_rows r = {h, src, image, norm != 0 ? (float)(1.0 / norm) : 0.0f, 0, marked, NULL};
    pk_parallel_range((size_t)g, 1, (size_t)(gg * 8), h->nt, im_image_rows, &r);
    *t_rows = pk_now();
    pk_parallel_range(im_slots(h->p.image_size, g), 1, (size_t)(gg * 8), h->nt, im_image_cols,
                      &r);
    PK_CHECK(!r.nomem, PK_ENOMEM, "image: cannot allocate a column buffer (%d x %d complex)",
             IM_BATCH, g);
    return PK_OK;
}

/* degrid's column pass over the slots [lo, hi) of model columns: placed with
 * (-1)^(px + py) / (kappa c c), transformed, scattered into the grid's columns (every row);
 * a full aligned batch is one line of each row, written with streaming stores (the row
 * pass reads the grid again only after the whole column pass) */
static void im_degrid_cols(void *arg, size_t lo, size_t hi)
{
    im_rows *r = arg;
    const im_host *h = r->h;
    const int n = h->p.image_size, g = h->p.grid.grid_size, h2 = n / 2;
    const size_t gs = (size_t)g;
    fftwf_complex *cb = im_colbuf(r);
    if (!cb) return;
    const float *sc = h->scorr;
    int streamed = 0;
    for (size_t slot = lo; slot < hi; ++slot) {
        size_t x0;
        int bw;
        im_slot(n, g, slot, &x0, &bw);
        /* zeros where nothing is placed: the padding rows [n - h2, g - h2) of the placed
         * columns, the unused columns of a partial batch whole */
        for (int b = 0; b < IM_BATCH; ++b) {
            const size_t z0 = b < bw ? (size_t)(n - h2) : 0, z1 = b < bw ? gs - (size_t)h2 : gs;
            memset(cb + (size_t)b * gs + z0, 0, (z1 - z0) * sizeof(fftwf_complex));
        }
        for (int y = 0; y < n; ++y) {
            const size_t yy = (size_t)(y < h2 ? y - h2 + g : y - h2);
            const float fy = sc[y] * r->scale;
            const float *in = r->in + (size_t)y * n + x0;
            for (int b = 0; b < bw; ++b) {
                cb[(size_t)b * gs + yy][0] = in[b] * (fy * sc[x0 + b]);
                cb[(size_t)b * gs + yy][1] = 0.0f;
            }
        }
        fftwf_execute_dft(h->col, cb, cb);
        size_t col[IM_BATCH];
        for (int b = 0; b < bw; ++b) col[b] = im_col((int)x0 + b, n, g);
#if defined(__SSE2__)
        if (bw == IM_BATCH && col[0] % IM_BATCH == 0 && gs % IM_BATCH == 0) {
            for (size_t y = 0; y < gs; ++y) {
                if (!h->rows[y]) continue; /* not read by the row pass or the gather */
                float *dst = (float *)(h->buf + y * gs + col[0]);
                for (int b = 0; b < IM_BATCH; b += 2) { /* two complex per 16-byte store */
                    const __m64 *lo = (const __m64 *)cb[(size_t)b * gs + y];
                    const __m64 *hi = (const __m64 *)cb[(size_t)(b + 1) * gs + y];
                    const __m128 v = _mm_loadh_pi(_mm_loadl_pi(_mm_setzero_ps(), lo), hi);
                    _mm_stream_ps(dst + 2 * b, v);
                }
            }
            streamed = 1;
            continue;
        }
#endif
        for (size_t y = 0; y < gs; ++y) {
            if (!h->rows[y]) continue;
            fftwf_complex *dst = h->buf + y * gs;
            for (int b = 0; b < bw; ++b) {
                dst[col[b]][0] = cb[(size_t)b * gs + y][0];
                dst[col[b]][1] = cb[(size_t)b * gs + y][1];
            }
        }
    }
    if (streamed) pk_stream_fence(); /* before the pass's barrier */
    pk_free_aligned(cb);
}

/* degrid's row pass: in each row the gather reads, the columns outside the model's zeroed and
 * the row transformed (the other rows keep what the column pass left: never read) */
static void im_degrid_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const int n = r->h->p.image_size, g = r->h->p.grid.grid_size;
    for (size_t y = lo; y < hi; ++y) {
        if (!r->h->rows[y]) continue;
        fftwf_complex *row = r->h->buf + y * (size_t)g;
        if (g > n) memset(row + n / 2, 0, (size_t)(g - n) * sizeof(fftwf_complex));
        fftwf_execute_dft(r->h->row, row, row);
    }
}

static int im_threads_for(pk_context *ctx, pk_backend_id backend)
{
    return backend == PK_BACKEND_SERIAL ? 1 : pk_host_threads(ctx->opt.threads);
}

static void im_stage(pk_run_info *info, const char *name, double s)
{
    if (!info || info->num_stages >= 8) return;
    pk_strlcpy(info->stage_name[info->num_stages], name, sizeof info->stage_name[0]);
    info->stage_s[info->num_stages++] = s;
}

/* An on-device FFT plan's creation status s: the failures that leave the host FFT (its library
 * missing or disabled, a size it refuses, not enough device memory) are noted in the reason
 * and cleared (PK_OK, *dev NULL); other failures are the plan's. */
static pk_status im_dev_fallback(pk_status s, void **dev, char *reason, size_t len)
{
    if (s == PK_ENOBACKEND || s == PK_EDEVMEM || s == PK_EUNSUPPORTED) {
        pk_append_note(reason, len, "no on-device FFT (%s)", pk_last_error());
        pk_clear_error();
        *dev = NULL;
        return PK_OK;
    }
    return s;
}

#ifdef PK_HAVE_OPENCL
/* The OpenCL plan with the FFT on the device (cl/image_opencl.c) on device `device`. */
static pk_status im_cl_init(pk_context *ctx, int device, const pk_image_params *p,
                            const int32_t *support, const float *kernels, int adjoint,
                            char *reason, size_t len, void **dev)
{
    float *sc;
    double kappa;
    PK_TRY(im_scorr(p, support, kernels, &sc, &kappa));
    pk_status s = pk_cl_im_create(ctx->slot[PK_BACKEND_OPENCL].state, device, p->grid.grid_size,
                                  p->image_size, sc, adjoint, 1.0 / kappa, dev);
    free(sc);
    return im_dev_fallback(s, dev, reason, len);
}
#endif
#endif /* PK_HAVE_FFTW */

/* ---- pk_image ------------------------------------------------------------------------------ */
struct pk_image_plan {
#ifdef PK_HAVE_FFTW
    im_host h;
#endif
    pk_grid_plan *gp;
    pk_run_info created; /* the grid plan's choice, for the run infos */
    pk_image_params p;
    void *dev;           /* cuda/image.cu's plan when the grid plan runs on CUDA (the FFT
                            where the grid is), else NULL: the host FFT */
    void *cl;            /* likewise cl/image_opencl.c's when it runs on OpenCL */
};

void pk_image_plan_destroy(pk_image_plan *plan)
{
    if (!plan) return;
#ifdef PK_HAVE_CUDA
    pk_cuda_im_destroy(plan->dev); /* before the grid plan: its device is still held */
#endif
#ifdef PK_HAVE_OPENCL
    pk_cl_im_destroy(plan->cl);
#endif
    pk_grid_plan_destroy(plan->gp);
#ifdef PK_HAVE_FFTW
    im_host_free(&plan->h);
#endif
    free(plan);
}

#if defined(PK_HAVE_CUDA) && defined(PK_HAVE_FFTW)
/* The CUDA path (cuda/image.cu).  cuFFT missing or the grid too large for the device: the
 * host FFT instead, said in the reason; other failures are the plan's. */
static pk_status im_cuda_init(pk_image_plan *pl, const pk_image_params *p,
                              const int32_t *support, const float *kernels)
{
    float *sc;
    double kappa;
    PK_TRY(im_scorr(p, support, kernels, &sc, &kappa));
    pk_status s = pk_cuda_im_create(pk_grid_plan_impl(pl->gp), p->grid.grid_size,
                                    p->image_size, sc, &pl->dev);
    free(sc);
    return im_dev_fallback(s, &pl->dev, pl->created.reason, sizeof pl->created.reason);
}
#endif

pk_status pk_image_plan_create(pk_image_plan **plan, pk_context *ctx, const pk_image_params *p,
                               const char *variant, const int32_t *support, const float *kernels,
                               pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
#ifndef PK_HAVE_FFTW
    (void)p;
    (void)variant;
    (void)support;
    (void)kernels;
    return pk_fail(PK_EUNSUPPORTED, "pk_image: %s", IM_NO_FFTW);
#else
    const double t0 = pk_now();
    PK_TRY(im_validate(p, support));
    PK_TRY(im_correction(p, support, kernels, NULL, NULL)); /* refused before any plan */
    pk_image_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "image: out of host memory");
    pl->p = *p;
    pk_status s = pk_gr_image_plan_create(&pl->gp, ctx, &p->grid, variant, support, kernels,
                                          &pl->created);
#ifdef PK_HAVE_CUDA
    if (s == PK_OK && pl->created.backend == PK_BACKEND_CUDA)
        s = im_cuda_init(pl, p, support, kernels);
#endif
#ifdef PK_HAVE_OPENCL
    if (s == PK_OK && pl->created.backend == PK_BACKEND_OPENCL)
        s = im_cl_init(ctx, pl->created.device, p, support, kernels, 0, pl->created.reason,
                       sizeof pl->created.reason, &pl->cl);
#endif
    if (s == PK_OK && !pl->dev && !pl->cl)
        s = im_host_init(&pl->h, p, support, kernels, FFTW_BACKWARD,
                         im_threads_for(ctx, pl->created.backend), 1);
    if (s != PK_OK) {
        pk_image_plan_destroy(pl);
        return s;
    }
    if (pl->dev)
        pk_append_note(pl->created.reason, sizeof pl->created.reason,
                       "grid, FFT (cuFFT C2C) and crop on the device; only the %d x %d image "
                       "downloaded", p->image_size, p->image_size);
    else if (pl->cl)
        pk_append_note(pl->created.reason, sizeof pl->created.reason,
                       "grid, FFT (VkFFT C2C, OpenCL) and crop on the device; only the %d x %d "
                       "image downloaded", p->image_size, p->image_size);
    else
        im_host_note(&pl->h, pl->created.backend, pl->created.reason, sizeof pl->created.reason);
    if (info) {
        *info = pl->created;
        info->setup_s = pk_now() - t0;
        info->wall_s = info->setup_s;
        info->plan_bytes = 8.0 * (double)p->grid.grid_size * p->grid.grid_size;
    }
    *plan = pl;
    return PK_OK;
#endif
}

#if defined(PK_HAVE_CUDA) && defined(PK_HAVE_FFTW)
static pk_status im_cuda_execute(pk_image_plan *plan, const pk_grid_data *d, float *image,
                                 double *norm, int64_t *num_skipped, pk_run_info *info)
{
    const double t0 = pk_now();
    const int g = plan->p.grid.grid_size, n = plan->p.image_size;
    const double gg = (double)g * g;
    pk_gr_result gr;
    double st[4];
    PK_TRY(pk_cuda_im_run(plan->dev, pk_grid_plan_impl(plan->gp), d, image, &gr, st));
    if (norm) *norm = gr.norm;
    if (num_skipped) *num_skipped = gr.num_skipped;
    if (info) {
        *info = plan->created;
        info->setup_s = 0;
        info->kernel_s = st[0] + st[1] + st[2];
        info->transfer_s = st[3];
        info->flops = 8.0 * gr.updates + im_fft_flops(g);
        /* the grid kernels' cells, the FFT (the grid read and written once per axis), the
         * zeroing and the crop; the visibilities' 24 bytes */
        info->bytes = 8.0 * gr.updates + 24.0 * (double)d->num_vis + 8.0 * gg * 5.0 +
                      12.0 * (double)n * n;
        info->num_stages = 0;
        im_stage(info, "grid", st[0]);
        im_stage(info, "fft", st[1]);
        im_stage(info, "correct", st[2]);
        im_stage(info, "transfer", st[3]);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}
#endif

#if defined(PK_HAVE_OPENCL) && defined(PK_HAVE_FFTW)
static pk_status im_cl_execute(pk_image_plan *plan, const pk_grid_data *d, float *image,
                               double *norm, int64_t *num_skipped, pk_run_info *info)
{
    const double t0 = pk_now();
    const int g = plan->p.grid.grid_size, n = plan->p.image_size;
    const double gg = (double)g * g;
    pk_gr_result gr;
    double st[5];
    PK_TRY(pk_cl_im_run(plan->cl, pk_grid_plan_impl(plan->gp), d, image, &gr, st));
    if (norm) *norm = gr.norm;
    if (num_skipped) *num_skipped = gr.num_skipped;
    if (info) {
        static const char *const names[5] = {"zero", "grid", "fft", "correct", "transfer"};
        *info = plan->created;
        info->setup_s = 0;
        info->kernel_s = st[0] + st[1] + st[2] + st[3];
        info->transfer_s = st[4];
        info->flops = 8.0 * gr.updates + im_fft_flops(g);
        info->bytes = 8.0 * gr.updates + 24.0 * (double)d->num_vis + 8.0 * gg * 5.0 +
                      12.0 * (double)n * n;
        info->num_stages = 0;
        for (int i = 0; i < 5; ++i) im_stage(info, names[i], st[i]);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}
#endif

pk_status pk_image_plan_execute(pk_image_plan *plan, const pk_grid_data *d, float *image,
                                double *norm, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_TRY(pk_gr_validate_data(d));
    PK_CHECK_NULL(image);
#ifndef PK_HAVE_FFTW
    (void)norm;
    (void)num_skipped;
    return pk_fail(PK_EUNSUPPORTED, "pk_image: %s", IM_NO_FFTW);
#else
#ifdef PK_HAVE_CUDA
    if (plan->dev) return im_cuda_execute(plan, d, image, norm, num_skipped, info);
#endif
#ifdef PK_HAVE_OPENCL
    if (plan->cl) return im_cl_execute(plan, d, image, norm, num_skipped, info);
#endif
    im_host *h = &plan->h;
    const int g = h->p.grid.grid_size, n = h->p.image_size;
    const double gg = (double)g * g;
    const double t0 = pk_now();
    im_rows r = {h, NULL, image, 0.0f, 0, 0, NULL};
    pk_parallel_range((size_t)g, 1, (size_t)(gg * 8), h->nt, im_zero_rows, &r);
    /* before the grid step: the rows it may write are marked even if it fails part way */
    im_mark_rows(h, d);
    const double t1 = pk_now();
    double nrm = 0;
    int64_t sk = 0;
    pk_run_info gi;
    PK_TRY(pk_grid_plan_execute(plan->gp, d, (float *)h->buf, &nrm, &sk, &gi));
    const double t2 = pk_now();
    double t3;
    PK_TRY(im_grid_to_image(h, NULL, image, nrm, 1, &t3));
    const double t4 = pk_now();
    if (norm) *norm = nrm;
    if (num_skipped) *num_skipped = sk;
    if (info) {
        *info = plan->created;
        info->setup_s = 0;
        info->kernel_s = gi.kernel_s + (t1 - t0) + (t4 - t2);
        info->transfer_s = gi.transfer_s;
        info->flops = gi.flops + im_fft_flops(g);
        /* the gridder's model, plus the FFT (the grid read and written once per axis), the
         * zeroing and the crop */
        info->bytes = gi.bytes + 8.0 * gg * 5.0 + 12.0 * (double)n * n;
        info->num_stages = 0;
        im_stage(info, "zero", t1 - t0);
        im_stage(info, "grid", t2 - t1);
        im_stage(info, "fft rows", t3 - t2);
        im_stage(info, "fft cols+crop", t4 - t3);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
#endif
}

/* ---- one-shot calls: the plan kept in the context ----------------------------------------- */
/* pk_image and pk_degrid keep their plan in the context's cache (pk_cache_keep_object) under
 * the key of grid's one-shot (lib/grid.c: parameters, supports, the compact stack compared
 * byte for byte) and the image's size and cell: a repeated call makes no plan, no FFTW plan
 * and no fresh g x g grid, whose marked rows a fresh buffer would fault in again. */
typedef struct im_oneshot {
    const pk_kernel_class *kc;
    pk_gr_stack st;
    double kp[10];
    pk_key_part key[3];
    void *plan;
    int reused;
    double bytes; /* the plan's g x g complex64 grid, as its create reports */
    pk_run_info created;
} im_oneshot;

static pk_status im_oneshot_find(im_oneshot *o, pk_context *ctx, const pk_kernel_class *kc,
                                 const char *variant, const pk_image_params *p,
                                 const int32_t *support, const float *kernels)
{
    memset(o, 0, sizeof *o);
    o->kc = kc;
    PK_CHECK_NULL(ctx);
    PK_TRY(im_validate(p, support));
    PK_TRY(pk_gr_stack_init(&o->st, &p->grid, support, kernels));
    const pk_grid_params *q = &o->st.d.p;
    const double kp[10] = {q->grid_size,    q->oversample, q->cell_size_rad,  q->w_scale,
                           q->num_w_planes, q->tile_size,  q->central_radius, q->tile_factor,
                           p->image_size,   p->image_cell_rad};
    memcpy(o->kp, kp, sizeof kp);
    const size_t np = (size_t)q->num_w_planes;
    o->key[0] = (pk_key_part){o->kp, sizeof o->kp};
    o->key[1] = (pk_key_part){support, np * sizeof *support};
    o->key[2] = (pk_key_part){o->st.d.kernels, 2 * o->st.plane_offset[np] * sizeof(float)};
    o->bytes = 8.0 * (double)q->grid_size * q->grid_size;
    o->plan = pk_cache_find_object(ctx, kc, variant, o->key, 3);
    o->reused = o->plan != NULL;
    return PK_OK;
}

/* After the call's execute (status s): a fresh plan kept or destroyed, a kept one that failed
 * dropped; the run info says what the call cost and whether its plan was reused. */
static pk_status im_oneshot_done(im_oneshot *o, pk_context *ctx, const char *variant,
                                 pk_status s, pk_run_info *info, double t0)
{
    if (o->reused && s != PK_OK) {
        pk_cache_drop_object(ctx, o->kc, o->plan);
    } else if (!o->reused && o->plan &&
               (s != PK_OK || !pk_cache_keep_object(ctx, o->kc, variant, o->key, 3, o->bytes,
                                                    o->plan, o->created.backend))) {
        o->kc->destroy(NULL, o->plan);
    }
    pk_gr_stack_free(&o->st);
    if (s == PK_OK && info) {
        info->setup_s = o->reused ? 0 : o->created.setup_s;
        info->plan_bytes = o->bytes;
        if (o->reused)
            pk_append_note(info->reason, sizeof info->reason, "plan reused from the context");
        info->wall_s = pk_now() - t0;
    }
    return s;
}

static void im_cache_destroy(const void *kops, void *plan)
{
    (void)kops;
    pk_image_plan_destroy(plan);
}
static const pk_kernel_class im_cache_class = {.name = "image", .destroy = im_cache_destroy};

pk_status pk_image(pk_context *ctx, const pk_image_params *p, const char *variant,
                   const int32_t *support, const float *kernels, const pk_grid_data *d,
                   float *image, double *norm, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_TRY(pk_gr_validate_data(d));
    PK_CHECK_NULL(image);
    im_oneshot o;
    pk_status s = im_oneshot_find(&o, ctx, &im_cache_class, variant, p, support, kernels);
    if (s == PK_OK && !o.reused) {
        pk_image_plan *plan = NULL;
        s = pk_image_plan_create(&plan, ctx, p, variant, support, kernels, &o.created);
        o.plan = plan;
    }
    if (s == PK_OK) s = pk_image_plan_execute(o.plan, d, image, norm, num_skipped, info);
    return im_oneshot_done(&o, ctx, variant, s, info, t0);
}

pk_status pk_image_from_grid(pk_context *ctx, const pk_image_params *p, const int32_t *support,
                             const float *kernels, const float *grid, double norm, float *image)
{
    pk_clear_error();
    PK_CHECK_NULL(grid);
    PK_CHECK_NULL(image);
#ifndef PK_HAVE_FFTW
    (void)ctx;
    (void)p;
    (void)support;
    (void)kernels;
    (void)norm;
    return pk_fail(PK_EUNSUPPORTED, "pk_image_from_grid: %s", IM_NO_FFTW);
#else
    PK_TRY(im_validate(p, support));
    const int nt = ctx ? pk_host_threads(ctx->opt.threads) : 1;
    im_host h;
    pk_status s = im_host_init(&h, p, support, kernels, FFTW_BACKWARD, nt, 1);
    if (s == PK_OK) {
        /* the execute's passes after its grid step, on the caller's non-zero rows (copied
         * into the plan's zero buffer as the row pass reaches them) */
        double t_rows;
        s = im_grid_to_image(&h, grid, image, norm, 0, &t_rows);
    }
    im_host_free(&h);
    return s;
#endif
}

/* ---- pk_image_passes: pk_image_from_grid's passes on parts of the grid ------------------- */
struct pk_image_passes {
#ifdef PK_HAVE_FFTW
    im_host h;
#endif
    int slots;
};

pk_status pk_image_passes_create(pk_image_passes **ip, pk_context *ctx, const pk_image_params *p,
                                 const int32_t *support, const float *kernels)
{
    pk_clear_error();
    PK_CHECK_NULL(ip);
    *ip = NULL;
#ifndef PK_HAVE_FFTW
    (void)ctx;
    (void)p;
    (void)support;
    (void)kernels;
    return pk_fail(PK_EUNSUPPORTED, "pk_image_passes_create: %s", IM_NO_FFTW);
#else
    PK_TRY(im_validate(p, support));
    pk_image_passes *q = calloc(1, sizeof *q);
    if (!q) return pk_fail(PK_ENOMEM, "image: out of host memory");
    const int nt = ctx ? pk_host_threads(ctx->opt.threads) : 1;
    pk_status s = im_host_init(&q->h, p, support, kernels, FFTW_BACKWARD, nt, 0);
    if (s != PK_OK) {
        pk_image_passes_destroy(q);
        return s;
    }
    q->slots = (int)im_slots(p->image_size, p->grid.grid_size);
    *ip = q;
    return PK_OK;
#endif
}

int pk_image_passes_batches(const pk_image_passes *ip) { return ip ? ip->slots : 0; }

pk_status pk_image_passes_batch(const pk_image_passes *ip, int b, int *x0, int *width)
{
    pk_clear_error();
    PK_CHECK_NULL(ip);
    PK_CHECK_NULL(x0);
    PK_CHECK_NULL(width);
    PK_CHECK(b >= 0 && b < ip->slots, PK_EINVAL, "batch: must be in [0, %d), got %d", ip->slots,
             b);
#ifdef PK_HAVE_FFTW
    size_t a;
    im_slot(ip->h.p.image_size, ip->h.p.grid.grid_size, (size_t)b, &a, width);
    *x0 = (int)a;
#endif
    return PK_OK;
}

pk_status pk_image_passes_rows(pk_image_passes *ip, float *rows, size_t nrows)
{
    pk_clear_error();
    PK_CHECK_NULL(ip);
    PK_CHECK(rows || nrows == 0, PK_ENULL, "rows: must not be NULL");
#ifdef PK_HAVE_FFTW
    const im_host *h = &ip->h;
    const im_part part = {(fftwf_complex *)rows, NULL, 0, 0, 0, 0, 0};
    im_rows r = {h, NULL, NULL, 0.0f, 0, 0, &part};
    const size_t g = (size_t)h->p.grid.grid_size;
    pk_parallel_range(nrows, 1, nrows * g * 8, h->nt, im_image_rows, &r);
#endif
    return PK_OK;
}

pk_status pk_image_passes_cols(pk_image_passes *ip, const float *cols, int row0, int nrows,
                               int b0, int b1, double norm, float *image, size_t stride)
{
    pk_clear_error();
    PK_CHECK_NULL(ip);
#ifdef PK_HAVE_FFTW
    const int g = ip->h.p.grid.grid_size;
    PK_CHECK(row0 >= 0 && nrows >= 0 && row0 <= g - nrows, PK_EINVAL,
             "row0, nrows: the rows held must lie in [0, %d), got %d, %d", g, row0, nrows);
#endif
    PK_CHECK(b0 >= 0 && b0 <= b1 && b1 <= ip->slots, PK_EINVAL,
             "batches: must be 0 <= b0 <= b1 <= %d, got %d, %d", ip->slots, b0, b1);
    if (b0 == b1) return PK_OK;
    PK_CHECK_NULL(cols);
    PK_CHECK_NULL(image);
#ifdef PK_HAVE_FFTW
    const im_host *h = &ip->h;
    int x0, w, xe, we;
    PK_TRY(pk_image_passes_batch(ip, b0, &x0, &w));
    PK_TRY(pk_image_passes_batch(ip, b1 - 1, &xe, &we));
    PK_CHECK(stride >= (size_t)(xe + we - x0), PK_EINVAL,
             "stride: must be at least the batches' %d columns, got %zu", xe + we - x0, stride);
    const im_part part = {NULL, (const fftwf_complex *)cols, (size_t)row0, (size_t)nrows,
                          (size_t)b0, (size_t)x0, stride};
    im_rows r = {h, NULL, image, norm != 0 ? (float)(1.0 / norm) : 0.0f, 0, 0, &part};
    pk_parallel_range((size_t)(b1 - b0), 1, (size_t)(xe + we - x0) * (size_t)g * 8, h->nt,
                      im_image_cols, &r);
    PK_CHECK(!r.nomem, PK_ENOMEM, "image: cannot allocate a column buffer (%d x %d complex)",
             IM_BATCH, g);
#else
    (void)row0;
    (void)nrows;
    (void)norm;
    (void)stride;
#endif
    return PK_OK;
}

void pk_image_passes_destroy(pk_image_passes *ip)
{
    if (!ip) return;
#ifdef PK_HAVE_FFTW
    im_host_free(&ip->h);
#endif
    free(ip);
}

/* ---- pk_degrid ----------------------------------------------------------------------------- */
struct pk_degrid_plan {
#ifdef PK_HAVE_FFTW
    im_host h;
#endif
    pk_choice c;
    int have_choice;
    int dev; /* the choice runs on CUDA with the FFT on the device (pk_cuda_dg_predict) */
    void *cl; /* cl/image_opencl.c's plan: the choice runs on OpenCL with the FFT on the device */
};

void pk_degrid_plan_destroy(pk_degrid_plan *plan)
{
    if (!plan) return;
#ifdef PK_HAVE_OPENCL
    pk_cl_im_destroy(plan->cl);
#endif
    if (plan->have_choice && plan->c.impl) ((const pk_dg_ops *)plan->c.kops)->destroy(plan->c.impl);
#ifdef PK_HAVE_FFTW
    im_host_free(&plan->h);
#endif
    free(plan);
}

pk_status pk_degrid_plan_create(pk_degrid_plan **plan, pk_context *ctx, const pk_image_params *p,
                                const char *variant, const int32_t *support,
                                const float *kernels, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
#ifndef PK_HAVE_FFTW
    (void)p;
    (void)variant;
    (void)support;
    (void)kernels;
    return pk_fail(PK_EUNSUPPORTED, "pk_degrid: %s", IM_NO_FFTW);
#else
    const double t0 = pk_now();
    PK_TRY(im_validate(p, support));
    PK_TRY(im_correction(p, support, kernels, NULL, NULL));
    pk_gr_stack st;
    PK_TRY(pk_gr_stack_init(&st, &p->grid, support, kernels));
    pk_degrid_plan *pl = calloc(1, sizeof *pl);
    if (!pl) {
        pk_gr_stack_free(&st);
        return pk_fail(PK_ENOMEM, "degrid: out of host memory");
    }
    pk_status s = pk_dispatch(ctx, &dg_class, variant, &st.d, NULL, NULL, &pl->c);
    pk_gr_stack_free(&st);
    if (s == PK_OK) pl->have_choice = 1;
#ifdef PK_HAVE_CUDA
    if (s == PK_OK && pl->c.backend == PK_BACKEND_CUDA) {
        /* the FFT where the grid is; cuFFT missing: the host FFT, said in the reason */
        float *sc;
        double kappa;
        s = im_scorr(p, support, kernels, &sc, &kappa);
        if (s == PK_OK) {
            s = pk_cuda_dg_image_init(pl->c.impl, p->image_size, sc, kappa);
            free(sc);
            if (s == PK_OK) {
                pl->dev = 1;
                pl->h.p = *p;
                pl->h.kappa = kappa;
            } else {
                void *none;
                s = im_dev_fallback(s, &none, pl->c.reason, sizeof pl->c.reason);
            }
        }
    }
#endif
#ifdef PK_HAVE_OPENCL
    if (s == PK_OK && pl->c.backend == PK_BACKEND_OPENCL) {
        s = im_cl_init(ctx, pl->c.device, p, support, kernels, 1, pl->c.reason,
                       sizeof pl->c.reason, &pl->cl);
        if (s == PK_OK && pl->cl) pl->h.p = *p;
    }
#endif
    if (s == PK_OK && !pl->dev && !pl->cl)
        s = im_host_init(&pl->h, p, support, kernels, FFTW_FORWARD,
                         im_threads_for(ctx, pl->c.backend), 1);
    if (s != PK_OK) {
        pk_degrid_plan_destroy(pl);
        return s;
    }
    if (pl->dev)
        pk_append_note(pl->c.reason, sizeof pl->c.reason,
                       "model placed, FFT (cuFFT C2C) and gather on the device; the grid never "
                       "crosses the link");
    else if (pl->cl)
        pk_append_note(pl->c.reason, sizeof pl->c.reason,
                       "model placed, FFT (VkFFT C2C, OpenCL) and gather on the device; the grid "
                       "never crosses the link");
    else
        im_host_note(&pl->h, pl->c.backend, pl->c.reason, sizeof pl->c.reason);
    pl->c.setup_s = pk_now() - t0;
    pl->c.plan_bytes = 8.0 * (double)p->grid.grid_size * p->grid.grid_size;
    if (info) {
        pk_choice_info(&pl->c, info);
        info->wall_s = info->setup_s;
    }
    *plan = pl;
    return PK_OK;
#endif
}

#if defined(PK_HAVE_FFTW) && (defined(PK_HAVE_CUDA) || defined(PK_HAVE_OPENCL))
/* What a prediction that ran on the device (CUDA or OpenCL: place, FFT, gather there) reports. */
static void dg_device_done(const pk_degrid_plan *plan, const pk_dg_result *res,
                           const double st[4], double t0, int64_t *num_skipped,
                           pk_run_info *info)
{
    const int g = plan->h.p.grid.grid_size;
    if (num_skipped) *num_skipped = res->num_skipped;
    if (!info) return;
    pk_choice_info(&plan->c, info);
    info->setup_s = 0;
    info->kernel_s = res->kernel_s;
    info->transfer_s = res->transfer_s;
    info->flops = 8.0 * res->updates + im_fft_flops(g);
    info->bytes = 24.0 * res->updates + 8.0 * (double)g * g * 5.0;
    im_stage(info, "place", st[0]);
    im_stage(info, "fft", st[1]);
    im_stage(info, "degrid", st[2]);
    im_stage(info, "transfer", st[3]);
    info->wall_s = pk_now() - t0;
}
#endif

#ifdef PK_HAVE_FFTW
/* The host passes of a prediction: the model placed (sign, correction, 1 / kappa) and
 * transformed into h->buf, columns then the rows that d's gather reads, on h->nt threads;
 * *t1, *t2: when each ended. */
static pk_status dg_host_passes(const im_host *h, const float *model, const pk_grid_data *d,
                                double *t1, double *t2)
{
    const int g = h->p.grid.grid_size;
    const double gg = (double)g * g;
    im_rows r = {h, model, NULL, (float)(1.0 / h->kappa), 0, 1, NULL};
    im_mark_rows(h, d);
    pk_parallel_range(im_slots(h->p.image_size, g), 1, (size_t)(gg * 8), h->nt, im_degrid_cols,
                      &r);
    *t1 = pk_now();
    PK_CHECK(!r.nomem, PK_ENOMEM, "degrid: cannot allocate a column buffer (%d x %d complex)",
             IM_BATCH, g);
    pk_parallel_range((size_t)g, 1, (size_t)(gg * 8), h->nt, im_degrid_rows, &r);
    *t2 = pk_now();
    return PK_OK;
}
#endif

pk_status pk_degrid_plan_execute(pk_degrid_plan *plan, const float *model, const pk_grid_data *d,
                                 float *vis, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(model);
    PK_TRY(dg_validate_data(d));
    PK_CHECK(vis || d->num_vis == 0, PK_ENULL, "vis: must not be NULL");
#ifndef PK_HAVE_FFTW
    (void)num_skipped;
    return pk_fail(PK_EUNSUPPORTED, "pk_degrid: %s", IM_NO_FFTW);
#else
    im_host *h = &plan->h;
    const int g = h->p.grid.grid_size;
    const double gg = (double)g * g;
    const double t0 = pk_now();
#ifdef PK_HAVE_CUDA
    if (plan->dev) {
        pk_dg_result res;
        double st[4];
        PK_TRY(pk_cuda_dg_predict(plan->c.impl, model, d, vis, &res, st));
        dg_device_done(plan, &res, st, t0, num_skipped, info);
        return PK_OK;
    }
#endif
#ifdef PK_HAVE_OPENCL
    if (plan->cl) {
        pk_dg_result res;
        double st[4];
        PK_TRY(pk_cl_dg_predict(plan->cl, plan->c.impl, model, d, vis, &res, st));
        dg_device_done(plan, &res, st, t0, num_skipped, info);
        return PK_OK;
    }
#endif
    double t1, t2;
    PK_TRY(dg_host_passes(h, model, d, &t1, &t2));
    pk_dg_result res;
    memset(&res, 0, sizeof res);
    PK_TRY(((const pk_dg_ops *)plan->c.kops)->run(plan->c.impl, (const float *)h->buf, d, vis,
                                                  &res));
    const double t3 = pk_now();
    if (num_skipped) *num_skipped = res.num_skipped;
    if (info) {
        pk_choice_info(&plan->c, info);
        info->setup_s = 0;
        info->kernel_s = res.kernel_s + (t2 - t0);
        info->transfer_s = res.transfer_s;
        info->flops = 8.0 * res.updates + im_fft_flops(g);
        info->bytes = 24.0 * res.updates + 8.0 * gg * 5.0;
        im_stage(info, "place+fft cols", t1 - t0);
        im_stage(info, "fft rows", t2 - t1);
        im_stage(info, "degrid", t3 - t2);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
#endif
}

static void dg_cache_destroy(const void *kops, void *plan)
{
    (void)kops;
    pk_degrid_plan_destroy(plan);
}
static const pk_kernel_class dg_cache_class = {.name = "degrid", .destroy = dg_cache_destroy};

pk_status pk_degrid(pk_context *ctx, const pk_image_params *p, const char *variant,
                    const int32_t *support, const float *kernels, const float *model,
                    const pk_grid_data *d, float *vis, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(model);
    PK_TRY(dg_validate_data(d));
    PK_CHECK(vis || d->num_vis == 0, PK_ENULL, "vis: must not be NULL");
    im_oneshot o;
    pk_status s = im_oneshot_find(&o, ctx, &dg_cache_class, variant, p, support, kernels);
    if (s == PK_OK && !o.reused) {
        pk_degrid_plan *plan = NULL;
        s = pk_degrid_plan_create(&plan, ctx, p, variant, support, kernels, &o.created);
        o.plan = plan;
    }
    if (s == PK_OK) s = pk_degrid_plan_execute(o.plan, model, d, vis, num_skipped, info);
    return im_oneshot_done(&o, ctx, variant, s, info, t0);
}

pk_status pk_degrid_host_reference(pk_context *ctx, const pk_image_params *p,
                                   const int32_t *support, const float *kernels,
                                   const float *model, const pk_grid_data *d, float *vis,
                                   int64_t *num_skipped)
{
    pk_clear_error();
    PK_CHECK_NULL(model);
    PK_TRY(dg_validate_data(d));
    PK_CHECK(vis || d->num_vis == 0, PK_ENULL, "vis: must not be NULL");
#ifndef PK_HAVE_FFTW
    (void)ctx, (void)p, (void)support, (void)kernels, (void)num_skipped;
    return pk_fail(PK_EUNSUPPORTED, "pk_degrid_host_reference: %s", IM_NO_FFTW);
#else
    PK_TRY(im_validate(p, support));
    PK_TRY(im_correction(p, support, kernels, NULL, NULL));
    im_host h;
    pk_status s = im_host_init(&h, p, support, kernels, FFTW_FORWARD,
                               ctx ? pk_host_threads(ctx->opt.threads) : 1, 1);
    if (s == PK_OK) {
        /* the serial plan's passes (pk_degrid_plan_execute), on h.nt threads: each column
         * batch and each row is one 1-D transform of the same plans whatever the count */
        double t1, t2;
        s = dg_host_passes(&h, model, d, &t1, &t2);
    }
    /* then the serial backend's gather: the reference loop (lib/degrid_serial.c) over
     * shares of the visibilities on the same threads (each visibility's sum is its own) */
    if (s == PK_OK) s = dg_reference_threads(&p->grid, support, kernels, (const float *)h.buf, d,
                                             vis, h.nt, num_skipped);
    im_host_free(&h);
    return s;
#endif
}
