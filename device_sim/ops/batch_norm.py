"""ttnn.batch_norm: TT-NN 0.81's composite (normalization/batch_norm/batch_norm.cpp), its ops shown nested.

    import device_sim as ttnn
    x = ttnn.from_torch(torch.rand(2, 4, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    mean = ttnn.from_torch(torch.zeros(1, 4, 1, 1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    var = ttnn.from_torch(torch.ones(1, 4, 1, 1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    y = ttnn.batch_norm(x, running_mean=mean, running_var=var, training=True)   # mean and var updated in place

In training the batch statistics are ttnn ops, as TT-NN runs them: mean over H and W then over N (ttnn.mean
twice), the same of ttnn.square(x), and var = mean(x^2) - mean(x)^2 (ttnn.square, ttnn.subtract), so the
catastrophic cancellation of a bfloat16 variance is TT-NN's too. Then the RunningStatistics device operation
updates running_mean and running_var in place, (1 - momentum) * running + momentum * batch (the biased batch
variance, unlike torch's unbiased one), and BatchNormOperation writes (x - mean) / sqrt(var + eps) * weight +
bias. Out of training the running statistics are the mean and var. Statistics and weights are [1, C, 1, 1].
With a compute_kernel_config whose fp32_dest_acc_en is off, each kernel step rounds to bfloat16 (a 16-bit
destination register); otherwise the steps stay float32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim import device_work, numerics
from device_sim.ops.common import check_tt_nn_only, device_inputs, values
from device_sim.ops.common import output as make_output
from device_sim.ops.eltwise import square, subtract
from device_sim.ops.reduction import mean as ttnn_mean
from device_sim.program_config_checks import tt_fatal
from device_sim.programs.batch_norm import batch_norm_program, running_statistics_program
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import MemoryConfig

_WHERE = "device_sim/ops/batch_norm.py"


def _channels(t):
    return None if t is None else t.reshape(-1).clone()


def _batch_norm_golden(input, running_mean=None, running_var=None, training=False, eps=1e-05,  # noqa: A002
                       momentum=0.1, weight=None, bias=None, *_, **__):
    return F.batch_norm(input.float(), _channels(running_mean), _channels(running_var), _channels(weight),
                        _channels(bias), training, momentum, eps)


def _check(x: Tensor, running_mean, running_var, weight, bias, out) -> None:
    """batch_norm.cpp's checks, in its words."""
    rank = len(x.shape)
    if rank < 4:
        raise tt_fatal("input.logical_shape().rank() >= 4", f"batch_norm not supported for tensors with rank < 4. "
                                                            f"(rank={rank})", where=_WHERE)
    if out is not None and out.dtype != x.dtype:
        raise tt_fatal("output->dtype() == input.dtype()", f"batch_norm: output dtype ({out.dtype!r}) must match "
                                                           f"input dtype ({x.dtype!r})", where=_WHERE)
    params = [(n, t) for n, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                                  ("bias", bias)) if t is not None]
    for name, t in params:
        if t.dtype != params[0][1].dtype:
            first = params[0][1].dtype
            raise tt_fatal("t->dtype() == param_dtype.value()",
                           f"batch_norm: {name} dtype ({t.dtype!r}) must match "
                           f"other parameter tensors dtype ({first!r})", where=_WHERE)


def _rounding(x: Tensor, params, config):
    """What each kernel step's result goes through: with a compute_kernel_config (numerics.emulating) whose
    fp32_dest_acc_en is off, bfloat16 (a 16-bit destination register, and the FPU kernels' bfloat16 intermediate
    CBs; float32 operands are unpacked to 16 bits too); otherwise float32."""
    if not numerics.emulating(config) or getattr(config, "fp32_dest_acc_en", False):
        return lambda v: v
    return lambda v: numerics.to_bf16(v) if isinstance(v, torch.Tensor) else float(numerics.to_bf16(torch.tensor(v)))


@register_op("ttnn.batch_norm", kind="norm", output_keyword="output", golden=_batch_norm_golden)
def batch_norm(input: Tensor, *, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa: A002
               training: bool = False, eps: float = 1e-05, momentum: float = 0.1, weight: Tensor | None = None,
               bias: Tensor | None = None, output: Tensor | None = None, memory_config: MemoryConfig | None = None,
               compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Batch normalization of an [N, C, H, W] input over N, H and W, per channel (TT-NN's keywords and defaults).

    Args:
        running_mean, running_var: [1, C, 1, 1]; the statistics out of training (both required there), updated
            in place in training.
        training: normalize by the batch's own statistics (and update the running ones).
        eps, momentum: as torch's batch_norm.
        weight, bias: [1, C, 1, 1] scale and shift; None for none.
        output: a tensor of the input's dtype to write the result into (the registry handles it).

    >>> x = ttnn.from_torch(torch.arange(8.0).reshape(1, 2, 2, 2), layout=ttnn.TILE, device=device)
    >>> mean = ttnn.from_torch(torch.tensor([1.5, 5.5]).reshape(1, 2, 1, 1), layout=ttnn.TILE, device=device)
    >>> var = ttnn.from_torch(torch.ones(1, 2, 1, 1), layout=ttnn.TILE, device=device)
    >>> ttnn.batch_norm(x, running_mean=mean, running_var=var, eps=0.0).to_torch()[0, :, 0]
    tensor([[-1.5000, -0.5000],
            [-1.5000, -0.5000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    target = pending_output_target(op_name)  # output=, which the registry takes out of the call
    _check(input, running_mean, running_var, weight, bias, target)
    ins = device_inputs(op_name, input, running_mean, running_var, weight, bias)
    r = _rounding(input, (running_mean, running_var, weight, bias), compute_kernel_config)
    if training:
        def mean_nhw(t):  # batch_norm.cpp's mean_NHW: over H and W, then over N
            hw = ttnn_mean(t, [2, 3], True, memory_config=memory_config, compute_kernel_config=compute_kernel_config)
            return ttnn_mean(hw, 0, True, memory_config=memory_config, compute_kernel_config=compute_kernel_config)

        batch_mean = mean_nhw(input)
        mean_sq = mean_nhw(square(input, memory_config=memory_config))
        batch_var = subtract(mean_sq, square(batch_mean, memory_config=memory_config), memory_config=memory_config)
        bm, bv = values(batch_mean).float(), values(batch_var).float()
        for stat, batch in ((running_mean, bm), (running_var, bv)):
            if stat is not None:  # running_statistics_kernel.cpp: (1 - momentum) * old + momentum * batch
                old, batch = values(stat).float(), batch.reshape(values(stat).shape)
                stat._write(r(r(r(1 - momentum) * old) + r(momentum * batch)))
        if running_mean is not None or running_var is not None:
            device_work.launch_after(running_mean or running_var, False, batch_mean,
                                     running_statistics_program(batch_mean, batch_var, running_mean, running_var))
    else:
        if running_mean is None or running_var is None:
            raise tt_fatal("(running_mean.has_value() && running_var.has_value())",
                           "running_mean and running_var must be defined in evaluation mode", where=_WHERE)
        batch_mean, batch_var = running_mean, running_var
        bm, bv = values(batch_mean).float(), values(batch_var).float()
    # batch_norm_kernel.cpp: den = 1/sqrt(var + eps) into c_7, (x - mean) into c_8, times den, times weight,
    # plus bias, each step through an intermediate CB
    y = r(r(values(input).float() - bm) * r(torch.rsqrt(r(bv + eps))))
    if weight is not None:
        y = r(y * values(weight).float())
    if bias is not None:
        y = r(y + values(bias).float())
    out = make_output(y, input, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, target is None, input,
                             batch_norm_program(input, batch_mean, batch_var, weight, bias, out.dtype))
    return out
