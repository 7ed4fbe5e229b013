#!/usr/bin/env bash
# Installs moecomm's Debian 12 build and test dependencies. Idempotent: it
# installs only what is missing, so running it on a set-up machine is instant.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache git python3
  clang-22 libclang-rt-22-dev llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  libgtest-dev googletest
  libxtensor-dev python3-numpy
  gnuplot-nox
  python3-torch python3-cffi python3-pytest python3-mpi4py
  iproute2
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
