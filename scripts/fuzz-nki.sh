#!/usr/bin/env bash
# The NKI frontend's mutation fuzzer, long: mutated example kernels must fail only with located
# NkiErrors or ncsim errors (python/tests/nki/nki_fuzz.py; CI runs a fixed seed in
# python/tests/nki/test_nki_fuzz.py). Usage: scripts/fuzz-nki.sh [COUNT [SEED]] [BUILD_DIR]
# Exit 1 with the findings (the mutations and the exception) when any mutant escapes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
count=${1:-20000}
seed=${2:-$(date +%s)}
build=${3:-$here/build}
[ -e "$build/libncsim.so" ] || { echo "fuzz-nki.sh: no $build/libncsim.so (build first)"; exit 2; }
echo "fuzz-nki.sh: $count mutants, seed $seed"
NCSIM_LIBRARY=$build/libncsim.so PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH} \
  exec /usr/bin/python3 "$here/python/tests/nki/nki_fuzz.py" --count "$count" --seed "$seed"
