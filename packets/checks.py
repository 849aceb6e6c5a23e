"""Checks that span fields: things a per-field schema cannot see.

Each check returns Problems located at the most specific path it can name. Errors make a
packet invalid; warnings are shown (by `workbench check` and the app) but do not block loading.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

from .candidates import BASELINE, apply_candidate
from .errors import PacketError, Problem, UsageError
from .schema import ROLES_BY_TOPIC, Config, DistributionService, Packet
from .serving_checks import mix_problems, serving_problems
from .strict_yaml import LoadedYaml
from .trace import read_trace

MIN_MEASURED_REQUESTS = 1000  # below this p99 rests on fewer than 10 requests

Path_ = tuple[str | int, ...]
Found = Iterator[tuple[Path_, str, str]]  # (path, message, severity)

BLOCK_DIMS = {
    "llama-decoder": ("heads", "kv_heads", "head_dim", "ffn_hidden"),
    "mlp": ("ffn_hidden",),
    "attention": ("heads", "kv_heads", "head_dim"),
}
OPTIONAL_DIMS = ("heads", "kv_heads", "head_dim", "ffn_hidden")


def _owners(packet: Packet) -> Found:
    roles = ROLES_BY_TOPIC[packet.topic]
    seen: dict[str, int] = {}
    for i, owner in enumerate(packet.owners):
        if owner.role not in roles:
            yield (
                ("owners", i, "role"),
                f"role '{owner.role}' does not belong to {packet.topic} packets "
                f"(roles: {', '.join(roles)})",
                "error",
            )
        elif owner.role in seen:
            yield (
                ("owners", i, "role"),
                f"role '{owner.role}' is already held by owners[{seen[owner.role]}]",
                "error",
            )
        else:
            seen[owner.role] = i
    for role in roles:
        if role not in seen:
            yield (("owners",), f"no owner for role '{role}' ({roles[role]})", "error")
    principals: dict[str, int] = {}
    for i, owner in enumerate(packet.owners):
        if owner.principal in principals:
            yield (
                ("owners", i, "principal"),
                f"'{owner.principal}' already signs for owners[{principals[owner.principal]}]; "
                "each role should have its own reviewer",
                "warning",
            )
        principals.setdefault(owner.principal, i)


def _block(packet: Packet) -> Found:
    block = packet.inputs.workload.block
    base = ("inputs", "workload", "block")
    needed = BLOCK_DIMS[block.kind]
    for dim in OPTIONAL_DIMS:
        value = getattr(block, dim)
        if dim in needed and value is None:
            yield ((*base, dim), f"required for kind {block.kind}", "error")
        elif dim not in needed and value is not None:
            yield ((*base, dim), f"not used by kind {block.kind}: remove it", "error")
    if block.heads and block.kv_heads and block.heads % block.kv_heads:
        yield (
            (*base, "kv_heads"),
            f"heads ({block.heads}) must be a multiple of kv_heads ({block.kv_heads})",
            "error",
        )


def _arrivals(packet: Packet, base_dir: Path | None) -> Found:
    arrivals = packet.inputs.workload.arrivals
    base = ("inputs", "workload", "arrivals")
    if arrivals.process in ("poisson", "gamma") and arrivals.rate_per_s is None:
        yield ((*base, "rate_per_s"), f"required for process {arrivals.process}", "error")
    if arrivals.process == "gamma" and arrivals.cv is None:
        yield ((*base, "cv"), "required for process gamma (inter-arrival CV)", "error")
    if arrivals.process != "gamma" and arrivals.cv is not None:
        yield ((*base, "cv"), "applies only to process gamma: remove it", "error")
    if arrivals.process != "trace" and arrivals.trace is not None:
        yield ((*base, "trace"), "applies only to process trace: remove it", "error")
    if arrivals.process == "trace":
        if arrivals.trace is None:
            yield ((*base, "trace"), "required for process trace", "error")
        elif arrivals.rate_per_s is not None:
            yield ((*base, "rate_per_s"), "a trace sets its own rate: remove it", "error")
        else:
            try:
                read_trace(resolve_relative(arrivals.trace, base_dir), arrivals.trace)
            except UsageError as exc:
                yield ((*base, "trace"), f"{exc} (paths are relative to the packet)", "error")
            except PacketError as exc:
                yield ((*base, "trace"), f"bad trace: {exc.problems[0]}", "error")


def resolve_relative(name: str, base_dir: Path | None) -> Path:
    """A path written in a packet, taken relative to the packet's folder."""
    path = Path(name)
    return path if path.is_absolute() or base_dir is None else base_dir / path


def _shapes_and_requests(packet: Packet) -> Found:
    workload = packet.inputs.workload
    mix = workload.shapes.seq_len
    yield from mix_problems(mix, ("inputs", "workload", "shapes", "seq_len"))
    measured = workload.requests - math.floor(workload.requests * workload.warmup_fraction)
    if measured < MIN_MEASURED_REQUESTS:
        yield (
            ("inputs", "workload", "requests"),
            f"only {measured} requests are measured after warm-up: p99 rests on fewer than "
            f"{max(measured // 100, 0) + 1} requests",
            "warning",
        )


def _sla_and_precision(packet: Packet) -> Found:
    sla = packet.inputs.sla
    if sla.p99_ms < sla.p95_ms:
        yield (
            ("inputs", "sla", "p99_ms"),
            f"p99 target {sla.p99_ms} ms is below the p95 target {sla.p95_ms} ms",
            "error",
        )
    precision = packet.inputs.precision
    if precision.dtype not in precision.quality.measured:
        yield (
            ("inputs", "precision", "quality", "measured"),
            f"no measured quality for the baseline precision {precision.dtype}",
            "warning",
        )


def _hardware(packet: Packet) -> Found:
    hw = packet.inputs.hardware
    if hw.preset is not None and hw.file is not None:
        yield (("inputs", "hardware", "file"), "give a preset or a file, not both", "error")
    if hw.preset is None and hw.file is None:
        missing = [
            name
            for name in ("cores", "units_per_core", "peak_tflops", "hbm_gbs", "sram_kib_per_unit")
            if getattr(hw, name) is None
        ]
        for name in missing:
            yield (
                ("inputs", "hardware", name),
                "required when neither preset nor file is given",
                "error",
            )


def config_problems(config: Config, path: Path_) -> Found:
    """Problems inside one configuration (compiled shapes, pinned service)."""
    shapes = config.compiled_shapes.seq_len
    if len(set(shapes)) != len(shapes) or shapes != sorted(shapes):
        yield ((*path, "compiled_shapes", "seq_len"), "must be distinct and ascending", "error")
    service = config.service
    if isinstance(service, DistributionService):
        expected = {"exponential": 1.0, "deterministic": 0.0}.get(service.dist)
        if service.dist == "lognormal" and service.cv is None:
            yield ((*path, "service", "cv"), "required for dist lognormal", "error")
        elif expected is not None and service.cv not in (None, expected):
            yield (
                (*path, "service", "cv"),
                f"dist {service.dist} has cv {expected:g}: remove it",
                "error",
            )


def _candidates(packet: Packet) -> Found:
    names: dict[str, int] = {}
    for i, candidate in enumerate(packet.candidates):
        if candidate.name == BASELINE:
            yield (("candidates", i, "name"), "'baseline' names the baseline itself", "error")
        elif candidate.name in names:
            yield (
                ("candidates", i, "name"),
                f"duplicate candidate name (also candidates[{names[candidate.name]}])",
                "error",
            )
        names.setdefault(candidate.name, i)
        resolved = apply_candidate(packet.baseline, candidate)
        overridden = {name for name in type(candidate).model_fields if getattr(candidate, name)}
        for path, message, severity in config_problems(resolved, ("candidates", i)):
            if path[2] in overridden:  # the baseline's own problems are reported once, there
                yield path, message, severity
        if resolved == packet.baseline and candidate.dtype in (None, packet.inputs.precision.dtype):
            yield (("candidates", i), f"candidate '{candidate.name}' changes nothing", "warning")


def _signatures(packet: Packet) -> Found:
    roles = {owner.role for owner in packet.owners}
    for i, signature in enumerate(packet.signatures):
        if signature.role not in roles:
            yield (("signatures", i, "role"), f"no owner holds role '{signature.role}'", "error")


CHECKS: list[Callable[[Packet], Found]] = [
    _owners,
    _block,
    _shapes_and_requests,
    _sla_and_precision,
    _hardware,
    lambda p: config_problems(p.baseline, ("baseline",)),
    _candidates,
    _signatures,
    serving_problems,
]


def semantic_problems(
    packet: Packet, loaded: LoadedYaml | None, file: str, base_dir: Path | None
) -> list[Problem]:
    """Every cross-field problem in `packet` (errors and warnings), located by line."""
    found = [item for check in CHECKS for item in check(packet)]
    found += list(_arrivals(packet, base_dir))
    return [
        Problem(file, loaded.line_of(path) if loaded else 0, path, message, severity)
        for path, message, severity in found
    ]
