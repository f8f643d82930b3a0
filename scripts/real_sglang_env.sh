#!/usr/bin/env bash
# Build (once) a directory that makes the REAL sglang==VERSION importable on CPU, for the
# real-package tests in tests/codegen/test_real_sglang.py.
#
#   scripts/real_sglang_env.sh 0.5.23      -> prints the site directory
#
# The site lives in $SGLSCAN_TEST_CACHE/real-sglang/VERSION/site (default ~/.cache/sgl-scan-tests).
# It holds sglang installed with --no-deps plus only the small packages that importing its
# speculative modules, ServerArgs and the DFlash workers needs, each pinned as the wheel's own
# METADATA pins it. torch is NOT installed here: the tests run with the suite's own python, whose
# CPU torch comes from the `kernels` extra (an unpinned install would pull the CUDA torch and
# gigabytes of nvidia wheels). torchvision and sgl_kernel are the only import stand-ins (see
# tests/support/real_sglang/stand_ins/README.md); none of sglang's own modules is stood in for.
# The site is complete only when its .complete marker exists; a failed build leaves no marker.
set -euo pipefail
V=${1:?usage: real_sglang_env.sh VERSION}
PY=${PYTHON:-python3}
CACHE=${SGLSCAN_TEST_CACHE:-$HOME/.cache/sgl-scan-tests}
DEST="$CACHE/real-sglang/$V"
SITE="$DEST/site"
LAYOUT=2  # bump when what goes into the site changes: older sites are rebuilt
if [ "$(cat "$DEST/.complete" 2>/dev/null)" = "$LAYOUT" ]; then echo "$SITE"; exit 0; fi
rm -rf "$DEST"; mkdir -p "$DEST/wheel"
WHEEL=$(ls "$CACHE"/wheels/sglang-"$V"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$WHEEL" ]; then
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DEST/wheel" "sglang==$V" >&2
  WHEEL=$(ls "$DEST"/wheel/sglang-"$V"-*.whl | head -n1)
fi
# What importing sglang.srt.server_args / speculative / dflash workers needs, besides torch.
NEEDED="transformers tokenizers orjson psutil pybase64 requests pillow msgspec pydantic pyzmq tqdm
IPython aiohttp fastapi uvicorn openai python-multipart setproctitle xxhash einops dill
apache-tvm-ffi packaging numpy partial_json_parser"
# Imported at module level too, but their own requirements name torch (or are all present already):
# installed with --no-deps so that no torch (CUDA build) comes in.
NEEDED_NO_DEPS="sentencepiece compressed-tensors loguru gguf"
# Pin each the way the wheel pins it (Requires-Dist without markers or extras).
pins() {
"$PY" - "$WHEEL" "$@" <<'PY'
import re, sys, zipfile
wheel, needed = sys.argv[1], sys.argv[2:]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
pins = {}
for line in lines:
    if not line.startswith("Requires-Dist:") or ";" in line:
        continue
    spec = line.split(":", 1)[1].strip()
    name = re.match(r"[A-Za-z0-9_.\-]+", spec).group(0)
    pins[norm(name)] = spec
for n in needed:
    print(pins.get(norm(n), n))
PY
}
REQS=$(pins $NEEDED)
REQS_NO_DEPS=$(pins $NEEDED_NO_DEPS)
# numpy: keep the suite's own (torch was built against it) so the site does not shadow it.
CONSTRAINTS="$DEST/constraints.txt"
"$PY" -c 'import numpy; print("numpy==" + numpy.__version__)' > "$CONSTRAINTS" 2>/dev/null || : > "$CONSTRAINTS"
REQS=$(echo "$REQS" | grep -v -i '^numpy' || true)
"$PY" -m pip install -q --no-deps --target "$SITE" "$WHEEL" >&2
# shellcheck disable=SC2086
"$PY" -m pip install -q --target "$SITE" -c "$CONSTRAINTS" $REQS >&2
# shellcheck disable=SC2086
"$PY" -m pip install -q --no-deps --target "$SITE" $REQS_NO_DEPS >&2
# the suite's numpy/torch must win: drop anything the resolver copied that the suite already has
for pkg in numpy torch; do
  if "$PY" -c "import $pkg" 2>/dev/null; then rm -rf "$SITE/$pkg" "$SITE"/$pkg-*.dist-info "$SITE/$pkg.libs"; fi
done
echo "$LAYOUT" > "$DEST/.complete"
echo "$SITE"
