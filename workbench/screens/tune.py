"""The Tune step (the lab): edit a working configuration and watch it against the baseline.

The working configuration starts from the baseline or any candidate ('start from'); fusion
groups, tile shapes, batch policy, placement and compiled shapes are edited in place, each edit
checked like a packet's configuration (schema, then the model) and refused in place with the
model's one-line message. Valid edits rerun the model as you type (debounced, off the UI
thread) and redraw the charts: latency percentiles, p99 vs load (a sweep of load factors, run
only while on screen, with progress), HBM demand over time, the fusion & tile-plan worksheet
with its bottleneck shifts, and the candidates with their headline changes. f4 saves the
working configuration as a named candidate of the packet (so drafts and SIGHUP keep it).

A serving packet (baseline `scheduler: continuous`) edits the continuous batch policy
(max_num_seqs, max_num_batched_tokens, chunked_prefill, kv_cache_tokens); each edit re-runs
the serving model (the run `workbench run` shows; the first key of a burst at once), its
TTFT/TPOT against the baseline's in a status line, and its views replace the decode step's:
KV-cache occupancy, TTFT, TPOT and latency by percentile against the serving SLA, per-engine
load with the waiting queue, and HBM (weights + KV cache) per engine; the worksheet (per
phase at the serving run's point), the search's front (TPOT p95 against TTFT p95) and the
candidates (their serving runs) read serving runs too (workbench/lab/serving_tune.py). The
decode step's dynamic-batcher run (the status line's) follows once the serving run has landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import ProgressBar, Static

from packets.candidates import BASELINE, changed_knobs, resolve_config
from packets.schema import Config, Packet
from workbench.core.session import WorkingPacket
from workbench.lab.config import (
    ConfigRefused,
    candidate_entry,
    changed_sections,
    describe,
    edit_config,
)
from workbench.lab.engine import (
    WORKING,
    LabPreview,
    LabRun,
    LoadCurve,
    ServingRun,
    Subject,
    is_serving,
    subject,
)
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.in_place import update_in_place

from .lab_screen import LabScreen
from .tune_form import TuneField, make_editor, start_spec, tune_sections

if TYPE_CHECKING:
    from workbench.widgets.chart_deck import ChartDeck

VIEWS = (
    ("tune-latency", "Latency"),
    ("tune-load", "p99 vs load"),
    ("tune-hbm", "HBM"),
    ("tune-worksheet", "Worksheet"),
    ("tune-pareto", "Pareto"),
    ("tune-candidates", "Candidates"),
)
SERVING_DISTRIBUTION_CHARTS = {"ttft": "tune-ttft", "tpot": "tune-tpot", "latency": "tune-latency"}
"""Serving packets: the chart of each serving distribution (workbench.lab.charts)."""
SERVING_CHARTS = ("tune-kv", *SERVING_DISTRIBUTION_CHARTS.values(), "load-chart", "tune-hbm")
"""Serving packets: every chart drawn from the serving run."""
DECODE_WAIT = "tune-decode-wait"
"""Worker (and group) that waits before a serving packet's decode-step run."""
TABLES_AHEAD = "tune-tables-ahead"
"""Worker (and group) that builds the next max_batch arrow steps' service tables when idle."""
SEARCH_TRIALS = 32
"""Trials of the search f6 runs (the packet's seed, `default_objective`): seconds on 2 cores."""


class TuneScreen(LabScreen):
    """The working configuration's editors, its status against the baseline, and the views."""

    DEBOUNCE_S: ClassVar[float] = 0.05  # held keys repeat every 25-40 ms: a burst runs once
    DEBOUNCE_LEADING: ClassVar[bool] = True  # ... after its first key, which runs at once
    DECODE_STEP_AFTER_S: ClassVar[float] = 0.15
    """Serving packets: the decode step's dynamic-batcher run starts this long after the
    serving run landed with no newer edit (it never delays the serving views)."""
    TABLES_AHEAD_AFTER_S: ClassVar[float] = 0.05
    """The next max_batch steps' service tables are built this long after a run landed with
    no newer edit (`prefetch_tables`; a held key, repeating every 25-40 ms, never builds them
    between keys). At 0.15 s, arrow steps 0.2 s apart found their tables half built and waited
    for two or three builds (30-65 ms each on a slow host): the session's p95 keypress to chart
    was 131-139 ms against 87-105 ms at 0.05 s (3 interleaved sessions each, 2026-12-02), and
    the UI loop's worst stall was within noise (per session 43-53 ms at 0.05 s against 40-51 ms at
    0.15 s; 41-46 against 44-58 ms in 4 more each)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "view(1)", "View", id="next-chart", priority=True, tooltip="Next view"),
        Binding("f3", "view(-1)", "Previous view", id="previous-chart", priority=True, show=False),
        Binding("f4", "save_candidate", "Save candidate", id="save-candidate", priority=True),
        Binding("f5", "reset", "Reset", id="reset-working", priority=True, tooltip="Reset working"),
        Binding("f6", "search", "Search", id="run-search", priority=True),
        Binding(
            "f7",
            "pareto_next",
            "Pareto",
            id="next-pareto-point",
            priority=True,
            show=False,  # the footer fits 80 columns; help and the palette list it
            tooltip="Use the next Pareto point",
        ),
    ]

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        packet = self.workbench.working.packet
        self.start_from = BASELINE
        """The configuration the working one started from: 'baseline' or a candidate."""
        self.config: Config = packet.baseline
        """The working configuration (every edit replaces it, never mutates it)."""
        self.sections = tune_sections(packet)
        self.fields = {f.id: f for _, fields in self.sections for f in fields}
        self.shown_runs: tuple[LabRun, LabRun] | None = None
        self.serving = packet.baseline.batch_policy.scheduler == "continuous"
        """A serving packet: the serving line and the KV-cache view are composed."""
        self.shown_serving: tuple[ServingRun, ServingRun] | None = None
        """(working, baseline) serving runs on screen (serving packets)."""
        self._charted: tuple | None = None  # what the charts were drawn from (by identity)
        """(working, baseline) runs on screen."""
        self._tables_stop = threading.Event()  # set by an edit: tables ahead stop starting
        self.pareto: tuple = ()
        """The last search's Pareto front (triage.search.Trial), as shown."""
        self.pareto_index: int | None = None

    # --- layout ----------------------------------------------------------------------------

    def compose_main(self) -> ComposeResult:
        from workbench.widgets.chart_deck import ChartDeck
        from workbench.widgets.charts import Chart

        yield from self.compose_status()
        yield Static(id="tune-status")
        if self.serving:
            yield Static(id="tune-serving")
        with Horizontal(id="tune-body"):
            with VerticalScroll(id="tune-form", can_focus=False):
                yield from self._section(*self.sections[0])  # the rest: `on_mount`
            waiting = "waiting for the model…"
            views = [
                ("tune-latency", "Latency", Chart(waiting, id="tune-latency")),
                (
                    "tune-load",
                    "p99 vs load",
                    Vertical(
                        ProgressBar(total=1, show_eta=False, id="load-progress"),
                        Chart(waiting, id="load-chart"),
                        id="tune-load",
                    ),
                ),
                ("tune-hbm", "HBM", Chart(waiting, id="tune-hbm")),
                (
                    "tune-worksheet",
                    "Worksheet",
                    VerticalScroll(Static(id="worksheet-table"), id="tune-worksheet"),
                ),
                (
                    "tune-pareto",
                    "Pareto",
                    Vertical(
                        Chart("f6 runs a guided search (workbench search)", id="pareto-chart"),
                        VerticalScroll(Static(id="pareto-table"), id="pareto-scroll"),
                        id="tune-pareto",
                    ),
                ),
                (
                    "tune-candidates",
                    "Candidates",
                    VerticalScroll(Static(id="candidates-table"), id="tune-candidates"),
                ),
            ]
            if self.serving:  # the serving run's views replace the decode step's
                views[:3] = [
                    ("tune-kv", "KV cache", Chart(waiting, id="tune-kv")),
                    ("tune-ttft", "TTFT", Chart(waiting, id="tune-ttft")),
                    ("tune-tpot", "TPOT", Chart(waiting, id="tune-tpot")),
                    ("tune-latency", "Latency", Chart(waiting, id="tune-latency")),
                    (
                        "tune-load",
                        "Load",
                        Vertical(
                            Static(id="serving-engines"),
                            Chart(waiting, id="load-chart"),
                            id="tune-load",
                        ),
                    ),
                    ("tune-hbm", "HBM", Chart(waiting, id="tune-hbm")),
                ]
            yield ChartDeck(views, "f2/f3", id="tune-deck")

    def _section(self, title: str, fields: list[TuneField]) -> list[Widget]:
        """A form section's title and editors, showing the working configuration now."""
        editors = [make_editor(field, self.config, self.start_from) for field in fields]
        return [Static(title, classes="section"), *editors]

    def on_mount(self) -> None:
        # The first section (start, save as) paints with the screen; the others mount after
        # it, a section per piece (`mount_later`), so a first visit waits for none of them.
        form = self.query_one("#tune-form")
        for title, fields in self.sections[1:]:
            self.mount_later(form, partial(self._section, title, fields))

    @property
    def deck(self) -> ChartDeck:
        """The views (charts and tables)."""
        from workbench.widgets.chart_deck import ChartDeck

        return self.query_one(ChartDeck)

    def editor(self, field_id: str) -> FieldEditor:
        """The editor with DOM id `field_id`."""
        return self.query_one(f"#{field_id}", FieldEditor)

    # --- the working configuration ---------------------------------------------------------

    def working_subject(self, working: WorkingPacket) -> Subject:
        """The working configuration as a lab subject (named after its start while unedited)."""
        packet = working.packet
        unedited = self.config == resolve_config(packet, self.start_from)
        dtype_from = None if self.start_from == BASELINE else self.start_from
        name = self.start_from if unedited else WORKING
        return subject(working, self.config, name=name, dtype_from=dtype_from)

    def changes(self, packet: Packet) -> list[str]:
        """Knobs the working configuration sets differently from the baseline."""
        return changed_sections(packet.baseline, self.config)

    def show_packet(self, working: WorkingPacket) -> None:
        packet = working.packet
        names = [BASELINE, *(c.name for c in packet.candidates)]
        if self.start_from not in names:
            self.start_from = BASELINE  # its candidate is gone; the working config stays
        start = self.editor("tune-start")
        start.spec = start_spec(packet)
        start.show_value(self.start_from)
        self.request_runs(debounce=False)

    def start(self, name: str) -> None:
        """Start the working configuration over from `name` (the baseline or a candidate)."""
        self.start_from = name
        self.config = resolve_config(self.workbench.working.packet, name)
        self.sync_editors()
        self.request_runs(debounce=False)

    def sync_editors(self) -> None:
        """Every editor shows the working configuration (problems cleared)."""
        for field in self.fields.values():
            found = self.query(f"#{field.id}")  # a section still to mount shows it when it does
            if field.role == "name" or not found:
                continue
            editor = found.first(FieldEditor)
            editor.problem = ""
            editor.show_value(field.text_of(self.config, self.start_from))

    def on_field_editor_edited(self, event: FieldEditor.Edited) -> None:
        event.stop()
        field: TuneField | None = self.fields.get(event.editor.id or "")
        if field is None or field.role == "name":
            event.editor.problem = ""
            return
        if field.role == "start":
            if event.value != self.start_from:
                self.start(event.value)
            return
        working = self.workbench.working
        try:
            value = field.value_of(event.value)
            config = edit_config(self.working_subject(working), field.config_path, value)
        except ConfigRefused as exc:
            event.editor.problem = str(exc)
            return
        event.editor.problem = ""
        if event.commit:  # typing alone is not accepted: Escape puts back the committed value
            event.editor.accepted = event.value
        if config != self.config:
            self.config = config
            self.request_runs(debounce=True)

    def unsaved_work(self) -> list[str]:
        """The working configuration when it was edited and not saved as a candidate."""
        if self.config == resolve_config(self.workbench.working.packet, self.start_from):
            return []
        return ["the Tune working configuration (f4 saves it as a candidate)"]

    def action_reset(self) -> None:
        """Put the working configuration back to where it started."""
        self.start(self.start_from)

    def action_view(self, offset: int) -> None:
        """Show the next (or previous) view."""
        self.deck.step(offset)

    def on_chart_deck_switched(self, event: ChartDeck.Switched) -> None:
        event.stop()
        self.request_extras()

    # --- saving ----------------------------------------------------------------------------

    def next_name(self, packet: Packet) -> str:
        """The first free name lab-1, lab-2, ..."""
        taken = {c.name for c in packet.candidates}
        return next(f"lab-{n}" for n in range(1, len(taken) + 2) if f"lab-{n}" not in taken)

    def action_save_candidate(self) -> None:
        """Save the working configuration as a candidate named in 'save as' (default lab-N)."""
        app = self.workbench
        packet = app.working.packet
        name_editor = self.editor("tune-name")
        name = name_editor.text.strip() or self.next_name(packet)
        if not self.changes(packet) and self.start_from == BASELINE:
            name_editor.problem = "nothing to save: the working configuration is the baseline"
            return
        try:
            dtype_from = None if self.start_from == BASELINE else self.start_from
            dtype = self.working_subject(app.working).dtype if dtype_from else None
            entry = candidate_entry(
                packet, self.config, name, describe(packet.baseline, self.config), dtype
            )
        except ConfigRefused as exc:
            name_editor.problem = str(exc)
            return
        entries = [c.model_dump(mode="python", exclude_none=True) for c in packet.candidates]
        entries.append(entry)
        problem = app.check_edit(("candidates",), entries)
        if problem is not None:
            name_editor.problem = problem.message
            return
        self.start_from = name  # before the edit: the packet change it makes shows it
        app.edit(("candidates",), entries, name)
        name_editor.problem = ""
        name_editor.set_text("")
        app.tell(f"Saved candidate '{name}' in the packet (ctrl+s writes the file)")

    # --- search ----------------------------------------------------------------------------

    def action_search(self) -> None:
        """Run the guided search on the packet (off the UI thread) and show its Pareto front."""
        from triage.search import default_objective, run_search

        working = self.workbench.working
        loaded, seed = subject(working).loaded, working.packet.seed
        objective = default_objective(working.packet)
        self.deck.show_view("tune-pareto")
        self.compute(
            "tune-search", lambda: run_search(loaded, SEARCH_TRIALS, seed, objective),
            self.show_search, label="search",
        )  # fmt: skip

    def show_search(self, result) -> None:  # type: ignore[no-untyped-def]
        """Show the front: chart and numbered table."""
        from triage.search import serving_front
        from workbench.lab.charts import pareto_chart
        from workbench.lab.serving_tune import serving_pareto_chart
        from workbench.widgets.charts import Chart

        self.pareto = result.pareto
        self.pareto_index = None
        packet = self.workbench.working.packet
        serving = serving_front(self.pareto)  # a serving front: TPOT p95 against TTFT p95
        chart = (serving_pareto_chart if serving else pareto_chart)(self.pareto, packet)
        self.query_one("#pareto-chart", Chart).show(chart)
        self.show_pareto_table()

    def show_pareto_table(self) -> None:
        from triage.search import serving_front

        from .tune_views import pareto_view, serving_pareto_view

        serving = serving_front(self.pareto)
        view = serving_pareto_view if serving else pareto_view
        table = view(self.pareto, self.workbench.working.packet.baseline, self.pareto_index)
        self.query_one("#pareto-table", Static).update(table)

    def action_pareto_next(self) -> None:
        """Make the next point of the front the working configuration (f4 then saves it)."""
        if not self.pareto:
            self.workbench.tell("No Pareto front yet: f6 runs a search")
            return
        index = 0 if self.pareto_index is None else (self.pareto_index + 1) % len(self.pareto)
        self.pareto_index = index
        self.config = self.pareto[index].config
        self.sync_editors()
        self.show_pareto_table()
        self.request_runs(debounce=False)
        self.workbench.tell(
            f"Working: Pareto point {index + 1} (trial {self.pareto[index].number}); f4 saves it"
        )

    # --- runs ------------------------------------------------------------------------------

    def request_runs(self, *, debounce: bool) -> None:
        """Bring the status, charts and worksheet up to date with the working configuration:
        at once from the cache, else in a worker (debounced while editing). On a serving
        packet the serving run comes first and the decode step's dynamic-batcher run (the
        status line's) waits until it has landed (`request_decode_step`)."""
        working = self.workbench.working
        target, base = self.working_subject(working), subject(working)
        shown = self.shown_runs or (None, None)
        status = self._status(shown[0], shown[1], target, updating=True)
        update_in_place(self.query_one("#tune-status", Static), status)
        self.forget("tune-full")  # a full run still on its way is for an older configuration
        self.workers.cancel_group(self, DECODE_WAIT)  # its decode step is for an older edit
        self.workers.cancel_group(self, TABLES_AHEAD)  # not yet building: for an older edit
        self._tables_stop.set()  # building: no further table (the edit's own may be one)
        if self.serving and is_serving(target) and is_serving(base):
            self.forget("tune")  # a decode-step run on its way is for an older configuration
            self.request_serving(target, base, debounce=debounce)
            return
        if self.serving:
            self.request_serving(target, base, debounce=debounce)  # says it does not apply
        self.request_decode_step(debounce=debounce)

    def request_decode_step(self, *, debounce: bool = False) -> None:
        """The working configuration's and the baseline's runs through the dynamic batcher
        (a serving packet's decode step): from the cache, else in a worker."""
        working = self.workbench.working
        target, base = self.working_subject(working), subject(working)
        lab = self.lab
        cached = lab.cached_run(target), lab.cached_run(base)
        if not debounce and cached[0] is not None and cached[1] is not None:
            self.forget("tune")
            self.show_runs((cached[0], cached[1]))
            return
        # Two steps: the simulation alone updates the charts, then the tail attribution and
        # classification complete the run for the status line.
        self.compute(
            "tune", lambda: (lab.preview(target), lab.run(base)), self.show_preview,
            debounce=debounce,
        )  # fmt: skip

    def _decode_step_later(self) -> None:
        """Start the decode step's run once the serving run has landed and no edit came for
        DECODE_STEP_AFTER_S (a burst of edits never runs it between keys). The wait is a
        worker of its own, so whoever waits for the screen's work waits for it too."""
        self.run_worker(
            self._decode_step_after(), name=DECODE_WAIT, group=DECODE_WAIT, exclusive=True,
            exit_on_error=False,
        )  # fmt: skip

    async def _decode_step_after(self) -> None:
        from workbench.lab.engine import prefetch_serving_cells

        await asyncio.sleep(self.DECODE_STEP_AFTER_S)  # the new views are drawn meanwhile
        # Then the iteration-cost cells the next arrow steps need (only a head start: a
        # configuration it cannot cost is the serving run's to report), then the decode step.
        with contextlib.suppress(Exception):
            target = self.working_subject(self.workbench.working)
            await asyncio.to_thread(prefetch_serving_cells, target)
        self.request_decode_step()

    def request_serving(self, target: Subject, base: Subject, *, debounce: bool) -> None:
        """The serving runs of the working configuration and the baseline: at once from the
        cache, else in a worker, debounced as every Tune run is (DEBOUNCE_LEADING: the first
        edit of a burst starts at once, later ones DEBOUNCE_S after the last), so a burst runs
        its first and its last value. A working configuration that no longer runs the continuous
        scheduler shows the line saying so."""
        lab = self.lab
        if not is_serving(target) or not is_serving(base):
            from workbench.widgets.charts import Chart

            self.forget("tune-serving")
            self.shown_serving = None
            line = "the working configuration does not run the continuous scheduler"
            self.query_one("#tune-serving", Static).update(Text(f"Serving: {line}"))
            for chart_id in SERVING_CHARTS:
                self.query_one(f"#{chart_id}", Chart).show(None, placeholder=line.capitalize())
            self.query_one("#serving-engines", Static).update("")
            return
        cached = lab.cached_serving_run(target), lab.cached_serving_run(base)
        if cached[0] is not None and cached[1] is not None:
            self.forget("tune-serving")
            self.show_serving((cached[0], cached[1]))
            return

        def failed(exc: BaseException) -> None:
            from .compute import one_line

            self.show_error(f"Serving run: {one_line(exc)}")
            self._decode_step_later()

        self.start_compute(
            "serving run", lambda _stop: (lab.serving_run(target), lab.serving_run(base)),
            self.show_serving, debounce=debounce,
            failed=failed, channel="tune-serving",
        )  # fmt: skip

    def show_serving(self, result: tuple[ServingRun, ServingRun]) -> None:
        """Show a serving run against the baseline's: the serving line and every serving view
        (KV cache, latency, load, HBM); then the decode step's run follows."""
        from workbench.lab.charts import (
            SERVING_DISTRIBUTIONS,
            kv_chart,
            queue_chart,
            serving_distribution_chart,
            serving_hbm_chart,
        )
        from workbench.lab.views import engine_load_line
        from workbench.widgets.charts import Chart

        from .tune_views import serving_text

        run, base = result
        self.shown_serving = (run, base)
        update_in_place(self.query_one("#tune-serving", Static), serving_text(run, base))
        both = [("baseline", base), ("working", run)]
        self.query_one("#tune-kv", Chart).show(kv_chart(both))
        packet = self.workbench.working.packet
        for metric in SERVING_DISTRIBUTIONS:
            chart = self.query_one(f"#{SERVING_DISTRIBUTION_CHARTS[metric]}", Chart)
            chart.show(serving_distribution_chart(metric, run, base, packet))
        update_in_place(self.query_one("#serving-engines", Static), engine_load_line(run, base))
        self.query_one("#load-chart", Chart).show(queue_chart(both))
        self.query_one("#tune-hbm", Chart).show(serving_hbm_chart(both))
        self.request_extras()  # the worksheet and candidates of a serving packet read it
        self._decode_step_later()

    def show_preview(self, result: tuple[LabRun | LabPreview, LabRun]) -> None:
        """Show the working configuration's simulation in the charts and complete its run."""
        from workbench.lab.charts import hbm_chart, latency_chart
        from workbench.widgets.charts import Chart

        preview, base = result
        if isinstance(preview, LabRun):
            self.show_runs((preview, base))
            return
        packet = self.workbench.working.packet
        if not self.serving:  # a serving packet's views show its serving run
            self.query_one("#tune-latency", Chart).show(latency_chart(preview, base, packet))
            self.query_one("#tune-hbm", Chart).show(
                hbm_chart([("baseline", base), ("working", preview)])
            )
        self._charted = (preview.latency_ms, preview.profiles, base, packet)
        # The tail attribution starts once the chart's new frame is drawn (its build runs in a
        # thread): run beside the build and the frame, its threads take the interpreter lock
        # they need.
        complete = partial(self._complete_run, self.newest("tune"), base)
        if self.serving:
            self.call_after_refresh(complete)
        else:
            self.query_one("#tune-latency", Chart).when_drawn(complete)

    def _complete_run(self, generation: int, base: LabRun) -> None:
        """Complete the charted preview into a run (tail attribution, classification) for the
        status line, unless a newer edit came since it was charted."""
        if generation != self.newest("tune") or not self.is_attached:
            return
        target, lab = self.working_subject(self.workbench.working), self.lab
        self.compute("tune-full", lambda: (lab.run(target), base), self.show_runs)

    def _status(  # type: ignore[no-untyped-def]
        self, run: LabRun | None, base: LabRun | None, target: Subject, *, updating: bool = False
    ):
        from .tune_views import status_text

        changes = self.changes(self.workbench.working.packet)
        return status_text(
            run, base, self.start_from, target.name, changes, updating=updating,
            decode_step=self.serving,
        )  # fmt: skip

    def show_runs(self, result: tuple[LabRun, LabRun]) -> None:
        """Show a working run against the baseline run (status and charts)."""
        from workbench.lab.charts import hbm_chart, latency_chart
        from workbench.widgets.charts import Chart

        run, base = result
        packet = self.workbench.working.packet
        self.shown_runs = (run, base)
        target = self.working_subject(self.workbench.working)
        update_in_place(self.query_one("#tune-status", Static), self._status(run, base, target))
        charted = (run.latency_ms, run.profiles, base, packet)
        # A run completing a preview already charted has the same series objects: no redraw.
        if not self.serving and (
            self._charted is None
            or any(a is not b for a, b in zip(charted, self._charted, strict=True))
        ):
            self.query_one("#tune-latency", Chart).show(latency_chart(run, base, packet))
            self.query_one("#tune-hbm", Chart).show(
                hbm_chart([("baseline", base), ("working", run)])
            )
            self._charted = charted
        self.request_extras()
        if not self.serving:
            self._tables_ahead_later()

    def _tables_ahead_later(self) -> None:
        """Build the service tables of the next max_batch arrow steps once no edit came for
        TABLES_AHEAD_AFTER_S after a run landed: a max_batch step then finds its tables built,
        as a delay or placement edit does (a worker of its own, waited for as the screen's
        work is; an edit during the wait cancels it, one during the build lets the table in
        progress finish, which the edit may be waiting for, and starts no further one)."""
        self._tables_stop = threading.Event()
        self.run_worker(
            self._tables_ahead(self._tables_stop), name=TABLES_AHEAD, group=TABLES_AHEAD,
            exclusive=True, exit_on_error=False,
        )  # fmt: skip

    async def _tables_ahead(self, stop: threading.Event) -> None:
        from workbench.lab.engine import prefetch_tables

        await asyncio.sleep(self.TABLES_AHEAD_AFTER_S)
        target = self.working_subject(self.workbench.working)
        with contextlib.suppress(Exception):  # only a head start: the edit's run reports errors
            await asyncio.to_thread(prefetch_tables, target, stop=stop)

    def request_extras(self) -> None:
        """Compute what the view on screen needs beyond the runs (worksheet, load curves,
        candidates): only for the view on screen, so editing stays quick."""
        view = self.deck.current
        if view == "tune-worksheet":
            self.request_worksheet()
        elif view == "tune-load" and not self.serving:  # serving: the run's queue and engines
            self.request_load_curves()
        elif view == "tune-candidates":
            self.request_candidates()

    def request_worksheet(self) -> None:
        """The fusion & tile-plan worksheet of the working configuration against the baseline
        (a serving packet's: per phase at its serving run's point, `serving_worksheet`)."""
        working = self.workbench.working
        target, base = self.working_subject(working), subject(working)
        lab = self.lab
        if self.serving and is_serving(target) and is_serving(base):
            self.show_or_compute(
                "tune-sheet", lab.cached_serving_worksheet(target, base),
                lambda: lab.serving_worksheet(working, target, base), self.show_worksheet,
            )  # fmt: skip
            return
        found = lab.cached_worksheet(target, base)
        self.show_or_compute(
            "tune-sheet", found, lambda: lab.worksheet(target, base), self.show_worksheet
        )

    def show_worksheet(self, sheet: dict) -> None:
        """Show the worksheet table (a serving worksheet's phases and iteration split)."""
        from triage.serving_sheet import SCHEMA

        from .tune_views import serving_worksheet_view, worksheet_view

        compact = self.has_class("-compact")
        view = serving_worksheet_view if sheet["schema"] == SCHEMA else worksheet_view
        self.query_one("#worksheet-table", Static).update(view(sheet, compact=compact))

    def request_load_curves(self) -> None:
        """p99 vs load for the baseline and the working configuration, with progress."""
        from workbench.lab.engine import LOAD_FACTORS

        working = self.workbench.working
        target, base = self.working_subject(working), subject(working)
        lab = self.lab
        bar = self.query_one("#load-progress", ProgressBar)
        points = len(LOAD_FACTORS)
        subjects = [base] if target.key == base.key else [base, target]
        bar.update(total=points * len(subjects), progress=0)
        generation = self.newest("tune-load") + 1
        progress = self.from_thread("tune-load", generation, bar.update)
        stale = self.stale("tune-load", generation)

        def job() -> tuple[list[tuple[str, LoadCurve]], float]:
            from workbench.lab.engine import base_rate_per_s

            curves = []
            for done, item in enumerate(subjects):
                curve = lab.load_curve(
                    item,
                    progress=lambda n, _, d=done: progress(progress=d * points + n),
                    cancelled=stale,
                )
                curves.append(("baseline" if item is base else "working", curve))
            return curves, base_rate_per_s(base.scenario)

        self.compute("tune-load", job, self.show_load_curves, label="p99 vs load")

    def show_load_curves(self, result: tuple[list[tuple[str, LoadCurve]], float]) -> None:
        """Plot p99 against load."""
        from workbench.lab.charts import load_chart
        from workbench.widgets.charts import Chart

        curves, rate = result
        packet = self.workbench.working.packet
        self.query_one("#load-chart", Chart).show(load_chart(curves, packet, rate))

    def request_candidates(self) -> None:
        """Runs of every candidate (and the working configuration) against the baseline."""
        working = self.workbench.working
        packet = working.packet
        lab = self.lab
        target, base = self.working_subject(working), subject(working)
        items = [(target, ", ".join(self.changes(packet)))] if target.name == WORKING else []
        items += [(subject(working, name=c.name), ", ".join(changed_knobs(packet, c.name)))
                  for c in packet.candidates]  # fmt: skip
        if self.serving and all(is_serving(s) for s in (base, *(s for s, _ in items))):

            def serving_job() -> tuple[list[tuple[ServingRun, str]], ServingRun]:
                runs = [(lab.serving_run(item), knobs) for item, knobs in items]
                return runs, lab.serving_run(base)

            self.compute(
                "tune-candidates", serving_job, self.show_serving_candidates,
                label="candidate serving runs",
            )  # fmt: skip
            return

        def job() -> tuple[list[tuple[LabRun, str]], LabRun]:
            return [(lab.run(item), knobs) for item, knobs in items], lab.run(base)

        self.compute("tune-candidates", job, self.show_candidates, label="candidate runs")

    def show_candidates(self, result: tuple[list[tuple[LabRun, str]], LabRun]) -> None:
        """Show the candidates table."""
        from .tune_views import candidates_view

        rows, base = result
        self.query_one("#candidates-table", Static).update(candidates_view(rows, base))

    def show_serving_candidates(
        self, result: tuple[list[tuple[ServingRun, str]], ServingRun]
    ) -> None:
        """Show the candidates table of a serving packet (from their serving runs)."""
        from .tune_views import serving_candidates_view

        rows, base = result
        self.query_one("#candidates-table", Static).update(serving_candidates_view(rows, base))
