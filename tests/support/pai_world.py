"""An OpenPAI backend over a fake rest-server and a stub HiveD inspect API, with a watcher the test drives
(the fixtures `world` and `_close_everything` are in tests/backends/pai/conftest.py)."""

from __future__ import annotations

import io

from rich.console import Console

from hivedlab.backends.pai import open_backend
from hivedlab.backends.pai.live import LiveView
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.inventory import inventory_from_mapping
from tests.support.local import json_reply

JOB = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{type: dockerimage, name: img, uri: 'openpai/standard:python_3.6-pytorch_1.2.0-gpu'}}
taskRoles:
  worker:
    instances: {instances}
    dockerImage: img
    resourcePerInstance: {{gpu: 1, cpu: 2, memoryMB: 4096}}
    commands: [nvidia-smi, sleep 600]
defaults: {{virtualCluster: {vc}}}
extras:
  hivedScheduler: {{jobPriorityClass: prod}}
"""


def job(name="job-config-0-alice-r1", vc="vc1", instances=1):
    return JOB.format(name=name, vc=vc, instances=instances)



OPEN: list = []  # what a test opened; closed after it


TWO_VC = "virtualClusters:\n  default: {virtualCells: []}\n  vc1: {virtualCells: []}\n"
ONE_VC = "virtualClusters:\n  default: {virtualCells: []}\n"
INVENTORY = inventory_from_mapping({"group": "g", "members": [
    {"name": "Alice", "roles": ["dev-box"]}, {"name": "Bob", "roles": ["master"], "ip": "127.0.0.1"},
    {"name": "Carol", "roles": ["worker"], "hostname": "hostname-carol", "gpus": 1}]})


class StubHived:
    """HiveD's inspect API answering only the VC list (None: it drops every connection)."""

    def __init__(self, serve, vcs=("default", "vc1")):
        self.vcs = list(vcs)
        self.server = serve(lambda *_: json_reply(200, {vc: [{"cellChildren": []}] for vc in self.vcs})
                            if self.vcs is not None else None)


class ReplayWatcher:
    """Stands in for hivedlab.backends.watcher.Watcher: the test pushes objects, they go through the writer it was
    given."""

    def __init__(self, writer):
        self.writer, self.stopped = writer, False

    def push(self, watch_type, resource, obj):
        self.writer.write_object(watch_type, resource, obj)

    def stop(self):
        self.stopped = True


def make(world, tmp_path, *, on_sleep=None, ask=None, interactive=False, view=None, experiment="priority"):
    pai, hived, token_file = world
    writer = EvidenceWriter(tmp_path / "run" / "experiments" / experiment / "evidence.jsonl", "k8s")
    OPEN.append(writer)
    holder = {}

    def sleep(seconds):
        if on_sleep:
            on_sleep()

    def factory(tap):
        holder["watcher"] = ReplayWatcher(tap)
        return holder["watcher"]

    backend = open_backend(writer, INVENTORY, pai_url=pai.url, token_file=token_file, hived_url=hived.server.url,
                           watcher_factory=factory, view=view or LiveView(Console(file=io.StringIO())),
                           interactive=interactive, poll_s=0.01, sleep=sleep, environ={})
    if ask:
        backend._ask = ask
    OPEN.append(backend)
    return backend, holder["watcher"], writer


