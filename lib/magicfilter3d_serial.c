/* magicfilter3d_serial.c - the serial backend's magicfilter3d variants, one thread each:
 *   simd          hand-vectorised pass (lib/magicfilter3d_simd.c)
 *   unrolled      scalar pass, taps unrolled, several lines per step
 *   serial        the separable, transposing scheme in plain C (the paper's baseline)
 *   serial-direct the six-loop triple sum (a test oracle: 16^3 taps per point) */
#include "magicfilter3d_host.h"

#include <string.h>

/* The baseline pass: each line is copied once into a padded line (wrapped, or zeros for
 * grow) so that the tap loop has no index arithmetic; the outputs go to the transposed
 * position.  The padded line lives on the stack; lines longer than it index every tap
 * (their cost is in the memory traffic anyway). */
#define MF_PAD_MAX 4096

void pk_mf_pass_serial(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                       long d0, long d1)
{
    double pad[MF_PAD_MAX + 16];
    const int npad = p->nout + 15; /* positions j + k, k < 16 */
    const size_t ndat = (size_t)p->ndat;
    for (long d = d0; d < d1; ++d) {
        const double *line = src + (size_t)d * (size_t)p->nin;
        const double *in = line + p->off; /* shrink: off = 0, the line itself */
        if (p->bc != PK_MF_SHRINK && npad <= MF_PAD_MAX) {
            for (int t = 0; t < npad; ++t) {
                int s = t + p->off;
                if (p->bc == PK_MF_PERIODIC)
                    pad[t] = line[pk_mf_wrap(s, p->nin)];
                else
                    pad[t] = s >= 0 && s < p->nin ? line[s] : 0.0;
            }
            in = pad;
        } else if (p->bc != PK_MF_SHRINK) {
            for (int j = 0; j < p->nout; ++j) { /* a line too long to pad: index per tap */
                double s = 0.0;
                for (int k = 0; k < 16; ++k) {
                    const int t = j + k + p->off;
                    if (p->bc == PK_MF_PERIODIC)
                        s += g[k] * line[pk_mf_wrap(t, p->nin)];
                    else if (t >= 0 && t < p->nin)
                        s += g[k] * line[t];
                }
                dst[(size_t)j * ndat + (size_t)d] = s;
            }
            continue;
        }
        for (int j = 0; j < p->nout; ++j) {
            double s = 0.0;
            for (int k = 0; k < 16; ++k) s += g[k] * in[j + k];
            dst[(size_t)j * ndat + (size_t)d] = s;
        }
    }
}

pk_status pk_serial_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl)
{
    pk_mf_host_plan *h;
    PK_TRY(pk_mf_host_create(desc, &h));
    const char *v = h->variant;
    pk_status s = !strcmp(v, "simd") ? pk_mf_simd_plan(h) : PK_OK;
    if (s != PK_OK) {
        pk_mf_host_destroy(h);
        return s;
    }
    h->pass = !strcmp(v, "simd")       ? pk_mf_pass_simd
              : !strcmp(v, "unrolled") ? pk_mf_pass_unrolled
              : !strcmp(v, "serial")   ? pk_mf_pass_serial
                                       : NULL; /* serial-direct */
    h->nt = 1;
    h->run = pk_serial_mf_run;
    *impl = h;
    return PK_OK;
}

pk_status pk_serial_mf_run(void *impl, double *seconds)
{
    pk_mf_host_plan *h = impl;
    const pk_mf_desc *d = &h->d;
    const double t0 = pk_now();
    if (!h->pass) {
        pk_mf_direct(d, h->x, h->y);
    } else {
        h->pass(&d->pass[0], d->g, h->x, h->w1, 0, d->pass[0].ndat);
        h->pass(&d->pass[1], d->g, h->w1, h->w2, 0, d->pass[1].ndat);
        h->pass(&d->pass[2], d->g, h->w2, h->y, 0, d->pass[2].ndat);
    }
    *seconds = pk_now() - t0;
    return PK_OK;
}

/* The magicfilter3d kernel family on this backend (lib/internal.h, pk_mf_ops). */
const pk_mf_ops pk_serial_mf_ops = {
    .variants = "simd,unrolled,serial,serial-direct",
    .create = pk_serial_mf_create,
    .upload = pk_mf_host_upload,
    .run = pk_serial_mf_run,
    .download = pk_mf_host_download,
    .destroy = pk_mf_host_destroy,
    .execute = pk_mf_host_execute,
};
