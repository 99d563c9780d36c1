/* degrid.cu - degridding (docs/KERNELS.md 7.3) on CUDA GPUs: variant "cuda".  Written without
 * a GPU: checked by the host emulation (tests/test_im_cuda_emu), never on a GPU.
 *
 * The plan holds the compact kernel stack (as lib/ref/degrid_ref.c reads it), the supports,
 * the plane offsets and a g x g complex64 device grid.  Two entries:
 *  - the family's run (pk_dg_ops): the caller's host grid (already transformed) uploaded
 *    whole, then the gather;
 *  - pk_cuda_dg_predict, what lib/image.c's degrid plan calls once pk_cuda_dg_image_init has
 *    set the model's factors up: the FFT where the grid is.  The N x N model goes up (4 N^2
 *    bytes, through the staging ring), "place": the grid zeroed and a kernel writes
 *        grid[py mod g][px mod g] = model[y][x] * ((sc[y] * (1 / kappa)) * sc[x])
 *    (the adjoint of the crop; sc lib/image.c's (-1)^(x - N/2) / c(x - N/2), multiplied in
 *    the host path's order), "fft": cuFFT's forward C2C in place (FFTW_FORWARD's sign,
 *    unnormalised, as the host path), then the gather; the grid never crosses the link.
 * Gather ("degrid"): one thread per visibility, grid.cu's geometry (grid_locate.cuh: the same
 * cells, planes, offsets and skips as the gridder, bit for bit) and
 *     vis = sum_{j, k in [-s, s]} conj(c_jk) grid[gv + j][gu + k]
 * in lib/ref/degrid_ref.c's order (j outer, k inner) and float operations (_rn intrinsics: no
 * contraction), so that a visibility equals pk_degrid_reference's bits on the same grid.
 * Skipped visibilities get 0; a block reduces its skipped count and grid-point updates.
 * Visibilities go in chunks of DG_CHUNK: uu, vv, ww (and weight) up through pk_cuda_transfer,
 * the kernel, vis down; not overlapped (a copy stream as grid.cu's would be the next step).
 * cuFFT runs on the legacy stream (no cufftSetStream in the loader): so does all of this.
 * Stages of a predict: "place", "fft", "degrid", "transfer" (model and visibilities).
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_im_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device code (self-contained between the markers: emulated on host threads) -------- */
/* PK_DG_DEVICE_BEGIN */
#include "grid_locate.cuh"

#define DG_THREADS 256
#define DG_TX 32
#define DG_TY 8

__global__ void __launch_bounds__(DG_THREADS)
dg_gather_kernel(gr_geom q, const int *support, const unsigned long long *poff,
                 const float2 *kern, const float2 *grid, const float *uu, const float *vv,
                 const float *ww, const float *weight, int n, float2 *vis,
                 unsigned long long *acc)
{
    __shared__ unsigned long long s_skip[DG_THREADS], s_upd[DG_THREADS];
    const int tid = (int)threadIdx.x, i = (int)blockIdx.x * DG_THREADS + tid;
    unsigned long long skip = 0, upd = 0;
    if (i < n) {
        const float wt = weight ? weight[i] : 1.0f, wwi = ww[i];
        int w, s, gu, gv, ou, ov;
        if (gr_locate(q, support, uu[i], vv[i], wwi, 0.0f, 0.0f, wt, w, s, gu, gv, ou, ov)) {
            vis[i] = make_float2(0.0f, 0.0f);
            skip = 1;
        } else {
            const int os = q.os, m = os / 2 + s * os + 1;
            const float conj = wwi > 0.0f ? -1.0f : 1.0f;
            const float2 *plane = kern + poff[w];
            float re = 0.0f, im = 0.0f;
            for (int j = -s; j <= s; ++j) {
                const float2 *krow = plane + (size_t)abs(ov + j * os) * (size_t)m;
                const float2 *grow = grid + (size_t)(gv + j) * (size_t)q.g + (size_t)gu;
                for (int k = -s; k <= s; ++k) {
                    const float2 c = krow[abs(ou + k * os)];
                    const float cim = c.y * conj;
                    const float2 x = grow[k];
                    /* conj(c) * grid = (cre gre + cim gim) + i (cre gim - cim gre) */
                    re = __fadd_rn(re, __fadd_rn(__fmul_rn(c.x, x.x), __fmul_rn(cim, x.y)));
                    im = __fadd_rn(im, __fsub_rn(__fmul_rn(c.x, x.y), __fmul_rn(cim, x.x)));
                }
            }
            vis[i] = make_float2(re, im);
            upd = (unsigned long long)(2 * s + 1) * (unsigned long long)(2 * s + 1);
        }
    }
    s_skip[tid] = skip;
    s_upd[tid] = upd;
    for (int step = DG_THREADS / 2; step > 0; step /= 2) {
        __syncthreads();
        if (tid < step) {
            s_skip[tid] += s_skip[tid + step];
            s_upd[tid] += s_upd[tid + step];
        }
    }
    if (tid == 0) {
        atomicAdd(&acc[0], s_skip[0]);
        atomicAdd(&acc[1], s_upd[0]);
    }
}

/* The adjoint of image.cu's crop: model pixel (x, y) to cell ((y - n/2) mod g, (x - n/2) mod g)
 * of the zeroed grid. */
__device__ __forceinline__ size_t dg_wrap(int x, int n, int g)
{
    return (size_t)(x < n / 2 ? x - n / 2 + g : x - n / 2);
}

__global__ void __launch_bounds__(DG_TX *DG_TY)
dg_place_kernel(const float *model, int g, int n, const float *sc, float scale, float2 *grid)
{
    const int x = (int)(blockIdx.x * DG_TX + threadIdx.x);
    const int y = (int)(blockIdx.y * DG_TY + threadIdx.y);
    if (x >= n || y >= n) return;
    const float fy = __fmul_rn(sc[y], scale);
    grid[dg_wrap(y, n, g) * (size_t)g + dg_wrap(x, n, g)] =
        make_float2(__fmul_rn(model[(size_t)y * (size_t)n + (size_t)x], __fmul_rn(fy, sc[x])),
                    0.0f);
}
/* PK_DG_DEVICE_END */

/* ---- host side ------------------------------------------------------------------------- */
#define DG_CHUNK (1 << 22) /* visibilities per chunk */

enum { DG_EV_PLACE0, DG_EV_PLACE1, DG_EV_FFT1, DG_EV_N };

struct dg_plan {
    pk_cuda_xfer xf; /* first (backend_cuda.c reads it) */
    pk_grid_params p;
    gr_geom q;
    int *d_support;
    unsigned long long *d_poff;
    float2 *d_kern;
    float2 *d_grid;                     /* g x g */
    float *d_uu, *d_vv, *d_ww, *d_wt;   /* DG_CHUNK (or fewer) each */
    float2 *d_vis;
    unsigned long long *d_acc;          /* skipped, updates */
    size_t chunk;
    /* pk_cuda_dg_image_init */
    int n;
    float kinv;
    float *d_sc, *d_model;
    int fft, have_fft;
    cudaEvent_t ev[DG_EV_N];
};
PK_CUDA_XFER_FIRST(dg_plan);

#define DG_CUDA(call, ...)                                                                     \
    do {                                                                                       \
        cudaError_t dg_e_ = (call);                                                            \
        if (dg_e_ != cudaSuccess) return pk_cuda_fail(dg_e_, __VA_ARGS__);                     \
    } while (0)

extern "C" void pk_cuda_dg_destroy(void *impl)
{
    dg_plan *h = (dg_plan *)impl;
    if (!h) return;
    (void)cudaSetDevice(h->xf.device);
    (void)cudaStreamSynchronize(0);
    if (h->have_fft) pk_cuda_cufft_destroy(h->fft);
    void *bufs[] = {h->d_support, h->d_poff, h->d_kern, h->d_grid, h->d_uu, h->d_vv, h->d_ww,
                    h->d_wt, h->d_vis, h->d_acc, h->d_sc, h->d_model};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
        if (bufs[i]) cudaFree(bufs[i]);
    for (int i = 0; i < DG_EV_N; ++i)
        if (h->ev[i]) cudaEventDestroy(h->ev[i]);
    (void)cudaGetLastError();
    free(h);
}

static pk_status dg_alloc(dg_plan *h, void **p, size_t bytes, const char *what)
{
    DG_CUDA(cudaMalloc(p, bytes ? bytes : 16), "cudaMalloc(degrid %s, %zu bytes, device %d)",
            what, bytes, h->xf.device);
    return PK_OK;
}

static pk_status dg_setup(dg_plan *h, const pk_gr_desc *d)
{
    const int np = d->p.num_w_planes, g = d->p.grid_size;
    DG_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    unsigned long long *poff = (unsigned long long *)malloc((size_t)(np + 1) * sizeof *poff);
    PK_CHECK(poff != NULL, PK_ENOMEM, "degrid: out of host memory");
    for (int w = 0; w <= np; ++w) poff[w] = (unsigned long long)d->plane_offset[w];
    const size_t kbytes = (size_t)d->plane_offset[np] * 8;
    pk_cuda_xfer xf = h->xf; /* setup copies: not said in the runs' notes */
    pk_status s = dg_alloc(h, (void **)&h->d_poff, (size_t)(np + 1) * 8, "plane offsets");
    if (s == PK_OK)
        s = pk_cuda_transfer(&xf, h->d_poff, poff, (size_t)(np + 1) * 8, 1,
                             "degrid plane offsets", NULL);
    free(poff);
    PK_TRY(s);
    PK_TRY(dg_alloc(h, (void **)&h->d_support, (size_t)np * 4, "supports"));
    PK_TRY(pk_cuda_transfer(&xf, h->d_support, d->support, (size_t)np * 4, 1, "degrid supports",
                            NULL));
    PK_TRY(dg_alloc(h, (void **)&h->d_kern, kbytes, "kernel stack"));
    PK_TRY(pk_cuda_transfer(&xf, h->d_kern, d->kernels, kbytes, 1, "degrid kernel stack", NULL));
    PK_TRY(dg_alloc(h, (void **)&h->d_grid, (size_t)g * (size_t)g * 8, "grid"));
    PK_TRY(dg_alloc(h, (void **)&h->d_acc, 16, "sums"));
    for (int i = 0; i < DG_EV_N; ++i)
        DG_CUDA(cudaEventCreate(&h->ev[i]), "cudaEventCreate(degrid timing)");
    return PK_OK;
}

extern "C" pk_status pk_cuda_dg_create(void *state, int device, const pk_gr_desc *desc,
                                       void **impl)
{
    const char *variant = desc->variant && desc->variant[0] ? desc->variant : "cuda";
    PK_CHECK(strcmp(variant, "cuda") == 0, PK_EINVAL, "degrid: unknown CUDA variant '%s' (cuda)",
             variant);
    dg_plan *h = (dg_plan *)calloc(1, sizeof *h);
    PK_CHECK(h != NULL, PK_ENOMEM, "degrid: out of host memory for a CUDA plan");
    h->xf.s = (pk_cuda_state *)state;
    h->xf.device = device;
    h->p = desc->p;
    const int g = desc->p.grid_size;
    h->q.g = g;
    h->q.os = desc->p.oversample;
    h->q.num_planes = desc->p.num_w_planes;
    h->q.grid_scale = (float)(g * desc->p.cell_size_rad);
    h->q.w_scale = (float)desc->p.w_scale;
    const pk_status s = dg_setup(h, desc);
    if (s != PK_OK) {
        pk_cuda_dg_destroy(h);
        return s;
    }
    *impl = h;
    return PK_OK;
}

/* The gather of d over the device grid, in chunks; vis down.  *transfer_s: the copies. */
static pk_status dg_gather(dg_plan *h, const pk_grid_data *d, float *vis, pk_dg_result *res,
                           double *kernel_s, double *transfer_s)
{
    const size_t n = d->num_vis;
    const size_t chunk = n < DG_CHUNK ? n : DG_CHUNK;
    if (chunk > h->chunk) {
        void **bufs[] = {(void **)&h->d_uu, (void **)&h->d_vv, (void **)&h->d_ww,
                         (void **)&h->d_wt, (void **)&h->d_vis};
        for (int b = 0; b < 5; ++b)
            if (*bufs[b]) {
                cudaFree(*bufs[b]);
                *bufs[b] = NULL;
            }
        h->chunk = 0;
        PK_TRY(dg_alloc(h, (void **)&h->d_uu, chunk * 4, "uu"));
        PK_TRY(dg_alloc(h, (void **)&h->d_vv, chunk * 4, "vv"));
        PK_TRY(dg_alloc(h, (void **)&h->d_ww, chunk * 4, "ww"));
        PK_TRY(dg_alloc(h, (void **)&h->d_wt, chunk * 4, "weight"));
        PK_TRY(dg_alloc(h, (void **)&h->d_vis, chunk * 8, "vis"));
        h->chunk = chunk;
    }
    unsigned long long acc[2] = {0, 0};
    DG_CUDA(cudaMemsetAsync(h->d_acc, 0, 16, 0), "cudaMemsetAsync(degrid sums)");
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
        const size_t c = n - i0 < chunk ? n - i0 : chunk;
        double t = 0;
        /* the kernel of the last chunk is done (synchronised below) before these overwrite */
        PK_TRY(pk_cuda_transfer(&h->xf, h->d_uu, d->uu + i0, c * 4, 1, "degrid uu", &t));
        *transfer_s += t;
        PK_TRY(pk_cuda_transfer(&h->xf, h->d_vv, d->vv + i0, c * 4, 1, "degrid vv", &t));
        *transfer_s += t;
        PK_TRY(pk_cuda_transfer(&h->xf, h->d_ww, d->ww + i0, c * 4, 1, "degrid ww", &t));
        *transfer_s += t;
        if (d->weight) {
            PK_TRY(pk_cuda_transfer(&h->xf, h->d_wt, d->weight + i0, c * 4, 1, "degrid weight",
                                    &t));
            *transfer_s += t;
        }
        float ms = 0;
        DG_CUDA(cudaEventRecord(h->ev[DG_EV_PLACE0], 0), "cudaEventRecord(degrid)");
        pk_cuda_launch(dg_gather_kernel, dim3((unsigned)((c + DG_THREADS - 1) / DG_THREADS)),
                       dim3(DG_THREADS), 0, (cudaStream_t)0, h->q, (const int *)h->d_support,
                       (const unsigned long long *)h->d_poff, (const float2 *)h->d_kern,
                       (const float2 *)h->d_grid, (const float *)h->d_uu,
                       (const float *)h->d_vv, (const float *)h->d_ww,
                       (const float *)(d->weight ? h->d_wt : NULL), (int)c, h->d_vis, h->d_acc);
        DG_CUDA(cudaGetLastError(), "dg_gather_kernel (%zu visibilities)", c);
        DG_CUDA(cudaEventRecord(h->ev[DG_EV_PLACE1], 0), "cudaEventRecord(degrid)");
        DG_CUDA(cudaStreamSynchronize(0), "cudaStreamSynchronize(degrid)");
        DG_CUDA(cudaEventElapsedTime(&ms, h->ev[DG_EV_PLACE0], h->ev[DG_EV_PLACE1]),
                "cudaEventElapsedTime(degrid)");
        *kernel_s += 1e-3 * ms;
        PK_TRY(pk_cuda_transfer(&h->xf, vis + 2 * i0, h->d_vis, c * 8, 0, "degrid vis", &t));
        *transfer_s += t;
    }
    DG_CUDA(cudaMemcpy(acc, h->d_acc, 16, cudaMemcpyDeviceToHost), "cudaMemcpy(degrid sums)");
    res->num_skipped = (int64_t)acc[0];
    res->updates = (double)acc[1];
    return PK_OK;
}

static void dg_settle(pk_status s)
{
    if (s != PK_OK) { /* leave the device idle for the next call; keep the first error */
        (void)cudaStreamSynchronize(0);
        (void)cudaGetLastError();
    }
}

/* The family's run: the caller's host grid (transformed already) uploaded whole. */
extern "C" pk_status pk_cuda_dg_run(void *impl, const float *grid, const pk_grid_data *d,
                                    float *vis, pk_dg_result *res)
{
    dg_plan *h = (dg_plan *)impl;
    if (d->num_vis == 0) return PK_OK;
    const cudaError_t e = cudaSetDevice(h->xf.device);
    pk_status s = e == cudaSuccess ? PK_OK : pk_cuda_fail(e, "cudaSetDevice(%d)", h->xf.device);
    double t = 0;
    const int g = h->p.grid_size;
    if (s == PK_OK)
        s = pk_cuda_transfer(&h->xf, h->d_grid, grid, (size_t)g * (size_t)g * 8, 1,
                             "degrid grid upload", &t);
    res->transfer_s += t;
    if (s == PK_OK) s = dg_gather(h, d, vis, res, &res->kernel_s, &res->transfer_s);
    dg_settle(s);
    return s;
}

extern "C" pk_status pk_cuda_dg_image_init(void *impl, int n, const float *scorr, double kappa)
{
    dg_plan *h = (dg_plan *)impl;
    const int g = h->p.grid_size;
    PK_CHECK(n >= 2 && n <= g && n % 2 == 0 && kappa > 0, PK_EINVAL,
             "degrid (cuda): grid %d, model %d, kappa %g", g, n, kappa);
    DG_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    h->n = n;
    h->kinv = (float)(1.0 / kappa);
    PK_TRY(dg_alloc(h, (void **)&h->d_sc, (size_t)n * 4, "correction"));
    PK_TRY(dg_alloc(h, (void **)&h->d_model, (size_t)n * (size_t)n * 4, "model"));
    pk_cuda_xfer xf = h->xf;
    PK_TRY(pk_cuda_transfer(&xf, h->d_sc, scorr, (size_t)n * 4, 1, "degrid correction", NULL));
    PK_TRY(pk_cuda_cufft_c2c_create(g, g, "degrid", &h->fft));
    h->have_fft = 1;
    return PK_OK;
}

static pk_status dg_predict(dg_plan *h, const float *model, const pk_grid_data *d, float *vis,
                            pk_dg_result *res, double *stage_s)
{
    const int g = h->p.grid_size, n = h->n;
    DG_CUDA(cudaSetDevice(h->xf.device), "cudaSetDevice(%d)", h->xf.device);
    double up = 0;
    PK_TRY(pk_cuda_transfer(&h->xf, h->d_model, model, (size_t)n * (size_t)n * 4, 1,
                            "degrid model upload", &up));
    DG_CUDA(cudaEventRecord(h->ev[DG_EV_PLACE0], 0), "cudaEventRecord(degrid)");
    DG_CUDA(cudaMemsetAsync(h->d_grid, 0, (size_t)g * (size_t)g * 8, 0),
            "cudaMemsetAsync(degrid grid)");
    pk_cuda_launch(dg_place_kernel,
                   dim3((unsigned)((n + DG_TX - 1) / DG_TX), (unsigned)((n + DG_TY - 1) / DG_TY)),
                   dim3(DG_TX, DG_TY), 0, (cudaStream_t)0, (const float *)h->d_model, g, n,
                   (const float *)h->d_sc, h->kinv, h->d_grid);
    DG_CUDA(cudaGetLastError(), "dg_place_kernel (%d x %d)", n, n);
    DG_CUDA(cudaEventRecord(h->ev[DG_EV_PLACE1], 0), "cudaEventRecord(degrid)");
    PK_TRY(pk_cuda_cufft_c2c_exec(h->fft, h->d_grid, 0, "degrid"));
    DG_CUDA(cudaEventRecord(h->ev[DG_EV_FFT1], 0), "cudaEventRecord(degrid)");
    DG_CUDA(cudaStreamSynchronize(0), "cudaStreamSynchronize(degrid)");
    float ms_place = 0, ms_fft = 0;
    DG_CUDA(cudaEventElapsedTime(&ms_place, h->ev[DG_EV_PLACE0], h->ev[DG_EV_PLACE1]),
            "cudaEventElapsedTime(degrid)");
    DG_CUDA(cudaEventElapsedTime(&ms_fft, h->ev[DG_EV_PLACE1], h->ev[DG_EV_FFT1]),
            "cudaEventElapsedTime(degrid)");
    double ks = 0, ts = up;
    if (d->num_vis > 0) PK_TRY(dg_gather(h, d, vis, res, &ks, &ts));
    res->kernel_s = 1e-3 * (ms_place + ms_fft) + ks;
    res->transfer_s = ts;
    stage_s[0] = 1e-3 * ms_place;
    stage_s[1] = 1e-3 * ms_fft;
    stage_s[2] = ks;
    stage_s[3] = ts;
    return PK_OK;
}

/* Model (n x n float) -> visibilities with the FFT on the device (module comment). */
extern "C" pk_status pk_cuda_dg_predict(void *impl, const float *model, const pk_grid_data *d,
                                        float *vis, pk_dg_result *res, double *stage_s)
{
    dg_plan *h = (dg_plan *)impl;
    memset(res, 0, sizeof *res);
    PK_CHECK(h->have_fft, PK_EINTERNAL, "degrid (cuda): pk_cuda_dg_image_init not called");
    const pk_status s = dg_predict(h, model, d, vis, res, stage_s);
    dg_settle(s);
    return s;
}

/* The degrid kernel family on this backend (lib/internal.h, pk_dg_ops). */
extern "C" const pk_dg_ops pk_cuda_dg_ops = {"cuda", pk_cuda_dg_create, pk_cuda_dg_run,
                                             pk_cuda_dg_destroy};
