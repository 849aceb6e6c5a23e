"""`workbench report` and `workbench telemetry calibrate`: outputs, files and exit codes
(0 ok, 1 invalid data, 2 usage), one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model.compiler.measured import measured_dir
from packets.examples import example_path
from packets.hardware_file import load_hardware_file
from workbench.cli import main

MAPPING = str(example_path("mapping-dynamic-shapes"))


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *argv], capture_output=True, text=True, check=False
    )


def _one_line_error(result: subprocess.CompletedProcess, code: int, *needles: str) -> None:
    assert result.returncode == code, result.stderr
    err = result.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


def test_report_json_and_markdown(telemetry_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(telemetry_dir / "requests.csv"), str(telemetry_dir / "kernels.csv")]
    assert main(["report", MAPPING, "--telemetry", *files, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "handoff-mapping-report/1"
    assert out["command"].startswith(f"workbench report {MAPPING} --telemetry")
    assert main(["report", MAPPING, "--telemetry", *files, "--markdown"]) == 0
    text = capsys.readouterr().out
    headings = ["## 1. Compile", "## 2. Calibration", "## 3. Observed", "## 4. Runtime", "## 5."]
    assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings)
    assert text.index("| p99 latency ms") < text.index("| p95 latency ms")  # tail first


@pytest.mark.parametrize(
    ("make", "code", "needle"),
    [
        (lambda d: d / "missing.csv", 2, "no such file"),
        (lambda d: d, 2, "is a directory"),
        (lambda d: _write(d / "header.csv", "op,dtype,m,n,k,latency_us\n"), 1, "header.csv"),
        (lambda d: _write(d / "what.csv", "a,b\n1,2\n"), 1, "neither kernel telemetry"),
        (lambda d: _write(d / "noseq.csv", "seq_len,core\n5,0\n"), 1, "noseq.csv"),
        (lambda d: _write(d / "trace.json", '{"traceEvents": 3}'), 1, "trace.json"),
    ],
)
def test_report_rejects_bad_telemetry_in_one_line(tmp_path: Path, make, code, needle) -> None:
    _one_line_error(_cli("report", MAPPING, "--telemetry", str(make(tmp_path))), code, needle)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_report_usage_errors(tmp_path: Path) -> None:
    _one_line_error(_cli("report", MAPPING, "--candidate", "nope"), 2, "no candidate 'nope'")
    _one_line_error(_cli("report", str(tmp_path / "none.yaml")), 2, "no such file")


def test_bad_rows_are_counted_and_implausible_kernels_flagged(
    telemetry_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = (telemetry_dir / "requests.csv").read_text().splitlines()
    bad_requests = _write(tmp_path / "req.csv", "\n".join([*requests, "5.0,512,0,1.0,-3.0"]) + "\n")
    kernels = (telemetry_dir / "kernels.csv").read_text().splitlines()
    header = kernels[0].split(",")
    fast = kernels[1].split(",")
    fast[header.index("latency_us")] = "0.001"
    bad_kernels = _write(tmp_path / "k.csv", "\n".join([*kernels, ",".join(fast)]) + "\n")
    assert (
        main(["report", MAPPING, "--telemetry", str(bad_requests), str(bad_kernels), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["observed"]["excluded_on_read"] == {"bad_latency": 1}
    assert out["accuracy"]["implausible_rows"] == 1
    assert (
        out["accuracy"]["implausible_examples"][0]["where"] == f"{bad_kernels}:{len(kernels) + 1}"
    )


def test_calibrate_writes_a_hardware_file_a_packet_can_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gemm = str(measured_dir() / "a100_gemm_bf16.csv")
    target = tmp_path / "calibrated.yaml"
    assert main(["telemetry", "calibrate", gemm, "--hardware", "a100-sxm", "-o", str(target),
                 "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["heldout_mdape"] <= 0.08 and out["written"] == str(target)
    envelope = load_hardware_file(target)
    assert envelope.name == "a100-sxm-calibrated"
    assert "a100_gemm_bf16.csv" in envelope.source and "held-out MdAPE" in envelope.source
    for field, value in out["fitted"].items():
        assert getattr(envelope, field) == value
    packet = (
        Path(MAPPING).read_text().replace("    preset: h100-sxm\n", "    file: calibrated.yaml\n")
    )
    (tmp_path / "packet.yaml").write_text(packet)
    assert main(["report", str(tmp_path / "packet.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hardware"]["name"] == "a100-sxm-calibrated"


def test_calibrate_errors(tmp_path: Path) -> None:
    few = _write(tmp_path / "few.csv", "op,dtype,m,n,k,latency_us\ngemm,bf16,64,64,64,5.0\n")
    _one_line_error(_cli("telemetry", "calibrate", str(few), "--hardware", "a100-sxm"), 1,
                    "few.csv", "at least 20")  # fmt: skip
    _one_line_error(_cli("telemetry", "calibrate", str(few), "--hardware", "nope"), 2, "--hardware")
    gemm = str(measured_dir() / "a100_gemm_bf16.csv")
    _one_line_error(
        _cli("telemetry", "calibrate", gemm, "--hardware", "a100-sxm", "-o", str(tmp_path / "no" / "x.yaml")),
        2, "does not exist",
    )  # fmt: skip


def test_a_pinned_service_distribution_cannot_be_mapped(tmp_path: Path) -> None:
    text = Path(MAPPING).read_text()
    pinned = text.replace(
        "  service:\n    source: model\ncandidates:",
        "  service:\n    source: distribution\n    dist: exponential\n    mean_ms: 50.0\ncandidates:",
    )
    assert pinned != text
    packet = _write(tmp_path / "pinned.yaml", pinned)
    line = pinned.splitlines().index("  service:") + 1
    _one_line_error(_cli("report", str(packet)), 1, f"pinned.yaml:{line}: baseline.service")


def test_report_and_calibrate_never_import_textual(tmp_path: Path) -> None:
    gemm = str(measured_dir() / "a100_gemm_bf16.csv")
    code = (
        "import contextlib, io, sys\nfrom workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['report', {MAPPING!r}, '--json']) == 0\n"
        f"    assert main(['telemetry', 'calibrate', {gemm!r}, '--hardware', 'a100-sxm']) == 0\n"
        "print(' '.join(sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "triage.mapping.report" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "textual_serve", "plotext")}
