"""Packaging metadata: every folder of the package is a package setuptools discovers, so installing
is quiet (setuptools prints ~40 lines of "Package would be ignored" for each folder it does not)
and the templates ship; the `bench` extra exists."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config


def _listed(value: str) -> list[str]:
    return [part.strip() for line in value.splitlines() for part in line.split(",") if part.strip()]


def test_every_folder_with_files_is_a_discovered_package():
    setuptools = pytest.importorskip("setuptools")
    config = _setup_cfg()
    assert config["options"]["packages"].strip() == "find_namespace:"
    find = config["options.packages.find"]
    found = set(setuptools.find_namespace_packages(
        where=str(REPO), include=_listed(find.get("include", "")), exclude=_listed(find.get("exclude", ""))))
    folders = {
        ".".join(folder.relative_to(REPO).parts)
        for folder in [REPO / "sgl_scan", *(REPO / "sgl_scan").rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__" and any(p.is_file() for p in folder.iterdir())
    }
    assert folders - found == set()  # each missing one costs a warning at install and is not shipped
    assert not any("__pycache__" in name for name in found)
    assert {"sgl_scan.reports.templates", "sgl_scan.codegen.ddtree.templates.tests"} <= found


def test_bench_extra_is_declared():
    extras = _setup_cfg()["options.extras_require"]
    assert "bench" in extras and "pytest" not in extras["bench"]
