/* laplace2d_omp.c - laplace2d on the OpenMP backend. PLACEHOLDER: not implemented yet. */
#include "laplace2d_host.h"

pk_status pk_omp_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: OpenMP backend not implemented yet");
}

pk_status pk_omp_lp_run(void *impl, int count, double *kernel_seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: not implemented yet");
}
