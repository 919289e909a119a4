"""What every round's tests of the wide rules check, on the rules alone (the learned model,
tested in test_toolerr_wide_opinion.py, is patched out): a round's successes stay
undetected, its documented false detections stay detected, and each general cause gives its
rule, kind and evidence."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from corpus_records import rules_kind, wide_verdict


@contextmanager
def without_learned_model() -> Iterator[None]:
    """The rules without the learned model: neither its detector nor its kind is asked."""
    with (
        mock.patch("exactserve.toolerr.wide.classify.learned_kind", lambda text: None),
        mock.patch("exactserve.toolerr.wide.rules.learned_failure", lambda text: None),
    ):
        yield


def check_undetected_success(record: dict) -> None:
    assert record["label"] == "success"
    assert not wide_verdict(record)


def check_documented_detection(record: dict) -> None:
    assert record["label"] == "success"
    assert wide_verdict(record)


def check_cause(record: dict, rule: str, kind: str, evidence: str) -> None:
    """The record is detected by `rule`, the rules give `kind`, and the evidence holds
    `evidence`."""
    failures = wide_verdict(record)
    assert failures, record["id"]
    failure = failures[0]
    assert (failure.rule, rules_kind(failure)) == (rule, kind), failure
    assert evidence in failure.evidence, failure
