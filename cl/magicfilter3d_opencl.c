/* magicfilter3d_opencl.c - the magicfilter3d plan on an OpenCL device (variant "opencl"):
 * x, y and the work buffers live on the device; a run is three enqueues of pk_mf_pass
 * (cl/magicfilter3d.cl), x -> w1 -> w2 -> y, one kernel object per pass with its arguments
 * set once at creation, so a plan runs again and again with no host copies.  As in the host
 * plans, w1 shares y's buffer when it fits there (pass 1 writes y, pass 2 reads it, pass 3
 * overwrites it): periodic plans hold three arrays, not four.  x is never written, so a plan
 * may run several times per upload.
 *
 * Kernels (PORTKERN_CL_MF_SCHEME=tile|vec overrides the choice by device type; details in the
 * .cl file):
 *  - other devices than CPUs, "tile": BigDFT's / Videau et al.'s design, 16 x 16 work-groups,
 *    a 16 x 33 double local buffer, two loads per item, transposition through local memory;
 *  - CPUs, "vec": 16 outputs of one line per work-item as a double16, work-groups of 1 x 16.
 *    Through PoCL 3.1 on the 2 AMD EPYC cores of the build machine, best of 20 plan runs
 *    (96 n1 n2 n3 flops): 128 x 126 x 130 "vec" 20 GFlop/s, "tile" 6.6; 256^3 "vec" 19.4,
 *    "tile" 4.3 (the OpenMP variant: 30 and 42).  Work-groups of 8, 32 or 64 lines for
 *    "vec" were within the noise of 16.
 * The program is built once per (transpose, boundary condition, scheme, index type): the taps
 * are compiled in as literals, reversed for MFT, and the plan checks that its descriptor
 * carries exactly those taps.  Double precision is required: a device without cl_khr_fp64
 * gets PK_EUNSUPPORTED (the dispatcher then falls back).
 */
#include "opencl_internal.h"

#include "cl/magicfilter3d_cl.h" /* generated in the build tree */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PK_MF_TILE 16 /* fixed in the kernel: reqd_work_group_size(16, 16, 1) */

typedef struct pk_cl_mf {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel pass[3];
    cl_mem x, w1, w2, y;    /* w1 == y when w1 fits in y (not retained twice) */
    size_t in_bytes, out_bytes;
    size_t global[3][2], local[2];
    char device_name[128];
} pk_cl_mf;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void pk_cl_mf_destroy(void *impl)
{
    pk_cl_mf *p = impl;
    if (!p) return;
    for (int i = 0; i < 3; ++i)
        if (p->pass[i]) clReleaseKernel(p->pass[i]);
    if (p->x) clReleaseMemObject(p->x);
    if (p->w1 && p->w1 != p->y) clReleaseMemObject(p->w1);
    if (p->w2) clReleaseMemObject(p->w2);
    if (p->y) clReleaseMemObject(p->y);
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

/* The kernel indexes positions along a line in int (up to the extent + 31) and, when
 * *use_long is 0, every array element and line in int too. */
static pk_status mf_int_limits(const pk_mf_desc *d, int *use_long)
{
    for (int a = 0; a < 3; ++a)
        PK_CHECK(d->in[a] <= INT_MAX - 2 * PK_MF_TILE && d->out[a] <= INT_MAX - 2 * PK_MF_TILE,
                 PK_EUNSUPPORTED,
                 "magicfilter3d: opencl indexes a line in int, extents up to %d, got %d -> %d "
                 "along axis %d",
                 INT_MAX - 2 * PK_MF_TILE, d->in[a], d->out[a], a + 1);
    size_t most = d->in_count;
    if (d->out_count > most) most = d->out_count;
    if (d->work_count[0] > most) most = d->work_count[0];
    if (d->work_count[1] > most) most = d->work_count[1];
    *use_long = most > (size_t)INT_MAX;
    for (int a = 0; a < 3; ++a)
        if (d->pass[a].ndat > (long)INT_MAX - 2 * PK_MF_TILE) *use_long = 1;
    return PK_OK;
}

/* The program compiles in BigDFT's taps: the descriptor must carry exactly those. */
static pk_status mf_check_taps(const pk_mf_desc *d)
{
    const double *f = pk_magicfilter_taps();
    for (int k = 0; k < 16; ++k) {
        const double want = d->transpose ? f[15 - k] : f[k];
        PK_CHECK(d->g[k] == want, PK_EINTERNAL,
                 "magicfilter3d: opencl compiles in the taps of pk_magicfilter_taps(), the plan's "
                 "tap %d is %.17g instead of %.17g",
                 k, d->g[k], want);
    }
    return PK_OK;
}

pk_status pk_cl_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    PK_CHECK(dev->fp64, PK_EUNSUPPORTED,
             "magicfilter3d: OpenCL device '%s' has no double precision (cl_khr_fp64), which "
             "the magic filter needs",
             dev->name);
    PK_TRY(mf_check_taps(desc));
    int use_long = 0;
    PK_TRY(mf_int_limits(desc, &use_long));

    /* Buffers: x, w2, y, and w1 unless it fits in y. */
    const int w1_is_y = desc->work_count[0] <= desc->out_count;
    const size_t in_bytes = desc->in_count * sizeof(double);
    const size_t out_bytes = desc->out_count * sizeof(double);
    const size_t w1_bytes = desc->work_count[0] * sizeof(double);
    const size_t w2_bytes = desc->work_count[1] * sizeof(double);
    size_t largest = in_bytes;
    if (out_bytes > largest) largest = out_bytes;
    if (w1_bytes > largest) largest = w1_bytes;
    if (w2_bytes > largest) largest = w2_bytes;
    const cl_ulong total =
        (cl_ulong)in_bytes + out_bytes + w2_bytes + (w1_is_y ? 0 : (cl_ulong)w1_bytes);
    PK_CHECK(largest <= dev->max_alloc, PK_EDEVMEM,
             "magicfilter3d: an array of %zu bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) "
             "of '%s'",
             largest, (unsigned long long)dev->max_alloc, dev->name);
    PK_CHECK(total <= dev->global_mem, PK_EDEVMEM,
             "magicfilter3d: x, y and the work arrays need %llu bytes, more than "
             "CL_DEVICE_GLOBAL_MEM_SIZE (%llu) of '%s'",
             (unsigned long long)total, (unsigned long long)dev->global_mem, dev->name);

    int scheme[2]; /* magicfilter3d.cl_scheme: auto, vec, tile */
    PK_TRY(pk_param_get(desc->tuning, PK_PARAM_MAGICFILTER3D_CL_SCHEME, scheme));
    const int vec = scheme[0] ? scheme[0] == 1 : dev->type == PK_DEVICE_CPU;
    char defines[96];
    snprintf(defines, sizeof defines, "-DPK_MF_T=%d -DPK_MF_BC=%d -DPK_MF_VEC=%d%s",
             desc->transpose, desc->bc, vec, use_long ? " -DPK_IDX=long" : "");
    PK_TRY(pk_cl_program_get(st, dev, "magicfilter3d", pk_cl_src_magicfilter3d,
                             pk_cl_hash_magicfilter3d, defines, &prog));

    pk_cl_mf *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL magicfilter3d plan");
    p->in_bytes = in_bytes;
    p->out_bytes = out_bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 3; ++i) {
        p->pass[i] = clCreateKernel(prog, "pk_mf_pass", &err);
        if (err != CL_SUCCESS) {
            p->pass[i] = NULL;
            s = pk_cl_fail(err, "clCreateKernel", "pk_mf_pass on '%s'", dev->name);
            goto fail;
        }
    }
    if (!(p->x = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, in_bytes, "magicfilter3d", "x", &s)) ||
        !(p->y = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, out_bytes, "magicfilter3d", "y",
                                     &s)) ||
        !(p->w2 = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, w2_bytes, "magicfilter3d",
                                      "second work array", &s)))
        goto fail;
    if (w1_is_y)
        p->w1 = p->y;
    else if (!(p->w1 = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, w1_bytes, "magicfilter3d",
                                           "first work array", &s)))
        goto fail;
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    const double zero = 0.0;
    err = clEnqueueFillBuffer(p->queue, p->x, &zero, sizeof zero, 0, in_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(p->queue, p->y, &zero, sizeof zero, 0, out_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(p->queue);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clEnqueueFillBuffer", "magicfilter3d x and y (%zu + %zu bytes) on "
                                                   "'%s'",
                       in_bytes, out_bytes, dev->name);
        goto fail;
    }

    size_t max_wg = 0;
    err = clGetKernelWorkGroupInfo(p->pass[0], dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "pk_mf_pass on '%s'", dev->name);
        goto fail;
    }
    p->local[0] = vec ? 1 : PK_MF_TILE;
    p->local[1] = PK_MF_TILE;
    if (max_wg < p->local[0] * p->local[1]) {
        s = pk_fail(PK_EUNSUPPORTED,
                    "magicfilter3d: pk_mf_pass needs work-groups of %zu x %zu items, '%s' allows "
                    "%zu",
                    p->local[0], p->local[1], dev->name, max_wg);
        goto fail;
    }

    /* Arguments: (src, dst, nin, nout, ndat, off). */
    const cl_mem io[4] = {p->x, p->w1, p->w2, p->y};
    for (int i = 0; i < 3; ++i) {
        const pk_mf_pass *ps = &desc->pass[i];
        const cl_int ints[2] = {ps->nin, ps->nout}, off = ps->off;
        const cl_int ndat_i = (cl_int)(use_long ? 0 : ps->ndat);
        const cl_long ndat_l = (cl_long)ps->ndat;
        cl_uint a = 0;
        err = clSetKernelArg(p->pass[i], a, sizeof(cl_mem), &io[i]);
        if (err == CL_SUCCESS) err = clSetKernelArg(p->pass[i], ++a, sizeof(cl_mem), &io[i + 1]);
        if (err == CL_SUCCESS) err = clSetKernelArg(p->pass[i], ++a, sizeof(cl_int), &ints[0]);
        if (err == CL_SUCCESS) err = clSetKernelArg(p->pass[i], ++a, sizeof(cl_int), &ints[1]);
        if (err == CL_SUCCESS)
            err = use_long ? clSetKernelArg(p->pass[i], ++a, sizeof ndat_l, &ndat_l)
                           : clSetKernelArg(p->pass[i], ++a, sizeof ndat_i, &ndat_i);
        if (err == CL_SUCCESS) err = clSetKernelArg(p->pass[i], ++a, sizeof(cl_int), &off);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clSetKernelArg", "pk_mf_pass (pass %d) argument %u on '%s'",
                           i + 1, a, dev->name);
            goto fail;
        }
        if (vec) {
            p->global[i][0] = round_up((size_t)ps->nout, PK_MF_TILE) / PK_MF_TILE;
            p->global[i][1] = round_up((size_t)ps->ndat, PK_MF_TILE);
        } else {
            p->global[i][0] = round_up((size_t)ps->ndat, PK_MF_TILE);
            p->global[i][1] = round_up((size_t)ps->nout, PK_MF_TILE);
        }
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cl_mf_destroy(p);
    return s;
}

pk_status pk_cl_mf_upload(void *impl, const double *x, double *seconds)
{
    pk_cl_mf *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueWriteBuffer(p->queue, p->x, CL_TRUE, 0, p->in_bytes, x, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "magicfilter3d x of %zu bytes to '%s'",
                          p->in_bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_mf_run(void *impl, double *kernel_seconds)
{
    pk_cl_mf *p = impl;
    double t0 = pk_now();
    for (int i = 0; i < 3; ++i) {
        cl_int err = clEnqueueNDRangeKernel(p->queue, p->pass[i], 2, NULL, p->global[i],
                                            p->local, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clFinish(p->queue);
            return pk_cl_fail(err, "clEnqueueNDRangeKernel", "pk_mf_pass (pass %d) %zu x %zu on "
                                                             "'%s'",
                              i + 1, p->global[i][0], p->global[i][1], p->device_name);
        }
    }
    cl_int err = clFinish(p->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clFinish", "pk_mf_pass on '%s'", p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_mf_download(void *impl, double *y, double *seconds)
{
    pk_cl_mf *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->y, CL_TRUE, 0, p->out_bytes, y, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "magicfilter3d y of %zu bytes from '%s'",
                          p->out_bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* The magicfilter3d kernel family on this backend (lib/internal.h, pk_mf_ops). */
const pk_mf_ops pk_opencl_mf_ops = {
    .variants = "opencl",
    .create = pk_cl_mf_create,
    .upload = pk_cl_mf_upload,
    .run = pk_cl_mf_run,
    .download = pk_cl_mf_download,
    .destroy = pk_cl_mf_destroy,
};
