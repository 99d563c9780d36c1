/* conv2d_ref.c - the serial reference of docs/KERNELS.md section 5, written for clarity: the
 * formula as it stands (correlation, EDGE_WRAP by the mathematical modulo, output centred
 * by kh/2, kw/2), each sum accumulated in double and rounded to float once.  It is the
 * oracle of the tests; no variant is compared with anything else. */
#include "conv2d_host.h"

void pk_cv_ref(const pk_cv_desc *d, const float *image, const float *psf, float *out)
{
    const long h = d->h, w = d->w, kh = d->kh, kw = d->kw;
    for (long i = 0; i < h; ++i)
        for (long j = 0; j < w; ++j) {
            double s = 0.0;
            for (long k = 0; k < kh; ++k)
                for (long l = 0; l < kw; ++l)
                    s += (double)image[((i + k) % h) * w + (j + l) % w] * (double)psf[k * kw + l];
            out[((i + kh / 2) % h) * w + (j + kw / 2) % w] = (float)s;
        }
}
