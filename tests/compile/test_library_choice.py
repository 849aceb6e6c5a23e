"""The packet's compiler/runtime metadata picks the GEMM library the envelope is costed with."""

from __future__ import annotations

from pathlib import Path

from packets.examples import example_path
from packets.load import load_packet
from triage.scenario import build_scenario


def _with_metadata(tmp_path: Path, compiler: str) -> Path:
    text = example_path("mapping-dynamic-shapes").read_text()
    old = "compiler: xla 2026.10.2 (openxla@5f1c2e)"
    assert old in text
    path = tmp_path / "packet.yaml"
    path.write_text(text.replace(old, f"compiler: {compiler}"))
    return path


def test_an_xla_packet_on_hopper_runs_the_architecture_default() -> None:
    scenario = build_scenario(load_packet(example_path("mapping-dynamic-shapes")))
    assert scenario.hardware.name == "h100-sxm"
    assert scenario.hardware.gemm_library == ""
    assert scenario.hardware.library().name == "cublas-hopper"


def test_a_packet_naming_cutlass_2_costs_hopper_with_one_tile_per_block(tmp_path: Path) -> None:
    default = build_scenario(load_packet(example_path("mapping-dynamic-shapes")))
    cutlass2 = build_scenario(load_packet(_with_metadata(tmp_path, "CUTLASS 2.11")))
    assert cutlass2.hardware.library().name == "cublas-ampere"
    assert cutlass2.hardware.library().schedule == "waves"
    # same plan, same shapes: the persistent, multicast library is never slower
    fast = default.service_table.compute_bound_ms
    slow = cutlass2.service_table.compute_bound_ms
    assert (slow >= fast - 1e-12).all() and (slow > fast).any()
