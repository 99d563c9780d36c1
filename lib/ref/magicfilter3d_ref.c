/* magicfilter3d_ref.c - the serial reference of docs/KERNELS.md section 2, written for clarity:
 * the taps as BigDFT prints them, one 1-D pass with the index rule of pk_mf_pass (modulo,
 * zero outside, or inside), and the six-loop triple sum the tests use as a second oracle. */
#include "magicfilter3d_host.h"

#include <string.h>

/* f_{-8} .. f_{7}, BigDFT convrot_n_per's DATA statement (the decimal strings round to
 * these doubles; they sum to exactly 1.0 in double). */
static const double mf_taps[16] = {
    8.4334247333529341094733325815816e-7,
    -0.1290557201342060969516786758559028e-4,
    0.8762984476210559564689161894116397e-4,
    -0.30158038132690463167163703826169879e-3,
    0.174723713672993903449447812749852942e-2,
    -0.942047030201080385922711540948195075e-2,
    0.2373821463724942397566389712597274535e-1,
    0.612625895831207982195380597e-1,
    0.9940415697834003993178616713,
    -0.604895289196983516002834636e-1,
    -0.2103025160930381434955489412839065067e-1,
    0.1337263414854794752733423467013220997e-1,
    -0.344128144493493857280881509686821861e-2,
    0.49443227688689919192282259476750972e-3,
    -0.5185986881173432922848639136911487e-4,
    2.72734492911979659657715313017228e-6,
};

const double *pk_magicfilter_taps(void) { return mf_taps; }

void pk_mf_desc_init(pk_mf_desc *d, const pk_magicfilter3d_params *p)
{
    memset(d, 0, sizeof *d);
    d->n[0] = p->n1;
    d->n[1] = p->n2;
    d->n[2] = p->n3;
    d->transpose = p->transpose;
    d->bc = p->bc;
    for (int k = 0; k < 16; ++k) d->g[k] = p->transpose ? mf_taps[15 - k] : mf_taps[k];
    for (int a = 0; a < 3; ++a) {
        d->in[a] = d->n[a] + (p->bc == PK_MF_SHRINK ? 15 : 0);
        d->out[a] = d->n[a] + (p->bc == PK_MF_GROW ? 15 : 0);
    }
    const int off = p->bc == PK_MF_GROW ? -15 : p->bc == PK_MF_SHRINK ? 0 : p->transpose ? -7 : -8;
    /* Pass 1 runs along axis 1 over the lines (i2, i3); pass 2 along axis 2 over (i3, J1);
     * pass 3 along axis 3 over (J1, J2): each pass rotates the axes once. */
    const long ndat[3] = {(long)d->in[1] * d->in[2], (long)d->in[2] * d->out[0],
                          (long)d->out[0] * d->out[1]};
    for (int a = 0; a < 3; ++a) {
        d->pass[a].nin = d->in[a];
        d->pass[a].nout = d->out[a];
        d->pass[a].ndat = ndat[a];
        d->pass[a].off = off;
        d->pass[a].bc = p->bc;
    }
    d->in_count = (size_t)d->in[0] * (size_t)d->in[1] * (size_t)d->in[2];
    d->out_count = (size_t)d->out[0] * (size_t)d->out[1] * (size_t)d->out[2];
    d->work_count[0] = (size_t)d->out[0] * (size_t)d->in[1] * (size_t)d->in[2];
    d->work_count[1] = (size_t)d->out[0] * (size_t)d->out[1] * (size_t)d->in[2];
}

void pk_mf_pass_ref(const pk_mf_pass *p, const double *g, const double *src, double *dst)
{
    for (long d = 0; d < p->ndat; ++d) {
        const double *line = src + (size_t)d * (size_t)p->nin;
        for (int j = 0; j < p->nout; ++j) {
            double s = 0.0;
            for (int k = 0; k < 16; ++k) {
                int t = j + k + p->off;
                if (p->bc == PK_MF_PERIODIC)
                    t = pk_mf_wrap(t, p->nin);
                else if (t < 0 || t >= p->nin)
                    continue; /* grow: zero outside the input */
                s += g[k] * line[t];
            }
            dst[(size_t)j * (size_t)p->ndat + (size_t)d] = s;
        }
    }
}

/* The source index of output j along one axis and tap k, or -1 for a zero (grow). */
static long mf_src(const pk_mf_desc *d, int axis, int j, int k)
{
    int t = j + k + d->pass[axis].off;
    const int n = d->in[axis];
    if (d->bc == PK_MF_PERIODIC) return pk_mf_wrap(t, n);
    return t < 0 || t >= n ? -1 : t;
}

void pk_mf_direct(const pk_mf_desc *d, const double *x, double *y)
{
    const size_t in1 = (size_t)d->in[0], in2 = (size_t)d->in[1];
    for (int j3 = 0; j3 < d->out[2]; ++j3)
        for (int j2 = 0; j2 < d->out[1]; ++j2)
            for (int j1 = 0; j1 < d->out[0]; ++j1) {
                double s = 0.0;
                for (int c = 0; c < 16; ++c) {
                    const long i3 = mf_src(d, 2, j3, c);
                    if (i3 < 0) continue;
                    for (int b = 0; b < 16; ++b) {
                        const long i2 = mf_src(d, 1, j2, b);
                        if (i2 < 0) continue;
                        for (int a = 0; a < 16; ++a) {
                            const long i1 = mf_src(d, 0, j1, a);
                            if (i1 < 0) continue;
                            s += d->g[a] * d->g[b] * d->g[c] *
                                 x[((size_t)i3 * in2 + (size_t)i2) * in1 + (size_t)i1];
                        }
                    }
                }
                y[((size_t)j3 * (size_t)d->out[1] + (size_t)j2) * (size_t)d->out[0] +
                  (size_t)j1] = s;
            }
}
