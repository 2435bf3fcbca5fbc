"""Where OpenPAI's rest-server is: the address as given, the rest-server behind an address without a path (pylon's
`/rest-server`, or the address itself), the web portal beside it, and the version it must be (v1.2.0)."""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit

import requests

from hivedlab.backends.pai.rest_errors import DIRECT_PORT, PaiError, RestReply

MODELLED_VERSION = "v1.2.0"


def modelled_version(info: dict[str, Any], url: str) -> str:
    """The rest-server's version from `GET /api/v2/info`; "" when it does not say (v1.2.0 answers `null` when it
    cannot read the ConfigMap pai-version, src/rest-server/src/config/paiConfig.js). Another version than
    v1.2 is a `PaiError`."""
    version = info.get("version")
    if version is None or version == "":
        return ""
    if not str(version).startswith("v1.2"):
        raise PaiError(f"the rest-server at {url} is OpenPAI {version}; hivedlab targets {MODELLED_VERSION}",
                       f"{url} 的 rest-server 版本为 {version}，hivedlab 面向 {MODELLED_VERSION}")
    return str(version)


def portal_url(pai_url: str) -> str:
    """The web portal is pylon's root: http://<master>/ (also when the REST URL is the direct port 9186)."""
    parts = urlsplit(normalize_base_url(pai_url))
    netloc = (parts.hostname or "") if parts.port == DIRECT_PORT else parts.netloc
    return f"{parts.scheme}://{netloc}/"


def fetch_portal(pai_url: str, timeout_s: float = 10.0) -> tuple[str, int, str]:
    """The portal's address, HTTP status and Content-Type; requests' errors when it does not answer."""
    url = portal_url(pai_url)
    response = requests.get(url, timeout=timeout_s)
    return url, response.status_code, response.headers.get("Content-Type", "")


def normalize_base_url(url: str) -> str:
    """The address as given, checked, without a trailing slash: `10.0.1.2` -> `http://10.0.1.2`. An address without
    a path is a machine, on which `PaiClient` finds the rest-server itself (`PYLON_PREFIX`, then the root)."""
    text = url.strip().rstrip("/")
    parts = urlsplit(text if "://" in text else f"http://{text}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PaiError(f"not an OpenPAI URL: {url!r} (expected http://<master>)",
                       f"不是 OpenPAI 地址：{url!r}（应为 http://<master 的 IP>）")
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


PYLON_PREFIX = "/rest-server"  # pylon v1.2.0 sends `^/rest-server/api(.*)$` to the rest-server's `/api$1`
# (src/pylon/deploy/pylon-config/location.conf.template) and everything else to the web portal
_ANNOUNCED: set[str] = set()  # the addresses whose rest-server this process has named (once each)


def answers_as_rest_server(reply: RestReply, base: str) -> bool:
    """`GET <base>/api/v2/info` answered as an OpenPAI rest-server (the web portal answers pylon's other paths, in
    HTML); a rest-server of another version than v1.2 is a `PaiError` (`modelled_version`)."""
    body = reply.body
    if reply.status != 200 or not isinstance(body, dict) or not {"name", "version", "launcherType"} & set(body):
        return False
    modelled_version(body, base)
    return True


def announce(root: str, base: str) -> None:
    """Say once which rest-server an address without a path led to."""
    if root in _ANNOUNCED:
        return
    _ANNOUNCED.add(root)
    how, how_zh = ("through pylon", "经由 pylon") if base.endswith(PYLON_PREFIX) else ("itself", "直接访问")
    print(f"hivedlab: OpenPAI's rest-server: {base} ({how}) / 使用 rest-server：{base}（{how_zh}）", file=sys.stderr)
