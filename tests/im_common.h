/* im_common.h - what tests/test_image.c and tests/test_im_cuda_emu.c share: the generated
 * cases (the generator's kernels, random visibility lists), the double pipeline of
 * docs/KERNELS.md 7.5 (pk_grid_reference_f64, an FFTW double transform with explicit shift
 * copies, the crop and correction in double) and the float rounding bounds of 7.5 computed
 * per case from the data.  Static functions: each including test uses what it needs.
 * Needs PK_HAVE_FFTW3 (FFTW double) and lib/gen/grid_gen.c. */
#ifndef PK_TEST_IM_COMMON_H
#define PK_TEST_IM_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/grid_gen.h"
#include "portkern.h"
#include "tap.h"

#ifdef PK_HAVE_FFTW3
#include <fftw3.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define U32 0x1.0p-24
static double gam(double n) { return n * U32 / (1 - n * U32); }
/* Higham, Accuracy and Stability, Theorem 24.2: a radix-2 FFT of n points (here n = g^2: the
 * 2-D transform is log2 g stages per axis) with twiddles exact to u is within
 * log2(n) eta / (1 - log2(n) eta), eta = u + gamma_4 (sqrt 2 + u), of the exact transform,
 * norm-wise.  The tests use powers of two. */
static double fft_eta(int g)
{
    const double l = log2((double)g * g), eta = U32 + gam(4) * (sqrt(2.0) + U32);
    return l * eta / (1 - l * eta);
}

/* ---- data ---------------------------------------------------------------------------------- */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}
static double nrand(void)
{
    double a = urand(), b = urand();
    if (a < 1e-300) a = 1e-300;
    return sqrt(-2 * log(a)) * cos(2 * M_PI * b);
}

typedef struct im_case {
    pk_image_params ip;
    pk_gg_kernels k;
    size_t n;
    float *uu, *vv, *ww, *vis, *wt;
    pk_grid_data d;
    double *corr, kappa; /* the library's correction */
} im_case;

static void case_free(im_case *c)
{
    pk_gg_kernels_free(&c->k);
    free(c->uu);
    free(c->vv);
    free(c->ww);
    free(c->vis);
    free(c->wt);
    free(c->corr);
    memset(c, 0, sizeof *c);
}

/* Kernels by the generator's recipe (1.7) for a g grid of an n-pixel image. */
static int case_kernels(im_case *c, double cell, int n, int g, int os, int conv, int planes,
                        double max_w)
{
    char why[256];
    pk_gg_kernel_params kp = {cell, n, g, os, conv, planes, max_w};
    if (pk_gg_kernels_make(&kp, &c->k, why, sizeof why) != PK_OK) {
        printf("Bail out! kernels: %s\n", why);
        exit(1);
    }
    pk_image_params_init(&c->ip);
    c->ip.grid.grid_size = g;
    c->ip.grid.oversample = os;
    c->ip.grid.cell_size_rad = cell;
    c->ip.grid.w_scale = c->k.w_scale;
    c->ip.grid.num_w_planes = planes;
    c->ip.grid.kernel_layout = PK_GRID_KERNELS_COMPACT;
    c->ip.image_size = n;
    c->corr = malloc((size_t)n * sizeof *c->corr);
    return pk_image_correction(&c->ip, c->k.support, c->k.compact, c->corr, &c->kappa) == PK_OK;
}

/* nv visibilities: |u|, |v| within frac of the grid's half width; oncell: at cell centres
 * exactly (g cell a power of two); sources (l, m, S) with w = 0. */
static void case_data(im_case *c, size_t nv, double frac, int oncell, const double (*src)[3],
                      int nsrc)
{
    const int g = c->ip.grid.grid_size;
    const double cell = c->ip.grid.cell_size_rad, uvcell = 1.0 / (g * cell);
    const float scale = (float)(g * cell);
    c->n = nv;
    c->uu = malloc(nv * sizeof(float));
    c->vv = malloc(nv * sizeof(float));
    c->ww = calloc(nv, sizeof(float));
    c->vis = malloc(2 * nv * sizeof(float));
    c->wt = malloc(nv * sizeof(float));
    for (size_t i = 0; i < nv; ++i) {
        double u, v;
        do {
            u = (2 * urand() - 1) * frac * g / 2;
            v = (2 * urand() - 1) * frac * g / 2;
        } while (u * u + v * v > (frac * g / 2) * (frac * g / 2));
        if (oncell) {
            c->uu[i] = (float)(round(u) / scale);
            c->vv[i] = (float)(round(v) / scale);
        } else {
            c->uu[i] = (float)(u * uvcell);
            c->vv[i] = (float)(v * uvcell);
        }
        c->wt[i] = (float)(0.5 + urand());
        double re = 0, im = 0;
        for (int s = 0; s < nsrc; ++s) {
            const double ph = -2 * M_PI * ((double)c->uu[i] * src[s][0] + (double)c->vv[i] * src[s][1]);
            re += src[s][2] * cos(ph);
            im += src[s][2] * sin(ph);
        }
        c->vis[2 * i] = (float)re;
        c->vis[2 * i + 1] = (float)im;
    }
    c->d.num_vis = nv;
    c->d.uu = c->uu;
    c->d.vv = c->vv;
    c->d.ww = c->ww;
    c->d.vis = c->vis;
    c->d.weight = c->wt;
}

/* ---- the double pipeline and the bound's ingredients (7.5) ---------------------------------- */
typedef struct im_oracle {
    double *img;        /* [n][n] */
    double *a;          /* [g][g]: A per cell (sum |vis weight|_1 |c|_1) */
    double norm, wsum;  /* gridder's norm (double reference), sum of gridded weights */
    double grid_l2;     /* ||grid||_2 */
    double a_l2;        /* ||A||_2, A per cell: sum |vis weight|_1 |c|_1 */
    double colmax;      /* max over cells of sum_i |c_ic|_1 */
    double rowmax;      /* max over planes and offsets of the footprint's sum |c|_1 */
    int nmax, lmax;     /* most footprints on a cell; largest (2s+1)^2 */
    double cinv;        /* max 1 / c over the image */
    double img_l2;
} im_oracle;

#ifdef PK_HAVE_FFTW3
/* F[k] = sum_a z[a] e^{sign 2 pi i (a - g/2) (k - g/2) / g}: both orders centred (index g/2 the
 * origin), by explicit shift copies around an FFTW double transform. */
static void fft_centred(fftw_complex *z, int g, int sign)
{
    fftw_complex *t = fftw_malloc(sizeof(fftw_complex) * (size_t)g * g);
    /* move index a (origin g/2) to a - g/2 mod g */
    for (int b = 0; b < g; ++b)
        for (int a = 0; a < g; ++a) {
            const size_t to = (size_t)((b + g / 2) % g) * g + (size_t)((a + g / 2) % g);
            t[to][0] = z[(size_t)b * g + a][0];
            t[to][1] = z[(size_t)b * g + a][1];
        }
    fftw_plan p = fftw_plan_dft_2d(g, g, t, t, sign, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    /* and the output back to the centred order: frequency k at index k + g/2 mod g */
    for (int b = 0; b < g; ++b)
        for (int a = 0; a < g; ++a) {
            const size_t from = (size_t)((b + g / 2) % g) * g + (size_t)((a + g / 2) % g);
            z[(size_t)b * g + a][0] = t[from][0];
            z[(size_t)b * g + a][1] = t[from][1];
        }
    fftw_free(t);
}
#endif

/* Abs-value stacks and lists for A, the cell counts and the column sums. */
static void oracle_make(const im_case *c, im_oracle *o)
{
    memset(o, 0, sizeof *o);
    const int g = c->ip.grid.grid_size, n = c->ip.image_size, os = c->ip.grid.oversample;
    const size_t cells = (size_t)g * g, nk = c->k.plane_offset[c->ip.grid.num_w_planes];
    const pk_grid_params *p = &c->ip.grid;
    double *grid = calloc(2 * cells, sizeof *grid);
    int64_t sk;
    pk_grid_reference_f64(p, c->k.support, c->k.compact, &c->d, grid, &o->norm, &sk);
    for (size_t i = 0; i < 2 * cells; ++i) o->grid_l2 += grid[i] * grid[i];
    o->grid_l2 = sqrt(o->grid_l2);
    for (size_t i = 0; i < c->n; ++i) {
        int u, v;
        if (pk_grid_locate(p, c->k.support, &c->d, i, &u, &v) >= 0) o->wsum += c->wt[i];
    }
    /* |K|_1 and 1 stacks, |vis weight|_1 and unit lists */
    float *kabs = malloc(2 * nk * sizeof(float)), *kone = malloc(2 * nk * sizeof(float));
    for (size_t i = 0; i < nk; ++i) {
        kabs[2 * i] = fabsf(c->k.compact[2 * i]) + fabsf(c->k.compact[2 * i + 1]);
        kone[2 * i] = 1;
        kabs[2 * i + 1] = kone[2 * i + 1] = 0;
    }
    float *vabs = malloc(2 * c->n * sizeof(float)), *vone = malloc(2 * c->n * sizeof(float));
    float *wone = malloc(c->n * sizeof(float)), *wabs = malloc(c->n * sizeof(float));
    for (size_t i = 0; i < c->n; ++i) {
        vabs[2 * i] = fabsf(c->vis[2 * i]) + fabsf(c->vis[2 * i + 1]);
        vone[2 * i] = 1;
        vabs[2 * i + 1] = vone[2 * i + 1] = 0;
        wone[i] = 1;
        wabs[i] = fabsf(c->wt[i]);
    }
    pk_grid_data da = c->d;
    da.vis = vabs;
    da.weight = wabs;
    double *ga = calloc(2 * cells, sizeof *ga), nrm = 0;
    pk_grid_reference_f64(p, c->k.support, kabs, &da, ga, &nrm, &sk);
    o->a = malloc(cells * sizeof *o->a);
    for (size_t i = 0; i < cells; ++i) {
        o->a[i] = ga[2 * i];
        o->a_l2 += ga[2 * i] * ga[2 * i];
    }
    o->a_l2 = sqrt(o->a_l2);
    da.vis = vone;
    da.weight = wone;
    memset(ga, 0, 2 * cells * sizeof *ga);
    pk_grid_reference_f64(p, c->k.support, kabs, &da, ga, &nrm, &sk);
    for (size_t i = 0; i < cells; ++i) o->colmax = fmax(o->colmax, ga[2 * i]);
    memset(ga, 0, 2 * cells * sizeof *ga);
    pk_grid_reference_f64(p, c->k.support, kone, &da, ga, &nrm, &sk);
    for (size_t i = 0; i < cells; ++i) {
        const int cnt = (int)lround(ga[2 * i] / 1.0);
        if (cnt > 0) {
            /* ga counts footprints times (2s+1)^0: each footprint adds 1 per cell */
            if (cnt > o->nmax) o->nmax = cnt;
        }
    }
    for (int w = 0; w < p->num_w_planes; ++w) {
        const int s = c->k.support[w], m = os / 2 + s * os + 1;
        if ((2 * s + 1) * (2 * s + 1) > o->lmax) o->lmax = (2 * s + 1) * (2 * s + 1);
        const float *pl = kabs + 2 * c->k.plane_offset[w];
        for (int ov = -os / 2; ov <= os / 2; ++ov)
            for (int ou = -os / 2; ou <= os / 2; ++ou) {
                double sum = 0;
                for (int j = -s; j <= s; ++j)
                    for (int k = -s; k <= s; ++k)
                        sum += pl[2 * ((size_t)abs(ov + j * os) * m + (size_t)abs(ou + k * os))];
                o->rowmax = fmax(o->rowmax, sum);
            }
    }
    for (int x = 0; x < n; ++x) o->cinv = fmax(o->cinv, 1.0 / c->corr[x]);
#ifdef PK_HAVE_FFTW3
    fft_centred((fftw_complex *)grid, g, FFTW_BACKWARD);
    o->img = malloc((size_t)n * n * sizeof *o->img);
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            const int py = y - n / 2 + g / 2, px = x - n / 2 + g / 2; /* index of pixel 0 is g/2 */
            const double v = grid[2 * ((size_t)py * g + px)];
            o->img[(size_t)y * n + x] = o->norm != 0 ? v / (o->norm * c->corr[x] * c->corr[y]) : 0;
            o->img_l2 += o->img[(size_t)y * n + x] * o->img[(size_t)y * n + x];
        }
    o->img_l2 = sqrt(o->img_l2);
#endif
    free(grid);
    free(ga);
    free(kabs);
    free(kone);
    free(vabs);
    free(vone);
    free(wone);
    free(wabs);
}

/* 7.5: ||image - exact||_2 <= (cinv^2 / norm) g (gamma_{2 nmax + 8} ||A|| + eta (||grid|| +
 * gamma ||A||)) + gamma_6 ||image||. */
static double bound_image(const im_case *c, const im_oracle *o)
{
    const int g = c->ip.grid.grid_size;
    const double dg = gam(2.0 * o->nmax + 8) * o->a_l2;
    return o->cinv * o->cinv / o->norm * g * (dg + fft_eta(g) * (o->grid_l2 + dg)) +
           gam(6) * o->img_l2 * (1 + 1e-6);
}

static double l2(const double *a, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += a[i] * a[i];
    return sqrt(s);
}

/* The model placed and transformed in double, then pk_degrid_reference_f64 (7.3). */
static void degrid_oracle(const im_case *c, const float *model, double *vis, double *placed_l2,
                          double **grid_out)
{
    const int g = c->ip.grid.grid_size, n = c->ip.image_size;
    double *h = calloc(2 * (size_t)g * g, sizeof *h);
    double pl = 0;
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            const double v = model[(size_t)y * n + x] / (c->kappa * c->corr[x] * c->corr[y]);
            h[2 * ((size_t)(y - n / 2 + g / 2) * g + (size_t)(x - n / 2 + g / 2))] = v;
            pl += v * v;
        }
    *placed_l2 = sqrt(pl);
#ifdef PK_HAVE_FFTW3
    fft_centred((fftw_complex *)h, g, FFTW_FORWARD);
#endif
    int64_t sk;
    pk_degrid_reference_f64(&c->ip.grid, c->k.support, c->k.compact, h, &c->d, vis, &sk);
    if (grid_out)
        *grid_out = h;
    else
        free(h);
}

/* 7.5: ||vis - exact||_2 <= sqrt(colmax rowmax) g ||placed|| (gamma_5 + eta + sqrt2 gamma_{2L+2}) */
static double bound_degrid(const im_case *c, const im_oracle *o, double placed_l2)
{
    const int g = c->ip.grid.grid_size;
    return sqrt(o->colmax * o->rowmax) * g * placed_l2 *
           (gam(5) + fft_eta(g) * (1 + gam(5)) + sqrt(2.0) * gam(2.0 * o->lmax + 2)) * (1 + 1e-6);
}

/* 7.5, the adjoint relation's own bound for model x (h: its exact transform, the oracle's;
 * placed_l2: ||placed model||), with its terms printed. */
static double adjoint_tol(const im_case *c, const im_oracle *o_, const float *x, const double *h,
                          double placed_l2, const char *name)
{
    const im_oracle o = *o_;
    const int g = c->ip.grid.grid_size, n = c->ip.image_size;
    const size_t nn = (size_t)n * n;
    /* 7.5, the relation's own bound: with H = the exact transformed model (the oracle's),
     *   lhs: sum_i w_i |v_i| |dD_i| <= sqrt2 gamma_{2L+2} sum_c |H_c| A_c + ||dH|| ||A||,
     *        ||dH|| <= g (eta + gamma_5) ||placed||  (A: the list's abs-grid, |c|_1)
     *   rhs: (norm/kappa) |<X, dI>| <= gamma_{2 nmax + 8} sum_c |H_c|_1 A_c (the grid's
     *        rounding seen through <H, dgrid>) + ||placed|| eta g ||grid|| (the FFT) +
     *        gamma_6 (norm/kappa) sum |X| |I| (the crop) */
    double ha = 0, ha1 = 0, xi = 0;
    for (size_t i = 0; i < (size_t)g * g; ++i) {
        ha += hypot(h[2 * i], h[2 * i + 1]) * o.a[i];
        ha1 += (fabs(h[2 * i]) + fabs(h[2 * i + 1])) * o.a[i];
    }
    for (size_t i = 0; i < nn; ++i) xi += fabs(x[i] * o.img[i]);
    const double eta = fft_eta(g);
    const double tol = (sqrt(2.0) * gam(2.0 * o.lmax + 2) * ha +
                        g * (eta * (1 + gam(5)) + gam(5)) * placed_l2 * o.a_l2 +
                        gam(2.0 * o.nmax + 8) * ha1 +
                        placed_l2 * eta * g * (o.grid_l2 + gam(2.0 * o.nmax + 8) * o.a_l2) +
                        gam(6) * o.norm / c->kappa * xi) * (1 + 1e-6);
    tap_diag("%s: relation bound terms: degrid sums %.2e, degrid FFT %.2e, grid sums %.2e, "
             "image FFT %.2e, crop %.2e (nmax %d, Lmax %d)", name,
             sqrt(2.0) * gam(2.0 * o.lmax + 2) * ha,
             g * (eta * (1 + gam(5)) + gam(5)) * placed_l2 * o.a_l2, gam(2.0 * o.nmax + 8) * ha1,
             placed_l2 * eta * g * o.grid_l2, gam(6) * o.norm / c->kappa * xi, o.nmax, o.lmax);
    return tol;
}

/* ---- contexts ------------------------------------------------------------------------------ */
static pk_context *ctx_for(pk_backend_id b)
{
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_context_options_init(&opt);
    opt.backend = b;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        exit(1);
    }
    return ctx;
}

#endif /* PK_TEST_IM_COMMON_H */
