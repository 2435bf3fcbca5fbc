"""Benchmark: grade a course of 1,000 groups whose logs differ (target: under 10 s wall and 500 MB on 2 cores).

Makes a class of distinct simulated submissions (tests/support/grade_class.py): group i runs the whole lab with its
own inventory (group name, members, users, hostnames, GPUs) and seed, and writes its report (charts stubbed: the
grader never reads them). Only what `hivedlab grade` reads is kept in each group folder (run.json, inventory.yaml,
env/, hived/, jobs/, each experiment's evidence.jsonl and verdicts.json, report.md, claims.json). Making the class
takes minutes: --class-dir keeps it for the next run. Then, in fresh processes, it times `grade_batch` on the class
(all checks, re-judging, copies, the four outputs; no result is cached across groups: every log differs), and with
--baseline REF the same folders with that commit's grader, from a temporary `git worktree`, in the same run.

Beside it, the floor: in the same pool of workers, only what any grader must do with the logs in Python (read each
line, its SHA-256, its JSON decoded and kept until the log is done), printed beside the target's CPU budget per group
(on 2 cores, 10 s for 1,000 groups leaves 20 ms of CPU a group for everything).

It checks what it graded: every group, grades.csv, grades.md and two outputs per group, no group flagged as a copy,
and with --baseline the same total for every group as the baseline's. The copy check (--copies, default 100): that
many honest groups of the class plus a copy of one of them made each way a course would try (renamed group, members
and users, job tag, shifted times, new uids, re-sealed chain, all at once), graded together: every copy is in one
cluster with its original, and no other honest group is flagged.

The machine may be shared: the wall time then depends on the other work, the CPU time (this process and its
workers) much less; both are printed, with the load average. --quick: 6 groups and 6 honest groups for the copy
check, for CI; no target applies.

    .venv/bin/python benchmarks/bench_grade.py [--groups 1000] [--jobs 2] [--class-dir DIR] [--baseline REF]
                                               [--copies 100] [--quick]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

QUICK_GROUPS = 6
TARGET_GROUPS = 1000
TARGET_S = 10.0  # for TARGET_GROUPS
TARGET_MB = 500
READ = ("run.json", "inventory.yaml", "report.md", "claims.json", "env", "hived", "jobs")  # what `grade` reads
SEED_BASE = 1000  # group i's seed: SEED_BASE + 7 * i (distinct seeds, distinct inventories)

# Run in a fresh process with PYTHONPATH set to the grader's tree (this one or the baseline's worktree): grades the
# folder and prints what it measured as one JSON line.
MEASURE = """
import json, resource, sys, time
from pathlib import Path
from hivedlab.checker.grading.batch import grade_batch
from hivedlab.checker.grading.labspec import shipped_lab
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.judging.judge import judge_evidence
from hivedlab.plans.loader import ruleset_for
subs, out, jobs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
rubric, lab = load_rubric(), shipped_lab()
for experiment in lab.experiments:
    ruleset_for(experiment.id)
started, cpu0 = time.perf_counter(), cpu()
result = grade_batch(subs, out, rubric, lab, judge_evidence, jobs=jobs)
wall, used = time.perf_counter() - started, cpu() - cpu0
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": used, "rss_mb": own.ru_maxrss / 1024, "child_rss_mb": kids.ru_maxrss / 1024,
                  "totals": {g.name: g.total() for g in result.grades}, "written": len(result.written),
                  "written_ok": all(p.is_file() for p in result.written), "needs_look": len(result.needs_look),
                  "copies": {g.name: [f.en for f in g.findings if f.code == "copied-evidence"]
                             for g in result.grades}}))
"""

# The least any grader of these logs does in Python, in the same pool of forked workers: read each group's logs, and
# for each line its SHA-256 and its JSON decoded, the log's records kept until the log is done (as `read_evidence`
# keeps them). No check, no re-judging, no output: what is left of the target after this is what all of those get.
FLOOR = """
import hashlib, json, multiprocessing, resource, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import orjson
def read(folder):
    lines = 0
    for log in sorted(Path(folder).glob("experiments/*/evidence.jsonl")):
        kept = []
        for line in log.read_bytes().splitlines():
            hashlib.sha256(line).hexdigest()
            kept.append(orjson.loads(line))
        lines += len(kept)
    return lines
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
folders, jobs = sorted(str(p) for p in Path(sys.argv[1]).iterdir()), int(sys.argv[2])
started, cpu0 = time.perf_counter(), cpu()
with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
    lines = sum(pool.map(read, folders, chunksize=max(1, len(folders) // (jobs * 8))))
print(json.dumps({"wall": time.perf_counter() - started, "cpu": cpu() - cpu0, "lines": lines}))
"""


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_grade.py: {what}")


def _make_group(task: tuple[int, str]) -> str:
    """Group `index`'s run directory (lab + report, charts stubbed), only what the grader reads kept."""
    import hivedlab.checker.report.charts as charts
    import hivedlab.checker.report.charts_paint as charts_paint
    from tests.support.grade_class import honest_run
    from tests.support.quick_charts import tiny_chart

    charts.draw = tiny_chart  # the grader never reads a chart
    charts_paint.draw = tiny_chart
    index, target = task
    with tempfile.TemporaryDirectory(prefix="bench-grade-run-") as tmp:
        run = honest_run(Path(tmp) / "run", index, SEED_BASE + 7 * index, report=True)
        keep(run, Path(target))
    return target


def keep(run: Path, target: Path) -> None:
    """Copy only what `hivedlab grade` reads from a run directory."""
    target.mkdir(parents=True)
    for name in READ:
        source = run / name
        if source.is_dir():
            shutil.copytree(source, target / name)
        elif source.is_file():
            shutil.copy2(source, target / name)
    for log in sorted((run / "experiments").rglob("evidence.jsonl")):
        for name in ("evidence.jsonl", "verdicts.json"):
            if (log.parent / name).is_file():
                rel = (log.parent / name).relative_to(run)
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(log.parent / name, target / rel)


def make_class(folder: Path, groups: int, jobs: int) -> list[Path]:
    """The class's group folders, made in `folder` (those already there are kept: --class-dir)."""
    wanted = [(index, str(folder / f"group-{index:04d}")) for index in range(groups)]
    missing = [task for task in wanted if not (Path(task[1]) / "claims.json").is_file()]
    for _, path in missing:
        shutil.rmtree(path, ignore_errors=True)
    if missing:
        print(f"making {len(missing)} group run(s) in {folder} (minutes; --class-dir keeps them)", flush=True)
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for done, _ in enumerate(pool.imap_unordered(_make_group, missing, chunksize=4), 1):
                if done % 100 == 0:
                    print(f"  {done} / {len(missing)}", flush=True)
    return [Path(path) for _, path in wanted]


def link_class(folders: list[Path], subs: Path) -> None:
    """The submissions folder: a copy of each group folder (the class stays as it was made)."""
    subs.mkdir(parents=True)
    for folder in folders:
        shutil.copytree(folder, subs / folder.name)


@dataclass(frozen=True)
class Figures:
    """What one grading process measured (MEASURE's JSON line)."""

    wall: float
    cpu: float
    rss_mb: float
    child_rss_mb: float
    totals: dict[str, float]
    written: int
    written_ok: bool
    needs_look: int
    copies: dict[str, list[str]]

    def line(self, name: str) -> str:
        groups = max(1, len(self.totals))
        return (f"{name}: {self.wall:.2f} s wall ({1000 * self.wall / groups:.1f} ms per group), CPU {self.cpu:.2f} s "
                f"({1000 * self.cpu / groups:.1f} ms per group, this process and its workers); peak memory "
                f"{self.rss_mb:.0f} MB (parent) + {self.child_rss_mb:.0f} MB (largest worker)")


def measure(tree: Path, subs: Path, out: Path, jobs: int) -> Figures:
    inherited = os.environ.get("PYTHONPATH")  # after the grader's own tree: where this environment has packages
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "src")] + ([inherited] if inherited else []))}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(subs), str(out), str(jobs)], capture_output=True,
                          text=True, env=env, cwd=str(tree), check=False)
    expect(done.returncode == 0, f"grading with {tree} failed: {done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return Figures(**data)


def floor(subs: Path, jobs: int, groups: int, graded: Figures) -> None:
    """Print FLOOR's figures beside this grader's and the target's: how much of the target reading alone takes."""
    done = subprocess.run([sys.executable, "-c", FLOOR, str(subs), str(jobs)], capture_output=True, text=True,
                          check=False)
    expect(done.returncode == 0, f"the floor measurement failed: {done.stderr[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    expect(data["lines"] > 0, "the floor measurement read no evidence line")
    budget = 1000 * TARGET_S * jobs / TARGET_GROUPS
    print(f"floor (read, hash and decode every log, nothing else; {data['lines']} lines): {data['wall']:.2f} s wall, "
          f"CPU {data['cpu']:.2f} s ({1000 * data['cpu'] / groups:.1f} ms per group, "
          f"{100 * data['cpu'] / graded.cpu:.0f} % of this grader's); the target's CPU budget on {jobs} cores is "
          f"{budget:.0f} ms per group for everything ({TARGET_GROUPS} groups in {TARGET_S:g} s)")


def baseline_tree(ref: str, folder: Path) -> Path:
    tree = folder / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref], check=True)
    return tree


def copy_check(folders: list[Path], work: Path, honest: int) -> None:
    """`honest` groups of the class and a copy of one of them made each way: copies found, honest ones not."""
    from hivedlab.checker.grading.batch import grade_batch
    from hivedlab.checker.grading.copies import copy_clusters
    from hivedlab.checker.grading.labspec import shipped_lab
    from hivedlab.checker.grading.rubric import load_rubric
    from hivedlab.checker.judging.judge import judge_evidence
    from tests.support.grade_class import COPY_INDEX, WAYS, disguise

    subs = work / "copies"
    link_class(folders[:honest], subs)
    originals: dict[str, str] = {}
    for number, way in enumerate(WAYS):
        source = folders[number % honest]
        target = subs / f"copy-{way}"
        shutil.copytree(source, target)
        disguise(target, COPY_INDEX + number, way)
        originals[target.name] = source.name
    result = grade_batch(subs, work / "copies-out", load_rubric(), shipped_lab(), judge_evidence, jobs=2)
    clusters = {group: set(c.groups) for c in copy_clusters(result.grades) for group in c.groups}
    for copy, original in originals.items():
        expected = {original} | {c for c, o in originals.items() if o == original}
        expect(clusters.get(copy) == expected, f"{copy} (of {original}) in cluster {clusters.get(copy)}")
    flagged = sorted(g for g in clusters if g not in originals and g not in originals.values())
    expect(not flagged, f"honest groups flagged as copies: {flagged}")
    print(f"copies: {len(WAYS)} copies made each way ({', '.join(WAYS)}) of {len(set(originals.values()))} of "
          f"{honest} honest groups: every copy in one cluster with its original; 0 of {honest} honest groups "
          f"flagged otherwise")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, help=f"groups to grade (default 1000; --quick: {QUICK_GROUPS})")
    parser.add_argument("--jobs", type=int, default=2, help="grading workers (default 2)")
    parser.add_argument("--class-dir", type=Path, help="keep the generated class here and reuse it next time")
    parser.add_argument("--baseline", metavar="REF", help="grade the same folders with this commit's grader too")
    parser.add_argument("--copies", type=int, help="honest groups in the copy check (default 100; 0: skip)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI: checks what it ran, no target")
    args = parser.parse_args()
    groups = args.groups or (QUICK_GROUPS if args.quick else TARGET_GROUPS)
    honest = min(groups, args.copies if args.copies is not None else (QUICK_GROUPS if args.quick else 100))
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        work = Path(tmp)
        class_dir = args.class_dir or work / "class"
        class_dir.mkdir(parents=True, exist_ok=True)
        folders = make_class(class_dir, groups, args.jobs)
        subs = work / "subs"
        link_class(folders, subs)
        size = sum(p.stat().st_size for p in folders[0].rglob("*") if p.is_file())
        print(f"groups: {groups} with distinct seeds and inventories ({size / 1024:.0f} KB each as read); "
              f"jobs: {args.jobs}")
        figures = measure(ROOT, subs, work / "grades", args.jobs)
        expect(len(figures.totals) == groups, f"{len(figures.totals)} of {groups} groups graded")
        expect(figures.written == 2 + 2 * groups and figures.written_ok,
               f"{figures.written} outputs written, not grades.csv, grades.md and two per group")
        flagged = [group for group, found in figures.copies.items() if found]
        expect(not flagged, f"honest groups flagged as copies: {flagged}")
        print(figures.line("this grader"))
        floor(subs, args.jobs, groups, figures)
        totals = figures.totals
        print(f"totals: {len(set(totals.values()))} distinct, from {min(totals.values()):g} to "
              f"{max(totals.values()):g}; needs a look: {figures.needs_look}")
        if args.baseline:
            tree = baseline_tree(args.baseline, work)
            try:
                before = measure(tree, subs, work / "grades-baseline", args.jobs)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
            print(before.line(f"baseline {args.baseline}"))
            differ = sorted(group for group, total in totals.items() if before.totals.get(group) != total)
            expect(not differ, f"totals differ from the baseline's for {len(differ)} group(s), e.g. {differ[:5]}")
            print(f"the same total for every group as the baseline; the baseline took "
                  f"{before.wall / figures.wall:.2f}x this grader's wall time and {before.cpu / figures.cpu:.2f}x its "
                  "CPU time")
        if honest:
            copy_check(folders, work, honest)
        print(f"load average now: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (other work on the machine "
              "slows the wall time)")
        if not args.quick:
            peak = figures.rss_mb + figures.child_rss_mb
            print(f"target: {groups} groups in under {TARGET_S:g} s and {TARGET_MB} MB on 2 cores -> "
                  + ("OK" if figures.wall < TARGET_S and peak < TARGET_MB else "NOT MET"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
