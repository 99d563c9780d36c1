/* grid_serial.c - grid on the serial backend: "serial" is the reference loop itself (float
 * coordinates, C rounding, float grid, double norm) over the plan's copy of the compact
 * kernel stack. */
#include "grid_host.h"

#include <stdlib.h>
#include <string.h>

typedef pk_gr_host_stack gr_serial_plan;

void pk_serial_gr_destroy(void *impl)
{
    gr_serial_plan *h = impl;
    if (!h) return;
    free(h->support);
    free(h->plane_offset);
    pk_free_aligned(h->kernels);
    free(h);
}

pk_status pk_serial_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    (void)state;
    (void)device;
    const int np = desc->p.num_w_planes;
    const size_t n = desc->plane_offset[np];
    gr_serial_plan *h = calloc(1, sizeof *h);
    if (h) {
        h->p = desc->p;
        h->support = malloc((size_t)np * sizeof *h->support);
        h->plane_offset = malloc(((size_t)np + 1) * sizeof *h->plane_offset);
        h->kernels = pk_alloc_aligned(2 * n * sizeof(float) + 64);
    }
    if (!h || !h->support || !h->plane_offset || !h->kernels) {
        pk_serial_gr_destroy(h);
        return pk_fail(PK_ENOMEM, "grid: cannot copy the kernel stack (%zu samples)", n);
    }
    memcpy(h->support, desc->support, (size_t)np * sizeof *h->support);
    memcpy(h->plane_offset, desc->plane_offset, ((size_t)np + 1) * sizeof *h->plane_offset);
    memcpy(h->kernels, desc->kernels, 2 * n * sizeof(float));
    h->threads = desc->threads;
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res)
{
    gr_serial_plan *h = impl;
    const double t0 = pk_now();
    res->grid_touched = 1;
    pk_gr_ref_run(&h->p, h->support, h->plane_offset, h->kernels, data, grid, NULL, &res->norm,
                  &res->num_skipped, &res->updates, 1);
    res->kernel_s = pk_now() - t0;
    pk_gr_stage(res, "grid", res->kernel_s);
    return PK_OK;
}

/* The grid kernel family on this backend (lib/internal.h, pk_gr_ops). */
const pk_gr_ops pk_serial_gr_ops = {
    .variants = "serial",
    .create = pk_serial_gr_create,
    .run = pk_serial_gr_run,
    .destroy = pk_serial_gr_destroy,
};
