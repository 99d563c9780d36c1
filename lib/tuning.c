/* tuning.c - the tuning parameters: one table (name, values, default, doc, variable), their
 * parsing, the environment at context creation, pk_param_count / pk_param_info.  A backend
 * reads a value through its desc's `tuning` (pk_param_get); lib/context.c sets one.  Nothing
 * here needs a context: the CUDA emulation tests compile this file in. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* T_AUTO_INT: "auto" (v[1] = 0) or an integer in [lo, hi] (v[1] = 1); T_FRAC: "auto" (v[1] = 0)
 * or a number in [0, 1], kept in millionths (v[0]; v[1] = 1). */
enum { T_INT, T_CHOICE, T_PAIR, T_AUTO_INT, T_FRAC };

typedef struct param_def {
    const char *name, *env_alias;
    int type;
    int lo, hi;           /* T_INT, T_PAIR: the range of each integer */
    const char *choices;  /* T_CHOICE: comma-separated, '|' before an alias ("avx512|avx512f") */
    const char *values;   /* what it accepts, in words (messages, pk_param_info) */
    const char *def;
    int env_lenient;      /* the variable's older reading: anything but the first non-auto
                             choice means the second ("0": off, any other value: on) */
    const char *doc;
} param_def;

#define ISA_CHOICES "auto,generic,avx2,avx512|avx512f"
#define ISA_VALUES "auto, avx512 (or avx512f), avx2 or generic"

/* In pk_param_id order. */
static const param_def defs[PK_PARAM_COUNT] = {
    /* 676 (26 x 26): omp-rb against the fft tiles on the 813 x 5271 frame tied at 25 x 25
     * (direct six of ten sweeps, the FFT four), direct won at 23 x 23 and the FFT from 31 x 31
     * (2-core Xeon; docs/PERFORMANCE.md, `portkern bench --kernels conv2d --size paper
     * --psf-sweep`) */
    [PK_PARAM_CONV2D_FFT_TAPS] = {"conv2d.fft_taps", NULL, T_INT, 1, INT_MAX, NULL,
        "an integer in [1, 2147483647]", "676", 0,
        "method auto runs the FFT from this many PSF taps (kh * kw) on"},
    [PK_PARAM_CONV2D_CL_SCHEME] = {"conv2d.cl_scheme", "PORTKERN_CL_CV_SCHEME", T_CHOICE, 0, 0,
        "auto,vec,scalar", "auto, vec or scalar", "auto", 0,
        "OpenCL direct kernel: 16-wide rows (vec) or one pixel per item; auto: vec on CPUs"},
    [PK_PARAM_CONV2D_ISA] = {"conv2d.isa", NULL, T_CHOICE, 0, 0, ISA_CHOICES, ISA_VALUES,
        "auto", 0, "OpenMP omp-rb: lower the SIMD level (auto: the CPU's best)"},
    /* measure: FFTW_MEASURE plans, ~0.9 s for conv2d's 256 x 384 tile pair and 20% faster
     * transforms (0.405 against 0.504 ms), kept in the wisdom file; auto takes such a plan
     * from the wisdom when one is there (FFTW_WISDOM_ONLY), else estimates (3 ms) */
    [PK_PARAM_CONV2D_FFT_PLAN] = {"conv2d.fft_plan", NULL, T_CHOICE, 0, 0,
        "auto,estimate,measure", "auto, estimate or measure", "auto", 0,
        "OpenMP fft: FFTW's planning rigor (auto: measured plans from the wisdom file when "
        "there, else estimated)"},
    [PK_PARAM_DIFFUSION3D_CL_SCHEME] = {"diffusion3d.cl_scheme", "PORTKERN_CL_D3_SCHEME",
        T_CHOICE, 0, 0, "auto,xvec,zmarch", "auto, xvec or zmarch", "auto", 0,
        "OpenCL kernel: x-vectorised (xvec) or marching in z (zmarch); auto: zmarch on GPUs"},
    /* 6 steps x 32 rows: with the AVX-512 rows 25% faster than 4 x 64 at 256^3 (8 x 32 and
     * 8 x 24 the same, 10 x 32 8% slower; docs/PERFORMANCE.md, "diffusion3d: AVX-512 rows");
     * a thread's rings, 3 (depth - 1) planes of rows + 2 (depth - 1), stay at 4 x 64's
     * 630 KiB for nx = 256: they should stay in its L2 */
    [PK_PARAM_DIFFUSION3D_TB_DEPTH] = {"diffusion3d.tb_depth", NULL, T_INT, 1, 16, NULL,
        "an integer in [1, 16]", "6", 0,
        "OpenMP omp-tb: steps per pass over memory (temporal blocking depth)"},
    [PK_PARAM_DIFFUSION3D_TB_ROWS] = {"diffusion3d.tb_rows", NULL, T_INT, 1, 4096, NULL,
        "an integer in [1, 4096]", "32", 0,
        "OpenMP omp-tb: y rows per block a thread marches along z"},
    [PK_PARAM_DIFFUSION3D_ISA] = {"diffusion3d.isa", NULL, T_CHOICE, 0, 0, ISA_CHOICES,
        ISA_VALUES, "auto", 0,
        "OpenMP omp-tiled / omp-tb / omp-phalanx: lower the SIMD level (auto: the CPU's best)"},
    [PK_PARAM_DSLASH_ISA] = {"dslash.isa", "PORTKERN_DS_ISA", T_CHOICE, 0, 0, ISA_CHOICES,
        ISA_VALUES, "auto", 0, "OpenMP omp-vnode: lower the SIMD level (auto: the CPU's best)"},
    [PK_PARAM_GRID_CUDA_BLOCKS] = {"grid.cuda_blocks", "PORTKERN_CUDA_GR_BLOCKS", T_PAIR, 1, 1024,
        NULL, "auto or 'outer,central' block counts in [1, 1024]", "auto", 0,
        "CUDA cuda-tiled: blocks per outer tile and per central-box tile (auto: scaled by SMs)"},
    /* The grid's tile fields (pk_grid_params) by name, for a context and its wisdom: a named
     * value applies where the caller left the field at its default (tile_size 0,
     * central_radius 0, tile_factor negative); a field the caller set wins (lib/grid.c). */
    [PK_PARAM_GRID_TILE_SIZE] = {"grid.tile_size", NULL, T_AUTO_INT, 1, 4096, NULL,
        "auto or an integer in [1, 4096]", "auto", 0,
        "tiled variants: tile edge in cells where pk_grid_params.tile_size is 0 (auto: the "
        "variant's own: 128 on OpenMP, 256 there where the widest footprint exceeds 128 "
        "cells, 64 on OpenCL)"},
    [PK_PARAM_GRID_CENTRAL_RADIUS] = {"grid.central_radius", NULL, T_AUTO_INT, -1, 1024, NULL,
        "auto, -1 (no central box) or an integer in [1, 1024]", "auto", 0,
        "tiled variants: central box half-width in tiles where pk_grid_params.central_radius "
        "is 0"},
    [PK_PARAM_GRID_TILE_FACTOR] = {"grid.tile_factor", NULL, T_FRAC, 0, 0, NULL,
        "auto or a number in [0, 1]", "auto", 0,
        "CUDA hybrid: tiled fraction of the work where pk_grid_params.tile_factor is negative"},
    [PK_PARAM_GRID_ISA] = {"grid.isa", NULL, T_CHOICE, 0, 0, ISA_CHOICES, ISA_VALUES, "auto", 0,
        "OpenMP omp-tiled (grid, image, degrid): avx512 the hand-written AVX-512 loops, avx2 "
        "or generic the compiler's (auto: the CPU's best)"},
    [PK_PARAM_LAPLACE2D_ISA] = {"laplace2d.isa", "PORTKERN_LP_ISA", T_CHOICE, 0, 0, ISA_CHOICES,
        ISA_VALUES, "auto", 0, "OpenMP omp-simd / omp-tb: lower the SIMD level (auto: the CPU's best)"},
    [PK_PARAM_LAPLACE2D_STREAM] = {"laplace2d.stream", "PORTKERN_LP_STREAM", T_CHOICE, 0, 0,
        "auto,0,1", "auto, 0 or 1", "auto", 1,
        "OpenMP: 1: every pass into a second field with streaming stores (not in place); 0: "
        "no streaming stores; auto: passes in place, streaming where they cannot be and two "
        "fields exceed the LLC (omp-simd and omp-tb rows)"},
    [PK_PARAM_LAPLACE2D_CL_SCHEME] = {"laplace2d.cl_scheme", "PORTKERN_CL_LP_SCHEME", T_CHOICE, 0,
        0, "auto,vec,item", "auto, vec or item", "auto", 0,
        "OpenCL kernel: vector rows (vec) or one site per item; auto: vec on CPUs"},
    [PK_PARAM_LAPLACE2D_TB_DEPTH] = {"laplace2d.tb_depth", NULL, T_AUTO_INT, 1, 16, NULL,
        "auto or an integer in [1, 16]", "auto", 0,
        "OpenMP omp-tb: iterations per pass over memory, at most (temporal blocking depth; "
        "auto: 8 where the two fields exceed the last-level cache, else 4; a call takes the "
        "depth up to it with the fewest passes)"},
    [PK_PARAM_MAGICFILTER3D_ISA] = {"magicfilter3d.isa", "PORTKERN_MF_ISA", T_CHOICE, 0, 0,
        ISA_CHOICES, ISA_VALUES, "auto", 0,
        "serial simd / OpenMP omp: lower the SIMD level (auto: the CPU's best)"},
    [PK_PARAM_MAGICFILTER3D_CL_SCHEME] = {"magicfilter3d.cl_scheme", "PORTKERN_CL_MF_SCHEME",
        T_CHOICE, 0, 0, "auto,vec,tile", "auto, vec or tile", "auto", 0,
        "OpenCL pass: vector lines (vec) or local-memory tiles; auto: vec on CPUs"},
    /* Backend-wide (not one kernel's): every kernel's entry may carry it (pk_tuning_overlay). */
    [PK_PARAM_OPENMP_THREADS] = {"openmp.threads", NULL, T_AUTO_INT, 1, PK_MAX_THREADS, NULL,
        "auto or an integer in [1, 4096]", "auto", 0,
        "OpenMP plans: host threads where the context's threads is 0 (neither the caller nor "
        "PORTKERN_THREADS set it; auto: OpenMP's default)"},
    [PK_PARAM_SU3_ISA] = {"su3.isa", "PORTKERN_S3_ISA", T_CHOICE, 0, 0, ISA_CHOICES, ISA_VALUES,
        "auto", 0, "OpenMP omp-simd: lower the SIMD level (auto: the CPU's best)"},
    [PK_PARAM_SU3_STREAM] = {"su3.stream", "PORTKERN_S3_STREAM", T_CHOICE, 0, 0, "auto,0,1",
        "auto, 0 or 1", "auto", 1,
        "OpenMP omp-simd: streaming stores off (0) or on (1); auto: on for large arrays"},
};

/* "conv2d.fft_taps" -> "PORTKERN_CONV2D_FFT_TAPS", once per process. */
static char env_names[PK_PARAM_COUNT][64];
static pthread_once_t env_names_once = PTHREAD_ONCE_INIT;
static void env_names_make(void)
{
    for (int i = 0; i < PK_PARAM_COUNT; ++i) {
        char buf[64] = "PORTKERN_";
        size_t n = strlen(buf);
        for (const char *c = defs[i].name; *c && n + 1 < sizeof buf; ++c)
            buf[n++] = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
        buf[n] = '\0';
        memcpy(env_names[i], buf, sizeof buf);
    }
}
static void env_names_fill(void) { pthread_once(&env_names_once, env_names_make); }

/* The index of `s` among a choice list ("a,b|b2,c"), or -1. */
static int choice_index(const char *choices, const char *s)
{
    int idx = 0;
    size_t n = strlen(s);
    for (const char *p = choices; *p; ++idx) {
        size_t len = strcspn(p, ",");
        for (const char *q = p; q < p + len;) { /* the name and its aliases */
            size_t alen = strcspn(q, "|,");
            if (alen == n && strncmp(q, s, n) == 0) return idx;
            q += alen + (q[alen] == '|');
        }
        p += len + (p[len] == ',');
    }
    return -1;
}

static int parse_int(const char *s, int lo, int hi, int *out, const char **end)
{
    char *e;
    errno = 0;
    long x = strtol(s, &e, 10);
    if (e == s || errno != 0 || x < lo || x > hi || isspace((unsigned char)*s)) return -1;
    *out = (int)x;
    *end = e;
    return 0;
}

/* Text into v; -1 when the parameter does not accept it. */
static int parse_value(const param_def *d, const char *s, int *v)
{
    const char *end;
    v[0] = v[1] = 0;
    switch (d->type) {
    case T_INT: return parse_int(s, d->lo, d->hi, &v[0], &end) == 0 && !*end ? 0 : -1;
    case T_CHOICE: return (v[0] = choice_index(d->choices, s)) < 0 ? -1 : 0;
    case T_AUTO_INT:
        if (!strcmp(s, "auto")) return 0;
        v[1] = 1;
        return parse_int(s, d->lo, d->hi, &v[0], &end) == 0 && !*end && v[0] != 0 ? 0 : -1;
    case T_FRAC: {
        if (!strcmp(s, "auto")) return 0;
        char *e;
        const double x = strtod(s, &e);
        if (e == s || *e || isspace((unsigned char)*s) || !(x >= 0 && x <= 1)) return -1;
        v[0] = (int)(x * 1e6 + 0.5);
        v[1] = 1;
        return 0;
    }
    default: /* T_PAIR: 0,0 is auto */
        if (!strcmp(s, "auto")) return 0;
        return parse_int(s, d->lo, d->hi, &v[0], &end) == 0 && *end == ',' &&
                       parse_int(end + 1, d->lo, d->hi, &v[1], &end) == 0 && !*end
                   ? 0
                   : -1;
    }
}

static void set_default(pk_tuning *t, int i)
{
    t->source[i] = PK_PARAM_DEFAULT;
    t->bad[i] = 0;
    t->text[i][0] = '\0';
    (void)parse_value(&defs[i], defs[i].def, t->value[i]);
}

/* The environment's value of parameter i (env_text, from env_name), as pk_tuning_init found
 * it. */
static void apply_env(pk_tuning *t, int i)
{
    const param_def *d = &defs[i];
    const char *v = t->env_text[i];
    t->source[i] = PK_PARAM_ENV;
    pk_strlcpy(t->text[i], v, sizeof t->text[i]);
    t->bad[i] = parse_value(d, v, t->value[i]) != 0;
    if (t->bad[i] && d->env_lenient) { /* as it always read: "0" off, anything else on */
        t->value[i][0] = strcmp(v, "0") == 0 ? 1 : 2;
        t->bad[i] = 0;
    }
}

void pk_tuning_init(pk_tuning *t, int read_env)
{
    memset(t, 0, sizeof *t);
    env_names_fill();
    for (int i = 0; i < PK_PARAM_COUNT; ++i) {
        set_default(t, i);
        if (!read_env) continue;
        const char *var = env_names[i], *v = pk_getenv(var);
        if (!v && defs[i].env_alias && (v = pk_getenv(defs[i].env_alias))) var = defs[i].env_alias;
        if (!v) continue;
        pk_strlcpy(t->env_text[i], v, sizeof t->env_text[i]);
        if (strlen(v) >= PK_PARAM_TEXT) t->env_text[i][PK_PARAM_TEXT - 2] = '~'; /* too long: bad */
        t->env_name[i] = var;
        apply_env(t, i);
    }
}

pk_status pk_param_get(const pk_tuning *t, pk_param_id id, int *v)
{
    const param_def *d = &defs[id];
    if (!t) {
        (void)parse_value(d, d->def, v);
        return PK_OK;
    }
    if (t->bad[id])
        return pk_fail(PK_EINVAL, "%s (tuning parameter %s): expected %s, got '%s'",
                       t->env_name[id], d->name, d->values, t->text[id]);
    v[0] = t->value[id][0];
    v[1] = t->value[id][1];
    return PK_OK;
}

int pk_param_chosen(const pk_tuning *t, pk_param_id id)
{
    return t && t->source[id] != PK_PARAM_DEFAULT;
}

int pk_tuning_threads(const pk_tuning *t, int context_threads)
{
    int v[2] = {0, 0};
    if (context_threads > 0 || !t || pk_param_get(t, PK_PARAM_OPENMP_THREADS, v) != PK_OK)
        return context_threads;
    return v[1] ? v[0] : 0;
}

pk_status pk_simd_level(const pk_tuning *t, pk_param_id id, int cpu_level, int *level)
{
    int v[2] = {0, 0};
    *level = cpu_level;
    PK_TRY(pk_param_get(t, id, v));
    /* choice 0 is auto; 1.. are PK_SIMD_GENERIC.. */
    if (v[0] > 0 && v[0] - 1 < cpu_level) *level = v[0] - 1;
    return PK_OK;
}

/* ---- the list, and values by name ---------------------------------------------------- */
int pk_param_count(void) { return PK_PARAM_COUNT; }

pk_status pk_param_info(int index, pk_param_desc *desc)
{
    pk_clear_error();
    PK_CHECK_NULL(desc);
    PK_CHECK(index >= 0 && index < PK_PARAM_COUNT, PK_EINVAL,
             "index: must be in [0, %d), got %d", PK_PARAM_COUNT, index);
    env_names_fill();
    const param_def *d = &defs[index];
    desc->name = d->name;
    desc->env = env_names[index];
    desc->env_alias = d->env_alias;
    desc->values = d->values;
    desc->def = d->def;
    desc->doc = d->doc;
    return PK_OK;
}

/* The id of a name, or PK_EINVAL listing the names. */
static pk_status find_param(const char *name, int *id)
{
    for (int i = 0; i < PK_PARAM_COUNT; ++i)
        if (!strcmp(name, defs[i].name)) {
            *id = i;
            return PK_OK;
        }
    char list[1024] = "";
    for (int i = 0; i < PK_PARAM_COUNT; ++i)
        pk_append_note(list, sizeof list, "%s", defs[i].name);
    return pk_fail(PK_EINVAL, "unknown tuning parameter '%s' (known: %s)", name, list);
}

pk_status pk_tuning_set(pk_tuning *t, const char *name, const char *value)
{
    int i = 0;
    PK_TRY(find_param(name, &i));
    if (!value) {
        set_default(t, i);
        if (t->env_text[i][0]) apply_env(t, i);
        return PK_OK;
    }
    int v[2] = {0, 0};
    PK_CHECK(strlen(value) < PK_PARAM_TEXT && parse_value(&defs[i], value, v) == 0, PK_EINVAL,
             "%s: expected %s, got '%s'", name, defs[i].values, value);
    t->source[i] = PK_PARAM_CALLER;
    t->bad[i] = 0;
    t->value[i][0] = v[0];
    t->value[i][1] = v[1];
    pk_strlcpy(t->text[i], value, sizeof t->text[i]);
    return PK_OK;
}

pk_status pk_tuning_text(const pk_tuning *t, const char *name, char *buf, size_t len,
                         pk_param_source *source)
{
    int i = 0;
    PK_TRY(find_param(name, &i));
    pk_strlcpy(buf, t->source[i] == PK_PARAM_DEFAULT ? defs[i].def : t->text[i], len);
    if (source) *source = (pk_param_source)t->source[i];
    int v[2];
    return pk_param_get(t, (pk_param_id)i, v);
}

/* ", "-separated: the reason's own notes are separated by "; " */
static void list_add(char *dst, size_t len, const char *s)
{
    const size_t used = strlen(dst);
    if (used + 1 < len) snprintf(dst + used, len - used, "%s%s", used ? ", " : "", s);
}

pk_status pk_tuning_overlay(pk_tuning *t, const char *kernel, const char *text, char *applied,
                            size_t applied_len, char *kept, size_t kept_len)
{
    const size_t klen = strlen(kernel);
    applied[0] = kept[0] = '\0';
    for (const char *p = text; *p;) {
        const size_t len = strcspn(p, ";");
        char item[2 * PK_PARAM_TEXT + 64];
        PK_CHECK(len < sizeof item, PK_EINVAL, "tuning '%.40s...': too long", p);
        memcpy(item, p, len);
        item[len] = '\0';
        p += len + (p[len] == ';');
        char *eq = strchr(item, '=');
        PK_CHECK(eq != NULL, PK_EINVAL, "tuning '%s': expected NAME=VALUE", item);
        *eq = '\0';
        /* an entry of one kernel names that kernel's parameters only, and the backend-wide
         * ones (openmp.threads) */
        PK_CHECK((!strncmp(item, kernel, klen) && item[klen] == '.') ||
                     !strncmp(item, "openmp.", 7),
                 PK_EINVAL,
                 "tuning '%s': not a parameter of %s", item, kernel);
        int i = 0;
        PK_TRY(find_param(item, &i));
        if (t->source[i] != PK_PARAM_DEFAULT) { /* the caller's or the environment's beats it */
            list_add(kept, kept_len, item);
            continue;
        }
        PK_TRY(pk_tuning_set(t, item, eq + 1));
        *eq = '=';
        list_add(applied, applied_len, item);
    }
    return PK_OK;
}
