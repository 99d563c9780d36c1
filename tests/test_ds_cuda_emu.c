/* test_ds_cuda_emu.c - dslash.cu without a GPU: its plan (pk_cuda_ds_*: the host-side
 * reorderings into the component-major, basis-changed layout, the kernel, the reordering
 * back) on the emulated device of cuda/emulate.h, against pk_dslash_reference within
 * ds_common.h's bound 2 E_M ||psi|| / ||chi|| (<= 1e-12), on every lattice of ds_sizes
 * (extents 1 and 2, where a site is its own or its only neighbour, odd extents) and a bigger
 * one, with full links and recon12 (the kernel's two instantiations).  recon12 links go up
 * as their first two rows, as lib/dslash.c sends them.  chi comes back into a NaN-filled
 * buffer with a guard zone.  Then the plan: two runs give the same bits, a download before
 * any upload gives zeros; the reorderings on 1, 2 and 3 threads give the one-thread bits; and
 * create when each of its allocations fails.
 */
#include "cuda_emu_common.h"
#include "ds_common.h"

#include <float.h>

static int dse_threads; /* the plan's host threads (the layout conversions'; 0: default) */

static pk_ds_desc dse_desc(const pk_dslash_params *p)
{
    pk_ds_desc d; /* as lib/dslash.c fills it */
    memset(&d, 0, sizeof d);
    d.dims[0] = p->x;
    d.dims[1] = p->y;
    d.dims[2] = p->z;
    d.dims[3] = p->t;
    d.volume = ds_volume(p);
    d.kappa = p->kappa;
    d.recon12 = p->recon12;
    d.u_doubles = 4 * d.volume * (p->recon12 ? 12 : 18);
    d.spinor_doubles = 24 * d.volume;
    d.variant = "cuda";
    d.threads = dse_threads;
    return d;
}

/* chi through a plan run `runs` times; u full links (compressed here for recon12). */
static pk_status dse_exec(const pk_dslash_params *p, const double *u, const double *psi,
                          double *chi, int runs)
{
    const pk_ds_desc d = dse_desc(p);
    const size_t ns = d.spinor_doubles, nl = 4 * d.volume;
    double *u12 = ds_alloc(nl * 12), *buf = ds_alloc(ns + DS_GUARD);
    for (size_t k = 0; k < nl; ++k) memcpy(u12 + 12 * k, u + 18 * k, 12 * sizeof(double));
    for (size_t i = 0; i < ns; ++i) buf[i] = NAN;
    for (size_t i = ns; i < ns + DS_GUARD; ++i) buf[i] = DS_SENTINEL;
    void *impl = NULL;
    pk_status s = pk_cuda_ds_create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_ds_upload(impl, p->recon12 ? u12 : u, psi, NULL);
    for (int r = 0; r < runs && s == PK_OK; ++r) s = pk_cuda_ds_run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_ds_download(impl, buf, NULL);
    pk_cuda_ds_destroy(impl);
    size_t bad = 0;
    for (size_t i = ns; i < ns + DS_GUARD; ++i) bad += buf[i] != DS_SENTINEL;
    if (s == PK_OK && bad)
        s = pk_fail(PK_EINTERNAL, "%zu of the %d doubles after chi were overwritten", bad,
                    DS_GUARD);
    memcpy(chi, buf, ns * sizeof(double));
    free(u12);
    free(buf);
    return s;
}

static void dse_check(const int *L, int recon12)
{
    pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, recon12);
    const size_t ns = 24 * ds_volume(&p);
    double *u, *psi, *ref = ds_alloc(ns), *chi = ds_alloc(ns);
    ds_fields(&p, (unsigned)(L[0] + 3 * L[1] + 7 * L[2] + 11 * L[3]), &u, &psi);
    if (pk_dslash_reference(&p, u, psi, ref) != PK_OK) {
        printf("Bail out! reference %dx%dx%dx%d failed\n", L[0], L[1], L[2], L[3]);
        exit(1);
    }
    const double tol = 2 * ds_EM(p.kappa) * ds_norm(psi, ns) / ds_norm(ref, ns);
    const pk_status s = dse_exec(&p, u, psi, chi, 1);
    const double e = s == PK_OK ? ds_relerr(chi, ref, ns) : INFINITY;
    ok(s == PK_OK && e <= tol && tol <= DS_ISSUE_TOL,
       "cuda%s %dx%dx%dx%d: rel err %.2e <= bound %.2e (<= %.0e; %s)", recon12 ? " recon12" : "",
       L[0], L[1], L[2], L[3], e, tol, DS_ISSUE_TOL, emu_why(s));
    emu_next_case();
    free(u);
    free(psi);
    free(ref);
    free(chi);
}

static void dse_check_plan(void)
{
    pk_dslash_params p = ds_params(3, 2, 5, 4, 0.13, 1);
    const size_t ns = 24 * ds_volume(&p);
    double *u, *psi, *a = ds_alloc(ns), *b = ds_alloc(ns);
    ds_fields(&p, 77, &u, &psi);
    const pk_status s1 = dse_exec(&p, u, psi, a, 1), s2 = dse_exec(&p, u, psi, b, 2);
    ok(s1 == PK_OK && s2 == PK_OK && memcmp(a, b, ns * sizeof(double)) == 0,
       "plan: two runs on one upload give the bits of one (%s)", emu_why(s1 != PK_OK ? s1 : s2));
    const pk_ds_desc d = dse_desc(&p);
    void *impl = NULL;
    size_t nonzero = 0;
    pk_status s = pk_cuda_ds_create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_ds_download(impl, a, NULL);
    for (size_t i = 0; i < ns && s == PK_OK; ++i) nonzero += a[i] != 0.0;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    pk_cuda_ds_destroy(impl);
    emu_next_case();
    free(u);
    free(psi);
    free(a);
    free(b);
}

/* The host reorderings on 1, 2 and 3 threads (PORTKERN_TEST_PARALLEL_BYTES=0 threads every
 * size) give the one-thread bits, on odd lattices, full links and recon12. */
static void dse_check_threads(void)
{
    static const int dims[][4] = {{3, 5, 2, 7}, {4, 1, 3, 3}, {5, 3, 1, 9}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; ++i)
        for (int r = 0; r <= 1; ++r) {
            const int *L = dims[i];
            pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, r);
            const size_t ns = 24 * ds_volume(&p);
            double *u, *psi, *one = ds_alloc(ns), *chi = ds_alloc(ns);
            ds_fields(&p, 5, &u, &psi);
            dse_threads = 1;
            pk_status s = dse_exec(&p, u, psi, one, 1);
            int same = 1;
            setenv("PORTKERN_TEST_PARALLEL_BYTES", "0", 1);
            for (dse_threads = 1; dse_threads <= 3 && s == PK_OK; ++dse_threads) {
                s = dse_exec(&p, u, psi, chi, 1);
                same &= memcmp(one, chi, ns * sizeof(double)) == 0;
            }
            unsetenv("PORTKERN_TEST_PARALLEL_BYTES");
            dse_threads = 0;
            ok(s == PK_OK && same, "cuda%s %dx%dx%dx%d: the reorderings on 1, 2, 3 threads give "
               "the one-thread bits (%s)", r ? " recon12" : "", L[0], L[1], L[2], L[3],
               emu_why(s));
            emu_next_case();
            free(u);
            free(psi);
            free(one);
            free(chi);
        }
}

/* Device arrays: the plan reorders on the host, so upload and download refuse them with
 * PK_EINVAL naming the array, and the plan works on host arrays afterwards. */
static void dse_check_devptr(void)
{
    pk_dslash_params p = ds_params(2, 3, 2, 2, 0.125, 0);
    const pk_ds_desc d = dse_desc(&p);
    const size_t ub = d.u_doubles * sizeof(double), sb = d.spinor_doubles * sizeof(double);
    double *u = pk_emu_device_array(NULL, ub), *psi = pk_emu_device_array(NULL, sb);
    double *hu = ds_alloc(d.u_doubles), *hp = ds_alloc(d.spinor_doubles);
    memset(hu, 0, ub);
    memset(hp, 0, sb);
    void *impl = NULL;
    char e1[300] = "", e2[300] = "";
    pk_status s = pk_cuda_ds_create(emu_state(), 0, &d, &impl), s1 = PK_OK, s2 = PK_OK;
    if (s == PK_OK && u && psi) {
        s1 = pk_cuda_ds_upload(impl, hu, psi, NULL);
        snprintf(e1, sizeof e1, "%s", pk_last_error());
        s2 = pk_cuda_ds_download(impl, u, NULL);
        snprintf(e2, sizeof e2, "%s", pk_last_error());
        s = pk_cuda_ds_upload(impl, hu, hp, NULL);
        if (s == PK_OK) s = pk_cuda_ds_run(impl, NULL);
        if (s == PK_OK) s = pk_cuda_ds_download(impl, hp, NULL);
    }
    ok(s == PK_OK && s1 == PK_EINVAL && s2 == PK_EINVAL && strstr(e1, "dslash psi: device") &&
           strstr(e2, "dslash chi: device"),
       "device arrays: upload and download refuse them (\"%s\"), host arrays work after (%s)",
       e1, emu_why(s));
    pk_cuda_ds_destroy(impl);
    pk_emu_device_free(u);
    pk_emu_device_free(psi);
    free(hu);
    free(hp);
    emu_next_case();
}

static pk_status dse_create(const void *arg, void **impl)
{
    return pk_cuda_ds_create(emu_state(), 0, (const pk_ds_desc *)arg, impl);
}

int main(void)
{
    emu_begin("dslash.cu");
    ds_u = DBL_EPSILON / 2; /* u of ds_common.h's bounds */
    for (size_t i = 0; i < DS_NSIZES; ++i)
        for (int r = 0; r <= 1; ++r) dse_check(ds_sizes[i], r);
    static const int big[4] = {16, 8, 8, 16};
    dse_check(big, 0);
    dse_check_plan();
    dse_check_threads();
    dse_check_devptr();
    pk_dslash_params p = ds_params(2, 3, 2, 2, 0.125, 0);
    const pk_ds_desc d = dse_desc(&p);
    emu_check_alloc_failures("dslash plan creation", dse_create, pk_cuda_ds_destroy, &d);
    return emu_end();
}
