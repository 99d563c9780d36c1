#!/bin/sh
# test_cli_badinput.sh - TAP test: bad input to the `portkern` and `portkern-probe` tools, one
# case per way of getting it wrong: options and values, input files of the wrong dtype or
# shape, truncated or malformed .npy and params.json, absurd sizes, unwritable outputs,
# backends that cannot run here.  Each case checks the documented exit status (2: bad input,
# 1: a valid request that failed) and that stderr names the culprit.  tests/test_cli.sh has
# the working paths; docs/RELIABILITY.md the inventory.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin clibad
unset PORTKERN_THREADS

# bad CODE NEEDLE DESCRIPTION COMMAND...: exits with CODE and stderr contains NEEDLE (a fixed
# string; "" for any); no core dump, no sanitizer report.
bad() {
    want=$1 needle=$2 desc=$3
    shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    good=0
    [ "$got" -eq "$want" ] || good=1
    if [ -n "$needle" ] && ! grep -q -F -e "$needle" "$T/err"; then good=1; fi
    if grep -q -e 'ERROR: [A-Za-z]*Sanitizer' -e 'WARNING: ThreadSanitizer' -e 'runtime error:' \
        "$T/err"; then good=1; fi
    if [ $good -ne 0 ]; then
        echo "# exit status $got (expected $want), stderr should contain: $needle"
        echo "# command: $*"
        sed 's/^/# stderr: /' "$T/err" | head -n 12
    fi
    result $good "$desc (exit $want)"
}

# npy_f32_value PATH VALUE-BYTES: a float32 (1, 1) array whose 4 data bytes are given as
# printf octal escapes ('\000\000\300\177' is a NaN).
npy_f32_value() {
    npy_file "$1" '<f4' '(1, 1)' 0
    # shellcheck disable=SC2059
    printf "$2" >>"$1"
}

echo "1..75"

# ---- the command line ---------------------------------------------------------------------
bad 2 "Usage: portkern" "no command" "$PK"
bad 2 "unknown command 'frobnicate'" "unknown command" "$PK" frobnicate
bad 2 "missing KERNEL" "run without a kernel" "$PK" run
bad 2 "unknown kernel 'laplace9d'" "run of an unknown kernel" "$PK" run laplace9d
bad 2 "unknown option '--bogus'" "unknown long option" "$PK" run diffusion3d --bogus
bad 2 "unknown option '-x'" "unknown short option" "$PK" run diffusion3d -x
bad 2 "--nx needs a value" "option without its value" "$PK" run diffusion3d --nx
bad 2 "--nx: the value must not be empty" "option with an empty value" "$PK" run diffusion3d --nx=
bad 2 "--verify takes no value" "flag given a value" "$PK" run diffusion3d --verify=yes
bad 2 "unexpected argument 'extra'" "extra operand" "$PK" run diffusion3d extra
bad 2 "'12abc' is not an integer" "non-numeric integer" "$PK" run diffusion3d --nx 12abc
bad 2 "' 5' is not an integer" "integer with a leading blank" "$PK" run diffusion3d --nx " 5"
bad 2 "0x10" "hexadecimal integer" "$PK" run diffusion3d --ny 0x10
bad 2 "2147483648 is out of range" "integer beyond INT_MAX" "$PK" run diffusion3d --nz 2147483648
bad 2 "out of range" "integer beyond long long" "$PK" run diffusion3d --nx 99999999999999999999999
bad 2 "-1 is out of range" "negative count" "$PK" run diffusion3d --count -1
bad 2 "must be >= 1" "zero size" "$PK" run conv2d --h 0
bad 2 "'nan' is not a finite number" "NaN coefficient" "$PK" run diffusion3d --cc nan
bad 2 "'inf' is not a finite number" "infinite coefficient" "$PK" run diffusion3d --ct inf
bad 2 "not a finite number in double range" "coefficient beyond double range" \
    "$PK" run diffusion3d --cw 1e999
bad 2 "cc: must be finite in float precision" "coefficient beyond float range (library check)" \
    "$PK" run diffusion3d --backend serial --nx 4 --ny 4 --nz 4 --count 1 --cc 1e300
bad 2 "--rtol: -1 is out of range" "negative tolerance" "$PK" run diffusion3d --rtol -1
bad 2 "does not fit in memory" "field whose bytes overflow size_t" \
    "$PK" run diffusion3d --nx 2147483647 --ny 2147483647 --nz 2147483647
bad 2 "does not fit in memory" "gen: field whose bytes overflow size_t" \
    "$PK" gen diffusion3d --out "$T/never" --nx 2147483647 --ny 2147483647 --nz 4
bad 2 "--scale: must be > 0" "gen --scale 0" "$PK" gen diffusion3d --out "$T/never" --scale 0
bad 2 "scaled by" "gen --scale that overflows a size" \
    "$PK" gen diffusion3d --out "$T/never" --nx 1000 --scale 1e7
bad 2 "unknown size 'huge'" "gen --preset huge" "$PK" gen diffusion3d --out "$T/never" --preset huge
bad 2 "--out DIR is required" "gen without --out" "$PK" gen conv2d
bad 2 "unknown method 'wavelet'" "conv2d --method wavelet" "$PK" run conv2d --method wavelet --h 4 --w 4
bad 2 "unknown backend 'gpu'" "unknown backend" "$PK" run conv2d --backend gpu
bad 2 "unknown" "unknown variant" "$PK" run conv2d --variant warp --h 4 --w 4 --kh 1 --kw 1
bad 2 "device 7" "device index beyond the backend's devices" \
    "$PK" run diffusion3d --backend serial --device 7 --nx 4 --ny 4 --nz 4
bad 2 "no backend could run diffusion3d" "device 99 under auto: refused, not replaced by device 0" \
    "$PK" run diffusion3d --device 99 --nx 4 --ny 4 --nz 4
bad 2 "serial device 5" "device 5 with a variant naming its backend: refused" \
    "$PK" run diffusion3d --variant serial --device 5 --nx 4 --ny 4 --nz 4
bad 2 "unknown size 'tiny'" "bench --size tiny" "$PK" bench --size tiny
bad 2 "bad list" "bench --kernels with an empty item" "$PK" bench --kernels diffusion3d,,conv2d
bad 2 "unknown kernel 'fft'" "bench --kernels fft" "$PK" bench --kernels fft
bad 2 "unknown backend 'auto'" "bench --backends auto" "$PK" bench --backends auto
bad 2 "--reps: 0 is out of range" "bench --reps 0" "$PK" bench --reps 0
bad 2 "cannot write /proc/self/bench.json" "bench --json into an unwritable place (before running)" \
    "$PK" bench --json /proc/self/bench.json
bad 2 "" "portkern-probe with an unknown option" "$PROBE" --bogus

# ---- backends that cannot run here ----------------------------------------------------------
if "$PROBE" --no-bandwidth 2>/dev/null | grep -q '^cuda: usable'; then
    skip "forced cuda fails cleanly" "cuda can run here"
    skip "PORTKERN_BACKEND=cuda falls back" "cuda can run here"
else
    bad 2 "cuda:" "--backend cuda where cuda cannot run: the reason" \
        "$PK" run diffusion3d --backend cuda --nx 4 --ny 4 --nz 4
    PORTKERN_BACKEND=cuda "$PK" run conv2d --h 8 --w 9 --kh 3 --kw 3 --verify >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 0 ] && grep -q '"reason": "PORTKERN_BACKEND=cuda' "$T/out" &&
        grep -q '"equal": true' "$T/out"
    result $? "PORTKERN_BACKEND=cuda where cuda cannot run: auto falls back, verified (exit $rc)"
fi
PORTKERN_BACKEND=bogus "$PK" run diffusion3d --nx 4 --ny 4 --nz 4 >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "PORTKERN_BACKEND='bogus'" "$T/err"
result $? "PORTKERN_BACKEND=bogus: exit 2 naming the variable (exit $rc)"

# ---- input files ----------------------------------------------------------------------------
"$PK" gen diffusion3d --out "$T/d3" --nx 6 --ny 5 --nz 4 --count 2 >/dev/null 2>&1 ||
    echo "Bail out! gen diffusion3d failed"
"$PK" gen conv2d --out "$T/cv" --h 9 --w 10 --kh 3 --kw 3 >/dev/null 2>&1 ||
    echo "Bail out! gen conv2d failed"
mkd() { rm -rf "$T/$1"; mkdir -p "$T/$1"; }

mkd d3-2d; npy_file "$T/d3-2d/f.npy" '<f4' '(5, 6)' 120
bad 2 "expected a float32 ('<f4') array with 3 dimensions" "run --in: f.npy with 2 dimensions" \
    "$PK" run diffusion3d --in "$T/d3-2d"
mkd d3-i4; npy_file "$T/d3-i4/f.npy" '<i4' '(4, 5, 6)' 480
bad 2 "got '<i4'" "run --in: int32 f.npy" "$PK" run diffusion3d --in "$T/d3-i4"
mkd d3-zero; npy_file "$T/d3-zero/f.npy" '<f4' '(0, 5, 6)' 0
bad 2 "dimension 0 has size 0" "run --in: f.npy with an empty axis" "$PK" run diffusion3d --in "$T/d3-zero"
mkd d3-trunc; head -c 150 "$T/d3/f.npy" >"$T/d3-trunc/f.npy"
bad 2 "truncated" "run --in: truncated f.npy" "$PK" run diffusion3d --in "$T/d3-trunc"
mkd d3-garbage; printf 'NUMPY? no.\n' >"$T/d3-garbage/f.npy"
bad 2 "bad magic" "run --in: f.npy that is not a .npy" "$PK" run diffusion3d --in "$T/d3-garbage"
mkd d3-missing
bad 2 "d3-missing/f.npy: cannot open" "run --in: no f.npy" "$PK" run diffusion3d --in "$T/d3-missing"
bad 2 "has shape [4, 5, 6] but --ny is 7" "run --in: --ny contradicting f.npy" \
    "$PK" run diffusion3d --in "$T/d3" --ny 7
mkd d3-json; cp "$T/d3/f.npy" "$T/d3-json/"; printf '{"nx": 6, "count": 2,}' >"$T/d3-json/params.json"
bad 2 "not a flat JSON object" "run --in: params.json with a trailing comma" \
    "$PK" run diffusion3d --in "$T/d3-json"
printf '{"nx": 6.5}' >"$T/d3-json/params.json"
bad 2 '"nx" must be an integer >= 1' "run --in: params.json nx = 6.5" "$PK" run diffusion3d --in "$T/d3-json"
printf '{"count": -3}' >"$T/d3-json/params.json"
bad 2 '"count" must be an integer >= 0' "run --in: params.json count = -3" "$PK" run diffusion3d --in "$T/d3-json"
printf '{"cc": "0.4"}' >"$T/d3-json/params.json"
bad 2 '"cc" must be a number' "run --in: params.json cc as a string" "$PK" run diffusion3d --in "$T/d3-json"
printf '{"kernel": "conv2d"}' >"$T/d3-json/params.json"
bad 2 '"kernel" is not "diffusion3d"' "run --in: params.json of another kernel" \
    "$PK" run diffusion3d --in "$T/d3-json"
printf '{"nx": {"value": 6}}' >"$T/d3-json/params.json"
bad 2 "nested objects" "run --in: params.json with a nested object" "$PK" run diffusion3d --in "$T/d3-json"
printf '{"nx": 6, "nx": 7}' >"$T/d3-json/params.json"
bad 2 'duplicate key "nx"' "run --in: params.json with a duplicate key" "$PK" run diffusion3d --in "$T/d3-json"
printf '{"cc": 1e400}' >"$T/d3-json/params.json"
bad 2 "out of double range" "run --in: params.json with a number beyond double" \
    "$PK" run diffusion3d --in "$T/d3-json"
mkd cv-3d; cp "$T/cv/psf.npy" "$T/cv-3d/"; npy_file "$T/cv-3d/image.npy" '<f4' '(2, 9, 10)' 720
bad 2 "cv-3d/image.npy" "run conv2d --in: image.npy with 3 dimensions" "$PK" run conv2d --in "$T/cv-3d"
mkd cv-nan; cp "$T/cv/image.npy" "$T/cv-nan/"; npy_f32_value "$T/cv-nan/psf.npy" '\000\000\300\177'
bad 2 "psf[0][0]: must be finite" "run conv2d --in: a NaN in psf.npy" "$PK" run conv2d --in "$T/cv-nan"
mkd cv-trunc; cp "$T/cv/psf.npy" "$T/cv-trunc/"; head -c 200 "$T/cv/image.npy" >"$T/cv-trunc/image.npy"
bad 2 "truncated" "run conv2d --in: truncated image.npy" "$PK" run conv2d --in "$T/cv-trunc"
mkd cv-nopsf; cp "$T/cv/image.npy" "$T/cv-nopsf/"
bad 2 "psf.npy: cannot open" "run conv2d --in: no psf.npy" "$PK" run conv2d --in "$T/cv-nopsf"
mkd cv-json; cp "$T/cv/image.npy" "$T/cv/psf.npy" "$T/cv-json/"; printf '{"method": "wavelet"}' >"$T/cv-json/params.json"
bad 2 '"method" must be "direct", "fft" or "auto"' "run conv2d --in: params.json with an unknown method" \
    "$PK" run conv2d --in "$T/cv-json"

# ---- diff -------------------------------------------------------------------------------------
npy_file "$T/i4.npy" '<i4' '(3,)' 12
bad 2 "dtype '<i4' is not supported" "diff of int32 arrays" "$PK" diff "$T/i4.npy" "$T/i4.npy"
npy_file "$T/s0.npy" '<f4' '()' 4
npy_file "$T/s1.npy" '<f4' '(1,)' 4
bad 2 "shape mismatch" "diff of a 0-d and a 1-d array" "$PK" diff "$T/s0.npy" "$T/s1.npy"
head -c 150 "$T/d3/f.npy" >"$T/trunc.npy"
bad 2 "trunc.npy: truncated" "diff of a truncated file" "$PK" diff "$T/d3/f.npy" "$T/trunc.npy"
bad 2 "needs two files" "diff with one file" "$PK" diff "$T/d3/f.npy"
bad 2 "--zero: 'nan' is not a finite number" "diff --zero nan" "$PK" diff --zero nan "$T/s0.npy" "$T/s0.npy"
bad 2 "Is a directory" "diff of a directory" "$PK" diff "$T" "$T/s0.npy"
npy_file "$T/bad-descr.npy" '<U4' '(1,)' 16
bad 2 "'<U4' is not supported" "diff of a unicode-string array" "$PK" diff "$T/bad-descr.npy" "$T/s0.npy"

# ---- outputs --------------------------------------------------------------------------------
bad 2 "cannot create directory /proc/self/out" "gen --out under /proc/self (unwritable)" \
    "$PK" gen conv2d --out /proc/self/out --h 4 --w 4 --kh 1 --kw 1
: >"$T/plainfile"
bad 2 "cannot create directory $T/plainfile/sub" "gen --out below a regular file" \
    "$PK" gen diffusion3d --out "$T/plainfile/sub" --nx 4 --ny 4 --nz 4
bad 2 "cannot create directory $T/plainfile" "run --out naming a regular file" \
    "$PK" run diffusion3d --backend serial --nx 4 --ny 4 --nz 4 --out "$T/plainfile"

# ---- a valid request too large for this machine: exit 1, not a crash --------------------------
bad 1 "out of host memory" "run of a 2^50-byte field (fits size_t, not memory)" \
    "$PK" run diffusion3d --nx 65536 --ny 65536 --nz 65536 --count 1

plan=$(sed -n 's/^echo "1\.\.\([0-9]*\)"$/\1/p' "$0" | head -n 1) # the plan printed above
[ "$n" -eq "$plan" ] || echo "# planned $plan, ran $n"
[ $fails -eq 0 ]
