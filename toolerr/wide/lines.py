"""Line-level reading of a tool result for the wide rules: which lines to match report
patterns against, a command's final diagnostic, a test runner's verdicts, a search's listing,
and the quoting of evidence. Helpers of rules.py and classify.py.
"""

from __future__ import annotations

import re

from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.lexicons import BENIGN_REPORTS, LOG_RECORD, PASS_MARKS, REPORT_LINE
from exactserve.toolerr.wide.shapes import TAIL_CHARS


def said_outside_numbers(text: str, phrase: str) -> bool:
    """Whether `phrase` occurs in `text` on a line that is not a file's numbered line (Claude
    Code's `The file ... has been updated.` and the edited lines after it, `cat -n`)."""
    at = text.find(phrase)
    while at != -1:
        if not w.NUMBERED_PREFIX.match(text, text.rfind("\n", 0, at) + 1):
            return True
        at = text.find(phrase, at + 1)
    return False


def is_listing(first_lines: list[str], text: str) -> bool:
    """Whether the first lines and the last one are all a search's listing lines (`grep -rn`
    output), blank lines and `--` separators aside."""
    if not w.LISTING_LINE.match(first_lines[0]):  # (the first line is never blank)
        return False
    last = text[-TAIL_CHARS:].rstrip().rsplit("\n", 1)[-1]
    return all(
        w.LISTING_LINE.match(line) or not line.strip() or line == "--"
        for line in (*first_lines, last)
    )


def passed_at_end(text: str) -> bool:
    """Whether the text ends with a test runner's passing verdict and names no failed test:
    the run passed, whatever its tests logged on the way (`stderr | ... Error: boom`)."""
    tail = text[-TAIL_CHARS:]
    if PASS_MARKS.first(tail) is None:
        return False
    last = tail.rstrip().rsplit("\n", g.EDGE_LINES + 2)[-(g.EDGE_LINES + 2) :]
    return (
        w.TEST_PASSED.search("\n".join(last)) is not None
        and w.FAILED_COUNT.search(tail) is None
        and failed_verdict(tail) is None
    )


def failed_verdict(text: str) -> str | None:
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


def line_match(
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


def final_diagnostic(text: str) -> str | None:
    """A command diagnostic (`ls: x: No such file or directory`) that ends the output: a
    warning on stderr followed by normal output is not a failure, nor is a trace's record
    (`open("/etc/x", O_RDONLY) = -1 ENOENT (No such file or directory)`)."""
    last = stripped_end(text, 400).rsplit("\n", 1)[-1]
    found = w.COMMAND_DIAGNOSTIC.match(last)
    if found and " = -1 E" in last and t.STRACE_RECORD.match(last):
        return None  # strace's record of a failed system call: a trace, not the command's end
    return found.group(0) if found else None


def stripped_end(text: str, size: int) -> str:
    """`text.rstrip()[-size:]` without copying the whole text: from its last characters,
    unless trailing blanks fill them (then from the whole text)."""
    end = text[-size - 80 :].rstrip()
    if len(end) >= size or len(text) <= size + 80:
        return end[-size:]
    return text.rstrip()[-size:]


def quote(value: str) -> str:
    value = value.strip()
    return repr(value[:60] + ("..." if len(value) > 60 else ""))
