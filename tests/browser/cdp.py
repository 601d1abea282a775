"""Headless Chromium driven through the DevTools protocol over --remote-debugging-pipe
(python3 stdlib only): the browser reads NUL-terminated JSON commands on fd 3 and writes
replies and events on fd 4. Used by tests/cli/html_view_test.py, bench/html_view.py and
scripts/html_screenshot.py.

    with Browser() as b:
        page = b.open("file:///tmp/view.html")
        page.wait_for("document.body.dataset.ready === '1'")
        r, g, b_ = page.pixel(10, 20)
"""
import base64
import json
import os
import queue
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import zlib

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def find_chromium():
    """The browser binary: $ATTN_CHROMIUM, else Debian's chromium; None when absent."""
    env = os.environ.get("ATTN_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in CHROMIUM_CANDIDATES:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("chromium")


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with a fresh profile, talked to over the pipe."""

    def __init__(self, binary=None, width=1400, height=1000, timeout=60.0):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("chromium not found (Debian: apt-get install chromium)")
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="attn-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():  # in the child: the pipe ends at fds 3 and 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--disable-default-apps",
                "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=wire,
                                     pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._replies = {}
        self._events = queue.Queue()
        self._lock = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._replies["closed"] = True
                    self._lock.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                if "id" in m:
                    with self._lock:
                        self._replies[m["id"]] = m
                        self._lock.notify_all()
                else:
                    self._events.put(m)

    def send(self, method, params=None, session=None, timeout=None):
        self._next_id += 1
        mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._lock:
            while mid not in self._replies:
                if "closed" in self._replies:
                    raise BrowserError(f"chromium closed the pipe during {method}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"no reply to {method} within {timeout or self.timeout} s")
                self._lock.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def events(self):
        """Events received so far (drained)."""
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def open(self, url):
        """A new page (tab) with Page, Runtime, Network and Log events on, at `url`."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Network", "Log"):
            page.send(domain + ".enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        page.navigate(url)
        return page

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except BrowserError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session
        self.log = []  # every event of this page, in order

    def send(self, method, params=None, timeout=None):
        return self.browser.send(method, params, self.session, timeout)

    def navigate(self, url):
        self.url = url
        self.send("Page.navigate", {"url": url})

    def pump(self):
        for e in self.browser.events():
            if e.get("sessionId") == self.session:
                self.log.append(e)
        return self.log

    def eval(self, expression, timeout=None):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=60.0, poll=0.02):
        """Polls until `expression` is truthy; returns the seconds it took."""
        t0 = time.monotonic()
        while True:
            if self.eval(f"!!({expression})"):
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise BrowserError(f"not true within {timeout} s: {expression}")
            time.sleep(poll)

    def errors(self):
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.pump():
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:400])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + json.dumps(p.get("args", []))[:400])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "")[:400])
        return out

    def requests(self):
        """URLs of every request the page made, the page itself excepted."""
        return [e["params"]["request"]["url"] for e in self.pump()
                if e["method"] == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] != self.url]

    def mouse(self, kind, x, y, button="none", clicks=0):
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                               "button": button, "clickCount": clicks})

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 1)

    def key(self, key, code=None):
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key,
                                                 "code": code or key})

    def screenshot(self, clip=None):
        """PNG bytes of the viewport (or of clip = (x, y, w, h) in CSS px)."""
        params = {"format": "png"}
        if clip:
            x, y, w, h = clip
            params["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", params)["data"])

    def pixel(self, x, y):
        """(r, g, b) of the screen pixel at integer CSS coordinates (x, y)."""
        return png_pixel(self.screenshot((int(x), int(y), 1, 1)))


def png_pixel(data):
    """The (r, g, b) of a 1x1 8-bit RGB(A) PNG: every PNG filter leaves a lone pixel as is."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert (w, h, depth) == (1, 1, 8) and ctype in (2, 6), "expected a 1x1 RGB(A) PNG"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    return tuple(raw[1:4])
