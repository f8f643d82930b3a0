"""Hand-built stage values for reporter tests: a small, plausible snapshot with every kind of item.

The golden files pin how these render; real-release tests live in test_real_releases.py.
"""

from __future__ import annotations

import dataclasses

import networkx as nx

from sgl_scan import __version__
from sgl_scan.analyzer.model import (
    WorkerChoice,
    Algorithm,
    AlgorithmClass,
    Analysis,
    ChoiceHook,
    D2tSite,
    DispatchSite,
    Location,
    ParseError,
    Predicate,
    SpecInventory,
)
from sgl_scan.reports.model import Report
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import FileEntry, GitState, Manifest, SkippedFile

SPEC = "sglang/srt/speculative/spec_info.py"
ARGS = "sglang/srt/server_args.py"
MODEL = "sglang/srt/models/llama_eagle3.py"
WORKER = "sglang/srt/speculative/eagle_worker_v2.py"
SCHED = "sglang/srt/managers/scheduler.py"
W = "sglang.srt.speculative"

SOURCES = {
    MODEL: [
        "class LlamaForCausalLMEagle3(LlamaForCausalLM):\n",
        "    def load_weights(self, weights):\n",
        "        for name, loaded_weight in weights:\n",
        '            if "d2t" in name:\n',
        "                # d2t stores diffs between draft id and target id\n",
        "                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])\n",
        "                continue\n",
        "            if \"t2d\" in name:\n",
        "                continue\n",
    ],
    WORKER: [
        "class EAGLEWorkerV2(BaseSpecWorker):\n",
        "    def __init__(self, server_args):\n",
        "        if server_args.speculative_token_map is not None:\n",
        "            self.hot_token_id = load_token_map(server_args.speculative_token_map)\n",
        "        head = self.draft_runner.model.lm_head\n",
        "        head.data = head.data[self.hot_token_id]  # <script>alert(1)</script>\n",
    ],
}


def manifest(**changes) -> Manifest:
    base = Manifest(
        id="20261129T120000Z-pip-0.5.23-3f2a",
        source_kind="ssh",
        source={"host": "gpu-box", "user": "root", "port": 2222},
        root="/root/sglang/python",
        sglang_version="0.5.23",
        scope="speculative",
        created="2026-11-29T12:00:00Z",
        files=(
            FileEntry(SPEC, 9000, "a" * 64),
            FileEntry(ARGS, 120000, "b" * 64),
            FileEntry(MODEL, 14000, "c" * 64),
            FileEntry(WORKER, 30000, "d" * 64),
        ),
        git=GitState(commit="0123456789abcdef0123456789abcdef01234567", branch="main", dirty=True),
        skipped=(SkippedFile("sglang/srt/layers/huge_generated.py", "larger than 2 MiB"),),
    )
    return dataclasses.replace(base, **changes)


def inventory() -> SpecInventory:
    names = ("DFLASH", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM", "NONE")
    preds = {
        "is_none": ("NONE",),
        "is_speculative": ("DFLASH", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"),
        "is_eagle": ("EAGLE", "EAGLE3"),
        "is_eagle3": ("EAGLE3",),
        "is_dflash": ("DFLASH",),
        "is_standalone": ("STANDALONE",),
        "is_ngram": ("NGRAM",),
        "supports_spec_v2": ("EAGLE", "EAGLE3", "STANDALONE"),
    }
    workers = {
        "DFLASH": f"{W}.dflash_worker.DFlashWorker",
        "EAGLE": f"{W}.eagle_worker_v2.EAGLEWorkerV2",
        "EAGLE3": f"{W}.eagle_worker_v2.EAGLEWorkerV2",
        "STANDALONE": f"{W}.standalone_worker_v2.StandaloneWorkerV2",
        "NGRAM": f"{W}.ngram_worker.NGRAMWorker",
    }
    algorithms = tuple(
        Algorithm(
            name=name,
            kind="enum",
            location=Location(SPEC, 40 + i),
            predicates=tuple(p for p, members in preds.items() if name in members),
            worker=workers.get(name),
            worker_location=Location(SPEC, 200 + 3 * i) if name in workers else None,
            workers=(
                WorkerChoice(f"{W}.multi_layer_eagle_worker_v2.MultiLayerEagleWorkerV2",
                             "server_args.enable_multi_layer_eagle", Location(SPEC, 196)),
                WorkerChoice(workers[name], "not server_args.enable_multi_layer_eagle", Location(SPEC, 200 + 3 * i)),
            ) if name in ("EAGLE", "EAGLE3") else (),
        )
        for i, name in enumerate(names)
    )
    predicates = tuple(
        Predicate(name, members, Location(SPEC, 80 + 3 * i, 5), f"{W}.spec_info.SpeculativeAlgorithm")
        for i, (name, members) in enumerate(preds.items())
    )
    dispatch = (
        DispatchSite(f"{W}.spec_info.SpeculativeAlgorithm.create_worker", Location(SPEC, 200, 9), "predicate",
                     "is_eagle", ("EAGLE", "EAGLE3"), workers["EAGLE"]),
        DispatchSite(f"{W}.spec_info.SpeculativeAlgorithm.create_worker", Location(SPEC, 203, 9), "predicate",
                     "is_standalone", ("STANDALONE",), workers["STANDALONE"]),
        DispatchSite(f"{W}.spec_info.SpeculativeAlgorithm.create_worker", Location(SPEC, 206, 9), "predicate",
                     "is_ngram", ("NGRAM",), workers["NGRAM"]),
        DispatchSite(f"{W}.spec_info.SpeculativeAlgorithm.create_worker", Location(SPEC, 209, 9), "member",
                     "SpeculativeAlgorithm.DFLASH", ("DFLASH",), workers["DFLASH"]),
        DispatchSite("sglang.srt.managers.scheduler.Scheduler.__init__", Location(SCHED, 512, 12), "predicate",
                     "is_speculative", preds["is_speculative"]),
        DispatchSite("sglang.srt.managers.scheduler.Scheduler.init_disaggregation", Location(SCHED, 901, 8),
                     "predicate", "is_eagle", ("EAGLE", "EAGLE3")),
        DispatchSite("sglang.srt.server_args.ServerArgs._handle_speculative_decoding", Location(ARGS, 2301, 12),
                     "string", '"EAGLE3"', ("EAGLE3",)),
    )
    hooks = (
        ChoiceHook("add_load_format_choices", "function", "LOAD_FORMAT_CHOICES", False, Location(ARGS, 5001)),
        ChoiceHook("add_speculative_algorithm_choices", "function", "SPECULATIVE_ALGORITHM_CHOICES", True,
                   Location(ARGS, 5010)),
        ChoiceHook("add_spec_choices", "alias", "SPECULATIVE_ALGORITHM_CHOICES", True, Location(ARGS, 5020)),
    )
    option = ChoiceHook("--speculative-algorithm", "argument", "SPECULATIVE_ALGORITHM_CHOICES", True,
                        Location(ARGS, 3100, 9), values=("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH"))
    d2t = (
        D2tSite("name_test_in", Location(MODEL, 4, 16), f"sglang.srt.models.llama_eagle3.LlamaForCausalLMEagle3.load_weights", '"d2t" in name'),
        D2tSite("offset_conversion", Location(MODEL, 6, 17), "sglang.srt.models.llama_eagle3.LlamaForCausalLMEagle3.load_weights",
                "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
        D2tSite("load_token_map", Location(WORKER, 4, 33), f"{W}.eagle_worker_v2.EAGLEWorkerV2.__init__",
                "load_token_map(server_args.speculative_token_map)"),
        D2tSite("hot_token_use", Location(WORKER, 6, 21), f"{W}.eagle_worker_v2.EAGLEWorkerV2.__init__",
                "head.data[self.hot_token_id]"),
    )
    return SpecInventory(
        algorithm_class=AlgorithmClass(f"{W}.spec_info.SpeculativeAlgorithm", Location(SPEC, 33), "Enum"),
        algorithms=algorithms,
        predicates=predicates,
        dispatch_sites=dispatch,
        choice_hooks=hooks,
        algorithm_option=option,
        d2t_sites=d2t,
        plugin_base=f"{W}.spec_registry.CustomSpecAlgo",
        plugin_base_predicates=("is_speculative", "supports_spec_v2"),
        aliases={"NEXTN": "EAGLE"},
    )


RULES = (
    RuleDoc("SGL301", "d2t-offset-conversion", "info", "d2t is read as offsets (hot_token_id = d2t + arange)",
            "## What it does\nFinds where the drafter's `d2t` tensor is turned into `hot_token_id`.\n\n"
            "## Why it matters\nA drafter that ships `d2t` as a direct map is mis-read by offset code.\n\n"
            "## Example\n```python\nself.hot_token_id = d2t + torch.arange(d2t.shape[0])\n```\n\n"
            "## Use instead\nShip `d2t` as offsets, or convert it before loading.\n"),
    RuleDoc("SGL302", "hot-token-map-reindexes-head", "warning", "lm_head is re-indexed by hot_token_id",
            "## What it does\nFinds `head.data[hot_token_id]`.\n\n## Why it matters\nThe draft head shrinks to the hot vocabulary.\n"),
    RuleDoc("SGL401", "algorithm-choice-missing", "error", "an algorithm cannot be selected from the CLI",
            "## What it does\nCompares the enum with `--speculative-algorithm` choices.\n"),
)


def findings(snapshot_id: str = "20261129T120000Z-pip-0.5.23-3f2a") -> tuple[Finding, ...]:
    return (
        Finding("SGL302", "warning", "lm_head is re-indexed by hot_token_id; the draft head shrinks to the hot vocabulary",
                WORKER, 6, 21, 6, 49, snapshot_id, hint="check that d2t is offsets", fingerprint="fp-302-worker"),
        Finding("SGL301", "info", "d2t is read as offsets (hot_token_id = d2t + arange)", MODEL, 6, 17, 6, 90,
                snapshot_id, data={"kind": "offset_conversion"}, fingerprint="fp-301-model"),
        Finding("SGL401", "error", "UNO is a SpeculativeAlgorithm member but not a --speculative-algorithm choice",
                ARGS, 3100, 9, None, None, snapshot_id, fingerprint="fp-401-args"),
    )


def graph(inv: SpecInventory) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    for a in inv.algorithms:
        g.add_node(f"alg:{a.name}", kind="algorithm")
    return g


def report(**changes) -> Report:
    inv = inventory()
    base = Report(
        manifest=manifest(),
        inventory=inv,
        findings=findings(),
        parse_errors=(ParseError(Location("sglang/srt/broken.py", 12, 5), "Syntax Error @ 12:5."),),
        rules=RULES,
        tool_version=__version__,
        sources={path: list(lines) for path, lines in SOURCES.items()},
    )
    return base._replace(**changes)


def analysis(snapshot_id: str = "20261129T120000Z-pip-0.5.23-3f2a", inv: SpecInventory | None = None,
             version: str = "0.5.23") -> Analysis:
    inv = inv or inventory()
    return Analysis(snapshot_id, version, {}, (), inv, graph(inv))
