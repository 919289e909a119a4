"""Build tools', shells' and command-line clients' failure shapes for the wide rule set (round
16, collected on test18 after its one evaluation): sbt, Meson, the Go module fetcher, OCaml,
Nushell, Miller, Subversion, pixi and uv, in the same form as toolchains.py. Data only;
lexicons.py adds each list to its tier.

Each shape is a program's fixed format (a prefix, an error code, a final line), not one
text's phrase.
"""

from __future__ import annotations

import re

# A line that begins a failure report (lexicons.REPORT_LINE): sbt's scalac diagnostic at a
# source location (`[error] /src/Test.scala:6: recursive value x needs type`); Meson's error
# (`meson.build:15:0: ERROR: Neither a subproject directory nor a x.wrap file was found.`); the Go
# module fetcher's status from a proxy or the checksum database (`verifying m@v/go.mod: ...:
# reading https://sum.golang.org/lookup/m@v: 410 Gone`, `go: m@v: reading https://goproxy.io/
# ...: 502 Bad Gateway`); pydantic's validation report (`1 validation error for Country`);
# Auto-GPT's command result (`Command execute_shell returned: Error: ...`); libcurl's TLS
# failure (`SSL certificate problem: unable to get local issuer certificate`); webpack's
# file watcher (`Watchpack Error (watcher): Error: EMFILE: too many open files, watch '/x'`);
# Subversion's numbered error (`svn: E155007: '/x' is not a working copy`); Miller's and
# gojq's own prefix, which they print only on errors (`mlr: CSV header/data length
# mismatch`, `gojq: invalid query: .foo & .bar`)
REPORT_BODY = (
    r"\[error\] (?:[A-Za-z]:)?[\w./\\-]{1,300}\.scala:[0-9]{1,7}: "
    r"|meson\.build:[0-9]{1,7}:[0-9]{1,5}: ERROR: "
    r"|(?:verifying [^\s]{1,300}|go(?: get)?): [^\n]{0,800}?: reading https?://[^\s]{1,800}"
    r": [45][0-9]{2} [A-Z]"
    r"|[0-9]{1,4} validation errors? for [A-Za-z_][\w.]{0,100}$"
    r"|Command [\w.-]{1,80} returned: Error: "
    r"|SSL certificate problem: "
    r"|Watchpack Error \([a-z]{1,20}\): "
    r"|svn: E[0-9]{6}: |mlr: |gojq: "
    # the Kubernetes Python client's ApiException (`HTTP response body: {"kind":"Status", ...
    # "code":403}`); PyMySQL's and mysqlclient's error tuple (`(1045, "Access denied for user
    # 'jh'@'localhost' (using password: YES)")`); rebar3's failed compile (`===> Compilation
    # failed: {error,...}`); s5cmd's failed operation (`ERROR "cp s3://b/f f": object already
    # exists`); sqlfluff's parsing report (`==== parsing violations ====`; not its `== [x.sql]
    # FAIL`, which `sqlfluff fix` prints too before the file's `FIXED`)
    r"|HTTP response body: \{|\([12][0-9]{3}, [\"'][A-Z]|===> Compilation failed"
    r"|ERROR \"[a-z]{1,12} [^\n\"]{1,300}\": "
    r"|==== parsing violations ====$"
)
# A last line that reports the command failed: sbt's end of a failed task (`[error] Total
# time: 103 s, completed ...`, `[error] (core/compile:compileIncremental) Compilation
# failed`, `[error] Type error in expression` after a build definition it could not load).
TERMINAL_BODY = (
    r" {0,8}\[error\] (?:Total time: |\([\w/:.-]{1,200}\) [A-Z]|Type error in expression)"
)

# Whole-text phrases of a failure: DigitalOcean's API refusing the token (`401 Unable to
# authenticate you`, as doctl, Vagrant's provider and controllers print it; the kind is the
# unrecoverable `Unable to authenticate` of agents.py).
# Older Meson's report, which its log's path follows (`Meson encountered an error in file
# meson.build, line 60, column 0:`); pyTelegramBotAPI's ApiException (`A request to the
# Telegram API was unsuccessful. The server returned HTTP 409 Conflict.`).
FAILURE_PHRASES = (
    "Unable to authenticate you",
    "Meson encountered an error in file",
    "A request to the Telegram API was unsuccessful",
)

# vegeta's text report of a load test (`Requests      [total, rate, throughput]  1200, ...`),
# whose `Error Set:` lists what the target answered: a measurement, not the call's failure
# (rules._detect reads it as a document).
VEGETA_REPORT = re.compile(r"Requests {1,12}\[total, rate")
# A miette diagnostic (pixi, uv, Nushell) opening the text (`  × unknown environment
# 'default'`): one blank after the cross, not jj's `×  ` of a conflicted change in its log
# graph; read last (rules._later_failure), where no other shape was found.
MIETTE_FIRST = "× "

# Evidence words by kind (classify.py adds them to the tiers).
# Google's canonical status (`ERROR: (gcloud.services.enable) PERMISSION_DENIED: Permission
# denied to enable service`, gRPC's `StatusCode.PERMISSION_DENIED`): the caller's identity
# lacks the permission (words.py's unrecoverable word), which decides a `Permission denied`
# beside it (classify._conditions).
PERMISSION_DENIED = "PERMISSION_DENIED"
# The process's limit of open files (`EMFILE: too many open files, watch`): the system's
# limits are the user's to raise, and the same command fails the same way until then.
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("EMFILE", "unrecoverable"),
    ("too many open files", "unrecoverable"),
)
FIXABLE_WORDS = (
    # OCaml's compiler (`Error: Unbound module Dtools`, `Error: Unbound value x`): a name the
    # source uses that its dependencies do not define
    "Error: Unbound ",
    # Nushell's parser (`Error: nu::parser::parse_mismatch`) and a column the value lacks
    # (`nu::shell::column_not_found`, `× Cannot find column`)
    *("nu::parser::", "nu::shell::column_not_found"),
    # zsh's syntax errors in the command it was given (`zsh:1: unmatched "`, `(eval):12: bad
    # math expression: operator expected at ...`)
    *(': unmatched "', ": unmatched '", "bad math expression"),
    # uv's lock file it cannot read (`error: Failed to parse `uv.lock``, with its `TOML parse
    # error at line 5537`): the workspace's file to regenerate
    *("Failed to parse `uv.lock`", "TOML parse error"),
    # pixi's environment that the manifest does not define (`× unknown environment 'drake'`)
    "unknown environment '",
    # MySQL's and MariaDB's foreign key (`ERROR 1452 (HY000): cannot add or update a child row`)
    "cannot add or update a child row",
    # Subversion run outside a working copy (`svn: E155007: '/x' is not a working copy`)
    "is not a working copy",
    # Meson's configuration (a dependency or program not found, a wrap file missing)
    *("meson.build:", "Meson encountered an error"),
    # git's refusal to drop a file whose index differs (`(use -f to force removal)`); Corepack's
    # project pinned to another package manager (`This project is configured to use yarn
    # because /x/package.json has a "packageManager" field`)
    *("use -f to force removal", '"packageManager" field'),
    # Miller's data it cannot read as told (`mlr: exiting due to data error`, `mlr: CSV
    # header/data length mismatch`); gojq's and jq's query (`gojq: invalid query: ...`)
    *("mlr: exiting due to data error", "header/data length mismatch", "invalid query: "),
    # pixi's solver finding no package of the name (`Cannot solve the request because of: No
    # candidates were found for ffmepg-python *.`); sqlfluff's SQL it cannot parse
    *("No candidates were found for", "Found unparsable section"),
    # s5cmd's `--no-clobber` over an existing destination (`ERROR "cp s3://b/f f": object
    # already exists`): the call's destination or flag to change
    "object already exists",
)
