#!/bin/sh
# test_cli_laplace2d.sh - TAP test of 'portkern run/gen/bench laplace2d' (README.md's contract,
# exit codes included).  Runs from the build tree through libtool's wrappers; tests/local.mk
# exports top_builddir and POCL_CACHE_DIR.  Small sizes keep it quick; OpenMP is assumed.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli-lp
echo "1..37"

# lp_line_ok FILE L COUNT LAYOUT NW: one JSON line of a laplace2d run with the contract's keys,
# verified equal.
lp_line_ok() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$@" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["kernel", "backend", "device", "variant", "seconds", "kernel_seconds",
        "transfer_seconds", "layout_seconds", "ms", "gflop_per_s", "gb_per_s", "bytes_model",
        "flops_model", "reason", "verify", "laplace2d"]
missing = [k for k in keys if k not in d]
missing += ["laplace2d." + k for k in ["l", "count", "sigma", "layout", "nw", "verify_atol"]
            if k not in d.get("laplace2d", {})]
if missing:
    sys.exit("missing keys: %s" % missing)
v = d["verify"]
if not (v["equal"] is True and v["num_failed"] == 0 and v["first_fail"] is None):
    sys.exit("verify: %s" % v)
want = (int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
lp = d["laplace2d"]
if d["kernel"] != "laplace2d" or (lp["l"], lp["count"], lp["layout"], lp["nw"]) != want:
    sys.exit("kernel, sizes or layout: %s" % d)
if d["bytes"] != 8.0 * lp["l"] ** 2 * lp["count"]:
    sys.exit("bytes: %s" % d["bytes"])
EOF
    else
        for k in kernel backend device variant l count sigma layout nw seconds kernel_seconds \
            layout_seconds gb_per_s bytes_model reason verify; do
            grep -q "\"$k\":" "$1" || return 1
        done
        grep -q '"equal": true' "$1" && grep -q "\"l\": $2," "$1" &&
            grep -q "\"layout\": \"$4\"" "$1"
    fi
}

# ---- help -------------------------------------------------------------------------------
expect 0 "run laplace2d --help" "$PK" run laplace2d --help
grep -q -- '--layout' "$T/out" && grep -q -- '--sigma' "$T/out" && grep -q 'hvfo' "$T/out"
result $? "run --help documents --layout, --sigma and hvfo"
expect 0 "gen laplace2d --help" "$PK" gen laplace2d --help

# ---- gen / run --in / --out / --verify ----------------------------------------------------
expect 0 "gen laplace2d --l 48 --count 6 --sigma 0.3 --seed 3" \
    "$PK" gen laplace2d --out "$T/lp" --l 48 --count 6 --sigma 0.3 --seed 3
[ -s "$T/lp/phi.npy" ] && grep -q '"kernel": "laplace2d"' "$T/lp/params.json" &&
    grep -q '"l": 48' "$T/lp/params.json"
result $? "gen writes phi.npy and a params.json naming laplace2d, l 48"
expect 0 "run laplace2d --backend serial --in --out --verify (auto layout: hvfo)" \
    "$PK" run laplace2d --backend serial --in "$T/lp" --out "$T/lp-serial" --verify
lp_line_ok "$T/out" 48 6 hvfo 16
result $? "serial run line: l, count from params.json, hvfo nw 16, verified, 8 B per site"
expect 0 "run laplace2d --backend openmp --variant omp --layout lexi --verify --out" \
    "$PK" run laplace2d --backend openmp --variant omp --threads 2 --layout lexi --in "$T/lp" \
    --out "$T/lp-omp" --verify
lp_line_ok "$T/out" 48 6 lexi 1
result $? "openmp omp lexi run line verified"
expect 0 "diff --norm of the serial and openmp results: equal within 1e-6" \
    "$PK" diff "$T/lp-serial/phi.npy" "$T/lp-omp/phi.npy" --norm --rtol 1e-6
for v in omp-simd omp-tb; do
    expect 0 "run laplace2d --variant $v --nw 8 --verify" \
        "$PK" run laplace2d --variant $v --in "$T/lp" --nw 8 --layout hvfo --verify
    lp_line_ok "$T/out" 48 6 hvfo 8
    result $? "$v hvfo nw 8 run line verified"
done
expect 0 "run laplace2d odd l = 15, --layout hvfo --nw 5 --verify" \
    "$PK" run laplace2d --l 15 --count 4 --layout hvfo --nw 5 --verify
lp_line_ok "$T/out" 15 4 hvfo 5
result $? "l = 15 with nw = 5 runs hvfo, verified"
expect 0 "run laplace2d odd l = 15 without --layout (auto falls back to lexi)" \
    "$PK" run laplace2d --l 15 --count 4 --verify
lp_line_ok "$T/out" 15 4 lexi 1
result $? "auto layout on l = 15 is lexi, verified"
if "$PK" run laplace2d --backend opencl --l 8 --count 1 >/dev/null 2>&1; then
    expect 0 "run laplace2d --backend opencl --in --verify" \
        "$PK" run laplace2d --backend opencl --in "$T/lp" --verify
    lp_line_ok "$T/out" 48 6 hvfo 16
    result $? "opencl run line verified"
else
    skip "run laplace2d --backend opencl" "no OpenCL device"
    skip "opencl run line verified" "no OpenCL device"
fi

# ---- bad input: exit 2 ------------------------------------------------------------------
expect 2 "hvfo with l = 15 and the default nw (16): exit 2" \
    "$PK" run laplace2d --l 15 --layout hvfo
grep -q 'multiple of nw' "$T/err"
result $? "the message says l is not a multiple of nw"
expect 2 "--layout vfo: exit 2" "$PK" run laplace2d --l 16 --layout vfo
expect 2 "--sigma 0: exit 2" "$PK" run laplace2d --l 16 --sigma 0
expect 2 "--sigma nan: exit 2" "$PK" run laplace2d --l 16 --sigma nan
expect 2 "--count -1: exit 2" "$PK" run laplace2d --l 16 --count -1
expect 2 "--l 0: exit 2" "$PK" run laplace2d --l 0
expect 2 "unknown option: exit 2" "$PK" run laplace2d --bogus 1
expect 2 "unknown variant: exit 2" "$PK" run laplace2d --l 16 --variant warp
mkdir -p "$T/bad1" "$T/bad2"
npy_file "$T/bad1/phi.npy" '<f8' '(4, 4)' 128
expect 2 "phi.npy float64: exit 2" "$PK" run laplace2d --in "$T/bad1"
grep -q 'float32' "$T/err"
result $? "the message names the expected dtype"
npy_file "$T/bad2/phi.npy" '<f4' '(4, 5)' 80
expect 2 "phi.npy not square [4, 5]: exit 2" "$PK" run laplace2d --in "$T/bad2"
expect 2 "--in with --l disagreeing with phi.npy: exit 2" "$PK" run laplace2d --in "$T/lp" --l 32
expect 2 "gen without --out: exit 2" "$PK" gen laplace2d --l 16

# ---- bench ------------------------------------------------------------------------------
expect 0 "bench --kernels laplace2d --size small --backends serial,openmp --json" \
    "$PK" bench --kernels laplace2d --size small --backends serial,openmp --reps 1 \
    --json "$T/bench.json"
grep -q 'omp-simd' "$T/out" && grep -q 'hvfo/16' "$T/out" && grep -q 'layouts at l' "$T/out" &&
    grep -q 'byte model: 8 B per site' "$T/out"
result $? "bench table: variants x layouts, the byte model, the layout comparison"
if [ $have_py = yes ]; then
    python3 - "$T/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["kernel"] == "laplace2d"]
lay = {(r["variant"], r["laplace2d"]["layout"]) for r in rows if r["status"] == "ok"}
assert ("omp-simd", "hvfo") in lay and ("omp", "lexi") in lay and ("serial", "hvfo") in lay, lay
assert all(r["verified"] for r in rows if r["status"] == "ok"), rows
assert all(r["bytes"] == 8 * r["laplace2d"]["l"] ** 2 * r["laplace2d"]["count"]
           for r in rows if r["status"] == "ok"), rows
EOF
    result $? "bench JSON: laplace2d rows for every variant x layout, verified, the byte model"
else
    skip "bench JSON" "no python3"
fi
exit $((fails != 0))
