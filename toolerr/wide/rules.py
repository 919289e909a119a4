"""The wide rule set: is a tool result a failure, and of which kind, on the whole evidence.

Detection reads the structure first (toolerr.wide.shapes): a wrapper's exit code decides
(0: not a failure, whatever the words; non-zero: a failure), a JSON body decides by its
error members, an HTTP error page by its status. Only a text with no such structure is
read for failure shapes: a report line among the first lines (exceptions, tracebacks,
`Error:`, `fatal:`, compiler and npm diagnostics), a command diagnostic, a test runner's
failed verdict, or an agent's own failure sentence (edit mismatch, permission denial). A
text that opens like a document (a read file, a diff, a listing, an underlined title) is not a
failure, nor is a test run whose passing verdict ends it when no report line opens it.

Classification takes the first tier with evidence, in this order; conflicting evidence
within the deciding tier gives `ambiguous`:
  1. a user or harness denial -> unrecoverable
  2. a quota or billing message -> unrecoverable
  3. a rate limit -> transient
  4. the command's own timeout, or a signal -> ambiguous
  5. HTTP statuses: 401/403 unrecoverable; 400/404/405/409/410/422 fixable;
     408/425/429/502/503/504 transient; any other ambiguous
  6. operating-system and network conditions (errno names and their messages); DNS
     failures and refused connections are never given a kind (in a sandbox they mostly
     mean "no network"), nor are a timeout in a DNS lookup, a missing path under a JSON-RPC
     internal error, and a reset by a local server; "Permission denied" is unrecoverable on
     a system path, fixable on a relative path the agent ran, unsure elsewhere
  7. the exception class of the last exception line
  8. unrecoverable words (Unauthorized, invalid API key, ...) and fixable words (edit
     mismatches, validation, compiler and usage errors, failed tests)
  9. nothing: ambiguous
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from exactserve.toolerr.wide import agents as a
from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.families import FIXABLE_FAMILIES as FAMILY_WORDS
from exactserve.toolerr.wide.probes import Lexicon
from exactserve.toolerr.wide.shapes import (
    JSON_EXIT_KEYS,
    TAIL_CHARS,
    Shape,
    inner_text,
    read_shape,
    window,
)

# Agents' own failure sentences stand at the start or the end of a result.
PHRASE_HEAD = 600
PHRASE_TAIL = 300
PHRASE_SPAN = PHRASE_HEAD + PHRASE_TAIL

# The word lists of words.py and general.py, in the order they are consulted.
WORDS = {
    "phrases": w.FAILURE_PHRASES + g.FAILURE_PHRASES + a.FAILURE_PHRASES,
    "denial": w.DENIAL + a.DENIAL,
    "quota": w.QUOTA + g.QUOTA + a.QUOTA,
    "retry": w.RETRY_AFTER,
    "rate": w.RATE_LIMIT + g.RATE_LIMIT,
    "timeout": w.OWN_TIMEOUT,
    "conditions": w.CONDITIONS + g.CONDITIONS + a.CONDITIONS,
    "unsure": w.UNSURE_NETWORK + g.UNSURE_NETWORK + a.UNSURE,
    "permission": w.PERMISSION,
    "unrecoverable": w.UNRECOVERABLE_WORDS + g.UNRECOVERABLE_WORDS + a.UNRECOVERABLE_WORDS,
    "fixable": w.FIXABLE_WORDS + g.FIXABLE_WORDS + a.FIXABLE_WORDS,
}
# ... grouped for lookup (toolerr.wide.probes).
FAILURE_PHRASES = Lexicon(WORDS["phrases"], w.MARKERS)
DENIAL = Lexicon(WORDS["denial"], w.MARKERS)
QUOTA = Lexicon(WORDS["quota"], w.MARKERS)
RETRY_AFTER = Lexicon(WORDS["retry"], w.MARKERS)
RATE_LIMIT = Lexicon(WORDS["rate"], w.MARKERS)
OWN_TIMEOUT = Lexicon(WORDS["timeout"], w.MARKERS)
CONDITIONS = Lexicon(tuple(word for word, _ in WORDS["conditions"]), w.MARKERS)
CONDITION_KIND = dict(WORDS["conditions"])
UNSURE_NETWORK = Lexicon(WORDS["unsure"], w.MARKERS)
PERMISSION = Lexicon(WORDS["permission"], w.MARKERS)
UNRECOVERABLE_WORDS = Lexicon(WORDS["unrecoverable"], w.MARKERS)
FIXABLE_WORDS = Lexicon(WORDS["fixable"], w.MARKERS)
# Tiers 1-4 as one list: its first present word is the first tier's evidence, and the
# lookup passes over the later tiers' words once an earlier word is found (one pass over
# the text's characters instead of four). FIRST_TIER names each word's (earliest) tier.
FIRST_TIERS = Lexicon(
    tuple(word for tier in ("denial", "quota", "rate", "timeout") for word in WORDS[tier]),
    w.MARKERS,
)
FIRST_TIER: dict[str | None, str] = {}
for _tier in ("denial", "quota", "rate", "timeout"):
    for _word in WORDS[_tier]:
        FIRST_TIER.setdefault(_word, _tier)
# Tier 6 as one list, each word with its kind ("unsure" and "permission" for the words of
# UNSURE_NETWORK and PERMISSION): one pass instead of three.
SIXTH_KIND = (
    *(kind for _, kind in WORDS["conditions"]),
    *("unsure" for _ in WORDS["unsure"]),
    *("permission" for _ in WORDS["permission"]),
)
SIXTH_TIER = Lexicon(
    (*CONDITIONS.words, *WORDS["unsure"], *WORDS["permission"]),
    w.MARKERS,
)
# Every report line, words.py's and general.py's, matched at the start of each line (one
# match per line is cheaper than a MULTILINE search trying `^` at every character).
REPORT_LINE = re.compile(
    rf"(?:{w.BUILDKIT_STEP}|{a.CLOCK_PREFIX})?(?:{w.FAILURE_BODY}|{g.PREFIXED_BODY}|{g.ERRNO_BODY}|{a.REPORT_BODY})"
)
EDGE_SENTENCE = re.compile(rf"{g.EDGE_SENTENCE.pattern}|{a.EDGE_BODY}")
BENIGN_REPORTS = g.BENIGN_REPORTS + a.BENIGN_REPORTS
LOG_RECORD = re.compile(a.LOG_RECORD)
# Every pattern that names an HTTP status (its one group), in any order.
STATUS_PATTERNS = (*w.HTTP_STATUS, *w.STATUS_CONTEXT, g.STATUS_MORE, re.compile(a.STATUS_HTTP))
# The markers of the line patterns tried only when one occurs (compiler lines, status lines,
# ...), looked up together by their rarest characters rather than scanned one by one.
COMPILER_MARKS = Lexicon(w.COMPILER_MARKS)
LINE_MARKS = Lexicon(tuple(mark for marks, _ in g.MARKED_LINES for mark in marks))
# A test runner's passing verdict holds one of these (looked up the same way).
PASS_MARKS = Lexicon(w.PASS_MARKS)
FIXABLE_FAMILIES = tuple(
    (mark, Lexicon(words, w.MARKERS)) for mark, words in (*FAMILY_WORDS, *g.FIXABLE_FAMILIES)
)
# The fixable words followed by the families' markers: its first present entry is the first
# fixable word or, when there is none, the first family marker that occurs (the families
# before it need no look; the markers are found through their rare characters too).
FIXABLE_THEN_MARKERS = Lexicon(
    (*WORDS["fixable"], *(mark for mark, _ in FIXABLE_FAMILIES)), w.MARKERS
)


FAILED_STATES = ("error", "failure", "failed", "fail", "ERROR", "FAILURE", "FAILED")


class Verdict(NamedTuple):
    """A wide-mode decision: the detecting rule, the kind, and the evidence behind both
    (the matched rule and words, for the X-Tool-Errors header)."""

    rule: str
    kind: str
    evidence: str


def judge(text: str, explicit_rule: str | None) -> Verdict | None:
    """The wide verdict on one tool result, or None when it is not a failure.

    `explicit_rule` is the explicit flag that already marks it a failure (`is_error`,
    `cline`, `opencode`, `mcp-iserror`), or None.
    """
    shape = read_shape(text)
    rule, why = (explicit_rule, "flag") if explicit_rule else _detect(text, shape)
    if rule is None:
        return None
    evidence_text = window(text)
    if shape.json is not None:
        evidence_text = inner_text(shape.json) or evidence_text
    kind, because = classify_wide(evidence_text, shape)
    return Verdict(rule, kind, f"{why}; {because}")


def _detect(text: str, shape: Shape) -> tuple[str | None, str]:
    if shape.json is not None:
        return _json_failure(shape.json)
    if shape.exit_code is not None:
        return ("wide-exit", f"exit {shape.exit_code}") if shape.exit_code else (None, "")
    if shape.signal is not None:
        return "wide-signal", f"signal {shape.signal}"
    if shape.html_status is not None:
        return "wide-http", f"HTTP page {shape.html_status}"
    head = text.lstrip()[:2000]
    first_lines = head.split("\n", w.FAILURE_LINES)[: w.FAILURE_LINES]
    if head.startswith("# ") and w.GO_BUILD_HEADER.match(head):  # `go build`'s package line
        return "wide-line", f"line {_quote(first_lines[1])}"
    if w.DOCUMENT_START.match(first_lines[0]):
        # a comment line echoed by make or a shell opens like a document: make's own
        # failure on the last line still decides
        last = _stripped_end(text, 300).rsplit("\n", 1)[-1]
        if last.startswith("make") and g.TERMINAL_LINE.match(last):
            return "wide-diagnostic", f"diagnostic {_quote(last)}"
        return None, ""
    found = _line_match((REPORT_LINE,), first_lines)
    if found is not None and found.string is first_lines[0]:  # a report opens the text
        return "wide-line", f"line {_quote(found.group(0))}"
    if len(first_lines) > 1 and w.SETEXT_UNDERLINE.match(first_lines[1]):
        if w.SETEXT_TITLE.match(first_lines[0]):
            return None, ""  # a title underlined (Markdown, reStructuredText): a document
    rule, why = _later_failure(text, first_lines, found)
    if rule is None or rule == "wide-tests":
        return rule, why
    if rule != "wide-line" and _is_listing(first_lines, text):
        return None, ""  # a search's listing: the failure words in it are the files' text
    if _passed_at_end(text):
        return None, ""  # a passing test run that logged errors on the way
    return rule, why


def _later_failure(
    text: str, first_lines: list[str], found: re.Match | None
) -> tuple[str | None, str]:
    """The failure shapes of a text that no report line opens: a report line further down
    (`found`, if any), marked lines, failure sentences, diagnostics, verdicts, phrases."""
    if found:
        return "wide-line", f"line {_quote(found.group(0))}"
    lines = "\n".join(first_lines)
    if COMPILER_MARKS.first(lines) is not None:
        found = w.COMPILER_LINE.search(lines)
    marked = LINE_MARKS.present(lines) if found is None else ()  # the markers, in one lookup
    for marks, pattern in g.MARKED_LINES:
        if found is None and marked and any(mark in marked for mark in marks):
            found = pattern.search(lines)
    if found:
        return "wide-line", f"line {_quote(found.group(0))}"
    found = _line_match((EDGE_SENTENCE,), first_lines[:2])
    if found:
        return "wide-sentence", f"first lines {_quote(found.group(0))}"
    tail = text[-TAIL_CHARS:]
    last_lines = tail.rstrip().rsplit("\n", g.EDGE_LINES)[-g.EDGE_LINES :]
    found = _final_diagnostic(text)
    if found is None:  # the failure a long output ends with
        patterns = (g.TERMINAL_LINE, REPORT_LINE, EDGE_SENTENCE)
        found = _line_match(patterns, last_lines, tried=set(first_lines))
        found = found and found.group(0)
    if found:
        return "wide-diagnostic", f"diagnostic {_quote(found)}"
    found = _test_verdict(tail) or _test_verdict(lines)
    if found:
        return "wide-tests", f"verdict {_quote(found)}"
    scope = text[:PHRASE_HEAD] + "\n" + text[-PHRASE_TAIL:] if len(text) > PHRASE_SPAN else text
    phrase = FAILURE_PHRASES.first(scope)
    if phrase is not None and w.NUMBERED_LINE.search(scope):  # a file's lines are quoted
        said = [p for p in FAILURE_PHRASES.present(scope) if _said_outside_numbers(scope, p)]
        phrase = said[0] if said else None
    if phrase is not None:
        return "wide-phrase", f"phrase {_quote(phrase)}"
    return None, ""


def _said_outside_numbers(text: str, phrase: str) -> bool:
    """Whether `phrase` occurs in `text` on a line that is not a file's numbered line (Claude
    Code's `The file ... has been updated.` and the edited lines after it, `cat -n`)."""
    at = text.find(phrase)
    while at != -1:
        if not w.NUMBERED_PREFIX.match(text, text.rfind("\n", 0, at) + 1):
            return True
        at = text.find(phrase, at + 1)
    return False


def _is_listing(first_lines: list[str], text: str) -> bool:
    """Whether the first lines and the last one are all a search's listing lines (`grep -rn`
    output), blank lines and `--` separators aside."""
    if not w.LISTING_LINE.match(first_lines[0]):  # (the first line is never blank)
        return False
    last = text[-TAIL_CHARS:].rstrip().rsplit("\n", 1)[-1]
    return all(
        w.LISTING_LINE.match(line) or not line.strip() or line == "--"
        for line in (*first_lines, last)
    )


def _passed_at_end(text: str) -> bool:
    """Whether the text ends with a test runner's passing verdict and names no failed test:
    the run passed, whatever its tests logged on the way (`stderr | ... Error: boom`)."""
    tail = text[-TAIL_CHARS:]
    if PASS_MARKS.first(tail) is None:
        return False
    last = tail.rstrip().rsplit("\n", g.EDGE_LINES + 2)[-(g.EDGE_LINES + 2) :]
    return (
        w.TEST_PASSED.search("\n".join(last)) is not None
        and w.FAILED_COUNT.search(tail) is None
        and _test_verdict(tail) is None
    )


def _test_verdict(text: str) -> str | None:
    """A test runner's failed verdict (else a checker's count of errors) in `text`, unless
    the same runner's passing verdict follows it (a grep over a log of several runs). (The
    search skips from newline to newline, cheaper than testing the words every verdict holds
    first.)"""
    found = w.TEST_FAILED.search(text)
    if found is None and "Found " in text[-TAIL_CHARS:]:  # a checker's count ends its output
        found = w.CHECKER_FAILED.search(text)
    if found is None:
        return None
    verdict, end = found
    if w.TEST_PASSED_AFTER in text[end:]:
        return None
    return verdict


def _line_match(
    patterns: tuple[re.Pattern, ...], lines: list[str], tried: set[str] | frozenset = frozenset()
) -> re.Match | None:
    """The first match of one of `patterns` at the start of one of `lines`. A line equal to
    one already tried is skipped (blank lines, repeated progress lines), and REPORT_LINE is
    not tried again on a line in `tried` (first lines where it found no report: a short
    text's last lines are among its first)."""
    for line in dict.fromkeys(lines):  # each distinct line once, in order
        for pattern in patterns:
            if tried and pattern is REPORT_LINE and line in tried:
                continue
            found = pattern.match(line)
            if found and not line.startswith(BENIGN_REPORTS) and not LOG_RECORD.match(line):
                return found
    return None


def _final_diagnostic(text: str) -> str | None:
    """A command diagnostic (`ls: x: No such file or directory`) that ends the output: a
    warning on stderr followed by normal output is not a failure."""
    last = _stripped_end(text, 400).rsplit("\n", 1)[-1]
    found = w.COMMAND_DIAGNOSTIC.match(last)
    return found.group(0) if found else None


def _stripped_end(text: str, size: int) -> str:
    """`text.rstrip()[-size:]` without copying the whole text: from its last characters,
    unless trailing blanks fill them (then from the whole text)."""
    end = text[-size - 80 :].rstrip()
    if len(end) >= size or len(text) <= size + 80:
        return end[-size:]
    return text.rstrip()[-size:]


def _json_failure(value: Any) -> tuple[str | None, str]:
    if isinstance(value, dict):
        for key in JSON_EXIT_KEYS:
            code = value.get(key)
            if isinstance(code, int) and not isinstance(code, bool):
                return ("wide-exit", f"{key} {code}") if code else (None, "")
        error = value.get("error")
        if error not in (None, False, "", {}, []):
            # an object must read as an error (`{"message": ...}`), not as a locale file's
            # strings (`{"error": {"notFound": "..."}}`)
            if not isinstance(error, dict) or not a.ERROR_OBJECT_KEYS.isdisjoint(error):
                return "wide-json", "JSON error member"
        if value.get("success") is False or value.get("ok") is False:
            return "wide-json", "JSON success false"
        for key in ("status", "result", "state"):  # {"result": "failure", ...}
            if value.get(key) in FAILED_STATES:
                return "wide-json", f"JSON {key} {_quote(value[key])}"
        # an API's bare error object: {"type": "invalid_request_error", "message": ...}
        kind = value.get("type")
        if isinstance(kind, str) and kind.endswith("_error") and "message" in value:
            return "wide-json", f"JSON type {_quote(kind)}"
    return None, ""


def classify_wide(text: str, shape: Shape | None = None) -> tuple[str, str]:
    """(kind, evidence) for a failure whose evidence window is `text`."""
    seen: dict[str, bool] = {}  # markers scanned for, shared by the tiers' lookups
    word = FIRST_TIERS.first(text, seen)  # DENIAL, QUOTA, RATE_LIMIT, OWN_TIMEOUT in turn
    tier = FIRST_TIER.get(word)
    if tier == "denial":
        return "unrecoverable", f"denial {_quote(word)}"
    if tier == "quota":
        retry = RETRY_AFTER.first(text)
        if retry is not None:
            return "ambiguous", f"quota {_quote(word)} and {_quote(retry)} disagree"
        return "unrecoverable", f"quota {_quote(word)}"
    if tier == "rate":
        return "transient", f"rate limit {_quote(word)}"
    if tier == "timeout":
        return "ambiguous", f"own timeout {_quote(word)}"
    if shape is not None and shape.signal is not None:
        return "ambiguous", f"signal {shape.signal}"
    if shape is not None and shape.exit_code in a.SIGNAL_EXITS:
        return "ambiguous", f"exit {shape.exit_code}: killed by a signal"
    statuses = _http_statuses(text, shape)
    if statuses:
        kinds = {_status_kind(s) for s in statuses}
        named = ",".join(str(s) for s in statuses)
        if len(kinds) == 1:
            return kinds.pop(), f"HTTP {named}"
        return "ambiguous", f"HTTP {named} disagree"
    decided = _conditions(text, seen)
    if decided is not None:
        return decided
    decided = _exception_kind(text)
    if decided is not None:
        return decided
    bad = UNRECOVERABLE_WORDS.first(text, seen)
    # the fixable words, then (only when none occurs) the tool families whose marker occurs
    found = FIXABLE_THEN_MARKERS.first_at(text, seen)
    fix, families = None, FIXABLE_FAMILIES[found - FIXABLE_WORDS.size :]
    if found < FIXABLE_WORDS.size:
        fix, families = FIXABLE_THEN_MARKERS.words[found], ()
    for marker, family in families:
        if fix is None and marker in text:
            fix = family.first(text)
    if fix is None and _test_verdict(text):
        fix = "failed tests"
    if fix is None and "error: " in text and w.COMPILER_ERROR.search(text):
        fix = "compiler error"
    if bad and fix:
        return "ambiguous", f"words {_quote(bad)} and {_quote(fix)} disagree"
    if bad:
        return "unrecoverable", f"words {_quote(bad)}"
    if fix:
        return "fixable", f"words {_quote(fix)}"
    return "ambiguous", "no evidence of a kind"


def _exception_kind(text: str) -> tuple[str, str] | None:
    """The kind of the last exception class named on a report line (or, when none is
    named there, in the middle of a line): the known classes, then the words of the
    class's own name. (Every class named ends in `Error`, `Exception` or `Timeout`, or
    follows a `::`: a text with none of them names none, and costs four scans at most.)"""
    if not ("Error" in text or "Exception" in text or "Timeout" in text or "::" in text):
        return None
    names = [a or b for a, b in w.EXCEPTION_NAME.findall(text)] or g.classes_mid_line(text)
    if not names:
        return None
    name = names[-1]
    if name in w.EXCEPTION_KIND:
        return w.EXCEPTION_KIND[name], f"exception {name}"
    kind = g.class_kind(name)
    return (kind, f"exception class {name}") if kind else None


def _http_statuses(text: str, shape: Shape | None) -> list[int]:
    scope = text[: w.HTTP_SCOPE]
    found = set()
    if "4" in scope or "5" in scope:  # every status is 4xx or 5xx: most texts hold neither digit
        found = {int(status) for pattern in STATUS_PATTERNS for status in pattern.findall(scope)}
    if shape is not None and shape.html_status is not None:
        found.add(shape.html_status)
    return sorted(found)[:4]


def _status_kind(status: int) -> str:
    if status in (401, 402, 403):  # 402: Payment Required (billing)
        return "unrecoverable"
    if status in (400, 404, 405, 409, 410, 422):
        return "fixable"
    if status in (408, 425, 429, 502, 503, 504, 529):  # 529: Anthropic's "Overloaded"
        return "transient"
    return "ambiguous"


def _conditions(text: str, seen: dict[str, bool] | None = None) -> tuple[str, str] | None:
    kinds: dict[str, str] = {}
    unsure = None
    permission = False
    for index in SIXTH_TIER.present_at(text, seen):  # CONDITIONS, UNSURE_NETWORK, PERMISSION
        word, kind = SIXTH_TIER.words[index], SIXTH_KIND[index]
        if kind == "unsure":
            unsure = unsure or word
        elif kind == "permission":
            permission = True
        else:
            kinds.setdefault(kind, word)
    if permission and "Permission denied (publickey" not in text:
        if w.RELATIVE_EXEC.search(text):
            kinds.setdefault("fixable", "./... Permission denied")
        elif w.SYSTEM_PATH.search(text):
            kinds.setdefault("unrecoverable", "Permission denied on a system path")
        else:
            unsure = unsure or "Permission denied"
    if kinds.keys() == {"unrecoverable", "fixable"} and kinds["unrecoverable"] in a.DISK_WORDS:
        del kinds["fixable"]  # a full or read-only disk, then the files it could not write
    # (each substring scan behind a `memchr` of its rarest character: most texts lack it)
    if "fixable" in kinds and "6" in text and a.INTERNAL_ERROR in text:
        # a JSON-RPC internal error: the missing path may be the server's own, not the call's
        unsure = unsure or f"{kinds.pop('fixable')} in an internal error"
    if "transient" in kinds:
        if "k" in text and a.DNS_LOOKUP in text:  # a timeout of a DNS lookup: no passing fault
            unsure = unsure or f"{kinds.pop('transient')} in a DNS lookup"
        elif kinds["transient"] in a.RESET_WORDS and any(host in text for host in a.LOOPBACK):
            # a reset by a server on this machine (one the agent started): not a passing fault
            unsure = unsure or f"{kinds.pop('transient')} on a local address"
    if len(kinds) == 1 and unsure is None:
        kind, word = next(iter(kinds.items()))
        return kind, f"condition {_quote(word)}"
    if kinds or unsure:
        named = [*kinds.values(), *([unsure] if unsure else [])]
        return "ambiguous", "conditions " + " and ".join(_quote(n) for n in named)
    return None


def _quote(value: str) -> str:
    value = value.strip()
    return repr(value[:60] + ("..." if len(value) > 60 else ""))
