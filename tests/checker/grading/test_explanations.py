"""The groups' own explanations: shown to the TA beside the machine's observations, empty ones flagged, copies
between groups found, and weighted when the rubric says so."""

from __future__ import annotations

import json
from pathlib import Path

from hivedlab.checker.grading.batch import grade_batch
from hivedlab.checker.grading.copies import similar
from hivedlab.checker.grading.explanations import explanations_of
from hivedlab.checker.grading.rubric import load_rubric, rubric_from_mapping
from tests.support.grade_builders import LAB, fake_judge, make_run_dir, report_md

OURS = ("The prod job has a higher priority than the test job, so HiveD preempts the test job's cells in vc1 "
        "instead of making the prod job wait; the test job is retried and waits for the cells to be free again.")
NEARLY_OURS = OURS.replace("HiveD preempts", "HiveD  preempts").replace(";", ",").upper()
THEIRS = "优先级高的 prod 任务可以抢占同一 VC 中 test 任务占用的 cell，所以它不用等待；被抢占的任务重新排队。"


def _group(subs: Path, name: str, seed: int, explanation: str | None) -> None:
    root = make_run_dir(subs / name)
    run = json.loads((root / "run.json").read_text())
    (root / "run.json").write_text(json.dumps({**run, "seed": seed}))  # not the same simulator inputs
    text = explanation if explanation is not None else "（在此填写。）"
    (root / "report.md").write_text(report_md(explanations={"priority": text}))


def test_a_placeholder_is_no_explanation_and_the_machine_observation_comes_from_the_verdict():
    verdict = {"answers": [{"answer": {"zh": "很长的回答", "en": "a long answer"},
                            "summary": {"zh": "没有等待。", "en": "It did not wait."}}]}
    written, empty = explanations_of(report_md(explanations={"priority": f"**{OURS}**", "gang": "(Write here.)"}),
                                     {"priority": verdict}, ("priority", "gang"))
    assert written.text == OURS and written.observed.en == "It did not wait." and written.observed.zh == "没有等待。"
    assert empty.empty and empty.observed.en == "(no evidence to re-judge)"


def test_near_identical_explanations_are_copies_and_different_ones_are_not():
    assert similar(OURS, NEARLY_OURS)
    assert not similar(OURS, THEIRS)
    assert not similar("同上。", "同上。")  # too short to call a copy


def test_grades_md_shows_explanations_beside_the_evidence_flags_empty_ones_and_copies(tmp_path):
    subs = tmp_path / "subs"
    _group(subs, "g1", 2, OURS)
    _group(subs, "g2", 3, NEARLY_OURS)
    _group(subs, "g3", 4, THEIRS)
    _group(subs, "g4", 5, None)
    result = grade_batch(subs, tmp_path / "out", load_rubric(), LAB, fake_judge)
    by_name = {g.name: g for g in result.grades}
    copied = {name: [f for f in g.findings if f.code == "copied-explanation"] for name, g in by_name.items()}
    assert [f.experiment for f in copied["g1"]] == ["priority"] and "g2" in copied["g1"][0].en
    assert "g1" in copied["g2"][0].en and not copied["g3"] and not copied["g4"]
    sheet = (tmp_path / "out" / "grades.md").read_text(encoding="utf-8")
    section = sheet.split("## Explanations / 小组的解释", 1)[1]
    assert "### g4 — **empty / 未填写: priority**" in section and "### g3\n" in section
    g3 = section.split("### g3", 1)[1].split("###", 1)[0]
    # observed beside the group's words
    assert "| priority | 抢占。都结束。<br>preempted. both ended. |" in g3 and THEIRS[:20] in g3
    feedback = (tmp_path / "out" / "groups" / "g1" / "feedback.md").read_text(encoding="utf-8")
    assert "g2" not in feedback  # students never see another group's name


def test_the_rubric_can_weight_explanations(tmp_path):
    rubric = rubric_from_mapping({"version": 1, "explanation_min_chars": 60, "items": [
        {"id": "priority.explanation", "check": "explanation", "experiment": "priority", "points": 4}]})
    subs = tmp_path / "subs"
    _group(subs, "full", 2, OURS)
    _group(subs, "short", 3, "HiveD preempted the test job.")
    _group(subs, "none", 4, None)
    grades = {g.name: g for g in grade_batch(subs, tmp_path / "out", rubric, LAB, fake_judge).grades}
    assert {name: g.items[0].points for name, g in grades.items()} == {"full": 4, "short": 2, "none": 0}
    assert grades["short"].items[0].en == "explanation too short (25 of 60 characters)"


def test_the_groups_words_keep_their_hyphens_and_a_verdict_without_summaries_shows_first_statements():
    verdict = {"answers": [{"answer": {"zh": "任务一起等待：alice 的 a 从 08:00:03 起等待。",
                                       "en": "The tasks waited together: alice's a waited from 08:00:03."}}]}
    [item] = explanations_of(report_md(explanations={"gang": "- job-config-6's two tasks form one *affinity group*"}),
                             {"gang": verdict}, ("gang",))
    assert item.text == "job-config-6's two tasks form one affinity group"
    assert (item.observed.zh, item.observed.en) == ("任务一起等待。", "The tasks waited together.")


def test_a_course_of_explanations_finds_the_same_pairs_as_comparing_every_pair() -> None:
    """Only lengths that could reach the threshold are compared; the pairs found are those of every pair compared."""
    import random

    from hivedlab.basics.text import Text
    from hivedlab.checker.grading.copies import flag_similar_explanations
    from hivedlab.checker.grading.explanations import Explanation
    from hivedlab.checker.grading.scoring import GroupGrade

    rng = random.Random(39)
    words = "the job waits for two gpus while hived keeps the cell for the higher priority one".split()
    base = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 30))) for _ in range(12)]
    grades = []
    for index in range(120):
        text = base[index % 12] + (" and more" * rng.randint(0, 3) if index % 5 else "")
        explanations = (Explanation("gang", text, Text("", "")), Explanation("priority", base[(index * 7) % 12],
                                                                           Text("", "")))
        grades.append(GroupGrade(f"g{index:03d}", (), (), (), 100, 0, (), explanations=explanations))
    flagged = {(g.name, f.en) for g in flag_similar_explanations(grades) for f in g.findings}
    expected = set()
    for index, first in enumerate(grades):
        for second in grades[index + 1:]:
            for mine, theirs in zip(first.explanations, second.explanations, strict=True):
                if similar(mine.text, theirs.text):
                    expected.add((first.name, f"explanation of {mine.experiment} nearly the same as group "
                                              f"{second.name}'s"))
                    expected.add((second.name, f"explanation of {mine.experiment} nearly the same as group "
                                               f"{first.name}'s"))
    assert flagged == expected and len(expected) > 100
