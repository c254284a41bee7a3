#!/bin/bash
# Open MPI's remote-shell agent for scripts/two-hosts.sh: where mpirun would run
# `ssh HOST COMMAND...`, runs COMMAND in the network namespace that $EPOCH_NETNS_MAP (lines of
# "address namespace") gives HOST.
set -euo pipefail
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "${EPOCH_NETNS_MAP:?}")
[ -n "$ns" ] || { echo "netns-rsh.sh: no namespace for host $host" >&2; exit 1; }
exec ip netns exec "$ns" sh -c "$*"
