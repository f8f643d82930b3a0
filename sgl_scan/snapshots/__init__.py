"""Snapshots: frozen local copies of SGLang trees with a manifest saying where they came from.

- `resolve.obtain_snapshot(params)`: the entry point for every command (the CLI's source options).
- `store.Store`: `open(ref)`, `latest()`/`mark_latest(id)`, `list()`, `remove(ref)`, `gc(keep)`, `stage()` for
  writers (whose `commit` gives back a stored snapshot of the same content instead of a copy).
- Sources: `ssh` (+ `sshconnect`, `tarstream`), `local`, `git`, `wheel` (PyPI); `scope` decides
  which files each takes; `summary` formats a snapshot for people.
"""
