"""The click layer: wires the stages together and turns outcomes into exit codes.

`sgl-scan [source options]` with no subcommand runs `scan`. Source options before a subcommand
mean what they mean after it (`sgl-scan --pip X graph ...` is `sgl-scan graph --pip X ...`); one the
subcommand does not take, or one given on both sides, is refused in one line. Every failure the
program anticipates is an `SglScanError` (or a click usage error) and prints one line; `-v` adds
the traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import traceback
import warnings

import click

from sgl_scan import __version__
from sgl_scan.cli.options import source_options
from sgl_scan.config import config_callback
from sgl_scan.errors import SglScanError
from sgl_scan.reports.visible import visible, visible_lines
from sgl_scan.exitcodes import FAILURE, USAGE

# Each module defines `command` (a click command or group), imported only when that command runs
# (or when --help lists them all): a scan never loads the other commands' code.
COMMANDS = {
    "scan": "sgl_scan.cli.scan_cmd",
    "snapshot": "sgl_scan.cli.snapshot_cmd",
    "drafter": "sgl_scan.cli.drafter_cmd",
    "check": "sgl_scan.cli.check_cmd",
    "rules": "sgl_scan.cli.rules_cmd",
    "diff": "sgl_scan.cli.diff_cmd",
    "gen": "sgl_scan.cli.gen_cmd",
    "graph": "sgl_scan.cli.graph_cmd",
    "fleet": "sgl_scan.cli.fleet_cmd",
}
COMMAND_MODULES = tuple(COMMANDS.values())


class LazyGroup(click.Group):
    """A group whose subcommands are imported from `COMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            command = importlib.import_module(COMMANDS[name]).command
            if command.name != name:
                raise RuntimeError(f"{COMMANDS[name]} defines {command.name!r}, listed as {name!r}")
            self.add_command(command)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            import difflib

            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1, cutoff=0.6)
            ctx.fail(f"No such command {args[0]!r}." + (f" Did you mean {close[0]!r}?" if close else ""))
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta["sgl_scan.rest"] = list(rest)  # what follows the subcommand's name: its leaf and options
        return name, command, rest


_state = {"verbose": 0}


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sgl-scan")
@click.option("-v", "--verbose", count=True, help="More detail: -v logs steps and shows tracebacks, -vv debug.")
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    is_eager=True,
    expose_value=False,
    callback=config_callback,
    help="Settings file (default: .sgl-scan.toml or [tool.sgl-scan] in pyproject.toml, found upwards).",
)
@source_options
@click.pass_context
def cli(ctx: click.Context, verbose: int, **source) -> None:
    """Answer speculative-decoding questions about an SGLang source tree.

    Give a source (--host, --path, --git, --pip or --snapshot) and no command to pull a snapshot
    and scan it. Before a command, the source options mean what they mean after it (a command that
    takes no such option refuses it). Every answer names the tree it is about. Examples:

    \b
      sgl-scan --pip sglang==0.5.23
      sgl-scan --host gpu-box --remote-root /root/sglang/python/sglang
      sgl-scan graph --snapshot latest --dispatch DFLASH
      sgl-scan --pip sglang==0.5.22 graph --dispatch EAGLE
    """
    _state["verbose"] = verbose
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("sgl-scan: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING, handlers=[handler]
    )
    _quiet_paramiko(verbose)
    ctx.ensure_object(dict)
    if ctx.invoked_subcommand is not None:
        _hand_down_source(ctx, {k: v for k, v in source.items() if _given(ctx, k)})
        return
    if not any(v for k, v in source.items() if k not in ("connect_timeout",)):
        click.echo(ctx.get_help())
        return
    scan = cli.get_command(ctx, "scan")
    assert scan is not None  # registered with the group
    ctx.invoke(scan, **{k: v for k, v in source.items()})


# where source options go, for the one line that refuses them before a command that takes none
SOURCE_COMMANDS = "scan, graph, gen ddtree, drafter check and snapshot pull"
# commands that name their trees another way
OWN_TREES = {
    "diff": "diff names its two trees as A and B (pip:SPEC, path:DIR, git:REPO@REV, ssh:HOST:ROOT, snapshot:ID)",
    "fleet": "fleet takes its hosts as arguments (sgl-scan fleet HOST ... --remote-root ROOT)",
    "check": "check reads the git checkout it runs in",
}


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the user typed option `name` (a default or a settings-file value is not "given")."""
    return ctx.get_parameter_source(name) in (
        click.core.ParameterSource.COMMANDLINE,
        click.core.ParameterSource.ENVIRONMENT,
    )


def _leaf(group: click.Group, ctx: click.Context, name: str, rest: list[str]) -> tuple[list[str], click.Command | None]:
    """The command path (`["gen", "ddtree"]`) and command that `name rest...` runs."""
    path, command = [name], group.get_command(ctx, name)
    while isinstance(command, click.Group):
        words = [w for w in rest if not w.startswith("-")]
        sub = command.get_command(ctx, words[0]) if words else None
        if sub is None:
            break
        path.append(words[0])
        rest = rest[rest.index(words[0]) + 1 :]
        command = sub
    return path, command


def _hand_down_source(ctx: click.Context, given: dict) -> None:
    """Give the subcommand the source options typed before it, with the same meaning as after it
    (as its defaults, through click's `default_map`), or refuse them in one line: an option the
    subcommand does not take, or one typed on both sides of it."""
    if not given:
        return
    rest = ctx.meta.get("sgl_scan.rest", [])
    path, command = _leaf(ctx.command, ctx, ctx.invoked_subcommand, rest)  # type: ignore[arg-type]
    where = "sgl-scan " + " ".join(path)
    by_name = {p.name: p for p in ctx.command.params}
    takes = {p.name: p for p in (command.params if command is not None else ())}
    for name in given:
        flag = by_name[name].opts[-1]
        if name not in takes or isinstance(command, click.Group):
            hint = OWN_TREES.get(path[0]) or (
                f"source options go after the command that reads a tree "
                f"({SOURCE_COMMANDS}), e.g. sgl-scan graph {flag} ..."
            )
            raise click.UsageError(f"{flag} does not apply to '{where}'; {hint}")
        if any(w in takes[name].opts or w.split("=", 1)[0] in takes[name].opts for w in rest if w.startswith("--")):
            raise click.UsageError(f"{flag} is given both before and after '{where}'; give it once")
    defaults = ctx.default_map = dict(ctx.default_map or {})
    for word in path[:-1]:
        defaults[word] = dict(defaults.get(word) or {})
        defaults = defaults[word]
    defaults[path[-1]] = {**(defaults.get(path[-1]) or {}), **given}


def _quiet_paramiko(verbose: int) -> None:
    """paramiko logs its own view (and tracebacks) of failures we report in one line: only -v shows it."""
    logger = logging.getLogger("paramiko")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())  # nothing falls through to logging's last-resort stderr
    logger.propagate = bool(verbose)


class _VisibleFormatter(logging.Formatter):
    """Log lines name files and text from the scanned tree: control characters are shown escaped."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return visible(super().formatMessage(record))  # one line: a newline in tree text is shown, not obeyed

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        return visible_lines(super().formatException(ei))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the CLI, map failures to one line and an exit code."""
    # Parsing the scanned tree's files makes Python warn about their escape sequences, quoting the
    # tree's bytes raw on stderr; those warnings say nothing about sgl-scan's run.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    warnings.filterwarnings("ignore", message="invalid escape sequence", category=DeprecationWarning)
    try:
        rc = cli.main(args=argv, prog_name="sgl-scan", standalone_mode=False)
    except click.exceptions.Exit as exc:
        rc = exc.exit_code
    except click.ClickException as exc:  # one line (click's own suggestion kept), then where the help is
        ctx = getattr(exc, "ctx", None)
        where = f" (see: {ctx.command_path} --help)" if isinstance(exc, click.UsageError) and ctx is not None else ""
        message = " ".join(visible(exc.format_message()).split())
        click.echo(f"sgl-scan: error: {message}{where}", err=True)
        rc = USAGE if exc.exit_code in (1, 2) else exc.exit_code
    except click.Abort:
        click.echo("sgl-scan: aborted", err=True)
        rc = 130
    except SglScanError as exc:
        if _state["verbose"]:
            click.echo(visible_lines(traceback.format_exc()), err=True, nl=False)
        click.echo(f"sgl-scan: error: {visible(str(exc))}", err=True)
        rc = exc.exit_code
    except KeyboardInterrupt:
        click.echo("sgl-scan: interrupted; nothing was written", err=True)
        rc = 130
    except Exception as exc:  # the last line of defence: never a bare traceback without -v
        if _state["verbose"]:
            click.echo(visible_lines(traceback.format_exc()), err=True, nl=False)
        click.echo(
            f"sgl-scan: internal error: {type(exc).__name__}: {visible(str(exc))} (run with -v for details)", err=True
        )
        rc = FAILURE
    sys.exit(rc if isinstance(rc, int) else 0)


def run() -> None:
    """The process's entry point (`sgl-scan`, `python -m sgl_scan`): `main`, then an exit that skips
    tearing the interpreter down. Freeing every object a scan made (the facts it unpickled: hundreds
    of thousands) one by one costs a one-file re-scan about 0.06 s, a sixth of it, and nothing
    needs it: the exit handlers run (a kept process pool stops, logs are flushed, temporary folders
    go), stdout and stderr are flushed, then the process ends with `main`'s code. Where that cannot be
    done safely (another thread still runs, a stream will not flush, a profiler or tracer is on) the
    normal exit happens."""
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    if not isinstance(code, int) or threading.active_count() > 1 or sys.getprofile() or sys.gettrace():
        sys.exit(code)  # (a profiler or coverage writes its data after this function returns)
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: Python's own exit reports it
        sys.exit(code)
    os._exit(code)
