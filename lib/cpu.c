/* cpu.c - what the host CPU is (name, cores, SMT, SIMD), how fast its memory copies and how
 * many flops its FMA units retire. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PK_HAVE_OPENMP
#include <omp.h>
#endif
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define PK_FMA_X86 1
#include <immintrin.h>
#endif

static void read_cpuinfo_field(const char *key, char *out, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t') colon++;
                colon[strcspn(colon, "\n")] = '\0';
                pk_strlcpy(out, colon, len);
            }
            break;
        }
    }
    fclose(f);
}

static const char *simd_level(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2")) return "avx2";
    if (__builtin_cpu_supports("avx")) return "avx";
    if (__builtin_cpu_supports("sse4.2")) return "sse4.2";
    return "sse2";
#elif defined(__aarch64__)
    return "neon";
#else
    return "scalar";
#endif
}

int pk_cpu_simd(void)
{
#ifdef PK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return PK_SIMD_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return PK_SIMD_AVX2;
#endif
    return PK_SIMD_GENERIC;
}

/* A sysfs cache size ("32768K", "2M", "512"), 0 when unreadable. */
static size_t cpu_cache_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    char unit = 0;
    const int n = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (n < 1) return 0;
    if (n == 2 && (unit == 'K' || unit == 'k')) v <<= 10;
    if (n == 2 && (unit == 'M' || unit == 'm')) v <<= 20;
    return (size_t)v;
}

/* Read once (plans ask at creation, dslash's one-shot choice on a cache miss). */
static size_t cpu_llc;
static pthread_once_t cpu_llc_once = PTHREAD_ONCE_INIT;
static void cpu_llc_read(void)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; ++i) {
        char path[96], type[32] = "";
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        const int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (!ok || !(f = fopen(path, "r"))) continue;
        const int typed = fscanf(f, "%31s", type) == 1;
        fclose(f);
        if (!typed || !strcmp(type, "Instruction")) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        const size_t size = cpu_cache_size(path);
        if (size && level >= best_level) best = size, best_level = level;
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long l3 = best ? 0 : sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) best = (size_t)l3;
#endif
    cpu_llc = best;
}

size_t pk_cpu_llc_bytes(void)
{
    const char *test = pk_getenv("PORTKERN_TEST_LLC_BYTES");
    if (test) { /* the tests' stand-in for a machine with another cache */
        char *end;
        const unsigned long long v = strtoull(test, &end, 10);
        if (*end == '\0' && test[0] != '-' && v > 0) return (size_t)v;
    }
    pthread_once(&cpu_llc_once, cpu_llc_read);
    return cpu_llc;
}

int pk_beyond_llc(double bytes)
{
    const size_t llc = pk_cpu_llc_bytes();
    return bytes > (double)(llc ? llc : (size_t)32 << 20);
}

int pk_cpu_topology(int ncpu, int *core_of)
{
    /* Linux sysfs: logical CPUs sharing a core_id (within a package) are SMT siblings. */
    int max_smt = 1;
    for (int c = 0; c < ncpu; ++c) core_of[c] = c;
    for (int c = 0; c < ncpu; ++c) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int first = c, n = 0, a, b;
        char buf[256];
        if (fgets(buf, sizeof buf, f)) {
            /* forms: "0", "0,8", "0-1" */
            char *p = buf;
            first = -1;
            while (*p && *p != '\n') {
                if (sscanf(p, "%d-%d", &a, &b) == 2) {
                    if (first < 0) first = a;
                    n += b - a + 1;
                } else if (sscanf(p, "%d", &a) == 1) {
                    if (first < 0) first = a;
                    n += 1;
                }
                while (*p && *p != ',' && *p != '\n') p++;
                if (*p == ',') p++;
            }
            if (first < 0) first = c;
        }
        fclose(f);
        core_of[c] = first;
        if (n > max_smt) max_smt = n;
    }
    return max_smt;
}

void pk_cpu_info(pk_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->type = PK_DEVICE_CPU;
    pk_strlcpy(info->name, "host CPU", sizeof info->name);
    read_cpuinfo_field("model name", info->name, sizeof info->name);
    read_cpuinfo_field("vendor_id", info->vendor, sizeof info->vendor);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    info->compute_units = n > 0 ? (int)n : 1;
    int *core_of = calloc((size_t)info->compute_units, sizeof *core_of);
    info->threads_per_core = core_of ? pk_cpu_topology(info->compute_units, core_of) : 1;
    free(core_of);
    pk_strlcpy(info->simd, simd_level(), sizeof info->simd);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0) info->global_mem_bytes = (uint64_t)pages * (uint64_t)psize;
    info->fp64 = 1;
#ifdef PK_HAVE_OPENMP
    snprintf(info->driver, sizeof info->driver, "OpenMP %d", _OPENMP);
#else
    pk_strlcpy(info->driver, "no OpenMP", sizeof info->driver);
#endif
}

/* STREAM's Copy: plain loads and stores, counted as bytes read + written.  Plain stores pay
 * write-allocate (the target line is read first), as any ordinary code's stores do; the
 * stencils that use streaming stores can therefore exceed this roof (docs/PERFORMANCE.md).
 * Loop-to-memcpy conversion is disabled: glibc's memcpy streams large copies. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static void copy_block(float *restrict dst, const float *restrict src, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
}

pk_status pk_host_bandwidth(int threads, size_t bytes, int reps, double *bps)
{
    PK_CHECK_NULL(bps);
    if (bytes == 0) bytes = (size_t)256 << 20;
    if (reps <= 0) reps = 5;
    size_t n = bytes / sizeof(float);
    n -= n % 1024; /* whole 4 KiB chunks per thread keep every block aligned */
    PK_CHECK(n >= 1024, PK_ESIZE, "bytes: at least 4096 needed, got %zu", bytes);
    /* Two arrays that are written in full: more than half the memory would swap or wake the
     * OOM killer rather than fail, so refuse it here. */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0) {
        const uint64_t mem = (uint64_t)pages * (uint64_t)psize;
        PK_CHECK((uint64_t)n * sizeof(float) <= mem / 4, PK_ESIZE,
                 "bytes: 2 arrays of %zu bytes exceed half of the host memory (%llu bytes)", bytes,
                 (unsigned long long)mem);
    }
    float *a = pk_alloc_aligned(n * sizeof(float));
    float *b = pk_alloc_aligned(n * sizeof(float));
    if (!a || !b) {
        pk_free_aligned(a);
        pk_free_aligned(b);
        return pk_fail(PK_ENOMEM, "host bandwidth: cannot allocate 2 x %zu bytes", n * sizeof(float));
    }
    int nt = threads > 0 ? threads : 0;
    size_t chunks = n / 1024;
    double best = 1e300;
#ifdef PK_HAVE_OPENMP
    if (nt == 0) nt = omp_get_max_threads();
#else
    nt = 1;
#endif
    /* First touch with the same static partition as the copies (NUMA placement). */
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t c = 0; c < chunks; ++c)
        for (size_t i = c * 1024; i < (c + 1) * 1024; ++i) {
            a[i] = (float)(i & 1023);
            b[i] = 0.0f;
        }
    for (int r = 0; r <= reps; ++r) {
        double t0 = pk_now();
#pragma omp parallel num_threads(nt)
        {
            const int id = pk_thread_num(), cnt = pk_team_size();
            const size_t lo = pk_share_lo(chunks, id, cnt), hi = pk_share_lo(chunks, id + 1, cnt);
            copy_block(b + lo * 1024, a + lo * 1024, (hi - lo) * 1024);
        }
        double t = pk_now() - t0;
        if (r > 0 && t < best) best = t; /* r == 0 is the warm-up */
    }
    int okv = b[n - 1] == a[n - 1];
    pk_free_aligned(a);
    pk_free_aligned(b);
    PK_CHECK(okv, PK_EINTERNAL, "host bandwidth: copy check failed");
    *bps = 2.0 * (double)(n * sizeof(float)) / best;
    return PK_OK;
}

/* ---- the FMA peak -----------------------------------------------------------------------
 * Independent chains a = a * m + c (m < 1: they converge, nothing over- or underflows), more
 * chains than FMA latency x FMA pipes on any x86 core, so the loop runs at the FMA
 * throughput.  Each ISA is a separately compiled function (target attributes); the widest
 * the CPU has runs (pk_device_info.simd: avx512f, avx2, else the scalar loop). */
static volatile double fma_sink;

#define FMA_SCALAR_CHAINS 16
static double fma_loop_scalar(long iters)
{
    double a[FMA_SCALAR_CHAINS], s = 0;
    const double m = 0.9999999, c = 1e-7;
    for (int k = 0; k < FMA_SCALAR_CHAINS; ++k) a[k] = 0.01 * k;
    for (long i = 0; i < iters; ++i)
        for (int k = 0; k < FMA_SCALAR_CHAINS; ++k) a[k] = a[k] * m + c;
    for (int k = 0; k < FMA_SCALAR_CHAINS; ++k) s += a[k];
    return s;
}

#ifdef PK_FMA_X86
#define FMA_REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define FMA_REP16(X) FMA_REP12(X) X(12) X(13) X(14) X(15)

__attribute__((target("avx2,fma"))) static double fma_loop_avx2(long iters)
{
    const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
#define FMA_DECL(k) __m256d a##k = _mm256_set1_pd(0.01 * k);
#define FMA_STEP(k) a##k = _mm256_fmadd_pd(a##k, m, c);
#define FMA_SUM(k) s = _mm256_add_pd(s, a##k);
    FMA_REP12(FMA_DECL)
    for (long i = 0; i < iters; ++i) {
        FMA_REP12(FMA_STEP)
    }
    __m256d s = _mm256_setzero_pd();
    FMA_REP12(FMA_SUM)
    double t[4];
    _mm256_storeu_pd(t, s);
    return t[0] + t[1] + t[2] + t[3];
#undef FMA_DECL
#undef FMA_STEP
#undef FMA_SUM
}

__attribute__((target("avx512f"))) static double fma_loop_avx512(long iters)
{
    const __m512d m = _mm512_set1_pd(0.9999999), c = _mm512_set1_pd(1e-7);
#define FMA_DECL(k) __m512d a##k = _mm512_set1_pd(0.01 * k);
#define FMA_STEP(k) a##k = _mm512_fmadd_pd(a##k, m, c);
#define FMA_SUM(k) s = _mm512_add_pd(s, a##k);
    FMA_REP16(FMA_DECL)
    for (long i = 0; i < iters; ++i) {
        FMA_REP16(FMA_STEP)
    }
    __m512d s = _mm512_setzero_pd();
    FMA_REP16(FMA_SUM)
    double t[8];
    _mm512_storeu_pd(t, s);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
#undef FMA_DECL
#undef FMA_STEP
#undef FMA_SUM
}
#endif

/* Flop/s of iters iterations of loop (flops_per_iter each) on nt threads (1: this thread
 * alone): the sum of every thread's rate over its own loop time, so that a thread started
 * late or descheduled a moment costs only its own share; *t gets the longest loop time. */
static double fma_rate(double (*loop)(long), double flops_per_iter, long iters, int nt, double *t)
{
    double sum = 0, flops = 0, tmax = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const double t0 = pk_now(), r = loop(iters), dt = pk_now() - t0;
#pragma omp critical(pk_fma_rate)
        {
            sum += r;
            flops += (double)iters * flops_per_iter / dt;
            if (dt > tmax) tmax = dt;
        }
    }
    fma_sink = fma_sink + sum;
    *t = tmax;
    return flops;
}

/* The best FMA rate of `runs` runs of about target_s each (after calibration). */
static pk_status host_peak(int threads, double target_s, int runs, double *flops_per_second)
{
    double (*loop)(long) = fma_loop_scalar;
    double per_iter = 2 * FMA_SCALAR_CHAINS, t, best;
    int nt = threads > 0 ? threads : 1;
#ifdef PK_HAVE_OPENMP
    if (threads == 0) nt = omp_get_max_threads();
#endif
#ifdef PK_FMA_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        loop = fma_loop_avx512;
        per_iter = 16 * 8 * 2;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        loop = fma_loop_avx2;
        per_iter = 12 * 4 * 2;
    }
#endif
    long iters = 1L << 14;
    best = fma_rate(loop, per_iter, iters, nt, &t);
    while (t < 0.66 * target_s && iters < (1L << 40)) { /* calibrate to about target_s a run */
        iters = t > 1e-4 ? (long)((double)iters * (target_s / t)) + 1 : iters * 16;
        best = fma_rate(loop, per_iter, iters, nt, &t);
    }
    for (int r = 0; r < runs; ++r) {
        const double f = fma_rate(loop, per_iter, iters, nt, &t);
        if (f > best) best = f;
    }
    PK_CHECK(best > 0 && best < 1e300, PK_EINTERNAL, "FMA peak: no valid timing");
    *flops_per_second = best;
    return PK_OK;
}

pk_status pk_host_peak_flops(int threads, double *flops_per_second)
{
    return host_peak(threads, 0.03, 5, flops_per_second); /* best of 5 runs of 30 ms */
}

pk_status pk_host_peak_flops_quick(int threads, double *flops_per_second)
{
    return host_peak(threads, 0.002, 2, flops_per_second); /* the cost model's: ~10 ms */
}
