"""OpenPAI v1.2.0 names of a job's Kubernetes objects (docs/openpai-model.md#framework-names)."""

from __future__ import annotations

import hashlib
import re

NAMESPACE = "default"
_NOT_ALNUM = re.compile(r"[^a-z0-9]")


TURN_MARK = "turn-"  # in a member's turn's job names, before the run tag (hivedlab.runner.turns.job_name_for)


def job_id(user: str, job_name: str) -> str:
    """`<user>~<job>`, the REST job id and the PAI_JOB_NAME of the containers."""
    return f"{user}~{job_name}"


def framework_name(user: str, job_name: str) -> str:
    """The Framework name: md5 hex of `user~job`.

    docs/openpai-model.md#framework-names: a name without `~` or starting with `unknown` is lower-cased with
    non-alphanumerics removed instead; that only happens for legacy jobs (user `unknown`), reproduced for completeness.
    """
    key = job_id(user, job_name)
    if "~" not in key or key.startswith("unknown"):
        return fc_name(key)
    return hashlib.md5(key.encode("utf-8")).hexdigest()


def fc_name(name: str) -> str:
    """FrameworkController's name for a task role: lower-cased, non-[a-z0-9] removed (`Worker_A` -> `workera`)."""
    return _NOT_ALNUM.sub("", name.lower())


def pod_name(framework: str, task_role: str, index: int) -> str:
    """`<frameworkName>-<fcTaskRoleName>-<taskIndex>`; a retried attempt keeps the name (new UID)."""
    return f"{framework}-{fc_name(task_role)}-{index}"


def configmap_name(framework: str) -> str:
    return f"{framework}-attempt"


def priority_class_name(framework: str) -> str:
    return f"{framework}-priority"


def scheduler_name(virtual_cluster: str) -> str:
    """OpenPAI runs one K8s default scheduler per VC, each with HiveD as its extender
    (docs/openpai-model.md#container-resources)."""
    return f"hivedscheduler-ds-{virtual_cluster}"


def k8s_priority(hived_priority: int, submit_epoch_s: int) -> int:
    """The pod's K8s priority value (docs/openpai-model.md#pods): higher HiveD priority first, then earlier
    submission."""
    clamped = max(-1, min(126, hived_priority))
    return -(((126 - clamped) << 23) + (submit_epoch_s & ((1 << 23) - 1)))
