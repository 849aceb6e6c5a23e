"""ssh-keygen's allowed_signers files: which key may sign for which principal, where, and when.

Line format (ssh-keygen(1), ALLOWED SIGNERS): `principals [options] keytype base64-key
[comment]`. Principals and namespaces are ssh_config(5) pattern lists (`*`, `?`, `!negation`,
comma-separated). Options: `namespaces="..."`, `valid-after="TIME"`, `valid-before="TIME"` with
TIME `YYYYMMDD[Z]` or `YYYYMMDDHHMM[SS][Z]`, local time unless it ends in Z, exactly as
ssh-keygen reads it. `cert-authority` is refused: packets are signed with plain keys.

`git_allowed_signers_file` finds the file git is configured with, the fallback `workbench
verify` uses when no `--allowed-signers` is given.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from packets.files import ALLOWED_SIGNERS, FileRefused, read_regular
from packets.signing.ssherrors import SignatureError
from packets.signing.sshkeys import fingerprint, parse_public_key_line

KEY_TYPE_PREFIXES = ("ssh-", "ecdsa-", "sk-", "rsa-")
TIME_FORMATS = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}


class AllowedSignersError(ValueError):
    """A malformed allowed_signers line; the message starts `FILE:LINE:`."""


@dataclass(frozen=True)
class AllowedSigner:
    """One allowed_signers line. Times are timezone-aware UTC; None means no limit."""

    principals: str  # pattern list as written, e.g. "alice@example.com,*@ops.example.com"
    key_blob: bytes
    namespaces: str | None  # pattern list, None when the option is absent (any namespace)
    valid_after: datetime | None
    valid_before: datetime | None
    source: str  # "FILE:LINE"


@dataclass(frozen=True)
class SignerCheck:
    """Whether a key may sign for a principal in a namespace at a time, and why (one line)."""

    allowed: bool
    reason: str


def match_pattern(value: str, pattern: str) -> bool:
    """ssh_config(5) pattern: `*` any run of characters, `?` one character, case-sensitive."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.DOTALL) is not None


def match_pattern_list(value: str, patterns: str) -> bool:
    """True if a positive pattern matches and no `!` pattern does (OpenSSH match_pattern_list)."""
    positive = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if match_pattern(value, pattern[1:] if negated else pattern):
            if negated:
                return False
            positive = True
    return positive


def _split_field(rest: str, where: str) -> tuple[str, str]:
    """The next whitespace-delimited field (spaces allowed inside double quotes) and the rest."""
    in_quotes = False
    for index, char in enumerate(rest):
        if char == '"':
            in_quotes = not in_quotes
        elif char.isspace() and not in_quotes:
            return rest[:index], rest[index:].lstrip()
    if in_quotes:
        raise AllowedSignersError(f"{where}: unterminated double quote")
    return rest, ""


def parse_time(text: str, where: str) -> datetime:
    """`YYYYMMDD[Z]` or `YYYYMMDDHHMM[SS][Z]` as aware UTC; without Z it is local time."""
    utc = text.endswith("Z")
    digits = text[:-1] if utc else text
    if not digits.isdigit() or len(digits) not in TIME_FORMATS:
        raise AllowedSignersError(
            f"{where}: bad time {text!r} (use YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z])"
        )
    try:
        naive = datetime.strptime(digits, TIME_FORMATS[len(digits)])
    except ValueError:
        raise AllowedSignersError(f"{where}: bad time {text!r} (no such date)") from None
    return naive.replace(tzinfo=UTC) if utc else naive.astimezone(UTC)


def _parse_options(text: str, where: str) -> dict[str, str]:
    """`name="value"` options separated by commas; names are case-insensitive, values quoted."""
    options: dict[str, str] = {}
    rest = text
    while rest:
        name, equals, rest = re.match(r'([^=,"]*)(=?)(.*)', rest, flags=re.DOTALL).groups()
        name = name.lower()
        if name == "cert-authority":
            raise AllowedSignersError(
                f"{where}: cert-authority is not supported; list each signer's own key"
            )
        if name not in {"namespaces", "valid-after", "valid-before"}:
            raise AllowedSignersError(f"{where}: unknown option {name!r}")
        close = rest.find('"', 1)
        if not equals or not rest.startswith('"') or close < 0:
            raise AllowedSignersError(f'{where}: option {name} needs a quoted value: {name}="..."')
        if name in options:
            raise AllowedSignersError(f"{where}: option {name} given twice")
        options[name] = rest[1:close]
        rest = rest[close + 1 :]
        if rest and not rest.startswith(","):
            raise AllowedSignersError(f"{where}: expected ',' after option {name}")
        rest = rest[1:]
    return options


def _parse_key(words: str, where: str) -> bytes:
    try:
        return parse_public_key_line(words, require_supported=False)
    except SignatureError as error:
        raise AllowedSignersError(f"{where}: {error}") from None


def parse_line(line: str, where: str) -> AllowedSigner | None:
    """One allowed_signers line; None for blank and comment lines."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    principals, rest = _split_field(text, where)
    principals = principals[1:-1] if principals.startswith('"') else principals
    if not principals or not rest:
        raise AllowedSignersError(f"{where}: expected 'principals [options] keytype base64-key'")
    options: dict[str, str] = {}
    if not rest.startswith(KEY_TYPE_PREFIXES):
        option_text, rest = _split_field(rest, where)
        options = _parse_options(option_text, where)
    fields = rest.split()
    if len(fields) < 2:
        raise AllowedSignersError(f"{where}: expected a key type and a base64 key")
    after, before = options.get("valid-after"), options.get("valid-before")
    return AllowedSigner(
        principals=principals,
        key_blob=_parse_key(f"{fields[0]} {fields[1]}", where),
        namespaces=options.get("namespaces"),
        valid_after=parse_time(after, where) if after is not None else None,
        valid_before=parse_time(before, where) if before is not None else None,
        source=where,
    )


def parse_allowed_signers(text: str, source: str = "allowed_signers") -> tuple[AllowedSigner, ...]:
    """Every signer line of an allowed_signers file's text; `source` names it in errors."""
    signers = (parse_line(line, f"{source}:{n}") for n, line in enumerate(text.splitlines(), 1))
    return tuple(signer for signer in signers if signer is not None)


def load_allowed_signers(path: str | Path) -> tuple[AllowedSigner, ...]:
    """Parse an allowed_signers file; unreadable files raise `AllowedSignersError` too."""
    path = Path(path).expanduser()
    try:
        text = read_regular(path, ALLOWED_SIGNERS).decode("utf-8")
    except FileRefused as error:
        raise AllowedSignersError(f"{path}: cannot read allowed signers: {error.reason}") from None
    except UnicodeDecodeError as error:
        raise AllowedSignersError(f"{path}: cannot read allowed signers: {error}") from None
    return parse_allowed_signers(text, str(path))


def check_signer(
    signers: tuple[AllowedSigner, ...],
    principal: str,
    key_blob: bytes,
    namespace: str,
    at: datetime,
) -> SignerCheck:
    """Whether any line lets `key_blob` sign as `principal` in `namespace` at time `at` (UTC)."""
    lines = [
        s for s in signers if s.key_blob == key_blob and match_pattern_list(principal, s.principals)
    ]
    if not lines:
        return SignerCheck(False, f"key {fingerprint(key_blob)} is not allowed for {principal}")
    reasons = []
    for line in lines:  # few lines per key; the first that allows wins, as in ssh-keygen
        if line.namespaces is not None and not match_pattern_list(namespace, line.namespaces):
            reasons.append(f"{line.source}: key not allowed for namespace {namespace!r}")
        elif line.valid_after is not None and at < line.valid_after:
            reasons.append(
                f"{line.source}: key not valid until {line.valid_after:%Y-%m-%dT%H:%M:%SZ}"
            )
        elif line.valid_before is not None and at > line.valid_before:
            reasons.append(f"{line.source}: key expired at {line.valid_before:%Y-%m-%dT%H:%M:%SZ}")
        else:
            return SignerCheck(True, f"allowed by {line.source}")
    return SignerCheck(False, "; ".join(reasons))


GIT_SETTING = "gpg.ssh.allowedSignersFile"


def _git(args: list[str], cwd: Path | None) -> str | None:
    """A git command's stdout without its final newline; None when git is absent or fails."""
    try:
        result = subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = result.stdout.removesuffix("\n")
    return out if result.returncode == 0 and out else None


def git_allowed_signers_file(cwd: Path | None = None) -> Path | None:
    """The allowed_signers file git is configured with (`gpg.ssh.allowedSignersFile`, read with
    `git config --get` in `cwd`, default the working directory, so repository, global and
    system settings count as they do for `git verify-commit`); None when git is not installed
    or the setting is unset. `~` is expanded; a relative path is taken from the repository's
    top folder, where git runs ssh-keygen."""
    value = _git(["config", "--type=path", "--get", GIT_SETTING], cwd)
    if value is None:
        return None
    path = Path(value)
    if not path.is_absolute():
        top = _git(["rev-parse", "--show-toplevel"], cwd)
        path = Path(top if top is not None else (cwd or Path.cwd())) / path
    return path
