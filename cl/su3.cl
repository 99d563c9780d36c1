/* su3.cl - su3 (docs/KERNELS.md 4b): chi[s][c][k] = sum_c' u[s][c][c'] psi[s][c'][k], one
 * work-item per site, one kernel per layout family (the layouts of portkern.h):
 *   pk_s3_aos   aos, short, padded, recon12 (PK_S3_LAYOUT picks how the link is read and
 *               its missing elements rebuilt); psi and chi AoS [s][3][4] complex;
 *   pk_s3_vfo   element e of site s at complex index e * ns + s (ns: the padded row length):
 *               consecutive work-items read consecutive complex numbers (coalesced on GPUs);
 *   pk_s3_hvfo  lane w = s % nw of block s / nw: re at (block * E + e) * 2 nw + w, im nw
 *               later: consecutive work-items read consecutive doubles.
 * Every kernel covers the padded sites [0, n) (the padding holds zeros and yields zeros);
 * the global size is rounded up to the work-group size, so items past n return at once.
 * Sums run c' = 0, 1, 2 as in the reference; indices are ulong (arrays of any size).
 *
 * Build option: PK_S3_LAYOUT (0 aos, 1 short, 2 padded, 5 recon12; vfo and hvfo ignore it). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef PK_S3_LAYOUT
#define PK_S3_LAYOUT 0
#endif

static inline double2 s3_mul(double2 a, double2 b)
{
    return (double2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

static inline double2 s3_conj(double2 a) { return (double2)(a.x, -a.y); }

/* chi[c][k] for one site, from the link m[9] and psi: P(e) is psi element e = 4 c' + k. */
#define S3_SITE(m, P, X)                                                                      \
    for (int c = 0; c < 3; ++c)                                                               \
        for (int k = 0; k < 4; ++k) {                                                         \
            double2 a = s3_mul(m[3 * c], P(k));                                               \
            a += s3_mul(m[3 * c + 1], P(4 + k));                                              \
            a += s3_mul(m[3 * c + 2], P(8 + k));                                              \
            X(4 * c + k, a);                                                                  \
        }

__kernel void pk_s3_aos(__global const double *u, __global const double *psi,
                        __global double *chi, ulong n)
{
    const ulong s = get_global_id(0);
    if (s >= n) return;
    __global const double2 *U;
    double2 m[9];
#if PK_S3_LAYOUT == 1 /* short: 8 elements, u22 = conj(u00 u11 - u01 u10) */
    U = (__global const double2 *)u + 8 * s;
    for (int e = 0; e < 8; ++e) m[e] = U[e];
    m[8] = s3_conj(s3_mul(m[0], m[4]) - s3_mul(m[1], m[3]));
#elif PK_S3_LAYOUT == 5 /* recon12: rows 0, 1; u2i = conj(u0j u1k - u0k u1j), cyclic */
    U = (__global const double2 *)u + 6 * s;
    for (int e = 0; e < 6; ++e) m[e] = U[e];
    m[6] = s3_conj(s3_mul(m[1], m[5]) - s3_mul(m[2], m[4]));
    m[7] = s3_conj(s3_mul(m[2], m[3]) - s3_mul(m[0], m[5]));
    m[8] = s3_conj(s3_mul(m[0], m[4]) - s3_mul(m[1], m[3]));
#else /* aos: 9 elements per site; padded: 12 (9 and 3 zeros) */
    U = (__global const double2 *)u + (PK_S3_LAYOUT == 2 ? 12 : 9) * s;
    for (int e = 0; e < 9; ++e) m[e] = U[e];
#endif
    __global const double2 *P = (__global const double2 *)psi + 12 * s;
    __global double2 *X = (__global double2 *)chi + 12 * s;
#define P_AOS(e) P[e]
#define X_AOS(e, v) X[e] = (v)
    S3_SITE(m, P_AOS, X_AOS)
}

__kernel void pk_s3_vfo(__global const double2 *u, __global const double2 *psi,
                        __global double2 *chi, ulong ns)
{
    const ulong s = get_global_id(0);
    if (s >= ns) return;
    double2 m[9];
    for (int e = 0; e < 9; ++e) m[e] = u[(ulong)e * ns + s];
#define P_VFO(e) psi[(ulong)(e) * ns + s]
#define X_VFO(e, v) chi[(ulong)(e) * ns + s] = (v)
    S3_SITE(m, P_VFO, X_VFO)
}

__kernel void pk_s3_hvfo(__global const double *u, __global const double *psi,
                         __global double *chi, ulong n, uint nw)
{
    const ulong s = get_global_id(0);
    if (s >= n) return;
    const ulong b = s / nw, w = s % nw;
    __global const double *U = u + 18 * nw * b + w, *P = psi + 24 * nw * b + w;
    __global double *X = chi + 24 * nw * b + w;
    double2 m[9];
    for (int e = 0; e < 9; ++e) m[e] = (double2)(U[2 * e * nw], U[(2 * e + 1) * nw]);
#define P_HV(e) (double2)(P[2 * (e) * nw], P[(2 * (e) + 1) * nw])
#define X_HV(e, v)                                                                            \
    do {                                                                                      \
        const double2 v_ = (v);                                                               \
        X[2 * (e) * nw] = v_.x;                                                               \
        X[(2 * (e) + 1) * nw] = v_.y;                                                         \
    } while (0)
    S3_SITE(m, P_HV, X_HV)
}
