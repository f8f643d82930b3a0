"""`json_document` writes exactly what `json.dumps(indent=2, ensure_ascii=False)` writes (then escapes)."""

from __future__ import annotations

import enum
import json
import random

import pytest

from sgl_scan.reports.common import _indented, json_document


class Level(enum.IntEnum):
    LOW = 1


VALUES = [
    {}, [], (), "", 0, -1, 10**30, 1.5, -0.0, 1e-300, 2.5e16, True, False, None, Level.LOW,
    {"a": [], "b": {}, "c": [{}], "d": [[], [[]]]},
    {"text": "tab\there \"quoted\" back\\slash \x00\x1f ünïcödé \u202e bidi \u2028 \x7f del \U0001F600"},
    [1, "two", [3, {"four": (5, 6)}], None, True],
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_same_bytes_as_json_dumps(value):
    assert _indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_random_documents():
    rng = random.Random(3)
    leaves = [None, True, False, 0, 7, -3, 0.25, 1e100, "x", "", "é\n\"", "\u2066"]

    def build(depth):
        kind = rng.random()
        if depth > 4 or kind < 0.4:
            return rng.choice(leaves)
        if kind < 0.7:
            return [build(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["a", "b", "ç", "key \"q\"", "0"]) + str(i): build(depth + 1) for i in range(rng.randint(0, 4))}

    for _ in range(300):
        value = build(0)
        assert _indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("value", [{1: "int key"}, {None: 1}, [float("nan")], {"x": float("inf")}, {"s": {1, 2}}])
def test_the_unusual_is_left_to_json(value):
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False)
    except TypeError:
        with pytest.raises(TypeError):
            json_document(value)
        return
    assert json_document(value) == expected + "\n"
