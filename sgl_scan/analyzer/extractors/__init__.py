"""Extractors of speculative-decoding facts, run by the per-file pass on files their trigger matches.

Each returns frozen records (see `records.py`) stored under `FileFacts.extras[extractor.name]`;
`sgl_scan.analyzer.inventory.build_inventory` combines them across files.
"""

from __future__ import annotations

from sgl_scan.analyzer.extractors.algorithm_class import AlgorithmClassExtractor
from sgl_scan.analyzer.extractors.attention import AttentionExtractor
from sgl_scan.analyzer.extractors.aliases import AliasResolverExtractor
from sgl_scan.analyzer.extractors.d2t import D2tExtractor
from sgl_scan.analyzer.extractors.dispatch import DispatchExtractor
from sgl_scan.analyzer.extractors.options import OptionsExtractor
from sgl_scan.analyzer.extractors.registrations import RegistrationExtractor

EXTRACTORS = (
    AlgorithmClassExtractor(),
    RegistrationExtractor(),
    DispatchExtractor(),
    OptionsExtractor(),
    D2tExtractor(),
    AliasResolverExtractor(),
    AttentionExtractor(),
)

__all__ = ["EXTRACTORS"]
