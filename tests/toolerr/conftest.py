"""Fixtures the round modules of the wide rules ask for (`pytestmark`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from round_checks import without_learned_model


@pytest.fixture
def rules_alone() -> Iterator[None]:
    """A round's tests are the rules' own: the learned model is patched out
    (test_toolerr_wide_opinion.py tests it)."""
    with without_learned_model():
        yield
