"""A Kubeflow contrast run's stream (tests/support/kubeflow_run.py): the TFJob's conditions as the job's states, the
events on the TFJob and on its PodGroup with their counts, the PodGroup's phases; the run's namespace and run tag
normalized, and nothing the schedulers or the operator decided."""

from __future__ import annotations

from pathlib import Path

from hivedlab.checker.judging.timeline import build_timeline
from hivedlab.checker.streams import diff_streams, extract, load_known
from hivedlab.checker.streams.extract import Names
from hivedlab.checker.streams.known import _entry
from hivedlab.evidence import read_evidence
from tests.support.kubeflow_run import write_gang_run

JOB = "job[job1@alice]"
WORKER = f"{JOB}.task[worker/0].attempt[0]"


def test_a_tfjob_stream_holds_its_conditions_its_events_and_its_podgroup(tmp_path: Path) -> None:
    stream = extract(read_evidence(write_gang_run(tmp_path / "k8s.jsonl", "k8s")).records)
    facts = stream.facts()
    assert stream.run_id == "kubeflow-gang@kube-batch" and facts["scheduler"] == "kube-batch"
    assert facts[f"{JOB}.states"] == ["Created", "Running", "Succeeded"]
    assert facts[f"{JOB}.state"] == "SUCCEEDED" and facts[f"{JOB}.rest_states"] == []
    assert facts[f"{JOB}.events"] == [
        "SuccessfulCreatePod: Created pod: job1@alice:worker/0 (count 1)",
        "SuccessfulCreatePod: Created pod: job1@alice:ps/0 (count 1)",
        "ExitedWithCode: Pod: <namespace>.job1@alice:worker/0 exited with code 0 (count 2)",
        "TFJobSucceeded: TFJob job1@alice successfully completed. (count 1)"]
    assert facts[f"{JOB}.podgroup_events"] == [
        "Unschedulable: 2/0 tasks in gang unschedulable: 0 nodes are available (count 3)"]
    assert facts[f"{JOB}.podgroup_phases"] == ["Pending", "Running", "Deleted"]
    assert facts[f"{WORKER}.events"] == ["Scheduled: Successfully assigned <namespace>/job1@alice:worker/0 to k8s-g1"]
    assert facts[f"{WORKER}.node"] == "k8s-g1" and facts[f"{WORKER}.exit_code"] == 0


def test_a_simulated_and_a_real_run_differ_only_in_namespace_and_run_tag(tmp_path: Path) -> None:
    sim = extract(read_evidence(write_gang_run(tmp_path / "sim.jsonl", "sim")).records)
    real = extract(read_evidence(write_gang_run(tmp_path / "k8s.jsonl", "k8s")).records)
    assert sim.source == "sim" and real.source == "k8s"
    assert diff_streams(sim, real) == []


def test_what_the_programs_decided_is_compared_as_it_is(tmp_path: Path) -> None:
    sim = extract(read_evidence(write_gang_run(tmp_path / "sim.jsonl", "sim")).records)
    real = extract(read_evidence(write_gang_run(tmp_path / "k8s.jsonl", "k8s", exit_code=1, unschedulable=5,
                                                ps_node="k8s-g3")).records)
    known = {d.path: d.known for d in diff_streams(sim, real, load_known())}
    assert known[f"{WORKER}.exit_code"] == ()  # a worker that failed (1), not one deleted at the job's success (143)
    assert known[f"{JOB}.task[ps/0].attempt[0].node"] == ("kube-batch-node-choice",)  # a random choice among equals
    assert known[f"{JOB}.podgroup_events"] == ("kube-batch-session-timing",)  # only how often it was written
    never = extract(read_evidence(write_gang_run(tmp_path / "never.jsonl", "k8s", unschedulable=0)).records)
    assert {d.path: d.known for d in diff_streams(sim, never, load_known())}[f"{JOB}.podgroup_events"] == ()
    other = extract(read_evidence(write_gang_run(tmp_path / "default.jsonl", "k8s", scheduler="default")).records)
    assert [d.path for d in diff_streams(other, real) if d.path == "scheduler"] == ["scheduler"]


def test_the_namespace_is_a_placeholder_only_where_it_names_an_object() -> None:
    names = Names(build_timeline(()), "default")
    assert names.message("Successfully assigned default/p-0 to k8s-g1") == "Successfully assigned <namespace>/p-0 " \
                                                                           "to k8s-g1"
    assert names.message("Pod: default.p-0 exited with code 0") == "Pod: <namespace>.p-0 exited with code 0"
    kept = "default-scheduler: insufficient capacity in VC default. not-default/p"
    assert names.message(kept) == kept
    assert Names(build_timeline(())).message("default/p-0") == "default/p-0"  # an OpenPAI run: no namespace given


def test_a_documented_difference_may_be_limited_to_one_contrast_run(tmp_path: Path) -> None:
    entry = _entry({"id": "e", "category": "rehearsal", "summary": {"en": "e", "zh": "z"}, "course": "c",
                    "fields": [f"{JOB}.podgroup_events"], "compare": "any",
                    "experiments": ["kubeflow-gang@kube-batch"]}, "e")
    for scheduler, documented in (("kube-batch", True), ("default", False)):
        sim = extract(read_evidence(write_gang_run(tmp_path / "sim.jsonl", "sim", scheduler)).records)
        real = extract(read_evidence(write_gang_run(tmp_path / "k8s.jsonl", "k8s", scheduler,
                                                    unschedulable=5)).records)
        assert [(d.path, d.documented) for d in diff_streams(sim, real, (entry,))] == [
            (f"{JOB}.podgroup_events", documented)]
