"""A plan's reconfiguration steps on the real backend: a `switch_config` step while jobs run asks the admin to switch
(and waits) or refuses without a terminal; a `restart` step is refused in one line (docs/experiment-plans.md)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from hivedlab.backends.pai.live import LiveView
from hivedlab.backends.pai.users import AccountsFiles
from hivedlab.backends.protocol import RunInfo
from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.stack import dropped_grants
from tests.support.pai_world import ONE_VC, TWO_VC, job, make


def test_a_restart_step_is_refused_in_one_line(world, tmp_path):
    backend, _, _ = make(world, tmp_path)
    with pytest.raises(HivedlabError, match="simulated cluster only") as caught:
        backend.restart_hived()
    assert "\n" not in str(caught.value) and "paictl" in str(caught.value)


def test_a_switch_while_our_job_runs_asks_the_admin_and_waits(world, tmp_path):
    _, hived, _ = world
    asked = []

    def ask(prompt):
        asked.append(prompt)
        hived.vcs = ["default"]  # the admin ran paictl stop, push, start
        return ""

    backend, _, _ = make(world, tmp_path, ask=ask, interactive=True, experiment="reconfig")
    backend.switch_config("two-vc", TWO_VC)
    assert backend.submit("alice", "vc1-job", job("vc1-job-alice-r1")).accepted
    backend.switch_config("one-vc", ONE_VC)  # our own running job does not make the cluster busy
    assert len(asked) == 1 and "scheduler-config one-vc" in asked[0]


def test_a_switch_without_a_terminal_is_refused(world, tmp_path):
    backend, _, _ = make(world, tmp_path, experiment="reconfig")
    backend.switch_config("two-vc", TWO_VC)
    assert backend.submit("alice", "vc1-job", job("vc1-job-alice-r1")).accepted
    with pytest.raises(HivedlabError, match="paictl"):
        backend.switch_config("one-vc", ONE_VC)


def test_on_the_rehearsal_cluster_the_switch_is_its_own_command(world, tmp_path):
    """The rehearsal cluster has no paictl: the switch it needs is `hivedlab rehearsal switch` (docs/rehearsal.md)."""
    backend, _, _ = make(world, tmp_path, experiment="reconfig")
    backend.run_info = RunInfo(emulated_nodes=("hostname-carol", "hostname-dan"))
    backend.switch_config("two-vc", TWO_VC)
    assert backend.submit("alice", "vc1-job", job("vc1-job-alice-r1")).accepted
    with pytest.raises(HivedlabError, match="hivedlab rehearsal switch one-vc") as caught:
        backend.switch_config("one-vc", ONE_VC)
    assert "paictl commands" not in str(caught.value)


def test_a_rehearsal_cluster_run_from_this_machine_is_switched_by_the_run_itself(world, tmp_path):
    """With the local rehearsal's switch at hand (hivedlab.rehearsal.stack.switcher_for) the run does what the admin
    would, without a terminal, then waits for HiveD to show the new VCs as after paictl."""
    _, hived, _ = world
    switched = []

    def switch(name):
        switched.append(name)
        hived.vcs = ["default"]
        return dropped_grants("two-vc", name, AccountsFiles("group.yaml", "/home/ta/pai-admin-token"))

    said = io.StringIO()
    backend, _, _ = make(world, tmp_path, experiment="reconfig", view=LiveView(Console(file=said, width=300)))
    backend.run_info = RunInfo(emulated_nodes=("hostname-carol", "hostname-dan"))
    backend.use_config_switcher(switch)
    backend.switch_config("two-vc", TWO_VC)
    assert switched == []  # already in place: nothing to do
    assert backend.submit("alice", "vc1-job", job("vc1-job-alice-r1")).accepted
    backend.switch_config("one-vc", ONE_VC)
    assert switched == ["one-vc"] and backend.vcs == {"default"}
    # what the switch changed beyond HiveD, and what a later switch back then needs
    assert ("the rest-server, restarted with 'one-vc', dropped the members' grant of VC vc1: after switching back "
            "(`hivedlab rehearsal switch two-vc`) run `hivedlab accounts --inventory group.yaml --admin-token-file "
            "/home/ta/pai-admin-token --vc default --vc vc1` to grant it again") in " ".join(said.getvalue().split())


def test_a_switch_that_drops_nothing_says_nothing_more() -> None:
    assert dropped_grants("one-vc", "two-vc", AccountsFiles()) is None


def test_a_switch_that_does_not_take_is_reported(world, tmp_path):
    backend, _, _ = make(world, tmp_path, experiment="reconfig")
    backend.use_config_switcher(lambda name: None)  # HiveD keeps its two VCs
    backend.switch_timeout_s = 0.0
    backend.switch_config("two-vc", TWO_VC)
    with pytest.raises(HivedlabError, match=r"did not show the VCs \['default'\]"):
        backend.switch_config("one-vc", ONE_VC)
