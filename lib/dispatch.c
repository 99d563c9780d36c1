/* dispatch.c - choosing the backend and device of a kernel call, for every kernel.
 *
 * A caller-forced backend is the only candidate (strict: its failure is the call's).  A
 * variant name selects the backend that owns it.  Otherwise PORTKERN_BACKEND (if set) comes
 * first, then the auto order; under plain auto the context's wisdom (lib/wisdom_store.c),
 * when an entry applies, puts its backend, device and variant before the auto order.  Each
 * candidate is tried in turn: a backend that is unavailable or has no device of the wanted
 * type is skipped quietly; one that fails to create its plan, or whose work fails, is noted
 * in the reason and the next one runs. */
#include "internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

typedef struct candidate {
    pk_backend_id backend;
    pk_device_type type; /* 0: any */
    int device;          /* >= 0: this device (wisdom's); -1: the caller's or the fastest */
    const char *variant; /* wisdom's variant; NULL: the call's */
    const pk_tuning *tuning; /* wisdom's parameters over the context's; NULL: the context's */
} candidate;

/* Without wisdom: CUDA GPU, OpenCL GPU, OpenMP, OpenCL CPU, serial. */
static const candidate auto_order[] = {
    {PK_BACKEND_CUDA, 0, -1, NULL, NULL},
    {PK_BACKEND_OPENCL, PK_DEVICE_GPU, -1, NULL, NULL},
    {PK_BACKEND_OPENMP, 0, -1, NULL, NULL},
    {PK_BACKEND_OPENCL, PK_DEVICE_CPU, -1, NULL, NULL},
    {PK_BACKEND_SERIAL, 0, -1, NULL, NULL},
};
#define N_AUTO ((int)(sizeof auto_order / sizeof auto_order[0]))

const char *pk_kernel_variants(const pk_kernel_class *kc, pk_backend_id backend)
{
    if ((int)backend <= 0 || backend >= PK_BACKEND_COUNT || !pk_backend_ops_get(backend) ||
        !kc->on[backend])
        return "";
    /* every kernel's ops table starts with its variants (lib/internal.h) */
    const char *v = *(const char *const *)kc->on[backend];
    return v ? v : "";
}

static pk_status pick_device(pk_context *ctx, const candidate *cd, int strict, int *device);

/* A candidate for a device type that the backend, not started in this context yet, knows it
 * has none of from an earlier start (its census): PK_ENODEVICE saying so, without starting
 * it.  Contexts that ignore the environment never consult the record. */
static pk_status census_check(pk_context *ctx, const candidate *cd)
{
    const pk_backend_ops *ops = pk_backend_ops_get(cd->backend);
    char why[1200];
    if (!cd->type || cd->device >= 0 || ctx->slot[cd->backend].probed || !ops || !ops->census ||
        (ctx->opt.flags & PK_OPT_IGNORE_ENV) || ops->census(cd->type, why, sizeof why) != 0)
        return PK_OK;
    return pk_fail(PK_ENODEVICE, "%s: no %s device (%s)", ops->name,
                   cd->type == PK_DEVICE_GPU ? "GPU" : "CPU", why);
}

/* The device a candidate of the auto order would run on when it is a device across a link
 * (CUDA, OpenCL on a GPU), else -1.  Test hook: PORTKERN_TEST_COST_DEVICE=opencl makes OpenCL's
 * GPU turn take any OpenCL device (PoCL's CPU) so that the model runs without a GPU. */
static int link_device(pk_context *ctx, candidate *cd)
{
    if (cd->backend == PK_BACKEND_OPENCL && cd->type == PK_DEVICE_GPU) {
        const char *hook = pk_getenv("PORTKERN_TEST_COST_DEVICE");
        if (hook && !strcmp(hook, "opencl")) cd->type = 0;
    } else if (cd->backend != PK_BACKEND_CUDA) {
        return -1;
    }
    if (census_check(ctx, cd) != PK_OK) {
        pk_clear_error();
        return -1;
    }
    if (!pk_backend_available(ctx, cd->backend, NULL)) return -1;
    int dev = -1;
    if (pick_device(ctx, cd, 0, &dev) != PK_OK) {
        pk_clear_error();
        return -1;
    }
    return dev;
}

/* Without wisdom, a device across a link must repay its transfers: when the first usable
 * candidate is such a device and OpenMP comes later, the cost model (lib/cost.c) estimates
 * both, and OpenMP moves before the device when it would finish first.  The reason says so
 * with the estimates.  Nothing is measured on a machine without a device. */
static void cost_order(pk_context *ctx, const pk_kernel_class *kc, const void *desc,
                       candidate *cand, int n, char *note, size_t note_len)
{
    if (!kc->cost || !pk_cost_enabled(ctx) || !pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL))
        return;
    int gi = -1, hi = -1, gdev = -1;
    for (int i = 0; i < n && hi < 0; ++i) {
        if (cand[i].backend == PK_BACKEND_OPENMP)
            hi = i;
        else if (gi < 0 && (gdev = link_device(ctx, &cand[i])) >= 0)
            gi = i;
    }
    if (gi < 0 || hi < 0) return;
    const char *gname = pk_backend_name(cand[gi].backend);
    double tg = 0, tl = 0, th = 0;
    if (pk_cost_estimate(ctx, kc, desc, cand[gi].backend, gdev, &tg, &tl) != PK_OK ||
        pk_cost_estimate(ctx, kc, desc, PK_BACKEND_OPENMP, 0, &th, NULL) != PK_OK) {
        pk_append_note(note, note_len, "cost model: no estimate (%.80s), auto order kept",
                       pk_last_error());
        pk_clear_error();
        return;
    }
    if (th < tg) {
        const candidate host = cand[hi];
        memmove(cand + gi + 1, cand + gi, (size_t)(hi - gi) * sizeof *cand);
        cand[gi] = host;
    }
    pk_append_note(note, note_len,
                   "cost model: %s ~%.3g ms (transfers %.3g) %s openmp ~%.3g ms: %s first",
                   gname, tg * 1e3, tl * 1e3, th < tg ? ">" : "<=", th * 1e3,
                   th < tg ? "openmp" : gname);
}

static pk_status candidates(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                            const void *desc, const pk_wisdom_pick *wisdom, candidate *cand, int *ncand,
                            int *strict, char *note, size_t note_len)
{
    pk_backend_id forced = ctx->opt.backend;
    int from_env = forced != PK_BACKEND_AUTO && strstr(ctx->env_note, "PORTKERN_BACKEND") != NULL;
    pk_backend_id owner = PK_BACKEND_AUTO;
    if (variant && *variant) {
        for (int b = 1; b < PK_BACKEND_COUNT && owner == PK_BACKEND_AUTO; ++b)
            if (pk_list_find(pk_kernel_variants(kc, (pk_backend_id)b), variant) >= 0)
                owner = (pk_backend_id)b;
        if (owner == PK_BACKEND_AUTO) {
            char all[256] = "";
            for (int b = 1; b < PK_BACKEND_COUNT; ++b)
                if (pk_kernel_variants(kc, (pk_backend_id)b)[0])
                    pk_append_note(all, sizeof all, "%s", pk_kernel_variants(kc, (pk_backend_id)b));
            return pk_fail(PK_ENOVARIANT, "%s variant '%s': unknown (known: %s)", kc->name,
                           variant, all);
        }
        if (forced != PK_BACKEND_AUTO && forced != owner && !from_env)
            return pk_fail(PK_ENOVARIANT, "%s variant '%s' belongs to backend %s, but the context "
                           "forces backend %s", kc->name, variant, pk_backend_name(owner),
                           pk_backend_name(forced));
    }
    *ncand = 0;
    *strict = 0;
    if (forced != PK_BACKEND_AUTO && !from_env) {
        cand[(*ncand)++] = (candidate){forced, 0, -1, NULL, NULL};
        *strict = 1;
    } else if (owner != PK_BACKEND_AUTO) { /* the variant names its backend; prefer a GPU */
        if (owner == PK_BACKEND_OPENCL)
            cand[(*ncand)++] = (candidate){owner, PK_DEVICE_GPU, -1, NULL, NULL};
        cand[(*ncand)++] = (candidate){owner, 0, -1, NULL, NULL};
        if (from_env && forced != owner)
            pk_append_note(note, note_len, "variant %s overrides PORTKERN_BACKEND=%s", variant,
                           pk_backend_name(forced));
    } else {
        if (from_env) cand[(*ncand)++] = (candidate){forced, 0, -1, NULL, NULL};
        if (wisdom)
            cand[(*ncand)++] = (candidate){wisdom->backend, 0, wisdom->device, wisdom->variant,
                                           wisdom->tuned ? &wisdom->tuning : NULL};
        const int first = *ncand;
        for (int i = 0; i < N_AUTO; ++i) cand[(*ncand)++] = auto_order[i];
        if (!from_env && !wisdom)
            cost_order(ctx, kc, desc, cand + first, *ncand - first, note, note_len);
    }
    return PK_OK;
}

/* The device a candidate runs on; PK_ENODEVICE when it has none of the wanted type.  A device
 * index the caller asked for is honoured or the candidate is refused: never silently
 * replaced by device 0 (under auto, a backend without that device is skipped, and when no
 * backend has it the call fails). */
static pk_status pick_device(pk_context *ctx, const candidate *cd, int strict, int *device)
{
    const pk_backend_ops *ops = pk_backend_ops_get(cd->backend);
    int dev = ctx->opt.device, n = pk_device_count(ctx, cd->backend);
    if (cd->device >= 0) { /* wisdom's, matched by identity (and to the caller's index) */
        PK_CHECK(cd->device < n, PK_ENODEVICE, "%s device %d: the backend has %d device(s)",
                 pk_backend_name(cd->backend), cd->device, n);
        *device = cd->device;
        return PK_OK;
    }
    if (dev >= 0) {
        PK_CHECK(dev < n, PK_ENODEVICE, "%s device %d: the backend has %d device(s)",
                 pk_backend_name(cd->backend), dev, n);
        if (!strict && cd->type) { /* the requested index, if it is of this type */
            pk_device_info di;
            PK_CHECK(ops->device_info(ctx->slot[cd->backend].state, dev, &di) == PK_OK &&
                         di.type == cd->type,
                     PK_ENODEVICE, "%s device %d is not a %s", pk_backend_name(cd->backend), dev,
                     cd->type == PK_DEVICE_GPU ? "GPU" : "CPU");
        }
        *device = dev;
        return PK_OK;
    }
    dev = pk_context_pick_device(ctx, cd->backend, cd->type);
    PK_CHECK(dev >= 0, PK_ENODEVICE, "%s: no %s device", pk_backend_name(cd->backend),
             cd->type == PK_DEVICE_GPU ? "GPU" : cd->type == PK_DEVICE_CPU ? "CPU" : "usable");
    *device = dev;
    return PK_OK;
}

static pk_status create_on(pk_context *ctx, const pk_kernel_class *kc, const candidate *cd,
                           int strict, const void *desc, const char *variant, pk_choice *c)
{
    const char *why;
    PK_TRY(census_check(ctx, cd));
    PK_CHECK(pk_backend_available(ctx, cd->backend, &why), PK_ENOBACKEND, "%s: %s",
             pk_backend_name(cd->backend), why);
    const pk_backend_ops *ops = pk_backend_ops_get(cd->backend);
    const char *list = pk_kernel_variants(kc, cd->backend);
    PK_CHECK(list[0], PK_ENOVARIANT, "%s: backend %s does not implement it", kc->name, ops->name);
    int dev = -1;
    PK_TRY(pick_device(ctx, cd, strict, &dev));
    if (cd->variant) variant = cd->variant;
    if (variant && *variant) {
        PK_CHECK(pk_list_find(list, variant) >= 0, PK_ENOVARIANT,
                 "%s variant '%s': not a variant of backend %s (%s)", kc->name, variant, ops->name,
                 list);
        pk_strlcpy(c->variant, variant, sizeof c->variant);
    }
    pk_device_info di;
    const int have_info = ops->device_info(ctx->slot[cd->backend].state, dev, &di) == PK_OK;
    if (have_info) pk_strlcpy(c->device_name, di.name, sizeof c->device_name);
    if (!(variant && *variant)) { /* the device's best where the kernel knows it, else the
                                     first listed: the backend's best */
        const char *why = NULL;
        const char *dv = have_info && kc->device_variant
                             ? kc->device_variant(cd->backend, &di, desc, &why)
                             : NULL;
        if (dv && pk_list_find(list, dv) >= 0) {
            pk_strlcpy(c->variant, dv, sizeof c->variant);
            c->variant_why = why;
        } else {
            pk_strlcpy(c->variant, list, sizeof c->variant);
            c->variant[strcspn(c->variant, ",")] = '\0';
        }
    }
    if (ops->device_check) PK_TRY(ops->device_check(ctx->slot[cd->backend].state, dev));
    const pk_tuning *tuning = cd->tuning ? cd->tuning : &ctx->tuning;
    /* openmp.threads (the context's or a wisdom entry's) where the context's count is 0 */
    const int threads = cd->backend == PK_BACKEND_OPENMP
                            ? pk_tuning_threads(tuning, ctx->opt.threads)
                            : ctx->opt.threads;
    PK_TRY(kc->create(ops, kc->on[cd->backend], ctx->slot[cd->backend].state, dev, desc,
                      c->variant, threads, tuning, &c->impl));
    c->backend = cd->backend;
    c->device = dev;
    c->ops = ops;
    c->kops = kc->on[cd->backend];
    return PK_OK;
}

pk_status pk_dispatch(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                      const void *desc, pk_choice_work work, void *arg, pk_choice *out)
{
    PK_CHECK_NULL(ctx);
    candidate cand[N_AUTO + 3];
    int ncand = 0, strict = 0;
    char note[PK_REASON_LEN] = "";
    if (ctx->env_note[0]) pk_append_note(note, sizeof note, "%s", ctx->env_note);
    /* wisdom only where auto alone chooses: no backend forced (by the caller or
     * PORTKERN_BACKEND), no variant named, and the kernel takes it for this call */
    const double plan_bytes = kc->plan_bytes(desc);
    char key[64] = "";
    if (kc->wisdom_key) kc->wisdom_key(desc, key, sizeof key);
    pk_wisdom_pick pick;
    const int wise = ctx->opt.backend == PK_BACKEND_AUTO && !(variant && *variant) &&
                     (!kc->accepts_wisdom || kc->accepts_wisdom(desc)) &&
                     pk_wisdom_choose(ctx, kc, plan_bytes, key, &pick, note, sizeof note);
    PK_TRY(candidates(ctx, kc, variant, desc, wise ? &pick : NULL, cand, &ncand, &strict, note,
                      sizeof note));
    pk_status last = PK_ENOBACKEND;
    char last_err[1024];
    snprintf(last_err, sizeof last_err, "no backend could run %s", kc->name);
    int tried_real = 0;
    for (int i = 0; i < ncand; ++i) {
        memset(out, 0, sizeof *out);
        double ts = pk_now();
        pk_status s = create_on(ctx, kc, &cand[i], strict, desc, variant, out);
        out->setup_s = pk_now() - ts;
        if (s == PK_OK && work) s = work(out, arg);
        char label[32];
        snprintf(label, sizeof label, "%s%s", pk_backend_name(cand[i].backend),
                 cand[i].type == PK_DEVICE_GPU ? " gpu" : cand[i].type == PK_DEVICE_CPU ? " cpu" : "");
        const int from_wisdom = cand[i].variant != NULL;
        if (s == PK_OK) {
            out->fell_back = tried_real;
            out->plan_bytes = plan_bytes;
            pk_strlcpy(out->wisdom_key, key, sizeof out->wisdom_key);
            pk_strlcpy(out->reason, note, sizeof out->reason);
            pk_append_note(out->reason, sizeof out->reason, "%s: chosen (%s)", label,
                           strict                  ? "backend forced by the caller"
                           : (variant && *variant) ? "backend of the requested variant"
                           : from_wisdom           ? pick.says
                           : (i == 0 && ctx->opt.backend != PK_BACKEND_AUTO)
                               ? "backend chosen by PORTKERN_BACKEND"
                               : strstr(note, "cost model: ") ? "by the cost model"
                                                              : "first usable backend in auto order");
            const int tt = cand[i].backend == PK_BACKEND_OPENMP && ctx->opt.threads == 0
                               ? pk_tuning_threads(cand[i].tuning ? cand[i].tuning : &ctx->tuning, 0)
                               : 0;
            if (tt > 0)
                pk_append_note(out->reason, sizeof out->reason, "%d threads (openmp.threads)", tt);
            if (out->variant_why)
                pk_append_note(out->reason, sizeof out->reason, "%s: %s", out->variant,
                               out->variant_why);
            return PK_OK;
        }
        if (out->impl) kc->destroy(out->kops, out->impl);
        out->impl = NULL;
        last = s;
        pk_strlcpy(last_err, pk_last_error(), sizeof last_err);
        if (out->no_fallback && !strict && i + 1 < ncand)
            return pk_fail(s, "%s failed, not retried on another backend (the failed download "
                           "may have overwritten the input array): %s",
                           pk_backend_name(cand[i].backend), last_err);
        if (strict) break;
        /* An unavailable backend is skipped, and the reason says why in a few words; a real
         * failure is a warning to see.  Wisdom's candidate was checked to be there: any
         * failure of it is a real one. */
        if (from_wisdom) {
            tried_real = 1;
            pk_append_note(note, sizeof note, "wisdom: %s on %s %d failed (%s: %s), fell back",
                           cand[i].variant, pk_backend_name(cand[i].backend), cand[i].device,
                           pk_status_name(s), last_err);
        } else if (s != PK_ENOBACKEND && s != PK_ENODEVICE && s != PK_ENOVARIANT) {
            tried_real = 1;
            pk_append_note(note, sizeof note, "%s failed (%s: %s), fell back",
                           pk_backend_name(cand[i].backend), pk_status_name(s), last_err);
        } else {
            /* the backend's own name leads most messages ("opencl: no GPU device"): drop it */
            const char *why = last_err;
            const size_t bl = strlen(pk_backend_name(cand[i].backend));
            if (!strncmp(why, pk_backend_name(cand[i].backend), bl) && why[bl] == ':')
                why += bl + (why[bl + 1] == ' ' ? 2 : 1);
            pk_append_note(note, sizeof note, "%s: skipped (%.60s%s)", label, why,
                           strlen(why) > 60 ? "..." : "");
        }
    }
    if (strict || ncand == 1) return pk_fail(last, "%s", last_err);
    return pk_fail(last, "no backend could run %s: %s", kc->name, note);
}

/* The plan's transfer note (what its copies did since it was last said) onto dst. */
static void choice_transfer_note(const pk_choice *c, char *dst, size_t len)
{
    if (c->ops && c->ops->transfer_note && c->impl) c->ops->transfer_note(c->impl, dst, len);
}

int pk_choice_memory(const pk_choice *c, const void *p, size_t bytes)
{
    return c->ops && c->ops->memory && c->impl ? c->ops->memory(c->impl, p, bytes) : PK_MEM_HOST;
}

int pk_choice_direct(pk_choice *c, const void *const *p, const size_t *bytes, int n)
{
    if (!c->ops || !c->ops->memory) return 1; /* the backend works in host memory */
    int all = 1;
    for (int i = 0; i < n; ++i) {
        const int m = pk_choice_memory(c, p[i], bytes[i]);
        if (m != PK_MEM_HOST) c->no_fallback = 1;
        if (m != PK_MEM_DEVICE) all = 0;
    }
    return all;
}

pk_status pk_choice_host_only(const pk_choice *c, const void *const *p, const size_t *bytes,
                              const char *const *names, int n, const char *step)
{
    for (int i = 0; i < n; ++i)
        PK_CHECK(pk_choice_memory(c, p[i], bytes[i]) == PK_MEM_HOST, PK_EINVAL,
                 "%s: device memory, but %s: pass host memory (or, to plan_execute, every "
                 "array of the call in device memory of the plan's device)",
                 names[i], step);
    return PK_OK;
}

void pk_choice_info(const pk_choice *c, pk_run_info *info)
{
    if (!info) return;
    info->backend = c->backend;
    info->device = c->device;
    pk_strlcpy(info->device_name, c->device_name, sizeof info->device_name);
    pk_strlcpy(info->variant, c->variant, sizeof info->variant);
    pk_strlcpy(info->reason, c->reason, sizeof info->reason);
    choice_transfer_note(c, info->reason, sizeof info->reason);
    info->fell_back = c->fell_back;
    info->setup_s = c->setup_s;
    info->plan_bytes = c->plan_bytes;
    pk_strlcpy(info->wisdom_key, c->wisdom_key, sizeof info->wisdom_key);
}

void pk_choice_run_info(const pk_choice *c, pk_run_info *info, double kernel_s, double flops,
                        double bytes, double t0)
{
    pk_choice_info(c, info);
    if (!info) return;
    info->setup_s = 0;
    info->kernel_s = kernel_s;
    info->flops = flops;
    info->bytes = bytes;
    info->wall_s = pk_now() - t0;
}

/* ---- the context's plan cache (one-shot calls) ------------------------------------------ */
typedef struct plan_entry {
    const pk_kernel_class *kc; /* NULL: free slot */
    char variant[32];          /* as the caller named it ("" for none) */
    unsigned char *key;
    size_t key_len;
    pk_choice c;
    double bytes; /* what the plan holds (the class's plan_bytes) */
    unsigned long long last_use;
} plan_entry;

typedef struct pk_plan_cache {
    plan_entry e[PK_PLAN_CACHE_SLOTS];
    double bytes; /* held by all entries */
    unsigned long long clock;
} pk_plan_cache;

static void entry_drop(pk_plan_cache *cache, plan_entry *e)
{
    if (!e->kc) return;
    cache->bytes -= e->bytes;
    if (e->c.impl) e->kc->destroy(e->c.kops, e->c.impl);
    pk_free_aligned(e->key);
    memset(e, 0, sizeof *e);
}

void pk_plan_cache_release(pk_context *ctx)
{
    if (!ctx->cache) return;
    for (int i = 0; i < PK_PLAN_CACHE_SLOTS; ++i) entry_drop(ctx->cache, &ctx->cache->e[i]);
    free(ctx->cache);
    ctx->cache = NULL;
}

void pk_plan_cache_trim(pk_context *ctx)
{
    pk_plan_cache *cache = ctx->cache;
    while (cache && cache->bytes > (double)ctx->cache_limit) {
        plan_entry *oldest = NULL;
        for (int i = 0; i < PK_PLAN_CACHE_SLOTS; ++i)
            if (cache->e[i].kc && (!oldest || cache->e[i].last_use < oldest->last_use))
                oldest = &cache->e[i];
        if (!oldest) break;
        entry_drop(cache, oldest);
    }
}

static size_t key_length(const pk_key_part *key, int nparts)
{
    size_t len = 0;
    for (int i = 0; i < nparts; ++i) len += key[i].len;
    return len;
}

static int key_equal(const unsigned char *kept, const pk_key_part *key, int nparts)
{
    for (int i = 0; i < nparts; kept += key[i++].len)
        if (key[i].len && memcmp(kept, key[i].p, key[i].len) != 0) return 0;
    return 1;
}

static plan_entry *cache_find(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                              const pk_key_part *key, int nparts)
{
    if (!ctx->cache) return NULL;
    const size_t key_len = key_length(key, nparts);
    for (int i = 0; i < PK_PLAN_CACHE_SLOTS; ++i) {
        plan_entry *e = &ctx->cache->e[i];
        if (e->kc == kc && e->key_len == key_len && !strcmp(e->variant, variant) &&
            key_equal(e->key, key, nparts))
            return e;
    }
    return NULL;
}

/* Keep c (a created plan) under (kc, variant, key); 0 when it is not kept (larger than the
 * context's ceiling, or no memory): the caller then destroys it.  The least recently used
 * plans go first, until a slot is free and the kept bytes (plans and their keys) stay
 * within the ceiling. */
static int cache_keep(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                      const pk_key_part *key, int nparts, double bytes, const pk_choice *c)
{
    const size_t key_len = key_length(key, nparts);
    bytes += (double)key_len;
    if (bytes > (double)ctx->cache_limit) return 0;
    if (!ctx->cache && !(ctx->cache = calloc(1, sizeof *ctx->cache))) return 0;
    pk_plan_cache *cache = ctx->cache;
    plan_entry *slot;
    for (;;) {
        slot = NULL;
        plan_entry *oldest = NULL;
        for (int i = 0; i < PK_PLAN_CACHE_SLOTS; ++i) {
            plan_entry *e = &cache->e[i];
            if (!e->kc) {
                if (!slot) slot = e;
            } else if (!oldest || e->last_use < oldest->last_use) {
                oldest = e;
            }
        }
        if (slot && cache->bytes + bytes <= (double)ctx->cache_limit) break;
        entry_drop(cache, oldest); /* full, or over the ceiling: oldest exists then */
    }
    unsigned char *k = pk_alloc_aligned(key_len); /* huge pages for a large stack's copy */
    if (!k) return 0;
    /* back to back; on OpenMP a large part (grid's kernel stack, 34 MB at el82-70) by the
     * plan's threads: the copy's first touch of fresh pages is most of its cost (40 ms alone
     * on the 2-core EPYC VM, where the host takes freed memory back) and faults in parallel */
    const int nt = c->backend == PK_BACKEND_OPENMP
                       ? pk_host_threads(pk_tuning_threads(&ctx->tuning, ctx->opt.threads))
                       : 1;
    for (size_t i = 0, at = 0; i < (size_t)nparts; at += key[i++].len)
        if (key[i].len) pk_copy_threads(k + at, key[i].p, key[i].len, nt);
    slot->kc = kc;
    pk_strlcpy(slot->variant, variant, sizeof slot->variant);
    slot->key = k;
    slot->key_len = key_len;
    slot->c = *c;
    slot->bytes = bytes;
    cache->bytes += bytes;
    slot->last_use = ++cache->clock;
    return 1;
}

/* ---- plans of plans a one-shot call keeps (image, degrid) ------------------------------- */
void *pk_cache_find_object(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                           const pk_key_part *key, int nparts)
{
    if (ctx->cache_off) return NULL;
    plan_entry *e = cache_find(ctx, kc, variant ? variant : "", key, nparts);
    if (!e) return NULL;
    e->last_use = ++ctx->cache->clock;
    return e->c.impl;
}

int pk_cache_keep_object(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                         const pk_key_part *key, int nparts, double bytes, void *obj,
                         pk_backend_id backend)
{
    const char *named = variant ? variant : "";
    if (ctx->cache_off || strlen(named) >= 32) return 0;
    pk_choice c;
    memset(&c, 0, sizeof c);
    c.impl = obj;
    c.backend = backend;
    return cache_keep(ctx, kc, named, key, nparts, bytes, &c);
}

void pk_cache_drop_object(pk_context *ctx, const pk_kernel_class *kc, const void *obj)
{
    for (int i = 0; ctx->cache && i < PK_PLAN_CACHE_SLOTS; ++i)
        if (ctx->cache->e[i].kc == kc && ctx->cache->e[i].c.impl == obj)
            entry_drop(ctx->cache, &ctx->cache->e[i]);
}

pk_status pk_dispatch_oneshot(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                              const void *desc, const void *key, size_t key_len,
                              pk_choice_work work, void *arg,
                              void (*finish)(pk_choice *c, const void *desc), pk_choice *out)
{
    const pk_key_part part = {key, key_len};
    return pk_dispatch_oneshot_parts(ctx, kc, variant, desc, key ? &part : NULL, 1, work, arg,
                                     finish, out);
}

pk_status pk_dispatch_oneshot_parts(pk_context *ctx, const pk_kernel_class *kc,
                                    const char *variant, const void *desc,
                                    const pk_key_part *key, int nparts, pk_choice_work work,
                                    void *arg, void (*finish)(pk_choice *c, const void *desc),
                                    pk_choice *out)
{
    PK_CHECK_NULL(ctx);
    const char *named = variant ? variant : "";
    const int cached = key != NULL && !ctx->cache_off && strlen(named) < 32;
    plan_entry *e = cached ? cache_find(ctx, kc, named, key, nparts) : NULL;
    if (e) {
        *out = e->c;
        out->setup_s = 0;
        out->no_fallback = 0;
        pk_status s = work(out, arg);
        if (s == PK_OK) {
            e->last_use = ++ctx->cache->clock;
            choice_transfer_note(out, out->reason, sizeof out->reason);
            pk_append_note(out->reason, sizeof out->reason, "plan reused from the context");
            return PK_OK;
        }
        /* a plan that failed is not kept; unless the failure may have damaged the caller's
         * input, the call starts over as a fresh one (and may fall back) */
        const int no_fallback = out->no_fallback;
        char err[1024];
        pk_strlcpy(err, pk_last_error(), sizeof err);
        entry_drop(ctx->cache, e);
        if (no_fallback) return pk_fail(s, "%s", err);
    }
    PK_TRY(pk_dispatch(ctx, kc, variant, desc, work, arg, out));
    if (finish) finish(out, desc);
    /* said now, while the plan lives, but not kept in the cached choice's reason */
    char xfer[PK_REASON_LEN] = "";
    choice_transfer_note(out, xfer, sizeof xfer);
    if (!cached || !cache_keep(ctx, kc, named, key, nparts, kc->plan_bytes(desc), out)) {
        kc->destroy(out->kops, out->impl);
        out->impl = NULL;
    }
    if (xfer[0]) pk_append_note(out->reason, sizeof out->reason, "%s", xfer);
    return PK_OK;
}
