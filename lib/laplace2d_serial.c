/* laplace2d_serial.c - the serial backend's laplace2d variant, one thread:
 *   serial  plain C rows in the plan's layout (pk_lp_row, laplace2d_host.h): the interior of
 *           a row is one contiguous loop with the x neighbours nw floats away (lexi: 1),
 *           the two boundary columns rotate lanes with index arithmetic.  Both layouts. */
#include "laplace2d_host.h"

pk_status pk_serial_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    pk_lp_host_plan *h;
    PK_TRY(pk_lp_host_create(desc, 1, &h));
    h->run = pk_serial_lp_run;
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_lp_run(void *impl, int count, double *kernel_seconds)
{
    pk_lp_host_plan *h = impl;
    const pk_lp_desc *d = &h->d;
    const size_t l = (size_t)d->l;
    PK_TRY(pk_lp_host_ready(h, 1));
    const double t0 = pk_now();
    for (int it = 0; it < count; ++it) {
        const float *src = h->cur;
        float *dst = h->cur == h->f1 ? h->f2 : h->f1;
        for (size_t y = 0; y < l; ++y) {
            const size_t yn = y == 0 ? l - 1 : y - 1, ys = y + 1 == l ? 0 : y + 1;
            pk_lp_row(d->l, d->nw, d->sigma, d->inv, src + y * l, src + yn * l, src + ys * l,
                      dst + y * l);
        }
        h->cur = dst;
    }
    *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

/* The laplace2d kernel family on this backend (lib/internal.h, pk_lp_ops). */
const pk_lp_ops pk_serial_lp_ops = {
    .variants = "serial",
    .create = pk_serial_lp_create,
    .upload = pk_lp_host_upload,
    .run = pk_serial_lp_run,
    .download = pk_lp_host_download,
    .destroy = pk_lp_host_destroy,
    .execute = pk_lp_host_execute,
};
