/* test_d3_openmp.c - diffusion3d on the openmp backend against the reference (see d3_common.h). */
#include "d3_common.h"

int main(void) { return d3_run_suite(PK_BACKEND_OPENMP); }
