/* internal.h - what the library's parts share and users never see.
 *
 * A backend is one table of functions (pk_backend_ops), filled by the backend in its own
 * directory (lib/backend_serial.c, omp/, cl/, cuda/).  A public kernel call validates its
 * arguments once (lib/<kernel>.c), chooses a backend through the context, and calls through
 * the table.  Backend state (devices, queues, program caches) hangs off the context.
 */
#ifndef PK_INTERNAL_H
#define PK_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "portkern.h"

#include <stdarg.h>
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PK_PRINTF(a, b)
#endif

/* Hand-vectorised x86 paths: GCC >= 6 or clang >= 5 (target attributes with AVX-512
 * intrinsics and vector extensions).  PK_T512 / PK_T256: the targets of such kernels; the
 * file includes <immintrin.h> itself; pk_cpu_simd() says which the CPU runs. */
#if (defined(__x86_64__) || defined(__i386__)) &&                                            \
    ((defined(__clang__) && __clang_major__ >= 5) ||                                         \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define PK_X86 1
#define PK_T512 __attribute__((target("avx512f")))
#define PK_T256 __attribute__((target("avx2,fma")))
#endif

/* Hot loops: an AVX2+FMA clone picked at load time (ifunc), baseline otherwise.  256-bit
 * vectors: the compiler's 512-bit loops were no faster on the stencils here (Zen 4 splits
 * 512-bit ops; unaligned 64-byte loads split a line every time) and leave longer scalar
 * remainders per row.  Where AVX-512 pays, it is written by hand (PK_T512: diffusion3d's
 * row, which loads its centre row once; grid's and degrid's omp-tiled rows, whose remainders
 * are masked). */
#if defined(PK_HAVE_TARGET_CLONES) && (defined(__x86_64__) || defined(__i386__))
#define PK_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PK_SIMD_CLONES
#endif

/* ---- errors --------------------------------------------------------------------------- */
/** Record the detail for pk_last_error() on this thread and return `status`. */
pk_status pk_fail(pk_status status, const char *fmt, ...) PK_PRINTF(2, 3);
/** Clear the thread's detail string (called at the start of public entry points). */
void pk_clear_error(void);

/* Argument checks that name the failing condition (PoCL's pocl_debug.h is the model). */
#define PK_CHECK(cond, status, ...)                                                           \
    do {                                                                                      \
        if (!(cond)) return pk_fail((status), __VA_ARGS__);                                   \
    } while (0)
#define PK_CHECK_NULL(ptr)                                                                    \
    PK_CHECK((ptr) != NULL, PK_ENULL, "%s: must not be NULL", #ptr)
#define PK_TRY(expr)                                                                          \
    do {                                                                                      \
        pk_status pk_try_s_ = (expr);                                                         \
        if (pk_try_s_ != PK_OK) return pk_try_s_;                                             \
    } while (0)

/* ---- small utilities ------------------------------------------------------------------ */
double pk_now(void); /* monotonic seconds */
/** a*b*c with overflow detection: returns 0 and sets *out on success, -1 on overflow. */
int pk_mul3_size(size_t a, size_t b, size_t c, size_t *out);
/** 64-byte aligned allocation (free with pk_free_aligned); NULL on failure.  From 4 MiB on:
 *  2 MiB aligned and advised for transparent huge pages. */
void *pk_alloc_aligned(size_t bytes);
void pk_free_aligned(void *p);
/** 64-byte aligned (2 MiB on Linux), `bytes` of zeros whose pages are not touched: on Linux
 *  fresh anonymous pages, which fault in (zeroed by the kernel) only where first written, so
 *  a large buffer of which a call uses a part costs only that part.  NULL on failure; free
 *  with pk_free_zeroed(p, bytes). */
void *pk_alloc_zeroed(size_t bytes);
void pk_free_zeroed(void *p, size_t bytes);
/** From 4 MiB on: advise the whole 2 MiB pages inside [p, p + bytes) for transparent huge
 *  pages (advice only; errors ignored).  Pages not yet touched then fault 2 MiB at a time:
 *  a fresh 17 MB output took 4,300 faults and ~5 ms to first-touch, ~1 ms advised. */
void pk_advise_huge(void *p, size_t bytes);
/** memcpy by a team of nt threads (nt <= 1, or under 4 MiB: one), each an equal contiguous
 *  share: a host plan's upload places each page with the thread that sweeps it (first touch
 *  of a fresh buffer, NUMA) and pays its page faults in parallel. */
void pk_copy_threads(void *dst, const void *src, size_t bytes, int nt);
/* A work array kept between calls (the layout staging of one-shot calls and plans): grown
 * when a call needs more, so a repeated call of the same shape allocates and faults nothing. */
typedef struct pk_scratch {
    void *p;
    size_t bytes;
} pk_scratch;
/** At least `bytes` (64-byte aligned, huge-page advised when large) in s; NULL when out of
 *  memory (s is then empty; the caller names what it wanted). */
void *pk_scratch_get(pk_scratch *s, size_t bytes);
void pk_scratch_free(pk_scratch *s);
/** A loop over [0, n) split into nt contiguous shares of whole grains (the last may end at n
 *  inside one), fn(arg, lo, hi) once per thread; nt 0: OpenMP's default team.  One call on
 *  [0, n) when nt is 1 or `bytes` (what the loop reads plus writes) is under 4 MiB (or
 *  PORTKERN_TEST_PARALLEL_BYTES, a test hook).  The layout conversions use it: shares of
 *  whole grains (a vector block, a cache line of every row) never write the same line. */
typedef void (*pk_range_fn)(void *arg, size_t lo, size_t hi);
void pk_parallel_range(size_t n, size_t grain, size_t bytes, int nt, pk_range_fn fn, void *arg);
/* The calling thread's number in its OpenMP team and the team's size: 0 and 1 outside a
 * parallel region or without OpenMP (tested on _OPENMP, not PK_HAVE_OPENMP: the .cu files
 * include this header without -fopenmp).  The number also indexes per-thread scratch. */
static inline int pk_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static inline int pk_team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}
/** Where thread t's contiguous share of n items starts among nt threads; it ends where
 *  t + 1's starts: [n t / nt, n (t + 1) / nt), rounded down.  The row bands of the OpenMP
 *  kernels and of the first touch and copies that place their pages: one formula, so those
 *  cannot drift apart.  (pk_parallel_range and pk_s3_share split whole grains instead.) */
static inline size_t pk_share_lo(size_t n, int t, int nt)
{
    return n * (size_t)t / (size_t)nt;
}
/** Transpose an r x c matrix of doubles: dst[j ds + i] = src[i ss + j] (row strides ss and
 *  ds in doubles; src and dst apart).  AVX2 4 x 4 blocks where the CPU has them: the
 *  layout conversions (su3 hvfo, dslash omp-vnode) are transposes of a few sites' doubles. */
void pk_transpose_f64(const double *src, size_t ss, double *dst, size_t ds, size_t r, size_t c);
/** Copy `bytes` from src to dst with non-temporal stores where dst allows (16-byte aligned
 *  body; plain stores for the head and tail): for output that is not read again soon, so
 *  that its lines are not read for ownership first (a third less traffic for a copy).  The
 *  stores are weakly ordered: call pk_stream_fence() before another thread reads them. */
void pk_stream_copy(void *dst, const void *src, size_t bytes);
void pk_stream_fence(void);
/** The team pk_parallel_range(..., nt, ...) starts: nt, OpenMP's default for 0, 1 without
 *  OpenMP (to size per-thread scratch). */
int pk_host_threads(int nt);
/** Run fn(arg) under the library's one FFTW planner lock, with FFTW's threads set to nt
 *  (PK_HAVE_FFTW builds only): every fftwf plan is made inside it; the process's first call
 *  reads the FFTW wisdom of the cache directory, and a call whose plans added wisdom
 *  rewrites that file (lib/fftw_planner.c). */
void pk_fftwf_planner(int nt, void (*fn)(void *arg), void *arg);
/** The same lock for fn destroying plans (no wisdom to keep). */
void pk_fftwf_unplan(void (*fn)(void *arg), void *arg);
/** Copy at most len-1 bytes and terminate. */
void pk_strlcpy(char *dst, const char *src, size_t len);
/** Append to a bounded string, separated by "; " when it is not empty. */
void pk_append_note(char *dst, size_t len, const char *fmt, ...) PK_PRINTF(3, 4);
/* Writing a file whole or not at all (lib/npy.c): pk_file_begin creates a temporary beside
 * path (refusing a path that exists and is no regular file); the caller writes through
 * t->fd, or closes nothing and reopens t->tmp by name; pk_file_commit(t, ok, errno of the
 * failure) fsyncs and closes the descriptor, then renames the temporary into place when ok,
 * else removes it: path is then the old file or the whole new one. */
typedef struct pk_file_tmp {
    const char *path, *shown; /* shown: path fit for a message */
    char *tmp;
    int fd;
    char shown_buf[256];
} pk_file_tmp;
pk_status pk_file_begin(const char *path, pk_file_tmp *t);
pk_status pk_file_commit(pk_file_tmp *t, int ok, int err);
/** Environment variable, or NULL when unset or empty. */
const char *pk_getenv(const char *name);
/** The library's cache directory (OpenCL binaries and device census, FFTW wisdom):
 *  $PORTKERN_CACHE_DIR, else $XDG_CACHE_HOME/portkern, else $HOME/.cache/portkern, else
 *  /tmp/portkern-<uid> (*check_owner 1: it must then be the user's own and not writable by
 *  others, pk_cache_dir_private); "off" (or PORTKERN_CACHE=0) disables the cache.  1 with
 *  dir set; 0 when off or when it does not fit. */
int pk_cache_dir(char *dir, size_t len, int *check_owner);
int pk_cache_dir_private(const char *dir, int check_owner);
/** mkdir -p with mode 0700; 0 when dir is a directory afterwards, else -1. */
int pk_mkdir_p(const char *dir);
/** One process-wide lock around what the drivers do not make thread-safe on first use:
 *  every backend's init (PoCL's first device queries crash or fail when they come from
 *  several threads at once) and the creation of device contexts.  Never held across a
 *  kernel run; not recursive. */
void pk_driver_lock(void);
void pk_driver_unlock(void);

/* ---- tuning parameters (lib/tuning.c: the one table; lib/portkern.h, pk_param_*) ------- */
/* Ids index the table; a backend reads one through its desc's `tuning` at plan creation. */
typedef enum pk_param_id {
    PK_PARAM_CONV2D_FFT_TAPS,
    PK_PARAM_CONV2D_CL_SCHEME,
    PK_PARAM_CONV2D_ISA,
    PK_PARAM_CONV2D_FFT_PLAN,
    PK_PARAM_DIFFUSION3D_CL_SCHEME,
    PK_PARAM_DIFFUSION3D_TB_DEPTH,
    PK_PARAM_DIFFUSION3D_TB_ROWS,
    PK_PARAM_DIFFUSION3D_ISA,
    PK_PARAM_DSLASH_ISA,
    PK_PARAM_GRID_CUDA_BLOCKS,
    PK_PARAM_GRID_TILE_SIZE,
    PK_PARAM_GRID_CENTRAL_RADIUS,
    PK_PARAM_GRID_TILE_FACTOR,
    PK_PARAM_GRID_ISA,
    PK_PARAM_LAPLACE2D_ISA,
    PK_PARAM_LAPLACE2D_STREAM,
    PK_PARAM_LAPLACE2D_CL_SCHEME,
    PK_PARAM_LAPLACE2D_TB_DEPTH,
    PK_PARAM_MAGICFILTER3D_ISA,
    PK_PARAM_MAGICFILTER3D_CL_SCHEME,
    PK_PARAM_OPENMP_THREADS,
    PK_PARAM_SU3_ISA,
    PK_PARAM_SU3_STREAM,
    PK_PARAM_COUNT
} pk_param_id;

/* A context's values.  value[] is parsed: an integer, the index of a choice (0 is "auto"
 * where a parameter has it), or an integer pair. */
#define PK_PARAM_TEXT 40
typedef struct pk_tuning {
    unsigned char source[PK_PARAM_COUNT]; /* pk_param_source */
    unsigned char bad[PK_PARAM_COUNT];    /* an environment value that does not parse */
    int value[PK_PARAM_COUNT][2];
    char text[PK_PARAM_COUNT][PK_PARAM_TEXT];     /* as given (env or caller) */
    char env_text[PK_PARAM_COUNT][PK_PARAM_TEXT]; /* the environment's, for a reset */
    const char *env_name[PK_PARAM_COUNT];         /* the variable env_text came from */
} pk_tuning;

/** Defaults, then (read_env) the environment: the context's creation. */
void pk_tuning_init(pk_tuning *t, int read_env);
/** The value of parameter id into v[0] (v[1]: a pair's second); t NULL: the default.  A bad
 *  environment value is PK_EINVAL naming the variable, what it accepts and what it held. */
pk_status pk_param_get(const pk_tuning *t, pk_param_id id, int *v);
/** 1 when the value is not the default (someone chose it): reasons say so. */
int pk_param_chosen(const pk_tuning *t, pk_param_id id);
/** pk_context_set_param's part: parameter `name` to value (NULL: back to the environment's
 *  value, if it was read, or the default); PK_EINVAL naming it, what it accepts and value. */
pk_status pk_tuning_set(pk_tuning *t, const char *name, const char *value);
/** pk_context_get_param's part: the text and source of `name` (a bad environment value as
 *  given, with PK_EINVAL). */
pk_status pk_tuning_text(const pk_tuning *t, const char *name, char *buf, size_t len,
                         pk_param_source *source);

/** A wisdom entry's tuning text ("k.p=v;k.p=v", parameters of `kernel` and the backend-wide
 *  openmp.* ones only) onto t, a copy
 *  of the context's values: a parameter the caller or the environment set keeps its value
 *  (listed in kept), the others take the text's (listed in applied, ", "-separated).  An
 *  unknown name, one of another kernel or a value it does not accept: PK_EINVAL saying which
 *  (t is then half done: throw it away). */
pk_status pk_tuning_overlay(pk_tuning *t, const char *kernel, const char *text, char *applied,
                            size_t applied_len, char *kept, size_t kept_len);

/** openmp.threads: the host threads an OpenMP plan runs on when the context's own count
 *  (the caller's or PORTKERN_THREADS) is 0; 0: OpenMP's default (auto, or t NULL). */
int pk_tuning_threads(const pk_tuning *t, int context_threads);

/** SIMD levels of the hand-vectorised host kernels. */
enum { PK_SIMD_GENERIC = 0, PK_SIMD_AVX2 = 1, PK_SIMD_AVX512 = 2 };
/** The CPU's best level (lib/cpu.c): AVX512 with avx512f, AVX2 with avx2 and fma, else
 *  GENERIC (also without PK_X86; __builtin_cpu_supports also checks that the OS saves the
 *  registers). */
int pk_cpu_simd(void);
/** The level a kernel runs at: `cpu_level` (the CPU's best), lowered (never raised) by the
 *  ISA parameter id ("auto", "avx512" or "avx512f", "avx2", "generic").  A bad environment
 *  value is PK_EINVAL naming the variable, and *level is cpu_level. */
pk_status pk_simd_level(const pk_tuning *t, pk_param_id id, int cpu_level, int *level);
/** Test hook: the local / shared memory a device kernel may assume, `bytes` capped by
 *  PORTKERN_TEST_LOCAL_MEM_BYTES when that is a positive integer (tests run the tile choices
 *  of a 48 KiB NVIDIA device on PoCL's 4 MiB). */
uint64_t pk_test_local_mem_cap(uint64_t bytes);

/* ---- the host CPU --------------------------------------------------------------------- */
/** Fill info for the host CPU (name, vendor, logical CPUs, SMT, SIMD level, memory). */
void pk_cpu_info(pk_device_info *info);
/** The largest data or unified cache of the host's CPU 0 in bytes, as Linux's sysfs reports
 *  it (on the 2-core EPYC KVM: 32 MiB, where sysconf's _SC_LEVEL3_CACHE_SIZE says 384 MiB,
 *  the whole socket's); else sysconf's level-3 size; 0 when neither is known.
 *  PORTKERN_TEST_LLC_BYTES=N (a positive integer) stands in for it in tests. */
size_t pk_cpu_llc_bytes(void);
/** Whether `bytes` exceed the last-level cache (pk_cpu_llc_bytes; 32 MiB where it is not
 *  known): the size at which the host kernels stream their stores or avoid a conversion. */
int pk_beyond_llc(double bytes);
/** Physical-core id of each logical CPU (for the phalanx); returns the number of SMT
 *  threads per core (1 when unknown or absent). core_of[] has room for ncpu entries. */
int pk_cpu_topology(int ncpu, int *core_of);
/** Host copy bandwidth (bytes read + written per second), `threads` OpenMP threads
 *  (0: default, 1: serial). */
pk_status pk_host_bandwidth(int threads, size_t bytes, int reps, double *bps);
/** Host double-precision FMA throughput (flop/s: 2 per FMA lane), `threads` OpenMP threads
 *  (0: default, 1: serial): the widest FMA the CPU has, best of 5 runs of about 30 ms. */
pk_status pk_host_peak_flops(int threads, double *flops_per_second);
/** The same from two runs of about 2 ms (the cost model's, lib/cost.c). */
pk_status pk_host_peak_flops_quick(int threads, double *flops_per_second);

/* ---- diffusion3d, as a backend sees it ------------------------------------------------ */
typedef struct pk_d3_desc {
    int nx, ny, nz;
    float c[7];          /* cc, cw, ce, cs, cn, cb, ct (float, as the kernels use them) */
    int count;           /* steps of the call (the cost model's measure; plans ignore it) */
    const char *variant; /* resolved: one of the backend's names */
    int threads;         /* host threads (0: default) */
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
} pk_d3_desc;

enum { PK_D3_CC, PK_D3_CW, PK_D3_CE, PK_D3_CS, PK_D3_CN, PK_D3_CB, PK_D3_CT };

/* Serial reference steps on host buffers; f1 holds the input, *result points at the buffer
 * holding the result after `count` steps (f1 or f2).  threads: 1 one thread (the serial
 * backend), 0 the host's threads (bitwise the same). */
void pk_d3_ref_steps(const pk_d3_desc *d, int count, float *f1, float *f2, float **result,
                     int threads);

/* One row of the stencil: out = the operator on centre row c with its neighbour rows n, s
 * (y), b, t (z), each already clamped to c at a face. */
typedef void (*pk_d3_row_fn)(const pk_d3_desc *d, const float *c, const float *n, const float *s,
                             const float *b, const float *t, float *out);

/* Host-memory plan shared by the serial and OpenMP backends: two 64-byte aligned buffers,
 * `cur` holds the latest field.  The backends supply only the steps. */
typedef struct pk_d3_host_plan {
    pk_d3_desc d;
    char variant[32];
    size_t n;
    float *f1, *f2, *cur;
    int stream;           /* OpenMP: streaming stores (field larger than the LLC) */
    int threads_per_core; /* OpenMP phalanx: SMT threads per core */
    int *cpu_of_slot;     /* OpenMP phalanx: CPU of each team slot (-1: unpinned) */
    int nt;               /* OpenMP: team size fixed at creation */
    float *scratch;       /* OpenMP temporal blocking: per-thread ring buffers */
    int tb_depth, tb_rows; /* OpenMP omp-tb: steps per pass, rows per block (tuning) */
    int isa;              /* OpenMP: SIMD level of the row kernel (PK_SIMD_*; diffusion3d.isa) */
    pk_d3_row_fn row;     /* OpenMP: that row kernel */
    pk_status (*run)(void *impl, int count, double *seconds); /* the backend's steps */
} pk_d3_host_plan;
pk_status pk_d3_host_create(const pk_d3_desc *desc, pk_d3_host_plan **plan);
pk_status pk_d3_host_upload(void *impl, const float *f, double *seconds);
pk_status pk_d3_host_download(void *impl, float *f, double *seconds);
pk_status pk_d3_host_upload_part(void *impl, size_t first, size_t n, const float *f);
pk_status pk_d3_host_download_part(void *impl, size_t first, size_t n, float *f);
/** The host backends' execute: the steps run on the caller's field itself (it takes the place
 *  of the plan's first buffer; the second is the work array), so nothing is copied but the
 *  last step's result when it lands in the work array (an odd number of passes). */
pk_status pk_d3_host_execute(void *impl, float *f, int count, double *kernel_seconds,
                             double *transfer_seconds);
void pk_d3_host_destroy(void *impl);

/* ---- conv2d, as a backend sees it (docs/KERNELS.md section 5) ------------------------- */
typedef struct pk_cv_desc {
    int h, w;            /* image float32 [h][w] */
    int kh, kw;          /* psf float32 [kh][kw] */
    int method;          /* PK_CONV2D_* as given (the variant is already resolved) */
    const float *psf;    /* valid during create only: backends copy what they keep */
    const char *variant; /* resolved: one of the backend's names */
    int threads;         /* host threads (0: default) */
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
} pk_cv_desc;

/** Device backends index windows (tile origin + PSF extent + tile size) and PSF taps in
 *  int: check that this frame allows it (the caller validated sizes already) and give its
 *  pixel and tap counts. */
pk_status pk_cv_int_limits(const pk_cv_desc *d, const char *backend, size_t *pixels, size_t *taps);

/* ---- magicfilter3d, as a backend sees it (docs/KERNELS.md section 2) ----------------- */
/* One pass: src holds ndat lines of nin points (line fastest), dst gets the transposed
 * result [nout][ndat]:
 *     dst[j][d] = sum_{k<16} g[k] * src[d][j + k + off]
 * where the source index wraps modulo nin (PK_MF_PERIODIC), reads 0 outside [0, nin)
 * (PK_MF_GROW) or is always inside (PK_MF_SHRINK).  g[] are the taps in the order the
 * pass applies them: MF g[k] = f_{k-8}, MFT g[k] = f_{7-k}. */
typedef struct pk_mf_pass {
    int nin, nout;   /* line length in and out (nout = nin, nin + 15 or nin - 15) */
    long ndat;       /* lines (product of the other two extents at this stage) */
    int off;         /* periodic: -8 (MF) or -7 (MFT); grow: -15; shrink: 0 */
    int bc;          /* PK_MF_* */
    int isa;         /* host simd pass: PK_SIMD_* (fixed at plan creation) */
} pk_mf_pass;

typedef struct pk_mf_desc {
    int n[3];              /* n1, n2, n3 as given */
    int in[3], out[3];     /* extents of x and y per axis (index 0 = axis 1, fastest) */
    int transpose, bc;
    double g[16];          /* taps in pass order (see pk_mf_pass) */
    pk_mf_pass pass[3];    /* pass p works along axis p + 1 */
    size_t in_count, out_count;
    size_t work_count[2];  /* elements after pass 1 and after pass 2 */
    const char *variant;   /* resolved: one of the backend's names */
    int threads;           /* host threads (0: default) */
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
} pk_mf_desc;

/** Fill d from validated parameters (sizes, taps, the three passes). */
void pk_mf_desc_init(pk_mf_desc *d, const pk_magicfilter3d_params *p);
/** The three passes in the order the library runs them: x -> w1 -> w2 -> y, each with the
 *  same pass function.  Serial reference pass (plain loops, modulo indexing): */
void pk_mf_pass_ref(const pk_mf_pass *p, const double *g, const double *src, double *dst);
/** The six-loop triple sum of docs/KERNELS.md (test oracle, O(16^3) per point). */
void pk_mf_direct(const pk_mf_desc *d, const double *x, double *y);
/** Source index of line position t = j + k + off for a periodic pass (true modulo, any t). */
static inline int pk_mf_wrap(int t, int n)
{
    int r = t % n;
    return r < 0 ? r + n : r;
}

/* ---- grid, as a backend sees it (docs/KERNELS.md section 1) --------------------------- */
/* The kernels always arrive compacted (lib/grid.c converts a FULL stack once): plane w
 * holds m_w x m_w complex64 samples, m_w = oversample/2 + support[w]*oversample + 1, from
 * complex offset plane_offset[w]; sample [iy][ix] of the full quadrant is [iy][ix] of it. */
typedef struct pk_gr_desc {
    pk_grid_params p;             /* validated, tuning defaults resolved */
    const int32_t *support;       /* [num_w_planes]; valid during create only */
    const float *kernels;         /* compact stack; valid during create only */
    const size_t *plane_offset;   /* [num_w_planes + 1], complex samples; during create only */
    int max_support;
    const char *variant;
    int threads;
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
} pk_gr_desc;

/* What one run reports back. */
typedef struct pk_gr_result {
    double norm;          /* this run's sum (added to the caller's norm by lib/grid.c) */
    int64_t num_skipped;
    double updates;       /* grid-point updates: sum of (2s+1)^2 over gridded visibilities */
    double kernel_s, transfer_s;
    int num_stages;
    char stage_name[8][16];
    double stage_s[8];
    int grid_touched;     /* set once the caller's grid may have been written (no retry) */
} pk_gr_result;

/** Add a stage timing to r (ignored beyond 8). */
void pk_gr_stage(pk_gr_result *r, const char *name, double seconds);
/** Shared per-visibility geometry of docs/KERNELS.md 1.2 (float arithmetic, C rounding):
 *  returns 0 and fills the plane, cell and kernel offsets, or 1 when the visibility is skipped
 *  (footprint off the grid, or non-finite input).  pk_gr_locate_inline below is the same
 *  code for hot loops (the call and libm's roundf cost as much as the arithmetic). */
int pk_gr_locate(const pk_gr_desc *d, float uu, float vv, float ww, float vre, float vim,
                 float weight, int *grid_w, int *grid_u, int *grid_v, int *off_u, int *off_v);

/** C roundf (halves away from zero, sign of x kept) without the libm call: below 2^23 the
 *  truncation t is exact and so is x - t (t <= |x| < t + 1). */
static inline float pk_gr_roundf(float x)
{
    if (!(__builtin_fabsf(x) < 8388608.0f)) return x; /* integral already, or NaN / Inf */
    const float t = (float)(int)x;
    /* branch-free: the tie test is a coin flip on real data */
    const float up = (float)(__builtin_fabsf(x - t) >= 0.5f);
    return __builtin_copysignf(__builtin_fabsf(t) + up, x);
}

/* Float arithmetic as in oskar_grid_wproj_f.  The guards come first so that no float-to-int
 * conversion can overflow (undefined in C). */
static inline int pk_gr_locate_inline(const pk_gr_desc *d, float uu, float vv, float ww,
                                      float vre, float vim, float weight, int *grid_w,
                                      int *grid_u, int *grid_v, int *off_u, int *off_v)
{
    /* finite: x - x == 0 (false for NaN and Inf); one test for all six */
    if (!((uu - uu) + (vv - vv) + (ww - ww) + (vre - vre) + (vim - vim) + (weight - weight) ==
          0.0f))
        return 1;
    const int g = d->p.grid_size, os = d->p.oversample;
    const float grid_scale = (float)(g * d->p.cell_size_rad);
    const float pos_u = -uu * grid_scale, pos_v = vv * grid_scale;
    const float ru = pk_gr_roundf(pos_u), rv = pk_gr_roundf(pos_v);
    /* |round(pos)| beyond the grid: off the grid whatever the support (and no int overflow) */
    if (!(__builtin_fabsf(ru) <= (float)g) || !(__builtin_fabsf(rv) <= (float)g)) return 1;
    const float wf = pk_gr_roundf(__builtin_sqrtf(__builtin_fabsf(ww * (float)d->p.w_scale)));
    const int w = wf < (float)(d->p.num_w_planes - 1) ? (int)wf : d->p.num_w_planes - 1;
    const int s = d->support[w];
    const int gu = (int)ru + g / 2, gv = (int)rv + g / 2;
    if (gu - s < 0 || gu + s >= g || gv - s < 0 || gv + s >= g) return 1;
    *grid_w = w;
    *grid_u = gu;
    *grid_v = gv;
    *off_u = (int)pk_gr_roundf((ru - pos_u) * (float)os);
    *off_v = (int)pk_gr_roundf((rv - pos_v) * (float)os);
    return 0;
}

/* ---- lattice QCD, as a backend sees it (docs/KERNELS.md section 4) ------------------- */
/* laplace2d: the field arrives in desc->layout (lib/laplace2d.c reorders on the host). */
typedef struct pk_lp_desc {
    int l;               /* phi float32 [l][l] */
    int layout;          /* PK_LAP_LEXI / PK_LAP_HVFO */
    int nw;              /* hvfo lanes (resolved: >= 1, divides l); 1 for lexi (lexi is
                            hvfo with one lane: the same index rules hold) */
    float sigma;         /* a = (float)sigma, as the kernels use it */
    float inv;           /* (float)(1 / (1 + 4 a)), the quotient in double */
    int count;           /* steps of the call (the cost model's measure; plans ignore it) */
    const char *variant; /* resolved: one of the backend's names */
    int threads;         /* host threads (0: default) */
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
} pk_lp_desc;

/* su3: u, psi and chi arrive and leave in desc->layout (lib/su3.c converts on the host).
 * Kernels may run over the padded sites [0, nsites) (vfo: nvs, hvfo: nb * nw): the padding
 * holds zeros and yields zeros, so no kernel needs a remainder loop. */
typedef struct pk_s3_desc {
    size_t nv;             /* sites */
    int layout;            /* PK_SU3_* */
    int nw;                /* hvfo sites per block (resolved); 1 otherwise */
    size_t nsites;         /* sites the layout stores, padding included (>= nv) */
    size_t u_doubles;      /* doubles of u in the layout */
    size_t spinor_doubles; /* doubles of psi (and of chi) in the layout */
    const char *variant;
    int threads;
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
    int u_site;            /* AoS-like layouts: doubles from one site's link to the next in
                              the u a kernel reads; 0: the layout's own (pk_s3_u_per_site).
                              18: the caller's AoS u read in place (short and recon12 use its
                              first 16 / 12 doubles, padded its 18: what packing keeps) */
} pk_s3_desc;

/* dslash: u arrives as [4][t][z][y][x][3][3] complex (recon12: [4][t][z][y][x][2][3], the
 * first two rows), psi as [t][z][y][x][4][3]; chi leaves in the same layout as psi. */
typedef struct pk_ds_desc {
    int dims[4];          /* x, y, z, t */
    size_t volume;        /* x*y*z*t */
    double kappa;
    int recon12;          /* links stored as two rows */
    size_t u_doubles;     /* 4 * volume * (18 or 12) */
    int u_link;           /* doubles from one link to the next in the u the host kernels read:
                             18, or 12 with recon12; 18 with recon12 while a lexicographic host
                             plan executes on the caller's full links, whose first two rows it
                             reads in place (pk_ds_host_execute_full) */
    size_t spinor_doubles; /* volume * 24 */
    int t0, t1;           /* the t-planes computed, [t0, t1) (0, dims[3]: all; chi's others
                             untouched, chi read and written only below plane t1) */
    int z0, z1;           /* the z-planes computed in each of them, [z0, z1) (0, dims[2]: all) */
    size_t sites;         /* sites computed: x y (z1 - z0) (t1 - t0) */
    const char *variant;
    int threads;
    const pk_tuning *tuning; /* the context's parameters (NULL: defaults); create only */
    int oneshot;          /* pk_dslash's call (its plan converts the caller's layout every
                             call), not a plan's: auto's OpenMP variant by size (lib/dslash.c) */
} pk_ds_desc;

/* ---- kernels on backends ----------------------------------------------------------------
 * One small table per kernel family per backend, defined in that backend's file of the kernel
 * (omp/diffusion3d_omp.c: pk_openmp_d3_ops) and listed by the kernel's own file through
 * PK_KERNEL_ON (lib/diffusion3d.c).  `variants` comes first in every table (comma-separated,
 * the first the backend's default; NULL or "" when the backend lacks the kernel): the
 * dispatcher reads it without knowing the kernel.  create gets the resolved variant and host
 * threads in desc; upload/run/download move data to, compute on and bring back from the
 * backend's memory (times in seconds). */
typedef struct pk_d3_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_d3_desc *desc, void **impl);
    pk_status (*upload)(void *impl, const float *f, double *seconds);
    pk_status (*run)(void *impl, int count, double *kernel_seconds);
    pk_status (*download)(void *impl, float *f, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): count steps on the caller's f in place, without
     * copying it in and out where the backend works in host memory */
    pk_status (*execute)(void *impl, float *f, int count, double *kernel_seconds,
                         double *transfer_seconds);
    /* floats [first, first + n) of the resident field from / into f, the others untouched
     * (plan_upload_planes / plan_download_planes: a distributed plan's halo planes) */
    pk_status (*upload_part)(void *impl, size_t first, size_t n, const float *f);
    pk_status (*download_part)(void *impl, size_t first, size_t n, float *f);
} pk_d3_ops;

/* conv2d: the plan keeps the PSF (and its transform) on the device; one frame per run. */
typedef struct pk_cv_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_cv_desc *desc, void **impl);
    pk_status (*upload)(void *impl, const float *image, double *seconds);
    pk_status (*run)(void *impl, double *kernel_seconds);
    pk_status (*download)(void *impl, float *out, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): out = image (*) psf on the caller's arrays,
     * without copies where the backend works in host memory */
    pk_status (*execute)(void *impl, const float *image, float *out, double *kernel_seconds,
                         double *transfer_seconds);
} pk_cv_ops;

/* magicfilter3d: the plan holds x, y and the work buffers on the device. */
typedef struct pk_mf_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_mf_desc *desc, void **impl);
    pk_status (*upload)(void *impl, const double *x, double *seconds);
    pk_status (*run)(void *impl, double *kernel_seconds);
    pk_status (*download)(void *impl, double *y, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): y = MF x on the caller's arrays, without copies
     * where the backend works in host memory */
    pk_status (*execute)(void *impl, const double *x, double *y, double *kernel_seconds,
                         double *transfer_seconds);
} pk_mf_ops;

/* grid: the plan holds the (reordered) kernel stack on the device; each run grids a
 * visibility list into the caller's host grid (accumulating). */
typedef struct pk_gr_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_gr_desc *desc, void **impl);
    pk_status (*run)(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
    void (*destroy)(void *impl);
} pk_gr_ops;

/* degrid (docs/KERNELS.md 7.3): the plan holds the kernel stack (desc: grid's, compact);
 * each run reads the caller's host grid complex64 [g][g] and writes vis complex64
 * [data->num_vis] (every entry: 0 for a skipped visibility; data->weight may be NULL). */
typedef struct pk_dg_result {
    int64_t num_skipped;
    double updates;       /* sum of (2s+1)^2 over the degridded visibilities */
    double kernel_s, transfer_s;
} pk_dg_result;
typedef struct pk_dg_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_gr_desc *desc, void **impl);
    pk_status (*run)(void *impl, const float *grid, const pk_grid_data *data, float *vis,
                     pk_dg_result *res);
    void (*destroy)(void *impl);
} pk_dg_ops;

/* The dirty image on CUDA (cuda/image.cu, docs/KERNELS.md 7.7): lib/image.c makes this plan
 * beside a grid plan whose choice runs on CUDA (gr_impl: that plan's impl, grid.cu's); the
 * grid, its FFT and the crop stay on the device.  scorr[n]: lib/image.c's factors
 * (-1)^(x - n/2) / c(x - n/2).  A run fills gres as the grid run did and stage_s[4] with
 * "grid", "fft", "correct", "transfer". */
pk_status pk_cuda_im_create(void *gr_impl, int g, int n, const float *scorr, void **impl);
pk_status pk_cuda_im_run(void *impl, void *gr_impl, const pk_grid_data *d, float *image,
                         pk_gr_result *gres, double *stage_s);
void pk_cuda_im_destroy(void *impl);
/* Degrid on CUDA (cuda/degrid.cu): lib/image.c's degrid plan, on a "cuda" degrid choice
 * (impl: its plan), gives it the model's factors once (scorr as above, kappa), then predicts
 * with the placement, the FFT and the gather on the device; stage_s[4]: "place", "fft",
 * "degrid", "transfer".  PK_ENOBACKEND from init when cuFFT cannot be loaded. */
pk_status pk_cuda_dg_image_init(void *impl, int n, const float *scorr, double kappa);
pk_status pk_cuda_dg_predict(void *impl, const float *model, const pk_grid_data *d, float *vis,
                             pk_dg_result *res, double *stage_s);
/* The image and degrid with the FFT on an OpenCL device (cl/image_opencl.c, VkFFT through
 * cl/fft_opencl.c): lib/image.c makes it on the OpenCL state and device of the grid plan
 * (image, adjoint 0; scale unused) or of the "opencl" degrid choice (adjoint 1, scale
 * 1 / kappa), with scorr as above.  create: PK_ENOBACKEND (no VkFFT, or the test hook
 * PORTKERN_TEST_NO_DEVICE_FFT), PK_EUNSUPPORTED (a size VkFFT refuses) or PK_EDEVMEM: the
 * host FFT instead.  pk_cl_im_run (gr_impl: the grid plan's impl) fills gres as the grid run
 * and stage_s[5]: "zero", "grid", "fft", "correct", "transfer"; pk_cl_dg_predict (dg_impl:
 * the degrid plan's impl) stage_s[4]: "place", "fft", "degrid", "transfer". */
pk_status pk_cl_im_create(void *state, int device, int g, int n, const float *scorr, int adjoint,
                          double scale, void **impl);
pk_status pk_cl_im_run(void *impl, void *gr_impl, const pk_grid_data *d, float *image,
                       pk_gr_result *gres, double *stage_s);
pk_status pk_cl_dg_predict(void *impl, void *dg_impl, const float *model, const pk_grid_data *d,
                           float *vis, pk_dg_result *res, double *stage_s);
void pk_cl_im_destroy(void *impl);

/* laplace2d: the plan holds the field (in desc->layout) on the device. */
typedef struct pk_lp_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_lp_desc *desc, void **impl);
    pk_status (*upload)(void *impl, const float *phi, double *seconds);
    pk_status (*run)(void *impl, int count, double *kernel_seconds);
    pk_status (*download)(void *impl, float *phi, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): count iterations on the caller's field (in the
     * plan's layout) in place, without copies where the backend works in host memory */
    pk_status (*execute)(void *impl, float *phi, int count, double *kernel_seconds,
                         double *transfer_seconds);
    /* optional (NULL: lib/laplace2d.c reorders on the host): count iterations on the
     * caller's field in the public layout (lexi) in place, device memory of the plan's
     * device: the backend reorders it into the plan's layout and back on the device, in the
     * plan's own buffers; nothing crosses the link.  *layout_seconds: the reorders. */
    pk_status (*execute_canonical)(void *impl, float *phi, int count, double *kernel_seconds,
                                   double *layout_seconds);
} pk_lp_ops;

/* su3: the plan holds u, psi and chi (in desc->layout) on the device. */
typedef struct pk_s3_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_s3_desc *desc, void **impl);
    pk_status (*upload)(void *impl, const double *u, const double *psi, double *seconds);
    pk_status (*run)(void *impl, double *kernel_seconds);
    pk_status (*download)(void *impl, double *chi, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): chi = u psi on the caller's arrays (in the
     * plan's layout), without copies where the backend works in host memory */
    pk_status (*execute)(void *impl, const double *u, const double *psi, double *chi,
                         double *kernel_seconds, double *transfer_seconds);
    /* optional (NULL: lib/su3.c converts on the host): chi = u psi on the caller's arrays in
     * the public layout (AoS: u 18 nv, psi and chi 24 nv doubles), all three device memory
     * of the plan's device: the backend converts them into the plan's layout (its own
     * arrays) and chi back on the device; nothing crosses the link.  chi may overlap psi
     * or u.  *layout_seconds: the conversions. */
    pk_status (*execute_canonical)(void *impl, const double *u, const double *psi, double *chi,
                                   double *kernel_seconds, double *layout_seconds);
} pk_s3_ops;

/* dslash: the plan holds u, psi and chi on the device. */
typedef struct pk_ds_ops {
    const char *variants;
    pk_status (*create)(void *state, int device, const pk_ds_desc *desc, void **impl);
    /* u NULL: psi alone, the links of the last upload kept (plan_execute_psi) */
    pk_status (*upload)(void *impl, const double *u, const double *psi, double *seconds);
    pk_status (*run)(void *impl, double *kernel_seconds);
    pk_status (*download)(void *impl, double *chi, double *seconds);
    void (*destroy)(void *impl);
    /* optional (NULL: upload, run, download): chi = M psi on the caller's arrays (u as the
     * desc says: two rows when recon12), without copies where the backend works in host
     * memory on the desc's layout */
    pk_status (*execute)(void *impl, const double *u, const double *psi, double *chi,
                         double *kernel_seconds, double *transfer_seconds);
    /* optional (NULL: lib/dslash.c's host path): chi = M psi on the caller's arrays in the
     * public layout (u always full links [4][V][3][3], also for recon12), all three device
     * memory of the plan's device: the backend reorders (and for recon12 drops row 2) on
     * the device into its own arrays and chi back; nothing crosses the link.  chi may
     * overlap psi or u.  *layout_seconds: the reorders. */
    pk_status (*execute_canonical)(void *impl, const double *u, const double *psi, double *chi,
                                   double *kernel_seconds, double *layout_seconds);
} pk_ds_ops;

/* Every backend's table of a kernel family K (d3, cv, ...), by backend id; a backend not built
 * has none.  A new backend adds its line here once, for all kernels. */
#ifdef PK_HAVE_OPENCL
#define PK_ON_OPENCL(k) [PK_BACKEND_OPENCL] = &pk_opencl_##k##_ops,
#else
#define PK_ON_OPENCL(k)
#endif
#ifdef PK_HAVE_CUDA
#define PK_ON_CUDA(k) [PK_BACKEND_CUDA] = &pk_cuda_##k##_ops,
#else
#define PK_ON_CUDA(k)
#endif
#define PK_KERNEL_ON(k)                                                                        \
    {[PK_BACKEND_SERIAL] = &pk_serial_##k##_ops, [PK_BACKEND_OPENMP] = &pk_openmp_##k##_ops,    \
     PK_ON_OPENCL(k) PK_ON_CUDA(k)}
#define PK_DECLARE_KERNEL_OPS(k)                                                               \
    extern const pk_##k##_ops pk_serial_##k##_ops, pk_openmp_##k##_ops, pk_opencl_##k##_ops,    \
        pk_cuda_##k##_ops
PK_DECLARE_KERNEL_OPS(d3);
PK_DECLARE_KERNEL_OPS(cv);
PK_DECLARE_KERNEL_OPS(mf);
PK_DECLARE_KERNEL_OPS(gr);
PK_DECLARE_KERNEL_OPS(dg);
PK_DECLARE_KERNEL_OPS(lp);
PK_DECLARE_KERNEL_OPS(s3);
PK_DECLARE_KERNEL_OPS(ds);

/* ---- the backend table ---------------------------------------------------------------- */
typedef struct pk_backend_ops pk_backend_ops;
struct pk_backend_ops {
    pk_backend_id id;
    const char *name;
    /* Probe the backend for a context.  On failure return a status and write the reason
     * (what is missing, which call failed with which code) into why; never abort. */
    pk_status (*init)(const pk_context_options *opt, void **state, char *why, size_t why_len);
    void (*fini)(void *state);
    int (*device_count)(void *state);
    pk_status (*device_info)(void *state, int index, pk_device_info *info);
    pk_status (*bandwidth)(void *state, int device, size_t bytes, int reps, double *bps);
    /* optional (NULL: a device on the host's memory, or not measured): bytes per second one
     * way between the caller's pageable memory and the device (the mean of both ways), as a
     * plan's transfers move them; the cost model's link (lib/cost.c) */
    pk_status (*link_bandwidth)(void *state, int device, size_t bytes, double *bps);

    /* Called before any kernel's create on `device` (NULL: nothing to check): CUDA makes the
     * device current and checks it once, for every kernel. */
    pk_status (*device_check)(void *state, int device);

    /* Optional (NULL: nothing to say): append to dst what the host <-> device copies of the
     * plan `impl` (any kernel's) did since the last call, and forget it.  CUDA: which path
     * they took ("transfer: staged ring 4x16 MiB"). */
    void (*transfer_note)(void *impl, char *dst, size_t len);

    /* Optional (NULL: every array is host memory to the backend: serial, OpenMP, OpenCL):
     * where the caller's array [p, p + bytes) lies for the plan `impl` (PK_MEM_*).  CUDA:
     * device or managed memory of the plan's device is PK_MEM_DEVICE, device memory of
     * another device (or an array that does not end where it starts) PK_MEM_OTHER. */
    int (*memory)(void *impl, const void *p, size_t bytes);

    /* Optional (NULL: not known): without starting the backend, 0 when a record of an earlier
     * start that still applies says it has no device of `type` (why says which record),
     * else -1.  OpenCL: the device census (cl/backend_opencl.c), so that auto passes over
     * OpenCL's GPU turn on a CPU-only machine without starting the platforms. */
    int (*census)(pk_device_type type, char *why, size_t len);
};
enum { PK_MEM_HOST = 0, PK_MEM_DEVICE = 1, PK_MEM_OTHER = 2 };

extern const pk_backend_ops pk_backend_serial;
extern const pk_backend_ops pk_backend_openmp;
#ifdef PK_HAVE_OPENCL
extern const pk_backend_ops pk_backend_opencl;
#endif
#ifdef PK_HAVE_CUDA
extern const pk_backend_ops pk_backend_cuda;
#endif

/** The table of a backend, or NULL when it was not built. */
const pk_backend_ops *pk_backend_ops_get(pk_backend_id id);
/** Why a backend was not built ("configure found no OpenCL"), for unbuilt ones. */
const char *pk_backend_not_built_reason(pk_backend_id id);

/* ---- wisdom (lib/wisdom.c: the file format; lib/wisdom_store.c: the context's entries,
 *      the files, the choice for a call) ----------------------------------------------- */
typedef struct pk_wisdom_list {
    pk_wisdom_entry *e;
    int n, cap;
} pk_wisdom_list;

/** NULL when the entry keeps the rules of lib/portkern.h (text fields terminated, without
 *  control characters, the required ones not empty; a concrete backend; numbers in range),
 *  else what breaks them ("size_bytes: must be > 0 and finite"). */
const char *pk_wisdom_entry_problem(const pk_wisdom_entry *e);
/** Put e into list, replacing the entry of the same kernel, device identity and size class;
 *  PK_ESIZE beyond PK_WISDOM_MAX_ENTRIES, PK_ENOMEM. */
pk_status pk_wisdom_list_put(pk_wisdom_list *list, const pk_wisdom_entry *e);
void pk_wisdom_list_free(pk_wisdom_list *list);
/** The reader: parse a file image of len bytes (no terminator needed; NUL bytes are errors)
 *  into *out (empty on entry).  PK_OK: *out holds its entries; PK_EFORMAT: why names the
 *  byte and line and what was wrong, *out stays empty; PK_ENOMEM.  The fuzzer's entry
 *  point (fuzz/fuzz_wisdom.c). */
pk_status pk_wisdom_parse(const char *buf, size_t len, pk_wisdom_list *out, char *why,
                          size_t why_len);
/** The writer: the file image of list (malloc'ed, NUL-terminated, *len without the NUL),
 *  which pk_wisdom_parse reads back to the same entries. */
pk_status pk_wisdom_format(const pk_wisdom_list *list, char **text, size_t *len);

/* ---- the cost model (lib/cost.c) ------------------------------------------------------- */
/* What one call of a kernel does, by the library's models: flops and bytes (as the run info
 * counts them), and the bytes that cross a link in a one-shot call (inputs in, outputs out). */
typedef struct pk_cost {
    double flops, bytes, link_bytes;
} pk_cost;
/* What a backend's device does per second, measured once per context. */
typedef struct pk_cost_ceiling {
    int state;         /* 0: not measured yet, 1: measured, -1: the measurement failed */
    double bw;         /* copy bandwidth, bytes read + written per second */
    double flops;      /* flop/s (0: not counted: a device) */
    double link_bps;   /* host<->device bytes per second one way (0: the host itself) */
    int link_measured; /* 0: link_bps is the assumed PCIe figure */
    double call_s;     /* a call's fixed part (launch, synchronise) */
} pk_cost_ceiling;
#define PK_COST_DEVICES 8 /* devices per backend the model keeps ceilings for */
#define PK_SCRATCH_SLOTS 3 /* staging arrays of one call: su3's u, psi and chi */

/* ---- the context ---------------------------------------------------------------------- */
typedef struct pk_backend_slot {
    int probed;
    pk_status status; /* PK_OK when usable */
    char why[512];
    void *state;
} pk_backend_slot;

struct pk_context {
    pk_context_options opt; /* after the environment was applied */
    char env_note[256];     /* what the environment changed, for run info */
    pk_backend_slot slot[PK_BACKEND_COUNT];
    struct pk_plan_cache *cache; /* the one-shot calls' plans (lib/dispatch.c); NULL: empty */
    int cache_off;               /* PORTKERN_PLAN_CACHE=0 */
    size_t cache_limit;          /* bytes the kept plans may hold (pk_context_set_cache_limit) */
    pk_wisdom_list wisdom;       /* lib/wisdom_store.c */
    int wisdom_settled;          /* the default file was loaded, or the caller took over */
    int wisdom_off;              /* PK_OPT_IGNORE_ENV or PORTKERN_WISDOM=0 and the caller added
                                    nothing: the reason says nothing about wisdom */
    char wisdom_note[256];       /* why the last load ignored its file ("" when it did not) */
    pk_cost_ceiling cost_host[2]; /* lib/cost.c: OpenMP [0], serial [1] */
    pk_scratch scratch[PK_SCRATCH_SLOTS]; /* the one-shot calls' layout staging */
    pk_cost_ceiling cost_dev[PK_BACKEND_COUNT][PK_COST_DEVICES];
    pk_tuning tuning;            /* lib/tuning.c; the descs point at it */
};

/** After a one-shot call that staged in ctx->scratch: the arrays stay for the next call,
 *  unless the context keeps nothing (PORTKERN_PLAN_CACHE=0) or they exceed its memory
 *  ceiling (pk_context_set_cache_limit); pk_context_release_cache frees them. */
void pk_context_scratch_end(pk_context *ctx);

/** Initialise a backend on first use; returns its state or NULL (reason in slot.why). */
void *pk_context_backend(pk_context *ctx, pk_backend_id id);
/** Default device of a backend for auto selection: the fastest device of the wanted type;
 *  returns -1 when it has none of that type (type 0: any). */
int pk_context_pick_device(pk_context *ctx, pk_backend_id id, pk_device_type type);

/* ---- dispatch (lib/dispatch.c): the backend and device of a kernel call ------------- */
/* What the dispatcher needs to know of a kernel family. */
typedef struct pk_kernel_class {
    const char *name; /* "diffusion3d" */
    /* each backend's ops table of the kernel (PK_KERNEL_ON), its variants first */
    const void *on[PK_BACKEND_COUNT];
    /* create the backend's plan for desc with the resolved variant, host threads and the
     * context's tuning parameters (into the kernel's desc) */
    pk_status (*create)(const pk_backend_ops *backend, const void *kops, void *state, int device,
                        const void *desc, const char *variant, int threads,
                        const pk_tuning *tuning, void **impl);
    void (*destroy)(const void *kops, void *impl);
    /* bytes of host or device memory a plan for desc holds (its arrays), for the context's
     * plan cache ceiling and as the size measure of wisdom */
    double (*plan_bytes)(const void *desc);
    /* optional (NULL: always): 0 when a call of desc must not take wisdom's choice (conv2d
     * with a method the caller chose) */
    int (*accepts_wisdom)(const void *desc);
    /* optional (NULL: ""): what besides the size tells two calls of the kernel apart for
     * wisdom (su3 "layout=vfo", conv2d "psf=11x11"): an entry applies only to calls of its
     * key, so a variant measured on one layout is never taken for another */
    void (*wisdom_key)(const void *desc, char *key, size_t len);
    /* optional (NULL: auto keeps its order): the counts of one call of desc, for the cost
     * model (lib/cost.c) */
    void (*cost)(const void *desc, pk_cost *c);
    /* optional (NULL, or a NULL answer: the backend's first listed): the variant a call of
     * desc that names none runs on this device, where the measured best differs by device
     * generation or by the call's size; *why (a static string) goes into the run info's
     * reason */
    const char *(*device_variant)(pk_backend_id backend, const pk_device_info *device,
                                  const void *desc, const char **why);
} pk_kernel_class;

/** Estimated seconds of one call of desc on a backend and device (link_s, may be NULL: the
 *  transfers' part), from the class's cost and the ceilings measured once per context;
 *  PK_EUNSUPPORTED without a cost function, PK_EDEVICE when the ceilings cannot be measured. */
pk_status pk_cost_estimate(pk_context *ctx, const pk_kernel_class *kc, const void *desc,
                           pk_backend_id backend, int device, double *seconds, double *link_s);
/** The model itself: c->call_s + link_bytes / link_bps + max(bytes / bw, flops / flops peak). */
double pk_cost_seconds(const pk_cost *k, const pk_cost_ceiling *c, double *link_s);
/** 0 when PORTKERN_COST_MODEL=0 (read unless PK_OPT_IGNORE_ENV): auto keeps its fixed order. */
int pk_cost_enabled(const pk_context *ctx);

/* The outcome of a dispatch: a created plan on one backend and device. */
/* The run info's reason: every candidate auto tried, with why. */
#define PK_REASON_LEN 512

typedef struct pk_choice {
    pk_backend_id backend;
    int device;
    const pk_backend_ops *ops;
    const void *kops; /* the kernel's ops table on that backend (pk_d3_ops, ...) */
    void *impl;
    char variant[32];
    char device_name[128];
    char reason[PK_REASON_LEN];
    int fell_back;
    double setup_s;
    int no_fallback; /* set by the work once a failure may have overwritten the caller's input
                        (a one-shot download into an in-place array): then it is not retried */
    double plan_bytes; /* the kernel class's plan_bytes of the call */
    char wisdom_key[64]; /* and its wisdom_key */
    const char *variant_why; /* the class's device_variant reason (NULL: none) */
} pk_choice;

/* What wisdom chose for a call (pk_wisdom_choose). */
typedef struct pk_wisdom_pick {
    pk_backend_id backend;
    int device;
    char variant[32];
    char says[400]; /* "wisdom: omp-tiled on <device>, tuned <date>, size paper, tuning
                       from wisdom: su3.isa=avx2" */
    int tuned;         /* the entry's tuning changed a value: the plan takes `tuning` */
    pk_tuning tuning;  /* the context's values with the entry's over the defaults */
} pk_wisdom_pick;
/** Wisdom for a call of kc whose plan holds `size` bytes (lib/portkern.h, "Wisdom"): loads
 *  the default file on the context's first use.  1 and *pick when an entry applies; 0 when
 *  none does, with why appended to note (nothing when wisdom is off). */
int pk_wisdom_choose(pk_context *ctx, const pk_kernel_class *kc, double size, const char *key,
                     pk_wisdom_pick *pick, char *note, size_t note_len);

/* Work done on a fresh plan (one-shot calls upload, run and download there); a failure
 * makes the dispatcher destroy the plan and, under auto, try the next candidate. */
typedef pk_status (*pk_choice_work)(pk_choice *c, void *arg);

pk_status pk_dispatch(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                      const void *desc, pk_choice_work work, void *arg, pk_choice *out);
/* A one-shot call: pk_dispatch through the context's plan cache.  The plan of a call whose
 * kernel, variant and key (the bytes that define a plan: sizes, parameters, a PSF) match a
 * cached one is reused: `work` runs on it, no create (setup_s 0, "plan reused" in the
 * reason).  Otherwise pk_dispatch makes one, `finish` (may be NULL) completes the choice,
 * and the cache keeps it (at most PK_PLAN_CACHE_SLOTS plans, the least recently used
 * destroyed first).  key NULL, or PORTKERN_PLAN_CACHE=0: nothing is cached and the plan is
 * destroyed before returning.  Either way the caller never destroys *out's plan. */
#define PK_PLAN_CACHE_SLOTS 8
pk_status pk_dispatch_oneshot(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                              const void *desc, const void *key, size_t key_len,
                              pk_choice_work work, void *arg,
                              void (*finish)(pk_choice *c, const void *desc), pk_choice *out);
/* A key in parts: the key is their concatenation, compared part by part and copied only
 * when a plan is kept (grid: sizes, supports, the whole kernel stack, without building a
 * copy of the stack on every call). */
typedef struct pk_key_part {
    const void *p;
    size_t len;
} pk_key_part;
pk_status pk_dispatch_oneshot_parts(pk_context *ctx, const pk_kernel_class *kc,
                                    const char *variant, const void *desc,
                                    const pk_key_part *key, int nparts, pk_choice_work work,
                                    void *arg, void (*finish)(pk_choice *c, const void *desc),
                                    pk_choice *out);
/* A plan made of plans (image, degrid) kept by its one-shot call in the same cache, under
 * (kc, variant, key) and the same ceiling and eviction; kc needs only a name and a destroy
 * (called with kops NULL).  find: the kept object (still the cache's) or NULL; keep: 1 when
 * kept, 0 when not (the caller destroys it; backend: the one its runs use, whose threads
 * copy a large key); drop: destroy the entry holding obj (a call on it failed). */
void *pk_cache_find_object(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                           const pk_key_part *key, int nparts);
int pk_cache_keep_object(pk_context *ctx, const pk_kernel_class *kc, const char *variant,
                         const pk_key_part *key, int nparts, double bytes, void *obj,
                         pk_backend_id backend);
void pk_cache_drop_object(pk_context *ctx, const pk_kernel_class *kc, const void *obj);
/** Destroy every cached plan of ctx (pk_context_release_cache, pk_context_destroy). */
void pk_plan_cache_release(pk_context *ctx);
/** Drop the least recently used plans until the kept bytes fit ctx->cache_limit. */
void pk_plan_cache_trim(pk_context *ctx);
/** Copy backend, device, variant, reason, fell_back and setup time into info (may be NULL);
 *  the reason gets the plan's transfer note (pk_backend_ops.transfer_note), if any. */
void pk_choice_info(const pk_choice *c, pk_run_info *info);
/** Where the caller's array [p, p + bytes) lies for c's plan (pk_backend_ops.memory;
 *  PK_MEM_HOST on a backend that does not tell). */
int pk_choice_memory(const pk_choice *c, const void *p, size_t bytes);
/** 1 when a kernel's execute op may run on the caller's arrays p[0..n) (bytes[i] each): a
 *  backend that works in host memory, or one whose plan's device holds them all
 *  (PK_MEM_DEVICE); 0: upload, run, download.  Any of them in device memory sets
 *  c->no_fallback: no host backend could read it. */
int pk_choice_direct(pk_choice *c, const void *const *p, const size_t *bytes, int n);
/** PK_OK when none of p[0..n) lies in device memory for c's plan; else PK_EINVAL naming
 *  the array (names[i]) and `step`, the host work that must read it ("the host converts u
 *  from AoS to layout short"). */
pk_status pk_choice_host_only(const pk_choice *c, const void *const *p, const size_t *bytes,
                              const char *const *names, int n, const char *step);
/** Variants of a kernel on a backend ("" when not built or not implemented). */
const char *pk_kernel_variants(const pk_kernel_class *kc, pk_backend_id backend);

/* Positions in a comma-separated list: index of name, or -1. */
int pk_list_find(const char *list, const char *name);

/** The run info of one more run of a plan (no setup): the choice, the kernel seconds, the
 *  flop and byte model, wall time since t0. */
void pk_choice_run_info(const pk_choice *c, pk_run_info *info, double kernel_s, double flops,
                        double bytes, double t0);

/** Write the run info's common fields. */
void pk_run_info_begin(pk_run_info *info);

#ifdef __cplusplus
}
#endif
#endif /* PK_INTERNAL_H */
