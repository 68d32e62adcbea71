#!/usr/bin/env bash
# Installs what building and testing smla needs and a fresh Debian/Ubuntu machine may lack:
# a C compiler, CMake, cJSON (Debian's libcjson-dev), Python 3 with NumPy and pytest, and
# clang with libFuzzer (scripts/fuzz.sh).
# The CUDA toolkit is optional (without nvcc the build is CPU-only).
set -euo pipefail
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v cmake >/dev/null || missing+=(cmake)
command -v python3 >/dev/null || missing+=(python3 python3-pip)
[ -f /usr/include/cjson/cJSON.h ] || missing+=(libcjson-dev)
if [ ${#missing[@]} -gt 0 ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# clang with libFuzzer's runtime, for scripts/fuzz.sh (which CI runs).
fuzzer_links() {
    echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null
}
if ! fuzzer_links; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang >/dev/null
    fuzzer_links || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libclang-rt-dev >/dev/null
fi
if ! python3 -c 'import numpy, pytest' 2>/dev/null; then
    python3 -m pip install -q numpy pytest 2>/dev/null ||
        python3 -m pip install -q --break-system-packages numpy pytest
fi
