/* test_ds_cuda.c - dslash on the cuda backend against the reference (see ds_common.h). */
#include "ds_common.h"

int main(void) { return ds_run_suite(PK_BACKEND_CUDA); }
