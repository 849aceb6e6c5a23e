"""`workbench telemetry compare|calibrate FILE... --hardware H`: the model against measured
kernels, and a cross-validated refit of the envelope's efficiency parameters."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _dtype_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dtype", default="bf16",
                        help="precision of profiled kernels (traces and Nsight exports carry "
                        "none; default bf16)")  # fmt: skip


def _output_flags(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("telemetry", help="compare or calibrate the model against telemetry")
    actions = p.add_subparsers(dest="action", metavar="{compare,calibrate}", required=True)
    compare = actions.add_parser(
        "compare",
        help="predict every measured kernel and report the error",
        description="For every row: the model's prediction on the envelope; then MdAPE, MAPE, "
        "p90 error, median measured/predicted, per op, the worst shapes, and rows physically "
        "implausible under the envelope (counted and excluded). Files are told apart by "
        "content as in report: kernel tables, Chrome traces, Nsight Systems SQLite and Nsight "
        "Compute CSV exports.",
    )
    compare.add_argument("files", nargs="+", type=Path, metavar="FILE")
    compare.add_argument("--hardware", required=True, metavar="PRESET|FILE")
    _dtype_flag(compare)
    compare.add_argument("--bands", type=Path, metavar="FILE",
                         help="error bands: a `calibrate --json` output or a bands file "
                         "(default: the bands `calibrate -o` wrote beside a --hardware FILE, "
                         "else the shipped A100 residual bands)")  # fmt: skip
    _output_flags(compare)
    compare.set_defaults(run=run_compare)
    calibrate = actions.add_parser(
        "calibrate",
        help="fit the envelope's efficiency parameters to measured kernels",
        description="Fit compute_efficiency, memory_efficiency, fill_latency_us and "
        "min_kernel_us (Huber loss on log(measured/predicted)) on one half of the rows, report "
        "the error on the other half, and write a handoff-hardware/1 file a packet can "
        "reference with inputs.hardware.file.",
    )
    calibrate.add_argument("files", nargs="+", type=Path, metavar="FILE")
    calibrate.add_argument("--hardware", required=True, metavar="PRESET|FILE")
    _dtype_flag(calibrate)
    calibrate.add_argument("-o", "--output", type=Path, metavar="FILE",
                           help="hardware file to write, with its error bands beside it in "
                           "FILE.bands.json (left out: report only)")  # fmt: skip
    _output_flags(calibrate)
    calibrate.set_defaults(run=run_calibrate)


def _bands_argument(path: Path):
    """`--bands FILE`: error bands from a calibration's JSON or a bands file (one-line errors)."""
    from model.compiler.regimes import parse_bands
    from packets.errors import TelemetryProblem
    from packets.files import read_file_bytes

    raw = read_file_bytes(path)
    try:
        return parse_bands(json.loads(raw))
    except (ValueError, UnicodeDecodeError) as exc:
        message = str(exc) if not isinstance(exc, json.JSONDecodeError) else (
            f"not JSON (line {exc.lineno}, column {exc.colno})"
        )  # fmt: skip
        raise TelemetryProblem(f"{path}: {message}") from None


def run_compare(args: argparse.Namespace) -> int:
    from model.compiler.accuracy import accuracy_report, report_markdown
    from model.compiler.hardware import PRESET_NAMES
    from packets.hardware_file import bands_beside
    from triage.telemetry.io import hardware_argument, read_kernels

    hardware = hardware_argument(args.hardware)
    bands = None if args.bands is None else _bands_argument(args.bands)
    if bands is None and args.hardware not in PRESET_NAMES:  # a file: its calibration's bands?
        bands, why = bands_beside(Path(args.hardware))
        if why:
            print(f"note: {why}", file=sys.stderr)
    telemetry = read_kernels(args.files, dtype=args.dtype)
    report = accuracy_report(telemetry.frame, hardware, bands=bands)
    report["excluded_on_read"] = telemetry.report.counts
    if args.json:
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(report_markdown(report))
    for line in [*telemetry.report.lines(), *telemetry.warnings]:
        print(f"note: {line}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from packets.files import HARDWARE, atomic_write
    from packets.hardware_file import BANDS, bands_path, dump_bands
    from triage.mapping.markdown import calibration_markdown
    from triage.telemetry.io import calibrate_kernels, hardware_argument, read_kernels

    hardware = hardware_argument(args.hardware)
    telemetry = read_kernels(args.files, dtype=args.dtype)
    result, data = calibrate_kernels(telemetry, hardware, args.hardware, args.files)
    if args.output is not None:  # the bands last: they name the digest of the file just written
        atomic_write(args.output, data, kind=HARDWARE)
        if result.bands is not None:
            atomic_write(bands_path(args.output), dump_bands(result.bands, data), kind=BANDS)
    summary = result.as_dict()
    summary["excluded_on_read"] = telemetry.report.counts
    summary["source"] = result.envelope.source
    summary["written"] = None if args.output is None else str(args.output)
    summary["bands_written"] = (
        str(bands_path(args.output))
        if args.output is not None and result.bands is not None
        else None
    )
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False))
        return 0
    print(calibration_markdown(summary, summary["written"]), end="")
    if summary["bands_written"]:
        print(
            f"Error bands in {summary['bands_written']}: compare --hardware {args.output} uses them."
        )
    for line in [*telemetry.report.lines(), *telemetry.warnings]:
        print(f"note: {line}")
    return 0
