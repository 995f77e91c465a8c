"""ttnn.sampling: one token a user, drawn from the top-k, top-p of 32 users' logits, and the cores' generators.

TT-NN's SamplingDeviceOperation (tt-metal's ttnn/cpp/ttnn/operations/reduction/sampling/) runs one user a core. Its
compute kernel sorts the user's values for the top 32, masks those past k, multiplies by temp (1/T), and takes their
softmax in bfloat16; its writer keeps the smallest prefix whose probability passes p (in float32), and walks that
prefix's renormalised cumulative sum to the first that passes the core's random number (one bfloat16 of a random
tile). The core's generator is seeded by `seed=` (any but 0) or by ttnn.manual_seed, and otherwise goes on from where
it was, so two calls without a seed differ and two with one agree.
"""

from __future__ import annotations

import torch

from device_sim import device_work, numerics
from device_sim.ops.common import device_inputs, output, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs.reduction import sampling_program
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, TensorMemoryLayout

_WHERE = "device_sim/ops/sampling.py"
USERS = 32  # SamplingDeviceOperation's TT_FATAL: N * C * H == 32, one user a core
_RANDOM_TILE = 32 * 32  # rand_tile fills a tile a call; the writer reads its first value


def core_generator(chip, user: int) -> torch.Generator:
    """The random number generator of core `user` of `chip`; until a seed reaches it, one seeded by the core's index
    (a fixed power-up state: the model's own torch random numbers are left alone)."""
    g = chip.core_generators.get(user)
    if g is None:
        g = chip.core_generators[user] = torch.Generator().manual_seed(user)
    return g


_KEEP_STATE = 2**32 - 1  # UINT32_MAX: manual_seed's kernels skip rand_tile_init (manual_seed_receive_all_data.cpp)


def seed_cores(chip, seeds: dict[int, int]) -> None:
    """Seed cores {user: seed} of `chip`, as ManualSeedDeviceOperation's rand_tile_init does; UINT32_MAX leaves a
    core's state as it is."""
    for user, seed in seeds.items():
        if int(seed) != _KEEP_STATE:
            chip.core_generators[user] = torch.Generator().manual_seed(int(seed))


def _random_number(g: torch.Generator) -> float:
    """The first value of a random tile in [0, 1) as the SFPU writes it, in bfloat16 (cut, so never 1.0)."""
    first = torch.rand(_RANDOM_TILE, generator=g)[:1]
    return float((first.view(torch.int32) & -65536).view(torch.float32))  # the low 16 bits dropped


def _sample_user(v: torch.Tensor, ids: torch.Tensor, k: int, p: float, temp: float, r: float) -> int:
    """One user's token: v its W values (bfloat16 as float32), ids its W indices."""
    # the kernel's top_k keeps 32, sorted large to small, a tie to the lower index (test_sampling.py's top-1 check
    # holds it to torch's argmax of the float32 logits, which bfloat16 ties at seeds 11 and 123)
    top, where = (t[:USERS] for t in torch.sort(v, descending=True, stable=True))
    x = torch.where(torch.arange(USERS) < k, top, torch.tensor(float("-inf")))  # the top-k mask, added
    x = numerics.to_bf16(x * temp)
    e = numerics.to_bf16(torch.exp(x - x.max()))  # softmax: exp of the row less its max, times 1 / sum
    probs = numerics.to_bf16(e * numerics.to_bf16(1.0 / numerics.to_bf16(e.sum())))[:k].tolist()
    kept, mass = k, 0.0
    for i, q in enumerate(probs):  # top-p in float32: the shortest prefix whose mass passes p
        mass += q
        if mass > p:
            kept = i + 1
            break
    chosen, running = 0, 0.0
    for i in range(kept):  # the first whose renormalised cumulative sum passes the random number
        running += probs[i] / mass
        if running > r:
            chosen = i
            break
    return int(ids[where[chosen]])


def _check(values_t: Tensor, indices: Tensor, k: Tensor, p: Tensor, temp: Tensor, sub_core_grids,
           out: Tensor | None) -> None:
    """SamplingDeviceOperation::validate_on_program_cache_miss, in its order and words."""
    shape = tuple(values_t.shape)
    users = shape[0] * shape[1] * shape[2] if len(shape) == 4 else None
    interleaved = TensorMemoryLayout.INTERLEAVED
    checks = (
        (values_t.memory_config().memory_layout == interleaved, "input_values.memory_layout() == INTERLEAVED",
         "Only INTERLEAVED memory layout is supported for inputs!"),
        (values_t.dtype == DataType.BFLOAT16, "input_values.dtype() == DataType::BFLOAT16",
         "Only BFLOAT16 is supported for inputs!"),
        (values_t.layout == Layout.TILE, "input_values.layout() == Layout::TILE",
         "Only TILE_LAYOUT is supported for inputs!"),
        (indices.memory_config().memory_layout == interleaved, "input_indices.memory_layout() == INTERLEAVED",
         "Only INTERLEAVED memory layout is supported for inputs!"),
        (indices.dtype in (DataType.UINT32, DataType.INT32), "input_indices.dtype() == UINT32 || INT32",
         "Only UINT32 & INT32 dtypes are supported for input indices!"),
        (indices.layout == Layout.ROW_MAJOR, "input_indices.layout() == Layout::ROW_MAJOR",
         "Only ROW_MAJOR is supported for input indices!"),
        (tuple(indices.shape) == shape, "input_indices.logical_shape() == input_values.logical_shape()",
         "Input values and indices must have the same shape!"),
        (users == USERS, "input_shape[0] * input_shape[1] * input_shape[2] == 32", "Input must have 32 users!"),
        (shape[-1] != 0 and shape[-1] % 32 == 0, "input_shape[3] != 0 && input_shape[3] % 32 == 0",
         f"Input inner dim ({shape[-1]}) must be non-zero and divisible by 32, pad if needed!"),
        (sub_core_grids is None or sub_core_grids.num_cores() == USERS,
         "sub_core_grids.num_cores() == num_users",
         f"Subcore grid expects num_users cores, but found {sub_core_grids.num_cores() if sub_core_grids else 0}!"),
        (out is None or out.dtype in (DataType.UINT32, DataType.INT32), "output.dtype() == UINT32 || INT32",
         "Only UINT32 & INT32 dtypes are supported for outputs!"),
        (out is None or out.memory_config().memory_layout == interleaved, "output.memory_layout() == INTERLEAVED",
         "Only INTERLEAVED memory layout is supported for outputs!"),
        (k.dtype == DataType.UINT32, "k.dtype() == DataType::UINT32", "Only UINT32 dtypes are supported for k!"),
        (p.dtype == DataType.BFLOAT16, "p.dtype() == DataType::BFLOAT16", "Only BFLOAT16 dtypes are supported for p!"),
        (temp.dtype == DataType.BFLOAT16, "temp.dtype() == DataType::BFLOAT16",
         "Only BFLOAT16 dtypes are supported for temp!"),
        (k.layout == Layout.ROW_MAJOR, "k.layout() == Layout::ROW_MAJOR", "Only ROW_MAJOR layout is supported for k!"),
        (p.layout == Layout.ROW_MAJOR, "p.layout() == Layout::ROW_MAJOR", "Only ROW_MAJOR layout is supported for p!"),
        (temp.layout == Layout.ROW_MAJOR, "temp.layout() == Layout::ROW_MAJOR",
         "Only ROW_MAJOR layout is supported for temp!"),
        (tuple(k.shape) == (USERS,), "k.logical_shape() == Shape({32})", "k must have shape [32]!"),
        (tuple(p.shape) == (USERS,), "p.logical_shape() == Shape({32})", "p must have shape [32]!"),
        (tuple(temp.shape) == (USERS,), "temp.logical_shape() == Shape({32})", "temp must have shape [32]!"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, where=_WHERE)


@register_op("ttnn.sampling", kind="rows", output_keyword="output_tensor",
             no_golden="a random draw from the cores' generators: TT-NN binds no golden either, and its tests check "
                       "the draw's set (top-k, top-p) and its determinism, not one value")
def sampling(input_values_tensor: Tensor, input_indices_tensor: Tensor, *, k: Tensor, p: Tensor, temp: Tensor,
             seed: int | None = None, sub_core_grids=None, op_name: str = OWN_NAME) -> Tensor:
    """One index a user (32 users: N * C * H of the [N, C, H, W] bfloat16 TILE values), from the user's top-k values
    (k a UINT32 [32], 1..32) scaled by temp (bfloat16 [32], 1/T), softmaxed, cut to the top-p mass (bfloat16 [32];
    0 keeps the largest), and drawn with the user's core's random number: the input_indices_tensor (INT32 or UINT32
    ROW_MAJOR, the values' shape) entry chosen, as a UINT32 ROW_MAJOR [1, 1, 1, 32] in the values' memory config.
    `seed` (not 0) reseeds every core first; sub_core_grids: the 32 cores to run on.

    >>> values = ttnn.from_torch(torch.randn(1, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ids = ttnn.from_torch(torch.arange(64, dtype=torch.int32).expand(1, 1, 32, 64), dtype=ttnn.int32,
    ...                       device=device)
    >>> k = ttnn.from_torch(torch.full((32,), 1), dtype=ttnn.uint32, device=device)
    >>> p = ttnn.from_torch(torch.zeros(32), dtype=ttnn.bfloat16, device=device)
    >>> temp = ttnn.from_torch(torch.ones(32), dtype=ttnn.bfloat16, device=device)
    >>> out = ttnn.sampling(values, ids, k=k, p=p, temp=temp, seed=7)  # k = 1: each user's largest value
    >>> torch.equal(out.to_torch().reshape(32).long(), values.to_torch().float().reshape(32, 64).argmax(-1))
    True
    """
    out_target = pending_output_target(op_name)
    _check(input_values_tensor, input_indices_tensor, k, p, temp, sub_core_grids, out_target)
    ins = device_inputs(op_name, input_values_tensor, input_indices_tensor, k, p, temp)
    chip = input_values_tensor.device()
    width = input_values_tensor.shape[-1]
    v = values(input_values_tensor, op_name).float().reshape(USERS, width)
    ids = values(input_indices_tensor, op_name).reshape(USERS, width)
    ks, ps = values(k, op_name).long().tolist(), values(p, op_name).float().tolist()
    temps = values(temp, op_name).float().tolist()
    if seed:  # the compute kernel's rand_tile_init(seed) on each core; seed 0 (the default) keeps the state
        seed_cores(chip, dict.fromkeys(range(USERS), seed))
    drawn = [_sample_user(v[u], ids[u], max(1, min(ks[u], USERS)), ps[u], temps[u],
                          _random_number(core_generator(chip, u))) for u in range(USERS)]
    result = torch.tensor(drawn, dtype=torch.int64).reshape(1, 1, 1, USERS)
    out = output(result, input_values_tensor, ins, op_name=op_name, dtype=DataType.UINT32, layout=Layout.ROW_MAJOR,
                 memory_config=input_values_tensor.memory_config())
    ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in sub_core_grids.ranges()) if sub_core_grids else ()
    device_work.launch_after(out, out_target is None, input_values_tensor, sampling_program(
        chip, width, input_indices_tensor.dtype, out.dtype, ranges), seed)  # the seed: a compile-time argument
    return out

