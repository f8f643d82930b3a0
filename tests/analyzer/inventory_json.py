"""The shape of `tests/data/expected/<version>.json`, computed from a `SpecInventory`."""

from __future__ import annotations

EXPECTED_KEYS = ("algorithm_class", "algorithms", "predicates", "algorithm_option", "choice_hooks", "aliases",
                 "plugin_base", "plugin_base_predicates", "d2t_sites")


def _at(location) -> str | None:
    return f"{location.path}:{location.line}" if location is not None else None


def _hook(hook) -> dict:
    return {"name": hook.name, "kind": hook.kind, "choices": hook.choices, "speculative": hook.speculative,
            "at": _at(hook.location), "values": list(hook.values)}


def inventory_json(inv) -> dict:
    cls = inv.algorithm_class
    return {
        "algorithm_class": {"qualname": cls.qualname, "at": _at(cls.location), "form": cls.form} if cls else None,
        "algorithms": [{"name": a.name, "kind": a.kind, "at": _at(a.location), "predicates": list(a.predicates),
                        "worker": a.worker, "worker_at": _at(a.worker_location),
                        "workers": [{"class": w.qualname, "condition": w.condition, "at": _at(w.location)} for w in a.workers]}
                       for a in inv.algorithms],
        "predicates": {p.name: {"at": _at(p.location), "members": list(p.members)} for p in inv.predicates},
        "algorithm_option": _hook(inv.algorithm_option) if inv.algorithm_option else None,
        "choice_hooks": [_hook(h) for h in inv.choice_hooks],
        "aliases": dict(inv.aliases),
        "plugin_base": inv.plugin_base,
        "plugin_base_predicates": list(inv.plugin_base_predicates),
        "d2t_sites": [{"kind": s.kind, "at": _at(s.location)} for s in inv.d2t_sites],
    }
