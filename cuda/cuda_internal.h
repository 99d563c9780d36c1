/* cuda_internal.h - the seam between the CUDA backend's C table (backend_cuda.c) and the
 * CUDA C++ translation units (runtime.cu, diffusion3d.cu).
 *
 * Valid C99 and C++: the .cu files see the library's internals (pk_status, pk_fail,
 * pk_device_info, pk_d3_desc, pk_cv_desc) only through this header and internal.h, both wrapped in
 * extern "C", and export only extern "C" functions.  No CUDA type crosses this seam, so
 * backend_cuda.c compiles without the CUDA headers.
 */
#ifndef PK_CUDA_INTERNAL_H
#define PK_CUDA_INTERNAL_H

#include "internal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One pinned staging ring per device (runtime.cu; CUDA types inside, so opaque here). */
struct pk_cuda_ring;

/* What init() learnt, and the staging rings; owned by the context's CUDA slot. */
typedef struct pk_cuda_state {
    int count;              /* CUDA devices (ordinals 0..count-1) */
    int driver_version;     /* cudaDriverGetVersion, e.g. 12080 */
    int runtime_version;    /* cudaRuntimeGetVersion, e.g. 13000 */
    int min_arch;           /* lowest compute capability this build has code for (90) */
    pk_device_info *devices;/* count entries */
    int *usable;            /* 1 when this build's kernels can run on the device */
    struct pk_cuda_ring *rings; /* count entries; each sets itself up on its first use */
    size_t ring_chunk;      /* bytes per chunk: 16 MiB (PORTKERN_TEST_CUDA_STAGING_CHUNK) */
    int ring_chunks;        /* chunks per ring (4) */
    int copy_threads;       /* host threads copying into and out of a chunk */
} pk_cuda_state;

/* The paths a host <-> device copy can take (pk_cuda_transfer). */
enum {
    PK_CUDA_PATH_PAGEABLE = 1, /* the driver's own copy of pageable memory (small copies,
                                  or no ring) */
    PK_CUDA_PATH_RING = 2,     /* pageable memory through the context's pinned ring */
    PK_CUDA_PATH_PINNED = 4,   /* the caller's memory is pinned: one DMA */
    PK_CUDA_PATH_DEVICE = 8,   /* the caller's "host" array is device or managed memory */
    PK_CUDA_PATH_NONE = 16     /* an execute on the caller's device arrays: no copy at all */
};

/* The first member of every CUDA plan: what its transfers need, and what they did.  The
 * backend's transfer_note (backend_cuda.c) reads a plan through it, whatever its kernel. */
typedef struct pk_cuda_xfer {
    pk_cuda_state *s; /* the context's state (NULL: plain copies, no ring) */
    int device;
    unsigned paths;   /* PK_CUDA_PATH_* of the copies since the last run info said them */
} pk_cuda_xfer;

/* runtime.cu ------------------------------------------------------------------------------ */
/** Turn a failed CUDA call (err = its cudaError_t) into a pk_status with the detail
 *  "<what>: cudaErrorName (code): description" for pk_last_error(), and clear CUDA's
 *  last-error slot so that a later cudaGetLastError() does not report it again.
 *  cudaErrorMemoryAllocation -> PK_EDEVMEM, no driver/device -> PK_ENOBACKEND,
 *  cudaErrorInvalidDevice -> PK_ENODEVICE, missing kernel image -> PK_EUNSUPPORTED,
 *  anything else -> PK_EDEVICE. */
pk_status pk_cuda_fail(int err, const char *what_fmt, ...) PK_PRINTF(2, 3);
/** A plan's timed, blocking copy between the host and device x->device (to_device: host ->
 *  device, else device -> host); `what` ("conv2d upload") names it in errors.  The host
 *  side's kind decides the path, OR-ed into x->paths: pinned -> one cudaMemcpy; device or
 *  managed memory -> a device-to-device copy; pageable, from min(1 MiB, one chunk) on ->
 *  through x->s's pinned staging ring of that device (set up on first use), else, or when
 *  the ring cannot be set up, the driver's own cudaMemcpy.  *seconds: the copy (not the
 *  ring's one-time setup). */
pk_status pk_cuda_transfer(pk_cuda_xfer *x, void *dst, const void *src, size_t bytes,
                           int to_device, const char *what, double *seconds);
/** The same between the contiguous device array dev (rows x width bytes) and rows of the
 *  host array host, width bytes each, host_pitch >= width apart (a box of a larger grid);
 *  through the ring as one stream of rows x width bytes (the host threads gather or scatter
 *  the rows of each chunk), else by cudaMemcpy2D. */
pk_status pk_cuda_transfer_2d(pk_cuda_xfer *x, void *dev, const void *host, size_t host_pitch,
                              size_t width, size_t rows, int to_device, const char *what,
                              double *seconds);
/** Where the caller's array [p, p + bytes) lies for a plan on x->device (PK_MEM_*,
 *  lib/internal.h): its first and last byte by cudaPointerGetAttributes. */
int pk_cuda_memory(const pk_cuda_xfer *x, const void *p, size_t bytes);
/* One caller's array of an execute (pk_cuda_direct). */
typedef struct pk_cuda_arg {
    const void *p;
    size_t bytes;
    const char *name; /* "psi", for errors */
    int written;
} pk_cuda_arg;
/** Whether an execute runs the kernel on the caller's arrays a[0..n) themselves: *direct 1
 *  when every one is PK_MEM_DEVICE and 16-byte aligned (then x->paths gets
 *  PK_CUDA_PATH_NONE), else 0: the plan
 *  uploads, runs and downloads through pk_cuda_transfer.  PK_EINVAL when direct but a written
 *  array overlaps another one (no kernel here works in place on device pointers). */
pk_status pk_cuda_direct(pk_cuda_xfer *x, const pk_cuda_arg *a, int n, int *direct);
/** Append "transfer: staged ring 4x16 MiB, pageable" (the paths of x->paths) to dst;
 *  nothing when x->paths is 0. */
void pk_cuda_transfer_note(const pk_cuda_xfer *x, char *dst, size_t len);
/** Test hook (tests/test_faults.c): 1 when PORTKERN_TEST_DEVICE_OOM is set and not "0".
 *  Then every cudaMalloc of the .cu files (they all include this header; nvcc has included
 *  cuda_runtime.h before it, the emulated tests cuda/emulate.h) fails as
 *  cudaErrorMemoryAllocation without allocating. */
int pk_cuda_test_oom(void);
#if defined(__CUDACC__) || defined(PK_CUDA_EMULATE)
#define cudaMalloc(ptr, bytes) \
    (pk_cuda_test_oom() ? cudaErrorMemoryAllocation : cudaMalloc((ptr), (bytes)))
#endif
/** Probe the driver and devices into s (s zeroed by the caller).  On failure returns
 *  PK_ENOBACKEND (or PK_ENOMEM) with the reason in why; never aborts. */
pk_status pk_cuda_probe(pk_cuda_state *s, char *why, size_t why_len);
/** Free what pk_cuda_probe allocated and the staging rings (not s itself). */
void pk_cuda_release(pk_cuda_state *s);
/** Check that `device` is a valid, usable ordinal (pk_fail detail on error). */
pk_status pk_cuda_check_device(const pk_cuda_state *s, int device);
/** Copy-kernel bandwidth (bytes read + written per second) on one device. */
pk_status pk_cuda_bandwidth(int device, size_t bytes, int reps, double *bps);

/* A kernel's plan functions (pk_cuda_<kk>_create, upload, run, download, destroy, execute...)
 * are its .cu file's own: the backend reaches them through the file's ops table
 * (pk_cuda_<kk>_ops, declared by lib/internal.h's PK_DECLARE_KERNEL_OPS), and so do the
 * emulated tests (tests/test_<kk>_cuda_emu.c).  Declared here: what another file calls, and
 * conv2d.cu's plan (its host side is not compiled for the emulated test). */

/* conv2d.cu: the plan of both variants ("cuda", direct; "cuda-fft") ------------------- */
pk_status pk_cuda_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl);
pk_status pk_cuda_cv_upload(void *impl, const float *image, double *seconds);
pk_status pk_cuda_cv_run(void *impl, double *kernel_seconds);
pk_status pk_cuda_cv_download(void *impl, float *out, double *seconds);
pk_status pk_cuda_cv_execute(void *impl, const float *image, float *out, double *kernel_seconds,
                             double *transfer_seconds);
void pk_cuda_cv_destroy(void *impl);

/* conv2d_fft.cu: the cuFFT part of a "cuda-fft" plan, on the current device ------------- */
typedef struct pk_cuda_cvfft pk_cuda_cvfft;
/** PK_ENOBACKEND (with the loader's reason) when libcufft cannot be loaded. */
pk_status pk_cuda_cvfft_create(int device, const pk_cv_desc *desc, pk_cuda_cvfft **fft);
/** Enqueue one frame on the default stream: device image img -> device output out. */
pk_status pk_cuda_cvfft_run(pk_cuda_cvfft *fft, const float *img, float *out);
void pk_cuda_cvfft_destroy(pk_cuda_cvfft *fft);
/** The same run-time cuFFT for other plans: a rows x cols complex64 C2C plan (cufftPlan2d,
 *  on the legacy default stream; `what` names the caller in errors; PK_ENOBACKEND with the
 *  loader's reason when libcufft cannot be loaded), its in-place execution (inverse: e^{+i},
 *  else e^{-i}; unnormalised, as cuFFT) and its destruction. */
pk_status pk_cuda_cufft_c2c_create(int rows, int cols, const char *what, int *plan);
pk_status pk_cuda_cufft_c2c_exec(int plan, void *data, int inverse, const char *what);
void pk_cuda_cufft_destroy(int plan);

/* grid.cu: its run adding into a g x g complex64 device grid (cuda/image.cu), not the
 * host's. */
pk_status pk_cuda_gr_run_device(void *impl, const pk_grid_data *data, void *dev_grid,
                                pk_gr_result *res);
/* degrid.cu (test_im_cuda_emu calls these by name) */
pk_status pk_cuda_dg_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_cuda_dg_run(void *impl, const float *grid, const pk_grid_data *data, float *vis,
                         pk_dg_result *res);
void pk_cuda_dg_destroy(void *impl);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
/* A plan struct whose first member is its pk_cuda_xfer xf. */
#define PK_CUDA_XFER_FIRST(type)                                                              \
    static_assert(offsetof(type, xf) == 0, #type ": pk_cuda_xfer xf must come first")
#endif

#if defined(__cplusplus) && (defined(__CUDACC__) || defined(PK_CUDA_EMULATE))
/** kernel<<<grid, block, shared_bytes, st>>>(args...); the launch's errors are then
 *  cudaGetLastError()'s, as after the chevrons.  Under PK_CUDA_EMULATE (the tests
 *  tests/test_*_cuda_emu, cuda/emulate.h included first) host threads run the kernel. */
template <typename... P, typename... A>
static inline void pk_cuda_launch(void (*kernel)(P...), dim3 grid, dim3 block,
                                  size_t shared_bytes, cudaStream_t st, A... args)
{
#ifdef PK_CUDA_EMULATE
    (void)pk_emu_launch(kernel, grid, block, shared_bytes, st, args...);
#else
    kernel<<<grid, block, shared_bytes, st>>>(args...);
#endif
}
#endif
#endif /* PK_CUDA_INTERNAL_H */
