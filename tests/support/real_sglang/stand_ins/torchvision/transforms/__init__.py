"""torchvision.transforms stand-in: `InterpolationMode` exists; every transform is a placeholder that raises."""

from sgl_scan_stand_in import module_getattr
from torchvision.transforms.functional import InterpolationMode  # noqa: F401

__getattr__ = module_getattr(__name__)
