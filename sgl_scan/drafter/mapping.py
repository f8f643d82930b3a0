"""The two ways to read a d2t tensor, and which one a given tensor fits.

EAGLE-3 stores offsets: draft id `i` maps to target id `i + d2t[i]`. A tensor written as a direct
map holds the target ids themselves (`d2t[i]`). Each reading is judged on its own (ids inside the
target vocabulary, no two draft ids on one target id, agreement with t2d), all vectorised in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READINGS = ("offset", "direct")


@dataclass(frozen=True)
class Reading:
    """How d2t fares under one reading."""

    name: str  # "offset" | "direct"
    out_of_range: int  # draft ids whose target id falls outside [0, target_vocab)
    first_out_of_range: tuple[int, int] | None  # (draft id, target id)
    collisions: int  # draft ids whose target id an earlier draft id already took
    first_collision: tuple[int, int, int] | None  # (earlier draft id, draft id, shared target id)
    t2d_missing: int | None  # mapped target ids where t2d is False (None: no usable t2d)
    t2d_extra: int | None  # t2d True entries that no draft id maps to
    first_t2d_mismatch: int | None  # smallest target id where mapped-set and t2d differ

    @property
    def valid(self) -> bool:
        return self.out_of_range == 0 and self.collisions == 0

    @property
    def matches_t2d(self) -> bool | None:
        if self.t2d_missing is None:
            return None
        return self.valid and self.t2d_missing == 0 and self.t2d_extra == 0


@dataclass(frozen=True)
class D2tFacts:
    """Everything the checks and the engine verdict need to know about one d2t tensor."""

    length: int
    target_vocab: int | None
    offset: Reading
    direct: Reading
    fits: str  # "offset" | "direct" | "both" | "neither"
    decided_by_t2d: bool
    all_zero: bool
    identity_direct: bool  # d2t[i] == i: a direct map onto the first N target ids
    unique_targets: int  # distinct in-range target ids under the reading `fits` (offset if both/neither)

    def reading(self, name: str) -> Reading:
        return self.offset if name == "offset" else self.direct

    @property
    def effective(self) -> str:
        """The reading used to compare with t2d and other drafters: direct only when only that fits."""
        return "direct" if self.fits == "direct" else "offset"


def targets(d2t: Any, reading: str) -> Any:
    """Target ids (int64) that draft ids 0..N-1 map to under `reading`."""
    import numpy as np

    values = np.asarray(d2t, dtype=np.int64)
    return values + np.arange(values.shape[0], dtype=np.int64) if reading == "offset" else values


def _judge(name: str, ids: Any, target_vocab: int | None, t2d: Any) -> Reading:
    import numpy as np

    upper = target_vocab if target_vocab is not None else np.iinfo(np.int64).max
    outside = (ids < 0) | (ids >= upper)
    out_idx = np.flatnonzero(outside)
    first_out = (int(out_idx[0]), int(ids[out_idx[0]])) if out_idx.size else None

    order = np.argsort(ids, kind="stable")
    ranked = ids[order]
    repeat = np.flatnonzero(ranked[1:] == ranked[:-1]) + 1  # positions (in sorted order) repeating the previous id
    first_collision = None
    if repeat.size:
        later = order[repeat]
        pick = int(np.argmin(later))
        draft = int(later[pick])
        # the earliest draft id with the same target: stable sort puts it first in the run
        run_start = int(np.searchsorted(ranked, ranked[repeat[pick]], side="left"))
        first_collision = (int(order[run_start]), draft, int(ids[draft]))

    t2d_missing = t2d_extra = first_mismatch = None
    if t2d is not None and target_vocab is not None:
        mapped = np.zeros(target_vocab, dtype=bool)
        mapped[ids[~outside]] = True
        truth = np.asarray(t2d, dtype=bool)
        t2d_missing = int(np.count_nonzero(mapped & ~truth))
        t2d_extra = int(np.count_nonzero(truth & ~mapped))
        differ = np.flatnonzero(mapped != truth)
        first_mismatch = int(differ[0]) if differ.size else None
    return Reading(
        name, int(out_idx.size), first_out, int(repeat.size), first_collision, t2d_missing, t2d_extra, first_mismatch
    )


def analyse_d2t(d2t: Any, target_vocab: int | None, t2d: Any = None) -> D2tFacts:
    """Judge both readings of an integer 1-D `d2t`; `t2d` (bool, length target_vocab) decides ties when given."""
    import numpy as np

    values = np.asarray(d2t, dtype=np.int64)
    usable_t2d = t2d if t2d is not None and target_vocab is not None and np.shape(t2d) == (target_vocab,) else None
    offset = _judge("offset", targets(values, "offset"), target_vocab, usable_t2d)
    direct = _judge("direct", targets(values, "direct"), target_vocab, usable_t2d)

    decided = False
    if offset.matches_t2d and not direct.matches_t2d:
        fits, decided = "offset", True
    elif direct.matches_t2d and not offset.matches_t2d:
        fits, decided = "direct", True
    elif offset.valid and direct.valid:
        fits = "both"
    elif offset.valid:
        fits = "offset"
    elif direct.valid:
        fits = "direct"
    else:
        fits = "neither"

    chosen = targets(values, "direct" if fits == "direct" else "offset")
    in_range = chosen[(chosen >= 0) & (chosen < (target_vocab if target_vocab is not None else np.iinfo(np.int64).max))]
    return D2tFacts(
        length=int(values.shape[0]),
        target_vocab=target_vocab,
        offset=offset,
        direct=direct,
        fits=fits,
        decided_by_t2d=decided,
        all_zero=bool(values.size) and not bool(np.any(values)),
        identity_direct=bool(values.size) and bool(np.array_equal(values, np.arange(values.shape[0]))),
        unique_targets=int(np.unique(in_range).size),
    )
