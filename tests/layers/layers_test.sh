#!/bin/bash
# layers_test.sh SRCDIR -- scripts/check-layers.sh passes on the tree, and fails (naming the
# file and the rule) on a copy where explore/pool.c reaches into sim/ and where a listed
# exception has been paid off.
set -u
src=$1
bash "$src/scripts/check-layers.sh" "$src" || { echo "FAIL: the tree breaks the layers"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in include isa models traces raster sim api viz explore cli scripts; do
    cp -r "$src/$d" "$tmp/$d"
done
echo '#include "sim.h"' >>"$tmp/explore/pool.c"
out=$(bash "$tmp/scripts/check-layers.sh" "$tmp")
rc=$?
if [ $rc != 1 ] || ! grep -q 'explore/pool.c includes sim/sim.h' <<<"$out"; then
    echo "FAIL: a new include of sim/ from explore/ was not caught (rc=$rc): $out"
    exit 1
fi
cp "$src/explore/pool.c" "$tmp/explore/pool.c"
sed -i '/#include "text.h"/d' "$tmp/explore/pool.c"
out=$(bash "$tmp/scripts/check-layers.sh" "$tmp")
rc=$?
if [ $rc != 1 ] || ! grep -q 'exception explore/pool.c:text.h is no longer needed' <<<"$out"; then
    echo "FAIL: a stale exception was not reported (rc=$rc): $out"
    exit 1
fi
echo "layers_test: ok"
