"""The state `up` and `down` leave: PostgreSQL's data folder outside the home goes with the cluster, also when `up`
fails (hivedlab.rehearsal.stack.remove_pg_folder)."""

from __future__ import annotations

from pathlib import Path

from hivedlab.rehearsal.settings import load_settings
from hivedlab.rehearsal.stack import remove_pg_folder


def test_the_pg_folder_recorded_in_run_is_removed(tmp_path: Path) -> None:
    settings = load_settings(str(tmp_path / "home"), None)
    data = tmp_path / "tmp" / "hivedlab-rehearsal-pg-x"
    (data / "postgres").mkdir(parents=True)
    settings.paths.run.mkdir(parents=True)
    (settings.paths.run / "pg-folder").write_text(str(data), encoding="utf-8")
    remove_pg_folder(settings)
    assert not data.exists() and not (settings.paths.run / "pg-folder").exists()
    remove_pg_folder(settings)  # nothing recorded: nothing to do
