"""The documented differences between the simulator's stream and the rehearsal cluster's: one data file,
`configs/known-differences.yaml`, read by the differ; docs/simulator-vs-rehearsal.md's table is generated from it
(`known_table`, a test holds the two together).

Each entry names the facts it applies to (`fields`: patterns over the flattened paths where `*` matches anything, e.g.
`job[*].states`) and how it makes the two sides comparable, applied in this order:

- `drop`: a regular expression; list items it matches are removed (on `side`: sim, rehearsal or both);
- `rewrite`: `[pattern, replacement]` pairs applied to the values of `side` (a list's items, or a value; a number
  or null as its JSON text, e.g. `["^143$", "0"]`);
- `compare: presence`: the same when both are zero/empty or both are not;
- `compare: any`: the same whatever they are (a fact that only shows how the run was timed);
- `compare: unordered`: the same when both lists hold the same items, in any order (e.g. the pods tf-operator creates
  in Go's map order).

`when` (optional) limits an entry to facts of an attempt or job whose other fact is a given value on both sides, or
the same on both (`same`): `{attempt.fc_exit_code: -220}`, `{job.placements: same}`.

A fact whose values differ but agree once the entries are applied is a documented difference (its entries named);
one that still differs is not. `experiments` (optional) limits an entry to those plans, or to those contrast runs
(`kubeflow-gang@default`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_yaml
from hivedlab.basics.resources import CONFIGS

KNOWN_FILE = CONFIGS / "known-differences.yaml"
CATEGORIES = ("simplification", "kubernetes-1.20", "rehearsal")
SIDES = ("sim", "rehearsal", "both")
SCOPES = ("attempt", "job")
COMPARES = ("", "presence", "any", "unordered")
SAME = "same"


@dataclass(frozen=True)
class KnownDifference:
    id: str
    category: str  # simplification (the simulator's), kubernetes-1.20 (the rehearsal's 1.20 vs the course's 1.14/1.15),
    #                rehearsal (the emulated kubelets, or the rehearsal's machinery)
    fields: tuple[str, ...]
    summary_en: str
    summary_zh: str
    course: str  # what the course's Kubernetes 1.14/1.15 (and the simulator) do
    kubernetes_1_20: str  # what the rehearsal cluster's 1.20.2 does ("" when it is not a 1.20 difference)
    side: str = "both"
    drop: re.Pattern[str] | None = None
    rewrite: tuple[tuple[re.Pattern[str], str], ...] = ()
    compare: str = ""  # "", "presence", "any" or "unordered"
    experiments: tuple[str, ...] = ()  # only these plans (all when empty)
    when: tuple[tuple[str, Any], ...] = ()  # (`attempt.<fact>` or `job.<fact>`, a value or SAME)

    def applies(self, path: str, experiment: str | None = None, run_id: str | None = None) -> bool:
        if self.experiments and experiment not in self.experiments and run_id not in self.experiments:
            return False
        return any(_glob(pattern).fullmatch(path) for pattern in self.fields)

    def on(self, side: str) -> bool:
        return self.side in ("both", side)


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    """A path pattern: `*` matches anything, every other character (brackets included) only itself."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise HivedlabError(f"{where}: `{key}` must be a non-empty text")
    return value.strip()


def _entry(entry: Any, where: str) -> KnownDifference:
    if not isinstance(entry, dict):
        raise HivedlabError(f"{where}: an entry must be a mapping")
    category, side = entry.get("category"), entry.get("side", "both")
    if category not in CATEGORIES:
        raise HivedlabError(f"{where}: category must be one of {', '.join(CATEGORIES)}")
    if side not in SIDES:
        raise HivedlabError(f"{where}: side must be one of {', '.join(SIDES)}")
    fields = entry.get("fields")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        raise HivedlabError(f"{where}: `fields` must be a list of path patterns")
    summary = entry.get("summary") or {}
    try:
        drop = re.compile(str(entry["drop"])) if "drop" in entry else None
        rewrite = tuple((re.compile(str(pair[0])), str(pair[1])) for pair in entry.get("rewrite") or ())
    except (re.error, IndexError, TypeError) as exc:
        raise HivedlabError(f"{where}: a bad pattern: {exc}") from exc
    when = entry.get("when") or {}
    if not isinstance(when, dict) or any(str(k).partition(".")[0] not in SCOPES or not str(k).partition(".")[2]
                                         for k in when):
        raise HivedlabError(f"{where}: `when` must map attempt.<fact> or job.<fact> to a value or `same`")
    compare = str(entry.get("compare") or "")
    if compare not in COMPARES:
        raise HivedlabError(f"{where}: compare must be one of {', '.join(COMPARES)}")
    if drop is None and not rewrite and not compare:
        raise HivedlabError(f"{where}: an entry needs drop, rewrite or compare")
    return KnownDifference(
        id=_text(entry, "id", where), category=str(category), fields=tuple(fields),
        summary_en=_text(summary, "en", f"{where}: summary"), summary_zh=_text(summary, "zh", f"{where}: summary"),
        course=_text(entry, "course", where), kubernetes_1_20=str(entry.get("kubernetes_1_20") or "").strip(),
        side=str(side), drop=drop, rewrite=rewrite, compare=compare,
        experiments=tuple(str(e) for e in entry.get("experiments") or ()),
        when=tuple((str(k), v) for k, v in when.items()))


def load_known(path: Path = KNOWN_FILE) -> tuple[KnownDifference, ...]:
    """The documented differences, in the file's order; a one-line error for a malformed file."""
    data = read_yaml(path)
    entries = data.get("differences") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise HivedlabError(f"{path.name}: expected a mapping with a `differences` list")
    known = tuple(_entry(entry, f"{path.name}: entry {index + 1}") for index, entry in enumerate(entries))
    ids = [k.id for k in known]
    if len(set(ids)) != len(ids):
        raise HivedlabError(f"{path.name}: an id is used twice")
    return known


TABLE_HEAD = ("| id | kind | what differs | course (1.14/1.15) and simulator | rehearsal's Kubernetes 1.20 |\n"
              "| --- | --- | --- | --- | --- |")


def known_table(known: tuple[KnownDifference, ...] | None = None) -> str:
    """docs/simulator-vs-rehearsal.md's table of the documented differences, a row per entry in the file's order."""
    rows = [TABLE_HEAD]
    for entry in load_known() if known is None else known:
        cells = (f"`{entry.id}`", entry.category, entry.summary_en, entry.course,
                 entry.kubernetes_1_20 or "(not a 1.20 difference)")
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
