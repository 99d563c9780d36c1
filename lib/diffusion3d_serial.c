/* diffusion3d_serial.c - diffusion3d on the serial backend: the reference steps on the host
 * plan's two buffers. */
#include "internal.h"

static pk_status serial_d3_run(void *impl, int count, double *seconds);

static pk_status serial_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl)
{
    pk_d3_host_plan *h;
    PK_TRY(pk_d3_host_create(desc, &h));
    h->run = serial_d3_run;
    *impl = h;
    return PK_OK;
}

static pk_status serial_d3_run(void *impl, int count, double *seconds)
{
    pk_d3_host_plan *h = impl;
    float *other = h->cur == h->f1 ? h->f2 : h->f1;
    double t0 = pk_now();
    pk_d3_ref_steps(&h->d, count, h->cur, other, &h->cur, 1);
    *seconds = pk_now() - t0;
    return PK_OK;
}

const pk_d3_ops pk_serial_d3_ops = {
    .variants = "serial",
    .create = serial_d3_create,
    .upload = pk_d3_host_upload,
    .run = serial_d3_run,
    .download = pk_d3_host_download,
    .upload_part = pk_d3_host_upload_part,
    .download_part = pk_d3_host_download_part,
    .destroy = pk_d3_host_destroy,
    .execute = pk_d3_host_execute,
};
