/* fft_opencl.c - the 2-D complex FFT of a device grid on the OpenCL backend (docs/KERNELS.md
 * 7.7): VkFFT's OpenCL backend (VKFFT_BACKEND 3; Debian libvkfft-dev, a header-only
 * library: its kernels are generated at plan time and built by the device's OpenCL compiler).
 * The only translation unit that includes vkFFT.h: its warnings are silenced here.
 *
 * A plan: one g x g complex64 transform in place on a caller's buffer, single precision,
 * unnormalised, both directions (inverse: e^{+2 pi i}, FFTW_BACKWARD's sign; forward:
 * e^{-2 pi i}).  VkFFT handles any size (radices 2..13 directly, Bluestein's algorithm
 * beyond), so every even grid size is served; a plan it cannot make or build on the device
 * is PK_EUNSUPPORTED (PK_EDEVMEM out of memory) with its VkFFTResult, and the caller falls
 * back to the host FFT.  vkFFT.h is included after opencl_internal.h, so its buffers go
 * through pk_cl_create_buffer (the PORTKERN_TEST_DEVICE_OOM hook applies to them too).  Without VkFFT at configure time, or
 * with PORTKERN_TEST_NO_DEVICE_FFT set and not "0" (a test hook), create returns
 * PK_ENOBACKEND: the caller's fallback, said in its run info's reason. */
#include "opencl_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef PK_HAVE_VKFFT
#define VKFFT_BACKEND 3
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wformat-truncation"
#pragma GCC diagnostic ignored "-Wformat-overflow"
#endif
#include <vkFFT.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

struct pk_cl_fft {
#ifdef PK_HAVE_VKFFT
    VkFFTApplication app;
    VkFFTConfiguration cfg;
    /* VkFFT keeps these pointers: they live with the plan */
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_mem buffer;
    uint64_t bytes;
    int have_app;
#endif
    int g;
};

const char *pk_cl_fft_library(void)
{
#ifdef PK_HAVE_VKFFT
    return "VkFFT (OpenCL)";
#else
    return "none";
#endif
}

void pk_cl_fft_destroy(pk_cl_fft *f)
{
    if (!f) return;
#ifdef PK_HAVE_VKFFT
    if (f->have_app) deleteVkFFT(&f->app);
#endif
    free(f);
}

pk_status pk_cl_fft_check(const char *what)
{
    const char *e = getenv("PORTKERN_TEST_NO_DEVICE_FFT");
    if (e && *e && strcmp(e, "0") != 0)
        return pk_fail(PK_ENOBACKEND, "%s: on-device FFT disabled by PORTKERN_TEST_NO_DEVICE_FFT",
                       what);
#ifndef PK_HAVE_VKFFT
    return pk_fail(PK_ENOBACKEND, "%s: this portkern was configured without VkFFT (Debian "
                   "libvkfft-dev): no on-device FFT on OpenCL", what);
#else
    return PK_OK;
#endif
}

pk_status pk_cl_fft_create(cl_device_id device, cl_context context, cl_command_queue queue,
                           cl_mem buffer, int g, const char *what, pk_cl_fft **fft)
{
    *fft = NULL;
    PK_TRY(pk_cl_fft_check(what));
#ifndef PK_HAVE_VKFFT
    (void)device;
    (void)context;
    (void)queue;
    (void)buffer;
    (void)g;
    return pk_fail(PK_EINTERNAL, "%s: no VkFFT", what);
#else
    PK_CHECK(g >= 2, PK_EINVAL, "%s: FFT size %d", what, g);
    pk_cl_fft *f = calloc(1, sizeof *f);
    PK_CHECK(f != NULL, PK_ENOMEM, "%s: out of host memory for an FFT plan", what);
    f->g = g;
    f->device = device;
    f->context = context;
    f->queue = queue;
    f->buffer = buffer;
    f->bytes = (uint64_t)g * (uint64_t)g * 8u;
    f->cfg.FFTdim = 2;
    f->cfg.size[0] = (uint64_t)g;
    f->cfg.size[1] = (uint64_t)g;
    f->cfg.device = &f->device;
    f->cfg.context = &f->context;
    f->cfg.commandQueue = &f->queue;
    f->cfg.buffer = &f->buffer;
    f->cfg.bufferSize = &f->bytes;
    f->cfg.normalize = 0;
    /* twiddles from a table computed in double on the host (VkFFT's LUT), not sincos in
       float on the device: the FFT's error stays the radix-2 bound's (twiddles exact to u) */
    f->cfg.useLUT = 1;
    if (f->bytes >= ((uint64_t)1 << 31)) f->cfg.useUint64 = 1;
    const VkFFTResult r = initializeVkFFT(&f->app, f->cfg);
    if (r != VKFFT_SUCCESS) {
        free(f);
        /* out of memory, else anything VkFFT cannot plan or build on this device (a size, a
           kernel its compiler rejects): the callers' host FFT either way */
        const pk_status st =
            r == VKFFT_ERROR_FAILED_TO_ALLOCATE ? PK_EDEVMEM : PK_EUNSUPPORTED;
        return pk_fail(st, "%s: VkFFT could not plan the %d x %d transform (VkFFTResult %d)",
                       what, g, g, (int)r);
    }
    f->have_app = 1;
    *fft = f;
    return PK_OK;
#endif
}

pk_status pk_cl_fft_exec(pk_cl_fft *f, int inverse, const char *what)
{
#ifndef PK_HAVE_VKFFT
    (void)inverse;
    return pk_fail(PK_EINTERNAL, "%s: no on-device FFT (plan %p)", what, (void *)f);
#else
    VkFFTLaunchParams lp;
    memset(&lp, 0, sizeof lp);
    lp.commandQueue = &f->queue;
    lp.buffer = &f->buffer;
    /* VkFFT: -1 forward (e^{-2 pi i}), 1 inverse (e^{+2 pi i}) */
    const VkFFTResult r = VkFFTAppend(&f->app, inverse ? 1 : -1, &lp);
    if (r != VKFFT_SUCCESS)
        return pk_fail(PK_EDEVICE, "%s: VkFFT's %d x %d %s transform failed (VkFFTResult %d)",
                       what, f->g, f->g, inverse ? "inverse" : "forward", (int)r);
    return PK_OK;
#endif
}
