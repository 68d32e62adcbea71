#!/usr/bin/env bash
# Whether each kernel's SASS differs between two revisions, without a GPU: builds
# src/cuda/prefill/launch.cu of each (the library's flags) and compares the kernels'
# instruction streams with the kernel-parameter offsets (c[0x0][...]) left out, so that a
# change of the parameter struct alone reads as "same". A kernel that is "same" behaves
# and times as it did at the other revision: its measurements and GPU tests carry over.
#   scripts/sass_compare.sh REV_A [REV_B]   (REV_B default: the working tree)
# Needs cuobjdump and nvdisasm on PATH (a toolkit without them: the PyPI wheels
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm carry both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 REV_A [REV_B]" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'for w in "$tmp"/tree_*; do [ -d "$w" ] && git -C "$root" worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT
build() { # REV|"" OUT
    local src=$root
    if [ -n "$1" ]; then
        src=$tmp/tree_$2
        git -C "$root" worktree add -q --detach "$src" "$1"
    fi
    "$root/scripts/sass_build.sh" "$src" "$tmp/$2.o"
}
build "$1" a &
build "${2:-}" b &
wait
kernel_sass() { # OBJ KERNEL
    cuobjdump -sass -fun "$2" "$1" | grep -E '^\s+/\*[0-9a-f]+\*/' |
        sed 's@/\*[0-9a-f]*\*/@@; s@;.*@@; s@c\[0x0\]\[0x[0-9a-f]*\]@c[]@g'
}
# No kernel listed means no comparison (cuobjdump or nvdisasm missing): fail, never "same".
kernels=$(cuobjdump -sass "$tmp/a.o" | awk '/Function :/ {print $3}')
[ -n "$kernels" ] || { echo "$0: cuobjdump listed no kernels: nothing compared" >&2; exit 1; }
for k in $kernels; do
    if cmp -s <(kernel_sass "$tmp/a.o" "$k") <(kernel_sass "$tmp/b.o" "$k"); then
        echo "same  $k"
    else
        echo "DIFF  $k"
    fi
done
