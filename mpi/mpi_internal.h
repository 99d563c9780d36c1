/* mpi_internal.h - what the distributed plans of libportkern-mpi share: the error agreement,
 * the slabs of all ranks, the halo exchange of rows (planes) by global index. */
#ifndef PK_MPI_INTERNAL_H
#define PK_MPI_INTERNAL_H

#include "portkern_mpi.h"

/* The detail of this thread's last failure (pk_mpi_last_error); printf-style. */
void pkm_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double pkm_now(void);

/* Combine the ranks' statuses (collective): returns the most negative status of all ranks,
 * PK_OK when all are PK_OK.  When one failed, the lowest failing rank's detail (msg, or
 * pk_last_error() when msg is NULL) becomes every rank's pk_mpi_last_error ("rank R: ...").
 * *seconds (may be NULL) is increased by the time it took. */
pk_status pkm_agree(MPI_Comm comm, pk_status st, const char *msg, double *seconds);
/* The start of every distributed plan_create: the ranks agree on their argument checks (st),
 * then on the allocation of a zeroed plan of `size` bytes.  The plan, or NULL with *status
 * (the same on every rank) when either failed. */
void *pkm_plan_new(MPI_Comm comm, pk_status st, size_t size, pk_status *status);

/* The slabs of all ranks, gathered at plan creation. */
typedef struct pkm_slabs {
    int n;        /* extent of the split axis */
    int nranks, rank;
    int *i0, *i1; /* [nranks] */
} pkm_slabs;
/* Collective: this rank's slab from opt (or the block rule), gathered from all ranks, checked
 * to tile [0, n) in rank order.  what names the axis in messages ("nz planes").  Returns an
 * agreed status; on failure s holds nothing to free. */
pk_status pkm_slabs_make(pkm_slabs *s, MPI_Comm comm, int n, const pk_mpi_options *opt,
                         const char *what);
void pkm_slabs_free(pkm_slabs *s);
/* The rank holding global index g (0 <= g < n). */
int pkm_slabs_owner(const pkm_slabs *s, int g);

/* Check (collective) that every rank passed the same bytes as rank 0 (parameters, a PSF):
 * returns this rank's local status (PK_EINVAL with a message when it differs), not agreed. */
pk_status pkm_same_as_root(MPI_Comm comm, const void *bytes, size_t len, const char *what);

/* The halo exchange of whole rows (a row: row_bytes bytes, a plane of diffusion3d, an image
 * row of conv2d).  Each rank r receives lo[r] rows below its slab (global rows i0 - lo ..
 * i0 - 1) and hi[r] above (i1 .. i1 + hi - 1), taken mod n when periodic (then from any rank,
 * its own slab included: a self copy), else they must lie in [0, n).  The rows a rank
 * receives are grouped in runs (consecutive rows of one owner), one message per run; every
 * rank derives every other rank's runs from the slabs, so sender and receiver agree on each
 * message (tag: the run's number in the receiver's list) without asking. */
typedef struct pkm_run {
    int peer;  /* the rank it comes from / goes to */
    int row;   /* send: the first row in the sender's slab (0-based); recv/self: the first
                  halo position (0 .. lo - 1 below, lo .. lo + hi - 1 above) */
    int src;   /* self copies: the first row in this rank's slab */
    int n;     /* rows */
    int tag;
} pkm_run;
typedef struct pkm_halo {
    MPI_Comm comm;
    MPI_Datatype row_type; /* row_bytes contiguous bytes */
    size_t row_bytes;
    int lo, hi;            /* this rank's halo rows below and above */
    int slab;              /* this rank's slab rows */
    int nsend, nrecv, nself;
    pkm_run *send, *recv, *self;
    MPI_Request *req;      /* nsend + nrecv */
    int active;
} pkm_halo;
/* Not collective (every rank computes its part from the slabs); lo and hi are every rank's
 * halo extents [nranks]. */
pk_status pkm_halo_make(pkm_halo *h, MPI_Comm comm, const pkm_slabs *s, const int *lo,
                        const int *hi, int periodic, size_t row_bytes);
void pkm_halo_free(pkm_halo *h);
/* Where the rows this rank sends are read from: its slab `own`, except that the rows
 * [0, ncopy) may be read from lo_copy and [slab - ncopy, slab) from hi_copy (copies taken
 * before the slab is overwritten while the messages travel); NULLs: the slab only. */
typedef struct pkm_src {
    const void *own, *lo_copy, *hi_copy;
    int ncopy;
} pkm_src;
/* Post the receives into below (lo rows) and above (hi rows), the sends, and do the self
 * copies.  pkm_halo_finish waits for all of them.  Statuses are local (MPI errors abort by
 * MPI's default handler). */
pk_status pkm_halo_start(pkm_halo *h, const pkm_src *src, void *below, void *above,
                         pk_mpi_info *info);
pk_status pkm_halo_finish(pkm_halo *h);

/* Fill the common fields of an info. */
void pkm_info_begin(pk_mpi_info *info, const pkm_slabs *s, int lo, int hi);
/* A run's info: the caller's, or (NULL) the zeroed spare, begun as pkm_info_begin does. */
pk_mpi_info *pkm_info_run(pk_mpi_info *info, pk_mpi_info *spare, const pkm_slabs *s, int lo,
                          int hi);

/* The halo depth of the stencils (diffusion3d, laplace2d): the caller's, else dflt (the
 * kernel's: two passes of its OpenMP temporal blocking, landing in place) at most a quarter
 * of the thinnest slab, at least 1: the same on every rank when dflt is (it depends on the
 * gathered slabs). */
int pkm_depth(const pkm_slabs *s, int requested, int dflt);

/* 64-byte aligned memory (free with free); bytes 0: 64 bytes.  Small pages: the grid's
 * local full grid is touched only in its box (huge pages would fault all of it in); dense
 * buffers take pk_malloc. */
void *pkm_alloc64(size_t bytes);

/* The caller's context, or a new one with the defaults (*owned = 1). */
pk_status pkm_context(pk_context *ctx, pk_context **out, int *owned);

#endif
