/* wisdom_equal.h - every field of two wisdom entries equal: what a save and load, or a write
 * and read back, must keep (tests/test_wisdom.c and fuzz/fuzz_wisdom.c). */
#ifndef PK_TEST_WISDOM_EQUAL_H
#define PK_TEST_WISDOM_EQUAL_H
#include <string.h>

#include "portkern.h"

static inline int pk_test_wisdom_equal(const pk_wisdom_entry *a, const pk_wisdom_entry *b)
{
    return !strcmp(a->kernel, b->kernel) && a->backend == b->backend && a->device == b->device &&
           !strcmp(a->device_name, b->device_name) && !strcmp(a->driver, b->driver) &&
           a->compute_units == b->compute_units && !strcmp(a->version, b->version) &&
           !strcmp(a->size_class, b->size_class) && a->size_bytes == b->size_bytes &&
           !strcmp(a->variant, b->variant) && !strcmp(a->params, b->params) &&
           a->seconds == b->seconds && !strcmp(a->runners_up, b->runners_up) &&
           !strcmp(a->date, b->date) && !strcmp(a->tuning, b->tuning);
}

#endif
