/* test_ds_serial.c - dslash on the serial backend against the reference (see ds_common.h). */
#include "ds_common.h"

int main(void) { return ds_run_suite(PK_BACKEND_SERIAL); }
