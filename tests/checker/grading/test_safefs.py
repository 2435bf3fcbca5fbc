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


def test_every_path_resolves_as_realpath_resolves_it(tmp_path: Path) -> None:
    """Paths are resolved from the resolved folder, part by part; where the folder, a part or a link chain is a
    symlink, or a part is '.', missing or below a file, the result is os.path.realpath's."""
    outside = tmp_path / "outside"
    (outside / "d").mkdir(parents=True)
    (outside / "d" / "f.txt").write_text("x")
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (real / "a" / "b" / "f.txt").write_text("x")
    (real / "file").write_text("x")
    (real / "in").symlink_to("a")
    (real / "chain").symlink_to("in/b")
    (real / "out").symlink_to(outside / "d")
    (real / "a" / "up").symlink_to("..")
    (real / "dangling").symlink_to("nowhere")
    (tmp_path / "link-to-group").symlink_to(real)
    rels = ["a", "a/b", "a/b/f.txt", "in/b/f.txt", "chain/f.txt", "out/f.txt", "a/up/a/b", "a/up/out", "dangling",
            "dangling/x", "missing/x/y", "file/below", "a/./b", "./a", "in/./b/f.txt"]
    for root in (real, tmp_path / "link-to-group"):
        group = GroupFolder(root)
        for rel in rels:
            expected = os.path.realpath(os.path.join(root, rel))
            inside = expected.startswith(str(real.resolve()) + os.sep)
            if inside:
                assert group.is_dir(rel) == os.path.isdir(expected), (root, rel)
                assert str(group._resolve(rel)) == expected, (root, rel)
            else:
                with pytest.raises(UnsafeFile):
                    group._resolve(rel)
