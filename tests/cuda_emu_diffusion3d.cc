/* diffusion3d.cu compiled by the host C++ compiler: cuda/emulate.h runs its kernels on host
 * threads (docs/RELIABILITY.md, "CUDA without a GPU"). */
#include "emulate.h"
/* sm is used in the kernel's generic lambdas, which GCC 12 does not count as a use. */
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#include "diffusion3d.cu"
