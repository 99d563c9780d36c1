#!/bin/sh
# test_cli.sh - TAP test of the command-line tools (portkern, portkern-probe): the contract of
# README.md's "Command line", exit codes included.  Runs from the build tree through libtool's wrappers;
# tests/local.mk exports top_builddir and POCL_CACHE_DIR.  Small sizes keep it quick.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli
echo "1..92"

# json_valid FILE: one JSON document.
json_valid() {
    if [ $have_py = yes ]; then
        python3 -m json.tool "$1" >/dev/null
    else
        grep -q '^{' "$1" && grep -q '}$' "$1"
    fi
}

# run_line_ok FILE: one line, a JSON object with the keys of the contract, verified equal.
run_line_ok() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$1" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["kernel", "backend", "device", "variant", "seconds", "kernel_seconds",
        "transfer_seconds", "gflop_per_s", "gb_per_s", "bytes_model", "reason", "verify",
        "diffusion3d"]
missing = [k for k in keys if k not in d]
missing += ["diffusion3d." + k for k in ["nx", "ny", "nz", "count", "gpts_per_s"]
            if k not in d.get("diffusion3d", {})]
if missing:
    sys.exit("missing keys: %s" % missing)
v = d["verify"]
if not (v["equal"] is True and v["num_failed"] == 0 and v["first_fail"] is None):
    sys.exit("verify: %s" % v)
e = d["diffusion3d"]
if d["kernel"] != "diffusion3d" or (e["nx"], e["ny"], e["nz"]) != (24, 20, 18):
    sys.exit("kernel or sizes: %s" % d)
EOF
    else
        for k in kernel backend device variant nx ny nz count seconds kernel_seconds \
            transfer_seconds gpts_per_s gflop_per_s gb_per_s bytes_model reason verify; do
            grep -q "\"$k\":" "$1" || return 1
        done
        grep -q '"equal": true' "$1"
    fi
}

# ---- version, help, probe ----------------------------------------------------------------
expect 0 "portkern --version" "$PK" --version
grep -q '^portkern [0-9][0-9]*\.[0-9][0-9]*\.[0-9]' "$T/out"
result $? "--version prints the library version"
expect 0 "portkern run --help" "$PK" run --help

expect 0 "portkern-probe (text, no bandwidth)" "$PROBE" --no-bandwidth
cp "$T/out" "$T/probe.txt"
grep -q '^serial: usable' "$T/probe.txt" && grep -q '^cuda: ' "$T/probe.txt" &&
    grep -q '^opencl: ' "$T/probe.txt"
result $? "probe text lists every backend"
expect 0 "portkern-probe --json with bandwidth" "$PROBE" --json --bytes 4000000
cp "$T/out" "$T/probe.json"
json_valid "$T/probe.json" && grep -q '"bandwidth_gb_per_s": [0-9]' "$T/probe.json"
result $? "probe --json is valid JSON with a measured bandwidth"

# ---- gen, run ------------------------------------------------------------------------------
expect 0 "gen diffusion3d" "$PK" gen diffusion3d --out "$T/in" --nx 24 --ny 20 --nz 18 --count 5
[ -s "$T/in/f.npy" ] && json_valid "$T/in/params.json" &&
    grep -q '"count": 5' "$T/in/params.json"
result $? "gen writes f.npy and a valid params.json"

expect 0 "run --backend serial --in --out --verify" \
    "$PK" run diffusion3d --backend serial --in "$T/in" --out "$T/serial" --verify
run_line_ok "$T/out"
result $? "run prints one JSON line with the contract's keys, verified"
grep -q '"count": 5' "$T/out"
result $? "run takes count from params.json"
expect 0 "run --backend openmp --in --out --verify" \
    "$PK" run diffusion3d --backend openmp --threads 2 --in "$T/in" --out "$T/openmp" --verify
run_line_ok "$T/out"
result $? "openmp run line is complete and verified"
if grep -q '^opencl: usable' "$T/probe.txt"; then
    expect 0 "run --backend opencl --in --verify" \
        "$PK" run diffusion3d --backend opencl --in "$T/in" --out "$T/opencl" --verify
else
    skip "run --backend opencl --in --verify" "opencl not usable here"
fi
expect 0 "run --count on the command line overrides params.json" \
    "$PK" run diffusion3d --backend serial --in "$T/in" --count 2
grep -q '"count": 2' "$T/out"
result $? "the overriding count is used"
expect 2 "run --in with --nx that contradicts f.npy: exit 2" \
    "$PK" run diffusion3d --in "$T/in" --nx 25

# ---- diff ----------------------------------------------------------------------------------
expect 0 "diff serial vs openmp result: equal" "$PK" diff "$T/serial/f.npy" "$T/openmp/f.npy"
expect 0 "diff --norm: equal" "$PK" diff --norm "$T/serial/f.npy" "$T/openmp/f.npy"
expect 1 "diff input vs result: not equal (exit 1)" "$PK" diff "$T/in/f.npy" "$T/serial/f.npy"
grep -q '^first failure: *\[[0-9]*, [0-9]*, [0-9]*\]' "$T/out"
result $? "diff names the first failing multi-index"
expect 2 "diff of a missing file: exit 2" "$PK" diff "$T/nope.npy" "$T/in/f.npy"
"$PK" gen diffusion3d --out "$T/other" --nx 5 --ny 4 --nz 3 >/dev/null 2>&1
expect 2 "diff shape mismatch: exit 2" "$PK" diff "$T/other/f.npy" "$T/in/f.npy"
npy_file "$T/f64.npy" '<f8' '(2, 3)' 48
expect 2 "diff dtype mismatch: exit 2" "$PK" diff "$T/f64.npy" "$T/other/f.npy"
echo "not a numpy file" >"$T/garbage.npy"
expect 2 "diff of a malformed file: exit 2" "$PK" diff "$T/garbage.npy" "$T/garbage.npy"
npy_file "$T/c64.npy" '<c8' '(2,)' 16
expect 0 "diff complex64 arrays: equal" "$PK" diff "$T/c64.npy" "$T/c64.npy"

# ---- bad input -----------------------------------------------------------------------------
expect 2 "unknown option: exit 2" "$PK" run diffusion3d --bogus 1
grep -q -e '--bogus' "$T/err"
result $? "the message names the unknown option"
expect 2 "non-numeric --nx: exit 2" "$PK" run diffusion3d --nx 12abc
expect 2 "--nx 0 is out of range: exit 2" "$PK" run diffusion3d --nx 0
expect 2 "unknown backend: exit 2" "$PK" run diffusion3d --backend nosuch
expect 2 "unknown variant: exit 2" "$PK" run diffusion3d --backend serial --variant nosuch \
    --nx 4 --ny 4 --nz 4
mkdir -p "$T/wrong"
cp "$T/f64.npy" "$T/wrong/f.npy"
expect 2 "run --in with a float64 f.npy: exit 2" "$PK" run diffusion3d --in "$T/wrong"
grep -q 'wrong/f.npy: expected a float32' "$T/err"
result $? "the message names the file and what was expected"

# ---- bench ---------------------------------------------------------------------------------
expect 0 "bench --size small --backends serial,openmp --reps 1 --json" \
    "$PK" bench --size small --backends serial,openmp --reps 1 --json "$T/bench.json"
if [ $have_py = yes ]; then
    python3 - "$T/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["status"] == "ok"]
assert rows and all(r["verified"] for r in rows), d["rows"]
assert {"serial", "openmp"} <= {r["backend"] for r in rows}
EOF
else
    json_valid "$T/bench.json" && grep -q '"verified": true' "$T/bench.json"
fi
result $? "bench --json is valid JSON with verified rows for serial and openmp"
expect 0 "bench --calls 3: one-shot calls beside the plan" \
    "$PK" bench --kernels diffusion3d,su3 --size small --backends serial,openmp --reps 1 \
    --calls 3 --json "$T/calls.json"
if [ $have_py = yes ]; then
    python3 - "$T/calls.json" "$T/out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["status"] == "ok"]
# timings on a shared machine: only that each row has both calls timed is asserted
assert rows and all(r["call_first_seconds"] > 0 and r["call_repeat_seconds"] > 0 for r in rows), rows
out = open(sys.argv[2]).read()
assert "one call against the plan (--calls 3" in out
# the first call's new memory (where /proc/self/statm tells it) and the first touch of new
# memory measured before it
import os
assert all((r["call_first_new_bytes"] is not None or not os.path.exists("/proc/self/statm"))
           and r["first_touch_gb_per_s"] > 0 for r in rows), rows
assert "fresh GB/s" in out
EOF
else
    grep -q '"call_repeat_seconds": [0-9]' "$T/calls.json" && grep -q 'one call against the plan' "$T/out" &&
        grep -q '"first_touch_gb_per_s": [0-9]' "$T/calls.json"
fi
result $? "bench --calls: every row has the first and the repeated one-shot call, the table and the first-touch rate"

# ---- conv2d --------------------------------------------------------------------------------
# cv_line_ok FILE VARIANT: one JSON line of a conv2d run, the contract's keys, verified equal.
cv_line_ok() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$1" "$2" <<'EOF2'
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["kernel", "backend", "device", "variant", "seconds", "kernel_seconds",
        "transfer_seconds", "ms", "gflop_per_s", "gb_per_s", "bytes_model", "reason", "verify",
        "conv2d"]
ckeys = ["method", "h", "w", "kh", "kw"]
missing = [k for k in keys if k not in d] + [k for k in ckeys if k not in d.get("conv2d", {})]
if missing:
    sys.exit("missing keys: %s" % missing)
c = d["conv2d"]
if d["kernel"] != "conv2d" or (c["h"], c["w"], c["kh"], c["kw"]) != (37, 91, 7, 4):
    sys.exit("kernel or sizes: %s" % d)
if d["variant"] != sys.argv[2] or d["verify"]["equal"] is not True:
    sys.exit("variant or verify: %s" % d)
EOF2
    else
        grep -q '"kernel": "conv2d"' "$1" && grep -q "\"variant\": \"$2\"" "$1" &&
            grep -q '"equal": true' "$1"
    fi
}

expect 0 "gen conv2d" "$PK" gen conv2d --out "$T/cv" --h 37 --w 91 --kh 7 --kw 4 --seed 3
[ -s "$T/cv/image.npy" ] && [ -s "$T/cv/psf.npy" ] && json_valid "$T/cv/params.json" &&
    grep -q '"kernel": "conv2d"' "$T/cv/params.json"
result $? "gen conv2d writes image.npy, psf.npy and a valid params.json"
expect 0 "run conv2d --backend serial --in --out --verify" \
    "$PK" run conv2d --backend serial --in "$T/cv" --out "$T/cv-serial" --verify
cv_line_ok "$T/out" simd
result $? "conv2d run line is complete and verified (serial's default: simd)"
expect 0 "run conv2d --backend openmp --method fft --in --out --verify" \
    "$PK" run conv2d --backend openmp --method fft --threads 2 --in "$T/cv" --out "$T/cv-fft" --verify
if grep -q '"variant": "fft"' "$T/out"; then
    cv_line_ok "$T/out" fft
else # built without FFTW: the method runs direct and says why
    cv_line_ok "$T/out" omp-rb && grep -q 'no FFT variant' "$T/out"
fi
result $? "--method fft runs the openmp fft variant (or says there is none), verified"
expect 0 "diff of the serial and fft results: equal" \
    "$PK" diff "$T/cv-serial/out.npy" "$T/cv-fft/out.npy"
# FFTW wisdom (lib/fftw_planner.c), in a cache directory of its own: the fft run leaves
# fftw-wisdom-f; a damaged file is refused by FFTW, the run plans as before and rewrites it.
if grep -q '"variant": "fft"' "$T/out"; then
    W="$T/wcache"
    PORTKERN_CACHE_DIR="$W" "$PK" run conv2d --backend openmp --method fft --threads 2 \
        --in "$T/cv" --out "$T/cv-w1" >/dev/null 2>&1 &&
        head -c 6 "$W/fftw-wisdom-f" | grep -q '(fftw' &&
        printf '(fftw-3 damaged' >"$W/fftw-wisdom-f" &&
        PORTKERN_CACHE_DIR="$W" "$PK" run conv2d --backend openmp --method fft --threads 2 \
            --in "$T/cv" --out "$T/cv-w2" >/dev/null 2>&1 &&
        "$PK" diff "$T/cv-fft/out.npy" "$T/cv-w2/out.npy" >/dev/null 2>&1 &&
        head -c 6 "$W/fftw-wisdom-f" | grep -q '(fftw' && ! grep -q damaged "$W/fftw-wisdom-f"
else
    true # built without FFTW
fi
result $? "FFTW wisdom: an fft run writes <cache>/fftw-wisdom-f; a damaged one is refused and rewritten"
expect 0 "options before the kernel operand: run --backend openmp conv2d --method direct" \
    "$PK" run --backend openmp conv2d --method direct --h 9 --w 11 --kh 3 --kw 5 --verify
grep -q '"variant": "omp-rb"' "$T/out" && grep -q '"equal": true' "$T/out"
result $? "--method direct runs omp-rb (the best direct variant), verified"
expect 2 "run conv2d --in with --kh that contradicts psf.npy: exit 2" \
    "$PK" run conv2d --in "$T/cv" --kh 5
expect 2 "run conv2d --method bogus: exit 2" "$PK" run conv2d --method bogus --h 4 --w 4

# ---- tuning parameters: --param NAME=VALUE (run, bench), portkern-probe --params -------------
expect 0 "run conv2d --param conv2d.fft_taps=4" \
    "$PK" run conv2d --backend serial --h 9 --w 11 --kh 3 --kw 3 --param conv2d.fft_taps=4
grep -q '9 taps >= 4 (conv2d.fft_taps): fft' "$T/out"
result $? "--param conv2d.fft_taps=4: auto's method is the FFT, and the reason says so"
expect 0 "--param beats the environment" \
    env PORTKERN_CONV2D_FFT_TAPS=1000 "$PK" run conv2d --backend serial --h 9 --w 11 --kh 3 --kw 3 --param conv2d.fft_taps=4 \
    --param dslash.isa=generic
grep -q '9 taps >= 4 (conv2d.fft_taps): fft' "$T/out"
result $? "--param conv2d.fft_taps=4 beats PORTKERN_CONV2D_FFT_TAPS=1000 (repeatable --param)"
expect 2 "run --param conv2d.fft_taps=0: exit 2" \
    "$PK" run conv2d --h 9 --w 11 --param conv2d.fft_taps=0
grep -q "conv2d.fft_taps: expected an integer in \[1, 2147483647\], got '0'" "$T/err"
result $? "--param with a bad value names the parameter, what it accepts and the value"
expect 2 "run --param conv2d.nope=1: exit 2" "$PK" run conv2d --h 9 --w 11 --param conv2d.nope=1
grep -q "unknown tuning parameter 'conv2d.nope'" "$T/err"
result $? "--param with an unknown name says so"
expect 2 "run --param without '=': exit 2" "$PK" run conv2d --h 9 --w 11 --param conv2d.fft_taps
expect 0 "bench --param" "$PK" bench --kernels conv2d --size small --backends serial --reps 1 \
    --param conv2d.fft_taps=4
expect 2 "bench --param bad value: exit 2" "$PK" bench --kernels conv2d --backends serial \
    --param su3.isa=sse9
expect 0 "portkern-probe --params" \
    env PORTKERN_SU3_ISA=avx2 PORTKERN_CL_MF_SCHEME=bogus "$PROBE" --params
# as many lines as the library has parameters (the JSON list's names), at least the 15 of now
nparams=$("$PROBE" --params --json | grep -o '"name": "[a-z0-9]*\.[a-z0-9_]*"' | wc -l)
[ "$nparams" -ge 15 ] && [ "$(grep -c '^[a-z0-9]*\.[a-z0-9_]* = ' "$T/out")" -eq "$nparams" ] &&
    grep -q '^su3.isa = avx2 (env)$' "$T/out" && grep -q '^conv2d.fft_taps = 676 (default)$' "$T/out" &&
    grep -q '^diffusion3d.tb_depth = 6 (default)$' "$T/out" &&
    grep -q '^magicfilter3d.cl_scheme = bogus (env): INVALID: PORTKERN_CL_MF_SCHEME' "$T/out"
result $? "probe --params lists every parameter ($nparams) with value and source (env, default, invalid)"
expect 0 "portkern-probe --params --json" "$PROBE" --params --json
json_valid "$T/out" && grep -q '"name": "grid.cuda_blocks"' "$T/out" &&
    grep -q '"source": "default"' "$T/out"
result $? "probe --params --json is valid JSON with every parameter"
mkdir -p "$T/cv-wrong"
cp "$T/cv/image.npy" "$T/cv-wrong/image.npy"
cp "$T/f64.npy" "$T/cv-wrong/psf.npy"
expect 2 "run conv2d with a float64 psf.npy: exit 2" "$PK" run conv2d --in "$T/cv-wrong"
grep -q 'cv-wrong/psf.npy: expected a float32' "$T/err"
result $? "the message names the PSF file and what was expected"
expect 2 "bench --psf-sweep without conv2d: exit 2" "$PK" bench --kernels diffusion3d --psf-sweep
expect 0 "bench --kernels conv2d --size small --backends serial,openmp --reps 1 --json" \
    "$PK" bench --kernels conv2d --size small --backends serial,openmp --reps 1 \
    --json "$T/cvbench.json"
grep -q '^StrayLight sequence: naive .* -> serial .* -> simd .* -> omp .* -> omp-rb ' "$T/out"
result $? "bench prints the StrayLight sequence naive -> serial -> simd -> omp -> omp-rb"
if [ $have_py = yes ]; then
    python3 - "$T/cvbench.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["kernel"] == "conv2d" and r["status"] == "ok"]
assert rows and all(r["verified"] for r in rows), d["rows"]
assert {"naive", "serial", "simd", "omp", "omp-rb"} <= {r["variant"] for r in rows}
assert "conv2d" in d and d["conv2d"]["flops_model"]
EOF2
else
    json_valid "$T/cvbench.json" && grep -q '"kernel": "conv2d"' "$T/cvbench.json"
fi
result $? "bench --json has verified conv2d rows for every serial and openmp variant"

# ---- magicfilter3d -------------------------------------------------------------------------
# npy_shape_is FILE SHAPE: the .npy header of FILE says float64 with shape SHAPE ("(a, b, c)").
npy_shape_is() {
    head -c 128 "$1" | grep -a -q "'descr': '<f8', 'fortran_order': False, 'shape': $2,"
}
# mf_line_ok FILE OPERATION BC N1 N2 N3: one JSON line of a magicfilter3d run, the contract's
# keys, verified equal.
mf_line_ok() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$@" <<'EOF3'
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["kernel", "backend", "device", "variant", "seconds", "kernel_seconds",
        "transfer_seconds", "ms", "gflop_per_s", "gb_per_s", "flops_model", "bytes_model",
        "reason", "verify", "verify_rule", "magicfilter3d"]
mkeys = ["operation", "transpose", "bc", "n1", "n2", "n3", "in_shape", "out_shape",
         "verify_atol"]
missing = [k for k in keys if k not in d] + [k for k in mkeys if k not in d.get("magicfilter3d", {})]
if missing:
    sys.exit("missing keys: %s" % missing)
m = d["magicfilter3d"]
want = (sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
if d["kernel"] != "magicfilter3d" or (m["operation"], m["bc"], m["n1"], m["n2"], m["n3"]) != want:
    sys.exit("kernel, operation, bc or sizes: %s" % d)
v = d["verify"]
if not (v["equal"] is True and v["num_failed"] == 0 and v["max_abs_err"] <= m["verify_atol"]):
    sys.exit("verify: %s" % v)
EOF3
    else
        grep -q '"kernel": "magicfilter3d"' "$1" && grep -q "\"operation\": \"$2\"" "$1" &&
            grep -q "\"bc\": \"$3\"" "$1" && grep -q "\"n1\": $4, \"n2\": $5, \"n3\": $6" "$1" &&
            grep -q '"equal": true' "$1"
    fi
}

expect 0 "gen magicfilter3d" "$PK" gen magicfilter3d --out "$T/mf" --size 20x18x17 --seed 4
npy_shape_is "$T/mf/x.npy" '(17, 18, 20)' && json_valid "$T/mf/params.json" &&
    grep -q '"kernel": "magicfilter3d"' "$T/mf/params.json"
result $? "gen magicfilter3d writes x.npy (float64 [n3][n2][n1]) and a valid params.json"
expect 0 "run magicfilter3d --backend serial --in --out --verify" \
    "$PK" run magicfilter3d --backend serial --in "$T/mf" --out "$T/mf-serial" --verify
mf_line_ok "$T/out" MF periodic 20 18 17 && npy_shape_is "$T/mf-serial/y.npy" '(17, 18, 20)'
result $? "magicfilter3d run line is complete and verified, y.npy has the grid's shape"
expect 0 "run magicfilter3d --backend openmp --in --out --verify" \
    "$PK" run magicfilter3d --backend openmp --threads 2 --in "$T/mf" --out "$T/mf-omp" --verify
expect 0 "diff of the serial and openmp magicfilter3d results: equal" \
    "$PK" diff "$T/mf-serial/y.npy" "$T/mf-omp/y.npy"
expect 0 "run magicfilter3d --transpose --verify (MFT)" \
    "$PK" run magicfilter3d --in "$T/mf" --transpose --verify
mf_line_ok "$T/out" MFT periodic 20 18 17
result $? "--transpose runs MFT, verified"
expect 0 "run magicfilter3d --bc grow --verify --out" \
    "$PK" run magicfilter3d --size 9x10x11 --bc grow --out "$T/mf-grow" --verify
mf_line_ok "$T/out" MF grow 9 10 11 && npy_shape_is "$T/mf-grow/y.npy" '(26, 25, 24)'
result $? "--bc grow: verified, y.npy has n + 15 points per axis"
expect 0 "gen magicfilter3d --bc shrink --transpose" \
    "$PK" gen magicfilter3d --out "$T/mf-s" --size 9x10x11 --bc shrink --transpose
expect 0 "run magicfilter3d --in (bc shrink, MFT from params.json) --verify --out" \
    "$PK" run magicfilter3d --in "$T/mf-s" --out "$T/mf-shrunk" --verify
mf_line_ok "$T/out" MFT shrink 9 10 11 && npy_shape_is "$T/mf-s/x.npy" '(26, 25, 24)' &&
    npy_shape_is "$T/mf-shrunk/y.npy" '(11, 10, 9)'
result $? "--bc shrink: x.npy has n + 15 points per axis, y.npy n, verified"
mkdir -p "$T/mf-f32" "$T/mf-2d"
npy_file "$T/mf-f32/x.npy" '<f4' '(3, 4, 5)' 240
expect 2 "run magicfilter3d with a float32 x.npy: exit 2" "$PK" run magicfilter3d --in "$T/mf-f32"
grep -q "mf-f32/x.npy: expected a float64 .*\[n3\]\[n2\]\[n1\].*got '<f4'" "$T/err"
result $? "the message names the file, the expected dtype and shape, and the dtype found"
npy_file "$T/mf-2d/x.npy" '<f8' '(4, 5)' 160
expect 2 "run magicfilter3d with a 2-D x.npy: exit 2" "$PK" run magicfilter3d --in "$T/mf-2d"
expect 2 "run magicfilter3d --bc bogus: exit 2" "$PK" run magicfilter3d --bc bogus --size 4
expect 0 "bench --kernels magicfilter3d --size small --backends serial,openmp --reps 1 --json" \
    "$PK" bench --kernels magicfilter3d --size small --backends serial,openmp --reps 1 \
    --json "$T/mfbench.json"
grep -q '^ *serial .*FMA peak .*roof' "$T/out" && grep -q '^ *openmp .*FMA peak .*roof' "$T/out"
result $? "bench prints the measured roofline of serial and openmp"
if [ $have_py = yes ]; then
    python3 - "$T/mfbench.json" <<'EOF3'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["kernel"] == "magicfilter3d" and r["status"] == "ok"]
assert rows and all(r["verified"] for r in rows), d["rows"]
assert {"simd", "unrolled", "serial", "serial-direct", "omp"} <= {r["variant"] for r in rows}
assert all(r["gflop_per_s"] > 0 and r["magicfilter3d"]["roof_gflop_per_s"] > 0 for r in rows), rows
roofs = {r["backend"]: r for r in d["magicfilter3d"]["roofline"]}
assert roofs["serial"]["fma_peak_gflop_per_s"] > 0 and roofs["openmp"]["roof_gflop_per_s"] > 0
EOF3
else
    json_valid "$T/mfbench.json" && grep -q '"kernel": "magicfilter3d"' "$T/mfbench.json" &&
        grep -q '"gflop_per_s": [0-9]' "$T/mfbench.json" &&
        grep -q '"roof_gflop_per_s": [0-9]' "$T/mfbench.json"
fi
result $? "bench --json has verified magicfilter3d rows with GFlop/s and the roof"

[ $fails -eq 0 ]
