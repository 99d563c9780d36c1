#!/bin/sh
# test_cli_dslash.sh - TAP test of 'portkern run/gen/bench dslash': the contract of README.md
# (one JSON line, --verify, --in/--out with params.json, exit codes 0/1/2).  Small lattices;
# OpenMP is assumed built.  tests/local.mk exports top_builddir and POCL_CACHE_DIR.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli-dslash
unset PORTKERN_DS_ISA
echo "1..35"

# 1-3: run with generated data, every backend's default, verified
expect 0 "run dslash 3x5x2x7 --verify (auto backend)" \
    "$PK" run dslash --dims 3,5,2,7 --verify
json_check "$T/out" dslash 'd["kernel"] == "dslash" and d["verify"]["equal"] and d["verify"]["mode"] == "norm" and d["dslash"]["volume"] == 210 and d["flops"] == 1320 * 210 and d["bytes"] == 3072 * 210 and "gflop_per_s" in d and "gb_per_s" in d'
result $? "run JSON line: kernel, norm verify, volume, flops = 1320 V, bytes = 3072 V"
expect 0 "run dslash --recon12 --verify on openmp omp-vnode" \
    "$PK" run dslash --x 8 --y 3 --z 2 --t 8 --backend openmp --variant omp-vnode --recon12 --verify
json_check "$T/out" dslash 'd["dslash"]["recon12"] and d["bytes"] == 2688 * 384 and d["variant"] == "omp-vnode" and " lanes along " in d["reason"]'
result $? "recon12 run: bytes = 2688 V, lanes named in the reason"
for v in serial omp opencl; do
    be=serial
    [ $v = omp ] && be=openmp
    [ $v = opencl ] && be=opencl
    if [ $be = opencl ] && ! "$PK" run dslash --dims 1,1,1,1 --backend opencl >/dev/null 2>&1; then
        skip "run dslash --variant $v --verify" "no usable OpenCL device"
        continue
    fi
    expect 0 "run dslash --variant $v --verify on 1x2x1x3 (extents 1 and 2)" \
        "$PK" run dslash --dims 1,2,1,3 --backend $be --variant $v --verify --kappa 0.2
done

# gen, then run --in with params.json, --out chi.npy
expect 0 "gen dslash --dims 3,5,2,7 --seed 9 --kappa 0.15 --recon12" \
    "$PK" gen dslash --out "$T/in" --dims 3,5,2,7 --seed 9 --kappa 0.15 --recon12
test -s "$T/in/u.npy" && test -s "$T/in/psi.npy" && test -s "$T/in/params.json"
result $? "gen wrote u.npy, psi.npy and params.json"
if [ $have_py = yes ]; then
    python3 - "$T/in/params.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["kernel"] == "dslash" and (d["x"], d["y"], d["z"], d["t"]) == (3, 5, 2, 7) and d["kappa"] == 0.15 and d["recon12"] is True and d["seed"] == 9 else 1)
EOF
    result $? "params.json: x y z t, kappa, recon12, seed"
else
    skip "params.json contents" "no python3"
fi
expect 0 "run dslash --in DIR --out DIR2 --verify (params.json read)" \
    "$PK" run dslash --in "$T/in" --out "$T/o1" --verify
json_check "$T/out" dslash 'd["dslash"]["kappa"] == 0.15 and d["dslash"]["recon12"] and (d["dslash"]["x"], d["dslash"]["y"], d["dslash"]["z"], d["dslash"]["t"]) == (3, 5, 2, 7) and d["layout_seconds"] > 0'
result $? "run --in: kappa, recon12 and extents from params.json, layout_seconds > 0"
test -s "$T/o1/chi.npy"
result $? "run --out wrote chi.npy"
expect 0 "run dslash with the same seed generated (no --in) --out DIR3" \
    "$PK" run dslash --dims 3,5,2,7 --seed 9 --kappa 0.15 --recon12 --backend serial --out "$T/o2"
cmp -s "$T/o1/chi.npy" "$T/o2/chi.npy" || "$PK" diff "$T/o1/chi.npy" "$T/o2/chi.npy" --norm --rtol 1e-12 >/dev/null
result $? "gen + run --in and run --seed give the same chi"
expect 0 "run --in with a matching --x" "$PK" run dslash --in "$T/in" --x 3 --backend serial
expect 0 "run --in --no-recon12 overrides params.json" \
    "$PK" run dslash --in "$T/in" --no-recon12 --backend serial
json_check "$T/out" dslash 'd["dslash"]["recon12"] is False'
result $? "--no-recon12 in the JSON line"

# bad input: exit 2
expect 2 "run --in with a contradicting --x -> 2" "$PK" run dslash --in "$T/in" --x 4
mkdir -p "$T/bad" && cp "$T/in/psi.npy" "$T/bad/psi.npy" && cp "$T/in/psi.npy" "$T/bad/u.npy"
expect 2 "run --in with u.npy of the wrong shape -> 2" "$PK" run dslash --in "$T/bad"
mkdir -p "$T/bad2" && cp "$T/in/u.npy" "$T/bad2/psi.npy" && cp "$T/in/u.npy" "$T/bad2/u.npy"
expect 2 "run --in with psi.npy of the wrong shape -> 2" "$PK" run dslash --in "$T/bad2"
expect 2 "run --in a directory without psi.npy -> 2" "$PK" run dslash --in "$T/nothing"
expect 2 "--kappa 0 -> 2" "$PK" run dslash --dims 2,2,2,2 --kappa 0
expect 2 "--kappa nan -> 2" "$PK" run dslash --dims 2,2,2,2 --kappa nan
expect 2 "--dims 2,2,2 -> 2" "$PK" run dslash --dims 2,2,2
expect 2 "--dims with --x -> 2" "$PK" run dslash --dims 2,2,2,2 --x 2
expect 2 "--x 0 -> 2" "$PK" run dslash --x 0
expect 2 "--recon12 with --no-recon12 -> 2" "$PK" run dslash --dims 2,2,2,2 --recon12 --no-recon12
expect 2 "unknown variant -> 2" "$PK" run dslash --dims 2,2,2,2 --variant warp-drive
expect 2 "gen without --out -> 2" "$PK" gen dslash --dims 2,2,2,2
expect 2 "lattice whose bytes overflow -> 2" "$PK" run dslash --dims 2000000000,2000000000,2000000000,2000000000
expect 0 "run dslash --help" "$PK" run dslash --help
grep -q "recon12" "$T/out"
result $? "--help names --recon12"

# bench
expect 0 "bench --kernels dslash --size small --backends serial,openmp --json" \
    "$PK" bench --kernels dslash --size small --backends serial,openmp --reps 1 --json "$T/b.json"
grep -q "bw ratio" "$T/out" && grep -q "3072 B per site" "$T/out"
result $? "bench table: bandwidth ratio column and the byte model stated"

exit $([ $fails -eq 0 ] && echo 0 || echo 1)
