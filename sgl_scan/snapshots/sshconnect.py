"""Open an authenticated paramiko transport the way OpenSSH would, refusing unknown or changed hosts.

- `~/.ssh/config` (or `--ssh-config FILE`), its `Include`s resolved as OpenSSH does (`sshconfig`):
  HostName, Port, User, IdentityFile, IdentitiesOnly, ProxyJump (each hop is a `direct-tcpip`
  channel through the previous one), ProxyCommand (run as `ssh` runs it: `$SHELL -c "exec CMD"`,
  with %h %p %r expanded), HostKeyAlias, UserKnownHostsFile and GlobalKnownHostsFile. Explicit
  options win over the file. A directive that would change the route or the host-key decision and
  that sgl-scan cannot honour is refused in one line naming it, never ignored (`sshconfig`).
- Host keys (`knownhosts`): the config's UserKnownHostsFile (default `~/.ssh/known_hosts`,
  `~/.ssh/known_hosts2`) and GlobalKnownHostsFile (default `/etc/ssh/ssh_known_hosts`,
  `/etc/ssh/ssh_known_hosts2`) plus `--known-hosts FILE`, decided as OpenSSH decides: `@revoked`
  keys refused with OpenSSH's words, `@cert-authority` lines recognised (sgl-scan cannot check a
  host certificate, so such a host is refused, with one line). An unknown host is refused unless
  `accept_new` is set (then its key is appended to `--known-hosts`, else to the first user file); a
  changed key is always refused.
- Keys: `--identity`, the config's IdentityFile entries, ssh-agent keys (not with IdentitiesOnly),
  then `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`. Encrypted keys that the agent does not hold are
  skipped. Only key paths are ever logged, never key material.
- One deadline (`Connector(deadline=…)`) ends every connection it made, wherever paramiko waits.
"""

from __future__ import annotations

import functools
import getpass
import logging
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, cast

import paramiko

from sgl_scan.errors import ConfigError, RemoteError
from sgl_scan.snapshots import sshconfig
from sgl_scan.snapshots.knownhosts import KnownHosts

log = logging.getLogger(__name__)

DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
WINDOW = 16 * 1024 * 1024
MAX_PACKET = 32768
# AES-GCM authenticates while it decrypts: one pass instead of AES-CTR plus HMAC-SHA256 on both ends
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# what a host or user name may hold when it is put into a ProxyCommand (OpenSSH refuses shell
# metacharacters in names given on its command line for the same reason)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._@:\[\]+-]+$")


@dataclass(frozen=True)
class Target:
    """Where and as whom to connect (after ~/.ssh/config); never holds secrets."""

    alias: str
    hostname: str
    port: int
    user: str
    identities: tuple[str, ...]
    jump: tuple["Target", ...] = ()
    ssh_config: str = "~/.ssh/config"  # the config file that was applied (named in errors)
    proxy_command: str | None = None  # tokens expanded; run through the user's shell
    host_key_alias: str | None = None
    user_known_hosts: tuple[str, ...] = USER_KNOWN_HOSTS
    global_known_hosts: tuple[str, ...] = GLOBAL_KNOWN_HOSTS
    identities_only: bool = False
    use_agent: bool = True  # IdentityAgent none: no agent keys

    @property
    def known_hosts_name(self) -> str:
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    def describe(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


def _load_config(path: str | None) -> paramiko.SSHConfig:
    file = Path(os.path.expanduser(path or "~/.ssh/config"))
    if not file.exists():
        if path:
            raise ConfigError(f"ssh config file not found: {file} (--ssh-config)")
        return paramiko.SSHConfig()
    expanded = sshconfig.expand_config(str(file))
    try:
        return _parsed_config(expanded.text)
    except Exception as exc:  # paramiko raises several types for a bad file
        raise ConfigError(f"cannot read ssh config {file}: {exc}") from exc


@functools.lru_cache(maxsize=8)
def _parsed_config(text: str) -> paramiko.SSHConfig:
    """The parsed config of this exact text, parsed once: a fleet's pulls each resolve their host in
    one config holding every host (lookups only read it)."""
    return paramiko.SSHConfig.from_text(text)


def _file_list(value, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    words = value.split() if isinstance(value, str) else [w for v in value for w in v.split()]
    if [w.lower() for w in words] == ["none"]:
        return ()
    return tuple(words)


def resolve_target(
    host: str,
    *,
    port: int | None = None,
    user: str | None = None,
    identity: str | None = None,
    ssh_config: str | None = None,
    _depth: int = 0,
) -> Target:
    """Apply ~/.ssh/config to `host` (an alias, name or address); explicit values win."""
    if _depth > 8:
        raise RemoteError("ProxyJump chain too long (more than 8 hops)")
    config = _load_config(ssh_config)
    config_name = ssh_config or "~/.ssh/config"
    try:
        entry = config.lookup(host)
    except Exception as exc:
        raise RemoteError(f"cannot apply ssh config to {host!r}: {exc}") from exc
    sshconfig.check_entry(entry, host, config_name)
    identities = []
    if identity:
        identities.append(identity)
    identities.extend(entry.get("identityfile", []))
    target = Target(
        alias=host,
        hostname=entry.get("hostname", host),
        port=int(port or entry.get("port", 22)),
        user=user or entry.get("user") or getpass.getuser(),
        identities=tuple(os.path.expanduser(i) for i in identities),
        ssh_config=config_name,
        host_key_alias=entry.get("hostkeyalias") or None,
        user_known_hosts=_file_list(entry.get("userknownhostsfile"), USER_KNOWN_HOSTS),
        global_known_hosts=_file_list(entry.get("globalknownhostsfile"), GLOBAL_KNOWN_HOSTS),
        identities_only=str(entry.get("identitiesonly", "no")).lower() == "yes",
        use_agent=entry.get("identityagent") != "none",
    )
    command = entry.get(sshconfig.PROXY_COMMAND)  # as written: its tokens take the final port and user
    if command and command.lower() != "none":
        target = replace(target, proxy_command=_expand_proxy_command(command, target, config_name))
    jump = entry.get("proxyjump")
    if jump and jump.lower() != "none":
        hops = []
        for hop in jump.split(","):
            hop_user, _, rest = hop.strip().rpartition("@")
            hop_host, hop_port = rest, None
            try:
                if rest.startswith("["):
                    hop_host, _, tail = rest[1:].partition("]")
                    hop_port = int(tail[1:]) if tail.startswith(":") else None
                elif rest.count(":") == 1:
                    hop_host, port_text = rest.split(":")
                    hop_port = int(port_text)
            except ValueError:
                raise ConfigError(
                    f"{config_name}: ProxyJump {hop.strip()!r} for {host!r} is not [user@]host[:port]"
                ) from None
            hops.append(
                resolve_target(hop_host, port=hop_port, user=hop_user or None, ssh_config=ssh_config, _depth=_depth + 1)
            )
        target = replace(target, jump=tuple(hops))
    return target


def _expand_proxy_command(raw: str, target: Target, config_name: str) -> str:
    """OpenSSH's ProxyCommand tokens: %% %h %n %p %r; any other is refused."""
    values = {"%": "%", "h": target.hostname, "n": target.alias, "p": str(target.port), "r": target.user}
    for token in "hnr":
        if f"%{token}" in raw and not _SAFE_NAME.match(values[token]):
            raise ConfigError(
                f"{config_name}: ProxyCommand for {target.alias!r} would put {values[token]!r} into a "
                f"shell command; refusing a name with shell metacharacters"
            )
    out, index = [], 0
    while index < len(raw):
        char = raw[index]
        if char == "%" and index + 1 < len(raw):
            token = raw[index + 1]
            if token not in values:
                raise ConfigError(
                    f"{config_name}: ProxyCommand for {target.alias!r} uses %{token}, a token sgl-scan "
                    f"does not expand (only %% %h %n %p %r)"
                )
            out.append(values[token])
            index += 2
            continue
        out.append(char)
        index += 1
    return os.path.expanduser("".join(out)) if raw.startswith("~") else "".join(out)


def _flatten(target: Target) -> list[Target]:
    """The hops in connection order: each jump host (with its own jumps first), then the target."""
    hops: list[Target] = []
    for hop in target.jump:
        hops.extend(_flatten(hop))
    return hops + [replace(target, jump=())]


class ProxySocket(paramiko.ProxyCommand):
    """A ProxyCommand run as OpenSSH runs it (`$SHELL -c "exec CMD"`), read like a socket: EOF is b"".

    Its stderr goes to a temporary file whose last line is named when the connection fails."""

    def __init__(self, command: str) -> None:  # noqa: D107 - paramiko's __init__ is replaced, not extended
        self.command = command
        self.cmd = [command]
        shell = os.environ.get("SHELL") or "/bin/sh"
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [shell, "-c", f"exec {command}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            bufsize=0,
        )
        self.timeout = None

    def recv(self, size: int) -> bytes:
        import select

        stdout = cast(IO[bytes], self.process.stdout)  # stdout=PIPE
        ready, _, _ = select.select([stdout], [], [], self.timeout)
        if not ready:
            raise socket.timeout()
        try:
            return os.read(stdout.fileno(), size)
        except OSError as exc:
            raise paramiko.ProxyCommandFailure(self.command, exc.strerror) from exc

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                cast(IO[bytes], pipe).close()  # both are PIPEs
            except OSError:
                pass

    def describe_failure(self) -> str:
        status = self.process.poll()
        try:
            self.stderr.seek(0)
            text = self.stderr.read(65536).decode(errors="replace").strip()
        except (OSError, ValueError):
            text = ""
        last = text.splitlines()[-1][:200] if text else ""
        return (f"exit {status}" if status is not None else "still running") + (f": {last}" if last else "")


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


def _join_thread(transport: paramiko.Transport, timeout: float) -> None:
    if transport.is_alive():
        transport.join(timeout)


def _shut_down(sock: socket.socket) -> None:
    """End the TCP connection both ways, so paramiko's reader thread wakes from `recv` at once (EOF)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed or reset


class Connector:
    """Connects to targets (and their jump hosts) with one policy for host keys and credentials."""

    def __init__(
        self,
        *,
        known_hosts: str | None = None,
        accept_new: bool = False,
        timeout: float = 15.0,
        deadline: float | None = None,
    ) -> None:
        self.extra_known_hosts = Path(os.path.expanduser(known_hosts)) if known_hosts else None
        self.known = KnownHosts([self.extra_known_hosts] if self.extra_known_hosts else [])
        self.accept_new = accept_new
        self.timeout = timeout
        if not log.isEnabledFor(logging.INFO):
            # paramiko logs its own view of failures that we report in one line; show it with -v only
            logging.getLogger("paramiko").setLevel(logging.CRITICAL)
        self._stack = ExitStack()
        # One deadline (time.monotonic()) for everything from the TCP connect to the last byte: paramiko
        # has steps that wait without one (`exec_command`, `open_session` on a wedged server), so a
        # watchdog ends every connection of this Connector when it passes; whatever was waiting then
        # fails at once, and `expired` tells the caller why.
        self.deadline = deadline
        self.expired = threading.Event()
        self._closers: list = []
        self._lock = threading.Lock()
        self._watchdog: threading.Timer | None = None
        if deadline is not None:
            self._watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), self._expire)
            self._watchdog.daemon = True
            self._watchdog.name = "sgl-scan-ssh-deadline"
            self._watchdog.start()

    def _expire(self) -> None:
        with self._lock:
            self.expired.set()
            closers = list(reversed(self._closers))
        for close in closers:
            try:
                close()
            except Exception:  # already closed, or a broken socket: nothing left to end
                pass

    def _on_expiry(self, close) -> None:
        """Run `close` when the deadline passes (at once if it has)."""
        with self._lock:
            self._closers.append(close)
            late = self.expired.is_set()
        if late:
            close()

    def _wait(self) -> float:
        """The seconds one blocking step may take: --connect-timeout, or less if the deadline is nearer."""
        if self.deadline is None:
            return self.timeout
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.expired.set()
            raise RemoteError("the SSH deadline passed before the connection was made (--timeout)")
        return min(self.timeout, remaining)

    def __enter__(self) -> "Connector":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._stack.close()

    def connect(self, target: Target) -> paramiko.Transport:
        """An authenticated transport to `target` (through its jump hosts); closed with the Connector."""
        hops = _flatten(target)
        sock = None
        for number, hop in enumerate(hops):
            transport = self._open(hop, sock)
            if number + 1 < len(hops):
                sock = self._tunnel(transport, hops[number + 1])
        return transport

    def _tunnel(self, transport: paramiko.Transport, nxt: Target) -> paramiko.Channel:
        try:
            return transport.open_channel(
                "direct-tcpip", (nxt.hostname, nxt.port), ("127.0.0.1", 0), timeout=self._wait()
            )
        except (paramiko.SSHException, OSError) as exc:
            raise RemoteError(f"jump host could not reach {nxt.hostname}:{nxt.port}: {exc}") from exc

    def _known_files(self, target: Target) -> set[str]:
        """The known_hosts files that decide for `target` (read once per Connector)."""
        files = [Path(os.path.expanduser(f)) for f in target.user_known_hosts + target.global_known_hosts]
        self.known.add_files(files)
        return {str(f) for f in files} | ({str(self.extra_known_hosts)} if self.extra_known_hosts else set())

    def _proxy(self, target: Target) -> ProxySocket:
        assert target.proxy_command is not None  # _open calls this only when there is one
        try:
            proxy = ProxySocket(target.proxy_command)
        except OSError as exc:
            raise RemoteError(
                f"cannot start the ProxyCommand for {target.alias} ({target.ssh_config}): {exc.strerror or exc}"
            ) from exc
        self._stack.callback(proxy.close)
        self._on_expiry(proxy.close)
        log.info("connecting to %s through ProxyCommand %s", target.alias, target.proxy_command)
        return proxy

    def _open(self, target: Target, sock) -> paramiko.Transport:
        known_files = self._known_files(target)
        if sock is None and target.proxy_command:
            sock = self._proxy(target)
        if sock is None:
            try:
                sock = socket.create_connection((target.hostname, target.port), timeout=self._wait())
            except socket.gaierror as exc:
                raise RemoteError(
                    f"cannot resolve host {target.hostname!r} ({exc.strerror}); check --host or {target.ssh_config}"
                ) from exc
            except ConnectionRefusedError as exc:
                raise RemoteError(
                    f"connection refused by {target.hostname}:{target.port}; is sshd running there and the port right?"
                ) from exc
            except (socket.timeout, TimeoutError) as exc:
                raise RemoteError(
                    f"connection to {target.hostname}:{target.port} timed out after {self.timeout:g} s "
                    "(--connect-timeout)"
                ) from exc
            except OSError as exc:
                raise RemoteError(f"cannot connect to {target.hostname}:{target.port}: {exc.strerror or exc}") from exc
            self._stack.callback(sock.close)
        transport = paramiko.Transport(sock, default_window_size=WINDOW, default_max_packet_size=MAX_PACKET)
        # Closing does not wait for paramiko's reader thread; joining it keeps it from outliving us and
        # printing a traceback of its own (e.g. "Error reading SSH protocol banner") after our error
        # line, during shutdown. The thread sits in `recv` with a 0.1 s timeout and sees a closed
        # transport only when that returns: a TCP connection is shut down first (the callbacks run
        # last-first), which ends its `recv` at once; a tunnel's channel wakes it when it is closed.
        self._stack.callback(_join_thread, transport, self.timeout + 1.0)
        self._stack.callback(transport.close)
        if isinstance(sock, socket.socket):
            self._stack.callback(_shut_down, sock)
            self._on_expiry(lambda: _shut_down(sock))
        self._on_expiry(transport.close)
        wait = self._wait()
        transport.banner_timeout = wait
        transport.handshake_timeout = wait
        transport.auth_timeout = wait
        options = transport.get_security_options()
        fast = [c for c in FAST_CIPHERS if c in options.ciphers]
        options.ciphers = fast + [c for c in options.ciphers if c not in fast]
        known = self.known.trusted_types(target.known_hosts_name, known_files)
        if known:  # ask for a key type we already trust, as OpenSSH does
            preferred = [
                t for t in options.key_types if t in known or (t.startswith("rsa-sha2") and "ssh-rsa" in known)
            ]
            options.key_types = preferred + [t for t in options.key_types if t not in preferred]
        try:
            transport.start_client(timeout=wait)
            key = transport.get_remote_server_key()
        except (paramiko.SSHException, EOFError, OSError) as exc:
            cause = transport.get_exception() or exc
            text = str(cause) or type(cause).__name__
            # paramiko's start_client returns at its timeout without raising; the missing session
            # then surfaces as "No existing session"
            if isinstance(sock, ProxySocket):
                raise RemoteError(
                    f"the ProxyCommand for {target.alias} ({target.ssh_config}) gave no SSH connection "
                    f"to {target.hostname}:{target.port} ({sock.describe_failure()})"
                ) from exc
            silent = ("banner", "timed out", "no existing session")
            if any(word in text.lower() for word in silent) or isinstance(cause, (socket.timeout, TimeoutError)):
                raise RemoteError(
                    f"{target.hostname}:{target.port} did not answer as an SSH server within {self.timeout:g} s "
                    f"(--connect-timeout)"
                ) from exc
            raise RemoteError(f"SSH handshake with {target.hostname}:{target.port} failed: {text}") from exc
        self._check_host_key(target, key, known_files)
        self._authenticate(target, transport)
        return transport

    def _check_host_key(self, target: Target, key: paramiko.PKey, files: set[str]) -> None:
        name = target.known_hosts_name
        if not self.known.check(
            name, key.get_name(), key.asbytes(), fingerprint(key), files=files, accept_new=self.accept_new
        ):
            self._record(name, key, target)

    def _record(self, name: str, key: paramiko.PKey, target: Target) -> None:
        if self.extra_known_hosts:
            file = self.extra_known_hosts
        elif target.user_known_hosts:
            file = Path(os.path.expanduser(target.user_known_hosts[0]))
        else:
            raise RemoteError(f"host key for {name} is not known and UserKnownHostsFile is none; nowhere to record it")
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a") as handle:
                handle.write(f"{name} {key.get_name()} {key.get_base64()}\n")
        except OSError as exc:
            raise RemoteError(f"cannot record the host key in {file}: {exc.strerror}") from exc
        self.known.add(name, key.get_name(), key.asbytes(), str(file))
        log.warning("trusted new host key for %s (%s), recorded in %s", name, fingerprint(key), file)

    def _keys(self, target: Target):
        seen = set()
        defaults = [] if target.identities_only and target.identities else [os.path.expanduser(p) for p in DEFAULT_KEYS]
        for path in list(target.identities) + defaults:
            if path in seen:
                continue
            seen.add(path)
            explicit = path in target.identities
            if not os.path.exists(path):
                if explicit:
                    log.warning("identity file %s does not exist", path)
                continue
            try:
                key = paramiko.PKey.from_path(path)
            except Exception as exc:  # encrypted, unreadable or unsupported key file
                # an encrypted OpenSSH-format key raises TypeError ("password-protected") here
                if isinstance(exc, paramiko.PasswordRequiredException) or "password" in str(exc).lower():
                    log.info("skipping encrypted key %s (load it into ssh-agent to use it)", path)
                    if explicit:
                        yield f"{path} (encrypted: load it into ssh-agent)", None
                else:
                    log.info("skipping key %s: %s", path, type(exc).__name__)
                continue
            yield path, key
        if os.environ.get("SSH_AUTH_SOCK") and target.use_agent and not target.identities_only:
            try:
                agent = paramiko.Agent()
                for number, key in enumerate(agent.get_keys(), 1):
                    yield f"agent key {number}", key
            except Exception as exc:
                log.info("ssh-agent unavailable: %s", type(exc).__name__)

    def _authenticate(self, target: Target, transport: paramiko.Transport) -> None:
        tried = []
        for label, key in self._keys(target):
            tried.append(label)
            if key is None:  # named for the error message, but not usable
                continue
            try:
                transport.auth_publickey(target.user, key)
            except paramiko.AuthenticationException:
                continue
            except (paramiko.SSHException, OSError, EOFError) as exc:
                raise RemoteError(f"authentication with {target.describe()} failed: {exc}") from exc
            if transport.is_authenticated():
                log.info("authenticated to %s with %s", target.describe(), label)
                return
        what = ", ".join(tried) if tried else "no usable key (give --identity or start ssh-agent)"
        raise RemoteError(f"authentication failed for {target.describe()} (tried: {what}); check --user and --identity")
