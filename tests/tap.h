/* tap.h - a minimal TAP producer for the test programs (Automake's tap-driver.sh reads it).
 * Usage: tap_plan(n) or tap_skip_all("reason"); ok(cond, "name %d", i); tap_done(). */
#ifndef PK_TAP_H
#define PK_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n_ __attribute__((unused)) = 0, tap_failed_ = 0, tap_planned_ = -1;

static inline void tap_plan(int n) { tap_planned_ = n; printf("1..%d\n", n); fflush(stdout); }
static inline void tap_skip_all(const char *why) { printf("1..0 # SKIP %s\n", why); fflush(stdout); exit(0); }
static inline void tap_diag(const char *fmt, ...) {
    va_list ap; va_start(ap, fmt); printf("# "); vprintf(fmt, ap); printf("\n"); va_end(ap);
    fflush(stdout);
}
static inline int tap_ok_(int cond, const char *fmt, va_list ap) {
    ++tap_n_;
    if (!cond) ++tap_failed_;
    printf("%sok %d - ", cond ? "" : "not ", tap_n_);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    return cond;
}
static inline int ok(int cond, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt); int r = tap_ok_(cond, fmt, ap); va_end(ap); return r;
}
/* A test that cannot run here: reported as passed-with-SKIP, never silently passed. */
static inline void tap_skip(const char *why, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt); ++tap_n_;
    printf("ok %d - ", tap_n_); vprintf(fmt, ap); printf(" # SKIP %s\n", why);
    va_end(ap); fflush(stdout);
}
/* Closing: with no plan given, print it now ("done_testing"). Returns the exit code. */
static inline int tap_done(void) {
    if (tap_planned_ < 0) printf("1..%d\n", tap_n_);
    fflush(stdout);
    return tap_failed_ ? 1 : 0;
}
#endif
