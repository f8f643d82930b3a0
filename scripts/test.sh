#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run it.
# Installs openssh-server (Debian) when missing, makes .venv with the package and its test extras,
# and runs pytest. Real SGLang releases are downloaded once into ~/.cache/sgl-scan-tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/sbin/sshd ] || ! command -v git >/dev/null || ! command -v rsync >/dev/null || ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq openssh-server git rsync chromium >/dev/null
  else
    echo "test.sh: needs openssh-server, git, rsync and chromium (sudo apt-get install openssh-server git rsync chromium)" >&2
    exit 2
  fi
fi

PY=${PYTHON:-python3}
# tests/reliability/test_corpus.py parses CPython's own test suite; Debian's python3 ships it apart
if ! "$PY" -c "import pathlib, sys, test; sys.exit(not any(pathlib.Path(test.__file__).parent.glob('badsyntax_*')))" 2>/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "libpython${pyver}-testsuite" >/dev/null \
    || echo "test.sh: could not install libpython${pyver}-testsuite; the stdlib corpus test will fail" >&2
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: 2.13.0 resolves to the CPU build here; an unpinned torch pulls the CUDA
# build and gigabytes of nvidia-* wheels that CPU-only tests never use.
.venv/bin/python -m pip install -q "torch==${SGLSCAN_TORCH_VERSION:-${SGL_SCAN_TORCH_VERSION:-2.13.0}}"
.venv/bin/python -m pip install -q -e ".[test,kernels]"  # kernels: torch, triton, numpy
# The real sglang wheels the codegen real-package tests import on CPU (tests/codegen/test_real_sglang.py),
# each in its own cached site folder; a site that cannot be built makes those tests skip with the reason.
for v in ${SGLSCAN_REAL_SGLANG_VERSIONS:-0.5.23 0.5.11}; do
  PYTHON=.venv/bin/python scripts/real_sglang_env.sh "$v" >/dev/null || echo "test.sh: real sglang $v site not built; its tests will skip" >&2
done
# the installed entry point on PATH: the tests that run `sgl-scan` as a user would must not skip
export PATH="$PWD/.venv/bin:$PATH"
# lint, format-check and type-check the package first (config: pyproject.toml [tool.ruff], [tool.mypy]);
# a finding fails the run
.venv/bin/python -m ruff check sgl_scan
.venv/bin/python -m ruff format --check sgl_scan
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${SGLSCAN_TEST_JOBS:-${SGL_SCAN_TEST_JOBS:-2}}" "$@"
