/* cli_image.c - image's and degrid's part of the portkern command line (tools/cli_kernel.h):
 * the dirty image of a grid data set and its adjoint, the model prediction (README.md,
 * "Command line"; docs/KERNELS.md section 7).  Both read what 'portkern gen grid' writes (run
 * --in DIR) or generate the same data sets in memory, through grid's hooks (tools/cli_grid.h):
 * their args start with a gr_args, their data with a gr_data.
 *
 * image: DIR/image.npy float32 [N][N] (row y, column x; pixel [N/2][N/2] the phase centre,
 * l = -(x - N/2) cell, m = +(y - N/2) cell); --fits also DIR/image.fits (pk_fits_write_image:
 * RA---SIN / DEC--SIN about --ra/--dec, CRPIX N/2 + 1, CDELT1 = -cell, CDELT2 = +cell in
 * degrees, FREQ axis, BUNIT JY/BEAM); --png FILE a preview.  degrid: DIR/vis.npy complex64
 * [n], the prediction of --model FILE (float32 [N][N]) at the data set's uvw.
 *
 * Verification (--verify, bench): against the serial backend's own result (pk_image /
 * pk_degrid on a serial context), norm-wise, ||x - ref||_2 / ||ref||_2 <= rtol 1e-4: the
 * other variants differ from serial only by the order of the grid's float sums (image) or
 * not at all (degrid's serial, omp-tiled and omp form every sum alike: 0 measured), and
 * docs/KERNELS.md 7.5 bounds either image against the exact pipeline by 0.7e-4 .. 1.3e-4 of
 * ||I|| (the tests check the serial one against another variant at twice that).  Measured on
 * the small set: omp-tiled and omp-atomic images 2.7e-6 from serial's.  The serial
 * variants themselves are checked against the references (pk_grid_reference_f64,
 * pk_degrid_reference, pk_degrid_reference_f64) at the bounds of 7.5 by tests/test_image.c. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_grid.h"

#define IM_RTOL 1e-4
#define IM_PNG_MAX 2000
#define IM_DEC_DEFAULT (-26.82472208) /* the SKA1-LOW site latitude: the generator's pointing */
#define IM_FREQ_DEFAULT 100e6         /* the generator's frequency */
#define IM_VERIFY_RULE "||x - ref||_2 / ||ref||_2 <= rtol (ref: the serial backend's own " \
                       "result, itself checked against the double references by test_image)"

typedef struct im_args {
    gr_args g;           /* first: the data set's parameters (tools/cli_grid.h) */
    int image_size;      /* params.json's (gen grid writes the data set's), or --image-size */
    double frequency_hz; /* params.json's (SKA sets) */
    int opt_image_size;  /* --image-size (or the preset's); 0: the data set's */
    double image_cell, ra, dec, freq;
    int fits;
    const char *png, *model;
    char vis_shape[32];  /* degrid: "n", the shape of vis.npy */
    /* what the run wrote, for the JSON line */
    char fits_path[4096];
    int fits_written, png_w, png_h, png_block;
} im_args;

typedef struct im_data {
    gr_data g; /* first: the data set (tools/cli_grid.h) */
    pk_image_params ip;
    float *image, *ref_image; /* image: image.npy, the serial reference */
    float *vis, *ref_vis;     /* degrid: vis.npy, the serial reference */
    pk_array model_arr;       /* degrid: --model */
    float *model;             /* degrid: the model read or generated */
    float *own_model;         /* degrid: the generated one */
    double norm, ref_s;
    int64_t skipped;
    int ref_of_grid; /* tune: the reference from grid's double reference grid (im_ref_from) */
} im_data;

static const char *const im_info_keys[] = {
    "num_vis", "max_support", "fft_size", "max_w", "max_abs_w_data", "num_beyond_max_w",
    "num_stations", "num_times", "layout", "unit_vis", "recipe", NULL};

#define IM_OFF(field) offsetof(im_args, field)
#define IM_SIZE_PARAMS                                                                         \
    {"image_size", CLI_P_INT, IM_OFF(image_size), 2, INT_MAX, 0, CLI_IN_PARAMS, NULL, NULL,    \
     NULL},                                                                                    \
    {"frequency_hz", CLI_P_DOUBLE, IM_OFF(frequency_hz), DBL_MIN, DBL_MAX, IM_FREQ_DEFAULT,    \
     CLI_IN_PARAMS, NULL, NULL, NULL},                                                         \
    {"image-size", CLI_P_INT, IM_OFF(opt_image_size), 2, INT_MAX, 0, CLI_IN_RUN, NULL, "N",    \
     "image side in pixels, even, at most the grid size (default: the data set's image "      \
     "size, params.json's image_size: 800 for small, 15000 for the SKA sets; else 5/6 of "    \
     "the grid; --preset small: 512)"},                                                       \
    {"image-cell", CLI_P_DOUBLE, IM_OFF(image_cell), DBL_MIN, DBL_MAX, 0, CLI_IN_RUN, NULL,    \
     "RAD", "pixel size in radians: the FFT fixes it to the grid's cell_size_rad, so only "    \
     "that value (to 1e-9) is accepted (a check of the data set)"},

static const cli_param im_params[] = {
    GR_DATA_PARAMS
    IM_SIZE_PARAMS
    {"fits", CLI_P_FLAG, IM_OFF(fits), 0, 1, 0, CLI_IN_RUN, NULL, NULL,
     "also write DIR/image.fits (needs --out DIR): the image with its celestial WCS"},
    {"ra", CLI_P_DOUBLE, IM_OFF(ra), -360, 360, 0, CLI_IN_RUN, NULL, "DEG --dec DEG",
     "phase centre of the FITS header in degrees (default RA 0: the data sets carry no "
     "right ascension, only hour angles; Dec -26.82472208: the SKA1-LOW latitude, the "
     "generator's source through zenith)"},
    {"dec", CLI_P_DOUBLE, IM_OFF(dec), -90, 90, IM_DEC_DEFAULT, CLI_IN_RUN, NULL, NULL, NULL},
    {"freq", CLI_P_DOUBLE, IM_OFF(freq), DBL_MIN, DBL_MAX, 0, CLI_IN_RUN, NULL, "HZ",
     "observing frequency of the FITS header (default params.json's frequency_hz, else "
     "100e6: the generator's)"},
    {"png", CLI_P_TEXT, IM_OFF(png), 0, 0, 0, CLI_IN_RUN, NULL, "FILE.png",
     "a preview: linear colour scale (jet) from the image's minimum to its maximum, "
     "north (larger y) up, east left; blocks of pixels shown by their maximum so that no "
     "side exceeds 2000 pixels"},
    {0}};

static const cli_param dg_params[] = {
    GR_DATA_PARAMS
    IM_SIZE_PARAMS
    {"model", CLI_P_TEXT, IM_OFF(model), 0, 0, 0, CLI_IN_RUN, NULL, "FILE.npy",
     "the model image, float32 [N][N] (N even, at most the grid size; --image-size, when "
     "given, must agree): what 'portkern run image --out DIR' writes as DIR/image.npy, "
     "in Jy per pixel.  Default: uniform random values in [-1, 1) of --seed at the data "
     "set's image size (what bench predicts)"},
    {0}};

/* The image's (degrid: the model's) own presets beside the data set's: small images 512 of
 * the small set's 1024 grid, paper and large the SKA sets' 15000 of the 18000 grid. */
static void im_preset(int size, void *args)
{
    im_args *a = args;
    gr_preset(size, &a->g);
    a->opt_image_size = size == CLI_SMALL ? 512 : 15000;
}

static int im_resolve(cli_call *c)
{
    im_args *a = c->args;
    int rc;
    if (c->where == CLI_IN_GEN)
        return cli_usage_error(c->prog, "%s takes the data sets of 'portkern gen grid --out DIR' "
                               "(then 'portkern run %s --in DIR')", c->k->name, c->k->name);
    if ((rc = gr_resolve(c))) return rc;
    if (a->opt_image_size > 0) { /* --image-size or the preset's */
        if (a->opt_image_size % 2)
            return cli_usage_error(c->prog, "option --image-size: must be even, got %d",
                                   a->opt_image_size);
        a->image_size = a->opt_image_size;
        cli_set_seen(c, "image_size", CLI_SEEN_OPT);
    }
    return 0;
}

/* After the data set: the image's parameters, checked with the grid's and plane 0 of the
 * stack by pk_image_correction (image larger than the grid, an inconsistent cell, an image
 * beyond the taper: exit 2 before anything runs). */
static int im_finish(cli_call *c, im_data *d)
{
    im_args *a = c->args;
    gr_data *g = &d->g;
    const int G = g->p.grid_size;
    if (!cli_seen(c, "image_size")) { /* no params.json key, no option */
        a->image_size = g->gen.image_size > 0 ? g->gen.image_size : G / 6 * 5 / 2 * 2;
        if (a->image_size < 2) a->image_size = 2;
    }
    pk_image_params_init(&d->ip);
    d->ip.grid = g->p;
    d->ip.image_size = a->image_size;
    d->ip.image_cell_rad = a->image_cell;
    if (a->image_size > G)
        return cli_usage_error(c->prog, "image size %d is larger than the grid (grid_size %d): "
                               "the image is the central crop of the grid's inverse FFT",
                               a->image_size, G);
    const pk_status s = pk_image_correction(&d->ip, g->support, g->kernels, NULL, NULL);
    if (s != PK_OK) return cli_lib_error("portkern", s);
    if (a->freq <= 0) a->freq = a->frequency_hz > 0 ? a->frequency_hz : IM_FREQ_DEFAULT;
    snprintf(a->vis_shape, sizeof a->vis_shape, "%zu", g->d.num_vis);
    return 0;
}

/* degrid: --model read and checked (float32, square, even), or a random one of --seed. */
static int dg_model(cli_call *c, im_data *d)
{
    im_args *a = c->args;
    char shape[160];
    if (!a->model) return 0; /* generated once the size is known */
    pk_array *m = &d->model_arr;
    pk_status s = pk_npy_read(a->model, m);
    if (s != PK_OK) return cli_lib_error("portkern", s);
    const char *dt = pk_dtype_descr(m->dtype);
    cli_shape_text(m->shape, m->ndim, shape, sizeof shape);
    if (m->dtype != PK_DTYPE_F32 || m->ndim != 2 || m->shape[0] != m->shape[1] ||
        m->shape[0] < 2 || m->shape[0] % 2 || m->shape[0] > INT_MAX / 2)
        return cli_usage_error(c->prog, "--model %s: expected a float32 ('<f4') [N][N] image, N "
                               "even, got '%s' with shape %s", a->model, dt ? dt : "?", shape);
    if (cli_seen(c, "image-size") && (size_t)a->image_size != m->shape[0])
        return cli_usage_error(c->prog, "--model %s has shape %s but --image-size is %d",
                               a->model, shape, a->image_size);
    a->image_size = (int)m->shape[0];
    cli_set_seen(c, "image_size", CLI_SEEN_OPT);
    d->model = m->data;
    return 0;
}

static int dg_model_random(cli_call *c, im_data *d)
{
    const im_args *a = c->args;
    if (d->model) return 0;
    const size_t n = (size_t)a->image_size * a->image_size;
    if (!(d->model = d->own_model = malloc(n * sizeof *d->model))) {
        fprintf(stderr, "%s: out of host memory for the model image\n", c->prog);
        return CLI_EXIT_FAIL;
    }
    cli_uniform(PK_DTYPE_F32, (unsigned long long)a->g.seed, n, d->model);
    return 0;
}

static int im_make(cli_call *c, void *data)
{
    int rc = gr_make(c, data);
    return rc ? rc : im_finish(c, data);
}

/* tune: grid's data set of the same tune (gr_borrow), then the image's parameters. */
static int im_borrow(cli_call *c, void *data, const cli_bench_result *prior)
{
    int rc = gr_borrow(c, data, prior);
    return rc ? rc : im_finish(c, data);
}

static int im_load(cli_call *c, const char *dir, void *data)
{
    int rc = gr_load(c, dir, data);
    return rc ? rc : im_finish(c, data);
}

static int dg_make(cli_call *c, void *data)
{
    int rc;
    if ((rc = dg_model(c, data)) || (rc = im_make(c, data))) return rc;
    return dg_model_random(c, data);
}

/* tune: grid's data set of the same tune, then the random model of --seed (not with
 * --model: generated then, as dg_make). */
static int dg_borrow(cli_call *c, void *data, const cli_bench_result *prior)
{
    const im_args *a = c->args;
    int rc;
    if (a->model) return -1;
    if ((rc = gr_borrow(c, data, prior)) || (rc = im_finish(c, data))) return rc;
    return dg_model_random(c, data);
}

static int dg_load(cli_call *c, const char *dir, void *data)
{
    int rc;
    if ((rc = dg_model(c, data)) || (rc = im_load(c, dir, data))) return rc;
    return dg_model_random(c, data);
}

static void im_data_free(void *data)
{
    im_data *d = data;
    pk_array_free(&d->model_arr);
    free(d->own_model);
    gr_data_free(&d->g);
}

static const cli_array im_arrays[] = {
    {"image.npy", PK_DTYPE_F32, "image_size,image_size", offsetof(im_data, image), CLI_A_OUT},
    {"reference", PK_DTYPE_F32, "image_size,image_size", offsetof(im_data, ref_image),
     CLI_A_REF},
    {0}};

static const char *dg_shape(const void *args, const cli_array *a)
{
    (void)a;
    return ((const im_args *)args)->vis_shape;
}

static const cli_array dg_arrays[] = {
    {"vis.npy", PK_DTYPE_C64, NULL, offsetof(im_data, vis), CLI_A_OUT},
    {"reference", PK_DTYPE_C64, NULL, offsetof(im_data, ref_vis), CLI_A_REF},
    {0}};

/* ---- the library calls -------------------------------------------------------------------- */
/* The reference: the same call on a serial context (its default variant), timed. */
static pk_status serial_context(pk_context **ctx)
{
    pk_context_options o;
    pk_context_options_init(&o);
    o.backend = PK_BACKEND_SERIAL;
    return pk_context_create(ctx, &o);
}

static pk_status im_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    im_data *d = data;
    gr_data *g = &d->g;
    (void)args;
    (void)runs;
    switch (op) {
    case CLI_ONESHOT:
        return pk_image(ctx, &d->ip, variant, g->support, g->kernels, &g->d, d->image, &d->norm,
                        &d->skipped, info);
    case CLI_REFERENCE: {
        pk_context *sc = NULL;
        const double t0 = cli_now_s();
        pk_status s = serial_context(&sc);
        if (s == PK_OK)
            s = pk_image(sc, &d->ip, NULL, g->support, g->kernels, &g->d, d->ref_image, NULL,
                         NULL, NULL);
        pk_context_destroy(sc);
        d->ref_s = cli_now_s() - t0;
        return s;
    }
    case CLI_PLAN_CREATE:
        return pk_image_plan_create((pk_image_plan **)plan, ctx, &d->ip, variant, g->support,
                                    g->kernels, info);
    case CLI_PLAN_RUN:
        return pk_image_plan_execute(*plan, &g->d, d->image, &d->norm, &d->skipped, info);
    case CLI_PLAN_DESTROY: pk_image_plan_destroy(*plan); break;
    case CLI_PLAN_UPLOAD:
    case CLI_PLAN_DOWNLOAD: break;
    }
    return PK_OK;
}

/* tune: image's reference from grid's double reference grid, when image's data set is the
 * one grid's rows were verified on (borrowed from grid's: gr_borrow, so the same bytes) and
 * the gridding parameters are the same: the grid rounded to complex64, then pk_image's own
 * FFT, correction and crop (pk_image_from_grid, on the host threads) and the reference's norm.
 * That is the image of the contract (docs/KERNELS.md 7) on a grid nearer the exact one than
 * the serial float grid the serial image sums (which differs from the double grid by float
 * rounding in the order of the sums only); every row is still checked against it with
 * IM_RTOL.  It saves the serial gridding of the whole set (about 20 s at paper size).
 * Grid's double grid (5.2 GB at paper size) is freed once rounded. */
static pk_status im_ref_from(const void *args, void *data, cli_bench_result *prior)
{
    im_data *d = data;
    gr_data *o = d->g.from;
    int same = 0;
    (void)args;
    for (int i = 0; o && prior && i < prior->ndata; ++i) same |= prior->data[i] == (void *)o;
    const pk_grid_params *a = same ? &o->p : NULL, *b = &d->ip.grid;
    if (!a || !o->ref || a->grid_size != b->grid_size || a->oversample != b->oversample ||
        a->cell_size_rad != b->cell_size_rad || a->w_scale != b->w_scale ||
        a->num_w_planes != b->num_w_planes || a->kernel_layout != b->kernel_layout ||
        o->support != d->g.support || o->kernels != d->g.kernels)
        return PK_EUNSUPPORTED;
    const double t0 = cli_now_s();
    const size_t n = 2 * (size_t)b->grid_size * (size_t)b->grid_size;
    float *grid = malloc(n * sizeof *grid);
    if (!grid) return PK_EUNSUPPORTED; /* the serial reference then */
    const double *ref = o->ref;
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)n; ++i) grid[i] = (float)ref[i];
    free(o->ref); /* grid's, done with (its rows are verified) */
    o->ref = NULL;
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_OPENMP;
    opt.flags = PK_OPT_IGNORE_ENV;
    if (pk_context_create(&ctx, &opt) != PK_OK) ctx = NULL; /* one thread then */
    const pk_status s = pk_image_from_grid(ctx, &d->ip, d->g.support, d->g.kernels, grid,
                                           o->chk.norm_ref, d->ref_image);
    pk_context_destroy(ctx);
    free(grid);
    d->ref_s = cli_now_s() - t0;
    d->ref_of_grid = s == PK_OK;
    return s;
}

static pk_status dg_call(cli_op op, void **plan, pk_context *ctx, const char *variant,
                         const void *args, void *data, int runs, pk_run_info *info)
{
    im_data *d = data;
    gr_data *g = &d->g;
    (void)args;
    (void)runs;
    switch (op) {
    case CLI_ONESHOT:
        return pk_degrid(ctx, &d->ip, variant, g->support, g->kernels, d->model, &g->d, d->vis,
                         &d->skipped, info);
    case CLI_REFERENCE: {
        pk_context *sc = NULL;
        const double t0 = cli_now_s();
        pk_status s = serial_context(&sc);
        /* the serial backend's pk_degrid, bitwise, its FFT passes on the host threads */
        if (s == PK_OK)
            s = pk_degrid_host_reference(sc, &d->ip, g->support, g->kernels, d->model, &g->d,
                                         d->ref_vis, NULL);
        pk_context_destroy(sc);
        d->ref_s = cli_now_s() - t0;
        return s;
    }
    case CLI_PLAN_CREATE:
        return pk_degrid_plan_create((pk_degrid_plan **)plan, ctx, &d->ip, variant, g->support,
                                     g->kernels, info);
    case CLI_PLAN_RUN:
        return pk_degrid_plan_execute(*plan, d->model, &g->d, d->vis, &d->skipped, info);
    case CLI_PLAN_DESTROY: pk_degrid_plan_destroy(*plan); break;
    case CLI_PLAN_UPLOAD:
    case CLI_PLAN_DOWNLOAD: break;
    }
    return PK_OK;
}

/* ---- outputs: FITS and the preview --------------------------------------------------------- */
/* The brightest pixel (the first of equal ones in memory order). */
static void im_peak(const im_data *d, int *px, int *py, float *pv)
{
    const size_t N = (size_t)d->ip.image_size;
    size_t best = 0;
    for (size_t i = 1; i < N * N; ++i)
        if (d->image[i] > d->image[best]) best = i;
    *px = (int)(best % N);
    *py = (int)(best / N);
    *pv = d->image[best];
}

/* Blocks of pixels by their maximum, linear jet from the minimum to the maximum, row N-1 (north)
 * at the top. */
static int im_write_png(const char *prog, im_args *a, const im_data *d)
{
    const int N = d->ip.image_size, block = (N + IM_PNG_MAX - 1) / IM_PNG_MAX;
    const int w = (N + block - 1) / block;
    float *mx = malloc((size_t)w * w * sizeof *mx);
    unsigned char *rgb = malloc(3 * (size_t)w * w);
    if (!mx || !rgb) {
        free(mx);
        free(rgb);
        fprintf(stderr, "%s: out of host memory for the preview\n", prog);
        return CLI_EXIT_FAIL;
    }
    for (size_t k = 0; k < (size_t)w * w; ++k) mx[k] = -INFINITY;
    float lo = INFINITY, hi = -INFINITY;
    for (int y = 0; y < N; ++y)
        for (int x = 0; x < N; ++x) {
            const float v = d->image[(size_t)y * N + x];
            float *m = &mx[(size_t)(w - 1 - y / block) * w + x / block];
            *m = v > *m ? v : *m;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    for (size_t k = 0; k < (size_t)w * w; ++k)
        cli_jet(hi > lo ? (mx[k] - lo) / (hi - lo) : 0, rgb + 3 * k);
    free(mx);
    const int bad = cli_png_write(a->png, w, w, rgb);
    free(rgb);
    if (bad) return cli_usage_error(prog, "cannot write %s: %s", a->png, strerror(errno));
    a->png_w = a->png_h = w;
    a->png_block = block;
    return 0;
}

static int im_write_outputs(cli_call *c, const char *dir, const void *data)
{
    im_args *a = c->args;
    const im_data *d = data;
    int rc;
    if (a->png && (rc = im_write_png(c->prog, a, d))) return rc;
    if (!a->fits) return 0;
    if (!dir) return cli_usage_error(c->prog, "--fits writes DIR/image.fits: it needs --out DIR");
    if (cli_join(a->fits_path, sizeof a->fits_path, dir, "image.fits"))
        return cli_usage_error(c->prog, "path too long: %s", dir);
    pk_fits_image_info w;
    pk_fits_image_info_init(&w);
    const double cell_deg = d->ip.grid.cell_size_rad * 180 / M_PI;
    w.ra_deg = a->ra;
    w.dec_deg = a->dec;
    w.crpix[0] = w.crpix[1] = d->ip.image_size / 2 + 1; /* pixel N/2 (0-based): the centre */
    w.cdelt_deg[0] = -cell_deg; /* l = -(x - N/2) cell: RA grows to the left */
    w.cdelt_deg[1] = cell_deg;
    w.freq_hz = a->freq;
    if (pk_grid_dataset_has_layout(d->g.dataset) >= 0) w.object = d->g.dataset;
    if (pk_grid_dataset_has_layout(d->g.dataset) == 1) w.telescope = "SKA1-LOW";
    const size_t N = (size_t)d->ip.image_size;
    const pk_status s = pk_fits_write_image(a->fits_path, d->image, N, N, &w);
    if (s != PK_OK) return cli_lib_error("portkern", s);
    a->fits_written = 1;
    return 0;
}

/* ---- JSON ---------------------------------------------------------------------------------- */
static void im_common_json(cli_json *j, const im_data *d, const pk_run_info *info)
{
    cj_str(j, "dataset", d->g.dataset);
    cj_int(j, "num_vis", (long long)d->g.d.num_vis);
    cj_int(j, "image_size", d->ip.image_size);
    cj_int(j, "grid_size", d->ip.grid.grid_size);
    cj_num(j, "cell_size_rad", d->ip.grid.cell_size_rad);
    cj_int(j, "num_w_planes", d->ip.grid.num_w_planes);
    cj_int(j, "num_skipped", (long long)d->skipped);
    gr_stages_json(j, info->num_stages, info->stage_name, info->stage_s);
}

static void im_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const im_args *a = args;
    const im_data *d = data;
    int px, py;
    float pv;
    im_common_json(j, d, info);
    cj_num(j, "norm", d->norm);
    im_peak(d, &px, &py, &pv);
    const double cell = d->ip.grid.cell_size_rad, h = d->ip.image_size / 2;
    cj_open(j, "peak", '{');
    cj_int(j, "x", px);
    cj_int(j, "y", py);
    cj_num(j, "value", pv);
    cj_num(j, "l", -(px - h) * cell);
    cj_num(j, "m", (py - h) * cell);
    cj_close(j);
    cj_num(j, "ra_deg", a->ra);
    cj_num(j, "dec_deg", a->dec);
    cj_num(j, "freq_hz", a->freq);
    if (a->fits_written)
        cj_str(j, "fits", a->fits_path);
    else
        cj_null(j, "fits");
    if (a->png_w) {
        cj_open(j, "png", '{');
        cj_str(j, "path", a->png);
        cj_int(j, "width", a->png_w);
        cj_int(j, "block", a->png_block);
        cj_close(j);
    }
}

static void dg_run_json(cli_json *j, const void *args, const void *data, const pk_run_info *info)
{
    const im_args *a = args;
    const im_data *d = data;
    im_common_json(j, d, info);
    if (a->model)
        cj_str(j, "model", a->model);
    else
        cj_str(j, "model", "uniform random in [-1, 1) of --seed");
    double s = 0;
    for (size_t i = 0; i < 2 * d->g.d.num_vis; ++i) s += (double)d->vis[i] * d->vis[i];
    cj_num(j, "vis_rms", d->g.d.num_vis ? sqrt(s / (double)d->g.d.num_vis) : 0);
}

/* ---- bench ---------------------------------------------------------------------------------- */
static void im_describe(const cli_bench_result *res)
{
    const im_data *d = res->data[0];
    char gen[96];
    if (d->g.from)
        snprintf(gen, sizeof gen, "grid's data set of this tune, not generated again");
    else
        snprintf(gen, sizeof gen, "generated in %.1f s", d->g.gen_s);
    printf("%s %s: %s --scale %g: %zu visibilities, %d planes, grid %d^2, image %d^2 "
           "(%s, %s %.1f s); plans on resident kernels, the visibilities%s passed per run; "
           "verified: %s, rtol %g\n",
           res->k->name, res->req->size, d->g.dataset,
           ((const im_args *)res->args[0])->g.scale, d->g.d.num_vis, d->ip.grid.num_w_planes,
           d->ip.grid.grid_size, d->ip.image_size, gen,
           d->ref_of_grid ? "reference from grid's double grid" : "serial reference", d->ref_s,
           strcmp(res->k->name, "degrid") == 0 ? " and the model" : "",
           d->ref_of_grid ? "||x - ref||_2 / ||ref||_2 <= rtol (ref: grid's double reference "
                            "grid of the same data set, which grid's rows were verified "
                            "against, rounded to complex64, through the library's FFT, "
                            "correction and crop: pk_image_from_grid)"
                          : IM_VERIFY_RULE,
           IM_RTOL);
}

#define IM_FLOPS "8 flop per grid-point update (a complex multiply-add) plus the full " \
                 "transform's 5 g^2 log2(g^2) (a model: the pruned passes do less)"
#define IM_BYTES "the library's count of the grid step and the transform's passes"

const cli_kernel cli_kernel_image = {
    .name = "image",
    .data_of = "grid",
    .summary = "dirty image of a grid data set: grid, pruned FFT, grid correction (FITS out)",
    .run_help =
        "The dirty image (docs/KERNELS.md 7; pk_image): the visibilities gridded (any grid\n"
        "variant), the inverse FFT cropped to the central N x N pixels, divided by the grid\n"
        "correction of the kernel stack and normalised by the gridder's norm.\n"
        "Files: --in DIR reads a 'portkern gen grid' data set (see 'portkern run grid\n"
        "--help'); without --in the data set of --dataset is generated.  --out DIR writes\n"
        "DIR/image.npy (float32 [N][N], row y, column x; pixel [N/2][N/2] is the phase centre,\n"
        "l = -(x - N/2) cell, m = +(y - N/2) cell: east left, north up) and with --fits\n"
        "DIR/image.fits: a 2-D float image, CTYPE RA---SIN / DEC--SIN, CRVAL --ra/--dec,\n"
        "CRPIX N/2 + 1 (1-based), CDELT1 = -cell, CDELT2 = +cell in degrees, a degenerate FREQ\n"
        "axis (--freq), BUNIT JY/BEAM (DS9, CARTA and astropy put the sources at their\n"
        "coordinates).  --png FILE writes a preview.  Files are written whole (temporary +\n"
        "rename): a failed write leaves none.\n"
        "\"image\" in the JSON line: dataset, num_vis, image_size, grid_size, cell_size_rad,\n"
        "num_w_planes, num_skipped, stages {zero, grid, fft rows, fft cols+crop: seconds;\n"
        "with the FFT on the device: zero, grid, fft, correct, transfer (OpenCL) or grid, fft,\n"
        "correct, transfer (CUDA)}, norm, peak {x, y, value, l, m} (the brightest pixel),\n"
        "ra_deg, dec_deg, freq_hz, fits (its path, or null), png {path, width, block} with\n"
        "--png.\n"
        "Bad input (exit 2): an image larger than the grid or odd, a cell inconsistent with\n"
        "the grid, an image beyond the kernel's taper (correction <= 1e-3), --fits without\n"
        "--out, a file that cannot be written.\n",
    .gen_help = "image reads the data sets of 'portkern gen grid'.\n",
    .variants = pk_grid_variants,
    .args_size = sizeof(im_args),
    .data_size = sizeof(im_data),
    .params = im_params,
    .preset = im_preset,
    /* no proxy: image's cost at paper size is its FFT of the 18000^2 grid (the proxy's
                * omp-tiled row took 62 s against 72 s at full size); grid's proxy in the same
                * tune leaves out the variants whose grid step cannot win (tune_prior_skip) */
    .resolve = im_resolve,
    .arrays = im_arrays,
    .load = im_load,
    .generate = im_make,
    .borrow = im_borrow,
    .ref_from = im_ref_from,
    .info_keys = im_info_keys,
    .call = im_call,
    .rtol = IM_RTOL,
    .verify_rule = IM_VERIFY_RULE,
    .norm = 1,
    .write_outputs = im_write_outputs,
    .run_json = im_run_json,
    .data_free = im_data_free,
    .flops_model = IM_FLOPS,
    .bytes_model = IM_BYTES,
    .describe = im_describe,
};

const cli_kernel cli_kernel_degrid = {
    .name = "degrid",
    .data_of = "grid",
    .summary = "model visibilities of a model image at a grid data set's uvw (image's adjoint)",
    .run_help =
        "Degridding, the exact adjoint of image (docs/KERNELS.md 7.3; pk_degrid): the model\n"
        "divided by the grid correction, padded and FFT'd onto the grid, then every\n"
        "visibility's w-kernel footprint gathered.  Weights are not applied (a prediction).\n"
        "Files: --in DIR reads a 'portkern gen grid' data set (its uu, vv, ww, kernels;\n"
        "vis.npy is not used); without --in the data set of --dataset is generated.\n"
        "--model FILE: float32 [N][N] in the orientation of 'run image' (its DIR/image.npy\n"
        "fits).  --out DIR writes DIR/vis.npy (complex64 [n]).\n"
        "\"degrid\" in the JSON line: dataset, num_vis, image_size, grid_size, cell_size_rad,\n"
        "num_w_planes, num_skipped, stages {place+fft cols, fft rows, degrid: seconds; with\n"
        "the FFT on the device: place, fft, degrid, transfer}, model, vis_rms.\n"
        "Bad input (exit 2): a model of another dtype, rank or shape (not square, odd, larger\n"
        "than the grid, or not --image-size), a cell inconsistent with the grid.\n",
    .gen_help = "degrid reads the data sets of 'portkern gen grid'.\n",
    .variants = pk_degrid_variants,
    .args_size = sizeof(im_args),
    .data_size = sizeof(im_data),
    .params = dg_params,
    .preset = im_preset,
    /* no proxy, as image: degrid's cost at paper size is the FFT of the 18000^2 grid, the
     * same at a tenth of the visibilities (measured under load 4: the proxy's rows 41-76 s
     * against 27-56 s at full size; its 242 s only left serial out).  Its serial rows
     * run last instead (as every kernel's in tune), cut like any row beyond the best. */
    .resolve = im_resolve,
    .arrays = dg_arrays,
    .shape = dg_shape,
    .load = dg_load,
    .generate = dg_make,
    .borrow = dg_borrow,
    .info_keys = im_info_keys,
    .call = dg_call,
    .rtol = IM_RTOL,
    .verify_rule = IM_VERIFY_RULE,
    .norm = 1,
    .run_json = dg_run_json,
    .data_free = im_data_free,
    .flops_model = IM_FLOPS,
    .bytes_model = IM_BYTES,
    .describe = im_describe,
};
