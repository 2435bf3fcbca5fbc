"""The rest-server reads YAML like js-yaml 3 (YAML 1.2); PyYAML reads YAML 1.1 (docs/openpai-model.md#yaml-dialect)."""

from __future__ import annotations

import math

import pytest

from hivedlab.models.openpai.js_yaml import Timestamp, YamlError, parse_yaml
from hivedlab.models.openpai.protocol import schema_issues


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"), ("no", "no"), ("on", "on"), ("Off", "Off"), ("y", "y"),
        ("true", True), ("FALSE", False), ("~", None), ("null", None), ("", None),
        ("017", 15), ("0x1F", 31), ("0b101", 5), ("1_000", 1000), ("1:30", 90), ("08", "08"),
        ("1e3", 1000.0), ("1.5", 1.5), (".inf", math.inf), ("-.Inf", -math.inf),
        ("'yes'", "yes"), ('"1e3"', "1e3"), ("!!str 1.0", "1.0"),
    ],
)
def test_plain_scalars_read_like_js_yaml(text, value):
    assert parse_yaml(f"v: {text}\n").data == {"v": value}


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "NO"])
def test_yaml11_booleans_stay_strings_and_are_flagged(word):
    parsed = parse_yaml(f"extras:\n  gangAllocation: {word}\n")
    assert parsed.data == {"extras": {"gangAllocation": word}}
    (note,) = parsed.dialect
    assert note.pointer == "/extras/gangAllocation"
    assert (note.line, note.col) == (2, 19)
    assert "true or false" in note.message


def test_numbers_pyyaml_reads_as_strings_are_flagged():
    parsed = parse_yaml("a: 1e3\nb: 1.0\n")
    assert parsed.data == {"a": 1000.0, "b": 1.0}
    assert [n.pointer for n in parsed.dialect] == ["/a"]


def test_quoted_values_are_never_flagged():
    assert parse_yaml("a: 'no'\nb: \"on\"\n").dialect == ()


def test_keys_become_strings_and_non_string_keys_are_flagged():
    parsed = parse_yaml("1: a\ntrue: b\n")
    assert parsed.data == {"1": "a", "true": "b"}
    assert len(parsed.dialect) == 2


def test_duplicate_keys_are_refused_with_the_second_keys_position():
    with pytest.raises(YamlError) as caught:
        parse_yaml("name: a\ntype: job\nname: b\n")
    assert (caught.value.line, caught.value.col) == (3, 1)
    assert "duplicated mapping key 'name'" in caught.value.message


def test_merge_keys_do_not_count_as_duplicates():
    parsed = parse_yaml("base: &b {cpu: 1, gpu: 1}\nr:\n  <<: *b\n  gpu: 2\n")
    assert parsed.data["r"] == {"cpu": 1, "gpu": 2}


def test_an_unquoted_date_is_an_object_for_the_schema():
    parsed = parse_yaml("protocolVersion: 2\nname: j\ntype: job\nversion: 2020-01-01\ntaskRoles: {}\n")
    assert isinstance(parsed.data["version"], Timestamp)
    assert any(i.pointer == "/version" and "date 2020-01-01" in i.message for i in schema_issues(parsed.data))


def test_several_documents_are_refused():
    with pytest.raises(YamlError):
        parse_yaml("a: 1\n---\nb: 2\n")


def test_unknown_tags_are_refused():
    with pytest.raises(YamlError, match="tag"):
        parse_yaml("a: !!python/name:os.system x\n")


def test_positions_point_at_keys():
    parsed = parse_yaml("taskRoles:\n  train:\n    commands:\n      - echo\n")
    assert parsed.positions["/taskRoles/train/commands"] == (3, 5)
    assert parsed.positions["/taskRoles/train/commands/0"] == (4, 9)


def test_an_alias_bomb_stops_at_the_node_budget():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    with pytest.raises(YamlError, match="expands to more than"):
        parse_yaml("\n".join(lines) + "\n")


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(YamlError, match="nesting"):
        parse_yaml("a: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(YamlError):
        parse_yaml("a: " + "[" * 5000 + "]" * 5000 + "\n")


def test_syntax_errors_have_a_position():
    with pytest.raises(YamlError) as caught:
        parse_yaml("a: [1, 2\nb: 3\n")
    assert caught.value.line > 0 and caught.value.message.startswith("YAML syntax error")
