# ruff: noqa: E501
"""The fourth round's general causes (toolerr/wide/agents.py, general.py, words.py, rules.py):
records of test4, test5 (tuned on after its one evaluation) and dev_extra4, each with the
rule and kind the wide rules give (test6 became tuning data after its one evaluation). Expected kinds are the corpus
labels, except where a note says the rules stay ambiguous."""

from __future__ import annotations

import pytest
from corpus_records import records_by_id

from exactserve.toolerr.detect import detect
from exactserve.toolerr.messages import Message

RECORDS = records_by_id(("test4", "test5", "dev_extra4"))

# (corpus id, wide rule, kind); None: not detected
CASES = [
    # a failure line behind a tag, a clock time, an indented `Uncaught`, a `------` banner
    (
        "t5-chorus-47",
        "wide-line",
        "unrecoverable",
    ),  # <web_fetch_system_message>Error fetching ...: 403 Forbidden
    ("t5-npm-install-retry-10", "wide-line", "transient"),  # 00:00:56.229 npm ERR! code ECONNRESET
    ("t5-google-cloud-node-769", "wide-line", "transient"),  # Uncaught Error: Bad Gateway
    (
        "t4-armbian-build-35",
        "wide-line",
        "transient",
    ),  # ------ Downloading ..., RPC failed; result=56
    ("t4-node-geoip-134", "wide-line", "transient"),  # npm Error 503 service Unavailable
    # shells, ssh, Go's HTTP client, git over HTTP
    ("t5-yposfgold-timeout-not-found", "wide-line", "fixable"),  # zsh: command not found: timeout
    ("dx4-atom-script-1723", "wide-line", "fixable"),  # bash: node: command not found
    # Permission denied (publickey,gssapi-keyex,...): ssh's refusal whatever methods it lists
    ("t5-fork-trackerwin-1837", "wide-line", "unrecoverable"),
    (
        "t5-kitematic-988",
        "wide-line",
        "transient",
    ),  # Get https://...: net/http: TLS handshake timeout
    ("t5-github-desktop-19847", "wide-line", "transient"),  # RPC failed; curl 18
    ("t5-sisoputnfrba-foro-4425", "wide-line", "transient"),  # RPC failed; curl 92
    # usage errors and an HTTP error page's text
    ("t5-minsky-unknown-option", "wide-line", "fixable"),  # error: unknown option '--task'
    ("dx4-commander-js-861", "wide-line", "fixable"),
    ("dx4-zonemaster-cli-160", "wide-sentence", "fixable"),  # Unknown option: show-module
    ("dx4-multipass-483", "wide-sentence", "fixable"),
    ("dx4-blog-os-762", "wide-sentence", "fixable"),  # unknown option '-n'
    (
        "dx4-yourls-2448",
        "wide-sentence",
        "transient",
    ),  # Service Unavailable ... a 503 Service Unavailable
    (
        "t5-help50-104",
        "wide-diagnostic",
        "fixable",
    ),  # make: *** No targets specified and no makefile found.
    (
        "t5-focuslab-pnpm-script",
        "wide-line",
        "fixable",
    ),  # \u2009ERR_PNPM_...  Command "type-check" not found
    ("t5-dialfa-build-compiled-then-type-error", "wide-line", "fixable"),  # Type error: ...
    ("t5-agente-bsc-rag-push-protection", "wide-line", "fixable"),  # repository rule violations
    # credentials and permissions in general words
    (
        "t5-cloud-builders-54",
        "wide-line",
        "unrecoverable",
    ),  # You do not have permission to access project
    ("t5-google-compute-snapshot-57", "wide-line", "unrecoverable"),  # Insufficient Permission
    (
        "t5-chef-chopsky-vercel-token",
        "wide-line",
        "unrecoverable",
    ),  # The specified token is not valid.
    (
        "dx4-samples-js-angular-71",
        "wide-line",
        "unrecoverable",
    ),  # npm ERR! code E401 / Unable to authenticate
    ("dx4-derby-site-66", "wide-line", "unrecoverable"),
    (
        "t4-html-reporter-43",
        "wide-diagnostic",
        "unrecoverable",
    ),  # gh: Resource not accessible by integration (HTTP 403)
    ("t4-waka-readme-242", "wide-line", "unrecoverable"),
    # a full disk explains the missing files after it
    ("t5-deepcamera-31", "wide-line", "unrecoverable"),
    # precision: a README's sample log lines, warnings before a `git status` listing
    ("t5-log-analyzer-readme", None, None),
    ("t5-agente-bsc-rag-git-status", None, None),
]


@pytest.mark.parametrize("record_id,rule,kind", CASES)
def test_general_causes_of_held_out_misses(record_id, rule, kind):
    record = RECORDS[record_id]
    message = Message(role="tool", content=record["text"], tool_call_id="c", is_error=False)
    failures = detect((message,), "", "wide")
    if rule is None:
        assert failures == [] or failures == (), record_id
        return
    assert failures, record_id
    assert (failures[0].rule, failures[0].kind) == (rule, kind), record_id


def test_dev_extra4_successes_are_not_detected():
    for record in RECORDS.values():
        if record["id"].startswith("dx4-") and record["label"] == "success":
            message = Message(role="tool", content=record["text"], tool_call_id="c")
            assert not detect((message,), "", "wide"), record["id"]
