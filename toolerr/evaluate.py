"""Measure a rule set on labelled tool results (`exactserve toolerr --eval`).

A corpus is JSON Lines, one tool result a line: `text` and `label` (transient, fixable,
unrecoverable, ambiguous or success) are required; `id`, `is_error` (the result carried
an error flag), `user_agent`, `client` and `tool` are optional. The paper rules pick agent
rules by User-Agent, so a record of a known agent's format without `user_agent` gets that
agent's usual one from `client`. `tool` is the name of the call the result answers (`Read`,
`run_shell_command`): the result is then judged after an assistant message making that
call, as in a conversation (the wide rules do not put a file reader's result to their
learned detector).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from exactserve.toolerr.detect import RULES, detect
from exactserve.toolerr.messages import Message, ToolCall

LABELS = ("transient", "fixable", "unrecoverable", "ambiguous", "success")
DEFINITE = ("transient", "fixable", "unrecoverable")
PREDICTIONS = ("transient", "fixable", "unrecoverable", "ambiguous", "none")

# A client's usual User-Agent, for records that do not carry one (paper agent rules).
CLIENT_USER_AGENTS = {
    "codex": "codex_cli_rs/0.42.0",
    "qwen-code": "QwenCode/0.0.14",
    "kilo": "Kilo-Code/4.95.0",
    "opencode": "opencode/0.15.3",
}


@dataclass(frozen=True)
class Record:
    id: str
    text: str
    label: str
    is_error: bool = False
    user_agent: str = ""
    tool: str = ""


@dataclass(frozen=True)
class Evaluation:
    """Counts of (label, prediction) pairs under one rule set; prediction `none` means not
    detected."""

    rules: str
    confusion: Counter

    def count(self, labels: Iterable[str], predictions: Iterable[str]) -> int:
        predictions = tuple(predictions)
        return sum(self.confusion[(lab, p)] for lab in labels for p in predictions)

    @property
    def num_definite(self) -> int:
        return self.count(DEFINITE, PREDICTIONS)

    @property
    def num_correct(self) -> int:
        return sum(self.confusion[(lab, lab)] for lab in DEFINITE)

    @property
    def num_wrong(self) -> int:
        return self.count(DEFINITE, DEFINITE) - self.num_correct


def read_records(lines: Iterable[str]) -> list[Record]:
    """Records from JSON Lines; raises ValueError naming the line of a bad record."""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: not JSON: {exc}") from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            raise ValueError(f"line {number}: a record needs a string `text`")
        if raw.get("label") not in LABELS:
            raise ValueError(
                f"line {number}: label must be one of {', '.join(LABELS)}, "
                f"got {json.dumps(raw.get('label'))}"
            )
        user_agent = raw.get("user_agent") or CLIENT_USER_AGENTS.get(raw.get("client"), "")
        tool = raw.get("tool") or ""
        if not isinstance(tool, str):
            raise ValueError(f"line {number}: `tool` must be a string, got {json.dumps(tool)}")
        records.append(
            Record(
                str(raw.get("id", number)),
                raw["text"],
                raw["label"],
                raw.get("is_error") is True,
                user_agent,
                tool,
            )
        )
    return records


def conversation(text: str, is_error: bool, tool: str = "") -> tuple[Message, ...]:
    """A tool result as the rules read it in a request: one tool message, after an assistant
    message calling `tool` where a name is given."""
    message = Message(role="tool", content=text, tool_call_id="c", is_error=is_error)
    if not tool:
        return (message,)
    call = ToolCall(id="c", name=tool, arguments="{}", origin=0)
    return (Message(role="assistant", content="", tool_calls=(call,)), message)


def predict(record: Record, rules: str) -> str:
    """The kind the rule set gives the record, or `none` when it is not detected."""
    messages = conversation(record.text, record.is_error, record.tool)
    failures = detect(messages, record.user_agent, rules)  # (only a tool message fails)
    return failures[0].kind if failures else "none"


def evaluate(records: Iterable[Record], rules: str) -> Evaluation:
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(RULES)}, got {rules!r}")
    return Evaluation(rules, Counter((r.label, predict(r, rules)) for r in records))


def format_report(evaluation: Evaluation) -> str:
    """The table and the confusion matrix, as printed by `exactserve toolerr --eval`."""
    e = evaluation
    definite = e.num_definite
    none = e.count(DEFINITE, ("ambiguous", "none"))
    ambiguous = e.count(("ambiguous",), PREDICTIONS)
    successes = e.count(("success",), PREDICTIONS)
    false_detected = e.count(("success",), PREDICTIONS[:4])
    false_guided = e.count(("success",), DEFINITE)
    lines = [
        f"rules: {e.rules}",
        f"definite failures (transient, fixable, unrecoverable): {definite}",
        f"  correct guidance  {e.num_correct:5d}  {_pct(e.num_correct, definite)}",
        f"  wrong guidance    {e.num_wrong:5d}  {_pct(e.num_wrong, definite)}",
        f"  no guidance       {none:5d}  {_pct(none, definite)}",
        f"ambiguous failures: {ambiguous}",
        f"  detected          {e.count(('ambiguous',), PREDICTIONS[:4]):5d}"
        f"  {_pct(e.count(('ambiguous',), PREDICTIONS[:4]), ambiguous)}",
        f"  guided anyway     {e.count(('ambiguous',), DEFINITE):5d}"
        f"  {_pct(e.count(('ambiguous',), DEFINITE), ambiguous)}",
        f"successes: {successes}",
        f"  falsely detected  {false_detected:5d}  {_pct(false_detected, successes)}",
        f"  falsely guided    {false_guided:5d}  {_pct(false_guided, successes)}",
        "",
        "confusion (rows: label, columns: prediction)",
        f"{'':>14}" + "".join(f"{p:>14}" for p in PREDICTIONS),
    ]
    for label in LABELS:
        row = "".join(f"{e.confusion[(label, p)]:>14d}" for p in PREDICTIONS)
        lines.append(f"{label:>14}{row}")
    return "\n".join(lines)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"
