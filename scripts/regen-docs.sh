#!/bin/sh
# Regenerate every document that quotes simulated figures, from the current cost model:
#   scripts/regen-docs.sh [BUILD_DIR]        (default build; run from anywhere)
# docs/architecture.md (config table), docs/cost-model.md (formula tables, from models/cost.def), docs/validation.md (table and docs/img/validation.png),
# kernels/README.md (performance table), docs/exploration.md (sweep plots and rows),
# docs/data-movement.md (collective times; the per-algorithm sweep of scripts/cc_sweep.py),
# docs/nki.md (the example kernels' table). Takes about two and a half minutes on two cores.
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$ROOT/build}" && pwd)
NCSIM="$B/ncsim"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$ROOT"
/usr/bin/python3 scripts/doc_arch_table.py
/usr/bin/python3 scripts/cost_tables.py
# the validation exits 1 when an entry is outside its band: the table says which
"$NCSIM" validate validation/manifest.json -j 2 -q --csv "$T/validation.csv" \
    --png docs/img/validation.png || true
"$NCSIM" sweep docs/sweeps/gemm_a_hbm.json --jobs 2 --out "$T/s1" \
    --plot X=dma.engine_bandwidth_gbps,Y=mfu --png docs/img/gemm_a_hbm_mfu.png
"$NCSIM" sweep docs/sweeps/gemm_a_hbm_knee.json --jobs 2 --out "$T/s2" \
    --plot X=hbm.bandwidth_gbps,Y=total_ns --png docs/img/gemm_a_hbm_knee.png
/usr/bin/python3 scripts/regen_docs.py "$NCSIM" "$T/validation.csv" "$T/s1/results.csv" \
    "$T/s2/results.csv"
/usr/bin/python3 scripts/cc_sweep.py "$NCSIM" --jobs 2 --doc
# docs/nki.md: the example kernels' table (lowered by the NKI frontend, timed on this build)
NCSIM_LIBRARY="$B/libncsim.so" PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
    /usr/bin/python3 -m ncsim.nki.examples.table --docs docs/nki.md > /dev/null
echo "regenerated; review with git diff"
