"""A submission the rest-server answered against the plan's expectation, said where it happens: one notice for the
terminal (the job, the HTTP status, the server's code and message, the fix) and one sentence for the run's end record
(`hivedlab.rundir.RunOutcome`, status `refused`), which the checker, the report and the grader read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hivedlab.basics.text import Text


@dataclass(frozen=True)
class Refusal:
    """One submission whose reply went against the plan: refused though expected accepted, or the other way."""

    user: str
    job_name: str
    job_file: str  # as the student names it: `jobs/<file>`
    expected: str  # accepted | rejected
    status: int | None
    code: str
    message: str

    @property
    def fix(self) -> str:
        return f"hivedlab validate {self.job_file}"

    def sentence(self) -> Text:
        """The one sentence the end record, the verdict and the report's results cell say."""
        if self.expected == "accepted":
            why = ", ".join(part for part in (f"HTTP {self.status}" if self.status else "", self.code) if part)
            said = f"{why}: {self.message}" if self.message else why
            return Text(f"rest-server 拒绝了 {self.user} 的 {self.job_name}（{said}），而计划预期它被接受，"
                        f"因此无法判断；请运行 `{self.fix}` 修正。",
                        f"the rest-server refused {self.user}'s {self.job_name} ({said}), which the plan expected it "
                        f"to accept, so this cannot be judged; run `{self.fix}`.")
        return Text(f"rest-server 接受了 {self.user} 的 {self.job_name}（HTTP {self.status}），而计划预期它被拒绝，"
                    f"因此无法判断；请检查 {self.job_file} 是否被改动过。",
                    f"the rest-server accepted {self.user}'s {self.job_name} (HTTP {self.status}), which the plan "
                    f"expected it to refuse, so this cannot be judged; check whether {self.job_file} was changed.")

    def notice(self, run_id: str) -> str:
        """The terminal's two lines, printed the moment the reply comes."""
        text = self.sentence()
        return f"hivedlab run: {run_id}: {text.en}\nhivedlab run: {run_id}: {text.zh}"


def refusal(user: str, job_name: str, job_file: str, expected: str, status: int | None, body: Any) -> Refusal:
    """The refusal a reply makes, its server message made readable (`server_message`)."""
    code = str(body.get("code") or "") if isinstance(body, dict) else ""
    raw = body.get("message") if isinstance(body, dict) else body
    return Refusal(user, job_name, job_file, expected, status, code, server_message(raw))


def server_message(raw: Any) -> str:
    """The rest-server's message in one line. It sends a protocol's schema errors as ajv's error list in JSON
    (`[{"dataPath": ".taskRoles.train.instance", "message": "…"}]`, as `hivedlab.models.openpai.admission` models
    it): each becomes `path: message`."""
    text = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw, ensure_ascii=False)
    try:
        issues = json.loads(text)
    except ValueError:
        return " ".join(text.split())
    if not isinstance(issues, list) or not all(isinstance(issue, dict) for issue in issues):
        return " ".join(text.split())
    return "; ".join(_issue(issue) for issue in issues)


def _issue(issue: dict[str, Any]) -> str:
    """One ajv error: `path: message`, with the unknown key ajv names in `params` (`additionalProperty`)."""
    params = issue.get("params")
    extra = params.get("additionalProperty") if isinstance(params, dict) else None
    text = f"{issue.get('dataPath') or ''}: {issue.get('message') or ''}".strip(": ")
    return " ".join(f"{text} ({extra!r})".split() if extra else text.split())
