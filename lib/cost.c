/* cost.c - the cost model auto uses without wisdom: does a device across a link repay its
 * transfers?
 *
 * A call's time on a backend is estimated as
 *     call_s + link_bytes / link_bps + max(bytes / bw, flops / peak)
 * from the kernel class's counts for the call (pk_cost: the byte and flop models of the run
 * info, and the bytes that cross the link in a one-shot call) and the ceilings of the backend
 * and device, measured once per context the first time a decision needs them:
 *  - the host (OpenMP): the copy bandwidth of the context's threads and their FMA peak, by short
 *    runs (about 20 ms together);
 *  - a device: its copy bandwidth (the backend's bandwidth kernel) and, where the backend
 *    measures it (link_bandwidth), the host<->device rate; otherwise PK_COST_LINK_BPS.  A
 *    device's flop peak is not measured: these kernels reach a GPU's memory roof first, so
 *    only its bandwidth counts there.
 * Nothing is measured on a machine without a device: the model runs only when a device
 * candidate comes before OpenMP in the auto order (lib/dispatch.c). */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Assumed when a backend cannot measure its link: a PCIe 4.0 x16 link's practical
 * pageable-through-pinned rate, the lower end of what the staging of the CUDA backend moves. */
#define PK_COST_LINK_BPS 12e9
/* A device call's fixed part: launches, a synchronisation, small copies (assumed). */
#define PK_COST_DEVICE_CALL_S 50e-6

static const pk_cost_ceiling *ceiling_of(pk_context *ctx, pk_backend_id b, int device)
{
    pk_cost_ceiling *c;
    if (b == PK_BACKEND_OPENMP || b == PK_BACKEND_SERIAL) {
        c = &ctx->cost_host[b == PK_BACKEND_SERIAL];
        if (c->state == 0) {
            const int threads = b == PK_BACKEND_SERIAL ? 1 : ctx->opt.threads;
            c->state = pk_host_bandwidth(threads, (size_t)32 << 20, 2, &c->bw) == PK_OK &&
                               pk_host_peak_flops_quick(threads, &c->flops) == PK_OK
                           ? 1
                           : -1;
        }
        return c->state > 0 ? c : NULL;
    }
    if (device < 0 || device >= PK_COST_DEVICES) return NULL;
    c = &ctx->cost_dev[b][device];
    if (c->state == 0) {
        const pk_backend_ops *ops = pk_backend_ops_get(b);
        c->state = -1;
        if (ops && ops->bandwidth(ctx->slot[b].state, device, (size_t)32 << 20, 2, &c->bw) == PK_OK &&
            c->bw > 0) {
            c->link_bps = PK_COST_LINK_BPS;
            c->link_measured = ops->link_bandwidth &&
                               ops->link_bandwidth(ctx->slot[b].state, device, (size_t)16 << 20,
                                                   &c->link_bps) == PK_OK &&
                               c->link_bps > 0;
            if (!c->link_measured) c->link_bps = PK_COST_LINK_BPS;
            c->call_s = PK_COST_DEVICE_CALL_S;
            c->state = 1;
        }
        pk_clear_error(); /* a failed measurement is not the call's error */
    }
    return c->state > 0 ? c : NULL;
}

double pk_cost_seconds(const pk_cost *k, const pk_cost_ceiling *c, double *link_s)
{
    const double link = c->link_bps > 0 ? k->link_bytes / c->link_bps : 0;
    double t = c->bw > 0 ? k->bytes / c->bw : 0;
    if (c->flops > 0 && k->flops / c->flops > t) t = k->flops / c->flops;
    if (link_s) *link_s = link;
    return c->call_s + link + t;
}

int pk_cost_enabled(const pk_context *ctx)
{
    if (ctx->opt.flags & PK_OPT_IGNORE_ENV) return 1;
    const char *v = pk_getenv("PORTKERN_COST_MODEL");
    return !(v && strcmp(v, "0") == 0);
}

pk_status pk_cost_estimate(pk_context *ctx, const pk_kernel_class *kc, const void *desc,
                           pk_backend_id backend, int device, double *seconds, double *link_s)
{
    PK_CHECK(kc->cost != NULL, PK_EUNSUPPORTED, "%s: no cost model", kc->name);
    pk_cost k = {0, 0, 0};
    kc->cost(desc, &k);
    const pk_cost_ceiling *c = ceiling_of(ctx, backend, device);
    PK_CHECK(c != NULL, PK_EDEVICE, "%s device %d: its ceilings could not be measured",
             pk_backend_name(backend), device);
    *seconds = pk_cost_seconds(&k, c, link_s);
    return PK_OK;
}
