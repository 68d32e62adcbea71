# What the CLI script tests (tests/cli_*.sh) share, sourced after `set -u`: `fail
# MESSAGE` prints a failure and counts it in $failures; `expect CODE PATTERN ARGS...` runs
# `$smla ARGS...` (stdout and stderr into the file $out, both set by the caller) and fails
# unless it exits CODE and prints a line matching the grep pattern PATTERN.
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
expect() {
    local want=$1 pattern=$2
    shift 2
    "$smla" "$@" >"$out" 2>&1
    local rc=$?
    [ $rc -eq "$want" ] || fail "smla $* exited $rc, expected $want: $(tail -5 "$out")"
    grep -q -- "$pattern" "$out" || fail "smla $* did not print '$pattern': $(tail -5 "$out")"
}
