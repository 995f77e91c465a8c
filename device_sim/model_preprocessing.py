"""`ttnn.model_preprocessing`: a torch model's weights as the ttnn tensors a TT-NN model takes, with a disk cache.

    from ttnn.model_preprocessing import preprocess_model_parameters
    parameters = preprocess_model_parameters(initialize_model=lambda: MyModel(), device=device)
    parameters.encoder.layer[0].attention.query.weight       # a ttnn.Tensor, [in, out], on device

As in TT-NN 0.81: every module is walked; nn.Linear, nn.LayerNorm and nn.Embedding get the
default preprocessors below, other parameters become bfloat16 ttnn tensors as they are, and
a `custom_preprocessor(model, name[, ttnn_module_args, convert_to_ttnn])` that returns a
non-empty dict wins for its module. With `model_name=` and ttnn.CONFIG.enable_model_cache the
result is cached in ttnn.CONFIG.model_cache_path/<model_name> (with a version.txt, the git
hash by default); a cached model loads without initialize_model. Cached ttnn tensors are
device_sim's portable .bin files, torch tensors plain .pt files read with weights_only=True,
module args JSON (TT-NN pickles these; device_sim never unpickles).

Differences from TT-NN: `run_model` fills ttnn_module_args from torch forward hooks (input
shapes of Conv2d, ConvTranspose2d and MaxPool2d) instead of TT-NN's torch tracer, and they
stay plain args in the parameters (TT-NN 0.81 no longer builds modules from them). Logging
is paused while preprocessing, as TT-NN does, so weight conversion is not part of a report.
"""

from __future__ import annotations

import inspect
import json
import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import torch

from device_sim import config
from device_sim.compute_config import MathFidelity
from device_sim.ops.core import from_torch, to_device
from device_sim.serialization import dump_tensor, load_tensor
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout

logger = logging.getLogger("device_sim.model_preprocessing")


# -- one module's parameters ---------------------------------------------------------------------
def preprocess_linear_weight(weight: torch.Tensor, *, dtype: DataType, layout: Layout = Layout.TILE,
                             weights_mesh_mapper=None) -> Tensor:
    """torch.nn.Linear's [out, in] weight as the [in, out] host tensor that ttnn.linear multiplies by.

    `weights_mesh_mapper` (tt-metal a8c5af0f; Whisper's mesh preprocessor passes it) places it on a mesh's chips."""
    if weight.dim() != 2:
        raise ValueError(f"preprocess_linear_weight: weight shape {list(weight.shape)} must be [out, in]")
    return from_torch(weight.T.contiguous(), dtype=dtype, layout=layout, mesh_mapper=weights_mesh_mapper)


def preprocess_linear_bias(bias: torch.Tensor, *, dtype: DataType, layout: Layout = Layout.TILE,
                           weights_mesh_mapper=None) -> Tensor:
    """torch.nn.Linear's [out] bias as the [1, out] host tensor that ttnn.linear adds (`weights_mesh_mapper`: as
    preprocess_linear_weight's)."""
    return from_torch(bias.reshape(1, -1), dtype=dtype, layout=layout, mesh_mapper=weights_mesh_mapper)


def preprocess_layernorm_parameter(parameter: torch.Tensor, *, dtype: DataType,
                                   layout: Layout = Layout.TILE) -> Tensor:
    """A LayerNorm weight or bias [C] as the [1, C] host tensor ttnn.layer_norm takes."""
    return from_torch(parameter.reshape(1, -1), dtype=dtype, layout=layout)


def preprocess_embedding_weight(weight: torch.Tensor, *, dtype: DataType) -> Tensor:
    """An embedding table as a row-major host tensor, as ttnn.embedding takes it."""
    return from_torch(weight, dtype=dtype)


def fold_batch_norm2d_into_conv2d(conv: torch.nn.Conv2d, bn: torch.nn.BatchNorm2d):
    """(weight, bias) of one conv that computes bn(conv(x)) in eval mode: bn's scale folded into the weights."""
    if not bn.track_running_stats:
        raise RuntimeError("BatchNorm2d must have track_running_stats=True to be folded into Conv2d")
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    weight = conv.weight * scale[:, None, None, None]
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    return weight, (bias - bn.running_mean) * scale + bn.bias


# -- containers ----------------------------------------------------------------------------------
class ParameterDict(dict):
    """A dict whose keys are also attributes: `parameters.encoder.layer[0].weight`."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise _Missing(f"no parameter {name!r} here; the keys are: {', '.join(map(str, self)) or 'none'}") from None

    def __delattr__(self, name):
        del self[name]

    def __repr__(self) -> str:
        return _text(self, "")


class ParameterList(list):
    """The parameters of an nn.ModuleList, by index; `i in parameters` asks whether index i exists, as TT-NN's."""

    def __contains__(self, index) -> bool:
        return index < len(self)

    def __repr__(self) -> str:
        return _text(self, "")


class _Missing(KeyError, AttributeError):
    """A missing parameter: a KeyError as in TT-NN, and an AttributeError so hasattr() and getattr(..., d) work."""

    def __str__(self) -> str:
        return self.args[0]


class ModuleArgs(dict):
    """What a module needs besides its weights (shapes seen by run_model), with attribute access."""

    __getattr__ = ParameterDict.__getattr__


class Conv2dArgs(ModuleArgs):
    pass


class ConvTranspose2dArgs(ModuleArgs):
    pass


class MaxPool2dArgs(ModuleArgs):
    pass


_ARGS = {cls.__name__: cls for cls in (Conv2dArgs, ConvTranspose2dArgs, MaxPool2dArgs)}


def make_parameter_dict(dictionary) -> ParameterDict:
    if isinstance(dictionary, ParameterDict):
        return dictionary
    return ParameterDict({k: make_parameter_dict(v) if isinstance(v, dict) and not isinstance(v, ModuleArgs) else v
                          for k, v in dictionary.items()})


def _text(p, indent: str) -> str:
    inner = indent + "  "
    if isinstance(p, ParameterDict) and p:
        return "{\n" + ",\n".join(f"{inner}{k}: {_text(v, inner)}" for k, v in p.items()) + f"\n{indent}}}"
    if isinstance(p, ParameterList) and p:
        return "[\n" + ",\n".join(f"{inner}{_text(v, inner)}" for v in p) + f"\n{indent}]"
    if isinstance(p, (ParameterDict, ParameterList)):
        return "{}" if isinstance(p, dict) else "[]"
    if isinstance(p, Tensor):
        return f"ttnn.Tensor(shape={p.shape}, layout={p.layout}, dtype={p.dtype})"
    if isinstance(p, torch.Tensor):
        return f"torch.Tensor(shape={p.shape}, dtype={p.dtype})"
    return repr(p)


# -- walking a model -----------------------------------------------------------------------------
def default_preprocessor(model, name, ttnn_module_args) -> ParameterDict:
    parameters = {}
    if isinstance(model, torch.nn.Linear):
        parameters["weight"] = preprocess_linear_weight(model.weight, dtype=DataType.BFLOAT16)
        if model.bias is not None:
            parameters["bias"] = preprocess_linear_bias(model.bias, dtype=DataType.BFLOAT16)
    elif isinstance(model, torch.nn.LayerNorm):
        parameters["weight"] = preprocess_layernorm_parameter(model.weight, dtype=DataType.BFLOAT16)
        parameters["bias"] = preprocess_layernorm_parameter(model.bias, dtype=DataType.BFLOAT16)
    elif isinstance(model, torch.nn.Embedding):
        parameters["weight"] = preprocess_embedding_weight(model.weight, dtype=DataType.BFLOAT16)
    return make_parameter_dict(parameters)


# TT-NN's dtype for a parameter no preprocessor claims: integers keep a width, floats become bfloat16.
_DTYPE = {torch.uint8: DataType.UINT8, torch.int16: DataType.UINT16, torch.int32: DataType.INT32,
          torch.int64: DataType.UINT32, torch.bfloat16: DataType.BFLOAT16, torch.float32: DataType.BFLOAT16,
          torch.float64: DataType.BFLOAT16}


def _call_custom(custom_preprocessor, model, name, ttnn_module_args, convert_to_ttnn):
    params = list(inspect.signature(custom_preprocessor).parameters)
    if len(params) < 2:
        raise RuntimeError("Custom preprocessor must have at least two parameters: model and name")
    extra = {"ttnn_module_args": ttnn_module_args, "convert_to_ttnn": convert_to_ttnn}
    for p in params[2:]:
        if p not in extra:
            raise RuntimeError(f"Unsupported parameter: {p}; a custom preprocessor takes (model, name"
                               f"[, ttnn_module_args][, convert_to_ttnn])")
    return custom_preprocessor(model, name, **{p: extra[p] for p in params[2:]})


def convert_torch_model_to_ttnn_model(model, *, convert_to_ttnn, custom_preprocessor, name, ttnn_module_args):
    """The parameters of `model` and its children, nested as its modules are (TT-NN's walk)."""
    if isinstance(model, torch.nn.ModuleList):
        return ParameterList(
            convert_torch_model_to_ttnn_model(
                child, convert_to_ttnn=convert_to_ttnn, custom_preprocessor=custom_preprocessor,
                name=f"{name}.{i}" if name else f"{i}",
                ttnn_module_args=ttnn_module_args[i] if ttnn_module_args is not None else None)
            for i, child in enumerate(model.children()))
    if custom_preprocessor is not None:
        custom = _call_custom(custom_preprocessor, model, name, ttnn_module_args, convert_to_ttnn)
        if custom:
            return make_parameter_dict(custom)
    children = list(model.named_children())
    own = [(n, p) for n, p in model.named_parameters() if "." not in n]
    parameters = make_parameter_dict({})
    if convert_to_ttnn(model, name):
        converted = default_preprocessor(model, name, ttnn_module_args)
        if converted:
            if len(converted) != len(children) + len(own):
                raise RuntimeError(
                    "Not all children or parameters were converted using default_preprocessor_parameters!")
            return converted
        for n, p in own:
            if p.dtype not in _DTYPE:
                raise TypeError(f"parameter {name}.{n} has torch dtype {p.dtype}, which has no ttnn dtype; "
                                f"convert it in a custom_preprocessor")
            parameters[n] = from_torch(p, dtype=_DTYPE[p.dtype])
    elif isinstance(model, torch.nn.Linear):
        parameters = make_parameter_dict({"weight": model.weight.T.contiguous()})
        if model.bias is not None:
            parameters["bias"] = model.bias
    else:
        for n, p in own:
            parameters[n] = p
    for child_name, child in children:
        key = int(child_name) if child_name.isdigit() else child_name
        sub = convert_torch_model_to_ttnn_model(
            child, convert_to_ttnn=convert_to_ttnn, custom_preprocessor=custom_preprocessor,
            name=f"{name}.{key}" if name else child_name,
            ttnn_module_args=ttnn_module_args.get(key) if ttnn_module_args is not None else None)
        if sub:
            parameters[key] = sub
    return parameters


def infer_ttnn_module_args(*, model, run_model, device):
    """Conv2d / ConvTranspose2d / MaxPool2d args with the input shapes `run_model(model)` gives them, by module;
    any other module `run_model` called holds its own modules' args (an empty dict for a Linear), as in TT-NN."""
    if run_model is None:
        return None
    found: dict[str, ModuleArgs | None] = {}
    leaves = (torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.MaxPool2d)

    def hook(name):
        def record(module, inputs):
            # Any other module called gets an entry too (its own modules' args, or none), as TT-NN's tracer gives
            # every module it saw run: openpdn_mnist's preprocessing sets conv_args[key].module for each of them.
            if isinstance(module, leaves):
                found[name] = _module_args(module, tuple(inputs[0].shape), device)
            else:
                found.setdefault(name, None)
        return record

    handles = [m.register_forward_pre_hook(hook(n)) for n, m in model.named_modules() if n]
    try:
        with torch.no_grad():
            run_model(model)
    finally:
        for h in handles:
            h.remove()
    root = ParameterDict()
    for path, args in found.items():
        node = root
        *parents, leaf = [int(p) if p.isdigit() else p for p in path.split(".")]
        for p in parents:
            node = node.setdefault(p, ParameterDict())
        node[leaf] = args if args is not None else node.get(leaf, ParameterDict())
    return root


def _module_args(m, shape, device) -> ModuleArgs:
    # The keys and fixed values of TT-NN's infer_ttnn_module_args (tt-metal a8c5af0f model_preprocessing.py): model
    # code reads them back, e.g. openpdn_mnist's conv reads conv_blocking_and_parallelization_config_override.
    common = dict(batch_size=shape[0], input_height=shape[-2], input_width=shape[-1], dtype=DataType.BFLOAT16)
    if isinstance(m, torch.nn.MaxPool2d):
        return MaxPool2dArgs(kernel_size=m.kernel_size, stride=m.stride, padding=m.padding, dilation=m.dilation,
                             input_channels=shape[1], **common)
    conv = dict(in_channels=m.in_channels, out_channels=m.out_channels, kernel_size=m.kernel_size, stride=m.stride,
                padding=m.padding, dilation=m.dilation, groups=m.groups, padding_mode=m.padding_mode,
                math_fidelity=MathFidelity.HiFi4, weights_dtype=DataType.BFLOAT16, use_1d_systolic_array=True,
                enable_auto_formatting=False, conv_blocking_and_parallelization_config_override={}, device=device,
                **common)
    if isinstance(m, torch.nn.ConvTranspose2d):
        return ConvTranspose2dArgs(output_padding=m.output_padding, **conv)
    return Conv2dArgs(**conv)


def merge_ttnn_module_args_into_parameters(parameters: dict, ttnn_module_args: dict, path=()):
    if isinstance(ttnn_module_args, ModuleArgs):
        ttnn_module_args.pop("device", None)
        parameters["ttnn_module_args"] = ttnn_module_args
        return parameters
    for key in parameters:
        if key in ttnn_module_args:
            if isinstance(parameters[key], dict) and isinstance(ttnn_module_args[key], dict):
                merge_ttnn_module_args_into_parameters(parameters[key], ttnn_module_args[key], (*path, str(key)))
            elif isinstance(parameters[key], list) and isinstance(ttnn_module_args[key], dict):
                for i, element in enumerate(parameters[key]):
                    if i in ttnn_module_args[key]:
                        merge_ttnn_module_args_into_parameters(element, ttnn_module_args[key][i], (*path, str(key)))
    return parameters


# -- the entry points ----------------------------------------------------------------------------
def preprocess_model_parameters(*, model_name: str | None = None, version: str | None = None,
                                initialize_model: Callable[[], torch.nn.Module] | None = None,
                                convert_to_ttnn: Callable[[torch.nn.Module, str], bool] | None = None,
                                custom_preprocessor: Callable | None = None, device=None,
                                prefix: str = "") -> ParameterDict:
    """The parameters of the model `initialize_model()` makes, as ttnn tensors (on `device` if given).

    Args:
        model_name: names the on-disk cache (used when ttnn.CONFIG.enable_model_cache is true).
        version: the cached version to expect; the git hash of the working directory when None.
        initialize_model: makes the torch model; not needed when a valid cache exists.
        convert_to_ttnn: (module, name) -> whether to make ttnn tensors of its parameters (default: all).
        custom_preprocessor: (module, name[, ttnn_module_args][, convert_to_ttnn]) -> a dict of parameters.
        device: where to put the ttnn tensors; they stay on the host when None.
        prefix: the name of the model's root, put before each module's name.
    """
    return preprocess_model(model_name=model_name, version=version, initialize_model=initialize_model,
                            convert_to_ttnn=convert_to_ttnn, custom_preprocessor=custom_preprocessor, device=device,
                            prefix=prefix)


def preprocess_model(*, model_name: str | None = None, version: str | None = None,
                     initialize_model: Callable[[], torch.nn.Module] | None = None,
                     convert_to_ttnn: Callable | None = None, custom_preprocessor: Callable | None = None,
                     device=None, prefix: str = "", run_model: Callable | None = None,
                     reader_patterns_cache: dict | None = None) -> ParameterDict:
    """preprocess_model_parameters, plus `run_model(model)` to fill in ttnn_module_args (see the module doc)."""
    with config.manage_config("enable_logging", False), config.manage_config("enable_comparison_mode", False):
        return _preprocess(model_name, version, initialize_model, convert_to_ttnn or (lambda model, name: True),
                           custom_preprocessor, device, prefix, run_model)


def _preprocess(model_name, version, initialize_model, convert_to_ttnn, custom_preprocessor, device, prefix,
                run_model) -> ParameterDict:
    cfg = config.CONFIG
    if model_name is None or not cfg.enable_model_cache:
        if model_name is not None or cfg.enable_model_cache:
            logger.warning("ttnn: the model cache needs both model_name= and "
                           "TTNN_CONFIG_OVERRIDES='{\"enable_model_cache\": true}'")
        parameters = _build(initialize_model, run_model, convert_to_ttnn, custom_preprocessor, device, prefix)
    else:
        cache = cfg.model_cache_path / model_name.replace("/", "_")
        version_file = cache / "version.txt"
        version = git_hash() if version is None else version
        cached = version_file.read_text() if version_file.exists() else None
        if cache.exists() and cached == version:
            logger.debug("loading model weights from cache %s (version %s)", cache, version)
            parameters = _load_parameters(cache)
        else:
            if initialize_model is None:
                raise RuntimeError(f'Cached weights for the model {model_name} (version "{version}") don\'t exist '
                                   f"in {cache}; pass initialize_model= to make them")
            parameters = _build(initialize_model, run_model, convert_to_ttnn, custom_preprocessor, device, prefix)
            if cache.exists():
                shutil.rmtree(cache)
            _dump_parameters(cache, parameters)
            version_file.write_text(version)
    return move_to_device(parameters, device) if device is not None else parameters


def _build(initialize_model, run_model, convert_to_ttnn, custom_preprocessor, device, prefix) -> ParameterDict:
    if initialize_model is None:
        raise RuntimeError("preprocess_model_parameters needs initialize_model= (a function that makes the torch "
                           "model) unless a cached model is loaded by model_name=")
    model = initialize_model()
    if model.training:
        logger.warning("Putting the model in eval mode")
        model.eval()
    module_args = infer_ttnn_module_args(model=model, run_model=run_model, device=device)
    parameters = convert_torch_model_to_ttnn_model(model, convert_to_ttnn=convert_to_ttnn,
                                                   custom_preprocessor=custom_preprocessor, name=prefix or "",
                                                   ttnn_module_args=module_args)
    if module_args is not None:
        parameters = merge_ttnn_module_args_into_parameters(parameters, module_args)
    return make_parameter_dict(parameters)


def move_to_device(parameters, device):
    """Every ttnn tensor in `parameters` moved to `device` (torch tensors and args stay as they are)."""
    if isinstance(parameters, dict) and not isinstance(parameters, ModuleArgs):
        for k, v in list(parameters.items()):
            parameters[k] = move_to_device(v, device)
    elif isinstance(parameters, list):
        for i, v in enumerate(parameters):
            parameters[i] = move_to_device(v, device)
    elif isinstance(parameters, Tensor):
        return to_device(parameters, device)
    return parameters


def git_hash() -> str:
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], stderr=subprocess.DEVNULL,
                                       text=True).strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError("Couldn't get git hash! Run inside a git checkout, or pass version= to "
                           "preprocess_model_parameters") from e


# -- the cache on disk ---------------------------------------------------------------------------
_ARGS_SUFFIX = ".module_args.json"


def _dump_parameters(path: Path, parameters) -> None:
    path.mkdir(parents=True)
    for name, value in parameters.items():
        if isinstance(value, ModuleArgs):
            (path / f"{name}{_ARGS_SUFFIX}").write_text(json.dumps({"type": type(value).__name__,
                                                                     "args": _jsonable(value)}))
        elif isinstance(value, dict):
            _dump_parameters(path / str(name), value)
        elif isinstance(value, list):
            for i, element in enumerate(value):
                _dump_parameters(path / str(name) / str(i), element)
        elif isinstance(value, Tensor):
            dump_tensor(path / f"{name}.bin", value)
        elif isinstance(value, torch.Tensor):
            torch.save(value.detach().clone(), path / f"{name}.pt")
        else:
            raise RuntimeError(f"cannot cache parameter {name!r} of type {type(value).__name__}; "
                               f"a custom_preprocessor may return ttnn tensors, torch tensors and dicts of them")


def _jsonable(args: dict) -> dict:
    return {k: (v.name if isinstance(v, (DataType, MathFidelity)) else list(v) if isinstance(v, tuple) else v)
            for k, v in args.items() if k != "device"}


def _load_parameters(path: Path) -> ParameterDict:
    out = {}
    for p in sorted(path.iterdir()):
        if p.name == "version.txt":
            continue
        if p.name.endswith(_ARGS_SUFFIX):
            data = json.loads(p.read_text())
            args = {k: (DataType[v] if k == "dtype" or k == "weights_dtype" else MathFidelity[v] if k == "math_fidelity"
                        else tuple(v) if isinstance(v, list) else v) for k, v in data["args"].items()}
            out[_key(p.name[: -len(_ARGS_SUFFIX)])] = _ARGS[data["type"]](args)
        elif p.is_dir():
            sub = _load_parameters(p)
            if sub and all(isinstance(k, int) for k in sub):
                sub = ParameterList(sub[i] for i in sorted(sub))
            out[_key(p.name)] = sub
        elif p.suffix == ".bin":
            out[_key(p.stem)] = load_tensor(p)
        elif p.suffix == ".pt":
            out[_key(p.stem)] = torch.load(p, weights_only=True)
        else:
            raise RuntimeError(f"Unrecognized file extension: {p}; the model cache holds .bin, .pt and "
                               f"{_ARGS_SUFFIX} files. Delete {path} to rebuild it")
    return ParameterDict(out)


def _key(name: str):
    return int(name) if name.isdigit() else name
