"""`editor_for`: the editor widget that suits a field's kind (apart from the editors
themselves, so `field_editor` and `number_field` do not import each other)."""

from __future__ import annotations

from typing import Any

from workbench.core.form import FieldSpec

from .field_editor import ChoiceField, FieldEditor
from .number_field import NumberField


def editor_for(spec: FieldSpec, value: Any, *, id: str | None = None) -> FieldEditor:
    """The editor widget that suits the field's kind."""
    if spec.kind in ("integer", "number"):
        return NumberField(spec, value, id=id)
    if spec.kind in ("choice", "bool"):
        return ChoiceField(spec, value, id=id)
    return FieldEditor(spec, value, id=id)
