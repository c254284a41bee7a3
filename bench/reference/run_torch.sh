#!/usr/bin/env bash
# Runs a PyTorch reference script in PyTorch's best configuration on this machine
# (docs: BENCHMARKING.md), for the PyPI release (a venv) or Debian's python3-torch 1.13.
# Usage: bench/reference/run_torch.sh pypi|debian SCRIPT [ARGS...]
#   pypi: the venv in $EPOCH_TORCH_VENV, else .venv-torch in the repository root
#         (scripts/setup-reference.sh creates it); debian: /usr/bin/python3 + OpenMP OpenBLAS.
set -euo pipefail

usage() {
  echo "usage: $0 pypi|debian SCRIPT [ARGS...]" >&2
  exit 2
}

[ $# -ge 2 ] || usage
flavour=$1
shift

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# glibc's allocator otherwise unmaps and re-faults activation buffers every step.
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296

# OpenMP threads follow the script's --threads (the scripts also call torch.set_num_threads).
# The OpenMP wait policy: a caller's OMP_WAIT_POLICY or GOMP_SPINCOUNT passes through (epoch
# honours the same two); when neither is set PyTorch runs with its own default, libgomp's
# (epoch's binary sets a bounded spin count of its own: docs/ARCHITECTURE.md, Threads). Run by
# epoch (bench --compare pytorch), the script inherits epoch's setting, marked by
# EPOCH_OMP_DEFAULT holding the same count: that one is removed.
if [ -z "${OMP_WAIT_POLICY+set}" ] && [ -n "${EPOCH_OMP_DEFAULT+set}" ] &&
   [ "${GOMP_SPINCOUNT-}" = "$EPOCH_OMP_DEFAULT" ]; then
  unset GOMP_SPINCOUNT EPOCH_OMP_DEFAULT
fi
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
  export OMP_NUM_THREADS=$threads
fi

case "$flavour" in
  pypi)
    venv=${EPOCH_TORCH_VENV:-$repo_root/.venv-torch}
    python=$venv/bin/python
    if [ ! -x "$python" ]; then
      echo "run_torch.sh: no venv at $venv: run scripts/setup-reference.sh," \
        "or set EPOCH_TORCH_VENV to a venv with torch and numpy" >&2
      exit 1
    fi
    ;;
  debian)
    python=/usr/bin/python3
    if command -v dpkg-architecture > /dev/null 2>&1; then
      multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
    else
      multiarch=$(gcc -print-multiarch)
    fi
    blas_dir=/usr/lib/$multiarch/openblas-openmp
    if [ ! -e "$blas_dir/libblas.so.3" ]; then
      echo "run_torch.sh: $blas_dir/libblas.so.3 not found:" \
        "apt-get install libopenblas0-openmp (the pthread or reference BLAS is not a fair" \
        "reference)" >&2
      exit 1
    fi
    if ! "$python" -c "import torch" > /dev/null 2>&1; then
      echo "run_torch.sh: $python cannot import torch: apt-get install python3-torch" >&2
      exit 1
    fi
    export LD_LIBRARY_PATH=$blas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    ;;
  *)
    usage
    ;;
esac

# OpenBLAS with a forced Haswell core type runs AVX2 kernels at half speed on AVX-512 cores.
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$python" "$@"
