/* cli_common.c - option parsing, error reporting, JSON in and out, file helpers shared by
 * the command-line tools.  See cli_common.h. */
#include "cli_common.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Set only by the fuzz harness (fuzz/fuzz_cli.c); see cli_common.h. */
int cli_parse_only = 0;

/* ---- options ------------------------------------------------------------------------- */

/* s as an integer or a finite double: the whole string, no blanks, within [min, max]. */
static int to_number(const char *s, int integer, double min, double max, double *out,
                     char *why, size_t len)
{
    char *end = (char *)s;
    double v = 0;
    errno = 0;
    if (*s != '\0' && !isspace((unsigned char)*s)) /* strtoll, strtod skip blanks, take "" */
        v = integer ? (double)strtoll(s, &end, 10) : strtod(s, &end);
    if (end == s || *end != '\0') {
        snprintf(why, len, "'%s' is not %s", s, integer ? "an integer" : "a number");
        return -1;
    }
    /* strtod reports ERANGE on underflow too, with the nearest (subnormal or zero) value:
     * that is a number; only an overflow is out of double range. */
    if (!integer && (!isfinite(v) || (errno == ERANGE && fabs(v) > DBL_MIN))) {
        snprintf(why, len, "'%s' is not a finite number in double range", s);
        return -1;
    }
    if ((integer && errno == ERANGE) || v < min || v > max) {
        snprintf(why, len, "%s is out of range (must be %s %.17g)", s, v < min ? ">=" : "<=",
                 v < min ? min : max);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_to_int(const char *s, double min, double max, int *out, char *why, size_t len)
{
    double v;
    if (to_number(s, 1, min, max, &v, why, len)) return -1;
    *out = (int)v;
    return 0;
}

static int cli_to_double(const char *s, double min, double max, double *out, char *why,
                         size_t len)
{
    return to_number(s, 0, min, max, out, why, len);
}

static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t namelen)
{
    for (; opts->name; ++opts)
        if (strlen(opts->name) == namelen && strncmp(opts->name, name, namelen) == 0)
            return opts;
    return NULL;
}

static int opt_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    return CLI_EXIT_USAGE;
}

int cli_parse(const char *prog, int argc, char **argv, const cli_opt *opts, char **pos,
              int maxpos, int *npos)
{
    int i, options_done = 0;
    char why[256];

    *npos = 0;
    for (i = 0; i < argc; ++i) {
        const char *a = argv[i], *name, *eq, *val;
        const cli_opt *o;
        size_t namelen;

        if (!options_done && strcmp(a, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (!options_done && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0))
            return CLI_HELP;
        if (options_done || a[0] != '-' || a[1] == '\0') { /* "-" alone is an operand */
            if (*npos >= maxpos)
                return opt_error(prog, "unexpected argument '%s'", a);
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (a[1] != '-')
            return opt_error(prog, "unknown option '%s'", a);
        name = a + 2;
        eq = strchr(name, '=');
        namelen = eq ? (size_t)(eq - name) : strlen(name);
        o = find_opt(opts, name, namelen);
        if (!o)
            return opt_error(prog, "unknown option '--%.*s'", (int)namelen, name);
        if (o->type == CLI_FLAG) {
            if (eq)
                return opt_error(prog, "option --%s takes no value", o->name);
            *(int *)o->dest = 1;
        } else {
            if (eq) {
                val = eq + 1;
            } else {
                if (i + 1 >= argc)
                    return opt_error(prog, "option --%s needs a value", o->name);
                val = argv[++i];
            }
            if (*val == '\0')
                return opt_error(prog, "option --%s: the value must not be empty", o->name);
            switch (o->type) {
            case CLI_INT:
                if (cli_to_int(val, o->min, o->max, (int *)o->dest, why, sizeof why))
                    return opt_error(prog, "option --%s: %s", o->name, why);
                break;
            case CLI_DOUBLE:
                if (cli_to_double(val, o->min, o->max, (double *)o->dest, why, sizeof why))
                    return opt_error(prog, "option --%s: %s", o->name, why);
                break;
            case CLI_LIST: {
                cli_list *l = o->dest;
                if (l->n >= CLI_LIST_MAX)
                    return opt_error(prog, "option --%s: at most %d given", o->name,
                                     CLI_LIST_MAX);
                l->v[l->n++] = val;
                break;
            }
            default:
                *(const char **)o->dest = val;
                break;
            }
        }
        if (o->seen)
            *o->seen = 1;
    }
    return 0;
}

int cli_params_set(const char *prog, pk_context *ctx, const cli_list *params)
{
    pk_context *own = NULL;
    int rc = 0;
    if (!params || params->n == 0) return 0;
    if (!ctx) {
        pk_context_options o;
        pk_context_options_init(&o);
        o.flags = PK_OPT_IGNORE_ENV;
        pk_status s = pk_context_create(&own, &o);
        if (s != PK_OK) return cli_lib_error(prog, s);
        ctx = own;
    }
    for (int i = 0; i < params->n && !rc; ++i) {
        const char *eq = strchr(params->v[i], '=');
        char name[128];
        if (!eq || eq == params->v[i] || (size_t)(eq - params->v[i]) >= sizeof name) {
            rc = cli_usage_error(prog, "option --param: '%s' is not NAME=VALUE "
                                 "(portkern-probe --params lists the names)", params->v[i]);
            break;
        }
        memcpy(name, params->v[i], (size_t)(eq - params->v[i]));
        name[eq - params->v[i]] = '\0';
        pk_status s = pk_context_set_param(ctx, name, eq + 1);
        if (s != PK_OK)
            rc = cli_usage_error(prog, "option --param: %s", pk_last_error());
    }
    pk_context_destroy(own);
    return rc;
}

/* ---- messages ------------------------------------------------------------------------ */

int cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

int cli_lib_error(const char *prog, pk_status status)
{
    const char *detail = pk_last_error();
    if (detail[0])
        fprintf(stderr, "%s: %s: %s\n", prog, pk_strerror(status), detail);
    else
        fprintf(stderr, "%s: %s\n", prog, pk_strerror(status));
    switch (status) {
    case PK_EINVAL:
    case PK_ENULL:
    case PK_ESIZE:
    case PK_EOVERFLOW:
    case PK_ENONFINITE:
    case PK_ENOBACKEND:
    case PK_ENOVARIANT:
    case PK_ENODEVICE:
    case PK_EIO:
    case PK_EFORMAT:
    case PK_EDTYPE:
    case PK_EUNSUPPORTED:
        return CLI_EXIT_USAGE;
    default:
        return CLI_EXIT_FAIL;
    }
}

void cli_progress(const char *fmt, ...)
{
    va_list ap;
    if (!isatty(fileno(stderr)))
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---- JSON writer --------------------------------------------------------------------- */

static void cli_json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (; *p; ++p) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f); /* UTF-8 passes through */
        }
    }
    fputc('"', f);
}

void cj_init(cli_json *j, FILE *f, int pretty)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->pretty = pretty;
    j->first[0] = 1;
}

static void cj_indent(cli_json *j, int depth)
{
    int i;
    fputc('\n', j->f);
    for (i = 0; i < depth; ++i)
        fputs("  ", j->f);
}

/* Separator, indentation and key before a value. */
static void cj_item(cli_json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->f);
        if (j->pretty)
            cj_indent(j, j->depth);
        else if (!j->first[j->depth])
            fputc(' ', j->f);
    }
    j->first[j->depth] = 0;
    if (key) {
        cli_json_string(j->f, key);
        fputs(": ", j->f);
    }
}

void cj_open(cli_json *j, const char *key, char bracket)
{
    cj_item(j, key);
    fputc(bracket, j->f);
    if (j->depth + 1 < (int)(sizeof j->first / sizeof j->first[0])) {
        ++j->depth;
        j->first[j->depth] = 1;
        j->close[j->depth] = bracket == '{' ? '}' : ']';
    }
}

void cj_close(cli_json *j)
{
    if (j->depth == 0)
        return;
    if (j->pretty && !j->first[j->depth])
        cj_indent(j, j->depth - 1);
    fputc(j->close[j->depth], j->f);
    --j->depth;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void cj_str(cli_json *j, const char *key, const char *s)
{
    cj_item(j, key);
    if (s)
        cli_json_string(j->f, s);
    else
        fputs("null", j->f);
}

void cj_num(cli_json *j, const char *key, double v)
{
    char buf[40];
    int prec;
    cj_item(j, key);
    if (!isfinite(v)) {
        fputs("null", j->f);
        return;
    }
    /* The shortest form that reads back as the same double. */
    for (prec = 15; prec <= 17; ++prec) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, j->f);
}

void cj_int(cli_json *j, const char *key, long long v)
{
    cj_item(j, key);
    fprintf(j->f, "%lld", v);
}

void cj_bool(cli_json *j, const char *key, int v)
{
    cj_item(j, key);
    fputs(v ? "true" : "false", j->f);
}

void cj_null(cli_json *j, const char *key)
{
    cj_item(j, key);
    fputs("null", j->f);
}

void cj_init_members(cli_json *j, FILE *f)
{
    cj_init(j, f, 0);
    j->depth = 1;
    j->first[1] = 1;
}

void cj_raw(cli_json *j, const char *members)
{
    if (!members[0]) return;
    cj_item(j, NULL);
    fputs(members, j->f);
}

/* ---- JSON reader for flat objects ---------------------------------------------------- */

typedef struct jreader {
    const char *s, *p;
    char *why;
    size_t len;
} jreader;

static int jfail(jreader *r, const char *what)
{
    snprintf(r->why, r->len, "%s at byte %ld", what, (long)(r->p - r->s));
    return -1;
}

static void jskip(jreader *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
        ++r->p;
}

static int hex4(const char *p, unsigned *out)
{
    int i;
    *out = 0;
    for (i = 0; i < 4; ++i) {
        int c = (unsigned char)p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        *out = *out * 16 + (unsigned)d;
    }
    return 0;
}

/* Append code point cp as UTF-8; -1 when it does not fit. */
static int put_utf8(char *buf, size_t cap, size_t *n, unsigned cp)
{
    unsigned char tmp[4];
    size_t k = 0, i;
    if (cp < 0x80) {
        tmp[k++] = (unsigned char)cp;
    } else if (cp < 0x800) {
        tmp[k++] = (unsigned char)(0xc0 | (cp >> 6));
        tmp[k++] = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        tmp[k++] = (unsigned char)(0xe0 | (cp >> 12));
        tmp[k++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        tmp[k++] = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        tmp[k++] = (unsigned char)(0xf0 | (cp >> 18));
        tmp[k++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        tmp[k++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        tmp[k++] = (unsigned char)(0x80 | (cp & 0x3f));
    }
    if (*n + k >= cap)
        return -1;
    for (i = 0; i < k; ++i)
        buf[(*n)++] = (char)tmp[i];
    return 0;
}

/* A string literal at r->p (the opening quote) into buf[cap]. */
static int jstring(jreader *r, char *buf, size_t cap)
{
    size_t n = 0;
    ++r->p;
    for (;;) {
        unsigned char c = (unsigned char)*r->p;
        unsigned cp, lo;
        if (c == '\0')
            return jfail(r, "unterminated string");
        if (c == '"') {
            ++r->p;
            break;
        }
        if (c < 0x20)
            return jfail(r, "control character in string");
        if (c != '\\') {
            if (n + 1 >= cap)
                return jfail(r, "string too long");
            buf[n++] = (char)c;
            ++r->p;
            continue;
        }
        ++r->p;
        switch (*r->p) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (hex4(r->p + 1, &cp))
                return jfail(r, "bad \\u escape");
            r->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
                if (r->p[1] != '\\' || r->p[2] != 'u' || hex4(r->p + 3, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff)
                    return jfail(r, "unpaired surrogate in \\u escape");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                r->p += 6;
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                return jfail(r, "unpaired surrogate in \\u escape");
            }
            if (cp == 0)
                return jfail(r, "\\u0000 is not supported");
            break;
        default:
            return jfail(r, "bad escape in string");
        }
        ++r->p;
        if (put_utf8(buf, cap, &n, cp))
            return jfail(r, "string too long");
    }
    buf[n] = '\0';
    return 0;
}

/* A number by JSON's grammar (strtod alone would take "inf", "0x10", ".5"). */
static int jnumber(jreader *r, double *out)
{
    const char *p = r->p;
    char buf[64];
    size_t n;
    if (*p == '-')
        ++p;
    if (*p == '0')
        ++p;
    else if (isdigit((unsigned char)*p))
        while (isdigit((unsigned char)*p)) ++p;
    else
        return jfail(r, "bad number");
    if (*p == '.') {
        ++p;
        if (!isdigit((unsigned char)*p))
            return jfail(r, "bad number");
        while (isdigit((unsigned char)*p)) ++p;
    }
    if (*p == 'e' || *p == 'E') {
        ++p;
        if (*p == '+' || *p == '-')
            ++p;
        if (!isdigit((unsigned char)*p))
            return jfail(r, "bad number");
        while (isdigit((unsigned char)*p)) ++p;
    }
    n = (size_t)(p - r->p);
    if (n >= sizeof buf)
        return jfail(r, "number too long");
    memcpy(buf, r->p, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    if (!isfinite(*out))
        return jfail(r, "number out of double range");
    r->p = p;
    return 0;
}

static int jvalue(jreader *r, cli_jvalue *v)
{
    const char *p = r->p;
    if (*p == '"') {
        v->type = CLI_JSTR;
        return jstring(r, v->str, sizeof v->str);
    }
    if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
        v->type = CLI_JBOOL;
        v->num = *p == 't';
        r->p += *p == 't' ? 4 : 5;
        return 0;
    }
    if (strncmp(p, "null", 4) == 0) {
        v->type = CLI_JNULL;
        r->p += 4;
        return 0;
    }
    if (*p == '{' || *p == '[')
        return jfail(r, "nested objects and arrays are not supported");
    if (*p == '-' || isdigit((unsigned char)*p)) {
        v->type = CLI_JNUM;
        return jnumber(r, &v->num);
    }
    return jfail(r, *p ? "unexpected character" : "unexpected end of text");
}

int cli_json_parse_flat(const char *text, cli_jobject *obj, char *why, size_t len)
{
    jreader r;
    r.s = r.p = text;
    r.why = why;
    r.len = len;
    obj->n = 0;

    /* Tolerate a UTF-8 byte order mark, as some editors write one. */
    if (strncmp(r.p, "\xef\xbb\xbf", 3) == 0)
        r.p += 3;
    jskip(&r);
    if (*r.p != '{')
        return jfail(&r, "expected '{'");
    ++r.p;
    jskip(&r);
    if (*r.p == '}') {
        ++r.p;
    } else {
        for (;;) {
            cli_jvalue *v;
            if (obj->n >= CLI_JMAX)
                return jfail(&r, "too many keys");
            v = &obj->v[obj->n];
            memset(v, 0, sizeof *v);
            if (*r.p != '"')
                return jfail(&r, "expected a key string");
            if (jstring(&r, v->key, sizeof v->key))
                return -1;
            if (cli_json_get(obj, v->key)) {
                snprintf(why, len, "duplicate key \"%s\"", v->key);
                return -1;
            }
            jskip(&r);
            if (*r.p != ':')
                return jfail(&r, "expected ':'");
            ++r.p;
            jskip(&r);
            if (jvalue(&r, v))
                return -1;
            ++obj->n;
            jskip(&r);
            if (*r.p == ',') {
                ++r.p;
                jskip(&r);
                continue;
            }
            if (*r.p == '}') {
                ++r.p;
                break;
            }
            return jfail(&r, "expected ',' or '}'");
        }
    }
    jskip(&r);
    if (*r.p != '\0')
        return jfail(&r, "text after the object");
    return 0;
}

const cli_jvalue *cli_json_get(const cli_jobject *obj, const char *key)
{
    int i;
    for (i = 0; i < obj->n; ++i)
        if (strcmp(obj->v[i].key, key) == 0)
            return &obj->v[i];
    return NULL;
}

/* ---- small helpers ------------------------------------------------------------------- */

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cli_rate(double amount, double seconds)
{
    return seconds > 0 && amount > 0 ? amount / seconds : NAN;
}

int cli_host_threads(int threads)
{
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    return threads > 0 ? threads : 1;
#endif
}

const char *cli_dtype_name(pk_dtype dtype)
{
    switch (dtype) {
    case PK_DTYPE_F32: return "float32";
    case PK_DTYPE_F64: return "float64";
    case PK_DTYPE_C64: return "complex64";
    case PK_DTYPE_C128: return "complex128";
    case PK_DTYPE_I32: return "int32";
    default: return NULL;
    }
}

void cli_shape_text(const size_t *shape, int ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < ndim && used < len; ++k)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", k ? ", " : "", shape[k]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

/* ---- files --------------------------------------------------------------------------- */

char *cli_read_text(const char *path)
{
    enum { CAP = 1 << 20 };
    struct stat st;
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    int err;
    if (!f)
        return NULL;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        errno = EISDIR;
        return NULL;
    }
    buf = malloc(CAP + 1);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    n = fread(buf, 1, CAP + 1, f);
    /* A NUL byte would end the text early and hide what follows it: not a text file. */
    err = ferror(f) ? EIO : n > CAP ? EFBIG : memchr(buf, '\0', n) ? EILSEQ : 0;
    fclose(f);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int cli_mkdirs(const char *path)
{
    char buf[4096];
    char *p;
    struct stat st;
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof buf) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (p = buf + 1; *p; ++p) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    if (stat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int cli_join(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int cli_read_npy(const char *prog, const char *dir, const char *name, pk_dtype dtype, int ndim,
                 const size_t *want, const char *what, pk_array *arr)
{
    char path[4096], shape[160];
    if (cli_join(path, sizeof path, dir, name))
        return cli_usage_error(prog, "path too long: %s", dir);
    pk_status s = pk_npy_read(path, arr);
    if (s != PK_OK) return cli_lib_error("portkern", s);
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

int cli_grid_arrays(const char *prog, const char *dir, pk_array arr[7])
{
    char path[4096], shape[160], what[2][96];
    const size_t any[1] = {0};
    int rc;
    /* visibilities: uu sets n */
    if ((rc = cli_read_npy(prog, dir, "uu.npy", PK_DTYPE_F32, 1, any, "float32 ('<f4') [n]",
                           &arr[0])))
        return rc;
    const size_t n[1] = {arr[0].shape[0]};
    snprintf(what[0], sizeof what[0], "float32 ('<f4') [%zu] (uu.npy's length)", n[0]);
    snprintf(what[1], sizeof what[1], "complex64 ('<c8') [%zu] (uu.npy's length)", n[0]);
    if ((rc = cli_read_npy(prog, dir, "vv.npy", PK_DTYPE_F32, 1, n, what[0], &arr[1])) ||
        (rc = cli_read_npy(prog, dir, "ww.npy", PK_DTYPE_F32, 1, n, what[0], &arr[2])) ||
        (rc = cli_read_npy(prog, dir, "vis.npy", PK_DTYPE_C64, 1, n, what[1], &arr[3])) ||
        (rc = cli_read_npy(prog, dir, "weight.npy", PK_DTYPE_F32, 1, n, what[0], &arr[4])) ||
        (rc = cli_read_npy(prog, dir, "support.npy", PK_DTYPE_I32, 1, any,
                           "int32 ('<i4') [planes]", &arr[5])))
        return rc;
    const size_t planes = arr[5].shape[0];
    if (planes > 1000000)
        return cli_usage_error(prog, "%s/support.npy: %zu planes (at most 1000000)", dir, planes);
    /* kernels: 3-D = FULL, 1-D = COMPACT */
    if (cli_join(path, sizeof path, dir, "kernels.npy"))
        return cli_usage_error(prog, "path too long: %s", dir);
    pk_array *k = &arr[6];
    pk_status s = pk_npy_read(path, k);
    if (s != PK_OK) return cli_lib_error("portkern", s);
    if (k->dtype != PK_DTYPE_C64 || (k->ndim != 1 && k->ndim != 3) ||
        (k->ndim == 3 && (k->shape[0] != planes || k->shape[1] != k->shape[2] ||
                          k->shape[1] > INT_MAX))) {
        const char *d = pk_dtype_descr(k->dtype);
        cli_shape_text(k->shape, k->ndim, shape, sizeof shape);
        return cli_usage_error(prog, "%s: expected complex64 ('<c8') [%zu][half][half] (full) "
                               "or [count] (compact), got '%s' with shape %s", path, planes,
                               d ? d : "?", shape);
    }
    return 0;
}

int cli_split_list(const char *s, char items[][32], int max, int *n)
{
    *n = 0;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0 || len >= 32 || *n >= max) return -1;
        memcpy(items[*n], s, len);
        items[(*n)++][len] = '\0';
        if (!e) return 0;
        s = e + 1;
    }
}

int cli_json_open(const char *prog, const char *dir, const char *name, const char *kernel,
                  char *path, size_t path_len, FILE **pf, cli_json *j)
{
    if (cli_mkdirs(dir) != 0)
        return cli_usage_error(prog, "cannot create directory %s: %s", dir, strerror(errno));
    if (cli_join(path, path_len, dir, name)) return cli_usage_error(prog, "path too long: %s", dir);
    *pf = cli_temp_open(path);
    if (!*pf) return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    cj_init(j, *pf, 1);
    cj_open(j, NULL, '{');
    cj_str(j, "kernel", kernel);
    return 0;
}

int cli_json_close(const char *prog, const char *path, FILE *pf, cli_json *j)
{
    cj_close(j);
    if (cli_temp_commit(pf) != 0)
        return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* ---- files written whole: a temporary name, renamed when complete ----------------------- */
/* An output goes to PATH.tmp.PID first and is renamed over its target when complete, so that
 * a reader never sees half a file and a failure leaves the old file intact.  The target is
 * the path itself, or where a symbolic link points (the link stays a link); an existing
 * target keeps its permission bits, and one without write permission is refused.  The
 * temporaries in flight are removed on SIGINT, SIGTERM, SIGHUP and SIGXFSZ, and a later write of the
 * same target removes those that dead processes left. */
#define CLI_TEMPS 8
typedef struct cli_temp {
    char target[4096], tmp[4160];
    FILE *f;
    int keep_mode;
    mode_t mode;
} cli_temp;
static cli_temp cli_temps[CLI_TEMPS];
static volatile sig_atomic_t cli_temps_used[CLI_TEMPS];

static void cli_temp_signal(int sig)
{
    for (int i = 0; i < CLI_TEMPS; ++i)
        if (cli_temps_used[i]) unlink(cli_temps[i].tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The target of path (a symlink followed, relative to its directory); -1 with errno. */
static int cli_temp_target(const char *path, char *target, size_t len)
{
    char link[4096];
    struct stat st;
    int n = snprintf(target, len, "%s", path);
    if (n < 0 || (size_t)n >= len) goto toolong;
    for (int hops = 0; lstat(target, &st) == 0 && S_ISLNK(st.st_mode); ++hops) {
        if (hops == 8) {
            errno = ELOOP;
            return -1;
        }
        ssize_t k = readlink(target, link, sizeof link - 1);
        if (k < 0) return -1;
        link[k] = '\0';
        if (link[0] == '/') {
            n = snprintf(target, len, "%s", link);
        } else { /* relative to the link's directory */
            char *slash = strrchr(target, '/');
            const int dirlen = slash ? (int)(slash - target) + 1 : 0;
            char dir[4200];
            snprintf(dir, sizeof dir, "%.*s", dirlen, target);
            n = snprintf(target, len, "%s%s", dir, link);
        }
        if (n < 0 || (size_t)n >= len) goto toolong;
    }
    return 0;
toolong:
    errno = ENAMETOOLONG;
    return -1;
}

/* Remove NAME.tmp.PID files next to target whose process is gone. */
static void cli_temp_sweep(const char *target)
{
    const char *slash = strrchr(target, '/');
    char dir[4200], prefix[512];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - target) : 1, slash ? target : ".");
    if (slash == target) snprintf(dir, sizeof dir, "/");
    const int plen = snprintf(prefix, sizeof prefix, "%s.tmp.", slash ? slash + 1 : target);
    if (plen < 0 || (size_t)plen >= sizeof prefix) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0) continue;
        const long pid = strtol(e->d_name + plen, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to know */
        char stale[4700];
        snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
        unlink(stale);
    }
    closedir(d);
}

/* Reserve a slot for an output to path: its target, its temporary, its mode. */
static int cli_temp_begin(const char *path)
{
    static int handlers;
    struct stat st;
    if (!handlers) {
        handlers = 1;
        signal(SIGINT, cli_temp_signal);
        signal(SIGTERM, cli_temp_signal);
        signal(SIGHUP, cli_temp_signal);
        signal(SIGXFSZ, cli_temp_signal); /* a file-size limit hit while writing */
    }
    int i = 0;
    while (i < CLI_TEMPS && cli_temps_used[i]) ++i;
    if (i == CLI_TEMPS) {
        errno = EMFILE;
        return -1;
    }
    cli_temp *t = &cli_temps[i];
    memset(t, 0, sizeof *t);
    if (cli_temp_target(path, t->target, sizeof t->target) != 0) return -1;
    if (stat(t->target, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            errno = S_ISDIR(st.st_mode) ? EISDIR : EEXIST;
            return -1;
        }
        if (!(st.st_mode & 0222) || access(t->target, W_OK) != 0) { /* read-only: kept */
            errno = EACCES;
            return -1;
        }
        t->keep_mode = 1;
        t->mode = st.st_mode & 07777;
    }
    const size_t tl = strlen(t->target); /* < 4096: room for ".tmp." and a pid */
    memcpy(t->tmp, t->target, tl);
    snprintf(t->tmp + tl, sizeof t->tmp - tl, ".tmp.%ld", (long)getpid());
    cli_temp_sweep(t->target);
    cli_temps_used[i] = 1;
    return i;
}

/* Publish slot i's temporary (written, closed) unless err; then free the slot. */
static int cli_temp_end(int i, int err)
{
    cli_temp *t = &cli_temps[i];
    if (!err && t->keep_mode && chmod(t->tmp, t->mode) != 0) err = errno;
    if (!err && rename(t->tmp, t->target) != 0) err = errno;
    if (err) unlink(t->tmp);
    cli_temps_used[i] = 0;
    errno = err;
    return err ? -1 : 0;
}

FILE *cli_temp_open(const char *path)
{
    const int i = cli_temp_begin(path);
    if (i < 0) return NULL;
    if (!(cli_temps[i].f = fopen(cli_temps[i].tmp, "w"))) {
        cli_temp_end(i, errno);
        return NULL;
    }
    return cli_temps[i].f;
}

int cli_temp_commit(FILE *f)
{
    for (int i = 0; i < CLI_TEMPS; ++i) {
        if (!cli_temps_used[i] || cli_temps[i].f != f) continue;
        /* fsync before the rename: a delayed write error is seen before the old file goes */
        int err = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0 ? (errno ? errno : EIO)
                                                                        : 0;
        if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
        return cli_temp_end(i, err);
    }
    errno = EINVAL;
    return -1;
}

void cli_temp_abort(FILE *f)
{
    for (int i = 0; i < CLI_TEMPS; ++i)
        if (cli_temps_used[i] && cli_temps[i].f == f) {
            fclose(f);
            cli_temp_end(i, ECANCELED);
        }
}

int cli_opt_add(cli_opt *o, int n, const char *name, cli_type type, void *dest, int *seen,
                double min, double max)
{
    o[n].name = name;
    o[n].type = type;
    o[n].dest = dest;
    o[n].seen = seen;
    o[n].min = min;
    o[n].max = max;
    o[n + 1].name = NULL;
    return n + 1;
}

int cli_write_npy(const char *prog, const char *dir, const char *name, pk_dtype dtype, int ndim,
                  const size_t *shape, const void *data)
{
    char path[4096];
    if (cli_mkdirs(dir) != 0)
        return cli_usage_error(prog, "cannot create directory %s: %s", dir, strerror(errno));
    if (cli_join(path, sizeof path, dir, name))
        return cli_usage_error(prog, "path too long: %s", dir);
    FILE *f = cli_temp_open(path);
    if (!f) return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    pk_status s = pk_npy_fwrite(f, dtype, ndim, shape, data);
    if (s != PK_OK) {
        cli_temp_abort(f);
        return cli_lib_error("portkern", s); /* library errors: "portkern: ..." */
    }
    if (cli_temp_commit(f) != 0)
        return cli_usage_error(prog, "cannot write %s: %s", path, strerror(errno));
    return 0;
}
