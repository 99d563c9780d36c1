/* util.c - small helpers shared by the library's parts. */
#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
    /* Buffers of 4 MiB and more: aligned to 2 MiB and advised for transparent huge pages, so
     * that a sweep over hundreds of MiB takes 512 x fewer page faults and TLB misses (where
     * THP is "madvise", the kernel default of many distributions, only advised ranges get
     * huge pages); smaller ones: a cache line. */
    const size_t huge = (size_t)2 << 20;
    const size_t align = bytes >= 2 * huge ? huge : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, bytes ? bytes : 64) != 0) return NULL;
    pk_advise_huge(p, bytes);
    return p;
}

void pk_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20, a = (uintptr_t)p;
    if (bytes < 2 * huge || a > UINTPTR_MAX - bytes) return;
    const uintptr_t lo = (a + huge - 1) & ~(huge - 1), hi = (a + bytes) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void pk_free_aligned(void *p) { free(p); }

void *pk_malloc(size_t bytes) { return pk_alloc_aligned(bytes); }

void pk_free(void *p) { pk_free_aligned(p); }

void *pk_alloc_zeroed(size_t bytes)
{
#if defined(MAP_ANONYMOUS) && defined(__linux__)
    /* fresh anonymous pages read as zero and cost nothing until written; 2 MiB aligned (the
     * slack unmapped) for transparent huge pages, as pk_alloc_aligned */
    const size_t huge = (size_t)2 << 20;
    if (bytes == 0 || bytes > SIZE_MAX - huge) return NULL;
    char *m = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    if (p > m) (void)munmap(m, (size_t)(p - m));
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *end = p + (bytes + page - 1) / page * page;
    if (m + bytes + huge > end) (void)munmap(end, (size_t)(m + bytes + huge - end));
    pk_advise_huge(p, bytes);
    return p;
#else
    void *p = pk_alloc_aligned(bytes);
    if (p) memset(p, 0, bytes);
    return p;
#endif
}

void pk_free_zeroed(void *p, size_t bytes)
{
    if (!p) return;
#if defined(MAP_ANONYMOUS) && defined(__linux__)
    (void)munmap(p, bytes);
#else
    (void)bytes;
    pk_free_aligned(p);
#endif
}

/* Under this many bytes moved a loop stays on one thread: starting a team costs more. */
static size_t pk_parallel_min_bytes(void)
{
    const size_t def = (size_t)4 << 20;
    const char *v = pk_getenv("PORTKERN_TEST_PARALLEL_BYTES"); /* tests: small shapes threaded */
    if (!v || v[0] == '-') return def;
    char *end;
    errno = 0;
    unsigned long long b = strtoull(v, &end, 10);
    return errno != 0 || *end != '\0' ? def : (size_t)b;
}

void pk_parallel_range(size_t n, size_t grain, size_t bytes, int nt, pk_range_fn fn, void *arg)
{
    if (n == 0) return;
    if (grain == 0) grain = 1;
    const size_t groups = (n + grain - 1) / grain;
#ifdef _OPENMP
    if (nt != 1 && groups > 1 && bytes >= pk_parallel_min_bytes()) {
#pragma omp parallel num_threads(nt > 0 ? nt : omp_get_max_threads())
        {
            const size_t t = (size_t)pk_thread_num(), k = (size_t)pk_team_size();
            const size_t q = groups / k, r = groups % k;
            const size_t lo = (q * t + (t < r ? t : r)) * grain;
            size_t hi = (q * (t + 1) + (t + 1 < r ? t + 1 : r)) * grain;
            if (hi > n) hi = n;
            if (lo < hi) fn(arg, lo, hi);
        }
        return;
    }
#else
    (void)groups;
    (void)bytes;
    (void)nt;
#endif
    fn(arg, 0, n);
}

int pk_host_threads(int nt)
{
#ifdef _OPENMP
    return nt > 0 ? nt : omp_get_max_threads();
#else
    (void)nt;
    return 1;
#endif
}

void pk_stream_copy(void *dst, const void *src, size_t bytes)
{
    unsigned char *d = dst;
    const unsigned char *sp = src;
#if defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)d & 15u)) & 15u;
    if (head > bytes) head = bytes;
    memcpy(d, sp, head);
    d += head, sp += head, bytes -= head;
    for (; bytes >= 16; d += 16, sp += 16, bytes -= 16)
        _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)sp));
#endif
    memcpy(d, sp, bytes);
}

void pk_stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* dst[j ds + i] = src[i ss + j] for i < r, j < c; the blocks' leftover rows i0.. and
 * columns j0.. by the scalar loop, which walks dst in order. */
static void pk_transpose_rest(const double *src, size_t ss, double *dst, size_t ds, size_t r,
                              size_t c, size_t i0, size_t j0)
{
    for (size_t j = j0; j < c; ++j)
        for (size_t i = 0; i < r; ++i) dst[j * ds + i] = src[i * ss + j];
    for (size_t j = 0; j < j0; ++j)
        for (size_t i = i0; i < r; ++i) dst[j * ds + i] = src[i * ss + j];
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define PK_HAVE_AVX2_TRANSPOSE 1
/* 4 x 4 blocks in AVX2 registers: 8 shuffles per 16 doubles instead of a gather per double
 * (su3's hvfo packing ran 1.3-1.8x faster in L2; its unpacking 20% slower in L2 but 7% faster
 * in the one call's L1 blocks, which it now serves; 8 x 8 blocks in AVX-512 measured slower,
 * twice).
 * Down each block column, so that each output row is written as a stream. */
__attribute__((target("avx2"))) static void pk_transpose_avx2(const double *src, size_t ss,
                                                              double *dst, size_t ds, size_t r,
                                                              size_t c)
{
    const size_t r4 = r - r % 4, c4 = c - c % 4;
    for (size_t j = 0; j < c4; j += 4)
        for (size_t i = 0; i < r4; i += 4) {
            const double *a = src + i * ss + j;
            double *o = dst + j * ds + i;
            const __m256d r0 = _mm256_loadu_pd(a), r1 = _mm256_loadu_pd(a + ss),
                          r2 = _mm256_loadu_pd(a + 2 * ss), r3 = _mm256_loadu_pd(a + 3 * ss);
            const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1),
                          t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
            _mm256_storeu_pd(o, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(o + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(o + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(o + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
    pk_transpose_rest(src, ss, dst, ds, r, c, r4, c4);
}
#endif

void pk_transpose_f64(const double *src, size_t ss, double *dst, size_t ds, size_t r, size_t c)
{
#ifdef PK_HAVE_AVX2_TRANSPOSE
    if (r >= 4 && c >= 4 && __builtin_cpu_supports("avx2")) {
        pk_transpose_avx2(src, ss, dst, ds, r, c);
        return;
    }
#endif
    pk_transpose_rest(src, ss, dst, ds, r, c, 0, 0);
}

typedef struct pk_copy_job {
    char *dst;
    const char *src;
} pk_copy_job;

static void pk_copy_range(void *arg, size_t lo, size_t hi)
{
    const pk_copy_job *j = arg;
    memcpy(j->dst + lo, j->src + lo, hi - lo);
}

void pk_copy_threads(void *dst, const void *src, size_t bytes, int nt)
{
    pk_copy_job j = {dst, src};
    pk_parallel_range(bytes, 1, bytes, nt < 1 ? 1 : nt, pk_copy_range, &j);
}

void *pk_scratch_get(pk_scratch *s, size_t bytes)
{
    if (s->p && s->bytes >= bytes) return s->p;
    pk_scratch_free(s);
    if ((s->p = pk_alloc_aligned(bytes))) s->bytes = bytes;
    return s->p;
}

void pk_scratch_free(pk_scratch *s)
{
    pk_free_aligned(s->p);
    s->p = NULL;
    s->bytes = 0;
}

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

static int env_says_off(const char *v)
{
    return v && (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") ||
                 !strcasecmp(v, "false"));
}

int pk_cache_dir(char *dir, size_t len, int *check_owner)
{
    const char *set = pk_getenv("PORTKERN_CACHE_DIR"), *base;
    int n;
    *check_owner = 0;
    if (len == 0) return 0;
    dir[0] = '\0';
    if (env_says_off(pk_getenv("PORTKERN_CACHE")) || env_says_off(set)) return 0;
    if (set)
        n = snprintf(dir, len, "%s", set);
    else if ((base = pk_getenv("XDG_CACHE_HOME")) && base[0] == '/')
        n = snprintf(dir, len, "%s/portkern", base);
    else if ((base = pk_getenv("HOME")))
        n = snprintf(dir, len, "%s/.cache/portkern", base);
    else {
        n = snprintf(dir, len, "/tmp/portkern-%lu", (unsigned long)getuid());
        *check_owner = 1;
    }
    return n > 0 && (size_t)n < len;
}

int pk_cache_dir_private(const char *dir, int check_owner)
{
    struct stat sb;
    if (!check_owner) return 1;
    return lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == getuid() &&
           (sb.st_mode & 022) == 0;
}

int pk_mkdir_p(const char *dir)
{
    char path[1024];
    pk_strlcpy(path, dir, sizeof path);
    for (char *p = path + 1; *p; ++p) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
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

