"""numba without its CFFI support (model/runtime/jit.py): a run never builds pycparser's C
parser, and `cffi` still imports afterwards for anyone who wants it."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from packets.examples import example_path
from workbench.cli import main
assert main(["run", str(example_path("fusion-tiling-llama-decode")), "--requests", "500",
             "--json"]) == 0
from numba.core.typing import cffi_utils
print("supported", cffi_utils.SUPPORTED)
print("pycparser", any(m.split(".")[0] == "pycparser" for m in sys.modules))
print("cffi entry", repr(sys.modules.get("cffi", "absent")))
import cffi  # put back as it was: importable
print("cffi imports", hasattr(cffi, "FFI"))
"""


def test_a_run_leaves_numbas_cffi_support_out_and_cffi_importable() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()
    lines = [line for line in out if line.split(" ")[0] in ("supported", "pycparser", "cffi")]
    assert lines == [
        "supported False",
        "pycparser False",
        "cffi entry 'absent'",
        "cffi imports True",
    ]
