/* grid_gen.h - the data sets of `portkern gen grid` (docs/KERNELS.md 1): w-kernel stacks
 * by the OSKAR/CASA recipe and SKA1-LOW uv tracks.  Internal to libportkern (hidden; its
 * public face is pk_grid_generate, lib/gen/generate.c); tests/test_gr_gen.c compiles it in to
 * test the pieces.  The kernel stack needs FFTW (double, PK_HAVE_FFTW3); without it
 * pk_gg_kernels_make fails with PK_EUNSUPPORTED and says so.
 *
 * Every call that can fail returns a pk_status and writes the reason into why[why_len]
 * (not pk_last_error(): the test's own copy cannot reach the library's hidden pk_fail). */
#ifndef PK_GRID_GEN_H
#define PK_GRID_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "portkern.h"

/* ---- w-kernel stack (docs/KERNELS.md 1.7) ------------------------------------------------ */
typedef struct pk_gg_kernel_params {
    double cell_size_rad; /* image cell; l_max = sin(cell) * image_size / 2 (OSKAR's fov) */
    int image_size;       /* image side in pixels (the grid is image_size * padding) */
    int grid_size;        /* grid side in cells */
    int oversample;       /* even, >= 2 */
    int conv_size;        /* FFT side (even, multiple of oversample, >= 4 * oversample);
                             OSKAR uses 2048 for the SKA sets (64 MB per plane rule) */
    int num_w_planes;     /* >= 1 */
    double max_w;         /* |w| of the last plane, wavelengths (> 0 when planes > 1);
                             w_scale = (num_w_planes - 1)^2 / max_w, plane i at w = i^2/w_scale */
} pk_gg_kernel_params;

/* A generated stack: always compact (per plane the m x m corner that the gridder can read,
 * m = oversample/2 + support*oversample + 1, planes back to back: PK_GRID_KERNELS_COMPACT). */
typedef struct pk_gg_kernels {
    pk_gg_kernel_params kp;
    double w_scale;
    int32_t *support;      /* [num_w_planes] */
    size_t *plane_offset;  /* [num_w_planes + 1], complex samples */
    float *compact;        /* complex64 [plane_offset[num_w_planes]] */
    double peak;           /* |K_0[0][0]| before normalisation (the support threshold's base) */
    double plane0_sum;     /* the normalising sum (plane 0 at grid-cell stride), before */
} pk_gg_kernels;

/** The prolate spheroidal taper psi(|nu|), Schwab's rational approximation (casacore
 *  grdsf.f); 0 outside [0, 1]. */
double pk_gg_spheroidal(double nu);
/** w_scale = (num_w_planes - 1)^2 / max_w (0 for a single plane). */
double pk_gg_w_scale(const pk_gg_kernel_params *kp);
/** Check kp: PK_OK or an error with the reason. */
pk_status pk_gg_kernel_params_check(const pk_gg_kernel_params *kp, char *why, size_t why_len);
/** The whole stack (planes in parallel with OpenMP when built with it; FFTW plans made once
 *  per size, FFTW_ESTIMATE).  *k is zeroed first; free with pk_gg_kernels_free. */
pk_status pk_gg_kernels_make(const pk_gg_kernel_params *kp, pk_gg_kernels *k, char *why,
                             size_t why_len);
/** Supports of the listed planes only (plane 0 is always computed: it sets the threshold);
 *  support[i] belongs to planes[i].  Optionally also the normalised corner of plane
 *  `sym_plane` for inspection: *corner (malloc'ed complex128 [m][m], m via *corner_m). */
pk_status pk_gg_kernel_supports(const pk_gg_kernel_params *kp, const int *planes, int nplanes,
                                int32_t *support, int sym_plane, double **corner, int *corner_m,
                                char *why, size_t why_len);
/** The FULL layout of a generated stack: complex64 [planes][half][half] with half = the
 *  largest m of any plane; samples outside a plane's own m x m corner (never read by the
 *  gridder) are zero (pk_grid_expand_kernels).  *full is malloc'ed. */
pk_status pk_gg_kernels_full(const pk_gg_kernels *k, int *half, float **full, char *why,
                             size_t why_len);
void pk_gg_kernels_free(pk_gg_kernels *k);

/* ---- station layouts (ENU metres) --------------------------------------------------------- */
typedef struct pk_gg_layout {
    int num_stations;
    double *enu; /* [num_stations][3]: east, north, up */
} pk_gg_layout;

#define PK_GG_MAX_STATIONS 65536
#define PK_GG_MAX_OFFSET_M 1e7 /* metres: a layout coordinate beyond this is refused */

/** The built-in SKA1-LOW-like layout: 512 stations whose radial distribution follows the v6
 *  layout's (docs/KERNELS.md 1.7): a centrally concentrated core of 220 stations in
 *  500 m (Vogel spiral), the rest on three logarithmic spiral arms out to 39.8 km. */
pk_status pk_gg_layout_procedural(pk_gg_layout *L);
/** Read an ENU layout: one station a line, "E N [U]" in metres separated by blanks or
 *  commas; blank lines and lines starting with '#' are skipped.  Anything else (a bad
 *  number, a wrong column count, non-finite values, fewer than 2 or more than
 *  PK_GG_MAX_STATIONS stations) is PK_EFORMAT naming the line. */
pk_status pk_gg_layout_read(const char *path, pk_gg_layout *L, char *why, size_t why_len);
/** The same from text in memory (name is used in messages). */
pk_status pk_gg_layout_parse(const char *text, const char *name, pk_gg_layout *L, char *why,
                             size_t why_len);
void pk_gg_layout_free(pk_gg_layout *L);

/* ---- data sets ---------------------------------------------------------------------------- */
typedef enum pk_gg_kind { PK_GG_SKA_TRACK, PK_GG_RANDOM_UVW } pk_gg_kind;

typedef struct pk_gg_dataset {
    const char *name;
    pk_gg_kind kind;
    size_t num_vis;        /* published count (scale 1, built-in layout) */
    int max_support;       /* published maximum support (the stack must reproduce it) */
    pk_gg_kernel_params kp;
    /* SKA tracks: source at declination = latitude; hour angles [ha0, ha1] degrees from
     * the elevation range; num_times dumps */
    double el0_deg, el1_deg; /* elevation at the start and the end of the track */
    int num_times;
    /* random uvw: |uv| <= uv_max wavelengths, |w| <= w_max */
    double uv_max, w_max;
    const char *recipe;    /* one line for params.json and --help */
} pk_gg_dataset;

/** The data set called name ("synthetic", "el82-70", "el56-82", "el30-56", "small"), or NULL. */
const pk_gg_dataset *pk_gg_dataset_find(const char *name);
/** Names, comma-separated. */
const char *pk_gg_dataset_names(void);

#define PK_GG_SITE_LON_DEG 116.7644482
#define PK_GG_SITE_LAT_DEG (-26.82472208)
#define PK_GG_FREQ_HZ 100e6
#define PK_GG_C 299792458.0

typedef struct pk_gg_vis_options {
    const pk_gg_dataset *ds;
    double scale;              /* (0, 1]: fraction kept (SKA: time dumps; random: draws) */
    uint64_t seed;
    const pk_gg_layout *layout; /* SKA tracks: NULL = the built-in layout */
    int unit_vis;              /* 1: every visibility 1 + 0i */
} pk_gg_vis_options;

typedef struct pk_gg_vis {
    size_t num_vis;
    float *uu, *vv, *ww; /* wavelengths */
    float *vis;          /* complex64 */
    float *weight;
    int num_times;       /* SKA tracks: dumps generated */
    double max_abs_w;    /* largest |w| generated */
    size_t num_beyond_max_w; /* |w| > the stack's max_w: gridded with the last plane */
} pk_gg_vis;

/** Generate the visibilities of a data set: uvw, point-source (or unit) visibilities,
 *  uniform weights for the data set's grid, shuffled order, all reproducible by the seed. */
pk_status pk_gg_vis_make(const pk_gg_vis_options *o, pk_gg_vis *v, char *why, size_t why_len);
void pk_gg_vis_free(pk_gg_vis *v);

/** The number of visibilities pk_gg_vis_make gives for these options (without making them). */
size_t pk_gg_vis_count(const pk_gg_vis_options *o);

/** Uniform weights (the gridding challenge's rule): weight[i] = 1 / the number of
 *  visibilities whose centre cell (round(-uu * scale) + G/2, round(vv * scale) + G/2, float
 *  arithmetic as the gridder's) is visibility i's; centres off the grid or non-finite get
 *  weight 1. */
pk_status pk_gg_uniform_weights(int grid_size, double cell_size_rad, size_t n, const float *uu,
                                const float *vv, float *weight, char *why, size_t why_len);

#endif
