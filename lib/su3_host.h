/* su3_host.h - su3 on the host: what the serial (lib/su3_serial.c) and OpenMP
 * (omp/su3_omp.c) backends share with lib/su3.c, and the layout's index arithmetic that
 * every implementation (the OpenCL and CUDA kernels included) follows. */
#ifndef PK_SU3_HOST_H
#define PK_SU3_HOST_H
#include "internal.h"
#include "lattice_index.h"

/* Doubles of u per site in the AoS-like layouts (aos, short, padded, recon12); psi and chi
 * have 24 per site in every layout. */
#define PK_S3_U_AOS 18
#define PK_S3_U_SHORT 16
#define PK_S3_U_PADDED 24
#define PK_S3_U_RECON12 12
#define PK_S3_SPINOR 24
#define PK_S3_VFO_ALIGN 4 /* vfo rows hold a multiple of 4 sites (64 bytes of complex) */

/** Fill d from validated parameters (nv >= 1, layout known, nw in 0 .. PK_SU3_NW_MAX):
 *  nw resolved, padded site count and array sizes.  Returns PK_EOVERFLOW when the arrays'
 *  bytes overflow size_t. */
pk_status pk_s3_desc_init(pk_s3_desc *d, const pk_su3_params *p);

/** The doubles of one field (u: field 0; psi or chi: field 1) that belong to the sites
 *  [s0, s1) of the padded range: `rows` runs of `len` doubles, the first at `start`, the
 *  next ones `stride` apart (vfo: one run per matrix or spinor component; every other
 *  layout: one run).  s0 and s1 must be multiples of nw in hvfo. */
typedef struct pk_s3_span {
    size_t rows, stride, start, len;
} pk_s3_span;
void pk_s3_span_of(const pk_s3_desc *d, int field, size_t s0, size_t s1, pk_s3_span *sp);

/** The part [s0, s1) of the padded sites that thread t of nt works on: contiguous, static,
 *  in whole hvfo blocks or whole 64-byte lines of every output row (so two threads never
 *  write into the same cache line). */
void pk_s3_share(const pk_s3_desc *d, int t, int nt, size_t *s0, size_t *s1);

/* Doubles from one site's link to the next in the u a kernel reads (pk_s3_desc.u_site). */
static inline size_t pk_s3_u_stride(const pk_s3_desc *d)
{
    return d->u_site ? (size_t)d->u_site : (size_t)pk_s3_u_per_site(d->layout);
}

/* Rebuilding a link's missing elements into m[18] (AoS, interleaved complex), the formulas
 * of portkern.h; every host kernel uses these (the device kernels spell out the same).
 * short (16 doubles): u22 = conj(u00 u11 - u01 u10). */
static inline void pk_s3_from_short(const double *restrict s, double *restrict m)
{
    for (int i = 0; i < 16; ++i) m[i] = s[i];
    const double a_r = s[0], a_i = s[1], b_r = s[8], b_i = s[9]; /* u00, u11 */
    const double c_r = s[2], c_i = s[3], d_r = s[6], d_i = s[7]; /* u01, u10 */
    m[16] = (a_r * b_r - a_i * b_i) - (c_r * d_r - c_i * d_i);
    m[17] = -((a_r * b_i + a_i * b_r) - (c_r * d_i + c_i * d_r));
}

/* recon12 (rows 0 and 1, 12 doubles): u2i = conj(u0j u1k - u0k u1j), (i, j, k) cyclic. */
static inline void pk_s3_from_recon12(const double *restrict r, double *restrict m)
{
    for (int i = 0; i < 12; ++i) m[i] = r[i];
    for (int i = 0; i < 3; ++i) {
        const int j = i == 2 ? 0 : i + 1, k = i == 0 ? 2 : i - 1;
        const double *a = r + 2 * j, *b = r + 6 + 2 * k, *c = r + 2 * k, *d = r + 6 + 2 * j;
        m[12 + 2 * i] = (a[0] * b[0] - a[1] * b[1]) - (c[0] * d[0] - c[1] * d[1]);
        m[13 + 2 * i] = -((a[0] * b[1] + a[1] * b[0]) - (c[0] * d[1] + c[1] * d[0]));
    }
}

/* Plain C kernels (lib/su3_serial.c), one loop per layout, written for the compiler's
 * auto-vectoriser: chi = u psi for the padded sites [s0, s1) of d's layout. */
void pk_s3_plain_range(const pk_s3_desc *d, const double *u, const double *psi, double *chi,
                       size_t s0, size_t s1);

/* The plan of both host backends: u, psi, chi in the layout, 64-byte aligned. */
typedef struct pk_s3_host_plan {
    pk_s3_desc d;
    char variant[32];
    double *u, *psi, *chi;
    int nt;      /* host threads (OpenMP; 1 for serial) */
    int simd;    /* OpenMP: the hand-vectorised kernels (omp-simd) */
    int stream;  /* omp-simd: non-temporal stores for chi */
    int isa;     /* omp-simd: the ISA chosen at creation */
    const pk_s3_ops *ops; /* the backend's own table (its upload, run and download) */
    /* The backend's kernel on the padded sites [s0, s1) of the lattice d (the plan's, or one
     * block's in the fused call below), one thread; stream: non-temporal chi stores where the
     * variant has them and chi starts on a line (the caller's array in an AoS-spinor layout). */
    void (*range)(const struct pk_s3_host_plan *h, const pk_s3_desc *d, const double *u,
                  const double *psi, double *chi, size_t s0, size_t s1, int stream);
    /* The layout's kernel straight on AoS u, psi and chi for the sites [s0, s1), its
     * conversions in registers (OpenMP omp-simd: vfo, hvfo with nw a multiple of 8); NULL:
     * the fused call packs blocks.  stream: non-temporal chi stores at any 8-byte offset. */
    void (*aos_range)(const double *u, const double *psi, double *chi, size_t s0, size_t s1,
                      int stream);
    double *blocks;           /* the fused call's per-thread block arrays (its first call) */
    size_t blocks_per_thread; /* doubles */
} pk_s3_host_plan;

/** Allocate the three arrays (nothing touched: the backend places the pages). */
/* The plan without its arrays: they are made by the first upload (pk_s3_host_arrays), so a
 * plan that only executes on the caller's arrays allocates and touches nothing. */
pk_status pk_s3_host_alloc(const pk_s3_desc *desc, pk_s3_host_plan **plan);
/** u, psi and chi of the plan, allocated if they are not yet (*fresh: just now, untouched). */
pk_status pk_s3_host_arrays(pk_s3_host_plan *h, int *fresh);
pk_status pk_s3_host_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_s3_host_download(void *impl, double *chi, double *seconds);
/** The host backends' execute: the kernel reads the caller's u and psi and writes its chi
 *  (swapped in for the plan's arrays), nothing copied.  Arrays not aligned as the layout's
 *  vector kernels need (8 bytes for the AoS-spinor layouts, 64 for vfo and hvfo), or a chi
 *  over u or psi, go through the plan's arrays instead. */
pk_status pk_s3_host_execute(void *impl, const double *u, const double *psi, double *chi,
                             double *kernel_seconds, double *transfer_seconds);
/** The host backends' execute_canonical (pk_s3_ops): chi = u psi on the caller's AoS arrays
 *  for a plan in another layout, fused: blocks of sites that fit in a core's L2 are packed
 *  into the layout, computed and chi unpacked, one block per thread at a time, so memory
 *  sees the traffic of the AoS kernel and no whole-array copy is made; where the backend has
 *  an aos_range (conversions in registers) it runs that on the arrays instead, all of its
 *  time kernel_s.  chi must not overlap u or psi (lib/su3.c routes such calls to the staged
 *  path).  Bit-identical to the staged path (the same per-site arithmetic).
 *  *layout_seconds: the conversions' share (thread 0's). */
pk_status pk_s3_host_execute_canonical(void *impl, const double *u, const double *psi, double *chi,
                                       double *kernel_seconds, double *layout_seconds);
void pk_s3_host_destroy(void *impl);

/* Backend entry points. */
pk_status pk_serial_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl);
pk_status pk_serial_s3_run(void *impl, double *kernel_seconds);
pk_status pk_omp_s3_create(void *state, int device, const pk_s3_desc *desc, void **impl);
pk_status pk_omp_s3_upload(void *impl, const double *u, const double *psi, double *seconds);
pk_status pk_omp_s3_download(void *impl, double *chi, double *seconds);
pk_status pk_omp_s3_run(void *impl, double *kernel_seconds);

#endif
