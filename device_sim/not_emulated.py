"""What device_sim cannot emulate: TT-Metal's custom-kernel API, and the error that says so.

    import device_sim as ttnn
    ttnn.generic_op([t], program)  # NotEmulatedError: ttnn.generic_op is not emulated: ...

A model that builds its own programs (`ttnn.generic_op` with a ProgramDescriptor of C++ kernels,
circular-buffer and semaphore descriptors) runs reader, compute and writer kernels that device_sim
has no way to execute: it emulates TT-NN's ops from their documented semantics, not RISC-V code.
Each name below exists, so a script still imports and defines what it likes; it fails where it
builds or runs a custom program, with an error naming the name and why. `NOT_EMULATED` lists them;
the API coverage tool counts them apart from what works.
"""

from __future__ import annotations

import enum

_KERNELS = ("it describes or runs a custom C++ kernel program, and device_sim emulates TT-NN's ops from "
            "their semantics, not kernel code; run this part on hardware, or write it with TT-NN ops")

class NotEmulatedError(NotImplementedError):
    """A TT-NN name device_sim has on purpose but cannot emulate (device_sim.NOT_EMULATED)."""


def _refusal(name: str):
    def refuse(*args, **kwargs):
        raise NotEmulatedError(f"ttnn.{name} is not emulated: {_KERNELS}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"ttnn.{name}: not emulated by device_sim (device_sim.not_emulated says why)."
    return refuse


generic_op = _refusal("generic_op")
ProgramDescriptor = _refusal("ProgramDescriptor")
MeshProgramDescriptor = _refusal("MeshProgramDescriptor")


class KernelDescriptor:
    """ttnn.KernelDescriptor: not emulated (building one refuses); its SourceType enum is data, which tt-metal's
    fused Parallel/Sequential code generator (models/experimental/ops) compares without a device."""

    class SourceType(enum.IntEnum):
        # tt_metal/api/tt-metalium/program_descriptors.hpp: enum class SourceType { FILE_PATH, SOURCE_CODE }
        FILE_PATH = 0
        SOURCE_CODE = 1

    def __init__(self, *args, **kwargs):
        _refusal("KernelDescriptor")()


CBDescriptor = _refusal("CBDescriptor")
CBFormatDescriptor = _refusal("CBFormatDescriptor")
SemaphoreDescriptor = _refusal("SemaphoreDescriptor")
ComputeConfigDescriptor = _refusal("ComputeConfigDescriptor")
ReaderConfigDescriptor = _refusal("ReaderConfigDescriptor")
WriterConfigDescriptor = _refusal("WriterConfigDescriptor")
DataMovementConfigDescriptor = _refusal("DataMovementConfigDescriptor")
TileDescriptor = _refusal("TileDescriptor")
cb_descriptor_from_sharded_tensor = _refusal("cb_descriptor_from_sharded_tensor")

NOT_EMULATED: tuple[str, ...] = (
    "generic_op", "ProgramDescriptor", "MeshProgramDescriptor", "KernelDescriptor", "CBDescriptor",
    "CBFormatDescriptor", "SemaphoreDescriptor", "ComputeConfigDescriptor", "ReaderConfigDescriptor",
    "WriterConfigDescriptor", "DataMovementConfigDescriptor", "TileDescriptor", "cb_descriptor_from_sharded_tensor",
)
__all__ = ["NOT_EMULATED", "NotEmulatedError", *NOT_EMULATED]
