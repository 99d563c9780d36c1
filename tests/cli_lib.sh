# cli_lib.sh - what the command-line tests (tests/test_cli*.sh) share.  A test sets
# top_srcdir (tests/local.mk exports it; default: the build tree), sources this file and calls
# cli_begin; tap.sh comes with it.  Each test prints its own plan.

: "${top_builddir:=.}"
: "${top_srcdir:=$top_builddir}"
. "$top_srcdir/tests/tap.sh"

# cli_begin NAME [MODULE...]: the build tree's tools as $PK and $PROBE, no backend or device
# forced from the caller's environment, PoCL's cache in the build tree, a scratch directory $T
# (tests/tmp-NAME.PID, removed on exit, read-only files included), the TAP counters, and
# have_py=yes when python3 imports json and the MODULEs (the JSON checks need it; without it
# they fall back to grep).
cli_begin() {
    : "${POCL_CACHE_DIR:=$top_builddir/tests/pocl-cache}"
    export POCL_CACHE_DIR
    unset PORTKERN_BACKEND PORTKERN_DEVICE
    PK=$top_builddir/tools/portkern
    PROBE=$top_builddir/tools/portkern-probe
    T=$top_builddir/tests/tmp-$1.$$
    shift
    rm -rf "$T"
    mkdir -p "$T" || { echo "Bail out! cannot create $T"; exit 1; }
    trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
    have_py=no
    if command -v python3 >/dev/null 2>&1 &&
        python3 -c "import json${1:+, }$(echo "$*" | sed 's/ /, /g')" 2>/dev/null; then
        have_py=yes
    fi
    n=0
    fails=0
}

# expect CODE DESCRIPTION COMMAND...: the command exits with CODE; stdout in $T/out,
# stderr in $T/err (shown as diagnostics on failure).
expect() {
    want=$1 desc=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "# exit status $got, expected $want: $*"
        sed 's/^/# stderr: /' "$T/err" | head -n 20
    fi
    [ "$got" -eq "$want" ]
    result $? "$desc"
}

# json_check FILE KERNEL EXPR: FILE is one line, a JSON object d for which the Python
# expression EXPR holds; without Python, only that it names KERNEL.
json_check() {
    [ "$(wc -l <"$1")" -eq 1 ] || return 1
    if [ $have_py = yes ]; then
        python3 - "$1" "$3" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
    else
        grep -q "\"kernel\": \"$2\"" "$1"
    fi
}

# npy_file PATH DESCR SHAPE BYTES: a .npy header for DESCR and SHAPE (Python tuple text)
# followed by BYTES zero bytes (BYTES may disagree with the shape: bad-input tests).
npy_file() {
    hdr="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    len=$((${#hdr} + 1))
    pad=$(( (64 - (10 + len) % 64) % 64 ))
    len=$((len + pad))
    {
        printf '\223NUMPY\001\000'
        # shellcheck disable=SC2059 # the length bytes are octal escapes in the format
        printf "\\$(printf %03o $((len % 256)))\\$(printf %03o $((len / 256)))"
        printf '%s' "$hdr"
        printf "%${pad}s\n" ""
        head -c "$4" /dev/zero
    } >"$1"
}
