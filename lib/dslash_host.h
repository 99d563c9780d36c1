/* dslash_host.h - dslash on the host: what the serial (lib/dslash_serial.c) and OpenMP
 * (omp/dslash_omp.c) backends share with lib/dslash.c, and the shared pieces of the
 * spin-projected kernels.
 *
 * Spin projection (DeGrand-Rossi basis, docs/KERNELS.md 4c).  For a 4-spinor p,
 * (1 + s gamma_mu) p (s = -1 for the forward term, +1 for the backward one) has only two
 * independent spin components: the "half spinor"
 *     h0 = p0 + s a0 p[pr0],   h1 = p1 + s a1 p[pr1]
 * and the lower two components are multiples of h:
 *     r2 = s b2 h[q2],         r3 = s b3 h[q3],
 * with a, b in {1, i, -1, -i}, read off the gamma matrices (e.g. gamma_x p = (i p3, i p2,
 * -i p1, -i p0), so (1 + gamma_x) p has h = (p0 + i p3, p1 + i p2), r2 = -i h1, r3 = -i h0);
 * the tests check every backend against lib/ref/dslash_ref.c, which uses the full matrices:
 *     mu   pr    a          q     b
 *     x   3,2   i,  i      1,0   -i, -i
 *     y   3,2  -1,  1      1,0    1, -1
 *     z   2,3   i, -i      0,1   -i,  i
 *     t   2,3   1,  1      0,1    1,  1
 * The colour multiply commutes with the spin projection, so a term costs 12 flops of
 * projection, two SU(3) x colour-vector products (132) and the accumulation: 1320 flops per
 * site (QUDA's and QPhiX's count), against 2 x 4 x 66 for the products of full spinors. */
#ifndef PK_DSLASH_HOST_H
#define PK_DSLASH_HOST_H
#include "internal.h"

/* Units a, b of the table above: 0: +1, 1: +i, 2: -1, 3: -i (i^k). */
typedef struct pk_ds_proj {
    int pr[2], a[2]; /* h_k = p_k + s i^a[k] p[pr[k]] */
    int q[2], b[2];  /* r_{2+k} = s i^b[k] h[q[k]] */
} pk_ds_proj;
extern const pk_ds_proj pk_ds_proj_table[4];

/* The virtual-node geometry of an omp-vnode plan (the template below). */
typedef struct pk_ds_vnode {
    int lanes, split;    /* W sub-lattices along direction split (0..3 = x..t) */
    int lr[4];           /* reduced extents: lr[split] = L[split] / W, the others L */
    size_t vo;           /* outer sites: volume / W */
    int recon12;
    double diag;         /* 1 / (2 kappa) */
} pk_ds_vnode;

/* An omp-vnode kernel instantiation: outer rows [r0, r1). */
typedef void (*pk_ds_vnode_fn)(const pk_ds_vnode *g, const double *u, const double *psi,
                               double *chi, size_t r0, size_t r1);

/* The host plan of the serial and OpenMP backends.  u, psi and chi are 64-byte aligned, in
 * the lexicographic layout of pk_ds_desc, or in a backend layout when the backend sets the
 * conversion hooks (OpenMP omp-vnode: lanes of sub-lattices), which upload and download
 * call in place of the copies. */
typedef struct pk_ds_host_plan pk_ds_host_plan;
struct pk_ds_host_plan {
    pk_ds_desc d;
    char variant[32];
    double *u, *psi, *chi;
    size_t u_len, spinor_len; /* doubles held */
    int nt;                   /* host threads (OpenMP); 1 for serial */
    const pk_ds_ops *ops;     /* the backend's own table (its run) */
    /* Backend layout (NULL: lexicographic, plain copies); pack's u NULL: psi only. */
    void (*pack)(pk_ds_host_plan *h, const double *u, const double *psi);
    void (*unpack)(const pk_ds_host_plan *h, double *chi);
    /* The first upload's first touch of the fields (NULL: the copies touch them): OpenMP
     * zeroes them with the kernel's split of rows. */
    void (*first_touch)(pk_ds_host_plan *h);
    int touched;
    /* omp-vnode */
    pk_ds_vnode vn;
    pk_ds_vnode_fn vnode_rows;
    char note[128]; /* appended to the run info's reason ("8 lanes along t, avx512f") */
};

/** Allocate a host plan holding u_len + 2 spinor_len doubles, untouched until its first
 *  upload (a plan that only executes on the caller's arrays never pays their page faults;
 *  a run before any upload is refused by lib/dslash.c's plan state). */
pk_status pk_ds_host_create(const pk_ds_desc *desc, size_t u_len, size_t spinor_len,
                            pk_ds_host_plan **plan);
/** u NULL: psi only, the links already in the plan (plan_execute_psi). */
pk_status pk_ds_host_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_ds_host_download(void *impl, double *chi, double *seconds);
/** The host backends' execute: on lexicographic plans (serial, omp) the kernel reads the
 *  caller's u (as the desc says: two rows when recon12) and psi and writes its chi (swapped
 *  in for the plan's arrays), nothing copied; the scalar kernel needs no alignment.  A plan
 *  in a backend layout (omp-vnode: the pack and unpack hooks are its upload and download),
 *  or a chi that overlaps u or psi, goes through the plan's arrays (upload, run, download:
 *  transfer).  u NULL: the links the plan holds (uploaded before; plan_execute_psi). */
pk_status pk_ds_host_execute(void *impl, const double *u, const double *psi, double *chi,
                             double *kernel_seconds, double *transfer_seconds);
/** Whether a backend's plan (its ops and impl) is a lexicographic host plan (serial, omp: no
 *  lanes), whose kernels can read a recon12 call's rows 0 and 1 of full links in place. */
int pk_ds_host_reads_full(const pk_ds_ops *ops, const void *impl);
/** recon12 on such a plan: chi = M psi on the caller's full links u [4 V][3][3] (rows 0 and 1
 *  read in place, row 2 rebuilt as from the compressed links: the same bits), psi and chi;
 *  chi must not overlap u or psi.  No copy, no conversion. */
pk_status pk_ds_host_execute_full(void *impl, const double *u, const double *psi, double *chi,
                                  double *kernel_seconds);
void pk_ds_host_destroy(void *impl);

/** The spin-projected kernel on lexicographic data, for the rows (t, z, y) with flat index
 *  (t Z + z) Y + y in [r0, r1): the serial variant, and the OpenMP "omp" variant per thread. */
void pk_ds_rows(const pk_ds_desc *d, const double *u, const double *psi, double *chi, size_t r0,
                size_t r1);

/* The rows a plan computes: t in [t0, t1), z in [z0, z1), every y (pk_ds_desc), numbered
 * (t zr + z) yr + y in a lattice of zr z-planes a t-plane and yr rows a z-plane (the
 * lexicographic one, or omp-vnode's reduced one, which never splits a ranged direction: an
 * unranged direction is whole in the reduced extents too). */
typedef struct pk_ds_box {
    size_t t0, z0, nt, nz; /* the box, in the lattice's planes */
    size_t yr, zr;
} pk_ds_box;

static inline pk_ds_box pk_ds_box_of(const pk_ds_desc *d, const int *L)
{
    const int tr = d->t0 != 0 || d->t1 != d->dims[3], zr = d->z0 != 0 || d->z1 != d->dims[2];
    pk_ds_box b;
    b.t0 = tr ? (size_t)d->t0 : 0;
    b.nt = tr ? (size_t)(d->t1 - d->t0) : (size_t)L[3];
    b.z0 = zr ? (size_t)d->z0 : 0;
    b.nz = zr ? (size_t)(d->z1 - d->z0) : (size_t)L[2];
    b.yr = (size_t)L[1];
    b.zr = (size_t)L[2];
    return b;
}

/* Rows in the box. */
static inline size_t pk_ds_box_rows(const pk_ds_box *b) { return b->nt * b->nz * b->yr; }

/* Box rows [k, end) start with a run of consecutive lattice rows: its first row (*row) and
 * length (the rest of box row k's t-plane, or all of them when the box's z-planes are whole). */
static inline size_t pk_ds_box_run(const pk_ds_box *b, size_t k, size_t end, size_t *row)
{
    const size_t per_t = b->nz * b->yr; /* box rows of one t-plane */
    *row = (b->t0 + k / per_t) * b->zr * b->yr + b->z0 * b->yr + k % per_t;
    if (b->nz == b->zr) return end - k;
    const size_t left = per_t - k % per_t;
    return end - k < left ? end - k : left;
}

/** The plain formula (full 4x4 gammas, full 3x3 links): lib/ref/dslash_ref.c. */
void pk_ds_ref_apply(const pk_ds_desc *d, const double *u, const double *psi, double *chi);

/* Backend entry points. */
pk_status pk_serial_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_serial_ds_run(void *impl, double *kernel_seconds);
pk_status pk_omp_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_omp_ds_run(void *impl, double *kernel_seconds);

#endif

/* ==== omp-vnode kernel template ================================================================
 * omp/dslash_omp.c includes this header once per lane count with
 *     DS_VNODE_W       lanes (8, 4, 2 or 1): sub-lattices per vector of doubles,
 *     DS_VN(name)      pastes the instantiation's suffix onto a name,
 *     DS_VN_TARGET     the function attribute of its ISA (target("avx512f"), or empty),
 * so that one text (GCC/Clang vector extensions) gives the AVX-512, AVX2 and baseline
 * kernels.  Layout (pk_ds_vnode): the lattice split into W sub-lattices along direction
 * `split`, lane w of outer site o holding the site whose split coordinate is c'[split] + w
 * Lr[split]; psi, chi [Vo][4][3][re, im][W], u [4][Vo][rows][3][re, im][W] (rows 3, or 2
 * with recon12).  A neighbour along a direction other than `split` is the same lane of the
 * neighbouring outer site; across the sub-lattice boundary it is the next (forward) or
 * previous (backward) lane: the forward half spinor is rotated before its product, the
 * backward product after it, 12 vector permutes where a stencil on lexicographic data would
 * need a gather per site. */
#if defined(DS_VNODE_W) && defined(DS_VN)

typedef double DS_VN(ds_vd) __attribute__((vector_size(8 * DS_VNODE_W), __may_alias__));
typedef long long DS_VN(ds_vi) __attribute__((vector_size(8 * DS_VNODE_W)));
typedef struct DS_VN(ds_vc) {
    DS_VN(ds_vd) re, im;
} DS_VN(ds_vc);

/* new[w] = old[w + 1] (dir > 0) or old[w - 1] (dir < 0), lanes modulo W. */
#if defined(__clang__)
#define DS_VN_SHUF(v, ...) __builtin_shufflevector((v), (v), __VA_ARGS__)
#else
#define DS_VN_SHUF(v, ...) __builtin_shuffle((v), (DS_VN(ds_vi)){__VA_ARGS__})
#endif
DS_VN_TARGET static inline DS_VN(ds_vd) DS_VN(ds_rot)(DS_VN(ds_vd) v, int dir)
{
#if DS_VNODE_W == 8
    return dir > 0 ? DS_VN_SHUF(v, 1, 2, 3, 4, 5, 6, 7, 0) : DS_VN_SHUF(v, 7, 0, 1, 2, 3, 4, 5, 6);
#elif DS_VNODE_W == 4
    return dir > 0 ? DS_VN_SHUF(v, 1, 2, 3, 0) : DS_VN_SHUF(v, 3, 0, 1, 2);
#elif DS_VNODE_W == 2
    (void)dir;
    return DS_VN_SHUF(v, 1, 0);
#else
    (void)dir;
    return v;
#endif
}
#undef DS_VN_SHUF

/* z i^k, lane-wise */
DS_VN_TARGET static inline DS_VN(ds_vc) DS_VN(ds_unit)(DS_VN(ds_vc) z, int k)
{
    switch (k & 3) {
    case 0: return z;
    case 1: return (DS_VN(ds_vc)){-z.im, z.re};
    case 2: return (DS_VN(ds_vc)){-z.re, -z.im};
    default: return (DS_VN(ds_vc)){z.im, -z.re};
    }
}

/* The complex number at vector pair k of a block (k = (spin 3 + colour) or (row 3 + col)). */
DS_VN_TARGET static inline DS_VN(ds_vc) DS_VN(ds_ld)(const double *block, int k)
{
    const DS_VN(ds_vd) *v = (const DS_VN(ds_vd) *)block;
    return (DS_VN(ds_vc)){v[2 * k], v[2 * k + 1]};
}

/* A link block (rows 2 or 3) as a full matrix: recon12 rebuilds row 2 = conj(row0 x row1). */
DS_VN_TARGET static inline void DS_VN(ds_link)(const double *l, int recon12,
                                                DS_VN(ds_vc) m[3][3])
{
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 3; ++b) m[a][b] = DS_VN(ds_ld)(l, 3 * a + b);
    if (!recon12) {
        for (int b = 0; b < 3; ++b) m[2][b] = DS_VN(ds_ld)(l, 6 + b);
        return;
    }
    for (int j = 0; j < 3; ++j) {
        const int k = (j + 1) % 3, l2 = (j + 2) % 3;
        const DS_VN(ds_vc) a = m[0][k], b = m[1][l2], c = m[0][l2], e = m[1][k];
        m[2][j].re = (a.re * b.re - a.im * b.im) - (c.re * e.re - c.im * e.im);
        m[2][j].im = (c.re * e.im + c.im * e.re) - (a.re * b.im + a.im * b.re);
    }
}

/* acc += (1 + s gamma_mu) W p as in lib/dslash_serial.c, lane-wise; rot: lane rotation of
 * the neighbour (+1: forward across the boundary, rotate h; -1: backward, rotate W h). */
DS_VN_TARGET static inline void DS_VN(ds_term)(DS_VN(ds_vc) acc[4][3], const pk_ds_proj *P, int s,
                                                const DS_VN(ds_vc) m[3][3], int dagger,
                                                const double *p, int rot)
{
    const int sh = s < 0 ? 2 : 0;
    DS_VN(ds_vc) h[2][3], w[2][3];
    for (int k = 0; k < 2; ++k)
        for (int a = 0; a < 3; ++a) {
            const DS_VN(ds_vc) x = DS_VN(ds_ld)(p, 3 * k + a);
            const DS_VN(ds_vc) y = DS_VN(ds_unit)(DS_VN(ds_ld)(p, 3 * P->pr[k] + a), P->a[k] + sh);
            h[k][a].re = x.re + y.re;
            h[k][a].im = x.im + y.im;
            if (rot > 0) {
                h[k][a].re = DS_VN(ds_rot)(h[k][a].re, 1);
                h[k][a].im = DS_VN(ds_rot)(h[k][a].im, 1);
            }
        }
    for (int k = 0; k < 2; ++k)
        for (int a = 0; a < 3; ++a) {
            DS_VN(ds_vd) re = (DS_VN(ds_vd)){0}, im = (DS_VN(ds_vd)){0};
            for (int b = 0; b < 3; ++b) {
                const DS_VN(ds_vd) er = dagger ? m[b][a].re : m[a][b].re;
                const DS_VN(ds_vd) ei = dagger ? -m[b][a].im : m[a][b].im;
                re += er * h[k][b].re - ei * h[k][b].im;
                im += er * h[k][b].im + ei * h[k][b].re;
            }
            if (rot < 0) {
                re = DS_VN(ds_rot)(re, -1);
                im = DS_VN(ds_rot)(im, -1);
            }
            w[k][a].re = re;
            w[k][a].im = im;
        }
    for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 2; ++k) {
            acc[k][a].re += w[k][a].re;
            acc[k][a].im += w[k][a].im;
            const DS_VN(ds_vc) r = DS_VN(ds_unit)(w[P->q[k]][a], P->b[k] + sh);
            acc[2 + k][a].re += r.re;
            acc[2 + k][a].im += r.im;
        }
}

/* Outer rows [r0, r1) (row = (t' Zr + z') Yr + y' of the reduced lattice). */
DS_VN_TARGET static void DS_VN(ds_vnode_rows)(const pk_ds_vnode *g, const double *u,
                                               const double *psi, double *chi, size_t r0,
                                               size_t r1)
{
    enum { W = DS_VNODE_W, SB = 24 * DS_VNODE_W };
    const size_t X = (size_t)g->lr[0], Y = (size_t)g->lr[1], Z = (size_t)g->lr[2],
                 T = (size_t)g->lr[3], Vo = g->vo;
    const size_t LB = (size_t)(g->recon12 ? 12 : 18) * W; /* doubles per link block */
    const DS_VN(ds_vd) diag = (DS_VN(ds_vd)){0} + g->diag, half = (DS_VN(ds_vd)){0} + 0.5;
    for (size_t r = r0; r < r1; ++r) {
        const size_t y = r % Y, z = r / Y % Z, t = r / (Y * Z);
        const size_t c[4] = {0, y, z, t}, L[4] = {X, Y, Z, T}, rs[4] = {0, 1, Y, Y * Z};
        size_t rowf[4], rowb[4];
        int rotf[4], rotb[4];
        for (int mu = 1; mu < 4; ++mu) {
            rowf[mu] = c[mu] + 1 == L[mu] ? r - c[mu] * rs[mu] : r + rs[mu];
            rowb[mu] = c[mu] == 0 ? r + (L[mu] - 1) * rs[mu] : r - rs[mu];
            rotf[mu] = g->split == mu && c[mu] + 1 == L[mu];
            rotb[mu] = g->split == mu && c[mu] == 0;
        }
        rowf[0] = rowb[0] = r;
        for (size_t x = 0; x < X; ++x) {
            const size_t o = r * X + x;
            rotf[0] = g->split == 0 && x + 1 == X;
            rotb[0] = g->split == 0 && x == 0;
            DS_VN(ds_vc) acc[4][3];
            for (int k = 0; k < 4; ++k)
                for (int a = 0; a < 3; ++a) acc[k][a].re = acc[k][a].im = (DS_VN(ds_vd)){0};
            for (int mu = 0; mu < 4; ++mu) {
                const size_t fw = rowf[mu] * X + (mu == 0 ? (x + 1 == X ? 0 : x + 1) : x);
                const size_t bw = rowb[mu] * X + (mu == 0 ? (x == 0 ? X - 1 : x - 1) : x);
                DS_VN(ds_vc) m[3][3];
                DS_VN(ds_link)(u + LB * ((size_t)mu * Vo + o), g->recon12, m);
                DS_VN(ds_term)(acc, &pk_ds_proj_table[mu], -1, m, 0, psi + SB * fw, rotf[mu]);
                DS_VN(ds_link)(u + LB * ((size_t)mu * Vo + bw), g->recon12, m);
                DS_VN(ds_term)(acc, &pk_ds_proj_table[mu], +1, m, 1, psi + SB * bw,
                               -rotb[mu]);
            }
            const DS_VN(ds_vd) *p = (const DS_VN(ds_vd) *)(psi + SB * o);
            DS_VN(ds_vd) *out = (DS_VN(ds_vd) *)(chi + SB * o);
            for (int k = 0; k < 4; ++k)
                for (int a = 0; a < 3; ++a) {
                    const int i = 2 * (3 * k + a);
                    out[i] = diag * p[i] + half * acc[k][a].re;
                    out[i + 1] = diag * p[i + 1] + half * acc[k][a].im;
                }
        }
    }
}

#endif /* DS_VNODE_W && DS_VN */
