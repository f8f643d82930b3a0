"""Failures of the drafter stage, as `SglScanError` subclasses the CLI maps to exit codes."""

from __future__ import annotations

from sgl_scan.errors import ConfigError, SglScanError


class CheckpointError(SglScanError):
    """A drafter checkpoint or config could not be read: not safetensors, truncated, missing (exit 3)."""


class MissingBackendError(ConfigError):
    """numpy or safetensors is not installed (exit 2: install the `drafter` extra)."""
