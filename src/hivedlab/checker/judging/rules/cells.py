"""Cells, not machines: which leaf cells (GPUs on nodes) the pods held when, and whether a pod sat in its own VC's
cells (docs/checker.md#cells-not-machines).

A VC owns the cells the HiveD config in force gives it (`Timeline.vc_cells_at`, one `VcShare` per chain); a pod holds
the leaf cells its bind info names (`Attempt.cells`), from its bind until HiveD freed them. Where a VC has a whole
chain (or a pinned cell) its cells are known by index; where it shares a chain, HiveD picks which of the chain's
cells are its own when its pods need them, so a pod is outside its VC's cells when the VC's guaranteed pods then held
more of the chain than the VC's count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.rule_base import INF, Context
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, LeafCell, Timeline, VcShare


def cells_text(cells: Iterable[LeafCell]) -> str:
    """`node-a GPU 0,1, node-b GPU 0`: the cells grouped by node, in order."""
    by_node: dict[str, list[int]] = {}
    for cell in sorted(set(cells)):
        by_node.setdefault(cell.node, []).append(cell.index)
    return ", ".join(f"{node} GPU {','.join(str(i) for i in indices)}" for node, indices in by_node.items())


def cell_ids(cells: Iterable[LeafCell]) -> list[str]:
    """The cells as data for a rule's facts: `node/index`, in order."""
    return [f"{cell.node}/{cell.index}" for cell in sorted(set(cells))]


def shares_facts(shares: tuple[VcShare, ...]) -> list[dict[str, Any]]:
    return [{"chain": share.chain, "count": share.count, "cells": cell_ids(share.cells)} for share in shares]


def share_text(vc: str, shares: tuple[VcShare, ...]) -> Text:
    """What the config gives `vc`: its cells outright, or `count` of a shared chain's cells."""
    zh, en = [], []
    for share in shares:
        listed = cells_text(share.cells)
        if share.exact:
            zh.append(listed)
            en.append(listed)
        else:
            zh.append(f"{listed} 中的 {share.count} 块")
            en.append(f"{share.count} of {listed}")
    return Text(f"VC {vc} 的 GPU：{'；'.join(zh)}", f"VC {vc}'s cells: {'; '.join(en)}")


def vc_shares(ctx: Context, vc: str, seq: float | None = None) -> tuple[VcShare, ...] | None:
    """`vc`'s cells in the config in force at record `seq` (the log's last config when None)."""
    cells = ctx.timeline.vc_cells if seq is None else ctx.timeline.vc_cells_at(seq)
    shares = cells.get(vc)
    return shares if shares else None


def _end_seq(attempt: Attempt) -> float:
    """The record from which the attempt no longer held its cells (HiveD freed them), INF while it still does."""
    mark = attempt.released or attempt.ended
    return mark.seq if mark is not None else INF


def held_at(timeline: Timeline, seq: float) -> list[tuple[JobTimeline, Attempt]]:
    """The attempts holding cells at record `seq` (bound at or before it, not yet freed)."""
    return [(job, attempt) for job in timeline.jobs for attempt in job.attempts
            if attempt.bound is not None and attempt.bound.seq <= seq < _end_seq(attempt)]


def _vc_used(held: list[tuple[JobTimeline, Attempt]], vc: str, share: VcShare) -> int:
    """How many of the chain's cells the VC's guaranteed (not opportunistic) pods held."""
    return sum(1 for job, attempt in held if job.virtual_cluster == vc and not attempt.opportunistic
               for cell in attempt.cells if cell in share.cells)


def free_cells(ctx: Context, vc: str, seq: float) -> tuple[int, tuple[LeafCell, ...]]:
    """At record `seq`: how many more cells `vc`'s quota allowed, and which cells of its chains no pod held."""
    shares = vc_shares(ctx, vc, seq) or ()
    held = held_at(ctx.timeline, seq)
    taken = {cell for _, attempt in held for cell in attempt.cells}
    if ctx.timeline.scheduler != "hived":
        # another scheduler names no GPU index (the device plugin picks one), and the log's pods need not say what
        # they asked for: only a node no pod held has GPUs the evidence shows free
        busy = {attempt.node for _, attempt in held if attempt.node}
        taken |= {cell for share in shares for cell in share.cells if cell.node in busy}
    spare, free = 0, []
    for share in shares:
        room = share.count - _vc_used(held, vc, share)
        idle = [cell for cell in share.cells if cell not in taken]
        if room > 0 and idle:
            spare += min(room, len(idle))
            free += idle
    return spare, tuple(dict.fromkeys(free))


def free_text(vc: str, spare: int, free: tuple[LeafCell, ...], scheduler: str = "hived") -> Text:
    """`VC default's node-a GPU 1` (its own cells), or `1 GPU of VC default's quota (idle: …)` on a shared chain. Under
    a scheduler that knows no VCs (a contrast run, docs/other-schedulers.md) only the idle GPUs: `node-a GPU 1`."""
    if scheduler != "hived":
        return Text(cells_text(free), cells_text(free))
    if spare >= len(free):
        return Text(f"VC {vc} 的 {cells_text(free)}", f"VC {vc}'s {cells_text(free)}")
    return Text(f"VC {vc} 配额中的 {spare} 块 GPU（空闲的：{cells_text(free)}）",
                f"{spare} GPU(s) of VC {vc}'s quota (idle: {cells_text(free)})")


def _owner(ctx: Context, cell: LeafCell, other_than: str, seq: float) -> str | None:
    for vc, shares in ctx.timeline.vc_cells_at(seq).items():
        if vc != other_than and any(cell in share.cells for share in shares):
            return vc
    return None


def outside_own_cells(ctx: Context, job: JobTimeline, attempt: Attempt, vc: str) -> Text | None:
    """Why the bound attempt is not in `vc`'s cells, None when it is (or the config is unknown).

    Outside: a cell of no chain `vc` has cells in, or, for a guaranteed pod on a shared chain, a bind that made
    `vc`'s guaranteed pods hold more of the chain than its count (it took another VC's share). Without leaf cell
    indices (other schedulers' pods) the node decides."""
    if attempt.bound is None:
        return None
    shares = vc_shares(ctx, vc, attempt.bound.seq)
    if shares is None:
        return None
    if not attempt.cells:
        nodes = {cell.node for share in shares for cell in share.cells}
        return None if attempt.node in nodes else Text(f"{attempt.node} 上没有 VC {vc} 的 GPU",
                                                       f"{attempt.node} holds none of VC {vc}'s cells")
    strangers = [cell for cell in attempt.cells if not any(cell in share.cells for share in shares)]
    if strangers:
        owner = _owner(ctx, strangers[0], vc, attempt.bound.seq)
        whose = Text(f"（属于 VC {owner}）", f" (VC {owner}'s)") if owner else Text("（不属于任何 VC）", " (no VC's)")
        return Text(f"{cells_text(strangers)}{whose.zh} 不是 VC {vc} 的 GPU",
                    f"{cells_text(strangers)}{whose.en} is not among VC {vc}'s cells")
    if attempt.opportunistic:
        return None
    held = held_at(ctx.timeline, attempt.bound.seq)
    for share in shares:
        used = _vc_used(held, vc, share)
        if not share.exact and used > share.count and any(cell in share.cells for cell in attempt.cells):
            return Text(f"绑定到 {cells_text(attempt.cells)} 时 VC {vc} 的任务占用了 {used} 块 GPU，"
                        f"超过它的 {share.count} 块：多出的是别的 VC 的 GPU",
                        f"when it was bound to {cells_text(attempt.cells)}, VC {vc}'s jobs held {used} GPUs of the "
                        f"chain, more than its {share.count}: the extra ones are another VC's")
    return None
