/* test_cv_opencl.c - conv2d on the opencl backend against the reference (see cv_common.h). */
#include "cv_common.h"

int main(void) { return cv_run_suite(PK_BACKEND_OPENCL); }
