"""Compute kernel configs: how precisely the matrix engine (FPU) and the vector unit (SFPU) compute.

    import device_sim as ttnn
    cfg = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi, fp32_dest_acc_en=False)
    out = ttnn.matmul(a, b, compute_kernel_config=cfg)   # emulates LoFi's 5x7-bit products

Fields, keyword-only constructors and defaults are TT-NN's (ttnn/cpp/ttnn/operations/core/
compute_kernel/compute_kernel_config.hpp and its Python binding in core's nanobind module): a
constructor given no math_fidelity holds MathFidelity.Invalid, which device_sim reads as "the
op's own default" (docs/numerics.md). `resolve` is what an op calls: it fills a missing config
from the op's defaults exactly as TT-NN's init_device_compute_kernel_config does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from device_sim.types import _TTEnum


class MathFidelity(_TTEnum):
    """How many multiplier passes (phases) a product takes; TT-NN's numbering."""

    LoFi = 0
    HiFi2 = 2
    HiFi3 = 3
    HiFi4 = 4
    Invalid = 255


class UnpackToDestMode(_TTEnum):
    """Whether a compute kernel's unpacker writes a circular buffer's tiles straight into the FP32 destination
    register (a kernel attribute, one per CB; TT-NN's numbering, tt_metal/api/tt-metalium/base_types.hpp)."""

    UnpackToDestFp32 = 0
    Default = 1


class ThrottleLevel(_TTEnum):
    """NOPs inserted to limit di/dt on large grids; timing only, so values are unaffected."""

    NO_THROTTLE = 0
    LEVEL_1 = 1
    LEVEL_2 = 2
    LEVEL_3 = 3
    LEVEL_4 = 4
    LEVEL_5 = 5


def _check_fields(cfg) -> None:
    # nanobind rejects a wrong type at construction with a TypeError; so does device_sim, naming the field.
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        if f.name == "math_fidelity":
            if not isinstance(v, MathFidelity):
                raise TypeError(f"{type(cfg).__name__}: math_fidelity must be a ttnn.MathFidelity "
                                f"(LoFi, HiFi2, HiFi3, HiFi4), got {v!r}")
        elif f.name == "throttle_level":
            if not isinstance(v, ThrottleLevel):
                raise TypeError(f"{type(cfg).__name__}: throttle_level must be a ttnn.ThrottleLevel, got {v!r}")
        elif not isinstance(v, bool):
            raise TypeError(f"{type(cfg).__name__}: {f.name} must be True or False, got {v!r}")


@dataclass(kw_only=True)
class WormholeComputeKernelConfig:
    math_fidelity: MathFidelity = MathFidelity.Invalid
    math_approx_mode: bool = True
    fp32_dest_acc_en: bool = False
    packer_l1_acc: bool = False
    dst_full_sync_en: bool = False
    throttle_level: ThrottleLevel = ThrottleLevel.NO_THROTTLE

    def __post_init__(self):
        _check_fields(self)


# TT-NN: `using BlackholeComputeKernelConfig = WormholeComputeKernelConfig;` — one class, two names.
BlackholeComputeKernelConfig = WormholeComputeKernelConfig


@dataclass(kw_only=True)
class GrayskullComputeKernelConfig:
    """Grayskull has no fp32 destination and no packer L1 accumulation."""

    math_fidelity: MathFidelity = MathFidelity.Invalid
    math_approx_mode: bool = True
    dst_full_sync_en: bool = False

    def __post_init__(self):
        _check_fields(self)


ComputeKernelConfig = WormholeComputeKernelConfig | GrayskullComputeKernelConfig
# TT-NN's name for the same union (ttnn/types.py: its variant binding), which model code writes in annotations:
# `compute_kernel_config: ttnn.DeviceComputeKernelConfig | None` (deepseek_v3's config_dataclass.py).
DeviceComputeKernelConfig = ComputeKernelConfig


def init_device_compute_kernel_config(arch=None, device_kernel_config: ComputeKernelConfig | None = None, *,
                                      math_fidelity: MathFidelity = MathFidelity.LoFi,
                                      math_approx_mode: bool = True, fp32_dest_acc_en: bool = False,
                                      packer_l1_acc: bool = False, dst_full_sync_en: bool = False,
                                      throttle_level: ThrottleLevel = ThrottleLevel.NO_THROTTLE):
    """The given config unchanged, or one made from the defaults (TT-NN's rule; `arch` is accepted and unused)."""
    if device_kernel_config is not None:
        if not isinstance(device_kernel_config, (WormholeComputeKernelConfig, GrayskullComputeKernelConfig)):
            raise TypeError(f"device_kernel_config must be a ttnn.WormholeComputeKernelConfig (or Blackhole/"
                            f"Grayskull), got {type(device_kernel_config).__name__}")
        return device_kernel_config
    return WormholeComputeKernelConfig(
        math_fidelity=math_fidelity, math_approx_mode=math_approx_mode, fp32_dest_acc_en=fp32_dest_acc_en,
        packer_l1_acc=packer_l1_acc, dst_full_sync_en=dst_full_sync_en, throttle_level=throttle_level)


@dataclass(frozen=True)
class Numerics:
    """What an op's kernel does with a config, once resolved: the few facts the emulation reads."""

    math_fidelity: MathFidelity
    math_approx_mode: bool
    fp32_dest_acc_en: bool
    packer_l1_acc: bool
    dst_full_sync_en: bool = False

    @property
    def dest_tiles(self) -> int:
        """Tiles the destination register holds (TT-NN's get_dest_reg_count: 16 full, halved per option)."""
        n = 16 if self.dst_full_sync_en else 8
        return n // 2 if self.fp32_dest_acc_en else n


def resolve(op_name: str, config, *, math_fidelity: MathFidelity, math_approx_mode: bool,
            fp32_dest_acc_en: bool, packer_l1_acc: bool = False) -> Numerics:
    """The numerics an op runs with: `config` if given (its Invalid fidelity taking the op's), else the defaults."""
    if config is None:
        return Numerics(math_fidelity, math_approx_mode, fp32_dest_acc_en, packer_l1_acc)
    if not isinstance(config, (WormholeComputeKernelConfig, GrayskullComputeKernelConfig)):
        raise TypeError(f"{op_name}: compute_kernel_config must be a ttnn.WormholeComputeKernelConfig (or "
                        f"BlackholeComputeKernelConfig), got {type(config).__name__}: {config!r}")
    fidelity = config.math_fidelity if config.math_fidelity != MathFidelity.Invalid else math_fidelity
    return Numerics(fidelity, config.math_approx_mode, getattr(config, "fp32_dest_acc_en", False),
                    getattr(config, "packer_l1_acc", False), config.dst_full_sync_en)
