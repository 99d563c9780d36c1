/* su3_serial.c - the plain C su3 kernels, one loop per layout (docs/KERNELS.md section 4b), and
 * the serial backend's variant "serial" (those loops on one thread).  The OpenMP variant
 * "omp" runs the same loops on its threads' share of the sites.
 *
 * The loops are what an application programmer writes: one site at a time through one
 * inline body (s3_site) that only differs in the strides of the layout, the missing link
 * elements rebuilt into a local matrix first (short, recon12).  Vectorisation is left to
 * the compiler (-O3; an AVX2+FMA clone is picked at load time, PK_SIMD_CLONES): this is the
 * paper's "auto-vectorised" column, measured against the hand-vectorised kernels of
 * omp/su3_omp.c.  Only hvfo gives it an easy inner loop (the nw lanes of a block, unit
 * stride in every array); AoS keeps the sites' complex numbers interleaved, vfo interleaves
 * re and im of consecutive sites. */
#include "su3_host.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#define S3_UNROLL(n) _Pragma(#n)
#define S3_INLINE static inline __attribute__((always_inline))
#else
#define S3_UNROLL(n)
#define S3_INLINE static inline
#endif

/* One site: X[c][k] = sum_c' U[c][c'] P[c'][k].  Element e of U has its real part at
 * U[e * ue] and its imaginary part uim further; likewise P and X with pe, pim. */
S3_INLINE void s3_site(const double *restrict U, size_t ue, size_t uim, const double *restrict P,
                       double *restrict X, size_t pe, size_t pim)
{
    S3_UNROLL(GCC unroll 3)
    for (int c = 0; c < 3; ++c) {
        S3_UNROLL(GCC unroll 4)
        for (int k = 0; k < 4; ++k) {
            double re = 0.0, im = 0.0;
            S3_UNROLL(GCC unroll 3)
            for (int cp = 0; cp < 3; ++cp) {
                const size_t e = (size_t)(3 * c + cp) * ue, f = (size_t)(4 * cp + k) * pe;
                const double ur = U[e], ui = U[e + uim], pr = P[f], pi = P[f + pim];
                re += ur * pr - ui * pi;
                im += ur * pi + ui * pr;
            }
            X[(size_t)(4 * c + k) * pe] = re;
            X[(size_t)(4 * c + k) * pe + pim] = im;
        }
    }
}

/* One hvfo block (lane w of element e: re at 2 e nw + w, im nw later), the lanes innermost:
 * unit stride in every array, the loop an application writes for this layout. */
S3_INLINE void s3_hvfo_block(size_t nw, const double *restrict U, const double *restrict P,
                             double *restrict X)
{
    const size_t two = 2 * nw; /* doubles per complex element */
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 4; ++k) {
            const double *r0 = U + (size_t)(3 * c) * two, *i0 = r0 + nw;
            const double *r1 = r0 + two, *i1 = r1 + nw, *r2 = r1 + two, *i2 = r2 + nw;
            const double *p0 = P + (size_t)k * two, *q0 = p0 + nw;
            const double *p1 = p0 + 4 * two, *q1 = p1 + nw, *p2 = p1 + 4 * two, *q2 = p2 + nw;
            double *xr = X + (size_t)(4 * c + k) * two, *xi = xr + nw;
            for (size_t w = 0; w < nw; ++w) {
                xr[w] = (r0[w] * p0[w] - i0[w] * q0[w]) + (r1[w] * p1[w] - i1[w] * q1[w]) +
                        (r2[w] * p2[w] - i2[w] * q2[w]);
                xi[w] = (r0[w] * q0[w] + i0[w] * p0[w]) + (r1[w] * q1[w] + i1[w] * p1[w]) +
                        (r2[w] * q2[w] + i2[w] * p2[w]);
            }
        }
}

/* Static: clang multiversions only functions whose callers see the attribute, so the
 * clones stay in this file and pk_s3_plain_range below is a plain entry point. */
PK_SIMD_CLONES
static void pk_s3_plain_range_clones(const pk_s3_desc *d, const double *u, const double *psi,
                                     double *chi, size_t s0, size_t s1)
{
    const size_t nw = (size_t)d->nw, nvs = d->nsites;
    const size_t us = pk_s3_u_stride(d);
    switch (d->layout) {
    case PK_SU3_AOS:
    case PK_SU3_PADDED:
        for (size_t s = s0; s < s1; ++s)
            s3_site(u + us * s, 2, 1, psi + 24 * s, chi + 24 * s, 2, 1);
        break;
    case PK_SU3_SHORT:
        for (size_t s = s0; s < s1; ++s) {
            double m[18];
            pk_s3_from_short(u + us * s, m);
            s3_site(m, 2, 1, psi + 24 * s, chi + 24 * s, 2, 1);
        }
        break;
    case PK_SU3_RECON12:
        for (size_t s = s0; s < s1; ++s) {
            double m[18];
            pk_s3_from_recon12(u + us * s, m);
            s3_site(m, 2, 1, psi + 24 * s, chi + 24 * s, 2, 1);
        }
        break;
    case PK_SU3_VFO: /* element e of site s at (e * nvs + s) complex */
        for (size_t s = s0; s < s1; ++s)
            s3_site(u + 2 * s, 2 * nvs, 1, psi + 2 * s, chi + 2 * s, 2 * nvs, 1);
        break;
    case PK_SU3_HVFO:
        for (size_t b = s0 / nw; b < s1 / nw; ++b)
            s3_hvfo_block(nw, u + 18 * nw * b, psi + 24 * nw * b, chi + 24 * nw * b);
        break;
    }
}

static void s3_serial_range(const pk_s3_host_plan *h, const pk_s3_desc *d, const double *u,
                            const double *psi, double *chi, size_t s0, size_t s1, int stream)
{
    (void)h;
    (void)stream;
    pk_s3_plain_range(d, u, psi, chi, s0, s1);
}

pk_status pk_serial_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl)
{
    pk_s3_host_plan *h;
    PK_TRY(pk_s3_host_alloc(desc, &h));
    h->nt = 1;
    h->range = s3_serial_range;
    h->ops = &pk_serial_s3_ops;
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_s3_run(void *impl, double *kernel_seconds)
{
    pk_s3_host_plan *h = impl;
    const double t0 = pk_now();
    pk_s3_plain_range(&h->d, h->u, h->psi, h->chi, 0, h->d.nsites);
    *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

void pk_s3_plain_range(const pk_s3_desc *d, const double *u, const double *psi, double *chi,
                       size_t s0, size_t s1)
{
    pk_s3_plain_range_clones(d, u, psi, chi, s0, s1);
}

/* The su3 kernel family on this backend (lib/internal.h, pk_s3_ops). */
const pk_s3_ops pk_serial_s3_ops = {
    .variants = "serial",
    .create = pk_serial_s3_create,
    .upload = pk_s3_host_upload,
    .run = pk_serial_s3_run,
    .download = pk_s3_host_download,
    .destroy = pk_s3_host_destroy,
    .execute = pk_s3_host_execute,
    .execute_canonical = pk_s3_host_execute_canonical,
};
