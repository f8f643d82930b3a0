"""sgl-scan: answers speculative-decoding integration questions about an SGLang source tree."""

import os as _os
import time as _time

__version__ = "0.1.0"


def python_sources(package: str):
    """(relative path, `os.DirEntry`) of every `*.py` file under `package`: links to folders and
    `__pycache__` are not followed, and a folder that cannot be listed is left out."""
    folders = [(package, "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            with _os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    folders.append((entry.path, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".py") and entry.is_file():
                yield f"{prefix}{entry.name}", entry


# When this process first loaded sgl_scan, and which source files it could load: code changed on disk
# after it (a source edited, a module added or removed) may not be the code running, and a cache of
# what that code computes is not written then (`analyzer.cache.sources_settled`).
LOADED_NS = _time.time_ns()
LOADED_SOURCES = frozenset(rel for rel, _ in python_sources(_os.path.dirname(_os.path.abspath(__file__))))
