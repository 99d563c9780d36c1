/* s3_common.h - the su3 test suite, run per backend. PLACEHOLDER: not written yet. */
#ifndef PK_TEST_S3_COMMON_H
#define PK_TEST_S3_COMMON_H
#include <stdio.h>
#include "portkern.h"

static int s3_run_suite(pk_backend_id backend)
{
    printf("1..0 # SKIP su3 %s: tests not written yet\n", pk_backend_name(backend));
    return 0;
}
#endif
