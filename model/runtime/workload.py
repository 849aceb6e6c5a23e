"""Request streams: arrival times and shapes drawn reproducibly from a seed.

Each kind of draw has its own random stream spawned from the seed (numpy SeedSequence), so
changing one policy (placement, fallback, contention) never shifts the arrival, shape or
service draws: counterfactual runs see the same requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from model.runtime.inputs import Arrivals, ServiceSpec, Workload

STREAMS = ("arrivals", "shapes", "service", "placement")


@dataclass(frozen=True)
class RequestStream:
    """The requests of one run, sorted by arrival.

    Attributes:
        arrival_ms: (N,) float64 arrival times, ms, non-decreasing.
        seq_len: (N,) int64 runtime shape of each request (tokens).
        service_draw_ms: (N,) float64 pinned-distribution draw of each request, ms (the time
            of the batch it leads); zeros when service comes from a model table.
        seed: the seed the stream was drawn from.
    `placement_draw` ((N,) int64 uniform in [0, 2**31), for random placement) is drawn from
    its own stream on first use, so runs that never place randomly never pay for it.
    """

    arrival_ms: np.ndarray
    seq_len: np.ndarray
    service_draw_ms: np.ndarray
    seed: int

    @cached_property
    def placement_draw(self) -> np.ndarray:
        """(N,) int64 uniform draws in [0, 2**31) for random placement."""
        rng = random_streams(self.seed)["placement"]
        return rng.integers(0, 2**31, size=len(self.arrival_ms), dtype=np.int64)


def random_streams(seed: int) -> dict[str, np.random.Generator]:
    """One independent numpy Generator per kind of draw, all from `seed`."""
    children = np.random.SeedSequence(int(seed)).spawn(len(STREAMS))
    return {
        name: np.random.Generator(np.random.PCG64(s))
        for name, s in zip(STREAMS, children, strict=True)
    }


def arrival_times_ms(arrivals: Arrivals, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) arrival times, ms, from the arrival process (first arrival after one gap)."""
    if arrivals.process == "trace":
        return _replay_trace(
            np.asarray(arrivals.trace_ms, dtype=np.float64), n, arrivals.rate_per_s
        )
    mean_gap_ms = 1000.0 / arrivals.rate_per_s
    if arrivals.process == "poisson":
        gaps = rng.exponential(mean_gap_ms, n)
    else:  # gamma: shape 1/cv^2 and scale mean*cv^2 give the mean gap and the cv asked for
        shape = 1.0 / arrivals.cv**2
        gaps = rng.gamma(shape, mean_gap_ms / shape, n)
    return np.cumsum(gaps)


def _replay_trace(trace_ms: np.ndarray, n: int, rate_per_s: float | None) -> np.ndarray:
    """First n arrivals of the trace, repeated after its span plus one mean gap if n is larger."""
    mean_gap = (trace_ms[-1] - trace_ms[0]) / (len(trace_ms) - 1)
    t = trace_ms - trace_ms[0]
    if rate_per_s is not None:  # rescale time so the mean rate is the one asked for
        factor = (1000.0 / rate_per_s) / mean_gap
        t, mean_gap = t * factor, mean_gap * factor
    period = t[-1] + mean_gap
    reps = -(-n // len(t))
    tiled = (t[None, :] + period * np.arange(reps)[:, None]).ravel()[:n]
    return tiled + trace_ms[0]


def service_draws_ms(service: ServiceSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) pinned service draws, ms (zeros for model tables)."""
    if service.source != "distribution":
        return np.zeros(n)
    if service.dist == "deterministic":
        return np.full(n, float(service.mean_ms))
    if service.dist == "exponential":
        return rng.exponential(service.mean_ms, n)
    sigma2 = np.log1p(service.cv**2)  # lognormal with the asked mean and cv
    return rng.lognormal(np.log(service.mean_ms) - sigma2 / 2, np.sqrt(sigma2), n)


def generate_requests(workload: Workload, service: ServiceSpec, seed: int) -> RequestStream:
    """Draw the whole request stream of a run from `seed` (bit-for-bit reproducible)."""
    n = int(workload.requests)
    rng = random_streams(seed)
    weights = np.asarray(workload.shapes.weights, dtype=np.float64)
    values = np.asarray(workload.shapes.values, dtype=np.int64)
    if len(values) == 1:  # nothing to draw (the shape stream is separate: no other draw moves)
        seq_len = np.full(n, values[0], dtype=np.int64)
    else:
        seq_len = values[rng["shapes"].choice(len(values), size=n, p=weights / weights.sum())]
    return RequestStream(
        arrival_ms=arrival_times_ms(workload.arrivals, n, rng["arrivals"]),
        seq_len=seq_len,
        service_draw_ms=service_draws_ms(service, n, rng["service"]),
        seed=int(seed),
    )
