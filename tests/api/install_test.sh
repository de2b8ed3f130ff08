#!/usr/bin/env bash
# Sanitizer builds pass the flags their clients need in NCSIM_CLIENT_CFLAGS, and the ASan
# runtime the Python interpreter must preload in NCSIM_PY_PRELOAD (tests/CMakeLists.txt).
# Install the build into a temporary prefix, then build the example of docs/api.md against the
# installed tree through pkg-config and through find_package(ncsim) (shared and static), and
# run each. Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
read -r -a client_flags <<<"${NCSIM_CLIENT_CFLAGS:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in bin/ncsim include/ncsim.h share/ncsim/presets/trn1.json share/man/man1/ncsim.1; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name libncsim.so.0 | head -1)")
[ -n "$libdir" ] || { echo "libncsim.so.0 not installed"; exit 1; }
for f in libncsim.so libncsim.a pkgconfig/ncsim.pc cmake/ncsim/ncsimConfig.cmake \
         cmake/ncsim/ncsimConfigVersion.cmake; do
  [ -e "$libdir/$f" ] || { echo "not installed: $libdir/$f"; exit 1; }
done
"$prefix/bin/ncsim" --version | grep -q "^ncsim [0-9]" || { echo "installed ncsim does not run"; exit 1; }

# the example, extracted from the documentation (one source of truth)
awk '/<!-- example: api_example.c -->/ {on=1; next} on && /^```c/ {code=1; next}
     code && /^```/ {exit} code {print}' "$src/docs/api.md" > "$tmp/api_example.c"
[ -s "$tmp/api_example.c" ] || { echo "no example found in docs/api.md"; exit 1; }

# 1. pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion ncsim)" = "$(sed -n 's/^ncsim //p' <<<"$("$prefix/bin/ncsim" --version)")" ] \
  || { echo "ncsim.pc version differs from ncsim --version"; exit 1; }
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "${client_flags[@]}" "$tmp/api_example.c" -o "$tmp/example_pc" \
   $(pkg-config --cflags --libs ncsim) -lm
# no LD_LIBRARY_PATH: ncsim.pc's Libs carry an rpath to the installed library
env -u LD_LIBRARY_PATH "$tmp/example_pc" > "$tmp/out_pc.txt" 2>/dev/null
grep -q "0 wrong elements" "$tmp/out_pc.txt" || { cat "$tmp/out_pc.txt"; exit 1; }
echo "pkg-config client: $(tail -1 "$tmp/out_pc.txt")"

# 2. find_package, shared and static
mkdir -p "$tmp/client"
cp "$tmp/api_example.c" "$tmp/client/"
cat > "$tmp/client/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(ncsim_client C)
find_package(ncsim 0.2 REQUIRED)
add_executable(example_shared api_example.c)
target_link_libraries(example_shared PRIVATE ncsim::ncsim m)
add_executable(example_static api_example.c)
target_link_libraries(example_static PRIVATE ncsim::ncsim_static m)
CM
cmake -S "$tmp/client" -B "$tmp/client/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_FLAGS="${NCSIM_CLIENT_CFLAGS:-}" >/dev/null
cmake --build "$tmp/client/build" >/dev/null
for kind in shared static; do
  env -u LD_LIBRARY_PATH "$tmp/client/build/example_$kind" > "$tmp/out_$kind.txt" 2>/dev/null
  grep -q "0 wrong elements" "$tmp/out_$kind.txt" || { cat "$tmp/out_$kind.txt"; exit 1; }
  echo "find_package client ($kind): $(tail -1 "$tmp/out_$kind.txt")"
done
if ldd "$tmp/client/build/example_static" | grep -q libncsim; then
  echo "the static client links libncsim.so"; exit 1
fi

# the man page renders without warnings
if command -v groff >/dev/null; then
  warn=$(groff -man -Tutf8 -ww -z "$prefix/share/man/man1/ncsim.1" 2>&1)
  [ -z "$warn" ] || { echo "ncsim.1: $warn"; exit 1; }
fi

# 3. the Python package installed offline with pip into a virtual environment, using the
#    installed library
if /usr/bin/python3 -c "import venv, numpy, setuptools" 2>/dev/null; then
  cp -r "$src/python" "$tmp/python"
  rm -rf "$tmp/python/build" "$tmp/python"/*.egg-info
  /usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
  "$tmp/venv/bin/pip" install -q --no-index --no-build-isolation "$tmp/python" >/dev/null 2>&1 ||
    "$tmp/venv/bin/pip" install --no-index --no-build-isolation "$tmp/python"
  preload=()
  if [ -n "${NCSIM_PY_PRELOAD:-}" ]; then
    preload=(LD_PRELOAD="$NCSIM_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
  fi
  # no LD_LIBRARY_PATH: the package finds the library from the `ncsim` command on PATH
  (cd / && env -u NCSIM_LIBRARY -u LD_LIBRARY_PATH "${preload[@]}" PATH="$prefix/bin:$PATH" \
     "$tmp/venv/bin/python" - "$prefix" <<'PY'
import os
import sys
import numpy as np
import ncsim
import ncsim.nki
prefix = sys.argv[1]
assert ncsim.__file__.startswith(sys.prefix), ncsim.__file__
assert ncsim.nki.__file__.startswith(sys.prefix), ncsim.nki.__file__
assert os.path.realpath(ncsim.library_path).startswith(os.path.realpath(prefix)), ncsim.library_path
src = """
.hbm a fp32 [128, 8] input
.hbm c fp32 [128, 8] output
.core 0
.sbuf t fp32 [128, 8]
.sem s
.engine sp
    dma t, a, queue=0 | post s
    dma c, t, queue=1 | wait s >= 2
.engine act
    activate t, t, exp | wait s >= 1 | post s
"""
x = np.linspace(-1, 1, 128 * 8, dtype=np.float32).reshape(128, 8)
r = ncsim.run(src, {"a": x})
np.testing.assert_allclose(r.outputs["c"], np.exp(x), rtol=1e-6)
print("python package from", ncsim.__file__, "over", ncsim.library_path)
PY
  )
  # the runner's command, installed by pip, on an NKI kernel file
  cat > "$tmp/kern.py" <<'PY'
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def double(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))
    return out
PY
  (cd "$tmp" && env -u NCSIM_LIBRARY -u LD_LIBRARY_PATH "${preload[@]}" PATH="$prefix/bin:$PATH" \
     "$tmp/venv/bin/ncsim-nki" run kern.py double --arg rand:128x64:bfloat16 --out "$tmp/nki_out") \
    | tee "$tmp/nki.txt"
  grep -q "us simulated" "$tmp/nki.txt" || { echo "ncsim-nki did not run the kernel"; exit 1; }
  [ -s "$tmp/nki_out/out0.npy" ] || { echo "ncsim-nki wrote no output"; ls "$tmp/nki_out"; exit 1; }
  st=0
  (cd "$tmp" && env -u NCSIM_LIBRARY -u LD_LIBRARY_PATH "${preload[@]}" PATH="$prefix/bin:$PATH" \
     "$tmp/venv/bin/ncsim-nki" run kern.py missing) 2>"$tmp/nki_err.txt" || st=$?
  [ "$st" = 2 ] && [ "$(wc -l <"$tmp/nki_err.txt")" = 1 ] ||
    { echo "ncsim-nki usage error: exit $st, want one line and 2:"; cat "$tmp/nki_err.txt"; exit 1; }
fi
echo "ok"
