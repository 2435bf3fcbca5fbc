"""`hivedlab validate` as users and CI run it: help, exit statuses, the five output formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.support.paths import ROOT

FIX = ROOT / "tests" / "fixtures" / "validate"
ONE_VC = str(FIX / "good" / "hived-one-vc.yaml")
BAD_JOB = str(FIX / "bad" / "job-schema-errors.yaml")


@pytest.fixture(autouse=True)
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_help_has_examples(cli):
    result = cli("validate", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "hivedlab validate jobs configs" in result.out


def test_a_bad_argument_is_a_usage_error(cli):
    result = cli("validate", "--format", "xml", "jobs")
    assert result.code == 2 and "invalid choice" in result.err


def test_the_shipped_files_pass(cli):
    result = cli("validate", "jobs", "configs")
    assert result.code == 0, result.out
    assert "0 error(s), 0 warning(s)" in result.out


def test_the_rejected_job_fails_with_openpais_quota_message(cli):
    result = cli("validate", "jobs/rejected/job-over-quota-gang.yaml")
    assert result.code == 1
    assert "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default." in result.out


def test_text_lines_are_file_line_col(cli):
    result = cli("validate", BAD_JOB, "--hived-config", ONE_VC)
    assert result.code == 1
    assert f"{BAD_JOB}:2:1: error[job-schema]:" in result.out


def test_warnings_fail_only_with_strict(cli):
    path = str(FIX / "bad" / "job-yes-no-and-typos.yaml")
    assert cli("validate", path, "--hived-config", ONE_VC).code == 0
    assert cli("validate", path, "--hived-config", ONE_VC, "--strict").code == 1


def test_unreadable_input_is_exit_2_with_one_line(cli):
    result = cli("validate", "no-such-file.yaml", "jobs")
    assert result.code == 2
    assert result.err.strip().splitlines() == ["hivedlab validate: error: cannot read no-such-file.yaml: "
                                               "no such file or folder"]


def test_an_unusable_hived_config_is_exit_2(cli, tmp_path):
    bad = tmp_path / "hived.yaml"
    bad.write_text("foo: [\n")
    result = cli("validate", "jobs", "--hived-config", str(bad))
    assert result.code == 2 and result.err.startswith("hivedlab validate: error: --hived-config")
    assert "Traceback" not in result.err


def test_json(cli):
    result = cli("validate", BAD_JOB, "--hived-config", ONE_VC, "--format", "json")
    doc = json.loads(result.out)
    assert doc["errors"] == 3 and doc["findings"][0]["pointer"] == "/name"


def test_junit(cli):
    result = cli("validate", BAD_JOB, "jobs/job-config-5.yaml", "--hived-config", ONE_VC, "--format", "junit")
    suite = ET.fromstring(result.out)
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert len(suite.findall("testcase/failure")) == 3


def test_github_annotations(cli):
    result = cli("validate", BAD_JOB, "--hived-config", ONE_VC, "--format", "github")
    first = result.out.splitlines()[0]
    assert first.startswith(f"::error file={BAD_JOB},line=2,col=1,title=job-schema::")


def test_sarif(cli, tmp_path):
    out = tmp_path / "v.sarif"
    result = cli("validate", BAD_JOB, "--hived-config", ONE_VC, "--format", "sarif", "--out", str(out))
    assert result.code == 1
    doc = json.loads(out.read_text())
    results = doc["runs"][0]["results"]
    assert doc["version"] == "2.1.0" and len(results) == 3
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 1}
    assert {r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]} == {"job-schema"}


def test_pre_commit_mode_treats_named_files_like_a_walk(cli, tmp_path):
    other = tmp_path / "workflow.yaml"
    other.write_text("on: push\njobs: {}\n")
    assert cli("validate", str(other)).code == 1
    assert cli("validate", "--pre-commit", str(other)).code == 0
    rejected = "jobs/rejected/job-over-quota-gang.yaml"
    assert cli("validate", rejected).code == 1
    result = cli("validate", "--pre-commit", rejected)
    assert result.code == 0 and "expected rejection: [one-vc.yaml] Job requests 4 SKUs" in result.out


def test_jobs_against_a_services_configuration(cli):
    services = str(FIX / "good" / "services-configuration.yaml")
    assert cli("validate", "jobs/job-config-6.yaml", "--hived-config", services).code == 0
    result = cli("validate", "jobs/job-config-0.yaml", "--hived-config", services)
    assert (result.code == 1
            and "VC 'vc1' is not defined in any HiveD config (services-configuration.yaml)" in result.out)


def test_a_bad_hived_config_is_refused_even_without_jobs(cli):
    result = cli("validate", "configs/group.example.yaml", "--hived-config", "configs/group.example.yaml")
    assert result.code == 2 and "not a HiveD config" in result.err


def test_kubeflow_manifests_are_validated_with_their_own_rule_ids(cli):
    good = cli("validate", "jobs/kubeflow/kube-batch", "jobs/kubeflow/volcano", "--format", "json")
    assert good.code == 0 and set(json.loads(good.out)["kinds"].values()) == {"manifests"}
    bad = cli("validate", str(FIX / "kubeflow" / "volcano-scheduler-kube-batch.yaml"), "--format", "json")
    assert bad.code == 1
    assert {f["rule"] for f in json.loads(bad.out)["findings"]} == {"manifest-scheduler"}
