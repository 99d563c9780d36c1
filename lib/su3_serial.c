/* su3_serial.c - su3 on the serial backend. PLACEHOLDER: not implemented yet. */
#include "su3_host.h"

pk_status pk_serial_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: serial backend not implemented yet");
}

pk_status pk_serial_s3_run(void *impl, double *kernel_seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "su3: not implemented yet");
}
