#!/bin/sh
# test_mpi.sh - libportkern-mpi's distributed plans under mpirun with 1, 2, 3 and 4 ranks
# (--oversubscribe: more ranks than cores), each launch under `timeout` so that a rank stuck
# in a collective fails the test instead of hanging make check.  tests/test_mpi (C) does the
# work and prints PASS/FAIL/SKIP lines (rank 0, the verdict of all ranks); here they become
# TAP, with one more point per launch for its exit status.
# Skips, saying why, when the build has no MPI (configure --without-mpi, or none found) or
# there is no launcher (MPIRUN, set by configure, else mpirun on PATH).
. "${top_srcdir:-.}/tests/tap.sh"
n=0 fails=0
bin=./tests/test_mpi
# PK_HAVE_MPI: set by make check (tests/local.mk) from configure; by hand, the program decides
if [ "${PK_HAVE_MPI:-1}" != 1 ] || [ ! -x "$bin" ]; then
    echo "1..0 # SKIP built without MPI (configure found none, or --without-mpi): no libportkern-mpi"
    exit 0
fi
run=${MPIRUN:-}
[ -n "$run" ] || run=$(command -v mpirun || command -v mpiexec || true)
if [ -z "$run" ] || ! command -v "$run" >/dev/null 2>&1; then
    echo "1..0 # SKIP no MPI launcher (mpirun / mpiexec) found"
    exit 0
fi
# Open MPI refuses to run as root unless told; CI runs as root in a container.
if [ "$(id -u)" -eq 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# Containers often forbid the cross-memory attach (ptrace) that Open MPI's shared-memory
# transport uses for large messages ("Read -1, expected ..., errno = 1"): copy in and out
# through the shared segment instead, which works everywhere (the caller's setting wins).
: "${OMPI_MCA_btl_vader_single_copy_mechanism:=none}"
export OMPI_MCA_btl_vader_single_copy_mechanism
# --enable-sanitizers (tests/local.mk sets LSAN_OPTIONS): what Open MPI keeps from MPI_Init
# is suppressed by function (tests/lsan.supp), which needs whole stacks.
if [ -n "${LSAN_OPTIONS:-}" ]; then
    LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0"
    export LSAN_OPTIONS
fi
# Open MPI's --oversubscribe; other launchers (MPICH's hydra) oversubscribe by default.
over=
"$run" --version 2>&1 | grep -q "Open MPI\|OpenRTE" && over=--oversubscribe
# A launch takes ~1 s here; 240 s is far beyond any honest run and still ends a hang.
limit=${PK_MPI_TEST_TIMEOUT:-240}
out=tests/test_mpi.out
for np in 1 2 3 4; do
    rm -f "$out.$np"
    timeout -k 10 "$limit" "$run" $over -np "$np" "$bin" > "$out.$np" 2> "$out.$np.err"
    rc=$?
    while IFS= read -r line; do
        case "$line" in
            PASS:*) result 0 "${line#PASS: }";;
            FAIL:*) result 1 "${line#FAIL: }";;
            SKIP:*) skip "${line#SKIP: }" "see the line";;
        esac
    done < "$out.$np"
    case $rc in
        0) result 0 "mpirun -np $np: every rank exited 0";;
        124|137) result 1 "mpirun -np $np: killed after ${limit} s (a hang)";;
        *) result 1 "mpirun -np $np: exit status $rc";;
    esac
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$out.$np.err" | tail -n 20
done

# The command line: `portkern run KERNEL --mpi` (rank 0 prints one JSON line with a per_rank
# entry for every rank, the others nothing) and `portkern-probe --mpi`.
pk=./tools/portkern
for np in 1 3; do
    for args in "dslash --dims 2,2,3,5 --recon12 --verify" "dslash --dims 2,3,2,4 --half --verify" \
                "dslash --dims 2,2,3,9 --verify" "dslash --dims 2,2,3,9 --overlap 0 --verify" \
                "magicfilter3d --size 8x6x9 --bc shrink --verify" "magicfilter3d --size 7 --bc grow --verify" \
                "magicfilter3d --size 7 --transpose --verify" \
                "magicfilter3d --size 7x5x8 --bc grow --transposes 0 --verify" "diffusion3d --nx 8 --ny 8 --nz 9 --count 3 --verify" \
                "laplace2d --l 50 --count 5 --verify" "laplace2d --l 48 --count 9 --layout hvfo --nw 8 --verify" \
                "conv2d --h 9 --w 8 --kh 3 --kw 3 --verify" "conv2d --h 16 --w 12 --kh 5 --kw 3 --variant fft --verify" \
                "su3 --nv 100 --verify" "grid --dataset small --scale 0.02" \
                "grid --dataset small --scale 0.02 --image --verify"; do
        kern=${args%% *}
        timeout -k 10 "$limit" "$run" $over -np "$np" "$pk" run $args --mpi --repeat 2 \
            > "$out.cli" 2> "$out.cli.err"
        rc=$?
        lines=$(wc -l < "$out.cli")
        ranks=$(grep -o '"rank": [0-9]*' "$out.cli" | wc -l)
        ok=1
        [ "$rc" -eq 0 ] && [ "$lines" -eq 1 ] && [ "$ranks" -eq "$np" ] &&
            grep -q "^{\"kernel\": \"$kern\", \"mpi\": true, \"ranks\": $np," "$out.cli" &&
            grep -q '"compute_s": [0-9]' "$out.cli" && grep -q '"comm_s": [0-9]' "$out.cli" &&
            [ "$(grep -o '"halo_memory": "host", "mpi_cuda_aware": [a-z]*' "$out.cli" | wc -l)" -eq "$np" ] &&
            ok=0
        # --verify: rank 0's gathered slabs equal its one-process run (bitwise but for the
        # FFT variants and dslash: omp-vnode, auto's choice here, differs from one process in
        # the last bits on some lattices, docs/SCALING.md 3)
        # dslash t-slabs of 3 planes (2,2,3,9 on 3 ranks, 9 and 5 planes on 1): every rank
        # computes its interior while the faces travel ("overlap": true), none with --overlap 0
        case "$np $args" in
            "1 dslash --dims 2,2,3,9 --verify") grep -q '"overlap": false' "$out.cli" || ok=1;;
            "3 dslash --dims 2,2,3,9 --verify")
                [ "$(grep -o '"overlap": true' "$out.cli" | wc -l)" -eq 3 ] || ok=1;;
            *"--overlap 0"*) ! grep -q '"overlap": true' "$out.cli" || ok=1;;
            # magicfilter3d: the transposes by default on the host, the halo planes by option
            *"--transposes 0"*) grep -q '"transposes": false' "$out.cli" || ok=1;;
            *magicfilter3d*) grep -q '"transposes": true' "$out.cli" || ok=1;;
            # the dirty image over the bands: rank 0's equals the gathered grid's, bitwise
            *--image*) grep -q '"image_verify": {"bitwise": true' "$out.cli" || ok=1;;
        esac
        case "$args" in
            *--verify*) grep -q '"verify": {"equal": true' "$out.cli" || ok=1
                        case "$args" in *fft*|dslash*) ;; *) grep -q '"bitwise": true' "$out.cli" || ok=1;; esac;;
        esac
        result $ok "mpirun -np $np portkern run $args --mpi: one JSON line, $np per_rank entries"
        [ "$ok" -eq 0 ] || { sed 's/^/# /' "$out.cli" "$out.cli.err" | tail -n 20; }
    done
done
# grid from a 'portkern gen grid' directory: every rank reads it and grids its block of the
# visibilities; --verify (rank 0 gathers the bands: against the double reference of all
# visibilities), --out (rank 0 writes grid.npy), which 'portkern diff' finds norm-wise equal
# to one process's grid of the same directory.
gdir=$out.grid.d
rm -rf "$gdir"
if ./tools/portkern gen grid --dataset small --scale 0.05 --out "$gdir/in" > /dev/null 2>&1 &&
   ./tools/portkern run grid --in "$gdir/in" --out "$gdir/one" --threads 1 > /dev/null 2>&1; then
    for np in 2 4; do
        timeout -k 10 "$limit" "$run" $over -np "$np" "$pk" run grid --mpi --in "$gdir/in" \
            --verify --out "$gdir/mpi$np" > "$out.cli" 2> "$out.cli.err"
        rc=$?
        ok=1
        [ "$rc" -eq 0 ] && [ "$(wc -l < "$out.cli")" -eq 1 ] &&
            grep -q '"verify": {"equal": true' "$out.cli" &&
            [ "$(grep -o '"num_vis": [0-9]*' "$out.cli" | wc -l)" -eq $((np + 1)) ] &&
            ./tools/portkern diff "$gdir/mpi$np/grid.npy" "$gdir/one/grid.npy" --norm \
                > "$out.diff" 2>&1 && ok=0
        result $ok "mpirun -np $np portkern run grid --mpi --in DIR --verify --out: equal to the reference, grid.npy norm-wise the one-process grid"
        [ "$ok" -eq 0 ] || sed 's/^/# /' "$out.cli" "$out.cli.err" "$out.diff" | tail -n 20
    done
else
    result 1 "portkern gen grid / run grid --out for the --mpi --in test"
fi
rm -rf "$gdir"
# refused RC NEEDLE WHAT ARGS...: `mpirun -np 2 portkern run ARGS` fails (exit status RC, or
# any non-zero one for RC "any"), prints nothing on stdout and says NEEDLE once (rank 0 only).
refused() {
    want=$1 needle=$2 what=$3
    shift 3
    timeout -k 10 "$limit" "$run" $over -np 2 "$pk" run "$@" > "$out.cli" 2> "$out.cli.err"
    rc=$?
    said=$(grep -c "$needle" "$out.cli.err")
    ok=1
    if [ "$want" = any ]; then [ "$rc" -ne 0 ]; else [ "$rc" -eq "$want" ]; fi &&
        [ "$said" -eq 1 ] && [ ! -s "$out.cli" ] && ok=0
    result $ok "mpirun -np 2 portkern run $what: refused, said once (rc $rc)"
    [ "$ok" -eq 0 ] || sed 's/^/# /' "$out.cli.err" | tail -n 20
}
# a directory that is not there: refused on every rank, said once (by rank 0), usage status
refused 2 "params.json" "grid --mpi --in MISSING" grid --mpi --in "$out.no-such-dir"
# laplace2d: an unknown layout (the parser), hvfo lanes that do not divide l (the library,
# agreed over the ranks)
refused 2 "lexi or hvfo" "laplace2d --mpi --layout foo" laplace2d --mpi --layout foo
refused 2 "multiple of nw" "laplace2d --mpi --l 50 --layout hvfo --nw 8" laplace2d --mpi --l 50 --layout hvfo --nw 8
# dslash split along t and z: 2 x 2 ranks (t x z) and 4 along z, uneven z, the serial variant
# (bitwise: docs/SCALING.md 1); every rank's entry names its z-planes
for rz in 2 4; do
    timeout -k 10 "$limit" "$run" $over -np 4 "$pk" run dslash --mpi --dims 3,2,7,6 \
        --ranks-z $rz --variant serial --half --verify > "$out.cli" 2> "$out.cli.err"
    rc=$?
    ok=1
    [ "$rc" -eq 0 ] && [ "$(grep -o '"z1": [0-9]*' "$out.cli" | wc -l)" -eq 4 ] &&
        grep -q '"ranks_z": '$rz "$out.cli" && grep -q '"verify": {"equal": true' "$out.cli" &&
        ok=0
    result $ok "mpirun -np 4 portkern run dslash --mpi --ranks-z $rz --half --verify: the blocks equal one process"
    [ "$ok" -eq 0 ] || { sed 's/^/# /' "$out.cli" "$out.cli.err" | tail -n 20; }
done
refused any "does not divide" "dslash --mpi --ranks-z 3" dslash --mpi --dims 2,2,2,4 --ranks-z 3
# --threads beyond a rank's CPUs (its affinity mask, "cpus" in the JSON): rank 0 says so once
timeout -k 10 "$limit" "$run" $over -np 2 "$pk" run su3 --mpi --nv 100 --threads 64 \
    > "$out.cli" 2> "$out.cli.err"
rc=$?
fewest=$(grep -o '"cpus": [0-9]*' "$out.cli" | awk '{print $2}' | sort -n | head -n 1)
notes=$(grep -c "note: --threads 64 but a rank may run on" "$out.cli.err")
ok=1
if [ "$rc" -eq 0 ]; then
    if [ -z "$fewest" ]; then ok=0                            # no affinity mask to ask here
    elif [ "$fewest" -lt 64 ]; then [ "$notes" -eq 1 ] && ok=0
    else [ "$notes" -eq 0 ] && ok=0; fi
fi
result $ok "mpirun -np 2 portkern run su3 --mpi --threads 64: a note exactly when a rank has fewer CPUs (fewest: ${fewest:-unknown})"
[ "$ok" -eq 0 ] || { sed 's/^/# /' "$out.cli" "$out.cli.err" | tail -n 20; }
# t below the ranks: refused on every rank, said once (by rank 0), usage status
refused any "more ranks than t planes" "dslash --mpi with t = 1" dslash --mpi --dims 2,2,2,1
timeout -k 10 "$limit" "$run" $over -np 2 ./tools/portkern-probe --mpi --json \
    > "$out.cli" 2> "$out.cli.err"
rc=$?
ok=1
[ "$rc" -eq 0 ] && [ "$(grep -c '"backend"' "$out.cli")" -eq 2 ] && grep -q '"ranks": 2' "$out.cli" &&
    [ "$(grep -Ec '"mpi_cuda_aware": (true|false|null)' "$out.cli")" -eq 2 ] && ok=0
result $ok "mpirun -np 2 portkern-probe --mpi --json: each rank's host, backend and MPI's CUDA-awareness"
[ "$ok" -eq 0 ] || sed 's/^/# /' "$out.cli" "$out.cli.err" | tail -n 20

# An external program: libportkern-mpi installed into a scratch root (make install DESTDIR=),
# built with nothing but `pkg-config --cflags --libs portkern-mpi` (prefix redefined to the
# scratch root's: a sysroot would also move MPI's own paths), run on 2 ranks.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pk-mpi-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
if ! ${MAKE:-make} -C "${top_builddir:-.}" install DESTDIR="$root" > "$tmp/install.log" 2>&1; then
    result 1 "make install DESTDIR=<scratch root>"
    sed 's/^/# /' "$tmp/install.log" | tail -n 20
else
    pc=$(find "$root" -name portkern-mpi.pc | head -n 1)
    [ -n "$pc" ] || pc=$root/no-portkern-mpi.pc-installed/portkern-mpi.pc
    pcdir=$(dirname "$pc")
    prefix=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=prefix portkern-mpi)
    libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --define-variable=prefix="$root$prefix" \
             --variable=libdir portkern-mpi)
    if [ ! -e "$pc" ]; then
        result 1 "make install put no portkern-mpi.pc into the scratch root"
    elif [ ! -e "$libdir/libportkern-mpi.so" ]; then
        skip "an external MPI program with pkg-config portkern-mpi" \
             "libdir is not under the prefix (configure --libdir): the prefix cannot be moved"
    else
        cat > "$tmp/user.c" <<'CEOF'
#include <portkern_mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 16, 16, 16, 4);
    pk_mpi_diffusion3d_plan *pl = NULL;
    pk_mpi_info info;
    int ok = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, NULL, &p, NULL, &info) == PK_OK;
    float *f = ok ? calloc((size_t)(info.i1 - info.i0) * 16 * 16, sizeof *f) : NULL;
    ok = ok && f && pk_mpi_diffusion3d_plan_execute(pl, f, 4, &info) == PK_OK;
    if (info.rank == 0)
        printf("rank 0 of %d: planes [%d, %d) on %s: %s\n", info.nranks, info.i0, info.i1,
               info.local.variant, ok ? "ran" : pk_mpi_last_error());
    pk_mpi_diffusion3d_plan_destroy(pl);
    free(f);
    MPI_Finalize();
    return ok ? 0 : 1;
}
CEOF
        flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --define-variable=prefix="$root$prefix" \
                --cflags --libs portkern-mpi)
        if ${CC:-cc} -o "$tmp/user" "$tmp/user.c" $flags > "$tmp/cc.log" 2>&1; then
            # the ranks inherit LD_LIBRARY_PATH from the launcher (local launches)
            out=$(LD_LIBRARY_PATH="$libdir" timeout -k 10 "$limit" "$run" $over -np 2 \
                  "$tmp/user" 2>&1)
            rc=$?
            msg="an external program built with pkg-config portkern-mpi alone runs on 2 ranks"
            result $rc "$msg: $(echo "$out" | head -n 1)"
            [ "$rc" -eq 0 ] || echo "$out" | sed 's/^/# /' | tail -n 20
        else
            result 1 "an external program compiles and links with pkg-config portkern-mpi ($flags)"
            sed 's/^/# /' "$tmp/cc.log" | tail -n 20
        fi
    fi
fi
echo "1..$n"
[ "$fails" -eq 0 ]
