"""Model blocks as operator graphs: which ops a block runs, and each op's FLOPs and bytes.

A block (`BlockSpec`) is `llama-decoder`, `mlp` or `attention` in the `prefill` or `decode` phase.
Its ops form a chain over named activation tensors (`TENSOR_WIDTHS`), each op reading tensors
produced earlier (or the block input) and writing one or more; that dataflow is what lets a
fusion plan keep an intermediate on chip. Sizes are functions of the batch size b (requests)
and the runtime shape s (`seq_len`: prompt tokens for prefill, KV-cache length for decode):
tokens per batch m = b * s (prefill) or b (decode). This module is the graph and its scalar
sizes (GEMM dims, weight bytes) and never imports numpy: a packet check validates a block with it
and nothing more (`workbench open` checks the packet before its first frame). The per-batch sizes
as arrays (tokens, FLOPs, tensor and KV bytes) are in `op_sizes.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.compiler.hardware import DTYPE_BYTES

BLOCK_KINDS = ("llama-decoder", "mlp", "attention")
PHASES = ("prefill", "decode")

LLAMA_OPS = (
    "attn_norm",
    "qkv_proj",
    "rope",
    "attention",
    "out_proj",
    "attn_residual",
    "mlp_norm",
    "gate_up_proj",
    "silu_mul",
    "down_proj",
    "mlp_residual",
)
"""Op names of a llama-decoder block, in execution order (the packet format uses them)."""

_BLOCK_OPS = {
    "llama-decoder": LLAMA_OPS,
    "attention": LLAMA_OPS[:6],
    "mlp": LLAMA_OPS[6:],
}

# Elementwise FLOPs per output element (documented estimates; these kernels are memory-bound).
_ELEMENTWISE_FLOPS = {"rmsnorm": 4.0, "rope": 6.0, "silu_mul": 6.0, "add": 1.0}


@dataclass(frozen=True)
class BlockSpec:
    """A transformer block (the packet's `inputs.workload.block`).

    Attributes:
        kind: llama-decoder | mlp | attention.
        phase: prefill | decode.
        dtype: bf16 | fp16 | fp8 | int8 | fp32 (activations and weights).
        hidden: model width (elements).
        heads: query heads.
        kv_heads: key/value heads (grouped-query attention when < heads).
        head_dim: elements per head.
        ffn_hidden: gated-MLP inner width (elements).
        layers: times the block runs per request.
    """

    kind: str
    phase: str
    dtype: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int
    layers: int = 1

    def __post_init__(self) -> None:
        for name, allowed in (("kind", BLOCK_KINDS), ("phase", PHASES), ("dtype", DTYPE_BYTES)):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"block.{name}: {getattr(self, name)!r} is not one of {', '.join(allowed)}"
                )
        for name in ("hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"block.{name} must be a whole number >= 1, got {value!r}")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"block.heads ({self.heads}) must be a multiple of block.kv_heads ({self.kv_heads})"
            )

    @property
    def op_names(self) -> tuple[str, ...]:
        """The block's ops in execution order."""
        return _BLOCK_OPS[self.kind]

    @property
    def bytes_per_element(self) -> int:
        """Bytes per activation/weight element."""
        return DTYPE_BYTES[self.dtype]

    def tensor_width(self, tensor: str) -> int:
        """Elements per token of an activation tensor."""
        return TENSOR_WIDTHS[tensor](self)


TENSOR_WIDTHS = {
    "x": lambda blk: blk.hidden,  # block input (residual stream)
    "xn": lambda blk: blk.hidden,  # attn_norm output
    "q": lambda blk: blk.heads * blk.head_dim,  # queries from qkv_proj
    "k": lambda blk: blk.kv_heads * blk.head_dim,  # keys from qkv_proj
    "v": lambda blk: blk.kv_heads * blk.head_dim,  # values from qkv_proj (the KV cache's)
    "q_rot": lambda blk: blk.heads * blk.head_dim,  # rope output
    "k_rot": lambda blk: blk.kv_heads * blk.head_dim,  # rope output (the KV cache's keys)
    "attn_out": lambda blk: blk.heads * blk.head_dim,
    "o": lambda blk: blk.hidden,  # out_proj output
    "x2": lambda blk: blk.hidden,  # residual stream after attention
    "x2n": lambda blk: blk.hidden,  # mlp_norm output
    "gu": lambda blk: 2 * blk.ffn_hidden,  # gate and up projections, interleaved
    "act": lambda blk: blk.ffn_hidden,  # silu(gate) * up
    "d": lambda blk: blk.hidden,  # down_proj output
    "y": lambda blk: blk.hidden,  # block output
}
"""tensor name -> elements per token, as a function of the block."""


@dataclass(frozen=True)
class OpSpec:
    """One operator of a block and its dataflow.

    Attributes:
        name: op name (see LLAMA_OPS).
        kind: gemm | attention | elementwise.
        reads: activation tensors the op reads.
        writes: activation tensors the op writes.
        elementwise: for elementwise ops, rmsnorm | rope | silu_mul | add.
        row_reduction: True when each output row needs its whole input row (a norm), so the
            op cannot be folded into a producer tile that holds only part of the row.
    """

    name: str
    kind: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    elementwise: str = ""
    row_reduction: bool = False


OPS: dict[str, OpSpec] = {
    "attn_norm": OpSpec("attn_norm", "elementwise", ("x",), ("xn",), "rmsnorm", True),
    "qkv_proj": OpSpec("qkv_proj", "gemm", ("xn",), ("q", "k", "v")),
    "rope": OpSpec("rope", "elementwise", ("q", "k"), ("q_rot", "k_rot"), "rope"),
    "attention": OpSpec("attention", "attention", ("q_rot", "k_rot", "v"), ("attn_out",)),
    "out_proj": OpSpec("out_proj", "gemm", ("attn_out",), ("o",)),
    "attn_residual": OpSpec("attn_residual", "elementwise", ("o", "x"), ("x2",), "add"),
    "mlp_norm": OpSpec("mlp_norm", "elementwise", ("x2",), ("x2n",), "rmsnorm", True),
    "gate_up_proj": OpSpec("gate_up_proj", "gemm", ("x2n",), ("gu",)),
    "silu_mul": OpSpec("silu_mul", "elementwise", ("gu",), ("act",), "silu_mul"),
    "down_proj": OpSpec("down_proj", "gemm", ("act",), ("d",)),
    "mlp_residual": OpSpec("mlp_residual", "elementwise", ("d", "x2"), ("y",), "add"),
}
"""op name -> its dataflow."""


CACHE_TENSORS = ("k_rot", "v")
"""Keys and values go to the KV cache in HBM whatever the fusion plan; attention reads them
back from there (all of a sequence's keys are needed by every query tile)."""


def block_outputs(block: BlockSpec) -> tuple[str, ...]:
    """Tensors that leave the block (written to HBM whatever the fusion plan)."""
    return ("x2",) if block.kind == "attention" else ("y",)


def gemm_dims(block: BlockSpec, op: str) -> tuple[int, int]:
    """(n, k) of a GEMM op: output columns and reduction length; m is the token count."""
    h, d = block.hidden, block.head_dim
    qd, kd, f = block.heads * d, block.kv_heads * d, block.ffn_hidden
    dims = {
        "qkv_proj": (qd + 2 * kd, h),
        "out_proj": (h, qd),
        "gate_up_proj": (2 * f, h),
        "down_proj": (h, f),
    }
    if op not in dims:
        raise ValueError(f"op {op!r} is not a GEMM (GEMMs: {', '.join(dims)})")
    return dims[op]


def elementwise_flops(kind: str) -> float:
    """FLOPs per output element of an elementwise kernel kind (estimate; they are memory-bound)."""
    return _ELEMENTWISE_FLOPS[kind]


def weight_bytes(block: BlockSpec, op: str) -> float:
    """Parameter bytes an op reads (GEMM weights, norm gains), per layer."""
    spec = OPS[op]
    if spec.kind == "gemm":
        n, k = gemm_dims(block, op)
        return float(n * k * block.bytes_per_element)
    if spec.elementwise == "rmsnorm":
        return float(block.hidden * block.bytes_per_element)
    return 0.0
