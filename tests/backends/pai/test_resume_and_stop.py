"""`hivedlab run vc-safety --cluster pai` end to end over real HTTP: the fake rest-server, HiveD's web service, a
Kubernetes API whose FrameworkController deletes finished pods, and the real watcher. A rerun or a resumed run keeps
the evidence; `hivedlab stop` stops exactly the run's jobs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hivedlab.backends.pai.rest import PaiClient
from hivedlab.basics.resources import SCHEMAS
from hivedlab.evidence import read_evidence
from tests.support.fakecluster import FakeCluster
from tests.support.fakepai import FakePai
from tests.support.k8s_server import KUBECONFIG, FakeApiServer
from tests.support.local import json_reply
from tests.support.pai_world import StubHived, job
from tests.support.records import action_of, object_of

MEMBERS = ("alice", "bob", "carol", "dan")  # configs/group.example.yaml, the default inventory
INVALID = json_reply(401, {"code": "UnauthorizedUserError", "message": "Your token is invalid."})


class Lab:
    def __init__(self, pai: FakePai, api: FakeApiServer, cluster: FakeCluster, out: Path, tokens: Path) -> None:
        self.pai, self.api, self.cluster, self.out, self.tokens = pai, api, cluster, out, tokens

    @property
    def log(self) -> Path:
        return self.out / "experiments" / "vc-safety" / "evidence.jsonl"

    def submissions(self) -> int:
        return sum(1 for r in self.pai.requests if r["method"] == "POST" and r["path"].endswith("/api/v2/jobs"))

    def verdicts(self) -> dict[str, Any]:
        return json.loads((self.log.parent / "verdicts.json").read_text(encoding="utf-8"))

    def schema_errors(self) -> list[str]:
        schema = json.loads((SCHEMAS / "evidence-record.schema.json").read_text(encoding="utf-8"))
        validator = jsonschema.Draft202012Validator(schema)
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [f"{n}: {e.message}" for n, line in enumerate(lines, 1) for e in validator.iter_errors(json.loads(line))]

    def pod_records(self) -> int:
        return sum(1 for r in read_evidence(self.log).records if r.resource == "pods")

    def fail_first_status_poll_once_running(self) -> None:
        """The run's next job-status call after the first job starts gets a 401: the experiment fails mid-way."""
        self.cluster.on_running.append(lambda job_id: self.pai.fail_next("GET", "/api/v2/jobs/alice~", INVALID)
                                       if job_id.startswith("alice~") else None)


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        pause.wait(0.02)


@pytest.fixture
def lab(serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_charts: None,
        request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The fake cluster's services in the environment `hivedlab run --cluster pai` reads (charts stubbed: these
    tests are about the evidence, the verdicts and the jobs left, not the drawing); parametrized True, the cluster
    answers as the rehearsal cluster's emulated kubelet does."""
    pai, hived = FakePai(serve), StubHived(serve)
    for user in ("carol", "dan"):
        pai.add_user(user, f"{user}-pass")
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{user}: {pai.token(user)}\n" for user in MEMBERS))
    tokens.chmod(0o600)
    kubeconfig = tmp_path / "kubeconfig"
    with FakeApiServer() as api:
        kubeconfig.write_text(KUBECONFIG.format(url=api.url))
        cluster = FakeCluster(pai, api, emulated=getattr(request, "param", False))
        for key, value in {"HIVEDLAB_PAI_URL": pai.url, "HIVEDLAB_HIVED_URL": hived.server.url,
                           "HIVEDLAB_PAI_TOKEN_FILE": str(tokens), "KUBECONFIG": str(kubeconfig),
                           "HIVEDLAB_PAI_POLL_S": "0.02"}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("HIVEDLAB_PAI_TOKEN", raising=False)
        monkeypatch.delenv("HIVEDLAB_KUBE_CONTEXT", raising=False)
        try:
            yield Lab(pai, api, cluster, tmp_path / "out", tokens)
        finally:
            cluster.close()


def run(cli, lab: Lab):
    return cli("run", "vc-safety", "--cluster", "pai", "--out", str(lab.out), "--lang", "en")


@pytest.mark.parametrize("lab", [True, False], ids=["rehearsal", "real"], indirect=True)
def test_rehearsal_evidence_is_named_so_even_when_run_json_is_silent(cli, lab: Lab) -> None:
    """On the rehearsal cluster run.json, claims.json, the report and grading say so; with run.json's `cluster_kind`
    gone, the emulated container ids in the log still do. A real cluster's evidence stays a real cluster's."""
    from hivedlab.checker.grading.batch import grade_one
    from hivedlab.checker.grading.labspec import shipped_lab
    from hivedlab.checker.grading.rubric import load_rubric

    assert run(cli, lab).code == 0
    record_path, rehearsal = lab.out / "run.json", lab.cluster.emulated
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert record.get("cluster_kind") == ({"kind": "rehearsal", "emulated_nodes": ["hostname-dan"]} if rehearsal
                                          else None)
    record.pop("cluster_kind", None)
    for silent in (False, True):
        if silent:
            record_path.write_text(json.dumps(record), encoding="utf-8")
            assert cli("report", str(lab.out), "--lang", "en").code == 0
        report = (lab.out / "report.md").read_text(encoding="utf-8")
        assert json.loads((lab.out / "claims.json").read_text(encoding="utf-8"))["rehearsal"] is rehearsal
        assert ("Evidence source: the rehearsal cluster (real control plane, emulated GPUs)" in report) is rehearsal
        assert ("nodes hostname-dan; container ids begin with `emulated://`" in report) is rehearsal
        assert ("Evidence source: a real cluster." in report) is not rehearsal
    grade = grade_one(lab.out.name, lab.out, load_rubric(), shipped_lab(), None)
    points = next(p.points for p in grade.penalties if p.penalty.check == "rehearsal-evidence")
    assert (points > 0) is rehearsal


def test_a_rerun_after_the_pods_are_gone_keeps_the_evidence_and_the_verdict(cli, lab: Lab) -> None:
    first = run(cli, lab)
    assert first.code == 0, first.err
    assert lab.verdicts()["verdict"] == "consistent"
    assert lab.api.objects["pods"] == {}  # FrameworkController deleted every finished pod
    before, pods, answers = lab.log.read_bytes(), lab.pod_records(), lab.verdicts()["answers"]
    assert pods > 0 and lab.submissions() == 4

    second = run(cli, lab)
    assert second.code == 0, second.err
    assert lab.submissions() == 4  # nothing new submitted
    log = read_evidence(lab.log)
    assert lab.log.read_bytes().startswith(before) and log.chain_ok and log.warnings == ()
    assert lab.pod_records() >= pods
    assert [action_of(r)["type"] for r in log.records if r.action_type in ("plan", "end")] == ["plan", "end"] * 2
    assert [action_of(r).get("resumed", False) for r in log.records if r.action_type == "plan"] == [False, True]
    assert lab.schema_errors() == []
    again = lab.verdicts()
    assert again["verdict"] == "consistent"
    assert [(a["rule"], a["verdict"]) for a in again["answers"]] == [(a["rule"], a["verdict"]) for a in answers]
    run_json = json.loads((lab.out / "run.json").read_text(encoding="utf-8"))
    assert len(run_json["sessions"]) == 2 and run_json["openpai_version"] == "v1.2.0"


def test_a_run_failing_mid_way_names_its_jobs_left_and_resuming_finishes_it(cli, lab: Lab) -> None:
    lab.fail_first_status_poll_once_running()
    first = run(cli, lab)
    assert first.code == 3
    err = [line for line in first.err.splitlines() if line.startswith("hivedlab run:")]
    assert any("vc-safety failed:" in line and "alice's token (" in line and "was refused" in line
               and "HTTP 401 UnauthorizedUserError" in line for line in err)
    [note] = [line for line in err if "still on the cluster" in line]
    assert f"`hivedlab stop {lab.out}`" in note and "alice~job-config-0-alice-vc-safety-" in note
    assert "Traceback" not in first.err
    session_one = lab.log.read_bytes()

    wait_for(lab.cluster.all_done)  # the cluster went on while nobody watched; the pods are gone
    second = run(cli, lab)
    assert second.code == 0, second.err
    assert lab.submissions() == 4
    log = read_evidence(lab.log)
    assert lab.log.read_bytes().startswith(session_one) and log.chain_ok
    ends = [action_of(r)["status"] for r in log.records if r.action_type == "end"]
    assert ends == ["failed", "finished"]
    verdicts = lab.verdicts()
    assert verdicts["verdict"] == "consistent", verdicts
    assert verdicts["log"]["end"] == "finished"
    checked = cli("check", str(lab.log), "--lang", "en")
    assert checked.code == 0 and "2 sessions (a resumed run appended to the log)" in checked.out


def test_resuming_after_the_history_expired_records_the_vanished_pods(cli, lab: Lab) -> None:
    lab.fail_first_status_poll_once_running()
    assert run(cli, lab).code == 3  # the run failed: inconclusive, nothing inconsistent
    seen = {object_of(r)["metadata"]["uid"] for r in read_evidence(lab.log).records if r.resource == "pods"}
    wait_for(lab.cluster.all_done)
    for resource in ("pods", "events", "frameworks"):
        lab.api.compact(resource)  # the watch cannot resume: 410, a re-list, and the pods seen before are gone
    run(cli, lab)
    records = read_evidence(lab.log).records
    vanished = {object_of(r)["metadata"]["uid"] for r in records if r.resource == "pods" and r.synthetic}
    assert vanished and vanished <= seen
    assert read_evidence(lab.log).chain_ok and lab.submissions() == 4


def test_stop_stops_exactly_the_runs_jobs_still_on_the_cluster(cli, lab: Lab) -> None:
    lab.cluster.run_ticks = 10_000  # nothing finishes by itself
    lab.fail_first_status_poll_once_running()
    assert run(cli, lab).code == 3  # the run failed: inconclusive, nothing inconsistent
    client = PaiClient(lab.pai.url, lab.pai.token("bob"), sleep=lambda s: None)
    client.submit(job("bobs-own-job"), "bobs-own-job")  # Bob's own job, not the run's, in the same VC
    client.close()

    stopped = cli("stop", str(lab.out))
    assert stopped.code == 0, stopped.err
    ours = [job_id for job_id in lab.pai.jobs if "-vc-safety-" in job_id]
    assert len(ours) == 4 and stopped.out.count("stopped ") == 4
    assert all(lab.pai.jobs[job_id]["jobStatus"]["state"] == "STOPPED" for job_id in ours)
    assert lab.pai.jobs["bob~bobs-own-job"]["jobStatus"]["state"] == "WAITING"
    calls = (lab.out / "pai" / "rest-calls.jsonl").read_text(encoding="utf-8")
    assert calls.count('"method": "PUT"') == 4 and lab.pai.token("alice") not in calls

    again = cli("stop", str(lab.out))
    assert again.code == 0 and again.out.count("left as it is") == 4 and "stopped " not in again.out


def test_stop_without_a_members_token_says_so_and_stops_the_others(cli, lab: Lab) -> None:
    lab.cluster.run_ticks = 10_000
    lab.fail_first_status_poll_once_running()
    assert run(cli, lab).code == 3  # the run failed: inconclusive, nothing inconsistent
    fewer = lab.tokens.with_name("fewer-tokens")
    fewer.write_text("".join(f"{user}: {lab.pai.token(user)}\n" for user in MEMBERS if user != "dan"))
    fewer.chmod(0o600)
    result = cli("stop", str(lab.out), "--token-file", str(fewer))
    assert result.code == 1
    assert "could not stop dan~" in result.out and "no OpenPAI token for member dan" in result.out
    assert result.out.count("stopped ") == 3


def test_an_error_before_the_experiment_starts_still_names_the_jobs_left(cli, lab: Lab) -> None:
    lab.cluster.run_ticks = 10_000
    lab.fail_first_status_poll_once_running()
    assert run(cli, lab).code == 3  # the run failed: inconclusive, nothing inconsistent
    lab.pai.info["version"] = "v1.8.0"  # the next session cannot even open the backend
    result = run(cli, lab)
    [error] = [line for line in result.err.splitlines() if line.startswith("hivedlab run: error:")]
    assert result.code == 2 and "targets v1.2.0" in error
    assert "still on the cluster: alice~job-config-0-alice-vc-safety-" in error and f"hivedlab stop {lab.out}" in error


def test_when_the_master_is_gone_the_note_still_gives_the_stop_command(cli, lab: Lab, monkeypatch) -> None:
    from hivedlab.backends.pai import leftover_note

    lab.cluster.run_ticks = 10_000
    lab.fail_first_status_poll_once_running()
    assert run(cli, lab).code == 3  # the run failed: inconclusive, nothing inconsistent
    monkeypatch.setenv("HIVEDLAB_PAI_URL", "http://127.0.0.1:9")
    started = time.monotonic()
    note = leftover_note(lab.out)
    assert "could not ask the cluster" in note and f"`hivedlab stop {lab.out}`" in note
    assert time.monotonic() - started < 5  # one try, no back-off: the run has already failed


def test_stop_needs_a_real_run_directory(cli, tmp_path: Path) -> None:
    result = cli("stop", str(tmp_path))
    assert result.code == 2 and result.err.count("\n") == 1 and "no pai/submitted.json" in result.err
    assert cli("stop", "--help").out.count("hivedlab stop out") >= 1


def test_a_bad_token_stops_the_run_before_anything_is_submitted(cli, lab: Lab) -> None:
    lines = lab.tokens.read_text().splitlines()
    lab.tokens.write_text("\n".join(lines[:1] + ["bob: not-a-valid-token"] + lines[2:]) + "\n")
    result = run(cli, lab)
    assert result.code == 2 and lab.submissions() == 0 and lab.pai.jobs == {}
    [error] = [line for line in result.err.splitlines() if "error:" in line]
    assert "member bob" in error and "line 2 of" in error and "not-a-valid-token" not in result.err


def token_calls(lab: Lab) -> list[str]:
    """The users whose token the run tried (`GET /api/v2/jobs?username=U`, tokens.check_tokens)."""
    prefix = "/rest-server/api/v2/jobs?username="
    return [r["path"][len(prefix):] for r in lab.pai.requests if r["path"].startswith(prefix)]


def test_a_members_turn_checks_and_uses_only_that_members_token(cli, lab: Lab) -> None:
    lab.tokens.write_text(f"bob: {lab.pai.token('bob')}\n")  # the other members' tokens are not needed
    result = cli("run", "priority", "--cluster", "pai", "--member", "Bob", "--out", str(lab.out), "--lang", "en")
    assert result.code in (0, 1, 3), result.err  # the fake cluster does not preempt: the verdict is not the point
    assert set(token_calls(lab)) == {"bob"}
    posts = [r for r in lab.pai.requests if r["method"] == "POST" and r["path"].endswith("/api/v2/jobs")]
    tag = json.loads((lab.out / "run.json").read_text(encoding="utf-8"))["run_tag"]
    assert len(posts) == 2 and set(lab.pai.jobs) == {f"bob~job-config-1-bob-priority-turn-{tag}",
                                                        f"bob~job-config-2-bob-priority-turn-{tag}"}
    log = lab.out / "experiments" / "priority" / "bob" / "evidence.jsonl"
    assert read_evidence(log).chain_ok
    submitted = json.loads((lab.out / "pai" / "submitted.json").read_text(encoding="utf-8"))
    assert {job["experiment"] for job in submitted.values()} == {"priority/bob"}  # what `hivedlab stop` names
    assert json.loads((lab.out / "run.json").read_text(encoding="utf-8"))["members"] == {"priority/bob": ["bob"]}


def test_a_members_turn_without_their_token_stops_before_anything_is_submitted(cli, lab: Lab) -> None:
    lab.tokens.write_text(f"alice: {lab.pai.token('alice')}\nbob: {lab.pai.token('bob')}\n")
    result = cli("run", "gang", "--cluster", "pai", "--member", "carol", "--out", str(lab.out))
    assert result.code == 2 and lab.submissions() == 0
    assert "no OpenPAI token for member carol" in result.err
    assert token_calls(lab) == []  # carol's token is missing: nobody's is tried, nothing is submitted


def test_each_members_turns_need_every_members_token(cli, lab: Lab) -> None:
    lab.tokens.write_text("".join(f"{user}: {lab.pai.token(user)}\n" for user in MEMBERS[:3]))
    result = cli("run", "vc-safety", "--cluster", "pai", "--each-member", "--out", str(lab.out))
    assert result.code == 2 and "no OpenPAI token for member dan" in result.err and lab.submissions() == 0


def test_a_members_turn_resumes_in_its_own_folder(cli, lab: Lab) -> None:
    args = ("run", "vc-safety", "--cluster", "pai", "--member", "Dan", "--out", str(lab.out))
    assert cli(*args).code == 0
    assert lab.submissions() == 4 and lab.log.is_file()  # vc-safety has no turns: every member at once, one folder
    assert cli(*args).code == 0
    assert lab.submissions() == 4  # resumed: nothing submitted twice
    log = read_evidence(lab.log)
    assert log.chain_ok and [(r.action or {}).get("resumed", False)
                             for r in log.records if r.action_type == "plan"] == [False, True]


def test_a_run_whose_jobs_the_user_stops_ends_stopped_and_is_never_inconsistent(cli, lab: Lab) -> None:
    """`hivedlab stop` from another terminal while the run waits: the run ends `stopped`, saying who stopped what and
    when (end record and run.json); what could not be seen before the stop is inconclusive, never inconsistent; the
    timeline says "stopped by the user", not "completed" (issue 41, "a stop is a stop")."""
    from hivedlab.backends.pai import stop_run

    lab.cluster.run_ticks = 10_000  # nothing finishes by itself: only the stop ends the jobs
    stopper: list[threading.Thread] = []

    def stop() -> None:
        wait_for(lambda: lab.submissions() == 4)  # every member's job submitted, one running
        stop_run(lab.out)

    def stop_when_running(job_id: str) -> None:
        if not stopper:
            stopper.append(threading.Thread(target=stop))
            stopper[0].start()

    lab.cluster.on_running.append(stop_when_running)
    result = run(cli, lab)
    stopper[0].join(timeout=30)
    end = [r.action for r in read_evidence(lab.log).records if r.action and r.action["type"] == "end"][-1] or {}
    assert end["status"] == "stopped" and end["by"] == "hivedlab stop" and len(end["jobs"]) == 4
    assert end["reason"].startswith("stopped by the user at ") and end["reason_zh"].startswith("用户于 UTC ")
    outcome = json.loads((lab.out / "run.json").read_text(encoding="utf-8"))["outcomes"]["vc-safety"]
    assert outcome["status"] == "stopped" and outcome["jobs"] == end["jobs"] and outcome["at"]
    verdict = lab.verdicts()
    assert verdict["verdict"] != "inconsistent" and result.code in (0, 3), result.out
    assert all(a["answer"]["en"] == end["reason"] for a in verdict["answers"] if a["verdict"] != "consistent")
    report = (lab.out / "report.md").read_text(encoding="utf-8")
    assert "stopped by the user" in report and "the job had completed" not in report


def test_a_submission_the_rest_server_refuses_is_said_at_once_and_the_run_ends_refused(
        cli, lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`instances:` misspelt `instance:` in job-config-0: the rest-server's 400 is printed when it comes, with the
    job, the server's code and message and the fix; the run ends `refused`, exit 3 (inconclusive)."""
    import shutil

    import hivedlab.plans.loader
    from hivedlab.basics.resources import JOBS

    jobs = tmp_path / "jobs"
    shutil.copytree(JOBS, jobs)
    job = jobs / "job-config-0.yaml"
    job.write_text(job.read_text(encoding="utf-8").replace("instances:", "instance:"), encoding="utf-8")
    monkeypatch.setattr(hivedlab.plans.loader, "JOBS", jobs)
    result = run(cli, lab)
    assert result.code == 3, result.err
    notice = next(line for line in result.err.splitlines() if "the rest-server refused alice's" in line)
    assert "HTTP 400, InvalidProtocolError: .taskRoles['train']: should NOT have additional properties " \
        "('instance')" in notice and notice.endswith("run `hivedlab validate jobs/job-config-0.yaml`.")
    outcome = json.loads((lab.out / "run.json").read_text(encoding="utf-8"))["outcomes"]["vc-safety"]
    assert outcome["status"] == "refused" and lab.verdicts()["verdict"] == "inconclusive"
    assert not lab.schema_errors()

