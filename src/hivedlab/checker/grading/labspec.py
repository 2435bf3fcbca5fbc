"""What the lab prescribes, as the grader needs it: per experiment its HiveD config and its jobs' VC and priority.

Built from the experiment plans and the job files, so that a TA's sixth plan is graded like the five shipped ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_yaml
from hivedlab.models.openpai.hived_spec import PRIORITIES
from hivedlab.plans.loader import main_plans


@dataclass(frozen=True)
class ExpectedJob:
    key: str  # the plan's job key
    name: str  # protocol `name`
    virtual_cluster: str
    priority_class: str
    task_roles: tuple[tuple[str, int, int], ...]  # (protocol taskRole name, instances, gpu per instance)
    gang: bool
    known: bool = True  # False when the job file could not be read: submissions under this key are not compared

    @property
    def priority(self) -> int:
        return PRIORITIES.get(self.priority_class, PRIORITIES["test"])  # `test` when absent


@dataclass(frozen=True)
class ExperimentSpec:
    id: str
    order: int
    hived_config: str
    jobs: tuple[ExpectedJob, ...]  # what grading compares of each job file (the plan says which file)

    def job(self, key: str) -> ExpectedJob | None:
        return next((job for job in self.jobs if job.key == key), None)

    @property
    def virtual_clusters(self) -> frozenset[str]:
        return frozenset(job.virtual_cluster for job in self.jobs if job.known)

    @property
    def priorities(self) -> frozenset[int]:
        return frozenset(job.priority for job in self.jobs if job.known)

    @property
    def complete(self) -> bool:
        """Whether every job file was read (otherwise pod-level VC/priority checks would misfire)."""
        return all(job.known for job in self.jobs)


@dataclass(frozen=True)
class LabSpec:
    experiments: tuple[ExperimentSpec, ...]

    def get(self, experiment: str) -> ExperimentSpec | None:
        return next((exp for exp in self.experiments if exp.id == experiment), None)


def expected_job(key: str, protocol: Mapping[str, Any]) -> ExpectedJob:
    """Read what grading compares from a job protocol (parsed YAML)."""
    raw_defaults = protocol.get("defaults")
    defaults: Mapping[str, Any] = raw_defaults if isinstance(raw_defaults, Mapping) else {}
    raw_extras = protocol.get("extras")
    extras: Mapping[str, Any] = raw_extras if isinstance(raw_extras, Mapping) else {}
    raw_hived = extras.get("hivedScheduler")
    hived: Mapping[str, Any] = raw_hived if isinstance(raw_hived, Mapping) else {}
    raw_roles = protocol.get("taskRoles")
    roles: Mapping[str, Any] = raw_roles if isinstance(raw_roles, Mapping) else {}
    task_roles = []
    for name, role in roles.items():
        role = role if isinstance(role, Mapping) else {}
        raw_resources = role.get("resourcePerInstance")
        resources: Mapping[str, Any] = raw_resources if isinstance(raw_resources, Mapping) else {}
        task_roles.append((str(name), _int(role.get("instances"), 1), _int(resources.get("gpu"), 0)))
    return ExpectedJob(
        key=key,
        name=str(protocol.get("name", "")),
        virtual_cluster=str(defaults.get("virtualCluster") or "default"),
        priority_class=str(hived.get("jobPriorityClass") or "test"),
        task_roles=tuple(task_roles),
        # only a YAML false turns gang off (docs/openpai-model.md#gang-allocation-and-affinity-groups)
        gang=extras.get("gangAllocation", True) is not False,
    )


def unknown_job(key: str) -> ExpectedJob:
    return ExpectedJob(key=key, name=key, virtual_cluster="", priority_class="", task_roles=(), gang=True, known=False)


def lab_spec_from_plans(plans: Iterable[Any], read_protocol: Callable[[Path], Any]) -> LabSpec:
    """Build the lab spec from `hivedlab.plans.loader.Plan`-like objects (id, order, hived_config,
    jobs{key: .path}); `read_protocol(path)` parses a job file or raises HivedlabError (that job is then
    unknown)."""
    experiments = []
    for plan in plans:
        jobs = []
        for key, job in plan.jobs.items():
            try:
                protocol = read_protocol(job.path)
            except HivedlabError:
                protocol = None
            jobs.append(expected_job(key, protocol) if isinstance(protocol, Mapping) else unknown_job(key))
        experiments.append(ExperimentSpec(plan.id, plan.order, plan.hived_config, tuple(jobs)))
    return LabSpec(tuple(sorted(experiments, key=lambda e: (e.order, e.id))))


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def shipped_lab() -> LabSpec:
    """The lab as the shipped plans (labs/experiments) and job files describe it."""
    return lab_spec_from_plans(main_plans(), read_yaml)
