"""`hivedlab report` from the command line: help, bad arguments, a happy path, and refusing to lose free text."""

from __future__ import annotations

import json


def test_help_has_examples(cli):
    result = cli("report", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "hivedlab report out --lang en" in result.out


def test_bad_language_is_a_usage_error(cli, run_dir):
    result = cli("report", str(run_dir), "--lang", "fr")
    assert result.code == 2 and "invalid choice" in result.err


def test_missing_run_dir_is_one_line(cli, tmp_path):
    result = cli("report", str(tmp_path / "nope"))
    assert result.code == 2
    assert result.err.strip().count("\n") == 0 and result.err.startswith("hivedlab report: error: ")


def test_happy_path_writes_the_three_files(cli, run_dir, tmp_path, quick_charts):
    out = tmp_path / "report-out"
    result = cli("report", str(run_dir), "--lang", "en", "--out", str(out))
    assert result.code == 0, result.err
    assert "report:" in result.out
    for name in ("report.md", "report.html", "claims.json"):
        assert (out / name).is_file()
    assert json.loads((out / "claims.json").read_text(encoding="utf-8"))["lang"] == "en"


def test_inconclusive_experiments_are_listed(cli, run_dir, quick_charts):
    path = run_dir / "experiments" / "gang" / "verdicts.json"
    verdict = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**verdict, "verdict": "inconclusive", "missing": ["no pods"]}), encoding="utf-8")
    result = cli("report", str(run_dir))
    assert result.code == 0
    assert "无法判断的实验：gang" in result.out


def test_a_log_without_verdicts_is_judged_from_its_evidence(cli, run_dir, quick_charts):
    (run_dir / "experiments" / "gang" / "verdicts.json").unlink()
    result = cli("report", str(run_dir), "--lang", "en")
    assert result.code == 0 and "inconclusive" not in result.out
    assert "note: experiments/gang/evidence.jsonl had no verdicts.json or an older one: judged again and written" \
        in result.err  # written as `hivedlab run` writes it: what `hivedlab grade` reads
    assert json.loads((run_dir / "experiments" / "gang" / "verdicts.json").read_text(encoding="utf-8"))["verdict"] \
        == "consistent"
    gang = next(e for e in json.loads((run_dir / "claims.json").read_text(encoding="utf-8"))["experiments"]
                if e["id"] == "gang")
    assert gang["verdict"] == "consistent" and [a["question"] for a in gang["answers"]] == [0, 1]


def test_a_foreign_report_md_is_never_overwritten(cli, run_dir):
    mine = "# Our own report\n\nWritten by hand.\n"
    (run_dir / "report.md").write_text(mine, encoding="utf-8")
    result = cli("report", str(run_dir))
    assert result.code == 2 and "not a hivedlab report" in result.err
    assert (run_dir / "report.md").read_text(encoding="utf-8") == mine


def test_broken_markers_leave_the_report_untouched(cli, run_dir):
    broken = "# mine\n<!-- hivedlab:free-text deploy -->\nhalf-written notes, no closing marker\n"
    (run_dir / "report.md").write_text(broken, encoding="utf-8")
    result = cli("report", str(run_dir))
    assert result.code == 2 and "never closed" in result.err
    assert (run_dir / "report.md").read_text(encoding="utf-8") == broken
    assert not (run_dir / "report.html").exists()
