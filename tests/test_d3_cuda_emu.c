/* test_d3_cuda_emu.c - diffusion3d.cu without a GPU: its plan (pk_cuda_d3_*, the host code the
 * CUDA backend calls) on the emulated device of cuda/emulate.h, against the serial
 * reference with the tolerance of d3_common.h (see cuda_emu_common.h).
 *
 * The kernel's cases: tiles hanging over both edges of the field and whole tiles (its
 * branch-free FULL path), fields smaller than a tile, 1 x 1 x 1, and z chunks - the chunk
 * length comes from the device's resident blocks (pk_d3_plan_chunks), so the emulated device
 * is given 1, 3 and 32 multiprocessors to get one chunk, uneven chunks and one plane per
 * chunk.  Then the plan's own logic: split runs, count 0, a download before any upload (zeros),
 * a second upload; and create when each of its allocations fails.  Also the runtime file
 * (cuda/runtime.cu) on the emulated device: the probe and the copy kernel, and the
 * PORTKERN_TEST_DEVICE_OOM hook of cuda_internal.h.
 */
#include "cuda_emu_common.h"
#include "d3_common.h"

static pk_d3_desc d3e_desc(const pk_diffusion3d_params *p)
{
    pk_d3_desc d;
    memset(&d, 0, sizeof d);
    d.nx = p->nx;
    d.ny = p->ny;
    d.nz = p->nz;
    const double c[7] = {p->cc, p->cw, p->ce, p->cs, p->cn, p->cb, p->ct};
    for (int i = 0; i < 7; ++i) d.c[i] = (float)c[i]; /* as lib/diffusion3d.c */
    d.variant = "cuda";
    return d;
}

static void d3e_params(pk_diffusion3d_params *p, int nx, int ny, int nz, int count)
{
    pk_diffusion3d_params_default(p, nx, ny, nz, count);
    if (count == 2) { /* asymmetric coefficients catch swapped neighbours (d3_common.h) */
        p->cw = 0.05; p->ce = 0.15; p->cn = 0.07; p->cs = 0.13; p->cb = 0.02; p->ct = 0.18;
        p->cc = 0.4;
    }
}

/* count steps through a plan (create, upload, run in `pieces` runs, download). */
static pk_status d3e_run(const pk_diffusion3d_params *p, const float *f, float *out, int pieces)
{
    const pk_d3_desc d = d3e_desc(p);
    void *impl = NULL;
    pk_status s = pk_cuda_d3_create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_d3_upload(impl, f, NULL);
    for (int i = 0, done = 0; i < pieces && s == PK_OK; ++i) {
        const int c = i + 1 == pieces ? p->count - done : p->count / pieces;
        double ks = -1;
        s = pk_cuda_d3_run(impl, c, &ks);
        if (s == PK_OK && !(ks >= 0)) s = pk_fail(PK_EINTERNAL, "kernel time %g", ks);
        done += c;
    }
    if (s == PK_OK) s = pk_cuda_d3_download(impl, out, NULL);
    pk_cuda_d3_destroy(impl);
    return s;
}

static void d3e_check(int nx, int ny, int nz, int count, int sms, int pieces)
{
    pk_diffusion3d_params p;
    d3e_params(&p, nx, ny, nz, count);
    const size_t n = (size_t)nx * ny * nz;
    float *f = d3_alloc(n), *ref = d3_alloc(n), *out = d3_alloc(n);
    d3_fill(f, nx, ny, nz, (unsigned)(nx * 31 + ny * 7 + nz + count));
    memcpy(ref, f, n * sizeof(float));
    if (pk_diffusion3d_reference(&p, ref) != PK_OK) {
        printf("Bail out! pk_diffusion3d_reference %dx%dx%d failed\n", nx, ny, nz);
        exit(1);
    }
    pk_emu_set_device(sms, 0, (size_t)1 << 30);
    const pk_status s = d3e_run(&p, f, out, pieces);
    pk_diff_report r;
    const int d = s == PK_OK ? pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, &r)
                             : -1;
    char at[64] = "-";
    if (s == PK_OK && r.num_failed) {
        const size_t shape[3] = {(size_t)nz, (size_t)ny, (size_t)nx};
        pk_format_index(r.first_fail, shape, 3, at, sizeof at);
    }
    ok(s == PK_OK && d == PK_OK,
       "cuda %dx%dx%d, %d steps in %d run%s, %d multiprocessors: matches the reference (rtol "
       "%.0e; max rel %.2e, %zu failed, first [z, y, x] = %s; %s)",
       nx, ny, nz, count, pieces, pieces > 1 ? "s" : "", sms, D3_RTOL,
       s == PK_OK ? r.max_rel_err : -1.0, s == PK_OK ? r.num_failed : (size_t)0, at, emu_why(s));
    pk_emu_set_device(4, 0, (size_t)1 << 30);
    emu_next_case();
    free(f);
    free(ref);
    free(out);
}

/* A download before any upload gives zeros; a second upload restarts; count 0 changes
 * nothing. */
static void d3e_check_plan(void)
{
    const int nx = 9, ny = 6, nz = 5;
    pk_diffusion3d_params p;
    d3e_params(&p, nx, ny, nz, 3);
    const size_t n = (size_t)nx * ny * nz;
    float *f = d3_alloc(n), *ref = d3_alloc(n), *out = d3_alloc(n);
    d3_fill(f, nx, ny, nz, 5);
    memcpy(ref, f, n * sizeof(float));
    pk_diffusion3d_reference(&p, ref);
    const pk_d3_desc d = d3e_desc(&p);
    void *impl = NULL;
    pk_status s = pk_cuda_d3_create(emu_state(), 0, &d, &impl);
    size_t nonzero = 0;
    if (s == PK_OK) s = pk_cuda_d3_download(impl, out, NULL);
    for (size_t i = 0; i < n && s == PK_OK; ++i) nonzero += out[i] != 0.0f;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    if (s == PK_OK) s = pk_cuda_d3_upload(impl, f, NULL);
    if (s == PK_OK) s = pk_cuda_d3_run(impl, 2, NULL);
    if (s == PK_OK) s = pk_cuda_d3_upload(impl, f, NULL); /* restart */
    if (s == PK_OK) s = pk_cuda_d3_run(impl, 0, NULL);
    if (s == PK_OK) s = pk_cuda_d3_run(impl, 3, NULL);
    if (s == PK_OK) s = pk_cuda_d3_download(impl, out, NULL);
    ok(s == PK_OK && pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
       "plan: 2 steps, a second upload, 0 steps and 3 steps equal 3 reference steps (%s)",
       emu_why(s));
    pk_cuda_d3_destroy(impl);
    emu_next_case();
    free(f);
    free(ref);
    free(out);
}

static pk_status d3e_create(const void *arg, void **impl)
{
    return pk_cuda_d3_create(emu_state(), 0, (const pk_d3_desc *)arg, impl);
}

/* cuda/runtime.cu: the probe finds the emulated device; the copy kernel runs. */
static void d3e_check_runtime(void)
{
    pk_cuda_state st;
    char why[256] = "";
    memset(&st, 0, sizeof st);
    pk_status s = pk_cuda_probe(&st, why, sizeof why);
    ok(s == PK_OK && st.count == 1 && st.usable[0] && pk_cuda_check_device(&st, 0) == PK_OK &&
           pk_cuda_check_device(&st, 1) == PK_ENODEVICE,
       "runtime.cu: the probe finds one usable device (%s, compute capability %d.%d; %s)",
       s == PK_OK ? st.devices[0].name : why, s == PK_OK ? st.devices[0].cc_major : 0,
       s == PK_OK ? st.devices[0].cc_minor : 0, s == PK_OK ? "ok" : pk_status_name(s));
    pk_cuda_release(&st);
    double bps = 0;
    s = pk_cuda_bandwidth(0, 100000, 1, &bps);
    ok(s == PK_OK && bps > 0, "runtime.cu: the copy kernel runs (%s)", emu_why(s));
    emu_next_case();
    /* the test hook of cuda_internal.h: every cudaMalloc fails */
    pk_diffusion3d_params p;
    d3e_params(&p, 5, 4, 3, 1);
    const pk_d3_desc d = d3e_desc(&p);
    void *impl = NULL;
    setenv("PORTKERN_TEST_DEVICE_OOM", "1", 1);
    s = pk_cuda_d3_create(emu_state(), 0, &d, &impl);
    unsetenv("PORTKERN_TEST_DEVICE_OOM");
    ok(s == PK_EDEVMEM && impl == NULL && pk_emu_allocations() == 0,
       "PORTKERN_TEST_DEVICE_OOM=1: plan creation fails with PK_EDEVMEM (%s)", emu_why(s));
    emu_next_case();
}

int main(void)
{
    emu_begin("diffusion3d.cu");
    d3e_check_runtime();
    static const int cases[][6] = {
        /* nx, ny, nz, count, multiprocessors, runs */
        {1, 1, 1, 1, 4, 1},   {1, 1, 1, 2, 4, 1},    {7, 5, 3, 2, 4, 1},  {3, 20, 6, 1, 4, 1},
        {64, 16, 4, 2, 4, 1}, {65, 17, 9, 3, 1, 1},  {65, 17, 9, 3, 3, 2}, {65, 17, 9, 2, 32, 1},
        {130, 3, 4, 2, 2, 1}, {20, 33, 7, 3, 32, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        d3e_check(cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], cases[i][5]);
    d3e_check_plan();
    pk_diffusion3d_params p;
    d3e_params(&p, 33, 17, 9, 1);
    const pk_d3_desc d = d3e_desc(&p);
    emu_check_alloc_failures("diffusion3d plan creation", d3e_create, pk_cuda_d3_destroy, &d);
    return emu_end();
}
