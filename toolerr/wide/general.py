"""General failure shapes of the wide rule set: structure that carries over to
tools the word lists never saw, rather than more words of the tools they did.

- Report lines with a prefix: a program name (`fugitive: error:`, `c++: fatal error:`), a
  short phrase ending in `error:` (`Unknown agent error: RateLimitError: ...`), a failure
  glyph (`✗ Error:`, uv's `× No solution found`), a localized `错误:`, apt's and Ruby's
  `E: `, Node's inspected errors (`{ Error: socket hang up`, `[Error: EISDIR: ...`), Python
  reprs (`<_InactiveRpcError of RPC ...>`, `{'type': 'invalid_request_error', ...}`),
  Ruby classes (`Octokit::Forbidden:`), gRPC (`rpc error: code = Unavailable`), yarn's
  `error An unexpected error occurred`, Node error codes (`ERR_PNPM_FETCH_404`), Go HTTP
  clients (`GET https://...: 401 Bad credentials`).
- Failure sentences at an edge of the text: a line that begins with a generic failure
  verb (`Failed to`, `Could not`, `Unable to`, `Cannot`) or says `X failed:`.
- Terminal lines: make's `*** ... Stop.` and `*** [target] Error N`, bash's `line N: syntax
  error`, Windows cmd's messages, a process killed (`Segmentation fault (core dumped)`).
- The kind from an exception class's own name when it is not in the known list
  (`Octokit::Forbidden`, `SocketTimeoutException`, `InterpreterError`), and from the class
  named mid-line (`... due to: IndexError: ...`).

Every quantifier is bounded and no repeated group can match the same text two ways (so no
catastrophic backtracking; tests/toolerr/test_toolerr_wide_families.py feeds long
adversarial lines). Rare shapes sit behind a cheap marker test.
"""

from __future__ import annotations

import re

# A line that begins a failure report, in the first lines or the last ones (rules.py).
# (Round 12: Terraform's boxed diagnostics, `│ Error: configuring ...`; a service's error with
# its HTTP status, `Google error 503: {...}`, `HTTP error 401: Unauthorized`.)
_PREFIX = (
    r"(?:[✗✕✘×❌✖] ?|错误[:：] ?|E: |E {3,8}(?=[A-Z])|\{ \[?|\[|<|Caused by: |│ "
    r"|[\w.+-]{1,30}: (?=(?:fatal )?(?:error|Error|ERROR|fatal)[:\[ ])"
    r"|(?:[A-Za-z][a-z]{1,15} |[A-Z]{2,5} ){1,3}"  # (words or acronyms: `API error occurred:`)
    r"(?=(?:error|Error|exception|Exception)(?::| occurred| [45][0-9]{2}: )))?"
)
PREFIXED_BODY = (
    rf"{_PREFIX}(?:(?:Error|ERROR|error|fatal error|FATAL|fatal|exception|Exception)"
    r"(?::|\[[^\]\n]{1,20}\]:| occurred| [45][0-9]{2}: )"
    r"|(?:[A-Za-z_][A-Za-z0-9_]{0,40}(?:\.|::)){0,6}_?[A-Z][A-Za-z0-9_]{0,60}"
    r"(?:Error|Exception)(?::|$| \(|\(| of )"
    r"|(?:[Ee]rror|ERROR) [a-z]{2,15}ing\b[^:\n]{0,80}:)"
    r"|(?:E: )?(?:[A-Z][A-Za-z0-9]{0,40}::){1,4}[A-Z][A-Za-z0-9_]{0,60}: "
    r"|error (?=[A-Z])|rpc error: code = |[ \u2009]?ERR_[A-Z][A-Z0-9_]{1,40}\b"
    r"|(?:GET|POST|PUT|PATCH|DELETE|HEAD) https?://[^\s]{1,300}: [45][0-9]{2} "
    r"|\{'(?:error|detail)': |\{'type': '[a-z_]{1,40}_error'"
    r"| {1,2}[x×] No solution found"
    # a bare class line (poetry's `  SolverProblemError`), a dotted Python class
    # (`google.api_core.exceptions.ServiceUnavailable: 503`), PHP's `[Vendor\XException]`
    # and Symfony console's `In File.php line 394:`, redis-cli's `(error) `, aws-cli
    r"| {1,4}(?:[A-Za-z_][A-Za-z0-9_]{0,40}\.){0,6}[A-Z][A-Za-z0-9_]{0,60}(?:Error|Exception)$"
    r"|(?:[a-z_][a-z0-9_]{0,40}\.){1,6}[A-Z][A-Za-z0-9_]{0,60}: "
    r"|\[(?:[A-Z][A-Za-z0-9_]{0,40}\\){1,6}[A-Z][A-Za-z0-9_]{0,60}(?:Exception|Error)\]"
    r"|In [\w.-]{1,80}\.php line [0-9]{1,7}:$|\(error\) |A client error \("
    # a passive failure sentence: `Your requirements could not be resolved ...`
    r"|[A-Z][\w ]{0,60}? (?:could not|cannot|couldn't|failed to) be "
)
# Lines behind a marker (a search of every line start for them costs more than the marker
# test): a status line (`[i] Status code : 401`), Rust's io errors (`Permission denied (os
# error 13)`), Ruby's uncaught exception (`client.rb:339:in `get': Access Denied (...)`).
MARKED_LINES = (
    (
        ("tatus code", "HTTP response", "esponse code"),
        re.compile(
            r"^[^\n]{0,80}?(?:[Ss]tatus code ?:? ?|HTTP response |[Rr]esponse code:? )"
            r"[45][0-9]{2}\b",
            re.MULTILINE,
        ),
    ),
    (("(os error ",), re.compile(r"^[^\n]{0,200}\(os error [0-9]{1,5}\)$", re.MULTILINE)),
    (
        (".rb:",),
        re.compile(r"^[^\n:]{1,300}\.rb:[0-9]{1,7}:in [`'][^\n']{1,100}': ", re.MULTILINE),
    ),
    # Go's HTTP client error behind a program and its subject (`go: mod@v1.9.25: Get
    # "https://...": dial tcp ...: i/o timeout`); at a line start it is a report line itself
    (
        (': Get "',),
        re.compile(r'^[\w.-]{1,30}: (?:[^\s]{1,200}: )?Get "https?://', re.MULTILINE),
    ),
    # dash's and sh's syntax error (`./run.sh: 110: lib.sh: Syntax error: "(" unexpected`) and
    # Node's errors with their code (`TypeError [ERR_INVALID_ARG_TYPE]: The "path" ...`)
    (
        (": Syntax error: ",),
        re.compile(r"^[^\s:]{1,200}: [0-9]{1,6}: (?:[^\s:]{1,200}: )?Syntax error: ", re.MULTILINE),
    ),
    # (and the bare class, round 12: `Error [ERR_REQUIRE_ESM]: require() of ES Module ...`)
    (
        ("Error [",),
        re.compile(r"^(?:[A-Z][A-Za-z]{0,40})?Error \[[A-Z][A-Z0-9_]{2,60}\]: ", re.MULTILINE),
    ),
    # getopt's refusal of an option, as every GNU and BSD tool prints it (`grep: invalid option
    # -- '-'`, `ls: unrecognized option '--foo'`), and Elixir's uncaught error (`** (CompileError)
    # lib/x.ex:24: undefined function`, `** (Mix) Package fetch failed`)
    (
        ("invalid option -- ", "unrecognized option '"),
        re.compile(r"^[\w.-]{1,40}: (?:invalid option -- |unrecognized option ')", re.MULTILINE),
    ),
    # (indented too, as OTP nests it: `    ** (EXIT) an exception was raised:` under an
    # application that failed to start; round 13)
    (("** (",), re.compile(r"^ {0,12}\*\* \([A-Z][A-Za-z0-9_.]{0,60}\) ", re.MULTILINE)),
    # caarlos0/log's error glyph with its `error=` field (goreleaser: `   ⨯ release failed after
    # 430.85s error=...`; round 9)
    (("⨯",), re.compile(r"^ {0,6}⨯ [^\n]{1,200}? error=", re.MULTILINE)),
    # Round 12: Node's uncaught `error` event (`events.js:292` / `throw er; // Unhandled 'error'
    # event`, the error itself a few lines below); Ansible's ad-hoc result for a host (`server1 |
    # UNREACHABLE! => {`, `web | FAILED! => {`); the AWS SDK for Go v2's failed operation
    # (`operation error CloudWatch Logs: DescribeLogStreams, exceeded maximum number of ...`:
    # Terraform's AWS provider, Steampipe and other Go tools print it)
    (
        ("Unhandled 'error' event",),
        re.compile(r"^ {0,8}throw er; // Unhandled 'error' event", re.MULTILINE),
    ),
    (
        ("! => ",),
        re.compile(r"^[\w.@:\[\]-]{1,100} \| (?:UNREACHABLE|FAILED)! => ", re.MULTILINE),
    ),
    (
        ("operation error ",),
        re.compile(r"^operation error [\w .-]{1,40}: [A-Za-z][A-Za-z0-9]{1,60}, ", re.MULTILINE),
    ),
    # Round 13: .NET's HttpClient refusing a response's status (`Response status code does not
    # indicate success: 401 (Unauthorized).`: NuGet, dotnet, PowerShell's Invoke-WebRequest),
    # behind MSBuild's location and `error :` or alone
    (
        ("esponse status code does not indicate success",),  # (behind `esponse`: one scan)
        re.compile(
            r"^[^\n]{0,300}?Response status code does not indicate success: [45][0-9]{2}\b",
            re.MULTILINE,
        ),
    ),
)
# IPython's and Jupyter's traceback (round 13): a rule of dashes, then the class and `Traceback
# (most recent call last)` on one line (`KeyError      Traceback (most recent call last)`), read
# before the `---` that would open a document (rules.py).
IPYTHON_TRACEBACK = re.compile(
    r"-{20,200}\n[A-Za-z_][A-Za-z0-9_.]{0,100} {1,100}Traceback \(most recent call last\)"
)
# Report lines that tools print on success: pip's notice after an install that worked.
BENIGN_REPORTS = ("ERROR: pip's dependency resolver does not currently take into account",)
# More Node errno names than words.FAILURE_LINE's (`EISDIR: illegal operation ...`).
ERRNO_BODY = (
    r"(?:EISDIR|ENOTDIR|EEXIST|EADDRINUSE|ENOSPC|EROFS|EMFILE|ENOTEMPTY|EBUSY|ECONNABORTED"
    r"|EHOSTUNREACH|ENETUNREACH|ESOCKETTIMEDOUT|EPROTO)[:,] "
)

# A failure sentence that opens or closes the text (its first or last lines). (Round 13: also
# `X failed` ending its line, `AH00014: Configuration check failed`, ssh's `Host key
# verification failed.`, certbot's `All renewal attempts failed`; not a negation, `None of the
# checks failed.`)
EDGE_SENTENCE = re.compile(
    r"(?:[✗✕✘×❌✖] ?)?(?:(?![Ww]arning: |WARNING: )[\w.+-]{1,30}: )?"
    r"(?:[Ff]ailed to |[Cc]ould not |[Cc]ouldn't |[Uu]nable to |[Cc]annot |[Cc]an't "
    r"|(?!(?:No|None|Nothing|Never|Not) )"
    r"[A-Z][\w-]{0,30}(?: [\w-]{1,30}){0,3} failed(?:: | at [^\n]{0,120}? due to|[.!]?$))"
)

# A last line that reports the command failed: make, bash syntax errors, Windows cmd, and a
# process ended by a signal (`Segmentation fault (core dumped)`, kept `ambiguous`).
TERMINAL_LINE = re.compile(
    r"(?:make(?:\[[0-9]{1,3}\])?: \*\*\* "
    r"|[^\n]{1,200}: line [0-9]{1,7}: syntax error"
    r"|The system cannot find the (?:path|file) specified\."
    r"|The filename, directory name, or volume label syntax is incorrect\."
    r"|'[^'\n]{1,100}' is not recognized as an internal or external command"
    r"|Internal Server Error$|[^\n]{1,300}\(HTTP [45][0-9]{2}\)$"
    r"|(?:[\w ]{1,30} )?(?:execution )?aborted\.?$"
    r"|(?:Segmentation fault|Bus error|Illegal instruction|Aborted|Killed"
    r"|Floating point exception)(?: \(core dumped\))?$)"
)
EDGE_LINES = 3  # how many lines at the end the report and terminal patterns read

# Evidence words that carry over between tools, by kind (rules.py adds them to the tiers).
# (Go's net errors, Chromium's `net::ERR_...`, gRPC's UNAVAILABLE and DEADLINE_EXCEEDED, the
# Windows shell's path messages; words sharing `::ERR_` or `cannot find the ` are looked up
# through it: words.MARKERS.)
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("i/o timeout", "transient"),
    ("TLS handshake timeout", "transient"),
    ("::ERR_CONNECTION_RESET", "transient"),
    ("::ERR_EMPTY_RESPONSE", "transient"),
    ("::ERR_CONNECTION_TIMED_OUT", "transient"),
    ("UNAVAILABLE", "transient"),
    ("= Unavailable", "transient"),
    ("DEADLINE_EXCEEDED", "transient"),
    ("cannot find the path specified", "fixable"),
    ("cannot find the file specified", "fixable"),
    ("is not recognized as an internal or external command", "fixable"),
    ("ervice unavailable", "transient"),
    ("currently unavailable", "transient"),
    ("curl error 28", "transient"),
    ("SSL connection timeout", "transient"),
)
UNSURE_NETWORK = (
    "failed to connect to all addresses",
    "Cannot connect to host",
    "::ERR_NAME_NOT_RESOLVED",
    "::ERR_CONNECTION_REFUSED",
    "::ERR_INTERNET_DISCONNECTED",
)
# (and in title case: GitHub's v3 API and others, `API Rate Limit Exceeded for ...`)
# (round 12: AWS's throttling message, `ThrottlingException: Rate exceeded`; duckduckgo_search's
# `DuckDuckGoSearchException: Ratelimit` and `... 202 Ratelimit`, not the `X-Ratelimit-...`
# headers a response may list)
RATE_LIMIT = (
    *("ate limit", "ate-limit", "toomanyrequests", "ate limiting", "ate Limit"),
    *("Rate exceeded", ": Ratelimit", "202 Ratelimit"),
)
FIXABLE_WORDS = (
    " not found",
    "syntax error",
    "Syntax error",  # dash and other parsers' capitalised form
    "nknown tool",
    "invalid_type",
    "invalid_union",
    "invalid_enum_value",
    "unrecognized_keys",
)
UNRECOVERABLE_WORDS = (
    *("redential", "uthentication failed", "uthentication required"),
    *("AccessDenied", "Access Denied"),
)
# Package managers' and make's words, looked up only when their marker occurs
# (rules.py adds them to families.FIXABLE_FAMILIES).
FIXABLE_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ackage", ("installable set of packages", "no matching package found")),
    ("olv", ("version solving failed", "No solution found when resolving dependencies")),
    ("make", ("No rule to make target", "no makefile found")),
)
QUOTA = ("QUOTA_EXCEEDED", "Quota '")  # GCP: `Quota 'CPUS' exceeded. Limit: 8.0`
FAILURE_PHRASES = (
    "credit balance is too low",
    "Quota '",
    "No solution found when resolving dependencies",
    "You have reached your pull rate limit",
)

# A status named by a client's words: `Unexpected HTTP response 401`, `response code: 401`,
# cargo's `failed to get 200 response from `https://...`, got 504` (the URL may wrap a line).
STATUS_MORE = re.compile(
    r"esponse(?:(?: code)?:? | from [^\s]{1,300}\s{1,3}got )([45][0-9]{2})(?![0-9])"
)

# The kind from the words of an exception class's own name (when the class is not in
# words.EXCEPTION_KIND); a name with words of two kinds gives none.
CLASS_WORDS: tuple[tuple[str, str], ...] = (
    ("Auth", "unrecoverable"),
    ("Forbidden", "unrecoverable"),
    ("PermissionDenied", "unrecoverable"),
    ("AccessDenied", "unrecoverable"),
    ("Credential", "unrecoverable"),
    ("Quota", "unrecoverable"),
    ("RateLimit", "transient"),
    ("Ratelimit", "transient"),  # (duckduckgo_search's `RatelimitException`; round 12)
    ("TooManyRequests", "transient"),
    ("Throttl", "transient"),
    ("ReadTimeout", "transient"),
    ("ConnectTimeout", "transient"),
    ("SocketTimeout", "transient"),
    ("ConnectionReset", "transient"),
    ("ServiceUnavailable", "transient"),
    ("NotFound", "fixable"),
    ("Validation", "fixable"),
    ("Invalid", "fixable"),
    ("Syntax", "fixable"),
    ("Parse", "fixable"),
    ("Decode", "fixable"),
    ("Argument", "fixable"),
    ("Schema", "fixable"),
    ("Assertion", "fixable"),
    ("Interpreter", "fixable"),
    ("Attribute", "fixable"),
    ("Import", "fixable"),
)
# An exception class named in the middle of a line (`... due to: IndexError: list index`), else
# by its repr (Python's `KeyError('check_availability')`, `ValidationError(StatefulSet.spec)`).
CLASS_MARKS = ("Error: ", "Exception: ")
REPR_MARK = "Error("


def class_kind(name: str) -> str | None:
    """The kind the words of an exception class's name point to, or None."""
    kinds = {kind for word, kind in CLASS_WORDS if word in name}
    if "Response" in name:  # the service's answer was bad (`InvalidResponseException`), not
        kinds.discard("fixable")  # the call: its words name no argument (round 10)
    return kinds.pop() if len(kinds) == 1 else None


def classes_mid_line(text: str) -> list[str]:
    """Exception classes followed by `: ` anywhere in `text` (`due to: IndexError: ...`), in
    order, and when none but `Error` itself is, classes followed by `(` (`Error:
    KeyError('x')`); found by the literal marks and read backwards."""
    found: list[tuple[int, str]] = []
    for mark in (*CLASS_MARKS, REPR_MARK):
        if mark is REPR_MARK and any(name not in ("Error", "Exception") for _, name in found):
            break  # (`Error: ` named a class: no repr is read)
        start = text.find(mark)
        while start != -1 and len(found) < 4:
            end = start + len(mark.rstrip(": ("))  # the end of the class's name
            name = text[max(0, end - 62) : end].rsplit(None, 1)[-1].rsplit(">", 1)[-1]
            name = name.lstrip(":([<_")  # (after a tag: `<tool_use_error>InputValidationError`)
            if name[:1].isupper() and name.isidentifier():
                found.append((start, name))
            start = text.find(mark, start + 1)
    return [name for _, name in sorted(found)]
