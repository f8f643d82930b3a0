"""The target model the drafter serves: vocabulary size and layer count, and where each came from."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from sgl_scan.drafter.checkpoint import read_json_file
from sgl_scan.drafter.errors import CheckpointError
from sgl_scan.drafter.model_config import config_field


@dataclass(frozen=True)
class Target:
    vocab_size: int | None = None
    vocab_source: str = "unknown"  # "--target-vocab", "--target-config FILE", "t2d length", ...
    num_layers: int | None = None
    config_path: str | None = None

    @property
    def confirmed(self) -> bool:
        """Whether the vocabulary came from the user (option or target config), not the drafter itself."""
        return self.vocab_source.startswith("--")


def read_target_config(path: str | Path) -> Target:
    """The target's `vocab_size` and `num_hidden_layers` from its config.json."""
    path = Path(path)
    try:
        config = read_json_file(path)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: cannot read the target config: {exc}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: the target config is not a JSON object")
    vocab, layers = config_field(config, "vocab_size"), config_field(config, "num_hidden_layers")
    if not isinstance(vocab, int) or vocab <= 0:
        raise CheckpointError(f"{path}: the target config has no positive integer vocab_size")
    return Target(
        vocab_size=vocab,
        vocab_source=f"--target-config {path}",
        num_layers=layers if isinstance(layers, int) and layers > 0 else None,
        config_path=str(path),
    )


def complete_target(target: Target, t2d_length: int | None, drafter_config: Mapping[str, Any] | None) -> Target:
    """Fill an unknown target vocabulary from the drafter itself: t2d's length, else its config's vocab_size."""
    if target.vocab_size is not None:
        return target
    if t2d_length:
        return replace(target, vocab_size=t2d_length, vocab_source="t2d length")
    vocab = config_field(drafter_config or {}, "vocab_size")
    if isinstance(vocab, int) and vocab > 0:
        return replace(target, vocab_size=vocab, vocab_source="drafter config.json vocab_size")
    return target
