/* dslash_omp.c - dslash on the OpenMP backend. PLACEHOLDER: not implemented yet. */
#include "dslash_host.h"

pk_status pk_omp_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: OpenMP backend not implemented yet");
}

pk_status pk_omp_ds_run(void *impl, double *kernel_seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: not implemented yet");
}
