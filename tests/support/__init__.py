"""Shared test helpers (real SGLang releases, a private sshd, git repositories)."""
