#!/usr/bin/env bash
# Installs the Debian 12 packages geomx needs to build, test and run `make run`.
# Idempotent: only missing packages are installed; nothing is downloaded outside apt.
#   scripts/install-deps.sh          build + tests + make run
#   scripts/install-deps.sh --bench  also what `geomx bench` needs beyond the build: the PyTorch peers of bench/peers/
#                                    (python3-torch, python3-numpy), the classical peers of `geomx bench algos`
#                                    (python3-sklearn, python3-xgboost, liblinear-tools, libsvm-tools, and OpenBLAS so
#                                    that numpy and scikit-learn run on an optimised BLAS as their users' installs do)
#                                    and, for --netns, iproute2 (ip, tc)
#   scripts/install-deps.sh --fuzz   also clang with libFuzzer and the sanitizer runtimes (libclang-rt-dev) and
#                                    LLVM's OpenMP (libomp-dev), for `make fuzz` (docs/fuzzing.md)
#   The options combine: scripts/install-deps.sh --bench --fuzz
set -euo pipefail

packages=(
  g++ cmake ninja-build make pkg-config
  libzmq3-dev libsodium-dev libmsgpack-cxx-dev libcli11-dev libyaml-cpp-dev
  libdnnl-dev ocl-icd-opencl-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  zlib1g-dev libgtest-dev libcurl4-openssl-dev libssl-dev
  dataset-fashion-mnist
)
for arg in "$@"; do
  case "$arg" in
    --bench)
      packages+=(python3-torch python3-numpy iproute2 python3-sklearn python3-xgboost liblinear-tools libsvm-tools
                 libopenblas0-pthread python3-threadpoolctl)
      ;;
    --fuzz)
      packages+=(clang libclang-rt-dev libomp-dev)
      ;;
    *)
      echo "install-deps: unknown option '$arg' (known: --bench, --fuzz)" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
