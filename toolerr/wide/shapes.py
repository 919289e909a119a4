"""The structure of a tool result, read before any word: agent wrappers with exit codes,
JSON bodies, HTTP error pages, and the window of text the other rules look at.

Every scan here is bounded: wrappers are read from the first and last few lines, and the
evidence window is the first 640 and last 320 characters (where tools put their error
lines and verdicts), so a 1 MB result costs about what a 1 KB one does. No pattern nests
quantifiers (no catastrophic backtracking).
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

HEAD_CHARS = 640
TAIL_CHARS = 320
EDGE_LINES = 4  # lines read at each end for a wrapper's exit code

# A wrapper's exit code, on one of the first or last lines. Formats: Codex `Exit code: N`
# and `Process exited with code N`; Claude Code `Exit code N` / `Error: Exit code N`;
# Gemini CLI and Qwen Code `Exit Code: N`; OpenCode `Exited with code N`; Roo/Kilo/Cline
# `Command failed with exit code N` and `Exit code: N`; Docker and shells `returned a
# non-zero code: N`, `exit status N`, `exit code: N`; Travis `exited with N.`; a harness's
# bracketed line after the output (`[exit code 0]`, `[Command finished with exit code 1]`).
EXIT_LINE = re.compile(
    r"(?:^|[\s(.<\[])(?:[Pp]rocess exited with code|[Ee]xited with (?:exit )?(?:code)?"
    r"|[Ee]xit [Cc]ode:?|exit status|exited with status|returned a non-zero code:"
    r"|failed with exit code)"
    r" ?(?:(-?[0-9]{1,4})\b|([A-Z][A-Z_]{2,40})>)"  # Copilot CLI: `<exited with exit code NAME>`
)
# A harness's status line that says the command succeeded, with no number: Antigravity's
# `The command completed successfully.` (its failures say `The command failed with exit
# code: N`), Replit Agent's `Command executed successfully.`; as exit code 0 (GUIDE.md's
# precedence 1: the output's own error lines do not make the call a failure).
SUCCESS_LINE = re.compile(r"(?:The )?[Cc]ommand (?:completed|executed) successfully\.?$")
SIGNAL_LINE = re.compile(r"^Signal: ([0-9]{1,3})\s*$")
# Claude Code's TaskOutput result for a background command (round 12): tagged fields, the
# command's exit code among them before its output (`<retrieval_status>success</retrieval_status>
# ... <status>failed</status> ... <exit_code>1</exit_code> ... <output>...</output>`).
TAGGED_EXIT = re.compile(r"<exit_code>(-?[0-9]{1,4})</exit_code>")
TAGGED_HEAD = 600  # (the fields come before the output)
JSON_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code")
# An API error object's HTTP status (`{"status": 401, "message": "API token is invalid."}`).
JSON_STATUS_KEYS = ("status", "statusCode", "status_code")
HTML_STATUS = re.compile(r"<title>\s*([45][0-9]{2})\b")


class Shape(NamedTuple):
    """What the structure says. `exit_code` None: no wrapper with an exit code found;
    `json` the decoded body when the text is a JSON object or array; `html_status` the
    4xx/5xx status of an HTML error page's title, `json_status` a JSON object's numeric
    4xx/5xx `status` (`statusCode`, `status_code`)."""

    exit_code: int | None
    signal: int | None
    json: Any
    html_status: int | None
    json_status: int | None = None


def read_shape(text: str) -> Shape:
    start = text[:64].lstrip()[:1]
    decoded = _json(text) if start in ("{", "[") else None
    exit_code = signal = json_status = None
    if isinstance(decoded, dict):
        for key in JSON_EXIT_KEYS:
            value = decoded.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                exit_code = value
                break
        for key in JSON_STATUS_KEYS:
            value = decoded.get(key)
            if isinstance(value, int) and 400 <= value <= 599:
                json_status = value
                break
    elif decoded is None:
        exit_code, signal = _wrapper_codes(text[:2000].strip(), text[-2000:].strip())
        if exit_code is None and start == "<" and "<exit_code>" in text[:TAGGED_HEAD]:
            tagged = TAGGED_EXIT.search(text, 0, TAGGED_HEAD)
            exit_code = int(tagged.group(1)) if tagged else None
    head = text[:300]
    html = HTML_STATUS.search(head) if "<title>" in head else None
    return Shape(exit_code, signal, decoded, int(html.group(1)) if html else None, json_status)


def window(text: str) -> str:
    """The evidence window: the first 640 characters and, for a longer text, the last
    320 (test runners and compilers put their verdict at the end)."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def evidence_window(text: str, shape: Shape) -> str:
    """What classification reads: the text parts of a JSON result, else the window."""
    if shape.json is not None:
        return inner_text(shape.json) or window(text)
    return window(text)


def inner_text(value: Any) -> str:
    """The text parts of an MCP-style result (`content: [{type: text, text}]`) or the
    message of a JSON error object, joined by newlines; "" when there is none."""
    if not isinstance(value, dict):
        return ""
    parts = []
    content = value.get("content")
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
    for key in ("error", "message", "detail", "stderr", "type"):
        item = value.get(key)
        if isinstance(item, str) and (key != "type" or item.endswith("_error")):
            parts.append(item)
        elif isinstance(item, dict):
            parts.append(json.dumps(item, ensure_ascii=False)[:HEAD_CHARS])
    return "\n".join(parts)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _wrapper_codes(head: str, tail: str) -> tuple[int | None, int | None]:
    """The first exit code and the last signal on the edge lines of the text."""
    lines = head.split("\n", EDGE_LINES)[:EDGE_LINES] + tail.rsplit("\n", EDGE_LINES)[-EDGE_LINES:]
    # Every exit code line holds `xit` or `non-zero code:`: one look at the edge lines
    # together (a character test before each substring scan) rules most texts out.
    edge = "\n".join([line[:200] for line in lines])
    if not (
        ("x" in edge and "xit" in edge)
        or ("z" in edge and "non-zero code:" in edge)
        or ("S" in edge and "Signal: " in edge)
        or "successfully" in edge
    ):
        return None, None
    exit_code = signal = None
    for line in lines:
        line = line[:200].strip()
        if line.startswith("Signal: "):
            found = SIGNAL_LINE.match(line)
            # Gemini CLI's `Signal: 0` names no signal (as `Signal: (none)` does)
            signal = int(found.group(1)) if found and found.group(1) != "0" else signal
        # (every EXIT_LINE match holds `xit` or `non-zero code:`)
        elif exit_code is None and ("xit" in line or "non-zero code:" in line):
            found = EXIT_LINE.search(line)
            if found:
                exit_code = int(found.group(1)) if found.group(1) else -1
        elif exit_code is None and line.endswith(("successfully.", "successfully")):
            exit_code = 0 if SUCCESS_LINE.match(line) else None
    return exit_code, signal
