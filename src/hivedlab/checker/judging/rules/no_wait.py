"""A job that does not wait: it starts while another job still runs, on cells outside a VC's own when the plan says
so (the opportunistic job, docs/lab-experiments.md#priority-and-preemption; a non-gang job's first task,
docs/lab-experiments.md#gang-scheduling)."""

from __future__ import annotations

from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.cells import cell_ids, cells_text, free_cells, share_text, shares_facts, vc_shares
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONSISTENT,
    INF,
    Context,
    Outcome,
    RuleCheck,
    between,
    clock,
    cut_short,
    missing,
    not_run,
    seqs,
    short_name,
    started_seq,
    where,
    who,
)
from hivedlab.plans.rule_params import StartsWhileRunning


def starts_while_running(ctx: Context, params: StartsWhileRunning) -> Outcome:
    """`job` started while `while` was still running (it did not wait), optionally on a node outside `outside_vc`."""
    job, other = ctx.one(params.job), ctx.one(params.while_)
    if job is None or job.submitted is None and not job.attempts:
        return not_run(params.job)
    if other is None or other.first_started is None:
        return not_run(params.while_)
    started, other_end = job.first_started, other.end
    other_text = Text(f"{who(other).zh} 从 {clock(other.first_started)} 运行到 {clock(other_end)}",
                      f"{who(other).en} ran from {clock(other.first_started)} to {clock(other_end)}")
    if started is None:
        if other_end is not None and (ctx.run_finished or job.end is not None):
            return Outcome(INCONSISTENT, Text(f"{who(job).zh} 一直没有运行；", f"{who(job).en} never ran; ")
                           + other_text + Text("。", "."), seqs(job.submitted, other_end))
        return cut_short(ctx, f"到日志最后 {who(job).zh} 还没有开始运行", f"{who(job).en} had not started by the log's "
                         "last record")
    first = min((a for a in job.attempts if a.started), key=started_seq)
    submitted = job.submitted
    delay = Text(f"（提交后 {between(submitted, started).zh}）" if submitted else "",
                 f" ({between(submitted, started).en} after submission)" if submitted else "")
    text = (Text(f"{who(job).zh} 于 {clock(started)} 在 {where(first)} 上开始运行{delay.zh}；",
                 f"{who(job).en} started at {clock(started)} on {where(first)}{delay.en}; ")
            + other_text + Text("。", "."))
    evidence = seqs(submitted, first.bound, started, other.first_started, other_end)
    if started.t >= (other_end.t if other_end else INF):
        return Outcome(INCONSISTENT, text + Text(f"它一直等到 {who(other).zh} 结束后才运行。",
                                                 f"It waited for {who(other).en} to end."), evidence)
    outside_vc = params.outside_vc
    facts: dict[str, Any] = {}
    if outside_vc:
        shares = vc_shares(ctx, outside_vc, first.bound.seq if first.bound else None)
        if shares is None:
            return missing(f"不知道 VC {outside_vc} 有哪些 GPU", f"which cells VC {outside_vc} owns is unknown")
        own = [cell for share in shares if share.exact for cell in share.cells if cell in first.cells]
        if own:
            return Outcome(INCONSISTENT, text + Text(f"它运行在 VC {outside_vc} 自己的 {cells_text(own)} 上。",
                                                     f"It ran on VC {outside_vc}'s own {cells_text(own)}."), evidence)
        quota = share_text(outside_vc, shares)
        facts.update(vc=outside_vc, vc_cells=shares_facts(shares), cells=cell_ids(first.cells))
        spare, _ = free_cells(ctx, outside_vc, first.bound.seq if first.bound else started.seq)
        where_zh = f"VC {outside_vc} 配额之外的空闲 GPU" if not spare else "空闲的 GPU"
        where_en = f"a free GPU outside VC {outside_vc}'s quota" if not spare else "a free GPU"
        text = text + Text(f"它没有等待，使用了{' ' if where_zh[:1].isascii() else ''}{where_zh}（{quota.zh}）。",
                           f"It did not wait and used {where_en} ({quota.en}).")
        place = Text(f"{where_zh} {where(first)}", f"{where(first)}, {where_en}")
    else:
        text = text + Text(f"它没有等待 {who(other).zh} 结束。", f"It did not wait for {who(other).en} to end.")
        place = Text(where(first), where(first))
    name, other_name = short_name(ctx, job), short_name(ctx, other)
    after = between(submitted, started) if submitted else None
    summary = Text(f"{name} 没有等 {other_name} 结束：" + (f"提交后 {after.zh}" if after else f"{clock(started)} ")
                   + f"就在 {place.zh} 上开始运行。",
                   f"{name} did not wait for {other_name} to end: it started "
                   + (f"{after.en} after submission" if after else f"at {clock(started)}") + f" on {place.en}.")
    return Outcome(CONSISTENT, text, evidence, facts=facts, summary=summary)


RULES: dict[str, RuleCheck] = {"starts-while-running": starts_while_running}
