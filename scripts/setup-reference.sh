#!/usr/bin/env bash
# Creates the PyTorch reference venv (the current torch, numpy, torchvision and pillow from
# PyPI) that bench/reference/run_torch.sh uses for the "pypi" side of every comparison
# (BENCHMARKING.md).
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

py="$venv/bin/python"
if ! "$py" -c "import torch, numpy" > /dev/null 2>&1; then
  echo "epoch: installing torch and numpy from PyPI into $venv (a large download)"
  "$py" -m pip install --upgrade pip
  "$py" -m pip install torch numpy
fi

# torchvision and Pillow (bench/reference/pipeline_bench.py), pinned to the installed torch so
# that pip picks the matching torchvision instead of replacing torch.
if ! "$py" -c "import torchvision, PIL" > /dev/null 2>&1; then
  torch_version=$("$py" -c "import torch; print(torch.__version__.split('+')[0])")
  echo "epoch: installing torchvision and pillow for torch $torch_version into $venv"
  "$py" -m pip install "torch==$torch_version" torchvision pillow
fi
"$py" -c "import torch, torchvision, PIL; print('epoch: reference torch', torch.__version__,
    'torchvision', torchvision.__version__, 'pillow', PIL.__version__)"
