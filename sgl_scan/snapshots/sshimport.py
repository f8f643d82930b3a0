"""Import paramiko without `invoke` unless the ssh config needs it.

`paramiko.config` imports `invoke` (when installed) only to run `Match exec` lines; that import is
about 40% of paramiko's own import time, paid on every SSH pull. `import_paramiko` marks `invoke`
as unavailable first (a `None` entry in `sys.modules`, Python's way to block an import) when the ssh
config file that will be read has no `Match … exec` line and nothing has imported `invoke` yet.
"""

from __future__ import annotations

import os
import re
import sys

_MATCH_EXEC = re.compile(r"^[ \t]*match\b[^\n]*\bexec\b", re.IGNORECASE | re.MULTILINE)


def needs_invoke(ssh_config: str | None) -> bool:
    """Whether the ssh config (default `~/.ssh/config`) or a file it includes has a `Match exec`
    line, or cannot be read."""
    from sgl_scan.errors import ConfigError
    from sgl_scan.snapshots.sshconfig import expand_config

    path = os.path.expanduser(ssh_config or "~/.ssh/config")
    if not os.path.exists(path):
        return False
    try:
        text = expand_config(path).text
    except ConfigError:
        return True  # reported when the config is applied, with everything it may need
    return bool(_MATCH_EXEC.search(text))


def import_paramiko(ssh_config: str | None = None):
    """The paramiko module, imported without `invoke` where the ssh config does not use it."""
    if "paramiko" not in sys.modules and "invoke" not in sys.modules and not needs_invoke(ssh_config):
        sys.modules["invoke"] = None  # type: ignore[assignment]
    import paramiko

    return paramiko
