/* image_opencl.c - the dirty image and degridding with the FFT on the OpenCL device
 * (docs/KERNELS.md 7.7): the grid stays in a device buffer, only the image (or the model)
 * crosses the link.  lib/image.c makes this plan beside an image plan whose grid plan runs
 * on OpenCL (any variant: opencl-tiled, opencl-atomic) or a degrid plan on "opencl".
 *
 * The plan: the g x g complex64 device grid, the factors sc[x] = (-1)^(x - N/2) / c(x - N/2)
 * (lib/image.c's floats), the N x N float image or model buffer, the crop or place kernel
 * (cl/image.cl) and a VkFFT plan on the grid (cl/fft_opencl.c), all made once.
 *  image:  "zero" the grid (clEnqueueFillBuffer), "grid" (grid_opencl.c's run into the device
 *          grid: pk_cl_gr_run_device), "fft" (inverse, in place), "correct" (pk_im_crop:
 *          Re F (sc[y] / norm) sc[x] in the host path's float order), "transfer" (the
 *          visibilities' uploads and the image's download);
 *  degrid: "place" (the model uploaded, the grid zeroed, pk_im_place: model (sc[y] / kappa)
 *          sc[x] at the model's cells), "fft" (forward, in place), "degrid" (degrid_opencl.c's
 *          gather reading the device grid in place: pk_cl_dg_run_device), "transfer" (the
 *          model's upload and the gather's copies).
 * Memory on the device: 8 g^2 bytes for the grid, VkFFT's work buffer for the large sizes'
 * four-step transform (up to as much again), 4 N^2 for the image or model. */
#include "opencl_internal.h"

#include "cl/image_cl.h" /* generated in the build tree */

#include <stdlib.h>
#include <string.h>

#define IM_TX 16
#define IM_TY 4

typedef struct pk_cl_im {
    cl_context context; /* retained */
    cl_command_queue queue;
    cl_mem grid, sc, img;
    cl_kernel k;
    pk_cl_fft *fft;
    int g, n, adjoint;
    float scale; /* the degrid's 1 / kappa */
    char device_name[128];
} pk_cl_im;

void pk_cl_im_destroy(void *impl)
{
    pk_cl_im *h = impl;
    if (!h) return;
    if (h->queue) clFinish(h->queue);
    pk_cl_fft_destroy(h->fft);
    if (h->k) clReleaseKernel(h->k);
    if (h->grid) clReleaseMemObject(h->grid);
    if (h->sc) clReleaseMemObject(h->sc);
    if (h->img) clReleaseMemObject(h->img);
    if (h->queue) clReleaseCommandQueue(h->queue);
    if (h->context) clReleaseContext(h->context);
    free(h);
}

pk_status pk_cl_im_create(void *state, int device, int g, int n, const float *scorr, int adjoint,
                          double scale, void **impl)
{
    PK_CHECK(g >= 2 && n >= 2 && n <= g && n % 2 == 0, PK_EINVAL,
             "image (opencl): grid %d and image %d sizes", g, n);
    const char *what = adjoint ? "degrid" : "image";
    PK_TRY(pk_cl_fft_check(what)); /* before any device memory */
    pk_cl_state *st = state;
    pk_cl_device *dev;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    const size_t gbytes = (size_t)g * (size_t)g * 8, ibytes = (size_t)n * (size_t)n * 4;
    PK_CHECK(gbytes <= dev->max_alloc, PK_EDEVMEM,
             "%s: the %d x %d device grid (%zu bytes) exceeds the allocation limit (%llu "
             "bytes) of '%s'", what, g, g, gbytes, (unsigned long long)dev->max_alloc, dev->name);
    /* PoCL runs VkFFT's kernel into a segmentation fault on grids of 2^31 bytes and more
     * (2026-11-29, PoCL 3.1 on an AVX-512 Xeon: g 18000 crashed in VkFFT_main, g 10000 ran;
     * VkFFT's 64-bit addressing was on), a crash no status can report: on a CPU device the
     * grid is host memory anyway, so such grids take the host FFT (the caller's fallback). */
    PK_CHECK(dev->type != PK_DEVICE_CPU || gbytes < ((size_t)1 << 31), PK_EUNSUPPORTED,
             "%s: a %d x %d grid (%zu bytes, 2^31 and more) is not transformed by VkFFT on "
             "the CPU device '%s' (PoCL crashes in its kernel at that size): the host FFT",
             what, g, g, gbytes, dev->name);
    pk_cl_im *h = calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "%s: out of host memory for an OpenCL plan", what);
    h->g = g;
    h->n = n;
    h->adjoint = adjoint;
    h->scale = (float)scale;
    pk_strlcpy(h->device_name, dev->name, sizeof h->device_name);
    clRetainContext(dev->context);
    h->context = dev->context;
    clRetainCommandQueue(dev->queue);
    h->queue = dev->queue;
    pk_status s = PK_OK;
    cl_int err;
    if (!(h->grid = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, gbytes, what, "grid", &s)) ||
        !(h->img = pk_cl_device_buffer(dev, CL_MEM_READ_WRITE, ibytes, what,
                                       adjoint ? "model" : "image", &s)))
        goto fail;
    h->sc = clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * 4,
                           (void *)scorr, &err);
    if (err != CL_SUCCESS) {
        h->sc = NULL;
        s = pk_cl_fail(err, "clCreateBuffer", "%s correction (%d floats) on '%s'", what, n,
                       dev->name);
        goto fail;
    }
    cl_program prog;
    if ((s = pk_cl_program_get(st, dev, "image", pk_cl_src_image, pk_cl_hash_image, "", &prog)) !=
        PK_OK)
        goto fail;
    const char *kname = adjoint ? "pk_im_place" : "pk_im_crop";
    h->k = clCreateKernel(prog, kname, &err);
    if (err != CL_SUCCESS) {
        h->k = NULL;
        s = pk_cl_fail(err, "clCreateKernel", "%s on '%s'", kname, dev->name);
        goto fail;
    }
    if ((s = pk_cl_fft_create(dev->id, dev->context, dev->queue, h->grid, g, what, &h->fft)) !=
        PK_OK)
        goto fail;
    *impl = h;
    return PK_OK;
fail:
    pk_cl_im_destroy(h);
    return s;
}

/* Zero the device grid, waited for. */
static pk_status im_zero(pk_cl_im *h, const char *what)
{
    const cl_float2 zero = {{0.0f, 0.0f}};
    cl_int err = clEnqueueFillBuffer(h->queue, h->grid, &zero, sizeof zero, 0,
                                     (size_t)h->g * (size_t)h->g * 8, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(h->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueFillBuffer", "%s: zeroing the %d x %d device grid on "
                          "'%s'", what, h->g, h->g, h->device_name);
    return PK_OK;
}

/* The crop or place kernel over the N x N pixels, waited for. */
static pk_status im_pixels(pk_cl_im *h, float scale)
{
    const cl_int cg = h->g, cn = h->n;
    const cl_mem *src = &h->img;
    cl_int err = clSetKernelArg(h->k, 0, sizeof(cl_mem), &h->grid);
    if (err == CL_SUCCESS) err = clSetKernelArg(h->k, 1, sizeof cg, &cg);
    if (err == CL_SUCCESS) err = clSetKernelArg(h->k, 2, sizeof cn, &cn);
    if (err == CL_SUCCESS) err = clSetKernelArg(h->k, 3, sizeof(cl_mem), &h->sc);
    if (err == CL_SUCCESS) err = clSetKernelArg(h->k, 4, sizeof scale, &scale);
    if (err == CL_SUCCESS) err = clSetKernelArg(h->k, 5, sizeof(cl_mem), src);
    const size_t local[2] = {IM_TX, IM_TY};
    const size_t global[2] = {((size_t)h->n + IM_TX - 1) / IM_TX * IM_TX,
                              ((size_t)h->n + IM_TY - 1) / IM_TY * IM_TY};
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(h->queue, h->k, 2, NULL, global, local, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(h->queue);
    if (err != CL_SUCCESS) {
        clFinish(h->queue);
        return pk_cl_fail(err, "clEnqueueNDRangeKernel", "%s (%d x %d) on '%s'",
                          h->adjoint ? "pk_im_place" : "pk_im_crop", h->n, h->n, h->device_name);
    }
    return PK_OK;
}

static pk_status im_fft(pk_cl_im *h, int inverse, const char *what)
{
    PK_TRY(pk_cl_fft_exec(h->fft, inverse, what));
    const cl_int err = clFinish(h->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clFinish", "%s: the %d x %d FFT on '%s'", what, h->g, h->g,
                          h->device_name);
    return PK_OK;
}

pk_status pk_cl_im_run(void *impl, void *gr_impl, const pk_grid_data *d, float *image,
                       pk_gr_result *gres, double *stage_s)
{
    pk_cl_im *h = impl;
    const size_t n = (size_t)h->n;
    memset(gres, 0, sizeof *gres);
    const double t0 = pk_now();
    PK_TRY(im_zero(h, "image"));
    const double t1 = pk_now();
    if (d->num_vis > 0) PK_TRY(pk_cl_gr_run_device(gr_impl, d, h->grid, gres));
    const double t2 = pk_now();
    PK_TRY(im_fft(h, 1, "image"));
    const double t3 = pk_now();
    PK_TRY(im_pixels(h, gres->norm != 0 ? (float)(1.0 / gres->norm) : 0.0f));
    const double t4 = pk_now();
    const cl_int err =
        clEnqueueReadBuffer(h->queue, h->img, CL_TRUE, 0, n * n * 4, image, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "image (%zu x %zu) from '%s'", n, n,
                          h->device_name);
    const double t5 = pk_now();
    stage_s[0] = t1 - t0;                             /* zero */
    stage_s[1] = (t2 - t1) - gres->transfer_s;        /* grid */
    stage_s[2] = t3 - t2;                             /* fft */
    stage_s[3] = t4 - t3;                             /* correct */
    stage_s[4] = gres->transfer_s + (t5 - t4);        /* transfer */
    return PK_OK;
}

pk_status pk_cl_dg_predict(void *impl, void *dg_impl, const float *model, const pk_grid_data *d,
                           float *vis, pk_dg_result *res, double *stage_s)
{
    pk_cl_im *h = impl;
    const size_t n = (size_t)h->n;
    memset(res, 0, sizeof *res);
    const double t0 = pk_now();
    const cl_int err =
        clEnqueueWriteBuffer(h->queue, h->img, CL_TRUE, 0, n * n * 4, model, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "model (%zu x %zu) to '%s'", n, n,
                          h->device_name);
    const double t1 = pk_now();
    PK_TRY(im_zero(h, "degrid"));
    PK_TRY(im_pixels(h, h->scale));
    const double t2 = pk_now();
    PK_TRY(im_fft(h, 0, "degrid"));
    const double t3 = pk_now();
    PK_TRY(pk_cl_dg_run_device(dg_impl, h->grid, d, vis, res));
    stage_s[0] = t2 - t1;                  /* place */
    stage_s[1] = t3 - t2;                  /* fft */
    stage_s[2] = res->kernel_s;            /* degrid */
    stage_s[3] = (t1 - t0) + res->transfer_s; /* transfer */
    res->kernel_s += (t3 - t1);
    res->transfer_s += t1 - t0;
    return PK_OK;
}
