"""What `check` accepts, every command runs: numbers at the edges of each field's range.

The schema is walked (tests/packets/numeric_fields.py) to find every numeric field a packet can
hold and the bounds its constraints give; hypothesis then puts one to three of them at an edge
(the bound itself, one step inside, one step outside) in a real packet file and drives the
command line in-process: `check` must refuse the packet or `run` must exit 0, and the first
computation the app makes on open (the Lab's baseline run) must succeed too. A value outside
its field's range must be refused by `check`, naming the field.
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from packets.errors import dotted
from packets.examples import example_names, example_path
from packets.hardware_file import HardwareFile
from packets.load import load_packet
from packets.schema import Config, Inputs, Packet
from workbench.cli import main
from workbench.core.session import open_working
from workbench.lab.engine import Lab, subject

from .numeric_fields import NumericField, numeric_fields

Path_ = tuple[str | int, ...]
BASE_REQUESTS = 400  # the Lab runs the packet's own request count: keep it small
RUN_REQUESTS = "200"
LAB_REQUESTS = 20_000  # a packet asking for more is run through `run --requests` only


def _bases() -> dict[str, dict[str, Any]]:
    """The shipped examples, and one variant that reaches the sections they leave out
    (a pinned lognormal service, peak_tflops overrides, candidate fallback and service)."""
    bases = {name: yaml.safe_load(example_path(name).read_bytes()) for name in example_names()}
    variant = copy.deepcopy(bases["fusion-tiling-llama-decode"])
    variant["baseline"]["service"] = {
        "source": "distribution",
        "dist": "lognormal",
        "mean_ms": 10.0,
        "cv": 0.5,
    }
    variant["inputs"]["hardware"]["peak_tflops"] = {"bf16": 400.0, "fp8": 800.0}
    variant["candidates"][0]["fallback"] = {"compile_stall_ms": 100.0, "dispatch_overhead_us": 5.0}
    variant["candidates"][0]["service"] = {"source": "distribution", "dist": "exponential"}
    variant["candidates"][0]["service"]["mean_ms"] = 10.0
    variant["candidates"][1]["tiles"] = {"attention": {"q": 64, "kv": 64}}
    bases["variant"] = variant
    for data in bases.values():
        data["inputs"]["workload"]["requests"] = BASE_REQUESTS
    return bases


BASES = _bases()
FIELDS = {name: numeric_fields(Packet, data) for name, data in BASES.items()}


def _in_range(field: NumericField, value: float) -> bool:
    return (
        (field.gt is None or value > field.gt)
        and (field.ge is None or value >= field.ge)
        and (field.lt is None or value < field.lt)
        and (field.le is None or value <= field.le)
    )


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, list[tuple[Path_, int | float]]]:
    """A base packet and one to three numeric fields set to an edge of their range (inside
    the range three times in four, so most packets get as far as `run`)."""
    name = draw(st.sampled_from(sorted(BASES)))
    fields = FIELDS[name]
    picked = draw(st.permutations(range(len(fields))))[: draw(st.integers(1, 3))]
    changes = []
    for i in picked:
        field = fields[i]
        inside = [v for v in field.edges() if _in_range(field, v)]
        outside = [v for v in field.edges() if not _in_range(field, v)]
        pool = inside if draw(st.integers(0, 3)) or not outside else outside
        changes.append((field.path, draw(st.sampled_from(pool))))
    return name, changes


def _set(data: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return data


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    return code, text


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=edits())
# The packets of issue 10: each passed check and then crashed run (or ran to a wrong verdict).
@example(
    case=("fusion-tiling-llama-decode", [(("inputs", "workload", "block", "hidden"), 10**400)])
)
@example(case=("mapping-dynamic-shapes", [(("inputs", "workload", "arrivals", "cv"), 1e300)]))
@example(case=("fusion-burst-p95", [(("inputs", "workload", "arrivals", "rate_per_s"), 5e-324)]))
@example(case=("fusion-burst-p95", [(("inputs", "workload", "arrivals", "rate_per_s"), 1e-300)]))
@example(case=("fusion-burst-p95", [(("inputs", "workload", "block", "head_dim"), 10**6)]))
@example(case=("variant", [(("inputs", "hardware", "sram_kib_per_unit"), 1.0)]))
@example(case=("variant", [(("baseline", "service", "cv"), 0.0)]))
@example(
    case=(
        "mapping-dynamic-shapes",
        [
            (("inputs", "workload", "requests"), 1),
            (("inputs", "workload", "warmup_fraction"), 0.9),
        ],
    )
)
def test_check_refuses_or_every_command_runs(
    case: tuple[str, list[tuple[Path_, int | float]]], capsys: pytest.CaptureFixture[str]
) -> None:
    name, changes = case
    by_path = {f.path: f for f in FIELDS[name]}
    data = BASES[name]
    for path, value in changes:
        data = _set(data, path, value)
    with tempfile.TemporaryDirectory() as folder:
        packet = Path(folder) / "edge.yaml"
        packet.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        code, out = _cli(["check", "-q", str(packet)], capsys)
        outside = [path for path, value in changes if not _in_range(by_path[path], value)]
        if outside:
            event("out of range: refused")
            assert code == 1
            assert any(f": {dotted(path)}: " in out for path in outside), out
            return
        if code:
            event("in range: refused by a cross-field check")
            return  # a cross-field check refused it (p99 below p95, a tile that cannot fit...)
        candidate = next((path[1] for path, _ in changes if path[0] == "candidates"), None)
        args = ["run", str(packet), "--requests", RUN_REQUESTS]
        name_ = "baseline" if candidate is None else data["candidates"][candidate]["name"]
        if candidate is not None:
            args += ["--candidate", name_]
        code, out = _cli(args, capsys)
        assert code == 0, out
        event("in range: accepted and run")
        if data["inputs"]["workload"]["requests"] > LAB_REQUESTS:
            return  # the Lab runs the packet's own count; run's --requests covered it above
        working = open_working(load_packet(packet), packet)  # what `workbench open` does first
        result = Lab().run(subject(working, name=name_))
        p99 = result.summary["latency_ms"]["p99"]
        assert math.isfinite(p99) and p99 > 0  # at rate 1e-300 float64 rounded it to 0.00 ms


def _numeric_fields_of(model: type[BaseModel]) -> list[tuple[str, str, NumericField]]:
    """Every numeric field of `model` and the models below it: (model, field, bounds)."""
    found: list[tuple[str, str, NumericField]] = []
    seen: set[type] = set()

    def visit(owner: type[BaseModel]) -> None:
        seen.add(owner)
        for name, info in owner.model_fields.items():
            args = _all_args(_with_metadata(info))
            numeric = [
                a
                for a in args
                if typing.get_origin(a) is typing.Annotated
                and typing.get_args(a)[0] in (int, float)
            ]
            for leaf in numeric[:1]:
                found.extend((owner.__name__, name, f) for f in numeric_fields(leaf, None, (name,)))
            for arg in args:
                if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in seen:
                    visit(arg)

    visit(model)
    return found


def _all_args(annotation: Any) -> list[Any]:
    out = [annotation]
    for arg in typing.get_args(annotation):
        out += _all_args(arg)
    return out


def _with_metadata(info: Any) -> Any:
    return typing.Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation


@pytest.mark.parametrize("model", [Packet, HardwareFile], ids=lambda m: m.__name__)
def test_every_whole_number_field_is_bounded_at_both_ends(model: type[BaseModel]) -> None:
    fields = _numeric_fields_of(model)
    assert len(fields) >= (60 if model is Packet else 15)
    for owner, name, leaf in fields:
        if leaf.integer:
            assert leaf.gt is not None or leaf.ge is not None, f"{owner}.{name}"
            assert leaf.lt is not None or leaf.le is not None, f"{owner}.{name}"


@pytest.mark.parametrize("model", [Inputs, Config], ids=lambda m: m.__name__)
def test_every_number_run_reads_has_a_physical_range(model: type[BaseModel]) -> None:
    """Inputs and configurations feed the model: no number there may be 'any positive finite
    number'. (The quality threshold and measured values are a metric of the packet's own
    choosing, compared but never computed with.)"""
    for owner, name, leaf in _numeric_fields_of(model):
        if owner == "Quality":
            continue
        assert (leaf.gt is not None or leaf.ge is not None) and (
            leaf.lt is not None or leaf.le is not None
        ), f"{owner}.{name} has no physical range"


def test_the_edge_test_reaches_every_field_run_reads() -> None:
    """The bases put every numeric field of the inputs and configurations within reach."""
    reached = {
        "peak_tflops" if "peak_tflops" in f.path else [p for p in f.path if isinstance(p, str)][-1]
        for fields in FIELDS.values()
        for f in fields
    }
    wanted = {
        name
        for model in (Inputs, Config)
        for owner, name, _ in _numeric_fields_of(model)
        if owner != "Quality"
    }
    assert len(wanted) >= 35
    assert wanted <= reached, sorted(wanted - reached)


def test_open_refuses_an_out_of_range_packet_in_one_line() -> None:
    """`workbench open` on the 10^400 packet printed a full traceback; it must stop with the
    one-line problem `check` prints, before any screen opens."""
    bad = Path(__file__).parent / "bad"
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "open", "huge-integer.yaml"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=bad,
        check=False,
    )
    expected = [
        line
        for line in (bad / "EXPECTED").read_text(encoding="utf-8").splitlines()
        if line.startswith("huge-integer.yaml:")
    ]
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == expected
