/* grid_opencl.c - grid on the OpenCL backend. PLACEHOLDER: not implemented yet. */
#include "opencl_internal.h"

pk_status pk_cl_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "grid: OpenCL backend not implemented yet");
}
pk_status pk_cl_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res)
{
    return PK_EUNSUPPORTED;
}
void pk_cl_gr_destroy(void *impl) { (void)impl; }
