"""The step screens' footer: Textual's, recomposed only when what it shows changes.

Textual's Footer recomposes on every change of the screen's bindings, which it is told of on
every focus change: a Tab between two fields of a form, which show the same keys, rebuilt the
footer's widgets and laid the whole screen out again (20-80 ms of the UI loop on the Tune
screen on a slow host, once per Tab). This one keeps what its last compose showed and skips a
recompose that would show the same keys, descriptions, states and tooltips, or the keys a
recompose already on its way will show: focus moving into a form field told it twice, and it
rebuilt twice (a layout of the screen each, the first edit of a tuning session).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    """Textual's Footer, recomposed only when the bindings it shows differ."""

    _shown_keys: tuple | None = None
    _coming_keys: tuple | None = None  # what the recompose asked for will show

    def shown_keys(self, screen: Screen) -> tuple:
        """What `compose` shows of `screen`'s active bindings, in order."""
        return tuple(
            (b.key, self.app.get_key_display(b), b.description, b.action, b.group, on, tip)
            for (_, b, on, tip) in screen.active_bindings.values()
            if b.show
        )

    def compose(self) -> ComposeResult:
        self._coming_keys = None
        if self._bindings_ready:
            self._shown_keys = self.shown_keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._shown_keys is not None and self.is_attached and screen is self.screen:
            keys = self.shown_keys(screen)
            if keys in (self._shown_keys, self._coming_keys):
                return  # the keys shown, or those a recompose on its way will show
            if screen.app.app_focus:  # Textual's Footer recomposes only then
                self._coming_keys = keys
        super().bindings_changed(screen)
