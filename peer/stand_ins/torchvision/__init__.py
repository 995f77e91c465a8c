"""A stand-in for torchvision, on the path of peer/models.py's Whisper runs only, and only where the real one does
not import (this venv's torch 2.13+cpu has no matching torchvision wheel: PyPI's link CUDA torch).

tt-metal's models/demos/utils/common_demo_utils.py imports torchvision at its top (for YOLO's nms and image
transforms); the Whisper test imports get_mesh_mappers from it and never calls torchvision. Any use raises.
"""

from . import transforms  # noqa: F401  (what `from torchvision import transforms` takes)


def __getattr__(name):
    raise ImportError(f"torchvision.{name}: peer/stand_ins/torchvision is an import-only stand-in")
