"""Manifests in the shape of the upstream examples (tf-operator v0.5's examples, the Kubeflow guides') get the real
programs' answer: what kubectl and tf-operator accept passes, what they refuse is an error, what tf-operator drops
without a word is a warning. Each file's first line names the expected findings (`# expect: SEVERITY:RULE ...` or
`# expect: -`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.checker.validate import validate_paths
from tests.support.paths import FIXTURES

UPSTREAM = sorted((FIXTURES / "validate" / "kubeflow-upstream").glob("*.yaml"))


def _expected(path: Path) -> set[tuple[str, str]]:
    first = path.read_text(encoding="utf-8").splitlines()[0].removeprefix("# expect: ")
    return {tuple(item.split(":", 1)) for item in first.split() if item != "-"}  # type: ignore[misc]


def test_every_rule_of_the_issue_has_an_example() -> None:
    assert {p.stem for p in UPSTREAM} >= {"dist-mnist", "generate-name", "trailing-separator", "gang-self-named",
                                          "two-chief-replicas", "chief-and-master", "no-tensorflow-container",
                                          "v1-field-in-v1beta1", "duplicate-key", "two-evaluators"}


@pytest.mark.parametrize("path", UPSTREAM, ids=lambda p: p.stem)
def test_an_upstream_example_gets_the_real_programs_answer(path: Path) -> None:
    report = validate_paths([path])
    assert {(f.severity, f.rule) for f in report.findings} == _expected(path)
    assert report.kinds.get(str(path)) in (None, "manifests")


def test_a_duplicate_key_points_at_its_second_use() -> None:
    path = FIXTURES / "validate" / "kubeflow-upstream" / "duplicate-key.yaml"
    (finding,) = validate_paths([path]).findings
    assert "duplicated mapping key 'replicas'" in finding.message
    assert path.read_text(encoding="utf-8").splitlines()[finding.line - 1].strip() == "replicas: 2"


def test_the_self_named_group_says_which_operator_flag_it_needs() -> None:
    (finding,) = validate_paths([FIXTURES / "validate" / "kubeflow-upstream" / "gang-self-named.yaml"]).findings
    assert "SyncPodGroup" in finding.message and "--enable-gang-scheduling=true" in finding.message


@pytest.mark.parametrize("stem, log", [("no-tensorflow-container", "There is no container named tensorflow in PS"),
                                       ("chief-and-master", "more than 1 chief/master found"),
                                       ("two-evaluators", "more than 1 evaluator found")])
def test_the_operators_refusal_is_worded_as_it_happens(stem: str, log: str) -> None:
    """kubectl creates the TFJob; tf-operator v0.5 marks it Failed (InvalidTFJobSpec) and logs why."""
    (finding,) = validate_paths([FIXTURES / "validate" / "kubeflow-upstream" / f"{stem}.yaml"]).findings
    assert "marks it Failed (InvalidTFJobSpec)" in finding.message and f'"{log}"' in finding.message
