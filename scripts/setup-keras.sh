#!/usr/bin/env bash
# Creates the Keras 3 reference venv (TensorFlow for the CPU and Keras 3 from PyPI) that
# bench/reference/run_keras.sh uses for the Keras side of a comparison (BENCHMARKING.md).
# A development tool only: nothing in epoch's build or tests needs it.
# Usage: scripts/setup-keras.sh [VENV]   (default: .venv-keras in the repository root)
# Safe to run again: it only installs what the venv is missing.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-${EPOCH_KERAS_VENV:-$repo_root/.venv-keras}}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  echo "epoch: creating the Keras reference venv in $venv"
  "$python" -m venv "$venv"
fi

py="$venv/bin/python"
# TensorFlow's CPU build (tensorflow-cpu; the full tensorflow wheel where no CPU-only wheel
# exists for this Python) and Keras 3, which replaces the Keras 2 that some TF releases pull in.
if ! "$py" -c "import tensorflow" > /dev/null 2>&1; then
  echo "epoch: installing tensorflow-cpu from PyPI into $venv (a large download)"
  "$py" -m pip install --upgrade pip
  if ! "$py" -m pip install tensorflow-cpu; then
    echo "epoch: no tensorflow-cpu wheel here; installing tensorflow instead"
    "$py" -m pip install tensorflow
  fi
fi
if ! "$py" -c "import keras, sys; sys.exit(int(keras.__version__.split('.')[0]) < 3)" \
    > /dev/null 2>&1; then
  echo "epoch: installing keras 3 from PyPI into $venv"
  "$py" -m pip install "keras>=3"
fi
TF_CPP_MIN_LOG_LEVEL=2 "$py" -c "import tensorflow as tf, keras, numpy
print('epoch: reference tensorflow', tf.__version__, 'keras', keras.__version__,
      'numpy', numpy.__version__)"
