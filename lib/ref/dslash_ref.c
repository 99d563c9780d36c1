/* dslash_ref.c - the serial reference of docs/KERNELS.md 4c, written for clarity and
 * independent of the spin-projection tricks of the backends: full 4x4 gamma matrices, full
 * 3x3 links, every term a full 4-spinor:
 *   chi(x) = 1/(2 kappa) psi(x)
 *          + 1/2 sum_mu [ (1 - gamma_mu) U_mu(x) psi(x+mu) + (1 + gamma_mu) U_mu(x-mu)^+ psi(x-mu) ]
 * (the source paper's plus sign; the common convention, M = 1/(2 kappa) - 1/2 D, has a minus).
 * Links are always the full matrices as given: recon12 only says how a backend stores them. */
#include "dslash_host.h"

#include <complex.h>

/* DeGrand-Rossi, exactly as docs/KERNELS.md 4c prints them: gamma[mu][row][col]. */
static const double complex ds_gamma[4][4][4] = {
    {{0, 0, 0, I}, {0, 0, I, 0}, {0, -I, 0, 0}, {-I, 0, 0, 0}},  /* x */
    {{0, 0, 0, -1}, {0, 0, 1, 0}, {0, 1, 0, 0}, {-1, 0, 0, 0}},  /* y */
    {{0, 0, I, 0}, {0, 0, 0, -I}, {-I, 0, 0, 0}, {0, I, 0, 0}},  /* z */
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}},    /* t */
};

/* Site index of (x, y, z, t), each already in range. */
static size_t ds_site(const int *L, const int c[4])
{
    return (((size_t)c[3] * (size_t)L[2] + (size_t)c[2]) * (size_t)L[1] + (size_t)c[1]) *
               (size_t)L[0] + (size_t)c[0];
}

/* The site one step from c along mu (step +1 or -1), periodic. */
static size_t ds_hop(const int *L, const int c[4], int mu, int step)
{
    int n[4] = {c[0], c[1], c[2], c[3]};
    n[mu] = (n[mu] + step + L[mu]) % L[mu];
    return ds_site(L, n);
}

/* term[s][a] += (1 + sign gamma_mu) V, with V[s][a] = sum_b W[a][b] p[s][b], where W is the
 * link (dagger = 0) or its conjugate transpose (dagger = 1). */
static void ds_add_term(double complex term[4][3], int mu, double sign, const double complex *w,
                        int dagger, const double complex *p)
{
    double complex v[4][3];
    for (int s = 0; s < 4; ++s)
        for (int a = 0; a < 3; ++a) {
            double complex acc = 0;
            for (int b = 0; b < 3; ++b)
                acc += (dagger ? conj(w[3 * b + a]) : w[3 * a + b]) * p[3 * s + b];
            v[s][a] = acc;
        }
    for (int s = 0; s < 4; ++s)
        for (int a = 0; a < 3; ++a) {
            double complex g = 0;
            for (int r = 0; r < 4; ++r) g += ds_gamma[mu][s][r] * v[r][a];
            term[s][a] += v[s][a] + sign * g;
        }
}

void pk_ds_ref_apply(const pk_ds_desc *d, const double *u, const double *psi, double *chi)
{
    const int *L = d->dims;
    const size_t V = d->volume;
    const double complex *U = (const double complex *)u; /* [4][V][3][3] */
    const double complex *P = (const double complex *)psi; /* [V][4][3] */
    double complex *C = (double complex *)chi;
    const double diag = 1.0 / (2.0 * d->kappa);
    int c[4];
    for (c[3] = d->t0; c[3] < d->t1; ++c[3])
        for (c[2] = d->z0; c[2] < d->z1; ++c[2])
            for (c[1] = 0; c[1] < L[1]; ++c[1])
                for (c[0] = 0; c[0] < L[0]; ++c[0]) {
                    const size_t x = ds_site(L, c);
                    double complex sum[4][3] = {{0}};
                    for (int mu = 0; mu < 4; ++mu) {
                        const size_t fw = ds_hop(L, c, mu, +1), bw = ds_hop(L, c, mu, -1);
                        ds_add_term(sum, mu, -1.0, U + 9 * ((size_t)mu * V + x), 0, P + 12 * fw);
                        ds_add_term(sum, mu, +1.0, U + 9 * ((size_t)mu * V + bw), 1, P + 12 * bw);
                    }
                    for (int s = 0; s < 4; ++s)
                        for (int a = 0; a < 3; ++a)
                            C[12 * x + 3 * s + a] = diag * P[12 * x + 3 * s + a] + 0.5 * sum[s][a];
                }
}
