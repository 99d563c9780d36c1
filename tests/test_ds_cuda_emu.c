/* test_ds_cuda_emu.c - dslash.cu without a GPU: its plan (pk_cuda_ds_*: the host-side
 * reorderings into the component-major, basis-changed layout, the kernel, the reordering
 * back) on the emulated device of cuda/emulate.h, against pk_dslash_reference within
 * ds_common.h's bound 2 E_M ||psi|| / ||chi|| (<= 1e-12), on every lattice of ds_sizes
 * (extents 1 and 2, where a site is its own or its only neighbour, odd extents) and a bigger
 * one, with full links and recon12 (the kernel's two instantiations).  recon12 links go up
 * as their first two rows, as lib/dslash.c sends them.  chi comes back into a NaN-filled
 * buffer with a guard zone.  Then the plan: two runs give the same bits, a download before
 * any upload gives zeros; upload and download go through the staging ring (the arrays go up
 * as they are and are reordered on the device) and take device arrays too; plan_execute on
 * device arrays in the public layout (execute_canonical: reordered on the device) gives the
 * host path's bits on every lattice, chi apart, over psi and over u, nothing copied, the
 * inputs unchanged; and create when each of its allocations fails.
 */
#include "cuda_emu_common.h"
#include "ds_common.h"

#include <float.h>

static unsigned dse_paths; /* the transfer paths the plans took */

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
    d.u_link = p->recon12 ? 12 : 18;
    d.spinor_doubles = 24 * d.volume;
    d.t1 = p->t;
    d.sites = d.volume;
    d.variant = "cuda";
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
    pk_status s = pk_cuda_ds_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_ds_ops.upload(impl, p->recon12 ? u12 : u, psi, NULL);
    for (int r = 0; r < runs && s == PK_OK; ++r) s = pk_cuda_ds_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.download(impl, buf, NULL);
    if (impl) dse_paths |= ((const pk_cuda_xfer *)impl)->paths;
    pk_cuda_ds_ops.destroy(impl);
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
    pk_status s = pk_cuda_ds_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_ds_ops.download(impl, a, NULL);
    for (size_t i = 0; i < ns && s == PK_OK; ++i) nonzero += a[i] != 0.0;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    pk_cuda_ds_ops.destroy(impl);
    emu_next_case();
    /* psi alone (u NULL, plan_execute_psi's upload): the links of the first upload stay */
    double *u2, *psi2, *c = ds_alloc(ns), *u12 = ds_alloc(4 * d.volume * 12);
    ds_fields(&p, 78, &u2, &psi2);
    for (size_t k = 0; k < 4 * d.volume; ++k) memcpy(u12 + 12 * k, u + 18 * k, 12 * sizeof(double));
    const pk_status s3 = dse_exec(&p, u, psi2, b, 1); /* u with psi2, in one upload */
    impl = NULL;
    s = pk_cuda_ds_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_ds_ops.upload(impl, u12, psi, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.upload(impl, NULL, psi2, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.download(impl, c, NULL);
    pk_cuda_ds_ops.destroy(impl);
    ok(s == PK_OK && s3 == PK_OK && memcmp(c, b, ns * sizeof(double)) == 0,
       "plan: an upload of psi alone (u NULL) keeps the links: the bits of u and that psi "
       "uploaded together (%s)", emu_why(s != PK_OK ? s : s3));
    emu_next_case();
    free(u2);
    free(psi2);
    free(c);
    free(u12);
    free(u);
    free(psi);
    free(a);
    free(b);
}

/* Device arrays in upload and download: they go through the device staging array as the
 * host ones do (a device-to-device copy), with the host arrays' bits. */
static void dse_check_devptr(void)
{
    pk_dslash_params p = ds_params(2, 3, 2, 2, 0.125, 0);
    const pk_ds_desc d = dse_desc(&p);
    const size_t ns = d.spinor_doubles, sb = ns * sizeof(double);
    double *u, *psi, *host = ds_alloc(ns), *back = ds_alloc(ns);
    ds_fields(&p, 31, &u, &psi);
    pk_status s = dse_exec(&p, u, psi, host, 1);
    double *du = pk_emu_device_array(u, d.u_doubles * sizeof(double));
    double *dp = pk_emu_device_array(psi, sb), *dc = pk_emu_device_array(NULL, sb);
    void *impl = NULL;
    if (s == PK_OK) s = pk_cuda_ds_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK && !(du && dp && dc)) s = pk_fail(PK_EDEVMEM, "test device arrays");
    if (s == PK_OK) s = pk_cuda_ds_ops.upload(impl, du, dp, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_ds_ops.download(impl, dc, NULL);
    const char *note = s == PK_OK ? emu_transfer_note(impl) : "";
    if (s == PK_OK && pk_emu_device_read(back, dc, sb)) s = pk_fail(PK_EDEVICE, "reading chi");
    ok(s == PK_OK && memcmp(back, host, sb) == 0 && strcmp(note, "transfer: device") == 0,
       "upload and download of device arrays: the host arrays' bits, \"%s\" (%s)", note,
       emu_why(s));
    pk_cuda_ds_ops.destroy(impl);
    pk_emu_device_free(du);
    pk_emu_device_free(dp);
    pk_emu_device_free(dc);
    free(u);
    free(psi);
    free(host);
    free(back);
    emu_next_case();
}

static size_t dse_ndiff; /* doubles of chi that differ from the host path's */

/* plan_execute on device arrays in the public layout (execute_canonical, what lib/dslash.c
 * calls when u, psi and chi all are device memory of the plan's device): u full links even
 * for recon12.  chi apart, over psi (in place), over the start of u, and psi and chi one
 * double off 16-byte alignment: the host path's bits every time; nothing copied; u and psi
 * unchanged; a host psi PK_EINVAL. */
static void dse_check_canonical(const int *L, int recon12)
{
    pk_dslash_params p = ds_params(L[0], L[1], L[2], L[3], 0.125, recon12);
    const pk_ds_desc d = dse_desc(&p);
    const size_t ns = d.spinor_doubles, nu = 4 * d.volume * 18;
    const size_t sb = ns * sizeof(double), ub = nu * sizeof(double);
    double *u, *psi, *ref = ds_alloc(ns), *host = ds_alloc(ns), *back = ds_alloc(nu);
    ds_fields(&p, (unsigned)(L[0] + 3 * L[1] + 7 * L[2] + 11 * L[3]), &u, &psi);
    double *nan = ds_alloc(ns);
    for (size_t i = 0; i < ns; ++i) nan[i] = NAN;
    pk_status s = pk_dslash_reference(&p, u, psi, ref);
    if (s == PK_OK) s = dse_exec(&p, u, psi, host, 1);
    emu_next_case();
    const double tol = 2 * ds_EM(p.kappa) * ds_norm(psi, ns) / ds_norm(ref, ns);
    const double e = s == PK_OK ? ds_relerr(host, ref, ns) : INFINITY;
    double *du = pk_emu_device_array(u, ub), *dp = pk_emu_device_array(psi, sb);
    double *dc = pk_emu_device_array(nan, sb), *dio = pk_emu_device_array(psi, sb);
    double *du2 = pk_emu_device_array(u, ub);
    /* psi and chi one double off 16-byte alignment */
    double *shifted = ds_alloc(ns + 1);
    shifted[0] = 0;
    memcpy(shifted + 1, psi, sb);
    double *dpo = pk_emu_device_array(shifted, sb + sizeof(double));
    double *dco = pk_emu_device_array(NULL, sb + sizeof(double));
    void *impl = NULL;
    double ks = -1, ls = -1;
    if (s == PK_OK) s = pk_cuda_ds_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK && !(du && dp && dc && dio && du2 && dpo && dco))
        s = pk_fail(PK_EDEVMEM, "test arrays");
    const double *us[4] = {du, du, du2, du}, *ps[4] = {dp, dio, dp, dpo ? dpo + 1 : NULL};
    double *cs[4] = {dc, dio, du2, dco ? dco + 1 : NULL};
    static const char *const what[4] = {"chi apart", "chi over psi", "chi over u",
                                        "psi and chi 8 bytes off"};
    for (int c = 0; c < 4 && s == PK_OK; ++c) {
        s = pk_cuda_ds_ops.execute_canonical(impl, us[c], ps[c], cs[c], &ks, &ls);
        s = emu_zero_copy(impl, s, 0.0);
        if (s == PK_OK && (ks < 0 || ls < 0))
            s = pk_fail(PK_EINTERNAL, "%s: kernel %g s, reorders %g s", what[c], ks, ls);
        if (s == PK_OK && pk_emu_device_read(back, cs[c], sb))
            s = pk_fail(PK_EDEVICE, "reading chi back");
        size_t diff = 0;
        for (size_t i = 0; s == PK_OK && i < ns; ++i)
            diff += memcmp(&back[i], &host[i], sizeof(double)) != 0;
        dse_ndiff += diff;
        if (s == PK_OK && diff)
            s = pk_fail(PK_EINTERNAL, "%s: %zu of %zu doubles differ from the host path's",
                        what[c], diff, ns);
    }
    if (s == PK_OK && (pk_emu_device_read(back, du, ub) || memcmp(back, u, ub)))
        s = pk_fail(PK_EINTERNAL, "u changed");
    if (s == PK_OK && (pk_emu_device_read(back, dp, sb) || memcmp(back, psi, sb)))
        s = pk_fail(PK_EINTERNAL, "psi changed");
    if (s == PK_OK) {
        const pk_status so = pk_cuda_ds_ops.execute_canonical(impl, du, psi, dc, &ks, &ls);
        if (so != PK_EINVAL || !strstr(pk_last_error(), "dslash psi: not"))
            s = pk_fail(PK_EINTERNAL, "host psi: %s (%s), not PK_EINVAL", pk_status_name(so),
                        pk_last_error());
    }
    ok(s == PK_OK && e <= tol,
       "cuda%s %dx%dx%dx%d, plan_execute on device arrays (reordered on the device): the host "
       "path's bits (rel err %.2e <= %.2e) with chi apart, over psi, over u, and psi and chi "
       "off 16-byte alignment; no transfer, "
       "inputs unchanged, a host psi PK_EINVAL (%s)",
       recon12 ? " recon12" : "", L[0], L[1], L[2], L[3], e, tol, emu_why(s));
    pk_cuda_ds_ops.destroy(impl);
    pk_emu_device_free(du);
    pk_emu_device_free(dp);
    pk_emu_device_free(dc);
    pk_emu_device_free(dio);
    pk_emu_device_free(du2);
    pk_emu_device_free(dpo);
    pk_emu_device_free(dco);
    emu_next_case();
    free(u);
    free(psi);
    free(ref);
    free(host);
    free(back);
    free(nan);
    free(shifted);
}

static pk_status dse_create(const void *arg, void **impl)
{
    return pk_cuda_ds_ops.create(emu_state(), 0, (const pk_ds_desc *)arg, impl);
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
    ok((dse_paths & PK_CUDA_PATH_RING) && !(dse_paths & ~(unsigned)(PK_CUDA_PATH_RING |
                                                                     PK_CUDA_PATH_PAGEABLE)),
       "upload and download: the arrays went up and down as they are, through the staging "
       "ring (4096-byte chunks) and, below a chunk, cudaMemcpy (paths %#x)", dse_paths);
    dse_check_devptr();
    for (size_t i = 0; i < DS_NSIZES; ++i)
        for (int r = 0; r <= 1; ++r) dse_check_canonical(ds_sizes[i], r);
    dse_check_canonical(big, 1);
    ok(dse_ndiff == 0, "plan_execute on device arrays: %zu doubles differ from the host path's",
       dse_ndiff);
    pk_dslash_params p = ds_params(2, 3, 2, 2, 0.125, 0);
    const pk_ds_desc d = dse_desc(&p);
    emu_check_alloc_failures("dslash plan creation", dse_create, pk_cuda_ds_ops.destroy, &d);
    return emu_end();
}
