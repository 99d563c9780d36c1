/* cli_grid.c - the grid commands of portkern: run, gen, and its part of bench (README.md,
 * "Command line"; docs/KERNELS.md section 1).  portkern.c hands a command line to these when
 * its kernel operand is "grid".
 *
 * Files (gen writes them, run --in reads them): uu.npy, vv.npy, ww.npy float32 [n]
 * (wavelengths), vis.npy complex64 [n], weight.npy float32 [n], support.npy int32 [planes],
 * kernels.npy complex64 [planes][half][half] (FULL) or complex64 [count] (COMPACT: per plane
 * the m x m corner the gridder reads, m = oversample/2 + support*oversample + 1), and
 * params.json (oversample, cell_size_rad, w_scale, grid_size, num_w_planes, conv_size_half,
 * kernel_layout, dataset, scale, seed, ...).  run --out writes grid.npy complex64 [G][G].
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
 * Counts: a grid-point update is one complex multiply-add (8 flops, info.flops / 8);
 * visibilities/s and updates/s are over the gridding time including host-device transfers
 * (kernel_seconds + transfer_seconds), as the NAG report's tables. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli_common.h"
#include "gen/grid_gen.h"

#define MAIN_PROG "portkern"
#define GR_KERNEL "grid"
#define GR_RTOL 1e-5
#define GR_NORM_RTOL 1e-9
#define GR_DEFAULT_DATASET "small"
#define GR_PNG_MAX 2000 /* the intensity picture's largest side in pixels */
#define GR_VERIFY_RULE "||grid - ref||_2 / ||ref||_2 <= rtol (ref: double-accumulating " \
                       "reference), |norm - norm_ref| <= 1e-9 |norm_ref|, num_skipped exact"

#define SEEN_CLI 1
#define SEEN_JSON 2

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rate(double amount, double seconds)
{
    return seconds > 0 && amount >= 0 ? amount / seconds : NAN;
}

static void shape_str(const pk_array *a, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < a->ndim && used < len; ++k)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", k ? ", " : "", a->shape[k]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

static int gg_error(const char *prog, pk_status s, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", prog, pk_strerror(s), why);
    return s == PK_ENOMEM || s == PK_EINTERNAL ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
}

/* ---- the data of one run: generated in memory or read from DIR ----------------------- */
typedef struct gr_data {
    pk_grid_params p;
    pk_grid_data d;
    const int32_t *support;
    const float *kernels;
    int max_support;
    char dataset[4096]; /* params.json's name (<= 255 bytes) or the directory */
    /* owners */
    pk_array arr[7];
    pk_gg_vis vis;
    pk_gg_kernels gk;
    float *full;
} gr_data;

static void gr_data_free(gr_data *g)
{
    for (int k = 0; k < 7; ++k) pk_array_free(&g->arr[k]);
    pk_gg_vis_free(&g->vis);
    pk_gg_kernels_free(&g->gk);
    free(g->full);
    memset(g, 0, sizeof *g);
}

static int kernel_m(const pk_grid_params *p, int s) { return p->oversample / 2 + s * p->oversample + 1; }

/* Generate a data set in memory (kernels + visibilities); layout FULL or COMPACT. */
static int gr_generate(const char *prog, const pk_gg_vis_options *o, int layout, gr_data *g,
                       double *gen_s)
{
    char why[512];
    const double t0 = now_s();
    pk_status s = pk_gg_kernels_make(&o->ds->kp, &g->gk, why, sizeof why);
    if (s != PK_OK) return gg_error(prog, s, why);
    if ((s = pk_gg_vis_make(o, &g->vis, why, sizeof why)) != PK_OK) return gg_error(prog, s, why);
    pk_grid_params_init(&g->p);
    g->p.grid_size = o->ds->kp.grid_size;
    g->p.oversample = o->ds->kp.oversample;
    g->p.cell_size_rad = o->ds->kp.cell_size_rad;
    g->p.w_scale = g->gk.w_scale;
    g->p.num_w_planes = o->ds->kp.num_w_planes;
    g->p.kernel_layout = layout;
    g->support = g->gk.support;
    if (layout == PK_GRID_KERNELS_FULL) {
        int half;
        if ((s = pk_gg_kernels_full(&g->gk, &half, &g->full, why, sizeof why)) != PK_OK)
            return gg_error(prog, s, why);
        g->p.conv_size_half = half;
        g->kernels = g->full;
    } else {
        g->p.conv_size_half = 0;
        g->kernels = g->gk.compact;
    }
    for (int i = 0; i < g->p.num_w_planes; ++i)
        if (g->support[i] > g->max_support) g->max_support = g->support[i];
    g->d.num_vis = g->vis.num_vis;
    g->d.uu = g->vis.uu;
    g->d.vv = g->vis.vv;
    g->d.ww = g->vis.ww;
    g->d.vis = g->vis.vis;
    g->d.weight = g->vis.weight;
    snprintf(g->dataset, sizeof g->dataset, "%s", o->ds->name);
    if (gen_s) *gen_s = now_s() - t0;
    return 0;
}

/* ---- options ------------------------------------------------------------------------- */
typedef struct gr_args {
    /* gridding parameters (override params.json) */
    int grid_size, oversample, seen_grid, seen_os;
    double cell, w_scale;
    int seen_cell, seen_ws;
    int tile_size, central_radius;
    double tile_factor;
    /* generation */
    const char *dataset, *layout, *kernels;
    double scale;
    int seed, unit_vis, seen_dataset, seen_scale, seen_seed, seen_layout;
} gr_args;

static void gr_args_init(gr_args *a)
{
    memset(a, 0, sizeof *a);
    a->tile_factor = -1.0;
    a->scale = 1.0;
    a->seed = 1;
    a->kernels = "compact";
}

static int gr_gen_opts(cli_opt *o, int n, gr_args *a)
{
    n = cli_opt_add(o, n, "dataset", CLI_STRING, &a->dataset, &a->seen_dataset, 0, 0);
    n = cli_opt_add(o, n, "scale", CLI_DOUBLE, &a->scale, &a->seen_scale, DBL_MIN, 1.0);
    n = cli_opt_add(o, n, "seed", CLI_INT, &a->seed, &a->seen_seed, 0, INT_MAX);
    n = cli_opt_add(o, n, "layout", CLI_STRING, &a->layout, &a->seen_layout, 0, 0);
    return cli_opt_add(o, n, "unit-vis", CLI_FLAG, &a->unit_vis, NULL, 0, 0);
}

/* --dataset, --kernels and --layout checked; *ds, *layout_id set. */
static int gr_resolve_gen(const char *prog, const gr_args *a, const char *def,
                          const pk_gg_dataset **ds, int *layout_id)
{
    const char *name = a->dataset ? a->dataset : def;
    *ds = pk_gg_dataset_find(name);
    if (!*ds)
        return cli_usage_error(prog, "option --dataset: unknown data set '%s' (%s)", name,
                               pk_gg_dataset_names());
    if (strcmp(a->kernels, "compact") == 0)
        *layout_id = PK_GRID_KERNELS_COMPACT;
    else if (strcmp(a->kernels, "full") == 0)
        *layout_id = PK_GRID_KERNELS_FULL;
    else
        return cli_usage_error(prog, "option --kernels: '%s' is not full or compact", a->kernels);
    if (a->seen_layout && (*ds)->kind != PK_GG_SKA_TRACK)
        return cli_usage_error(prog, "option --layout: data set %s has no station layout (only "
                               "el82-70, el56-82, el30-56)", (*ds)->name);
    return 0;
}

int cli_grid_named(int argc, char **argv)
{
    static const char *const flags[] = {"verify", "unit-vis", "intensity-touched", "help", NULL};
    return cli_kernel_named(argc, argv, GR_KERNEL, flags);
}

/* ---- reading DIR ----------------------------------------------------------------------- */
static int json_int(const char *prog, const char *path, const cli_jobject *obj, const char *key,
                    int min, int *dst, int *seen)
{
    const cli_jvalue *v = cli_json_get(obj, key);
    if (!v) return 0;
    if (v->type != CLI_JNUM || v->num != floor(v->num) || v->num < min || v->num > INT_MAX)
        return cli_usage_error(prog, "%s: \"%s\" must be an integer in [%d, %d]", path, key, min,
                               INT_MAX);
    if (!seen || !*seen) {
        *dst = (int)v->num;
        if (seen) *seen = SEEN_JSON;
    }
    return 0;
}

static int json_num(const char *prog, const char *path, const cli_jobject *obj, const char *key,
                    double min, double *dst, int *seen)
{
    const cli_jvalue *v = cli_json_get(obj, key);
    if (!v) return 0;
    if (v->type != CLI_JNUM || !isfinite(v->num) || v->num < min)
        return cli_usage_error(prog, "%s: \"%s\" must be a finite number >= %g", path, key, min);
    if (!*seen) {
        *dst = v->num;
        *seen = SEEN_JSON;
    }
    return 0;
}

/* DIR/name as a 1-D array of dtype (n: 0 = any length, else that length). */
static int read_1d(const char *prog, const char *dir, const char *name, pk_dtype dtype, size_t n,
                   pk_array *a)
{
    char path[4096], shape[160];
    if (cli_join(path, sizeof path, dir, name)) return cli_usage_error(prog, "path too long: %s", dir);
    pk_status s = pk_npy_read(path, a);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    if (a->dtype != dtype || a->ndim != 1 || (n && a->shape[0] != n)) {
        const char *d = pk_dtype_descr(a->dtype);
        shape_str(a, shape, sizeof shape);
        if (n)
            return cli_usage_error(prog, "%s: expected '%s' [%zu], got '%s' with shape %s", path,
                                   pk_dtype_descr(dtype), n, d ? d : "?", shape);
        return cli_usage_error(prog, "%s: expected a 1-D '%s' array, got '%s' with shape %s",
                               path, pk_dtype_descr(dtype), d ? d : "?", shape);
    }
    return 0;
}

static int gr_read_dir(const char *prog, const char *dir, gr_args *a, gr_data *g)
{
    char path[4096], shape[160];
    cli_jobject *obj = NULL;
    char *text = NULL;
    int rc, num_planes = 0, half = 0, seen_planes = 0, seen_half = 0, layout_json = -1;
    pk_grid_params_init(&g->p);
    if (cli_join(path, sizeof path, dir, "params.json"))
        return cli_usage_error(prog, "path too long: %s", dir);
    if ((rc = cli_params_load(prog, path, GR_KERNEL, &obj, &text))) return rc;
    if (obj) {
        const cli_jvalue *v;
        if ((rc = json_int(prog, path, obj, "grid_size", 2, &a->grid_size, &a->seen_grid)) ||
            (rc = json_int(prog, path, obj, "oversample", 2, &a->oversample, &a->seen_os)) ||
            (rc = json_num(prog, path, obj, "cell_size_rad", 0, &a->cell, &a->seen_cell)) ||
            (rc = json_num(prog, path, obj, "w_scale", 0, &a->w_scale, &a->seen_ws)) ||
            (rc = json_int(prog, path, obj, "num_w_planes", 1, &num_planes, &seen_planes)) ||
            (rc = json_int(prog, path, obj, "conv_size_half", 0, &half, &seen_half)))
            goto done;
        if ((v = cli_json_get(obj, "kernel_layout"))) {
            if (v->type == CLI_JSTR && strcmp(v->str, "full") == 0)
                layout_json = PK_GRID_KERNELS_FULL;
            else if (v->type == CLI_JSTR && strcmp(v->str, "compact") == 0)
                layout_json = PK_GRID_KERNELS_COMPACT;
            else {
                rc = cli_usage_error(prog, "%s: \"kernel_layout\" must be \"full\" or \"compact\"",
                                     path);
                goto done;
            }
        }
        if ((v = cli_json_get(obj, "dataset")) && v->type == CLI_JSTR)
            snprintf(g->dataset, sizeof g->dataset, "%s", v->str);
    }
    if (!a->seen_grid || !a->seen_os || !a->seen_cell || !a->seen_ws) {
        rc = cli_usage_error(prog, "%s: grid_size, oversample, cell_size_rad and w_scale are "
                             "needed (params.json or --grid-size/--oversample/--cell-size/"
                             "--w-scale)", dir);
        goto done;
    }
    if (!g->dataset[0]) snprintf(g->dataset, sizeof g->dataset, "%s", dir);
    /* visibilities: uu sets n */
    if ((rc = read_1d(prog, dir, "uu.npy", PK_DTYPE_F32, 0, &g->arr[0]))) goto done;
    const size_t n = g->arr[0].shape[0];
    if ((rc = read_1d(prog, dir, "vv.npy", PK_DTYPE_F32, n, &g->arr[1])) ||
        (rc = read_1d(prog, dir, "ww.npy", PK_DTYPE_F32, n, &g->arr[2])) ||
        (rc = read_1d(prog, dir, "vis.npy", PK_DTYPE_C64, n, &g->arr[3])) ||
        (rc = read_1d(prog, dir, "weight.npy", PK_DTYPE_F32, n, &g->arr[4])) ||
        (rc = read_1d(prog, dir, "support.npy", PK_DTYPE_I32, 0, &g->arr[5])))
        goto done;
    const size_t planes = g->arr[5].shape[0];
    if (planes < 1 || planes > 1000000 || (seen_planes && (size_t)num_planes != planes)) {
        rc = cli_usage_error(prog, "%s/support.npy: %zu planes%s", dir, planes,
                             seen_planes ? " (params.json num_w_planes differs)" : "");
        goto done;
    }
    /* kernels: 3-D = FULL, 1-D = COMPACT (its length checked by pk_grid_kernel_count) */
    if (cli_join(path, sizeof path, dir, "kernels.npy")) {
        rc = cli_usage_error(prog, "path too long: %s", dir);
        goto done;
    }
    pk_array *k = &g->arr[6];
    pk_status s = pk_npy_read(path, k);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    const int layout = k->ndim == 3 ? PK_GRID_KERNELS_FULL : PK_GRID_KERNELS_COMPACT;
    if (k->dtype != PK_DTYPE_C64 || (k->ndim != 1 && k->ndim != 3) ||
        (k->ndim == 3 && (k->shape[0] != planes || k->shape[1] != k->shape[2] ||
                          k->shape[1] > INT_MAX))) {
        const char *d = pk_dtype_descr(k->dtype);
        shape_str(k, shape, sizeof shape);
        rc = cli_usage_error(prog, "%s: expected complex64 ('<c8') [%zu][half][half] (full) or "
                             "[count] (compact), got '%s' with shape %s", path, planes,
                             d ? d : "?", shape);
        goto done;
    }
    if (layout_json >= 0 && layout_json != layout) {
        rc = cli_usage_error(prog, "%s is %s but params.json says kernel_layout \"%s\"", path,
                             layout == PK_GRID_KERNELS_FULL ? "3-D (full)" : "1-D (compact)",
                             layout_json == PK_GRID_KERNELS_FULL ? "full" : "compact");
        goto done;
    }
    if (layout == PK_GRID_KERNELS_FULL && seen_half && (size_t)half != k->shape[1]) {
        rc = cli_usage_error(prog, "%s: half = %zu but params.json conv_size_half is %d", path,
                             k->shape[1], half);
        goto done;
    }
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
    for (size_t i = 0; i < planes; ++i)
        if (g->support[i] > g->max_support) g->max_support = g->support[i];
done:
    free(obj);
    free(text);
    return rc;
}

/* The gridding parameters from the options (after params.json), checked by the library
 * together with the supports and, for COMPACT, against the stack's length (compact_count
 * complex samples): an --oversample that changes the plane sizes must not make the library
 * read past the stack. */
static int gr_finish_params(const char *prog, const gr_args *a, gr_data *g, size_t compact_count)
{
    if (a->seen_grid) g->p.grid_size = a->grid_size;
    if (a->seen_os) g->p.oversample = a->oversample;
    if (a->seen_cell) g->p.cell_size_rad = a->cell;
    if (a->seen_ws) g->p.w_scale = a->w_scale;
    g->p.tile_size = a->tile_size;
    g->p.central_radius = a->central_radius;
    g->p.tile_factor = a->tile_factor;
    size_t count;
    pk_status s = pk_grid_kernel_count(&g->p, g->support, &count);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    if (g->p.kernel_layout == PK_GRID_KERNELS_COMPACT && compact_count != count)
        return cli_usage_error(prog, "compact kernels: %zu complex samples, but the stack of "
                               "these supports at oversample %d has %zu", compact_count,
                               g->p.oversample, count);
    return 0;
}

/* ---- the grid-intensity picture (NAG report, Listing 2: updates per cell) ------------- */
/* The geometry of docs/KERNELS.md 1 exactly as the library's (lib/ref/grid_ref.c pk_gr_locate):
 * float arithmetic, roundf, the guards before any float-to-int conversion.  Returns the
 * support and the centre cell, or -1 when the visibility is skipped. */
static int gr_footprint(const pk_grid_params *p, const int32_t *support, const pk_grid_data *d,
                        size_t i, int *gu, int *gv)
{
    const float uu = d->uu[i], vv = d->vv[i], ww = d->ww[i];
    if (!isfinite(uu) || !isfinite(vv) || !isfinite(ww) || !isfinite(d->vis[2 * i]) ||
        !isfinite(d->vis[2 * i + 1]) || !isfinite(d->weight[i]))
        return -1;
    const int g = p->grid_size;
    const float grid_scale = (float)(g * p->cell_size_rad);
    const float ru = roundf(-uu * grid_scale), rv = roundf(vv * grid_scale);
    if (!(fabsf(ru) <= (float)g) || !(fabsf(rv) <= (float)g)) return -1;
    const float wf = roundf(sqrtf(fabsf(ww * (float)p->w_scale)));
    const int w = wf < (float)(p->num_w_planes - 1) ? (int)wf : p->num_w_planes - 1;
    const int s = support[w];
    *gu = (int)ru + g / 2;
    *gv = (int)rv + g / 2;
    if (*gu - s < 0 || *gu + s >= g || *gv - s < 0 || *gv + s >= g) return -1;
    return s;
}

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
static int png_write(const char *path, int w, int h, const unsigned char *rgb)
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
    FILE *f = fopen(path, "wb");
    int bad = !f;
    if (f) {
        bad = fwrite(sig, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) ||
              png_chunk(f, "IDAT", z, o) || png_chunk(f, "IEND", NULL, 0);
        bad |= fclose(f) != 0;
    }
    free(z);
    return bad ? -1 : 0;
}

/* Jet colour map: dark blue (0) .. red (1). */
static void jet(double t, unsigned char *c)
{
    const double r = 1.5 - fabs(4 * t - 3), g = 1.5 - fabs(4 * t - 2), b = 1.5 - fabs(4 * t - 1);
    c[0] = (unsigned char)lround(255 * (r < 0 ? 0 : r > 1 ? 1 : r));
    c[1] = (unsigned char)lround(255 * (g < 0 ? 0 : g > 1 ? 1 : g));
    c[2] = (unsigned char)lround(255 * (b < 0 ? 0 : b > 1 ? 1 : b));
}

typedef struct gr_intensity {
    int width, height, block; /* picture pixels; grid cells per pixel side */
    int x0, y0;               /* grid cell at the top-left pixel */
    double max_updates;       /* largest count of one pixel (block sum) */
    double total_updates;
} gr_intensity;

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
            const int s = gr_footprint(p, g->support, &g->d, i, &gu, &gv);
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
        const int s = gr_footprint(p, g->support, &g->d, i, &gu, &gv);
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
            jet(log(cnt[k]) / lmax, rgb + 3 * k);
    }
    free(cnt);
    const int bad = png_write(path, w, h, rgb);
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
        half = 0;
        for (int i = 0; i < P; ++i) half = kernel_m(p, g->support[i]) > half ? kernel_m(p, g->support[i]) : half;
        full = calloc(2 * (size_t)half * half * P, sizeof *full);
        if (!full) {
            fprintf(stderr, "%s: out of host memory for the full kernel stack\n", prog);
            return CLI_EXIT_FAIL;
        }
        size_t off = 0;
        for (int i = 0; i < P; ++i) {
            const size_t m = (size_t)kernel_m(p, g->support[i]);
            for (size_t y = 0; y < m; ++y)
                memcpy(full + 2 * (((size_t)i * half + y) * half), g->kernels + 2 * (off + y * m),
                       2 * m * sizeof(float));
            off += m * m;
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
    if (rc) return rc;
    if (cli_join(path, sizeof path, dir, "kernels.json"))
        return cli_usage_error(prog, "path too long: %s", dir);
    if (!(pf = fopen(path, "w"))) return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    cj_init(&j, pf, 1);
    cj_open(&j, NULL, '{');
    cj_str(&j, "kernel", GR_KERNEL);
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
    cj_close(&j);
    if (fclose(pf) != 0) return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* ---- verification against the double reference --------------------------------------- */
typedef struct gr_check {
    pk_diff_report rep; /* norm-wise verdict, element-wise figures */
    double norm_ref, norm_rel_diff;
    int64_t skipped_ref;
    int skipped_equal, equal;
    double ref_s;
} gr_check;

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

static int gr_reference(const char *prog, const gr_data *g, double **ref, gr_check *c)
{
    const size_t cells = (size_t)g->p.grid_size * g->p.grid_size;
    *ref = calloc(2 * cells, sizeof **ref);
    if (!*ref) {
        fprintf(stderr, "%s: out of host memory for the %d x %d double reference grid (%.1f GB)\n",
                prog, g->p.grid_size, g->p.grid_size, 16e-9 * (double)cells);
        return CLI_EXIT_FAIL;
    }
    c->norm_ref = 0;
    const double t0 = now_s();
    pk_status s = pk_grid_reference_f64(&g->p, g->support, g->kernels, &g->d, *ref, &c->norm_ref,
                                        &c->skipped_ref);
    c->ref_s = now_s() - t0;
    if (s != PK_OK) {
        free(*ref);
        *ref = NULL;
        return cli_lib_error(MAIN_PROG, s);
    }
    return 0;
}

static void gr_check_grid(const gr_data *g, const float *grid, double norm, int64_t skipped,
                          const double *ref, double rtol, gr_check *c)
{
    gr_compare(grid, ref, 2 * (size_t)g->p.grid_size * g->p.grid_size, rtol, &c->rep);
    c->norm_rel_diff = c->norm_ref != 0 ? fabs(norm - c->norm_ref) / fabs(c->norm_ref)
                                        : fabs(norm);
    c->skipped_equal = skipped == c->skipped_ref;
    c->equal = c->rep.equal && c->norm_rel_diff <= GR_NORM_RTOL && c->skipped_equal;
}

/* ---- run -------------------------------------------------------------------------------- */
static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern run grid [options]\n"
        "w-projection convolution gridding (docs/KERNELS.md 1; OSKAR's oskar_grid_wproj_f):\n"
        "every visibility's weighted value times its w-kernel (2 support + 1)^2 is added onto\n"
        "the grid around its (u, v) cell.  Prints one JSON line on stdout.\n"
        "\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n"
        "  --variant V     serial: serial; openmp: omp-tiled, omp-atomic; opencl: opencl-tiled,\n"
        "                  opencl-atomic; cuda: cuda-tiled, cuda-atomic, hybrid (the names\n"
        "                  this build has: 'portkern-probe'); with --backend auto it selects\n"
        "                  the backend\n"
        "  --device N      device index within the backend\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --in DIR        read DIR/uu.npy, vv.npy, ww.npy (float32 [n], wavelengths),\n"
        "                  vis.npy (complex64 [n]), weight.npy (float32 [n]), support.npy\n"
        "                  (int32 [planes]), kernels.npy (complex64 [planes][half][half] full,\n"
        "                  or 1-D compact) and DIR/params.json ('portkern gen grid' writes\n"
        "                  them); the options below override params.json.  Without --in a\n"
        "                  data set is generated in memory (--dataset, default small)\n"
        "  --out DIR       write DIR/grid.npy (complex64 [grid_size][grid_size])\n"
        "  --verify        also run the double-accumulating reference and compare: "
        GR_VERIFY_RULE "\n"
        "  --rtol R        rtol of --verify (default 1e-5)\n"
        "  --intensity FILE.png  the NAG report's grid-intensity picture: updates per cell,\n"
        "                  log colour scale (jet; black = never updated), grid row 0 at the top,\n"
        "                  blocks of cells summed so that no side exceeds 2000 pixels\n"
        "  --intensity-touched   the picture spans the updated cells' bounding box only\n"
        "  --export-kernels DIR  write the kernel stack as DIR/kernels.npy (full layout),\n"
        "                  DIR/support.npy and DIR/kernels.json\n"
        "  --grid-size N --oversample N --cell-size RAD --w-scale S   gridding parameters\n"
        "  --tile-size N --central-radius N --tile-factor F   tuning of the tiled variants\n"
        "                  (0 or absent: the variant's default; central radius -1: no box)\n"
        "  --dataset NAME --scale F --seed S --layout FILE --unit-vis   without --in: the\n"
        "                  generated set ('portkern gen grid --help')\n"
        "\n"
        "The JSON line: kernel, backend, device, device_index, variant, dataset, num_vis,\n"
        "grid_size, num_w_planes, max_support, oversample, kernel_layout, seconds,\n"
        "kernel_seconds, transfer_seconds, setup_seconds, ms (kernel + transfer), norm,\n"
        "num_skipped, updates (grid-point updates = flops / 8), vis_per_s, updates_per_s,\n"
        "gflop_per_s, stages {name: seconds} (tiled variants), fell_back, reason; --verify adds\n"
        "\"verify\" {equal (grid, norm and num_skipped), mode \"norm\", rtol, grid_equal,\n"
        "max_rel_err, max_abs_err, norm_rel_err, num_failed (element-wise, for information),\n"
        "first_fail, norm_ref, norm_rel_diff, norm_rtol, num_skipped_ref, num_skipped_equal,\n"
        "reference_seconds}; --intensity adds intensity {path, width, height, block, x0, y0,\n"
        "max_updates_per_pixel}.\n"
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file (wrong dtype or shape), bad parameters, or unknown backend/variant/device.\n");
}

static void run_print(const gr_data *g, const pk_run_info *info, double norm, int64_t skipped,
                      const gr_check *c, double rtol, const gr_intensity *in, const char *png)
{
    cli_json j;
    const double t = info->kernel_s + info->transfer_s, updates = info->flops / 8;
    const size_t shape[3] = {(size_t)g->p.grid_size, (size_t)g->p.grid_size, 2};
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, GR_KERNEL, info);
    cj_str(&j, "dataset", g->dataset);
    cj_int(&j, "num_vis", (long long)g->d.num_vis);
    cj_int(&j, "grid_size", g->p.grid_size);
    cj_int(&j, "num_w_planes", g->p.num_w_planes);
    cj_int(&j, "max_support", g->max_support);
    cj_int(&j, "oversample", g->p.oversample);
    cj_str(&j, "kernel_layout", g->p.kernel_layout == PK_GRID_KERNELS_FULL ? "full" : "compact");
    cj_run_times(&j, info);
    cj_num(&j, "ms", t > 0 ? 1e3 * t : NAN);
    cj_num(&j, "norm", norm);
    cj_int(&j, "num_skipped", (long long)skipped);
    cj_num(&j, "updates", updates);
    cj_num(&j, "vis_per_s", rate((double)g->d.num_vis, t));
    cj_num(&j, "updates_per_s", rate(updates, t));
    cj_num(&j, "gflop_per_s", rate(info->flops / 1e9, t));
    cj_open(&j, "stages", '{');
    for (int k = 0; k < info->num_stages && k < 8; ++k) cj_num(&j, info->stage_name[k], info->stage_s[k]);
    cj_close(&j);
    cj_run_tail(&j, info);
    if (c) {
        /* cj_verify's fields, with "equal" the whole verdict (grid, norm, num_skipped) */
        char first[160];
        cj_open(&j, "verify", '{');
        cj_bool(&j, "equal", c->equal);
        cj_str(&j, "mode", "norm");
        cj_num(&j, "rtol", rtol);
        cj_bool(&j, "grid_equal", c->rep.equal);
        cj_num(&j, "max_rel_err", c->rep.max_rel_err);
        cj_num(&j, "max_abs_err", c->rep.max_abs_err);
        cj_num(&j, "norm_rel_err", c->rep.norm_rel_err);
        cj_int(&j, "num_failed", (long long)c->rep.num_failed);
        if (c->rep.num_failed > 0 && c->rep.first_fail != (size_t)-1) {
            pk_format_index(c->rep.first_fail, shape, 3, first, sizeof first);
            cj_str(&j, "first_fail", first);
        } else {
            cj_null(&j, "first_fail");
        }
        cj_num(&j, "norm_ref", c->norm_ref);
        cj_num(&j, "norm_rel_diff", c->norm_rel_diff);
        cj_num(&j, "norm_rtol", GR_NORM_RTOL);
        cj_int(&j, "num_skipped_ref", (long long)c->skipped_ref);
        cj_bool(&j, "num_skipped_equal", c->skipped_equal);
        cj_num(&j, "reference_seconds", c->ref_s);
        cj_close(&j);
    }
    if (png) {
        cj_open(&j, "intensity", '{');
        cj_str(&j, "path", png);
        cj_int(&j, "width", in->width);
        cj_int(&j, "height", in->height);
        cj_int(&j, "block", in->block);
        cj_int(&j, "x0", in->x0);
        cj_int(&j, "y0", in->y0);
        cj_num(&j, "max_updates_per_pixel", in->max_updates);
        cj_num(&j, "total_updates", in->total_updates);
        cj_close(&j);
    }
    cj_close(&j);
}

int cli_grid_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    gr_args a;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL, *png = NULL,
               *export_dir = NULL;
    int device = -1, threads = 0, verify = 0, touched = 0, n = 0, npos, rc = 0, layout_id;
    double rtol = GR_RTOL;
    cli_opt opts[40];
    char *pos[1], why[512];
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_run_info info;
    gr_data g;
    gr_check chk;
    gr_intensity inten;
    const pk_gg_dataset *ds = NULL;
    pk_gg_layout lay = {0, NULL};
    float *grid = NULL;
    double *ref = NULL, norm = 0;
    int64_t skipped = 0;
    pk_status s;

    gr_args_init(&a);
    memset(&g, 0, sizeof g);
    memset(&inten, 0, sizeof inten);
    n = cli_run_opts(opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    n = cli_opt_add(opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    n = cli_opt_add(opts, n, "intensity", CLI_STRING, &png, NULL, 0, 0);
    n = cli_opt_add(opts, n, "intensity-touched", CLI_FLAG, &touched, NULL, 0, 0);
    n = cli_opt_add(opts, n, "export-kernels", CLI_STRING, &export_dir, NULL, 0, 0);
    n = cli_opt_add(opts, n, "grid-size", CLI_INT, &a.grid_size, &a.seen_grid, 2, INT_MAX);
    n = cli_opt_add(opts, n, "oversample", CLI_INT, &a.oversample, &a.seen_os, 2, 1024);
    n = cli_opt_add(opts, n, "cell-size", CLI_DOUBLE, &a.cell, &a.seen_cell, DBL_MIN, DBL_MAX);
    n = cli_opt_add(opts, n, "w-scale", CLI_DOUBLE, &a.w_scale, &a.seen_ws, 0, DBL_MAX);
    n = cli_opt_add(opts, n, "tile-size", CLI_INT, &a.tile_size, NULL, 0, INT_MAX);
    n = cli_opt_add(opts, n, "central-radius", CLI_INT, &a.central_radius, NULL, -1, INT_MAX);
    n = cli_opt_add(opts, n, "tile-factor", CLI_DOUBLE, &a.tile_factor, NULL, 0, 1);
    n = gr_gen_opts(opts, n, &a);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc) return rc;
    if (in && (a.seen_dataset || a.seen_scale || a.seen_seed || a.seen_layout || a.unit_vis))
        return cli_usage_error(prog, "--dataset, --scale, --seed, --layout and --unit-vis "
                               "generate data: not with --in DIR");
    if (a.seen_os && a.oversample % 2)
        return cli_usage_error(prog, "option --oversample: must be even, got %d", a.oversample);
    if (a.seen_grid && a.grid_size % 2)
        return cli_usage_error(prog, "option --grid-size: must be even, got %d", a.grid_size);
    if (!in && (rc = gr_resolve_gen(prog, &a, GR_DEFAULT_DATASET, &ds, &layout_id))) return rc;
    if ((rc = cli_context_opts(prog, backend, device, threads, &copt))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    if (in) {
        if ((rc = gr_read_dir(prog, in, &a, &g))) goto done;
        if ((rc = gr_finish_params(prog, &a, &g, g.arr[6].shape[0]))) goto done;
    } else {
        if (a.layout && (s = pk_gg_layout_read(a.layout, &lay, why, sizeof why)) != PK_OK) {
            rc = gg_error(prog, s, why);
            goto done;
        }
        const pk_gg_vis_options o = {ds, a.scale, (uint64_t)a.seed, a.layout ? &lay : NULL,
                                     a.unit_vis};
        if ((rc = gr_generate(prog, &o, PK_GRID_KERNELS_COMPACT, &g, NULL))) goto done;
        if ((rc = gr_finish_params(prog, &a, &g, g.gk.plane_offset[g.p.num_w_planes])))
            goto done;
    }
    const size_t cells = (size_t)g.p.grid_size * g.p.grid_size; /* validated: no overflow */
    if (!(grid = calloc(2 * cells, sizeof *grid))) {
        fprintf(stderr, "%s: out of host memory for the %d x %d grid (%.1f GB)\n", prog,
                g.p.grid_size, g.p.grid_size, 8e-9 * (double)cells);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    s = pk_context_create(&ctx, &copt);
    if (s == PK_OK)
        s = pk_grid(ctx, &g.p, variant, g.support, g.kernels, &g.d, grid, &norm, &skipped, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        if ((rc = gr_reference(prog, &g, &ref, &chk))) goto done;
        gr_check_grid(&g, grid, norm, skipped, ref, rtol, &chk);
        free(ref);
        ref = NULL;
    }
    if (out) {
        const size_t shape[2] = {(size_t)g.p.grid_size, (size_t)g.p.grid_size};
        if ((rc = cli_write_npy(prog, out, "grid.npy", PK_DTYPE_C64, 2, shape, grid))) goto done;
    }
    free(grid);
    grid = NULL;
    if (png && (rc = gr_write_intensity(prog, png, &g, touched, &inten))) goto done;
    if (export_dir && (rc = gr_export_kernels(prog, export_dir, &g))) goto done;
    run_print(&g, &info, norm, skipped, verify ? &chk : NULL, rtol, &inten, png);
    rc = verify && !chk.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
done:
    pk_context_destroy(ctx);
    pk_gg_layout_free(&lay);
    gr_data_free(&g);
    free(grid);
    free(ref);
    return rc;
}

/* ---- gen -------------------------------------------------------------------------------- */
static void gen_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern gen grid --out DIR [options]\n"
        "Write a gridding data set (docs/KERNELS.md 1.7): DIR/uu.npy, vv.npy, ww.npy (float32\n"
        "[n], wavelengths), vis.npy (complex64 [n]), weight.npy (float32 [n], uniform weighting),\n"
        "kernels.npy (complex64; compact: 1-D, per plane the (os/2 + support*os + 1)^2 corner\n"
        "the gridder reads; full: [planes][half][half], half = the largest plane's corner),\n"
        "support.npy (int32 [planes]) and params.json, which 'portkern run grid --in DIR'\n"
        "reads.  DIR is created when missing.\n"
        "\n"
        "  --dataset NAME  synthetic (default), el82-70, el56-82, el30-56, small\n"
        "  --scale F       fraction in (0, 1] (default 1): SKA sets keep round(F * 240) time\n"
        "                  dumps spread over the same hour-angle range (so the same w range\n"
        "                  and kernels); random sets keep the first round(F * n) draws\n"
        "  --seed S        seed (default 1) of the visibility order (shuffle) and of the\n"
        "                  random sets' uvw: the same seed gives the same bytes\n"
        "  --layout FILE   SKA sets: station layout, one 'E N [U]' line per station in metres\n"
        "                  (blanks or commas between; blank and '#' lines skipped), e.g. the\n"
        "                  published SKA1-LOW v6 configuration; default: the built-in\n"
        "                  procedural 512-station layout with the v6 radial distribution\n"
        "  --kernels full|compact   kernel layout written (default compact)\n"
        "  --unit-vis      every visibility 1 + 0i (for the sum-rule invariant)\n"
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
        "      planes, supports 4..36: 60%% in a uniform central halo (|uv| <= 435 cells), 40%%\n"
        "      with density ~1/|uv| to 1450 cells, |w| <= 40500 growing with |uv|\n"
        "  small: the synthetic recipe on a 1024 grid: 50,000 visibilities, 32 planes,\n"
        "      supports 4..16 (tests, 'portkern bench --size small', run without --in)\n"
        "Visibilities: three point sources, V = sum S exp(-2 pi i (u l + v m - w (n - 1)));\n"
        "w-kernels: prolate spheroidal taper x exp(i 2 pi w (sqrt(1 - l^2 - m^2) - 1)), FFT\n"
        "(FFTW), first quadrant, support where |K| on the axes falls below 1e-3 of plane 0's\n"
        "peak, plane 0 summing to 1 at grid-cell stride, w_scale = (planes - 1)^2 / max w.\n"
        "The SKA stacks take seconds (planes in parallel); el82-70's compact stack is 21 MB.\n"
        "\n"
        "Exit status: 0 written; 1 out of memory; 2 bad option, bad layout file, unwritable\n"
        "DIR, or no FFTW (double) in this build.\n");
}

int cli_grid_gen(int argc, char **argv)
{
    const char *prog = "portkern gen";
    gr_args a;
    const char *out = NULL;
    int n = 0, npos, rc, layout_id;
    cli_opt opts[20];
    char *pos[1], path[4096], why[512];
    const pk_gg_dataset *ds;
    pk_gg_layout lay = {0, NULL};
    gr_data g;
    double gen_s = 0;
    FILE *pf;
    cli_json j;
    pk_status s;

    gr_args_init(&a);
    memset(&g, 0, sizeof g);
    n = gr_gen_opts(opts, n, &a);
    n = cli_opt_add(opts, n, "kernels", CLI_STRING, &a.kernels, NULL, 0, 0);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 1, &npos);
    if (rc == CLI_HELP) {
        gen_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc) return rc;
    if (!out) return cli_usage_error(prog, "--out DIR is required");
    if ((rc = gr_resolve_gen(prog, &a, "synthetic", &ds, &layout_id))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    if (a.layout && (s = pk_gg_layout_read(a.layout, &lay, why, sizeof why)) != PK_OK)
        return gg_error(prog, s, why);
    const pk_gg_vis_options o = {ds, a.scale, (uint64_t)a.seed, a.layout ? &lay : NULL, a.unit_vis};
    if ((rc = gr_generate(prog, &o, layout_id, &g, &gen_s))) goto done;
    const size_t nv[1] = {g.d.num_vis}, ns[1] = {(size_t)g.p.num_w_planes};
    size_t kshape[3], count;
    if ((s = pk_grid_kernel_count(&g.p, g.support, &count)) != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (layout_id == PK_GRID_KERNELS_FULL) {
        kshape[0] = (size_t)g.p.num_w_planes;
        kshape[1] = kshape[2] = (size_t)g.p.conv_size_half;
    } else {
        kshape[0] = count;
    }
    if ((rc = cli_write_npy(prog, out, "uu.npy", PK_DTYPE_F32, 1, nv, g.d.uu)) ||
        (rc = cli_write_npy(prog, out, "vv.npy", PK_DTYPE_F32, 1, nv, g.d.vv)) ||
        (rc = cli_write_npy(prog, out, "ww.npy", PK_DTYPE_F32, 1, nv, g.d.ww)) ||
        (rc = cli_write_npy(prog, out, "vis.npy", PK_DTYPE_C64, 1, nv, g.d.vis)) ||
        (rc = cli_write_npy(prog, out, "weight.npy", PK_DTYPE_F32, 1, nv, g.d.weight)) ||
        (rc = cli_write_npy(prog, out, "support.npy", PK_DTYPE_I32, 1, ns, g.support)) ||
        (rc = cli_write_npy(prog, out, "kernels.npy", PK_DTYPE_C64,
                            layout_id == PK_GRID_KERNELS_FULL ? 3 : 1, kshape, g.kernels)))
        goto done;
    if ((rc = cli_params_open(prog, out, GR_KERNEL, path, sizeof path, &pf, &j))) goto done;
    int half = 0;
    for (int i = 0; i < g.p.num_w_planes; ++i)
        half = kernel_m(&g.p, g.support[i]) > half ? kernel_m(&g.p, g.support[i]) : half;
    cj_int(&j, "oversample", g.p.oversample);
    cj_num(&j, "cell_size_rad", g.p.cell_size_rad);
    cj_num(&j, "w_scale", g.p.w_scale);
    cj_int(&j, "grid_size", g.p.grid_size);
    cj_int(&j, "num_w_planes", g.p.num_w_planes);
    cj_int(&j, "conv_size_half", half);
    cj_str(&j, "kernel_layout", layout_id == PK_GRID_KERNELS_FULL ? "full" : "compact");
    cj_str(&j, "dataset", ds->name);
    cj_num(&j, "scale", a.scale);
    cj_int(&j, "seed", a.seed);
    cj_int(&j, "num_vis", (long long)g.d.num_vis);
    cj_int(&j, "max_support", g.max_support);
    cj_int(&j, "image_size", ds->kp.image_size);
    cj_int(&j, "fft_size", ds->kp.conv_size);
    cj_num(&j, "max_w", ds->kp.max_w);
    cj_num(&j, "max_abs_w_data", g.vis.max_abs_w);
    cj_int(&j, "num_beyond_max_w", (long long)g.vis.num_beyond_max_w);
    if (ds->kind == PK_GG_SKA_TRACK) {
        cj_int(&j, "num_stations", a.layout ? lay.num_stations : 512);
        cj_int(&j, "num_times", g.vis.num_times);
        cj_str(&j, "layout", a.layout ? a.layout : "procedural (built-in)");
        cj_num(&j, "frequency_hz", PK_GG_FREQ_HZ);
    }
    cj_bool(&j, "unit_vis", a.unit_vis);
    cj_str(&j, "recipe", ds->recipe);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    printf("wrote %s: %s, %zu visibilities, %d planes (supports %d..%d), %s kernels (%zu "
           "samples), grid %d, generated in %.1f s\n", out, ds->name, g.d.num_vis,
           g.p.num_w_planes, g.support[0], g.max_support,
           layout_id == PK_GRID_KERNELS_FULL ? "full" : "compact",
           layout_id == PK_GRID_KERNELS_FULL ? kshape[0] * kshape[1] * kshape[2] : count,
           g.p.grid_size, gen_s);
done:
    pk_gg_layout_free(&lay);
    gr_data_free(&g);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
enum { ROW_OK, ROW_SKIPPED, ROW_FAILED };

typedef struct gr_row {
    pk_backend_id backend;
    char device[128];
    char variant[32];
    int status;
    char reason[600];
    double best_s;   /* best kernel + transfer time of the timed runs */
    double updates;  /* grid-point updates of one run */
    int num_stages;  /* of the best run */
    char stage_name[8][16];
    double stage_s[8];
    int verified;
    double rel_err, norm_rel_diff;
    int skipped_equal;
} gr_row;

struct cli_gr_bench {
    const char *size;
    char dataset[32];
    double scale;
    int reps, threads;
    size_t num_vis;
    int grid_size, planes, max_support;
    double gen_s, ref_s;
    gr_row *rows;
    int nrows, cap;
};

static gr_row *add_row(cli_gr_bench *b, pk_backend_id be)
{
    if (b->nrows == b->cap) {
        const int cap = b->cap ? 2 * b->cap : 16;
        gr_row *rows = realloc(b->rows, (size_t)cap * sizeof *rows);
        if (!rows) return NULL;
        b->rows = rows;
        b->cap = cap;
    }
    gr_row *r = &b->rows[b->nrows++];
    memset(r, 0, sizeof *r);
    r->backend = be;
    return r;
}

static void row_fail(gr_row *r, const char *what, pk_status s)
{
    r->status = ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

/* Plan (kernels reordered/uploaded once), one untimed warm-up, reps timed runs into a zeroed
 * grid each, then the last grid against the reference. */
static void bench_variant(cli_gr_bench *b, pk_context *ctx, gr_row *r, const gr_data *g,
                          float *grid, const double *ref, gr_check *ck)
{
    pk_grid_plan *plan = NULL;
    pk_run_info info;
    const size_t cells = (size_t)g->p.grid_size * g->p.grid_size;
    double norm = 0;
    int64_t skipped = 0;
    pk_status s = pk_grid_plan_create(&plan, ctx, &g->p, r->variant, g->support, g->kernels, &info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        return;
    }
    snprintf(r->device, sizeof r->device, "%s", info.device_name);
    snprintf(r->reason, sizeof r->reason, "%s", info.reason);
    r->best_s = INFINITY;
    for (int i = 0; i <= b->reps; ++i) { /* i = 0: the untimed warm-up */
        memset(grid, 0, 2 * cells * sizeof *grid);
        norm = 0;
        if ((s = pk_grid_plan_run(plan, &g->d, grid, &norm, &skipped, &info)) != PK_OK) {
            row_fail(r, i ? "timed run" : "warm-up run", s);
            goto done;
        }
        const double t = info.kernel_s + info.transfer_s > 0 ? info.kernel_s + info.transfer_s
                                                             : info.wall_s;
        if (i > 0 && t < r->best_s) {
            r->best_s = t;
            r->updates = info.flops / 8;
            r->num_stages = info.num_stages < 8 ? info.num_stages : 8;
            memcpy(r->stage_name, info.stage_name, sizeof r->stage_name);
            memcpy(r->stage_s, info.stage_s, sizeof r->stage_s);
        }
    }
    gr_check_grid(g, grid, norm, skipped, ref, GR_RTOL, ck);
    r->verified = ck->equal;
    r->rel_err = ck->rep.norm_rel_err;
    r->norm_rel_diff = ck->norm_rel_diff;
    r->skipped_equal = ck->skipped_equal;
done:
    pk_grid_plan_destroy(plan);
}

static int host_threads(int threads)
{
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    return threads > 0 ? threads : 1;
#endif
}

static void print_rows(const cli_gr_bench *b)
{
    double serial_ups = NAN;
    for (int i = 0; i < b->nrows; ++i)
        if (b->rows[i].status == ROW_OK && strcmp(b->rows[i].variant, "serial") == 0)
            serial_ups = rate(b->rows[i].updates, b->rows[i].best_s);
    printf(GR_KERNEL " %s: %s --scale %g: %zu visibilities, %d planes (supports up to %d), "
           "grid %d^2, compact kernels; generated in %.1f s, double reference %.1f s;\n"
           "best of %d plan runs after 1 warm-up (kernels resident, visibilities passed per run; "
           "ms include host-device transfers); verified: " GR_VERIFY_RULE ", rtol %g\n",
           b->size, b->dataset, b->scale, b->num_vis, b->planes, b->max_support, b->grid_size,
           b->gen_s, b->ref_s, b->reps, GR_RTOL);
    printf("\n%-6s  %-7s  %-24s  %-13s  %10s  %10s  %11s  %9s  %9s  %s\n", "kernel", "backend",
           "device", "variant", "ms", "Mvis/s", "Gupdates/s", "x serial", "rel err", "verified");
    for (int i = 0; i < b->nrows; ++i) {
        const gr_row *r = &b->rows[i];
        printf("%-6s  %-7s  %-24.24s  %-13s  ", GR_KERNEL, pk_backend_name(r->backend),
               r->device[0] ? r->device : "-", r->variant[0] ? r->variant : "-");
        if (r->status == ROW_OK) {
            const double ups = rate(r->updates, r->best_s);
            printf("%10.2f  %10.3f  %11.3f  %9.2f  %9.2e  %s\n", 1e3 * r->best_s,
                   rate((double)b->num_vis, r->best_s) / 1e6, ups / 1e9, ups / serial_ups,
                   r->rel_err, r->verified ? "yes" : "NO");
        } else {
            printf("%10s  %10s  %11s  %9s  %9s  %s\n", "-", "-", "-", "-", "-",
                   r->status == ROW_SKIPPED ? "skipped" : "error");
        }
    }
    printf("\n");
    for (int i = 0; i < b->nrows; ++i) {
        const gr_row *r = &b->rows[i];
        if (r->status == ROW_OK && r->num_stages > 1) { /* the tiled variants' stages */
            printf("stages %s %s (ms):", pk_backend_name(r->backend), r->variant);
            for (int k = 0; k < r->num_stages; ++k)
                printf(" %s %.2f", r->stage_name[k], 1e3 * r->stage_s[k]);
            printf("\n");
        }
        if (r->status == ROW_SKIPPED)
            printf("%s skipped: %s\n", pk_backend_name(r->backend), r->reason);
        else if (r->status == ROW_FAILED)
            printf("%s %s error: %s\n", pk_backend_name(r->backend), r->variant, r->reason);
        else if (!r->verified)
            printf("%s %s NOT verified: rel err %.3g (rtol %g), norm rel diff %.3g, num_skipped "
                   "%s\n", pk_backend_name(r->backend), r->variant, r->rel_err, GR_RTOL,
                   r->norm_rel_diff, r->skipped_equal ? "equal" : "DIFFERS");
    }
    const int nt = host_threads(b->threads);
    printf("note: NAG report (Xeon, 24 cores; gridding only): synthetic serial 4980 ms "
           "(0.43 Mvis/s), 24 threads atomic 1040 ms (0.086 Mvis/s per core),\n"
           "      tiled 198 ms (0.45 Mvis/s per core); el82-70 tiled 2211 ms (0.59 Mvis/s per "
           "core; ~4.4 G updates/s, 0.18 per core).\n"
           "      Here the host variants ran on %d thread%s: divide their Mvis/s and "
           "Gupdates/s by %d for the per-core figures.\n", nt, nt == 1 ? "" : "s", nt);
}

int cli_grid_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                   cli_gr_bench **out)
{
    cli_gr_bench *b = calloc(1, sizeof *b);
    cli_bench_set set;
    gr_data g;
    gr_check ref_info, ck;
    float *grid = NULL;
    double *ref = NULL;
    int total, done = 0, rc = 0;
    const pk_gg_dataset *ds;

    memset(&set, 0, sizeof set);
    memset(&g, 0, sizeof g);
    *out = b;
    if (!b) goto nomem;
    b->size = size;
    b->reps = reps;
    b->threads = threads;
    /* small: ~50k visibilities on a 1024 grid; paper: el82-70 at a tenth of its dumps
     * (3.1 M visibilities on the 18000 grid); large: the whole el82-70 set */
    if (strcmp(size, "small") == 0) {
        ds = pk_gg_dataset_find("small");
        b->scale = 1;
    } else {
        ds = pk_gg_dataset_find("el82-70");
        b->scale = strcmp(size, "large") == 0 ? 1 : 0.1;
    }
    snprintf(b->dataset, sizeof b->dataset, "%s", ds->name);
    total = cli_bench_open(&set, backends, nb, threads, pk_grid_variants, GR_KERNEL);
    for (int i = 0; i < nb; ++i) {
        const pk_backend_id be = backends[i];
        if (set.nvars[be] > 0) continue;
        gr_row *r = add_row(b, be);
        if (!r) goto nomem;
        r->status = ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", set.skip[be]);
    }
    if (total > 0) {
        const pk_gg_vis_options o = {ds, b->scale, 1, NULL, 0};
        cli_progress(GR_KERNEL " data: %s --scale %g ...", ds->name, b->scale);
        if ((rc = gr_generate("portkern bench", &o, PK_GRID_KERNELS_COMPACT, &g, &b->gen_s)))
            goto done;
        b->num_vis = g.d.num_vis;
        b->grid_size = g.p.grid_size;
        b->planes = g.p.num_w_planes;
        b->max_support = g.max_support;
        cli_progress(GR_KERNEL " reference: double, %zu visibilities ...", g.d.num_vis);
        if ((rc = gr_reference("portkern bench", &g, &ref, &ref_info))) goto done;
        b->ref_s = ref_info.ref_s;
        if (!(grid = malloc(2 * (size_t)g.p.grid_size * g.p.grid_size * sizeof *grid))) goto nomem;
    }
    for (int i = 0; i < nb && total > 0; ++i) {
        const pk_backend_id be = backends[i];
        for (int v = 0; v < set.nvars[be]; ++v) {
            gr_row *r = add_row(b, be);
            if (!r) goto nomem;
            snprintf(r->variant, sizeof r->variant, "%s", set.vars[be][v]);
            cli_progress(GR_KERNEL " [%d/%d] %s %s ...", ++done, total, pk_backend_name(be),
                         r->variant);
            ck = ref_info; /* the reference's norm and num_skipped */
            bench_variant(b, set.ctx[be], r, &g, grid, ref, &ck);
        }
    }
    print_rows(b);
    rc = 0;
    for (int i = 0; i < b->nrows; ++i)
        if (b->rows[i].status == ROW_FAILED || (b->rows[i].status == ROW_OK && !b->rows[i].verified))
            rc = CLI_EXIT_FAIL;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    cli_bench_close(&set);
    gr_data_free(&g);
    free(grid);
    free(ref);
    return rc;
}

void cli_grid_bench_json_rows(const cli_gr_bench *b, cli_json *j)
{
    for (int i = 0; b && i < b->nrows; ++i) {
        const gr_row *r = &b->rows[i];
        const int ok = r->status == ROW_OK;
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", GR_KERNEL);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device);
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        cj_str(j, "dataset", b->dataset);
        cj_num(j, "scale", b->scale);
        cj_int(j, "num_vis", (long long)b->num_vis);
        cj_int(j, "grid_size", b->grid_size);
        cj_num(j, "seconds", ok ? r->best_s : NAN);
        cj_num(j, "ms", ok ? 1e3 * r->best_s : NAN);
        cj_num(j, "vis_per_s", ok ? rate((double)b->num_vis, r->best_s) : NAN);
        cj_num(j, "updates", ok ? r->updates : NAN);
        cj_num(j, "updates_per_s", ok ? rate(r->updates, r->best_s) : NAN);
        cj_open(j, "stages", '{');
        for (int k = 0; ok && k < r->num_stages; ++k) cj_num(j, r->stage_name[k], r->stage_s[k]);
        cj_close(j);
        cj_bool(j, "verified", ok && r->verified);
        if (ok) {
            cj_num(j, "norm_rel_err", r->rel_err);
            cj_num(j, "norm_value_rel_diff", r->norm_rel_diff);
            cj_bool(j, "num_skipped_equal", r->skipped_equal);
        }
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_grid_bench_json(const cli_gr_bench *b, cli_json *j)
{
    if (!b) return;
    cj_open(j, GR_KERNEL, '{');
    cj_str(j, "dataset", b->dataset);
    cj_num(j, "scale", b->scale);
    cj_int(j, "num_vis", (long long)b->num_vis);
    cj_int(j, "grid_size", b->grid_size);
    cj_int(j, "num_w_planes", b->planes);
    cj_int(j, "max_support", b->max_support);
    cj_num(j, "generate_seconds", b->gen_s);
    cj_num(j, "reference_seconds", b->ref_s);
    cj_int(j, "host_threads", host_threads(b->threads));
    cj_str(j, "timing", "best kernel + transfer time of reps plan runs after one warm-up");
    cj_str(j, "updates_model", "grid-point updates = sum over gridded visibilities of "
           "(2 support + 1)^2 = flops / 8");
    cj_str(j, "verify_rule", GR_VERIFY_RULE);
    cj_num(j, "rtol", GR_RTOL);
    cj_str(j, "nag_reference", "Xeon 24 cores: synthetic serial 4980 ms, atomic 1040 ms, tiled "
           "198 ms; el82-70 tiled 2211 ms; P100: synthetic 74 ms, el82-70 553 ms");
    cj_close(j);
}

void cli_grid_bench_free(cli_gr_bench *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}
