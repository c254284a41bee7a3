#!/usr/bin/env bash
# CTest's baseline_cpu_runs: the one binary on a CPU without AVX, as `qemu-x86_64 -cpu Nehalem`
# (Debian's qemu-user) emulates one: `epoch --version` and `epoch info` start, the kernels run at
# the baseline level (x86-64) and oneDNN at SSE4.1, and a short training finishes with the
# loss of the same training run natively within 1e-5 of it (the levels round differently: FMA,
# vector widths). Exit 77 (CTest's skip) without qemu-x86_64.
# usage: baseline_cpu_check.sh EPOCH_BINARY WORK_DIR
set -euo pipefail
epoch=$1
work=$2
qemu=$(command -v qemu-x86_64 || true)
if [ -z "$qemu" ]; then
  echo "skipped: qemu-x86_64 is not installed (Debian's qemu-user; make deps installs it)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
# epoch sets its OpenMP wait policy by executing itself again unless one is given; qemu-user
# would run that new process natively, outside the emulated CPU. So one is given.
export GOMP_SPINCOUNT=10000
old=("$qemu" -cpu Nehalem "$epoch")

"${old[@]}" --version
info=$("${old[@]}" info --json)
echo "$info"
grep -q '"isa":"x86-64"' <<< "$info" || { echo "FAIL: the kernels do not run at x86-64"; exit 1; }
grep -q '"onednn_isa":"sse41"' <<< "$info" || { echo "FAIL: oneDNN is not at SSE4.1"; exit 1; }

# Direct convolutions on both: the native run would otherwise take Winograd's (oneDNN's on
# AVX-512, epoch's on AVX2), which rounds otherwise (0.1% of this loss after 8 steps); then the
# levels differ by their rounding alone.
args=(train --limit-train 256 --limit-test 256 --epochs 1 --threads 1 --conv-algo direct --json
      --quiet)
emulated=$("${old[@]}" "${args[@]}" --out "$work/nehalem")
native=$("$epoch" "${args[@]}" --out "$work/native")
loss() { sed -n 's/.*"test_loss":\([-0-9.eE+]*\).*/\1/p' <<< "$1"; }
a=$(loss "$emulated")
b=$(loss "$native")
echo "test loss: Nehalem (emulated) $a, native $b"
[ -n "$a" ] && [ -n "$b" ] || { echo "FAIL: no test loss in the output"; exit 1; }
grep -q '"cpu_isa": "x86-64"' "$work/nehalem/config.json" ||
  { echo "FAIL: config.json does not name the x86-64 level"; exit 1; }
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; m = (b < 0 ? -b : b);
  if (d > 1e-5 * m) { print "FAIL: the losses differ by more than 1e-5 of it"; exit 1 } }'
echo "ok"
