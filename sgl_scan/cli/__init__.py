"""The click layer: wires the stages together and turns outcomes into exit codes.

`sgl-scan [source options]` with no subcommand runs `scan`. Every failure the program anticipates
is an `SglScanError` (or a click usage error) and prints one line; `-v` adds the traceback.
"""

from __future__ import annotations

import importlib
import logging
import sys
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


_state = {"verbose": 0}


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sgl-scan")
@click.option("-v", "--verbose", count=True, help="More detail: -v logs steps and shows tracebacks, -vv debug.")
@click.option("--config", type=click.Path(dir_okay=False), is_eager=True, expose_value=False, callback=config_callback,
              help="Settings file (default: .sgl-scan.toml or [tool.sgl-scan] in pyproject.toml, found upwards).")
@source_options
@click.pass_context
def cli(ctx: click.Context, verbose: int, **source) -> None:
    """Answer speculative-decoding questions about an SGLang source tree.

    Give a source (--host, --path, --git, --pip or --snapshot) and no command to pull a snapshot
    and scan it. Examples:

    \b
      sgl-scan --pip sglang==0.5.23
      sgl-scan --host gpu-box --remote-root /root/sglang/python/sglang
      sgl-scan graph --snapshot latest --dispatch DFLASH
    """
    _state["verbose"] = verbose
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("sgl-scan: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING, handlers=[handler])
    _quiet_paramiko(verbose)
    ctx.ensure_object(dict)
    if ctx.invoked_subcommand is None:
        if not any(v for k, v in source.items() if k not in ("connect_timeout",)):
            click.echo(ctx.get_help())
            return
        scan = cli.get_command(ctx, "scan")
        ctx.invoke(scan, **{k: v for k, v in source.items()})


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
    except click.ClickException as exc:
        exc.show()
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
        click.echo(f"sgl-scan: internal error: {type(exc).__name__}: {visible(str(exc))} (run with -v for details)", err=True)
        rc = FAILURE
    sys.exit(rc if isinstance(rc, int) else 0)
