/* conv2d_fft.cu - the FFT part of a CUDA conv2d plan (variant "cuda-fft"): cuFFT R2C/C2R
 * with the PSF's transform made once at plan creation.
 *
 * libcufft is loaded at run time (dlopen "libcufft.so.12", then "libcufft.so"), so that
 * libportkern has no load-time dependency on it (nor on libcudart.so: the library links the
 * static runtime).  The few entry points are declared here from the documented cuFFT ABI;
 * when the library cannot be loaded the plan fails with PK_ENOBACKEND and the loader's
 * reason, and auto selection falls back to the direct kernel.
 *
 * Indexing (why the FFT gives exactly the direct formula).  The spec is
 *   out[y][x] = sum_{k<kh, l<kw} img[(y - oy + k) mod h][(x - ox + l) mod w] psf[k][l],
 * oy = kh/2, ox = kw/2: a correlation (no flip) centred by (oy, ox).  Each dimension is done
 * on a torus of size P (rows) and Q (columns), chosen per dimension as either
 *   exact:  P = h, shift sy = 0                         (h has only factors 2, 3, 5, 7), or
 *   padded: P >= h + kh - 1 with only factors 2, 3, 5, 7, shift sy = oy,
 * and likewise Q, sx for the columns.  Define on the P x Q torus
 *   E[p][q] = img[(p - sy) mod h][(q - sx) mod w]                       (the wrapped image)
 *   g[u][v] = sum of psf[k][l] over u = (k - oy + sy) mod P, v = (l - ox + sx) mod Q
 * (the PSF folded onto the torus: entries add up only when the PSF is larger than the torus,
 * i.e. wraps).  The circular correlation c[y][x] = sum_{u,v} E[(y+u) mod P][(x+v) mod Q] g[u][v]
 * equals sum_{k,l} psf[k][l] E[(y + k - oy + sy) mod P][(x + l - ox + sx) mod Q], and for
 * y < h, x < w:
 *   exact:  E[(y + k - oy) mod h] = img[(y - oy + k) mod h] directly;
 *   padded: sy = oy, so the index is y + k <= h + kh - 2 < P (no wrap on the torus), and
 *           E[y + k] = img[(y + k - oy) mod h].
 * Either way c[y][x] = out[y][x] (the same holds for the columns).  In Fourier space a
 * correlation with a real kernel is a product with the conjugate:
 *   F(c) = F(E) . conj(F(g)),  and cuFFT's C2R is unnormalised: c = C2R(...) / (P Q).
 * So the plan stores G = conj(R2C(g)) / (P Q) and a run is: gather E from the resident image,
 * R2C, multiply by G, C2R, and keep the top-left h x w corner (C2R writes straight into the
 * output when P = h and Q = w).
 *
 * Choice per dimension: exact when the size is 7-smooth (cuFFT's fastest radices, no extra
 * area), else padded to the next 7-smooth size >= n + k - 1 - unless that is more than 4n
 * (a PSF much larger than the image), where the exact size with cuFFT's Bluestein path
 * (a few transforms of about 2n) is cheaper.  cuFFT needs sizes >= 2, so n = 1 pads.
 */
#include "cuda_internal.h"

#ifndef PK_CUDA_EMULATE /* tests/test_cv_cuda_emu: cuda/emulate.h instead */
#include <cuda_runtime.h>
#endif

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cuFFT ABI (cufft.h, CUDA 12 and 13) ---------------------------------------------- */
typedef int pk_cufft_handle; /* cufftHandle */
typedef int pk_cufft_result; /* cufftResult: CUFFT_SUCCESS = 0 */
enum { PK_CUFFT_ALLOC_FAILED = 2, PK_CUFFT_INVALID_SIZE = 8 };
enum { PK_CUFFT_R2C = 0x2a, PK_CUFFT_C2R = 0x2c, PK_CUFFT_C2C = 0x29 }; /* cufftType */
enum { PK_CUFFT_FORWARD = -1, PK_CUFFT_INVERSE = 1 }; /* cufftExecC2C's direction */
typedef pk_cufft_result (*pk_cufft_plan2d_fn)(pk_cufft_handle *plan, int nx, int ny, int type);
typedef pk_cufft_result (*pk_cufft_r2c_fn)(pk_cufft_handle plan, float *idata, float2 *odata);
typedef pk_cufft_result (*pk_cufft_c2r_fn)(pk_cufft_handle plan, float2 *idata, float *odata);
typedef pk_cufft_result (*pk_cufft_c2c_fn)(pk_cufft_handle plan, float2 *idata, float2 *odata,
                                           int direction);
typedef pk_cufft_result (*pk_cufft_destroy_fn)(pk_cufft_handle plan);

/* Loaded once per process and never unloaded (cuFFT keeps state until exit). */
static struct {
    pk_cufft_plan2d_fn plan2d;
    pk_cufft_r2c_fn exec_r2c;
    pk_cufft_c2r_fn exec_c2r;
    pk_cufft_c2c_fn exec_c2c;
    pk_cufft_destroy_fn destroy;
    char why[512]; /* empty when loaded */
} pk_cufft;
static pthread_once_t pk_cufft_once = PTHREAD_ONCE_INIT;

static void pk_cufft_load(void)
{
#ifdef PK_CUDA_EMULATE
    /* tests/test_cv_cuda_emu: cuda/emulate.h's stand-in (a double-precision DFT) */
    pk_cufft.plan2d = pk_emu_cufft_plan2d;
    pk_cufft.exec_r2c = pk_emu_cufft_exec_r2c;
    pk_cufft.exec_c2r = pk_emu_cufft_exec_c2r;
    pk_cufft.exec_c2c = pk_emu_cufft_exec_c2c;
    pk_cufft.destroy = pk_emu_cufft_destroy;
    return;
#endif
    static const char *const names[] = {"libcufft.so.12", "libcufft.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && lib == NULL; ++i) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *err = dlerror();
            pk_append_note(pk_cufft.why, sizeof pk_cufft.why, "%s", err ? err : names[i]);
        }
    }
    if (lib == NULL) return;
    pk_cufft.why[0] = '\0';
    static const char *const syms[] = {"cufftPlan2d", "cufftExecR2C", "cufftExecC2R",
                                       "cufftDestroy", "cufftExecC2C"};
    void *fn[5];
    for (int i = 0; i < 5; ++i) {
        fn[i] = dlsym(lib, syms[i]);
        if (fn[i] == NULL) {
            const char *err = dlerror();
            snprintf(pk_cufft.why, sizeof pk_cufft.why, "dlsym(%s): %s", syms[i],
                     err ? err : "not found");
            dlclose(lib);
            return;
        }
    }
    pk_cufft.plan2d = (pk_cufft_plan2d_fn)fn[0];
    pk_cufft.exec_r2c = (pk_cufft_r2c_fn)fn[1];
    pk_cufft.exec_c2r = (pk_cufft_c2r_fn)fn[2];
    pk_cufft.destroy = (pk_cufft_destroy_fn)fn[3];
    pk_cufft.exec_c2c = (pk_cufft_c2c_fn)fn[4];
}

static const char *pk_cufft_name(pk_cufft_result r)
{
    static const char *const names[] = {
        "CUFFT_SUCCESS",        "CUFFT_INVALID_PLAN",   "CUFFT_ALLOC_FAILED",
        "CUFFT_INVALID_TYPE",   "CUFFT_INVALID_VALUE",  "CUFFT_INTERNAL_ERROR",
        "CUFFT_EXEC_FAILED",    "CUFFT_SETUP_FAILED",   "CUFFT_INVALID_SIZE",
        "CUFFT_UNALIGNED_DATA", "CUFFT_ERROR_10",       "CUFFT_INVALID_DEVICE",
        "CUFFT_ERROR_12",       "CUFFT_NO_WORKSPACE",   "CUFFT_NOT_IMPLEMENTED",
        "CUFFT_ERROR_15",       "CUFFT_NOT_SUPPORTED",  "CUFFT_MISSING_DEPENDENCY"};
    return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "CUFFT_ERROR";
}

static pk_status pk_cufft_fail(pk_cufft_result r, const char *what)
{
    const pk_status st = r == PK_CUFFT_ALLOC_FAILED ? PK_EDEVMEM
                         : r == PK_CUFFT_INVALID_SIZE ? PK_EUNSUPPORTED
                                                      : PK_EDEVICE;
    return pk_fail(st, "%s failed: %s (%d)", what, pk_cufft_name(r), r);
}

/* ---- the loader for other plans (cuda/image.cu, cuda/degrid.cu): 2-D C2C in place ---------- */
extern "C" pk_status pk_cuda_cufft_c2c_create(int rows, int cols, const char *what, int *plan)
{
    pthread_once(&pk_cufft_once, pk_cufft_load);
    PK_CHECK(pk_cufft.why[0] == '\0', PK_ENOBACKEND, "%s: cannot load cuFFT at run time: %s",
             what, pk_cufft.why);
    pk_cufft_handle h;
    const pk_cufft_result r = pk_cufft.plan2d(&h, rows, cols, PK_CUFFT_C2C);
    if (r != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: cufftPlan2d(%d x %d, C2C)", what, rows, cols);
        return pk_cufft_fail(r, msg);
    }
    *plan = h;
    return PK_OK;
}

extern "C" pk_status pk_cuda_cufft_c2c_exec(int plan, void *data, int inverse, const char *what)
{
    const pk_cufft_result r = pk_cufft.exec_c2c(plan, (float2 *)data, (float2 *)data,
                                                inverse ? PK_CUFFT_INVERSE : PK_CUFFT_FORWARD);
    if (r != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: cufftExecC2C", what);
        return pk_cufft_fail(r, msg);
    }
    return PK_OK;
}

extern "C" void pk_cuda_cufft_destroy(int plan) { (void)pk_cufft.destroy(plan); }

/* ---- the transform's index arithmetic ----------------------------------------------------
 * Self-contained between these markers (no library or CUDA runtime calls): the review
 * emulated it on the host, with FFTW in place of cuFFT, against the direct formula. */
/* PK_CVF_MATH_BEGIN */
__device__ __forceinline__ int pk_cvf_mod(int a, int m)
{
    const int r = a % m;
    return r < 0 ? r + m : r;
}

/* E[p][q] = img[(p - sy) mod h][(q - sx) mod w] on the P x Q torus; blocks stride over rows. */
__global__ void pk_cvf_gather(const float *__restrict__ img, int h, int w, float *__restrict__ e,
                              int P, int Q, int sy, int sx)
{
    for (int p = (int)blockIdx.y; p < P; p += (int)gridDim.y) {
        const float *src = img + (size_t)pk_cvf_mod(p - sy, h) * (size_t)w;
        float *dst = e + (size_t)p * (size_t)Q;
        for (int q = (int)(blockIdx.x * blockDim.x + threadIdx.x); q < Q;
             q += (int)(gridDim.x * blockDim.x)) {
            int c = q - sx;
            if (c < 0 || c >= w) c = pk_cvf_mod(c, w);
            dst[q] = __ldg(src + c);
        }
    }
}

/* x[i] *= g[i] (complex). */
__global__ void pk_cvf_mul(float2 *__restrict__ x, const float2 *__restrict__ g, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float2 a = x[i], b = __ldg(g + i);
        x[i] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
    }
}

/* g[i] = conj(g[i]) * scale. */
__global__ void pk_cvf_conj_scale(float2 *__restrict__ g, size_t n, float scale)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float2 a = g[i];
        g[i] = make_float2(a.x * scale, -a.y * scale);
    }
}

static int pk_is_smooth7(long long n)
{
    static const int f[] = {2, 3, 5, 7};
    for (int i = 0; i < 4; ++i)
        while (n % f[i] == 0) n /= f[i];
    return n == 1;
}

/* Smallest 7-smooth number >= n (n <= 2^31). */
static long long pk_smooth7_ceil(long long n)
{
    while (!pk_is_smooth7(n)) ++n;
    return n;
}

/* Torus size and shift of one dimension of n pixels with a PSF extent k (see the top). */
static void pk_cvf_dim(int n, int k, long long *size, int *shift)
{
    const long long pad = pk_smooth7_ceil(n + k - 1 >= 2 ? n + k - 1 : 2);
    if (n >= 2 && (pk_is_smooth7(n) || pad > 4LL * n)) {
        *size = n;
        *shift = 0;
    } else {
        *size = pad;
        *shift = k / 2;
    }
}

/* g (P x Q, zeroed) = the PSF folded onto the torus (see the top): entry (k, l) adds to row
 * (k - oy + sy) mod P, column (l - ox + sx) mod Q, in double when entries meet (a PSF
 * larger than the torus).  Both indices depend on k and l only through k mod P and l mod Q,
 * so the sums are made over that support first.  Returns -1 when out of host memory. */
static int pk_cvf_fold(const float *psf, int kh, int kw, int P, int Q, int sy, int sx, float *g)
{
    const int fh = kh < P ? kh : P, fw = kw < Q ? kw : Q;
    double *fold = (double *)calloc((size_t)fh * (size_t)fw, sizeof(double));
    if (fold == NULL) return -1;
    for (int k = 0; k < kh; ++k)
        for (int l = 0; l < kw; ++l)
            fold[(size_t)(k % P) * fw + (size_t)(l % Q)] += (double)psf[(size_t)k * kw + l];
    for (int a = 0; a < fh; ++a) {
        const long long u = ((long long)a - kh / 2 + sy) % P;
        const size_t row = (size_t)(u < 0 ? u + P : u) * (size_t)Q;
        for (int b = 0; b < fw; ++b) {
            const long long v = ((long long)b - kw / 2 + sx) % Q;
            g[row + (size_t)(v < 0 ? v + Q : v)] = (float)fold[(size_t)a * fw + b];
        }
    }
    free(fold);
    return 0;
}
/* PK_CVF_MATH_END */

/* ---- host side ---------------------------------------------------------------------------- */
struct pk_cuda_cvfft {
    int h, w, P, Q, sy, sx;
    size_t nc;                 /* complex elements of a transform: P * (Q/2 + 1) */
    float *e;                  /* P x Q real: the gathered image, then the C2R result */
    float2 *x;                 /* the image's spectrum */
    float2 *g;                 /* conj(spectrum of the folded PSF) / (P Q) */
    pk_cufft_handle r2c, c2r;
    int have_r2c, have_c2r;
    int blocks;                /* for the elementwise kernels */
};

extern "C" void pk_cuda_cvfft_destroy(pk_cuda_cvfft *f)
{
    if (f == NULL) return;
    if (f->have_r2c) pk_cufft.destroy(f->r2c);
    if (f->have_c2r) pk_cufft.destroy(f->c2r);
    if (f->e) cudaFree(f->e);
    if (f->x) cudaFree(f->x);
    if (f->g) cudaFree(f->g);
    (void)cudaGetLastError();
    free(f);
}

/* Sizes for the elementwise kernels: a few waves of 256-thread blocks. */
static int pk_cvf_blocks(int device, size_t n)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        sms < 1) {
        (void)cudaGetLastError();
        sms = 32;
    }
    const size_t want = (n + 255) / 256, cap = (size_t)sms * 8;
    return (int)(want < cap ? (want > 0 ? want : 1) : cap);
}

extern "C" pk_status pk_cuda_cvfft_create(int device, const pk_cv_desc *desc, pk_cuda_cvfft **out)
{
    pthread_once(&pk_cufft_once, pk_cufft_load);
    PK_CHECK(pk_cufft.why[0] == '\0', PK_ENOBACKEND,
             "conv2d cuda-fft: cannot load cuFFT at run time: %s", pk_cufft.why);

    const int h = desc->h, w = desc->w, kh = desc->kh, kw = desc->kw;
    long long P, Q;
    int sy, sx;
    pk_cvf_dim(h, kh, &P, &sy);
    pk_cvf_dim(w, kw, &Q, &sx);
    /* cufftPlan2d and the index arithmetic here are 32-bit. */
    PK_CHECK(P <= INT_MAX && Q <= INT_MAX && P * Q <= INT_MAX, PK_EUNSUPPORTED,
             "conv2d cuda-fft: a %lld x %lld transform (image %d x %d, psf %d x %d) exceeds "
             "2^31 elements; use the direct variant 'cuda'",
             P, Q, h, w, kh, kw);

    pk_status st = PK_OK;
    cudaError_t e;
    pk_cufft_result r;
    float *host = NULL;
    pk_cuda_cvfft *f = (pk_cuda_cvfft *)calloc(1, sizeof *f);
    PK_CHECK(f != NULL, PK_ENOMEM, "conv2d cuda-fft: out of host memory for the plan");
    f->h = h;
    f->w = w;
    f->P = (int)P;
    f->Q = (int)Q;
    f->sy = sy;
    f->sx = sx;
    f->nc = (size_t)P * (size_t)(Q / 2 + 1);
    const size_t nr = (size_t)P * (size_t)Q;
    f->blocks = pk_cvf_blocks(device, f->nc);

    struct {
        void **ptr;
        size_t bytes;
        const char *what;
    } bufs[3] = {{(void **)&f->e, nr * sizeof(float), "real transform buffer"},
                 {(void **)&f->x, f->nc * sizeof(float2), "image spectrum"},
                 {(void **)&f->g, f->nc * sizeof(float2), "psf spectrum"}};
    for (int i = 0; i < 3; ++i) {
        if ((e = cudaMalloc(bufs[i].ptr, bufs[i].bytes)) != cudaSuccess) {
            size_t fr = 0, tot = 0;
            *bufs[i].ptr = NULL;
            (void)cudaGetLastError();
            (void)cudaMemGetInfo(&fr, &tot);
            st = pk_cuda_fail(e, "cudaMalloc(conv2d cuda-fft %s, %zu bytes, device %d; %zu of "
                                 "%zu bytes free)",
                              bufs[i].what, bufs[i].bytes, device, fr, tot);
            goto fail;
        }
    }
    {
        char what[96];
        if ((r = pk_cufft.plan2d(&f->r2c, f->P, f->Q, PK_CUFFT_R2C)) != 0) {
            snprintf(what, sizeof what, "cufftPlan2d(%d x %d, R2C)", f->P, f->Q);
            st = pk_cufft_fail(r, what);
            goto fail;
        }
        f->have_r2c = 1;
        if ((r = pk_cufft.plan2d(&f->c2r, f->P, f->Q, PK_CUFFT_C2R)) != 0) {
            snprintf(what, sizeof what, "cufftPlan2d(%d x %d, C2R)", f->P, f->Q);
            st = pk_cufft_fail(r, what);
            goto fail;
        }
        f->have_c2r = 1;
    }

    host = (float *)calloc(nr, sizeof(float));
    if (host == NULL || pk_cvf_fold(desc->psf, kh, kw, f->P, f->Q, sy, sx, host) != 0) {
        st = pk_fail(PK_ENOMEM, "conv2d cuda-fft: out of host memory for the folded PSF "
                                "(%zu floats)",
                     nr);
        goto fail;
    }
    if ((e = cudaMemcpy(f->e, host, nr * sizeof(float), cudaMemcpyHostToDevice)) !=
        cudaSuccess) {
        st = pk_cuda_fail(e, "cudaMemcpy(conv2d cuda-fft folded psf, %zu bytes)",
                          nr * sizeof(float));
        goto fail;
    }
    if ((r = pk_cufft.exec_r2c(f->r2c, f->e, f->g)) != 0) {
        st = pk_cufft_fail(r, "cufftExecR2C(psf)");
        goto fail;
    }
    pk_cuda_launch(pk_cvf_conj_scale, f->blocks, 256, 0, 0, f->g, f->nc,
                   (float)(1.0 / ((double)P * (double)Q)));
    if ((e = cudaGetLastError()) != cudaSuccess) {
        st = pk_cuda_fail(e, "conv2d cuda-fft conj_scale launch");
        goto fail;
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
        st = pk_cuda_fail(e, "conv2d cuda-fft psf transform (cudaDeviceSynchronize)");
        goto fail;
    }
    free(host);
    *out = f;
    return PK_OK;
fail:
    free(host);
    pk_cuda_cvfft_destroy(f);
    return st;
}

/* Enqueue one frame on the default stream (cuFFT's default stream too): img -> out. */
extern "C" pk_status pk_cuda_cvfft_run(pk_cuda_cvfft *f, const float *img, float *out)
{
    cudaError_t e;
    pk_cufft_result r;
    const int direct = f->P == f->h && f->Q == f->w;
    {
        const int bx = f->Q < 256 ? 32 : 256;
        const int gx = (f->Q + bx - 1) / bx < 64 ? (f->Q + bx - 1) / bx : 64;
        const int gy = f->P < 65535 ? f->P : 65535;
        pk_cuda_launch(pk_cvf_gather, dim3(gx, gy), bx, 0, 0, img, f->h, f->w, f->e, f->P, f->Q,
                       f->sy, f->sx);
    }
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "conv2d cuda-fft gather launch (%d x %d)", f->P, f->Q);
    if ((r = pk_cufft.exec_r2c(f->r2c, f->e, f->x)) != 0)
        return pk_cufft_fail(r, "cufftExecR2C(image)");
    pk_cuda_launch(pk_cvf_mul, f->blocks, 256, 0, 0, f->x, f->g, f->nc);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return pk_cuda_fail(e, "conv2d cuda-fft multiply launch");
    if ((r = pk_cufft.exec_c2r(f->c2r, f->x, direct ? out : f->e)) != 0)
        return pk_cufft_fail(r, "cufftExecC2R");
    if (!direct &&
        (e = cudaMemcpy2DAsync(out, (size_t)f->w * sizeof(float), f->e,
                               (size_t)f->Q * sizeof(float), (size_t)f->w * sizeof(float),
                               (size_t)f->h, cudaMemcpyDeviceToDevice, 0)) != cudaSuccess)
        return pk_cuda_fail(e, "cudaMemcpy2DAsync(conv2d cuda-fft crop %d x %d of %d x %d)",
                            f->h, f->w, f->P, f->Q);
    return PK_OK;
}
