"""`workbench serve [PACKET]`: the same app in a browser, through textual-serve, localhost only.

textual-serve has no authentication and starts one app process per browser tab, so the server
binds to a loopback address only; reach it from elsewhere through an SSH tunnel
(`ssh -L 8000:localhost:8000 host`).
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from pathlib import Path

from packets.errors import UsageError
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet

from .open_app import add_app_options


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the app to a browser on localhost",
        description="Run the workbench in a browser tab via textual-serve. Binds to loopback "
        "only; use an SSH tunnel to reach it from another machine.",
    )
    add_app_options(p)
    p.add_argument("--host", default="localhost", help="loopback host to bind (default localhost)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.set_defaults(run=run)


def require_loopback(host: str) -> None:
    """Raise UsageError unless every address `host` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: cannot resolve ({exc.strerror})") from None
    addresses = {info[4][0] for info in infos}
    outside = sorted(a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback)
    if outside:
        raise UsageError(
            f"--host {host}: {', '.join(outside)} is not a loopback address; the served app has "
            "no authentication, so it only binds to localhost (use an SSH tunnel instead)"
        )


def app_command(packet: Path, theme: str | None) -> str:
    """The shell command textual-serve runs for each browser tab."""
    parts = [sys.executable, "-m", "workbench.cli", "open", str(packet.resolve())]
    if theme:
        parts += ["--theme", theme]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    require_loopback(args.host)
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: must be 1-65535")
    path = args.packet or example_path(DEFAULT_EXAMPLE)
    load_packet(path)  # report an invalid packet here, not in every browser tab
    from textual_serve.server import Server

    Server(
        app_command(path, args.theme), host=args.host, port=args.port, title="handoff-workbench"
    ).serve()
    return 0
