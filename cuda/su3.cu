/* su3.cu - CUDA kernels of su3. PLACEHOLDER: not implemented yet. */
#include "cuda_internal.h"

extern "C" pk_status pk_cuda_s3_create(int device, const pk_s3_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: CUDA backend not implemented yet");
}
extern "C" pk_status pk_cuda_s3_upload(void *impl, const double *u, const double *psi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_s3_run(void *impl, double *kernel_seconds) { return PK_EUNSUPPORTED; }
extern "C" pk_status pk_cuda_s3_download(void *impl, double *chi, double *seconds) { return PK_EUNSUPPORTED; }
extern "C" void pk_cuda_s3_destroy(void *impl) { (void)impl; }
