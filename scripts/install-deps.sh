#!/usr/bin/env bash
# Installs every Debian package that building, testing, benchmarking and the
# demo need. Idempotent: when everything is present it only checks and exits.
# Runs as root, or through sudo when available. Nothing else is downloaded.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev libgrpc-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libabsl-dev libeigen3-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 clang-format-14
  # The clang builds: sanitizer runtimes, libFuzzer, llvm-symbolizer for
  # the reports' stacks (make sanitize, make tsan, make fuzz, make test).
  libclang-rt-14-dev libfuzzer-14-dev llvm-14
  procps iproute2 nftables python3 python3-yaml
  # The Python front end (pybind11 module, NumPy arrays, pytest suite) and
  # the PyTorch examples and torch.distributed.rpc baselines of bench/.
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
  # Step profiles (bench/): perf record/report.
  linux-perf
  # OpenBLAS for the torch baselines of bench/ (Debian's torch calls the
  # libblas.so.3 alternative; the reference BLAS is ~30x slower).
  libopenblas0-pthread
  # The dense layers' GEMM (cmake/psflow_gemm.cmake, PSFLOW_GEMM=openblas):
  # OpenBLAS through Eigen's BLAS interface, linked as libopenblas.so.
  libopenblas-pthread-dev
  dataset-fashion-mnist
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root (or install sudo) to install them" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
