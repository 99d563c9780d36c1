/* laplace2d_opencl.c - laplace2d on the OpenCL backend. PLACEHOLDER: not implemented yet. */
#include "opencl_internal.h"

pk_status pk_cl_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: OpenCL backend not implemented yet");
}
pk_status pk_cl_lp_upload(void *impl, const float *phi, double *seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_lp_run(void *impl, int count, double *kernel_seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_lp_download(void *impl, float *phi, double *seconds) { return PK_EUNSUPPORTED; }
void pk_cl_lp_destroy(void *impl) { (void)impl; }
