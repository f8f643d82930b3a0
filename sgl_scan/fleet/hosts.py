"""Where the fleet's hosts come from: arguments, a hosts file, or `Host` patterns of an ssh config.

A hosts file holds one `HOST [REMOTE_ROOT]` per line; `#` starts a comment, blank lines are skipped.
`--ssh-config-hosts 'gpu-*'` takes every concrete `Host` name of the ssh config (names without `*`,
`?` or `!`) that matches the glob, in file order.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from sgl_scan.errors import ConfigError


@dataclass(frozen=True)
class HostEntry:
    """One host to scan: a name, address or ssh-config alias, and an optional remote root."""

    host: str
    remote_root: str | None = None

    @property
    def label(self) -> str:
        return f"{self.host}:{self.remote_root}" if self.remote_root else self.host


HOSTS_FILE_LIMIT = 4 << 20  # bytes: checked before the file is read


def parse_hosts_file(path: str) -> list[HostEntry]:
    """The entries of a hosts file; ConfigError naming the file and line for anything else."""
    from sgl_scan.snapshots.sshconfig import read_limited

    if not Path(path).exists():
        raise ConfigError(f"hosts file not found: {path}")
    text = read_limited(path, "hosts file", HOSTS_FILE_LIMIT)
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
        if len(words) > 2:
            raise ConfigError(f"{path}:{number}: expected 'HOST [REMOTE_ROOT]', got {len(words)} words")
        entries.append(HostEntry(words[0], words[1] if len(words) == 2 else None))
    return entries


def hosts_from_ssh_config(pattern: str, ssh_config: str | None) -> list[HostEntry]:
    """Concrete `Host` names of the ssh config (and the files it includes) that match the glob
    `pattern`, in file order."""
    from sgl_scan.snapshots.sshconfig import expand_config

    path = Path(os.path.expanduser(ssh_config or "~/.ssh/config"))
    if not path.exists():
        raise ConfigError(f"ssh config file not found: {path}")
    text = expand_config(str(path)).text
    names: list[str] = []
    for raw in text.splitlines():
        words = raw.strip().replace("=", " ", 1).split()
        if len(words) < 2 or words[0].lower() != "host":
            continue
        for name in words[1:]:
            if any(c in name for c in "*?!") or name in names:
                continue
            if fnmatch.fnmatchcase(name, pattern):
                names.append(name)
    if not names:
        raise ConfigError(f"no Host in {path} matches {pattern!r}")
    return [HostEntry(name) for name in names]


def collect_hosts(
    args: Iterable[str],
    hosts_file: str | None,
    config_pattern: str | None,
    ssh_config: str | None,
    remote_root: str | None,
) -> list[HostEntry]:
    """Every host to scan, duplicates removed (first wins); `remote_root` fills entries without one."""
    entries = [HostEntry(h) for h in args]
    if hosts_file:
        entries += parse_hosts_file(hosts_file)
    if config_pattern:
        entries += hosts_from_ssh_config(config_pattern, ssh_config)
    seen: dict[tuple[str, str | None], HostEntry] = {}
    for entry in entries:
        if not entry.host or entry.host.startswith("-"):
            raise ConfigError(f"{entry.host!r} is not a host name")
        entry = HostEntry(entry.host, entry.remote_root or remote_root)
        seen.setdefault((entry.host, entry.remote_root), entry)
    if not seen:
        raise ConfigError("give hosts: HOST arguments, --hosts-file FILE or --ssh-config-hosts PATTERN")
    return list(seen.values())
