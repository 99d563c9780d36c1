/* fuzz_npy.c - libFuzzer target: the .npy reader (pk_npy_parse, which pk_npy_read runs on a
 * file's bytes).  Any input must give either PK_OK with an array that is exactly what the
 * header promises, or a documented error with a zeroed array and a detail message.  Every
 * violation aborts, so the fuzzer reports it like a crash.  See docs/RELIABILITY.md. */
#include "portkern.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_npy: check failed: %s (status %s: %s)\n", #cond,           \
                    pk_status_name(s), pk_last_error());                                      \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_array a;
    memset(&a, 0xa5, sizeof a); /* garbage the parser must overwrite */
    pk_status s = pk_npy_parse(data, size, &a);
    if (s == PK_OK) {
        const size_t esize = pk_dtype_size(a.dtype);
        CHECK(esize > 0 && pk_dtype_descr(a.dtype) != NULL);
        CHECK(a.ndim >= 0 && a.ndim <= PK_NPY_MAX_DIMS && a.data != NULL);
        size_t count = 1;
        for (int d = 0; d < a.ndim; ++d) {
            CHECK(a.shape[d] == 0 || count <= SIZE_MAX / a.shape[d]);
            count *= a.shape[d];
        }
        for (int d = a.ndim; d < PK_NPY_MAX_DIMS; ++d) CHECK(a.shape[d] == 0);
        CHECK(count == a.count);
        /* the data bytes came from the input: never more than it holds, and they are the
         * input's last bytes (the file must end where the data does) */
        CHECK(count <= size / esize);
        const size_t bytes = count * esize;
        CHECK(memcmp(a.data, data + size - bytes, bytes) == 0);
        pk_array_free(&a);
        CHECK(a.data == NULL && a.count == 0);
    } else {
        CHECK(s == PK_EFORMAT || s == PK_EDTYPE || s == PK_EOVERFLOW || s == PK_ENOMEM ||
              (s == PK_ENULL && data == NULL && size > 0));
        CHECK(a.data == NULL && a.ndim == 0 && a.count == 0 && a.dtype == 0);
        CHECK(pk_last_error()[0] != '\0');
    }
    return 0;
}
