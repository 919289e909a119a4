"""The labelled corpus as the wide-rule tests read it (tests/toolerr/corpus/GUIDE.md says
what each split is and when it became tuning data)."""

from __future__ import annotations

import json
from pathlib import Path

from exactserve.toolerr.detect import detect
from exactserve.toolerr.evaluate import conversation
from exactserve.toolerr.wide.classify import LEARNED

CORPUS = Path(__file__).parent / "corpus"
# Every split the wide rules are tuned on. `test` (a regression check) is not among them;
# test11 to test19 became tuning data after their one evaluation (the newest held-out
# split is collected apart and never read here).
TUNING_SPLITS = (
    "dev",
    "dev_extra",
    "dev_extra2",
    "dev_extra3",
    "dev_extra4",
    "test2",
    "test3",
    "test4",
    "test5",
    "test6",
    "test7",
    "test8",
    "test9",
    "test10",
    "test11",
    "test12",
    "test13",
    "test14",
    "test15",
    "test16",
    "test17",
    "test18",
    "test19",
)


# The newest held-out split: frozen by SHA-256 and evaluated once; no rule is tuned on it
# and the learned opinion is not trained on it until it joins the tuning data.
HELD_OUT: tuple[str, ...] = ()


def labelled_splits() -> list[str]:
    """Every split the learned opinion is trained on: all but HELD_OUT, sorted."""
    return sorted(path.stem for path in CORPUS.glob("*.jsonl") if path.stem not in HELD_OUT)


def read_split(split: str) -> list[dict]:
    """The records of tests/toolerr/corpus/{split}.jsonl, in file order."""
    lines = (CORPUS / f"{split}.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def records_by_id(splits: tuple[str, ...]) -> dict[str, dict]:
    return {r["id"]: r for split in splits for r in read_split(split)}


def wide_verdict(record: dict) -> list:
    """The wide rules' failures for a corpus record read as one tool message (its `is_error`
    flag as the source showed it; no User-Agent), after an assistant message calling the
    record's `tool` where it names one (as `toolerr --eval` reads it)."""
    messages = conversation(record["text"], record["is_error"], record.get("tool", ""))
    return detect(messages, "", "wide")


def rules_kind(verdict) -> str:
    """The kind the rules alone gave a wide verdict or failure: `ambiguous` where they found
    no evidence of a kind and the learned opinion named one (tests of rules test rules;
    test_toolerr_wide_opinion.py tests the opinion)."""
    return "ambiguous" if LEARNED in (verdict.evidence or "") else verdict.kind
