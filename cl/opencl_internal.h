/* opencl_internal.h - what the OpenCL backend's files share: the per-context state (devices,
 * lazily created contexts and queues, the program cache) and the error helpers. */
#ifndef PK_OPENCL_INTERNAL_H
#define PK_OPENCL_INTERNAL_H

#include "internal.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* A built program, kept for the life of the backend state (in-memory cache). */
typedef struct pk_cl_program {
    struct pk_cl_program *next;
    const char *source_name; /* static string: "diffusion3d", "conv2d", "bandwidth" */
    char options[256];
    cl_program program;
} pk_cl_program;

typedef struct pk_cl_device {
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;     /* NULL until the device is first used */
    cl_command_queue queue; /* in order, no profiling */
    pk_cl_program *programs;
    pk_device_type type;
    int compute_units;
    int fp64;
    cl_ulong global_mem;
    cl_ulong max_alloc;
    cl_ulong local_mem;     /* CL_DEVICE_LOCAL_MEM_SIZE, capped by PORTKERN_TEST_LOCAL_MEM_BYTES */
    char name[128], vendor[128], version[128], driver[128];
    char platform_name[128], platform_version[128];
} pk_cl_device;

typedef struct pk_cl_state {
    int ndev;
    pk_cl_device *dev;
    int cache_on;        /* on-disk binary cache enabled by the environment */
    int cache_dir_state; /* 0: not tried yet, 1: usable for writing, -1: writing disabled */
    int cache_dir_check_owner; /* the shared /tmp fallback must be ours and private */
    char cache_dir[1024];
    int break_build;     /* PORTKERN_TEST_CL_BREAK_BUILD: append a syntax error (tests) */
} pk_cl_state;

/** "CL_OUT_OF_RESOURCES" for -5, ...; "CL_UNKNOWN_ERROR" for codes it does not know. */
const char *pk_cl_error_name(cl_int err);
/** Record "<call> failed: NAME (code): <detail>" and return the matching status: allocation
 *  failures are PK_EDEVMEM, build failures PK_EBUILD, the rest PK_EDEVICE. */
pk_status pk_cl_fail(cl_int err, const char *call, const char *fmt, ...) PK_PRINTF(3, 4);

/** Every buffer of the backend is created through this wrapper of clCreateBuffer (the macro
 *  below redirects the calls of every file that includes this header).  Test hook: with
 *  PORTKERN_TEST_DEVICE_OOM set and not "0" it fails as CL_MEM_OBJECT_ALLOCATION_FAILURE
 *  (tests/test_faults.c: out of device memory). */
cl_mem pk_cl_create_buffer(cl_context context, cl_mem_flags flags, size_t size, void *host,
                           cl_int *err);
#define clCreateBuffer pk_cl_create_buffer
/** Likewise every clEnqueueReadBuffer.  Test hook: with PORTKERN_TEST_DEVICE_READ_FAIL set and
 *  not "0", a read overwrites the first half of the destination with 0xff bytes (NaN) and
 *  fails with CL_OUT_OF_RESOURCES: a transfer that breaks part way (tests/test_faults.c). */
cl_int pk_cl_enqueue_read_buffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                 size_t offset, size_t size, void *ptr, cl_uint nwait,
                                 const cl_event *wait, cl_event *event);
#define clEnqueueReadBuffer pk_cl_enqueue_read_buffer

/** The device, with its context and queue created on first use. */
pk_status pk_cl_device_open(pk_cl_state *st, int index, pk_cl_device **dev);
/** A device buffer of a plan (no host pointer); on failure NULL, and *s gets the status with
 *  the detail "<kernel> <what> of <bytes> bytes on '<device>'". */
cl_mem pk_cl_device_buffer(const pk_cl_device *dev, cl_mem_flags flags, size_t bytes,
                           const char *kernel, const char *what, pk_status *s);
/** A built program for (source, defines) on a device: from the in-memory cache, else the
 *  on-disk binary cache, else built from source (and then written to the disk cache).
 *  `defines` are extra build options ("-DPK_IDX=long"); the program stays owned by the
 *  cache.  A failed build returns PK_EBUILD with the trimmed build log in pk_last_error(). */
pk_status pk_cl_program_get(pk_cl_state *st, pk_cl_device *dev, const char *source_name,
                            const char *source, const char *source_hash, const char *defines,
                            cl_program *program);

/* diffusion3d (cl/diffusion3d_opencl.c) */
pk_status pk_cl_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl);
pk_status pk_cl_d3_upload(void *impl, const float *f, double *seconds);
pk_status pk_cl_d3_run(void *impl, int count, double *kernel_seconds);
pk_status pk_cl_d3_download(void *impl, float *f, double *seconds);
void pk_cl_d3_destroy(void *impl);

/* conv2d (cl/conv2d_opencl.c) */
pk_status pk_cl_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl);
pk_status pk_cl_cv_upload(void *impl, const float *image, double *seconds);
pk_status pk_cl_cv_run(void *impl, double *kernel_seconds);
pk_status pk_cl_cv_download(void *impl, float *out, double *seconds);
void pk_cl_cv_destroy(void *impl);

/* magicfilter3d (cl/magicfilter3d_opencl.c) */
pk_status pk_cl_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl);
pk_status pk_cl_mf_upload(void *impl, const double *x, double *seconds);
pk_status pk_cl_mf_run(void *impl, double *kernel_seconds);
pk_status pk_cl_mf_download(void *impl, double *y, double *seconds);
void pk_cl_mf_destroy(void *impl);
pk_status pk_cl_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_cl_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
/** pk_cl_gr_run into a g x g complex64 device grid of the plan's context (accumulating). */
pk_status pk_cl_gr_run_device(void *impl, const pk_grid_data *data, cl_mem grid,
                              pk_gr_result *res);
/** degrid's "opencl" run gathering from a g x g complex64 device grid in place. */
pk_status pk_cl_dg_run_device(void *impl, cl_mem grid, const pk_grid_data *d, float *vis,
                              pk_dg_result *r);
void pk_cl_gr_destroy(void *impl);
pk_status pk_cl_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl);
pk_status pk_cl_lp_upload(void *impl, const float *phi, double *seconds);
pk_status pk_cl_lp_run(void *impl, int count, double *kernel_seconds);
pk_status pk_cl_lp_download(void *impl, float *phi, double *seconds);
void pk_cl_lp_destroy(void *impl);
pk_status pk_cl_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl);
pk_status pk_cl_s3_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_cl_s3_run(void *impl, double *kernel_seconds);
pk_status pk_cl_s3_download(void *impl, double *chi, double *seconds);
void pk_cl_s3_destroy(void *impl);
pk_status pk_cl_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_cl_ds_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_cl_ds_run(void *impl, double *kernel_seconds);
pk_status pk_cl_ds_download(void *impl, double *chi, double *seconds);
void pk_cl_ds_destroy(void *impl);

/* The 2-D FFT of a device grid (cl/fft_opencl.c, VkFFT's OpenCL backend): a g x g complex64
 * transform in place on `buffer`, unnormalised; exec enqueues it on the plan's queue (inverse:
 * e^{+2 pi i}, else e^{-2 pi i}).  create: PK_ENOBACKEND without VkFFT or with the test hook
 * PORTKERN_TEST_NO_DEVICE_FFT, PK_EUNSUPPORTED for a plan VkFFT cannot make, PK_EDEVMEM when its
 * work buffer does not fit: the callers then use the host FFT. */
typedef struct pk_cl_fft pk_cl_fft;
/** PK_OK when an on-device FFT can be planned (VkFFT built in, the test hook unset), else
 *  create's PK_ENOBACKEND: a check before any device memory is taken. */
pk_status pk_cl_fft_check(const char *what);
pk_status pk_cl_fft_create(cl_device_id device, cl_context context, cl_command_queue queue,
                           cl_mem buffer, int g, const char *what, pk_cl_fft **fft);
pk_status pk_cl_fft_exec(pk_cl_fft *f, int inverse, const char *what);
void pk_cl_fft_destroy(pk_cl_fft *f);
/** "VkFFT (OpenCL)", or "none" when built without it. */
const char *pk_cl_fft_library(void);

#endif /* PK_OPENCL_INTERNAL_H */
