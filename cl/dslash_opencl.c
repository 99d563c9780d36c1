/* dslash_opencl.c - the dslash plan on an OpenCL device (variant "opencl"): u, psi and chi
 * live on the device; a run is one enqueue of pk_ds_hop (cl/dslash.cl, one work-item per
 * site, spin projection), whose arguments are set once at creation, so a plan runs again and
 * again with no host copies.  The program is built once per (recon12, index type).
 * Work-groups of 64 sites (fewer if the kernel allows fewer): a multiple of the warp and
 * wavefront sizes on GPUs, and small enough for PoCL, which keeps a work-group's private
 * arrays (the 12 sums, a link, two half spinors: ~0.6 KB per item) on a worker thread's
 * stack: left to choose, it took 4096 items and overflowed the stack at 16^3 x 32.  Double precision is required: a device without
 * cl_khr_fp64 gets PK_EUNSUPPORTED (the dispatcher then falls back). */
#include "opencl_internal.h"

#include "cl/dslash_cl.h" /* generated in the build tree */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define DS_CL_GROUP 64 /* sites per work-group (see above) */

typedef struct pk_cl_ds {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel kernel;
    cl_mem u, psi, chi;
    size_t u_bytes, s_bytes;
    size_t global, local;
    char device_name[128];
} pk_cl_ds;

void pk_cl_ds_destroy(void *impl)
{
    pk_cl_ds *p = impl;
    if (!p) return;
    if (p->kernel) clReleaseKernel(p->kernel);
    if (p->u) clReleaseMemObject(p->u);
    if (p->psi) clReleaseMemObject(p->psi);
    if (p->chi) clReleaseMemObject(p->chi);
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

pk_status pk_cl_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    PK_CHECK(dev->fp64, PK_EUNSUPPORTED,
             "dslash: OpenCL device '%s' has no double precision (cl_khr_fp64), which dslash "
             "needs",
             dev->name);
    const size_t u_bytes = desc->u_doubles * sizeof(double);
    const size_t s_bytes = desc->spinor_doubles * sizeof(double);
    PK_CHECK(u_bytes <= dev->max_alloc, PK_EDEVMEM,
             "dslash: the links' %zu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of '%s'",
             u_bytes, (unsigned long long)dev->max_alloc, dev->name);
    PK_CHECK((cl_ulong)u_bytes + 2 * (cl_ulong)s_bytes <= dev->global_mem, PK_EDEVMEM,
             "dslash: u, psi and chi need %llu bytes, more than CL_DEVICE_GLOBAL_MEM_SIZE (%llu) "
             "of '%s'",
             (unsigned long long)u_bytes + 2ull * s_bytes, (unsigned long long)dev->global_mem,
             dev->name);
    /* Offsets in double2 reach 4 V rows x 3: int while that fits. */
    const int use_long = 4 * desc->volume * 9 > (size_t)INT_MAX;
    char defines[64];
    snprintf(defines, sizeof defines, "-DPK_DS_RECON12=%d%s", desc->recon12,
             use_long ? " -DPK_IDX=long" : "");
    PK_TRY(pk_cl_program_get(st, dev, "dslash", pk_cl_src_dslash, pk_cl_hash_dslash, defines,
                             &prog));

    pk_cl_ds *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL dslash plan");
    p->u_bytes = u_bytes;
    p->s_bytes = s_bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    cl_int err = CL_SUCCESS;
    p->kernel = clCreateKernel(prog, "pk_ds_hop", &err);
    if (err != CL_SUCCESS) {
        p->kernel = NULL;
        s = pk_cl_fail(err, "clCreateKernel", "pk_ds_hop on '%s'", dev->name);
        goto fail;
    }
    if (!(p->u = pk_cl_device_buffer(dev, CL_MEM_READ_ONLY, u_bytes, "dslash", "u", &s)) ||
        !(p->psi = pk_cl_device_buffer(dev, CL_MEM_READ_ONLY, s_bytes, "dslash", "psi", &s)) ||
        !(p->chi = pk_cl_device_buffer(dev, CL_MEM_WRITE_ONLY, s_bytes, "dslash", "chi", &s)))
        goto fail;
    /* A run or a download before the first upload sees zeros, not stale device memory. */
    const double zero = 0.0;
    err = clEnqueueFillBuffer(p->queue, p->u, &zero, sizeof zero, 0, u_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(p->queue, p->psi, &zero, sizeof zero, 0, s_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(p->queue, p->chi, &zero, sizeof zero, 0, s_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(p->queue);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clEnqueueFillBuffer", "dslash fields on '%s'", dev->name);
        goto fail;
    }
    /* Arguments: (u, psi, chi, X, Y, Z, T, diag). */
    const cl_int dims[4] = {desc->dims[0], desc->dims[1], desc->dims[2], desc->dims[3]};
    const cl_double diag = 1.0 / (2.0 * desc->kappa);
    cl_uint a = 0;
    err = clSetKernelArg(p->kernel, a, sizeof(cl_mem), &p->u);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, sizeof(cl_mem), &p->psi);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, sizeof(cl_mem), &p->chi);
    for (int k = 0; k < 4 && err == CL_SUCCESS; ++k)
        err = clSetKernelArg(p->kernel, ++a, sizeof(cl_int), &dims[k]);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, ++a, sizeof diag, &diag);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clSetKernelArg", "pk_ds_hop argument %u on '%s'", a, dev->name);
        goto fail;
    }
    size_t max_wg = 0;
    err = clGetKernelWorkGroupInfo(p->kernel, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "pk_ds_hop on '%s'", dev->name);
        goto fail;
    }
    p->local = max_wg < DS_CL_GROUP ? max_wg : DS_CL_GROUP;
    if (p->local == 0) p->local = 1;
    p->global = (desc->volume + p->local - 1) / p->local * p->local; /* the kernel skips extras */
    *impl = p;
    return PK_OK;
fail:
    pk_cl_ds_destroy(p);
    return s;
}

pk_status pk_cl_ds_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    pk_cl_ds *p = impl;
    const double t0 = pk_now();
    cl_int err = CL_SUCCESS; /* u NULL: the links stay (plan_execute_psi) */
    if (u) err = clEnqueueWriteBuffer(p->queue, p->u, CL_FALSE, 0, p->u_bytes, u, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(p->queue, p->psi, CL_FALSE, 0, p->s_bytes, psi, 0, NULL, NULL);
    const cl_int fin = clFinish(p->queue); /* the host arrays may go once we return */
    if (err == CL_SUCCESS) err = fin;
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "dslash u and psi (%zu + %zu bytes) to '%s'",
                          p->u_bytes, p->s_bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_ds_run(void *impl, double *kernel_seconds)
{
    pk_cl_ds *p = impl;
    const double t0 = pk_now();
    cl_int err =
        clEnqueueNDRangeKernel(p->queue, p->kernel, 1, NULL, &p->global, &p->local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(p->queue);
        return pk_cl_fail(err, "clEnqueueNDRangeKernel", "pk_ds_hop on %zu sites on '%s'",
                          p->global, p->device_name);
    }
    err = clFinish(p->queue);
    if (err != CL_SUCCESS) return pk_cl_fail(err, "clFinish", "pk_ds_hop on '%s'", p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_ds_download(void *impl, double *chi, double *seconds)
{
    pk_cl_ds *p = impl;
    const double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->chi, CL_TRUE, 0, p->s_bytes, chi, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "dslash chi of %zu bytes from '%s'",
                          p->s_bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* The dslash kernel family on this backend (lib/internal.h, pk_ds_ops). */
const pk_ds_ops pk_opencl_ds_ops = {
    .variants = "opencl",
    .create = pk_cl_ds_create,
    .upload = pk_cl_ds_upload,
    .run = pk_cl_ds_run,
    .download = pk_cl_ds_download,
    .destroy = pk_cl_ds_destroy,
};
