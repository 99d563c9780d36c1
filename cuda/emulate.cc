/* emulate.cc - the engine behind cuda/emulate.h: device memory, lazy streams and events,
 * and launches whose blocks run as pools of host threads (see the header for the model).
 * Runtime calls are meant for one host thread at a time (the tests); one mutex keeps a
 * second one from corrupting the state all the same. */
#include "emulate.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace {

/* ---- state ------------------------------------------------------------------------------ */
std::recursive_mutex api_mutex;
#define PK_EMU_API std::lock_guard<std::recursive_mutex> api_guard_(api_mutex)

int dev_sms = 4, dev_blocks_per_sm = 0;
size_t dev_mem = (size_t)1 << 30;
long fail_malloc_in = 0; /* the nth cudaMalloc from now fails; 0: none */
long fail_host_alloc_in = 0; /* the same for cudaHostAlloc */
cudaError_t last_error = cudaSuccess;
cudaError_t sticky = cudaSuccess;
std::string fault;        /* the first fault since the last reset */
std::string misuse;       /* detail of the last misused call ... */
cudaError_t misuse_code = cudaSuccess; /* ... and its error */
pk_emu_stats stats;

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void record_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void record_fault(const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (fault.empty()) fault = buf;
    fprintf(stderr, "cuda emulation: fault: %s\n", buf);
    sticky = cudaErrorLaunchFailure;
}

/* A misused call (wrong copy direction, a pointer outside device memory, a bad launch
 * configuration): the call's error, not sticky; the detail goes to cudaGetErrorString. */
cudaError_t misused(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudaError_t misused(cudaError_t e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    misuse = buf;
    misuse_code = e;
    last_error = e;
    return e;
}

/* ---- device memory ----------------------------------------------------------------------- */
struct allocation {
    char *map;      /* the mapping, guard pages included */
    size_t map_len; /* its length */
    size_t bytes;   /* what was asked */
};
std::map<uintptr_t, allocation> allocs; /* by user address */
std::map<uintptr_t, allocation> pinned; /* pinned host memory, the same way */
size_t bytes_in_use = 0;

size_t page_size(void)
{
    static const size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

/* The allocation of m holding [p, p + n), or NULL (n may be 0: p may then be one past the
 * end). */
const allocation *find_in(const std::map<uintptr_t, allocation> &m, const void *p, size_t n)
{
    const uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return nullptr;
    --it;
    if (a - it->first > it->second.bytes || n > it->second.bytes - (a - it->first)) return nullptr;
    return &it->second;
}

bool is_device(const void *p, size_t n) { return p != nullptr && find_in(allocs, p, n) != nullptr; }
bool is_pinned(const void *p, size_t n) { return p != nullptr && find_in(pinned, p, n) != nullptr; }

/* A mapping of `bytes` (rounded up to 16) whose end touches an inaccessible page, with
 * another one before it, filled with 0xff.  Returns the user pointer or NULL. */
void *guarded_map(size_t bytes, allocation *a)
{
    const size_t pg = page_size(), round = (bytes + 15) & ~(size_t)15;
    const size_t pages = (round + pg - 1) / pg;
    a->map_len = (pages + 2) * pg;
    void *m = mmap(nullptr, a->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    a->map = (char *)m;
    mprotect(a->map, pg, PROT_NONE);
    mprotect(a->map + (pages + 1) * pg, pg, PROT_NONE);
    char *user = a->map + (pages + 1) * pg - round;
    memset(a->map + pg, 0xff, pages * pg);
    a->bytes = bytes;
    return user;
}

/* ---- streams and events ------------------------------------------------------------------ */
typedef std::function<void()> op_t;

} // namespace

struct pk_emu_stream {
    bool blocking = true;
    std::deque<op_t> q;
    long long issued = 0, done = 0;
};

struct pk_emu_event {
    bool timing = true;         /* not created with cudaEventDisableTiming */
    pk_emu_stream *st = nullptr;
    long long pos = 0;          /* st->issued right after the marker */
    unsigned long long gen = 0; /* records so far */
    bool recorded = false, completed = false;
    double t = 0;
};

namespace {

pk_emu_stream legacy; /* stream 0 */
std::set<pk_emu_stream *> streams;
/* Destroyed streams stay allocated: a wait queued on another stream may still name one. */
std::vector<pk_emu_stream *> dead_streams;

pk_emu_stream *S(cudaStream_t st) { return st ? st : &legacy; }

/* Run the work of st up to (not including) position `upto`.  Work queued on a stream
 * depends only on work issued before it, so these nested drains always end. */
void drain_to(pk_emu_stream *s, long long upto)
{
    while (s->done < upto && !s->q.empty()) {
        op_t op = std::move(s->q.front());
        s->q.pop_front();
        if (sticky == cudaSuccess) op(); /* after a fault, queued work is dropped */
        ++s->done;
    }
}
void drain(pk_emu_stream *s) { drain_to(s, s->issued); }
void drain_all(void)
{
    drain(&legacy);
    for (pk_emu_stream *s : streams) drain(s);
}

void push(pk_emu_stream *s, op_t op)
{
    s->q.push_back(std::move(op));
    ++s->issued;
}

/* Queue op on st, after what it implicitly waits for: the legacy stream waits for the
 * blocking streams' earlier work and they wait for its. */
void enqueue(cudaStream_t st, op_t op)
{
    pk_emu_stream *s = S(st);
    auto wait_for = [s](pk_emu_stream *o) {
        if (o->issued > o->done) {
            const long long upto = o->issued;
            push(s, [o, upto]() { drain_to(o, upto); });
        }
    };
    if (s == &legacy) {
        for (pk_emu_stream *o : streams)
            if (o->blocking) wait_for(o);
    } else if (s->blocking) {
        wait_for(&legacy);
    }
    push(s, std::move(op));
}

/* Run st's queue through its last op (what a host-synchronous call on st needs). */
void finish(cudaStream_t st) { drain(S(st)); }

bool valid_stream(cudaStream_t st) { return st == nullptr || streams.count(st) != 0; }

/* ---- blocks as host threads --------------------------------------------------------------- */
/* A CUDA thread runs on a pool thread (a "worker") from its start to its end; while it waits
 * at a barrier it keeps its worker (its stack).  Under the serial schedules one CUDA thread
 * runs at a time and the one that stops hands the baton to the next of the phase: when that
 * one has not started yet and the stopping one has ended, the same worker runs it (a block
 * without barriers runs on one worker), else the next one's worker is woken.  Under the free
 * schedule every CUDA thread of the block gets its own worker at once. */
enum { T_NEW = 0, T_RUNNING = 1, T_BARRIER = 2, T_EXITED = 3 };
enum { ORDER_ALTERNATE, ORDER_ASCENDING, ORDER_DESCENDING, ORDER_FREE };

int schedule(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("PK_EMU_SCHEDULE");
        mode = !e || !*e || !strcmp(e, "alternate") ? ORDER_ALTERNATE
               : !strcmp(e, "ascending")            ? ORDER_ASCENDING
               : !strcmp(e, "descending")           ? ORDER_DESCENDING
               : !strcmp(e, "free")                 ? ORDER_FREE
                                                    : -2;
        if (mode == -2) {
            fprintf(stderr, "PK_EMU_SCHEDULE: expected alternate, ascending, descending or free, "
                            "got '%s'\n",
                    e);
            abort();
        }
    }
    return mode;
}

struct worker {
    pthread_t th;
    sem_t go;
    int cuda_thread; /* what it runs, or resumes, when woken */
};

struct block_run {
    const pk_emu::launch *l;
    uint3 bidx;
    unsigned long long linear; /* block index, for the order */
    int n;                     /* threads */
    std::vector<int> state;
    std::vector<worker *> owner; /* the worker of each started, unfinished thread */
    std::vector<const char *> file;
    std::vector<int> line;
    /* serial schedules: the threads of the current phase in their order; pos: the one
     * holding the baton */
    std::vector<int> order;
    size_t pos;
    int phase, live;
    sem_t done;
    /* free schedule: a counting barrier */
    std::mutex m;
    std::condition_variable cv;
    int arrived;
    unsigned long long generation;
    void *dyn; /* dynamic shared memory */
};

std::vector<worker *> all_workers, idle_workers;
std::mutex idle_mutex; /* the free schedule's workers take and return themselves at once */
block_run *cur;        /* the block that runs */
bool shutting_down;
thread_local int my_thread = -1; /* the CUDA thread this worker runs */

void *worker_main(void *arg);

/* An idle worker (a new one when none is idle), or NULL when no thread can be started. */
worker *take_worker(void)
{
    {
        std::lock_guard<std::mutex> g(idle_mutex);
        if (!idle_workers.empty()) {
            worker *w = idle_workers.back();
            idle_workers.pop_back();
            return w;
        }
    }
    worker *w = new worker;
    sem_init(&w->go, 0, 0);
    w->cuda_thread = -1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)4 << 20);
    const int e = pthread_create(&w->th, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        sem_destroy(&w->go);
        delete w;
        return nullptr;
    }
    std::lock_guard<std::mutex> g(idle_mutex);
    all_workers.push_back(w);
    return w;
}

void give_back(worker *w)
{
    std::lock_guard<std::mutex> g(idle_mutex);
    idle_workers.push_back(w);
}

/* Start CUDA thread t of the current block on a worker of its own. */
void start_on_new_worker(block_run *b, int t)
{
    worker *w = take_worker();
    if (w == nullptr) {
        fprintf(stderr, "cuda emulation: cannot start a host thread\n");
        abort();
    }
    w->cuda_thread = t;
    b->owner[(size_t)t] = w;
    sem_post(&w->go);
}

void check_sites(block_run *b, const std::vector<int> &at)
{
    for (int t : at)
        if (b->line[t] != b->line[at[0]] || strcmp(b->file[t], b->file[at[0]]) != 0) {
            record_fault("block (%u, %u, %u): threads %d and %d wait at different __syncthreads "
                         "(%s:%d and %s:%d)",
                         b->bidx.x, b->bidx.y, b->bidx.z, at[0], t, b->file[at[0]],
                         b->line[at[0]], b->file[t], b->line[t]);
            return;
        }
}

/* Serial schedules: the CUDA thread holding the baton has stopped, at a barrier (self is
 * its worker, which keeps it) or for good (self is free).  Pass the baton on; returns the
 * CUDA thread that self runs next, or -1 (then self waits: on its semaphore when it keeps
 * a thread at a barrier, else back in the pool, where it was put before anyone was woken). */
int pass_baton(block_run *b, worker *self, bool self_free)
{
    for (;;) {
        if (++b->pos < b->order.size()) {
            const int t = b->order[b->pos];
            if (b->state[(size_t)t] == T_NEW) {
                if (self_free) return t;
                start_on_new_worker(b, t);
                return -1;
            }
            /* parked at the barrier */
            if (self_free) give_back(self);
            sem_post(&b->owner[(size_t)t]->go);
            return -1;
        }
        /* the phase is over */
        if (b->live == 0) {
            if (self_free) give_back(self);
            sem_post(&b->done);
            return -1;
        }
        std::vector<int> at;
        for (int t = 0; t < b->n; ++t)
            if (b->state[(size_t)t] == T_BARRIER) at.push_back(t);
        check_sites(b, at);
        ++b->phase;
        __atomic_add_fetch(&stats.barriers, 1, __ATOMIC_RELAXED);
        const int mode = schedule();
        const bool down = mode == ORDER_DESCENDING ||
                          (mode == ORDER_ALTERNATE && ((b->linear + (unsigned)b->phase) & 1));
        b->order.assign(at.begin(), at.end());
        if (down) std::reverse(b->order.begin(), b->order.end());
        for (int t : at) b->state[(size_t)t] = T_RUNNING;
        b->pos = (size_t)-1; /* the loop moves to the first */
    }
}

/* Run CUDA thread t of the current block on this worker, and what follows it here. */
void run_threads(worker *w, int t)
{
    block_run *b = cur;
    const dim3 bd = b->l->block;
    while (t >= 0) {
        my_thread = t;
        b->owner[(size_t)t] = w;
        b->state[(size_t)t] = T_RUNNING;
        threadIdx.x = (unsigned)t % bd.x;
        threadIdx.y = (unsigned)t / bd.x % bd.y;
        threadIdx.z = (unsigned)t / (bd.x * bd.y);
        blockIdx = b->bidx;
        blockDim = bd;
        gridDim = b->l->grid;
        b->l->body();
        if (schedule() == ORDER_FREE) {
            bool last;
            {
                std::unique_lock<std::mutex> g(b->m);
                b->state[(size_t)t] = T_EXITED;
                b->owner[(size_t)t] = nullptr;
                last = --b->live == 0;
                if (!last && b->arrived == b->live) { /* the others wait at a barrier */
                    b->arrived = 0;
                    ++b->generation;
                    b->cv.notify_all();
                }
            }
            give_back(w);
            /* the last one: nothing of the block is touched after this */
            if (last) sem_post(&b->done);
            return;
        }
        b->state[(size_t)t] = T_EXITED;
        b->owner[(size_t)t] = nullptr;
        --b->live;
        t = pass_baton(b, w, true);
    }
}

void *worker_main(void *arg)
{
    worker *w = (worker *)arg;
    for (;;) {
        while (sem_wait(&w->go) != 0 && errno == EINTR) {
        }
        if (shutting_down) return nullptr;
        run_threads(w, w->cuda_thread);
    }
}

/* At exit (the pool's threads wait for work): end them, free what the runtime kept. */
struct at_exit {
    ~at_exit()
    {
        shutting_down = true;
        for (worker *w : all_workers) sem_post(&w->go);
        for (worker *w : all_workers) {
            pthread_join(w->th, nullptr);
            sem_destroy(&w->go);
            delete w;
        }
        all_workers.clear();
        idle_workers.clear();
        for (pk_emu_stream *s : dead_streams) delete s;
        for (pk_emu_stream *s : streams) delete s;
        dead_streams.clear();
        streams.clear();
    }
} the_end; /* (defined after what it frees, so destroyed before it) */

void run_block(block_run *b)
{
    b->state.assign((size_t)b->n, T_NEW);
    b->owner.assign((size_t)b->n, nullptr);
    b->file.assign((size_t)b->n, "");
    b->line.assign((size_t)b->n, 0);
    b->live = b->n;
    b->phase = 0;
    b->arrived = 0;
    cur = b;
    if (schedule() == ORDER_FREE) {
        for (int t = 0; t < b->n; ++t) start_on_new_worker(b, t);
    } else {
        b->order.resize((size_t)b->n);
        const bool down = schedule() == ORDER_DESCENDING ||
                          (schedule() == ORDER_ALTERNATE && (b->linear & 1));
        for (int t = 0; t < b->n; ++t) b->order[(size_t)t] = down ? b->n - 1 - t : t;
        b->pos = 0;
        start_on_new_worker(b, b->order[0]);
    }
    while (sem_wait(&b->done) != 0 && errno == EINTR) {
    }
    cur = nullptr;
}

void run_launch(const pk_emu::launch &l)
{
    ++stats.launches;
    for (const auto &p : l.pointers)
        if (p.second != nullptr && !is_device(p.second, 0)) {
            record_fault("kernel argument %d (%p) is not device memory (grid %u x %u x %u, block "
                         "%u x %u x %u)",
                         p.first, p.second, l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y,
                         l.block.z);
            return;
        }
    const int n = (int)(l.block.x * l.block.y * l.block.z);
    static bool first = true;
    if (first) {
        first = false;
        /* Serial schedules run one thread at a time: on one CPU (the workers inherit it from
         * this thread) a hand-over costs a third of one between CPUs. */
        const int cpu = sched_getcpu();
        if (schedule() != ORDER_FREE && cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        }
    }
    /* dynamic shared memory: a guarded buffer, refilled with 0xff for every block */
    /* (with none, the pointer is the guard page: any access faults) */
    allocation dyn = {nullptr, 0, 0};
    void *dyn_user = guarded_map(l.dyn_shared, &dyn);
    if (!dyn_user) {
        record_fault("out of host memory for %zu bytes of dynamic shared memory", l.dyn_shared);
        return;
    }
    block_run b;
    b.l = &l;
    b.n = n;
    b.dyn = dyn_user;
    sem_init(&b.done, 0, 0);
    b.generation = 0;
    for (unsigned z = 0; z < l.grid.z && sticky == cudaSuccess; ++z)
        for (unsigned y = 0; y < l.grid.y && sticky == cudaSuccess; ++y)
            for (unsigned x = 0; x < l.grid.x && sticky == cudaSuccess; ++x) {
                b.bidx = {x, y, z};
                b.linear = ((unsigned long long)z * l.grid.y + y) * l.grid.x + x;
                if (l.dyn_shared) memset(dyn_user, 0xff, l.dyn_shared);
                run_block(&b);
                ++stats.blocks;
                stats.threads += (unsigned long long)n;
            }
    sem_destroy(&b.done);
    munmap(dyn.map, dyn.map_len);
}

const char *error_name(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoKernelImageForDevice: return "cudaErrorNoKernelImageForDevice";
    case cudaErrorUnsupportedPtxVersion: return "cudaErrorUnsupportedPtxVersion";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    }
    return "cudaErrorUnknown";
}

const char *error_text(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "unknown error";
    }
}

/* Every call but the error queries starts here: a sticky error answers for it. */
#define PK_EMU_ENTER                                                                           \
    PK_EMU_API;                                                                                \
    if (sticky != cudaSuccess) return sticky

} // namespace

/* ---- the device side ------------------------------------------------------------------------ */
int pk_emu::occupancy(int block_threads)
{
    if (dev_blocks_per_sm > 0) return dev_blocks_per_sm;
    const int n = block_threads > 0 ? 2048 / block_threads : 1;
    return n < 1 ? 1 : n > 32 ? 32 : n;
}

void pk_emu::syncthreads(const char *file, int line)
{
    block_run *b = cur;
    const int i = my_thread;
    if (schedule() == ORDER_FREE) {
        std::unique_lock<std::mutex> g(b->m);
        b->state[(size_t)i] = T_BARRIER;
        b->file[(size_t)i] = file;
        b->line[(size_t)i] = line;
        if (++b->arrived == b->live) {
            std::vector<int> at;
            for (int t = 0; t < b->n; ++t)
                if (b->state[(size_t)t] == T_BARRIER) at.push_back(t);
            check_sites(b, at);
            for (int t : at) b->state[(size_t)t] = T_RUNNING;
            b->arrived = 0;
            ++b->generation;
            __atomic_add_fetch(&stats.barriers, 1, __ATOMIC_RELAXED);
            b->cv.notify_all();
        } else {
            const unsigned long long gen = b->generation;
            b->cv.wait(g, [b, gen] { return b->generation != gen; });
        }
        return;
    }
    worker *w = b->owner[(size_t)i];
    b->state[(size_t)i] = T_BARRIER;
    b->file[(size_t)i] = file;
    b->line[(size_t)i] = line;
    pass_baton(b, w, false);
    while (sem_wait(&w->go) != 0 && errno == EINTR) {
    }
    my_thread = i; /* (unchanged: this worker kept the thread) */
}

void *pk_emu::dynamic_shared(void) { return cur ? cur->dyn : nullptr; }

cudaError_t pk_emu::enqueue_launch(cudaStream_t st, std::shared_ptr<launch> l)
{
    PK_EMU_ENTER;
    const dim3 g = l->grid, b = l->block;
    const unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (b.x < 1 || b.y < 1 || b.z < 1 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024 ||
        g.x < 1 || g.y < 1 || g.z < 1 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
        return misused(cudaErrorInvalidConfiguration,
                       "launch of grid %u x %u x %u, block %u x %u x %u", g.x, g.y, g.z, b.x, b.y,
                       b.z);
    if (l->dyn_shared > 48 * 1024)
        return misused(cudaErrorInvalidConfiguration,
                       "launch with %zu bytes of dynamic shared memory (48 KiB without opt-in)",
                       l->dyn_shared);
    if (!valid_stream(st))
        return misused(cudaErrorInvalidResourceHandle, "launch on a dead stream");
    enqueue(st, [l]() { run_launch(*l); });
    return cudaSuccess;
}

cudaError_t pk_emu::exclusive_sum(const unsigned *in, unsigned *out, int n, cudaStream_t st)
{
    PK_EMU_ENTER;
    if (n < 0 || !is_device(in, (size_t)n * 4) || !is_device(out, (size_t)n * 4))
        return misused(cudaErrorInvalidValue, "exclusive sum of %d elements outside device memory",
                       n);
    enqueue(st, [in, out, n]() {
        unsigned s = 0;
        for (int i = 0; i < n; ++i) {
            const unsigned v = in[i];
            out[i] = s;
            s += v;
        }
    });
    return cudaSuccess;
}

/* ---- cuFFT -------------------------------------------------------------------------------- */
namespace {
struct fft_plan {
    int rows, cols, type;
};
std::map<int, fft_plan> fft_plans;
int fft_next = 1;

/* t[k] = e^{sign 2 pi i k / n}, k < n. */
void twiddles(int n, int sign, std::vector<double> &re, std::vector<double> &im)
{
    re.resize((size_t)n);
    im.resize((size_t)n);
    for (int k = 0; k < n; ++k) {
        const double a = sign * 2.0 * 3.14159265358979323846 * k / n;
        re[(size_t)k] = cos(a);
        im[(size_t)k] = sin(a);
    }
}
} // namespace

int pk_emu_cufft_plan2d(int *plan, int nx, int ny, int type)
{
    PK_EMU_API;
    if (nx < 2 || ny < 2) return 8;                  /* CUFFT_INVALID_SIZE */
    if (type != 0x2a && type != 0x2c && type != 0x29) return 3; /* CUFFT_INVALID_TYPE */
    if (sticky != cudaSuccess) return 5;             /* CUFFT_INTERNAL_ERROR */
    *plan = fft_next++;
    fft_plans[*plan] = {nx, ny, type};
    return 0;
}

int pk_emu_cufft_destroy(int plan)
{
    PK_EMU_API;
    return fft_plans.erase(plan) ? 0 : 1; /* CUFFT_INVALID_PLAN */
}

int pk_emu_cufft_exec_r2c(int plan, float *in, float2 *out)
{
    PK_EMU_API;
    auto it = fft_plans.find(plan);
    if (it == fft_plans.end() || it->second.type != 0x2a) return 1;
    const int P = it->second.rows, Q = it->second.cols, H = Q / 2 + 1;
    if (!is_device(in, (size_t)P * Q * 4) || !is_device(out, (size_t)P * H * 8)) return 4;
    enqueue(0, [=]() {
        std::vector<double> cr, ci, rr, ri, tr, ti;
        twiddles(Q, -1, cr, ci);
        twiddles(P, -1, rr, ri);
        tr.assign((size_t)P * H, 0.0);
        ti.assign((size_t)P * H, 0.0);
        for (int p = 0; p < P; ++p) /* rows: real -> the H non-redundant frequencies */
            for (int k = 0; k < H; ++k) {
                double sr = 0, si = 0;
                for (int q = 0; q < Q; ++q) {
                    const size_t t = (size_t)k * q % (size_t)Q;
                    sr += (double)in[(size_t)p * Q + q] * cr[t];
                    si += (double)in[(size_t)p * Q + q] * ci[t];
                }
                tr[(size_t)p * H + k] = sr;
                ti[(size_t)p * H + k] = si;
            }
        for (int k = 0; k < H; ++k) /* columns */
            for (int u = 0; u < P; ++u) {
                double sr = 0, si = 0;
                for (int p = 0; p < P; ++p) {
                    const size_t t = (size_t)u * p % (size_t)P;
                    const double a = tr[(size_t)p * H + k], b = ti[(size_t)p * H + k];
                    sr += a * rr[t] - b * ri[t];
                    si += a * ri[t] + b * rr[t];
                }
                out[(size_t)u * H + k] = make_float2((float)sr, (float)si);
            }
    });
    return 0;
}

int pk_emu_cufft_exec_c2r(int plan, float2 *in, float *out)
{
    PK_EMU_API;
    auto it = fft_plans.find(plan);
    if (it == fft_plans.end() || it->second.type != 0x2c) return 1;
    const int P = it->second.rows, Q = it->second.cols, H = Q / 2 + 1;
    if (!is_device(in, (size_t)P * H * 8) || !is_device(out, (size_t)P * Q * 4)) return 4;
    enqueue(0, [=]() {
        std::vector<double> cr, ci, rr, ri, tr, ti;
        twiddles(Q, 1, cr, ci);
        twiddles(P, 1, rr, ri);
        tr.assign((size_t)P * H, 0.0);
        ti.assign((size_t)P * H, 0.0);
        for (int k = 0; k < H; ++k) /* columns, inverse */
            for (int p = 0; p < P; ++p) {
                double sr = 0, si = 0;
                for (int u = 0; u < P; ++u) {
                    const size_t t = (size_t)u * p % (size_t)P;
                    const double a = in[(size_t)u * H + k].x, b = in[(size_t)u * H + k].y;
                    sr += a * rr[t] - b * ri[t];
                    si += a * ri[t] + b * rr[t];
                }
                tr[(size_t)p * H + k] = sr;
                ti[(size_t)p * H + k] = si;
            }
        for (int p = 0; p < P; ++p) /* rows: the Hermitian half spectrum -> real */
            for (int q = 0; q < Q; ++q) {
                double s = 0;
                for (int k = 0; k < Q; ++k) {
                    /* X[k] for k >= H is conj(X[Q - k]) */
                    const int kk = k < H ? k : Q - k;
                    const double a = tr[(size_t)p * H + kk];
                    const double b = k < H ? ti[(size_t)p * H + kk] : -ti[(size_t)p * H + kk];
                    const size_t t = (size_t)k * q % (size_t)Q;
                    s += a * cr[t] - b * ci[t];
                }
                out[(size_t)p * Q + q] = (float)s;
            }
        memset(in, 0xff, (size_t)P * H * 8);
    });
    return 0;
}

int pk_emu_cufft_exec_c2c(int plan, float2 *in, float2 *out, int direction)
{
    PK_EMU_API;
    auto it = fft_plans.find(plan);
    if (it == fft_plans.end() || it->second.type != 0x29) return 1;
    if (direction != -1 && direction != 1) return 4;
    const int P = it->second.rows, Q = it->second.cols;
    if (!is_device(in, (size_t)P * Q * 8) || !is_device(out, (size_t)P * Q * 8)) return 4;
    enqueue(0, [=]() {
        std::vector<double> cr, ci, rr, ri, tr, ti;
        twiddles(Q, direction, cr, ci);
        twiddles(P, direction, rr, ri);
        tr.assign((size_t)P * Q, 0.0);
        ti.assign((size_t)P * Q, 0.0);
        for (int p = 0; p < P; ++p) /* rows */
            for (int k = 0; k < Q; ++k) {
                double sr = 0, si = 0;
                for (int q = 0; q < Q; ++q) {
                    const size_t t = (size_t)k * q % (size_t)Q;
                    const double a = in[(size_t)p * Q + q].x, b = in[(size_t)p * Q + q].y;
                    sr += a * cr[t] - b * ci[t];
                    si += a * ci[t] + b * cr[t];
                }
                tr[(size_t)p * Q + k] = sr;
                ti[(size_t)p * Q + k] = si;
            }
        for (int k = 0; k < Q; ++k) /* columns */
            for (int u = 0; u < P; ++u) {
                double sr = 0, si = 0;
                for (int p = 0; p < P; ++p) {
                    const size_t t = (size_t)u * p % (size_t)P;
                    const double a = tr[(size_t)p * Q + k], b = ti[(size_t)p * Q + k];
                    sr += a * rr[t] - b * ri[t];
                    si += a * ri[t] + b * rr[t];
                }
                out[(size_t)u * Q + k] = make_float2((float)sr, (float)si);
            }
    });
    return 0;
}

/* ---- the runtime API ------------------------------------------------------------------------ */
const char *cudaGetErrorName(cudaError_t e) { return error_name(e); }

const char *cudaGetErrorString(cudaError_t e)
{
    PK_EMU_API;
    static std::string text;
    text = error_text(e);
    if (e == cudaErrorLaunchFailure && !fault.empty())
        text += " (emulation: " + fault + ")";
    else if (e != cudaSuccess && e == misuse_code)
        text += " (emulation: " + misuse + ")";
    return text.c_str();
}

cudaError_t cudaGetLastError(void)
{
    PK_EMU_API;
    if (sticky != cudaSuccess) return sticky;
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    PK_EMU_API;
    return sticky != cudaSuccess ? sticky : last_error;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    PK_EMU_ENTER;
    return device == 0 ? cudaSuccess : misused(cudaErrorInvalidDevice, "device %d", device);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device)
{
    PK_EMU_ENTER;
    if (device != 0) return misused(cudaErrorInvalidDevice, "device %d", device);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CUDA emulation (host threads, cuda/emulate.h)");
    p->totalGlobalMem = dev_mem;
    p->sharedMemPerBlock = 48 * 1024;
    p->sharedMemPerBlockOptin = 227 * 1024;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = dev_sms;
    p->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int device)
{
    PK_EMU_ENTER;
    if (device != 0) return misused(cudaErrorInvalidDevice, "device %d", device);
    if (attr != cudaDevAttrMultiProcessorCount)
        return misused(cudaErrorInvalidValue, "device attribute %d", (int)attr);
    *v = dev_sms;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    PK_EMU_ENTER;
    drain_all();
    return sticky;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    PK_EMU_ENTER;
    if (fail_malloc_in > 0 && --fail_malloc_in == 0) {
        last_error = cudaErrorMemoryAllocation;
        return cudaErrorMemoryAllocation;
    }
    if (bytes > dev_mem - bytes_in_use) {
        last_error = cudaErrorMemoryAllocation;
        return cudaErrorMemoryAllocation;
    }
    if (bytes == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    allocation a;
    void *u = guarded_map(bytes, &a);
    if (!u) {
        last_error = cudaErrorMemoryAllocation;
        return cudaErrorMemoryAllocation;
    }
    allocs[(uintptr_t)u] = a;
    bytes_in_use += bytes;
    *p = u;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    PK_EMU_ENTER;
    if (p == nullptr) return cudaSuccess;
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end())
        return misused(cudaErrorInvalidValue, "cudaFree(%p): not an allocation", p);
    drain_all(); /* cudaFree synchronises with the device */
    if (sticky != cudaSuccess) return sticky;
    bytes_in_use -= it->second.bytes;
    munmap(it->second.map, it->second.map_len);
    allocs.erase(it);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    PK_EMU_ENTER;
    if (flags & ~0x0fu) return misused(cudaErrorInvalidValue, "cudaHostAlloc flags %#x", flags);
    if (fail_host_alloc_in > 0 && --fail_host_alloc_in == 0) {
        last_error = cudaErrorMemoryAllocation;
        return cudaErrorMemoryAllocation;
    }
    if (bytes == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    allocation a;
    void *u = guarded_map(bytes, &a);
    if (!u) {
        last_error = cudaErrorMemoryAllocation;
        return cudaErrorMemoryAllocation;
    }
    pinned[(uintptr_t)u] = a;
    *p = u;
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }

cudaError_t cudaFreeHost(void *p)
{
    PK_EMU_ENTER;
    if (p == nullptr) return cudaSuccess;
    auto it = pinned.find((uintptr_t)p);
    if (it == pinned.end())
        return misused(cudaErrorInvalidValue, "cudaFreeHost(%p): not a pinned allocation", p);
    drain_all(); /* cudaFreeHost synchronises with the device */
    if (sticky != cudaSuccess) return sticky;
    munmap(it->second.map, it->second.map_len);
    pinned.erase(it);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p)
{
    PK_EMU_ENTER;
    if (a == nullptr) return misused(cudaErrorInvalidValue, "cudaPointerGetAttributes(NULL)");
    memset(a, 0, sizeof *a);
    a->device = -1;
    /* the byte at p (one past an allocation's end is not in it, as in CUDA) */
    if (is_device(p, 1)) {
        a->type = cudaMemoryTypeDevice;
        a->device = 0;
        a->devicePointer = const_cast<void *>(p);
    } else if (is_pinned(p, 1)) {
        a->type = cudaMemoryTypeHost;
        a->device = 0;
        a->devicePointer = a->hostPointer = const_cast<void *>(p);
    } else {
        a->type = cudaMemoryTypeUnregistered; /* as runtimes since 11.0 answer, successfully */
        a->hostPointer = const_cast<void *>(p);
    }
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    PK_EMU_ENTER;
    *free_bytes = dev_mem - bytes_in_use;
    *total_bytes = dev_mem;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t st)
{
    PK_EMU_ENTER;
    if (bytes == 0) return cudaSuccess;
    if (!is_device(p, bytes))
        return misused(cudaErrorInvalidValue, "cudaMemset(%p, %zu bytes) outside device memory",
                       p, bytes);
    if (!valid_stream(st))
        return misused(cudaErrorInvalidResourceHandle, "memset on a dead stream");
    enqueue(st, [p, value, bytes]() { memset(p, value, bytes); });
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    return cudaMemsetAsync(p, value, bytes, 0);
}

namespace {
/* Check a 2-D copy's ends against its kind (cudaMemcpyDefault: replaced by the direction
 * the pointers give); the first and last byte of each row lie in
 * [p, p + (height - 1) pitch + width). */
cudaError_t check_copy(const char *what, void *dst, size_t dspan, const void *src, size_t sspan,
                       cudaMemcpyKind &kind)
{
    if (kind == cudaMemcpyDefault) {
        const bool dd = is_device(dst, 0), sd = is_device(src, 0);
        if (!dd && !sd)
            return misused(cudaErrorInvalidMemcpyDirection,
                           "%s: cudaMemcpyDefault between host pointers (not emulated)", what);
        kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                  : cudaMemcpyDeviceToHost;
    }
    const bool d_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool s_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
        kind != cudaMemcpyDeviceToDevice)
        return misused(cudaErrorInvalidMemcpyDirection, "%s: copy kind %d", what, (int)kind);
    if (d_dev ? !is_device(dst, dspan) : is_device(dst, 0))
        return misused(cudaErrorInvalidValue, "%s: destination %p (%zu bytes) is %s device memory",
                       what, dst, dspan, d_dev ? "not (all)" : "");
    if (s_dev ? !is_device(src, sspan) : is_device(src, 0))
        return misused(cudaErrorInvalidValue, "%s: source %p (%zu bytes) is %s device memory",
                       what, src, sspan, s_dev ? "not (all)" : "");
    if (!d_dev && is_pinned(dst, 0) && !is_pinned(dst, dspan))
        return misused(cudaErrorInvalidValue,
                       "%s: destination %p (%zu bytes) runs past its pinned allocation", what, dst,
                       dspan);
    if (!s_dev && is_pinned(src, 0) && !is_pinned(src, sspan))
        return misused(cudaErrorInvalidValue,
                       "%s: source %p (%zu bytes) runs past its pinned allocation", what, src,
                       sspan);
    return cudaSuccess;
}

/* A copy of rows, queued on st; from pageable host memory the source is read now (it is
 * staged), to pageable memory the call returns when the data is there, as CUDA's
 * asynchronous copies from and to pageable memory behave.  Pinned memory is read or
 * written when the copy runs (DMA). */
cudaError_t copy2d(const char *what, void *dst, size_t dpitch, const void *src, size_t spitch,
                   size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t st, bool sync)
{
    if (width == 0 || height == 0) return cudaSuccess;
    if (dpitch < width || spitch < width)
        return misused(cudaErrorInvalidValue, "%s: pitch smaller than the width", what);
    const size_t dspan = (height - 1) * dpitch + width, sspan = (height - 1) * spitch + width;
    cudaError_t e = check_copy(what, dst, dspan, src, sspan, kind);
    if (e != cudaSuccess) return e;
    if (!valid_stream(st))
        return misused(cudaErrorInvalidResourceHandle, "%s on a dead stream", what);
    const bool pinned_src = kind == cudaMemcpyHostToDevice && is_pinned(src, 0);
    const bool pinned_dst = kind == cudaMemcpyDeviceToHost && is_pinned(dst, 0);
    if (kind == cudaMemcpyHostToDevice && !pinned_src) {
        auto staged = std::make_shared<std::vector<char>>(width * height);
        for (size_t r = 0; r < height; ++r)
            memcpy(staged->data() + r * width, (const char *)src + r * spitch, width);
        enqueue(st, [=]() {
            for (size_t r = 0; r < height; ++r)
                memcpy((char *)dst + r * dpitch, staged->data() + r * width, width);
        });
    } else {
        enqueue(st, [=]() {
            for (size_t r = 0; r < height; ++r)
                memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
        });
    }
    if (sync || (kind == cudaMemcpyDeviceToHost && !pinned_dst)) finish(st);
    return sticky;
}
} // namespace

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    PK_EMU_ENTER;
    return copy2d("cudaMemcpy", dst, bytes, src, bytes, bytes, 1, kind, 0, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t st)
{
    PK_EMU_ENTER;
    return copy2d("cudaMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, st, false);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t st)
{
    PK_EMU_ENTER;
    return copy2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, st, false);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned flags)
{
    PK_EMU_ENTER;
    pk_emu_stream *s = new pk_emu_stream;
    s->blocking = !(flags & cudaStreamNonBlocking);
    streams.insert(s);
    *st = s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t st)
{
    PK_EMU_ENTER;
    if (st == nullptr || !streams.count(st))
        return misused(cudaErrorInvalidResourceHandle, "cudaStreamDestroy(%p)", (void *)st);
    drain(st); /* its queued work still completes */
    streams.erase(st);
    dead_streams.push_back(st);
    return sticky;
}

cudaError_t cudaStreamSynchronize(cudaStream_t st)
{
    PK_EMU_ENTER;
    if (!valid_stream(st)) return misused(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize");
    finish(st);
    return sticky;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned flags)
{
    PK_EMU_ENTER;
    if (!valid_stream(st) || ev == nullptr || flags != 0)
        return misused(cudaErrorInvalidValue, "cudaStreamWaitEvent");
    if (!ev->recorded) return cudaSuccess; /* nothing to wait for */
    pk_emu_stream *o = ev->st;
    const long long upto = ev->pos;
    enqueue(st, [o, upto]() { drain_to(o, upto); });
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *ev) { return cudaEventCreateWithFlags(ev, 0); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags)
{
    PK_EMU_ENTER;
    if (flags & ~(unsigned)cudaEventDisableTiming)
        return misused(cudaErrorInvalidValue, "cudaEventCreateWithFlags flags %#x", flags);
    *ev = new pk_emu_event;
    (*ev)->timing = !(flags & cudaEventDisableTiming);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    PK_EMU_ENTER;
    if (ev == nullptr) return misused(cudaErrorInvalidResourceHandle, "cudaEventDestroy(NULL)");
    /* a marker still queued refers to it: let it complete first */
    if (ev->recorded && !ev->completed) drain_to(ev->st, ev->pos);
    delete ev;
    return sticky;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st)
{
    PK_EMU_ENTER;
    if (ev == nullptr || !valid_stream(st))
        return misused(cudaErrorInvalidResourceHandle, "cudaEventRecord");
    const unsigned long long gen = ++ev->gen;
    ev->recorded = true;
    ev->completed = false;
    ev->st = S(st);
    enqueue(st, [ev, gen]() {
        if (ev->gen == gen) {
            ev->t = now_s();
            ev->completed = true;
        }
    });
    ev->pos = ev->st->issued;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    PK_EMU_ENTER;
    if (ev == nullptr) return misused(cudaErrorInvalidResourceHandle, "cudaEventSynchronize");
    if (ev->recorded) drain_to(ev->st, ev->pos);
    return sticky;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    PK_EMU_ENTER;
    if (!start || !end || !start->recorded || !end->recorded)
        return misused(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event never "
                                                       "recorded");
    if (!start->timing || !end->timing)
        return misused(cudaErrorInvalidResourceHandle,
                       "cudaEventElapsedTime: an event created with cudaEventDisableTiming");
    if (!start->completed || !end->completed) {
        last_error = cudaErrorNotReady;
        return cudaErrorNotReady;
    }
    *ms = (float)((end->t - start->t) * 1e3);
    return cudaSuccess;
}

/* ---- the controls ------------------------------------------------------------------------ */
void pk_emu_set_device(int sms, int blocks_per_sm, size_t mem_bytes)
{
    PK_EMU_API;
    dev_sms = sms > 0 ? sms : 1;
    dev_blocks_per_sm = blocks_per_sm;
    dev_mem = mem_bytes;
}

void pk_emu_fail_malloc(long nth)
{
    PK_EMU_API;
    fail_malloc_in = nth > 0 ? nth : 0;
}

void pk_emu_fail_host_alloc(long nth)
{
    PK_EMU_API;
    fail_host_alloc_in = nth > 0 ? nth : 0;
}

long pk_emu_allocations(void)
{
    PK_EMU_API;
    return (long)allocs.size();
}

long pk_emu_host_allocations(void)
{
    PK_EMU_API;
    return (long)pinned.size();
}

size_t pk_emu_bytes_in_use(void)
{
    PK_EMU_API;
    return bytes_in_use;
}

const char *pk_emu_fault(void)
{
    PK_EMU_API;
    return fault.c_str();
}

void pk_emu_reset(void)
{
    PK_EMU_API;
    /* work queued before the reset is dropped, as a reset device drops it */
    sticky = cudaErrorLaunchFailure;
    drain_all();
    sticky = cudaSuccess;
    fault.clear();
    misuse.clear();
    misuse_code = cudaSuccess;
    last_error = cudaSuccess;
}

/* The C tests' device arrays: the runtime's own calls (not PK_EMU_API: they take the lock). */
void *pk_emu_device_array(const void *host, size_t bytes)
{
    void *d = nullptr;
    if (cudaMalloc(&d, bytes) != cudaSuccess) return nullptr;
    if (host && cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        (void)cudaFree(d);
        return nullptr;
    }
    return d;
}

int pk_emu_device_read(void *host, const void *dev, size_t bytes)
{
    return cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}

void pk_emu_device_free(void *dev) { (void)cudaFree(dev); }

void pk_emu_get_stats(pk_emu_stats *s)
{
    PK_EMU_API;
    *s = stats;
}
