# smla attend against the independent Python oracle (tests/oracle, NumPy): fresh random
# problems each run (seed printed; SMLA_TEST_SEED repeats it), run on the CPU backend and
# compared with the oracle's float64 result; then malformed, truncated, corrupted and
# inconsistent files, each of which must exit 2 (or, for random corruptions, 0 or 2) with
# a message naming the culprit, never crash. Needs python3 with numpy: without it the
# test fails. Usage: bash cli_attend.sh <smla-binary> <repo-root> [problem-count]
set -u
smla=$1
root=$2
count=${3:-${SMLA_ATTEND_PROBLEMS:-40}}
oracle="python3 $root/tests/oracle/oracle.py"
checks=0

source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"

if ! python3 -c 'import numpy' 2>/dev/null; then
    echo "FAIL: cli_attend needs python3 with numpy (pip install numpy)" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seed=${SMLA_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "cli_attend: seed $seed (set SMLA_TEST_SEED to repeat)"

$oracle selftest || fail "oracle selftest"

# Random problems against the oracle.
mkdir "$work/problems"
$oracle generate --seed "$seed" --count "$count" --dir "$work/problems" || fail "generate"
for problem in "$work/problems"/p*.safetensors; do
    result=${problem%.safetensors}.out.safetensors
    "$smla" attend --backend cpu --in "$problem" --out "$result" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    checks=$((checks + 1))
    [ $rc -eq 0 ] || fail "smla attend $(basename "$problem") exited $rc: $(cat "$work/stderr")"
done
$oracle check "$work/problems" || fail "results differ from the oracle (seed $seed)"

# The example problem (examples/problem.safetensors): its script writes it again byte for
# byte, and smla attend's result on it agrees with the oracle.
python3 "$root/examples/make_problem.py" "$work/example.safetensors" >/dev/null &&
    cmp -s "$work/example.safetensors" "$root/examples/problem.safetensors" ||
    fail "examples/make_problem.py does not write examples/problem.safetensors again"
"$smla" attend --in "$root/examples/problem.safetensors" --out "$work/example.out.safetensors" \
    >"$work/stdout" 2>"$work/stderr" || fail "smla attend on the example: $(cat "$work/stderr")"
checks=$((checks + 1))
[ -s "$work/stderr" ] && fail "smla attend on the example warned: $(cat "$work/stderr")"
$oracle compare "$root/examples/problem.safetensors" "$work/example.out.safetensors" >/dev/null ||
    fail "smla attend's result on the example differs from the oracle"

# Malformed files: exit code and message.
mkdir "$work/bad"
$oracle malformed --seed "$seed" --dir "$work/bad" >/dev/null || fail "malformed"
while IFS=$'\t' read -r file want needle; do
    "$smla" attend --backend cpu --in "$work/bad/$file" --out "$work/bad/out.safetensors" \
        >"$work/stdout" 2>"$work/stderr"
    rc=$?
    checks=$((checks + 1))
    if [ $rc -ge 128 ]; then
        fail "$file: smla attend crashed (exit $rc)"
    elif [ "$want" = "0|2" ]; then
        [ $rc -eq 0 ] || [ $rc -eq 2 ] || fail "$file: exit $rc, expected 0 or 2"
    elif [ $rc -ne "$want" ]; then
        fail "$file: exit $rc, expected $want: $(cat "$work/stderr")"
    elif ! grep -qF -- "$needle" "$work/stderr"; then
        fail "$file: message does not name '$needle': $(cat "$work/stderr")"
    fi
done <"$work/bad/manifest.tsv"

# Command-line errors.
any=$(ls "$work/problems"/p*.safetensors | grep -v '\.out\.' | head -1)
expect_exit2() { # needle args...
    local needle=$1
    shift
    "$smla" attend "$@" >"$work/stdout" 2>"$work/stderr"
    local rc=$?
    checks=$((checks + 1))
    [ $rc -eq 2 ] || fail "smla attend $* exited $rc, expected 2"
    grep -qF -- "$needle" "$work/stderr" ||
        fail "smla attend $*: no '$needle' in: $(cat "$work/stderr")"
}
expect_exit2 "--in and --out are required"
expect_exit2 "--in and --out are required" --in "$any"
expect_exit2 "missing value after '--out'" --in "$any" --out
expect_exit2 "unknown option '--bogus'" --bogus 1 --in "$any" --out "$work/o"
expect_exit2 "--backend must be cpu or cuda" --in "$any" --out "$work/o" --backend gpu
expect_exit2 "cannot open" --in "$work/nonexistent" --out "$work/o"
expect_exit2 "cannot create" --in "$any" --out "$work/no/such/dir/o.safetensors"
# --out naming the input file, by its path, another spelling, a symbolic or a hard link:
# refused, the input left as it was.
cp "$any" "$work/input.safetensors"
ln -s input.safetensors "$work/symlink.safetensors"
ln "$work/input.safetensors" "$work/hardlink.safetensors"
for out in "$work/input.safetensors" "$work/./input.safetensors" "$work/symlink.safetensors" \
    "$work/hardlink.safetensors"; do
    expect_exit2 "is the input file" --in "$work/input.safetensors" --out "$out"
done
cmp -s "$any" "$work/input.safetensors" || fail "a refused --out changed the input file"
"$smla" attend --help | grep -q "out = 0 and lse = NaN" || fail "attend --help"
checks=$((checks + 1))
# Without a GPU (or without CUDA built in) --backend cuda is refused cleanly.
"$smla" attend --backend cuda --in "$any" --out "$work/o" >"$work/stdout" 2>"$work/stderr"
rc=$?
checks=$((checks + 1))
if [ $rc -ne 0 ]; then
    [ $rc -eq 2 ] && grep -qF -- "--backend cuda" "$work/stderr" ||
        fail "--backend cuda exited $rc: $(cat "$work/stderr")"
fi

echo "cli_attend: $((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
