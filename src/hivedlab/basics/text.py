"""The one bilingual message type: everything hivedlab says to a student or a TA exists in Chinese and English."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_STATEMENT_END = re.compile(r"[。：]|[.:](?:\s|$)")


@dataclass(frozen=True)
class Text:
    zh: str
    en: str

    def get(self, lang: str) -> str:
        """The text in `lang` (zh or en)."""
        return self.zh if lang == "zh" else self.en

    def as_dict(self) -> dict[str, str]:
        return {"zh": self.zh, "en": self.en}

    def __add__(self, other: Text) -> Text:
        """Both languages joined; English gets a space between words, Chinese none."""
        a, b = self.en, other.en
        space = " " if a and b and not a.endswith(" ") and b[0] not in " .,;:)" else ""
        return Text(self.zh + other.zh, a + space + b)


def english(texts: Iterable[Text]) -> tuple[str, ...]:
    """The English of each text: what JSON outputs and the code that matches on messages keep."""
    return tuple(text.en for text in texts)


def first_statement(text: str, lang: str) -> str:
    """A sentence's first statement, up to its first full stop or colon outside brackets, as a sentence of its own
    (a short form of a long answer)."""
    for match in _STATEMENT_END.finditer(text):
        head = text[:match.start()]
        if sum(head.count(c) for c in "（(") == sum(head.count(c) for c in "）)") and head.strip():
            return head.rstrip() + ("。" if lang == "zh" else ".")
    return text


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: a CJK (wide or fullwidth) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, width: int) -> str:
    """Left-justify by display width (`display_width`)."""
    return text + " " * max(0, width - display_width(text))
