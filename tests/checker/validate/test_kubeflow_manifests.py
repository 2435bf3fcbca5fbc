"""TFJob + PodGroup manifests: the shipped ones pass in both forms; each broken copy fails with the rule ids its
first line names (`# expect: RULE ...`); findings carry the key's line and JSON pointer like every other finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.checker.validate import ERROR, validate_paths
from hivedlab.models.kubeflow.manifests import FORMS
from tests.support.paths import FIXTURES, ROOT

SHIPPED = sorted((ROOT / "jobs" / "kubeflow").glob("*/*.yaml"))
BROKEN = sorted((FIXTURES / "validate" / "kubeflow").glob("*.yaml"))


def _expected(path: Path) -> set[str]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), path
    return set(first.removeprefix("# expect: ").split())


def test_both_forms_are_shipped_for_every_job_of_the_experiment():
    assert SHIPPED
    by_form = {form: {p.name for p in SHIPPED if p.parent.name == form} for form in FORMS}
    assert by_form["kube-batch"] == by_form["volcano"] == {
        "tfjob-gang-1.yaml", "tfjob-gang-2.yaml", "tfjob-deadlock-a.yaml", "tfjob-deadlock-b.yaml"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_shipped_manifest_passes(path):
    report = validate_paths([path])
    assert report.findings == ()
    assert report.kinds[str(path)] == "manifests"


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_a_broken_copy_fails_with_the_right_rule_ids(path):
    report = validate_paths([path])
    assert {f.rule for f in report.errors} == _expected(path)
    assert report.exit_code() == 1


def test_a_finding_points_at_the_key(tmp_path):
    path = FIXTURES / "validate" / "kubeflow" / "kube-batch-min-member-above-replicas.yaml"
    (finding,) = validate_paths([path]).errors
    lines = path.read_text(encoding="utf-8").splitlines()
    assert finding.pointer == "/0/spec/minMember"
    assert lines[finding.line - 1].strip().startswith("minMember: 5")
    assert "never starts" in finding.message


def test_a_min_member_below_the_replicas_is_a_partial_gang_warning(tmp_path):
    text = (ROOT / "jobs" / "kubeflow" / "kube-batch" / "tfjob-gang-1.yaml").read_text(encoding="utf-8")
    path = tmp_path / "partial.yaml"
    path.write_text(text.replace("minMember: 4", "minMember: 2"), encoding="utf-8")
    report = validate_paths([path])
    assert report.errors == ()
    assert [(f.rule, f.severity) for f in report.findings] == [("manifest-min-member", "warning")]


def test_another_kind_of_document_is_refused(tmp_path):
    path = tmp_path / "service.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n", encoding="utf-8")
    (finding,) = validate_paths([path]).findings
    assert (finding.rule, finding.severity, finding.pointer) == ("manifest-schema", ERROR, "/0")


def test_other_kubernetes_objects_found_by_a_walk_are_not_ours_to_judge(tmp_path):
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "service.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n", encoding="utf-8")
    report = validate_paths([folder])
    assert report.findings == () and report.kinds == {}
