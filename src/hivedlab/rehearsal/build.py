"""`hivedlab rehearsal build`: Kubernetes 1.20.2 from Debian's `kubernetes` source package into the home's bin/.

The steps (`build_steps`, pure) and their runner. Debian bookworm ships the whole v1.20.2 tree with vendor/ as
`kubernetes 1.20.5+really1.20.2`; it is fetched with `apt-get source` through a temporary apt configuration (a
`deb-src` line of its own, nothing of the system's apt setup changes), put at `$GOPATH/src/k8s.io/kubernetes`, its
vendored `modern-go/reflect2` v1.0.1 (which crashes under Go >= 1.18) replaced by Debian's v1.0.2, `make
generated_files` run, and each program built with Debian's Go in GOPATH mode.

One fix goes into the tree before the build (`with_extender_preemption`): v1.20.2's kube-scheduler never hands its
extenders to the scheduling framework, so the preemption plugin never calls an extender's preempt verb (kubernetes
issue #102971, fixed by #103019 and its release-1.20 cherry-pick #103031). Without it HiveD is never asked to preempt:
the preemptor is nominated with no victim and waits until the lower-priority job ends. The course's kube-scheduler
1.14 calls the extender; the fix makes 1.20.2 do the same.

A second change (`with_victimless_candidates`) puts back 1.14's choice of the nodes offered to the extender's preempt
verb: 1.14's `selectVictimsOnNode` (pkg/scheduler/core/generic_scheduler.go) keeps a node where the pod fits once the
lower-priority pods are gone even when there are none, and HiveD then names its own victims there; 1.20's
(`defaultpreemption.selectVictimsOnNode`) drops such a node. HiveD's victims need not have a lower Kubernetes priority:
after a config switch it demotes the jobs of a deleted VC to opportunistic while their pods keep their prod priority
class, and a test job preempts them (HiveD's reconfig test "delete VC"). Seen on the rehearsal cluster before the
change: the reconfig experiment's test job waited for the demoted job to end. Needs `golang-go dpkg-dev rsync
golang-github-modern-go-reflect2-dev` (and `etcd-server postgresql` to run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.programs import KUBE_VERSION
from hivedlab.rehearsal.settings import KUBE_PROGRAMS, Paths

DEBIAN_PACKAGES = ("golang-go", "dpkg-dev", "rsync", "golang-github-modern-go-reflect2-dev")
SOURCE_LINE = "deb-src http://deb.debian.org/debian bookworm main\n"
REFLECT2 = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
VERSION_PACKAGE = "k8s.io/kubernetes/vendor/k8s.io/component-base/version"
SCHEDULER_FACTORY = Path("pkg/scheduler/factory.go")
DEFAULT_PREEMPTION = Path("pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go")
NO_VICTIM_SKIP = ("// No potential victims are found, and so we don't need to evaluate the node again since its state "
                  "didn't change.", "if len(potentialVictims) == 0 {", "return nil, 0, false", "}")
NOMINATOR_OPTION = "frameworkruntime.WithPodNominator(nominator),"
EXTENDERS_OPTION = "frameworkruntime.WithExtenders(extenders),"

BUILD_LOG = "build.log"  # under the home's logs/, kept by `up` (stack.clear_logs)


def with_extender_preemption(factory: str) -> str:
    """kube-scheduler's factory.go with the profiles given the extenders (kubernetes #103019); unchanged when the
    option is already there. Refuses a file that does not look like v1.20's."""
    if EXTENDERS_OPTION in factory:
        return factory
    lines = factory.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.strip() == NOMINATOR_OPTION]
    if len(at) != 1:
        raise HivedlabError(f"{SCHEDULER_FACTORY} is not v1.20.2's: no single `{NOMINATOR_OPTION}` line to add the "
                            "extenders after")
    indent = lines[at[0]][: len(lines[at[0]]) - len(lines[at[0]].lstrip())]
    lines.insert(at[0] + 1, f"{indent}{EXTENDERS_OPTION}\n")
    return "".join(lines)


def with_victimless_candidates(source: str) -> str:
    """default_preemption.go without 1.20's early return for a node with no lower-priority pod (the comment and the
    three lines of NO_VICTIM_SKIP); unchanged when they are gone already. Refuses a file that is not v1.20's."""
    lines = source.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    at = [i for i in range(len(lines)) if tuple(stripped[i:i + len(NO_VICTIM_SKIP)]) == NO_VICTIM_SKIP]
    if not at:
        if "func selectVictimsOnNode(" not in source:
            raise HivedlabError(f"{DEFAULT_PREEMPTION} is not v1.20.2's: it has no selectVictimsOnNode")
        return source
    return "".join(lines[:at[0]] + lines[at[0] + len(NO_VICTIM_SKIP):])


@dataclass(frozen=True)
class Step:
    what: str
    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)


def _apt(paths: Paths) -> tuple[str, ...]:
    apt = paths.home / "apt"
    return ("-o", f"Dir::Etc::SourceList={apt / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt / 'lists'}")


def tree(paths: Paths) -> Path:
    return paths.home / "gopath" / "src" / "k8s.io" / "kubernetes"


def version_flags() -> str:
    major, minor = KUBE_VERSION.lstrip("v").split(".")[:2]
    return " ".join(f"-X {VERSION_PACKAGE}.{k}={v}" for k, v in (
        ("gitVersion", KUBE_VERSION), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean")))


def build_steps(paths: Paths, fetched: bool) -> list[Step]:
    """What remains to do: fetch (unless the tree is there), generate, build each program."""
    go_env = {"GOPATH": str(paths.home / "gopath"), "GO111MODULE": "off", "GOCACHE": str(paths.home / "gocache")}
    steps = []
    if not fetched:
        steps += [Step("apt-get update (the temporary deb-src list)", ("apt-get", *_apt(paths), "update"), paths.home),
                  Step("apt-get source kubernetes", ("apt-get", *_apt(paths), "source", "kubernetes"),
                       paths.home / "source")]
    steps.append(Step("make generated_files", ("make", "generated_files"), tree(paths), go_env))
    steps += [Step(f"go build {name}", ("go", "build", "-ldflags", version_flags(), "-o", str(paths.program(name)),
                                        f"./cmd/{name}"), tree(paths), go_env) for name in KUBE_PROGRAMS]
    return steps


def _place_tree(paths: Paths) -> None:
    """Move the unpacked source to its GOPATH place and swap in reflect2 v1.0.2."""
    unpacked = sorted((paths.home / "source").glob("kubernetes-*/"))
    if not unpacked:
        raise HivedlabError("apt-get source left no kubernetes-* folder")
    target = tree(paths)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(unpacked[-1]), target)
    vendored = target / "vendor" / "github.com" / "modern-go" / "reflect2"
    shutil.rmtree(vendored)
    shutil.copytree(REFLECT2, vendored)
    (vendored / "go.mod").unlink(missing_ok=True)


def missing_tools() -> list[str]:
    needs = {"go": "golang-go", "dpkg-source": "dpkg-dev", "rsync": "rsync", "make": "make"}
    found = [f"{tool} ({package})" for tool, package in needs.items() if shutil.which(tool) is None]
    if not REFLECT2.is_dir():
        found.append("reflect2 v1.0.2 (golang-github-modern-go-reflect2-dev)")
    return found


def build(paths: Paths, say: Callable[[str], None] = print) -> None:
    missing = missing_tools()
    if missing:
        raise HivedlabError(f"the build needs {', '.join(missing)}: apt-get install {' '.join(DEBIAN_PACKAGES)}")
    apt = paths.home / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(SOURCE_LINE, encoding="utf-8")
    (paths.home / "source").mkdir(parents=True, exist_ok=True)
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.bin.mkdir(parents=True, exist_ok=True)
    fetched = tree(paths).is_dir()
    if fetched:
        _patch(paths)
    log = paths.logs / BUILD_LOG
    for step in build_steps(paths, fetched):
        say(f"{step.what} ... (log: {log})")
        with log.open("ab") as out:
            done = subprocess.run(step.argv, cwd=step.cwd, env={**os.environ, **step.env}, stdout=out,
                                  stderr=subprocess.STDOUT, check=False)
        if done.returncode:
            raise HivedlabError(f"{step.what} failed (exit {done.returncode}); see {log}")
        if step.what.startswith("apt-get source"):
            _place_tree(paths)
            _patch(paths)


def _patch(paths: Paths) -> None:
    for relative, change in ((SCHEDULER_FACTORY, with_extender_preemption),
                             (DEFAULT_PREEMPTION, with_victimless_candidates)):
        path = tree(paths) / relative
        text = path.read_text(encoding="utf-8")
        patched = change(text)
        if patched != text:
            path.write_text(patched, encoding="utf-8")
