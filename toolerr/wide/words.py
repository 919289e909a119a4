"""The wide rule set's word lists: what marks a text as a failure, and what each kind of
evidence looks like. Data only; `rules.py` says in which order they are consulted.

Patterns are plain alternations of literals with bounded classes: none nests a quantifier,
so a search is linear in the text it scans.
"""

from __future__ import annotations

import re

from exactserve.toolerr.wide.scan import LineStart

# --- detection: a text with no wrapper and no JSON is a failure when one of these holds ---

# A Go compiler diagnostic: `path.go:LINE[:COL]: ` and one of the compiler's own messages
# (a bare `path.go:12: text` is also what `grep -n` prints, so the message must be one of these).
GO_DIAGNOSTIC = (
    r"(?:\.{1,2}/)?[\w./-]{1,200}\.go:[0-9]{1,7}(?::[0-9]{1,5})?: (?:undefined: "
    r"|[^\n]{0,200}?(?:declared and not used|declared but not used|imported and not used"
    r"|not enough arguments|too many arguments|has no field or method|redeclared in this block"
    r"|missing return|syntax error: |cannot use |too many errors|missing function body))"
)
GO_BUILD_HEADER = re.compile(r"# [\w./@-]{1,200}\n" + GO_DIAGNOSTIC)

# A line that begins a failure report, anywhere in the first lines of the text.
FAILURE_BODY = (
    r"Traceback \(most recent call last\):"
    # (round 13: a JVM class may be nested, `sbt.ForkMain$ForkError:`; Django's debug page
    # names the class and the path, `ProgrammingError at /admin/blog/post/`)
    r"|(?: {0,4}Uncaught | {0,4}\[)?(?:[A-Za-z_][A-Za-z0-9_$]{0,40}\.){0,6}[A-Z][A-Za-z0-9_$]{0,60}"
    r"(?:Error|Exception|Timeout|Exit|Interrupt|Fault)(?::|$| \(|\(| at /[^\s]{0,300}$)"
    r"|Error:|ERROR:|error:|Error executing tool|MCP error -[0-9]|An error occurred"
    r"|FATAL:|fatal:|panic: |thread '[^'\n]{1,80}' panicked at"
    r"|error\[E[0-9]{4}\]|error TS[0-9]{4}:|npm ERR!|npm [Ee]rror |Exception in thread "
    r"|curl: \([0-9]{1,3}\) |<tool_use_error>|\[ERROR\]|Command failed|Failed to "
    # (a raw response's status line too: `HTTP/1.1 403 Forbidden`, `HTTP/2 429`)
    r"|HTTP Error [45]|HTTP(?:/[0-9.]{1,3})? [45][0-9]{2}\b|[45][0-9]{2} (?:Client|Server) Error:"
    r"|(?:Client|Server) error '[45]"
    # builds: webpack, Gradle, Maven/Ant (compilers: COMPILER_LINE)
    r"|ERROR in |FAILURE: |BUILD FAILED"
    # API and daemon clients: `API Error: 529 ...`, `Error code: 429 - {...}`, Docker, urllib3
    r"|(?:✕ |⎿ {1,2})?\[?API Error[: (]|Error code: [45][0-9]{2}"
    r"|(?:docker: )?Error response from daemon: |HTTPS?ConnectionPool\(host="
    r"|Access denied[:-] |Command terminated by signal"
    r"|Unable to connect to the server: |The connection to the server "
    r"|(?:ECONNRESET|ECONNREFUSED|ETIMEDOUT|ENOENT|EACCES|EPERM|ENOTFOUND|EAI_AGAIN|EPIPE): "
)
BUILDKIT_STEP = r"#[0-9]{1,4} [0-9]{1,6}\.[0-9]{1,3} "  # an optional prefix of each line
FAILURE_LINE = re.compile(rf"^(?:{BUILDKIT_STEP})?(?:{FAILURE_BODY})", re.MULTILINE)
FAILURE_LINES = 12  # how many first lines FAILURE_LINE examines

# A compiler's diagnostic line: Go (`./main.go:36:14: undefined: X`) and tsc (`a.ts(60,22):
# error TS2339: ...`, `a.ts:7:8 - error TS2345: ...`). The paths make these patterns costly
# at every line start, so they are tried only when COMPILER_MARKS occur in the first lines.
COMPILER_LINE = re.compile(
    rf"^(?:{GO_DIAGNOSTIC}"
    r"|[^\n(]{1,300}?\.(?:tsx?|jsx?|mts|cts|vue)(?:\([0-9]{1,7},[0-9]{1,5}\)|:[0-9]{1,7}:[0-9]{1,5})"
    r" ?[-:] ?error TS[0-9]{1,5}:)",
    re.MULTILINE,
)
COMPILER_MARKS = (".go:", "error TS")

# `prog: subject: message` diagnostics of shell commands, and compiler locations.
COMMAND_DIAGNOSTIC = re.compile(
    r"^[^\n]{0,200}?[:(] ?(?:\[Errno [0-9]{1,3}\] )?"
    r"(?:No such file(?: or directory)?|Permission denied|command not found|Is a directory"
    r"|Not a directory|Operation not permitted|Read-only file system|No space left on device"
    r"|cannot open|invalid option|unrecognized option|no space left on device)\b"
    r"|^[\w./\\-]{1,200}:[0-9]{1,7}(?::[0-9]{1,5})?: (?:fatal )?error:",
    re.MULTILINE,
)

# Edit and patch tools' own words when the text to replace was not found or the file was
# not read first (Claude Code, OpenCode, Aider, Cline, ...): a failure, and a fixable one.
EDIT_MISMATCH = (
    "String to replace not found",
    "occurrences found for old_string",
    "could not find the string to replace",
    "old_string not found",
    "oldString not found",
    "Could not find oldString",
    "unable to find insert_after",
    "before overwriting it",
    "You must read the file",
)

# Whole-text markers of a failed call, wherever they are in the window.
FAILURE_PHRASES = (
    *EDIT_MISMATCH,
    "has not been read yet",
    "No replacement was performed",
    "Your proposed edit has introduced new syntax error",
    "apply_patch verification failed",
    "doesn't want to proceed with this tool use",
    "has been denied because",
    "but you haven't granted it yet",
    "Permission to use ",
    "EXECUTION TIMED OUT",
    "command timed out",
    "Command timed out",
    "No file open. Use the `open` command first.",
    "Could not install packages due to",
    "could not compile",
    "Could not compile",
    "Wrong flag!",
    "Unexpected response",
    "ate limit exceeded",
    "exceeded your current quota",
    "database is locked",
    "Could not resolve host",
    "Rate limit reached",
    "Incorrect API key provided",
    "Request failed with status code",
    "outside approved directory",
    "without value for required parameter",
    "unable to apply all diff parts",
)

# A test runner's final verdict (pytest, unittest, jest, go test, cargo test).
# (Each alternative is tried at a line start: scan.LineStart finds them by the newline.)
TEST_FAILED = LineStart(
    r"=+ .{0,80}\b[0-9]{1,6} (?:failed|errors?)\b"
    r"| ?(?:FAILED|FAIL:?) {1,2}[\w./:\[\]-]{1,200}|ERROR: test|=+ FAILURES =+$"
    r"|--- FAIL: |FAIL(?:\t|$)|Test Suites: +[0-9]{1,6} failed"
    r"|FAILED \((?:failures|errors)=[0-9]{1,6}"
    r"|Tests: +[0-9]{1,6} failed|Failures:$|[0-9]{1,6} examples?, [1-9][0-9]{0,5} failures?"
    r"|test result: FAILED"
    # round 16: a Rust test's own line (`test src/lib.rs - f (line 11) ... FAILED`), where the
    # output stops before the run's verdict
    r"|test [^\n]{1,300}? \.\.\. FAILED$"
    # round 15: Maven Surefire's count (`Tests run: 1339, Failures: 2, Errors: 0, Skipped: 6`,
    # with failures or errors)
    r"|(?:\[(?:INFO|ERROR)\] )?Tests run: [0-9]{1,6}, "
    r"(?:Failures: [1-9][0-9]{0,5}|Failures: 0, Errors: [1-9])"
)
# Round 15: vitest's summary of a failed run (` Test Files  1 failed | 3 passed (4)`, `      Tests
# 7 failed | 24 passed (31)`; TEST_PASSED reads its passing form), read as a failure only where
# it ends the text (rules.py): the kind is left to the errors listed above it (a test's own
# timeout, a network error a test logged), not taken as failed tests.
VITEST_FAILED = LineStart(r" {0,6}Test(?:s| Files) {1,3}[1-9][0-9]{0,5} failed\b")
# A type checker's or linter's count (tsc, biome: `Found 2 errors.`), read as a failed verdict
# when no test runner's is found (looked up only when `Found ` occurs).
CHECKER_FAILED = LineStart(r"Found [1-9][0-9]{0,5} errors?\b")
# `go test`'s verdict on a package, as the last line after the `# package` line that opens
# its build or vet failure (rules.py; round 12): `FAIL\tgithub.com/x [build failed]`.
GO_TEST_FAIL = re.compile(r"FAIL\t[^\s]{1,300}(?: \[(?:build|setup) failed\]|\t[0-9.]{1,10}s)$")
TEST_PASSED_AFTER = "test result: ok."  # cargo's passing verdict after a failed one: a grep
# A test runner's passing verdict (pytest, jest, vitest, go test, cargo, rspec, mocha,
# unittest): at the end of a text with no failed verdict, the run passed, whatever errors its
# tests logged on the way (rules.py). Looked up only when one of PASS_MARKS occurs.
TEST_PASSED = LineStart(
    r"=* ?[0-9]{1,6} passed\b|Tests: +[0-9]{1,6} passed, [0-9]{1,6} total"
    r"| {0,6}Tests {1,3}[0-9]{1,6} passed \(|ok {1,2}\t|test result: ok\."
    r"|[0-9]{1,6} examples?, 0 failures| {0,4}[0-9]{1,6} passing \(|OK(?: \([^\n]{0,80}\))?$"
    # a suite's own summary as the text's last line (shell test scripts, Catch2's `All tests
    # passed (5 assertions ...)`, zig's `All 3 tests passed.`; not before a crash at exit)
    r"|All (?:[0-9]{1,6} )?tests passed\b[^\n]{0,80}\Z"
)
PASS_MARKS = ("pass", "ok  \t", "ok \t", "OK", " 0 failures")  # (cargo's says `passed`)
# A count of failed tests or errors in any runner's words (vitest's `Test Files  1 failed |
# 1 passed`, mocha's `1 failing`), which no passing verdict outweighs.
FAILED_COUNT = re.compile(r"(?<![0-9])[1-9][0-9]{0,5} (?:failed|failing|errors?)\b")

# The first line of a document rather than a report: a read file, not a failure.
DOCUMENT_START = re.compile(
    r"(?:#(?![0-9]{1,4}(?: [0-9]|\. ))|---(?:-*$| )|<!DOCTYPE|<\?xml"
    r"|import |from |package |//|/\*|\"\"\""
    r"|'use strict'|\[File: "
    r"|diff --git|name: |on:|[0-9]{1,6}:(?![0-9]{2}:)|[ \t]+[0-9]{1,6}\t"
    # numbered lines after the text's leading blanks are cut: `cat -n`, Claude Code's Read
    r"|[0-9]{1,6}(?:\t|\u2192))"
)

# A UI test's expected compiler output (trybuild's `tests/ui/*.stderr`, rustc's compiletest
# `$DIR/...`), read as a file: a diagnostic whose location line, the text's second, points
# into the UI tests, without the `aborting due to N previous errors` that ends rustc's own
# output (both tools cut it from the expected text).
UI_TEST_LOCATION = re.compile(r" {0,8}--> (?:\$DIR|tests/ui)/")
RUSTC_END = "aborting due to"

# A compiler's error at a source location (gcc/clang `a.c:3:7: error:`, javac, mypy `x.py:3:
# error:`): a compile or type-check failure of the code (fixable evidence, rules.py). The
# pattern opens with a literal colon (a fast search); the path before it is not needed.
COMPILER_ERROR = re.compile(r":[0-9]{1,7}(?::[0-9]{1,5})?: (?:fatal )?error: ")

# A search's listing line (`grep -rn`: `src/api.ts:12:    throw new Error(...)`, or without
# the line number when no blank follows the colon: not bash's `x.sh: line 7: ...`, nor pytest's
# `test_a.py::test_b`), unless it is a compiler's diagnostic of the same shape (`a.c:3:7:
# error:`).
# A text whose lines are all such lines quotes files: their failure words are not this call's
# (rules.py; Go's and tsc's diagnostic lines are read before).
LISTING_LINE = re.compile(
    r"(?:\.{1,2}/)?[\w./\\-]{1,200}\.[A-Za-z0-9]{1,10}:(?=[0-9]{1,7}:|[^\s:])"
    r"(?![0-9:]{0,16} ?(?:fatal )?(?:error|warning|note)\b)"
)

# A file's numbered line as read and edit tools quote it (`cat -n`'s `    10\t`, Claude Code's
# Read and Edit `    10→`): an agent's failure phrase on such a line is the file's text, not
# this call's (rules.py). NUMBERED_LINE finds one after a newline (a fast search).
NUMBERED_PREFIX = re.compile(r"[ \t]{0,8}[0-9]{1,6}[\t\u2192]")
NUMBERED_LINE = re.compile(r"\n[ \t]{0,8}[0-9]{1,6}[\t\u2192]")

# A title and its underline as the first two lines (`Changelog` / `=========`): a document,
# unless the title is a report line itself or unittest's progress line (`E` then `=====`).
SETEXT_UNDERLINE = re.compile(r"(?:={3,200}|-{3,200})[ \t]*$")
SETEXT_TITLE = re.compile(r"(?![.EFsx]{1,2000}[ \t]*$)[^\s=-]")

# --- classification evidence, by tier (see rules.py) ---

DENIAL = (
    "doesn't want to proceed",
    "tool use was rejected",
    "has been denied because",
    "haven't granted it yet",
    "approval policy is never",
    "User rejected",
    "requires approval",
    # sandboxes and MCP filesystem servers refusing a path outside what the user allowed
    "outside allowed directories",
    "outside the allowed base directory",
    "outside approved directory",
    "outside of the current working directory",
)
# A quota message that also says when to retry is contradictory (GUIDE.md precedence 4).
RETRY_AFTER = ("Please retry in", "retry after", "Retry-After", "Please try again in")
QUOTA = (
    "insufficient_quota",
    "exceeded your current quota",
    "credit balance is too low",
    "billing details",
    "quota exceeded for this plan",
)
RATE_LIMIT = (
    "ate limit exceeded",
    "rate limit reached",
    "Rate limit reached",
    "secondary rate limit",
    "Too Many Requests",
    "TooManyRequests",
    "RESOURCE_EXHAUSTED",
    "Please wait a few minutes before you try again",
    "overloaded_error",
)
OWN_TIMEOUT = (
    "command timed out",
    "Command timed out",
    "EXECUTION TIMED OUT",
    "killed due to timeout",
    "terminated command after exceeding timeout",
    "Request timed out",
)

# An HTTP status in an unmistakable context: the code followed by its reason phrase or by
# the connectives of library messages (`403 for url`, `403 - API rate limit`).
# (The lookbehind follows the first digit, and the pattern is written once for a leading
# 4 and once for a 5, so that each search skips by a literal digit (scan.py): the same
# matches as `(?<![0-9A-Za-z.])([45][0-9]{2})...`, at a sixth of the cost. A match holds
# no 4 or 5 after its digits, so the two searches' matches are those of the one pattern.)
HTTP_REASON = (
    r"(?: |:|,|'| \()"
    r"(?:Client Error|Server Error|Not Found|Forbidden|Unauthorized|Bad Request|Bad Gateway"
    r"|Service (?:Temporarily )?Unavailable|Gateway Time-?out|Too [Mm]any [Rr]equests"
    r"|Internal Server Error|Gone|Payment Required|Not found|Access Denied"
    r"|Overloaded|Method Not Allowed|Conflict|Unprocessable|Request Timeout|Too Early"
    r"|Bad credentials|for |- |\{| message=')"  # aiohttp: `400, message='Bad Request'`
)
HTTP_STATUS = tuple(
    re.compile(rf"({digit}(?<![0-9A-Za-z.]{digit})[0-9]{{2}}){HTTP_REASON}") for digit in "45"
)
# A status named by an API client's own words: `status code 429`, `Status Code: 401`,
# `Error code: 401 - {...}`, `API Error: 529 Overloaded`, `API Error (529 {...})`, `Error: 400
# This model's ...`. Each pattern opens with a literal, which the regex engine finds by a
# fast substring search (a pattern opening with `[45]` is tried at every character).
STATUS_CONTEXT = (
    re.compile(r"rror(?: [Cc]ode:? |: | \(| )([45][0-9]{2})(?![0-9])"),
    re.compile(r"tatus(?: ?[Cc]ode)?(?: ?:? |=| of )([45][0-9]{2})(?![0-9])"),
)
HTTP_SCOPE = 1024  # statuses are read from the start of the evidence window only

# (substring, kind): operating-system and network conditions, most specific first.
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("No space left on device", "unrecoverable"),
    ("ENOSPC", "unrecoverable"),
    ("Errno 28", "unrecoverable"),
    ("Read-only file system", "unrecoverable"),
    ("EROFS", "unrecoverable"),
    ("Operation not permitted", "unrecoverable"),
    ("Permission denied (publickey", "unrecoverable"),  # ssh, whatever methods it lists
    ("Could not read from remote repository", "unrecoverable"),
    ("ECONNRESET", "transient"),
    ("onnection reset", "transient"),
    ("onnection aborted", "transient"),
    ("ETIMEDOUT", "transient"),
    ("UND_ERR_CONNECT_TIMEOUT", "transient"),
    ("UND_ERR_HEADERS_TIMEOUT", "transient"),
    ("ConnectTimeoutError", "transient"),
    ("ERR_SOCKET_CONNECTION_TIMEOUT", "transient"),
    ("Connection timed out", "transient"),
    ("Operation timed out", "transient"),
    ("Read timed out", "transient"),
    ("read operation timed out", "transient"),
    ("handshake operation timed out", "transient"),
    ("socket hang up", "transient"),
    ("database is locked", "transient"),
    ("Resource temporarily unavailable", "transient"),
    ("EISDIR", "fixable"),
    ("Is a directory", "fixable"),
    ("Not a directory", "fixable"),
    ("No such file", "fixable"),
    ("ENOENT", "fixable"),
    ("File not found", "fixable"),
    ("file not found", "fixable"),
    ("does not exist", "fixable"),
    ("command not found", "fixable"),
)

# Network conditions that in an agent's sandbox usually mean "no network" rather than a
# passing fault: never given a kind on their own.
UNSURE_NETWORK = (
    "Could not resolve host",
    "Temporary failure in name resolution",
    "EAI_AGAIN",
    "ENOTFOUND",
    "getaddrinfo",
    "onnection refused",
    "ECONNREFUSED",
    "No route to host",
    "Network is unreachable",
)

# Permission denied is unrecoverable on a system path, fixable on a relative path the
# agent typed (`bash: ./run.sh: Permission denied`), and unsure elsewhere.
PERMISSION = ("Permission denied", "EACCES", "ermission denied", "Access is denied")
SYSTEM_PATH = re.compile(
    r"['\"( ](?:/usr/|/etc/|/var/|/root|/opt/|/bin/|/sbin/|/lib|/dev/|/System/|/Library/"
    r"|/private/|/proc/|/sys/|[A-Z]:\\\\?(?:Program Files|Windows))"
)
RELATIVE_EXEC = re.compile(
    r"^(?:[\w-]{1,20}: )?(?:line [0-9]{1,6}: )?\./[^\n:]{1,200}: Permission denied", re.MULTILINE
)

# The exception class named on a failure line (last dotted component).
# (Also after pytest's `E   `, Node's `{ [`, a repr's `<`; round 13: Elixir's `** (`, indented
# or not as the runtime nests it, and VS Code's debugger's `Exception has occurred: `, in
# Chinese `发生异常: `; Ruby's `A::B: ` too.)
EXCEPTION_NAME = LineStart(
    r"(?:Exception in thread \"[^\"\n]{0,80}\" |Uncaught | {0,4}\[|E: |E {3,8}"
    r"|\{ \[?|<_?| {0,12}\*\* \(|Exception has occurred: |发生异常: )?"
    r"(?:(?:[A-Za-z_][A-Za-z0-9_]{0,40}(?:\.|::)){0,6}"
    r"([A-Z][A-Za-z0-9_]{0,60}(?:Error|Exception|Timeout))\b"
    r"|(?:[A-Z][A-Za-z0-9]{0,40}::){1,4}([A-Z][A-Za-z0-9_]{0,60}): )"
)
EXCEPTION_KIND = {
    "ReadTimeout": "transient",
    "ReadTimeoutError": "transient",
    "ConnectTimeout": "transient",
    "ConnectTimeoutError": "transient",
    "WriteTimeout": "transient",
    "PoolTimeout": "transient",
    "ConnectionResetError": "transient",
    "ConnectionAbortedError": "transient",
    # a timeout of unknown kind: a network's (`[Errno 110]`, read by tier 6) or the call's own
    # time limit (Playwright's `TimeoutError: Timeout 30000ms exceeded`): GUIDE precedence 3
    "TimeoutError": "ambiguous",
    "RateLimitError": "transient",
    "RateLimitExceededException": "transient",
    "NameError": "fixable",
    "TypeError": "fixable",
    "AttributeError": "fixable",
    "SyntaxError": "fixable",
    "IndentationError": "fixable",
    "TabError": "fixable",
    "KeyError": "fixable",
    "IndexError": "fixable",
    "ValueError": "fixable",
    "AssertionError": "fixable",
    "ZeroDivisionError": "fixable",
    "ModuleNotFoundError": "fixable",
    "ImportError": "fixable",
    "FileNotFoundError": "fixable",
    "IsADirectoryError": "fixable",
    "NotADirectoryError": "fixable",
    "ReferenceError": "fixable",
    "RangeError": "fixable",
    "ValidationError": "fixable",
    "InvalidRequestError": "fixable",
    "BadRequestError": "fixable",
    "JSONDecodeError": "fixable",
    "UnboundLocalError": "fixable",
    "RecursionError": "fixable",
    "NullPointerException": "fixable",
    "ClassNotFoundException": "fixable",
    "IllegalArgumentException": "fixable",
    # Elixir's call of a function that does not exist (`** (UndefinedFunctionError) function
    # Mix.env/0 is undefined`): the code's, as Python's NameError (round 13)
    "UndefinedFunctionError": "fixable",
    "AuthenticationError": "unrecoverable",
    "PermissionDeniedError": "unrecoverable",
}

# What the call got wrong, in the words of edit tools, validators, compilers and tests.
FIXABLE_WORDS = (
    *EDIT_MISMATCH,
    "has not been read",
    "No replacement was performed",
    "proposed edit has introduced new syntax error",
    "apply_patch verification failed",
    "No file open",
    "must not be empty",
    "cannot be empty",
    "did not match",
    "not unique",
    "Invalid arguments",
    "Invalid parameters",
    "nvalid params",
    "unexpected keyword argument",
    "required positional argument",
    "validation error",
    "is a required property",
    "is not of type",
    "ethod not found",
    "-32601",
    "-32602",
    "INVALID_ARGUMENT",
    "could not compile",
    "Could not compile",
    "error[E",
    "error TS",
    "SyntaxError",
    "invalid option",
    "unrecognized option",
    "unrecognized arguments",
    "invalid choice",
    "usage: ",
    "Usage: ",
    # API requests the call must change
    "invalid_request_error",
    "maximum context length",
    "without value for required parameter",
    # builds and containers
    "Compilation failed",
    "ERESOLVE",
    "is already in use by container",
)
UNRECOVERABLE_WORDS = (
    "Unauthorized",
    "UNAUTHENTICATED",
    "PERMISSION_DENIED",
    "nvalid API key",
    "ncorrect API key",
    "ot authorized to",
    "denied to ",
    "Forbidden",
)

# Substrings shared by several words above: each list files its words under them
# (toolerr.wide.probes), a speed device that changes no answer.
MARKERS = (
    *("timed out", "onnection", " not found", "_TIMEOUT", "not ", "denied", "ate limit"),
    *("::ERR_", "cannot find the ", "invalid_"),
)
# ... and for the classification's tiers, which share one memo of markers (a marker is then
# scanned once a text): more, chosen in round 6 by the substring scans they save on the bench's
# failing texts (about four of fifty-six a text), and `time` and `read` in round 8, by a greedy
# search over the failing texts of the tuning splits (about one more scan a text); `limit` in
# session 5's eighth round, for the plans' `usage limit` and the rate limits' words, which it
# holds (absent from most failing texts; about half a microsecond of the classification).
SHARED_MARKERS = (*MARKERS, "erro", " dire", "fail", "alid ", "time", "read", "limit")

# Characters of the words above, rarest first (in how many evidence windows of the tuning
# splits, dev, dev_extra and test2, each occurs). A speed device for toolerr.wide.probes:
# each word is looked up only when its two rarest characters occur in the text; it changes
# no answer. A character missing here counts as the rarest.
RARITY = "不仓库是XK`VY!GzWHMqLjO'INDU[6R8APSFC_xT3w)(0Ek2-1vbyhfg.m:upcdlsnitaeor "
