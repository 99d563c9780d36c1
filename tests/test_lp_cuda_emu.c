/* test_lp_cuda_emu.c - laplace2d.cu without a GPU: its plan (pk_cuda_lp_*) on the emulated
 * device of cuda/emulate.h against pk_laplace2d_reference within lp_common.h's bound
 * 2 k gamma_5 nu^k max|phi|, on every layout and extent of lp_common.h's lp_shapes (lexi;
 * hvfo with 1, 2, 3, 4, 5, 8, 15, 16, 32 lanes and nw = l: the kernel's wrap of the east and
 * west neighbours across lanes) and counts 0, 1, 3, 10, plus a field of several blocks in x
 * and y.  The field goes to the device in the layout (pk_laplace2d_to_hvfo, as the library
 * does) and comes back into a NaN-filled buffer with a guard zone.  Then the plan: runs of 2
 * and 3 iterations equal one of 5 bit for bit, a download before any upload gives zeros; and
 * create when each of its allocations fails (see cuda_emu_common.h).
 */
#include "cuda_emu_common.h"
#include "laplace2d_host.h"
#include "lattice_index.h"
#include "lp_common.h"

static pk_lp_desc lpe_desc(const pk_laplace2d_params *p)
{
    pk_lp_desc d; /* as lib/laplace2d.c fills it */
    memset(&d, 0, sizeof d);
    d.l = p->l;
    d.layout = p->layout;
    d.nw = p->layout == PK_LAP_HVFO ? (p->nw ? p->nw : PK_LAP_DEFAULT_NW) : 1;
    pk_lp_coefficients(p->sigma, &d.sigma, &d.inv);
    d.variant = "cuda";
    return d;
}

/* lpe_exec: 1: the execute op on a device copy of the field (in the layout) instead; 2:
 * the execute_canonical op (plan_execute on a device array in lexi: reordered on the
 * device), checked against the host path's bits */
static int lpe_devptr;
static size_t lpe_ndiff; /* mode 2: floats that differ from the host path's */

/* phi (lexicographic) after p->count iterations in `runs` plan runs; the result comes back
 * into a NaN-filled buffer with a guard zone (PK_EINTERNAL when it is written or a NaN is
 * left). */
static pk_status lpe_exec(const pk_laplace2d_params *p, float *phi, int runs);

/* Mode 2: phi (lexi) in a device array, execute_canonical in place; the result must have
 * the host path's bits (reorder on the host, upload, run, download, reorder back), nothing
 * copied (the note "device pointers, none", transfer 0 by construction) and the
 * kernel's and reorders' seconds >= 0. */
static pk_status lpe_canonical(const pk_laplace2d_params *p, float *phi)
{
    const pk_lp_desc d = lpe_desc(p);
    const size_t n = (size_t)p->l * p->l;
    float *host = lp_alloc(n), *back = lp_alloc(n);
    memcpy(host, phi, n * sizeof(float));
    lpe_devptr = 0;
    pk_status s = lpe_exec(p, host, 1);
    lpe_devptr = 2;
    float *dev = pk_emu_device_array(phi, n * sizeof(float));
    void *impl = NULL;
    double ks = -1, ls = -1;
    if (s == PK_OK) s = pk_cuda_lp_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK && !dev) s = pk_fail(PK_EDEVMEM, "test device array");
    if (s == PK_OK) s = pk_cuda_lp_ops.execute_canonical(impl, dev, p->count, &ks, &ls);
    s = emu_zero_copy(impl, s, 0.0);
    if (s == PK_OK && (ks < 0 || ls < 0))
        s = pk_fail(PK_EINTERNAL, "kernel %g s, reorders %g s", ks, ls);
    if (s == PK_OK && pk_emu_device_read(back, dev, n * sizeof(float)))
        s = pk_fail(PK_EDEVICE, "reading the device array back");
    size_t diff = 0;
    for (size_t i = 0; s == PK_OK && i < n; ++i)
        diff += memcmp(&back[i], &host[i], sizeof(float)) != 0;
    lpe_ndiff += diff;
    if (s == PK_OK && diff)
        s = pk_fail(PK_EINTERNAL, "%zu of %zu floats differ from the host path's", diff, n);
    if (s == PK_OK) { /* a host field: refused, the plan fine after */
        const pk_status so = pk_cuda_lp_ops.execute_canonical(impl, host, p->count, &ks, &ls);
        if (so != PK_EINVAL || !strstr(pk_last_error(), "not device memory"))
            s = pk_fail(PK_EINTERNAL, "a host field: %s (%s), not PK_EINVAL",
                        pk_status_name(so), pk_last_error());
    }
    if (s == PK_OK) memcpy(phi, back, n * sizeof(float));
    pk_cuda_lp_ops.destroy(impl);
    pk_emu_device_free(dev);
    free(host);
    free(back);
    return s;
}

static pk_status lpe_exec(const pk_laplace2d_params *p, float *phi, int runs)
{
    if (lpe_devptr == 2) return lpe_canonical(p, phi);
    const pk_lp_desc d = lpe_desc(p);
    const size_t n = (size_t)p->l * p->l;
    float *lay = lp_alloc(n), *buf = lp_alloc(n + LP_GUARD);
    for (size_t i = 0; i < n; ++i) buf[i] = NAN;
    for (size_t i = n; i < n + LP_GUARD; ++i) buf[i] = LP_SENTINEL;
    pk_status s = PK_OK;
    if (d.layout == PK_LAP_HVFO)
        s = pk_laplace2d_to_hvfo(d.l, d.nw, phi, lay);
    else
        memcpy(lay, phi, n * sizeof(float));
    void *impl = NULL;
    if (s == PK_OK) s = pk_cuda_lp_ops.create(emu_state(), 0, &d, &impl);
    if (lpe_devptr) {
        float *dev = pk_emu_device_array(lay, n * sizeof(float));
        double ks = -1, ts = -1;
        if (s == PK_OK && !dev) s = pk_fail(PK_EDEVMEM, "test device array");
        if (s == PK_OK) s = pk_cuda_lp_ops.execute(impl, dev, p->count, &ks, &ts);
        if (s == PK_OK) s = emu_zero_copy(impl, s, ts);
        if (s == PK_OK && pk_emu_device_read(buf, dev, n * sizeof(float)))
            s = pk_fail(PK_EDEVICE, "reading the device array back");
        pk_emu_device_free(dev);
        runs = 0;
    } else if (s == PK_OK) {
        s = pk_cuda_lp_ops.upload(impl, lay, NULL);
    }
    for (int r = 0, done = 0; r < runs && s == PK_OK; ++r) {
        const int c = r + 1 == runs ? p->count - done : p->count / runs;
        s = pk_cuda_lp_ops.run(impl, c, NULL);
        done += c;
    }
    if (s == PK_OK && !lpe_devptr) s = pk_cuda_lp_ops.download(impl, buf, NULL);
    pk_cuda_lp_ops.destroy(impl);
    size_t bad = 0, nan = 0;
    for (size_t i = n; i < n + LP_GUARD; ++i) bad += buf[i] != LP_SENTINEL;
    for (size_t i = 0; i < n; ++i) nan += buf[i] != buf[i];
    if (s == PK_OK && (bad || nan))
        s = pk_fail(PK_EINTERNAL, "%zu guard floats overwritten, %zu NaN in the result", bad, nan);
    if (s == PK_OK && d.layout == PK_LAP_HVFO)
        s = pk_laplace2d_from_hvfo(d.l, d.nw, buf, phi);
    else if (s == PK_OK)
        memcpy(phi, buf, n * sizeof(float));
    free(lay);
    free(buf);
    return s;
}

/* One (l, count, layout, nw) with lp_case's data; returns 1 when it passes. */
static int lpe_case(int l, int count, int layout, int nw, double *maxerr, char *why,
                    size_t whylen)
{
    pk_laplace2d_params p = lp_params(l, count, layout, nw);
    const size_t n = (size_t)l * l;
    float *x = lp_alloc(n), *ref = lp_alloc(n);
    lp_case_field(&p, x, ref);
    const double tol = lp_tol_ref(count, lp_maxabs(x, n));
    const pk_status s = lpe_exec(&p, x, 1);
    size_t nfail = 0, first = (size_t)-1;
    const double e = s == PK_OK ? lp_maxdiff(x, ref, n, tol, &nfail, &first) : INFINITY;
    if (e > *maxerr) *maxerr = e;
    int good = s == PK_OK && nfail == 0;
    if (!good) {
        char lay[32];
        const size_t len = strlen(why);
        snprintf(why + len, whylen - len, "; l=%d %s count %d: %s, %zu over %.2e, first [%zu, %zu]",
                 l, lp_layout_label(&p, lay, sizeof lay), count, emu_why(s), nfail, tol,
                 first == (size_t)-1 ? 0 : first / l, first == (size_t)-1 ? 0 : first % l);
    }
    emu_next_case();
    free(x);
    free(ref);
    return good;
}

static void lpe_check_shape(const lp_shape *sh)
{
    static const int counts[] = {0, 1, 3, 10};
    double maxerr = 0;
    char why[2048] = "", lay[32], ls[96] = "";
    int good = 1;
    pk_laplace2d_params p = lp_params(1, 0, sh->layout, sh->nw);
    for (int i = 0; i < sh->nl; ++i) {
        const size_t len = strlen(ls);
        snprintf(ls + len, sizeof ls - len, "%s%d", i ? "," : "", sh->l[i]);
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
            good &= lpe_case(sh->l[i], counts[c], sh->layout, sh->nw, &maxerr, why, sizeof why);
    }
    ok(good, "cuda %s%s, l = %s, count 0/1/3/10: equals the reference within 2 k gamma_5 nu^k "
       "max|phi| (max abs err %.2e%s)",
       lp_layout_label(&p, lay, sizeof lay),
       lpe_devptr == 2   ? ", plan_execute on a device array in lexi (reordered on the device; "
                           "the host path's bits, no transfer, a host field PK_EINVAL)"
       : lpe_devptr == 1 ? ", execute on a device array (no transfer)"
                         : "",
       ls, maxerr, why);
}

static void lpe_check_plan(void)
{
    pk_laplace2d_params p = lp_params(40, 5, PK_LAP_HVFO, 8);
    const pk_lp_desc d = lpe_desc(&p);
    const size_t n = 1600;
    float *x = lp_alloc(n), *a = lp_alloc(n), *b = lp_alloc(n);
    lp_fill(x, n, 9, 0.5f, 1.0f);
    memcpy(a, x, n * sizeof(float));
    memcpy(b, x, n * sizeof(float));
    const pk_status s1 = lpe_exec(&p, a, 1), s2 = lpe_exec(&p, b, 2);
    ok(s1 == PK_OK && s2 == PK_OK && memcmp(a, b, n * sizeof(float)) == 0,
       "plan: runs of 2 and 3 iterations give the bits of one run of 5 (%s)",
       emu_why(s1 != PK_OK ? s1 : s2));
    void *impl = NULL;
    size_t nonzero = 0;
    pk_status s = pk_cuda_lp_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_lp_ops.download(impl, a, NULL);
    for (size_t i = 0; i < n && s == PK_OK; ++i) nonzero += a[i] != 0.0f;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    pk_cuda_lp_ops.destroy(impl);
    emu_next_case();
    free(x);
    free(a);
    free(b);
}

/* lib/lattice_index.h's pk_lp_hvfo_col is the host reorder's rule too: for every hvfo shape
 * of lp_common.h, pk_laplace2d_to_hvfo puts lexi float (y, x) at y l + pk_lp_hvfo_col(l, nw,
 * x). */
static void lpe_check_index(void)
{
    size_t bad = 0, checked = 0;
    for (int i = 0; i < LP_NSHAPES; ++i) {
        const lp_shape *sh = &lp_shapes[i];
        if (sh->layout != PK_LAP_HVFO) continue;
        for (int j = 0; j < sh->nl; ++j) {
            const int l = sh->l[j], nw = sh->nw ? sh->nw : PK_LAP_DEFAULT_NW;
            const size_t n = (size_t)l * l;
            float *x = lp_alloc(n), *h = lp_alloc(n);
            for (size_t k = 0; k < n; ++k) x[k] = (float)k;
            if (pk_laplace2d_to_hvfo(l, nw, x, h) != PK_OK) {
                printf("Bail out! pk_laplace2d_to_hvfo(%d, %d) failed\n", l, nw);
                exit(1);
            }
            for (size_t k = 0; k < n; ++k, ++checked) {
                const size_t y = k / (size_t)l;
                bad += h[y * (size_t)l + (size_t)pk_lp_hvfo_col(l, nw, (int)(k % (size_t)l))] !=
                       x[k];
            }
            free(x);
            free(h);
        }
    }
    ok(bad == 0, "pk_lp_hvfo_col (the device reorder's rule) is where pk_laplace2d_to_hvfo "
       "puts each float: %zu of %zu wrong", bad, checked);
}

static pk_status lpe_create(const void *arg, void **impl)
{
    return pk_cuda_lp_ops.create(emu_state(), 0, (const pk_lp_desc *)arg, impl);
}

int main(void)
{
    emu_begin("laplace2d.cu");
    lp_init_bounds();
    for (int i = 0; i < LP_NSHAPES; ++i) lpe_check_shape(&lp_shapes[i]);
    static const lp_shape big[] = {{PK_LAP_LEXI, 0, {300}, 1}, {PK_LAP_HVFO, 0, {272}, 1}};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; ++i) lpe_check_shape(&big[i]);
    lpe_check_plan();
    /* the execute op on device arrays: in place, no transfer (lexi as plan_execute takes it;
     * hvfo as the .cu file gets it, already reordered) */
    static const lp_shape dev[] = {{PK_LAP_LEXI, 0, {37, 64}, 2}, {PK_LAP_HVFO, 8, {40}, 1}};
    lpe_devptr = 1;
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; ++i) lpe_check_shape(&dev[i]);
    lpe_check_index();
    /* execute_canonical on every shape: lexi runs on the field itself, hvfo reorders on the
     * device */
    lpe_devptr = 2;
    for (int i = 0; i < LP_NSHAPES; ++i) lpe_check_shape(&lp_shapes[i]);
    lpe_devptr = 0;
    ok(lpe_ndiff == 0, "plan_execute on device arrays: %zu floats differ from the host path's",
       lpe_ndiff);
    pk_laplace2d_params p = lp_params(24, 1, PK_LAP_LEXI, 0);
    const pk_lp_desc d = lpe_desc(&p);
    emu_check_alloc_failures("laplace2d plan creation", lpe_create, pk_cuda_lp_ops.destroy, &d);
    return emu_end();
}
