"""The shipped A100 error bands, regenerated from the public A100 tables:
`python -m model.compiler.a100_bands` rewrites `regimes.A100_BANDS_FILE`.

Apart from `regimes.py` because it needs the kernel predictions (`accuracy.py`), which read the
bands themselves: `regimes` -> `accuracy` -> `regimes` would be an import circle.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from model.compiler.accuracy import fastest_possible_us, predict_kernels
from model.compiler.hardware import preset
from model.compiler.measured import MEASURED_FILES, load_measured
from model.compiler.regimes import (
    A100_BANDS_FILE,
    REGENERATE_COMMAND,
    ErrorBands,
    bands_from_residuals,
    bands_json,
)


def a100_residual_bands() -> ErrorBands:
    """Bands from the a100-sxm preset's residuals on the three public A100 tables (plausible rows
    only): what `A100_BANDS_FILE` holds."""
    hw = preset("a100-sxm")
    ops, predicted, measured = [], [], []
    for name in MEASURED_FILES:
        frame = load_measured(name)
        latency = frame["latency_us"].cast(pl.Float64).to_numpy()
        keep = latency >= fastest_possible_us(frame, hw)
        ops.append(frame["op"].cast(pl.String).to_numpy()[keep])
        predicted.append(predict_kernels(frame, hw)[keep])
        measured.append(latency[keep])
    files = ", ".join(MEASURED_FILES.values())
    provenance = (
        f"residuals of the a100-sxm preset on the public A100 tables ({files}; plausible rows); "
        f"regenerate with `{REGENERATE_COMMAND}`"
    )
    return bands_from_residuals(
        np.concatenate(ops), np.concatenate(predicted), np.concatenate(measured), provenance
    )


def main() -> None:
    """Regenerate `A100_BANDS_FILE` from the shared A100 tables."""
    A100_BANDS_FILE.write_text(bands_json(a100_residual_bands()), encoding="utf-8")
    print(f"wrote {A100_BANDS_FILE}")


if __name__ == "__main__":
    main()
