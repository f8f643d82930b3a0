"""Import stand-in for torchvision in the real-SGLang CPU tests; see ../README.md. Not torchvision.

Any `torchvision.<sub>` module imports; every name taken from one is an `Unavailable` placeholder
that raises when called (transformers imports `torchvision.io`, `transforms.v2.functional`, ... at
module level once it sees a torchvision). `transforms.InterpolationMode` is a real enum, since
modules build lookup tables from its members at import time.
"""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+sgl-scan-stand-in"
STAND_IN = True


class Unavailable:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}: the sgl-scan torchvision stand-in has no image or video operations")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unavailable(f"{self._name}.{attr}")

    def __repr__(self):
        return f"<torchvision stand-in {self._name}>"


def module_getattr(module_name):
    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unavailable(f"{module_name}.{attr}")

    return __getattr__


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
            return None  # a real file of this stand-in (transforms/)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = module_getattr(spec.name)
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())
__getattr__ = module_getattr(__name__)
