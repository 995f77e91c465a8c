"""The torchvision stand-in that peer/models.py puts on the tutorials' path (peer/stand_ins/torchvision), and the
MNIST/CIFAR-10 files it lays out, against values worked out by hand from the formats. No tt-metal checkout needed.

    .venv/bin/python -m pytest tests/test_torchvision_stand_in.py

Imported as peer.stand_ins.torchvision, so no `torchvision` module appears in this process for other tests to see.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from PIL import Image

from peer import models
from peer.stand_ins import torchvision
from peer.stand_ins.torchvision import transforms
from peer.stand_ins.torchvision.datasets import CIFAR10, MNIST

# The tutorials' own transforms (ttnn_mlp_inference_mnist, ttnn_simplecnn_inference).
MNIST_TRANSFORM = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
CIFAR_TRANSFORM = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])


def write_idx(path, magic: int, sizes: list[int], body: bytes) -> None:
    path.write_bytes(b"".join(v.to_bytes(4, "big") for v in (magic, *sizes)) + body)


def test_mnist_reads_hand_written_idx_files_as_pil_images_and_int_labels(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    pixels = bytearray(2 * 28 * 28)
    pixels[0], pixels[1], pixels[28] = 255, 51, 102  # image 0: (0,0), (0,1), (1,0)
    for split in ("train", "t10k"):
        write_idx(raw / f"{split}-images-idx3-ubyte", 2051, [2, 28, 28], bytes(pixels))
        write_idx(raw / f"{split}-labels-idx1-ubyte", 2049, [2], bytes([7, 3]))

    plain = MNIST(root=str(tmp_path), train=False, download=True)
    image, label = plain[0]
    assert isinstance(image, Image.Image) and image.mode == "L" and image.size == (28, 28)
    assert (image.getpixel((0, 0)), image.getpixel((1, 0)), image.getpixel((0, 1))) == (255, 51, 102)
    assert type(label) is int and (label, plain[1][1], len(plain)) == (7, 3, 2)

    x, _ = MNIST(root=str(tmp_path), train=False, download=True, transform=MNIST_TRANSFORM)[0]
    # ToTensor: /255; Normalize(0.5, 0.5): (v - 0.5) / 0.5. 255 -> 1, 51 -> -0.6, 102 -> -0.2, 0 -> -1.
    assert x.shape == (1, 28, 28) and x.dtype == torch.float32
    assert x[0, 0, :2].tolist() == pytest.approx([1.0, -0.6]) and x[0, 1, 0].item() == pytest.approx(-0.2)
    assert x[0, 27, 27].item() == -1.0


def test_a_missing_dataset_file_is_one_error_naming_it_even_with_download_true(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    write_idx(raw / "t10k-images-idx3-ubyte", 2051, [1, 28, 28], bytes(784))
    with pytest.raises(RuntimeError, match=r"train-images-idx3-ubyte is missing.* does not download"):
        MNIST(root=str(tmp_path), train=False, download=True)
    with pytest.raises(RuntimeError, match=r"cifar-10-batches-py/data_batch_1 is missing"):
        CIFAR10(root=str(tmp_path), train=False, download=True)


def test_an_idx_file_whose_header_disagrees_with_its_body_is_refused(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for split in ("train", "t10k"):
        write_idx(raw / f"{split}-images-idx3-ubyte", 2051, [2, 28, 28], bytes(784))  # one image, header says 2
        write_idx(raw / f"{split}-labels-idx1-ubyte", 2049, [2], bytes(2))
    with pytest.raises(RuntimeError, match=r"784 bytes after the header, the header says \[2, 28, 28\]"):
        MNIST(root=str(tmp_path), train=False)


def test_the_laid_out_mnist_has_the_real_headers_and_loads_through_a_dataloader(tmp_path):
    models.make_mnist(tmp_path)
    raw = tmp_path / "MNIST" / "raw"
    n = models.IMAGES_A_FILE
    images = (raw / "t10k-images-idx3-ubyte").read_bytes()
    labels = (raw / "t10k-labels-idx1-ubyte").read_bytes()
    assert [int.from_bytes(images[i:i + 4], "big") for i in range(0, 16, 4)] == [2051, n, 28, 28]
    assert len(images) == 16 + n * 784
    assert [int.from_bytes(labels[i:i + 4], "big") for i in range(0, 8, 4)] == [2049, n] and len(labels) == 8 + n

    testset = MNIST(root=str(tmp_path), train=False, download=True, transform=MNIST_TRANSFORM)
    image, label = next(iter(torch.utils.data.DataLoader(testset, batch_size=1, shuffle=False)))
    assert image.shape == (1, 1, 28, 28) and label.tolist() == [labels[8]]
    assert image[0, 0, 0, 0].item() == pytest.approx((images[16] / 255 - 0.5) / 0.5)


def test_the_laid_out_cifar10_rows_are_r_g_b_planes_read_back_as_rgb_images(tmp_path):
    models.make_cifar10(tmp_path)
    with open(tmp_path / "cifar-10-batches-py" / "test_batch", "rb") as f:
        batch = pickle.load(f, encoding="latin1")  # our own file, just written
    row, first_label = batch["data"][0], batch["labels"][0]

    plain = CIFAR10(root=str(tmp_path), train=False, download=True)
    image, label = plain[0]
    assert isinstance(image, Image.Image) and image.mode == "RGB" and image.size == (32, 32)
    # Pixel (x=1, y=0) is element 1 of each 1024-byte plane; (x=0, y=1) is element 32.
    assert image.getpixel((1, 0)) == (row[1], row[1024 + 1], row[2048 + 1])
    assert image.getpixel((0, 1)) == (row[32], row[1024 + 32], row[2048 + 32])
    assert type(label) is int and label == first_label and len(plain) == models.IMAGES_A_FILE
    assert plain.classes[3] == "cat" and plain.class_to_idx["truck"] == 9
    assert len(CIFAR10(root=str(tmp_path), train=True)) == 5 * models.IMAGES_A_FILE

    x, _ = CIFAR10(root=str(tmp_path), train=False, transform=CIFAR_TRANSFORM)[0]
    assert x.shape == (3, 32, 32)
    assert x[:, 0, 1].tolist() == pytest.approx([(v / 255 - 0.5) / 0.5 for v in (row[1], row[1025], row[2049])])


def test_a_cifar10_batch_holding_anything_but_arrays_is_refused_before_it_runs(tmp_path):
    models.make_cifar10(tmp_path)
    # A global reference to a callable: a real pickle would look it up; the stand-in refuses to.
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(pickle.dumps({"data": print, "labels": []}))
    with pytest.raises(pickle.UnpicklingError, match=r"builtins\.print in a CIFAR-10 batch"):
        CIFAR10(root=str(tmp_path), train=False)


def test_laying_out_leaves_a_folder_that_already_holds_data_alone(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "test_batch").write_bytes(b"real")
    models.make_cifar10(tmp_path)
    assert [p.name for p in folder.iterdir()] == ["test_batch"] and (folder / "test_batch").read_bytes() == b"real"


def test_resize_matches_the_smaller_edge_and_truncates_the_longer_as_torchvision(tmp_path):
    img = Image.fromarray(np.arange(2 * 5, dtype=np.uint8).reshape(2, 5))  # w 5, h 2
    out = transforms.Resize(4, interpolation=transforms.InterpolationMode.BICUBIC)(img)
    assert out.size == (10, 4)  # h 2 -> 4, w int(4 * 5 / 2) = 10
    assert np.array_equal(np.asarray(out), np.asarray(img.resize((10, 4), Image.BICUBIC)))
    assert transforms.Resize((3, 7))(img).size == (7, 3)  # (h, w)
    assert transforms.Resize(2)(img) is img  # already that size


def test_center_crop_rounds_the_offset_and_pads_a_small_image_with_zeros():
    img = Image.fromarray(np.arange(4 * 8, dtype=np.uint8).reshape(4, 8))  # w 8, h 4
    crop = np.asarray(transforms.CenterCrop(3)(img))
    # top int(round(0.5)) = 0, left int(round(2.5)) = 2 (Python rounds half to even)
    assert np.array_equal(crop, np.arange(32, dtype=np.uint8).reshape(4, 8)[0:3, 2:5])

    small = Image.fromarray(np.full((3, 3), 9, np.uint8))
    padded = np.asarray(transforms.CenterCrop((4, 6))(small))
    # left (6-3)//2 = 1 column of zeros, right 2; top (4-3)//2 = 0 rows, bottom 1
    want = np.zeros((4, 6), np.uint8)
    want[0:3, 1:4] = 9
    assert np.array_equal(padded, want)


def test_clip_preprocessing_gives_a_normalized_224_square():
    # ttnn_clip_zero_shot_classification's preprocess_image, on a 300x200 RGB image of one colour.
    img = Image.new("RGB", (300, 200), (255, 0, 128))
    mean, std = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
    x = transforms.Compose([transforms.Resize(224, interpolation=transforms.InterpolationMode.BICUBIC),
                            transforms.CenterCrop(224), lambda im: im.convert("RGB"), transforms.ToTensor(),
                            transforms.Normalize(mean, std)])(img)
    assert x.shape == (3, 224, 224)
    assert x[:, 100, 100].tolist() == pytest.approx([(v / 255 - m) / s for v, m, s in zip((255, 0, 128), mean, std)])


def test_to_tensor_takes_numpy_arrays_and_normalize_refuses_integer_tensors():
    x = transforms.ToTensor()(np.full((2, 3), 255, np.uint8))
    assert x.shape == (1, 2, 3) and bool((x == 1.0).all())
    with pytest.raises(TypeError, match="float tensor"):
        transforms.Normalize((0.5,), (0.5,))(torch.zeros(1, 2, 2, dtype=torch.uint8))


def test_anything_the_runs_do_not_call_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match=r"no torchvision\.ops"):
        torchvision.ops  # noqa: B018


def test_the_clip_stand_in_tokenizer_gives_byte_tokens_between_the_real_special_ids(tmp_path):
    transformers = pytest.importorskip("transformers")  # installed by make peer-models, not a project dependency
    models.write_clip_tokenizer(tmp_path)
    tokenizer = transformers.CLIPTokenizer.from_pretrained(tmp_path)
    ids = tokenizer(["a dog"], padding="max_length", max_length=77, return_tensors="pt")["input_ids"]
    # bytes_to_unicode lists "!".."~" first, so byte b is id b - 33 and the word-final "a</w>" is 256 + 97 - 33.
    assert ids[0, :6].tolist() == [49406, 256 + 64, 100 - 33, 111 - 33, 256 + 103 - 33, 49407]
    assert ids.shape == (1, 77) and int(ids[0].argmax()) == 5  # the tutorial's end-of-text index
