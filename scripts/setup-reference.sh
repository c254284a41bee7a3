#!/usr/bin/env bash
# Creates the PyTorch reference venv (the current torch and numpy from PyPI) that
# bench/reference/run_torch.sh uses for the "pypi" side of every comparison (BENCHMARKING.md).
# Usage: scripts/setup-reference.sh [VENV]   (default: .venv-torch in the repository root)
# Safe to run again: it only installs what the venv is missing.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-${EPOCH_TORCH_VENV:-$repo_root/.venv-torch}}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  echo "epoch: creating the PyTorch reference venv in $venv"
  "$python" -m venv "$venv"
fi

if "$venv/bin/python" -c "import torch, numpy" > /dev/null 2>&1; then
  "$venv/bin/python" -c "import torch; print('epoch: reference torch', torch.__version__)"
  exit 0
fi

echo "epoch: installing torch and numpy from PyPI into $venv (a large download)"
"$venv/bin/python" -m pip install --upgrade pip
"$venv/bin/python" -m pip install torch numpy
"$venv/bin/python" -c "import torch; print('epoch: reference torch', torch.__version__)"
