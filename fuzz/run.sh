#!/bin/sh
# fuzz/run.sh - build the libFuzzer targets and run them (docs/RELIABILITY.md).
#
#     fuzz/run.sh [SECONDS] [TARGET...]      TARGET: npy cli json params wisdom (default: all)
#
# Builds portkern with clang, AddressSanitizer + UBSan and coverage instrumentation
# (configure --enable-sanitizers --enable-fuzzing) in $PK_FUZZ_BUILD (default
# ${TMPDIR:-/tmp}/portkern-fuzz-<uid>), then runs each target for SECONDS (default 60) at
# nice 19, one after the other, on a working corpus ($PK_FUZZ_BUILD/corpus-<target>) seeded
# from fuzz/corpus/<target>/ and with fuzz/<target>.dict.  Crashes, leaks and failed checks
# are written as $PK_FUZZ_BUILD/crash-<target>-*; to keep one as a regression test, copy it
# into fuzz/corpus/<target>/ (make check replays that directory).  Prints one line per
# target: executions, rate, corpus size, findings; exits 1 when anything was found.
# Installs clang and libFuzzer (Debian: clang libclang-rt-14-dev) when they are missing.
# PK_FUZZ_ARGS adds libFuzzer options (e.g. "-jobs=2 -workers=2").
set -u
srcdir=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-npy cli json params wisdom}
build=${PK_FUZZ_BUILD:-${TMPDIR:-/tmp}/portkern-fuzz-$(id -u)}
CC=${CC_FUZZ:-clang}

die() { echo "fuzz/run.sh: $*" >&2; exit 2; }
case $secs in *[!0-9]*|'') die "SECONDS must be a whole number, got '$secs'";; esac

# ---- clang with libFuzzer ---------------------------------------------------------------
probe_cc() {
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
        >"$build/probe.c" &&
        "$CC" -fsanitize=fuzzer,address -o "$build/probe" "$build/probe.c" >/dev/null 2>&1
}
mkdir -p "$build" || die "cannot create $build"
if ! probe_cc; then
    echo "fuzz/run.sh: $CC cannot build libFuzzer targets; installing clang and libclang-rt-14-dev"
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            clang libclang-rt-14-dev >/dev/null ||
        die "could not install clang and libclang-rt-14-dev"
    probe_cc || die "$CC still cannot link -fsanitize=fuzzer"
fi

# ---- build --------------------------------------------------------------------------------
if [ ! -x "$srcdir/configure" ]; then
    (cd "$srcdir" && autoreconf -fi) || die "autoreconf failed"
fi
cd "$build" || die "cannot enter $build"
if [ ! -f Makefile ] || [ "$srcdir/configure" -nt Makefile ]; then
    CC=$CC CFLAGS="-g -O1" "$srcdir/configure" --enable-sanitizers --enable-fuzzing \
        --without-cuda --without-opencl --disable-openmp >configure.log 2>&1 ||
        die "configure failed; see $build/configure.log"
fi
progs=
for t in $targets; do
    case $t in
    npy|cli|json|params|wisdom) progs="$progs fuzz/fuzz_$t";;
    *) die "unknown target '$t' (npy cli json params wisdom)";;
    esac
done
# shellcheck disable=SC2086
make -j"$(nproc 2>/dev/null || echo 2)" $progs >make.log 2>&1 || die "build failed; see $build/make.log"

# ---- run ----------------------------------------------------------------------------------
found=0
for t in $targets; do
    corpus=$build/corpus-$t
    mkdir -p "$corpus"
    log=$build/fuzz-$t.log
    rm -f "$build"/crash-"$t"-* "$build"/leak-"$t"-* "$build"/timeout-"$t"-* "$build"/oom-"$t"-*
    echo "fuzz_$t: ${secs} s, corpus $corpus + $srcdir/fuzz/corpus/$t ..."
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    nice -n 19 ./libtool --mode=execute "./fuzz/fuzz_$t" -max_total_time="$secs" \
        -dict="$srcdir/fuzz/$t.dict" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$build/" ${PK_FUZZ_ARGS:-} \
        "$corpus" "$srcdir/fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    ninputs=$(find "$corpus" -type f | wc -l)
    for a in "$build"/crash-* "$build"/leak-* "$build"/timeout-* "$build"/oom-*; do
        [ -f "$a" ] || continue
        mv "$a" "$build/$(basename "$a" | sed "s/^\([a-z]*\)-/\1-$t-/")"
    done
    nfind=$(find "$build" -maxdepth 1 -name "*-$t-*" -type f | wc -l)
    echo "fuzz_$t: ${execs:-?} executions in ${secs} s (${rate:-?}/s), ${cov:-cov: ?}, working corpus $ninputs inputs, findings $nfind (exit $rc)"
    if [ "$rc" -ne 0 ] || [ "$nfind" -ne 0 ]; then
        found=1
        grep -E 'ERROR|SUMMARY|check failed|exit status' "$log" | head -n 8
        echo "  log: $log"
    fi
done
exit $found
