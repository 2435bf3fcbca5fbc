"""What the rest-server does on POST /api/v2/jobs beyond the recorded cases: controller checks, YAML bodies,
the admitted job's plan, and the quota source the simulator overrides."""

from __future__ import annotations

import pytest
import yaml

from hivedlab.models.openpai import hived_spec
from hivedlab.models.openpai.admission import Rejection, admit_job
from tests.support.paths import ROOT

ONE_VC = yaml.safe_load((ROOT / "tests" / "fixtures" / "validate" / "good" / "hived-one-vc.yaml").read_text())
JOB_TEXT = (ROOT / "tests" / "fixtures" / "validate" / "good" / "job-gang-two-tasks.yaml").read_text()
LAB = {  # docs/openpai-model.md#worked-example: DT sku gpu 1 / cpu 5 / memory 20000Mi; vc1 = 1 node x 2 cells
    "physicalCluster": {
        "skuTypes": {"DT": {"gpu": 1, "cpu": 5, "memory": "20000Mi"}},
        "cellTypes": {"DT-NODE": {"childCellType": "DT", "childCellNumber": 2, "isNodeLevel": True},
                      "DT-NODE-POOL": {"childCellType": "DT-NODE", "childCellNumber": 3}},
        "physicalCells": [{"cellType": "DT-NODE-POOL", "cellChildren": [{"cellAddress": f"worker{i}"}
                                                                        for i in (1, 2, 3)]}],
    },
    "virtualClusters": {vc: {"virtualCells": [{"cellType": "DT-NODE-POOL.DT-NODE", "cellNumber": 1}]}
                        for vc in ("default", "vc1", "vc2")},
}


def _job(instances=2, gang=True, klass="test", cpu=4, name="lab-job"):
    return {
        "protocolVersion": 2, "name": name, "type": "job",
        "prerequisites": [{"type": "dockerimage", "name": "img", "uri": "openpai/standard"}],
        "taskRoles": {"taskrole": {"instances": instances, "dockerImage": "img",
                                   "resourcePerInstance": {"gpu": 1, "cpu": cpu, "memoryMB": 8192},
                                   "commands": ["sleep 300"]}},
        "defaults": {"virtualCluster": "vc1"},
        "extras": {"gangAllocation": gang, "hivedScheduler": {"jobPriorityClass": klass}},
    }


def test_worked_example_prod_gang():
    job = admit_job(_job(klass="prod"), "admin", LAB)
    (role,) = job.task_roles
    assert (job.priority, job.gang, job.virtual_cluster) == (100, True, "vc1")
    assert role.pod_scheduling_spec["affinityGroup"] == {
        "name": "admin~lab-job/default", "members": [{"podNumber": 2, "leafCellNumber": 1}]}


def test_worked_example_over_quota_and_cpu_driven_cells():
    with pytest.raises(Rejection) as caught:
        admit_job(_job(instances=3), "admin", LAB)
    assert (caught.value.status, caught.value.code, caught.value.message) == (
        400, "InvalidProtocolError", "Job requests 3 SKUs, exceeds maximum 2 SKUs in VC vc1.")
    job = admit_job(_job(instances=1, cpu=6), "admin", LAB)
    assert job.task_roles[0].pod_scheduling_spec["leafCellNumber"] == 2


def test_non_gang_and_oppo_jobs_skip_the_quota_check():
    assert admit_job(_job(instances=4, gang=False), "admin", LAB).gang is False
    assert admit_job(_job(instances=4, klass="oppo"), "admin", LAB).priority == -1


def test_the_simulator_can_override_the_quota_source():
    with pytest.raises(Rejection, match="exceeds maximum 1 SKUs"):
        admit_job(_job(instances=2), "admin", LAB, vc_leaf_cells={"vc1": {"DT": 1}})


def test_unknown_vc_is_403_after_the_hived_checks():
    job = _job()
    job["defaults"]["virtualCluster"] = "vc9"
    with pytest.raises(Rejection) as caught:
        admit_job(job, "alice", LAB)
    assert (caught.value.status, caught.value.code) == (403, "ForbiddenUserError")
    assert caught.value.message == "User alice is not allowed to do operation in vc9"


def test_a_vc_the_user_may_not_use_is_403():
    with pytest.raises(Rejection, match="not allowed to do operation in vc1"):
        admit_job(_job(), "alice", LAB, user_vcs=["default"])


def test_a_repeated_name_is_409():
    with pytest.raises(Rejection) as caught:
        admit_job(_job(), "alice", LAB, existing_jobs={"alice~lab-job"})
    assert (caught.value.status, caught.value.message) == (409, "Job alice~lab-job already exists.")


def test_yaml_bodies():
    job = admit_job(JOB_TEXT, "carol", ONE_VC)
    assert job.name == "job-config-6" and len(job.task_roles[0].commands) == 1
    with pytest.raises(Rejection) as caught:
        admit_job("name: [\n", "carol", ONE_VC)
    assert (caught.value.status, caught.value.code) == (500, "")
    with pytest.raises(Rejection) as caught:
        admit_job(JOB_TEXT + "name: again\n", "carol", ONE_VC)
    assert caught.value.status == 500 and "duplicated mapping key" in caught.value.message
    with pytest.raises(Rejection) as caught:
        admit_job(JOB_TEXT + "#" * 110_000 + "\n", "carol", ONE_VC)
    assert caught.value.status == 413


def test_schema_errors_are_400_with_an_error_array():
    job = _job()
    job["taskRoles"]["taskrole"]["gpus"] = 1
    with pytest.raises(Rejection) as caught:
        admit_job(job, "admin", LAB)
    assert (caught.value.status, caught.value.code, caught.value.stage) == (400, "InvalidProtocolError", "schema")
    assert caught.value.message.startswith("[{")


def test_the_admitted_plan_renders_commands_and_applies_defaults():
    job = _job(instances=1)
    job["parameters"] = {"epochs": 3}
    job["taskRoles"]["taskrole"]["commands"] = ["python main.py --epochs <% $parameters.epochs %> <% $x %>"]
    job["deployments"] = [{"name": "d", "taskRoles": {"taskrole": {"preCommands": ["pip install x"],
                                                                      "postCommands": ["echo done"]}}}]
    job["defaults"]["deployment"] = "d"
    del job["taskRoles"]["taskrole"]["instances"]
    job["extras"]["gangAllocation"] = False
    admitted = admit_job(job, "admin", LAB)
    (role,) = admitted.task_roles
    assert role.commands == ("pip install x", "python main.py --epochs 3 <% $x %>", "echo done")
    assert role.instances == 1 and role.min_failed_instances is None
    assert admitted.protocol["taskRoles"]["taskrole"]["instances"] == 1
    assert "instances" not in job["taskRoles"]["taskrole"]  # the caller's protocol is not changed


def test_a_config_without_skutypes_cannot_admit():
    config = {k: v for k, v in LAB.items()}
    config["physicalCluster"] = {k: v for k, v in LAB["physicalCluster"].items() if k != "skuTypes"}
    with pytest.raises(Rejection, match="Cannot find skuTypes"):
        admit_job(_job(), "admin", config)


@pytest.mark.parametrize(("memory", "mb"), [("10G", 0), ("1024", 0), (8589934592, 8192), ("54Gi", 55296),
                                             ("8192Mi", 8192), ("2Ti", 2 * 1024 * 1024), ("1024Ki", 1)])
def test_sku_memory_as_the_rest_server_parses_it(memory, mb):
    assert hived_spec.parse_memory_mb(memory) == mb


def test_vc_leaf_cells_counts_virtual_and_pinned_cells():
    config = {
        "physicalCluster": {
            "cellTypes": {"N": {"childCellType": "G", "childCellNumber": 4, "isNodeLevel": True},
                          "P": {"childCellType": "N", "childCellNumber": 2}},
            "physicalCells": [{"cellType": "P", "cellChildren": [{"cellAddress": "a", "pinnedCellId": "pin"},
                                                                  {"cellAddress": "b"}]}],
        },
        "virtualClusters": {"v": {"virtualCells": [{"cellType": "P.N.G", "cellNumber": 2}],
                                  "pinnedCells": [{"pinnedCellId": "pin"}]}},
    }
    assert hived_spec.vc_leaf_cells(config) == {"v": {"G": 6}}


def test_every_user_has_default_even_when_hived_does_not():
    config = {**LAB, "virtualClusters": {"vc1": LAB["virtualClusters"]["vc1"]}}
    job = _job()
    job["defaults"]["virtualCluster"] = "default"
    assert admit_job(job, "alice", config).virtual_cluster == "default"
