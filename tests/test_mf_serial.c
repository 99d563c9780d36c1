/* test_mf_serial.c - magicfilter3d on the serial backend against the reference (see mf_common.h). */
#include "mf_common.h"

int main(void) { return mf_run_suite(PK_BACKEND_SERIAL); }
