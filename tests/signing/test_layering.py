"""The signature layer works on bytes and plain values: it must not pull in YAML or Textual."""

from __future__ import annotations

import subprocess
import sys

MODULES = [
    "sshsig",
    "sshkeys",
    "keyfiles",
    "sshagent",
    "allowed_signers",
    "approval",
    "packet",
    "explain",
]


def test_signature_modules_import_neither_yaml_nor_textual() -> None:
    imports = "; ".join(f"import packets.signing.{name}" for name in MODULES)
    code = f"import sys; {imports}; print(' '.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    roots = {name.split(".")[0] for name in loaded.stdout.split()}
    assert not roots & {"yaml", "textual", "workbench"}
