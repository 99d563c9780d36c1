/* test_mf_cuda_emu.c - magicfilter3d.cu without a GPU: its plan (pk_cuda_mf_*) on the emulated
 * device of cuda/emulate.h against pk_magicfilter3d_reference within MF_TOL (mf_common.h),
 * for the three boundary conditions (the kernel's three instantiations) x MF / MFT, on sizes
 * below the 16-point tile and the 16-tap filter (the periodic wrap goes around more than
 * once), odd sizes over several tiles, unit axes; y is downloaded into a NaN-filled buffer
 * with a guard zone.  Then the plan: a download before any upload gives zeros, two runs give
 * the same bits, a second upload the new result; and create when each of its device
 * allocations fails (see cuda_emu_common.h).
 */
#include "cuda_emu_common.h"
#include "mf_common.h"

static pk_mf_desc mfe_desc(const pk_magicfilter3d_params *p)
{
    pk_mf_desc d;
    pk_mf_desc_init(&d, p);
    d.variant = "cuda";
    return d;
}

static int mfe_devptr; /* mfe_exec: the execute op on device copies of x and y instead */

/* A plan's y (create, upload x, run `runs` times, download into a NaN-filled buffer with a
 * guard zone); PK_EINTERNAL when the guard zone was written (detail in mf_err). */
static pk_status mfe_exec(const pk_magicfilter3d_params *p, const double *x, double *y, int runs)
{
    const pk_mf_desc d = mfe_desc(p);
    double *buf = mf_alloc(d.out_count + MF_GUARD);
    for (size_t i = 0; i < d.out_count; ++i) buf[i] = NAN;
    for (size_t i = d.out_count; i < d.out_count + MF_GUARD; ++i) buf[i] = MF_SENTINEL;
    void *impl = NULL;
    pk_status s = pk_cuda_mf_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_mf_ops.upload(impl, x, NULL);
    if (mfe_devptr) {
        /* on device arrays, then the plan's own run: the same bits (its x untouched) */
        double *dx = pk_emu_device_array(x, d.in_count * sizeof(double));
        double *dy = pk_emu_device_array(NULL, d.out_count * sizeof(double));
        double ks = -1, ts = -1;
        if (s == PK_OK && !(dx && dy)) s = pk_fail(PK_EDEVMEM, "test device arrays");
        if (s == PK_OK) (void)emu_transfer_note(impl);
        if (s == PK_OK) s = pk_cuda_mf_ops.execute(impl, dx, dy, &ks, &ts);
        if (s == PK_OK) s = emu_zero_copy(impl, s, ts);
        if (s == PK_OK && pk_emu_device_read(buf, dy, d.out_count * sizeof(double)))
            s = pk_fail(PK_EDEVICE, "reading y back");
        double *own = mf_alloc(d.out_count);
        if (s == PK_OK) s = pk_cuda_mf_ops.run(impl, NULL);
        if (s == PK_OK) s = pk_cuda_mf_ops.download(impl, own, NULL);
        if (s == PK_OK && memcmp(own, buf, d.out_count * sizeof(double)))
            s = pk_fail(PK_EINTERNAL, "the plan's own run differs after the execute: its x "
                                      "changed");
        free(own);
        pk_emu_device_free(dx);
        pk_emu_device_free(dy);
        runs = 0;
    }
    for (int r = 0; r < runs && s == PK_OK; ++r) s = pk_cuda_mf_ops.run(impl, NULL);
    if (s == PK_OK && !mfe_devptr) s = pk_cuda_mf_ops.download(impl, buf, NULL);
    pk_cuda_mf_ops.destroy(impl);
    size_t bad = 0;
    for (size_t i = d.out_count; i < d.out_count + MF_GUARD; ++i) bad += buf[i] != MF_SENTINEL;
    if (s == PK_OK && bad)
        s = pk_fail(PK_EINTERNAL, "%zu of the %d doubles after y were overwritten", bad, MF_GUARD);
    memcpy(y, buf, d.out_count * sizeof(double));
    free(buf);
    return s;
}

static void mfe_check(int n1, int n2, int n3, int tr, int bc)
{
    pk_magicfilter3d_params p = mf_params(n1, n2, n3, tr, bc);
    size_t in, out;
    mf_counts(&p, &in, &out, NULL, NULL);
    double *x = mf_alloc(in), *ref = mf_alloc(out), *y = mf_alloc(out);
    const unsigned seed = (unsigned)(n1 * 7919 + n2 * 131 + n3 * 17 + tr * 3 + bc);
    if (seed & 1) /* the data of mf_case */
        mf_fill(x, in, seed, -1.0, 2.0);
    else
        mf_fill(x, in, seed, 0.5, 1.0);
    if (pk_magicfilter3d_reference(&p, x, ref) != PK_OK) {
        printf("Bail out! reference %dx%dx%d failed\n", n1, n2, n3);
        exit(1);
    }
    const pk_status s = mfe_exec(&p, x, y, 1);
    size_t nfail = 0, first = (size_t)-1;
    const double e = s == PK_OK ? mf_maxdiff(y, ref, out, MF_TOL, &nfail, &first) : -1;
    char at[64];
    mf_where(&p, first, at, sizeof at);
    ok(s == PK_OK && nfail == 0,
       "cuda %dx%dx%d %s %s%s: equals the reference within %.0e (max abs %.2e, %zu over, first "
       "%s; %s)",
       n1, n2, n3, mf_bc_name[bc], mf_tr_name[tr],
       mfe_devptr ? ", execute on device arrays (no transfer, the plan's x untouched)" : "",
       MF_TOL, e, nfail, at, emu_why(s));
    emu_next_case();
    free(x);
    free(ref);
    free(y);
}

static void mfe_check_plan(void)
{
    pk_magicfilter3d_params p = mf_params(9, 5, 17, 0, PK_MF_GROW);
    const pk_mf_desc d = mfe_desc(&p);
    double *x = mf_alloc(d.in_count), *x2 = mf_alloc(d.in_count);
    double *y1 = mf_alloc(d.out_count), *y2 = mf_alloc(d.out_count), *ref = mf_alloc(d.out_count);
    mf_fill(x, d.in_count, 3, 0.5, 1.0);
    mf_fill(x2, d.in_count, 4, -1.0, 2.0);
    void *impl = NULL;
    size_t nonzero = 0, nfail = 0;
    pk_status s = pk_cuda_mf_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_mf_ops.download(impl, y1, NULL);
    for (size_t i = 0; i < d.out_count && s == PK_OK; ++i) nonzero += y1[i] != 0.0;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    if (s == PK_OK) s = pk_cuda_mf_ops.upload(impl, x, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.download(impl, y1, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.download(impl, y2, NULL);
    ok(s == PK_OK && memcmp(y1, y2, d.out_count * sizeof(double)) == 0,
       "plan: two runs on one upload give the same bits (%s)", emu_why(s));
    if (s == PK_OK) s = pk_cuda_mf_ops.upload(impl, x2, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.run(impl, NULL);
    if (s == PK_OK) s = pk_cuda_mf_ops.download(impl, y2, NULL);
    pk_magicfilter3d_reference(&p, x2, ref);
    const double e = s == PK_OK ? mf_maxdiff(y2, ref, d.out_count, MF_TOL, &nfail, NULL) : -1;
    ok(s == PK_OK && nfail == 0,
       "plan: a second upload gives its own result (max abs %.2e vs the reference; %s)", e,
       emu_why(s));
    pk_cuda_mf_ops.destroy(impl);
    emu_next_case();
    free(x);
    free(x2);
    free(y1);
    free(y2);
    free(ref);
}

/* The execute op on device arrays where y overlaps x: PK_EINVAL, nothing run. */
static void mfe_check_overlap(void)
{
    pk_magicfilter3d_params p = mf_params(6, 5, 4, 0, PK_MF_PERIODIC);
    const pk_mf_desc d = mfe_desc(&p);
    double *dx = pk_emu_device_array(NULL, (d.in_count + d.out_count) * sizeof(double));
    void *impl = NULL;
    double ks, ts;
    pk_status s = pk_cuda_mf_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = dx ? pk_cuda_mf_ops.execute(impl, dx, dx + 8, &ks, &ts) : PK_EDEVMEM;
    ok(s == PK_EINVAL && strstr(pk_last_error(), "y overlaps x"),
       "execute on device arrays with y over x: PK_EINVAL (%s)", emu_why(s));
    pk_cuda_mf_ops.destroy(impl);
    pk_emu_device_free(dx);
    emu_next_case();
}

static pk_status mfe_create(const void *arg, void **impl)
{
    return pk_cuda_mf_ops.create(emu_state(), 0, (const pk_mf_desc *)arg, impl);
}

int main(void)
{
    emu_begin("magicfilter3d.cu");
    static const int sizes[][3] = {{1, 1, 1}, {5, 7, 3}, {17, 5, 4}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        for (int bc = 0; bc < 3; ++bc)
            for (int tr = 0; tr < 2; ++tr) mfe_check(sizes[i][0], sizes[i][1], sizes[i][2], tr, bc);
    mfe_check(33, 9, 18, 0, PK_MF_PERIODIC);
    mfe_check(2, 1, 37, 1, PK_MF_SHRINK);
    mfe_check(16, 1, 8, 1, PK_MF_GROW);
    mfe_check_plan();
    mfe_devptr = 1;
    for (int bc = 0; bc < 3; ++bc) mfe_check(17, 5, 4, bc == 1, bc);
    mfe_devptr = 0;
    mfe_check_overlap();
    for (int bc = 0; bc < 3; ++bc) { /* w1 is y when it fits (grow), else its own buffer */
        pk_magicfilter3d_params p = mf_params(6, 5, 4, 0, bc);
        const pk_mf_desc d = mfe_desc(&p);
        char what[96];
        snprintf(what, sizeof what, "magicfilter3d plan creation (%s)", mf_bc_name[bc]);
        emu_check_alloc_failures(what, mfe_create, pk_cuda_mf_ops.destroy, &d);
    }
    return emu_end();
}
