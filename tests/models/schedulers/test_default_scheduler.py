"""Kubernetes' default scheduler (1.14/1.15) as docs/other-schedulers.md describes it: per-pod resource fit on
`nvidia.com/gpu`, CPU and memory; least-allocated scoring with rotation among equal nodes; the FitError text;
PriorityClass preemption with the fewest, lowest-priority victims; no gang."""

from __future__ import annotations

from hivedlab.models.schedulers.default import NODE_SELECTOR, TAINTS, Bind, DefaultScheduler, Unschedulable
from hivedlab.models.schedulers.resources import Node, Pod, Resources

ONE_GPU = Resources(gpu=1, cpu_milli=1000, memory_mb=2048)
NODE = Resources(gpu=1, cpu_milli=4000, memory_mb=16384)


def _nodes(count: int, capacity: Resources = NODE) -> list[Node]:
    return [Node(f"n{i}", capacity) for i in range(1, count + 1)]


def _pod(name: str, node: str | None = None, priority: int = 0, request: Resources = ONE_GPU) -> Pod:
    return Pod(uid=name, name=name, priority=priority, request=request, node=node)


def test_a_pod_goes_to_a_node_with_a_free_gpu() -> None:
    scheduler = DefaultScheduler(_nodes(2))
    assert scheduler.schedule(_pod("w"), [_pod("a", "n1")]) == Bind("n2")


def test_least_allocated_scoring_prefers_the_emptier_node() -> None:
    cpu_only = Resources(cpu_milli=1000, memory_mb=2048)
    scheduler = DefaultScheduler(_nodes(2))
    busy = [_pod("a", "n1", request=cpu_only), _pod("b", "n1", request=cpu_only)]
    assert scheduler.schedule(_pod("ps", request=cpu_only), busy) == Bind("n2")


def test_equal_nodes_are_taken_in_turn() -> None:
    scheduler = DefaultScheduler(_nodes(3))
    cpu_only = Resources(cpu_milli=100)
    picks = [scheduler.schedule(_pod(f"p{i}", request=cpu_only), []) for i in range(4)]
    assert picks == [Bind("n1"), Bind("n2"), Bind("n3"), Bind("n1")]


def test_no_free_gpu_is_a_fit_error_counting_each_node() -> None:
    scheduler = DefaultScheduler(_nodes(4), other_nodes=1)
    held = [_pod(f"h{i}", f"n{i}") for i in range(1, 5)]
    decision = scheduler.schedule(_pod("w"), held)
    assert isinstance(decision, Unschedulable)
    # the master (no GPU) fails both checks of 1.14's GeneralPredicates: its resource fit and the node selector
    assert decision.message == ("0/5 nodes are available: 1 node(s) didn't match node selector, "
                                "5 Insufficient nvidia.com/gpu.")
    assert decision.preemption is None  # equal priority: nothing to preempt


def test_no_gang_each_pod_on_its_own() -> None:
    """Two workers of one job with one GPU free: the first binds, the second fails; nothing holds the first back."""
    scheduler = DefaultScheduler(_nodes(4))
    held = [_pod(f"h{i}", f"n{i}") for i in range(1, 4)]
    assert scheduler.schedule(_pod("w0"), held) == Bind("n4")
    assert isinstance(scheduler.schedule(_pod("w1"), [*held, _pod("w0", "n4")]), Unschedulable)


def test_preemption_picks_the_node_whose_victims_have_the_lowest_priority() -> None:
    scheduler = DefaultScheduler(_nodes(2))
    held = [_pod("mid", "n1", priority=5), _pod("low", "n2", priority=1)]
    decision = scheduler.schedule(_pod("high", priority=10), held)
    assert isinstance(decision, Unschedulable) and decision.preemption is not None
    assert decision.preemption.node == "n2"
    assert [v.name for v in decision.preemption.victims] == ["low"]


def test_preemption_reprieves_the_pods_it_does_not_need_to_evict() -> None:
    scheduler = DefaultScheduler([Node("n1", Resources(gpu=2, cpu_milli=8000, memory_mb=32768))])
    held = [_pod("a", "n1", priority=1), _pod("b", "n1", priority=2)]
    decision = scheduler.schedule(_pod("high", priority=10), held)
    assert isinstance(decision, Unschedulable) and decision.preemption is not None
    assert [v.name for v in decision.preemption.victims] == ["a"]  # the higher-priority b is kept


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    scheduler = DefaultScheduler(_nodes(1))
    decision = scheduler.schedule(_pod("w", priority=3), [_pod("a", "n1", priority=3)])
    assert isinstance(decision, Unschedulable) and decision.preemption is None


def test_a_pod_without_cpu_or_memory_requests_is_scored_with_the_defaults() -> None:
    """A GPU-only TFJob worker counts as 100 millicores and 200 MiB for the priorities (`GetNonzeroRequests`), so
    the node that already runs such pods is the fuller one."""
    gpu_only = Resources(gpu=1)
    scheduler = DefaultScheduler(_nodes(2, Resources(gpu=2, cpu_milli=1000, memory_mb=1024)))
    busy = [_pod("a", "n1", request=gpu_only)]
    assert scheduler.schedule(_pod("w", request=gpu_only), busy) == Bind("n2")


def test_the_master_fails_a_tfjob_gpu_pod_on_resources_before_its_taint() -> None:
    """OpenPAI's pods select worker nodes; a TFJob's pod selects none. Resources are checked before taints, so a GPU
    pod lacks `nvidia.com/gpu` on the GPU-less master (as Kubernetes 1.20 wrote on the rehearsal cluster)."""
    scheduler = DefaultScheduler(_nodes(1), other_nodes=1, other_reason=TAINTS)
    answer = scheduler.schedule(_pod("w"), [_pod("a", "n1")])
    assert isinstance(answer, Unschedulable)
    assert answer.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    assert DefaultScheduler(_nodes(1), other_nodes=1).other_reason == NODE_SELECTOR


def test_the_master_fails_a_cpu_only_tfjob_pod_on_its_taint() -> None:
    """A parameter server (CPU only) fits the master's resources and meets its NoSchedule taint."""
    scheduler = DefaultScheduler(_nodes(1, Resources(gpu=1, cpu_milli=1000, memory_mb=4096)), other_nodes=1,
                                 other_reason=TAINTS)
    ps = _pod("ps", request=Resources(cpu_milli=1000))
    answer = scheduler.schedule(ps, [_pod("a", "n1", request=Resources(gpu=1, cpu_milli=1000))])
    assert isinstance(answer, Unschedulable)
    assert answer.message == "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had taints that the pod didn't " \
        "tolerate."


