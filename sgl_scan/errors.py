"""Exception types shared by all stages; the CLI maps them to exit codes."""


class SglScanError(Exception):
    """Base class: a failure that the CLI reports as one line, without a traceback."""

    exit_code = 3


class ConfigError(SglScanError):
    """Bad configuration or arguments discovered after click parsed them (exit 2)."""

    exit_code = 2


class SnapshotError(SglScanError):
    """A snapshot could not be pulled, read or stored (exit 3)."""


class RemoteError(SnapshotError):
    """The remote host failed: connection, authentication, host key, remote command."""


class AnalysisError(SglScanError):
    """The analyzer could not produce facts for a snapshot (exit 3)."""


class CodegenError(SglScanError):
    """Code generation was refused or its validation failed (exit 3)."""


class OutputFolderError(CodegenError, ConfigError):
    """`--out` names a folder that cannot be used: a file, one that overlaps the source tree, the
    snapshot or the store, a git repository, a folder holding files gen did not write, or a non-empty
    one without --force. A usage error (exit 2), raised before anything is generated."""

    exit_code = 2
