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
 * pixels written before the forward transform), folded into the correction factors. */
#include "grid_host.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- degrid: the kernel class the dispatcher uses ----------------------------------------- */
#ifdef PK_HAVE_CUDA
const pk_dg_ops pk_cuda_dg_ops = {.variants = NULL}; /* not yet: the next step */
#endif

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

static double dg_plan_bytes(const void *desc)
{
    const pk_gr_desc *d = desc;
    return 8.0 * (double)d->plane_offset[d->p.num_w_planes];
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
                                     grid, grid64, vis, vis64, 0, d->num_vis, NULL);
    pk_gr_stack_free(&st);
    if (num_skipped) *num_skipped = sk;
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
#ifdef PK_HAVE_FFTW
typedef struct im_host {
    pk_image_params p;
    int nt;           /* host threads of the FFT and the fused passes */
    float *scorr;     /* [N]: (-1)^(x - N/2) / c(x - N/2): the shift's sign and the correction */
    double kappa;
    int sign;         /* FFTW_BACKWARD (image) or FFTW_FORWARD (degrid) */
    fftwf_complex *buf; /* g x g: the grid, transformed in place */
    fftwf_plan plan;
} im_host;

static void im_make_plan(void *arg)
{
    im_host *h = arg;
    const int g = h->p.grid.grid_size;
    h->plan = fftwf_plan_dft_2d(g, g, h->buf, h->buf, h->sign, FFTW_ESTIMATE);
}

static void im_destroy_plan(void *arg)
{
    im_host *h = arg;
    fftwf_destroy_plan(h->plan);
    h->plan = NULL;
}

static void im_host_free(im_host *h)
{
    if (h->plan) pk_fftwf_planner(1, im_destroy_plan, h);
    fftwf_free(h->buf);
    free(h->scorr);
    h->buf = NULL;
    h->scorr = NULL;
}

static pk_status im_host_init(im_host *h, const pk_image_params *p, const int32_t *support,
                              const float *kernels, int sign, int nt)
{
    memset(h, 0, sizeof *h);
    h->p = *p;
    h->sign = sign;
    h->nt = nt;
    const int n = p->image_size, g = p->grid.grid_size;
    double *corr = malloc((size_t)n * sizeof *corr);
    h->scorr = malloc((size_t)n * sizeof *h->scorr);
    if (!corr || !h->scorr) {
        free(corr);
        return pk_fail(PK_ENOMEM, "image: out of host memory");
    }
    pk_status s = im_correction(p, support, kernels, corr, &h->kappa);
    if (s == PK_OK)
        for (int x = 0; x < n; ++x)
            h->scorr[x] = (float)((((x - n / 2) & 1) ? -1.0 : 1.0) / corr[x]);
    free(corr);
    if (s != PK_OK) return s;
    size_t bytes;
    PK_CHECK(pk_mul3_size((size_t)g, (size_t)g, sizeof(fftwf_complex), &bytes) == 0, PK_EOVERFLOW,
             "grid_size %d: the grid's bytes overflow size_t", g);
    h->buf = fftwf_malloc(bytes);
    PK_CHECK(h->buf, PK_ENOMEM, "image: cannot allocate the %d x %d grid (%zu bytes)", g, g,
             bytes);
    pk_fftwf_planner(nt, im_make_plan, h);
    PK_CHECK(h->plan, PK_EINTERNAL, "image: FFTW could not plan a %d x %d transform", g, g);
    return PK_OK;
}

/* What the FFT says in the run info's reason. */
static void im_host_note(const im_host *h, pk_backend_id backend, char *reason, size_t len)
{
    if ((backend == PK_BACKEND_OPENCL || backend == PK_BACKEND_CUDA) && h->sign == FFTW_BACKWARD)
        pk_append_note(reason, len,
                       "grid made on the device and downloaded, FFT on the host (FFTW single "
                       "precision, %d threads; an on-device FFT is not done yet)", h->nt);
    else if (backend == PK_BACKEND_OPENCL || backend == PK_BACKEND_CUDA)
        pk_append_note(reason, len,
                       "FFT on the host (FFTW single precision, %d threads; an on-device FFT is "
                       "not done yet), the transformed grid's box uploaded for the gather",
                       h->nt);
    else
        pk_append_note(reason, len, "FFT on the host (FFTW single precision, %d threads)",
                       h->nt);
}

static double im_fft_flops(int g) { return 5.0 * (double)g * g * log2((double)g * g); }

typedef struct im_rows {
    const im_host *h;
    const float *in;  /* model (degrid) */
    float *out;       /* image (image) */
    float scale;      /* 1 / norm (image), 1 / kappa (degrid) */
} im_rows;

static void im_zero_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const size_t g = (size_t)r->h->p.grid.grid_size;
    memset(r->h->buf + lo * g, 0, (hi - lo) * g * sizeof(fftwf_complex));
}

/* image[y][x] = Re F[py mod g][px mod g] (-1)^(px + py) / (c(px) c(py)) / norm, one pass */
static void im_crop_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const int n = r->h->p.image_size, g = r->h->p.grid.grid_size, h2 = n / 2;
    const float *sc = r->h->scorr;
    for (size_t y = lo; y < hi; ++y) {
        const int py = (int)y - h2;
        const float *row = (const float *)(r->h->buf + (size_t)(py < 0 ? py + g : py) * (size_t)g);
        const float fy = sc[y] * r->scale;
        float *out = r->out + y * (size_t)n;
        for (int x = 0; x < h2; ++x) /* px = x - h2 < 0: column px + g */
            out[x] = row[2 * (size_t)(x - h2 + g)] * (fy * sc[x]);
        for (int x = h2; x < n; ++x)
            out[x] = row[2 * (size_t)(x - h2)] * (fy * sc[x]);
    }
}

/* The adjoint: grid row Y zeroed, then the model's pixels of that row (py = Y or Y - g)
 * placed at columns px mod g, times (-1)^(px + py) / (kappa c(px) c(py)). */
static void im_place_rows(void *arg, size_t lo, size_t hi)
{
    const im_rows *r = arg;
    const int n = r->h->p.image_size, g = r->h->p.grid.grid_size, h2 = n / 2;
    const float *sc = r->h->scorr;
    for (size_t yy = lo; yy < hi; ++yy) {
        float *row = (float *)(r->h->buf + yy * (size_t)g);
        memset(row, 0, (size_t)g * sizeof(fftwf_complex));
        const int py = (int)yy < g / 2 ? (int)yy : (int)yy - g;
        if (py < -h2 || py >= h2) continue;
        const int y = py + h2;
        const float *in = r->in + (size_t)y * n;
        const float fy = sc[y] * r->scale;
        for (int x = 0; x < h2; ++x)
            row[2 * (size_t)(x - h2 + g)] = in[x] * (fy * sc[x]);
        for (int x = h2; x < n; ++x)
            row[2 * (size_t)(x - h2)] = in[x] * (fy * sc[x]);
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
#endif /* PK_HAVE_FFTW */

/* ---- pk_image ------------------------------------------------------------------------------ */
struct pk_image_plan {
#ifdef PK_HAVE_FFTW
    im_host h;
#endif
    pk_grid_plan *gp;
    pk_run_info created; /* the grid plan's choice, for the run infos */
};

void pk_image_plan_destroy(pk_image_plan *plan)
{
    if (!plan) return;
    pk_grid_plan_destroy(plan->gp);
#ifdef PK_HAVE_FFTW
    im_host_free(&plan->h);
#endif
    free(plan);
}

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
    pk_status s = pk_grid_plan_create(&pl->gp, ctx, &p->grid, variant, support, kernels,
                                      &pl->created);
    if (s == PK_OK)
        s = im_host_init(&pl->h, p, support, kernels, FFTW_BACKWARD,
                         im_threads_for(ctx, pl->created.backend));
    if (s != PK_OK) {
        pk_image_plan_destroy(pl);
        return s;
    }
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
    im_host *h = &plan->h;
    const int g = h->p.grid.grid_size, n = h->p.image_size;
    const double gg = (double)g * g;
    const double t0 = pk_now();
    im_rows r = {h, NULL, image, 0.0f};
    pk_parallel_range((size_t)g, 1, (size_t)(gg * 8), h->nt, im_zero_rows, &r);
    const double t1 = pk_now();
    double nrm = 0;
    int64_t sk = 0;
    pk_run_info gi;
    PK_TRY(pk_grid_plan_execute(plan->gp, d, (float *)h->buf, &nrm, &sk, &gi));
    const double t2 = pk_now();
    fftwf_execute(h->plan);
    const double t3 = pk_now();
    r.scale = nrm != 0 ? (float)(1.0 / nrm) : 0.0f;
    pk_parallel_range((size_t)n, 1, (size_t)n * n * 12, h->nt, im_crop_rows, &r);
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
        im_stage(info, "fft", t3 - t2);
        im_stage(info, "correct", t4 - t3);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
#endif
}

pk_status pk_image(pk_context *ctx, const pk_image_params *p, const char *variant,
                   const int32_t *support, const float *kernels, const pk_grid_data *d,
                   float *image, double *norm, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_TRY(pk_gr_validate_data(d));
    PK_CHECK_NULL(image);
    pk_image_plan *plan;
    pk_run_info ci;
    PK_TRY(pk_image_plan_create(&plan, ctx, p, variant, support, kernels, &ci));
    pk_status s = pk_image_plan_execute(plan, d, image, norm, num_skipped, info);
    pk_image_plan_destroy(plan);
    if (s == PK_OK && info) {
        info->setup_s = ci.setup_s;
        info->plan_bytes = ci.plan_bytes;
        info->wall_s = pk_now() - t0;
    }
    return s;
}

/* ---- pk_degrid ----------------------------------------------------------------------------- */
struct pk_degrid_plan {
#ifdef PK_HAVE_FFTW
    im_host h;
#endif
    pk_choice c;
    int have_choice;
};

void pk_degrid_plan_destroy(pk_degrid_plan *plan)
{
    if (!plan) return;
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
    if (s == PK_OK) {
        pl->have_choice = 1;
        s = im_host_init(&pl->h, p, support, kernels, FFTW_FORWARD,
                         im_threads_for(ctx, pl->c.backend));
    }
    if (s != PK_OK) {
        pk_degrid_plan_destroy(pl);
        return s;
    }
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
    im_rows r = {h, model, NULL, (float)(1.0 / h->kappa)};
    pk_parallel_range((size_t)g, 1, (size_t)(gg * 8), h->nt, im_place_rows, &r);
    const double t1 = pk_now();
    fftwf_execute(h->plan);
    const double t2 = pk_now();
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
        im_stage(info, "correct", t1 - t0);
        im_stage(info, "fft", t2 - t1);
        im_stage(info, "degrid", t3 - t2);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
#endif
}

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
    pk_degrid_plan *plan;
    pk_run_info ci;
    PK_TRY(pk_degrid_plan_create(&plan, ctx, p, variant, support, kernels, &ci));
    pk_status s = pk_degrid_plan_execute(plan, model, d, vis, num_skipped, info);
    pk_degrid_plan_destroy(plan);
    if (s == PK_OK && info) {
        info->setup_s = ci.setup_s;
        info->plan_bytes = ci.plan_bytes;
        info->wall_s = pk_now() - t0;
    }
    return s;
}
