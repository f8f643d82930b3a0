"""Selection, suppression comments, baselines and the one filter step."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sgl_scan.errors import ConfigError
from sgl_scan.rules.baseline import read_baseline, write_baseline
from sgl_scan.rules.engine import run_rules
from sgl_scan.rules.filtering import FilterOptions, apply_filters
from sgl_scan.rules.registry import load_rules
from sgl_scan.rules.selection import Selection
from sgl_scan.rules.suppression import is_suppressed, suppressions_in
from tests.rules.inventories import EAGLE3, analysis, inventory, loc


@pytest.mark.parametrize(
    "select, ignore, expected",
    [
        ((), (), {"SGL101", "SGL102", "SGL103", "SGL201", "SGL202", "SGL203", "SGL204", "SGL205", "SGL206", "SGL207", "SGL208", "SGL209",
                  "SGL301", "SGL302"}),
        (("SGL3",), (), {"SGL301", "SGL302"}),
        (("SGL3",), ("SGL302",), {"SGL301"}),
        (("SGL301",), ("SGL3",), {"SGL301"}),
        (("SGL1,SGL205",), (), {"SGL101", "SGL102", "SGL103", "SGL205"}),
        (("d2t-site",), (), {"SGL103"}),
        ((), ("SGL1", "SGL2"), {"SGL301", "SGL302"}),
        (("sgl3",), ("sgl3",), set()),
    ],
)
def test_selection_most_specific_wins(select, ignore, expected):
    rules = load_rules()
    assert set(Selection.build(rules, select, ignore).rule_ids(rules)) == expected


def test_unknown_selector_is_a_usage_error():
    with pytest.raises(ConfigError, match="--ignore SGL9: no rule"):
        Selection.build(load_rules(), (), ("SGL9",))


def test_suppression_comments_are_real_comments_only():
    lines = [
        'if "d2t" in name:  # sgl-scan: ignore[SGL302]',
        'x = "# sgl-scan: ignore[SGL301]"',
        "y = 1  # SGL-SCAN: ignore[sgl301, SGL1]",
        "z = 2  # sgl-scan: ignore",
        "w = 3  # sgl-scan ignore[SGL301]",
    ]
    found = suppressions_in(lines)
    assert found == {1: frozenset({"SGL302"}), 3: frozenset({"SGL301", "SGL1"}), 4: frozenset({"*"})}
    assert is_suppressed("SGL302", 1, found)
    assert not is_suppressed("SGL301", 1, found)
    assert is_suppressed("SGL103", 3, found)
    assert is_suppressed("SGL205", 4, found)
    assert not is_suppressed("SGL301", 2, found)


def test_suppression_survives_a_file_that_does_not_tokenize():
    found = suppressions_in(['s = """never closed  # sgl-scan: ignore[SGL302]', "def f(:  # sgl-scan: ignore[SGL301]"])
    assert found[2] == frozenset({"SGL301"})


def test_filter_order_and_counts(tmp_path):
    findings = run_rules(analysis())
    baseline_file = write_baseline(tmp_path / "b.json", [f for f in findings if f.rule_id == "SGL202"][:1])
    options = FilterOptions(
        selection=Selection.build(load_rules(), ("SGL2", "SGL3"), ()),
        suppressions={EAGLE3: {182: frozenset({"SGL302"})}},
        baseline=read_baseline(baseline_file),
    )
    result = apply_filters(findings, options)
    assert result.counts() == {"reported": 1, "deselected": 6, "unchanged": 0, "suppressed": 1, "baselined": 1}
    assert [(f.rule_id, f.line) for f in result.kept] == [("SGL202", 321)]


def test_changed_lines_keep_findings_that_touch_them():
    findings = run_rules(analysis())
    member = next(f for f in findings if f.rule_id == "SGL101")
    spanning = dataclasses.replace(member, line=10, end_line=14)
    options = FilterOptions(changed_lines={member.path: frozenset({12}), EAGLE3: frozenset({184})})
    result = apply_filters([spanning] + [f for f in findings if f.path == EAGLE3], options)
    assert [(f.rule_id, f.line) for f in result.kept] == [("SGL101", 10), ("SGL103", 184)]
    assert len(result.unchanged) == 2


def test_baseline_round_trip_survives_a_line_move(tmp_path):
    before = run_rules(analysis())
    path = write_baseline(tmp_path / "nested" / "baseline.json", before)
    data = json.loads(path.read_text())
    assert data["baseline_version"] == 1 and len(data["findings"]) == len(before)

    inv = inventory()
    shifted = dataclasses.replace(
        inv,
        d2t_sites=tuple(dataclasses.replace(s, location=loc(EAGLE3, s.location.line + 30)) for s in inv.d2t_sites)
        + (dataclasses.replace(inv.d2t_sites[0], location=loc(EAGLE3, 500), detail='"t2d" in name'),),
    )
    after = run_rules(analysis(shifted))
    result = apply_filters(after, FilterOptions(baseline=read_baseline(path)))
    assert [(f.rule_id, f.line) for f in result.kept] == [("SGL103", 500), ("SGL302", 500)]
    assert len(result.baselined) == len(before)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        ("{not json", "not readable JSON"),
        ('{"baseline_version": 7, "findings": []}', "expected baseline_version 1"),
        ('{"baseline_version": 1, "findings": [{"rule_id": "SGL101"}]}', "must be a list of objects with a 'fingerprint'"),
    ],
)
def test_bad_baselines_are_configuration_errors(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        read_baseline(path)
    assert info.value.exit_code == 2


def test_findings_new_since_the_base_are_kept_off_the_changed_lines():
    findings = run_rules(analysis())
    old = frozenset(f.fingerprint for f in findings if f.rule_id != "SGL205")
    fresh = dataclasses.replace(findings[0], rule_id="SGL205", fingerprint="not-at-base", line=999)
    options = FilterOptions(changed_lines={EAGLE3: frozenset({184})}, previous=old)
    result = apply_filters([*findings, fresh], options)
    assert [(f.rule_id, f.line) for f in result.kept] == [("SGL103", 184), ("SGL205", 999)]


def test_suppression_counts_on_every_line_of_a_wrapped_statement_and_span():
    lines = [
        "if (",  # 1
        '    cfg.speculative_algorithm == "DSPARK"',  # 2
        "    and flag",  # 3
        "):  # sgl-scan: ignore[SGL202]",  # 4
        "    x = 1  # sgl-scan: ignore[SGL301]",  # 5
        "# sgl-scan: ignore[SGL103]",  # 6
        "y = 2",  # 7
    ]
    found = suppressions_in(lines)
    assert all(is_suppressed("SGL202", n, found) for n in (1, 2, 3, 4))
    assert not is_suppressed("SGL202", 5, found) and not is_suppressed("SGL301", 4, found)
    assert is_suppressed("SGL103", 6, found) and not is_suppressed("SGL103", 7, found)
    assert is_suppressed("SGL301", 3, found, end_line=5)  # a finding spanning 3-5
    assert not is_suppressed("SGL301", 3, found, end_line=4)


def _copies(*lines):
    """SGL103 findings for identical d2t statements at `lines` of a file whose text we control."""
    from sgl_scan.analyzer.model import D2tSite

    site = D2tSite("hot_token_use", loc(EAGLE3, 1), "W.f", "self.hot_token_id[i]")
    sites = tuple(dataclasses.replace(site, location=loc(EAGLE3, n)) for n in lines)
    return analysis(dataclasses.replace(inventory(), d2t_sites=sites))


def _text(*statements_at):
    """Source lines: distinct filler, with the statement text at the given lines."""
    lines = [f"filler_{n} = {n}" for n in range(1, 60)]
    for n in statements_at:
        lines[n - 1] = "        x = self.hot_token_id[i]"
    return lambda path: lines if path == EAGLE3 else None


def _sgl103(findings):
    return [f for f in findings if f.rule_id == "SGL103" and f.path == EAGLE3]


def test_a_new_copy_above_a_baselined_statement_is_reported_and_the_old_one_stays_baselined(tmp_path):
    before = _sgl103(run_rules(_copies(20), source_lines=_text(20)))
    baseline = read_baseline(write_baseline(tmp_path / "b.json", before))
    lines = list(_text(20)(EAGLE3))
    lines[9:9] = ["    if other:", "        x = self.hot_token_id[i]", "        pass"]  # a copy added above, at line 11
    after = _sgl103(run_rules(_copies(11, 23), source_lines=lambda p: lines))  # the old one moved down 3
    result = apply_filters(after, FilterOptions(baseline=baseline))
    assert [f.line for f in result.kept] == [11] and [f.line for f in result.baselined] == [23]
    assert result.baselined[0].fingerprint == before[0].fingerprint


def test_a_group_match_covers_an_edited_neighbour_but_never_a_surplus_copy(tmp_path):
    before = _sgl103(run_rules(_copies(20), source_lines=_text(20)))
    baseline = read_baseline(write_baseline(tmp_path / "b.json", before))
    edited = _text(20)
    lines = edited(EAGLE3)
    lines[18] = "filler_19 = 'edited'"  # the line above the statement
    moved = _sgl103(run_rules(_copies(20), source_lines=lambda p: lines))
    assert moved[0].fingerprint != before[0].fingerprint
    assert apply_filters(moved, FilterOptions(baseline=baseline)).kept == ()
    two = _sgl103(run_rules(_copies(20, 40), source_lines=lambda p: [*lines[:39], "        x = self.hot_token_id[i]", *lines[40:]]))
    assert len(apply_filters(two, FilterOptions(baseline=baseline)).kept) == 2  # which is new is unknown: both shown


def test_a_baseline_written_before_groups_still_matches_a_single_statement(tmp_path):
    legacy = _sgl103(run_rules(_copies(20)))  # no source text: the rule's own key, as older versions wrote
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"baseline_version": 1, "findings": [{"fingerprint": f.fingerprint} for f in legacy]}))
    now = _sgl103(run_rules(_copies(20), source_lines=_text(20)))
    assert apply_filters(now, FilterOptions(baseline=read_baseline(path))).kept == ()


def _finding(line: int, fingerprint: str, **data):
    from sgl_scan.rules.finding import Finding

    return Finding(rule_id="SGL202", severity="warning", message="m", path="sglang/srt/x.py", line=line, column=1,
                   end_line=line + 2, end_column=None, snapshot_id="s", data=data, hint=None, fingerprint=fingerprint,
                   group="G")


def test_check_comments_only_on_hazards_the_change_made():
    """A finding on a changed line whose hazard (site key + algorithm set) the diff base had is no
    comment (0.5.15 -> 0.5.16 re-reported an SGL206 when an argument line moved); a second finding of
    the same kind beside it (0.5.23 model_config.py:1022 next to :1052), or the same site reaching
    other algorithms, is the change's."""
    from sgl_scan.rules.hazard import BaseHazards

    base = [_finding(10, "fp-old", algorithms=["EAGLE"], literals=["EAGLE"])]
    moved = _finding(12, "fp-moved", algorithms=["EAGLE"], literals=["EAGLE"])  # neighbours edited: new fingerprint
    twin = _finding(30, "fp-twin", algorithms=["EAGLE"], literals=["EAGLE"])
    wider = _finding(50, "fp-wider", algorithms=["EAGLE", "EAGLE3"], literals=["EAGLE"])
    changed = {"sglang/srt/x.py": frozenset({13, 30, 51})}
    options = FilterOptions(changed_lines=changed, base_hazards=BaseHazards.of(base))
    result = apply_filters([moved, wider], options)
    assert [f.line for f in result.kept] == [50] and [f.line for f in result.unchanged] == [12]
    old = _finding(10, "fp-old", algorithms=["EAGLE"], literals=["EAGLE"])
    result = apply_filters([old, twin], FilterOptions(changed_lines={"sglang/srt/x.py": frozenset({10, 30})},
                                                      base_hazards=BaseHazards.of(base)))
    assert [f.line for f in result.kept] == [30]  # the old one keeps its fingerprint; the twin is new
    result = apply_filters([moved, twin], options)
    assert len(result.kept) == 2  # more than the base had and neither is the old one: both are shown
    assert [f.line for f in apply_filters([moved], FilterOptions(changed_lines=changed)).kept] == [12]  # lines alone
