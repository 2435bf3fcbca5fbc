"""GPU exclusivity, checked on every experiment whatever its plan says (docs/checker.md).

A pod holds its leaf cells (node and GPU indices from HiveD's bind info or leaf-cell-isolation annotation) from its
bind record to its terminal phase, its DELETED record or its successor's creation, whichever comes first (when HiveD
frees them), in record order. No two pods may hold the same leaf cell at once. Pods without bind info (other
schedulers) are checked by count instead: the GPUs they request on a node never exceed the node's GPUs in the log's
HiveD config.
"""

from __future__ import annotations

from dataclasses import dataclass

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.rule_base import CONSISTENT, INCONSISTENT, Outcome, clock, seqs
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark, Timeline

QUESTION = Text("同一块 GPU 是否同一时间只被一个 Pod 占用？", "Did each GPU hold at most one pod at a time?")
EXPECTED = Text("HiveD 只把空闲的叶子单元（GPU）分配给 Pod；一个 Pod 结束或被删除后，它的 GPU 才能再分配给别的 Pod。",
                "HiveD binds a pod only to free leaf cells (GPUs); a GPU goes to another pod only after its pod "
                "ended or was deleted.")
_OPEN = 1 << 62


@dataclass(frozen=True)
class Hold:
    """One pod's hold on a node's GPUs, from its bind record to its release record (None: held to the log's end)."""

    job: JobTimeline
    attempt: Attempt
    bound: Mark
    released: Mark | None

    @property
    def end(self) -> int:
        return self.released.seq if self.released is not None else _OPEN


def _holds(timeline: Timeline) -> list[Hold]:
    holds = [Hold(job, a, a.bound, a.released) for job in timeline.jobs for a in job.attempts
             if a.bound is not None and a.node is not None]
    return sorted(holds, key=lambda h: h.bound.seq)


def _name(hold: Hold) -> Text:
    job = hold.job.job_name or hold.job.framework_name
    return Text(f"Pod {hold.attempt.pod_name}（{job}，uid {hold.attempt.uid}）",
                f"pod {hold.attempt.pod_name} ({job}, uid {hold.attempt.uid})")


def _span(hold: Hold) -> Text:
    if hold.released is None:
        return Text(f"从第 {hold.bound.seq} 条记录（{clock(hold.bound)}）起一直到日志结束",
                    f"from record {hold.bound.seq} ({clock(hold.bound)}) to the end of the log")
    return Text(f"从第 {hold.bound.seq} 条记录（{clock(hold.bound)}）"
                f"到第 {hold.released.seq} 条记录（{clock(hold.released)}）",
                f"from record {hold.bound.seq} ({clock(hold.bound)}) to record {hold.released.seq} "
                f"({clock(hold.released)})")


def _cell_clashes(holds: list[Hold]) -> list[tuple[Hold, Hold, str, int]]:
    """(holder, newcomer, node, gpu) for each bind onto a leaf cell another pod still held."""
    holder: dict[tuple[str, int], Hold] = {}
    clashes = []
    for hold in holds:
        for gpu in hold.attempt.gpus:
            cell = (str(hold.attempt.node), gpu)
            current = holder.get(cell)
            if current is not None and current.end > hold.bound.seq:
                clashes.append((current, hold, cell[0], gpu))
            if current is None or hold.end > current.end:
                holder[cell] = hold
    return clashes


def _count_clashes(holds: list[Hold], capacity: dict[str, int]) -> list[tuple[Hold, list[Hold], str, int]]:
    """(newcomer, holders, node, capacity) for each bind that took a node past its GPUs (pods without bind info)."""
    clashes = []
    held: dict[str, list[Hold]] = {}
    for hold in holds:
        node, wanted = str(hold.attempt.node), hold.attempt.gpu_request or 0
        if hold.attempt.gpus or not wanted or node not in capacity:
            continue
        still = [h for h in held.get(node, []) if h.end > hold.bound.seq]
        if sum(h.attempt.gpu_request or 0 for h in still) + wanted > capacity[node]:
            clashes.append((hold, still, node, capacity[node]))
        held[node] = [*still, hold]
    return clashes


def gpu_exclusive(timeline: Timeline) -> Outcome:
    """Consistent when no two pods held the same leaf cell (or more GPUs than a node has) at the same time."""
    holds = _holds(timeline)
    problems: list[Text] = []
    evidence: list[int] = []
    for first, second, node, gpu in _cell_clashes(holds):
        problems.append(_name(second) + Text(
            f"在第 {second.bound.seq} 条记录（{clock(second.bound)}）被绑定到 {node} 的 GPU {gpu}，而 ",
            f" was bound to {node} GPU {gpu} at record {second.bound.seq} ({clock(second.bound)}) while ")
            + _name(first) + Text(f"仍占用它（{_span(first).zh}）", f" still held it ({_span(first).en})"))
        evidence += seqs(first.bound, first.released, second.bound)
    for second, holders, node, capacity in _count_clashes(holds, timeline.node_gpus):
        names = [_name(h) for h in holders]
        problems.append(_name(second) + Text(
            f"在第 {second.bound.seq} 条记录（{clock(second.bound)}）被绑定到 {node}，"
            f"申请 {second.attempt.gpu_request} 块 GPU，"
            f"而 {'、'.join(n.zh for n in names)} 仍占用该机器的 GPU（共 {capacity} 块）",
            f" was bound to {node} at record {second.bound.seq} ({clock(second.bound)}) asking for "
            f"{second.attempt.gpu_request} GPU(s) while {', '.join(n.en for n in names)} still held that machine's "
            f"GPUs ({capacity} in all)"))
        evidence += [second.bound.seq, *(h.bound.seq for h in holders)]
    if problems:
        return Outcome(INCONSISTENT, Text("两个 Pod 同时占用了同一块 GPU：", "Two pods held the same GPU at once: ")
                       + Text("；".join(p.zh for p in problems) + "。", "; ".join(p.en for p in problems) + "."),
                       tuple(sorted(set(evidence))))
    cells = {(h.attempt.node, g) for h in holds for g in h.attempt.gpus}
    return Outcome(CONSISTENT, Text(
        f"{len(holds)} 个 Pod 被绑定（{len(cells)} 块 GPU），"
        "从绑定记录到结束或删除记录，没有两个 Pod 同时占用同一块 GPU。",
        f"{len(holds)} pods were bound ({len(cells)} GPUs); from their bind records to their end or deletion "
        "records no two pods held the same GPU at once."), tuple(h.bound.seq for h in holds))
