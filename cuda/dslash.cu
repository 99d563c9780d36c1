/* dslash.cu - CUDA kernels of dslash. PLACEHOLDER: not implemented yet. */
#include "cuda_internal.h"

extern "C" pk_status pk_cuda_ds_create(int device, const pk_ds_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: CUDA backend not implemented yet");
}
extern "C" pk_status pk_cuda_ds_upload(void *impl, const double *u, const double *psi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_ds_run(void *impl, double *kernel_seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_ds_download(void *impl, double *chi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" void pk_cuda_ds_destroy(void *impl) { (void)impl; }
