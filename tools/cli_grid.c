/* cli_grid.c - grid's part of the portkern command line (tools/cli_kernel.h): its parameters,
 * files, data sets, run, verdict, own outputs and bench (README.md, "Command line";
 * docs/KERNELS.md section 1).
 *
 * Files (gen writes them, run --in reads them): uu.npy, vv.npy, ww.npy float32 [n]
 * (wavelengths), vis.npy complex64 [n], weight.npy float32 [n], support.npy int32 [planes],
 * kernels.npy complex64 [planes][half][half] (FULL) or complex64 [count] (COMPACT: per plane
 * the m x m corner the gridder reads, m = oversample/2 + support*oversample + 1), and
 * params.json (oversample, cell_size_rad, w_scale, grid_size, num_w_planes, conv_size_half,
 * kernel_layout, dataset, scale, seed, then what the data set is: counts, recipe).  run --out
 * writes grid.npy complex64 [G][G]; --intensity a PNG of the updates per cell and
 * --export-kernels the stack in the FULL layout (the kernel's own outputs).
 *
 * Verification (--verify, bench): against the double-accumulating reference
 * (pk_grid_reference_f64): the grid norm-wise, ||grid - ref||_2 / ||ref||_2 <= rtol (float
 * sums in another order cannot match per cell: docs/KERNELS.md sections 1 and 6), norm to 1e-9
 * relative and num_skipped exactly.  rtol 1e-5: the serial float grid is within ~1e-7 of the
 * double one on these sets (each cell sums at most ~1e6 terms whose float rounding errors
 * are independent: ~sqrt(K) 2^-24 relative, ~6e-5 worst case for the busiest cell, far less
 * norm-wise since most of the grid's energy is in cells with fewer terms); a variant that
 * drops or duplicates one visibility in 1e5 fails it.
 *
 * Counts: a grid-point update is one complex multiply-add, 8 of the library's flops
 * (updates = info.flops / 8); visibilities/s and updates/s are over the kernel time, as the
 * driver's GFlop/s (transfer_seconds apart). */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_grid.h"

#define GR_RTOL 1e-5
#define GR_NORM_RTOL 1e-9
#define GR_FLOPS_PER_UPDATE 8.0 /* the library's flop model: updates = info.flops / 8 */
#define GR_PNG_MAX 2000         /* the intensity picture's largest side in pixels */
#define GR_VERIFY_RULE "||grid - ref||_2 / ||ref||_2 <= rtol (ref: double-accumulating " \
                       "reference), |norm - norm_ref| <= 1e-9 |norm_ref|, num_skipped exact"

/* A generator's failure (pk_grid_generate, pk_grid_expand_kernels): a bad layout file or a
 * build without FFTW is the user's to fix (exit 2), memory is not (1). */
static int gg_error(const char *prog, pk_status s)
{
    fprintf(stderr, "%s: %s: %s\n", prog, pk_strerror(s), pk_last_error());
    return s == PK_ENOMEM || s == PK_EINTERNAL ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
}

static int kernel_m(const pk_grid_params *p, int s)
{
    return p->oversample / 2 + s * p->oversample + 1;
}

/* ---- parameters and options -------------------------------------------------------------- */

/* by id: PK_GRID_KERNELS_FULL, PK_GRID_KERNELS_COMPACT */
static const char *const gr_layout_names[] = {"full", "compact", NULL};
const cli_names gr_layouts = {gr_layout_names, NULL};

/* In the order of params.json, then the options that are no keys of it. */
static const cli_param gr_params[] = {
    GR_DATA_PARAMS
    {"intensity", CLI_P_TEXT, GR_OFF(png), 0, 0, 0, CLI_IN_RUN, NULL, "FILE.png",
     "the NAG report's grid-intensity picture: updates per cell, log colour "
     "scale (jet; black = never updated), grid row 0 at the top, blocks of "
     "cells summed so that no side exceeds 2000 pixels"},
    {"intensity-touched", CLI_P_FLAG, GR_OFF(touched), 0, 1, 0, CLI_IN_RUN, NULL, NULL,
     "the picture spans the updated cells' bounding box only"},
    {"export-kernels", CLI_P_TEXT, GR_OFF(export_dir), 0, 0, 0, CLI_IN_RUN, NULL, "DIR",
     "write the kernel stack as DIR/kernels.npy (full layout), "
     "DIR/support.npy and DIR/kernels.json"},
    {0}};

/* params.json's keys for information (gr_params_info writes them; run ignores them). */
const char *const gr_info_keys[] = {
    "num_vis", "max_support", "image_size", "fft_size", "max_w", "max_abs_w_data",
    "num_beyond_max_w", "num_stations", "num_times", "layout", "frequency_hz", "unit_vis",
    "recipe", NULL};

/* small: ~50k visibilities on a 1024 grid; paper: el82-70 at a tenth of its dumps (3.1 M
 * visibilities on the 18000 grid); large: the whole el82-70 set. */
void gr_preset(int size, void *args)
{
    gr_args *a = args;
    a->dataset = size == CLI_SMALL ? "small" : "el82-70";
    a->scale = size == CLI_PAPER ? 0.1 : 1;
}

const char *gr_proxy(void *args)
{
    static char what[96];
    gr_args *a = args;
    a->scale *= 0.1;
    snprintf(what, sizeof what, "%s --scale %g, a tenth of the visibilities", a->dataset,
             a->scale);
    return what;
}

/* The options under other names than their params.json keys taken over, the evenness and
 * names checked; without --in (no data set name from params.json) the data set found. */
int gr_resolve(cli_call *c)
{
    gr_args *a = c->args;
    if (cli_seen(c, "grid-size")) {
        a->grid_size = a->opt_grid_size;
        cli_set_seen(c, "grid_size", CLI_SEEN_OPT);
    }
    if (cli_seen(c, "cell-size")) {
        a->cell_size_rad = a->opt_cell_size;
        cli_set_seen(c, "cell_size_rad", CLI_SEEN_OPT);
    }
    if (cli_seen(c, "w-scale")) {
        a->w_scale = a->opt_w_scale;
        cli_set_seen(c, "w_scale", CLI_SEEN_OPT);
    }
    if (cli_seen(c, "oversample") == CLI_SEEN_OPT && a->oversample % 2)
        return cli_usage_error(c->prog, "option --oversample: must be even, got %d", a->oversample);
    if (cli_seen(c, "grid-size") && a->grid_size % 2)
        return cli_usage_error(c->prog, "option --grid-size: must be even, got %d", a->grid_size);
    if (cli_seen(c, "dataset") == CLI_SEEN_FILE) return 0; /* run --in: a name only */
    const char *name = a->dataset ? a->dataset : c->where == CLI_IN_GEN ? "synthetic" : "small";
    const int has_layout = pk_grid_dataset_has_layout(name);
    if (has_layout < 0)
        return cli_usage_error(c->prog, "option --dataset: unknown data set '%s' (%s)", name,
                               pk_grid_datasets());
    a->dataset = name;
    if (a->layout && !has_layout)
        return cli_usage_error(c->prog, "option --layout: data set %s has no station layout "
                               "(only el82-70, el56-82, el30-56)", name);
    return 0;
}

/* ---- the data of one run: generated in memory or read from DIR ----------------------- */

static const cli_array gr_arrays[] = {
    {"grid.npy", PK_DTYPE_C64, "grid_size,grid_size", offsetof(gr_data, grid), CLI_A_OUT},
    {"reference", PK_DTYPE_F64, "grid_size,grid_size,2", offsetof(gr_data, ref), CLI_A_REF},
    {0}};

void gr_data_free(void *data)
{
    gr_data *g = data;
    for (int k = 0; k < 7; ++k) pk_array_free(&g->arr[k]);
    if (!g->from) pk_grid_dataset_free(&g->gen); /* borrowed: the owner's */
    memset(g, 0, sizeof *g);
}


static void gr_max_support(gr_data *g)
{
    g->max_support = 0;
    for (int i = 0; i < g->p.num_w_planes; ++i)
        if (g->support[i] > g->max_support) g->max_support = g->support[i];
}

/* The run's view of the generated set g->gen: its parameters, kernels and visibilities. */
static void gr_from_gen(gr_data *g)
{
    g->p = g->gen.params;
    g->support = g->gen.support.data;
    g->kernels = g->gen.kernels.data;
    gr_max_support(g);
    g->d = g->gen.data;
    g->dataset = g->gen.name;
}

/* Generate a data set in memory (kernels + visibilities); layout FULL or COMPACT. */
static int gr_generate(const char *prog, const pk_grid_gen_options *o, gr_data *g)
{
    const double t0 = cli_now_s();
    const pk_status s = pk_grid_generate(o, &g->gen);
    if (s != PK_OK) return gg_error(prog, s);
    gr_from_gen(g);
    g->gen_s = cli_now_s() - t0;
    return 0;
}

/* The gridding parameters given (options, params.json) over the data's, the tuning, checked
 * by the library together with the supports and, for COMPACT, against the stack's length
 * (compact_count complex samples): an --oversample that changes the plane sizes must not make
 * the library read past the stack.  The args then hold what params.json records. */
static int gr_finish(cli_call *c, gr_data *g, size_t compact_count)
{
    gr_args *a = c->args;
    if (cli_seen(c, "grid_size")) g->p.grid_size = a->grid_size;
    if (cli_seen(c, "oversample")) g->p.oversample = a->oversample;
    if (cli_seen(c, "cell_size_rad")) g->p.cell_size_rad = a->cell_size_rad;
    if (cli_seen(c, "w_scale")) g->p.w_scale = a->w_scale;
    g->p.tile_size = a->tile_size;
    g->p.central_radius = a->central_radius;
    g->p.tile_factor = a->tile_factor;
    size_t count;
    pk_status s = pk_grid_kernel_count(&g->p, g->support, &count);
    if (s != PK_OK) return cli_lib_error("portkern", s);
    if (g->p.kernel_layout == PK_GRID_KERNELS_COMPACT && compact_count != count)
        return cli_usage_error(c->prog, "compact kernels: %zu complex samples, but the stack of "
                               "these supports at oversample %d has %zu", compact_count,
                               g->p.oversample, count);
    a->grid_size = g->p.grid_size;
    a->oversample = g->p.oversample;
    a->cell_size_rad = g->p.cell_size_rad;
    a->w_scale = g->p.w_scale;
    a->num_w_planes = g->p.num_w_planes;
    a->kernel_layout = g->p.kernel_layout;
    a->conv_size_half = 0; /* the largest plane's corner, in either layout */
    for (int i = 0; i < g->p.num_w_planes; ++i)
        if (kernel_m(&g->p, g->support[i]) > a->conv_size_half)
            a->conv_size_half = kernel_m(&g->p, g->support[i]);
    return 0;
}

/* run without --in, and gen: the data set of --dataset (run: compact kernels). */
int gr_make(cli_call *c, void *data)
{
    gr_args *a = c->args;
    gr_data *g = data;
    pk_grid_gen_options o;
    pk_grid_gen_options_init(&o);
    o.dataset = a->dataset;
    o.scale = a->scale;
    o.seed = (uint64_t)a->seed;
    o.layout_path = a->layout;
    o.unit_vis = a->unit_vis;
    o.kernel_layout = c->where == CLI_IN_GEN ? a->kernel_layout : PK_GRID_KERNELS_COMPACT;
    int rc = gr_generate(c->prog, &o, g);
    return rc ? rc : gr_finish(c, g, g->gen.kernels.count);
}

int gr_borrow(cli_call *c, void *data, const cli_bench_result *prior)
{
    gr_args *a = c->args;
    gr_data *g = data;
    if (!prior || prior->k->generate != gr_make || prior->is_proxy || c->where != CLI_IN_RUN)
        return -1;
    for (int d = 0; d < prior->ndata; ++d) {
        int c0 = -1;
        for (int k = 0; k < prior->ncases && c0 < 0; ++k)
            if (prior->data_of[k] == d) c0 = k;
        gr_data *o = prior->data[d];
        const gr_args *oa = c0 >= 0 ? prior->args[c0] : NULL;
        if (!o || !oa || o->from || !o->gen.data.num_vis || !oa->dataset || !a->dataset ||
            strcmp(oa->dataset, a->dataset) || oa->scale != a->scale || oa->seed != a->seed ||
            oa->unit_vis != a->unit_vis || (!oa->layout) != (!a->layout) ||
            (a->layout && strcmp(oa->layout, a->layout)))
            continue;
        g->gen = o->gen; /* its arrays stay o's (gr_data_free skips them: g->from) */
        g->from = o;
        gr_from_gen(g);
        g->gen_s = 0;
        return gr_finish(c, g, g->gen.kernels.count);
    }
    return -1;
}

/* run --in DIR: the seven arrays, their lengths agreeing, and params.json's parameters. */
int gr_load(cli_call *c, const char *dir, void *data)
{
    gr_args *a = c->args;
    gr_data *g = data;
    char path[4096];
    int rc;
    if (cli_seen(c, "dataset") == CLI_SEEN_OPT || cli_seen(c, "scale") == CLI_SEEN_OPT ||
        cli_seen(c, "seed") == CLI_SEEN_OPT || cli_seen(c, "layout") == CLI_SEEN_OPT || a->unit_vis)
        return cli_usage_error(c->prog, "--dataset, --scale, --seed, --layout and --unit-vis "
                               "generate data: not with --in DIR");
    if (!cli_seen(c, "grid_size") || !cli_seen(c, "oversample") ||
        !cli_seen(c, "cell_size_rad") || !cli_seen(c, "w_scale"))
        return cli_usage_error(c->prog, "%s: grid_size, oversample, cell_size_rad and w_scale are "
                               "needed (params.json or --grid-size/--oversample/--cell-size/"
                               "--w-scale)", dir);
    g->dataset = cli_seen(c, "dataset") == CLI_SEEN_FILE ? a->dataset : dir;
    if ((rc = cli_grid_arrays(c->prog, dir, g->arr)))
        return rc;
    const size_t n = g->arr[0].shape[0], planes = g->arr[5].shape[0];
    if (cli_seen(c, "num_w_planes") && (size_t)a->num_w_planes != planes)
        return cli_usage_error(c->prog, "%s/support.npy: %zu planes (params.json num_w_planes "
                               "differs)", dir, planes);
    if (cli_join(path, sizeof path, dir, "kernels.npy"))
        return cli_usage_error(c->prog, "path too long: %s", dir);
    const pk_array *k = &g->arr[6];
    const int layout = k->ndim == 3 ? PK_GRID_KERNELS_FULL : PK_GRID_KERNELS_COMPACT;
    if (cli_seen(c, "kernel_layout") && a->kernel_layout != layout)
        return cli_usage_error(c->prog, "%s is %s but params.json says kernel_layout \"%s\"",
                               path,
                               layout == PK_GRID_KERNELS_FULL ? "3-D (full)" : "1-D (compact)",
                               cli_name_of(&gr_layouts, a->kernel_layout));
    if (layout == PK_GRID_KERNELS_FULL && cli_seen(c, "conv_size_half") &&
        (size_t)a->conv_size_half != k->shape[1])
        return cli_usage_error(c->prog, "%s: half = %zu but params.json conv_size_half is %d",
                               path, k->shape[1], a->conv_size_half);
    pk_grid_params_init(&g->p);
    g->p.kernel_layout = layout;
    g->p.num_w_planes = (int)planes;
    g->p.conv_size_half = layout == PK_GRID_KERNELS_FULL ? (int)k->shape[1] : 0;
    g->d.num_vis = n;
    g->d.uu = g->arr[0].data;
    g->d.vv = g->arr[1].data;
    g->d.ww = g->arr[2].data;
    g->d.vis = g->arr[3].data;
    g->d.weight = g->arr[4].data;
    g->support = g->arr[5].data;
    g->kernels = k->data;
    gr_max_support(g);
    return gr_finish(c, g, k->shape[0]);
}

int gr_write_inputs(cli_call *c, const char *dir, const void *data)
{
    const gr_args *a = c->args;
    const gr_data *g = data;
    const int P = g->p.num_w_planes;
    const size_t nv[1] = {g->d.num_vis}, ns[1] = {(size_t)P};
    const int full = g->p.kernel_layout == PK_GRID_KERNELS_FULL;
    const size_t kshape[3] = {full ? (size_t)P : g->gen.kernels.count,
                              (size_t)g->p.conv_size_half, (size_t)g->p.conv_size_half};
    int rc;
    if ((rc = cli_write_npy(c->prog, dir, "uu.npy", PK_DTYPE_F32, 1, nv, g->d.uu)) ||
        (rc = cli_write_npy(c->prog, dir, "vv.npy", PK_DTYPE_F32, 1, nv, g->d.vv)) ||
        (rc = cli_write_npy(c->prog, dir, "ww.npy", PK_DTYPE_F32, 1, nv, g->d.ww)) ||
        (rc = cli_write_npy(c->prog, dir, "vis.npy", PK_DTYPE_C64, 1, nv, g->d.vis)) ||
        (rc = cli_write_npy(c->prog, dir, "weight.npy", PK_DTYPE_F32, 1, nv, g->d.weight)) ||
        (rc = cli_write_npy(c->prog, dir, "support.npy", PK_DTYPE_I32, 1, ns, g->support)) ||
        (rc = cli_write_npy(c->prog, dir, "kernels.npy", PK_DTYPE_C64, full ? 3 : 1, kshape,
                            g->kernels)))
        return rc;
    printf("grid: %s --scale %g, %zu visibilities, %d planes (supports %d..%d), %s kernels (%zu "
           "samples), grid %d, generated in %.1f s\n", g->dataset, a->scale, g->d.num_vis, P,
           g->support[0], g->max_support, cli_name_of(&gr_layouts, g->p.kernel_layout),
           full ? kshape[0] * kshape[1] * kshape[2] : kshape[0], g->p.grid_size, g->gen_s);
    return 0;
}

/* params.json after the table's keys: what the data set is. */
void gr_params_info(cli_json *j, const void *args, const void *data)
{
    const gr_args *a = args;
    const pk_grid_dataset *gen = &((const gr_data *)data)->gen;
    cj_int(j, "num_vis", (long long)gen->data.num_vis);
    cj_int(j, "max_support", gen->max_support);
    cj_int(j, "image_size", gen->image_size);
    cj_int(j, "fft_size", gen->fft_size);
    cj_num(j, "max_w", gen->max_w);
    cj_num(j, "max_abs_w_data", gen->max_abs_w);
    cj_int(j, "num_beyond_max_w", (long long)gen->num_beyond_max_w);
    if (gen->num_stations) { /* SKA tracks */
        cj_int(j, "num_stations", gen->num_stations);
        cj_int(j, "num_times", gen->num_times);
        cj_str(j, "layout", a->layout ? a->layout : "procedural (built-in)");
        cj_num(j, "frequency_hz", gen->frequency_hz);
    }
    cj_bool(j, "unit_vis", a->unit_vis);
    cj_str(j, "recipe", gen->recipe);
}

/* ---- the grid-intensity picture (NAG report, Listing 2: updates per cell) ------------- */
/* CRC-32 (PNG, zlib: reflected 0xEDB88320) and Adler-32, to write PNG without zlib. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *b, size_t n)
{
    static uint32_t table[256];
    static int ready = 0;
    if (!ready) {
        for (uint32_t k = 0; k < 256; ++k) {
            uint32_t c = k;
            for (int j = 0; j < 8; ++j) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[k] = c;
        }
        ready = 1;
    }
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) crc = table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static void put_be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

static int png_chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8], tail[4];
    put_be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uint32_t crc = crc32_update(0, head + 4, 4);
    crc = crc32_update(crc, data, n);
    put_be32(tail, crc);
    return fwrite(head, 1, 8, f) != 8 || (n && fwrite(data, 1, n, f) != n) ||
           fwrite(tail, 1, 4, f) != 4;
}

/* 8-bit RGB PNG: filter 0 on every row, one zlib stream of stored (uncompressed) deflate
 * blocks.  0 or -1 (errno). */
int cli_png_write(const char *path, int w, int h, const unsigned char *rgb)
{
    const size_t row = 1 + 3 * (size_t)w, raw = row * (size_t)h;
    const size_t nblocks = raw / 65535 + 1; /* stored blocks hold at most 65535 bytes */
    const size_t zlen = 2 + raw + 5 * nblocks + 4;
    unsigned char *z = malloc(zlen);
    if (!z) return -1;
    size_t o = 0, done = 0;
    uint32_t a = 1, b = 0; /* Adler-32 of the raw stream */
    z[o++] = 0x78; /* CMF: deflate, 32K window */
    z[o++] = 0x01; /* FLG: no dictionary, (0x7801 % 31 == 0) */
    for (size_t blk = 0; blk < nblocks; ++blk) {
        const size_t n = raw - done < 65535 ? raw - done : 65535;
        z[o++] = blk + 1 == nblocks ? 1 : 0; /* BFINAL, BTYPE 00 */
        z[o++] = (unsigned char)(n & 0xFF);
        z[o++] = (unsigned char)(n >> 8);
        z[o++] = (unsigned char)(~n & 0xFF);
        z[o++] = (unsigned char)((~n >> 8) & 0xFF);
        for (size_t k = 0; k < n; ++k, ++done) {
            const size_t y = done / row, x = done % row;
            const unsigned char c = x == 0 ? 0 : rgb[y * 3 * (size_t)w + x - 1];
            z[o++] = c;
            a = (a + c) % 65521u;
            b = (b + a) % 65521u;
        }
    }
    put_be32(z + o, (b << 16) | a);
    o += 4;
    unsigned char ihdr[13];
    put_be32(ihdr, (uint32_t)w);
    put_be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* truecolour */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    FILE *f = cli_temp_open(path); /* written whole: renamed when complete */
    int bad = !f;
    if (f) {
        bad = fwrite(sig, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) ||
              png_chunk(f, "IDAT", z, o) || png_chunk(f, "IEND", NULL, 0);
        if (bad)
            cli_temp_abort(f);
        else
            bad = cli_temp_commit(f) != 0;
    }
    free(z);
    return bad ? -1 : 0;
}

/* Jet colour map: dark blue (0) .. red (1). */
void cli_jet(double t, unsigned char *c)
{
    const double r = 1.5 - fabs(4 * t - 3), g = 1.5 - fabs(4 * t - 2), b = 1.5 - fabs(4 * t - 1);
    c[0] = (unsigned char)lround(255 * (r < 0 ? 0 : r > 1 ? 1 : r));
    c[1] = (unsigned char)lround(255 * (g < 0 ? 0 : g > 1 ? 1 : g));
    c[2] = (unsigned char)lround(255 * (b < 0 ? 0 : b > 1 ? 1 : b));
}

/* Updates per cell, summed over block x block cells per pixel (exact: each footprint adds
 * its overlap with a block), log colour scale (jet; black: never updated), grid row 0 at the
 * top.  touched: the picture spans only the bounding box of the updated cells. */
static int gr_write_intensity(const char *prog, const char *path, const gr_data *g, int touched,
                              gr_intensity *info)
{
    const pk_grid_params *p = &g->p;
    const size_t n = g->d.num_vis;
    int x0 = 0, y0 = 0, x1 = p->grid_size - 1, y1 = p->grid_size - 1, gu, gv;
    if (touched) {
        x0 = y0 = INT_MAX;
        x1 = y1 = INT_MIN;
        for (size_t i = 0; i < n; ++i) {
            const int s = pk_grid_locate(p, g->support, &g->d, i, &gu, &gv);
            if (s < 0) continue;
            x0 = gu - s < x0 ? gu - s : x0;
            x1 = gu + s > x1 ? gu + s : x1;
            y0 = gv - s < y0 ? gv - s : y0;
            y1 = gv + s > y1 ? gv + s : y1;
        }
        if (x0 > x1) x0 = y0 = 0, x1 = y1 = 0; /* nothing gridded: one black pixel */
    }
    const int ext = (x1 - x0 > y1 - y0 ? x1 - x0 : y1 - y0) + 1;
    const int block = (ext + GR_PNG_MAX - 1) / GR_PNG_MAX;
    const int w = (x1 - x0) / block + 1, h = (y1 - y0) / block + 1;
    double *cnt = calloc((size_t)w * h, sizeof *cnt);
    unsigned char *rgb = malloc(3 * (size_t)w * h);
    if (!cnt || !rgb) {
        free(cnt);
        free(rgb);
        fprintf(stderr, "%s: out of host memory for the intensity picture\n", prog);
        return CLI_EXIT_FAIL;
    }
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
        const int s = pk_grid_locate(p, g->support, &g->d, i, &gu, &gv);
        if (s < 0) continue;
        const int ya = gv - s - y0, yb = gv + s - y0, xa = gu - s - x0, xb = gu + s - x0;
        for (int by = ya / block; by <= yb / block; ++by) {
            const int r0 = by * block > ya ? by * block : ya;
            const int r1 = by * block + block - 1 < yb ? by * block + block - 1 : yb;
            for (int bx = xa / block; bx <= xb / block; ++bx) {
                const int c0 = bx * block > xa ? bx * block : xa;
                const int c1 = bx * block + block - 1 < xb ? bx * block + block - 1 : xb;
                cnt[(size_t)by * w + bx] += (double)(r1 - r0 + 1) * (c1 - c0 + 1);
            }
        }
        total += (2.0 * s + 1) * (2.0 * s + 1);
    }
    double mx = 0;
    for (size_t k = 0; k < (size_t)w * h; ++k) mx = cnt[k] > mx ? cnt[k] : mx;
    const double lmax = mx > 1 ? log(mx) : 1;
    for (size_t k = 0; k < (size_t)w * h; ++k) {
        if (cnt[k] <= 0)
            rgb[3 * k] = rgb[3 * k + 1] = rgb[3 * k + 2] = 0;
        else
            cli_jet(log(cnt[k]) / lmax, rgb + 3 * k);
    }
    free(cnt);
    const int bad = cli_png_write(path, w, h, rgb);
    free(rgb);
    if (bad) return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    info->width = w;
    info->height = h;
    info->block = block;
    info->x0 = x0;
    info->y0 = y0;
    info->max_updates = mx;
    info->total_updates = total;
    return 0;
}

/* ---- export of the kernel stack (FULL layout, for inspection) -------------------------- */
static int gr_export_kernels(const char *prog, const char *dir, const gr_data *g)
{
    const pk_grid_params *p = &g->p;
    const int P = p->num_w_planes;
    float *full = NULL;
    const float *out = g->kernels;
    int half = p->conv_size_half;
    if (p->kernel_layout == PK_GRID_KERNELS_COMPACT) {
        pk_grid_params fp = *p; /* half: the largest plane's corner */
        fp.kernel_layout = PK_GRID_KERNELS_FULL;
        fp.conv_size_half = 1;
        for (int i = 0; i < P; ++i)
            if (kernel_m(p, g->support[i]) > fp.conv_size_half)
                fp.conv_size_half = kernel_m(p, g->support[i]);
        half = fp.conv_size_half;
        full = malloc(2 * sizeof(float) * (size_t)half * half * P);
        if (!full) {
            fprintf(stderr, "%s: out of host memory for the full kernel stack\n", prog);
            return CLI_EXIT_FAIL;
        }
        const pk_status s = pk_grid_expand_kernels(&fp, g->support, g->kernels, full);
        if (s != PK_OK) {
            free(full);
            return gg_error(prog, s);
        }
        out = full;
    }
    const size_t kshape[3] = {(size_t)P, (size_t)half, (size_t)half}, sshape[1] = {(size_t)P};
    char path[4096];
    FILE *pf;
    cli_json j;
    int rc = cli_write_npy(prog, dir, "kernels.npy", PK_DTYPE_C64, 3, kshape, out);
    if (!rc) rc = cli_write_npy(prog, dir, "support.npy", PK_DTYPE_I32, 1, sshape, g->support);
    free(full);
    if (rc || (rc = cli_json_open(prog, dir, "kernels.json", "grid", path, sizeof path, &pf, &j)))
        return rc;
    cj_str(&j, "kernel_layout", "full");
    cj_int(&j, "num_w_planes", P);
    cj_int(&j, "conv_size_half", half);
    cj_int(&j, "oversample", p->oversample);
    cj_num(&j, "w_scale", p->w_scale);
    cj_num(&j, "cell_size_rad", p->cell_size_rad);
    cj_int(&j, "grid_size", p->grid_size);
    cj_str(&j, "note", "kernels.npy: complex64 [plane][iy][ix], first quadrant, index 0 = "
           "kernel centre; samples outside a plane's (oversample/2 + support*oversample + 1)^2 "
           "corner are never read and may be zero");
    return cli_json_close(prog, path, pf, &j);
}


/* ---- verification against the double reference --------------------------------------- */
/* Float grid against the double reference grid (2 G^2 values each): norm-wise error and the
 * differ's element-wise figures (rtol, zero 1e-10) in one pass. */
static void gr_compare(const float *x, const double *y, size_t n, double rtol, pk_diff_report *r)
{
    double num = 0, den = 0, maxrel = 0, maxabs = 0;
    size_t failed = 0, first = (size_t)-1;
#pragma omp parallel for reduction(+ : num, den, failed) reduction(max : maxrel, maxabs) \
    schedule(static)
    for (size_t i = 0; i < n; ++i) {
        const double a = x[i], b = y[i], d = fabs(a - b);
        num += d * d;
        den += b * b;
        maxabs = d > maxabs ? d : maxabs;
        const double base = fabs(b) > 1e-10 ? fabs(b) : fabs(a) > 1e-10 ? fabs(a) : 0;
        if (base > 0) {
            maxrel = d / base > maxrel ? d / base : maxrel;
            failed += d / base > rtol;
        }
    }
    for (size_t i = 0; failed && i < n; ++i) {
        const double a = x[i], b = y[i], d = fabs(a - b);
        const double base = fabs(b) > 1e-10 ? fabs(b) : fabs(a) > 1e-10 ? fabs(a) : 0;
        if (base > 0 && d / base > rtol) {
            first = i;
            break;
        }
    }
    memset(r, 0, sizeof *r);
    r->count = n;
    r->num_failed = failed;
    r->first_fail = first;
    r->max_rel_err = maxrel;
    r->max_abs_err = maxabs;
    r->norm_rel_err = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
    r->equal = r->norm_rel_err <= rtol;
}

/* ---- run --------------------------------------------------------------------------------- */
/* The plan keeps only the kernels (bench: resident); each run grids the visibilities into a
 * zeroed grid, so there is nothing to upload or download. */
static pk_status gr_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    gr_data *g = data;
    switch (op) {
    case CLI_ONESHOT:
        g->norm = 0;
        return pk_grid(ctx, &g->p, variant, g->support, g->kernels, &g->d, g->grid, &g->norm,
                       &g->skipped, info);
    case CLI_REFERENCE: { /* the double grid (zeroed), its norm, num_skipped and time */
        const double t0 = cli_now_s();
        g->chk.norm_ref = 0;
        pk_status s = pk_grid_reference_f64(&g->p, g->support, g->kernels, &g->d, g->ref,
                                            &g->chk.norm_ref, &g->chk.skipped_ref);
        g->chk.ref_s = cli_now_s() - t0;
        return s;
    }
    case CLI_PLAN_CREATE:
        return pk_grid_plan_create((pk_grid_plan **)plan, ctx, &g->p, variant, g->support,
                                   g->kernels, info);
    case CLI_PLAN_RUN:
        memset(g->grid, 0, 2 * (size_t)g->p.grid_size * g->p.grid_size * sizeof *g->grid);
        g->norm = 0;
        return pk_grid_plan_run(*plan, &g->d, g->grid, &g->norm, &g->skipped, info);
    case CLI_PLAN_DESTROY: pk_grid_plan_destroy(*plan); break;
    case CLI_PLAN_UPLOAD:
    case CLI_PLAN_DOWNLOAD: break;
    }
    return PK_OK;
}

/* The verdict: the grid norm-wise, the norm and num_skipped; "equal" the whole verdict,
 * failures named as [v][u][re/im]. */
static pk_status gr_verify(const void *args, void *data, cli_verdict *v)
{
    gr_data *g = data;
    gr_check *c = &g->chk;
    const size_t G = (size_t)g->p.grid_size;
    gr_compare(g->grid, g->ref, 2 * G * G, v->rtol, &c->rep);
    c->norm_rel_diff = c->norm_ref != 0 ? fabs(g->norm - c->norm_ref) / fabs(c->norm_ref)
                                        : fabs(g->norm);
    c->skipped_equal = g->skipped == c->skipped_ref;
    c->equal = c->rep.equal && c->norm_rel_diff <= GR_NORM_RTOL && c->skipped_equal;
    g->verified = 1;
    v->rep = c->rep;
    v->rep.equal = c->equal;
    snprintf(v->note, sizeof v->note, "norm rel diff %.3g, num_skipped %s", c->norm_rel_diff,
             c->skipped_equal ? "equal" : "DIFFERS");
    v->norm = 1;
    v->shape[0] = v->shape[1] = G;
    v->shape[2] = 2;
    v->ndim = 3;
    return PK_OK;
}

/* What --intensity and --export-kernels ask for, --out or not. */
static int gr_write_outputs(cli_call *c, const char *dir, const void *data)
{
    gr_args *a = c->args;
    const gr_data *g = data;
    int rc;
    if (a->png && (rc = gr_write_intensity(c->prog, a->png, g, a->touched, &a->png_info)))
        return rc;
    return a->export_dir ? gr_export_kernels(c->prog, a->export_dir, g) : 0;
}

void gr_stages_json(cli_json *j, int n, const char (*name)[16], const double *s)
{
    cj_open(j, "stages", '{');
    for (int k = 0; k < n && k < 8; ++k) cj_num(j, name[k], s[k]);
    cj_close(j);
}

static void gr_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const gr_args *a = args;
    const gr_data *g = data;
    const double updates = info->flops / GR_FLOPS_PER_UPDATE;
    cj_str(j, "dataset", g->dataset);
    cj_int(j, "num_vis", (long long)g->d.num_vis);
    cj_int(j, "grid_size", g->p.grid_size);
    cj_int(j, "num_w_planes", g->p.num_w_planes);
    cj_int(j, "max_support", g->max_support);
    cj_int(j, "oversample", g->p.oversample);
    cj_str(j, "kernel_layout", cli_name_of(&gr_layouts, g->p.kernel_layout));
    cj_num(j, "norm", g->norm);
    cj_int(j, "num_skipped", (long long)g->skipped);
    cj_num(j, "updates", updates);
    cj_num(j, "vis_per_s", cli_rate((double)g->d.num_vis, info->kernel_s));
    cj_num(j, "updates_per_s", cli_rate(updates, info->kernel_s));
    gr_stages_json(j, info->num_stages, info->stage_name, info->stage_s);
    if (g->verified) { /* the figures beyond the common "verify" */
        const gr_check *c = &g->chk;
        cj_open(j, "verify", '{');
        cj_bool(j, "grid_equal", c->rep.equal);
        cj_num(j, "norm_ref", c->norm_ref);
        cj_num(j, "norm_rel_diff", c->norm_rel_diff);
        cj_num(j, "norm_rtol", GR_NORM_RTOL);
        cj_int(j, "num_skipped_ref", (long long)c->skipped_ref);
        cj_bool(j, "num_skipped_equal", c->skipped_equal);
        cj_num(j, "reference_seconds", c->ref_s);
        cj_close(j);
    }
    if (a->png) {
        const gr_intensity *in = &a->png_info;
        cj_open(j, "intensity", '{');
        cj_str(j, "path", a->png);
        cj_int(j, "width", in->width);
        cj_int(j, "height", in->height);
        cj_int(j, "block", in->block);
        cj_int(j, "x0", in->x0);
        cj_int(j, "y0", in->y0);
        cj_num(j, "max_updates_per_pixel", in->max_updates);
        cj_num(j, "total_updates", in->total_updates);
        cj_close(j);
    }
}

/* ---- bench: every variant on the data set of the size, kernels resident in the plan --- */
static void gr_describe(const cli_bench_result *res)
{
    const gr_data *g = res->data[0];
    printf("grid %s: %s --scale %g: %zu visibilities, %d planes (supports up to %d), grid %d^2, "
           "compact kernels; generated in %.1f s, double reference %.1f s;\nkernels resident in "
           "the plan, visibilities passed per run; verified: " GR_VERIFY_RULE ", rtol %g\n",
           res->req->size, g->dataset, ((const gr_args *)res->args[0])->scale, g->d.num_vis,
           g->p.num_w_planes, g->max_support, g->p.grid_size, g->gen_s, g->chk.ref_s, GR_RTOL);
}

/* The data set and how it was made, the same for every row. */
static void gr_bench_json(cli_json *j, const cli_bench_result *res)
{
    const gr_data *g = res->data[0];
    cj_str(j, "dataset", g->dataset);
    cj_num(j, "scale", ((const gr_args *)res->args[0])->scale);
    cj_num(j, "generate_seconds", g->gen_s);
    cj_num(j, "reference_seconds", g->chk.ref_s);
    cj_int(j, "host_threads", cli_host_threads(res->req->threads));
    cj_str(j, "updates_model", "grid-point updates = sum over gridded visibilities of "
           "(2 support + 1)^2 = flops / 8");
}

/* After the driver's table: the NAG report's units, the tiled variants' stages (of the
 * fastest timed run) and the NAG report's figures. */
static void gr_report(cli_bench_result *res)
{
    const gr_data *g = res->data[0];
    double serial_ups = NAN;
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status == CLI_ROW_OK && strcmp(r->variant, "serial") == 0)
            serial_ups = cli_rate(r->info.flops / GR_FLOPS_PER_UPDATE, r->t_min);
    }
    printf("\n%-7s  %-13s  %10s  %11s  %9s   (at the best kernel time)\n", "backend", "variant",
           "Mvis/s", "Gupdates/s", "x serial");
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status != CLI_ROW_OK) continue;
        const double ups = cli_rate(r->info.flops / GR_FLOPS_PER_UPDATE, r->t_min);
        printf("%-7s  %-13s  %10.3f  %11.3f  %9.2f\n", pk_backend_name(r->backend), r->variant,
               cli_rate((double)g->d.num_vis, r->t_min) / 1e6, ups / 1e9, ups / serial_ups);
    }
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status != CLI_ROW_OK || r->info.num_stages <= 1) continue;
        printf("stages %s %s (ms):", pk_backend_name(r->backend), r->variant);
        for (int k = 0; k < r->info.num_stages && k < 8; ++k)
            printf(" %s %.2f", r->info.stage_name[k], 1e3 * r->info.stage_s[k]);
        printf("\n");
    }
    const int nt = cli_host_threads(res->req->threads);
    printf("note: NAG report (Xeon, 24 cores; gridding only): synthetic serial 4980 ms "
           "(0.43 Mvis/s), 24 threads atomic 1040 ms (0.086 Mvis/s per core),\n"
           "      tiled 198 ms (0.45 Mvis/s per core); el82-70 tiled 2211 ms (0.59 Mvis/s per "
           "core; ~4.4 G updates/s, 0.18 per core); P100: synthetic 74 ms, el82-70 553 ms.\n"
           "      Here the host variants ran on %d thread%s: divide their Mvis/s and "
           "Gupdates/s by %d for the per-core figures.\n", nt, nt == 1 ? "" : "s", nt);
}

const cli_kernel cli_kernel_grid = {
    .name = "grid",
    .proxy = gr_proxy,
    .summary = "w-projection convolution gridding of visibilities (OSKAR's wproj), SKA data sets",
    .run_help =
        "w-projection convolution gridding (docs/KERNELS.md 1; OSKAR's oskar_grid_wproj_f):\n"
        "every visibility's weighted value times its w-kernel (2 support + 1)^2 is added onto\n"
        "the grid around its (u, v) cell.\n"
        "Files: --in DIR reads DIR/uu.npy, vv.npy, ww.npy (float32 [n], wavelengths), vis.npy\n"
        "(complex64 [n]), weight.npy (float32 [n]), support.npy (int32 [planes]), kernels.npy\n"
        "(complex64 [planes][half][half] full, or 1-D compact) and DIR/params.json: grid_size,\n"
        "oversample, cell_size_rad and w_scale are needed there or as options; num_w_planes,\n"
        "conv_size_half and kernel_layout are checked against the files ('portkern gen grid'\n"
        "writes them).  --out DIR writes DIR/grid.npy (complex64 [grid_size][grid_size]);\n"
        "--intensity and --export-kernels write with or without --out.\n"
        "\"grid\" in the JSON line: dataset, num_vis, grid_size, num_w_planes, max_support,\n"
        "oversample, kernel_layout, norm, num_skipped, updates (grid-point updates = flops /\n"
        "8), vis_per_s, updates_per_s (over kernel_seconds), stages {name: seconds} (tiled\n"
        "variants); --verify adds verify {grid_equal, norm_ref, norm_rel_diff, norm_rtol,\n"
        "num_skipped_ref, num_skipped_equal, reference_seconds} (the common \"verify\" is\n"
        "norm-wise, its equal the whole verdict, num_failed element-wise for information);\n"
        "--intensity adds intensity {path, width, height, block, x0, y0,\n"
        "max_updates_per_pixel, total_updates}.\n"
        "Bad parameters (supports wider than the grid, a compact stack of another length) are\n"
        "exit status 2.\n",
    .gen_help =
        "Write a gridding data set (docs/KERNELS.md 1.7): DIR/uu.npy, vv.npy, ww.npy (float32\n"
        "[n], wavelengths), vis.npy (complex64 [n]), weight.npy (float32 [n], uniform weighting),\n"
        "kernels.npy (complex64; compact: 1-D, per plane the (os/2 + support*os + 1)^2 corner\n"
        "the gridder reads; full: [planes][half][half], half = the largest plane's corner),\n"
        "support.npy (int32 [planes]) and params.json (the gridding parameters, dataset, scale,\n"
        "seed, then what the set is: counts, layout, recipe), which 'portkern run grid --in\n"
        "DIR' reads.\n"
        "\n"
        "Data sets (published counts of docs/KERNELS.md, reproduced):\n"
        "  el82-70, el56-82, el30-56: SKA1-LOW (512 stations, site lon 116.7644482, lat\n"
        "      -26.82472208), 130,816 baselines x 240 dumps = 31,395,840 visibilities at 100\n"
        "      MHz, source through zenith (declination = latitude), hour angles of the named\n"
        "      elevation range; image 15000 px of 6.39954059065e-6 rad on an 18000 grid,\n"
        "      oversample 4, FFT 2048; 339 / 601 / 922 planes, max w 7083.386050 (published) /\n"
        "      12531 / 17175 (chosen to give the published maximum supports) -> supports\n"
        "      4..44 / 4..72 / 4..95; |w| beyond max w (a few in 1e5) use the last plane\n"
        "  synthetic: 2,152,800 random uvw on a 10000 grid (image 8000, cell 4.2e-6 rad), 714\n"
        "      planes, supports 4..36: 60% in a uniform central halo (|uv| <= 435 cells), 40%\n"
        "      with density ~1/|uv| to 1450 cells, |w| <= 40500 growing with |uv|\n"
        "  small: the synthetic recipe on a 1024 grid: 50,000 visibilities, 32 planes,\n"
        "      supports 4..16 (tests, 'portkern bench --size small', run without --in)\n"
        "Visibilities: three point sources, V = sum S exp(-2 pi i (u l + v m - w (n - 1)));\n"
        "w-kernels: prolate spheroidal taper x exp(i 2 pi w (sqrt(1 - l^2 - m^2) - 1)), FFT\n"
        "(FFTW), first quadrant, support where |K| on the axes falls below 1e-3 of plane 0's\n"
        "peak, plane 0 summing to 1 at grid-cell stride, w_scale = (planes - 1)^2 / max w.\n"
        "The SKA stacks take seconds (planes in parallel); el82-70's compact stack is 21 MB.\n"
        "A bad --layout file, or a build without FFTW (double), is exit status 2.\n",
    .variants = pk_grid_variants,
    .args_size = sizeof(gr_args),
    .data_size = sizeof(gr_data),
    .params = gr_params,
    .preset = gr_preset,
    .resolve = gr_resolve,
    .arrays = gr_arrays,
    .load = gr_load,
    .generate = gr_make,
    .write_inputs = gr_write_inputs,
    .params_info = gr_params_info,
    .info_keys = gr_info_keys,
    .call = gr_call,
    .rtol = GR_RTOL,
    .verify_rule = GR_VERIFY_RULE,
    .check = gr_verify,
    .write_outputs = gr_write_outputs,
    .run_json = gr_run_json,
    .data_free = gr_data_free,
    .flops_model = "8 flop per grid-point update (a complex multiply-add)",
    .bytes_model = "24 B per grid-point update: kernel sample 8, grid cell 16 (read, written)",
    .describe = gr_describe,
    .report = gr_report,
    .bench_json = gr_bench_json,
};
