/* conv2d_host.h - conv2d on the host: what the serial (lib/conv2d_serial.c) and OpenMP
 * (omp/conv2d_omp.c) backends share with lib/conv2d.c.  Indices follow docs/KERNELS.md 5 with
 * a = kh/2, b = kw/2:  out[oi][oj] = sum_{k,l} image[(oi-a+k) % h][(oj-b+l) % w] psf[k][l]. */
#ifndef PK_CONV2D_HOST_H
#define PK_CONV2D_HOST_H
#include "internal.h"

/* The plan of both host backends: the "device" buffers are host buffers. */
typedef struct pk_cv_host_plan {
    pk_cv_desc d;         /* d.psf points at psf, d.variant at variant */
    char variant[32];
    size_t n;             /* h * w */
    float *image, *out;   /* 64-byte aligned, n floats each */
    float *psf;           /* kh * kw: the caller's PSF, copied */
    int nt;               /* host threads of the run */
    int path;             /* the backend's code path for the variant, set by its create */
    void *priv;           /* the variant's own state (halo rings, FFT plans) */
    void (*priv_free)(void *priv);
    const pk_cv_ops *ops; /* the backend's own table (its run) */
} pk_cv_host_plan;

pk_status pk_cv_host_create(const pk_cv_desc *desc, pk_cv_host_plan **plan);
pk_status pk_cv_host_upload(void *impl, const float *image, double *seconds);
pk_status pk_cv_host_download(void *impl, float *out, double *seconds);
/** The host backends' execute: the run reads the caller's image and writes its out (swapped
 *  in for the plan's arrays), nothing copied in or out.  Every host variant reads the image
 *  only through its own working storage (halo rings of min(kh, h) wrapped rows, or the FFT's
 *  padded transform input, both filled inside the run and timed as kernel) and writes each
 *  output pixel once, so no alignment is needed; an out that overlaps the image (in place)
 *  goes through the plan's arrays instead (upload, run, download: transfer). */
pk_status pk_cv_host_execute(void *impl, const float *image, float *out, double *kernel_seconds,
                             double *transfer_seconds);
void pk_cv_host_destroy(void *impl);

/* The reference (lib/ref/conv2d_ref.c): modulo indexing, double accumulation. */
void pk_cv_ref(const pk_cv_desc *d, const float *image, const float *psf, float *out);

/* ext[x] = row[(x - shift) % w] for x in [0, n) (true modulo: any shift and n >= 1). */
void pk_cv_wrap_row(const float *row, int w, int shift, int n, float *ext);

/* Halo rings: the wrapped rows (w + kw - 1 floats, see pk_cv_wrap_row with shift b) that
 * the output rows of a band need.  Output row oi reads "virtual" rows v = oi + k, k < kh,
 * i.e. source row (v - a) % h.  Slot v % slots holds row v; slots = min(kh + rows - 1, h) for
 * blocks of `rows` output rows, so a PSF taller than the image keeps one copy of every source
 * row.  A slot's floats past w + kw - 1 are zero (room for a last vector of up to 16 lanes). */
typedef struct pk_cv_ring {
    float *buf;
    size_t stride; /* floats per slot (a multiple of 16) */
    int slots;
} pk_cv_ring;

size_t pk_cv_ring_floats(const pk_cv_desc *d, int rows); /* what one ring needs */
void pk_cv_ring_init(pk_cv_ring *r, const pk_cv_desc *d, int rows, float *buf);
/* Build what output row oi needs: all rows when first, else only row oi + kh - 1. */
void pk_cv_ring_advance(pk_cv_ring *r, const pk_cv_desc *d, const float *image, int oi, int first);
static inline const float *pk_cv_ring_row(const pk_cv_ring *r, int v)
{
    return r->buf + (size_t)(v % r->slots) * r->stride;
}

/* Backend entry points. */
pk_status pk_serial_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl);
pk_status pk_serial_cv_run(void *impl, double *seconds);
pk_status pk_omp_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl);
pk_status pk_omp_cv_run(void *impl, double *seconds);

#endif
