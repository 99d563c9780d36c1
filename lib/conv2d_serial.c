/* conv2d_serial.c - the serial backend's conv2d variants, one thread each: the first steps
 * of the StrayLight report (T. Tsiodras, "Optimizing StrayLight"):
 *   naive   the formula with modulo indexing, float sums (the report's start);
 *   serial  branch wrap instead of modulo, row pointers hoisted out of the tap loops;
 *   simd    wrapped halo rows (no wrap test in the loops) and one vectorised axpy per tap
 *           over the whole output row: acc[j] += c * halo[j + l].
 * The OpenMP backend's omp variant is the next step (omp/conv2d_omp.c). */
#include "conv2d_host.h"

#include <stdlib.h>
#include <string.h>

enum { CV_SIMD, CV_SERIAL, CV_NAIVE };

static void cv_naive(const pk_cv_desc *d, const float *image, const float *psf, float *out)
{
    const int h = d->h, w = d->w, kh = d->kh, kw = d->kw;
    for (int i = 0; i < h; ++i)
        for (int j = 0; j < w; ++j) {
            float s = 0.0f;
            for (int k = 0; k < kh; ++k)
                for (int l = 0; l < kw; ++l)
                    s += image[(size_t)((i + k) % h) * w + (j + l) % w] * psf[k * kw + l];
            out[(size_t)((i + kh / 2) % h) * w + (j + kw / 2) % w] = s;
        }
}

static void cv_serial(const pk_cv_desc *d, const float *image, const float *psf, float *out)
{
    const int h = d->h, w = d->w, kh = d->kh, kw = d->kw;
    for (int i = 0; i < h; ++i) {
        float *orow = out + (size_t)((i + kh / 2) % h) * w;
        int oc = kw / 2 % w;
        for (int j = 0; j < w; ++j) {
            float s = 0.0f;
            int r = i;
            for (int k = 0; k < kh; ++k) {
                const float *row = image + (size_t)r * w, *pk = psf + (size_t)k * kw;
                int c = j;
                for (int l = 0; l < kw; ++l) {
                    s += row[c] * pk[l];
                    if (__builtin_expect(++c == w, 0)) c = 0;
                }
                if (__builtin_expect(++r == h, 0)) r = 0;
            }
            orow[oc] = s;
            if (++oc == w) oc = 0;
        }
    }
}

/* acc[0..w) += c * src[0..w) */
PK_SIMD_CLONES
static void axpy(float *restrict acc, const float *restrict src, float c, int w)
{
#pragma omp simd
    for (int j = 0; j < w; ++j) acc[j] += c * src[j];
}

static void cv_simd(const pk_cv_desc *d, const float *image, const float *psf, float *out,
                    float *ring_buf)
{
    pk_cv_ring ring;
    pk_cv_ring_init(&ring, d, 1, ring_buf);
    for (int oi = 0; oi < d->h; ++oi) {
        pk_cv_ring_advance(&ring, d, image, oi, oi == 0);
        float *acc = out + (size_t)oi * d->w;
        memset(acc, 0, (size_t)d->w * sizeof(float));
        for (int k = 0; k < d->kh; ++k) {
            const float *src = pk_cv_ring_row(&ring, oi + k);
            for (int l = 0; l < d->kw; ++l) axpy(acc, src + l, psf[(size_t)k * d->kw + l], d->w);
        }
    }
}

static int cv_variant_id(const char *v)
{
    if (strcmp(v, "naive") == 0) return CV_NAIVE;
    if (strcmp(v, "serial") == 0) return CV_SERIAL;
    return CV_SIMD;
}

pk_status pk_serial_cv_create(void *state, int device, const pk_cv_desc *desc, void **impl)
{
    pk_cv_host_plan *h;
    PK_TRY(pk_cv_host_create(desc, &h));
    h->nt = 1;
    h->ops = &pk_serial_cv_ops;
    if (cv_variant_id(h->variant) == CV_SIMD) {
        const size_t floats = pk_cv_ring_floats(desc, 1);
        h->priv = floats <= SIZE_MAX / sizeof(float) ? pk_alloc_aligned(floats * sizeof(float)) : NULL;
        h->priv_free = pk_free_aligned;
        if (!h->priv) {
            pk_cv_host_destroy(h);
            return pk_fail(PK_ENOMEM, "conv2d simd: cannot allocate %zu floats of halo rows", floats);
        }
    }
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_cv_run(void *impl, double *seconds)
{
    pk_cv_host_plan *h = impl;
    double t0 = pk_now();
    switch (cv_variant_id(h->variant)) {
    case CV_NAIVE: cv_naive(&h->d, h->image, h->psf, h->out); break;
    case CV_SERIAL: cv_serial(&h->d, h->image, h->psf, h->out); break;
    default: cv_simd(&h->d, h->image, h->psf, h->out, h->priv);
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The conv2d kernel family on this backend (lib/internal.h, pk_cv_ops). */
const pk_cv_ops pk_serial_cv_ops = {
    .variants = "simd,serial,naive",
    .create = pk_serial_cv_create,
    .upload = pk_cv_host_upload,
    .run = pk_serial_cv_run,
    .download = pk_cv_host_download,
    .destroy = pk_cv_host_destroy,
    .execute = pk_cv_host_execute,
};
