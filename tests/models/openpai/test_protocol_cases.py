"""Every case of openpai-protocol-cases.yaml: the rest-server v1.2.0 verdicts, reproduced by admission and validate."""

from __future__ import annotations

import pytest

from hivedlab.checker.validate import ERROR
from hivedlab.checker.validate.jobs import check_job, prepare_target
from hivedlab.models.openpai import admission, hived_spec, js_yaml, protocol
from tests.support.fixture_yaml import fixture_yaml
from tests.support.paths import FIXTURES

FILE = FIXTURES / "spec" / "openpai-protocol-cases.yaml"
DOC = fixture_yaml(FILE)
CASES = DOC["cases"]
CONFIGS = DOC["hived_configs"]


def test_there_are_cases():
    assert CASES
    assert len({c["id"] for c in CASES}) == len(CASES)


def _document(case):
    if "protocol_yaml" in case:
        parsed = js_yaml.parse_yaml(case["protocol_yaml"])
        return parsed.data, parsed.positions
    return case["protocol"], {"": (1, 1)}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_admission_gives_the_recorded_reply(case):
    expected = case["expected"]
    body = case.get("protocol_yaml") or case["protocol"]
    config = CONFIGS[case["hived_config"]]
    if expected["valid"]:
        job = admission.admit_job(body, case["user"], config)
        assert job.name == case.get("protocol", {}).get("name", job.name)
        return
    with pytest.raises(admission.Rejection) as caught:
        admission.admit_job(body, case["user"], config)
    rejection = caught.value
    assert (rejection.stage, rejection.status, rejection.code or None) == (
        expected["stage"], expected["http_status"], expected["error_code"])
    if expected.get("message"):
        assert rejection.message == expected["message"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_validate_has_errors_exactly_when_the_rest_server_refuses(case):
    data, positions = _document(case)
    target = prepare_target(case["hived_config"], CONFIGS[case["hived_config"]])
    findings = check_job(data, positions, "job.yaml", [target], user=case["user"])
    errors = [f for f in findings if f.severity == ERROR]
    assert bool(errors) == (not case["expected"]["valid"]), [f.message for f in findings]
    if case["expected"].get("message"):
        assert any(case["expected"]["message"] in f.message for f in errors)


@pytest.mark.parametrize("case", [c for c in CASES if "hived_pod_spec" in c["expected"]],
                         ids=[c["id"] for c in CASES if "hived_pod_spec" in c["expected"]])
def test_pod_scheduling_specs_are_exactly_the_recorded_ones(case):
    data, _ = _document(case)
    specs = hived_spec.plan_hived(data, case["user"], CONFIGS[case["hived_config"]]).specs
    assert specs == case["expected"]["hived_pod_spec"]
    # js-yaml dumps the keys in this order (docs/openpai-model.md#the-spec-per-task-role)
    for role, spec in specs.items():
        assert list(spec) == list(case["expected"]["hived_pod_spec"][role])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_json_schema_alone_gives_the_recorded_verdict(case):
    data, _ = _document(case)
    assert (not protocol.schema_issues(data)) == case["expected"]["json_schema_valid"]
