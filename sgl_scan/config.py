"""Project configuration: `[tool.sgl-scan]` in `pyproject.toml`, or a `.sgl-scan.toml`, as click defaults.

The file is found from the working directory upwards (`.sgl-scan.toml` wins over `pyproject.toml`
in the same folder; a `pyproject.toml` without `[tool.sgl-scan]` is passed over), but never above
the git repository the working directory is in (the folder holding `.git`); outside a repository
only the working directory itself is looked at. A file planted in a shared parent folder (`/tmp`,
a home directory) is thus ignored unless `--config` names it. Reports say which file was used
(text: `using settings from …`; JSON `config`; SARIF run property `config`). Keys:

    select = ["SGL2", "SGL3"]      # rule ids, prefixes or names
    ignore = ["SGL202"]
    fail-on = "warning"            # info | warning | error
    scope = "speculative"          # speculative | full
    format = "sarif"               # text | json | sarif | markdown | html
    baseline = "sgl-scan-baseline.json"   # relative to the config file

Command-line options always win (`--select X` over `ignore = ["X"]`, said on stderr). An unknown key,
a wrong type or value, or a selector no rule has is a configuration error naming the file and key
(exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

from sgl_scan.errors import ConfigError
from sgl_scan.rules.finding import SEVERITIES

CONFIG_FILES = (".sgl-scan.toml", "pyproject.toml")
KEYS = {"select": list, "ignore": list, "fail-on": str, "scope": str, "format": str, "baseline": str}
CHOICES = {
    "fail-on": SEVERITIES,
    "scope": ("speculative", "full"),
    "format": ("text", "json", "sarif", "markdown", "html"),
}
COMMANDS = ("scan", "check")  # subcommands that take these defaults


def find_config(start: Path | None = None) -> Path | None:
    """The nearest config file at or above `start` (default: the working directory)."""
    folder = (start or Path.cwd()).resolve()
    for candidate in _search_folders(folder):
        dotfile = candidate / ".sgl-scan.toml"
        if dotfile.is_file():
            return dotfile
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _mentions_us(pyproject) and _table(pyproject) is not None:
            return pyproject
    return None


def _search_folders(folder: Path) -> list[Path]:
    """`folder` and its parents up to the git repository's root; only `folder` outside a repository."""
    chain = [folder, *folder.parents]
    for index, candidate in enumerate(chain):
        if (candidate / ".git").exists():
            return chain[: index + 1]
    return [folder]


def load_config(path: Path) -> dict[str, Any]:
    """The validated settings in `path` (keys as written, e.g. "fail-on")."""
    table = _table(path)
    if table is None:
        return {}
    settings: dict[str, Any] = {}
    for key, value in table.items():
        expected = KEYS.get(key)
        if expected is None:
            raise ConfigError(f"{path}: unknown key {key!r} in sgl-scan settings (known: {', '.join(KEYS)})")
        if expected is list and isinstance(value, str):
            value = [value]
        if not isinstance(value, expected) or (expected is list and not all(isinstance(v, str) for v in value)):
            raise ConfigError(f"{path}: {key} must be {'a list of strings' if expected is list else 'a string'}")
        if key in CHOICES and value not in CHOICES[key]:
            raise ConfigError(f"{path}: {key} = {value!r} is not one of {', '.join(CHOICES[key])}")
        if key == "baseline":
            value = str((path.parent / value).resolve())
        settings[key] = value
    return settings


def default_map(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as click's `default_map` for the top-level group and each command that uses them."""
    params = {key.replace("-", "_"): value for key, value in settings.items()}
    per_command = dict(params)
    if "format" in per_command:
        per_command["fmt"] = per_command.pop("format")
    top = {"scope": params["scope"]} if "scope" in params else {}
    return {**top, **{command: dict(per_command) for command in COMMANDS}}


def discover_default_map(
    start: Path | None = None, explicit: str | Path | None = None
) -> tuple[dict[str, Any], Path | None]:
    """Find (or take `explicit`), read and translate the config; ({}, None) when there is none."""
    path: Path | None
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        if path.name == "pyproject.toml" and _table(path) is None:
            raise ConfigError(f"{path} has no [tool.sgl-scan] table")
    else:
        path = find_config(start)
    if path is None:
        return {}, None
    return default_map(load_config(path)), path


def _mentions_us(pyproject: Path) -> bool:
    """Whether a pyproject.toml may hold our table (others' files are not parsed, so never break us)."""
    from sgl_scan.smallfiles import CONFIG_LIMIT, read_small

    try:
        return b"sgl-scan" in read_small(pyproject, CONFIG_LIMIT, "settings file")
    except FileNotFoundError:
        return False
    except ConfigError:
        raise  # a FIFO or an oversized pyproject.toml that may hold our table: one line, not a hang


def _table(path: Path) -> dict[str, Any] | None:
    if sys.version_info >= (3, 11):  # imported here: most runs have no settings file
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]  # only installed on 3.10

    from sgl_scan.smallfiles import CONFIG_LIMIT, read_small

    try:
        data = tomllib.loads(read_small(path, CONFIG_LIMIT, "settings file").decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path} is not valid TOML: nested too deeply") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("sgl-scan")
        return table if isinstance(table, dict) else None
    section = data.get("tool", {}).get("sgl-scan") if "tool" in data else None
    return section if isinstance(section, dict) else data


def config_callback(ctx, param, value) -> None:
    """click callback for an eager `--config FILE` option: install the defaults on the context.

    Defaults that the caller already put in `ctx.default_map` win over the file's.
    """
    found, path = discover_default_map(explicit=value)
    if not found:
        return
    merged = dict(found)
    for key, given in (ctx.default_map or {}).items():
        if isinstance(given, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **given}
        else:
            merged[key] = given
    ctx.default_map = merged
    ctx.meta["sgl_scan.config"] = str(path)
