"""A small SimPy model of the runtime (batching, placement, fallback; no HBM contention).

Written independently of model/runtime/kernel.py, as processes and events rather than a
next-event loop, to check it differentially. It follows the same documented semantics
(model/runtime/README.md) including the order of same-instant events: completions and arrivals first,
then dispatch decisions (a low-priority event at the end of each instant). Service parts add up
in the documented order so times match bit for bit.
"""

from __future__ import annotations

from collections import deque
from heapq import heappush

import numpy as np
import simpy

from model.runtime.inputs import RuntimeConfig
from model.runtime.queues import QueuePlan, ShapeColumns, table_rows
from model.runtime.workload import RequestStream
from model.service import ServiceTable

LATE = 2  # after simpy's NORMAL (1) events of the same instant


class _Env(simpy.Environment):
    def call_at(self, when: float, callback, priority: int = simpy.events.NORMAL) -> None:
        """Run `callback` at absolute time `when` (no now + delay rounding)."""
        event = simpy.Event(self)
        event._ok, event._value = True, None
        event.callbacks.append(lambda _: callback())
        heappush(self._queue, (max(when, self._now), priority, next(self._eid), event))


def reference_run(
    config: RuntimeConfig,
    table: ServiceTable | None,
    stream: RequestStream,
    plan: QueuePlan,
    columns: ShapeColumns,
) -> dict[str, np.ndarray]:
    """Per-request start, finish and core from a SimPy run of the same requests."""
    env = _Env()
    n = len(stream.arrival_ms)
    arrival = stream.arrival_ms
    cores = int(config.hardware.cores)
    big_b = int(config.batch_policy.max_batch)
    delay = float(config.batch_policy.max_queue_delay_ms)
    pinned = config.service.source == "distribution"
    rows = None if pinned else table_rows(table, big_b)
    overhead = config.fallback.dispatch_overhead_us / 1000.0
    stall_ms = config.fallback.compile_stall_ms

    core_sets = [
        plan.lane_core_idx[plan.lane_core_ptr[i] : plan.lane_core_ptr[i + 1]].tolist()
        for i in range(len(plan.lane_core_ptr) - 1)
    ]
    queues: dict[tuple[int, int], deque] = {}
    busy = [False] * cores
    free_since = [0.0] * cores
    planned = [0.0] * cores
    # least-loaded: queued work as a running sum, added at arrival, subtracted per batch and
    # reset to 0 when the core's queue empties (the documented estimator, same rounding)
    queued_work = [0.0] * cores
    queued_count = [0] * cores
    compile_done: dict[int, float] = {}
    out = {"start": np.full(n, np.nan), "finish": np.full(n, np.nan), "core": np.full(n, -1)}
    check_pending = [False]

    def lane_ready(q: deque) -> float:
        timer = arrival[q[0]] + delay
        return min(arrival[q[big_b - 1]], timer) if len(q) >= big_b else timer

    def request_check() -> None:
        if not check_pending[0]:
            check_pending[0] = True
            env.call_at(env.now, dispatch_all, LATE)

    def choose_base(i: int) -> int:
        if config.placement == "round-robin":
            return i % cores
        if config.placement == "random":
            return int(stream.placement_draw[i] % cores)
        if config.placement == "central-queue":
            return 0
        if config.placement == "shape-affinity":
            return int(plan.req_base[i])
        work = []
        for k in range(cores):
            w = queued_work[k]
            if busy[k]:
                w += max(0.0, planned[k] - env.now)
            work.append(w)
        return int(np.argmin(work))

    def arrive(i: int) -> None:
        base = choose_base(i)
        key = (base, int(plan.req_sub[i]) if config.batch_policy.bucketing else 0)
        queues.setdefault(key, deque()).append(i)
        if config.placement == "least-loaded":
            queued_work[base] += plan.req_est_ms[i]
            queued_count[base] += 1
        env.call_at(lane_ready(queues[key]), request_check)
        request_check()

    def dispatch_all() -> None:
        check_pending[0] = False
        while True:
            best = None
            for key, q in queues.items():
                if not q or lane_ready(q) > env.now:
                    continue
                if not any(not busy[k] for k in core_sets[key[0]]):
                    continue
                rank = (arrival[q[0]], key[0] * plan.n_sub + key[1])
                if best is None or rank < best[0]:
                    best = (rank, key)
            if best is None:
                return
            start_batch(best[1])

    def start_batch(key: tuple[int, int]) -> None:
        q = queues[key]
        free = [k for k in core_sets[key[0]] if not busy[k]]
        core = min(free, key=lambda k: (free_since[k], k))
        members = [q.popleft() for _ in range(min(len(q), big_b))]
        if q:
            env.call_at(lane_ready(q), request_check)
        if config.placement == "least-loaded":
            batch_work = 0.0
            for r in members:
                batch_work += plan.req_est_ms[r]
            queued_work[key[0]] -= batch_work
            queued_count[key[0]] -= len(members)
            if queued_count[key[0]] == 0:
                queued_work[key[0]] = 0.0
        col = int(max(plan.req_col[r] for r in members))
        stall = 0.0
        if columns.fallback[col] and stall_ms > 0:
            if col not in compile_done:
                compile_done[col] = env.now + stall_ms
                stall = stall_ms
            elif env.now < compile_done[col]:
                stall = compile_done[col] - env.now
        if pinned:
            fixed = stall + stream.service_draw_ms[members[0]]
            fixed += overhead if columns.fallback[col] else 0.0
            memory = 0.0
        else:
            row = rows[len(members)]
            fixed = stall + table.launch_ms[row, col] + table.compute_bound_ms[row, col]
            memory = float(table.memory_bound_ms[row, col])
        busy[core] = True
        planned[core] = (env.now + fixed) + memory
        for r in members:
            out["start"][r] = env.now
            out["core"][r] = core
        env.process(serve(core, members, fixed, memory))

    def serve(core: int, members: list[int], fixed: float, memory: float):
        yield env.timeout(fixed)
        if memory > 0:
            yield env.timeout(memory)
        for r in members:
            out["finish"][r] = env.now
        busy[core] = False
        free_since[core] = env.now
        request_check()

    for i in range(n):
        env.call_at(float(arrival[i]), lambda i=i: arrive(i))
    env.run()
    return out
