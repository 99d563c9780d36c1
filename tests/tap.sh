# tap.sh - TAP helpers the shell tests source (tests/tap.h is the C counterpart).
# The caller sets n=0 fails=0 and prints the plan; its exit status is [ $fails -eq 0 ].

# result STATUS DESCRIPTION: STATUS 0 is a pass.
result() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        fails=$((fails + 1))
    fi
}

# skip DESCRIPTION REASON
skip() {
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}
