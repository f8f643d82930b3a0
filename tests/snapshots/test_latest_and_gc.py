"""`latest` is the snapshot last pulled, reused or scanned (a pointer, not a creation time); `diff`
pins its references before pulling and never moves `latest`; `snapshot gc` keeps what it must."""

from __future__ import annotations

import json
import os

from sgl_scan.analyzer.cache import signature, tree_key
from sgl_scan.paths import facts_cache_dir, snapshots_dir
from sgl_scan.snapshots.resolve import obtain_snapshot
from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import make_mini_package
from tests.support.gitrepo import copy_package
from tests.support.releases import release_tree
from tests.support.cli import run_main as _run


def _latest(capsys) -> str:
    code, out, _ = _run(capsys, "snapshot", "show", "latest", "--json")
    assert code == 0
    return json.loads(out)["id"]


def test_latest_is_what_was_pulled_last_even_when_reused_real_releases(capsys):
    """Issue 18 case 4: pull 0.5.20, 0.5.23, then 0.5.20 again: `latest` is 0.5.20."""
    old, new = (str(release_tree(v) / "sglang") for v in ("0.5.20", "0.5.23"))
    ids = []
    for path in (old, new, old):
        code, out, err = _run(capsys, "snapshot", "pull", "--path", path)
        assert code == 0, err
        ids.append(out.strip())
    assert ids[2] == ids[0] != ids[1]
    assert _latest(capsys) == ids[0]
    assert f"reused snapshot {ids[0]}" in err
    code, out, _ = _run(capsys, "snapshot", "list", "--json")
    assert [row["id"] for row in map(json.loads, out.splitlines()) if row["latest"]] == [ids[0]]
    assert obtain_snapshot({}).id == ids[0]  # no source (gen ddtree, drafter check): the same pointer
    assert obtain_snapshot({"snapshot_ref": "latest"}).manifest.sglang_version == "0.5.20"

    obtain_snapshot({"snapshot_ref": ids[1][:-3]})  # scanning a stored snapshot makes it latest
    assert _latest(capsys) == ids[1]


def test_a_removed_latest_falls_back_to_the_newest_created(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    first = obtain_snapshot({"local_path": str(mini_package)}, store=store)
    (mini_package / "srt/server_args.py").write_text("X = 2\n")
    second = obtain_snapshot({"local_path": str(mini_package)}, store=store)
    obtain_snapshot({"snapshot_ref": first.id}, store=store)
    assert store.latest().id == first.id
    store.remove(first.id)
    assert store.latest().id == second.id
    (store.root / ".latest").write_text("../../etc\n")  # a pointer that names no snapshot is ignored
    assert store.latest().id == second.id


DDTREE = b"    NGRAM = auto()\n    DDTREE = auto()\n"


def test_diff_pins_latest_before_pulling_and_does_not_move_it_real_0_5_23(tmp_path, capsys):
    """Issue 15: `diff <0.5.23> latest`, `latest` a patched 0.5.23 (one DDTREE member more),
    compared 0.5.23 with itself: pulling A made A the newest before B was resolved."""
    release = release_tree("0.5.23") / "sglang"
    patched = copy_package(release, tmp_path / "patched" / "sglang")
    spec = patched / "srt/speculative/spec_info.py"
    spec.write_bytes(spec.read_bytes().replace(b"    NGRAM = auto()\n", DDTREE, 1))
    code, out, _ = _run(capsys, "snapshot", "pull", "--path", str(patched))
    assert code == 0
    mine = out.strip()

    code, out, err = _run(capsys, "diff", f"path:{release}", "latest", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["b"]["snapshot_id"] == mine and report["a"]["snapshot_id"] != mine
    assert any(c["status"] == "added" and "DDTREE" in c["key"] for c in report["changes"]), report["changes"]
    assert "A: pulled" in err  # what each side's pull did, named by side
    assert _latest(capsys) == mine  # a diff side never becomes latest


def test_gc_keeps_the_newest_per_source_and_latest_and_drops_stale_facts(tmp_path, capsys):
    packages = [make_mini_package(tmp_path / name) for name in ("one", "two")]
    ids = {0: [], 1: []}
    for number in range(3):
        for which, package in enumerate(packages):
            (package / "srt/server_args.py").write_text(f"X = {number}{which}\n")  # every tree differs
            code, out, _ = _run(capsys, "snapshot", "pull", "--path", str(package))
            ids[which].append(out.strip())
    code, out, _ = _run(capsys, "snapshot", "pull", "--path", str(packages[0]), "--scope", "full")  # another source
    full = out.strip()
    # packs of the current analyzer build, for a stored tree and for a tree no longer stored
    store = Store(snapshots_dir())
    facts = facts_cache_dir() / signature(None)
    key_of = lambda snap_id: tree_key((e.path, e.sha256) for e in store.open(snap_id).manifest.files)  # noqa: E731
    (facts / "packs").mkdir(parents=True)
    (facts / "values").mkdir()
    kept_pack = facts / "packs" / f"{key_of(ids[0][2])}.pkl"
    gone_pack = facts / "packs" / f"{key_of(ids[0][0])}.pkl"
    gone_graph = facts / "values" / f"graph-2-{key_of(ids[1][1])}.pkl"
    gone_findings = facts / "values" / f"findings-1-{key_of(ids[1][1])}.pkl"
    kept_findings = facts / "values" / f"findings-1-{key_of(ids[0][2])}.pkl"
    stat_index = facts / "values" / "stat-0123456789abcdef01234567.pkl"
    other_build = facts_cache_dir() / "0123456789abcdef"
    (other_build / "files" / "ab").mkdir(parents=True)
    for path in (kept_pack, gone_pack, gone_graph, gone_findings, kept_findings, stat_index,
                 other_build / "files" / "ab" / "x.pkl"):
        path.write_bytes(b"x" * 100)
    obtain_snapshot({"snapshot_ref": ids[1][0]})  # the oldest of "two" is latest: never removed
    before = sorted(store.ids())

    code, out, _ = _run(capsys, "snapshot", "gc", "--keep", "1", "--dry-run")
    assert code == 0 and sorted(store.ids()) == before and gone_pack.exists() and other_build.exists()
    assert f"would remove snapshot {ids[0][0]}" in out and ids[1][0] not in out

    code, out, _ = _run(capsys, "snapshot", "gc", "--keep", "1")
    assert code == 0
    assert sorted(store.ids()) == sorted([ids[0][2], ids[1][2], ids[1][0], full])
    assert f"removed snapshot {ids[0][0]}" in out and f"removed snapshot {ids[1][1]}" in out
    assert "removed 3 snapshot(s)" in out
    assert (kept_pack.exists(), gone_pack.exists(), gone_graph.exists(), gone_findings.exists(), kept_findings.exists(),
            stat_index.exists(), other_build.exists()) == (True, False, False, False, True, True, False)
    assert "4 facts-cache entries" in out and "1 of other analyzer builds" in out
    blobs = {p.name for p in (store.root / ".blobs").iterdir()}
    used = {e.sha256 for snap_id in store.ids() for e in store.open(snap_id).manifest.files}
    assert blobs == used  # no blob left that nothing uses, none missing
    assert _latest(capsys) == ids[1][0]


def test_a_real_scan_pack_survives_gc_while_its_snapshot_is_stored(tmp_path, capsys):
    """The key gc computes for a stored snapshot is the key the analyzer packs its facts under."""
    package = make_mini_package(tmp_path / "p")
    code, _, err = _run(capsys, "scan", "--path", str(package))
    assert code in (0, 1), err
    packs = list((facts_cache_dir() / signature(None) / "packs").glob("*.pkl"))
    assert len(packs) == 1
    code, out, _ = _run(capsys, "snapshot", "gc", "--keep", "1")
    assert code == 0 and packs[0].exists() and "0 facts-cache entries" in out
    (package / "srt/server_args.py").write_text("X = 9\n")
    _run(capsys, "snapshot", "pull", "--path", str(package))
    code, out, _ = _run(capsys, "snapshot", "gc", "--keep", "1")
    assert code == 0 and not packs[0].exists() and "removed 1 snapshot(s)" in out
    assert os.listdir(snapshots_dir() / ".staging") == []
