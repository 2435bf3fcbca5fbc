"""Whose runs an experiment's section covers, in words: the members' names (the inventory's, never a user it does
not list), in Chinese without the spaces a template puts around a Chinese name."""

from __future__ import annotations

import re
from collections.abc import Mapping

from hivedlab.checker.report.inputs import ExperimentInputs
from hivedlab.checker.report.wording import in_lang, md


def whose_runs(exp: ExperimentInputs, names: Mapping[str, str], everyone: bool = False) -> list[str]:
    """The members whose runs an experiment covers, by their names: each turn's member, or who submitted; only the
    inventory's members unless `everyone`."""
    users = [u for t in exp.turns or (exp,) for u in (t.submitters or ((t.member,) if t.member else ()))]
    return [names.get(u, u) for u in dict.fromkeys(users) if everyone or in_inventory(u, names)]


def in_inventory(user: str, names: Mapping[str, str]) -> bool:
    """Whether the report may name this user: one of the inventory it shows (any user when it shows none)."""
    return not names or user in names


_CJK = "[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"


def tight(text: str) -> str:
    """Chinese text without the spaces a template put around a name: none between two Chinese characters
    ("下面是张三的运行"), kept beside Latin letters and digits ("下面是 Alice 的运行")."""
    return re.sub(f"(?<={_CJK}) (?={_CJK})", "", text)


def whose_phrase(exp: ExperimentInputs, names: Mapping[str, str], lang: str) -> str:
    """`(Alice's turn)`, `(runs of Alice, Bob: each in turn)`, `(submitted by Alice, Bob at once)`; "" when unknown."""
    who = whose_runs(exp, names)
    if not who:
        return ""
    listed = ("、" if lang == "zh" else ", ").join(who)
    if len(exp.turns) > 1:
        # the run shown first: its member's turn, or (a run without --member) whoever submitted it
        shown = (exp.member,) if exp.member else exp.submitters
        first = ("、" if lang == "zh" else ", ").join(names.get(u, u) for u in dict.fromkeys(shown)
                                                    if in_inventory(u, names))
        if len(whose_runs(exp, names, everyone=True)) == 1:  # one member's runs, with and without --member
            return tight(in_lang(lang, f"（{listed} 的 {len(exp.turns)} 次运行；下面是第一次）",
                      f"({listed}'s {len(exp.turns)} runs; what follows is the first)"))
        if not first:  # the first run's submitter is not in the inventory shown
            return tight(in_lang(lang, f"（{listed} 依次各做一遍；下面是未指定 --member 的运行）",
                                 f"(runs of {listed}, each in turn; what follows is the run without --member)"))
        return tight(in_lang(lang, f"（{listed} 依次各做一遍；下面是 {first} 的运行）",
                  f"(runs of {listed}, each in turn; what follows is {first}'s run)"))
    if len(who) > 1:
        return tight(in_lang(lang, f"（{listed} 同时提交）", f"(submitted by {listed} at once)"))
    return tight(in_lang(lang, f"（{listed} 的运行）", f"({listed}'s run)"))


def first_turn(exp: ExperimentInputs, names: Mapping[str, str], lang: str) -> str:
    """Whose run the details below are of, as a sentence."""
    who = md(names.get(exp.member, exp.member) if exp.member else ", ".join(
        names.get(u, u) for u in exp.submitters if in_inventory(u, names)))
    if not who:
        return in_lang(lang, "以下细节为未指定 --member 的运行。", "The details below are of the run without --member.")
    return tight(in_lang(lang, f"以下细节为 {who} 的运行。", f"The details below are of {who}'s run."))
