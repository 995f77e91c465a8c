"""moreh's group norm backward: ttnn.moreh_group_norm_backward (Python's ttnn.operations.moreh.group_norm_backward).

    import device_sim as ttnn
    dx, dgamma, dbeta = ttnn.operations.moreh.group_norm_backward(dy, x, mean, rstd, num_groups,
                                                                   are_required_outputs=(True, True, True), gamma=g)

x and dy are [N, C, H, W]; mean and rstd [1, 1, N, groups] (the forward's, as given: not recomputed), gamma [1, 1, 1,
C]. As moreh_group_norm_backward.cpp: the input gradient is one device operation, the gamma and beta gradients
another; each asked-for output is written into its tensor when given (input_grad=, gamma_grad=, beta_grad=). In
float32, rounded once to each output's dtype.
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.programs import moreh_group_norm_backward as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor


def _grads(dy, x, mean, rstd, num_groups: int, gamma=None):
    """(dx, dgamma [1, 1, 1, C], dbeta [1, 1, 1, C]) of group norm at x, from the forward's mean and rstd."""
    n, c = x.shape[:2]
    xg = x.float().reshape(n, num_groups, -1)
    m, r = mean.float().reshape(n, num_groups, 1), rstd.float().reshape(n, num_groups, 1)
    xhat = ((xg - m) * r).reshape(x.shape)
    g = gamma.float().reshape(1, c, 1, 1) if gamma is not None else torch.ones(1, c, 1, 1)
    dyg = (dy.float() * g).reshape(n, num_groups, -1)
    xh = xhat.reshape(n, num_groups, -1)
    dx = r * (dyg - dyg.mean(-1, keepdim=True) - xh * (dyg * xh).mean(-1, keepdim=True))
    dgamma = (dy.float() * xhat).sum((0, 2, 3)).reshape(1, 1, 1, c)
    dbeta = dy.float().sum((0, 2, 3)).reshape(1, 1, 1, c)
    return dx.reshape(x.shape), dgamma, dbeta


def _golden(output_grad, input, mean, rstd, num_groups, *_, are_required_outputs=(True, False, False), gamma=None,
            **__):  # noqa: A002
    return [g if need else None for g, need in zip(_grads(output_grad, input, mean, rstd, num_groups, gamma),
                                                   are_required_outputs)]


@register_op("ttnn.moreh_group_norm_backward", kind="norm", golden=_golden)
def moreh_group_norm_backward(output_grad: Tensor, input: Tensor, mean: Tensor, rstd: Tensor,  # noqa: A002
                              num_groups: int, *, are_required_outputs=(True, False, False),
                              gamma: Tensor | None = None, input_grad: Tensor | None = None,
                              gamma_grad: Tensor | None = None, beta_grad: Tensor | None = None,
                              input_grad_memory_config=None, gamma_grad_memory_config=None,
                              beta_grad_memory_config=None, compute_kernel_config=None,
                              op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """[input_grad, gamma_grad, beta_grad] of a group norm, each None unless are_required_outputs asks for it.

    >>> x = ttnn.from_torch(torch.arange(8.0).reshape(1, 2, 2, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> dy = ttnn.from_torch(torch.ones(1, 2, 2, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> mean = ttnn.from_torch(torch.tensor([[[[3.5]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> rstd = ttnn.from_torch(torch.tensor([[[[0.5]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> dx, dg, db = ttnn.moreh_group_norm_backward(dy, x, mean, rstd, 1, are_required_outputs=(True, True, True))
    >>> db.to_torch().reshape(-1).tolist(), dx.to_torch().abs().max().item()
    ([4.0, 4.0], 0.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    need = [bool(b) for b in are_required_outputs]
    if len(need) != 3:
        raise ValueError(f"{op_name}: are_required_outputs {list(are_required_outputs)} must be three bools "
                         f"(input_grad, gamma_grad, beta_grad)")
    x = values(input, op_name)
    if x.dim() != 4 or x.shape[1] % int(num_groups):
        raise ValueError(f"{op_name}: input {list(x.shape)} must be [N, C, H, W] with C a multiple of num_groups "
                         f"({num_groups})")
    ins = device_inputs(op_name, output_grad, input, mean, rstd, gamma)
    grads = _grads(values(output_grad, op_name), x, values(mean, op_name), values(rstd, op_name), int(num_groups),
                   values(gamma, op_name) if gamma is not None else None)
    outs = []
    for wanted, value, given, cfg in zip(need, grads, (input_grad, gamma_grad, beta_grad),
                                         (input_grad_memory_config, gamma_grad_memory_config,
                                          beta_grad_memory_config)):
        if not wanted:
            outs.append(None)
        elif given is not None:
            given._write(value.reshape(tuple(given.shape)))
            outs.append(given)
        else:
            outs.append(output(value, output_grad, ins, op_name=op_name, memory_config=cfg))
    if need[0]:
        device_work.launch_after(outs[0], input_grad is None, output_grad,
                                 programs.input_grad_program(output_grad, num_groups=int(num_groups),
                                                             gamma=gamma is not None))
    if need[1] or need[2]:
        first = outs[1] if need[1] else outs[2]
        device_work.launch_after(first, (gamma_grad if need[1] else beta_grad) is None, output_grad,
                                 programs.gamma_beta_grad_program(output_grad, gamma_grad=need[1],
                                                                  beta_grad=need[2]))
    return outs
