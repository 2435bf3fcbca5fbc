"""A fake OpenPAI v1.2.0 rest-server (docs/openpai-model.md#the-rest-api) served over real HTTP on 127.0.0.1.

Each behaviour cites the rest-server source it follows (microsoft/pai, tag v1.2.0, under `src/rest-server/src/`);
the contract test (tests/test_fake_contracts.py, docs/transcripts.md) replays
tests/fixtures/transcripts/openpai/ against it.

- Errors: `utils/error.js` `createError` + `config/express.js`'s error handler answer `{"code", "message"}` with the
  HTTP status; an unknown route is 404 `NoApiError` "API <url> is not found." (`config/express.js`).
- Tokens: `models/token.js` `sign` puts `{username, application}` and, for a login token, `exp` = 7 days
  (`config/token.js` `tokenExpireTime`) in the JWT; `verify` refuses an expired, forged or revoked one, and
  `middlewares/token.js` `check` answers all of them alike, 401 `UnauthorizedUserError` "Your token is invalid.";
  no `Authorization` header: 401 "Guest is not allowed to do this operation.". `Bearer <jwt>`, or `Basic
  base64(user:jwt)` for an application token, on every route `check` guards; `checkNotApplication` refuses an
  application token with 403 "Applications are not allowed to do this operation." (user writes).
- Login: `routes/authn.js` `/basic/login` → `controllers/v2/token.js` `get`: 400 `NoUserError` "User <u> is not
  found.", 400 `IncorrectPasswordError` "Password is incorrect.", else 200 `{user, token, admin, hasGitHubPAT}`.
- Users (`routes/v2/user.js`, `controllers/v2/user.js`): `getUser` — any valid token may read any user; a missing
  user is **400** `NoUserError` "User <u> is not found."; the object has `username, grouplist, email, extension,
  admin, virtualCluster, storageConfig` (no password). `createUser` (admin; `config/v2/user.js`
  `userCreateInputSchema`, validated by `middlewares/parameter.js` → 400 `InvalidParametersError`): grouplist = the
  asked VCs' groups + `default` (+ `admingroup` for an admin); a VC without its group is 404 `NoGroupError` "No groups
  for vc: <vcs>"; a taken name 409 `ConflictUserError`; 201 "User is created successfully". `basicAdminUserUpdate`
  (`PUT /api/v2/users`, admin): missing user 404 `NoUserError` "User <u> not found."; `virtualCluster` replaces the
  grouplist through `updateVirtualClusterInternal` (+ `default`; an unknown VC 400 `NoVirtualClusterError` "Try to
  update nonexist: <vcs>"); a password change revokes the user's login tokens; 201 "Update user <u> successfully".
  `models/v2/group.js` `getVCsWithGroupInfo`: an admin's `virtualCluster` is every VC.
- Jobs (`routes/v2/job.js`, `controllers/v2/job.js`): `update` (POST, `text/yaml` through `middlewares/v2/
  protocol.js`) 409 `ConflictJobError` "Job <u>~<name> already exists.", 202 "Update job <name> for user <u>
  successfully."; `models/v2/job/k8s.js` `put` 403 `ForbiddenUserError` "User <u> is not allowed to do operation in
  <vc>"; `middlewares/v2/hived.js` `hivedValidate` 400 "Job requests N SKUs, exceeds maximum M SKUs in VC <vc>.";
  `get` 404 `NoJobError` "Job <id> is not found." (`models/v2/job/k8s.js` `get`); `execute` (PUT executionType) only
  the owner or an admin, else 403 "User <u> is not allowed to execute job <id>.", 202 "Execute job <id>
  successfully."; `list` filters `username`, `vc`, `state` (comma lists) and answers summaries
  (`convertFrameworkSummary`: `name, username, state, subState, executionType, virtualCluster, …`).
- Virtual clusters: `controllers/v2/virtual-cluster.js` `list` → `models/v2/virtual-cluster/k8s.js` `getVcList`,
  `{vc: {capacity, resourcesTotal, …}}`, built from `{default: …}`, so `default` is always there.

Faults are scripted: `fail_next(method, path_prefix, reply)` answers the next matching request with `reply` (None drops
the connection). Tokens: `tests.support.pai_tokens`; a job's detail: `pai_job_detail`; pylon's portal page: `pylon`."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from tests.support.local import LocalServer, json_reply
from tests.support.pai_job_detail import attempt
from tests.support.pai_tokens import TOKEN_DAYS, claims_of, make_jwt
from tests.support.pylon import PORTAL_PAGE

DEFAULT_GROUP, ADMIN_GROUP = "default", "admingroup"  # config/authn.js groupConfig


def error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    """`createError` through `config/express.js`'s handler: `{code, message}` with the status."""
    return json_reply(status, {"code": code, "message": message})


TASK_ROLE_KEYS = ("protocolVersion", "instances", "completion", "taskRetryCount", "dockerImage", "data", "output",
                  "script", "extraContainerOptions", "resourcePerInstance", "commands")  # config/v2/protocol.js


class FakePai:
    def __init__(self, serve, vcs=("default", "vc1")) -> None:
        self.lock = threading.Lock()
        self.users = {"admin": "admin-password", "alice": "alice-pass", "bob": "bob-pass1"}
        self.grants = {u: set(vcs) for u in self.users}
        self.vcs = list(vcs)
        self.tokens = {make_jwt(u): u for u in self.users}
        self.app_tokens = {make_jwt(u, application=True): u for u in self.users}  # Basic auth
        self.info = {"name": "PAI RESTful API", "version": "v1.2.0", "launcherType": "k8s", "authnMethod": "basic"}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.roles: dict[str, dict[str, int]] = {}  # job id → its task roles' instances (the submitted protocol)
        self.gpus: dict[str, int] = {}  # job id → the GPUs it asks for
        self.faults: list[tuple[str, str, Any, bool]] = []
        self.auto_advance: tuple[int, int] | None = None  # (GETs until RUNNING, GETs until SUCCEEDED)
        self.gets: dict[str, int] = {}
        self.on_submit: Any = None  # called with the job id of each accepted submission (tests/support/fakecluster.py)
        self.admins = {"admin"}
        self.logins = 0
        self.server: LocalServer = serve(self.handle)
        self.url = self.server.url + "/rest-server"

    def token(self, user: str) -> str:
        return make_jwt(user)

    def fail_next(self, method: str, prefix: str, reply: Any, *, after: bool = False) -> None:
        """Answer the next `method` request under `prefix` with `reply`; `after`: process it first (lost reply)."""
        self.faults.append((method, prefix, reply, after))

    def set_state(self, job_id: str, state: str, tasks: list[dict[str, Any]] | None = None, **extra: Any) -> None:
        """The job's Framework moves to `state` (as FrameworkController moves it): its attempt exists from then on,
        so the detail shows the attempt, its tasks (`tasks`: per task, what the cluster decided — `containerNodeName`,
        `containerExitCode`, `retries`) and, once completed, its exit."""
        with self.lock:
            job = self.jobs[job_id]
            status = job["jobStatus"]
            status.update(state=state, **extra)
            attempt(job, self.roles.get(job_id, {}), tasks or [])

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    # ------------------------------------------------------------------ HTTP

    def handle(self, handler, method: str, path: str, body: bytes):
        for index, (m, prefix, reply, after) in enumerate(self.faults):
            if m == method and path.startswith("/rest-server" + prefix):
                del self.faults[index]
                if after:
                    self._route(handler, method, path, body)
                return reply
        return self._route(handler, method, path, body)

    def add_user(self, user: str, password: str) -> None:
        self.users[user] = password
        self.grants[user] = set(self.vcs)
        self.tokens[make_jwt(user)] = user
        self.app_tokens[make_jwt(user, application=True)] = user

    def revoke(self, user: str) -> None:
        """The user's login tokens stop working (`models/token.js` `batchRevoke`, as after a password change)."""
        self.tokens = {tok: u for tok, u in self.tokens.items() if u != user}

    def _valid(self, token: str, store: dict[str, str]) -> dict[str, Any] | None:
        """`models/token.js` `verify`: known (not revoked), not expired; its claims."""
        claims = claims_of(token)
        if store.get(token) is None or claims.get("username") != store[token]:
            return None
        exp = claims.get("exp")
        return None if isinstance(exp, int) and exp <= time.time() else claims

    def _caller(self, handler) -> dict[str, Any] | None:
        """`middlewares/token.js` `getToken`: Basic (application token) or Bearer; the verified claims."""
        scheme, _, credentials = (handler.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer":
            return self._valid(credentials, {**self.tokens, **self.app_tokens})
        if scheme.lower() == "basic":
            try:
                user, _, token = base64.b64decode(credentials).decode().partition(":")
            except ValueError:
                return None
            claims = self._valid(token, self.app_tokens)
            return claims if claims and claims.get("username") == user and claims.get("application") else None
        return None

    def _route(self, handler, method: str, path: str, body: bytes):
        if path == "/" and method == "GET":  # pylon's root: the web portal
            return 200, {"Content-Type": "text/html; charset=utf-8"}, PORTAL_PAGE
        if not path.startswith("/rest-server/api/"):
            return error(404, "NoApiError", f"API {path} is not found.")
        route = path[len("/rest-server"):]
        if route == "/api/v2/info" and method == "GET":
            return json_reply(200, self.info)
        if route == "/api/v2/authn/basic/login" and method == "POST":
            return self._login(body)
        if not route.startswith(("/api/v2/jobs", "/api/v2/users", "/api/v2/virtual-clusters", "/api/v2/tokens")):
            return error(404, "NoApiError", f"API {route} is not found.")  # config/express.js: no router took it
        if not handler.headers.get("Authorization"):
            return error(401, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
        claims = self._caller(handler)
        if claims is None:
            return error(401, "UnauthorizedUserError", "Your token is invalid.")
        user = str(claims["username"])
        if route == "/api/v2/jobs" and method == "POST":
            return self._submit(user, handler.headers.get("Content-Type") or "", body)
        if route.startswith("/api/v2/jobs?") or (route == "/api/v2/jobs" and method == "GET"):
            return self._list(route)
        if route.startswith("/api/v2/jobs/"):
            return self._job(user, method, route)
        if route == "/api/v2/users" or route.startswith("/api/v2/users/"):
            if method != "GET" and claims.get("application"):  # checkNotApplication
                return error(403, "ForbiddenUserError", "Applications are not allowed to do this operation.")
            return self._users(user, method, route, body)
        if route == "/api/v2/virtual-clusters":
            return json_reply(200, {vc: _vc_info(self.vcs) for vc in self.vcs})
        if route == "/api/v2/tokens/application" and method == "POST":
            return self._application_token(user, claims)
        return error(404, "NoApiError", f"API {route} is not found.")

    def _login(self, body: bytes):
        """`controllers/v2/token.js` `get` after `tokenPostInputSchema`."""
        data = json.loads(body or b"{}")
        user, password = data.get("username"), data.get("password")
        if user not in self.users:
            return error(400, "NoUserError", f"User {user} is not found.")
        if self.users[user] != password:
            return error(400, "IncorrectPasswordError", "Password is incorrect.")
        with self.lock:
            self.logins += 1
            token = make_jwt(user, exp=int(time.time()) + TOKEN_DAYS * 86400 + self.logins)  # unique per login
            self.tokens[token] = user
        # `hasGitHubPAT` is the user's `extension.githubPAT`: absent for a user made by `createUser`, so not in the JSON
        return json_reply(200, {"user": user, "token": token, "admin": user in self.admins})

    def _application_token(self, user: str, claims: dict[str, Any]):
        """`routes/token.js` `POST /application` (mounted at `/api/v2/tokens`): `checkNotApplication`, then
        `models/token.js` `create(username, true)`, a JWT `{username, application: true}` without expiry; 200
        `{token, application: true}`."""
        if claims.get("application"):
            return error(403, "ForbiddenUserError", "Applications are not allowed to do this operation.")
        with self.lock:
            self.logins += 1
            token = make_jwt(user, application=True, exp=None) + f"{self.logins:04d}"
            self.app_tokens[token] = user
        return json_reply(200, {"token": token, "application": True})

    def _list(self, route: str):
        """`controllers/v2/job.js` `list`: comma lists of username, vc, state; `convertFrameworkSummary` items."""
        query = parse_qs(urlsplit(route).query)

        def wanted(key: str) -> set[str]:
            return set(",".join(query.get(key, [])).split(",")) - {""}

        names, vcs, states = wanted("username"), wanted("vc"), wanted("state")
        with self.lock:
            # controllers/v2/job.js `list`: "default order is submissionTime,DESC"
            newest_first = sorted(reversed(list(self.jobs.items())),  # the later of two in one millisecond first
                                  key=lambda item: -item[1]["jobStatus"].get("submissionTime", 0))
            return json_reply(200, [
                self._summary(job_id, j) for job_id, j in newest_first for s in [j["jobStatus"]]
                if (not names or s["username"] in names) and (not vcs or s["virtualCluster"] in vcs)
                and (not states or s["state"] in states)])

    def _summary(self, job_id: str, job: dict[str, Any]) -> dict[str, Any]:
        """`models/v2/job/k8s.js` `convertFrameworkSummary`: the job's row of the framework table."""
        s = job["jobStatus"]
        roles = self.roles.get(job_id, {})
        return {"debugId": job.get("debugId", "0" * 32), "name": job["name"], "username": s["username"],
                "state": s["state"], "subState": s.get("subState"), "executionType": s.get("executionType", "START"),
                "retries": s.get("retries", 0), "retryDetails": s.get("retryDetails", {"user": 0, "platform": 0,
                                                                                       "resource": 0}),
                "retryDelayTime": s.get("retryDelayTime"), "submissionTime": s.get("submissionTime", 0),
                "createdTime": s.get("createdTime"), "completedTime": s.get("completedTime"),
                "appExitCode": s.get("appExitCode"), "virtualCluster": s["virtualCluster"],
                "totalGpuNumber": self.gpus.get(job_id, 0), "totalTaskNumber": sum(roles.values()),
                "totalTaskRoleNumber": len(roles)}

    def _job(self, user: str, method: str, route: str):
        """`controllers/v2/job.js` `get` and `execute`."""
        job_id, _, tail = route[len("/api/v2/jobs/"):].partition("/")
        job_id = unquote(job_id)
        with self.lock:
            job = self.jobs.get(job_id)
        if job is None:
            return error(404, "NoJobError", f"Job {job_id} is not found.")
        if not tail and method == "GET":
            self._advance(job_id)
            return json_reply(200, self.jobs[job_id])
        if tail == "executionType" and method == "PUT":
            if job["jobStatus"]["username"] != user and user not in self.admins:
                return error(403, "ForbiddenUserError", f"User {user} is not allowed to execute job {job_id}.")
            self.set_state(job_id, "STOPPED", executionType="STOP")
            return json_reply(202, {"status": 202, "message": f"Execute job {job_id} successfully."})
        return error(404, "NoApiError", f"API {route} is not found.")

    def _user_object(self, name: str) -> dict[str, Any]:
        """`getUser`: the stored user without its password, plus `admin`, `virtualCluster`, `storageConfig`."""
        admin = name in self.admins
        groups = sorted(self.grants[name] | {DEFAULT_GROUP}) + ([ADMIN_GROUP] if admin else [])
        return {"username": name, "grouplist": groups, "email": "", "extension": {}, "admin": admin,
                "virtualCluster": sorted(self.vcs) if admin else sorted(self.grants[name] | {DEFAULT_GROUP}),
                "storageConfig": []}

    def _users(self, user: str, method: str, route: str, body: bytes):
        name = unquote(route[len("/api/v2/users/"):].rstrip("/")) if route.startswith("/api/v2/users/") else None
        if method == "GET" and name:
            if name not in self.users:  # controllers/v2/user.js getUser: 'Bad Request', not 'Not Found'
                return error(400, "NoUserError", f"User {name} is not found.")
            with self.lock:
                return json_reply(200, self._user_object(name))
        if name is not None or method not in ("POST", "PUT"):
            return error(404, "NoApiError", f"API {route} is not found.")
        data = json.loads(body or b"{}")
        fields = data.get("data", {}) if method == "PUT" else data
        problem = _invalid_user_fields(fields, creating=method == "POST")
        if problem:
            return error(400, "InvalidParametersError", problem)
        if user not in self.admins:
            return error(403, "ForbiddenUserError", "Non-admin is not allow to do this operation.")
        return self._create(fields) if method == "POST" else self._update(fields)

    def _create(self, fields: dict[str, Any]):
        """`createUser`: the VCs' groups must exist; `default` is always added."""
        name, vcs = fields["username"], list(fields.get("virtualCluster") or [])
        if any(vc not in self.vcs for vc in vcs):
            return error(404, "NoGroupError", f"No groups for vc: {','.join(vcs)}")
        with self.lock:
            if name in self.users:
                return error(409, "ConflictUserError", f"User name {name} already exists.")
            self.users[name], self.grants[name] = str(fields["password"]), set(vcs) | {DEFAULT_GROUP}
            if fields.get("admin"):
                self.admins.add(name)
        return json_reply(201, {"message": "User is created successfully"})

    def _update(self, fields: dict[str, Any]):
        """`basicAdminUserUpdate` with `patch`: only the fields given change."""
        name = fields["username"]
        if name not in self.users:
            return error(404, "NoUserError", f"User {name} not found.")
        vcs = fields.get("virtualCluster")
        if vcs is not None and any(vc not in self.vcs for vc in vcs):
            return error(400, "NoVirtualClusterError", f"Try to update nonexist: {','.join(vcs)}")
        with self.lock:
            if vcs is not None:
                self.grants[name] = set(vcs) | {DEFAULT_GROUP}
            if fields.get("password") is not None:
                self.users[name] = str(fields["password"])
                self.revoke(name)
        return json_reply(201, {"message": f"Update user {name} successfully"})

    def _advance(self, job_id: str) -> None:
        if not self.auto_advance or self.jobs[job_id]["jobStatus"]["state"] not in ("WAITING", "RUNNING"):
            return
        count = self.gets[job_id] = self.gets.get(job_id, 0) + 1
        if count >= self.auto_advance[1]:
            self.set_state(job_id, "SUCCEEDED")
        elif count >= self.auto_advance[0]:
            self.set_state(job_id, "RUNNING")

    def _submit(self, user: str, content_type: str, body: bytes):
        """`controllers/v2/job.js` `update` after `middlewares/v2/protocol.js` `submit` (a non-text body is no
        protocol) and `middlewares/v2/hived.js` `hivedValidate`; `models/v2/job/k8s.js` `put` checks the VC."""
        if not content_type.startswith("text/"):
            return error(400, "InvalidProtocolError", '[{"message":"should be object"}]')
        protocol = yaml.safe_load(body.decode())
        unknown = [{"keyword": "additionalProperties", "dataPath": f".taskRoles['{role}']", "message": "should NOT "
                    "have additional properties", "params": {"additionalProperty": key}}
                   for role, spec in protocol["taskRoles"].items() for key in spec if key not in TASK_ROLE_KEYS]
        if unknown:  # a task role's schema has `additionalProperties: false`; every error: `config/v2/protocol.js`
            return error(400, "InvalidProtocolError", json.dumps(unknown))  # builds its Ajv with allErrors: true
        name = protocol["name"]
        vc = (protocol.get("defaults") or {}).get("virtualCluster", "default")
        instances = sum(int(t.get("instances", 1)) for t in protocol["taskRoles"].values())
        if instances > 2:  # hivedValidate's quota check (the lab's VCs hold at most 2 cells), before the controller
            return error(400, "InvalidProtocolError",
                         f"Job requests {instances} SKUs, exceeds maximum 2 SKUs in VC {vc}.")
        job_id = f"{user}~{name}"
        with self.lock:
            if job_id in self.jobs:  # controllers/v2/job.js update: the name first ...
                return error(409, "ConflictJobError", f"Job {job_id} already exists.")
            if vc not in self.grants.get(user, set()) or vc not in self.vcs:  # ... then put's checkUserVC
                return error(403, "ForbiddenUserError", f"User {user} is not allowed to do operation in {vc}")
            now_ms = int(time.time() * 1000)
            self.roles[job_id] = {role: int(spec.get("instances", 1)) for role, spec in protocol["taskRoles"].items()}
            self.gpus[job_id] = sum(int(spec.get("instances", 1)) * int((spec.get("resourcePerInstance") or {})
                                                                        .get("gpu", 0))
                                    for spec in protocol["taskRoles"].values())
            self.jobs[job_id] = {  # models/v2/job/k8s.js convertFrameworkDetail of a Framework not yet started
                "debugId": "0" * 32, "name": name, "taskRoles": {},
                "jobStatus": {"username": user, "state": "WAITING", "subState": "AttemptCreationPending",
                              "executionType": "START", "retries": 0,
                              "retryDetails": {"user": 0, "platform": 0, "resource": 0}, "retryDelayTime": None,
                              "createdTime": now_ms, "completedTime": None, "appId": None, "appProgress": 0,
                              "appTrackingUrl": "", "appLaunchedTime": None, "appCompletedTime": None,
                              "appExitCode": None, "appExitSpec": None, "appExitDiagnostics": None,
                              "appExitMessages": None,
                              "appExitTriggerMessage": None, "appExitTriggerTaskRoleName": None,
                              "appExitTriggerTaskIndex": None, "appExitType": None, "virtualCluster": vc,
                              "submissionTime": now_ms},
            }
        if self.on_submit:
            self.on_submit(job_id)
        return json_reply(202, {"status": 202, "message": f"Update job {name} for user {user} successfully."})


def _vc_info(vcs: list[str]) -> dict[str, Any]:
    """`models/v2/virtual-cluster/k8s.js` `getVcList`: per VC its resources (`cpu, memory, gpu, vCores, GPUs`) used,
    guaranteed and total, and, "for compatibility", `capacity`, `maxCapacity`, `usedCapacity` in percent of the
    cluster; `dedicated` is false. The fake gives each VC one GPU-cell of the lab's SKU (2 CPUs, 4096 MB)."""
    def resources(cells: int) -> dict[str, int]:
        return {"cpu": 2 * cells, "memory": 4096 * cells, "gpu": cells, "vCores": 2 * cells, "GPUs": cells}
    share = 100 // max(len(vcs), 1)
    return {"capacity": share, "usedCapacity": 0, "dedicated": False, "resourcesUsed": resources(0),
            "resourcesGuaranteed": resources(1), "resourcesTotal": resources(1), "maxCapacity": share}


def _invalid_user_fields(fields: Any, *, creating: bool) -> str | None:
    """`middlewares/parameter.js` `validate` with `config/v2/user.js`'s schemas (Joi 13's wording): a username of
    word characters, dots and dashes; a password of at least 6 characters, required to create."""
    if not isinstance(fields, dict):
        return '"value" must be an object'
    name, password = fields.get("username"), fields.get("password")
    if name is None:
        return 'child "username" fails because ["username" is required]'
    if not isinstance(name, str) or not re.match(r"^[\w.-]+$", name):
        return f'child "username" fails because ["username" with value "{name}" fails to match the username pattern]'
    if password is None and creating:
        return 'child "password" fails because ["password" is required]'
    if password is not None and len(str(password)) < 6:
        return 'child "password" fails because ["password" length must be at least 6 characters long]'
    return None
