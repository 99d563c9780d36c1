/* dslash_host.h - dslash on the host: what the serial (lib/dslash_serial.c) and OpenMP
 * (omp/dslash_omp.c) backends share with lib/dslash.c. */
#ifndef PK_DSLASH_HOST_H
#define PK_DSLASH_HOST_H
#include "internal.h"

/* Host plan of the serial and OpenMP backends (lib/dslash.c): upload, download and destroy. */
pk_status pk_ds_host_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_ds_host_download(void *impl, double *chi, double *seconds);
void pk_ds_host_destroy(void *impl);

/* Backend entry points. */
pk_status pk_serial_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_serial_ds_run(void *impl, double *kernel_seconds);
pk_status pk_omp_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_omp_ds_run(void *impl, double *kernel_seconds);

#endif
