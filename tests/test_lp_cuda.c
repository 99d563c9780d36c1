/* test_lp_cuda.c - laplace2d on the cuda backend against the reference (see lp_common.h). */
#include "lp_common.h"

int main(void) { return lp_run_suite(PK_BACKEND_CUDA); }
