#!/usr/bin/env bash
# Installs clang with libFuzzer when missing (scripts/install-deps.sh --fuzz), builds the
# libFuzzer targets of fuzz/ (clang, with AddressSanitizer and UBSan) and runs
# each for SECONDS (default 300), up to $(nproc) at a time, from its seed corpus
# fuzz/corpus/<target>/ (and its dictionary fuzz/<target>.dict). New inputs go to
# $FUZZ_OUT/<target>/corpus, logs and crashing inputs to $FUZZ_OUT/<target>/
# (default FUZZ_OUT: $FUZZ_BUILD/out, FUZZ_BUILD: build-fuzz). Prints executions.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Exit status: non-zero when a target crashed, leaked or broke a property it checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
shift || true
build=${FUZZ_BUILD:-$root/build-fuzz}
out=${FUZZ_OUT:-$build/out}

"$root/scripts/install-deps.sh" --fuzz
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DSMLA_CUDA=OFF -DSMLA_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzz-targets >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for src in "$root"/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
fi

run_target() { # stdout and stderr closed (-close_fd_mask=3): the targets print a lot
    local t=$1 dict=()
    mkdir -p "$out/$t/corpus"
    [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
    "$build/fuzz/$t" -max_total_time="$seconds" -timeout=20 -close_fd_mask=3 \
        -print_final_stats=1 -artifact_prefix="$out/$t/" "${dict[@]}" \
        "$out/$t/corpus" "$root/fuzz/corpus/$t" >"$out/$t/log" 2>&1
}

for t in "${targets[@]}"; do
    [ -x "$build/fuzz/$t" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
    run_target "$t" &
done
wait || true

status=0
for t in "${targets[@]}"; do
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$out/$t/log")
    crashes=$(find "$out/$t" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    if [ -n "$crashes" ] || [ -z "$execs" ]; then
        status=1
        printf '%-18s FAILED after %s executions (log: %s)\n' "$t" "${execs:-?}" "$out/$t/log"
        grep -E 'ERROR|SUMMARY|runtime error|deadly signal' "$out/$t/log" | head -5 || true
        for input in $crashes; do # rerun with output shown: the property's message
            echo "--- $input"
            "$build/fuzz/$t" "$input" 2>&1 | grep -E 'FUZZ PROPERTY|runtime error|ERROR|#[0-9]+ ' | head -12 || true
        done
    else
        printf '%-18s %12s executions in %ss, no crash\n' "$t" "$execs" "$seconds"
    fi
done
exit $status
