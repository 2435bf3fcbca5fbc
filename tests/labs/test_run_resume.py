import json

from hivedlab.cli.commands.run import _previous_run_tag


def test_real_run_resumed_in_same_folder_keeps_its_run_tag(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"cluster": "pai", "run_tag": "20261126t080000"}), encoding="utf-8")
    assert _previous_run_tag(tmp_path) == "20261126t080000"


def test_simulated_or_missing_or_broken_run_json_gives_no_tag(tmp_path):
    assert _previous_run_tag(tmp_path) is None
    (tmp_path / "run.json").write_text(json.dumps({"cluster": "sim", "run_tag": "s1"}), encoding="utf-8")
    assert _previous_run_tag(tmp_path) is None
    (tmp_path / "run.json").write_text("{not json", encoding="utf-8")
    assert _previous_run_tag(tmp_path) is None
