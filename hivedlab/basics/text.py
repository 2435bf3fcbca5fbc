"""The one bilingual message type: everything hivedlab says to a student or a TA exists in Chinese and English."""

from __future__ import annotations

from dataclasses import dataclass


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
