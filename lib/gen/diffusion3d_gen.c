/* diffusion3d_gen.c - the cosine field of the diffusion benchmark (Maruyama; Jeffers &
 * Reinders ch. 4): initial condition at t = 0 and the analytic solution at t > 0. */
#include "internal.h"

#include <math.h>

#define PK_D3_KAPPA 0.1

double pk_diffusion3d_dt(int nx)
{
    double dx = 1.0 / (double)(nx > 0 ? nx : 1);
    return 0.1 * dx * dx / PK_D3_KAPPA;
}

void pk_diffusion3d_params_default(pk_diffusion3d_params *p, int nx, int ny, int nz, int count)
{
    if (!p) return;
    p->nx = nx;
    p->ny = ny;
    p->nz = nz;
    p->count = count;
    /* As the original code: REAL (float) arithmetic; the coefficients do not depend on nx
     * because dt scales with dx^2 (0.1 for every neighbour, 0.4 for the centre). */
    float kappa = (float)PK_D3_KAPPA;
    float dx = 1.0f / (float)(nx > 0 ? nx : 1);
    float dt = 0.1f * dx * dx / kappa;
    float cn = kappa * dt / (dx * dx);
    p->ce = p->cw = p->cn = p->cs = p->ct = p->cb = cn;
    p->cc = 1.0f - (cn + cn + cn + cn + cn + cn);
}

pk_status pk_diffusion3d_field(int nx, int ny, int nz, double t, float *f)
{
    pk_clear_error();
    PK_CHECK_NULL(f);
    PK_CHECK(nx >= 1 && ny >= 1 && nz >= 1, PK_ESIZE,
             "field size %d x %d x %d: every extent must be >= 1", nx, ny, nz);
    PK_CHECK(isfinite(t), PK_ENONFINITE, "t: must be finite, got %g", t);
    PK_CHECK(t >= 0, PK_EINVAL, "t: must be >= 0, got %g", t);
    const double pi = 3.14159265358979323846, k = 2.0 * pi;
    const double dx = 1.0 / nx, dy = 1.0 / nx, dz = 1.0 / nx; /* l / NX on every axis */
    const double a = exp(-PK_D3_KAPPA * t * k * k);
    for (int z = 0; z < nz; ++z) {
        double fz = 1.0 - a * cos(k * dz * (z + 0.5));
        for (int y = 0; y < ny; ++y) {
            double fy = 1.0 - a * cos(k * dy * (y + 0.5));
            float *row = f + ((size_t)z * ny + y) * (size_t)nx;
            for (int x = 0; x < nx; ++x)
                row[x] = (float)(0.125 * (1.0 - a * cos(k * dx * (x + 0.5))) * fy * fz);
        }
    }
    return PK_OK;
}
