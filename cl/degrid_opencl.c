/* degrid_opencl.c - degrid (docs/KERNELS.md 7.3) on an OpenCL device: variant "opencl", one
 * work-item per visibility (cl/degrid.cl).
 *
 * Plan: the compact kernel stack, the plane offsets and the supports on the device, the
 * gather kernel.  A run: the host locates the visibilities (pk_gr_locate_inline: the
 * gridder's geometry and skips, bit for bit) into int4 records and the bounding box of their
 * footprints, and orders them by tile (pk_dg_tile_order, as omp-tiled); the box of the
 * caller's grid is uploaded (clEnqueueWriteBufferRect), the records in that order with their
 * indices, the gather, the visibilities read back.  Buffers are kept between runs and grown
 * on demand.  A box or a list that does not fit one allocation of the device is PK_EDEVMEM
 * (no banding yet, unlike grid's OpenCL plan).  pk_cl_dg_run_device (the degrid plan of
 * lib/image.c with the FFT on the device, cl/image_opencl.c) gathers from the transformed
 * device grid in place instead: no box, no grid upload. */
#include "opencl_internal.h"
#include "grid_host.h"

#include "cl/degrid_cl.h" /* generated in the build tree */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DG_WG 64

typedef struct dg_buf {
    cl_mem m;
    size_t cap;
} dg_buf;

typedef struct pk_cl_dg {
    cl_context context; /* retained: the plan may outlive its backend state */
    cl_command_queue queue;
    cl_kernel k;
    cl_mem d_kern, d_poff, d_support;
    pk_gr_desc d;          /* p, support (host copy below) */
    int32_t *support;
    cl_ulong max_alloc;
    size_t wg;
    int threads;           /* host threads of the tile order */
    pk_scratch order, key, count;
    dg_buf box, rec, idx, vis;
    char device_name[128];
} pk_cl_dg;

static void dg_buf_release(dg_buf *b)
{
    if (b->m) clReleaseMemObject(b->m);
    b->m = NULL;
    b->cap = 0;
}

static pk_status dg_buf_ensure(pk_cl_dg *h, dg_buf *b, size_t bytes, const char *what)
{
    if (bytes == 0) bytes = 16;
    if (b->m && b->cap >= bytes) return PK_OK;
    dg_buf_release(b);
    PK_CHECK(bytes <= h->max_alloc, PK_EDEVMEM,
             "degrid: %s of %zu bytes exceeds the allocation limit (%llu bytes) of '%s'", what,
             bytes, (unsigned long long)h->max_alloc, h->device_name);
    cl_int err;
    b->m = clCreateBuffer(h->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        b->m = NULL;
        return pk_cl_fail(err, "clCreateBuffer", "degrid %s of %zu bytes on '%s'", what, bytes,
                          h->device_name);
    }
    b->cap = bytes;
    return PK_OK;
}

static void dg_destroy(void *impl)
{
    pk_cl_dg *h = impl;
    if (!h) return;
    dg_buf_release(&h->box);
    dg_buf_release(&h->rec);
    dg_buf_release(&h->idx);
    pk_scratch_free(&h->order);
    pk_scratch_free(&h->key);
    pk_scratch_free(&h->count);
    dg_buf_release(&h->vis);
    if (h->k) clReleaseKernel(h->k);
    if (h->d_kern) clReleaseMemObject(h->d_kern);
    if (h->d_poff) clReleaseMemObject(h->d_poff);
    if (h->d_support) clReleaseMemObject(h->d_support);
    if (h->queue) clReleaseCommandQueue(h->queue);
    if (h->context) clReleaseContext(h->context);
    free(h->support);
    free(h);
}

static cl_mem dg_const(pk_cl_dg *h, const void *src, size_t bytes, const char *what,
                       pk_status *s)
{
    cl_int err;
    cl_mem m = clCreateBuffer(h->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              bytes ? bytes : 16, (void *)src, &err);
    if (err != CL_SUCCESS) {
        *s = pk_cl_fail(err, "clCreateBuffer", "degrid %s (%zu bytes) on '%s'", what, bytes,
                        h->device_name);
        return NULL;
    }
    return m;
}

static pk_status dg_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    const int np = desc->p.num_w_planes;
    PK_CHECK(desc->p.oversample < 0x7fff, PK_EUNSUPPORTED,
             "degrid: opencl packs offsets in 15 bits");
    pk_cl_dg *h = calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "degrid: out of host memory for an OpenCL plan");
    pk_status s = PK_OK;
    h->d = *desc;
    h->threads = desc->threads;
    h->max_alloc = dev->max_alloc;
    pk_strlcpy(h->device_name, dev->name, sizeof h->device_name);
    clRetainContext(dev->context);
    h->context = dev->context;
    clRetainCommandQueue(dev->queue);
    h->queue = dev->queue;
    h->support = malloc((size_t)np * sizeof *h->support);
    cl_ulong *poff = malloc(((size_t)np + 1) * sizeof *poff);
    if (!h->support || !poff) {
        free(poff);
        s = pk_fail(PK_ENOMEM, "degrid: out of host memory for an OpenCL plan");
        goto fail;
    }
    memcpy(h->support, desc->support, (size_t)np * sizeof *h->support);
    h->d.support = h->support;
    for (int w = 0; w <= np; ++w) poff[w] = (cl_ulong)desc->plane_offset[w];
    const size_t kbytes = 8 * desc->plane_offset[np];
    if (kbytes > h->max_alloc) {
        free(poff);
        s = pk_fail(PK_EDEVMEM, "degrid: the kernel stack (%zu bytes) does not fit '%s'",
                    kbytes, dev->name);
        goto fail;
    }
    h->d_kern = dg_const(h, desc->kernels, kbytes, "kernel stack", &s);
    if (h->d_kern) h->d_poff = dg_const(h, poff, ((size_t)np + 1) * 8, "plane offsets", &s);
    free(poff);
    if (h->d_poff) h->d_support = dg_const(h, desc->support, (size_t)np * 4, "supports", &s);
    if (!h->d_support) goto fail;
    cl_program prog;
    s = pk_cl_program_get(st, dev, "degrid", pk_cl_src_degrid, pk_cl_hash_degrid, "", &prog);
    if (s != PK_OK) goto fail;
    cl_int err;
    h->k = clCreateKernel(prog, "pk_dg_gather", &err);
    if (err != CL_SUCCESS) {
        h->k = NULL;
        s = pk_cl_fail(err, "clCreateKernel", "pk_dg_gather on '%s'", dev->name);
        goto fail;
    }
    size_t max_wg = 1;
    err = clGetKernelWorkGroupInfo(h->k, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "pk_dg_gather on '%s'", dev->name);
        goto fail;
    }
    h->wg = max_wg < DG_WG ? max_wg : DG_WG;
    *impl = h;
    return PK_OK;
fail:
    dg_destroy(h);
    return s;
}

/* From the caller's host grid (the box uploaded), or from dgrid, a g x g complex64 device
 * grid of the plan's context (pk_cl_dg_run_device: read in place, pitch g, nothing copied). */
static pk_status dg_run_on(pk_cl_dg *h, const float *grid, cl_mem dgrid, const pk_grid_data *d,
                           float *vis, pk_dg_result *r)
{
    const size_t n = d->num_vis;
    const int g = h->d.p.grid_size, os = h->d.p.oversample;
    PK_CHECK(n <= (size_t)INT32_MAX, PK_EUNSUPPORTED,
             "degrid: opencl takes at most 2^31 - 1 visibilities per run, got %zu", n);
    if (n == 0) return PK_OK;
    /* host: records and the bounding box (the gridder's geometry) */
    const double t0 = pk_now();
    cl_int4 *rec = malloc(n * sizeof *rec);
    PK_CHECK(rec != NULL, PK_ENOMEM, "degrid: out of host memory for %zu records", n);
    int u0 = g, u1 = -1, v0 = g, v1 = -1;
    int64_t skipped = 0;
    double upd = 0;
    for (size_t i = 0; i < n; ++i) {
        const float wt = d->weight ? d->weight[i] : 1.0f;
        int w, gu, gv, ou, ov;
        if (pk_gr_locate_inline(&h->d, d->uu[i], d->vv[i], d->ww[i], 0.0f, 0.0f, wt, &w, &gu,
                                &gv, &ou, &ov)) {
            rec[i].s[0] = rec[i].s[1] = 0;
            rec[i].s[2] = -1;
            rec[i].s[3] = 0;
            ++skipped;
            continue;
        }
        const int s = h->support[w];
        if (gu - s < u0) u0 = gu - s;
        if (gu + s > u1) u1 = gu + s;
        if (gv - s < v0) v0 = gv - s;
        if (gv + s > v1) v1 = gv + s;
        rec[i].s[0] = gu;
        rec[i].s[1] = gv;
        rec[i].s[2] = w;
        rec[i].s[3] = (ou + os / 2) | (ov + os / 2) << 15 | (d->ww[i] > 0 ? 1 << 30 : 0);
        upd += (double)(2 * s + 1) * (2 * s + 1);
    }
    if (u1 < u0) { /* nothing to gather */
        u0 = v0 = 0;
        u1 = v1 = 0;
    }
    if (dgrid) { /* the whole device grid is the box */
        u0 = v0 = 0;
        u1 = v1 = g - 1;
    }
    for (size_t i = 0; i < n; ++i)
        if (rec[i].s[2] >= 0) {
            rec[i].s[0] -= u0;
            rec[i].s[1] -= v0;
        }
    /* the tile order: records permuted, their indices beside them */
    const size_t *order = NULL;
    pk_status s = pk_dg_tile_order(&h->d.p, h->support, d, h->threads, &h->order, &h->key,
                                   &h->count, &order);
    cl_int4 *srec = s == PK_OK ? malloc(n * sizeof *srec) : NULL;
    cl_uint *sidx = srec ? malloc(n * sizeof *sidx) : NULL;
    if (s == PK_OK && !sidx) s = pk_fail(PK_ENOMEM, "degrid: out of host memory for %zu records", n);
    if (s == PK_OK)
        for (size_t t = 0; t < n; ++t) {
            srec[t] = rec[order[t]];
            sidx[t] = (cl_uint)order[t];
        }
    free(rec);
    rec = srec;
    const double t1 = pk_now();
    const size_t cols = (size_t)(u1 - u0 + 1), rows = (size_t)(v1 - v0 + 1);
    if (s == PK_OK && !dgrid) s = dg_buf_ensure(h, &h->box, cols * rows * 8, "grid box");
    if (s == PK_OK) s = dg_buf_ensure(h, &h->rec, n * sizeof *rec, "records");
    if (s == PK_OK) s = dg_buf_ensure(h, &h->idx, n * sizeof *sidx, "record indices");
    if (s == PK_OK) s = dg_buf_ensure(h, &h->vis, n * 8, "visibilities");
    cl_int err = CL_SUCCESS;
    if (s == PK_OK && !dgrid) {
        const size_t borig[3] = {0, 0, 0}, horig[3] = {(size_t)u0 * 8, (size_t)v0, 0};
        const size_t region[3] = {cols * 8, rows, 1};
        err = clEnqueueWriteBufferRect(h->queue, h->box.m, CL_TRUE, borig, horig, region,
                                       cols * 8, 0, (size_t)g * 8, 0, grid, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = pk_cl_fail(err, "clEnqueueWriteBufferRect", "degrid box %zu x %zu to '%s'", rows,
                           cols, h->device_name);
    }
    if (s == PK_OK) {
        err = clEnqueueWriteBuffer(h->queue, h->rec.m, CL_TRUE, 0, n * sizeof *rec, rec, 0, NULL,
                                   NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(h->queue, h->idx.m, CL_TRUE, 0, n * sizeof *sidx, sidx, 0,
                                       NULL, NULL);
        if (err != CL_SUCCESS)
            s = pk_cl_fail(err, "clEnqueueWriteBuffer", "degrid records to '%s'",
                           h->device_name);
    }
    free(rec);
    free(sidx);
    const double t2 = pk_now();
    if (s == PK_OK) {
        const cl_int pitch = (cl_int)cols, cos_ = os, cn = (cl_int)n;
        const cl_mem *src = dgrid ? &dgrid : &h->box.m;
        const void *vals[10] = {&h->rec.m, &h->idx.m,     src,   &pitch,    &h->d_kern,
                                &h->d_poff, &h->d_support, &cos_, &h->vis.m, &cn};
        const size_t sizes[10] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof pitch,
                                  sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof cos_,
                                  sizeof(cl_mem), sizeof cn};
        for (cl_uint a = 0; a < 10 && err == CL_SUCCESS; ++a)
            err = clSetKernelArg(h->k, a, sizes[a], vals[a]);
        const size_t global = (n + h->wg - 1) / h->wg * h->wg;
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(h->queue, h->k, 1, NULL, &global, &h->wg, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clFinish(h->queue);
        if (err != CL_SUCCESS) {
            clFinish(h->queue);
            s = pk_cl_fail(err, "clEnqueueNDRangeKernel", "pk_dg_gather (%zu visibilities) on "
                           "'%s'", n, h->device_name);
        }
    }
    const double t3 = pk_now();
    if (s == PK_OK) {
        err = clEnqueueReadBuffer(h->queue, h->vis.m, CL_TRUE, 0, n * 8, vis, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = pk_cl_fail(err, "clEnqueueReadBuffer", "degrid visibilities from '%s'",
                           h->device_name);
    }
    const double t4 = pk_now();
    r->num_skipped = skipped;
    r->updates = upd;
    r->kernel_s = (t1 - t0) + (t3 - t2);
    r->transfer_s = (t2 - t1) + (t4 - t3);
    return s;
}

static pk_status dg_run(void *impl, const float *grid, const pk_grid_data *d, float *vis,
                        pk_dg_result *r)
{
    return dg_run_on(impl, grid, NULL, d, vis, r);
}

pk_status pk_cl_dg_run_device(void *impl, cl_mem grid, const pk_grid_data *d, float *vis,
                              pk_dg_result *r)
{
    return dg_run_on(impl, NULL, grid, d, vis, r);
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
const pk_dg_ops pk_opencl_dg_ops = {
    .variants = "opencl",
    .create = dg_create,
    .run = dg_run,
    .destroy = dg_destroy,
};
