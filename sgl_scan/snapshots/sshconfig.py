"""Read an OpenSSH client config the way `ssh` does, or refuse it in one line: never half-honoured.

paramiko's `SSHConfig` parses one file and keeps every keyword, used or not. What it lacks, this
module supplies before paramiko sees the text:

- `Include` is resolved as OpenSSH's `readconf.c` does: each argument is a glob (sorted matches, no
  match is no error); a relative path is relative to `~/.ssh` (sgl-scan reads user configs only, as
  `ssh -F` does); nesting deeper than 16 files is an error. An included file is read in the context
  of the line that includes it: its lines before its own first `Host`/`Match` belong to the
  enclosing block, and after it the enclosing block continues. One case paramiko cannot express is
  refused, naming the directive: an `Include`, inside a `Host`/`Match` block other than `Host *`, of
  a file that has `Host`/`Match` lines of its own (OpenSSH applies those only where both match).
- `Match` criteria that paramiko does not evaluate (`localnetwork`, `tagged`, `version`, …) would be
  taken as matching everything; they are refused, naming the criterion.
- Directives that change where we connect or which host keys decide are honoured (`HostName`,
  `Port`, `User`, `IdentityFile`, `ProxyJump`, `ProxyCommand`, `HostKeyAlias`, `UserKnownHostsFile`,
  `GlobalKnownHostsFile`, `IdentitiesOnly`) by `sshconnect`; those that it cannot honour
  (`KnownHostsCommand`, both `ProxyCommand` and `ProxyJump` for one host) are refused, naming the
  directive (`UNSUPPORTED`).

Every file is checked by size before it is read (`MAX_CONFIG_BYTES`, and `MAX_TOTAL_BYTES` for all
files one config includes): a config is the user's own, but a glob can name anything.

This module never imports paramiko (`sshimport.needs_invoke` reads the expanded text to decide
whether paramiko needs `invoke` for `Match exec`).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from dataclasses import dataclass

from sgl_scan.errors import ConfigError
from sgl_scan.smallfiles import CONFIG_LIMIT, read_small

MAX_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
MAX_CONFIG_BYTES = CONFIG_LIMIT
MAX_TOTAL_BYTES = 8 << 20
USER_DIR = "~/.ssh"
# Match criteria paramiko evaluates; any other one it would treat as matching every host
MATCH_CRITERIA = {"all", "canonical", "final", "host", "originalhost", "user", "localuser", "exec"}
# Keywords whose effect sgl-scan does not reproduce and that would change which host keys decide:
# refused when they apply to the host being connected to
UNSUPPORTED = {
    "knownhostscommand": "runs a command to list host keys",
    "revokedhostkeys": "names a file of revoked host keys",
    "bindaddress": "chooses the local address the connection leaves from",
    "bindinterface": "chooses the local interface the connection leaves from",
}
# yes/no keywords whose "yes" sgl-scan cannot honour
UNSUPPORTED_YES = {
    "proxyusefdpass": "makes the ProxyCommand pass a connected descriptor instead of relaying",
}
# ProxyCommand reaches paramiko under this name, so paramiko keeps it as written (first value wins,
# quotes stripped) instead of expanding its tokens with the config's port and user: `sshconnect`
# expands them with the final ones, as OpenSSH does
PROXY_COMMAND = "sglscanproxycommand"
_KEYWORD = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+|$)(.*)$")


@dataclass(frozen=True)
class ExpandedConfig:
    text: str  # the config with every Include resolved, for paramiko.SSHConfig.from_text
    files: tuple[str, ...]  # every file read, the main one first


def read_limited(path: str, what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """A small text file, checked by type and size on the open descriptor before it is read."""
    try:
        data = read_small(path, limit, what, devnull_ok=True)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    return data.decode("utf-8", "replace")


def _split(line: str) -> tuple[str, str] | None:
    match = _KEYWORD.match(line)
    if not match:
        return None
    return match.group(1).lower(), match.group(2).strip()


def _words(value: str, where: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot parse {value!r} ({exc})") from exc


class _Expander:
    def __init__(self) -> None:
        self.files: list[str] = []
        self.total = 0

    def read(self, path: str) -> list[str]:
        text = read_limited(path, "ssh config")
        self.total += len(text)
        if self.total > MAX_TOTAL_BYTES:
            raise ConfigError(
                f"ssh config {self.files[0] if self.files else path} includes more than "
                f"{MAX_TOTAL_BYTES >> 20} MiB of files; refusing"
            )
        self.files.append(path)
        return text.splitlines()

    def expand(self, path: str, depth: int, conditional: bool) -> tuple[list[str], bool]:
        """(lines, whether the file has Host/Match lines of its own), Includes resolved."""
        out: list[str] = []
        has_blocks = False
        block = "Host *"  # the block the next line belongs to (top level: every host)
        for number, raw in enumerate(self.read(path), 1):
            line = raw.strip()
            where = f"{path}:{number}"
            if not line or line.startswith("#"):
                out.append(line)
                continue
            split = _split(line)
            if split is None:
                out.append(line)  # paramiko reports it
                continue
            key, value = split
            if key in ("host", "match"):
                has_blocks = True
                if conditional:
                    # refused by the caller with the Include's own position
                    return out, True
                if key == "match":
                    self._check_match(value, where)
                block = line
                out.append(line)
                continue
            if key == "proxycommand":
                out.append(f"{PROXY_COMMAND} {value}")
                continue
            if key != "include":
                out.append(line)
                continue
            inner_conditional = conditional or _conditional(block)
            if depth + 1 > MAX_DEPTH:
                raise ConfigError(f"{where}: Include nested more than {MAX_DEPTH} deep")
            for arg in _words(value, where):
                if not arg.startswith(("/", "~")):
                    arg = f"{USER_DIR}/{arg}"
                pattern = os.path.expanduser(arg)
                for found in sorted(glob.glob(pattern)):
                    lines, blocks = self.expand(found, depth + 1, inner_conditional)
                    if blocks and inner_conditional:
                        raise ConfigError(
                            f"{where}: Include of {found}, which has Host/Match lines of its own, inside "
                            f"'{block}' is not supported by sgl-scan (OpenSSH applies them only where both "
                            f"match); move the Include to the top level or to 'Host *'"
                        )
                    out.extend(lines)
                    if blocks:
                        out.append(block)  # the including file's block goes on after the included file
                        has_blocks = True
        return out, has_blocks

    @staticmethod
    def _check_match(value: str, where: str) -> None:
        words = _words(value, where)
        index = 0
        while index < len(words):
            criterion = words[index].lstrip("!").lower()
            if criterion not in MATCH_CRITERIA:
                raise ConfigError(
                    f"{where}: 'Match {criterion}' is not supported by sgl-scan (OpenSSH would "
                    f"apply it; paramiko would match every host); use Host or another criterion"
                )
            index += 1 if criterion in ("all", "canonical", "final") else 2


def _conditional(block: str) -> bool:
    split = _split(block)
    if split is None:
        return True
    key, value = split
    return not (key == "host" and value.split() == ["*"])


def expand_config(path: str) -> ExpandedConfig:
    """The config at `path` with its Includes resolved (see the module docstring), or ConfigError."""
    expander = _Expander()
    lines, _ = expander.expand(path, 0, False)
    return ExpandedConfig("\n".join(lines) + "\n", tuple(expander.files))


def check_entry(entry: dict, host: str, config_name: str) -> None:
    """Refuse, in one line naming the directive, what applies to `host` and sgl-scan cannot honour."""
    for key, why in UNSUPPORTED.items():
        if entry.get(key) not in (None, "none"):
            raise ConfigError(
                f"{config_name}: {key_name(key)} applies to {host!r} ({why}); sgl-scan does not "
                f"support it and will not connect without it; remove it for this host"
            )
    for key, why in UNSUPPORTED_YES.items():
        if str(entry.get(key, "no")).lower() == "yes":
            raise ConfigError(
                f"{config_name}: {key_name(key)} yes applies to {host!r} ({why}); sgl-scan does not "
                f"support it; remove it for this host"
            )
    agent = entry.get("identityagent")
    if agent not in (None, "none", "SSH_AUTH_SOCK", "$SSH_AUTH_SOCK"):
        raise ConfigError(
            f"{config_name}: IdentityAgent {agent} applies to {host!r}; sgl-scan uses only "
            f"$SSH_AUTH_SOCK (or none); remove it for this host or set SSH_AUTH_SOCK"
        )
    port = entry.get("port")
    if port is not None and not (str(port).isdigit() and 0 < int(port) < 65536):
        raise ConfigError(f"{config_name}: Port {port!r} for {host!r} is not a port number")
    command = entry.get(PROXY_COMMAND)
    jump = entry.get("proxyjump")
    if command and command.lower() != "none" and jump and jump.lower() != "none":
        raise ConfigError(
            f"{config_name}: both ProxyCommand and ProxyJump apply to {host!r}; OpenSSH uses the "
            f"first one it reads, which sgl-scan cannot tell; keep one"
        )


def key_name(key: str) -> str:
    names = {
        "knownhostscommand": "KnownHostsCommand",
        "revokedhostkeys": "RevokedHostKeys",
        "bindaddress": "BindAddress",
        "bindinterface": "BindInterface",
        "proxyusefdpass": "ProxyUseFdpass",
    }
    return names.get(key, key)
