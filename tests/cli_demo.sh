# smla demo on the CPU backend: exit 0, the error against the reference and the
# segmentation-invariance check reported; --help; bad options exit 2. smla bench's option
# errors and --list (no GPU needed). Usage: bash cli_demo.sh <smla-binary> <repo-root>
set -u
smla=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"

expect 0 "error against the CPU reference: out relative Frobenius" demo --backend cpu
cat "$out"
grep -q "CPU backend: batch scaled down" "$out" || fail "demo does not say the batch was scaled"
grep -q "bit-identical" "$out" || fail "demo does not report the plan run as bit-identical"
grep -q "NaN 0" "$out" || fail "demo reports NaN"
grep -q "^smla demo: PASS" "$out" || fail "demo did not pass"

expect 0 "usage: smla demo" demo --help
expect 2 "cpu or cuda" demo --backend tpu
expect 2 "bad option" demo --frobnicate

expect 0 "v4-pro-tp8 q4096+p65536" bench --list
expect 0 "decode-v41-flash-tp1 b256" bench --list --preset decode-v41-flash-tp1
expect 0 "decode-v4-pro-tp8 b24 " bench --list --preset decode-v4-pro-tp8 --batch 8,24
[ "$(grep -c "decode-v4-pro-tp8 b" "$out")" -eq 4 ] || fail "--batch 8,24 does not list 2 batches x 2 formats"
expect 2 "'0' is not a number of requests" bench --list --batch 8,0
expect 2 "at most 8 batch sizes" bench --list --batch 1,2,3,4,5,6,7,8,9
expect 0 "v41-flash-tp4 q8192+p0 h32 " bench --list --preset v41-flash-tp4 --heads 32
grep -q "v41-flash-tp4 q8192+p0 h32 .* 32 " "$out" || fail "--heads 32 does not list 32 heads"
expect 2 "--heads must be 8, 16, 32, 64 or 128, not '24'" bench --list --heads 24
expect 2 "--heads applies to the engine presets" bench --list --preset flashmla-shapes --heads 16
expect 0 "v4-pro-tp1 q8192+p0 h16 " bench --list --heads 16
! grep -q "flashmla" "$out" || fail "--heads without --preset lists flashmla-shapes"
expect 0 "usage: smla bench" bench --help
expect 2 "not a preset" bench --preset nope --list
expect 2 "'0' is not an integer in \\[1, 2147483647\\] or off" bench --cap 0 --list
expect 2 "'3000000000' is not an integer in \\[1, 2147483647\\]" bench --cap 3000000000 --list
expect 2 "'4294967297' is not a number of requests" bench --list --batch 4294967297
expect 2 "--iters must be an integer in \\[1, 100000\\], not '4294967297'" bench --iters 4294967297
expect 2 "not '+5'" bench --iters +5
expect 2 "fp8, bf16 or fp8_ds_mla" bench --kv int4 --list
expect 2 "iters" bench --iters 0
expect 0 "x split auto$" bench --list --preset v41-flash-tp4
expect 0 "cap 256,off x split fixed,none,auto$" bench --list --split fixed,none,auto --cap 256,off
expect 2 "'tiled' is not auto, fixed or none" bench --split auto,tiled --list
expect 2 "at most 3 modes" bench --split auto,fixed,none,auto --list
expect 2 "lacks its value" bench --list --split
# --staging: fp8_ds_mla caches, the two presets of issue 7 unless --preset
expect 0 "staging (gather to BF16 + BF16 prefill) vs direct" bench --staging --list
grep -q "v4-pro-tp1 q4096+p65536 .*fp8_ds_mla" "$out" || fail "--staging does not list v4-pro-tp1 on fp8_ds_mla"
[ "$(grep -c fp8_ds_mla "$out")" -eq 4 ] || fail "--staging lists other cases than v41-flash-tp1 and v4-pro-tp1"
expect 0 "v41-flash-tp4 q8192+p0 .*fp8_ds_mla" bench --staging --preset v41-flash-tp4 --kv fp8_ds_mla --list
expect 2 "fp8_ds_mla caches, not --kv bf16" bench --staging --kv bf16 --list

[ $failures -eq 0 ] && echo "cli_demo: all checks passed"
exit $((failures > 0))
