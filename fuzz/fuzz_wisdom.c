/* fuzz_wisdom.c - libFuzzer target: the wisdom reader (pk_wisdom_parse in lib/wisdom.c, what
 * pk_wisdom_load and pk_wisdom_save run on a file's bytes).  Any input must give either
 * PK_OK with entries that keep every rule of lib/portkern.h, no two of one key, which the
 * writer turns into a text that reads back to the same entries and writes again to the same
 * text; or PK_EFORMAT / PK_ENOMEM with a reason and no entries.  Every violation aborts, so
 * the fuzzer reports it like a crash.  Built from the reader's own sources (lib/wisdom.c and
 * the error and string helpers it uses), as the reader is not exported.  See
 * docs/RELIABILITY.md. */
#include "internal.h"
#include "../tests/wisdom_equal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_wisdom: check failed: %s (status %s: %s)\n", #cond,       \
                    pk_status_name(s), why);                                                  \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

static int same_key(const pk_wisdom_entry *a, const pk_wisdom_entry *b)
{
    return !strcmp(a->kernel, b->kernel) && !strcmp(a->device_name, b->device_name) &&
           !strcmp(a->driver, b->driver) && a->compute_units == b->compute_units &&
           !strcmp(a->size_class, b->size_class);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_wisdom_list list;
    char why[256];
    memset(&list, 0xa5, sizeof list); /* garbage the reader must overwrite */
    pk_status s = pk_wisdom_parse((const char *)data, size, &list, why, sizeof why);
    if (s != PK_OK) {
        CHECK(s == PK_EFORMAT || s == PK_ENOMEM);
        CHECK(why[0] != '\0' && memchr(why, '\0', sizeof why) != NULL);
        CHECK(list.n == 0 && list.e == NULL);
        return 0;
    }
    CHECK(why[0] == '\0');
    CHECK(list.n >= 0 && list.n <= PK_WISDOM_MAX_ENTRIES && (list.n == 0 || list.e != NULL));
    for (int i = 0; i < list.n; ++i) {
        CHECK(pk_wisdom_entry_problem(&list.e[i]) == NULL);
        for (int j = 0; j < i; ++j) CHECK(!same_key(&list.e[i], &list.e[j]));
    }
    /* write, read back, write again */
    char *text = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    pk_wisdom_list back;
    s = pk_wisdom_format(&list, &text, &len);
    CHECK(s == PK_OK && text != NULL && strlen(text) == len);
    s = pk_wisdom_parse(text, len, &back, why, sizeof why);
    CHECK(s == PK_OK && back.n == list.n);
    for (int i = 0; i < list.n; ++i) CHECK(pk_test_wisdom_equal(&list.e[i], &back.e[i]));
    s = pk_wisdom_format(&back, &again, &len2);
    CHECK(s == PK_OK && len2 == len && memcmp(text, again, len) == 0);
    free(text);
    free(again);
    pk_wisdom_list_free(&back);
    pk_wisdom_list_free(&list);
    return 0;
}
