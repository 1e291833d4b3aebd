#!/usr/bin/env python3
"""Opens a speedscope file in the speedscope app itself, in headless Chromium.

    speedscope_app.py APP_DIR PROFILE.json SHOT.png PROFILES

APP_DIR is the app's dist/release directory (the npm package speedscope,
fetched by scripts/install-deps.sh --tests).  As speedscope's own command
line does (bin/cli.mjs), the profile goes into a script that calls
speedscope.loadFileFromBase64(name, base64) and the app is opened at
file://APP_DIR/index.html#localProfilePath=SCRIPT.  Then, within 30 s:

- the document's title is "NAME - speedscope" (the app names the page
  after the file it imported, its "name" or else its file name; it keeps
  "speedscope" when the import failed),
- the toolbar names the profile shown (activeProfileIndex, else the
  first) and its place among PROFILES, "NAME (K/PROFILES)",
- a <canvas> of the flame chart with a rendered size above 0,
- no console message of level SEVERE and no JavaScript dialog (the app
  alerts on a file it cannot import).

Prints one line per problem and exits 1 when there is any; 0 and "ok"
otherwise.  Uses webdriver_check.py's driver (CHROMEDRIVER, CHROMIUM).
"""
import base64
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webdriver_check as wc  # noqa: E402

STATE = """
const c = Array.from(document.querySelectorAll('canvas')).map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; });
return {title: document.title, text: document.body ? document.body.innerText : '', canvases: c};
"""


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    app, prof, shot, nprof = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    doc = json.load(open(prof, encoding="utf-8"))
    name = os.path.basename(prof)
    # the app's title: the file's "name", else its file name; shown first: activeProfileIndex, else 0
    title = doc.get("name") or name
    k = doc.get("activeProfileIndex") or 0
    first, shown = doc["profiles"][k]["name"], "(%d/%d)" % (k + 1, nprof)
    work = tempfile.mkdtemp(prefix="iscope-speedscope-")
    script = os.path.join(work, "profile.js")
    with open(script, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(name), json.dumps(base64.b64encode(open(prof, "rb").read()).decode())))
    url = "file://%s#localProfilePath=%s" % (os.path.abspath(os.path.join(app, "index.html")), script)
    problems = []
    try:
        with wc.browser(("browser",), "1280,800", ["--allow-file-access-from-files"]) as wd:
            wd.call("POST", "/session/{sid}/url", {"url": url})
            want = "%s - speedscope" % title
            state = {}
            for _ in range(300):  # until the app has imported the file, at most 30 s
                try:
                    text = wd.call("GET", "/session/{sid}/alert/text")
                    problems.append("a JavaScript dialog: %r" % text)
                    wd.call("POST", "/session/{sid}/alert/dismiss", {})
                    break
                except wc.WebDriverError as e:
                    if e.error != "no such alert":
                        raise
                state = wd.call("POST", "/session/{sid}/execute/sync", {"script": STATE, "args": []})
                if state["title"] == want and shown in state["text"]:
                    break
                time.sleep(0.1)
            with open(shot, "wb") as f:
                f.write(base64.b64decode(wd.call("GET", "/session/{sid}/screenshot")))
            if state.get("title") != want:
                problems.append("title %r, expected %r (the import did not finish)" % (state.get("title"), want))
            if "%s %s" % (first, shown) not in state.get("text", ""):
                problems.append("the toolbar does not show %r %s: %r" % (first, shown, state.get("text", "")[:300]))
            if not any(w > 0 and h > 0 for w, h in state.get("canvases", [])):
                problems.append("no canvas with a rendered size: %s" % state.get("canvases"))
            for e in wd.call("POST", "/session/{sid}/se/log", {"type": "browser"}):
                if e.get("level") == "SEVERE":
                    problems.append("console error: %s" % e.get("message", "")[:300])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print(p)
    if not problems:
        print("ok")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
