#!/bin/bash
# layers_test.sh SRCDIR -- scripts/check-layers.sh passes on the tree, and fails (naming the
# file and the rule) on a copy where explore/pool.c reaches into sim/, and on a copy whose list
# of exceptions names one that nothing needs.
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
# an exception that nothing needs (explore/pool.c does not include sim.h) must be reported,
# so the list can only shrink
pair=explore/pool.c:sim.h
sed -i "s|^exceptions=\"$|exceptions=\"\n$pair  a debt paid off|" "$tmp/scripts/check-layers.sh"
grep -q "^$pair " "$tmp/scripts/check-layers.sh" || { echo "FAIL: could not list $pair"; exit 1; }
out=$(bash "$tmp/scripts/check-layers.sh" "$tmp")
rc=$?
if [ $rc != 1 ] || ! grep -q "exception $pair is no longer needed" <<<"$out"; then
    echo "FAIL: a stale exception ($pair) was not reported (rc=$rc): $out"
    exit 1
fi
echo "layers_test: ok"
