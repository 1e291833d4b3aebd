#!/usr/bin/env python3
"""Opens an HTML report in headless Chromium through chromedriver and checks it.

    webdriver_check.py PAGE.html SHOT.png [--charts N] [--chart TITLE]... [--text STRING]...

Speaks the W3C WebDriver protocol over HTTP with the standard library only
(urllib, json) to a chromedriver started here on a free loopback port.
Chromium runs with --headless=new --no-sandbox --disable-gpu and the logging
preferences browser=ALL, performance=ALL.  After loading file://PAGE:

- no console message of level SEVERE (the browser log),
- no network request but the document itself (Network.requestWillBeSent in
  the performance log), no JavaScript dialog (Page.javascriptDialogOpening;
  and GET /alert/text answers "no such alert"),
- no <script>, <img>, <iframe>, <object>, <embed>, <link> element,
- N chart <svg> elements (when --charts is given), one titled TITLE for
  each --chart, each with width, height, viewBox, role="img" and a
  title, a rendered size above 0 (getBoundingClientRect) and every element
  drawn from data (data-series) with a bounding box above 0; in a flame
  graph (elements with data-series="frame") every frame with a width and a
  height, the root the widest and lowest, every frame within its width and
  no two frames of a row overlapping,
- each STRING appears literally in the page's text (innerText),
- the screenshot is a PNG of the viewport's size with more than a few colours.

Prints one line per problem and exits 1 when there is any; 0 and a summary
line otherwise.  CHROMEDRIVER and CHROMIUM override the binaries' paths.
"""
import argparse
import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

WIDTH, HEIGHT = 1280, 2400


class WebDriver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.sid = None

    def call(self, method, path, body=None, timeout=60):
        url = self.base + (path if self.sid is None else path.replace("{sid}", self.sid))
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read().decode())["value"]
        except urllib.error.HTTPError as e:  # a WebDriver error: {"value": {"error": ..., "message": ...}}
            v = json.loads(e.read().decode() or "{}").get("value", {})
            raise WebDriverError(v.get("error", str(e.code)), v.get("message", ""))


class WebDriverError(Exception):
    def __init__(self, error, message):
        super().__init__("%s: %s" % (error, message.splitlines()[0] if message else ""))
        self.error = error


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_driver(driver_bin):
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([driver_bin, "--port=%d" % port], stdout=log, stderr=subprocess.STDOUT)
    wd = WebDriver(port)
    for _ in range(200):  # up to 20 s
        try:
            if wd.call("GET", "/status", timeout=2).get("ready"):
                return proc, wd
        except (urllib.error.URLError, ConnectionError, WebDriverError, OSError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    log.seek(0)
    sys.exit("chromedriver did not start: %s" % log.read().decode(errors="replace")[-2000:])


# Run in the page: what the checks need, as one JSON-able object.
PAGE_SCRIPT = """
const charts = Array.from(document.querySelectorAll('svg')).map(s => {
  const r = s.getBoundingClientRect(), t = s.querySelector('title');
  const drawn = Array.from(s.querySelectorAll('[data-series]')).map(e => {
    const b = e.getBBox(); return [b.width, b.height];
  });
  const frames = Array.from(s.querySelectorAll('[data-series="frame"]')).map(e => {
    const b = e.getBBox(); return [b.x, b.y, b.width, b.height];
  });
  return {title: t ? t.textContent : null, w: r.width, h: r.height,
          attrs: ['width', 'height', 'viewBox', 'role'].filter(a => s.hasAttribute(a)),
          role: s.getAttribute('role'), drawn: drawn, frames: frames};
});
return {charts: charts,
        active: document.querySelectorAll('script, img, iframe, object, embed, link, frame').length,
        text: document.body ? document.body.innerText : '',
        viewport: [Math.round(innerWidth * devicePixelRatio), Math.round(innerHeight * devicePixelRatio)]};
"""


def flame_problems(frames):
    """A flame graph's frames (x, y, width, height of each data-series="frame"
    element), as drawn: each with a width and a height, the widest one (the
    root) at the bottom, every frame within its x range, and frames of one
    row side by side, never overlapping by more than a rounding."""
    if not frames:
        return []
    out = []
    empty = [f for f in frames if not (f[2] > 0 and f[3] > 0)]
    if empty:
        out.append("%d of %d flame graph frames have no width or height" % (len(empty), len(frames)))
    root = max(frames, key=lambda f: f[2])
    if root[1] < max(f[1] for f in frames) - 0.5:
        out.append("the widest frame is not the bottom row")
    outside = [f for f in frames if f[0] < root[0] - 0.5 or f[0] + f[2] > root[0] + root[2] + 0.5]
    if outside:
        out.append("%d frames outside the root's width" % len(outside))
    rows = {}
    for f in frames:
        rows.setdefault(round(f[1], 1), []).append(f)
    for y, row in rows.items():
        row.sort()
        if any(a[0] + a[2] > b[0] + 0.6 for a, b in zip(row, row[1:])):
            out.append("frames overlap in the row at y=%s" % y)
            break
    return out


def png_problems(path, width, height):
    """Problems of the screenshot: not a PNG, wrong size, (almost) one colour."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return ["screenshot is not a PNG"]
    pos, idat, size = 8, b"", None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    problems = []
    if size != (width, height) or height < 500:
        problems.append("screenshot is %s, the viewport %dx%d" % (size, width, height))
    try:
        raw = zlib.decompress(idat)
    except zlib.error as e:
        return problems + ["screenshot pixels do not inflate: %s" % e]
    if len(set(raw)) < 32 or len(data) < 20000:
        problems.append("screenshot looks empty (%d bytes, %d distinct byte values)" % (len(data), len(set(raw))))
    return problems


def check(wd, page, shot, charts, titles, texts):
    url = "file://" + os.path.abspath(page)
    problems = []
    # Leave the start page (its own chrome:// requests), then drop the logs
    # so far: reading a log empties it.
    wd.call("POST", "/session/{sid}/url", {"url": "about:blank"})
    for kind in ("browser", "performance"):
        wd.call("POST", "/session/{sid}/se/log", {"type": kind})
    wd.call("POST", "/session/{sid}/url", {"url": url})
    try:
        text = wd.call("GET", "/session/{sid}/alert/text")
        problems.append("a JavaScript dialog is open: %r" % text)
        wd.call("POST", "/session/{sid}/alert/dismiss", {})
    except WebDriverError as e:
        if e.error != "no such alert":
            raise
    info = wd.call("POST", "/session/{sid}/execute/sync", {"script": PAGE_SCRIPT, "args": []})
    png = base64.b64decode(wd.call("GET", "/session/{sid}/screenshot"))
    with open(shot, "wb") as f:
        f.write(png)
    problems += png_problems(shot, *info["viewport"])

    for e in wd.call("POST", "/session/{sid}/se/log", {"type": "browser"}):
        if e.get("level") == "SEVERE":
            problems.append("console error: %s" % e.get("message"))
    requests = 0
    for e in wd.call("POST", "/session/{sid}/se/log", {"type": "performance"}):
        msg = json.loads(e["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            requests += 1
            u = msg["params"]["request"]["url"]
            if u != url:
                problems.append("network request: %s" % u[:200])
        elif msg["method"] == "Page.javascriptDialogOpening":
            problems.append("JavaScript dialog: %s" % msg["params"].get("message"))
    if requests == 0:
        problems.append("the performance log saw no request at all (not even the document)")

    if info["active"]:
        problems.append("%d script/img/iframe/object/embed/link elements" % info["active"])
    got = info["charts"]
    if charts is not None and len(got) != charts:
        problems.append("%d charts, expected %d: %s" % (len(got), charts, [c["title"] for c in got]))
    for t in titles:
        if t not in [c["title"] for c in got]:
            problems.append("no chart titled %r among %s" % (t, [c["title"] for c in got]))
    for i, c in enumerate(got):
        name = "chart %d (%s)" % (i, c["title"])
        if not c["title"]:
            problems.append("%s: no <title>" % name)
        if len(c["attrs"]) != 4 or c["role"] != "img":
            problems.append("%s: attributes %s, role %r" % (name, c["attrs"], c["role"]))
        if not (c["w"] > 0 and c["h"] > 0):
            problems.append("%s: rendered size %sx%s" % (name, c["w"], c["h"]))
        flat = [d for d in c["drawn"] if not (d[0] > 0 or d[1] > 0)]
        if not c["drawn"] or flat:
            problems.append("%s: %d elements drawn from data, %d of them empty" % (name, len(c["drawn"]), len(flat)))
        problems += ["%s: %s" % (name, p) for p in flame_problems(c["frames"])]
    for t in texts:
        if t not in info["text"]:
            problems.append("not in the page's text: %r" % t)
    return problems, len(got), requests


@contextlib.contextmanager
def browser(logs, window, extra_args=()):
    """A chromedriver and a headless Chromium session (logging preferences
    logs, window "WxH"), torn down on leaving; yields the WebDriver."""
    driver_bin = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    proc, wd = start_driver(driver_bin)
    profile = tempfile.mkdtemp(prefix="iscope-browser-")
    try:
        caps = {"browserName": "chrome", "unhandledPromptBehavior": "ignore",
                "goog:loggingPrefs": {k: "ALL" for k in logs},
                "goog:chromeOptions": {"binary": chromium,
                                       "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                                "--window-size=" + window, "--user-data-dir=" + profile]
                                       + list(extra_args)}}
        session = wd.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=120)
        wd.sid = session["sessionId"]
        try:
            yield wd
        finally:
            wd.call("DELETE", "/session/{sid}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("shot")
    ap.add_argument("--charts", type=int, default=None)
    ap.add_argument("--chart", action="append", default=[])
    ap.add_argument("--text", action="append", default=[])
    a = ap.parse_args()
    with browser(("browser", "performance"), "%d,%d" % (WIDTH, HEIGHT), ["--hide-scrollbars"]) as wd:
        problems, n, requests = check(wd, a.page, a.shot, a.charts, a.chart, a.text)
    for p in problems:
        print(p)
    if not problems:
        print("ok: %d charts rendered, %d request (the document), no console error, no dialog" % (n, requests))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
