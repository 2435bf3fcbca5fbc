"""Fixed wording of the report (the lab manual's, zh; our English) and escaping of what the report prints.

Everything a user, a plan or a cluster supplies goes through `md` (or `cell` inside a table) before it reaches a
Markdown template, so names like `<script>`, `a|b` or `*x*` print as themselves in report.md and report.html.
"""

from __future__ import annotations

import re

from hivedlab.basics.clock import since_start

ENV_ROWS: tuple[tuple[str, str, str, str], ...] = (
    # (key, group zh, row label zh, row label en) — the manual's 实验环境 table
    ("vcpus", "硬件环境", "CPU（vCPU数目）", "CPU (vCPUs)"),
    ("gpu", "", "GPU(型号，数目)", "GPU (model, count)"),
    ("ip", "", "IP", "IP"),
    ("hostname", "", "HostName", "HostName"),
    ("os", "软件环境", "OS版本", "OS version"),
    ("docker", "", "Docker Engine版本", "Docker Engine version"),
    ("cuda", "", "CUDA版本", "CUDA version"),
    ("openpai", "", "OpenPAI版本", "OpenPAI version"),
)
ENV_GROUP_EN = {"硬件环境": "Hardware", "软件环境": "Software"}

_MD_BACKSLASH = re.compile(r"([\\`*_\[\]|#])")  # Python-Markdown's escapable characters we need


def md(value: object) -> str:
    """Inline text for Markdown: HTML special characters as entities, Markdown markup characters escaped."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_BACKSLASH.sub(r"\\\1", text)
    return " ".join(text.split())


def cell(value: object) -> str:
    """Text for a Markdown table cell: `md`, with line breaks kept as <br/>."""
    lines = ("" if value is None else str(value)).splitlines() or [""]
    return "<br/>".join(md(line) for line in lines)


def in_lang(lang: str, zh: str, en: str) -> str:
    """One of two texts by language."""
    return zh if lang == "zh" else en


def pick(value: object, lang: str) -> str:
    """A bilingual `{zh, en}` value (or a plain string) in `lang`, falling back to the other language."""
    if isinstance(value, dict):
        other = "en" if lang == "zh" else "zh"
        chosen = value.get(lang) or value.get(other) or ""
        return str(chosen)
    return "" if value is None else str(value)


def clock(seconds: float | None) -> str:
    """Seconds since the experiment began as T+h:mm:ss: the report's one way to print a time (tables, sentences and
    charts), cut down to the second by the same rule as every clock time (`hivedlab.basics.clock`)."""
    if seconds is None:
        return ""
    return since_start(seconds)


# The concept each experiment shows, as the prompt of the group's own explanation (docs/lab-experiments.md).
EXPLANATION_PROMPTS: dict[str, tuple[str, str]] = {
    "vc-safety": (
        "VC 是 HiveD 为每个虚拟集群保证的资源（cell）份额。"
        "请解释：为什么等待的任务没有被调度到 `default` VC 空闲的机器上？",
        "A VC is the share of resources (cells) HiveD guarantees to a virtual cluster. Explain why the waiting jobs "
        "were not scheduled onto the idle machine of the `default` VC.",
    ),
    "priority": (
        "优先级与抢占：请解释为什么后提交的 prod 任务不需要等待，以及被抢占的 test 任务之后是怎样运行的。",
        "Priority and preemption: explain why the later prod job did not have to wait, and how the preempted test "
        "job ran afterwards.",
    ),
    "opportunistic": (
        "低优先级（opportunistic）任务可以使用任何 VC 的空闲资源，但随时可能被抢占。请解释 oppo 任务为什么能马上运行，"
        "又为什么被 `test` 任务抢占。",
        "An opportunistic job may use any VC's idle resources but can be preempted at any time. Explain why the "
        "oppo job could start at once, and why the `test` job preempted it.",
    ),
    "gang": (
        "群调度（gang scheduling）：请解释为什么 2 个子任务一起等待、一起开始，而不是先运行其中一个。",
        "Gang scheduling: explain why the 2 tasks waited and started together instead of one starting first.",
    ),
    "incremental": (
        "弹性调度（`gangAllocation: false`）与配额检查：请解释为什么第一个子任务不必等整个任务都能被放下就开始运行，"
        "其余子任务后来怎样了，以及为什么超过配额的群调度任务被拒绝，而弹性调度任务可以提交。",
        "Incremental scheduling (`gangAllocation: false`) and the quota check: explain why the first task could start "
        "before the whole job could be placed, what became of the other task, and why the over-quota gang job was "
        "rejected while the incremental one was accepted.",
    ),
}
EXPLANATION_PROMPT_OTHER = (
    "请解释 HiveD 为什么这样调度：依据上面的现象，用实验涉及的概念说明原因。",
    "Explain why HiveD scheduled the jobs this way: the concept behind what the evidence above shows.",
)
