/* conv2d_opencl.c - the conv2d plan on an OpenCL device (variant "opencl"): the PSF, the
 * image and the output live in device buffers; a run is one enqueue of pk_cv_tile
 * (cl/conv2d.cl), so frames can be convolved again and again with no host copies.
 *
 * Scheme (PORTKERN_CL_CV_SCHEME=vec|scalar overrides the choice by device type):
 *  - CPUs, "vec": each work-item computes 16 consecutive outputs in each of 8 rows as float16
 *    (one AVX-512 register, two AVX2 ones) and copies whole tile rows; work-groups of 8 x 2
 *    items, tiles of 16 x 128 outputs (the 11 x 11 window is 26 x 138 floats, 14 KiB: L1).
 *    Measured through PoCL 3.1 on 2 Zen 5 cores, 813 x 5271 with 11 x 11: 10.8 ms; tiles of
 *    64 to 512 columns and 8 to 32 rows were all within 5%, 4 rows per item 5% slower.  The
 *    inner loop is one broadcast and 8 FMAs on unaligned 64-byte loads (a * b + c under
 *    FP_CONTRACT; PoCL compiles mad() as a multiply and an add: 2x slower).
 *  - other devices, "scalar": one output column of 8 rows per work-item, work-groups of
 *    32 x 4, tiles of 32 x 32: consecutive items read consecutive local words (no bank
 *    conflicts) and consecutive pixels from global memory (coalesced).
 * The PSF is walked in chunks whose input window fits the local-memory budget, so any PSF
 * size runs in the same kernel; for the usual sizes there is one chunk.
 */
#include "opencl_internal.h"

#include "cl/conv2d_cl.h" /* generated in the build tree */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PK_CV_RY 8 /* output rows per work-item, fixed in the kernel */

typedef struct pk_cl_cv {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel kernel;
    cl_mem img, out, psf;
    size_t bytes; /* one image */
    size_t global[2], local[2];
    char device_name[128];
} pk_cl_cv;

void pk_cl_cv_destroy(void *impl)
{
    pk_cl_cv *p = impl;
    if (!p) return;
    if (p->kernel) clReleaseKernel(p->kernel);
    if (p->img) clReleaseMemObject(p->img);
    if (p->out) clReleaseMemObject(p->out);
    if (p->psf) clReleaseMemObject(p->psf);
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

/* PSF chunk (cbh x cbw taps) whose input window (ty + cbh - 1) x (tx + cbw - 1) fits `budget`
 * bytes: the whole PSF when it fits, else halve the longer side until it does. */
static void choose_chunk(int kh, int kw, int ty, int tx, size_t budget, int *cbh, int *cbw)
{
    int a = kh, b = kw;
    while ((size_t)(ty + a - 1) * (size_t)(tx + b - 1) * sizeof(float) > budget &&
           (a > 1 || b > 1)) {
        if (b >= a)
            b = (b + 1) / 2;
        else
            a = (a + 1) / 2;
    }
    *cbh = a;
    *cbw = b;
}

pk_status pk_cl_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));

    const int h = desc->h, w = desc->w, kh = desc->kh, kw = desc->kw;
    size_t pixels = 0, taps = 0;
    PK_TRY(pk_cv_int_limits(desc, "opencl", &pixels, &taps));
    size_t bytes = pixels * sizeof(float), psf_bytes = taps * sizeof(float);
    PK_CHECK(bytes <= dev->max_alloc && psf_bytes <= dev->max_alloc, PK_EDEVMEM,
             "conv2d: an image of %zu bytes or a psf of %zu bytes exceeds "
             "CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of '%s'",
             bytes, psf_bytes, (unsigned long long)dev->max_alloc, dev->name);
    PK_CHECK(2 * (cl_ulong)bytes + psf_bytes <= dev->global_mem, PK_EDEVMEM,
             "conv2d: two images of %zu bytes and a psf of %zu bytes exceed "
             "CL_DEVICE_GLOBAL_MEM_SIZE (%llu) of '%s'",
             bytes, psf_bytes, (unsigned long long)dev->global_mem, dev->name);

    int scheme[2]; /* conv2d.cl_scheme: auto, vec, scalar */
    PK_TRY(pk_param_get(desc->tuning, PK_PARAM_CONV2D_CL_SCHEME, scheme));
    const int vec = scheme[0] ? scheme[0] == 1 : dev->type == PK_DEVICE_CPU;
    const int vw = vec ? 16 : 1;

    cl_ulong const_max = 0;
    const cl_ulong local_mem = dev->local_mem;
    cl_int err = clGetDeviceInfo(dev->id, CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, sizeof const_max,
                                 &const_max, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clGetDeviceInfo", "constant memory size of '%s'", dev->name);
    char defines[128];
    snprintf(defines, sizeof defines, "-DPK_CV_VW=%d -DPK_CV_ROWCOPY=%d -DPK_CV_PSF=%s%s", vw,
             vec, psf_bytes <= const_max ? "__constant" : "__global",
             pixels > INT_MAX ? " -DPK_IDX=long" : "");
    PK_TRY(pk_cl_program_get(st, dev, "conv2d", pk_cl_src_conv2d, pk_cl_hash_conv2d, defines,
                             &prog));

    pk_cl_cv *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL conv2d plan");
    p->bytes = bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    p->kernel = clCreateKernel(prog, "pk_cv_tile", &err);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clCreateKernel", "pk_cv_tile on '%s'", dev->name);
        goto fail;
    }
    if (!(p->img = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, bytes, "conv2d", "image", &s)) ||
        !(p->out = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, bytes, "conv2d", "output", &s)) ||
        !(p->psf = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, psf_bytes, "conv2d", "psf", &s)))
        goto fail;
    err = clEnqueueWriteBuffer(p->queue, p->psf, CL_TRUE, 0, psf_bytes, desc->psf, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clEnqueueWriteBuffer", "conv2d psf of %zu bytes to '%s'", psf_bytes,
                       dev->name);
        goto fail;
    }
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    const float zero = 0.0f;
    err = clEnqueueFillBuffer(p->queue, p->img, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(p->queue, p->out, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(p->queue);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clEnqueueFillBuffer", "conv2d buffers of %zu bytes on '%s'", bytes,
                       dev->name);
        goto fail;
    }

    size_t max_wg = 0;
    err = clGetKernelWorkGroupInfo(p->kernel, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "pk_cv_tile on '%s'", dev->name);
        goto fail;
    }
    size_t lx = vec ? 8 : 32, ly = vec ? 2 : 4;
    while (lx * ly > max_wg && ly > 1) ly /= 2;
    while (lx * ly > max_wg && lx > 1) lx /= 2;
    const int tx = (int)lx * vw, ty = (int)ly * PK_CV_RY;

    /* Local memory: a CPU's is ordinary cache-backed memory, keep the window near L1; a
     * GPU's is per compute unit, leave room for a second resident work-group. */
    size_t budget = vec ? 64 * 1024 : (size_t)local_mem / 2;
    if (budget > local_mem) budget = (size_t)local_mem;
    if ((size_t)tx * (size_t)ty * sizeof(float) > budget) {
        s = pk_fail(PK_EUNSUPPORTED,
                    "conv2d: a %d x %d output tile needs %zu bytes of local memory, '%s' has %llu",
                    ty, tx, (size_t)tx * (size_t)ty * sizeof(float), dev->name,
                    (unsigned long long)local_mem);
        goto fail;
    }
    int cbh, cbw;
    choose_chunk(kh, kw, ty, tx, budget, &cbh, &cbw);
    const size_t tile_bytes = (size_t)(ty + cbh - 1) * (size_t)(tx + cbw - 1) * sizeof(float);

    p->local[0] = lx;
    p->local[1] = ly;
    p->global[0] = (size_t)((w + tx - 1) / tx) * lx;
    p->global[1] = (size_t)((h + ty - 1) / ty) * ly;
    /* Arguments: (img, out, psf, local window, h, w, kh, kw, cbh, cbw). */
    const cl_int ints[6] = {h, w, kh, kw, cbh, cbw};
    cl_uint a = 0;
    err = clSetKernelArg(p->kernel, a, sizeof p->img, &p->img);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, sizeof p->out, &p->out);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, sizeof p->psf, &p->psf);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, tile_bytes, NULL);
    for (int i = 0; i < 6 && err == CL_SUCCESS; ++i)
        err = clSetKernelArg(p->kernel, ++a, sizeof(cl_int), &ints[i]);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clSetKernelArg", "pk_cv_tile argument %u on '%s' (%zu bytes of "
                                              "local memory)",
                       a, dev->name, tile_bytes);
        goto fail;
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cl_cv_destroy(p);
    return s;
}

pk_status pk_cl_cv_upload(void *impl, const float *image, double *seconds)
{
    pk_cl_cv *p = impl;
    double t0 = pk_now();
    cl_int err =
        clEnqueueWriteBuffer(p->queue, p->img, CL_TRUE, 0, p->bytes, image, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "conv2d image of %zu bytes to '%s'",
                          p->bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_cv_run(void *impl, double *kernel_seconds)
{
    pk_cl_cv *p = impl;
    double t0 = pk_now();
    cl_int err =
        clEnqueueNDRangeKernel(p->queue, p->kernel, 2, NULL, p->global, p->local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(p->queue);
        return pk_cl_fail(err, "clEnqueueNDRangeKernel", "pk_cv_tile %zu x %zu on '%s'",
                          p->global[0], p->global[1], p->device_name);
    }
    err = clFinish(p->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clFinish", "pk_cv_tile on '%s'", p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_cv_download(void *impl, float *out, double *seconds)
{
    pk_cl_cv *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->out, CL_TRUE, 0, p->bytes, out, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "conv2d output of %zu bytes from '%s'",
                          p->bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* The conv2d kernel family on this backend (lib/internal.h, pk_cv_ops). */
const pk_cv_ops pk_opencl_cv_ops = {
    .variants = "opencl",
    .create = pk_cl_cv_create,
    .upload = pk_cl_cv_upload,
    .run = pk_cl_cv_run,
    .download = pk_cl_cv_download,
    .destroy = pk_cl_cv_destroy,
};
