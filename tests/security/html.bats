#!/usr/bin/env bats
# HTML (and Markdown) escaping of everything that came from the workload:
# a function named <script>alert(1)</script>, file names with quotes,
# scope and mark names with tags and entities, kernel names with &<>"'.
# Checked on a findings document with hostile strings in every string
# field the report may show, and end to end on a real recording of a
# workload whose code objects carry those names.
#
# check_html BENIGN.html HOSTILE.html STRING...: the hostile page has no
# tag or attribute the benign page (same report of ordinary names) does
# not have, no event handler, no javascript: URL, no <script>; and each
# STRING appears in the page's text exactly as it is (escaped, not lost).

load ../cli/helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	H='<script>alert(1)</script>'
	cat > "$T/check.py" <<'PY'
import html.parser, sys

class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text, self.bad = set(), set(), [], []
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            self.attrs.add((tag, k))
            if k.startswith("on"):
                self.bad.append("event handler %s on <%s>" % (k, tag))
            if v and v.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                self.bad.append("%s=%r on <%s>" % (k, v, tag))
        if tag in ("script", "iframe", "img", "object", "embed", "link", "form", "base"):
            self.bad.append("<%s>" % tag)
    def handle_data(self, d):
        self.text.append(d)

def parse(path):
    p = P()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    return p

benign, hostile = parse(sys.argv[1]), parse(sys.argv[2])
errors = list(hostile.bad)
errors += ["new tag <%s>" % t for t in hostile.tags - benign.tags]
errors += ["new attribute %s on <%s>" % (a, t) for t, a in hostile.attrs - benign.attrs]
text = "".join(hostile.text)
errors += ["not in the text: %r" % s for s in sys.argv[3:] if s not in text]
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
PY
}

# raw_lt FILE: the number of '<' not escaped by a backslash (raw HTML in Markdown).
raw_lt() {
	"$PY" -c 'import re, sys; print(len(re.findall(r"(?<!\\)<", open(sys.argv[1]).read())))' "$1"
}

# same_markup BENIGN.json HOSTILE.json STRING...: both reports as HTML and
# Markdown; check.py on the two pages, and no more unescaped '<' in the
# hostile Markdown than in the benign one.
same_markup() {
	local benign=$1 hostile=$2
	shift 2
	"$REPORT" -f html -o "$T/benign.html" "$benign"
	"$REPORT" -f html -o "$T/hostile.html" "$hostile"
	run "$PY" "$T/check.py" "$T/benign.html" "$T/hostile.html" "$@"
	sed "s/^/# /" <<< "$output" >&3
	[ "$status" -eq 0 ]
	"$REPORT" -o "$T/benign.md" "$benign"
	"$REPORT" -o "$T/hostile.md" "$hostile"
	[ "$(raw_lt "$T/hostile.md")" -eq "$(raw_lt "$T/benign.md")" ]
}

teardown() {
	rm -rf "$T"
}

@test "a findings document with hostile strings everywhere: safe HTML, names kept as text" {
	"$RECORD" -q -o "$T/a.isc" -- "$PY" "$ISC_SRC/tests/security/legit.py"
	"$ANALYZE" -o "$T/benign.json" "$T/a.isc"
	valid_findings "$T/benign.json"
	# every string value of the document, and a GPU section, made hostile
	"$PY" - "$T/benign.json" "$T/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
H = ["<script>alert(1)</script>", "a\"b'c<d>&e.py", "</td><img src=x onerror=alert(1)>",
     "&<>\"'", "[x](javascript:alert(1))", "<!--", "]]>", "&amp;&lt;", "| --- |", "`code`"]
n = [0]
def walk(v, key=None):
    if isinstance(v, dict):
        return {k: walk(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x, key) for x in v]
    if isinstance(v, str) and key not in ("kind", "class", "severity", "id", "state", "exit_how", "end_reason"):
        n[0] += 1
        return H[n[0] % len(H)] + v + H[(n[0] + 3) % len(H)]
    return v
def gpu(dev, kernel):
    return {"devices": [{"id": 0, "name": dev}],
            "kernels": {"count": 2, "distinct": 1, "total_ns": 1000,
                        "top": [{"name": kernel, "count": 2, "total_ns": 1000,
                                 "mean_ns": 500, "min_ns": 400, "max_ns": 600, "pct": 100}]}}
# the benign document gets a GPU section of ordinary names
d["gpu"] = gpu("GPU 0", "void k(int)")
json.dump(d, open(sys.argv[1], "w"))
d = walk(d)
d["tool"]["name"] = "iscope-analyze"  # what makes it findings: the report refuses anything else
d["gpu"] = gpu("GPU <b>&\"'", "void k<float>(int&, char const*) &<>\"'")
d["cpu"]["top_functions"][0]["name"] = "<script>alert(1)</script>"
d["cpu"]["top_functions"][0]["file"] = "a\"b'c<d>&e.py"
json.dump(d, open(sys.argv[2], "w"))
PY
	same_markup "$T/benign.json" "$T/hostile.json" "$H" "a\"b'c<d>&e.py" \
		"void k<float>(int&, char const*) &<>\"'"
	# Markdown: names escaped
	grep -qF '\<script\>alert(1)\</script\>' "$T/hostile.md"
}

@test "end to end: hostile function, file, scope, mark and thread names" {
	cat > "$T/w.py" <<'PY'
import threading
from inferscope import scope, mark
H = "<script>alert(1)</script>"
F = "a\"b'c<d>&e.py"
def work():
    s = 0
    for i in range(3000):
        s += i
    return s
code = work.__code__.replace(co_name=H, co_filename=F)
try:
    code = code.replace(co_qualname=H)  # 3.11+
except TypeError:
    pass
work.__code__ = code
def run():
    for _ in range(100):
        with scope("</td><img src=x onerror=alert(1)>"):
            work()
        mark("&<>\"'", n=1)
t = threading.Thread(target=run, name="<b>thread</b>")
t.start()
t.join()
PY
	cat > "$T/b.py" <<'PY'
import threading
from inferscope import scope, mark
def work():
    s = 0
    for i in range(3000):
        s += i
    return s
def run():
    for _ in range(100):
        with scope("step"):
            work()
        mark("tokens", n=1)
t = threading.Thread(target=run, name="worker")
t.start()
t.join()
PY
	# exact mode: work() runs too briefly to be sampled at the default rate
	"$RECORD" -q --python=exact -o "$T/h.isc" -- "$PY" "$T/w.py"
	"$RECORD" -q --python=exact -o "$T/b.isc" -- "$PY" "$T/b.py"
	"$ANALYZE" -o "$T/h.json" "$T/h.isc"
	"$ANALYZE" -o "$T/b.json" "$T/b.isc"
	valid_findings "$T/h.json" "$T/b.json"
	# the names made it through the analysis unchanged
	run "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["cpu"]["top_functions_in_scopes"][0]["name"], d["cpu"]["top_functions_in_scopes"][0]["file"], d["iterations"]["name"])' "$T/h.json"
	[ "$output" = "<script>alert(1)</script> a\"b'c<d>&e.py </td><img src=x onerror=alert(1)>" ]
	same_markup "$T/b.json" "$T/h.json" "$H" "</td><img src=x onerror=alert(1)>"
}

@test "charts and findings (schema 2) with hostile names: no new tag or attribute, names kept as text" {
	# full.json is benign.json with <script>alert(1)</script> and <img src=x onerror=alert(1)>
	# as function, kernel, contributor and finding-title names (tests/data/report)
	same_markup "$ISC_SRC/tests/data/report/benign.json" "$ISC_SRC/tests/data/report/full.json" "$H" \
		"<img src=x onerror=alert(1)>" "$H holds the interpre…"
	[ "$(grep -c '<svg ' "$T/hostile.html")" -eq 7 ]
}

@test "native stacks with hostile names: the flame graphs and their tables add no tag or attribute" {
	# native.json is native-benign.json with hostile Python function, file, worker
	# thread and native function names (tests/data/report)
	same_markup "$ISC_SRC/tests/data/report/native-benign.json" "$ISC_SRC/tests/data/report/native.json" "$H" \
		"<img src=x onerror=alert(1)>_sgemm" "a\"b'c<d>&e.py"
	[ "$(grep -c '<svg ' "$T/hostile.html")" -eq 9 ]
	# speedscope's JSON carries the names as they are, escaped as JSON
	"$REPORT" -f speedscope -o "$T/s.json" "$ISC_SRC/tests/data/report/native.json"
	run "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sorted(f["name"] for f in d["shared"]["frames"])[-1])' "$T/s.json"
	[ "$output" = "start_thread" ]
	run "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(any(f["name"] == sys.argv[2] for f in d["shared"]["frames"]))' "$T/s.json" "$H"
	[ "$output" = True ]
}
