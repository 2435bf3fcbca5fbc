"""TFJob + PodGroup manifests (docs/kubeflow-on-kubernetes.md).

A manifest file holds one job: its PodGroup (when a gang scheduler places it) and its TFJob, as YAML documents
separated by `---`, the way `kubectl apply -f` takes them. Two forms are shipped under `jobs/kubeflow/<form>/`:

- `kube-batch`: tf-operator v0.5's `kubeflow.org/v1beta1` TFJob with kube-batch v0.4's
  `scheduling.incubator.k8s.io/v1alpha1` PodGroup and `schedulerName: kube-batch`;
- `volcano`: the training operator's `kubeflow.org/v1` TFJob with Volcano's `scheduling.volcano.sh/v1beta1`
  PodGroup and `schedulerName: volcano`.

Every pod template names its PodGroup in the `scheduling.k8s.io/group-name` annotation (both schedulers read it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
GPU = "nvidia.com/gpu"
DEFAULT_SCHEDULER = "default-scheduler"
# the reasons of a pod's event that say it waits: Kubernetes' (and HiveD's) word, then kube-batch's and Volcano's
WAIT_REASONS = ("FailedScheduling", "Unschedulable")
MAX_NAME = 63  # a DNS-1123 label, and a label value on every pod of the job
MAX_VALUES = 20_000  # values one file may expand to (aliases): the work stays bounded
_TOP_KEY = re.compile(r"^(apiVersion|kind):", re.MULTILINE)


@dataclass(frozen=True)
class Form:
    """One way to run a TFJob under a gang scheduler: the API versions it uses and the scheduler's name."""

    name: str
    tfjob_api: str  # group/version of the TFJob
    podgroup_api: str  # group/version of the PodGroup
    scheduler: str  # spec.schedulerName of every pod template
    install: str  # what a cluster without these resources lacks (one line, for the refusal)

    @property
    def tfjob_group_version(self) -> tuple[str, str]:
        group, version = self.tfjob_api.split("/")
        return group, version

    @property
    def podgroup_group_version(self) -> tuple[str, str]:
        group, version = self.podgroup_api.split("/")
        return group, version


FORMS: dict[str, Form] = {
    "kube-batch": Form("kube-batch", "kubeflow.org/v1beta1", "scheduling.incubator.k8s.io/v1alpha1", "kube-batch",
                       "tf-operator v0.5 (TFJob kubeflow.org/v1beta1, started with --enable-gang-scheduling=true) "
                       "and kube-batch v0.4 (PodGroup scheduling.incubator.k8s.io/v1alpha1)"),
    "volcano": Form("volcano", "kubeflow.org/v1", "scheduling.volcano.sh/v1beta1", "volcano",
                    "Kubeflow's training operator v1 (TFJob kubeflow.org/v1) and Volcano (PodGroup "
                    "scheduling.volcano.sh/v1beta1)"),
}
FORM_BY_GROUP = {form.podgroup_api.split("/")[0]: form for form in FORMS.values()}


class ManifestError(Exception):
    """A manifest file that cannot be read as YAML documents (message, line, column; 0 = unknown)."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@dataclass(frozen=True)
class Manifests:
    """The documents of one file; `positions` maps a JSON pointer `/<document>/<key>/...` to (line, column)."""

    documents: tuple[Any, ...]
    positions: Mapping[str, tuple[int, int]]

    def kinds(self) -> list[Any]:
        return [doc.get("kind") if isinstance(doc, dict) else None for doc in self.documents]


def looks_like_manifests(text: str) -> bool:
    """Kubernetes objects (top-level `apiVersion:` and `kind:`), not an OpenPAI protocol or a HiveD config."""
    return {m.group(1) for m in _TOP_KEY.finditer(text)} == {"apiVersion", "kind"}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def parse_manifests(text: str) -> Manifests:
    """Every document of `text` as plain data, with the position of each key; raises ManifestError."""
    loader = yaml.SafeLoader(text)
    positions: dict[str, tuple[int, int]] = {}
    documents: list[Any] = []
    count = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None or _empty(node):
                continue  # kubectl skips an empty document, e.g. after a trailing `---`
            count += _positions(node, f"/{len(documents)}", positions, MAX_VALUES - count)
            documents.append(loader.construct_document(node))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ManifestError(f"YAML syntax error: {what}", *(_mark(mark))) from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"YAML syntax error: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ManifestError("nesting too deep; refusing to read it") from None
    finally:
        loader.dispose()
    return Manifests(tuple(documents), positions)


def _mark(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _empty(node: Node) -> bool:
    """A document with nothing in it (`---` followed by nothing or a comment)."""
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null" and node.value in ("", "~", "null")


def _no_duplicate_keys(node: MappingNode) -> None:
    """kubectl decodes a manifest with go-yaml (sigs.k8s.io/yaml `Unmarshal`), which refuses a key given twice in one
    mapping ("mapping key ... already defined"); PyYAML would keep the last value silently."""
    seen: set[str] = set()
    for key, _ in node.value:
        if isinstance(key, ScalarNode):
            if key.value in seen:
                raise ManifestError(f"duplicated mapping key {key.value!r}: kubectl refuses the file (go-yaml's "
                                    "\"mapping key already defined\"); keep one", *_mark(key.start_mark))
            seen.add(key.value)


def _positions(node: Node, pointer: str, out: dict[str, tuple[int, int]], budget: int) -> int:
    """Record where each key starts; returns the values counted (ManifestError past `budget`: an alias bomb)."""
    out.setdefault(pointer, _mark(node.start_mark))
    stack: list[tuple[Node, str]] = [(node, pointer)]
    count = 0
    while stack:
        current, where = stack.pop()
        count += 1
        if count > budget:
            raise ManifestError(f"the file expands to more than {MAX_VALUES} values (aliases?); refusing to read it",
                                *_mark(current.start_mark))
        if isinstance(current, MappingNode):
            _no_duplicate_keys(current)
            for key, value in current.value:
                child = f"{where}/{_escape(str(key.value))}" if isinstance(key, ScalarNode) else where
                out.setdefault(child, _mark(key.start_mark))
                stack.append((value, child))
        elif isinstance(current, SequenceNode):
            for index, value in enumerate(current.value):
                out.setdefault(f"{where}/{index}", _mark(value.start_mark))
                stack.append((value, f"{where}/{index}"))
    return count


def manifest_file(job_file: str, form: str) -> str:
    """The manifest of a plan's job in a form: `kubeflow/tfjob-gang-1.yaml` ->
    `kubeflow/kube-batch/tfjob-gang-1.yaml`."""
    path = PurePosixPath(job_file)
    return str(path.parent / form / path.name)


def k8s_name(name: str) -> str:
    """`name` as a DNS-1123 label: lower case, `-` for anything else, at most 63 characters."""
    text = re.sub(r"[^a-z0-9-]+", "-", name.lower())
    return re.sub(r"-{2,}", "-", text)[:MAX_NAME].strip("-") or "job"


def pod_templates(tfjob: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(replica type, its spec) of a TFJob."""
    specs = (tfjob.get("spec") or {}).get("tfReplicaSpecs") if isinstance(tfjob.get("spec"), Mapping) else None
    if isinstance(specs, Mapping):
        yield from ((str(role), spec) for role, spec in specs.items())


def _template_parts(spec: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(template metadata, template spec) of a replica spec, created where missing."""
    template = spec.setdefault("template", {})
    return template.setdefault("metadata", {}), template.setdefault("spec", {})


def for_run(text: str, name: str, gang: bool = True) -> tuple[str, str]:
    """The manifests as a run sends them: the TFJob, its PodGroup and every group-name annotation named `name` (as
    a DNS label). Without `gang`, the same TFJob for Kubernetes' default scheduler: no PodGroup, no group-name
    annotation, `schedulerName: default-scheduler` (an operator with gang scheduling on keeps a scheduler that is
    set). Returns (the YAML to send, the name used)."""
    final = k8s_name(name)
    documents = [doc for doc in parse_manifests(text).documents if isinstance(doc, dict)
                 and (gang or doc.get("kind") == "TFJob")]
    for doc in documents:
        doc.setdefault("metadata", {})["name"] = final
        doc["metadata"].pop("namespace", None)  # the run's own namespace decides
        for _, spec in pod_templates(doc) if doc.get("kind") == "TFJob" else ():
            metadata, pod = _template_parts(spec)
            annotations = metadata.get("annotations") or {}
            if GROUP_ANNOTATION in annotations:
                annotations[GROUP_ANNOTATION] = final
            if not gang:
                annotations.pop(GROUP_ANNOTATION, None)
                pod["schedulerName"] = DEFAULT_SCHEDULER
    return yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True), final


# -- the pods the training operator makes -----------------------------------------------------------------------

# (job name, replica type, replica index) labels: tf-operator v0.4 and v0.5, then the training operator v1
_POD_LABELS = (
    ("tf-job-name", "tf-replica-type", "tf-replica-index"),
    ("training.kubeflow.org/job-name", "training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index"),
    ("job-name", "replica-type", "replica-index"),
)


@dataclass(frozen=True)
class TfPod:
    job: str
    replica_type: str  # lower case: ps, worker, chief
    index: int | None


def tf_pod(labels: Mapping[str, Any]) -> TfPod | None:
    """Which TFJob replica a pod is, from the labels the operator puts on it; None for any other pod."""
    for job_key, type_key, index_key in _POD_LABELS:
        job, role = labels.get(job_key), labels.get(type_key)
        if isinstance(job, str) and job and isinstance(role, str) and role:
            raw = labels.get(index_key)
            index = int(raw) if isinstance(raw, str) and raw.isdigit() else None
            return TfPod(job, role.lower(), index)
    return None


# the TFJob's last condition -> the job state the runner and the checker use
# (src/hivedlab/backends/protocol.py JOB_STATES)
_TFJOB_STATES = {"Created": "WAITING", "Restarting": "WAITING", "Running": "RUNNING", "Succeeded": "SUCCEEDED",
                 "Failed": "FAILED"}


def true_conditions(tfjob: Mapping[str, Any]) -> list[str]:
    """The types of the TFJob's true conditions, in the order the operator keeps them (status.go `setCondition`: a
    condition set again moves to the end; Succeeded and Failed turn Running false)."""
    status = tfjob.get("status") if isinstance(tfjob.get("status"), Mapping) else {}
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return [str(c.get("type")) for c in conditions if isinstance(c, Mapping) and c.get("status") == "True"] \
        if isinstance(conditions, list) else []


def tfjob_state(tfjob: Mapping[str, Any]) -> str:
    """WAITING, RUNNING, SUCCEEDED or FAILED from the operator's conditions (the last true one wins)."""
    state = "WAITING"
    for kind in true_conditions(tfjob):
        state = _TFJOB_STATES.get(kind, state)
    return state
