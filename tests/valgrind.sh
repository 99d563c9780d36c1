#!/bin/sh
# valgrind.sh - valgrind memcheck on the serial and OpenMP tests, from a build tree:
#     make check-valgrind            (after `make check` built the test programs)
#     sh SRCDIR/tests/valgrind.sh    (in the build directory)
# Each program runs under memcheck with --error-exitcode: any invalid read or write, use of an
# uninitialised value, invalid free, or definite/indirect leak fails it; its TAP output must
# have no "not ok".  The OpenCL and CUDA backends are kept out (OCL_ICD_VENDORS names an empty
# directory; no GPU driver here): PoCL's LLVM and the CUDA runtime are not what this checks.
# Logs: tests/valgrind-<name>.log.  Extra arguments replace the list of programs.
set -u
: "${top_builddir:=.}"
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$top_builddir" || exit 2
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed (Debian: apt-get install valgrind)"
    exit 77
fi
top_srcdir=$srcdir
top_builddir=.
noicd=$(mktemp -d "${TMPDIR:-/tmp}/pk-noicd.XXXXXX") || exit 2
trap 'rm -rf "$noicd"' EXIT
POCL_CACHE_DIR=$PWD/tests/pocl-cache
PORTKERN_CACHE_DIR=off
OCL_ICD_VENDORS=$noicd
OPENCL_VENDOR_PATH=$noicd
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export top_srcdir top_builddir POCL_CACHE_DIR PORTKERN_CACHE_DIR OCL_ICD_VENDORS \
    OPENCL_VENDOR_PATH OMP_NUM_THREADS
unset PORTKERN_BACKEND PORTKERN_DEVICE PORTKERN_THREADS

# Longest first (test_d3_openmp, test_cv_openmp and test_mf_serial take 4 minutes each under
# memcheck on a 2-core machine), so that the parallel runs below end together.
progs="tests/test_d3_openmp tests/test_cv_openmp tests/test_mf_serial tests/test_mf_openmp
       tests/test_cv_serial tests/test_ds_openmp tests/test_s3_serial tests/test_ds_serial
       tests/test_wisdom tests/test_d3_serial tests/test_threads tests/test_lp_serial
       tests/test_errors tests/test_faults tests/test_npy tests/test_differ tests/test_badinput
       fuzz/replay_npy fuzz/replay_cli fuzz/replay_json fuzz/replay_wisdom"

# One program under memcheck; prints its PASS/FAIL line (and the first errors) in one write.
check_one() {
    p=$1
    if [ ! -x "$p" ]; then
        echo "SKIP: $p (not built; run make check first)"
        return 0
    fi
    name=$(basename "$p")
    log=tests/valgrind-$name.log
    start=$(date +%s)
    ./libtool --mode=execute valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
        --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        --num-callers=30 --suppressions="$srcdir/tests/valgrind.supp" --log-file="$log" \
        "./$p" >"tests/valgrind-$name.tap" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    n=$(grep -c '^ok' "tests/valgrind-$name.tap")
    bad=$(grep -c '^not ok' "tests/valgrind-$name.tap")
    errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ]; then
        line="PASS: $p: $n TAP points ok, ${errs:-?} memcheck errors (${secs} s)"
    else
        line="FAIL: $p: exit $rc, $bad TAP points not ok, ${errs:-?} memcheck errors (${secs} s); see $log
$(grep -E '^==[0-9]+== (Invalid|Conditional|Use of|Mismatched|[0-9,]+ bytes in)' "$log" | head -n 10)"
    fi
    printf '%s\n' "$line"
}

if [ "${1:-}" = --one ]; then
    check_one "$2"
    exit 0
fi
[ $# -gt 0 ] && progs=$*

# memcheck runs a program's threads one at a time: PK_VALGRIND_JOBS programs at once (default:
# the number of CPUs) use the machine; each prints its result line when it ends.
jobs=${PK_VALGRIND_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) jobs=1;; esac
results=$(mktemp "${TMPDIR:-/tmp}/pk-valgrind.XXXXXX") || exit 2
trap 'rm -rf "$noicd" "$results"' EXIT
# shellcheck disable=SC2086
printf '%s\n' $progs | xargs -P "$jobs" -n 1 sh "$srcdir/tests/valgrind.sh" --one | tee "$results"
total=$(grep -c '^\(PASS\|FAIL\): ' "$results")
failed=$(grep -c '^FAIL: ' "$results")
points=$(sed -n 's/^PASS: [^:]*: \([0-9]*\) TAP points ok.*/\1/p' "$results" | awk '{s += $1} END {print s + 0}')
echo "valgrind memcheck: $total programs, $points TAP points, $failed failed"
[ "$failed" -eq 0 ]
