"""The job-protocol schema file and the messages that say what to change."""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import pytest

from hivedlab.models.openpai.protocol import SCHEMA_PATH, job_name_rule, job_schema, schema_issues, semantic_issues
from hivedlab.runner.turns import job_name_for

BASE = {
    "protocolVersion": 2, "name": "j", "type": "job",
    "prerequisites": [{"type": "dockerimage", "name": "img", "uri": "openpai/standard"}],
    "taskRoles": {"train": {"instances": 1, "dockerImage": "img",
                            "resourcePerInstance": {"gpu": 1, "cpu": 2, "memoryMB": 4096}, "commands": ["x"]}},
}


def _with(path, value):
    doc = copy.deepcopy(BASE)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def test_the_schema_file_is_a_valid_draft7_schema():
    jsonschema.Draft7Validator.check_schema(job_schema())
    assert schema_issues(BASE) == []


def test_regex_dollar_is_the_very_end_like_ecmascript():
    assert [i.pointer for i in schema_issues(_with(["name"], "job\n"))] == ["/name"]
    assert job_schema()["definitions"]["name"]["pattern"].endswith("$")  # the file stays ECMAScript


@pytest.mark.parametrize(
    ("path", "value", "pointer", "words"),
    [
        (["taskRoles", "train", "resourcePerInstance", "gpus"], 1,
         "/taskRoles/train/resourcePerInstance/gpus", "did you mean 'gpu'"),
        (["prerequisites", 0, "type"], "docker", "/prerequisites/0/type", "dockerimage, script, output, data"),
        (["prerequisites", 0, "auth"], {"username": 1}, "/prerequisites/0/auth/username", "must be a string"),
        (["extras"], {"hivedScheduler": {"jobPriorityClass": "crit"}}, "/extras/hivedScheduler/jobPriorityClass",
         '"prod", "test", "oppo"'),
        (["taskRoles", "train", "instances"], 0, "/taskRoles/train/instances", "at least 1"),
        (["jobRetryCount"], 1.5, "/jobRetryCount", "an integer"),
    ],
)
def test_schema_messages_say_what_to_change(path, value, pointer, words):
    issues = schema_issues(_with(path, value))
    assert [i.pointer for i in issues] == [pointer]
    assert words in issues[0].message


def test_hived_schema_issues_are_marked_as_such():
    (issue,) = schema_issues(_with(["extras"], {"hivedScheduler": {"taskRoles": {}}}))
    assert issue.stage == "hived_schema"


def test_semantic_messages_are_the_rest_servers():
    doc = _with(["defaults"], {"deployment": "prod"})
    doc["prerequisites"].append(dict(doc["prerequisites"][0]))
    assert [i.message for i in semantic_issues(doc)] == [
        "Duplicate dockerimage prerequisites img.", "Default deployment prod does not exist."]


def test_the_job_name_rule_is_the_schemas_and_job_names_keep_it() -> None:
    name = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["definitions"]["name"]
    rule = job_name_rule()
    assert f"^[{rule.characters}]+$" == name["pattern"]
    assert rule.max_length == name["maxLength"]
    made = job_name_for("job.config 1", "李 alice", "gang" * 100, "s1")
    assert re.fullmatch(name["pattern"], made) and len(made) == name["maxLength"]
