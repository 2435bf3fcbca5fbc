"""The build's steps and its two changes to kube-scheduler 1.20.2 (extenders on preemption; 1.14's preemption
candidates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.build import (
    EXTENDERS_OPTION,
    build_steps,
    version_flags,
    with_extender_preemption,
    with_victimless_candidates,
)
from hivedlab.rehearsal.settings import KUBE_PROGRAMS, Paths

FACTORY = """\
	profiles, err := profile.NewMap(c.profiles, c.registry, c.recorderFactory,
		frameworkruntime.WithClientSet(c.client),
		frameworkruntime.WithPodNominator(nominator),
		frameworkruntime.WithCaptureProfile(frameworkruntime.CaptureProfile(c.frameworkCapturer)),
	)
"""


def test_the_profiles_get_the_extenders_once() -> None:
    patched = with_extender_preemption(FACTORY)
    lines = patched.splitlines()
    assert lines[3] == "\t\t" + EXTENDERS_OPTION
    assert with_extender_preemption(patched) == patched


def test_a_file_of_another_version_is_refused() -> None:
    with pytest.raises(HivedlabError, match="not v1.20.2's"):
        with_extender_preemption("package scheduler\n")


SELECT_VICTIMS = """\
func selectVictimsOnNode(
	for _, p := range nodeInfo.Pods {
		if podutil.GetPodPriority(p.Pod) < podPriority {
			potentialVictims = append(potentialVictims, p.Pod)
		}
	}

	// No potential victims are found, and so we don't need to evaluate the node again since its state didn't change.
	if len(potentialVictims) == 0 {
		return nil, 0, false
	}

	// If the new pod does not fit after removing all the lower priority pods,
	if fits, _, err := core.PodPassesFiltersOnNode(ctx, ph, state, pod, nodeInfo); !fits {
		return nil, 0, false
	}
"""


def test_a_node_without_lower_priority_pods_stays_a_candidate_as_in_1_14() -> None:
    patched = with_victimless_candidates(SELECT_VICTIMS)
    assert "len(potentialVictims) == 0" not in patched and "No potential victims" not in patched
    assert patched.count("return nil, 0, false") == 1 and "PodPassesFiltersOnNode" in patched
    assert len(patched.splitlines()) == len(SELECT_VICTIMS.splitlines()) - 4
    assert with_victimless_candidates(patched) == patched
    with pytest.raises(HivedlabError, match="not v1.20.2's"):
        with_victimless_candidates("package defaultpreemption\n")


def test_the_steps_fetch_only_once_and_build_each_program_with_its_version(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    first = [s.what for s in build_steps(paths, fetched=False)]
    again = [s.what for s in build_steps(paths, fetched=True)]
    assert first[:2] == ["apt-get update (the temporary deb-src list)", "apt-get source kubernetes"]
    assert again == ["make generated_files"] + [f"go build {name}" for name in KUBE_PROGRAMS]
    go = build_steps(paths, fetched=True)[1]
    assert go.env["GO111MODULE"] == "off" and go.env["GOPATH"] == str(tmp_path / "gopath")
    assert "gitVersion=v1.20.2" in version_flags() and version_flags() in go.argv
