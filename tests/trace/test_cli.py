"""`hivedlab trace`: the output folder and its rules, bad input (one line each, exit 2 where unreadable), json."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

PHILLY = ROOT / "tests" / "fixtures" / "trace" / "philly"
SMALL = ("--jobs", "150", "--no-charts")


def test_help_has_examples(cli: Callable[..., Any]) -> None:
    result = cli("trace", "--help")
    assert result.code == 0 and "examples:" in result.out and "--philly" in result.out


def test_generated_trace_writes_the_report(cli: Callable[..., Any], tmp_path: Path) -> None:
    out = tmp_path / "t"
    result = cli("trace", *SMALL, "--out", str(out), "--lang", "en")
    assert result.code == 0, result.err
    assert sorted(p.name for p in out.iterdir()) == ["report.en.md", "report.html", "report.zh.md", "trace.json"]
    data = json.loads((out / "trace.json").read_text(encoding="utf-8"))
    assert data["kind"] == "hivedlab-trace" and data["jobs"] == 150
    assert list(data["policies"]) == ["fifo", "quota", "hived", "drf", "private"]
    assert "HiveD" in result.out


def test_same_seed_same_report_other_seed_other_trace(cli: Callable[..., Any], tmp_path: Path) -> None:
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert cli("trace", *SMALL, "--seed", seed, "--policies", "fifo", "--out", str(tmp_path / name)).code == 0
    text = {n: (tmp_path / n / "report.en.md").read_text(encoding="utf-8") for n in "abc"}
    assert text["a"] == text["b"] != text["c"]


def test_folder_rules_refuse_other_output_and_replace_moves_aside(cli: Callable[..., Any], tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "verdicts.json").write_text("{}", encoding="utf-8")
    result = cli("trace", *SMALL, "--policies", "fifo", "--out", str(other))
    assert result.code == 2 and "another kind of output" in result.err
    assert sorted(p.name for p in other.iterdir()) == ["verdicts.json"]
    out = tmp_path / "t"
    assert cli("trace", *SMALL, "--policies", "fifo", "--out", str(out)).code == 0
    again = cli("trace", *SMALL, "--policies", "fifo", "--out", str(out))
    assert again.code == 2 and "--replace" in again.err
    replaced = cli("trace", *SMALL, "--policies", "fifo", "--out", str(out), "--replace")
    assert replaced.code == 0
    aside = list((out / "replaced").iterdir())
    assert len(aside) == 1 and (aside[0] / "trace.json").is_file() and (out / "trace.json").is_file()


def test_philly_files_replay_and_left_out_jobs_are_named(cli: Callable[..., Any], tmp_path: Path) -> None:
    out = tmp_path / "t"
    result = cli("trace", "--philly", str(PHILLY / "cluster_job_log"), "--machines",
                 str(PHILLY / "cluster_machine_list"), "--no-charts", "--out", str(out), "--lang", "en")
    assert result.code == 0, result.err
    assert "application_1506638472019_20002: cluster_job_log record 2: no attempt" in result.err
    report = (out / "report.en.md").read_text(encoding="utf-8")
    assert "2 jobs replayed, 3 left out" in report
    assert "- 1 × cluster_job_log record 3: end_time is None (still running when the trace was taken)" in report


def test_bad_records_one_line_each_rest_replayed(cli: Callable[..., Any], tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("job,vc,user,submit_time,gpus,duration\n"
                     "j1,a,u,0,1,60\n"
                     "j2,a,u,1,x,60\n"
                     "j3,a,u,2,4096,60\n"
                     "j4,ghost,u,3,1,60\n"
                     "j5,b,u,4,2,60\n", encoding="utf-8")
    shares = tmp_path / "shares.yaml"
    shares.write_text("a: 1\nb: 1\n", encoding="utf-8")
    result = cli("trace", "--csv", str(trace), "--shares", str(shares), "--no-charts", "--out", str(tmp_path / "t"))
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if "left out" in line]
    assert lines == [
        "剔除 / left out: j2: trace.csv line 3: gpus is not a whole number: 'x'",
        "剔除 / left out: j3: asks for more GPUs than the cluster can place (2490 GPUs)",
        "剔除 / left out: j4: VC ghost has no share",
    ]
    data = json.loads((tmp_path / "t" / "trace.json").read_text(encoding="utf-8"))
    assert data["jobs"] == 2 and data["left_out"] == 3


def test_unreadable_input_exits_2_with_one_line(cli: Callable[..., Any], tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("job,vc,user,submit_time,gpus,duration\n", encoding="utf-8")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("job,vc,user,submit_time,gpus,duration\nj1,vc1,jos\u00e9,0,1,60\n".encode("latin-1"))
    shares = tmp_path / "shares.yaml"
    shares.write_bytes("vc1: 1  # jos\u00e9\n".encode("latin-1"))
    cases = {
        "not utf-8 csv": (["--csv", str(latin)], "latin.csv: not UTF-8 text"),
        "not utf-8 params": (["--params", str(shares)], "shares.yaml: not UTF-8 text"),
        "not utf-8 shares": (["--csv", str(empty), "--shares", str(shares)], "shares.yaml: not UTF-8 text"),
        "missing": (["--csv", str(tmp_path / "nope.csv")], "nope.csv: no such file"),
        "empty": (["--csv", str(empty)], "no job to replay (it is empty)"),
        "not json": (["--philly", str(empty)], "not a JSON array"),
        "policy": (["--policies", "lottery"], "unknown lottery"),
    }
    for name, (args, message) in cases.items():
        result = cli("trace", *args, "--out", str(tmp_path / "t"))
        assert result.code == 2, name
        assert len(result.err.strip().splitlines()) == 1 and message in result.err, (name, result.err)


def test_json_format(cli: Callable[..., Any], tmp_path: Path) -> None:
    result = cli("trace", *SMALL, "--policies", "quota,private", "--format", "json", "--out", str(tmp_path / "t"))
    data = json.loads(result.out)
    assert list(data["policies"]) == ["quota", "private"]
    assert data["policies"]["quota"]["delays"]["count"] == 150
