"""Developer toolchains' failure shapes for the wide rule set: compilers' diagnostics at a
source location, database clients, build configurators, downloaders and package managers, in
the same form as toolerr.wide.words and agents.py. Data only; rules.py and classify.py add
each list to its tier.

Collected on test7 (tuned on after its one evaluation) by general cause: each shape is a
tool's fixed format (a location line, an error code, a final line), not one text's phrase.
"""

from __future__ import annotations

import re

from exactserve.toolerr.wide.scan import LineStart

# A line that begins a failure report (rules.REPORT_LINE, after every other shape): the MySQL
# and MariaDB client's `ERROR 1045 (28000): Access denied ...` (an error number and its
# SQLSTATE), CMake's `CMake Error at file:line (command):` and `CMake Error: ...`, a PHP
# exception class behind its namespace (`GuzzleHttp\Exception\ConnectException: cURL error
# 28: ...`).
REPORT_BODY = (
    r"ERROR [0-9]{4} \([0-9A-Z]{5}\)(?: at line [0-9]{1,7})?: |CMake Error(?: at |: )"
    r"|(?:[A-Za-z_][A-Za-z0-9_]{0,40}\\){1,8}[A-Z][A-Za-z0-9_]{0,60}(?:Exception|Error): "
    # round 13: R's error (`Error in f(x) : message`); VS Code's debugger stopped on an
    # exception (`Exception has occurred: KeyError`, in Chinese `发生异常: RuntimeError`);
    # Python's OSError printed alone (`[Errno 2] No such file or directory: '...'`); Python
    # logging's level and logger (alembic's `ERROR [alembic.util.messaging] Multiple head
    # revisions ...`); an uncaught rejection or an error class without a suffix (Deno's
    # `Uncaught (in promise) PermissionDenied: Requires net access ...`, browsers' `Uncaught (in
    # promise) Error: ...`)
    r"|Error in [^\n]{1,200}? :(?: |$)"
    r"|(?:Exception has occurred|发生异常): "
    r"(?:[A-Za-z_][A-Za-z0-9_]{0,40}\.){0,6}[A-Z][A-Za-z0-9_]{0,60}$"
    r"|\[Errno [0-9]{1,4}\] (?=[A-Z])|(?:ERROR|CRITICAL) \[[\w.-]{1,80}\] "
    r"| {0,4}Uncaught (?:\(in promise\) )?[A-Z][A-Za-z0-9_.]{0,80}: "
    # create-next-app's refusal of a directory that holds other files (`The directory x
    # contains files that could conflict:`); cabal's solver giving up (`After searching the
    # rest of the dependency tree exhaustively, these were the goals ...`, among the last lines)
    r"|The directory [^\n]{1,200}? contains files that could conflict:"
    r"|After searching the rest of the dependency tree exhaustively"
    # round 15: alembic's command-line failure, indented by its message wrapper (`  FAILED:
    # Multiple heads are present; please specify the head revision on`)
    r"|  FAILED: "
    # round 15: Mercurial's (and Sapling's) prefix of every error (`abort: push creates new
    # remote head 1e108cc5548c`, `abort: no repository found in '/src'`): a lower-case word
    # and more, not a YAML key's or a JavaScript object's value (`abort: false`)
    r"|abort: [a-z][\w-]{0,30} [^\s]"
)
# A last line that reports the command failed: wget's `2022-07-11 13:49:10 ERROR 404: Not
# Found.`, Yarn 2+'s `➤ YN0000: · Failed with errors in 0s 670ms`, Composer's script that
# failed (round 12: `Script @php artisan package:discover handling the post-autoload-dump event
# returned with error code 1`).
TERMINAL_BODY = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} ERROR [0-9]{3}: "
    r"|➤ YN0000: (?:[·└] )?Failed with errors in "
    r"|Script [^\n]{1,300}? handling the [\w-]{1,40} event returned with error code [0-9]{1,4}$"
    # tar's own end after an error it cannot go past (round 13: `gzip: stdin: not in gzip
    # format`, `tar: Unexpected EOF in archive`, then this line)
    r"|tar: Error is not recoverable: exiting now$"
)
# A compiler's diagnostic at a source location among the first lines (tried only when a mark
# occurs, as words.COMPILER_LINE): gcc, clang, swiftc and most compilers' `path:L:C: error:`
# (the path without blanks, a Windows drive allowed; Ant's task before it, `[javac] `), and
# kotlinc's `e: path.kt: (L, C): ` and `e: file:///path.kt:L:C `; golangci-lint's findings;
# MSBuild's form, which the C#, F#, Visual Basic and MSVC compilers and tsc share
# (`Program.cs(14,10): error CS0246: `; a blank allowed in a path after a drive).
LOCATION_LINE = (
    r"(?: {0,8}\[[a-z]{1,20}\] )?(?:[A-Za-z]:)?[\w./\\+-]{1,200}\.[A-Za-z0-9+]{1,10}"
    r":[0-9]{1,7}(?::[0-9]{1,5})?: (?:fatal )?error: "
    r"|(?:[A-Za-z]:\\[\w .\\+-]{1,200}|[\w./\\+-]{1,200})\.[A-Za-z0-9+]{1,10}"
    r"\([0-9]{1,7}(?:,[0-9]{1,5}){0,3}\): error [A-Z]{1,8}[0-9]{1,6}: "
    r"|e: [^\n]{1,300}?\.kts?(?:: \([0-9]{1,7}, [0-9]{1,5}\): |:[0-9]{1,7}:[0-9]{1,5} )"
    # golangci-lint's finding, its linter named last (`a.go:31:10: Error return value of
    # `w.Write` is not checked (errcheck)`; tried only when `.go:` occurs)
    r"|[\w./-]{1,200}\.go:[0-9]{1,7}:[0-9]{1,5}: [^\n]{1,300} \([a-z][a-z0-9_-]{1,30}\)$"
)
LOCATION_MARKS = (": error: ", ": fatal error: ", ".kt", ".go:", "): error ")

# An HTTP status named by a tool's words (classify.STATUS_PATTERNS): a JSON error body's
# `"code": 402` (cargo's `failed to get 200 response from `...`, got 504` is general.py's).
STATUS_CODE = (re.compile(r"\"code\" ?: ?\"?([45][0-9]{2})(?![0-9])"),)

# Evidence words by kind (classify.py adds them to the tiers).
DOCKER_API = "failed to connect to the docker API at"
CONDITIONS: tuple[tuple[str, str], ...] = (
    # apt and dpkg: the lock another apt-get or unattended-upgrades holds is released when it
    # ends (not `are you root?`, which says the call lacks the rights)
    ("It is held by process", "transient"),
    ("is another process using it?", "transient"),
    # PostgreSQL's connection limit: the server is full until other sessions end
    ("too many clients already", "transient"),
    # Windows cmd: a path the call spelt wrongly (`The filename, directory name, or volume
    # label syntax is incorrect.`; its comma is a rarer probe than its letters)
    ("filename, directory name, or volume label", "fixable"),
    # ssh refused every key or password it tried, whatever methods it lists
    ("Permission denied (password", "unrecoverable"),
    ("Permission denied (keyboard-interactive", "unrecoverable"),
    ("Permission denied (gssapi", "unrecoverable"),
    ("Permission denied (hostbased", "unrecoverable"),
    # round 12: libcurl's text of its error 28, as cargo and git print it (`warning: spurious
    # network error (2 tries remaining): [28] Timeout was reached`), the request library's
    # socket timeout (`ESOCKETTIMEDOUT`, yarn 1 and npm), and yarn's own notice while it
    # retries (`There appears to be trouble with your network connection. Retrying...`)
    ("Timeout was reached", "transient"),
    ("ESOCKETTIMEDOUT", "transient"),
    ("trouble with your network connection", "transient"),
    # SQLite's table or column the statement named that the database lacks (`sqlite3.
    # OperationalError: no such table: history`): the call's SQL or the workspace's schema,
    # as a missing file is; under a JSON-RPC internal error, the server's own (classify.py)
    ("no such table:", "fixable"),
    ("no such column:", "fixable"),
    # round 13: Zig's error name for a missing file (`error.FileNotFound`); bash's `command not
    # found` in a Chinese locale (`/bin/bash:行1: mvn：未找到命令`); libuv's and Go's lower-case
    # EPERM (`Error: listen EPERM: operation not permitted 0.0.0.0:4173`: a sandbox's refusal);
    # apt's index caught while the mirror syncs (`W: Failed to fetch ... Hash Sum mismatch`);
    # RubyGems' download that timed out (`Gem::RemoteFetcher::UnknownHostError: timed out
    # (https://rubygems.org/gems/x.gem)`: its name says host, its message a timeout)
    ("error.FileNotFound", "fixable"),
    ("未找到命令", "fixable"),
    ("operation not permitted", "unrecoverable"),
    ("Hash Sum mismatch", "transient"),
    ("UnknownHostError: timed out", "transient"),
    # round 15: Docker's CLI (27 and later) with no engine to talk to (`failed to connect to the
    # docker API at npipe:////./pipe/dockerDesktopLinuxEngine; check if the path is correct and
    # if the daemon is running: open //./pipe/...: The system cannot find the file specified.`):
    # the engine is the user's to start; the missing pipe or socket it names is the engine's,
    # not a path of the call (classify.py lets it outrank the missing file)
    (DOCKER_API, "unrecoverable"),
)
# (round 12: GKE's `insufficient regional quota to satisfy request: resource "CPUS"`)
QUOTA = ("Quota exceeded", "insufficient regional quota")
UNRECOVERABLE_WORDS = (
    "Access denied for user",  # MySQL and MariaDB: wrong credentials
    # round 12: a TLS certificate the client could not verify (Python's ssl `[SSL:
    # CERTIFICATE_VERIFY_FAILED] certificate verify failed`, libcurl's `SSL certificate problem:
    # unable to get local issuer certificate`, OpenSSL 3's `self-signed certificate in
    # certificate chain` as Node prints it, npm's `SELF_SIGNED_CERT_IN_CHAIN`, Go's `x509:
    # certificate signed by unknown authority`): the trust store or the proxy between is the
    # user's to fix; neither a retry nor other arguments pass it. (Spelt with their rarer
    # characters where the tools' texts allow: words.RARITY, probes.py.)
    *("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSL certificate problem"),
    *("self-signed certificate", "SELF_SIGNED_CERT"),
    "x509: certificate signed by unknown authority",
    # Docker's engine that is not running or not reachable (`Cannot connect to the Docker
    # daemon at unix:///var/run/docker.sock. Is the docker daemon running?`), Docker Desktop's
    # command missing from a WSL distro until the user enables the integration (`The command
    # 'docker' could not be found in this WSL 2 distro.`), a GPU the daemon has no driver
    # for (`could not select device driver "" with capabilities: [[gpu]]`)
    *("Cannot connect to the Docker daemon", "could not be found in this WSL"),
    "could not select device driver",
    # RubyGems' install into a system Ruby (`You don't have write permissions for the
    # /Library/Ruby/Gems/2.6.0 directory.`)
    "You don't have write permissions",
    # round 15: Kubernetes' RBAC refusal of the caller's account (`Error: configmaps is
    # forbidden: User "system:serviceaccount:kube-system:default" cannot list configmaps in
    # the namespace "kube-system"`, as helm and kubectl print it without the `(Forbidden)` of
    # `Error from server`), and Redis refusing writes while it cannot save its snapshot
    # (`MISCONF Redis is configured to save RDB snapshots, but it is currently not able to
    # persist on disk`): a cluster admin's or the server operator's to change
    *('is forbidden: User "', "MISCONF Redis is configured to save"),
)
FIXABLE_WORDS = (
    *("Cannot find module '", "Cannot find package '"),  # Node's module resolution
    # round 14: PowerShell's execution policy (`x.ps1 cannot be loaded because running scripts
    # is disabled on this system`, `UnauthorizedAccess`): the caller may pass `-ExecutionPolicy
    # Bypass` or set it for the user, or may not change it; the corpus labels it both ways, so
    # beside the `Unauthorized` of its error id the two disagree (ambiguous)
    "running scripts is disabled on this",  # (PowerShell wraps its lines)
    # round 14: MySQL's and MariaDB's syntax error (`ERROR 1064 (42000) at line 39: You have an
    # error in your SQL syntax`), git's missing identity for a commit (`Please tell me who you
    # are.`) and unknown revision (`fatal: bad object x`), a port another process holds
    # (`[Errno 98] Address already in use`): the statement, the configuration, the revision
    # or the port is the call's to change
    *("error in your SQL syntax", "Please tell me who you are", "fatal: bad object "),
    "Address already in use",
    "Unresolved reference",  # kotlinc, Swift
    "): error ",  # MSBuild's diagnostic form (C#, F#, MSVC, tsc)
    # git's conflicts of a merge, rebase or cherry-pick (`CONFLICT (content): Merge conflict
    # in x`, `CONFLICT (modify/delete): ...`): files in the workspace to resolve
    "CONFLICT (",
    # a file the call named that is not there (`Could not find file x in the codebase.`), and
    # a test's assertion that timed out (Playwright's `Timed out 5000ms waiting for
    # expect(locator).toBeVisible()`): a failed test, not a passing fault
    *("Could not find file ", "waiting for expect("),
    # round 12: Helm's release name taken (`Error: cannot re-use a name that is still in use`),
    # `git apply`'s and `git am`'s patch that does not fit the files (`error: x.c: patch does not
    # apply`), Redis's command for another type of key (`WRONGTYPE Operation against a key
    # holding the wrong kind of value`)
    *("cannot re-use a name that is still in use", "patch does not apply"),
    "Operation against a key holding the wrong kind of value",
    # round 13: what the call or the workspace must change, in toolchains' own words: an option
    # or argument a program refused (`Invalid argument: -la`, EINVAL's `Invalid argument
    # (22)`); an interactive program run without a terminal (`Error: stdin is not a
    # terminal`); cabal's solver (`After searching the rest of the dependency tree
    # exhaustively, ...`) and its failed test suite (`cabal: Tests failed for test:x`); Nix's
    # pinned hash that no longer fits its source (`error: hash mismatch in fixed-output
    # derivation`); PyTorch's tensors of shapes that do not fit (`RuntimeError: mat1 and mat2
    # shapes cannot be multiplied (2708x7 and 256x256)`); Spark SQL's column that the input lacks
    # (`AnalysisException: cannot resolve 'x' given input columns: [...]`); SQLite's unique
    # constraint (`UNIQUE constraint failed: user.email`); a server configuration's directive
    # it does not know (Caddy's `unrecognized directive: x`);
    # dnf's package that no repository has (`No match for argument: x`, `Error: no package
    # matched: x`); create-next-app's directory that holds other files (`The directory x
    # contains files that could conflict: ... Either try using a new directory name, or remove
    # the files listed above.`); alembic's `head` when the migrations have
    # branched (`Multiple head revisions are present for given argument 'head'; please specify
    # a specific target revision`)
    *("Invalid argument", "is not a terminal"),
    *("After searching the rest of the dependency tree exhaustively", "Tests failed for test:"),
    *("hash mismatch in fixed-output derivation", "mat1 and mat2 shapes cannot be multiplied"),
    *("given input columns: [", "UNIQUE constraint failed"),
    "unrecognized directive",
    *(
        "No match for argument",
        "Error: no package matched",
        "Either try using a new directory name",
    ),
    "Multiple head revisions are present",
    # round 15: alembic's other refusal of branched migrations (`FAILED: Multiple heads are
    # present; please specify the head revision on which the new revision should be based`);
    # pnpm's unmet peer dependencies (`ERR_PNPM_PEER_DEP_ISSUES  Unmet peer dependencies`);
    # bash's unbalanced quote (`eval: line 1: unexpected EOF while looking for matching `"'`);
    # the placeholder package that `npx tsc` runs where TypeScript is not installed (`This is
    # not the tsc command you are looking for`); Gradle's dependency that no declared
    # repository has (`> Could not find com.android.tools.build:gradle:3.0.1. Searched in the
    # following locations:`, `Could not find any version that matches x:+`): the command, the
    # workspace's dependencies or its build script change
    *("Multiple heads are present", "ERR_PNPM_PEER_DEP_ISSUES"),
    *("unexpected EOF while looking for matching", "This is not the tsc command you are"),
    *("Searched in the following locations:", "Could not find any version that matches"),
    # round 15: a test runner's own limit on one test or hook (Jest's `Exceeded timeout of
    # 5000 ms for a hook.`, vitest's `Error: Hook timed out in 10000ms.` / `Test timed out in
    # 5000ms.`, each naming the option that raises it): the test's code or configuration
    *("Exceeded timeout of ", "Hook timed out in ", "Test timed out in "),
    # round 15: Mercurial's push that would add a head the remote lacks (`abort: push creates
    # new remote head x` / `(pull and merge or see 'hg help push' ...)`: git's `(fetch first)`)
    "push creates new remote head",
)
# Round 13: a text that only a failed run prints, wherever it stands (rules.py's phrases): apt's
# and dpkg's lock (`Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It
# is held by process 351825`); round 15: Poetry's and Dart pub's solver giving up (`So,
# because x depends on y (0.5.32), version solving failed.`), and Jest's limit on a test or
# hook (`Exceeded timeout of 5000 ms for a hook.`), each a last line with no report prefix
FAILURE_PHRASES = ("Could not get lock ", "version solving failed", "Exceeded timeout of ")
# A record of strace (and of the tools that print its format): a system call, its arguments
# and its failed result (`[pid 2925] open("/etc/x", O_RDONLY) = -1 ENOENT (No such file or
# directory)`). A trace lists calls that failed on the way, and the traced program goes on.
STRACE_RECORD = re.compile(
    r"(?:\[pid +[0-9]{1,7}\] )?[a-z_0-9]{1,30}\([^\n]{0,2000}\) += -1 E[A-Z0-9]{2,20} \("
)
# PowerShell's error record: the cmdlet's message, then the position of the failing
# statement (`At line:1 char:4`, `At C:\...\script.ps1:7 char:11`), the statement under `+ `
# and the record's `+ CategoryInfo` lines. When the position is among the first lines the
# command failed as it began (output before it, then a record, is a later statement's).
PS_RECORD_LINES = 4
PS_POSITION = re.compile(
    r"At (?:line:[0-9]{1,7}|[^\n]{1,300}?\.ps1:[0-9]{1,7}) char:[0-9]{1,5}\s*$"
)
# A record's error is non-terminating: the statements after it run, and the command's status
# is the last one's. Output lines after the last record's `FullyQualifiedErrorId` line (not
# indented: not a wrapped part of the record) say the command went on past the error.
PS_RECORD_END = "FullyQualifiedErrorId"
PS_OUTPUT_AFTER = 2


# PowerShell wraps a native program's first line on stderr in a `NativeCommandError` record
# (`cargo :     Checking tokio v1.52.3`, then `At line:1 char:1`): stderr is where build tools
# write their progress, so a wrapped line with no failure word is not an error, and the
# program's output after the record (indented or not; two lines, or one with no failure word)
# says it went on.
PS_NATIVE = ": NativeCommandError"
PS_FAILURE_WORDS = re.compile(r"rror|RROR|ail|AIL|atal|xception|enied|annot|not ")


def output_follows_record(text: str) -> bool:
    """Whether at least PS_OUTPUT_AFTER unindented lines follow the last error record (any
    lines, after a native program's stderr line that names no failure)."""
    end = text.rfind(PS_RECORD_END)
    if end < 0:
        return False
    after = text[end:].split("\n", 1 + 2 * PS_OUTPUT_AFTER)[1:]
    if text.startswith(PS_NATIVE, end + len(PS_RECORD_END) + 1, end + 100):
        wrapped = text[: text.find("\n")]  # the program's stderr line, after `name : `
        if end == text.find(PS_RECORD_END) and not PS_FAILURE_WORDS.search(wrapped):
            said = [line for line in after if line.strip()]
            if len(said) >= PS_OUTPUT_AFTER:
                return True
            # one line of output that names no failure either (round 12: cargo's `Finished
            # `dev` profile ...` after its `Compiling` line was wrapped)
            return len(said) == 1 and not PS_FAILURE_WORDS.search(said[0])
    said = [line for line in after if line.strip() and not line[0].isspace()]
    return len(said) >= PS_OUTPUT_AFTER


# Build tools' words, looked up only when their marker occurs (classify.py adds them to
# families.FIXABLE_FAMILIES): Gradle's (Maven's are under `[ERROR]` there).
FIXABLE_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What went wrong", ("Compilation error", "There were failing tests")),
    # (round 13: Android Studio's form of the same failure, `Error:Execution failed for task
    # ':app:compileDebugKotlin'.` and `> Compilation error. See log for more details`)
    ("Execution failed for task '", ("Compilation error", "There were failing tests")),
    # PowerShell's record categories (`+ CategoryInfo : ObjectNotFound: (...)`) of a call to
    # change: a command or path not found, a bad argument or parameter, a statement that does
    # not parse
    ("CategoryInfo", (": ObjectNotFound: (", ": InvalidArgument: (", ": ParserError: (")),
)

# A finding at a source location among the first lines of a failed command's output (the
# first FINDING_HEAD characters; classify.py, the last tier's fixable evidence): a linter's
# rule code after the location (flake8, ruff, pycodestyle: `a.py:5:67: W291 trailing
# whitespace`; pylint's with a colon, `a.py:5:0: C0103: Constant name ...`, round 17), and
# Go's `file.go:64: ` (go vet, go build).
FINDING_HEAD = 400
LINT_FINDING = re.compile(r":[0-9]{1,7}:[0-9]{1,5}: [A-Z]{1,3}[0-9]{3,4}:? ")
GO_LOCATION = LineStart(r"[ \t]{0,8}[\w./-]{1,200}\.go:[0-9]{1,7}(?::[0-9]{1,5})?: ")
