"""Each rule kind's parameters, typed: what a plan's `rules:` entry may hold, parsed once when the plan is loaded.

A rule is its common fields (`Rule`: id, kind, question, expected, scheduler) and its kind's parameters (one frozen
dataclass per shape, `PARAMS` says which kind has which). A YAML key that is a Python keyword (`while`) is the field
with a trailing underscore. `parse_rule` refuses an unknown key (with a "did you mean"), a missing required key and a
value of the wrong type in one line; the judge's rules (`checker/judging/rules/`) receive the typed parameters.
This module sits below the judge and the validator: it imports only the basics.
"""

from __future__ import annotations

import difflib
import keyword
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from typing import Any, Literal, get_args, get_origin, get_type_hints

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.text import Text


@dataclass(frozen=True)
class Tolerance:
    """gang-together: how far apart the containers may start, per evidence source (seconds)."""

    sim: float = 0.0
    k8s: float = 30.0

    def of(self, source: str) -> float:
        """The tolerance for a log of `source` (30 s for a source with none of its own)."""
        return {"sim": self.sim, "k8s": self.k8s}.get(source, 30.0)


@dataclass(frozen=True)
class JobsInVc:
    """placement: every bound task attempt of `jobs` is in `vc`'s cells."""

    jobs: tuple[str, ...]
    vc: str


@dataclass(frozen=True)
class WaitsWhileIdle:
    """waits-while-idle: jobs that waited did so for `reason` while `idle_vc`'s cells sat idle."""

    jobs: tuple[str, ...]
    idle_vc: str
    reason: str = ""


@dataclass(frozen=True)
class Jobs:
    """sequential: the jobs ran one after another."""

    jobs: tuple[str, ...]


@dataclass(frozen=True)
class Preempts:
    """preempts: `preemptor` did not wait for `victim`."""

    preemptor: str
    victim: str


@dataclass(frozen=True)
class RetriedAfter:
    """retried-after: `victim` was re-created and ran again after `after` (a victim `preemptor` spared ran on)."""

    victim: str
    after: str
    reason: str = ""
    preemptor: str = ""


@dataclass(frozen=True)
class JobWhile:
    """gang-waits, incremental: what `job` did while `while` ran (its waits for `reason`)."""

    job: str
    while_: str
    reason: str = ""


@dataclass(frozen=True)
class StartsWhileRunning:
    """starts-while-running: `job` started while `while` ran (off the cells `outside_vc` owns outright)."""

    job: str
    while_: str
    outside_vc: str = ""


@dataclass(frozen=True)
class GangTogether:
    """gang-together: every task of `job` bound in one round, started within the tolerance."""

    job: str
    tolerance_s: Tolerance = Tolerance()


@dataclass(frozen=True)
class PartialRun:
    """partial-run: `job` ran partially, never more than `max_parallel` tasks at once."""

    job: str
    max_parallel: int = 2


@dataclass(frozen=True)
class Rejected:
    """rejected: the submission of `job` got HTTP `status` with `message`."""

    job: str
    status: int = 400
    message: str = ""


@dataclass(frozen=True)
class JobsAtSwitch:
    """survives-switch: the tasks of `jobs` running at the switch to `config` went on running."""

    jobs: tuple[str, ...]
    config: str


@dataclass(frozen=True)
class PreemptsOneOf:
    """preempts-one-of: `preempts` with any one of `jobs` as the victim."""

    preemptor: str
    jobs: tuple[str, ...]


@dataclass(frozen=True)
class RemovedVcJob:
    """submission-after-switch, stranded-after-switch: `job` of `vc`, which the switch to `config` removed."""

    job: str
    vc: str
    config: str


@dataclass(frozen=True)
class GangStart:
    """gang-start: `job` started partially, or all at once; given `while`, asked while that job ran (the run must
    show `job`'s pods beside the running `while` job, else it cannot tell)."""

    job: str
    expect: Literal["partial", "all-or-nothing"]
    while_: str = ""


@dataclass(frozen=True)
class Deadlock:
    """deadlock: the jobs deadlocked (`expect: true`) or all finished (`expect: false`); with `waits_whole`, each
    also waited whole and ran whole, never a partial start (a gang scheduler's "no deadlock")."""

    jobs: tuple[str, ...]
    expect: bool
    waits_whole: bool = False


@dataclass(frozen=True)
class NoParams:
    """A rule without parameters (gpu-exclusive, which every experiment gets, never written in a plan)."""


RuleParams = (JobsInVc | WaitsWhileIdle | Jobs | Preempts | RetriedAfter | JobWhile | StartsWhileRunning | GangTogether
              | PartialRun | Rejected | JobsAtSwitch | PreemptsOneOf | RemovedVcJob | GangStart | Deadlock | NoParams)

# kind -> its parameters (configs/schemas/experiment-plan.schema.json lists the same kinds)
PARAMS: dict[str, type[RuleParams]] = {
    "placement": JobsInVc,
    "waits-while-idle": WaitsWhileIdle,
    "sequential": Jobs,
    "preempts": Preempts,
    "retried-after": RetriedAfter,
    "starts-while-running": StartsWhileRunning,
    "gang-waits": JobWhile,
    "gang-together": GangTogether,
    "incremental": JobWhile,
    "partial-run": PartialRun,
    "rejected": Rejected,
    "survives-switch": JobsAtSwitch,
    "preempts-one-of": PreemptsOneOf,
    "submission-after-switch": RemovedVcJob,
    "stranded-after-switch": RemovedVcJob,
    "gang-start": GangStart,
    "deadlock": Deadlock,
}

# parameters that name a plan job key, and those that name a VC (the loader checks both against the plan)
JOB_KEYS = ("job", "jobs", "while", "preemptor", "victim", "after")
VC_KEYS = ("vc", "idle_vc", "outside_vc")


@dataclass(frozen=True)
class Rule:
    """One rule of a plan: the fields every rule has and its kind's typed parameters."""

    id: str
    kind: str
    question: int  # index into the plan's questions
    expected: Text  # what HiveD v0.3.4 does (or the contrast run's scheduler)
    params: RuleParams
    scheduler: tuple[str, ...] = ()  # judge only runs under one of these; () = every run
    question_text: Text | None = None  # the question itself, for a rule no plan holds (gpu-exclusive)

    def judges(self, scheduler: str) -> bool:
        """Whether the rule judges a run under `scheduler` (docs/other-schedulers.md)."""
        return not self.scheduler or scheduler in self.scheduler

    def without_reason(self) -> Rule:
        """The rule without its `reason` (HiveD's wait wording is no guarantee in a run without HiveD)."""
        if not isinstance(self.params, WaitsWhileIdle | RetriedAfter | JobWhile):
            return self
        return replace(self, params=replace(self.params, reason=""))


_COMMON = ("id", "kind", "question", "expected", "scheduler")


def key_of(name: str) -> str:
    """The YAML key of a parameter field (`while_` -> `while`)."""
    stripped = name.removesuffix("_")
    return stripped if keyword.iskeyword(stripped) else name


def keys_of(kind: str) -> tuple[str, ...]:
    """The parameter keys a rule of `kind` takes, in declaration order."""
    return tuple(key_of(f.name) for f in fields(PARAMS[kind]))


def job_refs(params: RuleParams) -> tuple[str, ...]:
    """The plan job keys the parameters name."""
    found: list[str] = []
    for f in fields(params):
        value = getattr(params, f.name)
        if key_of(f.name) in JOB_KEYS and value:
            found += list(value) if isinstance(value, tuple) else [value]
    return tuple(found)


def vc_refs(params: RuleParams) -> dict[str, str]:
    """The VCs the parameters name, by key."""
    return {f.name: getattr(params, f.name) for f in fields(params) if f.name in VC_KEYS and getattr(params, f.name)}


def _close(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (keys: {', '.join(known)})"


def _type_name(hint: Any) -> str:
    if get_origin(hint) is Literal:
        return " or ".join(repr(a) for a in get_args(hint))
    if get_origin(hint) is tuple:
        return "a non-empty list of names"
    if is_dataclass(hint):
        return "a mapping of " + ", ".join(f.name for f in fields(hint))
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}[hint]


def _convert(hint: Any, value: Any, path: str) -> Any:
    """`value` as the field type `hint`, or a HivedlabError naming its key (`path`, e.g. `tolerance_s/k8s`)."""
    ok: bool
    if get_origin(hint) is Literal:
        ok = value in get_args(hint)
    elif get_origin(hint) is tuple:
        ok = isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
        value = tuple(value) if ok else value
    elif is_dataclass(hint):
        ok = isinstance(value, Mapping)
        if ok:
            return _build(hint, value, path + "/")
    elif hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    if not ok:
        raise HivedlabError(f"key {path!r} must be {_type_name(hint)}, not {value!r}")
    return value


def _build(cls: Any, raw: Mapping[str, Any], prefix: str) -> Any:
    """An instance of the dataclass `cls` from the keys of `raw` (each key checked); `prefix` is the keys' path."""
    hints = get_type_hints(cls)
    known = tuple(key_of(f.name) for f in fields(cls))
    for key in raw:
        if key not in known:
            raise HivedlabError(f"unknown key {prefix + str(key)!r}{_close(str(key), known)}")
    values = {}
    for f in fields(cls):
        key = key_of(f.name)
        if key in raw:
            values[f.name] = _convert(hints[f.name], raw[key], prefix + key)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise HivedlabError(f"missing key {prefix + key!r}")
    return cls(**values)


def _scheduler(value: Any) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise HivedlabError(f"key 'scheduler' must be a scheduler's name or a list of them, not {value!r}")
    return tuple(names)


def _expected(value: Any) -> Text:
    if not (isinstance(value, Mapping) and isinstance(value.get("zh"), str) and isinstance(value.get("en"), str)):
        raise HivedlabError(f"key 'expected' must be a mapping with zh and en texts, not {value!r}")
    return Text(value["zh"], value["en"])


def parse_rule(raw: Mapping[str, Any]) -> Rule:
    """A plan's rule, typed. Raises a HivedlabError naming the key at fault (the caller adds the plan and rule)."""
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in PARAMS:
        close = difflib.get_close_matches(str(kind), list(PARAMS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (kinds: {', '.join(PARAMS)})"
        raise HivedlabError(f"key 'kind': unknown rule kind {kind!r}{hint}")
    keys = (*_COMMON, *keys_of(kind))
    for key in raw:
        if key not in keys:
            raise HivedlabError(f"unknown key {key!r} for kind {kind}{_close(str(key), keys)}")
    for key in ("id", "question", "expected"):
        if key not in raw:
            raise HivedlabError(f"missing key {key!r}")
    rule_id, question = raw["id"], raw["question"]
    if not isinstance(rule_id, str):
        raise HivedlabError(f"key 'id' must be a string, not {rule_id!r}")
    if not isinstance(question, int) or isinstance(question, bool) or question < 0:
        raise HivedlabError(f"key 'question' must be a question's index (0, 1, ...), not {question!r}")
    params = _build(PARAMS[kind], {k: v for k, v in raw.items() if k not in _COMMON}, "")
    scheduler = _scheduler(raw["scheduler"]) if "scheduler" in raw else ()
    return Rule(rule_id, kind, question, _expected(raw["expected"]), params, scheduler)


def rule_label(index: int, raw: Any) -> str:
    """How an error names a plan's rule: its index and, when it has one, its id."""
    rule_id = raw.get("id") if isinstance(raw, Mapping) else None
    return f"rules/{index} ({rule_id})" if isinstance(rule_id, str) else f"rules/{index}"

