#!/usr/bin/env python3
"""Reject bats code whose check cannot fail, or that hides a failure.

    lint_bats.py FILE|DIR...    print FILE:LINE: [rule] reason for each
                                finding (a DIR: every *.bats and *.bash
                                under it); exit 1 if any, 0 if none, 2 on
                                usage
    lint_bats.py --self-test BAD GOOD
                                BAD must be rejected exactly as its lines
                                marked "EXPECT-REJECT rule[,rule]" say (each
                                marked line by exactly those rules, no other
                                line), GOOD accepted whole

The files are parsed as bash (quotes, $(...), here-documents, [[ ]],
(( )), if/for/while/case, functions, @test), so a construct split over
several lines is seen whole. A line is reported where the offending
command (or the check after the `&&`) starts. The rules (bats 1.8 runs a
test under `set -e`; tests/README.md, "Writing a check that can fail"):

  negated      `! cmd` as a statement (also `{ ! cmd; }`, `a || ! b`):
               bash ignores a negated command's status under set -e.
               Write `run ! cmd`.
  and-check    a check (`[`, `[[`, `test`, `((`, `grep`, `jq -e`, `cmp`,
               `diff`) after `&&` in a statement, on one line or split over
               a line break: a false left side ends the list quietly, so
               `[ a ] && [ b ]`, `grep -q a f && grep -q b f`,
               `cmd && [ -s out ]` check only when the left side held.
               One check per line; a conditional check is an `if`.
  and-in-test  `[[ a && b ]]` as a statement: two checks in one; bats
               prints the line, not the half that failed.
  or-true      `cmd || true` (or `|| :`) as a statement: the status of cmd
               is thrown away. Allowed only for clean-up commands whose
               failure is not under test (kill, rm, rmdir, chmod, umount;
               not wait: its status is the process's); a recording or a
               tool whose status is part of what
               happened is captured (`run cmd`, or `cmd || st=$?`) and its
               status checked. (Inside $(...) it is allowed: there the
               output is what is checked, e.g. `$(grep -c x f || true)`.)
  return-0     `cmd || return 0` (or `|| exit 0`): a failure becomes
               success, e.g. a setup_file that stops early when a tool is
               not built, so that its tests skip (or pass) instead of
               failing. Fail with the reason, or skip naming the missing
               part of the machine.
  pipe-grep-q  `cmd | grep -q x` as a statement: cmd's status is lost (and
               grep -q may end cmd with SIGPIPE). Capture (`run cmd`), then
               check `$status` and `$output` on lines of their own. A
               producer whose status means nothing (echo, printf, cat) or
               a text filter over a file, whose failure shows as missing
               text (grep, sed, awk, sort, uniq, tr, cut, head, tail, jq,
               gzip, zcat, ls, seq, wc), is allowed: the rule is for the
               programs under test.
  pipe-status  `cmd | other` as a statement, without `set -o pipefail` in
               the file, setup() or the function before it: cmd's status is
               lost (e.g. `iscope-merge --dump t.isc | grep -v X > f`, where
               a failed merge and an empty dump look alike). The same
               producers are allowed, and a pipe whose last command writes
               to fd 3 or 2 (a message for a person).
  run-pipe     `run cmd | ...`: pipes bats' run, not the command.
  skip-reason  `skip` without a reason; or a reason saying "KNOWN FAILURE":
               a known failure is an expected failure (its own meson test
               with should_fail, or a TAP `# TODO`), never a skip.
  local-subst  `local v=$(cmd)` (also export, declare, readonly, typeset):
               the status is local's (0), cmd's is lost. Declare on one
               line, assign on the next.
  jq-all       jq's `all` (`[...] | all`, `all(f)`) is true on an empty
               array: a filter that selected nothing passes. Put the
               non-empty check in the same filter (`length > 0 and all`).
  parse        the lint could not read the file as bash: fix the file (or
               the lint); nothing in an unreadable file is vouched for.

Here-documents are not bash and are not looked at; neither is the text of
`bash -c '...'`, `python -c '...'` and the like (a quoted string).
"""
import glob
import os
import re
import sys

CHECKS = {"[", "test", "grep", "egrep", "fgrep", "cmp", "diff"}
CLEANUP = {"kill", "rm", "rmdir", "chmod", "umount"}
# commands whose status in a pipe means nothing (echo) or whose failure shows
# downstream as missing text (the text filters): not the program under test
PRODUCERS = {"echo", "printf", "cat"}
FILTERS = PRODUCERS | {"grep", "egrep", "fgrep", "sed", "awk", "sort", "uniq", "tr", "cut", "head", "tail",
                       "jq", "gzip", "zcat", "ls", "seq", "wc"}
DECLARE = {"local", "export", "declare", "readonly", "typeset"}
RESERVED_END = {"then", "elif", "else", "fi", "do", "done", "esac", "}"}
OP_CHARS = set("|&;()<>")


class ParseError(Exception):
    def __init__(self, line, msg):
        Exception.__init__(self, msg)
        self.line = line


class Tok:
    """kind: word, op, nl, dbracket ([[ ... ]]), arith ((( ... ))), eof."""
    __slots__ = ("kind", "text", "line", "subst")

    def __init__(self, kind, text, line, subst=None):
        self.kind, self.text, self.line = kind, text, line
        self.subst = subst or []  # [(inner text, line)] of $(...) and `...`

    def __repr__(self):
        return "%s(%r)@%d" % (self.kind, self.text, self.line)


class Lexer:
    def __init__(self, text, line=1):
        self.s, self.i, self.line = text, 0, line
        self.toks = []
        self.heredocs = []  # pending [(delimiter, strip_tabs)]

    # --- character helpers -------------------------------------------------
    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s):
                if self.s[self.i] == "\n":
                    self.line += 1
                self.i += 1

    def cmd_start(self):
        """True where a new command may begin (reserved words count)."""
        if not self.toks:
            return True
        t = self.toks[-1]
        if t.kind in ("nl",):
            return True
        if t.kind == "op":
            return t.text in ("&&", "||", "|", "|&", ";", "&", "(", ")", ";;", ";&", ";;&")
        if t.kind == "word":
            return t.text in ("then", "do", "else", "elif", "if", "while", "until", "!", "{", "time", "}")
        return False

    # --- scanning pieces of a word -----------------------------------------
    def single_quote(self):
        start = self.line
        self.adv()
        while self.peek() != "'":
            if not self.peek():
                raise ParseError(start, "unterminated single quote")
            self.adv()
        self.adv()

    def double_quote(self, subst):
        start = self.line
        self.adv()
        while self.peek() != '"':
            c = self.peek()
            if not c:
                raise ParseError(start, "unterminated double quote")
            if c == "\\":
                self.adv(2)
            elif c == "$" and self.peek(1) in "({":
                self.dollar(subst)
            elif c == "`":
                self.backtick(subst)
            else:
                self.adv()
        self.adv()

    def backtick(self, subst):
        start, b = self.line, self.i + 1
        self.adv()
        while self.peek() != "`":
            if not self.peek():
                raise ParseError(start, "unterminated backquote")
            if self.peek() == "\\":
                self.adv()
            self.adv()
        subst.append((self.s[b:self.i], start))
        self.adv()

    def balanced(self, open_c, close_c):
        """From just after an opening bracket to just after its match,
        skipping quotes and nested substitutions; returns the inner text."""
        start, b, depth = self.line, self.i, 1
        while True:
            c = self.peek()
            if not c:
                raise ParseError(start, "unterminated %s" % open_c)
            if c == "\\":
                self.adv(2)
                continue
            if c == "'":
                self.single_quote()
                continue
            if c == '"':
                self.double_quote([])
                continue
            if c == "`":
                self.backtick([])
                continue
            if c == "#" and open_c == "(" and (self.i == 0 or self.s[self.i - 1] in " \t\n;"):
                while self.peek() and self.peek() != "\n":
                    self.adv()
                continue
            if c == "$" and self.peek(1) in "({":
                self.dollar([])
                continue
            if c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
                if depth == 0:
                    inner = self.s[b:self.i]
                    self.adv()
                    return inner
            self.adv()

    def dollar(self, subst):
        """At a $( or ${ (or $(( ): scan to the end; record $(...) text."""
        start = self.line
        if self.peek(1) == "{":
            self.adv(2)
            self.balanced("{", "}")
        elif self.peek(1) == "(" and self.peek(2) == "(":
            self.adv(3)
            self.balanced("(", ")")
            if self.peek() != ")":
                raise ParseError(start, "unterminated $((")
            self.adv()
        else:
            self.adv(2)
            subst.append((self.balanced("(", ")"), start))

    # --- tokens ------------------------------------------------------------
    def word(self):
        start, b, subst = self.line, self.i, []
        while True:
            c = self.peek()
            if not c or c in " \t\n" or c in OP_CHARS:
                if c == "(" and re.match(r"^[A-Za-z_][A-Za-z0-9_]*\+?=$", self.s[b:self.i]):
                    self.adv()  # an array assignment a=(...)
                    self.balanced("(", ")")
                    continue
                if c in "<>" and self.peek(1) == "(" and self.i == b:
                    self.adv()  # process substitution <(...) >(...)
                    self.adv()
                    subst.append((self.balanced("(", ")"), start))
                    continue
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    break
                self.adv(2)
            elif c == "'":
                self.single_quote()
            elif c == '"':
                self.double_quote(subst)
            elif c == "`":
                self.backtick(subst)
            elif c == "$" and self.peek(1) in "({":
                self.dollar(subst)
            else:
                self.adv()
        return Tok("word", self.s[b:self.i], start, subst)

    def raw_until(self, end, what):
        """[[ ... ]] and (( ... )): raw text up to the closing word."""
        start, b, subst = self.line, self.i, []
        while True:
            c = self.peek()
            if not c:
                raise ParseError(start, "unterminated " + what)
            if what == "[[" and self.s.startswith("]]", self.i) and \
                    self.s[self.i - 1] in " \t" and (self.i + 2 >= len(self.s) or self.s[self.i + 2] in " \t\n;&|)"):
                inner = self.s[b:self.i]
                self.adv(2)
                return inner, subst
            if what == "((" and self.s.startswith("))", self.i):
                inner = self.s[b:self.i]
                self.adv(2)
                return inner, subst
            if c == "\\":
                self.adv(2)
            elif c == "'":
                self.single_quote()
            elif c == '"':
                self.double_quote(subst)
            elif c == "$" and self.peek(1) in "({":
                self.dollar(subst)
            elif c == "`":
                self.backtick(subst)
            else:
                self.adv()

    def read_heredocs(self):
        for delim, strip in self.heredocs:
            while True:
                if self.i >= len(self.s):
                    raise ParseError(self.line, "here-document %s not closed" % delim)
                e = self.s.find("\n", self.i)
                e = len(self.s) if e < 0 else e
                l = self.s[self.i:e]
                self.adv(e - self.i + 1)
                if (l.lstrip("\t") if strip else l) == delim:
                    break
        self.heredocs = []

    def run(self):
        while True:
            c = self.peek()
            if not c:
                self.toks.append(Tok("eof", "", self.line))
                return self.toks
            if c in " \t":
                self.adv()
            elif c == "\\" and self.peek(1) == "\n":
                self.adv(2)
            elif c == "\n":
                self.toks.append(Tok("nl", "\n", self.line))
                self.adv()
                if self.heredocs:
                    self.read_heredocs()
            elif c == "#":
                while self.peek() and self.peek() != "\n":
                    self.adv()
            elif c in OP_CHARS:
                self.op()
            else:
                if self.cmd_start() or (self.toks and self.toks[-1].kind == "word" and self.toks[-1].text == "for"):
                    if self.s.startswith("[[", self.i) and self.peek(2) in " \t\n":
                        line = self.line
                        self.adv(2)
                        inner, subst = self.raw_until("]]", "[[")
                        self.toks.append(Tok("dbracket", inner, line, subst))
                        continue
                t = self.word()
                self.toks.append(t)

    def op(self):
        line = self.line
        s = self.s
        if (self.cmd_start() or (self.toks and self.toks[-1].text == "for")) and s.startswith("((", self.i):
            self.adv(2)
            inner, subst = self.raw_until("))", "((")
            self.toks.append(Tok("arith", inner, line, subst))
            return
        for o in (";;&", "<<<", "<<-", "&&", "||", ";;", ";&", "|&", "<<", ">>", ">&", "<&", "&>", ">|", "<>",
                  "|", "&", ";", "(", ")", "<", ">"):
            if s.startswith(o, self.i):
                if o in ("<", ">") and self.peek(1) == "(":
                    t = self.word()  # <(...) / >(...)
                    self.toks.append(t)
                    return
                self.adv(len(o))
                self.toks.append(Tok("op", o, line))
                if o in ("<<", "<<-"):
                    while self.peek() in " \t":
                        self.adv()
                    d = self.word()
                    self.toks.append(d)
                    self.heredocs.append((re.sub(r"[\"'\\]", "", d.text), o == "<<-"))
                return
        raise ParseError(line, "unexpected %r" % s[self.i])


REDIR = {"<", ">", ">>", ">&", "<&", "&>", ">|", "<>", "<<<", "<<", "<<-"}


# --- the tree -----------------------------------------------------------------
class Simple:
    def __init__(self, words, line, redirs=()):
        self.words, self.line = words, line  # words: [Tok]
        self.redirs = list(redirs)  # [(op, target)]

    def name(self):
        for w in self.words:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", w.text):
                return unquote(w.text)
        return ""

    def args(self):
        seen = False
        out = []
        for w in self.words:
            if not seen and re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", w.text):
                continue
            seen = True
            out.append(w)
        return out[1:]


class Compound:
    """kind: group, subshell, if, loop, case, dbracket, arith, func."""
    def __init__(self, kind, line, parts=None, text="", name=""):
        self.kind, self.line, self.parts, self.text, self.name = kind, line, parts or [], text, name
        self.redirs = []


class Pipeline:
    def __init__(self, cmds, negated, line):
        self.cmds, self.negated, self.line = cmds, negated, line


class AndOr:
    def __init__(self, items, ops):
        self.items, self.ops = items, ops  # ops[i] joins items[i] and items[i + 1]


def unquote(t):
    return re.sub(r"[\"']", "", t)


class Parser:
    def __init__(self, toks):
        self.t, self.k = toks, 0

    def cur(self):
        return self.t[self.k]

    def next(self):
        t = self.t[self.k]
        self.k += 1
        return t

    def is_word(self, *texts):
        t = self.cur()
        return t.kind == "word" and (not texts or t.text in texts)

    def is_op(self, *texts):
        t = self.cur()
        return t.kind == "op" and t.text in texts

    def skip_nl(self):
        while self.cur().kind == "nl":
            self.k += 1

    def expect_word(self, w):
        self.skip_nl()
        if not self.is_word(w):
            raise ParseError(self.cur().line, "expected %r, found %r" % (w, self.cur().text))
        self.next()

    def parse_list(self, ends=()):
        """And-or lists up to a reserved word in ENDS, a ')' or ';;', or EOF."""
        out = []
        while True:
            while self.cur().kind == "nl" or self.is_op(";", "&"):
                self.k += 1
            t = self.cur()
            if t.kind == "eof" or self.is_op(")", ";;", ";&", ";;&"):
                return out
            if t.kind == "word" and t.text in ends:
                return out
            if t.kind == "word" and t.text in RESERVED_END:
                raise ParseError(t.line, "unexpected %r" % t.text)
            out.append(self.parse_and_or())
            if not (self.cur().kind in ("nl", "eof") or self.is_op(";", "&", ")", ";;", ";&", ";;&")
                    or (self.cur().kind == "word" and self.cur().text in ends)):
                raise ParseError(self.cur().line, "unexpected %r" % self.cur().text)

    def parse_and_or(self):
        items, ops = [self.parse_pipeline()], []
        while self.is_op("&&", "||"):
            ops.append(self.next().text)
            self.skip_nl()
            items.append(self.parse_pipeline())
        return AndOr(items, ops)

    def parse_pipeline(self):
        line = self.cur().line
        neg = False
        if self.is_word("!"):
            self.next()
            neg = True
        cmds = [self.parse_command()]
        while self.is_op("|", "|&"):
            self.next()
            self.skip_nl()
            cmds.append(self.parse_command())
        return Pipeline(cmds, neg, line)

    def redirs(self):
        """Redirections after a compound command (not kept)."""
        while self.cur().kind == "op" and self.cur().text in REDIR:
            self.next()
            self.next()

    def parse_command(self):
        t = self.cur()
        if t.kind == "dbracket":
            self.next()
            c = Compound("dbracket", t.line, text=t.text)
            c.subst = t.subst
            self.redirs()
            return c
        if t.kind == "arith":
            self.next()
            c = Compound("arith", t.line, text=t.text)
            c.subst = t.subst
            return c
        if t.kind == "op" and t.text == "(":
            self.next()
            body = self.parse_list()
            if not self.is_op(")"):
                raise ParseError(self.cur().line, "expected ')'")
            self.next()
            self.redirs()
            return Compound("subshell", t.line, [("body", body)])
        if t.kind != "word" and not (t.kind == "op" and t.text in REDIR):
            raise ParseError(t.line, "unexpected %r" % t.text)
        w = t.text if t.kind == "word" else ""
        if w == "{":
            self.next()
            body = self.parse_list({"}"})
            self.expect_word("}")
            c = Compound("group", t.line, [("body", body)])
            while self.cur().kind == "op" and self.cur().text in REDIR:
                op = self.next().text
                c.redirs.append((op, self.next().text))
            return c
        if w == "if":
            self.next()
            parts = []
            while True:
                cond = self.parse_list({"then"})
                self.expect_word("then")
                body = self.parse_list({"elif", "else", "fi"})
                parts.append(("cond", cond))
                parts.append(("body", body))
                self.skip_nl()
                if self.is_word("elif"):
                    self.next()
                    continue
                if self.is_word("else"):
                    self.next()
                    parts.append(("body", self.parse_list({"fi"})))
                self.expect_word("fi")
                break
            self.redirs()
            return Compound("if", t.line, parts)
        if w in ("while", "until"):
            self.next()
            cond = self.parse_list({"do"})
            self.expect_word("do")
            body = self.parse_list({"done"})
            self.expect_word("done")
            self.redirs()
            return Compound("loop", t.line, [("cond", cond), ("body", body)])
        if w in ("for", "select"):
            self.next()
            words = []
            if self.cur().kind == "arith":
                words.append(self.next())
            else:
                words.append(self.next())  # the name
                self.skip_nl()
                if self.is_word("in"):
                    self.next()
                    while self.cur().kind == "word":
                        words.append(self.next())
            while self.cur().kind == "nl" or self.is_op(";"):
                self.next()
            self.expect_word("do")
            body = self.parse_list({"done"})
            self.expect_word("done")
            self.redirs()
            c = Compound("loop", t.line, [("body", body)])
            c.words = words
            return c
        if w == "case":
            self.next()
            subj = self.next()
            self.skip_nl()
            self.expect_word("in")
            arms = []
            while True:
                self.skip_nl()
                if self.is_word("esac"):
                    self.next()
                    break
                if self.is_op("("):
                    self.next()
                while not self.is_op(")"):
                    if self.cur().kind == "eof":
                        raise ParseError(t.line, "case without esac")
                    self.next()
                self.next()
                arms.append(("body", self.parse_list({"esac"})))
                if self.is_op(";;", ";&", ";;&"):
                    self.next()
            self.redirs()
            c = Compound("case", t.line, arms)
            c.words = [subj]
            return c
        if w == "function":
            self.next()
            name = self.next().text
            if self.is_op("("):
                self.next()
                self.next()
            self.skip_nl()
            body = self.parse_command()
            return Compound("func", t.line, [("body", [AndOr([Pipeline([body], False, t.line)], [])])], name=name)
        # a simple command, or NAME() BODY, or @test "NAME" { BODY }
        words, redirs = [], []
        while True:
            c = self.cur()
            if c.kind == "word":
                if words and words[0].text == "@test" and c.text == "{" and len(words) >= 2:
                    body = self.parse_command()
                    return Compound("func", t.line, [("body", [AndOr([Pipeline([body], False, t.line)], [])])],
                                    name="@test " + unquote(words[1].text))
                words.append(self.next())
            elif c.kind == "op" and c.text in REDIR:
                self.next()
                if self.cur().kind == "word":
                    redirs.append((c.text, self.next().text))
            elif c.kind == "op" and c.text == "(" and len(words) == 1:
                self.next()
                if not self.is_op(")"):
                    raise ParseError(c.line, "expected ')' in a function definition")
                self.next()
                self.skip_nl()
                body = self.parse_command()
                return Compound("func", t.line, [("body", [AndOr([Pipeline([body], False, t.line)], [])])],
                                name=words[0].text)
            else:
                break
        if not words and t.kind == "word":
            raise ParseError(t.line, "empty command")
        return Simple(words, t.line, redirs)


# --- the rules ----------------------------------------------------------------
def sets_pipefail(cmd):
    if not isinstance(cmd, Simple) or cmd.name() != "set":
        return False
    ws = [w.text for w in cmd.args()]
    for j, w in enumerate(ws):
        if w == "pipefail" and j > 0 and re.match(r"^-[a-zA-Z]*o$", ws[j - 1]):
            return True
    return False


def is_check(p):
    """The pipeline's status is a check's verdict."""
    c = p.cmds[-1]
    if isinstance(c, Compound):
        return c.kind in ("dbracket", "arith")
    n = c.name()
    if n in CHECKS:
        return True
    if n == "jq":
        return any(re.match(r"^-[a-zA-Z]*e[a-zA-Z]*$", w.text) or w.text == "--exit-status" for w in c.args())
    return False


def diagnostic(c):
    """A command writing to bats' fd 3 or to stderr: a message for a person."""
    return any(op in (">&", ">") and t in ("3", "2", "&3", "&2") for op, t in c.redirs)


def is_grep_q(c):
    return isinstance(c, Simple) and c.name() in ("grep", "egrep", "fgrep") and any(
        re.match(r"^-[a-zA-Z]*q[a-zA-Z]*$", w.text) or w.text in ("--quiet", "--silent") for w in c.args())


def top_level_and(text):
    """`&&` outside parentheses in the body of a [[ ]]."""
    depth, quote, i = 0, None, 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif text.startswith("&&", i) and depth == 0:
            return True
        i += 1
    return False


JQ_ALL = re.compile(r"(?:\|\s*all\b(?!\s*\()|\ball\s*\()")
JQ_GUARD = re.compile(r"\blength\s*(?:>\s*0|>=\s*[1-9]|!=\s*0)\s+and\b")


class Linter:
    def __init__(self, path):
        self.path, self.found = path, []

    def add(self, line, rule, why):
        self.found.append((line, rule, why))

    def run(self, text, line=1):
        toks = Lexer(text, line).run()
        tree = Parser(toks).parse_list()
        if not Parser(toks).t[-1].kind == "eof":
            raise ParseError(toks[-1].line, "trailing text")
        return tree

    def lint_text(self, text):
        try:
            tree = self.run(text)
        except ParseError as e:
            self.add(e.line, "parse", "cannot read this as bash: %s" % e)
            return
        # set -o pipefail at the top level, or in setup(), holds for every test
        self.file_pipefail = any(
            sets_pipefail(c) for ao in tree for p in ao.items for c in p.cmds) or any(
            isinstance(c, Compound) and c.kind == "func" and c.name == "setup" and self.func_sets_pipefail(c)
            for ao in tree for p in ao.items for c in p.cmds)
        self.walk_list(tree, stmt=True, func="", state={"pipefail": self.file_pipefail})

    def func_sets_pipefail(self, f):
        found = []

        def visit(lst):
            for ao in lst:
                for p in ao.items:
                    for c in p.cmds:
                        if sets_pipefail(c):
                            found.append(c)
                        if isinstance(c, Compound):
                            for _, sub in c.parts:
                                visit(sub)
        for _, sub in f.parts:
            visit(sub)
        return bool(found)

    def walk_list(self, lst, stmt, func, state, ret=False):
        """ret: the list's last statement is a helper function's return value."""
        for j, ao in enumerate(lst):
            self.walk_and_or(ao, stmt, func, state, ret and j == len(lst) - 1)

    def walk_and_or(self, ao, stmt, func, state, ret=False):
        items, ops = ao.items, ao.ops
        for j, p in enumerate(items):
            last = j == len(items) - 1
            # a pipeline's status is checked by errexit only when it is the
            # last of its list, or followed by ||... and the list is a statement
            p_stmt = stmt and last
            # a helper's last statement is its status: `! cmd` and `a && b`
            # there are predicates, checked where the helper is called
            if stmt and last and p.negated and not ret:
                self.add(p.line, "negated", "a negated command checks nothing under set -e: write `run ! cmd`")
            if stmt and not ret and j > 0 and ops[j - 1] == "&&" and "||" not in ops and is_check(p):
                self.add(p.line, "and-check",
                         "a check after `&&`: a false left side ends the list quietly; one check per line (a conditional check is an `if`)")
            if stmt and j > 0 and ops[j - 1] == "||" and last:
                c = p.cmds[0]
                if isinstance(c, Simple) and len(p.cmds) == 1:
                    n = c.name()
                    a = [unquote(w.text) for w in c.args()]
                    prev = items[j - 1]
                    if n in ("true", ":") and not all(
                            isinstance(x, Simple) and x.name() in CLEANUP for x in prev.cmds):
                        self.add(p.line, "or-true",
                                 "`|| true` throws the status away: capture it (`run cmd`, or `cmd || st=$?`) and check it")
                    if n in ("return", "exit") and a[:1] == ["0"]:
                        self.add(p.line, "return-0",
                                 "`|| %s 0` turns a failure into success: fail with the reason, or skip naming the missing part of the machine" % n)
            self.walk_pipeline(p, p_stmt, func, state, ret and last and len(p.cmds) == 1 and not p.negated)

    def walk_pipeline(self, p, stmt, func, state, ret=False):
        cmds = p.cmds
        if stmt and len(cmds) > 1:
            first = cmds[0]
            if isinstance(first, Simple) and first.name() == "run":
                self.add(p.line, "run-pipe", "`run cmd | ...` pipes bats' run, not the command: run it, then check $output")
            elif is_grep_q(cmds[-1]):
                if any(not (isinstance(c, Simple) and c.name() in FILTERS) for c in cmds[:-1]):
                    self.add(p.line, "pipe-grep-q",
                             "`cmd | grep -q` loses cmd's status: capture with `run cmd`, then check $status and $output")
            elif not state["pipefail"] and not diagnostic(cmds[-1]):
                if any(not (isinstance(c, Simple) and c.name() in FILTERS) for c in cmds[:-1]):
                    self.add(p.line, "pipe-status",
                             "the status of all but the last command of this pipe is lost: `set -o pipefail` first, or capture")
        for c in cmds:
            self.walk_command(c, stmt, func, state, ret)

    def walk_command(self, c, stmt, func, state, ret=False):
        if isinstance(c, Simple):
            self.simple(c, stmt, func, state)
            return
        for sub, sline in getattr(c, "subst", []):
            self.nested(sub, sline)
        for w in getattr(c, "words", []):
            for sub, sline in w.subst:
                self.nested(sub, sline)
        if c.kind == "dbracket":
            if stmt and top_level_and(c.text):
                self.add(c.line, "and-in-test", "`&&` inside [[ ]]: two checks in one; one check per line")
            return
        if c.kind == "func":
            fstate = {"pipefail": self.file_pipefail}
            helper = not c.name.startswith("@test") and c.name not in ("setup", "setup_file", "teardown", "teardown_file")
            for _, sub in c.parts:
                self.walk_list(sub, True, c.name, fstate, helper)
            return
        for role, sub in c.parts:
            self.walk_list(sub, stmt and role == "body", func, state, ret and role == "body" and c.kind != "loop")

    def nested(self, text, line):
        """A $(...): its output is what counts; only the jq rule applies."""
        try:
            toks = Lexer(text, line).run()
            tree = Parser(toks).parse_list()
        except ParseError as e:
            self.add(e.line, "parse", "cannot read this $(...) as bash: %s" % e)
            return
        self.walk_list(tree, False, "", {"pipefail": True})

    def simple(self, c, stmt, func, state):
        for w in c.words:
            for sub, sline in w.subst:
                self.nested(sub, sline)
        n = c.name()
        args = c.args()
        if sets_pipefail(c):
            state["pipefail"] = True
        if n == "skip" and stmt is not None:
            reason = " ".join(unquote(w.text) for w in args).strip()
            if not reason:
                self.add(c.line, "skip-reason", "`skip` without a reason: say which part of the machine is missing")
            elif "KNOWN FAILURE" in reason:
                self.add(c.line, "skip-reason",
                         "a known failure is not a skip: make it an expected failure (meson should_fail, or TAP `# TODO`)")
        if n in DECLARE:
            for w in args:
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w.text) and w.subst:
                    self.add(c.line, "local-subst",
                             "`%s v=$(cmd)` hides cmd's status (%s's is 0): declare on one line, assign on the next" % (n, n))
        if n == "jq":
            for w in args:
                if w.text.startswith("-"):
                    continue
                f = w.text
                if JQ_ALL.search(f) and not JQ_GUARD.search(f):
                    self.add(c.line, "jq-all",
                             "jq's `all` is true on an empty array: check `length > 0 and all` in the same filter")
                break  # the first non-option argument is the filter


def lint_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    L = Linter(path)
    L.lint_text(text)
    return sorted(set(L.found))


def walk(args):
    """The files to lint: each FILE, and every *.bats and *.bash under each DIR."""
    paths = []
    for arg in args:
        if os.path.isdir(arg):
            paths += sorted(glob.glob(os.path.join(arg, "**", "*.bats"), recursive=True) +
                            glob.glob(os.path.join(arg, "**", "*.bash"), recursive=True))
        else:
            paths.append(arg)
    return paths


def main(argv):
    if len(argv) == 4 and argv[1] == "--self-test":
        bad, good = argv[2], argv[3]
        want = {}
        with open(bad, encoding="utf-8") as f:
            for n, l in enumerate(f, 1):
                m = re.search(r"EXPECT-REJECT\s+([a-z0-9,-]+)", l)
                if m:
                    want[n] = sorted(m.group(1).split(","))
                elif "EXPECT-REJECT" in l:
                    print("%s:%d: EXPECT-REJECT without the rule it expects" % (bad, n))
                    return 1
        got = {}
        for n, rule, _ in lint_file(bad):
            got.setdefault(n, []).append(rule)
        got = {n: sorted(r) for n, r in got.items()}
        rc = 0
        for n in sorted(set(want) | set(got)):
            if want.get(n) != got.get(n):
                print("%s:%d: expected %s, the lint says %s" % (bad, n, want.get(n) or "nothing", got.get(n) or "nothing"))
                rc = 1
        if not want:
            print("%s: no line marked EXPECT-REJECT" % bad)
            rc = 1
        for n, rule, why in lint_file(good):
            print("%s:%d: good sample rejected: [%s] %s" % (good, n, rule, why))
            rc = 1
        # a directory is walked for *.bash helpers as for *.bats files
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(bad, encoding="utf-8") as f, open(os.path.join(d, "helpers.bash"), "w", encoding="utf-8") as h:
                h.write(f.read())
            walked = [(n, r) for p in walk([d]) for n, r, _ in lint_file(p)]
            if sorted(walked) != sorted((n, r) for n, rs in want.items() for r in rs):
                print("%s: a directory holding it as helpers.bash: %d findings, want %d" % (
                    bad, len(walked), sum(len(r) for r in want.values())))
                rc = 1
        if rc == 0:
            rules = sorted({r for rs in want.values() for r in rs})
            print("lint_bats: %d findings on %d lines of the bad sample, as marked (rules: %s); good sample accepted" % (
                sum(len(r) for r in want.values()), len(want), " ".join(rules)))
        return rc
    if len(argv) < 2 or argv[1].startswith("-"):
        print("usage: lint_bats.py FILE|DIR... | --self-test BAD GOOD", file=sys.stderr)
        return 2
    paths = walk(argv[1:])
    if not paths:
        print("lint_bats: no .bats or .bash file in %s" % " ".join(argv[1:]), file=sys.stderr)
        return 1
    bad = 0
    for path in paths:
        for n, rule, why in lint_file(path):
            print("%s:%d: [%s] %s" % (path, n, rule, why))
            bad += 1
    if bad:
        print("lint_bats: %d finding(s) to fix" % bad)
        return 1
    print("lint_bats: %d bats and bash files, every check can fail" % len(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
