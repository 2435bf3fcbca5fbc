"""A fake OpenPAI v1.2.0 rest-server (docs/openpai-model.md#the-rest-api) served over real HTTP on 127.0.0.1.

Stateful enough for the client and the real backend: users with passwords and VCs, JWT-shaped tokens, job
submission (text/yaml, 202 / 400 / 403 / 409), job detail, stop, list, virtual clusters, the user API (read,
create, patch; VCs granted only when the deployed config has them), revoked and expiring tokens. Faults are scripted:
`fail_next(method, path_prefix, reply)` answers the next matching request with `reply` (None drops the connection).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.support.local import LocalServer, json_reply


def make_jwt(user: str, application: bool = False, exp: int | None = None) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    claims: dict[str, Any] = {"username": user, "admin": user == "admin"}
    if application:
        claims["application"] = True
    if exp is not None:
        claims.update(iat=exp - 7 * 86400, exp=exp)
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


class FakePai:
    def __init__(self, serve, vcs=("default", "vc1")) -> None:
        self.lock = threading.Lock()
        self.users = {"admin": "admin-password", "alice": "alice-pass", "bob": "bob-pass1"}
        self.grants = {u: set(vcs) for u in self.users}
        self.vcs = list(vcs)
        self.tokens = {make_jwt(u): u for u in self.users}
        self.app_tokens = {make_jwt(u, application=True): u for u in self.users}  # Basic auth, job calls only
        self.info = {"name": "PAI RESTful API", "version": "v1.2.0", "launcherType": "k8s", "authnMethod": "basic"}
        self.jobs: dict[str, dict[str, Any]] = {}
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

    def set_state(self, job_id: str, state: str, **extra: Any) -> None:
        with self.lock:
            self.jobs[job_id]["jobStatus"].update(state=state, **extra)

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
        """The user's login token stops working (as after a password reset or 7 days)."""
        self.tokens = {tok: u for tok, u in self.tokens.items() if u != user}

    def _user(self, handler, route: str) -> str | None:
        auth = handler.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            return self.tokens.get(auth[len("Bearer "):])
        if auth.startswith("Basic ") and route.startswith("/api/v2/jobs"):  # application tokens: job calls only
            user, _, token = base64.b64decode(auth[len("Basic "):]).decode().partition(":")
            return user if self.app_tokens.get(token) == user else None
        return None

    def _route(self, handler, method: str, path: str, body: bytes):
        if path == "/" and method == "GET":  # pylon's root: the web portal
            return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<!DOCTYPE html><title>Platform for AI</title>"
        if not path.startswith("/rest-server/api/"):
            return json_reply(404, {"code": "NoApiError", "message": f"API {path} is not found."})
        route = path[len("/rest-server"):]
        if route == "/api/v2/info" and method == "GET":
            return json_reply(200, self.info)
        if route == "/api/v2/authn/basic/login" and method == "POST":
            data = json.loads(body or b"{}")
            user, password = data.get("username"), data.get("password")
            if user not in self.users:
                return json_reply(400, {"code": "NoUserError", "message": f"User {user} is not found."})
            if self.users[user] != password:
                return json_reply(400, {"code": "IncorrectPasswordError", "message": "Password is incorrect."})
            with self.lock:
                self.logins += 1
                token = make_jwt(user, exp=int(time.time()) + 7 * 86400 + self.logins)  # 7 days, unique per login
                self.tokens[token] = user
            return json_reply(200, {"user": user, "token": token, "admin": user in self.admins})
        user = self._user(handler, route)
        if user is None:
            message = "Your token is invalid." if handler.headers.get("Authorization") else \
                "Guest is not allowed to do this operation."
            return json_reply(401, {"code": "UnauthorizedUserError", "message": message})
        if route == "/api/v2/jobs" and method == "POST":
            return self._submit(user, handler.headers.get("Content-Type") or "", body)
        if route.startswith("/api/v2/jobs?") or (route == "/api/v2/jobs" and method == "GET"):
            query = parse_qs(urlsplit(route).query)
            names = set(",".join(query.get("username", [])).split(",")) - {""}
            states = set(",".join(query.get("state", [])).split(",")) - {""}
            with self.lock:
                return json_reply(200, [dict(name=j["name"], username=j["jobStatus"]["username"],
                                             state=j["jobStatus"]["state"],
                                             virtualCluster=j["jobStatus"]["virtualCluster"])
                                        for j in self.jobs.values()
                                        if (not names or j["jobStatus"]["username"] in names)
                                        and (not states or j["jobStatus"]["state"] in states)])
        if route.startswith("/api/v2/jobs/"):
            rest = route[len("/api/v2/jobs/"):]
            job_id, _, tail = rest.partition("/")
            job_id = job_id.replace("%7E", "~")
            with self.lock:
                job = self.jobs.get(job_id)
            if job is None:
                return json_reply(404, {"code": "NoJobError", "message": f"Job {job_id} is not found."})
            if not tail and method == "GET":
                self._advance(job_id)
                return json_reply(200, self.jobs[job_id])
            if tail == "executionType" and method == "PUT":
                if job["jobStatus"]["username"] != user and user != "admin":
                    return json_reply(403, {"code": "ForbiddenUserError",
                                            "message": f"User {user} is not allowed to do operation."})
                self.set_state(job_id, "STOPPED", executionType="STOP")
                return json_reply(202, {"status": 202, "message": f"Execute job {job_id} successfully."})
        if route == "/api/v2/users" or route.startswith("/api/v2/users/"):
            return self._users(user, method, route, body)
        if route == "/api/v2/virtual-clusters":
            return json_reply(200, {vc: {"capacity": 50, "resourcesTotal": {"gpu": 1}} for vc in self.vcs})
        return json_reply(404, {"code": "NoApiError", "message": f"API {route} is not found."})

    def _user_object(self, name: str) -> dict[str, Any]:
        return {"username": name, "grouplist": sorted(self.grants[name]) + (["admingroup"] if name in self.admins
                                                                              else []),
                "email": "", "extension": {}, "admin": name in self.admins,
                "virtualCluster": sorted(self.grants[name]), "storageConfig": []}

    def _users(self, user: str, method: str, route: str, body: bytes):
        name = route[len("/api/v2/users/"):] if route.startswith("/api/v2/users/") else None
        if method == "GET" and name:
            if user != name and user not in self.admins:
                return json_reply(403, {"code": "ForbiddenUserError",
                                        "message": "Non-admin is not allow to do this operation."})
            if name not in self.users:
                return json_reply(404, {"code": "NoUserError", "message": f"User {name} is not found."})
            with self.lock:
                return json_reply(200, self._user_object(name))
        if name is not None or method not in ("POST", "PUT"):
            return json_reply(404, {"code": "NoApiError", "message": f"API {route} is not found."})
        if user not in self.admins:
            return json_reply(403, {"code": "ForbiddenUserError",
                                    "message": "Non-admin is not allow to do this operation."})
        data = json.loads(body or b"{}")
        fields = data.get("data", {}) if method == "PUT" else data
        name, password, vcs = fields.get("username"), fields.get("password"), fields.get("virtualCluster")
        if not isinstance(name, str) or not re.match(r"^[\w.-]+$", name) or (
                password is not None and len(str(password)) < 6) or (method == "POST" and password is None):
            return json_reply(400, {"code": "InvalidParametersError",
                                    "message": "\"password\" length must be at least 6"})
        for vc in vcs or []:
            if vc not in self.vcs:  # the VC's group exists only while the deployed config defines the VC
                return json_reply(404, {"code": "NoGroupError", "message": f"Group {vc} is not found."})
        with self.lock:
            if method == "POST":
                if name in self.users:
                    return json_reply(409, {"code": "ConflictUserError",
                                            "message": f"User name {name} already exists."})
                self.users[name], self.grants[name] = str(password), set(vcs or ["default"])
                return json_reply(201, {"message": "User is created successfully"})
            if name not in self.users:
                return json_reply(404, {"code": "NoUserError", "message": f"User {name} is not found."})
            if password is not None:
                self.users[name] = str(password)
            if vcs is not None:
                self.grants[name] = set(vcs)
            return json_reply(201, {"message": f"Update user {name} successfully."})

    def _advance(self, job_id: str) -> None:
        if not self.auto_advance or self.jobs[job_id]["jobStatus"]["state"] not in ("WAITING", "RUNNING"):
            return
        count = self.gets[job_id] = self.gets.get(job_id, 0) + 1
        if count >= self.auto_advance[1]:
            self.set_state(job_id, "SUCCEEDED")
        elif count >= self.auto_advance[0]:
            self.set_state(job_id, "RUNNING")

    def _submit(self, user: str, content_type: str, body: bytes):
        if not content_type.startswith("text/"):
            return json_reply(400, {"code": "InvalidProtocolError", "message": '[{"message":"should be object"}]'})
        protocol = yaml.safe_load(body.decode())
        name = protocol["name"]
        vc = (protocol.get("defaults") or {}).get("virtualCluster", "default")
        if vc not in self.grants.get(user, set()) or vc not in self.vcs:
            return json_reply(403, {"code": "ForbiddenUserError",
                                    "message": f"User {user} is not allowed to do operation in {vc}"})
        job_id = f"{user}~{name}"
        with self.lock:
            if job_id in self.jobs:
                return json_reply(409, {"code": "ConflictJobError", "message": f"Job {job_id} already exists."})
            instances = sum(int(t.get("instances", 1)) for t in protocol["taskRoles"].values())
            if instances > 2:
                return json_reply(400, {"code": "InvalidProtocolError",
                                        "message": f"Job requests {instances} SKUs, exceeds maximum 2 SKUs "
                                                   f"in VC {vc}."})
            self.jobs[job_id] = {
                "debugId": "0" * 32, "name": name, "taskRoles": {},
                "jobStatus": {"username": user, "state": "WAITING", "subState": "AttemptCreationPending",
                              "executionType": "START", "retries": 0, "virtualCluster": vc},
            }
        if self.on_submit:
            self.on_submit(job_id)
        return json_reply(202, {"status": 202, "message": f"Update job {name} for user {user} successfully."})
