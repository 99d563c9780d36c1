#!/bin/sh
# lsan-precise.sh - the OpenCL tests under LeakSanitizer with full stacks, in a
# --enable-sanitizers build directory (after `make check`):
#     sh SRCDIR/tests/lsan-precise.sh
# `make check` suppresses every leak whose (truncated) stack is inside libpocl or libLLVM
# (tests/lsan.supp), which would also hide an OpenCL object portkern forgot to release.  Here
# the slow unwinder gives whole stacks and tests/lsan-precise.supp suppresses only what PoCL's
# own worker threads allocate, so such a leak is reported.  About 6x slower than make check.
set -u
: "${top_builddir:=.}"
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$top_builddir" || exit 2
cold=$(mktemp -d "${TMPDIR:-/tmp}/pk-lsan.XXXXXX") || exit 2
trap 'rm -rf "$cold"' EXIT
top_srcdir=$srcdir
top_builddir=.
POCL_CACHE_DIR=$cold/pocl           # cold: PoCL compiles every kernel
PORTKERN_CACHE_DIR=$cold/portkern
ASAN_OPTIONS=fast_unwind_on_malloc=0:malloc_context_size=64:allocator_may_return_null=1
LSAN_OPTIONS=suppressions=$srcdir/tests/lsan-precise.supp:print_suppressions=0
export top_srcdir top_builddir POCL_CACHE_DIR PORTKERN_CACHE_DIR ASAN_OPTIONS LSAN_OPTIONS
unset PORTKERN_BACKEND PORTKERN_DEVICE
mkdir -p "$POCL_CACHE_DIR"
# Longest first (test_clcache and test_mf_opencl take 1.5-2 minutes each here).
progs="tests/test_clcache tests/test_mf_opencl tests/test_cv_opencl tests/test_d3_opencl
       tests/test_faults tests/test_threads tests/test_probe"

# One program; prints its PASS/FAIL line (and the leak summary) in one write.
check_one() {
    p=$1
    [ -x "$p" ] || { echo "SKIP: $p (not built)"; return 0; }
    name=$(basename "$p")
    # A crash of LeakSanitizer's own tracer (not a leak report) is run again, twice at most,
    # and said so: tests/retry-tool-crash.sh, as in make check.
    sh "$srcdir/tests/retry-tool-crash.sh" ./libtool --mode=execute "./$p" \
        >"tests/lsan-precise-$name.tap" 2>"tests/lsan-precise-$name.log"
    rc=$?
    notes=$(grep '^# NOTE' "tests/lsan-precise-$name.tap")
    bad=$(grep -c '^not ok' "tests/lsan-precise-$name.tap")
    if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ]; then
        line="PASS: $p"
    else
        line="FAIL: $p: exit $rc, $bad not ok; see tests/lsan-precise-$name.log
$(grep -E 'SUMMARY|leak of' "tests/lsan-precise-$name.log" | head -n 5)"
    fi
    [ -n "$notes" ] && line="$notes
$line"
    printf '%s\n' "$line"
}

if [ "${1:-}" = --one ]; then
    check_one "$2"
    exit 0
fi
[ $# -gt 0 ] && progs=$*

# PK_LSAN_JOBS programs at once (default: the number of CPUs), each with its own cold cache.
jobs=${PK_LSAN_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) jobs=1;; esac
results=$cold/results
# shellcheck disable=SC2086
printf '%s\n' $progs | xargs -P "$jobs" -n 1 sh "$srcdir/tests/lsan-precise.sh" --one | tee "$results"
! grep -q '^FAIL: ' "$results"
