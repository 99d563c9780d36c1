/* test_gr_gen.c - the grid data generator (lib/gen/grid_gen.c): the w-kernel recipe against
 * the published EL82-70 supports and an independent full 2-D FFT, plane-0 normalisation,
 * kernel symmetry, data-set sizes, seeds, the uniform-weight rule and layout files; the public
 * pk_grid_generate and pk_grid_expand_kernels against those pieces.
 *
 * Tolerances:
 * - normalisation: plane 0's (2 s0 + 1)^2 = 81 stride samples summed in double from float
 *   samples each rounded by <= 2^-24 relative: |sum - 1| <= 81 * 2^-24 * max|K| / sum ~ 5e-6
 *   (max|K| ~ sum / 10 here), checked at 1e-5.
 * - symmetry K[y][x] = K[x][y]: the screen is symmetric in (l, m) exactly, the two samples
 *   come from different FFT column passes (double, relative error ~ log2(n) 2^-53 of the
 *   plane's peak, < 1e-13) and are then rounded to float (<= 2^-24 relative each):
 *   |a - b| <= 2^-23 max(|a|, |b|) + 1e-12 peak.
 * - against the full 2-D FFT (double): the same sums in another order, 1e-12 of the peak. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen/grid_gen.h"
#include "tap.h"

#ifdef PK_HAVE_FFTW3
#include <fftw3.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Plane p's m x m corner of a compact stack: symmetric to float rounding? */
static int plane_symmetric(const pk_gg_kernels *k, int p, double *worst)
{
    const int os = k->kp.oversample, m = os / 2 + k->support[p] * os + 1;
    const float *c = k->compact + 2 * k->plane_offset[p];
    double peak = 0;
    for (int i = 0; i < m * m; ++i) peak = fmax(peak, hypot(c[2 * i], c[2 * i + 1]));
    int good = 1;
    *worst = 0;
    for (int y = 0; y < m; ++y)
        for (int x = 0; x < y; ++x) {
            const float *a = c + 2 * (y * m + x), *b = c + 2 * (x * m + y);
            const double d = hypot(a[0] - b[0], a[1] - b[1]);
            const double bound = 0x1.0p-23 * fmax(hypot(a[0], a[1]), hypot(b[0], b[1])) +
                                 1e-12 * peak;
            if (d / peak > *worst) *worst = d / peak;
            if (d > bound) good = 0;
        }
    return good;
}

static double plane0_stride_sum(const pk_gg_kernels *k)
{
    const int os = k->kp.oversample, s = k->support[0], m = os / 2 + s * os + 1;
    double sum = 0;
    for (int iy = -s; iy <= s; ++iy)
        for (int ix = -s; ix <= s; ++ix)
            sum += k->compact[2 * ((size_t)abs(iy) * os * m + (size_t)abs(ix) * os)];
    return sum;
}

static void test_el82_70(void)
{
    char why[256];
    const pk_gg_dataset *ds = pk_gg_dataset_find("el82-70");
    ok(ds && ds->kp.num_w_planes == 339 && ds->kp.grid_size == 18000 &&
           ds->kp.image_size == 15000 && ds->kp.oversample == 4 &&
           ds->kp.cell_size_rad == 6.39954059065e-6 && ds->kp.max_w == 7083.386050,
       "el82-70: the published imaging parameters (339 planes, 18000 grid, 15000 image, "
       "oversample 4, cell 6.39954059065e-6, max w 7083.386050)");
    if (!ds) return;
    /* the whole stack: about 5 s on 2 loaded cores (planes in parallel) */
    pk_gg_kernels k;
    const double t0 = now_s();
    pk_status s = pk_gg_kernels_make(&ds->kp, &k, why, sizeof why);
    if (!ok(s == PK_OK, "el82-70: the whole 339-plane stack is generated (%.1f s)%s%s",
            now_s() - t0, s ? ": " : "", s ? why : ""))
        return;
    int smin = k.support[0], smax = k.support[0], mono = 1;
    for (int i = 1; i < 339; ++i) {
        smin = k.support[i] < smin ? k.support[i] : smin;
        smax = k.support[i] > smax ? k.support[i] : smax;
        mono &= k.support[i] >= k.support[i - 1];
    }
    ok(smin == 4 && smax == 44 && k.support[0] == 4 && k.support[338] == 44,
       "el82-70: supports 4..44 (got %d..%d)", smin, smax);
    ok(mono, "el82-70: supports never shrink with w");
    /* the recipe's supports at planes 0, 50, ..., 300, 338 (docs/KERNELS.md 1.7) */
    static const int at[8] = {0, 50, 100, 150, 200, 250, 300, 338};
    static const int want[8] = {4, 5, 8, 12, 18, 26, 36, 44};
    int match = 1;
    for (int i = 0; i < 8; ++i) match &= k.support[at[i]] == want[i];
    ok(match, "el82-70: supports 4 5 8 12 18 26 36 44 at planes 0, 50, ..., 300, 338 (the "
       "recipe's published check)");
    ok(fabs(k.w_scale - 338.0 * 338.0 / 7083.386050) < 1e-12 * k.w_scale,
       "el82-70: w_scale = 338^2 / max_w = %.9g", k.w_scale);
    ok(k.plane_offset[339] > 2500000 && k.plane_offset[339] < 2700000,
       "el82-70: compact stack of %zu samples (%.1f MB; the NAG layout: 20.7 MB)",
       k.plane_offset[339], 8e-6 * (double)k.plane_offset[339]);
    const double sum = plane0_stride_sum(&k);
    ok(fabs(sum - 1) <= 1e-5, "el82-70: plane 0 sums to 1 at grid-cell stride (|sum - 1| = %.2e)",
       fabs(sum - 1));
    double worst = 0, w;
    int sym = 1;
    for (int p = 0; p < 339; p += 42) {
        sym &= plane_symmetric(&k, p, &w);
        worst = fmax(worst, w);
    }
    ok(sym, "el82-70: K[y][x] = K[x][y] on planes 0, 42, ..., 336 (worst %.2e of the peak)",
       worst);
    /* the same supports by the planes-only call */
    int32_t sp[3];
    const int pl[3] = {0, 169, 338};
    s = pk_gg_kernel_supports(&ds->kp, pl, 3, sp, 0, NULL, NULL, why, sizeof why);
    ok(s == PK_OK && sp[0] == k.support[0] && sp[1] == k.support[169] && sp[2] == 44,
       "el82-70: pk_gg_kernel_supports agrees with the whole stack on planes 0, 169, 338");
    int half = 0;
    float *full = NULL;
    s = pk_gg_kernels_full(&k, &half, &full, why, sizeof why);
    int same = s == PK_OK && half == 2 + 44 * 4 + 1;
    if (same) { /* plane 338's corner in the full layout is the compact plane */
        const int m = half;
        same = memcmp(full + 2 * (size_t)338 * half * half, k.compact + 2 * k.plane_offset[338],
                      2 * (size_t)m * m * sizeof(float)) == 0;
        /* plane 0: its corner, zero beyond */
        const int m0 = 2 + 4 * 4 + 1;
        for (int y = 0; y < half && same; ++y)
            for (int x = 0; x < half && same; ++x) {
                const float *a = full + 2 * ((size_t)y * half + x);
                if (y < m0 && x < m0)
                    same = a[0] == k.compact[2 * (y * m0 + x)] &&
                           a[1] == k.compact[2 * (y * m0 + x) + 1];
                else
                    same = a[0] == 0 && a[1] == 0;
            }
    }
    ok(same, "el82-70: the FULL layout ([339][%d][%d]) holds the compact planes", half, half);
    free(full);
    pk_gg_kernels_free(&k);
}

static void test_other_sets(void)
{
    char why[256];
    static const char *const names[4] = {"el56-82", "el30-56", "synthetic", "small"};
    static const int planes[4] = {601, 922, 714, 32}, smax[4] = {72, 95, 36, 16};
    for (int d = 0; d < 4; ++d) {
        const pk_gg_dataset *ds = pk_gg_dataset_find(names[d]);
        if (!ok(ds != NULL, "data set %s exists", names[d])) continue;
        const int P = ds->kp.num_w_planes;
        int32_t s[2] = {-1, -1};
        const int pl[2] = {0, P - 1};
        pk_status st = pk_gg_kernel_supports(&ds->kp, pl, 2, s, 0, NULL, NULL, why, sizeof why);
        ok(st == PK_OK && P == planes[d] && s[0] == 4 && s[1] == smax[d] &&
               ds->max_support == smax[d],
           "%s: %d planes, supports 4..%d (got %d planes, %d..%d)", names[d], planes[d], smax[d],
           P, s[0], s[1]);
    }
}

#ifdef PK_HAVE_FFTW3
/* The two-pass transform against a plain 2-D FFT of the whole screen, on the small set. */
static void test_against_full_fft(void)
{
    char why[256];
    const pk_gg_dataset *ds = pk_gg_dataset_find("small");
    const pk_gg_kernel_params *kp = &ds->kp;
    pk_gg_kernels k;
    if (!ok(pk_gg_kernels_make(kp, &k, why, sizeof why) == PK_OK, "small: stack generated"))
        return;
    const int n = kp->conv_size, inner = n / kp->oversample, ih = inner / 2, os = kp->oversample;
    const double l_max = sin(kp->cell_size_rad) * kp->image_size / 2.0;
    const double sampling = 2.0 * l_max * os / kp->image_size * kp->grid_size / (double)n;
    fftw_complex *a = fftw_malloc(sizeof(fftw_complex) * (size_t)n * n);
    fftw_plan plan = fftw_plan_dft_2d(n, n, a, a, FFTW_FORWARD, FFTW_ESTIMATE);
    double worst = 0;
    int good = 1;
    const int P = kp->num_w_planes;
    for (int p = 0; p < P; p += P - 1) {
        const double f = 2 * M_PI * (double)p * p / k.w_scale;
        memset(a, 0, sizeof(fftw_complex) * (size_t)n * n);
        for (int iy = -ih; iy < ih; ++iy)
            for (int ix = -ih; ix < ih; ++ix) {
                const double l = sampling * ix, m = sampling * iy, r = 1 - l * l - m * m;
                if (r <= 0) continue;
                const double t = pk_gg_spheroidal(fabs(ix / (double)ih)) *
                                 pk_gg_spheroidal(fabs(iy / (double)ih));
                const double ph = f * (sqrt(r) - 1);
                fftw_complex *e = &a[(size_t)(iy < 0 ? iy + n : iy) * n + (ix < 0 ? ix + n : ix)];
                (*e)[0] = t * cos(ph);
                (*e)[1] = t * sin(ph);
            }
        fftw_execute(plan);
        const int m = os / 2 + k.support[p] * os + 1;
        const float *c = k.compact + 2 * k.plane_offset[p];
        for (int y = 0; y < m; ++y)
            for (int x = 0; x < m; ++x) {
                const double re = a[(size_t)y * n + x][0] / k.plane0_sum,
                             im = a[(size_t)y * n + x][1] / k.plane0_sum;
                const double d = hypot(c[2 * (y * m + x)] - re, c[2 * (y * m + x) + 1] - im);
                const double bound = 0x1.0p-23 * hypot(re, im) + 1e-12 * k.peak / k.plane0_sum;
                worst = fmax(worst, d / (k.peak / k.plane0_sum));
                if (d > bound) good = 0;
            }
    }
    ok(good, "small: planes 0 and %d equal a full 2-D FFT of the screen (float rounding; "
       "worst %.2e of the peak)", P - 1, worst);
    /* and the double corner of pk_gg_kernel_supports is symmetric to FFT rounding */
    double *corner = NULL;
    int cm = 0;
    int32_t sp;
    const int pl = P - 1;
    pk_status s = pk_gg_kernel_supports(kp, &pl, 1, &sp, P - 1, &corner, &cm, why, sizeof why);
    double dmax = 0, peak = 0;
    for (int i = 0; s == PK_OK && i < cm * cm; ++i)
        peak = fmax(peak, hypot(corner[2 * i], corner[2 * i + 1]));
    for (int y = 0; s == PK_OK && y < cm; ++y)
        for (int x = 0; x < y; ++x)
            dmax = fmax(dmax, hypot(corner[2 * (y * cm + x)] - corner[2 * (x * cm + y)],
                                    corner[2 * (y * cm + x) + 1] - corner[2 * (x * cm + y) + 1]));
    ok(s == PK_OK && cm == 2 + 4 * sp + 1 && dmax <= 1e-12 * peak,
       "small: plane %d in double is symmetric to %.2e of its peak (<= 1e-12)", P - 1,
       peak > 0 ? dmax / peak : -1.0);
    free(corner);
    fftw_destroy_plan(plan);
    fftw_free(a);
    pk_gg_kernels_free(&k);
}
#endif

static void test_counts_and_seeds(void)
{
    char why[256];
    const pk_gg_dataset *el = pk_gg_dataset_find("el82-70"), *syn = pk_gg_dataset_find("synthetic"),
                        *sm = pk_gg_dataset_find("small");
    pk_gg_vis_options o = {el, 1.0, 1, NULL, 0};
    ok(pk_gg_vis_count(&o) == 31395840, "el82-70: 31,395,840 visibilities (130816 x 240)");
    o.scale = 0.1;
    ok(pk_gg_vis_count(&o) == 3139584, "el82-70 --scale 0.1: 24 dumps = 3,139,584");
    o.ds = pk_gg_dataset_find("el30-56");
    o.scale = 0.5;
    ok(pk_gg_vis_count(&o) == 130816u * 120, "el30-56 --scale 0.5: 120 dumps");
    o.ds = syn;
    o.scale = 1;
    ok(pk_gg_vis_count(&o) == 2152800, "synthetic: 2,152,800 visibilities");
    o.scale = 0.25;
    ok(pk_gg_vis_count(&o) == 538200, "synthetic --scale 0.25: 538,200");
    o.scale = 1e-9;
    ok(pk_gg_vis_count(&o) == 1, "a tiny scale still keeps one visibility");

    /* one dump of el82-70: generated for real */
    pk_gg_vis v, v2;
    o.ds = el;
    o.scale = 1.0 / 240;
    o.seed = 7;
    pk_status s = pk_gg_vis_make(&o, &v, why, sizeof why);
    if (ok(s == PK_OK && v.num_vis == 130816 && v.num_times == 1,
           "el82-70, one dump: 130,816 visibilities%s%s", s ? ": " : "", s ? why : "")) {
        const float gs = (float)(el->kp.grid_size * el->kp.cell_size_rad);
        int fin = 1, inside = 1;
        double uvmax = 0;
        for (size_t i = 0; i < v.num_vis; ++i) {
            fin &= isfinite(v.uu[i]) && isfinite(v.vv[i]) && isfinite(v.ww[i]) &&
                   isfinite(v.vis[2 * i]) && v.weight[i] > 0 && v.weight[i] <= 1;
            inside &= fabsf(v.uu[i] * gs) < 9000 - 50 && fabsf(v.vv[i] * gs) < 9000 - 50;
            uvmax = fmax(uvmax, hypot(v.uu[i], v.vv[i]));
        }
        /* longest v6-like baseline: ~65 km / 3 m = 21.8 k lambda (the v6 layout's EL82-70
         * track reaches max |uv| 21.6 k lambda) */
        ok(fin && inside && uvmax > 18000 && uvmax < 23000,
           "el82-70: finite, weights in (0, 1], every footprint on the grid, max |uv| %.0f "
           "lambda", uvmax);
        /* at hour angle 15.7 deg from zenith transit |w| <= |b| sin(z), z ~ 14 deg */
        ok(v.max_abs_w > 3000 && v.max_abs_w < 7083.4, "el82-70 mid-track: max |w| %.0f < "
           "max_w", v.max_abs_w);
        pk_gg_vis_free(&v);
    }
    /* reproducible by seed, different with another */
    o.ds = sm;
    o.scale = 1;
    o.seed = 3;
    s = pk_gg_vis_make(&o, &v, why, sizeof why);
    pk_status s2 = pk_gg_vis_make(&o, &v2, why, sizeof why);
    if (ok(s == PK_OK && s2 == PK_OK && v.num_vis == 50000, "small: 50,000 visibilities twice")) {
        const size_t n = v.num_vis;
        ok(!memcmp(v.uu, v2.uu, n * 4) && !memcmp(v.vv, v2.vv, n * 4) &&
               !memcmp(v.ww, v2.ww, n * 4) && !memcmp(v.vis, v2.vis, n * 8) &&
               !memcmp(v.weight, v2.weight, n * 4),
           "small: the same seed gives the same bytes");
        pk_gg_vis_free(&v2);
        o.seed = 4;
        s = pk_gg_vis_make(&o, &v2, why, sizeof why);
        ok(s == PK_OK && memcmp(v.uu, v2.uu, n * 4) != 0, "small: another seed, other data");
        pk_gg_vis_free(&v2);
        /* unit visibilities */
        o.seed = 3;
        o.unit_vis = 1;
        s = pk_gg_vis_make(&o, &v2, why, sizeof why);
        int unit = s == PK_OK;
        for (size_t i = 0; unit && i < n; ++i) unit = v2.vis[2 * i] == 1 && v2.vis[2 * i + 1] == 0;
        ok(unit && !memcmp(v.uu, v2.uu, n * 4), "small --unit-vis: 1 + 0i, same uvw");
        pk_gg_vis_free(&v2);
        /* the uniform rule: the weights of one cell sum to 1 (sorted by cell here) */
        pk_gg_vis_free(&v);
    }
    /* SKA order is shuffled by the seed: two seeds, same multiset of u */
    o.ds = el;
    o.scale = 1.0 / 240;
    o.seed = 1;
    o.unit_vis = 0;
    s = pk_gg_vis_make(&o, &v, why, sizeof why);
    o.seed = 2;
    s2 = pk_gg_vis_make(&o, &v2, why, sizeof why);
    if (s == PK_OK && s2 == PK_OK) {
        double s1 = 0, s2u = 0;
        for (size_t i = 0; i < v.num_vis; ++i) {
            s1 += v.uu[i];
            s2u += v2.uu[i];
        }
        ok(memcmp(v.uu, v2.uu, v.num_vis * 4) != 0 && fabs(s1 - s2u) < 1e-6 * v.num_vis,
           "el82-70: the seed shuffles the order (same baselines)");
    } else {
        ok(0, "el82-70: two seeds generated");
    }
    pk_gg_vis_free(&v);
    pk_gg_vis_free(&v2);
    o.scale = 0;
    ok(pk_gg_vis_make(&o, &v, why, sizeof why) == PK_EINVAL, "scale 0 is refused: %s", why);
    o.scale = 1.5;
    ok(pk_gg_vis_make(&o, &v, why, sizeof why) == PK_EINVAL, "scale 1.5 is refused");
}

static void test_weights(void)
{
    char why[256];
    /* grid 16, cell such that grid_scale = 16 * cell = 1: pos = -uu, vv; centre 8 */
    const double cell = 1.0 / 16;
    const float uu[8] = {0.0f, 0.3f, -0.2f, 2.0f, -20.0f, NAN, 0.49f, 7.6f};
    const float vv[8] = {0.0f, 0.1f, 0.4f, 1.0f, 0.0f, 0.0f, -0.3f, 0.0f};
    float w[8];
    pk_status s = pk_gg_uniform_weights(16, cell, 8, uu, vv, w, why, sizeof why);
    /* cells: (8,8) x 4 (indices 0, 1, 2, 6), (6,9), off grid (-20 -> 28), NaN, 7.6 -> -8 + 8 = 0 */
    ok(s == PK_OK && w[0] == 0.25f && w[1] == 0.25f && w[2] == 0.25f && w[6] == 0.25f &&
           w[3] == 1 && w[4] == 1 && w[5] == 1 && w[7] == 1,
       "weights: 1/4 for the four in one cell, 1 alone, off the grid and NaN");
    /* the sort path (bounding box over 2^28 cells): grid 32768, two cells in far corners */
    const double c2 = 1.0 / 32768;
    const float u2[5] = {16000, 16000, -16000, -16000.2f, 0};
    const float v2[5] = {-16000, -16000, 16000, 16000.2f, 0};
    float w2[5];
    s = pk_gg_uniform_weights(32768, c2, 5, u2, v2, w2, why, sizeof why);
    ok(s == PK_OK && w2[0] == 0.5f && w2[1] == 0.5f && w2[2] == 0.5f && w2[3] == 0.5f &&
           w2[4] == 1,
       "weights: the same rule when the centres span more than 2^28 cells (sorted)");
    ok(pk_gg_uniform_weights(15, 0.1, 1, uu, vv, w, why, sizeof why) == PK_EINVAL,
       "weights: an odd grid is refused");
}

/* ---- layout files written by the test ------------------------------------------------- */
/* A handful of stations in the format of the published SKA1-LOW configuration (east, north,
 * up in metres, one station a line), made up here, with every variation the reader accepts:
 * a comment (also indented), blank and blank-looking lines, tabs, commas with blanks around
 * them, a two-column line (up = 0) and CRLF line ends.  lay_enu holds the same values: the
 * decimal strings are identical, so strtod and the compiler give the same doubles. */
static const char lay_text[] =
    "# SKA1-LOW-like test layout: E N U (metres)\n"
    "   # an indented comment\n"
    "\n"
    "6980.125 -4100.5 -5.25\n"
    "-120.5\t35.25\t0.0\n"
    "0 0 0\r\n"
    " \t \n"
    "39800, 0 ,12.5\n"
    "-1234.5 -2345.75 3\n"
    "250.125 310\n"
    "-15000 22000.5 -7.25";
static const double lay_enu[][3] = {{6980.125, -4100.5, -5.25}, {-120.5, 35.25, 0.0},
                                    {0, 0, 0},                  {39800, 0, 12.5},
                                    {-1234.5, -2345.75, 3},     {250.125, 310, 0},
                                    {-15000, 22000.5, -7.25}};
#define LAY_N ((int)(sizeof lay_enu / sizeof lay_enu[0]))

static char lay_dir[512];

static int lay_make_dir(void)
{
    const char *top = getenv("top_builddir");
    snprintf(lay_dir, sizeof lay_dir, "%s/tests/tmp-gr-gen-XXXXXX", top ? top : ".");
    if (mkdtemp(lay_dir)) return 0;
    snprintf(lay_dir, sizeof lay_dir, "/tmp/pk-test-gr-gen-XXXXXX");
    return mkdtemp(lay_dir) ? 0 : -1;
}

/* Write len bytes of text to lay_dir/name, whose path goes to path. */
static int lay_write(const char *name, const char *text, size_t len, char *path, size_t plen)
{
    snprintf(path, plen, "%s/%s", lay_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    const int good = fwrite(text, 1, len, f) == len;
    return fclose(f) == 0 && good ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_layout_file(void)
{
    char why[256], path[1024], bad_path[1024];
    if (lay_make_dir() != 0 || lay_write("layout.txt", lay_text, strlen(lay_text), path,
                                          sizeof path) != 0) {
        ok(0, "layout file: cannot write a scratch file");
        return;
    }
    pk_gg_layout L;
    pk_status s = pk_gg_layout_read(path, &L, why, sizeof why);
    int same = s == PK_OK && L.num_stations == LAY_N;
    for (int i = 0; same && i < LAY_N; ++i)
        for (int c = 0; c < 3; ++c) same &= L.enu[3 * i + c] == lay_enu[i][c];
    ok(same, "layout file: %d stations read exactly (comments, blank lines, tabs, commas, 2 or "
       "3 columns, CRLF)%s%s", LAY_N, s ? ": " : "", s ? why : "");
    if (s != PK_OK) {
        remove(path);
        rmdir(lay_dir);
        return;
    }
    /* el82-70 with the file, 2 dumps: n(n-1)/2 baselines per dump */
    const pk_gg_dataset *el = pk_gg_dataset_find("el82-70");
    const size_t nb = (size_t)LAY_N * (LAY_N - 1) / 2;
    pk_gg_vis_options o = {el, 2.0 / 240, 5, &L, 0};
    pk_gg_vis v, v2;
    s = pk_gg_vis_make(&o, &v, why, sizeof why);
    if (ok(s == PK_OK && v.num_vis == 2 * nb && v.num_times == 2 && pk_gg_vis_count(&o) == 2 * nb,
           "el82-70 with the layout file, 2 dumps: %zu visibilities (%d stations)%s%s", 2 * nb,
           LAY_N, s ? ": " : "", s ? why : "")) {
        /* The ENU -> XYZ -> (u, v, w) rotations keep lengths: |uvw| = |baseline| / lambda
         * for every visibility, each baseline once per dump (the order is shuffled).  uu, vv,
         * ww are floats (each within 2^-24 relative): 1e-6 relative is ample, while a wrong,
         * missing or default station moves lengths by far more. */
        double *got = malloc(v.num_vis * sizeof *got), *want = malloc(v.num_vis * sizeof *want);
        int good = got && want;
        size_t k = 0;
        for (int t = 0; good && t < 2; ++t)
            for (int i = 0; i < LAY_N; ++i)
                for (int j = i + 1; j < LAY_N; ++j)
                    want[k++] = sqrt(pow(lay_enu[j][0] - lay_enu[i][0], 2) +
                                     pow(lay_enu[j][1] - lay_enu[i][1], 2) +
                                     pow(lay_enu[j][2] - lay_enu[i][2], 2)) *
                                PK_GG_FREQ_HZ / PK_GG_C;
        double worst = 0;
        for (size_t i = 0; good && i < v.num_vis; ++i)
            got[i] = sqrt((double)v.uu[i] * v.uu[i] + (double)v.vv[i] * v.vv[i] +
                          (double)v.ww[i] * v.ww[i]);
        if (good) {
            qsort(got, v.num_vis, sizeof *got, cmp_double);
            qsort(want, v.num_vis, sizeof *want, cmp_double);
            for (size_t i = 0; i < v.num_vis; ++i)
                worst = fmax(worst, fabs(got[i] - want[i]) / want[i]);
        }
        ok(good && worst <= 1e-6, "layout file: |uvw| = |baseline| / lambda for every "
           "visibility, the file's baselines twice (max rel diff %.1e)", worst);
        free(got);
        free(want);
        /* reproducible: the same file and seed give the same bytes */
        s = pk_gg_vis_make(&o, &v2, why, sizeof why);
        const size_t n = v.num_vis;
        ok(s == PK_OK && v2.num_vis == n && !memcmp(v.uu, v2.uu, n * 4) &&
               !memcmp(v.vv, v2.vv, n * 4) && !memcmp(v.ww, v2.ww, n * 4) &&
               !memcmp(v.vis, v2.vis, n * 8) && !memcmp(v.weight, v2.weight, n * 4),
           "layout file: the same file and seed give the same bytes");
        pk_gg_vis_free(&v2);
        /* the positions are used: one station moved 10 m east changes the data; the built-in
         * layout gives its own 130,816 baselines per dump */
        L.enu[3 * 4] += 10;
        s = pk_gg_vis_make(&o, &v2, why, sizeof why);
        ok(s == PK_OK && v2.num_vis == n && memcmp(v.uu, v2.uu, n * 4) != 0,
           "layout file: moving one station changes the visibilities");
        pk_gg_vis_free(&v2);
        L.enu[3 * 4] -= 10;
        o.layout = NULL;
        ok(pk_gg_vis_count(&o) == 2 * (size_t)130816 && 2 * nb != 2 * (size_t)130816,
           "without the file: the built-in 512 stations (261,632 visibilities in 2 dumps)");
        pk_gg_vis_free(&v);
    }
    pk_gg_layout_free(&L);
    remove(path);
    /* bad files on disk: refused with the file and line, nothing returned */
    static const struct {
        const char *name, *text, *expect;
        size_t len;
    } bad[] = {{"word.txt", "# E N U\n1 2 3\n\n4 5 six\n", ":4:", 0},
               {"one.txt", "# a single station\n1 2 3\n", "1 station", 0},
               {"four.txt", "1 2 3\n4 5 6 7\n", ":2:", 0},
               {"nul.txt", "1 2 3\n4 5\0 6\n", "NUL", 12}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        const size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
        if (lay_write(bad[i].name, bad[i].text, len, bad_path, sizeof bad_path) != 0) {
            ok(0, "layout file: cannot write %s", bad[i].name);
            continue;
        }
        s = pk_gg_layout_read(bad_path, &L, why, sizeof why);
        ok(s == PK_EFORMAT && L.enu == NULL && L.num_stations == 0 && strstr(why, bad[i].name) &&
               strstr(why, bad[i].expect),
           "layout file %s refused: %s", bad[i].name, why);
        remove(bad_path);
    }
    rmdir(lay_dir);
}

static void test_layouts(void)
{
    char why[256];
    pk_gg_layout L;
    pk_status s = pk_gg_layout_procedural(&L);
    if (ok(s == PK_OK && L.num_stations == 512, "procedural layout: 512 stations")) {
        static const double r[] = {100, 250, 500, 1000, 2000, 5000, 10000, 20000, 40000};
        static const int want[] = {13, 77, 220, 277, 313, 370, 404, 458, 512};
        int good = 1;
        double dmin = 1e30;
        for (int k = 0; k < 9; ++k) {
            int c = 0;
            for (int i = 0; i < 512; ++i) c += hypot(L.enu[3 * i], L.enu[3 * i + 1]) <= r[k];
            good &= abs(c - want[k]) <= 1;
        }
        for (int i = 0; i < 512; ++i)
            for (int j = 0; j < i; ++j)
                dmin = fmin(dmin, hypot(L.enu[3 * i] - L.enu[3 * j],
                                        L.enu[3 * i + 1] - L.enu[3 * j + 1]));
        ok(good, "procedural layout: the v6 radial distribution (13 within 100 m, 77 in 250 m, "
           "220 in 500 m, ... 512 in 40 km), +-1");
        ok(dmin >= 20, "procedural layout: stations at least 20 m apart (closest %.1f m)", dmin);
        pk_gg_layout_free(&L);
    }
    test_layout_file();
    s = pk_gg_layout_parse("# E N U\n\n 1.5, 2 ,0\n-3e2 4\n  \n5 6 7 # trailing is bad\n", "t",
                           &L, why, sizeof why);
    ok(s == PK_EFORMAT && strstr(why, "t:6"), "layout: trailing text after 3 numbers is refused "
       "with its line (%s)", why);
    s = pk_gg_layout_parse("# E N U\n\n 1.5, 2 ,0\n-3e2 4\n\t\n5 6 7\n", "t", &L, why, sizeof why);
    ok(s == PK_OK && L.num_stations == 3 && L.enu[0] == 1.5 && L.enu[1] == 2 && L.enu[3] == -300 &&
           L.enu[5] == 0 && L.enu[8] == 7,
       "layout: comments, blank lines, commas, 2 or 3 columns");
    pk_gg_layout_free(&L);
    static const char *const bad[] = {"1 2\nabc 3\n", "1 2\n4\n", "1 2 3\n1 2 3 4\n", "1 2\n",
                                      "", "1 nan\n2 3\n", "1 2\n3 1e999\n", "1 2,\n3 4\n",
                                      "1 2\n3 4x\n", "1 2\n0x10 3\n", "1 2\n1e300 3\n",
                                      "1 2\ninf 3\n", "1 2\n3 -2e7\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        s = pk_gg_layout_parse(bad[i], "bad", &L, why, sizeof why);
        ok(s == PK_EFORMAT && L.enu == NULL && L.num_stations == 0, "layout: bad file %zu "
           "refused: %s", i, why);
    }
    s = pk_gg_layout_read("/nonexistent/layout.txt", &L, why, sizeof why);
    ok(s == PK_EIO, "layout: a missing file is an I/O error: %s", why);
}

/* The public pk_grid_generate (lib/gen/generate.c, the library's copy of the generator)
 * against this test's own copy of the pieces the tool called before: the same bytes; the
 * FULL layout, the gridding parameters and pk_grid_expand_kernels; bad arguments. */
static int same_f32(const pk_array *a, const void *x, size_t n, pk_dtype dt)
{
    const size_t per = dt == PK_DTYPE_C64 ? 2 : 1;
    return a->dtype == dt && a->count == n && a->data &&
           memcmp(a->data, x, n * per * sizeof(float)) == 0;
}

static void test_public_generate(int have_fftw)
{
    pk_grid_gen_options o;
    pk_grid_dataset d;
    pk_status s;
    ok(pk_grid_dataset_has_layout("el82-70") == 1 && pk_grid_dataset_has_layout("small") == 0 &&
           pk_grid_dataset_has_layout("nope") == -1 && pk_grid_dataset_has_layout(NULL) == -1 &&
           strstr(pk_grid_datasets(), "el56-82") != NULL,
       "pk_grid_dataset_has_layout and pk_grid_datasets");
    /* bad arguments: the status and a message naming the option; *out stays freeable */
    ok(pk_grid_generate(NULL, &d) == PK_ENULL && pk_grid_generate(&o, NULL) == PK_ENULL,
       "pk_grid_generate: NULL options or output is PK_ENULL");
    pk_grid_gen_options_init(&o);
    o.dataset = "el99";
    s = pk_grid_generate(&o, &d);
    ok(s == PK_EINVAL && strstr(pk_last_error(), "el99") && d.uu.data == NULL,
       "unknown data set: PK_EINVAL (%s)", pk_last_error());
    pk_grid_dataset_free(&d);
    const double scales[] = {0, -0.5, 1.5, NAN};
    int all = 1;
    for (int i = 0; i < 4; ++i) {
        pk_grid_gen_options_init(&o);
        o.dataset = "small";
        o.scale = scales[i];
        all &= pk_grid_generate(&o, &d) == PK_EINVAL && strstr(pk_last_error(), "scale");
    }
    ok(all, "scale 0, -0.5, 1.5, NaN: PK_EINVAL (%s)", pk_last_error());
    pk_grid_gen_options_init(&o);
    o.dataset = "small";
    o.kernel_layout = 7;
    ok(pk_grid_generate(&o, &d) == PK_EINVAL, "kernel_layout 7: PK_EINVAL (%s)", pk_last_error());
    o.kernel_layout = PK_GRID_KERNELS_COMPACT;
    o.layout_path = "/dev/null";
    ok(pk_grid_generate(&o, &d) == PK_EINVAL && strstr(pk_last_error(), "no station layout"),
       "a layout for a random set: PK_EINVAL (%s)", pk_last_error());
    o.dataset = "el82-70";
    o.layout_path = "/nonexistent/layout.txt";
    ok(pk_grid_generate(&o, &d) == PK_EIO && strstr(pk_last_error(), "/nonexistent/layout.txt"),
       "a missing layout file: PK_EIO (%s)", pk_last_error());
    pk_grid_dataset_free(&d);
    pk_grid_dataset_free(NULL);
    pk_grid_gen_options_init(&o);
    o.dataset = "small";
    o.scale = 0.2;
    o.seed = 3;
    s = pk_grid_generate(&o, &d);
    if (!have_fftw) {
        ok(s == PK_EUNSUPPORTED && strstr(pk_last_error(), "FFTW"),
           "without FFTW (double): PK_EUNSUPPORTED, saying why (%s)", pk_last_error());
        pk_grid_dataset_free(&d);
        return;
    }
    /* the pieces the tool called: layout, kernels, visibilities */
    char why[256];
    const pk_gg_dataset *sm = pk_gg_dataset_find("small");
    pk_gg_kernels k;
    pk_gg_vis v;
    const pk_gg_vis_options vo = {sm, 0.2, 3, NULL, 0};
    pk_status sk = pk_gg_kernels_make(&sm->kp, &k, why, sizeof why);
    pk_status sv = pk_gg_vis_make(&vo, &v, why, sizeof why);
    const int P = sm->kp.num_w_planes;
    const size_t n = v.num_vis;
    ok(s == PK_OK && sk == PK_OK && sv == PK_OK && d.data.num_vis == n &&
           same_f32(&d.uu, v.uu, n, PK_DTYPE_F32) && same_f32(&d.vv, v.vv, n, PK_DTYPE_F32) &&
           same_f32(&d.ww, v.ww, n, PK_DTYPE_F32) && same_f32(&d.vis, v.vis, n, PK_DTYPE_C64) &&
           same_f32(&d.weight, v.weight, n, PK_DTYPE_F32) && d.data.uu == d.uu.data &&
           d.data.weight == d.weight.data,
       "small --scale 0.2 --seed 3: the visibilities are the generator's, byte for byte (%zu)",
       n);
    ok(s == PK_OK && d.support.dtype == PK_DTYPE_I32 && d.support.count == (size_t)P &&
           memcmp(d.support.data, k.support, P * sizeof(int32_t)) == 0 && d.kernels.ndim == 1 &&
           same_f32(&d.kernels, k.compact, k.plane_offset[P], PK_DTYPE_C64),
       "small: supports and compact kernels are the generator's");
    size_t count = 0;
    const pk_status sc = s == PK_OK ? pk_grid_kernel_count(&d.params, d.support.data, &count)
                                    : s;
    ok(sc == PK_OK && d.params.grid_size == 1024 && d.params.oversample == 4 &&
           d.params.num_w_planes == P && d.params.w_scale == k.w_scale &&
           d.params.cell_size_rad == sm->kp.cell_size_rad &&
           d.params.kernel_layout == PK_GRID_KERNELS_COMPACT &&
           count == d.kernels.count && d.max_support == 16 && d.num_stations == 0 &&
           strcmp(d.name, "small") == 0 && d.recipe && d.fft_size == 256,
       "small: the gridding parameters fit the stack (%zu samples)", count);
    /* the same seed: the same data; FULL: the expanded stack, which compacts back */
    pk_grid_dataset f;
    o.kernel_layout = PK_GRID_KERNELS_FULL;
    s = pk_grid_generate(&o, &f);
    int half = 0;
    float *full = NULL;
    pk_status sf = pk_gg_kernels_full(&k, &half, &full, why, sizeof why);
    ok(s == PK_OK && sf == PK_OK && f.kernels.ndim == 3 && f.kernels.shape[1] == (size_t)half &&
           f.params.conv_size_half == half && f.params.kernel_layout == PK_GRID_KERNELS_FULL &&
           same_f32(&f.kernels, full, (size_t)P * half * half, PK_DTYPE_C64) &&
           same_f32(&f.uu, d.uu.data, n, PK_DTYPE_F32),
       "FULL: the generator's full stack (half %d), the same visibilities", half);
    float *back = malloc(2 * sizeof(float) * (d.kernels.count + 1));
    float *again = malloc(2 * sizeof(float) * ((size_t)P * half * half + 1));
    ok(s == PK_OK && back && again &&
           pk_grid_compact_kernels(&f.params, f.support.data, f.kernels.data, back) == PK_OK &&
           memcmp(back, d.kernels.data, 2 * sizeof(float) * d.kernels.count) == 0 &&
           pk_grid_expand_kernels(&f.params, f.support.data, back, again) == PK_OK &&
           memcmp(again, f.kernels.data, 2 * sizeof(float) * f.kernels.count) == 0,
       "pk_grid_compact_kernels and pk_grid_expand_kernels are inverses");
    ok(pk_grid_expand_kernels(&d.params, d.support.data, back, again) == PK_EINVAL &&
           pk_grid_expand_kernels(&f.params, f.support.data, NULL, again) == PK_ENULL,
       "pk_grid_expand_kernels: a COMPACT p is PK_EINVAL, NULL is PK_ENULL (%s)",
       pk_last_error());
    /* gridded: the reference accepts what pk_grid_generate gives */
    const size_t G = (size_t)d.params.grid_size;
    float *grid = calloc(2 * G * G, sizeof *grid);
    double norm = 0;
    int64_t skipped = -1;
    const pk_status sg = grid ? pk_grid_reference(&d.params, d.support.data, d.kernels.data,
                                                  &d.data, grid, &norm, &skipped)
                              : PK_ENOMEM;
    ok(sg == PK_OK && norm > 0 && skipped == 0,
       "small: grids with pk_grid_reference (norm %g, %lld skipped)", norm, (long long)skipped);
    free(grid);
    free(back);
    free(again);
    free(full);
    pk_gg_kernels_free(&k);
    pk_gg_vis_free(&v);
    pk_grid_dataset_free(&f);
    pk_grid_dataset_free(&d);
    ok(d.uu.data == NULL && d.kernels.data == NULL, "pk_grid_dataset_free zeroes the set");
}

int main(void)
{
    char why[256];
    pk_gg_kernels k;
    const pk_gg_dataset *sm = pk_gg_dataset_find("small");
    if (sm && pk_gg_kernels_make(&sm->kp, &k, why, sizeof why) == PK_EUNSUPPORTED) {
        /* built without FFTW (double): the kernels cannot be made, and say so */
        ok(strstr(why, "FFTW") != NULL, "without FFTW the kernel generator says why: %s", why);
        test_counts_and_seeds();
        test_weights();
        test_layouts();
        test_public_generate(0);
        return tap_done();
    }
    pk_gg_kernels_free(&k);
    /* Schwab's approximation: 1 at 0 to 3e-7, p[1][0] = 0.004028559 at 1 (the second
     * rational piece at its end point), continuous at 0.75 to the fit's 1e-7 */
    ok(fabs(pk_gg_spheroidal(0) - 1) < 1e-6 && pk_gg_spheroidal(1) == 0.004028559 &&
           fabs(pk_gg_spheroidal(0.75) - pk_gg_spheroidal(nextafter(0.75, 0))) < 1e-6 &&
           pk_gg_spheroidal(1.5) == 0 && pk_gg_spheroidal(-0.1) == 0,
       "spheroidal taper: 1 at 0, 0.004028559 at 1, continuous at 0.75, 0 outside [0, 1]");
    test_el82_70();
    test_other_sets();
#ifdef PK_HAVE_FFTW3
    test_against_full_fft();
#endif
    test_counts_and_seeds();
    test_weights();
    test_layouts();
    pk_gg_kernel_params bad = sm->kp;
    bad.oversample = 3;
    ok(pk_gg_kernels_make(&bad, &k, why, sizeof why) == PK_EINVAL, "odd oversample refused: %s",
       why);
    bad = sm->kp;
    bad.max_w = NAN;
    ok(pk_gg_kernels_make(&bad, &k, why, sizeof why) == PK_EINVAL, "NaN max_w refused: %s", why);
    test_public_generate(1);
    return tap_done();
}
