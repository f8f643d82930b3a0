"""Zero crashes on real code: the analyzer over every `.py` file of this Python's standard library and
its test suite (deliberately broken `badsyntax_*` and bad-encoding files included) and over the SGLang
releases the tests use. A file the analyzer reports as not analysable must be one CPython itself
rejects (or one nested beyond the analyzer's documented limit)."""

from __future__ import annotations

import ast
import sysconfig
import warnings
from pathlib import Path

import pytest

from sgl_scan.analyzer.parse import MAX_CST_DEPTH, parse_file
from sgl_scan.analyzer.pipeline import analyze_tree, discover, load_extractors
from tests.support.releases import release_tree

pytestmark = pytest.mark.slow

STDLIB = Path(sysconfig.get_paths()["stdlib"])
NOT_STDLIB = ("site-packages/", "dist-packages/")


def _stdlib_files() -> list[str]:
    return [p for p in discover(STDLIB) if not p.startswith(NOT_STDLIB)]


def _cpython_rejects(path: Path) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old test data
            ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True
    return False


def _check(root: Path, paths: list[str], tmp_path) -> tuple[int, int]:
    analysis = analyze_tree(root, paths, cache_dir=tmp_path / "cache", jobs=2)
    assert sorted(analysis.files) == sorted(paths)
    failed = {e.location.path for e in analysis.parse_errors}
    rejected = {p for p in paths if _cpython_rejects(root / p)}
    too_deep = {e.location.path for e in analysis.parse_errors if f"more than {MAX_CST_DEPTH} levels" in e.message}
    assert failed - too_deep == rejected
    return len(paths), len(failed)


def test_the_standard_library_and_its_tests(tmp_path):
    paths = _stdlib_files()
    assert len(paths) > 1000 and any("badsyntax_" in p for p in paths), "the stdlib test suite is not installed"
    files, errors = _check(STDLIB, paths, tmp_path)
    print(f"stdlib: {files} files, {errors} not analysable")


def test_libcst_and_the_extractors_on_a_slice_of_the_standard_library():
    """The pipeline reads most stdlib files with `ast`; here every extractor runs (libcst) on each
    10th file and on every deliberately broken one."""
    extractors = load_extractors()
    paths = [p for i, p in enumerate(_stdlib_files()) if i % 10 == 0 or "bad" in p.rsplit("/", 1)[-1]]
    for rel in paths:
        facts = parse_file(rel, (STDLIB / rel).read_bytes(), "0" * 64, extractors)
        assert facts.path == rel
        if facts.parse_error is None:
            assert not _cpython_rejects(STDLIB / rel), rel


@pytest.mark.parametrize("version", ["0.4.6", "0.5.10", "0.5.11", "0.5.23"])
def test_sglang_releases(version, tmp_path):
    root = release_tree(version)
    paths = discover(root)
    files, errors = _check(root, paths, tmp_path)
    assert errors == 0, f"sglang {version}: {errors} files not analysed"
