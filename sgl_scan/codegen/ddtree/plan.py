"""The DDTree plan: every decision `gen ddtree` makes, each with the snapshot location behind it.

Built only from the analyzer's `Analysis` (inventory plus per-file facts); nothing here knows a
release by name. The renderer turns a plan into files; the validator checks them against the same
facts.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass

from sgl_scan.analyzer.conditions import TRUE
from sgl_scan.analyzer.kinds import Via
from sgl_scan.analyzer.facts import ClassFact, FileFacts, FunctionFact
from sgl_scan.analyzer.model import Algorithm, Analysis, DispatchSite, Location
from sgl_scan.analyzer.query import (
    Signature,
    files_by_module,
    find_class,
    find_method,
    method,
    resolve_class,
    signature,
)
from sgl_scan.codegen.ddtree import checks
from sgl_scan.codegen.ddtree.attention import AttentionPlan, attention_plan
from sgl_scan.codegen.ddtree.engine import EngineGlue, engine_glue
from sgl_scan.codegen.ddtree.trust import check_plan
from sgl_scan.codegen.ddtree.width import DraftWidth, draft_width
from sgl_scan.errors import CodegenError

NEW_ALGORITHM = "DDTREE"
BASE_ALGORITHM = "DFLASH"  # DDTree drafts with a DFlash block-diffusion drafter
MODES = ("auto", "plugin", "patch")

# The first release on the package index whose source has a DFlash worker. Checked by hand against
# the wheels: 0.5.10 and 0.5.10.post1 have no speculative/dflash_worker*.py; 0.5.11 ships
# speculative/dflash_worker.py. Only used to word the refusal for older releases.
FIRST_DFLASH_RELEASE = "0.5.11"

# Helpers SGLang (or sgl-kernel) offers for tree verification, by role. The names are the public
# API the engine has used for them; whether a snapshot has them, and where, comes from its facts.
# They are reported (README, plan) as reuse candidates; the generated worker uses its own kernels.
HELPER_ROLES = (
    ("greedy tree verification", ("verify_tree_greedy_func", "verify_tree_greedy")),
    (
        "tree mask to retrieve indices",
        ("reconstruct_indices_from_tree_mask_func", "reconstruct_indices_from_tree_mask"),
    ),
    ("target-only tree sampling", ("tree_speculative_sampling_target_only",)),
)


@dataclass(frozen=True)
class BaseWorker:
    """The release's DFlash worker, which `DDTreeWorker` subclasses."""

    module: str
    name: str
    path: str
    location: Location  # the class statement
    chosen_at: Location | None  # where the dispatch creates it
    init: Signature
    entry: Signature  # the decode-path method the scheduler calls (forwards to the target worker)
    methods: tuple[str, ...]

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class PredicateChoice:
    """What one `is_*`/`supports_*` predicate answers for DDTREE (the same as for DFLASH)."""

    name: str
    value: bool
    location: Location


@dataclass(frozen=True)
class JoinedSite:
    """A dispatch site that selects DFLASH, and whether DDTREE reaches it."""

    site: DispatchSite
    joined: bool
    how: str  # one line: through which predicate, or what keeps it out


@dataclass(frozen=True)
class Helper:
    role: str
    name: str
    module: str
    location: Location
    signature: Signature | None  # None when the snapshot only imports it (defined elsewhere)


@dataclass(frozen=True)
class PluginApi:
    enum_qualname: str
    register: Signature
    base_qualname: str
    base_location: Location
    base_predicates: tuple[str, ...]


@dataclass(frozen=True)
class VerifyGlue:
    """What `DDTreeWorker.ddtree_target_verify` uses of the release, found from the base worker's decode path.

    `missing` names, one line each, every piece the snapshot lacks; the generated worker refuses to
    construct while it is non-empty.
    """

    verify_class: str | None  # the verify-input class the base worker's decode path instantiates
    verify_location: Location | None
    fields: tuple[str, ...]  # its dataclass fields (class-body annotations), in order
    left_default: tuple[str, ...]  # fields the base decode path passes that the tree verify leaves at their default
    prepare: Signature | None  # its prepare method
    prepare_args: tuple[tuple[str, str], ...]  # (parameter, role): role is "batch" | "target" | "page_size" | "false"
    returns_forward_batch: bool  # prepare returns the ForwardBatch (spec v2) rather than editing the batch (v1)
    target_attr: str | None  # self.<target_attr> is the target worker (receiver of the entry's forward call)
    target_forward: Signature | None  # the target worker's method of the entry's name
    worker_batch_method: str | None  # batch.<m>() converting the schedule batch (v1 path)
    forward_mode_module: str | None  # where the base worker's module imports ForwardMode from (v1 path)
    result_field: str | None  # the field of the target forward's result holding the logits output
    result_location: Location | None  # the result class
    missing: tuple[str, ...]
    unverified: tuple[tuple[str, str], ...] = ()  # (what is assumed, the test that shows it: checks.py)

    @property
    def verify_module(self) -> str:
        return self.verify_class.rsplit(".", 1)[0] if self.verify_class else ""

    @property
    def verify_name(self) -> str:
        return self.verify_class.rsplit(".", 1)[-1] if self.verify_class else ""


@dataclass(frozen=True)
class DDTreePlan:
    snapshot_id: str
    sglang_version: str | None
    budget: int
    topk: int | None  # a cap on candidates per depth (--topk); None: min(budget, vocabulary) at run time
    mode: str  # "plugin" | "patch"
    mode_reason: str
    algorithm_name: str
    enum_qualname: str
    enum_location: Location
    enum_form: str
    dflash: Algorithm
    base: BaseWorker
    predicates: tuple[PredicateChoice, ...]
    sites: tuple[JoinedSite, ...]
    helpers: tuple[Helper, ...]
    plugin: PluginApi | None
    supports_overlap: bool
    overlap_reason: str
    algorithm_option: Location | None
    delegated: tuple[Signature, ...] = ()  # plugin mode: enum methods that branch on DFLASH, delegated to it
    settings_view: tuple[str, Location] | None = (
        None  # (qualified name, import site) of the release's resolved-settings view
    )
    inherited: tuple[
        Signature, ...
    ] = ()  # plugin mode: enum methods the plugin base lacks, run as the release's own code
    verify: VerifyGlue | None = None
    engine: EngineGlue | None = None  # draft and commit glue (engine.py)
    width: DraftWidth | None = None  # how the drafter keeps its trained block (width.py)
    attention: AttentionPlan | None = None  # backends that verify a tree, the release's default per architecture

    @property
    def enum_name(self) -> str:
        return self.enum_qualname.rsplit(".", 1)[-1]

    @property
    def enum_module(self) -> str:
        return self.enum_qualname.rsplit(".", 1)[0]

    @property
    def unwired(self) -> str | None:
        """One line naming why this release cannot run the generated worker, or None when it can."""
        missing = list(self.verify.missing if self.verify else ("no verify glue planned",))
        missing += list(self.engine.missing if self.engine else ("no draft/commit glue planned",))
        missing += list(self.width.missing if self.width else ("no draft width planned",))
        if not missing:
            return None
        return (
            f"DDTree cannot be wired to SGLang {self.sglang_version or '(unknown version)'}: "
            + "; ".join(missing)
            + " (nothing written; --dry-run shows the plan)"
        )

    def helper(self, role: str) -> Helper | None:
        return next((h for h in self.helpers if h.role == role), None)


def plan_ddtree(analysis: Analysis, *, budget: int, topk: int | None = None, mode: str = "auto") -> DDTreePlan:
    """Decide base worker, registration mode, predicates and dispatch sites from `analysis`."""
    if mode not in MODES:
        raise CodegenError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if budget < 1 or topk is not None and topk < 1:
        raise CodegenError("--budget and --topk must be at least 1")
    inventory = analysis.inventory
    version = analysis.sglang_version or "(unknown version)"
    algorithm_class = inventory.algorithm_class
    if algorithm_class is None:
        raise CodegenError(
            f"SGLang {version} has no SpeculativeAlgorithm class; DDTree needs the DFlash worker of "
            f"sglang>={FIRST_DFLASH_RELEASE}"
        )
    if any(a.name == NEW_ALGORITHM for a in inventory.algorithms):
        existing = next(a for a in inventory.algorithms if a.name == NEW_ALGORITHM)
        raise CodegenError(f"SGLang {version} already defines {NEW_ALGORITHM} ({existing.location})")
    dflash = next((a for a in inventory.algorithms if a.name == BASE_ALGORITHM), None)
    if dflash is None or dflash.worker is None:
        where = (
            f"{BASE_ALGORITHM} has no worker"
            if dflash
            else f"no {BASE_ALGORITHM} in {algorithm_class.qualname} ({algorithm_class.location})"
        )
        raise CodegenError(
            f"SGLang {version} has no DFlash worker ({where}); DDTree builds on the DFlash worker, "
            f"first released in sglang {FIRST_DFLASH_RELEASE}: target sglang>={FIRST_DFLASH_RELEASE}"
        )
    base = _base_worker(analysis, dflash)
    plugin = _plugin_api(analysis)
    chosen_mode, mode_reason = _choose_mode(mode, plugin, version, algorithm_class.qualname)
    predicates = _predicate_choices(analysis, algorithm_class.qualname)
    supports_overlap, overlap_reason = _overlap(analysis, dflash)

    verify = verify_glue(analysis, base)
    delegated = _delegated(analysis, dflash) if chosen_mode == "plugin" else ()
    plan = DDTreePlan(
        snapshot_id=analysis.snapshot_id,
        sglang_version=analysis.sglang_version,
        budget=budget,
        topk=topk,
        mode=chosen_mode,
        mode_reason=mode_reason,
        algorithm_name=NEW_ALGORITHM,
        enum_qualname=algorithm_class.qualname,
        enum_location=algorithm_class.location,
        enum_form=algorithm_class.form,
        dflash=dflash,
        base=base,
        predicates=predicates,
        sites=_joined_sites(analysis, chosen_mode, dflash),
        helpers=_helpers(analysis),
        plugin=plugin,
        supports_overlap=supports_overlap,
        overlap_reason=overlap_reason,
        algorithm_option=inventory.algorithm_option.location if inventory.algorithm_option else None,
        delegated=delegated,
        settings_view=_settings_view(analysis, base),
        inherited=_inherited(analysis, plugin, predicates, delegated) if chosen_mode == "plugin" else (),
        verify=verify,
        engine=engine_glue(analysis, base, verify),
        width=draft_width(analysis, base),
        attention=attention_plan(analysis),
    )
    check_plan(plan)  # tree text reaches generated code only when it matches its strict pattern
    return plan


# --- facts lookups -----------------------------------------------------------------------------


def _base_worker(analysis: Analysis, dflash: Algorithm) -> BaseWorker:
    assert dflash.worker is not None  # plan_ddtree refuses a DFLASH without a worker
    hit = find_class(analysis, dflash.worker)
    if hit is None:
        raise CodegenError(f"the DFlash worker {dflash.worker} is not in the snapshot's files (widen --scope?)")
    facts, cls = hit
    init = find_method(analysis, facts, cls, "__init__")
    init_sig = signature(*init) if init else Signature("__init__", (), facts.location(cls))
    entry = _entry_method(facts, cls)
    if entry is None:
        raise CodegenError(
            f"{dflash.worker} ({facts.location(cls)}) has no method that forwards a batch to the target worker; "
            "cannot tell which method is its decode path"
        )
    return BaseWorker(
        module=facts.module,
        name=cls.qualname,
        path=facts.path,
        location=facts.location(cls),
        chosen_at=dflash.worker_location,
        init=init_sig,
        entry=signature(facts, entry),
        methods=cls.methods,
    )


def _entry_method(facts: FileFacts, cls: ClassFact) -> FunctionFact | None:
    """The public method that hands the batch to the target worker's method of the same name.

    That is how every DFlash worker is driven: the scheduler calls `worker.M(batch)` and the worker
    runs `self.target_worker.M(...)` for prefill and verify.
    """
    for name in cls.methods:
        fn = method(facts, cls, name)
        if fn is None or name.startswith("_"):
            continue
        for call in fn.calls:
            receiver, _, attr = call.callee.rpartition(".")
            if attr == name and "target" in receiver.rsplit(".", 1)[-1]:
                return fn
    return None


def _plugin_api(analysis: Analysis) -> PluginApi | None:
    inventory = analysis.inventory
    if inventory.plugin_base is None or inventory.algorithm_class is None:
        return None
    enum = find_class(analysis, inventory.algorithm_class.qualname)
    base = find_class(analysis, inventory.plugin_base)
    if enum is None or base is None:
        return None
    register = method(enum[0], enum[1], "register")
    if register is None:
        return None
    sig = signature(enum[0], register)
    if "spec_class" not in {p.name for p in sig.params}:
        return None  # a registry without subclass support cannot answer the DFlash predicates
    base_predicates = inventory.plugin_base_predicates or tuple(
        m for m in base[1].methods if m.startswith(("is_", "supports_"))
    )
    return PluginApi(
        enum_qualname=inventory.algorithm_class.qualname,
        register=sig,
        base_qualname=inventory.plugin_base,
        base_location=base[0].location(base[1]),
        base_predicates=tuple(base_predicates),
    )


def _choose_mode(mode: str, plugin: PluginApi | None, version: str, enum: str) -> tuple[str, str]:
    if mode == "plugin" and plugin is None:
        raise CodegenError(
            f"--mode plugin: SGLang {version} has no plugin API ({enum}.register with spec_class); use --mode patch"
        )
    if mode == "patch":
        return "patch", "--mode patch"
    if plugin is not None:
        return (
            "plugin",
            f"{plugin.enum_qualname}.register ({plugin.register.location}) takes spec_class= a "
            f"{plugin.base_qualname} subclass",
        )
    return "patch", f"{enum} has no register(..., spec_class=...) plugin API"


def _predicate_choices(analysis: Analysis, enum_qualname: str) -> tuple[PredicateChoice, ...]:
    """Every membership predicate of the enum (`is_*`, `supports_*`, and the others such as
    `need_topk` or `carries_draft_hidden_states`), answered as for DFLASH."""
    choices = []
    for predicate in analysis.inventory.predicates:
        if predicate.owner != enum_qualname:
            continue
        choices.append(PredicateChoice(predicate.name, BASE_ALGORITHM in predicate.members, predicate.location))
    return tuple(choices)


def _selects_dflash(site: DispatchSite, discriminating: set[str]) -> bool:
    """The site's branch is taken for DFLASH because of DFLASH, not merely because it is speculative.

    Literal comparisons must name DFLASH; predicate tests must use a predicate true for DFLASH and
    false for some other speculative algorithm (so `is_some()`/`is_none()` else-branches do not count).
    """
    if BASE_ALGORITHM not in site.algorithms:
        return False
    if site.via == Via.PREDICATE:
        return site.detail in discriminating
    return BASE_ALGORITHM in [part.strip().rsplit(".", 1)[-1] for part in site.detail.split(",")]


def _enum_method(analysis: Analysis, site: DispatchSite) -> str | None:
    """The enum method a site sits in (`handle_server_args`), or None when it is elsewhere."""
    enum = analysis.inventory.algorithm_class
    prefix = f"{enum.qualname}." if enum else None
    if prefix and site.function.startswith(prefix) and "." not in site.function[len(prefix) :]:
        return site.function[len(prefix) :]
    return None


def _delegated(analysis: Analysis, dflash: Algorithm) -> tuple[Signature, ...]:
    """Enum methods (not predicates, not the worker choice) whose body branches on DFLASH.

    A plugin algorithm is not an enum member, so those methods would run the plugin base's default;
    the plugin class delegates them to the DFLASH member instead.
    """
    predicates = {p.name for p in analysis.inventory.predicates}
    enum = analysis.inventory.algorithm_class
    assert enum is not None  # plan_ddtree refuses a release without one
    hit = find_class(analysis, enum.qualname)
    names: list[str] = []
    for joined in _joined_sites(analysis, "plugin", dflash, delegate=False):
        name = _enum_method(analysis, joined.site)
        if (
            name
            and name not in predicates
            and joined.site.worker is None
            and name not in names
            and not name.startswith("_")
        ):
            names.append(name)
    out = []
    for name in names:
        fn = method(hit[0], hit[1], name) if hit else None
        if fn is not None and "classmethod" not in fn.decorators and "staticmethod" not in fn.decorators:
            assert hit is not None  # fn is one of its methods
            out.append(signature(hit[0], fn))
    return tuple(out)


def is_instance_method(fn: FunctionFact) -> bool:
    return not {d.rsplit(".", 1)[-1] for d in fn.decorators} & {"classmethod", "staticmethod"}


SETTINGS_VIEW = "resolving_view"  # releases that resolve server arguments lazily read them through this view


def _settings_view(analysis: Analysis, base: BaseWorker) -> tuple[str, Location] | None:
    """The function the release reads resolved server arguments through, as the base worker's module or
    the enum's imports it."""
    modules = files_by_module(analysis)
    enum = analysis.inventory.algorithm_class
    for module in (base.module, enum.qualname.rpartition(".")[0] if enum else None):
        facts = modules.get(module) if module else None
        imp = next((i for i in facts.imports if i.bound == SETTINGS_VIEW), None) if facts else None
        if imp is not None:
            assert facts is not None  # imp is one of its imports
            return imp.target, facts.location(imp)
    return None


NOT_PER_OBJECT = ("register", "from_string", "create_worker")  # class-level API, or the plugin's own worker choice


def algorithm_methods(analysis: Analysis) -> tuple[str, ...]:
    """Public instance methods of the enum: what SGLang may call on any algorithm object."""
    enum = analysis.inventory.algorithm_class
    hit = find_class(analysis, enum.qualname) if enum else None
    if hit is None:
        return ()
    facts, cls = hit
    names = []
    for name in cls.methods:
        fn = method(facts, cls, name)
        if fn is None or name.startswith("_") or name in NOT_PER_OBJECT:
            continue
        if not is_instance_method(fn):
            continue
        names.append(name)
    return tuple(names)


def _inherited(
    analysis: Analysis,
    plugin: PluginApi | None,
    predicates: tuple[PredicateChoice, ...],
    delegated: tuple[Signature, ...],
) -> tuple[Signature, ...]:
    """Enum instance methods that neither the plugin base nor the plugin class defines otherwise.

    SGLang calls them on whatever `from_string` returns (e.g. `create_future_map`,
    `get_platform_worker_cls`: SGL206's gap); the plugin class runs the release's own
    implementation on itself, whose predicates answer as DFLASH's.
    """
    if plugin is None:
        return ()
    hit = find_class(analysis, plugin.enum_qualname)
    base = find_class(analysis, plugin.base_qualname)
    covered = {p.name for p in predicates} | {d.name for d in delegated}
    out = []
    for name in algorithm_methods(analysis):
        if name in covered or (base is not None and find_method(analysis, base[0], base[1], name) is not None):
            continue
        # algorithm_methods found the same class and keeps only the names it defines
        assert hit is not None
        fn = method(hit[0], hit[1], name)
        assert fn is not None
        out.append(signature(hit[0], fn))
    return tuple(out)


def _joined_sites(analysis: Analysis, mode: str, dflash: Algorithm, delegate: bool = True) -> tuple[JoinedSite, ...]:
    inventory = analysis.inventory
    speculative = {a.name for a in inventory.algorithms if "is_none" not in a.predicates and a.name != "NONE"}
    discriminating = {
        p.name for p in inventory.predicates if BASE_ALGORITHM in p.members and not speculative <= set(p.members)
    }
    joined = []
    for site in inventory.dispatch_sites:
        if not _selects_dflash(site, discriminating):
            continue
        # the plan keeps what codegen reads of a site; the flow layer's conditions (tree text such as
        # `cfg.kv_cache_dtype not in ("nvfp4", ...)`) never travel towards the templates
        site = dataclasses.replace(site, test=None, context=TRUE, atoms=())
        in_enum = _enum_method(analysis, site) if mode == "plugin" else None
        if in_enum and site.worker == dflash.worker:
            joined.append(
                JoinedSite(
                    site, True, "the plugin's create_worker returns DDTreeWorker (worker_factory in register.py)"
                )
            )
        elif in_enum and delegate:
            joined.append(JoinedSite(site, True, f"DDTreeSpecAlgo.{in_enum}() delegates to {BASE_ALGORITHM}'s"))
        elif mode == "patch" and site.worker == dflash.worker:
            joined.append(
                JoinedSite(site, True, f"the patch returns DDTreeWorker for {NEW_ALGORITHM} inside this branch")
            )
        elif site.via == Via.PREDICATE:
            joined.append(
                JoinedSite(site, True, f"{site.detail}() answers True for {NEW_ALGORITHM} as for {BASE_ALGORITHM}")
            )
        elif mode == "patch":
            joined.append(JoinedSite(site, True, f"the patch adds {NEW_ALGORITHM} beside {site.detail}"))
        else:
            joined.append(JoinedSite(site, False, f"compares against {site.detail} itself; a plugin cannot join it"))
    return tuple(joined)


def _overlap(analysis: Analysis, dflash: Algorithm) -> tuple[bool, str]:
    """Whether DFLASH runs under overlap scheduling: its worker branch raises (refuses) or not.

    The branch is the dispatch site that creates the DFlash worker; a `raise` of an error inside the
    branch (between the site and the worker choice) is the release refusing overlap for DFLASH.
    """
    site = next(
        (s for s in analysis.inventory.dispatch_sites if s.worker == dflash.worker and BASE_ALGORITHM in s.algorithms),
        None,
    )
    if site is None or dflash.worker_location is None:
        return False, "no dispatch branch for the DFlash worker found; overlap off to be safe"
    facts = analysis.files.get(site.location.path)
    fn = None
    if facts is not None:
        fn = next(
            (
                f
                for f in facts.functions
                if f.line <= site.location.line <= f.end_line and f.qualname.endswith(site.function.rsplit(".", 1)[-1])
            ),
            None,
        )
    if fn is None:
        return False, f"cannot read the branch at {site.location}; overlap off to be safe"
    assert facts is not None  # fn is one of its functions
    low, high = site.location.line, max(site.location.line, dflash.worker_location.line)
    raises = [c for c in fn.calls if low <= c.line <= high and c.callee.endswith("Error")]
    if raises:
        return (
            False,
            f"{BASE_ALGORITHM}'s branch raises {raises[0].callee} ({facts.path}:{raises[0].line}) under overlap",
        )
    return True, f"{BASE_ALGORITHM}'s branch ({site.location}) returns its worker without refusing overlap"


def _helpers(analysis: Analysis) -> tuple[Helper, ...]:
    helpers = []
    files = sorted(analysis.files.values(), key=lambda f: (not f.path.startswith("sglang/srt/speculative/"), f.path))
    for role, names in HELPER_ROLES:
        found = None
        for name in names:
            for facts in files:
                if getattr(facts, "parse_error", None):
                    continue
                fn = next((f for f in facts.functions if f.qualname == name), None)
                if fn is not None:
                    found = Helper(role, name, facts.module, facts.location(fn), signature(facts, fn))
                    break
            if found:
                break
        if found is None:
            for name in names:
                for facts in files:
                    imp = next((i for i in facts.imports if i.bound == name and not i.scope), None)
                    if imp is not None:
                        found = Helper(role, name, facts.module, facts.location(imp), None)
                        break
                if found:
                    break
        if found is not None:
            helpers.append(found)
    return tuple(helpers)


# --- target-verify glue ------------------------------------------------------------------------

# Fields of the release's verify input that the tree verify fills in (the base worker passes the
# same keywords for its linear block; the facts say whether the class has them).
VERIFY_FIELDS = ("draft_token", "positions", "draft_token_num", "custom_mask")
PREPARE_METHOD = "prepare_for_verify"
RESULT_FIELD = "logits_output"  # GenerationBatchResult's field, checked against the facts
VERIFY_MODE = "TARGET_VERIFY"  # the ForwardMode member of a verify forward


def verify_glue(analysis: Analysis, base: BaseWorker) -> VerifyGlue:
    """How the base worker's decode path builds and runs its target verify, from its own calls."""
    missing: list[str] = []
    unverified: list[tuple[str, str]] = []
    hit = find_class(analysis, base.qualname)
    assert hit is not None  # _base_worker found this class
    facts, cls = hit
    own = [f for f in facts.functions if f.owner == cls.qualname]
    entry = next((f for f in own if f.name == base.entry.name), None)
    ordered = ([entry] if entry else []) + [f for f in own if f is not entry]
    verify = None
    for fn in ordered:
        for call in fn.calls:
            found = find_class(analysis, call.resolved) if call.resolved else None
            if found is not None and method(found[0], found[1], PREPARE_METHOD) is not None:
                verify = (call.resolved, found)
                base_keywords = [k for c in fn.calls if c.resolved == call.resolved for k in c.keywords if k != "**"]
                break
        if verify:
            break
    fields: tuple[str, ...] = ()
    prepare = None
    prepare_args: list[tuple[str, str]] = []
    returns_forward_batch = False
    verify_location = None
    if verify is None:
        missing.append(f"no class with {PREPARE_METHOD}() instantiated by {base.qualname} ({base.location})")
    else:
        vfacts, vcls = verify[1]
        verify_location = vfacts.location(vcls)
        fields = tuple(a.target for a in vcls.attributes if a.annotation is not None)
        absent = [f for f in VERIFY_FIELDS if f not in fields]
        if absent:
            missing.append(f"{verify[0]} ({verify_location}) has no field(s) {', '.join(absent)}")
        required = [
            a.target
            for a in vcls.attributes
            if a.annotation is not None and a.value is None and a.target not in VERIFY_FIELDS
        ]
        if required:
            missing.append(
                f"{verify[0]} ({verify_location}) requires field(s) {', '.join(required)} the tree verify cannot fill"
            )
        prepare_fn = method(vfacts, vcls, PREPARE_METHOD)
        assert prepare_fn is not None  # the loop above chose the class for this method
        prepare = signature(vfacts, prepare_fn)
        returns_forward_batch = "ForwardBatch" in (prepare_fn.returns or "")
        for index, p in enumerate(prepare.params):
            if p.kind in ("vararg", "varkw"):
                continue
            if index == 0 and p.kind in ("posonly", "positional"):
                prepare_args.append((p.name, "batch"))
            elif "worker" in p.name:
                prepare_args.append((p.name, "target"))
            elif p.name == "page_size":
                prepare_args.append((p.name, "page_size"))
            elif "custom_mask" in p.name and p.default in ("True", "False"):
                prepare_args.append((p.name, "false"))  # the tree mask is ours: never rebuild a causal one
            elif p.default is None:
                missing.append(
                    f"{verify[0]}.{PREPARE_METHOD} ({prepare.location}) requires {p.name!r}, which the tree "
                    "verify cannot supply"
                )
        if not any(role == "batch" for _, role in prepare_args):
            missing.append(f"{verify[0]}.{PREPARE_METHOD} ({prepare.location}) takes no batch as its first parameter")
    target_attr = _target_attr(entry, base.entry.name) if entry else None
    target_forward = None
    result_field = result_location = None
    if target_attr is None:
        missing.append(
            f"{base.qualname}.{base.entry.name} ({base.entry.location}) calls no self.<target>.{base.entry.name}()"
        )
    else:
        forward = _target_forward(analysis, facts, cls, target_attr, base.entry.name)
        if forward is None:
            missing.append(f"the class of self.{target_attr} or its {base.entry.name}() is not in the snapshot's facts")
        else:
            target_forward = signature(*forward)
            returns = (forward[1].returns or "").strip("'\"")
            result = resolve_class(analysis, forward[0], returns)
            result_field = RESULT_FIELD
            if result is None:
                unverified.append(
                    (
                        f"{returns or 'the result'}.{RESULT_FIELD} (the class of {target_forward.location}'s "
                        "result is outside the scanned files)",
                        checks.LOSSLESS,
                    )
                )
            elif any(a.target == RESULT_FIELD for a in result[1].attributes):
                result_location = result[0].location(result[1])
            else:
                missing.append(
                    f"the result of {base.entry.name} ({target_forward.location}) has no {RESULT_FIELD!r} "
                    f"field ({result[0].location(result[1])})"
                )
            names = {p.name for p in target_forward.params}
            need = ["is_verify"] + (["forward_batch"] if returns_forward_batch else [])
            for name in need:
                if name not in names:
                    missing.append(
                        f"the target worker's {base.entry.name} ({target_forward.location}) takes no {name!r}"
                    )
    if target_forward is not None:
        unverified.append(
            (
                f"{RESULT_FIELD}.next_token_logits (the logits output class is not followed through the facts)",
                checks.LOSSLESS,
            )
        )
    worker_batch_method = None
    forward_mode_module = None
    if verify is not None and not returns_forward_batch:
        worker_batch_method = _worker_batch_method(own, base.entry.params[0].name if base.entry.params else "batch")
        if worker_batch_method is None:
            missing.append(
                f"{base.qualname} never converts its batch with batch.<...>_worker_batch() ({base.location})"
            )
        forward_mode_module = next((i.module for i in facts.imports if i.bound == "ForwardMode" and not i.scope), None)
        if forward_mode_module is None:
            missing.append(f"{facts.path} does not import ForwardMode")
        else:
            mode = resolve_class(analysis, facts, "ForwardMode")
            if mode is None:
                unverified.append(
                    (f"ForwardMode.{VERIFY_MODE} ({forward_mode_module} is outside the scanned files)", checks.LOSSLESS)
                )
            elif VERIFY_MODE not in {m.name for m in mode[1].enum_members}:
                missing.append(f"ForwardMode ({mode[0].location(mode[1])}) has no member {VERIFY_MODE}")
    return VerifyGlue(
        verify_class=verify[0] if verify else None,
        verify_location=verify_location,
        fields=fields,
        left_default=tuple(dict.fromkeys(k for k in base_keywords if k not in VERIFY_FIELDS)) if verify else (),
        prepare=prepare,
        prepare_args=tuple(prepare_args),
        returns_forward_batch=returns_forward_batch,
        target_attr=target_attr,
        target_forward=target_forward,
        worker_batch_method=worker_batch_method,
        forward_mode_module=forward_mode_module,
        result_field=result_field,
        result_location=result_location,
        missing=tuple(missing),
        unverified=tuple(unverified),
    )


def _target_attr(entry: FunctionFact, name: str) -> str | None:
    """`X` of the entry's `self.X.<name>(...)` calls, a public attribute preferred."""
    attrs = []
    for call in entry.calls:
        parts = call.callee.split(".")
        if len(parts) == 3 and parts[0] == "self" and parts[2] == name and "target" in parts[1]:
            attrs.append(parts[1])
    public = [a for a in attrs if not a.startswith("_")]
    return next(iter(public or attrs), None)


def _target_forward(
    analysis: Analysis, facts: FileFacts, cls: ClassFact, attr: str, name: str
) -> tuple[FileFacts, FunctionFact] | None:
    """The target worker's `name` method: the class annotated on the constructor parameter `attr`."""
    init = method(facts, cls, "__init__")
    if init is None:
        return None
    param = next((p for p in init.params if p.name == attr.lstrip("_")), None)
    if param is None or not param.annotation:
        return None
    hit = resolve_class(analysis, facts, param.annotation.strip("'\""))
    if hit is None:
        return None
    return find_method(analysis, hit[0], hit[1], name)


def _worker_batch_method(functions, batch: str) -> str | None:
    for fn in functions:
        for call in fn.calls:
            receiver, _, attr = call.callee.rpartition(".")
            if receiver == batch and attr.endswith("worker_batch"):
                return attr
    return None
