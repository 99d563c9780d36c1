/* test_im_cuda_emu.c - cuda/image.cu and cuda/degrid.cu without a GPU: the dirty image with
 * the grid, its FFT and the crop on the device (pk_cuda_im_create / run / destroy over
 * grid.cu's plan, gridding into the device grid through pk_cuda_gr_run_device, cuFFT's C2C
 * through conv2d_fft.cu's loader, emulated as a double DFT by cuda/emulate.cc), on the
 * emulated device of cuda/emulate.h.  Against tests/im_common.h's oracles, as
 * tests/test_image.c checks the backends through the library (the real-GPU counterpart: its
 * CUDA lines, skipped without a GPU):
 *  - cases a (g 128, N 64, os 4, cell centres), b (g 256, N 128, random positions) and e
 *    (g 64, N 64: no crop) on cuda-tiled, cuda-atomic and hybrid: the image against the
 *    serial backend's pk_image within twice the 7.5 bound (tests/test_image.c's bound between
 *    two backends: each within the bound of the exact image), against the double pipeline
 *    within the bound, the norm within 1e-9 and num_skipped equal to the serial plan's;
 *  - a second run of the same plan gives the same bits (the device grid re-zeroed);
 *  - case a again with the visibilities in batches (PORTKERN_TEST_GR_DEVICE_BYTES);
 *  - an empty list images to zeros with norm 0; the four stages are reported;
 *  - bad sizes refused; each device allocation of plan creation failing in turn;
 *  - degrid.cu (cases a, b): the gather of a random grid against pk_degrid_reference, bit for
 *    bit; the prediction with the FFT on the device against the serial pk_degrid (twice the
 *    7.5 bound) and the double pipeline (the bound); the adjoint relation on the CUDA pair
 *    (image.cu on each grid variant, degrid.cu) within its 7.5 bound; bad input.
 * docs/RELIABILITY.md ("CUDA without a GPU") says what the emulation does and does not show. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda_emu_common.h"

#if defined(PK_HAVE_FFTW) && defined(PK_HAVE_FFTW3)
#include "im_common.h"

static const char *const variants[] = {"cuda-tiled", "cuda-atomic", "hybrid"};

/* grid.cu's plan for a case, as lib/grid.c makes it (compact stack). */
static pk_status ime_gr_create(const im_case *c, const char *variant, void **gr)
{
    pk_gr_desc d;
    memset(&d, 0, sizeof d);
    d.p = c->ip.grid;
    d.p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    if (strcmp(variant, "hybrid") == 0) d.p.tile_factor = 0.5;
    d.support = c->k.support;
    d.kernels = c->k.compact;
    d.plane_offset = c->k.plane_offset;
    for (int w = 0; w < d.p.num_w_planes; ++w)
        if (c->k.support[w] > d.max_support) d.max_support = c->k.support[w];
    d.variant = variant;
    return pk_cuda_gr_ops.create(emu_state(), 0, &d, gr);
}

/* lib/image.c's factors (-1)^(x - N/2) / c(x - N/2) from the library's correction. */
static float *ime_scorr(const im_case *c)
{
    const int n = c->ip.image_size;
    float *sc = malloc((size_t)n * sizeof *sc);
    for (int x = 0; x < n; ++x) sc[x] = (float)((((x - n / 2) & 1) ? -1.0 : 1.0) / c->corr[x]);
    return sc;
}

static void test_case(const im_case *c, const char *name)
{
    im_oracle o;
    oracle_make(c, &o);
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    const size_t nn = (size_t)n * n;
    const double bound = bound_image(c, &o);
    float *ser = malloc(nn * sizeof(float)), *img = malloc(nn * sizeof(float));
    float *again = malloc(nn * sizeof(float));
    double *diff = malloc(nn * sizeof(double));
    pk_context *ctx = ctx_for(PK_BACKEND_SERIAL);
    double snorm = 0;
    int64_t ssk = -1;
    if (pk_image(ctx, &c->ip, "serial", c->k.support, c->k.compact, &c->d, ser, &snorm, &ssk,
                 NULL) != PK_OK) {
        printf("Bail out! serial pk_image: %s\n", pk_last_error());
        exit(1);
    }
    pk_context_destroy(ctx);
    float *sc = ime_scorr(c);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
        void *gr = NULL, *im = NULL;
        pk_gr_result r, r2;
        double st[4] = {-1, -1, -1, -1};
        pk_status s = ime_gr_create(c, variants[v], &gr);
        if (s == PK_OK) s = pk_cuda_im_create(gr, g, n, sc, &im);
        if (s == PK_OK) s = pk_cuda_im_run(im, gr, &c->d, img, &r, st);
        if (s == PK_OK) s = pk_cuda_im_run(im, gr, &c->d, again, &r2, st);
        if (s != PK_OK) {
            ok(0, "%s: image on %s: %s", name, variants[v], emu_why(s));
            pk_cuda_im_destroy(im);
            pk_cuda_gr_ops.destroy(gr);
            emu_next_case();
            continue;
        }
        for (size_t i = 0; i < nn; ++i) diff[i] = (double)img[i] - ser[i];
        const double es = l2(diff, nn);
        size_t bad = 0;
        for (size_t i = 0; i < nn; ++i) bad += fabs(diff[i]) > 2 * bound;
        ok(es <= 2 * bound, "%s: image cuda/%s vs serial/serial: ||diff|| %.3e <= twice the "
           "bound %.3e (%zu of %zu pixels beyond it alone)", name, variants[v], es, 2 * bound,
           bad, nn);
        for (size_t i = 0; i < nn; ++i) diff[i] = img[i] - o.img[i];
        const double e = l2(diff, nn);
        ok(e <= bound && fabs(r.norm - o.norm) <= 1e-9 * fabs(o.norm) && r.num_skipped == ssk,
           "%s: image cuda/%s vs double pipeline: ||diff|| %.3e <= bound %.3e; norm rel %.1e; "
           "skipped %lld (serial %lld)", name, variants[v], e, bound,
           fabs(r.norm - o.norm) / o.norm, (long long)r.num_skipped, (long long)ssk);
        ok(memcmp(img, again, nn * sizeof(float)) == 0 && r2.norm == r.norm,
           "%s: cuda/%s: a second run of the plan gives the same bits", name, variants[v]);
        ok(st[0] >= 0 && st[1] >= 0 && st[2] >= 0 && st[3] >= 0,
           "%s: cuda/%s: stages grid %.4f fft %.4f correct %.4f transfer %.4f s", name,
           variants[v], st[0], st[1], st[2], st[3]);
        pk_cuda_im_destroy(im);
        pk_cuda_gr_ops.destroy(gr);
    }
    free(sc);
    free(ser);
    free(img);
    free(again);
    free(diff);
    free(o.img);
    free(o.a);
}

static void test_empty(const im_case *c)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    const size_t nn = (size_t)n * n;
    float *img = malloc(nn * sizeof(float)), *sc = ime_scorr(c);
    for (size_t i = 0; i < nn; ++i) img[i] = 1.0f;
    pk_grid_data d;
    memset(&d, 0, sizeof d);
    void *gr = NULL, *im = NULL;
    pk_gr_result r;
    double st[4];
    pk_status s = ime_gr_create(c, "cuda-tiled", &gr);
    if (s == PK_OK) s = pk_cuda_im_create(gr, g, n, sc, &im);
    if (s == PK_OK) s = pk_cuda_im_run(im, gr, &d, img, &r, st);
    size_t nz = 0;
    for (size_t i = 0; i < nn; ++i) nz += img[i] != 0.0f;
    ok(s == PK_OK && nz == 0 && r.norm == 0 && r.num_skipped == 0,
       "empty list: the image is all zeros (%zu non-zero), norm 0: %s", nz, emu_why(s));
    pk_cuda_im_destroy(im);
    pk_cuda_gr_ops.destroy(gr);
    emu_next_case();
    free(img);
    free(sc);
}

/* degrid.cu's plan for a case (variant "cuda"), as lib/image.c's dispatch makes it. */
static pk_status ime_dg_create(const im_case *c, void **dg)
{
    pk_gr_desc d;
    memset(&d, 0, sizeof d);
    d.p = c->ip.grid;
    d.p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    d.support = c->k.support;
    d.kernels = c->k.compact;
    d.plane_offset = c->k.plane_offset;
    for (int w = 0; w < d.p.num_w_planes; ++w)
        if (c->k.support[w] > d.max_support) d.max_support = c->k.support[w];
    d.variant = "cuda";
    return pk_cuda_dg_create(emu_state(), 0, &d, dg);
}

/* Degrid: the gather on a random grid against pk_degrid_reference (the same float operations
 * in the same order: every visibility's bits), the prediction from a random model against
 * the serial backend's pk_degrid (twice the 7.5 bound) and the double pipeline (the bound),
 * and the adjoint relation <degrid X, W v> = (norm / kappa) <X, image v> on the CUDA pair
 * (image.cu with each grid variant, degrid.cu) within its 7.5 bound. */
static void test_degrid(im_case *c, const char *name)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    const size_t nn = (size_t)n * n, cells = (size_t)g * g, nv = c->n;
    float *grid = malloc(2 * cells * sizeof(float)), *vref = malloc(2 * nv * sizeof(float));
    float *vis = malloc(2 * nv * sizeof(float)), *x = malloc(nn * sizeof(float));
    float *img = malloc(nn * sizeof(float)), *sc = ime_scorr(c);
    for (size_t i = 0; i < 2 * cells; ++i) grid[i] = (float)nrand();
    for (size_t i = 0; i < nn; ++i) x[i] = (float)nrand();
    for (size_t i = 0; i < 2 * nv; ++i) c->vis[i] = (float)nrand();
    int64_t rsk = -1;
    pk_degrid_reference(&c->ip.grid, c->k.support, c->k.compact, grid, &c->d, vref, &rsk);
    void *dg = NULL;
    pk_dg_result r;
    memset(&r, 0, sizeof r);
    pk_status s = ime_dg_create(c, &dg);
    if (s == PK_OK) s = pk_cuda_dg_run(dg, grid, &c->d, vis, &r);
    size_t differ = 0;
    for (size_t i = 0; i < 2 * nv; ++i) differ += memcmp(&vis[i], &vref[i], sizeof(float)) != 0;
    ok(s == PK_OK && differ == 0 && r.num_skipped == rsk,
       "%s: degrid cuda gather of a random grid vs pk_degrid_reference: %zu of %zu components "
       "differ in a bit; skipped %lld (reference %lld): %s", name, differ, 2 * nv,
       (long long)r.num_skipped, (long long)rsk, emu_why(s));
    emu_next_case();
    /* the prediction */
    im_oracle o;
    oracle_make(c, &o);
    double *dref = malloc(2 * nv * sizeof *dref), placed_l2, *h = NULL;
    degrid_oracle(c, x, dref, &placed_l2, &h);
    const double eb = bound_degrid(c, &o, placed_l2);
    const double tol = adjoint_tol(c, &o, x, h, placed_l2, name);
    free(h);
    float *dser = malloc(2 * nv * sizeof(float));
    pk_context *ctx = ctx_for(PK_BACKEND_SERIAL);
    if (pk_degrid(ctx, &c->ip, "serial", c->k.support, c->k.compact, x, &c->d, dser, NULL,
                  NULL) != PK_OK) {
        printf("Bail out! serial pk_degrid: %s\n", pk_last_error());
        exit(1);
    }
    pk_context_destroy(ctx);
    double st[4] = {-1, -1, -1, -1};
    if (s == PK_OK) s = pk_cuda_dg_image_init(dg, n, sc, c->kappa);
    if (s == PK_OK) s = pk_cuda_dg_predict(dg, x, &c->d, vis, &r, st);
    double *diff = malloc(2 * nv * sizeof *diff);
    for (size_t i = 0; i < 2 * nv; ++i) diff[i] = (double)vis[i] - dser[i];
    const double es = l2(diff, 2 * nv);
    for (size_t i = 0; i < 2 * nv; ++i) diff[i] = vis[i] - dref[i];
    const double e = l2(diff, 2 * nv);
    ok(s == PK_OK && es <= 2 * eb && e <= eb,
       "%s: degrid cuda (FFT on the device) vs serial: ||diff|| %.3e <= twice the bound %.3e; "
       "vs double pipeline %.3e <= %.3e: %s", name, es, 2 * eb, e, eb, emu_why(s));
    ok(s == PK_OK && st[0] >= 0 && st[1] >= 0 && st[2] >= 0 && st[3] >= 0,
       "%s: degrid stages place %.4f fft %.4f degrid %.4f transfer %.4f s", name, st[0], st[1],
       st[2], st[3]);
    /* the adjoint relation on the CUDA pair */
    for (size_t v = 0; v < sizeof variants / sizeof variants[0] && s == PK_OK; ++v) {
        void *gr = NULL, *im = NULL;
        pk_gr_result gres;
        double ist[4];
        pk_status si = ime_gr_create(c, variants[v], &gr);
        if (si == PK_OK) si = pk_cuda_im_create(gr, g, n, sc, &im);
        if (si == PK_OK) si = pk_cuda_im_run(im, gr, &c->d, img, &gres, ist);
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < nv; ++i)
            lhs += c->wt[i] * ((double)vis[2 * i] * c->vis[2 * i] +
                               (double)vis[2 * i + 1] * c->vis[2 * i + 1]);
        for (size_t i = 0; i < nn; ++i) rhs += (double)x[i] * img[i];
        rhs *= gres.norm / c->kappa;
        ok(si == PK_OK && fabs(lhs - rhs) <= tol,
           "%s: <degrid_cuda X, W v> = (norm/kappa) <X, image_cuda/%s v>: %.9e vs %.9e, diff "
           "%.2e <= bound %.2e: %s", name, variants[v], lhs, rhs, fabs(lhs - rhs), tol,
           emu_why(si));
        pk_cuda_im_destroy(im);
        pk_cuda_gr_ops.destroy(gr);
        emu_next_case();
    }
    /* bad input */
    const pk_status b1 = pk_cuda_dg_image_init(dg, n + 1, sc, c->kappa);
    const pk_status b2 = pk_cuda_dg_image_init(dg, n, sc, 0.0);
    ok(b1 == PK_EINVAL && b2 == PK_EINVAL, "degrid: odd model (%s), kappa 0 (%s): PK_EINVAL",
       pk_status_name(b1), pk_status_name(b2));
    emu_next_case();
    pk_cuda_dg_destroy(dg);
    void *dg2 = NULL;
    pk_gr_desc d;
    memset(&d, 0, sizeof d);
    d.p = c->ip.grid;
    d.variant = "cuda-tiled";
    const pk_status b3 = pk_cuda_dg_create(emu_state(), 0, &d, &dg2);
    ok(b3 == PK_EINVAL && dg2 == NULL, "degrid: unknown variant cuda-tiled: %s",
       pk_status_name(b3));
    emu_next_case();
    free(grid);
    free(vref);
    free(vis);
    free(x);
    free(img);
    free(sc);
    free(dref);
    free(dser);
    free(diff);
    free(o.img);
    free(o.a);
}

static pk_status ime_dg_create_arg(const void *arg, void **impl)
{
    return ime_dg_create((const im_case *)arg, impl);
}

typedef struct ime_arg {
    void *gr;
    int g, n;
    const float *sc;
} ime_arg;

static pk_status ime_create(const void *arg, void **impl)
{
    const ime_arg *a = arg;
    return pk_cuda_im_create(a->gr, a->g, a->n, a->sc, impl);
}

static void test_bad(const im_case *c)
{
    const int n = c->ip.image_size, g = c->ip.grid.grid_size;
    float *sc = ime_scorr(c);
    void *gr = NULL, *im = NULL;
    if (ime_gr_create(c, "cuda-tiled", &gr) != PK_OK) {
        ok(0, "bad input: grid plan: %s", emu_why(PK_EINTERNAL));
        free(sc);
        return;
    }
    const pk_status s1 = pk_cuda_im_create(gr, g, g + 2, sc, &im);
    const pk_status s2 = pk_cuda_im_create(gr, g, n - 1, sc, &im);
    const pk_status s3 = pk_cuda_im_create(gr, g, 0, sc, &im);
    ok(s1 == PK_EINVAL && s2 == PK_EINVAL && s3 == PK_EINVAL && im == NULL,
       "bad sizes: image larger than the grid (%s), odd (%s), 0 (%s): PK_EINVAL, no plan",
       pk_status_name(s1), pk_status_name(s2), pk_status_name(s3));
    emu_next_case();
    const ime_arg a = {gr, g, n, sc};
    emu_check_alloc_failures("pk_cuda_im_create", ime_create, pk_cuda_im_destroy, &a);
    pk_cuda_gr_ops.destroy(gr);
    free(sc);
}

int main(void)
{
    emu_begin("cuda/image.cu");
    const double cell = 0x1.0p-10;
    static const double src[3][3] = {{0.0, 0.0, 1.0}, {-20 * 0x1.0p-10, 9 * 0x1.0p-10, 0.6},
                                     {13.3 * 0x1.0p-10, -17.6 * 0x1.0p-10, 0.8}};
    im_case a, b, e;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&e, 0, sizeof e);
    if (!case_kernels(&a, cell, 64, 128, 4, 4 * 32, 1, 0) ||
        !case_kernels(&b, cell, 128, 256, 4, 4 * 32, 1, 0) ||
        !case_kernels(&e, cell, 64, 64, 4, 4 * 32, 1, 0)) {
        printf("Bail out! pk_image_correction: %s\n", pk_last_error());
        return 1;
    }
    case_data(&a, 3000, 0.6, 1, src, 3);
    case_data(&b, 3000, 0.6, 0, src, 3);
    case_data(&e, 1000, 0.6, 0, src, 3);
    test_case(&a, "a");
    test_case(&b, "b");
    test_case(&e, "e");
    /* a device so small for the run that grid.cu uploads and grids the visibilities into the
     * device grid in several batches (its plans read the variable at creation) */
    setenv("PORTKERN_TEST_GR_DEVICE_BYTES", "65536", 1);
    test_case(&a, "a (batches)");
    unsetenv("PORTKERN_TEST_GR_DEVICE_BYTES");
    test_empty(&a);
    test_bad(&a);
    emu_check_alloc_failures("pk_cuda_dg_create", ime_dg_create_arg, pk_cuda_dg_destroy, &a);
    test_degrid(&a, "a");
    test_degrid(&b, "b");
    case_free(&a);
    case_free(&b);
    case_free(&e);
    return emu_end();
}
#else
int main(void)
{
    tap_skip_all("no FFTW (single and double) at configure time: the image and its oracles "
                  "need them");
}
#endif
