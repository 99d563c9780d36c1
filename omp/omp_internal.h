/* omp_internal.h - the OpenMP backend's kernel entry points, one file per kernel family. */
#ifndef PK_OMP_INTERNAL_H
#define PK_OMP_INTERNAL_H
#include "internal.h"

pk_status pk_omp_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl);
pk_status pk_omp_d3_run(void *impl, int count, double *seconds);

#endif
