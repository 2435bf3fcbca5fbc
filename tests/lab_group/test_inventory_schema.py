"""The group-inventory contract (configs/schemas/group-inventory.schema.json) agrees with the shipped example and
with the validator's verdicts on the shapes it covers."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from hivedlab.basics.resources import GROUP_EXAMPLE, SCHEMAS

SCHEMA = json.loads((SCHEMAS / "group-inventory.schema.json").read_text(encoding="utf-8"))


def test_shipped_example_follows_the_schema():
    jsonschema.validate(yaml.safe_load(GROUP_EXAMPLE.read_text(encoding="utf-8")), SCHEMA)


BAD = {
    "no members": {"group": "g"},
    "empty members": {"members": []},
    "unknown role": {"members": [{"name": "A", "roles": ["gpu-box"]}]},
    "upper-case hostname": {"members": [{"name": "A", "roles": ["worker"], "hostname": "Carol-PC"}]},
    "user with a dash": {"members": [{"name": "A", "user": "a-b", "roles": ["master"]}]},
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_schema_and_validator_both_refuse(case, tmp_path, cli):
    data = BAD[case]
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)), case
    path = tmp_path / "group.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = cli("validate", str(path))
    assert result.code == 1, result.out + result.err
