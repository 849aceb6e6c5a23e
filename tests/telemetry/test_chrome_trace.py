"""Chrome trace-event JSON: which events are kernels, name -> op mapping, shapes, errors."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import polars as pl
import pytest

from model.telemetry import TelemetryError, read_chrome_trace

GEMM = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn"
SPLITK = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>(cublasLt::cublasSplitKParams<float>)"
FLASH = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Flash_fwd_params)"
RMS = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long)"
ROPE = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)"
SILU = "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"


def kernel(name: str, ts: float, dur: object, ext: int | None = None, **args: object) -> dict:
    """A PyTorch-profiler kernel event (pid = device, tid = stream)."""
    fields = {"device": 0, "stream": 7, "correlation": 1000 + int(ts), **args}
    if ext is not None:
        fields["External id"] = ext
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": fields,
    }


def cpu_op(name: str, ts: float, ext: int, dims: list | None = None) -> dict:
    args: dict[str, object] = {"External id": ext, "Sequence number": ext * 3}
    if dims is not None:
        args |= {"Input Dims": dims, "Input type": ["c10::BFloat16"] * len(dims)}
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 4242,
        "tid": 4242,
        "ts": ts,
        "dur": 30,
        "args": args,
    }


def pytorch_trace() -> dict:
    """Shaped like torch.profiler's export_chrome_trace with record_shapes=True."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 4242, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#3",
            "pid": 4242,
            "tid": 4242,
            "ts": 0,
            "dur": 900,
        },
        cpu_op("aten::linear", 10, 11, [[4, 512, 4096], [11008, 4096], [11008]]),
        cpu_op("aten::t", 11, 12, [[11008, 4096]]),
        cpu_op("aten::addmm", 12, 13, [[11008], [2048, 4096], [4096, 11008], [], []]),
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 4242,
            "tid": 4242,
            "ts": 13,
            "dur": 4,
            "args": {"External id": 13, "correlation": 1100},
        },
        kernel(
            GEMM,
            100,
            61.5,
            13,
            grid=[86, 16, 1],
            block=[128, 1, 1],
            **{"shared memory": 73728, "registers per thread": 238},
        ),
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1100, "pid": 4242, "tid": 4242, "ts": 13},
        {
            "ph": "f",
            "cat": "ac2g",
            "name": "ac2g",
            "id": 1100,
            "pid": 0,
            "tid": 7,
            "ts": 100,
            "bp": "e",
        },
        cpu_op("aten::mm", 40, 20, [[8, 4096], [4096, 4096]]),
        kernel(GEMM, 170, 12.25, 20, grid=[32, 1, 4], block=[128, 1, 1]),
        kernel(SPLITK, 183, 2.5, 20, grid=[32, 1, 1], block=[256, 1, 1]),
        cpu_op("aten::bmm", 50, 21, [[32, 128, 64], [32, 64, 128]]),
        kernel(GEMM, 190, 8.0, 21, grid=[1, 1, 32], block=[128, 1, 1]),
        cpu_op("aten::_flash_attention_forward", 60, 22, [[4, 512, 32, 128]] * 3),
        kernel(FLASH, 200, 95.0, 22, grid=[4, 32, 4], block=[128, 1, 1]),
        kernel(RMS, 300, 6.0, 23, grid=[2048, 1, 1], block=[1024, 1, 1]),
        kernel(ROPE, 310, 4.5, 24),
        kernel(SILU, 320, 11.0, 25),
        kernel(ADD, 335, 3.0, 26),
        kernel(FILL, 340, 1.5, 27),
        kernel(FILL, 345, 1.5, 28),
        kernel(RMS, 350, 5.5, kind="Dispatch Task", grid=[], block=[]),  # CUDA-graph replay
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 360,
            "dur": 9,
            "args": {"bytes": 4096},
        },
        {
            "ph": "X",
            "cat": "gpu_memset",
            "name": "Memset (Device)",
            "pid": 0,
            "tid": 7,
            "ts": 370,
            "dur": 1,
            "args": {},
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#3",
            "pid": 0,
            "tid": 7,
            "ts": 100,
            "dur": 300,
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 4242,
            "tid": 4242,
            "ts": 5,
            "s": "t",
        },
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0}
        ],
        "traceEvents": events,
        "traceName": "worker.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }


def test_pytorch_profiler_trace(tmp_path: Path) -> None:
    path = tmp_path / "worker.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(pytorch_trace()).encode()))
    trace = read_chrome_trace(path)
    k = trace.kernels
    assert k["name"].to_list() == [
        GEMM,
        GEMM,
        SPLITK,
        GEMM,
        FLASH,
        RMS,
        ROPE,
        SILU,
        ADD,
        FILL,
        FILL,
        RMS,
    ]
    assert k["op"].cast(pl.String).to_list() == ["gemm"] * 4 + ["attention"] + [
        "elementwise"
    ] * 4 + [None, None, "elementwise"]
    assert k["kind"].cast(pl.String).to_list() == [None] * 5 + [
        "rmsnorm",
        "rope",
        "silu_mul",
        "add",
        None,
        None,
        "rmsnorm",
    ]
    assert k["dur_us"].to_list() == [
        61.5,
        12.25,
        2.5,
        8.0,
        95.0,
        6.0,
        4.5,
        11.0,
        3.0,
        1.5,
        1.5,
        5.5,
    ]
    shapes = k.select("cpu_op", "m", "n", "k", "batch").head(5).rows()
    assert shapes == [
        ("aten::addmm", 2048, 11008, 4096, 1),
        ("aten::mm", 8, 4096, 4096, 1),
        ("aten::mm", 8, 4096, 4096, 1),  # split-K reduction belongs to the same GEMM
        ("aten::bmm", 128, 128, 64, 32),
        ("aten::_flash_attention_forward", None, None, None, None),  # dims kept, no GEMM shape
    ]
    assert json.loads(k["input_dims"][4]) == [[4, 512, 32, 128]] * 3
    assert k["grid"][0].to_list() == [86, 16, 1] and k["block"][0].to_list() == [128, 1, 1]
    assert k["grid"][11] is None  # graph replay records an empty grid
    assert k["stream"].unique().to_list() == [7]
    assert trace.unmapped.rows() == [(FILL, 2, 3.0)]
    assert trace.skipped == {
        "user_annotation": 1,
        "cpu_op": 6,
        "cuda_runtime": 1,
        "gpu_memcpy": 1,
        "gpu_memset": 1,
        "gpu_user_annotation": 1,
    }
    assert trace.report.counts == {} and trace.report.rows_kept == 12


def test_minimal_list_trace_and_bad_durations(write) -> None:
    events = [
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
            "ts": 1,
            "dur": 10,
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "paged_attention_v2_kernel",
            "ts": 2,
            "dur": 3.5,
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT",
            "ts": 3,
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "layer_norm_kernel",
            "ts": 4,
            "dur": "fast",
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "layer_norm_kernel",
            "ts": 5,
            "dur": -2,
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "layer_norm_kernel",
            "ts": 6,
            "dur": 0,
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "layer_norm_kernel",
            "ts": 7,
            "dur": float("nan"),
            "pid": 0,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64",
            "ts": 8,
            "dur": 4,
            "pid": 0,
            "tid": 1,
        },
        "not an event",
    ]
    path = write("t.json", json.dumps(events))
    trace = read_chrome_trace(path)
    assert trace.kernels["op"].cast(pl.String).to_list() == ["gemm", "attention", "gemm"]
    assert trace.kernels["event"].to_list() == [0, 1, 7]
    assert trace.report.counts == {
        "missing_duration": 2,
        "nonfinite_duration": 1,
        "nonpositive_duration": 2,
    }
    assert [str(r) for r in trace.report.exclusions[0].examples] == [
        f"{path}: row 2: dur: missing",
        f"{path}: row 3: dur: not a number ('fast')",
    ]
    assert trace.warnings == (f"{path}: 1 trace events are not JSON objects; ignored",)


def test_device_stream_tracks_without_categories(write) -> None:
    """TensorBoard/XLA-style: GPU kernels are the events on a device process's stream threads;
    the same process's op/module rows overlap them and must not count."""
    events = [
        {
            "ph": "M",
            "name": "process_name",
            "pid": 1,
            "args": {"name": "/device:GPU:0 (NVIDIA H100)"},
        },
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 1,
            "tid": 10,
            "args": {"name": "Stream #14(Compute)"},
        },
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "XLA Ops"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 2,
            "tid": 10,
            "args": {"name": "stream executor"},
        },
        {"ph": "X", "name": "fusion_gemm", "pid": 1, "tid": 11, "ts": 0, "dur": 50},
        {"ph": "X", "name": "sm90_xmma_gemm_bf16", "pid": 1, "tid": 10, "ts": 0, "dur": 48},
        {"ph": "X", "name": "loop_add_fusion", "pid": 1, "tid": 10, "ts": 50, "dur": 2},
        {"ph": "X", "name": "ThunkExecute", "pid": 2, "tid": 10, "ts": 0, "dur": 5},
    ]
    trace = read_chrome_trace(write("xla.json", json.dumps({"traceEvents": events})))
    assert trace.kernels["name"].to_list() == ["sm90_xmma_gemm_bf16", "loop_add_fusion"]
    assert trace.unmapped.rows() == [("loop_add_fusion", 1, 2.0)]
    assert trace.skipped == {"(no category)": 2}


def test_array_without_closing_bracket_is_allowed(write) -> None:
    text = '[{"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "ts": 0, "dur": 7},\n'
    path = write("open.json", text)
    trace = read_chrome_trace(path)
    assert trace.kernels["dur_us"].to_list() == [7.0]
    assert trace.warnings == (f"{path}: array without closing ']' (allowed)",)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", ": empty file"),
        (b'{"events": []}', ": JSON object without a traceEvents list (keys: events)"),
        (b"42", ": expected an object with traceEvents or a list of events, found a number"),
        (
            b'{"traceEvents": [\n{"ph": "X",\n "dur": }]}',
            ":3: invalid JSON: parse error: unallowed token at this point in JSON text",
        ),
        (b'{"traceEvents": [{"name": "caf\xe9"}]}', ":1: not UTF-8 text (byte 0xe9 at offset 30)"),
        (
            json.dumps(
                {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "dur": 3}]}
            ).encode(),
            ": no device-kernel events: a CPU-only profile? (complete events by category: cpu_op 1)",
        ),
        (
            json.dumps(
                {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": -1}]}
            ).encode(),
            ": all 1 rows excluded (nonpositive_duration 1); first: {path}: row 0: dur: zero or negative (-1)",
        ),
    ],
)
def test_unusable_traces(content: bytes, expected: str, write) -> None:
    path = write("t.json", content)
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert str(caught.value) == f"{path}" + expected.format(path=path)


def test_size_cap(write) -> None:
    path = write(
        "big.json",
        json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1}] * 100}),
    )
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path, max_bytes=1000)
    assert str(caught.value) == f"{path}: trace is over the 1,000-byte cap for this kind of file"
    assert read_chrome_trace(path).kernels.height == 100


def test_out_of_range_numbers(write) -> None:
    """Floats too large for a double are infinite (dur: excluded); ids outside int64 that still
    parse are dropped to null."""
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm_a",
            "ts": 1e308 * 10,
            "dur": 3,
            "args": {"stream": 2**62, "grid": [-(2**63) + 1, 1, 1]},
        },
        {"ph": "X", "cat": "kernel", "name": "gemm_b", "ts": -5, "dur": float("inf")},
    ]
    path = write("t.json", json.dumps(events))
    trace = read_chrome_trace(path)
    assert trace.kernels.select("ts_us", "dur_us", "stream", "grid").rows() == [
        (float("inf"), 3.0, 2**62, [-(2**63) + 1, 1, 1])
    ]
    assert trace.report.counts == {"nonfinite_duration": 1}


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        (str(10**400), "number with more than 20 digits (refused)"),
        ("9" * 5000, "number with more than 20 digits (refused)"),  # crashes ijson's C backend
        ("1" + "0" * 25 + ".5", "number with more than 20 digits (refused)"),
        (str(2**64), "invalid JSON: parse error: integer overflow"),  # 20 digits, over int64
        ("1e400", "invalid JSON: parse error: numeric (floating point) overflow"),
    ],
)
def test_huge_numbers_are_refused_by_line(literal: str, message: str, write) -> None:
    text = '[\n{"ph": "X", "cat": "kernel", "name": "k", "dur": 3},\n{"ph": "X",\n "ts": ' + (
        literal + ', "dur": 3}]'
    )
    path = write("t.json", text)
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert str(caught.value) == f"{path}:4: {message}"


def test_deep_nesting_is_refused_by_line_before_parsing(write) -> None:
    """100,000 nested arrays took the process down inside ijson; the scan refuses them first."""
    body = '{"traceEvents": [\n{"ph": "X", "args": ' + "[" * 100_000 + "]" * 100_000 + "}]}"
    path = write("t.json", body)
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert str(caught.value) == f"{path}:2: JSON nested deeper than 64 levels"


def test_parse_errors_quote_no_file_content(write) -> None:
    secret = "TOKEN_abc123_do_not_echo"
    path = write("t.json", '{"traceEvents": [\n{"ph": "X", "name": "' + secret + '" "dur": 1}]}')
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert secret not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{path}:2: invalid JSON: ")


def test_bare_nan_and_infinity_are_nonfinite_durations(write) -> None:
    """Python's json writes NaN/Infinity (not JSON); they are read as the floats they mean."""
    events = [{"ph": "X", "cat": "kernel", "name": "gemm", "dur": d} for d in (float("nan"),
              float("inf"), -float("inf"), 2.0)]  # fmt: skip
    events.append({"ph": "X", "cat": "kernel", "name": "NaN Infinity", "dur": 1})
    trace = read_chrome_trace(write("t.json", json.dumps(events)))
    assert trace.report.counts == {"nonfinite_duration": 3}
    assert trace.kernels["name"].to_list() == ["gemm", "NaN Infinity"]


def test_escaped_quotes_and_brackets_inside_strings(write) -> None:
    """Brackets, digits and quotes inside names are not structure: only real ones count."""
    name = 'k\\"[[[[' + "1" * 40 + "{{\\\\"
    events = [{"ph": "X", "cat": "kernel", "name": name, "dur": 2}] * 3
    trace = read_chrome_trace(write("t.json", json.dumps(events)))
    assert trace.kernels["name"].to_list() == [name] * 3


def test_fifo_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)  # no writer: a plain open() would block forever
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(fifo)
    assert str(caught.value) == (
        f"{fifo}: is a FIFO (named pipe); telemetry must be a regular file"
    )
    with pytest.raises(TelemetryError, match=r"^/dev/zero: is a character device"):
        read_chrome_trace("/dev/zero")


def test_gzip_cap_applies_to_the_decompressed_size(write) -> None:
    """A small .json.gz that inflates past the cap is refused while inflating."""
    events = [{"ph": "X", "cat": "kernel", "name": "gemm", "dur": 2}] * 20_000
    packed = gzip.compress(json.dumps(events).encode())
    path = write("t.json.gz", packed)
    assert len(packed) < 100_000
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path, max_bytes=100_000)
    assert str(caught.value) == (
        f"{path}: decompressed trace is over the 100,000-byte cap for this kind of file"
    )
    assert read_chrome_trace(path).kernels.height == 20_000


def test_truncated_gzip_is_one_line(write) -> None:
    packed = gzip.compress(json.dumps([{"ph": "X", "cat": "kernel", "dur": 2}] * 500).encode())
    path = write("t.json.gz", packed[: len(packed) // 2])
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert str(caught.value) == f"{path}: not a readable gzip file (truncated)"


def test_file_content_in_messages_is_a_short_token(write) -> None:
    secret = "s3cr3t" * 100
    events = [
        {"ph": "X", "cat": "kernel", "name": "gemm", "dur": secret},
        {"ph": "X", "cat": "kernel", "name": "gemm", "dur": 2},
    ]
    trace = read_chrome_trace(write("t.json", json.dumps(events)))
    message = trace.report.exclusions[0].examples[0].message
    assert message == "not a number ('s3cr3ts3cr3ts3cr3ts3c...')"
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(write("o.json", json.dumps({secret: 1, "b\nc": 2})))
    assert str(caught.value).endswith(
        "JSON object without a traceEvents list (keys: s3cr3ts3cr3ts3cr3ts3c..., b?c)"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            '{"ph": "X", "dur": }',
            "invalid JSON: parse error: unallowed token at this point in JSON text",
        ),
        ('{"ph": "X", "dur": ' + "7" * 30 + "}", "number with more than 20 digits (refused)"),
    ],
)
def test_errors_past_the_first_megabyte_name_their_line(bad: str, message: str, write) -> None:
    """The file is read in 1 MiB pieces: the line is still exact, counted across pieces."""
    good = json.dumps({"ph": "X", "cat": "kernel", "name": "gemm_" + "x" * 40, "dur": 2.5})
    lines = ["["] + [good + ","] * 40_000 + [bad, "]"]
    path = write("t.json", "\n".join(lines))
    assert path.stat().st_size > 3 * 2**20
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    assert str(caught.value) == f"{path}:40002: {message}"


def test_a_truncated_trace_names_its_last_line(write) -> None:
    text = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "dur": 2}] * 3}, indent=1)
    path = write("t.json", text[: len(text) // 2])
    with pytest.raises(TelemetryError) as caught:
        read_chrome_trace(path)
    last = text[: len(text) // 2].count("\n") + 1
    assert str(caught.value).startswith(f"{path}:{last}: invalid JSON: parse error: premature EOF")
    assert str(caught.value).endswith("brackets left open: truncated?)")
