"""SSH wire encoding (RFC 4251 section 5): the byte layout shared by keys, SSHSIG and ssh-agent.

`string` is a uint32 big-endian length then that many bytes; `mpint` is a two's-complement
big-endian integer in a `string`, minimal length, zero as the empty string.
"""

from __future__ import annotations

import struct


class WireError(ValueError):
    """A byte string is not valid SSH wire data; the message says what was short or malformed."""


def encode_uint32(value: int) -> bytes:
    """Four bytes, big-endian."""
    return struct.pack(">I", value)


def encode_string(data: bytes | str) -> bytes:
    """An SSH `string`: uint32 length then the bytes (str is encoded as UTF-8)."""
    raw = data.encode() if isinstance(data, str) else data
    return encode_uint32(len(raw)) + raw


def encode_mpint(value: int) -> bytes:
    """An SSH `mpint` for a non-negative integer (ECDSA r and s)."""
    if value < 0:
        raise ValueError("mpint: negative values are not used by SSH signatures")
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""
    return encode_string(raw)


class WireReader:
    """Reads SSH wire fields front to back from one byte string; `what` names it in errors."""

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._offset = 0
        self._what = what

    def _take(self, count: int, field: str) -> bytes:
        end = self._offset + count
        if end > len(self._data):
            raise WireError(f"{self._what}: truncated while reading {field}")
        chunk = self._data[self._offset : end]
        self._offset = end
        return chunk

    def raw(self, count: int, field: str) -> bytes:
        """The next `count` bytes, unframed."""
        return self._take(count, field)

    def uint32(self, field: str) -> int:
        """A big-endian uint32."""
        return struct.unpack(">I", self._take(4, field))[0]

    def string(self, field: str) -> bytes:
        """An SSH `string`, returned without its length prefix."""
        return self._take(self.uint32(field), field)

    def text(self, field: str) -> str:
        """An SSH `string` that must be ASCII (algorithm and namespace names)."""
        raw = self.string(field)
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:
            raise WireError(f"{self._what}: {field} is not ASCII") from None

    def mpint(self, field: str) -> int:
        """A non-negative SSH `mpint`."""
        raw = self.string(field)
        if raw and raw[0] & 0x80:
            raise WireError(f"{self._what}: {field} is negative")
        return int.from_bytes(raw, "big")

    def remaining(self) -> int:
        """Bytes not read yet."""
        return len(self._data) - self._offset

    def expect_end(self) -> None:
        """Fail if any bytes are left: SSH structures have no trailing data."""
        if self.remaining():
            raise WireError(f"{self._what}: {self.remaining()} unexpected trailing bytes")
