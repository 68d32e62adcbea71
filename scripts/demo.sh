#!/usr/bin/env bash
# Builds smla and runs the main job: `smla demo` on its embedded default batch (on the
# GPU when one is present, else on the CPU with a smaller batch). Extra arguments go to
# smla demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target smla_cli >/dev/null
exec "$root/build/smla" demo "$@"
