"""moreh group_norm's backward device operations: MorehGroupNormBackwardInputGradOperation and
MorehGroupNormBackwardGammaBetaGradOperation.

tt-metal's ttnn/cpp/ttnn/operations/moreh/moreh_group_norm_backward/device/input_grad/ and gamma_beta_grad/
*_factory.cpp: every CB in the output gradient's format, split_work_to_cores over the N x groups rows (input grad)
or the channels (gamma / beta grad).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.moreh_group_norm_backward import input_grad_program
    >>> dev = ttnn.open_device()
    >>> dy = ttnn.from_torch(torch.zeros(2, 4, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = input_grad_program(dy, num_groups=2, gamma=False)
    >>> [(cb.indices[0], cb.num_pages) for cb in p.cbs][9:11]   # c_24, c_25: a group's 2 channel tiles
    [(24, 2), (25, 2)]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work


def _masks(dy) -> tuple[bool, bool]:
    h, w = dy.shape[-2], dy.shape[-1]
    return h % TILE != 0, w % TILE != 0


def input_grad_program(dy, *, num_groups: int, gamma: bool) -> Program:
    """c_0-c_4 one tile each (dy, x, mean, rstd, one), c_5 two, c_6 gamma's tile, c_7 two masks when H or W is not
    whole tiles, c_16 the output, c_24 / c_25 a group's tiles (one each when they overflow L1: the large
    algorithm, which drops c_31) and c_26-c_31 one each; one N x group row a unit."""
    key = ("MorehGroupNormBackwardInputGradOperation", tuple(dy.padded_shape), dy.dtype, num_groups, gamma,
           grid_of(dy.device()))

    def build():
        n, c, h, w = dy.padded_shape
        inner = c // num_groups * (h // TILE) * (w // TILE)
        mask = any(_masks(dy))
        tiles = [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 2), (6, int(gamma)), (7, 2 if mask else 0), (16, 1),
                 (24, inner), (25, inner), (26, 1), (27, 1), (28, 1), (29, 1), (30, 1), (31, 1)]
        page = TILE_BYTES[dy.dtype]
        if sum(t for _, t in tiles) * page >= dy.device().config.l1_size - dy.device().config.l1_unreserved_base:
            tiles = [(i, 1 if i in (24, 25) else 0 if i == 31 else t) for i, t in tiles]
        return make_program("MorehGroupNormBackwardInputGradOperation", "MorehGroupNormBackwardInputGradFactory",
                            [CircularBuffer((i,), t, page) for i, t in tiles], split_work(n * num_groups,
                                                                                          *grid_of(dy.device())))

    return cached(key, build)


def gamma_beta_grad_program(dy, *, gamma_grad: bool, beta_grad: bool) -> Program:
    """c_0-c_4 one tile each (dy, x, mean, rstd, one), c_5 / c_6 the H / W masks when needed, c_16 / c_17 the
    gamma / beta gradients asked for, c_24-c_29 one each; one channel a unit."""
    key = ("MorehGroupNormBackwardGammaBetaGradOperation", tuple(dy.padded_shape), dy.dtype, gamma_grad, beta_grad,
           grid_of(dy.device()))

    def build():
        mask_h, mask_w = _masks(dy)
        tiles = [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, int(mask_h)), (6, int(mask_w)), (16, int(gamma_grad)),
                 (17, int(beta_grad))] + [(i, 1) for i in range(24, 30)]
        return make_program("MorehGroupNormBackwardGammaBetaGradOperation",
                            "MorehGroupNormBackwardGammaBetaGradFactory",
                            [CircularBuffer((i,), t, TILE_BYTES[dy.dtype]) for i, t in tiles],
                            split_work(dy.padded_shape[1], *grid_of(dy.device())))

    return cached(key, build)
