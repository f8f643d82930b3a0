"""Options shared by several commands, defined once and stacked as decorators."""

from __future__ import annotations

from typing import Callable

import click

from sgl_scan.pipeline import FindingOptions, Prepared, prepare
from sgl_scan.rules.finding import SEVERITIES


class ByteSize(click.ParamType):
    """A byte count: 1048576, 512K, 64M, 2G."""

    name = "size"
    _units = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        number, unit = (text[:-1], text[-1]) if text and text[-1] in self._units else (text, "")
        try:
            size = int(float(number) * self._units[unit])
        except ValueError:
            self.fail(f"{value!r} is not a size such as 64M or 2G", param, ctx)
        if size <= 0:
            self.fail("a size must be positive", param, ctx)
        return size


SOURCE_OPTIONS = (
    click.option("--host", help="Pull from a remote host over SSH (name, address or ~/.ssh/config alias)."),
    click.option("--port", type=int, help="SSH port (default: from ~/.ssh/config, else 22)."),
    click.option("--user", help="SSH user (default: from ~/.ssh/config, else the current user)."),
    click.option("--identity", "identity", type=click.Path(dir_okay=False), help="SSH private key file."),
    click.option("--ssh-config", type=click.Path(dir_okay=False), help="SSH config file (default ~/.ssh/config)."),
    click.option("--known-hosts", type=click.Path(dir_okay=False), help="Extra known_hosts file to trust."),
    click.option(
        "--accept-new-host-key",
        is_flag=True,
        help="Trust and record an unknown host key (a changed key is always refused).",
    ),
    click.option("--remote-root", help="Remote path of the sglang package (default: auto-detect)."),
    click.option(
        "--connect-timeout", type=float, default=15.0, show_default=True, help="Seconds to wait for the SSH connection."
    ),
    click.option(
        "--path",
        "local_path",
        type=click.Path(file_okay=False),
        help="Read a local folder: an SGLang checkout, an installed package or a snapshot copy.",
    ),
    click.option(
        "--follow-outside-links",
        is_flag=True,
        default=None,
        help="With --path: follow a symlinked scope root (srt/, srt/speculative/, ...) that leads outside the folder.",
    ),
    click.option(
        "--git", "git_repo", help="Read a git repository (URL or local path) at --rev without touching its work tree."
    ),
    click.option("--rev", help="git revision for --git (default HEAD)."),
    click.option("--pip", "pip_spec", help="Download an SGLang release from the package index, e.g. sglang==0.5.23."),
    click.option("--snapshot", "snapshot_ref", help="Use a stored snapshot: its id, or 'latest'."),
    click.option(
        "--scope",
        type=click.Choice(["speculative", "full"]),
        default=None,
        help="Which files to take (default: speculative).",
    ),
    click.option(
        "--timeout",
        type=float,
        default=None,
        help=(
            "Total deadline in seconds for an SSH pull (connect to last byte), a pip download, or each --git "
            "clone or fetch (default 900)."
        ),
    ),
    click.option(
        "--max-bytes",
        type=ByteSize(),
        default=None,
        help="Refuse a pull larger than this, and a --git clone or fetch that downloads more (e.g. 2G; default 2 GiB).",
    ),
    click.option(
        "--max-files", type=click.IntRange(min=1), default=None, help="Refuse a pull with more files (default 100000)."
    ),
    click.option(
        "--max-file-size",
        type=ByteSize(),
        default=None,
        help="Skip (and record) files larger than this (default 4M: parsing a .py file takes ~80x its size in memory).",
    ),
)


def source_options(func: Callable) -> Callable:
    """Stack every source option on a command; the values arrive as keyword arguments."""
    for option in reversed(SOURCE_OPTIONS):
        func = option(func)
    return func


SOURCE_PARAM_NAMES = (
    "host",
    "port",
    "user",
    "identity",
    "ssh_config",
    "known_hosts",
    "accept_new_host_key",
    "remote_root",
    "connect_timeout",
    "local_path",
    "follow_outside_links",
    "git_repo",
    "rev",
    "pip_spec",
    "snapshot_ref",
    "scope",
    "timeout",
    "max_bytes",
    "max_files",
    "max_file_size",
)


def pop_source_params(kwargs: dict) -> dict:
    """Split the source options out of a command's keyword arguments."""
    return {name: kwargs.pop(name, None) for name in SOURCE_PARAM_NAMES}


def _param_name(option: Callable) -> str:
    def probe() -> None: ...

    option(probe)
    return probe.__click_params__[0].name  # type: ignore[attr-defined]


def some_source_options(*names: str) -> Callable[[Callable], Callable]:
    """Stack only the named source options (parameter names), with the very definitions above."""
    chosen = [option for option in SOURCE_OPTIONS if _param_name(option) in names]
    unknown = set(names) - {_param_name(option) for option in chosen}
    if unknown:
        raise ValueError(f"no source options {sorted(unknown)}")

    def stack(func: Callable) -> Callable:
        for option in reversed(chosen):
            func = option(func)
        return func

    return stack


FORMAT_CHOICES = ("text", "json", "sarif", "markdown", "html")

FINDING_OPTIONS = (
    click.option(
        "--select",
        multiple=True,
        metavar="IDS",
        help="Report only these rules: ids, prefixes or names, comma-separated (default: all).",
    ),
    click.option("--ignore", multiple=True, metavar="IDS", help="Do not report these rules (ids, prefixes or names)."),
    click.option(
        "--fail-on",
        type=click.Choice(SEVERITIES),
        default="error",
        show_default=True,
        help="Exit 1 when a reported finding has at least this severity.",
    ),
    click.option("--baseline", type=click.Path(dir_okay=False), help="Hide findings recorded in this baseline file."),
    click.option(
        "--write-baseline", type=click.Path(dir_okay=False), help="Record the current findings as a baseline (exit 0)."
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMAT_CHOICES),
        default=None,
        help="Report format (default: from --output's extension, else text).",
    ),
    click.option(
        "-o", "--output", type=click.Path(dir_okay=False), help="Write the report to this file instead of stdout."
    ),
)

FINDING_PARAM_NAMES = ("select", "ignore", "fail_on", "baseline", "write_baseline", "fmt", "output")


def finding_options(func: Callable) -> Callable:
    """Stack the selection, threshold, baseline and output options on a command."""
    for option in reversed(FINDING_OPTIONS):
        func = option(func)
    return func


def pop_finding_options(kwargs: dict) -> FindingOptions:
    """Split the finding options out of a command's keyword arguments."""
    values = {name: kwargs.pop(name, None) for name in FINDING_PARAM_NAMES}
    values["select"] = tuple(values["select"] or ())
    values["ignore"] = tuple(values["ignore"] or ())
    values["fail_on"] = values["fail_on"] or "error"
    return FindingOptions(**values)


def selector_origins() -> dict[str, str]:
    """Where --select/--ignore came from: the option, or `<settings file>: <key>` when the settings
    file gave them (click's default map)."""
    out = {"select": "--select", "ignore": "--ignore"}
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return out
    config = ctx.meta.get("sgl_scan.config") or (ctx.parent.meta.get("sgl_scan.config") if ctx.parent else None)
    for name in out:
        try:
            source = ctx.get_parameter_source(name)
        except Exception:  # not a parameter of this command
            continue
        if source is not None and source.name == "DEFAULT_MAP":
            out[name] = f"{config or 'the settings file'}: {name}"
        elif source is not None and source.name == "DEFAULT":
            out[name] = ""  # not given: every rule is selected, and an ignore anywhere simply applies
    return out


def prepare_findings(options: FindingOptions) -> Prepared:
    """`pipeline.prepare` told where this command's --select/--ignore came from; its notes go to stderr."""
    return prepare(options, origins=selector_origins(), say=lambda line: click.echo(line, err=True))


class ImplicitLatest(str):
    """`latest` chosen because no source was named (equal to "latest"; the header says why it was used)."""


def source_or_latest(source: dict) -> dict:
    """The source options as given; with no source at all, the newest stored snapshot (as
    `--snapshot latest`), or a usage error while the store holds none."""
    if any(v for k, v in source.items() if k not in ("connect_timeout", "scope", "follow_outside_links")):
        return source
    from sgl_scan.snapshots.store import Store

    if not Store().list():
        raise click.UsageError(
            "give a source: --path, --git, --pip, --host or --snapshot "
            "(with none, the latest stored snapshot is used, and the store is empty)"
        )
    return {**source, "snapshot_ref": ImplicitLatest("latest")}


def latest_meaning(source: dict, snapshot) -> str | None:
    """What `latest` was, for the answer's header, when the user did not name the tree (no source,
    or `--snapshot latest`); None when they did."""
    if source.get("snapshot_ref") != "latest":
        return None
    from sgl_scan.snapshots.store import Store
    from sgl_scan.snapshots.summary import latest_note

    return latest_note(
        snapshot.manifest,
        Store().latest_since(snapshot.id),
        implicit=isinstance(source.get("snapshot_ref"), ImplicitLatest),
    )
