# The smla command itself: --version prints CMakeLists.txt's project version, --help lists
# the commands, and no or an unknown command exits 2. Usage: bash cli_main.sh <smla-binary>
# <repo-root>
set -u
smla=$1
root=$2
source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"

want=$(sed -n 's/^project(smla VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ -n "$want" ] || fail "no project version in $root/CMakeLists.txt"
got=$("$smla" --version)
[ $? -eq 0 ] || fail "smla --version failed"
[ "$got" = "smla $want" ] || fail "smla --version printed '$got', expected 'smla $want'"

help=$("$smla" --help)
for word in --version demo plan attend check bench; do
    grep -qF -- "$word" <<<"$help" || fail "smla --help does not mention $word"
done
"$smla" >/dev/null 2>&1
[ $? -eq 2 ] || fail "smla without a command did not exit 2"
"$smla" frobnicate >/dev/null 2>/tmp/cli_main_err.$$
[ $? -eq 2 ] || fail "smla frobnicate did not exit 2"
grep -qF "unknown command 'frobnicate'" /tmp/cli_main_err.$$ || fail "no message for an unknown command"
rm -f /tmp/cli_main_err.$$

[ $failures -eq 0 ] && echo "cli_main: all checks passed"
exit $((failures > 0))
