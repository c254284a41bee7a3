#!/usr/bin/env bash
# Runs a Keras 3 reference script (TensorFlow on the CPU) in its best configuration here
# (docs: BENCHMARKING.md), from the venv that scripts/setup-keras.sh creates.
# Usage: bench/reference/run_keras.sh SCRIPT [ARGS...]
#   the venv in $EPOCH_KERAS_VENV, else .venv-keras in the repository root.
# TF_ENABLE_ONEDNN_OPTS and ONEDNN_MAX_CPU_ISA pass through from the caller (TensorFlow's
# default on x86 is oneDNN on; its oneDNN honours ONEDNN_MAX_CPU_ISA, its Eigen kernels do not).
set -euo pipefail

usage() {
  echo "usage: $0 SCRIPT [ARGS...]" >&2
  exit 2
}

[ $# -ge 1 ] || usage

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
venv=${EPOCH_KERAS_VENV:-$repo_root/.venv-keras}
python=$venv/bin/python
if [ ! -x "$python" ]; then
  echo "run_keras.sh: no venv at $venv: run scripts/setup-keras.sh," \
    "or set EPOCH_KERAS_VENV to a venv with tensorflow and keras 3" >&2
  exit 1
fi

# Unlike PyTorch, TensorFlow gains nothing from run_torch.sh's GLIBC_TUNABLES here (measured:
# equal or slightly slower), so glibc's defaults stay; a caller's setting passes through.

# Threads follow the script's --threads: TensorFlow's intra-op pool gets them, the inter-op
# pool 1 (one model, one step at a time); keras_bench.py sets the same before importing TF.
threads=""
prev=""
for a in "$@"; do
  case "$a" in
    --threads=*) threads=${a#--threads=} ;;
  esac
  if [ "$prev" = "--threads" ]; then
    threads=$a
  fi
  prev=$a
done
if [ -n "$threads" ]; then
  export OMP_NUM_THREADS=$threads TF_NUM_INTRAOP_THREADS=$threads TF_NUM_INTEROP_THREADS=1
fi
export KERAS_BACKEND=tensorflow
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}

exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$python" "$@"
