"""Findings, the report of a run, and the catalogue of rule ids."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

ERROR, WARNING, NOTE = "error", "warning", "note"

# rule id -> what it checks (for --help, SARIF and the docs)
RULES: dict[str, str] = {
    "input-unreadable": "a path that cannot be read (missing, permission, not a file)",
    "file-too-large": "a file over the size limit (the work is bounded, the file is not read)",
    "file-binary": "a file that is not UTF-8 text",
    "file-empty": "an empty file or a document with nothing in it",
    "file-kind": "a YAML file that is neither a job, a HiveD config, a services configuration, an inventory nor an "
                 "experiment plan",
    "yaml-syntax": "YAML the rest-server's js-yaml refuses (syntax, duplicate keys, several documents, alias bombs)",
    "yaml-dialect": "a value YAML 1.1 (PyYAML) reads differently from YAML 1.2 (the rest-server), e.g. yes/no/on/off",
    "job-body-too-large": "a job over the rest-server's 100 kB body limit",
    "job-schema": "the rest-server's protocol schema (400 InvalidProtocolError)",
    "job-hived-schema": "the rest-server's HiveD schema of extras.hivedScheduler (400 InvalidProtocolError)",
    "job-semantic": "the rest-server's checks after the schema (400 InvalidProtocolError)",
    "job-unknown-vc": "a VC no HiveD config defines (403 ForbiddenUserError)",
    "job-hived": "the rest-server's HiveD checks: SKU types, SKU resources, affinity groups (400 or 500)",
    "job-quota": "a gang job over its VC's quota (400 InvalidProtocolError)",
    "job-instances": "a gang job without instances (HTTP 500 on submission)",
    "job-gang-allocation": "extras.gangAllocation that is not a boolean (HiveD and the Framework disagree)",
    "job-unknown-key": "a key the rest-server ignores (likely a typo)",
    "job-never-scheduled": "a job the rest-server accepts but HiveD will never schedule",
    "job-resources": "resource requests that are accepted but likely wrong",
    "hived-load": "HiveD v0.3.4 refuses the config at start-up "
                  "(docs/hived-config-and-cells.md#load-time-rules-and-errors)",
    "hived-skutypes": "skuTypes the rest-server cannot use (missing, memory parsed to 0, not integers)",
    "hived-cells": "physical cells HiveD accepts silently but wrongly (children count, duplicate nodes or ids)",
    "hived-vc": "virtual clusters HiveD accepts silently but wrongly (names, paths, pinned ids)",
    "services-config": "the hivedscheduler section of services-configuration.yaml",
    "inventory": "the group inventory",
    "manifest-schema": "a TFJob or PodGroup manifest against its kind's schema (docs/kubeflow-on-kubernetes.md)",
    "manifest-scheduler": "a pod template's schedulerName that is not the scheduler its PodGroup is for",
    "manifest-group": "a group-name annotation that names no PodGroup of the file, or a pod template without one",
    "manifest-min-member": "a PodGroup's minMember against the TFJob's replicas (more: never starts; fewer: partial)",
    "manifest-operator": "what tf-operator marks Failed without a pod (a Chief and a Master, two Evaluators, no "
                         "container named tensorflow) or drops (v1 fields in a v1beta1 TFJob)",
    "manifest-gpu": "nvidia.com/gpu limits: whole numbers, requests equal to limits",
    "plan": "an experiment plan `hivedlab run` refuses: the plan schema, a rule's parameters (an unknown key, a "
            "missing one, a wrong type), a job, VC or question the plan does not have (docs/experiment-plans.md)",
    "expected-rejection": "a file under a rejected/ folder that is accepted after all",
}


@dataclass(frozen=True)
class ValidationFinding:
    rule: str
    severity: str  # error | warning | note
    file: str
    line: int  # 1-based; 0 = the file as a whole
    col: int
    pointer: str  # JSON pointer into the document ("" = the document)
    message: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.line else self.file


@dataclass(frozen=True)
class Report:
    findings: tuple[ValidationFinding, ...]
    files: tuple[str, ...]  # files validated
    unreadable: bool = False  # some input could not be read (exit status 2)
    kinds: Mapping[str, str] = field(default_factory=dict)  # file -> job, hived, services, inventory, manifests, plan

    @property
    def errors(self) -> tuple[ValidationFinding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> tuple[ValidationFinding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    def exit_code(self, strict: bool = False) -> int:
        """0 no errors, 1 errors (or warnings when strict), 2 unreadable input."""
        if self.unreadable:
            return 2
        return 1 if self.errors or (strict and self.warnings) else 0


def locate(positions: Mapping[str, tuple[int, int]], pointer: str) -> tuple[int, int]:
    """The position of a pointer's key, or of its nearest ancestor present in the document."""
    probe = pointer
    while probe not in positions and probe:
        probe = probe.rsplit("/", 1)[0]
    return positions.get(probe, (1, 1))
