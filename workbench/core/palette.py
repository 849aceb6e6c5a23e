"""Command palette entries (ctrl+p): every bound action, every step, every theme."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Provider

if TYPE_CHECKING:
    from workbench.app import WorkbenchApp


@dataclass(frozen=True)
class PaletteCommand:
    """One palette entry: its title, a help line (the key, when it has one), what it runs."""

    title: str
    help: str
    run: Callable[[], object]


class WorkbenchCommands(Provider):
    """Offers `WorkbenchApp.palette_commands()` for the screen the palette was opened on."""

    def _commands(self) -> list[PaletteCommand]:
        app: WorkbenchApp = self.app  # type: ignore[assignment]
        return app.palette_commands(self.screen)

    async def discover(self) -> AsyncIterator[DiscoveryHit]:
        for command in self._commands():
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> AsyncIterator[Hit]:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.run, help=command.help)
