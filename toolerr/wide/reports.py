"""Linters', SDKs' and package managers' failure shapes for the wide rule set (round 17,
collected on test19 after its one evaluation): pylint, esbuild, yamllint, lerna, zsh, the
toml crate, Llama Stack, AWS's and Google's SDKs, Dio, Scaleway's CLI, npm, pub, opam, SwiftPM
and PowerShell, in the same form as programs.py. Data only; lexicons.py adds each list to its
tier.

Each shape is a program's fixed format (a prefix, a summary line, an error code), not one
text's phrase.
"""

from __future__ import annotations

# A line that begins a failure report (lexicons.REPORT_LINE): pylint's header of a module's
# messages, which it prints only when there are some (`************* Module simplecaesar`);
# esbuild's error (`✘ [ERROR] Could not resolve "msw/browser"`); yamllint's finding of the
# error level under its file, its rule named last in parentheses (`  4:4       error    wrong
# indentation: expected 4 but found 3  (indentation)`; its warnings do not fail the run, and
# ESLint's stylish lines, `  2:10  error  'x' is defined but never used  no-unused-vars`,
# name theirs bare: a saved ESLint report read whole is no failure); lerna's error log
# (`lerna ERR! execute Error: Command failed: git am -3`); Python run on a module that is
# not installed (`/usr/bin/python3: No module named pytest`, `python: can't open file
# 'x.py'`); zsh's command not found inside a function or `eval` (`(eval):6: command not
# found: shopt`, `f:23: command not found: x`); the toml crate's parse error (`TOML parse
# error at line 2, column 1`: Cargo, uv, Gleam)
REPORT_BODY = (
    r"\*{13} Module [\w.-]{1,200}$"
    r"|✘ \[ERROR\] "
    r"|  [0-9]{1,6}:[0-9]{1,5} {1,12}error {4}[^\n]{1,500}  \([a-z-]{1,40}\)$"
    r"|lerna ERR! "
    r"|(?:[\w./\\:-]{0,200}[/\\])?python[0-9.]{0,5}(?:\.exe)?: "
    r"(?:No module named |can't open file )"
    r"|(?:zsh|\(eval\)|[\w.-]{1,100}):[0-9]{1,6}: command not found: "
    r"|TOML parse error at line [0-9]"
)
# Whole-text phrases of a failure: PowerShell's parameter binding (`Get-ChildItem: Parameter
# set cannot be resolved using the specified named parameters.`); OpenAI's and Groq's one
# request over a per-minute limit (`Request too large for model `llama-3.1-8b-instant` ...
# on tokens per minute (TPM)`, with no 429 beside it); AWS's SDKs naming the operation that
# failed (`An error occurred (throttlingException) when calling the InvokeModelWithResponse
# Stream operation:`, after a class name); the Gemini API's overload (`[503 ] The model is
# overloaded. Please try again later.`); Dio's exception for a status (`This exception was
# thrown because the response has a status code of 503`); Scaleway's SDK's standard errors
# (`Quota exceeded for resources 'human'`, `Resource out of stock 'ShoeSize60'`); Llama
# Stack's answer to a call of a tool it does not have (`Unknown tool `greet_everyone` was
# called.`; general.py's fixable `nknown tool` gives the kind).
FAILURE_PHRASES = (
    "Parameter set cannot be resolved using the specified named",
    "Request too large for model",
    ") when calling the ",
    "The model is overloaded",
    "the response has a status code of",
    "Quota exceeded for resources",
    "Resource out of stock",
    "Unknown tool `",
)

# Evidence words by kind (classify.py adds them to the tiers).
# Operating-system, registry and server conditions (tier 6): the open-file limit as strerror
# names it (`Too many open files`; programs.py has Go's lower case), npm's registry login
# (`ENEEDAUTH: This command requires you to be logged in`, over a package `not found` in the
# registry beside it), pub's repository refusing the credentials (`package repository
# requested authentication!`, `Insufficient permissions to the resource at`, the cause of its
# `version solving failed`); PostgreSQL's shutdown of the session (`FATAL: terminating
# connection due to administrator command`, a switchover or restart), the Kubernetes API
# server's timeout (`Error from server (Timeout):`), a model or stock of a cloud that a later
# call finds again.
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("Too many open files", "unrecoverable"),
    ("ENEEDAUTH", "unrecoverable"),
    ("package repository requested authentication", "unrecoverable"),
    ("Insufficient permissions to the resource at", "unrecoverable"),
    ("terminating connection due to administrator command", "transient"),
    ("Error from server (Timeout)", "transient"),
    ("Error from server (ServiceUnavailable)", "transient"),
    ("The model is overloaded", "transient"),
    ("Resource out of stock", "transient"),
    # a directory removed while it holds files (`remove d: directory not empty`, `rmdir: x:
    # Directory not empty`, `ENOTEMPTY`): the call's, which must empty it or remove it whole
    *(("directory not empty", "fixable"), ("Directory not empty", "fixable")),
    ("ENOTEMPTY", "fixable"),
)
# Claude Code's permission prompt that the user interrupted (`Permission prompt was
# aborted.`): a denial, as `has been denied` is.
DENIAL = ("Permission prompt was aborted",)
# AWS Bedrock's event-stream exceptions, named in lower camel case (`(throttlingException)`,
# `(accessDeniedException)`).
RATE_LIMIT = ("hrottlingException",)
# Status codes of MCP servers and GraphQL APIs spelled as Apollo's (`AUTH_REQUIRED: this tool
# requires an OAuth-authenticated MCP session`, `FORBIDDEN: caller does not have ...`).
UNRECOVERABLE_WORDS = ("accessDeniedException", "AUTH_REQUIRED", "FORBIDDEN: ")
FIXABLE_WORDS = (
    # rustc's and Clippy's last line under their diagnostics (`error: aborting due to 3
    # previous errors`): the source's errors
    "error: aborting due to ",
    # OpenCode's read tool past the file's end (`Offset 1460 is out of range for this file`)
    "is out of range for this file",
    # Python run on a module that is not installed (`python3: No module named pytest`);
    # esbuild's import it cannot resolve (`✘ [ERROR] Could not resolve "msw/browser"`, the
    # quote unlike curl's `Could not resolve host`)
    *("No module named ", 'Could not resolve "'),
    # package managers with no solution: opam's (`[ERROR] Package conflict!`, `No solution
    # found, exiting`), SwiftPM's (`error: Dependencies could not be resolved because`),
    # conda's older (`Error: Package missing in current osx-64 channels`)
    *("Package conflict!", "No solution found, exiting"),
    *("Dependencies could not be resolved because", "Package missing in current "),
    # Swift's argument parser (`Error: Missing expected argument '<count> ...'`); PowerShell's
    # parameter sets; Gleam's and others' names out of scope (`error: Unknown variable`)
    *("Missing expected argument '", "Parameter set cannot be resolved", "Unknown variable"),
    # OpenAI's and Groq's one request over a per-minute limit, with no rate limit word beside
    # it (classify.py reads it under one too)
    "Request too large for ",
    # Podman's and Docker's image that a container still uses (`image is in use by a
    # container`, `image is being used by stopped container`)
    *("image is in use by a container", "image is being used by "),
)
