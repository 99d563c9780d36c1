#!/bin/sh
# test_cli_su3.sh - TAP test of 'portkern run/gen/bench su3' (README.md's command-line
# contract, docs/KERNELS.md section 4b): gen, run --in/--out/--verify on every layout, the JSON
# line, params.json, exit codes for bad options and bad files, and a bench on a small
# lattice.  Runs from the build tree; tests/local.mk exports top_builddir and POCL_CACHE_DIR.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli-su3
echo "1..34"

# s3_line_ok FILE LAYOUT NV: one JSON line of an su3 run with the contract's keys, verified.
s3_line_ok() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["kernel", "backend", "device", "variant", "seconds", "kernel_seconds",
        "transfer_seconds", "layout_seconds", "ms", "gflop_per_s", "gb_per_s", "flops", "bytes",
        "bytes_model", "reason", "verify", "verify_rule", "su3"]
missing = [k for k in keys if k not in d]
missing += ["su3." + k for k in ["layout", "nw", "nv", "layout_bytes_per_site"]
            if k not in d.get("su3", {})]
if missing:
    sys.exit("missing keys: %s" % missing)
v = d["verify"]
if not (v["equal"] is True and v["num_failed"] == 0 and v["first_fail"] is None):
    sys.exit("verify: %s" % v)
if d["kernel"] != "su3" or d["su3"]["layout"] != sys.argv[2] or d["su3"]["nv"] != int(sys.argv[3]):
    sys.exit("kernel, layout or nv: %s" % d)
if d["bytes"] != 528 * d["su3"]["nv"] or d["flops"] != 264 * d["su3"]["nv"]:
    sys.exit("byte or flop model: %s" % d)
EOF
    else
        grep -q '"kernel": "su3"' "$1" && grep -q "\"layout\": \"$2\"" "$1" &&
            grep -q "\"nv\": $3," "$1" && grep -q '"equal": true' "$1"
    fi
}

# ---- help, gen -------------------------------------------------------------------------------
expect 0 "run su3 --help" "$PK" run su3 --help
grep -q 'recon12' "$T/out" && grep -q 'chi.npy' "$T/out"
result $? "run su3 --help names the layouts and the files"
expect 0 "gen su3 --help" "$PK" gen su3 --help
expect 0 "gen su3 --out --nv 1001 --seed 3" "$PK" gen su3 --out "$T/g" --nv 1001 --seed 3
[ "$(wc -c <"$T/g/u.npy")" -eq $((128 + 1001 * 144)) ] &&
    [ "$(wc -c <"$T/g/psi.npy")" -eq $((128 + 1001 * 192)) ] &&
    grep -q '"kernel": "su3"' "$T/g/params.json" && grep -q '"nv": 1001' "$T/g/params.json"
result $? "gen writes u.npy (complex128 [1001][3][3]), psi.npy ([1001][3][4]) and params.json"
expect 0 "gen su3 again with the same seed" "$PK" gen su3 --out "$T/g2" --nv 1001 --seed 3
cmp -s "$T/g/u.npy" "$T/g2/u.npy" && cmp -s "$T/g/psi.npy" "$T/g2/psi.npy"
result $? "the same seed gives the same files"
expect 0 "gen su3 with another seed" "$PK" gen su3 --out "$T/g3" --nv 1001 --seed 4
! cmp -s "$T/g/u.npy" "$T/g3/u.npy"
result $? "another seed gives other links"

# ---- run: every layout, serial and openmp, from the generated files --------------------------
for layout in aos short padded vfo hvfo recon12; do
    expect 0 "run su3 --in --layout $layout --verify (openmp)" \
        "$PK" run su3 --backend openmp --in "$T/g" --layout $layout --verify --out "$T/o-$layout"
    s3_line_ok "$T/out" $layout 1001 && [ -s "$T/o-$layout/chi.npy" ]
    result $? "su3 $layout: the JSON line is complete and verified, chi.npy written"
done
expect 0 "run su3 --backend serial --in --out --verify" \
    "$PK" run su3 --backend serial --in "$T/g" --layout aos --out "$T/o-serial" --verify
# (norm-wise: an element made small by cancellation has a large relative error of its own)
expect 0 "diff --norm of the serial aos and openmp hvfo chi: equal within 1e-14" \
    "$PK" diff "$T/o-serial/chi.npy" "$T/o-hvfo/chi.npy" --rtol 1e-14 --norm
expect 0 "run su3 --nv 37 --nw 3 --layout hvfo --verify (generated data)" \
    "$PK" run su3 --nv 37 --nw 3 --layout hvfo --verify

# ---- bad input -------------------------------------------------------------------------------
expect 2 "run su3 --layout soa: exit 2" "$PK" run su3 --nv 8 --layout soa
expect 2 "run su3 --nv 0: exit 2" "$PK" run su3 --nv 0
expect 2 "run su3 --nw 65: exit 2" "$PK" run su3 --nv 8 --layout hvfo --nw 65
expect 2 "run su3 --in with --nv disagreeing with u.npy: exit 2" \
    "$PK" run su3 --in "$T/g" --nv 1000
mkdir -p "$T/bad"
npy_file "$T/bad/u.npy" '<f8' '(4, 3, 3)' 288
npy_file "$T/bad/psi.npy" '<c16' '(4, 3, 4)' 768
expect 2 "run su3 --in with a float64 u.npy: exit 2" "$PK" run su3 --in "$T/bad"
grep -q "complex128" "$T/err"
result $? "the message names the expected dtype"
npy_file "$T/bad/u.npy" '<c16' '(4, 3, 3)' 576
npy_file "$T/bad/psi.npy" '<c16' '(5, 3, 4)' 960
expect 2 "run su3 --in with psi.npy of another nv: exit 2" "$PK" run su3 --in "$T/bad"

# ---- bench -----------------------------------------------------------------------------------
expect 0 "bench --kernels su3 --size small --backends serial,openmp --json" \
    "$PK" bench --kernels su3 --size small --backends serial,openmp --reps 1 --json "$T/b.json"
grep -q 'layout table' "$T/out" && grep -q 'omp-simd' "$T/out" && grep -q 'hvfo' "$T/out" &&
    grep -q '528 B per site' "$T/out"
result $? "bench prints every layout, the byte model and the layout table"
if [ $have_py = yes ]; then
    python3 - "$T/b.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r.get("kernel") == "su3"]
# serial: 6 layouts, openmp: 2 variants x 6 layouts
if len(rows) != 18 or not all(r["verified"] for r in rows):
    sys.exit("rows: %d, unverified: %s" % (len(rows), [r for r in rows if not r["verified"]]))
if any(r["bytes"] != 528 * r["su3"]["nv"] for r in rows):
    sys.exit("byte model: %s" % rows[0])
EOF
    result $? "bench --json has 18 verified su3 rows and the byte model"
else
    skip "bench --json rows" "no python3"
fi
[ $fails -eq 0 ]
