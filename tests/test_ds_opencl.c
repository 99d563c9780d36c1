/* test_ds_opencl.c - dslash on the opencl backend against the reference (see ds_common.h). */
#include "ds_common.h"

int main(void) { return ds_run_suite(PK_BACKEND_OPENCL); }
