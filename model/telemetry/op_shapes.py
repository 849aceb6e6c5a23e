"""GEMM shapes from the `Input Dims` PyTorch's profiler records on CPU ops (record_shapes=True).

A kernel event carries its launching CPU op's `External id`; that op's name and input dims give
(m, n, k) for the matrix-multiply ops below. Anything else, or dims that do not agree on k,
gives no shape rather than a guess.
"""

from __future__ import annotations

import math
from typing import NamedTuple


class GemmShape(NamedTuple):
    """A GEMM (m x k) @ (k x n), `batch` independent ones (1 when not batched)."""

    m: int
    n: int
    k: int
    batch: int


def _dims(value: object) -> list[list[int]] | None:
    if not isinstance(value, list):
        return None
    out = []
    for d in value:
        if not isinstance(d, list) or not all(isinstance(x, int) and x >= 0 for x in d):
            return None
        out.append(d)
    return out


def gemm_shape(op_name: str, input_dims: object) -> GemmShape | None:
    """(m, n, k, batch) of a matrix-multiply CPU op from its input dims, or None.

    Handles aten::mm/addmm ([m,k] @ [k,n]), aten::bmm/baddbmm ([b,m,k] @ [b,k,n]),
    aten::linear (x[..., k] with weight [n, k]: m = product of x's leading dims) and aten::matmul
    (x[..., m, k] @ w[k, n], or equal-batch 3-D operands).
    """
    dims = _dims(input_dims)
    if dims is None:
        return None
    name = op_name.removeprefix("aten::")
    operands = dims[1:3] if name in ("addmm", "baddbmm") else dims[:2]
    if len(operands) < 2:
        return None
    a, b = operands
    if name in ("mm", "addmm") and len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return GemmShape(a[0], b[1], a[1], 1)
    if name in ("bmm", "baddbmm") and len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return GemmShape(a[1], b[2], a[2], a[0])
    if name == "linear" and len(a) >= 1 and len(b) == 2 and a[-1] == b[1]:
        return GemmShape(math.prod(a[:-1]), b[0], a[-1], 1)
    if name == "matmul" and len(a) >= 2 and len(b) == 2 and a[-1] == b[0]:
        return GemmShape(math.prod(a[:-1]), b[1], a[-1], 1)
    if name == "matmul" and len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return GemmShape(a[1], b[2], a[2], a[0])
    return None


__all__ = ["GemmShape", "gemm_shape"]
