"""Debian's headless `chromium`, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
messages ending in a NUL byte, commands on the browser's fd 3, replies on its fd 4), so that a test can show a page as
it prints (print media, A4's printable width) and read measurements back. No network, a fresh profile per run."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--remote-debugging-pipe")
# A4 (210 mm) less the report's @page margins (2 x 12 mm), in CSS pixels (96 per inch)
A4_PRINTABLE_PX = round((210 - 2 * 12) / 25.4 * 96)


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless chromium; `evaluate` runs an expression in the page the browser last navigated to."""

    def __init__(self, binary: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="hivedlab-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds() -> None:  # via free numbers first: either end may itself be fd 3 or 4
            os.dup2(to_browser_r, 100)
            os.dup2(from_browser_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, pass_fds=(3, 4),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def send(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self._events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        while True:
            for index, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(index)
            self._events.append(self._read())

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self._process.poll() is not None:
                raise RuntimeError("chromium stopped answering")
            if not select.select([self._from_browser], [], [], left)[0]:
                continue
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def open_printed(self, page: Path, width: int = A4_PRINTABLE_PX) -> None:
        """Show `page` as it prints: print media, `width` CSS pixels wide; returns when it has loaded."""
        self.send("Page.enable", session=True)
        self.send("Emulation.setEmulatedMedia", session=True, media="print")
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=1123, deviceScaleFactor=1,
                  mobile=False)
        self.send("Page.navigate", session=True, url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
                          returnByValue=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"the page's script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except RuntimeError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()
