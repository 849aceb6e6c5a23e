"""numba's `njit`, with numba's CFFI support left out (the simulator's kernels call no CFFI
functions).

numba types CFFI function pointers when the `cffi` package imports: its typing context, built
before the first kernel call even when every kernel loads from the on-disk cache, runs
`cffi.FFI()`, which imports `cffi.cparser` and pycparser and builds pycparser's C lexer and
parser. That was ~60-65 ms of the ~750 ms of CPU a small `workbench run` costs (`python
-X importtime`: `numba.core.typing.cffi_utils` 65-68 ms, 2026-12-01), and the same in the app's
background warm-up, where it holds the GIL the UI loop needs. numba only asks `import cffi`
(numba/core/typing/cffi_utils.py: `try: import cffi; ffi = cffi.FFI() except ImportError:
ffi = None`), so that module is imported here once with `cffi` hidden; numba then reports CFFI as
unsupported (`cffi_utils.SUPPORTED` False). The `cffi` package is not otherwise imported by this
project: cryptography uses only the `_cffi_backend` extension, which is left alone.
"""

from __future__ import annotations

import sys

import numba
from numba import njit

__all__ = ["njit"]

CFFI_UTILS = "numba.core.typing.cffi_utils"


def _import_cffi_utils_without_cffi() -> None:
    """Import numba's CFFI typing module while `import cffi` fails (a None entry in
    sys.modules makes the import raise ImportError), then put `cffi` back as it was."""
    if CFFI_UTILS in sys.modules:
        return
    missing = object()
    saved = sys.modules.get("cffi", missing)
    sys.modules["cffi"] = None  # type: ignore[assignment]
    try:
        __import__(CFFI_UTILS)
    finally:
        if saved is missing:
            del sys.modules["cffi"]
        else:
            sys.modules["cffi"] = saved  # type: ignore[assignment]


_import_cffi_utils_without_cffi()
del numba
