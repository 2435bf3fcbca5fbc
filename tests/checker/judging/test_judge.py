"""The one judge: a log read whole (`judge_evidence`, the grader's) and a log streamed (`judge_file`, `hivedlab
check`'s) get the same verdict, which names the log by its place in the run, never by where the judge found it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hivedlab.checker.judging.judge import judge_evidence, judge_file, to_json
from hivedlab.evidence import read_evidence
from tests.support.paths import FIXTURES


def test_a_log_read_from_an_absolute_path_is_named_within_its_run(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURES / "report" / "run-sim", tmp_path / "run")
    log = (run / "experiments" / "gang" / "evidence.jsonl").resolve()
    verdict = judge_evidence(read_evidence(log), "gang").verdict
    assert verdict["log"]["path"] == "experiments/gang/evidence.jsonl"
    assert str(tmp_path) not in json.dumps(verdict, ensure_ascii=False)
    assert verdict == to_json(judge_file(log, "gang"))
