"""Leaf field types of the packet schema.

Every leaf goes through one of these so that plain YAML text (`Plain`) is interpreted by the
schema, not by the YAML reader: numbers by YAML 1.2 core rules, booleans as true/false only,
text exactly as written. Values built in Python (by the app, or tests) pass through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, GetCoreSchemaHandler, Tag
from pydantic_core import CoreSchema, core_schema

from .safe_text import describe_char, first_unsafe
from .strict_yaml import Plain, parse_bool, parse_number

_SLUG_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")
_PRINCIPAL_RE = re.compile(r"[^\s@,*?!\"]+@[^\s@,*?!\"]+\Z")
TAG_PREFIX = "~"  # union tags carry this prefix so error paths can drop them


def _as_text(value: Any) -> Any:
    """Text as written; refused when it holds a control, bidi or line-separator character
    (the YAML reader already refuses those in files; this covers text built in Python)."""
    if not isinstance(value, str):
        return value
    at = first_unsafe(value)
    if at is not None:
        raise ValueError(
            f"text holds {describe_char(value[at])}: control characters, bidi controls and line "
            "separators are not accepted in packet text"
        )
    return str(value)


def _as_number(value: Any) -> Any:
    if isinstance(value, Plain):
        return parse_number(value)
    if isinstance(value, str):
        raise ValueError(f"expected a number, got the quoted text '{value}': remove the quotes")
    return value


def _as_bool(value: Any) -> Any:
    if isinstance(value, Plain):
        return parse_bool(value)
    if isinstance(value, str):
        raise ValueError(f"expected true or false, got the quoted text '{value}'")
    return value


def _as_slug(value: Any) -> Any:
    value = _as_text(value)
    if isinstance(value, str) and not _SLUG_RE.match(value):
        raise ValueError(
            f"'{value}' is not a slug: use 1-64 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def _as_principal(value: Any) -> Any:
    value = _as_text(value)
    if isinstance(value, str) and not _PRINCIPAL_RE.match(value):
        raise ValueError(
            f"'{value}' is not a principal: use an e-mail-like identity such as "
            "ada@example.com (no spaces, commas or wildcards)"
        )
    return value


@dataclass(frozen=True)
class ReadFirst:
    """`pydantic.BeforeValidator` for a one-argument function: the same core schema, without
    pydantic's look at the function's signature (whether it takes `info`) for every field
    that uses it, ~240 times while the schema's classes are built (~10% of building them)."""

    func: Callable[[Any], Any]

    def __get_pydantic_core_schema__(
        self, source_type: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_before_validator_function(self.func, handler(source_type))


def integer(**bounds: int) -> Any:
    """A whole-number field with bounds (gt, ge, lt, le), read from plain YAML text.

    Both ends are required: an unbounded integer (10^400 reads fine in Python) overflows the
    first float or int64 it meets in the model."""
    if not ({"gt", "ge"} & bounds.keys() and {"lt", "le"} & bounds.keys()):
        raise TypeError(f"integer fields need a lower and an upper bound, got {bounds}")
    return Annotated[int, Field(**bounds), ReadFirst(_as_number)]


def number(**bounds: float) -> Any:
    """A finite real-number field with bounds (gt, ge, lt, le), read from plain YAML text."""
    return Annotated[float, Field(allow_inf_nan=False, **bounds), ReadFirst(_as_number)]


Text = Annotated[str, Field(min_length=1), ReadFirst(_as_text)]
Slug = Annotated[str, ReadFirst(_as_slug)]
Principal = Annotated[str, ReadFirst(_as_principal)]
Seed = integer(ge=0, lt=2**63)
Float = number()
Fraction = number(ge=0, le=1)
Bool = Annotated[bool, ReadFirst(_as_bool)]

Dtype = Annotated[Literal["bf16", "fp16", "fp8", "int8", "fp32"], ReadFirst(_as_text)]


def choice(*values: str) -> Any:
    """A text field that must be one of `values` (written as given, e.g. `placement`)."""
    return Annotated[Literal[values], ReadFirst(_as_text)]  # type: ignore[valid-type]


def tagged(by: Any, **variants: Any) -> Any:
    """A union whose variant is picked by `by(value) -> name`; error paths drop the tag."""
    members = tuple(Annotated[t, Tag(TAG_PREFIX + name)] for name, t in variants.items())

    def pick(value: Any) -> str | None:
        name = by(value)
        return None if name is None else TAG_PREFIX + name

    return Annotated[members[0] if len(members) == 1 else _union(members), Discriminator(pick)]


def _union(members: tuple[Any, ...]) -> Any:
    from typing import Union

    return Union[members]  # noqa: UP007 (built from a runtime tuple)
