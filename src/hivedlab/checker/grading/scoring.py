"""Rubric x graded group -> points. Pure functions: each check gives a fraction of its item's points and says why.

Fractions (documented in the default rubric's header too):
- ran: 1 when the log has the plan record, submissions and an `end` record that finished; 0.5 when it started but
  did not finish (interrupted, failed or cut); 0 without a usable log.
- right-answer: the share of the experiment's questions whose re-judged answer is consistent.
- evidence-complete: the share of six checks — chain intact, no forged or foreign records, verdict not
  inconclusive, verdicts.json present, job files present, every plan job submitted.
- environment-table: the share of filled cells of the environment table (per member: hostname, IP, OS, vCPUs, GPU,
  Docker, and CUDA for GPU machines; OpenPAI version once) from the environment records.
- deployment-notes: 1 when the students' own text in the deployment section has at least the rubric's minimum of
  characters, 0.5 when shorter, 0 when empty or when report.md is not the template.
- claims-supported: the share of the report's claims the evidence supports.
- explanation: 1 when the group's own explanation of the experiment (report.md's `explanation-<experiment>` block)
  has at least the rubric's minimum of characters, 0.5 when shorter, 0 when empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.grading.claims import question_index
from hivedlab.checker.grading.explanations import Explanation, explanations_of, length
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.grader import ExperimentResult, GroupResult
from hivedlab.checker.grading.hardware import HardwareExcuse, env_for, hardware_excuse
from hivedlab.checker.grading.labspec import LabSpec
from hivedlab.checker.grading.provenance import Identity
from hivedlab.checker.grading.rubric import Item, Penalty, Rubric
from hivedlab.checker.grading.submission import deployment_text
from hivedlab.checker.judging.rules.rule_base import INCONCLUSIVE, INCONSISTENT
from hivedlab.checker.judging.verdicts import VERDICT_TEXT
from hivedlab.env_record import EnvRecord
from hivedlab.rundir import ENV, REPORT_MD, env_record_name

FINISHED = ("finished", "completed", "done", "ok", "success")


@dataclass(frozen=True)
class ItemScore:
    item: Item
    fraction: float
    en: str
    zh: str
    evidence: tuple[str, ...] = ()  # "file#seq=N" references

    @property
    def points(self) -> float:
        return round(self.item.points * self.fraction, 2)


@dataclass(frozen=True)
class PenaltyScore:
    penalty: Penalty
    count: int
    en: str
    zh: str
    evidence: tuple[str, ...] = ()

    @property
    def points(self) -> float:
        raw = self.penalty.points * self.count
        return round(min(raw, self.penalty.max) if self.penalty.max is not None else raw, 2)


@dataclass(frozen=True)
class GroupGrade:
    name: str
    items: tuple[ItemScore, ...]
    penalties: tuple[PenaltyScore, ...]
    findings: tuple[GradeFinding, ...]
    max_points: float
    floor: float
    sources: tuple[str, ...]  # per experiment: sim / k8s / mixed / "" (not run)
    identity: Identity = frozenset()  # compared across groups (hivedlab.checker.grading.copies)
    ungraded: tuple[str, ...] = ()  # contrast runs without HiveD (run.json `contrast`, docs/other-schedulers.md)
    explanations: tuple[Explanation, ...] = ()  # the group's own explanations beside the machine's observations
    hardware: HardwareExcuse | None = None  # runs hivedlab put on the manual's hardware (grading.hardware)

    def total(self, include_hidden: bool = True) -> float:
        earned = sum(s.points for s in self.items if include_hidden or not s.item.hidden)
        lost = sum(p.points for p in self.penalties if include_hidden or not p.penalty.hidden)
        return round(max(self.floor, earned - lost), 2)

    def max_total(self, include_hidden: bool = True) -> float:
        return round(sum(s.item.points for s in self.items if include_hidden or not s.item.hidden), 2)

    @property
    def flags(self) -> tuple[str, ...]:
        """Stable codes for the grade sheet: what made this group lose points or need a look."""
        codes = [f.code for f in self.findings]
        codes += [p.penalty.check for p in self.penalties if p.count]
        return tuple(dict.fromkeys(codes))

    @property
    def needs_look(self) -> tuple[str, ...]:
        """Reasons a TA should open this folder (English, one line each)."""
        reasons = [f.en for f in self.findings
                   if f.kind in ("forgery", "chain", "claim", "problem", "foreign", "provenance", "copy")]
        return tuple(dict.fromkeys(reasons))


def _ref(result: ExperimentResult | None, seq: int | None = None) -> tuple[str, ...]:
    if result is None or result.files is None or result.files.evidence is None:
        return ()
    return (result.files.evidence if seq is None else f"{result.files.evidence}#seq={seq}",)


def score_ran(result: ExperimentResult | None) -> tuple[float, str, str, tuple[str, ...]]:
    if result is None or result.files is None:
        return 0.0, "not run: no experiment folder", "未运行：没有实验目录", ()
    if not result.has_log or result.facts is None:
        return 0.0, "no usable evidence log", "没有可用的证据日志", _ref(result)
    facts = result.facts
    if facts.plan_experiment is None or not facts.submitted_keys:
        return 0.5, "the log has no plan record or no submission", "日志中没有计划记录或没有提交记录", _ref(result)
    if facts.ended is None:
        return (0.5, "started but the log has no end record (interrupted or cut)",
                "已开始，但日志没有结束记录（中断或被截断）", _ref(result))
    if facts.ended.lower() not in FINISHED:
        return 0.5, f"started but ended '{facts.ended}'", f"已开始，但结束状态为 '{facts.ended}'", _ref(result)
    return 1.0, "run to the end", "已完整运行", _ref(result)


def _answers(verdict: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    answers = verdict.get("answers")
    return [a for a in answers if isinstance(a, Mapping)] if isinstance(answers, list) else []


def score_answer(result: ExperimentResult | None) -> tuple[float, str, str, tuple[str, ...]]:
    if result is None or not result.has_log:
        return 0.0, "nothing to judge", "没有可判定的证据", ()
    if result.verdict is None:
        why = result.judge_error or "no verdict"
        return 0.0, f"could not be re-judged ({why})", f"无法复核（{why}）", _ref(result)
    answers = _answers(result.verdict)
    overall = str(result.verdict.get("verdict"))
    if not answers:
        fraction = 1.0 if overall == "consistent" else 0.0
        return fraction, f"re-judged {overall}", f"复核结果：{overall}", _ref(result)
    good = [a for a in answers if a.get("verdict") == "consistent"]
    refs = []
    for answer in answers:
        seqs = ([s for s in answer.get("evidence", []) if isinstance(s, int)]
                if isinstance(answer.get("evidence"), list) else [])
        refs += [f"{result.files.evidence}#seq={s}" for s in seqs[:3]] if result.files and result.files.evidence else []
    bad = [f"Q{question_index(a, i) + 1}" for i, a in enumerate(answers) if a.get("verdict") != "consistent"]
    en = f"{len(good)} of {len(answers)} answers consistent with HiveD (re-judged {overall})"
    zh = f"{len(answers)} 个问题中 {len(good)} 个与 HiveD 行为一致（复核结果：{overall}）"
    if bad:
        en += f"; not consistent: {', '.join(bad)}"
        zh += f"；{VERDICT_TEXT[INCONSISTENT].zh}或{VERDICT_TEXT[INCONCLUSIVE].zh}：{', '.join(bad)}"
    missing = [m for m in result.verdict.get("missing") or [] if isinstance(m, Mapping)][:2]
    if missing:
        en += " — missing: " + "; ".join(str(m.get("en", "")) for m in missing)
        zh += " —— 缺少：" + "；".join(str(m.get("zh", "")) for m in missing)
    return len(good) / len(answers), en, zh, tuple(dict.fromkeys(refs))


def score_evidence(result: ExperimentResult | None, lab: LabSpec) -> tuple[float, str, str, tuple[str, ...]]:
    if result is None or result.files is None or not result.has_log:
        return 0.0, "no evidence", "没有证据", ()
    spec = lab.get(result.id)
    submitted = set(result.facts.submitted_keys) if result.facts else set()
    missing_jobs = sorted({job.key for job in spec.jobs} - submitted) if spec else []
    verdict_complete = result.verdict is not None and result.verdict.get("verdict") != "inconclusive"
    checks = [
        (result.chain_ok, "hash chain intact", "哈希链完整"),
        (not any(f.kind in ("forgery", "foreign") for f in result.findings), "no forged or foreign records",
         "没有伪造或不属于实验的记录"),
        (verdict_complete, "enough evidence for a verdict", "证据足以判定"),
        (result.files.verdicts is not None, "verdicts.json present", "有 verdicts.json"),
        (bool(result.files.job_files), "job files present", "有提交的任务配置文件"),
        (not missing_jobs, "every plan job submitted", "计划中的任务都已提交"),
    ]
    passed = [c for c in checks if c[0]]
    failed = [c for c in checks if not c[0]]
    en = f"{len(passed)} of {len(checks)} evidence checks pass"
    zh = f"{len(checks)} 项证据检查通过 {len(passed)} 项"
    if failed:
        en += "; missing: " + "; ".join(c[1] for c in failed)
        zh += "；缺少：" + "；".join(c[2] for c in failed)
    if missing_jobs:
        en += f" ({', '.join(missing_jobs)})"
        zh += f"（{', '.join(missing_jobs)}）"
    return (len(passed) / len(checks), en, zh,
            _ref(result, result.first_broken_seq) if not result.chain_ok else _ref(result))


def _filled(value: Any) -> bool:
    return (value not in (None, "", [], {})
            and not (isinstance(value, str) and value.strip().lower() in ("unknown", "n/a")))


def score_environment(group: GroupResult) -> tuple[float, str, str, tuple[str, ...]]:
    sub = group.submission
    if sub.inventory is None:
        return 0.0, "no group inventory, so no environment table", "没有小组清单，无法填写实验环境表", ()
    if not sub.env:
        return 0.0, f"no environment records: looked in {sub.base}{ENV}/ (the run directory's {ENV}/<member>.json); "\
            "run `python3 labs/00_check_env.py` on every member's machine and copy each record there",\
            f"没有环境记录：查找了 {sub.base}{ENV}/（运行目录的 {ENV}/<组员>.json）；请在每位组员的机器上运行 "\
            "`python3 labs/00_check_env.py` 并把记录复制到这里", ()
    cells = filled = 0
    missing: list[str] = []
    openpai = any(_filled(r.openpai_version) for r in sub.env.values()) or bool(
        sub.record and sub.record.openpai_version)
    for member in sub.inventory.members:
        record = env_for(sub.env, member) or EnvRecord()
        fields: dict[str, object] = {
            # the report fills hostname and IP from the inventory when the record lacks them
            "hostname": record.hostname or member.hostname, "ip": record.ip or member.ip,
            "os": record.os,
            "vcpus": record.vcpus, "gpu": record.gpu_count,
            "docker": record.docker_version,
        }
        if "worker" in member.roles or member.gpus:
            fields["cuda"] = record.cuda_version
        for key, value in fields.items():
            cells += 1
            if _filled(value):
                filled += 1
            else:
                missing.append(f"{member.name}.{key}")
    cells += 1
    filled += openpai
    if not openpai:
        missing.append("OpenPAI version")
    en = f"{filled} of {cells} environment table cells filled"
    zh = f"实验环境表 {cells} 项中已填 {filled} 项"
    if missing:
        en += "; missing: " + ", ".join(missing[:12])
        zh += "；缺少：" + ", ".join(missing[:12])
    return filled / cells, en, zh, tuple(f"{sub.base}{env_record_name(name)}" for name in sorted(sub.env))


def score_deployment(group: GroupResult, min_chars: int) -> tuple[float, str, str, tuple[str, ...]]:
    sub = group.submission
    if sub.report_md is None:
        return 0.0, "no report.md", "没有 report.md", ()
    ref = (f"{sub.base}{REPORT_MD}",)
    text = deployment_text(sub.report_md)
    if text is None:
        return 0.0, "report.md is not the hivedlab template (no deployment section markers)",\
            "report.md 不是 hivedlab 模板（没有部署部分的标记）", ref
    length = len(text.replace(" ", ""))
    if length >= min_chars:
        return 1.0, f"deployment notes present ({length} characters)", f"已填写部署说明（{length} 字）", ref
    if length:
        return 0.5, f"deployment notes too short ({length} of {min_chars} characters)",\
            f"部署说明过短（{length}/{min_chars} 字）", ref
    return 0.0, "deployment section left empty", "部署部分未填写", ref


def score_explanation(explanation: Explanation | None, min_chars: int) -> tuple[float, str, str, tuple[str, ...]]:
    if explanation is None or explanation.empty:
        return 0.0, "explanation left empty", "没有填写解释", ()
    size = length(explanation.text)
    if size >= min_chars:
        return 1.0, f"explanation written ({size} characters)", f"已填写解释（{size} 字）", ()
    return 0.5, f"explanation too short ({size} of {min_chars} characters)", f"解释过短（{size}/{min_chars} 字）", ()


def score_claims(group: GroupResult) -> tuple[float, str, str, tuple[str, ...]]:
    if group.claims_total == 0:
        return 0.0, "no machine-readable claims (claims.json) to check", "没有可检查的结论（claims.json）", ()
    fraction = group.claims_supported / group.claims_total
    refs = tuple(f.where() for f in group.findings if f.kind == "claim")
    return fraction, f"{group.claims_supported} of {group.claims_total} report claims supported by the evidence",\
        f"报告的 {group.claims_total} 条结论中 {group.claims_supported} 条有证据支持", refs


def score_item(item: Item, group: GroupResult, lab: LabSpec, rubric: Rubric,
               explanations: tuple[Explanation, ...] = ()) -> ItemScore:
    result = group.experiment(item.experiment) if item.experiment else None
    if item.check == "ran":
        fraction, en, zh, refs = score_ran(result)
    elif item.check == "right-answer":
        fraction, en, zh, refs = score_answer(result)
    elif item.check == "evidence-complete":
        fraction, en, zh, refs = score_evidence(result, lab)
    elif item.check == "environment-table":
        fraction, en, zh, refs = score_environment(group)
    elif item.check == "deployment-notes":
        fraction, en, zh, refs = score_deployment(group, rubric.deployment_notes_min_chars)
    elif item.check == "explanation":
        written = next((e for e in explanations if e.experiment == item.experiment), None)
        fraction, en, zh, refs = score_explanation(written, rubric.explanation_min_chars)
        refs = (f"{group.submission.base}{REPORT_MD}",) if written and not written.empty else refs
    else:
        fraction, en, zh, refs = score_claims(group)
    return ItemScore(item, max(0.0, min(1.0, fraction)), en, zh, refs)


def score_penalty(penalty: Penalty, group: GroupResult, rubric: Rubric,
                  excuse: HardwareExcuse | None = None) -> PenaltyScore:
    if penalty.check == "simulator-evidence":
        simulated = ([r for r in group.experiments if r.has_log and r.source in ("sim", "mixed")]
                     if rubric.require_real_cluster else [])
        hits = [r for r in simulated if not (excuse and excuse.covers(r.id))]
        excused = [r.id for r in simulated if r not in hits]
        en = f"simulator evidence: {', '.join(r.id for r in hits) or 'none'}"
        zh = f"模拟集群证据：{', '.join(r.id for r in hits) or '无'}"
        if excused and excuse:  # the rubric's rule for hardware that cannot hold the configs (grading.hardware)
            en += f"; not penalised: {excuse.en}"
            zh += f"；不扣分：{excuse.zh}"
        return PenaltyScore(penalty, len(hits), en, zh, tuple(r.files.evidence or "" for r in hits if r.files))
    if penalty.check == "rehearsal-evidence":
        rehearsed = [r for r in group.experiments if r.has_log and r.rehearsal] if rubric.require_real_cluster else []
        ids = ", ".join(r.id for r in rehearsed)
        en = (f"ran on the rehearsal cluster (OpenPAI's real control plane, emulated kubelets and GPUs): {ids}"
              if rehearsed else "none")
        zh = f"在演练集群上运行（OpenPAI 的真实控制面，kubelet 与 GPU 为模拟）：{ids}" if rehearsed else "无"
        return PenaltyScore(penalty, len(rehearsed), en, zh,
                            tuple(r.files.evidence or "" for r in rehearsed if r.files))
    kind = {"broken-chain": "chain", "forgery": "forgery", "unsupported-claim": "claim",
            "foreign-jobs": "foreign"}[penalty.check]
    found = [f for f in group.findings if f.kind == kind]
    if penalty.check == "unsupported-claim":
        count = len(found)
    else:  # once per log (experiment) however many records show it
        count = len({f.experiment or f.file for f in found})
    en = "; ".join(dict.fromkeys(f.en for f in found)) or "none"
    zh = "；".join(dict.fromkeys(f.zh for f in found)) or "无"
    return PenaltyScore(penalty, count, en, zh, tuple(dict.fromkeys(f.where() for f in found if f.where())))


def score_group(group: GroupResult, rubric: Rubric, lab: LabSpec) -> GroupGrade:
    ran = tuple(e for e in rubric.experiments or tuple(x.id for x in lab.experiments)
                if (result := group.experiment(e)) is not None and result.has_log)
    written = explanations_of(group.submission.report_md, {r.id: r.verdict for r in group.experiments},
                              rubric.experiments or tuple(x.id for x in lab.experiments))
    explanations = tuple(e for e in written if e.experiment in ran or not e.empty)  # an experiment not run: no flag
    items = tuple(score_item(item, group, lab, rubric, explanations) for item in rubric.items)
    excuse = hardware_excuse(group)
    penalties = tuple(score_penalty(p, group, rubric, excuse) for p in rubric.penalties)
    unconfirmed = excuse.finding() if excuse else None
    looked_up = (group.experiment(e) for e in rubric.experiments)
    sources = tuple(result.source if result else "" for result in looked_up)
    contrast = group.submission.record.contrast if group.submission.record else ()
    findings = (*group.findings, unconfirmed) if unconfirmed else group.findings
    return GroupGrade(group.name, items, penalties, findings, rubric.max_points(), rubric.floor, sources,
                      group.identity, tuple(contrast), explanations, excuse)
