"""The iteration-level (continuous-batching) scheduler of LLM serving engines, in numba.

It is sequential by nature: every iteration's batch depends on what the previous ones left
running, queued and cached, so it is one loop over iterations, compiled once and cached.
Semantics: model/runtime/README.md "Continuous batching (LLM serving)".

Bookkeeping (same results, less work per iteration): a running sequence in steady decode (its
prompt prefilled, caught up after any preemption) takes exactly one token in every iteration
that reaches it, so its KV length and token count are known from the engine's step counter and
need no per-iteration update. Each engine keeps those sequences as the oldest part of its
running list (`lazy`, a prefix in admission order), with their KV tokens as an integer running
total and a count, by step, of those that emit their last token then. An iteration that reaches
every one of them (the token budget and free KV cache hold them all) touches only the others
(prefill chunks, recomputes, admissions), plus the decoders' interference when prefill tokens
share the iteration and a retire pass when one of them finishes. Any other iteration (a budget
or KV limit cuts into the decoders: preemption territory) first writes the decoders' state
back and takes the plain per-sequence path. `incremental=False` always takes the plain path.
Every float is computed from the same operands in the same order either way; integer counts
stay integer.

Per-iteration overhead (perf on the example, 2026-12-01): numba's reference-count updates
(atomic NRT_incref/NRT_decref) were 30-40% of a run: every call passing arrays inside the loop
and every array variable rebound inside it pays them each iteration. So the loop calls no
helper that takes arrays (bucket lookups and the lazy prefix's growth are written out; the
write-back runs only when a limit cuts in), the iteration arrays grow in an outer loop only,
and they are returned as views of their first k entries (no copy: the copy's fresh pages were
another quarter of a run).
"""

from __future__ import annotations

import numpy as np

from model.runtime.jit import njit
from model.runtime.serving_rules import CENTRAL, LEAST_LOADED


@njit(cache=True)
def _grow(a, n):
    out = np.empty(max(2 * len(a), n), a.dtype)
    out[: len(a)] = a
    return out


DIRECT_BUCKETS = 1 << 20
"""Largest edge for which a bucket lookup is one array read (an int32 per token count: 4 MB at
most); above it, a binary search. Either gives the same index."""


@njit(cache=True)
def _bucket_index(edges):
    """(edges[-1] + 1,) int32: for every count x up to the last edge, the index of the smallest
    edge >= x (what np.searchsorted(edges, x) returns); empty when the last edge is above
    DIRECT_BUCKETS. Four lookups an iteration were a binary search of ~7 unpredictable steps
    each over the ~90 edges of a table."""
    if len(edges) == 0 or edges[-1] > DIRECT_BUCKETS:
        return np.empty(0, np.int32)
    index = np.empty(edges[-1] + 1, np.int32)
    j = 0
    for x in range(edges[-1] + 1):
        while edges[j] < x:
            j += 1
        index[x] = j
    return index


@njit(cache=True)
def _write_back(e, running, lazy, steps, since, computed, generated, out_len, ends, lazy_kv):
    """Bring engine e's lazy decoders' token counts up to date and make them plain running
    sequences again (before an iteration that may not reach them all)."""
    width = ends.shape[1]
    for i in range(lazy[e]):
        r = running[e, i]
        ends[e, (since[r] + out_len[r] - generated[r]) % width] -= 1
        took = steps[e] - since[r]
        computed[r] += took
        generated[r] += took
    lazy[e] = 0
    lazy_kv[e] = 0


@njit(cache=True, nogil=True)  # as kernel.py's loop: the app's UI thread runs while it does
def serving_kernel(
    arrival,
    prompt,
    out_len,
    route,
    placement,
    n_engines,
    max_seqs,
    max_tokens,
    chunked,
    request_level,
    kv_capacity,
    pinned,
    decode_alone,
    incremental,
    draws,
    m_edges,
    lin_ms,
    kv_edges,
    dec_attn_ms,
    p_edges,
    pre_attn_ms,
):
    """Simulate every engine's iterations until every request has produced its tokens.

    Requests (N,) sorted by arrival: arrival ms, prompt and output lengths (tokens), route (the
    engine for round-robin/random). request_level: admit only into an empty engine (the batch
    runs until its last sequence ends: request-level batching, for comparison). kv_capacity:
    KV-cache tokens per engine. decode_alone: an iteration with decode steps is priced as if it
    had no prefill tokens (the prefill-interference counterfactual,
    model/runtime/serving_attribution.py). incremental: the decoders' bookkeeping by step count
    (module docstring); False: every running sequence visited every iteration (same results).
    pinned: iteration i takes draws[i % len(draws)] ms; else the table: lin_ms[m bucket of
    decode + prefill tokens] + dec_attn_ms[decode seqs, kv bucket of their mean KV length] +
    pre_attn_ms[prefill token bucket]. Returns per-request first-token and finish times,
    preemption counts, per-iteration arrays (start, end, engine, decode seqs, prefill tokens, KV
    tokens held) and the number of times the KV-cache limit refused an admission or forced a
    preemption.
    """
    n = len(arrival)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    preempted = np.zeros(n, np.int64)
    computed = np.zeros(n, np.int64)  # of a lazy decoder: as of step since[r]
    generated = np.zeros(n, np.int64)  # likewise
    scheduled = np.full(n, np.nan)  # start of the first iteration that scheduled the request
    interference = np.zeros(n)  # decode-step time spent on others' prefill tokens, ms
    lost = np.zeros(n)  # preemption: from eviction until recomputed to where it was, ms
    lost_before_first = np.zeros(n)
    evicted_at = np.full(n, np.nan)
    # Queues: one ring per engine, plus a shared one (index n_engines) for central-queue.
    nq = n_engines + 1
    cap = n + 1
    ring = np.empty((nq, cap), np.int64)
    head = np.zeros(nq, np.int64)
    size = np.zeros(nq, np.int64)
    running = np.empty((n_engines, max_seqs), np.int64)
    n_running = np.zeros(n_engines, np.int64)
    kv_used = np.zeros(n_engines, np.int64)
    outstanding = np.zeros(n_engines, np.int64)
    engine_of = np.full(n, -1, np.int64)
    clock = np.zeros(n_engines)
    # Lazy decoders (module docstring): running[e, :lazy[e]], their KV tokens, and by step
    # (mod width: no lazy decoder is more than max(out_len) steps from its last token) how
    # many emit their last token at that step of the engine.
    lazy = np.zeros(n_engines, np.int64)
    lazy_kv = np.zeros(n_engines, np.int64)
    steps = np.zeros(n_engines, np.int64)  # iterations that reached every lazy decoder
    since = np.zeros(n, np.int64)  # the engine's step when the sequence turned lazy
    width = int(out_len.max()) + 1 if n > 0 else 1
    ends = np.zeros((n_engines, width), np.int64)
    rows = np.empty(max_seqs, np.int64)  # the iteration's other scheduled requests, in order
    tokens = np.empty(max_seqs, np.int64)
    decoding = np.empty(max_seqs, np.bool_)  # a decode step (one token after the first)
    cap_it = max(1024, 8 * n)  # the example runs ~5 a request: grown (copied) rarely
    it_start = np.empty(cap_it)
    it_end = np.empty(cap_it)
    it_engine = np.empty(cap_it, np.int64)
    it_decode = np.empty(cap_it, np.int64)
    it_prefill = np.empty(cap_it, np.int64)
    it_kv = np.empty(cap_it, np.int64)
    m_index = _bucket_index(m_edges)
    kv_index = _bucket_index(kv_edges)
    p_index = _bucket_index(p_edges)
    kv_limited = 0  # times the KV limit refused an admission or forced a preemption
    k = 0
    nxt = 0
    done = 0
    inf = np.inf
    stuck = False
    while done < n and not stuck:
        # The iteration arrays grow out here, never in the loop below: an array variable
        # rebound inside the hot loop costs numba reference-count updates (atomic increments
        # and decrements) on every iteration, which were 30-40% of the run (perf, 2026-12-01).
        if k >= len(it_start):
            it_start = _grow(it_start, k + 1)
            it_end = _grow(it_end, k + 1)
            it_engine = _grow(it_engine, k + 1)
            it_decode = _grow(it_decode, k + 1)
            it_prefill = _grow(it_prefill, k + 1)
            it_kv = _grow(it_kv, k + 1)
        room = len(it_start)
        while done < n and k < room:
            e = 0
            for j in range(1, n_engines):
                if clock[j] < clock[e]:
                    e = j
            t = clock[e]
            if t == inf:  # cannot happen (a lone sequence always fits): stop rather than spin
                stuck = True
                break
            while nxt < n and arrival[nxt] <= t:  # route every arrival up to now
                if placement == CENTRAL:
                    q = n_engines
                elif placement == LEAST_LOADED:
                    q = 0
                    for j in range(1, n_engines):
                        if outstanding[j] < outstanding[q]:
                            q = j
                else:
                    q = route[nxt]
                ring[q, (head[q] + size[q]) % cap] = nxt
                size[q] += 1
                if q < n_engines:
                    outstanding[q] += 1
                nxt += 1
            q = n_engines if placement == CENTRAL else e
            budget = max_tokens
            free = kv_capacity - kv_used[e]
            # 1a. the lazy decoders, oldest first, one token each, if the iteration reaches them all
            if lazy[e] > budget or lazy[e] > free:
                _write_back(
                    e, running, lazy, steps, since, computed, generated, out_len, ends, lazy_kv
                )
            n_lazy = lazy[e]
            n_dec = n_lazy
            kv_dec = lazy_kv[e] + n_lazy
            budget -= n_lazy
            free -= n_lazy
            ns = 0
            pre = 0
            any_preempt = False
            # 1b. the other running sequences, oldest first: a decode step or the next prefill chunk
            i = n_lazy
            while i < n_running[e] and budget > 0:
                r = running[e, i]
                need = prompt[r] + generated[r] - computed[r]
                take = min(need, budget) if chunked else need
                if take > budget:
                    break
                if take > free:
                    kv_limited += 1
                while take > free:  # preempt the newest running sequence (recompute later)
                    last = n_running[e] - 1  # never a lazy one: it stops at r, after them
                    v = running[e, last]
                    n_running[e] = last
                    free += computed[v]
                    kv_used[e] -= computed[v]
                    computed[v] = 0
                    preempted[v] += 1
                    if np.isnan(evicted_at[v]):  # evicted again before catching up: one window
                        evicted_at[v] = t
                    any_preempt = True
                    head[q] = (head[q] - 1) % cap
                    ring[q, head[q]] = v
                    size[q] += 1
                    if placement == CENTRAL:  # back in the shared queue: any engine may take it
                        outstanding[e] -= 1
                        for j in range(n_engines):
                            if clock[j] == inf:
                                clock[j] = t
                    if v == r:
                        break
                if i >= n_running[e]:
                    break
                rows[ns] = r
                tokens[ns] = take
                decoding[ns] = take == 1 and need == 1 and generated[r] > 0
                if decoding[ns]:
                    n_dec += 1
                    kv_dec += computed[r] + 1
                else:
                    pre += take
                ns += 1
                budget -= take
                free -= take
                i += 1
            # 2. waiting requests, in queue order (preempted ones first), while seats and memory last
            if not any_preempt and not (request_level and n_running[e] > 0):
                while size[q] > 0 and n_running[e] < max_seqs and budget > 0:
                    r = ring[q, head[q]]
                    need = prompt[r] + generated[r] - computed[r]
                    take = min(need, budget) if chunked else need
                    if take > budget and not (not chunked and ns == 0 and n_lazy == 0):
                        break
                    if take > free:
                        kv_limited += 1
                        break
                    head[q] = (head[q] + 1) % cap
                    size[q] -= 1
                    if placement == CENTRAL:
                        outstanding[e] += 1
                    engine_of[r] = e
                    if np.isnan(scheduled[r]):  # only an admission can schedule a request first
                        scheduled[r] = t
                    running[e, n_running[e]] = r
                    rows[ns] = r
                    tokens[ns] = take
                    decoding[ns] = take == 1 and need == 1 and generated[r] > 0
                    if decoding[ns]:
                        n_dec += 1
                        kv_dec += computed[r] + 1
                    else:
                        pre += take
                    n_running[e] += 1
                    ns += 1
                    budget -= take
                    free -= take
            if (
                ns == 0 and n_lazy == 0
            ):  # idle: sleep until the next arrival (maybe another engine's)
                clock[e] = arrival[nxt] if nxt < n else inf
                continue
            if pinned:  # the drawn time whatever the batch: no prefill interference by construction
                dt = draws[k % len(draws)]
                dt_decode_only = dt
            else:
                # bucket: the smallest edge >= x, from the direct index (written out: a call
                # passing arrays costs numba reference-count updates, four times an iteration)
                attn = 0.0
                if n_dec > 0:
                    x = (kv_dec + n_dec - 1) // n_dec  # the decoders' mean KV length
                    b = kv_index[x] if x < len(kv_index) else np.searchsorted(kv_edges, x)
                    attn = dec_attn_ms[n_dec - 1, b]
                x = n_dec + pre
                b = m_index[x] if x < len(m_index) else np.searchsorted(m_edges, x)
                dt = lin_ms[b] + attn
                x = max(n_dec, 1)
                b = m_index[x] if x < len(m_index) else np.searchsorted(m_edges, x)
                dt_decode_only = lin_ms[b] + attn
                if pre > 0:
                    b = p_index[pre] if pre < len(p_index) else np.searchsorted(p_edges, pre)
                    dt += pre_attn_ms[b]
                if decode_alone and n_dec > 0:
                    dt = dt_decode_only
            end = t + dt
            # apply: KV grows by the tokens computed; a sequence that caught up emits a token
            kv_used[e] += n_dec + pre  # every scheduled token enters the KV cache
            any_finished = False
            if n_lazy > 0:
                extra = dt - dt_decode_only
                # x + 0.0 is x (interference is never -0.0): a zero difference adds nothing
                if pre > 0 and extra != 0.0:
                    for j in range(n_lazy):
                        interference[running[e, j]] += extra
                steps[e] += 1
                lazy_kv[e] += n_lazy
                any_finished = ends[e, steps[e] % width] > 0
            for s in range(ns):
                r = rows[s]
                if decoding[s] and pre > 0:  # without prefill tokens the difference is 0.0
                    interference[r] += dt - dt_decode_only
                computed[r] += tokens[s]
                if computed[r] == prompt[r] + generated[r]:
                    if not np.isnan(evicted_at[r]):  # recomputed back to where it was
                        lost[r] += end - evicted_at[r]
                        if generated[r] == 0:
                            lost_before_first[r] += end - evicted_at[r]
                        evicted_at[r] = np.nan
                    generated[r] += 1
                    if generated[r] == 1:
                        first[r] = end
                    if generated[r] >= out_len[r]:
                        any_finished = True
            if any_finished:  # only a sequence scheduled now can have finished
                w = 0
                kept_lazy = 0
                for i in range(n_running[e]):  # retire finished sequences, keep admission order
                    r = running[e, i]
                    if i < n_lazy:  # up to date: since[r] + out_len - generated is its last step
                        took = steps[e] - since[r]
                        if generated[r] + took >= out_len[r]:
                            computed[r] += took
                            generated[r] += took
                            ends[e, steps[e] % width] -= 1
                            lazy_kv[e] -= computed[r]
                        else:
                            kept_lazy += 1
                    if generated[r] >= out_len[r]:
                        finish[r] = end
                        kv_used[e] -= computed[r]
                        outstanding[e] -= 1
                        done += 1
                    else:
                        running[e, w] = r
                        w += 1
                n_running[e] = w
                lazy[e] = kept_lazy
            # grow the lazy prefix over the running sequences right after it that are in
            # steady decode (one token to compute, a first token out, not catching up on a
            # recompute); written out, not a call (see the bucket lookups)
            j = lazy[e]
            while incremental and j < n_running[e]:
                r = running[e, j]
                if not (
                    generated[r] > 0 and prompt[r] + generated[r] - computed[r] == 1
                ) or not np.isnan(evicted_at[r]):
                    break
                since[r] = steps[e]
                ends[e, (steps[e] + out_len[r] - generated[r]) % width] += 1
                lazy_kv[e] += computed[r]
                j += 1
            lazy[e] = j
            it_start[k] = t
            it_end[k] = end
            it_engine[k] = e
            it_decode[k] = n_dec
            it_prefill[k] = pre
            it_kv[k] = kv_used[e]
            k += 1
            clock[e] = end
    return (
        first,
        finish,
        preempted,
        engine_of,
        scheduled,
        interference,
        lost,
        lost_before_first,
        it_start[:k],
        it_end[:k],
        it_engine[:k],
        it_decode[:k],
        it_prefill[:k],
        it_kv[:k],
        kv_limited,
    )
