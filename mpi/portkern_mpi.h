/* portkern_mpi.h - libportkern-mpi: distributed plans of portkern's kernels over MPI.
 *
 * A distributed plan is made collectively over an MPI communicator.  Each rank holds its
 * part of the data (a slab of the split axis) and runs it on its own node's best backend
 * through its own pk_context (CUDA, OpenCL, OpenMP, serial: what the core library's auto
 * picks there, or what the context forces).  The library uses libportkern's public API only,
 * exchanges halos with MPI point-to-point messages (MPI_Isend / MPI_Irecv), reduces the grid
 * with MPI_Reduce_scatter, and needs nothing past MPI-2's MPI_IN_PLACE; libportkern itself
 * does not link MPI.  Build with
 * `pkg-config --cflags --libs portkern-mpi`.  docs/SCALING.md has the decompositions, the
 * measurements and the scaling model.
 *
 * Conventions (besides lib/portkern.h's)
 *  - Every call here is collective over the plan's communicator: every rank makes it, in the
 *    same order; except pk_mpi_block, pk_mpi_options_init, pk_mpi_last_error and
 *    the plans' upload / download (copies on this rank only).
 *  - Errors are agreed: before any collective work (and after each local kernel call) the
 *    ranks combine their status with MPI_Allreduce, so a bad argument or a failure on one
 *    rank makes the call return the same failing status on every rank, never a hang.  The
 *    status returned is the most negative one, pk_mpi_last_error() gives the detail of the
 *    lowest rank that had it, prefixed "rank R: ".
 *  - The split axis (diffusion3d: z, laplace2d and conv2d: rows, su3: sites, magicfilter3d:
 *    i3, dslash: t, grid: the grid's rows) is divided in
 *    slabs [i0, i1), one per rank in rank order, covering [0, n) without gaps or overlaps,
 *    each non-empty.  A caller may give its own slab (pk_mpi_options.i0, i1); else the block rule
 *    pk_mpi_block applies.  More ranks than planes (or rows, or sites) is an error on every
 *    rank.
 *  - ctx is this rank's context (its backend, device, threads; used by one thread at a time,
 *    as in lib/portkern.h); NULL: the plan makes one with the defaults and owns it.  A
 *    rank's local plans all run the variant its first plan resolved.
 *  - The communicator is duplicated at plan creation (the plan's messages never match the
 *    caller's); MPI must be initialised (MPI_Init) before and finalised after the plans.
 */
#ifndef PORTKERN_MPI_H
#define PORTKERN_MPI_H

#include <mpi.h>
#include "portkern.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PK_BUILDING_MPI) && defined(__GNUC__)
#define PK_MPI_API __attribute__((visibility("default")))
#else
#define PK_MPI_API
#endif

/** The block rule: n items over nranks ranks, the first n % nranks ranks get one more:
 *  rank r holds [r q + min(r, m), (r + 1) q + min(r + 1, m)), q = n / nranks, m = n % nranks.
 *  PK_ESIZE (with a message) when n < nranks (a rank would hold nothing) or n, nranks < 1. */
PK_MPI_API pk_status pk_mpi_block(int n, int nranks, int rank, int *i0, int *i1);

/** Detail of the last failure of a pk_mpi_* call on this thread ("rank 2: nx: must be >= 1,
 *  got 0"); never NULL. */
PK_MPI_API const char *pk_mpi_last_error(void);

/** Whether the MPI library takes GPU (CUDA) memory in its calls, as Open MPI's extension
 *  MPIX_Query_cuda_support says at run time: 1 yes, 0 no, -1 the MPI library has no such
 *  query (another MPI, or a build without Open MPI's cuda extension).  Local, not
 *  collective.  The distributed plans here pass host memory to MPI in every case (their
 *  info's halo_memory: "host"): a rank on a GPU context moves its slab through the local
 *  plan's own transfers (on CUDA the pinned staging ring); device buffers handed to a
 *  CUDA-aware MPI are not built yet (docs/SCALING.md section 7). */
PK_MPI_API int pk_mpi_cuda_aware(void);

typedef struct pk_mpi_options {
    int i0, i1;          /* this rank's slab [i0, i1) of the split axis; both -1 (the
                            default): the block rule */
    int depth;           /* diffusion3d, laplace2d: steps between halo exchanges, the halo
                            depth in planes or rows (temporal blocking of the exchange),
                            1 .. 64; 0 (the default): laplace2d 8, diffusion3d twice the
                            contexts' smallest diffusion3d.tb_depth (12 by default: two
                            omp-tb passes); at most a quarter of the thinnest slab, at
                            least 1 (docs/SCALING.md: measured) */
    int overlap;         /* diffusion3d: 1 runs each rank's interior while the halos travel
                            (the boundary planes after, on copies); 0 exchanges first, then
                            runs the slab with its halos; -1 (the default): 0
                            (docs/SCALING.md: measured).  dslash: 1 and -1 (the default)
                            compute a block's own sites only, the interior while the t and z
                            faces travel (t or z split over ranks; serial and OpenMP); 0
                            exchanges first, then runs the block with its halo planes */
    const char *variant; /* the local kernel's variant (NULL: the local backend's choice) */
    int half;            /* dslash: 1 sends the t-faces spin-projected, half spinors (12
                            doubles a site instead of 24, QUDA's way), rebuilt into the halo
                            planes: within docs/KERNELS.md 4c's tolerance, not promised
                            bitwise; 0 (the default): full spinors, bitwise */
    int ranks_z;         /* dslash: ranks along z (a grid of nranks / ranks_z along t by
                            ranks_z along z, rank r at t-coordinate r / ranks_z and
                            z-coordinate r % ranks_z; it must divide the ranks); 0 or 1 (the
                            default): t only */
    int transposes;      /* magicfilter3d: 1 runs the three passes apart (pk_magicfilter_pass
                            on the host) with two MPI_Alltoallw transposes, BigDFT's way: no
                            plane computed twice; 0 runs one local 3-D call on the slab with
                            halo planes; -1 (the default): the transposes where the local
                            kernel runs on the host with a variant that has a pass (measured
                            faster: docs/SCALING.md), else the halo planes */
} pk_mpi_options;
PK_MPI_API void pk_mpi_options_init(pk_mpi_options *opt);

/** What one rank did in a distributed call (each rank fills its own). */
typedef struct pk_mpi_info {
    int rank, nranks;
    int i0, i1;           /* this rank's slab */
    int halo_lo, halo_hi; /* halo rows / planes this rank receives below and above */
    int depth, overlap;   /* as resolved (diffusion3d; laplace2d: depth) */
    double wall_s;        /* this rank's seconds in the call */
    double compute_s;     /* in the local kernel calls (their transfers included) */
    double comm_s;        /* halo exchange: copies, posting, waiting for the messages */
    double agree_s;       /* the status agreement (MPI_Allreduce) */
    double halo_bytes;    /* bytes this rank sent in halo messages (its own copies excluded) */
    long messages;        /* halo messages this rank sent */
    long exchanges;       /* halo exchanges */
    pk_run_info local;    /* the last local kernel call's info: backend, device, variant,
                             reason (its times are those of that call only) */
    int z0, z1;           /* dslash: this rank's z-planes (the whole z without ranks_z) */
    int transposes;       /* magicfilter3d: 1 when the passes ran apart with transposes */
    char halo_memory[8];  /* where the messages' buffers lie: "host" (every plan here; see
                             pk_mpi_cuda_aware) */
} pk_mpi_info;

/* ---- diffusion3d: slabs along z, zero-flux walls at z = 0 and nz - 1 ----------------------
 * p holds the global problem (nx, ny, nz, coefficients; p->count is ignored: run and execute
 * take theirs); every rank must pass the same values.  Each rank's slab is
 * float32 [i1 - i0][ny][nx], planes i0 .. i1 - 1 of the global field.  Results are bitwise
 * those of a single-process run of the same variant: every plane is computed from the same
 * neighbours in the same order (the local kernel runs the slab with its halo planes, the
 * halos' own results discarded).  On a device backend (OpenCL, CUDA) without overlap the
 * slab stays on the device between the upload and the download: a chunk moves only the
 * boundary planes the neighbours read and the halo planes received
 * (pk_diffusion3d_plan_upload_planes / _download_planes). */
typedef struct pk_mpi_diffusion3d_plan pk_mpi_diffusion3d_plan;
PK_MPI_API pk_status pk_mpi_diffusion3d_plan_create(pk_mpi_diffusion3d_plan **plan, MPI_Comm comm,
                                                    pk_context *ctx,
                                                    const pk_diffusion3d_params *p,
                                                    const pk_mpi_options *opt, pk_mpi_info *info);
/** Copy this rank's slab in / out of the plan (host memory; local, not collective).
 *  download is PK_ESTATE before an upload and after a failed run. */
PK_MPI_API pk_status pk_mpi_diffusion3d_plan_upload(pk_mpi_diffusion3d_plan *plan, const float *f);
PK_MPI_API pk_status pk_mpi_diffusion3d_plan_download(pk_mpi_diffusion3d_plan *plan, float *f);
/** count more steps on the uploaded field, exchanging halos every `depth` steps. */
PK_MPI_API pk_status pk_mpi_diffusion3d_plan_run(pk_mpi_diffusion3d_plan *plan, int count,
                                                 pk_mpi_info *info);
/** upload, run count steps, download: f is this rank's slab, in place. */
PK_MPI_API pk_status pk_mpi_diffusion3d_plan_execute(pk_mpi_diffusion3d_plan *plan, float *f,
                                                     int count, pk_mpi_info *info);
PK_MPI_API void pk_mpi_diffusion3d_plan_destroy(pk_mpi_diffusion3d_plan *plan);

/* ---- laplace2d: row slabs, periodic, halo rows every `depth` iterations -------------------
 * p holds the global lattice (l, sigma, layout, nw; count is execute's), the same on every
 * rank; each rank's phi is float32 [i1 - i0][l] (lexicographic), rows i0 .. i1 - 1; rank 0 and
 * rank N-1 are neighbours.  The core kernel is square (l x l, periodic), so a rank steps its
 * slab in square tiles of side i1 - i0 with depth halo rows and columns around each
 * (mpi/mpi_laplace2d.c); p->layout is the local plans' layout (hvfo tiles are padded to a
 * multiple of the lanes).  Bitwise the single-process result for every serial and OpenMP
 * variant (tests/test_mpi.c checks each).  upload / download are local, as diffusion3d's. */
typedef struct pk_mpi_laplace2d_plan pk_mpi_laplace2d_plan;
PK_MPI_API pk_status pk_mpi_laplace2d_plan_create(pk_mpi_laplace2d_plan **plan, MPI_Comm comm,
                                                  pk_context *ctx, const pk_laplace2d_params *p,
                                                  const pk_mpi_options *opt, pk_mpi_info *info);
PK_MPI_API pk_status pk_mpi_laplace2d_plan_upload(pk_mpi_laplace2d_plan *plan, const float *phi);
PK_MPI_API pk_status pk_mpi_laplace2d_plan_download(pk_mpi_laplace2d_plan *plan, float *phi);
PK_MPI_API pk_status pk_mpi_laplace2d_plan_run(pk_mpi_laplace2d_plan *plan, int count,
                                               pk_mpi_info *info);
PK_MPI_API pk_status pk_mpi_laplace2d_plan_execute(pk_mpi_laplace2d_plan *plan, float *phi,
                                                   int count, pk_mpi_info *info);
PK_MPI_API void pk_mpi_laplace2d_plan_destroy(pk_mpi_laplace2d_plan *plan);

/* ---- conv2d: row slabs, periodic halo rows ------------------------------------------------
 * p holds the global frame (h, w, kh, kw, method) and psf float32 [kh][kw] the PSF, the same
 * on every rank.  Each rank's image and out are float32 [i1 - i0][w], rows i0 .. i1 - 1 of
 * the frame.  A rank receives the kh / 2 rows above its slab and the kh - 1 - kh / 2 below
 * (periodic, from any rank that holds them: a PSF taller than a slab reaches past the
 * neighbours) and convolves its slab with them; direct variants give the single-process
 * result bitwise, the FFT variants (another transform size) within docs/KERNELS.md 5's
 * tolerance. */
typedef struct pk_mpi_conv2d_plan pk_mpi_conv2d_plan;
PK_MPI_API pk_status pk_mpi_conv2d_plan_create(pk_mpi_conv2d_plan **plan, MPI_Comm comm,
                                               pk_context *ctx, const pk_conv2d_params *p,
                                               const float *psf, const pk_mpi_options *opt,
                                               pk_mpi_info *info);
/** out = image (*) psf on this rank's rows; out must not overlap image. */
PK_MPI_API pk_status pk_mpi_conv2d_plan_execute(pk_mpi_conv2d_plan *plan, const float *image,
                                                float *out, pk_mpi_info *info);
PK_MPI_API void pk_mpi_conv2d_plan_destroy(pk_mpi_conv2d_plan *plan);

/* ---- su3: sites split in blocks, no communication -----------------------------------------
 * p->nv is the global number of sites; each rank passes its sites [i0, i1) in AoS
 * (u [i1 - i0][3][3], psi and chi [i1 - i0][3][4] complex128) and runs them with a local
 * plan of p's layout: the plan exists for symmetry with the others (and agrees on errors). */
typedef struct pk_mpi_su3_plan pk_mpi_su3_plan;
PK_MPI_API pk_status pk_mpi_su3_plan_create(pk_mpi_su3_plan **plan, MPI_Comm comm, pk_context *ctx,
                                            const pk_su3_params *p, const pk_mpi_options *opt,
                                            pk_mpi_info *info);
PK_MPI_API pk_status pk_mpi_su3_plan_execute(pk_mpi_su3_plan *plan, const double *u,
                                             const double *psi, double *chi, pk_mpi_info *info);
PK_MPI_API void pk_mpi_su3_plan_destroy(pk_mpi_su3_plan *plan);

/* ---- magicfilter3d: slabs of i3 (the slowest axis) -------------------------------------
 * p holds the global grid (the same on every rank); the slabs [i0, i1) split n3.  Each rank's
 * x and y are planes of the global arrays, whole along i1 and i2 (x [xp][in n2][in n1], y
 * [yp][out n2][out n1], pk_magicfilter3d_shapes' extents).  Where the local kernel runs on
 * the host (pk_mpi_options.transposes), the three passes run apart (pk_magicfilter_pass)
 * with two MPI_Alltoallw transposes: the third pass's lines whole on one rank, no plane
 * computed twice.  Otherwise the rank receives halo planes of the filter's reach:
 *  - PERIODIC: x and y planes i0 .. i1 - 1 (xp = yp = i1 - i0); the rank receives the 8
 *    planes below and 7 above (MFT: 7 and 8), mod n3, from whichever rank holds them.
 *  - GROW: x planes i0 .. i1 - 1; y (n3 + 15 planes) the same planes, and the last rank also
 *    the 15 extra ones (yp = i1 - i0 + 15 there); a rank receives the min(15, i0) x planes
 *    below its slab.
 *  - SHRINK: x (n3 + 15 planes) planes i0 .. i1 - 1, the last rank also the 15 extra ones;
 *    y planes i0 .. i1 - 1; a rank receives the 15 x planes above its slab (the last: none).
 * pk_mpi_magicfilter3d_plan_slab gives xp and yp.  With halo planes the rank runs one local
 * 3-D call on its planes with them (the same bc) and keeps the outputs that read no wrapped
 * or missing plane.  Either way every output is the same products as in one process;
 * tests/test_mpi.c checks every serial and OpenMP variant bitwise against one process, both
 * methods (docs/SCALING.md).  y must not overlap x. */
typedef struct pk_mpi_magicfilter3d_plan pk_mpi_magicfilter3d_plan;
PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_create(pk_mpi_magicfilter3d_plan **plan,
                                                      MPI_Comm comm, pk_context *ctx,
                                                      const pk_magicfilter3d_params *p,
                                                      const pk_mpi_options *opt,
                                                      pk_mpi_info *info);
/** This rank's planes of x and y (local, not collective). */
PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_slab(const pk_mpi_magicfilter3d_plan *plan,
                                                    int *x_planes, int *y_planes);
PK_MPI_API pk_status pk_mpi_magicfilter3d_plan_execute(pk_mpi_magicfilter3d_plan *plan,
                                                       const double *x, double *y,
                                                       pk_mpi_info *info);
PK_MPI_API void pk_mpi_magicfilter3d_plan_destroy(pk_mpi_magicfilter3d_plan *plan);

/* ---- dslash: blocks of t- and z-planes, one halo plane on each side of a split axis ------
 * p holds the global lattice (the same on every rank), split along t and, with
 * pk_mpi_options.ranks_z = pz > 1, along z too (QUDA's order): the ranks form a grid of
 * nranks / pz along t by pz along z, rank r at t-coordinate r / pz (its t-planes [i0, i1):
 * the block rule over the t-coordinates, or the caller's slab, the same for the pz ranks of
 * one t-coordinate) and z-coordinate r % pz (its z-planes [z0, z1): the block rule over pz).
 * Each rank passes its block: u complex128 [4][i1 - i0][z1 - z0][y][x][3][3] (for each mu its
 * planes of U_mu) at plan creation, psi and chi complex128 [i1 - i0][z1 - z0][y][x][4][3] at
 * execute (without ranks_z, z0 = 0 and z1 = z: the t-slab).  Along a split axis the
 * neighbours' planes next to the block (mod the extent) come as halo planes: the links' once,
 * at creation; psi's every execute: full spinors (24 doubles a site), or with
 * pk_mpi_options.half the spin projections the hops use, (1 + gamma_mu) psi from below and
 * (1 - gamma_mu) psi from above (12 doubles a site), rebuilt into halo spinors with the same
 * projection.  With t or z split over ranks and pk_mpi_options.overlap -1 (the default) or
 * 1 on a serial or OpenMP variant: a rank computes its own sites only (local plans on boxes
 * of t- and z-planes, pk_dslash_params t_begin, t_end, z_begin, z_end), the interior ones
 * (which read no halo) while the t and z faces travel, the boundary after they arrived
 * (t-slabs: chi written in place); info.overlap 1 when the rank has interior sites (more
 * than 2 planes along each split axis).  Otherwise (overlap 0, a device backend) the local
 * dslash runs on the block with its halo planes, whose outputs are dropped (a rank alone
 * runs the caller's arrays).  The links go to every local plan once, at creation (on OpenCL
 * and CUDA onto the device); an execute passes psi alone.  Full spinors: bitwise the
 * single-process result of the same variant (omp-vnode: within docs/KERNELS.md 4c, its lanes follow the
 * block's shape); half: within docs/KERNELS.md 4c's tolerance (tests/test_mpi.c checks both).
 * p's t_begin, t_end, z_begin and z_end must be 0 (PK_EINVAL).  chi may be psi.
 * pk_mpi_info's i0, i1 are the t-planes, z0, z1 the z-planes. */
typedef struct pk_mpi_dslash_plan pk_mpi_dslash_plan;
PK_MPI_API pk_status pk_mpi_dslash_plan_create(pk_mpi_dslash_plan **plan, MPI_Comm comm,
                                               pk_context *ctx, const pk_dslash_params *p,
                                               const double *u, const pk_mpi_options *opt,
                                               pk_mpi_info *info);
PK_MPI_API pk_status pk_mpi_dslash_plan_execute(pk_mpi_dslash_plan *plan, const double *psi,
                                                double *chi, pk_mpi_info *info);
PK_MPI_API void pk_mpi_dslash_plan_destroy(pk_mpi_dslash_plan *plan);

/* ---- grid: visibilities split across ranks, the grid reduced to row bands ------------------
 * p, support and kernels describe the w-kernel stack as for pk_grid_plan_create, the same on
 * every rank (the parameters and supports are compared whole, the stack through a 64-bit
 * hash).  The split axis is the grid's rows: rank r's band is rows [i0, i1) (the block rule,
 * or pk_mpi_options.i0, i1: uneven bands work); more ranks than grid_size rows is an error on
 * every rank.  grid_size is 2 .. 32766 here (the reduction's counts are ints).
 * run: each rank passes its own visibility list d (any split of the whole list, uneven, or
 * num_vis 0 on some ranks), grids it into the plan's local full grid (complex64 [G][G]) with
 * its node's backend, then one MPI_Reduce_scatter in place sums the ranks' grids and leaves
 * this rank its band of the sum: complex64 [i1 - i0][G], rows i0 .. i1 - 1.  Only the box of
 * cells some rank's visibilities update (pk_grid_locate's footprints, agreed with one
 * MPI_Allreduce) is zeroed, gridded and reduced, packed in place to the front of the grid; the
 * band's cells outside it are set to 0 (pk_mpi_grid_plan_box).
 * band (may be NULL) is accumulated into, as pk_grid's grid (the caller zeroes it); the band
 * also stays in the plan until the next run (pk_mpi_grid_plan_band).  norm (may be NULL) is
 * accumulated into with the sum over all ranks, num_skipped (may be NULL) set to the total.
 * A cell is the same sum of float products as in one process in another order: within
 * docs/KERNELS.md 1.5's bound; bitwise with one rank for a deterministic variant (serial,
 * omp-tiled).  Peak memory per rank: one full grid (8 G^2 bytes, of which only the box's
 * rows and the band are touched) plus the caller's band, plus what MPI allocates inside the
 * reduction (docs/SCALING.md).  info: compute_s the box, the gridding, the packing and
 * unpacking (and the accumulation into band), comm_s the MPI_Allreduce of the box, the
 * MPI_Reduce_scatter and the two MPI_Allreduce of norm and num_skipped, agree_s the
 * agreements (there the ranks wait for the slowest
 * gridder), halo_bytes the bytes of the box's cells outside this rank's band (what a
 * bandwidth-optimal reduce-scatter sends; MPI's algorithm may send more). */
typedef struct pk_mpi_grid_plan pk_mpi_grid_plan;
PK_MPI_API pk_status pk_mpi_grid_plan_create(pk_mpi_grid_plan **plan, MPI_Comm comm,
                                             pk_context *ctx, const pk_grid_params *p,
                                             const int32_t *support, const float *kernels,
                                             const pk_mpi_options *opt, pk_mpi_info *info);
PK_MPI_API pk_status pk_mpi_grid_plan_run(pk_mpi_grid_plan *plan, const pk_grid_data *d,
                                          float *band, double *norm, int64_t *num_skipped,
                                          pk_mpi_info *info);
/** This rank's band of rows [*r0, *r1) (local, not collective); *band (band may be NULL): the
 *  summed band inside the plan, complex64 [r1 - r0][G], valid until the next run or destroy,
 *  NULL before a successful run. */
PK_MPI_API pk_status pk_mpi_grid_plan_band(const pk_mpi_grid_plan *plan, int *r0, int *r1,
                                           const float **band);
/** The last successful run's box of updated cells, the same on every rank: rows
 *  [box[0], box[1]), columns [box[2], box[3]) (empty when no visibility was gridded): only
 *  these cells were zeroed, gridded into and reduced, 8 (box[1] - box[0]) (box[3] - box[2])
 *  bytes per rank.  PK_ESTATE before a successful run (local, not collective). */
PK_MPI_API pk_status pk_mpi_grid_plan_box(const pk_mpi_grid_plan *plan, int box[4]);
/** The dirty image of the last run's summed grid (pk_image_from_grid's steps over the bands):
 *  each rank transforms its band's rows of the box (pk_image_passes; the rows outside the
 *  box are zero and transform to zero), one MPI_Alltoallw gives every rank the whole columns
 *  of its share of the crop's column batches (an even split of pk_image_passes_batches;
 *  with more ranks than batches some ranks hold none; the rows of each source band land in place
 *  through a vector datatype), each rank transforms them and corrects and crops its columns,
 *  and rank 0 receives every rank's strip into image float32 [N][N] (N = ip->image_size;
 *  read only on rank 0, may be NULL elsewhere), normalised by the run's summed norm.  ip->grid
 *  must be the plan's grid geometry (its tuning fields are not compared), support and
 *  kernels the plan's (plane 0, all the image reads of the stack, through its hash); image
 *  size and cell as pk_image takes them.  The image equals pk_image_from_grid of the
 *  gathered bands bitwise (tests/test_mpi.c).
 *  Per rank: its box rows of all N columns (the send buffer) and its columns of the box's rows
 *  (8 bytes a cell), on the host with FFTW whatever the context's backend.  info: compute_s
 *  the two passes (the row pass includes writing the send buffer), comm_s the transpose and
 *  the gather, halo_bytes the bytes this rank sends. */
PK_MPI_API pk_status pk_mpi_grid_plan_image(pk_mpi_grid_plan *plan, const pk_image_params *ip,
                                            const int32_t *support, const float *kernels,
                                            float *image, pk_mpi_info *info);
PK_MPI_API void pk_mpi_grid_plan_destroy(pk_mpi_grid_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
