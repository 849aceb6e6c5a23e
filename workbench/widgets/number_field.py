"""NumberField: a labelled number editor with schema bounds, arrow-key steps and a unit suffix.

Built for any numeric packet field: the Packet step's inputs now, batch-policy and tile editors
later. Bounds and whole-number rules come from the pydantic field (`form.FieldSpec`); up/down
step by `step` (default: `FieldSpec.default_step` of the starting value), shift+up/down by ten steps. A step that would break a bound is refused with the
bound's message and the value stays.
"""

from __future__ import annotations

import math
from typing import ClassVar

from textual.binding import Binding, BindingType

from workbench.core.form import FieldSpec, TextRefused, check_bounds, format_value, parse_text

from .field_editor import FieldEditor


class NumberField(FieldEditor):
    """Edits one number. `step` defaults to `spec.default_step(value)`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "step(1)", "Step up", id="number-up"),
        Binding("down", "step(-1)", "Step down", id="number-down"),
        Binding("shift+up", "step(10)", "Step up x10", id="number-up-10", show=False),
        Binding("shift+down", "step(-10)", "Step down x10", id="number-down-10", show=False),
    ]

    def __init__(
        self,
        spec: FieldSpec,
        value: int | float | None,
        *,
        step: float | None = None,
        id: str | None = None,
    ) -> None:
        if spec.kind not in ("integer", "number"):
            raise ValueError(f"NumberField needs a number field, {spec.label} is {spec.kind}")
        super().__init__(spec, value, id=id)
        self.step = step or spec.default_step(value)
        """Change per arrow press, fixed when the field is made so presses stay predictable."""

    def current(self) -> int | float | None:
        """The number in the box when it reads as one, else the last accepted value."""
        try:
            return parse_text(self.spec, self.text)
        except TextRefused:
            return self.accepted

    def stepped(self, value: int | float | None, steps: int) -> int | float:
        """`value` moved by `steps` steps, rounded to the step's decimals (no float dust).

        From an empty optional field the first step lands on the lowest allowed value (or 0).
        Raises TextRefused when the result breaks a bound.
        """
        step = self.step
        if value is None:
            spec = self.spec
            result: float = spec.ge if spec.ge is not None else (spec.gt or 0) + step
        else:
            result = value + steps * step
        if self.spec.kind == "integer":
            result = round(result)
        else:
            decimals = max(0, -math.floor(math.log10(step))) + 1 if step < 1 else 1
            result = round(float(result), decimals)
        check_bounds(self.spec, result)
        return result

    def action_step(self, steps: int) -> None:
        """Move the value by `steps` steps and offer it as an edit."""
        try:
            value = self.stepped(self.current(), steps)
        except TextRefused as exc:
            self.problem = f"{exc}: not stepped"
            return
        text = format_value(self.spec, value)
        self.set_text(text)
        self.read(text, commit=True)
