"""The plain-Kubernetes backend over real HTTP against a fake API server that serves TFJobs and PodGroups, with a
fake training operator and scheduler behind it: the Kubeflow gang experiment runs, every object change is
recorded, the same rules as on the simulated cluster judge it, and what the run created is removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from hivedlab.backends.k8s import open_backend
from hivedlab.backends.watcher import make_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import SCHEMAS
from hivedlab.checker.judging.judge import judge_file
from hivedlab.evidence import read_evidence
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.models.kubeflow.manifests import FORMS, for_run, k8s_name
from hivedlab.plans.loader import load_plan
from hivedlab.runner import ExperimentRun, RunContext, k8s_plans, run_experiments, run_pipeline
from tests.support.fakekubeflow import FakeKubeflow
from tests.support.k8s_crd_server import KUBE_BATCH_CRDS, VOLCANO_CRDS, FakeKubeApi
from tests.support.paths import ROOT
from tests.support.stepped_clock import SteppedClock

TAG = "20261126t090000"


def _run(kube: FakeKubeApi, world: FakeKubeflow, kubeconfig: Path, out: Path, form: str,
         scheduler: str | None = None, clock: SteppedClock | None = None, answer: str = "") -> list[ExperimentRun]:
    plans, form = k8s_plans([load_plan("kubeflow-gang")], scheduler, form)
    clock = clock or SteppedClock(world)
    ctx = RunContext(out, "k8s", None, load_inventory(None), TAG)

    def make(plan: Any, writer: Any) -> Any:
        namespace = k8s_name(f"hivedlab-{plan.run_id}-{TAG}")
        clock.follow(namespace, writer.path)
        return open_backend(writer, FORMS[form], namespace, gang=plan.scheduler != "default",
                            api_client=make_api_client(str(kubeconfig)), interactive=True, poll_s=15.0,
                            clocks=clock.clocks(), watcher_options={"server_timeout_s": 5},
                            ask=lambda prompt: answer)

    return run_experiments(plans, make, ctx)


def _objects(path: Path, resource: str) -> list[dict[str, Any]]:
    return [r.object for r in read_evidence(path).records if r.resource == resource and r.object is not None]


@pytest.mark.parametrize(("kube", "form", "gang_scheduler"),
                         [(KUBE_BATCH_CRDS, "kube-batch", "kube-batch"), (VOLCANO_CRDS, "volcano", "volcano")],
                         indirect=["kube"], ids=["kube-batch", "volcano"])
def test_the_gang_experiment_runs_is_judged_and_cleaned_up(kube, world, kubeconfig, tmp_path, form, gang_scheduler):
    runs = _run(kube, world, kubeconfig, tmp_path / "out", form)
    assert [(r.run_id, r.outcome.status) for r in runs] == [
        ("kubeflow-gang@default", "finished"), (f"kubeflow-gang@{gang_scheduler}", "finished")]
    answers = {}
    for run in runs:
        verdict = judge_file(run.evidence, "kubeflow-gang")
        assert verdict.verdict == "consistent", [a.answer.en for a in verdict.answers]
        answers.update({a.rule: a.answer.en for a in verdict.answers})
    assert set(answers) == {"partial-start", "all-or-nothing", "deadlock", "no-deadlock"}
    assert "a partial start" in answers["partial-start"] and "all or nothing" in answers["all-or-nothing"]
    # one operator thread creates one job's pods before the other's: no deadlock, the second job starts partially
    assert answers["deadlock"].endswith("no deadlock.") and "after a partial start" in answers["deadlock"]
    assert "no deadlock" in answers["no-deadlock"]
    if form == "kube-batch":  # tf-operator v0.5's events on its TFJobs, as the watcher recorded them
        reasons = {run.run_id: {e["reason"] for e in _objects(run.evidence, "events")
                                if e["involvedObject"]["kind"] == "TFJob"} for run in runs}
        done = {"SuccessfulCreatePod", "SuccessfulCreateService", "ExitedWithCode", "TFJobSucceeded",
                "SuccessfulDeletePod", "SuccessfulDeleteService", "SuccessfulDeletePodGroup"}
        assert reasons == {"kubeflow-gang@default": done | {"SettedPodTemplateSchedulerName"},
                           "kubeflow-gang@kube-batch": done}
        groups = [g for g in _objects(runs[1].evidence, "podgroups") if g.get("status")]
        assert {c["reason"] for g in groups for c in g["status"]["conditions"]} == {"NotEnoughResources"}
    assert not kube.objects["namespaces"] and not kube.objects["tfjobs"] and not kube.objects["pods"]


def test_the_report_says_where_the_evidence_comes_from(kube, world, kubeconfig, tmp_path, quick_charts):
    out = tmp_path / "out"
    runs = _run(kube, world, kubeconfig, out, "kube-batch")
    notes = run_pipeline(out, runs, "en").notes
    assert not any(note.startswith("failed") for note in notes.values()), notes
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "comes from a real plain Kubernetes cluster without OpenPAI or HiveD" in report
    assert "tfjob-gang-2-alice-kubeflow-gang-20261126t090000-worker-1   0/1     Pending" in report
    assert json.loads((out / "claims.json").read_text(encoding="utf-8"))["cluster"] == "k8s"


def test_every_change_in_the_namespace_is_recorded_with_the_objects_as_served(kube, world, kubeconfig, tmp_path):
    runs = _run(kube, world, kubeconfig, tmp_path / "out", "kube-batch", scheduler="kube-batch")
    (run,) = runs
    namespace = k8s_name(f"hivedlab-{run.run_id}-{TAG}")
    (removed,) = [rv for rv, r, kind, o in kube.history if r == "namespaces" and kind == "DELETED"]
    served = {(r, o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for rv, r, _, o in kube.history
              if r in ("pods", "events", "tfjobs", "podgroups") and o["metadata"].get("namespace") == namespace
              and rv < removed}  # the namespace goes last, once the watcher has stopped
    log = read_evidence(run.evidence)
    assert log.chain_ok and log.records[0].source == "k8s"
    recorded = {(r.resource, r.object["metadata"]["uid"], r.object["metadata"]["resourceVersion"])
                for r in log.records if r.kind == "object" and r.object is not None}
    assert served and served == recorded
    groups = _objects(run.evidence, "podgroups")
    assert {g["apiVersion"] for g in groups} == {"scheduling.incubator.k8s.io/v1alpha1"}
    deleted = {r.object["metadata"]["name"] for r in log.records
               if r.resource == "tfjobs" and r.watch_type == "DELETED"}
    assert len(deleted) == 4  # two stopped by the plan, two removed at the end
    plan = next(r.action for r in log.records if r.action_type == "plan")
    assert plan is not None and plan["cluster"] == "k8s" and plan["scheduler"] == "kube-batch"
    assert not any(r.action_type == "config-switch" for r in log.records)  # no HiveD on this cluster
    schema = json.loads((SCHEMAS / "evidence-record.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    for line in run.evidence.read_text(encoding="utf-8").splitlines():
        validator.validate(json.loads(line))


def test_a_submission_records_the_manifests_as_sent(kube, world, kubeconfig, tmp_path):
    (run,) = _run(kube, world, kubeconfig, tmp_path / "out", "kube-batch", scheduler="default")
    submits = [r.action for r in read_evidence(run.evidence).records if r.action_type == "submit" and r.action]
    assert len(submits) == 4
    for submit in submits:
        documents = list(yaml.safe_load_all(submit["protocol"]))
        assert [d["kind"] for d in documents] == ["TFJob"]  # the default scheduler's run has no PodGroup
        (tfjob,) = documents
        assert tfjob["metadata"]["name"] == submit["job_name"] == submit["framework_name"]
        for spec in tfjob["spec"]["tfReplicaSpecs"].values():
            assert spec["template"]["spec"]["schedulerName"] == "default-scheduler"
        assert submit["reply"]["status"] == 201
        sent = (tmp_path / "out" / "contrast" / "jobs" / run.run_id / f"{submit['job_name']}.yaml").read_text()
        assert sent == submit["protocol"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["cluster"] == "k8s"


@pytest.mark.parametrize(("kube", "missing"), [
    (frozenset({"scheduling.incubator.k8s.io/v1alpha1/podgroups"}), "TFJob (kubeflow.org/v1beta1)"),
    (frozenset({"kubeflow.org/v1beta1/tfjobs"}), "PodGroup (scheduling.incubator.k8s.io/v1alpha1)"),
    (VOLCANO_CRDS, "TFJob (kubeflow.org/v1beta1) and no PodGroup"),
], indirect=["kube"], ids=["no-tfjob", "no-podgroup", "other-form"])
def test_a_cluster_without_the_crds_is_refused_naming_what_to_install(kube, kubeconfig, tmp_path, missing):
    from hivedlab.evidence import EvidenceWriter

    with EvidenceWriter(tmp_path / "evidence.jsonl", "k8s") as writer, pytest.raises(HivedlabError) as caught:
        open_backend(writer, FORMS["kube-batch"], "hivedlab-x", api_client=make_api_client(str(kubeconfig)))
    message = str(caught.value)
    assert missing in message and "install tf-operator v0.5" in message and "\n" not in message
    assert not kube.objects["namespaces"]  # refused before anything was made


def test_a_namespace_hivedlab_did_not_make_is_refused(kube, kubeconfig, tmp_path):
    from hivedlab.evidence import EvidenceWriter

    kube.put("namespaces", {"metadata": {"name": "hivedlab-taken"}})
    with EvidenceWriter(tmp_path / "evidence.jsonl", "k8s") as writer, pytest.raises(HivedlabError) as caught:
        open_backend(writer, FORMS["kube-batch"], "hivedlab-taken", api_client=make_api_client(str(kubeconfig)))
    assert "was not made by hivedlab" in str(caught.value)


def _backend(kube: FakeKubeApi, kubeconfig: Path, tmp_path: Path, world: FakeKubeflow, answer: str) -> Any:
    from hivedlab.evidence import EvidenceWriter

    writer = EvidenceWriter(tmp_path / "evidence.jsonl", "k8s")
    clock = SteppedClock(world)
    clock.follow("hivedlab-ctrl-c", writer.path)
    backend = open_backend(writer, FORMS["kube-batch"], "hivedlab-ctrl-c", api_client=make_api_client(str(kubeconfig)),
                           interactive=True, poll_s=15.0, clocks=clock.clocks(),
                           watcher_options={"server_timeout_s": 5}, ask=lambda prompt: answer)
    text = (ROOT / "jobs" / "kubeflow" / "kube-batch" / "tfjob-gang-1.yaml").read_text(encoding="utf-8")
    manifests, name = for_run(text, "tfjob-gang-1-alice")
    assert backend.submit("alice", "job1", manifests).accepted

    def interrupted() -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backend.advance_until(interrupted, 600)
    backend.close()
    writer.close()
    return name


@pytest.mark.parametrize(("answer", "removed"), [("y", True), ("", False)], ids=["yes", "no"])
def test_ctrl_c_asks_before_removing_what_the_run_made(kube, world, kubeconfig, tmp_path, answer, removed, capsys):
    name = _backend(kube, kubeconfig, tmp_path, world, answer)
    left = {o["metadata"]["name"] for o in kube.items("tfjobs", "hivedlab-ctrl-c")}
    assert (left == set()) is removed and bool(kube.objects["namespaces"]) is not removed
    if not removed:
        assert left == {name} and "kubectl delete namespace hivedlab-ctrl-c" in capsys.readouterr().err


@pytest.mark.parametrize(("gpus", "warned"), [((1, 1, 1, 1), False), ((1, 1, 2, 0), True)],
                         ids=["four-single", "other"])
def test_a_cluster_of_another_shape_is_warned_about(tmp_path: Path, gpus: tuple[int, ...], warned: bool) -> None:
    from hivedlab.evidence import EvidenceWriter

    warnings: list[str] = []
    with FakeKubeApi(KUBE_BATCH_CRDS, gpus=gpus) as kube:
        (tmp_path / "kc").write_text(kube.kubeconfig(), encoding="utf-8")
        with EvidenceWriter(tmp_path / "evidence.jsonl", "k8s") as writer:
            backend = open_backend(writer, FORMS["kube-batch"], "hivedlab-shape",
                                   api_client=make_api_client(str(tmp_path / "kc")), warn=warnings.append)
            backend.close()
    assert backend.run_info.gpu_nodes == {f"k8s-g{i + 1}": n for i, n in enumerate(gpus) if n}
    assert bool(warnings) is warned
    if warned:
        assert "4 GPU(s) (k8s-g1: 1, k8s-g2: 1, k8s-g3: 2)" in warnings[0]


def test_a_run_left_on_ctrl_c_resumes_without_creating_anything_twice(kube, world, kubeconfig, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):  # during the first wait; the user keeps the jobs
        _run(kube, world, kubeconfig, out, "kube-batch", "kube-batch", SteppedClock(world, interrupt_at=1), answer="n")
    assert len(kube.objects["tfjobs"]) == 1 and kube.objects["namespaces"]
    (run,) = _run(kube, world, kubeconfig, out, "kube-batch", "kube-batch")
    assert run.outcome.status == "finished"
    created = [path for method, path in kube.requests if method == "POST" and path.endswith("/tfjobs")]
    assert len(created) == 4  # job1 once: the log shows the first session made it
    log = read_evidence(run.evidence)
    assert log.chain_ok
    plans = [r.action for r in log.records if r.action_type == "plan" and r.action]
    assert [p.get("resumed", False) for p in plans] == [False, True]
    ends = [r.action["status"] for r in log.records if r.action_type == "end" and r.action]
    assert ends == ["interrupted", "finished"]
    assert judge_file(run.evidence, "kubeflow-gang").verdict == "consistent"
    assert not kube.objects["namespaces"]


def test_a_finished_run_run_again_creates_nothing_and_judges_the_same(kube, world, kubeconfig, tmp_path):
    out = tmp_path / "out"
    _run(kube, world, kubeconfig, out, "kube-batch", "kube-batch")
    before = len(kube.requests)
    (run,) = _run(kube, world, kubeconfig, out, "kube-batch", "kube-batch")
    assert run.outcome.status == "finished"
    assert [path for method, path in kube.requests[before:] if method == "POST"] == ["/api/v1/namespaces"]
    replies = [r.action["reply"]["status"] for r in read_evidence(run.evidence).records
               if r.action_type == "submit" and r.action]
    assert replies == [201] * 4 + [202] * 4
    assert judge_file(run.evidence, "kubeflow-gang").verdict == "consistent"
