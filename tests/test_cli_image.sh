#!/bin/sh
# test_cli_image.sh - TAP test of 'portkern run image' and 'portkern run degrid' (README.md,
# "Command line"; docs/KERNELS.md 7): the JSON lines, --in of a 'gen grid' data set, image.npy,
# the FITS file and its WCS (the three sources of the generator at their world coordinates),
# the PNG preview, vis.npy, bench rows and the bad inputs of issue 21 item 6 (exit 2, no file
# left).  The 'small' data set only (50,000 visibilities on a 1024 grid).  Never asserts
# timings.  tests/local.mk exports top_builddir and POCL_CACHE_DIR.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin cli-image struct array math
if [ $have_py = yes ] && python3 -c 'import astropy.io.fits, astropy.wcs' 2>/dev/null; then
    have_astropy=yes
else
    have_astropy=no
fi
echo "1..46"

# npy_head FILE: the header dict of a .npy file (od only)
npy_head() { head -c 128 "$1" | tr -d '\000' | tr -c '[:print:]' ' '; }

# no_files DIR: DIR is absent or holds no file (a temporary included)
no_files() { [ ! -e "$1" ] || [ -z "$(find "$1" -type f)" ]; }

# ---- help ------------------------------------------------------------------------------------
expect 0 "run image --help" "$PK" run image --help
grep -q 'image.fits' "$T/out" && grep -q -- '--image-size' "$T/out" && grep -q -- '--ra DEG' "$T/out"
result $? "run image --help names image.fits, --image-size and --ra"
expect 0 "run degrid --help" "$PK" run degrid --help
grep -q -- '--model FILE.npy' "$T/out" && grep -q 'vis.npy' "$T/out"
result $? "run degrid --help names --model and vis.npy"

# ---- the default generated set ---------------------------------------------------------------
expect 0 "run image --verify (the small set, auto backend)" "$PK" run image --verify
json_check "$T/out" image 'd["kernel"] == "image" and d["verify"]["equal"] and d["verify"]["mode"] == "norm" and d["image"]["image_size"] == 800 and d["image"]["grid_size"] == 1024 and d["image"]["num_vis"] == 50000 and d["image"]["num_skipped"] == 0 and d["image"]["norm"] > 0 and set(d["image"]["stages"]) == {"zero", "grid", "fft rows", "fft cols+crop"} and d["image"]["peak"] == {"x": 360, "y": 420, "value": d["image"]["peak"]["value"], "l": d["image"]["peak"]["l"], "m": d["image"]["peak"]["m"]} and abs(d["image"]["peak"]["value"] - 1) < 0.02 and d["image"]["fits"] is None and "seconds" in d and "transfer_seconds" in d'
result $? "image JSON: sizes, norm, the four stages, the peak at the 1 Jy source, fits null"

expect 0 "run degrid --verify (random model, auto backend)" "$PK" run degrid --verify
json_check "$T/out" degrid 'd["kernel"] == "degrid" and d["verify"]["equal"] and d["degrid"]["num_vis"] == 50000 and d["degrid"]["image_size"] == 800 and set(d["degrid"]["stages"]) == {"place+fft cols", "fft rows", "degrid"} and d["degrid"]["vis_rms"] > 0'
result $? "degrid JSON: sizes, the three stages, vis_rms"

# ---- gen grid, run image --in --out --fits --png ---------------------------------------------
expect 0 "gen grid --dataset small" "$PK" gen grid --dataset small --out "$T/in"
expect 0 "run image --in --out --fits --png --preset small --verify (serial)" \
    "$PK" run image --in "$T/in" --out "$T/o" --fits --png "$T/p.png" --preset small \
    --backend serial --verify
json_check "$T/out" image 'd["verify"]["equal"] and d["backend"] == "serial" and d["image"]["image_size"] == 512 and d["image"]["fits"].endswith("/image.fits") and d["image"]["png"]["width"] == 512 and d["image"]["peak"]["x"] == 216 and d["image"]["peak"]["y"] == 276'
result $? "image JSON of --in: 512 image, fits path, png, the peak at (216, 276)"
npy_head "$T/o/image.npy" | grep -q "'descr': '<f4', 'fortran_order': False, 'shape': (512, 512)"
result $? "image.npy is float32 [512][512]"
sig=$(od -An -tx1 -N24 "$T/p.png" | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a0000000d494844520000020000000200" ]
result $? "the preview is a 512 x 512 PNG"
head -c 30 "$T/o/image.fits" | grep -q '^SIMPLE  =                    T' &&
    [ $(($(wc -c <"$T/o/image.fits") % 2880)) -eq 0 ]
result $? "image.fits is a FITS file (SIMPLE = T, whole 2880-byte blocks)"

# The header read back card by card, and the three sources found at their world coordinates:
# each source's brightest pixel near where the generator put it (l = fl l_max, m = fm l_max,
# l_max = sin(cell) image_size / 2 with the data set's image size), its (l, m) from the header
# (SIN: l = -(x + 1 - CRPIX1) |CDELT1|, m = (y + 1 - CRPIX2) CDELT2, degrees to radians), within
# a pixel of the source's, and its value within 0.02 of the flux.
if [ $have_py = yes ]; then
    python3 - "$T/o/image.fits" "$T/o/image.npy" "$T/in/params.json" <<'EOF'
import array, json, math, struct, sys
raw = open(sys.argv[1], 'rb').read()
hdr, i = {}, 0
while True:
    card = raw[i:i + 80].decode('ascii')
    i += 80
    key = card[:8].strip()
    if key == 'END':
        break
    if card[8:10] == '= ':
        v = card[10:].split('/')[0].strip() if not card[10:].strip().startswith("'") else card[10:].strip().split("'")[1].strip()
        hdr[key] = v
p = json.load(open(sys.argv[3]))
cell = p["cell_size_rad"]
N = int(hdr['NAXIS1'])
def f(k): return float(hdr[k])
ok = hdr['CTYPE1'] == 'RA---SIN' and hdr['CTYPE2'] == 'DEC--SIN' and hdr['CTYPE3'] == 'FREQ'
ok = ok and int(hdr['NAXIS']) == 2 and N == 512 and int(hdr['NAXIS2']) == 512
ok = ok and hdr['BITPIX'] == '-32' and hdr['BUNIT'] == 'JY/BEAM'
ok = ok and f('CRPIX1') == N / 2 + 1 and f('CRPIX2') == N / 2 + 1
ok = ok and abs(f('CDELT1') + math.degrees(cell)) <= 1e-12 * math.degrees(cell)
ok = ok and abs(f('CDELT2') - math.degrees(cell)) <= 1e-12 * math.degrees(cell)
ok = ok and f('CRVAL1') == 0 and abs(f('CRVAL2') + 26.82472208) < 1e-9 and f('CRVAL3') == 1e8
if not ok:
    print('# header', hdr)
    sys.exit(1)
# the data: FITS big-endian floats after the 2880-byte blocks of the header
hlen = (i + 2879) // 2880 * 2880
fits = array.array('f')
fits.frombytes(raw[hlen:hlen + 4 * N * N])
if sys.byteorder == 'little':
    fits.byteswap()
d = open(sys.argv[2], 'rb').read()
hl = struct.unpack('<H', d[8:10])[0]
img = array.array('f')
img.frombytes(d[10 + hl:])
if list(fits) != list(img):
    print('# FITS data differ from image.npy')
    sys.exit(1)
lmax = math.sin(cell) * p["image_size"] / 2
for fl, fm, flux in ((0.10, 0.05, 1.0), (-0.45, 0.30, 0.5), (0.55, -0.50, 0.7)):
    l, m = fl * lmax, fm * lmax
    x0, y0 = round(N / 2 - l / cell), round(N / 2 + m / cell)
    best = max(((img[y * N + x], x, y) for y in range(y0 - 3, y0 + 4) for x in range(x0 - 3, x0 + 4)))
    v, x, y = best
    lh = -(x + 1 - f('CRPIX1')) * math.radians(abs(f('CDELT1')))
    mh = (y + 1 - f('CRPIX2')) * math.radians(f('CDELT2'))
    if abs(lh - l) > cell or abs(mh - m) > cell or abs(v - flux) > 0.02:
        print('# source', fl, fm, flux, 'found', x, y, v, 'l, m', lh, mh, 'want', l, m)
        sys.exit(1)
    print('# source %.2f Jy at pixel (%d, %d): %.5f; l %.6f m %.6f (want %.6f %.6f)' % (flux, x, y, v, lh, mh, l, m))
EOF
    result $? "FITS header (SIN axes, CRPIX N/2+1, CDELT -cell/+cell, phase centre, FREQ, BUNIT), data = image.npy, the three sources at their coordinates"
else
    skip "FITS header and the sources' coordinates" "no python3"
fi
if [ $have_astropy = yes ]; then
    python3 - "$T/o/image.fits" "$T/in/params.json" <<'EOF'
import json, math, sys
from astropy.io import fits
from astropy.wcs import WCS
h = fits.open(sys.argv[1])[0]
w = WCS(h.header).celestial
p = json.load(open(sys.argv[2]))
cell, N = p["cell_size_rad"], h.data.shape[0]
lmax = math.sin(cell) * p["image_size"] / 2
ra0, dec0 = 0.0, math.radians(-26.82472208)
for fl, fm in ((0.10, 0.05), (-0.45, 0.30), (0.55, -0.50)):
    l, m = fl * lmax, fm * lmax
    n = math.sqrt(1 - l * l - m * m)
    dec = math.asin(m * math.cos(dec0) + n * math.sin(dec0))
    ra = ra0 + math.atan2(l, n * math.cos(dec0) - m * math.sin(dec0))
    x, y = w.world_to_pixel_values(math.degrees(ra) % 360, math.degrees(dec))
    if abs(x - (N / 2 - l / cell)) > 1 or abs(y - (N / 2 + m / cell)) > 1:
        sys.exit(1)
EOF
    result $? "astropy's WCS puts the sources' RA/Dec at their pixels"
else
    skip "astropy's WCS of the sources" "astropy not importable"
fi

# ---- degrid ----------------------------------------------------------------------------------
expect 0 "run degrid --in --model image.npy --out --verify (serial)" \
    "$PK" run degrid --in "$T/in" --model "$T/o/image.npy" --out "$T/d" --backend serial --verify
json_check "$T/out" degrid 'd["verify"]["equal"] and d["degrid"]["image_size"] == 512 and d["degrid"]["model"].endswith("image.npy") and d["degrid"]["num_skipped"] == 0'
result $? "degrid JSON of --model: the model's size and path"
npy_head "$T/d/vis.npy" | grep -q "'descr': '<c8', 'fortran_order': False, 'shape': (50000,)"
result $? "vis.npy is complex64 [50000]"
expect 0 "run degrid --verify on openmp (omp variant)" \
    "$PK" run degrid --in "$T/in" --model "$T/o/image.npy" --backend openmp --variant omp --verify
expect 0 "run image --verify on openmp, --image-cell equal to the grid's" \
    "$PK" run image --in "$T/in" --backend openmp --verify --image-cell 0.00032

# ---- bad input: exit 2, nothing written ------------------------------------------------------
expect 2 "image larger than the grid: exit 2" "$PK" run image --in "$T/in" --image-size 2048 --out "$T/b1" --fits
grep -q 'larger than the grid' "$T/err" && no_files "$T/b1"
result $? "the message says so; no file written"
expect 2 "odd --image-size: exit 2" "$PK" run image --image-size 511 --out "$T/b2"
no_files "$T/b2"
result $? "no file written"
expect 2 "--image-cell inconsistent with the grid: exit 2" "$PK" run image --in "$T/in" --image-cell 1e-4 --out "$T/b3"
grep -q 'inconsistent' "$T/err" && no_files "$T/b3"
result $? "the message says inconsistent; no file written"
expect 2 "--fits without --out: exit 2" "$PK" run image --fits
grep -q 'needs --out' "$T/err"
result $? "the message says --fits needs --out"
mkdir -p "$T/f/image.fits"
expect 2 "--fits where DIR/image.fits cannot be written (a directory): exit 2" \
    "$PK" run image --out "$T/f" --fits
[ -z "$(find "$T/f" -type f ! -name image.npy)" ]
result $? "no FITS file or temporary left"
: >"$T/file"
expect 2 "--out under a regular file (unwritable DIR): exit 2" "$PK" run image --out "$T/file/o" --fits
[ ! -e "$T/file/o" ]
result $? "nothing written"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$T/ro" && chmod 555 "$T/ro"
    expect 2 "--fits into a read-only DIR: exit 2" "$PK" run image --out "$T/ro" --fits
    no_files "$T/ro"
    result $? "no file in the read-only DIR"
else
    skip "--fits into a read-only DIR" "root writes anywhere"
    skip "no file in the read-only DIR" "root writes anywhere"
fi
expect 2 "gen image: exit 2 (gen grid writes the data sets)" "$PK" gen image --out "$T/g"
if [ $have_py = yes ]; then
    python3 - "$T" <<'EOF'
import struct, sys
def npy(path, descr, shape, nbytes):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + b'\0' * nbytes)
t = sys.argv[1]
npy(t + '/m64.npy', '<f8', '(512, 512)', 8 * 512 * 512)
npy(t + '/mrect.npy', '<f4', '(512, 256)', 4 * 512 * 256)
npy(t + '/m3d.npy', '<f4', '(2, 16, 16)', 4 * 512)
npy(t + '/mbig.npy', '<f4', '(2048, 2048)', 4 * 2048 * 2048)
npy(t + '/m256.npy', '<f4', '(256, 256)', 4 * 256 * 256)
EOF
    expect 2 "degrid --model float64: exit 2" "$PK" run degrid --in "$T/in" --model "$T/m64.npy" --out "$T/b4"
    grep -q 'expected a float32' "$T/err" && no_files "$T/b4"
    result $? "the message names the dtype expected; no file written"
    expect 2 "degrid --model not square: exit 2" "$PK" run degrid --in "$T/in" --model "$T/mrect.npy" --out "$T/b5"
    expect 2 "degrid --model 3-D: exit 2" "$PK" run degrid --in "$T/in" --model "$T/m3d.npy"
    expect 2 "degrid --model larger than the grid: exit 2" "$PK" run degrid --in "$T/in" --model "$T/mbig.npy" --out "$T/b6"
    grep -q 'larger than the grid' "$T/err" && no_files "$T/b6"
    result $? "the message says larger than the grid; no file written"
    expect 2 "degrid --model 256 with --image-size 512: exit 2" \
        "$PK" run degrid --in "$T/in" --model "$T/m256.npy" --image-size 512
else
    for i in 1 2 3 4 5 6 7; do skip "degrid bad models" "no python3"; done
fi
expect 2 "degrid --model missing file: exit 2" "$PK" run degrid --model "$T/nothere.npy"

# ---- bench -----------------------------------------------------------------------------------
expect 0 "bench --kernels image,degrid --size small --backends serial,openmp --reps 1 --json" \
    "$PK" bench --kernels image,degrid --size small --backends serial,openmp --reps 1 \
    --json "$T/bench.json"
if [ $have_py = yes ]; then
    python3 - "$T/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r["status"] == "ok"]
assert rows and all(r["verified"] for r in rows), d["rows"]
assert {"image", "degrid"} == {r["kernel"] for r in rows}
assert {"serial", "openmp"} <= {r["backend"] for r in rows}
assert all(r[r["kernel"]]["image_size"] == 512 for r in rows)
EOF
else
    grep -q '"verified": true' "$T/bench.json"
fi
result $? "bench rows of image and degrid, verified, 512 images"

[ $fails -eq 0 ]
