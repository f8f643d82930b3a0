"""Hand-built analyzer outputs for unit tests of the rules machinery (no parsing involved)."""

from __future__ import annotations

import networkx as nx

from sgl_scan.analyzer.model import (
    Algorithm,
    AlgorithmClass,
    Analysis,
    ChoiceHook,
    D2tSite,
    DispatchSite,
    Location,
    Predicate,
    SpecInventory,
)

SPEC = "sglang/srt/speculative/spec_info.py"
ARGS = "sglang/srt/server_args.py"
EAGLE3 = "sglang/srt/models/llama_eagle3.py"
OWNER = "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"


def loc(path: str, line: int) -> Location:
    return Location(path, line, 5, line)


def inventory(**overrides) -> SpecInventory:
    """A 0.4.6-like inventory: NONE/EAGLE/EAGLE3, argparse choices, NEXTN alias, a few d2t sites."""
    values = dict(
        algorithm_class=AlgorithmClass(OWNER, loc(SPEC, 4), "IntEnum"),
        algorithms=(
            Algorithm("NONE", "enum", loc(SPEC, 5), ("is_none",), None),
            Algorithm("EAGLE", "enum", loc(SPEC, 6), ("is_eagle",), "sglang.srt.speculative.eagle_worker.EAGLEWorker"),
            Algorithm("EAGLE3", "enum", loc(SPEC, 7), ("is_eagle", "is_eagle3"), "sglang.srt.speculative.eagle_worker.EAGLEWorker"),
        ),
        predicates=(
            Predicate("is_none", ("NONE",), loc(SPEC, 9), OWNER),
            Predicate("is_eagle", ("EAGLE", "EAGLE3"), loc(SPEC, 12), OWNER),
            Predicate("is_eagle3", ("EAGLE3",), loc(SPEC, 15), OWNER),
        ),
        dispatch_sites=(
            DispatchSite("sglang.srt.server_args.ServerArgs.__post_init__", loc(ARGS, 317), "string", '"NEXTN"', ()),
            DispatchSite("sglang.srt.server_args.ServerArgs.__post_init__", loc(ARGS, 321), "string", '"EAGLE", "EAGLE3"', ("EAGLE", "EAGLE3")),
            DispatchSite("sglang.srt.managers.scheduler.Scheduler.__init__", loc("sglang/srt/managers/scheduler.py", 270), "predicate", "is_eagle", ("EAGLE", "EAGLE3")),
        ),
        choice_hooks=(),
        algorithm_option=ChoiceHook("--speculative-algorithm", "argument", None, True, loc(ARGS, 861), ("EAGLE", "EAGLE3", "NEXTN")),
        d2t_sites=(
            D2tSite("name_test_in", loc(EAGLE3, 182), "LlamaForCausalLMEagle3.load_weights", '"d2t" in name'),
            D2tSite("offset_conversion", loc(EAGLE3, 184), "LlamaForCausalLMEagle3.load_weights",
                    "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
        ),
        aliases={"NEXTN": "EAGLE"},
    )
    values.update(overrides)
    return SpecInventory(**values)


def analysis(inv: SpecInventory | None = None, snapshot_id: str = "snap-1") -> Analysis:
    return Analysis(snapshot_id, "0.4.6", {}, (), inv if inv is not None else inventory(), nx.MultiDiGraph())
