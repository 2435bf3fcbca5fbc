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


def test_simulating_again_into_the_same_folder_needs_replace(cli, tmp_path):
    assert cli("run", "gang", "--out", str(tmp_path), "--no-report").code == 0
    log = tmp_path / "experiments" / "gang" / "evidence.jsonl"
    first = log.read_bytes()
    again = cli("run", "gang", "--out", str(tmp_path), "--no-report")
    errors = again.err_lines
    assert again.code == 2 and len(errors) == 1 and "--replace" in errors[0] and "Traceback" not in again.err
    assert log.read_bytes() == first
    assert cli("run", "gang", "--out", str(tmp_path), "--no-report", "--replace").code == 0
    [aside] = (tmp_path / "replaced").iterdir()
    assert (aside / "experiments" / "gang" / "evidence.jsonl").read_bytes() == first


def test_replace_is_refused_for_a_real_run(cli, tmp_path):
    result = cli("run", "gang", "--cluster", "pai", "--replace", "--out", str(tmp_path))
    assert result.code == 2 and "--replace is for simulated runs" in result.err
