# smla check's options, which are parsed (and refused with exit 2 and a message) whether
# or not a GPU or the CUDA backend is present: integers are range-checked, never wrapped.
# Usage: bash cli_check.sh <smla-binary> <repo-root>
set -u
smla=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"

expect 0 "usage: smla check" check --help
expect 2 "--cases '3000000000' is not an integer in \\[1, 1000000\\]" check --cases 3000000000
expect 2 "--cases '0' is not an integer in \\[1, 1000000\\]" check --cases 0
expect 2 "--cases '-1' is not an integer" check --cases -1
expect 2 "--cases '1e3' is not an integer" check --cases 1e3
expect 2 "--cases ' 5' is not an integer" check --cases " 5"
expect 2 "--seed '18446744073709551616' is not an integer in \\[0, 18446744073709551615\\]" \
    check --seed 18446744073709551616
expect 2 "--seed '-1' is not an integer" check --seed -1
expect 2 "--token-heads '4294967304' is not an integer in \\[8, 1048576\\]" check --token-heads 4294967304
expect 2 "--token-heads '7' is not an integer" check --token-heads 7
expect 2 "--heads must be 8, 16, 32, 64 or 128, not '4294967312'" check --heads 4294967312
expect 2 "--heads must be 8, 16, 32, 64 or 128, not '12'" check --heads 12
expect 2 "--q must be fp8 or bf16, not 'fp16'" check --q fp16
expect 2 "missing value after '--q'" check --q
expect 2 "missing value after '--cases'" check --cases
expect 2 "unknown argument '--bogus'" check --bogus 1
# Valid options get as far as the backend: without a GPU that is exit 2 and says so.
"$smla" check --cases 1 --seed 18446744073709551615 --token-heads 8 --heads 8 --q bf16 >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ]; then
    grep -qE "no usable GPU|built without CUDA" "$out" || fail "check without a GPU: $(cat "$out")"
fi

[ $failures -eq 0 ] && echo "cli_check: all checks passed"
exit $((failures > 0))
