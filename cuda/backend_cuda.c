/* backend_cuda.c - the CUDA backend's table.
 *
 * Plain C: the CUDA work lives in runtime.cu, diffusion3d.cu, conv2d.cu and conv2d_fft.cu
 * behind the extern "C" functions of cuda_internal.h, so this file needs no CUDA header and
 * the rest of the library never sees C++.  Device checks are done here, once, before any
 * CUDA call, so that an invalid or unusable ordinal gives a precise pk_last_error() instead
 * of a driver error.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pk_status cuda_init(const pk_context_options *opt, void **state, char *why, size_t why_len)
{
    (void)opt; /* the device is chosen per call; CUDA needs no per-context setup */
    pk_cuda_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        if (why && why_len) snprintf(why, why_len, "out of host memory for the CUDA backend");
        return PK_ENOMEM;
    }
    pk_status st = pk_cuda_probe(s, why, why_len);
    if (st != PK_OK) {
        pk_cuda_release(s);
        free(s);
        return st;
    }
    *state = s;
    return PK_OK;
}

static void cuda_fini(void *state)
{
    pk_cuda_state *s = state;
    if (s == NULL) return;
    pk_cuda_release(s);
    free(s);
}

static int cuda_device_count(void *state)
{
    const pk_cuda_state *s = state;
    return s ? s->count : 0;
}

static pk_status cuda_device_info(void *state, int index, pk_device_info *info)
{
    const pk_cuda_state *s = state;
    PK_CHECK(index >= 0 && index < s->count, PK_ENODEVICE,
             "cuda device %d: the backend has %d device(s)", index, s->count);
    *info = s->devices[index];
    return PK_OK;
}

static pk_status cuda_bandwidth(void *state, int device, size_t bytes, int reps, double *bps)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_bandwidth(device, bytes, reps, bps);
}

static pk_status cuda_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_d3_create(device, desc, impl);
}

static pk_status cuda_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_cv_create(device, desc, desc->variant && !strcmp(desc->variant, "cuda-fft"),
                             impl);
}

static pk_status cuda_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_mf_create(device, desc, impl);
}

static pk_status cuda_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_lp_create(device, desc, impl);
}

static pk_status cuda_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_s3_create(device, desc, impl);
}

static pk_status cuda_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_ds_create(device, desc, impl);
}

static pk_status cuda_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_gr_create(device, desc, impl);
}

const pk_backend_ops pk_backend_cuda = {
    .id = PK_BACKEND_CUDA,
    .name = "cuda",
    .init = cuda_init,
    .fini = cuda_fini,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .bandwidth = cuda_bandwidth,
    .d3_variants = "cuda",
    .d3_create = cuda_d3_create,
    .d3_upload = pk_cuda_d3_upload,
    .d3_run = pk_cuda_d3_run,
    .d3_download = pk_cuda_d3_download,
    .d3_destroy = pk_cuda_d3_destroy,
    .cv_variants = "cuda,cuda-fft",
    .cv_create = cuda_cv_create,
    .cv_upload = pk_cuda_cv_upload,
    .cv_run = pk_cuda_cv_run,
    .cv_download = pk_cuda_cv_download,
    .cv_destroy = pk_cuda_cv_destroy,
    .mf_variants = "cuda",
    .mf_create = cuda_mf_create,
    .mf_upload = pk_cuda_mf_upload,
    .mf_run = pk_cuda_mf_run,
    .mf_download = pk_cuda_mf_download,
    .mf_destroy = pk_cuda_mf_destroy,
    .gr_variants = "cuda-tiled,cuda-atomic,hybrid",
    .gr_create = cuda_gr_create,
    .gr_run = pk_cuda_gr_run,
    .gr_destroy = pk_cuda_gr_destroy,
    .lp_variants = "cuda",
    .lp_create = cuda_lp_create,
    .lp_upload = pk_cuda_lp_upload,
    .lp_run = pk_cuda_lp_run,
    .lp_download = pk_cuda_lp_download,
    .lp_destroy = pk_cuda_lp_destroy,
    .s3_variants = "cuda",
    .s3_create = cuda_s3_create,
    .s3_upload = pk_cuda_s3_upload,
    .s3_run = pk_cuda_s3_run,
    .s3_download = pk_cuda_s3_download,
    .s3_destroy = pk_cuda_s3_destroy,
    .ds_variants = "cuda",
    .ds_create = cuda_ds_create,
    .ds_upload = pk_cuda_ds_upload,
    .ds_run = pk_cuda_ds_run,
    .ds_download = pk_cuda_ds_download,
    .ds_destroy = pk_cuda_ds_destroy,
};
