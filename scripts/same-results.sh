#!/bin/sh
# same-results.sh OLD_NCSIM NEW_NCSIM [SRCDIR] -- check that two builds of ncsim give the same
# results on every program of the repository: the same .ncx bytes from `ncsim asm`, the same
# statistics (timing-only and functional with seeded random inputs), the same output tensors of
# that functional run (every `.hbm ... output` or `inout`, as .npy bytes) and the same trace as JSON
# (a .pftrace written by each build and read back by the NEW one, and a .json written by each).
# For optimisations that must not change any result. Prints one line per difference and exits
# 1 if there is any.
set -u
old=$1
new=$2
src=${3:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for prog in ${SAME_RESULTS_PROGRAMS:-"$src"/kernels/*.nca "$src"/kernels/tutorial/*.nca "$src"/kernels/explain/*.nca \
            "$src"/tests/golden/*/*.nca "$src"/tests/validate/*.nca}; do
    [ -f "$prog" ] || continue
    n=$((n + 1))
    for b in old new; do
        eval "bin=\$$b"
        "$bin" asm "$prog" -o "$tmp/$b.ncx" >/dev/null 2>"$tmp/$b.asm.err"
        echo "asm rc=$?" >>"$tmp/$b.asm.err"
        "$bin" run "$prog" --timing-only -q --stats "$tmp/$b.t.json" \
            --trace "$tmp/$b.pftrace" >/dev/null 2>"$tmp/$b.t.err"
        echo "run rc=$?" >>"$tmp/$b.t.err"
        "$bin" run "$prog" --timing-only -q --trace "$tmp/$b.trace.json" >/dev/null 2>&1
        # and every output tensor it declares, byte for byte (.npy)
        outs=""
        for t in $(awk '$1 == ".hbm" && / (output|inout)( |;|$)/ { print $2 }' "$prog"); do
            outs="$outs --out $t=$tmp/$b.out.$t.npy"
        done
        # shellcheck disable=SC2086
        "$bin" run "$prog" --random-inputs 7 -q --stats "$tmp/$b.f.json" $outs >/dev/null \
            2>"$tmp/$b.f.err"
        echo "run rc=$?" >>"$tmp/$b.f.err"
        # the NEW build reads both .pftrace files back: their content is compared through
        # its report (a change of encoding alone shows as "pftrace" only)
        cp "$tmp/$b.pftrace" "$tmp/trace.pftrace" 2>/dev/null
        "$new" report "$tmp/trace.pftrace" --by-line >"$tmp/$b.pf.report" 2>&1
        "$new" report "$tmp/trace.pftrace" >>"$tmp/$b.pf.report" 2>&1
    done
    for f in asm.err ncx t.err t.json f.err f.json trace.json pftrace pf.report \
        $(cd "$tmp" && ls old.out.* new.out.* 2>/dev/null | sed 's/^[a-z]*\.//' | sort -u); do
        [ -e "$tmp/old.$f" ] || [ -e "$tmp/new.$f" ] || continue
        if ! cmp -s "$tmp/old.$f" "$tmp/new.$f"; then
            echo "DIFFERENT: $prog ($f)"
            fail=1
        fi
    done
    rm -f "$tmp"/old.* "$tmp"/new.*
done
echo "same-results: $n programs compared, $([ $fail = 0 ] && echo 'no differences' || echo 'DIFFERENCES')"
exit $fail
