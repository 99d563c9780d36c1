#!/bin/sh
# test_retry_tool_crash.sh - tests/retry-tool-crash.sh, the sanitizer builds' test runner:
# a crash of the sanitizer itself is run again (twice at most) and said so; a finding is
# never retried; the last run's output and exit status are what the harness sees.
# The "programs" are shell scripts that print what the sanitizers print, counting their runs.
. "${top_srcdir:-.}/tests/tap.sh"
n=0 fails=0
echo "1..18"
T=$(mktemp -d "${TMPDIR:-/tmp}/pk-retry-test.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
RETRY="${top_srcdir:-.}/tests/retry-tool-crash.sh"
TRACER='==42==LeakSanitizer has encountered a fatal error.'
LEAK='==42==ERROR: LeakSanitizer: detected memory leaks'

# fake NAME CRASH_RUNS EXTRA: a program that prints a TAP point; in its first CRASH_RUNS runs it
# also prints LSan's tracer crash (on stderr, or into ASan's log_path file when EXTRA is
# "logfile", as a child process of a CLI test would) and exits 1; EXTRA "leak" adds a leak.
fake() {
    cat >"$T/$1" <<EOF
#!/bin/sh
runs=\$(cat "$T/$1.runs" 2>/dev/null || echo 0); runs=\$((runs + 1)); echo \$runs >"$T/$1.runs"
echo "1..1"
if [ \$runs -le $2 ]; then
    echo "ok 1 - run \$runs"
    case "$3" in
        logfile) log=\${ASAN_OPTIONS##*log_path=}; log=\${log%%:*}
                 echo "$TRACER" >"\$log.\$\$";;
        leak)    echo "$LEAK" >&2; echo "$TRACER" >&2;;
        *)       echo "$TRACER" >&2;;
    esac
    exit 1
fi
echo "ok 1 - run \$runs"
echo "clean stderr" >&2
exit 0
EOF
    chmod +x "$T/$1"
}
runs() { cat "$T/$1.runs" 2>/dev/null || echo 0; }

fake once 1 ""
sh "$RETRY" "$T/once" >"$T/once.out" 2>"$T/once.err"
result $? "one tracer crash: the second run passes (exit 0)"
[ "$(runs once)" -eq 2 ]; result $? "one tracer crash: run twice"
grep -q "^# NOTE: .*LeakSanitizer's tracer crashed (run 1" "$T/once.out"
result $? "one tracer crash: said on stdout as a TAP comment"
[ "$(grep -c '^ok 1' "$T/once.out")" -eq 1 ] && grep -q '^ok 1 - run 2$' "$T/once.out"
result $? "one tracer crash: only the last run's TAP stream is passed on"
grep -q '^clean stderr$' "$T/once.err" && ! grep -q 'fatal error' "$T/once.err"
result $? "one tracer crash: only the last run's stderr is passed on"

fake always 9 ""
sh "$RETRY" "$T/always" >"$T/always.out" 2>"$T/always.err"
[ $? -eq 1 ]; result $? "tracer crash every time: the last run's exit status (1) stands"
[ "$(runs always)" -eq 3 ]; result $? "tracer crash every time: three runs, no more"
grep -q "^# NOTE: .*in all 3 runs" "$T/always.out"
result $? "tracer crash every time: said so"
grep -q 'fatal error' "$T/always.err"
result $? "tracer crash every time: the crash is in the log"

fake leak 9 leak
sh "$RETRY" "$T/leak" >"$T/leak.out" 2>"$T/leak.err"
[ $? -eq 1 ]; result $? "leak report with a tracer crash: fails"
[ "$(runs leak)" -eq 1 ]; result $? "leak report with a tracer crash: never retried"
grep -q 'detected memory leaks' "$T/leak.err" && ! grep -q '^# NOTE' "$T/leak.out"
result $? "leak report: passed on, no retry note"

fake child 1 logfile
sh "$RETRY" "$T/child" >"$T/child.out" 2>"$T/child.err"
result $? "tracer crash in a child's ASan log file: the second run passes"
[ "$(runs child)" -eq 2 ]; result $? "tracer crash in a child's ASan log file: run twice"

# a child's leak report in ASan's log file, the test itself passing: the wrapper fails it
cat >"$T/childleak" <<EOF
#!/bin/sh
echo "1..1"
echo "ok 1 - the test saw nothing wrong"
log=\${ASAN_OPTIONS##*log_path=}; log=\${log%%:*}
echo "$LEAK" >"\$log.12345"
exit 0
EOF
chmod +x "$T/childleak"
sh "$RETRY" "$T/childleak" >"$T/childleak.out" 2>"$T/childleak.err"
[ $? -ne 0 ] && grep -q 'detected memory leaks' "$T/childleak.err"
result $? "a leak reported by a child process fails the test that passed, and is shown"
grep -q '^# NOTE: .*finding in a process it started' "$T/childleak.out"
result $? "a child's finding: said on stdout"

printf '#!/bin/sh\necho "1..1"\necho "not ok 1 - real failure"\nexit 1\n' >"$T/plain"
chmod +x "$T/plain"
sh "$RETRY" "$T/plain" >"$T/plain.out" 2>"$T/plain.err"
[ $? -eq 1 ] && grep -q '^not ok 1' "$T/plain.out" && ! grep -q '^# NOTE' "$T/plain.out"
result $? "a failure without a tool crash: passed on once, not retried"

printf '#!/bin/sh\necho "1..0 # SKIP nothing here"\nexit 77\n' >"$T/skip"
chmod +x "$T/skip"
sh "$RETRY" "$T/skip" >"$T/skip.out" 2>&1
[ $? -eq 77 ] && grep -q '^1..0 # SKIP' "$T/skip.out"
result $? "exit 77 (skip) passed on"

[ "$fails" -eq 0 ]
