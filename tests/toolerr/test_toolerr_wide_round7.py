# ruff: noqa: E501
"""Round 7 of the wide rules: the general causes of test8's misses (tuned on after its one
evaluation), each with corpus records and their provenance, the precedence the new shapes
keep, and successes in real shapes of the tuning splits that must stay undetected. Expected
kinds are the corpus labels, given by the guide before the rules."""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id, wide_verdict

from exactserve.toolerr.wide import classify_wide, judge
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide.lines import final_diagnostic

RECORDS = records_by_id(TUNING_SPLITS)

# (corpus id, wide rule, kind)
CASES = [
    # MSBuild's diagnostic form, shared by the C#, F# and MSVC compilers and tsc: a dotnet
    # build's `Program.cs(14,10): error CS0246:` (issues), and one inside a Cursor terminal
    # result whose long path the terminal wrapped
    ("t8-roslyn-tools-337", "wide-line", "fixable"),
    ("t8-vscode-csharp-4864", "wide-line", "fixable"),
    ("t8-rimworld-piezoelectric-flooring-mod-2", "wide-line", "fixable"),
    # PowerShell's error record opening a Cursor terminal result (`At line:1 char:4`, `At
    # C:\...\ps-script-....ps1:7 char:11`), its `+ CategoryInfo` category deciding the kind
    ("t8-policy-1", "wide-line", "fixable"),  # InvalidArgument: `ls -la` in PowerShell
    ("t8-lmuffb-2", "wide-line", "fixable"),  # ObjectNotFound: a program not found
    ("t8-agentkyc-1", "wide-line", "fixable"),  # ParserError: a bash heredoc in PowerShell
    # a failed test run whose test names an HTTP status (`returns HTTP 403 when ...`): the
    # status is the code under test's, the failure a test's (formerly `unrecoverable`)
    ("t8-harmony-1", "wide-tests", "fixable"),
    # a Go test stream whose `FAIL` verdict follows a 404 its test expected (formerly
    # `ambiguous`)
    ("dx-tparse-outcome-test-02", "wide-tests", "fixable"),
    # MSBuild's form with a Windows path holding a blank and an SDK's code (`C:\Program
    # Files\dotnet\...targets(166,5): error NETSDK1045:`, an MCP terminal tool's result);
    # Ant's task before gcc's form (`[javac] X.java:29: error:`); a path holding `+` (zig)
    ("t8-codely-agent-ui-3", "wide-line", "fixable"),
    ("t8-jpf-core-35", "wide-line", "fixable"),
    ("t8-zls-797", "wide-line", "fixable"),
    # shells' syntax errors: a login shell's `-bash: syntax error near unexpected token`,
    # dash's `./run: 110: lib.sh: Syntax error: "(" unexpected`
    ("t8-gethttpsforfree-171", "wide-line", "fixable"),
    ("t8-shellscript-starter-2", "wide-line", "fixable"),
    # Node's error with its code (`TypeError [ERR_INVALID_ARG_TYPE]: ...`)
    ("t8-twitch-clone-4", "wide-line", "fixable"),
    # PostgreSQL's connection limit (`FATAL: sorry, too many clients already`) through
    # psycopg2 under SQLAlchemy's wrapped form, peewee and JDBC (two formerly ambiguous)
    ("t8-open-raadsinformatie-198", "wide-line", "transient"),
    ("t8-peewee-829", "wide-line", "transient"),
    ("t8-codesearch-250", "wide-line", "transient"),
    # a container registry's refusal (`denied: requested access to the resource is denied`)
    ("t8-docker-app-321", "wide-line", "unrecoverable"),
    ("t8-for-mac-1271", "wide-line", "unrecoverable"),
    # an HTTP client's status and its sentence opening the text; GitHub's title-case `API
    # Rate Limit Exceeded` under 403 is a rate limit
    ("t8-mcphub-120", "wide-sentence", "transient"),
    ("t8-app-gh-27", "wide-sentence", "transient"),
    # aider's report of its linter's findings (`# Fix any errors below, if possible.`)
    ("t8-pdf_ingestion-1", "wide-line", "fixable"),
    ("t8-luvatrix-1", "wide-line", "fixable"),
    # AWS's expired session credentials (`An error occurred (ExpiredToken) ...`; two formerly
    # ambiguous)
    ("t8-aws-iot-twinmaker-samples-147", "wide-line", "unrecoverable"),
    ("t8-vaulted-107", "wide-line", "unrecoverable"),
    ("t8-aws-orbit-workbench-707", "wide-line", "unrecoverable"),
]

# Successes of the tuning splits in the shapes the new rules read, undetected.
SUCCESSES = [
    # strace's records of failed system calls, the last of them ending the paste (formerly
    # detected as a command's final `No such file or directory`)
    "t8-123elf-6",
    "t8-bpftrace-207",
    "t8-bcc-4607",
    "t8-strace-macos-53",
    # a script's output, then a PowerShell error record of a later statement
    "t8-yazakiv2.0-1",
]


@pytest.mark.parametrize(("record_id", "rule", "kind"), CASES)
def test_general_causes_of_test8_misses(record_id, rule, kind):
    failures = wide_verdict(RECORDS[record_id])
    assert failures and (failures[0].rule, failures[0].kind) == (rule, kind), failures


@pytest.mark.parametrize("record_id", SUCCESSES)
def test_traces_and_later_records_stay_successes(record_id):
    assert RECORDS[record_id]["label"] == "success"
    assert not wide_verdict(RECORDS[record_id])


def test_a_powershell_record_decides_only_among_the_first_lines():
    record = (
        "At line:1 char:4\n+ ls -la\n+    ~~~\n"
        "    + CategoryInfo          : InvalidArgument: (:) [Get-ChildItem], ParameterBindingException\n"
    )
    opened = "Get-ChildItem : A parameter cannot be found that matches parameter name 'la'.\n"
    verdict = judge(opened + record, None)
    assert verdict is not None and (verdict.rule, verdict.kind) == ("wide-line", "fixable")
    assert judge("done\n" * 6 + opened + record, None) is None  # output came first
    # the position line alone, not the word `At` that opens a sentence
    assert judge("At least one file changed.\nAt 12:00 char:3 was read\n", None) is None
    assert t.PS_POSITION.match(r"At C:\Users\a\Temp\ps-script-1.ps1:100 char:11")
    assert not t.PS_POSITION.match("At line:1 char:4 and more")


def test_powershell_categories_give_kinds():
    assert (
        classify_wide("    + CategoryInfo          : ObjectNotFound: (x:String) [], X")[0]
        == "fixable"
    )
    assert classify_wide("    + CategoryInfo          : ParserError: (:) [], X")[0] == "fixable"
    # a category of another kind, or none, gives no kind by itself
    assert classify_wide("    + CategoryInfo          : NotSpecified: (:) [], X")[0] == "ambiguous"


def test_msbuild_diagnostics_are_located_errors():
    for line in (
        "Program.cs(14,10): error CS0246: The type or namespace name 'Hashtable' could not be found",
        r"C:\src\main.cpp(10): error C2065: 'x': undeclared identifier",
        "Library.fs(3,5): error FS0039: The value or constructor 'y' is not defined.",
    ):
        verdict = judge("Build started.\n" + line + "\n", None)
        assert verdict is not None and (verdict.rule, verdict.kind) == ("wide-line", "fixable")
    # a warning in the same form is not a failure, nor is the form's name in prose
    assert judge("Build started.\nProgram.cs(14,10): warning CS0168: unused\n", None) is None
    assert judge("Build started.\nSee Program.cs(14,10): error CS0246 in the log\n", None) is None


def test_strace_records_are_not_a_final_diagnostic():
    trace = 'open("/etc/ld.so.preload", O_RDONLY) = -1 ENOENT (No such file or directory)'
    assert final_diagnostic("execve(...) = 0\n" + trace) is None
    assert final_diagnostic("[pid  2925] " + trace) is None
    # a command's own diagnostic still ends its output
    ls = "ls: cannot access 'x': No such file or directory"
    assert final_diagnostic("a\n" + ls) == ls


def test_http_statuses_still_decide_outside_failed_test_runs():
    assert classify_wide("Error: request failed with status code 403")[0] == "unrecoverable"
    run = "FAIL src/api.test.ts\n  x answers status code 403 to guests\nTests: 1 failed, 1 total\n"
    assert classify_wide(run.split("\n")[1]) == ("unrecoverable", "HTTP 403")  # no verdict
    assert classify_wide(run) == ("fixable", "words 'failed tests'")


@pytest.mark.parametrize(
    "text",
    [
        "412 Readme.md\n",  # `wc -l`'s count of one file
        "450 Files changed\n",
        "allowed: 5\ndenied: 2\n",  # a count, not a registry's refusal
        "denied: false\n",
        "Notes\n# Fix any errors below, if possible.\n",  # aider's header, not opening the text
        "build ok\nProgram.cs(14,10): warning CS0168: unused\n",
        "(see foo.BarError) in the docs\n",
    ],
)
def test_new_shapes_leave_look_alikes_undetected(text):
    assert judge(text, None) is None


def test_status_lines_need_a_reason_or_a_sentence():
    for text, kind in (
        ("404 Not Found\n", "fixable"),
        ('403 Forbidden: {"error":["API Rate Limit Exceeded for x"]}', "transient"),
        ("503 Service Unavailable\n", "transient"),
        ("429 Request was rejected due to rate limiting.", "transient"),
    ):
        verdict = judge(text, None)
        assert verdict is not None and (verdict.rule, verdict.kind) == ("wide-sentence", kind)


def test_new_report_lines_detect_their_shapes():
    for text, kind in (
        ("-bash: syntax error near unexpected token `('\n", "fixable"),
        ('./run.sh: 110: lib.sh: Syntax error: "(" unexpected\n', "fixable"),
        (
            'TypeError [ERR_INVALID_ARG_TYPE]: The "path" argument must be of type string.\n',
            "fixable",
        ),
        ("(psycopg2.OperationalError) FATAL:  sorry, too many clients already\n", "transient"),
        ("denied: requested access to the resource is denied\n", "unrecoverable"),
    ):
        verdict = judge(text, None)
        assert verdict is not None and (verdict.rule, verdict.kind) == ("wide-line", kind), text
    # a text that opens like a document stays one unless aider's header opens it
    aider = "# Fix any errors below, if possible.\n\n## Running: flake8 a.py\n\na.py:3:1: F821 undefined name 'x'\n"
    verdict = judge(aider, None)
    assert verdict is not None and (verdict.rule, verdict.kind) == ("wide-line", "fixable")
    assert judge("# Fix the typo\nSome notes.\n", None) is None
