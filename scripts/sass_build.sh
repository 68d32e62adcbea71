#!/usr/bin/env bash
# Compiles the kernels of a source tree (src/cuda/prefill/launch.cu, the library's CUDA
# flags) into one object, for reading their SASS without a GPU (sass_compare.sh,
# sass_copy_loads.py, kernel_regs.sh).   scripts/sass_build.sh TREE OUT.o
# SASS_BUILD_FLAGS: more nvcc flags (kernel_regs.sh: ptxas's report).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 TREE OUT.o" >&2; exit 2; }
cd "$1"
nvcc -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo -std=c++17 \
    -DSMLA_WITH_CUDA=1 -Iinclude -Isrc ${SASS_BUILD_FLAGS:-} -c src/cuda/prefill/launch.cu -o "$2"
