"""One group, start to end: read the submission, verify each log, re-judge it, compare the report's claims.

The steps, in order (each a small function):
    read_submission -> per experiment: read_evidence (chain) -> check_log (tamper + lab conformance)
    -> judge (the checker's verdicts) -> claims vs re-judged verdicts
The judge is passed in (`hivedlab.checker.judging.judge.judge_evidence`; tests pass their own). Nothing here raises on a
submission's content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hivedlab.checker.grading.claims import Claim, compare_claim, parse_claims
from hivedlab.checker.grading.facts import AttemptFact, attempt_facts, check_facts
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.integrity import LogFacts, check_log
from hivedlab.checker.grading.labspec import LabSpec
from hivedlab.checker.grading.provenance import (
    REAL_CLUSTERS,
    Identity,
    log_identity,
    sim_inputs,
    simulator_signs,
)
from hivedlab.checker.grading.submission import ExperimentFiles, Submission, read_submission
from hivedlab.checker.judging.judge import Judge, Judgement
from hivedlab.evidence import EvidenceLog, RehearsalSigns, read_evidence
from hivedlab.rundir import CLAIMS, RUN_RECORD, VERDICTS, hived_config_name, run_folder_name

STOPPED = ("interrupted", "stopped", "stopped by the user")  # end statuses of a run someone cut short


@dataclass(frozen=True)
class ExperimentResult:
    id: str
    files: ExperimentFiles | None
    records: int = 0
    chain_ok: bool = False
    first_broken_seq: int | None = None
    warnings: tuple[str, ...] = ()
    facts: LogFacts | None = None
    verdict: Mapping[str, Any] | None = None  # re-judged
    judge_error: str | None = None
    findings: tuple[GradeFinding, ...] = ()
    attempts: tuple[AttemptFact, ...] | None = None  # the task attempts the evidence shows (for the report's facts)
    identity: Identity = frozenset()  # the log's content fingerprint, a real log's unique values (provenance)
    last_seq: int | None = None  # the log's last whole record
    rehearsal: bool = False  # ran on the rehearsal cluster: real control plane, emulated GPUs (run.json or the pods)
    # each member's turn graded on its own, when members took turns (docs/evidence.md); the fields above are then
    # those of the weakest turn (`_weakest`), the findings every turn's, the attempts the first turn's (the report's)
    turns: tuple[ExperimentResult, ...] = ()

    @property
    def has_log(self) -> bool:
        return self.records > 0

    @property
    def source(self) -> str:
        return self.facts.source if self.facts else ""

    @property
    def cut(self) -> bool:
        """The log has records but no end record: it was cut (anywhere) or the run died without closing it."""
        return self.has_log and self.facts is not None and self.facts.ended is None


@dataclass(frozen=True)
class GroupResult:
    submission: Submission
    experiments: tuple[ExperimentResult, ...]
    claims_total: int
    claims_supported: int
    findings: tuple[GradeFinding, ...]  # every finding: the submission's, the logs', the claims'

    @property
    def name(self) -> str:
        return self.submission.name

    def experiment(self, experiment_id: str) -> ExperimentResult | None:
        return next((exp for exp in self.experiments if exp.id == experiment_id), None)

    @property
    def identity(self) -> Identity:
        """What another group's submission must not share: its logs' content, real logs' unique values, a simulator
        run's inputs."""
        logs: Identity = frozenset().union(*(exp.identity for exp in self.experiments))
        if not any(exp.source in ("sim", "mixed") for exp in self.experiments):
            return logs
        sub = self.submission
        return logs | sim_inputs(sub.inventory, sub.record, sub.base + RUN_RECORD)


def _judge(judge: Judge | None, log: EvidenceLog, experiment: str) -> tuple[Judgement | None, str | None]:
    if judge is None:
        return None, "no judge available"
    try:
        result = judge(log, experiment)
    except Exception as exc:  # a bad log must not stop the batch; the reason is recorded
        first = str(exc).splitlines()[0] if str(exc) else ""
        return None, f"{type(exc).__name__}: {first}"[:300]
    return result, None


_STANDING = {"inconsistent": 0, "inconclusive": 1, "consistent": 2}


def _weakest(turns: tuple[ExperimentResult, ...]) -> ExperimentResult:
    """The turn an experiment is scored on: the first with no log, a broken chain or the worst verdict."""
    def standing(turn: ExperimentResult) -> tuple[int, int]:
        verdict = str(turn.verdict.get("verdict")) if turn.verdict else "inconclusive"
        return int(turn.has_log and turn.chain_ok), _STANDING.get(verdict, 1)
    return min(turns, key=standing)


def grade_experiment(sub: Submission, experiment: str, lab: LabSpec, judge: Judge | None) -> ExperimentResult:
    """Grade an experiment's run; when members took turns, each turn on its own, scored on the weakest."""
    files = sub.experiment(experiment)
    if files is not None and files.turns:
        turns = tuple(grade_run(sub, experiment, turn, lab, judge) for turn in files.turns)
        weakest = _weakest(turns)
        return replace(weakest, findings=tuple(f for t in turns for f in t.findings), attempts=turns[0].attempts,
                       identity=frozenset().union(*(t.identity for t in turns)), turns=turns,
                       rehearsal=any(t.rehearsal for t in turns))
    return grade_run(sub, experiment, files, lab, judge)


def grade_run(sub: Submission, experiment: str, files: ExperimentFiles | None, lab: LabSpec,
              judge: Judge | None) -> ExperimentResult:
    """Grade one run of an experiment: its chain, its conformance to the lab, its verdict re-judged."""
    if files is None or files.evidence_path is None:
        return ExperimentResult(experiment, files)
    log = read_evidence(files.evidence_path)
    findings: list[GradeFinding] = []
    if log.records and not log.chain_ok:
        broken = log.first_broken_seq
        en_where, zh_where = ((f"record {broken}", f"第 {broken} 条记录") if broken is not None
                              else ("a record", "某条记录"))
        findings.append(GradeFinding("chain", "chain-broken",
                                     f"{files.evidence}: hash chain broken at {en_where}: the log "
                                "was edited, reordered or cut",
                                f"{files.evidence}：哈希链在{zh_where}处断裂：日志被修改、重排或截断",
                                files.evidence or "", broken, experiment))
    if not log.records:
        findings.append(GradeFinding("problem", "empty-log", f"{files.evidence}: no evidence records",
                                f"{files.evidence}：没有证据记录", files.evidence or "", None, experiment))
        return ExperimentResult(experiment, files, warnings=log.warnings, findings=tuple(findings))
    facts, log_findings = check_log(log.records, files.evidence or "", lab.get(experiment), sub.allowed_nodes)
    findings += log_findings
    findings += end_findings(log, facts.ended, files.evidence or "", experiment)
    claims_real = facts.source == "k8s" or (sub.record.cluster if sub.record else "") in REAL_CLUSTERS
    signs = simulator_signs(log.records) if claims_real else []
    if signs:
        findings.append(GradeFinding(
            "provenance", "simulator-relabelled",
            f"{files.evidence}: claims a real cluster but shows what only the simulator produces: "
            + "; ".join(s.en for s in signs) + " (scored as simulator evidence)",
            f"{files.evidence}：声称来自真实集群，却有只有模拟集群才会产生的特征：" + "；".join(s.zh for s in signs)
            + "（按模拟集群证据评分）", files.evidence or "", None, experiment))
        facts = replace(facts, source="sim")
    judgement, error = _judge(judge, log, experiment)
    run_tag = sub.record.run_tag if sub.record else None
    attempts = attempt_facts(log.records, experiment, run_tag if isinstance(run_tag, str) else "",
                             judgement.timeline if judgement else None)
    return ExperimentResult(
        id=experiment,
        files=files,
        records=len(log.records),
        chain_ok=log.chain_ok,
        first_broken_seq=log.first_broken_seq,
        warnings=log.warnings,
        facts=facts,
        verdict=judgement.verdict if judgement else None,
        judge_error=error,
        findings=tuple(findings),
        attempts=attempts,
        identity=log_identity(log.records, files.evidence or "", facts.source == "k8s"),
        rehearsal=facts.source == "k8s" and (bool(sub.record and sub.record.rehearsal)
                                             or RehearsalSigns.of(log.records).found),
        last_seq=log.records[-1].seq,
    )


def end_findings(log: EvidenceLog, ended: str | None, file: str, experiment: str) -> list[GradeFinding]:
    """A log without its end record (cut at a record boundary or inside a record), or one that ends interrupted or
    stopped by the user: a TA takes a look, with where the log ends; the run is scored on what the log holds."""
    last = log.records[-1]
    if ended is None:
        partial = any("cut record" in warning for warning in log.warnings)
        en_inside = " (its last line is a record cut in the middle)" if partial else ""
        zh_inside = "（最后一行是被截断的半条记录）" if partial else ""
        return [GradeFinding("problem", "log-cut",
                             f"{file}: no end record: the log ends at record {last.seq} (line {last.line}){en_inside}:"
                             " cut, or the run died; scored on what it holds",
                             f"{file}：没有结束记录：日志止于第 {last.seq} 条记录（第 {last.line} 行）{zh_inside}："
                             "被截断或运行中途退出；按日志中已有的内容评分", file, last.seq, experiment)]
    if ended.lower() in STOPPED:
        action = last.action if isinstance(last.action, dict) else {}
        reason = action.get("reason") if isinstance(action.get("reason"), str) else ""
        why = f" ({reason})" if reason else ""
        return [GradeFinding("problem", "run-stopped",
                             f"{file}: the run ended '{ended}'{why} at record {last.seq}; scored on what the log holds",
                             f"{file}：运行在第 {last.seq} 条记录处以 '{ended}' 结束{why}；按日志中已有的内容评分",
                             file, last.seq, experiment)]
    return []


def _grade_experiment_safely(sub: Submission, experiment: str, lab: LabSpec, judge: Judge | None) -> ExperimentResult:
    """`grade_experiment`, where an unexpected failure on one file costs that experiment only, named in a finding."""
    try:
        return grade_experiment(sub, experiment, lab, judge)
    except Exception as exc:  # one file must not zero the group; the finding names it
        files = sub.experiment(experiment)
        where = files.evidence if files is not None and files.evidence else f"{sub.base}{run_folder_name(experiment)}/"
        finding = GradeFinding("problem", "file-error", f"{where}: the grader could not read this file "
                          f"({type(exc).__name__}); {experiment} is scored without it",
                          f"{where}：评分程序无法读取该文件（{type(exc).__name__}）；{experiment} 按没有该文件评分",
                          where, None, experiment)
        return ExperimentResult(experiment, files, findings=(finding,))


def _claim_findings(sub: Submission, experiments: tuple[ExperimentResult, ...]) -> tuple[int, int, list[GradeFinding]]:
    findings: list[GradeFinding] = []
    total = supported = 0
    sources: list[tuple[str, Any, ExperimentResult | None]] = [
        (f"{sub.base}{CLAIMS}", parse_claims(sub.claims), None)]
    sources += [(f"{sub.base}{run_folder_name(_run_folder(run.files))}/{VERDICTS}",
                 parse_claims({exp.id: run.files.verdicts}), run)
                for exp in experiments for run in exp.turns or (exp,) if run.files and run.files.verdicts]
    for where, claims, own in sources:  # a verdicts.json is compared with its own run, claims.json with the whole
        for claim in claims:
            result = own or next((exp for exp in experiments if exp.id == claim.experiment), None)
            evidence = result.files.evidence if result and result.files else None
            ok, found = compare_claim(claim, result.verdict if result else None, evidence or "", where)
            if result is not None and result.attempts is not None and claim.facts:
                _, wrong = check_facts(list(claim.facts), result.attempts, claim.experiment, evidence or "", where)
                ok, found = ok and not wrong, found + wrong
            if result is not None and result.cut:
                found += _past_the_cut(claim, result, where)
            if where.endswith(CLAIMS):
                total += 1
                supported += ok
            findings += found
    return total, supported, findings


def _past_the_cut(claim: Claim, result: ExperimentResult, where: str) -> tuple[GradeFinding, ...]:
    """A claim that cites records the cut log does not hold (it was made before the cut, or invented): listed for a
    look, not deducted again (the claim's own verdict is compared as any other)."""
    last = result.last_seq if result.last_seq is not None else -1
    past = sorted(seq for seq in claim.cited if seq > last)
    if not past:
        return ()
    file = result.files.evidence if result.files and result.files.evidence else ""
    shown = ", ".join(map(str, past[:8])) + (" …" if len(past) > 8 else "")
    return (GradeFinding("problem", "claim-past-cut",
                         f"{where}: {claim.experiment} cites record(s) {shown} past the end of the cut log "
                         f"{file} (its last record is {last})",
                         f"{where}：{claim.experiment} 引用了截断日志 {file} 之后的记录 {shown}"
                         f"（最后一条记录为 {last}）",
                         file, past[0], claim.experiment),)


def _run_folder(files: ExperimentFiles) -> str:
    return f"{files.id}/{files.member}" if files.member else files.id


def _config_findings(sub: Submission) -> list[GradeFinding]:
    """The group's HiveD configs name the group's own machines (node-level addresses; leaf indices are digits)."""
    hostnames = sub.hostnames
    if hostnames is None:
        return []
    findings = []
    for name, addresses in sorted(sub.hived_nodes.items()):
        strangers = sorted(a for a in addresses if not a.isdigit() and a not in hostnames)
        if strangers:
            findings.append(GradeFinding("foreign", "config-unknown-node",
                                         f"{hived_config_name(name)} names machines that are not "
                                    f"in the group's inventory: {', '.join(strangers[:5])}",
                                    f"{hived_config_name(name)} 中的机器不在本组清单中：{', '.join(strangers[:5])}",
                                    f"{sub.base}{hived_config_name(name)}"))
    return findings


def grade_submission(sub: Submission, lab: LabSpec, judge: Judge | None,
                     experiments: tuple[str, ...]) -> GroupResult:
    """Grade a read submission: every experiment the rubric or the lab names, plus any extra the group ran."""
    wanted = list(experiments) + [e.id for e in lab.experiments if e.id not in experiments]
    wanted += [e.id for e in sub.experiments if e.id not in wanted]
    results = tuple(_grade_experiment_safely(sub, exp, lab, judge) for exp in wanted)
    total, supported, claim_findings = _claim_findings(sub, results)
    findings = [*sub.problems, *_config_findings(sub), *(f for r in results for f in r.findings), *claim_findings]
    for result in results:
        if result.judge_error and result.has_log and judge is not None:
            findings.append(GradeFinding("problem", "judge-failed", f"the checker could not judge {result.id}: "
                                    f"{result.judge_error}", f"检查器无法判定 {result.id}：{result.judge_error}",
                                    (result.files.evidence or "") if result.files else "", None, result.id))
    return GroupResult(sub, results, total, supported, tuple(findings))


def grade_folder(root: Path, lab: LabSpec, judge: Judge | None, experiments: tuple[str, ...],
                 name: str | None = None, max_bytes: int | None = None) -> GroupResult:
    return grade_submission(read_submission(root, name, max_bytes), lab, judge, experiments)
