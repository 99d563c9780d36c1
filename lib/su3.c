/* su3.c - the public su3 calls (KERNELS.md section 4). PLACEHOLDER: not implemented yet. */
#include "su3_host.h"

pk_status pk_s3_host_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: not implemented yet");
}

pk_status pk_s3_host_download(void *impl, double *chi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: not implemented yet");
}

void pk_s3_host_destroy(void *impl) { (void)impl; }
