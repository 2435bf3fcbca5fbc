"""A rest-server that answers /api/v2/info but not its job list is named, with its cause and fix, within the probe's
timeout — over real HTTP against `tests.support.pai_database.StalledPai` (v1.2.0's rest-server whose `pg` never
connects: `models/v2/job/k8s.js` `list` waits for the database, `/api/v2/info` does not)."""

from __future__ import annotations

import time

from hivedlab.backends.pai import database
from hivedlab.backends.pai.database import DATABASE_TIMEOUT_S, database_stall
from tests.support.fakepai import FakePai, error
from tests.support.pai_database import StalledPai


def test_the_probe_names_a_rest_server_that_never_answers_its_job_list(serve):
    pai = StalledPai(serve)
    try:
        started = time.monotonic()
        found = database_stall(pai.url, pai.token("admin"), timeout_s=0.5,
                               rest_server_folder=("/opt/programs/rest-server", "/opt/programs/rest-server"))
        took = time.monotonic() - started
    finally:
        pai.release.set()
    assert found is not None and took < 3
    assert found.seen_en == (f"the rest-server at {pai.url} answers /api/v2/info but not its job list (GET "
                             "/api/v2/jobs, read from its PostgreSQL database) within 0.5 s: it cannot reach its "
                             "database")
    assert found.fix_en == ("v1.2.0's own pg 7 never connects on Node 14 or later: run `npm install --omit=dev "
                            "--install-links --ignore-scripts pg@8.3.2` in /opt/programs/rest-server, then "
                            "`hivedlab rehearsal down` and `up` (docs/rehearsal.md)")
    assert "pg@8.3.2" in found.fix_zh and "连不上自己的数据库" in found.seen_zh
    assert str(found.error()) == f"{found.seen_en}; {found.fix_en} / {found.seen_zh}；{found.fix_zh}"
    assert [r["path"] for r in pai.requests][-1] == "/rest-server/api/v2/jobs?state=RUNNING"


def test_a_deployed_clusters_fix_is_its_database_pods(serve):
    pai = StalledPai(serve)
    try:
        found = database_stall(pai.url, pai.token("admin"), timeout_s=0.3)
    finally:
        pai.release.set()
    assert found is not None and "`kubectl get pods`" in found.fix_en and "pg@" not in found.fix_en


def test_a_job_list_that_answers_is_no_stall_whatever_it_answers(serve):
    pai = FakePai(serve)
    assert database_stall(pai.url, pai.token("admin"), timeout_s=2) is None
    pai.fail_next("GET", "/api/v2/jobs", error(401, "UnauthorizedUserError", "Your token is invalid."))
    assert database_stall(pai.url, "a-stale-token", timeout_s=2) is None  # the token check's finding, not this one
    pai.fail_next("GET", "/api/v2/jobs", None)  # a dropped connection is not a stall either
    assert database_stall(pai.url, pai.token("admin"), timeout_s=2) is None


def test_the_default_timeout_names_it_within_ten_seconds():
    """`up`, `status` and `doctor` name the stall within 10 s (docs/rehearsal.md): the probe's one request."""
    assert database.DATABASE_TIMEOUT_S == DATABASE_TIMEOUT_S < 10
