"""The real backend end to end against a fake rest-server, a fake HiveD inspect API and a replayed watch stream."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from hivedlab.backends.pai import open_backend
from hivedlab.backends.pai.live import JobRow, LiveView
from hivedlab.backends.protocol import RunInfo
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter, read_evidence
from hivedlab.models.hived import messages as hived_messages
from hivedlab.models.openpai.naming import framework_name
from tests.support.pai_world import INVENTORY, ONE_VC, OPEN, TWO_VC, ReplayWatcher, job, make


def pod(framework, node=None, running=False):
    status = {"phase": "Running" if running else "Pending"}
    if running:
        status["containerStatuses"] = [{"name": "app", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]
    return {"kind": "Pod", "metadata": {"name": f"{framework}-train-0", "uid": "u1"},
            "spec": {"nodeName": node} if node else {}, "status": status}


def failed_scheduling(framework):
    return {"kind": "Event", "reason": "FailedScheduling",
            "involvedObject": {"kind": "Pod", "name": f"{framework}-train-0"},
            "message": "hivedscheduler: Pod is waiting for preemptible or free resource to appear: vc1"}


def test_a_whole_experiment(world, tmp_path):
    pai, _, _ = world
    backend, watcher, writer = make(world, tmp_path)
    backend.switch_config("two-vc", TWO_VC)
    result = backend.submit("alice", "low", job("low-alice-r1"))
    assert result.accepted and result.framework_name == framework_name("alice", "low-alice-r1")
    status = backend.job_status("alice", "low-alice-r1")
    assert (status.state, status.waiting, status.ran) == ("WAITING", False, False)

    fw = result.framework_name
    watcher.push("ADDED", "pods", pod(fw))
    watcher.push("ADDED", "events", failed_scheduling(fw))
    backend._cache.clear()
    assert backend.job_status("alice", "low-alice-r1").waiting

    def cluster_moves():
        pai.set_state("alice~low-alice-r1", "RUNNING")
        watcher.push("MODIFIED", "pods", pod(fw, "hostname-dan", running=True))
        backend._cache.clear()

    backend._sleep = lambda s: cluster_moves()
    assert backend.advance_until(lambda: backend.job_status("alice", "low-alice-r1").ran, 60)
    assert backend.stop("alice", "low-alice-r1").status == 202
    backend.close()
    assert watcher.stopped
    writer.close()

    log = read_evidence(writer.path)
    assert [r.resource for r in log.records if r.kind == "object"] == ["pods", "events", "pods"] and log.chain_ok
    state = json.loads((tmp_path / "run" / "pai" / "submitted.json").read_text())
    assert state["alice~low-alice-r1"]["status"] == "accepted"
    calls = (tmp_path / "run" / "pai" / "rest-calls.jsonl").read_text()
    assert '"path": "/api/v2/jobs"' in calls and pai.token("alice") not in calls


def test_a_transient_hived_error_is_not_a_wait(world, tmp_path):
    """HiveD's informer lag (the pod not yet known to it) is retried by kube-scheduler: a plan step waiting for
    `waiting` must not take it for one (docs/checker.md#scheduler-messages)."""
    backend, watcher, writer = make(world, tmp_path)
    backend.switch_config("two-vc", TWO_VC)
    fw = backend.submit("alice", "low", job("low-alice-r1")).framework_name
    watcher.push("ADDED", "pods", pod(fw))
    lag = {**failed_scheduling(fw), "message": f"Code: 400, Message: {hived_messages.POD_NOT_INFORMED}"}
    watcher.push("ADDED", "events", lag)
    backend._cache.clear()
    assert not backend.job_status("alice", "low-alice-r1").waiting
    watcher.push("ADDED", "events", failed_scheduling(fw))
    backend._cache.clear()
    assert backend.job_status("alice", "low-alice-r1").waiting
    backend.close()
    writer.close()


def test_advance_until_times_out_on_wall_time(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    now = [0.0]
    backend._clock = lambda: now[0]
    backend._sleep = lambda s: now.__setitem__(0, now[0] + s)
    assert backend.advance_until(lambda: False, 0.05) is False
    assert now[0] == pytest.approx(0.05)


def test_resume_never_submits_twice(world, tmp_path):
    pai, _, _ = world
    first, _, w1 = make(world, tmp_path)
    first.submit("alice", "low", job("low-alice-r1"))
    first.close()
    w1.close()
    again, _, _ = make(world, tmp_path)
    result = again.submit("alice", "low", job("low-alice-r1"))
    assert result.accepted and result.reply.body["resumed"] is True
    assert len([r for r in pai.requests if r["method"] == "POST" and r["path"].endswith("/jobs")]) == 1


def test_over_quota_is_a_rejection_not_a_failure(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    result = backend.submit("alice", "big", job("big-alice-r1", instances=4))
    assert not result.accepted and result.reply.status == 400


def test_job_name_taken_is_one_sentence(world, tmp_path):
    pai, _, _ = world
    make(world, tmp_path)[0].client("alice").submit(job("taken"), "taken")
    backend, _, _ = make(world, tmp_path / "other")
    with pytest.raises(HivedlabError, match="never be reused"):
        backend.submit("alice", "k", job("taken"))


def test_unknown_vc_is_one_sentence(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match="scheduler-config"):
        backend.submit("alice", "k", job("x", vc="vc2"))


def test_member_without_token(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match="no OpenPAI token for member carol"):
        backend.submit("carol", "k", job("x"))


def test_busy_cluster_is_refused(world, tmp_path):
    pai, _, _ = world
    make(world, tmp_path / "someone")[0].client("bob").submit(job("bobs-own-job"), "bobs-own-job")
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match=r"not idle: bob~bobs-own-job \(WAITING, vc1\)"):
        backend.switch_config("two-vc", TWO_VC)


def test_leftover_of_an_earlier_experiment_counts_as_busy(world, tmp_path):
    first, _, _ = make(world, tmp_path, experiment="priority")
    first.submit("alice", "low", job("low-alice-r1"))
    resumed, _, _ = make(world, tmp_path, experiment="priority")
    resumed.switch_config("two-vc", TWO_VC)  # its own experiment's job: fine (a resumed run)
    later, _, _ = make(world, tmp_path, experiment="gang")
    with pytest.raises(HivedlabError, match="not idle: alice~low-alice-r1"):
        later.switch_config("two-vc", TWO_VC)


def test_wrong_config_non_interactive(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match="hivedlab scheduler-config one-vc"):
        backend.switch_config("one-vc", ONE_VC)


def test_wrong_config_interactive_waits_for_the_switch(world, tmp_path):
    _, hived, _ = world
    asked = []

    def ask(prompt):
        asked.append(prompt)
        hived.vcs = ["default"]  # the user ran paictl
        return ""

    backend, _, _ = make(world, tmp_path, ask=ask, interactive=True)
    backend.switch_config("one-vc", ONE_VC)
    assert "scheduler-config one-vc" in asked[0]


def test_hived_not_answering(world, tmp_path):
    _, hived, _ = world
    hived.vcs = None
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match="default scheduler"):
        backend.switch_config("two-vc", TWO_VC)


def test_ctrl_c_stops_only_this_runs_jobs(world, tmp_path):
    pai, _, _ = world
    make(world, tmp_path / "someone")[0].client("bob").submit(job("bobs-own-job", vc="default"), "bobs-own-job")
    backend, _, _ = make(world, tmp_path, ask=lambda prompt: "y", interactive=True)
    backend.submit("alice", "low", job("low-alice-r1"))
    backend.job_status("alice", "low-alice-r1")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backend.advance_until(interrupted, 60)
    assert pai.jobs["alice~low-alice-r1"]["jobStatus"]["state"] == "STOPPED"
    assert pai.jobs["bob~bobs-own-job"]["jobStatus"]["state"] == "WAITING"
    with pytest.raises(HivedlabError, match="stops only its own jobs"):
        backend.stop("bob", "bobs-own-job")


def test_ctrl_c_declined_leaves_jobs(world, tmp_path, capsys):
    pai, _, _ = world
    backend, _, _ = make(world, tmp_path, ask=lambda prompt: "n", interactive=True)
    backend.submit("alice", "low", job("low-alice-r1"))
    with pytest.raises(KeyboardInterrupt):
        backend.advance_until(lambda: (_ for _ in ()).throw(KeyboardInterrupt), 60)
    assert pai.jobs["alice~low-alice-r1"]["jobStatus"]["state"] == "WAITING"
    assert "left running: alice~low-alice-r1" in capsys.readouterr().err


def test_missing_kubeconfig(world, tmp_path):
    pai, hived, token_file = world
    writer = EvidenceWriter(tmp_path / "e.jsonl", "k8s")
    OPEN.append(writer)
    with pytest.raises(HivedlabError, match="no kubeconfig at .*nope"):
        open_backend(writer, INVENTORY, run_dir=tmp_path, pai_url=pai.url, token_file=token_file,
                     hived_url=hived.server.url, kubeconfig=str(tmp_path / "nope"), environ={})


def test_other_openpai_version_refused(world, tmp_path):
    pai, hived, token_file = world
    pai.info["version"] = "v1.8.0"
    writer = EvidenceWriter(tmp_path / "e.jsonl", "k8s")
    OPEN.append(writer)
    with pytest.raises(HivedlabError, match="targets v1.2.0"):
        open_backend(writer, INVENTORY, run_dir=tmp_path, pai_url=pai.url, token_file=token_file,
                     hived_url=hived.server.url, watcher_factory=lambda tap: None, environ={})


@pytest.mark.parametrize("answer", ["null", "missing"])
def test_version_null_or_missing_is_a_warning(world, tmp_path, answer):
    """v1.2.0 reads its version from a ConfigMap and answers `"version": null` when it cannot: a working cluster."""
    pai, hived, token_file = world
    if answer == "null":
        pai.info["version"] = None
    else:
        del pai.info["version"]
    writer = EvidenceWriter(tmp_path / "run" / "experiments" / "gang" / "evidence.jsonl", "k8s")
    OPEN.append(writer)
    warnings = []
    backend = open_backend(writer, INVENTORY, pai_url=pai.url, token_file=token_file, hived_url=hived.server.url,
                           watcher_factory=lambda tap: None, environ={}, warn=warnings.append)
    OPEN.append(backend)
    assert len(warnings) == 1 and "does not say its version" in warnings[0]
    assert backend.run_info == RunInfo()


def test_unreachable_master(world, tmp_path):
    _, hived, token_file = world
    writer = EvidenceWriter(tmp_path / "e.jsonl", "k8s")
    OPEN.append(writer)
    with pytest.raises(HivedlabError, match="127.0.0.1:9 refused the connection: nothing listens there"):
        open_backend(writer, INVENTORY, run_dir=tmp_path, pai_url="http://127.0.0.1:9", token_file=token_file,
                     hived_url=hived.server.url, watcher_factory=lambda tap: None, environ={}, sleep=lambda s: None)


def test_live_view_renders_jobs_tasks_and_nodes():
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, force_terminal=True, width=160))
    view.step("submit low as alice")
    view.show([JobRow("alice", "low-alice-r1", "RUNNING", 1, (("train-0", "hostname-dan", "RUNNING"),),
                      "")])
    view.close()
    text = buffer.getvalue()
    assert "low-alice-r1" in text and "train-0@hostname-dan" in text and "submit low as alice" in text


def test_hivedlab_run_cluster_pai_end_to_end(world, tmp_path, monkeypatch, cli):
    """`hivedlab run priority --cluster pai` through helper E's runner, configured from the environment only."""
    import hivedlab.backends.pai as pai_module

    pai, hived, token_file = world
    pai.auto_advance = (2, 4)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    watchers = []

    def fake_watcher(writer, *, kubeconfig, context, namespace):
        watchers.append(ReplayWatcher(writer))
        return watchers[-1]

    monkeypatch.setattr(pai_module, "default_watcher", fake_watcher)
    for key, value in {"HIVEDLAB_PAI_URL": pai.url, "HIVEDLAB_HIVED_URL": hived.server.url,
                       "HIVEDLAB_PAI_TOKEN_FILE": str(token_file), "KUBECONFIG": str(kubeconfig),
                       "HIVEDLAB_PAI_POLL_S": "0.001"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HIVEDLAB_PAI_TOKEN", raising=False)
    out = tmp_path / "out"
    result = cli("run", "priority", "--cluster", "pai", "--out", str(out), "--no-report")
    assert result.code in (0, 1, 3), result.err
    assert watchers and watchers[0].stopped
    assert sorted(j["jobStatus"]["state"] for j in pai.jobs.values()) == ["SUCCEEDED", "SUCCEEDED"]
    assert all(job_id.startswith("alice~") for job_id in pai.jobs)
    log = read_evidence(out / "experiments" / "priority" / "evidence.jsonl")
    actions = [r.action["type"] for r in log.records if r.kind == "action"]
    assert actions[0] == "plan" and actions.count("submit") == 2 and actions[-1] == "end"
    assert log.records[-1].action["status"] == "finished"
    state = json.loads((out / "pai" / "submitted.json").read_text())
    assert {v["experiment"] for v in state.values()} == {"priority"}
    assert pai.token("alice") not in (out / "pai" / "rest-calls.jsonl").read_text()


def test_a_resumed_backend_knows_what_the_pods_did_before(world, tmp_path):
    """The pods of the first session may be gone from the cluster: the backend reads them back from the log."""
    pai, _, _ = world
    first, watcher, writer = make(world, tmp_path)
    result = first.submit("alice", "low", job("low-alice-r1"))
    watcher.push("ADDED", "pods", pod(result.framework_name, "hostname-dan", running=True))
    watcher.push("ADDED", "events", failed_scheduling(result.framework_name))
    first.close()
    writer.close()
    again, _, _ = make(world, tmp_path)
    status = again.job_status("alice", "low-alice-r1")
    assert pai.jobs["alice~low-alice-r1"]["jobStatus"]["state"] == "WAITING"
    assert status.ran and status.waiting
