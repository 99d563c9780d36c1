/* dslash_host.h - dslash on the host: what the serial (lib/dslash_serial.c) and OpenMP
 * (omp/dslash_omp.c) backends share with lib/dslash.c, and the shared pieces of the
 * spin-projected kernels.
 *
 * Spin projection (DeGrand-Rossi basis, KERNELS.md 4c).  For a 4-spinor p, (1 + s gamma_mu) p
 * (s = -1 for the forward term, +1 for the backward one) has only two independent spin
 * components: the "half spinor"
 *     h0 = p0 + s a0 p[pr0],   h1 = p1 + s a1 p[pr1]
 * and the lower two components are multiples of h:
 *     r2 = s b2 h[q2],         r3 = s b3 h[q3],
 * with a, b in {1, i, -1, -i} (from the gamma matrices; derivation in lib/ref/dslash_ref.c's
 * tests and README):
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

/* The host plan of the serial and OpenMP backends.  u, psi and chi are 64-byte aligned, in
 * the lexicographic layout of pk_ds_desc, or in a backend layout when the backend sets the
 * conversion hooks (OpenMP omp-vnode: lanes of sub-lattices), which upload and download
 * call in place of the copies. */
typedef struct pk_ds_host_plan pk_ds_host_plan;
struct pk_ds_host_plan {
    pk_ds_desc d;
    char variant[32];
    double *u, *psi, *chi;
    size_t u_len, spinor_len; /* doubles held (>= the desc's: a layout may pad) */
    int nt;                   /* host threads (OpenMP); 1 for serial */
    /* Backend layout (NULL: lexicographic, plain copies). */
    void (*pack)(pk_ds_host_plan *h, const double *u, const double *psi);
    void (*unpack)(const pk_ds_host_plan *h, double *chi);
    /* omp-vnode: lanes, the split direction (0..3) and the ISA of the kernel. */
    int lanes, split;
    const char *isa;
};

/** Allocate a host plan holding u_len + 2 spinor_len doubles (zeroed: a run before the
 *  first upload sees zeros). */
pk_status pk_ds_host_create(const pk_ds_desc *desc, size_t u_len, size_t spinor_len,
                            pk_ds_host_plan **plan);
pk_status pk_ds_host_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_ds_host_download(void *impl, double *chi, double *seconds);
void pk_ds_host_destroy(void *impl);

/** The spin-projected kernel on lexicographic data, for the rows (t, z, y) with flat index
 *  (t Z + z) Y + y in [r0, r1): the serial variant, and the OpenMP "omp" variant per thread. */
void pk_ds_rows(const pk_ds_desc *d, const double *u, const double *psi, double *chi, size_t r0,
                size_t r1);

/** The plain formula (full 4x4 gammas, full 3x3 links): lib/ref/dslash_ref.c. */
void pk_ds_ref_apply(const pk_ds_desc *d, const double *u, const double *psi, double *chi);

/* Backend entry points. */
pk_status pk_serial_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_serial_ds_run(void *impl, double *kernel_seconds);
pk_status pk_omp_ds_create(void *state, int device, const pk_ds_desc *desc, void **impl);
pk_status pk_omp_ds_run(void *impl, double *kernel_seconds);

#endif
