/* degrid_serial.c - degrid on the serial backend (docs/KERNELS.md 7.3): "serial" is the reference
 * loop itself (lib/ref/degrid_ref.c) over the plan's copy of the compact kernel stack (the
 * serial grid plan's copy: pk_serial_gr_create). */
#include "grid_host.h"

static pk_status dg_serial_run(void *impl, const float *grid, const pk_grid_data *d, float *vis,
                               pk_dg_result *r)
{
    const pk_gr_host_stack *h = impl;
    const double t0 = pk_now();
    r->num_skipped = pk_dg_ref_run(&h->p, h->support, h->plane_offset, h->kernels, d, grid, NULL,
                                   vis, NULL, NULL, 0, d->num_vis, &r->updates);
    r->kernel_s = pk_now() - t0;
    return PK_OK;
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
const pk_dg_ops pk_serial_dg_ops = {
    .variants = "serial",
    .create = pk_serial_gr_create,
    .run = dg_serial_run,
    .destroy = pk_serial_gr_destroy,
};
