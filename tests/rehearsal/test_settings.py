"""Where the rehearsal cluster keeps its state and which ports it takes (hivedlab.rehearsal.settings)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.settings import ENV_PORT_OFFSET, Ports, load_settings
from hivedlab.rehearsal.stack import clear_logs


def test_a_port_offset_moves_every_port_so_two_clusters_do_not_meet(tmp_path: Path) -> None:
    first = load_settings(str(tmp_path / "a"), environ={})
    second = load_settings(str(tmp_path / "b"), environ={ENV_PORT_OFFSET: "1000"})
    assert first.ports == Ports()
    assert {name: port - 1000 for name, port in asdict(second.ports).items()} == asdict(first.ports)
    assert not set(asdict(first.ports).values()) & set(asdict(second.ports).values())


def test_the_option_wins_over_the_variable(tmp_path: Path) -> None:
    settings = load_settings(str(tmp_path), environ={ENV_PORT_OFFSET: "1000"}, port_offset=7)
    assert settings.ports.apiserver == Ports().apiserver + 7


@pytest.mark.parametrize("value", ["ten", "-1", "40000"])
def test_an_offset_that_is_no_port_is_refused_in_one_line(tmp_path: Path, value: str) -> None:
    with pytest.raises(HivedlabError) as refused:
        load_settings(str(tmp_path), environ={ENV_PORT_OFFSET: value})
    assert "\n" not in str(refused.value)
    assert value in str(refused.value)


def test_up_clears_the_last_logs_but_keeps_the_builds(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / "old").mkdir(parents=True)
    for name in ("build.log", "kube-apiserver.log", "old/x.log"):
        (logs / name).write_text("…", encoding="utf-8")
    clear_logs(logs)
    assert sorted(p.name for p in logs.iterdir()) == ["build.log"]
    clear_logs(tmp_path / "none")  # no logs yet: nothing to do
