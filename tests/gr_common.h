/* gr_common.h - the grid test suite, run per backend. PLACEHOLDER: not written yet. */
#ifndef PK_TEST_GR_COMMON_H
#define PK_TEST_GR_COMMON_H
#include <stdio.h>
#include "portkern.h"

static int gr_run_suite(pk_backend_id backend)
{
    printf("1..0 # SKIP grid %s: tests not written yet\n", pk_backend_name(backend));
    return 0;
}
#endif
