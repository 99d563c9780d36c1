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
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli_kernel.h"

#define MAIN_PROG "portkern"

/* Each tools/cli_<kernel>.c defines one descriptor; this table lists them in the order of
 * kernels.mk's PK_CLI_KERNELS (tools/cli_kernels.h, generated in the build tree by
 * tools/local.mk: one PK_CLI_KERNEL(name) line per kernel). */
#define PK_CLI_KERNEL(name) extern const cli_kernel cli_kernel_##name;
#include "tools/cli_kernels.h"
#undef PK_CLI_KERNEL
const cli_kernel *const cli_kernels[] = {
#define PK_CLI_KERNEL(name) &cli_kernel_##name,
#include "tools/cli_kernels.h"
#undef PK_CLI_KERNEL
    NULL};

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

/* "--nv" when the value came from the command line, else "params.json's nv": for the
 * message of an input file whose shape disagrees. */
static const char *seen_text(const cli_call *c, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, cli_seen(c, name) == CLI_SEEN_OPT ? "--%s" : "params.json's %s", name);
    return buf;
}

static void *field(void *args, const cli_param *p) { return (char *)args + p->off; }

void cli_args_init(const cli_kernel *k, void *args)
{
    for (const cli_param *p = k->params; p && p->name; ++p) {
        void *f = field(args, p);
        if (p->type == CLI_P_COUNT)
            *(size_t *)f = (size_t)p->def;
        else if (p->type == CLI_P_DOUBLE)
            *(double *)f = p->def;
        else if (p->type == CLI_P_TEXT)
            *(const char **)f = NULL;
        else
            *(int *)f = (int)p->def;
    }
}

static int name_id(const cli_names *n, const char *name, int *id)
{
    for (int i = 0; n->names[i]; ++i)
        if (strcmp(name, n->names[i]) == 0) {
            *id = n->ids ? n->ids[i] : i;
            return 0;
        }
    return -1;
}

const char *cli_name_of(const cli_names *n, int id)
{
    for (int i = 0; n->names[i]; ++i)
        if ((n->ids ? n->ids[i] : i) == id) return n->names[i];
    return NULL;
}

/* A NAME parameter's names as "a, b, c" (quoted: "\"a\", \"b\" or \"c\""). */
static const char *name_list(const cli_names *n, int quoted, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; n->names[i] && used < len; ++i)
        used += (size_t)snprintf(buf + used, len - used, quoted ? "%s\"%s\"" : "%s%s",
                                 !i ? "" : quoted && !n->names[i + 1] ? " or " : ", ",
                                 n->names[i]);
    return buf;
}

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
            char list[256];
            if (name_id(p->names, s->str[i], (int *)field(c->args, p)))
                return cli_usage_error(c->prog, "option --%s: unknown %s '%s' (%s)", p->name,
                                       p->name, s->str[i], name_list(p->names, 0, list, 256));
        }
    }
    return 0;
}

int cli_extents(cli_call *c, const char *option, char sep, const char *const *names, int n,
                int one)
{
    const char *text = *(const char **)field(c->args, &c->k->params[param_index(c->k, option)]);
    const char *s = text;
    char why[160], part[32], given[96] = "";
    int v[8], k = 0, both = 0, bad = 0;
    if (!text) return 0;
    for (int i = 0; i < n; ++i) {
        snprintf(given + strlen(given), sizeof given - strlen(given), "%s--%s", i ? "/" : "",
                 names[i]);
        both |= cli_seen(c, names[i]) == CLI_SEEN_OPT;
    }
    if (both) return cli_usage_error(c->prog, "give either --%s or %s, not both", option, given);
    for (int more = 1; more && !bad; ++k) {
        const size_t len = strchr(s, sep) ? (size_t)(strchr(s, sep) - s) : strlen(s);
        if ((bad = k == n || len == 0 || len >= sizeof part)) break;
        const cli_param *p = &c->k->params[param_index(c->k, names[k])];
        memcpy(part, s, len);
        part[len] = '\0';
        if (cli_to_int(part, p->min, p->max, &v[k], why, sizeof why))
            return cli_usage_error(c->prog, "option --%s: %s", option, why);
        more = s[len] == sep;
        s += len + more;
    }
    if (bad || (k != n && !(one && k == 1)))
        return cli_usage_error(c->prog, "option --%s: '%s' is not %s%s", option, text,
                               one ? "N or " : "", c->k->params[param_index(c->k, option)].arg);
    for (int i = 0; i < n; ++i) {
        *(int *)field(c->args, &c->k->params[param_index(c->k, names[i])]) = v[k == 1 ? 0 : i];
        cli_set_seen(c, names[i], CLI_SEEN_OPT);
    }
    return 0;
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
            if (v->type != CLI_JSTR || name_id(p->names, v->str, &id)) {
                char quoted[512];
                rc = cli_usage_error(c->prog, "%s: \"%s\" must be %s", path, p->name,
                                     name_list(p->names, 1, quoted, sizeof quoted));
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

/* DIR/params.json, written by `gen` for this kernel (a "kernel" key naming another is an
 * error), into what the command line left: 0 when there is none.  *keep gets the parsed
 * object, which TEXT parameters point into, to free(). */
static int read_params(cli_call *c, const char *dir, cli_jobject **keep)
{
    char path[4096], why[256], *text;
    const cli_jvalue *v;
    int rc;
    if (cli_join(path, sizeof path, dir, "params.json"))
        return cli_usage_error(c->prog, "path too long: %s", dir);
    if (!(text = cli_read_text(path)))
        return errno == ENOENT ? 0
               : errno == EILSEQ ? cli_usage_error(c->prog, "%s: contains a NUL byte: not a "
                                                   "JSON text", path)
                                 : cli_usage_error(c->prog, "%s: %s", path, strerror(errno));
    cli_jobject *obj = *keep = malloc(sizeof *obj);
    if (!obj)
        rc = cli_usage_error(c->prog, "%s: out of memory", path);
    else if (cli_json_parse_flat(text, obj, why, sizeof why))
        rc = cli_usage_error(c->prog, "%s: not a flat JSON object: %s", path, why);
    else if ((v = cli_json_get(obj, "kernel")) &&
             (v->type != CLI_JSTR ||
              (strcmp(v->str, c->k->name) != 0 &&
               (!c->k->data_of || strcmp(v->str, c->k->data_of) != 0))))
        rc = cli_usage_error(c->prog, "%s: \"kernel\" is not \"%s\"", path,
                             c->k->data_of ? c->k->data_of : c->k->name);
    else
        rc = cli_params_apply(c, path, obj);
    free(text);
    return rc;
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
        case CLI_P_NAME: cj_str(j, p->name, cli_name_of(p->names, *(const int *)f)); break;
        case CLI_P_TEXT: cj_str(j, p->name, *(const char *const *)f); break;
        case CLI_P_BOOL:
        case CLI_P_FLAG: cj_bool(j, p->name, *(const int *)f); break;
        }
    }
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
                    seen_text(c, p->name, by, sizeof by);
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
/* An array the library will write is touched here, by all threads, before the call: a
 * never-touched array costs page faults inside the call (a GPU's download into one ran at
 * 1.1 GB/s on the H100 machine, 10.6 GB/s through the staging ring, against 46 touched), and
 * the threads' first touch spreads its pages over the NUMA nodes that will use them.  threads:
 * the team (0: OpenMP's default). */
static void prefault(void *p, size_t bytes, int threads)
{
    const long page = 4096;
    const long pages = (long)((bytes + (size_t)page - 1) / (size_t)page);
#ifdef _OPENMP
    const int nt = threads > 0 ? threads : omp_get_max_threads();
#else
    const int nt = 1;
    (void)threads;
#endif
#pragma omp parallel for schedule(static) num_threads(nt) if (bytes >= ((size_t)1 << 20))
    for (long i = 0; i < pages; ++i) ((volatile char *)p)[i * page] = 0;
}

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
        if (a->role & CLI_A_OUT) prefault(*array_ptr(data, a), n, 0); /* calloc's zeros stay */
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

/* ---- verdicts ---------------------------------------------------------------------------- */
static const cli_array *first_array(const cli_kernel *k, unsigned role)
{
    const cli_array *a = k->arrays;
    while (a && a->file && !(a->role & role)) ++a;
    return a;
}

pk_status cli_check_diff(const cli_kernel *k, const void *args, void *data, int norm,
                         cli_verdict *v)
{
    const cli_array *out = first_array(k, CLI_A_OUT), *ref = first_array(k, CLI_A_REF);
    size_t add[PK_NPY_MAX_DIMS], n = 1;
    int pi[PK_NPY_MAX_DIMS];
    char names[160];
    v->ndim = array_dims(k, args, out, v->shape, pi, add, names, sizeof names);
    if (out->dtype == PK_DTYPE_C64 || out->dtype == PK_DTYPE_C128) v->shape[v->ndim++] = 2;
    for (int d = 0; d < v->ndim; ++d) n *= v->shape[d];
    v->norm = norm;
    const int mode = norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE;
    const void *x = *array_ptr(data, ref), *y = *array_ptr(data, out);
    pk_status s = out->dtype == PK_DTYPE_F32 || out->dtype == PK_DTYPE_C64
                      ? pk_diff_f32(x, y, n, v->rtol, k->zero, mode, &v->rep)
                      : pk_diff_f64(x, y, n, v->rtol, k->zero, mode, &v->rep);
    return s == PK_EMISMATCH ? PK_OK : s;
}

static double value(pk_dtype dtype, const void *x, size_t i)
{
    return dtype == PK_DTYPE_F32 ? ((const float *)x)[i] : ((const double *)x)[i];
}

void cli_uniform(pk_dtype dtype, unsigned long long seed, size_t n, void *x)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; ++i) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (dtype == PK_DTYPE_F32)
            ((float *)x)[i] = (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
        else
            ((double *)x)[i] = (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
}

double cli_max_abs(pk_dtype dtype, const void *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        if (fabs(value(dtype, x, i)) > m) m = fabs(value(dtype, x, i));
    return m;
}

pk_status cli_check_atol(pk_dtype dtype, const void *ref, const void *y, size_t n, double atol,
                         void (*scale)(const void *ctx, size_t i0, size_t n, double *out),
                         const void *ctx, cli_verdict *v)
{
    pk_diff_report *rep = &v->rep;
    const double zero = scale ? 0 : atol;
    /* the differ for the norm and max_rel_err only (the verdict is made below, its own
     * failure count not wanted: an rtol nothing exceeds) */
    pk_status s = dtype == PK_DTYPE_F32
                      ? pk_diff_f32(ref, y, n, DBL_MAX, zero, PK_DIFF_ELEMENTWISE, rep)
                      : pk_diff_f64(ref, y, n, DBL_MAX, zero, PK_DIFF_ELEMENTWISE, rep);
    if (s != PK_OK && s != PK_EMISMATCH) return s;
    enum { B = 512 };
    const size_t nblocks = (n + B - 1) / B;
    size_t failed = 0, first = SIZE_MAX;
    double max_abs = 0;
    /* blocks on the threads (the scale called once a block: it must be thread-safe), the
     * errors in a loop the compiler vectorises */
#pragma omp parallel for schedule(static) reduction(+ : failed) reduction(min : first) \
    reduction(max : max_abs) if (n >= ((size_t)1 << 20))
    for (size_t blk = 0; blk < nblocks; ++blk) {
        double a[B], b[B], bound[B];
        const size_t i0 = blk * B, nb = n - i0 < B ? n - i0 : B;
        if (dtype == PK_DTYPE_F32) { /* widened exactly */
            for (size_t j = 0; j < nb; ++j) a[j] = ((const float *)ref)[i0 + j];
            for (size_t j = 0; j < nb; ++j) b[j] = ((const float *)y)[i0 + j];
        } else { /* copied, so that the loop below runs on local arrays (vectorised) */
            memcpy(a, (const double *)ref + i0, nb * sizeof *a);
            memcpy(b, (const double *)y + i0, nb * sizeof *b);
        }
        if (scale) {
            scale(ctx, i0, nb, bound);
            for (size_t j = 0; j < nb; ++j) bound[j] *= atol;
        } else {
            for (size_t j = 0; j < nb; ++j) bound[j] = atol;
        }
        size_t fails = 0;
        double m = 0;
#pragma omp simd reduction(+ : fails) reduction(max : m)
        for (size_t j = 0; j < nb; ++j) {
            const double d = fabs(b[j] - a[j]), e = a[j] == b[j] ? 0.0 : d; /* equal
                                                                           infinities too */
            fails += !(e <= bound[j]); /* NaN fails */
            m = e > m ? e : m;         /* and enters no figure */
        }
        max_abs = m > max_abs ? m : max_abs;
        if (fails)
            for (size_t j = 0; j < nb; ++j)
                if (!((a[j] == b[j] ? 0.0 : fabs(b[j] - a[j])) <= bound[j])) {
                    first = i0 + j < first ? i0 + j : first;
                    break;
                }
        failed += fails;
    }
    rep->num_failed = failed;
    rep->first_fail = failed ? first : (size_t)-1;
    rep->max_abs_err = max_abs;
    rep->equal = rep->num_failed == 0;
    return PK_OK;
}

/* The verdict as the run line's and a bench row's object "verify". */
static void verdict_json(cli_json *j, const cli_verdict *v)
{
    const pk_diff_report *rep = &v->rep;
    char first[160];
    cj_open(j, "verify", '{');
    cj_bool(j, "equal", rep->equal);
    cj_str(j, "mode", v->norm ? "norm" : "element-wise");
    cj_num(j, "rtol", v->rtol);
    cj_num(j, "max_rel_err", rep->max_rel_err);
    cj_num(j, "max_abs_err", rep->max_abs_err);
    cj_num(j, "norm_rel_err", rep->norm_rel_err);
    cj_int(j, "num_failed", (long long)rep->num_failed);
    if (rep->num_failed > 0 && rep->first_fail != (size_t)-1) {
        pk_format_index(rep->first_fail, v->shape, v->ndim, first, sizeof first);
        cj_str(j, "first_fail", first);
    } else {
        cj_null(j, "first_fail");
    }
    cj_close(j);
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
        k->data_of ? k->data_of : k->name);
    snprintf(text, sizeof text, "also run the serial reference and compare: pass when %s",
             k->verify_rule);
    help_line(f, "--verify", text);
    fprintf(f,
        "  --rtol R        rtol of --verify (default %g)\n"
        "  --param NAME=VALUE  set a tuning parameter (repeatable; 'portkern-probe --params'\n"
        "                  lists them, their values and where each came from); beats its\n"
        "                  environment variable\n"
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
    void *data;
    param_slots slots;
    cli_opt opts[64];
    char *pos[2];
    int npos, nopts;
    const char *preset;
    cli_jobject *keep; /* params.json, kept while TEXT parameters point into it */
} cmd_state;

/* The args (defaults) and data of a command and its parameters' options: the number of
 * options, or -1 when out of memory. */
static int cmd_begin(cmd_state *st, const cli_kernel *k, const char *prog, unsigned where)
{
    memset(st, 0, sizeof *st);
    st->c.k = k;
    st->c.prog = prog;
    st->c.where = where;
    st->c.args = calloc(1, k->args_size);
    st->data = calloc(1, k->data_size);
    if (!st->c.args || !st->data) {
        fprintf(stderr, "%s: out of host memory\n", prog);
        return -1;
    }
    cli_args_init(k, st->c.args);
    st->nopts = add_param_opts(k, where, st->c.args, &st->slots, st->opts, 0);
    return cli_opt_add(st->opts, st->nopts, "preset", CLI_STRING, &st->preset, NULL, 0, 0);
}

static int cmd_end(cmd_state *st, int rc, int lock)
{
    if (lock >= 0) close(lock);
    data_free(st->c.k, st->data);
    free(st->c.args);
    free(st->keep);
    return rc;
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
    const char *prog = "portkern run", *backend = NULL, *variant = NULL, *in = NULL, *out = NULL;
    cmd_state st;
    int verify = 0, rc, lock = -1, n = cmd_begin(&st, k, prog, CLI_IN_RUN);
    double rtol = k->rtol;
    pk_context_options copt;
    pk_context *ctx = NULL;
    pk_run_info info;
    cli_verdict v;
    cli_list params = {{NULL}, 0};
    void *args = st.c.args, *data = st.data;

    if (n < 0) return cmd_end(&st, CLI_EXIT_FAIL, lock);
    pk_context_options_init(&copt);
    n = cli_opt_add(st.opts, n, "backend", CLI_STRING, &backend, NULL, 0, 0);
    n = cli_opt_add(st.opts, n, "variant", CLI_STRING, &variant, NULL, 0, 0);
    n = cli_opt_add(st.opts, n, "device", CLI_INT, &copt.device, NULL, 0, INT_MAX);
    n = cli_opt_add(st.opts, n, "threads", CLI_INT, &copt.threads, NULL, 0, PK_MAX_THREADS);
    n = cli_opt_add(st.opts, n, "in", CLI_STRING, &in, NULL, 0, 0);
    n = cli_opt_add(st.opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    n = cli_opt_add(st.opts, n, "verify", CLI_FLAG, &verify, NULL, 0, 0);
    n = cli_opt_add(st.opts, n, "param", CLI_LIST, &params, NULL, 0, 0);
    cli_opt_add(st.opts, n, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    if ((rc = cmd_parse(&st, argc, argv)) == CLI_HELP) run_usage(k, stdout);
    if (rc) return cmd_end(&st, rc == CLI_HELP ? CLI_EXIT_OK : rc, lock);
    if (backend && pk_backend_from_name(backend, &copt.backend) != PK_OK)
        return cmd_end(&st, cli_usage_error(prog, "option --backend: unknown backend '%s' (auto, "
                                            "serial, openmp, opencl, cuda)", backend), lock);
    if ((rc = cli_params_set(prog, NULL, &params))) return cmd_end(&st, rc, lock);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return cmd_end(&st, CLI_EXIT_OK, lock);
    if (in && (lock = lock_dir(prog, in, 0)) == -2) return cmd_end(&st, CLI_EXIT_USAGE, lock);
    if (in && (rc = read_params(&st.c, in, &st.keep))) return cmd_end(&st, rc, lock);
    if (k->resolve && (rc = k->resolve(&st.c))) return cmd_end(&st, rc, lock);
    if (in)
        rc = load_arrays(&st.c, in, data);
    else if (!(rc = alloc_arrays(&st.c, data, CLI_A_IN)))
        rc = k->generate(&st.c, data);
    if (rc || (in && k->load && (rc = k->load(&st.c, in, data)))) return cmd_end(&st, rc, lock);
    if (lock >= 0) close(lock);
    lock = -1;

    if ((rc = alloc_arrays(&st.c, data, CLI_A_OUT))) return cmd_end(&st, rc, lock);
    pk_status s = pk_context_create(&ctx, &copt);
    if (s == PK_OK && cli_params_set(prog, ctx, &params)) { /* checked above: not reached */
        pk_context_destroy(ctx);
        return cmd_end(&st, CLI_EXIT_USAGE, lock);
    }
    if (s == PK_OK) s = k->call(CLI_ONESHOT, NULL, ctx, variant, args, data, 0, &info);
    pk_context_destroy(ctx);
    if (s != PK_OK) return cmd_end(&st, cli_lib_error(MAIN_PROG, s), lock);
    if (verify) {
        memset(&v, 0, sizeof v);
        v.rtol = rtol;
        if ((rc = alloc_arrays(&st.c, data, CLI_A_REF))) return cmd_end(&st, rc, lock);
        if ((s = k->call(CLI_REFERENCE, NULL, NULL, NULL, args, data, 1, NULL)) != PK_OK ||
            (s = k->check ? k->check(args, data, &v) : cli_check_diff(k, args, data, k->norm, &v))
                != PK_OK)
            return cmd_end(&st, cli_lib_error(MAIN_PROG, s), lock);
    }
    if ((out && (rc = write_arrays(&st.c, out, data, CLI_A_OUT))) ||
        (k->write_outputs && (rc = k->write_outputs(&st.c, out, data))))
        return cmd_end(&st, rc, lock);

    cli_json j;
    cj_init(&j, stdout, 0);
    cj_open(&j, NULL, '{');
    cj_str(&j, "kernel", k->name);
    cj_str(&j, "backend", pk_backend_name(info.backend));
    cj_str(&j, "device", info.device_name);
    cj_int(&j, "device_index", info.device);
    cj_str(&j, "variant", info.variant);
    cj_num(&j, "seconds", info.wall_s);
    cj_num(&j, "kernel_seconds", info.kernel_s);
    cj_num(&j, "transfer_seconds", info.transfer_s);
    cj_num(&j, "setup_seconds", info.setup_s);
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
    cj_bool(&j, "fell_back", info.fell_back);
    cj_str(&j, "reason", info.reason);
    if (verify) {
        verdict_json(&j, &v);
        cj_str(&j, "verify_rule", k->verify_rule);
    }
    cj_close(&j);
    return cmd_end(&st, verify && !v.rep.equal ? CLI_EXIT_FAIL : CLI_EXIT_OK, lock);
}

int cli_gen(const cli_kernel *k, int argc, char **argv)
{
    const char *prog = "portkern gen", *out = NULL;
    cmd_state st;
    char path[4096];
    FILE *pf;
    cli_json j;
    int rc, lock = -1, n = cmd_begin(&st, k, prog, CLI_IN_GEN);

    if (n < 0) return cmd_end(&st, CLI_EXIT_FAIL, lock);
    cli_opt_add(st.opts, n, "out", CLI_STRING, &out, NULL, 0, 0);
    if ((rc = cmd_parse(&st, argc, argv)) == CLI_HELP) gen_usage(k, stdout);
    if (rc || (k->resolve && (rc = k->resolve(&st.c))))
        return cmd_end(&st, rc == CLI_HELP ? CLI_EXIT_OK : rc, lock);
    if (!out) return cmd_end(&st, cli_usage_error(prog, "--out DIR is required"), lock);
    if (cli_parse_only) return cmd_end(&st, CLI_EXIT_OK, lock);
    if ((rc = alloc_arrays(&st.c, st.data, CLI_A_IN)) || (rc = k->generate(&st.c, st.data)))
        return cmd_end(&st, rc, lock);
    if ((lock = lock_dir(prog, out, 1)) == -2) return cmd_end(&st, CLI_EXIT_USAGE, lock);
    if ((rc = k->write_inputs ? k->write_inputs(&st.c, out, st.data)
                              : write_arrays(&st.c, out, st.data, CLI_A_IN)))
        return cmd_end(&st, rc, lock);
    /* params.json last: its presence says the set is complete. */
    if ((rc = cli_json_open(prog, out, "params.json", k->data_of ? k->data_of : k->name, path,
                            sizeof path, &pf, &j)))
        return cmd_end(&st, rc, lock);
    write_params(&j, k, st.c.args);
    if (k->params_info) k->params_info(&j, st.c.args, st.data);
    if (!(rc = cli_json_close(prog, path, pf, &j)))
        printf("wrote %s (the inputs of 'portkern run %s --in %s')\n", out, k->name, out);
    return cmd_end(&st, rc, lock);
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

/* Open the backends: the number of variants that will run. */
static int bench_open(cli_bench_set *set, const pk_backend_id *backends, int nb, int threads,
                      const cli_list *params, const char *(*variants)(pk_backend_id),
                      const char *kernel)
{
    int total = 0;
    memset(set, 0, sizeof *set);
    for (int i = 0; i < nb; ++i) {
        pk_backend_id be = backends[i];
        pk_context_options copt;
        const char *why = NULL, *list;
        pk_context_options_init(&copt);
        copt.backend = be;
        copt.threads = threads;
        pk_status s = pk_context_create(&set->ctx[be], &copt);
        if (s == PK_OK && cli_params_set("portkern bench", set->ctx[be], params)) s = PK_EINVAL;
        if (s != PK_OK) {
            snprintf(set->skip[be], sizeof set->skip[be], "%s: %s", pk_strerror(s), pk_last_error());
            continue;
        }
        if (!pk_backend_available(set->ctx[be], be, &why)) {
            snprintf(set->skip[be], sizeof set->skip[be], "%s", why && *why ? why : "not available");
            continue;
        }
        list = variants(be);
        if (!list || !*list || cli_split_list(list, set->vars[be], 16, &set->nvars[be])) {
            set->nvars[be] = 0;
            snprintf(set->skip[be], sizeof set->skip[be], "the backend implements no %s variant",
                     kernel);
            continue;
        }
        total += set->nvars[be];
    }
    return total;
}

static void bench_close(cli_bench_set *set)
{
    for (int i = 0; i < PK_BACKEND_COUNT; ++i) pk_context_destroy(set->ctx[i]);
    memset(set->ctx, 0, sizeof set->ctx);
}

static cli_bench_row *add_row(cli_bench_result *r, pk_backend_id be)
{
    if (r->nrows == r->cap) {
        const int cap = r->cap ? 2 * r->cap : 16;
        cli_bench_row *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows) return NULL;
        r->rows = rows;
        r->cap = cap;
    }
    cli_bench_row *row = memset(&r->rows[r->nrows++], 0, sizeof *row);
    row->backend = be;
    row->c = -1;
    row->device = -1;
    return row;
}

static void row_fail(cli_bench_row *r, const char *what, pk_status s)
{
    r->status = CLI_ROW_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s: %s: %s", what, pk_strerror(s), pk_last_error());
}

/* The two fastest of n timings within 2% of each other. */
static int runs_agree(const double *ts, int n)
{
    double a = INFINITY, b = INFINITY;
    for (int i = 0; i < n; ++i)
        if (ts[i] < a)
            b = a, a = ts[i];
        else if (ts[i] < b)
            b = ts[i];
    return n >= 2 && b <= 1.02 * a;
}

/* tune: a row whose timed runs take over this many seconds stops after two of them */
#define TUNE_LONG_RUN_S 2.0

pk_status cli_bench_time(const cli_kernel *k, void *plan, const void *args, void *data, int reps,
                         int short_, double cut, double t[3], pk_run_info *best,
                         const char **stage, int *runs)
{
    double *ts = malloc(((size_t)reps + 1) * sizeof *ts);
    pk_run_info info;
    pk_status s = PK_OK;
    int n = 0, made = 0;
    if (!ts) return PK_ENOMEM;
    for (int i = 0; i <= reps; ++i) { /* i = 0: the untimed warm-up (program builds) */
        if ((s = k->call(CLI_PLAN_RUN, &plan, NULL, NULL, args, data, 0, &info)) != PK_OK) {
            if (stage) *stage = i ? "timed run" : "warm-up run";
            free(ts);
            return s;
        }
        made = i + 1;
        /* a long warm-up far beyond the cut (builds and first touches cost less) stands for
         * the timing: it only overstates a time that cannot win.  Short ones are timed: a
         * cold first run of a millisecond says little, and costs little */
        /* no program built in a run: the host backends, and OpenCL, whose plans build their
         * programs (and VkFFT its) at creation (each cl/KERNEL_opencl.c create); what a first
         * run still pays (first touches, PoCL's compile for a new work-group size) only slows
         * it */
        const int no_build = info.backend == PK_BACKEND_SERIAL ||
                             info.backend == PK_BACKEND_OPENMP || info.backend == PK_BACKEND_OPENCL;
        /* ... and a long one there (degrid's serial and omp rows, 10-11 s a run against the
         * best's 6 s) stands for it beyond the cut itself */
        const int hopeless = short_ && i == 0 && cut > 0 &&
                             ((info.kernel_s > 4 * cut && info.kernel_s > 0.5) ||
                              (no_build && info.kernel_s > cut && info.kernel_s > TUNE_LONG_RUN_S));
        /* tune, runs that do not add up: a long warm-up there is one of the timed runs (the
         * minimum is kept): image's and degrid's rows of 4-7 s then take two runs, not three
         * or four */
        const int warm_timed =
            short_ == 1 && i == 0 && no_build && info.kernel_s > TUNE_LONG_RUN_S;
        if (i > 0 || hopeless || warm_timed) {
            ts[n++] = info.kernel_s;
            if (n == 1 || info.kernel_s < best->kernel_s) *best = info;
        }
        if (hopeless) break;
        /* cannot win; a run under 0.1 s costs little and is noisy on a busy machine */
        if (short_ && i == 1 && cut > 0 && info.kernel_s > cut && info.kernel_s > 0.1) break;
        if (short_ == 1 && runs_agree(ts, n)) break;
        /* long runs (degrid, image, grid at paper size: 4-8 s): two timed runs; a third of
         * seconds more says little more on a busy machine than the machine's noise */
        if (short_ == 1 && n >= 2 && fmin(ts[0], ts[1]) > TUNE_LONG_RUN_S) break;
    }
    qsort(ts, (size_t)n, sizeof *ts, cmp_double);
    t[0] = ts[0];
    t[1] = n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]);
    t[2] = ts[n - 1];
    if (runs) *runs = made; /* the runs made, warm-up included */
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

/* --calls: the first touch of fresh memory, B/s, measured just before a row's first call (in
 * the state that call finds the host's memory): 64 MiB from pk_malloc (advised for huge pages,
 * as the library's buffers) written by the row's threads.  A first call pays this for every
 * new byte of its plan besides its kernel: on a VM that hands freed memory back to its host
 * (virtio-balloon free page reporting) 20x and more what recently freed pages cost.  *block
 * is kept until the row's calls end: freed at once, its pages would come back hot to the
 * call. */
static double fresh_touch(int threads, void **block)
{
    const size_t bytes = (size_t)64 << 20;
    *block = pk_malloc(bytes);
    if (!*block) return NAN;
    const double t0 = cli_now_s();
    prefault(*block, bytes, threads);
    return (double)bytes / (cli_now_s() - t0);
}

/* The process's resident bytes (/proc/self/statm; NAN where there is none). */
static double resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, pages = 0;
    const int ok = f && fscanf(f, "%ld %ld", &size, &pages) == 2;
    if (f) fclose(f);
    return ok ? (double)pages * (double)sysconf(_SC_PAGESIZE) : NAN;
}

/* --calls N: N one-shot calls of the row's case in a fresh context of the row's backend, as a
 * user's program makes them: the first pays the backend's start, the plan and fresh pages, the
 * later ones reuse the plan the context keeps.  Each is the library's wall (pk_run_info.wall_s:
 * setup, transfers and kernel; not the driver's reset of an in-place input).  The outputs of
 * the plan were verified; these calls are make check's to verify. */
static void bench_calls(const cli_bench_result *res, cli_bench_row *r)
{
    const cli_kernel *k = res->k;
    const int n = res->req->calls;
    double *w = malloc((size_t)n * sizeof *w);
    pk_context_options o;
    pk_context *ctx = NULL;
    pk_context_options_init(&o);
    o.backend = r->backend;
    o.device = r->device;
    o.threads = res->req->threads;
    void *block;
    r->fresh_bps = fresh_touch(res->req->threads, &block);
    pk_status s = w ? pk_context_create(&ctx, &o) : PK_ENOMEM;
    if (s == PK_OK && cli_params_set("portkern bench", ctx, res->req->params)) s = PK_EINVAL;
    for (int i = 0; s == PK_OK && i < n; ++i) {
        pk_run_info info;
        const double rss = i == 0 ? resident_bytes() : 0;
        s = k->call(CLI_ONESHOT, NULL, ctx, r->variant, res->args[r->c],
                    res->data[res->data_of[r->c]], 0, &info);
        w[i] = info.wall_s;
        /* the memory the first call touched and kept (its plan, its work arrays) */
        if (i == 0) r->call_first_new = resident_bytes() - rss;
    }
    if (s != PK_OK) {
        row_fail(r, "one-shot call", s);
    } else {
        r->call_first_s = w[0];
        if (n > 1) {
            qsort(w + 1, (size_t)n - 1, sizeof *w, cmp_double);
            r->call_repeat_s = n % 2 ? 0.5 * (w[n / 2] + w[n / 2 + 1]) : w[n / 2];
        }
    }
    pk_context_destroy(ctx);
    pk_free(block);
    free(w);
}

/* The bytes of array a of case c. */
static size_t array_bytes(const cli_bench_result *res, int c, const cli_array *a)
{
    size_t ext[PK_NPY_MAX_DIMS], add[PK_NPY_MAX_DIMS], n = pk_dtype_size(a->dtype);
    int pi[PK_NPY_MAX_DIMS];
    char names[160];
    const int nd = array_dims(res->k, res->args[c], a, ext, pi, add, names, sizeof names);
    for (int d = 0; d < nd; ++d) n *= ext[d];
    return n;
}

/* The REF arrays of case c's data set copied from src into dst (both of the data set). */
static void ref_copy(const cli_bench_result *res, int c, void *dst, void *src)
{
    for (const cli_array *a = res->k->arrays; a && a->file; ++a)
        if (a->role & CLI_A_REF)
            memcpy(*array_ptr(dst, a), *array_ptr(src, a), array_bytes(res, c, a));
}

/* tune, runs_add_up: the reference of case c's data set after n runs into a new copy of its
 * struct (sharing the inputs and outputs, its own REF arrays), res->sref[d][n]: stepped on
 * from prev, the reference after `from` runs, where the kernel can (k->ref_more), else made
 * from the start.  NULL when out of memory or on the reference's failure. */
static void *sref_make(cli_bench_result *res, int c, int n, void *prev, int from)
{
    const cli_kernel *k = res->k;
    const int d = res->data_of[c];
    cli_call call = {k, "portkern tune", CLI_IN_RUN, res->args[c], {0}};
    void *copy = malloc(k->data_size);
    if (!copy) return NULL;
    memcpy(copy, res->data[d], k->data_size);
    for (const cli_array *a = k->arrays; a && a->file; ++a)
        if (a->role & CLI_A_REF) *array_ptr(copy, a) = NULL;
    cli_progress("%s: the reference after %d run%s (tune) ...", k->name, n, n == 1 ? "" : "s");
    res->sref[d][n] = copy; /* freed by short_refs_free, also when half made */
    if (alloc_arrays(&call, copy, CLI_A_REF)) {
        res->sref_failed = 1;
        return NULL;
    }
    if (prev && k->ref_more) ref_copy(res, c, copy, prev);
    if ((prev && k->ref_more ? k->ref_more(res->args[c], copy, from, n)
                             : k->call(CLI_REFERENCE, NULL, NULL, NULL, res->args[c], copy, n,
                                       NULL)) != PK_OK) {
        res->sref_failed = 1;
        return NULL;
    }
    return copy;
}

/* tune, a kernel whose runs add up (diffusion3d, laplace2d): the reference of data set d after
 * n runs, for a row cut short after n runs (the warm-up included) - a copy of the data set's
 * struct sharing its inputs and outputs, with its own reference arrays; computed once per
 * data set and n (where the kernel steps a reference on, all of them on the way to the data
 * set's own: ref_prefixes), its time counted as the references'.  NULL when out of memory or
 * on the reference's failure. */
static void *short_ref(cli_bench_result *res, int c, int n)
{
    const int d = res->data_of[c];
    if (n < 1 || n >= CLI_SHORT_REFS) return NULL;
    res->sref_last_s = 0;
    if (res->sref_failed) return NULL; /* a half-made one is in its slot */
    if (res->sref[d][n]) return res->sref[d][n];
    const double t0 = cli_now_s();
    void *copy = sref_make(res, c, n, NULL, 0);
    if (!copy) return NULL;
    res->sref_last_s = cli_now_s() - t0;
    res->setup_wall_s += res->sref_last_s;
    res->ref_wall_s += res->sref_last_s;
    return copy;
}

/* tune, runs_add_up with k->ref_more: the references of case c's data set after 1 ..
 * CLI_SHORT_REFS - 1 runs (short_ref's, kept) and after `last` (the data set's own), in one
 * pass, each stepped on from the one before: the steps of the longest only, where each
 * shorter one made from the start cost as many again (diffusion3d's after 1, 2 and 3 runs:
 * 6 runs' steps on top of the 4 of its own). */
static pk_status ref_prefixes(cli_bench_result *res, int c, int last)
{
    const cli_kernel *k = res->k;
    void *prev = NULL;
    int from = 0;
    for (int n = 1; n < CLI_SHORT_REFS && n < last; ++n) {
        if (!(prev = sref_make(res, c, n, prev, from))) return PK_ENOMEM;
        from = n;
    }
    void *own = res->data[res->data_of[c]];
    if (!prev)
        return k->call(CLI_REFERENCE, NULL, NULL, NULL, res->args[c], own, last, NULL);
    ref_copy(res, c, own, prev);
    return k->ref_more(res->args[c], own, from, last);
}

static void short_refs_free(cli_bench_result *res)
{
    for (int d = 0; d < CLI_CASES; ++d)
        for (int n = 0; n < CLI_SHORT_REFS; ++n) {
            void *copy = res->sref[d][n];
            if (!copy) continue;
            for (const cli_array *a = res->k->arrays; a && a->file; ++a)
                if (a->role & CLI_A_REF) free(*array_ptr(copy, a));
            free(copy);
            res->sref[d][n] = NULL;
        }
}

static int row_good(const cli_bench_row *r);

/* tune: a 64-bit hash of a case's OUT arrays (four lanes of multiply-xor over 8-byte words,
 * the tail bytewise), to know outputs bitwise equal to a verified row's. */
static unsigned long long out_hash(const cli_bench_result *res, int c, void *data)
{
    const cli_kernel *k = res->k;
    unsigned long long h[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
                               0x94d049bb133111ebull, 0x2545f4914f6cdd1dull};
    for (const cli_array *a = k->arrays; a && a->file; ++a) {
        size_t ext[PK_NPY_MAX_DIMS], add[PK_NPY_MAX_DIMS], n = pk_dtype_size(a->dtype);
        int pi[PK_NPY_MAX_DIMS];
        char names[160];
        if (!(a->role & CLI_A_OUT)) continue;
        const int nd = array_dims(k, res->args[c], a, ext, pi, add, names, sizeof names);
        for (int d = 0; d < nd; ++d) n *= ext[d];
        const unsigned char *p = *array_ptr(data, a);
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            for (int l = 0; l < 4; ++l) {
                unsigned long long w;
                memcpy(&w, p + i + 8 * l, 8);
                h[l] = (h[l] ^ w) * 0x100000001b3ull;
                h[l] ^= h[l] >> 29;
            }
        for (; i < n; ++i) h[0] = (h[0] ^ p[i]) * 0x100000001b3ull;
        h[1] ^= n;
    }
    return h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7);
}

/* One row: plan, upload, timed runs, download, verdict.  cut > 0 (tune): the timing may stop
 * after one timed run beyond cut seconds (cli_bench_time). */
static void bench_one(cli_bench_result *res, pk_context *ctx, cli_bench_row *r, double cut)
{
    const cli_kernel *k = res->k;
    const void *args = res->args[r->c];
    void *data = res->data[res->data_of[r->c]], *plan = NULL;
    const char *stage = "timed run";
    double t[3], t0 = cli_now_s();
    const double t_row = t0;
    pk_status s = k->call(CLI_PLAN_CREATE, &plan, ctx, r->variant, args, data, 0, &r->info);
    if (s != PK_OK) {
        row_fail(r, "plan", s);
        goto done;
    }
    r->setup_s = cli_now_s() - t0;
    r->device = r->info.device;
    r->bw = roof_bw(ctx, r->backend, r->info.device);
    t0 = cli_now_s();
    if ((s = k->call(CLI_PLAN_UPLOAD, &plan, NULL, NULL, args, data, 0, NULL)) != PK_OK) {
        row_fail(r, "upload", s);
        goto done;
    }
    r->upload_s = cli_now_s() - t0;
    /* tune: the cuts; where runs add up, no stop on agreement (the reference after 2 or 3 runs
     * would cost more than it saves) */
    int runs = 0;
    if ((s = cli_bench_time(k, plan, args, data, res->req->reps,
                            res->req->tune ? (k->runs_add_up ? 2 : 1) : 0, cut, t, &r->info,
                            &stage, &runs)) != PK_OK) {
        row_fail(r, stage, s);
        goto done;
    }
    r->t_min = t[0];
    r->t_median = t[1];
    r->t_max = t[2];
    snprintf(r->reason, sizeof r->reason, "%s", r->info.reason);
    t0 = cli_now_s();
    if ((s = k->call(CLI_PLAN_DOWNLOAD, &plan, NULL, NULL, args, data, 0, NULL)) != PK_OK) {
        row_fail(r, "download", s);
        goto done;
    }
    r->download_s = cli_now_s() - t0;
    const double t_verify = cli_now_s();
    r->v.rtol = k->rtol;
    void *vdata = data; /* what the outputs are verified against: the data set's reference */
    if (k->runs_add_up && runs != res->req->reps + 1) { /* cut short: the one of its runs */
        if (!(vdata = short_ref(res, r->c, runs))) {
            row_fail(r, "the reference after fewer runs", PK_ENOMEM);
            goto done;
        }
        r->short_runs = runs;
        const size_t used = strlen(r->reason);
        snprintf(r->reason + used, sizeof r->reason - used, "%stune: cut short after %d run%s, "
                 "verified against the reference after as many", used ? "; " : "", runs,
                 runs == 1 ? "" : "s");
    }
    /* tune: outputs bitwise those of a verified row of the case (after as many runs; with
     * verdict_of_outputs 2 of any case on the data set) have its verdict; the reason names
     * that row */
    if (res->req->tune && (k->verdict_of_outputs || !k->check)) {
        r->out_hash = out_hash(res, r->c, data);
        r->hashed = 1;
        for (int i = 0; i < res->nrows && !r->same_as; ++i) {
            const cli_bench_row *q = &res->rows[i];
            const int same_case = q->c == r->c ||
                                  (k->verdict_of_outputs == 2 &&
                                   res->data_of[q->c] == res->data_of[r->c]);
            if (q == r || !q->hashed || !same_case || q->short_runs != r->short_runs ||
                !row_good(q) || q->out_hash != r->out_hash)
                continue;
            r->v = q->v;
            r->same_as = i + 1;
            const size_t used = strlen(r->reason);
            snprintf(r->reason + used, sizeof r->reason - used, "%sverified: its outputs are "
                     "bitwise those of the verified row %s %s%s%s%s%s", used ? "; " : "",
                     pk_backend_name(q->backend), q->variant, q->case_name[0] && q->c != r->c ?
                     " " : "", q->c != r->c ? q->case_name : "", q->tuning[0] ? " " : "",
                     q->tuning);
        }
    }
    if (r->same_as) {
        s = PK_OK;
    } else if ((s = k->check ? k->check(args, vdata, &r->v)
                             : cli_check_diff(k, args, vdata, k->norm, &r->v)) != PK_OK) {
        row_fail(r, "verify", s);
        goto done;
    }
    r->verified = r->v.rep.equal;
    r->verify_s = cli_now_s() - t_verify;
    r->json = run_json_text(k, args, data, &r->info);
    r->call_first_s = r->call_repeat_s = r->call_first_new = r->fresh_bps = NAN;
    if (res->req->calls > 0) bench_calls(res, r);
done:
    if (plan) k->call(CLI_PLAN_DESTROY, &plan, NULL, NULL, args, data, 0, NULL);
    r->wall_s = cli_now_s() - t_row - (r->short_runs ? res->sref_last_s : 0); /* a reference
                                                                   made for it: the references' */
}

/* Every case's args, and the data set of each (inputs generated, outputs allocated, the
 * reference after the warm-up and the timed runs; data sets numbered in the order of their
 * first case): 0 or the exit code. */
static int bench_setup(cli_bench_result *res, cli_bench_result *prior)
{
    const cli_kernel *k = res->k;
    const int size = cli_size_index(res->req->size);
    for (int c = 0; c < CLI_CASES; ++c) {
        cli_call call = {k, "portkern bench", CLI_IN_RUN, NULL, {0}};
        int rc, d;
        if (!(call.args = res->args[c] = calloc(1, k->args_size))) goto nomem;
        cli_args_init(k, call.args);
        k->preset(size, call.args);
        if ((d = k->bench_case ? k->bench_case(size, c, call.args) : c ? -1 : 0) < 0) break;
        if (res->is_proxy) k->proxy(call.args);
        res->ncases = c + 1;
        res->data_of[c] = d;
        if (k->resolve && (rc = k->resolve(&call))) return rc;
        if (d < res->ndata) continue;
        cli_progress("%s: data set %d and reference (%s%s) ...", k->name, d, res->req->size,
                     res->is_proxy ? ", tune's proxy" : "");
        if (!(res->data[d] = calloc(1, k->data_size))) goto nomem;
        res->ndata = d + 1;
        const double t_gen = cli_now_s();
        /* tune: a data set an earlier kernel made (image and degrid: grid's) borrowed, and a
         * reference from what that kernel verified, where the kernel knows how */
        const int reuse = res->req->tune && !res->is_proxy && prior;
        int borrowed = 0;
        if ((rc = alloc_arrays(&call, res->data[d], CLI_A_IN))) return rc;
        if (reuse && k->borrow) {
            if ((rc = k->borrow(&call, res->data[d], prior)) > 0) return rc;
            borrowed = rc == 0;
        }
        if ((!borrowed && (rc = k->generate(&call, res->data[d]))) ||
            (rc = alloc_arrays(&call, res->data[d], CLI_A_OUT | CLI_A_REF)))
            return rc;
        const double t_ref = cli_now_s();
        res->gen_wall_s += t_ref - t_gen;
        pk_status s = reuse && k->ref_from ? k->ref_from(call.args, res->data[d], prior)
                                           : PK_EUNSUPPORTED;
        if (s == PK_EUNSUPPORTED && res->req->tune && !res->is_proxy && k->runs_add_up &&
            k->ref_more)
            s = ref_prefixes(res, c, res->req->reps + 1);
        else if (s == PK_EUNSUPPORTED)
            s = k->call(CLI_REFERENCE, NULL, NULL, NULL, call.args, res->data[d],
                        res->req->reps + 1, NULL);
        res->ref_wall_s += cli_now_s() - t_ref;
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
        printf(" %9.2e %s%s%s\n", r->v.norm ? r->v.rep.norm_rel_err : r->v.rep.max_rel_err,
               r->verified ? "yes" : "NO", r->tuning[0] ? "  " : "", r->tuning);
    }
    if (res->req->calls > 0) { /* what a user's call costs against the plan's run */
        printf("one call against the plan (--calls %d: the first in a fresh context, the median "
               "of the later ones; the library's wall, all of it)\n", res->req->calls);
        printf("first MB: the resident memory the first call added; fresh GB/s: the first "
               "touch of 64 MiB of new memory just before it (what it pays per new byte)\n");
        printf("%-13s %-7s %-13s", "kernel", "backend", "variant");
        if (cases) printf(" %-16s", "case");
        printf(" %9s %10s %10s %8s %8s %7s %9s %10s\n", "plan ms", "first ms", "repeat ms",
               "x plan", "first x", "x roof", "first MB", "fresh GB/s");
        for (int i = 0; i < res->nrows; ++i) {
            const cli_bench_row *r = &res->rows[i];
            if (r->status != CLI_ROW_OK) continue;
            printf("%-13s %-7s %-13s", k->name, pk_backend_name(r->backend), r->variant);
            if (cases) printf(" %-16.16s", r->case_name[0] ? r->case_name : "-");
            printf(" %9.3f %10.3f %10.3f %7.2fx %7.2fx", 1e3 * r->t_min, 1e3 * r->call_first_s,
                   1e3 * r->call_repeat_s, r->call_repeat_s / r->t_min,
                   r->call_first_s / r->t_min);
            /* the repeated call's bytes per second against the copy bandwidth, as the plan's
             * "x roof" above (the one call against the roofline) */
            if (r->bw > 0)
                printf(" %6.2fx", cli_row_gbs(r) * 1e9 / r->bw * r->t_min / r->call_repeat_s);
            else
                printf(" %7s", "-");
            printf(" %9.1f %10.2f\n", r->call_first_new / 1e6, r->fresh_bps / 1e9);
        }
    }
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status == CLI_ROW_SKIPPED)
            printf("%s %s skipped: %s\n", k->name, pk_backend_name(r->backend), r->reason);
        else if (r->status == CLI_ROW_FAILED)
            printf("%s %s %s %s%s%s error: %s\n", k->name, pk_backend_name(r->backend),
                   r->variant, r->case_name, r->tuning[0] ? " " : "", r->tuning, r->reason);
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

static int row_good(const cli_bench_row *r) { return r->status == CLI_ROW_OK && r->verified; }

/* ---- tune's space: the tuning parameters worth trying, per backend and variant ------------ */
/* Each row: a tuning parameter (lib/tuning.c; its kernel is the name's prefix), the backend
 * and the variants whose plans read it (NULL: all of the backend's), and the values tune
 * tries besides the default, ' '-separated.  auto_cpu: the value the default takes on a CPU
 * device, not measured twice there; an ISA parameter skips the levels at or above the
 * device's (its default is the device's best).  values NULL: not searched but derived from
 * the measurements (tune_derive). */
typedef struct tune_dim {
    const char *param;
    pk_backend_id backend; /* PK_BACKEND_AUTO: every backend (a derived one) */
    const char *variants;
    const char *values;
    const char *auto_cpu;
    int downward; /* values from the fastest path down (SIMD levels): once one loses to the
                     best so far, the lower ones are not tried */
    int top_only; /* searched on the backend's fastest variant only, not on the second */
} tune_dim;

static const tune_dim tune_space[] = {
    {"conv2d.cl_scheme", PK_BACKEND_OPENCL, NULL, "vec scalar", "vec", 0, 0},
    {"conv2d.isa", PK_BACKEND_OPENMP, "omp-rb", "avx512 avx2 generic", NULL, 1, 0},
    /* FFTW's measured plans (~1 s of planning once, kept in FFTW's wisdom file) against the
     * default, which takes them from that file when there and estimates otherwise */
    {"conv2d.fft_plan", PK_BACKEND_OPENMP, "fft,frame-fft", "measure", NULL, 0, 0},
    {"conv2d.fft_taps", PK_BACKEND_AUTO, NULL, NULL, NULL, 0, 0}, /* the crossover at the case's PSF */
    {"diffusion3d.cl_scheme", PK_BACKEND_OPENCL, NULL, "xvec zmarch", "xvec", 0, 0},
    {"diffusion3d.isa", PK_BACKEND_OPENMP, "omp-tb,omp-tiled,omp-phalanx", "avx512 avx2 generic",
     NULL, 1, 0},
    {"diffusion3d.tb_depth", PK_BACKEND_OPENMP, "omp-tb", "3 4 8 10", NULL, 0, 0},
    {"diffusion3d.tb_rows", PK_BACKEND_OPENMP, "omp-tb", "16 64 128", NULL, 0, 0},
    {"dslash.isa", PK_BACKEND_OPENMP, "omp-vnode", "avx512 avx2 generic", NULL, 1, 0},
    {"grid.cuda_blocks", PK_BACKEND_CUDA, "cuda-tiled", "2,16 4,32 8,64 16,128", NULL, 0, 0},
    /* The grid's tiles (the slowest kernel to time: two values per field, one halving and one
     * doubling of the default tile, and no central box against a small one; tile_factor on
     * CUDA's hybrid only, where it means something).  omp-tiled, 2 threads: 128 (its default
     * for footprints up to 128 cells) beat 64 by 10-31% on three data sets, 256 (its default
     * beyond) won on the widest supports (omp/grid_omp.c gr_auto_tile), so on those sets the
     * search times 64 and the default again; more cores want smaller tiles (balance), which 64
     * covers. */
    {"grid.tile_size", PK_BACKEND_OPENMP, "omp-tiled", "64 256", NULL, 0, 0},
    {"grid.central_radius", PK_BACKEND_OPENMP, "omp-tiled", "-1 2", NULL, 0, 0},
    {"grid.isa", PK_BACKEND_OPENMP, "omp-tiled", "avx512 avx2", NULL, 1, 0}, /* generic: avx2's */
    {"grid.tile_size", PK_BACKEND_OPENCL, "opencl-tiled", "32 128", NULL, 0, 0},
    {"grid.tile_size", PK_BACKEND_CUDA, "cuda-tiled,hybrid", "16 64", NULL, 0, 0},
    {"grid.central_radius", PK_BACKEND_CUDA, "cuda-tiled,hybrid", "2 8", NULL, 0, 0},
    {"grid.tile_factor", PK_BACKEND_CUDA, "hybrid", "0.25 0.5 0.75", NULL, 0, 0},
    {"laplace2d.isa", PK_BACKEND_OPENMP, "omp-simd,omp-tb", "avx512 avx2 generic", NULL, 1, 0},
    {"laplace2d.stream", PK_BACKEND_OPENMP, NULL, "0 1", NULL, 0, 0},
    {"laplace2d.cl_scheme", PK_BACKEND_OPENCL, NULL, "vec item", "vec", 0, 0},
    {"laplace2d.tb_depth", PK_BACKEND_OPENMP, "omp-tb", "2 3 6 8", NULL, 0, 0},
    {"magicfilter3d.isa", PK_BACKEND_SERIAL, "simd", "avx512 avx2 generic", NULL, 1, 0},
    {"magicfilter3d.isa", PK_BACKEND_OPENMP, "omp", "avx512 avx2 generic", NULL, 1, 0},
    {"magicfilter3d.cl_scheme", PK_BACKEND_OPENCL, NULL, "vec tile", "vec", 0, 0},
    {"su3.isa", PK_BACKEND_OPENMP, "omp-simd", "avx512 avx2 generic", NULL, 1, 0},
    {"su3.stream", PK_BACKEND_OPENMP, "omp-simd", "0 1", NULL, 0, 0},
    /* Every kernel's OpenMP plans, last (on the values the kernel's own parameters won), on
     * the fastest variant only, on cases under TUNE_THREADS_S: fewer threads than the CPUs
     * (tune_worth drops the others; the default uses them all), which wins on small cases
     * where a team's start and barriers cost more than the work. */
    {"openmp.threads", PK_BACKEND_OPENMP, NULL, "1 2 4 8", NULL, 0, 1},
};
#define N_TUNE_DIMS ((int)(sizeof tune_space / sizeof tune_space[0]))

/* A variant, a second one within this factor of the backend's fastest, is searched too;
 * a backend whose fastest is beyond TUNE_BACKEND x the case's best on any backend is not
 * searched (its entry applies only where the faster backend is missing); a timing whose
 * first run is beyond CUT x the case's best so far stops there. */
#define TUNE_SECOND 1.25
#define TUNE_BACKEND 1.5
#define TUNE_CUT 1.5
/* openmp.threads is searched only on cases whose best run so far is under this many seconds:
 * a team's start and barriers (microseconds each) matter there; on longer runs fewer threads
 * only win when other jobs hold the cores, which wisdom should not keep. */
#define TUNE_THREADS_S 0.02

static int list_has(const char *list, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, word, n)) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* A parameter of kernel k: its own ("<kernel>.") or a backend-wide one ("openmp."). */
static int kernel_param(const cli_kernel *k, const char *param)
{
    const size_t n = strlen(k->name);
    return (!strncmp(param, k->name, n) && param[n] == '.') || !strncmp(param, "openmp.", 7);
}

static int isa_level(const char *s)
{
    return !strncmp(s, "avx512", 6) ? 2 : !strcmp(s, "avx2") ? 1 : 0;
}

/* 0 when the value would run what the default already ran on this device. */
static int tune_worth(pk_context *ctx, pk_backend_id be, int device, const tune_dim *dim,
                      const char *value)
{
    pk_device_info di;
    const size_t n = strlen(dim->param);
    if (pk_device_get_info(ctx, be, device, &di) != PK_OK) return 1;
    if (dim->auto_cpu && di.type == PK_DEVICE_CPU && !strcmp(value, dim->auto_cpu)) return 0;
    if (!strcmp(dim->param, "openmp.threads")) return atoi(value) < di.compute_units;
    if (n > 4 && !strcmp(dim->param + n - 4, ".isa")) return isa_level(value) < isa_level(di.simd);
    return 1;
}

/* Set the parameters of a tuning text ("a=b;c=d") on ctx, or (set 0) back to their defaults. */
static pk_status tuning_apply(pk_context *ctx, const char *text, int set)
{
    pk_status s = PK_OK;
    for (const char *p = text; *p && s == PK_OK;) {
        char item[160];
        const size_t len = strcspn(p, ";");
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        p += len + (p[len] == ';');
        char *eq = strchr(item, '=');
        if (!eq) continue;
        *eq = '\0';
        s = pk_context_set_param(ctx, item, set ? eq + 1 : NULL);
    }
    return s;
}

/* The fastest verified time of a backend's rows of case c (INFINITY: none). */
/* What tune ranks a row by: a row with tuning parameters must beat the defaults by 2% (one
 * run's noise on a busy machine), so that noise does not fill the wisdom with values. */
static double tune_score(const cli_bench_row *r) { return r->tuning[0] ? 1.02 * r->t_min : r->t_min; }

static double case_best(const cli_bench_result *res, pk_backend_id be, int c)
{
    double best = INFINITY;
    for (int i = 0; i < res->nrows; ++i)
        if (res->rows[i].backend == be && res->rows[i].c == c && row_good(&res->rows[i]) &&
            res->rows[i].t_min < best)
            best = res->rows[i].t_min;
    return best;
}

/* The cut of a row of case c: TUNE_CUT x the case's best on any backend so far (0: none).
 * A slower backend's rows are then timed roughly, which only its entry (used where the
 * faster backend is missing) and the runners-up ratios see. */
static double tune_cut(const cli_bench_result *res, int c)
{
    double best = INFINITY;
    for (int b = 1; b < PK_BACKEND_COUNT; ++b) best = fmin(best, case_best(res, (pk_backend_id)b, c));
    return res->req->tune && isfinite(best) ? TUNE_CUT * best : 0;
}

/* 1 when the contexts' thread count is set (--threads, PORTKERN_THREADS): openmp.threads then
 * changes nothing (the context's count wins), so it is not searched. */
static int threads_fixed(const cli_bench_result *res)
{
    const char *env = getenv("PORTKERN_THREADS");
    return res->req->threads > 0 || (env && atoi(env) > 0);
}

/* tune's search on one backend, after its variants ran at the defaults: for each case, the
 * fastest variant (and the second when within TUNE_SECOND of it), then each parameter of the
 * space that its plans read in turn, over its values, keeping the fastest so far (coordinate
 * descent: linear in the values, not their product).  -1: out of memory. */
static int tune_search(cli_bench_result *res, pk_backend_id be, int *done)
{
    const cli_kernel *k = res->k;
    pk_context *ctx = res->set.ctx[be];
    for (int c = 0; c < res->ncases; ++c) {
        int top[2] = {-1, -1};
        for (int i = 0; i < res->nrows; ++i) {
            const cli_bench_row *r = &res->rows[i];
            if (r->backend != be || r->c != c || r->tuning[0] || !row_good(r)) continue;
            if (top[0] < 0 || r->t_min < res->rows[top[0]].t_min)
                top[1] = top[0], top[0] = i;
            else if (top[1] < 0 || r->t_min < res->rows[top[1]].t_min)
                top[1] = i;
        }
        if (top[1] >= 0 && res->rows[top[1]].t_min > TUNE_SECOND * res->rows[top[0]].t_min)
            top[1] = -1;
        const double all = tune_cut(res, c) / TUNE_CUT; /* the case's best on any backend */
        if (top[0] >= 0 && res->rows[top[0]].t_min > TUNE_BACKEND * all) continue;
        for (int t = 0; t < 2 && top[t] >= 0; ++t) {
            char variant[32], cur[160] = "", adopt[160];
            snprintf(variant, sizeof variant, "%s", res->rows[top[t]].variant);
            const int device = res->rows[top[t]].device;
            double best = tune_score(&res->rows[top[t]]);
            for (int d = 0; d < N_TUNE_DIMS; ++d) {
                const tune_dim *dim = &tune_space[d];
                if (!dim->values || dim->backend != be || !kernel_param(k, dim->param) ||
                    (dim->variants && !list_has(dim->variants, variant)) ||
                    (dim->top_only && t > 0) ||
                    (!strcmp(dim->param, "openmp.threads") &&
                     (threads_fixed(res) || best > TUNE_THREADS_S)))
                    continue;
                snprintf(adopt, sizeof adopt, "%s", cur);
                for (const char *p = dim->values; *p;) {
                    char value[40];
                    const size_t len = strcspn(p, " ");
                    snprintf(value, sizeof value, "%.*s", (int)len, p);
                    p += len + (p[len] == ' ');
                    if (!tune_worth(ctx, be, device, dim, value)) continue;
                    if (res->deadline > 0 && cli_now_s() > res->deadline) { /* share spent */
                        ++res->search_left;
                        continue;
                    }
                    const double cut = tune_cut(res, c);
                    cli_bench_row *r = add_row(res, be);
                    if (!r) return -1;
                    snprintf(r->variant, sizeof r->variant, "%s", variant);
                    snprintf(r->tuning, sizeof r->tuning, "%s%s%s=%s", cur, cur[0] ? ";" : "",
                             dim->param, value);
                    r->c = c;
                    if (k->case_name) k->case_name(res->args[c], r->case_name, sizeof r->case_name);
                    cli_progress("%s [%d] %s %s %s %s ...", k->name, ++*done, pk_backend_name(be),
                                 variant, r->case_name, r->tuning);
                    pk_status s = tuning_apply(ctx, r->tuning, 1);
                    if (s == PK_OK)
                        bench_one(res, ctx, r, cut);
                    else
                        row_fail(r, "tuning parameter", s);
                    tuning_apply(ctx, r->tuning, 0);
                    if (row_good(r) && tune_score(r) < best) {
                        best = tune_score(r);
                        snprintf(adopt, sizeof adopt, "%s", r->tuning);
                    } else if (dim->downward) {
                        break;
                    }
                }
                snprintf(cur, sizeof cur, "%s", adopt);
            }
        }
    }
    return 0;
}

static const char *tune_proxy_skip(const cli_bench_result *px, pk_backend_id be,
                                   const char *var, int c);
/* tune: image's variants are grid's, and an image run grids first, so a variant whose grid
 * row in this tune (grid, when it ran before image) took over the cut (1.5x image's best so
 * far) cannot win image: it is not timed (grid's slow rows, 20-110 s a run at paper size,
 * would be again).  The row's reason, or NULL to time it. */
static const char *tune_prior_skip(const cli_bench_result *res, const cli_bench_result *prior,
                                   pk_backend_id be, const char *var, int c)
{
    static char why[300];
    const double cut = tune_cut(res, c);
    if (!res->req->tune || !prior || strcmp(res->k->name, "image")) return NULL;
    /* grid's proxy in this tune: a variant it left out (beyond 2x its best) grids slower than
     * another, and so cannot win image's grid step on the same data set either */
    const char *g = prior->px ? tune_proxy_skip(prior->px, be, var, 0) : NULL;
    if (g) {
        snprintf(why, sizeof why, "tune: not timed, its grid step cannot win: grid's %s",
                 g + strlen("tune: not run at full size: its "));
        return why;
    }
    if (!(cut > 0)) return NULL;
    for (int i = 0; i < prior->ndefault; ++i) {
        const cli_bench_row *q = &prior->rows[i];
        if (q->backend == be && !strcmp(q->variant, var) && row_good(q) && q->t_min > cut) {
            snprintf(why, sizeof why, "tune: not timed, its grid step alone took %.0f ms in "
                     "this tune, beyond %.1fx image's best so far", 1e3 * q->t_min, TUNE_CUT);
            return why;
        }
    }
    return NULL;
}

/* tune: where the kernel's time went, wall: its data sets and references, its rows (the
 * longest named), the rest (contexts, program builds before the first row, the report). */
static void tune_account(const cli_bench_result *res)
{
    double rows = 0;
    int n = 0, top[4] = {-1, -1, -1, -1};
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status == CLI_ROW_SKIPPED) continue;
        rows += r->wall_s;
        ++n;
        for (int t = 0; t < 4; ++t)
            if (top[t] < 0 || r->wall_s > res->rows[top[t]].wall_s) {
                memmove(top + t + 1, top + t, (size_t)(3 - t) * sizeof *top);
                top[t] = i;
                break;
            }
    }
    printf("tune time: %s %.1f s: data and references %.1f s, %d rows %.1f s", res->k->name,
           cli_now_s() - res->t0, res->setup_wall_s, n, rows);
    for (int t = 0; t < 4 && top[t] >= 0; ++t) {
        const cli_bench_row *r = &res->rows[top[t]];
        printf("%s%s %s%s%s%s%s %.1f s", t ? ", " : " (the longest: ", pk_backend_name(r->backend),
               r->variant, r->case_name[0] ? " " : "", r->case_name, r->tuning[0] ? " " : "",
               r->tuning, r->wall_s);
    }
    printf("%s\n", top[0] >= 0 ? ")" : "");
    /* the profile: the data's part split into generation and references, the rows' into
     * plans (with their uploads), timed runs (the warm-up and downloads included) and the
     * verification (hashing included); the rest of the kernel's wall is contexts, program
     * builds and the report */
    double plans = 0, verify = 0;
    for (int i = 0; i < res->nrows; ++i) {
        const cli_bench_row *r = &res->rows[i];
        if (r->status == CLI_ROW_SKIPPED) continue;
        plans += r->setup_s + r->upload_s;
        verify += r->verify_s;
    }
    printf("tune profile: %s: generation (inputs, outputs allocated) %.1f s, references %.1f s, "
           "rows' plans %.1f s, timed "
           "runs %.1f s, verification %.1f s, other %.1f s\n", res->k->name, res->gen_wall_s,
           res->ref_wall_s, plans, rows - plans - verify, verify,
           cli_now_s() - res->t0 - res->proxy_wall_s - res->setup_wall_s - rows);
    int nshort = 0, nsame = 0;
    for (int i = 0; i < res->nrows; ++i) nshort += res->rows[i].short_runs > 0;
    for (int i = 0; i < res->nrows; ++i) nsame += res->rows[i].same_as > 0;
    if (nsame)
        printf("tune: %d row%s verified as bitwise the outputs of an already verified row of "
               "the case (the reason in the JSON names it)\n", nsame, nsame == 1 ? "" : "s");
    if (nshort)
        printf("tune: %d row%s cut short (the runs add up): each verified against the serial "
               "reference after as many runs, computed once per case\n", nshort,
               nshort == 1 ? "" : "s");
}

/* tune at paper and large sizes, for a kernel with a proxy (grid, image, degrid: a tenth of
 * the visibilities): every variant at the defaults on the proxy first, with the cuts, each
 * verified against the proxy's own reference.  A variant whose proxy run took more than
 * TUNE_PROXY x the proxy's best (any backend) is then not run at full size: the work is
 * linear in the visibilities on the same grid, and the fixed costs (zeroing the grid, the
 * FFT) bring every variant's proxy time closer to the best, not further, so a variant
 * beyond 2x there is further behind at full size.  The proxy's rows are printed (not kept in
 * the JSON); its data is freed before the full-size data is made.  NULL: no proxy. */
#define TUNE_PROXY 2.0
static void bench_free(cli_bench_result *res);
static const char *tune_prior_skip(const cli_bench_result *res, const cli_bench_result *prior,
                                   pk_backend_id be, const char *var, int c);
static cli_bench_result *tune_proxy(const cli_bench_result *res, const pk_backend_id *backends,
                                    int nb, const cli_bench_result *prior, int *done, int *rc)
{
    const cli_kernel *k = res->k;
    cli_bench_result *px = calloc(1, sizeof *px);
    *rc = 0;
    if (!px) return NULL;
    px->k = k;
    px->req = res->req;
    px->set = res->set; /* the contexts, shared (closed with res's) */
    px->is_proxy = 1;
    px->t0 = cli_now_s();
    if ((*rc = bench_setup(px, NULL))) return px;
    px->setup_wall_s = cli_now_s() - px->t0;
    char what[128] = "";
    if (px->ncases) { /* the proxy's words, from a copy of a case's args */
        void *a = calloc(1, k->args_size);
        if (a) {
            cli_args_init(k, a);
            k->preset(cli_size_index(res->req->size), a);
            if (k->bench_case) k->bench_case(cli_size_index(res->req->size), 0, a);
            snprintf(what, sizeof what, "%s", k->proxy(a));
            free(a);
        }
    }
    for (int i = 0; i < nb; ++i) {
        const pk_backend_id be = backends[i];
        for (int v = 0; v < px->set.nvars[be]; ++v)
            for (int c = 0; c < px->ncases; ++c) {
                const char *var = px->set.vars[be][v];
                if (k->case_runs && !k->case_runs(px->args[c], var)) continue;
                cli_bench_row *r = add_row(px, be);
                if (!r) return px;
                snprintf(r->variant, sizeof r->variant, "%s", var);
                r->c = c;
                snprintf(r->case_name, sizeof r->case_name, "proxy");
                cli_progress("%s [%d] %s %s proxy ...", k->name, ++*done, pk_backend_name(be), var);
                const char *skip = tune_prior_skip(res, prior, be, var, c);
                if (skip) {
                    r->status = CLI_ROW_SKIPPED;
                    snprintf(r->reason, sizeof r->reason, "%s %s", var, skip);
                    continue;
                }
                bench_one(px, px->set.ctx[be], r, tune_cut(px, c));
            }
    }
    px->ndefault = px->nrows;
    printf("tune: %s's proxy (%s): the variants at the defaults, each verified against the "
           "proxy's own reference; one beyond %.1fx the proxy's best is not run at full size\n",
           k->name, what, TUNE_PROXY);
    print_rows(px);
    tune_account(px);
    printf("\n");
    for (int d = 0; d < px->ndata; ++d) data_free(k, px->data[d]); /* the memory, for res's */
    memset(px->data, 0, sizeof px->data);
    px->ndata = 0;
    for (int i = 0; i < px->nrows; ++i)
        if (px->rows[i].status == CLI_ROW_FAILED ||
            (px->rows[i].status == CLI_ROW_OK && !px->rows[i].verified))
            *rc = CLI_EXIT_FAIL;
    return px;
}

/* The reason a full-size row is not run after the proxy (tune_proxy), or NULL to run it. */
static const char *tune_proxy_skip(const cli_bench_result *px, pk_backend_id be,
                                   const char *var, int c)
{
    static char why[200];
    const cli_bench_row *best = NULL, *mine = NULL;
    for (int i = 0; px && i < px->nrows; ++i) {
        const cli_bench_row *q = &px->rows[i];
        if (q->c != c || !row_good(q)) continue;
        if (!best || q->t_min < best->t_min) best = q;
        if (q->backend == be && !strcmp(q->variant, var)) mine = q;
    }
    if (!best || !mine || !(mine->t_min > TUNE_PROXY * best->t_min)) return NULL;
    snprintf(why, sizeof why, "tune: not run at full size: its proxy run took %.1f ms, %.1fx "
             "the proxy's best (%s %s, %.1f ms), both verified", 1e3 * mine->t_min,
             mine->t_min / best->t_min, pk_backend_name(best->backend), best->variant,
             1e3 * best->t_min);
    return why;
}

static int bench_kernel(const cli_kernel *k, const cli_bench_req *req,
                        const pk_backend_id *backends, int nb, cli_bench_result *prior,
                        double share, cli_bench_result **out)
{
    cli_bench_result *res = calloc(1, sizeof *res), *px = NULL; /* px: tune's proxy */
    int total, done = 0, rc = 0;
    *out = res;
    if (!res) goto nomem;
    res->k = k;
    res->req = req;
    total = bench_open(&res->set, backends, nb, req->threads, req->params, k->variants, k->name);
    for (int i = 0; i < nb; ++i) { /* unavailable backends: one row each */
        const pk_backend_id be = backends[i];
        if (res->set.nvars[be] > 0) continue;
        cli_bench_row *r = add_row(res, be);
        if (!r) goto nomem;
        r->status = CLI_ROW_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "%s", res->set.skip[be]);
    }
    res->t0 = cli_now_s();
    res->deadline = share > 0 ? res->t0 + share : 0;
    if (req->tune && k->proxy && total > 0 &&
        (req->proxy > 0 || (req->proxy < 0 && cli_size_index(req->size) != CLI_SMALL))) {
        int prc = 0;
        if (!(px = tune_proxy(res, backends, nb, prior, &done, &prc))) goto nomem;
        if (prc) rc = prc;
        if (prc && !px->nrows) goto done; /* its data could not be made */
    }
    const double t_setup = cli_now_s();
    res->proxy_wall_s = px ? t_setup - res->t0 : 0;
    if (total > 0) {
        const int src = bench_setup(res, prior);
        if (src) {
            rc = src;
            goto done;
        }
    }
    res->setup_wall_s = cli_now_s() - t_setup;
    if (res->ndata && k->describe) k->describe(res);
    /* the backends' order of the rows at defaults; tune: the serial backend last (the
     * reference: one thread, its entries used only where no other backend is), so that the
     * cut applies to its rows (degrid's one-thread FFT of the whole grid: 10 s a run at paper
     * size), and once the kernel's share of the budget is spent they are not run (said) */
    pk_backend_id order[PK_BACKEND_COUNT];
    int no = 0;
    for (int i = 0; i < nb && no < PK_BACKEND_COUNT; ++i)
        if (!(req->tune && backends[i] == PK_BACKEND_SERIAL)) order[no++] = backends[i];
    for (int i = 0; i < nb && no < PK_BACKEND_COUNT; ++i)
        if (req->tune && backends[i] == PK_BACKEND_SERIAL) order[no++] = backends[i];
    for (int i = 0; total > 0 && i < no; ++i) {
        const pk_backend_id be = order[i];
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
                const char *skip = tune_proxy_skip(px, be, var, c);
                if (!skip) skip = tune_prior_skip(res, prior, be, var, c);
                if (!skip && req->tune && be == PK_BACKEND_SERIAL && res->deadline > 0 &&
                    cli_now_s() > res->deadline) {
                    skip = "tune: not run, the kernel's share of the budget is spent (serial "
                           "rows last)";
                    ++res->serial_left;
                }
                if (skip) {
                    r->status = CLI_ROW_SKIPPED;
                    snprintf(r->reason, sizeof r->reason, "%s %s", var, skip);
                    continue;
                }
                bench_one(res, res->set.ctx[be], r, tune_cut(res, c));
            }
    }
    res->ndefault = res->nrows;
    /* tune: every backend's defaults first, so that the search knows which can win */
    for (int i = 0; req->tune && total > 0 && i < nb; ++i)
        if (res->set.nvars[backends[i]] > 0 && tune_search(res, backends[i], &done) != 0)
            goto nomem;
    if (req->tune)
        printf("best of up to %d timed plan runs (min, median, max; fewer %sonce one of 0.1 s "
               "is beyond %.1fx the best so far; none when the warm-up took 4x that and 0.5 s, "
               "or on serial, OpenMP and OpenCL that and 2 s) "
               "after 1 warm-up, data resident on the device\n", req->reps,
               k->runs_add_up ? "" : "once two agree within 2% or two took over 2 s, a serial, "
                                     "OpenMP or OpenCL warm-up of over 2 s one of them, or ",
               TUNE_CUT);
    else
        printf("best of %d timed plan runs (min, median, max) after 1 warm-up, data resident on "
               "the device; 'portkern run' times one cold call instead\n", req->reps);
    print_rows(res);
    if (req->tune) tune_account(res);
    if (res->search_left)
        printf("tune: %s's share of the budget (%.0f s) was spent: %d row%s of its search not "
               "run\n", k->name, res->deadline - res->t0, res->search_left,
               res->search_left == 1 ? "" : "s");
    if (res->serial_left)
        printf("tune: %s's share of the budget (%.0f s) was spent: %d serial row%s at the "
               "defaults not run\n", k->name, res->deadline - res->t0, res->serial_left,
               res->serial_left == 1 ? "" : "s");
    if (res->ndata && k->report) { /* the kernel's tables are of the variants at defaults */
        const int all = res->nrows;
        res->nrows = res->ndefault ? res->ndefault : all;
        k->report(res);
        res->nrows = all;
    }
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
    if (res)
        res->px = px; /* freed with res (its contexts are res's) */
    else
        bench_free(px);
    if (res) bench_close(&res->set);
    return rc;
}

static void bench_json_rows(const cli_bench_result *res, cli_json *j)
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
        cj_str(j, "tuning", r->tuning[0] ? r->tuning : NULL);
        cj_num(j, "kernel_seconds", ok ? r->t_min : NAN);
        cj_num(j, "kernel_seconds_median", ok ? r->t_median : NAN);
        cj_num(j, "kernel_seconds_max", ok ? r->t_max : NAN);
        cj_num(j, "ms", ok ? 1e3 * r->t_min : NAN);
        cj_num(j, "setup_seconds", ok ? r->setup_s : NAN);
        cj_num(j, "upload_seconds", ok ? r->upload_s : NAN);
        cj_num(j, "download_seconds", ok ? r->download_s : NAN);
        cj_num(j, "wall_seconds", ok ? r->wall_s : NAN); /* the row's, plan to verdict */
        cj_num(j, "verify_seconds", ok ? r->verify_s : NAN);
        cj_num(j, "call_first_seconds", ok ? r->call_first_s : NAN);
        cj_num(j, "call_repeat_seconds", ok ? r->call_repeat_s : NAN);
        cj_num(j, "call_first_new_bytes", ok ? r->call_first_new : NAN);
        cj_num(j, "first_touch_gb_per_s", ok ? r->fresh_bps / 1e9 : NAN);
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
        if (ok) verdict_json(j, &r->v);
        cj_str(j, "reason", r->reason);
        cj_close(j);
    }
}

static void bench_free(cli_bench_result *res)
{
    if (!res) return;
    for (int i = 0; i < res->nrows; ++i) free(res->rows[i].json);
    for (int c = 0; c < CLI_CASES; ++c) free(res->args[c]);
    bench_free(res->px);
    short_refs_free(res);
    for (int d = 0; d < res->ndata; ++d) data_free(res->k, res->data[d]);
    free(res->extra);
    free(res->rows);
    free(res);
}

/* ---- tune: the fastest verified variant per device and case becomes wisdom ---------------- */
static int same_group(const cli_bench_row *a, const cli_bench_row *b)
{
    return a->backend == b->backend && a->device == b->device && a->c == b->c;
}


/* The derived parameters of the space for the winner r (";name=value" each, appended to
 * tuning).  conv2d.fft_taps: the rows measured direct against FFT at the case's PSF, so the
 * threshold moves to that side of the PSF's taps only when the default would put auto's
 * method (which overrides an entry's direct variant from the threshold on) on the other. */
static void tune_derive(const cli_bench_result *res, const cli_bench_row *r, char *tuning,
                        size_t len)
{
    for (int d = 0; d < N_TUNE_DIMS; ++d) {
        const tune_dim *dim = &tune_space[d];
        int kh, kw, threshold = 0;
        if (dim->values || !kernel_param(res->k, dim->param) ||
            strcmp(dim->param, "conv2d.fft_taps") ||
            sscanf(r->info.wisdom_key, "psf=%dx%d", &kh, &kw) != 2)
            continue;
        for (int i = 0; i < pk_param_count(); ++i) { /* the default: what a call will use */
            pk_param_desc pd;
            if (pk_param_info(i, &pd) == PK_OK && !strcmp(pd.name, dim->param))
                threshold = atoi(pd.def);
        }
        if (threshold < 1) continue;
        const size_t vl = strlen(r->variant);
        const int fft = !strcmp(r->variant, "fft") || (vl > 4 && !strcmp(r->variant + vl - 4, "-fft"));
        const long long taps = (long long)kh * kw;
        const size_t used = strlen(tuning);
        if (taps >= INT_MAX) continue;
        if (fft && taps < threshold)
            snprintf(tuning + used, len - used, "%s%s=%lld", used ? ";" : "", dim->param, taps);
        else if (!fft && taps >= threshold)
            snprintf(tuning + used, len - used, "%s%s=%lld", used ? ";" : "", dim->param, taps + 1);
    }
}

/* One wisdom entry per (backend, device, case): the winner with its tuning parameters, its
 * time, the others' ratios. */
static void tune_record(cli_bench_result *res, cli_tune *tune)
{
    for (int i = 0; i < res->nrows; ++i) {
        cli_bench_row *r = &res->rows[i];
        int best = row_good(r);
        for (int k = 0; best && k < res->nrows; ++k)
            if (k != i && same_group(&res->rows[k], r) && row_good(&res->rows[k]) &&
                (tune_score(&res->rows[k]) < tune_score(r) ||
                 (tune_score(&res->rows[k]) == tune_score(r) && k < i)))
                best = 0;
        if (!best) continue;
        pk_wisdom_entry e;
        if (pk_wisdom_entry_init(tune->store, r->backend, r->device, &e) != PK_OK) {
            fprintf(stderr, "portkern tune: %s %s: no device identity: %s\n", res->k->name,
                    pk_backend_name(r->backend), pk_last_error());
            continue;
        }
        snprintf(e.kernel, sizeof e.kernel, "%s", res->k->name);
        snprintf(e.size_class, sizeof e.size_class, "%s%s%s", res->req->size,
                 r->case_name[0] ? "/" : "", r->case_name);
        e.size_bytes = r->info.plan_bytes;
        snprintf(e.params, sizeof e.params, "%s", r->info.wisdom_key); /* the call's shape */
        snprintf(e.variant, sizeof e.variant, "%s", r->variant);
        snprintf(e.tuning, sizeof e.tuning, "%s", r->tuning);
        tune_derive(res, r, e.tuning, sizeof e.tuning);
        e.seconds = r->t_min;
        size_t used = 0;
        for (int k = 0; k < res->nrows && used < sizeof e.runners_up; ++k) {
            const cli_bench_row *q = &res->rows[k];
            if (k == i || !same_group(q, r) || !row_good(q)) continue;
            used += (size_t)snprintf(e.runners_up + used, sizeof e.runners_up - used,
                                     "%s%s%s%s%s %.2fx", used ? ", " : "", q->variant,
                                     q->tuning[0] ? " (" : "", q->tuning, q->tuning[0] ? ")" : "",
                                     q->t_min / r->t_min);
        }
        r->winner = 1;
        if (pk_wisdom_add(tune->store, &e) == PK_OK)
            ++tune->added;
        else
            fprintf(stderr, "portkern tune: %s %s %s: not kept: %s\n", res->k->name,
                    pk_backend_name(r->backend), r->variant, pk_last_error());
    }
}

/* Auto, per case: which backend and variant it takes, against the fastest row measured for
 * that case on any backend.  tune: with the new wisdom only (tune->store); bench (tune
 * NULL): as a user's call gets it, the wisdom file and the environment included. */
static void tune_check(const cli_bench_result *res, cli_tune *tune)
{
    const cli_kernel *k = res->k;
    for (int c = 0; c < res->ncases; ++c) {
        const cli_bench_row *best = NULL, *chosen = NULL;
        for (int i = 0; i < res->nrows; ++i)
            if (res->rows[i].c == c && row_good(&res->rows[i]) &&
                (!best || res->rows[i].t_min < best->t_min))
                best = &res->rows[i];
        if (!best) continue;
        pk_context_options o;
        pk_context *ctx = NULL;
        pk_run_info info;
        void *plan = NULL;
        pk_context_options_init(&o);
        o.threads = res->req->threads;
        if (tune) o.flags = PK_OPT_IGNORE_ENV; /* the tuned entries only, not a file on disk */
        pk_status s = pk_context_create(&ctx, &o);
        for (int i = 0; s == PK_OK && tune && i < pk_wisdom_count(tune->store); ++i) {
            pk_wisdom_entry e;
            if (pk_wisdom_get(tune->store, i, &e) == PK_OK) s = pk_wisdom_add(ctx, &e);
        }
        if (s == PK_OK)
            s = k->call(CLI_PLAN_CREATE, &plan, ctx, NULL, res->args[c],
                        res->data[res->data_of[c]], 0, &info);
        if (plan)
            k->call(CLI_PLAN_DESTROY, &plan, NULL, NULL, res->args[c],
                    res->data[res->data_of[c]], 0, NULL);
        pk_context_destroy(ctx);
        /* the entry's row (its tuning) when auto took its variant, else that variant's
         * row at the defaults */
        for (int i = 0; s == PK_OK && i < res->nrows; ++i) {
            const cli_bench_row *q = &res->rows[i];
            if (q->c == c && q->backend == info.backend && q->device == info.device &&
                !strcmp(q->variant, info.variant) && (q->winner || (!q->tuning[0] && !chosen)))
                chosen = q;
        }
        printf("auto %s%s%s: ", k->name, best->case_name[0] ? " " : "", best->case_name);
        if (s != PK_OK)
            printf("no plan (%s: %s)\n", pk_strerror(s), pk_last_error());
        else if (!chosen || !row_good(chosen))
            printf("%s %s, not measured here; best %s %s %.3f ms\n", pk_backend_name(info.backend),
                   info.variant, pk_backend_name(best->backend), best->variant, 1e3 * best->t_min);
        else
            printf("%s %s%s%s%s %.3f ms = %.2fx the best (%s %s%s%s%s)\n",
                   pk_backend_name(info.backend), info.variant, chosen->tuning[0] ? " (" : "",
                   chosen->tuning, chosen->tuning[0] ? ")" : "", 1e3 * chosen->t_min,
                   chosen->t_min / best->t_min, pk_backend_name(best->backend), best->variant,
                   best->tuning[0] ? " (" : "", best->tuning, best->tuning[0] ? ")" : "");
    }
}

int cli_bench(const cli_kernel *const *kernels, int nk, const cli_bench_req *req,
              const pk_backend_id *backends, int nb, FILE *json, cli_tune *tune)
{
    cli_bench_result *res[16] = {0};
    cli_json j;
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < nk && i < 16; ++i) {
        /* the budget: no new kernel once it is spent (the first starts unless it is 0) */
        if (tune && (tune->budget_s <= 0 || (i && cli_now_s() - tune->t0 >= tune->budget_s))) {
            printf("\n%s %s: not tuned, the budget of %.0f s is spent\n", kernels[i]->name,
                   req->size, tune->budget_s);
            ++tune->left_out;
            continue;
        }
        if (i) printf("\n");
        cli_bench_result *grid = NULL; /* tune_prior_skip's, borrow's and ref_from's */
        for (int j = 0; j < i; ++j)
            if (res[j] && !strcmp(res[j]->k->name, "grid")) grid = res[j];
        /* tune: the kernel's share of what is left of the budget, the kernels still to come
         * sharing it equally (what one leaves over goes to those after it) */
        const double share = tune ? (tune->budget_s - (cli_now_s() - tune->t0)) / (nk - i) : 0;
        if (bench_kernel(kernels[i], req, backends, nb, grid, share, &res[i]) != 0)
            rc = CLI_EXIT_FAIL;
        if (tune && res[i]) tune_record(res[i], tune);
        if (res[i] && res[i]->ndata) tune_check(res[i], tune);
        if (tune && res[i]) { /* the outputs and references are done with: their memory (grid's
                                 7.8 GB at paper size) for the kernels after it; a reference
                                 the next kernel may take (ref_from: grid's double grid for
                                 image) once that kernel has made its own */
            const int keep = i + 1 < nk && kernels[i + 1]->ref_from;
            short_refs_free(res[i]);
            for (int r = 0; r <= i; ++r)
                for (int d = 0; res[r] && d < res[r]->ndata; ++d)
                    for (const cli_array *a = res[r]->k->arrays; a && a->file; ++a)
                        if ((a->role & CLI_A_OUT) ||
                            ((a->role & CLI_A_REF) && !(keep && r == i))) {
                            free(*array_ptr(res[r]->data[d], a));
                            *array_ptr(res[r]->data[d], a) = NULL;
                        }
        }
    }
    if (json) {
        cj_init(&j, json, 1);
        cj_open(&j, NULL, '{');
        cj_str(&j, "portkern_version", pk_version());
        cj_str(&j, "size", req->size);
        cj_int(&j, "reps", req->reps);
        cj_str(&j, "timing", "kernel time of reps timed plan runs after one untimed warm-up, "
                             "data resident: min (kernel_seconds), median, max");
        cj_str(&j, "roof_model", "copy bandwidth of the backend's device, bytes read + "
                                 "written, measured in this run");
        cj_open(&j, "rows", '[');
        for (int i = 0; i < nk; ++i) bench_json_rows(res[i], &j);
        cj_close(&j);
        for (int i = 0; i < nk; ++i) /* the kernel's own object */
            if (res[i] && res[i]->ndata && res[i]->k->bench_json) {
                cj_open(&j, res[i]->k->name, '{');
                const int all = res[i]->nrows;
                res[i]->nrows = res[i]->ndefault ? res[i]->ndefault : all;
                res[i]->k->bench_json(&j, res[i]);
                res[i]->nrows = all;
                cj_close(&j);
            }
        cj_close(&j);
    }
    for (int i = 0; i < nk; ++i) bench_free(res[i]);
    return rc;
}
