"""Render a `DDTreePlan` into the generated files (jinja2, StrictUndefined, no autoescape)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from sgl_scan.codegen.ddtree import checks
from sgl_scan.codegen.ddtree.patch import PatchResult
from sgl_scan.analyzer.query import Signature
from sgl_scan.codegen.ddtree.plan import BASE_ALGORITHM, VERIFY_MODE, DDTreePlan
from sgl_scan.codegen.ddtree.runtime import EMPTY as NO_RUNTIME_FACTS, RuntimeFacts
from sgl_scan.codegen.ddtree.trust import check_patch_notes, check_plan
from sgl_scan.codegen.ddtree.width import LOADER_VALUES, SETTING as WIDTH_SETTING
from sgl_scan.errors import CodegenError

TEMPLATES = Path(__file__).with_name("templates")
KERNEL_TEST_BUDGET_LIMIT = 63  # the Triton interpreter is slow; generated tests stay at or below it

COMMON_FILES = (
    ("tree.py", "tree.py.j2"),
    ("kernels.py", "kernels.py.j2"),
    ("worker.py", "worker.py.j2"),
    ("__init__.py", "__init__.py.j2"),
    ("tests/__init__.py", None),
    ("tests/conftest.py", "tests/conftest.py.j2"),
    ("tests/test_tree.py", "tests/test_tree.py.j2"),
    ("tests/test_kernels.py", "tests/test_kernels.py.j2"),
    ("tests/test_worker.py", "tests/test_worker.py.j2"),
    ("tests/kernel_check.py", "tests/kernel_check.py.j2"),
    ("README.md", "README.md.j2"),
)


@dataclass(frozen=True)
class Forwarding:
    """How an overriding method restates and forwards its base method's parameters."""

    signature: str  # ", a, b=1, *, c" (empty when none)
    call: str  # "a=a, b=b, c=c"
    batch: str  # the first parameter's name ("" when none)
    sentinel: bool  # some default is not a literal: passed only when given
    text: str  # "a, b=1, *, c" for documentation


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["py"] = repr  # a Python literal of a str/tuple value
    return env


def render_ddtree(
    plan: DDTreePlan, package: str, patch: PatchResult | None, regenerate: str, runtime: RuntimeFacts = NO_RUNTIME_FACTS
) -> dict[str, str]:
    """Every generated file, by path relative to the output folder; `runtime`: the release's runtime
    facts (runtime.py)."""
    if not package.isidentifier():
        raise CodegenError(
            f"the output folder name {package!r} is not a Python identifier (it becomes the package name)"
        )
    check_plan(plan)  # every tree-derived string matches its strict pattern (trust.py), else refused
    if patch is not None:
        check_patch_notes(patch.edits + patch.skipped)  # their lines reach README.md and the plan text
    env = environment()
    context = _context(plan, package, patch, regenerate)
    context["runtime"] = runtime
    context["dist_name"] = f"{package}_ddtree_plugin"
    files: dict[str, str] = {}
    for path, template in COMMON_FILES:
        files[path] = env.get_template(template).render(**context) if template else ""
    if plan.mode == "plugin":
        files["register.py"] = env.get_template("register.py.j2").render(**context)
        if runtime.plugin_group is not None:  # the release's own plugin entry point registers in every process
            files["hook.py"] = env.get_template("hook.py.j2").render(**context)
    else:
        if patch is None:
            raise CodegenError("patch mode needs the patch")
        files["ddtree.patch"] = patch.text
    return files


def _context(plan: DDTreePlan, package: str, patch: PatchResult | None, regenerate: str) -> dict[str, Any]:
    init = forwarding(plan.base.init)
    entry = forwarding(plan.base.entry)
    if not entry.batch:
        raise CodegenError(
            f"{plan.base.qualname}.{plan.base.entry.name} ({plan.base.entry.location}) takes no batch parameter"
        )
    context: dict[str, Any] = {
        "plan": plan,
        "patch": patch,
        "package": package,
        "name": plan.algorithm_name,
        "base_algorithm": BASE_ALGORITHM,
        "sglang_version": plan.sglang_version or "(unknown version)",
        "snapshot_id": plan.snapshot_id,
        "budget": plan.budget,
        "topk": plan.topk,
        "test_budget": min(plan.budget, KERNEL_TEST_BUDGET_LIMIT),
        "test_topk": min(plan.topk or 8, 8),
        "mode": plan.mode,
        "base": {
            "module": plan.base.module,
            "name": plan.base.name,
            "qualname": plan.base.qualname,
            "location": str(plan.base.location),
        },
        "init": {**init.__dict__, "server_args": _server_args_param(plan)},
        "entry": {**entry.__dict__, "name": plan.base.entry.name, "location": str(plan.base.entry.location)},
        "init_params": init.text,
        "init_names": repr([p.name for p in plan.base.init.params if p.kind in ("positional", "kwonly")]),
        "entry_params": entry.text,
        "regenerate": regenerate,
        "out_hint": f"/path/to/{package}",
        "verify": _verify_context(plan),
        "settings_view": {
            "module": plan.settings_view[0].rpartition(".")[0],
            "name": plan.settings_view[0].rpartition(".")[2],
            "location": str(plan.settings_view[1]),
        }
        if plan.settings_view
        else None,
        "engine": _engine_context(plan),
        "width": _width_context(plan),
        "assumed": _assumed(plan),
        "attention": _attention_context(plan, plan.mode == "plugin" or bool(patch and patch.server_args_hook)),
    }
    context["attributes"] = tuple(
        dict.fromkeys(tuple(context["verify"]["attributes"]) + tuple(context["engine"]["attributes"]))
    )
    if plan.plugin is not None:
        base_module, _, base_name = plan.plugin.base_qualname.rpartition(".")
        register_params = {p.name for p in plan.plugin.register.params}
        args = ["NAME"]
        if "supports_overlap" in register_params:
            args.append(f"supports_overlap={plan.supports_overlap}")
        args.append("spec_class=DDTreeSpecAlgo")
        context.update(
            {
                "enum_module": plan.enum_module,
                "enum_name": plan.enum_name,
                "base_module": base_module,
                "base_name": base_name,
                "predicates": plan.predicates,
                "register_args": ", ".join(args),
                "delegated": [
                    {"name": d.name, "location": str(d.location), "forward": forwarding(d)} for d in plan.delegated
                ],
                "inherited": [
                    {"name": d.name, "location": str(d.location), "forward": forwarding(d)} for d in plan.inherited
                ],
            }
        )
    return context


def _attention_context(plan: DDTreePlan, routes: bool = True) -> dict[str, object]:
    """The attention facts as Python literals for worker.py (tree text only through the `py` filter), per
    model kind ("mha", "sinks", "mla")."""
    att = plan.attention
    kinds = ("mha", "sinks", "mla")
    if att is None:
        return {
            "function": None,
            "arms": {k: () for k in ("mha", "mla")},
            "unread": {k: "no attention facts were planned" for k in ("mha", "mla")},
            "reading": {k: {} for k in kinds},
            "refused": {k: {} for k in kinds},
            "graphs": (),
            "wanted": {k: None for k in kinds},
            "wanted_all": None,
            "routes": False,
            "table": (),
            "probes": {"mla": None, "config": None},
            "sinks_attribute": None,
            "overrides": {},
            "no_reader": {},
        }
    arms = {
        family: tuple(
            ((a.kind, a.module, a.getter, a.attribute), a.backends, a.conditional, str(a.location), a.sinks_skip)
            for a in att.kind_arms(family)
        )
        for family in ("mha", "mla")
    }
    reading = {k: att.reading(k) for k in kinds}
    wanted = {}
    for k in kinds:
        order = [
            b
            for a in att.kind_arms(k)
            if a.kind == "else"
            for b in a.backends
            if b in reading[k] and not (k == "sinks" and b in a.sinks_skip)
        ] + list(reading[k])
        wanted[k] = order[0] if order else None
    by_name = {b.backend: b for b in att.backends}
    table = []
    for family in ("mha", "mla"):
        for a in att.kind_arms(family):
            for kind in (family, "sinks") if family == "mha" else (family,):
                picks = [b for b in a.backends if not (kind == "sinks" and b in a.sinks_skip)]
                causal = [b for b in picks if b not in reading[kind]]
                if not causal:
                    action = "nothing to do"
                elif wanted[kind]:
                    action = (
                        f"forced to {wanted[kind]}" if routes else f"refused: pass --attention-backend {wanted[kind]}"
                    )
                else:
                    action = "refused: no backend of this release verifies a tree here"
                why = "; ".join(f"{b}: {by_name[b].why(kind)}" for b in causal if b in by_name)
                table.append(
                    (
                        {"mha": "MHA", "sinks": "MHA + attention sinks", "mla": "MLA"}[kind],
                        a.attribute or a.getter or "else",
                        ", ".join(picks),
                        a.conditional,
                        action,
                        why,
                        str(a.location),
                    )
                )
    no_reader = {}
    for k in kinds:
        if not reading[k]:
            dropped = [b for b in att.backends if b.reads_mask and not b.reads(k)]
            change = (
                "; ".join(f"{b.backend}: {b.why(k)}" for b in dropped[:2])
                or "no backend reads the verify input's custom mask"
            )
            no_reader[k] = (
                f"no attention backend of SGLang {plan.sglang_version} hands the tree mask to its verify kernel for "
                f"{k.upper()} models ({change}); a release whose verify passes the custom mask on (e.g. a plan "
                f"that takes it instead of a causal one) would enable it"
            )
    overrides: dict[str, list] = {}
    for o in att.overrides:
        if o.setting != "attention_backend":
            continue
        for arch in o.architectures:
            overrides.setdefault(arch, []).append((o.backends, str(o.location)))
    probe = lambda p: (p.kind, p.module, p.name, str(p.location)) if p else None  # noqa: E731
    every = [b for b in reading["mha"] if all(b in reading[k] for k in kinds)]
    order = [b for a in att.arms if a.kind == "else" for b in a.backends if b in every] + every
    return {
        "routes": routes,  # a server-args check forces a backend (plugin hook, or the patched ServerArgs)
        "wanted": wanted,
        "wanted_all": order[0] if order else None,  # verifies a tree for every kind of model
        "table": tuple(table),
        "function": att.function,
        "arms": arms,
        "unread": {"mha": att.unread, "mla": att.mla_unread},
        "reading": {
            k: {b.backend: f"{b.why(k)} (registered at {b.location})" for b in att.backends if b.reads(k)}
            for k in kinds
        },
        "refused": {
            k: {
                b.backend: b.why(k) if b.reads(k) is False else f"unread: {b.why(k)}"
                for b in att.backends
                if not b.reads(k)
            }
            for k in kinds
        },
        "graphs": tuple(str(g) for g in att.verify_graphs),
        "probes": {"mla": probe(att.mla_probe), "config": probe(att.config_probe)},
        "sinks_attribute": att.sinks_attribute,
        "overrides": {arch: tuple(v) for arch, v in sorted(overrides.items())},
        "no_reader": no_reader,
    }


def _server_args_param(plan: DDTreePlan) -> str:
    """The constructor parameter holding the server arguments (the refusals read it before the base runs)."""
    names = [p.name for p in plan.base.init.params if p.kind in ("posonly", "positional", "kwonly")]
    if "server_args" not in names:
        raise CodegenError(f"{plan.base.qualname}.__init__ ({plan.base.init.location}) takes no server_args parameter")
    return "server_args"


def _verify_context(plan: DDTreePlan) -> dict[str, Any]:
    """How the generated worker builds, prepares and runs the release's target verify."""
    glue = plan.verify
    if glue is None or glue.missing:
        return {"ok": False, "missing": list(glue.missing if glue else ("no verify glue planned",)), "attributes": ()}
    # nothing missing: the verify class's prepare and the target's forward were both found (plan.verify_glue)
    assert glue.prepare is not None and glue.target_forward is not None
    values = {"batch": "batch", "target": f"self.{glue.target_attr}", "page_size": "self.page_size", "false": "False"}
    kinds = {p.name: p.kind for p in glue.prepare.params}
    args = []
    for name, role in glue.prepare_args:
        value = values[role]
        args.append(f"{name}={value}" if kinds[name] == "kwonly" else value)
    attributes = (glue.target_attr,) + (("page_size",) if any(r == "page_size" for _, r in glue.prepare_args) else ())
    return {
        "ok": True,
        "missing": [],
        "module": glue.verify_module,
        "name": glue.verify_name,
        "location": str(glue.verify_location),
        "prepare": glue.prepare.name,
        "prepare_location": str(glue.prepare.location),
        "prepare_call": ", ".join(args),
        "prepare_signature": forwarding(glue.prepare).signature,
        "prepare_batch": next(name for name, role in glue.prepare_args if role == "batch"),
        "fields": glue.fields,
        "left_default": tuple(k for k in glue.left_default if not (plan.engine and k == plan.engine.kv_field)),
        "returns_forward_batch": glue.returns_forward_batch,
        "target_attr": glue.target_attr,
        "target_forward": glue.target_forward.name,
        "target_location": str(glue.target_forward.location),
        "target_signature": forwarding(glue.target_forward).signature,
        "target_batch": forwarding(glue.target_forward).batch,
        "worker_batch_method": glue.worker_batch_method,
        "forward_mode_module": glue.forward_mode_module,
        "result_field": glue.result_field,
        "result_location": str(glue.result_location) if glue.result_location else "outside the scanned files",
        "unverified": glue.unverified,
        "verify_mode": VERIFY_MODE,
        "attributes": attributes,
    }


def _engine_context(plan: DDTreePlan) -> dict[str, Any]:
    """How the generated worker runs the release's draft block and commits a tree (engine.py)."""
    glue = plan.engine
    if glue is None:
        return {"ok": False, "missing": ["no draft/commit glue planned"], "decisions": [], "attributes": ()}
    ok = not glue.missing and plan.verify is not None and not plan.verify.missing
    context: dict[str, Any] = {
        "ok": ok,
        "missing": list(glue.missing),
        "decisions": [f"{d.what} ({d.location})" for d in glue.decisions],
        "unverified": list(glue.unverified),
        "attributes": (glue.draft_runner,) if glue.draft_runner else (),
    }
    if not ok:
        return context
    where = lambda key: str(glue.where(key)) if glue.where(key) else "outside the scanned files"  # noqa: E731
    assert glue.result_class is not None  # else engine_glue names it missing
    module, _, name = glue.result_class.rpartition(".")
    context.update(
        {
            "v2": glue.shape == "forward_batch",
            "shape_text": "spec v2: the verify window comes from the scheduler's reservation"
            if glue.shape == "forward_batch"
            else "spec v1: the verify input's prepare and accept manage the window",
            "result_module": module,
            "result_name": name,
            "result_keywords": glue.result_keywords,
            "result_location": where("result"),
            "draft_method": glue.draft_method,
            "draft_call": ", ".join("batch" if a == "batch" else "draft_input" for a in glue.draft_args),
            "draft_runner": glue.draft_runner,
            "draft_location": where("draft"),
            "root_field": glue.root_field,
            "hidden_field": glue.hidden_field,
            "ctx_field": glue.ctx_field,
            "append_method": glue.append_method,
            "append_location": where("append"),
            "append_keywords": glue.append_keywords,
            "append_values": {
                "target_hidden": "hidden.view(bs, width, -1)[:, :span].reshape(bs * span, -1)",
                "cache_loc": ("write_ids" if glue.write_ids_method else "window")
                + ".view(bs, width)[:, :span].reshape(-1)",
                "cache_loc_2d": ("write_ids" if glue.write_ids_method else "window")
                + ".view(bs, width)[:, :span].contiguous()",
                "positions": "(committed.unsqueeze(1) + columns[:, :span]).reshape(-1)",
                "commit_lens": "commit_lens",
            },
            "accept_method": glue.accept_method,
            "accept_location": where("accept"),
            "accept_call": ", ".join(
                f"{k}={ {'batch': 'batch', 'logits_output': 'verified', 'page_size': 'self.page_size'}[k] }"
                for k in glue.accept_keywords
            ),
            "next_input_method": glue.next_input_method,
            "next_input_call": ", ".join(
                f"{k}={ {'bonus_tokens': 'bonus', 'new_seq_lens': 'new_seq_lens'}[k] }"
                for k in glue.next_input_keywords
            ),
            "window_module": glue.window_func.rpartition(".")[0] if glue.window_func else "",
            "window_name": glue.window_func.rpartition(".")[2] if glue.window_func else "",
            "window_location": where("window"),
            "mover_module": glue.kv_mover.rpartition(".")[0] if glue.kv_mover else "",
            "mover_name": glue.kv_mover.rpartition(".")[2] if glue.kv_mover else "",
            "mover_location": where("mover"),
            "publish_param": glue.publish_param,
            "kv_plan": glue.kv_plan,
            "kv_plan_keywords": glue.kv_plan_keywords,
            "kv_plan_values": {
                "req_pool_indices": "batch.req_pool_indices",
                "seq_lens": "batch.seq_lens",
                "seq_lens_cpu": "host",
                "write_virtual": "slots",
                "read_extent": "width",
            },
            "kv_plan_location": where("kv_plan"),
            "kv_field": glue.kv_field,
            "write_ids_method": glue.write_ids_method,
            "tree_sampling": glue.shape == "forward_batch",
            "page_check": "page_size" in glue.accept_keywords and glue.shape == "batch",
            "page_setting": glue.page_setting or "self.page_size",
            "page_param": glue.page_setting.split(".")[0] if glue.page_setting else None,
            "page_field": glue.page_setting.split(".")[1] if glue.page_setting else None,
            "page_location": where("pages"),
            "reservation_attr": glue.reservation_attr,
            "reservation_location": where("reservation"),
            "guards": [{"method": m, "backend_method": b} for m, b in glue.backend_guards],
            "guard_locations": [str(d.location) for d in glue.decisions if d.key == "guard"],
        }
    )
    if "page_size" in glue.accept_keywords:
        context["attributes"] = context["attributes"] + ("page_size",)
    return context


def _assumed(plan: DDTreePlan) -> dict[str, list[tuple[str, str]]]:
    """Every assumption the facts cannot prove, with the test that shows it, split by where that test runs."""
    pairs = [
        *(plan.verify.unverified if plan.verify else ()),
        *(plan.engine.unverified if plan.engine else ()),
        *(plan.width.unverified if plan.width else ()),
    ]
    pairs.append(
        (
            "the target's attention backend (flashinfer or triton) applies the tree's custom mask in verify, "
            "for a tree wider than the DFlash block",
            checks.LOSSLESS,
        )
    )
    pairs = list(dict.fromkeys(pairs))
    return {"cpu": [p for p in pairs if checks.on_cpu(p[1])], "gpu": [p for p in pairs if not checks.on_cpu(p[1])]}


def _width_context(plan: DDTreePlan) -> dict[str, object]:
    """How the generated worker keeps the drafter on its trained block (width.py)."""
    glue = plan.width
    if glue is None or glue.missing:
        return {
            "ok": False,
            "missing": list(glue.missing if glue else ("no draft width planned",)),
            "decisions": [],
            "unverified": [],
            "phases": [],
        }
    where = lambda key: str(glue.where(key)) if glue.where(key) else "outside the scanned files"  # noqa: E731
    assert glue.parser is not None and glue.loader is not None  # else draft_width names them missing
    settings = {k: f'getattr(settings, "{v}", None)' for k, v in LOADER_VALUES.items()}
    settings["trust_remote_code"] = 'bool(getattr(settings, "trust_remote_code", False))'
    settings["model_override_args"] = 'json.loads(getattr(settings, "json_model_override_args", None) or "{}")'
    return {
        "ok": True,
        "missing": [],
        "setting": WIDTH_SETTING,
        "parser_module": glue.parser.rpartition(".")[0],
        "parser_name": glue.parser.rpartition(".")[2],
        "parser_location": where("parser"),
        "loader_module": glue.loader.rpartition(".")[0],
        "loader_name": glue.loader.rpartition(".")[2],
        "loader_location": where("loader"),
        "loader_keywords": glue.loader_keywords,
        "loader_values": settings,
        "bag": glue.settings_bag is not None,
        "bag_module": glue.settings_bag.rpartition(".")[0] if glue.settings_bag else "",
        "bag_name": glue.settings_bag.rpartition(".")[2] if glue.settings_bag else "",
        "bag_location": where("scope"),
        "phases": [{"name": name, "location": where(name)} for name in glue.phases],
        "decisions": [f"{what} ({loc})" for _, what, loc in glue.decisions],
        "unverified": list(glue.unverified),
    }


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


def forwarding(sig: Signature) -> Forwarding:
    """Restate `sig`'s parameters (annotations dropped) and forward them unchanged to the base."""
    params = sig.params
    has_vararg = any(p.kind == "vararg" for p in params)
    sig_parts: list[str] = []
    call_parts: list[str] = []
    given: list[str] = []
    star_written = False
    for index, p in enumerate(params):
        default = ""
        inherit = False
        if p.default is not None:
            if _literal(p.default):
                default = f"={p.default}"
            else:
                default, inherit = "=_INHERITED", True
        if p.kind == "posonly":
            sig_parts.append(p.name + default)
            if index + 1 == len(params) or params[index + 1].kind != "posonly":
                sig_parts.append("/")
            call_parts.append(p.name)
        elif p.kind == "positional":
            sig_parts.append(p.name + default)
            if has_vararg:
                if inherit:
                    raise CodegenError(f"cannot forward {sig.name}({p.name}={p.default}) before *args ({sig.location})")
                call_parts.append(p.name)
            elif inherit:
                given.append(p.name)
            else:
                call_parts.append(f"{p.name}={p.name}")
        elif p.kind == "vararg":
            sig_parts.append(f"*{p.name}")
            star_written = True
            call_parts.append(f"*{p.name}")
        elif p.kind == "kwonly":
            if not star_written:
                sig_parts.append("*")
                star_written = True
            sig_parts.append(p.name + default)
            if inherit:
                given.append(p.name)
            else:
                call_parts.append(f"{p.name}={p.name}")
        elif p.kind == "varkw":
            sig_parts.append(f"**{p.name}")
    if given:
        call_parts.append("**_given(" + ", ".join(f"{n}={n}" for n in given) + ")")
    varkw = next((p.name for p in params if p.kind == "varkw"), None)
    if varkw:
        call_parts.append(f"**{varkw}")
    text = ", ".join(sig_parts)
    first = next((p.name for p in params if p.kind in ("posonly", "positional")), "")
    return Forwarding(
        signature=(", " + text) if text else "",
        call=", ".join(call_parts),
        batch=first,
        sentinel=bool(given),
        text=text,
    )
