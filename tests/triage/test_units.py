"""One formatter per unit (triage/units.py): the four millisecond renderings of the CLI, the
app, the review tables and the markdown report all come from `units.ms`, and read as before."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from triage import units
from triage.mapping import markdown
from workbench.commands import render
from workbench.lab import views
from workbench.review import render as review_render

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)


@given(finite)
def test_every_millisecond_rendering_is_the_shared_one(value: float) -> None:
    assert render._ms(value) == views.ms(value) == f"{value:,.2f} ms"
    assert review_render.ms_cell(value) == f"{value:,.2f}"
    assert markdown._ms(value) == f"{value:,.1f}"


def test_missing_values_read_as_missing_not_nan() -> None:
    assert units.ms(None) == units.ms(math.nan) == "n/a"
    assert review_render.ms_cell(math.nan) == "-"
    assert markdown._ms(None) == markdown._ms(math.nan) == "-"
    assert units.per_s(None, missing="-") == "-"


def test_grouping_and_digits() -> None:
    assert units.ms(1234.567) == "1,234.57 ms"
    assert units.ms(1234.567, digits=1, unit=False) == "1,234.6"
    assert units.per_s(248.94) == "248.9/s"
    assert units.ratio(0.8349) == "0.83"
