/* laplace2d.cu - CUDA kernels of laplace2d. PLACEHOLDER: not implemented yet. */
#include "cuda_internal.h"

extern "C" pk_status pk_cuda_lp_create(int device, const pk_lp_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: CUDA backend not implemented yet");
}
extern "C" pk_status pk_cuda_lp_upload(void *impl, const float *phi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_lp_run(void *impl, int count, double *kernel_seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_lp_download(void *impl, float *phi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" void pk_cuda_lp_destroy(void *impl) { (void)impl; }
