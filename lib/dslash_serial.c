/* dslash_serial.c - dslash on the serial backend. PLACEHOLDER: not implemented yet. */
#include "dslash_host.h"

pk_status pk_serial_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: serial backend not implemented yet");
}

pk_status pk_serial_ds_run(void *impl, double *kernel_seconds)
{
    return pk_fail(PK_EUNSUPPORTED, "dslash: not implemented yet");
}
