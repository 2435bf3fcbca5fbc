"""The checks beyond the servers' own verdicts: HiveD's silent mistakes, services configuration, inventories, jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.checker.validate import ERROR, NOTE, WARNING, validate_paths
from hivedlab.checker.validate.hived import check_hived_config
from tests.support.paths import FIXTURES, ROOT

FIX = FIXTURES / "validate"
ONE_VC = FIX / "good" / "hived-one-vc.yaml"


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _found(path: Path, **kwargs):
    return [(f.rule, f.severity, f.pointer, f.line) for f in validate_paths([path], **kwargs).findings]


def test_the_good_fixtures_have_no_findings():
    report = validate_paths([FIX / "good"], hived_configs=[ONE_VC])
    assert report.findings == ()
    assert sorted(report.kinds.values()) == ["hived", "hived", "inventory", "job", "services"]


def test_hived_silent_mistakes():
    found = _found(FIX / "bad" / "hived-silent-mistakes.yaml")
    assert ("hived-cells", WARNING, "/physicalCluster/physicalCells/0/cellChildren/1/cellAddress", 13) in found
    assert ("hived-cells", WARNING, "/physicalCluster/physicalCells/0/cellChildren/2/pinnedCellId", 15) in found
    assert ("hived-cells", ERROR, "/physicalCluster/physicalCells/0/cellChildren/2/cellChildren", 16) in found
    assert ("hived-vc", ERROR, "/virtualClusters/vc_a", 24) in found
    assert not [f for f in found if f[0] == "hived-load"]


def test_services_configuration_findings_point_into_the_block_string():
    found = _found(FIX / "bad" / "services-vc-uppercase-memory-10G.yaml")
    assert found == [
        ("hived-skutypes", ERROR, "/hivedscheduler/config/physicalCluster/skuTypes/GPU/memory", 5),
        ("hived-vc", ERROR, "/hivedscheduler/config/virtualClusters/V100", 18),
    ]


def test_a_hived_load_error_inside_services_configuration(tmp_path):
    text = (FIX / "good" / "services-configuration.yaml").read_text().replace("cellNumber: 2}", "cellNumber: 3}")
    path = tmp_path / "services-configuration.yaml"
    path.write_text(text)
    (finding,) = validate_paths([path]).findings
    assert finding.rule == "hived-load" and finding.line == 21
    assert "Insufficient physical cells at chain GPU-NODE-POOL level 2: 3 needed, 2 available" in finding.message


def test_services_configuration_must_not_repeat_the_keys_openpai_writes(tmp_path):
    text = (FIX / "good" / "services-configuration.yaml").read_text().replace(
        "  config: |\n", "  config: |\n    webServerAddress: ':30096'\n")
    path = tmp_path / "services.yaml"
    path.write_text(text)
    assert [f.rule for f in validate_paths([path]).findings] == ["services-config"]


def test_memory_the_rest_server_misreads():
    config = {
        "physicalCluster": {
            "skuTypes": {"A": {"gpu": 1, "cpu": 2, "memory": "10G"}, "B": {"gpu": 1, "cpu": "2", "memory": "4Gi"},
                         "C": {"gpu": 1, "cpu": 2, "memory": 8589934592}},
            "cellTypes": {"N": {"childCellType": "A", "childCellNumber": 1, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "N", "cellAddress": "n1"}],
        },
        "virtualClusters": {"default": {"virtualCells": [{"cellType": "N", "cellNumber": 1}]}},
    }
    found = {(f.pointer, f.severity) for f in check_hived_config(config, {}, "x.yaml")}
    assert ("/physicalCluster/skuTypes/A/memory", ERROR) in found
    assert ("/physicalCluster/skuTypes/B/memory", WARNING) not in found
    assert ("/physicalCluster/skuTypes/B/cpu", WARNING) in found
    assert ("/physicalCluster/skuTypes/C/memory", WARNING) in found  # bytes: 8192 MB, but say it in Mi
    assert ("/physicalCluster/skuTypes/B", WARNING) in found  # not a leaf cell type


def test_no_skutypes_is_an_error_for_openpai_not_for_hived():
    config = {"physicalCluster": {"cellTypes": {"N": {"childCellType": "G", "childCellNumber": 1,
                                                       "isNodeLevel": True}},
                                  "physicalCells": [{"cellType": "N", "cellAddress": "n1"}]},
              "virtualClusters": {"default": {"virtualCells": [{"cellType": "N", "cellNumber": 1}]}}}
    assert [(f.rule, f.severity) for f in check_hived_config(config, {}, "x.yaml")] == [("hived-skutypes", ERROR)]


def test_inventory_rules():
    found = _found(FIX / "bad" / "inventory-two-masters.yaml")
    pointers = {(p, s) for _, s, p, _ in found}
    assert ("/members/1/hostname", ERROR) in pointers
    assert ("/members/1/ip", ERROR) in pointers
    assert ("/members/1/user", ERROR) in pointers
    assert ("/members/2/roles", ERROR) in pointers
    assert ("/members/2/hostname", ERROR) in pointers
    assert ("/members", ERROR) in pointers


def test_job_warnings_never_change_the_verdict():
    found = _found(FIX / "bad" / "job-yes-no-and-typos.yaml", hived_configs=[ONE_VC])
    assert {(r, s) for r, s, _, _ in found} == {
        ("yaml-dialect", WARNING), ("job-gang-allocation", WARNING), ("job-unknown-key", WARNING)}


def test_a_job_in_no_configs_vc_is_an_error_with_the_rest_servers_reply():
    (finding,) = validate_paths([FIX / "bad" / "job-unknown-vc.yaml"], hived_configs=[ONE_VC]).findings
    assert finding.rule == "job-unknown-vc" and finding.line == 13
    assert "User admin is not allowed to do operation in vc3" in finding.message


def test_a_job_refused_by_one_shipped_config_but_accepted_by_another_only_gets_a_note(in_repo):
    report = validate_paths([Path("jobs/job-config-6.yaml")])
    assert [(f.rule, f.severity) for f in report.findings] == [("job-quota", NOTE)]
    assert "exceeds maximum 1 SKUs in VC default." in report.findings[0].message


def test_the_shipped_jobs_and_configs_have_no_errors(in_repo):
    report = validate_paths([Path("jobs"), Path("configs")])
    assert report.errors == () and report.warnings == ()
    assert "jobs/rejected/job-over-quota-gang.yaml" in report.files


def test_the_rejected_job_is_refused_with_openpais_quota_message(in_repo):
    report = validate_paths([Path("jobs/rejected/job-over-quota-gang.yaml")],
                            hived_configs=[Path("configs/hived/one-vc.yaml")])
    (finding,) = report.errors
    assert finding.rule == "job-quota"
    assert finding.message.startswith("Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.")


def test_a_rejected_folder_file_that_passes_is_an_error(tmp_path):
    (tmp_path / "rejected").mkdir()
    (tmp_path / "rejected" / "ok.yaml").write_bytes((FIX / "good" / "job-gang-two-tasks.yaml").read_bytes())
    report = validate_paths([tmp_path], hived_configs=[ONE_VC])
    assert [f.rule for f in report.errors] == ["expected-rejection"]


def test_a_pod_bigger_than_any_node_of_its_vc_is_a_warning(tmp_path):
    text = (FIX / "good" / "job-gang-two-tasks.yaml").read_text().replace("cpu: 2", "cpu: 4")
    job = tmp_path / "cpu4.yaml"
    job.write_text(text)
    report = validate_paths([job], hived_configs=[ONE_VC])
    (finding,) = report.findings  # quota: 2 pods x 2 cells = 4 > 2 is an error first
    assert finding.rule == "job-quota" and "Job requests 4 SKUs, exceeds maximum 2 SKUs" in finding.message
    job.write_text(text.replace("instances: 2", "instances: 1"))
    (finding,) = validate_paths([job], hived_configs=[ONE_VC]).findings
    assert (finding.rule, finding.severity) == ("job-never-scheduled", WARNING)
    assert "needs 2 leaf cells" in finding.message and "holds at most 1" in finding.message
