/* test_fits.c - pk_fits_write_image: the file cfitsio reads back has the pixels bit for bit
 * (x fastest, row 0 first), the WCS cards the arguments ask for (SIN projection about the
 * phase centre, CRPIX defaulting to n / 2 + 1, a degenerate FREQ axis), and every bad
 * argument is refused with its own message and leaves no file, nor a temporary, behind; an
 * existing file is replaced whole.  Without cfitsio in the build: PK_EUNSUPPORTED. */
#include "config.h"
#include "portkern.h"
#include "tap.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PK_HAVE_CFITSIO
#include <fitsio.h>
#endif

static char dir[512];

static const char *tpath(const char *name)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* Entries of the test directory other than . and .. */
static int count_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ++n;
    if (d) closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tpath(e->d_name));
    if (d) closedir(d);
    rmdir(dir);
}

static pk_fits_image_info good_info(void)
{
    pk_fits_image_info w;
    pk_fits_image_info_init(&w);
    w.ra_deg = 201.365;
    w.dec_deg = -26.82472208;
    w.cdelt_deg[0] = -3.6666e-4;
    w.cdelt_deg[1] = 3.6666e-4;
    w.freq_hz = 100e6;
    w.bandwidth_hz = 1e6;
    w.object = "portkern test";
    w.telescope = "SKA1-LOW";
    return w;
}

enum { NX = 7, NY = 5 };

#ifdef PK_HAVE_CFITSIO
static double key_double(fitsfile *f, const char *key, int *st)
{
    double v = NAN;
    fits_read_key(f, TDOUBLE, key, &v, NULL, st);
    return v;
}

static int key_is(fitsfile *f, const char *key, const char *want, int *st)
{
    char v[FLEN_VALUE] = "";
    fits_read_key(f, TSTRING, key, v, NULL, st);
    return *st == 0 && strcmp(v, want) == 0;
}

/* Read path back: its extents, pixels and WCS against img and w (crpix the expected ones). */
static void check_file(const char *what, const char *path, const float *img,
                       const pk_fits_image_info *w, double cx, double cy)
{
    fitsfile *f = NULL;
    int st = 0, naxis = 0;
    long naxes[2] = {0, 0};
    float got[NX * NY];
    fits_open_file(&f, path, READONLY, &st);
    fits_get_img_dim(f, &naxis, &st);
    fits_get_img_size(f, 2, naxes, &st);
    ok(st == 0 && naxis == 2 && naxes[0] == NX && naxes[1] == NY,
       "%s: a 2-D image of %d x %d (got naxis %d, %ld x %ld, status %d)", what, NX, NY, naxis,
       naxes[0], naxes[1], st);
    int anynul = 0;
    fits_read_img(f, TFLOAT, 1, NX * NY, NULL, got, &anynul, &st);
    ok(st == 0 && memcmp(got, img, sizeof got) == 0,
       "%s: the pixels read back bit for bit, x fastest (status %d)", what, st);
    int wst = 0, wcsaxes = 0;
    fits_read_key(f, TINT, "WCSAXES", &wcsaxes, NULL, &wst);
    const int types = key_is(f, "CTYPE1", "RA---SIN", &wst) && key_is(f, "CTYPE2", "DEC--SIN", &wst) &&
                      key_is(f, "CTYPE3", "FREQ", &wst) && key_is(f, "CUNIT1", "deg", &wst) &&
                      key_is(f, "CUNIT2", "deg", &wst) && key_is(f, "RADESYS", "ICRS", &wst) &&
                      key_is(f, "BUNIT", w->bunit, &wst);
    ok(wst == 0 && types && wcsaxes == 3,
       "%s: WCSAXES 3, CTYPE RA---SIN / DEC--SIN / FREQ, CUNIT deg, RADESYS ICRS, BUNIT %s", what,
       w->bunit);
    const double v[] = {key_double(f, "CRVAL1", &wst), key_double(f, "CRVAL2", &wst),
                        key_double(f, "CDELT1", &wst), key_double(f, "CDELT2", &wst),
                        key_double(f, "CRPIX1", &wst), key_double(f, "CRPIX2", &wst),
                        key_double(f, "CRVAL3", &wst), key_double(f, "CDELT3", &wst)};
    const double want[] = {w->ra_deg, w->dec_deg, w->cdelt_deg[0], w->cdelt_deg[1], cx, cy,
                           w->freq_hz, w->bandwidth_hz > 0 ? w->bandwidth_hz : 1.0};
    int same = wst == 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
        same = same && fabs(v[i] - want[i]) <= 1e-15 * fabs(want[i]); /* %.15g-ish cards */
    ok(same, "%s: CRVAL (%.9g, %.9g), CDELT (%g, %g), CRPIX (%g, %g), frequency %g Hz, "
       "bandwidth %g Hz as given", what, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    int ost = 0;
    if (f) fits_close_file(f, &ost);
}
#endif

int main(void)
{
    const char *top = getenv("top_builddir");
    snprintf(dir, sizeof dir, "%s/tests/tmp-fits-XXXXXX", top ? top : ".");
    if (mkdtemp(dir) == NULL) {
        snprintf(dir, sizeof dir, "/tmp/pk-test-fits-XXXXXX");
        if (mkdtemp(dir) == NULL) tap_skip_all("cannot create a temporary directory");
    }
    float img[NX * NY];
    for (int i = 0; i < NX * NY; ++i) img[i] = (float)(i * 0.37 - 3.0);
    img[3] = NAN; /* a blank pixel is an IEEE NaN in a float image */
    pk_fits_image_info w = good_info();
#ifndef PK_HAVE_CFITSIO
    tap_plan(1);
    const pk_status s = pk_fits_write_image(tpath("a.fits"), img, NX, NY, &w);
    ok(s == PK_EUNSUPPORTED && count_entries() == 0,
       "without cfitsio: PK_EUNSUPPORTED saying how to get it (%s), no file", pk_last_error());
    remove_dir();
    return tap_done();
#else
    tap_plan(14);
    pk_status s = pk_fits_write_image(tpath("a.fits"), img, NX, NY, &w);
    ok(s == PK_OK && count_entries() == 1, "a 7 x 5 image written (%s), one file in the directory",
       s ? pk_last_error() : "ok");
    check_file("default CRPIX", tpath("a.fits"), img, &w, NX / 2 + 1, NY / 2 + 1);

    /* replaced whole, with the caller's CRPIX and another unit */
    for (int i = 0; i < NX * NY; ++i) img[i] = -img[i];
    w.crpix[0] = 2.5;
    w.crpix[1] = 1;
    w.bunit = "JY/PIXEL";
    w.bandwidth_hz = 0;
    s = pk_fits_write_image(tpath("a.fits"), img, NX, NY, &w);
    ok(s == PK_OK && count_entries() == 1, "the same path again: replaced (%s), still one file",
       s ? pk_last_error() : "ok");
    check_file("given CRPIX", tpath("a.fits"), img, &w, 2.5, 1);

    /* bad arguments: their own message, no file */
    struct {
        const char *what, *field;
        pk_status want;
        pk_fits_image_info w;
        size_t nx;
    } bad[5];
    for (int i = 0; i < 5; ++i) {
        bad[i].w = good_info();
        bad[i].nx = NX;
    }
    bad[0].what = "dec 91 degrees", bad[0].field = "phase centre", bad[0].want = PK_EINVAL;
    bad[0].w.dec_deg = 91;
    bad[1].what = "a zero cell", bad[1].field = "cdelt_deg[1]", bad[1].want = PK_EINVAL;
    bad[1].w.cdelt_deg[1] = 0;
    bad[2].what = "frequency NaN", bad[2].field = "freq_hz", bad[2].want = PK_EINVAL;
    bad[2].w.freq_hz = NAN;
    bad[3].what = "a unit with a newline", bad[3].field = "bunit", bad[3].want = PK_EINVAL;
    bad[3].w.bunit = "JY\nBEAM";
    bad[4].what = "zero columns", bad[4].field = "extents", bad[4].want = PK_EINVAL;
    bad[4].nx = 0;
    int all = 1;
    char why[512] = "";
    for (int i = 0; i < 5; ++i) {
        s = pk_fits_write_image(tpath("bad.fits"), img, bad[i].nx, NY, &bad[i].w);
        const int good = s == bad[i].want && strstr(pk_last_error(), bad[i].field) &&
                         access(tpath("bad.fits"), F_OK) != 0;
        if (!good && all)
            snprintf(why, sizeof why, "; %s: %s: %s", bad[i].what, pk_status_name(s),
                     pk_last_error());
        all = all && good;
    }
    ok(all, "dec 91, zero cell, NaN frequency, a newline in BUNIT, zero columns: PK_EINVAL naming "
       "the field, no file%s", why);
    s = pk_fits_write_image(NULL, img, NX, NY, &w);
    const pk_status s2 = pk_fits_write_image(tpath("n.fits"), NULL, NX, NY, &w);
    const pk_status s3 = pk_fits_write_image(tpath("n.fits"), img, NX, NY, NULL);
    ok(s == PK_ENULL && s2 == PK_ENULL && s3 == PK_ENULL, "NULL path, image or info: PK_ENULL");
    s = pk_fits_write_image(tpath("no-such-dir/x.fits"), img, NX, NY, &w);
    ok(s == PK_EIO && strstr(pk_last_error(), "no-such-dir") && count_entries() == 1,
       "a directory that does not exist: PK_EIO naming the path (%s), nothing left behind",
       pk_last_error());
    s = pk_fits_write_image("/dev/null", img, NX, NY, &w);
    struct stat st;
    ok(s == PK_EIO && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode),
       "/dev/null: refused, not replaced by a plain file (%s)", pk_last_error());
    remove_dir();
    return tap_done();
#endif
}
