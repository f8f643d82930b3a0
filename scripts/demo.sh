#!/usr/bin/env bash
# Set up sgl-scan in .venv and scan a real SGLang release from the package index, end to end:
# pull a snapshot (pip download --no-deps, cached), analyse it, run every rule, print the text
# report, and write the same scan as a self-contained HTML report (report.html).
# Exit 0 when the demo ran; findings at error level are part of the report, not a failure here.
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=${1:-sglang==0.5.23}
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q -e .
rc=0
.venv/bin/sgl-scan --pip "$SPEC" || rc=$?
[ "$rc" -le 1 ] || exit "$rc"   # 1 = the scan found errors (shown above); 2/3 = real failures
rc=0
.venv/bin/sgl-scan scan --snapshot latest --format html --output report.html || rc=$?
[ "$rc" -le 1 ] || exit "$rc"
cat >&2 <<EOF

demo: HTML report written to $(pwd)/report.html
demo: sgl-scan is installed in $(pwd)/.venv; next, for example:
  .venv/bin/sgl-scan graph --snapshot latest --dispatch EAGLE   # where EAGLE dispatches, file:line
  .venv/bin/sgl-scan rules                                      # what each finding means
  .venv/bin/sgl-scan --help
or put it on your PATH for this shell first: source .venv/bin/activate; sgl-scan --help
EOF
