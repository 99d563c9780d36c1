/* test_image.c - the dirty image and degridding (docs/KERNELS.md section 7) on every backend
 * this build has, against oracles of the test's own:
 *
 *  1. the grid correction against the generator's taper (an independent description of the
 *     same function: c(p) ~ psi(p / (g/2)) / psi(0)), and its refusals;
 *  2. (a) accuracy against a double pipeline written here (pk_grid_reference_f64, an FFTW
 *     double transform with explicit shift copies, the crop and correction in double), at the
 *     float rounding bound of 7.5; and against a direct DFT (the dirty image of the
 *     measurement equation) at the kernel bound of 7.4: tight for visibilities at cell
 *     centres (one offset class: I = I_dft (1 + eps) pixel by pixel), the triangle
 *     inequality over visibilities for random positions;
 *  3. (b) the adjoint relation <degrid X, W v> = (norm / kappa) <X, image v> on every grid
 *     variant and every degrid variant, at the bound of 7.5 (the two sides' rounding);
 *  4. (c) every backend's image and prediction against the double pipeline at the 7.5 bound
 *     (so two backends agree to twice it);
 *  5. (d) the three point sources of the generated `small` set (w-projection, 32 planes) at
 *     their pixels (the local maximum) with their DFT flux, within the per-visibility bound;
 *     a predicted point source against the analytic visibilities;
 *  6. bad input: image larger than the grid, an odd image, an inconsistent cell size, an
 *     image beyond the horizon, a complex or non-separable plane 0, a taper too narrow,
 *     NULL arrays, unknown variants; and PK_EUNSUPPORTED without FFTW;
 *  7. visibilities the gridder skips predict 0 and are counted on every degrid variant;
 *     plans executed twice give the same bits; an empty list images to zeros; two contexts
 *     on two threads at once give the single-threaded bits; the image as large as the grid.
 * Bounds are computed per case from the data (u = 2^-24, gamma_n = n u / (1 - n u)); the
 * measured errors are printed beside them. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <pthread.h>
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

#if defined(PK_HAVE_FFTW) && defined(PK_HAVE_FFTW3)
#include "im_common.h"

/* ---- contexts and variants -------------------------------------------------------------------- */
static const pk_backend_id backends[] = {PK_BACKEND_SERIAL, PK_BACKEND_OPENMP, PK_BACKEND_OPENCL,
                                         PK_BACKEND_CUDA};

/* Where the FFT ran (docs/KERNELS.md 7.7), from a run info: on CUDA on the device or the reason
 * why not; on OpenCL on the device (VkFFT) unless the library was built without VkFFT or the
 * test hook PORTKERN_TEST_NO_DEVICE_FFT forces the host FFT, which the reason must then say.
 * kind: "image" (stages zero, grid, fft, correct, transfer on OpenCL; grid, fft, correct,
 * transfer on CUDA) or "degrid" (place, fft, degrid, transfer). */
static void check_fft_where(pk_backend_id backend, const pk_run_info *info, const char *name,
                            const char *kind, const char *v)
{
    const int image = strcmp(kind, "image") == 0;
    if (backend == PK_BACKEND_CUDA) {
        const int fi = 1;
        ok((info->num_stages == 4 && strcmp(info->stage_name[fi], "fft") == 0 &&
            strstr(info->reason, "on the device") != NULL) ||
               strstr(info->reason, "no on-device FFT") != NULL,
           "%s: %s cuda/%s: the FFT on the device, or the reason why not: %s", name, kind, v,
           info->reason);
        return;
    }
    if (backend != PK_BACKEND_OPENCL) return;
    const char *hook = getenv("PORTKERN_TEST_NO_DEVICE_FFT");
    int device_fft = !(hook && *hook && strcmp(hook, "0") != 0);
#ifndef PK_HAVE_VKFFT
    device_fft = 0;
#endif
    if (device_fft)
        ok(info->num_stages == (image ? 5 : 4) &&
               strcmp(info->stage_name[image ? 2 : 1], "fft") == 0 &&
               strstr(info->reason, "VkFFT") != NULL && strstr(info->reason, "on the device"),
           "%s: %s opencl/%s: the FFT on the device (VkFFT), %d stages: %s", name, kind, v,
           info->num_stages, info->reason);
    else
        ok(strstr(info->reason, "no on-device FFT") != NULL &&
               strstr(info->reason, "FFT on the host") != NULL &&
               strcmp(info->stage_name[image ? 2 : 1], "fft rows") == 0,
           "%s: %s opencl/%s: the host FFT, and the reason says why: %s", name, kind, v,
           info->reason);
}

/* ---- 1. correction ---------------------------------------------------------------------------- */
static void test_correction(const im_case *c)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    double worst = 0;
    for (int x = 0; x < n; ++x) {
        const double t = pk_gg_spheroidal(fabs((x - n / 2) / (g / 2.0))) / pk_gg_spheroidal(0);
        worst = fmax(worst, fabs(c->corr[x] - t));
    }
    /* the kernel is the taper's transform truncated at 1e-3 of its peak and sampled: its
     * transform back is the taper to about that level (measured 2e-4 .. 2e-3) */
    ok(worst < 1e-2, "correction of g %d, N %d, os %d from plane 0 ~ the generator's taper "
       "psi(p / (g/2)) / psi(0): max diff %.2e (< 1e-2); kappa %.6f", g, n,
       c->ip.grid.oversample, worst, c->kappa);
    ok(c->corr[n / 2] == 1.0 && c->corr[n / 2 - 3] == c->corr[n / 2 + 3],
       "correction: c(0) = 1, symmetric");
}

/* ---- 2a. accuracy against the double pipeline, every grid variant of every backend ------ */
static void test_pipeline(const im_case *c, const char *name)
{
    im_oracle o;
    oracle_make(c, &o);
    const int n = c->ip.image_size;
    const size_t nn = (size_t)n * n;
    const double bound = bound_image(c, &o);
    float *img = malloc(nn * sizeof(float)), *ser = NULL;
    double *diff = malloc(nn * sizeof(double));
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; ++b) {
        pk_context *ctx = ctx_for(backends[b]);
        const char *why = NULL;
        if (!pk_backend_available(ctx, backends[b], &why)) {
            tap_skip(why, "%s: image on %s", name, pk_backend_name(backends[b]));
            pk_context_destroy(ctx);
            continue;
        }
        char variants[256];
        snprintf(variants, sizeof variants, "%s", pk_grid_variants(backends[b]));
        char *save = NULL;
        for (char *v = strtok_r(variants, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
            double norm = 0;
            int64_t sk = -1;
            pk_run_info info;
            const pk_status s = pk_image(ctx, &c->ip, v, c->k.support, c->k.compact, &c->d, img,
                                         &norm, &sk, &info);
            if (s != PK_OK) {
                ok(0, "%s: pk_image %s: %s", name, v, pk_last_error());
                continue;
            }
            if (!ser) { /* the serial variant comes first: (c) against it at twice the bound */
                ser = malloc(nn * sizeof(float));
                memcpy(ser, img, nn * sizeof(float));
            } else {
                for (size_t i = 0; i < nn; ++i) diff[i] = (double)img[i] - ser[i];
                const double e = l2(diff, nn);
                ok(e <= 2 * bound, "%s: image %s/%s vs serial/serial: ||diff|| %.3e <= twice the "
                   "bound %.3e", name, pk_backend_name(backends[b]), v, e, 2 * bound);
            }
            for (size_t i = 0; i < nn; ++i) diff[i] = img[i] - o.img[i];
            const double e = l2(diff, nn);
            ok(e <= bound && fabs(norm - o.norm) <= 1e-9 * fabs(o.norm),
               "%s: image %s/%s vs double pipeline: ||diff|| %.3e <= bound %.3e (%.2e of "
               "||image||); norm rel %.1e", name, pk_backend_name(backends[b]), v, e, bound,
               e / o.img_l2, fabs(norm - o.norm) / o.norm);
            check_fft_where(backends[b], &info, name, "image", v);
            if (strcmp(v, "serial") == 0 || strcmp(v, "omp-tiled") == 0 ||
                strcmp(v, "opencl-tiled") == 0 || backends[b] == PK_BACKEND_CUDA)
                tap_diag("  %s: stages %s %.4f %s %.4f %s %.4f %s %.4f s; reason: %s", v,
                         info.stage_name[0], info.stage_s[0], info.stage_name[1],
                         info.stage_s[1], info.stage_name[2], info.stage_s[2],
                         info.stage_name[3], info.stage_s[3], info.reason);
        }
        pk_context_destroy(ctx);
    }
    free(img);
    free(ser);
    free(diff);
    free(o.img);
    free(o.a);
}

/* ---- 2b. against the direct DFT ------------------------------------------------------------ */
/* I_dft(y, x) = sum_i w_i Re(V_i e^{+2 pi i (u l + v m)}) / sum w_i, l = -px cell, m = py cell;
 * over the visibilities the gridder keeps. */
static void dft_image(const im_case *c, double *out, double *outj)
{
    const int n = c->ip.image_size;
    const double cell = c->ip.grid.cell_size_rad;
    double *er = malloc(2 * (size_t)n * sizeof *er), *ec = malloc(2 * (size_t)n * sizeof *ec);
    double wsum = 0;
    memset(out, 0, (size_t)n * n * sizeof *out);
    memset(outj, 0, (size_t)n * n * sizeof *outj);
    for (size_t i = 0; i < c->n; ++i) {
        int gu, gv;
        if (pk_grid_locate(&c->ip.grid, c->k.support, &c->d, i, &gu, &gv) < 0) continue;
        wsum += c->wt[i];
        for (int x = 0; x < n; ++x) { /* e^{2 pi i u l}, l = -(x - n/2) cell */
            const double ph = 2 * M_PI * c->uu[i] * (-(x - n / 2) * cell);
            ec[2 * x] = cos(ph);
            ec[2 * x + 1] = sin(ph);
        }
        for (int y = 0; y < n; ++y) {
            const double ph = 2 * M_PI * c->vv[i] * ((y - n / 2) * cell);
            /* w V e^{i ph_y} */
            const double a = c->wt[i] * c->vis[2 * i], b = c->wt[i] * c->vis[2 * i + 1];
            er[2 * y] = a * cos(ph) - b * sin(ph);
            er[2 * y + 1] = a * sin(ph) + b * cos(ph);
        }
        for (int y = 0; y < n; ++y) {
            double *row = out + (size_t)y * n, *rowj = outj + (size_t)y * n;
            const double pr = er[2 * y], pi = er[2 * y + 1];
            for (int x = 0; x < n; ++x) {
                row[x] += pr * ec[2 * x] - pi * ec[2 * x + 1];
                rowj[x] += pr * ec[2 * x + 1] + pi * ec[2 * x];
            }
        }
    }
    for (size_t i = 0; i < (size_t)n * n; ++i) {
        out[i] /= wsum;
        outj[i] /= wsum;
    }
    free(er);
    free(ec);
}

/* The response of plane 0 for the gridder's offsets (ou, ov) at pixel (px, py), exactly from
 * the complex samples (no separability assumed):
 *   R_o(p) = sum_{j,k} K0[|ov + j os|][|ou + k os|] e^{2 pi i (k px + j py) / g}
 * through the row sums T[iy][ou][x] = sum_k K0[iy][|ou + k os|] e^{2 pi i k px / g}. */
typedef struct im_resp {
    int n, g, os, s, m;
    double *t;   /* complex [m][os + 1][n] */
    double *ey;  /* complex [n][2s + 1]: e^{2 pi i j py / g} */
} im_resp;

static void resp_make(const im_case *c, im_resp *r)
{
    r->n = c->ip.image_size;
    r->g = c->ip.grid.grid_size;
    r->os = c->ip.grid.oversample;
    r->s = c->k.support[0];
    r->m = r->os / 2 + r->s * r->os + 1;
    const int n = r->n, os = r->os, s = r->s, m = r->m, L = 2 * s + 1;
    r->t = malloc(2 * (size_t)m * (os + 1) * n * sizeof *r->t);
    r->ey = malloc(2 * (size_t)n * L * sizeof *r->ey);
    for (int iy = 0; iy < m; ++iy)
        for (int ou = -os / 2; ou <= os / 2; ++ou)
            for (int x = 0; x < n; ++x) {
                double re = 0, im = 0;
                for (int k = -s; k <= s; ++k) {
                    const float *kv = c->k.compact + 2 * ((size_t)iy * m + (size_t)abs(ou + k * os));
                    const double ph = 2 * M_PI * (double)k * (x - n / 2) / r->g;
                    re += kv[0] * cos(ph) - kv[1] * sin(ph);
                    im += kv[0] * sin(ph) + kv[1] * cos(ph);
                }
                double *t = r->t + 2 * (((size_t)iy * (os + 1) + (size_t)(ou + os / 2)) * n + x);
                t[0] = re;
                t[1] = im;
            }
    for (int y = 0; y < n; ++y)
        for (int j = -s; j <= s; ++j) {
            const double ph = 2 * M_PI * (double)j * (y - n / 2) / r->g;
            r->ey[2 * ((size_t)y * L + j + s)] = cos(ph);
            r->ey[2 * ((size_t)y * L + j + s) + 1] = sin(ph);
        }
}

static void resp_free(im_resp *r)
{
    free(r->t);
    free(r->ey);
}

/* R for offsets ou, ov in [-os/2, os/2] at pixel (x, y) */
static void resp_at(const im_resp *r, int ou, int ov, int x, int y, double *re, double *im)
{
    const int L = 2 * r->s + 1;
    double a = 0, b = 0;
    for (int j = -r->s; j <= r->s; ++j) {
        const double *t = r->t + 2 * (((size_t)abs(ov + j * r->os) * (r->os + 1) +
                                       (size_t)(ou + r->os / 2)) * r->n + x);
        const double *e = r->ey + 2 * ((size_t)y * L + j + r->s);
        a += t[0] * e[0] - t[1] * e[1];
        b += t[0] * e[1] + t[1] * e[0];
    }
    *re = a;
    *im = b;
}

/* The worst over the offsets of |rho R_o(p) e^{2 pi i o.p / (os g)} / (c c) - base| plus
 * rho |R_o| / (c c) |e^{i phi} - 1|, |phi| <= pi (|px| + |py|) / (os g): the nearest-offset
 * position error (7.4). */
static double resp_worst(const im_resp *r, const double *corr, double rho, double base_re,
                         double base_im, int x, int y)
{
    const int os = r->os, n = r->n, px = x - n / 2, py = y - n / 2;
    const double cc = corr[x] * corr[y];
    const double phmax = fmin(M_PI, M_PI * (abs(px) + abs(py)) / ((double)os * r->g));
    double worst = 0;
    for (int ov = -os / 2; ov <= os / 2; ++ov)
        for (int ou = -os / 2; ou <= os / 2; ++ou) {
            double rr, ri;
            resp_at(r, ou, ov, x, y, &rr, &ri);
            const double ph = 2 * M_PI * (ou * (double)px + ov * (double)py) / ((double)os * r->g);
            const double zr = rr * cos(ph) - ri * sin(ph), zi = rr * sin(ph) + ri * cos(ph);
            const double d = hypot(rho * zr / cc - base_re, rho * zi / cc - base_im) +
                             rho * hypot(zr, zi) / cc * 2 * sin(phmax / 2);
            worst = fmax(worst, d);
        }
    return worst;
}

static void test_dft(const im_case *c, const char *name, int oncell)
{
    im_oracle o;
    oracle_make(c, &o);
    const int n = c->ip.image_size;
    const size_t nn = (size_t)n * n;
    double *dft = malloc(nn * sizeof *dft), *dftj = malloc(nn * sizeof *dftj);
    dft_image(c, dft, dftj);
    im_resp r;
    resp_make(c, &r);
    const double rho = o.wsum / o.norm;
    /* eps_o(p) = rho R_o(p) e^{2 pi i (q - p).x / g} / (c c) - 1, split as in 7.4: offset 0's
     * part eps0 (common to every visibility: at cell centres the only one), and the rest,
     * bounded with the nearest-offset phase */
    double eps0 = 0, eps0i = 0, eta_l2 = 0;
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            double r0, i0;
            resp_at(&r, 0, 0, x, y, &r0, &i0);
            const double cc = c->corr[x] * c->corr[y];
            eps0 = fmax(eps0, fabs(rho * r0 / cc - 1));
            eps0i = fmax(eps0i, fabs(rho * i0 / cc));
            if (!oncell) {
                const double w = resp_worst(&r, c->corr, rho, rho * r0 / cc, rho * i0 / cc, x, y);
                eta_l2 += w * w;
            }
        }
    eta_l2 = sqrt(eta_l2);
    resp_free(&r);
    double sum_wv = 0;
    for (size_t i = 0; i < c->n; ++i) {
        int gu, gv;
        if (pk_grid_locate(&c->ip.grid, c->k.support, &c->d, i, &gu, &gv) < 0) continue;
        sum_wv += c->wt[i] * hypot(c->vis[2 * i], c->vis[2 * i + 1]);
    }
    const double dft_l2 = l2(dft, nn);
    const double fl = bound_image(c, &o) / dft_l2;
    /* Re(z (a + ib)) = a Re z - b Im z: ||e|| <= max|a| ||I|| + max|b| ||J|| + the rest */
    const double bound = eps0 + eps0i * l2(dftj, nn) / dft_l2 + (sum_wv / o.wsum) * eta_l2 / dft_l2 + fl;
    pk_context *ctx = ctx_for(PK_BACKEND_AUTO);
    float *img = malloc(nn * sizeof(float));
    double *diff = malloc(nn * sizeof *diff);
    const pk_status s = pk_image(ctx, &c->ip, NULL, c->k.support, c->k.compact, &c->d, img, NULL,
                                 NULL, NULL);
    for (size_t i = 0; i < nn; ++i) diff[i] = img[i] - dft[i];
    const double e = l2(diff, nn) / dft_l2;
    ok(s == PK_OK && e <= bound,
       "%s: image vs direct DFT (%zu vis, %s): relative L2 %.3e <= bound %.3e (offset 0's "
       "truncation and aliasing %.2e, other offsets %.2e, float %.1e)", name, c->n,
       oncell ? "at cell centres" : "random positions", e, bound, eps0,
       (sum_wv / o.wsum) * eta_l2 / dft_l2, fl);
    pk_context_destroy(ctx);
    free(img);
    free(diff);
    free(dft);
    free(dftj);
    free(o.img);
    free(o.a);
}

/* ---- 3, 4. adjointness and degrid accuracy on every backend ---------------------------------- */
static void test_adjoint(im_case *c, const char *name)
{
    const int n = c->ip.image_size;
    const size_t nn = (size_t)n * n;
    /* random model X and random visibilities v (weights as the case's) */
    float *x = malloc(nn * sizeof(float));
    for (size_t i = 0; i < nn; ++i) x[i] = (float)nrand();
    for (size_t i = 0; i < 2 * c->n; ++i) c->vis[i] = (float)nrand();
    im_oracle o;
    oracle_make(c, &o);
    double *dref = malloc(2 * c->n * sizeof *dref), placed_l2, *h = NULL;
    degrid_oracle(c, x, dref, &placed_l2, &h);
    const double eb_dg = bound_degrid(c, &o, placed_l2);
    const double tol = adjoint_tol(c, &o, x, h, placed_l2, name);
    free(h);
    float *img = malloc(nn * sizeof(float)), *vis = malloc(2 * c->n * sizeof(float)), *dser = NULL;
    double *diff = malloc(2 * c->n * sizeof *diff);
    /* the exact images' inner product, for the scale of the report */
    double rhs_exact = 0;
    for (size_t i = 0; i < nn; ++i) rhs_exact += x[i] * o.img[i];
    rhs_exact *= o.norm / c->kappa;
    /* every backend, and OpenMP again at each lower grid.isa (its gridding and gather loops:
     * AVX-512 where the CPU has it, else the compiler's) */
    static const struct {
        pk_backend_id backend;
        const char *isa;
    } runs[] = {{PK_BACKEND_SERIAL, NULL}, {PK_BACKEND_OPENMP, NULL},
                {PK_BACKEND_OPENMP, "avx2"}, {PK_BACKEND_OPENMP, "generic"},
                {PK_BACKEND_OPENCL, NULL},   {PK_BACKEND_CUDA, NULL}};
    for (size_t b = 0; b < sizeof runs / sizeof runs[0]; ++b) {
        const pk_backend_id be = runs[b].backend;
        pk_context *ctx = ctx_for(be);
        const char *why = NULL;
        if (!pk_backend_available(ctx, be, &why)) {
            tap_skip(why, "%s: adjointness on %s", name, pk_backend_name(be));
            pk_context_destroy(ctx);
            continue;
        }
        if (runs[b].isa && pk_context_set_param(ctx, "grid.isa", runs[b].isa) != PK_OK) {
            ok(0, "%s: grid.isa=%s: %s", name, runs[b].isa, pk_last_error());
            pk_context_destroy(ctx);
            continue;
        }
        char vname[64]; /* the variant as reported: "omp-tiled [grid.isa=avx2]" */
        const char *dvars = pk_degrid_variants(be);
        if (!dvars || !dvars[0]) {
            tap_skip("no degrid variant on this backend yet (CUDA: docs/KERNELS.md 7.6)",
                     "%s: degrid on %s", name, pk_backend_name(be));
        } else {
            char dv[128];
            snprintf(dv, sizeof dv, "%s", dvars);
            char *save = NULL;
            for (char *v = strtok_r(dv, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
                int64_t sk = -1;
                pk_run_info info;
                snprintf(vname, sizeof vname, "%s%s%s%s", v, runs[b].isa ? " [grid.isa=" : "",
                         runs[b].isa ? runs[b].isa : "", runs[b].isa ? "]" : "");
                pk_status s = pk_degrid(ctx, &c->ip, v, c->k.support, c->k.compact, x, &c->d,
                                        vis, &sk, &info);
                if (s != PK_OK) {
                    ok(0, "%s: pk_degrid %s: %s", name, v, pk_last_error());
                    continue;
                }
                if (!dser) { /* serial first: (c) against it at twice the bound */
                    dser = malloc(2 * c->n * sizeof(float));
                    memcpy(dser, vis, 2 * c->n * sizeof(float));
                } else {
                    for (size_t i = 0; i < 2 * c->n; ++i) diff[i] = (double)vis[i] - dser[i];
                    const double e = l2(diff, 2 * c->n);
                    ok(e <= 2 * eb_dg, "%s: degrid %s vs serial: ||diff|| %.3e <= twice the bound "
                       "%.3e", name, vname, e, 2 * eb_dg);
                }
                for (size_t i = 0; i < 2 * c->n; ++i) diff[i] = vis[i] - dref[i];
                const double e = l2(diff, 2 * c->n);
                ok(e <= eb_dg, "%s: degrid %s/%s vs double pipeline: ||diff|| %.3e <= bound %.3e "
                   "(%.2e of ||vis||)", name, pk_backend_name(be), vname, e, eb_dg,
                   e / l2(dref, 2 * c->n));
                tap_diag("  %s: stages %s %.4f %s %.4f %s %.4f s; reason: %s", v,
                         info.stage_name[0], info.stage_s[0], info.stage_name[1], info.stage_s[1],
                         info.stage_name[2], info.stage_s[2], info.reason);
                check_fft_where(be, &info, name, "degrid", v);
                /* the adjoint relation against every grid variant of the backend */
                char gv[256];
                snprintf(gv, sizeof gv, "%s", pk_grid_variants(be));
                char *save2 = NULL;
                for (char *gv_name = strtok_r(gv, ",", &save2); gv_name;
                     gv_name = strtok_r(NULL, ",", &save2)) {
                    double norm = 0;
                    if (pk_image(ctx, &c->ip, gv_name, c->k.support, c->k.compact, &c->d, img, &norm,
                                 NULL, NULL) != PK_OK) {
                        ok(0, "%s: pk_image %s: %s", name, gv_name, pk_last_error());
                        continue;
                    }
                    double lhs = 0, rhs = 0;
                    for (size_t i = 0; i < c->n; ++i)
                        lhs += c->wt[i] * ((double)vis[2 * i] * c->vis[2 * i] +
                                           (double)vis[2 * i + 1] * c->vis[2 * i + 1]);
                    for (size_t i = 0; i < nn; ++i) rhs += (double)x[i] * img[i];
                    rhs *= norm / c->kappa;
                    ok(fabs(lhs - rhs) <= tol,
                       "%s: <degrid_%s X, W v> = (norm/kappa) <X, image_%s v>: %.9e vs %.9e, "
                       "diff %.2e <= bound %.2e (%.1e and %.1e of the value)",
                       name, vname, gv_name, lhs, rhs, fabs(lhs - rhs), tol,
                       fabs(lhs - rhs) / fabs(rhs_exact), tol / fabs(rhs_exact));
                }
            }
        }
        pk_context_destroy(ctx);
    }
    free(x);
    free(img);
    free(vis);
    free(dser);
    free(diff);
    free(dref);
    free(o.img);
    free(o.a);
}

/* ---- 5. the generated set's point sources ------------------------------------------------ */
/* Visibility i's gridded contribution to pixel (px, py) of the image (before Re), from the
 * gridder's geometry (docs/KERNELS.md 1.2, restated here) and its taps, in double; 0 when
 * the gridder skips it. */
static int gridded_at(const im_case *c, size_t i, int px, int py, double sc, double *re,
                      double *im)
{
    const pk_grid_params *p = &c->ip.grid;
    const int g = p->grid_size, os = p->oversample;
    const float scale = (float)(g * p->cell_size_rad);
    const float uu = c->uu[i], vv = c->vv[i], ww = c->ww[i];
    const float pu = -uu * scale, pv = vv * scale, ru = roundf(pu), rv = roundf(pv);
    const float wf = roundf(sqrtf(fabsf(ww * (float)p->w_scale)));
    const int w = wf < p->num_w_planes - 1 ? (int)wf : p->num_w_planes - 1;
    const int sw = c->k.support[w], gu = (int)ru + g / 2, gv = (int)rv + g / 2;
    if (gu - sw < 0 || gu + sw >= g || gv - sw < 0 || gv + sw >= g) return 0;
    const int ou = (int)roundf((ru - pu) * os), ov = (int)roundf((rv - pv) * os);
    const int mw = os / 2 + sw * os + 1;
    const double cj = ww > 0 ? -1 : 1;
    double rr = 0, ri = 0;
    for (int j = -sw; j <= sw; ++j)
        for (int k = -sw; k <= sw; ++k) {
            const float *cf = c->k.compact + 2 * (c->k.plane_offset[w] +
                                                  (size_t)abs(ov + j * os) * mw +
                                                  (size_t)abs(ou + k * os));
            const double ph =
                2 * M_PI * ((double)(gu + k - g / 2) * px + (double)(gv + j - g / 2) * py) / g;
            const double cr = cf[0], ci = cf[1] * cj;
            rr += cr * cos(ph) - ci * sin(ph);
            ri += cr * sin(ph) + ci * cos(ph);
        }
    const double a = (double)(c->vis[2 * i] * c->wt[i]), b = (double)(c->vis[2 * i + 1] * c->wt[i]);
    *re = (a * rr - b * ri) / sc;
    *im = (a * ri + b * rr) / sc;
    return 1;
}

static void test_sources(void)
{
    pk_grid_gen_options go;
    pk_grid_gen_options_init(&go);
    go.dataset = "small";
    go.scale = 0.2; /* 10000 visibilities */
    pk_grid_dataset ds;
    if (pk_grid_generate(&go, &ds) != PK_OK) {
        ok(0, "pk_grid_generate(small): %s", pk_last_error());
        pk_grid_dataset_free(&ds);
        return;
    }
    /* a case viewing the data set's arrays */
    im_case c;
    memset(&c, 0, sizeof c);
    pk_image_params_init(&c.ip);
    c.ip.grid = ds.params;
    c.ip.image_size = ds.image_size;
    const int n = c.ip.image_size, g = c.ip.grid.grid_size, os = c.ip.grid.oversample;
    const int np = c.ip.grid.num_w_planes;
    const double cell = c.ip.grid.cell_size_rad;
    c.k.support = ds.support.data;
    c.k.compact = ds.kernels.data;
    c.k.plane_offset = malloc(((size_t)np + 1) * sizeof(size_t));
    c.k.plane_offset[0] = 0;
    for (int w = 0; w < np; ++w) {
        const size_t m = (size_t)(os / 2 + c.k.support[w] * os + 1);
        c.k.plane_offset[w + 1] = c.k.plane_offset[w] + m * m;
    }
    c.n = ds.data.num_vis;
    c.uu = (float *)ds.data.uu;
    c.vv = (float *)ds.data.vv;
    c.ww = (float *)ds.data.ww;
    c.vis = (float *)ds.data.vis;
    c.wt = (float *)ds.data.weight;
    c.d = ds.data;
    c.corr = malloc((size_t)n * sizeof *c.corr);
    pk_image_correction(&c.ip, c.k.support, c.k.compact, c.corr, &c.kappa);
    im_oracle o;
    oracle_make(&c, &o);
    const double fl = bound_image(&c, &o);
    pk_context *ctx = ctx_for(PK_BACKEND_AUTO);
    float *img = malloc((size_t)n * n * sizeof(float));
    double norm = 0;
    int64_t sk = 0;
    pk_status s = pk_image(ctx, &c.ip, NULL, c.k.support, c.k.compact, &c.d, img, &norm, &sk,
                           NULL);
    ok(s == PK_OK, "small set (%zu vis, %d planes, grid %d, image %d): pk_image: %s", c.n, np, g,
       n, s == PK_OK ? "ok" : pk_last_error());
    /* the generator's sources (lib/gen/grid_gen.c): (l, m) / l_max, flux */
    static const double src[3][3] = {{0.10, 0.05, 1.0}, {-0.45, 0.30, 0.5}, {0.55, -0.50, 0.7}};
    const double l_max = sin(cell) * n / 2;
    for (int k = 0; k < 3 && s == PK_OK; ++k) {
        const double l = src[k][0] * l_max, m = src[k][1] * l_max;
        const int ex = (int)lround(n / 2 - l / cell), ey = (int)lround(n / 2 + m / cell);
        int bx = ex, by = ey;
        for (int y = ey - 5; y <= ey + 5; ++y)
            for (int x = ex - 5; x <= ex + 5; ++x)
                if (img[(size_t)y * n + x] > img[(size_t)by * n + bx]) {
                    bx = x;
                    by = y;
                }
        ok(bx == ex && by == ey, "source %d (l %.4f, m %.4f, S %.1f): local maximum at pixel "
           "(y %d, x %d), expected (y %d, x %d)", k, l, m, src[k][2], by, bx, ey, ex);
        /* flux: the DFT at the pixel (true w), and per visibility the exact difference between
         * its gridded contribution (its w-plane's taps) and its DFT contribution: their sum
         * bounds |image - DFT| there (7.4, the triangle inequality), plus the float bound of
         * 7.5 (||.||_2 bounds any pixel) */
        const int px = ex - n / 2, py = ey - n / 2;
        const double pl = -px * cell, pm = py * cell, pn1 = sqrt(1 - pl * pl - pm * pm) - 1;
        const double sc = norm * c.corr[ex] * c.corr[ey];
        double wsum = 0, dft = 0, bound = 0;
        for (size_t i = 0; i < c.n; ++i) {
            double re, im;
            if (gridded_at(&c, i, px, py, sc, &re, &im)) wsum += c.wt[i];
        }
        for (size_t i = 0; i < c.n; ++i) {
            double re, im;
            if (!gridded_at(&c, i, px, py, sc, &re, &im)) continue;
            const double ph = 2 * M_PI * (c.uu[i] * pl + c.vv[i] * pm - c.ww[i] * pn1);
            const double dre = c.wt[i] * (c.vis[2 * i] * cos(ph) - c.vis[2 * i + 1] * sin(ph)) / wsum;
            const double dim = c.wt[i] * (c.vis[2 * i] * sin(ph) + c.vis[2 * i + 1] * cos(ph)) / wsum;
            dft += dre;
            bound += hypot(re - dre, im - dim);
        }
        const double got = img[(size_t)ey * n + ex];
        ok(fabs(got - dft) <= bound * (1 + 1e-9) + fl,
           "source %d: flux at its pixel %.5f, DFT %.5f (S %.1f with the others' sidelobes): "
           "|diff| %.2e <= per-visibility bound %.2e + float %.1e", k, got, dft, src[k][2],
           fabs(got - dft), bound, fl);
    }
    free(c.k.plane_offset);
    free(c.corr);
    free(o.img);
    free(o.a);
    free(img);
    pk_context_destroy(ctx);
    pk_grid_dataset_free(&ds);
}

/* A point source in a model predicts the analytic visibilities S e^{-2 pi i (u l + v m)}
 * (w = 0) within S B(p), B the worst over the gridder's offsets of |R_o(p) e^{i phi_o} /
 * (kappa c c) - 1| plus the nearest-offset phase (7.4), plus the float bound of 7.5. */
static void test_predict(im_case *c, const char *name)
{
    const int n = c->ip.image_size;
    const double cell = c->ip.grid.cell_size_rad, S = 2.5;
    const int x0 = n / 2 - n / 5, y0 = n / 2 + n / 7; /* px < 0: l > 0 */
    const int px = x0 - n / 2, py = y0 - n / 2;
    float *model = calloc((size_t)n * n, sizeof(float));
    model[(size_t)y0 * n + x0] = (float)S;
    im_resp r;
    resp_make(c, &r);
    /* |R_o e^{..} / (kappa c c) - 1| + the phase term: rho = 1 / kappa, base 1 */
    const double b = resp_worst(&r, c->corr, 1.0 / c->kappa, 1.0, 0.0, x0, y0);
    resp_free(&r);
    im_oracle o;
    oracle_make(c, &o);
    double *dref = malloc(2 * c->n * sizeof *dref), placed_l2;
    degrid_oracle(c, model, dref, &placed_l2, NULL);
    const double fl = bound_degrid(c, &o, placed_l2); /* bounds any one visibility too */
    pk_context *ctx = ctx_for(PK_BACKEND_AUTO);
    float *vis = malloc(2 * c->n * sizeof(float));
    int64_t sk = -1;
    const pk_status s = pk_degrid(ctx, &c->ip, NULL, c->k.support, c->k.compact, model, &c->d,
                                  vis, &sk, NULL);
    const double l = -px * cell, m = py * cell;
    double worst = 0;
    size_t zeros = 0;
    for (size_t i = 0; i < c->n; ++i) {
        int gu, gv;
        if (pk_grid_locate(&c->ip.grid, c->k.support, &c->d, i, &gu, &gv) < 0) {
            zeros += vis[2 * i] == 0 && vis[2 * i + 1] == 0;
            continue;
        }
        const double ph = -2 * M_PI * (c->uu[i] * l + c->vv[i] * m);
        worst = fmax(worst, hypot(vis[2 * i] - S * cos(ph), vis[2 * i + 1] - S * sin(ph)));
    }
    ok(s == PK_OK && worst <= S * b + fl && zeros == (size_t)sk,
       "%s: predicted point source S %.1f at (y %d, x %d): max |vis - S e^{-2 pi i (ul + vm)}| "
       "%.3e <= S B %.3e + float %.1e; %lld skipped, all 0", name, S, y0, x0, worst, S * b, fl,
       (long long)sk);
    pk_context_destroy(ctx);
    free(model);
    free(dref);
    free(vis);
    free(o.img);
    free(o.a);
}

/* Visibilities the gridder skips (off the grid, a NaN weight, a NaN w) predict 0 on every
 * degrid variant and are counted; the image counts them too and stays finite. */
static void test_skips(im_case *c)
{
    const float u0 = c->uu[0], w1 = c->wt[1], ww2 = c->ww[2];
    c->uu[0] = 1e9f;
    c->wt[1] = NAN;
    c->ww[2] = NAN;
    const int n = c->ip.image_size;
    float *model = malloc((size_t)n * n * sizeof(float)), *vis = malloc(2 * c->n * sizeof(float));
    float *ser = NULL;
    for (int i = 0; i < n * n; ++i) model[i] = (float)nrand();
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; ++b) {
        pk_context *ctx = ctx_for(backends[b]);
        const char *dv = pk_degrid_variants(backends[b]);
        if (!pk_backend_available(ctx, backends[b], NULL) || !dv || !dv[0]) {
            pk_context_destroy(ctx);
            continue;
        }
        char list[128];
        snprintf(list, sizeof list, "%s", dv);
        char *save = NULL;
        for (char *v = strtok_r(list, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
            int64_t sk = -1;
            for (size_t i = 0; i < 2 * c->n; ++i) vis[i] = 7.0f; /* every entry is written */
            const pk_status s = pk_degrid(ctx, &c->ip, v, c->k.support, c->k.compact, model,
                                          &c->d, vis, &sk, NULL);
            int same = 1;
            if (!ser) {
                ser = malloc(2 * c->n * sizeof(float));
                memcpy(ser, vis, 2 * c->n * sizeof(float));
            } else if (backends[b] == PK_BACKEND_OPENMP && !strcmp(v, "omp")) {
                /* the same compiled loop as serial's: the same bits (omp-tiled's vectorised
                 * rows and a device may associate or round otherwise: test 4 bounds them
                 * against serial) */
                same = memcmp(ser, vis, 2 * c->n * sizeof(float)) == 0;
            }
            ok(s == PK_OK && sk == 3 && vis[0] == 0 && vis[1] == 0 && vis[2] == 0 &&
                   vis[3] == 0 && vis[4] == 0 && vis[5] == 0 && isfinite(vis[6]) && same,
               "skips: degrid %s: %lld skipped (3), their vis 0%s", v, (long long)sk,
               backends[b] == PK_BACKEND_OPENMP && !strcmp(v, "omp")
                   ? (same ? ", the rest serial's bits" : ", the rest NOT serial's bits")
                   : "");
        }
        pk_context_destroy(ctx);
    }
    pk_context *ctx = ctx_for(PK_BACKEND_AUTO);
    int64_t sk = -1;
    const pk_status s = pk_image(ctx, &c->ip, NULL, c->k.support, c->k.compact, &c->d, model,
                                 NULL, &sk, NULL);
    int fin = 1;
    for (int i = 0; i < n * n; ++i) fin &= isfinite(model[i]) != 0;
    ok(s == PK_OK && sk == 3 && fin, "skips: image counts %lld skipped (3), all pixels finite",
       (long long)sk);
    pk_context_destroy(ctx);
    c->uu[0] = u0;
    c->wt[1] = w1;
    c->ww[2] = ww2;
    free(model);
    free(vis);
    free(ser);
}

/* Distinct contexts on distinct threads at once (lib/portkern.h): each thread images and
 * predicts with its own plans (the FFTW planner lock, per-call column buffers); the results
 * equal the single-threaded ones bit for bit (the same plans, the same order of operations). */
typedef struct im_thread_job {
    const im_case *c;
    const float *model;
    float *img, *vis;
    pk_status s;
} im_thread_job;

static void *im_thread_main(void *arg)
{
    im_thread_job *j = arg;
    pk_context *ctx = NULL;
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_OPENMP;
    opt.threads = 2;
    opt.flags = PK_OPT_IGNORE_ENV;
    j->s = pk_context_create(&ctx, &opt);
    for (int r = 0; r < 3 && j->s == PK_OK; ++r) {
        j->s = pk_image(ctx, &j->c->ip, NULL, j->c->k.support, j->c->k.compact, &j->c->d, j->img,
                        NULL, NULL, NULL);
        if (j->s == PK_OK)
            j->s = pk_degrid(ctx, &j->c->ip, NULL, j->c->k.support, j->c->k.compact, j->model,
                             &j->c->d, j->vis, NULL, NULL);
    }
    pk_context_destroy(ctx);
    return NULL;
}

static void test_threads(const im_case *c)
{
    const int n = c->ip.image_size;
    const size_t nn = (size_t)n * n;
    float *model = malloc(nn * sizeof(float));
    for (size_t i = 0; i < nn; ++i) model[i] = (float)nrand();
    im_thread_job jobs[3];
    for (int t = 0; t < 3; ++t) {
        jobs[t].c = c;
        jobs[t].model = model;
        jobs[t].img = malloc(nn * sizeof(float));
        jobs[t].vis = malloc(2 * c->n * sizeof(float));
        jobs[t].s = PK_EINTERNAL;
    }
    im_thread_main(&jobs[0]); /* the single-threaded result */
    pthread_t th[2];
    int started = 0;
    for (int t = 1; t < 3; ++t)
        started += pthread_create(&th[t - 1], NULL, im_thread_main, &jobs[t]) == 0;
    for (int t = 0; t < started; ++t) pthread_join(th[t], NULL);
    int same = started == 2;
    for (int t = 1; t < 3 && same; ++t)
        same = jobs[t].s == PK_OK && memcmp(jobs[t].img, jobs[0].img, nn * sizeof(float)) == 0 &&
               memcmp(jobs[t].vis, jobs[0].vis, 2 * c->n * sizeof(float)) == 0;
    ok(jobs[0].s == PK_OK && same,
       "threads: two contexts imaging and predicting at once give the single-threaded bits");
    for (int t = 0; t < 3; ++t) {
        free(jobs[t].img);
        free(jobs[t].vis);
    }
    free(model);
}

/* pk_image_from_grid: the image of the serial grid (pk_grid on a serial context, its norm) is
 * bitwise pk_image's on a serial context, on one thread and on the OpenMP context's; NULL
 * arrays refused. */
static void test_from_grid(const im_case *c, const char *name)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    const size_t nn = (size_t)n * n;
    pk_context *sc = ctx_for(PK_BACKEND_SERIAL), *oc = ctx_for(PK_BACKEND_AUTO);
    float *grid = calloc(2 * (size_t)g * g, sizeof(float));
    float *want = malloc(nn * sizeof(float)), *img = malloc(nn * sizeof(float));
    double norm = 0;
    int64_t sk = 0;
    pk_status s = pk_grid(sc, &c->ip.grid, NULL, c->k.support, c->k.compact, &c->d, grid, &norm,
                          &sk, NULL);
    if (s != PK_OK) tap_diag("%s: pk_grid: %s", name, pk_last_error());
    if (s == PK_OK)
        s = pk_image(sc, &c->ip, NULL, c->k.support, c->k.compact, &c->d, want, NULL, NULL, NULL);
    for (int t = 0; t < 2; ++t) {
        memset(img, 0xff, nn * sizeof(float));
        const pk_status si = pk_image_from_grid(t ? oc : NULL, &c->ip, c->k.support,
                                                c->k.compact, grid, norm, img);
        ok(s == PK_OK && si == PK_OK && memcmp(img, want, nn * sizeof(float)) == 0,
           "%s: pk_image_from_grid of the serial grid (%s) = serial pk_image, bitwise: %s", name,
           t ? "the auto context's threads" : "one thread",
           s != PK_OK || si != PK_OK ? pk_last_error() : "ok");
    }
    ok(pk_image_from_grid(NULL, &c->ip, c->k.support, c->k.compact, NULL, norm, img) ==
           PK_ENULL,
       "%s: pk_image_from_grid refuses a NULL grid", name);
    pk_context_destroy(sc);
    pk_context_destroy(oc);
    free(grid);
    free(want);
    free(img);
}

/* The host FFT's team is the context's: an OpenMP context of 3 threads says "3 threads" in
 * the run info of pk_image and pk_degrid (plans made with it). */
static void test_fft_threads(const im_case *c, const char *name)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_OPENMP;
    o.threads = 3;
    o.flags = PK_OPT_IGNORE_ENV;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &o) != PK_OK) {
        tap_skip(pk_last_error(), "%s: pk_image on a 3-thread OpenMP context", name);
        tap_skip(pk_last_error(), "%s: pk_degrid on a 3-thread OpenMP context", name);
        return;
    }
    const int n = c->ip.image_size;
    float *img = malloc((size_t)n * n * sizeof(float)), *vis = malloc(2 * c->n * sizeof(float));
    pk_run_info info;
    pk_status s = pk_image(ctx, &c->ip, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL,
                           &info);
    ok(s == PK_OK && strstr(info.reason, "FFTW single precision, 3 threads") != NULL,
       "%s: pk_image on a 3-thread OpenMP context: the host FFT on 3 threads (%s)", name,
       s == PK_OK ? info.reason : pk_last_error());
    s = pk_degrid(ctx, &c->ip, NULL, c->k.support, c->k.compact, img, &c->d, vis, NULL, &info);
    ok(s == PK_OK && strstr(info.reason, "FFTW single precision, 3 threads") != NULL,
       "%s: pk_degrid on a 3-thread OpenMP context: the host FFT on 3 threads (%s)", name,
       s == PK_OK ? info.reason : pk_last_error());
    pk_context_destroy(ctx);
    free(img);
    free(vis);
}

/* Whether any of the n floats at f is not zero. */
static int memchr_nonzero(const float *f, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (f[i] != 0.0f) return 1;
    return 0;
}

/* pk_image_passes: the grid's rows transformed in three uneven chunks (one holding a row of
 * -0 cells), the columns brought together (all g rows on one thread; on the auto context's
 * threads only the rows from the first to the last non-zero one, the others zero), the
 * column batches in three uneven groups each into its own strip of the image: bitwise
 * pk_image_from_grid's image; bad batches, row ranges, strides and NULL arrays refused. */
static void test_passes(const im_case *c, const char *name)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    const size_t nn = (size_t)n * n, gs = (size_t)g;
    pk_context *sc = ctx_for(PK_BACKEND_SERIAL), *oc = ctx_for(PK_BACKEND_AUTO);
    float *grid = calloc(2 * gs * gs, sizeof(float)), *rows = malloc(2 * gs * gs * sizeof(float));
    float *cols = malloc(2 * gs * (size_t)n * sizeof(float)), *strip = malloc(nn * sizeof(float));
    float *want = malloc(nn * sizeof(float)), *img = malloc(nn * sizeof(float));
    double norm = 0;
    int64_t sk = 0;
    pk_status s = pk_grid(sc, &c->ip.grid, NULL, c->k.support, c->k.compact, &c->d, grid, &norm,
                          &sk, NULL);
    for (int x = 0; x < 2 * g; ++x) grid[2 * gs * 3 + (size_t)x] = -0.0f; /* row 3: -0 cells */
    if (s == PK_OK)
        s = pk_image_from_grid(sc, &c->ip, c->k.support, c->k.compact, grid, norm, want);
    for (int t = 0; t < 2; ++t) {
        pk_image_passes *ip = NULL;
        pk_status sp = s;
        if (sp == PK_OK)
            sp = pk_image_passes_create(&ip, t ? oc : NULL, &c->ip, c->k.support, c->k.compact);
        memcpy(rows, grid, 2 * gs * gs * sizeof(float));
        const size_t cut[4] = {0, 5, gs / 2 + 1, gs}; /* row chunks [cut[k], cut[k + 1]) */
        for (int k = 0; k < 3 && sp == PK_OK; ++k)
            sp = pk_image_passes_rows(ip, rows + 2 * gs * cut[k], cut[k + 1] - cut[k]);
        /* crop column x's grid column (x - n/2) mod g, rows [r0, r1) together */
        size_t r0 = 0, r1 = gs;
        if (t) {
            while (r0 < gs && !memchr_nonzero(grid + 2 * r0 * gs, 2 * gs)) ++r0;
            while (r1 > r0 && !memchr_nonzero(grid + 2 * (r1 - 1) * gs, 2 * gs)) --r1;
        }
        const size_t nr = r1 - r0;
        for (int x = 0; x < n; ++x) {
            const size_t gc = (size_t)((x - n / 2 + g) % g);
            for (size_t y = r0; y < r1; ++y) {
                cols[2 * ((size_t)x * nr + y - r0)] = rows[2 * (y * gs + gc)];
                cols[2 * ((size_t)x * nr + y - r0) + 1] = rows[2 * (y * gs + gc) + 1];
            }
        }
        const int nb = pk_image_passes_batches(ip);
        const int bcut[4] = {0, 1, nb / 2 + 1, nb};
        memset(img, 0xff, nn * sizeof(float));
        for (int k = 0; k < 3 && sp == PK_OK; ++k) {
            if (bcut[k + 1] <= bcut[k]) continue;
            int x0 = 0, w = 0, xe = 0, we = 0;
            sp = pk_image_passes_batch(ip, bcut[k], &x0, &w);
            if (sp == PK_OK) sp = pk_image_passes_batch(ip, bcut[k + 1] - 1, &xe, &we);
            const size_t width = (size_t)(xe + we - x0);
            if (sp == PK_OK) /* the group's strip [n][width], then into the image */
                sp = pk_image_passes_cols(ip, cols + 2 * nr * (size_t)x0, (int)r0, (int)nr,
                                          bcut[k], bcut[k + 1], norm, strip, width);
            for (int y = 0; sp == PK_OK && y < n; ++y)
                memcpy(img + (size_t)y * n + x0, strip + (size_t)y * width, width * sizeof(float));
        }
        ok(sp == PK_OK && nb > 2 && memcmp(img, want, nn * sizeof(float)) == 0,
           "%s: pk_image_passes (%d batches; rows in 3 chunks, batches in 3 groups, %s, "
           "columns of rows [%zu, %zu)) = pk_image_from_grid, bitwise: %s", name, nb,
           t ? "the auto context's threads" : "one thread", r0, r1,
           sp != PK_OK ? pk_last_error() : "ok");
        if (t == 0 && ip) { /* bad input */
            int x0, w;
            float one[2] = {0, 0};
            int bad = pk_image_passes_batch(ip, nb, &x0, &w) == PK_EINVAL;
            bad &= pk_image_passes_batch(ip, -1, &x0, &w) == PK_EINVAL;
            const size_t sn = (size_t)n;
            bad &= pk_image_passes_cols(ip, cols, 0, g, 1, 0, norm, strip, sn) == PK_EINVAL;
            bad &= pk_image_passes_cols(ip, cols, 0, g, 0, nb + 1, norm, strip, sn) == PK_EINVAL;
            bad &= pk_image_passes_cols(ip, cols, 0, g, 0, 2, norm, strip, 1) == PK_EINVAL;
            bad &= pk_image_passes_cols(ip, cols, 1, g, 0, 1, norm, strip, sn) == PK_EINVAL;
            bad &= pk_image_passes_cols(ip, cols, -1, 2, 0, 1, norm, strip, sn) == PK_EINVAL;
            bad &= pk_image_passes_cols(ip, NULL, 0, g, 0, 1, norm, strip, sn) == PK_ENULL;
            bad &= pk_image_passes_cols(ip, cols, 0, g, 0, 1, norm, NULL, sn) == PK_ENULL;
            bad &= pk_image_passes_rows(ip, NULL, 1) == PK_ENULL;
            bad &= pk_image_passes_rows(ip, one, 0) == PK_OK && one[0] == 0;
            bad &= pk_image_passes_create(NULL, NULL, &c->ip, c->k.support, c->k.compact) ==
                   PK_ENULL;
            pk_image_params wide = c->ip;
            wide.image_size = g + 2;
            pk_image_passes *no = NULL;
            bad &= pk_image_passes_create(&no, NULL, &wide, c->k.support, c->k.compact) ==
                       PK_ESIZE && !no;
            ok(bad, "%s: pk_image_passes refuses batches out of range, rows beyond the grid, a "
               "short stride, NULL arrays and an image larger than the grid", name);
        }
        pk_image_passes_destroy(ip);
    }
    pk_context_destroy(sc);
    pk_context_destroy(oc);
    free(grid);
    free(rows);
    free(cols);
    free(strip);
    free(want);
    free(img);
}

/* pk_degrid_host_reference: on one thread and on 3 host threads, the visibilities are
 * bitwise pk_degrid's on a serial context (the FFT passes split over threads, the same 1-D
 * transforms); a NULL model refused. */
static void test_host_reference(const im_case *c, const char *name)
{
    const int n = c->ip.image_size;
    pk_context *sc = ctx_for(PK_BACKEND_SERIAL), *tc = NULL;
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_SERIAL;
    o.threads = 3;
    o.flags = PK_OPT_IGNORE_ENV;
    const pk_status so = pk_context_create(&tc, &o);
    float *model = malloc((size_t)n * n * sizeof(float));
    float *want = malloc(2 * c->n * sizeof(float)), *vis = malloc(2 * c->n * sizeof(float));
    for (size_t i = 0; i < (size_t)n * n; ++i) model[i] = (float)((i * 7919u) % 1000) / 1000.0f;
    int64_t sk = -1, sk2 = -2;
    pk_status s = pk_degrid(sc, &c->ip, NULL, c->k.support, c->k.compact, model, &c->d, want,
                            &sk, NULL);
    for (int t = 0; t < 2; ++t) {
        memset(vis, 0xff, 2 * c->n * sizeof(float));
        const pk_status sh = so != PK_OK ? so
                                         : pk_degrid_host_reference(t ? tc : NULL, &c->ip,
                                                                    c->k.support, c->k.compact,
                                                                    model, &c->d, vis, &sk2);
        ok(s == PK_OK && sh == PK_OK && sk == sk2 &&
               memcmp(vis, want, 2 * c->n * sizeof(float)) == 0,
           "%s: pk_degrid_host_reference (%s) = serial pk_degrid, bitwise: %s", name,
           t ? "3 host threads" : "one thread",
           s != PK_OK || sh != PK_OK ? pk_last_error() : "ok");
    }
    ok(pk_degrid_host_reference(NULL, &c->ip, c->k.support, c->k.compact, NULL, &c->d, vis,
                                NULL) == PK_ENULL,
       "%s: pk_degrid_host_reference refuses a NULL model", name);
    pk_context_destroy(sc);
    pk_context_destroy(tc);
    free(model);
    free(want);
    free(vis);
}

/* ---- 6. bad input ---------------------------------------------------------------------------- */
static void test_bad(const im_case *c)
{
    pk_context *ctx = ctx_for(PK_BACKEND_AUTO);
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    float *img = malloc((size_t)g * g * sizeof(float));
    pk_image_params p = c->ip;
    pk_status s;
#define BAD(expect, what, call)                                                                \
    do {                                                                                       \
        s = (call);                                                                            \
        ok(s == (expect), "bad input: %s -> %s (%s)", what, pk_status_name(s), pk_last_error()); \
    } while (0)
    p.image_size = g + 2;
    BAD(PK_ESIZE, "image larger than the grid",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    BAD(PK_ESIZE, "degrid: model larger than the grid",
        pk_degrid(ctx, &p, NULL, c->k.support, c->k.compact, img, &c->d, img, NULL, NULL));
    p.image_size = n - 1;
    BAD(PK_ESIZE, "odd image size",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    p = c->ip;
    p.image_cell_rad = c->ip.grid.cell_size_rad * 1.01;
    BAD(PK_EINVAL, "image cell inconsistent with the grid's",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    BAD(PK_EINVAL, "degrid: image cell inconsistent",
        pk_degrid(ctx, &p, NULL, c->k.support, c->k.compact, img, &c->d, img, NULL, NULL));
    p.image_cell_rad = c->ip.grid.cell_size_rad * (1 + 1e-12);
    BAD(PK_OK, "image cell equal to the grid's within 1e-9",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    p = c->ip;
    p.grid.cell_size_rad = 3.0 / n;
    BAD(PK_EINVAL, "image beyond the horizon (N cell / 2 >= 1)",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    p = c->ip;
    p.grid.oversample = 3;
    BAD(PK_EINVAL, "odd oversample (the gridder's check)",
        pk_image(ctx, &p, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    /* plane 0 broken: complex, not separable, centre not positive, NaN */
    const size_t nk = c->k.plane_offset[c->ip.grid.num_w_planes];
    float *k = malloc(2 * nk * sizeof(float));
    const int os = c->ip.grid.oversample, m = os / 2 + c->k.support[0] * os + 1;
    memcpy(k, c->k.compact, 2 * nk * sizeof(float));
    k[2 * (1 * m + 2) + 1] = 0.01f * k[0];
    BAD(PK_EINVAL, "plane 0 complex", pk_image(ctx, &c->ip, NULL, c->k.support, k, &c->d, img,
                                             NULL, NULL, NULL));
    memcpy(k, c->k.compact, 2 * nk * sizeof(float));
    k[2 * (2 * m + 3)] += 0.01f * k[0];
    BAD(PK_EINVAL, "plane 0 not separable",
        pk_degrid(ctx, &c->ip, NULL, c->k.support, k, img, &c->d, img, NULL, NULL));
    memcpy(k, c->k.compact, 2 * nk * sizeof(float));
    for (size_t i = 0; i < 2 * (size_t)m * m; ++i) k[i] = -k[i];
    BAD(PK_EINVAL, "plane 0 centre negative",
        pk_image_correction(&c->ip, c->k.support, k, NULL, NULL));
    memcpy(k, c->k.compact, 2 * nk * sizeof(float));
    k[4] = NAN;
    BAD(PK_ENONFINITE, "plane 0 NaN", pk_image(ctx, &c->ip, NULL, c->k.support, k, &c->d, img,
                                             NULL, NULL, NULL));
    /* a taper too narrow: a box kernel of one cell (support 0: its transform is flat, fine)
     * vs a kernel wide in uv (narrow taper): plane 0 = exp(-(j / os)^2 / 0.02) */
    memcpy(k, c->k.compact, 2 * nk * sizeof(float));
    for (int y = 0; y < m; ++y)
        for (int x = 0; x < m; ++x) {
            const double fy = exp(-(double)y * y / ((double)os * os) * 0.05);
            const double fx = exp(-(double)x * x / ((double)os * os) * 0.05);
            k[2 * (y * m + x)] = (float)(fy * fx);
            k[2 * (y * m + x) + 1] = 0;
        }
    BAD(PK_EINVAL, "kernel whose taper falls below 1e-3 inside the image",
        pk_image(ctx, &c->ip, NULL, c->k.support, k, &c->d, img, NULL, NULL, NULL));
    free(k);
    BAD(PK_ENULL, "NULL image",
        pk_image(ctx, &c->ip, NULL, c->k.support, c->k.compact, &c->d, NULL, NULL, NULL, NULL));
    BAD(PK_ENULL, "NULL model",
        pk_degrid(ctx, &c->ip, NULL, c->k.support, c->k.compact, NULL, &c->d, img, NULL, NULL));
    BAD(PK_ENULL, "NULL params",
        pk_image(ctx, NULL, NULL, c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    BAD(PK_ENOVARIANT, "unknown grid variant",
        pk_image(ctx, &c->ip, "no-such", c->k.support, c->k.compact, &c->d, img, NULL, NULL, NULL));
    BAD(PK_ENOVARIANT, "unknown degrid variant",
        pk_degrid(ctx, &c->ip, "no-such", c->k.support, c->k.compact, img, &c->d, img, NULL, NULL));
    /* plans: execute twice gives the same image; an empty list gives zeros */
    pk_image_plan *plan = NULL;
    s = pk_image_plan_create(&plan, ctx, &c->ip, NULL, c->k.support, c->k.compact, NULL);
    float *a = malloc((size_t)n * n * sizeof(float)), *b = malloc((size_t)n * n * sizeof(float));
    double na = 0, nb = 0;
    if (s == PK_OK) s = pk_image_plan_execute(plan, &c->d, a, &na, NULL, NULL);
    if (s == PK_OK) s = pk_image_plan_execute(plan, &c->d, b, &nb, NULL, NULL);
    ok(s == PK_OK && memcmp(a, b, (size_t)n * n * sizeof(float)) == 0 && na == nb,
       "image plan: two executes give the same bits (the grid is zeroed per execute)");
    pk_grid_data empty = c->d;
    empty.num_vis = 0;
    s = plan ? pk_image_plan_execute(plan, &empty, a, &na, NULL, NULL) : PK_ENULL;
    int zero = 1;
    for (size_t i = 0; i < (size_t)n * n; ++i) zero &= a[i] == 0;
    ok(s == PK_OK && zero && na == 0, "image plan: an empty list images to zeros, norm 0");
    pk_image_plan_destroy(plan);
    pk_image_plan_destroy(NULL);
    pk_degrid_plan_destroy(NULL);
    free(a);
    free(b);
    free(img);
    pk_context_destroy(ctx);
#undef BAD
}

/* A further case: g, N, os 4, 2000 visibilities around the sources; the tests named. */
enum { X_PIPELINE = 1, X_PREDICT = 2, X_ADJOINT = 4, X_FROM_GRID = 8, X_HOST_REF = 16 };
static void extra_case(const char *name, double cell, int n, int g, const double (*src)[3],
                       int tests)
{
    im_case c;
    memset(&c, 0, sizeof c);
    const int k = case_kernels(&c, cell, n, g, 4, 4 * 32, 1, 0);
    ok(k, "case %s: g %d, N %d, os 4: %s", name, g, n, k ? "correction ok" : pk_last_error());
    if (k) {
        case_data(&c, 2000, 0.6, 0, src, 3);
        if (tests & X_PIPELINE) test_pipeline(&c, name);
        if (tests & X_PREDICT) test_predict(&c, name);
        if (tests & X_ADJOINT) test_adjoint(&c, name);
        if (tests & X_FROM_GRID) test_from_grid(&c, name);
        if (tests & X_FROM_GRID) test_passes(&c, name);
        if (tests & X_HOST_REF) test_host_reference(&c, name);
    }
    case_free(&c);
}

#endif /* PK_HAVE_FFTW && PK_HAVE_FFTW3 */

/* A separable Gaussian plane (sigma 1 cell, os 4, support 3) made here: no generator. */
static void gauss_stack(pk_image_params *ip, int32_t *support, float *k)
{
    pk_image_params_init(ip);
    ip->grid.grid_size = 128;
    ip->grid.oversample = 4;
    ip->grid.cell_size_rad = 1e-3;
    ip->grid.num_w_planes = 1;
    ip->grid.kernel_layout = PK_GRID_KERNELS_COMPACT;
    ip->image_size = 64;
    support[0] = 3;
    const int m = 4 / 2 + 3 * 4 + 1;
    for (int y = 0; y < m; ++y)
        for (int x = 0; x < m; ++x) {
            k[2 * (y * m + x)] = (float)(exp(-0.5 * (y / 4.0) * (y / 4.0)) *
                                         exp(-0.5 * (x / 4.0) * (x / 4.0)));
            k[2 * (y * m + x) + 1] = 0;
        }
}

/* Without FFTW single precision: every image and degrid call is PK_EUNSUPPORTED and says so;
 * the correction and the degrid references still work. */
static void test_no_fftw(void)
{
    pk_image_params ip;
    int32_t support[1];
    float k[2 * 15 * 15];
    gauss_stack(&ip, support, k);
    float uu[3] = {10, -20, 5}, vv[3] = {3, 4, -30}, ww[3] = {0, 0, 0}, wt[3] = {1, 1, 1};
    float vis[6] = {1, 0, 1, 0, 1, 0}, out[6];
    pk_grid_data d = {3, uu, vv, ww, vis, wt};
    double corr[64], kappa = 0;
    pk_status s = pk_image_correction(&ip, support, k, corr, &kappa);
    ok(s == PK_OK && corr[32] == 1.0 && kappa > 0, "no FFTW: pk_image_correction works (%s)",
       pk_status_name(s));
    float *img = calloc(64 * 64, sizeof(float));
    float *grid = calloc(2 * 128 * 128, sizeof(float));
    pk_context *ctx = NULL;
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.flags = PK_OPT_IGNORE_ENV;
    pk_context_create(&ctx, &opt);
    s = pk_image(ctx, &ip, NULL, support, k, &d, img, NULL, NULL, NULL);
    ok(s == PK_EUNSUPPORTED && strstr(pk_last_error(), "FFTW"),
       "no FFTW: pk_image -> %s (%s)", pk_status_name(s), pk_last_error());
    s = pk_degrid(ctx, &ip, NULL, support, k, img, &d, out, NULL, NULL);
    ok(s == PK_EUNSUPPORTED && strstr(pk_last_error(), "FFTW"),
       "no FFTW: pk_degrid -> %s (%s)", pk_status_name(s), pk_last_error());
    pk_image_plan *plan = NULL;
    s = pk_image_plan_create(&plan, ctx, &ip, NULL, support, k, NULL);
    ok(s == PK_EUNSUPPORTED && plan == NULL, "no FFTW: pk_image_plan_create -> %s",
       pk_status_name(s));
    pk_image_passes *passes = NULL;
    s = pk_image_passes_create(&passes, ctx, &ip, support, k);
    ok(s == PK_EUNSUPPORTED && passes == NULL, "no FFTW: pk_image_passes_create -> %s",
       pk_status_name(s));
    int64_t sk = -1;
    s = pk_degrid_reference(&ip.grid, support, k, grid, &d, out, &sk);
    ok(s == PK_OK && sk == 0 && out[0] == 0, "no FFTW: pk_degrid_reference works (%s)",
       pk_status_name(s));
    pk_context_destroy(ctx);
    free(img);
    free(grid);
}

int main(void)
{
#if !defined(PK_HAVE_FFTW)
    test_no_fftw();
    return tap_done();
#elif !defined(PK_HAVE_FFTW3)
    (void)test_no_fftw;
    tap_skip_all("no FFTW (double) at configure time: the test's oracles and kernels need it");
#else
    (void)test_no_fftw;
    /* every host pass threaded at these small sizes too (the library's test hook; read at
     * each call, set before any thread starts) */
    setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
    /* cell 2^-10 rad: g cell is a power of two, so cell-centre positions are exact in float */
    const double cell = 0x1.0p-10;
    static const double src[3][3] = {{0.0, 0.0, 1.0}, {-20 * 0x1.0p-10, 9 * 0x1.0p-10, 0.6},
                                     {13.3 * 0x1.0p-10, -17.6 * 0x1.0p-10, 0.8}};
    im_case a, b, d;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&d, 0, sizeof d);
    /* a: g 128, N 64, os 4; b: g 256, N 128, os 4; d: g 512, N 256, os 16 */
    int ka = case_kernels(&a, cell, 64, 128, 4, 4 * 32, 1, 0);
    ok(ka, "case a: g 128, N 64, os 4, support %d", a.k.support[0]);
    int kb = case_kernels(&b, cell, 128, 256, 4, 4 * 32, 1, 0);
    ok(kb, "case b: g 256, N 128, os 4, support %d", b.k.support[0]);
    int kd = case_kernels(&d, cell, 256, 512, 16, 16 * 32, 1, 0);
    ok(kd, "case d: g 512, N 256, os 16, support %d", d.k.support[0]);
    if (!ka || !kb || !kd) {
        printf("Bail out! pk_image_correction: %s\n", pk_last_error());
        return 1;
    }
    /* e: the image as large as the grid (no crop; the taper's edge: c down to psi(1)/psi(0)) */
    im_case e;
    memset(&e, 0, sizeof e);
    const int ke = case_kernels(&e, cell, 64, 64, 4, 4 * 32, 1, 0);
    ok(ke, "case e: g 64, N 64 (no crop), os 4: %s", ke ? "correction ok" : pk_last_error());
    if (ke) {
        case_data(&e, 1000, 0.6, 0, src, 3);
        test_pipeline(&e, "e");
    }
    case_free(&e);
    case_data(&a, 3000, 0.6, 1, src, 3);
    case_data(&b, 3000, 0.6, 0, src, 3);
    case_data(&d, 4000, 0.6, 0, src, 3);
    test_correction(&a);
    test_correction(&d);
    test_pipeline(&a, "a");
    test_pipeline(&b, "b");
    test_pipeline(&d, "d");
    test_dft(&a, "a", 1);
    test_dft(&b, "b", 0);
    test_dft(&d, "d", 0);
    test_predict(&a, "a");
    test_predict(&d, "d");
    test_sources();
    test_bad(&a);
    test_skips(&b);
    test_threads(&d);
    test_from_grid(&b, "b");
    test_passes(&b, "b");
    test_fft_threads(&a, "a");
    test_host_reference(&b, "b");
    test_adjoint(&a, "a");
    test_adjoint(&b, "b");
    /* grids that are not powers of two (the generated sets' 18000 = 2^4 3^2 5^3): f, g 180 =
     * 2^2 3^2 5 (VkFFT's radices 2, 3, 5), N 96; h, g 106 = 2 x 53 (a prime factor above 13:
     * VkFFT's Bluestein transform), N 64.  The bounds of 7.5 with L = log2 g^2.  i: g 200
     * (rows on 64-byte lines), N 100: the column passes' batches start where x - N/2 is a
     * multiple of 8, so the first is 2 columns wide and the last 2; the full ones are
     * streamed into the grid (lib/image.c im_slot). */
    extra_case("f", cell, 96, 180, src, X_PIPELINE | X_ADJOINT | X_FROM_GRID | X_HOST_REF);
    extra_case("h", cell, 64, 106, src, X_PIPELINE | X_ADJOINT);
    extra_case("i", cell, 100, 200, src, X_PIPELINE | X_PREDICT | X_ADJOINT | X_HOST_REF);
    /* the host FFT when the device FFT is unavailable (the library's test hook, read at plan
     * creation): OpenCL's image and degrid still within the bounds, the reason says why */
    setenv("PORTKERN_TEST_NO_DEVICE_FFT", "1", 1);
    test_pipeline(&a, "a, no device FFT");
    test_adjoint(&a, "a, no device FFT");
    unsetenv("PORTKERN_TEST_NO_DEVICE_FFT");
    case_free(&a);
    case_free(&b);
    case_free(&d);
    return tap_done();
#endif
}
