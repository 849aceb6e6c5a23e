"""The packet's JSON Schema, for editors with a YAML language server (`workbench schema`)."""

from __future__ import annotations

from typing import Any

from .schema import FORMAT, Packet

SCHEMA_ID = "https://handoff-workbench.invalid/schemas/handoff-packet-1.json"


def packet_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of format handoff-packet/1."""
    schema = Packet.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"Handoff packet ({FORMAT})",
        **{k: v for k, v in schema.items() if k != "title"},
    }
