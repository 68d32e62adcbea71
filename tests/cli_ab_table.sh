# scripts/ab_table.py: the tables of an A/B run from its bench logs (two trees, two
# rounds, a case whose name holds spaces, a --staging check column with spaces, one case
# name run with two query types), best of the rounds and the change against A;
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
# The --staging table, whose check column may hold spaces.
staging() { # file speedup check...
    local file=$1 speedup=$2
    shift 2
    cat >"$dir/$file" <<END
smla bench: NVIDIA H200; 3 warm-up runs, median of 20; seed 1
case                       q    tokens heads  entries   cap split gather_us   bf16_us staging_us direct_us speedup stagTF/s  dirTF/s  ws_GB  check
v41-flash-tp1 q8192+p0     fp8    8192    64    574.9  1024  auto    1411.4    1610.9     3036.0    2109.9    $speedup    203.3    292.6   5.37  $*
END
}
staging bench2_a1.log 1.44 identical
staging bench2_b1.log 1.08 agrees rel 2.5e-03
out=$(python3 "$root/scripts/ab_table.py" "$dir") || fail "ab_table.py exited $?"
grep -qF "| v41-flash-tp1 q8192+p0 | 1.44 | 1.08 (-25.0%) |" <<<"$out" || fail "staging table (a check with spaces):
$out"
# flashmla-shapes runs each case with FP8 and then BF16 queries under one name: both rows
# stay, each named by its types.
both() { # file tflops-fp8 tflops-bf16
    cat >"$dir/$1" <<END
smla bench: NVIDIA H200; 3 warm-up runs, median of 20; seed 1
case                               q    kv         tokens heads  entries   cap segs split copies    time_us  TFLOP/s    GB/s
flashmla h64 k640 rows8192         fp8  fp8          4096    64    633.5     -    -  auto      1      729.1    $2    1822
flashmla h64 k640 rows8192         bf16 bf16         4096    64    633.5     -    -  auto      1      692.5    $3    3837
END
}
both bench3_a1.log 466.5 491.1
both bench3_b1.log 470.0 480.0
out=$(python3 "$root/scripts/ab_table.py" "$dir") || fail "ab_table.py exited $?"
grep -qF "| flashmla h64 k640 rows8192 fp8/fp8 | 466.5 | 470 (+0.8%) |" <<<"$out" &&
    grep -qF "| flashmla h64 k640 rows8192 bf16/bf16 | 491.1 | 480 (-2.3%) |" <<<"$out" ||
    fail "a name run with two query types:
$out"
python3 "$root/scripts/ab_table.py" "$dir/none" 2>/dev/null && fail "no logs: exit 0"
[ $failures -eq 0 ] && echo "cli_ab_table: all checks passed"
exit $failures
