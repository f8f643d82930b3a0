"""Extractors of speculative-decoding facts, run by the per-file pass on files their trigger matches.

Each returns frozen records (see `records.py`) stored under `FileFacts.extras[extractor.name]`;
`sgl_scan.analyzer.inventory.build_inventory` combines them across files.

`EXTRACTORS` is built on first use, and its libcst extractors are `Deferred`: their name and
trigger are known without importing libcst, which loads only in a process that runs one. Importing
this package (as unpickling a file's records does) loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import Any

from sgl_scan.analyzer.extractors._text import OPTIONS_TRIGGER, REGISTRATION_TRIGGER, Trigger


class Deferred:
    """A libcst extractor known by name, parser and trigger; its class is imported on first real use."""

    parser = "cst"

    def __init__(self, name: str, trigger: Trigger, module: str, cls: str) -> None:
        self.name, self.trigger, self._where = name, trigger, (module, cls)
        self._real: Any = None

    def real(self) -> Any:
        if self._real is None:
            module, cls = self._where
            self._real = getattr(importlib.import_module(module), cls)()
            if self._real.name != self.name or self._real.trigger.pattern != self.trigger.pattern:
                raise RuntimeError(f"extractor {cls} does not match its deferred entry {self.name}")
        return self._real

    @property
    def version(self) -> int:
        return self.real().version

    @property
    def metadata(self) -> tuple:
        return self.real().metadata

    def extract(self, wrapper: Any, context: Any) -> tuple:
        return self.real().extract(wrapper, context)

    def __repr__(self) -> str:
        return f"Deferred({self.name!r})"


_PACKAGE = "sgl_scan.analyzer.extractors"
_BUILT: list[tuple[Any, ...]] = []


def _build() -> tuple[Any, ...]:
    from sgl_scan.analyzer.census import CensusExtractor
    from sgl_scan.analyzer.extractors.algorithm_class import AlgorithmClassExtractor
    from sgl_scan.analyzer.extractors.aliases import AliasResolverExtractor
    from sgl_scan.analyzer.extractors.attention import AttentionExtractor
    from sgl_scan.analyzer.extractors.branches import BranchExtractor
    from sgl_scan.analyzer.extractors.d2t import D2tExtractor
    from sgl_scan.analyzer.extractors.dispatch import DispatchExtractor
    from sgl_scan.analyzer.extractors.sequence import SequenceExtractor

    return (
        AlgorithmClassExtractor(),
        Deferred("spec_registrations", REGISTRATION_TRIGGER, f"{_PACKAGE}.registrations", "RegistrationExtractor"),
        DispatchExtractor(),
        Deferred("spec_options", OPTIONS_TRIGGER, f"{_PACKAGE}.options", "OptionsExtractor"),
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


__all__ = ["EXTRACTORS", "Deferred"]
