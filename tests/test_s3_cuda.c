/* test_s3_cuda.c - su3 on the cuda backend against the reference (see s3_common.h). */
#include "s3_common.h"

int main(void) { return s3_run_suite(PK_BACKEND_CUDA); }
