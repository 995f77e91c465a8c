"""ttnn.model_preprocessing: a torch model's weights as ttnn parameters, TT-NN's walk, its cache on disk."""

import pytest
import torch

import device_sim as ttnn
from device_sim.model_preprocessing import (
    Conv2dArgs,
    ParameterDict,
    ParameterList,
    fold_batch_norm2d_into_conv2d,
    preprocess_model,
    preprocess_model_parameters,
)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(64, 32)
        self.norm = torch.nn.LayerNorm(32)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(100, 64)
        self.layers = torch.nn.ModuleList([Block(), Block()])
        self.scale = torch.nn.Parameter(torch.ones(32))
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)


@pytest.fixture
def cache(tmp_path):
    saved = ttnn.CONFIG.to_dict()
    ttnn.CONFIG.enable_model_cache = True
    ttnn.CONFIG.model_cache_path = tmp_path / "models"
    yield tmp_path / "models"
    ttnn.load_config_from_dictionary(saved)


def test_parameters_mirror_the_model_with_tt_nns_default_preprocessors(device):
    p = preprocess_model_parameters(initialize_model=Model, device=device)
    dense = p.layers[0].dense
    assert isinstance(p, ParameterDict) and isinstance(p.layers, ParameterList) and 1 in p.layers and 2 not in p.layers
    assert dense.weight.shape == (64, 32) and dense.bias.shape == (1, 32)  # [in, out] and [1, out], as ttnn.linear
    assert dense.weight.layout == ttnn.TILE and dense.weight.dtype == ttnn.bfloat16 and dense.weight.device() is device
    assert p.layers[1].norm.weight.shape == (1, 32)
    assert p.embed.weight.layout == ttnn.ROW_MAJOR and p.embed.weight.shape == (100, 64)
    assert p.scale.shape == (32,) and p.conv.weight.shape == (8, 3, 3, 3)  # no preprocessor: as it is, bfloat16
    with pytest.raises(AttributeError, match="no parameter 'dens' here; the keys are: dense, norm"):
        p.layers[0].dens  # noqa: B018
    with pytest.raises(KeyError):  # TT-NN's ParameterDict raises KeyError; device_sim's is both
        p.layers[0].dens  # noqa: B018


def test_a_preprocessed_linear_computes_what_torch_does(device):
    model = Model()
    p = preprocess_model_parameters(initialize_model=lambda: model, device=device)
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(1))
    layer = model.layers[0].dense
    got = ttnn.linear(ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device),
                      p.layers[0].dense.weight, bias=p.layers[0].dense.bias).to_torch().float()
    torch.testing.assert_close(got, layer(x).detach(), rtol=0.02, atol=0.05)


def test_a_custom_preprocessor_wins_for_its_modules_and_gets_tt_nns_arguments():
    seen = []

    def custom(model, name, convert_to_ttnn):
        seen.append(name)
        if isinstance(model, torch.nn.LayerNorm):
            return {"gamma": ttnn.from_torch(model.weight.reshape(1, -1), dtype=ttnn.float32)}
        return {}

    p = preprocess_model_parameters(initialize_model=Model, custom_preprocessor=custom, prefix="model")
    assert p.layers[0].norm.gamma.dtype == ttnn.float32 and "weight" not in p.layers[0].norm
    assert "model.layers.0.norm" in seen and "model.embed" in seen
    with pytest.raises(RuntimeError, match="Unsupported parameter: device"):
        preprocess_model_parameters(initialize_model=Model, custom_preprocessor=lambda model, name, device: {})


def test_modules_left_in_torch_keep_torch_tensors():
    p = preprocess_model_parameters(initialize_model=Model,
                                    convert_to_ttnn=lambda model, name: not name.startswith("layers"))
    assert isinstance(p.layers[0].dense.weight, torch.Tensor) and p.layers[0].dense.weight.shape == (64, 32)
    assert isinstance(p.embed.weight, ttnn.Tensor)


def test_the_cache_is_keyed_by_model_name_and_version(cache, device):
    first = preprocess_model_parameters(model_name="org/tiny", version="v1", initialize_model=Model)
    folder = cache / "org_tiny"
    assert (folder / "version.txt").read_text() == "v1"
    assert (folder / "layers" / "1" / "dense" / "weight.bin").is_file() and (folder / "scale.bin").is_file()
    again = preprocess_model_parameters(model_name="org/tiny", version="v1", device=device)  # no initialize_model
    assert isinstance(again.layers, ParameterList) and again.layers[1].dense.weight.device() is device
    torch.testing.assert_close(again.layers[1].dense.weight.to_torch(), first.layers[1].dense.weight.to_torch())
    with pytest.raises(RuntimeError, match=r'Cached weights for the model org/tiny \(version "v2"\) don\'t exist'):
        preprocess_model_parameters(model_name="org/tiny", version="v2")


def test_torch_tensors_and_module_args_survive_the_cache(cache):
    def build():
        return preprocess_model(model_name="conv", version="1", initialize_model=Model,
                                convert_to_ttnn=lambda model, name: name != "layers.0.dense",
                                run_model=lambda m: m.conv(torch.ones(2, 3, 16, 24)))
    made, loaded = build(), build()  # the second comes from the cache
    for p in (made, loaded):
        args = p.conv.ttnn_module_args
        assert isinstance(args, Conv2dArgs) and (args.batch_size, args.input_height, args.input_width) == (2, 16, 24)
        assert args.kernel_size == (3, 3) and args.dtype == ttnn.bfloat16 and "device" not in args
    assert isinstance(loaded.layers[0].dense.weight, torch.Tensor)
    torch.testing.assert_close(loaded.layers[0].dense.weight, made.layers[0].dense.weight)


def test_folding_batch_norm_into_a_conv_gives_the_same_output():
    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    bn.eval()
    weight, bias = fold_batch_norm2d_into_conv2d(conv, bn)
    x = torch.randn(1, 3, 10, 10)
    torch.testing.assert_close(torch.nn.functional.conv2d(x, weight, bias), bn(conv(x)), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="track_running_stats=True"):
        fold_batch_norm2d_into_conv2d(conv, torch.nn.BatchNorm2d(8, track_running_stats=False))
