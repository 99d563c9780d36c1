/* emulate.h - CUDA without a GPU: the device code of the .cu files here compiled by the host
 * C++ compiler (g++, C++17) and run by host threads, and the part of the CUDA runtime the
 * host code of those files calls, on host memory.  tests/local.mk compiles a .cu file as
 * C++ with this header included first (-include; PK_CUDA_EMULATE selects the emulated paths
 * in it) and the tests tests/test_*_cuda_emu compare what its kernels compute with the
 * serial references; docs/RELIABILITY.md ("CUDA without a GPU") says what this checks and
 * what it cannot.
 *
 * The model (cuda/emulate.cc implements it):
 *  - A launch runs its blocks one after another.  The threads of a block are real host
 *    threads (pthreads of a pool: a CUDA thread keeps its own while it waits at a barrier)
 *    and __syncthreads is a real barrier among them.  By default they run one at a time, on
 *    one CPU, in a fixed order between two barriers ("phases"): ascending thread index in
 *    one phase, descending in the next (and the other way round in odd blocks), so that a
 *    missing barrier between a write to shared memory and another thread's read of it gives
 *    a wrong result deterministically in one of the two orders.  PK_EMU_SCHEDULE=free lets
 *    all threads of a block run at once (for ThreadSanitizer); =ascending or =descending
 *    fixes the order.
 *  - A barrier is checked: threads of one block that wait at different __syncthreads (file
 *    and line) are a fault; threads that have returned no longer count (as on Volta+).
 *  - Static __shared__ variables are function statics (shared by the threads of the one
 *    block that runs); they are not cleared between blocks.  Dynamic shared memory
 *    (pk_emu_dynamic_shared, sized at launch) is a fresh NaN-filled (0xff bytes) buffer per
 *    block that ends at an inaccessible page, so an overrun faults.
 *  - Device memory (cudaMalloc) is host memory whose end (the size rounded up to 16 bytes)
 *    touches an inaccessible page, with another one before it, filled with 0xff bytes (NaN
 *    for float and double) so that what a kernel reads and nobody wrote is garbage; a
 *    pointer argument of a kernel must lie in a device allocation, and copies and memsets
 *    must stay inside one and match their direction.
 *  - Pinned host memory (cudaHostAlloc, cudaMallocHost) is mapped the same way; a copy
 *    whose host side starts in it must stay inside it.  Copies from pinned memory read it
 *    when they run and copies to it write it when they run, as DMA does (copies from and to
 *    pageable memory are staged when queued and completed before the call returns), so a
 *    slot reused before its copy ran shows.  cudaPointerGetAttributes tells device, pinned
 *    and other (unregistered) memory apart; cudaMemcpyDefault takes its direction from
 *    where the pointers lie.
 *  - Streams are lazy: work queued on a stream runs only when the host or another stream
 *    waits for it (cudaStreamSynchronize, cudaEventSynchronize, a cudaStreamWaitEvent that
 *    is reached, a blocking cudaMemcpy, cudaDeviceSynchronize).  A missing dependency
 *    between two streams therefore shows as work run too early or not at all.  The legacy
 *    default stream (0) synchronises with the blocking streams, as in CUDA.
 *  - Errors: an invalid launch configuration is the launch's error (cudaGetLastError); a
 *    fault while a kernel runs (divergent barriers, a host pointer argument) is sticky, as a
 *    lost context is: every later call fails with cudaErrorLaunchFailure, whose
 *    cudaGetErrorString is the fault, until pk_emu_reset().
 * Not emulated: warp-level intrinsics (no kernel here uses them), timing, occupancy,
 * coalescing, FMA contraction (nvcc contracts a*b+c where the code does not forbid it; the
 * host build does not, which the tests' tolerances allow for), concurrency between blocks
 * and between streams.
 */
#ifndef PK_CUDA_EMULATE_H
#define PK_CUDA_EMULATE_H

#include <stddef.h>

/* ---- C and C++: the controls the tests use ------------------------------------------- */
#ifdef __cplusplus
extern "C" {
#endif
/** The emulated device: multiprocessors, resident blocks per multiprocessor (what
 *  cudaOccupancyMaxActiveBlocksPerMultiprocessor reports), memory (bytes). */
void pk_emu_set_device(int sms, int blocks_per_sm, size_t mem_bytes);
/** Make the nth cudaMalloc from now fail with cudaErrorMemoryAllocation (0: none). */
void pk_emu_fail_malloc(long nth);
/** The same for cudaHostAlloc and cudaMallocHost. */
void pk_emu_fail_host_alloc(long nth);
/** Device allocations live now, and their bytes. */
long pk_emu_allocations(void);
/** Pinned host allocations live now. */
long pk_emu_host_allocations(void);
size_t pk_emu_bytes_in_use(void);
/** The first fault since the last reset ("" when none). */
const char *pk_emu_fault(void);
/** Clear faults and the sticky error (what cudaDeviceReset would give). */
void pk_emu_reset(void);
/** For the C tests: a device array of bytes (cudaMalloc), a copy of host unless NULL; NULL
 *  on failure.  Read it back with pk_emu_device_read (0: done), free it with
 *  pk_emu_device_free. */
void *pk_emu_device_array(const void *host, size_t bytes);
int pk_emu_device_read(void *host, const void *dev, size_t bytes);
void pk_emu_device_free(void *dev);
typedef struct pk_emu_stats {
    unsigned long long launches, blocks, threads, barriers;
} pk_emu_stats;
/** Counts since the start of the process. */
void pk_emu_get_stats(pk_emu_stats *s);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
/* ---- C++: the CUDA surface ----------------------------------------------------------- */
#ifndef PK_CUDA_EMULATE
#define PK_CUDA_EMULATE 1
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

/* What nvcc would define for the host pass of an sm_90 build (runtime.cu reads them). */
#define __CUDA_ARCH_LIST__ 900
#define CUDART_VERSION 13000

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
/* One block runs at a time, so a function static is what its threads share. */
#define __shared__ static
#define __syncthreads() pk_emu::syncthreads(__FILE__, __LINE__)

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct __attribute__((aligned(8))) float2 {
    float x, y;
};
struct __attribute__((aligned(16))) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(16))) double2 {
    double x, y;
};
struct __attribute__((aligned(8))) int2 {
    int x, y;
};
struct __attribute__((aligned(16))) int4 {
    int x, y, z, w;
};
struct __attribute__((aligned(16))) uint4 {
    unsigned x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

/* The built-in variables of the thread that runs. */
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

/* ---- device functions ------------------------------------------------------------------ */
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

/* Loads and stores with cache hints: plain accesses here. */
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }

/* IEEE operations in round-to-nearest, never contracted (the tests build with
 * -ffp-contract=off; sqrtf is correctly rounded). */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline long long __double_as_longlong(double d)
{
    long long r;
    memcpy(&r, &d, sizeof r);
    return r;
}
inline double __longlong_as_double(long long v)
{
    double r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* Atomics: relaxed read-modify-writes, as CUDA's; they return the old value. */
inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline int atomicCAS(int *p, int cmp, int v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp,
                                    unsigned long long v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
namespace pk_emu {
/* *p = op(*p) on the bits of a float or double, by compare-and-swap. */
template <class F, class U, class Op> inline F atomic_update(F *p, Op op)
{
    static_assert(sizeof(F) == sizeof(U), "same width");
    U *q = reinterpret_cast<U *>(p);
    U old = __atomic_load_n(q, __ATOMIC_RELAXED), want;
    F f, g;
    do {
        memcpy(&f, &old, sizeof f);
        g = op(f);
        memcpy(&want, &g, sizeof want);
    } while (!__atomic_compare_exchange_n(q, &old, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return f;
}
} // namespace pk_emu
inline float atomicAdd(float *p, float v)
{
    return pk_emu::atomic_update<float, uint32_t>(p, [v](float a) { return a + v; });
}
inline double atomicAdd(double *p, double v)
{
    return pk_emu::atomic_update<double, uint64_t>(p, [v](double a) { return a + v; });
}
inline int atomicMin(int *p, int v)
{
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old &&
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
inline int atomicMax(int *p, int v)
{
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old &&
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

/* ---- the runtime API (the part the .cu files call) ----------------------------------------- */
enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
};
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaHostAllocDefault 0x00
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02
typedef struct pk_emu_stream *cudaStream_t;
typedef struct pk_emu_event *cudaEvent_t;
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin;
    int major, minor, multiProcessorCount, maxThreadsPerBlock;
};

const char *cudaGetErrorName(cudaError_t e);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMalloc(void **p, size_t bytes);
template <class T> inline cudaError_t cudaMalloc(T **p, size_t bytes)
{
    return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaMallocHost(void **p, size_t bytes);
template <class T> inline cudaError_t cudaHostAlloc(T **p, size_t bytes, unsigned flags)
{
    return cudaHostAlloc(reinterpret_cast<void **>(p), bytes, flags);
}
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t bytes)
{
    return cudaMallocHost(reinterpret_cast<void **>(p), bytes);
}
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t st = 0);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t st = 0);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t st = 0);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t st);
cudaError_t cudaStreamSynchronize(cudaStream_t st);
cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t *ev);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

namespace pk_emu {
/* What a launch needs besides its code (cuda/emulate.cc). */
struct launch {
    dim3 grid, block;
    size_t dyn_shared;
    std::function<void()> body;                 /* one CUDA thread: the kernel on its arguments */
    std::vector<std::pair<int, const void *>> pointers; /* pointer arguments (index, value) */
};
int occupancy(int block_threads);
cudaError_t enqueue_launch(cudaStream_t st, std::shared_ptr<launch> l);
void syncthreads(const char *file, int line);
void *dynamic_shared(void);
/* The scan that CUB's DeviceScan::ExclusiveSum does, queued on st (grid.cu). */
cudaError_t exclusive_sum(const unsigned *in, unsigned *out, int n, cudaStream_t st);

template <class T> inline void note_pointer(launch &, int, const T &) {}
template <class T> inline void note_pointer(launch &l, int i, T *const &p)
{
    l.pointers.emplace_back(i, static_cast<const void *>(p));
}
template <class Tuple, size_t... I>
inline void note_pointers(launch &l, const Tuple &t, std::index_sequence<I...>)
{
    (note_pointer(l, (int)I, std::get<I>(t)), ...);
}
} // namespace pk_emu

template <class K> inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *n, K, int block_threads, size_t)
{
    *n = pk_emu::occupancy(block_threads);
    return cudaSuccess;
}

/** kernel<<<grid, block, shared_bytes, st>>>(args...): the arguments are converted to the
 *  kernel's parameter types and copied now, as CUDA does; the launch is queued on st. */
template <typename... P, typename... A>
inline cudaError_t pk_emu_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
                                 cudaStream_t st, A... args)
{
    static_assert(sizeof...(P) == sizeof...(A), "a kernel argument for every parameter");
    using params_t = std::tuple<std::decay_t<P>...>;
    auto params = std::make_shared<params_t>(args...);
    auto l = std::make_shared<pk_emu::launch>();
    l->grid = grid;
    l->block = block;
    l->dyn_shared = shared_bytes;
    pk_emu::note_pointers(*l, *params, std::index_sequence_for<P...>());
    l->body = [kernel, params]() { std::apply(kernel, params_t(*params)); };
    return pk_emu::enqueue_launch(st, l);
}

/** extern __shared__ T name[]: this block's dynamic shared memory. */
template <class T> inline T *pk_emu_dynamic_shared(void)
{
    return static_cast<T *>(pk_emu::dynamic_shared());
}

/** cuFFT's cufftPlan2d (R2C 0x2a, C2R 0x2c, C2C 0x29; nx rows, ny columns), cufftExecR2C, cufftExecC2R
 *  and cufftDestroy on the legacy stream, as conv2d_fft.cu loads them: a direct DFT in
 *  double (unnormalised, forward e^-i, as cuFFT), rounded to float; C2R overwrites its input
 *  (with NaNs), as cuFFT's out-of-place C2R may. */
int pk_emu_cufft_plan2d(int *plan, int nx, int ny, int type);
int pk_emu_cufft_exec_r2c(int plan, float *in, float2 *out);
int pk_emu_cufft_exec_c2r(int plan, float2 *in, float *out);
int pk_emu_cufft_destroy(int plan);
/** cufftExecC2C (plans of type C2C 0x29; direction -1 forward, +1 inverse), in or out of
 *  place: the same direct DFT in double, rows then columns. */
int pk_emu_cufft_exec_c2c(int plan, float2 *in, float2 *out, int direction);

/** CUB's cub::DeviceScan::ExclusiveSum(in, out, n) on stream st. */
inline cudaError_t pk_emu_exclusive_sum(const unsigned *in, unsigned *out, int n, cudaStream_t st)
{
    return pk_emu::exclusive_sum(in, out, n, st);
}
#endif /* __cplusplus */
#endif /* PK_CUDA_EMULATE_H */
