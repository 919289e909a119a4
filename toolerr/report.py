"""The X-Tool-Errors header: what the layer saw and did, as one line of compact JSON.

`{"form":"c3","changed":true,"failures":[{"message":3,"kind":"fixable","rule":"generic"}]}`
where `message` indexes the internal message list. The same line goes to the server log.
"""

from __future__ import annotations

import json

from exactserve.toolerr.detect import Failure

HEADER = "X-Tool-Errors"


def header_value(form: str, changed: bool, failures: tuple[Failure, ...]) -> str:
    """The header's value; ASCII only, since every field is."""
    report = {
        "form": form,
        "changed": changed,
        "failures": [{"message": f.message, "kind": f.kind, "rule": f.rule} for f in failures],
    }
    return json.dumps(report, separators=(",", ":"))


def log_line(value: str) -> str:
    """The server log's line for a request: the header as it is sent."""
    return f"{HEADER}: {value}"
