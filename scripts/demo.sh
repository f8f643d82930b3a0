#!/usr/bin/env bash
# Set up sgl-scan in .venv and scan a real SGLang release from the package index, end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q -e .
exec .venv/bin/sgl-scan --pip "${1:-sglang==0.5.23}"
