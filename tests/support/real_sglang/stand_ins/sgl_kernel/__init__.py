"""Import stand-in for sgl_kernel (the `sglang-kernel` distribution) in the real-SGLang CPU tests; see ../README.md.

Not sgl_kernel: every name is a placeholder that raises when used.
"""

from sgl_scan_stand_in import install

__version__ = "0.0.0+sgl-scan-stand-in"
STAND_IN = True
__getattr__ = install(__name__)
