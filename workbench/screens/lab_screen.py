"""LabScreen: the Baseline, Diagnose and Tune steps' base, whose results come from the model.

Off-thread work, staleness, the busy and error lines are `WorkScreen`'s (`compute`,
`show_or_compute`, `from_thread`, `stale`); this adds the lab (the app's cached model results)
and the lab steps' status lines. Their stylesheet, lab.tcss, is one of the app's (loaded at
start), so a first lab screen does not re-parse every stylesheet and restyle the screen it
leaves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult

from workbench.widgets.note import Note

from .compute import WorkScreen

if TYPE_CHECKING:
    from workbench.lab.engine import Lab


class LabScreen(WorkScreen):
    """Base of the Baseline, Diagnose and Tune steps: the lab and its status lines."""

    LOADS_MODEL: ClassVar[bool] = True
    BUSY_NOTE: ClassVar[str] = "lab-busy"
    ERROR_NOTE: ClassVar[str] = "lab-error"

    @classmethod
    def preload(cls) -> None:
        import workbench.lab.charts
        import workbench.widgets.chart_deck
        import workbench.widgets.charts  # noqa: F401  (plotext)

    @property
    def lab(self) -> Lab:
        """The app's lab (cached model results shared by every step)."""
        return self.workbench.lab  # type: ignore[attr-defined]

    def compose_status(self) -> ComposeResult:
        """The progress and error lines (hidden while there is nothing to say)."""
        yield Note(id=self.BUSY_NOTE)
        yield Note(id=self.ERROR_NOTE)
