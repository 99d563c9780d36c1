/* backend_openmp.c - the OpenMP backend's table: all cores of the host. */
#include "omp_internal.h"
#include "conv2d_host.h"
#include "magicfilter3d_host.h"
#include "grid_host.h"
#include "laplace2d_host.h"
#include "su3_host.h"
#include "dslash_host.h"

#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif

static int the_state; /* nothing per context: threads come with each plan's descriptor */

static pk_status omp_init(const pk_context_options *opt, void **state, char *why, size_t len)
{
#ifdef PK_HAVE_OPENMP
    *state = &the_state;
    return PK_OK;
#else
    pk_strlcpy(why, "not built with OpenMP (configure found no OpenMP flag, or --disable-openmp)",
               len);
    return PK_ENOBACKEND;
#endif
}

static void omp_fini(void *state) {}

static int omp_device_count(void *state) { return 1; }

static pk_status omp_device_info(void *state, int index, pk_device_info *info)
{
    pk_cpu_info(info);
#ifdef PK_HAVE_OPENMP
    info->compute_units = omp_get_max_threads();
#endif
    return PK_OK;
}

static pk_status omp_bandwidth(void *state, int device, size_t bytes, int reps, double *bps)
{
    return pk_host_bandwidth(0, bytes, reps, bps);
}

const pk_backend_ops pk_backend_openmp = {
    .id = PK_BACKEND_OPENMP,
    .name = "openmp",
    .init = omp_init,
    .fini = omp_fini,
    .device_count = omp_device_count,
    .device_info = omp_device_info,
    .bandwidth = omp_bandwidth,
};
