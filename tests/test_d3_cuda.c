/* test_d3_cuda.c - diffusion3d on the cuda backend against the reference (see d3_common.h). */
#include "d3_common.h"

int main(void) { return d3_run_suite(PK_BACKEND_CUDA); }
