"""Which files of an SGLang package a snapshot takes: the `speculative` and `full` scopes.

Paths here are relative to the package folder (`srt/server_args.py`, `version.py`); stored trees put
them under `sglang/`. Only Python files (`*.py`) are taken. `version.py` and `_version.py` are
always taken (they name the release; newer releases keep the literal in the generated `_version.py`).

`full`: every `*.py` under `srt/`.

`speculative` (default), every `*.py` that is
- under `srt/speculative/` or `srt/arg_groups/` (any depth), or is `srt/server_args.py`;
- directly in `srt/models/` with `eagle` or `dflash` in its file name;
- any other file directly in `srt/models/` whose bytes match `VOCAB_PATTERN` (it mentions `d2t`/`t2d`
  as a whole token: `self.d2t`, `"t2d"`, but not `Dropout2d` or `UpsamplingNearest2d`);
- under `srt/managers/` (any depth) whose bytes match `SPEC_ALGO_PATTERN` (it touches the
  speculative algorithm: `SpeculativeAlgorithm`, `spec_algorithm`, `speculative_algorithm`).

The two patterns are POSIX extended regular expressions that Python's `re` (with MULTILINE) reads
the same way, so the remote side can run them with `grep -E` and get the same answer.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

SCOPES = ("speculative", "full")
DEFAULT_SCOPE = "speculative"

VERSION_FILES = ("version.py", "_version.py")
SRT = "srt/"
SPEC_TREES = ("srt/speculative/", "srt/arg_groups/")
SPEC_FILES = ("srt/server_args.py",)
MODELS = "srt/models/"
MODEL_NAME_WORDS = ("eagle", "dflash")
MANAGERS = "srt/managers/"

# Folders a scope reads from: followed even when they are symlinks (unless they loop), locally and
# over SSH. Any other symlink is recorded as skipped.
SCOPE_ROOTS = ("srt", "srt/speculative", "srt/arg_groups", "srt/managers", "srt/models")

VOCAB_PATTERN = r"(^|[^A-Za-z0-9])(d2t|t2d)([^A-Za-z0-9]|$)"
SPEC_ALGO_PATTERN = r"SpeculativeAlgorithm|spec_algorithm|speculative_algorithm"

_COMPILED = {
    VOCAB_PATTERN: re.compile(VOCAB_PATTERN.encode(), re.MULTILINE),
    SPEC_ALGO_PATTERN: re.compile(SPEC_ALGO_PATTERN.encode(), re.MULTILINE),
}


NOT_UTF8 = "file name is not UTF-8"


def utf8_name(path: str) -> str | None:
    """None when `path` (decoded with surrogateescape) is valid UTF-8; else a readable stand-in
    (undecodable bytes as U+FFFD) to record it as skipped under. Snapshots hold UTF-8 names only."""
    try:
        path.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def check_scope(scope: str | None) -> str:
    scope = scope or DEFAULT_SCOPE
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r} (choose from {', '.join(SCOPES)})")
    return scope


def search_pattern(path: str, scope: str) -> str | None:
    """The byte pattern that decides whether `path` is taken, or None when its name alone decides."""
    if scope != "speculative" or not path.endswith(".py"):
        return None
    if path.startswith(MODELS) and "/" not in path[len(MODELS):] and not _model_by_name(path):
        return VOCAB_PATTERN
    if path.startswith(MANAGERS) and not _by_name(path, scope):
        return SPEC_ALGO_PATTERN
    return None


def _model_by_name(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(word in name for word in MODEL_NAME_WORDS)


def _by_name(path: str, scope: str) -> bool:
    if path in VERSION_FILES:
        return True
    if not path.endswith(".py") or not path.startswith(SRT):
        return False
    if scope == "full":
        return True
    if path.startswith(SPEC_TREES) or path in SPEC_FILES:
        return True
    return path.startswith(MODELS) and "/" not in path[len(MODELS):] and _model_by_name(path)


def candidates(paths: Iterable[str], scope: str) -> list[str]:
    """The paths that the scope may take: taken by name, or to be decided by a byte search."""
    return sorted(p for p in paths if _by_name(p, scope) or search_pattern(p, scope))


def matches(pattern: str, data: bytes) -> bool:
    """The cheap byte search, identical in meaning to `grep -E pattern` under LC_ALL=C."""
    return _COMPILED[pattern].search(data) is not None


def select(paths: Iterable[str], scope: str, mentions: Callable[[str, str], bool]) -> list[str]:
    """The sorted paths the scope takes; `mentions(path, pattern)` answers the byte searches."""
    scope = check_scope(scope)
    chosen = []
    for path in set(paths):
        if _by_name(path, scope):
            chosen.append(path)
            continue
        pattern = search_pattern(path, scope)
        if pattern and mentions(path, pattern):
            chosen.append(path)
    return sorted(chosen)


def select_local(paths: Iterable[str], scope: str, read: Callable[[str], bytes]) -> list[str]:
    """`select` with the byte search done in Python on `read(path)`."""
    return select(paths, scope, lambda path, pattern: matches(pattern, read(path)))
