/* diffusion3d_opencl.c - the diffusion3d plan on an OpenCL device: two device buffers, one
 * kernel object per direction (f1 -> f2 and back), so a run of `count` steps is `count`
 * enqueues with no host copies and no argument changes in between.
 *
 * Kernel choice (PORTKERN_CL_D3_SCHEME=xvec|zmarch overrides it):
 *  - CPUs: pk_d3_xvec, 16 points of a row per work-item in a float16, 4 planes deep,
 *    work-groups of 256 items (bands of rows, as many items along x as the rows need: a
 *    fixed set of five local sizes, since PoCL compiles each kernel once per local size);
 *  - other devices: pk_d3_zmarch, 2.5-D blocking, (32, 8) columns per work-group, each
 *    marching through a slab of planes; slabs are as thick as filling the device allows.
 */
#include "opencl_internal.h"

#include "cl/diffusion3d_cl.h" /* generated in the build tree */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pk_cl_d3 {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel step[2];      /* step[i] reads buf[i] and writes buf[1 - i] */
    cl_mem buf[2];
    int cur;                /* buffer holding the latest field */
    size_t bytes;
    size_t global[3], local[3];
    char device_name[128];
} pk_cl_d3;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void pk_cl_d3_destroy(void *impl)
{
    pk_cl_d3 *p = impl;
    if (!p) return;
    for (int i = 0; i < 2; ++i) {
        if (p->step[i]) clReleaseKernel(p->step[i]);
        if (p->buf[i]) clReleaseMemObject(p->buf[i]);
    }
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

/* Planes per work-item of pk_d3_xvec, a build option (see diffusion3d.cl). */
#define PK_XVEC_ZB 4

/* Arguments: (src, dst, nx, ny, nz, [zb: pk_d3_zmarch only,] cc, cw, ce, cs, cn, cb, ct). */
static cl_int set_args(cl_kernel k, cl_mem src, cl_mem dst, const pk_d3_desc *d, int zmarch,
                       cl_int zb)
{
    cl_int ints[4] = {d->nx, d->ny, d->nz, zb};
    cl_uint a = 0;
    cl_int err = clSetKernelArg(k, a++, sizeof src, &src);
    err |= clSetKernelArg(k, a++, sizeof dst, &dst);
    for (int i = 0; i < (zmarch ? 4 : 3); ++i)
        err |= clSetKernelArg(k, a++, sizeof(cl_int), &ints[i]);
    for (int i = 0; i < 7; ++i) err |= clSetKernelArg(k, a++, sizeof(cl_float), &d->c[i]);
    return err;
}

pk_status pk_cl_d3_create(void *state, int device, const pk_d3_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));

    size_t points;
    PK_CHECK(pk_mul3_size((size_t)desc->nx, (size_t)desc->ny, (size_t)desc->nz, &points) == 0 &&
                 points <= SIZE_MAX / sizeof(float),
             PK_EOVERFLOW, "diffusion3d: %d x %d x %d points overflow size_t", desc->nx, desc->ny,
             desc->nz);
    size_t bytes = points * sizeof(float);
    PK_CHECK(bytes <= dev->max_alloc, PK_EDEVMEM,
             "diffusion3d: a field of %zu bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of "
             "'%s'",
             bytes, (unsigned long long)dev->max_alloc, dev->name);
    PK_CHECK(bytes <= dev->global_mem / 2, PK_EDEVMEM,
             "diffusion3d: two fields of %zu bytes exceed CL_DEVICE_GLOBAL_MEM_SIZE (%llu) of "
             "'%s'",
             bytes, (unsigned long long)dev->global_mem, dev->name);

    int scheme[2]; /* diffusion3d.cl_scheme: auto, xvec, zmarch */
    PK_TRY(pk_param_get(desc->tuning, PK_PARAM_DIFFUSION3D_CL_SCHEME, scheme));
    const int zmarch = scheme[0] ? scheme[0] == 2 : dev->type != PK_DEVICE_CPU;
    /* Indices stay 32-bit (cheaper on GPUs) unless a point index could overflow them. */
    char defines[64];
    snprintf(defines, sizeof defines, "-DPK_XVEC_ZB=%d%s", PK_XVEC_ZB,
             points > INT_MAX ? " -DPK_IDX=long" : "");
    PK_TRY(pk_cl_program_get(st, dev, "diffusion3d", pk_cl_src_diffusion3d,
                             pk_cl_hash_diffusion3d, defines, &prog));

    pk_cl_d3 *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL diffusion3d plan");
    p->bytes = bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    cl_int err = CL_SUCCESS;
    const char *kname = zmarch ? "pk_d3_zmarch" : "pk_d3_xvec";
    for (int i = 0; i < 2 && err == CL_SUCCESS; ++i) p->step[i] = clCreateKernel(prog, kname, &err);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clCreateKernel", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    for (int i = 0; i < 2; ++i) {
        p->buf[i] = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clCreateBuffer", "diffusion3d field %d of %zu bytes on '%s'", i,
                           bytes, dev->name);
            goto fail;
        }
    }

    size_t max_wg = 0;
    err = clGetKernelWorkGroupInfo(p->step[0], dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    size_t lx, ly, xitems = (size_t)desc->nx;
    cl_int zb;
    if (zmarch) {
        lx = 32;
        ly = 8;
        /* Enough columns x slabs to give every compute unit 2048 work-items. */
        size_t want = (size_t)(dev->compute_units > 0 ? dev->compute_units : 1) * 2048;
        size_t cols = (size_t)desc->nx * (size_t)desc->ny;
        size_t parts = (want + cols - 1) / cols;
        if (parts > (size_t)desc->nz) parts = (size_t)desc->nz;
        zb = (cl_int)(((size_t)desc->nz + parts - 1) / parts);
    } else {
        xitems = ((size_t)desc->nx + 15) / 16;
        lx = 16;
        while (lx > 1 && xitems <= lx / 2) lx /= 2;
        ly = 256 / lx;
        zb = PK_XVEC_ZB;
    }
    while (lx * ly > max_wg && ly > 1) ly /= 2;
    while (lx * ly > max_wg && lx > 1) lx /= 2;
    p->local[0] = lx;
    p->local[1] = ly;
    p->local[2] = 1;
    size_t slabs = ((size_t)desc->nz + (size_t)zb - 1) / (size_t)zb;
    p->global[0] = round_up(xitems, lx);
    if (zmarch) {
        p->global[1] = round_up((size_t)desc->ny, ly);
        p->global[2] = slabs;
    } else { /* one band of ly rows per work-group; dimension 2 is (band, slab) */
        p->global[1] = ly;
        p->global[2] = ((size_t)desc->ny + ly - 1) / ly * slabs;
    }
    err = set_args(p->step[0], p->buf[0], p->buf[1], desc, zmarch, zb);
    err |= set_args(p->step[1], p->buf[1], p->buf[0], desc, zmarch, zb);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clSetKernelArg", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cl_d3_destroy(p);
    return s;
}

pk_status pk_cl_d3_upload(void *impl, const float *f, double *seconds)
{
    pk_cl_d3 *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueWriteBuffer(p->queue, p->buf[0], CL_TRUE, 0, p->bytes, f, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "diffusion3d field of %zu bytes to '%s'",
                          p->bytes, p->device_name);
    p->cur = 0;
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_d3_run(void *impl, int count, double *kernel_seconds)
{
    pk_cl_d3 *p = impl;
    double t0 = pk_now();
    for (int i = 0; i < count; ++i) {
        cl_int err = clEnqueueNDRangeKernel(p->queue, p->step[p->cur], 3, NULL, p->global,
                                            p->local, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clFinish(p->queue);
            return pk_cl_fail(err, "clEnqueueNDRangeKernel", "diffusion3d step %d of %d on '%s'",
                              i + 1, count, p->device_name);
        }
        p->cur ^= 1;
        /* Hand work to the device while the host keeps enqueueing. */
        if ((i & 31) == 31) clFlush(p->queue);
    }
    cl_int err = clFinish(p->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clFinish", "diffusion3d, %d steps on '%s'", count, p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_d3_download(void *impl, float *f, double *seconds)
{
    pk_cl_d3 *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->buf[p->cur], CL_TRUE, 0, p->bytes, f, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "diffusion3d field of %zu bytes from '%s'",
                          p->bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* Floats [first, first + n) of the resident field (a distributed plan's halo planes). */
static pk_status pk_cl_d3_upload_part(void *impl, size_t first, size_t n, const float *f)
{
    pk_cl_d3 *p = impl;
    cl_int err = clEnqueueWriteBuffer(p->queue, p->buf[p->cur], CL_TRUE, first * sizeof(float),
                                      n * sizeof(float), f, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "diffusion3d planes (%zu floats) to '%s'",
                          n, p->device_name);
    return PK_OK;
}

static pk_status pk_cl_d3_download_part(void *impl, size_t first, size_t n, float *f)
{
    pk_cl_d3 *p = impl;
    cl_int err = clEnqueueReadBuffer(p->queue, p->buf[p->cur], CL_TRUE, first * sizeof(float),
                                     n * sizeof(float), f, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "diffusion3d planes (%zu floats) from '%s'",
                          n, p->device_name);
    return PK_OK;
}

/* The diffusion3d kernel family on this backend (lib/internal.h, pk_d3_ops). */
const pk_d3_ops pk_opencl_d3_ops = {
    .variants = "opencl",
    .create = pk_cl_d3_create,
    .upload = pk_cl_d3_upload,
    .run = pk_cl_d3_run,
    .download = pk_cl_d3_download,
    .destroy = pk_cl_d3_destroy,
    .upload_part = pk_cl_d3_upload_part,
    .download_part = pk_cl_d3_download_part,
};
