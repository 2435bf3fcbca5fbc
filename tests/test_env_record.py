"""The one reader of an environment record: the schema's types kept, anything else dropped."""

from __future__ import annotations

from hivedlab.env_record import Clock, EnvRecord, env_record_from_json


def test_a_record_is_read_with_the_schemas_types() -> None:
    record = env_record_from_json({
        "member": "Carol", "hostname": "hostname-carol", "ip": "192.0.2.12", "os": "Ubuntu 18.04.5 LTS", "vcpus": 8,
        "gpus": {"model": "NVIDIA H200", "count": 1}, "driver_version": "550.54", "cuda_version": "12.4",
        "docker_version": "20.10.7", "docker_default_runtime": "nvidia", "openpai_version": None,
        "clock": {"ntp_synchronized": True, "offset_ms": 3, "source": "chronyc"}})
    assert record == EnvRecord("Carol", "hostname-carol", "192.0.2.12", "Ubuntu 18.04.5 LTS", 8, "NVIDIA H200", 1,
                               "550.54", "12.4", "20.10.7", "nvidia", None, Clock(True, 3.0))


def test_a_field_of_the_wrong_type_is_dropped_and_a_non_object_is_no_record() -> None:
    record = env_record_from_json({"member": 5, "vcpus": "8", "gpus": {"count": True}, "clock": {"offset_ms": "1"}})
    assert record == EnvRecord(clock=Clock())
    assert env_record_from_json({"gpus": [1]}) == EnvRecord()
    assert env_record_from_json(["Carol"]) is None
