"""`torchvision.transforms` for the stand-in (peer/stand_ins/torchvision/__init__.py says why): the transforms the
basic_python tutorials call, with torchvision's semantics (torchvision/transforms/functional.py and
_functional_pil.py in pytorch/vision), PIL images and numpy arrays in, as the tutorials use them.

    from torchvision.transforms import Compose, Normalize, ToTensor
    Compose([ToTensor(), Normalize((0.5,), (0.5,))])(numpy.full((28, 28), 255, numpy.uint8))  # all 1.0, [1, 28, 28]
"""

from __future__ import annotations

import numbers
from enum import Enum

import numpy as np
import torch


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    # For PIL compatibility
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# torchvision's pil_modes_mapping: PIL's resampling filter numbers.
_PIL_FILTER = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BILINEAR: 2,
               InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
               InterpolationMode.LANCZOS: 1}


def _pil_only(img, what: str):
    if isinstance(img, torch.Tensor) or not hasattr(img, "getbands"):
        raise TypeError(f"{what} of a {type(img).__name__}: the torchvision stand-in (peer/stand_ins) takes PIL "
                        "images only here; give it a PIL image, as the tutorials do")


def _pair(size) -> tuple[int, int]:
    """(h, w) from an int or a 1- or 2-sequence, as torchvision's _setup_size reads a crop size."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    return int(size[0]), int(size[1])


class Compose:
    """Apply each transform (any callable) in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class ToTensor:
    """A PIL image or HxW(xC) numpy array to a CxHxW float tensor; uint8 values are divided by 255, other dtypes kept
    (torchvision's to_tensor)."""

    def __call__(self, pic) -> torch.Tensor:
        if isinstance(pic, np.ndarray):
            if pic.ndim not in (2, 3):
                raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
            img = torch.from_numpy((pic[:, :, None] if pic.ndim == 2 else pic).transpose((2, 0, 1))).contiguous()
        else:
            _pil_only(pic, "ToTensor")
            nptype = {"I": np.int32, "I;16": np.int16, "F": np.float32}.get(pic.mode, np.uint8)
            img = torch.from_numpy(np.array(pic, nptype, copy=True))
            if pic.mode == "1":
                img = 255 * img
            img = img.view(pic.size[1], pic.size[0], len(pic.getbands())).permute((2, 0, 1)).contiguous()
        return img.to(dtype=torch.get_default_dtype()).div(255) if img.dtype == torch.uint8 else img


class Normalize:
    """(x - mean) / std per channel of a float (..., C, H, W) tensor; out of place unless inplace=True."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise TypeError(f"Normalize takes a float tensor image, got {getattr(tensor, 'dtype', type(tensor))}")
        if tensor.ndim < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got {tuple(tensor.shape)}.")
        if not self.inplace:
            tensor = tensor.clone()
        mean = torch.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
        std = torch.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
        if mean.ndim == 1:
            mean = mean.view(-1, 1, 1)
        if std.ndim == 1:
            std = std.view(-1, 1, 1)
        return tensor.sub_(mean).div_(std)


class Resize:
    """Resize a PIL image to (h, w), or its smaller edge to an int `size` keeping the aspect ratio (the longer edge
    truncated: torchvision's _compute_resized_output_size); PIL always antialiases."""

    def __init__(self, size, interpolation: InterpolationMode = InterpolationMode.BILINEAR):
        self.size, self.interpolation = size, interpolation

    def __call__(self, img):
        _pil_only(img, "Resize")
        w, h = img.size
        if isinstance(self.size, int) or len(self.size) == 1:
            requested = self.size if isinstance(self.size, int) else self.size[0]
            short, long = (w, h) if w <= h else (h, w)
            new_short, new_long = requested, int(requested * long / short)
            new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        else:
            new_h, new_w = self.size
        if (new_h, new_w) == (h, w):
            return img
        return img.resize((new_w, new_h), _PIL_FILTER[self.interpolation])


class CenterCrop:
    """The centre (h, w) of a PIL image; an image smaller than the crop is first padded with 0 on both sides (the
    odd pixel on the right/bottom), as torchvision's center_crop does."""

    def __init__(self, size):
        self.size = _pair(size)

    def __call__(self, img):
        _pil_only(img, "CenterCrop")
        (ch, cw), (w, h) = self.size, img.size
        if cw > w or ch > h:
            from PIL import Image  # only here: a PIL image came in, so PIL is installed

            padded = Image.new(img.mode, (max(w, cw), max(h, ch)))
            padded.paste(img, (max(cw - w, 0) // 2, max(ch - h, 0) // 2))
            img, (w, h) = padded, padded.size
        top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
        return img.crop((left, top, left + cw, top + ch))
