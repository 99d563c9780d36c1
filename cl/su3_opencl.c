/* su3_opencl.c - su3 on the OpenCL backend. PLACEHOLDER: not implemented yet. */
#include "opencl_internal.h"

pk_status pk_cl_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: OpenCL backend not implemented yet");
}
pk_status pk_cl_s3_upload(void *impl, const double *u, const double *psi, double *seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_s3_run(void *impl, double *kernel_seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_s3_download(void *impl, double *chi, double *seconds) { return PK_EUNSUPPORTED; }
void pk_cl_s3_destroy(void *impl) { (void)impl; }
