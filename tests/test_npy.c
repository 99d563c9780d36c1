/* test_npy.c - .npy reading and writing: round trips, headers as numpy writes them, and one
 * malformed image per rejection path, each with its own status code. */
#include "portkern.h"
#include "tap.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];

static const char *tpath(const char *name)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void make_dir(void)
{
    const char *top = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/tmp-npy-XXXXXX", top ? top : ".");
    if (mkdtemp(dir) == NULL) {
        snprintf(dir, sizeof dir, "/tmp/pk-test-npy-XXXXXX");
        if (mkdtemp(dir) == NULL) tap_skip_all("cannot create a temporary directory");
    }
}

/* Entries of the test directory whose names contain `part`. */
static int count_entries(const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, part) && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ++n;
    if (d) closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) remove(tpath(e->d_name));
    if (d) closedir(d);
    rmdir(dir);
}

static int read_file(const char *path, unsigned char *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    *len = fread(buf, 1, cap, f);
    fclose(f);
    return 1;
}

static void write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, len, f);
        fclose(f);
    }
}

/* An image of version `major`.0 around `dict`, padded as np.save pads, then `nbytes` of data. */
static size_t image(unsigned char *out, int major, const char *dict, const void *data,
                    size_t nbytes)
{
    size_t prefix = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = prefix + dl + 1;
    total += (64 - total % 64) % 64;
    size_t hlen = total - prefix;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    for (size_t i = 0; i < prefix - 8; ++i) out[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(out + prefix, dict, dl);
    memset(out + prefix + dl, ' ', hlen - dl - 1);
    out[total - 1] = '\n';
    if (nbytes) memcpy(out + total, data, nbytes);
    return total + nbytes;
}

static int array_is_zeroed(const pk_array *a)
{
    static const pk_array zero;
    return a->data == NULL && a->ndim == 0 && a->count == 0 && a->dtype == 0 &&
           memcmp(a->shape, zero.shape, sizeof a->shape) == 0;
}

/* Parse `len` bytes and expect `want`; on failure the array must come back zeroed and the
 * detail must contain `detail` (when given). */
static void expect_parse(const void *buf, size_t len, pk_status want, const char *detail,
                         const char *name)
{
    pk_array a;
    memset(&a, 0x5a, sizeof a); /* garbage the parser must clear */
    pk_status s = pk_npy_parse(buf, len, &a);
    int good = s == want;
    if (want != PK_OK) good = good && array_is_zeroed(&a);
    if (detail) good = good && strstr(pk_last_error(), detail) != NULL;
    ok(good, "%s: %s (%s)", name, pk_status_name(s), pk_last_error());
    if (s == PK_OK) pk_array_free(&a);
}

static void test_dtypes(void)
{
    static const struct { pk_dtype t; size_t size; const char *descr; } want[] = {
        {PK_DTYPE_F32, 4, "<f4"},  {PK_DTYPE_F64, 8, "<f8"}, {PK_DTYPE_C64, 8, "<c8"},
        {PK_DTYPE_C128, 16, "<c16"}, {PK_DTYPE_I32, 4, "<i4"}, {PK_DTYPE_I64, 8, "<i8"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
        ok(pk_dtype_size(want[i].t) == want[i].size && pk_dtype_descr(want[i].t) &&
               strcmp(pk_dtype_descr(want[i].t), want[i].descr) == 0,
           "dtype %s: %zu bytes", want[i].descr, want[i].size);
    ok(pk_dtype_size((pk_dtype)0) == 0 && pk_dtype_descr((pk_dtype)99) == NULL,
       "unknown dtype: size 0, descr NULL");
}

static void test_round_trips(void)
{
    static const pk_dtype types[] = {PK_DTYPE_F32, PK_DTYPE_F64, PK_DTYPE_C64,
                                     PK_DTYPE_C128, PK_DTYPE_I32, PK_DTYPE_I64};
    static const struct { int ndim; size_t shape[PK_NPY_MAX_DIMS]; } shapes[] = {
        {0, {0}}, {1, {5}}, {1, {0}}, {3, {2, 3, 4}}, {8, {1, 2, 1, 2, 1, 2, 1, 3}},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
            size_t count = 1, esize = pk_dtype_size(types[t]);
            for (int d = 0; d < shapes[k].ndim; ++d) count *= shapes[k].shape[d];
            unsigned char data[48 * 16];
            for (size_t i = 0; i < count * esize; ++i) data[i] = (unsigned char)(i * 37 + t);
            pk_status ws = pk_npy_write(tpath("rt.npy"), types[t], shapes[k].ndim,
                                        shapes[k].shape, data);
            pk_array a;
            pk_status rs = pk_npy_read(tpath("rt.npy"), &a);
            int good = ws == PK_OK && rs == PK_OK && a.dtype == types[t] &&
                       a.ndim == shapes[k].ndim && a.count == count && a.data != NULL &&
                       memcmp(a.shape, shapes[k].shape, sizeof a.shape) == 0 &&
                       memcmp(a.data, data, count * esize) == 0;
            ok(good, "round trip %s, %d-d, %zu elements", pk_dtype_descr(types[t]),
               shapes[k].ndim, count);
            pk_array_free(&a);
            ok(array_is_zeroed(&a), "pk_array_free zeroes the array");
        }
    pk_array_free(NULL);
    ok(1, "pk_array_free(NULL) is a no-op");
    ok(count_entries(".tmp") == 0, "no temporary files left behind");
}

/* np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)), byte for byte (NumPy >= 1.24; older
 * versions write the same bytes here). */
static const char numpy_f4_2x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          \n"
    "\x00\x00\x00\x00" "\x00\x00\x80\x3f" "\x00\x00\x00\x40"
    "\x00\x00\x40\x40" "\x00\x00\x80\x40" "\x00\x00\xa0\x40";
/* np.save(f, np.float64(-2.5)) as a 0-d array: no growth padding for an empty shape */
static const char numpy_f8_scalar[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (), }"
    "                                                              \n"
    "\x00\x00\x00\x00\x00\x00\x04\xc0";
/* numpy <= 1.13 aligned the data to 16 bytes: np.arange(5, dtype='<i8') */
static const char numpy_old_i8_5[] =
    "\x93NUMPY\x01\x00" "F\x00{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"
    "            \n"
    "\x00\x00\x00\x00\x00\x00\x00\x00" "\x01\x00\x00\x00\x00\x00\x00\x00"
    "\x02\x00\x00\x00\x00\x00\x00\x00" "\x03\x00\x00\x00\x00\x00\x00\x00"
    "\xff\xff\xff\xff\xff\xff\xff\xff";
/* np.save(f, np.zeros((3, 4), '<c8'), version=(2, 0)): 4-byte header length */
static const char numpy_v2_c8_header[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<c8', 'fortran_order': False, 'shape': (3, 4), }"
    "                                                        \n";

static void test_numpy_headers(void)
{
    pk_array a;
    ok(sizeof numpy_f4_2x3 - 1 == 128 + 24 && sizeof numpy_f8_scalar - 1 == 128 + 8 &&
           sizeof numpy_old_i8_5 - 1 == 80 + 40 && sizeof numpy_v2_c8_header - 1 == 128,
       "embedded numpy images have their exact lengths");

    pk_status s = pk_npy_parse(numpy_f4_2x3, sizeof numpy_f4_2x3 - 1, &a);
    int good = s == PK_OK && a.dtype == PK_DTYPE_F32 && a.ndim == 2 && a.shape[0] == 2 &&
               a.shape[1] == 3 && a.count == 6;
    for (int i = 0; good && i < 6; ++i) good = ((float *)a.data)[i] == (float)i;
    ok(good, "numpy '<f4' (2, 3) parses with values 0..5: %s", pk_last_error());
    pk_array_free(&a);

    s = pk_npy_parse(numpy_f8_scalar, sizeof numpy_f8_scalar - 1, &a);
    ok(s == PK_OK && a.dtype == PK_DTYPE_F64 && a.ndim == 0 && a.count == 1 &&
           *(double *)a.data == -2.5,
       "numpy 0-d '<f8' parses as one element -2.5: %s", pk_last_error());
    pk_array_free(&a);

    s = pk_npy_parse(numpy_old_i8_5, sizeof numpy_old_i8_5 - 1, &a);
    ok(s == PK_OK && a.dtype == PK_DTYPE_I64 && a.ndim == 1 && a.shape[0] == 5 &&
           ((int64_t *)a.data)[3] == 3 && ((int64_t *)a.data)[4] == -1,
       "old numpy 16-byte-aligned '<i8' (5,) parses: %s", pk_last_error());
    pk_array_free(&a);

    unsigned char buf[512];
    memcpy(buf, numpy_v2_c8_header, 128);
    memset(buf + 128, 0, 96);
    s = pk_npy_parse(buf, 128 + 96, &a);
    ok(s == PK_OK && a.dtype == PK_DTYPE_C64 && a.ndim == 2 && a.count == 12,
       "numpy version 2.0 '<c8' (3, 4) parses: %s", pk_last_error());
    pk_array_free(&a);

    /* the writer produces exactly what numpy writes */
    float v[6] = {0, 1, 2, 3, 4, 5};
    size_t shape[2] = {2, 3}, len = 0;
    s = pk_npy_write(tpath("np.npy"), PK_DTYPE_F32, 2, shape, v);
    ok(s == PK_OK && read_file(tpath("np.npy"), buf, sizeof buf, &len) &&
           len == sizeof numpy_f4_2x3 - 1 && memcmp(buf, numpy_f4_2x3, len) == 0,
       "pk_npy_write output is byte-identical to np.save");
    double x = -2.5;
    s = pk_npy_write(tpath("np0.npy"), PK_DTYPE_F64, 0, NULL, &x);
    ok(s == PK_OK && read_file(tpath("np0.npy"), buf, sizeof buf, &len) &&
           len == sizeof numpy_f8_scalar - 1 && memcmp(buf, numpy_f8_scalar, len) == 0,
       "0-d pk_npy_write output is byte-identical to np.save");
    /* a 15-digit first axis leaves 6 growth spaces; the data still starts at a multiple of
     * 64 and an empty array needs no data pointer */
    size_t empty[2] = {123456789012345ULL, 0};
    ok(pk_npy_write(tpath("empty.npy"), PK_DTYPE_F32, 2, empty, NULL) == PK_OK &&
           read_file(tpath("empty.npy"), buf, sizeof buf, &len) && len % 64 == 0 &&
           buf[len - 1] == '\n' && pk_npy_parse(buf, len, &a) == PK_OK && a.count == 0 &&
           a.shape[0] == empty[0],
       "empty array with a long first axis: header padded to 64, ends in '\\n', reads back");
    pk_array_free(&a);
}

/* Headers numpy and others write that are valid Python but not np.save's exact spelling. */
static void test_header_variants(void)
{
    static const struct { int major; const char *dict; int ndim; size_t d0, d1; } v[] = {
        {1, "{'shape': (3, 4), 'fortran_order': False, 'descr': '<i4'}", 2, 3, 4},
        {1, "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(3,4,)}", 2, 3, 4},
        {1, "{ 'descr' : '<i4' ,\n 'fortran_order' : False ,\t'shape' : ( 12 , ) , }", 1, 12, 0},
        {1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3L, 4L), }", 2, 3, 4},
        {3, "{'descr': '<i4', 'fortran_order': False, 'shape': (12,), }", 1, 12, 0},
        {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 6), }", 3, 2, 1},
    };
    int32_t data[12];
    for (int i = 0; i < 12; ++i) data[i] = i;
    unsigned char buf[512];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) {
        size_t len = image(buf, v[i].major, v[i].dict, data, sizeof data);
        pk_array a;
        pk_status s = pk_npy_parse(buf, len, &a);
        ok(s == PK_OK && a.ndim == v[i].ndim && a.shape[0] == v[i].d0 &&
               (a.ndim < 2 || a.shape[1] == v[i].d1) && a.count == 12 &&
               memcmp(a.data, data, sizeof data) == 0,
           "header variant %zu (version %d.0) parses: %s", i, v[i].major, pk_last_error());
        pk_array_free(&a);
    }
}

static void test_malformed(void)
{
    unsigned char buf[1024], data[64] = {0};
    size_t n;
    const char *f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
#define MAL(dict, bytes, st, detail, name)                                                    \
    do {                                                                                      \
        n = image(buf, 1, dict, data, bytes);                                                 \
        expect_parse(buf, n, st, detail, name);                                               \
    } while (0)

    expect_parse(NULL, 0, PK_EFORMAT, "bad magic", "empty buffer");
    expect_parse("\x93NUMP", 5, PK_EFORMAT, "bad magic", "5 bytes");
    n = image(buf, 1, f4, data, 24);
    buf[1] = 'n';
    expect_parse(buf, n, PK_EFORMAT, "bad magic", "bad magic");
    n = image(buf, 1, f4, data, 24);
    buf[6] = 4;
    expect_parse(buf, n, PK_EFORMAT, "version 4.0", "version 4.0");
    buf[6] = 1;
    buf[7] = 1;
    expect_parse(buf, n, PK_EFORMAT, "version 1.1", "version 1.1");
    buf[7] = 0;
    expect_parse(buf, 9, PK_EFORMAT, "header length field", "ends in the length field");
    n = image(buf, 1, f4, data, 24);
    buf[9] = 0xff;
    expect_parse(buf, n, PK_EFORMAT, "header length 65398 exceeds", "header length too big");
    n = image(buf, 2, f4, data, 24);
    buf[11] = 0x80;
    expect_parse(buf, n, PK_EFORMAT, "exceeds the file", "v2 header length 2 GiB");

    MAL("{'descr': '<f4', 'fortran_order': False}", 0, PK_EFORMAT, "missing key 'shape'",
        "missing shape");
    MAL("{'fortran_order': False, 'shape': ()}", 0, PK_EFORMAT, "missing key 'descr'",
        "missing descr");
    MAL("{'descr': '<f4', 'shape': ()}", 0, PK_EFORMAT, "missing key 'fortran_order'",
        "missing fortran_order");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", 0, PK_EFORMAT,
        "unknown key 'x'", "unknown key");
    MAL("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 0,
        PK_EFORMAT, "duplicate key 'descr'", "duplicate key");
    MAL("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, PK_EDTYPE, "'>f4'",
        "big-endian dtype");
    MAL("{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }", 24, PK_EDTYPE, "'|f4'",
        "'|' byte order on a float");
    MAL("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }", 12, PK_EDTYPE, "'<u2'",
        "unsupported dtype");
    MAL("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, PK_EDTYPE,
        "structured", "structured dtype");
    MAL("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, PK_EFORMAT,
        "Fortran order not supported", "Fortran order");
    MAL("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", 24, PK_EFORMAT,
        "True or False", "fortran_order not a bool");
    MAL("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", 24, PK_EFORMAT,
        "True or False", "fortran_order misspelt");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4,
        PK_EFORMAT, "more than 8 dimensions", "9 dimensions");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 0, PK_EFORMAT,
        "negative dimension", "negative dimension");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0,
        PK_EOVERFLOW, "does not fit", "dimension beyond size_t");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0,
        PK_EOVERFLOW, NULL, "shape product overflows");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
        PK_EOVERFLOW, NULL, "byte count overflows");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", 0,
        PK_EOVERFLOW, NULL, "absurd shape refused even with a zero extent");
    MAL(f4, 20, PK_EFORMAT, "truncated: expected 24 bytes of data, found 20", "truncated data");
    MAL(f4, 28, PK_EFORMAT, "4 bytes of trailing garbage", "trailing garbage");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", 20, PK_EFORMAT,
        "not a tuple", "(5) is not a tuple");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24, PK_EFORMAT,
        "'(' starting the shape", "shape as a list");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24, PK_EFORMAT,
        "',' or ')'", "shape without comma");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 24, PK_EFORMAT,
        "a dimension", "shape with a name");
    MAL("{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, PK_EFORMAT, NULL,
        "unbalanced quote");
    MAL("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, PK_EFORMAT,
        "':' after a key", "missing colon");
    MAL("{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", 24, PK_EFORMAT,
        "',' or '}'", "missing comma");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk", 24, PK_EFORMAT,
        "only padding", "text after the dict");
    MAL("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24, PK_EFORMAT,
        "'{'", "no braces");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", 24, PK_EFORMAT,
        "end of the header", "unclosed dict");
    MAL("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ,}", 24, PK_EFORMAT, NULL,
        "double comma");
#undef MAL

    pk_array a;
    ok(pk_npy_parse(numpy_f4_2x3, 10, NULL) == PK_ENULL, "pk_npy_parse(..., NULL): PK_ENULL");
    ok(pk_npy_parse(NULL, 10, &a) == PK_ENULL && array_is_zeroed(&a),
       "pk_npy_parse(NULL, 10, a): PK_ENULL");
}

/* Every truncation and many single-byte corruptions of a valid image: no crash, no leak,
 * and a zeroed array whenever the parse fails (run under ASan/valgrind to see the rest). */
static void test_mutations(void)
{
    unsigned char buf[sizeof numpy_f4_2x3];
    size_t len = sizeof numpy_f4_2x3 - 1;
    int bad = 0, parsed = 0;
    for (size_t cut = 0; cut < len; ++cut) {
        pk_array a;
        if (pk_npy_parse(numpy_f4_2x3, cut, &a) == PK_OK) ++bad;
        if (!array_is_zeroed(&a)) ++bad;
    }
    ok(bad == 0, "all %zu truncations rejected with a zeroed array", len);
    static const unsigned char vals[] = {0, ' ', '\'', '"', '(', ')', ',', ':', '{', '}', '-',
                                         '9', 'L', 0x7f, 0xff};
    bad = 0;
    for (size_t pos = 0; pos < 128; ++pos)
        for (size_t k = 0; k < sizeof vals; ++k) {
            memcpy(buf, numpy_f4_2x3, len);
            buf[pos] = vals[k];
            pk_array a;
            pk_status s = pk_npy_parse(buf, len, &a);
            if (s == PK_OK) {
                ++parsed;
                if (a.count * pk_dtype_size(a.dtype) != 24 || a.data == NULL) ++bad;
                pk_array_free(&a);
            } else if (!array_is_zeroed(&a) || pk_last_error()[0] == '\0') {
                ++bad;
            }
        }
    ok(bad == 0, "%zu single-byte corruptions: consistent results (%d parsed)",
       (size_t)128 * sizeof vals, parsed);
}

static void test_files(void)
{
    pk_array a;
    pk_status s = pk_npy_read(tpath("does-not-exist.npy"), &a);
    ok(s == PK_EIO && strstr(pk_last_error(), "does-not-exist.npy") &&
           strstr(pk_last_error(), "No such file") && array_is_zeroed(&a),
       "missing file: PK_EIO naming the path (%s)", pk_last_error());
    s = pk_npy_read(dir, &a);
    ok(s == PK_EIO && array_is_zeroed(&a), "reading a directory: PK_EIO (%s)", pk_last_error());
    ok(pk_npy_read(NULL, &a) == PK_ENULL && pk_npy_read("x", NULL) == PK_ENULL,
       "NULL path or array: PK_ENULL");

    write_file(tpath("short.npy"), numpy_f4_2x3, sizeof numpy_f4_2x3 - 5);
    s = pk_npy_read(tpath("short.npy"), &a);
    ok(s == PK_EFORMAT && strstr(pk_last_error(), "short.npy: truncated") &&
           array_is_zeroed(&a),
       "truncated file: PK_EFORMAT with the path (%s)", pk_last_error());

    write_file(tpath("ok.npy"), numpy_f4_2x3, sizeof numpy_f4_2x3 - 1);
    s = pk_npy_read(tpath("ok.npy"), &a);
    ok(s == PK_OK && a.count == 6 && ((float *)a.data)[5] == 5.0f, "pk_npy_read of np.save's "
       "bytes");
    pk_array_free(&a);

    /* a pipe has no size: the reader grows its buffer */
    int fds[2];
    if (pipe(fds) == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            ssize_t w = write(fds[1], numpy_f4_2x3, sizeof numpy_f4_2x3 - 1);
            _exit(w == (ssize_t)(sizeof numpy_f4_2x3 - 1) ? 0 : 1);
        }
        close(fds[1]);
        char p[64];
        snprintf(p, sizeof p, "/dev/fd/%d", fds[0]);
        s = pk_npy_read(p, &a);
        ok(s == PK_OK && a.count == 6 && ((float *)a.data)[4] == 4.0f,
           "reading from a pipe: %s", pk_last_error());
        pk_array_free(&a);
        close(fds[0]);
        waitpid(pid, NULL, 0);
    } else {
        tap_skip("pipe() failed", "reading from a pipe");
    }

    /* The header is checked before the data is read: an endless stream that is not a .npy
     * file is refused at once (it used to be read until memory ran out), and a stream is
     * read exactly as far as its header says (trailing bytes are still refused). */
    s = pk_npy_read("/dev/zero", &a);
    ok(s == PK_EFORMAT && strstr(pk_last_error(), "not a .npy file") && array_is_zeroed(&a),
       "/dev/zero: PK_EFORMAT 'not a .npy file' at once (%s)", pk_last_error());
    if (pipe(fds) == 0) {
        pid_t pid = fork();
        if (pid == 0) { /* the whole array, then bytes that never end */
            close(fds[0]);
            ssize_t w = write(fds[1], numpy_f4_2x3, sizeof numpy_f4_2x3 - 1);
            static const char more[4096];
            while (w > 0) w = write(fds[1], more, sizeof more);
            _exit(0);
        }
        close(fds[1]);
        char p[64];
        snprintf(p, sizeof p, "/dev/fd/%d", fds[0]);
        s = pk_npy_read(p, &a);
        ok(s == PK_EFORMAT && strstr(pk_last_error(), "trailing garbage") && array_is_zeroed(&a),
           "a pipe with endless bytes after the data: trailing garbage, found without reading "
           "them all (%s)", pk_last_error());
        close(fds[0]); /* the writer gets EPIPE and stops */
        waitpid(pid, NULL, 0);
    } else {
        tap_skip("pipe() failed", "reading from an endless pipe");
    }
    /* a header declaring 2^40 floats in a 200-byte file: truncated, without allocating them */
    unsigned char huge[256];
    memset(huge, 0, sizeof huge); /* the 72 data bytes written are zeros */
    memcpy(huge, numpy_f4_2x3, 128);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
    memset(huge + 10, ' ', 118);
    memcpy(huge + 10, dict, strlen(dict));
    huge[127] = '\n';
    huge[8] = 118;
    huge[9] = 0;
    write_file(tpath("tera.npy"), huge, 200);
    s = pk_npy_read(tpath("tera.npy"), &a);
    ok(s == PK_EFORMAT && strstr(pk_last_error(), "truncated") && array_is_zeroed(&a),
       "a header declaring 4 TiB in a 200-byte file: PK_EFORMAT truncated (%s)", pk_last_error());
}

static void test_write_errors(void)
{
    float v[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    ok(pk_npy_write(NULL, PK_DTYPE_F32, 2, shape, v) == PK_ENULL, "write: NULL path");
    ok(pk_npy_write(tpath("e.npy"), (pk_dtype)42, 2, shape, v) == PK_EINVAL, "write: bad dtype");
    ok(pk_npy_write(tpath("e.npy"), PK_DTYPE_F32, 9, shape, v) == PK_EINVAL &&
           pk_npy_write(tpath("e.npy"), PK_DTYPE_F32, -1, shape, v) == PK_EINVAL,
       "write: ndim outside 0..8");
    ok(pk_npy_write(tpath("e.npy"), PK_DTYPE_F32, 2, NULL, v) == PK_ENULL, "write: NULL shape");
    ok(pk_npy_write(tpath("e.npy"), PK_DTYPE_F32, 2, shape, NULL) == PK_ENULL,
       "write: NULL data");
    size_t huge[2] = {SIZE_MAX / 2, 3};
    ok(pk_npy_write(tpath("e.npy"), PK_DTYPE_F32, 2, huge, v) == PK_EOVERFLOW,
       "write: byte count overflow");
    ok(count_entries("e.npy") == 0, "no file written for invalid arguments");

    pk_status s = pk_npy_write(tpath("no-such-dir/x.npy"), PK_DTYPE_F32, 2, shape, v);
    ok(s == PK_EIO && strstr(pk_last_error(), "no-such-dir/x.npy"),
       "write into a missing directory: PK_EIO (%s)", pk_last_error());
    s = pk_npy_write(dir, PK_DTYPE_F32, 2, shape, v);
    ok(s == PK_EIO, "write over a directory: PK_EIO (%s)", pk_last_error());
    if (mkfifo(tpath("fifo"), 0600) == 0) {
        struct stat st;
        s = pk_npy_write(tpath("fifo"), PK_DTYPE_F32, 2, shape, v);
        ok(s == PK_EIO && stat(tpath("fifo"), &st) == 0 && S_ISFIFO(st.st_mode),
           "write over a FIFO refused, FIFO intact (%s)", pk_last_error());
        remove(tpath("fifo"));
    } else {
        tap_skip("mkfifo failed", "write over a FIFO");
    }

    /* A write that fails half way (file size limit) leaves the old file as it was. */
    ok(pk_npy_write(tpath("keep.npy"), PK_DTYPE_F32, 2, shape, v) == PK_OK, "write keep.npy");
    struct rlimit old;
    if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
        static float big[1 << 16];
        size_t bshape[1] = {1 << 16};
        struct rlimit lim = old;
        lim.rlim_cur = 4096;
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &lim);
        s = pk_npy_write(tpath("keep.npy"), PK_DTYPE_F32, 1, bshape, big);
        setrlimit(RLIMIT_FSIZE, &old);
        pk_array a;
        ok(s == PK_EIO && strstr(pk_last_error(), "write failed"),
           "write beyond the file size limit: PK_EIO (%s)", pk_last_error());
        ok(pk_npy_read(tpath("keep.npy"), &a) == PK_OK && a.count == 6 &&
               memcmp(a.data, v, sizeof v) == 0 && count_entries(".tmp") == 0,
           "failed write kept the old file and removed its temporary");
        pk_array_free(&a);
    } else {
        tap_skip("getrlimit failed", "failed write keeps the old file");
    }
}

int main(void)
{
    make_dir();
    test_dtypes();
    test_round_trips();
    test_numpy_headers();
    test_header_variants();
    test_malformed();
    test_mutations();
    test_files();
    test_write_errors();
    remove_dir();
    return tap_done();
}
