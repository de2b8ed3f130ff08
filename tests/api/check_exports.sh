#!/usr/bin/env bash
# libncsim.so: SONAME libncsim.so.0, every exported function starts with ncsim_, and the public
# entry points are there. Usage: check_exports.sh path/to/libncsim.so
set -euo pipefail
lib=$1
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ "$soname" = "libncsim.so.0" ] || { echo "SONAME is '$soname', not libncsim.so.0"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | sed 's/@.*//')
bad=$(echo "$syms" | grep -v '^ncsim_' || true)
if [ -n "$bad" ]; then
  echo "symbols outside the ncsim_ namespace are exported:"; echo "$bad" | head -20; exit 1
fi
for f in ncsim_version ncsim_assemble ncsim_sim_create ncsim_sim_run ncsim_sim_read_tensor \
         ncsim_sim_write_tensor ncsim_last_error_info ncsim_sim_finding ncsim_arch_load \
         ncsim_profile_summary ncsim_profile_field ncsim_profile_options_init; do
  grep -qx "$f" <<< "$syms" || { echo "missing export $f"; exit 1; }
done
echo "ok: $(echo "$syms" | wc -l) ncsim_* symbols, SONAME $soname"
