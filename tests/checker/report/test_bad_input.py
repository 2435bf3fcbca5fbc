"""Bad or missing input: the report still renders, says what is missing, and escapes what it prints."""

from __future__ import annotations

import json
from pathlib import Path

import markdown
import pytest
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.checker.report.build import render_html, render_markdown
from hivedlab.checker.report.inputs import load_run

ENV = {
    "Alice": {"member": "Alice", "hostname": "alice-box", "ip": "10.0.1.1", "os": "Ubuntu 18.04.6 LTS", "vcpus": 8,
              "gpus": {"model": "NVIDIA GeForce GTX 1080 Ti", "count": 1}, "driver_version": "470.82.01",
              "cuda_version": "11.4", "docker_version": "20.10.12", "docker_default_runtime": "nvidia",
              "openpai_version": None, "checks": []},
    "Carol": {"member": "Carol", "hostname": "hostname-carol", "ip": "10.0.1.3", "os": "Ubuntu 18.04.6 LTS",
              "vcpus": 4, "gpus": {"model": "Tesla T4", "count": 1}, "driver_version": None, "cuda_version": None,
              "docker_version": "19.03.15", "docker_default_runtime": "runc", "checks": []},
}


def render(run: Path, lang: str = "zh") -> str:
    return render_markdown(load_run(run), lang, run, {}, None)


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def as_real_cluster(run: Path, **extra: object) -> None:
    data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    data.update(cluster="pai", **extra)
    write_json(run / "run.json", data)


def test_real_cluster_table_from_env_records_and_cluster_info(run_dir):
    as_real_cluster(run_dir, openpai_version="v1.2.0")  # as the real backend records GET /api/v2/info
    for name, record in ENV.items():
        write_json(run_dir / "env" / f"{name}.json", record)
    md = render(run_dir)
    assert "| 硬件环境 | CPU（vCPU数目） | 8 | 缺少环境记录 | 4 | 缺少环境记录 |" in md
    assert "| | GPU(型号，数目) | NVIDIA GeForce GTX 1080 Ti, 1 |".replace("| |", "|  |") in md
    assert "| 软件环境 | OS版本 | Ubuntu 18.04.6 LTS |" in md
    assert "| CUDA版本 | 11.4 (driver 470.82.01) | 缺少环境记录 | 缺失 |" in md
    assert "| OpenPAI版本 | v1.2.0 | v1.2.0 | v1.2.0 | v1.2.0 |" in md
    assert "缺少 Bob 的环境记录（env/Bob.json）" in md and "缺少 Dan 的环境记录" in md
    assert "模拟集群" not in md.split("### 实验结果")[0].split("### 实验环境")[1]
    assert "本报告的证据来自真实集群（OpenPAI v1.2.0）" in md


def test_missing_env_records_on_a_real_cluster_are_named(run_dir):
    as_real_cluster(run_dir)
    md = render(run_dir, "en")
    for name in ("Alice", "Bob", "Carol", "Dan"):
        assert f"No environment record for {name} in the run directory (env/{name}.json)" in md
    assert "| OpenPAI version | missing | missing | missing | missing |" in md


def test_a_member_without_a_hostname_is_reported(run_dir):
    inventory = yaml.safe_load((run_dir / "inventory.yaml").read_text(encoding="utf-8"))
    del inventory["members"][1]["hostname"]
    (run_dir / "inventory.yaml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    md = render(run_dir)
    assert "Bob 没有主机名" in md
    assert "| HostName | hostname-alice（组员清单） | 模拟集群，无此记录 |" in md


def test_names_markdown_or_html_would_interpret_are_escaped(run_dir):
    inventory = yaml.safe_load((run_dir / "inventory.yaml").read_text(encoding="utf-8"))
    inventory["members"][0]["name"] = "<script>alert(1)</script>"
    inventory["members"][1]["name"] = "Bob|Evil"
    inventory["members"][2]["name"] = "*Carol*"
    inventory["members"][3]["hostname"] = "dan_[x](http://e)"
    (run_dir / "inventory.yaml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    write_json(run_dir / "env" / "weird.json", {"member": "Eve & <b>", "os": "a|b", "vcpus": "`1`"})
    md = render(run_dir)
    assert "<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "Bob\\|Evil" in md and "\\*Carol\\*" in md and "dan\\_\\[x\\](http://e)" in md
    html = markdown.markdown(md, extensions=["tables"])
    assert "<script>" not in html and "<b>" not in html
    assert "<th>Bob|Evil</th>" in html and "<th>*Carol*</th>" in html and "<th>Eve &amp; &lt;b&gt;</th>" in html
    header = next(line for line in html.splitlines() if line == "<th>Users</th>")
    assert header  # one table, and every row has as many cells as the header:
    table = html.split("<table>")[1].split("</table>")[0]
    rows = table.split("<tr>")[1:]
    assert {row.count("<th>") + row.count("<td>") for row in rows} == {2 + 5}


def test_an_inconclusive_experiment_says_why(run_dir):
    path = run_dir / "experiments" / "gang" / "verdicts.json"
    verdict = json.loads(path.read_text(encoding="utf-8"))
    verdict.update(verdict="inconclusive", answers=[],
                   missing=[{"zh": "没有看到 job-config-6 的 Pod", "en": "no pod of job-config-6 was seen"}])
    write_json(path, verdict)
    md = render(run_dir)
    row = next(line for line in md.splitlines() if line.startswith("| 群调度 (Gang Scheduling) |"))
    assert "**无法判断**" in row and "原因：没有看到 job-config-6 的 Pod" in row
    assert "无法判断的实验：群调度 (Gang Scheduling)（没有看到 job-config-6 的 Pod）" in md
    assert "Inconclusive experiments: Gang Scheduling (no pod of job-config-6 was seen)" in render(run_dir, "en")


def test_broken_verdicts_make_the_row_inconclusive(run_dir):
    (run_dir / "experiments" / "priority" / "verdicts.json").write_text("{not json", encoding="utf-8")
    md = render(run_dir, "en")
    row = next(line for line in md.splitlines() if line.startswith("| Priority and Preemption |"))
    assert "**inconclusive**" in row and "verdicts.json" in row


def test_missing_verdicts_are_judged_from_the_evidence_and_the_report_says_so(run_dir):
    (run_dir / "experiments" / "priority" / "verdicts.json").unlink()
    md = render(run_dir, "en")
    row = next(line for line in md.splitlines() if line.startswith("| Priority and Preemption |"))
    assert "**consistent with HiveD's behaviour**" in row
    assert "verdicts.json is missing: judged now from the evidence log" in md


def test_missing_verdicts_and_an_unusable_log_make_the_row_inconclusive(run_dir):
    folder = run_dir / "experiments" / "priority"
    (folder / "verdicts.json").unlink()
    (folder / "evidence.jsonl").write_text("not evidence\n", encoding="utf-8")
    md = render(run_dir, "en")
    row = next(line for line in md.splitlines() if line.startswith("| Priority and Preemption |"))
    assert "**inconclusive**" in row
    assert "verdicts.json is missing and the log cannot be judged" in md


def test_missing_evidence_and_job_files_still_render(run_dir):
    (run_dir / "experiments" / "vc-safety" / "evidence.jsonl").unlink()
    for path in (run_dir / "jobs" / "vc-safety").iterdir():
        path.unlink()
    md = render(run_dir, "en")
    row = next(line for line in md.splitlines() if line.startswith("| VC Safety |"))
    assert row.endswith("| (none) |")
    assert "Note: experiments/vc-safety/evidence.jsonl is missing" in md


def test_a_sixth_plan_is_a_sixth_row(run_dir):
    folder = run_dir / "experiments" / "extra-lazy"
    shutil_copy = (run_dir / "experiments" / "gang")
    folder.mkdir()
    (folder / "evidence.jsonl").write_bytes((shutil_copy / "evidence.jsonl").read_bytes())
    write_json(folder / "verdicts.json", {"experiment": "extra-lazy", "verdict": "consistent", "missing": [],
                                          "answers": [{"question": "q", "answer": {"zh": "额外的回答", "en": "extra"},
                                                       "verdict": "consistent", "evidence": [1]}]})
    md = render(run_dir)
    start = md.index("| 实验名称 |")
    rows = [line for line in md[start:].splitlines()[2:8] if line.startswith("|")]
    assert len(rows) == 6 and rows[5].startswith("| extra-lazy |") and "额外的回答" in rows[5]


def test_no_inventory_and_no_env_says_the_table_cannot_be_filled(run_dir):
    (run_dir / "inventory.yaml").unlink()
    md = render(run_dir, "en")
    assert "Neither a group inventory (inventory.yaml) nor environment records" in md
    assert "Note: inventory.yaml is missing" in md


def test_a_broken_env_record_is_listed_and_skipped(run_dir):
    as_real_cluster(run_dir)
    (run_dir / "env").mkdir()
    (run_dir / "env" / "Bob.json").write_text("[1, 2", encoding="utf-8")
    md = render(run_dir, "en")
    assert "Note: Bob.json: line 1: not valid JSON (" in md


def test_unknown_cluster_is_said_so(run_dir):
    (run_dir / "run.json").unlink()
    md = render(run_dir, "en")
    assert "sim" in md  # the evidence's own source still tells: all five logs are from the simulator
    assert "Note: the evidence in this report comes from hivedlab's built-in simulated cluster" in md
    assert "Note: run.json is missing" in md


def test_not_a_run_directory_is_a_one_line_error(tmp_path):
    with pytest.raises(HivedlabError, match="not a run directory"):
        load_run(tmp_path)
    with pytest.raises(HivedlabError, match="no such folder"):
        load_run(tmp_path / "nope")


def test_html_of_escaped_report_keeps_text(run_dir):
    inventory = yaml.safe_load((run_dir / "inventory.yaml").read_text(encoding="utf-8"))
    inventory["members"][0]["name"] = "<img src=x onerror=alert(1)>"
    (run_dir / "inventory.yaml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    html = render_html(render(run_dir), "zh", run_dir, "t")
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_an_experiment_whose_run_did_not_finish_says_so(run_dir):
    data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    data["outcomes"]["gang"] = {"status": "interrupted", "reason": "Ctrl-C"}
    write_json(run_dir / "run.json", data)
    assert "Note: the run of gang did not finish: interrupted (Ctrl-C)" in render(run_dir, "en")


def test_a_hostname_that_differs_from_the_inventory_is_pointed_out(run_dir):
    as_real_cluster(run_dir)
    write_json(run_dir / "env" / "Alice.json", ENV["Alice"])
    md = render(run_dir, "en")
    assert "Alice's hostname is hostname-alice in the group inventory but alice-box in the environment record" in md


def test_an_unusable_inventory_is_a_note_not_a_crash(run_dir):
    (run_dir / "inventory.yaml").write_text("members: [\n", encoding="utf-8")
    md = render(run_dir, "en")
    assert "Note: inventory.yaml: not valid YAML" in md


@pytest.mark.parametrize(
    ("content", "note"),
    [(b"", "evidence.jsonl: the log holds no records"), (b"\xff\xfe not json\n", "evidence.jsonl: line 1")],
)
def test_an_empty_or_garbled_log_is_a_note(run_dir, content, note):
    (run_dir / "experiments" / "gang" / "evidence.jsonl").write_bytes(content)
    md = render(run_dir, "en")
    assert f"Note: gang/{note}" in md
    assert "| Gang Scheduling |" in md
