"""GPT-OSS's fused MoE router: ttnn.experimental.topk_router_gpt.

    import device_sim as ttnn
    indices, weights = ttnn.experimental.topk_router_gpt(x, weight_tensor=w, bias_tensor=b, k=4, num_experts=128)

tt-metal's ttnn/cpp/ttnn/operations/experimental/topk_router_gpt/: [32, hidden] @ [hidden, 128] + a pre-broadcast
[32, 128] bias, the top k experts of each row and the softmax of their logits, on the 12 cores next to the DRAM banks
(device.get_optimal_dram_bank_to_logical_worker_assignment). Its checks are validate_on_program_cache_miss's
TT_FATALs, in their words.
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import device_inputs, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import router as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout, MemoryConfig, TensorMemoryLayout

_WHERE = "device_sim/ops/router.py"
_CORES_PER_GROUP = 3  # topk_router_gpt_program_factory.cpp: 4 groups of 3 cores, a group a 32-expert tile
_BATCH, _EXPERTS = 32, 128  # validate's hardcoded decode batch and expert count


def _k_padded(k: int) -> int:
    return -(-k // 8) * 8  # compute_output_specs: tt::round_up(k, 8)


def _route(input, weight_tensor, bias_tensor, k: int = 4, num_experts: int = _EXPERTS, **_):
    """(indices, weights), each [B, round_up(k, 8)]: the top k of bf16(x @ w + bias) in each row, largest first,
    and their softmax, zero past k. As the kernel sums: each group's three cores take a third of the K tiles (the
    first ones one more when they do not divide) in float32; the two senders pack theirs to bfloat16 (cb_local_out,
    Float16_b), the worker adds them and the bias to its own float32 partial and packs the logits to bfloat16."""
    x, w, b = input.float(), weight_tensor.float(), bias_tensor.float()
    tiles = x.shape[-1] // 32
    base, extra = divmod(tiles, _CORES_PER_GROUP)
    bounds = [0]
    for pos in range(_CORES_PER_GROUP):
        bounds.append(bounds[-1] + (base + (pos < extra)) * 32)
    partials = [x[:, lo:hi] @ w[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
    logits = (partials[2] + partials[0].bfloat16().float() + partials[1].bfloat16().float() + b).bfloat16().float()
    top, idx = torch.topk(logits, k, dim=-1)
    soft = torch.softmax(top, dim=-1).bfloat16()
    width = _k_padded(k)
    indices = torch.zeros(x.shape[0], width, dtype=torch.int32)
    weights = torch.zeros(x.shape[0], width, dtype=torch.bfloat16)
    indices[:, :k], weights[:, :k] = idx.int(), soft
    return indices, weights


def _validate(x: Tensor, w: Tensor, b: Tensor, k: int, num_experts: int) -> None:
    def need(ok: bool, condition: str, message: str) -> None:
        if not ok:
            raise tt_fatal(condition, message, _WHERE)

    need(1 <= k <= 32, "attrs.k >= 1 && attrs.k <= 32", f"topk_router_gpt requires k in range [1, 32], got {k}")
    need(num_experts == _EXPERTS, "attrs.num_experts == 128", "topk_router_gpt only supports num_experts=128 "
         f"(hardcoded 4-group architecture), got {num_experts}")
    for what, t in (("Input", x), ("Weight", w), ("Bias", b)):
        need(t.device() is not None, f"{what.lower()}.storage_type() == StorageType::DEVICE",
             f"{what} tensor must be on device, got storage_type StorageType::HOST")
        need(t.layout == Layout.TILE, f"{what.lower()}.layout() == Layout::TILE",
             f"{what} tensor must have TILE layout, got {t.layout}")
        need(t.dtype == DataType.BFLOAT16, f"{what.lower()}.dtype() == DataType::BFLOAT16",
             f"{what} tensor must have BFLOAT16 dtype, got {t.dtype}")
    xs, ws, bs = list(x.shape), list(w.shape), list(b.shape)
    need(len(xs) == 2, "input_shape.rank() == 2", f"Input tensor must be rank 2, got rank {len(xs)}")
    batch, hidden = xs
    need(batch == _BATCH, "B == 32", f"topk_router_gpt only supports batch_size=32 (hardcoded for decode mode), "
         f"got {batch}")
    need(hidden % 32 == 0, "hidden_dim % 32 == 0",
         f"Input hidden_dim must be divisible by 32 (tile size), got {hidden}")
    need(len(ws) == 2, "weight_shape.rank() == 2", f"Weight tensor must be rank 2, got rank {len(ws)}")
    need(ws[0] == hidden, "weight_shape[0] == hidden_dim",
         f"Weight tensor dim 0 must match input hidden_dim {hidden}, got {ws[0]}")
    need(ws[1] == num_experts, "weight_shape[1] == attrs.num_experts",
         f"Weight tensor dim 1 must match num_experts {num_experts}, got {ws[1]}")
    need(len(bs) == 2, "bias_shape.rank() == 2", f"Bias tensor must be rank 2, got rank {len(bs)}")
    need(bs[0] == batch, "bias_shape[0] == B", f"Bias tensor dim 0 must match batch size {batch}, got {bs[0]}")
    need(bs[1] == num_experts, "bias_shape[1] == attrs.num_experts",
         f"Bias tensor dim 1 must match num_experts {num_experts}, got {bs[1]}")


# Priced as "rows", a stream of the weight's K tile rows over the cores: a 32-row decode matmul is bound by reading the
# weight from DRAM (2880 x 128 bfloat16, 737 KB: 2.9 us at 258 GB/s), which "matmul"'s estimate, made from the
# output's shape ([32, 8] indices), would read a quarter of on one core.
@register_op("ttnn.experimental.topk_router_gpt", kind="rows", golden=_route)
def topk_router_gpt(input_tensor: Tensor, *, weight_tensor: Tensor, bias_tensor: Tensor, k: int = 4,
                    num_experts: int = _EXPERTS, op_name: str = OWN_NAME) -> tuple[Tensor, Tensor]:
    """The router of a 128-expert MoE for a decode batch of 32: (indices, weights), both ROW_MAJOR in L1,
    [32, round_up(k, 8)]: each row's top k experts by bf16(input @ weight + bias) as uint16, largest first, and the
    softmax of their logits as bfloat16; columns past k are 0.

    Args:
        input_tensor: [32, hidden] bfloat16 TILE, hidden a multiple of 32.
        weight_tensor: [hidden, 128] bfloat16 TILE.
        bias_tensor: [32, 128] bfloat16 TILE (the bias broadcast over the batch beforehand).
        k: how many experts each row keeps, 1 to 32.
        num_experts: 128, the only count the kernel has.

    >>> x = ttnn.from_torch(torch.zeros(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.zeros(64, 128), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.arange(128.0).expand(32, 128), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> indices, weights = ttnn.experimental.topk_router_gpt(x, weight_tensor=w, bias_tensor=b, k=4)
    >>> indices.shape, indices.dtype, indices.to_torch()[0].tolist()
    (Shape([32, 8]), DataType.UINT16, [127, 126, 125, 124, 0, 0, 0, 0])
    """
    k, num_experts = int(k), int(num_experts)
    _validate(input_tensor, weight_tensor, bias_tensor, k, num_experts)
    ins = device_inputs(op_name, input_tensor, weight_tensor, bias_tensor)
    indices, weights = _route(*(values(t, op_name) for t in ins), k=k, num_experts=num_experts)
    device = input_tensor.device()
    # compute_output_specs fixes both in L1, interleaved, whatever the context: recorded as an explicit config
    l1 = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)
    outs = (Tensor._create(indices, DataType.UINT16, Layout.ROW_MAJOR, device, l1, "argument"),
            Tensor._create(weights, DataType.BFLOAT16, Layout.ROW_MAJOR, device, l1, "argument"))
    device_work.launch_for(outs[0], True, device, programs.topk_router_gpt_program(input_tensor, k))
    return outs
