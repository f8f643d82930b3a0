"""Git on a repository sgl-scan did not create, without any of its configuration.

A repository's `.git/config` can name commands that git runs on its own: `core.fsmonitor` (on
every index refresh), `diff.<driver>.textconv` and `filter.<driver>.clean/smudge/process`
(selected by the work tree's `.gitattributes`), `diff.external`, `core.pager`, `core.sshCommand`
(a partial clone fetching a missing object), hooks (`core.hooksPath`, `.git/hooks`,
`post-index-change` on an index write), `include.path` pulling in any other file. A checkout copied
from a shared box, a tarball or a container image carries all of that. Listing those keys in
advance (`-c key=...`) cannot work: drivers have names of the repository's choosing.

So git never sees the repository's own git directory. `quarantined()` builds a private one
(0700, removed afterwards) holding only data:

- `config`: written by sgl-scan: a few keys of the original that change how files compare and name
  no command (`core.filemode`, `core.autocrlf`, `extensions.objectFormat`, ...), each value checked
  against a plain-word pattern; `include`, drivers, filters, hooks, remotes are never copied;
- `HEAD`, `refs/`, `packed-refs`, `shallow`, `info/exclude`: copied as bytes (regular files only,
  bounded, never through a link);
- `index`: a copy, so an index refresh writes into the copy, never into the user's repository;
- `objects`: a link to the original object folder (only read).

Every git command then runs with `GIT_DIR` set to that folder, `GIT_CONFIG_NOSYSTEM=1`,
`GIT_CONFIG_GLOBAL=/dev/null`, every other `GIT_*` variable replaced, `-c core.fsmonitor=false
-c core.hooksPath=/dev/null`, `--no-pager`, and diffs with `--no-textconv --no-ext-diff`: no
configuration file that names a command is read at all, whatever its keys are called. The
repository is found by reading `.git` files in Python (gitpython's discovery reads the
repository's config and follows its includes). gitpython is used only on the private folder.
"""

from __future__ import annotations

import logging
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NamedTuple

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots.safeio import NotRegular, read_regular

if TYPE_CHECKING:
    import subprocess

# subprocess, shutil and tempfile are imported where git runs: finding that a folder is no work tree
# (`locate`, every scan of a plain folder) needs none of them

log = logging.getLogger(__name__)

# Keys of the repository's config that change how git compares files and name no command.
SAFE_KEYS = (
    "core.repositoryformatversion",
    "extensions.objectformat",
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.autocrlf",
    "core.eol",
    "core.checkstat",
    "core.trustctime",
)
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
# git run on a quarantined repository: no pager, no monitor, no hooks (there is no config naming them
# either; these hold even if a future git grows a new default)
GIT = (
    "git",
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=" + os.devnull,
    "-c",
    "core.untrackedCache=false",
)
DIFF_SAFETY = ("--no-textconv", "--no-ext-diff", "--no-color")
SMALL = 1024 * 1024  # config, HEAD, a ref, info/exclude, the .git file
MAX_INDEX = 512 * 1024**2  # the index
MAX_PACKED_REFS = 256 * 1024**2
MAX_REFS = 200_000
TIMEOUT = 600.0


class GitFailed(SnapshotError):
    """A git command on a quarantined repository failed; the message is git's last line."""

    def __init__(self, message: str, returncode: int = 1):
        super().__init__(message)
        self.returncode = returncode


class Located(NamedTuple):
    """Where a repository's parts are: its work tree (None when bare), git folder, common folder."""

    work_tree: Path | None
    git_dir: Path
    common_dir: Path


def _read_small(path: Path, cap: int = SMALL) -> bytes:
    data, _ = read_regular(path, cap)
    if len(data) > cap:
        raise SnapshotError(f"{path} is larger than {cap} bytes; not a git file")
    return data


def _common_dir(git_dir: Path) -> Path:
    pointer = git_dir / "commondir"
    if not os.path.lexists(pointer):
        return git_dir
    text = _read_small(pointer).decode("utf-8", "replace").strip()
    return (git_dir / text).absolute() if text else git_dir


def _looks_bare(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()


def locate(start: Path, *, search_parents: bool = True, allow_bare: bool = False) -> Located | None:
    """The repository holding `start`, found as git finds it (a `.git` folder, or a `.git` file
    saying `gitdir: PATH`, in `start` or a parent), without reading any configuration."""
    start = Path(start).absolute()
    for folder in (start, *start.parents) if search_parents else (start,):
        dotgit = folder / ".git"
        try:
            if dotgit.is_dir():
                return Located(folder, dotgit, _common_dir(dotgit))
            if dotgit.is_file():
                text = _read_small(dotgit).decode("utf-8", "replace").strip()
                if not text.startswith("gitdir:"):
                    return None
                git_dir = (folder / text[len("gitdir:") :].strip()).absolute()
                return Located(folder, git_dir, _common_dir(git_dir))
            if allow_bare and folder == start and _looks_bare(folder):
                return Located(None, folder, _common_dir(folder))
        except (OSError, SnapshotError) as exc:
            log.info("no readable repository at %s: %s", folder, exc)
            return None
    return None


def _safe_config(common_dir: Path, work_tree: Path | None) -> str:
    """The private folder's config: the harmless keys of the original (read by git as data from a
    copy, includes off), and whether there is a work tree."""
    keys: dict[str, str] = {}
    try:
        original = _read_small(common_dir / "config")
    except (OSError, SnapshotError):
        original = b""
    if original:
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory(prefix="sgl-scan-gitconfig-") as scratch:
            copy = Path(scratch) / "config"
            copy.write_bytes(original)
            env = {**_base_env(), "GIT_CEILING_DIRECTORIES": str(Path(scratch).parent)}
            done = subprocess.run(
                ["git", "config", "--file", str(copy), "--no-includes", "-z", "--list"],
                env=env,
                cwd=scratch,
                capture_output=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        for item in done.stdout.split(b"\0") if done.returncode == 0 else []:
            key, _, value = item.decode("utf-8", "replace").partition("\n")
            if key.lower() in SAFE_KEYS and _PLAIN_VALUE.fullmatch(value):
                keys[key.lower()] = value
    keys["core.bare"] = "false" if work_tree is not None else "true"
    sections: dict[str, list[str]] = {}
    for key, value in keys.items():
        section, _, name = key.partition(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}\n")
    return "".join(f"[{section}]\n" + "".join(lines) for section, lines in sections.items())


def _copy_file(source: Path, target: Path, cap: int) -> bool:
    """Copy one regular file (never through a link); False when there is none or it is not one."""
    try:
        data, st = read_regular(source, cap)
    except FileNotFoundError:
        return False
    except NotRegular as exc:
        log.info("git file %s not copied: %s", source, exc.strerror)
        return False
    if len(data) > cap:
        raise SnapshotError(f"{source} is larger than {cap} bytes; not read")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    # the original's times: git's "racily clean" check compares the index's mtime with the files'
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    return True


def _copy_refs(source: Path, target: Path) -> None:
    count = 0
    for folder, _dirs, files in os.walk(source):  # links to folders are not followed
        for name in files:
            count += 1
            if count > MAX_REFS:
                raise SnapshotError(f"{source} holds more than {MAX_REFS} refs; not read")
            rel = os.path.relpath(os.path.join(folder, name), source)
            _copy_file(Path(folder) / name, target / rel, 4096)


def _base_env() -> dict[str, str]:
    """The caller's environment without anything that points git at configuration or folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k == "GIT_EXEC_PATH"}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_COUNT="0",
        GIT_CONFIG_PARAMETERS="",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_ATTR_NOSYSTEM="1",
        GIT_ALTERNATE_OBJECT_DIRECTORIES="",
        GIT_NO_LAZY_FETCH="1",
    )
    return env


class Quarantine:
    """A repository seen through a private git folder (see the module's docstring)."""

    def __init__(self, located: Located, private: Path, timeout: float = TIMEOUT):
        self.timeout = timeout  # seconds for each git command
        self.located = located
        self.private = private
        self.work_tree = located.work_tree
        self.env = {
            **_base_env(),
            "GIT_DIR": str(private),
            "GIT_COMMON_DIR": str(private),
            "GIT_OBJECT_DIRECTORY": str(private / "objects"),
            "GIT_INDEX_FILE": str(private / "index"),
        }
        if self.work_tree is not None:
            self.env["GIT_WORK_TREE"] = str(self.work_tree)
        self._repo = None

    def run(self, *args: str, ok: tuple[int, ...] = (0,), timeout: float | None = None) -> subprocess.CompletedProcess:
        """`git ARGS` on the quarantined repository (bytes out); `GitFailed` for another exit status."""
        import subprocess

        timeout = self.timeout if timeout is None else timeout
        cwd = str(self.work_tree or self.private)
        try:
            done = subprocess.run(
                [*GIT, *args], env=self.env, cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise GitFailed(f"git {args[0]} took longer than {timeout:.0f} s") from None
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc.strerror or exc}") from None
        if done.returncode not in ok:
            lines = [t.strip() for t in done.stderr.decode("utf-8", "replace").splitlines() if t.strip()]
            raise GitFailed(lines[-1] if lines else f"git {args[0]} failed ({done.returncode})", done.returncode)
        return done

    def text(self, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        return self.run(*args, ok=ok).stdout.decode("utf-8", "surrogateescape")

    def commit_of(self, rev: str) -> str | None:
        """The commit `rev` names (as git resolves it), or None. Options are never taken from it."""
        if not rev or rev.startswith("-") or "\0" in rev or "\n" in rev:
            return None
        try:
            out = self.text("rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}", ok=(0,))
        except GitFailed:
            return None
        sha = out.strip()
        return sha if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha) else None

    @property
    def repo(self):
        """gitpython on the private folder; its git commands get the same environment."""
        if self._repo is None:
            import git

            self._repo = git.Repo(self.private)
            self._repo.git.update_environment(**self.env)
        return self._repo

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def _build(located: Located, private: Path) -> None:
    common, git_dir = located.common_dir, located.git_dir
    objects = common / "objects"
    if not objects.is_dir():
        raise SnapshotError(f"{common} has no object folder; not a git repository")
    (private / "config").write_text(_safe_config(common, located.work_tree))
    if not _copy_file(git_dir / "HEAD", private / "HEAD", 4096):
        raise SnapshotError(f"{git_dir} has no HEAD; not a git repository")
    os.symlink(objects.absolute(), private / "objects", target_is_directory=True)
    (private / "refs").mkdir()
    if (common / "refs").is_dir() and not (common / "refs").is_symlink():
        _copy_refs(common / "refs", private / "refs")
    _copy_file(common / "packed-refs", private / "packed-refs", MAX_PACKED_REFS)
    _copy_file(common / "shallow", private / "shallow", MAX_PACKED_REFS)
    _copy_file(common / "info" / "exclude", private / "info" / "exclude", SMALL)
    if located.work_tree is not None and _copy_file(git_dir / "index", private / "index", MAX_INDEX):
        with os.scandir(git_dir) as listing:  # a split index keeps its shared part beside it
            for entry in listing:
                if entry.name.startswith("sharedindex."):
                    _copy_file(Path(entry.path), private / entry.name, MAX_INDEX)


@contextmanager
def quarantined(located: Located, *, timeout: float = TIMEOUT) -> Iterator[Quarantine]:
    """The repository `located` names, behind a private git folder removed on exit; each git command
    is stopped after `timeout` seconds (an object folder holding a FIFO cannot hang a scan)."""
    import shutil
    import tempfile

    private = Path(tempfile.mkdtemp(prefix="sgl-scan-git-"))
    quarantine = None
    try:
        _build(located, private)
        quarantine = Quarantine(located, private, timeout)
        yield quarantine
    finally:
        if quarantine is not None:
            quarantine.close()
        shutil.rmtree(private, ignore_errors=True)
