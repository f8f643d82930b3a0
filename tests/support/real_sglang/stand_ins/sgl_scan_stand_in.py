"""Shared machinery of the import stand-ins in this folder (see README.md); used by their __init__ files.

`install(package)` makes every `<package>.<sub>` module importable without files on disk; each name
taken from one is an `Unavailable` placeholder that raises when called or used as data.
"""

import importlib.abc
import importlib.machinery
import sys
import types


class Unavailable:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}: an sgl-scan test import stand-in (tests/support/real_sglang/stand_ins); not the real package")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unavailable(f"{self._name}.{attr}")

    def __repr__(self):
        return f"<import stand-in {self._name}>"


def module_getattr(module_name):
    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unavailable(f"{module_name}.{attr}")

    return __getattr__


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, package):
        self.package = package

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.package + "."):
            return None
        if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
            return None  # a real file of the stand-in
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = module_getattr(spec.name)
        return module

    def exec_module(self, module):
        pass


def install(package):
    if not any(isinstance(f, _Finder) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(_Finder(package))
    return module_getattr(package)
