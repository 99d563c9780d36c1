/* test_lp_serial.c - laplace2d on the serial backend against the reference (see lp_common.h). */
#include "lp_common.h"

int main(void) { return lp_run_suite(PK_BACKEND_SERIAL); }
