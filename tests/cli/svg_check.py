#!/usr/bin/env python3
"""Static checks of the inline SVG charts of an iscope-report HTML page.

    svg_check.py PAGE.html [COUNT]

Each <svg> must parse as XML; carry width, height, a viewBox "0 0 W H" of
the same size, role="img", a non-empty <title> first and a <desc>; use only
the elements the report draws (no script, no foreignObject, no image, no
link, no event handler, no href); every coordinate must be a finite number
inside the viewBox; and something must be drawn from data (an element with
data-series).  COUNT, when given, is the number of charts expected.
Prints one line per problem; exit status 1 when there is any.
"""
import math
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED = {"svg", "title", "desc", "rect", "line", "text", "path"}
COORDS = {"x", "y", "x1", "y1", "x2", "y2", "width", "height"}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?$")


def check(i, text, errors):
    def err(msg):
        errors.append("chart %d: %s" % (i, msg))

    try:
        svg = ET.fromstring(text)
    except ET.ParseError as e:
        return err("not well-formed XML: %s" % e)
    a = svg.attrib
    if a.get("role") != "img":
        err("role is not img")
    try:
        w, h = float(a["width"]), float(a["height"])
        vb = [float(v) for v in a["viewBox"].split()]
    except (KeyError, ValueError) as e:
        return err("size or viewBox missing or not numeric: %s" % e)
    if vb != [0, 0, w, h] or not (w > 0 and h > 0):
        err("viewBox %s does not match %sx%s" % (vb, w, h))
    kids = list(svg)
    if not kids or kids[0].tag != "title" or not (kids[0].text or "").strip():
        err("no <title> first")
    if svg.find("desc") is None:
        err("no <desc>")
    drawn = 0
    for el in svg.iter():
        if el.tag not in ALLOWED:
            err("element <%s>" % el.tag)
        for k, v in el.attrib.items():
            if k.lower().startswith("on") or "href" in k.lower():
                err("attribute %s on <%s>" % (k, el.tag))
            if k in COORDS:
                if not NUMBER.match(v) or not math.isfinite(float(v)):
                    err("<%s %s=%r> is not a number" % (el.tag, k, v))
                    continue
                lim = w if k in ("x", "x1", "x2", "width") else h
                if not -0.5 <= float(v) <= lim + 0.5:
                    err("<%s %s=%s> outside the viewBox" % (el.tag, k, v))
        if el.tag == "path":
            d = el.attrib.get("d", "")
            if re.search(r"(?i)nan|inf", d) or not re.fullmatch(r"[MLHVZ0-9. -]*", d):
                err("path data %r" % d[:80])
        drawn += "data-series" in el.attrib
    if not drawn:
        err("nothing drawn from data")


def main():
    page = open(sys.argv[1], encoding="utf-8").read()
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    errors = []
    if len(sys.argv) > 2 and len(svgs) != int(sys.argv[2]):
        errors.append("%d charts, expected %s" % (len(svgs), sys.argv[2]))
    if page.count("<svg") != len(svgs):
        errors.append("an <svg> is not closed")
    for i, s in enumerate(svgs):
        check(i, s, errors)
    print("\n".join(errors) if errors else "%d charts ok" % len(svgs))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
