"""Grading a real simulated run (tests/fixtures/grade/base) and its tampered variants, with the real checker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.graded_runs import BASE, EXPERIMENTS, JUDGE, VARIANTS, grade, group, points


def test_the_variants_exist() -> None:
    assert (BASE / "run.json").is_file()
    assert len(list(VARIANTS.iterdir())) == 10


def test_a_genuine_simulated_run_raises_no_tamper_finding(tmp_path: Path) -> None:
    g = grade(group(tmp_path))
    assert [f for f in g.findings if f.kind in ("forgery", "chain", "foreign")] == []
    p = points(g)
    assert all(p[f"{exp}.ran"] == 3 for exp in EXPERIMENTS)
    assert p["-simulator"] == 40 and p["-chain"] == 0 and p["-forgery"] == 0 and p["-foreign-jobs"] == 0
    assert g.sources == ("sim",) * 5
    assert p["environment"] == 0  # no environment records on the simulator
    assert p["deployment"] == 0  # the template's placeholder only


def test_right_answers_follow_the_checkers_re_judgement(tmp_path: Path) -> None:
    if JUDGE is None:
        pytest.skip("hivedlab.checker.judging.verdicts is not available")
    root = group(tmp_path)
    g = grade(root)
    from hivedlab.evidence import read_evidence

    for exp in EXPERIMENTS:
        result = JUDGE(read_evidence(root / "experiments" / exp / "evidence.jsonl"), exp)
        answers = result.verdict["answers"]
        share = sum(a["verdict"] == "consistent" for a in answers) / len(answers)
        assert points(g)[f"{exp}.answer"] == pytest.approx(8 * share, abs=0.01), exp


@pytest.mark.parametrize(
    ("variant", "codes", "seq"),
    [
        ("chain-broken-at-record-7", {"chain-broken"}, 7),
        ("forged-rv-backwards", {"rv-backwards"}, None),
        ("forged-uid-reused", {"uid-reused"}, None),
        ("forged-no-hived-annotations", {"no-hived-annotations"}, None),
        ("foreign-node", {"unknown-node"}, None),
        ("foreign-priority", {"foreign-priority"}, None),
    ],
)
def test_each_tampered_log_is_caught(tmp_path: Path, variant: str, codes: set[str], seq: int | None) -> None:
    g = grade(group(tmp_path, variant))
    found = {f.code for f in g.findings if f.experiment == "priority" and f.kind in ("forgery", "chain", "foreign")}
    assert codes <= found
    assert all(f.experiment == "priority" for f in g.findings if f.kind in ("forgery", "chain", "foreign"))
    if seq is not None:
        assert next(f for f in g.findings if f.code in codes).seq == seq
    assert g.needs_look
    p = points(g)
    assert p["-chain"] + p["-forgery"] + p["-foreign-jobs"] > 0
    assert p["priority.evidence"] < 4


def test_a_truncated_log(tmp_path: Path) -> None:
    g = grade(group(tmp_path, "truncated-log"))
    assert points(g)["priority.ran"] == 1.5
    assert not [f for f in g.findings if f.kind == "chain"]  # a cut is not an edit
    if JUDGE is not None:  # the student is told what the checker missed
        answer = next(s for s in g.items if s.item.id == "priority.answer")
        assert "missing:" in answer.en and "缺少" in answer.zh


def test_an_overclaiming_report_is_flagged_with_the_contradicting_record(tmp_path: Path) -> None:
    g = grade(group(tmp_path, "claims-overclaimed"))
    fact = next(f for f in g.findings if f.code == "fact-contradicted")
    assert fact.experiment == "priority" and fact.seq is not None
    assert fact.where().startswith("experiments/priority/evidence.jsonl#seq=")
    assert points(g)["-unsupported"] > 0 and points(g)["claims"] < 5


def test_a_report_that_is_not_the_template_and_missing_files(tmp_path: Path) -> None:
    g = grade(group(tmp_path, "report-not-template"))
    assert "report-not-template" in {f.code for f in g.findings}
    g = grade(group(tmp_path, "missing-files"))
    codes = {f.code for f in g.findings}
    assert {"missing-file", "missing-evidence"} <= codes
    assert points(g)["gang.ran"] == 0 and points(g)["deployment"] == 0 and points(g)["claims"] == 0
