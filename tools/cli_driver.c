/* cli_driver.c - the generic run, gen and bench of portkern over the kernel descriptors of
 * tools/cli_<kernel>.c (cli_kernel.h).  Everything every kernel does the same way is here,
 * once: options and params.json from the parameter table, the context, the JSON line, the
 * verdict, atomic output files, and the benchmark loop (plan, upload, warm-up, timed runs,
 * download, verify, roof). */
#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli_kernel.h"

#define MAIN_PROG "portkern"

const cli_kernel *const cli_kernels[] = {
    &cli_kernel_diffusion3d, &cli_kernel_conv2d, &cli_kernel_grid, &cli_kernel_magicfilter3d,
    &cli_kernel_laplace2d, &cli_kernel_su3, &cli_kernel_dslash, NULL};

int cli_size_index(const char *name)
{
    static const char *const sizes[3] = {"small", "paper", "large"};
    for (int i = 0; i < 3; ++i)
        if (strcmp(name, sizes[i]) == 0) return i;
    return -1;
}

const cli_kernel *cli_kernel_find(const char *name)
{
    for (int i = 0; name && cli_kernels[i]; ++i)
        if (strcmp(cli_kernels[i]->name, name) == 0) return cli_kernels[i];
    return NULL;
}

/* 1 when --name is an option of some kernel that takes no value. */
static int any_flag(const char *name)
{
    int flag = strcmp(name, "verify") == 0 || strcmp(name, "help") == 0;
    for (int n = 0; cli_kernels[n]; ++n)
        for (const cli_param *p = cli_kernels[n]->params; p && p->name; ++p)
            if (p->type == CLI_P_FLAG || p->type == CLI_P_BOOL)
                flag |= strcmp(name, p->name) == 0 ||
                        (p->type == CLI_P_BOOL && strncmp(name, "no-", 3) == 0 &&
                         strcmp(name + 3, p->name) == 0);
    return flag;
}

/* The kernel operand of a run/gen command line: the first word that is neither an option
 * nor an option's value (options of every kernel that take no value are known here). */
const char *cli_kernel_operand(int argc, char **argv)
{
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' || a[1] == '\0') return a;
        if (a[1] != '-' || strchr(a, '=')) continue;
        if (!any_flag(a + 2)) ++i; /* the option's value */
    }
    return NULL;
}

/* ---- parameters ------------------------------------------------------------------------ */
static int param_index(const cli_kernel *k, const char *name)
{
    for (int i = 0; k->params && k->params[i].name; ++i)
        if (strcmp(k->params[i].name, name) == 0) return i;
    return -1;
}

int cli_seen(const cli_call *c, const char *name)
{
    const int i = param_index(c->k, name);
    return i < 0 ? 0 : c->seen[i];
}

void cli_set_seen(cli_call *c, const char *name, int how)
{
    const int i = param_index(c->k, name);
    if (i >= 0) c->seen[i] = (unsigned char)how;
}

const char *cli_seen_text(const cli_call *c, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, cli_seen(c, name) == CLI_SEEN_OPT ? "--%s" : "params.json's %s", name);
    return buf;
}

static void *field(void *args, const cli_param *p) { return (char *)args + p->off; }

/* What the parser writes before the driver converts it into the args struct. */
typedef struct param_slots {
    double num[CLI_PMAX];
    const char *str[CLI_PMAX];
    int seen[CLI_PMAX];
    int flag[CLI_PMAX], noflag[CLI_PMAX], noseen[CLI_PMAX]; /* BOOL: --name, --no-name */
    char noname[CLI_PMAX][48];
} param_slots;

static int add_param_opts(const cli_kernel *k, unsigned where, void *args, param_slots *s,
                          cli_opt *o, int n)
{
    for (int i = 0; k->params && k->params[i].name; ++i) {
        const cli_param *p = &k->params[i];
        if (!(p->in & where)) continue;
        switch (p->type) {
        case CLI_P_INT:
            n = cli_opt_add(o, n, p->name, CLI_INT, field(args, p), &s->seen[i], p->min, p->max);
            break;
        case CLI_P_DOUBLE:
            n = cli_opt_add(o, n, p->name, CLI_DOUBLE, field(args, p), &s->seen[i], p->min,
                            p->max);
            break;
        case CLI_P_COUNT:
            n = cli_opt_add(o, n, p->name, CLI_DOUBLE, &s->num[i], &s->seen[i], p->min, p->max);
            break;
        case CLI_P_NAME:
            n = cli_opt_add(o, n, p->name, CLI_STRING, &s->str[i], &s->seen[i], 0, 0);
            break;
        case CLI_P_TEXT:
            n = cli_opt_add(o, n, p->name, CLI_STRING, field(args, p), &s->seen[i], 0, 0);
            break;
        case CLI_P_BOOL:
            n = cli_opt_add(o, n, p->name, CLI_FLAG, &s->flag[i], &s->seen[i], 0, 0);
            snprintf(s->noname[i], sizeof s->noname[i], "no-%s", p->name);
            n = cli_opt_add(o, n, s->noname[i], CLI_FLAG, &s->noflag[i], &s->noseen[i], 0, 0);
            break;
        case CLI_P_FLAG:
            n = cli_opt_add(o, n, p->name, CLI_FLAG, field(args, p), &s->seen[i], 0, 0);
            break;
        }
    }
    return n;
}

/* The parsed slots into the args struct: whole counts, known names. */
static int take_param_opts(cli_call *c, param_slots *s)
{
    const cli_kernel *k = c->k;
    for (int i = 0; k->params && k->params[i].name; ++i) {
        const cli_param *p = &k->params[i];
        if (p->type == CLI_P_BOOL && s->seen[i] && s->noseen[i])
            return cli_usage_error(c->prog, "options --%s and --no-%s contradict", p->name,
                                   p->name);
        if (p->type == CLI_P_BOOL && (s->seen[i] || s->noseen[i])) {
            c->seen[i] = CLI_SEEN_OPT;
            *(int *)field(c->args, p) = s->seen[i] != 0;
            continue;
        }
        if (!s->seen[i]) continue;
        c->seen[i] = CLI_SEEN_OPT;
        if (p->type == CLI_P_COUNT) {
            if (s->num[i] != floor(s->num[i]))
                return cli_usage_error(c->prog, "option --%s: %g is not a whole number", p->name,
                                       s->num[i]);
            *(size_t *)field(c->args, p) = (size_t)s->num[i];
        } else if (p->type == CLI_P_NAME) {
            if (p->names->from_name(s->str[i], (int *)field(c->args, p)) != PK_OK)
                return cli_usage_error(c->prog, "option --%s: unknown %s '%s' (%s)", p->name,
                                       p->name, s->str[i], p->names->list);
        }
    }
    return 0;
}

/* "a, b, c" (a NAME parameter's names) as "\"a\", \"b\" or \"c\"". */
static void quoted_names(const char *names, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    while (*names && used < len) {
        const char *e = strstr(names, ", ");
        const int n = (int)(e ? (size_t)(e - names) : strlen(names));
        used += (size_t)snprintf(buf + used, len - used, "%s\"%.*s\"",
                                 !used ? "" : e ? ", " : " or ", n, names);
        names = e ? e + 2 : names + n;
    }
}

/* DIR/params.json: the values the command line did not set.  A key the kernel does not know is
 * a warning (a typo must not pass unseen); a value of the wrong type or range is bad input. */
int cli_params_apply(cli_call *c, const char *path, const cli_jobject *obj)
{
    const cli_kernel *k = c->k;
    int rc = 0;
    for (int i = 0; i < obj->n; ++i) {
        const cli_jvalue *v = &obj->v[i];
        const int pi = param_index(k, v->key);
        int info = strcmp(v->key, "kernel") == 0;
        for (int n = 0; k->info_keys && k->info_keys[n]; ++n)
            info |= strcmp(v->key, k->info_keys[n]) == 0;
        if (info) continue;
        if (pi < 0 || !(k->params[pi].in & CLI_IN_PARAMS)) {
            fprintf(stderr, "%s: warning: %s: unknown key \"%s\" ignored\n", c->prog, path,
                    v->key);
            continue;
        }
        const cli_param *p = &k->params[pi];
        int id = 0;
        const int num_ok = v->type == CLI_JNUM && v->num >= p->min && v->num <= p->max;
        switch (p->type) {
        case CLI_P_INT:
        case CLI_P_COUNT:
            if (!num_ok || v->num != floor(v->num)) {
                if (p->max >= INT_MAX) /* no upper bound worth naming */
                    rc = cli_usage_error(c->prog, "%s: \"%s\" must be an integer >= %.17g",
                                         path, p->name, p->min);
                else
                    rc = cli_usage_error(c->prog, "%s: \"%s\" must be an integer in [%.17g, "
                                         "%.17g]", path, p->name, p->min, p->max);
            }
            break;
        case CLI_P_DOUBLE:
            if (!num_ok)
                rc = cli_usage_error(c->prog, "%s: \"%s\" must be a number in [%.17g, %.17g]",
                                     path, p->name, p->min, p->max);
            break;
        case CLI_P_NAME:
            if (v->type != CLI_JSTR || p->names->from_name(v->str, &id) != PK_OK) {
                char quoted[512];
                quoted_names(p->names->list, quoted, sizeof quoted);
                rc = cli_usage_error(c->prog, "%s: \"%s\" must be %s", path, p->name, quoted);
            }
            break;
        case CLI_P_TEXT:
            if (v->type != CLI_JSTR)
                rc = cli_usage_error(c->prog, "%s: \"%s\" must be a string", path, p->name);
            break;
        case CLI_P_BOOL:
        case CLI_P_FLAG: /* never in params.json: no CLI_IN_PARAMS */
            if (!(v->type == CLI_JBOOL || (v->type == CLI_JNUM && (v->num == 0 || v->num == 1))))
                rc = cli_usage_error(c->prog, "%s: \"%s\" must be true, false, 0 or 1", path,
                                     p->name);
            break;
        }
        if (rc) break;
        if (c->seen[pi]) continue; /* the command line wins */
        c->seen[pi] = CLI_SEEN_FILE;
        void *f = field(c->args, p);
        switch (p->type) {
        case CLI_P_INT: *(int *)f = (int)v->num; break;
        case CLI_P_COUNT: *(size_t *)f = (size_t)v->num; break;
        case CLI_P_DOUBLE: *(double *)f = v->num; break;
        case CLI_P_NAME: *(int *)f = id; break;
        case CLI_P_TEXT: *(const char **)f = v->str; break; /* obj is kept until the end */
        case CLI_P_BOOL:
        case CLI_P_FLAG: *(int *)f = v->num != 0; break;
        }
    }
    return rc;
}

static int read_params(cli_call *c, const char *dir, char **keep)
{
    char path[4096];
    cli_jobject *obj;
    int rc;
    if (cli_join(path, sizeof path, dir, "params.json"))
        return cli_usage_error(c->prog, "path too long: %s", dir);
    if ((rc = cli_params_load(c->prog, path, c->k->name, &obj, keep)) || !obj) return rc;
    if ((rc = cli_params_apply(c, path, obj))) {
        free(obj);
        free(*keep);
        *keep = NULL;
        return rc;
    }
    /* *keep holds the text; the object holds the strings TEXT parameters point to. */
    free(*keep);
    *keep = (char *)obj;
    return 0;
}

static void write_params(cli_json *j, const cli_kernel *k, const void *args)
{
    for (int i = 0; k->params && k->params[i].name; ++i) {
        const cli_param *p = &k->params[i];
        const void *f = (const char *)args + p->off;
        if (!(p->in & CLI_IN_PARAMS)) continue;
        switch (p->type) {
        case CLI_P_INT: cj_int(j, p->name, *(const int *)f); break;
        case CLI_P_COUNT: cj_int(j, p->name, (long long)*(const size_t *)f); break;
        case CLI_P_DOUBLE: cj_num(j, p->name, *(const double *)f); break;
        case CLI_P_NAME: cj_str(j, p->name, p->names->to_name(*(const int *)f)); break;
        case CLI_P_TEXT: cj_str(j, p->name, *(const char *const *)f); break;
        case CLI_P_BOOL:
        case CLI_P_FLAG: cj_bool(j, p->name, *(const int *)f); break;
        }
    }
}

int cli_read_npy(const char *prog, const char *dir, const char *name, pk_dtype dtype, int ndim,
                 const size_t *want, const char *what, pk_array *arr)
{
    char path[4096], shape[160];
    if (cli_join(path, sizeof path, dir, name)) return cli_usage_error(prog, "path too long: %s", dir);
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    cli_shape_text(arr->shape, arr->ndim, shape, sizeof shape);
    int ok = arr->dtype == dtype && arr->ndim == ndim;
    for (int i = 0; ok && i < ndim; ++i) {
        if (arr->shape[i] == 0) {
            pk_array_free(arr);
            return cli_usage_error(prog, "%s: dimension %d has size 0 (must be >= 1)", path, i);
        }
        ok = !want[i] || arr->shape[i] == want[i];
    }
    if (ok) return 0;
    const char *d = pk_dtype_descr(arr->dtype);
    pk_array_free(arr);
    return cli_usage_error(prog, "%s: expected %s, got '%s' with shape %s", path, what,
                           d ? d : "?", shape);
}

/* ---- arrays ----------------------------------------------------------------------------- */
static size_t param_count(const cli_kernel *k, const void *args, int i)
{
    const void *f = (const char *)args + k->params[i].off;
    return k->params[i].type == CLI_P_COUNT ? *(const size_t *)f : (size_t)*(const int *)f;
}

static void **array_ptr(void *data, const cli_array *a) { return (void **)((char *)data + a->off); }

/* An array's shape from the args (see cli_array): its rank; extent d is ext[d], from the
 * parameter pi[d] (-1: a number) plus add[d]; names gets "[nv][3][3]". */
static int array_dims(const cli_kernel *k, const void *args, const cli_array *a, size_t *ext,
                      int *pi, size_t *add, char *names, size_t len)
{
    const char *s = a->shape ? a->shape : k->shape(args, a);
    int n = 0;
    names[0] = '\0';
    for (size_t used = 0; *s && n < PK_NPY_MAX_DIMS; ++n) {
        const size_t item = strcspn(s, ","), name = strcspn(s, ",+");
        char word[32];
        snprintf(word, sizeof word, "%.*s", (int)name, s);
        pi[n] = isdigit((unsigned char)*s) ? -1 : param_index(k, word);
        add[n] = name < item ? strtoul(s + name + 1, NULL, 10) : 0;
        ext[n] = pi[n] < 0 ? strtoul(word, NULL, 10) : param_count(k, args, pi[n]) + add[n];
        if (used < len) used += (size_t)snprintf(names + used, len - used, "[%.*s]", (int)item, s);
        s += item + (s[item] == ',');
    }
    return n;
}

/* Read the table's inputs from DIR; their named extents set (or must agree with) the
 * parameters.  The arrays belong to the data from here on. */
static int load_arrays(cli_call *c, const char *dir, void *data)
{
    const cli_kernel *k = c->k;
    const char *set_by[CLI_PMAX] = {0}; /* the file whose extent set a parameter */
    for (const cli_array *a = k->arrays; a && a->file; ++a) {
        size_t ext[PK_NPY_MAX_DIMS], add[PK_NPY_MAX_DIMS], want[PK_NPY_MAX_DIMS];
        int pi[PK_NPY_MAX_DIMS];
        char names[160], what[256], shape[160], by[96];
        pk_array arr;
        if (!(a->role & CLI_A_IN)) continue;
        const int nd = array_dims(k, c->args, a, ext, pi, add, names, sizeof names);
        for (int d = 0; d < nd; ++d) want[d] = pi[d] < 0 ? ext[d] : 0;
        snprintf(what, sizeof what, "a %s ('%s') array with %d dimensions %s",
                 cli_dtype_name(a->dtype), pk_dtype_descr(a->dtype), nd, names);
        int rc = cli_read_npy(c->prog, dir, a->file, a->dtype, nd, want, what, &arr);
        if (rc) return rc;
        *array_ptr(data, a) = arr.data;
        cli_shape_text(arr.shape, nd, shape, sizeof shape);
        for (int d = 0; d < nd; ++d) {
            if (pi[d] < 0) continue;
            const cli_param *p = &k->params[pi[d]];
            const size_t e = arr.shape[d], v = e - add[d];
            if (e < add[d] || (double)v < p->min || (double)v > p->max)
                return cli_usage_error(c->prog, "%s/%s: dimension %d has size %zu (must be "
                                       "%.17g..%.17g)", dir, a->file, d, e, p->min + add[d],
                                       p->max + add[d]);
            if (c->seen[pi[d]] || set_by[pi[d]]) {
                if (set_by[pi[d]])
                    snprintf(by, sizeof by, "%s's %s", set_by[pi[d]], p->name);
                else
                    cli_seen_text(c, p->name, by, sizeof by);
                if (param_count(k, c->args, pi[d]) != v)
                    return cli_usage_error(c->prog, "%s/%s has shape %s but %s is %zu", dir,
                                           a->file, shape, by, param_count(k, c->args, pi[d]));
            }
            if (p->type == CLI_P_COUNT)
                *(size_t *)field(c->args, p) = v;
            else
                *(int *)field(c->args, p) = (int)v;
            set_by[pi[d]] = a->file;
        }
    }
    return 0;
}

/* calloc the arrays of a role: 0, the usage error of a size past size_t, or 1 when the
 * memory is not there. */
static int alloc_arrays(const cli_call *c, void *data, unsigned role)
{
    for (const cli_array *a = c->k->arrays; a && a->file; ++a) {
        size_t ext[PK_NPY_MAX_DIMS], add[PK_NPY_MAX_DIMS], n = pk_dtype_size(a->dtype);
        int pi[PK_NPY_MAX_DIMS], over = 0;
        char names[160], shape[160];
        if (!(a->role & role)) continue;
        const int nd = array_dims(c->k, c->args, a, ext, pi, add, names, sizeof names);
        for (int d = 0; d < nd; ++d) {
            over |= ext[d] && n > SIZE_MAX / ext[d];
            n *= ext[d];
        }
        cli_shape_text(ext, nd, shape, sizeof shape);
        if (over)
            return cli_usage_error(c->prog, "%s: a %s array of shape %s does not fit in memory",
                                   a->file, cli_dtype_name(a->dtype), shape);
        if (!(*array_ptr(data, a) = calloc(n ? n : 1, 1))) {
            fprintf(stderr, "%s: out of host memory for %s (%s %s)\n", c->prog, a->file,
                    cli_dtype_name(a->dtype), shape);
            return CLI_EXIT_FAIL;
        }
    }
    return 0;
}

static int write_arrays(const cli_call *c, const char *dir, const void *data, unsigned role)
{
    for (const cli_array *a = c->k->arrays; a && a->file; ++a) {
        size_t ext[PK_NPY_MAX_DIMS], add[PK_NPY_MAX_DIMS];
        int pi[PK_NPY_MAX_DIMS], rc;
        char names[160];
        if (!(a->role & role)) continue;
        const int nd = array_dims(c->k, c->args, a, ext, pi, add, names, sizeof names);
        if ((rc = cli_write_npy(c->prog, dir, a->file, a->dtype, nd, ext,
                                *array_ptr((void *)data, a))))
            return rc;
    }
    return 0;
}

/* The kernel's data and the table's arrays in it. */
static void data_free(const cli_kernel *k, void *data)
{
    if (!data) return;
    for (const cli_array *a = k->arrays; a && a->file; ++a) free(*array_ptr(data, a));
    if (k->data_free) k->data_free(data);
    free(data);
}

/* ---- help ------------------------------------------------------------------------------- */
/* One option's lines: the option in columns 3-17 (a longer one on a line of its own), its
 * text from column 19, wrapped at column 88. */
static void help_line(FILE *f, const char *opt, const char *text)
{
    int col = 0;
    fprintf(f, strlen(opt) > 15 ? "  %s\n%18s" : "  %-15s ", opt, "");
    while (*text) {
        const int w = (int)strcspn(text, " ");
        if (col > 0 && col + 1 + w > 70) {
            fprintf(f, "\n%18s", "");
            col = 0;
        } else if (col > 0) {
            fputc(' ', f);
            ++col;
        }
        fprintf(f, "%.*s", w, text);
        col += w;
        for (text += w; *text == ' '; ++text) {}
    }
    fputc('\n', f);
}

/* The option lines of the kernel's parameters that `where` (run or gen) has. */
static void param_usage(const cli_kernel *k, unsigned where, FILE *f)
{
    fprintf(f, "\nOptions of %s:\n", k->name);
    for (const cli_param *p = k->params; p && p->name; ++p) {
        char opt[64];
        if (!(p->in & where) || !p->help) continue;
        snprintf(opt, sizeof opt, "--%s%s%s", p->name, p->arg ? " " : "", p->arg ? p->arg : "");
        help_line(f, opt, p->help);
    }
}

static void run_usage(const cli_kernel *k, FILE *f)
{
    char text[1024];
    const char *sep = ":";
    size_t used = (size_t)snprintf(text, sizeof text, "the backend's variants (the first its "
                                   "default; with --backend auto a variant selects its backend)");
    for (int be = PK_BACKEND_SERIAL; be < PK_BACKEND_COUNT && used < sizeof text; ++be) {
        const char *v = k->variants((pk_backend_id)be);
        if (!v || !*v) continue;
        used += (size_t)snprintf(text + used, sizeof text - used, "%s %s: %s", sep,
                                 pk_backend_name((pk_backend_id)be), v);
        sep = ";";
    }
    fprintf(f, "Usage: portkern run %s [options]\n", k->name);
    fputs(k->run_help, f);
    param_usage(k, CLI_IN_RUN, f);
    fprintf(f,
        "\nOptions of every kernel:\n"
        "  --backend B     auto (default; PORTKERN_BACKEND), serial, openmp, opencl, cuda\n");
    help_line(f, "--variant V", text);
    fprintf(f,
        "  --device N      device index within the backend (portkern-probe lists them)\n"
        "  --threads N     OpenMP threads (0: OpenMP's default)\n"
        "  --preset S      small, paper or large: the sizes 'portkern bench --size S' runs\n"
        "  --in DIR        read the inputs 'portkern gen %s --out DIR' writes, and\n"
        "                  DIR/params.json; options given here override params.json, and\n"
        "                  sizes given must agree with the files' shapes\n"
        "  --out DIR       write the outputs as .npy files into DIR (created when missing)\n",
        k->name);
    snprintf(text, sizeof text, "also run the serial reference and compare: pass when %s",
             k->verify_rule);
    help_line(f, "--verify", text);
    fprintf(f,
        "  --rtol R        rtol of --verify (default %g)\n"
        "\n"
        "Prints one JSON line (one cold call: plan, transfers and kernel; 'portkern bench'\n"
        "times resident plan runs): kernel, backend, device, device_index, variant, seconds\n"
        "(the whole call), kernel_seconds, transfer_seconds, setup_seconds, layout_seconds,\n"
        "ms (kernel), gflop_per_s, gb_per_s (kernel time; flops and bytes by the library's\n"
        "models below), flops, bytes, flops_model, bytes_model, \"%s\" {its own fields},\n"
        "fell_back, reason; --verify adds \"verify\" {equal, mode, rtol, max_rel_err,\n"
        "max_abs_err, norm_rel_err, num_failed, first_fail} and verify_rule.\n",
        k->rtol, k->name);
    help_line(f, "flops_model", k->flops_model);
    help_line(f, "bytes_model", k->bytes_model);
    fprintf(f,
        "Exit status: 0 ok; 1 verification failed or the run failed; 2 bad option, bad input\n"
        "file, or unknown backend/variant/device.\n");
}

static void gen_usage(const cli_kernel *k, FILE *f)
{
    fprintf(f, "Usage: portkern gen %s --out DIR [options]\n", k->name);
    fputs(k->gen_help, f);
    param_usage(k, CLI_IN_GEN, f);
    fprintf(f,
        "  --preset S      small, paper or large: the sizes 'portkern bench --size S' runs\n"
        "  --out DIR       where the files go (created when missing)\n"
        "\nDIR/params.json records the parameters for 'portkern run %s --in DIR'\n"
        "(options given to run override them).\n"
        "Every file is written under a temporary name and renamed when complete; params.json\n"
        "comes last, so a DIR with params.json holds a whole data set.\n"
        "Exit status: 0 written; 1 out of memory or a write failed; 2 bad option or\n"
        "unwritable DIR.\n", k->name);
}

void cli_kernels_usage(FILE *f, const char *cmd)
{
    fprintf(f, "Usage: portkern %s KERNEL [options]   (portkern %s KERNEL --help for its "
               "options)\nKernels:\n", cmd, cmd);
    for (int i = 0; cli_kernels[i]; ++i)
        fprintf(f, "  %-14s %s\n", cli_kernels[i]->name, cli_kernels[i]->summary);
}

/* ---- run and gen ------------------------------------------------------------------------ */
/* A data set is one unit: gen writes DIR under an exclusive lock of DIR/.portkern-lock and
 * run --in reads it under a shared one, so that two gens into one DIR do not interleave their
 * files and a run never reads half of one set and half of another.  Returns the lock's
 * descriptor, -1 when a reader finds no lock file (a set written by other means), or -2 after
 * a message. */
static int lock_dir(const char *prog, const char *dir, int exclusive)
{
    char path[4096];
    if (exclusive && cli_mkdirs(dir) != 0) {
        cli_usage_error(prog, "cannot create directory %s: %s", dir, strerror(errno));
        return -2;
    }
    if (cli_join(path, sizeof path, dir, ".portkern-lock")) {
        cli_usage_error(prog, "path too long: %s", dir);
        return -2;
    }
    const int fd = open(path, exclusive ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC,
                        0666);
    if (fd < 0) {
        if (!exclusive) return -1;
        cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
        return -2;
    }
    while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0)
        if (errno != EINTR) break; /* a file system without locks: go on unlocked */
    return fd;
}

typedef struct cmd_state {
    cli_call c;
    param_slots slots;
    cli_opt opts[64];
    char *pos[2];
    int npos, nopts;
    const char *preset;
    char *keep; /* params.json, kept while TEXT parameters point into it */
} cmd_state;

static int cmd_begin(cmd_state *st, const cli_kernel *k, const char *prog, unsigned where,
                     void *args)
{
    memset(st, 0, sizeof *st);
    st->c.k = k;
    st->c.prog = prog;
    st->c.where = where;
    st->c.args = args;
    k->args_init(args);
    st->nopts = add_param_opts(k, where, args, &st->slots, st->opts, 0);
    st->nopts = cli_opt_add(st->opts, st->nopts, "preset", CLI_STRING, &st->preset, NULL, 0, 0);
    return st->nopts;
}

/* Options parsed (CLI_HELP, or the usage error's exit code); the preset replaces the defaults
 * only: the command line is parsed again over it.  Then the parameters are taken. */
static int cmd_parse(cmd_state *st, int argc, char **argv)
{
    int rc = cli_parse(st->c.prog, argc, argv, st->opts, st->pos, 1, &st->npos);
    if (rc || !st->preset) return rc ? rc : take_param_opts(&st->c, &st->slots);
    const int size = cli_size_index(st->preset);
    if (size < 0)
        return cli_usage_error(st->c.prog, "option --preset: unknown size '%s' (small, paper, "
                               "large)", st->preset);
    st->c.k->preset(size, st->c.args);
    cli_parse(st->c.prog, argc, argv, st->opts, st->pos, 1, &st->npos);
    return take_param_opts(&st->c, &st->slots);
}

int cli_run(const cli_kernel *k, int argc, char **argv)
{
    const char *prog = "portkern run";
    cmd_state st;
    const char *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    int device = -1, threads = 0, verify = 0, rc, lock = -1;
    double rtol = k->rtol;
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_run_info info;
    cli_verdict v;
    void *args = calloc(1, k->args_size), *data = calloc(1, k->data_size);

    if (!args || !data) {
        free(args);
        free(data);
        fprintf(stderr, "%s: out of host memory\n", prog);
        return CLI_EXIT_FAIL;
    }
    int n = cmd_begin(&st, k, prog, CLI_IN_RUN, args);
    n = cli_run_opts(st.opts, n, &backend, &variant, &device, &threads, &in, &out, &verify);
    cli_opt_add(st.opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    rc = cmd_parse(&st, argc, argv);
    if (rc == CLI_HELP) {
        run_usage(k, stdout);
        rc = CLI_EXIT_OK;
        goto done;
    }
    if (rc || (rc = cli_context_opts(prog, backend, device, threads, &copt))) goto done;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        goto done;
    if (in && (lock = lock_dir(prog, in, 0)) == -2) {
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    if (in && (rc = read_params(&st.c, in, &st.keep))) goto done;
    if (k->resolve && (rc = k->resolve(&st.c))) goto done;
    if (in)
        rc = load_arrays(&st.c, in, data);
    else if (!(rc = alloc_arrays(&st.c, data, CLI_A_IN)))
        rc = k->generate(&st.c, data);
    if (rc || (in && k->load && (rc = k->load(&st.c, in, data)))) goto done;
    if (lock >= 0) close(lock);
    lock = -1;

    if ((rc = alloc_arrays(&st.c, data, CLI_A_OUT))) goto done;
    pk_status s = pk_context_create(&ctx, &copt);
    if (s == PK_OK) s = k->run(ctx, variant, args, data, &info);
    if (s != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    if (verify) {
        memset(&v, 0, sizeof v);
        v.rtol = rtol;
        if ((rc = alloc_arrays(&st.c, data, CLI_A_REF))) goto done;
        if ((s = k->reference(args, data, 1)) != PK_OK || (s = k->check(args, data, &v)) != PK_OK) {
            rc = cli_lib_error(MAIN_PROG, s);
            goto done;
        }
    }
    if ((out && (rc = write_arrays(&st.c, out, data, CLI_A_OUT))) ||
        (k->write_outputs && (rc = k->write_outputs(&st.c, out, data))))
        goto done;

    cli_json j;
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_run_head(&j, k->name, &info);
    cj_run_times(&j, &info);
    cj_num(&j, "layout_seconds", info.layout_s);
    cj_num(&j, "ms", info.kernel_s > 0 ? 1e3 * info.kernel_s : NAN);
    cj_num(&j, "gflop_per_s", cli_rate(info.flops / 1e9, info.kernel_s));
    cj_num(&j, "gb_per_s", cli_rate(info.bytes / 1e9, info.kernel_s));
    cj_num(&j, "flops", info.flops);
    cj_num(&j, "bytes", info.bytes);
    cj_str(&j, "flops_model", k->flops_model);
    cj_str(&j, "bytes_model", k->bytes_model);
    cj_open(&j, k->name, '{');
    k->run_json(&j, args, data, &info);
    cj_close(&j);
    cj_run_tail(&j, &info);
    if (verify) {
        cj_verify(&j, &v.rep, v.rtol, v.norm, v.shape, v.ndim);
        cj_str(&j, "verify_rule", k->verify_rule);
    }
    cj_close(&j);
    rc = verify && !v.rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK;
done:
    if (lock >= 0) close(lock);
    pk_context_destroy(ctx);
    data_free(k, data);
    free(args);
    free(st.keep);
    return rc;
}

int cli_gen(const cli_kernel *k, int argc, char **argv)
{
    const char *prog = "portkern gen";
    cmd_state st;
    const char *out = NULL;
    int rc, lock = -1;
    void *args = calloc(1, k->args_size), *data = calloc(1, k->data_size);

    if (!args || !data) {
        free(args);
        free(data);
        fprintf(stderr, "%s: out of host memory\n", prog);
        return CLI_EXIT_FAIL;
    }
    int n = cmd_begin(&st, k, prog, CLI_IN_GEN, args);
    cli_opt_add(st.opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    rc = cmd_parse(&st, argc, argv);
    if (rc == CLI_HELP) {
        gen_usage(k, stdout);
        rc = CLI_EXIT_OK;
        goto done;
    }
    if (rc || (k->resolve && (rc = k->resolve(&st.c)))) goto done;
    if (!out) {
        rc = cli_usage_error(prog, "--out DIR is required");
        goto done;
    }
    if (cli_parse_only) goto done;
    if ((rc = alloc_arrays(&st.c, data, CLI_A_IN)) || (rc = k->generate(&st.c, data))) goto done;
    if ((lock = lock_dir(prog, out, 1)) == -2) {
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    if ((rc = k->write_inputs ? k->write_inputs(&st.c, out, data)
                              : write_arrays(&st.c, out, data, CLI_A_IN)))
        goto done;
    /* params.json last: its presence says the set is complete. */
    char path[4096];
    FILE *pf;
    cli_json j;
    if ((rc = cli_params_open(prog, out, k->name, path, sizeof path, &pf, &j))) goto done;
    write_params(&j, k, args);
    if (k->params_info) k->params_info(&j, args, data);
    if ((rc = cli_params_close(prog, path, pf, &j))) goto done;
    printf("wrote %s (the inputs of 'portkern run %s --in %s')\n", out, k->name, out);
done:
    if (lock >= 0) close(lock);
    data_free(k, data);
    free(args);
    free(st.keep);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */
double cli_row_gbs(const cli_bench_row *r)
{
    return r->status == CLI_ROW_OK ? cli_rate(r->info.bytes / 1e9, r->t_min) : NAN;
}

double cli_row_gflops(const cli_bench_row *r)
{
    return r->status == CLI_ROW_OK ? cli_rate(r->info.flops / 1e9, r->t_min) : NAN;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The copy bandwidth of a device, measured once per process. */
static double roof_bw(pk_context *ctx, pk_backend_id be, int device)
{
    static struct { pk_backend_id be; int device; double bw; } seen[32];
    static int nseen;
    for (int i = 0; i < nseen; ++i)
        if (seen[i].be == be && seen[i].device == device) return seen[i].bw;
    double bw = 0;
    cli_progress("roof: %s device %d bandwidth ...", pk_backend_name(be), device);
    pk_status s = pk_measure_bandwidth(ctx, be, device, 0, 5, &bw);
    if (s != PK_OK) {
        fprintf(stderr, "portkern bench: %s device %d: bandwidth not measured: %s: %s\n",
                pk_backend_name(be), device, pk_strerror(s), pk_last_error());
        bw = 0;
    }
    if (nseen < 32) {
        seen[nseen].be = be;
        seen[nseen].device = device;
        seen[nseen++].bw = bw;
    }
    return bw;
}

static cli_bench_row *add_row(cli_bench_result *r, pk_backend_id be)
{
    cli_bench_row *rows = cli_grow(r->rows, r->nrows, &r->cap, sizeof *rows);
    if (!rows) return NULL;
    r->rows = rows;
    rows[r->nrows].backend = be;
    rows[r->nrows].c = -1;
    rows[r->nrows].device = -1;
    return &rows[r->nrows++];
}

static void row_fail(cli_bench_row *r, const char *what, pk_status s)
{
    r->status = CLI_ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

pk_status cli_bench_time(const cli_kernel *k, void *plan, const void *args, void *data, int reps,
                         double t[3], pk_run_info *best, const char **stage)
{
    double *ts = malloc((size_t)reps * sizeof *ts);
    pk_run_info info;
    pk_status s = PK_OK;
    if (!ts) return PK_ENOMEM;
    for (int i = 0; i <= reps; ++i) { /* i = 0: the untimed warm-up (program builds) */
        if ((s = k->plan_run(plan, args, data, &info)) != PK_OK) {
            if (stage) *stage = i ? "timed run" : "warm-up run";
            free(ts);
            return s;
        }
        if (i > 0) ts[i - 1] = info.kernel_s;
        if (i == 1 || (i > 1 && info.kernel_s < best->kernel_s)) *best = info;
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    t[0] = ts[0];
    t[1] = reps % 2 ? ts[reps / 2] : 0.5 * (ts[reps / 2 - 1] + ts[reps / 2]);
    t[2] = ts[reps - 1];
    free(ts);
    return PK_OK;
}

/* The members of the kernel's run_json object, as text (NULL when out of memory). */
static char *run_json_text(const cli_kernel *k, const void *args, const void *data,
                           const pk_run_info *info)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_json j;
    if (!f) return NULL;
    cj_init_members(&j, f);
    k->run_json(&j, args, data, info);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void bench_one(cli_bench_result *res, pk_context *ctx, cli_bench_row *r)
{
    const cli_kernel *k = res->k;
    const void *args = res->args[r->c];
    void *data = res->data[res->data_of[r->c]], *plan = NULL;
    const char *stage = "timed run";
    double t[3], t0 = cli_now_s();
    pk_status s = k->plan_create(&plan, ctx, r->variant, args, data, &r->info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        goto done;
    }
    r->setup_s = cli_now_s() - t0;
    r->device = r->info.device;
    r->bw = roof_bw(ctx, r->backend, r->info.device);
    t0 = cli_now_s();
    if (k->plan_upload && (s = k->plan_upload(plan, args, data)) != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    r->upload_s = cli_now_s() - t0;
    if ((s = cli_bench_time(k, plan, args, data, res->req->reps, t, &r->info, &stage)) != PK_OK) {
        row_fail(r, stage, s);
        goto done;
    }
    r->t_min = t[0];
    r->t_median = t[1];
    r->t_max = t[2];
    snprintf(r->reason, sizeof r->reason, "%s", r->info.reason);
    t0 = cli_now_s();
    if (k->plan_download && (s = k->plan_download(plan, args, data)) != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    r->download_s = cli_now_s() - t0;
    r->v.rtol = k->rtol;
    if ((s = k->check(args, data, &r->v)) != PK_OK) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = r->v.rep.equal;
    r->json = run_json_text(k, args, data, &r->info);
done:
    if (plan) k->plan_destroy(plan);
}

/* Every case's args, and the data set of each (inputs generated, outputs allocated, the
 * reference after the warm-up and the timed runs; data sets numbered in the order of their
 * first case): 0 or the exit code. */
static int bench_setup(cli_bench_result *res)
{
    const cli_kernel *k = res->k;
    const int size = cli_size_index(res->req->size);
    for (int c = 0; c < CLI_CASES; ++c) {
        cli_call call = {k, "portkern bench", CLI_IN_RUN, NULL, {0}};
        int rc, d;
        if (!(call.args = res->args[c] = calloc(1, k->args_size))) goto nomem;
        k->args_init(call.args);
        k->preset(size, call.args);
        if ((d = k->bench_case ? k->bench_case(size, c, call.args) : c ? -1 : 0) < 0) break;
        res->ncases = c + 1;
        res->data_of[c] = d;
        if (k->resolve && (rc = k->resolve(&call))) return rc;
        if (d < res->ndata) continue;
        cli_progress("%s: data set %d and reference (%s) ...", k->name, d, res->req->size);
        if (!(res->data[d] = calloc(1, k->data_size))) goto nomem;
        res->ndata = d + 1;
        if ((rc = alloc_arrays(&call, res->data[d], CLI_A_IN)) ||
            (rc = k->generate(&call, res->data[d])) ||
            (rc = alloc_arrays(&call, res->data[d], CLI_A_OUT | CLI_A_REF)))
            return rc;
        pk_status s = k->reference(call.args, res->data[d], res->req->reps + 1);
        if (s != PK_OK) return cli_lib_error(MAIN_PROG, s);
    }
    return 0;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    return CLI_EXIT_FAIL;
}

static void print_rows(const cli_bench_result *res)
{
    const cli_kernel *k = res->k;
    int cases = 0;
    for (int i = 0; i < res->nrows; ++i) cases |= res->rows[i].case_name[0] != 0;
    for (int i = 0; i < res->nrows; ++i) { /* the roof of each device, once */
        const cli_bench_row *r = &res->rows[i];
        int first = r->device >= 0;
        for (int k = 0; first && k < i; ++k)
            first = res->rows[k].backend != r->backend || res->rows[k].device != r->device;
        if (first && r->bw > 0)
            printf("roof: %s device %d (%s): copy bandwidth %.1f GB/s, measured in this run\n",
                   pk_backend_name(r->backend), r->device, r->info.device_name, r->bw / 1e9);
    }
    printf("%-13s %-7s %-22s %-13s", "kernel", "backend", "device", "variant");
    if (cases) printf(" %-16s", "case");
    printf(" %9s %9s %9s %8s %8s %6s %9s %s\n", "ms min", "median", "max", "GB/s", "GFlop/s",
           "x roof", "max err", "verified");
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        printf("%-13s %-7s %-22.22s %-13s", k->name, pk_backend_name(r->backend),
               r->device >= 0 ? r->info.device_name : "-", r->variant[0] ? r->variant : "-");
        if (cases) printf(" %-16.16s", r->case_name[0] ? r->case_name : "-");
        if (r->status != CLI_ROW_OK) {
            printf(" %9s %9s %9s %8s %8s %6s %9s %s\n", "-", "-", "-", "-", "-", "-", "-",
                   r->status == CLI_ROW_SKIPPED ? "skipped" : "error");
            continue;
        }
        const double gbs = cli_row_gbs(r);
        printf(" %9.3f %9.3f %9.3f %8.2f %8.2f ", 1e3 * r->t_min, 1e3 * r->t_median,
               1e3 * r->t_max, gbs, cli_row_gflops(r));
        if (r->bw > 0)
            printf("%5.2fx", gbs * 1e9 / r->bw);
        else
            printf("%6s", "-");
        printf(" %9.2e %s\n", r->v.norm ? r->v.rep.norm_rel_err : r->v.rep.max_rel_err,
               r->verified ? "yes" : "NO");
    }
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status == CLI_ROW_SKIPPED)
            printf("%s %s skipped: %s\n", k->name, pk_backend_name(r->backend), r->reason);
        else if (r->status == CLI_ROW_FAILED)
            printf("%s %s %s %s error: %s\n", k->name, pk_backend_name(r->backend), r->variant,
                   r->case_name, r->reason);
        else if (!r->verified && r->v.norm)
            printf("%s %s %s %s NOT verified: norm rel err %.3g beyond rtol %g%s%s\n", k->name,
                   pk_backend_name(r->backend), r->variant, r->case_name, r->v.rep.norm_rel_err,
                   r->v.rtol, r->v.note[0] ? ", " : "", r->v.note);
        else if (!r->verified)
            printf("%s %s %s %s NOT verified: %zu elements beyond rtol %g, max rel err %.3g%s%s"
                   "\n", k->name, pk_backend_name(r->backend), r->variant, r->case_name,
                   r->v.rep.num_failed, r->v.rtol, r->v.rep.max_rel_err, r->v.note[0] ? ", " : "",
                   r->v.note);
    }
}

int cli_bench_kernel(const cli_kernel *k, const cli_bench_req *req,
                     const pk_backend_id *backends, int nb, cli_bench_result **out)
{
    cli_bench_result *res = calloc(1, sizeof *res);
    int total, done = 0, rc = 0;
    *out = res;
    if (!res) goto nomem;
    res->k = k;
    res->req = req;
    total = cli_bench_open(&res->set, backends, nb, req->threads, k->variants, k->name);
    for (int i = 0; i < nb; ++i) { /* unavailable backends: one row each */
        const pk_backend_id be = backends[i];
        if (res->set.nvars[be] > 0) continue;
        cli_bench_row *r = add_row(res, be);
        if (!r) goto nomem;
        r->status = CLI_ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", res->set.skip[be]);
    }
    if (total > 0 && (rc = bench_setup(res))) goto done;
    if (res->ndata && k->describe) k->describe(res);
    for (int i = 0; total > 0 && i < nb; ++i) {
        const pk_backend_id be = backends[i];
        for (int v = 0; v < res->set.nvars[be]; ++v)
            for (int c = 0; c < res->ncases; ++c) {
                const char *var = res->set.vars[be][v];
                if (k->case_runs && !k->case_runs(res->args[c], var)) continue;
                cli_bench_row *r = add_row(res, be);
                if (!r) goto nomem;
                snprintf(r->variant, sizeof r->variant, "%s", var);
                r->c = c;
                if (k->case_name) k->case_name(res->args[c], r->case_name, sizeof r->case_name);
                cli_progress("%s [%d] %s %s %s ...", k->name, ++done, pk_backend_name(be), var,
                             r->case_name);
                bench_one(res, res->set.ctx[be], r);
            }
    }
    printf("best of %d timed plan runs (min, median, max) after 1 warm-up, data resident on the "
           "device; 'portkern run' times one cold call instead\n", req->reps);
    print_rows(res);
    if (res->ndata && k->report) k->report(res);
    if (res->failed) rc = CLI_EXIT_FAIL;
    for (int i = 0; i < res->nrows; ++i)
        if (res->rows[i].status == CLI_ROW_FAILED ||
            (res->rows[i].status == CLI_ROW_OK && !res->rows[i].verified))
            rc = CLI_EXIT_FAIL;
    goto done;
nomem:
    fprintf(stderr, "portkern bench: out of host memory\n");
    rc = CLI_EXIT_FAIL;
done:
    if (res) cli_bench_close(&res->set);
    return rc;
}

void cli_bench_json_rows(const cli_bench_result *res, cli_json *j)
{
    for (int i = 0; res && i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        const int ok = r->status == CLI_ROW_OK;
        const double gbs = cli_row_gbs(r);
        cj_open(j, NULL, '{');
        cj_str(j, "kernel", res->k->name);
        cj_str(j, "backend", pk_backend_name(r->backend));
        cj_str(j, "status", ok ? "ok" : r->status == CLI_ROW_SKIPPED ? "skipped" : "error");
        cj_str(j, "device", r->device >= 0 ? r->info.device_name : "");
        cj_str(j, "variant", r->variant[0] ? r->variant : NULL);
        cj_str(j, "case", r->case_name[0] ? r->case_name : NULL);
        cj_num(j, "kernel_seconds", ok ? r->t_min : NAN);
        cj_num(j, "kernel_seconds_median", ok ? r->t_median : NAN);
        cj_num(j, "kernel_seconds_max", ok ? r->t_max : NAN);
        cj_num(j, "ms", ok ? 1e3 * r->t_min : NAN);
        cj_num(j, "setup_seconds", ok ? r->setup_s : NAN);
        cj_num(j, "upload_seconds", ok ? r->upload_s : NAN);
        cj_num(j, "download_seconds", ok ? r->download_s : NAN);
        cj_num(j, "flops", ok ? r->info.flops : NAN);
        cj_num(j, "bytes", ok ? r->info.bytes : NAN);
        cj_num(j, "gflop_per_s", cli_row_gflops(r));
        cj_num(j, "gb_per_s", gbs);
        cj_num(j, "bandwidth_gb_per_s", r->bw > 0 ? r->bw / 1e9 : NAN);
        cj_num(j, "roof_fraction", r->bw > 0 ? gbs * 1e9 / r->bw : NAN);
        if (r->json || (ok && res->k->row_json)) { /* the run line's object, the same schema */
            cj_open(j, res->k->name, '{');
            if (r->json) cj_raw(j, r->json);
            if (ok && res->k->row_json) res->k->row_json(j, res, r);
            cj_close(j);
        }
        cj_bool(j, "verified", ok && r->verified);
        if (ok) cj_verify(j, &r->v.rep, r->v.rtol, r->v.norm, r->v.shape, r->v.ndim);
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

void cli_bench_json_object(const cli_bench_result *res, cli_json *j)
{
    if (!res || !res->ndata || !res->k->bench_json) return;
    cj_open(j, res->k->name, '{');
    res->k->bench_json(j, res);
    cj_close(j);
}

void cli_bench_free(cli_bench_result *res)
{
    if (!res) return;
    for (int i = 0; i < res->nrows; ++i) free(res->rows[i].json);
    for (int c = 0; c < CLI_CASES; ++c) free(res->args[c]);
    for (int d = 0; d < res->ndata; ++d) data_free(res->k, res->data[d]);
    free(res->extra);
    free(res->rows);
    free(res);
}
