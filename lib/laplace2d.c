/* laplace2d.c - the public laplace2d calls (docs/KERNELS.md 4a): validate once, reorder the
 * field into the kernel's layout on the host, choose a backend (with fallback under auto),
 * call through the backend's table, reorder back, fill the run info.  Also the layout
 * conversions, the reference's entry point and the host plan of the serial and OpenMP
 * backends.
 *
 * The reordering happens here, before a backend is chosen, so every backend receives the field
 * already in desc->layout with desc->nw lanes (lexi: nw = 1) and a plan keeps it that way
 * between runs: the reorder is paid at upload and download, never per iteration, and it is
 * reported as layout_s apart from kernel_s. */
#include "laplace2d_host.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Per site and iteration: 4 additions of neighbours, the multiply by a, the add of the centre,
 * the multiply by 1/(1+4a).  Bytes: the ideal traffic of one float read and one written (the
 * neighbours come from caches); a naive code moves 24 (5 reads + 1 write). */
#define LP_FLOPS_PER_SITE 7.0
#define LP_BYTES_PER_SITE 8.0
/* Host plans copy in parallel from this many sites on (below, a thread team costs more than it
 * saves). */
#define LP_PARALLEL_SITES (1 << 18)

struct pk_laplace2d_plan {
    pk_choice c;
    pk_lp_desc d;
    size_t n;      /* sites */
    float *buf;    /* hvfo: the field in the layout on the host side of upload/download */
    int uploaded;
};

/* ---- layouts ---------------------------------------------------------------------------- */
static const char *const lp_layout_names[2] = {"lexi", "hvfo"};

const char *pk_laplace2d_layout_name(int layout)
{
    return layout == PK_LAP_LEXI || layout == PK_LAP_HVFO ? lp_layout_names[layout] : NULL;
}

pk_status pk_laplace2d_layout_from_name(const char *name, int *layout)
{
    pk_clear_error();
    PK_CHECK_NULL(name);
    PK_CHECK_NULL(layout);
    for (int k = 0; k < 2; ++k)
        if (strcmp(name, lp_layout_names[k]) == 0) {
            *layout = k;
            return PK_OK;
        }
    return pk_fail(PK_EINVAL, "layout: unknown laplace2d layout '%s' (lexi, hvfo)", name);
}

/* l and nw for a reorder or an hvfo run: 1 <= nw <= l, l % nw == 0 (nw 0: the default). */
static pk_status lp_check_lanes(int l, int *nw)
{
    PK_CHECK(*nw >= 0, PK_ESIZE, "nw: must be >= 0 (0: the default, %d), got %d",
             PK_LAP_DEFAULT_NW, *nw);
    if (*nw == 0) *nw = PK_LAP_DEFAULT_NW;
    PK_CHECK(l % *nw == 0, PK_ESIZE,
             "l = %d is not a multiple of nw = %d: hvfo stores pho[y][x'][w] = phi[y][w*(l/nw) "
             "+ x'] and needs l %% nw == 0 (give an nw that divides l, or use layout lexi)",
             l, *nw);
    return PK_OK;
}

static pk_status lp_check_extent(int l)
{
    PK_CHECK(l >= 1, PK_ESIZE, "l: must be >= 1, got %d", l);
    size_t bytes;
    PK_CHECK(pk_mul3_size((size_t)l, (size_t)l, 2 * sizeof(float), &bytes) == 0, PK_EOVERFLOW,
             "l = %d: two fields of l*l floats overflow size_t", l);
    return PK_OK;
}

static int lp_overlap(const void *a, const void *b, size_t bytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return !(a0 + bytes <= b0 || b0 + bytes <= a0);
}

/* Row y of lexi -> hvfo (dir 0) or back (dir 1): a row is an nw x m matrix (lane w holds the
 * m consecutive x from w*m) stored transposed, m x nw.  Rows are independent: shares of whole
 * rows on `threads` (0: OpenMP's default), one thread under 4 MiB moved. */
typedef struct lp_reorder_job {
    int l, nw, to_hvfo;
    const float *src;
    float *dst;
} lp_reorder_job;

/* The transpose of one row: src an r x c matrix (row-major), dst c x r: dst[j r + i] =
 * src[i c + j], for the columns j0 .. c - 1 of src.  The scalar loop walks dst in order. */
static void lp_transpose_scalar(const float *src, int r, int c, float *dst, int j0)
{
    for (int j = j0; j < c; ++j)
        for (int i = 0; i < r; ++i) dst[(size_t)j * r + i] = src[(size_t)i * c + j];
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define LP_HAVE_T8 1
/* The same by 8 x 8 blocks in AVX registers (unpack, shuffle, 128-bit permute: 24 shuffles
 * for 64 floats) where r and c hold whole blocks, the scalar loop for the rest: a strided
 * gather per float otherwise (the reorder ran at a quarter of the copy bandwidth).  Output
 * block columns in order, so each line of dst is written whole before the next. */
__attribute__((target("avx2"))) static void lp_transpose_avx2(const float *src, int r, int c,
                                                              float *dst)
{
    const int r8 = r - r % 8, c8 = c - c % 8;
    for (int j = 0; j < c8; j += 8)
        for (int i = 0; i < r8; i += 8) {
            const float *a = src + (size_t)i * c + j;
            __m256 r0 = _mm256_loadu_ps(a), r1 = _mm256_loadu_ps(a + c),
                   r2 = _mm256_loadu_ps(a + 2 * (size_t)c), r3 = _mm256_loadu_ps(a + 3 * (size_t)c),
                   r4 = _mm256_loadu_ps(a + 4 * (size_t)c), r5 = _mm256_loadu_ps(a + 5 * (size_t)c),
                   r6 = _mm256_loadu_ps(a + 6 * (size_t)c), r7 = _mm256_loadu_ps(a + 7 * (size_t)c);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
                   t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
                   t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                   t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                   s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                   s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                   s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
                   s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
                   s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
                   s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
                   s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
            float *b = dst + (size_t)j * r + i;
            _mm256_storeu_ps(b, _mm256_permute2f128_ps(s0, s4, 0x20));
            _mm256_storeu_ps(b + r, _mm256_permute2f128_ps(s1, s5, 0x20));
            _mm256_storeu_ps(b + 2 * (size_t)r, _mm256_permute2f128_ps(s2, s6, 0x20));
            _mm256_storeu_ps(b + 3 * (size_t)r, _mm256_permute2f128_ps(s3, s7, 0x20));
            _mm256_storeu_ps(b + 4 * (size_t)r, _mm256_permute2f128_ps(s0, s4, 0x31));
            _mm256_storeu_ps(b + 5 * (size_t)r, _mm256_permute2f128_ps(s1, s5, 0x31));
            _mm256_storeu_ps(b + 6 * (size_t)r, _mm256_permute2f128_ps(s2, s6, 0x31));
            _mm256_storeu_ps(b + 7 * (size_t)r, _mm256_permute2f128_ps(s3, s7, 0x31));
        }
    /* the rest: rows r8.. of the block columns, then the columns c8.. */
    for (int j = 0; j < c8; ++j)
        for (int i = r8; i < r; ++i) dst[(size_t)j * r + i] = src[(size_t)i * c + j];
    lp_transpose_scalar(src, r, c, dst, c8);
}
#endif

/* (lexi column x lies at pk_lp_hvfo_col(l, nw, x) in hvfo, lib/lattice_index.h: the rule
 * the CUDA plan's device reorder calls per float; a row is that transpose.) */
void pk_lp_reorder_row(int l, int nw, const float *src, float *dst, int to_hvfo)
{
    const int m = l / nw;
    /* to hvfo: the row as nw x m (lane w holds x = w m ..) -> m x nw; back: the reverse */
    const int r = to_hvfo ? nw : m, c = to_hvfo ? m : nw;
#ifdef LP_HAVE_T8
    if (r >= 8 && c >= 8 && __builtin_cpu_supports("avx2")) {
        lp_transpose_avx2(src, r, c, dst);
        return;
    }
#endif
    lp_transpose_scalar(src, r, c, dst, 0);
}

static void lp_reorder_rows(void *arg, size_t y0, size_t y1)
{
    const lp_reorder_job *j = arg;
    for (size_t y = y0; y < y1; ++y)
        pk_lp_reorder_row(j->l, j->nw, j->src + y * (size_t)j->l, j->dst + y * (size_t)j->l,
                          j->to_hvfo);
}

static void lp_reorder(int l, int nw, const float *src, float *dst, int to_hvfo, int threads)
{
    lp_reorder_job j = {l, nw, to_hvfo, src, dst};
    const size_t n = (size_t)l * (size_t)l;
    pk_parallel_range((size_t)l, 1, 2 * n * sizeof(float), threads, lp_reorder_rows, &j);
}

static pk_status lp_convert(int l, int nw, const float *src, float *dst, int to_hvfo)
{
    pk_clear_error();
    PK_TRY(lp_check_extent(l));
    PK_TRY(lp_check_lanes(l, &nw));
    PK_CHECK(src != NULL, PK_ENULL, "%s: must not be NULL", to_hvfo ? "lexi" : "hvfo");
    PK_CHECK(dst != NULL, PK_ENULL, "%s: must not be NULL", to_hvfo ? "hvfo" : "lexi");
    PK_CHECK(!lp_overlap(src, dst, (size_t)l * (size_t)l * sizeof(float)), PK_EINVAL,
             "lexi and hvfo overlap: the reorder does not work in place");
    lp_reorder(l, nw, src, dst, to_hvfo, 0);
    return PK_OK;
}

pk_status pk_laplace2d_to_hvfo(int l, int nw, const float *lexi, float *hvfo)
{
    return lp_convert(l, nw, lexi, hvfo, 1);
}

pk_status pk_laplace2d_from_hvfo(int l, int nw, const float *hvfo, float *lexi)
{
    return lp_convert(l, nw, hvfo, lexi, 0);
}

/* ---- validation ------------------------------------------------------------------------- */
/* sigma in float (> 0, finite) and what the parameters mean for a backend. */
static pk_status lp_validate(const pk_laplace2d_params *p, pk_lp_desc *d, size_t *sites)
{
    PK_CHECK_NULL(p);
    PK_TRY(lp_check_extent(p->l));
    PK_CHECK(p->count >= 0, PK_ESIZE, "count: must be >= 0, got %d", p->count);
    PK_CHECK(isfinite(p->sigma), PK_ENONFINITE, "sigma: must be finite, got %g", p->sigma);
    PK_CHECK(p->sigma > 0, PK_EINVAL, "sigma: must be > 0, got %g", p->sigma);
    PK_CHECK(p->sigma <= FLT_MAX, PK_ENONFINITE, "sigma: %g overflows float (max %g)", p->sigma,
             (double)FLT_MAX);
    PK_CHECK((float)p->sigma > 0, PK_EINVAL, "sigma: %g rounds to 0 in float", p->sigma);
    PK_CHECK(p->layout == PK_LAP_LEXI || p->layout == PK_LAP_HVFO, PK_EINVAL,
             "layout: must be PK_LAP_LEXI (0) or PK_LAP_HVFO (1), got %d", p->layout);
    memset(d, 0, sizeof *d);
    d->l = p->l;
    d->layout = p->layout;
    if (p->layout == PK_LAP_HVFO) {
        d->nw = p->nw;
        PK_TRY(lp_check_lanes(p->l, &d->nw));
    } else {
        PK_CHECK(p->nw >= 0, PK_ESIZE, "nw: must be >= 0 (ignored by lexi), got %d", p->nw);
        d->nw = 1; /* lexi is hvfo with one lane */
    }
    pk_lp_coefficients(p->sigma, &d->sigma, &d->inv);
    d->count = p->count;
    *sites = (size_t)p->l * (size_t)p->l;
    return PK_OK;
}

pk_status pk_laplace2d_reference(const pk_laplace2d_params *p, float *phi)
{
    pk_clear_error();
    pk_laplace2d_params q;
    pk_lp_desc d;
    size_t n = 0;
    PK_CHECK_NULL(p);
    q = *p;
    q.layout = PK_LAP_LEXI; /* the reference ignores layout and nw */
    q.nw = 0;
    PK_TRY(lp_validate(&q, &d, &n));
    PK_CHECK_NULL(phi);
    if (p->count == 0) return PK_OK;
    float *tmp = malloc(n * sizeof(float));
    if (!tmp) return pk_fail(PK_ENOMEM, "laplace2d reference: cannot allocate %zu bytes",
                             n * sizeof(float));
    float *res;
    pk_lp_ref_steps(d.l, p->count, d.sigma, d.inv, phi, tmp, &res);
    if (res != phi) memcpy(phi, res, n * sizeof(float));
    free(tmp);
    return PK_OK;
}

/* ---- the kernel class the dispatcher uses ----------------------------------------------- */
static pk_status lp_create_on(const pk_backend_ops *backend, const void *kops, void *state,
                              int device, const void *desc,
                              const char *variant, int threads,
                              const pk_tuning *tuning, void **impl)
{
    pk_lp_desc d = *(const pk_lp_desc *)desc;
    d.variant = variant;
    d.threads = threads;
    d.tuning = tuning;
    return ((const pk_lp_ops *)kops)->create(state, device, &d, impl);
}

static void lp_destroy_on(const void *kops, void *impl)
{
    ((const pk_lp_ops *)kops)->destroy(impl);
}

static double lp_plan_bytes(const void *desc)
{
    const pk_lp_desc *d = desc;
    return 2.0 * 4.0 * (double)d->l * (double)d->l; /* two fields */
}
static void lp_wisdom_key(const void *desc, char *key, size_t len)
{
    snprintf(key, len, "layout=%s", ((const pk_lp_desc *)desc)->layout == PK_LAP_HVFO ? "hvfo"
                                                                                       : "lexi");
}
static void lp_counts(size_t sites, int count, double *flops, double *bytes)
{
    *flops = LP_FLOPS_PER_SITE * (double)sites * count;
    *bytes = LP_BYTES_PER_SITE * (double)sites * count;
}
static void lp_cost(const void *desc, pk_cost *c)
{
    const pk_lp_desc *d = desc;
    /* a plan made with count 0 runs later: one step at least */
    lp_counts((size_t)d->l * (size_t)d->l, d->count > 0 ? d->count : 1, &c->flops, &c->bytes);
    c->link_bytes = 2.0 * 4.0 * (double)d->l * (double)d->l; /* phi in and out */
}
static const pk_kernel_class lp_class = {
    .name = "laplace2d",
    .on = PK_KERNEL_ON(lp),
    .create = lp_create_on,
    .destroy = lp_destroy_on,
    .plan_bytes = lp_plan_bytes,
    .wisdom_key = lp_wisdom_key,
    .cost = lp_cost,
};

/* The kernel's ops table on the backend a choice landed on. */
static const pk_lp_ops *lp_ops(const pk_choice *c) { return c->kops; }

const char *pk_laplace2d_variants(pk_backend_id backend)
{
    return pk_kernel_variants(&lp_class, backend);
}

/* ---- host plans (serial, OpenMP) -------------------------------------------------------- */
/* Copy the field with the plan's row partition (first touch at creation, uploads, downloads). */
static void lp_host_copy(const pk_lp_host_plan *h, float *dst, const float *src)
{
    const size_t row = (size_t)h->d.l * sizeof(float);
#pragma omp parallel num_threads(h->nt) if (h->nt > 1 && h->n >= LP_PARALLEL_SITES)
    {
        const int t = pk_thread_num(), nt = pk_team_size();
        int y0, y1;
        pk_lp_rows_of(h->d.l, t, nt, &y0, &y1);
        if (y1 > y0) {
            if (src)
                memcpy(dst + (size_t)y0 * h->d.l, src + (size_t)y0 * h->d.l,
                       (size_t)(y1 - y0) * row);
            else
                memset(dst + (size_t)y0 * h->d.l, 0, (size_t)(y1 - y0) * row);
        }
    }
}

pk_status pk_lp_host_create(const pk_lp_desc *desc, int nt, pk_lp_host_plan **plan)
{
    pk_lp_host_plan *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(PK_ENOMEM, "laplace2d: out of host memory");
    h->d = *desc;
    pk_strlcpy(h->variant, desc->variant ? desc->variant : "", sizeof h->variant);
    h->d.variant = h->variant;
    h->n = (size_t)desc->l * (size_t)desc->l;
    h->nt = nt > 0 ? nt : 1;
    *plan = h; /* the fields come when a call first needs them (pk_lp_host_field) */
    return PK_OK;
}

/* One field of the plan, allocated on first use.  zero: first touched (zeroed) now with the
 * threads' row partition, for a field read before it is written (f1 of a run before any
 * upload); a field a sweep writes first is faulted in by the threads that sweep its rows, in
 * that sweep. */
pk_status pk_lp_host_field(pk_lp_host_plan *h, float **f, int zero)
{
    if (*f) return PK_OK;
    if (!(*f = pk_alloc_aligned(h->n * sizeof(float))))
        return pk_fail(PK_ENOMEM, "laplace2d: cannot allocate a field of %zu bytes",
                       h->n * sizeof(float));
    if (zero) lp_host_copy(h, *f, NULL);
    return PK_OK;
}

pk_status pk_lp_host_ready(pk_lp_host_plan *h, int second)
{
    if (!h->cur) { /* a run before any upload iterates on zeros */
        PK_TRY(pk_lp_host_field(h, &h->f1, 1));
        h->cur = h->f1;
    }
    return second ? pk_lp_host_field(h, h->cur == h->f1 ? &h->f2 : &h->f1, 0) : PK_OK;
}

pk_status pk_lp_host_upload(void *impl, const float *phi, double *seconds)
{
    pk_lp_host_plan *h = impl;
    const double t0 = pk_now();
    PK_TRY(pk_lp_host_field(h, &h->f1, 0));
    lp_host_copy(h, h->f1, phi);
    h->cur = h->f1;
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_lp_host_download(void *impl, float *phi, double *seconds)
{
    pk_lp_host_plan *h = impl;
    const double t0 = pk_now();
    lp_host_copy(h, phi, h->cur); /* before any upload or run (cur NULL): zeros */
    *seconds = pk_now() - t0;
    return PK_OK;
}

pk_status pk_lp_host_execute(void *impl, float *phi, int count, double *kernel_seconds,
                             double *transfer_seconds)
{
    pk_lp_host_plan *h = impl;
    double up = 0, down = 0;
    /* the hvfo rows are aligned vectors; the lexi rows load unaligned and peel to a line
     * before streaming stores, so any float's address will do */
    const uintptr_t align = h->d.layout == PK_LAP_HVFO ? 64 : sizeof(float);
    *kernel_seconds = 0;
    if ((uintptr_t)phi % align != 0) {
        PK_TRY(pk_lp_host_upload(h, phi, &up));
        PK_TRY(h->run(h, count, kernel_seconds));
        PK_TRY(pk_lp_host_download(h, phi, &down));
        *transfer_seconds = up + down;
        return PK_OK;
    }
    float *own = h->f1;
    h->f1 = phi;
    h->cur = phi;
    h->in_place = 1;
    pk_status s = h->run(h, count, kernel_seconds);
    h->in_place = 0;
    if (s == PK_OK && h->cur != phi) /* the result is in the work array */
        s = pk_lp_host_download(h, phi, &down);
    h->f1 = own;
    h->cur = own; /* the plan's own field (NULL: none yet), not the caller's: upload before a
                     plan_run */
    *transfer_seconds = down;
    return s;
}

void pk_lp_host_destroy(void *impl)
{
    pk_lp_host_plan *h = impl;
    if (!h) return;
    pk_free_aligned(h->f1);
    pk_free_aligned(h->f2);
    pk_free_aligned(h->scratch);
    free(h);
}

/* ---- calls ------------------------------------------------------------------------------ */
/* An hvfo call on the caller's lexi field goes to the backend's execute_canonical when it has
 * one for that memory: CUDA for device memory of the plan's device, a host backend (no
 * memory query) for host memory.  Otherwise the host reorders it around the run. */
static int lp_canonical(const pk_choice *c, const float *phi, size_t bytes)
{
    if (!lp_ops(c)->execute_canonical) return 0;
    if (c->ops && c->ops->memory) return pk_choice_memory(c, phi, bytes) == PK_MEM_DEVICE;
    return 1;
}

typedef struct lp_oneshot {
    float *lexi;      /* hvfo: the caller's lexi field; NULL for a lexi call */
    const pk_lp_desc *d;
    int threads;      /* the host reorders' team */
    pk_scratch *stage; /* hvfo: where the field is reordered to when the backend cannot */
    const float *in;  /* the field in the layout */
    float *out;       /* where the result goes in the layout (phi itself for lexi) */
    int in_place;     /* out is the caller's phi */
    int count;
    size_t bytes;     /* the field's */
    double up, kern, down, layout;
} lp_oneshot;

/* The one-shot call's work on a fresh plan: a device failure here falls back too. */
static pk_status lp_oneshot_work(pk_choice *c, void *arg)
{
    lp_oneshot *o = arg;
    if (o->lexi && lp_canonical(c, o->lexi, o->bytes)) {
        c->no_fallback = 1; /* it writes phi as it goes */
        double lay = 0;
        PK_TRY(lp_ops(c)->execute_canonical(c->impl, o->lexi, o->count, &o->kern, &lay));
        o->layout += lay;
        o->in = NULL; /* no reorder back */
        return PK_OK;
    }
    if (o->lexi && !o->in) { /* staged once: a fallback backend reuses it */
        float *buf = pk_scratch_get(o->stage, o->bytes);
        if (!buf)
            return pk_fail(PK_ENOMEM, "laplace2d: cannot allocate %zu bytes for the hvfo field",
                           o->bytes);
        const double tl = pk_now();
        lp_reorder(o->d->l, o->d->nw, o->lexi, buf, 1, o->threads);
        o->layout += pk_now() - tl;
        o->in = o->out = buf;
    }
    const void *f = o->out;
    /* on the field itself: host memory on a host backend, device memory on CUDA */
    if (lp_ops(c)->execute && o->in == o->out && pk_choice_direct(c, &f, &o->bytes, 1)) {
        c->no_fallback |= o->in_place;
        return lp_ops(c)->execute(c->impl, o->out, o->count, &o->kern, &o->down);
    }
    PK_TRY(lp_ops(c)->upload(c->impl, o->in, &o->up));
    PK_TRY(lp_ops(c)->run(c->impl, o->count, &o->kern));
    /* into phi itself: a download failing part way leaves no input to retry another backend */
    c->no_fallback |= o->in_place;
    return lp_ops(c)->download(c->impl, o->out, &o->down);
}

/* After lp_oneshot_work: a staged hvfo field reordered back into the caller's. */
static void lp_oneshot_end(lp_oneshot *o)
{
    if (!o->lexi || !o->in) return;
    const double tl = pk_now();
    lp_reorder(o->d->l, o->d->nw, o->out, o->lexi, 0, o->threads);
    o->layout += pk_now() - tl;
}

pk_status pk_laplace2d(pk_context *ctx, const pk_laplace2d_params *p, const char *variant,
                       float *phi, pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(ctx);
    pk_lp_desc d;
    size_t n = 0;
    PK_TRY(lp_validate(p, &d, &n));
    PK_CHECK_NULL(phi);
    const int hvfo = d.layout == PK_LAP_HVFO;
    /* hvfo staged in the context's scratch when the backend cannot convert: a repeated call
     * faults nothing */
    lp_oneshot o = {hvfo ? phi : NULL, &d, ctx->opt.threads, &ctx->scratch[0],
                    hvfo ? NULL : phi, hvfo ? NULL : phi, !hvfo, p->count, n * sizeof(float),
                    0, 0, 0, 0};
    pk_choice c;
    struct { int l, layout, nw; float sigma, inv; } key; /* the context's cache */
    memset(&key, 0, sizeof key);
    key.l = d.l, key.layout = d.layout, key.nw = d.nw, key.sigma = d.sigma, key.inv = d.inv;
    pk_status s = pk_dispatch_oneshot(ctx, &lp_class, variant, &d, &key, sizeof key,
                                      lp_oneshot_work, &o, NULL, &c);
    if (s == PK_OK) lp_oneshot_end(&o);
    pk_context_scratch_end(ctx);
    PK_TRY(s);
    if (info) {
        pk_choice_info(&c, info);
        info->transfer_s = o.up + o.down;
        info->kernel_s = o.kern;
        info->layout_s = o.layout;
        lp_counts(n, p->count, &info->flops, &info->bytes);
        info->wall_s = pk_now() - t0;
    }
    return PK_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */
pk_status pk_laplace2d_plan_create(pk_laplace2d_plan **plan, pk_context *ctx,
                                   const pk_laplace2d_params *p, const char *variant,
                                   pk_run_info *info)
{
    pk_clear_error();
    const double t0 = pk_now();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    *plan = NULL;
    PK_CHECK_NULL(ctx);
    pk_lp_desc d;
    size_t n = 0;
    PK_TRY(lp_validate(p, &d, &n));
    pk_laplace2d_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return pk_fail(PK_ENOMEM, "laplace2d: out of host memory");
    pl->d = d;
    pl->d.threads = ctx->opt.threads; /* the reorders' team (the backend's is set at create) */
    pl->n = n;
    if (d.layout == PK_LAP_HVFO && !(pl->buf = pk_alloc_aligned(n * sizeof(float)))) {
        free(pl);
        return pk_fail(PK_ENOMEM, "laplace2d: cannot allocate %zu bytes for the hvfo field",
                       n * sizeof(float));
    }
    pk_status s = pk_dispatch(ctx, &lp_class, variant, &d, NULL, NULL, &pl->c);
    if (s != PK_OK) {
        pk_free_aligned(pl->buf);
        free(pl);
        return s;
    }
    pk_choice_info(&pl->c, info);
    if (info) info->wall_s = pk_now() - t0;
    *plan = pl;
    return PK_OK;
}

/* hvfo plans reorder phi on the host in upload and download (and in plan_execute on a
 * backend without execute_canonical): device memory is refused there, never read by the
 * CPU. */
static pk_status lp_host_field(const pk_laplace2d_plan *plan, const float *phi)
{
    if (!plan->buf) return PK_OK;
    const void *p = phi;
    const size_t bytes = plan->n * sizeof(float);
    static const char *const name = "phi";
    return pk_choice_host_only(&plan->c, &p, &bytes, &name, 1,
                               lp_ops(&plan->c)->execute_canonical
                                   ? "the host reorders it from lexi to layout hvfo in "
                                     "plan_upload and plan_download (plan_execute reorders "
                                     "device memory of the plan's device on the device)"
                                   : "the host reorders it from lexi to layout hvfo");
}

pk_status pk_laplace2d_plan_upload(pk_laplace2d_plan *plan, const float *phi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(phi);
    PK_TRY(lp_host_field(plan, phi));
    double s;
    if (plan->buf) lp_reorder(plan->d.l, plan->d.nw, phi, plan->buf, 1, plan->d.threads);
    PK_TRY(lp_ops(&plan->c)->upload(plan->c.impl, plan->buf ? plan->buf : phi, &s));
    plan->uploaded = 1;
    return PK_OK;
}

pk_status pk_laplace2d_plan_run(pk_laplace2d_plan *plan, int count, pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK(count >= 0, PK_ESIZE, "count: must be >= 0, got %d", count);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_run: no field uploaded yet (call plan_upload)");
    const double t0 = pk_now();
    double kern = 0, flops, bytes;
    PK_TRY(lp_ops(&plan->c)->run(plan->c.impl, count, &kern));
    lp_counts(plan->n, count, &flops, &bytes);
    pk_choice_run_info(&plan->c, info, kern, flops, bytes, t0);
    return PK_OK;
}

pk_status pk_laplace2d_plan_execute(pk_laplace2d_plan *plan, float *phi, int count,
                                    pk_run_info *info)
{
    pk_clear_error();
    pk_run_info_begin(info);
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(phi);
    PK_CHECK(count >= 0, PK_ESIZE, "count: must be >= 0, got %d", count);
    if (plan->buf && lp_canonical(&plan->c, phi, plan->n * sizeof(float))) {
        /* hvfo on the caller's lexi field, converted by the backend: on the device for a
         * device field (nothing copied), in the passes' rows on OpenMP */
        const double t0 = pk_now();
        double kern = 0, lay = 0, flops, bytes;
        plan->uploaded = 0; /* the resident field is undefined now */
        PK_TRY(lp_ops(&plan->c)->execute_canonical(plan->c.impl, phi, count, &kern, &lay));
        lp_counts(plan->n, count, &flops, &bytes);
        pk_choice_run_info(&plan->c, info, kern, flops, bytes, t0);
        if (info) {
            info->transfer_s = 0;
            info->layout_s = lay;
        }
        return PK_OK;
    }
    PK_TRY(lp_host_field(plan, phi));
    const double t0 = pk_now();
    double layout_s = 0, tl = pk_now();
    if (plan->buf) lp_reorder(plan->d.l, plan->d.nw, phi, plan->buf, 1, plan->d.threads);
    layout_s += pk_now() - tl;
    float *field = plan->buf ? plan->buf : phi;
    lp_oneshot o = {NULL, &plan->d, plan->d.threads, NULL, field, field, plan->buf == NULL,
                    count, plan->n * sizeof(float), 0, 0, 0, 0};
    PK_TRY(lp_oneshot_work(&plan->c, &o));
    tl = pk_now();
    if (plan->buf) lp_reorder(plan->d.l, plan->d.nw, plan->buf, phi, 0, plan->d.threads);
    layout_s += pk_now() - tl;
    double flops, bytes;
    lp_counts(plan->n, count, &flops, &bytes);
    pk_choice_run_info(&plan->c, info, o.kern, flops, bytes, t0);
    if (info) {
        info->transfer_s = o.up + o.down;
        info->layout_s = plan->buf ? layout_s : 0;
    }
    plan->uploaded = 0; /* the resident field is undefined now */
    return PK_OK;
}

pk_status pk_laplace2d_plan_download(pk_laplace2d_plan *plan, float *phi)
{
    pk_clear_error();
    PK_CHECK_NULL(plan);
    PK_CHECK_NULL(phi);
    PK_CHECK(plan->uploaded, PK_ESTATE, "plan_download: no field uploaded yet (call plan_upload)");
    PK_TRY(lp_host_field(plan, phi));
    double s;
    if (!plan->buf) return lp_ops(&plan->c)->download(plan->c.impl, phi, &s);
    PK_TRY(lp_ops(&plan->c)->download(plan->c.impl, plan->buf, &s));
    lp_reorder(plan->d.l, plan->d.nw, plan->buf, phi, 0, plan->d.threads);
    return PK_OK;
}

void pk_laplace2d_plan_destroy(pk_laplace2d_plan *plan)
{
    if (!plan) return;
    if (plan->c.impl) lp_ops(&plan->c)->destroy(plan->c.impl);
    pk_free_aligned(plan->buf);
    free(plan);
}
