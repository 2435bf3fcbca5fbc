"""The simulated cluster without HiveD (docs/other-schedulers.md): nodes read from the HiveD config's physical
cluster, the TFJob knobs, and a default-scheduler preemption of a lower-priority OpenPAI job."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.backends.sim.plain import PlainSimCluster, nodes_of_config
from hivedlab.backends.sim.settings import settings_from_mapping
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.layouts import plan_layout, render_hived_config
from hivedlab.models.schedulers.resources import Node, Resources
from tests.support.simkit import INVENTORY, IPS, OPEN_WRITERS, events, job_text, read_log, run_until_idle


def test_nodes_come_from_the_config() -> None:
    import yaml

    one_vc = yaml.safe_load(render_hived_config("one-vc", INVENTORY))
    node = Resources(gpu=1, cpu_milli=2000, memory_mb=4096)
    assert nodes_of_config(one_vc) == [Node("hostname-carol", node), Node("hostname-dan", node)]
    four = yaml.safe_load(plan_layout("four-gpu-nodes", INVENTORY).text)
    assert [n.name for n in nodes_of_config(four)] == ["k8s-g1", "k8s-g2", "k8s-g3", "k8s-g4"]
    assert nodes_of_config(four)[0].capacity == Resources(gpu=1, cpu_milli=4000, memory_mb=16384)


def test_tfjob_knobs_are_checked() -> None:
    assert settings_from_mapping({"tfjob": True}).tfjob
    with pytest.raises(HivedlabError, match="unknown key 'pod_create_gap_s'"):  # a TFJob's pods come at once
        settings_from_mapping({"tfjob": True, "pod_create_gap_s": 1})
    with pytest.raises(HivedlabError, match="sim.tfjob"):
        settings_from_mapping({"tfjob": "yes"})


def test_an_unknown_scheduler_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HivedlabError, match="unknown scheduler"):
        PlainSimCluster(None, scheduler="volcano")


def test_without_hived_every_job_has_openpais_priority_0_so_an_earlier_job_outranks_a_later_one(
        tmp_path: Path) -> None:
    """OpenPAI v1.2.0 with HiveD off gives every job priority 0 (rest-server k8s.js: `let jobPriority = 0; if
    (launcherConfig.enabledHived) ...`), the pod priority then falling with the submission time: a later prod job
    does not preempt earlier test jobs under the default scheduler; it waits until one of them ends."""
    log = tmp_path / "e.jsonl"
    writer = EvidenceWriter(log, "sim")
    OPEN_WRITERS.append(writer)
    sim = PlainSimCluster(writer, 1, scheduler="default", node_ips=IPS)
    sim.switch_config("one-vc", render_hived_config("one-vc", INVENTORY))
    low = job_text("job-config-1.yaml", "low", ("virtualCluster: vc1", "virtualCluster: default"))
    for index in range(2):
        assert sim.submit("alice", "low", low.replace("name: low", f"name: low{index}")).accepted
    run_until_idle(sim, 30)
    high = job_text("job-config-2.yaml", "high", ("virtualCluster: vc1", "virtualCluster: default"))
    assert sim.submit("bob", "high", high).accepted
    run_until_idle(sim, 600)
    seen = read_log(log)
    assert events(seen, "Preempted") == []
    pods = {s.obj["metadata"]["labels"]["userName"]: s.obj for s in seen if s.resource == "pods"}
    assert pods["bob"]["spec"]["priority"] < pods["alice"]["spec"]["priority"]
    waited = events(seen, "FailedScheduling")
    assert waited and all(e.obj["source"]["component"] == "default-scheduler" for e in waited)
    bound = [s for s in seen if s.resource == "pods" and s.obj["metadata"]["labels"]["userName"] == "bob"
             and s.obj["spec"].get("nodeName")]
    first_end = min(s.seq for s in seen if s.resource == "pods" and s.obj["status"].get("phase") == "Succeeded")
    assert bound and bound[0].seq > first_end
