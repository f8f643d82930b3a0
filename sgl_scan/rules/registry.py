"""Finds and loads the rules: every module `sgl_scan/rules/sglNNN_*.py` holds exactly one rule.

A module that fails to import, holds no rule or several, or a rule whose definition is incomplete
(see `Rule.problems`) stops the run with `RuleLoadError`; a rule is never skipped silently.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import lru_cache

from sgl_scan.errors import SglScanError
from sgl_scan.rules.base import Rule, RuleSet

RULE_MODULE = re.compile(r"sgl\d{3}_\w+")


class RuleLoadError(SglScanError):
    """A rule module could not be loaded or its rule is malformed (exit 3)."""


def rule_module_names(package: str = "sgl_scan.rules") -> tuple[str, ...]:
    """Dotted names of the rule modules in `package`, sorted."""
    pkg = importlib.import_module(package)
    names = (info.name for info in pkgutil.iter_modules(pkg.__path__))
    return tuple(sorted(f"{package}.{name}" for name in names if RULE_MODULE.fullmatch(name)))


def load_rule_class(module_name: str) -> type[Rule]:
    """The one `Rule` subclass defined in `module_name`, checked."""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is a load error, reported with its cause
        raise RuleLoadError(f"rule module {module_name} failed to load: {type(exc).__name__}: {exc}") from exc
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise RuleLoadError(f"rule module {module_name} must define exactly one rule class, found {len(classes)}")
    cls = classes[0]
    problems = cls.problems()
    if problems:
        raise RuleLoadError(f"rule {cls.__name__} in {module_name} is malformed: {'; '.join(problems)}")
    return cls


def load_rules(module_names: tuple[str, ...] | None = None) -> RuleSet:
    """Load every rule (or those in `module_names`); ids and names must be unique."""
    names = rule_module_names() if module_names is None else tuple(module_names)
    return _load(names)


@lru_cache(maxsize=8)
def _load(names: tuple[str, ...]) -> RuleSet:
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for name in names:
        cls = load_rule_class(name)
        for key in (cls.id, cls.name):
            if key in seen:
                raise RuleLoadError(f"{key} is defined twice: in {seen[key]} and {name}")
            seen[key] = name
        rules.append(cls())
    return RuleSet(tuple(sorted(rules, key=lambda rule: rule.id)))
