"""`hivedlab grade`: help with examples, one-line errors, a batch, a student's self-check."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.grade_builders import make_run_dir


def test_help_has_examples(cli) -> None:
    result = cli("grade", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "hivedlab grade --self" in result.out


def test_a_missing_submissions_folder_is_a_one_line_usage_error(cli, tmp_path: Path) -> None:
    result = cli("grade", str(tmp_path / "nope"))
    assert result.code == 2
    assert result.err.startswith("hivedlab grade: error:") and result.err.count("\n") == 1


def test_a_bad_rubric_is_a_one_line_usage_error(cli, tmp_path: Path) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("version: 1\nitems: []\n")
    result = cli("grade", str(tmp_path), "--rubric", str(rubric))
    assert result.code == 2 and "not a valid rubric" in result.err and "Traceback" not in result.err


def test_a_bad_option_is_a_usage_error(cli, tmp_path: Path) -> None:
    assert cli("grade", str(tmp_path), "--jobs", "0").code == 2
    assert cli("grade", str(tmp_path), "--format", "xml").code == 2


def test_a_batch_writes_the_outputs_and_lists_folders_that_need_a_look(cli, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha", source="k8s")
    (subs / "broken").mkdir()
    out = tmp_path / "grades"
    result = cli("grade", str(subs), "--out", str(out), "--jobs", "1")
    assert result.code == 1  # a folder needs a look
    assert "needs a look" in result.out and "broken" in result.out.splitlines()[-1]
    assert (out / "grades.csv").is_file() and (out / "grades.md").is_file()
    assert json.loads((out / "groups" / "alpha" / "results.json").read_text())["tests"]


def test_self_check_shows_no_hidden_items(cli, tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "out")
    result = cli("grade", "--self", str(run_dir))
    assert result.code == 0
    assert "得分 / Score" in result.out and "Report claims supported" not in result.out
    assert "助教复核" not in result.out and "the TA reviews" not in result.out  # no hidden item counted either
    as_json_score = json.loads(cli("grade", "--self", str(run_dir), "--format", "json").out)["score"]
    assert f"**得分 / Score: {as_json_score:g} / 95**" in result.out  # the same score as Gradescope shows
    as_json = cli("grade", "--self", str(run_dir), "--format", "json")
    tests = json.loads(as_json.out)["tests"]
    assert tests and all(t["visibility"] == "visible" for t in tests)
    assert json.loads(as_json.out)["score"] == round(sum(t["score"] for t in tests), 2)


def test_self_check_of_a_missing_run_dir(cli, tmp_path: Path) -> None:
    result = cli("grade", "--self", str(tmp_path / "none"))
    assert result.code == 2 and "not a run directory" in result.err
