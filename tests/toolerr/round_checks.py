"""What every round's tests of the wide rules check: a round's successes stay undetected, its
documented false detections stay detected, each general cause gives its rule, the rules'
kind (corpus_records.rules_kind) and evidence, and the new patterns cost linear time on
adversarial lines. From round 12 on, a round module runs its corpus tables through
`corpus_tests` and patches the learned model out (`pytestmark` asks for conftest.py's
`rules_alone`, which uses `without_learned_model`; test_toolerr_wide_opinion.py tests it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from corpus_records import rules_kind, wide_verdict

from exactserve.toolerr.wide import classify_wide, judge

LINE_BUDGET_S = 0.5  # for one adversarial line of 100 KB or so: linear, not quadratic


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


def check_cause(record: dict, rule: str, kind: str, evidence: str = "") -> None:
    """The record is detected by `rule`, the rules give `kind`, and the evidence holds
    `evidence`."""
    failures = wide_verdict(record)
    assert failures, record["id"]
    failure = failures[0]
    assert (failure.rule, rules_kind(failure)) == (rule, kind), failure
    assert evidence in failure.evidence, failure


def check_linear(lines: Iterable[str]) -> None:
    """Each line (twice, as a text of two lines) is judged and classified within the budget."""
    for line in lines:
        start = time.perf_counter()
        judge(line + "\n" + line, None)
        classify_wide(line)
        assert time.perf_counter() - start < LINE_BUDGET_S, line[:80]


def corpus_tests(
    records: dict[str, dict],
    successes: list[str],
    documented: list[str],
    cases: list[tuple[str, str, str, str]],
) -> tuple[Callable[..., None], ...]:
    """A round's three corpus tests over its tables (rounds 12 on): its successes stay
    undetected, its documented detections stay, each cause gives its rule, kind and evidence.
    A round module binds them to `test_` names, which pytest collects."""

    @pytest.mark.parametrize("record_id", successes)
    def successes_stay_undetected(record_id: str) -> None:
        check_undetected_success(records[record_id])

    @pytest.mark.parametrize("record_id", documented)
    def documented_detections_stay(record_id: str) -> None:
        check_documented_detection(records[record_id])

    @pytest.mark.parametrize(("record_id", "rule", "kind", "evidence"), cases)
    def general_causes_give_their_rule_kind_and_evidence(
        record_id: str, rule: str, kind: str, evidence: str
    ) -> None:
        check_cause(records[record_id], rule, kind, evidence)

    return (
        successes_stay_undetected,
        documented_detections_stay,
        general_causes_give_their_rule_kind_and_evidence,
    )
