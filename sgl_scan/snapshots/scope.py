"""Which files of an SGLang package a snapshot takes: the `speculative` and `full` scopes.

Paths here are relative to the package folder (`srt/server_args.py`, `version.py`); stored trees put
them under `sglang/`. Only Python files (`*.py`) are taken. `version.py` and `_version.py` are
always taken (they name the release; newer releases keep the literal in the generated `_version.py`).

`full`: every `*.py` under `srt/`.

`speculative` (default), every `*.py` that is
- under `srt/speculative/` or `srt/arg_groups/` (any depth), or is `srt/server_args.py`;
- directly in `srt/models/` with `eagle` or `dflash` in its file name;
- directly in `srt/layers/attention/`: `attention_registry.py` and every `*_backend.py` (which
  backend each name builds, and whether its verify reads the tree mask: `gen ddtree` needs both);
- any other file under `srt/` (any depth) whose bytes match `SCOPE_PATTERN`: it touches the
  speculative algorithm (`SpeculativeAlgorithm`, `spec_algo…`, `speculative_algo…`: every file that
  registers an algorithm or dispatches on one, wherever it lives: `model_executor/`, `mem_cache/`,
  `disaggregation/`, a plugin in `srt/plugins/`), or it mentions `d2t`/`t2d` as a whole token
  (`self.d2t`, `"t2d"`, not `Dropout2d` or `UpsamplingNearest2d`).

The patterns are POSIX extended regular expressions that Python's `re` (with MULTILINE) reads the
same way, so the remote side can run `SCOPE_PATTERN` with `grep -E` and get the same answer. Locally
`matches` tries plain substring searches first (the algorithm alternatives are literals; the
vocabulary token needs `d2t` or `t2d` to be present at all) and runs a regex only on the few files
that hold `d2t`/`t2d`.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Callable, Iterable, Protocol

SCOPES = ("speculative", "full")
DEFAULT_SCOPE = "speculative"

VERSION_FILES = ("version.py", "_version.py")
SRT = "srt/"
SPEC_TREES = ("srt/speculative/", "srt/arg_groups/")
SPEC_FILES = ("srt/server_args.py",)
MODELS = "srt/models/"
MODEL_NAME_WORDS = ("eagle", "dflash")
ATTENTION = "srt/layers/attention/"

# Folders a scope reads from: followed even when they are symlinks (unless they loop), locally and
# over SSH. Any other symlink is recorded as skipped.
SCOPE_ROOTS = ("srt", "srt/speculative", "srt/arg_groups", "srt/managers", "srt/models", "srt/layers/attention")

VOCAB_PATTERN = r"(^|[^A-Za-z0-9])(d2t|t2d)([^A-Za-z0-9]|$)"
SPEC_ALGO_LITERALS = ("SpeculativeAlgorithm", "spec_algo", "speculative_algo")
SPEC_ALGO_PATTERN = "|".join(SPEC_ALGO_LITERALS)
SCOPE_PATTERN = f"{VOCAB_PATTERN}|{SPEC_ALGO_PATTERN}"


class Readable(Protocol):
    """What a search (and the store) reads bytes from: a file, an archive member, a git blob's stream."""

    def read(self, size: int = -1, /) -> bytes: ...


_COMPILED = {p: re.compile(p.encode(), re.MULTILINE) for p in (VOCAB_PATTERN, SPEC_ALGO_PATTERN, SCOPE_PATTERN)}
_LITERALS = tuple(lit.encode() for lit in SPEC_ALGO_LITERALS)


SCOPE_NOTES = {
    "speculative": "only files that name the speculative algorithm or the d2t/t2d maps were read; "
    "run with --scope full for all",
    "full": "every *.py under srt/ was read",
}


def is_complete(scope: str) -> bool:
    """Whether an answer drawn from a snapshot of this scope covers the whole `srt/` tree."""
    return scope == "full"


def statement(scope: str, files: int | None = None) -> str:
    """One line that says what an answer drawn from this scope covers: "speculative scope (251 files):
    only files that ... ; run with --scope full for all"."""
    note = SCOPE_NOTES.get(scope, "an unknown scope; run with --scope full for all")
    count = f" ({files} file{'s' if files != 1 else ''})" if files is not None else ""
    return f"{scope} scope{count}: {note}"


def qualifier(scope: str) -> str:
    """The words that follow a count: "in the speculative scope; run with --scope full for all"."""
    return f"in the {scope} scope" + ("" if is_complete(scope) else "; run with --scope full for all")


def summary(scope: str, files: int | None = None) -> dict:
    """The statement as JSON fields: name, complete, files, note."""
    return {"name": scope, "complete": is_complete(scope), "files": files, "note": statement(scope, files)}


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
    if scope != "speculative" or not path.endswith(".py") or not path.startswith(SRT) or _by_name(path, scope):
        return None
    return SCOPE_PATTERN


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
    if path.startswith(ATTENTION) and "/" not in path[len(ATTENTION) :]:
        return path.endswith(("/attention_registry.py", "_backend.py"))
    return path.startswith(MODELS) and "/" not in path[len(MODELS) :] and _model_by_name(path)


def candidates(paths: Iterable[str], scope: str) -> list[str]:
    """The paths that the scope may take: taken by name, or to be decided by a byte search."""
    return sorted(p for p in paths if _by_name(p, scope) or search_pattern(p, scope))


def matches(pattern: str, data: bytes) -> bool:
    """The cheap byte search, identical in meaning to `grep -E pattern` under LC_ALL=C."""
    if pattern in (SCOPE_PATTERN, SPEC_ALGO_PATTERN) and any(lit in data for lit in _LITERALS):
        return True
    if pattern == SPEC_ALGO_PATTERN:
        return False
    if b"d2t" not in data and b"t2d" not in data:  # the vocabulary token cannot match without them
        return False
    return _COMPILED[VOCAB_PATTERN].search(data) is not None


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


SEARCH_CHUNK = 1 << 20
_OVERLAP = 64  # longer than any match of the two patterns


def matches_stream(pattern: str, stream: Readable, cap: int) -> bool:
    """`matches` over at most `cap` bytes of `stream`, read in chunks (never the whole file at once).

    Each window holds the last bytes of the one before, so a match across a chunk border is found;
    a match touching the window's first byte (whose context lies before it) or its last byte (when
    more data follows) is left to the neighbouring window, which sees that match's real context.
    """
    compiled = _COMPILED[pattern]
    carry = b""
    left = cap
    offset = 0  # where the window starts in the file
    while left > 0:
        chunk = stream.read(min(SEARCH_CHUNK, left))
        left -= len(chunk)
        end = not chunk or left <= 0
        window = carry + chunk
        for match in compiled.finditer(window):
            if (offset == 0 or match.start() > 0) and (end or match.end() < len(window)):
                return True
        if not chunk:
            return False
        carry = window[-_OVERLAP:]
        offset += len(window) - len(carry)
    return False


def select_streamed(
    paths: Iterable[str],
    scope: str,
    size: Callable[[str], int],
    open_: Callable[[str], AbstractContextManager[Readable]],
    max_file_size: int,
) -> tuple[list[str], list[tuple[str, int]]]:
    """`select` whose byte searches know each file's size first and stream at most `max_file_size` bytes.

    Returns the chosen paths and the (path, size) of files that only a search could decide but
    which are larger than `max_file_size`: they are never read, and the caller records them as
    skipped. A file that cannot be opened does not match.
    """
    oversized: list[tuple[str, int]] = []

    def mentions(path: str, pattern: str) -> bool:
        length = size(path)
        if length > max_file_size:
            oversized.append((path, length))
            return False
        try:
            with open_(path) as stream:
                return matches_stream(pattern, stream, max_file_size)
        except OSError:
            return False

    chosen = select(paths, scope, mentions)
    return chosen, sorted(oversized)
