/* d3_common.h - the diffusion3d test every backend runs (test_d3_<backend>.c picks one).
 *
 * 1. Every variant against the serial reference (pk_diff_f32, rtol 1e-5, zero 1e-10: the
 *    docs/KERNELS.md tolerance for count <= 100) on odd, non-power-of-two sizes, degenerate
 *    extents and sizes smaller than a tile.
 * 2. Device-resident plans: runs split over several plan_run calls equal one long run;
 *    some planes of the resident field downloaded and replaced (plan_*_planes).
 * 3. A longer run against the exact solution of the discrete scheme: the cosine field is a
 *    sum of 8 separable eigenmodes of the clamped stencil (cos(2 pi x) at cell centres is
 *    mirror-symmetric at both faces), mode S decays by
 *        lambda_S = cc + 2c (3 - |S|) + 2c |S| cos(2 pi dx)   per step.
 *    The stencil's coefficients are non-negative and sum to ~1, so it does not expand the
 *    max-norm and each step adds at most 8 float roundings of relative size 2^-24 times
 *    max|f|: |f_n - exact_n| <= 8 n 2^-24 max|f_0|.  The RMS error against the continuous
 *    analytic solution is printed and must equal the exact scheme's own error within the
 *    same bound.
 */
#include "portkern.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D3_RTOL 1e-5  /* docs/KERNELS.md, count <= 100 */
#define D3_ZERO 1e-10

static pk_context *d3_ctx;
static pk_backend_id d3_backend;

static float *d3_alloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

/* A field with structure in every direction (not only the cosine mode). */
static void d3_fill(float *f, int nx, int ny, int nz, unsigned seed)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < (size_t)nx * ny * nz; ++i) {
        s = s * 1664525u + 1013904223u;
        f[i] = 0.5f + (float)(s >> 8) / (float)(1u << 24);
    }
}

static void d3_check_reference(const char *variant, int nx, int ny, int nz, int count)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, count);
    if (count == 2) { /* asymmetric coefficients catch swapped neighbours */
        p.cw = 0.05; p.ce = 0.15; p.cn = 0.07; p.cs = 0.13; p.cb = 0.02; p.ct = 0.18; p.cc = 0.4;
    }
    size_t n = (size_t)nx * ny * nz;
    float *f = d3_alloc(n), *ref = d3_alloc(n);
    d3_fill(f, nx, ny, nz, (unsigned)(nx * 31 + ny * 7 + nz + count));
    memcpy(ref, f, n * sizeof(float));
    pk_run_info info;
    int s = pk_diffusion3d(d3_ctx, &p, variant, f, &info);
    char err[512];
    snprintf(err, sizeof err, "%s", pk_last_error());
    pk_diffusion3d_reference(&p, ref);
    pk_diff_report r;
    int d = s == PK_OK ? pk_diff_f32(f, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, &r) : -1;
    ok(s == PK_OK && d == PK_OK && info.backend == d3_backend && strcmp(info.variant, variant) == 0,
       "%s %dx%dx%d count %d matches the reference (status %s%s%s, max rel %.2e, %zu failed)",
       variant, nx, ny, nz, count, pk_status_name(s), s ? ": " : "", s ? err : "",
       s == PK_OK ? r.max_rel_err : -1.0, s == PK_OK ? r.num_failed : (size_t)0);
    free(f);
    free(ref);
}

static void d3_check_plan(const char *variant)
{
    const int nx = 19, ny = 13, nz = 11, counts[3] = {3, 0, 4};
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, 7);
    size_t n = (size_t)nx * ny * nz;
    float *f = d3_alloc(n), *ref = d3_alloc(n), *out = d3_alloc(n);
    d3_fill(f, nx, ny, nz, 99);
    memcpy(ref, f, n * sizeof(float));
    pk_diffusion3d_reference(&p, ref);
    pk_diffusion3d_plan *plan = NULL;
    pk_run_info info;
    int s = pk_diffusion3d_plan_create(&plan, d3_ctx, &p, variant, &info);
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, f);
    for (int i = 0; i < 3 && s == PK_OK; ++i) s = pk_diffusion3d_plan_run(plan, counts[i], &info);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, out);
    ok(s == PK_OK && pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
       "%s plan: 3 + 0 + 4 steps on the device equal 7 reference steps (%s)", variant,
       s ? pk_last_error() : "ok");
    ok(s == PK_OK && info.bytes == 8.0 * n * 4 && info.flops == 13.0 * n * 4 && info.kernel_s >= 0,
       "%s plan: run info counts 8 B and 13 flops per point per step", variant);
    /* A second upload restarts from the new field. */
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, f);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, 7, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, out);
    ok(s == PK_OK && pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
       "%s plan: re-upload restarts the run", variant);
    pk_diffusion3d_plan_destroy(plan);
    free(f);
    free(ref);
    free(out);
}

/* plan_upload_planes / plan_download_planes (a distributed plan's halo planes): after 3
 * steps, planes [4, 7) downloaded equal plan_download's; planes [2, 5) replaced by those of
 * another field, then 4 more steps: bitwise the same variant's 4 steps on the spliced field
 * (the other planes untouched); bad ranges PK_EINVAL, before an upload PK_ESTATE, NULL f
 * PK_ENULL. */
static void d3_check_planes(const char *variant)
{
    const int nx = 19, ny = 13, nz = 11;
    const size_t P = (size_t)nx * ny, n = P * nz;
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, 4);
    float *f = d3_alloc(n), *g = d3_alloc(n), *whole = d3_alloc(n), *part = d3_alloc(n);
    float *want = d3_alloc(n);
    d3_fill(f, nx, ny, nz, 5);
    d3_fill(g, nx, ny, nz, 6);
    pk_diffusion3d_plan *plan = NULL;
    int s = pk_diffusion3d_plan_create(&plan, d3_ctx, &p, variant, NULL);
    const int early = s == PK_OK ? pk_diffusion3d_plan_download_planes(plan, 0, 1, part) : 0;
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, f);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, 3, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, whole);
    if (s == PK_OK) s = pk_diffusion3d_plan_download_planes(plan, 4, 7, part);
    const int down = s == PK_OK && memcmp(part, whole + 4 * P, 3 * P * sizeof(float)) == 0;
    /* the spliced field, stepped 4 times by a fresh plan of the same variant */
    memcpy(want, whole, n * sizeof(float));
    memcpy(want + 2 * P, g + 2 * P, 3 * P * sizeof(float));
    pk_diffusion3d_plan *fresh = NULL;
    int sf = pk_diffusion3d_plan_create(&fresh, d3_ctx, &p, variant, NULL);
    if (sf == PK_OK) sf = pk_diffusion3d_plan_upload(fresh, want);
    if (sf == PK_OK) sf = pk_diffusion3d_plan_run(fresh, 4, NULL);
    if (sf == PK_OK) sf = pk_diffusion3d_plan_download(fresh, want);
    if (s == PK_OK) s = pk_diffusion3d_plan_upload_planes(plan, 2, 5, g + 2 * P);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, 4, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, whole);
    const int up = s == PK_OK && sf == PK_OK && memcmp(whole, want, n * sizeof(float)) == 0;
    ok(early == PK_ESTATE && down && up,
       "%s: plan_download_planes [4, 7) = plan_download's planes; plan_upload_planes [2, 5) "
       "then 4 steps = 4 steps on the spliced field, bitwise; before an upload PK_ESTATE (%s)",
       variant, s != PK_OK ? pk_last_error() : sf != PK_OK ? "fresh plan failed" : "ok");
    int bad = 1;
    if (plan) {
        const int r[][2] = {{-1, 2}, {3, 3}, {5, 4}, {0, 12}};
        for (size_t k = 0; k < sizeof r / sizeof r[0]; ++k)
            bad &= pk_diffusion3d_plan_upload_planes(plan, r[k][0], r[k][1], f) == PK_EINVAL &&
                   pk_diffusion3d_plan_download_planes(plan, r[k][0], r[k][1], part) ==
                       PK_EINVAL;
        bad &= pk_diffusion3d_plan_upload_planes(plan, 0, 1, NULL) == PK_ENULL;
        bad &= pk_diffusion3d_plan_download_planes(NULL, 0, 1, part) == PK_ENULL;
    }
    ok(plan && bad, "%s: plan_*_planes refuse empty, reversed and out-of-field ranges and NULL",
       variant);
    pk_diffusion3d_plan_destroy(plan);
    pk_diffusion3d_plan_destroy(fresh);
    free(f);
    free(g);
    free(whole);
    free(part);
    free(want);
}

/* plan_execute on the caller's own field: right for 0, 1, 2, 8 and 9 steps, in a 64-byte
 * aligned field and in one that is not; on the host backends nothing is copied in or out
 * when the passes leave the result in the caller's field (8 steps: an even number of passes
 * in every variant, omp-tb's passes of 4 included): transfer_s 0.  Afterwards the plan's
 * resident field is undefined (lib/portkern.h): a new upload makes plan_run right again. */
static void d3_check_execute(const char *variant)
{
    const int nx = 21, ny = 9, nz = 14, counts[5] = {0, 1, 2, 8, 9};
    const size_t n = (size_t)nx * ny * nz;
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, 1);
    pk_diffusion3d_plan *plan = NULL;
    int s = pk_diffusion3d_plan_create(&plan, d3_ctx, &p, variant, NULL);
    float *block = NULL, *ref = d3_alloc(n), *resident = d3_alloc(n);
    if (s == PK_OK && posix_memalign((void **)&block, 64, (n + 16) * sizeof(float)) != 0)
        block = NULL;
    if (s != PK_OK || !block) {
        ok(0, "%s plan_execute: plan or memory: %s", variant, pk_last_error());
        goto done;
    }
    d3_fill(resident, nx, ny, nz, 3);
    s = pk_diffusion3d_plan_upload(plan, resident);
    for (int a = 0; a < 2; ++a) {
        float *f = block + (a ? 1 : 0); /* a = 1: 4 bytes off the 64-byte boundary */
        for (int k = 0; k < 5; ++k) {
            d3_fill(f, nx, ny, nz, (unsigned)(7 + k));
            memcpy(ref, f, n * sizeof(float));
            p.count = counts[k];
            pk_diffusion3d_reference(&p, ref);
            pk_run_info info;
            if (s == PK_OK) s = pk_diffusion3d_plan_execute(plan, f, counts[k], &info);
            const int host = d3_backend == PK_BACKEND_SERIAL || d3_backend == PK_BACKEND_OPENMP;
            const int no_copy = !host || counts[k] != 8 || info.transfer_s == 0;
            ok(s == PK_OK && no_copy &&
                   pk_diff_f32(f, ref, n, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
               "%s plan_execute, %s field, %d steps: the reference's result in the caller's "
               "field, transfer %.2e s%s", variant, a ? "unaligned" : "aligned", counts[k],
               s == PK_OK ? info.transfer_s : -1.0,
               host && counts[k] == 8 ? " (must be 0)" : "");
        }
    }
    /* upload, run, download on the same plan after the executes */
    p.count = 2;
    memcpy(ref, resident, n * sizeof(float));
    pk_diffusion3d_reference(&p, ref);
    if (s == PK_OK) s = pk_diffusion3d_plan_upload(plan, resident);
    if (s == PK_OK) s = pk_diffusion3d_plan_run(plan, 2, NULL);
    if (s == PK_OK) s = pk_diffusion3d_plan_download(plan, resident);
    ok(s == PK_OK && pk_diff_f32(resident, ref, n, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL) == PK_OK,
       "%s after plan_execute: upload, run and download on the same plan are right", variant);
done:
    free(block);
    free(ref);
    free(resident);
    pk_diffusion3d_plan_destroy(plan);
}

static void d3_check_analytic(const char *variant, int nx, int count)
{
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, nx, nx, count);
    size_t n = (size_t)nx * nx * nx;
    float *f = d3_alloc(n), *exact = d3_alloc(n);
    pk_diffusion3d_field(nx, nx, nx, 0.0, f);
    pk_diffusion3d_field(nx, nx, nx, count * pk_diffusion3d_dt(nx), exact);
    pk_run_info info;
    int s = pk_diffusion3d(d3_ctx, &p, variant, f, &info);
    const double pi = 3.14159265358979323846, dx = 1.0 / nx, c = (float)p.ce, cc = (float)p.cc;
    const double cosk = cos(2 * pi * dx);
    double lam[4]; /* by |S| */
    for (int k = 0; k < 4; ++k) lam[k] = pow(cc + 2 * c * (3 - k) + 2 * c * k * cosk, count);
    double max_dev = 0, se_meas = 0, se_pred = 0;
    for (int z = 0; z < nx; ++z)
        for (int y = 0; y < nx; ++y)
            for (int x = 0; x < nx; ++x) {
                const double cx = cos(2 * pi * dx * (x + 0.5)), cy = cos(2 * pi * dx * (y + 0.5));
                const double cz = cos(2 * pi * dx * (z + 0.5));
                /* 0.125 (1 - cx)(1 - cy)(1 - cz) expanded into its eigenmodes */
                double v = lam[0] - (cx + cy + cz) * lam[1] + (cx * cy + cx * cz + cy * cz) * lam[2] -
                           cx * cy * cz * lam[3];
                v *= 0.125;
                size_t i = ((size_t)z * nx + y) * nx + x;
                double dev = fabs(f[i] - v);
                if (dev > max_dev) max_dev = dev;
                se_meas += (f[i] - exact[i]) * (double)(f[i] - exact[i]);
                se_pred += (v - exact[i]) * (v - exact[i]);
            }
    const double bound = 8.0 * count * ldexp(1.0, -24) * 1.0; /* max|f_0| <= 1 */
    const double rms_meas = sqrt(se_meas / n), rms_pred = sqrt(se_pred / n);
    ok(s == PK_OK && max_dev <= bound,
       "%s %d^3 x %d steps: max deviation from the exact discrete solution %.3e <= %.3e", variant,
       nx, count, max_dev, bound);
    ok(s == PK_OK && fabs(rms_meas - rms_pred) <= bound,
       "%s %d^3 x %d steps: RMS error vs analytic %.4e (scheme's own %.4e)", variant, nx, count,
       rms_meas, rms_pred);
    free(f);
    free(exact);
}

/* omp-tb under other diffusion3d.tb_depth / tb_rows (the tuning parameters): every point's
 * arithmetic is the same whatever the blocking, so each result equals the default's bit for
 * bit, and the reference within the tolerance; depths that do not divide the count end
 * with a shallower pass, blocks of 1 row and more rows than the field included. */
static void d3_check_tb_params(void)
{
    const int nx = 37, ny = 29, nz = 23, count = 11;
    static const char *const depth[] = {"1", "2", "3", "5", "16"};
    static const char *const rows[] = {"1", "7", "64", "4096"};
    const size_t n = (size_t)nx * ny * nz;
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, count);
    float *f0 = d3_alloc(n), *def = d3_alloc(n), *f = d3_alloc(n), *ref = d3_alloc(n);
    d3_fill(f0, nx, ny, nz, 4242);
    memcpy(def, f0, n * sizeof(float));
    memcpy(ref, f0, n * sizeof(float));
    pk_diffusion3d_reference(&p, ref);
    int s = pk_diffusion3d(d3_ctx, &p, "omp-tb", def, NULL);
    char why[600] = "";
    int good = s == PK_OK, tried = 0;
    if (s != PK_OK) snprintf(why, sizeof why, "; default: %s", pk_last_error());
    for (size_t a = 0; a < sizeof depth / sizeof depth[0] && good; ++a)
        for (size_t b = 0; b < sizeof rows / sizeof rows[0] && good; ++b) {
            pk_context_set_param(d3_ctx, "diffusion3d.tb_depth", depth[a]);
            pk_context_set_param(d3_ctx, "diffusion3d.tb_rows", rows[b]);
            memcpy(f, f0, n * sizeof(float));
            s = pk_diffusion3d(d3_ctx, &p, "omp-tb", f, NULL);
            ++tried;
            if (s != PK_OK || memcmp(f, def, n * sizeof(float)) != 0 ||
                pk_diff_f32(f, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) != PK_OK) {
                good = 0;
                snprintf(why, sizeof why, "; depth %s, rows %s: %s", depth[a], rows[b],
                         s ? pk_last_error() : "differs from the default's bits");
            }
        }
    pk_context_set_param(d3_ctx, "diffusion3d.tb_depth", NULL);
    pk_context_set_param(d3_ctx, "diffusion3d.tb_rows", NULL);
    ok(good, "omp-tb %dx%dx%d x %d steps under tb_depth 1, 2, 3, 5, 16 x tb_rows 1, 7, 64, 4096 "
       "(%d runs): the default's bits, the reference within rtol%s", nx, ny, nz, count, tried,
       why);
    free(f0);
    free(def);
    free(f);
    free(ref);
}

/* diffusion3d.isa (OpenMP): at each SIMD level the row-kernel variants (omp-tiled, omp-tb at
 * depths 1, 3 and 4, omp-phalanx) sum every point in the same order, so they agree bit for
 * bit, and each level equals the reference within the tolerance.  Row lengths around the
 * AVX-512 kernel's 16-point vectors (one partial vector, a full one, one past, a tail after
 * the unmasked loop) put the east face in every lane. */
static void d3_check_isa(void)
{
    static const char *const level[] = {"generic", "avx2", "avx512"};
    static const int nxs[] = {1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 50, 79};
    static const char *const depth[] = {"1", "3", "4"};
    const int ny = 6, nz = 5, count = 5;
    int good = 1, runs = 0;
    char why[600] = "";
    for (size_t l = 0; l < sizeof level / sizeof level[0] && good; ++l) {
        pk_context_set_param(d3_ctx, "diffusion3d.isa", level[l]);
        for (size_t i = 0; i < sizeof nxs / sizeof nxs[0] && good; ++i) {
            const int nx = nxs[i];
            const size_t n = (size_t)nx * ny * nz;
            pk_diffusion3d_params p;
            pk_diffusion3d_params_default(&p, nx, ny, nz, count);
            float *f0 = d3_alloc(n), *first = d3_alloc(n), *f = d3_alloc(n), *ref = d3_alloc(n);
            d3_fill(f0, nx, ny, nz, 77 + nx);
            memcpy(ref, f0, n * sizeof(float));
            pk_diffusion3d_reference(&p, ref);
            static const char *const vs[] = {"omp-tiled", "omp-tb", "omp-tb", "omp-tb",
                                             "omp-phalanx"};
            for (size_t v = 0; v < sizeof vs / sizeof vs[0] && good; ++v) {
                pk_context_set_param(d3_ctx, "diffusion3d.tb_depth",
                                     v >= 1 && v <= 3 ? depth[v - 1] : NULL);
                float *out = v == 0 ? first : f;
                memcpy(out, f0, n * sizeof(float));
                pk_status s = pk_diffusion3d(d3_ctx, &p, vs[v], out, NULL);
                ++runs;
                if (s != PK_OK ||
                    (v > 0 && memcmp(out, first, n * sizeof(float)) != 0) ||
                    pk_diff_f32(out, ref, n, D3_RTOL, D3_ZERO, PK_DIFF_ELEMENTWISE, NULL) !=
                        PK_OK) {
                    good = 0;
                    snprintf(why, sizeof why, "; isa %s, %s, nx %d: %s", level[l], vs[v], nx,
                             s ? pk_last_error()
                               : v > 0 && memcmp(out, first, n * sizeof(float))
                                   ? "differs from omp-tiled's bits"
                                   : "beyond the tolerance");
                }
            }
            free(f0);
            free(first);
            free(f);
            free(ref);
        }
    }
    pk_context_set_param(d3_ctx, "diffusion3d.isa", NULL);
    pk_context_set_param(d3_ctx, "diffusion3d.tb_depth", NULL);
    ok(good, "diffusion3d.isa generic, avx2, avx512 (lowered to the CPU's best): omp-tiled, "
       "omp-tb (depth 1, 3, 4), omp-phalanx agree bit for bit, the reference within rtol, "
       "nx 1..79 around the 16-point vectors (%d runs)%s", runs, why);
}

/* Run the whole suite on one backend; SKIP with the reason when it cannot run here. */
static int d3_run_suite(pk_backend_id backend)
{
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = backend;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&d3_ctx, &opt) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        return 1;
    }
    d3_backend = backend;
    const char *why;
    if (!pk_backend_available(d3_ctx, backend, &why)) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s backend unavailable: %s", pk_backend_name(backend), why);
        pk_context_destroy(d3_ctx);
        tap_skip_all(msg);
    }
    char variants[256];
    snprintf(variants, sizeof variants, "%s", pk_diffusion3d_variants(backend));
    static const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 9}, {3, 40, 6},
                                   {65, 3, 20}, {16, 16, 16}, {70, 41, 35}};
    static const int counts[] = {0, 1, 2, 9};
    for (char *v = strtok(variants, ","); v; v = strtok(NULL, ",")) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k)
                d3_check_reference(v, sizes[i][0], sizes[i][1], sizes[i][2], counts[k]);
        d3_check_reference(v, 24, 20, 18, 100);
        d3_check_plan(v);
        d3_check_planes(v);
        d3_check_execute(v);
        d3_check_analytic(v, 32, 1024);
        if (!strcmp(v, "omp-tb")) d3_check_tb_params();
        if (!strcmp(v, "omp-tiled")) d3_check_isa();
    }
    pk_context_destroy(d3_ctx);
    return tap_done();
}
