"""Rich renderings for the Tune step: the status lines, the worksheet, the candidates and the
Pareto tables (a serving packet's from its serving runs)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from workbench.lab.engine import LabRun, ServingRun
from workbench.lab.views import compare, headline_line, serving_lines


def serving_text(working: ServingRun, baseline: ServingRun) -> Text:
    """The serving run's TTFT, TPOT and tokens/s against the baseline's (changes signed)."""
    text = Text()
    lines = serving_lines(working, baseline)
    for number, line in enumerate(lines[:2]):
        text.append("Serving: " if number == 0 else "         ", style="bold")
        text.append(line + "\n")
    ok = all(v is not False for v in working.summary["sla"].values())
    mark, colour = ("✓ SLA", "green") if ok else ("✗ SLA", "red")
    text.append("         ")
    text.append(mark, style=f"bold {colour}")
    text.append(f" · {lines[2]}")
    return text


def status_text(
    working: LabRun | None,
    baseline: LabRun | None,
    start: str,
    name: str,
    changes: list[str],
    *,
    updating: bool = False,
    decode_step: bool = False,
) -> Text:
    """Three lines (wrapped where the screen is narrow, never cut): what the working
    configuration is, its headline against the baseline, and the bottleneck shift. With
    `updating`, the runs shown are the last ones and a newer run is on its way (dimmed).
    With `decode_step` (a serving packet), the runs are its decode step through the dynamic
    batcher: the headline is labelled so, without an SLA verdict (the serving line has it)."""
    text = Text()
    text.append("Working: ", style="bold")
    text.append(f"{name} (from {start}) · changed: {', '.join(changes) or 'nothing'}\n")
    if working is None or baseline is None:
        text.append("running the model…\n", style="italic")
        return text
    dim = "dim" if updating else ""
    comparison = compare(working, baseline)
    if decode_step:
        text.append("Decode step: ", style=f"bold {dim}".strip())
    else:
        mark, colour = ("✓ SLA", "green") if comparison.meets_sla else ("✗ SLA", "red")
        text.append(f"{mark} ", style=f"bold {colour} {dim}".strip())
    text.append(headline_line(comparison) + "\n", style=dim)
    text.append("Bottleneck: ", style=f"bold {dim}".strip())
    before = baseline.summary["classification"]["primary"]["class"]
    text.append(f"{before} (baseline) -> {comparison.primary}", style=dim)
    return text


def worksheet_view(sheet: dict, *, compact: bool) -> Group:
    """Totals, then one row per kernel: ops, tiles, time with its 10-90% error band, bound and
    the bottleneck shift (at large sizes also HBM bytes, reuse and SRAM against capacity)."""
    point, totals = sheet["point"], sheet["totals"]
    head = Text(
        f"batch {point['batch']}, seq_len {point['seq_len']} · launches/block "
        f"{totals['launches_per_block']} (baseline {totals['baseline_launches_per_block']}) · "
        f"launch overhead saved {totals['launch_overhead_saved_us']:,.1f} us · HBM "
        f"{totals['hbm_bytes'] / 1e6:,.1f} MB (saved {totals['hbm_bytes_saved'] / 1e6:,.1f}, "
        f"spill {totals['spill_bytes'] / 1e6:,.1f}) · block {totals['block_time_us']:,.1f} us "
        f"(baseline {totals['baseline_block_time_us']:,.1f})"
    )
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    table.add_column("kernel", overflow="fold")
    table.add_column("tiles", overflow="fold")
    table.add_column("us", justify="right", no_wrap=True)
    table.add_column("10-90%", justify="right", no_wrap=True)
    if not compact:
        table.add_column("HBM MB", justify="right", no_wrap=True)
        table.add_column("reuse", justify="right", no_wrap=True)
        table.add_column("SRAM KiB", justify="right", no_wrap=True)
    table.add_column("bound", no_wrap=True)
    table.add_column("shift", overflow="fold")
    for kernel in sheet["kernels"]:
        tiles = ", ".join(kernel["tiles"].values()) or "-"
        low, high = kernel["band_us"]
        cells = ["+".join(kernel["ops"]), tiles, f"{kernel['time_us']:,.1f}",
                 f"{low:,.1f}-{high:,.1f}"]  # fmt: skip
        if not compact:
            over = kernel["sram_kib"] > kernel["sram_capacity_kib"]
            sram = f"{kernel['sram_kib']:,.0f}/{kernel['sram_capacity_kib']:,.0f}"
            cells += [
                f"{kernel['hbm_bytes'] / 1e6:,.2f}",
                f"{kernel['reuse_ratio']:,.1f}",
                Text(sram, style="bold red" if over else ""),
            ]
        cells += [kernel["bound"], kernel["bottleneck_shift"]]
        table.add_row(*cells)
    return Group(head, table)


def candidates_view(runs: Sequence[tuple[LabRun, str]], baseline: LabRun) -> Group:
    """Per configuration: p99, p95 and throughput with the change against the baseline and the
    SLA verdict, then (dim) its bottleneck and the knobs it changes."""
    lines = [Text("Against the baseline: p99, p95 (ms), throughput (/s); changes in brackets")]
    for run, knobs in runs:
        c = compare(run, baseline)
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(
            "✓ " if c.meets_sla else "✗ ", style="bold green" if c.meets_sla else "bold red"
        )
        line.append(c.name, style="bold")
        line.append(
            f"  p99 {c.p99_ms:,.1f} ({c.p99_change_ms:+,.1f})  p95 {c.p95_ms:,.1f} "
            f"({c.p95_change_ms:+,.1f})  {c.throughput_per_s:,.1f}/s "
            f"({c.throughput_change_per_s:+,.1f})"
        )
        lines.append(line)
        lines.append(Text(f"    {c.primary} · {knobs or 'no knob changed'}", style="dim"))
    return Group(*lines)


def pareto_view(front: Sequence, baseline_config, chosen: int | None) -> Table:
    """The Pareto front as a table, numbered as f7 steps through it (the chosen row marked)."""
    from triage.search import knob_texts

    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    for name, justify in (("#", "right"), ("trial", "right"), ("p99 ms", "right"),
                          ("p95 ms", "right"), ("/s", "right"), ("SLA", "left"),
                          ("knobs", "left")):  # fmt: skip
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for i, t in enumerate(front):
        r = t.row
        table.add_row(
            ("› " if i == chosen else "") + str(i + 1), str(t.number),
            f"{r['latency_p99_ms']:,.2f}", f"{r['latency_p95_ms']:,.2f}",
            f"{r['throughput_per_s']:,.1f}", "ok" if t.feasible else "miss",
            ", ".join(knob_texts(baseline_config, t.config)) or "(baseline)",
        )  # fmt: skip
    return table


# --- serving packets: the worksheet, candidates and Pareto views of the serving run --------


def _signed(value: float | None, fmt: str) -> str:
    return "" if value is None else f" ({format(value, '+' + fmt)})"


def _value(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def _phase_table(sheet: dict, *, compact: bool) -> Table:
    """One phase's kernels: ops, tiles, GFLOP, HBM MB, predicted us (one pass of the block),
    bound and the shift against the baseline plan ('none' where the bound is the same)."""
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    table.add_column("kernel", overflow="fold")
    table.add_column("tiles", overflow="fold")
    table.add_column("GFLOP", justify="right", no_wrap=True)
    table.add_column("MB", justify="right", no_wrap=True)
    table.add_column("us", justify="right", no_wrap=True)
    if not compact:
        table.add_column("10-90%", justify="right", no_wrap=True)
    table.add_column("bound", no_wrap=True)
    table.add_column("shift", overflow="fold", min_width=7)
    for kernel in sheet["kernels"]:
        cells = [
            "+".join(kernel["ops"]),
            ", ".join(kernel["tiles"].values()) or "-",
            f"{kernel['flops'] / 1e9:,.2f}",
            f"{kernel['hbm_bytes'] / 1e6:,.1f}",
            f"{kernel['time_us']:,.1f}",
        ]
        if not compact:
            low, high = kernel["band_us"]
            cells.append(f"{low:,.1f}-{high:,.1f}")
        before, _, after = kernel["bottleneck_shift"].partition(" -> ")
        cells += [kernel["bound"], "none" if before == after else kernel["bottleneck_shift"]]
        table.add_row(*cells)
    return table


def serving_worksheet_view(sheet: dict, *, compact: bool) -> Group:
    """A serving packet's worksheet (workbench.lab.serving_tune.serving_worksheet): the mixed
    iteration's split (working plan, then the baseline plan), then per phase (prefill chunk,
    decode step) its point, block time and kernels. Wraps, never cuts."""
    point, iteration = sheet["point"], sheet["iteration"]
    chunk = f"chunk {point['chunk']:,}" if point["chunked"] else f"prompt {point['prompt_len']:,}"
    head = Text()
    head.append("Iteration: ", style="bold")
    if iteration is None:
        head.append("service times are pinned (a distribution): the run prices no kernels")
    else:
        split, base = iteration["working"], iteration["baseline"]
        attention = (
            "the generic path" if split.prefill_fallback else f"seq_len {split.attention_shape:,}"
        )
        head.append(
            f"{point['decode_batch']} decodes (KV {point['kv_len']:,}) + {chunk} tokens: "
            f"{split.iteration_ms:,.2f} ms = decode step {split.decode_alone_ms:,.2f} + prefill "
            f"{split.chunk_ms:,.2f} · baseline plan {base.iteration_ms:,.2f} ms "
            f"({base.decode_alone_ms:,.2f} + {base.chunk_ms:,.2f}); the run pads the chunk to "
            f"{split.chunk_bucket:,} tokens, its attention to {attention}"
        )
    parts: list = [head]
    for phase, what in (
        ("prefill", f"batch 1 x {chunk} tokens"),
        ("decode", f"batch {point['decode_batch']} x KV {point['kv_len']:,}"),
    ):
        totals = sheet[phase]["totals"]
        title = Text()
        title.append(f"{phase.capitalize()} ", style="bold")
        title.append(
            f"({what}): block {totals['block_time_us']:,.1f} us (baseline "
            f"{totals['baseline_block_time_us']:,.1f}) · {totals['launches_per_block']} "
            f"launches (baseline {totals['baseline_launches_per_block']})"
        )
        parts += [title, _phase_table(sheet[phase], compact=compact)]
    parts.append(
        Text(
            "Point: decodes by Little's law on the serving run, KV the mean over the mix's "
            "decode steps, the most common prompt"
            + (" cut to the token budget" if point["chunked"] else " whole")
            + "; us per pass of the block, iteration ms over all layers.",
            style="dim",
        )
    )
    return Group(*parts)


def serving_candidates_view(rows: Sequence[tuple[object, str]], baseline: object) -> Group:
    """Per configuration, from its serving run: the SLA verdict (and what it misses), TTFT and
    TPOT p95/p99, latency p99, tokens/s and preemptions, each with its change against the
    baseline in brackets, then (dim) the knobs it changes. Wraps, never cuts."""
    from workbench.lab.serving_tune import compare_serving

    lines = [Text("Serving runs against the baseline: ms, tokens/s; changes in brackets")]
    for run, knobs in rows:
        c = compare_serving(run, baseline)  # type: ignore[arg-type]
        d = c.changes
        line = Text()
        line.append(
            "✓ " if c.meets_sla else "✗ ", style="bold green" if c.meets_sla else "bold red"
        )
        line.append(c.name, style="bold")
        line.append(f" · SLA {'met' if c.meets_sla else 'missed: ' + ', '.join(c.misses)}\n")
        line.append(
            f"  TTFT p95 {_value(c.ttft_p95_ms, ',.1f')}{_signed(d['ttft_p95_ms'], ',.1f')} "
            f"p99 {_value(c.ttft_p99_ms, ',.1f')}{_signed(d['ttft_p99_ms'], ',.1f')} · "
            f"TPOT p95 {_value(c.tpot_p95_ms, ',.2f')}{_signed(d['tpot_p95_ms'], ',.2f')} "
            f"p99 {_value(c.tpot_p99_ms, ',.2f')}{_signed(d['tpot_p99_ms'], ',.2f')}\n"
            f"  latency p99 {_value(c.latency_p99_ms, ',.0f')}"
            f"{_signed(d['latency_p99_ms'], ',.0f')} · "
            f"{_value(c.tokens_per_s, ',.0f')} tokens/s{_signed(d['tokens_per_s'], ',.0f')} · "
            f"{c.preemptions:,} preemptions{_signed(d['preemptions'], ',')}"
        )
        lines.append(line)
        lines.append(Text(f"  {knobs or 'no knob changed'}", style="dim"))
    return Group(*lines)


def serving_pareto_view(front: Sequence, baseline_config, chosen: int | None) -> Table:  # type: ignore[no-untyped-def]
    """A serving search's Pareto front as a table (TTFT and TPOT p95, tokens/s, preemptions,
    SLA), numbered as f7 steps through it (the chosen row marked)."""
    from triage.search import knob_texts

    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    for name in ("#", "trial", "TTFT p95", "TPOT p95", "tokens/s", "preempt", "SLA"):
        table.add_column(name, justify="left" if name == "SLA" else "right", no_wrap=True)
    table.add_column("knobs", overflow="fold", ratio=1)
    for i, t in enumerate(front):
        r = t.row
        table.add_row(
            ("› " if i == chosen else "") + str(i + 1), str(t.number),
            f"{r['ttft_p95_ms']:,.1f}", f"{r['tpot_p95_ms']:,.2f}",
            _value(r["tokens_per_s"], ",.0f"), f"{r['preemptions']:,}",
            "ok" if t.feasible else "miss",
            ", ".join(knob_texts(baseline_config, t.config)) or "(baseline)",
        )  # fmt: skip
    return table
