/* test_d3_opencl.c - diffusion3d on the opencl backend against the reference (see d3_common.h). */
#include "d3_common.h"

int main(void) { return d3_run_suite(PK_BACKEND_OPENCL); }
