/* generate.c - the public face of the data generators of `portkern gen grid` and `gen
 * conv2d` (lib/portkern.h): pk_grid_generate over lib/gen/grid_gen.c, pk_conv2d_generate
 * over lib/gen/conv2d_gen.c.  Kept apart from those two files because tests compile them in
 * (to test the pieces), and this file's pk_fail is the library's own, hidden. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "gen/conv2d_gen.h"
#include "gen/grid_gen.h"

#define GEN_BUILTIN_STATIONS 512 /* pk_gg_layout_procedural's */

void pk_grid_gen_options_init(pk_grid_gen_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->dataset = "synthetic";
    o->scale = 1;
    o->seed = 1;
    o->kernel_layout = PK_GRID_KERNELS_COMPACT;
}

const char *pk_grid_datasets(void) { return pk_gg_dataset_names(); }

int pk_grid_dataset_has_layout(const char *name)
{
    const pk_gg_dataset *ds = pk_gg_dataset_find(name);
    return ds ? ds->kind == PK_GG_SKA_TRACK : -1;
}

void pk_grid_dataset_free(pk_grid_dataset *d)
{
    if (!d) return;
    pk_array *a[] = {&d->uu, &d->vv, &d->ww, &d->vis, &d->weight, &d->support, &d->kernels};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; ++i) pk_array_free(a[i]);
    memset(d, 0, sizeof *d);
}

/* A 1-D (or [planes][half][half]) array owning data. */
static void gen_array(pk_array *a, pk_dtype dtype, int ndim, size_t n0, size_t n1, void *data)
{
    a->dtype = dtype;
    a->ndim = ndim;
    a->shape[0] = n0;
    a->count = n0;
    for (int k = 1; k < ndim; ++k) {
        a->shape[k] = n1;
        a->count *= n1;
    }
    a->data = data;
}

/* The generators' why-string as this thread's pk_last_error(). */
static pk_status gen_fail(pk_status s, const char *why) { return pk_fail(s, "%s", why); }

pk_status pk_grid_generate(const pk_grid_gen_options *o, pk_grid_dataset *out)
{
    pk_clear_error();
    PK_CHECK_NULL(out);
    memset(out, 0, sizeof *out);
    PK_CHECK_NULL(o);
    PK_CHECK_NULL(o->dataset);
    const pk_gg_dataset *ds = pk_gg_dataset_find(o->dataset);
    PK_CHECK(ds != NULL, PK_EINVAL, "dataset: unknown data set '%s' (%s)", o->dataset,
             pk_gg_dataset_names());
    /* checked before the kernels, which take seconds for the SKA sets */
    PK_CHECK(o->scale > 0 && o->scale <= 1, PK_EINVAL, "scale: must be in (0, 1], got %g",
             o->scale);
    PK_CHECK(o->kernel_layout == PK_GRID_KERNELS_COMPACT ||
                 o->kernel_layout == PK_GRID_KERNELS_FULL,
             PK_EINVAL, "kernel_layout: must be PK_GRID_KERNELS_FULL (0) or _COMPACT (1), got %d",
             o->kernel_layout);
    PK_CHECK(!o->layout_path || ds->kind == PK_GG_SKA_TRACK, PK_EINVAL,
             "layout_path: data set %s has no station layout (only el82-70, el56-82, el30-56)",
             ds->name);
    char why[512];
    pk_gg_layout lay = {0, NULL};
    pk_gg_kernels gk;
    pk_gg_vis vis;
    memset(&gk, 0, sizeof gk);
    memset(&vis, 0, sizeof vis);
    float *full = NULL;
    int half = 0;
    /* the tool's order: layout, kernels, visibilities */
    pk_status s = PK_OK;
    if (o->layout_path) s = pk_gg_layout_read(o->layout_path, &lay, why, sizeof why);
    if (s == PK_OK) s = pk_gg_kernels_make(&ds->kp, &gk, why, sizeof why);
    if (s == PK_OK) {
        const pk_gg_vis_options vo = {ds, o->scale, o->seed, o->layout_path ? &lay : NULL,
                                      o->unit_vis != 0};
        s = pk_gg_vis_make(&vo, &vis, why, sizeof why);
    }
    if (s == PK_OK && o->kernel_layout == PK_GRID_KERNELS_FULL)
        s = pk_gg_kernels_full(&gk, &half, &full, why, sizeof why);
    const int num_stations = o->layout_path ? lay.num_stations : GEN_BUILTIN_STATIONS;
    pk_gg_layout_free(&lay);
    if (s != PK_OK) {
        pk_gg_vis_free(&vis);
        pk_gg_kernels_free(&gk);
        return gen_fail(s, why);
    }
    const int P = ds->kp.num_w_planes;
    const size_t n = vis.num_vis;
    /* the arrays change owner: the generators' buffers are malloc'ed, as pk_array's */
    gen_array(&out->uu, PK_DTYPE_F32, 1, n, 0, vis.uu);
    gen_array(&out->vv, PK_DTYPE_F32, 1, n, 0, vis.vv);
    gen_array(&out->ww, PK_DTYPE_F32, 1, n, 0, vis.ww);
    gen_array(&out->vis, PK_DTYPE_C64, 1, n, 0, vis.vis);
    gen_array(&out->weight, PK_DTYPE_F32, 1, n, 0, vis.weight);
    gen_array(&out->support, PK_DTYPE_I32, 1, (size_t)P, 0, gk.support);
    if (full) {
        gen_array(&out->kernels, PK_DTYPE_C64, 3, (size_t)P, (size_t)half, full);
        free(gk.compact);
    } else {
        gen_array(&out->kernels, PK_DTYPE_C64, 1, gk.plane_offset[P], 0, gk.compact);
    }
    free(gk.plane_offset);
    pk_grid_params *p = &out->params;
    pk_grid_params_init(p);
    p->grid_size = ds->kp.grid_size;
    p->oversample = ds->kp.oversample;
    p->cell_size_rad = ds->kp.cell_size_rad;
    p->w_scale = gk.w_scale;
    p->num_w_planes = P;
    p->conv_size_half = full ? half : 0;
    p->kernel_layout = o->kernel_layout;
    out->data.num_vis = n;
    out->data.uu = vis.uu;
    out->data.vv = vis.vv;
    out->data.ww = vis.ww;
    out->data.vis = vis.vis;
    out->data.weight = vis.weight;
    out->name = ds->name;
    out->recipe = ds->recipe;
    for (int i = 0; i < P; ++i)
        if (gk.support[i] > out->max_support) out->max_support = gk.support[i];
    out->image_size = ds->kp.image_size;
    out->fft_size = ds->kp.conv_size;
    out->max_w = ds->kp.max_w;
    out->max_abs_w = vis.max_abs_w;
    out->num_beyond_max_w = vis.num_beyond_max_w;
    if (ds->kind == PK_GG_SKA_TRACK) {
        out->num_stations = num_stations;
        out->num_times = vis.num_times;
        out->frequency_hz = PK_GG_FREQ_HZ;
    }
    return PK_OK;
}

pk_status pk_conv2d_generate(const pk_conv2d_params *p, uint32_t seed, float *image, float *psf)
{
    pk_clear_error();
    PK_CHECK_NULL(p);
    PK_CHECK(p->h >= 1 && p->w >= 1, PK_ESIZE, "h, w: must be >= 1, got %d x %d", p->h, p->w);
    PK_CHECK(p->kh >= 1 && p->kw >= 1, PK_ESIZE, "kh, kw: must be >= 1, got %d x %d", p->kh,
             p->kw);
    PK_CHECK(image || psf, PK_ENULL, "image and psf: must not both be NULL");
    if (image) pk_cv_gen_frame(p->h, p->w, seed, image);
    if (psf) pk_cv_gen_psf(p->kh, p->kw, seed, psf);
    return PK_OK;
}
