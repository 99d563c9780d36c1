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
    pk_context *ctx;
    pk_backend_id backend;
    int device;
    const pk_backend_ops *ops;
    void *impl;
    pk_d3_desc desc;
    char variant[32];
    char device_name[128];
    char reason[256];
    int fell_back;
    int uploaded;
    size_t points;
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
    pk_d3_ref_steps(&d, p->count, f, tmp, &res);
    if (res != f) memcpy(f, res, n * sizeof(float));
    free(tmp);
    return PK_OK;
}

const char *pk_diffusion3d_variants(pk_backend_id backend)
{
    const pk_backend_ops *ops = pk_backend_ops_get(backend);
    return ops ? ops->d3_variants : "";
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
    memcpy(h->f1, f, h->n * sizeof(float));
    h->cur = h->f1;
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_d3_host_download(void *impl, float *f, double *seconds)
{
    pk_d3_host_plan *h = impl;
    double t0 = pk_now();
    memcpy(f, h->cur, h->n * sizeof(float));
    *seconds = pk_now() - t0;
    return PK_OK;
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

/* ---- backend choice ------------------------------------------------------------------- */
typedef struct d3_candidate {
    pk_backend_id backend;
    pk_device_type type; /* 0: any */
} d3_candidate;

/* The order auto tries until a tuned choice exists: CUDA GPU, OpenCL GPU, OpenMP, OpenCL
 * CPU, serial. */
static const d3_candidate auto_order[] = {
    {PK_BACKEND_CUDA, 0},   {PK_BACKEND_OPENCL, PK_DEVICE_GPU}, {PK_BACKEND_OPENMP, 0},
    {PK_BACKEND_OPENCL, PK_DEVICE_CPU}, {PK_BACKEND_SERIAL, 0},
};
#define N_AUTO ((int)(sizeof auto_order / sizeof auto_order[0]))

/* Which backends may run this call, in order; *strict when the caller forced one. */
static pk_status d3_candidates(pk_context *ctx, const char *variant, d3_candidate *cand, int *ncand,
                               int *strict, char *note, size_t note_len)
{
    pk_backend_id forced = ctx->opt.backend;
    int from_env = forced != PK_BACKEND_AUTO && ctx->env_note[0] &&
                   strstr(ctx->env_note, "PORTKERN_BACKEND") != NULL;
    pk_backend_id owner = PK_BACKEND_AUTO;
    if (variant && *variant) {
        for (int b = 1; b < PK_BACKEND_COUNT && owner == PK_BACKEND_AUTO; ++b)
            if (pk_list_find(pk_diffusion3d_variants((pk_backend_id)b), variant) >= 0)
                owner = (pk_backend_id)b;
        if (owner == PK_BACKEND_AUTO) {
            char all[256] = "";
            for (int b = 1; b < PK_BACKEND_COUNT; ++b)
                if (pk_diffusion3d_variants((pk_backend_id)b)[0])
                    pk_append_note(all, sizeof all, "%s", pk_diffusion3d_variants((pk_backend_id)b));
            return pk_fail(PK_ENOVARIANT, "diffusion3d variant '%s': unknown (known: %s)", variant, all);
        }
        if (forced != PK_BACKEND_AUTO && forced != owner && !from_env)
            return pk_fail(PK_ENOVARIANT, "diffusion3d variant '%s' belongs to backend %s, but the "
                           "context forces backend %s", variant, pk_backend_name(owner),
                           pk_backend_name(forced));
    }
    *ncand = 0;
    if (forced != PK_BACKEND_AUTO && !from_env) {
        cand[(*ncand)++] = (d3_candidate){forced, 0};
        *strict = 1;
        return PK_OK;
    }
    *strict = 0;
    if (owner != PK_BACKEND_AUTO) { /* the variant names its backend; prefer a GPU there */
        if (owner == PK_BACKEND_OPENCL) {
            cand[(*ncand)++] = (d3_candidate){owner, PK_DEVICE_GPU};
            cand[(*ncand)++] = (d3_candidate){owner, 0};
        } else {
            cand[(*ncand)++] = (d3_candidate){owner, 0};
        }
        if (from_env && forced != owner)
            pk_append_note(note, note_len, "variant %s overrides PORTKERN_BACKEND=%s", variant,
                           pk_backend_name(forced));
        return PK_OK;
    }
    if (from_env) cand[(*ncand)++] = (d3_candidate){forced, 0};
    for (int i = 0; i < N_AUTO; ++i) cand[(*ncand)++] = auto_order[i];
    return PK_OK;
}

/* Create the backend's plan on one candidate; PK_ENOBACKEND/PK_ENODEVICE when it has none. */
static pk_status d3_plan_on(pk_context *ctx, const d3_candidate *cd, int strict,
                            const pk_d3_desc *desc, const char *variant, pk_diffusion3d_plan *pl)
{
    const char *why;
    PK_CHECK(pk_backend_available(ctx, cd->backend, &why), PK_ENOBACKEND, "%s: %s",
             pk_backend_name(cd->backend), why);
    const pk_backend_ops *ops = pk_backend_ops_get(cd->backend);
    int dev = ctx->opt.device;
    if (dev < 0 || !strict) {
        if (dev >= 0 && dev < pk_device_count(ctx, cd->backend)) {
            pk_device_info di;
            if (ops->device_info(ctx->slot[cd->backend].state, dev, &di) != PK_OK ||
                (cd->type && di.type != cd->type))
                dev = -1;
        } else {
            dev = -1;
        }
        if (dev < 0) dev = pk_context_pick_device(ctx, cd->backend, cd->type);
        if (dev < 0 && cd->type == PK_DEVICE_GPU && strict)
            dev = pk_context_pick_device(ctx, cd->backend, 0);
        PK_CHECK(dev >= 0, PK_ENODEVICE, "%s: no %s device", pk_backend_name(cd->backend),
                 cd->type == PK_DEVICE_GPU ? "GPU" : cd->type == PK_DEVICE_CPU ? "CPU" : "usable");
    } else {
        int n = pk_device_count(ctx, cd->backend);
        PK_CHECK(dev < n, PK_ENODEVICE, "%s device %d: the backend has %d device(s)",
                 pk_backend_name(cd->backend), dev, n);
    }
    const char *v = (variant && *variant) ? variant : NULL;
    if (v && pk_list_find(ops->d3_variants, v) < 0)
        return pk_fail(PK_ENOVARIANT, "diffusion3d variant '%s': not a variant of backend %s (%s)",
                       v, ops->name, ops->d3_variants);
    /* The default variant is the first listed (the backend's best). */
    char first[32];
    pk_strlcpy(first, ops->d3_variants, sizeof first);
    first[strcspn(first, ",")] = '\0';
    pk_strlcpy(pl->variant, v ? v : first, sizeof pl->variant);
    pl->desc = *desc;
    pl->desc.variant = pl->variant;
    pl->desc.threads = ctx->opt.threads;
    pk_device_info di;
    if (ops->device_info(ctx->slot[cd->backend].state, dev, &di) == PK_OK)
        pk_strlcpy(pl->device_name, di.name, sizeof pl->device_name);
    PK_TRY(ops->d3_create(ctx->slot[cd->backend].state, dev, &pl->desc, &pl->impl));
    pl->ctx = ctx;
    pl->backend = cd->backend;
    pl->device = dev;
    pl->ops = ops;
    return PK_OK;
}

static void fill_info(const pk_diffusion3d_plan *pl, pk_run_info *info)
{
    if (!info) return;
    info->backend = pl->backend;
    info->device = pl->device;
    pk_strlcpy(info->device_name, pl->device_name, sizeof info->device_name);
    pk_strlcpy(info->variant, pl->variant, sizeof info->variant);
    pk_strlcpy(info->reason, pl->reason, sizeof info->reason);
    info->fell_back = pl->fell_back;
}

/* Walk the candidates; `full` also uploads, runs and downloads (the one-shot call), so a
 * device failure at run time falls back as well. */
static pk_status d3_choose(pk_context *ctx, const pk_diffusion3d_params *p, const char *variant,
                           float *f, int full, pk_diffusion3d_plan **out, pk_run_info *info)
{
    double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_d3_desc desc;
    size_t points = 0;
    PK_TRY(d3_validate(p, &desc, &points));
    if (full) PK_CHECK_NULL(f);
    d3_candidate cand[N_AUTO + 3];
    int ncand = 0, strict = 0;
    char note[256] = "";
    if (ctx->env_note[0]) pk_append_note(note, sizeof note, "%s", ctx->env_note);
    PK_TRY(d3_candidates(ctx, variant, cand, &ncand, &strict, note, sizeof note));
    pk_diffusion3d_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "diffusion3d: out of host memory");
    pk_status last = PK_ENOBACKEND;
    char last_err[1024] = "no backend could run diffusion3d";
    int tried_real = 0;
    for (int i = 0; i < ncand; ++i) {
        memset(pl, 0, sizeof *pl);
        pl->points = points;
        double ts = pk_now();
        pk_status s = d3_plan_on(ctx, &cand[i], strict, &desc, variant, pl);
        double setup = pk_now() - ts;
        double up = 0, down = 0, kern = 0;
        if (s == PK_OK && full) {
            s = pl->ops->d3_upload(pl->impl, f, &up);
            if (s == PK_OK) s = pl->ops->d3_run(pl->impl, p->count, &kern);
            if (s == PK_OK) s = pl->ops->d3_download(pl->impl, f, &down);
        }
        if (s == PK_OK) {
            pl->uploaded = full;
            pl->fell_back = tried_real;
            pk_strlcpy(pl->reason, note, sizeof pl->reason);
            pk_append_note(pl->reason, sizeof pl->reason, "%s",
                           strict ? "backend forced by the caller"
                           : (variant && *variant) ? "backend of the requested variant"
                           : (i == 0 && ctx->opt.backend != PK_BACKEND_AUTO)
                               ? "backend chosen by PORTKERN_BACKEND"
                               : "first usable backend in auto order");
            fill_info(pl, info);
            if (info) {
                info->setup_s = setup;
                info->transfer_s = up + down;
                info->kernel_s = kern;
                info->bytes = full ? D3_BYTES_PER_POINT * (double)points * p->count : 0;
                info->flops = full ? D3_FLOPS_PER_POINT * (double)points * p->count : 0;
                info->wall_s = pk_now() - t0;
            }
            if (out)
                *out = pl;
            else {
                pl->ops->d3_destroy(pl->impl);
                free(pl);
            }
            return PK_OK;
        }
        if (pl->impl) pl->ops->d3_destroy(pl->impl);
        pl->impl = NULL;
        last = s;
        pk_strlcpy(last_err, pk_last_error(), sizeof last_err);
        if (strict) break;
        /* Unavailable backends are skipped quietly; a real failure is a warning to see. */
        if (s != PK_ENOBACKEND && s != PK_ENODEVICE) {
            tried_real = 1;
            pk_append_note(note, sizeof note, "%s failed (%s: %s), fell back",
                           pk_backend_name(cand[i].backend), pk_status_name(s), last_err);
        }
    }
    free(pl);
    return pk_fail(last, "%s", last_err);
}

pk_status pk_diffusion3d(pk_context *ctx, const pk_diffusion3d_params *p, const char *variant,
                         float *f, pk_run_info *info)
{
    pk_clear_error();
    return d3_choose(ctx, p, variant, f, 1, NULL, info);
}

/* ---- device-resident plans ------------------------------------------------------------ */
pk_status pk_diffusion3d_plan_create(pk_diffusion3d_plan **plan, pk_context *ctx,
                                     const pk_diffusion3d_params *p, const char *variant,
                                     pk_run_info *info)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    *plan = NULL;
    return d3_choose(ctx, p, variant, NULL, 0, plan, info);
}

pk_status pk_diffusion3d_plan_upload(pk_diffusion3d_plan *plan, const float *f)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(f);
    double s;
    PK_TRY(plan->ops->d3_upload(plan->impl, f, &s));
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
    PK_TRY(plan->ops->d3_run(plan->impl, count, &kern));
    fill_info(plan, info);
    if (info) {
        info->kernel_s = kern;
        info->wall_s = pk_now() - t0;
        info->bytes = D3_BYTES_PER_POINT * (double)plan->points * count;
        info->flops = D3_FLOPS_PER_POINT * (double)plan->points * count;
    }
    return PK_OK;
}

pk_status pk_diffusion3d_plan_download(pk_diffusion3d_plan *plan, float *f)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(f);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_download: no field uploaded yet");
    double s;
    return plan->ops->d3_download(plan->impl, f, &s);
}

void pk_diffusion3d_plan_destroy(pk_diffusion3d_plan *plan)
{
    if (!plan) return;
    if (plan->impl) plan->ops->d3_destroy(plan->impl);
    free(plan);
}
