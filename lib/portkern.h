/* portkern.h - the one public header of libportkern.
 *
 * portkern runs bandwidth-bound scientific kernels on whatever the machine has: a serial
 * reference, an OpenMP path, OpenCL devices (CPUs through PoCL, GPUs through vendor drivers)
 * and CUDA GPUs.  Every call validates its arguments once, picks a backend, and can report
 * what ran where in a pk_run_info.
 *
 * Conventions
 *  - Every function that can fail returns a pk_status: PK_OK (0) or a negative code.
 *    pk_strerror() gives the generic text, pk_last_error() the detail of the last failure on
 *    the calling thread (which argument, which device call).
 *  - Objects are opaque; *_destroy(NULL) is a no-op.
 *  - Arrays are C order (last index fastest), as NumPy writes them.
 *  - This header includes no OpenCL or CUDA header.
 *  - Thread safety: distinct contexts may be used from distinct threads at once.  A context
 *    (and the plans made from it) must not be used by two threads at the same time.
 */
#ifndef PORTKERN_H
#define PORTKERN_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PK_BUILDING_LIBRARY) && defined(__GNUC__)
#define PK_API __attribute__((visibility("default")))
#else
#define PK_API
#endif

#define PORTKERN_VERSION_MAJOR 0
#define PORTKERN_VERSION_MINOR 1
#define PORTKERN_VERSION_PATCH 0
#define PORTKERN_VERSION_STRING "0.1.0"
/** Version of the library actually loaded (may differ from the header's). */
PK_API const char *pk_version(void);

/* ---------------------------------------------------------------------------------------- */
/* Status codes: one table generates the enum, pk_status_name() and pk_strerror().          */
#define PK_STATUS_MAP(X)                                                                      \
    X(OK, 0, "success")                                                                       \
    X(EINVAL, -1, "invalid argument")                                                         \
    X(ENULL, -2, "NULL pointer argument")                                                     \
    X(ESIZE, -3, "invalid size (zero, negative or out of range)")                             \
    X(EOVERFLOW, -4, "size overflows the address space")                                      \
    X(ENONFINITE, -5, "non-finite parameter")                                                 \
    X(ENOMEM, -6, "out of host memory")                                                       \
    X(EDEVMEM, -7, "out of device memory")                                                    \
    X(ENOBACKEND, -8, "backend not available")                                                \
    X(ENOVARIANT, -9, "unknown variant")                                                      \
    X(ENODEVICE, -10, "no such device")                                                       \
    X(EBUILD, -11, "device program failed to build")                                          \
    X(EDEVICE, -12, "device runtime error")                                                   \
    X(EIO, -13, "input/output error")                                                         \
    X(EFORMAT, -14, "malformed or unsupported file")                                          \
    X(EDTYPE, -15, "wrong data type or shape")                                                \
    X(EMISMATCH, -16, "arrays differ beyond tolerance")                                       \
    X(EUNSUPPORTED, -17, "operation not supported")                                           \
    X(ESTATE, -18, "object used in the wrong state")                                          \
    X(EINTERNAL, -19, "internal error")

typedef enum pk_status {
#define PK_STATUS_ENUM_(name, code, text) PK_##name = (code),
    PK_STATUS_MAP(PK_STATUS_ENUM_)
#undef PK_STATUS_ENUM_
} pk_status;

/** Generic text of a status code ("invalid argument"); never NULL. */
PK_API const char *pk_strerror(int status);
/** Symbolic name of a status code ("PK_EINVAL"); never NULL. */
PK_API const char *pk_status_name(int status);
/** Detail of the last failure on this thread ("nx: must be >= 1, got 0"); never NULL. */
PK_API const char *pk_last_error(void);

/** Host memory as the library allocates its own large buffers (FFTW's fftw_malloc is the
 *  model): 64-byte aligned, and from 4 MiB on 2 MiB aligned and advised for transparent huge
 *  pages (where THP is "madvise", only advised ranges get them: 512 x fewer page faults and
 *  TLB misses on a sweep).  Arrays given to the kernels may come from anywhere; from here
 *  they are first touched and swept faster.  NULL when out of memory (bytes 0: a valid
 *  64-byte block).  Release with pk_free (it is posix_memalign memory: free() works too). */
PK_API void *pk_malloc(size_t bytes);
PK_API void pk_free(void *p);

/* ---------------------------------------------------------------------------------------- */
/* Backends and devices                                                                     */
typedef enum pk_backend_id {
    PK_BACKEND_AUTO = 0,
    PK_BACKEND_SERIAL = 1,
    PK_BACKEND_OPENMP = 2,
    PK_BACKEND_OPENCL = 3,
    PK_BACKEND_CUDA = 4,
    PK_BACKEND_COUNT = 5
} pk_backend_id;

/** "auto", "serial", "openmp", "opencl", "cuda"; NULL for an out-of-range id. */
PK_API const char *pk_backend_name(pk_backend_id id);
/** Parse a backend name (case-insensitive). */
PK_API pk_status pk_backend_from_name(const char *name, pk_backend_id *out);

typedef enum pk_device_type {
    PK_DEVICE_CPU = 1,
    PK_DEVICE_GPU = 2,
    PK_DEVICE_ACCELERATOR = 3,
    PK_DEVICE_OTHER = 4
} pk_device_type;

typedef struct pk_device_info {
    pk_backend_id backend;
    int index;              /* index within the backend's device list */
    pk_device_type type;
    char name[128];
    char vendor[128];
    char driver[128];       /* driver / runtime version string */
    char platform[128];     /* OpenCL platform name; "" elsewhere */
    char simd[32];          /* CPU: widest SIMD level ("avx512f", "avx2", ...); "" elsewhere */
    int compute_units;      /* CPU: cores (logical CPUs), OpenCL: CUs, CUDA: SMs */
    int threads_per_core;   /* CPU only; 0 elsewhere */
    uint64_t global_mem_bytes;
    int fp64;               /* 1 when double precision is supported */
    int cc_major, cc_minor; /* CUDA compute capability; 0 elsewhere */
    uint64_t local_mem_bytes; /* OpenCL: local memory per work-group; CUDA: shared memory a
                                 block may opt in to; 0 on the host.  Test hook:
                                 PORTKERN_TEST_LOCAL_MEM_BYTES=N caps it (and what the
                                 kernels assume) at N, to run a small device's tile choices */
} pk_device_info;

typedef struct pk_context pk_context;

/* Context option flags. */
#define PK_OPT_IGNORE_ENV 0x1u /* do not read PORTKERN_BACKEND / PORTKERN_DEVICE / ...,
                                  nor load the default wisdom lazily */

typedef struct pk_context_options {
    pk_backend_id backend; /* PK_BACKEND_AUTO: fastest usable (PORTKERN_BACKEND overrides) */
    int device;            /* -1: default device of the backend (PORTKERN_DEVICE overrides) */
    int threads;           /* host threads for OpenMP, 0..PK_MAX_THREADS; 0: OpenMP's default */
    unsigned flags;        /* PK_OPT_* */
} pk_context_options;
#define PK_MAX_THREADS 4096 /* the most host threads a context (or PORTKERN_THREADS) asks for */

/** Fill *opt with the defaults (auto backend, default device, default threads). */
PK_API void pk_context_options_init(pk_context_options *opt);
/** Create a context.  opt may be NULL (defaults).  Backends are probed lazily; a backend
 *  that cannot run is recorded with the reason, never fatal. */
PK_API pk_status pk_context_create(pk_context **ctx, const pk_context_options *opt);
PK_API void pk_context_destroy(pk_context *ctx);
/** The one-shot calls (pk_diffusion3d, pk_conv2d, ...) keep their plans in the context, by
 *  kernel, variant and shape (and conv2d's PSF): a second call of the same shape reuses the
 *  plan, its buffers and built programs (run info: setup_s 0, "plan reused" in the reason).
 *  At most 8 plans are kept, and at most the context's memory ceiling in bytes of their
 *  arrays (host or device memory; diffusion3d 512^3: two 512 MiB fields): the least recently
 *  used are dropped first, and a plan larger than the ceiling is not kept (the call then
 *  destroys it before returning).  The ceiling is a quarter of the physical memory, or
 *  PORTKERN_PLAN_CACHE_MB, or what pk_context_set_cache_limit sets (0: keep nothing).  This
 *  frees them all now; pk_context_destroy does too.  PORTKERN_PLAN_CACHE=0 keeps none.
 *  grid's one-shot plan is kept under its parameters, supports and whole kernel stack
 *  (compared on every call, and a copy of the stack kept with the plan), with the scratch
 *  of its last run (OpenMP omp-tiled: 20 bytes per visibility and 4 per visibility-tile
 *  pair); pk_image's and pk_degrid's under the same key, with their g x g grid. */
PK_API void pk_context_release_cache(pk_context *ctx);
/** Set the ceiling in bytes of what the context's kept plans may hold; plans beyond it are
 *  dropped now, least recently used first. */
PK_API pk_status pk_context_set_cache_limit(pk_context *ctx, size_t bytes);

/* Tuning parameters: the knobs a kernel's backends read when they make a plan (a code path,
 * a threshold, a launch shape), each named "<kernel>.<param>" ("conv2d.fft_taps",
 * "dslash.isa"; pk_param_count / pk_param_info list them).  Every one has a default, and an
 * environment variable PORTKERN_<KERNEL>_<PARAM> (some keep an older name as an alias),
 * read once when the context is created and never under PK_OPT_IGNORE_ENV.  A value the
 * caller sets beats the environment's.  A bad environment value is reported, naming the
 * variable, by the first plan that reads the parameter. */
typedef enum pk_param_source {
    PK_PARAM_DEFAULT = 0, /* the library's default */
    PK_PARAM_ENV = 1,     /* the environment variable, read at context creation */
    PK_PARAM_CALLER = 2   /* pk_context_set_param */
} pk_param_source;

typedef struct pk_param_desc {
    const char *name;      /* "conv2d.fft_taps" */
    const char *env;       /* "PORTKERN_CONV2D_FFT_TAPS" */
    const char *env_alias; /* an older variable read too ("PORTKERN_CL_CV_SCHEME"), or NULL */
    const char *values;    /* what it accepts ("auto, vec or scalar", "an integer in [1, ...]") */
    const char *def;       /* the default ("auto", "324") */
    const char *doc;       /* one line */
} pk_param_desc;

/** Number of tuning parameters. */
PK_API int pk_param_count(void);
/** Parameter `index` (0 <= index < pk_param_count()); its strings are static. */
PK_API pk_status pk_param_info(int index, pk_param_desc *desc);
/** Set a parameter of the context by name; value NULL goes back to the environment's value
 *  (if it was read) or the default.  An unknown name or a value it does not accept:
 *  PK_EINVAL naming the parameter, what it accepts and what was given.  Plans kept by the
 *  context's one-shot calls are released; plans the caller made keep their settings. */
PK_API pk_status pk_context_set_param(pk_context *ctx, const char *name, const char *value);
/** The parameter's value as text (at most len-1 bytes, terminated) and where it came from
 *  (source may be NULL).  A bad environment value is returned as given, with PK_EINVAL. */
PK_API pk_status pk_context_get_param(pk_context *ctx, const char *name, char *buf, size_t len,
                                      pk_param_source *source);

/** 1 when the backend can run in this context, 0 when not; *why (may be NULL) receives
 *  the reason it cannot ("no OpenCL platform (clGetPlatformIDs: -1001)"), or "" when it can.
 *  The string lives as long as the context. */
PK_API int pk_backend_available(pk_context *ctx, pk_backend_id backend, const char **why);
/** Number of devices of a backend (0 when unavailable). Serial and OpenMP have one: the host. */
PK_API int pk_device_count(pk_context *ctx, pk_backend_id backend);
PK_API pk_status pk_device_get_info(pk_context *ctx, pk_backend_id backend, int index,
                                    pk_device_info *info);
/** Measure the memory bandwidth of a device with a copy kernel: bytes read + written per
 *  second (STREAM's convention), best of `reps` runs over `bytes` per array (0: default).
 *  bytes below 4096, or two arrays that the device cannot hold, are PK_ESIZE on every
 *  backend (never silently clamped). */
PK_API pk_status pk_measure_bandwidth(pk_context *ctx, pk_backend_id backend, int device,
                                      size_t bytes, int reps, double *bytes_per_second);
/** Measure the double-precision FMA peak of a host backend's device, in flop/s (an FMA is 2
 *  flops per vector lane): independent FMA chains, enough to hide the FMA latency, in the
 *  widest vectors the CPU has (pk_device_info.simd "avx512f": AVX-512; "avx2": AVX2 + FMA;
 *  otherwise scalar code), best of 5 runs of about 30 ms each.  serial: one thread; openmp:
 *  the context's threads (0: OpenMP's default), each thread's rate over its own loop time
 *  summed.  With the copy bandwidth this is the host's roof (min(peak, intensity x
 *  bandwidth)).  Device backends (opencl, cuda): PK_EUNSUPPORTED; an unusable backend or a
 *  device index out of range: as pk_measure_bandwidth. */
PK_API pk_status pk_measure_peak_flops(pk_context *ctx, pk_backend_id backend, int device,
                                       double *flops_per_second);

/* ---------------------------------------------------------------------------------------- */
/* Run information, filled by every kernel call that takes one.                             */
typedef struct pk_run_info {
    pk_backend_id backend; /* the backend that ran */
    int device;            /* its device index */
    char device_name[128];
    char variant[32];
    char reason[512];      /* why this backend/variant ran: each candidate auto tried, in order,
                              "skipped (why)", "failed (...), fell back" or "chosen (why)";
                              environment notes first; CUDA plans then say how their copies
                              since the last run info went ("transfer: staged ring 4x16 MiB",
                              "pinned", "device", "pageable") */
    double wall_s;         /* whole call, including transfers and program builds */
    double kernel_s;       /* device compute only */
    double transfer_s;     /* host <-> device copies */
    double setup_s;        /* allocation, program build/load */
    double bytes;          /* bytes moved by the kernel by the library's model (see docs) */
    double flops;
    int fell_back;         /* 1 when an earlier choice failed and a later backend ran */
    double layout_s;       /* host conversion to and from the kernel's data layout (laplace2d
                              hvfo, su3 layouts, dslash recon12): apart from the kernel time
                              (conversions fused into OpenMP laplace2d's passes count as
                              kernel time) */
    int num_stages;        /* grid: per-stage timings, as in the NAG report's tables */
    char stage_name[8][16]; /* ("bbox", "count", "sort", "outer", "central", ...) */
    double stage_s[8];     /* host and OpenCL stages run one after another (sum <= wall_s);
                              CUDA's run on up to 3 streams at once (compute, copy, central
                              box), so their sum can exceed wall_s, by at most 3x */
    double plan_bytes;     /* bytes of host or device memory the plan's arrays hold, by the
                              kernel's model (diffusion3d: two fields of nx*ny*nz floats): the
                              size measure that wisdom entries are matched by */
    char wisdom_key[64];   /* what besides the size wisdom matches a call by: the kernel's
                              shape of the problem ("layout=vfo" for su3, "psf=11x11" for
                              conv2d, "" where the size says all); an entry's params */
} pk_run_info;

/* ---------------------------------------------------------------------------------------- */
/* Wisdom: measured choices of backend, device and variant (FFTW's wisdom is the model).    */
/* A context holds a list of entries, one per (kernel, device identity, size class).  When a
 * call leaves the choice to auto (no backend forced by the caller or PORTKERN_BACKEND, no
 * variant named; conv2d: method PK_CONV2D_AUTO), the dispatcher looks for an entry that
 * applies and tries its backend, device and variant first:
 *  - same kernel and the same wisdom key (the entry's params equal the call's
 *    pk_run_info.wisdom_key: su3's layout, conv2d's PSF size, laplace2d's layout,
 *    magicfilter3d's bc and transpose, dslash's recon12), and the entry's library version is
 *    pk_version();
 *  - its backend is usable in this context and has a device of the same identity (name,
 *    driver string, compute units, as pk_device_get_info reports them; the device index the
 *    caller or PORTKERN_DEVICE asked for, if any, must be that device); its variant is one of
 *    that backend's variants;
 *  - of those, the entry whose size_bytes is nearest in log scale to the call's plan_bytes
 *    (pk_run_info.plan_bytes), within a factor of 8 either way; on a tie the fastest
 *    (seconds).  Beyond a factor of 8 no wisdom applies.
 * If the entry's plan fails, the normal auto order follows (fell_back 1, reason says why).
 * The run info's reason names the source: "openmp: chosen (wisdom: omp-tiled on <device>,
 * tuned <date>)", and the entry's tuning parameters it applied ("tuning from wisdom:
 * magicfilter3d.isa=avx2") or kept ("kept the caller's su3.stream"); else it says why none
 * applied: "wisdom: none for diffusion3d at this size
 * (ignored: 1 of another library version)", "wisdom: file ignored: <path>: <why>".
 * conv2d's key holds the PSF size, so an entry measured with one PSF is never taken for
 * another (the direct/FFT crossover moves with it).
 *
 * The file (docs/ARCHITECTURE.md, "Wisdom"): JSON, {"portkern_wisdom": 1, "entries": [{...},
 * ...]}, each entry a flat object of the fields below (backend by name).  Readers ignore
 * unknown keys with a string or number value; anything else that is not exactly this shape
 * (syntax, types, a string longer than its field, a control character, nesting, more than
 * PK_WISDOM_MAX_ENTRIES entries, more than PK_WISDOM_MAX_FILE_BYTES) makes the whole file
 * ignored, as does another format version.  Entries of another library version or of devices
 * not present are kept (and saved again) but never applied.
 *
 * The default file: PORTKERN_WISDOM if set (a path; "0" or "" disables wisdom), else
 * $XDG_CACHE_HOME/portkern/wisdom.json (an absolute XDG_CACHE_HOME), else
 * $HOME/.cache/portkern/wisdom.json.  A context loads it once, on its first auto dispatch
 * (a missing file is no wisdom; when PORTKERN_WISDOM named it, the reason says so), unless it was created with PK_OPT_IGNORE_ENV or the caller
 * already called pk_wisdom_add, pk_wisdom_load or pk_wisdom_forget on it.  Adding, loading
 * or forgetting wisdom releases the context's kept plans (pk_context_release_cache), whose
 * choice it may change. */
#define PK_WISDOM_FORMAT 1                /* the "portkern_wisdom" number this library reads */
#define PK_WISDOM_MAX_ENTRIES 1024
#define PK_WISDOM_MAX_FILE_BYTES (1 << 20)

typedef struct pk_wisdom_entry {
    char kernel[32];        /* "diffusion3d", as the kernel's run info and docs name it */
    pk_backend_id backend;  /* where the winner ran (a concrete backend, never auto) */
    int device;             /* its device index within the backend when tuned (>= 0); the
                               match is by identity, the index only breaks ties */
    char device_name[128];  /* device identity, from pk_device_get_info: name, */
    char driver[128];       /* driver / runtime version string, */
    int compute_units;      /* and compute units (>= 0; OpenMP: its thread count) */
    char version[32];       /* pk_version() of the library that tuned it */
    char size_class[64];    /* "small", "paper", "large" or a shape text ("256x256x256") */
    double size_bytes;      /* the size measure: pk_run_info.plan_bytes of a call of that
                               shape (> 0, finite) */
    char variant[32];       /* the winner, one of the backend's variants */
    char params[128];       /* the shape of the problem it was measured on, besides its size:
                               pk_run_info.wisdom_key of such a call ("layout=vfo" for su3,
                               "psf=11x11" for conv2d; "" where the size says all): the entry
                               applies only to calls of the same key */
    double seconds;         /* the winner's time (>= 0, finite) */
    char runners_up[256];   /* the others as text, e.g. "omp-tiled 1.07x, omp 2.90x" */
    char date[32];          /* when it was measured, ISO 8601 UTC ("2026-01-31T12:00:00Z") */
    char tuning[256];       /* the winner's tuning parameters, "name=value;name=value" of this
                               kernel's parameters ("magicfilter3d.isa=avx2"; "": defaults); a
                               call following the entry runs with them, except those the
                               caller or the environment set.  An unknown name or a value the
                               parameter does not accept makes the entry ignored (the reason
                               says so).  Added last, optional in the file: older files load */
} pk_wisdom_entry;
/* Every text field is NUL-terminated, without control characters; kernel, device_name,
 * version, size_class, variant and date must not be empty. */

/** Zero *entry and fill its device part from pk_device_get_info(ctx, backend, device):
 *  backend, device, device_name, driver, compute_units; version = pk_version(); date = now.
 *  The caller fills kernel, size_class, size_bytes, variant, seconds (params, runners_up). */
PK_API pk_status pk_wisdom_entry_init(pk_context *ctx, pk_backend_id backend, int device,
                                      pk_wisdom_entry *entry);
/** Add an entry to the context, replacing the one of the same kernel, device identity (name,
 *  driver, compute units) and size class.  PK_EINVAL names a field that breaks the rules
 *  above.  At most PK_WISDOM_MAX_ENTRIES per context (PK_ESIZE beyond). */
PK_API pk_status pk_wisdom_add(pk_context *ctx, const pk_wisdom_entry *entry);
/** Read a wisdom file and add its entries (as pk_wisdom_add does, the file's replacing the
 *  context's of the same key).  path NULL: the default file (PORTKERN_WISDOM is not read when
 *  the context has PK_OPT_IGNORE_ENV); a missing default file, or wisdom disabled by
 *  PORTKERN_WISDOM, is PK_OK with nothing added.  A missing named file is PK_EIO; a file
 *  that is not valid wisdom is PK_EFORMAT with the reason in pk_last_error() and in
 *  pk_wisdom_note(), and adds nothing. */
PK_API pk_status pk_wisdom_load(pk_context *ctx, const char *path);
/** Write the context's entries to a wisdom file, merged with what the file holds (the
 *  context's replacing the file's of the same key; entries only in the file are kept).  path
 *  NULL: the default file (its directories are created); PK_EINVAL when PORTKERN_WISDOM
 *  disables it.  Under an exclusive flock of "<path>.lock" the file is read, merged, written
 *  to a temporary beside it and renamed into place: concurrent savers (threads, processes)
 *  lose nothing and readers see the old or the new file whole.  An existing file that is not
 *  valid wisdom (another format version included) is not overwritten: PK_EFORMAT. */
PK_API pk_status pk_wisdom_save(pk_context *ctx, const char *path);
/** Drop the context's entries (not the file's); no default file is loaded afterwards.
 *  NULL: no-op. */
PK_API void pk_wisdom_forget(pk_context *ctx);
/** Number of entries the context holds (0 for NULL); a lazy load happens only on dispatch,
 *  so call pk_wisdom_load first to list a file. */
PK_API int pk_wisdom_count(const pk_context *ctx);
/** Copy entry `index` (0 .. pk_wisdom_count - 1, in the order added) into *entry. */
PK_API pk_status pk_wisdom_get(const pk_context *ctx, int index, pk_wisdom_entry *entry);
/** Why the context's last load ignored its file ("<path>: byte 12 (line 1): ..."), or "" when
 *  it did not; never NULL.  The string lives as long as the context. */
PK_API const char *pk_wisdom_note(const pk_context *ctx);
/** The file path NULL stands for in pk_wisdom_load and pk_wisdom_save for this context
 *  (ctx may be NULL: the environment is read): "" when wisdom is disabled by
 *  PORTKERN_WISDOM or no default location exists (neither XDG_CACHE_HOME nor HOME).
 *  PK_ESIZE when it does not fit in len bytes. */
PK_API pk_status pk_wisdom_default_path(const pk_context *ctx, char *path, size_t len);

/* ---------------------------------------------------------------------------------------- */
/* diffusion3d: 7-point diffusion stencil (docs/KERNELS.md section 3).                       */
typedef struct pk_diffusion3d_params {
    int nx, ny, nz; /* field f is float32 [nz][ny][nx] */
    int count;      /* number of steps (>= 0) */
    double cc, cw, ce, cs, cn, cb, ct; /* coefficients; applied in float precision */
} pk_diffusion3d_params;

/** Defaults of docs/KERNELS.md: kappa = 0.1, dx = 1/nx, dt = 0.1 dx^2 / kappa, so every
 *  neighbour coefficient is 0.1 and cc = 0.4 (computed in float, as the original code). */
PK_API void pk_diffusion3d_params_default(pk_diffusion3d_params *p, int nx, int ny, int nz,
                                          int count);
/** Cosine field at time t (t = 0: initial field; t = count*dt: analytic solution),
 *  kappa = 0.1, dt and dx as in the defaults (dx = 1/nx for all three axes). */
PK_API pk_status pk_diffusion3d_field(int nx, int ny, int nz, double t, float *f);
/** dt of the default parameters for a given nx. */
PK_API double pk_diffusion3d_dt(int nx);

/** Serial reference (the oracle; plain C, no context needed).  f is updated in place.  A
 *  large field's steps run on the host's OpenMP threads, a share of the planes each: every
 *  point's expression is the same, so the bits are the one-thread loop's. */
PK_API pk_status pk_diffusion3d_reference(const pk_diffusion3d_params *p, float *f);

/** Run p->count steps on f (in place) on the context's backend.  variant: NULL or "" for
 *  the backend's best, else one of pk_diffusion3d_variants().  With the auto backend a
 *  variant name selects its backend. */
PK_API pk_status pk_diffusion3d(pk_context *ctx, const pk_diffusion3d_params *p,
                                const char *variant, float *f, pk_run_info *info);

/** Comma-separated variant names of a backend ("omp,omp-tiled,omp-phalanx"). */
PK_API const char *pk_diffusion3d_variants(pk_backend_id backend);

/* Device-resident use: the field stays on the device between calls. */
typedef struct pk_diffusion3d_plan pk_diffusion3d_plan;
PK_API pk_status pk_diffusion3d_plan_create(pk_diffusion3d_plan **plan, pk_context *ctx,
                                            const pk_diffusion3d_params *p, const char *variant,
                                            pk_run_info *info);
PK_API pk_status pk_diffusion3d_plan_upload(pk_diffusion3d_plan *plan, const float *f);
/** Run `count` more steps on the device (no host copies). */
PK_API pk_status pk_diffusion3d_plan_run(pk_diffusion3d_plan *plan, int count,
                                         pk_run_info *info);
PK_API pk_status pk_diffusion3d_plan_download(pk_diffusion3d_plan *plan, float *f);
/** Planes [z0, z1) of the resident field from f, or into f (float32 [z1 - z0][ny][nx]), the
 *  other planes untouched: what a distributed stencil moves for its halos, so that a field
 *  resident on a device crosses the host link only there (CUDA: through the uploads' pinned
 *  staging).  0 <= z0 < z1 <= nz (PK_EINVAL); after plan_upload (PK_ESTATE before, and
 *  after plan_execute, which leaves no resident field). */
PK_API pk_status pk_diffusion3d_plan_upload_planes(pk_diffusion3d_plan *plan, int z0, int z1,
                                                   const float *f);
PK_API pk_status pk_diffusion3d_plan_download_planes(pk_diffusion3d_plan *plan, int z0, int z1,
                                                     float *f);
/** count steps on f in place with the plan (FFTW's new-array execute): on the serial and
 *  OpenMP backends the steps run on f itself, nothing copied in or out (transfer_s 0; with an
 *  odd number of ping-pong passes the last lands in the plan's work array and is copied
 *  back, counted as transfer); on OpenCL and CUDA f is uploaded, stepped and downloaded.
 *  pk_diffusion3d does the same on the plan its context keeps.  Afterwards the plan holds
 *  no resident field (plan_upload / plan_run / plan_download): plan_upload again. */
PK_API pk_status pk_diffusion3d_plan_execute(pk_diffusion3d_plan *plan, float *f, int count,
                                             pk_run_info *info);
PK_API void pk_diffusion3d_plan_destroy(pk_diffusion3d_plan *plan);

/* ---------------------------------------------------------------------------------------- */
/* conv2d: StrayLight periodic image convolution (docs/KERNELS.md section 5).                 */
/* out[(i + kh/2) % h][(j + kw/2) % w] = sum_{k<kh, l<kw} image[(i+k) % h][(j+l) % w] psf[k][l]
 * (correlation: the PSF is not flipped; EDGE_WRAP boundaries; any size >= 1, a PSF larger
 * than the image wraps). */
#define PK_CONV2D_AUTO 0   /* direct or FFT by PSF size (crossover measured, docs/PERFORMANCE.md) */
#define PK_CONV2D_DIRECT 1
#define PK_CONV2D_FFT 2

typedef struct pk_conv2d_params {
    int h, w;   /* image float32 [h][w] */
    int kh, kw; /* psf float32 [kh][kw] */
    int method; /* PK_CONV2D_AUTO / _DIRECT / _FFT: used when no variant is named */
} pk_conv2d_params;

/** Serial reference (the oracle; modulo indexing, double accumulation). */
PK_API pk_status pk_conv2d_reference(const pk_conv2d_params *p, const float *image,
                                     const float *psf, float *out);
/** One frame on the context's backend.  variant: NULL or "" for the backend's choice. */
PK_API pk_status pk_conv2d(pk_context *ctx, const pk_conv2d_params *p, const char *variant,
                           const float *image, const float *psf, float *out, pk_run_info *info);
/** Comma-separated conv2d variant names of a backend. */
PK_API const char *pk_conv2d_variants(pk_backend_id backend);
/** StrayLight-like test data of p's sizes, reproducible by seed on every machine (what
 *  `portkern gen conv2d` writes): image float32 [h][w], a PROBA-V-like frame (smooth
 *  background, sharp edges, texture, point sources; about 0.3 .. 6), and psf float32
 *  [kh][kw], a bright off-centre core with faint wide wings and a ghost, summing to 1.
 *  Caller-sized buffers, like pk_conv2d's; either may be NULL to skip it, not both. */
PK_API pk_status pk_conv2d_generate(const pk_conv2d_params *p, uint32_t seed, float *image,
                                    float *psf);

/* Frames with a fixed PSF: the PSF (and its transform) stays on the device; each frame is
 * uploaded, convolved, downloaded - or kept resident between runs. */
typedef struct pk_conv2d_plan pk_conv2d_plan;
PK_API pk_status pk_conv2d_plan_create(pk_conv2d_plan **plan, pk_context *ctx,
                                       const pk_conv2d_params *p, const char *variant,
                                       const float *psf, pk_run_info *info);
PK_API pk_status pk_conv2d_plan_upload(pk_conv2d_plan *plan, const float *image);
PK_API pk_status pk_conv2d_plan_run(pk_conv2d_plan *plan, pk_run_info *info);
PK_API pk_status pk_conv2d_plan_download(pk_conv2d_plan *plan, float *out);
/** One frame, out = image (*) psf, with the plan on the caller's arrays (FFTW's new-array
 *  execute), as pk_conv2d does on the plan its context keeps.  On serial and OpenMP the run
 *  reads image and writes out themselves, nothing copied in or out (transfer_s 0; every
 *  variant builds its halo rows of min(kh, h) wrapped image rows, or the FFT's padded
 *  transform input, inside the run, timed as kernel, as plan_run does; no alignment
 *  needed).  out may overlap image, in place included, as in pk_conv2d: then the frame
 *  goes through the plan's own buffers (copied in and out, counted as transfer).  On
 *  OpenCL and CUDA the image is uploaded, convolved and downloaded.  Afterwards the plan
 *  holds no resident frame: plan_upload before plan_run again. */
PK_API pk_status pk_conv2d_plan_execute(pk_conv2d_plan *plan, const float *image, float *out,
                                        pk_run_info *info);
PK_API void pk_conv2d_plan_destroy(pk_conv2d_plan *plan);

/* ---------------------------------------------------------------------------------------- */
/* magicfilter3d: BigDFT magic filter, 3-D (docs/KERNELS.md section 2).                      */
/* Taps f_l, l = -8..7 (pk_magicfilter_taps).  One 1-D pass along an axis of n points:
 *   MF  (transpose = 0): y(i) = sum_{l=-8..7} f_l  x(i + l)
 *   MFT (transpose = 1): y(i) = sum_{l=-7..8} f_-l x(i + l)     (the adjoint of MF)
 * The 3-D operation applies the pass along all three axes (as three passes of 1-D
 * convolution + transposition).  Boundary conditions, per axis:
 *   PK_MF_PERIODIC: x(i) = x(i mod n), output n points (n >= 1; the wrap may go around
 *                   several times when n < 16);
 *   PK_MF_GROW:     free boundary, x = 0 outside [0, n): output n + 15 points, output j
 *                   being the sum at i = j - 7 (MF) or i = j - 8 (MFT), i.e. every point
 *                   the filter touches (BigDFT's magicfilter_free);
 *   PK_MF_SHRINK:   input n + 15 points, output n: the sums that lie wholly inside the input,
 *                   output i at input position i + 8 (MF) or i + 7 (MFT) (BigDFT's
 *                   magicfilter_free_t with MFT).  SHRINK of MFT is the adjoint of GROW of
 *                   MF, and SHRINK of MF the adjoint of GROW of MFT. */
#define PK_MF_PERIODIC 0
#define PK_MF_GROW 1
#define PK_MF_SHRINK 2

typedef struct pk_magicfilter3d_params {
    int n1, n2, n3; /* grid points per axis (i1 fastest): x is float64 [n3][n2][n1] for
                       PERIODIC and GROW, [n3+15][n2+15][n1+15] for SHRINK */
    int transpose;  /* 0: MF, 1: MFT */
    int bc;         /* PK_MF_PERIODIC, PK_MF_GROW or PK_MF_SHRINK */
} pk_magicfilter3d_params;

/** The 16 taps f_{-8} .. f_{7} (they sum to 1). */
PK_API const double *pk_magicfilter_taps(void);
/** Shapes of x and y, C order ([0] = n3 side, [2] = n1 side); also validates p. */
PK_API pk_status pk_magicfilter3d_shapes(const pk_magicfilter3d_params *p, size_t in_shape[3],
                                         size_t out_shape[3]);
/** Serial reference (the oracle; plain separable loops, modulo indexing). x and y must not
 *  overlap. */
PK_API pk_status pk_magicfilter3d_reference(const pk_magicfilter3d_params *p, const double *x,
                                            double *y);
/** y = MF x (or MFT x) on the context's backend.  variant: NULL or "" for the backend's
 *  best, else one of pk_magicfilter3d_variants().  x is not scanned for NaN/Inf: they reach
 *  the outputs whose window holds them, and through the SIMD variants up to 7 points
 *  further along an axis (README, "magicfilter3d"). */
PK_API pk_status pk_magicfilter3d(pk_context *ctx, const pk_magicfilter3d_params *p,
                                  const char *variant, const double *x, double *y,
                                  pk_run_info *info);
/** Comma-separated magicfilter3d variant names of a backend. */
PK_API const char *pk_magicfilter3d_variants(pk_backend_id backend);

/* Device-resident use: x and y (and the work buffers) stay on the device. */
typedef struct pk_magicfilter3d_plan pk_magicfilter3d_plan;
PK_API pk_status pk_magicfilter3d_plan_create(pk_magicfilter3d_plan **plan, pk_context *ctx,
                                              const pk_magicfilter3d_params *p,
                                              const char *variant, pk_run_info *info);
PK_API pk_status pk_magicfilter3d_plan_upload(pk_magicfilter3d_plan *plan, const double *x);
PK_API pk_status pk_magicfilter3d_plan_run(pk_magicfilter3d_plan *plan, pk_run_info *info);
PK_API pk_status pk_magicfilter3d_plan_download(pk_magicfilter3d_plan *plan, double *y);
/** y = MF x (or MFT x) with the plan on the caller's arrays, as pk_magicfilter3d does on the
 *  plan its context keeps: on serial and OpenMP the first pass reads x and the last writes
 *  y directly (both 64-byte aligned and apart; else through the plan's buffers), nothing
 *  copied; on OpenCL and CUDA x is uploaded and y downloaded.  Afterwards the plan holds no
 *  resident x: plan_upload before plan_run again. */
PK_API pk_status pk_magicfilter3d_plan_execute(pk_magicfilter3d_plan *plan, const double *x,
                                               double *y, pk_run_info *info);
PK_API void pk_magicfilter3d_plan_destroy(pk_magicfilter3d_plan *plan);

/** One of magicfilter3d's three passes alone (its separable form, BigDFT's; docs/KERNELS.md
 *  2): along each of the `lines` lines of x (float64 [lines][n_in]) the 16-tap filter of
 *  p->transpose (MF or MFT) and p->bc, written transposed: y[j][l] = sum_k f_k x[l][j+k+off],
 *  y float64 [n_out][lines]; n_in = n_out = n (PERIODIC), n_in = n and n_out = n + 15 (GROW),
 *  n_in = n + 15 and n_out = n (SHRINK).  pk_magicfilter3d is three such passes, each on the
 *  previous one's output (along axis 1 over n2 n3 lines, axis 2 over n3 n1', axis 3 over
 *  n1' n2'; ' = the output extent); each line here is computed as a host plan of the same
 *  variant computes it in its pass: bitwise (libportkern-mpi's transposes rely on it).
 *  It runs on the host whatever ctx's backend (ctx gives the threads and magicfilter3d.isa):
 *  variant "omp" on ctx's host threads (built with OpenMP), or the serial backend's "simd",
 *  "unrolled" or "serial" on one thread; NULL or "": "omp" where built with OpenMP, else
 *  "simd".  x and y must not overlap. */
typedef struct pk_magicfilter_pass_params {
    int n;          /* points along the filtered axis, as pk_magicfilter3d's n1 (1 .. INT_MAX-15) */
    size_t lines;   /* lines filtered, >= 1 */
    int transpose;  /* 0: MF, 1: MFT */
    int bc;         /* PK_MF_PERIODIC, PK_MF_GROW or PK_MF_SHRINK */
} pk_magicfilter_pass_params;
PK_API pk_status pk_magicfilter_pass(pk_context *ctx, const pk_magicfilter_pass_params *p,
                                     const char *variant, const double *x, double *y,
                                     pk_run_info *info);

/* ---------------------------------------------------------------------------------------- */
/* grid: w-projection convolution gridding (docs/KERNELS.md 1; OSKAR's oskar_grid_wproj_f). */
/* Per visibility i (float coordinates, C round(): halves away from zero):
 *   grid_scale = (float)(grid_size * cell_size_rad), centre = grid_size / 2
 *   pos_u = -uu[i] * grid_scale, pos_v = vv[i] * grid_scale
 *   grid_w = (int)round(sqrt(|ww[i] * w_scale|)), clamped to num_w_planes - 1; s = support[grid_w]
 *   grid_u = (int)round(pos_u) + centre, grid_v likewise; skipped (num_skipped) when the
 *   (2s+1)^2 footprint leaves the grid
 *   off_u = (int)round((round(pos_u) - pos_u) * oversample), off_v likewise
 *   for j, k in [-s, s]: c = kernel[grid_w][|off_v + j os|][|off_u + k os|] (conj when ww > 0)
 *       grid[grid_v + j][grid_u + k] += vis[i] * weight[i] * c;  sum += c.re
 *   norm += sum * weight[i]   (double)
 * Rule for non-finite input: a visibility whose uu, vv, ww, weight or vis holds a NaN or an
 * Inf is skipped and counted in num_skipped (its footprint is undefined or it would poison
 * the grid); so is one whose position overflows int.  A kernel stack with a non-finite
 * sample that a visibility could read is rejected (PK_ENONFINITE) by the references,
 * pk_grid and plan creation; w_scale must be finite in float. */
#define PK_GRID_KERNELS_FULL 0    /* kernels complex64 [num_w_planes][conv_size_half][conv_size_half] */
#define PK_GRID_KERNELS_COMPACT 1 /* per plane only the samples that can be read: [m][m] with
                                     m = oversample/2 + support*oversample + 1, planes back to back */

typedef struct pk_grid_params {
    int grid_size;        /* even, >= 2: grid complex64 [grid_size][grid_size] */
    int oversample;       /* even, >= 2 */
    double cell_size_rad; /* > 0, finite */
    double w_scale;       /* >= 0, finite */
    int num_w_planes;     /* >= 1 */
    int conv_size_half;   /* FULL layout: samples per kernel axis, >= oversample/2 +
                             support*oversample + 1 for every plane; ignored for COMPACT */
    int kernel_layout;    /* PK_GRID_KERNELS_FULL or PK_GRID_KERNELS_COMPACT */
    /* Tuning (0 = the variant's default, docs/PERFORMANCE.md). */
    int tile_size;        /* tiled variants: tile edge in cells (default: omp 128, or 256
                             where 2 max(support) + 1 > 128; opencl 64).
                             opencl-tiled needs tile_size^2 x 8 + 1024 bytes of local memory
                             (pk_device_info.local_mem_bytes): 0 picks 64 or the largest
                             power of two below it that fits; a larger explicit tile is
                             PK_EINVAL at plan creation */
    int central_radius;   /* tiled variants: half-width of the central box in tiles; -1: none */
    double tile_factor;   /* hybrid: fraction of the active grid that is tiled, in [0, 1];
                             negative: the device's default (docs) */
} pk_grid_params;

/** Fill *p with the defaults of the tuning fields and zeros elsewhere. */
PK_API void pk_grid_params_init(pk_grid_params *p);

typedef struct pk_grid_data {
    size_t num_vis;
    const float *uu, *vv, *ww; /* [num_vis], wavelengths */
    const float *vis;          /* complex64 [num_vis]: (re, im) pairs */
    const float *weight;       /* [num_vis] */
} pk_grid_data;

/** Complex samples of the kernel stack in p->kernel_layout for these supports (and checks
 *  p and support: every support in [0, ...] and, for FULL, within conv_size_half). */
PK_API pk_status pk_grid_kernel_count(const pk_grid_params *p, const int32_t *support,
                                      size_t *complex_count);
/** Where visibility i of d is gridded (the geometry of section 1.2 above, as every variant
 *  computes it): its centre cell, grid[*v][*u], and the support s of its w-plane, so that it
 *  updates the (2 s + 1)^2 cells around it; -1 when it is skipped (its footprint leaves the
 *  grid, or a value is not finite), and for a NULL pointer or i >= d->num_vis.  p and support
 *  as pk_grid_kernel_count accepts them, not checked again (one call per visibility: a
 *  picture of the updates, a histogram). */
PK_API int pk_grid_locate(const pk_grid_params *p, const int32_t *support, const pk_grid_data *d,
                          size_t i, int *u, int *v);
/** The FULL stack compacted: per plane the [m][m] corner that can be read. */
PK_API pk_status pk_grid_compact_kernels(const pk_grid_params *p, const int32_t *support,
                                         const float *full, float *compact);
/** Serial reference: the loop above exactly (float grid, double norm).  grid is accumulated
 *  into, *norm is accumulated into, *num_skipped is set.  On large lists it runs on the host's
 *  OpenMP threads, each updating the grid rows of one residue modulo the thread count in the
 *  loop's order: every cell receives its terms in the serial order, so the result is bitwise
 *  the one-thread loop's (this and pk_grid_reference_f64). */
PK_API pk_status pk_grid_reference(const pk_grid_params *p, const int32_t *support,
                                   const float *kernels, const pk_grid_data *d, float *grid,
                                   double *norm, int64_t *num_skipped);
/** The same loop accumulating in double (grid complex128): the oracle the tests compare
 *  every variant with (float sums in another order cannot match per cell). */
PK_API pk_status pk_grid_reference_f64(const pk_grid_params *p, const int32_t *support,
                                       const float *kernels, const pk_grid_data *d,
                                       double *grid, double *norm, int64_t *num_skipped);
/** Grid d onto grid (accumulated into; the caller zeroes it) on the context's backend. */
PK_API pk_status pk_grid(pk_context *ctx, const pk_grid_params *p, const char *variant,
                         const int32_t *support, const float *kernels, const pk_grid_data *d,
                         float *grid, double *norm, int64_t *num_skipped, pk_run_info *info);
PK_API const char *pk_grid_variants(pk_backend_id backend);
/* Repeated gridding with one kernel stack: the kernels are compacted, reordered for the
 * variant and uploaded once; each run grids a visibility list into the caller's grid. */
typedef struct pk_grid_plan pk_grid_plan;
PK_API pk_status pk_grid_plan_create(pk_grid_plan **plan, pk_context *ctx,
                                     const pk_grid_params *p, const char *variant,
                                     const int32_t *support, const float *kernels,
                                     pk_run_info *info);
PK_API pk_status pk_grid_plan_run(pk_grid_plan *plan, const pk_grid_data *d, float *grid,
                                  double *norm, int64_t *num_skipped, pk_run_info *info);
/** The plan on the caller's arrays, the name every kernel's plan has for it (FFTW's
 *  new-array execute): exactly pk_grid_plan_run, which already has these semantics (grid's
 *  plan keeps only the kernel stack; each call grids the caller's visibility list into the
 *  caller's grid, accumulating, and leaves nothing resident; serial and OpenMP write the
 *  grid directly, transfer_s 0; OpenCL and CUDA copy the list in, and the box of grid rows
 *  it touches in and back out, inside the call).  There is no upload, so no state:
 *  plan_run and plan_execute may follow each other in any order. */
PK_API pk_status pk_grid_plan_execute(pk_grid_plan *plan, const pk_grid_data *d, float *grid,
                                      double *norm, int64_t *num_skipped, pk_run_info *info);
PK_API void pk_grid_plan_destroy(pk_grid_plan *plan);

/** The COMPACT stack expanded to FULL (pk_grid_compact_kernels' inverse): p describes the
 *  FULL stack (kernel_layout FULL, conv_size_half); samples outside a plane's corner are 0. */
PK_API pk_status pk_grid_expand_kernels(const pk_grid_params *p, const int32_t *support,
                                        const float *compact, float *full);

/* ---------------------------------------------------------------------------------------- */
/* image and degrid: the dirty image of a visibility list and its exact adjoint, the model   */
/* prediction (docs/KERNELS.md section 7).  Built on grid (any grid variant and backend) and */
/* a host FFT (FFTW single precision, threaded); without FFTW at configure time every call   */
/* below except pk_image_params_init is PK_EUNSUPPORTED and says so.                         */
/*
 * Pixels and orientation.  The image is float32 [N][N], N = image_size, row y, column x;
 * pixel (y, x) lies at px = x - N/2, py = y - N/2 from the phase centre (pixel [N/2][N/2]),
 * at direction cosines
 *     l = -px * cell,   m = +py * cell        (cell = grid.cell_size_rad)
 * i.e. +l (east, with the gridder's negated u) towards smaller x, as sky images show right
 * ascension, and +m (north) towards larger y.  A source of the generator's convention
 * V = S exp(-2 pi i (u l + v m - w (n - 1))) appears at x = N/2 - l / cell, y = N/2 + m / cell.
 *
 * Dirty image (pk_image): the grid G of the visibilities (pk_grid's semantics exactly, all
 * of them, accumulated into a zeroed grid; norm the gridder's norm), then
 *     F(px, py) = sum_{a, b} G[b][a] exp(+2 pi i ((a - g/2) px + (b - g/2) py) / g)
 *     image[y][x] = Re F(px, py) / (norm * c(px) * c(py))
 * (g = grid_size): the inverse FFT of the grid with its centre cell at the origin, cropped to
 * the central N x N pixels, divided by the grid correction c and normalised by the sum of
 * weights the gridder reports (norm: sum over gridded visibilities of weight * the sum of
 * their kernel footprint, 1 per visibility for kernels that sum to 1).  With this
 * normalisation a source of flux S at the phase centre images to exactly S; elsewhere to S
 * within the error bound of docs/KERNELS.md 7.4.  An empty list (norm 0) images to zeros.
 *
 * Grid correction c (docs/KERNELS.md 7.2), from the kernel stack itself, not from a taper
 * formula: plane 0 (w = 0), which must be real and separable, K0[y][x] = a(y) a(x); its row 0
 * read at every sample the gridder can read, j in [-(M - 1), M - 1], M = os/2 + s0 os + 1:
 *     S(p) = sum_j t_j K0[0][|j|] cos(2 pi j p / (os g)),  t_j = 1/2 at |j| = M - 1, else 1
 *     c(p) = S(p) / S(0),    kappa = S(0)^2 / (os^2 K0[0][0])
 * (the kernel's Fourier transform at image pixel p, the average over the gridder's
 * oversampled offsets; kappa is the mean footprint sum).  Plane 0 is refused (PK_EINVAL,
 * naming the sample) when its imaginary part or its departure from separability exceeds
 * PK_IMAGE_SEPARABLE_TOL of its peak (1e-3: the level below which OSKAR's support rule
 * drops kernel samples, so smaller defects are within the kernel's own truncation error;
 * the generator's plane 0 is real to 1.1e-4 of its peak: its screen's unpaired edge sample),
 * when K0[0][0] <= 0, or when c falls to
 * PK_IMAGE_MIN_CORRECTION or below anywhere in the image (the correction would amplify
 * errors more than 1000 times: the image is too large for the kernel's taper).
 *
 * Degridding (pk_degrid), the exact adjoint: for a model image X float32 [N][N]
 *     H[b][a] = sum_{y, x} X[y][x] / (kappa c(px) c(py)) exp(-2 pi i ((a - g/2) px + (b - g/2) py) / g)
 *     vis[i]  = sum_{j, k in [-s, s]} conj(c_jk) H[gv + j][gu + k]
 * with gu, gv, s and the coefficients c_jk (conjugated when ww > 0) exactly as the gridder
 * computes them for visibility i (pk_grid_locate); a visibility the gridder would skip gets
 * 0 and is counted.  A point source of flux S in the model predicts vis ~ S exp(-2 pi i (u l
 * + v m - w (n - 1))), the generator's convention.  Weights are not applied (a prediction),
 * but a visibility whose weight is not finite is skipped, as the gridder skips it.  Adjoint
 * relation (real inner products; tested on every backend to 1e-5 relative):
 *     sum_i weight[i] Re(conj(degrid(X)[i]) v[i]) = (norm / kappa) sum_{y,x} X[y][x] image(v)[y][x]
 *
 * Plans: the grid plan (kernel stack reordered for its variant), the correction, the FFTW
 * plans (1-D: the 2-D transform runs as a pass over rows and one over columns, each pruned
 * to what is non-zero or needed, threaded by the library) and the g x g complex64 grid
 * buffer are made once; each execute runs on the caller's arrays.  On OpenCL the grid is
 * made on the device and downloaded (degrid: the box of the transformed grid uploaded), the
 * FFT runs on the host (the run info's reason says so).  On CUDA the grid, a cuFFT transform
 * and the crop (degrid: the placement, cuFFT and the gather, variant "cuda") run on the device
 * and only the image (the model) and the visibilities cross the link, with stages "grid",
 * "fft", "correct", "transfer" ("place", "fft", "degrid", "transfer"); without libcufft the
 * host FFT, said in the reason (docs/KERNELS.md 7.7).  Run info: the grid step's backend,
 * device and variant; stages "zero", "grid", "fft rows", "fft cols+crop" (image) or
 * "place+fft cols", "fft rows", "degrid" (degrid) on the host FFT; flops 8 per grid update plus the full
 * transform's 5 g^2 log2(g^2) (a model: the pruned passes do less). */
#define PK_IMAGE_SEPARABLE_TOL 1e-3
#define PK_IMAGE_MIN_CORRECTION 1e-3

typedef struct pk_image_params {
    pk_grid_params grid;   /* the gridder's parameters (grid_size g, cell, oversample, w) */
    int image_size;        /* N: even, 2 <= N <= grid_size; N * cell / 2 < 1 */
    double image_cell_rad; /* pixel size: 0 (default) or grid.cell_size_rad itself (to 1e-9
                              relative); the FFT fixes it, any other value is PK_EINVAL */
} pk_image_params;

/** pk_grid_params_init on grid, zeros elsewhere. */
PK_API void pk_image_params_init(pk_image_params *p);
/** The grid correction of docs/KERNELS.md 7.2 for the stack (support, kernels as pk_grid
 *  takes them): corr[x] = c(x - N/2) for x in [0, N) (may be NULL), *kappa (may be NULL).
 *  Errors as above when plane 0 cannot be corrected. */
PK_API pk_status pk_image_correction(const pk_image_params *p, const int32_t *support,
                                     const float *kernels, double *corr, double *kappa);

/** The dirty image of d (d->vis and weights as pk_grid takes them) into image float32
 *  [N][N] (overwritten).  variant: a grid variant (pk_grid_variants) or NULL / "" for the
 *  backend's choice.  *norm (may be NULL) receives the gridder's norm of this call (set, not
 *  accumulated), *num_skipped (may be NULL) the visibilities the gridder skipped.  The
 *  one-shot call keeps its plan in the context as grid's does (under the parameters, image
 *  size and cell, supports and whole kernel stack), with the plan's g x g complex64 grid:
 *  8 g^2 bytes against the context's ceiling (2.6 GB at g = 18000; a plan beyond the ceiling
 *  is not kept; pk_context_release_cache frees it). */
PK_API pk_status pk_image(pk_context *ctx, const pk_image_params *p, const char *variant,
                          const int32_t *support, const float *kernels, const pk_grid_data *d,
                          float *image, double *norm, int64_t *num_skipped, pk_run_info *info);
typedef struct pk_image_plan pk_image_plan;
PK_API pk_status pk_image_plan_create(pk_image_plan **plan, pk_context *ctx,
                                      const pk_image_params *p, const char *variant,
                                      const int32_t *support, const float *kernels,
                                      pk_run_info *info);
/** One dirty image of a new visibility list with the plan (as pk_image). */
PK_API pk_status pk_image_plan_execute(pk_image_plan *plan, const pk_grid_data *d, float *image,
                                       double *norm, int64_t *num_skipped, pk_run_info *info);
PK_API void pk_image_plan_destroy(pk_image_plan *plan);
/** The steps of pk_image after its grid step, on a grid the caller made: grid complex64
 *  [g][g] as pk_grid leaves it for p->grid (zeroed, then the visibilities), norm the
 *  gridder's norm; image float32 [N][N] (overwritten) is what pk_image makes from a grid
 *  bitwise equal to it (tested).  On the host (FFTW single precision) whatever ctx's backend,
 *  on ctx's host threads (ctx NULL: one thread); grid is read, not modified (its rows with
 *  a non-zero cell are copied into a g x g buffer of the call's, the others never touched
 *  there).  For a reference: the image of a grid already verified
 *  (portkern tune: grid's double reference rounded to complex64). */
PK_API pk_status pk_image_from_grid(pk_context *ctx, const pk_image_params *p,
                                    const int32_t *support, const float *kernels,
                                    const float *grid, double norm, float *image);

/* pk_image_from_grid in two passes on parts of the grid, for a grid split over processes
 * (libportkern-mpi's pk_mpi_grid_plan_image): the row pass on any rows, then, once each crop
 * column's g cells are together, the column pass on any of the crop's column batches.  An
 * image so made equals pk_image_from_grid's of the whole grid bitwise (each row and each
 * batch the same FFTW transform, the same factors; tested).  Host only (FFTW single
 * precision), on ctx's host threads (ctx NULL: one thread), whatever ctx's backend. */
typedef struct pk_image_passes pk_image_passes;
/** Errors as pk_image_from_grid's for p, support and kernels (the grid correction). */
PK_API pk_status pk_image_passes_create(pk_image_passes **ip, pk_context *ctx,
                                        const pk_image_params *p, const int32_t *support,
                                        const float *kernels);
/** The column pass's batches (0 for NULL), and batch b's crop columns [*x0, *x0 + *width):
 *  the batches tile [0, N) in order.  Crop column x reads grid column (x - N/2) mod g. */
PK_API int pk_image_passes_batches(const pk_image_passes *ip);
PK_API pk_status pk_image_passes_batch(const pk_image_passes *ip, int b, int *x0, int *width);
/** Row pass: rows complex64 [nrows][g], grid rows as pk_grid leaves them, each transformed in
 *  place (a row of zeros is left zero, +0). */
PK_API pk_status pk_image_passes_rows(pk_image_passes *ip, float *rows, size_t nrows);
/** Column pass over batches [b0, b1): cols complex64 [columns][nrows] holds crop column
 *  x0 + j's cells of grid rows [row0, row0 + nrows) after the row pass at cols + 2 j nrows
 *  (x0: batch b0's first column; the column's other rows are taken as zero: the rows
 *  outside the visibilities' band need not be held); read only.  Writes
 *  image[y stride + x - x0] for y in [0, N) and x in the batches' columns:
 *  pk_image_from_grid's pixels for the norm given. */
PK_API pk_status pk_image_passes_cols(pk_image_passes *ip, const float *cols, int row0,
                                      int nrows, int b0, int b1, double norm, float *image,
                                      size_t stride);
PK_API void pk_image_passes_destroy(pk_image_passes *ip);

/** Model visibilities of the model image float32 [N][N] at d's uu, vv, ww (d->weight may be
 *  NULL: all 1; d->vis is not read) into vis complex64 [d->num_vis] (overwritten).  variant:
 *  a degrid variant (pk_degrid_variants) or NULL / "".  *num_skipped (may be NULL): the
 *  visibilities left 0.  The one-shot call keeps its plan in the context as pk_image's. */
PK_API pk_status pk_degrid(pk_context *ctx, const pk_image_params *p, const char *variant,
                           const int32_t *support, const float *kernels, const float *model,
                           const pk_grid_data *d, float *vis, int64_t *num_skipped,
                           pk_run_info *info);
/** pk_degrid on the serial backend (its FFT passes, then the reference loop), the passes and
 *  the loop (shares of the visibilities) on ctx's host threads (ctx NULL: one thread) whatever
 *  ctx's backend: vis bitwise those of pk_degrid on a serial context (tested; each column
 *  batch and each row is one 1-D FFTW transform of the same plans, and each visibility's sum
 *  its own, whatever the thread count).  For a reference (portkern
 *  tune: degrid's, where the one-thread FFT of an 18000^2 grid was most of its cost). */
PK_API pk_status pk_degrid_host_reference(pk_context *ctx, const pk_image_params *p,
                                          const int32_t *support, const float *kernels,
                                          const float *model, const pk_grid_data *d,
                                          float *vis, int64_t *num_skipped);
/** Comma-separated degrid variants of a backend ("serial"; OpenMP "omp-tiled": visibilities
 *  in parallel in the order of their 64 x 64-cell tile, a SIMD gather without atomics, and
 *  "omp": the serial loop in the list's order; OpenCL "opencl": a work-item per visibility, the box of the
 *  transformed grid uploaded; "" where the backend has none yet: CUDA). */
PK_API const char *pk_degrid_variants(pk_backend_id backend);
typedef struct pk_degrid_plan pk_degrid_plan;
PK_API pk_status pk_degrid_plan_create(pk_degrid_plan **plan, pk_context *ctx,
                                       const pk_image_params *p, const char *variant,
                                       const int32_t *support, const float *kernels,
                                       pk_run_info *info);
PK_API pk_status pk_degrid_plan_execute(pk_degrid_plan *plan, const float *model,
                                        const pk_grid_data *d, float *vis, int64_t *num_skipped,
                                        pk_run_info *info);
PK_API void pk_degrid_plan_destroy(pk_degrid_plan *plan);
/** Serial references of degridding from a grid: vis[i] = sum conj(c_jk) grid[gv+j][gu+k]
 *  (the second line above) from a complex64 grid in float arithmetic in the loop's order
 *  (the backends' oracle), or from a complex128 grid in double (the tests' adjoint of
 *  pk_grid_reference_f64).  p is the gridder's; d->weight may be NULL; vis overwritten. */
PK_API pk_status pk_degrid_reference(const pk_grid_params *p, const int32_t *support,
                                     const float *kernels, const float *grid,
                                     const pk_grid_data *d, float *vis, int64_t *num_skipped);
PK_API pk_status pk_degrid_reference_f64(const pk_grid_params *p, const int32_t *support,
                                         const float *kernels, const double *grid,
                                         const pk_grid_data *d, double *vis,
                                         int64_t *num_skipped);

/* ---------------------------------------------------------------------------------------- */
/* Lattice QCD (docs/KERNELS.md section 4): laplace2d, su3, dslash.                           */
/* Complex numbers are interleaved (re, im) doubles (complex128), as NumPy stores them.      */

/** Random SU(3) matrices (unitary, det 1 to rounding): n matrices u[n][3][3] complex128,
 *  reproducible by seed (the same seed gives the same matrices on every machine). */
PK_API pk_status pk_lqcd_random_su3(uint64_t seed, size_t n, double *u);
/** Random complex numbers with Gaussian re and im (sigma 1): n complex128 values (spinors
 *  are [...][3][4] or [...][4][3] blocks of them), reproducible by seed. */
PK_API pk_status pk_lqcd_random_complex(uint64_t seed, size_t n, double *z);

/* ---- laplace2d (docs/KERNELS.md 4a) ------------------------------------------------------ */
/* phi float32 [l][l] (y, x), periodic; one iteration, in float arithmetic, exactly as the
 * serial reference (lib/ref/laplace2d_ref.c) evaluates it:
 *   a = (float)sigma,  inv = (float)(1 / (1 + 4 a))   (the quotient taken in double)
 *   phi'(x,y) = (phi(x,y) + a ((phi(x+1,y) + phi(x-1,y)) + (phi(x,y-1) + phi(x,y+1)))) inv
 * i.e. (phi + sigma (sum of the 4 neighbours)) / (1 + 4 sigma) with a multiplication by the
 * rounded reciprocal.  Backends evaluate the same tree; the only freedom they take is fusing
 * phi + a (...) into one FMA (one rounding fewer), so results agree to a few ulp per
 * iteration (the bound is derived in tests/lp_common.h). */
#define PK_LAP_LEXI 0 /* phi[y][x] */
#define PK_LAP_HVFO 1 /* pho[y][x'][w] = phi[y][w*(l/nw) + x'], x' < l/nw: lanes hold distant x */
/* The hvfo lane count when p->nw is 0: 16 floats, one 64-byte cache line (one AVX-512
 * vector, two AVX2 ones).  A fixed library default rather than the backend's width: the
 * field is reordered on the host before a backend is chosen, and a plan's layout must not
 * depend on which backend auto selection lands on. */
#define PK_LAP_DEFAULT_NW 16

typedef struct pk_laplace2d_params {
    int l;        /* lattice extent (>= 1); hvfo needs l a multiple of nw */
    int count;    /* iterations (>= 0) */
    double sigma; /* > 0 and finite, also once rounded to float; applied in float */
    int layout;   /* PK_LAP_LEXI or PK_LAP_HVFO: the layout the kernel runs on */
    int nw;       /* hvfo lanes (floats per lane group), 1 <= nw <= l, l % nw == 0;
                     0 = PK_LAP_DEFAULT_NW; ignored by lexi (must not be negative) */
} pk_laplace2d_params;

/** "lexi", "hvfo"; NULL for an unknown layout.  _from_name parses them. */
PK_API const char *pk_laplace2d_layout_name(int layout);
PK_API pk_status pk_laplace2d_layout_from_name(const char *name, int *layout);
/** Reorder lexicographic phi[l][l] into hvfo with nw lanes (l % nw == 0; nw 0: the
 *  default), and back.  Not in place: the two arrays must not overlap. */
PK_API pk_status pk_laplace2d_to_hvfo(int l, int nw, const float *lexi, float *hvfo);
PK_API pk_status pk_laplace2d_from_hvfo(int l, int nw, const float *hvfo, float *lexi);
/** Serial reference on lexicographic data, in place (p->layout and p->nw are ignored); a
 *  large field's rows on the host's OpenMP threads, bitwise the one-thread loop. */
PK_API pk_status pk_laplace2d_reference(const pk_laplace2d_params *p, float *phi);
/** p->count iterations on phi (lexicographic, in place) on the context's backend; an hvfo
 *  field is reordered to p->layout and back on the host (info->layout_s, apart from
 *  kernel_s), except on OpenMP, whose first and last pass convert phi's rows as they read and
 *  write them (inside kernel_s, layout_s 0; the same bits).  info->bytes counts 8 B per site and iteration (one float read, one written:
 *  the ideal traffic), info->flops 7 per site and iteration. */
PK_API pk_status pk_laplace2d(pk_context *ctx, const pk_laplace2d_params *p, const char *variant,
                              float *phi, pk_run_info *info);
PK_API const char *pk_laplace2d_variants(pk_backend_id backend);
/* Handle: the reordered field stays on the device between runs; upload reorders lexicographic
 * phi into p->layout and download reorders back (plan_run's info->layout_s is 0).  plan_run
 * runs `count` more iterations (>= 0) on the field as the previous runs left it. */
typedef struct pk_laplace2d_plan pk_laplace2d_plan;
PK_API pk_status pk_laplace2d_plan_create(pk_laplace2d_plan **plan, pk_context *ctx,
                                          const pk_laplace2d_params *p, const char *variant,
                                          pk_run_info *info);
PK_API pk_status pk_laplace2d_plan_upload(pk_laplace2d_plan *plan, const float *phi);
PK_API pk_status pk_laplace2d_plan_run(pk_laplace2d_plan *plan, int count, pk_run_info *info);
PK_API pk_status pk_laplace2d_plan_download(pk_laplace2d_plan *plan, float *phi);
/** count iterations on phi (lexicographic, in place) with the plan, as pk_laplace2d does on
 *  the plan its context keeps: on serial and OpenMP the sweeps run on the field itself (phi
 *  for lexi, the plan's reordered copy for hvfo; OpenMP's hvfo converts phi's rows in its
 *  first and last pass instead) when it is 64-byte aligned, nothing copied in or out but, on
 *  serial, an odd number of sweeps' result (OpenMP makes a pass in place, omp-tb all of
 *  them); on OpenCL and CUDA it is uploaded and downloaded.
 *  On CUDA, phi in device memory of the plan's device (cudaMalloc, CuPy, PyTorch) stays
 *  there: lexi iterates on it, hvfo is reordered into the plan's device buffer and back on
 *  the device (info->layout_s; transfer_s 0, the reason says "transfer: device pointers,
 *  none").  plan_upload and plan_download of an hvfo plan take host memory only (PK_EINVAL).
 *  Afterwards the plan holds no resident field: plan_upload before plan_run again. */
PK_API pk_status pk_laplace2d_plan_execute(pk_laplace2d_plan *plan, float *phi, int count,
                                           pk_run_info *info);
PK_API void pk_laplace2d_plan_destroy(pk_laplace2d_plan *plan);

/* ---- su3 (docs/KERNELS.md 4b) ------------------------------------------------------------ */
/* chi[s][c][k] = sum_c' u[s][c][c'] psi[s][c'][k]: u complex128 [nv][3][3],
 * psi and chi complex128 [nv][3][4] (colour, spin).  264 flops, 528 bytes per site.
 * Layouts (what the kernel reads and writes; psi and chi are AoS [nv][3][4] except in vfo and
 * hvfo; doubles per site of u in brackets):
 *   aos      u[nv][3][3]                                    (18, 144 B: the baseline)
 *   short    u[nv][8]: u00 u01 u02 u10 u11 u12 u20 u21       (16, 128 B: every link starts
 *            on a 64-byte line); u22 = conj(u00 u11 - u01 u10) is recomputed per use
 *   padded   u[nv][12]: the 9 elements and 3 zeros          (24, 192 B = 3 cache lines:
 *            every link starts on a 64-byte boundary, a whole number of lines per link)
 *   vfo      u[3][3][nvs], psi/chi [3][4][nvs], complex, nvs = nv rounded up to a multiple of
 *            4 (4 complex = 64 B: every row starts on a 64-byte line, so vectors and
 *            non-temporal stores are aligned); the sites nv .. nvs-1 hold zeros
 *   hvfo     u[nb][3][3][re,im][nw], psi/chi [nb][3][4][re,im][nw], nb = ceil(nv / nw):
 *            site s is lane s % nw of block s / nw; the nw real parts of an element, then its
 *            nw imaginary parts (vector-friendly complex arithmetic); the last block's lanes
 *            past nv hold zeros
 *   recon12  u[nv][2][3]: rows 0 and 1                      (12, 96 B); row 2 =
 *            conj(row0 x row1), i.e. u2k = conj(u0i u1j - u0j u1i), (i, j, k) cyclic
 * short and recon12 assume SU(3) links (unitary, det 1): they return u psi for the
 * reconstructed u, which differs from the stored one when the link is not in SU(3). */
#define PK_SU3_AOS 0
#define PK_SU3_SHORT 1
#define PK_SU3_PADDED 2
#define PK_SU3_VFO 3
#define PK_SU3_HVFO 4
#define PK_SU3_RECON12 5
#define PK_SU3_LAYOUTS 6
#define PK_SU3_NW_DEFAULT 8 /* hvfo sites per block: one AVX-512 vector of doubles */
#define PK_SU3_NW_MAX 64

typedef struct pk_su3_params {
    size_t nv;  /* sites (>= 1) */
    int layout; /* PK_SU3_* */
    int nw;     /* hvfo sites per block, 1 .. PK_SU3_NW_MAX, 0 = PK_SU3_NW_DEFAULT; other
                   layouts ignore it (it must still be 0 .. PK_SU3_NW_MAX) */
} pk_su3_params;

PK_API const char *pk_su3_layout_name(int layout); /* "aos", "short", ...; NULL if unknown */
PK_API pk_status pk_su3_layout_from_name(const char *name, int *layout);
/** Doubles the layout stores for u and for one spinor field (psi or chi), padding included. */
PK_API pk_status pk_su3_layout_sizes(const pk_su3_params *p, size_t *u_doubles,
                                     size_t *spinor_doubles);
/** The layout conversion: AoS u and psi into the layout (either output may be NULL; the
 *  padding is written as zeros), and a spinor field in the layout back to AoS. */
PK_API pk_status pk_su3_pack(const pk_su3_params *p, const double *u, const double *psi,
                             double *u_layout, double *psi_layout);
PK_API pk_status pk_su3_unpack_spinor(const pk_su3_params *p, const double *chi_layout,
                                      double *chi);
/** Serial reference on AoS data (the oracle). */
PK_API pk_status pk_su3_reference(size_t nv, const double *u, const double *psi, double *chi);
/** chi = u psi on the context's backend; AoS in and out, converted to p->layout and back
 *  (info->layout_s; layouts whose psi/chi are AoS pass the caller's arrays through). */
PK_API pk_status pk_su3(pk_context *ctx, const pk_su3_params *p, const char *variant,
                        const double *u, const double *psi, double *chi, pk_run_info *info);
PK_API const char *pk_su3_variants(pk_backend_id backend);
typedef struct pk_su3_plan pk_su3_plan;
PK_API pk_status pk_su3_plan_create(pk_su3_plan **plan, pk_context *ctx, const pk_su3_params *p,
                                    const char *variant, pk_run_info *info);
/** Upload AoS u and psi: converted to the plan's layout on the host, then copied to the
 *  device.  Runs reuse the converted data; plan_run's info->layout_s is 0. */
PK_API pk_status pk_su3_plan_upload(pk_su3_plan *plan, const double *u, const double *psi);
PK_API pk_status pk_su3_plan_run(pk_su3_plan *plan, pk_run_info *info);
/** chi (AoS) of the last run; PK_ESTATE before a run of the current upload. */
PK_API pk_status pk_su3_plan_download(pk_su3_plan *plan, double *chi);
/** chi = u psi (AoS in and out) with the plan on the caller's arrays, as pk_su3 does on the
 *  plan its context keeps.  On serial and OpenMP the kernel reads and writes the arrays in
 *  the plan's layout directly, nothing copied in or out (transfer_s 0): for aos that is
 *  u, psi and chi themselves; the other layouts convert u (and for vfo and hvfo psi and
 *  chi) on the host, as pk_su3 does (info->layout_s; OpenMP's omp-simd vfo and hvfo convert
 *  in registers, inside kernel_s, layout_s 0).  The caller's arrays that the kernel
 *  touches must be 64-byte aligned (the vector kernels) and chi apart from u and psi;
 *  otherwise they go through the plan's arrays (copied in and out, counted as transfer).
 *  chi may overlap u or psi, as in pk_su3.  On OpenCL and CUDA they are uploaded and
 *  downloaded.  On CUDA, u, psi and chi all in device memory of the plan's device
 *  (cudaMalloc, CuPy, PyTorch) stay there: every layout is converted from AoS and chi back
 *  on the device, into and out of the plan's own device arrays (info->layout_s; transfer_s
 *  0, the reason says "transfer: device pointers, none"); chi may overlap psi or u.  A mix
 *  of host and device arrays, or another device's memory, is PK_EINVAL in the layouts but
 *  aos; so are device arrays in their plan_upload and plan_download (converted on the host).
 *  Afterwards the plan holds no resident u and psi: plan_upload again. */
PK_API pk_status pk_su3_plan_execute(pk_su3_plan *plan, const double *u, const double *psi,
                                     double *chi, pk_run_info *info);
PK_API void pk_su3_plan_destroy(pk_su3_plan *plan);

/* ---- dslash (docs/KERNELS.md 4c) --------------------------------------------------------- */
/* chi(x) = 1/(2 kappa) psi(x)
 *        + 1/2 sum_mu [ (1 - gamma_mu) U_mu(x) psi(x+mu) + (1 + gamma_mu) U_mu(x-mu)^+ psi(x-mu) ]
 * DeGrand-Rossi gammas, periodic in all four directions, mu = 0..3 = x, y, z, t.  The sign
 * before the sum is the source paper's; the common convention (Chroma, QUDA: M = 1/(2 kappa)
 * - 1/2 D, D the sum) has a minus.  D is linear in the links, so this chi is the common
 * convention's applied to the links -U.
 * u complex128 [4][t][z][y][x][3][3] (U_mu(x)), psi and chi complex128 [t][z][y][x][4][3]
 * (spin, colour).  1320 flops per site for the hopping term (run info's flops); bytes by the
 * no-reuse model: 3072 per site, 2688 with recon12 (docs/PERFORMANCE.md).
 * recon12: the library keeps the first two rows of each link (compressed on the host when
 * uploading, timed into info->layout_s of one-shot calls; serial's and OpenMP omp's one-shot
 * calls and plan_execute read rows 0 and 1 of the caller's full links in place instead,
 * layout_s 0) and the kernels rebuild the third
 * as conj(row0 x row1): right for SU(3) links only.  The caller always passes full links.
 * t_begin, t_end: chi on the t-planes [t_begin, t_end) only (0 <= t_begin < t_end <= t; both
 * 0, the default: all), the same bits as those planes of the whole call; chi's other planes
 * are left as they are, and chi need only hold the first t_end planes (u and psi: the whole
 * lattice; the range's hops read psi's planes t_begin - 1 and t_end, mod t).  z_begin,
 * z_end: the same along z (0, 0: all), in each computed t-plane: with both, chi on the box
 * of the two ranges.  The serial and openmp backends only (omp-vnode then never lanes along
 * a ranged direction); OpenCL and CUDA refuse a range (PK_EUNSUPPORTED).  flops and bytes
 * count the range's sites.  A distributed dslash (libportkern-mpi) computes its interior
 * sites while the halos travel with them. */
typedef struct pk_dslash_params {
    int x, y, z, t; /* lattice extents (>= 1) */
    double kappa;   /* hopping parameter (> 0, finite) */
    int recon12;    /* 1: links kept as two rows, the third reconstructed in the kernel */
    int t_begin, t_end; /* t-planes of chi computed, [t_begin, t_end); 0, 0: all */
    int z_begin, z_end; /* z-planes of chi computed in them, [z_begin, z_end); 0, 0: all */
} pk_dslash_params;

/** Serial reference (the oracle; plain loops over the formula above with full 4x4 gammas and
 *  the full links; p->recon12 is not used).  p is checked before the arrays; chi must not
 *  overlap u or psi. */
PK_API pk_status pk_dslash_reference(const pk_dslash_params *p, const double *u,
                                     const double *psi, double *chi);
/** chi = M psi on the context's backend.  variant: NULL or "" for the backend's first
 *  (serial: serial; openmp: omp-vnode, omp; opencl: opencl; cuda: cuda).  omp-vnode picks
 *  its SIMD width at plan creation (PORTKERN_DS_ISA=avx512|avx2|generic lowers it) and names
 *  its lanes and split direction in info->reason. */
PK_API pk_status pk_dslash(pk_context *ctx, const pk_dslash_params *p, const char *variant,
                           const double *u, const double *psi, double *chi, pk_run_info *info);
PK_API const char *pk_dslash_variants(pk_backend_id backend);
/* Device-resident use: u and psi uploaded once (converted to the backend's layout then),
 * any number of runs; plan_run's info->layout_s is 0. */
typedef struct pk_dslash_plan pk_dslash_plan;
PK_API pk_status pk_dslash_plan_create(pk_dslash_plan **plan, pk_context *ctx,
                                       const pk_dslash_params *p, const char *variant,
                                       pk_run_info *info);
PK_API pk_status pk_dslash_plan_upload(pk_dslash_plan *plan, const double *u, const double *psi);
PK_API pk_status pk_dslash_plan_run(pk_dslash_plan *plan, pk_run_info *info);
PK_API pk_status pk_dslash_plan_download(pk_dslash_plan *plan, double *chi);
/** chi = M psi with the plan on the caller's arrays (full links, as plan_upload takes them),
 *  as pk_dslash does on the plan its context keeps.  On serial and on OpenMP's omp the
 *  kernel reads u and psi and writes chi directly, nothing copied in or out (transfer_s 0;
 *  no alignment needed; recon12 reads rows 0 and 1 of the full links in place).  Elsewhere
 *  recon12's two-row links are made on the host first (info->layout_s).  omp-vnode runs on
 *  its own lane layout, into which psi and u are converted and chi back (its upload and
 *  download: counted as transfer), as are the
 *  uploads and downloads of OpenCL and CUDA (CUDA's go up and down as they are, through
 *  the staging ring, and are reordered on the device).  On CUDA, u, psi and chi all in
 *  device memory of the plan's device (cudaMalloc, CuPy, PyTorch) stay there: reordered
 *  (recon12: rows 0 and 1 kept) into the plan's device arrays and chi back on the device
 *  (info->layout_s; transfer_s 0, the reason says "transfer: device pointers, none"); a
 *  mix of host and device arrays, another device's memory, or device arrays in
 *  plan_upload / plan_download: PK_EINVAL.  chi may overlap u or psi, as in pk_dslash:
 *  then the fields go through the plan's arrays.  Afterwards the plan holds no resident
 *  fields: plan_upload before plan_run again. */
PK_API pk_status pk_dslash_plan_execute(pk_dslash_plan *plan, const double *u, const double *psi,
                                        double *chi, pk_run_info *info);
/** chi = M psi with the links of the plan's last plan_upload (which stay resident), on the
 *  caller's psi and chi as plan_execute does: serial and omp read psi and write chi
 *  directly; omp-vnode converts psi alone into its lanes (of a range: the rows the range
 *  reads) and the range's chi back; OpenCL and CUDA upload psi alone (host memory; CUDA
 *  reorders it on the device) and download chi, the links staying on the device.  For a
 *  solver, or a distributed dslash, that applies one gauge field to many psi.  PK_ESTATE
 *  when no links are resident (no plan_upload yet, or a plan_execute or failed upload
 *  since).  Afterwards plan_run needs a plan_upload again. */
PK_API pk_status pk_dslash_plan_execute_psi(pk_dslash_plan *plan, const double *psi, double *chi,
                                            pk_run_info *info);
PK_API void pk_dslash_plan_destroy(pk_dslash_plan *plan);

/* ---------------------------------------------------------------------------------------- */
/* The differ (docs/KERNELS.md section 6).                                                   */
typedef struct pk_diff_report {
    size_t count;            /* elements compared */
    size_t num_failed;       /* elements outside the element-wise rule (filled in both modes) */
    size_t first_fail;       /* flat index of the first failure; (size_t)-1 when none */
    double max_rel_err;      /* over the pairs that were compared (not ignored) */
    double max_abs_err;
    double norm_rel_err;     /* ||x - y||_2 / ||y||_2 (always computed) */
    int equal;               /* 1 when the comparison passed in the requested mode */
} pk_diff_report;

#define PK_DIFF_ELEMENTWISE 0
#define PK_DIFF_NORM 1

/** Compare x (first file) against y element-wise (rtol, zero) or norm-wise (rtol).
 *  Returns PK_OK when equal, PK_EMISMATCH when not; *report (may be NULL) gets the figures. */
PK_API pk_status pk_diff_f32(const float *x, const float *y, size_t n, double rtol, double zero,
                             int mode, pk_diff_report *report);
PK_API pk_status pk_diff_f64(const double *x, const double *y, size_t n, double rtol,
                             double zero, int mode, pk_diff_report *report);
/** Write the multi-index of flat index `flat` for shape[ndim] as "[i, j, k]" into buf. */
PK_API void pk_format_index(size_t flat, const size_t *shape, int ndim, char *buf, size_t len);

/* ---------------------------------------------------------------------------------------- */
/* .npy files (read: version 1.0/2.0/3.0; write: 1.0; little-endian, C order).             */
typedef enum pk_dtype {
    PK_DTYPE_F32 = 1,
    PK_DTYPE_F64 = 2,
    PK_DTYPE_C64 = 3,  /* complex64  '<c8'  */
    PK_DTYPE_C128 = 4, /* complex128 '<c16' */
    PK_DTYPE_I32 = 5,
    PK_DTYPE_I64 = 6
} pk_dtype;

#define PK_NPY_MAX_DIMS 8

typedef struct pk_array {
    pk_dtype dtype;
    int ndim;
    size_t shape[PK_NPY_MAX_DIMS];
    size_t count;     /* product of the shape */
    void *data;       /* count * pk_dtype_size(dtype) bytes, owned by the array */
} pk_array;

PK_API size_t pk_dtype_size(pk_dtype dtype);
PK_API const char *pk_dtype_descr(pk_dtype dtype); /* "<f4", ...; NULL when unknown */
/** Read a .npy file; on success a->data is malloc'ed (free with pk_array_free). */
PK_API pk_status pk_npy_read(const char *path, pk_array *a);
/** Parse a .npy image held in memory (what pk_npy_read does after reading the file). */
PK_API pk_status pk_npy_parse(const void *buf, size_t len, pk_array *a);
/** Write a .npy file: a temporary beside path, renamed into place when complete (path is
 *  then either the old file or the whole new one). */
PK_API pk_status pk_npy_write(const char *path, pk_dtype dtype, int ndim, const size_t *shape,
                              const void *data);
/** The same .npy image written to an open stream (flushed; the caller closes it). */
PK_API pk_status pk_npy_fwrite(FILE *f, pk_dtype dtype, int ndim, const size_t *shape,
                               const void *data);
PK_API void pk_array_free(pk_array *a);

/* ---------------------------------------------------------------------------------------- */
/* FITS images (lib/fits.c; needs cfitsio at build time, else PK_EUNSUPPORTED).            */
/* The world coordinates of a 2-D sky image (docs/KERNELS.md 7): SIN projection about the
 * phase centre, a degenerate frequency axis.  Pixel (x, y) of the C array image[y][x] is
 * FITS pixel (x + 1, y + 1); viewers draw row y = 0 at the bottom. */
typedef struct pk_fits_image_info {
    double ra_deg, dec_deg;  /* the phase centre (ICRS), dec in [-90, 90] */
    double crpix[2];         /* FITS (1-based) pixel of the phase centre; 0: n / 2 + 1 */
    double cdelt_deg[2];     /* pixel size along x and y in degrees, non-zero (x: negative
                                when RA grows to the left, as radio images are drawn) */
    double freq_hz;          /* observing frequency, > 0 */
    double bandwidth_hz;     /* >= 0 (0: written as 1 Hz) */
    const char *bunit;       /* brightness unit (pk_fits_image_info_init: "JY/BEAM") */
    const char *object, *telescope; /* optional (NULL: not written) */
} pk_fits_image_info;

/** Zeroes *w and sets bunit to "JY/BEAM". */
PK_API void pk_fits_image_info_init(pk_fits_image_info *w);
/** Write image (float32 [ny][nx], x fastest) as a FITS primary image with the WCS of w: a
 *  temporary file beside path, renamed into place when complete (path is then either the
 *  old file or the whole new one).  PK_EINVAL for a bad extent or WCS value (non-finite,
 *  zero cell, frequency <= 0, a header string that is not printable ASCII or longer than
 *  68 characters), PK_EIO when the file cannot be written, PK_EUNSUPPORTED without cfitsio. */
PK_API pk_status pk_fits_write_image(const char *path, const float *image, size_t nx, size_t ny,
                                     const pk_fits_image_info *w);

/* ---------------------------------------------------------------------------------------- */
/* grid data sets (docs/KERNELS.md 1.7; what `portkern gen grid` writes).  Here, after
 * pk_array, which holds their arrays.
 *
 * SKA1-LOW tracks ("el82-70", "el56-82", "el30-56": a station layout, hour angles of an
 * elevation range) and random uvw ("synthetic", "small"), with their w-kernel stacks (OSKAR/
 * CASA recipe), reproducible by seed.  Unlike the other generators (pk_lqcd_random_su3 fills
 * the caller's buffer) the library allocates the outputs, as pk_npy_read does: how many
 * visibilities a station layout gives and how long the stack is (the supports the kernels
 * produce) are known only once generated.  The kernel stacks need FFTW (double) at build
 * time: without it pk_grid_generate is PK_EUNSUPPORTED and says so. */
typedef struct pk_grid_gen_options {
    const char *dataset;     /* a name of pk_grid_datasets() */
    double scale;            /* (0, 1]: SKA sets keep round(scale * 240) time dumps over the
                                same hour angles, random sets the first round(scale * n) */
    uint64_t seed;           /* the visibility order and the random sets' uvw */
    const char *layout_path; /* SKA sets: station layout file, one "E N [U]" line (metres)
                                per station; NULL: the built-in 512-station layout */
    int unit_vis;            /* 1: every visibility 1 + 0i */
    int kernel_layout;       /* PK_GRID_KERNELS_COMPACT or PK_GRID_KERNELS_FULL */
} pk_grid_gen_options;

/** Defaults: dataset "synthetic", scale 1, seed 1, built-in layout, compact kernels. */
PK_API void pk_grid_gen_options_init(pk_grid_gen_options *o);

typedef struct pk_grid_dataset {
    pk_grid_params params;   /* what pk_grid takes for these arrays (tuning at defaults) */
    pk_grid_data data;       /* views of the arrays below */
    pk_array uu, vv, ww;     /* float32 [n], wavelengths */
    pk_array vis;            /* complex64 [n] */
    pk_array weight;         /* float32 [n], uniform weighting */
    pk_array support;        /* int32 [num_w_planes] */
    pk_array kernels;        /* complex64 [count] (compact) or [planes][half][half] (full) */
    const char *name;        /* the data set's name and recipe (static strings) */
    const char *recipe;
    int max_support, image_size, fft_size;
    double max_w;            /* |w| of the last plane */
    double max_abs_w;        /* the largest |w| generated */
    size_t num_beyond_max_w; /* |w| > max_w: gridded with the last plane */
    int num_stations, num_times; /* SKA sets (0 for random ones) */
    double frequency_hz;     /* SKA sets (0 for random ones) */
} pk_grid_dataset;

/** Generate a data set into *out (zeroed first; free with pk_grid_dataset_free, also after a
 *  failure).  PK_EINVAL names a bad option, PK_EIO / PK_EFORMAT a bad layout file. */
PK_API pk_status pk_grid_generate(const pk_grid_gen_options *o, pk_grid_dataset *out);
PK_API void pk_grid_dataset_free(pk_grid_dataset *d);
/** The data set names, comma-separated ("synthetic, el82-70, el56-82, el30-56, small"). */
PK_API const char *pk_grid_datasets(void);
/** 1 for a data set with a station layout (the SKA tracks), 0 for the random ones, -1 when
 *  name is not a data set. */
PK_API int pk_grid_dataset_has_layout(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* PORTKERN_H */
