#!/bin/sh
# test_cli_files.sh - TAP test: what `portkern` does to the files it writes and reads (README.md
# "Command line", docs/RELIABILITY.md): every output is written whole (a temporary renamed over
# the target) and keeps an existing file's permission bits; a read-only target is refused, a
# symbolic link is followed (the link stays); a write cut short by a signal or a file-size
# limit leaves neither a partial file nor a temporary, and the temporaries of dead processes
# are removed by the next write; two gens into one directory never mix their files; odd
# params.json files (a NUL byte, a directory, an unknown key) are named, not misread.

: "${top_srcdir:=${top_builddir:-.}}"
. "$top_srcdir/tests/cli_lib.sh"
cli_begin clifiles
unset PORTKERN_THREADS
echo "1..16"

mode_of() { stat -c %a "$1"; }
no_temps() { [ -z "$(find "$1" -name '*.tmp*' 2>/dev/null)" ]; }
small="--backend serial --nx 6 --ny 5 --nz 4 --count 1"

# ---- permissions, links ------------------------------------------------------------------
"$PK" run diffusion3d $small --out "$T/o" >/dev/null 2>&1 && chmod 600 "$T/o/f.npy" &&
    "$PK" run diffusion3d $small --count 2 --out "$T/o" >/dev/null 2>&1
[ $? -eq 0 ] && [ "$(mode_of "$T/o/f.npy")" = 600 ]
result $? "--out over a 0600 file: rewritten, still 0600"

cp "$T/o/f.npy" "$T/ro.npy" && chmod 444 "$T/o/f.npy" && cp "$T/o/f.npy" "$T/before.npy"
"$PK" run diffusion3d $small --count 3 --out "$T/o" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'f.npy: Permission denied' "$T/err" && cmp -s "$T/o/f.npy" "$T/before.npy"
result $? "--out over a 0444 file: refused (exit 2), the file unchanged (exit $rc)"

mkdir -p "$T/l" "$T/real" && cp "$T/ro.npy" "$T/real/target.npy" && chmod 644 "$T/real/target.npy" &&
    ln -s ../real/target.npy "$T/l/f.npy"
"$PK" run diffusion3d $small --count 4 --out "$T/l" >/dev/null 2>&1 &&
    [ -L "$T/l/f.npy" ] && ! cmp -s "$T/real/target.npy" "$T/ro.npy" &&
    "$PK" diff "$T/l/f.npy" "$T/real/target.npy" >/dev/null
result $? "--out through a symbolic link: the link stays, its target holds the result"

# ---- interrupted writes --------------------------------------------------------------------
(ulimit -f 100; exec "$PK" gen diffusion3d --out "$T/fsz" --nx 64 --ny 64 --nz 64) \
    >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ ! -e "$T/fsz/f.npy" ] && [ ! -e "$T/fsz/params.json" ] && no_temps "$T/fsz"
result $? "gen past a file-size limit: no f.npy, no params.json, no temporary left (exit $rc)"

"$PK" gen diffusion3d --out "$T/sig" --nx 8 --ny 8 --nz 8 >/dev/null 2>&1
# a temporary of a process that is gone (pid 2^22 + 1 is beyond Linux's pid_max default) and
# one of a live process (this shell): the next write removes the first only
: >"$T/sig/f.npy.tmp.4194305" && : >"$T/sig/f.npy.tmp.$$"
"$PK" gen diffusion3d --out "$T/sig" --nx 8 --ny 8 --nz 8 >/dev/null 2>&1 &&
    [ ! -e "$T/sig/f.npy.tmp.4194305" ] && [ -e "$T/sig/f.npy.tmp.$$" ]
result $? "a dead process's temporary is removed by the next write, a live one's kept"
rm -f "$T/sig/f.npy.tmp.$$"

"$PK" gen diffusion3d --out "$T/term" --nx 400 --ny 400 --nz 400 >/dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 100 ] && [ -z "$(find "$T/term" -name '*.tmp*' 2>/dev/null)" ]; do
    sleep 0.05
    i=$((i + 1))
done
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 0 ]; then
    skip "SIGTERM during gen removes the temporary" "gen finished before the signal"
else
    [ $rc -eq 143 ] && no_temps "$T/term" && [ ! -e "$T/term/params.json" ]
    result $? "SIGTERM during gen: killed (exit $rc), no temporary, no params.json"
fi

# ---- a data set is one unit ------------------------------------------------------------------
mixed=0
for i in 1 2 3 4; do
    "$PK" gen su3 --out "$T/set" --nv 30000 --seed $i >/dev/null 2>&1 &
    "$PK" gen su3 --out "$T/set" --nv 30000 --seed $((i + 10)) >/dev/null 2>&1
    wait
    seed=$(sed -n 's/.*"seed": \([0-9]*\).*/\1/p' "$T/set/params.json")
    "$PK" gen su3 --out "$T/ref" --nv 30000 --seed "$seed" >/dev/null 2>&1
    cmp -s "$T/set/u.npy" "$T/ref/u.npy" && cmp -s "$T/set/psi.npy" "$T/ref/psi.npy" ||
        mixed=$((mixed + 1))
done
[ $mixed -eq 0 ]
result $? "two gens into one directory at once: the files are all of the seed params.json names ($mixed of 4 mixed)"
"$PK" run su3 --backend serial --in "$T/set" --verify >/dev/null 2>&1
result $? "run --in of that set: verified"

# ---- params.json ------------------------------------------------------------------------------
"$PK" gen diffusion3d --out "$T/p" --nx 4 --ny 4 --nz 4 >/dev/null 2>&1
printf '{"count": 3}\000{"count": "x"}' >"$T/p/params.json"
"$PK" run diffusion3d --backend serial --in "$T/p" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'NUL byte' "$T/err"
result $? "params.json with a NUL byte: exit 2, named (exit $rc)"
rm -f "$T/p/params.json" && mkdir "$T/p/params.json"
"$PK" run diffusion3d --backend serial --in "$T/p" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'params.json: Is a directory' "$T/err"
result $? "params.json that is a directory: exit 2, 'Is a directory' (exit $rc)"
rmdir "$T/p/params.json" && printf '{"kernel": "diffusion3d", "Count": 3}' >"$T/p/params.json"
"$PK" run diffusion3d --backend serial --in "$T/p" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q 'unknown key "Count" ignored' "$T/err" && grep -q '"count": 10' "$T/out"
result $? "params.json with an unknown key: a warning naming it, the default used (exit $rc)"

# ---- numbers ----------------------------------------------------------------------------------
"$PK" run diffusion3d $small --cc 1e-320 >"$T/out" 2>"$T/err"
result $? "--cc 1e-320 (subnormal): a number, accepted"
"$PK" run diffusion3d $small --cc 1e999 >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'not a finite number in double range' "$T/err"
result $? "--cc 1e999: out of double range, exit 2 (exit $rc)"
"$PK" bench --threads 100000 >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q -e '--threads: 100000 is out of range' "$T/err"
result $? "bench --threads 100000: exit 2 before anything runs (exit $rc)"

# ---- bench --json ---------------------------------------------------------------------------
echo '{"old": true}' >"$T/b.json"
chmod 640 "$T/b.json"
"$PK" bench --kernels su3 --size small --backends serial --reps 1 --json "$T/b.json" \
    >/dev/null 2>&1 && grep -q '"rows"' "$T/b.json" && [ "$(mode_of "$T/b.json")" = 640 ] &&
    no_temps "$T"
result $? "bench --json over an existing file: replaced whole, mode kept, no temporary"
"$PK" bench --kernels su3 --size small --backends serial --reps 1 --json "$T/nodir/b.json" \
    >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'cannot write' "$T/err"
result $? "bench --json into a missing directory: exit 2 before benchmarking (exit $rc)"
[ $fails -eq 0 ]
