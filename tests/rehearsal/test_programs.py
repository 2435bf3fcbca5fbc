"""The checks of the parts: each missing or wrong one named in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.programs import check_parts, require
from hivedlab.rehearsal.settings import KUBE_PROGRAMS, Paths


def tools(name: str) -> str | None:
    return f"/usr/bin/{name}"


def complete(tmp_path: Path) -> tuple[Paths, Path]:
    paths = Paths(tmp_path / "home")
    paths.bin.mkdir(parents=True)
    for name in KUBE_PROGRAMS:
        (paths.bin / name).write_text("", encoding="utf-8")
    programs = tmp_path / "programs"
    for name, version in (("hivedscheduler", "v0.3.4"), ("frameworkcontroller", "v0.8.0")):
        (programs / name).mkdir(parents=True)
        (programs / name / name).write_text("", encoding="utf-8")
        (programs / name / "VERSION").write_text(version + "\n", encoding="utf-8")
    for folder, manifest in ((programs / "rest-server", {"name": "pai-rest-server", "version": "1.2.0"}),
                             (programs / "database-controller" / "src",
                              {"name": "database-controller", "version": "1.0.0", "paiVersion": "v1.2.0"})):
        (folder / "node_modules").mkdir(parents=True)
        (folder / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    (programs / "k8s-job-exit-spec.yaml").write_text("spec: []\n", encoding="utf-8")
    return paths, programs


def test_a_complete_folder_has_no_problem_but_postgres(tmp_path: Path) -> None:
    paths, programs = complete(tmp_path)
    problems = {p.name: p.problem for p in check_parts(paths, programs, tools) if p.problem}
    assert set(problems) <= {"postgresql"}


def test_a_wrong_version_and_missing_parts_are_named(tmp_path: Path) -> None:
    paths, programs = complete(tmp_path)
    (programs / "hivedscheduler" / "VERSION").write_text("v0.3.2\n", encoding="utf-8")
    (paths.bin / "kube-apiserver").unlink()
    (programs / "rest-server" / "package.json").write_text('{"name": "pai-rest-server", "version": "0.0.0"}',
                                                          encoding="utf-8")
    problems = {p.name: p.problem for p in check_parts(paths, programs, tools) if p.problem}
    assert "want 'v0.3.4'" in str(problems["hivedscheduler"])
    assert "hivedlab rehearsal build" in str(problems["kube-apiserver"])
    assert "want 'v1.2.0'" in str(problems["rest-server"])


def test_require_refuses_in_one_line_naming_each_part(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    with pytest.raises(HivedlabError) as error:
        require(paths, tmp_path / "nothing", lambda name: None)
    message = str(error.value)
    assert "\n" not in message
    for part in ("kube-apiserver", "etcd", "hivedscheduler", "rest-server", "k8s-job-exit-spec.yaml"):
        assert part in message
