"""Stand-in telemetry for a packet, made by the model and the runtime simulator (for tests,
benchmarks and demos of `workbench report`; real telemetry replaces it one for one).

The stand-in device is the packet's envelope with other efficiency figures (`device_fields`),
as a real device differs from its spec-sheet model: the simulator runs the packet's baseline on
it and writes every request (arrival, seq_len, core, queue wait, latency), and the kernel model
times the block's kernels on it at batch 1 over `kernel_seq_len` prompt lengths (an offline
profile), with seeded log-normal noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from model.mapping.requests import simulated_request_rows
from model.mapping.synthetic import block_kernel_rows, synthetic_latency_us
from model.runtime.simulate import simulate
from packets.load import LoadedPacket
from triage.scenario import build_scenario

DEVICE_FIELDS = {"compute_efficiency": 0.75, "memory_efficiency": 0.7, "fill_latency_us": 3.0}
"""Default stand-in device: slower than the presets' 0.9, 0.8 and 2 us."""

KERNEL_SEQ = (64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
"""Default prompt lengths of the kernel profile (tokens)."""


def write_synthetic_telemetry(
    loaded: LoadedPacket,
    folder: Path,
    *,
    device_fields: dict[str, float] | None = None,
    requests: int | None = None,
    kernel_seq_len: Sequence[int] = KERNEL_SEQ,
    noise_cv: float = 0.03,
    seed: int = 11,
) -> dict[str, Path]:
    """Write requests.csv, requests.parquet and kernels.csv for the packet's baseline into
    `folder`; returns their paths by name."""
    scenario = build_scenario(loaded, requests=requests)
    device = scenario.hardware.with_overrides(**(device_fields or DEVICE_FIELDS))
    real = dataclasses.replace(scenario, hardware=device)
    rows = simulated_request_rows(simulate(real.runtime, real.service_table))
    paths = {
        "requests.csv": folder / "requests.csv",
        "requests.parquet": folder / "requests.parquet",
        "kernels.csv": folder / "kernels.csv",
    }
    rows.write_csv(paths["requests.csv"])
    rows.write_parquet(paths["requests.parquet"])
    seq = np.asarray(kernel_seq_len, dtype=np.int64)
    kernels = block_kernel_rows(
        scenario.block, np.ones_like(seq), seq, hardware=device.name, source="synthetic profile"
    )
    latency = synthetic_latency_us(kernels, device, seed=seed, noise_cv=noise_cv)
    kernels.with_columns(latency_us=pl.Series(latency)).write_csv(paths["kernels.csv"])
    return paths
