/* grid_opencl.c - grid (docs/KERNELS.md section 1) on an OpenCL device: variants "opencl-tiled"
 * (default) and "opencl-atomic"; the kernels and the kernel-stack layout are described in
 * cl/grid.cl.
 *
 * Plan (created once per kernel stack): the row-reordered stack, the supports and the plane
 * offsets on the device; for opencl-tiled also the norm table (below).
 *
 * A run:
 *  1. Geometry, bounding box, skipped count and norm.  opencl-atomic: on the device
 *     (pk_gr_bbox, per visibility batch); the norm is summed by pk_gr_atomic as it grids.
 *     opencl-tiled: on the host, with pk_gr_locate_inline (the reference's float geometry by
 *     construction), because the host also does the bucket sort: count, prefix sum and
 *     scatter of the visibilities into every tile their footprint meets (the NAG report's
 *     sort; on the GPU it is three kernels).  Both on the context's host threads, each a
 *     contiguous share of the visibilities: located records and buckets come out as the
 *     serial pass makes them (record order inside a bucket: the same grid bits for any
 *     thread count); the norm is summed per block of GR_LOCATE_BLOCK visibilities and the
 *     blocks in order (the same bits for any thread count).  It comes from a table made at
 *     plan creation:
 *     S[w][|off_v|][|off_u|] = sum over the footprint of Re K (a visibility's norm is
 *     weight * S), so no kernel sample is read for it at run time; planes x (os/2 + 1)^2
 *     entries, built by row sums in planes x (os/2 + 1) x m x (2s + 1) operations.  Past 2^22
 *     entries or 2^28 operations (oversample in the hundreds) there is no table and the host
 *     sums each visibility's footprint as the reference does.
 *  2. Only the bounding box of the touched cells lives on the device ("sub-grid"): it is
 *     uploaded from the caller's grid (clEnqueueWriteBufferRect), the kernels add into it, and
 *     it is read back over the same cells, so the caller's grid accumulates without a host
 *     pass over it.  When the box does not fit the device (CL_DEVICE_MAX_MEM_ALLOC_SIZE, or
 *     half of CL_DEVICE_GLOBAL_MEM_SIZE for grid and visibilities together) it is processed in
 *     bands of rows (whole tile rows for opencl-tiled); the visibility list in batches when it
 *     does not fit beside the band.  Single-batch runs upload the visibilities once, whatever
 *     the number of bands.  PORTKERN_TEST_GR_DEVICE_BYTES=N makes the plan believe the device
 *     holds N bytes (allocations and total), to test the chunking on any device;
 *     PORTKERN_TEST_CL_GR_NO_FP64=1 builds the kernels as for a device without doubles.
 *  3. opencl-tiled: tiles of ts x ts cells (p.tile_size, default 64; 64 x 64 complex64 is
 *     32 KB of local memory, the least OpenCL 1.2 promises), on a lattice that puts the grid
 *     centre in the middle of a tile (NAG).  The work list has one entry per non-empty tile,
 *     ordered by decreasing work (sum over its visibilities of the footprint cells inside
 *     it); a tile with more than 1/(4 x compute units) of the total work (the central tiles
 *     of SKA data) is split into up to 64 slices of its visibility list, each a work-group
 *     that flushes its local tile with atomic adds.  p.central_radius = -1 disables the split;
 *     other values do not change it (the split is by work, not by a geometric box).
 */
#include "opencl_internal.h"

#include "cl/grid_cl.h" /* generated in the build tree */

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Local memory an opencl-tiled tile of ts x ts cells needs: its complex64 accumulator, plus
 * 1 KiB left to the implementation (lib/portkern.h, pk_grid_params.tile_size). */
#define PK_GR_CL_TILE_BYTES(ts) ((cl_ulong)(ts) * (cl_ulong)(ts) * 8u + 1024u)
#define GR_WG 64             /* work-items of the bbox and atomic kernels (a power of two) */
#define GR_MAX_SPLIT 64      /* slices of one heavy tile */
#define GR_TABLE_ENTRIES (1u << 22)
#define GR_TABLE_OPS (1.0 * (1u << 28))
#define GR_LOCATE_BLOCK 1024 /* visibilities per block of opencl-tiled's norm sum */

typedef struct gr_buf {
    cl_mem m;
    size_t cap;
} gr_buf;

typedef struct pk_cl_gr {
    int tiled;
    cl_context context; /* retained: the plan may outlive its backend state */
    cl_command_queue queue;
    cl_kernel k_bbox, k_atomic, k_tile;
    cl_mem d_kern, d_roff, d_support;
    pk_grid_params p;
    int32_t *support;      /* host copies */
    size_t *plane_offset;  /* compact stack offsets (host norm fallback) */
    float *kernels;        /* compact stack, kept only when there is no norm table */
    double *norm_table;    /* [planes][os/2 + 1][os/2 + 1] or NULL */
    int max_support, ts, wg_tile, wg, groups, fp64, compute_units;
    int threads;           /* host threads of opencl-tiled's host pass (0: OpenMP's default) */
    cl_ulong max_alloc, budget;
    size_t stack_bytes;
    /* run-time device buffers, kept between runs (grown on demand) */
    gr_buf sub, in[5], geo, val, bucket, work, part_a, part_b;
    cl_mem target;         /* pk_cl_gr_run_device's g x g device grid during its run, else NULL */
    char device_name[128];
} pk_cl_gr;

/* ---- helpers ------------------------------------------------------------------------------ */
static void buf_release(gr_buf *b)
{
    if (b->m) clReleaseMemObject(b->m);
    b->m = NULL;
    b->cap = 0;
}

static pk_status buf_ensure(pk_cl_gr *h, gr_buf *b, size_t bytes, const char *what)
{
    if (bytes == 0) bytes = 16;
    if (b->m && b->cap >= bytes) return PK_OK;
    buf_release(b);
    PK_CHECK(bytes <= h->max_alloc, PK_EDEVMEM,
             "grid: %s of %zu bytes exceeds the allocation limit (%llu bytes) of '%s'", what,
             bytes, (unsigned long long)h->max_alloc, h->device_name);
    cl_int err;
    b->m = clCreateBuffer(h->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        b->m = NULL;
        return pk_cl_fail(err, "clCreateBuffer", "grid %s of %zu bytes on '%s'", what, bytes,
                          h->device_name);
    }
    b->cap = bytes;
    return PK_OK;
}

static pk_status write_buf(pk_cl_gr *h, cl_mem m, const void *src, size_t bytes,
                           const char *what, double *seconds)
{
    if (bytes == 0) return PK_OK;
    const double t0 = pk_now();
    cl_int err = clEnqueueWriteBuffer(h->queue, m, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBuffer", "grid %s (%zu bytes) to '%s'", what,
                          bytes, h->device_name);
    *seconds += pk_now() - t0;
    return PK_OK;
}

static pk_status read_buf(pk_cl_gr *h, cl_mem m, void *dst, size_t bytes, const char *what,
                          double *seconds)
{
    const double t0 = pk_now();
    cl_int err = clEnqueueReadBuffer(h->queue, m, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBuffer", "grid %s (%zu bytes) from '%s'", what,
                          bytes, h->device_name);
    *seconds += pk_now() - t0;
    return PK_OK;
}

static pk_status set_args(pk_cl_gr *h, cl_kernel k, const char *name, int nargs,
                          const size_t *sizes, const void *const *values)
{
    for (int a = 0; a < nargs; ++a) {
        cl_int err = clSetKernelArg(k, (cl_uint)a, sizes[a], values[a]);
        if (err != CL_SUCCESS)
            return pk_cl_fail(err, "clSetKernelArg", "%s argument %d on '%s'", name, a,
                              h->device_name);
    }
    return PK_OK;
}

static pk_status launch(pk_cl_gr *h, cl_kernel k, const char *name, size_t global, size_t local,
                        double *seconds)
{
    const double t0 = pk_now();
    cl_int err = clEnqueueNDRangeKernel(h->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(h->queue);
    if (err != CL_SUCCESS) {
        clFinish(h->queue);
        return pk_cl_fail(err, "clEnqueueNDRangeKernel", "%s (%zu x %zu) on '%s'", name,
                          global / local, local, h->device_name);
    }
    *seconds += pk_now() - t0;
    return PK_OK;
}

/* ---- the kernel stack --------------------------------------------------------------------- */
/* Row-reordered stack of cl/grid.cl (complex samples, interleaved floats); roff[w] offsets. */
static float *gr_reorder(const pk_gr_desc *d, uint32_t *roff, size_t *count)
{
    const int np = d->p.num_w_planes, os = d->p.oversample, A = os / 2 + 1;
    size_t total = 0;
    for (int w = 0; w < np; ++w) {
        const size_t s = (size_t)d->support[w], m = (size_t)os / 2 + s * os + 1;
        roff[w] = (uint32_t)total;
        total += m * (size_t)A * (2 * s + 1);
        if (total > UINT32_MAX) return NULL;
    }
    float *r = malloc(2 * (total ? total : 1) * sizeof *r);
    if (!r) return NULL;
    for (int w = 0; w < np; ++w) {
        const int s = d->support[w], D = 2 * s + 1, m = os / 2 + s * os + 1;
        const float *plane = d->kernels + 2 * d->plane_offset[w];
        float *out = r + 2 * (size_t)roff[w];
        for (int iy = 0; iy < m; ++iy)
            for (int a = 0; a < A; ++a)
                for (int t = 0; t < D; ++t) {
                    const int ix = abs(-a + (t - s) * os);
                    const float *c = plane + 2 * ((size_t)iy * m + ix);
                    float *o = out + 2 * (((size_t)iy * A + a) * D + t);
                    o[0] = c[0];
                    o[1] = c[1];
                }
    }
    *count = total;
    return r;
}

/* S[w][a_v][a_u] = sum_{j,k in [-s,s]} Re K[w][|-a_v + j os|][|-a_u + k os|] in double, or
 * NULL when too large (module comment). */
static double *gr_norm_table(const pk_gr_desc *d)
{
    const int np = d->p.num_w_planes, os = d->p.oversample, A = os / 2 + 1;
    double ops = 0;
    for (int w = 0; w < np; ++w) {
        const double s = d->support[w], m = os / 2 + s * os + 1;
        ops += A * m * (2 * s + 1) + (double)A * A * (2 * s + 1);
    }
    if ((double)np * A * A > GR_TABLE_ENTRIES || ops > GR_TABLE_OPS) return NULL;
    double *S = malloc((size_t)np * A * A * sizeof *S);
    const size_t mmax = (size_t)os / 2 + (size_t)d->max_support * os + 1;
    double *rows = malloc((size_t)A * mmax * sizeof *rows);
    if (!S || !rows) {
        free(S);
        free(rows);
        return NULL;
    }
    for (int w = 0; w < np; ++w) {
        const int s = d->support[w], m = os / 2 + s * os + 1;
        const float *plane = d->kernels + 2 * d->plane_offset[w];
        for (int a = 0; a < A; ++a)
            for (int iy = 0; iy < m; ++iy) {
                double sum = 0;
                for (int k = -s; k <= s; ++k) sum += plane[2 * ((size_t)iy * m + abs(-a + k * os))];
                rows[(size_t)a * m + iy] = sum;
            }
        for (int av = 0; av < A; ++av)
            for (int au = 0; au < A; ++au) {
                double sum = 0;
                for (int j = -s; j <= s; ++j) sum += rows[(size_t)au * m + abs(-av + j * os)];
                S[((size_t)w * A + av) * A + au] = sum;
            }
    }
    free(rows);
    return S;
}

/* Norm of one located visibility when there is no table: the reference's sum. */
static double gr_norm_direct(const pk_cl_gr *h, int w, int ou, int ov)
{
    const int s = h->support[w], os = h->p.oversample, m = os / 2 + s * os + 1;
    const float *plane = h->kernels + 2 * h->plane_offset[w];
    double sum = 0;
    for (int j = -s; j <= s; ++j) {
        const int iy = abs(ov + j * os);
        for (int k = -s; k <= s; ++k) sum += plane[2 * ((size_t)iy * m + abs(ou + k * os))];
    }
    return sum;
}

/* ---- plan ------------------------------------------------------------------------------- */
void pk_cl_gr_destroy(void *impl)
{
    pk_cl_gr *h = impl;
    if (!h) return;
    gr_buf *bufs[] = {&h->sub, &h->in[0], &h->in[1], &h->in[2], &h->in[3], &h->in[4], &h->geo,
                      &h->val, &h->bucket, &h->work, &h->part_a, &h->part_b};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) buf_release(bufs[i]);
    if (h->k_bbox) clReleaseKernel(h->k_bbox);
    if (h->k_atomic) clReleaseKernel(h->k_atomic);
    if (h->k_tile) clReleaseKernel(h->k_tile);
    if (h->d_kern) clReleaseMemObject(h->d_kern);
    if (h->d_roff) clReleaseMemObject(h->d_roff);
    if (h->d_support) clReleaseMemObject(h->d_support);
    if (h->queue) clReleaseCommandQueue(h->queue);
    if (h->context) clReleaseContext(h->context);
    free(h->support);
    free(h->plane_offset);
    free(h->kernels);
    free(h->norm_table);
    free(h);
}

static cl_kernel make_kernel(pk_cl_gr *h, cl_program prog, const char *name, size_t *max_wg,
                             cl_device_id dev, pk_status *s)
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS) {
        *s = pk_cl_fail(err, "clCreateKernel", "%s on '%s'", name, h->device_name);
        return NULL;
    }
    err = clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof *max_wg, max_wg,
                                   NULL);
    if (err != CL_SUCCESS) {
        clReleaseKernel(k);
        *s = pk_cl_fail(err, "clGetKernelWorkGroupInfo", "%s on '%s'", name, h->device_name);
        return NULL;
    }
    return k;
}

static cl_mem upload_const(pk_cl_gr *h, const void *src, size_t bytes, const char *what,
                           pk_status *s)
{
    cl_int err;
    cl_mem m = clCreateBuffer(h->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              bytes ? bytes : 4, (void *)src, &err);
    if (err != CL_SUCCESS) {
        *s = pk_cl_fail(err, "clCreateBuffer", "grid %s (%zu bytes) on '%s'", what, bytes,
                        h->device_name);
        return NULL;
    }
    return m;
}

static unsigned floor_pow2(size_t x)
{
    unsigned p = 1;
    while ((size_t)p * 2 <= x) p *= 2;
    return p;
}

pk_status pk_cl_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl)
{
    pk_cl_state *st = state;
    pk_cl_device *dev;
    PK_TRY(pk_cl_device_open(st, device, &dev));
    const int tiled = desc->variant == NULL || desc->variant[0] == '\0' ||
                      strcmp(desc->variant, "opencl-tiled") == 0;
    PK_CHECK(tiled || strcmp(desc->variant, "opencl-atomic") == 0, PK_EINVAL,
             "grid: unknown OpenCL variant '%s' (opencl-tiled, opencl-atomic)", desc->variant);
    const int np = desc->p.num_w_planes, os = desc->p.oversample;
    PK_CHECK(os <= 2 * 0x7fff, PK_EUNSUPPORTED, "grid: opencl packs offsets in 16 bits");

    cl_ulong fp_config = 0;
    cl_int err = clGetDeviceInfo(dev->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp_config,
                                 &fp_config, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clGetDeviceInfo", "fp config of '%s'", dev->name);

    /* tile edge: the parameter, else 64, or the largest power of two below it that fits the
       device's local memory (PK_GR_CL_TILE_BYTES: 48 KiB NVIDIA devices get 64, 32 KiB ones
       get 32); an explicit tile that does not fit is an error, never silently shrunk */
    int ts = desc->p.tile_size;
    if (tiled) {
        if (ts == 0) {
            ts = 64;
            while (ts > 1 && PK_GR_CL_TILE_BYTES(ts) > dev->local_mem) ts /= 2;
        }
        PK_CHECK(PK_GR_CL_TILE_BYTES(ts) <= dev->local_mem, PK_EINVAL,
                 "grid: opencl-tiled tile_size %d needs %llu bytes of local memory, '%s' has "
                 "%llu (tile_size 0 picks the largest that fits)",
                 ts, (unsigned long long)PK_GR_CL_TILE_BYTES(ts), dev->name,
                 (unsigned long long)dev->local_mem);
    }

    pk_cl_gr *h = calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "grid: out of host memory for an OpenCL plan");
    pk_status s = PK_OK;
    h->tiled = tiled;
    h->p = desc->p;
    h->ts = ts;
    h->max_support = desc->max_support;
    h->threads = desc->threads;
    /* test hook: the compensated float norm of devices without doubles, on any device */
    const char *no_fp64 = pk_getenv("PORTKERN_TEST_CL_GR_NO_FP64");
    h->fp64 = dev->fp64 && !(no_fp64 && strcmp(no_fp64, "0") != 0);
    h->compute_units = dev->compute_units > 0 ? dev->compute_units : 1;
    pk_strlcpy(h->device_name, dev->name, sizeof h->device_name);
    clRetainContext(dev->context);
    h->context = dev->context;
    clRetainCommandQueue(dev->queue);
    h->queue = dev->queue;

    h->max_alloc = dev->max_alloc;
    h->budget = dev->global_mem / 2;
    const char *test_bytes = pk_getenv("PORTKERN_TEST_GR_DEVICE_BYTES");
    if (test_bytes) {
        char *end;
        const unsigned long long v = strtoull(test_bytes, &end, 10);
        if (*end != '\0' || v < 1024) {
            s = pk_fail(PK_EINVAL, "PORTKERN_TEST_GR_DEVICE_BYTES: expected a byte count >= "
                                   "1024, got '%s'",
                        test_bytes);
            goto fail;
        }
        h->max_alloc = h->budget = v;
    }

    h->support = malloc((size_t)np * sizeof *h->support);
    h->plane_offset = malloc(((size_t)np + 1) * sizeof *h->plane_offset);
    uint32_t *roff = malloc((size_t)np * sizeof *roff);
    if (!h->support || !h->plane_offset || !roff) {
        free(roff);
        s = pk_fail(PK_ENOMEM, "grid: out of host memory for an OpenCL plan");
        goto fail;
    }
    memcpy(h->support, desc->support, (size_t)np * sizeof *h->support);
    memcpy(h->plane_offset, desc->plane_offset, ((size_t)np + 1) * sizeof *h->plane_offset);
    if (tiled) {
        h->norm_table = gr_norm_table(desc);
        if (!h->norm_table) {
            const size_t n = desc->plane_offset[np];
            h->kernels = malloc(2 * (n ? n : 1) * sizeof(float));
            if (!h->kernels) {
                free(roff);
                s = pk_fail(PK_ENOMEM, "grid: out of host memory for the kernel stack");
                goto fail;
            }
            memcpy(h->kernels, desc->kernels, 2 * n * sizeof(float));
        }
    }
    size_t nsamples = 0;
    float *reordered = gr_reorder(desc, roff, &nsamples);
    if (!reordered) {
        free(roff);
        s = pk_fail(PK_EUNSUPPORTED, "grid: the reordered kernel stack exceeds 2^32 samples or "
                                     "host memory");
        goto fail;
    }
    h->stack_bytes = nsamples * 8;
    if (h->stack_bytes > h->max_alloc || h->stack_bytes > h->budget / 2) {
        free(roff);
        free(reordered);
        s = pk_fail(PK_EDEVMEM, "grid: the reordered kernel stack (%zu bytes) does not fit '%s'",
                    h->stack_bytes, dev->name);
        goto fail;
    }
    h->budget -= h->stack_bytes;
    h->d_kern = upload_const(h, reordered, h->stack_bytes, "kernel stack", &s);
    free(reordered);
    if (h->d_kern) h->d_roff = upload_const(h, roff, (size_t)np * 4, "plane offsets", &s);
    free(roff);
    if (h->d_roff) h->d_support = upload_const(h, desc->support, (size_t)np * 4, "supports", &s);
    if (!h->d_support) goto fail;

    char defines[96] = "";
    if (h->fp64)
        pk_strlcpy(defines, "-DPK_GR_FP64", sizeof defines);
    else if (fp_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
        pk_strlcpy(defines, "-cl-fp32-correctly-rounded-divide-sqrt", sizeof defines);
    /* else: sqrt within the device's ulps; a w plane may differ from the reference when
     * sqrt(|w| w_scale) is within an ulp of a half-integer (docs) */
    cl_program prog;
    s = pk_cl_program_get(st, dev, "grid", pk_cl_src_grid, pk_cl_hash_grid, defines, &prog);
    if (s != PK_OK) goto fail;
    size_t max_wg;
    if (tiled) {
        if (!(h->k_tile = make_kernel(h, prog, "pk_gr_tile", &max_wg, dev->id, &s))) goto fail;
        h->wg_tile = (int)(max_wg < (size_t)ts ? max_wg : (size_t)ts);
        if (h->wg_tile > 256) h->wg_tile = 256;
    } else {
        if (!(h->k_bbox = make_kernel(h, prog, "pk_gr_bbox", &max_wg, dev->id, &s))) goto fail;
        size_t max2;
        if (!(h->k_atomic = make_kernel(h, prog, "pk_gr_atomic", &max2, dev->id, &s))) goto fail;
        if (max2 < max_wg) max_wg = max2;
        h->wg = (int)floor_pow2(max_wg < GR_WG ? max_wg : GR_WG);
        h->groups = 16 * h->compute_units;
    }
    *impl = h;
    return PK_OK;
fail:
    pk_cl_gr_destroy(h);
    return s;
}

/* ---- run: shared pieces ------------------------------------------------------------------ */
typedef struct gr_box {
    int u0, u1, v0, v1; /* inclusive; empty when u0 > u1 */
} gr_box;

typedef struct gr_times {
    double locate, sort, kernel, transfer;
} gr_times;

/* The band [v0, v0 + rows) of the box copied on the device between the sub-grid and the
 * target grid of pk_cl_gr_run_device (to_target: sub-grid -> target), waited for. */
static pk_status sub_copy_target(pk_cl_gr *h, const gr_box *b, int v0, int rows, int to_target,
                                 gr_times *t)
{
    const size_t cols = (size_t)(b->u1 - b->u0 + 1), g = (size_t)h->p.grid_size;
    const size_t sorig[3] = {0, 0, 0}, torig[3] = {(size_t)b->u0 * 8, (size_t)v0, 0};
    const size_t region[3] = {cols * 8, (size_t)rows, 1};
    const double t0 = pk_now();
    cl_int err = to_target ? clEnqueueCopyBufferRect(h->queue, h->sub.m, h->target, sorig, torig,
                                                     region, cols * 8, 0, g * 8, 0, 0, NULL, NULL)
                           : clEnqueueCopyBufferRect(h->queue, h->target, h->sub.m, torig, sorig,
                                                     region, g * 8, 0, cols * 8, 0, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(h->queue);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueCopyBufferRect", "grid rows %d..%d (%zu columns) %s "
                          "the device grid on '%s'", v0, v0 + rows - 1, cols,
                          to_target ? "to" : "from", h->device_name);
    t->kernel += pk_now() - t0;
    return PK_OK;
}

/* Band of rows [v0, v0 + rows) of the box on the device, preloaded with the caller's values
 * (the host grid's, or the device grid's in pk_cl_gr_run_device). */
static pk_status sub_upload(pk_cl_gr *h, const float *grid, const gr_box *b, int v0, int rows,
                            gr_times *t)
{
    const size_t cols = (size_t)(b->u1 - b->u0 + 1), g = (size_t)h->p.grid_size;
    PK_TRY(buf_ensure(h, &h->sub, cols * rows * 8, "sub-grid"));
    if (h->target) return sub_copy_target(h, b, v0, rows, 0, t);
    const size_t borig[3] = {0, 0, 0}, horig[3] = {(size_t)b->u0 * 8, (size_t)v0, 0};
    const size_t region[3] = {cols * 8, (size_t)rows, 1};
    const double t0 = pk_now();
    cl_int err = clEnqueueWriteBufferRect(h->queue, h->sub.m, CL_TRUE, borig, horig, region,
                                          cols * 8, 0, g * 8, 0, grid, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueWriteBufferRect", "grid rows %d..%d (%zu columns) to "
                                                           "'%s'",
                          v0, v0 + rows - 1, cols, h->device_name);
    t->transfer += pk_now() - t0;
    return PK_OK;
}

static pk_status sub_download(pk_cl_gr *h, float *grid, const gr_box *b, int v0, int rows,
                              gr_times *t)
{
    if (h->target) return sub_copy_target(h, b, v0, rows, 1, t);
    const size_t cols = (size_t)(b->u1 - b->u0 + 1), g = (size_t)h->p.grid_size;
    const size_t borig[3] = {0, 0, 0}, horig[3] = {(size_t)b->u0 * 8, (size_t)v0, 0};
    const size_t region[3] = {cols * 8, (size_t)rows, 1};
    const double t0 = pk_now();
    cl_int err = clEnqueueReadBufferRect(h->queue, h->sub.m, CL_TRUE, borig, horig, region,
                                         cols * 8, 0, g * 8, 0, grid, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clEnqueueReadBufferRect", "grid rows %d..%d (%zu columns) from "
                                                          "'%s'",
                          v0, v0 + rows - 1, cols, h->device_name);
    t->transfer += pk_now() - t0;
    return PK_OK;
}

/* Rows per band: all of the box if it fits, else as many as fit half the budget and one
 * allocation (a multiple of `unit` rows). */
static pk_status band_rows(const pk_cl_gr *h, const gr_box *b, int unit, int *rows)
{
    const cl_ulong row_bytes = (cl_ulong)(b->u1 - b->u0 + 1) * 8;
    cl_ulong room = h->budget / 2 < h->max_alloc ? h->budget / 2 : h->max_alloc;
    cl_ulong fit = room / row_bytes;
    const int height = b->v1 - b->v0 + 1;
    if (fit >= (cl_ulong)height) {
        *rows = height;
        return PK_OK;
    }
    fit = fit / (cl_ulong)unit * (cl_ulong)unit;
    PK_CHECK(fit >= 1, PK_EDEVMEM,
             "grid: %d rows of the %d-column bounding box need %llu bytes, '%s' allows %llu",
             unit, b->u1 - b->u0 + 1, (unsigned long long)(row_bytes * unit), h->device_name,
             (unsigned long long)room);
    *rows = (int)fit;
    return PK_OK;
}

/* ---- run: opencl-atomic ------------------------------------------------------------------- */
static pk_status atomic_upload(pk_cl_gr *h, const pk_grid_data *d, size_t first, size_t count,
                               gr_times *t)
{
    const void *src[5] = {d->uu + first, d->vv + first, d->ww + first, d->vis + 2 * first,
                          d->weight + first};
    const size_t size[5] = {4, 4, 4, 8, 4};
    for (int a = 0; a < 5; ++a) {
        PK_TRY(buf_ensure(h, &h->in[a], count * size[a], "visibility batch"));
        PK_TRY(write_buf(h, h->in[a].m, src[a], count * size[a], "visibilities", &t->transfer));
    }
    return PK_OK;
}

static pk_status run_atomic(pk_cl_gr *h, const pk_grid_data *d, float *grid, pk_gr_result *res,
                            gr_times *t)
{
    const size_t n = d->num_vis;
    /* batch: five arrays of 24 bytes per visibility, beside at least a band of rows */
    size_t batch = (size_t)(h->budget / 2 / 24);
    if (batch > h->max_alloc / 8) batch = (size_t)(h->max_alloc / 8);
    if (batch > (size_t)INT_MAX) batch = (size_t)INT_MAX;
    if (batch > n) batch = n;
    PK_CHECK(batch >= 1, PK_EDEVMEM, "grid: no room for visibilities on '%s'", h->device_name);
    const size_t nbatch = (n + batch - 1) / batch;

    const cl_int g = h->p.grid_size, os = h->p.oversample, np = h->p.num_w_planes;
    const cl_float grid_scale = (float)(h->p.grid_size * h->p.cell_size_rad);
    const cl_float w_scale = (float)h->p.w_scale;
    const size_t G = (size_t)h->groups, L = (size_t)h->wg;
    PK_TRY(buf_ensure(h, &h->part_a, G * 16, "partials"));
    PK_TRY(buf_ensure(h, &h->part_b, G * 16, "partials"));
    cl_int4 *boxes = malloc(G * sizeof *boxes);
    cl_ulong2 *counts = malloc(G * sizeof *counts);
    double *norms = malloc(G * 2 * sizeof(double));
    pk_status s = PK_OK;
    if (!boxes || !counts || !norms) {
        s = pk_fail(PK_ENOMEM, "grid: out of host memory");
        goto done;
    }

    /* pass 0: bounding box and skipped count */
    gr_box box = {INT_MAX, INT_MIN, INT_MAX, INT_MIN};
    int64_t skipped = 0;
    double updates = 0;
    for (size_t bt = 0; bt < nbatch && s == PK_OK; ++bt) {
        const size_t first = bt * batch, cnt = n - first < batch ? n - first : batch;
        const cl_int cn = (cl_int)cnt;
        if ((s = atomic_upload(h, d, first, cnt, t)) != PK_OK) break;
        const size_t sizes[16] = {8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 8, 8, 8, L * 16, L * 16};
        const void *vals[16] = {&h->in[0].m, &h->in[1].m, &h->in[2].m, &h->in[3].m,
                                &h->in[4].m, &cn, &g, &os, &grid_scale, &w_scale, &np,
                                &h->d_support, &h->part_a.m, &h->part_b.m, NULL, NULL};
        if ((s = set_args(h, h->k_bbox, "pk_gr_bbox", 16, sizes, vals)) != PK_OK ||
            (s = launch(h, h->k_bbox, "pk_gr_bbox", G * L, L, &t->locate)) != PK_OK ||
            (s = read_buf(h, h->part_a.m, boxes, G * 16, "bounding boxes", &t->transfer)) !=
                PK_OK ||
            (s = read_buf(h, h->part_b.m, counts, G * 16, "counts", &t->transfer)) != PK_OK)
            break;
        for (size_t i = 0; i < G; ++i) {
            if (boxes[i].s[0] < box.u0) box.u0 = boxes[i].s[0];
            if (boxes[i].s[1] > box.u1) box.u1 = boxes[i].s[1];
            if (boxes[i].s[2] < box.v0) box.v0 = boxes[i].s[2];
            if (boxes[i].s[3] > box.v1) box.v1 = boxes[i].s[3];
            skipped += (int64_t)counts[i].s[0];
            updates += (double)counts[i].s[1];
        }
    }
    if (s != PK_OK) goto done;
    res->num_skipped = skipped;
    res->updates = updates;
    if (box.u0 > box.u1) goto done; /* nothing to grid */

    int rows = 0;
    if ((s = band_rows(h, &box, 1, &rows)) != PK_OK) goto done;
    const cl_int pitch = box.u1 - box.u0 + 1, sub_u0 = box.u0;
    double norm = 0;
    for (int v0 = box.v0; v0 <= box.v1 && s == PK_OK; v0 += rows) {
        const cl_int sub_v0 = v0, sub_rows = box.v1 - v0 + 1 < rows ? box.v1 - v0 + 1 : rows;
        const cl_int do_norm = v0 == box.v0;
        if ((s = sub_upload(h, grid, &box, v0, sub_rows, t)) != PK_OK) break;
        for (size_t bt = 0; bt < nbatch; ++bt) {
            const size_t first = bt * batch, cnt = n - first < batch ? n - first : batch;
            const cl_int cn = (cl_int)cnt;
            if (nbatch > 1 && (s = atomic_upload(h, d, first, cnt, t)) != PK_OK) break;
            const size_t nsz = 8; /* a double, or a (hi, lo) float2 */
            const size_t sizes[22] = {8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8,
                                      4, 4, 4, 4, 4, 8, L * nsz};
            const void *vals[22] = {&h->in[0].m, &h->in[1].m, &h->in[2].m, &h->in[3].m,
                                    &h->in[4].m, &cn, &g, &os, &grid_scale, &w_scale, &np,
                                    &h->d_support, &h->d_roff, &h->d_kern, &h->sub.m, &pitch,
                                    &sub_u0, &sub_v0, &sub_rows, &do_norm, &h->part_a.m, NULL};
            if ((s = set_args(h, h->k_atomic, "pk_gr_atomic", 22, sizes, vals)) != PK_OK ||
                (s = launch(h, h->k_atomic, "pk_gr_atomic", G * L, L, &t->kernel)) != PK_OK)
                break;
            if (do_norm) {
                if ((s = read_buf(h, h->part_a.m, norms, G * nsz, "norms", &t->transfer)) != PK_OK)
                    break;
                for (size_t i = 0; i < G; ++i) {
                    if (h->fp64) {
                        norm += norms[i];
                    } else {
                        const float *f = (const float *)norms;
                        norm += (double)f[2 * i] + (double)f[2 * i + 1];
                    }
                }
            }
        }
        if (s != PK_OK) break;
        res->grid_touched = 1;
        s = sub_download(h, grid, &box, v0, sub_rows, t);
    }
    res->norm = norm;
done:
    free(boxes);
    free(counts);
    free(norms);
    return s;
}

/* ---- run: opencl-tiled -------------------------------------------------------------------- */
typedef struct gr_work {
    cl_int4 tile, slice;
    double work;
} gr_work;

static int work_cmp(const void *a, const void *b)
{
    const double x = ((const gr_work *)a)->work, y = ((const gr_work *)b)->work;
    return (x < y) - (x > y); /* descending */
}

/* Tile lattice: tile index of cell x is (x - origin) / ts, origin in [-ts, 0), the grid
 * centre in the middle of its tile. */
static int tile_origin(int g, int ts)
{
    return ((g / 2 - ts / 2) % ts + ts) % ts - ts;
}

/* The tiles of the band rows [bv0, bv1] a record's footprint meets, as a loop header: tr, tc
 * (tile row and column) and h_, w_ (the footprint's rows and columns inside the tile). */
#define GR_FOR_TILES(rec)                                                                      \
    const int s_ = h->support[(rec).s[2] >> 1], gu = (rec).s[0], gv = (rec).s[1];             \
    const int rlo = gv - s_ > bv0 ? gv - s_ : bv0, rhi = gv + s_ < bv1 ? gv + s_ : bv1;       \
    if (rlo > rhi) continue;                                                                  \
    for (int tr = (rlo - o) / ts; tr <= (rhi - o) / ts; ++tr)                                 \
        for (int tc = (gu - s_ - o) / ts, y0 = o + tr * ts,                                   \
                 h_ = (rhi < y0 + ts - 1 ? rhi : y0 + ts - 1) - (rlo > y0 ? rlo : y0) + 1;    \
             tc <= (gu + s_ - o) / ts; ++tc)

/* One share of the bucket sort: records [nrec p / P, nrec (p + 1) / P) of part p count into
 * cnt[p][tile] and work[p][tile] (count), then scatter from the offsets cnt[p][] became
 * (scatter).  Part p's entries of a tile follow parts 0..p-1's: the serial order. */
typedef struct gr_sort_job {
    const pk_cl_gr *h;
    const cl_int4 *geo;
    size_t nrec, ntiles, ntc, parts;
    int o, bv0, bv1, tr0, tc0;
    size_t *cnt;
    double *work;
    uint32_t *bucket; /* NULL: count */
} gr_sort_job;

static void gr_sort_parts(void *arg, size_t lo, size_t hi)
{
    const gr_sort_job *j = arg;
    const pk_cl_gr *h = j->h;
    const int ts = h->ts, o = j->o, bv0 = j->bv0, bv1 = j->bv1;
    for (size_t p = lo; p < hi; ++p) {
        size_t *cnt = j->cnt + p * j->ntiles;
        const size_t r0 = j->nrec * p / j->parts, r1 = j->nrec * (p + 1) / j->parts;
        if (!j->bucket) {
            double *work = j->work + p * j->ntiles;
            for (size_t r = r0; r < r1; ++r) {
                GR_FOR_TILES(j->geo[r]) {
                    const int x0 = o + tc * ts, x1 = x0 + ts - 1;
                    const int w_ =
                        (gu + s_ < x1 ? gu + s_ : x1) - (gu - s_ > x0 ? gu - s_ : x0) + 1;
                    const size_t tile = (size_t)(tr - j->tr0) * j->ntc + (size_t)(tc - j->tc0);
                    ++cnt[tile];
                    work[tile] += (double)h_ * w_;
                }
            }
        } else {
            for (size_t r = r0; r < r1; ++r) {
                GR_FOR_TILES(j->geo[r]) {
                    (void)h_;
                    j->bucket[cnt[(size_t)(tr - j->tr0) * j->ntc + (size_t)(tc - j->tc0)]++] =
                        (uint32_t)r;
                }
            }
        }
    }
}
#undef GR_FOR_TILES

/* Buckets of records [0, nrec) for the band rows [bv0, bv1] (tile rows): bucket[] and the
 * ordered work list. */
static pk_status build_buckets(const pk_cl_gr *h, const cl_int4 *geo, size_t nrec,
                               const gr_box *box, int bv0, int bv1, uint32_t **bucket_out,
                               size_t *ncopies, gr_work **work_out, size_t *nwork)
{
    const int ts = h->ts, o = tile_origin(h->p.grid_size, ts);
    const int tc0 = (box->u0 - o) / ts, tc1 = (box->u1 - o) / ts;
    const int tr0 = (bv0 - o) / ts, tr1 = (bv1 - o) / ts;
    const size_t ntc = (size_t)(tc1 - tc0 + 1), ntiles = ntc * (size_t)(tr1 - tr0 + 1);
    /* one part per thread, but per-part tables of no more entries than records (small
       tiles on a big grid): the scratch stays within the records' own size */
    const int nt = pk_host_threads(h->threads);
    size_t parts = nrec / ntiles;
    if (parts > (size_t)nt) parts = (size_t)nt;
    if (parts < 1) parts = 1;
    size_t *start = calloc(ntiles + 1, sizeof *start);
    double *work = malloc(ntiles * sizeof *work);
    size_t *cnt = calloc(parts * ntiles, sizeof *cnt);
    double *pwork = calloc(parts * ntiles, sizeof *pwork);
    uint32_t *bucket = NULL;
    gr_work *list = NULL;
    pk_status s = PK_OK;
    if (!start || !work || !cnt || !pwork) goto nomem;
    gr_sort_job job = {h, geo, nrec, ntiles, ntc, parts, o, bv0, bv1, tr0, tc0, cnt, pwork,
                       NULL};
    pk_parallel_range(parts, 1, nrec * sizeof *geo + parts * ntiles * 16, h->threads,
                      gr_sort_parts, &job);
    /* totals (work: sums of integers, exact in any order), prefix sum, per-part offsets */
    double total = 0;
    size_t busy = 0;
    for (size_t tile = 0; tile < ntiles; ++tile) {
        size_t at = start[tile];
        double wsum = 0;
        for (size_t p = 0; p < parts; ++p) {
            const size_t c = cnt[p * ntiles + tile];
            cnt[p * ntiles + tile] = at;
            at += c;
            wsum += pwork[p * ntiles + tile];
        }
        start[tile + 1] = at;
        work[tile] = wsum;
        total += wsum;
        busy += at > start[tile];
    }
    const size_t copies = start[ntiles];
    if (copies > (size_t)INT_MAX) {
        s = pk_fail(PK_EINTERNAL, "grid: %zu bucket entries in one batch", copies);
        goto out;
    }
    bucket = malloc((copies ? copies : 1) * sizeof *bucket);
    if (!bucket) goto nomem;
    job.bucket = bucket;
    pk_parallel_range(parts, 1, nrec * sizeof *geo + copies * sizeof *bucket, h->threads,
                      gr_sort_parts, &job);
    /* work list: heavy tiles split into slices of their visibility list */
    const double target = total / (4.0 * h->compute_units);
    size_t cap = busy, nw = 0;
    for (size_t tile = 0; tile < ntiles; ++tile) {
        const size_t cnt = start[tile + 1] - start[tile];
        if (cnt > 1 && h->p.central_radius != -1 && work[tile] > target) {
            size_t parts = (size_t)ceil(work[tile] / target);
            if (parts > GR_MAX_SPLIT) parts = GR_MAX_SPLIT;
            if (parts > cnt) parts = cnt;
            cap += parts - 1;
        }
    }
    list = malloc((cap ? cap : 1) * sizeof *list);
    if (!list) goto nomem;
    for (size_t tile = 0; tile < ntiles; ++tile) {
        const size_t cnt = start[tile + 1] - start[tile];
        if (cnt == 0) continue;
        size_t parts = 1;
        if (cnt > 1 && h->p.central_radius != -1 && work[tile] > target) {
            parts = (size_t)ceil(work[tile] / target);
            if (parts > GR_MAX_SPLIT) parts = GR_MAX_SPLIT;
            if (parts > cnt) parts = cnt;
        }
        const int tr = tr0 + (int)(tile / ntc), tc = tc0 + (int)(tile % ntc);
        for (size_t q = 0; q < parts; ++q) {
            gr_work *e = &list[nw++];
            memset(e, 0, sizeof *e);
            e->tile.s[0] = o + tc * ts;
            e->tile.s[1] = o + tr * ts;
            e->slice.s[0] = (cl_int)(start[tile] + cnt * q / parts);
            e->slice.s[1] = (cl_int)(start[tile] + cnt * (q + 1) / parts);
            e->slice.s[2] = parts > 1;
            e->work = work[tile] / (double)parts;
        }
    }
    qsort(list, nw, sizeof *list, work_cmp);
    *bucket_out = bucket;
    *ncopies = copies;
    *work_out = list;
    *nwork = nw;
    bucket = NULL;
    list = NULL;
    goto out;
nomem:
    s = pk_fail(PK_ENOMEM, "grid: out of host memory for the tile buckets");
out:
    free(start);
    free(work);
    free(cnt);
    free(pwork);
    free(bucket);
    free(list);
    return s;
}

/* Located records of visibilities [lo, hi), block by block: block b's go to the front of its
 * own slots [b GR_LOCATE_BLOCK, ...) (moved up by run_tiled), its box and sums to blk[b]. */
typedef struct gr_block {
    gr_box box;
    size_t nrec;
    double norm, updates; /* updates: sums of integers, exact */
} gr_block;

typedef struct gr_locate_job {
    const pk_cl_gr *h;
    const pk_gr_desc *desc;
    const pk_grid_data *d;
    cl_int4 *geo;
    cl_float2 *val;
    gr_block *blk;
} gr_locate_job;

static void gr_locate_range(void *arg, size_t lo, size_t hi)
{
    const gr_locate_job *j = arg;
    const pk_cl_gr *h = j->h;
    const pk_grid_data *d = j->d;
    /* locals the record stores cannot alias: no reloads in the loop */
    const pk_gr_desc desc = *j->desc;
    const int32_t *const support = h->support;
    const double *const table = h->norm_table;
    cl_int4 *restrict geo = j->geo;
    cl_float2 *restrict val = j->val;
    const int os = h->p.oversample, A = os / 2 + 1;
    for (size_t b0 = lo; b0 < hi; b0 += GR_LOCATE_BLOCK) {
        const size_t b1 = hi - b0 < GR_LOCATE_BLOCK ? hi : b0 + GR_LOCATE_BLOCK;
        gr_box box = {INT_MAX, INT_MIN, INT_MAX, INT_MIN};
        size_t nrec = b0;
        double norm = 0, updates = 0;
        for (size_t i = b0; i < b1; ++i) {
            const float vre = d->vis[2 * i], vim = d->vis[2 * i + 1], wt = d->weight[i];
            int w, gu, gv, ou, ov;
            if (pk_gr_locate_inline(&desc, d->uu[i], d->vv[i], d->ww[i], vre, vim, wt, &w,
                                    &gu, &gv, &ou, &ov))
                continue;
            const int sw = support[w];
            if (gu - sw < box.u0) box.u0 = gu - sw;
            if (gu + sw > box.u1) box.u1 = gu + sw;
            if (gv - sw < box.v0) box.v0 = gv - sw;
            if (gv + sw > box.v1) box.v1 = gv + sw;
            const double sum = table ? table[((size_t)w * A + abs(ov)) * A + abs(ou)]
                                     : gr_norm_direct(h, w, ou, ov);
            norm += sum * wt;
            updates += (double)(2 * sw + 1) * (2 * sw + 1);
            cl_int4 *r = &geo[nrec];
            r->s[0] = gu;
            r->s[1] = gv;
            r->s[2] = 2 * w + (d->ww[i] > 0);
            r->s[3] = (ou + os / 2) | (ov + os / 2) << 16;
            val[nrec].s[0] = vre * wt;
            val[nrec].s[1] = vim * wt;
            ++nrec;
        }
        gr_block *k = &j->blk[b0 / GR_LOCATE_BLOCK];
        k->box = box;
        k->nrec = nrec - b0;
        k->norm = norm;
        k->updates = updates;
    }
}

static pk_status run_tiled(pk_cl_gr *h, const pk_grid_data *d, float *grid, pk_gr_result *res,
                           gr_times *t)
{
    const size_t n = d->num_vis;
    const int os = h->p.oversample, ts = h->ts;
    pk_gr_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.p = h->p;
    desc.support = h->support;

    /* locate every visibility on the host: records, box, skipped count, norm */
    double t0 = pk_now();
    cl_int4 *geo = malloc((n ? n : 1) * sizeof *geo);
    cl_float2 *val = malloc((n ? n : 1) * sizeof *val);
    uint32_t *bucket = NULL;
    gr_work *list = NULL;
    cl_int4 *wk = NULL;
    gr_block *blk = NULL;
    pk_status s = PK_OK;
    if (!geo || !val) {
        s = pk_fail(PK_ENOMEM, "grid: out of host memory for %zu located visibilities", n);
        goto done;
    }
    /* blocks on the context's threads, then their records moved up over skipped ones and
       their sums combined in block order */
    const size_t nblk = (n + GR_LOCATE_BLOCK - 1) / GR_LOCATE_BLOCK;
    blk = malloc(nblk * sizeof *blk);
    if (!blk) {
        s = pk_fail(PK_ENOMEM, "grid: out of host memory for %zu located visibilities", n);
        goto done;
    }
    gr_locate_job job = {h, &desc, d, geo, val, blk};
    pk_parallel_range(n, GR_LOCATE_BLOCK, n * 48, h->threads, gr_locate_range, &job);
    gr_box box = {INT_MAX, INT_MIN, INT_MAX, INT_MIN};
    size_t nrec = 0;
    double norm = 0, updates = 0;
    for (size_t b = 0; b < nblk; ++b) {
        const gr_block *k = &blk[b];
        if (nrec != b * GR_LOCATE_BLOCK && k->nrec > 0) {
            memmove(geo + nrec, geo + b * GR_LOCATE_BLOCK, k->nrec * sizeof *geo);
            memmove(val + nrec, val + b * GR_LOCATE_BLOCK, k->nrec * sizeof *val);
        }
        nrec += k->nrec;
        if (k->box.u0 < box.u0) box.u0 = k->box.u0;
        if (k->box.u1 > box.u1) box.u1 = k->box.u1;
        if (k->box.v0 < box.v0) box.v0 = k->box.v0;
        if (k->box.v1 > box.v1) box.v1 = k->box.v1;
        norm += k->norm;
        updates += k->updates;
    }
    const int64_t skipped = (int64_t)(n - nrec);
    t->locate += pk_now() - t0;
    res->num_skipped = skipped;
    res->norm = norm;
    res->updates = updates;
    if (nrec == 0) goto done;

    /* bands of whole tile rows; batches sized by the worst-case copies of a visibility */
    const int o = tile_origin(h->p.grid_size, ts);
    const size_t span = (size_t)(2 * h->max_support + ts - 1) / (size_t)ts + 1;
    const size_t per_vis = 24 + 4 * span * span;
    int rows = 0;
    if ((s = band_rows(h, &box, ts, &rows)) != PK_OK) goto done;
    const cl_ulong band_bytes = (cl_ulong)(box.u1 - box.u0 + 1) * 8 * (cl_ulong)rows;
    const cl_ulong room = h->budget > band_bytes ? h->budget - band_bytes : 0;
    size_t batch = (size_t)(room / per_vis);
    if (batch > h->max_alloc / (4 * span * span)) batch = (size_t)(h->max_alloc / (4 * span * span));
    if (batch > h->max_alloc / 16) batch = (size_t)(h->max_alloc / 16);
    if (batch > (size_t)INT_MAX / (span * span)) batch = (size_t)INT_MAX / (span * span);
    if (batch > nrec) batch = nrec;
    if (batch < 1) {
        s = pk_fail(PK_EDEVMEM, "grid: no room for visibilities beside a %d-row band on '%s'",
                    rows, h->device_name);
        goto done;
    }
    const size_t nbatch = (nrec + batch - 1) / batch;

    const cl_int pitch = box.u1 - box.u0 + 1, sub_u0 = box.u0, cos_ = os, cts = ts;
    for (int v0 = box.v0; v0 <= box.v1 && s == PK_OK;) {
        /* band: from v0 to the end of the tile row `rows` rows below v0's tile start */
        const int tile_top = o + (v0 - o) / ts * ts;
        int v1 = rows >= box.v1 - box.v0 + 1 ? box.v1 : tile_top + rows - 1;
        if (v1 > box.v1) v1 = box.v1;
        const cl_int sub_v0 = v0, sub_rows = v1 - v0 + 1;
        if ((s = sub_upload(h, grid, &box, v0, sub_rows, t)) != PK_OK) break;
        for (size_t bt = 0; bt < nbatch && s == PK_OK; ++bt) {
            const size_t first = bt * batch, cnt = nrec - first < batch ? nrec - first : batch;
            size_t ncopies = 0, nwork = 0;
            t0 = pk_now();
            s = build_buckets(h, geo + first, cnt, &box, v0, v1, &bucket, &ncopies, &list,
                              &nwork);
            if (s != PK_OK) break;
            wk = malloc((nwork ? nwork : 1) * 2 * sizeof *wk);
            if (!wk) {
                s = pk_fail(PK_ENOMEM, "grid: out of host memory for the work list");
                break;
            }
            for (size_t q = 0; q < nwork; ++q) {
                wk[2 * q] = list[q].tile;
                wk[2 * q + 1] = list[q].slice;
            }
            t->sort += pk_now() - t0;
            if (nwork > 0) {
                const int resident = nbatch == 1 && v0 != box.v0;
                if (!resident) {
                    if ((s = buf_ensure(h, &h->geo, cnt * 16, "located visibilities")) != PK_OK ||
                        (s = buf_ensure(h, &h->val, cnt * 8, "visibility values")) != PK_OK ||
                        (s = write_buf(h, h->geo.m, geo + first, cnt * 16, "visibilities",
                                       &t->transfer)) != PK_OK ||
                        (s = write_buf(h, h->val.m, val + first, cnt * 8, "visibilities",
                                       &t->transfer)) != PK_OK)
                        break;
                }
                if ((s = buf_ensure(h, &h->bucket, ncopies * 4, "tile buckets")) != PK_OK ||
                    (s = buf_ensure(h, &h->work, nwork * 32, "work list")) != PK_OK ||
                    (s = write_buf(h, h->bucket.m, bucket, ncopies * 4, "tile buckets",
                                   &t->transfer)) != PK_OK ||
                    (s = write_buf(h, h->work.m, wk, nwork * 32, "work list", &t->transfer)) !=
                        PK_OK)
                    break;
                const cl_int sub_cols = pitch;
                const size_t L = (size_t)h->wg_tile;
                const size_t sizes[16] = {8, 8, 8, 8, 8, 8, 8, 4, 4, 8, 4, 4, 4, 4, 4,
                                          (size_t)ts * ts * 8};
                const void *vals[16] = {&h->geo.m, &h->val.m, &h->bucket.m, &h->work.m,
                                        &h->d_support, &h->d_roff, &h->d_kern, &cos_, &cts,
                                        &h->sub.m, &pitch, &sub_u0, &sub_v0, &sub_rows,
                                        &sub_cols, NULL};
                if ((s = set_args(h, h->k_tile, "pk_gr_tile", 16, sizes, vals)) != PK_OK ||
                    (s = launch(h, h->k_tile, "pk_gr_tile", nwork * L, L, &t->kernel)) != PK_OK)
                    break;
            }
            free(bucket);
            free(list);
            free(wk);
            bucket = NULL;
            list = NULL;
            wk = NULL;
        }
        if (s != PK_OK) break;
        res->grid_touched = 1;
        s = sub_download(h, grid, &box, v0, sub_rows, t);
        v0 = v1 + 1;
    }
done:
    free(geo);
    free(val);
    free(blk);
    free(bucket);
    free(list);
    free(wk);
    return s;
}

pk_status pk_cl_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res)
{
    pk_cl_gr *h = impl;
    gr_times t = {0, 0, 0, 0};
    pk_status s = PK_OK;
    if (data->num_vis > 0)
        s = h->tiled ? run_tiled(h, data, grid, res, &t) : run_atomic(h, data, grid, res, &t);
    if (s != PK_OK) return s;
    res->kernel_s = t.kernel + t.locate * !h->tiled;
    res->transfer_s = t.transfer;
    if (h->tiled) {
        pk_gr_stage(res, "locate", t.locate);
        pk_gr_stage(res, "sort", t.sort);
        pk_gr_stage(res, "tiles", t.kernel);
    } else {
        pk_gr_stage(res, "bbox", t.locate);
        pk_gr_stage(res, "grid", t.kernel);
    }
    pk_gr_stage(res, "transfer", t.transfer);
    return PK_OK;
}

/* As pk_cl_gr_run, into a g x g complex64 grid in a device buffer of the plan's context: the
 * box's bands are copied from and back to it on the device (nothing of the grid crosses the
 * link; the "transfer" stage holds only the visibilities' uploads). */
pk_status pk_cl_gr_run_device(void *impl, const pk_grid_data *data, cl_mem grid,
                              pk_gr_result *res)
{
    pk_cl_gr *h = impl;
    h->target = grid;
    const pk_status s = pk_cl_gr_run(impl, data, NULL, res);
    h->target = NULL;
    return s;
}

/* The grid kernel family on this backend (lib/internal.h, pk_gr_ops). */
const pk_gr_ops pk_opencl_gr_ops = {
    .variants = "opencl-tiled,opencl-atomic",
    .create = pk_cl_gr_create,
    .run = pk_cl_gr_run,
    .destroy = pk_cl_gr_destroy,
};
