"""Themes from `themes/*.toml`, applied with a clean fallback, and their colours for plotext.

A theme file holds the fields of `textual.theme.Theme` (name, primary, background, ...,
`dark`, `ansi`, and a `[variables]` table). A file that cannot be used is skipped with a
one-line warning; asking for a theme that does not exist falls back to DEFAULT_THEME (and, were
that gone too, to Textual's own default) instead of raising InvalidThemeError.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from importlib import resources

from textual.app import App, InvalidThemeError
from textual.color import Color, ColorParseError
from textual.theme import Theme

DEFAULT_THEME = "workbench-dark"
TEXTUAL_FALLBACK = "textual-dark"
_THEME_FIELDS = {f.name for f in fields(Theme)}


@dataclass(frozen=True)
class ThemeLoad:
    """Themes read from the themes folder and one warning line per file left out."""

    themes: tuple[Theme, ...]
    warnings: tuple[str, ...]


def load_themes() -> ThemeLoad:
    """Every usable `themes/*.toml`, sorted by file name."""
    themes: list[Theme] = []
    warnings: list[str] = []
    folder = resources.files("themes")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        try:
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            unknown = set(data) - _THEME_FIELDS
            if unknown:
                raise ValueError(f"unknown keys {', '.join(sorted(unknown))}")
            theme = Theme(**data)
            theme.to_color_system().generate()  # parses every colour: fail here, not on screen
        except (tomllib.TOMLDecodeError, TypeError, ValueError, ColorParseError) as exc:
            warnings.append(f"themes/{entry.name}: skipped ({exc})")
            continue
        themes.append(theme)
    return ThemeLoad(tuple(themes), tuple(warnings))


def apply_theme(app: App, name: str | None) -> str:
    """Set `app.theme` to `name`, else DEFAULT_THEME, else Textual's default.

    Returns a one-line warning when it had to fall back ('' when `name` was applied).
    """
    wanted = name or DEFAULT_THEME
    for candidate in dict.fromkeys((wanted, DEFAULT_THEME, TEXTUAL_FALLBACK)):
        try:
            app.theme = candidate
        except InvalidThemeError:
            continue
        if candidate == wanted:
            return ""
        names = ", ".join(sorted(app.available_themes))
        return f"theme '{wanted}' not found; using {candidate} (themes: {names})"
    return f"theme '{wanted}' not found and no fallback theme is available"


# --- plotext colours ------------------------------------------------------------------------

PlotColor = str | int | tuple[int, int, int]
NO_COLOR = "default"  # plotext's "leave the terminal's colour alone"


@dataclass(frozen=True)
class PlotTheme:
    """Colours for a plotext chart, as plotext accepts them: a colour name, an ANSI index
    0-255, or an (r, g, b) tuple; "default" means the terminal's own colour.

    Attributes:
        canvas: plot background.
        axes: background around the plot (axes and labels area).
        ticks: tick and label text.
        series: one colour per data series, in the order series are added.
    """

    canvas: PlotColor
    axes: PlotColor
    ticks: PlotColor
    series: tuple[PlotColor, ...]

    def as_plotext_theme(self) -> list:
        """The 5-item list plotext stores per theme: [canvas, axes, ticks, style, sequence]."""
        return [self.canvas, self.axes, self.ticks, NO_COLOR, list(self.series)]


def plot_color(value: str | None, background: tuple[int, int, int] = (0, 0, 0)) -> PlotColor:
    """One Textual colour string as a plotext colour.

    `ansi_*` colours keep their ANSI index (so 16-colour palettes stay the user's), ansi_default
    and unparseable values become "default", and translucent colours are blended over
    `background` (plotext has no alpha); fully transparent ones become "default".
    """
    if not value:
        return NO_COLOR
    text, alpha = value.strip(), 1.0
    if text.endswith("%") and " " in text:  # CSS "colour NN%", as theme variables write it
        text, _, percent = text.rpartition(" ")
        try:
            alpha = float(percent[:-1]) / 100.0
        except ValueError:
            return NO_COLOR
    try:
        color = Color.parse(text)
    except ColorParseError:
        return NO_COLOR
    color = color.multiply_alpha(alpha) if alpha < 1.0 else color
    if color.a == 0:  # transparent: let the terminal's own colour show
        return NO_COLOR
    if color.ansi is not None:
        return NO_COLOR if color.ansi < 0 else int(color.ansi)
    if color.a < 1.0:
        color = Color(*background).blend(color.with_alpha(1.0), color.a)
    return (color.r, color.g, color.b)


SERIES_VARIABLES = ("primary", "accent", "success", "error", "secondary", "warning")


def plot_theme(variables: Mapping[str, str], *, no_color: bool = False) -> PlotTheme:
    """plotext colours for a theme's CSS variables (`app.theme_variables`).

    With `no_color` (NO_COLOR set, or a monochrome terminal) every colour is "default", so
    charts carry no colour escapes at all.
    """
    if no_color:
        return PlotTheme(NO_COLOR, NO_COLOR, NO_COLOR, (NO_COLOR,) * len(SERIES_VARIABLES))
    surface = plot_color(variables.get("surface"))
    base = surface if isinstance(surface, tuple) else (0, 0, 0)
    return PlotTheme(
        canvas=surface,
        axes=surface,
        ticks=plot_color(variables.get("foreground"), base),
        series=tuple(plot_color(variables.get(name), base) for name in SERIES_VARIABLES),
    )


def register_plot_theme(app: App) -> str:
    """Register the app's current theme with plotext and return the plotext theme name to use
    (`PlotextPlot.theme = name`); call again after a theme change."""
    from plotext._dict import themes as plotext_themes

    name = f"workbench-{app.theme}{'-nocolor' if app.no_color else ''}"
    plotext_themes[name] = plot_theme(app.theme_variables, no_color=app.no_color).as_plotext_theme()
    return name
