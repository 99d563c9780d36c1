/* su3_host.h - su3 on the host: what the serial (lib/su3_serial.c) and OpenMP
 * (omp/su3_omp.c) backends share with lib/su3.c. */
#ifndef PK_SU3_HOST_H
#define PK_SU3_HOST_H
#include "internal.h"

/* Host plan of the serial and OpenMP backends (lib/su3.c): upload, download and destroy. */
pk_status pk_s3_host_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_s3_host_download(void *impl, double *chi, double *seconds);
void pk_s3_host_destroy(void *impl);

/* Backend entry points. */
pk_status pk_serial_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl);
pk_status pk_serial_s3_run(void *impl, double *kernel_seconds);
pk_status pk_omp_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl);
pk_status pk_omp_s3_run(void *impl, double *kernel_seconds);

#endif
