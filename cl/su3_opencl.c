/* su3_opencl.c - the su3 plan on an OpenCL device (variant "opencl", docs/KERNELS.md 4b):
 * u, psi and chi live on the device in the plan's layout; a run is one enqueue of the
 * layout family's kernel (cl/su3.cl: pk_s3_aos for aos / short / padded / recon12,
 * pk_s3_vfo, pk_s3_hvfo), its arguments set once at creation, so a plan runs again and
 * again with no host copies.  The program is built once per layout (PK_S3_LAYOUT).
 * Work-groups of 64 items (fewer if the device allows fewer), the global size rounded up to
 * them: PoCL then runs each group as a vectorisable loop of 64 sites.  Double precision is
 * required: a device without cl_khr_fp64 gets PK_EUNSUPPORTED (the dispatcher falls back). */
#include "opencl_internal.h"

#include "cl/su3_cl.h" /* generated in the build tree */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_CL_GROUP 64

typedef struct pk_cl_s3 {
    cl_command_queue queue; /* retained: the plan may outlive its backend state */
    cl_kernel kernel;
    cl_mem u, psi, chi;
    size_t u_bytes, s_bytes;
    size_t global, local;
    char device_name[128];
} pk_cl_s3;

static size_t s3_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void pk_cl_s3_destroy(void *impl)
{
    pk_cl_s3 *p = impl;
    if (!p) return;
    if (p->kernel) clReleaseKernel(p->kernel);
    if (p->u) clReleaseMemObject(p->u);
    if (p->psi) clReleaseMemObject(p->psi);
    if (p->chi) clReleaseMemObject(p->chi);
    if (p->queue) clReleaseCommandQueue(p->queue);
    free(p);
}

pk_status pk_cl_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    PK_CHECK(dev->fp64, PK_EUNSUPPORTED,
             "su3: OpenCL device '%s' has no double precision (cl_khr_fp64), which su3 needs",
             dev->name);
    const size_t u_bytes = desc->u_doubles * sizeof(double);
    const size_t s_bytes = desc->spinor_doubles * sizeof(double);
    PK_CHECK(s_bytes <= dev->max_alloc && u_bytes <= dev->max_alloc, PK_EDEVMEM,
             "su3: an array of %zu bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of '%s'",
             s_bytes > u_bytes ? s_bytes : u_bytes, (unsigned long long)dev->max_alloc,
             dev->name);
    PK_CHECK((cl_ulong)u_bytes + 2 * (cl_ulong)s_bytes <= dev->global_mem, PK_EDEVMEM,
             "su3: u, psi and chi need %llu bytes, more than CL_DEVICE_GLOBAL_MEM_SIZE (%llu) "
             "of '%s'",
             (unsigned long long)u_bytes + 2 * (unsigned long long)s_bytes,
             (unsigned long long)dev->global_mem, dev->name);
    char defines[48];
    snprintf(defines, sizeof defines, "-DPK_S3_LAYOUT=%d", desc->layout);
    PK_TRY(pk_cl_program_get(st, dev, "su3", pk_cl_src_su3, pk_cl_hash_su3, defines, &prog));

    pk_cl_s3 *p = calloc(1, sizeof *p);
    PK_CHECK(p != NULL, PK_ENOMEM, "out of host memory for an OpenCL su3 plan");
    p->u_bytes = u_bytes;
    p->s_bytes = s_bytes;
    pk_strlcpy(p->device_name, dev->name, sizeof p->device_name);
    clRetainCommandQueue(dev->queue);
    p->queue = dev->queue;

    pk_status s = PK_OK;
    cl_int err = CL_SUCCESS;
    const char *name = desc->layout == PK_SU3_VFO    ? "pk_s3_vfo"
                       : desc->layout == PK_SU3_HVFO ? "pk_s3_hvfo"
                                                     : "pk_s3_aos";
    p->kernel = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS) {
        p->kernel = NULL;
        s = pk_cl_fail(err, "clCreateKernel", "%s on '%s'", name, dev->name);
        goto fail;
    }
    if (!(p->u = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, u_bytes, "su3", "u", &s)) ||
        !(p->psi = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, s_bytes, "su3", "psi", &s)) ||
        !(p->chi = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, s_bytes, "su3", "chi", &s)))
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
        s = pk_cl_fail(err, "clEnqueueFillBuffer", "su3 u, psi and chi on '%s'", dev->name);
        goto fail;
    }

    size_t max_wg = 0;
    err = clGetKernelWorkGroupInfo(p->kernel, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "%s on '%s'", name, dev->name);
        goto fail;
    }
    p->local = max_wg >= S3_CL_GROUP ? S3_CL_GROUP : (max_wg ? max_wg : 1);
    p->global = s3_round_up(desc->nsites, p->local);

    /* Arguments: (u, psi, chi, n[, nw]). */
    const cl_ulong n = (cl_ulong)desc->nsites;
    const cl_uint nw = (cl_uint)desc->nw;
    err = clSetKernelArg(p->kernel, 0, sizeof(cl_mem), &p->u);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, 1, sizeof(cl_mem), &p->psi);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, 2, sizeof(cl_mem), &p->chi);
    if (err == CL_SUCCESS) err = clSetKernelArg(p->kernel, 3, sizeof n, &n);
    if (err == CL_SUCCESS && desc->layout == PK_SU3_HVFO)
        err = clSetKernelArg(p->kernel, 4, sizeof nw, &nw);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clSetKernelArg", "%s on '%s'", name, dev->name);
        goto fail;
    }
    *impl = p;
    return PK_OK;
fail:
    pk_cl_s3_destroy(p);
    return s;
}

pk_status pk_cl_s3_upload(void *impl, const double *u, const double *psi, double *seconds)
{
    pk_cl_s3 *p = impl;
    const double t0 = pk_now();
    cl_int err = clEnqueueWriteBuffer(p->queue, p->u, CL_FALSE, 0, p->u_bytes, u, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(p->queue, p->psi, CL_TRUE, 0, p->s_bytes, psi, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(p->queue);
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "su3 u and psi (%zu + %zu bytes) to '%s'",
                          p->u_bytes, p->s_bytes, p->device_name);
    }
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_s3_run(void *impl, double *kernel_seconds)
{
    pk_cl_s3 *p = impl;
    const double t0 = pk_now();
    cl_int err =
        clEnqueueNDRangeKernel(p->queue, p->kernel, 1, NULL, &p->global, &p->local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(p->queue);
        return pk_cl_fail(err, "clEnqueueNDRangeKernel", "su3 over %zu items on '%s'", p->global,
                          p->device_name);
    }
    err = clFinish(p->queue);
    if (err != CL_SUCCESS) return pk_cl_fail(err, "clFinish", "su3 on '%s'", p->device_name);
    if (kernel_seconds) *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_cl_s3_download(void *impl, double *chi, double *seconds)
{
    pk_cl_s3 *p = impl;
    const double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(p->queue, p->chi, CL_TRUE, 0, p->s_bytes, chi, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "su3 chi of %zu bytes from '%s'",
                          p->s_bytes, p->device_name);
    if (seconds) *seconds = pk_now() - t0;
    return PK_OK;
}

/* The su3 kernel family on this backend (lib/internal.h, pk_s3_ops). */
const pk_s3_ops pk_opencl_s3_ops = {
    .variants = "opencl",
    .create = pk_cl_s3_create,
    .upload = pk_cl_s3_upload,
    .run = pk_cl_s3_run,
    .download = pk_cl_s3_download,
    .destroy = pk_cl_s3_destroy,
};
