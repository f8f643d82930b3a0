"""Draft and commit glue: how `DDTreeWorker` runs the release's draft block and commits a tree.

Read from the base worker's own decode path (its calls, in line order), never from a release
name. Two shapes exist and the facts tell them apart:

- *batch-editing* (spec v1, the verify input's prepare edits the batch): the verify input's own
  prepare reserves the verify window from the allocator, and its own accept method frees the slots
  not committed, maps the kept ones and gathers the committed hidden states. The tree commit lays
  the window out path-first and hands it to that method.
- *forward-batch* (spec v2, prepare returns the ForwardBatch): the decode path reads its verify
  window from the scheduler's reservation; the tree commit moves the accepted nodes' KV to the front
  of each window with the release's accepted-token mover and appends the accepted target hidden
  states to the draft KV with the base worker's own method.

Where the glue would give a wrong result silently, the worker refuses instead, and the facts say
when: spec v1's path-first window needs one-token pages (`page_setting`, read from the field of the
constructor's settings class the base takes); spec v2's window must fit what the scheduler reserves
(`reservation_attr`); a base step after the verify that the tree commit does not run and that is
gated on the target's attention backend (`backend_guards`: hybrid Mamba state commits) must not
be due.

`missing` lists what a snapshot lacks (the worker then refuses to construct); `unverified` what
the glue uses that the facts cannot show (checked at run time or documented); `decisions` each
choice with the snapshot location it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sgl_scan.analyzer.facts import CallFact, ClassFact, FileFacts, FunctionFact
from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.query import files_by_module, find_class, method, resolve_class, signature
from sgl_scan.codegen.ddtree import checks

# Result keywords the commit knows how to fill, by what they mean.
RESULT_VALUES = {
    "logits_output": "the target verify's logits output",
    "next_token_ids": "the committed tokens",
    "accept_lens": "the committed lengths (accepted nodes incl. the root)",
    "num_accepted_drafts": "the number of accepted draft tokens",
    "num_accepted_drafts_per_req_cpu": "accepted draft tokens per request",
    "can_run_cuda_graph": "the target verify's flag",
    "next_draft_input": "the drafter's next input",
    "speculative_num_draft_tokens": "the tree width (budget + 1)",
    "new_seq_lens": "the sequence lengths after the commit",
    "routed_experts_output": "the target verify's, passed through",
    "indexer_topk_output": "the target verify's, passed through",
}
# Keywords the forward-batch commit passes to the base's hidden-state append.
APPEND_VALUES = ("target_hidden", "cache_loc", "cache_loc_2d", "positions", "commit_lens")
# The release's accepted-token KV mover (spec v2), by the public name EAGLE's tree verify uses.
KV_MOVER = "move_accept_tokens_to_target_kvcache"
KV_MOVER_PARAMS = ("batch", "accept_index", "num_correct_drafts", "token_to_kv_pool_allocator")
WINDOW_KEYWORDS = ("req_pool_indices", "req_to_token", "start_offset", "end_offset", "batch_size", "draft_token_num")
WINDOW_ASSUMED = (
    "the scheduler reserves at least budget + 1 KV slots per request beyond the committed length (spec v2 reads "
    "the window from req_to_token)"
)
ROOT_FIELD = re.compile(r"(^|_)(id|ids|tokens?)$")
# The setting spec v1's accept takes for the KV page size (the keyword the base passes it as).
PAGE_KEYWORD = "page_size"
# The result keyword under which the spec v2 base reports its verify width; the base keeps the same
# number as an attribute (the tokens the scheduler reserves per request and step).
RESERVATION_KEYWORD = "speculative_num_draft_tokens"
# Spec v2: the call planning the iteration's KV locations (`<translator>.plan(write_virtual=...)`), the
# keywords the tree verify knows how to fill, and the base's own write ids read from that plan.
KV_PLAN_KEYWORD = "write_virtual"
KV_PLAN_VALUES = ("req_pool_indices", "seq_lens", "seq_lens_cpu", "write_virtual", "read_extent")


@dataclass(frozen=True)
class Decision:
    # draft | root | handoff | accept | append | next_input | window | mover | publish | result | pages
    # | reservation | guard
    key: str
    what: str
    location: Location | None


@dataclass(frozen=True)
class EngineGlue:
    """What `ddtree_draft_logits` and `ddtree_commit` use of the release."""

    shape: str  # "batch" (v1) | "forward_batch" (v2)
    draft_method: str | None  # the base method whose body runs the draft block
    draft_args: tuple[str, ...]  # how to call it: "batch" | "draft_input" per positional parameter
    draft_runner: str | None  # self.<draft_runner>.forward(forward_batch) runs the draft block
    draft_input_class: str | None
    root_field: str | None  # the draft input's field holding the last bonus (root) token
    hidden_field: str | None  # v1: the draft input's field for committed target hidden states
    ctx_field: str | None  # v1: the draft input's field for how many of them per request
    accept_method: str | None  # v1: the verify input's accept method (frees, maps, gathers)
    accept_keywords: tuple[str, ...]
    append_method: str | None  # the base method appending committed target hidden states to the draft KV
    append_keywords: tuple[str, ...]  # v2: keywords it is called with
    next_input_method: str | None  # v2: the base method building the next draft input
    next_input_keywords: tuple[str, ...]
    window_func: str | None  # v2: module.function reading the verify window from req_to_token
    kv_mover: str | None  # v2: module.function moving accepted KV to the front of each window
    publish_param: str | None  # an entry parameter the decode path calls with the new lengths
    result_class: str | None
    result_keywords: tuple[str, ...]
    page_setting: str | None  # v1: "<init parameter>.page_size" when the settings class has the field
    reservation_attr: str | None  # v2: the base attribute bounding the verify window
    backend_guards: tuple[tuple[str, str], ...]  # (skipped base step, attention-backend method gating it)
    kv_plan: str | None = None  # v2: self.<...>.plan, the call planning the verify window's KV locations
    kv_plan_keywords: tuple[str, ...] = ()
    kv_field: str | None = None  # v2: the verify input's field the base passes that plan in
    write_ids_method: str | None = None  # v2: the base method turning the plan into the draft KV's write ids
    decisions: tuple[Decision, ...] = ()
    missing: tuple[str, ...] = ()
    unverified: tuple[tuple[str, str], ...] = ()  # (what is assumed, the test that shows it: checks.py)

    def where(self, key: str) -> Location | None:
        return next((d.location for d in self.decisions if d.key == key), None)


def engine_glue(analysis: Analysis, base, verify) -> EngineGlue:
    """Read the draft and commit glue from the base worker's decode path (see the module docstring)."""
    missing: list[str] = []
    unverified: list[tuple[str, str]] = []  # (what is assumed, the test that shows it: checks.py)
    decisions: list[Decision] = []
    base_hit = find_class(analysis, base.qualname)
    assert base_hit is not None  # plan._base_worker found this class
    facts, cls = base_hit
    own = {f.name: f for f in facts.functions if f.owner == cls.qualname}
    entry = own.get(base.entry.name)
    shape = "forward_batch" if verify.returns_forward_batch else "batch"
    at = lambda line: Location(facts.path, line, 1)  # noqa: E731

    # -- the draft block: the base method that calls self.<draft runner>.forward(...)
    draft_fn, runner_call = _draft_forward(entry, own)
    draft_args: list[str] = []
    runner = None
    if draft_fn is None:
        missing.append(
            f"{base.qualname} ({base.location}) never calls self.<draft runner>.forward(...) on its decode path"
        )
    else:
        assert runner_call is not None  # found together with draft_fn
        runner = runner_call.callee.split(".")[1]
        decisions.append(
            Decision(
                "draft",
                f"draft block: {base.name}.{draft_fn.name}() runs self.{runner}.forward(forward_batch); "
                "DDTree stops it there",
                at(runner_call.line),
            )
        )
        params = signature(facts, draft_fn).params
        for p in params:
            if p.kind not in ("positional", "posonly"):
                continue
            if not draft_args:
                draft_args.append("batch")
            elif p.default is None:
                draft_args.append("draft_input")
        if len(draft_args) > 2 or not draft_args:
            missing.append(
                f"{base.name}.{draft_fn.name} ({facts.location(draft_fn)}) takes parameters the draft step "
                "cannot supply"
            )

    # -- the draft input class: a sibling of the verify input class (same base) the decode path uses
    draft_input = _draft_input_class(analysis, facts, entry, draft_fn, verify)
    root = hidden = ctx = None
    draft_input_name = None
    if draft_input is None:
        missing.append(
            f"no draft-input class (a sibling of {verify.verify_class}) used by {base.qualname}'s decode path"
        )
    else:
        draft_input_name, (dfacts, dcls) = draft_input
        fields = [a for a in dcls.attributes if a.annotation is not None]
        root_fact = next((a for a in fields if ROOT_FIELD.search(a.target) and "topk" not in a.target), None)
        if root_fact is None:
            missing.append(
                f"{draft_input_name} ({dfacts.location(dcls)}) has no token field for the root (last bonus) token"
            )
        else:
            root = root_fact.target
            decisions.append(
                Decision("root", f"root token: batch.spec_info.{root} ({dcls.name})", dfacts.location(root_fact))
            )
        if shape == "batch":
            hidden_fact = next((a for a in fields if "hidden" in a.target), None)
            ctx_fact = next((a for a in fields if a.target.endswith("_lens") and "draft" not in a.target), None)
            if hidden_fact is None or ctx_fact is None:
                missing.append(
                    f"{draft_input_name} ({dfacts.location(dcls)}) has no hidden-state and context-length "
                    "fields to hand to the drafter"
                )
            else:
                hidden, ctx = hidden_fact.target, ctx_fact.target
                decisions.append(
                    Decision(
                        "handoff",
                        f"hidden-state handoff: batch.spec_info.{hidden} / .{ctx}",
                        dfacts.location(hidden_fact),
                    )
                )

    # -- after the target verify forward
    verify_line = _target_verify_line(entry, verify.target_attr, base.entry.name) if entry else None
    after = [c for c in entry.calls if verify_line and c.line > verify_line] if entry else []
    accept_method = None
    accept_keywords: tuple[str, ...] = ()
    if shape == "batch":
        hit = find_class(analysis, verify.verify_class) if verify.verify_class else None
        call = None
        if hit is not None:
            vmethods = set(hit[1].methods) - {
                "__init__",
                "__post_init__",
                verify.prepare.name if verify.prepare else "",
            }
            call = next(
                (c for c in after if c.callee.rpartition(".")[2] in vmethods and not c.callee.startswith("self.")), None
            )
        if call is None:
            missing.append(
                f"{base.qualname}.{base.entry.name} ({base.entry.location}) calls no method of the verify "
                "input after the target verify"
            )
        else:
            assert hit is not None  # call is to one of its methods
            accept_method = call.callee.rpartition(".")[2]
            fn = method(hit[0], hit[1], accept_method)
            assert fn is not None  # accept_method is one of hit's methods
            accept_keywords = call.keywords
            decisions.append(
                Decision(
                    "accept",
                    "commit: "
                    f"{verify.verify_name}.{accept_method}({', '.join(k + '=' for k in call.keywords)}) "
                    "frees the uncommitted window slots, maps the kept ones and gathers their hidden states",
                    hit[0].location(fn),
                )
            )
            known = {"batch", "logits_output", "page_size"}
            unknown = [k for k in call.keywords if k not in known] + [
                k for k in ("batch", "logits_output") if k not in call.keywords
            ]
            if unknown or call.args:
                missing.append(
                    f"{verify.verify_name}.{accept_method} ({hit[0].location(fn)}) is called with "
                    f"{', '.join(unknown) or 'positional arguments'}, which the tree commit cannot supply"
                )
            arity = (fn.returns or "").count(",") + 1 if fn.returns else 0
            if arity != 4:
                missing.append(
                    f"{verify.verify_name}.{accept_method} ({hit[0].location(fn)}) does not return (tokens, "
                    "commit lengths, hidden states, accepted per request)"
                )
            else:
                unverified.append(
                    (
                        f"{verify.verify_name}.{accept_method} frees exactly the window slots past the "
                        "accepted path and keeps the path's slots in the order the tree commit laid them out "
                        f"({hit[0].location(fn)})",
                        checks.KV_POOL,
                    )
                )
                unverified.append(
                    (
                        f"{verify.verify_name}.{accept_method}'s four results are (next root tokens, commit "
                        "lengths, committed hidden states, accepted drafts per request) in that order "
                        f"({hit[0].location(fn)}; its annotation gives only the types)",
                        checks.LOSSLESS,
                    )
                )
    append_call = next(
        (
            c
            for c in reversed(after)
            if c.callee.startswith("self.") and "hidden" in c.callee and c.callee.split(".")[1] in own
        ),
        None,
    )
    append_method = append_keywords = None
    if append_call is None:
        missing.append(
            f"{base.qualname}.{base.entry.name} ({base.entry.location}) hands no target hidden states to the "
            "drafter after the verify (no self.<...hidden...>() call)"
        )
    else:
        append_method = append_call.callee.split(".")[1]
        append_keywords = append_call.keywords
        decisions.append(
            Decision(
                "append",
                f"draft KV: self.{append_method}("
                f"{', '.join(append_keywords) if append_keywords else 'batch, draft_input'}"
                ") after the commit, as the base does",
                at(append_call.line),
            )
        )
        if shape == "forward_batch":
            fn = own[append_method]
            required = [p.name for p in fn.params if p.kind == "kwonly" and p.default is None]
            extra = [k for k in append_keywords if k not in APPEND_VALUES] + [
                k for k in required if k not in APPEND_VALUES
            ]
            if extra:
                missing.append(
                    f"{base.name}.{append_method} ({facts.location(fn)}) is called with "
                    f"{', '.join(dict.fromkeys(extra))}, which the tree commit cannot supply"
                )
            slot_ids = (
                f"the draft KV pool indexes the target's window slot ids ({facts.location(fn)})",
                checks.LOSSLESS,
            )
            unverified.append(slot_ids)
        elif append_call.keywords or append_call.args != 2:
            missing.append(
                f"{base.name}.{append_method} ({at(append_call.line)}) is not called as (batch, draft_input)"
            )
    next_input = next_keywords = None
    window_func = kv_mover = None
    if shape == "forward_batch":
        call = next(
            (
                c
                for c in reversed(after)
                if c.callee.startswith("self.")
                and c.callee.split(".")[1] in own
                and draft_input_name
                and (own[c.callee.split(".")[1]].returns or "").strip("'\"") == draft_input_name.rsplit(".", 1)[-1]
            ),
            None,
        )
        if call is None:
            missing.append(
                f"{base.qualname}.{base.entry.name} ({base.entry.location}) builds no next draft input after the verify"
            )
        else:
            next_input, next_keywords = call.callee.split(".")[1], call.keywords
            decisions.append(
                Decision(
                    "next_input",
                    f"next draft input: self.{next_input}({', '.join(k + '=' for k in call.keywords)})",
                    at(call.line),
                )
            )
            if set(call.keywords) - {"bonus_tokens", "new_seq_lens"} or call.args:
                missing.append(
                    f"{base.name}.{next_input} ({at(call.line)}) takes arguments the tree commit cannot supply"
                )
        window = (
            next((c for c in entry.calls if set(WINDOW_KEYWORDS) <= set(c.keywords) and c.resolved), None)
            if entry
            else None
        )
        if window is None:
            missing.append(
                f"{base.qualname}.{base.entry.name} ({base.entry.location}) reads no verify window from "
                f"req_to_token (no call with {', '.join(WINDOW_KEYWORDS)})"
            )
        else:
            assert window.resolved is not None  # chosen for having one
            window_func = window.resolved
            decisions.append(
                Decision(
                    "window",
                    f"verify window: {window.callee}({', '.join(k + '=' for k in window.keywords)}) over "
                    "committed length + [0, budget + 1)",
                    at(window.line),
                )
            )
            if window_func.rsplit(".", 1)[0] not in files_by_module(analysis):
                unverified.append(
                    (f"{window_func} (called at {at(window.line)}; defined outside the scanned files)", checks.IMPORTS)
                )
            unverified.append((WINDOW_ASSUMED, checks.KV_POOL))
        mover = _function(analysis, KV_MOVER)
        if mover is None:
            missing.append(
                f"no {KV_MOVER}() in the snapshot to move the accepted nodes' KV to the front of each window"
            )
        else:
            mfacts, mfn = mover
            names = tuple(p.name for p in mfn.params)
            if names[: len(KV_MOVER_PARAMS)] != KV_MOVER_PARAMS:
                missing.append(
                    f"{mfacts.module}.{KV_MOVER} ({mfacts.location(mfn)}) takes ({', '.join(names)}), not "
                    f"({', '.join(KV_MOVER_PARAMS)})"
                )
            else:
                kv_mover = f"{mfacts.module}.{KV_MOVER}"
                decisions.append(
                    Decision(
                        "mover",
                        f"KV compaction: {kv_mover}(batch, accept_index, num_correct_drafts, "
                        "batch.token_to_kv_pool_allocator)",
                        mfacts.location(mfn),
                    )
                )
                unverified.append(
                    (
                        "batch.token_to_kv_pool_allocator (the spec v2 schedule batch's allocator; read at run time)",
                        checks.KV_POOL,
                    )
                )
    kv_plan, kv_plan_keywords, kv_field, write_ids = (
        _kv_plan(analysis, facts, own, entry, verify, missing, decisions)
        if shape == "forward_batch"
        else (None, (), None, None)
    )
    if write_ids is not None:  # the draft KV is written at the plan's write ids, as the base writes it
        unverified = [
            u for u in unverified if not u[0].startswith("the draft KV pool indexes the target's window slot ids")
        ]
    publish = None
    if entry is not None:
        param_names = {p.name for p in base.entry.params}
        publish = next((c.callee for c in after if c.callee in param_names), None)
        if publish:
            decisions.append(
                Decision(
                    "publish",
                    f"the decode path calls its `{publish}` parameter with the new lengths; so does the commit",
                    at(next(c.line for c in after if c.callee == publish)),
                )
            )
    result = (
        next(
            (
                c
                for c in reversed(entry.calls)
                if c.resolved and c.callee[:1].isupper() and set(c.keywords) & {"logits_output", "next_token_ids"}
            ),
            None,
        )
        if entry
        else None
    )
    result_keywords: tuple[str, ...] = ()
    if result is None:
        missing.append(
            f"{base.qualname}.{base.entry.name} ({base.entry.location}) returns no result class the commit can rebuild"
        )
    else:
        result_keywords = result.keywords
        decisions.append(
            Decision(
                "result",
                f"result: {result.callee}({', '.join(k + '=' for k in result.keywords)}), as the decode path returns",
                at(result.line),
            )
        )
        unknown = [k for k in result.keywords if k not in RESULT_VALUES]
        if unknown:
            missing.append(
                f"{result.callee} ({at(result.line)}) is built with {', '.join(unknown)}, which the tree "
                "commit cannot fill"
            )
    unverified.append(
        (
            "the target model's lm_head (read as self.<target>.model_runner.model.lm_head, its first "
            "model_config.vocab_size rows: the rest are padding) projects the draft hidden states to the full "
            "vocabulary on one rank (no tensor-parallel gather)",
            checks.LOSSLESS,
        )
    )

    # -- what would go wrong silently: the worker refuses instead (see the module docstring)
    page_setting = None
    if shape == "batch" and PAGE_KEYWORD in accept_keywords:
        # accept_keywords are the accept call's: hit, accept_method and its method are found
        assert hit is not None and accept_method is not None
        accept_fn = method(hit[0], hit[1], accept_method)
        assert accept_fn is not None
        page_setting, field = _settings_field(analysis, facts, own.get("__init__"), PAGE_KEYWORD)
        what = (
            f"pages: the path-first window needs {page_setting or 'self.' + PAGE_KEYWORD} == 1; "
            "DDTreeWorker() refuses any other value (the release's accept frees and maps whole pages, which a "
            "reordered window breaks)"
        )
        decisions.append(
            Decision(
                "pages",
                what,
                field[0].location(field[1]) if field else (hit[0].location(accept_fn) if hit else None),
            )
        )
    reservation = None
    if shape == "forward_batch" and RESERVATION_KEYWORD in result_keywords:
        reservation = RESERVATION_KEYWORD
        assert result is not None  # result_keywords are its keywords
        unverified = [u for u in unverified if u[0] != WINDOW_ASSUMED]  # checked when the worker is constructed
        decisions.append(
            Decision(
                "reservation",
                f"window bound: the base reports its verify width as {RESERVATION_KEYWORD}; DDTreeWorker() "
                f"refuses a budget + 1 above self.{RESERVATION_KEYWORD} (the scheduler reserves no more per "
                "step)",
                at(result.line),
            )
        )
    guards = []
    skip = {accept_method, append_method, next_input, draft_fn.name if draft_fn else None}
    for call in after:
        name = call.callee.split(".")[1] if call.callee.startswith("self.") and call.callee.count(".") == 1 else None
        if name is None or name in skip or name not in own:
            continue
        for inner in own[name].calls:
            parts = inner.callee.split(".")
            if len(parts) >= 2 and parts[-2].endswith("attn_backend") and (name, parts[-1]) not in guards:
                guards.append((name, parts[-1]))
                decisions.append(
                    Decision(
                        "guard",
                        f"skipped base step: self.{name}() runs when the target's attention backend has "
                        f"{parts[-1]}(); the tree commit does not, so DDTree refuses such a backend",
                        facts.location(own[name]),
                    )
                )
    return EngineGlue(
        shape=shape,
        draft_method=draft_fn.name if draft_fn else None,
        draft_args=tuple(draft_args),
        draft_runner=runner,
        draft_input_class=draft_input_name,
        root_field=root,
        hidden_field=hidden,
        ctx_field=ctx,
        accept_method=accept_method,
        accept_keywords=accept_keywords,
        append_method=append_method,
        append_keywords=tuple(append_keywords or ()),
        next_input_method=next_input,
        next_input_keywords=tuple(next_keywords or ()),
        window_func=window_func,
        kv_mover=kv_mover,
        publish_param=publish,
        result_class=result.resolved if result else None,
        result_keywords=result_keywords,
        page_setting=page_setting,
        reservation_attr=reservation,
        backend_guards=tuple(guards),
        kv_plan=kv_plan,
        kv_plan_keywords=kv_plan_keywords,
        kv_field=kv_field,
        write_ids_method=write_ids,
        decisions=tuple(decisions),
        missing=tuple(missing),
        unverified=tuple(unverified),
    )


def _kv_plan(
    analysis: Analysis,
    facts: FileFacts,
    own: dict[str, FunctionFact],
    entry,
    verify,
    missing: list[str],
    decisions: list[Decision],
):
    """Spec v2: the base plans its verify window's KV locations once and passes the plan to the verify
    input (`<field>=`) and, through its write-ids method, to the draft KV append. The tree verify plans
    its own (wider) window with the same call, so it passes what the base passes.

    Returns (plan callee, its keywords, the verify field, the write-ids method); all None when the base
    plans nothing.
    """
    call = (
        next((c for c in entry.calls if KV_PLAN_KEYWORD in c.keywords and c.callee.startswith("self.")), None)
        if entry
        else None
    )
    if call is None:
        return None, (), None, None
    at = Location(facts.path, call.line, 1)
    unknown = [k for k in call.keywords if k not in KV_PLAN_VALUES]
    if unknown or call.args:
        missing.append(
            "the base plans its KV locations with "
            f"{call.callee}({', '.join(unknown) or 'positional arguments'}) ({at}), which the tree verify "
            "cannot supply"
        )
    write_ids = field = None
    hit = find_class(analysis, verify.verify_class) if verify.verify_class else None
    for c in entry.calls:
        name = c.callee.split(".")[1] if c.callee.startswith("self.") and c.callee.count(".") == 1 else None
        fn = own.get(name) if name else None
        params = [p for p in fn.params if p.name != "self"] if fn else []
        if fn is None or c.args != 1 or len(params) != 1 or not params[0].annotation:
            continue
        kind = params[0].annotation.strip("'\"")
        if not kind[:1].isupper():
            continue
        found = next(
            (
                a
                for a in (hit[1].attributes if hit else ())
                if a.annotation and re.search(rf"\b{re.escape(kind)}\b", a.annotation)
            ),
            None,
        )
        if found is not None:
            write_ids, field = name, found.target
            decisions.append(
                Decision(
                    "kv_plan",
                    f"KV plan: {call.callee}({', '.join(k + '=' for k in call.keywords)}) over the tree "
                    f"window, passed as {verify.verify_name}({field}=) and to self.{name}() for the draft KV "
                    "write ids, as the base does",
                    at,
                )
            )
            break
    if write_ids is None:
        missing.append(
            f"the base plans its KV locations ({at}) but the tree verify finds no verify-input field and "
            "write-ids method taking that plan"
        )
    return call.callee, tuple(call.keywords), field, write_ids


def _draft_forward(
    entry: FunctionFact | None, own: dict[str, FunctionFact]
) -> tuple[FunctionFact | None, CallFact | None]:
    """The entry, or a base method it calls, whose body calls self.<...draft...>.forward(x)."""
    if entry is None:
        return None, None
    candidates = [entry] + [
        own[c.callee.split(".")[1]]
        for c in entry.calls
        if c.callee.startswith("self.") and c.callee.count(".") == 1 and c.callee.split(".")[1] in own
    ]
    for fn in candidates:
        for call in fn.calls:
            parts = call.callee.split(".")
            if (
                len(parts) == 3
                and parts[0] == "self"
                and "draft" in parts[1]
                and parts[2] == "forward"
                and call.args == 1
            ):
                return fn, call
    return None, None


def _draft_input_class(
    analysis: Analysis, facts: FileFacts, entry, draft_fn, verify
) -> tuple[str, tuple[FileFacts, ClassFact]] | None:
    """A class sharing the verify input's bases, named by the draft method's annotations or built in the entry."""
    hit = find_class(analysis, verify.verify_class) if verify.verify_class else None
    if hit is None:
        return None
    bases = set(hit[1].bases)
    names: list[str] = []
    if draft_fn is not None:
        names += [p.annotation.strip("'\"") for p in draft_fn.params if p.annotation]
    for fn in (entry, draft_fn):
        for call in fn.calls if fn else ():
            if call.resolved:
                names.append(call.resolved)
    for name in names:
        found = find_class(analysis, name) if "." in name else resolve_class(analysis, facts, name)
        if found is None and "." in name:
            found = find_class(analysis, name.rsplit(".", 1)[0])
        if found is not None and found[1] is not hit[1] and bases & set(found[1].bases):
            return f"{found[0].module}.{found[1].qualname}", found
    return None


def _settings_field(analysis: Analysis, facts: FileFacts, init: FunctionFact | None, name: str):
    """("<param>.<name>", (file, field)) when a constructor parameter's annotated class has the field `name`."""
    for p in init.params if init else ():
        if not p.annotation:
            continue
        found = resolve_class(analysis, facts, p.annotation.strip("'\""))
        field = next((a for a in found[1].attributes if a.target == name), None) if found else None
        if field is not None:
            assert found is not None  # field is one of its attributes
            return f"{p.name}.{name}", (found[0], field)
    return None, None


def _target_verify_line(entry: FunctionFact, attr: str | None, name: str) -> int | None:
    lines = [
        c.line
        for c in entry.calls
        if c.callee.endswith(f".{name}") and "is_verify" in c.keywords and "target" in c.callee
    ]
    return lines[-1] if lines else None


def _function(analysis: Analysis, name: str) -> tuple[FileFacts, FunctionFact] | None:
    for facts in sorted(analysis.files.values(), key=lambda f: f.path):
        if getattr(facts, "parse_error", None):
            continue
        fn = next((f for f in facts.functions if f.qualname == name), None)
        if fn is not None:
            return facts, fn
    return None
