/* laplace2d.c - the public laplace2d calls (KERNELS.md section 4). PLACEHOLDER: not implemented yet. */
#include "laplace2d_host.h"

pk_status pk_lp_host_upload(void *impl, const float *phi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: not implemented yet");
}

pk_status pk_lp_host_download(void *impl, float *phi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: not implemented yet");
}

void pk_lp_host_destroy(void *impl) { (void)impl; }
