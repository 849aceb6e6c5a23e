"""Turn pydantic validation errors into one-line problems with paths, lines and suggestions."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .errors import Problem
from .fields import TAG_PREFIX
from .strict_yaml import LoadedYaml

MAX_DIGITS_SHOWN = 16  # a longer whole number is described by its length, not echoed


def clean_loc(loc: tuple[Any, ...], data: Any = None) -> tuple[str | int, ...]:
    """Drop pydantic's union tags and dict-key markers from an error location.

    With the validated `data`, a part that names a key or index actually present at that point
    of the document is always kept, so a user's own key that happens to look like a tag (say
    `~ note`) still names its place."""
    path: list[str | int] = []
    node, walking = data, data is not None
    for part in loc:
        present = walking and (
            (isinstance(node, dict) and part in node)
            or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        )
        if present:
            node = node[part]
            path.append(part)
            continue
        if isinstance(part, str) and (part.startswith(TAG_PREFIX) or part == "[key]"):
            continue  # a union tag or key marker: not a place in the document
        walking = False  # beyond the document (a missing field): keep the rest as named
        path.append(part)
    return tuple(path)


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"'{value}'" if len(value) <= 40 else f"'{value[:37]}...'"
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS_SHOWN:
        return f"a {len(str(abs(value)))}-digit number"
    return repr(value)


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types an annotation may hold (Optional/Union/Annotated/list/dict peeled)."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _types_at(root: type[BaseModel], path: tuple[str | int, ...]) -> list[Any]:
    """Every type the schema allows at `path` (several where a union leaves it open)."""
    current: list[Any] = [root]
    for part in path:
        nxt: list[Any] = []
        for t in current:
            for concrete in _unwrap(t):
                origin = get_origin(concrete)
                if isinstance(concrete, type) and issubclass(concrete, BaseModel):
                    field = concrete.model_fields.get(str(part))
                    if field is not None:
                        nxt.append(field.annotation)
                elif origin is list and isinstance(part, int):
                    nxt.append(get_args(concrete)[0])
                elif origin is dict:
                    nxt.append(get_args(concrete)[1])
        current = nxt
    return current


def allowed_keys(root: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names a mapping at `path` may hold, for 'did you mean' suggestions."""
    names: list[str] = []
    for t in _types_at(root, path):
        for concrete in _unwrap(t):
            if isinstance(concrete, type) and issubclass(concrete, BaseModel):
                names.extend(n for n in concrete.model_fields if n not in names)
    return names


def _literal_values(root: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    values: list[str] = []
    for t in _types_at(root, path):
        for concrete in _unwrap(t):
            if get_origin(concrete) is Literal:
                values.extend(str(v) for v in get_args(concrete))
    return values


def suggest(word: str, options: list[str]) -> str:
    """' (did you mean 'x'?)' when a close option exists, else ''."""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _message(root: type[BaseModel], error: Any, path: tuple[str | int, ...]) -> str:
    kind, ctx, value = error["type"], error.get("ctx", {}), error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        key = str(path[-1])
        options = allowed_keys(root, path[:-1])
        hint = suggest(key, options) or "; valid fields: " + ", ".join(options)
        return f"unknown field '{key}'{hint}"
    if kind == "literal_error":
        options = _literal_values(root, path)
        if len(options) == 1:
            return f"must be '{options[0]}', got {_describe(value)}"
        hint = suggest(str(value), options) if isinstance(value, str) else ""
        return f"must be one of {', '.join(options)}; got {_describe(value)}{hint}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    comparisons = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in comparisons:
        words, key = comparisons[kind]
        return f"must be {words} {ctx.get(key):g}, got {_describe(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {_describe(value)}"
    if kind in ("int_type", "int_from_float"):
        return f"expected a whole number, got {_describe(value)}"
    if kind in ("float_type", "int_parsing", "float_parsing"):
        return f"expected a number, got {_describe(value)}"
    if kind == "string_type":
        return f"expected text, got {_describe(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "bool_type":
        return f"expected true or false, got {_describe(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping, got {_describe(value)}"
    if kind == "list_type":
        return f"expected a list, got {_describe(value)}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"takes at most {ctx.get('max_length')} item(s)"
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return f"unexpected value {_describe(value)}: {error['msg']}"
    return str(error["msg"])


def problems_from_validation(
    root: type[BaseModel],
    exc: ValidationError,
    loaded: LoadedYaml,
    file: str,
    data: Any = None,
) -> list[Problem]:
    """One Problem per pydantic error, located with the YAML line map. `data` is what was
    validated (default: the YAML's own data) and tells a user's keys from pydantic's markers."""
    problems = []
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    for error in exc.errors():
        path = clean_loc(tuple(error["loc"]), loaded.data if data is None else data)
        message = _message(root, error, path)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        problems.append(Problem(file, loaded.line_of(path), path, message))
    return problems
