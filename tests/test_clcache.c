/* test_clcache.c - the OpenCL backend's on-disk program cache, seen from outside.
 *
 * Through the public API and the environment only: a cold run writes one entry into
 * PORTKERN_CACHE_DIR; a new context uses it without rewriting it; a damaged entry (bytes
 * flipped, truncated, garbage, a foreign key) never changes a result and is replaced by a
 * valid one; an impossible cache directory and PORTKERN_CACHE_DIR=off / PORTKERN_CACHE=0
 * still give correct results and write nothing.  Also: a broken build
 * (PORTKERN_TEST_CL_BREAK_BUILD=1) fails with PK_EBUILD and the build log when opencl is
 * forced, and falls back to another backend when it is not; and the GPU kernel scheme,
 * forced on whatever device is here (PORTKERN_CL_D3_SCHEME=zmarch), matches the reference.
 * The device census: starting OpenCL writes it; with no GPU in it, auto passes over OpenCL's
 * GPU turn without starting the platforms, unless the context ignores the environment, the
 * key changed (a driver's variable) or the file is damaged, and then it is written anew.
 */
#define _XOPEN_SOURCE 700
#include "portkern.h"
#include "tap.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRY_PREFIX "diffusion3d-"
#define ENTRY_SUFFIX ".clbin"
#define MAGIC "PKCLBIN"

static char root[512];

static float *xmalloc_f(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Number of diffusion3d entries in dir (path of the last one in *path), and of leftover
 * temporary files in *ntmp. */
static int count_entries(const char *dir, char *path, size_t len, int *ntmp)
{
    int n = 0;
    *ntmp = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".tmp-")) ++*ntmp;
        else if (strncmp(e->d_name, ENTRY_PREFIX, strlen(ENTRY_PREFIX)) == 0 &&
                 ends_with(e->d_name, ENTRY_SUFFIX)) {
            ++n;
            if (path) snprintf(path, len, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    unsigned char *buf = NULL;
    if (fseek(fp, 0, SEEK_END) == 0) {
        long n = ftell(fp);
        rewind(fp);
        buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)n;
    }
    fclose(fp);
    return buf;
}

static int write_all(const char *path, const void *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    int ok_ = fwrite(buf, 1, len, fp) == len;
    return (fclose(fp) == 0 && ok_) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

/* ---- the computation ------------------------------------------------------------------ */
static pk_diffusion3d_params params;
static float *field0, *expected;
static size_t npts;

static void problem_init(int nx, int ny, int nz, int count)
{
    pk_diffusion3d_params_default(&params, nx, ny, nz, count);
    npts = (size_t)nx * ny * nz;
    field0 = xmalloc_f(npts);
    expected = xmalloc_f(npts);
    pk_diffusion3d_field(nx, ny, nz, 0.0, field0);
    memcpy(expected, field0, npts * sizeof(float));
    pk_diffusion3d_reference(&params, expected);
}

/* One diffusion3d call on a new context (so the backend starts cold, as a new process
 * would, and only the on-disk cache can carry a program over). */
static int run_checked(pk_backend_id backend, const char *variant, const char *what,
                       pk_run_info *info_out)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = backend;
    pk_context *ctx = NULL;
    pk_status s = pk_context_create(&ctx, &o);
    float *f = xmalloc_f(npts);
    memcpy(f, field0, npts * sizeof(float));
    pk_run_info info;
    memset(&info, 0, sizeof info);
    char err[1024] = "";
    if (s == PK_OK) s = pk_diffusion3d(ctx, &params, variant, f, &info);
    if (s != PK_OK) snprintf(err, sizeof err, "%s", pk_last_error());
    pk_diff_report r;
    pk_status d = s == PK_OK ? pk_diff_f32(f, expected, npts, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &r)
                             : PK_EMISMATCH;
    int good = s == PK_OK && d == PK_OK &&
               (backend == PK_BACKEND_AUTO || info.backend == backend);
    ok(good, "%s: result matches the reference (%s%s%s, ran on %s)", what, pk_status_name(s),
       err[0] ? ": " : "", err, s == PK_OK ? pk_backend_name(info.backend) : "-");
    if (info_out) *info_out = info;
    free(f);
    pk_context_destroy(ctx);
    return good;
}

/* ---- the cache ------------------------------------------------------------------------ */
typedef struct entry_snap {
    ino_t ino;
    unsigned char *bytes;
    size_t len;
} entry_snap;

static int snap(const char *path, entry_snap *e)
{
    struct stat sb;
    e->bytes = NULL;
    if (stat(path, &sb) != 0) return -1;
    e->ino = sb.st_ino;
    e->bytes = read_all(path, &e->len);
    return e->bytes ? 0 : -1;
}

static int same_snap(const entry_snap *a, const entry_snap *b)
{
    return a->bytes && b->bytes && a->ino == b->ino && a->len == b->len &&
           memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* Damage the entry with `damage`, run, and check that the result is right and that the entry
 * was replaced by one the next run accepts as it is (not rewritten again). */
static void damage_and_check(const char *dir, const char *what,
                             void (*damage)(unsigned char *buf, size_t *len))
{
    char path[1024];
    int ntmp;
    if (count_entries(dir, path, sizeof path, &ntmp) != 1) {
        ok(0, "%s: the cache holds one entry to damage", what);
        return;
    }
    size_t len;
    unsigned char *buf = read_all(path, &len);
    if (!buf) {
        ok(0, "%s: read the entry", what);
        return;
    }
    damage(buf, &len);
    if (write_all(path, buf, len) != 0) {
        ok(0, "%s: write the damaged entry", what);
        free(buf);
        return;
    }
    run_checked(PK_BACKEND_OPENCL, "opencl", what, NULL);
    entry_snap after, next;
    int n = count_entries(dir, path, sizeof path, &ntmp);
    int replaced = n == 1 && ntmp == 0 && snap(path, &after) == 0 &&
                   (after.len != len || memcmp(after.bytes, buf, len) != 0) &&
                   after.len > 8 && memcmp(after.bytes, MAGIC, 8) == 0;
    ok(replaced, "%s: the entry was replaced by a new one (%d entries, %d temporary files)", what,
       n, ntmp);
    char next_what[128];
    snprintf(next_what, sizeof next_what, "%s, next run", what);
    run_checked(PK_BACKEND_OPENCL, "opencl", next_what, NULL);
    ok(replaced && snap(path, &next) == 0 && same_snap(&after, &next),
       "%s: the new entry is valid (the next run used it unchanged)", what);
    free(after.bytes);
    free(next.bytes);
    free(buf);
}

static void flip_middle(unsigned char *buf, size_t *len)
{
    for (size_t i = *len / 2; i < *len / 2 + 16 && i < *len; ++i) buf[i] ^= 0x5a;
}

static void truncate_half(unsigned char *buf, size_t *len) { (void)buf; *len /= 2; }

static void garbage(unsigned char *buf, size_t *len)
{
    static const char text[] = "this is not a portkern cache entry\n";
    memcpy(buf, text, sizeof text - 1);
    *len = sizeof text - 1;
}

/* A byte of the key echo (after magic, version and key length): an entry for another key. */
static void foreign_key(unsigned char *buf, size_t *len)
{
    if (*len > 24) buf[20] ^= 0x01;
}

/* ---- the device census (auto passes over OpenCL's GPU turn without starting it) ---------- */
/* The census line in dir ("" when none): its GPU count, or -1. */
static int census_gpus(const char *dir)
{
    char path[800], line[128] = "", key[32];
    int version = 0, gpus = -1;
    snprintf(path, sizeof path, "%s/opencl-census", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    if (sscanf(line, "portkern-opencl-census %d %31s %d", &version, key, &gpus) != 3) return -1;
    return gpus;
}

static int census_said(const pk_run_info *info)
{
    return strstr(info->reason, "opencl gpu: skipped (no GPU device (device census))") != NULL;
}

static void check_census(void)
{
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%s/census", root);
    snprintf(path, sizeof path, "%s/opencl-census", dir);
    setenv("PORTKERN_CACHE_DIR", dir, 1);
    pk_context *c = NULL;
    if (pk_context_create(&c, NULL) == PK_OK) (void)pk_backend_available(c, PK_BACKEND_OPENCL, NULL);
    pk_context_destroy(c);
    const int gpus = census_gpus(dir);
    ok(gpus >= 0, "starting OpenCL writes the device census %s (%d GPUs)", path, gpus);
    if (gpus != 0) {
        tap_skip("this machine has an OpenCL GPU (or no census): auto starts OpenCL for it", "%s",
                 "the census's skips");
        unsetenv("PORTKERN_CACHE_DIR");
        return;
    }
    pk_run_info info;
    run_checked(PK_BACKEND_AUTO, NULL, "auto with the census", &info);
    ok(census_said(&info), "auto passes over OpenCL's GPU turn by the census, without starting "
       "it (%s)", info.reason);
    /* a context that ignores the environment never reads it */
    {
        pk_context_options o;
        pk_context_options_init(&o);
        o.flags = PK_OPT_IGNORE_ENV;
        float *f = xmalloc_f(npts);
        memcpy(f, field0, npts * sizeof(float));
        memset(&info, 0, sizeof info);
        pk_status st = pk_context_create(&c, &o);
        if (st == PK_OK) st = pk_diffusion3d(c, &params, NULL, f, &info);
        ok(st == PK_OK && !census_said(&info) && strstr(info.reason, "opencl gpu: skipped"),
           "PK_OPT_IGNORE_ENV: the census is not read, OpenCL is started (%s)", info.reason);
        pk_context_destroy(c);
        free(f);
    }
    /* what decides the device list changed (a driver's variable): started again, the census
     * rewritten for the new key and used by the next context */
    setenv("GPU_DEVICE_ORDINAL", "0", 1);
    run_checked(PK_BACKEND_AUTO, NULL, "auto after GPU_DEVICE_ORDINAL changed", &info);
    const int stale = census_said(&info);
    run_checked(PK_BACKEND_AUTO, NULL, "auto, the next context", &info);
    ok(!stale && census_said(&info), "a changed key: OpenCL started again and the census "
       "rewritten, the next context passes over it (%s)", info.reason);
    unsetenv("GPU_DEVICE_ORDINAL");
    /* a damaged census is not believed */
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("portkern-opencl-census 1 zzzz 0\n", f);
        fclose(f);
    }
    run_checked(PK_BACKEND_AUTO, NULL, "auto with a damaged census", &info);
    ok(!census_said(&info) && census_gpus(dir) == 0,
       "a damaged census: OpenCL started, the census written anew (%s)", info.reason);
    unsetenv("PORTKERN_CACHE_DIR");
}

int main(void)
{
    /* Absolute: XDG_CACHE_HOME is ignored when relative, as the XDG spec says. */
    char cwd[400];
    if (access("tests", W_OK) == 0 && getcwd(cwd, sizeof cwd))
        snprintf(root, sizeof root, "%s/tests/tmp-clcache-XXXXXX", cwd);
    else
        snprintf(root, sizeof root, "/tmp/portkern-clcache-XXXXXX");
    if (!mkdtemp(root)) {
        printf("Bail out! cannot create a temporary directory %s\n", root);
        return 1;
    }
    char dir[600], path[1024];
    snprintf(dir, sizeof dir, "%s/cache", root);
    /* PoCL needs a writable cache of its own; the test's PORTKERN_* settings start clean. */
    if (!getenv("POCL_CACHE_DIR")) {
        snprintf(path, sizeof path, "%s/pocl", root);
        setenv("POCL_CACHE_DIR", path, 1);
    }
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    unsetenv("PORTKERN_CACHE");
    unsetenv("PORTKERN_CL_D3_SCHEME");
    unsetenv("PORTKERN_DIFFUSION3D_CL_SCHEME");
    unsetenv("PORTKERN_TEST_CL_BREAK_BUILD");
    setenv("PORTKERN_CACHE_DIR", dir, 1);

    pk_context *probe = NULL;
    const char *why = "context creation failed";
    if (pk_context_create(&probe, NULL) != PK_OK ||
        !pk_backend_available(probe, PK_BACKEND_OPENCL, &why)) {
        char reason[600];
        snprintf(reason, sizeof reason, "opencl backend unavailable: %s", why);
        pk_context_destroy(probe);
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        tap_skip_all(reason);
    }
    pk_context_destroy(probe);
    problem_init(21, 13, 7, 12);

    /* Cold, then warm from a new context. */
    int ntmp;
    run_checked(PK_BACKEND_OPENCL, "opencl", "cold cache", NULL);
    int n = count_entries(dir, path, sizeof path, &ntmp);
    ok(n == 1 && ntmp == 0, "a cold run writes one entry and no leftovers (%d entries, %d "
                            "temporary files in %s)", n, ntmp, dir);
    entry_snap first, again;
    int have = n == 1 && snap(path, &first) == 0;
    ok(have && first.len > 8 && memcmp(first.bytes, MAGIC, 8) == 0,
       "the entry starts with the magic " MAGIC);
    run_checked(PK_BACKEND_OPENCL, "opencl", "warm cache, new context", NULL);
    ok(have && snap(path, &again) == 0 && same_snap(&first, &again),
       "the warm run used the entry without rewriting it");
    free(first.bytes);
    free(again.bytes);

    /* Damaged entries are deleted, rebuilt from source and rewritten. */
    damage_and_check(dir, "bytes flipped in the middle", flip_middle);
    damage_and_check(dir, "truncated to half", truncate_half);
    damage_and_check(dir, "replaced by garbage", garbage);
    damage_and_check(dir, "key echo of another build", foreign_key);

    /* A directory that cannot be created: no cache, same results. */
    setenv("PORTKERN_CACHE_DIR", "/dev/null/portkern", 1);
    run_checked(PK_BACKEND_OPENCL, "opencl", "cache dir /dev/null/portkern cannot be created",
                NULL);

    /* Switched off: nothing written anywhere, in particular not at the fallbacks. */
    char xdg[600], home[600], xdg_cache[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", root);
    snprintf(home, sizeof home, "%s/home", root);
    snprintf(xdg_cache, sizeof xdg_cache, "%s/portkern", xdg);
    mkdir(xdg, 0700);
    mkdir(home, 0700);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    setenv("PORTKERN_CACHE_DIR", "off", 1);
    run_checked(PK_BACKEND_OPENCL, "opencl", "PORTKERN_CACHE_DIR=off", NULL);
    struct stat sb;
    ok(stat(xdg_cache, &sb) != 0 && count_entries(home, NULL, 0, &ntmp) == 0,
       "PORTKERN_CACHE_DIR=off writes no cache (not under XDG_CACHE_HOME or HOME either)");
    unsetenv("PORTKERN_CACHE_DIR");
    setenv("PORTKERN_CACHE", "0", 1);
    run_checked(PK_BACKEND_OPENCL, "opencl", "PORTKERN_CACHE=0", NULL);
    ok(stat(xdg_cache, &sb) != 0, "PORTKERN_CACHE=0 writes no cache");
    unsetenv("PORTKERN_CACHE");
    run_checked(PK_BACKEND_OPENCL, "opencl", "cache under XDG_CACHE_HOME", NULL);
    ok(count_entries(xdg_cache, NULL, 0, &ntmp) == 1,
       "without PORTKERN_CACHE_DIR the cache is $XDG_CACHE_HOME/portkern");

    /* A build that fails: an error with the log when forced, a fallback when not. */
    snprintf(path, sizeof path, "%s/broken", root);
    setenv("PORTKERN_CACHE_DIR", path, 1);
    setenv("PORTKERN_TEST_CL_BREAK_BUILD", "1", 1);
    {
        pk_context_options o;
        pk_context_options_init(&o);
        o.backend = PK_BACKEND_OPENCL;
        pk_context *ctx = NULL;
        float *f = xmalloc_f(npts);
        memcpy(f, field0, npts * sizeof(float));
        pk_status s = pk_context_create(&ctx, &o);
        if (s == PK_OK) s = pk_diffusion3d(ctx, &params, "opencl", f, NULL);
        ok(s == PK_EBUILD && strstr(pk_last_error(), "build log") != NULL,
           "broken build, opencl forced: PK_EBUILD with the build log (%s)", pk_status_name(s));
        tap_diag("%s", pk_last_error());
        ok(count_entries(path, NULL, 0, &ntmp) == 0 && ntmp == 0,
           "a failed build writes no cache entry");
        pk_context_destroy(ctx);
        free(f);
    }
    /* PORTKERN_BACKEND puts opencl first under the auto backend (on a CPU-only machine the
     * plain auto order would try OpenMP first and never reach the broken build). */
    setenv("PORTKERN_BACKEND", "opencl", 1);
    pk_run_info info;
    run_checked(PK_BACKEND_AUTO, NULL, "broken build, auto backend", &info);
    ok(info.backend != PK_BACKEND_OPENCL && info.fell_back == 1 && strstr(info.reason, "opencl"),
       "broken build, auto backend: fell back to %s (fell_back %d; reason: %s)",
       pk_backend_name(info.backend) ? pk_backend_name(info.backend) : "?", info.fell_back,
       info.reason);
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_TEST_CL_BREAK_BUILD");

    /* The GPU kernel, forced here, on sizes that leave partial work-groups and slabs. */
    setenv("PORTKERN_CACHE_DIR", "off", 1);
    setenv("PORTKERN_CL_D3_SCHEME", "zmarch", 1);
    static const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 9}};
    for (int i = 0; i < 3; ++i) {
        free(field0);
        free(expected);
        problem_init(sizes[i][0], sizes[i][1], sizes[i][2], 100);
        char what[96];
        snprintf(what, sizeof what, "zmarch kernel %dx%dx%d count 100", sizes[i][0], sizes[i][1],
                 sizes[i][2]);
        run_checked(PK_BACKEND_OPENCL, "opencl", what, NULL);
    }
    unsetenv("PORTKERN_CL_D3_SCHEME");
    unsetenv("PORTKERN_CACHE_DIR");
    check_census();

    free(field0);
    free(expected);
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tap_done();
}
