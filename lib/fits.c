/* fits.c - 2-D float images as FITS files with a celestial WCS (pk_fits_write_image), the
 * format radio astronomers open (DS9, CARTA, astropy).  cfitsio writes the file; the
 * library only checks the arguments, fills the header and puts the file in place whole
 * (pk_file_begin / pk_file_commit: a temporary renamed over the target), so a failed write
 * leaves the old file or none, never half of one.
 *
 * Header (FITS 4.0, WCS papers I-II): NAXIS1 = nx (x, fastest in memory), NAXIS2 = ny;
 * CTYPE1 'RA---SIN', CTYPE2 'DEC--SIN' (the orthographic projection of an interferometer's
 * image plane, l = cos(dec) sin(ra - ra0), ...), CRVAL = the phase centre, CRPIX = its pixel
 * (1-based), CDELT = the cell in degrees (CDELT1 < 0 when RA grows to the left, as in every
 * radio image), CUNIT 'deg', RADESYS 'ICRS'; a third, degenerate world axis (WCSAXES = 3)
 * CTYPE3 'FREQ' carries the frequency and bandwidth without a third data axis; BUNIT. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef PK_HAVE_CFITSIO
#include <fitsio.h>
#endif

void pk_fits_image_info_init(pk_fits_image_info *w)
{
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->bunit = "JY/BEAM";
}

/* A header string value: printable ASCII only, at most 68 characters (one card). */
static pk_status fits_check_text(const char *what, const char *v)
{
    if (!v) return PK_OK;
    size_t n = strlen(v);
    PK_CHECK(n <= 68, PK_EINVAL, "%s: at most 68 characters in a FITS card, got %zu", what, n);
    for (size_t i = 0; i < n; ++i)
        PK_CHECK(v[i] >= 32 && v[i] <= 126, PK_EINVAL,
                 "%s: FITS header values are printable ASCII; byte %zu is 0x%02x", what, i,
                 (unsigned)(unsigned char)v[i]);
    return PK_OK;
}

static pk_status fits_check(const char *path, const float *image, size_t nx, size_t ny,
                            const pk_fits_image_info *w)
{
    PK_CHECK_NULL(path);
    PK_CHECK_NULL(image);
    PK_CHECK_NULL(w);
    PK_CHECK(path[0] != '\0', PK_EINVAL, "path: must not be empty");
    PK_CHECK(nx >= 1 && ny >= 1, PK_EINVAL, "image: extents must be >= 1, got %zu x %zu", nx, ny);
    PK_CHECK(nx <= (size_t)INT32_MAX && ny <= (size_t)INT32_MAX && nx <= SIZE_MAX / 4 / ny,
             PK_EOVERFLOW, "image: %zu x %zu pixels is too large", nx, ny);
    PK_CHECK(isfinite(w->ra_deg) && isfinite(w->dec_deg) && fabs(w->dec_deg) <= 90, PK_EINVAL,
             "phase centre: ra finite, dec in [-90, 90] degrees; got (%g, %g)", w->ra_deg,
             w->dec_deg);
    for (int a = 0; a < 2; ++a) {
        PK_CHECK(isfinite(w->cdelt_deg[a]) && w->cdelt_deg[a] != 0, PK_EINVAL,
                 "cdelt_deg[%d]: the pixel size must be finite and non-zero, got %g", a,
                 w->cdelt_deg[a]);
        PK_CHECK(isfinite(w->crpix[a]), PK_EINVAL, "crpix[%d]: must be finite, got %g", a,
                 w->crpix[a]);
    }
    PK_CHECK(isfinite(w->freq_hz) && w->freq_hz > 0, PK_EINVAL,
             "freq_hz: the observing frequency must be > 0, got %g", w->freq_hz);
    PK_CHECK(isfinite(w->bandwidth_hz) && w->bandwidth_hz >= 0, PK_EINVAL,
             "bandwidth_hz: must be >= 0, got %g", w->bandwidth_hz);
    PK_TRY(fits_check_text("bunit", w->bunit));
    PK_TRY(fits_check_text("object", w->object));
    PK_TRY(fits_check_text("telescope", w->telescope));
    return PK_OK;
}

#ifdef PK_HAVE_CFITSIO
/* cfitsio's message for status st into the thread's error detail. */
static pk_status fits_fail(const char *shown, int st)
{
    char msg[FLEN_STATUS] = "";
    fits_get_errstatus(st, msg);
    fits_clear_errmsg();
    return pk_fail(PK_EIO, "%s: cfitsio: %s (status %d)", shown, msg, st);
}

static int fits_emit(const char *tmp, const float *image, size_t nx, size_t ny,
                     const pk_fits_image_info *w)
{
    int st = 0;
    fitsfile *f = NULL;
    long naxes[2] = {(long)nx, (long)ny};
    const double cx = w->crpix[0] != 0 ? w->crpix[0] : (double)(nx / 2) + 1;
    const double cy = w->crpix[1] != 0 ? w->crpix[1] : (double)(ny / 2) + 1;
    int wcsaxes = 3;
    double equinox = 2000.0, one = 1.0, bw = w->bandwidth_hz > 0 ? w->bandwidth_hz : 1.0;
    char origin[64];
    snprintf(origin, sizeof origin, "portkern %s", pk_version());
    fits_create_file(&f, tmp, &st);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_update_key(f, TINT, "WCSAXES", &wcsaxes, "world axes: RA, Dec, frequency", &st);
    fits_update_key(f, TSTRING, "CTYPE1", "RA---SIN", "right ascension, orthographic", &st);
    fits_update_key(f, TDOUBLE, "CRVAL1", (void *)&w->ra_deg, "[deg] phase centre", &st);
    fits_update_key(f, TDOUBLE, "CRPIX1", (void *)&cx, "pixel of the phase centre", &st);
    fits_update_key(f, TDOUBLE, "CDELT1", (void *)&w->cdelt_deg[0], "[deg] cell", &st);
    fits_update_key(f, TSTRING, "CUNIT1", "deg", NULL, &st);
    fits_update_key(f, TSTRING, "CTYPE2", "DEC--SIN", "declination, orthographic", &st);
    fits_update_key(f, TDOUBLE, "CRVAL2", (void *)&w->dec_deg, "[deg] phase centre", &st);
    fits_update_key(f, TDOUBLE, "CRPIX2", (void *)&cy, "pixel of the phase centre", &st);
    fits_update_key(f, TDOUBLE, "CDELT2", (void *)&w->cdelt_deg[1], "[deg] cell", &st);
    fits_update_key(f, TSTRING, "CUNIT2", "deg", NULL, &st);
    fits_update_key(f, TSTRING, "CTYPE3", "FREQ", "degenerate: no data axis", &st);
    fits_update_key(f, TDOUBLE, "CRVAL3", (void *)&w->freq_hz, "[Hz] observing frequency", &st);
    fits_update_key(f, TDOUBLE, "CRPIX3", &one, NULL, &st);
    fits_update_key(f, TDOUBLE, "CDELT3", &bw, "[Hz] bandwidth", &st);
    fits_update_key(f, TSTRING, "CUNIT3", "Hz", NULL, &st);
    fits_update_key(f, TSTRING, "SPECSYS", "TOPOCENT", NULL, &st);
    fits_update_key(f, TSTRING, "RADESYS", "ICRS", NULL, &st);
    fits_update_key(f, TDOUBLE, "EQUINOX", &equinox, NULL, &st);
    fits_update_key(f, TSTRING, "BTYPE", "Intensity", NULL, &st);
    fits_update_key(f, TSTRING, "BUNIT", (void *)(w->bunit ? w->bunit : "JY/BEAM"),
                    "brightness unit", &st);
    if (w->object) fits_update_key(f, TSTRING, "OBJECT", (void *)w->object, NULL, &st);
    if (w->telescope) fits_update_key(f, TSTRING, "TELESCOP", (void *)w->telescope, NULL, &st);
    fits_update_key(f, TSTRING, "ORIGIN", origin, "the software that wrote the file", &st);
    fits_write_date(f, &st);
    /* cfitsio's element counts are LONGLONG: the whole image in one call */
    fits_write_img(f, TFLOAT, 1, (LONGLONG)nx * (LONGLONG)ny, (void *)image, &st);
    int st2 = 0;
    if (f) fits_close_file(f, st ? &st2 : &st);
    return st;
}
#endif

pk_status pk_fits_write_image(const char *path, const float *image, size_t nx, size_t ny,
                              const pk_fits_image_info *w)
{
    pk_clear_error();
    PK_TRY(fits_check(path, image, nx, ny, w));
#ifndef PK_HAVE_CFITSIO
    return pk_fail(PK_EUNSUPPORTED, "%s: FITS output needs cfitsio, which this build of "
                   "portkern does not have (configure --with-cfitsio; Debian: libcfitsio-dev)",
                   path);
#else
    pk_file_tmp t;
    PK_TRY(pk_file_begin(path, &t));
    /* cfitsio creates its files itself: the name reserved by pk_file_begin is handed over
     * (another writer taking it meanwhile makes cfitsio's create fail, never clobbers), and
     * reopened afterwards for pk_file_commit's fsync */
    close(t.fd);
    unlink(t.tmp);
    int st = fits_emit(t.tmp, image, nx, ny, w);
    t.fd = st == 0 ? open(t.tmp, O_WRONLY) : -1;
    if (st == 0 && t.fd < 0) st = FILE_NOT_OPENED;
    if (st != 0) {
        pk_status s = fits_fail(t.shown, st);
        char detail[1024];
        pk_strlcpy(detail, pk_last_error(), sizeof detail);
        (void)pk_file_commit(&t, 0, EIO); /* removes the temporary */
        return pk_fail(s, "%s", detail);
    }
    return pk_file_commit(&t, 1, 0);
#endif
}
