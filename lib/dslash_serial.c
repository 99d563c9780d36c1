/* dslash_serial.c - the spin-projected Wilson hopping kernel on lexicographic data (the
 * serial backend's "serial" variant; the OpenMP "omp" variant runs pk_ds_rows per thread).
 *
 * Per site and direction: project the neighbour 4-spinor to a half spinor (dslash_host.h),
 * multiply its two colour vectors by U_mu(x) (forward) or U_mu(x-mu)^+ (backward), add the
 * two products to spins 0, 1 of the sum and their multiples by +-1 / +-i to spins 2, 3.
 * recon12 links arrive as two rows; the third, conj(row0 x row1), is rebuilt per use in
 * registers (SU(3): unitary with det 1; other matrices do not survive the compression).
 * The scalar code is written so that, once the loop over mu is unrolled, every table entry
 * is a constant and the unit multiplies are sign flips and re/im swaps. */
#include "dslash_host.h"

#include <string.h>

#if defined(__GNUC__)
#define DS_INLINE static inline __attribute__((always_inline))
#define DS_UNROLL _Pragma("GCC unroll 4")
#else
#define DS_INLINE static inline
#define DS_UNROLL
#endif

typedef struct ds_c {
    double re, im;
} ds_c;

/* z i^k */
DS_INLINE ds_c ds_unit(ds_c z, int k)
{
    switch (k & 3) {
    case 0: return z;
    case 1: return (ds_c){-z.im, z.re};
    case 2: return (ds_c){-z.re, -z.im};
    default: return (ds_c){z.im, -z.re};
    }
}

/* The link at `l` (12 or 18 doubles) as a full 3x3 matrix. */
DS_INLINE void ds_link(const double *l, int recon12, ds_c m[3][3])
{
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 3; ++b) m[a][b] = (ds_c){l[6 * a + 2 * b], l[6 * a + 2 * b + 1]};
    if (!recon12) {
        for (int b = 0; b < 3; ++b) m[2][b] = (ds_c){l[12 + 2 * b], l[13 + 2 * b]};
        return;
    }
    for (int j = 0; j < 3; ++j) { /* row2_j = conj(row0_k row1_l - row0_l row1_k), (j k l) cyclic */
        const int k = (j + 1) % 3, l2 = (j + 2) % 3;
        const ds_c a = m[0][k], b = m[1][l2], c = m[0][l2], e = m[1][k];
        m[2][j] = (ds_c){(a.re * b.re - a.im * b.im) - (c.re * e.re - c.im * e.im),
                         -((a.re * b.im + a.im * b.re) - (c.re * e.im + c.im * e.re))};
    }
}

/* acc += (1 + s gamma_mu) W p, W = m (dagger 0) or m^+ (dagger 1), s = -1 or +1. */
DS_INLINE void ds_term(ds_c acc[4][3], const pk_ds_proj *P, int s, const ds_c m[3][3],
                       int dagger, const double *p)
{
    const int sh = s < 0 ? 2 : 0; /* s i^k = i^(k + sh) */
    ds_c h[2][3], w[2][3];
    for (int k = 0; k < 2; ++k)
        for (int a = 0; a < 3; ++a) {
            const ds_c x = {p[6 * k + 2 * a], p[6 * k + 2 * a + 1]};
            const ds_c y = ds_unit((ds_c){p[6 * P->pr[k] + 2 * a], p[6 * P->pr[k] + 2 * a + 1]},
                                   P->a[k] + sh);
            h[k][a] = (ds_c){x.re + y.re, x.im + y.im};
        }
    for (int k = 0; k < 2; ++k)
        for (int a = 0; a < 3; ++a) {
            double re = 0, im = 0;
            for (int b = 0; b < 3; ++b) {
                const ds_c e = dagger ? (ds_c){m[b][a].re, -m[b][a].im} : m[a][b];
                re += e.re * h[k][b].re - e.im * h[k][b].im;
                im += e.re * h[k][b].im + e.im * h[k][b].re;
            }
            w[k][a] = (ds_c){re, im};
        }
    for (int a = 0; a < 3; ++a) {
        for (int k = 0; k < 2; ++k) {
            acc[k][a].re += w[k][a].re;
            acc[k][a].im += w[k][a].im;
            const ds_c r = ds_unit(w[P->q[k]][a], P->b[k] + sh);
            acc[2 + k][a].re += r.re;
            acc[2 + k][a].im += r.im;
        }
    }
}

/* Static: clang multiversions only functions whose callers see the attribute, so the
 * clones stay in this file and pk_ds_rows below is a plain entry point. */
PK_SIMD_CLONES
static void pk_ds_rows_clones(const pk_ds_desc *d, const double *u, const double *psi,
                              double *chi, size_t r0, size_t r1)
{
    const size_t X = (size_t)d->dims[0], Y = (size_t)d->dims[1], Z = (size_t)d->dims[2],
                 T = (size_t)d->dims[3], V = d->volume;
    const size_t ls = (size_t)d->u_link; /* doubles from one link to the next */
    const double diag = 1.0 / (2.0 * d->kappa);
    for (size_t r = r0; r < r1; ++r) {
        const size_t y = r % Y, z = r / Y % Z, t = r / (Y * Z);
        /* rows one step away along y, z, t (periodic) */
        const size_t yf = y + 1 == Y ? r - y : r + 1, yb = y == 0 ? r + Y - 1 : r - 1;
        const size_t zr = Y, zf = z + 1 == Z ? r - z * zr : r + zr,
                     zb = z == 0 ? r + (Z - 1) * zr : r - zr;
        const size_t tr = Y * Z, tf = t + 1 == T ? r - t * tr : r + tr,
                     tb = t == 0 ? r + (T - 1) * tr : r - tr;
        const size_t rowf[4] = {r, yf, zf, tf}, rowb[4] = {r, yb, zb, tb};
        for (size_t x = 0; x < X; ++x) {
            const size_t site = r * X + x;
            const size_t xf = x + 1 == X ? 0 : x + 1, xb = x == 0 ? X - 1 : x - 1;
            ds_c acc[4][3];
            memset(acc, 0, sizeof acc);
            DS_UNROLL
            for (int mu = 0; mu < 4; ++mu) {
                const size_t fw = rowf[mu] * X + (mu == 0 ? xf : x);
                const size_t bw = rowb[mu] * X + (mu == 0 ? xb : x);
                ds_c m[3][3];
                ds_link(u + ls * ((size_t)mu * V + site), d->recon12, m);
                ds_term(acc, &pk_ds_proj_table[mu], -1, m, 0, psi + 24 * fw);
                ds_link(u + ls * ((size_t)mu * V + bw), d->recon12, m);
                ds_term(acc, &pk_ds_proj_table[mu], +1, m, 1, psi + 24 * bw);
            }
            const double *p = psi + 24 * site;
            double *c = chi + 24 * site;
            for (int k = 0; k < 4; ++k)
                for (int a = 0; a < 3; ++a) {
                    c[6 * k + 2 * a] = diag * p[6 * k + 2 * a] + 0.5 * acc[k][a].re;
                    c[6 * k + 2 * a + 1] = diag * p[6 * k + 2 * a + 1] + 0.5 * acc[k][a].im;
                }
        }
    }
}

pk_status pk_serial_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl)
{
    pk_ds_host_plan *h;
    PK_TRY(pk_ds_host_create(desc, desc->u_doubles, desc->spinor_doubles, &h));
    h->ops = &pk_serial_ds_ops;
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_ds_run(void *impl, double *kernel_seconds)
{
    pk_ds_host_plan *h = impl;
    const pk_ds_desc *d = &h->d;
    const double t0 = pk_now();
    const pk_ds_box b = pk_ds_box_of(d, d->dims);
    const size_t n = pk_ds_box_rows(&b);
    for (size_t k = 0, r, len; k < n; k += len) {
        len = pk_ds_box_run(&b, k, n, &r);
        pk_ds_rows(d, h->u, h->psi, h->chi, r, r + len);
    }
    *kernel_seconds = pk_now() - t0;
    return PK_OK;
}

void pk_ds_rows(const pk_ds_desc *d, const double *u, const double *psi, double *chi, size_t r0,
                size_t r1)
{
    pk_ds_rows_clones(d, u, psi, chi, r0, r1);
}

/* The dslash kernel family on this backend (lib/internal.h, pk_ds_ops). */
const pk_ds_ops pk_serial_ds_ops = {
    .variants = "serial",
    .create = pk_serial_ds_create,
    .upload = pk_ds_host_upload,
    .run = pk_serial_ds_run,
    .download = pk_ds_host_download,
    .destroy = pk_ds_host_destroy,
    .execute = pk_ds_host_execute,
};
