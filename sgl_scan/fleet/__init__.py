"""Scan many SGLang hosts at once: which build, patches, algorithms and findings run where.

`hosts.py` turns arguments, a hosts file or ssh-config patterns into host entries; `run.py` pulls
every host concurrently (the same `pull_ssh` as `--host`), groups identical snapshots, analyses each
group once and diffs every group against the baseline; `model.py` holds the frozen result.
"""
