"""GEMM-library descriptors: how the software that runs a GEMM schedules it on the device.

Like the elementwise kernel descriptors of accuracy.py, a descriptor states a property of the
software, not of the silicon: how tiles are scheduled over the units, whether the epilogue of
one tile overlaps the next tile's main loop, which cluster of tiles shares operand loads, and
the fixed work of each op. The packet's compiler/runtime metadata names the software
(`library_for_metadata`); otherwise the architecture's default applies (`default_library`).

Schedules:
* `waves` - one thread block per output tile; tiles run in `ceil(tiles / units)` waves, each
  wave pays a fill (prologue, first loads) and writes its epilogue after its main loop
  (cuBLAS/CUTLASS 2 on Ampere, hipBLASLt on CDNA 3, XLA's Triton/cuBLAS GEMMs on Ampere).
* `persistent` - one long-lived thread block per unit loops over its tiles; the pipeline is
  filled once per kernel and each tile's TMA-store epilogue overlaps the next tile's main loop
  (CUTLASS 3 / cuBLAS warp-specialized kernels on Hopper and Blackwell; shared/NOTES.md).
  Wave quantization remains (tiles are dealt round-robin).
* `stream-k` - a persistent grid of one thread block per unit shares out the MAC-loop
  iterations (k steps) of all tiles evenly, so no unit idles in a partial last wave; a tile
  whose iterations straddle two blocks' ranges is finished by a fix-up: the other blocks write
  fp32 partial accumulators and the finishing block waits for them and reduces them (Osama,
  Merrill, Cecka, Garland and Zhang, "Stream-K: Work-centric Parallel Decomposition for Dense
  Matrix-Matrix Multiplication on the GPU", PPoPP 2023; CUTLASS 2 sm80
  `ThreadblockSwizzleStreamK`, include/cutlass/gemm/threadblock/threadblock_swizzle_streamk.h,
  and CUTLASS 3 sm90 `PersistentTileSchedulerSm90StreamK`,
  include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp). Costed by
  `kernels.stream_k_schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SCHEDULES = ("waves", "persistent", "stream-k")
"""Tile schedules a descriptor can name."""


@dataclass(frozen=True)
class GemmLibrary:
    """How a GEMM library runs a GEMM (a property of the software).

    Attributes:
        name: descriptor name (LIBRARIES key).
        schedule: `waves`, `persistent` or `stream-k` (module docstring).
        epilogue_overlap: True when a tile's epilogue overlaps the next tile's main loop.
        multicast: True when the library's kernels use thread-block clusters with operand
            multicast where the device has them (`HardwareEnvelope.cluster_size`).
        fixed_cycles: per-op fixed work beyond the device floor (argument setup, tile
            scheduler initialisation), SM clock cycles.
        source: where the description comes from.
    """

    name: str
    schedule: str
    epilogue_overlap: bool
    multicast: bool
    fixed_cycles: float
    source: str

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"gemm library {self.name!r}: unknown schedule {self.schedule!r}")


LIBRARIES: dict[str, GemmLibrary] = {
    "cublas-ampere": GemmLibrary(
        "cublas-ampere", "waves", False, False, 0.0,
        "cuBLAS/cuBLASLt and CUTLASS 2 sm80 kernels: one CTA per tile, multistage cp.async "
        "mainloop, epilogue after the mainloop; what TensorRT-LLM 1.0 and PyTorch run on A100 "
        "(the A100 GEMM and layer-op tables select it; its terms are the A100 fit)",
    ),
    "cublas-hopper": GemmLibrary(
        "cublas-hopper", "persistent", True, True, 0.0,
        "cuBLAS 12 / CUTLASS 3 sm90 warp-specialized persistent kernels with TMA loads, 2x1 "
        "cluster multicast and TMA-store epilogues overlapped with the next tile (CUTLASS 3 "
        "docs, 'Efficient GEMM in CUDA'; shared/NOTES.md); TensorRT-LLM and PyTorch on Hopper",
    ),
    "cublas-blackwell": GemmLibrary(
        "cublas-blackwell", "persistent", True, True, 0.0,
        "cuBLAS 12.8 / CUTLASS 3 sm100 persistent kernels (tcgen05, 2-SM clusters, TMA "
        "multicast, overlapped epilogue): as on Hopper",
    ),
    "cutlass-streamk-sm80": GemmLibrary(
        "cutlass-streamk-sm80", "stream-k", False, False, 0.0,
        "CUTLASS 2 sm80 GemmUniversal with ThreadblockSwizzleStreamK (threadblock_swizzle_"
        "streamk.h; example 47_ampere_gemm_universal_streamk): a persistent grid of one CTA per "
        "SM splitting all tiles' k iterations evenly, fp32 partials fixed up through a global "
        "workspace, epilogue after the mainloop (Osama et al., PPoPP 2023)",
    ),
    "cutlass-streamk-sm90": GemmLibrary(
        "cutlass-streamk-sm90", "stream-k", True, True, 0.0,
        "CUTLASS 3 sm90 warp-specialized kernels with PersistentTileSchedulerSm90StreamK "
        "(sm90_tile_scheduler_stream_k.hpp): stream-K over a persistent grid, TMA loads with "
        "2x1 cluster multicast and overlapped TMA-store epilogues (Osama et al., PPoPP 2023)",
    ),
    "hipblaslt": GemmLibrary(
        "hipblaslt", "waves", False, False, 0.0,
        "hipBLASLt on CDNA 3: one workgroup per tile, LDS double buffering, no cluster "
        "multicast (ROCm hipBLASLt docs); what PyTorch and vLLM run on MI300X",
    ),
    "xla-tpu": GemmLibrary(
        "xla-tpu", "waves", False, False, 0.0,
        "XLA:TPU fused dot: MXU tiles streamed from VMEM, one program per fusion",
    ),
    "generic": GemmLibrary(
        "generic", "waves", False, False, 0.0, "a plain one-tile-per-block kernel",
    ),
}  # fmt: skip
"""Known GEMM-library descriptors."""

DEFAULT_BY_ARCHITECTURE: dict[str, str] = {
    "ampere": "cublas-ampere",
    "hopper": "cublas-hopper",
    "blackwell": "cublas-blackwell",
    "cdna3": "hipblaslt",
    "tpu": "xla-tpu",
    "generic": "generic",
}
"""architecture -> the GEMM library its frameworks run by default."""


def default_library(hw) -> GemmLibrary:
    """The architecture's default GEMM library for `hw` (a HardwareEnvelope)."""
    return LIBRARIES[DEFAULT_BY_ARCHITECTURE[hw.architecture]]


_METADATA_WORDS: tuple[tuple[str, str], ...] = (
    ("stream-k", "cutlass-streamk"),
    ("streamk", "cutlass-streamk"),
    ("cutlass 2", "cublas-ampere"),
    ("hipblaslt", "hipblaslt"),
    ("rocm", "hipblaslt"),
    ("xla", "xla-tpu"),
)
"""Substrings of a packet's compiler/runtime metadata that name a library whatever the device
(lower case, first match wins); TensorRT-LLM, PyTorch, vLLM and cuBLAS take the device's
default (they call cuBLAS/CUTLASS for the architecture they run on). "stream-k"/"streamk"
names CUTLASS's stream-K kernels: the sm90 ones on Hopper and Blackwell, the sm80 ones on
Ampere (none elsewhere)."""


def library_for_metadata(hw, compiler: str, runtime: str) -> str:
    """The descriptor name a packet's compiler/runtime metadata selects on `hw` ("" = the
    architecture default). XLA selects its TPU descriptor only on a TPU (on GPUs it calls
    cuBLAS/Triton, the default); ROCm names select hipBLASLt only on CDNA 3; stream-K names
    select CUTLASS's stream-K kernels for the GPU's generation (sm90 on Hopper and Blackwell,
    sm80 on Ampere)."""
    text = f"{compiler} {runtime}".lower()
    for word, name in _METADATA_WORDS:
        if word in text:
            if name == "cutlass-streamk":
                if hw.architecture in ("hopper", "blackwell"):
                    return "cutlass-streamk-sm90"
                return "cutlass-streamk-sm80" if hw.architecture == "ampere" else ""
            if name == "xla-tpu" and hw.architecture != "tpu":
                return ""
            if name == "hipblaslt" and hw.architecture != "cdna3":
                return ""
            return name
    return ""


XQA_MAX_HEAD_GROUP = 32
"""Largest query-heads-per-KV-head group TensorRT-LLM's packed decode kernel (XQA) takes:
`head_grp_size * beam_width > 32` is rejected (TensorRT-LLM, kernels/xqaDispatcher and
decoderXQAImplJIT supportConfigHMMA/QGMMA)."""

XQA_MIN_HEAD_GROUP = 8
"""Smallest head group that runs packed: XQA puts a KV head's query heads on the 16 rows of an
m16 HMMA fragment; below half a fragment (8) most rows are padding and the per-(request, head)
kernel is kept. Inferred from the A100 decode rows (groups 1-4 time like the per-head kernel,
8-32 like the packed one), consistent with XQA's precompiled sm80 kernels (nqpkv 8 and up)."""

XQA_MIN_HISTORY_TOKENS_PER_BLOCK = 128
"""KV tokens per CTA of XQA's multi-block mode (TensorRT-LLM kMinHistoryTokensPerBlock)."""

XQA_ENABLE_MIN_BLOCK_FACTOR = 4.0
"""XQA is used only when kEnableMinBlockFactor x its CTAs reach the SM count (TensorRT-LLM
decoderXQARunner mayHavePerfGain): fewer CTAs leave the device idle and the per-(request,
head) kernel (masked MHA) is kept."""


def trtllm_packs_query_heads(hw, batch, kv_len, heads, kv_heads) -> np.ndarray:
    """Where TensorRT-LLM's decode attention runs the packed grouped-query kernel (XQA: all
    query heads of one KV head in one CTA) rather than one (request, head) per CTA (masked
    MHA): the head group fits (<= 32) and the CTAs, batch x KV heads x multi-block count
    (kv_len / 128), times 4 reach the unit count. Arrays (P,) -> (P,) bool."""
    import numpy as np  # here: the packet schema reads LIBRARIES (`workbench schema` needs no arrays)

    batch, kv_len, heads, kv_heads = (np.asarray(v, dtype=np.float64) for v in
                                      (batch, kv_len, heads, kv_heads))  # fmt: skip
    group = heads / kv_heads
    blocks = np.maximum(np.floor(kv_len / XQA_MIN_HISTORY_TOKENS_PER_BLOCK), 1.0)
    ctas = batch * kv_heads * blocks
    fits = (group >= XQA_MIN_HEAD_GROUP) & (group <= XQA_MAX_HEAD_GROUP)
    return fits & (ctas * XQA_ENABLE_MIN_BLOCK_FACTOR >= hw.total_units)


XQA_WAVE_CYCLES = 3.0e-6 * 1.4106e9
"""Extra cycles each wave of XQA's packed CTAs pays beyond a GEMM-like fill: the CTA loads and
scales the query rows of its whole head group and, in multi-block mode, publishes its partial
max/sum/output to global memory and takes a semaphore so the last CTA of a KV head can merge
(a few dependent DRAM round trips). Fitted on the A100 decode rows with 8-32 heads per KV head
(3 us at 1.41 GHz; model/compiler/README.md "Fitted parameters")."""

XQA_FIXED_CYCLES = 4.0e-6 * 1.4106e9
"""Per-op fixed cycles of XQA beyond the device floor (clearing the multi-block semaphores and
scratch before the CTAs run). Fitted with XQA_WAVE_CYCLES (4 us at 1.41 GHz)."""

MHA_FIXED_CYCLES = 5.0e-6 * 1.4106e9
"""Per-op fixed cycles of the per-(request, head) decode kernel TensorRT-LLM keeps where XQA
does not apply (masked multi-head attention) beyond the device floor. Its parts are not
isolated in the data (candidates of the same kind as XQA's fixed work: setting up and merging
per-block partials through global scratch in multi-block mode); without it the smallest
per-head rows (batch 1) were measured 1.77x their prediction. Fitted on the A100 per-head decode rows (head groups 1-4 and above
32, or too few CTAs for XQA) on XQA's coarse 1 us grid: 5 us at 1.41 GHz (decode MdAPE 22.9% at
0, 20.7% at 2, 15.8% at 4, 15.2% at 5, 14.5% at 6 us, where attention as a whole is best at 5:
8.9%; model/compiler/README.md "Fitted parameters")."""
