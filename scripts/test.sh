#!/usr/bin/env bash
# Build ncsim with warnings as errors and run every test: bash scripts/test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
cmake -S . -B "$dir" -DNCSIM_WERROR=ON > /dev/null
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
