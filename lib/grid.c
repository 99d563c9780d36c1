/* grid.c - the public grid calls (docs/KERNELS.md section 1): validate once, compact the kernel
 * stack, choose a backend (with fallback under auto while the caller's grid is untouched),
 * call through the backend's table, fill the run info. */
#include "grid_host.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Models: a grid update is one complex multiply-add (8 flops) and reads a kernel sample
 * (8 B) and reads and writes a grid cell (16 B). */
#define GR_FLOPS_PER_UPDATE 8.0
#define GR_BYTES_PER_UPDATE 24.0

#define GR_MAX_OVERSAMPLE 1024
#define GR_MAX_PLANES 1000000

struct pk_grid_plan {
    pk_choice c;
    pk_grid_params p;
};

void pk_grid_params_init(pk_grid_params *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->kernel_layout = PK_GRID_KERNELS_FULL;
    p->tile_factor = -1.0;
}

/* ---- validation ----------------------------------------------------------------------- */
static pk_status gr_validate_params(const pk_grid_params *p)
{
    PK_CHECK_NULL(p);
    PK_CHECK(p->grid_size >= 2 && p->grid_size % 2 == 0, PK_ESIZE,
             "grid_size: must be even and >= 2, got %d", p->grid_size);
    size_t cells;
    PK_CHECK(pk_mul3_size((size_t)p->grid_size, (size_t)p->grid_size, 2 * sizeof(double),
                          &cells) == 0,
             PK_EOVERFLOW, "grid_size %d: the grid's bytes overflow size_t", p->grid_size);
    PK_CHECK(p->oversample >= 2 && p->oversample % 2 == 0 && p->oversample <= GR_MAX_OVERSAMPLE,
             PK_EINVAL, "oversample: must be even, in [2, %d], got %d", GR_MAX_OVERSAMPLE,
             p->oversample);
    PK_CHECK(isfinite(p->cell_size_rad) && p->cell_size_rad > 0, PK_ENONFINITE,
             "cell_size_rad: must be finite and > 0, got %g", p->cell_size_rad);
    PK_CHECK(isfinite(p->w_scale) && p->w_scale >= 0 && p->w_scale <= FLT_MAX, PK_ENONFINITE,
             "w_scale: must be finite in float and >= 0, got %g", p->w_scale);
    PK_CHECK(isfinite((float)(p->grid_size * p->cell_size_rad)), PK_ENONFINITE,
             "grid_size * cell_size_rad: overflows float");
    PK_CHECK(p->num_w_planes >= 1 && p->num_w_planes <= GR_MAX_PLANES, PK_ESIZE,
             "num_w_planes: must be in [1, %d], got %d", GR_MAX_PLANES, p->num_w_planes);
    PK_CHECK(p->kernel_layout == PK_GRID_KERNELS_FULL ||
                 p->kernel_layout == PK_GRID_KERNELS_COMPACT,
             PK_EINVAL, "kernel_layout: must be PK_GRID_KERNELS_FULL (0) or _COMPACT (1), got %d",
             p->kernel_layout);
    if (p->kernel_layout == PK_GRID_KERNELS_FULL)
        PK_CHECK(p->conv_size_half >= 1, PK_ESIZE, "conv_size_half: must be >= 1, got %d",
                 p->conv_size_half);
    PK_CHECK(p->tile_size >= 0 && p->tile_size <= p->grid_size, PK_EINVAL,
             "tile_size: must be 0 (default) or in [1, grid_size = %d], got %d", p->grid_size,
             p->tile_size);
    PK_CHECK(p->central_radius >= -1, PK_EINVAL,
             "central_radius: must be -1 (none), 0 (default) or > 0, got %d", p->central_radius);
    PK_CHECK(!isnan(p->tile_factor) && p->tile_factor <= 1.0, PK_EINVAL,
             "tile_factor: must be in [0, 1] (negative: the device's default), got %g",
             p->tile_factor);
    return PK_OK;
}

/* Checks the supports; fills plane_offset[num_w_planes + 1] (compact samples) when given and
 * the largest support. */
static pk_status gr_validate_support(const pk_grid_params *p, const int32_t *support,
                                     size_t *plane_offset, int *max_support, size_t *full_count)
{
    PK_CHECK_NULL(support);
    const int os = p->oversample;
    size_t off = 0;
    int smax = 0;
    for (int w = 0; w < p->num_w_planes; ++w) {
        const int s = support[w];
        PK_CHECK(s >= 0 && s <= (INT_MAX / 2 - os) / os && 2 * s + 1 <= p->grid_size, PK_EINVAL,
                 "support[%d]: must be in [0, (grid_size - 1) / 2 = %d], got %d", w,
                 (p->grid_size - 1) / 2, s);
        const size_t m = (size_t)(os / 2 + s * os + 1);
        if (p->kernel_layout == PK_GRID_KERNELS_FULL)
            PK_CHECK(m <= (size_t)p->conv_size_half, PK_EINVAL,
                     "support[%d] = %d: wider than the kernel (needs oversample/2 + support * "
                     "oversample + 1 = %zu samples per axis, conv_size_half is %d)",
                     w, s, m, p->conv_size_half);
        if (plane_offset) plane_offset[w] = off;
        PK_CHECK(m * m <= (SIZE_MAX / 8 - off), PK_EOVERFLOW, "kernel stack: size overflows");
        off += m * m;
        if (s > smax) smax = s;
    }
    if (plane_offset) plane_offset[p->num_w_planes] = off;
    if (max_support) *max_support = smax;
    /* Checked for every caller, not only those asking for the count: a FULL stack whose
     * size overflows cannot be indexed (the reference read far past the caller's array). */
    size_t n = off;
    if (p->kernel_layout == PK_GRID_KERNELS_FULL)
        PK_CHECK(pk_mul3_size((size_t)p->num_w_planes, (size_t)p->conv_size_half,
                              (size_t)p->conv_size_half, &n) == 0 && n <= SIZE_MAX / 8,
                 PK_EOVERFLOW, "kernel stack: %d x %d x %d overflows", p->num_w_planes,
                 p->conv_size_half, p->conv_size_half);
    if (full_count) *full_count = n;
    return PK_OK;
}

/* Every sample a visibility can read must be finite: a NaN or Inf there would reach the
 * grid of every visibility on that plane (FULL stacks: only the readable corner counts). */
static pk_status gr_validate_kernels(const pk_grid_params *p, const int32_t *support,
                                     const size_t *plane_offset, const float *kernels)
{
    PK_CHECK_NULL(kernels);
    const size_t half = (size_t)p->conv_size_half;
    for (int w = 0; w < p->num_w_planes; ++w) {
        const size_t m = (size_t)(p->oversample / 2 + support[w] * p->oversample + 1);
        for (size_t iy = 0; iy < m; ++iy) {
            const float *row = p->kernel_layout == PK_GRID_KERNELS_COMPACT
                                   ? kernels + 2 * (plane_offset[w] + iy * m)
                                   : kernels + 2 * (((size_t)w * half + iy) * half);
            for (size_t ix = 0; ix < 2 * m; ++ix)
                PK_CHECK(isfinite(row[ix]), PK_ENONFINITE,
                         "kernels: plane %d sample [%zu][%zu] is not finite (%g)", w, iy,
                         ix / 2, row[ix]);
        }
    }
    return PK_OK;
}

pk_status pk_gr_validate_data(const pk_grid_data *d)
{
    PK_CHECK_NULL(d);
    PK_CHECK(d->num_vis <= SIZE_MAX / 16, PK_EOVERFLOW, "num_vis: %zu overflows size_t bytes",
             d->num_vis);
    if (d->num_vis == 0) return PK_OK;
    PK_CHECK(d->uu && d->vv && d->ww && d->vis && d->weight, PK_ENULL,
             "data: uu, vv, ww, vis and weight must not be NULL (num_vis = %zu)", d->num_vis);
    return PK_OK;
}

pk_status pk_grid_kernel_count(const pk_grid_params *p, const int32_t *support,
                               size_t *complex_count)
{
    pk_clear_error();
    PK_TRY(gr_validate_params(p));
    PK_CHECK_NULL(complex_count);
    return gr_validate_support(p, support, NULL, NULL, complex_count);
}

int pk_grid_locate(const pk_grid_params *p, const int32_t *support, const pk_grid_data *d,
                   size_t i, int *u, int *v)
{
    pk_gr_desc desc;
    int w, off_u, off_v;
    if (!p || !support || !d || !u || !v || i >= d->num_vis || p->num_w_planes < 1) return -1;
    desc.p = *p;
    desc.support = support;
    if (pk_gr_locate(&desc, d->uu[i], d->vv[i], d->ww[i], d->vis[2 * i], d->vis[2 * i + 1],
                     d->weight[i], &w, u, v, &off_u, &off_v))
        return -1;
    return support[w];
}

/* FULL -> COMPACT (expand 0) or back (expand 1; the caller zeroes full first). */
static void gr_compact(const pk_grid_params *p, const int32_t *support,
                       const size_t *plane_offset, float *full, float *compact, int expand)
{
    const size_t half = (size_t)p->conv_size_half;
    for (int w = 0; w < p->num_w_planes; ++w) {
        const size_t m = (size_t)(p->oversample / 2 + support[w] * p->oversample + 1);
        for (size_t iy = 0; iy < m; ++iy) {
            float *c = compact + 2 * (plane_offset[w] + iy * m);
            float *f = full + 2 * (((size_t)w * half + iy) * half);
            memcpy(expand ? f : c, expand ? c : f, 2 * m * sizeof(float));
        }
    }
}

static pk_status gr_convert(const pk_grid_params *p, const int32_t *support, float *full,
                            float *compact, int expand)
{
    pk_clear_error();
    PK_TRY(gr_validate_params(p));
    PK_CHECK(p->kernel_layout == PK_GRID_KERNELS_FULL, PK_EINVAL,
             "kernel_layout: must be PK_GRID_KERNELS_FULL (p describes the FULL stack)");
    PK_CHECK_NULL(full);
    PK_CHECK_NULL(compact);
    size_t *off = malloc(((size_t)p->num_w_planes + 1) * sizeof *off);
    if (!off) return pk_fail(PK_ENOMEM, "grid: out of host memory");
    pk_status s = gr_validate_support(p, support, off, NULL, NULL);
    if (s == PK_OK && expand) {
        const size_t half = (size_t)p->conv_size_half;
        memset(full, 0, 2 * sizeof(float) * half * half * (size_t)p->num_w_planes);
    }
    if (s == PK_OK) gr_compact(p, support, off, full, compact, expand);
    free(off);
    return s;
}

pk_status pk_grid_compact_kernels(const pk_grid_params *p, const int32_t *support,
                                  const float *full, float *compact)
{
    return gr_convert(p, support, (float *)full, compact, 0); /* full only read */
}

pk_status pk_grid_expand_kernels(const pk_grid_params *p, const int32_t *support,
                                 const float *compact, float *full)
{
    return gr_convert(p, support, full, (float *)compact, 1); /* compact only read */
}

/* ---- references ------------------------------------------------------------------------- */
static pk_status gr_reference(const pk_grid_params *p, const int32_t *support,
                              const float *kernels, const pk_grid_data *d, float *grid,
                              double *grid64, double *norm, int64_t *num_skipped)
{
    PK_TRY(gr_validate_params(p));
    size_t *off = malloc(((size_t)p->num_w_planes + 1) * sizeof *off);
    if (!off) return pk_fail(PK_ENOMEM, "grid: out of host memory");
    pk_status s = gr_validate_support(p, support, off, NULL, NULL);
    if (s == PK_OK) s = pk_gr_validate_data(d);
    if (s == PK_OK && (!kernels || !norm || !num_skipped || (!grid && !grid64)))
        s = pk_fail(PK_ENULL, "kernels, grid, norm and num_skipped: must not be NULL");
    if (s == PK_OK) s = gr_validate_kernels(p, support, off, kernels);
    if (s == PK_OK) pk_gr_ref_run(p, support, off, kernels, d, grid, grid64, norm, num_skipped, NULL,
                                  0);
    free(off);
    return s;
}

pk_status pk_grid_reference(const pk_grid_params *p, const int32_t *support, const float *kernels,
                            const pk_grid_data *d, float *grid, double *norm,
                            int64_t *num_skipped)
{
    pk_clear_error();
    PK_CHECK_NULL(grid);
    return gr_reference(p, support, kernels, d, grid, NULL, norm, num_skipped);
}

pk_status pk_grid_reference_f64(const pk_grid_params *p, const int32_t *support,
                                const float *kernels, const pk_grid_data *d, double *grid,
                                double *norm, int64_t *num_skipped)
{
    pk_clear_error();
    PK_CHECK_NULL(grid);
    return gr_reference(p, support, kernels, d, NULL, grid, norm, num_skipped);
}

/* ---- the kernel class the dispatcher uses ----------------------------------------------- */
/* The named parameters grid.tile_size, grid.central_radius and grid.tile_factor (the context's
 * or a wisdom entry's) fill the fields the caller left at their defaults; a field the caller
 * set wins.  A tile larger than the grid is not applied (the field would be refused). */
void pk_gr_tuning_apply(pk_grid_params *p, const pk_tuning *t)
{
    int v[2] = {0, 0};
    if (!t) return;
    if (p->tile_size == 0 && pk_param_get(t, PK_PARAM_GRID_TILE_SIZE, v) == PK_OK && v[1] &&
        v[0] <= p->grid_size)
        p->tile_size = v[0];
    v[1] = 0;
    if (p->central_radius == 0 && pk_param_get(t, PK_PARAM_GRID_CENTRAL_RADIUS, v) == PK_OK &&
        v[1])
        p->central_radius = v[0];
    v[1] = 0;
    if (p->tile_factor < 0 && pk_param_get(t, PK_PARAM_GRID_TILE_FACTOR, v) == PK_OK && v[1])
        p->tile_factor = v[0] / 1e6;
}

static pk_status gr_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc, const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_gr_desc d = *(const pk_gr_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    pk_gr_tuning_apply(&d.p, tuning);
    return ((const pk_gr_ops *)kops)->create(state, device, &d, impl);
}

static void gr_destroy_on(const void *kops, void *impl)
{
    ((const pk_gr_ops *)kops)->destroy(impl);
}

/* The size measure wisdom matches a call by: the grid's bytes (complex64 cells; the
 * visibilities are not known at plan creation).  lib/image.c's image and degrid plans use the
 * same measure. */
static double gr_plan_bytes(const void *desc)
{
    const pk_gr_desc *d = desc;
    return 8.0 * (double)d->p.grid_size * d->p.grid_size;
}
/* CUDA from Hopper on: the warp-per-visibility atomics beat the tiles (H100, full el82-70:
 * cuda-atomic 85 ms of kernel, cuda-tiled 317 ms with the P100's block counts, 127 ms at the
 * best counts tried); before, the tiles win (NAG's P100 figures). */
static const char *gr_device_variant(pk_backend_id backend, const pk_device_info *device,
                                     const void *desc, const char **why)
{
    (void)desc;
    if (!(backend == PK_BACKEND_CUDA && device->cc_major >= 9)) return NULL;
    *why = "the warp-per-visibility atomics beat the tiles from Hopper on";
    return "cuda-atomic";
}
static const pk_kernel_class gr_class = {
    .name = "grid",
    .on = PK_KERNEL_ON(gr),
    .create = gr_create_on,
    .destroy = gr_destroy_on,
    .plan_bytes = gr_plan_bytes,
    /* no cost: a plan is made before the visibilities are known, and the work grows with
     * their spread over w (kernel supports), which only the run finds out */
    .device_variant = gr_device_variant,
};

/* The image plan's grid (lib/image.c): the same plans, its own name, so that wisdom keeps
 * the image's choice of grid variant (FFT and correction included in its time) apart from
 * the grid's. */
static const pk_kernel_class im_class = {
    .name = "image",
    .on = PK_KERNEL_ON(gr),
    .create = gr_create_on,
    .destroy = gr_destroy_on,
    .plan_bytes = gr_plan_bytes,
    .device_variant = gr_device_variant,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_gr_ops *gr_ops(const pk_choice *c) { return c->kops; }

const char *pk_grid_variants(pk_backend_id backend) { return pk_kernel_variants(&gr_class, backend); }

/* The stack as backends see it (pk_gr_stack, grid_host.h). */
typedef pk_gr_stack gr_stack;

void pk_gr_stack_free(gr_stack *st)
{
    free(st->plane_offset);
    pk_free_aligned(st->compact_own);
    st->plane_offset = NULL; /* a second free (after a failed init) does nothing */
    st->compact_own = NULL;
}

pk_status pk_gr_stack_init(gr_stack *st, const pk_grid_params *p, const int32_t *support,
                          const float *kernels)
{
    memset(st, 0, sizeof *st);
    PK_TRY(gr_validate_params(p));
    PK_CHECK_NULL(kernels);
    st->plane_offset = malloc(((size_t)p->num_w_planes + 1) * sizeof *st->plane_offset);
    if (!st->plane_offset) return pk_fail(PK_ENOMEM, "grid: out of host memory");
    int smax = 0;
    pk_status s = gr_validate_support(p, support, st->plane_offset, &smax, NULL);
    if (s == PK_OK) s = gr_validate_kernels(p, support, st->plane_offset, kernels);
    if (s != PK_OK) {
        pk_gr_stack_free(st);
        return s;
    }
    const float *compact = kernels;
    if (p->kernel_layout == PK_GRID_KERNELS_FULL) {
        const size_t n = st->plane_offset[p->num_w_planes];
        st->compact_own = pk_alloc_aligned(2 * n * sizeof(float) + 64);
        if (!st->compact_own) {
            pk_gr_stack_free(st);
            return pk_fail(PK_ENOMEM, "grid: cannot allocate the compact kernel stack (%zu "
                           "samples)", n);
        }
        gr_compact(p, support, st->plane_offset, (float *)kernels, st->compact_own, 0);
        compact = st->compact_own;
    }
    st->d.p = *p;
    st->d.p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    st->d.support = support;
    st->d.kernels = compact;
    st->d.plane_offset = st->plane_offset;
    st->d.max_support = smax;
    return PK_OK;
}

static void gr_fill_info(const pk_choice *c, const pk_gr_result *r, pk_run_info *info, double t0,
                         int with_setup)
{
    if (!info) return;
    pk_choice_info(c, info);
    if (!with_setup) info->setup_s = 0;
    info->kernel_s = r->kernel_s;
    info->transfer_s = r->transfer_s;
    info->num_stages = r->num_stages;
    memcpy(info->stage_name, r->stage_name, sizeof info->stage_name);
    memcpy(info->stage_s, r->stage_s, sizeof info->stage_s);
    info->flops = GR_FLOPS_PER_UPDATE * r->updates;
    info->bytes = GR_BYTES_PER_UPDATE * r->updates;
    info->wall_s = pk_now() - t0;
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct gr_oneshot {
    const pk_grid_data *data;
    float *grid;
    pk_gr_result r;
} gr_oneshot;

static pk_status gr_oneshot_work(pk_choice *c, void *arg)
{
    gr_oneshot *o = arg;
    memset(&o->r, 0, sizeof o->r);
    pk_status s = gr_ops(c)->run(c->impl, o->data, o->grid, &o->r);
    /* the caller's grid accumulates: once written, no other backend may retry */
    if (s != PK_OK && o->r.grid_touched) c->no_fallback = 1;
    return s;
}

pk_status pk_grid(pk_context *ctx, const pk_grid_params *p, const char *variant,
                  const int32_t *support, const float *kernels, const pk_grid_data *d, float *grid,
                  double *norm, int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    PK_TRY(pk_gr_validate_data(d));
    PK_CHECK_NULL(grid);
    PK_CHECK_NULL(norm);
    PK_CHECK_NULL(num_skipped);
    gr_stack st;
    PK_TRY(pk_gr_stack_init(&st, p, support, kernels));
    gr_oneshot o;
    memset(&o, 0, sizeof o);
    o.data = d;
    o.grid = grid;
    pk_choice c;
    /* the context's cache: a plan is its parameters, supports and kernel stack (compact),
     * all compared (the stack byte for byte: a few ms at the paper size against the plan's
     * reordered rows, kernel sums and kept scratch, which a repeated call would otherwise
     * make again and fault in) */
    const pk_grid_params *q = &st.d.p;
    const double kp[8] = {q->grid_size,    q->oversample, q->cell_size_rad,  q->w_scale,
                          q->num_w_planes, q->tile_size,  q->central_radius, q->tile_factor};
    const size_t np = (size_t)q->num_w_planes;
    const pk_key_part key[3] = {{kp, sizeof kp},
                                {support, np * sizeof *support},
                                {st.d.kernels, 2 * st.plane_offset[np] * sizeof(float)}};
    pk_status s = pk_dispatch_oneshot_parts(ctx, &gr_class, variant, &st.d, key, 3,
                                            gr_oneshot_work, &o, NULL, &c);
    pk_gr_stack_free(&st);
    if (s != PK_OK) return s;
    *norm += o.r.norm;
    *num_skipped = o.r.num_skipped;
    gr_fill_info(&c, &o.r, info, t0, 1);
    return PK_OK;
}

static pk_status gr_plan_create(pk_grid_plan **plan, pk_context *ctx, const pk_grid_params *p,
                                const char *variant, const int32_t *support, const float *kernels,
                                pk_run_info *info, const pk_kernel_class *kc)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    gr_stack st;
    PK_TRY(pk_gr_stack_init(&st, p, support, kernels));
    pk_grid_plan *pl = calloc(1, sizeof *pl);
    if (!pl) {
        pk_gr_stack_free(&st);
        return pk_fail(PK_ENOMEM, "grid: out of host memory");
    }
    pl->p = *p;
    pk_status s = pk_dispatch(ctx, kc, variant, &st.d, NULL, NULL, &pl->c);
    pk_gr_stack_free(&st);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

pk_status pk_grid_plan_create(pk_grid_plan **plan, pk_context *ctx, const pk_grid_params *p,
                              const char *variant, const int32_t *support, const float *kernels,
                              pk_run_info *info)
{
    return gr_plan_create(plan, ctx, p, variant, support, kernels, info, &gr_class);
}

pk_status pk_gr_image_plan_create(pk_grid_plan **plan, pk_context *ctx, const pk_grid_params *p,
                                  const char *variant, const int32_t *support,
                                  const float *kernels, pk_run_info *info)
{
    return gr_plan_create(plan, ctx, p, variant, support, kernels, info, &im_class);
}

pk_status pk_grid_plan_run(pk_grid_plan *plan, const pk_grid_data *d, float *grid, double *norm,
                           int64_t *num_skipped, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_TRY(pk_gr_validate_data(d));
    PK_CHECK_NULL(grid);
    PK_CHECK_NULL(norm);
    PK_CHECK_NULL(num_skipped);
    pk_gr_result r;
    memset(&r, 0, sizeof r);
    PK_TRY(gr_ops(&plan->c)->run(plan->c.impl, d, grid, &r));
    *norm += r.norm;
    *num_skipped = r.num_skipped;
    gr_fill_info(&plan->c, &r, info, t0, 0);
    return PK_OK;
}

/* grid's plan holds only the kernel stack: plan_run already takes the caller's visibility
 * list and grid on every backend (the device backends copy them in and out inside the run)
 * and keeps no resident data between calls, so execute is the same call. */
pk_status pk_grid_plan_execute(pk_grid_plan *plan, const pk_grid_data *d, float *grid,
                               double *norm, int64_t *num_skipped, pk_run_info *info)
{
    return pk_grid_plan_run(plan, d, grid, norm, num_skipped, info);
}

void *pk_grid_plan_impl(const pk_grid_plan *plan) { return plan->c.impl; }

void pk_grid_plan_destroy(pk_grid_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) gr_ops(&plan->c)->destroy(plan->c.impl);
    free(plan);
}
