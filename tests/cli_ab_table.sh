# scripts/ab_table.py: the tables of an A/B run from its bench logs (two trees, two
# rounds, a case whose name holds spaces), best of the rounds and the change against A;
# exit 1 without logs. Usage: bash cli_ab_table.sh <smla-binary> <repo-root>
set -u
root=$2
source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log() { # file tflops-b128 time-b128
    cat >"$dir/$1" <<END
smla bench: NVIDIA H200; 3 warm-up runs, median of 20; seed 1
case                               q    kv         tokens heads  entries   cap segs split copies    time_us  TFLOP/s    GB/s
decode-v41-flash-tp1 b2            fp8  fp8_ds_mla      4    64    640.0  1024    0  auto     41       17.4     19.2      86
decode-v41-flash-tp1 b128          fp8  fp8_ds_mla    256    64    640.0  1024    0  auto      1       $3    $2    1101
END
}
log bench1_a1.log 200.0 87.0
log bench1_a2.log 250.0 86.9
log bench1_b1.log 275.0 78.0
log bench1_b2.log 270.0 79.0
out=$(python3 "$root/scripts/ab_table.py" "$dir") || fail "ab_table.py exited $?"
grep -qF "| decode-v41-flash-tp1 b128 | 250 | 275 (+10.0%) |" <<<"$out" || fail "TFLOP/s table:
$out"
out=$(python3 "$root/scripts/ab_table.py" "$dir" --column time_us) || fail "ab_table.py --column exited $?"
grep -qF "| decode-v41-flash-tp1 b128 | 86.9 | 78 (-10.2%) |" <<<"$out" || fail "time_us table (lower is better):
$out"
python3 "$root/scripts/ab_table.py" "$dir/none" 2>/dev/null && fail "no logs: exit 0"
[ $failures -eq 0 ] && echo "cli_ab_table: all checks passed"
exit $failures
