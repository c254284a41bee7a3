#!/usr/bin/env bash
# The hardware study of docs/STUDY.md, rerunnable on any machine: the autoencoder and
# prednet-study protocols under thread counts 1, 2 and 4, the reference kernels and the one-ulp
# and summation-order perturbations on this CPU at its own instruction-set level, then again on
# a second "machine" (this CPU at the baseline level x86-64, EPOCH_CPU_ISA=x86-64, which holds
# oneDNN to SSE4.1 too) and a third (the AVX2 level an AVX2-only CPU runs: EPOCH_CPU_ISA=
# x86-64-v3 with ONEDNN_MAX_CPU_ISA=AVX2; only on a CPU above it), each protocol's studies
# combined into one with `epoch study combine`, and its report.
#   bench/hardware_study.sh OUT [autoencoder|prednet|both]
# REPEATS (default 10 for the autoencoder, 5 for prednet-study), EPOCH (default build/epoch),
# PREDNET_SIZE (frames, default 80x60), PREDNET_WINDOWS (updates per run, default 100).
set -euo pipefail
out=${1:?usage: bench/hardware_study.sh OUT [autoencoder|prednet|both]}
which=${2:-both}
epoch=${EPOCH:-build/epoch}
mkdir -p "$out"

levels() {  # the machines this CPU can stand in for, beside its own level
  echo "baseline EPOCH_CPU_ISA=x86-64"
  if "$epoch" info --json | grep -q '"isa":"x86-64-v4"'; then
    echo "avx2 EPOCH_CPU_ISA=x86-64-v3 ONEDNN_MAX_CPU_ISA=AVX2"
  fi
}

study() {  # NAME CONFIGS REPEATS ARGS... : one protocol on every machine, then combined
  local name=$1 configs=$2 repeats=$3
  shift 3
  local dirs=("$out/$name-native")
  /usr/bin/time -f "$name native: %e s, %M KB" \
    "$epoch" study --configs "$configs" --repeats "$repeats" --out "$out/$name-native" "$@"
  while read -r machine env; do
    # The other levels: the thread counts and the reference kernels (the perturbations are
    # this level's question already).
    /usr/bin/time -f "$name $machine: %e s, %M KB" env $env \
      "$epoch" study --configs cpu:1,cpu:2,cpu:4,cpu:2+determinism=reference \
      --repeats "$repeats" --out "$out/$name-$machine" "$@"
    dirs+=("$out/$name-$machine")
  done < <(levels)
  "$epoch" study combine "${dirs[@]}" --out "$out/$name"
}

configs=cpu:1,cpu:2,cpu:4,cpu:2+determinism=reference,cpu:2+perturb=ulp,cpu:2+perturb=order
if [ "$which" = autoencoder ] || [ "$which" = both ]; then
  study autoencoder "$configs" "${REPEATS:-10}" --protocol autoencoder
fi
if [ "$which" = prednet ] || [ "$which" = both ]; then
  size=${PREDNET_SIZE:-80x60}
  if [ ! -d "$out/video/train" ]; then
    "$epoch" data synth --kind video --size "$size" --sequences 4 --val-sequences 1 \
      --frames 600 --out "$out/video"
  fi
  study prednet "$configs" "${REPEATS:-5}" --protocol prednet-study --data "$out/video" \
    --limit-train "${PREDNET_WINDOWS:-100}" --limit-test 10
fi
