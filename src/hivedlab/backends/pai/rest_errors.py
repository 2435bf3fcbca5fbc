"""What went wrong with a rest-server call, in one sentence (en / zh) that names the cause and what to do.

Two kinds (docs/openpai-model.md#error-replies): a reply with an error status — `explain`, which names the HTTP status
and the rest-server's error `code` (`{"code", "message"}` from v1.2.0's `utils/error.js` and `config/express.js`) — and
a request that never got a reply — `transport_error`, which tells a bad header (a token with a line break), TLS, DNS,
a refused connection, a timeout and a dropped connection apart. Tokens never appear in a message.
"""

from __future__ import annotations

import datetime as dt
import errno
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests

from hivedlab.basics.errors import HivedlabError

TOKEN_ENV = "HIVEDLAB_PAI_TOKEN"
DIRECT_PORT = 9186  # rest-server's hostPort; through pylon the prefix is /rest-server (docs/openpai-model.md#tokens)
NO_ANSWER = "NoAnswer"  # the `code` of a request the rest-server accepted and never answered (not one of its codes)


class PaiError(HivedlabError):
    """A rest-server failure the user must act on; the message is one line in English and Chinese."""

    def __init__(self, en: str, zh: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(f"{en} / {zh}")
        self.en, self.zh, self.status, self.code = en, zh, status, code


@dataclass(frozen=True)
class RestReply:
    """A rest-server reply: HTTP status, decoded body (JSON value or text), and the error `code` if any."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def code(self) -> str | None:
        return self.body.get("code") if isinstance(self.body, dict) else None

    @property
    def message(self) -> str:
        if isinstance(self.body, dict):
            return str(self.body.get("message", ""))
        return "" if self.body is None else str(self.body)


@dataclass(frozen=True)
class TokenInfo:
    """Whose token a client sends and where it came from (words, never the token), and when it expires."""

    source_en: str = TOKEN_ENV
    source_zh: str = TOKEN_ENV
    expires: dt.datetime | None = None


def _when(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _unauthorized(message: str, token: TokenInfo | None, now: dt.datetime) -> tuple[str, str]:
    """401 `UnauthorizedUserError`: v1.2.0's `middlewares/token.js` `check` answers a missing header "Guest is not
    allowed…" and an expired, forged or revoked token alike "Your token is invalid.", so the token's own `exp` is what
    tells an expired one apart."""
    info = token or TokenInfo()
    if "Guest" in message:
        return (f"no token was sent: set {info.source_en} (log in to get one)",
                f"没有发送 token：请设置 {info.source_zh}（登录即可获得）")
    if info.expires is not None and info.expires <= now:
        return (f"{info.source_en} expired at {_when(info.expires)} (login tokens last 7 days): log in again and "
                f"replace {info.source_en}",
                f"{info.source_zh} 已于 {_when(info.expires)} 过期（登录 token 有效期 7 天）：请重新登录并替换 "
                f"{info.source_zh}")
    return (f"{info.source_en} was refused (not issued by this cluster, revoked by a password change, or mistyped): "
            f"log in again and replace {info.source_en}",
            f"{info.source_zh} 被拒绝（不是本集群签发的、因改密码被吊销或有误）：请重新登录并替换 {info.source_zh}")


def explain(reply: RestReply, what: str, token: TokenInfo | None = None, now: dt.datetime | None = None) -> PaiError:
    """Turn an error reply into one sentence that says what to do and ends with the HTTP status and the server's error
    code (docs/openpai-model.md#error-replies; the same page covers tokens and admission errors)."""
    code, message, status = reply.code, reply.message, reply.status
    short = message.splitlines()[0][:300] if message else ""
    table: dict[str | None, tuple[str, str]] = {
        "IncorrectPasswordError": ("wrong password: check it (the quick-start admin's default is admin-password)",
                                   "密码错误：请检查密码（quick-start 的 admin 默认密码是 admin-password）"),
        "NoUserError": (f"{short} Ask the admin to create the user (manual step 3.1: Administration -> "
                        "User Management)",
                        f"{short} 请管理员在 Administration -> User Management 中创建该用户（手册 3.1）"),
        "ForbiddenUserError": (
            f"{short}: the VC does not exist in the deployed HiveD config or the user is not granted it; check "
            "`hivedlab scheduler-config` was applied and grant the VC in User Management",
            f"{short}：该 VC 不在已部署的 HiveD 配置中或用户无权使用；请确认已应用 `hivedlab scheduler-config`，并在"
            "用户管理中授权该 VC"),
        "ConflictJobError": (
            f"{short} Job names can never be reused on OpenPAI: run again (hivedlab makes new unique names) or "
            "resume the run that submitted it",
            f"{short} OpenPAI 上任务名不能重复使用：请重新运行（hivedlab 会生成新的唯一名字）或继续之前的运行"),
        "NoJobError": (f"{short} Check the job name and user", f"{short} 请检查任务名和用户名"),
        "NoApiError": (
            f"{short} This URL is not an OpenPAI v1.2.0 rest-server: use http://<master>/rest-server or "
            f"http://<master>:{DIRECT_PORT}",
            f"{short} 该地址不是 OpenPAI v1.2.0 的 rest-server：请使用 http://<master>/rest-server 或 "
            f"http://<master>:{DIRECT_PORT}"),
        "NoGroupError": (f"{short}: the VC is not in the deployed HiveD config; apply the config that defines it "
                         "(`hivedlab scheduler-config`) and try again",
                         f"{short}：该 VC 不在已部署的 HiveD 配置中；请先应用定义它的配置"
                         "（`hivedlab scheduler-config`）后重试"),
        "InvalidProtocolError": (f"the job protocol was rejected: {short}", f"任务配置被拒绝：{short}"),
        "InvalidParametersError": (f"invalid parameters: {short}", f"参数无效：{short}"),
    }
    table["NoVirtualClusterError"] = table["NoGroupError"]
    if status == 429:
        en, zh = ("the rest-server's rate limit was hit (60 submissions per hour per user, 60 job lists per "
                  "minute): wait a few minutes and resume the run",
                  "触发了 rest-server 的限流（每用户每小时 60 次提交、每分钟 60 次列表）：请等几分钟后继续运行")
    elif code == "UnauthorizedUserError" or (status == 401 and code is None):
        en, zh = _unauthorized(message, token, now or dt.datetime.now(dt.timezone.utc))
    elif code == "ForbiddenUserError" and "Non-admin" in message:
        en, zh = (f"{short}: this needs an OpenPAI admin's token; log in as admin and use that token",
                  f"{short}：这需要 OpenPAI 管理员的 token；请以 admin 登录并使用其 token")
    elif code == "ForbiddenUserError" and "Applications are not allowed" in message:
        en, zh = (f"{short}: an application token cannot do this; use a login token (log in once)",
                  f"{short}：应用 token 不能做这件事；请使用登录得到的 token")
    elif code == "ForbiddenUserError" and " in " not in message:
        en, zh = (f"{short}: only the job's owner or an admin may do this",
                  f"{short}：只有任务的所有者或管理员可以这样做")
    elif code in table:
        en, zh = table[code]
    elif status == 500 and ("property 'gpu'" in message or "reading 'gpu'" in message):
        # docs/openpai-model.md#admission-errors: an unknown skuType crashes the rest-server instead of its friendly
        # message
        en, zh = ("the job's skuType is not in the deployed HiveD config (rest-server 500 \"Cannot read property "
                  "'gpu'\"): switch the scheduler config with `hivedlab scheduler-config` or fix the job's skuType",
                  "任务的 skuType 不在已部署的 HiveD 配置中（rest-server 500）：请用 `hivedlab scheduler-config` "
                  "切换调度配置或修改任务的 skuType")
    elif status == 500 and "unacceptable kind of an object to dump" in message:
        # docs/openpai-model.md#admission-errors: a gang job without `instances` under HiveD
        en, zh = ("the job omits `instances` in a task role, which the rest-server cannot handle for gang jobs under "
                  "HiveD (500): add `instances: 1`",
                  "任务的某个 taskRole 省略了 `instances`，HiveD 下的 gang 任务会导致 rest-server 500：请加上 "
                  "`instances: 1`")
    elif status >= 500:
        en, zh = (f"the rest-server failed ({short or 'no message'}): check that rest-server and hivedscheduler run "
                  "(`kubectl get pods` in the dev-box) and try again",
                  "rest-server 出错：请在 dev-box 中用 `kubectl get pods` 确认 rest-server 和 hivedscheduler "
                  "正在运行后重试")
    else:
        en, zh = (f"unexpected reply: {short or 'no message'}; check the address is the rest-server's",
                  f"意外的回复：{short or '无消息'}；请确认地址是 rest-server 的")
    where = f"HTTP {status}" + (f" {code}" if code else "")
    return PaiError(f"{what}: {en} ({where})", f"{what}：{zh}（{where}）", status, code)


# ------------------------------------------------------------------ no reply at all


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, its `reason`s (urllib3's MaxRetryError), args and causes, outermost first."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        item = todo.pop(0)
        if any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [x for x in (getattr(item, "reason", None), item.__cause__, item.__context__, *item.args)
                 if isinstance(x, BaseException)]
    return seen


def _is_dns(causes: list[BaseException]) -> bool:
    names = {type(c).__name__ for c in causes}
    return "NameResolutionError" in names or any(isinstance(c, socket.gaierror) for c in causes)


def _is_refused(causes: list[BaseException]) -> bool:
    return any(isinstance(c, ConnectionRefusedError) or getattr(c, "errno", None) == errno.ECONNREFUSED
               for c in causes) or any("Connection refused" in str(c) for c in causes)


def transport_error(base_url: str, exc: requests.RequestException, timeout_s: float | None = None) -> PaiError:
    """A request that got no reply, by its real cause: what happened and what to do."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or base_url, parts.port or (443 if parts.scheme == "https" else 80)
    check = f"`curl {base_url}/api/v2/info`"
    causes = _causes(exc)
    if isinstance(exc, requests.exceptions.InvalidHeader):
        return PaiError(
            "the request was not sent: a header is invalid (the token holds a line break or another character a "
            "header cannot carry, as `echo $TOKEN > file` leaves one): write the token without it, e.g. `printf %s "
            "\"$TOKEN\" > file`",
            "请求没有发出：请求头无效（token 中含有换行等请求头不能携带的字符，`echo $TOKEN > 文件` 就会留下换行）："
            "请去掉它重新写入，例如 `printf %s \"$TOKEN\" > 文件`")
    if isinstance(exc, requests.exceptions.SSLError) or any(isinstance(c, ssl.SSLError) for c in causes):
        return PaiError(
            f"the TLS handshake with {host}:{port} failed: a lab cluster's pylon serves plain HTTP, so use "
            f"http://{host}, or give the https URL whose certificate this machine trusts",
            f"与 {host}:{port} 的 TLS 握手失败：实验集群的 pylon 提供的是 HTTP，请使用 http://{host}，"
            "或使用本机信任其证书的 https 地址")
    if _is_dns(causes):
        return PaiError(
            f"the name {host} cannot be resolved (DNS): use the master's IP address from the inventory, or fix the "
            "name in /etc/hosts",
            f"无法解析主机名 {host}（DNS）：请使用清单中 master 的 IP 地址，或在 /etc/hosts 中修正该名字")
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return PaiError(
            f"connecting to {host}:{port} timed out{_after(timeout_s)}: the address may be wrong or a firewall drops "
            f"the packets; check the master's IP and that port {port} is open ({check})",
            f"连接 {host}:{port} 超时{_after_zh(timeout_s)}：地址可能有误或防火墙丢弃了数据包；"
            f"请检查 master 的 IP 以及 {port} 端口是否开放（{check}）")
    if isinstance(exc, requests.Timeout):
        return PaiError(
            f"the rest-server at {base_url} accepted the connection but did not answer{_after(timeout_s)}: check "
            "that rest-server and its database run (`kubectl get pods` in the dev-box) and try again",
            f"{base_url} 的 rest-server 接受了连接但没有应答{_after_zh(timeout_s)}：请在 dev-box 中用 `kubectl get "
            "pods` 确认 rest-server 及其数据库在运行后重试", code=NO_ANSWER)
    if _is_refused(causes):
        return PaiError(
            f"{host}:{port} refused the connection: nothing listens there; check the address and port (pylon: 80, "
            f"rest-server: {DIRECT_PORT}) and that the cluster runs ({check})",
            f"{host}:{port} 拒绝连接：该端口没有服务在监听；请检查地址和端口（pylon 为 80，rest-server 为 "
            f"{DIRECT_PORT}）以及集群是否在运行（{check}）")
    if isinstance(exc, requests.ConnectionError):
        return PaiError(
            f"the connection to {base_url} was dropped before a reply: the rest-server or pylon may be restarting; "
            f"wait a minute and try again ({check})",
            f"与 {base_url} 的连接在应答前断开：rest-server 或 pylon 可能正在重启；请稍等一分钟后重试（{check}）")
    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return PaiError(f"the request to {base_url} could not be made ({type(exc).__name__}: {reason}): check the URL",
                    f"无法向 {base_url} 发出请求（{type(exc).__name__}）：请检查地址")


def failure_cause(exc: Exception) -> tuple[str, str]:
    """Why a request to any of the cluster's web services (the portal, HiveD) got no usable answer, in a few words
    (en, zh): the same causes `transport_error` tells apart, without the rest-server's own advice."""
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code}", f"HTTP {exc.response.status_code}"
    if isinstance(exc, ValueError) and not isinstance(exc, requests.RequestException):
        return "the answer is not JSON", "应答不是 JSON"
    causes = _causes(exc)
    if _is_dns(causes):
        return "the host name cannot be resolved", "无法解析主机名"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connecting timed out", "连接超时"
    if isinstance(exc, requests.Timeout):
        return "connected, but no answer in time", "已连接，但没有及时应答"
    if _is_refused(causes):
        return "connection refused (nothing listens on that port)", "连接被拒绝（该端口没有服务在监听）"
    if isinstance(exc, requests.ConnectionError):
        return "the connection was dropped before an answer", "连接在应答前断开"
    return type(exc).__name__, type(exc).__name__


def retryable(exc: requests.RequestException) -> bool:
    """Worth another try: a timeout, a refused or dropped connection (a master restarting), not a local error, TLS or
    DNS."""
    if isinstance(exc, requests.exceptions.SSLError | requests.exceptions.InvalidHeader):
        return False
    return isinstance(exc, requests.Timeout | requests.ConnectionError) and not _is_dns(_causes(exc))


def _after(timeout_s: float | None) -> str:
    return f" after {timeout_s:g} s" if timeout_s else ""


def _after_zh(timeout_s: float | None) -> str:
    return f"（{timeout_s:g} 秒）" if timeout_s else ""
