# smla plan: exact JSON for the seed's example and variants, random batches against an
# independent Python oracle (fresh seed each run), and exit code 2 with a message for bad
# arguments. Usage: bash cli_plan.sh <smla-binary> <repo-root>
set -u
smla=$1

source "$(dirname "${BASH_SOURCE[0]}")/common/cli.sh"

expect_json() { # expected-json args...
    local want=$1
    shift
    local got
    got=$("$smla" plan "$@" 2>/tmp/cli_plan_err.$$)
    local rc=$?
    [ $rc -eq 0 ] || fail "smla plan $* exited $rc: $(cat /tmp/cli_plan_err.$$)"
    [ "$got" = "$want" ] || fail "smla plan $*
  got  $got
  want $want"
}

expect_exit2() { # args...
    local out rc
    out=$("$smla" plan "$@" 2>/tmp/cli_plan_err.$$)
    rc=$?
    [ $rc -eq 2 ] || fail "smla plan $* exited $rc, expected 2"
    [ -z "$out" ] || fail "smla plan $* printed on stdout: $out"
    grep -q "smla plan" /tmp/cli_plan_err.$$ || fail "smla plan $* gave no message"
}

example="--queries 1,1,2051,19,1024 --prefixes 5000,9000,3,0,99000"
head='"num_decodes":2,"num_decode_tokens":2,"num_prefill_tokens":3094'
expect_json "{$head,\"max_segment_len\":1024,\"segments\":[\
{\"req\":2,\"q_start\":0,\"q_len\":684,\"seq_len\":687},\
{\"req\":2,\"q_start\":684,\"q_len\":684,\"seq_len\":1371},\
{\"req\":2,\"q_start\":1368,\"q_len\":683,\"seq_len\":2054},\
{\"req\":3,\"q_start\":2051,\"q_len\":19,\"seq_len\":19},\
{\"req\":4,\"q_start\":2070,\"q_len\":1024,\"seq_len\":100024}]}" $example
expect_json "{$head,\"max_segment_len\":2051,\"segments\":[\
{\"req\":2,\"q_start\":0,\"q_len\":2051,\"seq_len\":2054},\
{\"req\":3,\"q_start\":2051,\"q_len\":19,\"seq_len\":19},\
{\"req\":4,\"q_start\":2070,\"q_len\":1024,\"seq_len\":100024}]}" $example --dtype bf16
expect_json "{$head,\"max_segment_len\":2051,\"segments\":[\
{\"req\":2,\"q_start\":0,\"q_len\":2051,\"seq_len\":2054},\
{\"req\":3,\"q_start\":2051,\"q_len\":19,\"seq_len\":19},\
{\"req\":4,\"q_start\":2070,\"q_len\":1024,\"seq_len\":100024}]}" $example --cap 0
expect_json "{$head,\"max_segment_len\":684,\"segments\":[\
{\"req\":2,\"q_start\":0,\"q_len\":684,\"seq_len\":687},\
{\"req\":2,\"q_start\":684,\"q_len\":684,\"seq_len\":1371},\
{\"req\":2,\"q_start\":1368,\"q_len\":683,\"seq_len\":2054},\
{\"req\":3,\"q_start\":2051,\"q_len\":19,\"seq_len\":19},\
{\"req\":4,\"q_start\":2070,\"q_len\":512,\"seq_len\":99512},\
{\"req\":4,\"q_start\":2582,\"q_len\":512,\"seq_len\":100024}]}" $example --dtype bf16 --cap 1000
expect_json '{"num_decodes":0,"num_decode_tokens":0,"num_prefill_tokens":0,"max_segment_len":0,"segments":[]}' \
    --queries ''
expect_json '{"num_decodes":2,"num_decode_tokens":2,"num_prefill_tokens":0,"max_segment_len":0,"segments":[]}' \
    --queries 1,1 --prefixes 100000,8000
expect_json '{"num_decodes":3,"num_decode_tokens":4,"num_prefill_tokens":3,"max_segment_len":3,"segments":[{"req":3,"q_start":0,"q_len":3,"seq_len":10}]}' \
    --queries 2,0,2,3,0 --prefixes 5,5,5,7,1 --spec-tokens 1

# Random batches against an independent oracle.
if command -v python3 >/dev/null; then
    python3 - "$smla" <<'EOF' || failures=$((failures + 1))
import json, os, random, subprocess, sys
seed = int(os.environ.get("SMLA_TEST_SEED", random.SystemRandom().randrange(1 << 62)))
print(f"cli_plan: seed {seed} (set SMLA_TEST_SEED to repeat)")
rng = random.Random(seed)
for it in range(200):
    spec = rng.randrange(0, 4)
    threshold = 1 + spec
    d, p = rng.randrange(0, 6), rng.randrange(0, 6)
    queries = [rng.choice([0, rng.randrange(1, threshold + 1)]) for _ in range(d)]
    queries += [rng.choice([0, rng.randrange(threshold + 1, rng.choice([50, 3000, 9000]))])
                for _ in range(p)]
    prefixes = [rng.randrange(0, 200000) for _ in queries]
    dtype = rng.choice(["fp8", "bf16"])
    cap = rng.choice([None, 0, 1, 7, 100, 1024, rng.randrange(1, 5000)])
    args = [sys.argv[1], "plan", "--queries", ",".join(map(str, queries)),
            "--prefixes", ",".join(map(str, prefixes)), "--dtype", dtype,
            "--spec-tokens", str(spec)]
    if cap is not None:
        args += ["--cap", str(cap)]
    got = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    eff = cap if cap is not None else (1024 if dtype == "fp8" else 0)
    nd = next((i for i, q in enumerate(queries) if q > threshold), len(queries))
    segs, start = [], 0
    for r in range(nd, len(queries)):
        q, s = queries[r], prefixes[r] + queries[r]
        n = 0 if q == 0 else (-(-q // eff) if eff else 1)
        end = 0
        for k in range(n):
            length = q // n + (1 if k < q % n else 0)
            end += length
            segs.append({"req": r, "q_start": start, "q_len": length, "seq_len": s - q + end})
            start += length
    want = {"num_decodes": nd, "num_decode_tokens": sum(queries[:nd]),
            "num_prefill_tokens": sum(queries[nd:]),
            "max_segment_len": max([g["q_len"] for g in segs], default=0), "segments": segs}
    if got != want:
        print(f"cli_plan: mismatch for {' '.join(args[1:])}\n got  {got}\n want {want}")
        sys.exit(1)
EOF
else
    echo "cli_plan: python3 not found, random batches skipped"
fi

expect_exit2 --queries 1,a
expect_exit2 --queries 1,-1
expect_exit2 --queries 1,,2
expect_exit2 --queries ' 1'
expect_exit2 --queries 1,
expect_exit2 --queries 2147483648
expect_exit2 --queries 2147483647,1
expect_exit2 --queries 5 --prefixes 2147483643
expect_exit2 --queries 1,2 --prefixes 1
expect_exit2 --queries 1,2 --prefixes 1,2,3
expect_exit2 --queries 5,1
expect_exit2 --prefixes 1
expect_exit2
expect_exit2 --queries 1 --bogus 3
expect_exit2 --queries 1 --dtype fp16
expect_exit2 --queries 1 --cap -1
expect_exit2 --queries 1 --cap 1x
expect_exit2 --queries 1 --spec-tokens -2
expect_exit2 --queries 1 --spec-tokens 2147483647
expect_exit2 --queries

rm -f /tmp/cli_plan_err.$$
if [ $failures -ne 0 ]; then
    echo "cli_plan: $failures check(s) FAILED" >&2
    exit 1
fi
echo "cli_plan: all checks passed"
