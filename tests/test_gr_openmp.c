/* test_gr_openmp.c - grid on the openmp backend against the reference (see gr_common.h). */
#include "gr_common.h"

int main(void) { return gr_run_suite(PK_BACKEND_OPENMP); }
