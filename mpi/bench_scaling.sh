#!/bin/sh
# bench_scaling.sh - the docs/SCALING.md comparison: diffusion3d 256^3 x 20 on this machine's
# two cores as 1 rank x 2 OpenMP threads and as 2 ranks x 1 thread (libportkern-mpi), in
# interleaved rounds (the machine is shared: alternating keeps a load change from favouring
# one side), with a ping-pong of the transport in the same run (the first 2-rank launch).
#   sh mpi/bench_scaling.sh [BUILD_DIR (_build)] [ROUNDS (5)] [extra bench_mpi options...]
# Prints each launch's JSON line (mpi/bench_mpi.c) with the load average before it, then the
# best and the median seconds of each side and their ratio.
b=${1:-_build}
rounds=${2:-5}
[ $# -gt 2 ] && shift 2 || set --
bench=$b/mpi/bench_mpi
if [ ! -x "$bench" ]; then
    echo "bench_scaling.sh: no $bench (configure found no MPI?)" >&2
    exit 2
fi
if [ "$(id -u)" -eq 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pk-scaling.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
pp=
i=0
while [ "$i" -lt "$rounds" ]; do
    i=$((i + 1))
    echo "round $i load $(cut -d' ' -f1-3 /proc/loadavg)"
    # one rank, two threads: not bound to one core (Open MPI binds one rank to a core)
    mpirun --bind-to none -np 1 "$bench" --threads 2 --no-pingpong "$@" | tee -a "$tmp/1x2"
    echo "round $i load $(cut -d' ' -f1-3 /proc/loadavg)"
    mpirun -np 2 "$bench" --threads 1 $pp "$@" | tee -a "$tmp/2x1"
    pp=--no-pingpong
done
stats() { # best and median of the "seconds" fields in $1
    sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$1" | sort -g |
        awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                  printf "%.4f %.4f\n", v[1], m }'
}
# shellcheck disable=SC2046 # split on purpose: two numbers each
set -- $(stats "$tmp/1x2") $(stats "$tmp/2x1")
echo "1 rank x 2 threads: best $1 s, median $2 s"
echo "2 ranks x 1 thread: best $3 s, median $4 s"
awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN {
    printf "2x1 / 1x2 time: best %.3f, median %.3f (target <= 1.10)\n", c / a, d / b }'
