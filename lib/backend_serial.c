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

const pk_backend_ops pk_backend_serial = {
    .id = PK_BACKEND_SERIAL,
    .name = "serial",
    .init = serial_init,
    .fini = serial_fini,
    .device_count = serial_device_count,
    .device_info = serial_device_info,
    .bandwidth = serial_bandwidth,
};
