/* laplace2d_host.h - laplace2d on the host: what the serial (lib/laplace2d_serial.c) and OpenMP
 * (omp/laplace2d_omp.c) backends share with lib/laplace2d.c. */
#ifndef PK_LAPLACE2D_HOST_H
#define PK_LAPLACE2D_HOST_H
#include "internal.h"

/* Host plan of the serial and OpenMP backends (lib/laplace2d.c): upload, download and destroy. */
pk_status pk_lp_host_upload(void *impl, const float *phi, double *seconds);
pk_status pk_lp_host_download(void *impl, float *phi, double *seconds);
void pk_lp_host_destroy(void *impl);

/* Backend entry points. */
pk_status pk_serial_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl);
pk_status pk_serial_lp_run(void *impl, int count, double *kernel_seconds);
pk_status pk_omp_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl);
pk_status pk_omp_lp_run(void *impl, int count, double *kernel_seconds);

#endif
