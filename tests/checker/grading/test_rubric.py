"""The rubric: the shipped default is valid and sums to 100; a bad rubric is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.checker.grading.rubric import DEFAULT_RUBRIC, load_rubric, rubric_from_mapping


def test_the_default_rubric_grades_the_five_experiments_out_of_100() -> None:
    rubric = load_rubric()
    assert rubric.source == str(DEFAULT_RUBRIC)
    assert rubric.max_points() == 100
    assert rubric.experiments == ("vc-safety", "priority", "opportunistic", "gang", "incremental")
    assert {i.check for i in rubric.items} == {"ran", "right-answer", "evidence-complete", "environment-table",
                                               "deployment-notes", "claims-supported"}
    assert any(i.hidden for i in rubric.items) and any(p.hidden for p in rubric.penalties)
    assert rubric.max_points(include_hidden=False) < 100
    assert {p.check for p in rubric.penalties} >= {"simulator-evidence", "broken-chain"}


def test_default_titles_are_filled_in_both_languages() -> None:
    rubric = rubric_from_mapping({"version": 1,
                                  "items": [{"id": "g", "check": "ran", "experiment": "gang", "points": 2}]})
    assert rubric.items[0].title.en == "gang: experiment run to the end"
    assert rubric.items[0].title.zh.startswith("gang")
    assert rubric.require_real_cluster is True and rubric.penalties == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": 1, "items": []}, "items"),
        ({"version": 1, "items": [{"id": "a", "check": "ran", "points": 1}]}, "experiment"),
        ({"version": 1, "items": [{"id": "a", "check": "deployment-notes", "points": 1, "experiment": "gang"}]},
         "items/0"),
        ({"version": 1, "items": [{"id": "a", "check": "telepathy", "points": 1}]}, "items/0/check"),
        ({"version": 1, "items": [{"id": "a", "check": "environment-table", "points": -1}]}, "items/0/points"),
        ({"version": 2, "items": [{"id": "a", "check": "environment-table", "points": 1}]}, "version"),
        ({"version": 1, "items": [{"id": "a", "check": "environment-table", "points": 1}],
          "penalties": [{"id": "a", "check": "forgery", "points": 1}]}, "used twice"),
        ("just text", "top level"),
    ],
)
def test_bad_rubrics_are_one_line_errors(data, message: str) -> None:
    with pytest.raises(HivedlabError) as caught:
        rubric_from_mapping(data, "r.yaml")
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith("r.yaml")


def test_unreadable_and_invalid_yaml_files(tmp_path: Path) -> None:
    with pytest.raises(HivedlabError, match=r"^rubric .*none.yaml: cannot read \(No such file"):
        load_rubric(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("items: [\n")
    with pytest.raises(HivedlabError, match="not valid YAML"):
        load_rubric(bad)


def test_the_rubric_schema_is_a_valid_json_schema() -> None:
    import json

    import jsonschema

    from hivedlab.checker.grading.rubric import RUBRIC_SCHEMA

    jsonschema.Draft202012Validator.check_schema(json.loads(RUBRIC_SCHEMA.read_text()))
