"""The wide rule set's word lists and line patterns, assembled from words.py, general.py,
agents.py, programs.py, reports.py and families.py in the order the tiers consult them, and
grouped for lookup (toolerr.wide.probes). Data only: rules.py detects, classify.py
classifies.
"""

from __future__ import annotations

import re

from exactserve.toolerr.wide import agents as a
from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import programs as p
from exactserve.toolerr.wide import reports as r
from exactserve.toolerr.wide import services as s
from exactserve.toolerr.wide import tool_faults as f
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.families import FIXABLE_FAMILIES as FAMILY_WORDS
from exactserve.toolerr.wide.firstchar import FirstChar, split_alternatives
from exactserve.toolerr.wide.probes import Lexicon
from exactserve.toolerr.wide.scan import LineStart

# The word lists of words.py, general.py, agents.py and toolchains.py, in the order they
# are consulted.
WORDS = {
    "phrases": (
        *(w.FAILURE_PHRASES + g.FAILURE_PHRASES + a.FAILURE_PHRASES),
        *(t.FAILURE_PHRASES + s.FAILURE_PHRASES + p.FAILURE_PHRASES + r.FAILURE_PHRASES),
        f.SHARING,  # (Notion's page not shared with the integration; round 13)
    ),
    "denial": w.DENIAL + a.DENIAL + r.DENIAL,
    "quota": w.QUOTA + g.QUOTA + a.QUOTA + t.QUOTA + s.QUOTA,
    "retry": w.RETRY_AFTER,
    "rate": w.RATE_LIMIT + g.RATE_LIMIT + r.RATE_LIMIT,
    "timeout": w.OWN_TIMEOUT,
    "conditions": (
        *(w.CONDITIONS + g.CONDITIONS + a.CONDITIONS + t.CONDITIONS + s.CONDITIONS),
        *(p.CONDITIONS + r.CONDITIONS),
        *f.PRIVILEGE_DENIED,
    ),
    "unsure": w.UNSURE_NETWORK + g.UNSURE_NETWORK + a.UNSURE,
    "permission": w.PERMISSION,
    "unrecoverable": (
        *w.UNRECOVERABLE_WORDS,
        *g.UNRECOVERABLE_WORDS,
        *a.UNRECOVERABLE_WORDS,
        *t.UNRECOVERABLE_WORDS,
        *s.UNRECOVERABLE_WORDS,
        *f.UNRECOVERABLE_WORDS,
        *r.UNRECOVERABLE_WORDS,
    ),
    "fixable": (
        *(w.FIXABLE_WORDS + g.FIXABLE_WORDS + a.FIXABLE_WORDS + t.FIXABLE_WORDS),
        *(p.FIXABLE_WORDS + r.FIXABLE_WORDS),
    ),
    # round 9's fixable words, looked up only where the list above found none (services.py)
    "late fixable": s.FIXABLE_WORDS,
}
# ... grouped for lookup (toolerr.wide.probes).
FAILURE_PHRASES = Lexicon(WORDS["phrases"], w.MARKERS)
RETRY_AFTER = Lexicon(WORDS["retry"], w.MARKERS)
UNRECOVERABLE_WORDS = Lexicon(WORDS["unrecoverable"], w.SHARED_MARKERS)
FIXABLE_WORDS = Lexicon(WORDS["fixable"], w.SHARED_MARKERS)
# Round 9's fixable words, consulted only when no other fixable evidence was found (any
# fixable word decides the kind alike, so the answers are those of one list; the lookup costs
# nothing where an earlier word was found).
LATE_FIXABLE = Lexicon(WORDS["late fixable"], ("alid", *w.SHARED_MARKERS))  # (`[Vv]alidation`)
# Tiers 1-4 as one list: its first present word is the first tier's evidence, and the
# lookup passes over the later tiers' words once an earlier word is found (one pass over
# the text's characters instead of four). FIRST_TIER names each word's (earliest) tier.
FIRST_TIERS = Lexicon(
    tuple(word for tier in ("denial", "quota", "rate", "timeout") for word in WORDS[tier]),
    w.SHARED_MARKERS,
)
FIRST_TIER: dict[str | None, str] = {}
for _tier in ("denial", "quota", "rate", "timeout"):
    for _word in WORDS[_tier]:
        FIRST_TIER.setdefault(_word, _tier)
# A service's message that decides before the statuses (services.py), and each one's kind.
OVER_STATUS = Lexicon(tuple(word for word, _ in s.OVER_STATUS), w.SHARED_MARKERS)
OVER_STATUS_KIND = dict(s.OVER_STATUS)
# Tier 6 as one list, each word with its kind ("unsure" and "permission" for the words of
# UNSURE_NETWORK and PERMISSION): one pass instead of three.
SIXTH_KIND = (
    *(kind for _, kind in WORDS["conditions"]),
    *("unsure" for _ in WORDS["unsure"]),
    *("permission" for _ in WORDS["permission"]),
)
SIXTH_TIER = Lexicon(
    (*(word for word, _ in WORDS["conditions"]), *WORDS["unsure"], *WORDS["permission"]),
    w.SHARED_MARKERS,
)
# Every report line (words.py, general.py, agents.py, toolchains.py, services.py), matched at
# the start of each line (one match per line is cheaper than a MULTILINE search trying `^` at
# every character), through the alternatives the line's first character allows (firstchar.py).
REPORT_LINE = FirstChar(
    f"{w.BUILDKIT_STEP}|{a.CLOCK_PREFIX}",
    [
        alternative
        for body in (
            *(w.FAILURE_BODY, g.PREFIXED_BODY, g.ERRNO_BODY),
            *(a.REPORT_BODY, t.REPORT_BODY, s.REPORT_BODY, p.REPORT_BODY, r.REPORT_BODY),
        )
        for alternative in split_alternatives(body)
    ],
)
# The lines that end a failed command's output (make, shells, Windows cmd, wget, Yarn).
TERMINAL_LINE = re.compile(rf"{g.TERMINAL_LINE.pattern}|{t.TERMINAL_BODY}|{p.TERMINAL_BODY}")
# The failure sentences at the text's edges (through their first characters, as REPORT_LINE).
EDGE_SENTENCE = FirstChar("", [*split_alternatives(g.EDGE_SENTENCE.pattern), a.EDGE_BODY])
BENIGN_REPORTS = g.BENIGN_REPORTS + a.BENIGN_REPORTS
LOG_RECORD = re.compile(a.LOG_RECORD)
# Every pattern that names an HTTP status (its one group), in any order.
STATUS_PATTERNS = (
    *w.HTTP_STATUS,
    *w.STATUS_CONTEXT,
    g.STATUS_MORE,
    re.compile(a.STATUS_HTTP),
    *t.STATUS_CODE,
)
# ... each with a substring all its matches hold, looked for first where the regex engine's
# scan for the pattern's leading literal is slow and the substring mostly absent (a string
# search skips ahead several characters at a time): `tatus`, `esponse`.
STATUS_GATES = ("", "", "", "tatus", "esponse", "", *("" for _ in t.STATUS_CODE))
STATUS_LOOKUPS = tuple(zip(STATUS_GATES, STATUS_PATTERNS, strict=True))
# The markers of the line patterns tried only when one occurs (compiler lines, status lines,
# ...), looked up together by their rarest characters rather than scanned one by one.
COMPILER_MARKS = Lexicon(w.COMPILER_MARKS)
# Other compilers' diagnostics at a source location, tried at each line start (behind its
# newline: scan.LineStart) when one of their marks occurs.
LOCATION_MARKS = Lexicon(t.LOCATION_MARKS, ("error: ",))  # (the two errors' marks: one scan)
LOCATION_LINE = LineStart(t.LOCATION_LINE)
LINE_MARKS = Lexicon(  # (`HTTP response` and `esponse code` behind one scan for `esponse`)
    tuple(mark for marks, _ in g.MARKED_LINES for mark in marks), ("esponse",)
)
# A test runner's passing verdict holds one of these (looked up the same way).
PASS_MARKS = Lexicon(w.PASS_MARKS)
FAMILIES = (*FAMILY_WORDS, *g.FIXABLE_FAMILIES, *t.FIXABLE_FAMILIES)
FIXABLE_FAMILIES = tuple((mark, Lexicon(words, w.MARKERS)) for mark, words in FAMILIES)
# The fixable words followed by the families' markers: its first present entry is the first
# fixable word or, when there is none, the first family marker that occurs (the families
# before it need no look; the markers are found through their rare characters too).
FIXABLE_THEN_MARKERS = Lexicon(
    (*WORDS["fixable"], *(mark for mark, _ in FIXABLE_FAMILIES)), w.SHARED_MARKERS
)
