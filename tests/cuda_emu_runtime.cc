/* runtime.cu compiled by the host C++ compiler: its probe, error mapping and copies run on
 * the emulated device of cuda/emulate.h (docs/RELIABILITY.md, "CUDA without a GPU"). */
#include "emulate.h"
#include "runtime.cu"
