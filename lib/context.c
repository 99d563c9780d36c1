/* context.c - backend registry, contexts, the environment, device queries. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

static const char *const backend_names[PK_BACKEND_COUNT] = {"auto", "serial", "openmp",
                                                            "opencl", "cuda"};

const char *pk_backend_name(pk_backend_id id)
{
    return ((int)id >= 0 && id < PK_BACKEND_COUNT) ? backend_names[id] : NULL;
}

pk_status pk_backend_from_name(const char *name, pk_backend_id *out)
{
    PK_CHECK_NULL(name);
    PK_CHECK_NULL(out);
    for (int i = 0; i < PK_BACKEND_COUNT; ++i)
        if (strcasecmp(name, backend_names[i]) == 0) {
            *out = (pk_backend_id)i;
            return PK_OK;
        }
    if (strcasecmp(name, "omp") == 0) {
        *out = PK_BACKEND_OPENMP;
        return PK_OK;
    }
    return pk_fail(PK_EINVAL, "unknown backend '%s' (expected auto, serial, openmp, opencl or cuda)",
                   name);
}

const pk_backend_ops *pk_backend_ops_get(pk_backend_id id)
{
    switch (id) {
    case PK_BACKEND_SERIAL: return &pk_backend_serial;
    case PK_BACKEND_OPENMP: return &pk_backend_openmp;
#ifdef PK_HAVE_OPENCL
    case PK_BACKEND_OPENCL: return &pk_backend_opencl;
#endif
#ifdef PK_HAVE_CUDA
    case PK_BACKEND_CUDA: return &pk_backend_cuda;
#endif
    default: return NULL;
    }
}

const char *pk_backend_not_built_reason(pk_backend_id id)
{
    switch (id) {
    case PK_BACKEND_OPENCL: return "not built: configure found no OpenCL headers and ICD loader";
    case PK_BACKEND_CUDA: return "not built: configure found no usable nvcc (see --with-cuda)";
    default: return "not built";
    }
}

void pk_context_options_init(pk_context_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof *opt);
    opt->backend = PK_BACKEND_AUTO;
    opt->device = -1;
    opt->threads = 0;
}

static pk_status parse_env_int(const char *name, int lo, int hi, int *out)
{
    const char *v = pk_getenv(name);
    if (!v) return PK_OK;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    PK_CHECK(errno == 0 && *end == '\0' && x >= lo && x <= hi, PK_EINVAL,
             "%s='%s': expected an integer in [%d, %d]", name, v, lo, hi);
    *out = (int)x;
    return PK_OK;
}

/* The plan cache's default ceiling: a quarter of the physical memory (4 GiB when unknown). */
static size_t default_cache_limit(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return (size_t)4 << 30;
    return (size_t)((double)pages * (double)page / 4);
}

pk_status pk_context_set_cache_limit(pk_context *ctx, size_t bytes)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    ctx->cache_limit = bytes;
    pk_plan_cache_trim(ctx);
    return PK_OK;
}

pk_status pk_context_create(pk_context **ctx, const pk_context_options *opt)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    *ctx = NULL;
    pk_context_options o;
    if (opt)
        o = *opt;
    else
        pk_context_options_init(&o);
    PK_CHECK((int)o.backend >= 0 && o.backend < PK_BACKEND_COUNT, PK_EINVAL,
             "opt->backend: %d is not a pk_backend_id", (int)o.backend);
    PK_CHECK(o.device >= -1, PK_EINVAL, "opt->device: must be >= -1, got %d", o.device);
    PK_CHECK(o.threads >= 0 && o.threads <= PK_MAX_THREADS, PK_EINVAL,
             "opt->threads: must be in [0, %d], got %d", PK_MAX_THREADS, o.threads);

    pk_context *c = calloc(1, sizeof *c);
    if (!c) return pk_fail(PK_ENOMEM, "pk_context_create: out of memory");
    c->cache_limit = default_cache_limit();
    /* The environment overrides defaults, never what the caller chose explicitly. */
    if (!(o.flags & PK_OPT_IGNORE_ENV)) {
        const char *be = pk_getenv("PORTKERN_BACKEND");
        if (be && o.backend == PK_BACKEND_AUTO) {
            pk_backend_id id;
            if (pk_backend_from_name(be, &id) != PK_OK) {
                free(c);
                return pk_fail(PK_EINVAL, "PORTKERN_BACKEND='%s': unknown backend (expected auto, "
                               "serial, openmp, opencl or cuda)", be);
            }
            o.backend = id;
            pk_append_note(c->env_note, sizeof c->env_note, "PORTKERN_BACKEND=%s", be);
        }
        pk_status s = PK_OK;
        if (o.device == -1 && pk_getenv("PORTKERN_DEVICE")) {
            s = parse_env_int("PORTKERN_DEVICE", 0, 1 << 20, &o.device);
            if (s == PK_OK)
                pk_append_note(c->env_note, sizeof c->env_note, "PORTKERN_DEVICE=%d", o.device);
        }
        if (s == PK_OK && o.threads == 0) s = parse_env_int("PORTKERN_THREADS", 0, PK_MAX_THREADS, &o.threads);
        int cache = 1, cache_mb = -1;
        if (s == PK_OK) s = parse_env_int("PORTKERN_PLAN_CACHE", 0, 1, &cache);
        if (s == PK_OK) s = parse_env_int("PORTKERN_PLAN_CACHE_MB", 0, INT_MAX, &cache_mb);
        if (s != PK_OK) {
            free(c);
            return s;
        }
        c->cache_off = !cache;
        if (cache_mb >= 0) c->cache_limit = (size_t)cache_mb << 20;
    }
    pk_tuning_init(&c->tuning, !(o.flags & PK_OPT_IGNORE_ENV));
    c->opt = o;
    *ctx = c;
    return PK_OK;
}

static void scratch_release(pk_context *ctx)
{
    for (int i = 0; i < PK_SCRATCH_SLOTS; ++i) pk_scratch_free(&ctx->scratch[i]);
}

void pk_context_scratch_end(pk_context *ctx)
{
    double held = 0;
    for (int i = 0; i < PK_SCRATCH_SLOTS; ++i) held += (double)ctx->scratch[i].bytes;
    if (ctx->cache_off || held > (double)ctx->cache_limit) scratch_release(ctx);
}

pk_status pk_context_set_param(pk_context *ctx, const char *name, const char *value)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(name);
    PK_TRY(pk_tuning_set(&ctx->tuning, name, value));
    pk_plan_cache_release(ctx); /* the kept plans were made with the old value */
    return PK_OK;
}

pk_status pk_context_get_param(pk_context *ctx, const char *name, char *buf, size_t len,
                               pk_param_source *source)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(name);
    PK_CHECK_NULL(buf);
    PK_CHECK(len > 0, PK_EINVAL, "len: must be > 0");
    return pk_tuning_text(&ctx->tuning, name, buf, len, source);
}

void pk_context_release_cache(pk_context *ctx)
{
    if (!ctx) return;
    pk_plan_cache_release(ctx);
    scratch_release(ctx);
}

void pk_context_destroy(pk_context *ctx)
{
    if (!ctx) return;
    pk_plan_cache_release(ctx); /* plans before the backends they live on */
    scratch_release(ctx);
    pk_wisdom_list_free(&ctx->wisdom);
    for (int i = 0; i < PK_BACKEND_COUNT; ++i) {
        const pk_backend_ops *ops = pk_backend_ops_get((pk_backend_id)i);
        if (ops && ctx->slot[i].state && ops->fini) ops->fini(ctx->slot[i].state);
    }
    free(ctx);
}

static pthread_mutex_t driver_mutex = PTHREAD_MUTEX_INITIALIZER;
void pk_driver_lock(void) { pthread_mutex_lock(&driver_mutex); }
void pk_driver_unlock(void) { pthread_mutex_unlock(&driver_mutex); }

void *pk_context_backend(pk_context *ctx, pk_backend_id id)
{
    if ((int)id <= 0 || id >= PK_BACKEND_COUNT) return NULL;
    pk_backend_slot *s = &ctx->slot[id];
    if (!s->probed) {
        s->probed = 1;
        const pk_backend_ops *ops = pk_backend_ops_get(id);
        if (!ops) {
            s->status = PK_ENOBACKEND;
            pk_strlcpy(s->why, pk_backend_not_built_reason(id), sizeof s->why);
        } else {
            s->why[0] = '\0';
            /* init may use pk_fail; keep the caller's error detail intact. */
            char saved[1024];
            pk_strlcpy(saved, pk_last_error(), sizeof saved);
            pk_driver_lock();
            s->status = ops->init(&ctx->opt, &s->state, s->why, sizeof s->why);
            pk_driver_unlock();
            if (s->status != PK_OK && !s->why[0]) pk_strlcpy(s->why, pk_last_error(), sizeof s->why);
            pk_fail(PK_OK, "%s", saved);
            if (s->status != PK_OK) s->state = NULL;
        }
    }
    return s->status == PK_OK ? s->state : NULL;
}

int pk_backend_available(pk_context *ctx, pk_backend_id backend, const char **why)
{
    static const char *const bad = "invalid context or backend id";
    if (!ctx || (int)backend <= 0 || backend >= PK_BACKEND_COUNT) {
        if (why) *why = bad;
        return 0;
    }
    void *st = pk_context_backend(ctx, backend);
    if (why) *why = st ? "" : ctx->slot[backend].why;
    return st != NULL;
}

int pk_device_count(pk_context *ctx, pk_backend_id backend)
{
    if (!pk_backend_available(ctx, backend, NULL)) return 0;
    return pk_backend_ops_get(backend)->device_count(ctx->slot[backend].state);
}

static pk_status device_check(pk_context *ctx, pk_backend_id backend, int index)
{
    PK_CHECK_NULL(ctx);
    PK_CHECK((int)backend > 0 && backend < PK_BACKEND_COUNT, PK_EINVAL,
             "backend: %d is not a concrete backend", (int)backend);
    const char *why;
    PK_CHECK(pk_backend_available(ctx, backend, &why), PK_ENOBACKEND, "%s: %s",
             pk_backend_name(backend), why);
    int n = pk_device_count(ctx, backend);
    PK_CHECK(index >= 0 && index < n, PK_ENODEVICE, "%s device %d: the backend has %d device(s)",
             pk_backend_name(backend), index, n);
    return PK_OK;
}

pk_status pk_device_get_info(pk_context *ctx, pk_backend_id backend, int index, pk_device_info *info)
{
    pk_clear_error();
    PK_CHECK_NULL(info);
    PK_TRY(device_check(ctx, backend, index));
    pk_status s = pk_backend_ops_get(backend)->device_info(ctx->slot[backend].state, index, info);
    info->backend = backend;
    info->index = index;
    return s;
}

pk_status pk_measure_bandwidth(pk_context *ctx, pk_backend_id backend, int device, size_t bytes,
                               int reps, double *bytes_per_second)
{
    pk_clear_error();
    PK_CHECK_NULL(bytes_per_second);
    PK_CHECK(reps >= 0 && reps <= 1000, PK_EINVAL, "reps: must be in [0, 1000], got %d", reps);
    /* the same floor on every backend: a copy of a few bytes measures the call, not memory */
    PK_CHECK(bytes == 0 || bytes >= 4096, PK_ESIZE,
             "bytes: at least 4096 needed (0: the backend's default), got %zu", bytes);
    PK_TRY(device_check(ctx, backend, device));
    return pk_backend_ops_get(backend)->bandwidth(ctx->slot[backend].state, device, bytes, reps,
                                                  bytes_per_second);
}

pk_status pk_measure_peak_flops(pk_context *ctx, pk_backend_id backend, int device,
                                double *flops_per_second)
{
    pk_clear_error();
    PK_CHECK_NULL(flops_per_second);
    PK_TRY(device_check(ctx, backend, device));
    if (backend == PK_BACKEND_SERIAL) return pk_host_peak_flops(1, flops_per_second);
    if (backend == PK_BACKEND_OPENMP) return pk_host_peak_flops(ctx->opt.threads, flops_per_second);
    return pk_fail(PK_EUNSUPPORTED, "%s: the FMA peak is measured on the host backends only "
                   "(serial, openmp)", pk_backend_name(backend));
}

int pk_context_pick_device(pk_context *ctx, pk_backend_id id, pk_device_type type)
{
    int n = pk_device_count(ctx, id), best = -1;
    int best_cu = -1;
    for (int i = 0; i < n; ++i) {
        pk_device_info di;
        if (pk_backend_ops_get(id)->device_info(ctx->slot[id].state, i, &di) != PK_OK) continue;
        if (type && di.type != type) continue;
        /* Lacking a tuned choice, more compute units is the better guess within a type. */
        if (di.compute_units > best_cu) {
            best_cu = di.compute_units;
            best = i;
        }
    }
    return best;
}
