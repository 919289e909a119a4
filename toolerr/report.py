"""The X-Tool-Errors header: what the layer saw and did, as one line of compact JSON.

`{"form":"c3","changed":true,"failures":[{"message":3,"kind":"fixable","rule":"generic"}]}`
where `message` indexes the internal message list. With the wide rules (or a request that
names its rule set) a `"rules"` key follows `"form"`, and wide failures carry `"evidence"`.
The same line goes to the server log.
"""

from __future__ import annotations

import json

from exactserve.toolerr.detect import Failure

HEADER = "X-Tool-Errors"


def header_value(
    form: str, changed: bool, failures: tuple[Failure, ...], rules: str | None = None
) -> str:
    """The header's value; ASCII only (evidence quotes tool text, escaped by json.dumps).
    `rules` None leaves the key out, as the paper-mode header always was."""
    report: dict = {"form": form}
    if rules is not None:
        report["rules"] = rules
    report["changed"] = changed
    report["failures"] = [_entry(f) for f in failures]
    return json.dumps(report, separators=(",", ":"))


def _entry(failure: Failure) -> dict:
    entry: dict = {"message": failure.message, "kind": failure.kind, "rule": failure.rule}
    if failure.evidence is not None:
        entry["evidence"] = failure.evidence
    return entry


def log_line(value: str) -> str:
    """The server log's line for a request: the header as it is sent."""
    return f"{HEADER}: {value}"
