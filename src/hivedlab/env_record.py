"""An environment record (`hivedlab env`, configs/schemas/environment-record.schema.json): the one typed reader.

The report prints it, `hivedlab deploy-inputs` checks the workers against the inventory, `hivedlab doctor` compares
the members' clocks and the grader reads the hardware and the environment table from it. Reading is tolerant (a
grader reads forged files, doctor partial ones): a field that is missing or of the wrong type is None, never trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    """The machine's clock when the record was written."""

    ntp_synchronized: bool | None = None
    offset_ms: float | None = None


@dataclass(frozen=True)
class EnvRecord:
    """The fields of a record that hivedlab reads, each as the schema types it (None: missing or of another type)."""

    member: str | None = None
    hostname: str | None = None
    ip: str | None = None
    os: str | None = None
    vcpus: int | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    docker_version: str | None = None
    docker_default_runtime: str | None = None
    openpai_version: str | None = None
    clock: Clock | None = None


def env_record_from_json(data: object) -> EnvRecord | None:
    """The record in parsed JSON; None when `data` is not a record at all (not an object)."""
    if not isinstance(data, Mapping):
        return None
    gpus = data.get("gpus")
    gpus = gpus if isinstance(gpus, Mapping) else {}
    clock = data.get("clock")
    return EnvRecord(
        member=_text(data.get("member")),
        hostname=_text(data.get("hostname")),
        ip=_text(data.get("ip")),
        os=_text(data.get("os")),
        vcpus=_int(data.get("vcpus")),
        gpu_model=_text(gpus.get("model")),
        gpu_count=_int(gpus.get("count")),
        driver_version=_text(data.get("driver_version")),
        cuda_version=_text(data.get("cuda_version")),
        docker_version=_text(data.get("docker_version")),
        docker_default_runtime=_text(data.get("docker_default_runtime")),
        openpai_version=_text(data.get("openpai_version")),
        clock=_clock(clock) if isinstance(clock, Mapping) else None,
    )


def _clock(data: Mapping[str, object]) -> Clock:
    synced, offset = data.get("ntp_synchronized"), data.get("offset_ms")
    return Clock(synced if isinstance(synced, bool) else None,
                 float(offset) if isinstance(offset, int | float) and not isinstance(offset, bool) else None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
