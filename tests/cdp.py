"""Headless Chromium driven over the DevTools protocol, through a pipe: no extra package.

``--remote-debugging-pipe`` makes Chromium read protocol commands from its fd 3 and
write answers and events to its fd 4, one JSON message each, ended by a NUL byte (what
Playwright uses underneath). That is all a test needs to type into a page, read its DOM
and storage, watch its requests and take a screenshot, without a websocket library.

    with Browser(chromium_path, profile) as browser:
        page = browser.open("http://127.0.0.1:8080/dashboard")
        page.evaluate("document.title")
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

# The flags keep Chromium off the network: only pages on 127.0.0.1 are fetched.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or went away."""


class Browser:
    def __init__(self, executable: str, profile: Path, *, size: tuple[int, int] = (1280, 900)) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:     # in the child, before exec: its fds 3 and 4 are the pipe's ends
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)    # out of the way of 3 and 4 first
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._answers: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_chrome, "rb", buffering=0) as stream:
            while chunk := stream.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        with self._lock:
                            waiter = self._answers.pop(message["id"], None)
                        if waiter is not None:
                            waiter.put(message)
                    else:
                        self.events.append(message)
        with self._lock:        # Chromium exited: wake every waiter
            for waiter in self._answers.values():
                waiter.put({"error": {"message": "chromium closed the pipe"}})
            self._answers.clear()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            waiter: queue.Queue = queue.Queue(maxsize=1)
            self._answers[ident] = waiter
        message = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        try:
            answer = waiter.get(timeout=timeout)
        except queue.Empty:
            raise ProtocolError(f"{method}: no answer within {timeout} s") from None
        if "error" in answer:
            raise ProtocolError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def open(self, url: str) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Network"):
            page.send(f"{domain}.enable")
        page.navigate(url)
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except ProtocolError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab, attached in flat mode: its commands and events carry its session id."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def send(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, **kw)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression!r} threw: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 60.0) -> Any:
        """Poll until ``expression`` is truthy; its value. A bound on waiting, not a timed check.
        While the page loads (no document.body yet) the expression may throw: that is "not yet"."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                last = self.evaluate(expression)
            except ProtocolError as exc:
                last = exc
            else:
                if last:
                    return last
            if time.monotonic() > deadline:
                raise AssertionError(f"{expression!r} still false after {timeout} s (last: {last!r})")
            time.sleep(0.2)

    def type_into(self, selector: str, text: str) -> None:
        """Focus the element and type ``text`` as keyboard input would insert it."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", {"text": text})

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element."""
        box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                            f".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def requests(self) -> list[dict[str, Any]]:
        """Every request the page sent so far (``Network.requestWillBeSent``'s ``request``)."""
        return [e["params"]["request"] for e in list(self.browser.events)
                if e.get("sessionId") == self.session and e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> bytes:
        """The whole page as PNG, written to ``path``."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        data = base64.b64decode(shot["data"])
        path.write_bytes(data)
        return data
