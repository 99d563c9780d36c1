/* laplace2d_host.h - laplace2d on the host: what the serial (lib/laplace2d_serial.c) and OpenMP
 * (omp/laplace2d_omp.c) backends share with lib/laplace2d.c and the reference
 * (lib/ref/laplace2d_ref.c). */
#ifndef PK_LAPLACE2D_HOST_H
#define PK_LAPLACE2D_HOST_H
#include "internal.h"

/* ---- the operator ----------------------------------------------------------------------
 * a = (float)sigma and inv = (float)(1 / (1 + 4a)) (the quotient in double); the reference
 * (lib/ref/laplace2d_ref.c) is the definition of one site's value, this is the same tree:
 * (c + a ((e + w) + (n + s))) inv.  A compiler may fuse c + a(...) into an FMA. */
void pk_lp_coefficients(double sigma, float *a, float *inv);

static inline float pk_lp_site(float c, float e, float w, float n, float s, float a, float inv)
{
    return (c + a * ((e + w) + (n + s))) * inv;
}

/* Reference steps on host buffers (lexicographic, modulo indexing): f1 holds the input,
 * *result points at the buffer holding the field after `count` iterations (f1 or f2). */
void pk_lp_ref_steps(int l, int count, float a, float inv, float *f1, float *f2, float **result);

/* ---- rows in the layout ------------------------------------------------------------------
 * A row of l floats is m = l/nw columns x' of nw lanes (lexi: nw = 1, m = l).  Interior
 * columns have their x neighbours one column (nw floats) away in the same lane, so the
 * interior of a row is one contiguous loop for any nw; only column 0 (west neighbour = column
 * m-1, one lane down) and column m-1 (east neighbour = column 0, one lane up) rotate lanes.
 * out = the operator on the row c given its north (y-1) and south (y+1) rows n and s; out
 * must not overlap c, n or s (n, s and c may be the same row when l <= 2). */
static inline void pk_lp_row(int l, int nw, float a, float inv, const float *restrict c,
                             const float *restrict n, const float *restrict s,
                             float *restrict out)
{
    const int m = l / nw;
    for (int w = 0; w < nw; ++w) { /* column 0 (also column m-1 when m == 1) */
        const float east = m > 1 ? c[nw + w] : c[w + 1 == nw ? 0 : w + 1];
        const float west = c[(m - 1) * nw + (w == 0 ? nw - 1 : w - 1)];
        out[w] = pk_lp_site(c[w], east, west, n[w], s[w], a, inv);
    }
    if (m == 1) return;
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (int i = nw; i < l - nw; ++i)
        out[i] = pk_lp_site(c[i], c[i + nw], c[i - nw], n[i], s[i], a, inv);
    const int last = (m - 1) * nw;
    for (int w = 0; w < nw; ++w) {
        const int i = last + w;
        out[i] = pk_lp_site(c[i], c[w + 1 == nw ? 0 : w + 1], c[i - nw], n[i], s[i], a, inv);
    }
}

/* One row of l floats from lexi to hvfo with nw lanes (to_hvfo) or back: a transpose of nw x
 * l/nw floats (lib/laplace2d.c; AVX2 blocks where the CPU has them).  src and dst apart. */
void pk_lp_reorder_row(int l, int nw, const float *src, float *dst, int to_hvfo);

/* Rows [y0, y1) of thread t of nt: the static partition of every host loop over the fields
 * (first touch, copies, iterations), so each thread sweeps the rows it placed. */
static inline void pk_lp_rows_of(int l, int t, int nt, int *y0, int *y1)
{
    *y0 = (int)pk_share_lo((size_t)l, t, nt);
    *y1 = (int)pk_share_lo((size_t)l, t + 1, nt);
}

/* ---- the host plan ---------------------------------------------------------------------
 * Shared by the serial and OpenMP backends: two 64-byte aligned fields in desc->layout, `cur`
 * holds the latest (NULL before the first upload or run).  The fields are allocated when a
 * call first needs them: a one-shot call on the caller's field uses only the second, so it
 * never allocates or touches the first.  The backends supply only the iterations. */
typedef struct pk_lp_host_plan {
    pk_lp_desc d;
    char variant[32];
    size_t n;          /* l * l */
    float *f1, *f2, *cur;
    int nt;            /* host threads (serial: 1); first touch and copies use its partition */
    int kind;          /* the backend's code path for the variant */
    int isa;           /* OpenMP: the ISA of the hand-vectorised rows */
    int stream;        /* OpenMP: streaming stores into a second field (the two fields exceed
                          the last-level cache) */
    int two_fields;    /* OpenMP: no pass in place (laplace2d.stream=1) */
    float *scratch;    /* OpenMP temporal blocking: per-thread ring rows */
    size_t scratch_per_thread; /* floats */
    int tb_depth;              /* OpenMP omp-tb: iterations per pass, at most
                                  (laplace2d.tb_depth) */
    int in_place;              /* a run on the caller's field (execute): the result must
                                  end there (OpenMP: passes in place, or an even number) */
    pk_status (*run)(void *impl, int count, double *kernel_seconds); /* the backend's sweeps */
} pk_lp_host_plan;

/** Make the plan for nt threads, no field yet. */
pk_status pk_lp_host_create(const pk_lp_desc *desc, int nt, pk_lp_host_plan **plan);
/** *f (h->f1 or h->f2) allocated if it is not yet; zero: first touched now (zeroed) with the
 *  static row partition the OpenMP iterations use. */
pk_status pk_lp_host_field(pk_lp_host_plan *h, float **f, int zero);
/** What a run needs: cur (zeros before any upload) and, second: the other field of a
 *  ping-pong. */
pk_status pk_lp_host_ready(pk_lp_host_plan *h, int second);
pk_status pk_lp_host_upload(void *impl, const float *phi, double *seconds);
pk_status pk_lp_host_download(void *impl, float *phi, double *seconds);
/** The host backends' execute: the sweeps run on the caller's field itself (in place of the
 *  plan's first buffer; the second is the work array), the result copied back only when an
 *  odd number of passes leaves it there (OpenMP: never, lp_omp_steps).  The hand-vectorised
 *  hvfo rows load and stream aligned vectors: an hvfo field not 64-byte aligned goes through
 *  the plan's buffers instead; lexi runs on any float array. */
pk_status pk_lp_host_execute(void *impl, float *phi, int count, double *kernel_seconds,
                             double *transfer_seconds);
void pk_lp_host_destroy(void *impl);

/* Backend entry points. */
pk_status pk_serial_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl);
pk_status pk_serial_lp_run(void *impl, int count, double *kernel_seconds);
pk_status pk_omp_lp_create(void *state, int device, const pk_lp_desc *desc, void **impl);
pk_status pk_omp_lp_run(void *impl, int count, double *kernel_seconds);

#endif
