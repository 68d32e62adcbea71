#!/usr/bin/env bash
# The GPU suite in one call: build with CUDA, run every GPU test, `smla check`, the demo
# and the benchmarks; full logs under $OUT (default ./gpu-out), a short table last.
#   scripts/gpu-check.sh [full|quick|sanitize|soak|dsmla|profile] [extra smla bench args...]
#     full      GPU tests, smla check, demo, all bench presets, the cap sweep, the decode
#               presets per split mode, staging vs direct over fp8_ds_mla (default)
#     quick     GPU tests, a short smla check, demo, the flashmla-shapes bench, staging
#               vs direct on v41-flash-tp1 (~7-8 minutes with the build; the GPU tests
#               alone ~3, gpu_test_determinism 108 s of them, session 21)
#     sanitize  a short smla check and the GPU tests under compute-sanitizer (memcheck
#               and racecheck; initcheck over the plan's buffers); SANITIZE_TESTS=0
#               leaves out the per-test runs
#     soak      the full soak: gpu_test_soak --steps 10000 (the suite runs 500 steps)
#     profile   ncu (full set, clocks as found) on one launch of bf16m at decode batch 128
#               (fp8_ds_mla and BF16 rows), the gather ceilings, then one launch of each
#               attention kernel family (FP8 and BF16 at 64 heads, FP8 at 16): details and
#               per-SASS-line stall samples (read them with scripts/sass_stalls.py); the
#               kernel durations of small decode batches; FP8 and BF16 queries over
#               fp8_ds_mla at 16 heads (fp8wg); BF16 over bf16 rows at 16 heads (bf16ring).
#               PROFILE_ONLY=NAME[,NAME...]: only those (ds_decode_b128, bf16_decode_b128,
#               fp8_h64, bf16_h64, fp8_h16, fp8_ds_h16, bf16_ds_h16, bf16_h16,
#               decode_kernels)
#     dsmla     GPU tests, smla check, staging vs direct (both query types), the decode
#               presets, the flashmla-shapes (BF16, FP8, fp8 rows under BF16 queries), the
#               16-head prefill presets, the gather ceilings (bench_gather), the
#               widening's cycles (bench_widen), the tensor core's rate on the kernels'
#               wgmma shapes (bench_wgmma) and one SM's write of an item's output
#               (bench_store; all four also in full)
#     timeline  a diagnostic build (-DSMLA_TIMELINE=ON, build-timeline/) records the
#               per-CTA phase timestamps of fp8m, bf16m and the split-KV combine over the
#               flashmla-shapes (FP8, BF16), the decode presets (fp8; fp8_ds_mla against
#               bf16 rows: bf16m on raw rows and on BF16 rows) and
#               direct fp8_ds_mla prefill, and bench_widen; scripts/timeline.py prints
#               where a CTA's time goes (no smoke check: the kernels are main's).
#               TIMELINE_DECODE=1: only bf16m's decode cases (fp8_ds_mla and bf16 rows)
#               and bench_widen; TIMELINE_FP8_PREFILL=1: only fp8m's FP8 prefill case;
#               TIMELINE_ARGS="BENCH ARGS": only `smla bench BENCH ARGS`
#     ab DIR[,DIR...] ARGS...  A/B in one call: each DIR is another source tree (e.g.
#               `git worktree add build-ab/b BRANCH`, carried to the GPU machine); all are
#               built and must pass the small `smla check`, then `smla bench ARGS` runs
#               A, b, c, ... twice (AB_ROUNDS=N: N times). `::` separates several bench
#               argument lists; the tables come last (scripts/ab_table.py: best of the
#               rounds, change against A). AB_DETERMINISM=1 also runs
#               `gpu_test_determinism --runs 2` on every tree (about 45 s each),
#               AB_TESTS=1 every GPU test but the soak (about 50 s each, beside the
#               smoke check's 60-75 s; AB_TESTS=a,c: those trees only); a tree must
#               pass them to be benched, and A must pass them for the A/B to run.
# Exit status: non-zero when any step failed.
set -u
mode=${1:-full}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$mode" = ab ]; then
    usage="usage: $0 ab DIR[,DIR...] BENCH-ARGS... [:: BENCH-ARGS...]"
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
    others=()
    IFS=, read -ra dirs <<<"$1"
    for d in "${dirs[@]}"; do
        [ -d "$d" ] || { echo "$usage ($d is not a directory)" >&2; exit 2; }
        others+=("$(cd "$d" && pwd)")
    done
    names=(b c d e f g)
    [ ${#others[@]} -le ${#names[@]} ] || { echo "ab: at most ${#names[@]} trees" >&2; exit 2; }
    shift
fi
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
build=$root/build-gpu
jobs=$(nproc)

# cJSON: the system's, or the Debian packages carried in .deps/ (the GPU image lacks it),
# of this tree or, for a worktree under build-ab/ (see ab), of the checkout around it.
cmake_args=()
deps=$root/.deps
[ -d "$deps" ] || deps=$root/../../.deps
if [ ! -f /usr/include/cjson/cJSON.h ] && ls "$deps"/libcjson*.deb >/dev/null 2>&1; then
    for deb in "$deps"/libcjson*.deb; do dpkg -x "$deb" /tmp/cjson-root; done
    lib=$(find /tmp/cjson-root -name 'libcjson.so.*' | head -1)
    ln -sf "$lib" "$(dirname "$lib")/libcjson.so"
    cmake_args+=(-DCJSON_INCLUDE_DIR=/tmp/cjson-root/usr/include -DCJSON_LIBRARY="$(dirname "$lib")/libcjson.so")
    export LD_LIBRARY_PATH="$(dirname "$lib"):${LD_LIBRARY_PATH:-}"
fi

summary=$out/summary.txt
: >"$summary"
# step NAME COMMAND...: runs (killed after $STEP_TIMEOUT s, default 480: a hung kernel
# must not eat the device time), logs to $out/NAME.log, records status and seconds.
step() {
    local name=$1
    shift
    local start=$SECONDS cmd=("$@")
    # A shell function (defined below) runs under `timeout` through a child bash.
    if declare -F "$1" >/dev/null; then
        export -f "$1"
        cmd=(bash -c '"$@"' _ "$@")
    fi
    timeout "${STEP_TIMEOUT:-480}" "${cmd[@]}" >"$out/$name.log" 2>&1
    local rc=$?
    printf '%-22s %-6s %5ds\n' "$name" "$([ $rc = 0 ] && echo pass || echo FAIL:$rc)" $((SECONDS - start)) >>"$summary"
    return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$out/gpu.txt" 2>&1
# ab: the other trees configure, build and run their smoke checks in the background,
# beside this tree's build and smoke check (one build uses a few of the GPU machine's
# cores for most of its ~35 s; a smoke check is one core generating problems for most of
# its 60-75 s, so side by side they cost one smoke check's time, not one per tree): the
# A/B below waits for each. A tree whose smoke check fails counts as failed unless
# AB_KEEP_FAILED=1 (ablations: see below).
ab_builds=()
if [ "$mode" = ab ]; then
    for i in "${!others[@]}"; do
        tree=${others[$i]} name=${names[$i]}
        step "configure_$name" cmake -S "$tree" -B "$tree/build-gpu" -DSMLA_CUDA=ON \
            -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" &&
            step "build_$name" cmake --build "$tree/build-gpu" -j "$jobs" --target smla smla_cli &&
            { STEP_TIMEOUT=240 step "smoke_$name" "$tree/build-gpu/smla" check --token-heads 256 ||
                [ "${AB_KEEP_FAILED:-0}" = 1 ]; } &
        ab_builds[$i]=$!
    done
fi
step configure cmake -S "$root" -B "$build" -DSMLA_CUDA=ON -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" &&
    step build cmake --build "$build" -j "$jobs" --target smla smla_cli gpu-tests bench_plan bench_gather bench_widen bench_wgmma bench_store || {
    cat "$summary"; tail -40 "$out/build.log" "$out/configure.log"; exit 1; }
smla=$build/smla
# The gather ceilings do not depend on smla's kernels: measured before the smoke check.
case $mode in full | dsmla)
    step bench_gather "$build/bench/bench_gather" && step bench_widen "$build/bench/bench_widen" &&
        step bench_wgmma "$build/bench/bench_wgmma" && step bench_store "$build/bench/bench_store" ;;
esac
# A small `smla check` first: a broken kernel stops the run here, in seconds.
# (Not under sanitize: its checks are whole `smla check` runs, and its time is short.)
if [ "$mode" != soak ] && [ "$mode" != timeline ] && [ "$mode" != sanitize ]; then
    STEP_TIMEOUT=120 step smoke "$smla" check --token-heads 256 || {
        cat "$summary"; tail -40 "$out/smoke.log"; exit 1; }
fi

# Under compute-sanitizer kernels run 10-100x slower: fewer runs and steps there.
sanitize_args() {
    case $(basename "$1") in
    gpu_test_determinism) echo --runs 2 ;;
    gpu_test_soak) echo --steps 3 ;;
    esac
}

# racecheck over a command (arguments after LOG), its report saved in LOG and printed;
# returns the command's own exit status.
racecheck_log() {
    # tee: the step's log grows as it runs (a run cut short still shows how far it got)
    compute-sanitizer --tool racecheck "${@:2}" 2>&1 | tee "$1"
    return "${PIPESTATUS[0]}"
}
export -f racecheck_log # the two below run in a child bash under `step`
# Fails (9) on a hazard any of whose accesses is outside the heads-on-M kernels (bf16m,
# fp8m and the hand-offs they share in heads_on_m.cuh; see the sanitize mode), or, only
# when this run's merge probe was misread too ($RACECHECK_MERGE_MISREAD exists), outside
# those and bf16ring's merge_and_store.
racecheck_outside_heads_on_m() {
    local log known='smla::(bf16m|fp8m|heads_on_m)::'
    log=$(mktemp)
    racecheck_log "$log" "$@" || return
    [ -e "$RACECHECK_MERGE_MISREAD" ] && known+='|smla::bf16ring::merge_and_store<'
    if grep -E '(Race reported between|and) (Read|Write) access at' "$log" | grep -vqE "$known"; then
        echo "racecheck: a hazard outside the heads-on-M kernels' warpgroup hand-offs"
        [ -e "$RACECHECK_MERGE_MISREAD" ] || echo "(bf16ring's merge counts too: its probe was not misread)"
        return 9
    fi
}
# The probe: passes while racecheck still reports its race-free arrive -> sync hand-offs
# and the probe's results are right.
racecheck_expect_misread() {
    local log
    log=$(mktemp)
    racecheck_log "$log" "$@" || return
    grep -q 'Race reported' "$log" || { echo "racecheck no longer misreads bar.arrive -> bar.sync: make check-racecheck strict"; return 9; }
}
# The merge probe (bf16ring's merge_and_store, every hand-off bar.sync on both sides):
# passes when its results are right, and leaves $RACECHECK_MERGE_MISREAD when racecheck
# reports it anyway, so that the same reports on bf16ring's merge can be read as the tool's.
racecheck_probe_merge() {
    local log
    log=$(mktemp)
    racecheck_log "$log" "$@" || return
    if grep -q 'Race reported' "$log"; then
        echo "racecheck misreads the merge probe's bar.sync exchanges"
        : >"$RACECHECK_MERGE_MISREAD"
    else
        echo "racecheck reports nothing on the merge probe: a report on bf16ring's merge is a race"
    fi
}

if [ "$mode" = sanitize ]; then
    # Every kernel on small problems first (smla check covers all head counts, caches and
    # query types; ~6 minutes under racecheck, session 21); then each GPU test. Racecheck skips
    # gpu_test_determinism and gpu_test_soak: their large batches take over 8 minutes
    # there, and their kernels are the ones check covers. Over 10 minutes in all: run it
    # with SANITIZE_TESTS=0 within one device call.
    # racecheck misreads one ordered exchange: a shared write, bar.arrive, then the read
    # after the matching bar.sync (PTX ISA 8.9.4: the arrive synchronizes with the sync).
    # The probe, race-free by construction, checks that this is still so: it passes while
    # racecheck reports its arrive -> sync hand-offs and the results are right (see
    # RELIABILITY.md). On `smla check` a hazard fails the step unless both accesses are in
    # bf16m, fp8m or heads_on_m (their shared max hand-off), the kernels whose warpgroups
    # hand values over that way, or in bf16ring's merge_and_store while racecheck also
    # reports the merge probe (session 39: racecheck reported the merge's scratch and
    # maxima exchanges, each through bar.sync on both sides; the probe copies them).
    export RACECHECK_MERGE_MISREAD=$out/racecheck_misreads_merge
    rm -f "$RACECHECK_MERGE_MISREAD"
    step racecheck_probe-build nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$build/racecheck_probe" \
        "$root/scripts/racecheck_probe.cu" &&
        {
            for variant in plain specialised; do
                step "racecheck_probe-$variant" racecheck_expect_misread "$build/racecheck_probe" \
                    $([ $variant = specialised ] && echo --specialised)
            done
            step racecheck_probe-merge racecheck_probe_merge "$build/racecheck_probe" --merge
        }
    step gpu_test_plan_graph-initcheck compute-sanitizer --tool initcheck --error-exitcode 9 "$build/tests/gpu_test_plan_graph"
    # SANITIZE_CHECK_ARGS (e.g. "--heads 16 --q bf16 --token-heads 2048"): appended to both checks,
    # to sanitize one kernel family on larger problems.
    # All at once: memcheck (73 s) beside racecheck, one process per head count (the whole
    # check in one racecheck process ran past 480 s in session 33; untried in parallel).
    step check-memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$smla" check --token-heads 256 \
        ${SANITIZE_CHECK_ARGS:-} &
    pids=($!)
    if [ -n "${SANITIZE_CHECK_ARGS:-}" ]; then
        step check-racecheck racecheck_outside_heads_on_m "$smla" check --token-heads 64 $SANITIZE_CHECK_ARGS &
        pids+=($!)
    else
        for h in 8 16 32 64 128; do
            step "check-racecheck-h$h" racecheck_outside_heads_on_m "$smla" check --token-heads 64 --heads $h &
            pids+=($!)
        done
    fi
    wait "${pids[@]}"
fi
for t in "$build"/tests/gpu_*; do
    [ "$mode" = soak ] || [ "$mode" = profile ] || [ "$mode" = ab ] || [ "$mode" = timeline ] && break
    # SANITIZE_TESTS=0: the kernels under `smla check` only (the build ~70 s, then the
    # parallel checks above).
    [ "$mode" = sanitize ] && [ "${SANITIZE_TESTS:-1}" = 0 ] && break
    if [ "$mode" = sanitize ]; then
        read -ra args <<<"$(sanitize_args "$t")"
        step "$(basename "$t")-memcheck" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$t" "${args[@]}"
        case $(basename "$t") in gpu_test_determinism | gpu_test_soak) continue ;; esac
        step "$(basename "$t")-racecheck" compute-sanitizer --tool racecheck --error-exitcode 9 "$t" "${args[@]}"
    else
        step "$(basename "$t")" "$t"
    fi
done
if [ "$mode" != sanitize ] && [ "$mode" != soak ] && [ "$mode" != profile ] && [ "$mode" != ab ] && [ "$mode" != timeline ]; then # the Python binding's engine loop (needs torch), from the source tree
    loop=$root/tests/gpu/test_python_engine_loop.py
    runner=(python3 "$loop")
    python3 -c 'import pytest' 2>/dev/null && runner=(python3 -m pytest -q -p no:cacheprovider "$loop")
    step python_engine_loop env PYTHONPATH="$root/python" SMLA_LIBRARY="$build/libsmla.so" "${runner[@]}"
fi
case $mode in
full)
    step check "$smla" check --cases 2
    step demo "$smla" demo
    step bench "$smla" bench --json "$out/bench.json" "$@"
    step bench_caps "$smla" bench --preset v41-flash-tp4 --cap 256,512,1024,2048,off --json "$out/bench_caps.json"
    step bench_split "$smla" bench --preset decode-v41-flash-tp1,decode-v41-flash-tp4,decode-v4-pro-tp1,decode-v4-pro-tp8 --split auto,fixed,none --json "$out/bench_split.json"
    step bench_staging "$smla" bench --staging --json "$out/bench_staging.json"
    step bench_staging_bf16 "$smla" bench --staging --q bf16 --json "$out/bench_staging_bf16.json"
    step bench_plan "$build/bench/bench_plan"
    ;;
quick)
    step check "$smla" check
    step demo "$smla" demo
    step bench "$smla" bench --preset flashmla-shapes --json "$out/bench.json" "$@"
    step bench_staging "$smla" bench --staging --preset v41-flash-tp1 --json "$out/bench_staging.json"
    ;;
dsmla)
    step check "$smla" check
    step bench_staging "$smla" bench --staging --json "$out/bench_staging.json"
    step bench_staging_bf16 "$smla" bench --staging --q bf16 --json "$out/bench_staging_bf16.json"
    step bench_decode "$smla" bench --preset decode-v41-flash-tp1,decode-v4-pro-tp1 --json "$out/bench_decode.json"
    step bench_bf16 "$smla" bench --preset flashmla-shapes --q bf16 --kv bf16 --json "$out/bench_bf16.json"
    # fp8 rows through the BF16 path (widened) against the FP8 path, same shapes.
    step bench_fp8kv_bf16q "$smla" bench --preset flashmla-shapes --q bf16 --kv fp8 --json "$out/bench_fp8kv_bf16q.json"
    step bench_fp8kv_fp8q "$smla" bench --preset flashmla-shapes --q fp8 --kv fp8 --json "$out/bench_fp8kv_fp8q.json"
    step bench_16heads "$smla" bench --preset v41-flash-tp4,v4-pro-tp8 --json "$out/bench_16heads.json"
    ;;
timeline)
    tl=$root/build-timeline
    step configure_timeline cmake -S "$root" -B "$tl" -DSMLA_CUDA=ON -DSMLA_TIMELINE=ON -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" &&
        step build_timeline cmake --build "$tl" -j "$jobs" --target smla_cli bench_widen && {
        mkdir -p "$out/timeline"
        tl_bench() { step "timeline_$1" env SMLA_TIMELINE_DIR="$out/timeline" "$tl/smla" bench --iters 3 "${@:2}"; }
        # TIMELINE_FP8_PREFILL=1 is TIMELINE_ARGS for fp8m's FP8 prefill case.
        [ "${TIMELINE_FP8_PREFILL:-0}" = 1 ] && TIMELINE_ARGS=${TIMELINE_ARGS:-"--preset flashmla-shapes --q fp8 --kv fp8"}
        if [ -n "${TIMELINE_ARGS:-}" ]; then
            read -ra tl_args <<<"$TIMELINE_ARGS"
            tl_bench custom "${tl_args[@]}"
        else
            if [ "${TIMELINE_DECODE:-0}" != 1 ]; then
                tl_bench prefill --preset flashmla-shapes --q fp8 --kv fp8
                tl_bench decode --preset decode-v41-flash-tp1,decode-v4-pro-tp1 --kv fp8
                tl_bench bf16 --preset flashmla-shapes --q bf16 --kv bf16
                tl_bench ds_prefill --preset v41-flash-tp1 --q fp8 --kv fp8_ds_mla
            fi
            tl_bench ds_decode --preset decode-v41-flash-tp1 --kv fp8_ds_mla
            tl_bench bf16_decode --preset decode-v41-flash-tp1 --kv bf16
            step bench_widen "$tl/bench/bench_widen"
        fi
        step timeline_report python3 "$root/scripts/timeline.py" "$out/timeline"
    }
    ;;
soak)
    step soak "$build/tests/gpu_test_soak" --steps 10000
    ;;
ab)
    # Every tree's GPU tests (A's included) before its benches: AB_DETERMINISM=1
    # gpu_test_determinism --runs 2; AB_TESTS=1 every GPU test but the soak (determinism
    # with --runs 2).
    ab_tests() {
        local name=$1 tree=$2 t args
        # An ablation (its smoke check failed, kept by AB_KEEP_FAILED=1) is wrong on
        # purpose: no tests.
        grep -qE "^smoke_$name +FAIL" "$summary" && return 0
        if [ "${AB_TESTS:-0}" = 1 ] || [[ ",${AB_TESTS:-}," == *",$name,"* ]]; then
            step "build_tests_$name" cmake --build "$tree/build-gpu" -j "$jobs" --target gpu-tests || return 1
            for t in "$tree"/build-gpu/tests/gpu_*; do
                [ "$(basename "$t")" = gpu_test_soak ] && continue
                read -ra args <<<"$(sanitize_args "$t")"
                STEP_TIMEOUT=150 step "$(basename "$t")_$name" "$t" "${args[@]}" || return 1
            done
        elif [ "${AB_DETERMINISM:-0}" = 1 ]; then
            step "build_determinism_$name" cmake --build "$tree/build-gpu" -j "$jobs" --target gpu_test_determinism &&
                STEP_TIMEOUT=150 step "determinism_$name" "$tree/build-gpu/tests/gpu_test_determinism" --runs 2
        fi
    }
    # Trees b, c, ... in the order given: each built and smoke-checked (in the
    # background, above), then every bench argument list runs A, b, c, ..., AB_ROUNDS
    # times (default 2). A tree whose smoke check fails is left out, unless
    # AB_KEEP_FAILED=1: ablations (a stage removed on purpose to time it, docs/perf/LOG.md)
    # compute wrong results and are timed anyway.
    # A (this tree) first: its GPU tests gate the whole A/B.
    ab_tests a "$root" || { cat "$summary"; exit 1; }
    for i in "${!others[@]}"; do
        name=${names[$i]} tree=${others[$i]}
        wait "${ab_builds[$i]}" &&
            ab_tests "$name" "$tree" ||
            unset "others[$i]" # a tree that fails is left out of the benches; the run fails
    done
    n=0
    while [ $# -gt 0 ]; do
        args=()
        while [ $# -gt 0 ] && [ "$1" != :: ]; do args+=("$1"); shift; done
        [ $# -gt 0 ] && shift
        n=$((n + 1))
        for round in $(seq "${AB_ROUNDS:-2}"); do
            step "bench${n}_a$round" "$smla" bench "${args[@]}"
            for i in "${!others[@]}"; do
                step "bench${n}_${names[$i]}$round" "${others[$i]}/build-gpu/smla" bench "${args[@]}"
            done
        done
    done
    # The tables (best of the rounds, change against A), printed last.
    step ab_table python3 "$root/scripts/ab_table.py" "$out"
    ;;
profile)
    # The attention kernels are all named `kernel` (namespaces fp8wg, fp8m, bf16, bf16m,
    # bf16ring);
    # `profile NAME SKIP BENCH-ARGS...` profiles the launch after the first SKIP (with
    # --iters 1 a bench case launches four times, three warm-ups first). Full section set,
    # then the report's details and its per-SASS-line stall samples.
    profile() {
        local name=$1 skip=$2
        shift 2
        wanted "$name" || return 0
        step "profile_$name" ncu --clock-control none --kernel-name regex:^kernel --launch-skip "$skip" \
            --launch-count 1 --set full --import-source no -f -o "$out/$name" "$smla" bench --iters 1 "$@" &&
            step "details_$name" ncu --import "$out/$name.ncu-rep" --page details &&
            step "sass_$name" ncu --import "$out/$name.ncu-rep" --page source --csv --print-source sass
    }
    wanted() { [ -z "${PROFILE_ONLY:-}" ] || [[ ",$PROFILE_ONLY," == *",$1,"* ]]; }
    # bf16m at decode batch 128 (launches 8-11: batches 2 and 64 come first, four launches
    # each with --iters 1), over fp8_ds_mla rows and over BF16 rows.
    profile ds_decode_b128 10 --preset decode-v41-flash-tp1 --kv fp8_ds_mla
    profile bf16_decode_b128 10 --preset decode-v41-flash-tp1 --kv bf16
    [ -z "${PROFILE_ONLY:-}" ] && step bench_gather "$build/bench/bench_gather"
    profile fp8_h64 2 --preset flashmla-shapes
    profile bf16_h64 2 --preset flashmla-shapes --q bf16 --kv bf16
    profile fp8_h16 2 --preset v41-flash-tp4
    profile fp8_ds_h16 2 --preset v41-flash-tp4 --kv fp8_ds_mla
    profile bf16_ds_h16 2 --preset v41-flash-tp4 --q bf16 --kv fp8_ds_mla
    profile bf16_h16 2 --preset v41-flash-tp4 --q bf16 --kv bf16 # bf16ring
    # Decode at small batches: how the time splits between the attention kernel and the
    # combine, per cache format (fp8 on fp8m, fp8_ds_mla on bf16m).
    if wanted decode_kernels; then
        for kv in fp8 fp8_ds_mla; do
            step "decode_kernels_$kv" ncu --metrics gpu__time_duration.sum --launch-count 24 \
                "$smla" bench --iters 1 --preset decode-v41-flash-tp1 --kv $kv
        done
    fi
    ;;
esac

echo "---- logs (tails) ----"
for f in "$out"/*.log; do
    # per-SASS-line CSVs: read them from $out; the A/B tables: printed whole below
    case $(basename "$f") in sass_* | ab_table.log) continue ;; esac
    echo "== $(basename "$f")"
    tail -n 12 "$f"
done
echo "---- gpu ----"; cat "$out/gpu.txt"
[ "$mode" = ab ] && { echo "---- A/B tables ----"; cat "$out/ab_table.log"; }
echo "---- summary ($mode) ----"; cat "$summary"
! grep -q FAIL "$summary"
