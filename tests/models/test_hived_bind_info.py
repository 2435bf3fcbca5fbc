"""HiveD's annotation texts (docs/hived-config-and-cells.md#the-pod-scheduling-spec): the pod scheduling spec, its
validation and the bind info."""

from __future__ import annotations

import pytest

from hivedlab.models.hived import BindInfo, MemberBindInfo, PodPlacement, PodRef, UserError, parse_spec
from hivedlab.models.hived_bind_info import dump_bind_info
from tests.support.hived_annotations import (
    CodecError,
    bind_info_from_dict,
    isolation_annotation,
    load_bind_info,
    spec_from_annotation,
)

PREFIX = "Pod annotation hivedscheduler.microsoft.com/pod-scheduling-spec: "
POD = PodRef("default", "p", "uid-1")


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_missing_or_empty_annotation(text: str | None) -> None:
    with pytest.raises(UserError) as info:
        spec_from_annotation(text)
    assert info.value.message == PREFIX + "Annotation does not exist or is empty"


def test_yaml_error_quotes_the_text_and_line() -> None:
    with pytest.raises(UserError) as info:
        spec_from_annotation("virtualCluster: [unclosed")
    assert info.value.message.startswith('Failed to unmarshal YAML "virtualCluster: [unclosed" to Object: '
                                         'yaml: line 1:')


def test_old_field_names_are_replaced_in_the_text() -> None:
    spec = spec_from_annotation("virtualCluster: default\npriority: 10\ngpuType: GPU\ngpuNumber: 2\n")
    assert spec == {"virtualCluster": "default", "priority": 10, "leafCellType": "GPU", "leafCellNumber": 2}
    assert spec_from_annotation is spec_from_annotation


def test_misspelled_key_means_non_positive_leaf_cell_number() -> None:
    spec = spec_from_annotation("virtualCluster: default\npriority: 10\nleafCellNum: 1\n")
    with pytest.raises(UserError) as info:
        parse_spec(POD, spec)
    assert info.value.message == PREFIX + "LeafCellNumber is non-positive"


def test_defaults_and_single_pod_group() -> None:
    spec = parse_spec(POD, spec_from_annotation("virtualCluster: vc1\npriority: null\nleafCellNumber: 2\n"))
    assert (spec.priority, spec.ignore_k8s_suggested_nodes, spec.lazy_preemption_enable) == (0, True, False)
    assert spec.group_name == "default/p" and spec.pod_numbers == {2: 1}


def test_members_with_the_same_leaf_cell_number_merge() -> None:
    spec = parse_spec(POD, {"virtualCluster": "v", "leafCellNumber": 1, "affinityGroup": {
        "name": "g", "members": [{"podNumber": 2, "leafCellNumber": 1}, {"podNumber": 1, "leafCellNumber": 1},
                                 {"podNumber": 1, "leafCellNumber": 4}]}})
    assert spec.pod_numbers == {1: 3, 4: 1}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"priority": 1}, "VirtualCluster is empty"),
        ({"virtualCluster": "v", "priority": -2, "leafCellNumber": 1}, "Priority is less than -1"),
        ({"virtualCluster": "v", "priority": 1001, "leafCellNumber": 1}, "Priority is greater than 1000"),
        ({"virtualCluster": "v", "leafCellNumber": 0}, "LeafCellNumber is non-positive"),
        ({"virtualCluster": "v", "leafCellNumber": 1, "affinityGroup": {"name": "", "members": []}},
         "AffinityGroup.Name is empty"),
        ({"virtualCluster": "v", "leafCellNumber": 1,
          "affinityGroup": {"name": "g", "members": [{"podNumber": 0, "leafCellNumber": 1}]}},
         "AffinityGroup.Members has non-positive PodNumber"),
        ({"virtualCluster": "v", "leafCellNumber": 1,
          "affinityGroup": {"name": "g", "members": [{"podNumber": 1, "leafCellNumber": 0}]}},
         "AffinityGroup.Members has non-positive LeafCellNumber"),
        ({"virtualCluster": "v", "leafCellNumber": 1,
          "affinityGroup": {"name": "g", "members": [{"podNumber": 1, "leafCellNumber": 2}]}},
         "AffinityGroup.Members does not contains current Pod"),
    ],
)
def test_validation_in_hived_order(spec: dict, message: str) -> None:
    with pytest.raises(UserError) as info:
        parse_spec(POD, spec)
    assert info.value.message == PREFIX + message


def test_wrong_scalar_type_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        parse_spec(POD, {"virtualCluster": "v", "priority": "high", "leafCellNumber": 1})
    assert "cannot unmarshal !!str `high` into int32" in info.value.message


INFO = BindInfo("carol", (0,), "GPU-NODE-POOL", (MemberBindInfo((
    PodPlacement("carol", (0,), ("GPU-NODE",)), PodPlacement("dan", (0,), ("GPU-NODE",)))),))


def test_bind_info_round_trip_in_hived_key_order() -> None:
    text = dump_bind_info(INFO)
    assert text.splitlines()[:4] == ["node: carol", "leafCellIsolation:", "- 0", "cellChain: GPU-NODE-POOL"]
    assert load_bind_info(text) == INFO
    assert bind_info_from_dict(INFO.to_dict()) == INFO
    assert isolation_annotation(BindInfo("n", (2, 3), "c", ())) == "2,3"


def test_bind_info_old_names() -> None:
    text = "node: n\ngpuIsolation: [1]\ncellChain: c\naffinityGroupBindInfo:\n- podPlacements:\n" \
           "  - physicalNode: n\n    physicalGpuIndices: [1]\n    preassignedCellTypes: ['']\n"
    info = load_bind_info(text)
    assert info.leaf_cell_isolation == (1,)
    assert info.affinity_group_bind_info[0].pod_placements[0].physical_leaf_cell_indices == (1,)


@pytest.mark.parametrize("text", ["", "node: [", "- 1\n- 2\n", "node: n\nleafCellIsolation: [a]\n"])
def test_bad_bind_info_is_one_clear_error(text: str) -> None:
    with pytest.raises(CodecError):
        load_bind_info(text)
