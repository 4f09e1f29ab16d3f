"""A report opened in a real browser: headless Chromium driven through its DevTools protocol.

The Chromium is the system's (Debian's ``chromium`` package, which ``scripts/setup.sh``
installs); nothing here downloads a browser. :func:`find_chromium` returns ``None`` where no
usable one exists (e.g. Ubuntu's ``chromium-browser``, a stub that asks for the snap).

:class:`HeadlessChromium` starts the browser with a DevTools port (``--remote-debugging-port=0``:
the browser picks a free port and prints it), talks to its page over a WebSocket
(``websocket-client``) and :meth:`HeadlessChromium.check` loads a page and reports what a
reader would see go wrong: images that did not load, console errors and uncaught exceptions
(a resource that failed to load is one too), failed requests, and the page's links.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.required import missing

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
# What the page reports after its load event: images not (or not fully) loaded, and every link.
_PAGE_STATE = """JSON.stringify({
  brokenImages: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
  title: document.title,
})"""


def find_chromium() -> str | None:
    """The path of a Chromium that runs (answers ``--version``), or ``None``."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and "chrom" in done.stdout.lower():
            return path
    return None


def require_chromium() -> str:
    """A Chromium that runs; in CI its absence fails the test (set-up installs it), else skips."""
    path = find_chromium()
    if path is None:
        missing("no usable Chromium (scripts/setup.sh installs Debian's chromium package)")
    return path


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a process group; nothing if it is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass
class PageCheck:
    """What went wrong on a loaded page (every list empty: nothing did)."""

    url: str
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    screenshot: bytes = b""


class HeadlessChromium:
    """A headless Chromium with one page, driven over the DevTools protocol; a context manager."""

    def __init__(self, path: str, timeout: float = 60.0) -> None:
        import websocket

        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        args = [
            path,
            "--headless=new",
            "--no-sandbox",  # the tests may run as root
            "--disable-gpu",
            "--no-first-run",
            # Nothing to fetch from the closed network here: refused connections only add noise.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={self._profile.name}",
            "about:blank",
        ]
        # Its own process group: its helpers (renderer, zygote, crashpad) are stopped with it, and
        # none is left writing into the profile while it is removed.
        self._proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            browser_ws = self._await_listening()
            port = browser_ws.split(":")[2].split("/")[0]
            self._ws = websocket.create_connection(self._page_ws(port), timeout=timeout, suppress_origin=True)
        except BaseException:
            self.close()
            raise
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []

    def _await_listening(self) -> str:
        """The browser's DevTools URL from its stderr; ``RuntimeError`` with its output if none."""
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self._proc.stderr], daemon=True).start()
        seen, deadline = [], time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if self._proc.poll() is not None:
                    break
                continue
            seen.append(line)
            match = _LISTENING.search(line)
            if match:
                return match.group(1)
        raise RuntimeError("Chromium did not open its DevTools port:\n" + "".join(seen[-20:]))

    def _page_ws(self, port: str) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
                pages = [t for t in json.load(reply) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise RuntimeError("Chromium opened no page.")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result; events that arrive meanwhile are kept."""
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._events.append(message)

    def _await_event(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == method for e in self._events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {self.timeout} s")
            self._events.append(json.loads(self._ws.recv()))

    def check(self, url: str, screenshot: bool = False) -> PageCheck:
        """Load ``url``, wait for its load event, and say what went wrong on it."""
        self._events.clear()
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self._await_event("Page.loadEventFired")
        state = json.loads(
            self.call("Runtime.evaluate", expression=_PAGE_STATE, returnByValue=True)["result"]["value"]
        )
        check = PageCheck(url, state["brokenImages"], links=state["links"])
        check.console_errors, check.failed_requests = _problems(self._events)
        if screenshot:
            shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            check.screenshot = base64.b64decode(shot["data"])
        return check

    def close(self) -> None:
        """Close the connection and stop the browser's whole process group (SIGTERM, then SIGKILL
        after 10 s, and SIGKILL for any helper still alive), then remove its profile."""
        ws = getattr(self, "_ws", None)
        if ws is not None:
            ws.close()
        _signal_group(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _signal_group(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)
        _signal_group(self._proc.pid, signal.SIGKILL)  # helpers that outlived the browser
        shutil.rmtree(self._profile.name, ignore_errors=True)
        self._profile.cleanup()

    def __enter__(self) -> HeadlessChromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _problems(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Console errors (console.error, uncaught exceptions, the browser's error log entries) and
    failed requests, from the DevTools events of one page load."""
    errors, failed, urls = [], [], {}
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFailed":
            failed.append(f"{urls.get(params['requestId'], '?')}: {params.get('errorText')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            errors.append(params["exceptionDetails"].get("exception", {}).get("description", "exception"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            errors.append(f"{params['entry'].get('text')} ({params['entry'].get('url', '')})")
    return errors, failed


def broken_links(check: PageCheck, root: Path) -> list[str]:
    """The page's ``file://`` links inside ``root`` whose file does not exist."""
    from urllib.parse import unquote, urlparse

    broken = []
    for link in check.links:
        parsed = urlparse(link)
        if parsed.scheme != "file":
            continue
        path = Path(unquote(parsed.path))
        if path.is_relative_to(root) and not path.exists():
            broken.append(link)
    return broken
