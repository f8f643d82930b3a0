"""The contract between the per-file pass and the extractors that pull speculative-decoding facts.

The analyzer parses a file with libcst once, wraps it in a `MetadataWrapper`, and hands that wrapper
to every extractor whose `trigger` matches the file's text (the cheap pre-pass: a file that matches
no trigger never needs those facts). Each extractor returns a tuple of frozen, picklable records;
they are cached with the rest of the file's facts under `FileFacts.extras[extractor.name]`.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import libcst.metadata as meta


class FileContext(Protocol):
    path: str  # relative to the snapshot tree, e.g. "sglang/srt/speculative/spec_info.py"
    module: str  # dotted module name, e.g. "sglang.srt.speculative.spec_info"


class Extractor(Protocol):
    name: str  # key in FileFacts.extras; stable, part of the cache key with `version`
    version: int  # bump when the records it produces change
    trigger: re.Pattern[str]  # files whose text does not match are skipped
    metadata: tuple[type, ...]  # libcst metadata providers it reads (resolved once per file)

    def extract(self, wrapper: meta.MetadataWrapper, context: FileContext) -> tuple[Any, ...]:
        ...
