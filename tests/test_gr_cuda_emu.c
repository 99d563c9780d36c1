/* test_gr_cuda_emu.c - grid.cu without a GPU: its plan (pk_cuda_gr_create / run / destroy, the
 * whole host pipeline of grid.cu: chunked uploads on a copy stream, the locate kernel and
 * its block sums, the bounding-box sub-grid, the device bucket sort - count kernel, scan,
 * scatter kernel - the tile kernel for the outer tiles and, on a second stream, the central
 * box, the atomic kernel, bands and batches, the copy back) on the emulated device of
 * cuda/emulate.h, whose lazy streams run queued work only when something waits for it, so a
 * missing stream dependency shows.  The checks are gr_common.h's own (gr_exec runs the
 * emulated plan through its hook):
 *  - every set of gr_common.h (uniform, central, edge, nonfinite, w0, ties, os2, os6, wide)
 *    on cuda-tiled, cuda-atomic and hybrid (tile factor 0.5) against pk_grid_reference_f64
 *    per cell within gamma_{2n+8} A, the norm within 1e-9, num_skipped exactly, and with unit
 *    kernels the exact footprint counts (coverage);
 *  - tile heights 16, 32 and 64 (the tile kernel's three instantiations) x central radius
 *    -1, 0 and 1 x tile factor, and one block per tile (plain write-back) against 4 and 32
 *    (atomic write-back; the tuning parameter grid.cuda_blocks);
 *  - a device so small for the run (PORTKERN_TEST_GR_DEVICE_BYTES) that the visibilities
 *    go in batches and the sub-grid in bands;
 *  - the sum rule, mirror symmetry, linearity and the single tie visibility (gr_common.h);
 *  - plans: two runs accumulate into one grid (the bound for k = 2), the stage timings;
 *  - plan creation when each of its device allocations fails.
 */
#include "cuda_emu_common.h"
#include "gr_common.h"

static int gre_stages_ok = 1; /* every run reported its 7 stages */
/* The tuning parameters the descs carry (grid.cuda_blocks), as lib/grid.c passes a context's. */
static pk_context *gre_ctx;

/* The desc lib/grid.c gives a backend for a compact set: the plane offsets of the compact
 * stack (*off, to free) and the largest support. */
static pk_gr_desc gre_desc(const char *variant, const pk_grid_params *p, const gr_set *s,
                           size_t **off)
{
    const int np = p->num_w_planes, os = p->oversample;
    *off = gr_xalloc(((size_t)np + 1) * sizeof **off);
    pk_gr_desc d;
    memset(&d, 0, sizeof d);
    (*off)[0] = 0;
    for (int w = 0; w < np; ++w) {
        const size_t m = (size_t)(os / 2 + s->support[w] * os + 1);
        (*off)[w + 1] = (*off)[w] + m * m;
        if (s->support[w] > d.max_support) d.max_support = s->support[w];
    }
    d.p = *p;
    d.p.kernel_layout = PK_GRID_KERNELS_COMPACT;
    d.support = s->support;
    d.kernels = s->kern;
    d.plane_offset = *off;
    d.variant = variant;
    d.tuning = &gre_ctx->tuning;
    return d;
}

/* gr_exec's hook: the variant on the emulated CUDA plan (lib/grid.c's part: the norm added,
 * num_skipped set). */
static pk_status gre_exec(const char *variant, const pk_grid_params *p, const gr_set *s,
                          float *grid, double *norm, int64_t *skipped, pk_run_info *info)
{
    size_t *off;
    const pk_gr_desc d = gre_desc(variant, p, s, &off);
    const pk_grid_data data = gr_data(s);
    pk_gr_result r;
    memset(&r, 0, sizeof r);
    void *impl = NULL;
    pk_status st = pk_cuda_gr_ops.create(emu_state(), 0, &d, &impl);
    if (st == PK_OK) st = pk_cuda_gr_ops.run(impl, &data, grid, &r);
    pk_cuda_gr_ops.destroy(impl);
    free(off);
    if (st == PK_OK) {
        *norm += r.norm;
        *skipped = r.num_skipped;
        gre_stages_ok &= r.num_stages == 7 && !strcmp(r.stage_name[0], "locate") &&
                         !strcmp(r.stage_name[6], "transfer") && r.kernel_s >= 0 &&
                         r.transfer_s >= 0;
    }
    if (info) memset(info, 0, sizeof *info);
    if (st != PK_OK && pk_emu_fault()[0]) {
        /* gr_check_run prints pk_last_error(): add the fault, then start clean */
        char msg[1200];
        snprintf(msg, sizeof msg, "%s%s", pk_last_error(), emu_fault_note());
        pk_fail(st, "%s", msg);
    }
    pk_emu_reset();
    return st;
}

/* gr_check_run and gr_check_coverage with an environment variable of grid.cu set. */
static void gre_with_env(const char *name, const char *value, const char *variant,
                         const gr_set *s, const gr_oracle *o, const pk_grid_params *p_over,
                         const char *label)
{
    if (!strchr(name, '_')) { /* a tuning parameter */
        pk_context_set_param(gre_ctx, name, value);
        gr_check_run(NULL, variant, s, o, p_over, label);
        gr_check_coverage(NULL, variant, s, o, p_over, label);
        pk_context_set_param(gre_ctx, name, NULL);
        return;
    }
    const char *old = getenv(name);
    char *keep = old ? strdup(old) : NULL;
    setenv(name, value, 1);
    gr_check_run(NULL, variant, s, o, p_over, label);
    gr_check_coverage(NULL, variant, s, o, p_over, label);
    if (keep)
        setenv(name, keep, 1);
    else
        unsetenv(name);
    free(keep);
}

/* Two runs into one grid on one plan: twice the reference (bound for k = 2), norms add. */
static void gre_check_plan(const char *variant, const gr_set *s, const gr_oracle *o)
{
    size_t *off;
    const pk_gr_desc d = gre_desc(variant, &s->p, s, &off);
    float *g = gr_grid_new(s);
    const pk_grid_data data = gr_data(s);
    pk_gr_result r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    void *impl = NULL;
    pk_status st = pk_cuda_gr_ops.create(emu_state(), 0, &d, &impl);
    if (st == PK_OK) st = pk_cuda_gr_ops.run(impl, &data, g, &r1);
    if (st == PK_OK) st = pk_cuda_gr_ops.run(impl, &data, g, &r2);
    char msg[400] = "";
    const int grid_ok = st == PK_OK && gr_check_grid(s, o, g, 2, msg, sizeof msg);
    ok(grid_ok && gr_norm_ok(r1.norm + r2.norm, 2 * o->norm) && r2.num_skipped == o->skipped &&
           gr_guards_ok(s, g),
       "%s plan %s: two runs accumulate twice the reference (%s; norm %.15g vs %.15g; %s)",
       variant, s->name, msg, r1.norm + r2.norm, 2 * o->norm, emu_why(st));
    pk_cuda_gr_ops.destroy(impl);
    emu_next_case();
    gr_grid_free(g);
    free(off);
}

/* A run whose k-th device allocation fails (the run allocates its buffers as it goes), for
 * every k until the run succeeds: PK_EDEVMEM, and the plan still destroys cleanly. */
static void gre_check_run_alloc_failures(const char *variant, const gr_set *s)
{
    size_t *off;
    const pk_gr_desc d = gre_desc(variant, &s->p, s, &off);
    const pk_grid_data data = gr_data(s);
    float *g = gr_grid_new(s);
    int good = 1, k;
    char why[1400] = "";
    for (k = 1; k < 64; ++k) {
        void *impl = NULL;
        pk_gr_result r;
        memset(&r, 0, sizeof r);
        pk_status st = pk_cuda_gr_ops.create(emu_state(), 0, &d, &impl);
        if (st == PK_OK) {
            pk_emu_fail_malloc(k);
            st = pk_cuda_gr_ops.run(impl, &data, g, &r);
            pk_emu_fail_malloc(0);
        }
        pk_cuda_gr_ops.destroy(impl);
        if (st == PK_OK) break;
        if ((st != PK_EDEVMEM || pk_emu_allocations() != 0) && good) {
            snprintf(why, sizeof why, "; allocation %d: %s, %ld allocations left", k, emu_why(st),
                     pk_emu_allocations());
            good = 0;
        }
        emu_next_case();
    }
    ok(good && k > 1 && k < 64,
       "%s run of %s: each of its %d device allocations failing in turn gives PK_EDEVMEM%s",
       variant, s->name, k - 1, why);
    gr_grid_free(g);
    free(off);
}

static pk_status gre_create(const void *arg, void **impl)
{
    return pk_cuda_gr_ops.create(emu_state(), 0, (const pk_gr_desc *)arg, impl);
}

int main(void)
{
    emu_begin("grid.cu");
    gr_backend = PK_BACKEND_CUDA;
    gr_exec_hook = gre_exec;
    gr_set sets[GR_NSETS];
    gr_oracle orc[GR_NSETS];
    gr_make_sets(sets, orc);

    /* Every set on each variant.  Fewer blocks per tile than grid.cu's 4 (outer) and 32
     * (central) keep the emulated runs short; the defaults run below. */
    pk_context_options co;
    pk_context_options_init(&co);
    co.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&gre_ctx, &co) != PK_OK) {
        printf("Bail out! pk_context_create: %s\n", pk_last_error());
        return 1;
    }
    pk_context_set_param(gre_ctx, "grid.cuda_blocks", "2,3");
    static const char *const variants[3] = {"cuda-tiled", "cuda-atomic", "hybrid"};
    for (int v = 0; v < 3; ++v)
        for (int i = 0; i < GR_NSETS; ++i) {
            pk_grid_params po = sets[i].p;
            po.tile_factor = v == 2 ? 0.5 : -1;
            const char *label = v == 2 ? " [2 and 3 blocks per tile, factor 0.5]"
                                       : " [2 and 3 blocks per tile]";
            gr_check_run(NULL, variants[v], &sets[i], &orc[i], &po, label);
            gr_check_coverage(NULL, variants[v], &sets[i], &orc[i], &po, label);
        }

    /* tile heights 16, 32, 64 (the tile kernel's instantiations) with central radii and tile
     * factors (hybrid), on os2 (faster emulated than the central set) */
    static const struct {
        int tile, radius;
        double factor;
    } tp[4] = {{16, -1, 0.5}, {32, 0, 1}, {64, 1, 0.5}, {64, -1, -1}};
    for (int t = 0; t < 4; ++t) {
        pk_grid_params po = sets[GR_OS2].p;
        po.tile_size = tp[t].tile;
        po.central_radius = tp[t].radius;
        po.tile_factor = tp[t].factor;
        char label[96];
        snprintf(label, sizeof label, " [tile %d, radius %d, factor %g]", po.tile_size,
                 po.central_radius, po.tile_factor);
        gr_check_run(NULL, "hybrid", &sets[GR_OS2], &orc[GR_OS2], &po, label);
        gr_check_coverage(NULL, "hybrid", &sets[GR_OS2], &orc[GR_OS2], &po, label);
    }
    gr_check_sum_rule("cuda-tiled", &sets[GR_UNIFORM]);
    gr_check_mirror("cuda-tiled", &sets[GR_UNIFORM]);
    gr_check_linearity("cuda-atomic", &sets[GR_CENTRAL]);
    gr_check_single("cuda-tiled", &sets[GR_TIES]);
    gr_check_single("cuda-atomic", &sets[GR_TIES]);
    gre_check_plan("cuda-tiled", &sets[GR_CENTRAL], &orc[GR_CENTRAL]);
    gre_check_plan("hybrid", &sets[GR_UNIFORM], &orc[GR_UNIFORM]);
    pk_context_set_param(gre_ctx, "grid.cuda_blocks", NULL);
    gr_check_run(NULL, "cuda-tiled", &sets[GR_UNIFORM], &orc[GR_UNIFORM], NULL,
                 " [4 and 32 blocks per tile]");
    gr_check_coverage(NULL, "cuda-tiled", &sets[GR_CENTRAL], &orc[GR_CENTRAL], NULL,
                      " [4 and 32 blocks per tile]");
    gr_check_run(NULL, "hybrid", &sets[GR_CENTRAL], &orc[GR_CENTRAL], NULL,
                 " [4 and 32 blocks per tile]");
    gre_with_env("grid.cuda_blocks", "1,1", "cuda-tiled", &sets[GR_UNIFORM],
                 &orc[GR_UNIFORM], NULL, " [1 block per tile]");
    /* room for a few tile rows of the bounding box: batches of visibilities, bands */
    pk_grid_params half = sets[GR_UNIFORM].p;
    half.tile_factor = 0.5;
    gre_with_env("PORTKERN_TEST_GR_DEVICE_BYTES", "50000", "cuda-tiled", &sets[GR_OS2],
                 &orc[GR_OS2], NULL, " [50000 device bytes: batches and bands]");
    gre_with_env("PORTKERN_TEST_GR_DEVICE_BYTES", "100000", "hybrid", &sets[GR_UNIFORM],
                 &orc[GR_UNIFORM], &half, " [factor 0.5, 100000 device bytes: batches and bands]");
    gre_with_env("PORTKERN_TEST_GR_DEVICE_BYTES", "40000", "cuda-atomic", &sets[GR_OS6],
                 &orc[GR_OS6], NULL, " [40000 device bytes: batches and bands]");

    ok(gre_stages_ok, "every run reported its 7 stages (locate .. transfer) and times >= 0");

    gre_check_run_alloc_failures("cuda-tiled", &sets[GR_EDGE]);
    gre_check_run_alloc_failures("hybrid", &sets[GR_EDGE]);
    size_t *off;
    const pk_gr_desc d = gre_desc("cuda-tiled", &sets[GR_EDGE].p, &sets[GR_EDGE], &off);
    emu_check_alloc_failures("grid plan creation", gre_create, pk_cuda_gr_ops.destroy, &d);
    free(off);
    for (int i = 0; i < GR_NSETS; ++i) {
        gr_oracle_free(&orc[i]);
        gr_set_free(&sets[i]);
    }
    pk_context_destroy(gre_ctx);
    return emu_end();
}
