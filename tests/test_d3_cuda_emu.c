/* test_d3_cuda_emu.c - diffusion3d.cu without a GPU: its plan (pk_cuda_d3_*, the host code the
 * CUDA backend calls) on the emulated device of cuda/emulate.h, against the serial
 * reference with the tolerance of d3_common.h (see cuda_emu_common.h).
 *
 * The kernel's cases: tiles hanging over both edges of the field and whole tiles (its
 * branch-free FULL path), fields smaller than a tile, 1 x 1 x 1, and z chunks - the chunk
 * length comes from the device's resident blocks (pk_d3_plan_chunks), so the emulated device
 * is given 1, 3 and 32 multiprocessors to get one chunk, uneven chunks and one plane per
 * chunk.  Then the plan's own logic: split runs, count 0, a download before any upload (zeros),
 * a second upload; the execute op on device arrays (in place, no transfer) and on host,
 * misaligned and short ones; and create when each of its allocations fails.  Also the runtime file
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
    pk_status s = pk_cuda_d3_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_d3_ops.upload(impl, f, NULL);
    for (int i = 0, done = 0; i < pieces && s == PK_OK; ++i) {
        const int c = i + 1 == pieces ? p->count - done : p->count / pieces;
        double ks = -1;
        s = pk_cuda_d3_ops.run(impl, c, &ks);
        if (s == PK_OK && !(ks >= 0)) s = pk_fail(PK_EINTERNAL, "kernel time %g", ks);
        done += c;
    }
    if (s == PK_OK) s = pk_cuda_d3_ops.download(impl, out, NULL);
    pk_cuda_d3_ops.destroy(impl);
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
    pk_status s = pk_cuda_d3_ops.create(emu_state(), 0, &d, &impl);
    size_t nonzero = 0;
    if (s == PK_OK) s = pk_cuda_d3_ops.download(impl, out, NULL);
    for (size_t i = 0; i < n && s == PK_OK; ++i) nonzero += out[i] != 0.0f;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    if (s == PK_OK) s = pk_cuda_d3_ops.upload(impl, f, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.run(impl, 2, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.upload(impl, f, NULL); /* restart */
    if (s == PK_OK) s = pk_cuda_d3_ops.run(impl, 0, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.run(impl, 3, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.download(impl, out, NULL);
    ok(s == PK_OK && pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
       "plan: 2 steps, a second upload, 0 steps and 3 steps equal 3 reference steps (%s)",
       emu_why(s));
    pk_cuda_d3_ops.destroy(impl);
    emu_next_case();
    free(f);
    free(ref);
    free(out);
}

/* The plan's execute (plan_execute's CUDA op) on a device array: count steps in place on it,
 * the plan's other buffer the work array (one copy back after an odd count), no transfer,
 * the resident field untouched.  On host memory, on a misaligned device array (off 16
 * bytes): through the transfers, still right.  A device array shorter than the field: an
 * error, never a read past it. */
static void d3e_check_devptr(int count)
{
    const int nx = 65, ny = 17, nz = 9;
    pk_diffusion3d_params p;
    d3e_params(&p, nx, ny, nz, count);
    const size_t n = (size_t)nx * ny * nz, bytes = n * sizeof(float);
    float *f = d3_alloc(n), *ref = d3_alloc(n), *out = d3_alloc(n + 4), *res0 = d3_alloc(n),
          *res1 = d3_alloc(n);
    d3_fill(f, nx, ny, nz, 11);
    memcpy(ref, f, bytes);
    pk_diffusion3d_reference(&p, ref);
    const pk_d3_desc d = d3e_desc(&p);
    void *impl = NULL;
    double ks = -1, ts = -1;
    char note[256] = "";
    /* the resident field: another one, one step on (it lies in the plan's second buffer) */
    d3_fill(res0, nx, ny, nz, 12);
    pk_status s = pk_cuda_d3_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_d3_ops.upload(impl, res0, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.run(impl, 1, NULL);
    if (s == PK_OK) s = pk_cuda_d3_ops.download(impl, res0, NULL);
    if (impl) (void)emu_transfer_note(impl);
    float *dev = pk_emu_device_array(f, bytes);
    if (s == PK_OK && !dev) s = pk_fail(PK_EDEVMEM, "test device array");
    if (s == PK_OK) s = pk_cuda_d3_ops.execute(impl, dev, count, &ks, &ts);
    if (impl) snprintf(note, sizeof note, "%s", emu_transfer_note(impl));
    if (s == PK_OK && pk_emu_device_read(out, dev, bytes)) s = pk_fail(PK_EDEVICE, "read back");
    if (s == PK_OK) s = pk_cuda_d3_ops.download(impl, res1, NULL);
    int d_ok = s == PK_OK && pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE,
                                         NULL) == PK_OK;
    int same = s == PK_OK && memcmp(res0, res1, bytes) == 0;
    ok(d_ok && same && ts == 0 && ks >= 0 && !strcmp(note, "transfer: device pointers, none"),
       "execute on a device array, %d steps: equals the reference, transfer %g s, \"%s\", the "
       "resident field %s (%s)",
       count, ts, note, same ? "untouched" : "CHANGED", emu_why(s));
    emu_next_case();
    /* host memory: upload, run, download */
    memcpy(out, f, bytes);
    s = impl ? pk_cuda_d3_ops.execute(impl, out, count, &ks, &ts) : PK_EINTERNAL;
    if (impl) snprintf(note, sizeof note, "%s", emu_transfer_note(impl));
    d_ok = s == PK_OK &&
           pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    ok(d_ok && !strstr(note, "device pointers"),
       "execute on host memory, %d steps: equals the reference through the transfers (\"%s\"; "
       "%s)", count, note, emu_why(s));
    emu_next_case();
    /* a misaligned device array: through the transfers (device-to-device copies) */
    memcpy(out + 1, f, bytes);
    float *mis = pk_emu_device_array(out, bytes + 4 * sizeof(float));
    s = impl && mis ? pk_cuda_d3_ops.execute(impl, mis + 1, count, &ks, &ts) : PK_EDEVMEM;
    if (impl) snprintf(note, sizeof note, "%s", emu_transfer_note(impl));
    if (s == PK_OK && pk_emu_device_read(out, mis, bytes + sizeof(float)))
        s = pk_fail(PK_EDEVICE, "read back");
    d_ok = s == PK_OK &&
           pk_diff_f32(out + 1, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK;
    ok(d_ok && (count == 0 || !strcmp(note, "transfer: device")),
       "execute on a device array 4 bytes off alignment, %d steps: equals the reference "
       "through device-to-device transfers (\"%s\"; %s)", count, note, emu_why(s));
    emu_next_case();
    /* a device array one float short: refused or failed, not read past */
    float *shortd = pk_emu_device_array(f, bytes - sizeof(float));
    s = impl && shortd ? pk_cuda_d3_ops.execute(impl, shortd, count, &ks, &ts) : PK_EDEVMEM;
    ok(s != PK_OK,
       "execute on a device array one float short, %d steps: %s", count, emu_why(s));
    emu_next_case();
    pk_emu_device_free(dev);
    pk_emu_device_free(mis);
    pk_emu_device_free(shortd);
    pk_cuda_d3_ops.destroy(impl);
    free(f);
    free(ref);
    free(out);
    free(res0);
    free(res1);
}

static pk_status d3e_create(const void *arg, void **impl)
{
    return pk_cuda_d3_ops.create(emu_state(), 0, (const pk_d3_desc *)arg, impl);
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
    s = pk_cuda_d3_ops.create(emu_state(), 0, &d, &impl);
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
    d3e_check_devptr(3);
    d3e_check_devptr(2);
    d3e_check_devptr(0);
    pk_diffusion3d_params p;
    d3e_params(&p, 33, 17, 9, 1);
    const pk_d3_desc d = d3e_desc(&p);
    emu_check_alloc_failures("diffusion3d plan creation", d3e_create, pk_cuda_d3_ops.destroy, &d);
    return emu_end();
}
