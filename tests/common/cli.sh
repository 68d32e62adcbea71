# What the CLI script tests (tests/cli_*.sh) share, sourced after `set -u`: `fail
# MESSAGE` prints a failure and counts it in $failures.
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
