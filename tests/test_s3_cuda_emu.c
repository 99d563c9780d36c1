/* test_s3_cuda_emu.c - su3.cu without a GPU: its plan (pk_cuda_s3_*) on the emulated device
 * of cuda/emulate.h against pk_su3_reference within s3_common.h's element-wise bound
 * (2 sqrt2 gamma_6 + R) |psi(s,.,k)|, for every layout of s3_common.h's s3_cases (the AoS
 * family's four template instantiations - aos, short, padded, recon12 - vfo, and hvfo with
 * 1, 3, 4, 8 and 16 sites per block) and every size of s3_sizes (1 .. 4099: padded vfo rows,
 * a partly filled last hvfo block, partial thread blocks).  u and psi go to the device in the
 * layout (pk_su3_pack) and chi comes back through pk_su3_unpack_spinor into a NaN-filled
 * buffer with a guard zone.  Then the plan: two runs give the same bits, a download before
 * any upload gives zeros; and create when each of its allocations fails.  The copies go
 * through runtime.cu's staging ring in 4 KiB chunks (cuda_emu_common.h), up to 193 of them
 * (padded u at nv = 4099); a line checks that they did.
 */
#include "cuda_emu_common.h"
#include "lattice_index.h"
#include "s3_common.h"

#include <float.h>

static pk_s3_desc s3e_desc(const pk_su3_params *p)
{
    pk_s3_desc d; /* as lib/su3.c fills it, the sizes from the public pk_su3_layout_sizes */
    memset(&d, 0, sizeof d);
    d.nv = p->nv;
    d.layout = p->layout;
    d.nw = p->layout == PK_SU3_HVFO ? (p->nw ? p->nw : PK_SU3_NW_DEFAULT) : 1;
    if (pk_su3_layout_sizes(p, &d.u_doubles, &d.spinor_doubles) != PK_OK) {
        printf("Bail out! pk_su3_layout_sizes failed\n");
        exit(1);
    }
    d.nsites = d.spinor_doubles / 24;
    d.variant = "cuda";
    return d;
}

static unsigned s3e_paths; /* the transfer paths the plans took */
static size_t s3e_most;    /* the largest copy's bytes */
static int s3e_devptr;     /* s3e_exec: the execute op on device copies instead */

/* chi (AoS, 24 nv doubles) through a plan run `runs` times; PK_EINTERNAL when the guard
 * zone after chi is written. */
static pk_status s3e_exec(const pk_su3_params *p, const s3_data *dat, double *chi, int runs)
{
    const pk_s3_desc d = s3e_desc(p);
    const size_t nv = p->nv;
    double *ul = s3_alloc(d.u_doubles), *pl = s3_alloc(d.spinor_doubles);
    double *xl = s3_alloc(d.spinor_doubles), *buf = s3_alloc(24 * nv + S3_GUARD);
    for (size_t i = 0; i < 24 * nv; ++i) buf[i] = NAN;
    for (size_t i = 24 * nv; i < 24 * nv + S3_GUARD; ++i) buf[i] = S3_SENTINEL;
    for (size_t i = 0; i < d.spinor_doubles; ++i) xl[i] = NAN;
    pk_status s = pk_su3_pack(p, dat->u, dat->psi, ul, pl);
    void *impl = NULL;
    if (s == PK_OK) s = pk_cuda_s3_ops.create(emu_state(), 0, &d, &impl);
    if (s3e_devptr) {
        const size_t ub = d.u_doubles * sizeof(double), sb = d.spinor_doubles * sizeof(double);
        double *du = pk_emu_device_array(ul, ub), *dp = pk_emu_device_array(pl, sb);
        double *dc = pk_emu_device_array(NULL, sb);
        double ks = -1, ts = -1;
        if (s == PK_OK && !(du && dp && dc)) s = pk_fail(PK_EDEVMEM, "test device arrays");
        if (s == PK_OK) s = pk_cuda_s3_ops.execute(impl, du, dp, dc, &ks, &ts);
        if (s == PK_OK) s = emu_zero_copy(impl, s, ts);
        if (s == PK_OK && pk_emu_device_read(xl, dc, sb))
            s = pk_fail(PK_EDEVICE, "reading chi back");
        /* chi over psi: refused */
        pk_status so = s == PK_OK ? pk_cuda_s3_ops.execute(impl, du, dp, dp, &ks, &ts) : PK_OK;
        if (s == PK_OK && so != PK_EINVAL)
            s = pk_fail(PK_EINTERNAL, "execute with chi = psi on device arrays: %s, not PK_EINVAL",
                        pk_status_name(so));
        pk_emu_device_free(du);
        pk_emu_device_free(dp);
        pk_emu_device_free(dc);
    } else {
        if (s == PK_OK) s = pk_cuda_s3_ops.upload(impl, ul, pl, NULL);
        for (int r = 0; r < runs && s == PK_OK; ++r) s = pk_cuda_s3_ops.run(impl, NULL);
        if (s == PK_OK) s = pk_cuda_s3_ops.download(impl, xl, NULL);
    }
    if (impl) s3e_paths |= ((const pk_cuda_xfer *)impl)->paths; /* every CUDA plan starts so */
    if (d.u_doubles * sizeof(double) > s3e_most) s3e_most = d.u_doubles * sizeof(double);
    pk_cuda_s3_ops.destroy(impl);
    if (s == PK_OK) s = pk_su3_unpack_spinor(p, xl, buf);
    size_t over = 0;
    for (size_t i = 24 * nv; i < 24 * nv + S3_GUARD; ++i) over += buf[i] != S3_SENTINEL;
    if (s == PK_OK && over)
        s = pk_fail(PK_EINTERNAL, "%zu of the %d doubles after chi were overwritten", over,
                    S3_GUARD);
    memcpy(chi, buf, 24 * nv * sizeof(double));
    free(ul);
    free(pl);
    free(xl);
    free(buf);
    return s;
}

static void s3e_check_layout(int layout, int nw)
{
    double worst = 0;
    char why[1024] = "", name[48];
    int good = 1;
    const double rb = s3_rebuild_err(layout);
    for (size_t i = 0; i < S3_NSIZES; ++i) {
        const size_t nv = s3_sizes[i];
        s3_data d = s3_make(nv, 11 + nv);
        pk_su3_params p = {nv, layout, nw};
        double *chi = s3_alloc(24 * nv);
        const pk_status s = s3e_exec(&p, &d, chi, 1);
        double w = 0;
        size_t first = 0, bad = 0;
        if (s == PK_OK) bad = s3_compare(chi, d.ref, d.psi, nv, layout, &w, &first);
        if (w > worst) worst = w;
        if (s != PK_OK || bad) {
            const size_t l = strlen(why);
            snprintf(why + l, sizeof why - l, "; nv %zu: %zu over the bound, first double %zu; %s",
                     nv, bad, first, emu_why(s));
            good = 0;
        }
        emu_next_case();
        free(chi);
        s3_free(&d);
    }
    ok(good, "cuda %s%s: equals the reference within (2 sqrt2 gamma_6 + %.1f u) |psi(s,.,k)| for "
       "nv = 1 .. 4099 (worst %.2f u |psi|)%s",
       s3_case_name(layout, nw, name, sizeof name),
       s3e_devptr ? ", execute on device arrays (no transfer; chi over psi PK_EINVAL)" : "",
       rb / s3_u, worst, why);
}

static void s3e_check_plan(void)
{
    const size_t nv = 37;
    s3_data dat = s3_make(nv, 5);
    pk_su3_params p = {nv, PK_SU3_HVFO, 4};
    double *a = s3_alloc(24 * nv), *b = s3_alloc(24 * nv);
    const pk_status s1 = s3e_exec(&p, &dat, a, 1), s2 = s3e_exec(&p, &dat, b, 2);
    ok(s1 == PK_OK && s2 == PK_OK && memcmp(a, b, 24 * nv * sizeof(double)) == 0,
       "plan: two runs on one upload give the bits of one (%s)", emu_why(s1 != PK_OK ? s1 : s2));
    const pk_s3_desc d = s3e_desc(&p);
    double *xl = s3_alloc(d.spinor_doubles);
    void *impl = NULL;
    size_t nonzero = 0;
    pk_status s = pk_cuda_s3_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK) s = pk_cuda_s3_ops.download(impl, xl, NULL);
    for (size_t i = 0; i < d.spinor_doubles && s == PK_OK; ++i) nonzero += xl[i] != 0.0;
    ok(s == PK_OK && nonzero == 0, "plan: a download before any upload gives zeros (%zu not; %s)",
       nonzero, emu_why(s));
    pk_cuda_s3_ops.destroy(impl);
    emu_next_case();
    free(a);
    free(b);
    free(xl);
    s3_free(&dat);
}

/* plan_execute on device arrays in the public layout (the execute_canonical op that
 * lib/su3.c calls when u, psi and chi all are device memory of the plan's device): u, psi
 * and a NaN-filled chi in (emulated) device memory, AoS; the conversions run on the device.
 * Per size: chi has the bits of the host path (s3e_exec: pk_su3_pack, upload, run,
 * download, pk_su3_unpack_spinor) and so meets the reference's bound; nothing was copied
 * (the transfer note "device pointers, none"); u and psi are unchanged; chi over psi (in
 * place) gives the same bits, as the host path handles it; chi one double off 16-byte
 * alignment too (through the plan's chi).  A host u with device psi and chi: PK_EINVAL.
 * *ndiff: doubles of chi that differ from the host path's (all cases). */
static pk_status s3e_canonical(const pk_su3_params *p, const s3_data *dat, const double *host,
                               size_t *ndiff)
{
    const pk_s3_desc d = s3e_desc(p);
    const size_t nv = p->nv, ub = 18 * nv * sizeof(double), sb = 24 * nv * sizeof(double);
    double *nan = s3_alloc(24 * nv + 1), *back = s3_alloc(24 * nv + 1);
    for (size_t i = 0; i < 24 * nv + 1; ++i) nan[i] = NAN;
    double *du = pk_emu_device_array(dat->u, ub), *dp = pk_emu_device_array(dat->psi, sb);
    double *dc = pk_emu_device_array(nan, sb), *dio = pk_emu_device_array(dat->psi, sb);
    double *dmis = pk_emu_device_array(nan, sb + sizeof(double));
    void *impl = NULL;
    double ks = -1, ls = -1;
    pk_status s = pk_cuda_s3_ops.create(emu_state(), 0, &d, &impl);
    if (s == PK_OK && !(du && dp && dc && dio && dmis)) s = pk_fail(PK_EDEVMEM, "test arrays");
    /* chi separate, chi over psi, chi off alignment */
    double *outs[3] = {dc, dio, dmis ? dmis + 1 : NULL};
    const double *ins[3] = {dp, dio, dp};
    static const char *const what[3] = {"chi apart", "chi over psi", "chi 8 bytes off"};
    for (int c = 0; c < 3 && s == PK_OK; ++c) {
        s = pk_cuda_s3_ops.execute_canonical(impl, du, ins[c], outs[c], &ks, &ls);
        s = emu_zero_copy(impl, s, 0.0);
        if (s == PK_OK && (ks < 0 || ls < 0))
            s = pk_fail(PK_EINTERNAL, "%s: kernel %g s, layout %g s", what[c], ks, ls);
        if (s == PK_OK && pk_emu_device_read(back, outs[c], sb))
            s = pk_fail(PK_EDEVICE, "reading chi back");
        size_t diff = 0;
        for (size_t i = 0; s == PK_OK && i < 24 * nv; ++i)
            diff += memcmp(&back[i], &host[i], sizeof(double)) != 0;
        *ndiff += diff;
        if (s == PK_OK && diff)
            s = pk_fail(PK_EINTERNAL, "%s: %zu of %zu doubles differ from the host path's",
                        what[c], diff, 24 * nv);
    }
    if (s == PK_OK && (pk_emu_device_read(back, du, ub) || memcmp(back, dat->u, ub)))
        s = pk_fail(PK_EINTERNAL, "u changed");
    if (s == PK_OK && (pk_emu_device_read(back, dp, sb) || memcmp(back, dat->psi, sb)))
        s = pk_fail(PK_EINTERNAL, "psi changed");
    if (s == PK_OK) {
        const pk_status so = pk_cuda_s3_ops.execute_canonical(impl, dat->u, dp, dc, &ks, &ls);
        if (so != PK_EINVAL || !strstr(pk_last_error(), "su3 u: not device memory"))
            s = pk_fail(PK_EINTERNAL, "host u, device psi and chi: %s (%s), not PK_EINVAL",
                        pk_status_name(so), pk_last_error());
        emu_transfer_note(impl);
    }
    pk_cuda_s3_ops.destroy(impl);
    pk_emu_device_free(du);
    pk_emu_device_free(dp);
    pk_emu_device_free(dc);
    pk_emu_device_free(dio);
    pk_emu_device_free(dmis);
    free(nan);
    free(back);
    return s;
}

static void s3e_check_canonical(int layout, int nw)
{
    double worst = 0;
    char why[1024] = "", name[48];
    int good = 1;
    size_t ndiff = 0;
    for (size_t i = 0; i < S3_NSIZES; ++i) {
        const size_t nv = s3_sizes[i];
        s3_data d = s3_make(nv, 11 + nv);
        pk_su3_params p = {nv, layout, nw};
        double *host = s3_alloc(24 * nv);
        pk_status s = s3e_exec(&p, &d, host, 1);
        double w = 0;
        size_t first = 0, bad = 0;
        if (s == PK_OK) bad = s3_compare(host, d.ref, d.psi, nv, layout, &w, &first);
        if (w > worst) worst = w;
        emu_next_case();
        if (s == PK_OK && !bad) s = s3e_canonical(&p, &d, host, &ndiff);
        if (s != PK_OK || bad) {
            const size_t l = strlen(why);
            snprintf(why + l, sizeof why - l, "; nv %zu: %zu over the bound; %s", nv, bad,
                     emu_why(s));
            good = 0;
        }
        emu_next_case();
        free(host);
        s3_free(&d);
    }
    ok(good, "cuda %s, plan_execute on device arrays in AoS (converted on the device): the host "
       "path's bits (within (2 sqrt2 gamma_6 + %.1f u) |psi(s,.,k)|, worst %.2f u |psi|) for nv "
       "= 1 .. 4099, chi apart, over psi and off alignment (%zu doubles differ); no transfer, "
       "u and psi unchanged, host u PK_EINVAL%s",
       s3_case_name(layout, nw, name, sizeof name), s3_rebuild_err(layout) / s3_u, worst, ndiff,
       why);
}

/* lib/lattice_index.h's pk_s3_index is the rule of the host conversion too: for every
 * layout and size, pk_su3_pack puts AoS double k of site s of u and psi where pk_s3_index
 * says, and every other double of the layout arrays (padding sites, padded's entries 18 ..
 * 23) is 0; the doubles it drops (short, recon12) are the last ones of each link. */
static void s3e_check_index(void)
{
    size_t bad = 0, checked = 0;
    char why[300] = "";
    for (size_t c = 0; c < S3_NCASES; ++c)
        for (size_t i = 0; i < S3_NSIZES; ++i) {
            const size_t nv = s3_sizes[i];
            pk_su3_params p = {nv, s3_cases[c][0], s3_cases[c][1]};
            const pk_s3_desc d = s3e_desc(&p);
            const int mu = pk_s3_u_per_site(p.layout);
            double *u = s3_alloc(18 * nv), *psi = s3_alloc(24 * nv);
            double *ul = s3_alloc(d.u_doubles), *pl = s3_alloc(d.spinor_doubles);
            for (size_t k = 0; k < 18 * nv; ++k) u[k] = 1.0 + (double)k;
            for (size_t k = 0; k < 24 * nv; ++k) psi[k] = -1.0 - (double)k;
            char *seen_u = calloc(d.u_doubles, 1), *seen_p = calloc(d.spinor_doubles, 1);
            if (pk_su3_pack(&p, u, psi, ul, pl) != PK_OK || !seen_u || !seen_p) {
                printf("Bail out! pk_su3_pack failed\n");
                exit(1);
            }
            for (size_t s = 0; s < d.nsites; ++s) {
                for (int k = 0; k < mu; ++k) {
                    const size_t at = pk_s3_index(p.layout, mu, d.nsites, d.nw, s, k);
                    const double want = s < nv && k < 18 ? u[18 * s + (size_t)k] : 0.0;
                    bad += at >= d.u_doubles || ul[at] != want;
                    if (at < d.u_doubles) seen_u[at] = 1;
                    ++checked;
                }
                for (int k = 0; k < 24; ++k) {
                    const size_t at = pk_s3_index(p.layout, 24, d.nsites, d.nw, s, k);
                    const double want = s < nv ? psi[24 * s + (size_t)k] : 0.0;
                    bad += at >= d.spinor_doubles || pl[at] != want;
                    if (at < d.spinor_doubles) seen_p[at] = 1;
                    ++checked;
                }
            }
            for (size_t k = 0; k < d.u_doubles; ++k) bad += !seen_u[k];
            for (size_t k = 0; k < d.spinor_doubles; ++k) bad += !seen_p[k];
            if (bad && !why[0])
                snprintf(why, sizeof why, "; first in layout %d nw %d nv %zu", p.layout, p.nw, nv);
            free(seen_u);
            free(seen_p);
            free(u);
            free(psi);
            free(ul);
            free(pl);
        }
    ok(bad == 0, "pk_s3_index (the device conversions' rule) is where pk_su3_pack puts each "
       "double, zeros elsewhere, every layout array covered: %zu of %zu wrong%s", bad, checked,
       why);
}

static pk_status s3e_create(const void *arg, void **impl)
{
    return pk_cuda_s3_ops.create(emu_state(), 0, (const pk_s3_desc *)arg, impl);
}

int main(void)
{
    emu_begin("su3.cu");
    s3_u = DBL_EPSILON / 2; /* u of s3_common.h's bounds */
    for (size_t c = 0; c < S3_NCASES; ++c) s3e_check_layout(s3_cases[c][0], s3_cases[c][1]);
    const size_t chunk = emu_state()->ring_chunk;
    ok(s3e_paths == (PK_CUDA_PATH_RING | PK_CUDA_PATH_PAGEABLE) && chunk == 4096,
       "the copies went through the staging ring (%zu-byte chunks, up to %zu a copy) and, below "
       "a chunk, cudaMemcpy (paths %#x)", chunk, (s3e_most + chunk - 1) / chunk, s3e_paths);
    s3e_check_plan();
    /* aos: what plan_execute passes device pointers in; vfo: the .cu file on arrays already
     * in a layout (padded sites) */
    s3e_devptr = 1;
    s3e_check_layout(PK_SU3_AOS, 0);
    s3e_check_layout(PK_SU3_VFO, 0);
    s3e_devptr = 0;
    s3e_check_index();
    for (size_t c = 0; c < S3_NCASES; ++c) s3e_check_canonical(s3_cases[c][0], s3_cases[c][1]);
    pk_su3_params p = {100, PK_SU3_AOS, 0};
    const pk_s3_desc d = s3e_desc(&p);
    emu_check_alloc_failures("su3 plan creation", s3e_create, pk_cuda_s3_ops.destroy, &d);
    return emu_end();
}
