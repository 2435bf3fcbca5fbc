"""Which recorded exchanges go into which transcript (docs/transcripts.md#what-each-file-covers): the flows
`record_transcripts` ran, cut to what the project reads — a job polled fifty times keeps its first answer in each
state — with the setup each transcript's replay starts from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.transcript_recorder import fields_for
from tests.support.transcripts import Exchange, Transcript, as_data, load_transcript, write_transcript

VERSIONS = {"openpai": ("openpai-rest-server", "v1.2.0"), "hived": ("hivedscheduler", "v0.3.4"),
            "kubernetes": ("kube-apiserver", "v1.20.2")}
REHEARSAL = "the rehearsal cluster (docs/rehearsal.md): {what}, inventory configs/group.example.yaml"
JOBS = "/rest-server/api/v2/jobs"
KUBE_VIEWS = ("/api/v1/namespaces/default/pods?labelSelector=type%3Dkube-launcher-task",
              "/apis/frameworkcontroller.microsoft.com/v1/namespaces/default/frameworks",
              "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1",
              "/api/v1/namespaces/default/foos")
POD_BULK = ("containers", "initContainers", "volumes")
KEPT_ITEMS = 2  # a list or a watch of the API server keeps its first objects: they stand for the rest


@dataclass(frozen=True)
class Recording:
    """Everything the proxies kept, and where each flow began: (flow, pai, hived, kube) exchange counts."""

    marks: list[tuple[str, int, int, int]]
    pai: list[Exchange]
    hived: list[Exchange]
    kube: list[Exchange]
    cluster: dict[str, Any]
    members: list[str]

    def flows(self, program: str, *names: str) -> list[Exchange]:
        taken = {"openpai": self.pai, "hived": self.hived, "kubernetes": self.kube}[program]
        column = {"openpai": 1, "hived": 2, "kubernetes": 3}[program]
        out: list[Exchange] = []
        for index, mark in enumerate(self.marks):
            if mark[0] in names:
                end = self.marks[index + 1][column] if index + 1 < len(self.marks) else len(taken)
                out += [replace(e, note=e.note or mark[0]) for e in taken[int(mark[column]):int(end)]]
        return out

    def as_data(self) -> dict[str, Any]:
        def exchanges(items: list[Exchange]) -> list[dict[str, Any]]:
            return as_data(Transcript("", "", "", (), {}, tuple(items)))["exchanges"]
        return {"marks": self.marks, "pai": exchanges(self.pai), "hived": exchanges(self.hived),
                "kube": exchanges(self.kube), "cluster": self.cluster, "members": self.members}


def load_recording(path: Path) -> Recording:
    """A recording saved by `record_transcripts` (outside the repository: it is not redacted)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    stub = {"format": "hivedlab-transcript/1", "program": "", "version": "", "origin": "", "setup": {}}

    def exchanges(key: str) -> list[Exchange]:
        temp = path.with_suffix(f".{key}.tmp")
        temp.write_text(json.dumps({**stub, "exchanges": data[key]}), encoding="utf-8")
        try:
            return list(load_transcript(temp).exchanges)
        finally:
            temp.unlink()
    return Recording([tuple(m) for m in data["marks"]], exchanges("pai"), exchanges("hived"),  # type: ignore[misc]
                     exchanges("kube"), data["cluster"], data["members"])


# ------------------------------------------------------------------ cutting


def _route(exchange: Exchange) -> str:
    return urlsplit(exchange.path).path


def _state(exchange: Exchange) -> Any:
    body = exchange.body
    if isinstance(body, dict) and isinstance(body.get("jobStatus"), dict):
        return body["jobStatus"].get("state"), body["jobStatus"].get("executionType")
    if isinstance(body, list):
        return tuple(sorted(str(item.get("state")) for item in body if isinstance(item, dict)))
    return None


def polled_once(exchanges: list[Exchange]) -> list[Exchange]:
    """A run's polling of jobs keeps the first answer in each state: one list per (query, states), one job detail
    per (status, state, executionType) over all jobs; pylon's root (the portal, which the rehearsal has not) goes."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for exchange in exchanges:
        route = _route(exchange)
        if exchange.path == "/":
            continue
        if exchange.method == "GET" and route.startswith(JOBS):
            detail = route != JOBS
            key = ("detail" if detail else exchange.path, exchange.status, _state(exchange))
            if key in seen:
                continue
            seen.add(key)
        out.append(exchange)
    return out


def _unmanaged(obj: Any) -> Any:
    """An object without `managedFields` and without the pod template's bulk (containers, init containers, volumes:
    OpenPAI's runtime setup, which the project does not read)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj
    out = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
    spec = obj.get("spec")
    if isinstance(spec, dict) and "containers" in spec:  # a pod (list items have no kind)
        out["spec"] = {k: v for k, v in spec.items() if k not in POD_BULK}
    if isinstance(spec, dict) and isinstance(spec.get("taskRoles"), list):  # a Framework
        out["spec"] = {**spec, "taskRoles": [{**role, "task": {k: v for k, v in role["task"].items() if k != "pod"}}
                                             for role in spec.get("taskRoles", [])]}
    return out


def kube_cut(exchanges: list[Exchange]) -> list[Exchange]:
    """An API server's list keeps its first `KEPT_ITEMS` objects, a watch from 0 the ADDED events of those objects
    (compared in name order: the watch cache lists its store, a Go map), all without `managedFields` (1.20's
    server-side apply bookkeeping, several kB an object, which the modelled 1.15 has not) and without the pod
    template's bulk (`_unmanaged`)."""
    kept: set[str] = set()
    out = []
    for exchange in exchanges:
        body, note, order = exchange.body, exchange.note, ""
        if exchange.stream and isinstance(body, list):
            events = [e for e in body if e.get("type") == "ADDED" and _name(e.get("object")) in kept]
            note = f"{note}; of its {len(body)} events, the ADDED ones of the objects listed above"
            body, order = [{**e, "object": _unmanaged(e["object"])} for e in events], "object.metadata.name"
        elif isinstance(body, dict) and isinstance(body.get("items"), list):
            if len(body["items"]) > KEPT_ITEMS:
                note = f"{note}; the first {KEPT_ITEMS} of {len(body['items'])} items kept"
            body = {**body, "items": [_unmanaged(item) for item in body["items"][:KEPT_ITEMS]]}
            kept |= {_name(item) for item in body["items"]}
        else:
            out.append(exchange)
            continue
        out.append(replace(exchange, body=body, note=note, order=order,
                           fields=fields_for(exchange.method, exchange.path, exchange.status, body)))
    return out


def _name(obj: Any) -> str:
    return str(obj.get("metadata", {}).get("name")) if isinstance(obj, dict) else ""


def hived_cells_ordered(exchange: Exchange) -> Exchange:
    """HiveD lists cells from Go maps: its transcripts compare cell lists in `cellAddress` order."""
    return replace(exchange, order="cellAddress") if _route(exchange).startswith("/v1/inspect/") else exchange


# ------------------------------------------------------------------ setups


def _users(rec: Recording, grants: list[str], extra: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    users: dict[str, Any] = {"admin": {"password": "<password:admin>", "admin": True}}
    for user in rec.members:
        users[user] = {"password": f"<password:{user}>", "admin": False, "virtualCluster": grants}
    for user, vcs in (extra or {}).items():
        users[user] = {"password": f"<password:{user}>", "admin": False, "virtualCluster": vcs}
    return users


def _names(exchanges: list[Exchange]) -> dict[str, Any]:
    """The API server's objects: those of the first list of each resource (the test gives the fake these objects,
    their spec and status as their writers wrote them)."""
    setup: dict[str, Any] = {"objects": "each resource's objects as the first list of it in this transcript shows "
                                        "them; their spec and status are their writers', not the API server's"}
    for exchange in exchanges:
        items = exchange.body.get("items") if isinstance(exchange.body, dict) else None
        resource = _route(exchange).rsplit("/", 1)[-1]
        if exchange.method == "GET" and exchange.status == 200 and isinstance(items, list) and resource not in setup:
            setup[resource] = [item["metadata"]["name"] for item in items]
    return setup


def _ready_workers(exchanges: list[Exchange]) -> list[str]:
    for exchange in exchanges:
        if _route(exchange) == "/api/v1/nodes" and exchange.status == 200 and isinstance(exchange.body, dict):
            return [n["metadata"]["name"] for n in exchange.body["items"]
                    if n["metadata"].get("labels", {}).get("pai-master") != "true"
                    and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])]
    return []


KUBERNETES_NEWER = {
    "body.items.metadata.managedFields": "1.18+ keeps server-side apply's managed fields; the modelled 1.15 has none",
    "body.object.metadata.managedFields": "the same, in a watch event",
    "body.metadata.continue": "1.20 writes an empty `continue` into a custom resource list; the watcher never reads it",
}


def topics(rec: Recording) -> dict[str, tuple[dict[str, Any], list[Exchange]]]:
    """`<program>/<topic>` → (setup, exchanges)."""
    kube = [e for e in rec.flows("kubernetes", "doctor", "kubernetes lists")  # not the run's own watcher
            if e.note == "doctor" or e.path in KUBE_VIEWS]
    nodes = _ready_workers(kube)
    return {
        "hived/two-vc": ({"config": "configs/hived/two-vc.yaml", "nodesReady": nodes},
                         rec.flows("hived", "hived two-vc")),
        "hived/one-vc": ({"config": "configs/hived/one-vc.yaml", "nodesReady": nodes},
                         rec.flows("hived", "hived one-vc")),
        "openpai/users": ({"virtualClusters": ["default", "vc1"],
                           "users": {"admin": {"password": "<password:admin>", "admin": True}}},
                          rec.flows("openpai", "accounts", "accounts again", "user errors")),
        "openpai/tokens": ({"virtualClusters": ["default", "vc1"],
                            "users": _users(rec, ["default", "vc1"], {"eve": ["default", "vc1"]})},
                           rec.flows("openpai", "tokens", "doctor")),
        "openpai/jobs": ({"virtualClusters": ["default"], "users": _users(rec, ["default"])},
                         rec.flows("openpai", "smoke", "kubernetes lists", "interrupted run", "stop", "resumed run",
                                   "job errors")),
        "kubernetes/lists": (_names(kube), kube),
    }


def write_topics(rec: Recording, secrets: Mapping[str, str], folder: Path) -> list[Path]:
    written = []
    for name, (setup, exchanges) in topics(rec).items():
        program, topic = name.split("/")
        kept = [hived_cells_ordered(e) for e in polled_once(exchanges)]
        kept = kube_cut(kept) if program == "kubernetes" else kept
        setup = {**setup, "recordedOn": REHEARSAL.format(what=f"flows {sorted({e.note for e in kept})}")}
        transcript = Transcript(*VERSIONS[program], "recorded", (), setup, tuple(kept),
                                allowed=KUBERNETES_NEWER if program == "kubernetes" else {})
        path = folder / program / f"{topic}.json"
        write_transcript(path, transcript, secrets)
        written.append(path)
    return written
