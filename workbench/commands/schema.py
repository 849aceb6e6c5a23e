"""`workbench schema`: print the packet JSON Schema."""

from __future__ import annotations

import argparse
import json

from packets.json_schema import packet_json_schema


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the packet JSON Schema")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(packet_json_schema(), indent=2, ensure_ascii=False))
    return 0
