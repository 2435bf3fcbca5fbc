"""Record the transcripts of tests/fixtures/transcripts/ from the real programs of a rehearsal cluster that is up
(docs/transcripts.md#re-recording):

    python -m tests.support.record_transcripts --home HOME --inventory INV --work DIR

It puts a recording proxy (`transcript_recorder.RecordingProxy`) in front of the rest-server, HiveD's web service and
the kube-apiserver, points hivedlab at them (`HIVEDLAB_PAI_URL`, `HIVEDLAB_HIVED_URL`, a kubeconfig of its own in
`--work`, outside the repository), runs the flows — `hivedlab accounts` twice, `hivedlab doctor`, HiveD's views on
two-vc, the switch to one-vc and its views, `hivedlab run smoke`, a run interrupted, `hivedlab stop`, the run resumed —
and asks for the answers the flows do not meet (a wrong password, an unknown user, a job that does not exist, an
unknown resource, an application token). Then it writes one transcript per program and topic (`transcript_topics`'
choice of exchanges), its secrets redacted. The cluster is left on one-vc; bring it down after.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets as random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
import yaml

from hivedlab.lab_group.inventory import load_inventory
from tests.support.paths import FIXTURES, ROOT
from tests.support.transcript_recorder import RecordingProxy, Secrets, Upstream
from tests.support.transcript_topics import KUBE_VIEWS, Recording, load_recording, write_topics

HIVEDLAB = [sys.executable, "-m", "hivedlab"]


class Recorder:
    """The three proxies in front of one rehearsal cluster and the environment that points hivedlab at them."""

    def __init__(self, home: Path, inventory: Path, work: Path) -> None:
        self.home, self.inventory, self.work = home, inventory, work
        self.cluster = json.loads((home / "run" / "cluster.json").read_text(encoding="utf-8"))
        self.secrets = Secrets()
        kubeconfig = yaml.safe_load(Path(self.cluster["kubeconfig"]).read_text(encoding="utf-8"))
        self.kube_token = str(kubeconfig["users"][0]["user"]["token"])
        self.secrets.add(self.kube_token, "<token:kubeconfig>")
        self.admin_token = Path(self.cluster["pai_admin_token_file"]).read_text(encoding="utf-8").strip()
        self.secrets.add(self.admin_token, "<token:admin>")
        ca = str(kubeconfig["clusters"][0]["cluster"]["certificate-authority"])
        self.pai = RecordingProxy(Upstream(self.cluster["pai_url"], strip="/rest-server"), self.secrets)
        self.hived = RecordingProxy(Upstream(self.cluster["hived_url"]), self.secrets)
        self.kube = RecordingProxy(Upstream(self.cluster["apiserver"], ca=ca), self.secrets)
        self.marks: list[tuple[str, int, int, int]] = []  # (flow, pai, hived, kube) exchange counts at its start
        self.members = [m.user for m in load_inventory(inventory).members if m.user]
        self.passwords = {user: random.token_urlsafe(12) for user in self.members}
        self._write_files()

    def _write_files(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "recorder",
                      "clusters": [{"name": "recorder", "cluster": {"server": self.kube.url}}],
                      "users": [{"name": "admin", "user": {"token": self.kube_token}}],
                      "contexts": [{"name": "recorder", "context": {"cluster": "recorder", "user": "admin"}}]}
        for name, text in (("kubeconfig", yaml.safe_dump(kubeconfig)), ("admin-token", self.admin_token + "\n"),
                           ("passwords.yaml", yaml.safe_dump(self.passwords))):
            path = self.work / name
            path.write_text(text, encoding="utf-8")
            path.chmod(0o600)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HIVEDLAB_PAI_URL": self.pai.url, "HIVEDLAB_HIVED_URL": self.hived.url,
                "KUBECONFIG": str(self.work / "kubeconfig"), "HIVEDLAB_PAI_TOKEN_FILE": str(self.work / "tokens"),
                "HIVEDLAB_REHEARSAL_HOME": str(self.home), "HIVEDLAB_LANG": "en"}

    def flow(self, name: str) -> None:
        self.marks.append((name, len(self.pai.taken()), len(self.hived.taken()), len(self.kube.taken())))
        print(f"-- {name}", flush=True)

    def hivedlab(self, *args: str, check: bool = False) -> int:
        done = subprocess.run([*HIVEDLAB, *args], env=self.env, cwd=self.work, capture_output=True, text=True,
                              timeout=900)
        print(f"   hivedlab {' '.join(args[:2])}: exit {done.returncode}", flush=True)
        (self.work / "logs").mkdir(exist_ok=True)
        (self.work / "logs" / f"{len(self.marks):02d}-{args[0]}.log").write_text(done.stdout + done.stderr)
        if check and done.returncode != 0:
            raise SystemExit(f"hivedlab {' '.join(args)} failed: {done.stderr.strip()[-400:]}")
        return done.returncode

    def call(self, proxy: RecordingProxy, method: str, path: str, *, token: str | None = None,
             basic: str | None = None, body: Any = None, text: str | None = None) -> requests.Response:
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if basic:
            headers["Authorization"] = f"Basic {basic}"
        data = None
        if body is not None:
            headers["Content-Type"], data = "application/json", json.dumps(body).encode()
        if text is not None:
            headers["Content-Type"], data = "text/yaml", text.encode()
        with requests.Session() as session:
            session.trust_env = False
            return session.request(method, proxy.url + path, headers=headers, data=data, allow_redirects=False,
                                   timeout=30)

    def recording(self) -> Recording:
        return Recording(self.marks, self.pai.taken(), self.hived.taken(), self.kube.taken(), self.cluster,
                         self.members)

    def close(self) -> None:
        for proxy in (self.pai, self.hived, self.kube):
            proxy.close()


def hived_views(rec: Recorder, vc: str) -> None:
    for path in ("physicalcluster", "virtualclusters/", f"virtualclusters/{vc}", "virtualclusters/vc9",
                 "virtualclusters"):
        rec.call(rec.hived, "GET", f"/v1/inspect/clusterstatus/{path}")
    rec.call(rec.hived, "GET", "/v1/inspect/nothing")


def tokens_of(rec: Recorder) -> dict[str, str]:
    return {str(k): str(v) for k, v in yaml.safe_load((rec.work / "tokens").read_text(encoding="utf-8")).items()}


def token_flows(rec: Recorder) -> None:
    """Logging in, the errors of a login and of a token, an application token (learnt from its answer only)."""
    user = rec.members[0]
    rec.call(rec.pai, "GET", "/rest-server/api/v2/info")
    login = rec.call(rec.pai, "POST", "/rest-server/api/v2/authn/basic/login",
                     body={"username": user, "password": rec.passwords[user]}).json()
    rec.call(rec.pai, "POST", "/rest-server/api/v2/authn/basic/login",
             body={"username": user, "password": random.token_urlsafe(9)})
    rec.call(rec.pai, "POST", "/rest-server/api/v2/authn/basic/login",
             body={"username": "nobody", "password": random.token_urlsafe(9)})
    forged = login["token"][:-4] + ("AAAA" if not login["token"].endswith("AAAA") else "BBBB")
    rec.secrets.add(forged, f"<forged-token:{user}>")
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/users/{user}", token=forged)
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/users/{user}")
    app = rec.call(rec.pai, "POST", "/rest-server/api/v2/tokens/application", token=login["token"]).json()
    basic = base64.b64encode(f"{user}:{app['token']}".encode()).decode()
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/users/{user}", basic=basic)
    rec.call(rec.pai, "PUT", "/rest-server/api/v2/users", basic=basic,
             body={"data": {"username": user, "virtualCluster": ["default"]}, "patch": True})
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/users/{user}", token=login["token"])


def user_errors(rec: Recorder) -> None:
    admin, user = rec.admin_token, rec.members[0]
    rec.call(rec.pai, "GET", "/rest-server/api/v2/users/eve", token=admin)
    rec.call(rec.pai, "GET", "/rest-server/api/v2/users/admin", token=admin)
    password = random.token_urlsafe(9)
    rec.secrets.add(password, "<password:eve>")
    rec.call(rec.pai, "POST", "/rest-server/api/v2/users", token=admin,
             body={"username": "eve", "password": password, "admin": False, "virtualCluster": ["vc1"]})
    rec.call(rec.pai, "GET", "/rest-server/api/v2/users/eve", token=admin)
    rec.call(rec.pai, "POST", "/rest-server/api/v2/users", token=admin,
             body={"username": "eve", "password": password, "admin": False, "virtualCluster": ["vc1"]})
    rec.call(rec.pai, "POST", "/rest-server/api/v2/users", token=admin,
             body={"username": "frank", "password": password, "admin": False, "virtualCluster": ["vc9"]})
    rec.secrets.add("12345", "<password:short>")
    rec.call(rec.pai, "POST", "/rest-server/api/v2/users", token=admin,
             body={"username": "frank", "password": "12345", "admin": False, "virtualCluster": []})
    rec.call(rec.pai, "PUT", "/rest-server/api/v2/users", token=admin,
             body={"data": {"username": "eve", "virtualCluster": ["vc9"]}, "patch": True})
    rec.call(rec.pai, "PUT", "/rest-server/api/v2/users", token=admin,
             body={"data": {"username": "nobody", "virtualCluster": ["default"]}, "patch": True})
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/users/{user}", token=rec.admin_token)
    rec.call(rec.pai, "GET", "/rest-server/api/v2/nothing", token=admin)


def kube_views(rec: Recorder) -> None:
    """What the watcher and doctor read, asked directly: lists, a watch from 0 that ends, an unknown resource."""
    for path in KUBE_VIEWS:
        rec.call(rec.kube, "GET", path, token=rec.kube_token)


def job_errors(rec: Recorder) -> None:
    """A job that does not exist, a name used again, a VC not granted, another member stopping a job."""
    tokens = tokens_of(rec)
    user, other = rec.members[0], rec.members[1]
    submitted = [e for e in rec.pai.taken() if e.method == "POST" and e.path.endswith("/api/v2/jobs")
                 and e.status == 202]
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/jobs/{user}~nope", token=tokens[user])
    if submitted:
        first = submitted[0]
        owner = str((first.body or {}).get("message", "")).rsplit(" for user ", 1)[-1].split(" ")[0]
        protocol = str(first.request_body)
        name = yaml.safe_load(protocol)["name"]
        rec.call(rec.pai, "POST", "/rest-server/api/v2/jobs", token=tokens.get(owner, tokens[user]), text=protocol)
        rec.call(rec.pai, "PUT", f"/rest-server/api/v2/jobs/{owner}~{name}/executionType",
                 token=tokens[other if owner != other else user], body={"value": "STOP"})
        elsewhere = protocol.replace("virtualCluster: default", "virtualCluster: vc1")
        rec.call(rec.pai, "POST", "/rest-server/api/v2/jobs", token=tokens[user],
                 text=elsewhere.replace(f"name: {name}", f"name: {name}-vc1"))
    rec.call(rec.pai, "GET", f"/rest-server/api/v2/jobs?username={user}&state=WAITING,RUNNING", token=tokens[user])
    rec.call(rec.pai, "GET", "/rest-server/api/v2/virtual-clusters", token=tokens[user])


def wait_for(test: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return True
        time.sleep(0.5)
    return False


def job_state_seen(rec: Recorder, start: int, states: tuple[str, ...]) -> bool:
    return any(e.method == "GET" and "/api/v2/jobs/" in e.path and isinstance(e.body, dict)
               and e.body.get("jobStatus", {}).get("state") in states for e in rec.pai.taken()[start:])


def start_run(rec: Recorder, out: Path, inventory: str, name: str) -> subprocess.Popen[bytes]:
    log = (rec.work / "logs" / f"{name}.log").open("w", encoding="utf-8")
    # a background shell starts its children with SIGINT ignored; the run must take Ctrl-C as from a terminal
    return subprocess.Popen([*HIVEDLAB, "run", "smoke", "--cluster", "pai", "--inventory", inventory, "--out",
                             str(out)], env=rec.env, cwd=rec.work, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def finish(run: subprocess.Popen[bytes], seconds: float) -> None:
    try:
        run.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait()


def smoke_run(rec: Recorder, out: Path, inventory: str) -> None:
    """The smoke test, and the cluster's lists while its jobs run."""
    start = len(rec.pai.taken())
    run = start_run(rec, out, inventory, "smoke")
    wait_for(lambda: job_state_seen(rec, start, ("RUNNING",)), 120)
    rec.flow("kubernetes lists")
    kube_views(rec)
    rec.flow("smoke")
    finish(run, 600)


def interrupted_run(rec: Recorder, out: Path, inventory: str) -> None:
    """A smoke run stopped by Ctrl-C once its first job is seen, `hivedlab stop` at once, then the run resumed."""
    start = len(rec.pai.taken())
    run = start_run(rec, out, inventory, "interrupted")
    wait_for(lambda: job_state_seen(rec, start, ("WAITING", "RUNNING")), 120)
    run.send_signal(signal.SIGINT)
    finish(run, 60)
    rec.flow("stop")
    rec.hivedlab("stop", str(out))
    rec.flow("resumed run")
    rec.hivedlab("run", "smoke", "--cluster", "pai", "--inventory", inventory, "--out", str(out))


def record(rec: Recorder) -> None:
    inventory = str(rec.inventory)
    if rec.cluster.get("config") != "two-vc":
        rec.hivedlab("rehearsal", "switch", "two-vc", check=True)
    rec.flow("hived two-vc")
    hived_views(rec, "vc1")
    rec.flow("accounts")
    accounts = ("accounts", "--inventory", inventory, "--admin-token-file", str(rec.work / "admin-token"),
                "--passwords", str(rec.work / "passwords.yaml"), "--vc", "default", "--vc", "vc1",
                "--tokens-out", str(rec.work / "tokens"))
    rec.hivedlab(*accounts, check=True)
    rec.flow("accounts again")
    rec.hivedlab(*accounts, check=True)
    rec.flow("user errors")
    user_errors(rec)
    rec.flow("tokens")
    token_flows(rec)
    rec.flow("doctor")
    rec.hivedlab("doctor", "--inventory", inventory, "--config", "two-vc")
    rec.flow("switch")
    rec.hivedlab("rehearsal", "switch", "one-vc", check=True)
    rec.flow("hived one-vc")
    hived_views(rec, "default")
    rec.flow("smoke")
    smoke_run(rec, rec.work / "run-smoke", inventory)
    rec.flow("interrupted run")
    interrupted_run(rec, rec.work / "run-stopped", inventory)
    rec.flow("job errors")
    job_errors(rec)
    rec.flow("end")


EXAMPLE = ROOT / "configs" / "group.example.yaml"


def _layout(inventory: Path) -> list[tuple[str, int]]:
    return sorted((m.hostname, m.gpus) for m in load_inventory(str(inventory)).members if m.hostname)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.record_transcripts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="the rehearsal cluster's home (it must be up)")
    parser.add_argument("--inventory", type=Path, help="the inventory the cluster was started with")
    parser.add_argument("--work", type=Path, help="a folder outside the repository for run dirs")
    parser.add_argument("--out", type=Path, default=FIXTURES / "transcripts", help="where the transcripts go")
    parser.add_argument("--from-recording", type=Path, metavar="FILE",
                        help="write the transcripts again from a recording.json that an earlier run left in --work")
    args = parser.parse_args(argv)
    if args.from_recording:
        saved = json.loads(args.from_recording.read_text(encoding="utf-8"))
        return _write(load_recording(args.from_recording), saved["secrets"], args.out)
    if not (args.home and args.inventory and args.work):
        parser.error("--home, --inventory and --work are needed to record (or give --from-recording FILE)")
    if _layout(args.inventory) != _layout(EXAMPLE):
        parser.error("record with the manual's layout (a copy of configs/group.example.yaml): the HiveD transcripts "
                     "are replayed against configs/hived/*.yaml")
    work = args.work.resolve()
    if work.is_relative_to(ROOT):
        parser.error("--work must be outside the repository (it holds tokens and passwords)")
    if not (args.home / "run" / "cluster.json").is_file():
        parser.error(f"no rehearsal cluster is up in {args.home}: run hivedlab rehearsal up first")
    rec = Recorder(args.home.resolve(), args.inventory.resolve(), work)
    try:
        record(rec)
    finally:
        rec.close()
        raw = work / "recording.json"  # not redacted: it stays outside the repository, mode 600
        raw.write_text(json.dumps({**rec.recording().as_data(), "secrets": rec.secrets.mapping()}), encoding="utf-8")
        raw.chmod(0o600)
    return _write(rec.recording(), rec.secrets.mapping(), args.out)


def _write(recording: Recording, secrets: Mapping[str, str], out: Path) -> int:
    for path in write_topics(recording, secrets, out):
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
