"""The speed devices of the wide rule set change no answer: the newline-led line-start
patterns (toolerr/wide/scan.py), the HTTP status pattern split by its first digit, the
tiers looked up as one list, and the line memo give what the plain forms give, on every
tuning text of the corpus (test9 among them since its one evaluation) and on pieces of them."""

from __future__ import annotations

import re

from corpus_records import TUNING_SPLITS, read_split
from plain_tiers import (
    CONDITIONS,
    DENIAL,
    OWN_TIMEOUT,
    PERMISSION,
    QUOTA,
    RATE_LIMIT,
    UNSURE_NETWORK,
)

from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import lexicons
from exactserve.toolerr.wide import lines as line_reading
from exactserve.toolerr.wide import words as w

TEXTS = [r["text"] for split in TUNING_SPLITS for r in read_split(split)]


def _pieces(text: str) -> list[str]:
    """The text, its edges, a middle cut, and case changes (more line starts)."""
    middle = len(text) // 3
    return [text, text[:300], text[-300:], text[middle:], text.lower(), text.upper()]


PIECES = [piece for text in TEXTS for piece in _pieces(text)]
# The HTTP status pattern as it was before it was split by its first digit.
PLAIN_HTTP_STATUS = re.compile(r"([45](?<![0-9A-Za-z.][45])[0-9]{2})" + w.HTTP_REASON)


def test_the_corpus_is_read():
    assert len(TEXTS) > 700


def test_line_start_patterns_match_as_multiline_searches():
    for piece in PIECES:
        for pattern in (w.TEST_FAILED, w.EXCEPTION_NAME):
            assert pattern.findall(piece) == pattern.plain.findall(piece)
            plain = pattern.plain.search(piece)
            assert pattern.search(piece) == (plain and (plain.group(0), plain.end()))


def test_status_patterns_split_by_digit_find_the_same_statuses():
    for piece in PIECES:
        split = sorted(s for pattern in w.HTTP_STATUS for s in pattern.findall(piece))
        assert split == sorted(PLAIN_HTTP_STATUS.findall(piece))


def test_tiers_looked_up_together_give_each_tiers_answer():
    """FIRST_TIERS: the first word of DENIAL, else QUOTA, RATE_LIMIT, OWN_TIMEOUT; the
    sixth tier's one list: the present words of CONDITIONS, UNSURE_NETWORK, PERMISSION."""
    tiers = (DENIAL, QUOTA, RATE_LIMIT, OWN_TIMEOUT)
    names = ("denial", "quota", "rate", "timeout")
    sixth = (CONDITIONS, UNSURE_NETWORK, PERMISSION)
    for piece in PIECES:
        expected = next(
            (
                (name, word)
                for name, tier in zip(names, tiers, strict=True)
                if (word := tier.first(piece))
            ),
            (None, None),
        )
        word = lexicons.FIRST_TIERS.first(piece)
        assert (lexicons.FIRST_TIER.get(word), word) == expected
        together = [lexicons.SIXTH_TIER.words[i] for i in lexicons.SIXTH_TIER.present_at(piece)]
        assert together == [word for lexicon in sixth for word in lexicon.present(piece)]


def test_fixable_words_then_family_markers_give_the_plain_loops_answer():
    """The fixable words and the families' markers in one list: the first fixable word,
    else the first word of the first family whose marker occurs and has one."""
    for piece in PIECES:
        expected = lexicons.FIXABLE_WORDS.first(piece)
        for marker, family in lexicons.FIXABLE_FAMILIES:
            if expected is None and marker in piece:
                expected = family.first(piece)
        found = lexicons.FIXABLE_THEN_MARKERS.first_at(piece)
        fix, families = None, lexicons.FIXABLE_FAMILIES[found - lexicons.FIXABLE_WORDS.size :]
        if found < lexicons.FIXABLE_WORDS.size:
            fix, families = lexicons.FIXABLE_THEN_MARKERS.words[found], ()
        for marker, family in families:
            if fix is None and marker in piece:
                fix = family.first(piece)
        assert fix == expected


def test_cheap_gates_hold_for_every_match():
    """The HTTP tier runs only when a 4 or a 5 occurs, the exception tier only when
    `Error`, `Exception`, `Timeout` or `::` does: every match holds them."""
    for piece in PIECES:
        if "4" not in piece and "5" not in piece:
            assert not any(pattern.findall(piece) for pattern in lexicons.STATUS_PATTERNS)
        if not any(mark in piece for mark in ("Error", "Exception", "Timeout", "::")):
            assert not w.EXCEPTION_NAME.plain.findall(piece)
            assert not g.classes_mid_line(piece)


def test_line_matches_skip_only_lines_already_tried():
    patterns = (lexicons.REPORT_LINE,)
    for text in TEXTS:
        lines = text.split("\n")[:40]
        plain = next((m for line in lines if (m := lexicons.REPORT_LINE.match(line))), None)
        plain_found = [
            m
            for line in lines
            if (m := lexicons.REPORT_LINE.match(line))
            and not line.startswith(g.BENIGN_REPORTS)
            and not lexicons.LOG_RECORD.match(line)  # a log file's record (fourth round)
        ]
        found = line_reading.line_match(patterns, lines)
        assert (found and found.group(0)) == (plain_found[0].group(0) if plain_found else None)
        if plain is None:
            assert line_reading.line_match(patterns, lines, tried=set(lines)) is None
