#!/usr/bin/env bash
# The hardware study of docs/STUDY.md, rerunnable on any machine: the autoencoder and
# prednet-study protocols under thread counts 1, 2 and 4, the reference kernels and the one-ulp
# and summation-order perturbations on this CPU at its own instruction-set level, then on a
# second "machine" (this CPU at the baseline level, EPOCH_CPU_ISA=x86-64, which holds oneDNN to
# SSE4.1 too) and, for the autoencoder, a third (the level an AVX2-only CPU runs:
# EPOCH_CPU_ISA=x86-64-v3 with ONEDNN_MAX_CPU_ISA=AVX2; only on a CPU above it); each
# protocol's studies are combined into one with `epoch study combine`, with its report.
#   bench/hardware_study.sh OUT [autoencoder|prednet|both]
# EPOCH (default build/epoch); AUTOENCODER_REPEATS (10), PREDNET_REPEATS (3), PREDNET_WINDOWS
# (updates per run, 16), PREDNET_SIZE (generated frames, 160x120: the model's own size).
set -euo pipefail
out=${1:?usage: bench/hardware_study.sh OUT [autoencoder|prednet|both]}
which=${2:-both}
epoch=${EPOCH:-build/epoch}
mkdir -p "$out"

timed() {  # LABEL COMMAND...: the command, its wall time and peak memory on stderr
  local label=$1
  shift
  /usr/bin/time -f "$label: %e s, %M KB" "$@"
}

# one LABEL DIR CONFIGS REPEATS ENV -- ARGS...: one study, continued where an earlier call of the
# script stopped (epoch study --resume keeps the finished runs), skipped when it finished.
one() {
  local label=$1 dir=$2 configs=$3 repeats=$4
  shift 4
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  if [ -f "$dir/study.json" ]; then
    echo "$label: finished before ($dir)"
  elif [ -f "$dir/study-plan.json" ]; then
    timed "$label (resumed)" env "${env[@]}" "$epoch" study --resume --out "$dir"
  else
    timed "$label" env "${env[@]}" "$epoch" study --configs "$configs" --repeats "$repeats" \
      --out "$dir" "$@"
  fi
}

# study NAME NATIVE_CONFIGS OTHER_CONFIGS MACHINES REPEATS ARGS...: NAME on this CPU's level with
# NATIVE_CONFIGS, on each of MACHINES ("baseline", "avx2") with OTHER_CONFIGS, then combined.
study() {
  local name=$1 native=$2 other=$3 machines=$4 repeats=$5
  shift 5
  local dirs=("$out/$name-native")
  one "$name native" "$out/$name-native" "$native" "$repeats" -- "$@"
  for machine in $machines; do
    local env=()
    case $machine in
      baseline) env=(EPOCH_CPU_ISA=x86-64) ;;
      avx2)
        "$epoch" info --json | grep -q '"isa_detected":"x86-64-v4"' || continue
        env=(EPOCH_CPU_ISA=x86-64-v3 ONEDNN_MAX_CPU_ISA=AVX2)
        ;;
    esac
    one "$name $machine" "$out/$name-$machine" "$other" "$repeats" "${env[@]}" -- "$@"
    dirs+=("$out/$name-$machine")
  done
  rm -rf "$out/$name"
  "$epoch" study combine "${dirs[@]}" --out "$out/$name"
  python3 "$(dirname "$0")/study_power.py" "$out/$name/study.json" > "$out/$name/power.txt"
}

if [ "$which" = autoencoder ] || [ "$which" = both ]; then
  study autoencoder \
    cpu:1,cpu:2,cpu:4,cpu:2+determinism=reference,cpu:2+perturb=ulp,cpu:2+perturb=order \
    cpu:1,cpu:2,cpu:4,cpu:2+determinism=reference "baseline avx2" \
    "${AUTOENCODER_REPEATS:-10}" --protocol autoencoder
fi
if [ "$which" = prednet ] || [ "$which" = both ]; then
  if [ ! -d "$out/video/train" ]; then
    "$epoch" data synth --kind video --size "${PREDNET_SIZE:-160x120}" --sequences 4 \
      --val-sequences 1 --frames 200 --out "$out/video"
  fi
  study prednet cpu:1,cpu:2,cpu:4,cpu:2+perturb=ulp,cpu:2+perturb=order cpu:1,cpu:2 baseline \
    "${PREDNET_REPEATS:-3}" --protocol prednet-study --data "$out/video" \
    --limit-train "${PREDNET_WINDOWS:-16}" --limit-test 5
fi
