/* fftw_planner.c - the library's one FFTW (single precision) planner lock, and its wisdom
 * kept in the cache directory.  Apart from lib/util.c, which the fuzz targets and the CUDA
 * emulation tests compile in without FFTW. */
#include "internal.h"

#ifdef PK_HAVE_FFTW
#include <errno.h>
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* FFTW wisdom, <cache>/fftw-wisdom-f (pk_cache_dir; PORTKERN_CACHE_DIR=off: none): read by a
 * process's first planner call, rewritten (whole, by rename) when a plan added to it.  With
 * wisdom an FFTW_ESTIMATE plan skips the planner's search: conv2d fft's 256 x 384 tile pair
 * planned in 0.2 ms instead of 3.5 ms, which a fresh process's first call paid.  The file is
 * only ever a cache: unreadable or foreign, FFTW refuses it and plans as before. */
#define PK_FFTW_WISDOM_FILE "fftw-wisdom-f"

static int wisdom_state; /* 0: not read yet; 1: on; -1: no cache */
static char wisdom_dir[1024], wisdom_path[1100];
static int wisdom_owner;
static unsigned long long wisdom_hash; /* of the wisdom last read or written */

/* FFTW exports the same entries in an order that varies from process to process: the hash
 * is the sum of the lines' (one entry a line) FNV-1a hashes, blind to their order. */
static unsigned long long text_hash(const char *s)
{
    unsigned long long sum = 0, h = 1469598103934665603ull;
    for (; *s; ++s) {
        if (*s == '\n') {
            sum += h;
            h = 1469598103934665603ull;
        } else {
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        }
    }
    return sum + h;
}

/* The file's text is imported as read and hashed as read, so a process that plans nothing
 * new rewrites nothing (an export costs 0.5 ms: it is done only after a plan). */
static void wisdom_read(void)
{
    wisdom_state = -1;
    if (!pk_cache_dir(wisdom_dir, sizeof wisdom_dir, &wisdom_owner) ||
        (size_t)snprintf(wisdom_path, sizeof wisdom_path, "%s/" PK_FFTW_WISDOM_FILE,
                         wisdom_dir) >= sizeof wisdom_path)
        return;
    wisdom_state = 1;
    if (!pk_cache_dir_private(wisdom_dir, wisdom_owner)) return;
    FILE *f = fopen(wisdom_path, "rb");
    if (!f) return;
    char *text = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)len + 1)) && fread(text, 1, (size_t)len, f) == (size_t)len) {
        text[len] = '\0';
        if (fftwf_import_wisdom_from_string(text)) wisdom_hash = text_hash(text);
    }
    free(text);
    fclose(f);
}

/* After planning: write the wisdom when it grew; every failure leaves the old file. */
static void wisdom_write(void)
{
    char *text = fftwf_export_wisdom_to_string();
    const unsigned long long h = text ? text_hash(text) : 0;
    if (text && h != wisdom_hash && pk_mkdir_p(wisdom_dir) == 0 &&
        pk_cache_dir_private(wisdom_dir, wisdom_owner)) {
        pk_file_tmp t;
        if (pk_file_begin(wisdom_path, &t) == PK_OK) {
            const size_t len = strlen(text);
            const int ok = write(t.fd, text, len) == (ssize_t)len;
            if (pk_file_commit(&t, ok, EIO) == PK_OK) wisdom_hash = h;
        }
        pk_clear_error(); /* a cache: its failures are nobody's error */
    }
    free(text);
}

/* FFTW's planner is not thread-safe (only fftwf_execute is), and its thread count is global
 * planner state: every planner call of the library (conv2d's FFT variants, pk_image,
 * pk_degrid) runs in this one critical section, with the thread count it asks for. */
void pk_fftwf_planner(int nt, void (*fn)(void *arg), void *arg)
{
#pragma omp critical(pk_fftw_planner)
    {
        static int threads_ready;
        if (!threads_ready) threads_ready = fftwf_init_threads() ? 1 : -1;
        if (threads_ready > 0) fftwf_plan_with_nthreads(nt < 1 ? 1 : nt);
        if (!wisdom_state) wisdom_read();
        fn(arg);
        if (wisdom_state > 0) wisdom_write();
    }
}

void pk_fftwf_unplan(void (*fn)(void *arg), void *arg)
{
#pragma omp critical(pk_fftw_planner)
    fn(arg);
}
#endif
