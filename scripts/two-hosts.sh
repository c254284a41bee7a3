#!/bin/bash
# Two hosts on one machine: two network namespaces joined by a veth pair, one epoch rank in
# each, talking TCP over the pair as two machines on a network would. Open MPI starts the
# rank in the second namespace through scripts/netns-rsh.sh (in place of ssh), with a host
# file naming the two addresses. It trains the same short run on one host (two ranks) and on
# the two, checks that they agree, then adds delay to the link (tc netem) and shows how much
# of the communication the overlap with backward still hides.
#
#   sudo scripts/two-hosts.sh [--epoch build/epoch] [--delay-ms 5] [--rate 400mbit] [--out DIR]
#                             [-- TRAIN_ARGS]
# (--rate: the link's speed instead of a delay where the kernel has no netem)
#
# Needs root (ip netns, tc), iproute2 and openmpi-bin. Leaves nothing behind: the namespaces
# are removed on exit.
set -euo pipefail

epoch=build/epoch
delay_ms=5
rate=400mbit
out=build/two-hosts
train_args=(--model cifar10-keras --data synthetic --synthetic-count 1024 --limit-test 256
            --epochs 1 --batch-size 32 --threads 1 --seed 5 --quiet --json)
while [ $# -gt 0 ]; do
  case "$1" in
    --epoch) epoch=$2; shift 2 ;;
    --delay-ms) delay_ms=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; train_args=("$@"); break ;;
    *) echo "two-hosts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "two-hosts.sh: needs root (ip netns, tc)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "two-hosts.sh: no mpirun (apt-get install openmpi-bin)" >&2; exit 2; }
epoch=$(realpath "$epoch")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out"/local "$out"/two "$out"/delayed

a=epoch-host-a b=epoch-host-b
addr_a=10.77.0.1 addr_b=10.77.0.2
cleanup() {
  ip netns del $a 2>/dev/null || true
  ip netns del $b 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add $a
ip netns add $b
ip link add veth-a netns $a type veth peer name veth-b netns $b
ip -n $a addr add $addr_a/24 dev veth-a
ip -n $b addr add $addr_b/24 dev veth-b
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link set veth-a up
ip -n $b link set veth-b up

printf '%s slots=1\n%s slots=1\n' $addr_a $addr_b > "$out/hostfile"
printf '%s epoch-host-a\n%s epoch-host-b\n' $addr_a $addr_b > "$out/netns-map"
mpi_two=(mpirun --allow-run-as-root -np 2 --hostfile "$out/hostfile" --map-by node
         --mca plm_rsh_agent "$here/netns-rsh.sh"
         --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24
         --mca oob_tcp_if_include 10.77.0.0/24
         -x EPOCH_NETNS_MAP="$out/netns-map")

summary() { tail -n 1 "$1" | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
print("test_loss %.9g  images/s %.1f  comm %.3f s  exposed %.3f s" % (
    j["test_loss"], j["images_per_s"], j.get("comm_s", 0), j.get("comm_exposed_s", 0)))'; }

echo "== one host, two ranks (shared memory)"
mpirun --allow-run-as-root --oversubscribe -np 2 "$epoch" train "${train_args[@]}" \
  --out "$out/local" > "$out/local.json"
summary "$out/local.json"

echo "== two hosts ($addr_a, $addr_b), one rank each, TCP over a veth pair"
EPOCH_NETNS_MAP="$out/netns-map" ip netns exec $a "${mpi_two[@]}" "$epoch" train \
  "${train_args[@]}" --out "$out/two" > "$out/two.json"
summary "$out/two.json"

python3 - "$out/local.json" "$out/two.json" <<'PY'
import json, sys
a, b = (json.loads(open(p).read().splitlines()[-1]) for p in sys.argv[1:])
rel = abs(a["test_loss"] - b["test_loss"]) / abs(a["test_loss"])
print("same result: test loss %.9g and %.9g (relative difference %.2g)" % (a["test_loss"], b["test_loss"], rel))
sys.exit(0 if rel < 1e-4 else 1)
PY

# Delay with netem where the kernel has it; else (sch_netem missing, as in some VMs) a slower
# link with a token bucket (tbf), which stretches the transfers instead.
if ip netns exec $a tc qdisc add dev veth-a root netem delay "${delay_ms}ms" 2>/dev/null; then
  ip netns exec $b tc qdisc add dev veth-b root netem delay "${delay_ms}ms"
  echo "== two hosts, ${delay_ms} ms added each way (tc netem)"
else
  for pair in "$a veth-a" "$b veth-b"; do
    set -- $pair
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 64kb latency 50ms
  done
  echo "== two hosts, the link limited to $rate each way (tc tbf; this kernel has no netem)"
fi
EPOCH_NETNS_MAP="$out/netns-map" ip netns exec $a "${mpi_two[@]}" "$epoch" train \
  "${train_args[@]}" --out "$out/delayed" > "$out/delayed.json"
summary "$out/delayed.json"
for run in two delayed; do
  python3 - "$out/$run/metrics.jsonl" "$run" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"epoch"' in l]
r = recs[-1]
print("%-8s communication %.3f s, of it waited for %.3f s: %.0f%% hidden behind backward"
      % (sys.argv[2], r["comm_s"], r["comm_exposed_s"], 100 * r["comm_hidden_fraction"]))
PY
done
