"""Every configLoadCases entry of hived-cases.yaml: HiveD v0.3.4's load verdict, through the validator."""

from __future__ import annotations

import pytest

from hivedlab.checker.validate import ERROR
from hivedlab.checker.validate.hived import check_hived_config
from tests.support.fixture_yaml import fixture_yaml
from tests.support.paths import FIXTURES

FILE = FIXTURES / "validate" / "hived-config-load-cases.yaml"
CASES = fixture_yaml(FILE)["cases"]


def test_there_are_cases():
    assert CASES


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hived_load_errors_exactly_when_hived_panics(case):
    findings = check_hived_config(case["config"], {"": (1, 1)}, "hived.yaml")
    load = [f for f in findings if f.rule == "hived-load"]
    assert all(f.severity == ERROR for f in load)
    if case["load"]["result"] == "ok":
        assert not load, [f.message for f in load]
    else:
        assert len(load) == 1
        if case["load"]["message"]:
            assert case["load"]["message"] in load[0].message
