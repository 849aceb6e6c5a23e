"""Checks that need the model: the hardware envelope, the block, fusion groups and tiles, that
the autotuner has at least one tile fitting a unit's SRAM at each precision used, and a pinned
service distribution (the runtime's own rules). Without the last two, `check` accepted packets
that `run` then failed on.

Run after the schema and cross-field checks pass, so every section is well-formed here. The
model raises one-line ValueErrors naming the field ('tiles.qkv_proj: ...'); they are located at
the packet path of the configuration they came from.
"""

from __future__ import annotations

from pathlib import Path

from model.compiler.fusion import fusion_groups
from model.compiler.hardware import HardwareEnvelope
from model.compiler.tiles import attention_tile_rows, gemm_tile_rows, resolve_tiles
from model.runtime.inputs import ServiceSpec

from .candidates import apply_candidate
from .errors import PacketError, Problem
from .hardware_file import resolve_hardware
from .model_specs import block_spec, fusion_spec, tile_spec
from .schema import Config, DistributionService, Packet
from .serving_checks import serving_model_problems
from .strict_yaml import LoadedYaml

Path_ = tuple[str | int, ...]


def config_model_problems(
    packet: Packet, config: Config, dtype: str, hw: HardwareEnvelope, where: Path_
) -> list[tuple[Path_, str]]:
    """(path, message) for each problem the model finds in one configuration."""
    found: list[tuple[Path_, str]] = []
    if dtype not in hw.peak_tflops:
        path = ("inputs", "precision", "dtype") if where == ("baseline",) else (*where, "dtype")
        found.append(
            (path, f"{hw.name} has no {dtype} peak (it lists {', '.join(hw.peak_tflops)})")
        )
        return found
    head_dim = packet.inputs.workload.block.head_dim
    try:  # the autotuner needs at least one tile that fits a unit's SRAM
        gemm_tile_rows(hw, hw.dtype_bytes(dtype))
        if head_dim is not None:
            attention_tile_rows(hw, head_dim, hw.dtype_bytes(dtype))
    except ValueError as exc:
        path = (
            ("inputs", "hardware", "sram_kib_per_unit")
            if where == ("baseline",)
            else (*where, "dtype")
        )
        shape = f"{dtype}" + (f", head_dim {head_dim}" if head_dim is not None else "")
        found.append((path, f"{exc} ({shape})"))
        return found
    service = config.service
    if isinstance(service, DistributionService):
        try:  # the runtime's own rules for a pinned distribution (lognormal needs cv > 0)
            ServiceSpec("distribution", service.dist, service.mean_ms, service.cv)
        except ValueError as exc:
            field, _, rest = str(exc).partition(" ")  # "service.cv must be > 0 ..."
            found.append(((*where, "service", field.removeprefix("service.")), rest))
    block = block_spec(packet.inputs.workload.block, dtype)
    found += serving_model_problems(packet, config, hw, block, where)
    try:
        fusion_groups(block, fusion_spec(config))
    except ValueError as exc:
        found.append(((*where, "fusion"), str(exc).removeprefix("fusion: ")))
    try:
        resolve_tiles(block, hw, tile_spec(config))
    except ValueError as exc:
        message = str(exc)
        head, _, rest = message.partition(": ")
        op = head.removeprefix("tiles.") if head.startswith("tiles.") else None
        found.append(((*where, "tiles", op) if op else (*where, "tiles"), rest or message))
    return found


def model_problems(
    packet: Packet, loaded: LoadedYaml | None, file: str, base_dir: Path | None
) -> list[Problem]:
    """Every problem the model finds in the packet's hardware, block, fusion and tiles."""
    try:
        hw = resolve_hardware(packet.inputs.hardware, base_dir, file, loaded)
    except PacketError as exc:
        return exc.problems
    found: list[tuple[Path_, str]] = []
    block = packet.inputs.workload.block
    if block.dtype != packet.inputs.precision.dtype:
        found.append(
            (
                ("inputs", "workload", "block", "dtype"),
                f"must equal inputs.precision.dtype ({packet.inputs.precision.dtype})",
            )
        )
    try:
        block_spec(block, block.dtype)
    except ValueError as exc:
        found.append((("inputs", "workload", "block"), str(exc)))
    if not found:
        found += config_model_problems(packet, packet.baseline, block.dtype, hw, ("baseline",))
        for i, candidate in enumerate(packet.candidates):
            dtype = candidate.dtype or block.dtype
            config = apply_candidate(packet.baseline, candidate)
            own = {name for name in type(candidate).model_fields if getattr(candidate, name)}
            for path, message in config_model_problems(
                packet, config, dtype, hw, ("candidates", i)
            ):
                if path[2] in own:  # inherited baseline problems are reported once, there
                    found.append((path, message))
    return [Problem(file, loaded.line_of(path) if loaded else 0, path, msg) for path, msg in found]
