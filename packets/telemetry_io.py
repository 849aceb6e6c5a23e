"""Reading telemetry and hardware arguments for the telemetry commands (one-line errors)."""

from __future__ import annotations

from pathlib import Path

from model.compiler.hardware import PRESET_NAMES, HardwareEnvelope, preset
from model.telemetry.errors import TelemetryError
from model.telemetry.kernels import KernelTelemetry, read_kernel_telemetry

from .errors import PacketError, TelemetryProblem, UsageError
from .hardware_file import load_hardware_file


def hardware_argument(text: str) -> HardwareEnvelope:
    """`--hardware`: a preset name or a hardware YAML file (UsageError/PacketError if bad)."""
    if text in PRESET_NAMES:
        return preset(text)
    path = Path(text)
    if not path.exists():
        raise UsageError(
            f"--hardware {text}: neither a preset ({', '.join(PRESET_NAMES)}) nor a file"
        )
    return load_hardware_file(path)


def read_kernels(paths: list[Path]) -> KernelTelemetry:
    """Kernel telemetry from files; a file that cannot be used is a PacketError-style problem."""
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file")
        if path.is_dir():
            raise UsageError(f"{path}: is a directory, not a telemetry file")
    try:
        return read_kernel_telemetry(paths)
    except TelemetryError as exc:
        raise TelemetryProblem(str(exc)) from None


__all__ = ["PacketError", "TelemetryProblem", "hardware_argument", "read_kernels"]
