#!/bin/sh
# retry-tool-crash.sh - run a test under a sanitizer, and run it again (twice at most) when
# the run ends in a crash of the sanitizer itself rather than a finding:
#     sh tests/retry-tool-crash.sh PROGRAM [ARGS...]
# The sanitizer builds' `make check` runs every test through it (LOG_COMPILER, tests/local.mk);
# tests/lsan-precise.sh runs its programs through it.  docs/RELIABILITY.md, section 1.
#
# A tool crash is one of:
#   "LeakSanitizer has encountered a fatal error"   LSan's tracer died (a signal) while it
#                                                    stopped the threads (PoCL's, under load);
#   "ThreadSanitizer: unexpected memory mapping"     TSan's shadow meets an ASLR placement.
# A run with any finding (a leak, an ASan error, a UBSan runtime error, a TSan warning) is
# never retried, tool crash or not: its output is passed on as it is and it fails, also when
# the finding was in a child process and the test itself exited 0.
#
# ASan/LSan reports of the program and of every process it starts (the CLI tests run the
# `portkern` binary, often with its stderr captured) go to files in a directory of their own
# (ASAN_OPTIONS log_path), so that a tool crash is seen wherever it happened; UBSan and TSan
# (gcc 12) print to stderr.  The program's stdout (the TAP stream) and stderr are held until the
# last run and then passed on, followed by those report files on stderr; each retry is said
# on stdout as a TAP comment ("# NOTE: ..."), so it appears in the test log and the console.
set -u
[ $# -gt 0 ] || { echo "usage: sh retry-tool-crash.sh PROGRAM [ARGS...]" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pk-retry.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$work/san/report"
export ASAN_OPTIONS
max_runs=3
run=1
while :; do
    rm -rf "$work/san" && mkdir "$work/san" || exit 99
    "$@" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    # Everything the sanitizers said in this run, wherever it went.
    cat "$work/stderr" "$work/san"/report.* >"$work/said" 2>/dev/null
    if grep -q -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' -e 'runtime error:' \
            -e 'WARNING: ThreadSanitizer' -e 'ERROR: ThreadSanitizer' "$work/said"; then
        crash=                       # a finding: never retried
    elif grep -q 'LeakSanitizer has encountered a fatal error' "$work/said"; then
        crash="LeakSanitizer's tracer crashed"
    elif grep -q 'ThreadSanitizer: unexpected memory mapping' "$work/said"; then
        crash="ThreadSanitizer could not map its shadow (ASLR)"
    else
        crash=
    fi
    [ -n "$crash" ] && [ "$run" -lt "$max_runs" ] || break
    echo "# NOTE: $*: $crash (run $run, exit $rc, no finding reported); running it again"
    run=$((run + 1))
done
[ -n "$crash" ] &&
    echo "# NOTE: $*: $crash in all $max_runs runs; the last run's result stands"
# A finding in a report file (a process the test started, whose stderr the test may not
# look at) fails the test even when the test itself passed.
if [ "$rc" -eq 0 ] && cat "$work/san"/report.* 2>/dev/null |
        grep -q -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' -e 'runtime error:'; then
    echo "# NOTE: $*: a sanitizer finding in a process it started (below, on stderr): failed"
    rc=1
fi
cat "$work/stdout"
cat "$work/stderr" >&2
for f in "$work/san"/report.*; do
    [ -f "$f" ] || continue
    echo "--- sanitizer report file ${f##*/} ---" >&2
    cat "$f" >&2
done
exit "$rc"
