"""`torchvision.datasets.MNIST` and `CIFAR10` for the stand-in (peer/stand_ins/torchvision/__init__.py says why).

Each reads the real on-disk format where torchvision reads it (torchvision/datasets/mnist.py and cifar.py in
pytorch/vision) and returns (image, int label), the image a PIL image as torchvision's is (a numpy array where PIL is
not installed; ToTensor takes both). Neither downloads: a missing file is a one-line error naming it, whatever
`download` says. Two departures, both because the files are stand-ins: CIFAR-10's md5 checks are not made (random
pixels cannot match the real checksums), and its pickles are read by an unpickler that builds only numpy arrays.

    ds = MNIST(root="./data", train=False, download=True, transform=ToTensor())
    image, label = ds[0]  # a [1, 28, 28] float tensor in [0, 1], an int in 0..9
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import torch

try:
    from PIL import Image
except ImportError:  # torchvision requires PIL; the stand-in hands back arrays without it
    Image = None


def _image(pixels: np.ndarray):
    # Image.fromarray infers "L" for HxW uint8 and "RGB" for HxWx3 uint8: the modes torchvision passes.
    return Image.fromarray(pixels) if Image is not None else pixels


def _require(paths: list[str]) -> None:
    for path in paths:
        if not os.path.isfile(path):
            raise RuntimeError(f"Dataset not found: {path} is missing, and the torchvision stand-in (peer/stand_ins) "
                               "does not download; lay the files out first (peer/models.py does)")


class _Dataset:
    def __init__(self, root, transform=None, target_transform=None):
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.transform, self.target_transform = transform, target_transform

    def _item(self, pixels: np.ndarray, target: int):
        img = _image(pixels)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


def _read_idx(path: str, ndim: int) -> torch.Tensor:
    """An idx (SN3 "Pascal Vincent") file of unsigned bytes: magic 0x0000_08_<ndim>, ndim big-endian int32 sizes."""
    with open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    if magic != 0x0800 + ndim:
        raise RuntimeError(f"{path}: magic {magic:#010x} is not an idx file of {ndim}-d unsigned bytes "
                           f"({0x0800 + ndim:#010x}); lay the file out again")
    sizes = [int.from_bytes(data[4 * i:4 * i + 4], "big") for i in range(1, ndim + 1)]
    body = data[4 * (ndim + 1):]
    if len(body) != int(np.prod(sizes)):
        raise RuntimeError(f"{path}: {len(body)} bytes after the header, the header says {sizes}; lay it out again")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).view(*sizes)


class MNIST(_Dataset):
    """MNIST from root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte, the extracted files torchvision reads
    (all four must be there, as torchvision's _check_exists asks)."""

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform, target_transform)
        self.train = train
        raw = os.path.join(self.root, "MNIST", "raw")
        _require([os.path.join(raw, f"{split}-{kind}") for split in ("train", "t10k")
                  for kind in ("images-idx3-ubyte", "labels-idx1-ubyte")])
        split = "train" if train else "t10k"
        self.data = _read_idx(os.path.join(raw, f"{split}-images-idx3-ubyte"), 3)
        self.targets = _read_idx(os.path.join(raw, f"{split}-labels-idx1-ubyte"), 1).long()

    def __getitem__(self, index: int):
        return self._item(self.data[index].numpy(), int(self.targets[index]))

    def __len__(self) -> int:
        return len(self.data)


class _ArraysOnly(pickle.Unpickler):
    """What a CIFAR-10 batch holds: dicts, lists, strings and numpy arrays. Any other global is refused, so a
    planted file cannot run code."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} in a CIFAR-10 batch: only numpy arrays are read")
        return super().find_class(module, name)


def _unpickle(path: str) -> dict:
    with open(path, "rb") as f:
        return _ArraysOnly(f, encoding="latin1").load()  # latin1: the real batches are Python 2 pickles


class CIFAR10(_Dataset):
    """CIFAR-10 from root/cifar-10-batches-py: data_batch_1..5, test_batch (dicts of `data`, N x 3072 uint8 rows
    of 32x32 R, G then B planes, and `labels`) and batches.meta (`label_names`)."""

    base_folder = "cifar-10-batches-py"
    train_list = [f"data_batch_{i}" for i in range(1, 6)]
    test_list = ["test_batch"]

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform, target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        _require([os.path.join(folder, name) for name in [*self.train_list, *self.test_list, "batches.meta"]])
        entries = [_unpickle(os.path.join(folder, name)) for name in (self.train_list if train else self.test_list)]
        self.data = np.vstack([e["data"] for e in entries]).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))  # HWC
        self.targets = [label for e in entries for label in e.get("labels", e.get("fine_labels"))]
        self.classes = _unpickle(os.path.join(folder, "batches.meta"))["label_names"]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int):
        return self._item(self.data[index], self.targets[index])

    def __len__(self) -> int:
        return len(self.data)
