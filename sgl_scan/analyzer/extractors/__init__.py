"""Extractors of speculative-decoding facts, run by the per-file pass on files their trigger matches.

Each returns frozen records (see `records.py`) stored under `FileFacts.extras[extractor.name]`;
`sgl_scan.analyzer.inventory.build_inventory` combines them across files.

Every extractor reads the stdlib `ast` the per-file pass already has. `EXTRACTORS` is built on first
use: importing this package (as unpickling a file's records does) loads nothing else.
"""

from __future__ import annotations

from typing import Any


_BUILT: list[tuple[Any, ...]] = []


def _build() -> tuple[Any, ...]:
    from sgl_scan.analyzer.census import CensusExtractor
    from sgl_scan.analyzer.extractors.algorithm_class import AlgorithmClassExtractor
    from sgl_scan.analyzer.extractors.aliases import AliasResolverExtractor
    from sgl_scan.analyzer.extractors.attention import AttentionExtractor
    from sgl_scan.analyzer.extractors.branches import BranchExtractor
    from sgl_scan.analyzer.extractors.d2t import D2tExtractor
    from sgl_scan.analyzer.extractors.dispatch import DispatchExtractor
    from sgl_scan.analyzer.extractors.options import OptionsExtractor
    from sgl_scan.analyzer.extractors.registrations import RegistrationExtractor
    from sgl_scan.analyzer.extractors.sequence import SequenceExtractor

    return (
        AlgorithmClassExtractor(),
        RegistrationExtractor(),
        DispatchExtractor(),
        OptionsExtractor(),
        D2tExtractor(),
        AliasResolverExtractor(),
        AttentionExtractor(),
        BranchExtractor(),
        SequenceExtractor(),
        CensusExtractor(),  # not an extractor of facts: the independent census (analyzer/census.py)
    )


def __getattr__(name: str) -> Any:
    if name == "EXTRACTORS":
        if not _BUILT:
            _BUILT.append(_build())
        return _BUILT[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EXTRACTORS"]
