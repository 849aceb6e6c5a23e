"""Reading telemetry and hardware arguments for the telemetry commands (one-line errors)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from model.compiler.calibration import Calibration, calibrate
from model.compiler.hardware import PRESET_NAMES, HardwareEnvelope, preset
from model.telemetry.vocab import DTYPES
from packets.errors import PacketError, TelemetryProblem, UsageError
from packets.hardware_file import dump_hardware, load_hardware_file
from triage.telemetry.files import KernelRows, classify, read_kernel_rows


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


def read_kernels(paths: list[Path], *, dtype: str = "bf16") -> KernelRows:
    """Kernel rows from kernel tables, Chrome traces and Nsight exports, told apart by content
    as `report` does (`telemetry_files`); profiled kernels are taken to run in `dtype`.

    Raises:
        UsageError: a file is missing or a folder, or `dtype` is unknown.
        TelemetryProblem: a file cannot be used, holds request telemetry, or no row can be
            compared with the model.
    """
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype}: not one of {', '.join(DTYPES)}")
    files = classify(paths)
    if files["requests"]:
        raise TelemetryProblem(
            f"{files['requests'][0]}: request telemetry (a seq_len column); this command "
            "reads kernel telemetry, traces and Nsight exports (workbench report reads both)"
        )
    rows = read_kernel_rows(files, dtype=dtype)
    if rows is None or rows.frame.height == 0:
        left = ", ".join(f"{k} {n}" for k, n in (rows.not_compared if rows else {}).items() if n)
        raise TelemetryProblem(
            f"{', '.join(map(str, paths))}: no kernel row the model can compare ({left}): "
            "profiled GEMMs need their launching op's Input Dims (record_shapes=True)"
        )
    return rows


def calibrate_kernels(
    telemetry: KernelRows, hardware: HardwareEnvelope, hardware_text: str, files: list[Path]
) -> tuple[Calibration, bytes]:
    """Calibrate `hardware` on kernel telemetry: the result (its envelope renamed
    `<name>-calibrated`, with a `source` saying what it was fitted on) and the
    `handoff-hardware/1` file bytes. Too few usable rows is a TelemetryProblem."""
    try:
        result = calibrate(telemetry.frame, hardware)
    except ValueError as exc:
        raise TelemetryProblem(f"{', '.join(map(str, files))}: {exc}") from None
    names = ", ".join(p.name for p in files)
    source = (
        f"calibrated by workbench telemetry calibrate on {result.rows_train + result.rows_heldout}"
        f" plausible rows of {names}: fitted on {result.rows_train}, held-out MdAPE "
        f"{result.heldout_mdape:.1%} on {result.rows_heldout} (was "
        f"{result.original_heldout_mdape:.1%}); base {hardware.name}: {hardware.source}"
    )
    name = hardware.name if hardware.name.endswith("-calibrated") else f"{hardware.name}-calibrated"
    envelope = result.envelope.with_overrides(name=name, source=source)
    base = hardware_text if hardware_text in PRESET_NAMES else None
    result = dataclasses.replace(result, envelope=envelope)
    return result, dump_hardware(envelope, base)


__all__ = [
    "PacketError",
    "TelemetryProblem",
    "calibrate_kernels",
    "hardware_argument",
    "read_kernels",
]
