"""Draft width: the DFlash drafter runs on the block size it was trained for, whatever the tree's width.

DDTree verifies budget + 1 tokens per request (`speculative_num_draft_tokens`, what the scheduler
reserves and the target's attention is planned for), but its drafter must run on its own trained
block (depth = block - 1, as the DDTree reference). The release's DFlash worker takes its block size
from that same setting, so `DDTreeWorker` builds the base (and the base's draft-side phases) with
the setting scoped to the drafter's block, read as the release itself infers it from the draft
model's config. Everything here comes from the facts:

- `parser`: the function the base's constructor builds its draft config with (the call taking
  `draft_hf_config=`), whose result's `resolve_block_size(...)` it calls;
- `loader`: the config loader the release's own server-argument code calls where it infers the
  block size (`get_config(path, ...)` next to a `resolve_block_size(default=...)`);
- `settings_bag`: the function the constructor calls last before resolving the block whose result
  class has a scoped `override` (the release reads the setting there); without one, the
  server-args attribute is scoped;
- `phases`: base methods that build the draft side later (`self.<draft worker>.<same name>()`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.query import files_by_module, find_class, method, resolve_class
from sgl_scan.codegen.ddtree import checks

SETTING = "speculative_num_draft_tokens"
BLOCK_METHOD = "resolve_block_size"
CONFIG_KEYWORD = "draft_hf_config"
LOADER = "get_config"
OVERRIDE = "override"
# The loader keywords the release passes, and the server argument each one is read from.
LOADER_VALUES = {
    "trust_remote_code": "trust_remote_code",
    "revision": "speculative_draft_model_revision",
    "model_override_args": "json_model_override_args",
}


@dataclass(frozen=True)
class DraftWidth:
    parser: str | None  # module.function building the draft config
    loader: str | None  # module.function loading the draft model's HF config
    loader_keywords: tuple[str, ...]
    settings_bag: str | None  # module.function returning the settings bag with a scoped override
    phases: tuple[str, ...]  # base methods building the draft side after construction
    decisions: tuple[tuple[str, str, Location | None], ...]  # (key, what, where)
    missing: tuple[str, ...]
    unverified: tuple[tuple[str, str], ...]  # (what is assumed, the test that shows it: checks.py)

    def where(self, key: str) -> Location | None:
        return next((loc for k, _, loc in self.decisions if k == key), None)


def draft_width(analysis: Analysis, base) -> DraftWidth:
    """How the base reads its block size, and how DDTree makes it read the drafter's own."""
    decisions: list[tuple[str, str, Location | None]] = []
    missing: list[str] = []
    unverified: list[tuple[str, str]] = []
    hit = find_class(analysis, base.qualname)
    assert hit is not None  # plan._base_worker found this class
    facts, cls = hit
    init = method(facts, cls, "__init__")
    calls = init.calls if init else ()
    parse = next((c for c in calls if CONFIG_KEYWORD in c.keywords and c.resolved), None)
    resolves = next((c for c in calls if c.callee.endswith("." + BLOCK_METHOD)), None)
    parser = None
    if parse is None or resolves is None:
        missing.append(
            f"{base.qualname}.__init__ ({base.init.location}) reads no block size from a draft config "
            f"(no {CONFIG_KEYWORD}= parser and .{BLOCK_METHOD}() call): the drafter's trained block is unknown"
        )
    else:
        parser = parse.resolved
        decisions.append(
            (
                "parser",
                f"drafter block: {parse.callee}({CONFIG_KEYWORD}=...).{BLOCK_METHOD}(), as the base resolves it",
                facts.location(resolves),
            )
        )
    loader = None
    loader_keywords: tuple[str, ...] = ()
    for other in sorted(analysis.files.values(), key=lambda f: f.path):
        if getattr(other, "parse_error", None) or other is facts:
            continue
        for fn in other.functions:
            if not any(c.callee.endswith("." + BLOCK_METHOD) and "default" in c.keywords for c in fn.calls):
                continue
            call = next(
                (c for c in fn.calls if c.callee.rsplit(".", 1)[-1] == LOADER and c.resolved and c.args == 1), None
            )
            if call is not None:
                loader, loader_keywords = call.resolved, call.keywords
                decisions.append(
                    (
                        "loader",
                        f"drafter config: {LOADER}(draft model path, "
                        f"{', '.join(k + '=' for k in call.keywords)}), as the release infers the block",
                        other.location(call),
                    )
                )
                break
        if loader:
            break
    if loader is None:
        missing.append(
            f"no {LOADER}(path, ...) beside a .{BLOCK_METHOD}(default=...) in the snapshot: cannot read the "
            "drafter's config before the base loads it"
        )
    else:
        unknown = [k for k in loader_keywords if k not in LOADER_VALUES]
        if unknown:
            missing.append(
                f"{loader} is called with {', '.join(unknown)}, which DDTree cannot read from the server arguments"
            )
        if loader.rsplit(".", 1)[0] not in files_by_module(analysis):
            unverified.append(
                (
                    f"{loader} (defined outside the scanned files; imported when the worker is constructed)",
                    checks.DRAFTER_BLOCK,
                )
            )
    bag = None
    # the settings read deciding the block: the last bag call before the .resolve_block_size() line
    # (`if get_spec().speculative_num_draft_tokens is None: ... resolve_block_size(...)`)
    before = sorted((c for c in calls if resolves is not None and c.line <= resolves.line), key=lambda c: -c.line)
    for call in before:
        if not call.resolved or call.args or call.keywords:
            continue
        module, _, name = call.resolved.rpartition(".")
        mfacts = files_by_module(analysis).get(module)
        fn = next((f for f in mfacts.functions if f.qualname == name), None) if mfacts else None
        found = (
            resolve_class(analysis, mfacts, (fn.returns or "").strip("'\""))
            if mfacts is not None and fn and fn.returns
            else None
        )
        if found is not None and OVERRIDE in found[1].methods:
            bag = call.resolved
            override = method(found[0], found[1], OVERRIDE)
            assert override is not None  # one of the class's methods
            decisions.append(
                (
                    "scope",
                    f"width scope: {call.callee}().{OVERRIDE}({SETTING}=drafter block) around the base's "
                    "draft-side construction",
                    found[0].location(override),  # the class's file: the getter may import it
                )
            )
            break
    if bag is None:
        decisions.append(
            (
                "scope",
                f"width scope: server_args.{SETTING} set to the drafter block around the base's draft-side "
                "construction, then restored",
                base.init.location,
            )
        )
    phases = []
    for name in cls.methods:
        fn = method(facts, cls, name)
        if fn is None or name.startswith("_") or name == base.entry.name:
            continue
        for call in fn.calls:
            parts = call.callee.split(".")
            if len(parts) == 3 and parts[0] == "self" and "draft" in parts[1] and parts[2] == name:
                phases.append(name)
                decisions.append(
                    (
                        name,
                        f"draft-side phase: {base.name}.{name}() builds self.{parts[1]}; it runs under the "
                        "same width scope",
                        facts.location(fn),
                    )
                )
                break
    unverified.append(
        (
            f"the release reads {SETTING} for the draft side only while the scope is on (attention backends and graphs "
            "read it when built, not per step)",
            checks.DRAFT_RUN,
        )
    )
    return DraftWidth(
        parser=parser,
        loader=loader,
        loader_keywords=tuple(loader_keywords),
        settings_bag=bag,
        phases=tuple(phases),
        decisions=tuple(decisions),
        missing=tuple(missing),
        unverified=tuple(unverified),
    )
