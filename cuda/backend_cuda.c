/* backend_cuda.c - the CUDA backend's table.
 *
 * Plain C: the CUDA work lives in runtime.cu, diffusion3d.cu, conv2d.cu and conv2d_fft.cu
 * behind the extern "C" functions of cuda_internal.h, so this file needs no CUDA header and
 * the rest of the library never sees C++.  Device checks are done here, once, before any
 * CUDA call, so that an invalid or unusable ordinal gives a precise pk_last_error() instead
 * of a driver error.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pk_status cuda_init(const pk_context_options *opt, void **state, char *why, size_t why_len)
{
    (void)opt; /* the device is chosen per call; CUDA needs no per-context setup */
    pk_cuda_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        if (why && why_len) snprintf(why, why_len, "out of host memory for the CUDA backend");
        return PK_ENOMEM;
    }
    pk_status st = pk_cuda_probe(s, why, why_len);
    if (st != PK_OK) {
        pk_cuda_release(s);
        free(s);
        return st;
    }
    *state = s;
    return PK_OK;
}

static void cuda_fini(void *state)
{
    pk_cuda_state *s = state;
    if (s == NULL) return;
    pk_cuda_release(s);
    free(s);
}

static int cuda_device_count(void *state)
{
    const pk_cuda_state *s = state;
    return s ? s->count : 0;
}

static pk_status cuda_device_info(void *state, int index, pk_device_info *info)
{
    const pk_cuda_state *s = state;
    PK_CHECK(index >= 0 && index < s->count, PK_ENODEVICE,
             "cuda device %d: the backend has %d device(s)", index, s->count);
    *info = s->devices[index];
    return PK_OK;
}

/* Before every kernel's create (lib/dispatch.c): a valid, usable device. */
static pk_status cuda_device_check(void *state, int device)
{
    return pk_cuda_check_device((const pk_cuda_state *)state, device);
}

static pk_status cuda_bandwidth(void *state, int device, size_t bytes, int reps, double *bps)
{
    PK_TRY(pk_cuda_check_device(state, device));
    return pk_cuda_bandwidth(device, bytes, reps, bps);
}

/* Every CUDA plan starts with its pk_cuda_xfer (PK_CUDA_XFER_FIRST in each .cu file). */
static void cuda_transfer_note(void *impl, char *dst, size_t len)
{
    pk_cuda_xfer *x = impl;
    pk_cuda_transfer_note(x, dst, len);
    x->paths = 0;
}

static int cuda_memory(void *impl, const void *p, size_t bytes)
{
    return pk_cuda_memory((const pk_cuda_xfer *)impl, p, bytes);
}

const pk_backend_ops pk_backend_cuda = {
    .id = PK_BACKEND_CUDA,
    .name = "cuda",
    .init = cuda_init,
    .fini = cuda_fini,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .bandwidth = cuda_bandwidth,
    .device_check = cuda_device_check,
    .transfer_note = cuda_transfer_note,
    .memory = cuda_memory,
};
