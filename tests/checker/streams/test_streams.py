"""Streams from small hand-made logs (tests/support/scenario.py): what is extracted and normalized, and what the differ
lists, documented or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hivedlab.checker.streams import KnownDifference, Stream, diff_streams, extract, load_known
from hivedlab.checker.streams.known import _entry
from hivedlab.evidence import read_evidence
from tests.support.scenario import Scenario

AFFINITY_1_20 = "didn't match Pod's node affinity"


def _priority(path: Path, source: str, seed: str, *, node: str = "hostname-dan", waits: int = 2,
              wording: str = "") -> Stream:
    """The priority experiment: low (test) runs, high (prod) preempts it, low's retry waits and then runs."""
    sc = Scenario(path, source=source, seed=seed)
    sc.plan("priority", cluster="sim" if source == "sim" else "pai")
    sc.config("two-vc")
    low = sc.submit("alice", "low", "job-config-1", "vc1", "test")
    sc.framework(low, "AttemptCreationPending", watch_type="ADDED")
    sc.pod_add(low, 0)
    sc.pod_bind(low, 0, node)
    sc.event(low.pods[0], "Scheduled", f"Successfully assigned default/{low.framework}-train-0 to {node}")
    sc.pod_run(low, 0)
    sc.framework(low, "AttemptRunning")
    sc.at(10)
    high = sc.submit("alice", "high", "job-config-2", "vc1", "prod")
    sc.framework(high, "AttemptCreationPending", watch_type="ADDED")
    sc.pod_add(high, 0)
    sc.preempt(low, 0, high, 0, node)
    sc.framework(low, "AttemptCompleted", code=-101, retry_delay_s=0)
    sc.pod_bind(high, 0, node)
    sc.pod_run(high, 0)
    sc.retry(low)
    sc.pod_add(low, 0)
    event: dict[str, Any] | None = None
    for count in range(1, waits + 1):
        if event is None:
            sc.pod_wait(low, 0, "insufficient capacity when scheduling in VC vc1")
            event = sc.event(low.pods[0], "FailedScheduling", "0/3 nodes are available: 1 insufficient capacity "
                             "when scheduling in VC vc1.", "Warning")  # a second object, then counted up
            continue
        event["count"] = count
        sc.raw_object("MODIFIED", "events", event)
    sc.at(20)
    sc.pod_exit(high, 0)
    sc.framework(high, "Completed", code=0)
    sc.pod_bind(low, 0, node)
    message = f"0/3 nodes are available: 2 node(s) {wording or 'didn' + chr(39) + 't match node selector'}."
    sc.event(low.pods[0], "Note", message)
    sc.pod_run(low, 0)
    sc.pod_exit(low, 0)
    sc.framework(low, "Completed", code=0)
    sc.end()
    sc.close()
    return extract(read_evidence(path).records)


def test_a_stream_names_jobs_by_plan_key_and_user_and_keeps_the_preemption_order(tmp_path: Path) -> None:
    stream = _priority(tmp_path / "a.jsonl", "sim", "a")
    facts = stream.facts()
    assert facts["jobs"] == ["high@alice", "low@alice"]
    assert stream.preemptions == ("low@alice:train/0 <- high@alice:train/0",)
    assert stream.start_order == ("low@alice", "high@alice")
    assert facts["job[low@alice].placements"] == ["hostname-dan:0"]  # the cells it used
    first = "job[low@alice].task[train/0].attempt[0]"
    assert facts[f"{first}.outcome"] == "preempted" and facts[f"{first}.preempted_by"] == "high@alice:train/0"
    assert facts[f"{first}.phases"] == ["Pending", "Running", "Deleted"]
    assert facts[f"{first}.events"][-1] == "Preempted: by default/high@alice:train/0 on node hostname-dan"
    retry = "job[low@alice].task[train/0].attempt[1]"
    assert facts[f"{retry}.failed_scheduling"] == 3  # one event, then another counted up to 2
    assert facts[f"{retry}.node"] == "hostname-dan" and facts[f"{retry}.gpus"] == [0]
    assert facts["job[low@alice].rest_states"] == ["WAITING", "RUNNING", "WAITING", "SUCCEEDED"]  # retry delay set
    assert facts["job[high@alice].submit"] == ["202 Update job high@alice for user alice successfully."]


def test_the_same_run_twice_differs_in_nothing_but_names(tmp_path: Path) -> None:
    a = _priority(tmp_path / "a.jsonl", "sim", "a")
    b = _priority(tmp_path / "b.jsonl", "k8s", "other-uids")
    assert diff_streams(a, b) == []


def test_a_placement_difference_is_one_undocumented_line(tmp_path: Path) -> None:
    a = _priority(tmp_path / "a.jsonl", "sim", "a")
    b = _priority(tmp_path / "b.jsonl", "k8s", "b", node="hostname-carol")
    differences = diff_streams(a, b, load_known())
    nodes = [d for d in differences if d.path.endswith(".node")]
    assert [d.line() for d in nodes][0] == 'job[high@alice].task[train/0].attempt[0].node: A="hostname-dan" ' \
                                           'B="hostname-carol"'
    assert all(not d.documented for d in nodes)


def test_documented_differences_are_named_and_others_are_not(tmp_path: Path) -> None:
    a = _priority(tmp_path / "a.jsonl", "sim", "a", waits=4)
    b = _priority(tmp_path / "b.jsonl", "k8s", "b", waits=1, wording=AFFINITY_1_20)
    differences = {d.path.rsplit(".", 1)[1]: d for d in diff_streams(a, b, load_known())}
    assert differences["failed_scheduling"].known == ("failed-scheduling-count",)
    assert differences["events"].known == ("node-affinity-wording",)
    assert [d for d in differences.values() if not d.documented] == []
    # the wording the simulator would show on the rehearsal's side is not excused
    c = _priority(tmp_path / "c.jsonl", "sim", "c", wording=AFFINITY_1_20)
    assert [d.known for d in diff_streams(a, c, load_known()) if d.path.endswith(".events")] == [()]


def test_a_wait_on_one_side_only_is_not_excused_by_the_count_entry(tmp_path: Path) -> None:
    a = _priority(tmp_path / "a.jsonl", "sim", "a", waits=2)
    b = _priority(tmp_path / "b.jsonl", "k8s", "b", waits=0)
    counts = [d for d in diff_streams(a, b, load_known()) if d.path.endswith("failed_scheduling")]
    assert counts and not counts[0].documented


def test_events_k8s_io_series_are_counted(tmp_path: Path) -> None:
    sc = Scenario(tmp_path / "s.jsonl", source="k8s", seed="s")
    sc.plan("gang")
    sc.config("one-vc")
    job = sc.submit("alice", "gang", "job-config-6", "default", "test")
    sc.pod_add(job, 0)
    event = sc.event(job.pods[0], "FailedScheduling", "0/3 nodes are available: 1 " + "insufficient", "Warning")
    event.pop("count")
    event["series"] = {"count": 4, "lastObservedTime": "2026-03-02T08:00:00.000000Z"}
    sc.raw_object("MODIFIED", "events", event)
    sc.close()
    facts = extract(read_evidence(tmp_path / "s.jsonl").records).facts()
    assert facts["job[gang@alice].task[train/0].attempt[0].failed_scheduling"] == 5


@pytest.mark.parametrize(("entry", "error"), [
    ({"id": "x", "category": "guess", "fields": ["a"], "compare": "any"}, "category must be one of"),
    ({"id": "x", "category": "simplification", "fields": [], "compare": "any"}, "`fields` must be a list"),
    ({"id": "x", "category": "simplification", "fields": ["a"]}, "needs drop, rewrite or compare"),
    ({"id": "x", "category": "simplification", "fields": ["a"], "drop": "("}, "a bad pattern"),
    ({"id": "x", "category": "simplification", "fields": ["a"], "compare": "most"}, "compare must be"),
], ids=["category", "fields", "no-rule", "bad-regex", "bad-compare"])
def test_a_malformed_entry_is_one_line(entry: dict[str, Any], error: str) -> None:
    from hivedlab.basics.errors import HivedlabError

    full = {"summary": {"en": "e", "zh": "z"}, "course": "c"} | entry
    with pytest.raises(HivedlabError, match=error):
        _entry(full, "entry 1")


def test_a_pattern_matches_brackets_literally() -> None:
    entry: KnownDifference = _entry({"id": "x", "category": "simplification", "fields": ["job[*].state"],
                                     "compare": "any", "summary": {"en": "e", "zh": "z"}, "course": "c"}, "e")
    assert entry.applies("job[low@alice].state") and not entry.applies("jobs.state")
    assert not entry.applies("job[low@alice].task[train/0].attempt[0].state.extra")


def _one_task(node: str | None, outcome: str, fc_code: int | None, source: str, experiment: str = "incremental",
              extra_job: bool = False) -> Stream:
    from hivedlab.checker.streams import AttemptStream, JobStream

    attempt = AttemptStream(node=node, gpus=(0,) if node else (), phases=("Pending",), events=(), failed_scheduling=0,
                            transient=0, waits=(), outcome=outcome, exit_code=None, fc_exit_code=fc_code,
                            preempted_by=None)
    job = JobStream("elastic@alice", (), (), (), "SUCCEEDED", 0, (("train/1", (attempt,)),))
    jobs = (job, JobStream("late@alice", ("202",), (), (), "WAITING", None, ())) if extra_job else (job,)
    return Stream(experiment, source, ("one-vc",), (), "finished", jobs, (), ())


def _entry_of(**fields: Any) -> KnownDifference:
    return _entry({"id": "e", "category": "rehearsal", "summary": {"en": "e", "zh": "z"}, "course": "c", **fields},
                  "e")


def test_when_limits_an_entry_to_attempts_whose_other_fact_agrees() -> None:
    entry = _entry_of(fields=["job[*].task[*].attempt[*].node"], compare="any", when={"attempt.fc_exit_code": -220})
    killed = diff_streams(_one_task(None, "job-completed", -220, "sim"),
                          _one_task("hostname-dan", "job-completed", -220, "k8s"), (entry,))
    at = "job[elastic@alice].task[train/1].attempt[0]"
    assert [(d.path, d.known) for d in killed] == [
        ("placements", ()), ("job[elastic@alice].placements", ()), (f"{at}.node", ("e",)), (f"{at}.gpus", ())]
    ran = diff_streams(_one_task(None, "job-completed", -220, "sim"),
                       _one_task("hostname-dan", "succeeded", 0, "k8s"), (entry,))
    assert all(not d.documented for d in ran)


def test_a_fact_on_one_side_only_is_explained_only_by_compare_any() -> None:
    a, b = _one_task(None, "x", None, "sim"), _one_task(None, "x", None, "k8s", extra_job=True)
    rewrite = _entry_of(fields=["job[late@*]*"], rewrite=[["202", "403"]])
    assert all(not d.documented for d in diff_streams(a, b, (rewrite,)))
    anything = _entry_of(fields=["job[late@*]*", "jobs"], compare="any")
    assert all(d.documented for d in diff_streams(a, b, (anything,)))
    other_plan = _entry_of(fields=["job[late@*]*", "jobs"], compare="any", experiments=["gang"])
    assert all(not d.documented for d in diff_streams(a, b, (other_plan,)))


def test_a_bad_when_is_one_line() -> None:
    from hivedlab.basics.errors import HivedlabError

    with pytest.raises(HivedlabError, match="`when` must map"):
        _entry_of(fields=["a"], compare="any", when={"task.node": "same"})


def test_compare_unordered_excuses_the_order_of_a_lists_items_and_nothing_else() -> None:
    from hivedlab.checker.streams import AttemptStream, JobStream

    def events(*items: str) -> Stream:
        attempt = AttemptStream(node="n", gpus=(0,), phases=("Pending",), events=tuple(items), failed_scheduling=0,
                                transient=0, waits=(), outcome="succeeded", exit_code=0, fc_exit_code=None,
                                preempted_by=None)
        return Stream("kubeflow-gang", "sim", (), (), "finished",
                      (JobStream("job1@alice", (), (), (), "SUCCEEDED", 0, (("worker/0", (attempt,)),)),), (), ())

    entry = _entry_of(fields=["job[*].task[*].attempt[*].events"], compare="unordered")
    swapped = diff_streams(events("A: x", "B: y"), events("B: y", "A: x"), (entry,))
    assert [d.known for d in swapped] == [("e",)]
    other = diff_streams(events("A: x", "B: y"), events("B: y", "C: z"), (entry,))
    assert [d.known for d in other] == [()]
