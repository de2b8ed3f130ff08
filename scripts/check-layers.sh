#!/bin/bash
# check-layers.sh [SRCDIR] -- the layering rule of docs/design.md, checked on every
# `#include "..."` of the C sources: a file of folder F may include the headers of F itself and
# of the folders F may use (the table below), nothing else. A quoted header is found by its
# name in the folders of the project (names are unique across folders: a duplicate is an
# error here too). Run by ctest (test `layers`); prints one line per broken rule and exits 1.
#
# The exceptions are the known debts, each named by file and header with the reason: the
# check fails on a new one and also on a listed one that is gone (delete its line), so the
# list can only shrink.
set -u
src=${1:-.}
cd "$src" || exit 2

# folder: the folders it may use (besides itself). `include` is include/ncsim.h, the public
# API, which depends on nothing.
declare -A uses=(
    [include]=""
    [isa]="include"
    [models]="isa include"
    [traces]="isa include"
    [raster]="isa include"
    [sim]="models isa traces include"
    [api]="sim models isa traces include"
    [viz]="traces raster include"
    [explore]="include raster traces"
    [cli]="include explore traces viz raster"
)
folders="include isa models traces raster sim api viz explore cli"

# file:header  reason -- the debts of issue #26 (docs/design.md, "Known exceptions")
exceptions="
"

declare -A where
fail=0
for f in $folders; do
    for h in "$f"/*.h "$f"/*.def; do
        [ -f "$h" ] || continue
        b=${h##*/}
        if [ -n "${where[$b]:-}" ]; then
            echo "layers: header name $b is in both ${where[$b]}/ and $f/"
            fail=1
        fi
        where[$b]=$f
    done
done

declare -A excused used
nexc=0
while read -r pair _; do
    [ -n "$pair" ] || continue
    excused[$pair]=1
    nexc=$((nexc + 1))
done <<<"$exceptions"

for f in $folders; do
    for file in "$f"/*.c "$f"/*.h; do
        [ -f "$file" ] || continue
        while IFS= read -r line; do
            hdr=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
                  <<<"$line")
            [ -n "$hdr" ] || continue
            g=${where[${hdr##*/}]:-}
            [ -n "$g" ] || continue # a generated header or one outside the project
            [ "$g" = "$f" ] && continue
            case " ${uses[$f]} " in *" $g "*) continue ;; esac
            if [ -n "${excused[$file:$hdr]:-}" ]; then
                used[$file:$hdr]=1
                continue
            fi
            echo "layers: $file includes $g/$hdr, but $f/ may use only: ${uses[$f]:-nothing}" \
                 "(docs/design.md)"
            fail=1
        done < <(grep -h '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
    done
done

for pair in ${excused[@]+"${!excused[@]}"}; do
    if [ -z "${used[$pair]:-}" ]; then
        echo "layers: the exception $pair is no longer needed: remove it from" \
             "scripts/check-layers.sh"
        fail=1
    fi
done

[ $fail = 0 ] && echo "layers: every include follows docs/design.md" \
    "($nexc known exceptions)"
exit $fail
