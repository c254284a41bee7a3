#!/bin/bash
# epoch under Slurm on one machine: a private single-node cluster (munged, slurmctld and
# slurmd with their own configuration, ports and state in --out), then the same short run
#   1. under mpirun -np 2 (the reference),
#   2. under srun -n 2 --mpi=pmix (Slurm starts the ranks; Open MPI joins them over PMIx),
#   3. under salloc -n 2 mpirun (mpirun inside an allocation, as an sbatch script runs it),
# checks that the three give the same test loss, that srun -n 2 without an MPI plugin is
# refused with one line (it would start two separate trainings), and that a rank killed
# mid-run (SIGKILL) ends the whole step within 30 s.
#
#   sudo scripts/slurm-check.sh [--epoch build/epoch] [--out build/slurm-check]
#
# Needs root. Installs Debian's slurm-wlm and munge when they are missing (a development
# check: epoch itself needs only Open MPI). Leaves no daemon running.
set -euo pipefail

epoch=build/epoch
out=build/slurm-check
while [ $# -gt 0 ]; do
  case "$1" in
    --epoch) epoch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "slurm-check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "slurm-check.sh: needs root (munged, slurmd)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "slurm-check.sh: no mpirun (make deps)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge \
    >/dev/null
fi
epoch=$(realpath "$epoch")
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out"/*
mkdir -p "$out/state" "$out/spool" "$out/log"

cleanup() {
  for pid in "$out"/slurmd.pid "$out"/slurmctld.pid "$out"/munged.pid; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  done
}
trap cleanup EXIT

# munge: a private key and socket, so a munged already running here is left alone.
dd if=/dev/urandom of="$out/munge.key" bs=1024 count=1 status=none
chmod 400 "$out/munge.key"
munged --force --key-file "$out/munge.key" --socket "$out/munge.socket" \
  --pid-file "$out/munged.pid" --log-file "$out/log/munged.log" --seed-file "$out/munged.seed"

host=$(hostname)
cat > "$out/slurm.conf" <<EOF
ClusterName=epoch-check
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$out/munge.socket
CredType=cred/munge
StateSaveLocation=$out/state
SlurmdSpoolDir=$out/spool
SlurmctldPidFile=$out/slurmctld.pid
SlurmdPidFile=$out/slurmd.pid
SlurmctldLogFile=$out/log/slurmctld.log
SlurmdLogFile=$out/log/slurmd.log
SlurmctldPort=6917
SlurmdPort=6918
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF="$out/slurm.conf"
slurmctld
slurmd
for _ in $(seq 50); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t | grep -q idle || { echo "slurm-check.sh: slurmd never came up ($out/log)" >&2; exit 1; }
srun --version

train=(train --model cifar10-keras --data synthetic --synthetic-count 512 --limit-test 128
       --epochs 1 --batch-size 32 --threads 1 --seed 5 --quiet --json)
loss() { tail -n 1 "$1" | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(repr(j["test_loss"]), j["world_size"], j["global_batch_size"])'; }

echo "== mpirun -np 2"
mpirun --allow-run-as-root --oversubscribe -np 2 "$epoch" "${train[@]}" --out "$out/mpirun" \
  > "$out/mpirun.json"
ref=$(loss "$out/mpirun.json"); echo "test loss, world, global batch: $ref"

echo "== srun -n 2 --mpi=pmix"
srun -n 2 --mpi=pmix "$epoch" "${train[@]}" --out "$out/srun" > "$out/srun.json"
got=$(loss "$out/srun.json"); echo "test loss, world, global batch: $got"
[ "$got" = "$ref" ] || { echo "slurm-check.sh: srun differs from mpirun" >&2; exit 1; }

echo "== salloc -n 2 mpirun"
salloc -Q -n 2 mpirun --allow-run-as-root "$epoch" "${train[@]}" --out "$out/salloc" \
  > "$out/salloc.json"
got=$(loss "$out/salloc.json"); echo "test loss, world, global batch: $got"
[ "$got" = "$ref" ] || { echo "slurm-check.sh: salloc + mpirun differs from mpirun" >&2; exit 1; }

echo "== srun -n 2 without an MPI plugin"
if srun -n 2 "$epoch" "${train[@]}" --out "$out/noplugin" > /dev/null 2> "$out/noplugin.err"; then
  echo "slurm-check.sh: two unjoined tasks were not refused" >&2; exit 1
fi
grep -m1 "srun started 2 tasks" "$out/noplugin.err"

echo "== srun -n 2 --mpi=pmix, task 1 killed (SIGKILL) after step 20"
start=$(date +%s.%N)
set +e
timeout 60 srun -n 2 --mpi=pmix sh -c 'if [ "$SLURM_PROCID" = 1 ]; then
  (while ! grep -q "\"step\":20" "$0/metrics.jsonl" 2>/dev/null; do sleep 0.05; done; kill -9 $$) &
  fi; exec "$1" train --model autoencoder --data synthetic --synthetic-count 4096 \
  --limit-test 256 --epochs 2 --threads 1 --log-every 1 --quiet --out "$0"' "$out/killed" \
  "$epoch" > /dev/null 2> "$out/killed.err"
rc=$?
set -e
took=$(python3 -c "import time; print('%.1f' % (time.time() - $start))")
echo "exit $rc after $took s"
[ "$rc" != 0 ] && [ "$rc" != 124 ] || { echo "slurm-check.sh: the killed step did not end" >&2; exit 1; }
python3 -c "import sys; sys.exit(0 if $took < 30 else 1)" ||
  { echo "slurm-check.sh: the step took $took s to end" >&2; exit 1; }
grep -m1 "task 1: Killed" "$out/killed.err"
echo "slurm-check.sh: passed"
