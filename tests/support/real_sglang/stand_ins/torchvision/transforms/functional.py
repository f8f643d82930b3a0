"""torchvision.transforms.functional stand-in: `InterpolationMode`; other names are placeholders that raise."""

from enum import Enum

from sgl_scan_stand_in import module_getattr


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


__getattr__ = module_getattr(__name__)
