/* lattice_index.h - where an element of the lattice kernels' layouts lies (docs/KERNELS.md
 * 4a-4c): the index functions that the host conversions (lib/su3.c, lib/laplace2d.c) and the
 * device ones (cuda/su3.cu, cuda/laplace2d.cu, cuda/dslash.cu: plan_execute on the caller's
 * device arrays in the public layout) are written from, so the two give the same bits.  The
 * host loops walk these indices incrementally, in tiles (the conversions' speed is theirs);
 * the device kernels call them per element.
 *
 * Valid C99, C++ and CUDA C: the functions are __host__ __device__ under nvcc and under the
 * host emulation (cuda/emulate.h), plain static inline elsewhere.  Indices are size_t /
 * long long element offsets; no arithmetic on the values (every conversion is a permutation,
 * with elements dropped (su3 short, recon12) or zeros added (padded, padding sites)). */
#ifndef PK_LATTICE_INDEX_H
#define PK_LATTICE_INDEX_H

#include "portkern.h"

#if defined(__CUDACC__) || defined(PK_CUDA_EMULATE)
#define PK_HD __host__ __device__
#else
#define PK_HD
#endif

/* ---- su3 (4b) --------------------------------------------------------------------------- */
/* Doubles of u per site in the layout: aos, vfo, hvfo 18; short 16 (u22 dropped); padded 24
 * (6 zeros); recon12 12 (row 2 dropped).  psi and chi have 24 in every layout. */
static inline PK_HD int pk_s3_u_per_site(int layout)
{
    return layout == PK_SU3_SHORT     ? 16
           : layout == PK_SU3_PADDED  ? 24
           : layout == PK_SU3_RECON12 ? 12
                                      : 18;
}

/* The offset in a layout array of double k of site s, for a field of m doubles per site in
 * the layout (aos-like u: pk_s3_u_per_site; vfo and hvfo: 18 for u, 24 for spinors), nsites
 * the sites it stores (padding included), nw the hvfo block.  k < m; in the AoS-like layouts
 * double k of a site is AoS double k (k < min(m, 18): short and recon12 keep the first m,
 * padded adds zeros after 18).
 *   vfo:  complex element e = k / 2 of every site in a row: (k / 2) 2 nsites + 2 s + k % 2
 *   hvfo: blocks of nw sites, element-major inside: ((s / nw) m + k) nw + s % nw
 *   else: m s + k */
static inline PK_HD size_t pk_s3_index(int layout, int m, size_t nsites, int nw, size_t s,
                                       int k)
{
    if (layout == PK_SU3_VFO) return (size_t)(k >> 1) * 2 * nsites + 2 * s + (size_t)(k & 1);
    if (layout == PK_SU3_HVFO)
        return ((s / (size_t)nw) * (size_t)m + (size_t)k) * (size_t)nw + s % (size_t)nw;
    return (size_t)m * s + (size_t)k;
}

/* ---- laplace2d (4a) --------------------------------------------------------------------- */
/* Within a row of l floats: lexi column x = w m + x' (lane w, m = l / nw) lies in hvfo at
 * x' nw + w. */
static inline PK_HD int pk_lp_hvfo_col(int l, int nw, int x)
{
    const int m = l / nw;
    return (x % m) * nw + x / m;
}

/* ---- dslash on CUDA (4c; cuda/dslash.cu) ------------------------------------------------
 * The device arrays are component-major, complex numbers as pairs of doubles:
 *   psi' [12][V]: component c = 3 spin + colour of site x at complex c V + x;
 *   u    [4][n][V] (n = 9, or 6 for recon12): element e = 3 row + col of link mu of site x
 *        at complex (mu n + e) V + x;
 * the public ones are site-major: psi and chi [V][4][3], u [4][V][ns] (ns = 9; the two-row
 * links lib/dslash.c uploads for recon12: 6), complex c of site x at 12 x + c, element e of
 * link (mu, x) at (mu V + x) ns + e. */
static inline PK_HD size_t pk_ds_cm_index(size_t vol, int comp, size_t x)
{
    return (size_t)comp * vol + x;
}

static inline PK_HD size_t pk_ds_link_index(size_t vol, int n, int mu, int e, size_t x)
{
    return ((size_t)mu * (size_t)n + (size_t)e) * vol + x;
}

static inline PK_HD size_t pk_ds_site_link_index(size_t vol, int ns, int mu, int e, size_t x)
{
    return ((size_t)mu * vol + x) * (size_t)ns + (size_t)e;
}

#endif
