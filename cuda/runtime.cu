/* runtime.cu - CUDA backend runtime: driver/device probe, error mapping, host <-> device
 * transfers (the pinned staging ring), copy bandwidth.
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
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- host <-> device transfers ------------------------------------------------------------
 * A cudaMemcpy from pageable memory runs at a fraction of the link (an H100: 6.7 GB/s to the
 * device, 11.4 back, against 53 / 55 pinned): the driver stages it through small pinned
 * buffers of its own with one thread.  The ring does that staging itself, with chunks large
 * enough for full-speed DMA and several host threads per chunk, so that the host copy of one
 * chunk overlaps the DMA of the one before.  Per device, on the first copy that needs it:
 * its chunks stay pinned until the context goes (pk_cuda_release). */
enum { PK_RING_CHUNKS = 4, PK_RING_MAX_THREADS = 16 };
#define PK_RING_CHUNK_BYTES ((size_t)16 << 20)
#define PK_RING_MIN_BYTES ((size_t)1 << 20) /* below it (or below a chunk), cudaMemcpy */

struct pk_cuda_ring {
    pthread_mutex_t lock; /* a context may be shared: one copy through the ring at a time */
    int lock_ready;
    int ready;            /* set up */
    int failed;           /* setting up failed (why says how): plain copies from then on */
    char why[192];
    char *slot[PK_RING_CHUNKS];
    cudaEvent_t done[PK_RING_CHUNKS]; /* recorded after each slot's DMA */
    cudaEvent_t order;    /* the legacy stream's work before a copy */
    cudaStream_t stream;
};

/* Free what ring r holds (on device `device`); best effort, as on a dead context. */
static void pk_ring_free(pk_cuda_ring *r, int device)
{
    (void)cudaSetDevice(device);
    if (r->stream) (void)cudaStreamSynchronize(r->stream);
    for (int k = 0; k < PK_RING_CHUNKS; ++k) {
        if (r->done[k]) (void)cudaEventDestroy(r->done[k]);
        if (r->slot[k]) (void)cudaFreeHost(r->slot[k]);
        r->done[k] = NULL;
        r->slot[k] = NULL;
    }
    if (r->order) (void)cudaEventDestroy(r->order);
    if (r->stream) (void)cudaStreamDestroy(r->stream);
    r->order = NULL;
    r->stream = NULL;
    r->ready = 0;
    (void)cudaGetLastError();
}

/* Set up ring r of device `device` (the device is current); 0 when it cannot be, with the
 * reason in r->why and nothing left allocated. */
static int pk_ring_setup(pk_cuda_state *s, pk_cuda_ring *r, int device)
{
    cudaError_t e = cudaSuccess;
    const char *call = NULL;
    for (int k = 0; k < PK_RING_CHUNKS && e == cudaSuccess; ++k) {
        void *m = NULL;
        if ((e = cudaHostAlloc(&m, s->ring_chunk, cudaHostAllocDefault)) != cudaSuccess)
            call = "cudaHostAlloc";
        else if ((e = cudaEventCreateWithFlags(&r->done[k], cudaEventDisableTiming)) !=
                 cudaSuccess) {
            r->done[k] = NULL;
            call = "cudaEventCreateWithFlags";
        }
        r->slot[k] = (char *)m;
    }
    if (e == cudaSuccess && (e = cudaEventCreateWithFlags(&r->order, cudaEventDisableTiming)) !=
                                cudaSuccess) {
        r->order = NULL;
        call = "cudaEventCreateWithFlags";
    }
    if (e == cudaSuccess &&
        (e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        r->stream = NULL;
        call = "cudaStreamCreateWithFlags";
    }
    if (e == cudaSuccess) {
        r->ready = 1;
        return 1;
    }
    snprintf(r->why, sizeof r->why, "%s(%d x %zu bytes, device %d): %s", call, PK_RING_CHUNKS,
             s->ring_chunk, device, cudaGetErrorName(e));
    pk_ring_free(r, device);
    r->failed = 1;
    return 0;
}

/* One chunk's DMA between the device and slot k, then the slot's event. */
static cudaError_t pk_ring_dma(pk_cuda_ring *r, int k, void *dst, const void *src, size_t n,
                               cudaMemcpyKind kind)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, r->stream);
    return e != cudaSuccess ? e : cudaEventRecord(r->done[k], r->stream);
}

/* The host side of a ring copy: rows of `width` bytes, `pitch` apart (pitch == width: one
 * contiguous array), seen as one stream of rows x width bytes, the device side's order. */
typedef struct pk_host_rows {
    char *p;
    size_t width, pitch;
} pk_host_rows;

typedef struct pk_rows_job {
    const pk_host_rows *h;
    char *buf;       /* the slot */
    size_t off, n;   /* the stream's bytes [off, off + n) */
    int pack;        /* 1: host -> slot, 0: slot -> host */
} pk_rows_job;

static void pk_rows_copy(void *arg, size_t r0, size_t r1)
{
    const pk_rows_job *j = (const pk_rows_job *)arg;
    const size_t w = j->h->width, first = j->off / w;
    for (size_t r = first + r0; r < first + r1; ++r) {
        const size_t a = r * w > j->off ? r * w : j->off;
        const size_t b = (r + 1) * w < j->off + j->n ? (r + 1) * w : j->off + j->n;
        char *host = j->h->p + r * j->h->pitch + (a - r * w), *slot = j->buf + (a - j->off);
        if (j->pack)
            memcpy(slot, host, b - a);
        else
            memcpy(host, slot, b - a);
    }
}

/* Bytes [off, off + n) of the host rows to (pack) or from the slot, by up to nt threads. */
static void pk_ring_host(const pk_host_rows *h, char *slot, size_t off, size_t n, int pack,
                         int nt)
{
    if (h->pitch == h->width) {
        if (pack)
            pk_copy_threads(slot, h->p + off, n, nt);
        else
            pk_copy_threads(h->p + off, slot, n, nt);
        return;
    }
    pk_rows_job j = {h, slot, off, n, pack};
    const size_t rows = (off + n - 1) / h->width - off / h->width + 1;
    pk_parallel_range(rows, 1, n, nt, pk_rows_copy, &j);
}

/* The copy through ring r (ready, locked, its device current) between the contiguous device
 * array dev and the host rows h (bytes = rows x width).  Host to device: chunk i goes
 * through slot i % N once the slot's previous DMA is done, copied in by several threads
 * while the DMA of chunk i - 1 runs.  Device to host: the first N chunks' DMAs are queued at
 * once; each slot is copied out as its DMA ends, and the chunk N further on queued into it. */
static pk_status pk_ring_copy(const pk_cuda_state *s, pk_cuda_ring *r, char *dev,
                              const pk_host_rows *h, size_t bytes, int to_device,
                              const char *what)
{
    const size_t C = s->ring_chunk, chunks = (bytes + C - 1) / C;
    const int N = PK_RING_CHUNKS, nt = s->copy_threads;
    const char *step = "cudaEventRecord";
    size_t at = 0; /* the chunk the step is for */
    /* in order after the legacy stream's work (a plan's cudaMemset, a kernel), as the
     * cudaMemcpy this replaces is */
    cudaError_t e = cudaEventRecord(r->order, 0);
    if (e == cudaSuccess) {
        step = "cudaStreamWaitEvent";
        e = cudaStreamWaitEvent(r->stream, r->order, 0);
    }
    if (to_device) {
        for (size_t i = 0; e == cudaSuccess && i < chunks; ++i) {
            const int k = (int)(i % N);
            const size_t n = i + 1 < chunks ? C : bytes - i * C;
            at = i;
            step = "cudaEventSynchronize";
            if ((e = cudaEventSynchronize(r->done[k])) != cudaSuccess) break;
            pk_ring_host(h, r->slot[k], i * C, n, 1, nt);
            step = "cudaMemcpyAsync";
            e = pk_ring_dma(r, k, dev + i * C, r->slot[k], n, cudaMemcpyHostToDevice);
        }
    } else {
        for (size_t j = 0; e == cudaSuccess && j < chunks && j < (size_t)N; ++j) {
            at = j;
            step = "cudaMemcpyAsync";
            e = pk_ring_dma(r, (int)j, r->slot[j], dev + j * C, j + 1 < chunks ? C : bytes - j * C,
                            cudaMemcpyDeviceToHost);
        }
        for (size_t i = 0; e == cudaSuccess && i < chunks; ++i) {
            const int k = (int)(i % N);
            at = i;
            step = "cudaEventSynchronize";
            if ((e = cudaEventSynchronize(r->done[k])) != cudaSuccess) break;
            pk_ring_host(h, r->slot[k], i * C, i + 1 < chunks ? C : bytes - i * C, 0, nt);
            const size_t j = i + N;
            if (j < chunks) {
                at = j;
                step = "cudaMemcpyAsync";
                e = pk_ring_dma(r, k, r->slot[k], dev + j * C, j + 1 < chunks ? C : bytes - j * C,
                                cudaMemcpyDeviceToHost);
            }
        }
    }
    if (e == cudaSuccess) {
        step = "cudaStreamSynchronize";
        e = cudaStreamSynchronize(r->stream);
        if (e == cudaSuccess) return PK_OK;
        at = chunks - 1;
    }
    /* no DMA may still read or write the slots (or dst) once the call has returned */
    (void)cudaStreamSynchronize(r->stream);
    return pk_cuda_fail(e, "%s(%s, %zu bytes through the staging ring, chunk %zu of %zu)", step,
                        what, bytes, at + 1, chunks);
}

/* The kind of the host side's memory: PK_CUDA_PATH_PINNED, _DEVICE, or 0 (pageable). */
static unsigned pk_host_kind(const void *p)
{
    cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        /* runtimes before 11.0 fail for pageable memory, and leave the error set */
        (void)cudaGetLastError();
        return 0;
    }
    switch (a.type) {
    case cudaMemoryTypeHost: return PK_CUDA_PATH_PINNED;
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return PK_CUDA_PATH_DEVICE;
    default: return 0;
    }
}

extern "C" int pk_cuda_memory(const pk_cuda_xfer *x, const void *p, size_t bytes)
{
    if (p == NULL || pk_host_kind(p) != PK_CUDA_PATH_DEVICE) return PK_MEM_HOST;
    cudaPointerAttributes a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    /* the last byte too: a short array (or one running into host memory) is not the plan's,
     * and the kernel would read past it */
    const void *last = (const char *)p + (bytes ? bytes - 1 : 0);
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess ||
        cudaPointerGetAttributes(&b, last) != cudaSuccess) {
        (void)cudaGetLastError();
        return PK_MEM_OTHER;
    }
    if (a.type != b.type || a.device != b.device) return PK_MEM_OTHER;
    /* managed memory migrates to whichever device touches it */
    if (a.type == cudaMemoryTypeManaged) return PK_MEM_DEVICE;
    return a.device == x->device ? PK_MEM_DEVICE : PK_MEM_OTHER;
}

extern "C" pk_status pk_cuda_direct(pk_cuda_xfer *x, const pk_cuda_arg *a, int n, int *direct)
{
    *direct = 0;
    /* 16-byte aligned too (cudaMalloc gives 256): the kernels load double2 and float4; an
     * array off that goes through the transfers into the plan's own */
    for (int i = 0; i < n; ++i)
        if (pk_cuda_memory(x, a[i].p, a[i].bytes) != PK_MEM_DEVICE || (uintptr_t)a[i].p % 16)
            return PK_OK;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            if (i == j || !a[i].written) continue;
            const char *p = (const char *)a[i].p, *q = (const char *)a[j].p;
            PK_CHECK(p + a[i].bytes <= q || q + a[j].bytes <= p, PK_EINVAL,
                     "%s overlaps %s: on device pointers the kernel writes the caller's %s "
                     "directly, so it must not overlap an input",
                     a[i].name, a[j].name, a[i].name);
        }
    x->paths |= PK_CUDA_PATH_NONE;
    *direct = 1;
    return PK_OK;
}

/* pk_cuda_transfer and pk_cuda_transfer_2d: dev (contiguous) <-> host rows. */
static pk_status pk_transfer_rows(pk_cuda_xfer *x, char *dev, const pk_host_rows *h, size_t rows,
                                  int to_device, const char *what, double *seconds)
{
    cudaError_t e;
    const int device = x->device;
    pk_cuda_state *s = x->s;
    const size_t bytes = rows * h->width;
    if (seconds) *seconds = 0;
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaSetDevice(%d)", device);
    if (bytes == 0) return PK_OK;
    unsigned path = pk_host_kind(h->p);
    pk_cuda_ring *r = NULL;
    if (path == 0) {
        path = PK_CUDA_PATH_PAGEABLE;
        if (s && s->rings && device < s->count &&
            bytes >= (s->ring_chunk < PK_RING_MIN_BYTES ? s->ring_chunk : PK_RING_MIN_BYTES)) {
            r = &s->rings[device];
            pthread_mutex_lock(&r->lock);
            if (r->ready || (!r->failed && pk_ring_setup(s, r, device))) {
                path = PK_CUDA_PATH_RING;
            } else {
                pthread_mutex_unlock(&r->lock);
                r = NULL;
            }
        }
    }
    x->paths |= path;
    const double t0 = pk_now();
    pk_status st = PK_OK;
    if (r) {
        st = pk_ring_copy(s, r, dev, h, bytes, to_device, what);
        pthread_mutex_unlock(&r->lock);
    } else {
        const cudaMemcpyKind kind = path == PK_CUDA_PATH_DEVICE ? cudaMemcpyDefault
                                    : to_device                 ? cudaMemcpyHostToDevice
                                                                : cudaMemcpyDeviceToHost;
        if (h->pitch == h->width)
            e = to_device ? cudaMemcpy(dev, h->p, bytes, kind) : cudaMemcpy(h->p, dev, bytes, kind);
        else if (to_device)
            e = cudaMemcpy2DAsync(dev, h->width, h->p, h->pitch, h->width, rows, kind, 0);
        else
            e = cudaMemcpy2DAsync(h->p, h->pitch, dev, h->width, h->width, rows, kind, 0);
        if (e != cudaSuccess) return pk_cuda_fail(e, "cudaMemcpy(%s, %zu bytes)", what, bytes);
        /* From pageable memory a host-to-device cudaMemcpy may return before the DMA ends,
         * and the 2-D copies are asynchronous: wait, so the data is there and the time is the
         * transfer's. */
        if ((to_device || h->pitch != h->width) && (e = cudaStreamSynchronize(0)) != cudaSuccess)
            return pk_cuda_fail(e, "cudaStreamSynchronize(%s)", what);
    }
    if (st == PK_OK && seconds) *seconds = pk_now() - t0;
    return st;
}

extern "C" pk_status pk_cuda_transfer(pk_cuda_xfer *x, void *dst, const void *src, size_t bytes,
                                      int to_device, const char *what, double *seconds)
{
    const pk_host_rows h = {(char *)(to_device ? src : dst), bytes, bytes};
    return pk_transfer_rows(x, (char *)(to_device ? dst : src), &h, 1, to_device, what, seconds);
}

extern "C" pk_status pk_cuda_transfer_2d(pk_cuda_xfer *x, void *dev, const void *host,
                                         size_t host_pitch, size_t width, size_t rows,
                                         int to_device, const char *what, double *seconds)
{
    const pk_host_rows h = {(char *)host, width, host_pitch};
    if (width == 0 || rows == 0) {
        if (seconds) *seconds = 0;
        return PK_OK;
    }
    return pk_transfer_rows(x, (char *)dev, &h, rows, to_device, what, seconds);
}

extern "C" void pk_cuda_transfer_note(const pk_cuda_xfer *x, char *dst, size_t len)
{
    if (x->paths == 0) return;
    char text[320] = "";
    size_t n = 0;
    if ((x->paths & PK_CUDA_PATH_RING) && x->s) {
        const size_t c = x->s->ring_chunk;
        if (c % ((size_t)1 << 20) == 0)
            n += snprintf(text + n, sizeof text - n, ", staged ring %dx%zu MiB", x->s->ring_chunks,
                          c >> 20);
        else if (c % 1024 == 0)
            n += snprintf(text + n, sizeof text - n, ", staged ring %dx%zu KiB", x->s->ring_chunks,
                          c >> 10);
        else
            n += snprintf(text + n, sizeof text - n, ", staged ring %dx%zu bytes",
                          x->s->ring_chunks, c);
    }
    if (x->paths & PK_CUDA_PATH_PINNED) n += snprintf(text + n, sizeof text - n, ", pinned");
    if (x->paths & PK_CUDA_PATH_DEVICE) n += snprintf(text + n, sizeof text - n, ", device");
    if (x->paths & PK_CUDA_PATH_NONE)
        n += snprintf(text + n, sizeof text - n, ", device pointers, none");
    if (x->paths & PK_CUDA_PATH_PAGEABLE) {
        const pk_cuda_ring *r = x->s && x->s->rings && x->device >= 0 && x->device < x->s->count
                                    ? &x->s->rings[x->device]
                                    : NULL;
        if (r && r->failed)
            snprintf(text + n, sizeof text - n, ", pageable (no staging ring: %s)", r->why);
        else
            snprintf(text + n, sizeof text - n, ", pageable");
    }
    pk_append_note(dst, len, "transfer: %s", text + 2);
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
    s->rings = (pk_cuda_ring *)calloc((size_t)n, sizeof *s->rings);
    if (s->devices == NULL || s->usable == NULL || s->rings == NULL) {
        pk_cuda_release(s);
        pk_why(why, why_len, "out of host memory while probing %d CUDA devices", n);
        return PK_ENOMEM;
    }
    s->count = n;
    for (int i = 0; i < n; ++i) {
        if (pthread_mutex_init(&s->rings[i].lock, NULL) != 0) {
            pk_cuda_release(s);
            pk_why(why, why_len, "pthread_mutex_init failed for the CUDA staging rings");
            return PK_ENOMEM;
        }
        s->rings[i].lock_ready = 1;
    }
    s->ring_chunks = PK_RING_CHUNKS;
    s->ring_chunk = PK_RING_CHUNK_BYTES;
    {
        /* test hook: small chunks, so that small arrays take the many-chunk paths */
        const char *v = pk_getenv("PORTKERN_TEST_CUDA_STAGING_CHUNK");
        char *end = NULL;
        const unsigned long long c = v ? strtoull(v, &end, 10) : 0;
        if (v && *end == '\0' && c > 0 && c <= PK_RING_CHUNK_BYTES && v[0] != '-')
            s->ring_chunk = (size_t)c;
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        s->copy_threads = cpus < 1 ? 1 : cpus > PK_RING_MAX_THREADS ? PK_RING_MAX_THREADS : (int)cpus;
    }

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
    for (int i = 0; s->rings && i < s->count; ++i) {
        if (s->rings[i].ready) pk_ring_free(&s->rings[i], i);
        if (s->rings[i].lock_ready) pthread_mutex_destroy(&s->rings[i].lock);
    }
    free(s->rings);
    s->rings = NULL;
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
