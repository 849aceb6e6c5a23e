"""The model's specs from packet fields: block, fusion plan and tiles.

Format-level (no run is built here): load-time validation (`model_checks.py`) and the run
builder (`triage/scenario.py`) both translate packet fields to the model's inputs through these.
"""

from __future__ import annotations

from model.compiler.blocks import BlockSpec

from .schema import Block, Config


def block_spec(block: Block, dtype: str) -> BlockSpec:
    """The model's block; dimensions a kind does not use are set to 1 (they are never read).
    A serving block's per-step views (plan, worksheet, the dynamic batcher) are its decode step."""
    return BlockSpec(
        kind=block.kind,
        phase="decode" if block.phase == "serving" else block.phase,
        dtype=dtype,
        hidden=block.hidden,
        heads=block.heads or 1,
        kv_heads=block.kv_heads or 1,
        head_dim=block.head_dim or 1,
        ffn_hidden=block.ffn_hidden or 1,
        layers=block.layers,
    )


def fusion_spec(config: Config) -> str | list[list[str]]:
    """The fusion plan as the model takes it: a preset name or op groups."""
    return config.fusion if isinstance(config.fusion, str) else [list(g) for g in config.fusion]


def tile_spec(config: Config) -> dict[str, dict[str, int]]:
    """Explicit tiles per op (ops set to `auto`, or absent, are autotuned)."""
    return {
        op: tile.model_dump()
        for op, tile in sorted(config.tiles.items())
        if not isinstance(tile, str)
    }
