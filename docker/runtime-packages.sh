#!/usr/bin/env bash
# Prints, one a line, the packages that hold the shared libraries a binary needs directly (its DT_NEEDED entries):
# what the runtime stage of docker/Dockerfile.cpu and docker/Dockerfile.cuda installs, so that the list follows the
# build (a new library dependency needs no edit here). apt pulls in their own dependencies.
# A library that no package owns (CUDA and cuDNN, copied from NVIDIA's image) is named on stderr and skipped.
#   docker/runtime-packages.sh build/geomx
set -euo pipefail
bin=${1:?usage: docker/runtime-packages.sh BINARY}
ldd_out=$(ldd "$bin")
for lib in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
  path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}' <<<"$ldd_out")
  if [[ -z "$path" || "$path" == "not" ]]; then
    echo "runtime-packages: $lib: not found by ldd" >&2
    exit 1
  fi
  owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)
  if [[ -z "$owner" ]]; then
    echo "runtime-packages: $lib ($path) belongs to no package; skipped" >&2
    continue
  fi
  echo "${owner%%:*}"
done | sort -u
