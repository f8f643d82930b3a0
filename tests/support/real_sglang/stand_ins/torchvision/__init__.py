"""Import stand-in for torchvision in the real-SGLang CPU tests; see ../README.md. Not torchvision.

`transforms.InterpolationMode` is a real enum (modules build lookup tables from its members at
import time); every other name is a placeholder that raises when used.
"""

from sgl_scan_stand_in import install

__version__ = "0.0.0+sgl-scan-stand-in"
STAND_IN = True
__getattr__ = install(__name__)
