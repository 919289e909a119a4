"""Agents' own tool results and the tools they run most: words and shapes
from coding agents' transcripts (Claude Code, Cursor, Zed, pi, aider), MCP servers, git,
npm, shells and Gradle, in the same form as toolerr.wide.words and general.py. Data only;
rules.py adds each list to its tier.

Collected on dev_extra3 (agents' transcripts) and test4 (tuned on after its one
evaluation), kept only where no success of a tuning split is detected and no kind changes
to a wrong one.
"""

from __future__ import annotations

# Report lines that tools print on success: apt's notice in a container without a tty.
BENIGN_REPORTS = ("debconf: unable to initialize frontend",)

# A line that begins a failure report (rules.REPORT_LINE, after every other shape):
# kubectl's `Error from server (Forbidden):` and MCP clients' `Error from MCP server:`,
# Cursor's `Error calling tool 'edit_file'.`, Gradle's `* What went wrong:`, an API
# client's status and JSON body (`402 {"error":...}`), a failure glyph before an errno
# name (`✖ ENOENT: no such file ...`).
REPORT_BODY = (
    r"Error from |Error calling tool|\* What went wrong:|[45][0-9]{2} \{\""
    r"|[✗✕✘×❌✖] ?E[A-Z]{2,15}: "
)
# A failure sentence at the start: `Invalid input for tool pack_codebase: ...`.
EDGE_BODY = r"[Ii]nvalid (?:input|arguments?|parameters?) for "

# An HTTP status named by `HTTP 403:`, `(HTTP 401)`, `HTTP/1.1 502` (the pattern opens with
# a literal; its one group is the status).
STATUS_HTTP = r"HTTP(?:/[0-9.]{1,3})? ([45][0-9]{2})(?![0-9])"
# Exit codes of a process killed by a signal (128 + SIGINT, SIGABRT, SIGKILL, SIGSEGV,
# SIGTERM): like a signal line, ambiguous.
SIGNAL_EXITS = (130, 134, 137, 139, 143)

FAILURE_PHRASES = (
    "did not conform to the edit format",  # aider
    "does not appear in the file",  # Zed's edit tool
)
DENIAL = (
    "has been denied.",
)  # Claude Code: `Permission to use Bash with command X has been denied.`
QUOTA = ("quota_exceeded", "quota exceeded")
CONDITIONS: tuple[tuple[str, str], ...] = (
    # Go's and the kernel's lower-case spellings
    ("no space left on device", "unrecoverable"),
    ("read-only file system", "unrecoverable"),
    # git over HTTP when the connection broke (curl's error 56, a receive failure)
    ("RPC failed; result=56", "transient"),
    ("RPC failed; curl 56", "transient"),
)
UNSURE = ("not properly initialized",)
UNRECOVERABLE_WORDS = ("could not read Username", "could not read Password")  # git, no credentials
FIXABLE_WORDS = (
    # command-line usage
    *("unrecognized flag", "unknown flag", "flag provided but not defined"),
    *("Missing script: ", "no matches found: "),  # npm run; zsh's unmatched glob
    # edit and read tools
    *("must match exactly", "did not conform to the edit format", "does not appear in the file"),
    "exceeds maximum allowed tokens",  # Claude Code's Read without offset/limit
    "Please commit or stash them",  # git pull/rebase/merge over local changes
    "must have required property",  # ajv schema validation
)
