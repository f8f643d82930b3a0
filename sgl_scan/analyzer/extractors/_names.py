"""Name resolution shared by the libcst and the stdlib-ast extractor helpers (`_cst.py`, `_ast.py`).

Each parser's `Resolver` subclasses `NameResolution` and says how to read its own nodes (`dotted`,
`last_name`, `callee`, `at`) and which names its file binds (`names`); resolving a dotted name
through those bindings and recognising a worker class is the same for both.
"""

from __future__ import annotations

import re
from typing import Any

from sgl_scan.analyzer.extractors.records import At, WorkerRef

WORKER_NAME = re.compile(r"^[A-Z]\w*Worker(V\d+)?$")


class NameResolution:
    """Relative imports, dotted names through the file's bindings, and `…Worker` class references."""

    def __init__(self, module_name: str) -> None:
        self.module_name = module_name
        self.package = module_name if module_name.endswith("__init__") else module_name.rpartition(".")[0]
        self._names: dict[str, str] | None = None

    # what each parser's resolver provides --------------------------------------------------------
    def names(self) -> dict[str, str]:
        """Local name -> absolute dotted name, from the file's imports and top-level definitions."""
        raise NotImplementedError

    def dotted(self, node: Any) -> str | None:
        raise NotImplementedError

    def last_name(self, node: Any) -> str | None:
        raise NotImplementedError

    def callee(self, node: Any) -> Any:
        """The called expression of a call node, else the node itself."""
        raise NotImplementedError

    def at(self, node: Any) -> At:
        raise NotImplementedError

    # shared --------------------------------------------------------------------------------------
    def absolute(self, module: str, level: int) -> str:
        """The absolute module of `from <level dots><module> import ...` in this file."""
        if not level:
            return module
        base = self.package.split(".") if self.package else []
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def resolve(self, node: Any) -> str | None:
        """Absolute dotted name of a Name/Attribute chain through imports and module definitions."""
        name = self.dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.names().get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target

    def worker_ref(self, node: Any) -> WorkerRef | None:
        """A worker class named by `node` (`W`, `W(...)`, `mod.W`), if its name looks like one."""
        if node is None:
            return None
        target = self.callee(node)
        name = self.last_name(target)
        if name is None or not WORKER_NAME.match(name):
            return None
        resolved = self.resolve(target)
        return WorkerRef(resolved or name, self.at(node))


__all__ = ["NameResolution", "WORKER_NAME"]
