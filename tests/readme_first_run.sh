#!/usr/bin/env bash
# Run README.md's "A first run" block as written, from a scratch folder that sees the build
# (./build) and the sources (kernels/, python/) where the README expects them, and check the
# files the commands make. Usage: readme_first_run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$build" "$tmp/build"
ln -s "$src/kernels" "$tmp/kernels"
ln -s "$src/python" "$tmp/python"
awk '/^## A first run/ {on=1; next} on && /^```sh/ {code=1; next} code && /^```/ {exit} code {print}' \
  "$src/README.md" > "$tmp/first_run.sh"
[ -s "$tmp/first_run.sh" ] || { echo "no 'A first run' block in README.md"; exit 1; }
(cd "$tmp" && NCSIM_LIBRARY="$build/libncsim.so" bash -euo pipefail first_run.sh \
  > out.txt 2>&1) || { cat "$tmp/out.txt"; exit 1; }
for f in a.npy b.npy c.npy gemm.ncx; do
  [ -s "$tmp/$f" ] || { echo "README's first run made no $f"; cat "$tmp/out.txt"; exit 1; }
done
grep -q "us simulated" "$tmp/out.txt" || { echo "the NKI line did not run"; cat "$tmp/out.txt"; exit 1; }
# what the README says of the third line: the variant it times is faster than the first run
times=$(sed -n 's/^total simulated time: \([0-9.]*\) ns.*/\1/p' "$tmp/out.txt")
[ "$(echo "$times" | wc -l)" -eq 3 ] || { echo "expected three ncsim runs"; cat "$tmp/out.txt"; exit 1; }
/usr/bin/python3 -c "import sys; t = [float(x) for x in sys.argv[1:]]; sys.exit(not t[2] < 0.9 * t[0])" \
  $times || { echo "README's third line: $times (not faster)"; exit 1; }
# c = lhsT^T . rhs, from the files the first line wrote
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
a, b, c = (np.load(f"{d}/{n}.npy") for n in "abc")
err = np.abs(c - a.T.astype(np.float64) @ b.astype(np.float64)).max()
assert err < 1e-3 * np.abs(c).max(), err
print(f"README first run: ok (c = lhsT^T rhs within {err:.2g})")
PY
