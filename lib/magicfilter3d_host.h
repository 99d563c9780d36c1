/* magicfilter3d_host.h - magicfilter3d on the host: what the serial
 * (lib/magicfilter3d_serial.c) and OpenMP (omp/magicfilter3d_omp.c) backends share with
 * lib/magicfilter3d.c, and the pass kernels of lib/magicfilter3d_simd.c. */
#ifndef PK_MAGICFILTER3D_HOST_H
#define PK_MAGICFILTER3D_HOST_H
#include "internal.h"

/* A pass kernel: lines [d0, d1) of pass p (dst rows are written for those lines only), so
 * that OpenMP can split the lines between threads and the serial variants call it once. */
typedef void (*pk_mf_pass_fn)(const pk_mf_pass *p, const double *g, const double *src,
                              double *dst, long d0, long d1);

/* The plan of both host backends: x -> w1 -> w2 -> y, every buffer 64-byte aligned.  w1
 * is y itself when y is large enough (periodic, grow), as in BigDFT's x -> y -> ww -> y;
 * x is never written, so a plan can run again on the same upload. */
typedef struct pk_mf_host_plan {
    pk_mf_desc d;
    char variant[32];
    double *x, *w1, *w2, *y;
    double *w1_own;           /* w1 when it is not y (shrink) */
    pk_mf_pass_fn pass;       /* the variant's pass kernel (NULL: serial-direct) */
    int nt;                   /* host threads (OpenMP) */
    pk_status (*run)(void *impl, double *seconds); /* the backend's three passes */
} pk_mf_host_plan;

pk_status pk_mf_host_create(const pk_mf_desc *desc, pk_mf_host_plan **plan);
pk_status pk_mf_host_upload(void *impl, const double *x, double *seconds);
pk_status pk_mf_host_download(void *impl, double *y, double *seconds);
/** The host backends' execute: the first pass reads the caller's x and the last writes the
 *  caller's y (which also serves as w1 where the plan's y does), nothing copied, at any
 *  double's address (malloc's and numpy's 16 bytes too: the vector passes load the input
 *  by scalar broadcasts and stream only whole 64-byte lines of a row).  x and y that
 *  overlap go through the plan's buffers instead. */
pk_status pk_mf_host_execute(void *impl, const double *x, double *y, double *kernel_seconds,
                             double *transfer_seconds);
void pk_mf_host_destroy(void *impl);

/* Pass kernels (lib/magicfilter3d_simd.c):
 *  unrolled: scalar, the 16 taps unrolled, 4 lines at a time so each output row is written
 *            4 contiguous doubles at a time;
 *  simd:     hand-vectorised (AVX-512 / AVX2+FMA intrinsics, picked once from the CPU's ISA;
 *            portable C elsewhere): several outputs per step with shifted filter copies. */
void pk_mf_pass_serial(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                       long d0, long d1);
void pk_mf_pass_unrolled(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                         long d0, long d1);
void pk_mf_pass_simd(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                     long d0, long d1);
/** Lines from line d of a pass's output dst (a transposed row holds lines d, d + 1, ...)
 *  to the first whose rows start a 64-byte line (0..7; dst at a double's address): where the
 *  simd pass starts its line groups, and the OpenMP backend its threads' shares. */
long pk_mf_line_lead(const double *dst, long d);
/** The simd pass's ISA: the CPU's best lowered by magicfilter3d.isa of t (PK_EINVAL naming
 *  the variable when the environment's value names no ISA); pk_mf_simd_plan sets a plan's
 *  passes to it. */
pk_status pk_mf_simd_isa(const pk_tuning *t, int *isa);
pk_status pk_mf_simd_plan(pk_mf_host_plan *h);
/** One pass over all its lines on nt OpenMP threads, split as the OpenMP plan splits them
 *  (omp/magicfilter3d_omp.c); one thread without OpenMP. */
void pk_omp_mf_pass(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                    pk_mf_pass_fn pass, int nt);

/* Backend entry points. */
pk_status pk_serial_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl);
pk_status pk_serial_mf_run(void *impl, double *seconds);
pk_status pk_omp_mf_create(void *state, int device, const pk_mf_desc *desc, void **impl);
pk_status pk_omp_mf_run(void *impl, double *seconds);

#endif
