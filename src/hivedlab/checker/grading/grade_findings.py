"""What the grader found about a group, in both languages, with the record that shows it."""

from __future__ import annotations

from dataclasses import dataclass

# kinds: "forgery" (a real cluster cannot produce it), "chain" (hash chain broken), "foreign" (not the lab's jobs,
# VCs, priorities or nodes), "claim" (a report claim the evidence contradicts), "problem" (missing or unreadable input)
KINDS = ("forgery", "chain", "foreign", "claim", "problem")


@dataclass(frozen=True)
class GradeFinding:
    kind: str
    code: str
    en: str
    zh: str
    file: str = ""  # relative to the group folder
    seq: int | None = None  # evidence record that shows it
    experiment: str | None = None

    def where(self) -> str:
        if self.file and self.seq is not None:
            return f"{self.file}#seq={self.seq}"
        return self.file

    def text(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en
