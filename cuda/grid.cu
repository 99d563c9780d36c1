/* grid.cu - CUDA kernels of grid. PLACEHOLDER: not implemented yet. */
#include "cuda_internal.h"

extern "C" pk_status pk_cuda_gr_create(int device, const pk_gr_desc *desc, void **impl)
{
    return pk_fail(PK_EUNSUPPORTED, "grid: CUDA backend not implemented yet");
}
extern "C" pk_status pk_cuda_gr_run(void *impl, const pk_grid_data *data, float *grid,
                                    pk_gr_result *res)
{
    return PK_EUNSUPPORTED;
}
extern "C" void pk_cuda_gr_destroy(void *impl) { (void)impl; }
