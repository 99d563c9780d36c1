/* grid_host.h - grid on the host: what lib/grid.c, the references (lib/ref/grid_ref.c), the
 * serial backend (lib/grid_serial.c) and the OpenMP backend (omp/grid_omp.c) share. */
#ifndef PK_GRID_HOST_H
#define PK_GRID_HOST_H
#include "internal.h"

/* The reference loop over a validated call: into the float grid (grid != NULL) or the
 * complex128 grid64; plane_offset[] locates compact planes (unused for FULL stacks).  norm is
 * accumulated into, num_skipped and updates (sum of (2s+1)^2; may be NULL) set. */
void pk_gr_ref_run(const pk_grid_params *p, const int32_t *support, const size_t *plane_offset,
                   const float *kernels, const pk_grid_data *d, float *grid, double *grid64,
                   double *norm, int64_t *num_skipped, double *updates);

/* Backend entry points. */
pk_status pk_serial_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_serial_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
void pk_serial_gr_destroy(void *impl);
pk_status pk_omp_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_omp_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
void pk_omp_gr_destroy(void *impl);

#endif
