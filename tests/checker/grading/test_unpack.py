"""Unpacking an LMS export: one folder per archive, nothing outside it, no links, no bombs."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from hivedlab.checker.grading.unpack import unpack_all, unpack_archive
from tests.support.grade_builders import make_run_dir
from tests.support.paths import ROOT


def _zip(path: Path, members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, target)
    return path


def test_a_zip_with_traversal_absolute_paths_and_symlinks(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "group-a.zip", {"run.json": b"{}", "../evil.txt": b"x", "/abs.txt": b"x",
                                              "experiments/gang/evidence.jsonl": b""},
                   symlinks={"link": "/etc/passwd"})
    dest = tmp_path / "subs"
    result = unpack_archive(archive, dest)
    assert result.group == "group-a" and result.error is None
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "group-a/experiments/gang/evidence.jsonl", "group-a/run.json"]
    assert len(result.skipped) == 3
    assert not (tmp_path / "evil.txt").exists() and not (dest / "group-a" / "link").exists()


def test_a_tar_with_a_symlink_and_a_device(tmp_path: Path) -> None:
    archive = tmp_path / "group-b.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        data = b'{"cluster": "sim"}'
        info = tarfile.TarInfo("run.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("secret")
        link.type, link.linkname = tarfile.SYMTYPE, "../../../../etc/shadow"
        tf.addfile(link)
        dev = tarfile.TarInfo("dev")
        dev.type = tarfile.CHRTYPE
        tf.addfile(dev)
    result = unpack_archive(archive, tmp_path / "subs")
    assert (tmp_path / "subs" / "group-b" / "run.json").read_bytes() == data
    assert not os.path.lexists(tmp_path / "subs" / "group-b" / "secret")
    assert len(result.skipped) == 2


def test_size_caps_and_a_broken_archive(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "big.zip", {"a": b"0" * 4096, "b": b"1" * 4096})
    result = unpack_archive(archive, tmp_path / "subs", max_total=5000)
    assert result.written == 1 and "limit" in result.skipped[0]
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    broken = unpack_archive(tmp_path / "bad.zip", tmp_path / "subs")
    assert broken.error == broken.kind == "not an archive: not a zip file"
    assert not (tmp_path / "subs" / "bad").exists()  # no empty group folder that would read "run.json is missing"


def test_folders_are_copied_and_stray_files_ignored(tmp_path: Path) -> None:
    export = tmp_path / "export"
    make_run_dir(export / "g1")
    (export / "readme.txt").write_text("hi")
    results = unpack_all(export, tmp_path / "subs")
    assert [(r.group, r.kind, r.error) for r in results] == [
        ("g1", "folder", None), ("readme", "not an archive: its name does not end in .zip, .tar.gz, .tgz, .tar", None)]
    assert (tmp_path / "subs" / "g1" / "run.json").is_file()
    assert "run.json" in results[0].files and results[0].written == len(results[0].files) > 5


def test_the_ta_wrapper_unpacks_and_grades(tmp_path: Path) -> None:
    export = tmp_path / "export"
    export.mkdir()
    _zip(export / "team1.zip", {"notes.txt": b"hello"})
    make_run_dir(export / "team2", source="k8s")
    with tarfile.open(export / "team3.tgz", "w:gz") as tf:
        tf.add(make_run_dir(tmp_path / "team3"), arcname=".")
    (export / "team4.zip").write_bytes(b"PK\x03\x04 cut off")
    env = {**os.environ, "HIVEDLAB_PYTHON": sys.executable}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "grade_all.sh"), str(export), str(tmp_path / "out"),
                           "--", "--jobs", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr  # team1 and team4 need a look
    assert "Warning" not in done.stderr, done.stderr  # e.g. runpy's RuntimeWarning about sys.modules
    unpacking = done.stdout.split("== grading")[0]
    lines = {line.split(":")[0]: line for line in unpacking.splitlines()}
    assert lines["team1.zip"] == "team1.zip: zip -> team1/, 1 file(s): notes.txt"
    assert lines["team2"].startswith("team2: folder -> team2/, ") and "run.json" in lines["team2"]
    assert lines["team3.tgz"].startswith("team3.tgz: tar -> team3/, ") and "claims.json" in lines["team3.tgz"]
    assert lines["team4.zip"] == "team4.zip: not an archive: not a zip file (not graded: needs a look)"
    assert (tmp_path / "out" / "groups" / "team2" / "feedback.md").is_file()
    look = (tmp_path / "out" / "grades.md").read_text().split("## Needs a look")[1]
    assert "**team4** (not graded / 未评分): not an archive: not a zip file" in look
    assert "run.json is missing" in look.split("**team1**")[1].split("**")[0]  # the zip opened: its content is short
    assert not (tmp_path / "out" / "groups" / "team4").exists()
    again = subprocess.run(["bash", str(ROOT / "scripts" / "grade_all.sh"), str(export), str(tmp_path / "out")],
                           capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_normal_tar_of_dot_is_not_a_refusal(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run")
    archive = tmp_path / "group-b.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(run, arcname=".")
    result = unpack_archive(archive, tmp_path / "subs")
    assert result.error is None and result.skipped == ()
    assert (tmp_path / "subs" / "group-b" / "run.json").is_file()


def test_unpacking_refusals_reach_grades_md(tmp_path: Path) -> None:
    from hivedlab.checker.grading.batch import grade_batch
    from hivedlab.checker.grading.rubric import load_rubric
    from hivedlab.checker.grading.unpack import main
    from tests.support.grade_builders import LAB, fake_judge

    export = tmp_path / "export"
    export.mkdir()
    _zip(export / "group-a.zip", {"run.json": b"{}", "../evil.txt": b"x"})
    subs = tmp_path / "subs"
    assert main([str(export), str(subs)]) == 0
    grade_batch(subs, tmp_path / "out", load_rubric(), LAB, fake_judge)
    grades = (tmp_path / "out" / "grades.md").read_text()
    assert "group-a" in grades and "../evil.txt: path leaves the group folder" in grades


def test_the_exit_codes_are_in_both_helps() -> None:
    script = subprocess.run(["bash", str(ROOT / "scripts" / "grade_all.sh"), "--help"], capture_output=True,
                            text=True, timeout=30)
    grade = subprocess.run([sys.executable, "-m", "hivedlab", "grade", "--help"], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    for done in (script, grade):
        assert done.returncode == 0
        text = " ".join(done.stdout.split())
        assert "Exit status: 0 every group graded" in text and "1 graded, but some group needs a look" in text
        assert "2 could not grade" in text


def test_a_clean_class_exits_0_and_a_missing_export_2(tmp_path: Path) -> None:
    from tests.support.grade_class import another_run

    export = tmp_path / "export"
    another_run(make_run_dir(export / "solo", source="k8s"), 3)
    env = {**os.environ, "HIVEDLAB_PYTHON": sys.executable}
    script = str(ROOT / "scripts" / "grade_all.sh")
    done = subprocess.run(["bash", script, str(export), str(tmp_path / "out")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1 and "solo" in done.stdout  # the built run is partial: it needs a look
    missing = subprocess.run(["bash", script, str(tmp_path / "nowhere"), str(tmp_path / "out2")],
                             capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr
