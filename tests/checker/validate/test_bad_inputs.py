"""Bad input never gives a traceback: each gets a clear finding (or exit status 2), and the other files still count."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hivedlab.checker.validate import ERROR, WARNING, validate_paths
from hivedlab.checker.validate.core import MAX_FILE_BYTES
from tests.support.paths import FIXTURES, ROOT

GOOD_JOB = FIXTURES / "validate" / "good" / "job-gang-two-tasks.yaml"
ONE_VC = FIXTURES / "validate" / "good" / "hived-one-vc.yaml"


def _with_good(tmp_path: Path, name: str, content: bytes) -> tuple[Path, Path]:
    bad = tmp_path / name
    bad.write_bytes(content)
    good = tmp_path / "good.yaml"
    good.write_bytes(GOOD_JOB.read_bytes())
    return bad, good


def _rules(report, path: Path) -> list[tuple[str, str]]:
    return [(f.rule, f.severity) for f in report.findings if f.file == str(path)]


@pytest.mark.parametrize(
    ("name", "content", "rule"),
    [
        ("malformed.yaml", b"name: [unclosed\ntype: job\n", "yaml-syntax"),
        ("duplicate-key.yaml", b"protocolVersion: 2\nname: a\nname: b\n", "yaml-syntax"),
        ("two-docs.yaml", b"protocolVersion: 2\n---\nprotocolVersion: 2\n", "yaml-syntax"),
        ("binary.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "file-binary"),
        ("latin1.yaml", "name: caf\u00e9\n".encode("latin-1"), "file-binary"),
        ("list.yaml", b"- protocolVersion: 2\n- name: x\n", "file-kind"),
        ("scalar.yaml", b"just a sentence\n", "file-kind"),
        ("unknown.yaml", b"foo: bar\n", "file-kind"),
    ],
)
def test_a_bad_file_gets_one_clear_error_and_the_good_one_is_still_checked(tmp_path, name, content, rule):
    bad, good = _with_good(tmp_path, name, content)
    report = validate_paths([bad, good], hived_configs=[ONE_VC])
    assert _rules(report, bad) == [(rule, ERROR)]
    assert report.kinds[str(good)] == "job" and not _rules(report, good)
    assert report.exit_code() == 1


def test_an_empty_file_is_a_warning(tmp_path):
    bad, good = _with_good(tmp_path, "empty.yaml", b"")
    report = validate_paths([bad, good], hived_configs=[ONE_VC])
    assert _rules(report, bad) == [("file-empty", WARNING)]
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_a_comment_only_file_is_an_empty_document(tmp_path):
    bad, _ = _with_good(tmp_path, "comments.yaml", b"# nothing here\n")
    assert _rules(validate_paths([bad]), bad) == [("file-empty", WARNING)]


def test_an_alias_bomb_is_bounded(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    bad, good = _with_good(tmp_path, "bomb.yaml", ("\n".join(lines) + "\n").encode())
    report = validate_paths([bad, good], hived_configs=[ONE_VC])
    (finding,) = [f for f in report.findings if f.file == str(bad)]
    assert finding.rule == "yaml-syntax" and "expands to more than" in finding.message


def test_a_50_mb_file_is_not_read(tmp_path):
    bad = tmp_path / "huge.yaml"
    with bad.open("wb") as handle:  # sparse: no 50 MB written
        handle.truncate(50 * 1024 * 1024)
    report = validate_paths([bad])
    (finding,) = report.findings
    assert finding.rule == "file-too-large" and str(MAX_FILE_BYTES) in finding.message


def test_deeply_nested_input(tmp_path):
    bad, good = _with_good(tmp_path, "deep.yaml", b"protocolVersion: " + b"[" * 3000 + b"]" * 3000 + b"\n")
    report = validate_paths([bad, good], hived_configs=[ONE_VC])
    assert _rules(report, bad) == [("yaml-syntax", ERROR)]


def test_a_job_over_100_kb_is_refused_like_the_rest_server(tmp_path):
    text = GOOD_JOB.read_text() + "description: '" + "x" * (101 * 1024) + "'\n"
    big = tmp_path / "big.yaml"
    big.write_text(text)
    report = validate_paths([big], hived_configs=[ONE_VC])
    assert ("job-body-too-large", ERROR) in _rules(report, big)


def test_unreadable_paths_give_exit_status_2_and_the_rest_is_checked(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_bytes(GOOD_JOB.read_bytes())
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "missing-target.yaml")
    report = validate_paths([tmp_path / "nope.yaml", dangling, good], hived_configs=[ONE_VC])
    unreadable = [f for f in report.findings if f.rule == "input-unreadable"]
    assert len(unreadable) == 2
    assert report.kinds[str(good)] == "job"
    assert report.exit_code() == 2


def test_a_folder_with_thousands_of_files(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(2000):
        (folder / f"note-{i}.txt").write_text("x")
    for i in range(100):
        (folder / f"other-{i}.yaml").write_text(f"key: {i}\n")
    (folder / "job.yaml").write_bytes(GOOD_JOB.read_bytes())
    report = validate_paths([folder], hived_configs=[ONE_VC])
    assert len(report.files) == 101
    assert report.kinds == {str(folder / "job.yaml"): "job"}
    assert report.findings == ()


def test_a_walk_skips_templates_and_hidden_folders(tmp_path):
    for sub in ("templates", ".git"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.yaml").write_text("protocolVersion: [\n")
    assert validate_paths([tmp_path]).files == ()


def test_a_walked_list_is_a_warning_not_an_error(tmp_path):
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    report = validate_paths([tmp_path])
    assert [(f.rule, f.severity) for f in report.findings] == [("file-kind", WARNING)]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_without_read_permission(tmp_path):
    locked = tmp_path / "locked.yaml"
    locked.write_text("a: 1\n")
    locked.chmod(0)
    report = validate_paths([locked])
    assert report.exit_code() == 2


def test_a_named_template_is_not_parsed():
    template = ROOT / "configs" / "hived" / "templates" / "two-vc.yaml.j2"
    report = validate_paths([template])
    assert [(f.rule, f.severity) for f in report.findings] == [("file-kind", WARNING)]
    assert report.exit_code() == 0
