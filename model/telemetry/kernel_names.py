"""Map device-kernel names (as profilers record them) to the ops of the kernel schema.

Rules are tried in order and the first match wins; attention comes first because CUTLASS also
builds attention kernels (`fmha_cutlassF_...`), and norms/rope/activations come before GEMM so a
fused `..._rmsnorm` epilogue name is not taken for its GEMM. Names that match nothing stay
unmapped (op null) and are counted by name by the trace reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class NameRule:
    """Kernel names matching `pattern` (case-insensitive) and not `unless` are `op`/`kind`."""

    op: str
    kind: str | None
    pattern: str
    unless: str | None = None

    def matches(self, lowered: str) -> bool:
        """Whether a lower-cased kernel name falls under this rule."""
        return re.search(self.pattern, lowered) is not None and not (
            self.unless and re.search(self.unless, lowered)
        )


NAME_RULES: tuple[NameRule, ...] = (
    # flash_fwd_kernel, fmha_cutlassF_*, paged_attention_v2_kernel, xformers, sdpa, mha_fwd,
    # flashinfer's Batch{Prefill,Decode}With{Paged,Ragged}KVCache (other flashinfer kernels are not
    # attention, hence flash(?!infer))
    NameRule(
        "attention",
        None,
        r"flash(?!infer)|fmha|attention|attn|sdpa|xformers|mha_(fwd|bwd)|with(paged|ragged)kvcache",
    ),
    # rms_norm_kernel, fused_add_rms_norm_kernel, Rmsnorm2dFwd
    NameRule("elementwise", "rmsnorm", r"rms_?norm"),
    # vectorized_layer_norm_kernel, LayerNormForward, layernorm
    NameRule("elementwise", "layernorm", r"layer_?norm"),
    # rotary_embedding_kernel, BatchQKApplyRotary..., *_rope_*
    NameRule("elementwise", "rope", r"rotary|(^|[^a-z])rope"),
    # act_and_mul_kernel<..., silu_kernel>, silu_and_mul, swiglu (gelu_and_mul is not silu)
    NameRule("elementwise", "silu_mul", r"act_and_mul|silu_and_mul|silu_mul|swiglu", r"gelu"),
    # ampere_bf16_s16816gemm_*, sm90_xmma_gemm_*, cutlass::Kernel<...gemm...>, cublasLt
    # splitKreduce, nvjet_tst_*, Cijk_* (rocBLAS/Tensile), triton mm/addmm templates
    NameRule(
        "gemm",
        None,
        r"gemm|gemv|cutlass|cublas|xmma|nvjet|wgmma|matmul|^cijk_"
        r"|(^|_)(addmm|baddbmm|bmm|mm)(_|\d|$)",
    ),
    # at::native::CUDAFunctor_add, AddFunctor, add_kernel, a lone triton fused add
    NameRule(
        "elementwise",
        "add",
        r"cudafunctor_add|addfunctor|(^|[_:])add_kernel|elementwise_add|^triton_poi_fused_add_\d+$",
    ),
)
"""Ordered name rules; see the module docstring for why the order matters."""


def map_kernel_name(name: str) -> tuple[str | None, str | None]:
    """(op, kind) for one kernel name; (None, None) when no rule matches."""
    lowered = name.lower()
    for rule in NAME_RULES:
        if rule.matches(lowered):
            return rule.op, rule.kind
    return None, None


def map_kernel_names(names: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
    """(op, kind) for each distinct name (traces repeat few names many times)."""
    return {name: map_kernel_name(name) for name in dict.fromkeys(names)}


__all__ = ["NAME_RULES", "NameRule", "map_kernel_name", "map_kernel_names"]
