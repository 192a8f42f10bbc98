"""A headless Chromium driven over its DevTools pipe, without any package: load a page, read
its rendered boxes, capture PNGs, and record every network request the page makes.

Used by the report tests and ``scripts/screenshots.py``. The page runs no script of ours:
boxes come from the DOM domain (``DOM.getBoxModel``), not from JavaScript, so a page whose
Content-Security-Policy forbids scripts is measured as a reader sees it. Network requests are
taken from Chromium's own net log (``--log-net-log``), those made on behalf of the page
(its top frame is a ``file://`` site); the browser's background traffic (updates, accounts)
is left out, and every host name resolves to nothing (``--host-resolver-rules``), so no
request could leave the machine anyway.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-sync",
         "--disable-component-update", "--disable-default-apps", "--disable-extensions",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--mute-audio")
_TRAMPOLINE = """
import fcntl, os, sys
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for fd in sys.argv[1:3]:
    os.close(int(fd))
os.dup2(ends[0], 3)
os.dup2(ends[1], 4)
for fd in ends:
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable on PATH, or None."""
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process and one page, spoken to over ``--remote-debugging-pipe``
    (NUL-separated JSON on fds 3 and 4)."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900,
                 timeout: float = 60.0) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise BrowserError("no chromium on PATH (apt-get install chromium)")
        self.timeout = timeout
        self._work = Path(tempfile.mkdtemp(prefix="gero-chromium-"))
        self.net_log = self._work / "netlog.json"
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        # Chromium reads the pipe on fds 3 and 4; a tiny Python trampoline puts the ends there
        # (either end may itself be 3 or 4: both are copied above 10 first) and execs it.
        self._process = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(to_browser_r), str(from_browser_w), exe,
             *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._work / 'profile'}",
             f"--log-net-log={self.net_log}", "--net-log-capture-mode=Default",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []
        """After the ``with`` block: the URLs of the requests the pages made."""
        self._session = ""
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self._session = self.call("Target.attachToTarget", targetId=target,
                                      flatten=True)["sessionId"]
            self.page("Page.enable")
            self.page("DOM.enable")
            self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self._shutdown()  # no browser left behind by a start that failed
            shutil.rmtree(self._work, ignore_errors=True)
            raise

    # Protocol ---------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self._process.poll() is not None:
                raise BrowserError("chromium did not answer")
            ready, _, _ = select.select([self._from_browser], [], [], min(left, 1.0))
            if not ready:
                continue  # a read would block: look at the clock and the process again
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, self._session, **params)

    def _wait_for(self, event: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == event for e in self.events):
            self.events.append(self._receive(deadline))

    # Pages ------------------------------------------------------------------------------
    def open(self, path: Path) -> None:
        """Load a local file and wait for its load event."""
        self.events.clear()
        reply = self.page("Page.navigate", url=path.resolve().as_uri())
        if reply.get("errorText"):
            raise BrowserError(f"{path}: {reply['errorText']}")
        self._wait_for("Page.loadEventFired")

    def _node(self, selector: str) -> int | None:
        root = self.page("DOM.getDocument", depth=0)["root"]["nodeId"]
        node = self.page("DOM.querySelector", nodeId=root, selector=selector).get("nodeId")
        return int(node) if node else None

    def nodes(self, selector: str) -> list[int]:
        root = self.page("DOM.getDocument", depth=0)["root"]["nodeId"]
        return [int(n) for n in
                self.page("DOM.querySelectorAll", nodeId=root, selector=selector)["nodeIds"]]

    def box(self, node: int) -> tuple[float, float, float, float] | None:
        """(x, y, width, height) of a node's border box in page coordinates; None when it
        has no box (not rendered)."""
        try:
            model = self.page("DOM.getBoxModel", nodeId=node)["model"]
        except BrowserError:
            return None
        quad = model["border"]
        xs, ys = quad[0::2], quad[1::2]
        return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)

    def attribute(self, node: int, name: str) -> str | None:
        values = self.page("DOM.getAttributes", nodeId=node)["attributes"]
        pairs = dict(zip(values[0::2], values[1::2], strict=True))
        return pairs.get(name)

    def text(self, node: int) -> str:
        return str(self.page("DOM.getOuterHTML", nodeId=node)["outerHTML"])

    def dom(self) -> str:
        """The document as Chromium parsed it (what ``--dump-dom`` prints)."""
        root = self.page("DOM.getDocument", depth=0)["root"]["nodeId"]
        return str(self.page("DOM.getOuterHTML", nodeId=root)["outerHTML"])

    def content_size(self) -> tuple[float, float]:
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        return float(size["width"]), float(size["height"])

    def screenshot(self, out: Path, selector: str | None = None, margin: float = 8.0,
                   max_height: float = 16000.0) -> Path:
        """A PNG of the whole page, or of one element (with ``margin`` around it)."""
        if selector is None:
            width, height = self.content_size()
            clip = (0.0, 0.0, width, min(height, max_height))
        else:
            node = self._node(selector)
            found = self.box(node) if node is not None else None
            if found is None:
                raise BrowserError(f"no rendered element matches {selector!r}")
            x, y, w, h = found
            clip = (max(x - margin, 0), max(y - margin, 0), w + 2 * margin,
                    min(h + 2 * margin, max_height))
        data = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": clip[0], "y": clip[1], "width": clip[2],
                               "height": clip[3], "scale": 1})["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    # Lifetime ---------------------------------------------------------------------------
    def close(self) -> list[str]:
        """End the browser; the URLs of the network requests made on behalf of the pages
        (from its net log, which must exist: no log is no evidence)."""
        self._shutdown()
        try:
            return page_requests(self.net_log)
        finally:
            shutil.rmtree(self._work, ignore_errors=True)

    def _shutdown(self) -> None:
        try:
            if self._process.poll() is None:
                self._send({"id": self._next_id + 1, "method": "Browser.close", "params": {}})
            self._process.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.requests = self.close()


def page_requests(net_log: Path) -> list[str]:
    """URLs of the requests a net log shows made for a page loaded from a file (the browser's
    own background requests have another network isolation key)."""
    text = net_log.read_text(encoding="utf-8", errors="replace").rstrip().rstrip(",")
    if not text.endswith("}"):  # a log cut short is closed by hand (Chromium's own advice)
        text += "]}"
    try:
        log = json.loads(text)
    except ValueError:
        log = json.loads(text + "]}")
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for event in log.get("events", []):
        params = event.get("params") or {}
        if names.get(event.get("type")) == "URL_REQUEST_START_JOB" and "url" in params \
                and str(params.get("network_isolation_key", "")).startswith("file://"):
            urls.append(str(params["url"]))
    return urls
