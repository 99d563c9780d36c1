/* grid_omp.c - grid on the OpenMP backend. PLACEHOLDER: not implemented yet. */
#include "grid_host.h"

pk_status pk_omp_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "grid: OpenMP backend not implemented yet");
}
pk_status pk_omp_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res)
{
    return pk_fail(PK_EUNSUPPORTED, "grid: not implemented yet");
}
void pk_omp_gr_destroy(void *impl) { (void)impl; }
