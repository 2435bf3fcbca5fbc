"""Reading a submission never leaves the group folder, never blocks on a FIFO, never swallows a huge file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hivedlab.checker.grading.safefs import GroupFolder, UnsafeFile


@pytest.fixture
def group(tmp_path: Path) -> GroupFolder:
    root = tmp_path / "subs" / "g1"
    (root / "experiments" / "gang").mkdir(parents=True)
    (root / "run.json").write_text('{"cluster": "sim"}')
    (tmp_path / "secret.txt").write_text("TA's private notes")
    return GroupFolder(root, max_bytes=1024)


def test_reads_a_file_inside(group: GroupFolder) -> None:
    assert group.read_text("run.json") == '{"cluster": "sim"}'


def test_a_symlink_inside_the_folder_is_followed(group: GroupFolder) -> None:
    (group.root / "link.json").symlink_to("run.json")
    assert group.read_text("link.json") == '{"cluster": "sim"}'


def test_a_symlink_leaving_the_folder_is_refused(group: GroupFolder) -> None:
    (group.root / "experiments" / "gang" / "evidence.jsonl").symlink_to("../../../../secret.txt")
    with pytest.raises(UnsafeFile) as caught:
        group.read_text("experiments/gang/evidence.jsonl")
    assert caught.value.code == "symlink-outside"
    with pytest.raises(UnsafeFile):
        group.checked_path("experiments/gang/evidence.jsonl")
    assert group.escaping_symlinks() == ["experiments/gang/evidence.jsonl"]


def test_a_symlinked_folder_leaving_the_group_is_refused(group: GroupFolder, tmp_path: Path) -> None:
    (group.root / "env").symlink_to(tmp_path)
    with pytest.raises(UnsafeFile):
        group.read_text("env/secret.txt")
    assert group.list_dir("env") == []


@pytest.mark.parametrize("rel", ["../secret.txt", "/etc/passwd", "a/../../secret.txt", "", "a\\b"])
def test_paths_that_are_not_plain_relative_are_refused(group: GroupFolder, rel: str) -> None:
    with pytest.raises(UnsafeFile) as caught:
        group.read_text(rel)
    assert caught.value.code == "bad-path"


def test_a_fifo_is_refused_without_blocking(group: GroupFolder) -> None:
    os.mkfifo(group.root / "report.md")
    with pytest.raises(UnsafeFile) as caught:
        group.read_text("report.md")
    assert caught.value.code == "not-a-file"


def test_a_huge_file_is_refused_before_it_is_read(group: GroupFolder) -> None:
    with open(group.root / "claims.json", "wb") as handle:
        handle.truncate(50 * 1024 * 1024 * 1024)  # sparse: 50 GB on paper, nothing on disk
    with pytest.raises(UnsafeFile) as caught:
        group.read_text("claims.json")
    assert caught.value.code == "too-large"
    with pytest.raises(UnsafeFile):
        group.checked_path("claims.json")


def test_missing_and_binary_files(group: GroupFolder) -> None:
    with pytest.raises(UnsafeFile) as caught:
        group.read_text("nothing.json")
    assert caught.value.code == "missing"
    (group.root / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UnsafeFile) as caught:
        group.read_text("bin")
    assert caught.value.code == "not-utf8"
