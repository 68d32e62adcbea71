#!/usr/bin/env bash
# Installs what building and testing smla needs and a fresh Debian/Ubuntu machine may lack:
# a C compiler, make, CMake, cJSON (Debian's libcjson-dev), Python 3 with NumPy and pytest;
# with --fuzz also clang with libFuzzer's runtime (scripts/fuzz.sh asks for it).
#   scripts/install-deps.sh [--fuzz]
# Only what is missing is installed: on a machine that has it all this does nothing and
# needs no root. apt packages are installed as root, or through sudo; without either,
# the error names the packages to install. The CUDA toolkit is optional (without nvcc the
# build is CPU-only).
set -euo pipefail
fuzz=0
case "${1:-}" in
    --fuzz) fuzz=1 ;;
    "") ;;
    *) echo "usage: $0 [--fuzz]" >&2; exit 2 ;;
esac

apt_install() { # packages...
    local root=()
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null; then
            echo "install-deps.sh: missing $*; installing needs root and there is no" \
                "sudo: run 'apt-get install $*' as root" >&2
            exit 1
        fi
        root=(sudo)
    fi
    "${root[@]}" apt-get update -qq
    "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
command -v cmake >/dev/null || missing+=(cmake)
command -v python3 >/dev/null || missing+=(python3 python3-pip)
[ -f /usr/include/cjson/cJSON.h ] || missing+=(libcjson-dev)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

if ! python3 -c 'import numpy, pytest' 2>/dev/null; then
    python3 -m pip install -q numpy pytest 2>/dev/null ||
        python3 -m pip install -q --break-system-packages numpy pytest 2>/dev/null ||
        apt_install python3-numpy python3-pytest
fi

# clang with libFuzzer's runtime, for scripts/fuzz.sh only.
fuzzer_links() {
    echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null
}
if [ $fuzz -eq 1 ] && ! fuzzer_links; then
    command -v clang >/dev/null || apt_install clang
    fuzzer_links || apt_install libclang-rt-dev
fi
