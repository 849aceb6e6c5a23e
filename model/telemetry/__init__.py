"""Telemetry ingestion: engineers' measured kernel times, request logs, Chrome traces and
Nsight Systems/Compute exports, read into normalized polars frames with strict validation and
counted exclusions.

Readers never predict anything; the kernel-time predictor supplies `min_time_us` for
`flag_implausible`. Formats, columns, units and exclusion reasons: model/telemetry/README.md.
"""

from model.telemetry.chrome_trace import TRACE_SCHEMA, ChromeTrace, read_chrome_trace
from model.telemetry.errors import Exclusion, ExclusionReport, RowRef, TelemetryError
from model.telemetry.ingest import Provenance
from model.telemetry.kernel_names import map_kernel_name
from model.telemetry.kernels import KERNEL_REASONS, KernelTelemetry, read_kernel_telemetry
from model.telemetry.nsight import read_ncu_csv, read_nsys_sqlite
from model.telemetry.plausibility import ImplausibleSplit, flag_implausible, implausible_mask
from model.telemetry.requests import (
    REQUEST_REASONS,
    REQUEST_SCHEMA,
    RequestTelemetry,
    read_request_telemetry,
)
from model.telemetry.vocab import KERNEL_SCHEMA

__all__ = [
    "KERNEL_REASONS",
    "KERNEL_SCHEMA",
    "REQUEST_REASONS",
    "REQUEST_SCHEMA",
    "TRACE_SCHEMA",
    "ChromeTrace",
    "Exclusion",
    "ExclusionReport",
    "ImplausibleSplit",
    "KernelTelemetry",
    "Provenance",
    "RequestTelemetry",
    "RowRef",
    "TelemetryError",
    "flag_implausible",
    "implausible_mask",
    "map_kernel_name",
    "read_chrome_trace",
    "read_kernel_telemetry",
    "read_ncu_csv",
    "read_nsys_sqlite",
    "read_request_telemetry",
]
