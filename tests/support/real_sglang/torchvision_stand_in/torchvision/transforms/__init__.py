"""torchvision.transforms stand-in: `InterpolationMode` exists; every transform is a placeholder that raises."""

from torchvision import module_getattr
from torchvision.transforms.functional import InterpolationMode  # noqa: F401

__getattr__ = module_getattr(__name__)
