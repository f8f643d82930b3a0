"""Make the generated package `ddtree_sglang` importable from its parent folder."""

import sys
from pathlib import Path

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
if PACKAGE_PARENT not in sys.path:
    sys.path.insert(0, PACKAGE_PARENT)
