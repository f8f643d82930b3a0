"""Compare the draft->target maps of two drafters (e.g. one trained for Kimi-K2, one for K2.5).

Each d2t is read the way it fits (offsets unless only the direct reading fits), so both sides are
compared as target ids: how many draft positions map to different target ids, how many target ids
the two draft vocabularies share, and the first positions that differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.drafter.checkpoint import INTEGER_DTYPES, Checkpoint
from sgl_scan.drafter.errors import CheckpointError
from sgl_scan.drafter.mapping import analyse_d2t, targets
from sgl_scan.drafter.target import Target, complete_target


@dataclass(frozen=True)
class MappingDiff:
    a: str
    b: str
    reading_a: str  # "offset" | "direct": how each d2t was turned into target ids
    reading_b: str
    length_a: int
    length_b: int
    compared: int  # draft positions present in both
    differing: int  # of those, positions whose target ids differ
    shared_targets: int  # target ids in both draft vocabularies
    only_a: int  # target ids only A's draft vocabulary holds
    only_b: int
    first_differences: tuple[tuple[int, int, int], ...]  # (draft id, target id in A, target id in B)


def _target_ids(ckpt: Checkpoint, label: str):
    tensor = ckpt.d2t
    if tensor is None:
        found = ckpt.candidates.get("d2t") or ()
        why = f"several tensors named d2t ({', '.join(found)})" if len(found) > 1 else "no d2t tensor"
        if "d2t" in ckpt.conflicts:
            why = f"different d2t tensors: {ckpt.conflicts['d2t']}"
        raise CheckpointError(f"{label} {ckpt.path}: {why}")
    if tensor.values is None or tensor.info.dtype not in INTEGER_DTYPES or tensor.values.ndim != 1:
        raise CheckpointError(
            f"{label} {ckpt.path}: d2t ({tensor.info.dtype}, shape {list(tensor.info.shape)}) is not a 1-D "
            "integer tensor"
        )
    t2d = (
        ckpt.t2d.values if ckpt.t2d is not None and ckpt.t2d.values is not None and ckpt.t2d.values.ndim == 1 else None
    )
    target = complete_target(Target(), t2d.shape[0] if t2d is not None else None, ckpt.config)
    reading = analyse_d2t(tensor.values, target.vocab_size, t2d).effective
    return targets(tensor.values, reading), reading


def diff_mappings(a: Checkpoint, b: Checkpoint, limit: int = 10) -> MappingDiff:
    """Where the draft->target maps of `a` and `b` disagree (first `limit` positions listed)."""
    import numpy as np

    ids_a, reading_a = _target_ids(a, "A")
    ids_b, reading_b = _target_ids(b, "B")
    compared = min(ids_a.shape[0], ids_b.shape[0])
    differ = np.flatnonzero(ids_a[:compared] != ids_b[:compared])
    set_a, set_b = np.unique(ids_a), np.unique(ids_b)
    shared = np.intersect1d(set_a, set_b, assume_unique=True).size
    first = tuple((int(i), int(ids_a[i]), int(ids_b[i])) for i in differ[:limit])
    return MappingDiff(
        a=a.path,
        b=b.path,
        reading_a=reading_a,
        reading_b=reading_b,
        length_a=int(ids_a.shape[0]),
        length_b=int(ids_b.shape[0]),
        compared=int(compared),
        differing=int(differ.size),
        shared_targets=int(shared),
        only_a=int(set_a.size - shared),
        only_b=int(set_b.size - shared),
        first_differences=first,
    )
