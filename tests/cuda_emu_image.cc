/* image.cu compiled by the host C++ compiler: cuda/emulate.h runs its kernels on host
 * threads (docs/RELIABILITY.md, "CUDA without a GPU"). */
#include "emulate.h"
#include "image.cu"
