#!/bin/sh
# test_cli_tune.sh - TAP test of `portkern tune` (issue "tune and wisdom"): bench's verified
# rows kept as wisdom, one entry per kernel, device and case; auto then follows it (its run
# line's reason names the wisdom); the tuning parameters are searched, the winner's kept in
# its entry and applied by auto (the caller's value beats it, a bad one ignores the entry);
# the budget keeps kernels from starting; bad options and an unwritable file are refused.
# grid, image and degrid (issue 16): their entries kept, the grid's tiles and openmp.threads
# applied from an entry; bench prints auto's choice against the best.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin clitune
unset PORTKERN_THREADS PORTKERN_OPENMP_THREADS
echo "1..26"

W=$T/wisdom.json
"$PK" tune --kernels su3 --backends serial,openmp --size small --reps 1 --wisdom "$W" \
    >"$T/out" 2>"$T/err"
rc=$?
result $rc "tune --kernels su3 --backends serial,openmp --size small: exit 0 (exit $rc)"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$W" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["portkern_wisdom"] == 1, d
e = [x for x in d["entries"] if x["kernel"] == "su3"]
layouts = {"aos", "short", "padded", "vfo", "hvfo", "recon12"}
# one entry per backend and layout (case), each naming one of its backend's variants
assert {(x["backend"], x["size_class"]) for x in e} == \
    {(b, "small/" + l) for b in ("serial", "openmp") for l in layouts}, e
assert all(x["variant"] in {"serial", "omp", "omp-simd"} and x["seconds"] > 0 and
           x["size_bytes"] > 0 and x["device_name"] for x in e), e
assert any("x" in x["runners_up"] for x in e if x["backend"] == "openmp"), e
# every entry says its tuning parameters: su3's own ones and openmp.threads, or none
assert all(isinstance(x["tuning"], str) and
           all(t.startswith(("su3.", "openmp.")) for t in x["tuning"].split(";") if t) for x in e), e
PYEOF
    result $? "the wisdom file holds one su3 entry per backend and layout, with times and runners-up"
else
    grep -q '"kernel": "su3"' "$W"
    result $? "the wisdom file holds su3 entries"
fi
[ "$(grep -c '^auto su3 ' "$T/out")" -eq 6 ] && grep -q '^wisdom: 12 entries merged into' "$T/out"
result $? "tune prints auto's choice against the best for each of the 6 layouts and what it saved"
grep -q '^tune time: su3 [0-9.]* s: data and references [0-9.]* s, [0-9]* rows [0-9.]* s' "$T/out"
result $? "tune says where su3's time went (data and references, rows)"

PORTKERN_WISDOM=$W "$PK" run su3 --preset small --layout hvfo >"$T/out" 2>"$T/err"
# which variant won depends on the machine and its load (serial beats OpenMP on a busy 2-core
# machine): the reason must name a tuned variant of the file, whichever it is
grep -q '"reason": "[^"]*wisdom: \(serial\|omp\|omp-simd\) on [^"]*, tuned ' "$T/out"
result $? "run su3 (auto) with PORTKERN_WISDOM: the reason names the wisdom it followed"
PORTKERN_WISDOM=0 "$PK" run su3 --preset small --layout hvfo >"$T/out" 2>"$T/err"
! grep -q 'wisdom' "$T/out"
result $? "PORTKERN_WISDOM=0: no wisdom in the reason"

# A non-default value that measurably wins: with the environment's generic ISA as the default,
# tune tries magicfilter3d.isa=avx2 (below the CPU's best), some 3x faster (one thread: two on a
# busy 2-core machine time the scheduler).
if grep -q avx2 /proc/cpuinfo 2>/dev/null; then
    W2=$T/tuned.json
    PORTKERN_MAGICFILTER3D_ISA=generic "$PK" tune --kernels magicfilter3d --backends openmp --threads 1 \
        --size small --reps 5 --wisdom "$W2" >"$T/out" 2>"$T/err"
    rc=$?
    # whether avx2 wins by the 2% tune asks is a measurement (under a sanitizer or a loaded
    # machine it may not): the tune must succeed and try the value; the entries the later
    # checks follow are then given the value by hand, so they test the apply path alone
    [ $rc -eq 0 ] && grep -q "magicfilter3d.isa=avx2" "$T/out" &&
        python3 - "$W2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = [x for x in d["entries"] if x["kernel"] == "magicfilter3d"]
assert e and all(x.get("tuning", "") in ("", "magicfilter3d.isa=avx2") for x in e), e
for x in e:
    x["tuning"] = "magicfilter3d.isa=avx2"
json.dump(d, open(sys.argv[1], "w"), indent=2)
PYEOF
    result $? "tune with a generic default tries magicfilter3d.isa=avx2 and its entries are valid (exit $rc)"
    PORTKERN_WISDOM=$W2 "$PK" run magicfilter3d --preset small >"$T/out" 2>"$T/err"
    grep -q '"reason": "[^"]*wisdom: omp on [^"]*tuning from wisdom: magicfilter3d.isa=avx2' "$T/out"
    result $? "run magicfilter3d (auto) follows the entry with its tuning, the reason says so"
    PORTKERN_MAGICFILTER3D_ISA=generic PORTKERN_WISDOM=$W2 "$PK" run magicfilter3d \
        --preset small >"$T/out" 2>"$T/err"
    grep -q 'tuning kept (set by the caller or the environment): magicfilter3d.isa' "$T/out"
    result $? "the environment's value beats the entry's, the reason says so"
    # a hand-edited entry naming another kernel's parameter: ignored with the reason
    sed 's/"tuning": "magicfilter3d.isa=avx2"/"tuning": "su3.isa=avx2"/' "$W2" >"$T/bad.json"
    PORTKERN_WISDOM=$T/bad.json "$PK" run magicfilter3d --preset small >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 0 ] && grep -q 'of bad tuning (tuning .su3.isa.: not a parameter of magicfilter3d)' "$T/out"
    result $? "an entry with another kernel's parameter is ignored, the reason says why (exit $rc)"
else
    for i in 1 2 3 4; do skip "tuned magicfilter3d entries" "no AVX2: no value to try"; done
fi

# grid, image and degrid (issue 16): entries kept (their size measure is the grid's bytes),
# the grid's tile parameters and openmp.threads searched, auto follows the entries
W3=$T/grid.json
"$PK" tune --kernels grid,image,degrid --backends openmp --size small --reps 1 \
    --wisdom "$W3" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ! grep -q 'not kept' "$T/err" && grep -q 'grid.tile_size=' "$T/out" &&
    [ "$(grep -c '^auto \(grid\|image\|degrid\): ' "$T/out")" -eq 3 ] &&
    python3 - "$W3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["entries"]
assert {(x["kernel"], x["backend"]) for x in e} == \
    {(k, "openmp") for k in ("grid", "image", "degrid")}, e
assert all(x["size_bytes"] == 8.0 * 1024 * 1024 for x in e), e
# a tuned entry names the grid's parameters or openmp.threads only
assert all(t.startswith(("grid.", "openmp.")) for x in e for t in x["tuning"].split(";") if t), e
PYEOF
result $? "tune --kernels grid,image,degrid: an entry per kernel and backend, the tiles searched (exit $rc)"
for k in image degrid; do
    PORTKERN_WISDOM=$W3 "$PK" run $k --preset small >"$T/out" 2>"$T/err"
    grep -q '"reason": "[^"]*wisdom: omp[-a-z]* on [^"]*, tuned ' "$T/out"
    result $? "run $k (auto) with the tuned file: the reason names its wisdom"
done
# the apply path alone: the openmp grid entry given tiles and a thread count by hand
python3 - "$W3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"] = [x for x in d["entries"] if x["kernel"] == "grid" and x["backend"] == "openmp"]
d["entries"][0]["tuning"] = "grid.tile_size=32;grid.central_radius=-1;openmp.threads=1"
json.dump(d, open(sys.argv[1], "w"), indent=2)
PYEOF
PORTKERN_WISDOM=$W3 "$PK" run grid --preset small >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q 'tuning from wisdom: grid.tile_size=32, grid.central_radius=-1, openmp.threads=1' "$T/out" &&
    grep -q '1 threads (openmp.threads)' "$T/out"
result $? "run grid (auto) takes the entry's tiles and thread count, the reason says so (exit $rc)"
PORTKERN_WISDOM=$W3 "$PK" bench --kernels grid --backends openmp --size small --reps 1 \
    >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q '^auto grid: openmp omp-tiled [0-9.]* ms = [0-9.]*x the best (openmp ' "$T/out"
result $? "bench prints auto's choice (the file's entry) against the best row it measured (exit $rc)"

"$PK" tune --kernels su3,dslash --backends serial --size small --reps 1 --budget 0 \
    --wisdom "$T/none.json" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'not tuned, the budget of 0 s is spent' "$T/out")" -eq 2 ] &&
    [ ! -e "$T/none.json" ]
result $? "--budget 0: no kernel starts, both listed, no file written (exit $rc)"
# the budget shared by the kernels: with 1 ms the first kernel starts with a share of at
# most 1 ms, which its data alone outlasts, so its search runs no row (said), and the second
# is left out (listed); no timing ratio is asserted
"$PK" tune --kernels magicfilter3d,dslash --backends openmp --size small --reps 1 --budget 0.001 \
    --wisdom "$T/share.json" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q '^tune time: magicfilter3d ' "$T/out" &&
    grep -q 'dslash small: not tuned, the budget of 0 s is spent' "$T/out" &&
    ! grep -q '^magicfilter3d .*  \(magicfilter3d\|openmp\)\.[a-z_]*=' "$T/out" &&
    { grep -q "magicfilter3d's share of the budget (0 s) was spent: [0-9]* rows\? of its search not run" "$T/out" ||
      ! grep -q 'openmp.threads\|isa' "$T/out"; } &&
    grep -q '^wisdom: 2 entries merged' "$T/out"
result $? "--budget 0.001: the first kernel's search stops at its share, the second is left out (exit $rc)"
# the proxy (on at paper size; --proxy on here, at small size): every grid variant first on a
# tenth of the visibilities, verified; a full-size row left out says it was the proxy's call
"$PK" tune --kernels grid --backends serial,openmp --size small --reps 1 --proxy on \
    --wisdom "$T/proxy.json" >"$T/out" 2>"$T/err"
rc=$?
np=$(grep -c '^grid  *\(serial\|openmp\) .* proxy  .* yes' "$T/out")
[ $rc -eq 0 ] && grep -q "^tune: grid's proxy (small --scale 0.1, a tenth of the visibilities)" "$T/out" &&
    [ "$np" -ge 3 ] && [ "$(grep -c '^auto grid: ' "$T/out")" -eq 1 ] &&
    { ! grep -q 'skipped: .*proxy' "$T/out" ||
      grep -q '^grid [a-z]* skipped: [a-z-]* tune: not run at full size: its proxy run took [0-9.]* ms, [0-9.]*x the proxy.s best' "$T/out"; }
result $? "tune --proxy on: grid's variants ranked on a verified proxy first ($np rows), a row left out says why (exit $rc)"
# grid, image and degrid in one tune: image and degrid take grid's data set (not generated
# again), image's reference is grid's double grid through the library's FFT and crop; every
# row still verified; each kernel's profile printed
"$PK" tune --kernels grid,image,degrid --backends serial,openmp --size small --reps 1 \
    --wisdom "$T/share.json" >"$T/out" 2>"$T/err"
rc=$?
nv=$(grep -c '^\(image\|degrid\)  *\(serial\|openmp\) .* yes' "$T/out")
[ $rc -eq 0 ] && [ "$nv" -ge 4 ] && ! grep -q 'NOT verified' "$T/out" &&
    grep -q "^image small: .*(grid's data set of this tune, not generated again, reference from grid's double grid [0-9.]* s)" "$T/out" &&
    grep -q "^degrid small: .*(grid's data set of this tune, not generated again, serial reference [0-9.]* s)" "$T/out"
result $? "tune grid,image,degrid: image and degrid on grid's data set, image's reference from grid's double grid, $nv rows verified (exit $rc)"
[ "$(grep -c '^tune profile: \(grid\|image\|degrid\): generation (inputs, outputs allocated) [0-9.]* s, references [0-9.]* s, rows.* plans [0-9.]* s, timed runs [0-9.-]* s, verification [0-9.]* s' "$T/out")" -eq 3 ]
result $? "tune prints each kernel's profile (generation, references, plans, timed runs, verification)"
"$PK" tune --proxy sometimes >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "option --proxy: 'sometimes'" "$T/err"
result $? "tune --proxy sometimes: exit 2 (exit $rc)"
"$PK" tune --size huge >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "unknown size 'huge'" "$T/err"
result $? "tune --size huge: exit 2 (exit $rc)"
"$PK" tune --small maybe >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "option --small: 'maybe'" "$T/err"
result $? "tune --small maybe: exit 2 (exit $rc)"
# at paper size the small class is tuned first (--small on, the default): entries of both
"$PK" tune --kernels conv2d --backends openmp --size paper --reps 1 --wisdom "$T/both.json" \
    >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q '^tune: the small class first' "$T/out" &&
    grep -q '^tune: now the paper class' "$T/out" &&
    grep -q '"size_class": "small' "$T/both.json" && grep -q '"size_class": "paper' "$T/both.json"
result $? "tune --size paper: the small class tuned first, entries of both classes (exit $rc)"
"$PK" tune --kernels su3 --backends serial --size small --reps 1 --wisdom /proc/self/w.json \
    >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q 'w.json' "$T/err"
result $? "tune --wisdom into an unwritable place: exit 1 naming the file (exit $rc)"
# su3's layouts share a data set and give chi back in AoS: a row whose outputs are bitwise
# those of a verified row of another layout takes that verdict (the reason names the row and
# its layout); every row is still verified
"$PK" tune --kernels su3 --backends serial,openmp --size small --reps 1 --wisdom "$T/s3.json" \
    --json "$T/s3rows.json" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 0 ] && command -v python3 >/dev/null 2>&1; then
    python3 - "$T/s3rows.json" <<'PYEOF'
import json, re, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["status"] == "ok"]
assert rows and all(r["verified"] for r in rows), rows
pat = re.compile(r"bitwise those of the verified row (serial|openmp) (\S+) "
                 r"(aos|short|padded|vfo|hvfo|recon12)\b")
cross = [(r["case"], m.group(3)) for r in rows for m in [pat.search(r["reason"] or "")] if m]
assert cross and all(c != o for c, o in cross), cross
PYEOF
    rc=$?
fi
result $rc "tune su3: rows of one layout take the verdict of a bitwise equal row of another"
[ $fails -eq 0 ]
