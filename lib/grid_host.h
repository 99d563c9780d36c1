/* grid_host.h - grid on the host: what lib/grid.c, the references (lib/ref/grid_ref.c), the
 * serial backend (lib/grid_serial.c) and the OpenMP backend (omp/grid_omp.c) share. */
#ifndef PK_GRID_HOST_H
#define PK_GRID_HOST_H
#include "internal.h"

/* The reference loop over a validated call: into the float grid (grid != NULL) or the
 * complex128 grid64; plane_offset[] locates compact planes (unused for FULL stacks).  norm is
 * accumulated into, num_skipped and updates (sum of (2s+1)^2; may be NULL) set.  threads: 1
 * one pass (the serial backend), 0 the host's threads, each taking the grid rows of one
 * residue: bitwise the one pass (the public references). */
void pk_gr_ref_run(const pk_grid_params *p, const int32_t *support, const size_t *plane_offset,
                   const float *kernels, const pk_grid_data *d, float *grid, double *grid64,
                   double *norm, int64_t *num_skipped, double *updates, int threads);

/* The stack as backends see it: compact (converted from FULL by pk_gr_stack_init, which
 * validates p, support and the readable samples first), with plane offsets.  lib/grid.c and
 * lib/image.c (degrid) hand st->d to their backends' create. */
typedef struct pk_gr_stack {
    pk_gr_desc d;
    size_t *plane_offset;
    float *compact_own; /* NULL when the caller's stack is compact already */
} pk_gr_stack;
pk_status pk_gr_stack_init(pk_gr_stack *st, const pk_grid_params *p, const int32_t *support,
                           const float *kernels);
void pk_gr_stack_free(pk_gr_stack *st);
/** d: NULL pointers, num_vis overflow (pk_grid's checks of a visibility list). */
pk_status pk_gr_validate_data(const pk_grid_data *d);
/** pk_grid_plan_create for lib/image.c's image plan: the same plan, chosen under the kernel
 *  name "image" (its own wisdom entries, size measure the grid's bytes). */
pk_status pk_gr_image_plan_create(pk_grid_plan **plan, pk_context *ctx, const pk_grid_params *p,
                                  const char *variant, const int32_t *support,
                                  const float *kernels, pk_run_info *info);
/** The backend plan of a grid plan (lib/image.c's CUDA path hands it to cuda/image.cu). */
void *pk_grid_plan_impl(const pk_grid_plan *plan);

/* A host plan's own copy of the compact stack (the serial grid plan; the serial and OpenMP
 * degrid plans). */
typedef struct pk_gr_host_stack {
    pk_grid_params p;   /* kernel_layout COMPACT */
    int32_t *support;
    size_t *plane_offset;
    float *kernels;
    int threads;        /* the desc's (0: OpenMP's default) */
} pk_gr_host_stack;

/* degrid (docs/KERNELS.md 7.3): vis[i] = sum conj(c_jk) grid[gv + j][gu + k] for i =
 * order[t] (order NULL: i = t), t in [lo, hi), from the float grid in float arithmetic (vis)
 * or from the complex128 grid64 in double (vis64); weight may be NULL in d.  Returns the
 * skipped count of the range; adds the range's updates to *updates (may be NULL).  Each
 * visibility's sum is formed the same way whatever the order. */
int64_t pk_dg_ref_run(const pk_grid_params *p, const int32_t *support, const size_t *plane_offset,
                      const float *kernels, const pk_grid_data *d, const float *grid,
                      const double *grid64, float *vis, double *vis64, const size_t *order,
                      size_t lo, size_t hi, double *updates);

/* The tile order of a list: visibilities bucket-sorted (stable counting sort) by the
 * PK_DG_TILE x PK_DG_TILE-cell tile of their centre cell, tiles in row order, skipped ones
 * last; the keys on `threads` host threads.  *order_out points into order_s (kept by the
 * caller's plan, as key_s and count_s). */
#define PK_DG_TILE 64
pk_status pk_dg_tile_order(const pk_grid_params *p, const int32_t *support, const pk_grid_data *d,
                           int threads, pk_scratch *order_s, pk_scratch *key_s,
                           pk_scratch *count_s, const size_t **order_out);

/** grid.tile_size, grid.central_radius, grid.tile_factor of t into the fields of p still at
 *  their defaults (0, 0, negative); t NULL: nothing.  lib/grid.c's create, before a backend's. */
void pk_gr_tuning_apply(pk_grid_params *p, const pk_tuning *t);

/* Backend entry points. */
pk_status pk_serial_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_serial_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
void pk_serial_gr_destroy(void *impl);
pk_status pk_omp_gr_create(void *state, int device, const pk_gr_desc *desc, void **impl);
pk_status pk_omp_gr_run(void *impl, const pk_grid_data *data, float *grid, pk_gr_result *res);
void pk_omp_gr_destroy(void *impl);
/* The OpenMP gridder's reordered kernel stack (omp/grid_omp.c, "Kernel layout"), which its
 * degrid gathers read too: per plane w (row_base[w], complex samples), per off_u in
 * [-os/2, os/2], per compact row iy, the L = 2s + 1 samples K[iy][|off_u + k os|], k in
 * [-s, s].  *rows from pk_alloc_aligned; row_base has num_w_planes entries. */
pk_status pk_omp_gr_rows_make(const pk_grid_params *p, const int32_t *support,
                              const float *kernels, const size_t *plane_offset, int nt,
                              float **rows, size_t *row_base);

#endif
