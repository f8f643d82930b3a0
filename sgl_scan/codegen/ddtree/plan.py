"""The DDTree plan: every decision `gen ddtree` makes, each with the snapshot location behind it.

Built only from the analyzer's `Analysis` (inventory plus per-file facts); nothing here knows a
release by name. The renderer turns a plan into files; the validator checks them against the same
facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.facts import ClassFact, FileFacts, FunctionFact, Param
from sgl_scan.analyzer.model import Algorithm, Analysis, DispatchSite, Location
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
    ("tree mask to retrieve indices", ("reconstruct_indices_from_tree_mask_func", "reconstruct_indices_from_tree_mask")),
    ("target-only tree sampling", ("tree_speculative_sampling_target_only",)),
)


@dataclass(frozen=True)
class Signature:
    """A function's parameters (without `self`/`cls`) and where it is defined."""

    name: str
    params: tuple[Param, ...]
    location: Location

    @property
    def accepts_any_keyword(self) -> bool:
        return any(p.kind == "varkw" for p in self.params)


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
class DDTreePlan:
    snapshot_id: str
    sglang_version: str | None
    budget: int
    topk: int
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

    @property
    def enum_name(self) -> str:
        return self.enum_qualname.rsplit(".", 1)[-1]

    @property
    def enum_module(self) -> str:
        return self.enum_qualname.rsplit(".", 1)[0]

    def helper(self, role: str) -> Helper | None:
        return next((h for h in self.helpers if h.role == role), None)


def plan_ddtree(analysis: Analysis, *, budget: int, topk: int, mode: str = "auto") -> DDTreePlan:
    """Decide base worker, registration mode, predicates and dispatch sites from `analysis`."""
    if mode not in MODES:
        raise CodegenError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if budget < 1 or topk < 1:
        raise CodegenError("--budget and --topk must be at least 1")
    inventory = analysis.inventory
    version = analysis.sglang_version or "(unknown version)"
    algorithm_class = inventory.algorithm_class
    if algorithm_class is None:
        raise CodegenError(f"SGLang {version} has no SpeculativeAlgorithm class; DDTree needs the DFlash worker of sglang>={FIRST_DFLASH_RELEASE}")
    if any(a.name == NEW_ALGORITHM for a in inventory.algorithms):
        existing = next(a for a in inventory.algorithms if a.name == NEW_ALGORITHM)
        raise CodegenError(f"SGLang {version} already defines {NEW_ALGORITHM} ({existing.location})")
    dflash = next((a for a in inventory.algorithms if a.name == BASE_ALGORITHM), None)
    if dflash is None or dflash.worker is None:
        where = f"{BASE_ALGORITHM} has no worker" if dflash else f"no {BASE_ALGORITHM} in {algorithm_class.qualname} ({algorithm_class.location})"
        raise CodegenError(
            f"SGLang {version} has no DFlash worker ({where}); DDTree builds on the DFlash worker, "
            f"first released in sglang {FIRST_DFLASH_RELEASE}: target sglang>={FIRST_DFLASH_RELEASE}"
        )
    base = _base_worker(analysis, dflash)
    plugin = _plugin_api(analysis)
    chosen_mode, mode_reason = _choose_mode(mode, plugin, version, algorithm_class.qualname)
    predicates = _predicate_choices(analysis, algorithm_class.qualname)
    supports_overlap, overlap_reason = _overlap(analysis, dflash)
    return DDTreePlan(
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
        delegated=_delegated(analysis, dflash) if chosen_mode == "plugin" else (),
    )


# --- facts lookups -----------------------------------------------------------------------------


def files_by_module(analysis: Analysis) -> dict[str, FileFacts]:
    return {facts.module: facts for facts in analysis.files.values() if getattr(facts, "module", None)}


def find_class(analysis: Analysis, qualname: str) -> tuple[FileFacts, ClassFact] | None:
    """The file and class fact of a fully qualified class name (module prefix + class qualname)."""
    modules = files_by_module(analysis)
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        facts = modules.get(".".join(parts[:cut]))
        if facts is None:
            continue
        inner = ".".join(parts[cut:])
        for cls in facts.classes:
            if cls.qualname == inner:
                return facts, cls
    return None


def method(facts: FileFacts, cls: ClassFact, name: str) -> FunctionFact | None:
    return next((f for f in facts.functions if f.owner == cls.qualname and f.name == name), None)


def signature(facts: FileFacts, fn: FunctionFact) -> Signature:
    params = fn.params
    if fn.owner and params and params[0].name in ("self", "cls") and params[0].kind in ("positional", "posonly"):
        params = params[1:]
    return Signature(fn.name, tuple(params), facts.location(fn))


def find_method(analysis: Analysis, facts: FileFacts, cls: ClassFact, name: str, _seen: frozenset = frozenset()) -> tuple[FileFacts, FunctionFact] | None:
    """A method of `cls` or of the first base in the snapshot that defines it (MRO order, simplified)."""
    found = method(facts, cls, name)
    if found is not None:
        return facts, found
    for base in cls.bases:
        if base in _seen:
            continue
        hit = find_class(analysis, base)
        if hit is not None:
            result = find_method(analysis, hit[0], hit[1], name, _seen | {base})
            if result is not None:
                return result
    return None


def _base_worker(analysis: Analysis, dflash: Algorithm) -> BaseWorker:
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
        raise CodegenError(f"--mode plugin: SGLang {version} has no plugin API ({enum}.register with spec_class); use --mode patch")
    if mode == "patch":
        return "patch", "--mode patch"
    if plugin is not None:
        return "plugin", f"{plugin.enum_qualname}.register ({plugin.register.location}) takes spec_class= a {plugin.base_qualname} subclass"
    return "patch", f"{enum} has no register(..., spec_class=...) plugin API"


def _predicate_choices(analysis: Analysis, enum_qualname: str) -> tuple[PredicateChoice, ...]:
    choices = []
    for predicate in analysis.inventory.predicates:
        if predicate.owner != enum_qualname or not predicate.name.startswith(("is_", "supports_")):
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
    if site.via == "predicate":
        return site.detail in discriminating
    return BASE_ALGORITHM in [part.strip().rsplit(".", 1)[-1] for part in site.detail.split(",")]


def _enum_method(analysis: Analysis, site: DispatchSite) -> str | None:
    """The enum method a site sits in (`handle_server_args`), or None when it is elsewhere."""
    enum = analysis.inventory.algorithm_class
    prefix = f"{enum.qualname}." if enum else None
    if prefix and site.function.startswith(prefix) and "." not in site.function[len(prefix):]:
        return site.function[len(prefix):]
    return None


def _delegated(analysis: Analysis, dflash: Algorithm) -> tuple[Signature, ...]:
    """Enum methods (not predicates, not the worker choice) whose body branches on DFLASH.

    A plugin algorithm is not an enum member, so those methods would run the plugin base's default;
    the plugin class delegates them to the DFLASH member instead.
    """
    predicates = {p.name for p in analysis.inventory.predicates}
    hit = find_class(analysis, analysis.inventory.algorithm_class.qualname)
    names: list[str] = []
    for joined in _joined_sites(analysis, "plugin", dflash, delegate=False):
        name = _enum_method(analysis, joined.site)
        if name and name not in predicates and joined.site.worker is None and name not in names and not name.startswith("_"):
            names.append(name)
    out = []
    for name in names:
        fn = method(hit[0], hit[1], name) if hit else None
        if fn is not None and "classmethod" not in fn.decorators and "staticmethod" not in fn.decorators:
            out.append(signature(hit[0], fn))
    return tuple(out)


def _joined_sites(analysis: Analysis, mode: str, dflash: Algorithm, delegate: bool = True) -> tuple[JoinedSite, ...]:
    inventory = analysis.inventory
    speculative = {a.name for a in inventory.algorithms if "is_none" not in a.predicates and a.name != "NONE"}
    discriminating = {
        p.name for p in inventory.predicates
        if BASE_ALGORITHM in p.members and not speculative <= set(p.members)
    }
    joined = []
    for site in inventory.dispatch_sites:
        if not _selects_dflash(site, discriminating):
            continue
        in_enum = _enum_method(analysis, site) if mode == "plugin" else None
        if in_enum and site.worker == dflash.worker:
            joined.append(JoinedSite(site, True, "the plugin's create_worker returns DDTreeWorker (worker_factory in register.py)"))
        elif in_enum and delegate:
            joined.append(JoinedSite(site, True, f"DDTreeSpecAlgo.{in_enum}() delegates to {BASE_ALGORITHM}'s"))
        elif mode == "patch" and site.worker == dflash.worker:
            joined.append(JoinedSite(site, True, f"the patch returns DDTreeWorker for {NEW_ALGORITHM} inside this branch"))
        elif site.via == "predicate":
            joined.append(JoinedSite(site, True, f"{site.detail}() answers True for {NEW_ALGORITHM} as for {BASE_ALGORITHM}"))
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
    site = next((s for s in analysis.inventory.dispatch_sites if s.worker == dflash.worker and BASE_ALGORITHM in s.algorithms), None)
    if site is None or dflash.worker_location is None:
        return False, "no dispatch branch for the DFlash worker found; overlap off to be safe"
    facts = analysis.files.get(site.location.path)
    fn = None
    if facts is not None:
        fn = next((f for f in facts.functions if f.line <= site.location.line <= f.end_line and f.qualname.endswith(site.function.rsplit(".", 1)[-1])), None)
    if fn is None:
        return False, f"cannot read the branch at {site.location}; overlap off to be safe"
    low, high = site.location.line, max(site.location.line, dflash.worker_location.line)
    raises = [c for c in fn.calls if low <= c.line <= high and c.callee.endswith("Error")]
    if raises:
        return False, f"{BASE_ALGORITHM}'s branch raises {raises[0].callee} ({facts.path}:{raises[0].line}) under overlap"
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
