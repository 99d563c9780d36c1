/* cuda_devmem.h - device arrays for the real-CUDA suites (tests/test_s3_cuda, test_lp_cuda,
 * test_ds_cuda through s3_common.h, lp_common.h, ds_common.h), so that they hand
 * plan_execute device pointers as CuPy, PyTorch or a cudaMalloc'ing caller would.
 *
 * The library links CUDA's static runtime and the tests link nothing of CUDA, so the
 * runtime's cudaMalloc, cudaMemcpy and cudaFree are loaded at run time from libcudart.so
 * (configure's CUDA library directory first, then the loader's path).  Both runtimes work in
 * the device's primary context, so the library's cudaPointerGetAttributes knows these
 * arrays as device memory of device 0.  Where no libcudart.so loads, devmem_open says why
 * and the suites skip those points.  Without a GPU the CUDA suites skip before this runs;
 * the emulated tests (tests/test_*_cuda_emu) check the same paths on the CUDA files
 * themselves. */
#ifndef PK_TEST_CUDA_DEVMEM_H
#define PK_TEST_CUDA_DEVMEM_H

#include "config.h"

#ifdef PK_HAVE_CUDA /* where the library links the CUDA runtime, it links -ldl too */
#include <dlfcn.h>
#endif
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct devmem_api {
    void *lib;
    int (*malloc_)(void **p, size_t bytes);
    int (*free_)(void *p);
    int (*memcpy_)(void *dst, const void *src, size_t bytes, int kind); /* 4: cudaMemcpyDefault */
    char why[300];
} devmem_api;
static devmem_api devmem;

/* NULL when the runtime is loaded, else why not. */
static const char *devmem_open(void)
{
    if (devmem.lib) return NULL;
    if (devmem.why[0]) return devmem.why;
#ifndef PK_HAVE_CUDA
    snprintf(devmem.why, sizeof devmem.why, "the CUDA backend is not built");
    return devmem.why;
#else
    const char *names[] = {
#ifdef PK_CUDA_LIBDIR
        PK_CUDA_LIBDIR "/libcudart.so",
#endif
        "libcudart.so", "libcudart.so.13", "libcudart.so.12"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !devmem.lib; ++i)
        devmem.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!devmem.lib) {
        snprintf(devmem.why, sizeof devmem.why, "no libcudart.so to allocate device arrays (%s)",
                 dlerror());
        return devmem.why;
    }
    /* through a union: ISO C has no conversion of void * to a function pointer */
    union { void *p; int (*f)(void **, size_t); } m = {dlsym(devmem.lib, "cudaMalloc")};
    union { void *p; int (*f)(void *); } f = {dlsym(devmem.lib, "cudaFree")};
    union { void *p; int (*f)(void *, const void *, size_t, int); } c = {
        dlsym(devmem.lib, "cudaMemcpy")};
    if (!m.p || !f.p || !c.p) {
        snprintf(devmem.why, sizeof devmem.why, "libcudart.so lacks cudaMalloc / cudaFree / "
                 "cudaMemcpy");
        dlclose(devmem.lib);
        devmem.lib = NULL;
        return devmem.why;
    }
    devmem.malloc_ = m.f;
    devmem.free_ = f.f;
    devmem.memcpy_ = c.f;
    return NULL;
#endif
}

/* A device array of bytes holding a copy of host (NULL: left as cudaMalloc gives it); NULL
 * on failure. */
static void *devmem_alloc(const void *host, size_t bytes)
{
    void *p = NULL;
    if (devmem_open() || devmem.malloc_(&p, bytes) != 0) return NULL;
    if (host && devmem.memcpy_(p, host, bytes, 4) != 0) {
        devmem.free_(p);
        return NULL;
    }
    return p;
}

/* 0 when bytes of dev were copied into host. */
static int devmem_read(void *host, const void *dev, size_t bytes)
{
    return devmem_open() || devmem.memcpy_(host, dev, bytes, 4) != 0;
}

static void devmem_free(void *p)
{
    if (p && devmem.lib) devmem.free_(p);
}

#endif
