/* diffusion3d.c - the public diffusion3d calls: validate once, choose a backend (with
 * fallback under auto), call through the backend's table, fill the run info. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D3_FLOPS_PER_POINT 13.0
#define D3_BYTES_PER_POINT 8.0 /* ideal: one read and one write of a float per point */

struct pk_diffusion3d_plan {
    pk_choice c;
    size_t points;
    size_t plane; /* floats of one z-plane: nx ny */
    int nz;
    int uploaded;
};

/* ---- validation ----------------------------------------------------------------------- */
static pk_status d3_validate(const pk_diffusion3d_params *p, pk_d3_desc *d, size_t *points)
{
    PK_CHECK_NULL(p);
    PK_CHECK(p->nx >= 1, PK_ESIZE, "nx: must be >= 1, got %d", p->nx);
    PK_CHECK(p->ny >= 1, PK_ESIZE, "ny: must be >= 1, got %d", p->ny);
    PK_CHECK(p->nz >= 1, PK_ESIZE, "nz: must be >= 1, got %d", p->nz);
    PK_CHECK(p->count >= 0, PK_ESIZE, "count: must be >= 0, got %d", p->count);
    size_t n = 0, bytes = 0;
    PK_CHECK(pk_mul3_size((size_t)p->nx, (size_t)p->ny, (size_t)p->nz, &n) == 0 &&
                 pk_mul3_size(n, sizeof(float), 2, &bytes) == 0,
             PK_EOVERFLOW, "field %d x %d x %d: two float buffers overflow size_t", p->nx, p->ny,
             p->nz);
    const double c[7] = {p->cc, p->cw, p->ce, p->cs, p->cn, p->cb, p->ct};
    static const char *const names[7] = {"cc", "cw", "ce", "cs", "cn", "cb", "ct"};
    for (int i = 0; i < 7; ++i) {
        PK_CHECK(isfinite(c[i]) && fabs(c[i]) <= FLT_MAX, PK_ENONFINITE,
                 "%s: must be finite in float precision, got %g", names[i], c[i]);
        d->c[i] = (float)c[i];
    }
    d->nx = p->nx;
    d->ny = p->ny;
    d->nz = p->nz;
    d->count = p->count;
    d->variant = NULL;
    d->threads = 0;
    *points = n;
    return PK_OK;
}

pk_status pk_diffusion3d_reference(const pk_diffusion3d_params *p, float *f)
{
    pk_clear_error();
    pk_d3_desc d;
    size_t n = 0;
    PK_TRY(d3_validate(p, &d, &n));
    PK_CHECK_NULL(f);
    if (p->count == 0) return PK_OK;
    float *tmp = malloc(n * sizeof(float));
    if (!tmp) return pk_fail(PK_ENOMEM, "reference: cannot allocate %zu bytes", n * sizeof(float));
    float *res;
    pk_d3_ref_steps(&d, p->count, f, tmp, &res, 0);
    if (res != f) memcpy(f, res, n * sizeof(float));
    free(tmp);
    return PK_OK;
}

/* ---- the kernel class the dispatcher uses ---------------------------------------------- */
static pk_status d3_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_d3_desc d = *(const pk_d3_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_d3_ops *)kops)->create(state, device, &d, impl);
}

static void d3_destroy_on(const void *kops, void *impl)
{
    ((const pk_d3_ops *)kops)->destroy(impl);
}

static double d3_plan_bytes(const void *desc)
{
    const pk_d3_desc *d = desc;
    return 2.0 * 4.0 * (double)d->nx * (double)d->ny * (double)d->nz; /* two fields */
}
static void d3_cost(const void *desc, pk_cost *c)
{
    const pk_d3_desc *d = desc;
    const double points = (double)d->nx * (double)d->ny * (double)d->nz;
    const int steps = d->count > 0 ? d->count : 1; /* a plan made with count 0 runs later */
    c->flops = D3_FLOPS_PER_POINT * points * steps;
    c->bytes = D3_BYTES_PER_POINT * points * steps;
    c->link_bytes = 2.0 * 4.0 * points; /* the field in and out */
}
static const pk_kernel_class d3_class = {
    .name = "diffusion3d",
    .on = PK_KERNEL_ON(d3),
    .create = d3_create_on,
    .destroy = d3_destroy_on,
    .plan_bytes = d3_plan_bytes,
    .cost = d3_cost,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_d3_ops *d3_ops(const pk_choice *c) { return c->kops; }

const char *pk_diffusion3d_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&d3_class, backend);
}

/* ---- host plans (serial, OpenMP) ------------------------------------------------------ */
pk_status pk_d3_host_create(const pk_d3_desc *desc, pk_d3_host_plan **plan)
{
    pk_d3_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "diffusion3d: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant, sizeof h->variant);
    h->d.variant = h->variant;
    h->n = (size_t)desc->nx * (size_t)desc->ny * (size_t)desc->nz;
    h->f1 = pk_alloc_aligned(h->n * sizeof(float));
    h->f2 = pk_alloc_aligned(h->n * sizeof(float));
    if (!h->f1 || !h->f2) {
        size_t bytes = h->n * sizeof(float);
        pk_d3_host_destroy(h);
        return pk_fail(PK_ENOMEM, "diffusion3d: cannot allocate 2 x %zu bytes", bytes);
    }
    h->cur = h->f1;
    *plan = h;
    return PK_OK;
}

pk_status pk_d3_host_upload(void *impl, const float *f, double *seconds)
{
    pk_d3_host_plan *h = impl;
    double t0 = pk_now();
    pk_copy_threads(h->f1, f, h->n * sizeof(float), h->nt);
    h->cur = h->f1;
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_d3_host_upload_part(void *impl, size_t first, size_t n, const float *f)
{
    pk_d3_host_plan *h = impl;
    memcpy(h->cur + first, f, n * sizeof(float));
    return PK_OK;
}

pk_status pk_d3_host_download_part(void *impl, size_t first, size_t n, float *f)
{
    pk_d3_host_plan *h = impl;
    memcpy(f, h->cur + first, n * sizeof(float));
    return PK_OK;
}

pk_status pk_d3_host_download(void *impl, float *f, double *seconds)
{
    pk_d3_host_plan *h = impl;
    double t0 = pk_now();
    pk_copy_threads(f, h->cur, h->n * sizeof(float), h->nt);
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_d3_host_execute(void *impl, float *f, int count, double *kernel_seconds,
                             double *transfer_seconds)
{
    /* Any float-aligned field will do: the kernels load unaligned and the streaming rows peel
     * to the vector boundary (omp/diffusion3d_omp.c). */
    pk_d3_host_plan *h = impl;
    double down = 0;
    *kernel_seconds = 0;
    float *own = h->f1;
    h->f1 = f;
    h->cur = f;
    pk_status s = h->run(h, count, kernel_seconds);
    if (s == PK_OK && h->cur != f) { /* the result is in the work array */
        const double t0 = pk_now();
        pk_copy_threads(f, h->cur, h->n * sizeof(float), h->nt);
        down = pk_now() - t0;
    }
    h->f1 = own;
    h->cur = own; /* the plan's own field is not the caller's: upload before plan_run */
    *transfer_seconds = down;
    return s;
}

void pk_d3_host_destroy(void *impl)
{
    pk_d3_host_plan *h = impl;
    if (!h) return;
    pk_free_aligned(h->f1);
    pk_free_aligned(h->f2);
    free(h->cpu_of_slot);
    pk_free_aligned(h->scratch);
    free(h);
}

/* ---- calls ----------------------------------------------------------------------------- */
typedef struct d3_oneshot {
    float *f;
    int count;
    size_t bytes; /* the field's */
    double up, kern, down;
} d3_oneshot;

/* The one-shot call's work on a fresh plan: a device failure here falls back too. */
static pk_status d3_oneshot_work(pk_choice *c, void *arg)
{
    d3_oneshot *o = arg;
    const void *f = o->f;
    /* on the caller's field itself: host memory on a host backend, device memory on CUDA */
    if (d3_ops(c)->execute && pk_choice_direct(c, &f, &o->bytes, 1)) {
        c->no_fallback = 1;
        return d3_ops(c)->execute(c->impl, o->f, o->count, &o->kern, &o->down);
    }
    PK_TRY(d3_ops(c)->upload(c->impl, o->f, &o->up));
    PK_TRY(d3_ops(c)->run(c->impl, o->count, &o->kern));
    c->no_fallback = 1; /* in place: a download failing part way leaves no input to retry */
    return d3_ops(c)->download(c->impl, o->f, &o->down);
}

static void d3_counts(pk_run_info *info, size_t points, int count)
{
    info->bytes = D3_BYTES_PER_POINT * (double)points * count;
    info->flops = D3_FLOPS_PER_POINT * (double)points * count;
}

pk_status pk_diffusion3d(pk_context *ctx, const pk_diffusion3d_params *p, const char *variant,
                         float *f, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_d3_desc desc;
    size_t points = 0;
    PK_TRY(d3_validate(p, &desc, &points));
    PK_CHECK_NULL(f);
    d3_oneshot o = {f, p->count, points * sizeof(float), 0, 0, 0};
    pk_choice c;
    struct { int n[3]; float c[7]; } key; /* what a plan is made of (the context's cache) */
    memset(&key, 0, sizeof key);
    key.n[0] = desc.nx, key.n[1] = desc.ny, key.n[2] = desc.nz;
    memcpy(key.c, desc.c, sizeof key.c);
    PK_TRY(pk_dispatch_oneshot(ctx, &d3_class, variant, &desc, &key, sizeof key, d3_oneshot_work,
                               &o, NULL, &c));
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = o.up + o.down;
        info->kernel_s = o.kern;
        d3_counts(info, points, p->count);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- device-resident plans ------------------------------------------------------------ */
pk_status pk_diffusion3d_plan_create(pk_diffusion3d_plan **plan, pk_context *ctx,
                                     const pk_diffusion3d_params *p, const char *variant,
                                     pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_d3_desc desc;
    size_t points = 0;
    PK_TRY(d3_validate(p, &desc, &points));
    pk_diffusion3d_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "diffusion3d: out of host memory");
    pk_status s = pk_dispatch(ctx, &d3_class, variant, &desc, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        free(pl);
        return s;
    }
    pl->points = points;
    pl->plane = (size_t)p->nx * (size_t)p->ny;
    pl->nz = p->nz;
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

pk_status pk_diffusion3d_plan_upload(pk_diffusion3d_plan *plan, const float *f)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(f);
    double s;
    PK_TRY(d3_ops(&plan->c)->upload(plan->c.impl, f, &s));
    plan->uploaded = 1;
    return PK_OK;
}

pk_status pk_diffusion3d_plan_run(pk_diffusion3d_plan *plan, int count, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(count >= 0, PK_ESIZE, "count: must be >= 0, got %d", count);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_run: no field uploaded yet (call plan_upload)");
    double t0 = pk_now(), kern = 0;
    PK_TRY(d3_ops(&plan->c)->run(plan->c.impl, count, &kern));
    pk_choice_info(&plan->c, info);
    if (info) {
        info->setup_s = 0;
        info->kernel_s = kern;
        info->wall_s = pk_now() - t0;
        d3_counts(info, plan->points, count);
    }
    return PK_OK;
}

pk_status pk_diffusion3d_plan_execute(pk_diffusion3d_plan *plan, float *f, int count,
                                      pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(f);
    PK_CHECK(count >= 0, PK_ESIZE, "count: must be >= 0, got %d", count);
    const double t0 = pk_now();
    d3_oneshot o = {f, count, plan->points * sizeof(float), 0, 0, 0};
    PK_TRY(d3_oneshot_work(&plan->c, &o));
    pk_choice_info(&plan->c, info);
    if (info) {
        info->setup_s = 0;
        info->kernel_s = o.kern;
        info->transfer_s = o.up + o.down;
        d3_counts(info, plan->points, count);
        info->wall_s = pk_now() - t0;
    }
    plan->uploaded = 0; /* the resident field is undefined now */
    return PK_OK;
}

pk_status pk_diffusion3d_plan_download(pk_diffusion3d_plan *plan, float *f)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(f);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_download: no field uploaded yet");
    double s;
    return d3_ops(&plan->c)->download(plan->c.impl, f, &s);
}

/* Planes [z0, z1) of the resident field between f and the plan: validated, then the
 * backend's part copy (up: to the plan). */
static pk_status d3_planes(pk_diffusion3d_plan *plan, int z0, int z1, const float *in,
                           float *out, const char *call)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK(in || out, PK_ENULL, "%s: f must not be NULL", call);
    PK_CHECK(z0 >= 0 && z0 < z1 && z1 <= plan->nz, PK_EINVAL,
             "%s: planes [z0, z1) must lie in [0, nz = %d) and not be empty, got [%d, %d)", call,
             plan->nz, z0, z1);
    PK_CHECK(plan->uploaded, PK_ESTATE, "%s: no field resident (plan_upload first; "
             "plan_execute leaves none)", call);
    const pk_d3_ops *ops = d3_ops(&plan->c);
    PK_CHECK(in ? ops->upload_part != NULL : ops->download_part != NULL, PK_EUNSUPPORTED,
             "%s: not on %s", call, pk_backend_name(plan->c.backend));
    const size_t first = (size_t)z0 * plan->plane, n = (size_t)(z1 - z0) * plan->plane;
    return in ? ops->upload_part(plan->c.impl, first, n, in)
              : ops->download_part(plan->c.impl, first, n, out);
}

pk_status pk_diffusion3d_plan_upload_planes(pk_diffusion3d_plan *plan, int z0, int z1,
                                            const float *f)
{
    return d3_planes(plan, z0, z1, f, NULL, "plan_upload_planes");
}

pk_status pk_diffusion3d_plan_download_planes(pk_diffusion3d_plan *plan, int z0, int z1,
                                              float *f)
{
    return d3_planes(plan, z0, z1, NULL, f, "plan_download_planes");
}

void pk_diffusion3d_plan_destroy(pk_diffusion3d_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) d3_ops(&plan->c)->destroy(plan->c.impl);
    free(plan);
}
