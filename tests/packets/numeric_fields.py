"""Find every numeric field of the packet schema in a packet, with its accepted range.

Walks the pydantic models along a packet's data (so tagged unions pick the variant the data
holds) and reports each int/float leaf, present or an absent optional one, with the bounds its
Field constraints give. Used by the edge-value property test.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Any, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class NumericField:
    """One numeric leaf: where it is, whether it is whole, and its accepted bounds."""

    path: Path_
    integer: bool
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None

    def edges(self) -> list[int | float]:
        """Values at and just past each end of the accepted range (or huge ones if open)."""
        out: list[int | float] = []
        if self.integer:
            lo = self.ge if self.ge is not None else (self.gt + 1 if self.gt is not None else None)
            hi = self.le if self.le is not None else (self.lt - 1 if self.lt is not None else None)
            if lo is not None:
                out += [int(lo), int(lo) + 1, int(lo) - 1]
            else:
                out += [-(10**400), -(2**63)]
            if hi is not None:
                out += [int(hi), int(hi) - 1, int(hi) + 1]
            else:
                out += [10**400, 2**64, 2**63, 10**18]
            return out
        if self.ge is not None:
            out += [float(self.ge), math.nextafter(float(self.ge), -math.inf)]
        elif self.gt is not None:
            out += [math.nextafter(float(self.gt), math.inf), float(self.gt)]
            if self.gt == 0:
                out += [5e-324, 1e-300]
        else:
            out += [-1.7976931348623157e308, -1e300]
        if self.le is not None:
            out += [float(self.le), math.nextafter(float(self.le), math.inf)]
        elif self.lt is not None:
            out += [math.nextafter(float(self.lt), -math.inf), float(self.lt)]
        else:
            out += [1.7976931348623157e308, 1e300]
        return out


def _peel(annotation: Any) -> tuple[list[Any], dict[str, float]]:
    """The non-None types an annotation allows, with the bounds its Annotated parts give."""
    bounds: dict[str, float] = {}
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        base, *extras = get_args(annotation)
        for extra in extras:
            for item in extra.metadata if isinstance(extra, FieldInfo) else [extra]:
                for name in ("gt", "ge", "lt", "le"):
                    if isinstance(item, getattr(at, name.title())):
                        bounds[name] = getattr(item, name)
        types_, inner = _peel(base)
        return types_, {**inner, **bounds}
    if origin in (typing.Union, types.UnionType):
        members: list[Any] = []
        for arg in get_args(annotation):
            if arg is not type(None):
                inner_types, inner_bounds = _peel(arg)
                members += inner_types
                bounds.update(inner_bounds)
        return members, bounds
    return [annotation], bounds


def _field_bounds(info: FieldInfo) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in info.metadata:
        for name in ("gt", "ge", "lt", "le"):
            if isinstance(item, getattr(at, name.title())):
                out[name] = getattr(item, name)
    return out


def numeric_fields(annotation: Any, data: Any, path: Path_ = (), bounds=None) -> list[NumericField]:
    """Every numeric leaf the schema `annotation` allows in `data` (absent optional fields in
    present models included)."""
    members, own = _peel(annotation)
    bounds = {**(bounds or {}), **own}
    found: list[NumericField] = []
    for member in members:
        if member in (int, float):
            return [NumericField(path, member is int, **bounds)]
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if models and isinstance(data, dict):
        fitting = [
            m
            for m in models
            if set(data) <= set(m.model_fields)
            and all(n in data for n, f in m.model_fields.items() if f.is_required())
        ]
        for model in fitting[:1]:
            for name, info in model.model_fields.items():
                ann = info.annotation
                if name in data:
                    found += numeric_fields(ann, data[name], (*path, name), _field_bounds(info))
                else:
                    leaf = numeric_fields(ann, None, (*path, name), _field_bounds(info))
                    found += [f for f in leaf if f.path == (*path, name)]
        return found
    for member in members:
        origin = get_origin(member)
        if origin is list and isinstance(data, list):
            (item,) = get_args(member)
            for i, value in enumerate(data):
                found += numeric_fields(item, value, (*path, i))
            return found
        if origin is dict and isinstance(data, dict):
            _, value_type = get_args(member)
            for key, value in data.items():
                found += numeric_fields(value_type, value, (*path, key))
            return found
    return found
