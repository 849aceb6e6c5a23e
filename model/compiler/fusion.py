"""Fusion plans: an ordered partition of a block's ops into kernels.

A plan is a tuple of groups (tuples of op names) covering every op of the block once, in order.
Presets:

* `none`: one kernel per op.
* `standard`: every elementwise op that reads its immediate predecessor's output is folded into
  that producer's kernel (RoPE into the QKV projection, residual adds into their projections,
  SiLU-multiply into gate/up), except norms, which need whole rows and stay separate.
* `aggressive`: large groups: norm + QKV projection + RoPE; attention + output projection +
  residual; the whole MLP (norm, gate/up, SiLU-multiply, down, residual).
"""

from __future__ import annotations

from collections.abc import Sequence

from model.compiler.blocks import LLAMA_OPS, OPS, BlockSpec

FUSION_PRESETS = ("none", "standard", "aggressive")

_AGGRESSIVE = (
    ("attn_norm", "qkv_proj", "rope"),
    ("attention", "out_proj", "attn_residual"),
    ("mlp_norm", "gate_up_proj", "silu_mul", "down_proj", "mlp_residual"),
)

Plan = tuple[tuple[str, ...], ...]


def _standard(ops: Sequence[str]) -> Plan:
    groups: list[list[str]] = []
    for i, op in enumerate(ops):
        spec = OPS[op]
        folds = (
            groups
            and spec.kind == "elementwise"
            and not spec.row_reduction
            and set(spec.reads) & set(OPS[ops[i - 1]].writes)
        )
        if folds:
            groups[-1].append(op)
        else:
            groups.append([op])
    return tuple(tuple(g) for g in groups)


def fusion_groups(block: BlockSpec, fusion: str | Sequence[Sequence[str]]) -> Plan:
    """The kernel groups of `fusion` (a preset name or explicit groups) for `block`.

    Explicit groups must list every op of the block exactly once, in execution order; a bad
    plan raises a one-line ValueError naming the problem.
    """
    ops = block.op_names
    if isinstance(fusion, str):
        if fusion == "none":
            return tuple((op,) for op in ops)
        if fusion == "standard":
            return _standard(ops)
        if fusion == "aggressive":
            groups = (tuple(op for op in g if op in ops) for g in _AGGRESSIVE)
            return tuple(g for g in groups if g)
        raise ValueError(
            f"fusion: unknown preset {fusion!r} (expected one of {', '.join(FUSION_PRESETS)} "
            "or a list of op groups)"
        )
    groups = tuple(tuple(g) for g in fusion)
    for i, group in enumerate(groups):
        if not group:
            raise ValueError(f"fusion: group {i} is empty")
        for op in group:
            if op not in LLAMA_OPS:
                raise ValueError(f"fusion: group {i} names unknown op {op!r}")
            if op not in ops:
                raise ValueError(
                    f"fusion: group {i} names {op!r}, which a {block.kind} block lacks"
                )
    flat = [op for g in groups for op in g]
    if flat != list(ops):
        missing = [op for op in ops if op not in flat]
        repeated = sorted({op for op in flat if flat.count(op) > 1})
        if missing:
            raise ValueError(f"fusion: groups leave out {', '.join(missing)}")
        if repeated:
            raise ValueError(f"fusion: groups repeat {', '.join(repeated)}")
        raise ValueError(f"fusion: groups must list ops in execution order ({', '.join(ops)})")
    return groups
