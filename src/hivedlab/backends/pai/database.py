"""Does the rest-server reach its database? The job list, asked with a short timeout, says.

OpenPAI v1.2.0's rest-server (microsoft/pai, tag v1.2.0, `src/rest-server/src/`) reads jobs from PostgreSQL:
`models/v2/job/k8s.js` `list` and `get` query the `Framework` table through `utils/dbUtils.js` (the
database-controller's SDK, sequelize over `pg`). `/api/v2/info`, the logins and the users (Kubernetes secrets) need no
database, so a rest-server whose database client never connects answers them and leaves a job list's request waiting
for a connection that never comes: no reply, no error. That is what the rest-server's own `pg ^7.17.1` does on Node
14 and later (brianc/node-postgres#2282, the maintainer: "pg@7.x doesn't work on node 14"; the v1.2.0 image ran Node
10; pg 8.0.3 fixed it); `up`, `status` and `doctor` ask, and name the cause within `DATABASE_TIMEOUT_S`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hivedlab.backends.pai.rest import PaiClient
from hivedlab.backends.pai.rest_errors import NO_ANSWER, PaiError

DATABASE_TIMEOUT_S = 8.0  # a job list from an idle database answers in milliseconds
PG_FIX_VERSION = "8.3.2"  # what v1.2.0's yarn.lock resolves for the database SDK's `pg ^8.2.1`
PG_FIX = f"npm install --omit=dev --install-links --ignore-scripts pg@{PG_FIX_VERSION}"


@dataclass(frozen=True)
class DatabaseStall:
    """A rest-server that answers `/api/v2/info` but not its job list: what was seen and what to do (en, zh)."""

    seen_en: str
    seen_zh: str
    fix_en: str
    fix_zh: str

    def error(self) -> PaiError:
        """The one line `up` and `status` print."""
        return PaiError(f"{self.seen_en}; {self.fix_en}", f"{self.seen_zh}；{self.fix_zh}")


def database_stall(url: str, token: str, *, rest_server_folder: tuple[str, str] | None = None,
                   timeout_s: float | None = None) -> DatabaseStall | None:
    """None when the job list answers (whatever it answers: a refused token is another check's finding); the stall,
    naming the cause and the fix, when the rest-server accepts the request and gives no answer within `timeout_s`.
    `rest_server_folder`: the rehearsal's rest-server (en, zh: a path, or words naming it), whose fix is its `pg`;
    None: a deployed cluster's.
    `timeout_s`: default `DATABASE_TIMEOUT_S`."""
    timeout_s = DATABASE_TIMEOUT_S if timeout_s is None else timeout_s
    client = PaiClient(url, token, timeout_s=timeout_s, retries=0)
    try:
        client.request("GET", "/api/v2/jobs?state=RUNNING")
    except PaiError as exc:
        return stall(client.base_url, timeout_s, rest_server_folder) if exc.code == NO_ANSWER else None
    finally:
        client.close()
    return None


def rehearsal_stall(url: str, admin_token_file: Path, rest_server: Path) -> DatabaseStall | None:
    """`database_stall` for the rehearsal cluster: asked with its admin's token, the fix named in its own
    rest-server folder."""
    token = admin_token_file.read_text(encoding="utf-8").strip()
    return database_stall(url, token, rest_server_folder=(str(rest_server), str(rest_server)))


def stall(base_url: str, timeout_s: float, rest_server_folder: tuple[str, str] | None) -> DatabaseStall:
    seen_en = (f"the rest-server at {base_url} answers /api/v2/info but not its job list (GET /api/v2/jobs, read "
               f"from its PostgreSQL database) within {timeout_s:g} s: it cannot reach its database")
    seen_zh = (f"{base_url} 的 rest-server 对 /api/v2/info 有应答，但其任务列表（GET /api/v2/jobs，读自 PostgreSQL "
               f"数据库）在 {timeout_s:g} 秒内没有应答：它连不上自己的数据库")
    if rest_server_folder is None:
        return DatabaseStall(seen_en, seen_zh, "check that PostgreSQL and the database-controller run (`kubectl get "
                             "pods` in the dev-box) and read the rest-server's log",
                             "请在 dev-box 中用 `kubectl get pods` 确认 PostgreSQL 和 database-controller 在运行，"
                             "并查看 rest-server 的日志")
    return DatabaseStall(seen_en, seen_zh,
                         f"v1.2.0's own pg 7 never connects on Node 14 or later: run `{PG_FIX}` in "
                         f"{rest_server_folder[0]}, then `hivedlab rehearsal down` and `up` (docs/rehearsal.md)",
                         f"v1.2.0 自带的 pg 7 在 Node 14 及以上版本永远连不上：请在 {rest_server_folder[1]} 中运行 "
                         f"`{PG_FIX}`，再执行 `hivedlab rehearsal down` 和 `up`（docs/rehearsal.md）")
