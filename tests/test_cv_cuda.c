/* test_cv_cuda.c - conv2d on the cuda backend against the reference (see cv_common.h). */
#include "cv_common.h"

int main(void) { return cv_run_suite(PK_BACKEND_CUDA); }
