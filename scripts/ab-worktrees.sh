#!/usr/bin/env bash
# Trees for `gpu-check.sh ab` from the prepared patches (docs/prepared/*.patch), and the
# cJSON packages the GPU machine lacks (.deps/, carried with the trees).
#   scripts/ab-worktrees.sh NAME=PATCH[+PATCH...] ...
# e.g. `scripts/ab-worktrees.sh v110=v108+v109 v111=v111` makes build-ab/v110 and
# build-ab/v111: worktrees of HEAD (detached) with those patches applied in order,
# committed, so that sass_compare.sh and the A/B see them as revisions. An existing
# build-ab/NAME is replaced.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 NAME=PATCH[+PATCH...] ..." >&2; exit 2; }
if ! ls "$root"/.deps/libcjson*.deb >/dev/null 2>&1; then
    mkdir -p "$root/.deps"
    (cd "$root/.deps" && apt-get download libcjson1 libcjson-dev)
fi
for spec in "$@"; do
    name=${spec%%=*} patches=${spec#*=}
    if [ "$name" = "$spec" ] || [ -z "$name" ] || [ -z "$patches" ]; then
        echo "$0: '$spec' is not NAME=PATCH[+PATCH...]" >&2
        exit 2
    fi
    IFS=+ read -ra list <<<"$patches"
    for patch in "${list[@]}"; do
        [ -f "$root/docs/prepared/$patch.patch" ] || { echo "$0: no docs/prepared/$patch.patch" >&2; exit 2; }
    done
    tree=$root/build-ab/$name
    if [ -d "$tree" ]; then git -C "$root" worktree remove --force "$tree"; fi
    git -C "$root" worktree add -q --detach "$tree" HEAD
    for patch in "${list[@]}"; do
        git -C "$tree" am -q --3way "$root/docs/prepared/$patch.patch" ||
            { git -C "$tree" am --abort; echo "$0: $patch does not apply to $name" >&2; exit 1; }
    done
    echo "build-ab/$name: $(git -C "$tree" log --oneline -1)"
done
