"""What each program is given (pure renderers)."""

from __future__ import annotations

from pathlib import Path

import yaml

from hivedlab.lab_group.inventory import load_inventory
from hivedlab.lab_group.layouts import plan_layout
from hivedlab.rehearsal import configs
from hivedlab.rehearsal.settings import Ports

PORTS = Ports()
KUBECONFIG = Path("/home/u/.cache/hivedlab/rehearsal/run/kubeconfig")


def test_each_vc_scheduler_has_hived_as_its_extender_as_openpai_configures_it() -> None:
    config = yaml.safe_load(configs.scheduler_config("vc1", 1, KUBECONFIG, PORTS))
    assert config["profiles"] == [{"schedulerName": "hivedscheduler-ds-vc1"}]
    (extender,) = config["extenders"]
    assert extender["urlPrefix"] == f"http://127.0.0.1:{PORTS.hived}/v1/extender"
    assert (extender["filterVerb"], extender["preemptVerb"], extender["bindVerb"]) == ("filter", "preempt", "bind")
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is False
    assert extender["managedResources"] == [{"name": "hivedscheduler.microsoft.com/pod-scheduling-enable",
                                             "ignoredByScheduler": True}]
    assert config["healthzBindAddress"] == f"127.0.0.1:{configs.scheduler_health_port(1, PORTS)}"


def test_hived_gets_the_groups_config_behind_openpais_head() -> None:
    layout = plan_layout("two-vc", load_inventory(None))
    config = yaml.safe_load(configs.hived_config(layout.text, KUBECONFIG, PORTS))
    assert config["webServerAddress"] == f"127.0.0.1:{PORTS.hived}"
    assert config["waitingPodSchedulingBlockMilliSec"] == 50
    assert set(config["virtualClusters"]) == {"default", "vc1"}


def test_the_pod_failure_spec_follows_openpais_fc_template() -> None:
    spec = [
        {"code": 0, "phrase": "Succeeded", "behavior": "UNKNOWN"},
        {"code": -100, "phrase": "ConfigMapExternalDeleted", "behavior": "TRANSIENT"},
        {"code": -1200, "phrase": "PodEvicted", "behavior": "TRANSIENT",
         "pattern": {"controllerPodPatterns": [{"reasonRegex": "Evicted"}]}},
        {"code": 137, "phrase": "ContainerSigKilled", "behavior": "TRANSIENT_CONFLICT"},
        {"code": 1, "phrase": "ContainerExitCode1", "behavior": "PERMANENT",
         "pattern": {"controllerPodPatterns": [{"containers": [{"nameRegex": "app", "exitCode": 1}]}]}},
    ]
    out = configs.pod_failure_spec(spec)
    assert [e["code"] for e in out] == [-1200, 137, 1]
    assert out[0] == {"code": -1200, "phrase": "PodEvicted", "type": {"attributes": ["Transient"]},
                      "podPatterns": [{"reasonRegex": "Evicted"}]}
    assert out[1]["type"] == {"attributes": ["Transient", "Conflict"]}
    assert out[1]["podPatterns"] == [{"containers": [{"nameRegex": "(?ms).*", "messageRegex": "(?ms).*",
                                                      "codeRange": {"min": 137, "max": 137}}]}]
    assert out[2]["podPatterns"][0]["containers"] == [{"nameRegex": "app", "codeRange": {"min": 1, "max": 1}}]


def test_the_admin_is_in_system_masters_and_the_kubeconfig_names_the_ca() -> None:
    assert configs.token_file("t0k") == 't0k,admin,admin,"system:masters"\n'
    config = yaml.safe_load(configs.kubeconfig("https://127.0.0.1:1", Path("/x/ca.crt"), "t0k"))
    assert config["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:1", "certificate-authority": "/x/ca.crt"}


def test_the_rest_server_finds_hived_the_apiserver_and_its_files() -> None:
    run = Path("/r")
    env = configs.rest_server_env(run, PORTS, "pw", "jwt", "db", "hivedscheduler")
    assert env["LAUNCHER_SCHEDULER"] == "hivedscheduler"
    assert env["HIVED_WEBSERVICE_URI"] == configs.hived_url(PORTS)
    assert env["HIVED_SPEC_PATH"] == "/r/hivedscheduler.yaml"
    assert env["K8S_KUBECONFIG_PATH"] == "/r/kubeconfig" and env["RBAC_IN_CLUSTER"] == "true"
    kinds = [(path, body["metadata"]["name"]) for path, body in configs.bootstrap_objects()]
    assert ("/api/v1/namespaces/default/configmaps", "pai-version") in kinds
    assert {n for p, n in kinds if p == "/api/v1/namespaces"} == set(configs.PAI_NAMESPACES)


def test_the_apiserver_keeps_filling_self_links_as_the_courses_kubernetes_does(tmp_path: Path) -> None:
    """kube-batch v0.4's event recorder names an object by its selfLink; without it no kube-batch event is written."""
    argv = configs.apiserver_argv(tmp_path / "kube-apiserver", tmp_path, PORTS)
    assert "--feature-gates=RemoveSelfLink=false" in argv
