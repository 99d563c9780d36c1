/* diffusion3d_ref.c - the serial reference of docs/KERNELS.md section 3, written for clarity.
 * It is the oracle of the tests: float arithmetic evaluated left to right, no FMA
 * contraction, so every compiler gives the same bits. */
#include "internal.h"

#if defined(__GNUC__) && !defined(__clang__)
#define PK_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define PK_NO_CONTRACT
#endif

/* Planes [z0, z1) of one step. */
typedef struct d3_ref_job {
    const pk_d3_desc *d;
    const float *f1;
    float *f2;
} d3_ref_job;

PK_NO_CONTRACT
static void ref_planes(void *arg, size_t z0, size_t z1)
{
    const d3_ref_job *j = arg;
    const pk_d3_desc *d = j->d;
    const float *f1 = j->f1;
    float *f2 = j->f2;
    const int nx = d->nx, ny = d->ny, nz = d->nz;
    const float cc = d->c[PK_D3_CC], cw = d->c[PK_D3_CW], ce = d->c[PK_D3_CE];
    const float cs = d->c[PK_D3_CS], cn = d->c[PK_D3_CN], cb = d->c[PK_D3_CB];
    const float ct = d->c[PK_D3_CT];
    const size_t sx = 1, sy = (size_t)nx, sz = (size_t)nx * (size_t)ny;
    for (int z = (int)z0; z < (int)z1; ++z)
        for (int y = 0; y < ny; ++y)
            for (int x = 0; x < nx; ++x) {
                size_t c = (size_t)x + (size_t)y * sy + (size_t)z * sz;
                /* At a face the missing neighbour is the centre itself. */
                size_t w = x == 0 ? c : c - sx, e = x == nx - 1 ? c : c + sx;
                size_t n = y == 0 ? c : c - sy, s = y == ny - 1 ? c : c + sy;
                size_t b = z == 0 ? c : c - sz, t = z == nz - 1 ? c : c + sz;
                float v = cc * f1[c];
                v += cw * f1[w];
                v += ce * f1[e];
                v += cs * f1[s];
                v += cn * f1[n];
                v += cb * f1[b];
                v += ct * f1[t];
                f2[c] = v;
            }
}

/* threads 1: one thread (the serial backend); 0: each step's planes on the host's threads
 * (large fields; the public reference): every point's expression is the same whoever
 * computes it, so the result is bitwise the one-thread loop's. */
void pk_d3_ref_steps(const pk_d3_desc *d, int count, float *f1, float *f2, float **result,
                     int threads)
{
    const size_t points = (size_t)d->nx * (size_t)d->ny * (size_t)d->nz;
    for (int i = 0; i < count; ++i) {
        d3_ref_job j = {d, f1, f2};
        if (threads == 1)
            ref_planes(&j, 0, (size_t)d->nz);
        else
            pk_parallel_range((size_t)d->nz, 1, 8 * points, threads, ref_planes, &j);
        float *t = f1;
        f1 = f2;
        f2 = t;
    }
    *result = f1;
}
