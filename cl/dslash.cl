/* dslash.cl - the Wilson hopping operator of docs/KERNELS.md 4c, one work-item per site:
 *   chi(x) = diag psi(x)
 *          + 1/2 sum_mu [ (1 - gamma_mu) U_mu(x) psi(x+mu) + (1 + gamma_mu) U_mu(x-mu)^+ psi(x-mu) ]
 * with the spin projection of lib/dslash_host.h (DeGrand-Rossi): per term a half spinor
 * (two colour vectors) is formed from the neighbour, multiplied by the link or its adjoint,
 * and added to spins 0, 1 and, times +-1 or +-i, to spins 2, 3.  The table of the projection
 * is compiled in (constant arguments of an inlined function), so every unit multiply is a
 * sign flip or a re/im swap.
 *
 * Layouts: u [4][V][rows][3] double2 (rows 3, or 2 with PK_DS_RECON12: the third row
 * conj(row0 x row1) is rebuilt in private memory), psi and chi [V][4][3] double2, V = X Y Z
 * T, x fastest.  Build options: PK_DS_RECON12 0/1, PK_IDX int or long (site offsets). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT ON

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

#ifndef PK_DS_RECON12
#define PK_DS_RECON12 0
#endif
#define PK_DS_ROWS (PK_DS_RECON12 ? 2 : 3)

/* z i^k */
inline double2 ds_unit(double2 z, int k)
{
    switch (k & 3) {
    case 0: return z;
    case 1: return (double2)(-z.y, z.x);
    case 2: return -z;
    default: return (double2)(z.y, -z.x);
    }
}

inline double2 ds_mul(double2 a, double2 b)
{
    return (double2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* conj(a) b */
inline double2 ds_cmul(double2 a, double2 b)
{
    return (double2)(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

inline void ds_link(global const double2 *l, double2 m[3][3])
{
    for (int a = 0; a < PK_DS_ROWS; ++a)
        for (int b = 0; b < 3; ++b) m[a][b] = l[3 * a + b];
#if PK_DS_RECON12
    for (int j = 0; j < 3; ++j) {
        const int k = (j + 1) % 3, l2 = (j + 2) % 3;
        const double2 v = ds_mul(m[0][k], m[1][l2]) - ds_mul(m[0][l2], m[1][k]);
        m[2][j] = (double2)(v.x, -v.y);
    }
#endif
}

/* acc += (1 + s gamma) W p; projection (pr, a) and reconstruction (q, b) as in
 * lib/dslash_host.h, s = -1 (forward, W = U) or +1 (backward, W = U^+). */
inline void ds_term(double2 acc[12], global const double2 *p, const double2 m[3][3], int dagger,
                    int s, int pr0, int pr1, int a0, int a1, int q0, int q1, int b0, int b1)
{
    const int sh = s < 0 ? 2 : 0;
    double2 h[2][3], w[2][3];
    for (int c = 0; c < 3; ++c) {
        h[0][c] = p[c] + ds_unit(p[3 * pr0 + c], a0 + sh);
        h[1][c] = p[3 + c] + ds_unit(p[3 * pr1 + c], a1 + sh);
    }
    for (int k = 0; k < 2; ++k)
        for (int a = 0; a < 3; ++a) {
            double2 v = (double2)(0.0, 0.0);
            for (int b = 0; b < 3; ++b)
                v += dagger ? ds_cmul(m[b][a], h[k][b]) : ds_mul(m[a][b], h[k][b]);
            w[k][a] = v;
        }
    for (int a = 0; a < 3; ++a) {
        acc[a] += w[0][a];
        acc[3 + a] += w[1][a];
        acc[6 + a] += ds_unit(w[q0][a], b0 + sh);
        acc[9 + a] += ds_unit(w[q1][a], b1 + sh);
    }
}

/* Both terms of direction mu: neighbours fw, bw; link offsets of U_mu(x), U_mu(x - mu). */
#define DS_DIR(mu, pr0, pr1, a0, a1, q0, q1, b0, b1)                                          \
    do {                                                                                      \
        double2 m[3][3];                                                                      \
        ds_link(u + ((pk_idx)(mu) * vol + site) * (3 * PK_DS_ROWS), m);                        \
        ds_term(acc, psi + fw[mu] * 12, m, 0, -1, pr0, pr1, a0, a1, q0, q1, b0, b1);           \
        ds_link(u + ((pk_idx)(mu) * vol + bw[mu]) * (3 * PK_DS_ROWS), m);                      \
        ds_term(acc, psi + bw[mu] * 12, m, 1, +1, pr0, pr1, a0, a1, q0, q1, b0, b1);           \
    } while (0)

kernel void pk_ds_hop(global const double2 *restrict u, global const double2 *restrict psi,
                      global double2 *restrict chi, int X, int Y, int Z, int T, double diag)
{
    const pk_idx site = (pk_idx)get_global_id(0);
    const pk_idx vol = (pk_idx)X * Y * Z * T;
    if (site >= vol) return;
    const int x = (int)(site % X), y = (int)(site / X % Y), z = (int)(site / ((pk_idx)X * Y) % Z),
              t = (int)(site / ((pk_idx)X * Y * Z));
    const pk_idx sy = X, sz = (pk_idx)X * Y, st = (pk_idx)X * Y * Z;
    pk_idx fw[4], bw[4];
    fw[0] = x + 1 == X ? site - x : site + 1;
    bw[0] = x == 0 ? site + (X - 1) : site - 1;
    fw[1] = y + 1 == Y ? site - y * sy : site + sy;
    bw[1] = y == 0 ? site + (Y - 1) * sy : site - sy;
    fw[2] = z + 1 == Z ? site - z * sz : site + sz;
    bw[2] = z == 0 ? site + (Z - 1) * sz : site - sz;
    fw[3] = t + 1 == T ? site - t * st : site + st;
    bw[3] = t == 0 ? site + (T - 1) * st : site - st;

    double2 acc[12];
    for (int k = 0; k < 12; ++k) acc[k] = (double2)(0.0, 0.0);
    DS_DIR(0, 3, 2, 1, 1, 1, 0, 3, 3); /* x */
    DS_DIR(1, 3, 2, 2, 0, 1, 0, 0, 2); /* y */
    DS_DIR(2, 2, 3, 1, 3, 0, 1, 3, 1); /* z */
    DS_DIR(3, 2, 3, 0, 0, 0, 1, 0, 0); /* t */

    global const double2 *p = psi + site * 12;
    global double2 *c = chi + site * 12;
    for (int k = 0; k < 12; ++k) c[k] = diag * p[k] + 0.5 * acc[k];
}
