/* test_lp_openmp.c - laplace2d on the openmp backend against the reference (see lp_common.h). */
#include "lp_common.h"

int main(void) { return lp_run_suite(PK_BACKEND_OPENMP); }
