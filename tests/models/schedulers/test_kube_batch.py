"""kube-batch v0.4 as docs/other-schedulers.md describes it: a PodGroup with fewer pods than minMember is skipped;
a group's pods bind only when minMember of them can (all or nothing), the CPU-only PS included; an unready group's
pending pods get the job's FitError; groups go by priority, then creation."""

from __future__ import annotations

from hivedlab.models.schedulers.kube_batch import KubeBatch, PodGroup, fit_delta, fit_error
from hivedlab.models.schedulers.resources import Node, Pod, Resources

WORKER = Resources(gpu=1, cpu_milli=1000, memory_mb=2048)
PS = Resources(cpu_milli=1000, memory_mb=2048)
NODES = [Node(f"k8s-g{i}", Resources(gpu=1, cpu_milli=4000, memory_mb=16384)) for i in range(1, 5)]


def _job(group: str, workers: int, order: int = 0, node: str | None = None) -> list[Pod]:
    pods = [Pod(f"{group}-ps", f"{group}-ps-0", 0, PS, order, node, group)]
    pods += [Pod(f"{group}-w{i}", f"{group}-worker-{i}", 0, WORKER, order + i + 1, node and f"k8s-g{i + 1}", group)
             for i in range(workers)]
    return pods


def test_a_group_that_fits_binds_whole() -> None:
    result = KubeBatch(NODES).session([PodGroup("job1", 4)], _job("job1", 3))
    assert len(result.binds) == 4 and not result.unschedulable
    assert len({node for pod, node in result.binds if pod.request.gpu}) == 3  # one GPU per worker, on 3 nodes


def test_a_group_that_does_not_fit_binds_nothing_not_even_its_cpu_only_ps() -> None:
    running = _job("job1", 3, node="placed")
    result = KubeBatch(NODES).session([PodGroup("job2", 3, order=1)], [*running, *_job("job2", 2, order=10)])
    assert result.binds == []
    assert set(result.unschedulable) == {"job2-ps", "job2-w0", "job2-w1"}
    assert result.unschedulable["job2-w0"] == "0/4 nodes are available, 4 insufficient GPU."
    # the PS and worker 0 were allocated before worker 1 found no node: they stay Allocated in the session, so the
    # group's close counts one pending task ("1/3 tasks in gang unschedulable", as the real kube-batch wrote)
    assert result.held == {"job2": 2}


def test_the_first_task_that_finds_no_node_ends_the_groups_turn_and_words_its_error() -> None:
    """allocate.go: a task with no node is "the last processed", so a CPU-only PS after it is never tried and the
    FitError is the worker's, whatever order the tasks were created in."""
    running = _job("job1", 3, node="placed")
    job2 = _job("job2", 2, order=10)
    late_ps = [*job2[1:], Pod(job2[0].uid, job2[0].name, 0, PS, 20, None, "job2")]  # the PS created last
    result = KubeBatch(NODES).session([PodGroup("job2", 3, order=1)], [*running, *late_ps])
    assert result.binds == []
    assert set(result.unschedulable.values()) == {"0/4 nodes are available, 4 insufficient GPU."}
    assert result.held == {"job2": 1}  # worker 0 only: the PS after worker 1 was never tried


def test_a_group_with_fewer_pods_than_min_member_is_allocated_and_never_bound() -> None:
    """v0.4 checks no group's validity (the gang plugin registers its check after the session ran the checks): the
    real kube-batch wrote "0/3 tasks in gang unschedulable" on a PodGroup whose fourth pod tf-operator had not yet
    created, and `Unschedulable` on each of the three."""
    result = KubeBatch(NODES).session([PodGroup("job1", 4)], _job("job1", 3)[:3])
    assert result.binds == [] and set(result.unschedulable) == {"job1-ps", "job1-w0", "job1-w1"}
    assert result.held == {"job1": 3}  # all three allocated: none pending at the close
    assert result.unschedulable["job1-w1"] == "0/1 nodes are available, 1 insufficient GPU."


def test_groups_go_by_priority_then_creation() -> None:
    pods = [*_job("a", 3, order=0), *_job("b", 3, order=10)]
    result = KubeBatch(NODES).session([PodGroup("a", 4, order=0), PodGroup("b", 4, priority=1, order=1)], pods)
    assert {pod.group for pod, _ in result.binds} == {"b"}
    assert set(result.unschedulable) == {"a-ps", "a-w0", "a-w1", "a-w2"}


def test_fit_error_without_any_node_tried() -> None:
    assert fit_error({}) == "0 nodes are available"


def test_fit_delta_keeps_kube_batchs_margins() -> None:
    """`FitDelta` takes a margin off each requested resource: a node with exactly the GPU asked for but too little
    CPU lacks both; a resource the task does not request is never short."""
    exact_gpu = fit_delta(Resources(gpu=1, cpu_milli=500, memory_mb=4096), Resources(gpu=1, cpu_milli=1000))
    assert exact_gpu.gpu < 0 and exact_gpu.cpu_milli < 0 and exact_gpu.memory_mb > 0
    assert fit_error({"n1": exact_gpu}) == "0/1 nodes are available, 1 insufficient GPU, 1 insufficient cpu."
    roomy = fit_delta(Resources(gpu=2, cpu_milli=0, memory_mb=0), Resources(gpu=1))
    assert roomy.gpu > 0 and roomy.cpu_milli == 0 and roomy.memory_mb == 0
