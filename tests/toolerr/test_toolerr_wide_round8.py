# ruff: noqa: E501
"""Round 8 of the wide rules: test9 (tuned on after its one evaluation). First the structure
that says success (harness status lines wherever they sit, PowerShell records a later
statement ran past), then the general causes of test9's misses, each with corpus records,
the precedence the new shapes keep, and successes that must stay undetected. Expected kinds
are the corpus labels, given by the guide before the rules."""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id, rules_kind, wide_verdict

from exactserve.toolerr.wide import classify_wide, judge
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide.shapes import read_shape

RECORDS = records_by_id(TUNING_SPLITS)

# Successes whose text opens or ends with an error, decided by structure (formerly fixable).
SUCCESSES = [
    # Replit Agent's `Command executed successfully.` before a filtered tsc listing (exit 0)
    "t9-zip-file-manager-tsc-grep",
    # a PowerShell error record, then the later statements' output (`Set-Location` failed,
    # the python script ran; `Stop-Process` found nothing, git committed)
    "t9-parth-bisht-227-nmg-forge-1-final-setlocation",
    "t9-peateargrifin-shreyansh-nmg-forge01-stopprocess",
    # Antigravity's `The command completed successfully.` over a PowerShell record, a pytest
    # run, a bare version line
    "t9-exp-frontend-java-version",
    "t7-ai-asssistant-box-selection-pytest-pass",
    "t9-cthulhu-wars-fuser",
]

# (corpus id, wide rule, kind)
CASES = [
    # Antigravity's failure line keeps deciding (`The command failed with exit code: 1`)
    ("t9-eager-npm-name", "wide-exit", "ambiguous"),
    ("t9-kyb-platform-vercel127", "wide-exit", "fixable"),
    # a PowerShell record that ends the text still decides (nothing ran after it)
    ("t8-policy-1", "wide-line", "fixable"),
    ("t9-exp-frontend-mysql1045", "wide-exit", "unrecoverable"),
    # HTTP reason phrases as servers spell them (`429 Too many requests.`, `503 Service
    # Temporarily Unavailable`) and aiohttp's `400, message='Bad Request'` (formerly ambiguous)
    ("t9-openuserjs-429", "wide-sentence", "transient"),
    ("t9-narou-503", "wide-line", "transient"),
    ("t9-tavily-mcp-400-country", "is_error", "fixable"),
    # a class after a tag (`<tool_use_error>InputValidationError: ...`)
    ("t9-parth-bisht-227-nmg-forge-1-final-inputvalidation", "is_error", "fixable"),
    ("t9-guneettoppo-forge-01-write-nopath", "is_error", "fixable"),
    # CMake's located diagnostic; dependency solvers' `Unsatisfiable`
    ("t9-clp-cmake-findpackage", "wide-line", "fixable"),
    ("t9-coordgenlibs-cmake", "wide-line", "fixable"),
    ("t7-s2client-api-123", "wide-line", "fixable"),
    ("t9-quantlib.jl-pkg-unsat-sortingalgorithms", "wide-line", "fixable"),
    ("t9-sonums.jl-pkg-unsat-jenks", "wide-line", "fixable"),
    # Go's `context deadline exceeded`; git's `RPC failed; result=18`
    ("t9-ipfs-deploy-flyio-fly-builder-deadline", "wide-line", "transient"),
    ("t9-bosh-cloudfoundry-rpc18", "wide-line", "transient"),
    # credentials and plans: `Authentication error`, OAuth's `invalid_grant`, 402's reason
    # alone, a plan's `usage limit`
    ("t9-wrangler-action-wrangler-auth-10000", "wide-line", "unrecoverable"),
    ("t9-google-mcp-invalid-grant", "is_error", "unrecoverable"),
    ("t9-asana-payment", "wide-json", "unrecoverable"),
    ("t9-lambchat-tavily-quota", "is_error", "unrecoverable"),
    # getopt's refusal (`grep: invalid option -- '-'`) and Elixir's `** (CompileError)`
    # (formerly undetected)
    ("t9-cctrace-js-grep-opt", "wide-line", "fixable"),
    ("t9-riichi_advanced-compile-get-in", "wide-line", "fixable"),
    ("t8-veil-12", "wide-line", "fixable"),
    ("t8-elixilorem-5", "wide-line", "fixable"),
]


@pytest.mark.parametrize("record_id", SUCCESSES)
def test_structure_that_says_success_wins(record_id):
    assert RECORDS[record_id]["label"] == "success"
    assert not wide_verdict(RECORDS[record_id])


@pytest.mark.parametrize(("record_id", "rule", "kind"), CASES)
def test_general_causes_of_test9_misses(record_id, rule, kind):
    failures = wide_verdict(RECORDS[record_id])
    assert failures and (failures[0].rule, rules_kind(failures[0])) == (rule, kind), failures


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Traceback (most recent call last):\nValueError: x\n[exit code 0]", 0),
        ("error: x\n[Command succeeded with exit code 0]", 0),
        ("output\n[Command finished with exit code 2]", 2),
        ("[exit code 1]\nerror: x", 1),
        ("Command executed successfully.\nThe output was\nerror TS2339: x", 0),
        (
            "Created At: x\n\n\t\t\t\tThe command completed successfully.\n\t\t\t\tOutput:\nERROR: y",
            0,
        ),
        # an exit code before the status line decides (the first on the edge lines)
        ("Exit code 1\nThe command completed successfully.", 1),
    ],
)
def test_harness_status_lines_at_either_edge(text, code):
    assert read_shape(text).exit_code == code
    assert (judge(text, None) is None) == (code == 0)


@pytest.mark.parametrize(
    "text",
    [
        # a status sentence inside a line, or with more after it, is no harness's line
        "The command completed successfully but the tests failed.\nError: 2 failed",
        "Error: build failed\nlog: Command executed successfully. Exiting.",
    ],
)
def test_status_sentences_inside_lines_are_not_status_lines(text):
    assert read_shape(text).exit_code is None
    assert judge(text, None) is not None


def test_a_powershell_record_decides_unless_output_follows_it():
    record = (
        "Set-Location : Cannot find path 'C:\\x' because it does not exist.\n"
        "At line:1 char:1\n+ Set-Location x; python y.py\n+ ~~~~~~~~~~~~\n"
        "    + CategoryInfo          : ObjectNotFound: (C:\\x:String) [Set-Location], ItemNotFound\n"
        "    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.SetLocationCommand\n"
    )
    assert judge(record, None) is not None
    assert judge(record + " \n", None) is not None
    assert judge(record + "    ationCommand\n", None) is not None  # a wrapped id, indented
    assert not t.output_follows_record(record + "Loaded 456 rows\n")
    after = record + 'Loaded 456 rows\n{\n  "total": 12\n}\n'
    assert t.output_follows_record(after) and judge(after, None) is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("429 Too many requests.\nPlease retry later.", "transient"),
        ("server message: 503 Service Temporarily Unavailable", "transient"),
        ("Error calling tool 'x': 400, message='Bad Request', url='https://a.b/c'", "fixable"),
        ('{"error":"Payment Required"}', "unrecoverable"),
        ("Error: Failed to send email: invalid_grant", "unrecoverable"),
        ("fatal: Authentication failed for 'https://example.com/r.git/'", "unrecoverable"),
        ('Error: Get "http://h:2375/v1.41/info": context deadline exceeded', "transient"),
        ("error: RPC failed; result=18, HTTP code = 200\nfatal: early EOF", "transient"),
        ("CMake Error at CMakeLists.txt:3 (find_package):\n  Could not find", "fixable"),
        ("<tool_use_error>InputValidationError: Write failed</tool_use_error>", "fixable"),
        ("ls: unrecognized option '--frob'\nTry 'ls --help' for more information.", "fixable"),
        ("** (CompileError) lib/a.ex:24: undefined function f/1", "fixable"),
        # precedence: a denial still wins over the new words; a rate limit over a plan's words
        ("Permission to use Bash has been denied. Authentication required", "unrecoverable"),
        ("rate limit exceeded; Payment Required", "transient"),
    ],
)
def test_new_terms_give_kinds(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        # documents and listings that mention the new terms stay undetected
        "# Troubleshooting\n\nIf you see `** (CompileError)`, run mix deps.get.\n",
        "README.md:12: grep: invalid option -- 'x' is printed when ...",
        "Authentication\n==============\n\nThe client sends an invalid_grant error when ...",
        "The command completed successfully.\nOutput:\n5 passed",
    ],
)
def test_look_alikes_stay_successes(text):
    assert judge(text, None) is None
