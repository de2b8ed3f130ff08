#!/usr/bin/env bash
# A real Slurm test of `ncsim sweep`: start a one-node cluster on localhost (munged, slurmctld
# and slurmd, each in the foreground under this script, with every file in a temporary
# directory), submit a small timing-only sweep with the script `ncsim sweep --slurm` prints
# (an array job plus a merge job with --dependency=afterok), wait for it, and check that the
# merged CSV equals, byte for byte, the CSV of a local `ncsim sweep --jobs 2` run. The
# daemons are stopped by PID on exit, whatever happens.
#
#   tests/slurm/run_slurm_test.sh [NCSIM [SOURCE_DIR]]
#
# NCSIM defaults to $NCSIM_BINARY, SOURCE_DIR to $NCSIM_SOURCE_DIR (ctest sets both).
# Exit codes: 0 pass, 1 fail, 77 skipped (Slurm or munge not installed, or not root: the
# cluster runs with SlurmUser=root). Needs the Debian packages slurm-wlm and munge.
# KEEP=1 keeps the temporary directory (logs, slurm.conf) for a look afterwards.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
# a cluster of its own: nothing from an enclosing Slurm job or cluster
unset SLURM_ARRAY_TASK_ID SLURM_JOB_ID SLURM_CONF

ncsim=${1:-${NCSIM_BINARY:-}}
src=${2:-${NCSIM_SOURCE_DIR:-}}
if [ -z "$ncsim" ] || [ -z "$src" ]; then
  echo "usage: $0 NCSIM SOURCE_DIR (or set NCSIM_BINARY and NCSIM_SOURCE_DIR)" >&2
  exit 2
fi
ncsim=$(realpath "$ncsim")
src=$(realpath "$src")

for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIP: $tool is not installed (apt-get install slurm-wlm munge)"
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the test cluster runs with SlurmUser=root: run as root"
  exit 77
fi

tmp=$(mktemp -d /tmp/ncsim-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  local rc=$?
  # stop what this script started, by PID, newest first (slurmd, slurmctld, munged)
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2> /dev/null || true
  done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 50); do
      kill -0 "${pids[i]}" 2> /dev/null || break
      sleep 0.1
    done
    kill -9 "${pids[i]}" 2> /dev/null || true
    wait "${pids[i]}" 2> /dev/null || true
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for log in slurmctld.log slurmd.log munged.log; do
      [ -f "$tmp/$log" ] && { echo "---- $log (last 30 lines)"; tail -n 30 "$tmp/$log"; }
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Wait until `cmd` succeeds, at most $1 seconds.
wait_for() {
  local seconds=$1
  shift
  local end=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.5
  done
}

# ---- munge: a fresh key and socket, nothing shared with a system munged
mkdir -m 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" \
  --socket="$tmp/munge/munge.socket" --pid-file="$tmp/munge/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munge/munged.seed" \
  > "$tmp/munged.out" 2>&1 &
pids+=($!)
wait_for 20 test -S "$tmp/munge/munge.socket" || fail "munged did not start"

# ---- slurm.conf: this machine's CPUs and (most of its) memory, free ports
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)
port_free() { ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
pick_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 30000))
    if port_free "$p" && port_free "$((p + 1))"; then
      echo "$p"
      return
    fi
  done
  return 1
}
port=$(pick_port) || fail "no free TCP port"
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/work"
cat > "$tmp/slurm.conf" << EOF
ClusterName=ncsimtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" > "$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" > "$tmp/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [ "$(sinfo -h -n localhost -o %t 2> /dev/null)" = idle ]; }
wait_for 60 node_idle || fail "the node did not become idle: $(sinfo -h -o '%n %t %E' 2>&1)"
echo "slurm: node localhost idle ($cpus CPUs, $mem_mb MB)"

# ---- the sweep: GEMM (d) timing-only, 6 points, 4 points per array task (2 tasks)
cat > "$tmp/work/spec.json" << EOF
{ "program": "$src/kernels/gemm_d_blocked.nca", "arch": "trn1", "timing_only": true,
  "grid": { "hbm.bandwidth_gbps": [205, 410, 820],
            "pe.clock_ghz": [1.4, 2.8] } }
EOF
cd "$tmp/work"
"$ncsim" sweep spec.json --slurm --out slurm-out --points-per-task 4 > sweep.sh
grep -q -- '--array=0-1$' sweep.sh || fail "expected an array of 2 tasks: $(grep array sweep.sh)"
submitted=$(bash sweep.sh) || fail "submission failed"
echo "slurm: $submitted"
merge_job=$(echo "$submitted" | sed -n 's/.*merge job \([0-9]*\).*/\1/p')
[ -n "$merge_job" ] || fail "no merge job id in '$submitted'"
job_gone() { [ -z "$(squeue -h -o %i 2> /dev/null)" ]; }
wait_for 180 job_gone || fail "jobs still queued after 180 s: $(squeue 2>&1)"
state=$(scontrol show job "$merge_job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
[ "$state" = COMPLETED ] || fail "merge job $merge_job ended $state: $(cat slurm-out/slurm-merge-*.out 2>&1)"
[ -f slurm-out/results.csv ] || fail "no merged CSV"
for i in 0 1 2 3 4 5; do
  [ -f "slurm-out/point-$i.json" ] || fail "point $i has no result"
done

# ---- the same sweep here, two workers: the CSV must be the same bytes
"$ncsim" sweep spec.json --jobs 2 --out local-out -q
cmp slurm-out/results.csv local-out/results.csv || {
  diff slurm-out/results.csv local-out/results.csv || true
  fail "the Slurm CSV differs from the local one"
}
rows=$(($(wc -l < local-out/results.csv) - 1))
[ "$rows" -eq 6 ] || fail "expected 6 rows, got $rows"
grep -c ',ok$' local-out/results.csv | grep -qx 6 || fail "not every point is ok"

# ---- a rerun of one array task skips its points (already done)
out=$(SLURM_ARRAY_TASK_ID=5 "$ncsim" sweep spec.json --out slurm-out 2>&1)
echo "$out" | grep -q '0 points run, 1 already done' || fail "rerun did not skip: $out"
echo "PASS: Slurm array sweep (6 points, 2 tasks) merged CSV equals the local --jobs 2 CSV"
