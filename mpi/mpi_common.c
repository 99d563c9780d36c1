/* mpi_common.c - libportkern-mpi's shared pieces: errors and their agreement across ranks,
 * the block rule and the slabs of all ranks, the options, the info, the context. */
#include "mpi_internal.h"

/* Open MPI's extensions (MPIX_Query_cuda_support); other MPIs have no such header */
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static __thread char pkm_err[704]; /* a 640-byte detail and its "rank R: " */

void pkm_set_error(const char *fmt, ...) {
    char buf[sizeof pkm_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap); /* buf: fmt's arguments may be pkm_err itself */
    va_end(ap);
    memcpy(pkm_err, buf, sizeof buf);
}

PK_MPI_API const char *pk_mpi_last_error(void) { return pkm_err; }

PK_MPI_API int pk_mpi_cuda_aware(void) {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() ? 1 : 0;
#else
    return -1;
#endif
}

double pkm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

pk_status pkm_agree(MPI_Comm comm, pk_status st, const char *msg, double *seconds) {
    double t0 = pkm_now();
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int in[2] = {(int)st, rank}, out[2] = {0, 0};
    /* MINLOC: the most negative status, and of the ranks that have it the lowest */
    MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm);
    if (out[0] != PK_OK) {
        char buf[640] = "";
        if (rank == out[1]) {
            const char *m = msg ? msg : pkm_err;
            size_t k = strlen(m);
            k = k < sizeof buf - 1 ? k : sizeof buf - 1;
            memcpy(buf, m, k);
            buf[k] = '\0';
        }
        MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, out[1], comm);
        buf[sizeof buf - 1] = '\0';
        pkm_set_error("rank %d: %s", out[1], buf);
    }
    if (seconds)
        *seconds += pkm_now() - t0;
    return (pk_status)out[0];
}

void *pkm_plan_new(MPI_Comm comm, pk_status st, size_t size, pk_status *status) {
    *status = pkm_agree(comm, st, NULL, NULL);
    if (*status != PK_OK)
        return NULL;
    void *pl = calloc(1, size);
    if (!pl)
        pkm_set_error("out of memory for the plan");
    *status = pkm_agree(comm, pl ? PK_OK : PK_ENOMEM, NULL, NULL);
    if (*status != PK_OK) {
        free(pl);
        return NULL;
    }
    return pl;
}

PK_MPI_API pk_status pk_mpi_block(int n, int nranks, int rank, int *i0, int *i1) {
    if (!i0 || !i1) {
        pkm_set_error("pk_mpi_block: i0 and i1 must not be NULL");
        return PK_ENULL;
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        pkm_set_error("pk_mpi_block: rank %d of %d ranks", rank, nranks);
        return PK_EINVAL;
    }
    if (n < nranks) {
        pkm_set_error("%d items over %d ranks: rank %d would hold none (at most one rank per "
                      "item)", n, nranks, n < 0 ? 0 : n);
        return PK_ESIZE;
    }
    int q = n / nranks, m = n % nranks;
    *i0 = rank * q + (rank < m ? rank : m);
    *i1 = (rank + 1) * q + (rank + 1 < m ? rank + 1 : m);
    return PK_OK;
}

PK_MPI_API void pk_mpi_options_init(pk_mpi_options *opt) {
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->i0 = opt->i1 = -1;
    opt->depth = 0;
    opt->overlap = -1;
    opt->variant = NULL;
    opt->transposes = -1;
}

pk_status pkm_slabs_make(pkm_slabs *s, MPI_Comm comm, int n, const pk_mpi_options *opt,
                         const char *what) {
    memset(s, 0, sizeof *s);
    MPI_Comm_size(comm, &s->nranks);
    MPI_Comm_rank(comm, &s->rank);
    s->n = n;
    int mine[2] = {-1, -1};
    pk_status st = PK_OK;
    if (opt && (opt->i0 != -1 || opt->i1 != -1)) {
        mine[0] = opt->i0;
        mine[1] = opt->i1;
    } else {
        st = pk_mpi_block(n, s->nranks, s->rank, &mine[0], &mine[1]);
        if (st != PK_OK)
            pkm_set_error("%s: %d over %d ranks: a rank would hold none (more ranks than %s)",
                          what, n, s->nranks, what);
    }
    int *all = malloc(2 * (size_t)s->nranks * sizeof *all);
    if (st == PK_OK && !all) {
        pkm_set_error("out of memory for the slabs of %d ranks", s->nranks);
        st = PK_ENOMEM;
    }
    st = pkm_agree(comm, st, NULL, NULL);
    if (st != PK_OK) {
        free(all);
        return st;
    }
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm);
    /* Every rank sees the same gathered slabs, so every rank reaches the same verdict. */
    int expect = 0;
    for (int r = 0; r < s->nranks && st == PK_OK; r++) {
        int a = all[2 * r], b = all[2 * r + 1];
        if (a != expect || b <= a || b > n) {
            pkm_set_error("%s: the slabs must cover [0, %d) in rank order, each non-empty: rank "
                          "%d has [%d, %d), expected [%d, ...)%s",
                          what, n, r, a, b, expect,
                          b > n ? " (past the end)" : b <= a ? " (empty)" : "");
            st = PK_EINVAL;
        }
        expect = b;
    }
    if (st == PK_OK && expect != n) {
        pkm_set_error("%s: the slabs end at %d, the extent is %d", what, expect, n);
        st = PK_EINVAL;
    }
    if (st != PK_OK) {
        free(all);
        return st;
    }
    s->i0 = malloc(2 * (size_t)s->nranks * sizeof *s->i0);
    pk_status mst = s->i0 ? PK_OK : PK_ENOMEM;
    if (mst != PK_OK)
        pkm_set_error("out of memory for the slabs of %d ranks", s->nranks);
    mst = pkm_agree(comm, mst, NULL, NULL);
    if (mst != PK_OK) {
        free(all);
        free(s->i0);
        s->i0 = NULL;
        return mst;
    }
    s->i1 = s->i0 + s->nranks;
    for (int r = 0; r < s->nranks; r++) {
        s->i0[r] = all[2 * r];
        s->i1[r] = all[2 * r + 1];
    }
    free(all);
    return PK_OK;
}

void pkm_slabs_free(pkm_slabs *s) {
    if (s) {
        free(s->i0);
        s->i0 = s->i1 = NULL;
    }
}

int pkm_slabs_owner(const pkm_slabs *s, int g) {
    int a = 0, b = s->nranks - 1;
    while (a < b) { /* the last rank whose slab starts at or before g */
        int m = (a + b + 1) / 2;
        if (s->i0[m] <= g)
            a = m;
        else
            b = m - 1;
    }
    return a;
}

pk_status pkm_same_as_root(MPI_Comm comm, const void *bytes, size_t len, const char *what) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    unsigned char *root = malloc(len ? len : 1);
    int have = root != NULL, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) {
        free(root);
        pkm_set_error("out of memory comparing %s with rank 0's", what);
        return PK_ENOMEM;
    }
    if (rank == 0)
        memcpy(root, bytes, len);
    /* in pieces: a count is an int */
    for (size_t off = 0; off < len; off += (size_t)1 << 30) {
        size_t k = len - off < ((size_t)1 << 30) ? len - off : ((size_t)1 << 30);
        MPI_Bcast(root + off, (int)k, MPI_BYTE, 0, comm);
    }
    pk_status st = PK_OK;
    if (memcmp(root, bytes, len) != 0) {
        pkm_set_error("%s differ from rank 0's: every rank must pass the same", what);
        st = PK_EINVAL;
    }
    free(root);
    return st;
}

void pkm_info_begin(pk_mpi_info *info, const pkm_slabs *s, int lo, int hi) {
    if (!info)
        return;
    pk_run_info keep = info->local;
    memset(info, 0, sizeof *info);
    info->local = keep;
    info->rank = s->rank;
    info->nranks = s->nranks;
    info->i0 = s->i0 ? s->i0[s->rank] : -1;
    info->i1 = s->i0 ? s->i1[s->rank] : -1;
    info->halo_lo = lo;
    info->halo_hi = hi;
    snprintf(info->halo_memory, sizeof info->halo_memory, "host");
}

pk_mpi_info *pkm_info_run(pk_mpi_info *info, pk_mpi_info *spare, const pkm_slabs *s, int lo,
                          int hi) {
    if (!info) {
        memset(spare, 0, sizeof *spare);
        info = spare;
    }
    pkm_info_begin(info, s, lo, hi);
    return info;
}

pk_status pkm_context(pk_context *ctx, pk_context **out, int *owned) {
    *owned = 0;
    *out = ctx;
    if (ctx)
        return PK_OK;
    pk_status st = pk_context_create(out, NULL);
    if (st != PK_OK) {
        pkm_set_error("pk_context_create: %s", pk_last_error());
        *out = NULL;
        return st;
    }
    *owned = 1;
    return PK_OK;
}

int pkm_depth(const pkm_slabs *s, int requested, int dflt) {
    if (requested > 0)
        return requested;
    int thinnest = s->n;
    for (int r = 0; r < s->nranks; r++)
        if (s->i1[r] - s->i0[r] < thinnest)
            thinnest = s->i1[r] - s->i0[r];
    int d = thinnest / 4;
    return d < 1 ? 1 : d > dflt ? dflt : d;
}

void *pkm_alloc64(size_t bytes) {
    void *p = NULL;
    return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}
