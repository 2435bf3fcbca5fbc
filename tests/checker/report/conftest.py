"""The report of the session's simulated run (`sim_lab`), in both languages, for the tests that read it as a student."""

from __future__ import annotations

import pytest

from hivedlab.cli.main import main
from tests.support.quick_charts import stub_charts
from tests.support.sim_lab import SimLab


@pytest.fixture(scope="module")
def sim_reports(sim_lab: SimLab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """report.md of that run in zh, and in en re-rendered over the Chinese one (as a student switching language)."""
    assert sim_lab.code == 0, sim_lab.stderr
    english = sim_lab.copy_to(tmp_path_factory.mktemp("sim-en"))
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)  # these tests read the text; the session run's charts are real
        assert main(["report", str(english), "--lang", "en"]) == 0
    return {"zh": (sim_lab.out / "report.md").read_text(encoding="utf-8"),
            "en": (english / "report.md").read_text(encoding="utf-8")}
