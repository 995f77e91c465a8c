"""moreh's negative log-likelihood loss: ttnn.moreh_nll_loss, moreh_nll_loss_backward and
moreh_nll_loss_unreduced_backward (Python's ttnn.operations.moreh.nll_loss, ...).

    import device_sim as ttnn
    loss = ttnn.operations.moreh.nll_loss(log_probs, target, "mean", divisor_tensor=div, output_tensor=out)
    grad = ttnn.operations.moreh.nll_loss_backward(target, loss_grad, True, divisor_tensor=div, input_grad_tensor=g)

input [N, C, ...] holds log-probabilities, target [N, ...] int32 class ids (TILE), weight [C] bfloat16 per class. As
moreh_nll_loss.cpp composes it: step 1 writes each position's weight (0 at ignore_index), moreh_sum adds them into
divisor_tensor (a mean only); step 2 writes -input[n, target[n]] * weight (/ divisor for a mean), and a second
moreh_sum adds those into output_tensor ("none" stops at step 2: the loss a position). One recorded op, with the
four programs TT-NN launches. Sums in float32, rounded once to the output's dtype.
"""

from __future__ import annotations

import torch

from device_sim import device_work, dtypes
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import moreh as moreh_programs
from device_sim.programs import moreh_nll_loss as programs
from device_sim.registry import OWN_NAME, output_target, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig

_WHERE = "device_sim/ops/moreh_nll_loss.py"
_REDUCTIONS = ("mean", "sum", "none")


def _need(ok: bool, condition: str, message: str) -> None:
    if not ok:
        raise tt_fatal(condition, message, _WHERE)


def _check(name: str, t: Tensor | None, dtypes_: tuple) -> None:
    """The device operations' validate: on device, TILE, of the dtypes named."""
    if t is None:
        return
    _need(t.device() is not None, f"{name}.storage_type() == StorageType::DEVICE",
          "Operands to nll_loss need to be on device!")
    _need(t.layout == Layout.TILE, f"{name}.layout() == Layout::TILE", f"{name} to nll_loss must be tilized")
    _need(t.dtype in dtypes_, f"{name}.dtype()", f"Invalid {name} dtype {t.dtype}")


def _weights(target: torch.Tensor, weight: torch.Tensor | None, ignore_index: int) -> torch.Tensor:
    """Each position's class weight (1 without a weight tensor), 0 where the target is ignore_index."""
    t = target.long()
    w = torch.ones(t.shape) if weight is None else weight.float().reshape(-1)[t.clamp(0, weight.numel() - 1)]
    return w.masked_fill(t == ignore_index, 0.0)


def _picked(input: torch.Tensor, target: torch.Tensor, ignore_index: int) -> torch.Tensor:  # noqa: A002
    """input[n, target[n], ...] at each target position (0 where ignored)."""
    t = target.long()
    safe = t.masked_fill(t == ignore_index, 0).clamp(0, input.shape[1] - 1)
    return input.float().gather(1, safe.unsqueeze(1)).squeeze(1)


def _loss_golden(input, target, reduction, *_, weight_tensor=None, ignore_index=-100, **__):  # noqa: A002
    w = _weights(target, weight_tensor, ignore_index)
    loss = -_picked(input, target, ignore_index) * w
    if reduction == "none":
        return loss
    total = loss.sum() / w.sum() if reduction == "mean" else loss.sum()
    return total.reshape(1)


@register_op("ttnn.moreh_nll_loss", kind="rows", output_keyword="output_tensor", golden=_loss_golden)
def moreh_nll_loss(input_tensor: Tensor, target_tensor: Tensor, reduction: str, *, weight_tensor: Tensor | None = None,
                   divisor_tensor: Tensor | None = None, ignore_index: int = -100,
                   memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                   op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """torch.nn.NLLLoss: -input[n, target[n], ...] * weight[target[n]], summed ("sum"), summed over the weights'
    sum ("mean", which needs divisor_tensor and writes that sum into it) or one a position ("none", target's shape).
    The reductions give [1]; output_tensor= receives the result.

    >>> x = ttnn.from_torch(torch.tensor([[-1.0, -2.0], [-3.0, -4.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> t = ttnn.from_torch(torch.tensor([1, 0], dtype=torch.int32), ttnn.int32, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_nll_loss(x, t, "sum").to_torch().tolist()
    [5.0]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op_name}: reduction {reduction!r} is not one of {list(_REDUCTIONS)}")
    _check("target_tensor", target_tensor, (DataType.INT32,))
    _check("weight_tensor", weight_tensor, (DataType.BFLOAT16,))
    _check("input_tensor", input_tensor, (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32))
    if reduction == "mean":
        _need(divisor_tensor is not None, "divisor_tensor.has_value()", "Divisor tensor must not be empty")
    n = resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                fp32_dest_acc_en=False)
    ins = device_inputs(op_name, input_tensor, target_tensor, weight_tensor, divisor_tensor)
    x, target = values(input_tensor, op_name), values(target_tensor, op_name)
    if tuple(target.shape) != tuple(x.shape[:1]) + tuple(x.shape[2:]):
        raise ValueError(f"{op_name}: target {list(target.shape)} must be input {list(x.shape)} without its class "
                         f"dim 1")
    weight = values(weight_tensor, op_name) if weight_tensor is not None else None
    w = _weights(target, weight, ignore_index)
    divisor = None
    if reduction == "mean":  # step 1 and the first moreh_sum write the weights' sum into divisor_tensor
        divisor = dtypes.to_device_values(w.sum(), divisor_tensor.dtype).float()
        divisor_tensor._write(divisor.reshape(tuple(divisor_tensor.shape)))
    loss = -_picked(x, target, ignore_index) * w
    if divisor is not None:
        loss = loss / divisor
    r = loss if reduction == "none" else loss.sum().reshape(1)
    fresh = pending_output_target(op_name) is None
    out = output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    fp32 = n.fp32_dest_acc_en
    step2 = programs.step2_program(input_tensor, target_tensor, weight=weight is not None, divisor=divisor is not None,
                                   fp32_dest_acc_en=fp32)
    progs = [step2]
    if reduction != "none":
        # moreh_sum over every dim of step 1's and step 2's [N, ...] bfloat16 results (moreh_reduce_programs reads its
        # tensor for the device and the dtype only: the input's stands in; None for another dtype, not modelled)
        shape = (1,) * (2 - target.dim()) + tuple(target.shape)  # a [N] target is a [1, N] tile row
        steps = moreh_programs.reduce_steps(shape, tuple(range(len(shape))), False)[0]
        sums = moreh_programs.moreh_reduce_programs(input_tensor, steps, mean=False, fp32_dest_acc_en=fp32) or ()
        progs += sums
        if reduction == "mean":
            progs = [programs.step1_program(target_tensor, channels=x.shape[1], weight=weight is not None,
                                            fp32_dest_acc_en=fp32), *sums, *progs]
    device_work.launch_after(out, fresh, input_tensor, tuple(progs))
    return out


def _input_grad(op_name: str) -> Tensor:
    """The backward ops write into input_grad_tensor: TT-NN's compute_output_specs cannot make one (target and
    output_grad do not say C)."""
    target = output_target(op_name)
    if target is None:
        raise tt_fatal("input_grad_tensor.has_value()", f"{op_name.rsplit('.', 1)[-1]} not support creating output "
                       f"tensors.\n{op_name}: give input_grad_tensor= of the input's shape", _WHERE)
    _check("input_grad_tensor", target, (DataType.BFLOAT16,))
    return target


def _scatter_grad(shape, target: torch.Tensor, per_position: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """[N, C, ...] zeros with per_position[n, ...] at each target class (nothing where ignored)."""
    t = target.long()
    grad = torch.zeros(shape)
    safe = t.masked_fill(t == ignore_index, 0).clamp(0, shape[1] - 1)
    return grad.scatter(1, safe.unsqueeze(1), per_position.masked_fill(t == ignore_index, 0.0).unsqueeze(1))


def _backward_golden(target, output_grad, reduction_mean, *_, weight_tensor=None, input_grad_tensor=None,
                     divisor_tensor=None, ignore_index=-100, **__):
    w = _weights(target, weight_tensor, ignore_index)
    per = -w * output_grad.float().reshape(-1)[0]
    if reduction_mean:
        per = per / divisor_tensor.float().reshape(-1)[0]
    return _scatter_grad(input_grad_tensor.shape, target, per, ignore_index)


@register_op("ttnn.moreh_nll_loss_backward", kind="binary", output_keyword="input_grad_tensor",
             golden=_backward_golden)
def moreh_nll_loss_backward(target_tensor: Tensor, output_grad_tensor: Tensor, reduction_mean: bool, *,
                            weight_tensor: Tensor | None = None, divisor_tensor: Tensor | None = None,
                            ignore_index: int = -100, memory_config: MemoryConfig | None = None,
                            compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The gradient of moreh_nll_loss's "mean" (reduction_mean, with its divisor_tensor) or "sum" with respect to
    its input, written into input_grad_tensor= [N, C, ...]: -weight[target] * output_grad (/ divisor) at each
    position's target class, 0 elsewhere.

    >>> t = ttnn.from_torch(torch.tensor([1, 0], dtype=torch.int32), ttnn.int32, layout=ttnn.TILE, device=device)
    >>> dy = ttnn.from_torch(torch.tensor([2.0]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> g = ttnn.from_torch(torch.zeros(2, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_nll_loss_backward(t, dy, False, input_grad_tensor=g).to_torch().tolist()
    [[0.0, -2.0], [-2.0, 0.0]]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    _check("target_tensor", target_tensor, (DataType.INT32,))
    _check("output_grad_tensor", output_grad_tensor, (DataType.BFLOAT16,))
    _check("weight_tensor", weight_tensor, (DataType.BFLOAT16,))
    _check("divisor_tensor", divisor_tensor, (DataType.BFLOAT16,))
    if reduction_mean:
        _need(divisor_tensor is not None, "divisor_tensor.has_value()", "Divisor tensor must not be empty")
    n = resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                fp32_dest_acc_en=False)
    grad_t = _input_grad(op_name)
    device_inputs(op_name, target_tensor, output_grad_tensor, weight_tensor, divisor_tensor, grad_t)
    target = values(target_tensor, op_name)
    if tuple(target.shape) != tuple(grad_t.shape[:1]) + tuple(grad_t.shape[2:]):
        raise ValueError(f"{op_name}: target {list(target.shape)} must be input_grad_tensor {list(grad_t.shape)} "
                         f"without its class dim 1")
    weight = values(weight_tensor, op_name) if weight_tensor is not None else None
    grad = _backward_golden(target, values(output_grad_tensor, op_name), bool(reduction_mean), weight_tensor=weight,
                            input_grad_tensor=grad_t.value,
                            divisor_tensor=values(divisor_tensor, op_name) if reduction_mean else None,
                            ignore_index=ignore_index)
    grad_t._write(grad)
    device_work.launch_after(grad_t, False, grad_t, programs.backward_program(
        grad_t, channels=grad_t.shape[1], weight=weight is not None, divisor=bool(reduction_mean),
        fp32_dest_acc_en=n.fp32_dest_acc_en))
    return grad_t


def _unreduced_backward_golden(target, output_grad, *_, weight_tensor=None, input_grad_tensor=None,
                               ignore_index=-100, **__):
    per = -_weights(target, weight_tensor, ignore_index) * output_grad.float()
    return _scatter_grad(input_grad_tensor.shape, target, per, ignore_index)


@register_op("ttnn.moreh_nll_loss_unreduced_backward", kind="binary", output_keyword="input_grad_tensor",
             golden=_unreduced_backward_golden)
def moreh_nll_loss_unreduced_backward(target_tensor: Tensor, output_grad_tensor: Tensor, *,
                                      weight_tensor: Tensor | None = None, ignore_index: int = -100,
                                      memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                                      op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The gradient of moreh_nll_loss's "none" (output_grad of target's shape), written into input_grad_tensor=
    [N, C, ...]: -weight[target] * output_grad at each position's target class, 0 elsewhere.

    >>> t = ttnn.from_torch(torch.tensor([1, 0], dtype=torch.int32), ttnn.int32, layout=ttnn.TILE, device=device)
    >>> dy = ttnn.from_torch(torch.tensor([2.0, 3.0]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> g = ttnn.from_torch(torch.zeros(2, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_nll_loss_unreduced_backward(t, dy, input_grad_tensor=g).to_torch().tolist()
    [[0.0, -2.0], [-3.0, 0.0]]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    _check("target_tensor", target_tensor, (DataType.INT32,))
    _check("output_grad_tensor", output_grad_tensor, (DataType.BFLOAT16,))
    _check("weight_tensor", weight_tensor, (DataType.BFLOAT16,))
    resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
            fp32_dest_acc_en=False)
    grad_t = _input_grad(op_name)
    device_inputs(op_name, target_tensor, output_grad_tensor, weight_tensor, grad_t)
    target, dy = values(target_tensor, op_name), values(output_grad_tensor, op_name)
    if tuple(target.shape) != tuple(dy.shape) or tuple(target.shape) != tuple(grad_t.shape[:1]) + tuple(
            grad_t.shape[2:]):
        raise ValueError(f"{op_name}: target {list(target.shape)} and output_grad {list(dy.shape)} must be "
                         f"input_grad_tensor {list(grad_t.shape)} without its class dim 1")
    weight = values(weight_tensor, op_name) if weight_tensor is not None else None
    grad_t._write(_unreduced_backward_golden(target, dy, weight_tensor=weight, input_grad_tensor=grad_t.value,
                                             ignore_index=ignore_index))
    device_work.launch_after(grad_t, False, grad_t, programs.unreduced_backward_program(
        grad_t, channels=grad_t.shape[1], weight=weight is not None))
    return grad_t
