"""A stand-in for torchvision, on the path of peer/models.py's runs only, and only where the real one does not import
(this venv's torch 2.13+cpu has no matching torchvision wheel: PyPI's links CUDA torch).

It holds exactly what the runs call, each as torchvision documents it (checked against pytorch/vision's source):

- `datasets.MNIST` and `datasets.CIFAR10`, reading the real on-disk formats under `root` and never downloading
  (ttnn_mlp_inference_mnist and ttnn_simplecnn_inference; peer/models.py lays out stand-in data in those formats);
- `transforms.Compose`, `ToTensor`, `Normalize`, `Resize`, `CenterCrop`, `InterpolationMode` (the same two
  tutorials, and ttnn_clip_zero_shot_classification's preprocessing).

The Whisper test imports torchvision through models/demos/utils/common_demo_utils.py and never calls it. Anything
else raises, so a run that needs more fails at the name instead of computing something else:

    import torchvision
    torchvision.transforms.Compose([torchvision.transforms.ToTensor()])
    torchvision.ops  # AttributeError: ... peer/stand_ins/torchvision has no torchvision.ops
"""

from . import datasets, transforms  # noqa: F401  (`torchvision.datasets.MNIST`, `from torchvision import transforms`)


def __getattr__(name):
    raise AttributeError(f"peer/stand_ins/torchvision has no torchvision.{name}: it holds only what peer/models.py's "
                         "runs call (datasets.MNIST/CIFAR10, transforms); install a torchvision that matches torch")
