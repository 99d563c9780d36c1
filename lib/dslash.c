/* dslash.c - the public dslash calls (KERNELS.md section 4). PLACEHOLDER: not implemented yet. */
#include "dslash_host.h"

pk_status pk_ds_host_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: not implemented yet");
}

pk_status pk_ds_host_download(void *impl, double *chi, double *seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: not implemented yet");
}

void pk_ds_host_destroy(void *impl) { (void)impl; }
