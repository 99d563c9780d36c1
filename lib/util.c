/* util.c - small helpers shared by the library's parts. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *pk_version(void) { return PORTKERN_VERSION_STRING; }

double pk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pk_mul3_size(size_t a, size_t b, size_t c, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return -1;
    size_t ab = a * b;
    if (ab != 0 && c > SIZE_MAX / ab) return -1;
    *out = ab * c;
    return 0;
}

void *pk_alloc_aligned(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
    return p;
}

void pk_free_aligned(void *p) { free(p); }

void pk_strlcpy(char *dst, const char *src, size_t len)
{
    if (len == 0) return;
    size_t n = src ? strlen(src) : 0;
    if (n >= len) n = len - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

void pk_append_note(char *dst, size_t len, const char *fmt, ...)
{
    size_t used = strlen(dst);
    if (used + 1 >= len) return;
    if (used > 0) {
        snprintf(dst + used, len - used, "; ");
        used = strlen(dst);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, len - used, fmt, ap);
    va_end(ap);
}

const char *pk_getenv(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

pk_status pk_simd_level(const char *env, int cpu_level, int *level)
{
    const char *e = pk_getenv(env);
    int want = cpu_level;
    *level = cpu_level;
    if (e) {
        if (!strcmp(e, "avx512") || !strcmp(e, "avx512f"))
            want = PK_SIMD_AVX512;
        else if (!strcmp(e, "avx2"))
            want = PK_SIMD_AVX2;
        else if (!strcmp(e, "generic"))
            want = PK_SIMD_GENERIC;
        else
            return pk_fail(PK_EINVAL, "%s: expected avx512, avx2 or generic, got '%s'", env, e);
    }
    *level = want < cpu_level ? want : cpu_level;
    return PK_OK;
}

uint64_t pk_test_local_mem_cap(uint64_t bytes)
{
    const char *v = pk_getenv("PORTKERN_TEST_LOCAL_MEM_BYTES");
    if (!v) return bytes;
    char *end;
    errno = 0;
    unsigned long long cap = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || cap == 0 || v[0] == '-') return bytes;
    return cap < bytes ? (uint64_t)cap : bytes;
}

int pk_list_find(const char *list, const char *name)
{
    if (!list || !name) return -1;
    size_t n = strlen(name);
    int idx = 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncasecmp(p, name, n) == 0) return idx;
        ++idx;
        if (!e) break;
        p = e + 1;
    }
    return -1;
}

void pk_run_info_begin(pk_run_info *info)
{
    if (info) memset(info, 0, sizeof *info);
}
