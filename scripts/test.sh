#!/usr/bin/env bash
# Builds smla and runs the CPU test suite (ctest). The GPU suite is scripts/gpu-check.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc)"
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"
