/* npy.c - reading and writing NumPy .npy files.
 *
 * Read: versions 1.0, 2.0 and 3.0; little-endian numeric dtypes in C order only.  The header
 * dict is parsed by a small recursive-descent reader that stays inside the header bytes, so
 * no input can make it read out of bounds.  The file must end exactly where the data does,
 * as np.save writes it: trailing bytes are an error, not silently ignored.
 * Write: byte for byte what np.save (NumPy >= 1.24) writes for the same array.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct dtype_info {
    pk_dtype dtype;
    const char *descr;
    size_t size;  /* bytes per element */
    size_t width; /* bytes per scalar component (the unit of byte order) */
} dtype_info;

static const dtype_info dtypes[] = {
    {PK_DTYPE_F32, "<f4", 4, 4},  {PK_DTYPE_F64, "<f8", 8, 8}, {PK_DTYPE_C64, "<c8", 8, 4},
    {PK_DTYPE_C128, "<c16", 16, 8}, {PK_DTYPE_I32, "<i4", 4, 4}, {PK_DTYPE_I64, "<i8", 8, 8},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

static const dtype_info *dtype_find(pk_dtype dtype)
{
    for (size_t i = 0; i < N_DTYPES; ++i)
        if (dtypes[i].dtype == dtype) return &dtypes[i];
    return NULL;
}

size_t pk_dtype_size(pk_dtype dtype)
{
    const dtype_info *t = dtype_find(dtype);
    return t ? t->size : 0;
}

const char *pk_dtype_descr(pk_dtype dtype)
{
    const dtype_info *t = dtype_find(dtype);
    return t ? t->descr : NULL;
}

void pk_array_free(pk_array *a)
{
    if (a == NULL) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- byte order ------------------------------------------------------------------------ */
static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void swap_bytes(unsigned char *p, size_t bytes, size_t width)
{
    for (size_t i = 0; i + width <= bytes; i += width)
        for (size_t j = 0; j < width / 2; ++j) {
            unsigned char t = p[i + j];
            p[i + j] = p[i + width - 1 - j];
            p[i + width - 1 - j] = t;
        }
}

/* ---- shapes ---------------------------------------------------------------------------- */
/* "(3, 4)" as Python writes the tuple ("(5,)", "()"); always terminated. */
static void format_shape(char *buf, size_t len, int ndim, const size_t *shape)
{
    size_t used = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < ndim && used < len; ++d)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", d ? ", " : "", shape[d]);
    if (used < len) snprintf(buf + used, len - used, ndim == 1 ? ",)" : ")");
}

/* Bytes of an array.  Every non-zero extent must fit in the product, even when another
 * extent is 0, so that an absurd shape is refused whatever its other dimensions. */
static pk_status shape_bytes(const dtype_info *t, int ndim, const size_t *shape, size_t *count,
                             size_t *bytes)
{
    size_t prod = t->size;
    int empty = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] == 0) {
            empty = 1;
        } else if (shape[d] > SIZE_MAX / prod) {
            char s[256];
            format_shape(s, sizeof s, ndim, shape);
            return pk_fail(PK_EOVERFLOW, "shape %s of dtype '%s' overflows size_t bytes", s,
                           t->descr);
        } else {
            prod *= shape[d];
        }
    }
    *bytes = empty ? 0 : prod;
    *count = *bytes / t->size;
    return PK_OK;
}

/* ---- the header dict ------------------------------------------------------------------- */
typedef struct cursor {
    const unsigned char *p, *begin, *end;
    size_t base; /* file offset of begin, for messages */
} cursor;

static size_t cur_offset(const cursor *c) { return c->base + (size_t)(c->p - c->begin); }

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        ++c->p;
}

static int eat(cursor *c, unsigned char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        ++c->p;
        return 1;
    }
    return 0;
}

static pk_status syntax(const cursor *c, const char *what)
{
    if (c->p >= c->end)
        return pk_fail(PK_EFORMAT, "header: expected %s, found the end of the header", what);
    return pk_fail(PK_EFORMAT, "header: expected %s at byte %zu, found '%c'", what,
                   cur_offset(c), (*c->p >= 0x20 && *c->p < 0x7f) ? *c->p : '?');
}

static pk_status expect(cursor *c, unsigned char ch, const char *what)
{
    return eat(c, ch) ? PK_OK : syntax(c, what);
}

/* Copy of header text fit for a message: at most 40 bytes, unprintables as '?'. */
static void printable(char *dst, size_t len, const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && i < 40 && i + 1 < len; ++i)
        dst[i] = (char)((s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?');
    dst[i] = '\0';
}

/* A Python string literal without escapes (keys and dtype strings never need them). */
static pk_status parse_string(cursor *c, const unsigned char **s, size_t *n)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return syntax(c, "a quoted string");
    unsigned char quote = *c->p++;
    const unsigned char *start = c->p;
    while (c->p < c->end && *c->p != quote) ++c->p;
    if (c->p >= c->end)
        return pk_fail(PK_EFORMAT, "header: unterminated string at byte %zu",
                       c->base + (size_t)(start - 1 - c->begin));
    *s = start;
    *n = (size_t)(c->p - start);
    ++c->p;
    return PK_OK;
}

static int is_word_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

static int eat_word(cursor *c, const char *w)
{
    size_t n = strlen(w);
    skip_ws(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
    if (c->p + n < c->end && is_word_char(c->p[n])) return 0;
    c->p += n;
    return 1;
}

static pk_status parse_descr(cursor *c, const dtype_info **t)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == '[')
        return pk_fail(PK_EDTYPE, "dtype: structured dtypes are not supported");
    const unsigned char *s;
    size_t n;
    PK_TRY(parse_string(c, &s, &n));
    for (size_t i = 0; i < N_DTYPES; ++i)
        if (strlen(dtypes[i].descr) == n && memcmp(dtypes[i].descr, s, n) == 0) {
            *t = &dtypes[i];
            return PK_OK;
        }
    char d[48];
    printable(d, sizeof d, s, n);
    if (n > 0 && s[0] == '>')
        return pk_fail(PK_EDTYPE, "dtype '%s': big-endian data is not supported", d);
    return pk_fail(PK_EDTYPE, "dtype '%s' is not supported (supported: <f4 <f8 <c8 <c16 <i4 <i8)",
                   d);
}

static pk_status parse_dim(cursor *c, size_t *out)
{
    skip_ws(c);
    const unsigned char *start = c->p;
    if (c->p < c->end && *c->p == '-') {
        ++c->p;
        if (c->p < c->end && *c->p >= '0' && *c->p <= '9')
            return pk_fail(PK_EFORMAT, "shape: negative dimension at byte %zu",
                           c->base + (size_t)(start - c->begin));
        return syntax(c, "a dimension");
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return syntax(c, "a dimension");
    size_t v = 0;
    int overflow = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; ++c->p) {
        size_t digit = (size_t)(*c->p - '0');
        if (v > (SIZE_MAX - digit) / 10)
            overflow = 1;
        else
            v = v * 10 + digit;
    }
    if (overflow) {
        char d[48];
        printable(d, sizeof d, start, (size_t)(c->p - start));
        return pk_fail(PK_EOVERFLOW, "shape: dimension %s does not fit in size_t", d);
    }
    if (c->p < c->end && *c->p == 'L') ++c->p; /* Python 2 wrote longs as "3L" */
    *out = v;
    return PK_OK;
}

static pk_status parse_shape(cursor *c, int *ndim, size_t *shape)
{
    PK_TRY(expect(c, '(', "'(' starting the shape tuple"));
    int n = 0;
    if (!eat(c, ')')) {
        for (;;) {
            if (n == PK_NPY_MAX_DIMS)
                return pk_fail(PK_EFORMAT, "shape: more than %d dimensions", PK_NPY_MAX_DIMS);
            PK_TRY(parse_dim(c, &shape[n++]));
            if (eat(c, ')')) {
                /* "(5)" is the integer 5 in Python, not a tuple (numpy refuses it too) */
                if (n == 1) return pk_fail(PK_EFORMAT, "shape: (%zu) is not a tuple", shape[0]);
                break;
            }
            PK_TRY(expect(c, ',', "',' or ')' in the shape tuple"));
            if (eat(c, ')')) break;
        }
    }
    *ndim = n;
    return PK_OK;
}

typedef struct npy_header {
    const dtype_info *type;
    int ndim;
    size_t shape[PK_NPY_MAX_DIMS];
    size_t count, bytes;
    size_t offset; /* of the data in the image */
} npy_header;

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, N_KEYS };
static const char *const key_names[N_KEYS] = {"descr", "fortran_order", "shape"};

static pk_status parse_dict(cursor *c, npy_header *h)
{
    int seen[N_KEYS] = {0, 0, 0};
    PK_TRY(expect(c, '{', "'{' starting the header dict"));
    while (!eat(c, '}')) {
        const unsigned char *k;
        size_t kn;
        PK_TRY(parse_string(c, &k, &kn));
        int key = 0;
        while (key < N_KEYS && !(strlen(key_names[key]) == kn && !memcmp(key_names[key], k, kn)))
            ++key;
        if (key == N_KEYS) {
            char s[48];
            printable(s, sizeof s, k, kn);
            return pk_fail(PK_EFORMAT, "header: unknown key '%s'", s);
        }
        if (seen[key]) return pk_fail(PK_EFORMAT, "header: duplicate key '%s'", key_names[key]);
        seen[key] = 1;
        PK_TRY(expect(c, ':', "':' after a key"));
        if (key == KEY_DESCR) {
            PK_TRY(parse_descr(c, &h->type));
        } else if (key == KEY_FORTRAN) {
            if (eat_word(c, "True"))
                return pk_fail(PK_EFORMAT, "Fortran order not supported");
            if (!eat_word(c, "False")) return syntax(c, "True or False for fortran_order");
        } else {
            PK_TRY(parse_shape(c, &h->ndim, h->shape));
        }
        if (eat(c, '}')) break;
        PK_TRY(expect(c, ',', "',' or '}' after a value"));
    }
    skip_ws(c); /* np.save pads with spaces and a final newline */
    if (c->p < c->end) return syntax(c, "only padding after the header dict");
    for (int key = 0; key < N_KEYS; ++key)
        if (!seen[key]) return pk_fail(PK_EFORMAT, "header: missing key '%s'", key_names[key]);
    return PK_OK;
}

/* The magic string and version in the first 8 bytes of `len`; the prefix's length (10 or 12
 * bytes, the header length included) in *prefix. */
static pk_status npy_check_magic(const unsigned char *buf, size_t len, size_t *prefix)
{
    if (len < 8 || memcmp(buf, npy_magic, sizeof npy_magic) != 0)
        return pk_fail(PK_EFORMAT, "not a .npy file (bad magic)");
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return pk_fail(PK_EFORMAT, "unsupported .npy version %u.%u (supported: 1.0, 2.0, 3.0)",
                       major, minor);
    *prefix = major == 1 ? 10 : 12;
    return PK_OK;
}

/* The header length the prefix declares (buf holds the whole prefix). */
static size_t npy_header_len(const unsigned char *buf, size_t prefix)
{
    size_t hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    if (prefix > 10) hlen |= (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    return hlen;
}

/* Prefix and header (buf holds at least both): the type, shape, data offset and bytes. */
static pk_status npy_decode_header(const unsigned char *buf, size_t prefix, size_t hlen,
                                   npy_header *h)
{
    memset(h, 0, sizeof *h);
    cursor c = {buf + prefix, buf + prefix, buf + prefix + hlen, prefix};
    PK_TRY(parse_dict(&c, h));
    PK_TRY(shape_bytes(h->type, h->ndim, h->shape, &h->count, &h->bytes));
    h->offset = prefix + hlen;
    return PK_OK;
}

/* The data after the header must be exactly what the header declares. */
static pk_status npy_check_data_len(const npy_header *h, size_t avail)
{
    if (avail < h->bytes)
        return pk_fail(PK_EFORMAT, "truncated: expected %zu bytes of data, found %zu", h->bytes,
                       avail);
    if (avail > h->bytes)
        return pk_fail(PK_EFORMAT, "%zu bytes of trailing garbage after the %zu bytes of data",
                       avail - h->bytes, h->bytes);
    return PK_OK;
}

/* Check the prefix and header of an image of `len` bytes and where its data lies. */
static pk_status npy_decode(const unsigned char *buf, size_t len, npy_header *h)
{
    size_t prefix = 10;
    memset(h, 0, sizeof *h);
    PK_TRY(npy_check_magic(buf, len, &prefix));
    if (len < prefix)
        return pk_fail(PK_EFORMAT, "truncated: the file ends inside the header length field");
    const size_t hlen = npy_header_len(buf, prefix);
    if (hlen > len - prefix)
        return pk_fail(PK_EFORMAT, "header length %zu exceeds the file (%zu bytes after the "
                       "%zu-byte prefix)", hlen, len - prefix, prefix);
    PK_TRY(npy_decode_header(buf, prefix, hlen, h));
    return npy_check_data_len(h, len - h->offset);
}

static void fill_array(pk_array *a, const npy_header *h, void *data)
{
    if (!host_is_little_endian()) swap_bytes(data, h->bytes, h->type->width);
    a->dtype = h->type->dtype;
    a->ndim = h->ndim;
    memcpy(a->shape, h->shape, sizeof a->shape);
    a->count = h->count;
    a->data = data;
}

pk_status pk_npy_parse(const void *buf, size_t len, pk_array *a)
{
    pk_clear_error();
    PK_CHECK_NULL(a);
    memset(a, 0, sizeof *a);
    PK_CHECK(buf != NULL || len == 0, PK_ENULL, "buf: must not be NULL when len = %zu", len);
    npy_header h;
    PK_TRY(npy_decode(buf, len, &h));
    /* never malloc(0): a successful read always yields a non-NULL data pointer */
    void *data = malloc(h.bytes ? h.bytes : 1);
    PK_CHECK(data != NULL, PK_ENOMEM, "cannot allocate %zu bytes for the array data", h.bytes);
    memcpy(data, (const unsigned char *)buf + h.offset, h.bytes);
    fill_array(a, &h, data);
    return PK_OK;
}

/* A path fit for a message: itself, or "..." and its last 200 bytes when longer (the detail
 * holds 1024 bytes, and the cause must not be cut off by an absurd path). */
static const char *shown_path(const char *path, char *buf, size_t len)
{
    size_t n = strlen(path);
    if (n <= 240 || len < 204) return path;
    snprintf(buf, len, "...%s", path + n - 200);
    return buf;
}

/* Exactly n bytes from f; 1 when they were all there. */
static int read_exact(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n; }

/* A header longer than this is refused before it is read: numpy's own headers are a few
 * hundred bytes (version 2.0 allows 4 GiB, which no array needs). */
#define NPY_MAX_HEADER ((size_t)1 << 20)

/* Read the prefix, then the header it declares, then exactly the data the header declares:
 * a stream that is not a .npy file is refused after 8 bytes, and nothing is allocated
 * beyond what the header promises (for a regular file, checked against its size first). */
static pk_status npy_read_stream(FILE *f, const char *path, pk_array *a)
{
    unsigned char pre[12];
    size_t prefix = 10, got = fread(pre, 1, 8, f);
    if (ferror(f)) return pk_fail(PK_EIO, "%s: read error: %s", path, strerror(errno));
    if (npy_check_magic(pre, got, &prefix) != PK_OK) {
        char detail[128];
        snprintf(detail, sizeof detail, "%s", pk_last_error());
        return pk_fail(PK_EFORMAT, "%s: %s", path, detail);
    }
    if (!read_exact(f, pre + 8, prefix - 8))
        return pk_fail(PK_EFORMAT, "%s: truncated: the file ends inside the header length field",
                       path);
    const size_t hlen = npy_header_len(pre, prefix);
    if (hlen > NPY_MAX_HEADER)
        return pk_fail(PK_EFORMAT, "%s: header length %zu: more than the %zu bytes a header may "
                       "have", path, hlen, NPY_MAX_HEADER);
    struct stat st;
    const int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    if (regular && (uintmax_t)st.st_size - prefix < hlen)
        return pk_fail(PK_EFORMAT, "%s: header length %zu exceeds the file (%ju bytes after the "
                       "%zu-byte prefix)", path, hlen, (uintmax_t)st.st_size - prefix, prefix);
    unsigned char *hdr = malloc(prefix + hlen);
    if (!hdr) return pk_fail(PK_ENOMEM, "%s: cannot allocate %zu bytes for the header", path, hlen);
    memcpy(hdr, pre, prefix);
    npy_header h;
    pk_status s = PK_OK;
    if (!read_exact(f, hdr + prefix, hlen))
        s = ferror(f) ? pk_fail(PK_EIO, "%s: read error: %s", path, strerror(errno))
                      : pk_fail(PK_EFORMAT, "%s: truncated: the file ends inside the header",
                                path);
    if (s == PK_OK && (s = npy_decode_header(hdr, prefix, hlen, &h)) != PK_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", pk_last_error());
        s = pk_fail(s, "%s: %s", path, detail);
    }
    free(hdr);
    if (s != PK_OK) return s;
    if (regular && (s = npy_check_data_len(&h, (size_t)st.st_size - h.offset)) != PK_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", pk_last_error());
        return pk_fail(s, "%s: %s", path, detail);
    }
    /* never malloc(0): a successful read always yields a non-NULL data pointer */
    unsigned char *data = malloc(h.bytes ? h.bytes : 1);
    if (!data)
        return pk_fail(PK_ENOMEM, "%s: cannot allocate the %zu bytes of data its header declares",
                       path, h.bytes);
    got = fread(data, 1, h.bytes, f);
    unsigned char extra;
    if (ferror(f))
        s = pk_fail(PK_EIO, "%s: read error: %s", path, strerror(errno));
    else if (got < h.bytes)
        s = pk_fail(PK_EFORMAT, "%s: truncated: expected %zu bytes of data, found %zu", path,
                    h.bytes, got);
    else if (fread(&extra, 1, 1, f) == 1)
        s = pk_fail(PK_EFORMAT, "%s: trailing garbage after the %zu bytes of data", path, h.bytes);
    if (s != PK_OK) {
        free(data);
        return s;
    }
    fill_array(a, &h, data);
    return PK_OK;
}

pk_status pk_npy_read(const char *path, pk_array *a)
{
    pk_clear_error();
    PK_CHECK_NULL(a);
    memset(a, 0, sizeof *a);
    PK_CHECK_NULL(path);
    char shown[256];
    FILE *f = fopen(path, "rb");
    path = shown_path(path, shown, sizeof shown); /* from here on, for messages only */
    if (f == NULL) return pk_fail(PK_EIO, "%s: cannot open: %s", path, strerror(errno));
    pk_status s = npy_read_stream(f, path, a);
    fclose(f);
    return s;
}

/* ---- writing --------------------------------------------------------------------------- */
/* np.save's header: sorted keys, repr values, room for the first axis to grow to 21 digits,
 * then spaces and '\n' so that the data starts at a multiple of 64 bytes.  With at most
 * PK_NPY_MAX_DIMS dimensions it is far below 64 KiB, so version 1.0 always holds it (numpy
 * picks 1.0 for it too). */
static size_t build_header(char *buf, size_t len, const dtype_info *t, int ndim,
                           const size_t *shape)
{
    char s[256];
    format_shape(s, sizeof s, ndim, shape);
    int n = snprintf(buf + 10, len - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     t->descr, s);
    size_t used = 10 + (size_t)n;
    if (ndim > 0) {
        int digits = snprintf(s, sizeof s, "%zu", shape[0]);
        for (int i = digits; i < 21; ++i) buf[used++] = ' ';
    }
    size_t pad = 64 - (used + 1) % 64;
    memset(buf + used, ' ', pad);
    used += pad;
    buf[used++] = '\n';
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((used - 10) & 0xff);
    buf[9] = (char)((used - 10) >> 8);
    return used;
}

static int write_le(FILE *f, const unsigned char *p, size_t bytes, size_t width)
{
    if (bytes == 0) return 1; /* data may be NULL for an empty array */
    if (host_is_little_endian()) return fwrite(p, 1, bytes, f) == bytes;
    unsigned char tmp[65536]; /* a multiple of every width */
    while (bytes > 0) {
        size_t k = bytes < sizeof tmp ? bytes : sizeof tmp;
        memcpy(tmp, p, k);
        swap_bytes(tmp, k, width);
        if (fwrite(tmp, 1, k, f) != k) return 0;
        p += k;
        bytes -= k;
    }
    return 1;
}

/* The checks of both writers; *t and *bytes for the write. */
static pk_status npy_write_check(pk_dtype dtype, int ndim, const size_t *shape,
                                 const void *data, const dtype_info **t, size_t *bytes)
{
    *t = dtype_find(dtype);
    PK_CHECK(*t != NULL, PK_EINVAL, "dtype: unknown value %d", (int)dtype);
    PK_CHECK(ndim >= 0 && ndim <= PK_NPY_MAX_DIMS, PK_EINVAL, "ndim: must be 0..%d, got %d",
             PK_NPY_MAX_DIMS, ndim);
    PK_CHECK(shape != NULL || ndim == 0, PK_ENULL, "shape: must not be NULL when ndim = %d",
             ndim);
    size_t count = 0;
    PK_TRY(shape_bytes(*t, ndim, shape, &count, bytes));
    PK_CHECK(data != NULL || *bytes == 0, PK_ENULL, "data: must not be NULL for %zu elements",
             count);
    return PK_OK;
}

/* Header and data to f; 1 when every byte was written (f flushed). */
static int npy_emit(FILE *f, const dtype_info *t, int ndim, const size_t *shape,
                    const void *data, size_t bytes)
{
    char header[1024];
    const size_t hbytes = build_header(header, sizeof header, t, ndim, shape);
    return fwrite(header, 1, hbytes, f) == hbytes && write_le(f, data, bytes, t->width) &&
           fflush(f) == 0;
}

pk_status pk_npy_fwrite(FILE *f, pk_dtype dtype, int ndim, const size_t *shape, const void *data)
{
    pk_clear_error();
    PK_CHECK_NULL(f);
    const dtype_info *t;
    size_t bytes;
    PK_TRY(npy_write_check(dtype, ndim, shape, data, &t, &bytes));
    PK_CHECK(npy_emit(f, t, ndim, shape, data, bytes), PK_EIO, "write failed: %s",
             strerror(errno));
    return PK_OK;
}

pk_status pk_file_begin(const char *path, pk_file_tmp *t)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->path = path;
    t->shown = shown_path(path, t->shown_buf, sizeof t->shown_buf);
    /* Renaming over a device or a FIFO (/dev/null) would replace it with a plain file. */
    struct stat st;
    PK_CHECK(stat(path, &st) != 0 || S_ISREG(st.st_mode), PK_EIO,
             "%s: exists and is not a regular file", t->shown);
    /* O_EXCL with a counter keeps concurrent writers (threads, processes) off each other's
     * temporaries. */
    size_t tlen = strlen(path) + 48;
    PK_CHECK((t->tmp = malloc(tlen)) != NULL, PK_ENOMEM, "cannot allocate a temporary file name");
    for (unsigned k = 0; k < 1000 && t->fd < 0; ++k) {
        snprintf(t->tmp, tlen, "%s.%ld-%u.tmp", path, (long)getpid(), k);
        t->fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (t->fd < 0 && errno != EEXIST) break;
    }
    if (t->fd < 0) {
        int err = errno;
        char shown_tmp[256];
        pk_status s = pk_fail(PK_EIO, "%s: cannot create temporary file '%s': %s", t->shown,
                              shown_path(t->tmp, shown_tmp, sizeof shown_tmp), strerror(err));
        free(t->tmp);
        t->tmp = NULL;
        return s;
    }
    return PK_OK;
}

pk_status pk_file_commit(pk_file_tmp *t, int ok, int err)
{
    char shown_tmp[256];
    pk_status s = PK_OK;
    if (t->fd >= 0) {
        /* fsync before the rename, so that a delayed write error is seen before the old file
         * is replaced */
        if (ok && fsync(t->fd) != 0) {
            ok = 0;
            err = errno;
        }
        if (close(t->fd) != 0 && ok) {
            ok = 0;
            err = errno;
        }
        t->fd = -1;
    }
    if (!ok) {
        unlink(t->tmp);
        s = pk_fail(PK_EIO, "%s: write failed: %s", t->shown, strerror(err));
    } else if (rename(t->tmp, t->path) != 0) {
        err = errno;
        s = pk_fail(PK_EIO, "%s: cannot rename '%s' into place: %s", t->shown,
                    shown_path(t->tmp, shown_tmp, sizeof shown_tmp), strerror(err));
        unlink(t->tmp);
    }
    free(t->tmp);
    t->tmp = NULL;
    return s;
}

pk_status pk_npy_write(const char *path, pk_dtype dtype, int ndim, const size_t *shape,
                       const void *data)
{
    pk_clear_error();
    PK_CHECK_NULL(path);
    PK_CHECK(path[0] != '\0', PK_EINVAL, "path: must not be empty");
    const dtype_info *t;
    size_t bytes = 0;
    PK_TRY(npy_write_check(dtype, ndim, shape, data, &t, &bytes));
    /* A temporary file beside the target renamed into place: the target is either the old
     * file or the complete new one. */
    pk_file_tmp ft;
    PK_TRY(pk_file_begin(path, &ft));
    const int fd2 = dup(ft.fd); /* the stream closes its own descriptor; commit fsyncs ours */
    FILE *f = fd2 >= 0 ? fdopen(fd2, "wb") : NULL;
    int ok = f != NULL && npy_emit(f, t, ndim, shape, data, bytes);
    int err = errno;
    if (f != NULL) {
        if (fclose(f) != 0 && ok) {
            ok = 0;
            err = errno;
        }
    } else if (fd2 >= 0) {
        close(fd2);
    }
    return pk_file_commit(&ft, ok, err);
}
