"""The emulated kubelets' process: registers a Node per worker, then every `POLL_S` lists the pods and applies
`hivedlab.rehearsal.kubelet.decide` to each (the Kubernetes API calls a kubelet makes: node create and status,
pod status, the final delete of a graceful deletion).

Run by `hivedlab rehearsal up` as `python -m hivedlab.rehearsal.kubelet_loop --kubeconfig K --inventory I
[--speedup S] [--faults F]`; `run_once` is what the tests drive.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.backends.watcher import make_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.lab_group.inventory import Inventory, load_inventory
from hivedlab.rehearsal.kubelet import (
    Faults,
    Worker,
    decide,
    finished_status,
    node_object,
    node_status,
    parse_faults,
    running_status,
    untainted,
)

POLL_S = 0.5
PODS = "/api/v1/pods"  # every namespace: OpenPAI's pods are in `default`, a Kubeflow run's in a namespace of its own
MERGE = "application/merge-patch+json"


def workers_of(inventory: Inventory) -> dict[str, Worker]:
    """The inventory's workers (at least one GPU each), then its masters that are not workers (no GPU)."""
    nodes = {w.hostname: Worker(w.hostname, w.ip or "127.0.0.1", w.gpus if w.gpus > 0 else 1)
             for w in inventory.workers}
    for member in inventory.members:
        if "master" in member.roles and member.hostname and member.hostname not in nodes:
            nodes[member.hostname] = Worker(member.hostname, member.ip or "127.0.0.1", 0, master=True)
    return nodes


@dataclass
class Api:
    """A few raw calls through a kubernetes ApiClient (its auth and TLS), JSON in and out."""

    client: Any

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
             query: list[tuple[str, Any]] | None = None) -> tuple[int, Any]:
        from kubernetes.client.exceptions import ApiException

        try:
            response = self.client.call_api(path, method, query_params=query or [], body=body,
                                            header_params={"Content-Type": content_type, "Accept": "application/json"},
                                            auth_settings=["BearerToken"], _preload_content=False)
        except ApiException as exc:
            return exc.status, None
        data = response[0].data
        return response[1], json.loads(data) if data else None


def read_faults(path: Path | None) -> Faults:
    if path is None or not path.is_file():
        return Faults()
    try:
        return parse_faults(json.loads(path.read_text(encoding="utf-8")))
    except ValueError:
        return Faults()


def update_faults(path: Path, not_ready: list[str], ready: list[str], exit_codes: dict[str, int],
                  clear: bool = False) -> Faults:
    """Change the injected failures the running emulator reads each round; returns them as they now are."""
    current = Faults() if clear else read_faults(path)
    nodes = (set(current.not_ready) | set(not_ready)) - set(ready)
    faults = Faults(frozenset(nodes), {**current.exit_codes, **exit_codes})
    write_atomic(path, json.dumps({"not_ready": sorted(faults.not_ready), "exit_codes": faults.exit_codes}) + "\n")
    return faults


class Kubelets:
    """The emulated kubelets of all workers: what they registered and last reported."""

    def __init__(self, api: Api, workers: dict[str, Worker], speedup: float = 1.0, faults: Path | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.api, self.workers, self.speedup, self.faults_path, self.clock = api, workers, speedup, faults, clock
        self.reported: dict[str, bool] = {}

    def register(self) -> None:
        for worker in self.workers.values():
            status, _ = self.api.call("POST", "/api/v1/nodes", node_object(worker))
            if status not in (200, 201, 409):
                raise HivedlabError(f"cannot register node {worker.name}: HTTP {status}")

    def _nodes(self, faults: Faults) -> None:
        for name in self.workers:
            ready = name not in faults.not_ready
            if self.reported.get(name) != ready:
                self.api.call("PATCH", f"/api/v1/nodes/{name}/status", node_status(ready, self.clock()), MERGE)
                self.reported[name] = ready
            if ready:
                status, node = self.api.call("GET", f"/api/v1/nodes/{name}")
                kept = untainted(node) if status == 200 and node else None
                if kept is not None:
                    self.api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": kept}}, MERGE)

    def run_once(self) -> list[str]:
        """One round: node readiness, then each pod; returns what it did ("start NAME", ...)."""
        faults = read_faults(self.faults_path)
        self._nodes(faults)
        status, listing = self.api.call("GET", PODS)
        if status != 200 or not listing:
            return []
        done = []
        items = listing.get("items") or []
        pods = {(p["metadata"].get("namespace") or "default", p["metadata"].get("name")): p for p in items}
        for pod in items:
            action = decide(pod, self.workers, faults, self.clock(), self.speedup, pods)
            if action is None:
                continue
            path = f"/api/v1/namespaces/{pod['metadata'].get('namespace') or 'default'}/pods/{action.name}"
            if action.kind == "start":
                worker = self.workers[pod["spec"]["nodeName"]]
                self.api.call("PATCH", f"{path}/status", running_status(pod, worker, self.clock()), MERGE)
            elif action.kind == "finish":
                self.api.call("PATCH", f"{path}/status", finished_status(pod, action.exit_code, self.clock()), MERGE)
            else:
                self.api.call("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                               "preconditions": {"uid": pod["metadata"].get("uid")}})
            done.append(f"{action.kind} {action.name}" + (f" {action.exit_code}" if action.kind == "finish" else ""))
        return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hivedlab.rehearsal.kubelet_loop")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--inventory")
    parser.add_argument("--speedup", type=float, default=1.0)
    parser.add_argument("--faults")
    args = parser.parse_args(argv)
    try:
        kubelets = Kubelets(Api(make_api_client(args.kubeconfig)), workers_of(load_inventory(args.inventory)),
                            args.speedup, Path(args.faults) if args.faults else None)
        kubelets.register()
        print(f"emulated kubelets for {', '.join(kubelets.workers)} (speed-up {args.speedup:g})", flush=True)
        while True:
            for line in kubelets.run_once():
                print(time.strftime("%H:%M:%S"), line, flush=True)
            time.sleep(POLL_S)
    except HivedlabError as exc:
        print(f"emulated kubelet: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
