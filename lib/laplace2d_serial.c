/* laplace2d_serial.c - laplace2d on the serial backend. PLACEHOLDER: not implemented yet. */
#include "laplace2d_host.h"

pk_status pk_serial_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: serial backend not implemented yet");
}

pk_status pk_serial_lp_run(void *impl, int count, double *kernel_seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "laplace2d: not implemented yet");
}
