"""The contract between the per-file pass and the extractors that pull speculative-decoding facts.

Every extractor whose `trigger` matches the file's text (the cheap pre-pass: a file that matches no
trigger never needs those facts) gets the file once parsed: a libcst `MetadataWrapper` (shared by
the libcst extractors, over the source reduced to what they read, `reduce.py`), or, for an
extractor with `parser = "ast"`, the stdlib syntax tree the pass already built for the general
facts (and `context.text`). Each returns a tuple of frozen, picklable records; they are cached
with the rest of the file's facts under `FileFacts.extras[extractor.name]`.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import libcst.metadata as meta


class FileContext(Protocol):
    path: str  # relative to the snapshot tree, e.g. "sglang/srt/speculative/spec_info.py"
    module: str  # dotted module name, e.g. "sglang.srt.speculative.spec_info"
    text: str | None  # the source the extractor reads (reduced for libcst extractors)


class Extractor(Protocol):
    name: str  # key in FileFacts.extras; stable, part of the cache key with `version`
    version: int  # bump when the records it produces change
    trigger: re.Pattern[str]  # files whose text does not match are skipped
    metadata: tuple[type, ...]  # libcst metadata providers it reads (resolved once per file)
    # parser: str  -- optional; "ast" to get the stdlib `ast.Module` instead of a MetadataWrapper

    def extract(self, wrapper: meta.MetadataWrapper, context: FileContext) -> tuple[Any, ...]: ...
