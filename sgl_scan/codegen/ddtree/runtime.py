"""What the generated worker's decode step and registration hook need from the release's runtime code.

Read from the scanned tree's own source (never assumed), for the worker template:

- graph gates: where the release's model runner decides to replay a CUDA graph for a batch
  (`self.<runner>.<can_run...>(forward_batch)` in `model_runner.py`). The tree verify closes exactly
  these gates for its one forward, so everything else keeps the graphs the base keeps;
- the LM-head path the base drafts with: `unwrap_lora_layer` (LoRA-wrapped heads), the quantized-head
  method (heads without a dense `weight`, logits from `quant_method.apply`) and the base's head chunk
  (the `chunk_size` default of its vocab-parallel head method);
- the release's general plugin entry-point group (`sglang.srt.plugins`) and the processes that load
  it (`load_plugins()` call sites), for the registration hook.

Everything here comes from a possibly hostile tree: names must be identifiers or dotted identifiers,
paths pass `trust.PATH`, numbers are ints; anything else is left unread (None / empty), and the
worker then refuses or takes the conservative path (see worker.py.j2).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from sgl_scan.codegen.ddtree.trust import PATH, is_identifier

MAX_BYTES = 4_000_000  # a runtime file larger than this is not read
MODEL_RUNNER = "sglang/srt/model_executor/model_runner.py"
LORA_LAYERS = "sglang/srt/lora/layers.py"
DFLASH_UTILS = "sglang/srt/speculative/dflash_utils.py"
PLUGINS = "sglang/srt/plugins/__init__.py"
PLUGIN_LOADERS = (
    "sglang/launch_server.py",
    "sglang/srt/managers/scheduler.py",
    "sglang/srt/managers/detokenizer_manager.py",
    "sglang/srt/managers/data_parallel_controller.py",
    "sglang/srt/managers/tokenizer_manager.py",
    "sglang/srt/entrypoints/engine.py",
)
QUANTIZED_HEAD = "_greedy_sample_from_quantized_head"
VOCAB_HEAD = "_greedy_sample_from_vocab_parallel_head"


@dataclass(frozen=True)
class GraphGate:
    attribute: str  # the model runner's attribute holding a graph runner
    method: str  # its method the model runner asks before a replay
    location: str  # "path:line"


@dataclass(frozen=True)
class RuntimeFacts:
    graph_gates: tuple[GraphGate, ...]
    lora_unwrap: tuple[str, str] | None  # (module, location) of unwrap_lora_layer
    quantized_head: str | None  # location of the base's quantized-head method
    dense_check: (
        tuple[str, str] | None
    )  # (module, location) of is_dense_head_weight, the base's dense-or-quantized test
    head_chunk: int | None  # the base's head chunk (rows per matmul)
    head_chunk_location: str | None
    plugin_group: tuple[str, str] | None  # (entry-point group, location)
    plugin_loaders: tuple[str, ...]  # "path:line" of load_plugins() calls in the processes SGLang starts


def _parse(tree: Path, rel: str) -> ast.Module | None:
    path = tree / rel
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_BYTES:
            return None
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _where(rel: str, node: ast.stmt | ast.expr) -> str:
    return f"{rel}:{node.lineno}"


def graph_gates(tree: Path) -> tuple[GraphGate, ...]:
    """`self.X.can_run*(forward_batch)` calls in the model runner: the runners a forward may replay."""
    module = _parse(tree, MODEL_RUNNER)
    if module is None:
        return ()
    gates: dict[tuple[str, str], GraphGate] = {}
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, owner = node.func.attr, node.func.value
        if not (
            method.startswith("can_run") and isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name)
        ):
            continue
        if owner.value.id != "self" or not is_identifier(owner.attr) or not is_identifier(method):
            continue
        if not (len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "forward_batch"):
            continue
        gates.setdefault((owner.attr, method), GraphGate(owner.attr, method, _where(MODEL_RUNNER, node)))
    return tuple(gates.values())


def _function(module: ast.Module | None, name: str) -> ast.FunctionDef | None:
    if module is None:
        return None
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def read_runtime_facts(tree: Path, base_module: str) -> RuntimeFacts:
    """The runtime facts of the release under `tree`; `base_module` is the DFlash worker's module."""
    base_rel = base_module.replace(".", "/") + ".py"
    base = _parse(tree, base_rel) if all(is_identifier(p) for p in base_module.split(".")) else None
    unwrap = _function(_parse(tree, LORA_LAYERS), "unwrap_lora_layer")
    quantized = _function(base, QUANTIZED_HEAD)
    dense = _function(_parse(tree, DFLASH_UTILS), "is_dense_head_weight")
    if quantized is not None and "quant_method" not in {
        n.attr for n in ast.walk(quantized) if isinstance(n, ast.Attribute)
    }:
        quantized = None  # not the head path this worker mirrors (logits from the head's quant_method)
    chunk, chunk_where = None, None
    vocab = _function(base, VOCAB_HEAD)
    if vocab is not None:
        positional = vocab.args.posonlyargs + vocab.args.args  # `defaults` ends the positional ones, `/` or not
        args = positional + vocab.args.kwonlyargs
        defaults = (
            [None] * (len(positional) - len(vocab.args.defaults))
            + list(vocab.args.defaults)
            + list(vocab.args.kw_defaults)
        )
        for arg, default in zip(args, defaults, strict=True):
            if (
                arg.arg == "chunk_size"
                and isinstance(default, ast.Constant)
                and type(default.value) is int
                and 0 < default.value <= 65536
            ):
                chunk, chunk_where = default.value, _where(base_rel, vocab)
    group = None
    plugins = _parse(tree, PLUGINS)
    if plugins is not None and _function(plugins, "load_plugins") is not None:
        for node in plugins.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "GENERAL_PLUGINS_GROUP"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and all(is_identifier(p) for p in node.value.value.split("."))
            ):
                group = (node.value.value, _where(PLUGINS, node))
    loaders = []
    for rel in PLUGIN_LOADERS if group else ():
        module = _parse(tree, rel)
        for found in ast.walk(module) if module is not None else ():
            if (
                isinstance(found, ast.Call)
                and isinstance(found.func, ast.Name)
                and found.func.id == "load_plugins"
                and not found.args
            ):
                loaders.append(_where(rel, found))
    facts = RuntimeFacts(
        graph_gates=graph_gates(tree),
        lora_unwrap=("sglang.srt.lora.layers", _where(LORA_LAYERS, unwrap)) if unwrap is not None else None,
        quantized_head=_where(base_rel, quantized) if quantized is not None else None,
        dense_check=("sglang.srt.speculative.dflash_utils", _where(DFLASH_UTILS, dense)) if dense is not None else None,
        head_chunk=chunk,
        head_chunk_location=chunk_where,
        plugin_group=group,
        plugin_loaders=tuple(loaders),
    )
    for where in (
        [g.location for g in facts.graph_gates]
        + list(facts.plugin_loaders)
        + [
            w
            for w in (
                facts.quantized_head,
                facts.head_chunk_location,
                facts.lora_unwrap and facts.lora_unwrap[1],
                group and group[1],
            )
            if w
        ]
    ):
        path = where.rpartition(":")[0]
        if not PATH.match(path) or ".." in path.split("/"):  # cannot happen for the fixed paths above; kept as the rule
            raise ValueError(f"unexpected path {path!r}")
    return facts


EMPTY = RuntimeFacts((), None, None, None, None, None, None, ())
