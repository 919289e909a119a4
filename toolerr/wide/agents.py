"""Agents' own tool results and the tools they run most: words and shapes
from coding agents' transcripts (Claude Code, Cursor, Zed, pi, aider), MCP servers, git,
npm, shells and Gradle, in the same form as toolerr.wide.words and general.py. Data only;
rules.py adds each list to its tier.

Collected on dev_extra3 (agents' transcripts) and test4 (tuned on after its one
evaluation), kept only where no success of a tuning split is detected and no kind changes
to a wrong one.
"""

from __future__ import annotations

import re

# Report lines that tools print on success: apt's notice in a container without a tty,
# `docker run`'s notice before it pulls the image and runs it.
BENIGN_REPORTS = ("debconf: unable to initialize frontend", "Unable to find image '")

# A line that begins a failure report (rules.REPORT_LINE, after every other shape):
# kubectl's `Error from server (Forbidden):` and MCP clients' `Error from MCP server:`,
# Cursor's `Error calling tool 'edit_file'.`, Gradle's `* What went wrong:`, an API
# client's status and JSON body (`402 {"error":...}`), a failure glyph before an errno
# name (`✖ ENOENT: no such file ...`).
REPORT_BODY = (
    r"Error from |Error calling tool|\* What went wrong:|[45][0-9]{2} \{\""
    r"|[✗✕✘×❌✖] ?E[A-Z]{2,15}: "
    # a shell's own `command not found` (`zsh: command not found: timeout`, `bash: node: ...`),
    # ssh's key refusal, Go's HTTP client (`Get https://...: net/http: TLS handshake timeout`),
    # a tool's message in a tag (`<web_fetch_system_message>Error fetching webpage: ...`)
    r"|(?:/bin/)?(?:ba|z|da|k)?sh: (?:line [0-9]{1,6}: )?[^\n]{0,100}?command not found"
    r"|Permission denied \(publickey| {0,4}Uncaught Error: "
    r"|(?:Get|Post|Put|Patch|Delete|Head) \"?https?://[^\s\"]{1,300}\"?: "
    r"|<[a-z_]{1,40}>(?:Error|ERROR) [a-z]{2,15}ing\b[^:\n]{0,80}:"
    # a shell's syntax error, bash's and a login shell's (`-bash: syntax error near unexpected
    # token`; dash's is general.MARKED_LINES'); SQLAlchemy's wrapped driver error
    # (`(psycopg2.OperationalError) FATAL: ...`)
    r"|-?(?:/bin/)?(?:ba|z|da|k)?sh: [^\n]{0,120}?syntax error\b"
    r"|\((?:[a-z_][a-z0-9_]{0,40}\.){1,6}[A-Z][A-Za-z0-9]{0,60}(?:Error|Exception)\) "
    # a container registry's refusal (`denied: requested access to the resource is denied`,
    # `denied: Permission "artifactregistry..." denied`; not a count, `denied: 2`)
    r"|denied: [A-Za-z][a-z]{1,20} [A-Za-z\"]"
    # Claude Code's WebFetch that stops at a redirect to another host and names the URL to
    # fetch instead (round 13: `REDIRECT DETECTED: The URL redirects to a different host.`)
    r"|REDIRECT DETECTED: "
)
# An MCP server's text result wrapped as its structured output, when it is an error (round 12:
# FastMCP's `{"result": "Error: No matches of search expression found in file ..."}`,
# `{"result": "Error (NIX_NOT_FOUND): ..."}`; rules._json_failure).
RESULT_ERROR = re.compile(r"(?:Error|ERROR)(?::| \()")
# Playwright MCP's result when the tool failed (round 13): a Markdown section `### Error` and the
# error under it (`Error: "Submit" does not match any elements.`, `TimeoutError: locator.click:
# Timeout 5000ms exceeded.`), read before the `#` that would open a document (rules.py).
PLAYWRIGHT_ERROR = "### Error"
# A log file's record (`[ERROR] 2023-09-14 08:23:01 ...`): a line of a document read whole,
# not a report of this call (rules._line_match skips it).
LOG_RECORD = r"\[(?:ERROR|FATAL|WARN|WARNING)\] {1,2}[0-9]{4}-[0-9]{2}-[0-9]{2}"
# A clock time before a report line (CI logs: `00:00:56.229 npm ERR! ...`).
CLOCK_PREFIX = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})? "
# A failure sentence at the start: `Invalid input for tool pack_codebase: ...`.
EDGE_BODY = (
    r"[Ii]nvalid (?:input|arguments?|parameters?) for "
    # a usage error (`unknown option '-n'`, `Unknown option: show-module`)
    r"|(?:[Uu]nknown|[Uu]nrecognized) (?:option|argument|flag)s?\b"
    # an HTTP error page's text alone (`Service Unavailable`), or a body that opens with its
    # reason (`Unauthorized. Please check your API key.`; not `Not Found`: a search with no
    # match says it too)
    r"|(?:Service (?:Temporarily )?Unavailable|Bad Gateway|Gateway Time-?out)$"
    r"|(?:Unauthorized|Forbidden)(?:[.:!] |$)"
    # an HTTP client's status and its reason or sentence (`403 Forbidden: {...}`, `404 Not
    # Found`, `429 Request was rejected due to rate limiting.`; not `412 Readme.md`, a count)
    r"|[45][0-9]{2} (?:(?:[A-Z][a-z]{1,20} ?){1,3}(?::|$)|[A-Z][a-z]{1,20}(?: [a-z]{2,20}){2})"
    # systemd's refusal of a unit's job (round 13: `Job for x.service failed because the
    # control process exited with error code. See "systemctl status x.service" ...`)
    r"|Job for [^\s]{1,200} failed\b"
)

# An HTTP status named by `HTTP 403:`, `(HTTP 401)`, `HTTP/1.1 502` (the pattern opens with
# a literal; its one group is the status).
STATUS_HTTP = r"HTTP(?:/[0-9.]{1,3})? ([45][0-9]{2})(?![0-9])"
# Exit codes of a process killed by a signal (128 + SIGINT, SIGABRT, SIGKILL, SIGSEGV,
# SIGTERM): like a signal line, ambiguous.
SIGNAL_EXITS = (130, 134, 137, 139, 143)

EDIT_NOT_FOUND = ("Target content not found", "No matches of search expression found")
CLINE_DENIAL = "The user denied this operation"
FAILURE_PHRASES = (
    "did not conform to the edit format",  # aider
    "does not appear in the file",  # Zed's edit tool
    # CrewAI's observations after input it could not parse (`... I MUST either use a tool
    # (use one at time) OR give my best final answer`) or a call it would not repeat (its own
    # phrasing: plain English such as `I encountered an error` or `errors and try again` is
    # what read files and issue bodies say too)
    *("I MUST either use a tool", "I must stop using this action input"),
    # edit tools' mismatches (round 12): `[Error] Replacement operation failed: Target content
    # not found: '...'` (CodeGeeX, Antigravity's replace tool), Serena's `No matches of search
    # expression found in file '...'`
    *EDIT_NOT_FOUND,
    # round 15: Cline's and Roo Code's denied call (DENIAL below), which carries no error flag
    CLINE_DENIAL,
)
DENIAL = (
    "has been denied.",  # Claude Code: `Permission to use Bash with command X has been denied.`
    # Gemini CLI: the user declined the call (`[Operation Cancelled] Reason: User cancelled
    # the operation.`), or a path outside the workspace the user allowed (`Path not in
    # workspace: Attempted path "..." resolves outside the allowed workspace directories`)
    "[Operation Cancelled]",
    "outside the allowed workspace",
    # Claude Code: a user's PreToolUse hook refused the call (`Hook PreToolUse:Bash denied this
    # tool`); a server's allow-list of paths (`Working directory (...) outside allowed paths.
    # Consult the server admin ...`; round 12)
    *("denied this tool", "outside allowed paths"),
    # round 15: Cline's and Roo Code's result for a call the user rejected (`The user denied
    # this operation.`, or `... and provided the following feedback:` and the feedback)
    CLINE_DENIAL,
    # Gemini CLI's policy engine (round 13: `Tool execution denied by policy. You are in Plan
    # Mode and cannot modify source code.`)
    "denied by policy",
    # Auto-GPT's command allow-list (round 16: `Command execute_shell returned: Error: This
    # Shell Command is not allowed.`): the user's configuration, not the agent's to lift
    "Shell Command is not allowed",
)
# (`This request exceeds your plan's set usage limit`, `Claude AI usage limit reached`: a
# plan's limit, GUIDE.md's unrecoverable)
QUOTA = ("quota_exceeded", "quota exceeded", "usage limit")
CONDITIONS: tuple[tuple[str, str], ...] = (
    # Go's and the kernel's lower-case spellings
    ("no space left on device", "unrecoverable"),
    ("read-only file system", "unrecoverable"),
    # git over HTTP when the connection broke (curl's error 56, a receive failure)
    ("RPC failed; result=56", "transient"),
    ("RPC failed; curl 56", "transient"),
    # git over HTTP: the transfer broke off (curl 18: partial file; 92: HTTP/2 stream reset)
    ("RPC failed; curl 18", "transient"),
    ("RPC failed; curl 92", "transient"),
    ("RPC failed; result=18", "transient"),  # older git's spelling of curl's 18
    # Go's error for a context whose deadline passed (Docker, kubectl, flyctl, Terraform, gRPC
    # clients: `Get "http://...": context deadline exceeded`): a network call timed out
    ("context deadline exceeded", "transient"),
    ("unexpected disconnect while reading sideband packet", "transient"),
    ("Bad Gateway", "transient"),
    # round 12: the reason as some servers spell it (`{"error": "Bad gateway"}`)
    ("Bad gateway", "transient"),
    # round 15: Windows' WSAECONNRESET (RESET_WORDS below)
    ("forcibly closed by the remote host", "transient"),
)
# A full or read-only disk explains the missing files and directories that follow it.
DISK_WORDS = (
    *("No space left on device", "ENOSPC", "Errno 28", "Read-only file system", "EROFS"),
    *("no space left on device", "read-only file system"),
)
# (round 13: a service's answer that merges a missing item and one the caller may not see,
# Jira's `Issue does not exist or you do not have permission to see it.`)
UNSURE = ("not properly initialized", "or you do not have permission")
# (round 14: libpq's hint under a failed connection to a local socket, `connection to server on
# socket "/var/run/postgresql/.s.PGSQL.5432" failed: No such file or directory` / `Is the server
# running locally and accepting connections on that socket?`: the missing file is a server
# that is not (yet) running, not a path the call chose, as a refused connection)
UNSURE += ("Is the server running locally",)
# (round 15: a program a tool spawns that is not there, `Failure("execve: No such file or
# directory")`: no path of the call, but a program not installed or misnamed, which the text
# cannot tell apart, as with round 10's lookup answers)
UNSURE += ("execve: No such file",)
# The members of a JSON error object (API bodies, JSON-RPC): an `error` object with none of
# them (a locale file's `{"error": {"notFound": "..."}}`) does not make the body a failure.
ERROR_OBJECT_KEYS = frozenset(
    ("message", "msg", "code", "type", "status", "reason", "detail", "details", "description")
)
# A JSON-RPC internal error (`MCP error -32603: ENOENT: ... mkdir '~'`): the server failed on
# its own, so a missing file or directory it names may be one the call never chose
# (rules._conditions leaves the path conditions unsure under it; -32602 is the call's fault).
INTERNAL_ERROR = "-32603"
# A connection reset by a server on this machine (`connect ECONNRESET 127.0.0.1:3000`) is a
# local server that failed, not a remote service's passing fault: unsure (GUIDE.md).
RESET_WORDS = ("ECONNRESET", "onnection reset", "onnection aborted", "socket hang up")
# round 15: Windows' text of WSAECONNRESET (10054), as Python, .NET and curl print it (`pip
# ... ProtocolError: ("Connection broken: ConnectionResetError(10054, 'An existing
# connection was forcibly closed by the remote host', ...)`): a reset, as above
RESET_WORDS += ("forcibly closed by the remote host",)
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
# Go's resolver (`dial tcp: lookup goproxy.cn on 192.168.31.255:53: ... i/o timeout`): a
# network timeout during a DNS lookup says no more than "Could not resolve host": unsure.
DNS_LOOKUP = ": lookup "
# aider's header of the lint and test errors it sends back (`# Fix any errors below, if
# possible.`, then `## Running: flake8 ...` and the findings): the failure opens the text
# (rules.py reads it before the `#` that would open a document).
AIDER_FIX_HEADER = "# Fix any errors below"
# (round 14) and its header of edits it could not apply (`# 1 SEARCH/REPLACE block failed to
# match!`, `# 2 SEARCH/REPLACE blocks failed to match!`), read before the `#` as well
AIDER_EDIT_HEADER = re.compile(r"# [0-9]{1,4} SEARCH/REPLACE blocks? failed to match!")
UNRECOVERABLE_WORDS = (
    *("could not read Username", "could not read Password"),  # git, no credentials
    # a failure that names the API key or token: missing or invalid credentials (round 16: an
    # MCP server's `{"error":{"code":-32001,"message":"Invalid or missing API token."}}`)
    *("API key", "API token"),
    # git's `remote: Repository not found.`: a wrong URL or a repository the user cannot
    # access (GitHub answers both alike), so with ` not found` the words disagree: ambiguous
    "epository not found",
    *("not have permission", "Insufficient Permission"),  # gcloud
    *("Unable to authenticate", "code E401"),  # npm registries
    *("token is not valid", "token seems to be invalid"),
    "Resource not accessible by integration",  # GitHub's token lacks the scope
    "requested access to the resource is denied",  # a container registry's refusal
    # AWS's expired session credentials (every SDK and the CLI: `An error occurred
    # (ExpiredToken) when calling ...: The security token included in the request is expired`)
    "ExpiredToken",
    # HTTP 402's reason phrase alone (`{"error":"Payment Required"}`); OAuth 2's refusal of an
    # expired or revoked grant (RFC 6749 5.2: `invalid_grant`); an authentication the service
    # refused or asks for (`Code 10000: Authentication error`, `fatal: Authentication failed
    # for '...'`, `Authentication required`)
    *("Payment Required", "invalid_grant", "Authentication "),
)
FIXABLE_WORDS = (
    # command-line usage
    *("unrecognized flag", "unknown flag", "flag provided but not defined"),
    *("Missing script: ", "no matches found: "),  # npm run; zsh's unmatched glob
    # edit and read tools
    *("must match exactly", "did not conform to the edit format", "does not appear in the file"),
    "SearchReplaceNoExactMatch: ",  # aider (round 14)
    # Claude Code's Read without offset/limit (round 16: the size limit, `File content
    # (403.3KB) exceeds maximum allowed size (256KB). Use offset and limit parameters ...`)
    *("exceeds maximum allowed tokens", "exceeds maximum allowed size"),
    "Please commit or stash them",  # git pull/rebase/merge over local changes
    "must have required property",  # ajv schema validation
    "nknown option",  # command-line usage
    "Type error: ",  # Next.js's type check
    # agents' own results: Claude Code's `File has been unexpectedly modified. Read it again
    # before attempting to write it.` (and `... modified since read, ...`); an expected text
    # that was not there, in edit tools' and linters' words (Gemini CLI's and Qwen Code's
    # `Expected 1 occurrence but found 2 for old_string`, eslint's `Expected indentation of 4
    # spaces but found 2`)
    *("Read it again before", " but found "),
    # tool-calling frameworks: ajv's `must NOT have additional properties`, pydantic-ai's
    # retry prompt `Fix the errors and try again.`, Mastra's and Amazon Q's `Tool validation
    # failed`
    *("must NOT have ", "Fix the errors and try again", "Tool validation failed"),
    # CrewAI's observations: input it could not parse (`Error: the Action Input is not a valid
    # key, value dictionary.`, `I MUST either use a tool ... OR give my best final answer`),
    # a call it would not repeat
    *("is not a valid key, value dictionary", "I MUST either use a tool"),
    "I must stop using this action input",
    *("undefined reference to", "no input files"),  # linkers and compilers
    # aider's report of its linter's or tests' findings on the files it edited
    AIDER_FIX_HEADER,
    # CMake's diagnostic at a line of the project's own CMakeLists.txt (`CMake Error at
    # CMakeLists.txt:79 (find_package):`); a dependency solver that found no versions to
    # satisfy the project's requirements (Julia's Pkg `Unsatisfiable requirements detected`,
    # conda's `UnsatisfiableError`)
    *("CMake Error at", "Unsatisfiable"),
    # getopt's refusal of an option (general.MARKED_LINES); Elixir's compiler error
    *("invalid option -- ", "unrecognized option '", "** (CompileError)"),
    # round 12: edit and read tools' own results (EDIT_NOT_FOUND; Kilo Code's and Roo Code's
    # read of a directory, `Path provided was not a file!`); Claude Code's answer to a tool
    # name the session does not have (`No such tool available: mcp__x__y`); GitHub's answer
    # to a second pull request for a branch (`A pull request already exists for o:branch.`,
    # HTTP 422 or the gh CLI's GraphQL); npx without `--yes` where the package is not installed
    # (`npm error npx canceled due to missing packages and no YES option: [...]`); pnpm's
    # refusal of dependencies' build scripts nobody approved (`ERR_PNPM_IGNORED_BUILDS`, with
    # `Run "pnpm approve-builds"`)
    *(*EDIT_NOT_FOUND, "Path provided was not a file", "No such tool available"),
    *("A pull request already exists", "npx canceled due to missing packages and no YES option"),
    "ERR_PNPM_IGNORED_BUILDS",
    # round 13: Claude Code's Edit whose old text occurs more than once (`Found 2 matches of the
    # string to replace, but replace_all is false.`); OpenHands' input to a terminal with no
    # command running (`ERROR: No previous running command to interact with.`); Claude Code's
    # WebFetch redirect (REPORT_BODY); a locator that matches no element (Selenium's `no
    # such element: Unable to locate element: {...}` in every language binding, Playwright's
    # `Error: "Submit" does not match any elements.`)
    *("but replace_all is false", "No previous running command to interact with"),
    "REDIRECT DETECTED: The URL redirects to a different host",
    *("Unable to locate element", "does not match any elements"),
)
