"""Checks of TFJob + PodGroup manifests (docs/kubeflow-on-kubernetes.md): each document against its kind's schema,
then what tf-operator itself refuses or drops, then what makes a gang job work: the scheduler each pod template
names, every group-name annotation naming a PodGroup of the file (or the TFJob itself, whose PodGroup tf-operator
v0.5 makes), `minMember` against the replicas, and the GPU limits."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import jsonschema

from hivedlab.basics.files import read_json
from hivedlab.basics.resources import SCHEMAS
from hivedlab.checker.validate.validation_findings import ERROR, NOTE, WARNING, ValidationFinding, locate
from hivedlab.models.kubeflow.manifests import (
    DEFAULT_SCHEDULER,
    FORM_BY_GROUP,
    GPU,
    GROUP_ANNOTATION,
    Manifests,
    pod_templates,
)

SCHEMA_FILES = {"TFJob": "tfjob.schema.json", "PodGroup": "podgroup.schema.json"}
GANG_SCHEDULERS = {form.scheduler for form in FORM_BY_GROUP.values()}
TF_CONTAINER = "tensorflow"  # tf-operator's DefaultContainerName (pkg/apis/tensorflow/v1beta1/constants.go)
CHIEF_TYPES = ("Chief", "Master")  # v1beta1.IsChieforMaster
V1_ONLY_FIELDS = ("runPolicy", "successPolicy", "enableDynamicWorker")  # the training operator v1's TFJobSpec only


@functools.cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(read_json(SCHEMAS / SCHEMA_FILES[kind]))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Out:
    def __init__(self, file: str, manifests: Manifests) -> None:
        self.file, self.positions = file, manifests.positions
        self.items: list[ValidationFinding] = []

    def add(self, rule: str, severity: str, pointer: str, message: str) -> None:
        line, col = locate(self.positions, pointer)
        self.items.append(ValidationFinding(rule, severity, self.file, line, col, pointer, message))


def check_manifests(manifests: Manifests, file: str) -> list[ValidationFinding]:
    """Every finding for one manifest file."""
    out = _Out(file, manifests)
    valid: dict[int, dict[str, Any]] = {}
    for index, doc in enumerate(manifests.documents):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in SCHEMA_FILES:
            what = f"a {kind}" if kind else "without a kind"
            out.add("manifest-schema", ERROR, f"/{index}",
                    f"document {index + 1} is {what}: a job's manifest file holds a TFJob and its PodGroup only")
            continue
        errors = sorted(_validator(str(kind)).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for error in errors:
            where = "".join(f"/{_escape(str(p))}" for p in error.absolute_path)
            out.add("manifest-schema", ERROR, f"/{index}{where}", f"{kind}: {error.message}")
        if not errors:
            valid[index] = doc
    tfjobs = {i: d for i, d in valid.items() if d["kind"] == "TFJob"}
    if not tfjobs and len(valid) == len(manifests.documents):
        out.add("manifest-group", WARNING, "", "no TFJob in this file: its PodGroups group no pods")
    by_name = {name: (i, d) for i, d in enumerate(manifests.documents) if isinstance(d, dict)
               and d.get("kind") == "PodGroup" and isinstance(name := (d.get("metadata") or {}).get("name"), str)}
    used: set[str] = set()
    for index, tfjob in tfjobs.items():
        _check_operator(index, tfjob, out)
        used |= _check_tfjob(index, tfjob, by_name, out)
    for name, (index, _) in by_name.items():
        if name not in used and tfjobs:
            out.add("manifest-group", WARNING, f"/{index}/metadata/name",
                    f"no pod template of this file names PodGroup {name} in {GROUP_ANNOTATION}")
    return out.items


def _check_tfjob(index: int, tfjob: dict[str, Any], groups: Mapping[str, tuple[int, dict[str, Any]]],
                 out: _Out) -> set[str]:
    """The TFJob's scheduler, group annotations, replicas against minMember and GPU limits; returns the groups used."""
    named: dict[str, int] = {}
    whole = True  # every replica names a PodGroup of the file: only then is minMember compared
    own = (tfjob.get("metadata") or {}).get("name")
    for role, spec in pod_templates(tfjob):
        base = f"/{index}/spec/tfReplicaSpecs/{_escape(role)}"
        count = int(spec.get("replicas", 1))
        template = spec["template"]
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        group = annotations.get(GROUP_ANNOTATION)
        scheduler = template["spec"].get("schedulerName", DEFAULT_SCHEDULER)
        whole = whole and group in groups
        if group is None and groups:
            out.add("manifest-group", ERROR, f"{base}/template/metadata",
                    f"{role}'s pods carry no {GROUP_ANNOTATION} annotation: the gang scheduler does not count them in "
                    f"PodGroup {', '.join(groups)}")
        elif group is not None and group == own and group not in groups:
            out.add("manifest-group", NOTE, f"{base}/template/metadata/annotations/{_escape(GROUP_ANNOTATION)}",
                    f"{role}'s pods name PodGroup {group!r}, the TFJob's own name: tf-operator v0.5 makes that "
                    "PodGroup itself (SyncPodGroup, minMember = every replica) only when started with "
                    "--enable-gang-scheduling=true")
        elif group is not None and group not in groups:
            known = ", ".join(groups) or "none in this file"
            out.add("manifest-group", ERROR, f"{base}/template/metadata/annotations/{_escape(GROUP_ANNOTATION)}",
                    f"{role}'s pods name PodGroup {group!r}, which this file does not define (PodGroups: {known})")
        elif group is not None:
            named[group] = named.get(group, 0) + count
            _check_scheduler(role, scheduler, groups[group][1], f"{base}/template/spec", out)
        if group is None and not groups and scheduler in GANG_SCHEDULERS:
            out.add("manifest-scheduler", WARNING, f"{base}/template/spec/schedulerName",
                    f"{role} asks for {scheduler} without a PodGroup in this file: only an operator started with "
                    "--enable-gang-scheduling makes one")
        for c, container in enumerate(template["spec"]["containers"]):
            _check_gpu(role, container, f"{base}/template/spec/containers/{c}", out)
    for group, members in named.items() if whole else ():
        group_index, podgroup = groups[group]
        minimum = (podgroup.get("spec") or {}).get("minMember")
        if not isinstance(minimum, int):
            continue  # the schema said what is wrong with it
        where = f"/{group_index}/spec/minMember"
        if minimum > members:
            out.add("manifest-min-member", ERROR, where,
                    f"PodGroup {group} needs minMember {minimum} pods but the TFJob has only {members} in it: the "
                    "gang scheduler never starts the job")
        elif minimum < members:
            out.add("manifest-min-member", WARNING, where,
                    f"PodGroup {group} has minMember {minimum} of the TFJob's {members} pods: the job may start "
                    "with only part of them (a partial gang)")
    return set(named)


def _check_operator(index: int, tfjob: dict[str, Any], out: _Out) -> None:
    """What tf-operator turns down after kubectl created the TFJob (kubeflow/tf-operator v0.5.0,
    pkg/apis/tensorflow/validation/validation.go `ValidateBetaOneTFJobSpec`/`ValidateBetaTwoTFJobSpec`, and v1's
    `ValidateV1TFJobSpec`): both a Chief and a Master, more than one Evaluator, a replica type without a container
    named `tensorflow`. The operator then marks the TFJob Failed with reason `InvalidTFJobSpec` and starts no pod
    (pkg/controller.v1beta2/tensorflow/job.go `addTFJob`); only its log says why. Also what a v1beta1 object loses
    without a word (fields of v1 only)."""
    spec = tfjob["spec"]
    specs = spec["tfReplicaSpecs"]
    failed = "kubectl creates the TFJob, but tf-operator marks it Failed (InvalidTFJobSpec) and starts no pod"
    chiefs = [role for role in specs if role in CHIEF_TYPES]
    if len(chiefs) > 1:
        out.add("manifest-operator", ERROR, f"/{index}/spec/tfReplicaSpecs/{chiefs[1]}",
                f"both {' and '.join(chiefs)}: {failed} (its log: \"more than 1 chief/master found\"); keep one")
    evaluators = (specs.get("Evaluator") or {}).get("replicas", 1)
    if "Evaluator" in specs and isinstance(evaluators, int) and evaluators > 1:
        out.add("manifest-operator", ERROR, f"/{index}/spec/tfReplicaSpecs/Evaluator/replicas",
                f"{evaluators} Evaluator replicas: {failed} (its log: \"more than 1 evaluator found\"); keep one")
    for role, replica in pod_templates(tfjob):
        names = [c.get("name") for c in replica["template"]["spec"]["containers"]]
        if TF_CONTAINER not in names:
            where = f"/{index}/spec/tfReplicaSpecs/{_escape(role)}/template/spec/containers"
            out.add("manifest-operator", ERROR, where,
                    f"{role} has no container named {TF_CONTAINER} (it has {', '.join(map(str, names))}): {failed} "
                    f"(its log: \"There is no container named {TF_CONTAINER} in {role}\"); rename the training "
                    "container")
    if tfjob["apiVersion"] == "kubeflow.org/v1beta1":
        for key in (k for k in V1_ONLY_FIELDS if k in spec):
            out.add("manifest-operator", WARNING, f"/{index}/spec/{key}",
                    f"{key} is a field of kubeflow.org/v1 only: tf-operator v0.5 drops it from this v1beta1 TFJob "
                    "without a word; move the TFJob to kubeflow.org/v1 or remove it")


def _check_scheduler(role: str, scheduler: str, podgroup: dict[str, Any], pointer: str, out: _Out) -> None:
    form = FORM_BY_GROUP.get(str(podgroup.get("apiVersion")).split("/")[0])
    if form is not None and scheduler != form.scheduler:
        what = ("no schedulerName (the default scheduler)" if scheduler == DEFAULT_SCHEDULER
                else f"schedulerName {scheduler}")
        out.add("manifest-scheduler", ERROR, f"{pointer}/schedulerName" if scheduler != DEFAULT_SCHEDULER else pointer,
                f"{role}'s pods have {what} but their PodGroup is {podgroup['apiVersion']}, which only "
                f"{form.scheduler} reads: set schedulerName: {form.scheduler}, or the pods are placed one by one")


def _quantity(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _check_gpu(role: str, container: Mapping[str, Any], pointer: str, out: _Out) -> None:
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    if GPU in requests and GPU not in limits:
        out.add("manifest-gpu", ERROR, f"{pointer}/resources/requests/{_escape(GPU)}",
                f"{role} requests {GPU} without a limit: Kubernetes takes GPUs from limits (requests must equal them)")
        return
    if GPU not in limits:
        return
    amount = _quantity(limits[GPU])
    if amount is None or amount < 0 or amount != amount.to_integral_value():
        out.add("manifest-gpu", ERROR, f"{pointer}/resources/limits/{_escape(GPU)}",
                f"{role}'s {GPU} limit {limits[GPU]!r} is not a whole number of GPUs")
    elif GPU in requests and _quantity(requests[GPU]) != amount:
        out.add("manifest-gpu", ERROR, f"{pointer}/resources/requests/{_escape(GPU)}",
                f"{role}'s {GPU} request {requests[GPU]!r} differs from its limit {limits[GPU]!r}: Kubernetes refuses "
                "the pod")
