"""The wide rule set: is a tool result a failure, and of which kind, on the whole evidence.
This module detects; classify.py classifies, lexicons.py assembles the word lists and line
patterns (words.py, general.py, agents.py, toolchains.py, programs.py, reports.py,
families.py), lines.py reads lines.

Detection reads the structure first (toolerr.wide.shapes): a wrapper's exit code decides
(0: not a failure, whatever the words; non-zero: a failure), a JSON body decides by its
error members, an HTTP error page by its status. Only a text with no such structure is
read for failure shapes: a report line among the first lines (exceptions, tracebacks,
`Error:`, `fatal:`, compiler and npm diagnostics), a command diagnostic, a test runner's
failed verdict, or an agent's own failure sentence (edit mismatch, permission denial). A
text that opens like a document (a read file, a diff, a listing, an underlined title) is not a
failure, nor is a test run whose passing verdict ends it when no report line opens it.
Where no failure shape is found and nothing decided that there is none, the learned model
(opinion.py) is asked last: it detects a failure only when `success` is at most 1% probable
and a kind at least 95% among the three (rule `wide-learned`, evidence `no failure shape;
learned fixable at 0.99`).

Classification takes the first tier with evidence, in this order; conflicting evidence
within the deciding tier gives `ambiguous`:
  0. a harness's refusal of the call's form that says how to make it (Claude Code's
     `<tool_use_error>Blocked: `) -> fixable
  1. a user or harness denial -> unrecoverable
  2. a quota or billing message -> unrecoverable
  3. a rate limit -> transient
  4. the command's own timeout, or a signal -> ambiguous
  4a. a service's message more specific than the HTTP status it comes with (npm's `cannot
     publish over the previously published version` under 403 -> fixable; Terraform's
     `Error acquiring the state lock` under 400 -> transient; services.OVER_STATUS)
  5. HTTP statuses: 401/402/403/407 unrecoverable; 400/404/405/409/410/422 fixable;
     408/425/429/502/503/504 transient; any other ambiguous (a bare `403 Forbidden` from
     GitHub, which also sends it for rate limits, ambiguous)
  6. operating-system and network conditions (errno names and their messages); DNS
     failures and refused connections are never given a kind (in a sandbox they mostly
     mean "no network"), nor are a timeout in a DNS lookup, a missing path under a JSON-RPC
     internal error, and a reset by a local server; "Permission denied" is unrecoverable on
     a system path, fixable on a relative path the agent ran, unsure elsewhere; a missing
     path that climbs out of a named folder (`scripts/../output`) is the program's: unsure
  7. the exception class of the last exception line
  8. unrecoverable words (Unauthorized, invalid API key, ...) and fixable words (edit
     mismatches, validation, compiler and usage errors, failed tests)
  9. only where no rule named a kind: the learned opinion (opinion.py), when confident
  10. nothing: ambiguous
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from exactserve.toolerr.wide import agents as a
from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import programs as p
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.classify import classify_wide
from exactserve.toolerr.wide.conflicts import names_only
from exactserve.toolerr.wide.lexicons import (
    COMPILER_MARKS,
    EDGE_SENTENCE,
    FAILURE_PHRASES,
    LINE_MARKS,
    LOCATION_LINE,
    LOCATION_MARKS,
    REPORT_LINE,
    TERMINAL_LINE,
)
from exactserve.toolerr.wide.lines import (
    failed_verdict,
    final_diagnostic,
    is_listing,
    line_match,
    passed_at_end,
    quote,
    said_outside_numbers,
    stripped_end,
)
from exactserve.toolerr.wide.opinion import learned_failure
from exactserve.toolerr.wide.services import (
    first_line_report,
    json_error_body,
    usage_error_at_end,
)
from exactserve.toolerr.wide.shapes import (
    JSON_EXIT_KEYS,
    TAIL_CHARS,
    Shape,
    evidence_window,
    read_shape,
)
from exactserve.toolerr.wide.tool_faults import says_why

# Agents' own failure sentences stand at the start or the end of a result.
PHRASE_HEAD = 600
PHRASE_TAIL = 300
PHRASE_SPAN = PHRASE_HEAD + PHRASE_TAIL

# what _detect says when no failure shape was found and nothing decided that there is none:
# only then is the learned detector asked (opinion.learned_failure)
NO_SHAPE = "no failure shape"

# the names of file-reading tools, lower-cased without `_` and `-` (see reads_files)
FILE_READERS = frozenset(
    {
        "read",
        "readfile",
        "readfiles",
        "readtextfile",
        "readmultiplefiles",
        "readmanyfiles",
        "viewfile",
        "openfile",
        "fsread",
        "getfilecontents",
        "filereadtool",
    }
)

FAILED_STATES = ("error", "failure", "failed", "fail", "ERROR", "FAILURE", "FAILED")


class Verdict(NamedTuple):
    """A wide-mode decision: the detecting rule, the kind, and the evidence behind both
    (the matched rule and words, for the X-Tool-Errors header)."""

    rule: str
    kind: str
    evidence: str


def judge(text: str, explicit_rule: str | None, tool: str = "") -> Verdict | None:
    """The wide verdict on one tool result, or None when it is not a failure.

    `explicit_rule` is the explicit flag that already marks it a failure (`is_error`,
    `cline`, `opencode`, `mcp-iserror`), or None. `tool` is the name of the call it answers
    ("" when unknown): a file-reading tool's result is not put to the learned detector.
    """
    shape = read_shape(text)
    rule, why = find_failure(text, shape, explicit_rule)
    if rule is None:
        if why != NO_SHAPE or reads_files(tool):
            return None  # the structure said so, the text opens like a document, or it is
            # a file's content (a saved lint report reads as the run that wrote it)
        learned = learned_failure(evidence_window(text, shape))
        if learned is None:
            return None
        kind, probability = learned
        return Verdict("wide-learned", kind, f"{NO_SHAPE}; learned {kind} at {probability:.2f}")
    kind, because = classify_wide(evidence_window(text, shape), shape)
    return Verdict(rule, kind, f"{why}; {because}")


def reads_files(tool: str) -> bool:
    """Whether a tool of this name returns a file's content: Claude Code's `Read`, Gemini
    CLI's and Qwen Code's `read_file`, OpenCode's `read`, the MCP filesystem server's
    `read_text_file`, GitHub's `get_file_contents`, ... (case, `_` and `-` aside, after an MCP
    server prefix such as `mcp__fs__`)."""
    name = tool.rsplit("__", 1)[-1].rsplit(".", 1)[-1].lower().replace("_", "").replace("-", "")
    return name in FILE_READERS


def find_failure(text: str, shape: Shape, explicit_rule: str | None) -> tuple[str | None, str]:
    """(the detecting rule, its evidence), or (None, why not): NO_SHAPE where no failure
    shape was found and nothing decided that the result is no failure."""
    return (explicit_rule, "flag") if explicit_rule else _detect(text, shape)


def _detect(text: str, shape: Shape) -> tuple[str | None, str]:
    if shape.json is not None:
        rule, why = _json_failure(shape.json)
        if rule is None and shape.json_status is not None:
            # an API's error object with its HTTP status (`{"status": 401, "message": ...}`)
            if len(a.ERROR_OBJECT_KEYS.intersection(shape.json)) > 1:  # `status` and more
                return "wide-json", f"JSON status {shape.json_status}"
        return rule, why
    if shape.exit_code is not None:
        return ("wide-exit", f"exit {shape.exit_code}") if shape.exit_code else (None, "")
    if shape.signal is not None:
        return "wide-signal", f"signal {shape.signal}"
    if shape.html_status is not None:
        return "wide-http", f"HTTP page {shape.html_status}"
    head = text.lstrip()[:2000]
    first_lines = head.split("\n", w.FAILURE_LINES)[: w.FAILURE_LINES]
    if head.startswith("# ") and w.GO_BUILD_HEADER.match(head):  # `go build`'s package line
        return "wide-line", f"line {quote(first_lines[1])}"
    if first_lines[0].startswith(a.AIDER_FIX_HEADER):  # aider's report of its linter's findings
        return "wide-line", f"line {quote(first_lines[0])}"
    if head.startswith("# ") and a.AIDER_EDIT_HEADER.match(head):  # aider's edits not applied
        return "wide-line", f"line {quote(first_lines[0])}"
    # Playwright MCP's error section; IPython's traceback under its rule of dashes
    if first_lines[0].rstrip() == a.PLAYWRIGHT_ERROR and len(first_lines) > 1:
        return "wide-line", f"line {quote(first_lines[0])}"
    if head.startswith("-----") and g.IPYTHON_TRACEBACK.match(head):
        return "wide-line", f"line {quote(first_lines[1])}"
    if first_lines[0].startswith("Requests ") and p.VEGETA_REPORT.match(first_lines[0]):
        return None, ""  # a load test's report: the errors it lists are the target's
    if w.DOCUMENT_START.match(first_lines[0]):
        # a comment line echoed by make or a shell opens like a document: make's own
        # failure on the last line still decides
        last = stripped_end(text, 300).rsplit("\n", 1)[-1]
        if last.startswith("make") and g.TERMINAL_LINE.match(last):
            return "wide-diagnostic", f"diagnostic {quote(last)}"
        # `go test`'s verdict after the `# package` line of a build or vet failure
        # (`FAIL\tgithub.com/x [build failed]`)
        if last.startswith("FAIL\t") and w.GO_TEST_FAIL.match(last):
            return "wide-tests", f"verdict {quote(last)}"
        return None, ""
    second = first_lines[1] if len(first_lines) > 1 else ""
    if "-->" in second and w.UI_TEST_LOCATION.match(second):
        if first_lines[0].startswith(("error", "warning")) and w.RUSTC_END not in text[-300:]:
            return None, ""  # a UI test's expected compiler output, read as a file
    found = line_match((REPORT_LINE,), first_lines)
    if found is not None and found.string is first_lines[0]:  # a report opens the text
        if found.end() == len(first_lines[0]) and names_only(first_lines, _last_line(text)):
            return None, ""  # bare class names, one a line: a listing of classes
        return "wide-line", f"line {quote(found.group(0))}"
    if len(first_lines) > 1 and w.SETEXT_UNDERLINE.match(first_lines[1]):
        if w.SETEXT_TITLE.match(first_lines[0]):
            return None, ""  # a title underlined (Markdown, reStructuredText): a document
    rule, why = _later_failure(text, first_lines, found)
    if rule is None or rule == "wide-tests":
        return rule, why
    if rule != "wide-line" and is_listing(first_lines, text):
        return None, ""  # a search's listing: the failure words in it are the files' text
    if passed_at_end(text):
        return None, ""  # a passing test run that logged errors on the way
    return rule, why


def _later_failure(
    text: str, first_lines: list[str], found: re.Match | None
) -> tuple[str | None, str]:
    """The failure shapes of a text that no report line opens: a report line further down
    (`found`, if any), marked lines, failure sentences, diagnostics, verdicts, phrases."""
    if found:
        return "wide-line", f"line {quote(found.group(0))}"
    lines = "\n".join(first_lines)
    if COMPILER_MARKS.first(lines) is not None:
        found = w.COMPILER_LINE.search(lines)
    marked = LINE_MARKS.present(lines) if found is None else ()  # the markers, in one lookup
    for marks, pattern in g.MARKED_LINES:
        if found is None and marked and any(mark in marked for mark in marks):
            found = pattern.search(lines)
    if found is None:
        found = first_line_report(first_lines[0])
    if found:
        return "wide-line", f"line {quote(found.group(0))}"
    record_passed = False  # a PowerShell error record that later output followed
    for line in first_lines[: t.PS_RECORD_LINES]:
        if line.startswith("At ") and t.PS_POSITION.match(line):  # a PowerShell error record
            if t.output_follows_record(text):
                record_passed = True  # a later statement ran and printed: the record's error
                break  # did not stop it
            return "wide-line", f"line {quote(line)}"
    found = line_match((EDGE_SENTENCE,), first_lines[:2])
    if found:
        return "wide-sentence", f"first lines {quote(found.group(0))}"
    tail = text[-TAIL_CHARS:]
    last_lines = tail.rstrip().rsplit("\n", g.EDGE_LINES)
    if len(last_lines) <= g.EDGE_LINES and len(text) > TAIL_CHARS and text[-TAIL_CHARS - 1] != "\n":
        del last_lines[0]  # the tail begins inside a line: no line's start to match
    last_lines = last_lines[-g.EDGE_LINES :]
    found = final_diagnostic(text)
    if found is None and last_lines and text.startswith("usage: "):  # argparse: usage, error
        found = usage_error_at_end(last_lines[-1])
    if found is None:  # the failure a long output ends with
        patterns = (TERMINAL_LINE, REPORT_LINE, EDGE_SENTENCE)
        found = line_match(patterns, last_lines, tried=set(first_lines))
        found = found and found.group(0)
    if found:
        return "wide-diagnostic", f"diagnostic {quote(found)}"
    found = failed_verdict(tail) or failed_verdict(lines)
    if not found and "Test" in tail:  # vitest's summary: a failure, its kind left to the words
        vitest = w.VITEST_FAILED.search(tail)
        found = vitest[0] if vitest else None
    if found:
        return "wide-tests", f"verdict {quote(found)}"
    if LOCATION_MARKS.first(lines) is not None:  # a compiler's diagnostic among the first lines
        location = LOCATION_LINE.search(lines)
        if location is not None:
            return "wide-line", f"line {quote(location[0])}"
    scope = text[:PHRASE_HEAD] + "\n" + text[-PHRASE_TAIL:] if len(text) > PHRASE_SPAN else text
    phrase = FAILURE_PHRASES.first(scope)
    if phrase is not None and w.NUMBERED_LINE.search(scope):  # a file's lines are quoted
        said = [p for p in FAILURE_PHRASES.present(scope) if said_outside_numbers(scope, p)]
        phrase = said[0] if said else None
    if phrase is not None:
        return "wide-phrase", f"phrase {quote(phrase)}"
    if first_lines[0].startswith(p.MIETTE_FIRST) and first_lines[0][2:3].isalpha():
        return "wide-line", f"line {quote(first_lines[0])}"  # a miette diagnostic opens it
    if record_passed:  # decided, as an exit code of 0 decides: the learned model is not asked
        return None, ""
    return None, NO_SHAPE


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
        # {"result": "failure", "failure": "..."}; not a run's record read as a file
        # (`{"status": "failed", "failedTests": [...]}`: nothing said beside the state)
        for key in ("status", "result", "state"):
            if value.get(key) in FAILED_STATES and says_why(value, key):
                return "wide-json", f"JSON {key} {quote(value[key])}"
        # an API's bare error object: {"type": "invalid_request_error", "message": ...}
        kind = value.get("type")
        if isinstance(kind, str) and kind.endswith("_error") and "message" in value:
            return "wide-json", f"JSON type {quote(kind)}"
        body = json_error_body(value)  # other APIs' layouts: `errors`, GitHub's, Okta's
        if body is not None:
            return "wide-json", body
        # an MCP server's text result wrapped as its structured output (`{"result": "Error:
        # No matches of search expression found ..."}`: FastMCP's form)
        result = value.get("result")
        if isinstance(result, str) and len(value) == 1 and a.RESULT_ERROR.match(result):
            return "wide-json", f"JSON result {quote(result.split(':', 1)[0])}"
    return None, ""


def _last_line(text: str) -> str:
    return text[-TAIL_CHARS:].rstrip().rsplit("\n", 1)[-1]
