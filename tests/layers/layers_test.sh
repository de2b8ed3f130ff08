#!/bin/bash
# layers_test.sh SRCDIR -- scripts/check-layers.sh passes on the tree, and fails (naming the
# file and the rule) on a copy where explore/pool.c reaches into sim/ and where a listed
# exception (the first of the list) has been paid off.
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
# pay off the first listed exception (FILE:HEADER) in the copy: the list must say so
pair=$(sed -n '/^exceptions="/,/^"/p' "$src/scripts/check-layers.sh" | awk 'NF && $1 ~ /:/ {print $1; exit}')
file=${pair%%:*}
hdr=${pair#*:}
[ -n "$pair" ] || { echo "FAIL: no exception found in the list"; exit 1; }
sed -i "/#[[:space:]]*include[[:space:]]*\"$hdr\"/d" "$tmp/$file"
out=$(bash "$tmp/scripts/check-layers.sh" "$tmp")
rc=$?
if [ $rc != 1 ] || ! grep -q "exception $pair is no longer needed" <<<"$out"; then
    echo "FAIL: a stale exception ($pair) was not reported (rc=$rc): $out"
    exit 1
fi
echo "layers_test: ok"
