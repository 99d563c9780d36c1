/* dslash_opencl.c - dslash on the OpenCL backend. PLACEHOLDER: not implemented yet. */
#include "opencl_internal.h"

pk_status pk_cl_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: OpenCL backend not implemented yet");
}
pk_status pk_cl_ds_upload(void *impl, const double *u, const double *psi, double *seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_ds_run(void *impl, double *kernel_seconds) { return PK_EUNSUPPORTED; }
pk_status pk_cl_ds_download(void *impl, double *chi, double *seconds) { return PK_EUNSUPPORTED; }
void pk_cl_ds_destroy(void *impl) { (void)impl; }
