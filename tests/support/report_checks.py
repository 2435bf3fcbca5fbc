"""Checks the report tests share (kept out of the test modules so that several can import them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROWS_ZH = ["VC 安全 (VC Safety)", "优先级和抢占 (Priority and Preemption)", "低优先级任务 (Opportunistic Job)",
           "群调度 (Gang Scheduling)", "弹性调度 (Incremental Scheduling)"]


def table_rows(md: str, first_header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header starts with `first_header` (cells split on unescaped |)."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells, current, escaped = [], "", False
        for char in line.strip()[1:-1]:
            if char == "|" and not escaped:
                cells.append(current.strip())
                current = ""
            else:
                current += char
            escaped = char == "\\" and not escaped
        rows.append([*cells, current.strip()])
    return rows


def claims_of(run: Path) -> dict:
    return {e["id"]: e for e in json.loads((run / "claims.json").read_text(encoding="utf-8"))["experiments"]}


def ran(facts: list[dict], job: str, attempt: int = 0, task: str = "train-0") -> dict:
    return next(f for f in facts if f["job"] == job and f["attempt"] == attempt and f["task"] == task)


def check_lab6_answers(claims: dict) -> None:
    """The report's facts per experiment give docs/lab-experiments.md's answers (order and overlap, not durations)."""
    # 4.2: every vc1 job ran on Dan's machine, one after another; none on the idle default VC's machine.
    vc = [f for f in claims["vc-safety"]["facts"] if f["start_s"] is not None]
    assert {f["node"] for f in vc} == {"hostname-dan"} and len(vc) == 4
    spans = sorted((f["start_s"], f["end_s"]) for f in vc)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    # 4.3: the prod job preempted the test job at once; the test job re-ran after it.
    pr = claims["priority"]["facts"]
    low0, high, low1 = ran(pr, "job-config-1"), ran(pr, "job-config-2"), ran(pr, "job-config-1", 1)
    assert low0["preempted"] and low0["end_s"] <= high["bound_s"] < low0["start_s"] + 120
    assert low1["recreated"] and low1["start_s"] >= high["end_s"]
    # 4.4: oppo starts at once on Carol's idle node, is preempted by the default VC's test job, then runs on Dan's.
    op = claims["opportunistic"]["facts"]
    prod, oppo0, guest, oppo1 = (ran(op, "job-config-3"), ran(op, "job-config-4"), ran(op, "job-default-test"),
                                 ran(op, "job-config-4", 1))
    assert oppo0["node"] == "hostname-carol" and oppo0["start_s"] < prod["end_s"] and oppo0["preempted"]
    assert guest["node"] == "hostname-carol" and oppo1["node"] == "hostname-dan" and oppo1["start_s"] >= prod["end_s"]
    # 4.6: both gang tasks bind in the same round, only after job-config-5 ends.
    gg = claims["gang"]["facts"]
    g0, g1 = ran(gg, "job-config-6"), ran(gg, "job-config-6", task="train-1")
    assert g0["bound_s"] == g1["bound_s"] >= ran(gg, "job-config-5")["end_s"]
    assert g0["waiting_s"] and g1["waiting_s"]
    assert {g0["node"], g1["node"]} == {"hostname-carol", "hostname-dan"}
    # 4.7: task 0 starts while job-config-5 runs; task 1 only after it ends.
    assert claims["incremental"]["rejections"][0]["status"] == 400
    inc = claims["incremental"]["facts"]
    holder, e0, e1 = ran(inc, "job-config-5"), ran(inc, "job-config-7"), ran(inc, "job-config-7", task="train-1")
    assert e0["start_s"] < holder["end_s"]
    assert e1["waiting_s"] and e1["waiting_s"][0][0] < holder["end_s"]
    assert e1["start_s"] is None or e1["start_s"] >= holder["end_s"]  # or task 0 succeeded first: never ran


class _Checker(HTMLParser):
    VOID = {"meta", "br", "hr", "img", "link", "input", "col", "area", "base", "source", "wbr"}
    BLOCK = {"figure", "table", "div", "ul", "ol", "p", "h1", "h2", "h3", "h4", "blockquote", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.refs: list[str] = []
        self.tags: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        if tag in self.BLOCK and "p" in self.stack:
            self.errors.append(f"<{tag}> inside <p>")
        self.refs += [v for k, v in attrs if k in ("href", "src", "xlink:href") and v]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        self.refs += [v for k, v in attrs if k in ("href", "src", "xlink:href") and v]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_html(path: Path) -> _Checker:
    checker = _Checker()
    checker.feed(path.read_text(encoding="utf-8"))
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert len(checker.ids) == len(set(checker.ids)), "ids are unique across the inline charts"
    inner = {r[1:] for r in checker.refs if r.startswith("#")}
    assert inner <= set(checker.ids), "every #reference resolves"
    return checker


def smoke_verdict(run: Path) -> tuple[str, list[str]]:
    """A run's smoke verdict and its answers' English."""
    data = json.loads((run / "experiments" / "smoke" / "verdicts.json").read_text(encoding="utf-8"))
    return data["verdict"], [a["answer"]["en"] for a in data["answers"]]


@dataclass(frozen=True)
class CordonSeen:
    """What the log says of a cordon that ended within the run and of the pod that ran on the node meanwhile, as the
    report writes it: times of day, T+ times and seqs read from the log by the test."""

    node: str
    span: str  # "07:04:54–07:05:15 UTC"
    t_span: str  # "T+0:00:05–T+0:00:26"
    seqs: str  # the cordon's and the uncordon's records: "41, 63"
    pod: dict[str, str]  # the report's name of the pod, per language: "alice's job-smoke-test (alice) smoke-0"
    job_row: str  # the first cell of its row in the timeline table: "job-smoke-test (alice)"
    ran: str  # when the pod ran: "T+0:00:05–T+0:00:29"
    pod_seqs: str  # its first running and its ended records


def check_cordon_named(smoke: dict[str, str], seen: CordonSeen) -> None:
    """The smoke section of each language's report names the cordon, its node's row and the pod's note; no fault."""
    en, zh = smoke["en"], smoke["zh"]
    assert (f"- Node cordoned: node {seen.node} cordoned {seen.span} (spec.unschedulable; {seen.t_span}; evidence "
            f"records seq {seen.seqs}); the pod of {seen.pod['en']} stayed Running on it (it ran {seen.ran}; seq "
            f"{seen.pod_seqs}).") in en
    assert (f"- 节点封锁：节点 {seen.node} {seen.span} 被封锁（cordon，spec.unschedulable；{seen.t_span}；证据记录 seq "
            f"{seen.seqs}）；{seen.pod['zh']} 的 pod 在其上一直处于 Running（运行于 {seen.ran}；seq {seen.pod_seqs}）。"
            ) in zh
    node_row = f"| — | — | — | {seen.node} | {seen.t_span.replace('–', ' | ')} | — |"
    assert f"{node_row} node cordoned |" in en and f"{node_row} 节点被封锁（cordon） |" in zh
    pod_en = next(line for line in en.splitlines() if line.startswith(f"| {seen.job_row} |"))
    pod_zh = next(line for line in zh.splitlines() if line.startswith(f"| {seen.job_row} |"))
    assert pod_en.endswith(f"| succeeded; node {seen.node} cordoned {seen.t_span} |")
    assert pod_zh.endswith(f"| 成功；节点 {seen.node} {seen.t_span} 被封锁 |")
    for text in (en, zh):  # the node stayed Ready: no node fault
        assert "Node fault" not in text and "节点故障" not in text and "NotReady" not in text
