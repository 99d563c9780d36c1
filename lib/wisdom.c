/* wisdom.c - the wisdom file format: its reader and writer, in memory (lib/portkern.h,
 * "Wisdom"; the context's store and the files are lib/wisdom_store.c).
 *
 *     {"portkern_wisdom": 1, "entries": [ {"kernel": "diffusion3d", ...}, ... ]}
 *
 * The reader accepts exactly this shape: a top-level object, an "entries" array of flat
 * objects, every other value a string or a number.  It is strict where JSON is (string
 * escapes, surrogate pairs, the number grammar, no trailing commas or garbage) and bounded
 * where JSON is not: the file size, the number of entries, every string's length and the
 * nesting.  It depends on nothing but the error helpers and the backend names, so the
 * fuzzer (fuzz/fuzz_wisdom.c) builds it alone. */
#include "internal.h"

#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the entry's rules ------------------------------------------------------------------ */
/* A text field of an entry: NUL-terminated within its array, no control characters. */
static const char *text_problem(const char *s, size_t cap, int required)
{
    const char *end = memchr(s, '\0', cap);
    if (!end) return "not terminated within its field";
    if (required && end == s) return "must not be empty";
    for (const char *p = s; p < end; ++p)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return "holds a control character";
    return NULL;
}

const char *pk_wisdom_entry_problem(const pk_wisdom_entry *e)
{
    static _Thread_local char why[96];
    const struct {
        const char *name;
        const char *s;
        size_t cap;
        int required;
    } texts[] = {
        {"kernel", e->kernel, sizeof e->kernel, 1},
        {"device_name", e->device_name, sizeof e->device_name, 1},
        {"driver", e->driver, sizeof e->driver, 0},
        {"version", e->version, sizeof e->version, 1},
        {"size_class", e->size_class, sizeof e->size_class, 1},
        {"variant", e->variant, sizeof e->variant, 1},
        {"params", e->params, sizeof e->params, 0},
        {"runners_up", e->runners_up, sizeof e->runners_up, 0},
        {"date", e->date, sizeof e->date, 1},
        {"tuning", e->tuning, sizeof e->tuning, 0},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
        const char *p = text_problem(texts[i].s, texts[i].cap, texts[i].required);
        if (p) {
            snprintf(why, sizeof why, "%s: %s", texts[i].name, p);
            return why;
        }
    }
    if ((int)e->backend <= (int)PK_BACKEND_AUTO || (int)e->backend >= (int)PK_BACKEND_COUNT)
        return "backend: must be serial, openmp, opencl or cuda";
    if (e->device < 0) return "device: must be >= 0";
    if (e->compute_units < 0) return "compute_units: must be >= 0";
    if (!(e->size_bytes > 0) || !isfinite(e->size_bytes))
        return "size_bytes: must be > 0 and finite";
    if (!(e->seconds >= 0) || !isfinite(e->seconds)) return "seconds: must be >= 0 and finite";
    return NULL;
}

/* ---- the list ---------------------------------------------------------------------------- */
static int same_key(const pk_wisdom_entry *a, const pk_wisdom_entry *b)
{
    return !strcmp(a->kernel, b->kernel) && !strcmp(a->device_name, b->device_name) &&
           !strcmp(a->driver, b->driver) && a->compute_units == b->compute_units &&
           !strcmp(a->size_class, b->size_class);
}

pk_status pk_wisdom_list_put(pk_wisdom_list *list, const pk_wisdom_entry *e)
{
    for (int i = 0; i < list->n; ++i)
        if (same_key(&list->e[i], e)) {
            list->e[i] = *e;
            return PK_OK;
        }
    PK_CHECK(list->n < PK_WISDOM_MAX_ENTRIES, PK_ESIZE, "wisdom: more than %d entries",
             PK_WISDOM_MAX_ENTRIES);
    if (list->n == list->cap) {
        int cap = list->cap ? 2 * list->cap : 16;
        if (cap > PK_WISDOM_MAX_ENTRIES) cap = PK_WISDOM_MAX_ENTRIES;
        pk_wisdom_entry *grown = realloc(list->e, (size_t)cap * sizeof *grown);
        PK_CHECK(grown != NULL, PK_ENOMEM, "wisdom: out of host memory");
        list->e = grown;
        list->cap = cap;
    }
    list->e[list->n++] = *e;
    return PK_OK;
}

void pk_wisdom_list_free(pk_wisdom_list *list)
{
    free(list->e);
    memset(list, 0, sizeof *list);
}

/* ---- the reader -------------------------------------------------------------------------- */
typedef struct reader {
    const char *buf;
    size_t len, pos;
    char *why;
    size_t why_len;
    int failed;
    int out_of_memory;
} reader;

/* Record the first failure with its byte offset and line; returns 0 for `return fail(...)`. */
static int fail(reader *r, const char *fmt, ...) PK_PRINTF(2, 3);
static int fail(reader *r, const char *fmt, ...)
{
    if (r->failed) return 0;
    r->failed = 1;
    size_t line = 1;
    for (size_t i = 0; i < r->pos && i < r->len; ++i) line += r->buf[i] == '\n';
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(r->why, r->why_len, "byte %zu (line %zu): %s", r->pos, line, what);
    return 0;
}

static void skip_space(reader *r)
{
    while (r->pos < r->len && (r->buf[r->pos] == ' ' || r->buf[r->pos] == '\t' ||
                               r->buf[r->pos] == '\n' || r->buf[r->pos] == '\r'))
        ++r->pos;
}

/* The next byte after white space, or -1 at the end. */
static int peek(reader *r)
{
    skip_space(r);
    return r->pos < r->len ? (unsigned char)r->buf[r->pos] : -1;
}

static const char *shown(int c)
{
    static _Thread_local char s[16];
    if (c < 0) return "the end of the file";
    if (c >= 0x21 && c < 0x7f)
        snprintf(s, sizeof s, "'%c'", c);
    else
        snprintf(s, sizeof s, "byte 0x%02x", (unsigned)c);
    return s;
}

static int expect(reader *r, char c)
{
    int got = peek(r);
    if (got != (unsigned char)c) return fail(r, "expected '%c', found %s", c, shown(got));
    ++r->pos;
    return 1;
}

static int hex4(reader *r, unsigned *out)
{
    if (r->len - r->pos < 4) return fail(r, "\\u needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
        char c = r->buf[r->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(r, "\\u needs four hex digits");
    }
    r->pos += 4;
    *out = v;
    return 1;
}

/* A string into out[cap] (terminated).  Escapes are decoded (\u as UTF-8, surrogates paired);
 * \u0000 and raw control characters are errors; longer than cap - 1 bytes is an error. */
static int read_string(reader *r, char *out, size_t cap, const char *what)
{
    if (!expect(r, '"')) return 0;
    size_t n = 0;
    for (;;) {
        if (r->pos >= r->len) return fail(r, "%s: unterminated string", what);
        unsigned char c = (unsigned char)r->buf[r->pos++];
        char enc[4];
        size_t k = 0;
        if (c == '"') break;
        if (c < 0x20) {
            --r->pos;
            return fail(r, "%s: control character 0x%02x in a string", what, c);
        }
        if (c != '\\') {
            enc[k++] = (char)c; /* bytes >= 0x80 pass as they are (device names) */
        } else {
            if (r->pos >= r->len) return fail(r, "%s: unterminated string", what);
            char e = r->buf[r->pos++];
            switch (e) {
            case '"': enc[k++] = '"'; break;
            case '\\': enc[k++] = '\\'; break;
            case '/': enc[k++] = '/'; break;
            case 'b': enc[k++] = '\b'; break;
            case 'f': enc[k++] = '\f'; break;
            case 'n': enc[k++] = '\n'; break;
            case 'r': enc[k++] = '\r'; break;
            case 't': enc[k++] = '\t'; break;
            case 'u': {
                unsigned u;
                if (!hex4(r, &u)) return 0;
                if (u >= 0xdc00 && u <= 0xdfff) return fail(r, "%s: lone low surrogate", what);
                if (u >= 0xd800 && u <= 0xdbff) {
                    unsigned lo;
                    if (r->len - r->pos < 2 || r->buf[r->pos] != '\\' || r->buf[r->pos + 1] != 'u')
                        return fail(r, "%s: high surrogate without its low half", what);
                    r->pos += 2;
                    if (!hex4(r, &lo)) return 0;
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return fail(r, "%s: high surrogate without its low half", what);
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (u == 0) return fail(r, "%s: \\u0000 in a string", what);
                if (u < 0x80) {
                    enc[k++] = (char)u;
                } else if (u < 0x800) {
                    enc[k++] = (char)(0xc0 | (u >> 6));
                    enc[k++] = (char)(0x80 | (u & 0x3f));
                } else if (u < 0x10000) {
                    enc[k++] = (char)(0xe0 | (u >> 12));
                    enc[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
                    enc[k++] = (char)(0x80 | (u & 0x3f));
                } else {
                    enc[k++] = (char)(0xf0 | (u >> 18));
                    enc[k++] = (char)(0x80 | ((u >> 12) & 0x3f));
                    enc[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
                    enc[k++] = (char)(0x80 | (u & 0x3f));
                }
                break;
            }
            default:
                --r->pos;
                return fail(r, "%s: unknown escape after '\\': %s", what, shown((unsigned char)e));
            }
        }
        if (n + k >= cap) return fail(r, "%s: string longer than %zu bytes", what, cap - 1);
        memcpy(out + n, enc, k);
        n += k;
    }
    out[n] = '\0';
    return 1;
}

/* A number by JSON's grammar, finite; converted whatever the C locale's decimal point. */
static int read_number(reader *r, double *out, const char *what)
{
    skip_space(r);
    const size_t start = r->pos;
    const char *b = r->buf;
    size_t p = r->pos;
#define DIGIT(i) ((i) < r->len && b[i] >= '0' && b[i] <= '9')
    if (p < r->len && b[p] == '-') ++p;
    if (!DIGIT(p)) return fail(r, "%s: expected a number, found %s", what,
                               shown(p < r->len ? (unsigned char)b[p] : -1));
    if (b[p] == '0')
        ++p;
    else
        while (DIGIT(p)) ++p;
    if (p < r->len && b[p] == '.') {
        ++p;
        if (!DIGIT(p)) return fail(r, "%s: a digit must follow the decimal point", what);
        while (DIGIT(p)) ++p;
    }
    if (p < r->len && (b[p] == 'e' || b[p] == 'E')) {
        ++p;
        if (p < r->len && (b[p] == '+' || b[p] == '-')) ++p;
        if (!DIGIT(p)) return fail(r, "%s: a digit must follow the exponent", what);
        while (DIGIT(p)) ++p;
    }
#undef DIGIT
    char tok[64];
    if (p - start >= sizeof tok) return fail(r, "%s: number longer than %zu characters", what,
                                             sizeof tok - 1);
    memcpy(tok, b + start, p - start);
    tok[p - start] = '\0';
    /* strtod reads the locale's decimal point: put it in place of JSON's '.' */
    const char *dp = localeconv()->decimal_point;
    char *dot = strchr(tok, '.');
    if (dot && dp && dp[0] && dp[0] != '.' && !dp[1]) *dot = dp[0];
    char *end;
    double v = strtod(tok, &end);
    if (*end != '\0' || !isfinite(v)) return fail(r, "%s: number out of range", what);
    r->pos = p;
    *out = v;
    return 1;
}

static int read_int(reader *r, int *out, int lo, const char *what)
{
    double v;
    if (!read_number(r, &v, what)) return 0;
    if (v != floor(v) || v < lo || v > 2147483647.0)
        return fail(r, "%s: must be a whole number >= %d", what, lo);
    *out = (int)v;
    return 1;
}

/* The value of an unknown key: a string or a number, skipped. */
static int skip_scalar(reader *r, const char *key)
{
    int c = peek(r);
    if (c == '"') {
        char scratch[1024];
        return read_string(r, scratch, sizeof scratch, key);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        double v;
        return read_number(r, &v, key);
    }
    return fail(r, "%s: an unknown key's value must be a string or a number, found %s", key,
                shown(c));
}

/* Where each key of an entry goes. */
enum field_kind { F_TEXT, F_BACKEND, F_INT, F_DOUBLE };
typedef struct field {
    const char *key;
    enum field_kind kind;
    size_t offset, cap; /* F_TEXT: the array; others: the member */
    int required;
} field;
#define TEXT(k, req) {#k, F_TEXT, offsetof(pk_wisdom_entry, k), sizeof(((pk_wisdom_entry *)0)->k), req}
static const field fields[] = {
    TEXT(kernel, 1),
    {"backend", F_BACKEND, offsetof(pk_wisdom_entry, backend), 0, 1},
    {"device", F_INT, offsetof(pk_wisdom_entry, device), 0, 1},
    TEXT(device_name, 1),
    TEXT(driver, 1),
    {"compute_units", F_INT, offsetof(pk_wisdom_entry, compute_units), 0, 1},
    TEXT(version, 1),
    TEXT(size_class, 1),
    {"size_bytes", F_DOUBLE, offsetof(pk_wisdom_entry, size_bytes), 0, 1},
    TEXT(variant, 1),
    TEXT(params, 0),
    {"seconds", F_DOUBLE, offsetof(pk_wisdom_entry, seconds), 0, 1},
    TEXT(runners_up, 0),
    TEXT(date, 1),
    TEXT(tuning, 0), /* last and optional: files of before it load, older readers skip it */
};
#undef TEXT
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

static int read_field(reader *r, const field *f, pk_wisdom_entry *e, const char *what)
{
    char *at = (char *)e + f->offset;
    switch (f->kind) {
    case F_TEXT:
        if (peek(r) != '"') return fail(r, "%s: must be a string", what);
        return read_string(r, at, f->cap, what);
    case F_BACKEND: {
        char name[16];
        if (peek(r) != '"') return fail(r, "%s: must be a string", what);
        if (!read_string(r, name, sizeof name, what)) return 0;
        for (int b = PK_BACKEND_AUTO + 1; b < PK_BACKEND_COUNT; ++b)
            if (!strcmp(name, pk_backend_name((pk_backend_id)b))) {
                e->backend = (pk_backend_id)b;
                return 1;
            }
        return fail(r, "%s: '%s' is not serial, openmp, opencl or cuda", what, name);
    }
    case F_INT:
        return read_int(r, (int *)(void *)at, 0, what);
    case F_DOUBLE:
        return read_number(r, (double *)(void *)at, what);
    }
    return fail(r, "%s: internal error", what);
}

static int read_entry(reader *r, int index, pk_wisdom_entry *e)
{
    memset(e, 0, sizeof *e);
    if (peek(r) != '{') return fail(r, "entry %d: must be an object, found %s", index, shown(peek(r)));
    ++r->pos;
    int seen[N_FIELDS] = {0};
    if (peek(r) == '}') {
        ++r->pos;
    } else {
        for (;;) {
            char key[32], what[64];
            if (peek(r) != '"') return fail(r, "entry %d: expected a key, found %s", index, shown(peek(r)));
            if (!read_string(r, key, sizeof key, "key")) return 0;
            if (!expect(r, ':')) return 0;
            snprintf(what, sizeof what, "entry %d: %s", index, key);
            int k = 0;
            while (k < N_FIELDS && strcmp(fields[k].key, key)) ++k;
            if (k == N_FIELDS) {
                if (!skip_scalar(r, what)) return 0;
            } else {
                if (seen[k]) return fail(r, "%s: key given twice", what);
                seen[k] = 1;
                if (!read_field(r, &fields[k], e, what)) return 0;
            }
            int c = peek(r);
            if (c == ',') {
                ++r->pos;
                continue;
            }
            if (c == '}') {
                ++r->pos;
                break;
            }
            return fail(r, "entry %d: expected ',' or '}', found %s", index, shown(c));
        }
    }
    for (int k = 0; k < N_FIELDS; ++k)
        if (fields[k].required && !seen[k])
            return fail(r, "entry %d: '%s' is missing", index, fields[k].key);
    const char *problem = pk_wisdom_entry_problem(e);
    if (problem) {
        --r->pos; /* point at the entry's closing brace */
        fail(r, "entry %d: %s", index, problem);
        return 0;
    }
    return 1;
}

static int read_entries(reader *r, pk_wisdom_list *out)
{
    if (peek(r) != '[') return fail(r, "entries: must be an array, found %s", shown(peek(r)));
    ++r->pos;
    if (peek(r) == ']') {
        ++r->pos;
        return 1;
    }
    for (int index = 0;; ++index) {
        pk_wisdom_entry e;
        if (index >= PK_WISDOM_MAX_ENTRIES)
            return fail(r, "more than %d entries", PK_WISDOM_MAX_ENTRIES);
        if (!read_entry(r, index, &e)) return 0;
        /* a key twice in one file: the later wins, as pk_wisdom_add would have it */
        if (pk_wisdom_list_put(out, &e) != PK_OK) {
            r->out_of_memory = 1; /* the entry count is checked above: only ENOMEM is left */
            return fail(r, "%s", pk_last_error());
        }
        int c = peek(r);
        if (c == ',') {
            ++r->pos;
            continue;
        }
        if (c == ']') {
            ++r->pos;
            return 1;
        }
        return fail(r, "entries: expected ',' or ']', found %s", shown(c));
    }
}

static int read_top(reader *r, pk_wisdom_list *out)
{
    if (r->len > PK_WISDOM_MAX_FILE_BYTES)
        return fail(r, "larger than %d bytes", PK_WISDOM_MAX_FILE_BYTES);
    if (peek(r) != '{')
        return fail(r, "not a wisdom file: expected '{', found %s", shown(peek(r)));
    ++r->pos;
    int have_format = 0, have_entries = 0;
    if (peek(r) == '}') {
        ++r->pos;
    } else {
        for (;;) {
            char key[32];
            if (peek(r) != '"') return fail(r, "expected a key, found %s", shown(peek(r)));
            if (!read_string(r, key, sizeof key, "key")) return 0;
            if (!expect(r, ':')) return 0;
            if (!strcmp(key, "portkern_wisdom")) {
                int format = 0;
                if (have_format) return fail(r, "portkern_wisdom: key given twice");
                if (!read_int(r, &format, 0, "portkern_wisdom")) return 0;
                if (format != PK_WISDOM_FORMAT)
                    return fail(r, "format version %d (this library reads %d)", format,
                                PK_WISDOM_FORMAT);
                have_format = 1;
            } else if (!strcmp(key, "entries")) {
                if (have_entries) return fail(r, "entries: key given twice");
                if (!read_entries(r, out)) return 0;
                have_entries = 1;
            } else if (!skip_scalar(r, key)) {
                return 0;
            }
            int c = peek(r);
            if (c == ',') {
                ++r->pos;
                continue;
            }
            if (c == '}') {
                ++r->pos;
                break;
            }
            return fail(r, "expected ',' or '}', found %s", shown(c));
        }
    }
    if (!have_format) return fail(r, "not a wisdom file: no \"portkern_wisdom\" key");
    if (!have_entries) return fail(r, "no \"entries\" key");
    if (peek(r) != -1) return fail(r, "%s after the object", shown(peek(r)));
    return 1;
}

pk_status pk_wisdom_parse(const char *buf, size_t len, pk_wisdom_list *out, char *why,
                          size_t why_len)
{
    char scratch[8];
    if (!why || why_len == 0) {
        why = scratch;
        why_len = sizeof scratch;
    }
    why[0] = '\0';
    memset(out, 0, sizeof *out);
    PK_CHECK(buf != NULL || len == 0, PK_ENULL, "buf: must not be NULL");
    reader r = {buf ? buf : "", len, 0, why, why_len, 0, 0};
    if (len == 0) {
        snprintf(why, why_len, "empty file");
        return pk_fail(PK_EFORMAT, "wisdom: empty file");
    }
    if (!read_top(&r, out)) {
        pk_wisdom_list_free(out);
        return pk_fail(r.out_of_memory ? PK_ENOMEM : PK_EFORMAT, "wisdom: %s", why);
    }
    return PK_OK;
}

/* ---- the writer -------------------------------------------------------------------------- */
typedef struct writer {
    char *buf;
    size_t len, cap;
    int oom;
} writer;

static void put(writer *w, const char *s, size_t n)
{
    if (w->oom) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (w->len + n + 1 > cap) cap *= 2;
        char *grown = realloc(w->buf, cap);
        if (!grown) {
            w->oom = 1;
            return;
        }
        w->buf = grown;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(writer *w, const char *s) { put(w, s, strlen(s)); }

static void put_string(writer *w, const char *s)
{
    put(w, "\"", 1);
    for (; *s; ++s) {
        const unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(w, esc, 2);
        } else if (c < 0x20) { /* never in a valid entry; kept readable all the same */
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(w, esc, 6);
        } else {
            put(w, (const char *)&c, 1);
        }
    }
    put(w, "\"", 1);
}

/* %.17g (exact round trip) with JSON's '.' whatever the locale's decimal point. */
static void put_double(writer *w, double v)
{
    char s[48];
    snprintf(s, sizeof s, "%.17g", v);
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && strcmp(dp, ".")) {
        char *at = strstr(s, dp);
        if (at) {
            *at = '.';
            memmove(at + 1, at + strlen(dp), strlen(at + strlen(dp)) + 1);
        }
    }
    puts_(w, s);
}

static void put_int(writer *w, int v)
{
    char s[16];
    snprintf(s, sizeof s, "%d", v);
    puts_(w, s);
}

pk_status pk_wisdom_format(const pk_wisdom_list *list, char **text, size_t *len)
{
    writer w = {NULL, 0, 0, 0};
    char head[64];
    snprintf(head, sizeof head, "{\"portkern_wisdom\": %d, \"entries\": [", PK_WISDOM_FORMAT);
    puts_(&w, head);
    for (int i = 0; i < list->n; ++i) {
        const pk_wisdom_entry *e = &list->e[i];
        puts_(&w, i ? ",\n  {" : "\n  {");
        for (int k = 0; k < N_FIELDS; ++k) {
            const field *f = &fields[k];
            const char *at = (const char *)e + f->offset;
            if (k) puts_(&w, ", ");
            put_string(&w, f->key);
            puts_(&w, ": ");
            switch (f->kind) {
            case F_TEXT: put_string(&w, at); break;
            case F_BACKEND: put_string(&w, pk_backend_name(e->backend)); break;
            case F_INT: put_int(&w, *(const int *)(const void *)at); break;
            case F_DOUBLE: put_double(&w, *(const double *)(const void *)at); break;
            }
        }
        puts_(&w, "}");
    }
    puts_(&w, list->n ? "\n]}\n" : "]}\n");
    if (w.oom) {
        free(w.buf);
        return pk_fail(PK_ENOMEM, "wisdom: out of host memory");
    }
    *text = w.buf;
    *len = w.len;
    return PK_OK;
}
