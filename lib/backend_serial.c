/* backend_serial.c - the serial backend: the reference loops on the host, one thread. */
#include "conv2d_host.h"
#include "magicfilter3d_host.h"
#include "grid_host.h"
#include "laplace2d_host.h"
#include "su3_host.h"
#include "dslash_host.h"

#include <stdlib.h>

static pk_status serial_init(const pk_context_options *opt, void **state, char *why, size_t len)
{
    static int dummy;
    *state = &dummy; /* nothing to probe: the host is always there */
    return PK_OK;
}

static void serial_fini(void *state) {}

static int serial_device_count(void *state) { return 1; }

static pk_status serial_device_info(void *state, int index, pk_device_info *info)
{
    pk_cpu_info(info);
    info->compute_units = 1; /* one thread */
    pk_strlcpy(info->driver, "serial C99 reference", sizeof info->driver);
    return PK_OK;
}

static pk_status serial_bandwidth(void *state, int device, size_t bytes, int reps, double *bps)
{
    return pk_host_bandwidth(1, bytes, reps, bps);
}

static pk_status serial_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl)
{
    pk_d3_host_plan *h;
    PK_TRY(pk_d3_host_create(desc, &h));
    *impl = h;
    return PK_OK;
}

static pk_status serial_d3_run(void *impl, int count, double *seconds)
{
    pk_d3_host_plan *h = impl;
    float *other = h->cur == h->f1 ? h->f2 : h->f1;
    double t0 = pk_now();
    pk_d3_ref_steps(&h->d, count, h->cur, other, &h->cur);
    *seconds = pk_now() - t0;
    return PK_OK;
}

const pk_backend_ops pk_backend_serial = {
    .id = PK_BACKEND_SERIAL,
    .name = "serial",
    .init = serial_init,
    .fini = serial_fini,
    .device_count = serial_device_count,
    .device_info = serial_device_info,
    .bandwidth = serial_bandwidth,
    .d3_variants = "serial",
    .d3_create = serial_d3_create,
    .d3_upload = pk_d3_host_upload,
    .d3_run = serial_d3_run,
    .d3_download = pk_d3_host_download,
    .d3_destroy = pk_d3_host_destroy,
    .cv_variants = "simd,serial,naive",
    .cv_create = pk_serial_cv_create,
    .cv_upload = pk_cv_host_upload,
    .cv_run = pk_serial_cv_run,
    .cv_download = pk_cv_host_download,
    .cv_destroy = pk_cv_host_destroy,
    .mf_variants = "simd,unrolled,serial,serial-direct",
    .mf_create = pk_serial_mf_create,
    .mf_upload = pk_mf_host_upload,
    .mf_run = pk_serial_mf_run,
    .mf_download = pk_mf_host_download,
    .mf_destroy = pk_mf_host_destroy,
    .gr_variants = "serial",
    .gr_create = pk_serial_gr_create,
    .gr_run = pk_serial_gr_run,
    .gr_destroy = pk_serial_gr_destroy,
    .lp_variants = "serial",
    .lp_create = pk_serial_lp_create,
    .lp_upload = pk_lp_host_upload,
    .lp_run = pk_serial_lp_run,
    .lp_download = pk_lp_host_download,
    .lp_destroy = pk_lp_host_destroy,
    .s3_variants = "serial",
    .s3_create = pk_serial_s3_create,
    .s3_upload = pk_s3_host_upload,
    .s3_run = pk_serial_s3_run,
    .s3_download = pk_s3_host_download,
    .s3_destroy = pk_s3_host_destroy,
    .ds_variants = "serial",
    .ds_create = pk_serial_ds_create,
    .ds_upload = pk_ds_host_upload,
    .ds_run = pk_serial_ds_run,
    .ds_download = pk_ds_host_download,
    .ds_destroy = pk_ds_host_destroy,
};
