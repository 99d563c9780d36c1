/* mpi_halo.c - the halo exchange of rows by global index (mpi_internal.h): one helper for the
 * diffusion3d planes (walls: halos clipped at 0 and n) and the conv2d rows (periodic: any
 * depth, from any rank). */
#include "mpi_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The runs of receiver r: its halo positions grouped by owner and consecutive global rows;
 * a run never crosses from the rows below to the rows above.  out NULL: count only. */
static int runs_of(const pkm_slabs *s, int r, const int *lo, const int *hi, int periodic,
                   pkm_run *out) {
    int count = 0, have = 0, gprev = 0;
    pkm_run cur = {0, 0, 0, 0, 0};
    for (int p = 0; p < lo[r] + hi[r]; p++) {
        long g = p < lo[r] ? (long)s->i0[r] - lo[r] + p : (long)s->i1[r] + (p - lo[r]);
        if (periodic)
            g = ((g % s->n) + s->n) % s->n;
        int owner = pkm_slabs_owner(s, (int)g);
        if (have && owner == cur.peer && g == gprev + 1 && p != lo[r]) {
            cur.n++;
        } else {
            if (have) {
                if (out)
                    out[count] = cur;
                count++;
            }
            cur.peer = owner;
            cur.row = p;
            cur.src = (int)g - s->i0[owner];
            cur.n = 1;
            cur.tag = count;
            have = 1;
        }
        gprev = (int)g;
    }
    if (have) {
        if (out)
            out[count] = cur;
        count++;
    }
    return count;
}

pk_status pkm_halo_make(pkm_halo *h, MPI_Comm comm, const pkm_slabs *s, const int *lo,
                        const int *hi, int periodic, size_t row_bytes) {
    memset(h, 0, sizeof *h);
    h->comm = comm;
    h->row_bytes = row_bytes;
    h->row_type = MPI_DATATYPE_NULL;
    int me = s->rank;
    h->lo = lo[me];
    h->hi = hi[me];
    h->slab = s->i1[me] - s->i0[me];
    if (row_bytes > (size_t)INT_MAX) {
        pkm_set_error("a halo row of %zu bytes is beyond one MPI message count (%d)", row_bytes,
                      INT_MAX);
        return PK_EUNSUPPORTED;
    }
    int tag_ub = 32767, *ub = NULL, flag = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
    if (flag && ub)
        tag_ub = *ub;
    /* what this rank receives (and copies from itself) */
    int mine = runs_of(s, me, lo, hi, periodic, NULL);
    pkm_run *my = malloc(((size_t)mine + 1) * sizeof *my);
    if (!my)
        goto nomem;
    runs_of(s, me, lo, hi, periodic, my);
    if (mine > tag_ub) {
        free(my);
        pkm_set_error("%d halo messages to one rank: beyond MPI_TAG_UB %d", mine, tag_ub);
        return PK_EUNSUPPORTED;
    }
    h->recv = malloc(((size_t)mine + 1) * sizeof *h->recv);
    h->self = malloc(((size_t)mine + 1) * sizeof *h->self);
    if (!h->recv || !h->self) {
        free(my);
        goto nomem;
    }
    for (int k = 0; k < mine; k++) {
        if (my[k].peer == me)
            h->self[h->nself++] = my[k];
        else
            h->recv[h->nrecv++] = my[k];
    }
    free(my);
    /* what every other rank receives from this one */
    int cap = 0;
    for (int r = 0; r < s->nranks; r++) {
        if (r == me)
            continue;
        int nr = runs_of(s, r, lo, hi, periodic, NULL);
        if (nr == 0)
            continue;
        pkm_run *theirs = malloc((size_t)nr * sizeof *theirs);
        if (!theirs)
            goto nomem;
        runs_of(s, r, lo, hi, periodic, theirs);
        for (int k = 0; k < nr; k++) {
            if (theirs[k].peer != me)
                continue;
            if (h->nsend == cap) {
                cap = cap ? 2 * cap : 8;
                pkm_run *grown = realloc(h->send, (size_t)cap * sizeof *grown);
                if (!grown) {
                    free(theirs);
                    goto nomem;
                }
                h->send = grown;
            }
            pkm_run run = theirs[k];
            run.peer = r;
            run.row = theirs[k].src; /* the first row in this rank's slab */
            h->send[h->nsend++] = run;
        }
        free(theirs);
    }
    h->req = malloc(((size_t)h->nsend + h->nrecv + 1) * sizeof *h->req);
    if (!h->req)
        goto nomem;
    MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &h->row_type);
    MPI_Type_commit(&h->row_type);
    return PK_OK;
nomem:
    pkm_halo_free(h);
    pkm_set_error("out of memory for the halo exchange's message lists");
    return PK_ENOMEM;
}

void pkm_halo_free(pkm_halo *h) {
    if (!h)
        return;
    if (h->row_type != MPI_DATATYPE_NULL && h->row_type != 0)
        MPI_Type_free(&h->row_type);
    free(h->send);
    free(h->recv);
    free(h->self);
    free(h->req);
    memset(h, 0, sizeof *h);
    h->row_type = MPI_DATATYPE_NULL;
}

static const char *row_src(const pkm_halo *h, const pkm_src *src, int row, int n) {
    size_t rb = h->row_bytes;
    if (src->lo_copy && row + n <= src->ncopy)
        return (const char *)src->lo_copy + (size_t)row * rb;
    if (src->hi_copy && row >= h->slab - src->ncopy)
        return (const char *)src->hi_copy + (size_t)(row - (h->slab - src->ncopy)) * rb;
    return (const char *)src->own + (size_t)row * rb;
}

static char *halo_dst(const pkm_halo *h, void *below, void *above, int pos) {
    if (pos < h->lo)
        return (char *)below + (size_t)pos * h->row_bytes;
    return (char *)above + (size_t)(pos - h->lo) * h->row_bytes;
}

pk_status pkm_halo_start(pkm_halo *h, const pkm_src *src, void *below, void *above,
                         pk_mpi_info *info) {
    int nreq = 0;
    for (int k = 0; k < h->nrecv; k++) {
        const pkm_run *r = &h->recv[k];
        MPI_Irecv(halo_dst(h, below, above, r->row), r->n, h->row_type, r->peer, r->tag, h->comm,
                  &h->req[nreq++]);
    }
    for (int k = 0; k < h->nsend; k++) {
        const pkm_run *r = &h->send[k];
        MPI_Isend(row_src(h, src, r->row, r->n), r->n, h->row_type, r->peer, r->tag, h->comm,
                  &h->req[nreq++]);
        if (info) {
            info->halo_bytes += (double)r->n * (double)h->row_bytes;
            info->messages++;
        }
    }
    for (int k = 0; k < h->nself; k++) {
        const pkm_run *r = &h->self[k];
        memcpy(halo_dst(h, below, above, r->row), row_src(h, src, r->src, r->n),
               (size_t)r->n * h->row_bytes);
    }
    if (info)
        info->exchanges++;
    h->active = nreq;
    return PK_OK;
}

pk_status pkm_halo_finish(pkm_halo *h) {
    if (h->active)
        MPI_Waitall(h->active, h->req, MPI_STATUSES_IGNORE);
    h->active = 0;
    return PK_OK;
}
