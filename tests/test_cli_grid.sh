#!/bin/sh
# test_cli_grid.sh - TAP test of 'portkern run/gen/bench grid': the contract of README.md (one
# JSON line, --verify, --in/--out with params.json, exit codes 0/1/2), the data files of
# 'gen grid' (both kernel layouts), the grid-intensity PNG, the kernel export and bad inputs.
# Small sets only (the 'small' data set: 50,000 visibilities on a 1024 grid).  tests/local.mk
# exports top_builddir and POCL_CACHE_DIR.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli-grid zlib struct array
echo "1..61"

# png_check FILE WIDTH HEIGHT: the PNG signature and an IHDR of WIDTH x HEIGHT, 8-bit RGB
# (od only); with python3 also every chunk's CRC and the zlib stream (Adler-32 included).
png_check() {
    sig=$(od -An -tx1 -N24 "$1" | tr -d ' \n')
    w=$(printf '%08x' "$2")
    h=$(printf '%08x' "$3")
    [ "$sig" = "89504e470d0a1a0a0000000d49484452$w$h" ] || return 1
    [ "$(od -An -tx1 -j24 -N2 "$1" | tr -d ' \n')" = "0802" ] || return 1
    [ $have_py = yes ] || return 0
    python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
w, h = int(sys.argv[2]), int(sys.argv[3])
i, idat, types = 8, b'', []
while i < len(d):
    n = struct.unpack('>I', d[i:i + 4])[0]
    t, c = d[i + 4:i + 8], d[i + 8:i + 8 + n]
    if zlib.crc32(t + c) & 0xffffffff != struct.unpack('>I', d[i + 8 + n:i + 12 + n])[0]:
        sys.exit(1)
    types.append(t)
    if t == b'IDAT':
        idat += c
    i += 12 + n
raw = zlib.decompress(idat)  # checks the Adler-32
ok = types[0] == b'IHDR' and types[-1] == b'IEND' and len(raw) == h * (1 + 3 * w)
ok = ok and all(raw[y * (1 + 3 * w)] == 0 for y in range(h))
sys.exit(0 if ok else 1)
EOF
}

# npy_sum_re FILE: the sum of the real parts of a complex64 .npy (python3's array module)
npy_sum_re() {
    python3 - "$1" <<'EOF'
import array, struct, sys
d = open(sys.argv[1], 'rb').read()
hl = struct.unpack('<H', d[8:10])[0]
a = array.array('f')
a.frombytes(d[10 + hl:])
print(repr(sum(a[0::2])))
EOF
}

# run with the default generated set, verified
expect 0 "run grid --verify (the default small set, auto backend)" "$PK" run grid --verify
json_check "$T/out" grid 'd["kernel"] == "grid" and d["grid"]["dataset"] == "small" and d["grid"]["num_vis"] == 50000 and d["grid"]["grid_size"] == 1024 and d["grid"]["num_w_planes"] == 32 and d["grid"]["max_support"] == 16 and d["verify"]["equal"] and d["verify"]["mode"] == "norm" and d["grid"]["verify"]["num_skipped_equal"] and d["grid"]["num_skipped"] == 0 and d["grid"]["updates"] > 50000 * 81 and abs(d["grid"]["updates_per_s"] * d["ms"] / 1e3 - d["grid"]["updates"]) <= 1e-9 * d["grid"]["updates"] and "stages" in d["grid"] and d["grid"]["norm"] > 0'
result $? "run JSON line: data set, counts, norm-wise verify with norm and num_skipped, updates"

# gen (compact), run --in --out --intensity --export-kernels on serial
expect 0 "gen grid --dataset small --seed 5" "$PK" gen grid --dataset small --seed 5 --out "$T/in"
ok=0
for f in uu vv ww vis weight kernels support; do test -s "$T/in/$f.npy" || ok=1; done
test -s "$T/in/params.json" || ok=1
result $ok "gen wrote uu, vv, ww, vis, weight, kernels, support .npy and params.json"
if [ $have_py = yes ]; then
    python3 - "$T/in/params.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["kernel"] == "grid" and d["dataset"] == "small" and d["seed"] == 5 and d["scale"] == 1
ok = ok and d["oversample"] == 4 and d["grid_size"] == 1024 and d["num_w_planes"] == 32
ok = ok and d["kernel_layout"] == "compact" and d["cell_size_rad"] > 0 and d["w_scale"] > 0
ok = ok and d["conv_size_half"] == 2 + 16 * 4 + 1 and d["num_vis"] == 50000
sys.exit(0 if ok else 1)
EOF
    result $? "params.json: oversample, cell_size_rad, w_scale, grid_size, planes, layout, seed"
else
    skip "params.json contents" "no python3"
fi
expect 0 "run grid --in DIR --out --verify --intensity --export-kernels (serial)" \
    "$PK" run grid --in "$T/in" --backend serial --out "$T/o1" --verify \
    --intensity "$T/i.png" --export-kernels "$T/k"
json_check "$T/out" grid 'd["verify"]["equal"] and d["grid"]["kernel_layout"] == "compact" and d["grid"]["intensity"]["width"] == 1024 and d["grid"]["intensity"]["height"] == 1024 and d["grid"]["intensity"]["block"] == 1 and d["grid"]["intensity"]["total_updates"] == d["grid"]["updates"]'
result $? "run --in: verified; intensity 1024 x 1024, its total = the run's updates"
test -s "$T/o1/grid.npy"
result $? "run --out wrote grid.npy"
png_check "$T/i.png" 1024 1024
result $? "--intensity wrote a valid PNG (signature, IHDR 1024 x 1024 RGB, CRCs, zlib)"
test -s "$T/k/kernels.npy" && test -s "$T/k/support.npy" && test -s "$T/k/kernels.json"
result $? "--export-kernels wrote kernels.npy, support.npy, kernels.json"

# the same data generated in memory give the same grid
expect 0 "run grid --dataset small --seed 5 (no --in) --out" \
    "$PK" run grid --dataset small --seed 5 --backend serial --out "$T/o2"
cmp -s "$T/o1/grid.npy" "$T/o2/grid.npy"
result $? "gen + run --in and run --seed give the same grid (bitwise, serial)"

# the full kernel layout, and the exported stack, read back
expect 0 "gen grid --kernels full" "$PK" gen grid --dataset small --seed 5 --kernels full --out "$T/full"
expect 0 "run grid --in (full kernels) --out" "$PK" run grid --in "$T/full" --backend serial --out "$T/o3"
cmp -s "$T/o1/grid.npy" "$T/o3/grid.npy"
result $? "full and compact kernel layouts give the same grid (bitwise, serial)"
mkdir -p "$T/exp" && cp "$T/in/uu.npy" "$T/in/vv.npy" "$T/in/ww.npy" "$T/in/vis.npy" \
    "$T/in/weight.npy" "$T/exp/" && cp "$T/k/kernels.npy" "$T/k/support.npy" "$T/exp/"
expect 0 "run the exported (full) stack with the gridding options" \
    "$PK" run grid --in "$T/exp" --backend serial --grid-size 1024 --oversample 4 \
    --cell-size 0.00032 --w-scale "$(sed -n 's/.*"w_scale": \(.*\),/\1/p' "$T/in/params.json")" --out "$T/o4"

# --intensity-touched, unit visibilities: sum(Re grid) = norm
expect 0 "run grid --unit-vis --intensity-touched --out" \
    "$PK" run grid --unit-vis --backend serial --intensity "$T/t.png" --intensity-touched --out "$T/o5"
if [ $have_py = yes ]; then
    norm=$(python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["grid"]["norm"]))' "$T/out")
    w=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grid"]["intensity"]["width"])' "$T/out")
    h=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grid"]["intensity"]["height"])' "$T/out")
    png_check "$T/t.png" "$w" "$h" && [ "$w" -lt 1024 ] && [ "$h" -lt 1024 ]
    result $? "--intensity-touched: a valid PNG of the updated region only (${w} x ${h})"
    s=$(npy_sum_re "$T/o5/grid.npy")
    # float grid: each cell's sum carries ~1e-7 relative rounding; the total 5e-6 is ample
    python3 -c "import sys; s, n = $s, $norm; sys.exit(0 if abs(s - n) <= 5e-6 * abs(n) else 1)"
    result $? "--unit-vis: sum(Re grid) = norm ($s vs $norm)"
else
    skip "--intensity-touched PNG" "no python3"
    skip "--unit-vis sum rule" "no python3"
fi

# a station layout file of the test's own (SKA track, one dump): six made-up stations in the
# format of the published SKA1-LOW configuration (east, north, up in metres, one a line) with
# the variations the reader accepts: comments (also indented), blank lines, tabs, commas, a
# two-column line, a CRLF line end
{
    printf '# test layout: E N U (metres)\n   # indented comment\n\n'
    printf '6980.125 -4100.5 -5.25\n-120.5\t35.25\t0.0\n0 0 0\r\n \t \n'
    printf '39800, 0 ,12.5\n-1234.5 -2345.75 3\n250.125 310\n'
} >"$T/layout.txt"
expect 0 "gen grid --dataset el82-70 --layout FILE --scale 0.004 (one dump, 6 stations)" \
    "$PK" gen grid --dataset el82-70 --layout "$T/layout.txt" --scale 0.004 --out "$T/el"
grep -q '"num_vis": 15,' "$T/el/params.json" && grep -q '"num_stations": 6,' "$T/el/params.json" &&
    grep -q '"num_times": 1,' "$T/el/params.json" && grep -q '"max_support": 44,' "$T/el/params.json" &&
    grep -q "\"layout\": \"$T/layout.txt\"" "$T/el/params.json"
result $? "el82-70 with the layout file, one dump: 6 stations, 15 visibilities, supports up to 44"
if [ $have_py = yes ]; then
    # the ENU -> (u, v, w) rotations keep lengths: |uvw| = |baseline| / lambda (100 MHz)
    python3 - "$T/el" <<'EOF'
import array, math, struct, sys
def npy(path):
    d = open(path, 'rb').read()
    hl = struct.unpack('<H', d[8:10])[0]
    a = array.array('f')
    a.frombytes(d[10 + hl:])
    return a
u, v, w = (npy(sys.argv[1] + '/%s.npy' % c) for c in ('uu', 'vv', 'ww'))
st = [(6980.125, -4100.5, -5.25), (-120.5, 35.25, 0.0), (0, 0, 0), (39800, 0, 12.5),
      (-1234.5, -2345.75, 3), (250.125, 310, 0)]
lam = 299792458.0 / 100e6
want = sorted(math.sqrt(sum((a - b) ** 2 for a, b in zip(st[i], st[j]))) / lam
              for i in range(6) for j in range(i + 1, 6))
got = sorted(math.sqrt(a * a + b * b + c * c) for a, b, c in zip(u, v, w))
ok = len(got) == len(want) and all(abs(g - e) <= 1e-6 * e for g, e in zip(got, want))
sys.exit(0 if ok else 1)
EOF
    result $? "the file's stations are used: |uvw| of the 15 visibilities = baseline lengths / lambda"
else
    skip "|uvw| = baseline lengths / lambda" "no python3"
fi

# exit 1 when the verification fails
expect 1 "--verify --rtol 0 fails (float grid vs double reference) -> 1" \
    "$PK" run grid --in "$T/in" --backend serial --verify --rtol 0
json_check "$T/out" grid 'not d["verify"]["equal"] and not d["grid"]["verify"]["grid_equal"] and d["verify"]["norm_rel_err"] > 0'
result $? "failed verify still prints the JSON line with the figures"

# bad input, exit 2
mkdir -p "$T/b1" && cp "$T/in"/*.npy "$T/in/params.json" "$T/b1/" && cp "$T/in/support.npy" "$T/b1/vv.npy"
expect 2 "vv.npy of another dtype and length -> 2" "$PK" run grid --in "$T/b1"
grep -q "vv.npy" "$T/err"
result $? "the message names vv.npy"
mkdir -p "$T/b2" && cp "$T/in"/*.npy "$T/in/params.json" "$T/b2/" && cp "$T/in/uu.npy" "$T/b2/kernels.npy"
expect 2 "kernels.npy float32 -> 2" "$PK" run grid --in "$T/b2"
mkdir -p "$T/b3" && cp "$T/in"/*.npy "$T/in/params.json" "$T/b3/" && cp "$T/in/uu.npy" "$T/b3/support.npy"
expect 2 "support.npy float32 -> 2" "$PK" run grid --in "$T/b3"
mkdir -p "$T/b4" && cp "$T/in"/*.npy "$T/b4/"
expect 2 "no params.json and no gridding options -> 2" "$PK" run grid --in "$T/b4"
mkdir -p "$T/b5" && cp "$T/in"/*.npy "$T/b5/" && sed 's/"compact"/"full"/' "$T/in/params.json" >"$T/b5/params.json"
expect 2 "params.json kernel_layout full with 1-D kernels -> 2" "$PK" run grid --in "$T/b5"
mkdir -p "$T/b6" && cp "$T/in"/*.npy "$T/b6/" && sed 's/"kernel": "grid"/"kernel": "su3"/' "$T/in/params.json" >"$T/b6/params.json"
expect 2 "params.json of another kernel -> 2" "$PK" run grid --in "$T/b6"
expect 2 "--oversample 2 (compact stack length differs) -> 2" "$PK" run grid --in "$T/in" --oversample 2
expect 2 "--oversample 2 on the generated compact stack -> 2" "$PK" run grid --oversample 2
expect 2 "--grid-size 16 (supports wider than the grid) -> 2" "$PK" run grid --in "$T/in" --grid-size 16
expect 2 "--oversample 3 -> 2" "$PK" run grid --oversample 3
expect 2 "--grid-size 1023 -> 2" "$PK" run grid --grid-size 1023
expect 2 "--tile-factor 1.5 -> 2" "$PK" run grid --tile-factor 1.5
expect 2 "--central-radius -2 -> 2" "$PK" run grid --central-radius -2
expect 2 "--w-scale nan -> 2" "$PK" run grid --w-scale nan
expect 2 "unknown variant -> 2" "$PK" run grid --variant warp-drive
expect 2 "unknown backend -> 2" "$PK" run grid --backend abacus
expect 2 "run --in with --dataset -> 2" "$PK" run grid --in "$T/in" --dataset small
expect 2 "run --in a directory without data -> 2" "$PK" run grid --in "$T/nothing"
expect 2 "gen without --out -> 2" "$PK" gen grid --dataset small
expect 2 "gen --dataset nope -> 2" "$PK" gen grid --dataset nope --out "$T/x"
expect 2 "gen --scale 0 -> 2" "$PK" gen grid --dataset small --scale 0 --out "$T/x"
expect 2 "gen --scale 2 -> 2" "$PK" gen grid --dataset small --scale 2 --out "$T/x"
expect 2 "gen --kernels diagonal -> 2" "$PK" gen grid --dataset small --kernels diagonal --out "$T/x"
expect 2 "gen --layout for the synthetic set -> 2" "$PK" gen grid --dataset synthetic --layout "$T/in/params.json" --out "$T/x"
printf '1 2\n3 x\n' >"$T/bad_layout.txt"
expect 2 "gen --layout with a bad line -> 2" "$PK" gen grid --dataset el82-70 --layout "$T/bad_layout.txt" --out "$T/x"
grep -q "bad_layout.txt:2" "$T/err"
result $? "the message names the file and line"
printf '# one station\n1 2 3\n' >"$T/one_station.txt"
expect 2 "gen --layout with one station -> 2" "$PK" gen grid --dataset el82-70 --layout "$T/one_station.txt" --out "$T/x"
grep -q "one_station.txt: 1 station" "$T/err"
result $? "the message names the file and the station count"
expect 2 "gen --layout with a missing file -> 2" "$PK" gen grid --dataset el82-70 --layout "$T/no_such_layout.txt" --out "$T/x"

# help, bench
expect 0 "run grid --help" "$PK" run grid --help
grep -q -- "--intensity" "$T/out" && grep -q -- "--export-kernels" "$T/out"
result $? "--help names --intensity and --export-kernels"
expect 0 "bench --kernels grid --size small --backends serial --reps 1" \
    "$PK" bench --kernels grid --size small --backends serial --reps 1 --json "$T/b.json"
grep -q "Gupdates/s" "$T/out" && grep -q "NAG report" "$T/out" && grep -q '"updates_per_s"' "$T/b.json"
result $? "bench table: updates/s, the NAG note, JSON rows"

# the exported stack grids like the original; gen --help
cmp -s "$T/o1/grid.npy" "$T/o4/grid.npy"
result $? "the exported full stack gives the same grid (bitwise, serial)"
expect 0 "gen grid --help" "$PK" gen grid --help
grep -q "el82-70" "$T/out" && grep -q -- "--layout" "$T/out"
result $? "gen --help names the data sets and --layout"

exit $([ $fails -eq 0 ] && echo 0 || echo 1)
