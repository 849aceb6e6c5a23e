"""The sequential event loop of the runtime simulator (numba, compiled once and cached).

Why a loop: dispatching to the first free core, a batching timer and shared-HBM contention all
depend on the state the previous requests left, so the recursion cannot vectorize over
requests (numpy can only vectorize it across configurations, which `model.runtime.sweep` does with
threads instead: this kernel releases the GIL).

The loop is a next-event simulation with three kinds of events, handled in this order when
they coincide: a core's phase ends (completions free cores first), a request arrives (it can
still join a batch dispatched at the same instant), a batch is dispatched.

Queues ("lanes"): lane = base * n_sub + sub. The base lane is 0 for a central queue, the core
for per-core placements, or the shape-affinity group; `sub` is the compiled bucket when
bucketing is on (else 0). Each base lane is served by a set of cores (CSR arrays
lane_core_ptr / lane_core_idx). A free core serves the ready lane whose head is oldest.

A batch runs up to three phases on its core: a fixed phase (compile stall + launch; in
distribution mode stall + the pinned draw + fallback dispatch overhead) that never stretches,
a compute phase (compute-bound kernels) and a memory phase (memory-bound kernels). The last two
request HBM at demand d = their bytes / their time alone, and share the device bandwidth W
max-min fairly (water-filling): when total demand exceeds W a phase gets min(d, L), with the
level L set so the shares sum to W, and progresses at min(d, L) / d of its own speed. (With
equal outstanding-request windows per core, Little's law gives exactly this: every core gets
window / loaded latency, and a phase that needs less keeps what it needs.) A compute phase
without HBM bytes, or any compute phase with contention off, is folded into the fixed phase.
The service tables have a leading level axis: level c - 1 holds the plan's times and bytes
when c cores are busy (each holding 1/c of the shared cache); a batch takes the level of the
cores busy at its dispatch, itself included (level 0 when contention is off).
Times are ms, bandwidth bytes per ms.

Division: the kernels compile with numba's numpy error model (`ERRORS`). The default (Python)
model tests every float division's divisor for zero, to raise ZeroDivisionError, a compare
and branch on the hot path (~20% of a contention run's kernel time on 2026-12-01,
benchmarks.bench_runtime's re-runs of `mapping-dynamic-shapes`). Every division here has a
non-zero divisor by construction (guarded by the branch it sits in: b_compute > 0, b_memory > 0,
demand > level > 0, rate in (0, 1], a positive active count), and where the divisor is non-zero
both models compute the same IEEE quotient, so the results are the same bits.
"""

from __future__ import annotations

import numpy as np

from model.runtime.jit import njit

IDLE, FIXED, COMPUTE, MEMORY = 0, 1, 2, 3
ERRORS = "numpy"  # see "Division" above


@njit(cache=True, error_model=ERRORS)
def _lane_ready(lane, head, nxt, count, arrival, max_batch, delay_ms):
    """Time the lane's next batch may go: full (B-th request arrived) or the oldest's timer."""
    if count[lane] == 0:
        return np.inf
    h = head[lane]
    timer = arrival[h] + delay_ms
    if count[lane] < max_batch:
        return timer
    j = h
    for _ in range(max_batch - 1):  # walk to the B-th queued request (B is small)
        j = nxt[j]
    return min(arrival[j], timer)


@njit(cache=True, inline="always", error_model=ERRORS)
def _share_bandwidth(t, k, phase, demand, rate, anchor_t, anchor_rem, end_t, capacity, contention):
    """Share `capacity` max-min fairly among the demands of the stretchable phases (core k's
    phase just changed at time t): set each core's progress rate (fraction of its own speed),
    re-anchoring the progress of every other core whose rate changes and updating its phase's
    end (`end_t`: anchor + remaining / rate). Returns total demand.

    Water-filling without sorting: start the level at capacity / active; phases demanding no
    more than the level are satisfied, and the level rises to share what they leave among the
    rest; repeat until no more are satisfied (one pass when every demand exceeds the first
    level, the common case of memory-bound phases)."""
    total = 0.0
    active = 0
    lowest = np.inf
    for q in range(phase.shape[0]):
        if phase[q] >= COMPUTE and demand[q] > 0:
            total += demand[q]
            active += 1
            lowest = min(lowest, demand[q])
    level = np.inf
    if contention and total > capacity:
        level = capacity / active
        satisfied = 0
        while lowest <= level:  # some phases need less than the level: give it to the rest
            kept = 0.0
            count = 0
            for q in range(phase.shape[0]):
                if phase[q] >= COMPUTE and 0 < demand[q] <= level:
                    kept += demand[q]
                    count += 1
            if count in (satisfied, active):  # no change, or all satisfied (only by rounding)
                break
            satisfied = count
            level = (capacity - kept) / (active - count)
    for q in range(phase.shape[0]):
        if phase[q] < COMPUTE:
            rate[q] = 1.0
            continue
        new = level / demand[q] if demand[q] > level else 1.0
        if new != rate[q]:
            if q != k:  # re-anchor the progress made at the old rate
                anchor_rem[q] = max(0.0, anchor_rem[q] - (t - anchor_t[q]) * rate[q])
                anchor_t[q] = t
            rate[q] = new
            end_t[q] = anchor_t[q] + anchor_rem[q] / rate[q]
    return total


@njit(cache=True, nogil=True, error_model=ERRORS)
def simulate_kernel(
    arrival,
    req_col,
    req_sub,
    req_base,
    req_est,
    req_draw,
    least_loaded,
    n_cores,
    n_sub,
    lane_core_ptr,
    lane_core_idx,
    max_batch,
    delay_ms,
    dist_mode,
    size_row,
    launch_tab,
    compute_tab,
    memory_tab,
    bytes_tab,
    compute_bytes_tab,
    col_fallback,
    stall_ms,
    overhead_ms,
    contention,
    hbm_bytes_per_ms,
    timeline,
):
    """Simulate one run. Returns per-request batch ids, per-batch arrays and the HBM timeline.

    req_sub, req_base and req_est are only read when they matter (more than one sub-queue,
    more than one base lane, least-loaded), so callers may pass 1-element placeholders.
    With `timeline` False the HBM demand timeline is not recorded (n_timeline stays 1): runs
    that only need latencies (the counterfactuals) save its 16 bytes per entry, and of the
    per-batch arrays only b_finish is written: start, ready, memory start, core, lead, stall and
    slowed are left unwritten (their pages never backed), and what the loop reads back of a
    running batch (size, col, compute, memory, level) is kept in its core's entry of
    n_cores-long arrays (28 bytes a batch fewer written), so only req_batch
    and b_finish are results then. With it False and contention off as well, a batch's memory phase
    is folded into its fixed phase: alone at full speed it ends at (fixed end) + memory time,
    the same float the separate phase reaches (anchor + remaining / 1.0), and a phase change no
    core can see (no demand is shared, nothing is recorded, the core stays busy) is one event
    fewer per batch.

    Memory: the per-batch arrays are sized for the worst case (one batch per request) but
    allocated empty and written only up to n_batches, so the operating system backs only the
    pages written; indices are int32 (a run is capped at 10M requests, far below 2**31).

    Returns (req_batch, b_start, b_ready, b_mem_start, b_finish, b_core, b_size, b_col,
    b_lead, b_stall, b_compute, b_memory, b_slowed, b_level, n_batches, tl_time, tl_demand,
    n_timeline); per-batch
    arrays are valid up to n_batches and the timeline (time, total requested HBM demand in
    bytes/ms from that time on) up to n_timeline.
    """
    n = arrival.shape[0]
    n_base = lane_core_ptr.shape[0] - 1
    n_lanes = n_base * n_sub
    n_cols = col_fallback.shape[0]

    nxt = np.full(n, -1, np.int32)
    head = np.full(n_lanes, -1, np.int64)
    tail = np.full(n_lanes, -1, np.int64)
    count = np.zeros(n_lanes, np.int64)
    ready = np.full(n_lanes, np.inf)
    base_count = np.zeros(n_base, np.int64)

    phase = np.zeros(n_cores, np.int64)
    free_since = np.zeros(n_cores)
    fixed_end = np.zeros(n_cores)
    anchor_t = np.zeros(n_cores)
    anchor_rem = np.zeros(n_cores)
    # When each busy core's phase ends: fixed_end, or anchor_t + anchor_rem / rate kept as
    # those change (a division less per core in every scan for the next phase end).
    end_t = np.zeros(n_cores)
    demand = np.zeros(n_cores)
    rate = np.ones(n_cores)
    core_batch = np.full(n_cores, -1, np.int64)
    planned_finish = np.zeros(n_cores)
    queued_est = np.zeros(n_cores)
    compile_started = np.zeros(n_cols, np.bool_)
    compile_done = np.zeros(n_cols)
    # HBM demand (bytes/ms) of each table cell's compute and memory phase, divided once here
    # rather than at every phase start (the same quotients: a phase's time is its cell's);
    # each running batch's two demands are kept with its core.
    compute_demand = np.zeros(compute_tab.shape)
    memory_demand = np.zeros(memory_tab.shape)
    if not dist_mode:
        for lv in range(compute_tab.shape[0]):
            for rw in range(compute_tab.shape[1]):
                for cl in range(compute_tab.shape[2]):
                    if compute_tab[lv, rw, cl] > 0:
                        compute_demand[lv, rw, cl] = (
                            compute_bytes_tab[lv, rw, cl] / compute_tab[lv, rw, cl]
                        )
                    if memory_tab[lv, rw, cl] > 0:
                        memory_demand[lv, rw, cl] = bytes_tab[lv, rw, cl] / memory_tab[lv, rw, cl]
    core_compute_demand = np.zeros(n_cores)
    core_memory_demand = np.zeros(n_cores)
    # Idle cores among each base lane's core set (a lane can dispatch when it has one), kept
    # as cores start and finish batches: core_base_ptr/idx list the base lanes each core serves.
    idle_in_base = np.zeros(n_base, np.int64)
    core_base_ptr = np.zeros(n_cores + 1, np.int64)
    for bl in range(n_base):
        idle_in_base[bl] = lane_core_ptr[bl + 1] - lane_core_ptr[bl]
        for j in range(lane_core_ptr[bl], lane_core_ptr[bl + 1]):
            core_base_ptr[lane_core_idx[j] + 1] += 1
    for q in range(n_cores):
        core_base_ptr[q + 1] += core_base_ptr[q]
    core_base_idx = np.empty(core_base_ptr[n_cores], np.int64)
    filled = core_base_ptr[:-1].copy()
    for bl in range(n_base):
        for j in range(lane_core_ptr[bl], lane_core_ptr[bl + 1]):
            q = lane_core_idx[j]
            core_base_idx[filled[q]] = bl
            filled[q] += 1

    req_batch = np.full(n, -1, np.int32)
    # Per-batch arrays: every entry below n_batches is written at dispatch or completion.
    b_start = np.empty(n)
    b_ready = np.empty(n)
    b_mem_start = np.empty(n)
    b_finish = np.empty(n)
    b_core = np.empty(n, np.int32)
    # What the loop reads back of a batch while it runs (size, column, compute, memory, level)
    # sits in its batch's entry for the full simulation (outputs) but only in its core's for a
    # latency-only run (n_cores entries, read back from L1: ~0.5 MB less written a 20,000-
    # request run of the slowest example, whose re-runs then run faster side by side).
    n_slots = n if timeline else n_cores
    b_size = np.empty(n_slots, np.int32)
    b_col = np.empty(n_slots, np.int32)
    b_lead = np.empty(n, np.int32)
    b_stall = np.empty(n)
    b_compute = np.empty(n_slots)  # stretchable compute-bound time (0 when folded into the fixed)
    b_memory = np.empty(n_slots)
    b_slowed = np.empty(n, np.bool_)  # a compute or memory phase ever ran below its own speed
    b_level = np.empty(n_slots, np.int32)  # table level: cores busy at dispatch - 1
    n_levels = launch_tab.shape[0]
    # pinned service has no memory phases
    tl_size = 3 * n + 1 if timeline and not dist_mode else 1
    tl_time = np.empty(tl_size)  # only the first n_tl entries are written and read
    tl_demand = np.empty(tl_size)
    tl_time[0] = 0.0
    tl_demand[0] = 0.0
    n_tl = 1  # the timeline starts at 0 ms with no demand
    fold = not timeline and not contention  # memory phase folded into the fixed one (above)

    t = 0.0
    i_next = 0
    done = 0
    nb = 0
    # Cached next phase end and best dispatch: recomputed only after events that can change
    # them (arrivals leave phases alone; a core entering its memory phase stays busy).
    phases_dirty = True
    lanes_dirty = True
    t_ph = np.inf
    k_ph = -1
    t_d = np.inf
    lane_d = -1
    head_d = np.inf
    while done < n:
        t_arr = arrival[i_next] if i_next < n else np.inf

        if phases_dirty:  # next phase end among busy cores
            phases_dirty = False
            t_ph = np.inf
            k_ph = -1
            for k in range(n_cores):
                if phase[k] == IDLE:
                    continue
                te = end_t[k]
                if te < t_ph:
                    t_ph = te
                    k_ph = k

        if lanes_dirty:  # earliest dispatch among lanes with a free core, oldest head first
            lanes_dirty = False
            t_d = np.inf
            lane_d = -1
            head_d = np.inf
            for lane in range(n_lanes):
                if count[lane] == 0:
                    continue
                if idle_in_base[lane // n_sub] == 0:
                    continue
                td = max(ready[lane], t)
                ha = arrival[head[lane]]
                if td < t_d or (td == t_d and ha < head_d):
                    t_d = td
                    lane_d = lane
                    head_d = ha

        if k_ph < 0 and lane_d < 0 and i_next >= n:
            break  # nothing can happen any more (only with an empty core set: a caller bug)
        if k_ph >= 0 and t_ph <= t_arr and t_ph <= t_d:
            # ---- a phase ends on core k_ph
            k = k_ph
            t = max(t, t_ph)
            b = core_batch[k]
            e = b if timeline else k  # its entry in size, column, compute, memory, level
            phases_dirty = True
            before = demand[k]
            if phase[k] == FIXED and b_compute[e] > 0:
                phase[k] = COMPUTE
                anchor_t[k] = t
                anchor_rem[k] = b_compute[e]
                demand[k] = core_compute_demand[k]
            elif phase[k] <= COMPUTE and b_memory[e] > 0 and not fold:
                phase[k] = MEMORY
                if timeline:
                    b_mem_start[b] = t
                anchor_t[k] = t
                anchor_rem[k] = b_memory[e]
                demand[k] = core_memory_demand[k]
            else:
                if phase[k] != MEMORY and timeline:
                    b_mem_start[b] = t
                phase[k] = IDLE
                for j in range(core_base_ptr[k], core_base_ptr[k + 1]):
                    idle_in_base[core_base_idx[j]] += 1
                lanes_dirty = True
                free_since[k] = t
                core_batch[k] = -1
                b_finish[b] = t
                done += b_size[e]
                demand[k] = 0.0
            if before > 0 or demand[k] > 0:  # the set of HBM demands changed: share again
                total = _share_bandwidth(
                    t, k, phase, demand, rate, anchor_t, anchor_rem, end_t, hbm_bytes_per_ms,
                    contention,
                )  # fmt: skip
                if total > hbm_bytes_per_ms and contention and timeline:
                    for q in range(n_cores):
                        if rate[q] < 1.0:
                            b_slowed[core_batch[q]] = True
                if timeline:
                    tl_time[n_tl] = t
                    tl_demand[n_tl] = total
                    n_tl += 1
            if phase[k] >= COMPUTE:  # its new phase's end, at the rate just set
                end_t[k] = anchor_t[k] + anchor_rem[k] / rate[k]
        elif t_arr <= t_d:
            # ---- request i_next arrives
            i = i_next
            t = t_arr
            if least_loaded:  # least outstanding work: remaining planned work + queued estimates
                base = 0
                best = np.inf
                for k in range(n_cores):
                    work = queued_est[k]
                    if phase[k] != IDLE:
                        work += max(0.0, planned_finish[k] - t)
                    if work < best:
                        best = work
                        base = k
                queued_est[base] += req_est[i]
            elif n_base > 1:
                base = req_base[i]
            else:
                base = 0
            lane = base * n_sub + (req_sub[i] if n_sub > 1 else 0)
            if count[lane] == 0:
                head[lane] = i
            else:
                nxt[tail[lane]] = i
            tail[lane] = i
            count[lane] += 1
            base_count[base] += 1
            if count[lane] == max_batch:
                ready[lane] = min(arrival[i], arrival[head[lane]] + delay_ms)
            elif count[lane] == 1:
                ready[lane] = arrival[i] + delay_ms
            i_next += 1
            # only this lane changed (and a core of it is idle): compare it with the cached best
            if not lanes_dirty and idle_in_base[base] > 0:
                td = max(ready[lane], t)
                ha = arrival[head[lane]]
                if lane == lane_d or (
                    td < t_d or (td == t_d and (ha < head_d or (ha == head_d and lane < lane_d)))
                ):
                    t_d = td
                    lane_d = lane
                    head_d = ha
        else:
            # ---- dispatch a batch from lane_d at t_d
            lane = lane_d
            t = t_d
            base = lane // n_sub
            lanes_dirty = True
            k = -1
            for j in range(lane_core_ptr[base], lane_core_ptr[base + 1]):
                q = lane_core_idx[j]
                if phase[q] == IDLE and (k < 0 or free_since[q] < free_since[k]):
                    k = q
            size = min(count[lane], max_batch)
            b = nb
            nb += 1
            lead = head[lane]
            col = 0
            est_sum = 0.0
            for _ in range(size):
                r = head[lane]
                req_batch[r] = b
                if req_col[r] > col:
                    col = req_col[r]
                if least_loaded:
                    est_sum += req_est[r]
                head[lane] = nxt[r]
            count[lane] -= size
            base_count[base] -= size
            if timeline:
                b_ready[b] = ready[lane]
            ready[lane] = _lane_ready(lane, head, nxt, count, arrival, max_batch, delay_ms)

            stall = 0.0
            fb = col_fallback[col]
            if fb and stall_ms > 0:
                if not compile_started[col]:
                    compile_started[col] = True
                    compile_done[col] = t + stall_ms
                    stall = stall_ms
                elif t < compile_done[col]:
                    stall = compile_done[col] - t
            row = size_row[size]
            level = 0
            if contention and n_levels > 1:  # cores busy now, this one included, minus 1
                for q in range(n_cores):
                    if phase[q] != IDLE:
                        level += 1
                level = min(level, n_levels - 1)
            comp = 0.0
            if dist_mode:
                fixed = stall + req_draw[lead] + (overhead_ms if fb else 0.0)
                mem = 0.0
            elif contention and compute_bytes_tab[level, row, col] > 0:  # its bytes contend
                fixed = stall + launch_tab[level, row, col]
                comp = compute_tab[level, row, col]
                mem = memory_tab[level, row, col]
            else:
                fixed = stall + launch_tab[level, row, col] + compute_tab[level, row, col]
                mem = memory_tab[level, row, col]
            if not dist_mode:
                core_compute_demand[k] = compute_demand[level, row, col]
                core_memory_demand[k] = memory_demand[level, row, col]

            e = b if timeline else k
            b_size[e] = size
            b_col[e] = col
            b_compute[e] = comp
            b_memory[e] = mem
            b_level[e] = level
            if timeline:  # outputs only the full simulation reads
                b_start[b] = t
                b_core[b] = k
                b_lead[b] = lead
                b_stall[b] = stall
                b_slowed[b] = False
            phase[k] = FIXED
            for j in range(core_base_ptr[k], core_base_ptr[k + 1]):
                idle_in_base[core_base_idx[j]] -= 1
            core_batch[k] = b
            fixed_end[k] = t + fixed
            planned_finish[k] = (t + fixed) + comp + mem
            if fold:  # comp is 0 with contention off: the memory phase runs at full speed
                fixed_end[k] = (t + fixed) + mem
            end_t[k] = fixed_end[k]
            # Only core k's phase changed (a fixed phase demands no HBM: no rate moved), so the
            # next phase end is the cached one or k's, the lower core first on ties (as a scan).
            if fixed_end[k] < t_ph or (fixed_end[k] == t_ph and k < k_ph):
                t_ph = fixed_end[k]
                k_ph = k
            if least_loaded:
                queued_est[base] -= est_sum
                if base_count[base] == 0:
                    queued_est[base] = 0.0  # no drift once the core's queue is empty

    return (
        req_batch,
        b_start,
        b_ready,
        b_mem_start,
        b_finish,
        b_core,
        b_size,
        b_col,
        b_lead,
        b_stall,
        b_compute,
        b_memory,
        b_slowed,
        b_level,
        nb,
        tl_time,
        tl_demand,
        n_tl,
    )


def warm_up() -> None:
    """Compile (or load from cache) the kernels on a tiny run, so the app's first frame never
    waits on numba: call it from a background worker at start-up. The argument types must be
    the ones `model.runtime.simulate` passes (else the first real run compiles again;
    tests/runtime/test_memory.py checks)."""
    n = 4
    fifo_kernel(
        np.arange(1.0, n + 1.0),
        np.zeros(n, np.int32),
        np.zeros(n, np.int32),
        np.ones(n),
        np.zeros(1, np.bool_),
        0.0,
        2,
        True,
    )
    simulate_kernel(
        np.arange(1.0, n + 1.0),
        np.zeros(n, np.int32),  # req_col, req_sub, req_base: int32 as model.runtime.queues
        np.zeros(n, np.int32),
        np.zeros(n, np.int32),
        np.ones(n),
        np.ones(n),
        False,
        2,
        1,
        np.array([0, 2], np.int64),
        np.array([0, 1], np.int64),
        2,
        0.5,
        False,
        np.array([0, 0, 1], np.int64),
        np.ones((2, 2, 1)),
        np.ones((2, 2, 1)),
        np.ones((2, 2, 1)),
        np.ones((2, 2, 1)),
        np.ones((2, 2, 1)),
        np.zeros(1, np.bool_),
        0.0,
        0.0,
        True,
        1.0,
        True,
    )
    measured_order_stats(
        np.ones(n), np.zeros(n, np.int32), False, np.zeros(n), 1, np.array([0, 2], np.int64)
    )
    idle_core_wait(np.arange(float(n)), np.zeros(n), np.ones(n), np.ones(n), np.ones(n),
                   np.ones(n), np.zeros(n, np.int32), False, 1)  # fmt: skip
    idle_timeline(np.arange(float(n)), np.arange(n), 2, 1)


@njit(cache=True, nogil=True, error_model=ERRORS)
def fifo_kernel(arrival, req_base, req_col, req_draw, col_fallback, overhead_ms, n_cores, pooled):
    """Single-request FIFO with pinned service: the event loop's results for max_batch 1 with
    central-queue (pooled: the core free first, lowest index on ties), round-robin or random
    (req_base) dispatch, when no compile stall is paid. One pass over requests.

    Returns (start, finish, core) per request, ms.
    """
    n = arrival.shape[0]
    free = np.zeros(n_cores)
    start = np.empty(n)
    finish = np.empty(n)
    core = np.empty(n, np.int32)
    for i in range(n):
        if pooled:
            k = 0
            for q in range(1, n_cores):
                if free[q] < free[k]:
                    k = q
        else:
            k = req_base[i]
        s = max(arrival[i], free[k])
        fixed = 0.0 + req_draw[i] + (overhead_ms if col_fallback[req_col[i]] else 0.0)
        start[i] = s
        finish[i] = s + fixed
        core[i] = k
        free[k] = s + fixed
    return start, finish, core


@njit(cache=True, error_model=ERRORS)
def _select(a, k):
    """Reorder `a` in place so that a[k] is its k-th smallest value, a[:k] <= a[k] <= a[k + 1:]
    (Wirth's selection: Hoare partitions around a median-of-three pivot, keeping the side
    that holds k). Expected linear time; after 2 log2(n) + 8 partitions (ill-suited pivots)
    the remaining span is sorted instead, so never worse than n log n. Values without NaN."""
    lo = 0
    hi = a.shape[0] - 1
    budget = 8
    m = a.shape[0]
    while m > 1:
        budget += 2
        m >>= 1
    while hi > lo:
        if budget == 0:
            a[lo : hi + 1].sort()
            return
        budget -= 1
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
            if a[mid] < a[lo]:
                a[mid], a[lo] = a[lo], a[mid]
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while pivot < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return  # j < k < i: a[k] equals the pivot, in place


@njit(cache=True, nogil=True, error_model=ERRORS)
def measured_order_stats(finish, req_batch, identity, arrival, first, ranks):
    """Order statistics of the measured latencies, without a per-request array left behind.

    finish: per-batch completion, ms (per request when `identity`: request i is batch i).
    req_batch: (N,) int32 batch of each request (not read when `identity`; -1: unserved).
    arrival: (N,) float64 arrival, ms. first: the first measured request.
    ranks: (R,) int64 ascending 0-based ranks into the ascending order of the N - first
        measured latencies, each in [0, N - first).

    Returns (R,) float64: the latency (finish - arrival, ms: the same subtraction as
    `simulate_latency_ms`) at each rank, or an empty array when a request was left unserved
    (only with an empty core set: a caller bug, raised by the caller). The values are the
    order statistics themselves, whatever the algorithm: those at or above a sampled cut-off
    sorted (`top_order_stats`), else the lowest rank selected in place (`_select`) and only
    the values above it sorted.
    """
    n = arrival.shape[0]
    if not identity:
        for i in range(n):
            if req_batch[i] < 0:
                return np.empty(0)
    latency = np.empty(n - first)
    for i in range(first, n):
        b = i if identity else req_batch[i]
        latency[i - first] = finish[b] - arrival[i]
    out = top_order_stats(latency, ranks)
    if out.shape[0] == ranks.shape[0]:
        return out
    _select(latency, ranks[0])
    latency[ranks[0] + 1 :].sort()
    out = np.empty(ranks.shape[0])
    for j in range(ranks.shape[0]):
        out[j] = latency[ranks[j]]
    return out


SAMPLE = 1024  # values top_order_stats samples to place its cut-off


@njit(cache=True, nogil=True, error_model=ERRORS)
def top_order_stats(values, ranks):
    """The values at ascending 0-based `ranks` of the ascending order of `values` (no NaN),
    read from the values at or above a cut-off: (R,) float64, or an empty array when the
    cut-off turned out too high (the caller then selects in the whole array).

    For the high ranks of a tail percentile that is a small share: the cut-off is the sample
    quantile (every len/SAMPLE-th value, sorted) of the lowest rank, lowered by 4 sample
    standard deviations of a binomial count plus 8 samples; one branch-free pass counts the
    values below it and one copies those at or above it, which are sorted. When no more
    values than the lowest rank lie below the cut-off, the sorted order of all values is the
    values below followed by the sorted copy, so rank r is the copy's entry r - below:
    exact, whatever the sample. (A sort-free selection costs ~10 ns a value in unpredictable
    branches: ~3x this for an 18,000-request run's p95 and p99.)
    """
    m = values.shape[0]
    r0 = ranks[0]
    step = max(1, m // SAMPLE)
    sample = values[::step].copy()
    sample.sort()
    ns = sample.shape[0]
    share = r0 / m
    margin = int(4.0 * np.sqrt(ns * share * (1.0 - share))) + 8
    s = int(share * ns) - margin
    if s <= 0:
        return np.empty(0)
    cutoff = sample[s]
    above = 0
    for i in range(m):
        above += values[i] >= cutoff
    below = m - above
    if below > r0:
        return np.empty(0)
    top = np.empty(above + 1)  # one spare slot: every value is stored, the count moves on
    c = 0
    for i in range(m):
        v = values[i]
        top[c] = v
        c += v >= cutoff
    top = top[:above]
    top.sort()
    out = np.empty(ranks.shape[0])
    for j in range(ranks.shape[0]):
        out[j] = top[ranks[j] - below]
    return out


@njit(cache=True, inline="always", error_model=ERRORS)
def _gallop(values, v, lo, previous):
    """The count of `values` (ascending) <= v, from the previous key's answer `lo`: galloping
    right when v >= previous (every value before lo is <= previous <= v), left otherwise
    (every value from lo on is > previous > v), then bisecting the bracket: O(log d) for an
    answer d values away."""
    n = values.shape[0]
    if v >= previous:  # answer in [lo, n]
        left = lo
        step = 1
        while left + step - 1 < n and values[left + step - 1] <= v:
            left += step
            step *= 2
        right = min(left + step - 1, n)
    else:  # answer in [0, lo]
        right = lo
        step = 1
        while right - step >= 0 and values[right - step] > v:
            right -= step
            step *= 2
        left = max(right - step + 1, 0)
    while left < right:  # first index in [left, right) with a value > v, else right
        mid = (left + right) >> 1
        if values[mid] <= v:
            left = mid + 1
        else:
            right = mid
    return left


@njit(cache=True, inline="always", error_model=ERRORS)
def _idle_at(times, cumulative, idle, x, count):
    """Idle-core time accumulated until x, ms, given the count of event times <= x:
    cumulative[i] + idle[i] * max(x - times[i], 0) at the last event i at or before x (the
    first event when none is)."""
    i = max(count - 1, 0)
    d = x - times[i]
    if d < 0.0:
        d = 0.0
    return cumulative[i] + d * idle[i]


@njit(cache=True, nogil=True, error_model=ERRORS)
def idle_core_wait(times, cumulative, idle, arrival, start, ready, req_batch, identity, first):
    """Time each request from `first` on waited for a core while another core was idle, ms.

    times, cumulative, idle: the idle-core timeline (`idle_timeline`). arrival: (N,) float64
    ms. start, ready: per-batch dispatch and ready times (per request when `identity`: request
    i is batch i). req_batch: (N,) int32 batch of each request (not read when `identity`).

    Per request, with the numpy definition's operations in its order (model.runtime.tail): wait
    = start - arrival; batching = min(max(ready - arrival, 0), wait); waited = idle time until
    start - idle time until arrival + batching; clipped to [0, wait - batching]. The two look-ups
    gallop each from its previous answer (`_gallop`). Times are finite and never -0.0 (sums of
    non-negative times), so min, max and clip have no signed-zero ties to break. Returns
    (N - first,) float64.
    """
    n = arrival.shape[0]
    out = np.empty(n - first)
    at_start = 0
    at_ready = 0
    previous_start = -np.inf
    previous_ready = -np.inf
    for i in range(first, n):
        b = i if identity else req_batch[i]
        a = arrival[i]
        s = start[b]
        wait = s - a
        batching = ready[b] - a
        if batching < 0.0:
            batching = 0.0
        if wait < batching:
            batching = wait
        x = a + batching
        at_start = _gallop(times, s, at_start, previous_start)
        previous_start = s
        at_ready = _gallop(times, x, at_ready, previous_ready)
        previous_ready = x
        waited = _idle_at(times, cumulative, idle, s, at_start)
        waited -= _idle_at(times, cumulative, idle, x, at_ready)
        wait -= batching
        if waited < 0.0:
            waited = 0.0
        if waited > wait:
            waited = wait
        out[i - first] = waited
    return out


@njit(cache=True, nogil=True, error_model=ERRORS)
def idle_timeline(times, order, n_batches, n_cores):
    """Where at least one core is idle, from batch starts and finishes in one pass.

    times: (2B,) float64 batch starts then finishes, ms; order: (2B,) int64 their stable
    ascending order (np.argsort kind="stable": at equal times starts first, each kind in batch
    order); n_batches: B.

    Returns (event times ascending, cumulative idle-time at them, idle flag from each time on):
    the arrays `model.runtime.tail.idle_core_time` defines with numpy (busy count = cumulative
    sum of +1 a start, -1 a finish; idle = busy < n_cores as 1.0 or 0.0; cumulative = 0, then
    the running sum of idle[i] * (t[i + 1] - t[i]), the same products added in the same order
    as np.cumsum), so the same bits.
    """
    m = order.shape[0]
    t = np.empty(m)
    idle = np.empty(m)
    busy = 0
    for j in range(m):
        o = order[j]
        t[j] = times[o]
        busy += 1 if o < n_batches else -1
        idle[j] = 1.0 if busy < n_cores else 0.0
    cumulative = np.empty(max(m, 1))
    cumulative[0] = 0.0
    if m > 1:
        acc = idle[0] * (t[1] - t[0])
        cumulative[1] = acc
        for j in range(1, m - 1):
            acc = acc + idle[j] * (t[j + 1] - t[j])
            cumulative[j + 1] = acc
    return t, cumulative, idle
