"""The report's answers: every number is a cell of the report's tables, every comparison holds on them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hivedlab.trace.generator import generate, load_params
from hivedlab.trace.report import ReportInput, answers, markdown
from hivedlab.trace.run import TraceResult, replay

PARAMS = """\
jobs: 600
days: 6
servers:
  - {name: 2gpu, gpus: 2, count: 12, cpu: 12, memory_mb: 131072}
  - {name: 8gpu, gpus: 8, count: 6, cpu: 48, memory_mb: 524288}
vcs: 4
vc_weight_exponent: 1.0
gpus_per_job: {1: 0.7, 2: 0.1, 4: 0.1, 8: 0.08, 16: 0.02}
run_time_sigma: 1.5
run_time_min_s: 60
run_time_max_days: 3
offered_load: 0.8
weekly_burst_sigma: 0.6
"""
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> TraceResult:
    path = tmp_path_factory.mktemp("params") / "params.yaml"
    path.write_text(PARAMS, encoding="utf-8")
    workload = generate(load_params(path), seed=5)
    return replay(workload, ["fifo", "quota", "hived", "drf", "private"])


def _sections(text: str) -> tuple[str, str]:
    start = text.index("\n## ", text.index("\n## ") + 1)  # the section after the answers
    answers_part = text[text.index("\n## "):start]
    return answers_part, text[:text.index("\n## ")] + text[start:]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_number_of_the_answers_is_in_the_tables(result: TraceResult, lang: str) -> None:
    text = markdown(ReportInput(result.workload, result.cells, result.rows, []), lang)
    answer_text, rest = _sections(text)
    cells = set(NUMBER.findall(rest))
    sentences = [line for line in answer_text.splitlines() if line.startswith("- ")]
    assert len(sentences) >= 8
    for sentence in sentences:
        numbers = NUMBER.findall(sentence.replace("p95", ""))
        missing = [n for n in numbers if n not in cells]
        assert not missing, (sentence, missing)


def test_the_comparisons_hold_on_the_rows(result: TraceResult) -> None:
    first, second = answers(ReportInput(result.workload, result.cells, result.rows, []), "en")
    shared = {p: r for p, r in result.rows.items() if p != "private"}
    fastest = min(shared.values(), key=lambda r: r.delays.mean)
    assert f"Shortest mean wait: {_name(fastest.policy)}" in first[-1]
    key = {p: (len(r.anomalous_vcs), r.longer_jobs, -(r.worst_ratio or 0.0)) for p, r in shared.items()}
    chosen = [p for p in shared if key[p] == min(key.values())]
    assert len(chosen) == 1 and f"the choice is {_name(chosen[0])}:" in second[0]


def test_ties_are_named_as_ties() -> None:
    """A trace without contention: every policy alike; the answer says so instead of picking one by name."""
    from tests.trace.support import job, workload

    w = workload([job("j1", "a", 0, 1, 10), job("j2", "b", 5, 1, 10)], {"a": 0.5, "b": 0.5})
    quiet = replay(w, ["fifo", "quota", "hived", "drf", "private"])
    first, second = answers(ReportInput(quiet.workload, quiet.cells, quiet.rows, []), "en")
    assert "Shortest mean wait: FIFO / quota VCs / HiveD / DRF (0.0 min)" in first[-1]
    assert "does not tell FIFO / quota VCs / HiveD / DRF apart" in second[0]


def test_the_sample_trace_shows_contention(result: TraceResult) -> None:
    """Not a target: a check that the fixture exercises what the report compares."""
    assert result.rows["private"].delays.mean > 0
    assert result.rows["quota"].preemptions > 0 and result.rows["hived"].preemptions > 0


def _name(policy: str) -> str:
    from hivedlab.trace.report import NAMES

    return NAMES["en"][policy]


def test_assumptions_are_read_from_the_parameter_file() -> None:
    from hivedlab.trace.generator import default_params_text
    from hivedlab.trace.run import assumptions

    stated = assumptions(default_params_text())
    assert stated and all("assumption" in a.lower() for a in stated)
    assert any("offered_load" in a or "GPU time the trace asks for" in a for a in stated)


def test_report_folder_written(result: TraceResult, tmp_path: Path) -> None:
    from hivedlab.trace.run import write_output

    written = write_output(tmp_path / "en", result, "en", ["an assumption"], charts=True)
    names = sorted(p.relative_to(tmp_path / "en").as_posix() for p in written)
    assert names == ["charts/excess-per-vc.png", "charts/queuing-cdf.png", "charts/utilization.png", "report.en.md",
                     "report.html", "report.zh.md", "trace.json"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written if p.suffix == ".png")
    assert "an assumption" in (tmp_path / "en" / "report.en.md").read_text(encoding="utf-8")
    assert "](charts/queuing-cdf.png)" in (tmp_path / "en" / "report.zh.md").read_text(encoding="utf-8")
    write_output(tmp_path / "zh", result, "zh", [], charts=False)
    assert (tmp_path / "zh" / "fonts").is_dir()  # the zh page carries its CJK font
    assert '<html lang="zh">' in (tmp_path / "zh" / "report.html").read_text(encoding="utf-8")


def test_the_choice_on_the_scattered_quota_trace_is_hived() -> None:
    """The sharing anomaly by construction (tests/trace/test_known_answers.py): a's 8-GPU job waits 990 s for b's
    jobs under every shared policy but HiveD, which starts it at once; the answer chooses HiveD and names the VC."""
    from tests.trace.support import job, workload

    jobs = [job(f"b{i:02d}", "b", 0, 1, 5 if i % 2 else 1000) for i in range(16)] + [job("a-8gpu", "a", 10, 8, 100)]
    scattered = replay(workload(jobs, {"a": 0.5, "b": 0.5}), ["fifo", "quota", "hived", "drf", "private"])
    assert [p for p, r in scattered.rows.items() if p != "private" and not r.anomalous_vcs] == ["hived"]
    _, second = answers(ReportInput(scattered.workload, scattered.cells, scattered.rows, []), "en")
    assert "the choice is HiveD:" in second[0], second
