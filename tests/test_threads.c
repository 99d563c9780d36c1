/* test_threads.c - the thread-safety contract of lib/portkern.h:
 *
 *   "distinct contexts may be used from distinct threads at once.  A context (and the plans
 *    made from it) must not be used by two threads at the same time."
 *
 * What it checks:
 *  1. NTHREADS threads at once, each with its own context(s): diffusion3d and conv2d one-shot
 *     calls and a diffusion3d plan on every usable backend (serial, openmp, opencl, cuda),
 *     each result compared with the serial reference; the thread-local error detail
 *     (pk_last_error) of each thread survives the other threads' failures; the context-free
 *     calls (references, differ, .npy parse/write/read, names) run concurrently.
 *  2. All threads write the same .npy path at once: the file ends up as one writer's whole
 *     array, never a mix, and no temporary file is left.
 *  3. All threads build the same OpenCL program at once into one fresh on-disk cache: every
 *     result is right and the cache ends with one valid entry and no temporary file.
 *  4. One context shared by threads one at a time (handed over under a mutex, as the contract
 *     allows): a plan created on one thread, uploaded on another, run on a third and
 *     downloaded on a fourth gives the reference's result on every backend.
 *  5. First use inside the threads (before anything in the process touched a backend), in
 *     COLD_RUNS child processes, each cold: NTHREADS threads create their own contexts at
 *     once and ask every backend whether it can run and run diffusion3d on it; each thread's
 *     answer (usable or not, and why) must be the one a sequential probe gives after them,
 *     every result right, no crash (PoCL's device queries crashed or failed when the first
 *     ones came from several threads: the library serialises every backend's initialisation).
 * Run under ThreadSanitizer (docs/RELIABILITY.md) it also shows the absence of data races in
 * the library's own code; in the normal `make check` it checks the results.
 */
#define _XOPEN_SOURCE 700
#include "portkern.h"
#include "tap.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 4
#define ROUNDS 2
#define COLD_RUNS 4

enum { NX = 21, NY = 13, NZ = 9, COUNT = 6 };
enum { CH = 29, CW = 37, CKH = 5, CKW = 4 };
#define NPTS (NX * NY * NZ)

static pk_diffusion3d_params d3p;
static float d3_in[NPTS], d3_ref[NPTS];
static pk_conv2d_params cvp = {CH, CW, CKH, CKW, PK_CONV2D_AUTO};
static float cv_img[CH * CW], cv_psf[CKH * CKW], cv_ref[CH * CW];
static char dir[512];
static int usable[PK_BACKEND_COUNT];

/* ---- per-thread work -------------------------------------------------------------------- */
typedef struct worker {
    int id;
    pthread_t thread;
    int checks, failures;
    char first_failure[512];
} worker;

static void wfail(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wfail(worker *w, const char *fmt, ...)
{
    va_list ap;
    if (w->failures++ == 0) {
        va_start(ap, fmt);
        vsnprintf(w->first_failure, sizeof w->first_failure, fmt, ap);
        va_end(ap);
    }
}

static void wcheck(worker *w, int cond, const char *what, pk_backend_id be, pk_status s)
{
    ++w->checks;
    if (!cond)
        wfail(w, "thread %d, %s on %s: %s (%s)", w->id, what, pk_backend_name(be),
              pk_status_name(s), pk_last_error());
}

static int d3_right(const float *f)
{
    return pk_diff_f32(f, d3_ref, NPTS, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
}

static int cv_right(const float *f)
{
    return pk_diff_f32(f, cv_ref, CH * CW, 1e-5, 1e-6, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
}

/* The error detail is per thread: fail with a message naming this thread, let the others
 * run, and find it unchanged. */
static void check_error_detail(worker *w)
{
    pk_diffusion3d_params p = d3p;
    p.nx = -1000 - w->id;
    char want[64];
    snprintf(want, sizeof want, "nx: must be >= 1, got %d", p.nx);
    pk_status s = pk_diffusion3d_reference(&p, NULL);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    sched_yield();
    ++w->checks;
    if (s != PK_ESIZE || strcmp(pk_last_error(), want) != 0)
        wfail(w, "thread %d: error detail '%s', want '%s'", w->id, pk_last_error(), want);
}

static void context_free_calls(worker *w)
{
    float f[NPTS];
    memcpy(f, d3_in, sizeof f);
    pk_status s = pk_diffusion3d_reference(&d3p, f);
    wcheck(w, s == PK_OK && d3_right(f), "diffusion3d reference", PK_BACKEND_SERIAL, s);
    float out[CH * CW];
    s = pk_conv2d_reference(&cvp, cv_img, cv_psf, out);
    wcheck(w, s == PK_OK && cv_right(out), "conv2d reference", PK_BACKEND_SERIAL, s);

    /* .npy: this thread's own file, then parse it from memory as well */
    char path[700];
    snprintf(path, sizeof path, "%s/own-%d.npy", dir, w->id);
    size_t shape[3] = {NZ, NY, NX};
    s = pk_npy_write(path, PK_DTYPE_F32, 3, shape, d3_ref);
    pk_array a;
    memset(&a, 0, sizeof a);
    if (s == PK_OK) s = pk_npy_read(path, &a);
    wcheck(w, s == PK_OK && a.count == NPTS && memcmp(a.data, d3_ref, sizeof d3_ref) == 0,
           "npy write + read", PK_BACKEND_SERIAL, s);
    pk_array_free(&a);
    ++w->checks;
    if (strcmp(pk_strerror(PK_EDEVMEM), "out of device memory") != 0 ||
        strcmp(pk_backend_name(PK_BACKEND_OPENCL), "opencl") != 0)
        wfail(w, "thread %d: status or backend names changed", w->id);
}

static void backend_calls(worker *w, pk_backend_id be)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = be;
    o.threads = be == PK_BACKEND_OPENMP ? 2 : 0;
    pk_context *ctx = NULL;
    pk_status s = pk_context_create(&ctx, &o);
    wcheck(w, s == PK_OK, "context", be, s);
    if (s != PK_OK) return;

    float f[NPTS];
    memcpy(f, d3_in, sizeof f);
    pk_run_info info;
    s = pk_diffusion3d(ctx, &d3p, NULL, f, &info);
    wcheck(w, s == PK_OK && info.backend == be && d3_right(f), "diffusion3d", be, s);

    float out[CH * CW];
    s = pk_conv2d(ctx, &cvp, NULL, cv_img, cv_psf, out, &info);
    wcheck(w, s == PK_OK && info.backend == be && cv_right(out), "conv2d", be, s);

    /* a plan: 2 + 4 steps on the device = COUNT reference steps */
    pk_diffusion3d_plan *plan = NULL;
    s = pk_diffusion3d_plan_create(&plan, ctx, &d3p, NULL, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, d3_in);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, 2, NULL);
    check_error_detail(w);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, COUNT - 2, NULL);
    memset(f, 0, sizeof f);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, f);
    wcheck(w, s == PK_OK && d3_right(f), "diffusion3d plan", be, s);
    pk_diffusion3d_plan_destroy(plan);
    pk_context_destroy(ctx);
}

static pthread_barrier_t start_line;

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&start_line);
    for (int r = 0; r < ROUNDS; ++r) {
        check_error_detail(w);
        context_free_calls(w);
        /* each thread starts with a different backend, so that all run at once */
        for (int k = 0; k < PK_BACKEND_COUNT - 1; ++k) {
            pk_backend_id be = (pk_backend_id)(1 + (w->id + k) % (PK_BACKEND_COUNT - 1));
            if (usable[be]) backend_calls(w, be);
        }
    }
    return NULL;
}

/* ---- 2: one path, many writers ---------------------------------------------------------- */
typedef struct writer {
    pthread_t thread;
    int id;
    pk_status s;
} writer;

static float shared_data[NTHREADS][512];

static void *writer_main(void *arg)
{
    writer *wr = arg;
    char path[700];
    snprintf(path, sizeof path, "%s/shared.npy", dir);
    size_t shape[1] = {512};
    pthread_barrier_wait(&start_line);
    for (int r = 0; r < 8 && wr->s == PK_OK; ++r)
        wr->s = pk_npy_write(path, PK_DTYPE_F32, 1, shape, shared_data[wr->id]);
    return NULL;
}

static int count_names(const char *d, const char *part)
{
    DIR *dp = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)) != NULL) n += strstr(e->d_name, part) != NULL;
    if (dp) closedir(dp);
    return n;
}

static void test_same_path(void)
{
    writer wr[NTHREADS];
    for (int t = 0; t < NTHREADS; ++t)
        for (int i = 0; i < 512; ++i) shared_data[t][i] = (float)(t * 1000 + i);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; ++t) {
        wr[t].id = t;
        wr[t].s = PK_OK;
        pthread_create(&wr[t].thread, NULL, writer_main, &wr[t]);
    }
    int all_ok = 1;
    for (int t = 0; t < NTHREADS; ++t) {
        pthread_join(wr[t].thread, NULL);
        all_ok &= wr[t].s == PK_OK;
    }
    pthread_barrier_destroy(&start_line);
    char path[700];
    snprintf(path, sizeof path, "%s/shared.npy", dir);
    pk_array a;
    pk_status s = pk_npy_read(path, &a);
    int whole = 0;
    for (int t = 0; s == PK_OK && t < NTHREADS; ++t)
        whole |= a.count == 512 && memcmp(a.data, shared_data[t], sizeof shared_data[t]) == 0;
    ok(all_ok && whole, "%d threads x 8 writes of one .npy path: every write succeeded, the file "
       "is one writer's whole array (%s)", NTHREADS, s == PK_OK ? "read back" : pk_last_error());
    ok(count_names(dir, ".tmp") == 0, "no temporary file left by the concurrent writers");
    pk_array_free(&a);
}

/* ---- 3: one cache entry, many builders -------------------------------------------------- */
typedef struct builder {
    pthread_t thread;
    int good;
    char err[256];
} builder;

static void *builder_main(void *arg)
{
    builder *b = arg;
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_OPENCL;
    pk_context *ctx = NULL;
    float f[NPTS];
    memcpy(f, d3_in, sizeof f);
    pthread_barrier_wait(&start_line);
    pk_status s = pk_context_create(&ctx, &o);
    if (s == PK_OK) s = pk_diffusion3d(ctx, &d3p, NULL, f, NULL);
    b->good = s == PK_OK && d3_right(f);
    snprintf(b->err, sizeof b->err, "%s", s == PK_OK ? "" : pk_last_error());
    pk_context_destroy(ctx);
    return NULL;
}

static void test_same_cache(void)
{
    if (!usable[PK_BACKEND_OPENCL]) {
        tap_skip("opencl unavailable", "concurrent builds into one kernel cache");
        tap_skip("opencl unavailable", "one valid cache entry after concurrent builds");
        return;
    }
    char cache[700];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("PORTKERN_CACHE_DIR", cache, 1); /* no other thread runs now */
    builder b[NTHREADS];
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; ++t) pthread_create(&b[t].thread, NULL, builder_main, &b[t]);
    int good = 1;
    const char *err = "";
    for (int t = 0; t < NTHREADS; ++t) {
        pthread_join(b[t].thread, NULL);
        if (!b[t].good) {
            good = 0;
            err = b[t].err;
        }
    }
    pthread_barrier_destroy(&start_line);
    ok(good, "%d threads build the same OpenCL program into one fresh cache at once: all right "
       "%s", NTHREADS, err);
    int entries = count_names(cache, "diffusion3d-"), tmps = count_names(cache, ".tmp");
    /* the next context reads the entry back (test_clcache.c checks its validity in detail) */
    builder again;
    pthread_barrier_init(&start_line, NULL, 1);
    pthread_create(&again.thread, NULL, builder_main, &again);
    pthread_join(again.thread, NULL);
    pthread_barrier_destroy(&start_line);
    ok(entries - tmps == 1 && tmps == 0 && again.good,
       "the cache then holds one entry, no temporary file, and a new context runs from it "
       "(%d names, %d temporary)", entries, tmps);
    unsetenv("PORTKERN_CACHE_DIR");
}

/* ---- 4: one context, threads one at a time ---------------------------------------------- */
typedef struct relay {
    pthread_mutex_t lock;
    pthread_cond_t turn_cv;
    int turn; /* the step whose thread may run now */
    pk_context *ctx;
    pk_diffusion3d_plan *plan;
    pk_conv2d_plan *cplan;
    pk_backend_id be;
    pk_status s;
    float f[NPTS], out[CH * CW];
} relay;

typedef struct relay_arg {
    relay *r;
    int step;
    pthread_t thread;
} relay_arg;

static void *relay_main(void *arg)
{
    relay_arg *ra = arg;
    relay *r = ra->r;
    pthread_mutex_lock(&r->lock);
    while (r->turn != ra->step) pthread_cond_wait(&r->turn_cv, &r->lock);
    if (r->s == PK_OK) {
        switch (ra->step) {
        case 0: {
            pk_context_options o;
            pk_context_options_init(&o);
            o.backend = r->be;
            r->s = pk_context_create(&r->ctx, &o);
            if (r->s == PK_OK) r->s = pk_diffusion3d_plan_create(&r->plan, r->ctx, &d3p, NULL, NULL);
            if (r->s == PK_OK)
                r->s = pk_conv2d_plan_create(&r->cplan, r->ctx, &cvp, NULL, cv_psf, NULL);
            break;
        }
        case 1:
            r->s = pk_diffusion3d_plan_upload(r->plan, d3_in);
            if (r->s == PK_OK) r->s = pk_conv2d_plan_upload(r->cplan, cv_img);
            break;
        case 2:
            r->s = pk_diffusion3d_plan_run(r->plan, COUNT, NULL);
            if (r->s == PK_OK) r->s = pk_conv2d_plan_run(r->cplan, NULL);
            break;
        default:
            r->s = pk_diffusion3d_plan_download(r->plan, r->f);
            if (r->s == PK_OK) r->s = pk_conv2d_plan_download(r->cplan, r->out);
            break;
        }
    }
    ++r->turn;
    pthread_cond_broadcast(&r->turn_cv);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void test_relay(pk_backend_id be)
{
    if (!usable[be]) {
        tap_skip("backend unavailable here", "one %s context handed from thread to thread",
                 pk_backend_name(be));
        return;
    }
    relay *r = calloc(1, sizeof *r);
    if (!r) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->turn_cv, NULL);
    r->be = be;
    relay_arg ra[4];
    for (int i = 3; i >= 0; --i) { /* started in reverse: the order comes from the turns */
        ra[i].r = r;
        ra[i].step = i;
        pthread_create(&ra[i].thread, NULL, relay_main, &ra[i]);
    }
    for (int i = 0; i < 4; ++i) pthread_join(ra[i].thread, NULL);
    ok(r->s == PK_OK && d3_right(r->f) && cv_right(r->out),
       "one %s context and its plans, created, uploaded, run and downloaded on 4 different "
       "threads one at a time: results = reference (%s)", pk_backend_name(be),
       r->s == PK_OK ? "PK_OK" : pk_status_name(r->s));
    pk_conv2d_plan_destroy(r->cplan);
    pk_diffusion3d_plan_destroy(r->plan);
    pk_context_destroy(r->ctx);
    pthread_cond_destroy(&r->turn_cv);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- 5: first use of every backend from several threads at once, in a cold process ---- */
typedef struct cold_thread {
    pthread_t thread;
    int usable[PK_BACKEND_COUNT];
    char why[PK_BACKEND_COUNT][256];
    int wrong; /* results that differ from the reference */
} cold_thread;

/* A context forced onto backend b, environment ignored; NULL if it cannot be made. */
static pk_context *cold_context(int b)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = (pk_backend_id)b;
    o.flags = PK_OPT_IGNORE_ENV;
    pk_context *ctx = NULL;
    return pk_context_create(&ctx, &o) == PK_OK ? ctx : NULL;
}

static void *cold_main(void *arg)
{
    cold_thread *c = arg;
    /* PoCL compiles kernels with LLVM on the calling thread, and LLVM gives the thread an
     * alternate signal stack from malloc; under AddressSanitizer the thread's end then unmaps
     * that stack as if it were ASan's own and dies ("failed to deallocate ... unable to
     * unmap").  The thread's own alternate stack is put back before it ends. */
    stack_t own;
    const int have_own = sigaltstack(NULL, &own) == 0;
    pthread_barrier_wait(&start_line);
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        pk_context *ctx = cold_context(b);
        if (!ctx) {
            ++c->wrong;
            continue;
        }
        const char *why = "";
        c->usable[b] = pk_backend_available(ctx, (pk_backend_id)b, &why);
        snprintf(c->why[b], sizeof c->why[b], "%s", why);
        if (c->usable[b]) {
            float f[NPTS];
            memcpy(f, d3_in, sizeof f);
            if (pk_diffusion3d(ctx, &d3p, NULL, f, NULL) != PK_OK || !d3_right(f)) ++c->wrong;
        }
        pk_context_destroy(ctx);
    }
    if (have_own) sigaltstack(&own, NULL);
    return NULL;
}

/* In a child process: the threads' first use at once, then a sequential probe to compare
 * with.  Exit status 0: all agree and every result is right; 1: they differ (said on
 * stderr); a crash shows as the signal. */
static int cold_child(void)
{
    cold_thread c[NTHREADS];
    memset(c, 0, sizeof c);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; ++t) pthread_create(&c[t].thread, NULL, cold_main, &c[t]);
    for (int t = 0; t < NTHREADS; ++t) pthread_join(c[t].thread, NULL);
    pthread_barrier_destroy(&start_line);
    int bad = 0;
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        pk_context *ctx = cold_context(b);
        if (!ctx) return 1;
        const char *why = "";
        const int usable_now = pk_backend_available(ctx, (pk_backend_id)b, &why);
        for (int t = 0; t < NTHREADS; ++t)
            if (c[t].usable[b] != usable_now || strcmp(c[t].why[b], why) != 0 || c[t].wrong) {
                fprintf(stderr, "thread %d, %s: %s (%s), %d wrong results; sequential probe: %s "
                                "(%s)\n", t, pk_backend_name((pk_backend_id)b),
                        c[t].usable[b] ? "usable" : "unusable", c[t].why[b], c[t].wrong,
                        usable_now ? "usable" : "unusable", why);
                bad = 1;
            }
        pk_context_destroy(ctx);
    }
    return bad;
}

static void test_cold_first_use(void)
{
    for (int run = 0; run < COLD_RUNS; ++run) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) _exit(cold_child());
        int st = 0;
        const int waited = pid > 0 && waitpid(pid, &st, 0) == pid;
        ok(waited && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "cold process %d: %d threads' first use of every backend at once agrees with a "
           "sequential probe, results right (%s %d)", run + 1, NTHREADS,
           !waited ? "fork/wait failed" : WIFSIGNALED(st) ? "killed by signal" : "exit status",
           !waited ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
}

static void remove_dir(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    char p[1024];
    while (dp && (e = readdir(dp)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            remove_dir(p);
        else
            remove(p);
    }
    if (dp) closedir(dp);
    rmdir(d);
}

int main(void)
{
    const char *top = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/tmp-threads-XXXXXX", top ? top : ".");
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "/tmp/pk-threads-XXXXXX");
        if (!mkdtemp(dir)) {
            printf("Bail out! cannot create a temporary directory\n");
            return 1;
        }
    }
    unsetenv("PORTKERN_BACKEND");
    unsetenv("PORTKERN_DEVICE");
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    unsetenv("PORTKERN_TEST_CL_BREAK_BUILD");

    pk_diffusion3d_params_default(&d3p, NX, NY, NZ, COUNT);
    pk_diffusion3d_field(NX, NY, NZ, 0.0, d3_in);
    memcpy(d3_ref, d3_in, sizeof d3_ref);
    pk_diffusion3d_reference(&d3p, d3_ref);
    for (int i = 0; i < CH * CW; ++i) cv_img[i] = (float)((i * 29) % 97) / 13.0f;
    for (int i = 0; i < CKH * CKW; ++i) cv_psf[i] = 1.0f / (CKH * CKW) + (float)i * 1e-3f;
    pk_conv2d_reference(&cvp, cv_img, cv_psf, cv_ref);

    /* 5 first: the children must start with no backend touched in this process */
    test_cold_first_use();

    pk_context *probe = NULL;
    if (pk_context_create(&probe, NULL) != PK_OK) {
        printf("Bail out! %s\n", pk_last_error());
        return 1;
    }
    char which[128] = "";
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        usable[b] = pk_backend_available(probe, (pk_backend_id)b, NULL);
        if (usable[b]) {
            strcat(which, which[0] ? ", " : "");
            strcat(which, pk_backend_name((pk_backend_id)b));
        }
    }
    pk_context_destroy(probe);
    tap_diag("backends usable here: %s", which);

    /* 1: threads with their own contexts, at once */
    worker w[NTHREADS];
    memset(w, 0, sizeof w);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; ++t) {
        w[t].id = t;
        if (pthread_create(&w[t].thread, NULL, worker_main, &w[t]) != 0) {
            printf("Bail out! pthread_create failed\n");
            return 1;
        }
    }
    for (int t = 0; t < NTHREADS; ++t) pthread_join(w[t].thread, NULL);
    pthread_barrier_destroy(&start_line);
    for (int t = 0; t < NTHREADS; ++t)
        ok(w[t].failures == 0 && w[t].checks > 0,
           "thread %d of %d with its own contexts (%s): %d checks, %d failed%s%s", t, NTHREADS,
           which, w[t].checks, w[t].failures, w[t].failures ? ": " : "", w[t].first_failure);

    /* 2, 3 */
    test_same_path();
    test_same_cache();

    /* 4: one context per backend, passed from thread to thread */
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) test_relay((pk_backend_id)b);

    remove_dir(dir);
    return tap_done();
}
