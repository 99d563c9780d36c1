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
    .d3_variants = "omp-tb,omp-tiled,omp,omp-phalanx",
    .d3_create = pk_omp_d3_create,
    .d3_upload = pk_d3_host_upload,
    .d3_run = pk_omp_d3_run,
    .d3_download = pk_d3_host_download,
    .d3_destroy = pk_d3_host_destroy,
#ifdef PK_HAVE_FFTW
    .cv_variants = "omp,fft",
#else
    .cv_variants = "omp", /* no FFTW at configure time: no fft variant */
#endif
    .cv_create = pk_omp_cv_create,
    .cv_upload = pk_cv_host_upload,
    .cv_run = pk_omp_cv_run,
    .cv_download = pk_cv_host_download,
    .cv_destroy = pk_cv_host_destroy,
    .mf_variants = "omp",
    .mf_create = pk_omp_mf_create,
    .mf_upload = pk_mf_host_upload,
    .mf_run = pk_omp_mf_run,
    .mf_download = pk_mf_host_download,
    .mf_destroy = pk_mf_host_destroy,
    .gr_variants = "omp-tiled,omp-atomic",
    .gr_create = pk_omp_gr_create,
    .gr_run = pk_omp_gr_run,
    .gr_destroy = pk_omp_gr_destroy,
    .lp_variants = "omp-simd,omp,omp-tb",
    .lp_create = pk_omp_lp_create,
    .lp_upload = pk_lp_host_upload,
    .lp_run = pk_omp_lp_run,
    .lp_download = pk_lp_host_download,
    .lp_destroy = pk_lp_host_destroy,
    .s3_variants = "omp-simd,omp",
    .s3_create = pk_omp_s3_create,
    .s3_upload = pk_omp_s3_upload,
    .s3_run = pk_omp_s3_run,
    .s3_download = pk_omp_s3_download,
    .s3_destroy = pk_s3_host_destroy,
    .ds_variants = "omp-vnode,omp",
    .ds_create = pk_omp_ds_create,
    .ds_upload = pk_ds_host_upload,
    .ds_run = pk_omp_ds_run,
    .ds_download = pk_ds_host_download,
    .ds_destroy = pk_ds_host_destroy,
};
