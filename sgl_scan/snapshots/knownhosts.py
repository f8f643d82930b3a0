"""OpenSSH's known_hosts files, read and decided on as `ssh` does (hostfile.c, sshconnect.c).

A line is `[@marker] hostpatterns keytype base64 [comment]`, fields split on runs of blanks.
Host patterns are comma-separated globs (`*`, `?`; a host name is lower-cased, `[host]:port` for
ports other than 22) where a matching `!pattern` excludes the line; a hashed name (`|1|salt|hmac`)
matches by HMAC-SHA1. Only lines whose patterns match the host take part in the decision:

- a key on a matching `@revoked` line is refused, even when another line trusts it (OpenSSH's
  "REVOKED HOST KEY DETECTED");
- a key equal to one on a matching plain line is trusted; any other matching plain line makes the
  key "changed" (refused);
- a matching `@cert-authority` line trusts host *certificates* signed by that CA. sgl-scan (paramiko)
  never negotiates a host certificate, so it cannot check one: a host whose only trust is a CA line
  is refused with a line saying so, and never trusted on first use (`--accept-new-host-key` would
  otherwise record a plain key for a host the user trusts only through its CA).

Lines with another marker or that do not parse are skipped, as OpenSSH skips them. Each file is
checked by size before it is read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

from sgl_scan.errors import RemoteError
from sgl_scan.smallfiles import read_small

MAX_KNOWN_HOSTS_BYTES = 64 << 20
MARKERS = {"@revoked": "revoked", "@cert-authority": "cert-authority"}


@dataclass(frozen=True)
class HostKeyLine:
    patterns: str  # the comma-separated host patterns as written
    key_type: str
    blob: bytes  # the public key, as the server sends it
    marker: str | None  # None, "revoked" or "cert-authority"
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _glob(pattern: str) -> re.Pattern:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z", re.DOTALL
    )


def _hashed_matches(host: str, field: str) -> bool:
    parts = field.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt = base64.b64decode(parts[2], validate=True)
        want = base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return False
    got = hmac.new(salt, host.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(got, want)


def host_matches(host: str, patterns: str) -> bool:
    """Whether `host` (a known_hosts name) matches a line's host field (OpenSSH's match_hostname)."""
    if patterns.startswith("|"):
        return _hashed_matches(host, patterns)
    host = host.lower()
    positive = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if negated:
            pattern = pattern[1:]
        if _glob(pattern).match(host):
            if negated:
                return False
            positive = True
    return positive


def _read(path: Path) -> str | None:
    try:
        return read_small(path, MAX_KNOWN_HOSTS_BYTES, "known_hosts", error=RemoteError, devnull_ok=True).decode(
            "utf-8", "replace"
        )
    except FileNotFoundError:
        return None


def parse_line(text: str, file: str, number: int) -> HostKeyLine | None:
    fields = text.split()
    if not fields or fields[0].startswith("#"):
        return None
    marker = None
    if fields[0].startswith("@"):
        if fields[0] not in MARKERS:
            return None  # OpenSSH: an unknown marker makes the line invalid (skipped)
        marker = MARKERS[fields[0]]
        fields = fields[1:]
    if len(fields) < 3:
        return None
    patterns, key_type, data = fields[:3]
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not blob:
        return None
    return HostKeyLine(patterns, key_type, blob, marker, file, number)


class KnownHosts:
    """Every line of some known_hosts files (read once), and OpenSSH's decision for one host key."""

    def __init__(self, files: list[Path]) -> None:
        self.lines: list[HostKeyLine] = []
        self.read: set[Path] = set()
        self.add_files(files)

    def add_files(self, files: list[Path]) -> None:
        for path in files:
            if path in self.read:
                continue
            self.read.add(path)
            text = _read(path)
            if text is None:
                continue
            for number, raw in enumerate(text.splitlines(), 1):
                parsed = parse_line(raw, str(path), number)
                if parsed is not None:
                    self.lines.append(parsed)

    def add(self, name: str, key_type: str, blob: bytes, file: str) -> None:
        self.lines.append(HostKeyLine(name, key_type, blob, None, file, 0))

    def matching(self, name: str, files: set[str] | None = None) -> list[HostKeyLine]:
        return [
            line for line in self.lines if (files is None or line.file in files) and host_matches(name, line.patterns)
        ]

    def trusted_types(self, name: str, files: set[str] | None = None) -> set[str]:
        """Key types of the plain lines for `name` (to ask the server for one of them first)."""
        return {line.key_type for line in self.matching(name, files) if line.marker is None}

    def check(
        self,
        name: str,
        key_type: str,
        blob: bytes,
        fingerprint: str,
        *,
        files: set[str] | None = None,
        accept_new: bool = False,
    ) -> bool:
        """True if the key is trusted; False if it is new and may be recorded; else RemoteError."""
        lines = self.matching(name, files)
        for line in lines:
            if line.marker == "revoked" and line.blob == blob:
                raise RemoteError(
                    f"REVOKED HOST KEY DETECTED: the {key_type} host key for {name} is marked as revoked "
                    f"({line.where}); this could mean that a stolen key is being used to impersonate this host; "
                    f"refusing to connect"
                )
        plain = [line for line in lines if line.marker is None]
        if any(line.blob == blob for line in plain):
            return True
        same_type = [line for line in plain if line.key_type == key_type]
        if same_type:
            raise RemoteError(
                f"host key for {name} has CHANGED (now {fingerprint}); refusing to connect. "
                f"If the change is expected, remove the old key (ssh-keygen -R '{name}') and accept the new one"
            )
        if plain:
            trusted = ", ".join(sorted({line.key_type for line in plain}))
            raise RemoteError(f"host {name} offered a {key_type} key but known_hosts trusts only {trusted}; refusing")
        authorities = [line for line in lines if line.marker == "cert-authority"]
        if authorities:
            raise RemoteError(
                f"known_hosts trusts host certificates for {name} signed by a @cert-authority "
                f"({authorities[0].where}), and sgl-scan cannot check host certificates; the host offered a plain "
                f"{key_type} key ({fingerprint}) that no line trusts; refusing (add the host's own key to known_hosts)"
            )
        if not accept_new:
            raise RemoteError(
                f"host key for {name} is not known ({fingerprint}); check it, then rerun with "
                f"--accept-new-host-key to trust it"
            )
        return False
