#!/usr/bin/env bash
# Installs the tools that a few tests use where they are present and skip without (none of them
# is needed to build or run epoch): headless Chromium from Debian (ReportCli loads a report in
# it) and a venv with TensorBoard and scipy from PyPI (ScalarEvents reads the event files with
# TensorBoard's own reader; bench/reference/stats_reference.py writes the study's scipy figures).
# Usage: scripts/setup-test-tools.sh [VENV]   (default: .venv-tools in the repository root, the
# venv the tests look for; EPOCH_TEST_PYTHON names another interpreter)
# Safe to run again: it only installs what is missing.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$repo_root/.venv-tools}
python=${PYTHON:-python3}

if [ ! -x /usr/bin/chromium ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "epoch: installing chromium with apt-get"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "epoch: creating the test-tools venv in $venv"
  if ! "$python" -m venv "$venv"; then
    echo "epoch: $python cannot make a venv (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
py="$venv/bin/python"
if ! "$py" -c "import tensorboard, scipy" > /dev/null 2>&1; then
  echo "epoch: installing tensorboard and scipy from PyPI into $venv"
  "$py" -m pip install --upgrade pip
  "$py" -m pip install tensorboard scipy
fi
"$py" -c "import tensorboard, scipy; print('epoch: tensorboard', tensorboard.__version__,
    'scipy', scipy.__version__, '| chromium: /usr/bin/chromium')"
