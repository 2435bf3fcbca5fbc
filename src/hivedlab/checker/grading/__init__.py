"""TA grading from evidence: read submissions safely, verify and re-judge the evidence, score with a rubric.

Public API (the `grade` command uses exactly this):
    load_rubric(path=None) -> Rubric
    lab_spec_from_plans(plans, read_protocol) -> LabSpec
    grade_batch(submissions, out, rubric, lab, judge, jobs=1, max_bytes=None) -> BatchResult
    grade_one(name, root, rubric, lab, judge, max_bytes=None) -> GroupGrade
    feedback_md / results_json / grades_csv / grades_md (hivedlab.checker.grading.outputs)
"""

from hivedlab.checker.grading.batch import BatchResult, grade_batch, grade_one
from hivedlab.checker.grading.labspec import LabSpec, lab_spec_from_plans
from hivedlab.checker.grading.rubric import Rubric, load_rubric
from hivedlab.checker.grading.scoring import GroupGrade

__all__ = ["BatchResult", "GroupGrade", "LabSpec", "Rubric", "grade_batch", "grade_one", "lab_spec_from_plans",
           "load_rubric"]
