/* wisdom_store.c - a context's wisdom: its entries, the files they are loaded from and saved
 * to, and the entry that applies to a call (lib/portkern.h, "Wisdom"; the format itself is
 * lib/wisdom.c). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* Entries further than this factor from the call's size (either way) do not apply. */
#define WISDOM_SIZE_FACTOR 8.0

/* ---- where the default file is ---------------------------------------------------------- */
/* PORTKERN_WISDOM (unless the context ignores the environment): a path, or "0" / "" for
 * none; else $XDG_CACHE_HOME/portkern/wisdom.json, else $HOME/.cache/portkern/wisdom.json.
 * path is "" when there is none; PK_ESIZE when it does not fit. */
static pk_status default_path(const pk_context *ctx, char *path, size_t len)
{
    const char *set = NULL, *base;
    int n;
    path[0] = '\0';
    if (!ctx || !(ctx->opt.flags & PK_OPT_IGNORE_ENV)) set = getenv("PORTKERN_WISDOM");
    if (set) {
        if (!set[0] || !strcmp(set, "0")) return PK_OK;
        n = snprintf(path, len, "%s", set);
    } else if ((base = pk_getenv("XDG_CACHE_HOME")) && base[0] == '/') {
        n = snprintf(path, len, "%s/portkern/wisdom.json", base);
    } else if ((base = pk_getenv("HOME"))) {
        n = snprintf(path, len, "%s/.cache/portkern/wisdom.json", base);
    } else {
        return PK_OK;
    }
    if (n < 0 || (size_t)n >= len) {
        path[0] = '\0';
        return pk_fail(PK_ESIZE, "wisdom: the default path does not fit in %zu bytes", len);
    }
    return PK_OK;
}

pk_status pk_wisdom_default_path(const pk_context *ctx, char *path, size_t len)
{
    pk_clear_error();
    PK_CHECK_NULL(path);
    PK_CHECK(len > 0, PK_ESIZE, "len: must be > 0");
    return default_path(ctx, path, len);
}

/* A long path shown by its end, which says most. */
static const char *short_path(const char *path, char *buf, size_t len)
{
    const size_t n = strlen(path);
    if (n < 72) return path;
    snprintf(buf, len, "...%s", path + n - 68);
    return buf;
}

/* ---- files ------------------------------------------------------------------------------ */
/* The whole of a regular file of at most PK_WISDOM_MAX_FILE_BYTES (malloc'ed).  *missing is
 * set (and PK_EIO returned) when it does not exist. */
static pk_status read_file(const char *path, char **buf, size_t *len, int *missing)
{
    char sp[80];
    *buf = NULL;
    *len = 0;
    *missing = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return pk_fail(PK_EIO, "%s: cannot open: %s", short_path(path, sp, sizeof sp),
                       strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pk_fail(PK_EIO, "%s: not a regular file", short_path(path, sp, sizeof sp));
    }
    /* one byte more than allowed, so that a file that grew since fstat is still caught */
    const size_t cap = PK_WISDOM_MAX_FILE_BYTES + 1;
    size_t want = (size_t)st.st_size < cap ? (size_t)st.st_size + 1 : cap;
    char *b = malloc(want);
    if (!b) {
        close(fd);
        return pk_fail(PK_ENOMEM, "wisdom: out of host memory");
    }
    size_t n = 0;
    for (;;) {
        if (n == want) break;
        ssize_t got = read(fd, b + n, want - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int err = errno;
            free(b);
            close(fd);
            return pk_fail(PK_EIO, "%s: read failed: %s", short_path(path, sp, sizeof sp),
                           strerror(err));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    *buf = b;
    *len = n; /* n == cap: too large, which the reader says */
    return PK_OK;
}

/* mkdir -p of the directory that holds path. */
static pk_status make_parent_dirs(const char *path)
{
    char *dir = malloc(strlen(path) + 1);
    PK_CHECK(dir != NULL, PK_ENOMEM, "wisdom: out of host memory");
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    pk_status s = PK_OK;
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1;; ++p) {
            const int last = *p == '\0';
            if (*p != '/' && !last) continue;
            *p = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                char sp[80];
                s = pk_fail(PK_EIO, "%s: cannot create the directory: %s",
                            short_path(dir, sp, sizeof sp), strerror(errno));
                break;
            }
            if (last) break;
            *p = '/';
        }
    }
    free(dir);
    return s;
}

/* Write text to a temporary beside path and rename it into place. */
static pk_status write_replace(const char *path, const char *text, size_t len)
{
    char sp[80];
    const size_t tlen = strlen(path) + 48;
    char *tmp = malloc(tlen);
    PK_CHECK(tmp != NULL, PK_ENOMEM, "wisdom: out of host memory");
    int fd = -1;
    for (unsigned k = 0; k < 1000 && fd < 0; ++k) {
        snprintf(tmp, tlen, "%s.%ld-%u.tmp", path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        pk_status s = pk_fail(PK_EIO, "%s: cannot create a temporary file: %s",
                              short_path(path, sp, sizeof sp), strerror(errno));
        free(tmp);
        return s;
    }
    size_t done = 0;
    int err = 0;
    while (done < len && !err) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            err = w < 0 ? errno : EIO;
        else
            done += (size_t)w;
    }
    /* fsync before the rename: a delayed write error is seen before the old file goes */
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    pk_status s = PK_OK;
    if (err) {
        unlink(tmp);
        s = pk_fail(PK_EIO, "%s: write failed: %s", short_path(path, sp, sizeof sp),
                    strerror(err));
    }
    free(tmp);
    return s;
}

/* ---- the context's entries --------------------------------------------------------------- */
/* What changes the wisdom settles it (no lazy load afterwards) and may change what auto
 * would choose: the kept plans go. */
static void wisdom_changed(pk_context *ctx)
{
    ctx->wisdom_settled = 1;
    ctx->wisdom_off = 0;
    pk_plan_cache_release(ctx);
}

/* dst = dst with every entry of src put in, or dst unchanged on failure. */
static pk_status merge(pk_wisdom_list *dst, const pk_wisdom_list *src)
{
    pk_wisdom_list m = {NULL, 0, 0};
    if (dst->n) {
        m.e = malloc((size_t)dst->n * sizeof *m.e);
        PK_CHECK(m.e != NULL, PK_ENOMEM, "wisdom: out of host memory");
        memcpy(m.e, dst->e, (size_t)dst->n * sizeof *m.e);
        m.n = m.cap = dst->n;
    }
    for (int i = 0; i < src->n; ++i) {
        pk_status s = pk_wisdom_list_put(&m, &src->e[i]);
        if (s != PK_OK) {
            pk_wisdom_list_free(&m);
            return s;
        }
    }
    pk_wisdom_list_free(dst);
    *dst = m;
    return PK_OK;
}

pk_status pk_wisdom_entry_init(pk_context *ctx, pk_backend_id backend, int device,
                               pk_wisdom_entry *entry)
{
    pk_clear_error();
    PK_CHECK_NULL(entry);
    memset(entry, 0, sizeof *entry);
    pk_device_info di;
    PK_TRY(pk_device_get_info(ctx, backend, device, &di));
    entry->backend = backend;
    entry->device = device;
    pk_strlcpy(entry->device_name, di.name, sizeof entry->device_name);
    pk_strlcpy(entry->driver, di.driver, sizeof entry->driver);
    entry->compute_units = di.compute_units;
    pk_strlcpy(entry->version, pk_version(), sizeof entry->version);
    time_t now = time(NULL);
    struct tm utc;
    if (now == (time_t)-1 || !gmtime_r(&now, &utc) ||
        !strftime(entry->date, sizeof entry->date, "%Y-%m-%dT%H:%M:%SZ", &utc))
        pk_strlcpy(entry->date, "1970-01-01T00:00:00Z", sizeof entry->date);
    return PK_OK;
}

pk_status pk_wisdom_add(pk_context *ctx, const pk_wisdom_entry *entry)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(entry);
    const char *problem = pk_wisdom_entry_problem(entry);
    PK_CHECK(problem == NULL, PK_EINVAL, "wisdom entry: %s", problem);
    PK_TRY(pk_wisdom_list_put(&ctx->wisdom, entry));
    wisdom_changed(ctx);
    return PK_OK;
}

void pk_wisdom_forget(pk_context *ctx)
{
    if (!ctx) return;
    pk_wisdom_list_free(&ctx->wisdom);
    ctx->wisdom_note[0] = '\0';
    wisdom_changed(ctx);
}

int pk_wisdom_count(const pk_context *ctx) { return ctx ? ctx->wisdom.n : 0; }

pk_status pk_wisdom_get(const pk_context *ctx, int index, pk_wisdom_entry *entry)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    PK_CHECK_NULL(entry);
    PK_CHECK(index >= 0 && index < ctx->wisdom.n, PK_EINVAL,
             "index: must be in [0, %d), got %d", ctx->wisdom.n, index);
    *entry = ctx->wisdom.e[index];
    return PK_OK;
}

const char *pk_wisdom_note(const pk_context *ctx) { return ctx ? ctx->wisdom_note : ""; }

/* Load path into the context.  A missing file is PK_OK when it is the default one (no
 * wisdom yet), PK_EIO when the caller named it.  A file that is not valid wisdom leaves
 * the entries as they were and its reason in ctx->wisdom_note. */
static pk_status load_into(pk_context *ctx, const char *path, int named)
{
    char *buf, sp[80];
    size_t len;
    int missing;
    pk_status s = read_file(path, &buf, &len, &missing);
    if (s != PK_OK) {
        if (missing && !named) return PK_OK;
        pk_strlcpy(ctx->wisdom_note, pk_last_error(), sizeof ctx->wisdom_note);
        return s;
    }
    pk_wisdom_list got;
    char why[192];
    s = pk_wisdom_parse(buf, len, &got, why, sizeof why);
    free(buf);
    if (s != PK_OK) {
        snprintf(ctx->wisdom_note, sizeof ctx->wisdom_note, "%.71s: %.180s",
                 short_path(path, sp, sizeof sp), why[0] ? why : pk_last_error());
        return pk_fail(s, "wisdom file ignored: %s", ctx->wisdom_note);
    }
    s = merge(&ctx->wisdom, &got);
    pk_wisdom_list_free(&got);
    if (s == PK_OK) ctx->wisdom_note[0] = '\0';
    return s;
}

pk_status pk_wisdom_load(pk_context *ctx, const char *path)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    char def[4096];
    const int named = path != NULL;
    if (!named) {
        PK_TRY(default_path(ctx, def, sizeof def));
        path = def;
    }
    PK_CHECK(!named || path[0], PK_EINVAL, "path: must not be empty");
    wisdom_changed(ctx);
    if (!path[0]) return PK_OK; /* disabled, or no default location */
    return load_into(ctx, path, named);
}

pk_status pk_wisdom_save(pk_context *ctx, const char *path)
{
    pk_clear_error();
    PK_CHECK_NULL(ctx);
    char def[4096], sp[80];
    if (!path) {
        PK_TRY(default_path(ctx, def, sizeof def));
        PK_CHECK(def[0], PK_EINVAL, "wisdom: no default file (PORTKERN_WISDOM disables it, or "
                 "neither XDG_CACHE_HOME nor HOME is set): give a path");
        path = def;
    }
    PK_CHECK(path[0], PK_EINVAL, "path: must not be empty");
    PK_TRY(make_parent_dirs(path));
    struct stat st;
    PK_CHECK(stat(path, &st) != 0 || S_ISREG(st.st_mode), PK_EIO,
             "%s: exists and is not a regular file", short_path(path, sp, sizeof sp));

    /* Everything from reading the file to the rename happens under the lock, so that two
     * savers merge one after the other and neither loses the other's entries. */
    char *lock_path = malloc(strlen(path) + 6);
    PK_CHECK(lock_path != NULL, PK_ENOMEM, "wisdom: out of host memory");
    sprintf(lock_path, "%s.lock", path);
    int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    pk_status s = PK_OK;
    if (lock < 0) {
        s = pk_fail(PK_EIO, "%s: cannot open the lock file: %s",
                    short_path(lock_path, sp, sizeof sp), strerror(errno));
        free(lock_path);
        return s;
    }
    free(lock_path);
    while (flock(lock, LOCK_EX) != 0) {
        if (errno != EINTR) {
            s = pk_fail(PK_EIO, "%s: cannot lock: %s", short_path(path, sp, sizeof sp),
                        strerror(errno));
            close(lock);
            return s;
        }
    }

    pk_wisdom_list merged = {NULL, 0, 0};
    char *buf = NULL, *text = NULL;
    size_t len = 0, text_len = 0;
    int missing = 0;
    s = read_file(path, &buf, &len, &missing);
    if (s != PK_OK && missing) s = PK_OK;
    if (s == PK_OK && len > 0) {
        char why[192];
        s = pk_wisdom_parse(buf, len, &merged, why, sizeof why);
        if (s == PK_EFORMAT)
            s = pk_fail(PK_EFORMAT, "%s: not valid wisdom (%s): not overwritten",
                        short_path(path, sp, sizeof sp), why);
    }
    free(buf);
    if (s == PK_OK) s = merge(&merged, &ctx->wisdom);
    if (s == PK_OK) s = pk_wisdom_format(&merged, &text, &text_len);
    if (s == PK_OK) s = write_replace(path, text, text_len);
    free(text);
    pk_wisdom_list_free(&merged);
    close(lock); /* releases the flock */
    return s;
}

/* ---- the entry that applies to a call ---------------------------------------------------- */
/* The context's device of e's backend with e's identity: e's index when it matches, else the
 * first that does; the caller's device index, if any, must be it.  -1 when none. */
static int device_of(pk_context *ctx, const pk_wisdom_entry *e)
{
    if (!pk_backend_available(ctx, e->backend, NULL)) return -1;
    const pk_backend_ops *ops = pk_backend_ops_get(e->backend);
    const int n = pk_device_count(ctx, e->backend);
    int found = -1;
    for (int i = 0; i < n; ++i) {
        if (ctx->opt.device >= 0 && i != ctx->opt.device) continue;
        pk_device_info di;
        memset(&di, 0, sizeof di);
        if (ops->device_info(ctx->slot[e->backend].state, i, &di) != PK_OK) continue;
        if (strcmp(di.name, e->device_name) || strcmp(di.driver, e->driver) ||
            di.compute_units != e->compute_units)
            continue;
        if (i == e->device) return i;
        if (found < 0) found = i;
    }
    return found;
}

/* The default file, once per context, unless the caller or the environment said otherwise. */
static void lazy_load(pk_context *ctx)
{
    if (ctx->wisdom_settled) return;
    ctx->wisdom_settled = 1;
    char path[4096], saved[1024];
    pk_strlcpy(saved, pk_last_error(), sizeof saved); /* the caller's detail stays */
    if ((ctx->opt.flags & PK_OPT_IGNORE_ENV) || default_path(ctx, path, sizeof path) != PK_OK ||
        !path[0])
        ctx->wisdom_off = 1;
    else /* a file PORTKERN_WISDOM names should exist: the reason says so when it does not */
        load_into(ctx, path, getenv("PORTKERN_WISDOM") != NULL);
    pk_fail(PK_OK, "%s", saved);
}

int pk_wisdom_choose(pk_context *ctx, const pk_kernel_class *kc, double size, const char *key,
                     pk_wisdom_pick *pick, char *note, size_t note_len)
{
    lazy_load(ctx);
    if (ctx->wisdom_off && ctx->wisdom.n == 0) return 0;
    const pk_wisdom_entry *best = NULL, *far = NULL;
    double best_d = 0, far_d = 0;
    int best_dev = -1, n_version = 0, n_device = 0, n_variant = 0, n_key = 0, n_tuning = 0;
    const char *other_version = "";
    char bad_tuning[128] = "", applied[160], kept[160], saved[1024];
    pk_strlcpy(saved, pk_last_error(), sizeof saved); /* a bad entry's error is not the call's */
    const double limit = log(WISDOM_SIZE_FACTOR) * (1 + 1e-12);
    const int sized = size > 0 && isfinite(size);
    for (int i = 0; sized && i < ctx->wisdom.n; ++i) {
        const pk_wisdom_entry *e = &ctx->wisdom.e[i];
        if (strcmp(e->kernel, kc->name)) continue;
        if (strcmp(e->params, key)) { /* measured on another shape of the problem */
            ++n_key;
            continue;
        }
        if (strcmp(e->version, pk_version())) {
            if (!n_version++) other_version = e->version;
            continue;
        }
        const int dev = device_of(ctx, e);
        if (dev < 0) {
            ++n_device;
            continue;
        }
        if (pk_list_find(pk_kernel_variants(kc, e->backend), e->variant) < 0) {
            ++n_variant;
            continue;
        }
        pick->tuning = ctx->tuning;
        if (pk_tuning_overlay(&pick->tuning, kc->name, e->tuning, applied, sizeof applied, kept,
                              sizeof kept) != PK_OK) {
            if (!n_tuning++) pk_strlcpy(bad_tuning, pk_last_error(), sizeof bad_tuning);
            continue;
        }
        const double d = fabs(log(e->size_bytes / size));
        if (d > limit) {
            if (!far || d < far_d) far = e, far_d = d;
            continue;
        }
        /* nearest size first; at the same size, the fastest of the devices here */
        if (!best || d < best_d - 1e-9 || (d <= best_d + 1e-9 && e->seconds < best->seconds)) {
            best = e;
            best_d = d;
            best_dev = dev;
        }
    }
    pk_fail(PK_OK, "%s", saved);
    if (best) {
        pick->backend = best->backend;
        pick->device = best_dev;
        pk_strlcpy(pick->variant, best->variant, sizeof pick->variant);
        pick->tuning = ctx->tuning; /* checked above: cannot fail */
        (void)pk_tuning_overlay(&pick->tuning, kc->name, best->tuning, applied, sizeof applied,
                                kept, sizeof kept);
        pick->tuned = applied[0] != '\0';
        int n = snprintf(pick->says, sizeof pick->says, "wisdom: %s on %.100s, tuned %s, size %.40s",
                         best->variant, best->device_name, best->date, best->size_class);
        if (applied[0] && n > 0 && (size_t)n < sizeof pick->says)
            n += snprintf(pick->says + n, sizeof pick->says - (size_t)n,
                          ", tuning from wisdom: %s", applied);
        if (kept[0] && n > 0 && (size_t)n < sizeof pick->says)
            snprintf(pick->says + n, sizeof pick->says - (size_t)n,
                     ", tuning kept (set by the caller or the environment): %s", kept);
        return 1;
    }
    if (ctx->wisdom_note[0]) {
        pk_append_note(note, note_len, "wisdom: file ignored: %s", ctx->wisdom_note);
        return 0;
    }
    char why[256] = "";
    size_t w = 0;
    /* ", " between the parts: "; " separates the reason's own notes */
    if (n_version)
        w += (size_t)snprintf(why + w, sizeof why - w, "%d of library %.32s", n_version,
                              other_version);
    if (n_device)
        w += (size_t)snprintf(why + w, sizeof why - w, "%s%d of devices not here",
                              w ? ", " : "", n_device);
    if (n_variant)
        w += (size_t)snprintf(why + w, sizeof why - w, "%s%d of variants unknown here",
                              w ? ", " : "", n_variant);
    if (n_tuning && w < sizeof why)
        w += (size_t)snprintf(why + w, sizeof why - w, "%s%d of bad tuning (%.120s)",
                              w ? ", " : "", n_tuning, bad_tuning);
    if (n_key && w < sizeof why)
        snprintf(why + w, sizeof why - w, "%s%d of other shapes than '%.40s'", w ? ", " : "",
                 n_key, key);
    char far_text[128] = "";
    if (far)
        snprintf(far_text, sizeof far_text, "%snearest '%.40s' %.0fx %s", why[0] ? ", " : "",
                 far->size_class, exp(far_d), far->size_bytes > size ? "larger" : "smaller");
    if (why[0] || far_text[0])
        pk_append_note(note, note_len, "wisdom: none for %s at this size (%s%s%s)", kc->name,
                       why[0] ? "ignored: " : "", why, far_text);
    else
        pk_append_note(note, note_len, "wisdom: none for %s at this size", kc->name);
    return 0;
}
