"""A class's submissions folder -> grades, feedback, Gradescope results. One bad folder never stops the batch.

    discover -> grade each folder (in worker processes when asked) -> score -> write the four outputs
Outputs are written whole (temp file + rename) and only inside the output folder; group names are sanitised into
file names, so a folder called `../x` or `con` cannot steer a write.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hivedlab.basics.files import write_atomic
from hivedlab.checker.grading.copies import flag_copies, flag_similar_explanations
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.grader import GroupResult, grade_folder
from hivedlab.checker.grading.labspec import LabSpec
from hivedlab.checker.grading.outputs import Skipped, feedback_md, grades_csv, grades_md, results_json
from hivedlab.checker.grading.rubric import Rubric
from hivedlab.checker.grading.scoring import GroupGrade, score_group
from hivedlab.checker.grading.submission import Submission
from hivedlab.checker.grading.unpack import read_report
from hivedlab.checker.judging.judge import Judge

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class BatchResult:
    grades: tuple[GroupGrade, ...]
    skipped: tuple[Skipped, ...]
    written: tuple[Path, ...]

    @property
    def needs_look(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.grades if g.needs_look) + tuple(s.name for s in self.skipped)


def safe_name(name: str, taken: set[str]) -> str:
    """A file-system-safe, unique folder name for a group's outputs."""
    base = _SAFE.sub("_", name).strip("._") or "group"
    candidate, n = base[:80], 2
    while candidate.lower() in taken:
        candidate, n = f"{base[:76]}-{n}", n + 1
    taken.add(candidate.lower())
    return candidate


def discover(submissions: Path, out: Path | None = None) -> tuple[list[tuple[str, Path]], list[Skipped], list[str]]:
    """(group folders, entries that are not groups, group names refused as unsafe) of a submissions folder."""
    root = Path(os.path.realpath(submissions))
    out_real = Path(os.path.realpath(out)) if out else None
    groups: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    refused: list[str] = []
    for entry in sorted(os.scandir(submissions), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        real = Path(os.path.realpath(entry.path))
        if out_real is not None and real == out_real:
            continue
        if entry.is_symlink() and root not in real.parents:
            refused.append(entry.name)
        elif real.is_dir():
            groups.append((entry.name, Path(entry.path)))
        else:
            skipped.append(Skipped(entry.name, "not a folder / 不是目录"))
    return groups, skipped, refused


def _refused_result(name: str, root: Path) -> GroupResult:
    from hivedlab.checker.grading.safefs import GroupFolder

    finding = GradeFinding("problem", "unsafe-symlink-outside",
                           f"{name} is a symlink that leads outside the submissions "
                      "folder (not read)", f"{name} 是指向提交目录之外的符号链接（未读取）")
    sub = Submission(name, GroupFolder(root), "", None, None, {}, {}, (), None, None, (finding,))
    return GroupResult(sub, (), 0, 0, (finding,))


# Set in the parent before the worker pool forks; workers read them instead of pickling a judge per task.
_CONTEXT: dict[str, Any] = {}  # rubric, lab, judge, max_bytes


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Automatic cyclic garbage collection off while one group is graded: its logs' records (tens of thousands of
    dicts, no cycles) would otherwise be traversed again as they are made; refcounting frees them when the group is
    done, and collection resumes as it was (a cycle made meanwhile is collected then)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def grade_one(name: str, root: Path, rubric: Rubric, lab: LabSpec, judge: Judge | None,
              max_bytes: int | None = None) -> GroupGrade:
    """Grade one group folder; any unexpected failure becomes a finding, never an exception."""
    try:
        with _no_cycle_collection():
            result = grade_folder(root, lab, judge, rubric.experiments, name, max_bytes)
    except Exception as exc:  # the batch must survive a folder that breaks the grader
        finding = GradeFinding("problem", "grader-error",
                          f"the grader failed on this folder: {type(exc).__name__}: {exc}"[:300],
                          f"评分程序处理该目录时出错：{type(exc).__name__}")
        from hivedlab.checker.grading.safefs import GroupFolder

        sub = Submission(name, GroupFolder(root), "", None, None, {}, {}, (), None, None, (finding,))
        result = GroupResult(sub, (), 0, 0, (finding,))
    return score_group(result, rubric, lab)


def _worker(task: tuple[str, str]) -> GroupGrade:
    name, root = task
    return grade_one(name, Path(root), _CONTEXT["rubric"], _CONTEXT["lab"], _CONTEXT["judge"],
                     _CONTEXT.get("max_bytes"))


def grade_all(groups: Sequence[tuple[str, Path]], rubric: Rubric, lab: LabSpec, judge: Judge | None,
              jobs: int = 1, max_bytes: int | None = None,
              progress: Callable[[GroupGrade], None] | None = None) -> list[GroupGrade]:
    tasks = [(name, str(path)) for name, path in groups]
    grades: list[GroupGrade] = []
    if jobs > 1 and len(tasks) > 1 and "fork" in multiprocessing.get_all_start_methods():
        _CONTEXT.update(rubric=rubric, lab=lab, judge=judge, max_bytes=max_bytes)
        gc.freeze()  # what the workers inherit stays out of their collections, and its pages shared (not copied)
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
                for grade in pool.map(_worker, tasks, chunksize=max(1, len(tasks) // (jobs * 8))):
                    grades.append(grade)
                    if progress:
                        progress(grade)
        finally:
            gc.unfreeze()
            _CONTEXT.clear()
        return grades
    for name, root in tasks:
        grade = grade_one(name, Path(root), rubric, lab, judge, max_bytes)
        grades.append(grade)
        if progress:
            progress(grade)
    return grades


def _inside(real_out: Path, target: Path) -> Path:
    real = Path(os.path.realpath(target.parent)) / target.name
    if real_out != real.parent and real_out not in real.parents:
        raise OSError(f"refusing to write outside the output folder: {target}")
    return target


class _GroupOutputs:
    """Each group's feedback.md and results.json, written as soon as its grade comes in (in the parent, while the
    workers grade the rest), and again only for a grade the class-wide checks (copies) then changed. Folder names are
    given in the order of the group names, all known before grading starts."""

    def __init__(self, out: Path, rubric: Rubric, names: Sequence[str]) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.real_out, self.rubric = out, Path(os.path.realpath(out)), rubric
        taken: set[str] = set()
        self.folders = {name: out / "groups" / safe_name(name, taken) for name in sorted(names)}
        self.done: dict[str, GroupGrade] = {}  # the grade each group's files were written from

    def write(self, grade: GroupGrade) -> None:
        if self.done.get(grade.name) is grade:
            return
        folder = self.folders[grade.name]
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in (("feedback.md", feedback_md(grade, self.rubric)),
                           ("results.json", results_json(grade, self.rubric))):
            write_atomic(_inside(self.real_out, folder / name), text)
        self.done[grade.name] = grade

    def finish(self, grades: Sequence[GroupGrade], skipped: Sequence[Skipped]) -> list[Path]:
        """The class's grades.csv and grades.md, each group's files as its final grade says; every file written."""
        written = []
        for name, text in (("grades.csv", grades_csv(grades, self.rubric)),
                           ("grades.md", grades_md(grades, self.rubric, skipped))):
            write_atomic(_inside(self.real_out, self.out / name), text)
            written.append(self.out / name)
        for grade in grades:
            self.write(grade)
            written += [self.folders[grade.name] / "feedback.md", self.folders[grade.name] / "results.json"]
        return written


def _with_unpack_notes(grade: GroupGrade, notes: dict[str, tuple[str, ...]]) -> GroupGrade:
    """What unpacking refused in this group's archive, as findings (grades.md's "needs a look", feedback.md)."""
    refused = notes.get(grade.name, ())
    findings = tuple(GradeFinding("problem", "unpack-refused", f"unpacking the archive: {note}",
                                  f"解压提交的压缩包：{note}")
                     for note in refused)
    return replace(grade, findings=grade.findings + findings) if findings else grade


def grade_batch(submissions: Path, out: Path, rubric: Rubric, lab: LabSpec, judge: Judge | None, jobs: int = 1,
                max_bytes: int | None = None, progress: Callable[[GroupGrade], None] | None = None) -> BatchResult:
    groups, skipped, refused = discover(submissions, out)
    notes = read_report(submissions)
    outputs = _GroupOutputs(out, rubric, [name for name, _ in groups] + refused)

    def arrived(grade: GroupGrade) -> None:
        outputs.write(_with_unpack_notes(grade, notes))
        if progress:
            progress(grade)

    grades = grade_all(groups, rubric, lab, judge, jobs, max_bytes, arrived)
    for name in refused:
        grades.append(score_group(_refused_result(name, submissions / name), rubric, lab))
    grades = [_with_unpack_notes(grade, notes) for grade in grades] if notes else grades
    present = {name for name, _ in groups} | set(refused) | {entry.name for entry in skipped}
    skipped += [Skipped(name, "; ".join(lines)) for name, lines in sorted(notes.items()) if name not in present]
    grades = flag_copies(grades)
    grades = flag_similar_explanations(grades)
    grades.sort(key=lambda g: g.name)
    written = outputs.finish(grades, skipped)
    return BatchResult(tuple(grades), tuple(skipped), tuple(written))
