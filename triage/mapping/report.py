"""The closed-loop mapping report: compile-time accuracy, calibration, runtime adaptation gain
and ranked retuning actions for one packet and its telemetry (`workbench report`).

`report(loaded, telemetry_paths)` is the one call the command line and the app make; it returns
a plain dict (`handoff-mapping-report/1`, keys in model/mapping/README.md) that `json.dumps`
takes as is and that is byte-identical for the same packet, telemetry and seed.
`action_to_candidate(packet, action)` turns one of its actions into candidate overrides the
packet format accepts.

The compile-only configuration is the baseline (or `candidate`): fixed buckets, the generic
path for the rest. Every configuration is simulated on the same requests: the request telemetry
replayed when given, else the packet's workload drawn from its seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from model.compiler.calibration import MIN_ROWS, Calibration, calibrate
from model.mapping.accuracy import mapping_accuracy, predict_by_shape
from model.mapping.adaptation import gain, run_figures
from model.mapping.requests import ObservedMix, observed_mix, observed_vs_simulated, replay_stream
from model.runtime.inputs import ShapeMix
from model.runtime.simulate import simulate
from model.runtime.workload import generate_requests
from packets.errors import PacketError, UsageError
from packets.load import LoadedPacket
from triage.mapping.actions import (
    KernelEvidence,
    action_to_candidate,
    adaptation_cost,
    propose_actions,
    variant,
)
from triage.scenario import Scenario, build_scenario
from triage.telemetry.files import TelemetryInputs, read_telemetry

SCHEMA = "handoff-mapping-report/1"
"""The report's schema name (model/mapping/README.md documents every key)."""

__all__ = ["SCHEMA", "action_to_candidate", "build_report", "report"]


def report(
    loaded: LoadedPacket,
    telemetry_paths: Sequence[str | Path] = (),
    *,
    candidate: str | None = None,
    adapted: str | None = None,
    command: str = "",
) -> dict:
    """The closed-loop mapping report of a packet with telemetry files (any mix of kernel
    telemetry, request telemetry and Chrome traces; see triage/telemetry/files.py).

    candidate: the compile-only configuration (default: the baseline).
    adapted: a candidate to use as the runtime adaptation (default: a bucket for every
        observed shape, tiles retuned).
    command: the command line that reproduces the report (recorded in it).
    Raises UsageError (missing files, unknown candidate), TelemetryProblem (unusable
    telemetry) or PacketError (a packet the report cannot use); messages are one line.
    """
    dtype = loaded.packet.inputs.precision.dtype
    inputs = read_telemetry([Path(p) for p in telemetry_paths], dtype=dtype)
    return build_report(loaded, inputs, candidate=candidate, adapted=adapted, command=command)


def _mix_and_stream(base: Scenario, inputs: TelemetryInputs):
    """The shape mix and request stream every configuration runs (observed when given)."""
    runtime = base.runtime
    requests = inputs.requests
    if requests is None:
        stream = generate_requests(runtime.workload, runtime.service, runtime.seed)
        values = np.asarray(runtime.workload.shapes.values, dtype=np.int64)
        weights = np.asarray(runtime.workload.shapes.weights, dtype=np.float64)
        order = np.argsort(values)
        mix = ObservedMix(stream.seq_len, values[order], weights[order] / weights.sum(), 1)
        return mix, stream, "packet"
    frame = requests.frame
    mix = observed_mix(frame["seq_len"].to_numpy(), base.hardware.tile_granule)
    stream = replay_stream(frame["arrival_ms"].to_numpy(), mix.seq_len, runtime.seed)
    return mix, stream, "request telemetry"


def _declared(base: Scenario) -> dict:
    shapes = base.packet.inputs.workload.shapes.seq_len
    return {"values": list(shapes.values), "weights": list(shapes.weights)}


def _total_variation(mix: ObservedMix, declared: dict) -> float:
    """Half the L1 distance between the observed and the declared shape mix (0 = same)."""
    values = sorted(set(mix.values.tolist()) | set(declared["values"]))
    observed = dict(zip(mix.values.tolist(), mix.weights.tolist(), strict=True))
    total = sum(declared["weights"])
    claimed = {v: w / total for v, w in zip(declared["values"], declared["weights"], strict=True)}
    return 0.5 * sum(abs(observed.get(v, 0.0) - claimed.get(v, 0.0)) for v in values)


def _require_model(loaded: LoadedPacket, scenario: Scenario) -> None:
    if scenario.uses_model:
        return
    path: tuple[str | int, ...] = ("baseline", "service")
    names = [c.name for c in loaded.packet.candidates]
    if (
        scenario.candidate in names
        and loaded.packet.candidates[names.index(scenario.candidate)].service is not None
    ):
        path = ("candidates", names.index(scenario.candidate), "service")
    raise PacketError.single(
        loaded.name,
        loaded.line_of(path),
        path,
        "the mapping report needs service.source: model (a pinned distribution has no "
        "compiled plan to map)",
    )


def _hardware_notes(frame, hw) -> list[str]:
    if "hardware" not in frame.columns:
        return []
    named = sorted({h for h in frame["hardware"].drop_nulls().unique().to_list()})
    other = [h for h in named if not hw.name.startswith(h)]
    if not other:
        return []
    return [
        f"kernel telemetry names hardware {', '.join(other)} but the packet's envelope is "
        f"{hw.name}: accuracy and calibration compare it with {hw.name}"
    ]


def _accuracy_section(base: Scenario, kernels) -> tuple[dict | None, KernelEvidence | None, list]:
    """Compile-time mapping accuracy and the per-row facts actions cite."""
    if kernels is None:
        return None, None, []
    hw = base.hardware
    compiled = list(base.config.compiled_shapes.seq_len)
    frame = kernels.frame
    predictions = predict_by_shape(frame, hw)
    accuracy = mapping_accuracy(frame, hw, compiled, predictions=predictions)
    for row in accuracy["worst"]:
        row["where"] = kernels.where(row["row"])
    measured = frame["latency_us"].to_numpy()
    implausible = predictions.supported & (measured < predictions.fastest_us)
    accuracy["implausible_examples"] = [
        {
            "where": kernels.where(int(i)),
            "measured_us": float(measured[i]),
            "physical_minimum_us": float(predictions.fastest_us[i]),
        }
        for i in np.flatnonzero(implausible)[:5]
    ]
    accuracy["not_compared_trace_kernels"] = dict(kernels.not_compared)
    if kernels.telemetry is not None:
        accuracy["excluded_on_read"] = kernels.telemetry.report.counts
    evidence = KernelEvidence(
        frame=frame,
        where=kernels.where,
        usable=predictions.supported & ~implausible,
        ape=np.abs(predictions.predicted_us - measured) / measured,
        ratio=measured / predictions.predicted_us,
        tokens=predictions.tokens,
    )
    return accuracy, evidence, _hardware_notes(frame, hw)


def _calibration_section(
    base: Scenario, evidence: KernelEvidence | None
) -> tuple[dict | None, Calibration | None, list]:
    if evidence is None:
        return None, None, []
    usable = evidence.frame.filter(pl.Series(evidence.usable))
    if usable.height < MIN_ROWS:
        note = f"calibration skipped: {usable.height} usable kernel rows (needs {MIN_ROWS})"
        return None, None, [note]
    try:
        result = calibrate(usable, base.hardware)
    except ValueError as exc:
        return None, None, [f"calibration skipped: {exc}"]
    return result.as_dict(), result, []


def build_report(
    loaded: LoadedPacket,
    inputs: TelemetryInputs,
    *,
    candidate: str | None = None,
    adapted: str | None = None,
    command: str = "",
) -> dict:
    """`report` on telemetry already read (the app reads files in a worker, then calls this)."""
    base = _scenario(loaded, candidate)
    _require_model(loaded, base)
    notes: list[str] = list(inputs.warnings)
    accuracy, evidence, more = _accuracy_section(base, inputs.kernels)
    notes += more
    calibration, fitted, more = _calibration_section(base, evidence)
    notes += more
    mix, stream, mix_source = _mix_and_stream(base, inputs)
    workload = dataclasses.replace(
        base.runtime.workload,
        shapes=ShapeMix(tuple(int(v) for v in mix.values), tuple(float(w) for w in mix.weights)),
        requests=len(stream.arrival_ms),
    )
    base = dataclasses.replace(base, runtime=dataclasses.replace(base.runtime, workload=workload))
    compile_only = run_figures(base.runtime, base.service_table, stream)

    observed = None
    if inputs.requests is not None:
        result = simulate(base.runtime, base.service_table, stream=stream)
        compiled = list(base.config.compiled_shapes.seq_len)
        latency = inputs.requests.frame["latency_ms"].to_numpy()
        observed = observed_vs_simulated(latency, result, compiled)
        observed["excluded_on_read"] = inputs.requests.report.counts

    target = _adapted(loaded, base, mix, adapted)
    adapted_figures = run_figures(target.runtime, target.service_table, stream)
    adaptation = {
        "compile_only": _config_summary(base, compile_only),
        "runtime_adaptation": _config_summary(target, adapted_figures),
        "gain": gain(compile_only, adapted_figures),
        "cost": adaptation_cost(base, target),
    }
    actions = propose_actions(
        loaded, base, stream, mix, compile_only, evidence, inputs.requests, fitted, observed
    )
    declared = _declared(base)
    return {
        "schema": SCHEMA,
        "packet": loaded.packet.id,
        "topic": loaded.packet.topic,
        "candidate": base.candidate,
        "command": command,
        "seed": int(base.runtime.seed),
        "hardware": {"name": base.hardware.name, "source": base.hardware.source},
        "inputs": {
            "files": inputs.files,
            "kernel_rows": 0 if inputs.kernels is None else inputs.kernels.frame.height,
            "requests": 0 if inputs.requests is None else inputs.requests.frame.height,
        },
        "shape_mix": {
            "source": mix_source,
            "values": [int(v) for v in mix.values],
            "weights": [float(w) for w in mix.weights],
            "rounded_to_tokens": int(mix.quantum),
            "declared": declared,
            "total_variation": _total_variation(mix, declared),
        },
        "accuracy": accuracy,
        "calibration": calibration,
        "observed": observed,
        "adaptation": adaptation,
        "actions": actions,
        "notes": notes,
    }


def _scenario(loaded: LoadedPacket, candidate: str | None) -> Scenario:
    try:
        return build_scenario(loaded, candidate)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None


def _adapted(loaded: LoadedPacket, base: Scenario, mix: ObservedMix, name: str | None) -> Scenario:
    """The runtime adaptation: a named candidate, or every observed shape compiled as its own
    bucket with every op autotuned (retuned tiles)."""
    if name is None:
        buckets = sorted(set(base.config.compiled_shapes.seq_len) | set(mix.values.tolist()))
        return variant(base, buckets=buckets, tiles={}, label="runtime-adaptation")
    other = _scenario(loaded, name)
    _require_model(loaded, other)
    runtime = dataclasses.replace(
        other.runtime, workload=base.runtime.workload, seed=base.runtime.seed
    )
    return dataclasses.replace(other, runtime=runtime)


def _config_summary(scenario: Scenario, figures: dict) -> dict:
    return {
        "config": scenario.candidate,
        "compiled_shapes": [int(s) for s in scenario.config.compiled_shapes.seq_len],
        "pinned_tiles": sorted(op for op, t in scenario.config.tiles.items() if t != "auto"),
        **figures,
    }
