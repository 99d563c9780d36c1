#!/bin/sh
# gpu-check.sh - everything a GPU machine should run, in one command, from a build tree:
#
#     sh tools/gpu-check.sh [-o LOGDIR] [-j N] BUILD_DIR [STEP...]
#
# STEPs (default: all, in this order):
#   probe      nvidia-smi, portkern-probe (devices, measured bandwidths, the host link)
#   check      make check (-j N), every suite; TAP totals and every failing point
#   memcheck   compute-sanitizer --tool memcheck over every CUDA suite (tests/test_*_cuda)
#   racecheck  compute-sanitizer --tool racecheck over the shared-memory kernels' suites
#              (diffusion3d, conv2d, magicfilter3d, grid)
#   bench      portkern bench --size paper and large on cuda and opencl (JSON rows kept), with
#              --calls 3: each row's first and repeated one-shot call against the plan
#   grid       the full el82-70 data set generated once, then one `portkern run grid` call
#              per CUDA and OpenCL variant: wall, kernel, transfers, setup
# Every log goes to LOGDIR (default BUILD_DIR/gpu-check-<date>); the last lines printed are
# one summary table (also LOGDIR/summary.txt).  Exit status 1 when a step failed.
#
# The build tree is made elsewhere (autotools are not needed here) and unpacked at the same
# absolute path; OpenCL on NVIDIA needs an ICD file: set OCL_ICD_VENDORS to a directory with
# nvidia.icd (docs/PERFORMANCE.md, "GPU machines").  On an H100 the default steps take about
# 10 minutes; split them across calls (`... BUILD check memcheck`, `... BUILD bench grid`)
# when one call has less time than that.
set -u
logdir= jobs=$(nproc 2>/dev/null || echo 4)
while [ $# -gt 0 ]; do
    case $1 in
        -o) logdir=$2; shift 2;;
        -j) jobs=$2; shift 2;;
        -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        -*) echo "gpu-check.sh: unknown option $1" >&2; exit 2;;
        *) break;;
    esac
done
[ $# -ge 1 ] || { echo "usage: sh tools/gpu-check.sh [-o LOGDIR] [-j N] BUILD_DIR [STEP...]" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu-check.sh: no build directory $1" >&2; exit 2; }
shift
steps=${*:-probe check memcheck racecheck bench grid}
for s in $steps; do
    case $s in probe|check|memcheck|racecheck|bench|grid) ;;
        *) echo "gpu-check.sh: unknown step '$s' (probe check memcheck racecheck bench grid)" >&2
           exit 2;;
    esac
done
[ -x "$build/tools/portkern" ] || { echo "gpu-check.sh: $build/tools/portkern not built" >&2; exit 2; }
logdir=${logdir:-$build/gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir" || exit 2
summary=$logdir/summary.txt
: >"$summary"
failed=0
PK=$build/tools/portkern
# Tests and CLI runs never touch the user's caches.
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$logdir/pocl-cache}
PORTKERN_CACHE_DIR=${PORTKERN_CACHE_DIR:-$logdir/portkern-cache}
export POCL_CACHE_DIR PORTKERN_CACHE_DIR
mkdir -p "$POCL_CACHE_DIR"

# row STEP RESULT DETAIL: one line of the summary table
row() { printf '%-10s %-6s %s\n' "$1" "$2" "$3" >>"$summary"; }
now() { date +%s; }
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

step_probe() {
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi >"$logdir/nvidia-smi.txt" 2>&1
        gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
    else
        gpu="no nvidia-smi"
    fi
    "$build/tools/portkern-probe" >"$logdir/probe.txt" 2>&1
    rc=$?
    cuda=$(grep '^cuda: ' "$logdir/probe.txt" | head -n 1)
    row probe "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$gpu; ${cuda:-cuda: ?}"
    [ $rc -eq 0 ] || failed=1
}

step_check() {
    t0=$(now)
    make -C "$build" -j"$jobs" check >"$logdir/check.log" 2>&1
    rc=$?
    tot=$(sed -n 's/^# TOTAL: *//p' "$logdir/check.log" | tail -n 1)
    pass=$(sed -n 's/^# PASS: *//p' "$logdir/check.log" | tail -n 1)
    skip=$(sed -n 's/^# SKIP: *//p' "$logdir/check.log" | tail -n 1)
    fail=$(sed -n 's/^# FAIL: *//p' "$logdir/check.log" | tail -n 1)
    err=$(sed -n 's/^# ERROR: *//p' "$logdir/check.log" | tail -n 1)
    grep -h '^\(FAIL\|ERROR\):' "$build"/tests/*.log "$build"/fuzz/*.log 2>/dev/null >"$logdir/check-failures.txt"
    row check "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
        "make check: ${tot:-?} points, ${pass:-?} pass, ${skip:-?} skip, ${fail:-?} fail, ${err:-?} error ($(( $(now) - t0 )) s; failures: check-failures.txt)"
    [ $rc -eq 0 ] || failed=1
}

# sanitize TOOL SUITE...: each suite under compute-sanitizer, its own log
sanitize() {
    tool=$1
    shift
    if [ ! -x "$sanitizer" ]; then
        row "$tool" SKIP "compute-sanitizer not found"
        return
    fi
    t0=$(now) bad= n=0
    for t in "$@"; do
        [ -x "$build/tests/$t" ] || continue
        n=$((n + 1))
        log=$logdir/$tool-$t.log
        (cd "$build" && top_srcdir=${top_srcdir:-$(sed -n 's/^abs_top_srcdir = //p' Makefile)} \
            top_builddir=. ./libtool --mode=execute "$sanitizer" --tool "$tool" \
            --error-exitcode 99 --print-limit 20 "./tests/$t") >"$log" 2>&1
        rc=$?
        summ=$(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY)' "$log" | tail -n 1)
        notok=$(grep -c '^not ok' "$log")
        if [ $rc -ne 0 ] || [ "$notok" -ne 0 ]; then
            bad="$bad $t(exit $rc, $notok not ok)"
        fi
        echo "$t: exit $rc, $notok not ok; ${summ#========= }" >>"$logdir/$tool.txt"
    done
    if [ $n -eq 0 ]; then
        row "$tool" SKIP "no CUDA suite built"
    elif [ -z "$bad" ]; then
        row "$tool" ok "$n suites clean ($(( $(now) - t0 )) s; $tool.txt)"
    else
        row "$tool" FAIL "$n suites;$bad ($tool.txt)"
        failed=1
    fi
}

# The rows of a bench JSON file: kernel, backend, variant and the figures everyone reports.
bench_rows() {
    python3 - "$1" <<'EOF' 2>/dev/null
import json, sys
try:
    rows = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no JSON rows: %s)" % e); sys.exit(0)
if isinstance(rows, dict): rows = rows.get("rows", [])
def num(v, fmt):
    return fmt % v if isinstance(v, (int, float)) else "?"
for r in rows:
    t = r.get("kernel_seconds", r.get("seconds"))
    ratio = r.get("roof_fraction", r.get("bw_ratio", r.get("ratio")))
    print("  %-14s %-7s %-14s %-8s %10s s  %8s GB/s  roof %5s  call %s / %s s  verified %s" % (
        r.get("kernel"), r.get("backend"), r.get("variant"), r.get("case") or "",
        num(t, "%.4g"), num(r.get("gb_per_s"), "%.1f"), num(ratio, "%.2f"),
        num(r.get("call_first_seconds"), "%.3g"), num(r.get("call_repeat_seconds"), "%.3g"),
        r.get("verified", r.get("status", "?"))))
EOF
}

step_bench() {
    for size in paper large; do
        t0=$(now)
        "$PK" bench --size "$size" --backends cuda,opencl --calls 3 \
            --json "$logdir/bench-$size.json" \
            >"$logdir/bench-$size.txt" 2>&1
        rc=$?
        row "bench" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
            "--size $size --backends cuda,opencl: exit $rc ($(( $(now) - t0 )) s; bench-$size.txt)"
        bench_rows "$logdir/bench-$size.json" >>"$summary"
        [ $rc -eq 0 ] || failed=1
    done
}

step_grid() {
    data=$logdir/el82-70
    t0=$(now)
    if ! "$PK" gen grid --dataset el82-70 --out "$data" >"$logdir/grid-gen.txt" 2>&1; then
        row grid FAIL "portkern gen grid --dataset el82-70 failed (grid-gen.txt)"
        failed=1
        return
    fi
    row grid ok "el82-70 generated ($(( $(now) - t0 )) s); one call per variant:"
    for bv in cuda:cuda-atomic cuda:cuda-tiled cuda:hybrid opencl:opencl-tiled opencl:opencl-atomic; do
        b=${bv%%:*} v=${bv#*:}
        out=$logdir/grid-$v.json
        "$PK" run grid --in "$data" --backend "$b" --variant "$v" >"$out" 2>"$logdir/grid-$v.err"
        rc=$?
        line=$(python3 - "$out" <<'EOF' 2>/dev/null
import json, sys
r = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
print("wall %.1f ms, kernel %.1f ms, transfers %.1f ms, setup %.1f ms" % (
    1e3 * r["seconds"], 1e3 * r["kernel_seconds"], 1e3 * r.get("transfer_seconds", 0),
    1e3 * r.get("setup_seconds", 0)))
EOF
)
        if [ $rc -eq 0 ]; then
            row "" ok "  $b $v: ${line:-see grid-$v.json}"
        else
            row "" FAIL "  $b $v: exit $rc: $(tail -n 1 "$logdir/grid-$v.err")"
            failed=1
        fi
    done
    rm -rf "$data"
}

for s in $steps; do
    echo "gpu-check: $s ..."
    case $s in
        probe) step_probe;;
        check) step_check;;
        memcheck) sanitize memcheck test_d3_cuda test_cv_cuda test_mf_cuda test_gr_cuda \
                      test_lp_cuda test_s3_cuda test_ds_cuda;;
        racecheck) sanitize racecheck test_d3_cuda test_cv_cuda test_mf_cuda test_gr_cuda;;
        bench) step_bench;;
        grid) step_grid;;
    esac
done
echo
echo "== gpu-check summary (logs in $logdir) =="
cat "$summary"
exit $failed
