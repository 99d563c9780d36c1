/* cli_grid.h - what grid's part of the command line (tools/cli_grid.c) shares with the
 * kernels built on its data sets (tools/cli_image.c: image and degrid): the args and data of a
 * grid data set, its parameter table's entries, its loading (run --in DIR of a 'portkern gen
 * grid' directory), generation and files, the stages object of a JSON line and the PNG
 * writer.  A kernel that reuses them starts its args struct with a gr_args and its data
 * struct with a gr_data, so that the hooks below and the table's offsets apply unchanged. */
#ifndef PK_CLI_GRID_H
#define PK_CLI_GRID_H

#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_kernel.h"

typedef struct gr_intensity {
    int width, height, block; /* picture pixels; grid cells per pixel side */
    int x0, y0;               /* grid cell at the top-left pixel */
    double max_updates;       /* largest count of one pixel (block sum) */
    double total_updates;
} gr_intensity;

typedef struct gr_args {
    /* the table's: params.json keys, and options where the names agree */
    int oversample, grid_size, num_w_planes, conv_size_half, kernel_layout, seed;
    double cell_size_rad, w_scale, scale;
    const char *dataset, *layout;
    /* options only: --grid-size, --cell-size, --w-scale (params.json's grid_size,
     * cell_size_rad and w_scale, taken over by gr_resolve: the command line wins) and the rest */
    int opt_grid_size;
    double opt_cell_size, opt_w_scale;
    int tile_size, central_radius, unit_vis, touched;
    double tile_factor;
    const char *png, *export_dir;
    gr_intensity png_info;   /* what --intensity wrote, for the JSON line */
} gr_args;

/* by id: PK_GRID_KERNELS_FULL, PK_GRID_KERNELS_COMPACT */
extern const cli_names gr_layouts;

typedef struct gr_check {
    pk_diff_report rep; /* norm-wise verdict of the grid (rep.equal), element-wise figures */
    double norm_ref, norm_rel_diff;
    int64_t skipped_ref;
    int skipped_equal, equal; /* equal: grid, norm and num_skipped */
    double ref_s;
} gr_check;

typedef struct gr_data gr_data;
struct gr_data {
    pk_grid_params p;
    pk_grid_data d;
    const int32_t *support;
    const float *kernels;
    int max_support;
    const char *dataset; /* the generated set's name, params.json's, or the directory */
    double gen_s;
    /* owners */
    pk_array arr[7];
    pk_grid_dataset gen; /* without --in: the generated set */
    /* the run and its verdict */
    float *grid;  /* complex64 [grid_size][grid_size] */
    double *ref;  /* the double reference grid, [grid_size][grid_size][2] */
    double norm;
    int64_t skipped;
    int verified; /* --verify ran: chk holds the reference's figures */
    gr_check chk;
    gr_data *from; /* tune: the data set was borrowed from this one's (gr_borrow): gen's
                      arrays are its, not freed here */
};

/* The parameters of a grid data set and of the gridding (the data set's keys of params.json,
 * --dataset, --scale, --seed, --layout, --unit-vis, --kernels, --grid-size, --cell-size,
 * --w-scale and the tiled variants' tuning): entries of a cli_param table whose args struct
 * starts with a gr_args. */
#define GR_OFF(field) offsetof(gr_args, field)
#define GR_DATA_PARAMS \
    {"oversample", CLI_P_INT, GR_OFF(oversample), 2, 1024, 0, CLI_IN_RUN | CLI_IN_PARAMS, NULL, \
     NULL, NULL}, \
    {"cell_size_rad", CLI_P_DOUBLE, GR_OFF(cell_size_rad), DBL_MIN, DBL_MAX, 0, CLI_IN_PARAMS, NULL, \
     NULL, NULL}, \
    {"w_scale", CLI_P_DOUBLE, GR_OFF(w_scale), 0, DBL_MAX, 0, CLI_IN_PARAMS, NULL, NULL, NULL}, \
    {"grid_size", CLI_P_INT, GR_OFF(grid_size), 2, INT_MAX, 0, CLI_IN_PARAMS, NULL, NULL, NULL}, \
    {"num_w_planes", CLI_P_INT, GR_OFF(num_w_planes), 1, INT_MAX, 0, CLI_IN_PARAMS, NULL, NULL, \
     NULL}, \
    {"conv_size_half", CLI_P_INT, GR_OFF(conv_size_half), 0, INT_MAX, 0, CLI_IN_PARAMS, NULL, NULL, \
     NULL}, \
    {"kernel_layout", CLI_P_NAME, GR_OFF(kernel_layout), 0, 0, PK_GRID_KERNELS_COMPACT, \
     CLI_IN_PARAMS, &gr_layouts, NULL, \
     NULL}, \
    {"dataset", CLI_P_TEXT, GR_OFF(dataset), 0, 0, 0, CLI_IN_ALL, NULL, "NAME", \
     "the data set generated (run: without --in, in memory, compact kernels): " \
     "small (run's default), synthetic (gen's default), el82-70, el56-82, " \
     "el30-56 ('portkern gen grid --help' describes them); not with --in, nor " \
     "are --scale, --seed, --layout, --unit-vis.  --preset small: small; paper: el82-70 " \
     "--scale 0.1; large: el82-70"}, \
    {"scale", CLI_P_DOUBLE, GR_OFF(scale), DBL_MIN, 1, 1, CLI_IN_ALL, NULL, "F", \
     "fraction in (0, 1] (default 1): SKA sets keep round(F * 240) time dumps " \
     "spread over the same hour-angle range (so the same w range and kernels); " \
     "random sets keep the first round(F * n) draws"}, \
    {"seed", CLI_P_INT, GR_OFF(seed), 0, INT_MAX, 1, CLI_IN_ALL, NULL, "S", \
     "seed (default 1) of the visibility order (shuffle) and of the random " \
     "sets' uvw: the same seed gives the same bytes"}, \
    {"layout", CLI_P_TEXT, GR_OFF(layout), 0, 0, 0, CLI_IN_RUN | CLI_IN_GEN, NULL, "FILE", \
     "SKA sets: station layout, one 'E N [U]' line per station in metres " \
     "(blanks or commas between; blank and '#' lines skipped), e.g. the " \
     "published SKA1-LOW v6 configuration; default: the built-in procedural " \
     "512-station layout with the v6 radial distribution"}, \
    {"unit-vis", CLI_P_FLAG, GR_OFF(unit_vis), 0, 1, 0, CLI_IN_RUN | CLI_IN_GEN, NULL, NULL, \
     "every visibility 1 + 0i (for the sum-rule invariant)"}, \
    {"kernels", CLI_P_NAME, GR_OFF(kernel_layout), 0, 0, PK_GRID_KERNELS_COMPACT, CLI_IN_GEN, \
     &gr_layouts, "full|compact", \
     "kernel layout written (default compact)"}, \
    {"grid-size", CLI_P_INT, GR_OFF(opt_grid_size), 2, INT_MAX, 0, CLI_IN_RUN, NULL, \
     "N --oversample N --cell-size RAD --w-scale S", \
     "gridding parameters (override params.json's grid_size, oversample, " \
     "cell_size_rad, w_scale, or the generated set's; grid size and oversample " \
     "even)"}, \
    {"cell-size", CLI_P_DOUBLE, GR_OFF(opt_cell_size), DBL_MIN, DBL_MAX, 0, CLI_IN_RUN, NULL, NULL, \
     NULL}, \
    {"w-scale", CLI_P_DOUBLE, GR_OFF(opt_w_scale), 0, DBL_MAX, 0, CLI_IN_RUN, NULL, NULL, NULL}, \
    {"tile-size", CLI_P_INT, GR_OFF(tile_size), 0, INT_MAX, 0, CLI_IN_RUN, NULL, \
     "N --central-radius N --tile-factor F", \
     "tuning of the tiled variants (0 or absent: the variant's default; " \
     "central radius -1: no box; tile factor in [0, 1]: the tiled fraction of " \
     "hybrid)"}, \
    {"central-radius", CLI_P_INT, GR_OFF(central_radius), -1, INT_MAX, 0, CLI_IN_RUN, NULL, NULL, \
     NULL}, \
    {"tile-factor", CLI_P_DOUBLE, GR_OFF(tile_factor), 0, 1, -1, CLI_IN_RUN, NULL, NULL, NULL},

/* params.json's keys for information that gen grid writes (run ignores them). */
extern const char *const gr_info_keys[];

/* gr_preset's data sets: small: small; paper: el82-70 --scale 0.1; large: el82-70. */
void gr_preset(int size, void *args);
/* tune's proxy of a case of grid, image or degrid (args: gr_args, or a struct that starts
 * with one): the same data set at a tenth of its dumps (--scale), so a tenth of the
 * visibilities on the same grid. */
const char *gr_proxy(void *args);
/* The hooks of cli_kernel_grid (cli_kernel.h) over a gr_args and a gr_data. */
int gr_resolve(cli_call *c);
int gr_make(cli_call *c, void *data);
int gr_load(cli_call *c, const char *dir, void *data);
int gr_write_inputs(cli_call *c, const char *dir, const void *data);
void gr_params_info(cli_json *j, const void *args, const void *data);
void gr_data_free(void *data);
/* tune: the data set of prior's data set (a gr_data made by gr_make) when prior's generation
 * options (data set, scale, seed, layout, unit_vis) are this call's: pk_grid_generate is
 * deterministic in them, so the bytes are those gr_make would generate; then gr_finish on
 * this call's options, as gr_make.  0 borrowed (g->from set), -1 not the same, else an exit
 * code. */
int gr_borrow(cli_call *c, void *data, const cli_bench_result *prior);
/* "stages" {name: seconds} of a run info's stages. */
void gr_stages_json(cli_json *j, int n, const char (*name)[16], const double *s);
/* 8-bit RGB PNG (rgb: h rows of w pixels, row 0 at the top), written whole: 0 or -1 (errno). */
int cli_png_write(const char *path, int w, int h, const unsigned char *rgb);
/* Jet colour map: dark blue (t = 0) .. red (1) into c[3]. */
void cli_jet(double t, unsigned char *c);

#endif /* PK_CLI_GRID_H */
