"""A fake OpenPAI v1.2.0 rest-server that cannot reach its database (`tests.support.fakepai` otherwise).

v1.2.0's rest-server reads jobs from PostgreSQL: `models/v2/job/k8s.js` `list` and `get` query the `Framework` table
through `utils/dbUtils.js` (sequelize over `pg`); `/api/v2/info` (`routes/index.js`), the logins and the users
(Kubernetes secrets, `models/v2/user.js`) do not. With its own `pg ^7.17.1` on Node 14 or later the client's
`connect()` never resolves (brianc/node-postgres#2282), so a job request is accepted and never answered, while the
rest answers as usual. Here: every `GET /api/v2/jobs…` waits until `release` is set (or `hang_s` passes), then
answers as the healthy fake does.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

from tests.support.fakepai import FakePai


class StalledPai(FakePai):
    def __init__(self, serve, hang_s: float = 30.0, **kwargs) -> None:
        self.release, self.hang_s = threading.Event(), hang_s
        super().__init__(serve, **kwargs)

    def handle(self, handler, method: str, path: str, body: bytes):
        if method == "GET" and urlsplit(path).path.startswith("/rest-server/api/v2/jobs"):
            self.release.wait(self.hang_s)
        return super().handle(handler, method, path, body)
