/* laplace2d_opencl.c - the laplace2d plan on an OpenCL device: two device buffers holding the
 * field in the plan's layout, one kernel object per direction (f1 -> f2 and back), so a run of
 * `count` iterations is `count` enqueues with no host copies and no argument changes.
 *
 * Lane mapping (cl/laplace2d.cl; PORTKERN_CL_LP_SCHEME=vec|item overrides the choice):
 *  - CPUs: vec, the lanes as a vector type: hvfo with nw = 2, 4, 8, 16 runs pk_lp_hvfo_vec
 *    (one floatNW per work-item, the kernel's only shuffles at the two boundary columns), lexi
 *    runs pk_lp_lexi_vec (16 consecutive x per work-item).  PoCL maps a float16 onto one
 *    AVX-512 register, so this is the omp-simd design; its implicit vectoriser over work-items
 *    would otherwise have to discover it.  Other lane counts (3, 5, 32, ...) run item.
 *  - other devices: item, the lanes as work-items (pk_lp_item): consecutive work-items read
 *    consecutive floats in either layout (coalesced), which is what a GPU needs; a vector type
 *    per work-item would make each load strided by nw floats across the warp.
 * Work-groups are bands of rows (16 x 16 items; PoCL compiles a kernel once per local size,
 * so the sizes come from a small fixed set).
 */
#include "opencl_internal.h"

#include "cl/laplace2d_cl.h" /* generated in the build tree */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pk_cl_lp {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel step[2];      /* step[i] reads buf[i] and writes buf[1 - i] */
    cl_mem buf[2];
    int cur;                /* buffer holding the latest field */
    size_t bytes;
    size_t global[2], local[2];
    char device_name[128];
} pk_cl_lp;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void pk_cl_lp_destroy(void *impl)
{
    pk_cl_lp *p = impl;
    if (!p) return;
    for (int i = 0; i < 2; ++i) {
        if (p->step[i]) clReleaseKernel(p->step[i]);
        if (p->buf[i]) clReleaseMemObject(p->buf[i]);
    }
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

enum { LP_CL_ITEM, LP_CL_HVFO_VEC, LP_CL_LEXI_VEC };

/* Arguments: (src, dst, l, [nw: item only,] a, inv). */
static cl_int set_args(cl_kernel k, cl_mem src, cl_mem dst, const pk_lp_desc *d, int kind)
{
    cl_int l = d->l, nw = d->nw;
    cl_uint i = 0;
    cl_int err = clSetKernelArg(k, i++, sizeof src, &src);
    err |= clSetKernelArg(k, i++, sizeof dst, &dst);
    err |= clSetKernelArg(k, i++, sizeof l, &l);
    if (kind == LP_CL_ITEM) err |= clSetKernelArg(k, i++, sizeof nw, &nw);
    err |= clSetKernelArg(k, i++, sizeof(cl_float), &d->sigma);
    err |= clSetKernelArg(k, i++, sizeof(cl_float), &d->inv);
    return err;
}

static int vector_width(int nw) { return nw == 2 || nw == 4 || nw == 8 || nw == 16; }

pk_status pk_cl_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));

    const size_t sites = (size_t)desc->l * (size_t)desc->l;
    const size_t bytes = sites * sizeof(float);
    PK_CHECK(bytes <= dev->max_alloc, PK_EDEVMEM,
             "laplace2d: a field of %zu bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of '%s'",
             bytes, (unsigned long long)dev->max_alloc, dev->name);
    PK_CHECK(bytes <= dev->global_mem / 2, PK_EDEVMEM,
             "laplace2d: two fields of %zu bytes exceed CL_DEVICE_GLOBAL_MEM_SIZE (%llu) of '%s'",
             bytes, (unsigned long long)dev->global_mem, dev->name);

    int scheme[2]; /* laplace2d.cl_scheme: auto, vec, item */
    PK_TRY(pk_param_get(desc->tuning, PK_PARAM_LAPLACE2D_CL_SCHEME, scheme));
    const int vec = scheme[0] ? scheme[0] == 1 : dev->type == PK_DEVICE_CPU;
    int kind = LP_CL_ITEM;
    if (vec && desc->layout == PK_LAP_LEXI) kind = LP_CL_LEXI_VEC;
    if (vec && desc->layout == PK_LAP_HVFO && vector_width(desc->nw)) kind = LP_CL_HVFO_VEC;

    /* Indices stay 32-bit (cheaper on GPUs) unless a site index could overflow them. */
    char defines[64];
    snprintf(defines, sizeof defines, "%s%s",
             kind == LP_CL_HVFO_VEC ? (desc->nw == 16 ? "-DLP_VN=16" : desc->nw == 8 ? "-DLP_VN=8"
                                       : desc->nw == 4 ? "-DLP_VN=4" : "-DLP_VN=2")
                                    : "",
             sites > INT_MAX ? " -DPK_IDX=long" : "");
    PK_TRY(pk_cl_program_get(st, dev, "laplace2d", pk_cl_src_laplace2d, pk_cl_hash_laplace2d,
                             defines, &prog));

    pk_cl_lp *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL laplace2d plan");
    p->bytes = bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    cl_int err = CL_SUCCESS;
    const char *kname = kind == LP_CL_ITEM        ? "pk_lp_item"
                        : kind == LP_CL_HVFO_VEC ? "pk_lp_hvfo_vec"
                                                 : "pk_lp_lexi_vec";
    for (int i = 0; i < 2 && err == CL_SUCCESS; ++i) p->step[i] = clCreateKernel(prog, kname, &err);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clCreateKernel", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    for (int i = 0; i < 2; ++i) {
        p->buf[i] = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clCreateBuffer", "laplace2d field %d of %zu bytes on '%s'", i,
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
    /* Work-items per row: sites (item), columns (hvfo vec), 16-site chunks (lexi vec). */
    const size_t items = kind == LP_CL_ITEM       ? (size_t)desc->l
                         : kind == LP_CL_HVFO_VEC ? (size_t)(desc->l / desc->nw)
                                                  : ((size_t)desc->l + 15) / 16;
    size_t lx = kind == LP_CL_ITEM ? 64 : 16, ly;
    while (lx > 1 && items <= lx / 2) lx /= 2;
    ly = 256 / lx;
    while (ly > 1 && (size_t)desc->l <= ly / 2) ly /= 2;
    while (lx * ly > max_wg && ly > 1) ly /= 2;
    while (lx * ly > max_wg && lx > 1) lx /= 2;
    p->local[0] = lx;
    p->local[1] = ly;
    p->global[0] = round_up(items, lx);
    p->global[1] = round_up((size_t)desc->l, ly);
    err = set_args(p->step[0], p->buf[0], p->buf[1], desc, kind);
    err |= set_args(p->step[1], p->buf[1], p->buf[0], desc, kind);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clSetKernelArg", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cl_lp_destroy(p);
    return s;
}

pk_status pk_cl_lp_upload(void *impl, const float *phi, double *seconds)
{
    pk_cl_lp *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueWriteBuffer(p->queue, p->buf[0], CL_TRUE, 0, p->bytes, phi, 0, NULL,
                                      NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "laplace2d field of %zu bytes to '%s'",
                          p->bytes, p->device_name);
    p->cur = 0;
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_lp_run(void *impl, int count, double *kernel_seconds)
{
    pk_cl_lp *p = impl;
    double t0 = pk_now();
    for (int i = 0; i < count; ++i) {
        cl_int err = clEnqueueNDRangeKernel(p->queue, p->step[p->cur], 2, NULL, p->global,
                                            p->local, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clFinish(p->queue);
            return pk_cl_fail(err, "clEnqueueNDRangeKernel", "laplace2d iteration %d of %d on '%s'",
                              i + 1, count, p->device_name);
        }
        p->cur ^= 1;
        /* Hand work to the device while the host keeps enqueueing. */
        if ((i & 31) == 31) clFlush(p->queue);
    }
    cl_int err = clFinish(p->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clFinish", "laplace2d, %d iterations on '%s'", count,
                          p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_lp_download(void *impl, float *phi, double *seconds)
{
    pk_cl_lp *p = impl;
    double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->buf[p->cur], CL_TRUE, 0, p->bytes, phi, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "laplace2d field of %zu bytes from '%s'",
                          p->bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* The laplace2d kernel family on this backend (lib/internal.h, pk_lp_ops). */
const pk_lp_ops pk_opencl_lp_ops = {
    .variants = "opencl",
    .create = pk_cl_lp_create,
    .upload = pk_cl_lp_upload,
    .run = pk_cl_lp_run,
    .download = pk_cl_lp_download,
    .destroy = pk_cl_lp_destroy,
};
