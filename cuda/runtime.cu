/* runtime.cu - CUDA backend runtime: driver/device probe, error mapping, copy bandwidth.
 *
 * Design notes (why, not what):
 *  - The library links the static CUDA runtime, so libportkern loads on machines without
 *    the toolkit; libcuda.so.1 (the driver) is dlopened by cudart on the first call.  Every
 *    "no driver"/"no device" outcome is therefore an ordinary return value here, turned into
 *    PK_ENOBACKEND with a reason for portkern-probe, never an abort.
 *  - The probe asks the driver version first: with no driver cudaDriverGetVersion succeeds
 *    with 0 and cudaGetDeviceCount fails with cudaErrorInsufficientDriver (35), the same code
 *    a too-old driver gives; the version tells the two apart.  A driver too old for cudart to
 *    bootstrap on also reads as version 0, so then the probe dlopens libcuda.so.1 itself: the
 *    loader's dlerror() names a missing driver precisely, cuDriverGetVersion an old one.
 *    cudaGetDeviceCount leaves the count untouched on failure, hence the explicit 0.
 *  - init only reads properties (cudaGetDeviceProperties); contexts are created lazily by the
 *    first allocation, so probing a machine with many GPUs stays cheap and does not pin
 *    memory on every GPU.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_*_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Virtual architectures this object was compiled for (nvcc defines the list in host and
 * device passes).  The lowest one decides which devices can run our kernels: the PTX of an
 * architecture JIT-compiles forward, never backward. */
static const int pk_cuda_archs[] = {__CUDA_ARCH_LIST__};

static int pk_cuda_min_arch(void)
{
    int m = pk_cuda_archs[0];
    for (size_t i = 1; i < sizeof pk_cuda_archs / sizeof pk_cuda_archs[0]; ++i)
        if (pk_cuda_archs[i] < m) m = pk_cuda_archs[i];
    return m / 10; /* 900 -> 90 (major*10 + minor) */
}

/* 12080 -> "12.8" */
static void pk_cuda_version_str(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

extern "C" pk_status pk_cuda_fail(int err, const char *what_fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, what_fmt);
    vsnprintf(what, sizeof what, what_fmt, ap);
    va_end(ap);
    cudaError_t e = (cudaError_t)err;
    /* Non-sticky errors stay in the runtime's last-error slot; clear it so that the next
     * launch check does not report this failure a second time. */
    (void)cudaGetLastError();
    pk_status st;
    switch (e) {
    case cudaErrorMemoryAllocation: st = PK_EDEVMEM; break;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice: st = PK_ENOBACKEND; break;
    case cudaErrorInvalidDevice: st = PK_ENODEVICE; break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion: st = PK_EUNSUPPORTED; break;
    default: st = PK_EDEVICE; break;
    }
    return pk_fail(st, "%s: %s (%d): %s", what, cudaGetErrorName(e), err, cudaGetErrorString(e));
}

extern "C" pk_status pk_cuda_transfer(int device, void *dst, const void *src, size_t bytes,
                                     int to_device, const char *what, double *seconds)
{
    cudaError_t e;
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    const double t0 = pk_now();
    if ((e = cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice
                                                   : cudaMemcpyDeviceToHost)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaMemcpy(%s, %zu bytes)", what, bytes);
    /* From pageable memory a host-to-device cudaMemcpy may return before the DMA ends: wait,
     * so the time is the transfer's (device-to-pageable copies return when the data is in). */
    if (to_device && (e = cudaStreamSynchronize(0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaStreamSynchronize(%s)", what);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

extern "C" int pk_cuda_test_oom(void)
{
    const char *oom = pk_getenv("PORTKERN_TEST_DEVICE_OOM");
    return oom != NULL && strcmp(oom, "0") != 0;
}

static void pk_why(char *why, size_t len, const char *fmt, ...) PK_PRINTF(3, 4);
static void pk_why(char *why, size_t len, const char *fmt, ...)
{
    if (why == NULL || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* When cudart reports driver version 0, ask the loader: 0 = libcuda.so.1 cannot be opened
 * (no driver; buf gets dlerror()), 1 = it opens and reports a version (a driver too old for
 * cudart to bootstrap on; buf gets the version), 2 = it opens but reports no version.
 * Loading libcuda creates no CUDA context. */
static int pk_cuda_driver_diagnose(char *buf, size_t len)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *err = dlerror();
        snprintf(buf, len, "%s", err ? err : "libcuda.so.1 cannot be loaded");
        return 0;
    }
    int v = 0, found = 2;
    typedef int (*get_version_fn)(int *);
    get_version_fn fn = (get_version_fn)dlsym(h, "cuDriverGetVersion");
    if (fn != NULL && fn(&v) == 0 && v > 0) {
        char vs[16];
        pk_cuda_version_str(v, vs, sizeof vs);
        snprintf(buf, len, "libcuda.so.1 supports CUDA %s", vs);
        found = 1;
    } else {
        snprintf(buf, len, "libcuda.so.1 loads but reports no driver version");
    }
    dlclose(h);
    return found;
}

extern "C" pk_status pk_cuda_probe(pk_cuda_state *s, char *why, size_t why_len)
{
    int dv = 0, rv = 0, n = 0;
    char dvs[16], rvs[16];
    s->min_arch = pk_cuda_min_arch();

    cudaError_t e = cudaDriverGetVersion(&dv);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        pk_why(why, why_len, "cudaDriverGetVersion failed: %s (%d): %s", cudaGetErrorName(e),
               (int)e, cudaGetErrorString(e));
        return PK_ENOBACKEND;
    }
    e = cudaRuntimeGetVersion(&rv);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        rv = CUDART_VERSION; /* the version we were built against */
    }
    s->driver_version = dv;
    s->runtime_version = rv;
    pk_cuda_version_str(dv, dvs, sizeof dvs);
    pk_cuda_version_str(rv, rvs, sizeof rvs);

    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        const char *en = cudaGetErrorName(e);
        if (dv == 0) {
            /* cudart got no version from a driver: either there is no libcuda.so.1, or one
             * so old that cudart cannot even bootstrap on it.  Ask the loader ourselves. */
            char drv[192];
            const int diag = pk_cuda_driver_diagnose(drv, sizeof drv);
            if (diag == 1)
                pk_why(why, why_len,
                       "NVIDIA driver too old for this CUDA runtime: %s, the library was built "
                       "with runtime %s (cudaGetDeviceCount: %s (%d)); update the driver",
                       drv, rvs, en, (int)e);
            else if (diag == 2)
                pk_why(why, why_len,
                       "unusable NVIDIA driver: %s (cudaGetDeviceCount: %s (%d); CUDA runtime "
                       "%s)",
                       drv, en, (int)e, rvs);
            else
                pk_why(why, why_len,
                       "no NVIDIA driver: %s (cudaDriverGetVersion: 0; cudaGetDeviceCount: "
                       "%s (%d); CUDA runtime %s)",
                       drv, en, (int)e, rvs);
        } else if (e == cudaErrorInsufficientDriver) {
            pk_why(why, why_len,
                   "NVIDIA driver too old for this CUDA runtime: the driver supports CUDA %s, "
                   "the library was built with runtime %s (cudaGetDeviceCount: %s (%d)); "
                   "update the driver",
                   dvs, rvs, en, (int)e);
        } else if (e == cudaErrorNoDevice) {
            const char *vis = getenv("CUDA_VISIBLE_DEVICES");
            pk_why(why, why_len,
                   "no CUDA device: CUDA driver %s is loaded but reports no device "
                   "(cudaGetDeviceCount: %s (%d))%s%s%s",
                   dvs, en, (int)e, vis ? "; CUDA_VISIBLE_DEVICES=\"" : "", vis ? vis : "",
                   vis ? "\"" : "");
        } else {
            pk_why(why, why_len, "cudaGetDeviceCount failed: %s (%d): %s (CUDA driver %s, runtime %s)",
                   en, (int)e, cudaGetErrorString(e), dvs, rvs);
        }
        return PK_ENOBACKEND;
    }
    if (n <= 0) {
        pk_why(why, why_len, "no CUDA device: cudaGetDeviceCount returned 0 (CUDA driver %s)", dvs);
        return PK_ENOBACKEND;
    }

    s->devices = (pk_device_info *)calloc((size_t)n, sizeof *s->devices);
    s->usable = (int *)calloc((size_t)n, sizeof *s->usable);
    if (s->devices == NULL || s->usable == NULL) {
        pk_cuda_release(s);
        pk_why(why, why_len, "out of host memory while probing %d CUDA devices", n);
        return PK_ENOMEM;
    }
    s->count = n;

    int nusable = 0;
    char first_problem[320] = "";
    for (int i = 0; i < n; ++i) {
        pk_device_info *d = &s->devices[i];
        d->backend = PK_BACKEND_CUDA;
        d->index = i;
        d->type = PK_DEVICE_GPU;
        pk_strlcpy(d->vendor, "NVIDIA", sizeof d->vendor);
        snprintf(d->driver, sizeof d->driver, "CUDA driver %s, runtime %s", dvs, rvs);
        d->fp64 = 1;
        cudaDeviceProp p;
        e = cudaGetDeviceProperties(&p, i);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            pk_strlcpy(d->name, "unknown NVIDIA GPU", sizeof d->name);
            if (first_problem[0] == '\0')
                snprintf(first_problem, sizeof first_problem,
                         "device %d: cudaGetDeviceProperties: %s (%d)", i, cudaGetErrorName(e),
                         (int)e);
            continue;
        }
        pk_strlcpy(d->name, p.name, sizeof d->name);
        d->compute_units = p.multiProcessorCount;
        d->global_mem_bytes = (uint64_t)p.totalGlobalMem;
        d->cc_major = p.major;
        d->cc_minor = p.minor;
        /* the most a block may opt in to (cudaFuncSetAttribute); static __shared__ arrays
           and launches that do not opt in stay within sharedMemPerBlock (48 KiB) */
        d->local_mem_bytes = pk_test_local_mem_cap((uint64_t)(p.sharedMemPerBlockOptin >
                                                                      p.sharedMemPerBlock
                                                                  ? p.sharedMemPerBlockOptin
                                                                  : p.sharedMemPerBlock));
        if (p.major * 10 + p.minor >= s->min_arch) {
            s->usable[i] = 1;
            ++nusable;
        } else if (first_problem[0] == '\0') {
            snprintf(first_problem, sizeof first_problem,
                     "device %d (%.128s) has compute capability %d.%d, this build has kernels for "
                     "%d.%d and newer (configure --with-cuda-arch)",
                     i, p.name, p.major, p.minor, s->min_arch / 10, s->min_arch % 10);
        }
    }
    if (nusable == 0) {
        pk_why(why, why_len, "no usable CUDA device: %s", first_problem);
        return PK_ENOBACKEND;
    }
    return PK_OK;
}

extern "C" void pk_cuda_release(pk_cuda_state *s)
{
    if (s == NULL) return;
    free(s->devices);
    free(s->usable);
    s->devices = NULL;
    s->usable = NULL;
    s->count = 0;
}

extern "C" pk_status pk_cuda_check_device(const pk_cuda_state *s, int device)
{
    PK_CHECK(device >= 0 && device < s->count, PK_ENODEVICE,
             "device: CUDA device %d does not exist (%d found)", device, s->count);
    PK_CHECK(s->usable[device], PK_EUNSUPPORTED,
             "device: CUDA device %d (%s, compute capability %d.%d) cannot run this build's "
             "kernels (built for %d.%d and newer)",
             device, s->devices[device].name, s->devices[device].cc_major,
             s->devices[device].cc_minor, s->min_arch / 10, s->min_arch % 10);
    return PK_OK;
}

/* ---- bandwidth ---------------------------------------------------------------------------- */
/* A copy kernel in STREAM's sense.  16-byte accesses and several independent loads per
 * thread before the first store keep enough bytes in flight per SM (Little's law: a few tens
 * of KB per SM on H100/H200) to reach the DRAM roof; grid-stride with one resident wave of
 * blocks avoids a tail. */
enum { PK_COPY_THREADS = 256, PK_COPY_UNROLL = 4 };

__global__ void __launch_bounds__(PK_COPY_THREADS)
pk_cuda_copy_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (PK_COPY_UNROLL - 1) * stride < n; i += PK_COPY_UNROLL * stride) {
        uint4 v[PK_COPY_UNROLL];
#pragma unroll
        for (int k = 0; k < PK_COPY_UNROLL; ++k) v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < PK_COPY_UNROLL; ++k) dst[i + k * stride] = v[k];
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

extern "C" pk_status pk_cuda_bandwidth(int device, size_t bytes, int reps, double *bps)
{
    pk_status st = PK_OK;
    cudaError_t e;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double best = 0.0;
    size_t n;
    int sms = 0, per_sm = 0, blocks;

    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    if (bytes == 0) {
        size_t fr = 0, tot = 0;
        if ((e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess)
            return pk_cuda_fail(e, "cudaMemGetInfo (device %d)", device);
        bytes = (size_t)1 << 30;
        if (bytes > fr / 4) bytes = fr / 4;
    }
    if (reps <= 0) reps = 10;
    /* Whole 16-byte vectors only: the figure is computed from the bytes actually copied. */
    bytes &= ~(size_t)15;
    if (bytes < 16) bytes = 16;
    n = bytes / 16;

    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaDeviceGetAttribute(MultiProcessorCount, %d)", device);
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pk_cuda_copy_kernel,
                                                           PK_COPY_THREADS, 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor(copy kernel)");
    if (per_sm < 1) per_sm = 1;
    {
        size_t want = (n + PK_COPY_THREADS - 1) / PK_COPY_THREADS;
        size_t wave = (size_t)sms * (size_t)per_sm;
        blocks = (int)(want < wave ? want : wave);
        if (blocks < 1) blocks = 1;
    }

    if ((e = cudaMalloc(&a, bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMalloc(bandwidth source, %zu bytes, device %d)", bytes, device);
        goto done;
    }
    if ((e = cudaMalloc(&b, bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMalloc(bandwidth destination, %zu bytes, device %d)", bytes,
                          device);
        goto done;
    }
    /* Touch both arrays so the timed runs measure steady-state copies only. */
    if ((e = cudaMemset(a, 1, bytes)) != cudaSuccess ||
        (e = cudaMemset(b, 0, bytes)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemset(bandwidth arrays)");
        goto done;
    }
    if ((e = cudaEventCreate(&e0)) != cudaSuccess || (e = cudaEventCreate(&e1)) != cudaSuccess) {
        st = pk_cuda_fail(e, "cudaEventCreate");
        goto done;
    }
    for (int r = -1; r < reps; ++r) { /* r == -1: warm-up, not timed */
        float ms = 0.0f;
        if ((e = cudaEventRecord(e0, 0)) != cudaSuccess) {
            st = pk_cuda_fail(e, "cudaEventRecord");
            goto done;
        }
        pk_cuda_launch(pk_cuda_copy_kernel, blocks, PK_COPY_THREADS, 0, 0, (const uint4 *)a,
                       (uint4 *)b, n);
        if ((e = cudaGetLastError()) != cudaSuccess) {
            st = pk_cuda_fail(e, "copy kernel launch (%d blocks x %d threads)", blocks,
                              (int)PK_COPY_THREADS);
            goto done;
        }
        if ((e = cudaEventRecord(e1, 0)) != cudaSuccess) {
            st = pk_cuda_fail(e, "cudaEventRecord");
            goto done;
        }
        if ((e = cudaEventSynchronize(e1)) != cudaSuccess) {
            st = pk_cuda_fail(e, "copy kernel execution (cudaEventSynchronize)");
            goto done;
        }
        if ((e = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess) {
            st = pk_cuda_fail(e, "cudaEventElapsedTime");
            goto done;
        }
        if (r >= 0 && ms > 0.0f && (best == 0.0 || ms * 1e-3 < best)) best = ms * 1e-3;
    }
    if (best <= 0.0) {
        st = pk_fail(PK_EDEVICE, "bandwidth: CUDA events measured no time for %zu bytes", bytes);
        goto done;
    }
    *bps = 2.0 * (double)bytes / best;

done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (a) cudaFree(a);
    if (b) cudaFree(b);
    return st;
}
