#!/usr/bin/env bash
# Install the Debian 12 packages ncsim needs to build, test and fuzz (run as root, or with
# sudo available). Safe to run again: apt-get skips what is already installed.
set -euo pipefail
# build (C11, strict warnings; clang for libFuzzer and its runtimes), unit tests (cmocka),
# configs and statistics (jansson), streaming trace reading (yajl), reading gzip traces (zlib),
# writing them and the .ncx checksum (ISA-L),
# functional matmul (OpenBLAS), the viewer (SDL2, libpng; Xvfb, xauth and xdotool for its
# real-window test, tests/viz/xvfb_smoke.sh), the .pftrace test oracle (protoc),
# numeric references in tests (/usr/bin/python3 with NumPy), the Python package and its tests
# (pytest; setuptools, pip and venv for `pip install ./python`), the Slurm sweep test (a one-node
# slurmctld + slurmd + munged on localhost, tests/slurm/), the derivative-free optimiser of
# `ncsim fit` (NLopt)
packages=(
  cmake make gcc clang pkg-config
  libclang-rt-14-dev
  libcmocka-dev
  libjansson-dev
  libyajl-dev
  zlib1g-dev
  libisal-dev
  libopenblas-dev
  libsdl2-dev libpng-dev
  libnlopt-dev
  xvfb xauth xdotool
  protobuf-compiler
  python3 python3-numpy python3-pytest python3-setuptools python3-pip python3-venv
  slurm-wlm munge
)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
