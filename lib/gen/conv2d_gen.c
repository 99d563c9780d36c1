/* conv2d_gen.c - StrayLight-like test data for conv2d (see conv2d_gen.h).  The PROBA-V
 * frame of the StrayLight report is 813 x 5271 pixels with an 11 x 11 PSF core; this
 * generator makes data of any size with the same character.  Integer hashing for the
 * random parts, so a seed gives the same data everywhere (up to libm's last bits). */
#include "conv2d_gen.h"

#include <math.h>
#include <stddef.h>

static const double pi = 3.14159265358979323846;

/* splitmix64: a full-period generator with good mixing, in [0, 1). */
static double uniform(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

#define GEN_EDGES 4

void pk_cv_gen_frame(int h, int w, unsigned seed, float *image)
{
    unsigned long long st = 0x5EED0000ull + seed;
    double ph[4], ex[GEN_EDGES], ey[GEN_EDGES], ea[GEN_EDGES], eb[GEN_EDGES];
    for (int i = 0; i < 4; ++i) ph[i] = 2 * pi * uniform(&st);
    /* Straight edges (coast lines, field borders): a step of +0.35 on one side of each. */
    for (int e = 0; e < GEN_EDGES; ++e) {
        const double ang = 2 * pi * uniform(&st);
        ex[e] = cos(ang);
        ey[e] = sin(ang);
        ea[e] = uniform(&st) * w * ex[e] + uniform(&st) * h * ey[e];
        eb[e] = 0.35 * (e + 1) / GEN_EDGES;
    }
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            /* Smooth background: large-scale waves, periodic over the frame. */
            double v = 0.9 + 0.25 * sin(2 * pi * 3.0 * x / w + ph[0]) * sin(2 * pi * y / h + ph[1]) +
                       0.12 * cos(2 * pi * (5.0 * x / w + 2.0 * y / h) + ph[2]);
            for (int e = 0; e < GEN_EDGES; ++e)
                if (x * ex[e] + y * ey[e] > ea[e]) v += eb[e];
            v += 0.04 * (uniform(&st) - 0.5); /* fine texture */
            image[(size_t)y * w + x] = (float)v;
        }
    /* Point sources: about one per 20000 pixels (at least one), Gaussian footprints of
     * sigma 0.4 .. 1.4 pixels, peak 0.5 .. 5, wrapping at the borders. */
    const long nsrc = (long)h * w / 20000 + 1;
    for (long s = 0; s < nsrc; ++s) {
        const double cy = uniform(&st) * h, cx = uniform(&st) * w;
        const double sigma = 0.4 + uniform(&st), peak = 0.5 + 4.5 * uniform(&st);
        const int r = (int)ceil(3 * sigma);
        for (int dy = -r; dy <= r; ++dy)
            for (int dx = -r; dx <= r; ++dx) {
                const int py = (int)floor(cy) + dy, px = (int)floor(cx) + dx;
                const double ry = py + 0.5 - cy, rx = px + 0.5 - cx;
                const double g = peak * exp(-(rx * rx + ry * ry) / (2 * sigma * sigma));
                const int wy = ((py % h) + h) % h, wx = ((px % w) + w) % w;
                image[(size_t)wy * w + wx] += (float)g;
            }
    }
}

void pk_cv_gen_psf(int kh, int kw, unsigned seed, float *psf)
{
    unsigned long long st = 0x95F00000ull + seed;
    const double cy = kh / 2 + 0.3 * (uniform(&st) - 0.5), cx = kw / 2 + 0.3 * (uniform(&st) - 0.5);
    const double ext = kh > kw ? kh : kw;
    const double sc = 0.09 * ext > 0.6 ? 0.09 * ext : 0.6; /* core sigma: ~1 pixel at 11 x 11 */
    const double ell = 1.0 + 0.3 * uniform(&st), ang = pi * uniform(&st);
    const double r0 = 0.25 * ext > 1.0 ? 0.25 * ext : 1.0; /* wing scale */
    const double gy = kh * uniform(&st), gx = kw * uniform(&st); /* ghost position */
    double sum = 0;
    for (int k = 0; k < kh; ++k)
        for (int l = 0; l < kw; ++l) {
            const double dy = k - cy, dx = l - cx;
            const double u = dx * cos(ang) + dy * sin(ang), v = (dy * cos(ang) - dx * sin(ang)) * ell;
            const double r2 = u * u + v * v;
            const double core = exp(-r2 / (2 * sc * sc));
            const double wing = 2e-3 / pow(1.0 + r2 / (r0 * r0), 1.5);
            const double ghost = 5e-4 * exp(-((k - gy) * (k - gy) + (l - gx) * (l - gx)) / 2.0);
            const double val = core + wing + ghost;
            psf[(size_t)k * kw + l] = (float)val;
            sum += psf[(size_t)k * kw + l];
        }
    for (size_t i = 0; i < (size_t)kh * kw; ++i) psf[i] = (float)(psf[i] / sum);
}
